/* Self-describing gzip members (the RS extra subfield, docs/format-data.md) and
 * the units they let a reader cut a file into (reader.h): the format, and,
 * in one process, that reading a file in units changes nothing a user sees
 * - rows, buckets, messages, quarantine lines - while a header that lies
 * about its member is caught. (Units across MPI ranks: test_mpi.c.) */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "ringshard/deflate.h"
#include "ringshard/reader.h"
#include "rs_config.h"
#include "support.h"
#include "wait.h"

#define CHECK_MEMBERS "python3 " RS_SOURCE_DIR "/tests/check_members.py "
#define CHECK_BUCKETS "python3 " RS_SOURCE_DIR "/tests/check_buckets.py \"$RS\" "

TestSuite(units, .init = test_dir_setup, .fini = test_dir_teardown, .timeout = 600);

#define OK SH_OK

/* ------------------------------------------------------------- format */

static void member_layout(rs_codec_choice codec)
{
    /* a CRLF, a CR|LF split across pieces, a lone CR inside quotes */
    const char *p[] = {"a,b\r\n1,2\r", "\n3,\"x\ry\"\n", ""};
    size_t l[] = {strlen(p[0]), strlen(p[1]), 0};
    rs_deflater *d = rs_deflater_new(6, codec);
    cr_assert_not_null(d);
    rs_buf out = {0};
    rs_buf_append(&out, "xy", 2);  /* members are appended */
    uint32_t crc;
    cr_assert_eq(rs_deflater_member(d, (const void *const *)p, l, 3, 3, &out, &crc), 0);
    const unsigned char *m = (const unsigned char *)out.data + 2;
    size_t mlen = out.len - 2, need;
    rs_member_info mi;
    cr_assert_eq(rs_member_parse(m, mlen, &mi, &need), 1);
    cr_assert_eq(need, RS_MEMBER_HEADER_LEN);
    cr_assert_eq(mi.size, mlen, "size %llu, member %zu", (unsigned long long)mi.size, mlen);
    cr_assert_eq(mi.lines, 4);
    cr_assert_eq(mi.records, 3);
    cr_assert_eq(mi.version, 1);
    cr_assert_eq(mi.flags, RS_MEMBER_BOUNDARY);
    cr_assert(m[3] == 4 && m[12] == 'R' && m[13] == 'S' && m[14] == 28 && m[15] == 0);
    /* plain gzip for zlib, and the CRC the caller gets is the data's */
    char text[64];
    z_stream z = {0};
    cr_assert_eq(inflateInit2(&z, 15 + 16), Z_OK);
    z.next_in = (Bytef *)m;
    z.avail_in = (uInt)mlen;
    z.next_out = (Bytef *)text;
    z.avail_out = sizeof text;
    cr_assert_eq(inflate(&z, Z_FINISH), Z_STREAM_END);
    cr_assert_eq(z.avail_in, 0, "the member ends where its size says");
    size_t n = sizeof text - z.avail_out;
    inflateEnd(&z);
    cr_assert_eq(n, l[0] + l[1]);
    cr_assert(!memcmp(text, p[0], l[0]) && !memcmp(text + l[0], p[1], l[1]));
    cr_assert_eq(crc, (uint32_t)crc32(crc32(0, (const Bytef *)p[0], (uInt)l[0]), (const Bytef *)p[1], (uInt)l[1]));
    /* an empty member still describes itself */
    out.len = 0;
    cr_assert_eq(rs_deflater_member(d, NULL, NULL, 0, 0, &out, &crc), 0);
    cr_assert_eq(rs_member_parse(out.data, out.len, &mi, &need), 1);
    cr_assert(mi.size == out.len && mi.lines == 0 && mi.records == 0);
    rs_buf_free(&out);
    rs_deflater_free(d);
}

Test(units, member_header_layout_isal_and_zlib)
{
    member_layout(RS_CODEC_AUTO);
    member_layout(RS_CODEC_ZLIB);
}

