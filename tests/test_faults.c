/* The faults of docs/failures.md, end to end: real files, the real command. Each
 * failing case checks the exit code, the message (naming the file and the
 * line, record or byte offset), that nothing is published and no
 * `*.ringshard-tmp.*` is left, and that a previous output in the same place
 * is intact. Each valid edge case checks where its rows land, and
 * `ringshard verify` passes on every output a successful run produced
 * (assert_verify).
 * (test_bucket.c already covers: stray quote, truncated gzip, an existing
 * bucket output, the file-size limit, SIGINT/SIGTERM, quarantine.) */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "support.h"
#include "wait.h"

TestSuite(faults, .init = test_dir_setup, .fini = test_dir_teardown, .timeout = 300);

typedef cmd_result res;
#define res_free cmd_result_free
#define sh sh_in_test_dir

/* Runs a setup command that must succeed. */
#define PREP(...)                                                                    \
    do {                                                                             \
        res p_ = sh(__VA_ARGS__);                                                    \
        cr_assert_eq(p_.rc, 0, "setup failed: %s %s", p_.out, p_.err);               \
        res_free(&p_);                                                               \
    } while (0)

/* A previous output DIR with a marker file (and a manifest.json as
 * ringshard writes it starts, so that --force may replace it). */
static void previous_output(const char *dir)
{
    PREP("mkdir %s && echo keep > %s/marker && "
         "echo '{\"schema\": 1, \"kind\": \"buckets\", \"tool\": {\"name\": \"ringshard\"}}' > %s/manifest.json",
         dir, dir, dir);
}

/* DIR still holds only its marker and manifest; no temporary directory anywhere in test_dir. */
static void assert_previous_intact(const char *dir)
{
    res r = sh("ls -A %s | tr '\\n' ' '; cat %s/marker; find . -name '*ringshard-tmp*' | wc -l", dir, dir);
    cr_assert_str_eq(r.out, "manifest.json marker keep\n0\n", "previous %s intact, no temporary left: %s %s", dir, r.out, r.err);
    res_free(&r);
}

/* Runs a command that must fail with want_rc and a message containing each
 * of the NULL-terminated strings; then the previous out/ must be intact. */
static void expect_failure(int want_rc, const char *cmd, ...)
{
    previous_output("out");
    res r = sh("%s", cmd);
    cr_assert_eq(r.rc, want_rc, "%s: exit %d, want %d; stderr: %s", cmd, r.rc, want_rc, r.err);
    va_list ap;
    va_start(ap, cmd);
    for (const char *s; (s = va_arg(ap, const char *));)
        cr_assert(strstr(r.err, s), "%s: message lacks \"%s\": %s", cmd, s, r.err);
    va_end(ap);
    cr_assert(!strchr(r.err, '\n') || strchr(r.err, '\n') == r.err + strlen(r.err) - 1,
              "one line of message: %s", r.err);
    res_free(&r);
    assert_previous_intact("out");
}

#define PY_TOTALS "python3 -c \"import json; t=json.load(open('%s/manifest.json'))['totals']; " \
                  "print(t['rows'], t['rejected'], t['files'])\""

/* ---- gzip ---------------------------------------------------------------- */

static void make_good_csv(void)
{
    PREP("python3 -c \"open('good.csv','w').write('id,v\\n' + ''.join('%%d,val%%d\\n' %% (i, i) for i in range(20000)))\"");
}

/* ---- memory -------------------------------------------------------------- */

/* A bucket buffer that cannot grow fails the run (exit 1, nothing
 * published) instead of losing rows: with one node every row goes to one
 * buffer, which must double past 8 KiB, and tests/failalloc.c makes that
 * realloc fail. */
Test(faults, out_of_memory_while_scattering_rows_fails_cleanly)
{
    make_good_csv();
    const char *pre = "LD_PRELOAD=\"" RS_FAILALLOC "\" RS_FAIL_REALLOC_MIN=8192 "
                      "ASAN_OPTIONS=\"$ASAN_OPTIONS:verify_asan_link_order=0\"";
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s \"$RS\" bucket --quiet --nodes 1 --compress none --force -o out good.csv", pre);
    expect_failure(1, cmd, "out of memory for the rows of a batch", NULL);
    PREP("rm -r out");
    snprintf(cmd, sizeof cmd, "%s \"$RS\" bucket --quiet --nodes 1 --keys-only --compress none --force -o out good.csv", pre);
    expect_failure(1, cmd, "out of memory for the rows of a batch", NULL);
}

