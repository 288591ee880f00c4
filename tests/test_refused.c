/* Inputs that are not CSV text are refused, by content and whatever their
 * name (compressed or archived in a format ringshard does not read, binary
 * bytes, NUL bytes where the header is); messages show input bytes escaped;
 * every line reader is bounded; the small edges of -o -, --duplicates -
 * and --allow-empty; keys with copies recounted per key. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ringshard/buf.h"
#include "ringshard/text.h"
#include "support.h"

TestSuite(refused, .init = test_dir_setup, .fini = test_dir_teardown, .timeout = 300);

/* Asserts that nothing was published at path (nor a directory "-"). */
static void nothing_at(const char *path)
{
    cmd_result r = sh_in_test_dir("test ! -e '%s' && test ! -e ./-", path);
    cr_assert_eq(r.rc, 0, "%s exists", path);
    cmd_result_free(&r);
}

/* A CSV of 2 columns: bill_id,v, with 2000 rows. */
#define SMALL_CSV "python3 -c \"print('bill_id,v'); [print('k%%d,%%d' %% (i %% 700, i)) for i in range(2000)]\" > s.csv"

/* ------------------------------------------------- formats by magic */

/* Real files of the formats Debian's tools write: refused by name of the
 * format, whatever the file is called, and nothing is published. */