Test(units, parse_rejects_other_headers_and_finds_rs_among_subfields)
{
    rs_member_info mi;
    size_t need;
    /* gzip's own header: no FEXTRA */
    const unsigned char plain[12] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0, 0};
    cr_assert_eq(rs_member_parse(plain, sizeof plain, &mi, &need), 0);
    cr_assert_eq(need, 0);
    /* bgzip-like: a 'BC' subfield only */
    const unsigned char bgzf[18] = {0x1f, 0x8b, 8, 4, 0, 0, 0, 0, 0, 0xff, 6, 0, 'B', 'C', 2, 0, 0x10, 0};
    cr_assert_eq(rs_member_parse(bgzf, sizeof bgzf, &mi, &need), 0);
    cr_assert_eq(need, 18);
    /* 'BC' first, then RS (version 1): found; too short: asks for more */
    unsigned char both[12 + 6 + 32] = {0x1f, 0x8b, 8, 4, 0, 0, 0, 0, 0, 3, 38, 0, 'B', 'C', 2, 0, 0x10, 0,
                                       'R', 'S', 28, 0, 1, 1, 0, 0, 77};
    cr_assert_eq(rs_member_parse(both, 30, &mi, &need), 0);
    cr_assert_eq(need, sizeof both);
    cr_assert_eq(rs_member_parse(both, sizeof both, &mi, &need), 1);
    cr_assert_eq(mi.size, 77);
    both[22] = 2;  /* an unknown version is not ours to split */
    cr_assert_eq(rs_member_parse(both, sizeof both, &mi, &need), 0);
}

Test(units, bucket_outputs_are_chained_plain_gzip_and_input_independent)
{
    OK(GEN " --rows 30000 --seed 3 --newline-share 0.02 -o in.csv 2>/dev/null && "
       "\"$RS\" bucket --quiet --key bill_id --nodes 5 --memory 32M -o a in.csv && "
       "cat in.csv | \"$RS\" bucket --quiet --key bill_id --nodes 5 --memory 32M -o b - && "
       "diff -r -x manifest.json a b && "
       "\"$RS\" bucket --quiet --keys-only --key bill_id --nodes 5 --memory 32M -o k in.csv");
    cmd_result r = sh_in_test_dir(CHECK_MEMBERS "a/*.csv.gz k/*.csv.gz");
    cr_assert_eq(r.rc, 0, "%s%s", r.out, r.err);
    /* 30000 rows and a header per file, twice (rows, keys) */
    cr_assert(strstr(r.out, " 60010 records"), "%s", r.out);
    cmd_result_free(&r);
    OK("for f in a/*.csv.gz; do gzip -t $f && zcat $f > z && igzip -dc $f > i && cmp z i || exit 1; done && "
       "test $(cat a/*.csv.gz | gzip -dc | grep -c bill_id) = 5");
}

/* --------------------------------------------------- one process, units */

/* a/data.gz: 120,000 rows written by ringshard (several members at
 * --memory 32M); with `bad`, two records far apart (after rows 90,000 and
 * 110,000) are cut to one field, so that reading them with --key 3 fails
 * there; their line numbers go to badlines. b/data.gz: the same CSV from
 * gzip -6 (one unit). Same names in a/ and b/, so that messages can be
 * compared byte for byte. */
static void make_split_input(int bad)
{
    OK(GEN " --rows 120000 --seed 11 --newline-share 0.01 -o in.csv 2>/dev/null && python3 -c '\n"
       "import sys\n"
       "lines = open(\"in.csv\", \"rb\").read().split(b\"\\n\"); quotes = 0; want = [90000, 110000] if %d else []; bad = []\n"
       "for i, l in enumerate(lines):\n"
       "    if want and quotes %% 2 == 0 and i >= want[0] and b\"\\x22\" not in l:\n"
       "        lines[i] = l.split(b\",\")[0]; bad.append(str(i + 1)); want.pop(0)\n"
       "    quotes += l.count(b\"\\x22\")\n"
       "open(\"in2.csv\", \"wb\").write(b\"\\n\".join(lines)); print(\" \".join(bad))' > badlines && "
       "\"$RS\" bucket --quiet --key 1 --nodes 1 --memory 32M -o w in2.csv && mkdir a b && mv w/0.csv.gz a/data.gz && "
       "gzip -6 -c in2.csv > b/data.gz",
       bad);
}