Test(faults, gzip_flipped_bytes_in_the_middle)
{
    make_good_csv();
    PREP("python3 -c \"import gzip; b=bytearray(gzip.compress(open('good.csv','rb').read())); m=len(b)//2\n"
         "for i in range(m, m+8): b[i]^=0xff\nopen('flip.gz','wb').write(b)\"");
    expect_failure(2, "\"$RS\" bucket --quiet --nodes 3 --force -o out flip.gz", "flip.gz: ", "byte offset", NULL);
}

Test(faults, gzip_garbage_after_a_member)
{
    make_good_csv();
    PREP("gzip -c good.csv > garb.gz && stat -c %%s garb.gz > size && echo 'not gzip at all' >> garb.gz");
    res s = sh("cat size");
    char want[128];
    snprintf(want, sizeof want,
             "garb.gz: garbage after gzip member at byte offset %d (16 trailing bytes that do not start a gzip member)",
             atoi(s.out));
    res_free(&s);
    expect_failure(2, "\"$RS\" bucket --quiet --nodes 3 --force -o out garb.gz", want, NULL);
}

/* An empty file not named as gzip and an empty gzip member are valid
 * inputs that contribute nothing. */
Test(faults, gzip_empty_inputs_contribute_nothing)
{
    make_good_csv();
    res r = sh(": > empty.csv && : > empty.dat && gzip -c < /dev/null > member.gz && "
               "\"$RS\" bucket --quiet --nodes 3 -o ref good.csv && "
               "\"$RS\" bucket --quiet --nodes 3 --allow-empty -o out empty.dat good.csv empty.csv member.gz && "
               "diff -r -x manifest.json ref out && "
               "python3 -c \"import json; m=json.load(open('out/manifest.json'))\n"
               "print([(i['path'], i['rows'], i['bytes']) for i in m['inputs']], m['totals']['rows'])\" && "
               "\"$RS\" bucket --quiet --nodes 3 --allow-empty -o alone empty.csv && " PY_TOTALS, "alone");
    cr_assert_eq(r.rc, 0, "%s %s", r.out, r.err);
    cr_assert_str_eq(r.out, "[('empty.dat', 0, 0), ('good.csv', 20000, 277780), ('empty.csv', 0, 0), "
                            "('member.gz', 0, 0)] 20000\n0 0 3\n", "%s", r.out);
    assert_verify(path_join(test_dir, "out"));
    assert_verify(path_join(test_dir, "ref"));
    assert_verify(path_join(test_dir, "alone"));
    res_free(&r);
}

/* An empty file named .gz holds no gzip member: an error, in every
 * command that reads data, even next to good input. */
Test(faults, gzip_empty_file_named_gz)
{
    make_good_csv();
    PREP(": > empty.gz");
    static const char *const cmds[] = {
        "\"$RS\" bucket --quiet --nodes 3 --force -o out good.csv empty.gz",
        "\"$RS\" dedup --quiet --nodes 3 --force -o out empty.gz good.csv",
        "\"$RS\" plan --nodes 3 --add 1 --emit out --force good.csv empty.gz",
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        PREP("rm -rf out");
        expect_failure(2, cmds[i],
                       "empty.gz: empty file (named .gz, but holds no gzip member: end of file at byte offset 0)",
                       NULL);
    }
    res r = sh("\"$RS\" stats --nodes 3 empty.gz > /dev/null; echo rc=$?");
    cr_assert_str_eq(r.out, "rc=2\n", "stats: %s", r.err);
    cr_assert(strstr(r.err, "empty.gz: empty file (named .gz"), "stats: %s", r.err);
    res_free(&r);
}

/* gzip is recognised by its magic bytes, but a name ending in .gz (.gzip,
 * .tgz, any case) promises gzip: plain bytes under it are an error naming
 * the file and byte offset 0. gzip under another name is still read. */
Test(faults, gzip_named_gz_but_not_gzip)
{
    make_good_csv();
    PREP("cp good.csv plain.gz && cp good.csv PLAIN.CSV.GZ && gzip -c good.csv > gzip.csv");
    expect_failure(2, "\"$RS\" bucket --quiet --nodes 3 --force -o out plain.gz",
                   "plain.gz: not gzip data (named .gz, but byte offset 0 holds 0x69 0x64, not the gzip magic 1f 8b)",
                   NULL);
    PREP("rm -rf out");
    expect_failure(2, "\"$RS\" dedup --quiet --nodes 3 --force -o out good.csv PLAIN.CSV.GZ",
                   "PLAIN.CSV.GZ: not gzip data (named .GZ, but byte offset 0 holds 0x69 0x64", NULL);
    PREP("rm -rf out");
    expect_failure(2, "\"$RS\" plan --nodes 3 --add 1 --emit out --force plain.gz",
                   "plain.gz: not gzip data (named .gz, but byte offset 0", NULL);
    res r = sh("\"$RS\" stats --nodes 3 plain.gz > /dev/null; echo rc=$?");
    cr_assert_str_eq(r.out, "rc=2\n", "%s", r.err);
    cr_assert(strstr(r.err, "plain.gz: not gzip data (named .gz, but byte offset 0"), "%s", r.err);
    res_free(&r);
    r = sh("\"$RS\" bucket --quiet --nodes 1 --compress none -o g gzip.csv && cmp good.csv g/0.csv && echo same");
    cr_assert_str_eq(r.out, "same\n", "gzip content named .csv is read by its magic: %s %s", r.out, r.err);
    assert_verify(path_join(test_dir, "g"));
    res_free(&r);
}