Test(refused, real_compressed_and_archived_files_are_refused_by_content)
{
    SH_OK(SMALL_CSV " && xz -k s.csv && bzip2 -k s.csv && lz4 -q s.csv s.csv.lz4 && zip -q s.zip s.csv"
          " && cp s.csv.xz plain.csv && cp s.csv.bz2 data && lz4 -q -l s.csv legacy.lz4");
    static const struct { const char *file, *format; } c[] = {
        {"s.csv.xz", "xz"}, {"s.csv.bz2", "bzip2"}, {"s.csv.lz4", "lz4"}, {"s.zip", "zip"},
        {"plain.csv", "xz"}, {"data", "bzip2"}, {"legacy.lz4", "lz4 (legacy format)"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        char want[160], cmd[200];
        snprintf(want, sizeof want, "%s: %s input is not supported: ", c[i].file, c[i].format);
        snprintf(cmd, sizeof cmd, "$RS bucket --key bill_id -o out %s", c[i].file);
        sh_expect_free(2, want, cmd);
        nothing_at("out");
        snprintf(cmd, sizeof cmd, "$RS dedup --key bill_id -o out %s", c[i].file);
        sh_expect_free(2, want, cmd);
        nothing_at("out");
    }
}

/* Magic numbers followed by junk: each known format is named. */
Test(refused, magic_numbers_name_their_format)
{
    static const struct { const char *bytes, *format; } c[] = {
        {"\\375\\067\\172\\130\\132\\000", "xz"},
        {"BZh91AY&SY", "bzip2"},
        {"\\004\\042\\115\\030", "lz4"},
        {"\\002\\041\\114\\030", "lz4 (legacy format)"},
        {"PK\\003\\004", "zip"},
        {"PAR1\\025\\004", "Parquet"},
        {"7z\\274\\257\\047\\034", "7z"},
        {"\\135\\000\\000\\200\\000\\377\\377\\377\\377\\377\\377\\377\\377", "lzma"},
        {"\\377\\006\\000\\000sNaPpY", "Snappy (framed)"},
        {"\\377\\376b\\000", "UTF-16 text"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        char want[160], cmd[400];
        snprintf(want, sizeof want, "f%zu.csv: %s input is not supported: ", i, c[i].format);
        snprintf(cmd, sizeof cmd, "printf '%s' > f%zu.csv && head -c 3000 /dev/zero | tr '\\0' 'x' >> f%zu.csv && "
                 "$RS bucket -o out f%zu.csv", c[i].bytes, i, i, i);
        sh_expect_free(2, want, cmd);
        nothing_at("out");
    }
}

/* A CSV whose header starts like a magic that is all text is still CSV:
 * "PAR1" followed by text, "BZh9" without bzip2's block magic. */
Test(refused, text_that_starts_like_a_magic_is_csv)
{
    SH_OK("printf 'PAR1,b\\nx,1\\n' > p.csv && printf 'BZh9,b\\nx,1\\n' > b.csv && "
          "$RS bucket --quiet --nodes 2 -o o1 p.csv && $RS bucket --quiet --nodes 2 -o o2 b.csv");
}

/* -------------------------------------------------------- text rule */

/* Pseudo-random bytes (without quotes, so that no CSV fault is met
 * first): refused at the header, or at the first record without one. */
Test(refused, random_bytes_are_refused_at_the_header)
{
    for (int seed = 1; seed <= 6; seed++) {
        char cmd[400];
        snprintf(cmd, sizeof cmd, "python3 -c \"import random,sys; random.seed(%d); "
                 "sys.stdout.buffer.write(bytes(b for b in random.randbytes(200000) if b != 34))\" > r.csv && "
                 "$RS bucket -o out r.csv", seed);
        sh_expect_free(2, "r.csv: line ", cmd);
        sh_expect_free(2, "is not text: ", "$RS bucket -o out r.csv");
        sh_expect_free(2, "the first record is not text", "$RS bucket --no-header -o out r.csv");
        nothing_at("out");
    }
}

/* A NUL byte in the header: refused, naming the file, the line and the
 * byte offset (of the decompressed data for gzip). */
Test(refused, nul_in_the_header_names_file_line_and_offset)
{
    SH_OK("printf 'id,v\\nk,1\\n' > ok.csv && printf 'id,v\\000w\\nk,1\\n' > n.csv && gzip -k n.csv");
    sh_expect_free(2, "n.csv: line 1: the header is not text: a NUL byte at byte offset 4 (it starts 'id,v\\x00w')",
               "$RS bucket -o out ok.csv n.csv");
    nothing_at("out");
    sh_expect_free(2, "n.csv.gz: line 1: the header is not text: a NUL byte at byte offset 4 of the decompressed data",
               "$RS bucket -o out n.csv.gz");
    sh_expect_free(2, "n.csv: line 2: the header is not text: control byte 0x7f at byte offset 3",
               "printf '\\nid\\177\\nk\\n' > n.csv && $RS bucket -o out n.csv");
    nothing_at("out");
    /* control bytes dense in the first 8 KiB, after a header that is text */
    sh_expect_free(2, "z.csv: 4 control bytes in its first 15 bytes (the first at byte offset 8)",
               "printf 'id,v\\nk,1\\001\\002\\n\\003,\\004\\n' > z.csv && $RS bucket -o out z.csv");
    sh_expect_free(2, "z.csv: 4 control bytes in its first 12 bytes (the first at byte offset 4)",
               "printf 'k,1\\n\\001\\002\\003\\004\\n,x\\n' > z.csv && $RS bucket --no-header -o out z.csv");
    nothing_at("out");
    /* NUL bytes in fields, and a few control bytes among many text bytes, are data */
    SH_OK("printf 'id,v\\nk,1\\000\\n\\000k,\\000\\001\\n' > d.csv && $RS bucket --quiet --nodes 2 -o od d.csv && "
          "$RS cat --all od | LC_ALL=C sort > got && LC_ALL=C sort d.csv | cmp - got");
    /* UTF-8 text, Latin-1 text, TAB and CR pass */
    SH_OK("printf 'caf\\303\\251\\tx,\\342\\202\\254\\r\\nk,1\\r\\n' > u.csv && $RS bucket --quiet --nodes 2 -o o u.csv");
    SH_OK("printf 'Gr\\366\\337e,x\\nk,1\\n' > l.csv && $RS bucket --quiet --nodes 2 --key \"$(printf 'Gr\\366\\337e')\" -o o2 l.csv");
}

/* ------------------------------------------------------- escaping */

/* No message shows an input's control bytes raw, nor cuts it at a NUL. */
Test(refused, messages_escape_control_bytes)
{
    cmd_result r = sh_in_test_dir("printf 'a\\033[31mb\\000cd,v\\nk,1\\n' > e.csv && $RS bucket -o out e.csv");
    cr_assert_eq(r.rc, 2, "%s", r.err);
    cr_assert(strstr(r.err, "'a\\x1b[31mb\\x00c'"), "%s", r.err);
    cr_assert(!strchr(r.err, '\033'), "raw ESC: %s", r.err);
    cmd_result_free(&r);
    r = sh_in_test_dir("printf 'id,v\\nk,1\\n' > k.csv && $RS bucket --key \"$(printf 'x\\007y')\" -o out k.csv");
    cr_assert_eq(r.rc, 64, "%s", r.err);
    cr_assert(strstr(r.err, "no column 'x\\x07y' in the header of k.csv"), "%s", r.err);
    cr_assert(!strchr(r.err, '\a'), "raw BEL: %s", r.err);
    cmd_result_free(&r);
    r = sh_in_test_dir("printf 'n1\\nn2 \\033]0;x\\n' > nodes && $RS ring --nodes-file nodes");
    cr_assert_eq(r.rc, 2, "%s", r.err);
    cr_assert(strstr(r.err, "nodes:2: weight '\\x1b]0;x' of node 'n2' is not a positive number"), "%s", r.err);
    cmd_result_free(&r);
}

Test(refused, escape_and_check_functions)
{
    rs_buf b = {0};
    cr_assert_eq(rs_text_escape(&b, "a\0b\x1b\t\\\xff\xc2\x9b\xc3\xa9'", 12, 0, '\''), 0);
    cr_assert_eq(b.len, strlen("'a\\x00b\\x1b\\t\\\\\\xff\\xc2\\x9b\xc3\xa9\\x27'"));
    cr_assert(!memcmp(b.data, "'a\\x00b\\x1b\\t\\\\\\xff\\xc2\\x9b\xc3\xa9\\x27'", b.len), "%.*s", (int)b.len, b.data);
    char s[32];
    cr_assert_str_eq(rs_text_shown(s, sizeof s, "abcdefghijklmnopqrstuvwxyz0123456789", 36, 0, '"'),
                     "\"abcdefghijklmnopqrstuvwxyz\"...");
    /* a surrogate and an overlong form are not UTF-8: escaped */
    b.len = 0;
    cr_assert_eq(rs_text_escape(&b, "\xed\xa0\x80\xc0\xaf", 5, 0, 0), 0);
    cr_assert(b.len == 20 && !memcmp(b.data, "\\xed\\xa0\\x80\\xc0\\xaf", 20), "%.*s", (int)b.len, b.data);
    const char *why;
    cr_assert_eq(rs_text_check("ab\xc3\xa9\tc\r\n\xff", 9, &why), 9);
    cr_assert_null(why);
    cr_assert_eq(rs_text_check("ab\x01", 3, &why), 2);
    cr_assert_str_eq(why, "control byte 0x01");
    cr_assert_eq(rs_text_check("ab\0", 3, &why), 2);
    cr_assert_str_eq(why, "a NUL byte");
    size_t first;
    cr_assert_eq(rs_text_controls("ab\0c\t\r\n", 7, &first), 0);
    cr_assert_eq(first, 7);
    cr_assert_eq(rs_text_controls("a\001b\177\033", 5, &first), 3);
    cr_assert_eq(first, 1);
    rs_buf_free(&b);
}

/* ------------------------------------------------------ line bounds */

/* Runs a command on 512 MiB of NUL bytes with its peak resident set bounded
 * to 192 MiB (a sanitizer build holds about 145): a reader without a line
 * bound would hold the whole line. */
#define ENDLESS(cmd) "head -c 536870912 /dev/zero | python3 " RS_SOURCE_DIR "/tests/peak_rss.py 192 " cmd

/* locate reads standard input within its --max-record, holding far less
 * than an unbounded line would take. */
Test(refused, locate_of_an_endless_line_stops_within_the_memory_bound)
{
    sh_expect_free(2, "locate: standard input: line 1: longer than --max-record (33554432 bytes)",
               ENDLESS("$RS locate"));
    sh_expect_free(2, "standard input: line 3: longer than --max-record (16 bytes)",
               "printf 'a\\nbb\\r\\n%s\\n' 01234567890123456789 | $RS locate --max-record 16");
    cmd_result r = sh_in_test_dir("printf '0123456789abcdef\\r\\nk' | $RS locate --max-record 16 --no-header --nodes 3");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert(!strncmp(r.out, "0123456789abcdef\t", 17) && strstr(r.out, "\nk\t"), "%s", r.out);
    cmd_result_free(&r);
}

Test(refused, node_lists_and_file_lists_are_read_within_a_line_bound)
{
    sh_expect_free(2, "/dev/stdin:1: line longer than 65536 bytes", ENDLESS("$RS ring --nodes-file /dev/stdin"));
    sh_expect_free(2, "--files-from -: line 1: longer than 4096 bytes",
               ENDLESS("$RS bucket -o out --files-from -"));
    sh_expect_free(64, "--files-from -: entry 1: empty", ENDLESS("$RS bucket -o out --null --files-from -"));
    nothing_at("out");
}

/* Compressed data ringshard does not unwrap, named for what it is: a
 * zlib stream (pigz -z), under any name, and gzip inside gzip. */
Test(refused, zlib_and_gzip_inside_gzip_are_named)
{
    SH_OK(SMALL_CSV " && pigz -z -c s.csv > s.csv.zz && cp s.csv.zz z.gz && gzip -c s.csv | gzip -c > gg.csv.gz");
    const char *zlib = "it is zlib data (pigz -z, a .zz file): decompress it first (pigz -dz)";
    sh_expect_free(2, zlib, "$RS bucket --key bill_id -o out s.csv.zz");
    sh_expect_free(2, zlib, "$RS bucket --key bill_id -o out z.gz");
    sh_expect_free(2, "it is gzip data inside the decompressed data (gzip of gzip): decompress it once first",
                   "$RS bucket --key bill_id -o out gg.csv.gz");
    nothing_at("out");
}

/* ------------------------------------------------------------ edges */

Test(refused, dash_is_no_directory)
{
    SH_OK(SMALL_CSV);
    sh_expect_free(64, "-o -: a bucket directory cannot go to standard output; write it to a directory and read it with "
               "ringshard cat", "$RS bucket -o - s.csv");
    sh_expect_free(64, "-o -: a bucket directory cannot go to standard output", "$RS dedup -o - s.csv");
    sh_expect_free(64, "--emit -: a move directory cannot go to standard output",
               "$RS plan --nodes 3 --add 1 --emit - s.csv");
    nothing_at("out");
}

/* Side-file paths refused before any work: --metrics inside the output
 * directory (an append or --force, where DIR exists: it would be an
 * entry no manifest names, or lost with the old DIR), an empty path for
 * any single-file output, standard input named twice. */
Test(refused, side_files_inside_dir_empty_paths_and_stdin_twice)
{
    SH_OK(SMALL_CSV " && $RS bucket --quiet --append --nodes 3 --key bill_id -o B s.csv");
    sh_expect_free(64, "--metrics B/run.prom: inside the output directory B",
                   "$RS bucket --quiet --append --metrics B/run.prom -o B s.csv");
    sh_expect_free(64, "--metrics B/run.prom: inside the output directory B",
                   "$RS bucket --quiet --force --nodes 3 --key bill_id --metrics B/run.prom -o B s.csv");
    sh_expect_free(64, "--metrics B/x.prom: inside the output directory B", "$RS compact --metrics B/x.prom B");
    sh_expect_free(64, "--metrics B/x.prom: inside the output directory B", "$RS repair --metrics B/x.prom B");
    SH_OK("test ! -e B/run.prom && test ! -e B/x.prom && $RS verify --quiet B");
    static const char *const empty[][2] = {
        {"--metrics", "$RS bucket --nodes 3 --key bill_id -o y --metrics '' s.csv"},
        {"--duplicates", "$RS dedup --nodes 3 --key bill_id -o y --duplicates '' s.csv"},
        {"--json", "$RS plan --nodes 3 --add 1 --json ''"},
        {"--svg", "$RS stats --nodes 3 --key bill_id --svg '' s.csv"},
    };
    for (size_t i = 0; i < sizeof empty / sizeof *empty; i++) {
        char want[80];
        snprintf(want, sizeof want, "%s: an empty path", empty[i][0]);
        sh_expect_free(64, want, empty[i][1]);
    }
    nothing_at("y");
    SH_OK("test -z \"$(ls -a | grep ringshard-tmp)\"");
    sh_expect_free(64, "-: standard input given twice", "$RS bucket --nodes 3 --key bill_id -o y - - < s.csv");
    nothing_at("y");
}

/* A file of a bucket directory that the machine will not open (no
 * permission) is no damage: repair and verify fail as a read does (exit
 * 1), repair changing nothing - a data file, then a generation's
 * manifest. As root, run as nobody (root opens any file). */
Test(refused, a_file_the_machine_refuses_is_no_damage)
{
    SH_OK("for s in 1 2 3; do python3 -c \"print('id,v'); [print('k%%d_%%d,%%d' %% ($s, i, i)) for i in range(300)]\" "
          "> s$s.csv && $RS bucket --quiet --append --nodes 4 --key id -o D s$s.csv || exit 1; done && "
          "chmod -R a+rwX . && chmod 000 D/g00000002/3.csv.gz");
    const char *as = "AS=; [ \"$(id -u)\" = 0 ] && AS='setpriv --reuid=65534 --regid=65534 --clear-groups'; ";
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s$AS $RS repair D", as);
    sh_expect_free(1, "D/g00000002/3.csv.gz: cannot open: Permission denied (not damage: fix that and run again; "
                   "nothing was changed)", cmd);
    SH_OK("test ! -e D.damaged.1 && chmod 644 D/g00000002/3.csv.gz && chmod 000 D/g00000003/manifest.json");
    sh_expect_free(1, "D/g00000003/manifest.json: cannot open: Permission denied (not damage", cmd);
    snprintf(cmd, sizeof cmd, "%s$AS $RS verify D", as);
    sh_expect_free(1, "D/g00000003/manifest.json: cannot open: Permission denied (not damage", cmd);
    SH_OK("test ! -e D.damaged.1 && chmod 644 D/g00000003/manifest.json && $RS verify --quiet D");
}

/* An option that would do nothing where it is given is refused, as
 * --ring-only without --from-buckets is. */
Test(refused, options_that_would_do_nothing_are_refused)
{
    SH_OK(SMALL_CSV);
    sh_expect_free(64, "--json-arcs goes with --json", "$RS plan --nodes 3 --add 1 --json-arcs");
    sh_expect_free(64, "--null goes with --files-from", "$RS bucket --null --nodes 3 --key bill_id -o y s.csv");
    nothing_at("y");
}

/* A weight whose points pass the bound a node may have is refused, not
 * cut to another ring. */
Test(refused, a_weight_past_the_points_bound_is_refused)
{
    SH_OK("printf 'a 1000000\\nb\\n' > n");
    sh_expect_free(64, "node 'a' has weight 1e+06: 200 virtual nodes x 1e+06 = 200000000 points, more than the "
                   "100000000", "$RS ring --nodes-file n");
}

/* With --metrics - on stdout, repair's report lines go to stderr: stdout
 * is the metrics alone; plan --quiet prints nothing on stderr. */
Test(refused, metrics_on_stdout_stay_alone_and_quiet_is_quiet)
{
    SH_OK(SMALL_CSV " && $RS bucket --quiet --nodes 3 --key bill_id -o B s.csv && touch B/junk && "
          "$RS repair --metrics - B > m.prom 2> e.txt; grep -q 'NOT CARRIED junk' e.txt && "
          "! grep -q 'NOT CARRIED' m.prom && head -1 m.prom | grep -q '^# HELP ringshard_' && "
          "$RS plan --quiet --nodes 3 --key bill_id --add 1 s.csv > /dev/null 2> q.txt && test ! -s q.txt");
}

/* An empty input with --allow-empty and a key by name: dedup publishes,
 * as bucket does. */
Test(refused, dedup_of_an_empty_input_allowed_is_published)
{
    SH_OK(": > e.csv && $RS bucket --quiet --nodes 3 --key bill_id --allow-empty -o b e.csv && "
          "$RS dedup --quiet --nodes 3 --key bill_id --allow-empty -o d e.csv && $RS verify d >/dev/null && "
          "test \"$($RS cat --all d | wc -c)\" = \"$($RS cat --all b | wc -c)\"");
}

/* A reader of --duplicates - that leaves early does not undo the dedup. */
Test(refused, duplicates_reader_leaving_keeps_the_dedup)
{
    SH_OK("python3 -c \"print('bill_id,v'); [print('k%%d,%%d' %% (i %% 9000, i)) for i in range(60000)]\" > d.csv");
    cmd_result r = sh_in_test_dir("{ $RS dedup --nodes 5 --key bill_id --duplicates - -o out d.csv; echo $? > rc; } "
                                  "| head -c 10 > /dev/null; cat rc");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert_str_eq(r.out, "0\n", "dedup exit %s; stderr: %s", r.out, r.err);
    cr_assert(strstr(r.err, "--duplicates: its reader left after"), "%s", r.err);
    cmd_result_free(&r);
    r = sh_in_test_dir("$RS cat --all out | tail -n +2 | wc -l && $RS verify out > /dev/null");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert_eq(atoi(r.out), 9000, "%s", r.out);
    cmd_result_free(&r);
}

/* "N keys with copies", recomputed per key in Python: a plain dedup, and
 * an append whose rows the history holds. */
Test(refused, keys_with_copies_are_counted_per_key)
{
    SH_OK("python3 -c \"import random; random.seed(7); print('bill_id,v'); "
          "[print('k%%d,%%d' %% (random.randrange(5000), i)) for i in range(20000)]\" > a.csv && "
          "python3 -c \"import random; random.seed(8); print('bill_id,v'); "
          "[print('k%%d,%%d' %% (random.randrange(8000), i)) for i in range(3000)]\" > b.csv");
    const char *py = "python3 -c \"import csv,collections,sys; "
                     "c=collections.Counter(r[0] for f in sys.argv[1:] for r in list(csv.reader(open(f)))[1:]); "
                     "print(sum(1 for v in c.values() if v > 1))\"";
    cmd_result r = sh_in_test_dir("%s a.csv; $RS dedup --nodes 7 --key bill_id -o d a.csv 2>&1 | "
                                  "sed -n 's/.*(\\([0-9]*\\) keys with copies).*/\\1/p'", py);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    unsigned long want, got;
    cr_assert_eq(sscanf(r.out, "%lu\n%lu", &want, &got), 2, "%s", r.out);
    cr_assert(want > 1000);
    cr_assert_eq(got, want, "%s", r.out);
    cmd_result_free(&r);
    /* appended again, every row's key is in the history: each distinct key
     * of a.csv is a key with copies */
    r = sh_in_test_dir("rm -rf h && $RS dedup --nodes 7 --key bill_id --append -o h a.csv 2>/dev/null && "
                       "$RS dedup --nodes 7 --key bill_id --append --on-seen again -o h a.csv 2>&1 | "
                       "sed -n 's/.*(\\([0-9]*\\) keys with copies).*/\\1/p'; "
                       "python3 -c \"import csv; print(len({r[0] for r in list(csv.reader(open('a.csv')))[1:]}))\"");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert_eq(sscanf(r.out, "%lu\n%lu", &got, &want), 2, "%s", r.out);
    cr_assert_eq(got, want, "every key of a.csv is in the history: %s", r.out);
    cmd_result_free(&r);
}

/* The headline's time covers the publication it reports. */
Test(refused, bucket_headline_time_covers_the_publication)
{
    SH_OK(SMALL_CSV);
    cmd_result r = sh_in_test_dir("$RS bucket --nodes 50 -o out s.csv && $RS bucket --force --nodes 50 -o out s.csv");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    const char *h = strstr(r.err, "ringshard bucket: 2000 rows"), *p = strstr(h ? h + 1 : r.err, "published in ");
    h = h ? strstr(h + 1, "ringshard bucket: 2000 rows") : NULL;
    cr_assert(h && p, "%s", r.err);
    double total, publish;
    cr_assert_eq(sscanf(strstr(h, " (") + 2, "%lf s", &total), 1, "%s", r.err);
    cr_assert_eq(sscanf(strstr(h, "published in ") + 13, "%lf s", &publish), 1, "%s", r.err);
    cr_assert_geq(total, publish, "%s", r.err);
    cmd_result_free(&r);
}