Test(units, split_file_same_rows_and_identical_for_any_threads)
{
    make_split_input(0);
    OK(CHECK_MEMBERS "a/data.gz > /dev/null");
    /* units of every member, of about 1 MB, and the default (one unit) */
    const char *units[] = {"1", "1000000", ""};
    for (int u = 0; u < 3; u++) {
        OK("cd a && for j in 1 2 8; do RINGSHARD_UNIT_BYTES=%s \"$RS\" bucket --quiet -j $j --key bill_id --nodes 7 "
           "--memory 64M -o u%d_$j data.gz || exit 9; done && "
           "diff -r -x manifest.json u%d_1 u%d_2 && diff -r -x manifest.json u%d_1 u%d_8 && " CHECK_BUCKETS "u%d_1 bill_id ../in2.csv "
           "-- --nodes 7 > /dev/null",
           units[u], u, u, u, u, u, u);
    }
    /* the tiny units did cut the file: a batch never spans two, so the
     * members differ from the one-unit run's (64M batches hold more than
     * one 32M-written member) */
    OK("cd a && ! diff -r -q -x manifest.json u0_1 u2_1 > /dev/null");
}

Test(units, bad_row_in_a_later_unit_same_message_and_quarantine_as_whole_file)
{
    make_split_input(1);
    cmd_result a = sh_in_test_dir("cd a && RINGSHARD_UNIT_BYTES=1 \"$RS\" bucket --quiet --key 3 --nodes 7 "
                                  "--memory 32M -o out data.gz");
    cmd_result b = sh_in_test_dir("cd b && \"$RS\" bucket --quiet --key 3 --nodes 7 --memory 32M -o out data.gz");
    cr_assert_eq(a.rc, 2, "%s", a.err);
    cr_assert_eq(b.rc, 2, "%s", b.err);
    cr_assert(strstr(a.err, "data.gz: line ") && strstr(a.err, "missing key column"), "%s", a.err);
    cr_assert_str_eq(a.err, b.err);
    cmd_result_free(&a);
    cmd_result_free(&b);
    for (int j = 1; j <= 2; j++)
        OK("for d in a b; do (cd $d && RINGSHARD_UNIT_BYTES=1 \"$RS\" bucket --quiet -j %d --key 3 --nodes 7 "
           "--memory 32M --on-bad-row quarantine=q%d.tsv -o q%d data.gz) || exit 9; done && "
           "cmp a/q%d.tsv b/q%d.tsv && test $(wc -l < a/q%d.tsv) = 3",
           j, j, j, j, j, j);
    /* the two lines are the ones cut */
    OK("test \"$(cut -f2 a/q1.tsv | tail -n 2 | tr '\\n' ' ')\" = \"$(cat badlines) \"");
}

/* --no-header output starts with an empty member: the first unit still
 * reaches the file's first line, so reading it back with a header works
 * for any unit size and gives what standard input gives. */
Test(units, no_header_output_read_back_with_a_header)
{
    OK("printf 'id,v\\n' > in.csv && seq 1 3000 | sed 's/$/,x/' >> in.csv && "
       "\"$RS\" bucket --quiet --no-header --nodes 1 -o nh in.csv");
    OK("RINGSHARD_UNIT_BYTES=1 \"$RS\" bucket --quiet --nodes 3 -o a nh/0.csv.gz && "
       "gzip -dc nh/0.csv.gz | \"$RS\" bucket --quiet --nodes 3 -o b - && "
       "for f in 0 1 2; do gzip -dc a/$f.csv.gz > a$f && gzip -dc b/$f.csv.gz > b$f && cmp a$f b$f || exit 1; done");
}