/* ---- CSV ----------------------------------------------------------------- */

Test(faults, csv_unterminated_quote_at_end_of_file)
{
    PREP("printf 'id,v\\n1,a\\n2,\"unterminated\\n3,c\\n' > unterm.csv");
    expect_failure(2, "\"$RS\" bucket --quiet --nodes 3 --force -o out unterm.csv",
                   "unterm.csv: line 3 (record 2): unterminated quoted field", NULL);
}

Test(faults, csv_row_missing_the_key_column)
{
    PREP("printf '1,2,3\\n4,5\\n6,7,8\\n' > short.csv");
    expect_failure(2, "\"$RS\" bucket --quiet --no-header --key 3 --nodes 3 --force -o out short.csv",
                   "short.csv: line 2 (record 2): missing key column (field 3", NULL);
}

Test(faults, csv_record_longer_than_max_record)
{
    PREP("python3 -c \"open('long.csv','w').write('id,v\\n1,a\\n2,' + 'x' * 5000 + '\\n3,c\\n')\"");
    expect_failure(2, "\"$RS\" bucket --quiet --max-record 1K --nodes 3 --force -o out long.csv",
                   "long.csv: line 3 (record 2): record longer than the limit", NULL);
}

/* An input's first batches ramp up (pipeline.c: 1/8, 1/4, 1/2 of a batch);
 * a record longer than the batch it starts in, but within the limit, is
 * read whole all the same. --memory 40M: batches of 1.6 MiB (a sixteenth
 * of what the 14 MiB allowance and the ring leave), the first three of
 * 208, 416 and 832 KiB, records up to 832 KiB. big.csv starts
 * with such a record; late.csv has 190,000 bytes of short rows, then one
 * of 500,000 that the second batch cannot hold. */
Test(faults, csv_record_longer_than_a_ramp_batch)
{
    PREP("python3 -c \"open('big.csv','w').write('id,v\\n1,' + 'x' * 400000 + '\\n2,b\\n3,' + 'y' * 700000 + "
         "'\\n4,d\\n')\" && gzip -k big.csv && "
         "python3 -c \"open('late.csv','w').write('id,v\\n' + ''.join('%%05d,%%s\\n' %% (i, 'z' * 93) for i in "
         "range(1900)) + 'L,' + 'w' * 499997 + '\\n9,e\\n')\" && gzip -k late.csv");
    static const char *const files[] = {"big", "late"};
    for (int f = 0; f < 2; f++)
        for (int k = 0; k < 3; k++) {
            const char *extra = k == 2 ? "--on-bad-row skip" : "";
            const char *gz = k == 0 ? "" : ".gz";
            res r = sh("\"$RS\" bucket --quiet --memory 40M %s --nodes 1 --compress none --force -o out %s.csv%s && "
                       "cmp %s.csv out/0.csv && echo same",
                       extra, files[f], gz, files[f]);
            cr_assert_eq(r.rc, 0, "%s.csv%s %s: %s", files[f], gz, extra, r.err);
            cr_assert_str_eq(r.out, "same\n", "%s.csv%s %s", files[f], gz, extra);
            res_free(&r);
        }
}

/* NUL bytes are data: kept byte-exact, in keys too (a NUL key lands where
 * locate says for the same bytes). */
Test(faults, csv_nul_bytes_are_kept_byte_exact)
{
    res r = sh("printf 'id,v\\n1,a\\0b\\n2,\\0\\0\\n\\0k,z\\n' > nul.csv && "
               "\"$RS\" bucket --quiet --nodes 1 --compress none -o one nul.csv && cmp nul.csv one/0.csv && "
               "\"$RS\" bucket --quiet --nodes 50 --compress none -o out nul.csv && "
               "n=$(printf '\\0k\\n' | \"$RS\" locate --nodes 50 --no-header | cut -f3) && "
               "tail -n +2 out/$n.csv | grep -ac ',z$'");
    cr_assert_eq(r.rc, 0, "%s %s", r.out, r.err);
    cr_assert_str_eq(r.out, "1\n", "the NUL key's row is in locate's node: %s", r.out);
    res_free(&r);
    /* every row, with its NULs, somewhere in the 50 files */
    r = sh("cat out/*.csv | grep -av '^id,v$' | LC_ALL=C sort > got && tail -n +2 nul.csv | LC_ALL=C sort > want && "
           "cmp got want && echo ok");
    cr_assert_str_eq(r.out, "ok\n", "%s", r.err);
    assert_verify(path_join(test_dir, "one"));
    assert_verify(path_join(test_dir, "out"));
    res_free(&r);
}

Test(faults, csv_mixed_crlf_and_lf)
{
    res r = sh("printf 'id,v\\r\\n1,a\\r\\n2,b\\n3,\"c\\r\\nd\"\\r\\n4,e\\n' > mixed.csv && "
               "\"$RS\" bucket --quiet --nodes 1 --compress none -o out mixed.csv && "
               "printf 'id,v\\n1,a\\n2,b\\n3,\"c\\r\\nd\"\\n4,e\\n' | cmp - out/0.csv && " PY_TOTALS, "out");
    cr_assert_eq(r.rc, 0, "%s %s", r.out, r.err);
    /* record line ends become LF; a CRLF inside quotes is data */
    cr_assert_str_eq(r.out, "4 0 1\n", "%s", r.out);
    assert_verify(path_join(test_dir, "out"));
    res_free(&r);
}

Test(faults, csv_header_only_file)
{
    res r = sh("printf 'id,v\\n' > ho.csv && \"$RS\" bucket --quiet --nodes 3 -o out ho.csv && "
               "for f in out/*.csv.gz; do gzip -dc $f; done && " PY_TOTALS, "out");
    cr_assert_eq(r.rc, 0, "%s %s", r.out, r.err);
    cr_assert_str_eq(r.out, "id,v\nid,v\nid,v\n0 0 3\n", "three header-only files, no rows: %s", r.out);
    assert_verify(path_join(test_dir, "out"));
    res_free(&r);
}

Test(faults, csv_no_trailing_newline_last_row_counts)
{
    res r = sh("printf 'id,v\\n1,a\\n2,b' > nonl.csv && gzip -c nonl.csv > nonl.gz && "
               "\"$RS\" bucket --quiet --nodes 1 --compress none -o p nonl.csv && "
               "\"$RS\" bucket --quiet --nodes 1 --compress none -o g nonl.gz && cat p/0.csv g/0.csv && " PY_TOTALS,
               "g");
    cr_assert_eq(r.rc, 0, "%s %s", r.out, r.err);
    cr_assert_str_eq(r.out, "id,v\n1,a\n2,b\nid,v\n1,a\n2,b\n2 0 1\n", "%s", r.out);
    assert_verify(path_join(test_dir, "p"));
    assert_verify(path_join(test_dir, "g"));
    res_free(&r);
}

/* ---- keys ---------------------------------------------------------------- */

/* keys.txt has one key a line (the same bytes as the CSV's key fields, row i
 * has value v<i>): each row must be in the file of the node locate names. */
#define LANDS_WHERE_LOCATE_SAYS                                                           \
    "\"$RS\" locate --nodes 50 --no-header < keys.txt | cut -f3 > nodes.txt && "          \
    "i=0; while read n; do i=$((i+1)); LC_ALL=C grep -aq \",v$i\\$\" out/$n.csv && echo hit || echo miss $i; "  \
    "done < nodes.txt | sort | uniq -c | tr -s ' '"

Test(faults, keys_invalid_utf8_hash_as_bytes)
{
    res r = sh("printf '\\377\\376\\n\\303\\050\\n\\355\\240\\200\\n\\200\\n\\360\\220\\200\\n' > keys.txt && "
               "{ echo k,v; i=0; while IFS= read -r k; do i=$((i+1)); printf '%%s,v%%d\\n' \"$k\" $i; done < keys.txt; }"
               " > in.csv && \"$RS\" bucket --quiet --nodes 50 --compress none -o out in.csv && " LANDS_WHERE_LOCATE_SAYS);
    cr_assert_eq(r.rc, 0, "%s %s", r.out, r.err);
    cr_assert_str_eq(r.out, " 5 hit\n", "%s", r.out);
    assert_verify(path_join(test_dir, "out"));
    res_free(&r);
    /* bytes, not decoded text: the two different invalid keys are not merged */
    r = sh("\"$RS\" locate --no-header < keys.txt | cut -f2 | sort -u | wc -l");
    cr_assert_eq(atoi(r.out), 5, "%s", r.out);
    res_free(&r);
}