Test(units, lying_member_headers_are_caught_or_ignored)
{
    make_split_input(0);
    /* member 4 claims one record more: a data error naming the file and
     * the unit's byte range, whatever the unit size */
    OK("python3 -c '\n"
       "import struct\n"
       "d = bytearray(open(\"a/data.gz\", \"rb\").read()); off = 0; k = 0\n"
       "while off < len(d):\n"
       "    size, = struct.unpack(\"<Q\", d[off + 20:off + 28])\n"
       "    if k == 4: first = off\n"
       "    off += size; k += 1\n"
       "lie = bytearray(d); r, = struct.unpack(\"<Q\", lie[first + 36:first + 44])\n"
       "lie[first + 36:first + 44] = struct.pack(\"<Q\", r + 1); open(\"a/records.gz\", \"wb\").write(lie)\n"
       "lie = bytearray(d); s, = struct.unpack(\"<Q\", lie[first + 20:first + 28])\n"
       "lie[first + 20:first + 28] = struct.pack(\"<Q\", s - 1); open(\"a/size.gz\", \"wb\").write(lie)\n"
       "print(first)' > first");
    cmd_result f = sh_in_test_dir("cat first");
    long long first = atoll(f.out);
    cr_assert_gt(first, 0);
    cmd_result_free(&f);
    for (int u = 0; u < 2; u++) {
        cmd_result r = sh_in_test_dir("cd a && RINGSHARD_UNIT_BYTES=%s \"$RS\" bucket --quiet --key bill_id --memory "
                                      "32M -o out records.gz",
                                      u ? "1" : "100000000");
        cr_assert_eq(r.rc, 2, "%s", r.err);
        char want[96];
        /* one unit per member, or the whole file as one unit */
        snprintf(want, sizeof want, "records.gz: the gzip members at byte offsets %lld to ", u ? first : 0LL);
        cr_assert(strstr(r.err, want) && strstr(r.err, "declare"), "want \"%s\": %s", want, r.err);
        cmd_result_free(&r);
    }
    /* a wrong size breaks the chain: the file is read whole, as gzip, and
     * gives exactly what the same CSV from gzip -6 gives */
    OK("cd a && RINGSHARD_UNIT_BYTES=1 \"$RS\" bucket --quiet --key bill_id --memory 32M -o s size.gz && "
       "cd ../b && \"$RS\" bucket --quiet --key bill_id --memory 32M -o s data.gz && cd .. && "
       "diff -r -x manifest.json a/s b/s");
}