Test(faults, keys_empty_hash_as_the_empty_string)
{
    res r = sh("printf 'k,v\\n,v1\\n\"\",v2\\n' > in.csv && printf '\\n\\n' > keys.txt && "
               "\"$RS\" bucket --quiet --nodes 50 --compress none -o out in.csv && " LANDS_WHERE_LOCATE_SAYS
               " && \"$RS\" locate --nodes 50 --no-header '' | cut -f2,3 && head -1 nodes.txt");
    cr_assert_eq(r.rc, 0, "%s %s", r.out, r.err);
    /* MurmurHash3_x64_128 of no bytes with seed 0 is all zeros: position 0 */
    char node[32];
    cr_assert_eq(sscanf(r.out, " 2 hit\n0\t%31s\n", node), 1, "%s", r.out);
    assert_verify(path_join(test_dir, "out"));
    char *last = strrchr(r.out, '\n');
    *last = '\0';
    cr_assert_str_eq(strrchr(r.out, '\n') + 1, node, "locate '' and locate on an empty line agree: %s", r.out);
    res_free(&r);
}

Test(faults, keys_100kB_long)
{
    res r = sh("python3 -c \"k='K'*100000\nopen('keys.txt','w').write(k + '\\nshort\\n'+k+'x\\n')\n"
               "open('in.csv','w').write('k,v\\n%%s,v1\\nshort,v2\\n%%sx,v3\\n' %% (k, k))\" && "
               "\"$RS\" bucket --quiet --nodes 50 --compress none -o out in.csv && " LANDS_WHERE_LOCATE_SAYS
               " && cat out/*.csv | python3 -c \"import sys; print(sum(l == 'K' * 100000 + ',v1\\n' for l in sys.stdin))\"");
    cr_assert_eq(r.rc, 0, "%s %s", r.out, r.err);
    cr_assert_str_eq(r.out, " 3 hit\n1\n", "the 100 kB key's row is whole, where locate says: %s", r.out);
    assert_verify(path_join(test_dir, "out"));
    res_free(&r);
}

/* ---- nodes --------------------------------------------------------------- */

Test(faults, nodes_zero_is_a_usage_error)
{
    make_good_csv();
    expect_failure(64, "\"$RS\" bucket --quiet --nodes 0 --force -o out good.csv", "--nodes", "0", NULL);
}

Test(faults, nodes_one_gets_every_row_in_order)
{
    make_good_csv();
    res r = sh("\"$RS\" bucket --quiet --nodes 1 -o out good.csv && ls out && gzip -dc out/0.csv.gz | cmp - good.csv && "
               "echo same");
    cr_assert_eq(r.rc, 0, "%s %s", r.out, r.err);
    cr_assert_str_eq(r.out, "0.csv.gz\nmanifest.json\nsame\n", "%s", r.out);
    assert_verify(path_join(test_dir, "out"));
    res_free(&r);
}

/* 100,000 nodes: 100,000 files. On tmpfs when there is one: publishing
 * fsyncs every file, which on this machine's disk takes about a minute.
 * Ten points a node: the files are what is tested, and 200 a node made
 * the ring (20 million points, 7 CPU seconds) the longest part of it.
 * Under AddressSanitizer 20,000: the same paths, far past the descriptor
 * limit, in a fifth of the time (100,000 took a minute there). */
#if defined(__SANITIZE_ADDRESS__)
#define MANY_NODES 20000
#else
#define MANY_NODES 100000
#endif
Test(faults, nodes_100000, .timeout = 600)
{
    char shm[] = "/dev/shm/rs-faults.XXXXXX";
    const char *where = mkdtemp(shm) ? shm : test_dir;
    res r = sh("cd %s && printf 'id\\nalpha\\nbeta\\ngamma\\n' > tiny.csv && "
               "\"$RS\" bucket --quiet --nodes %d --vnodes 10 --compress none -o out tiny.csv && "
               "ls out | wc -l && find out -name '*.csv' | wc -l && find out -name '*.csv' -exec cat {} + | grep -vc '^id$' && "
               "test -e out/0.csv && test -e out/%d.csv && test ! -e out/%d.csv && " PY_TOTALS,
               where, MANY_NODES, MANY_NODES - 1, MANY_NODES, "out");
    if (where == shm)
        remove_tree(shm);
    cr_assert_eq(r.rc, 0, "%s %s", r.out, r.err);
    char want[64];
    snprintf(want, sizeof want, "%d\n%d\n3\n3 0 %d\n", MANY_NODES + 1, MANY_NODES, MANY_NODES);
    cr_assert_str_eq(r.out, want, "%s", r.out);
    res_free(&r);
}

Test(faults, nodes_file_duplicate_name)
{
    make_good_csv();
    PREP("printf 'a\\nb\\nc\\nb\\n' > dup.txt");
    expect_failure(2, "\"$RS\" bucket --quiet --nodes-file dup.txt --force -o out good.csv",
                   "dup.txt:4: duplicate node name 'b' (first on line 2)", NULL);
}