Test(units, unit_lists_of_ringshard_and_other_files)
{
    make_split_input(0);
    rs_error err = {0};
    rs_input_unit *u;
    size_t n;
    uint64_t size;
    char *a = strdup(path_join(test_dir, "a/data.gz")), *b = strdup(path_join(test_dir, "b/data.gz"));
    cr_assert_eq(rs_input_units(a, 1000000, &u, &n, &size, &err), 0, "%s", err.msg);
    cr_assert_geq(n, 3, "%zu units", n);
    uint64_t off = 0, lines = 0, recs = 0;
    for (size_t k = 0; k < n; k++) {
        cr_assert(u[k].counted && u[k].offset == off && u[k].line_base == lines && u[k].record_base == recs);
        cr_assert(k == 0 || u[k].offset >= 1000000 * k, "unit %zu at %llu", k, (unsigned long long)u[k].offset);
        off += u[k].size, lines += u[k].lines, recs += u[k].records;
    }
    cr_assert_eq(off, size);
    cr_assert_eq(recs, 120001, "records %llu", (unsigned long long)recs);
    free(u);
    cr_assert_eq(rs_input_units(b, 1000000, &u, &n, &size, &err), 0);
    cr_assert(n == 1 && !u[0].counted && u[0].offset == 0 && u[0].size == size && size > 0);
    free(u);
    cr_assert_eq(rs_input_units("-", 1, &u, &n, &size, &err), 0);
    cr_assert(n == 1 && !u[0].counted);
    free(u);
    cr_assert_eq(rs_input_units(path_join(test_dir, "nope.gz"), 1, &u, &n, &size, &err), -1);
    cr_assert_eq(err.code, RS_EXIT_IO);
    rs_error_clear(&err);
    /* a byte range of whole members reads as its own gzip stream */
    cr_assert_eq(rs_input_units(a, 1000000, &u, &n, &size, &err), 0);
    rs_reader *r = rs_reader_open_range(a, RS_CODEC_AUTO, u[1].offset, u[1].size, &err);
    cr_assert_not_null(r, "%s", err.msg);
    static char buf[1 << 20];
    uint64_t got = 0, nl = 0;
    ssize_t k;
    while ((k = rs_reader_read(r, buf, sizeof buf, &err)) > 0) {
        got += (uint64_t)k;
        nl += rs_count_line_ends(buf, (size_t)k);
    }
    cr_assert_eq(k, 0, "%s", err.msg);
    cr_assert_eq(nl, u[1].lines);
    cr_assert_eq(rs_reader_consumed(r), u[1].size);
    rs_reader_close(r);
    /* a range that ends inside a member is a truncated stream at a file offset */
    r = rs_reader_open_range(a, RS_CODEC_AUTO, u[1].offset, u[1].size - 5, &err);
    while ((k = rs_reader_read(r, buf, sizeof buf, &err)) > 0)
        ;
    cr_assert_eq(k, -1);
    cr_assert(strstr(err.msg, "truncated") && strstr(err.msg, "data.gz"), "%s", err.msg);
    rs_reader_close(r);
    free(u);
    free(a);
    free(b);
}

/* ------------------------------------- reading settings, unit ends, growth */

/* Runs `bucket OPTS` on FILE in dir d and on `zcat FILE | ... -` (a
 * whole-file read, one stream), each with its own quarantine file when
 * OPTS has QFILE, and compares exit codes, outputs, quarantine lines
 * (without the input's name) and messages (from ": line" on). */
static void same_as_stdin(const char *d, const char *units, const char *file, const char *opts)
{
    cmd_result a = sh_in_test_dir("cd %s && rm -rf u s qfile qu && RINGSHARD_UNIT_BYTES=%s \"$RS\" bucket --quiet %s "
                                  "-o u %s",
                                  d, units, opts, file);
    cmd_result b = sh_in_test_dir("cd %s && mv -f qfile qu 2>/dev/null; zcat %s | \"$RS\" bucket --quiet %s -o s -",
                                  d, file, opts);
    cr_assert_eq(a.rc, b.rc, "units %s, %s: exit %d, stdin %d\n%s\n%s", units, opts, a.rc, b.rc, a.err, b.err);
    if (a.rc) {
        const char *ma = strstr(a.err, ": line"), *mb = strstr(b.err, ": line");
        cr_assert(ma && mb && !strcmp(ma, mb), "units %s, %s:\n%s\n%s", units, opts, a.err, b.err);
    } else {
        OK("cd %s && diff -r -x manifest.json u s && if test -e qfile; then cut -f2- qu > qu2 && cut -f2- qfile > qs2 "
           "&& cmp qu2 qs2 && test $(wc -l < qfile) -gt 1; fi",
           d);
    }
    cmd_result_free(&a);
    cmd_result_free(&b);
}

Test(units, other_reading_settings_never_reject_own_output)
{
    /* the reviewer's file: a quoted record of three lines */
    OK("printf 'id,v\\n1,\"aaaaaaaaaaaa\\nbbbbbbbbbbbbbbbbb\\nccccccccccccccc\"\\n2,x\\n3,y\\n' > long.csv && "
       "\"$RS\" bucket --quiet --nodes 1 -o l1 long.csv && "
       "RINGSHARD_UNIT_BYTES=1 \"$RS\" bucket --quiet --nodes 1 -o l2 --max-record 20 --on-bad-row skip l1/0.csv.gz && "
       "test \"$(zcat l2/0.csv.gz)\" = \"$(printf 'id,v\\n2,x\\n3,y')\"");
    const char *units[] = {"1", "100000000"};
    for (int u = 0; u < 2; u++) {
        same_as_stdin("l1", units[u], "0.csv.gz", "--nodes 1 --max-record 20 --on-bad-row skip");
        same_as_stdin("l1", units[u], "0.csv.gz", "--nodes 1 --delimiter ';' --on-bad-row quarantine=qfile");
    }
    OK("test $(wc -l < l1/qu) = 3");
    /* A record that recovery splits can start a quoted field that runs
     * past a member's end: two ringshard outputs end to end, the first
     * ending with a line `"` (inside a quoted field the writer kept
     * whole), the second with no header. */
    OK("printf 'id,v\\nk1,\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\\n\"\",x\\n\"\\n' > p1.csv && printf 'k2,y\\nk3,\"z\"\\nk4,w\\n' > p2.csv && "
       "\"$RS\" bucket --quiet --nodes 1 -o p1 p1.csv && \"$RS\" bucket --quiet --nodes 1 --no-header -o p2 p2.csv && "
       "mkdir st && cat p1/0.csv.gz p2/0.csv.gz > st/both.gz");
    for (int u = 0; u < 2; u++) {
        same_as_stdin("st", units[u], "both.gz", "--nodes 1 --max-record 20 --on-bad-row quarantine=qfile");
        same_as_stdin("st", units[u], "both.gz", "--nodes 1 --max-record 20");
    }
    /* 120,000 rows in several members, with every member a unit (-j 1
     * and 2), and the default units */
    make_split_input(0);
    const char *opts[] = {
        "--key 1 --nodes 7 --memory 32M --max-record 150 --on-bad-row quarantine=qfile",
        "--key 1 --nodes 7 --memory 32M -j 1 --delimiter ';' --on-bad-row quarantine=qfile",
        "--key 1 --nodes 7 --memory 32M --delimiter ';' --on-bad-row skip",
        /* --on-bad-row fail: units stay split, the first fault is the
         * whole-file read's, at the same line and record */
        "--key 1 --nodes 7 --memory 32M --max-record 150",
        "--key 1 --nodes 7 --memory 32M --delimiter ';'",
        "--key 1 --nodes 7 --memory 32M --delimiter tab",
    };
    for (size_t k = 0; k < sizeof opts / sizeof *opts; k++)
        for (int u = 0; u < 2; u++)
            same_as_stdin("a", units[u], "data.gz", opts[k]);
}

/* Two crafted members: A ends inside a record that B, flagged as starting
 * at a record boundary, completes; the counts agree with the false split.
 * A whole-file read joins the record. */
#define CRAFT_MEMBERS                                                                                          \
    "python3 -c '\n"                                                                                         \
    "import struct, zlib\n"                                                                                  \
    "def member(data, lines, records):\n"                                                                    \
    "    c = zlib.compressobj(6, zlib.DEFLATED, -15); body = c.compress(data) + c.flush()\n"                 \
    "    h = b\"\\x1f\\x8b\\x08\\x04\\0\\0\\0\\0\\0\\x03\\x20\\0RS\\x1c\\0\\x01\\x01\\0\\0\"\n"                \
    "    h += struct.pack(\"<QQQ\", 44 + len(body) + 8, lines, records)\n"                                   \
    "    return h + body + struct.pack(\"<II\", zlib.crc32(data), len(data))\n"                             \
    "a = member(b\"id,v\\nk1,abc\", 1, 2); open(\"ab.gz\", \"wb\").write(a + member(b\"def\\nk2,x\\n\", 2, 2))\n" \
    "q = member(b\"id,v\\nk1,\\x22abc\\n\", 2, 2); open(\"q.gz\", \"wb\").write(q + member(b\"def\\x22\\nk2,x\\n\", 2, 2))\n" \
    "print(len(a), len(q))'"