/* A name with spaces or tabs is written in double quotes ("" for a quote):
 * it works end to end, into a safe file name (space -> %20, tab -> %09)
 * directly in the output directory, holding the rows locate assigns to it.
 * An unterminated quote and a control character are refused: exit 2,
 * file:line. */
Test(faults, nodes_file_spaces_and_control_characters)
{
    make_good_csv();
    res r = sh("printf 'ok\\n\"node a\" 2\\n  \"t\\tab\"  # tab\\n\"q\"\"uote # not a comment\"\\nz\\n' > nodes.txt && "
               "\"$RS\" bucket --quiet --nodes-file nodes.txt --compress none -o out good.csv && "
               "ls out | LC_ALL=C sort | tr '\\n' ' ' && find out -mindepth 1 -not -type f | wc -l && "
               "tail -n +2 good.csv | cut -d, -f1 | \"$RS\" locate --nodes-file nodes.txt --no-header | cut -f3- | "
               "LC_ALL=C sort | uniq -c | tr -s ' ' && for f in ok 'node%%20a' 't%%09ab' 'q%%22uote%%20%%23%%20not%%20a%%20comment' z; do "
               "tail -n +2 \"out/$f.csv\" | wc -l; done");
    cr_assert_eq(r.rc, 0, "%s %s", r.out, r.err);
    /* the files, no subdirectory; then the rows per node by locate and in the files */
    const char *files = "manifest.json node%20a.csv ok.csv q%22uote%20%23%20not%20a%20comment.csv t%09ab.csv z.csv 0\n";
    cr_assert(!strncmp(r.out, files, strlen(files)), "%s", r.out);
    long by_locate[5] = {0}, in_file[5];
    const char *p = r.out + strlen(files);
    /* (locate escapes the tab in a node name as \t, as in keys) */
    static const char *const names[] = {"ok", "node a", "t\\tab", "q\"uote # not a comment", "z"};
    for (int i = 0; i < 5; i++) {
        long n;
        char name[64];
        cr_assert_eq(sscanf(p, " %ld %63[^\n]\n", &n, name), 2, "%s", p);
        int k;
        for (k = 0; k < 5 && strcmp(names[k], name); k++)
            ;
        cr_assert_lt(k, 5, "unexpected node '%s'", name);
        by_locate[k] = n;
        p = strchr(p, '\n') + 1;
    }
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(sscanf(p, "%ld", &in_file[i]), 1, "%s", p);
        p = strchr(p, '\n') + 1;
        cr_assert_eq(in_file[i], by_locate[i], "node '%s': %ld rows in its file, locate says %ld", names[i],
                     in_file[i], by_locate[i]);
    }
    cr_assert_gt(by_locate[1], by_locate[0], "\"node a\" has weight 2");
    res_free(&r);
    assert_verify(path_join(test_dir, "out"));
    PREP("rm -rf out");
    static const struct {
        const char *line, *msg;
    } bad[] = {
        {"\"a b", "nodes.txt:2: unterminated quoted node name (the quote at column 1)"},
        {"  \"a\"\"b 2", "nodes.txt:2: unterminated quoted node name (the quote at column 3)"},
        {"\"a\"b", "nodes.txt:2: unexpected 'b' after the quoted node name"},
        {"x\\001y", "nodes.txt:2: control character in node name"},
        {"\"x\\033y\"", "nodes.txt:2: control character in node name"},
        {"x\\177y", "nodes.txt:2: control character in node name"},
        {"a b", "nodes.txt:2: weight 'b' of node 'a' is not a positive number"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        PREP("rm -rf out && printf 'ok\\n%s\\nz\\n' > nodes.txt", bad[i].line);
        expect_failure(2, "\"$RS\" bucket --quiet --nodes-file nodes.txt --force -o out good.csv", bad[i].msg, NULL);
    }
}

/* '/', '..', a leading '.', non-ASCII: valid names, escaped into file names
 * directly in the output directory; nothing is created outside it. */