Test(units, unit_ending_inside_a_record_fails_naming_file_and_offset)
{
    /* the independent checker sees it too (after the first member's counts) */
    cmd_result m = sh_in_test_dir(CRAFT_MEMBERS " > ends && for f in ab.gz q.gz; do ! " CHECK_MEMBERS "$f || exit 9; "
                                  "done && cat ends");
    cr_assert_eq(m.rc, 0, "%s%s", m.out, m.err);
    cr_assert(strstr(m.out, "ab.gz: offset 0: the member's data ends inside a record") &&
                  strstr(m.out, "q.gz: offset 0: the member's data ends inside a record"),
              "%s", m.out);
    int ea = 0, eq = 0;
    cr_assert_eq(sscanf(strchr(strstr(m.out, "q.gz: offset 0"), '\n') + 1, "%d %d", &ea, &eq), 2, "%s", m.out);
    cmd_result_free(&m);
    const char *files[] = {"ab.gz", "q.gz"};
    int ends[] = {ea, eq};
    for (int f = 0; f < 2; f++)
        for (int j = 1; j <= 2; j++) {
            cmd_result r = sh_in_test_dir("RINGSHARD_UNIT_BYTES=1 \"$RS\" bucket --quiet -j %d --nodes 1 -o o %s", j,
                                          files[f]);
            char want[160];
            snprintf(want, sizeof want, "%s: the gzip members at byte offsets 0 to %d end inside a record", files[f],
                     ends[f]);
            cr_assert_eq(r.rc, 2, "%s: exit %d, %s", files[f], r.rc, r.err);
            cr_assert(strstr(r.err, want) && strstr(r.err, "the member at byte offset"), "want \"%s\": %s", want,
                      r.err);
            cmd_result_free(&r);
        }
    /* skip and quarantine read such a file whole: the joined record */
    OK("RINGSHARD_UNIT_BYTES=1 \"$RS\" bucket --quiet --nodes 1 --on-bad-row skip -o s ab.gz && "
       "test \"$(zcat s/0.csv.gz)\" = \"$(printf 'id,v\\nk1,abcdef\\nk2,x')\" && "
       "RINGSHARD_UNIT_BYTES=1 \"$RS\" bucket --quiet --nodes 1 --on-bad-row quarantine=qf -o q q.gz && "
       "test \"$(zcat q/0.csv.gz)\" = \"$(printf 'id,v\\nk1,\"abc\\ndef\"\\nk2,x')\" && test $(wc -l < qf) = 1");
}

/* Units cover a file as it was listed; bytes appended while the run reads
 * an earlier input (a FIFO, held open until then) are not ignored. */