Test(faults, nodes_file_names_stay_inside_the_output)
{
    make_good_csv();
    res r = sh("mkdir w && printf '../evil\\na/b\\n..\\n.\\n/abs\\nna\\303\\257ve\\n\\346\\227\\245\\n.hidden\\n' > names.txt && "
               "cd w && \"$RS\" bucket --quiet --nodes-file ../names.txt --compress none -o out ../good.csv && "
               "find . -mindepth 1 -not -path './out/*' && find out -mindepth 1 -not -type f | wc -l && "
               "find out -mindepth 2 | wc -l && find out -type f | LC_ALL=C sort && cd .. && ls && " PY_TOTALS,
               "w/out");
    cr_assert_eq(r.rc, 0, "%s %s", r.out, r.err);
    cr_assert_str_eq(r.out,
                     "./out\n0\n0\n"
                     "out/%2E%2E%2Fevil.csv\nout/%2E%2E.csv\nout/%2E.csv\nout/%2Ehidden.csv\nout/%2Fabs.csv\n"
                     "out/%E6%97%A5.csv\nout/a%2Fb.csv\nout/manifest.json\nout/na%C3%AFve.csv\n"
                     "good.csv\nnames.txt\nw\n20000 0 8\n",
                     "%s", r.out);
    assert_verify(path_join(test_dir, "w/out"));
    res_free(&r);
}

/* ---- output -------------------------------------------------------------- */

Test(faults, output_parent_is_not_a_directory)
{
    make_good_csv();
    res r = sh("echo data > somefile && \"$RS\" bucket --quiet --nodes 3 -o somefile/out good.csv; echo rc=$?; "
               "cat somefile; find . -name '*ringshard-tmp*' | wc -l");
    cr_assert_str_eq(r.out, "rc=1\ndata\n0\n", "%s %s", r.out, r.err);
    cr_assert(strstr(r.err, "somefile/out: Not a directory"), "%s", r.err);
    res_free(&r);
}

Test(faults, plan_emit_output_exists)
{
    make_good_csv();
    PREP("\"$RS\" bucket --quiet --nodes 3 -o b3 good.csv");
    expect_failure(73, "\"$RS\" plan --from-buckets b3 --add 1 --emit out",
                   "out: output exists (use --force to replace it)", NULL);
    res r = sh("\"$RS\" plan --from-buckets b3 --add 1 --emit out --force > /dev/null && ls out");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert_str_eq(r.out, "0__3.csv.gz\n1__3.csv.gz\n2__3.csv.gz\nmanifest.json\n", "--force replaces it");
    assert_verify(path_join(test_dir, "b3"));
    assert_verify(path_join(test_dir, "out"));
    res_free(&r);
}

Test(faults, dedup_output_exists)
{
    make_good_csv();
    expect_failure(73, "\"$RS\" dedup --quiet --nodes 3 -o out good.csv",
                   "out: output exists (use --force to replace it)", NULL);
    PREP("rm -rf out b3 && \"$RS\" bucket --quiet --nodes 3 -o b3 good.csv");
    expect_failure(73, "\"$RS\" dedup --quiet -o out --buckets b3", "out: output exists (use --force to replace it)",
                   NULL);
}

/* ---- SIGKILL --------------------------------------------------------------- */

/* The run stops itself after its first batch is written into the
 * temporary directory (RINGSHARD_TEST_PAUSE_AT; 9.6 MB of input in batches
 * of 1.5 MiB at --memory 32M) and is killed there, whatever the machine's
 * speed. (Under ASan on a loaded machine the test takes minutes.) */
Test(faults, sigkill_then_rerun_is_byte_identical, .timeout = 600)
{
    res r = sh(WAIT_SH "G=$(dirname \"$RS\")/gen_bills; killed=0; "
               "$G --rows 100000 --seed 5 2>/dev/null | gzip -1 > in.gz || exit 9; "
               "RINGSHARD_TEST_PAUSE_AT=batch_written \"$RS\" bucket --quiet --memory 32M -o out in.gz & p=$!; "
               "wait_stopped $p 'the first batch written' || { kill -9 $p 2>/dev/null; exit 124; }; "
               "kill -9 $p; wait $p; rc=$?; "
               "[ $rc = 137 ] && ls -d out.ringshard-tmp.*/ > /dev/null 2>&1 && "
               "! ls out.ringshard-tmp.*/manifest.json > /dev/null 2>&1 && killed=1; "
               "echo killed=$killed; test -e out && echo published; "
               "\"$RS\" bucket --quiet --memory 32M -o out in.gz; echo rc=$?; find . -name '*ringshard-tmp*' | wc -l; "
               "\"$RS\" bucket --quiet --memory 32M -o ref in.gz && diff -r ref out && ls out | wc -l");
    cr_assert_str_eq(r.out, "killed=1\nrc=0\n0\n1001\n",
                     "killed mid-run with a temporary left; the rerun removes it and writes the same output: %s %s",
                     r.out, r.err);
    assert_verify(path_join(test_dir, "out"));
    assert_verify(path_join(test_dir, "ref"));
    res_free(&r);
}

/* ---- --on-bad-row skip ------------------------------------------------------- */