Test(units, data_appended_after_listing_fails_naming_the_file)
{
    OK("printf 'id,v\\n1,a\\n2,b\\n' > t.csv && \"$RS\" bucket --quiet --nodes 1 -o t t.csv && cp t/0.csv.gz target.gz && "
       "printf 'id,v\\n3,c\\n' > m.csv && \"$RS\" bucket --quiet --nodes 1 --no-header -o m m.csv && mkfifo fifo");
    for (int u = 0; u < 2; u++) {
        /* Our end of the FIFO is opened read-write (no wait for a reader,
         * and the pipe keeps what we write until the run reads it), not
         * inherited by the run, and closed (end of input) once the run has
         * opened the FIFO to read. */
        cmd_result r = sh_in_test_dir(
            WAIT_SH "cp t/0.csv.gz target.gz && rm -rf out && exec 3<> fifo && "
            "{ RINGSHARD_UNIT_BYTES=%s \"$RS\" bucket --quiet --nodes 1 -o out fifo target.gz 2> err 3>&- & } && pid=$! && "
            /* listed (the outputs are opened after the inputs are listed) */
            "wait_for 'the outputs opened' 'test -e out.ringshard-tmp.*/0.csv.gz' || { kill -9 $pid 2>/dev/null; exit 124; }; "
            "cat m/0.csv.gz >> target.gz && printf 'id,v\\n9,z\\n' >&3 && "
            /* (had it not opened the FIFO, it would wait for a writer forever) */
            "wait_for 'the FIFO open to read' 'ls -l /proc/$pid/fd 2>/dev/null | grep -q fifo' || { kill -9 $pid 2>/dev/null; exit 124; }; "
            "exec 3>&-; wait $pid; echo $?; cat err",
            u ? "1" : "100000000");
        cr_assert(strstr(r.out, "1\n") == r.out, "%s%s", r.out, r.err);
        cr_assert(strstr(r.out, "target.gz: the file changed while it was read: its gzip members ended at byte offset "),
                  "%s", r.out);
        cmd_result_free(&r);
        OK("test ! -e out");
    }
    /* the reader itself: the last unit's range must still end the file */
    rs_error err = {0};
    rs_input_unit *u;
    size_t n;
    uint64_t size;
    char *path = strdup(path_join(test_dir, "t/0.csv.gz"));
    static char buf[4096];
    for (int grow = 0; grow < 2; grow++) {
        cr_assert_eq(rs_input_units(path, 1, &u, &n, &size, &err), 0, "%s", err.msg);
        cr_assert(n >= 2 && u[n - 1].counted);
        if (grow)
            OK("printf 'x' >> t/0.csv.gz");
        rs_reader *r = rs_reader_open_range(path, RS_CODEC_AUTO, u[n - 1].offset, u[n - 1].size, &err);
        cr_assert_not_null(r);
        rs_reader_expect_file_end(r);
        ssize_t k;
        while ((k = rs_reader_read(r, buf, sizeof buf, &err)) > 0)
            ;
        cr_assert_eq(k, grow ? -1 : 0, "%s", err.msg);
        if (grow)
            cr_assert(err.code == RS_EXIT_IO && strstr(err.msg, "0.csv.gz: the file changed") &&
                          strstr(err.msg, "now holds"),
                      "%s", err.msg);
        rs_reader_close(r);
        free(u);
        rs_error_clear(&err);
    }
    free(path);
}

#if RS_HAVE_MPI
/* Under MPI (this suite in a -DRINGSHARD_MPI=ON build): a file read whole
 * because of the settings is read by the rank that holds its first unit,
 * and the output is still the single process's, byte for byte. */
Test(units, settings_that_read_files_whole_same_output_under_mpi)
{
    make_split_input(0);
    OK(GEN " --rows 50 --seed 13 -o a/small.csv 2>/dev/null");
    const char *opts[] = {"--max-record 150 --on-bad-row quarantine=q.tsv", "--delimiter ';' --on-bad-row skip",
                          "--max-record 150 --on-bad-row skip"};
    for (int k = 0; k < 3; k++) {
        OK("cd a && rm -rf ref q.tsv && RINGSHARD_UNIT_BYTES=1000000 \"$RS\" bucket --quiet --key 1 --nodes 7 "
           "--memory 32M %s -o ref data.gz small.csv && touch q.tsv && mv q.tsv ref.tsv",
           opts[k]);
        for (int R = 2; R <= 3; R++)
            OK("cd a && rm -rf r q.tsv && RINGSHARD_UNIT_BYTES=1000000 mpirun --allow-run-as-root --oversubscribe "
               "--mca btl self,vader -n %d \"$RS\" bucket --quiet -j 1 --key 1 --nodes 7 --memory 32M %s -o r "
               "data.gz small.csv && touch q.tsv && cmp q.tsv ref.tsv && diff -r -x manifest.json ref r && "
               "grep -v '\"seconds\"' ref/manifest.json > m1 && grep -v '\"seconds\"' r/manifest.json > m2 && cmp m1 m2",
               R, opts[k]);
    }
}
#endif