/* Several kinds of bad rows (stray quote, missing key column, over
 * --max-record) among good ones with quoted fields: the manifest's rows +
 * rejected equal the input's records as Python's csv module counts them.
 * (The good quoted fields hold no line break: see docs/failures.md.) */
Test(faults, skip_several_bad_rows_conserves_the_count)
{
    res r = sh("python3 -c \"\nw = open('in.csv', 'w', newline='')\nw.write('id,name,note\\n')\nbad = 0\n"
               "for i in range(3000):\n"
               "    if i %% 97 == 5:\n"
               "        w.write(['%%d,na\\\"me,x\\n', '%%d\\n', '%%d,' + 'y' * 3000 + ',z\\n'][i %% 3] %% i); bad += 1\n"
               "    else:\n"
               "        w.write('%%d,n%%d,%%s\\n' %% (i, i, '\\\"a,\\\"\\\"b\\\"\\\"\\\"' if i %% 10 == 0 else 'plain'))\n"
               "print(bad)\" > bad.txt && gzip -k in.csv && "
               "\"$RS\" bucket --quiet --key 2 --max-record 1K --on-bad-row skip --nodes 7 -o out in.csv.gz && "
               "python3 -c \"\nimport csv, gzip, glob, json\n"
               "n = sum(1 for r in csv.reader(open('in.csv', newline='')) if r) - 1\n"
               "t = json.load(open('out/manifest.json'))['totals']\n"
               "o = sum(sum(1 for r in csv.reader(gzip.open(f, 'rt', newline='')) if r) - 1 for f in glob.glob('out/*.csv.gz'))\n"
               "print(n, t['rows'] + t['rejected'], t['rejected'], int(open('bad.txt').read()), o == t['rows'])\"");
    cr_assert_eq(r.rc, 0, "%s %s", r.out, r.err);
    cr_assert_str_eq(r.out, "3000 3000 31 31 True\n", "records in, rows + rejected, rejected, bad rows made, "
                     "rows in the outputs == manifest rows: %s", r.out);
    assert_verify(path_join(test_dir, "out"));
    res_free(&r);
}

/* Regression: with --on-bad-row skip|quarantine, a rejected row with an odd
 * number of quotes used to shift the quote parity that batches and
 * segments are cut by, so later records with quoted line breaks were split
 * and rejected too, differently for each -j. Now the cut walks the records
 * with the parser's own recovery rule. */
Test(faults, stray_quote_skip_loses_nothing_else_for_any_j)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/m.csv", test_dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("id,name,note\n0,na\"me,x\n", f);
    for (int i = 1; i < 200; i++)
        fprintf(f, "%d,n%d,%s\n", i, i, i % 10 == 0 ? "\"a\nb\"" : "plain");
    fclose(f);
    char *out, *err;
    int rc = runf(&out, &err,
                  "cd %s && for j in 1 2 4; do \"$RS\" bucket --quiet -j$j --key 2 --on-bad-row quarantine=q$j.tsv "
                  "--nodes 7 -o out$j m.csv || exit 9; done && diff -r -x manifest.json out1 out2 && "
                  "diff -r -x manifest.json out1 out4 && "
                  "python3 -c \"import json; m = json.load(open('out2/manifest.json')); "
                  "print(m['totals']['rows'], m['totals']['rejected'])\" && tail -n +2 q2.tsv | wc -l",
                  test_dir);
    cr_assert_eq(rc, 0, "%s %s", out, err);
    cr_assert(strstr(out, "199 1\n1\n"), "199 rows kept, 1 rejected, 1 quarantined: %s", out);
    assert_verify(path_join(test_dir, "out1"));
    assert_verify(path_join(test_dir, "out2"));
    assert_verify(path_join(test_dir, "out4"));
    free(out);
    free(err);
}

/* Only empty inputs, gzip output: every file is still valid gzip (an empty
 * member), not a 0-byte file that gzip -t rejects; dedup's too (it wrote
 * 0-byte files, which verify rejected). */
Test(faults, empty_inputs_give_valid_gzip_files)
{
    char *out, *err;
    int rc = runf(&out, &err,
                  "cd %s && : > empty.csv && \"$RS\" bucket --quiet --allow-empty --nodes 3 -o out empty.csv && gzip -t out/*.csv.gz && "
                  "\"$RS\" dedup --quiet --allow-empty --nodes 3 -o dd empty.csv && gzip -t dd/*.csv.gz && "
                  "cat out/*.csv.gz dd/*.csv.gz | gzip -dc | wc -c",
                  test_dir);
    cr_assert_eq(rc, 0, "%s %s", out, err);
    cr_assert_eq(atoi(out), 0, "no data: %s", out);
    assert_verify(path_join(test_dir, "out"));
    assert_verify(path_join(test_dir, "dd"));
    free(out);
    free(err);
}
