/* zstd in and out: zstd inputs from another writer (the zstd CLI,
 * fixtures/zstd/ from tools/gen/gen_zstd_fixtures.sh) and faulty ones, exact
 * messages; `--compress zstd` outputs read back by zstd itself, their
 * metadata frames and the units they give; every command on .csv.zst
 * directories. In a build without libzstd (-DRINGSHARD_ZSTD=OFF, run by
 * tools/test.sh) the suite checks the refusals instead. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "ringshard/deflate.h"
#include "ringshard/reader.h"
#include "io/io_internal.h"
#include "rs_config.h"
#include "support.h"
#include "wait.h"

#if RS_HAVE_ZSTD
#include <zstd.h>
#endif

#define Z RS_SOURCE_DIR "/fixtures/zstd/"

TestSuite(zstd, .init = test_dir_setup, .fini = test_dir_teardown, .timeout = 600);

#define OK SH_OK

/* Runs cmd in the test directory and asserts exit want_rc and a one-line
 * message holding want (stderr). */
static void fails_with(int want_rc, const char *want, const char *cmd)
{
    cmd_result r = sh_in_test_dir("%s", cmd);
    cr_assert_eq(r.rc, want_rc, "%s: exit %d, want %d; stderr: %s", cmd, r.rc, want_rc, r.err);
    cr_assert(strstr(r.err, want), "%s: message lacks \"%s\": %s", cmd, want, r.err);
    cr_assert(!strchr(r.err, '\n') || strchr(r.err, '\n') == r.err + strlen(r.err) - 1, "one line: %s", r.err);
    cmd_result_free(&r);
}

#if RS_HAVE_ZSTD

/* --------------------------------------------- input from other writers */

/* Every fixture the zstd CLI wrote (levels 1, 19 and --fast=3, no
 * checksum, a --long=27 window without content size, several frames,
 * skippable frames before, between and after them) is read to exactly
 * data.csv, whatever its name, from a file, standard input or a FIFO. */
Test(zstd, reads_the_zstd_cli_corpus)
{
    const char *files[] = {"l1.csv.zst", "l19.csv.zst", "fast.csv.zst", "nocheck.csv.zst",
                           "long.csv.zst", "frames.csv.zst", "skippable.csv.zst"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        OK("rm -rf o && \"$RS\" bucket --quiet --nodes 1 --compress none -o o " Z "%s && cmp o/0.csv " Z "data.csv",
           files[i]);
        OK("rm -rf s && \"$RS\" bucket --quiet --nodes 1 --compress none -o s - < " Z "%s && cmp s/0.csv " Z "data.csv",
           files[i]);
    }
    /* by magic under any name; a FIFO is read once, as a stream */
    OK("cp " Z "skippable.csv.zst data.csv && \"$RS\" bucket --quiet --nodes 1 --compress none -o n data.csv && "
       "cmp n/0.csv " Z "data.csv && mkfifo f && { cat " Z "frames.csv.zst > f & } && "
       "\"$RS\" bucket --quiet --nodes 1 --compress none -o p f && cmp p/0.csv " Z "data.csv && "
       "grep -q '\"rows\": 2000' p/manifest.json");
    /* the counts: 2000 rows in, all of them in the buckets */
    OK("\"$RS\" bucket --quiet --nodes 3 -o b " Z "l19.csv.zst && "
       "test \"$(python3 -c \"import json; print(json.load(open('b/manifest.json'))['totals']['rows'])\")\" = 2000");
}

Test(zstd, dictionary_and_oversized_window_refused)
{
    fails_with(2,
               "dict.csv.zst: the zstd frame starting at byte offset 0 needs dictionary 1420239353: ringshard reads "
               "no dictionary-compressed zstd (decompress it with zstd -D DICT first)",
               "\"$RS\" bucket --quiet --nodes 3 -o out " Z "dict.csv.zst");
    fails_with(2,
               "long28.zst: the zstd frame starting at byte offset 0 needs a window of 256 MiB (window log 28); "
               "ringshard allows at most 128 MiB (window log 27): decompress it first with zstd -d --long=28",
               "\"$RS\" stats --nodes 3 " Z "long28.zst");
    OK("test ! -e out");
}

/* The size of file `name` in the test directory. */
static long long size_of(const char *name)
{
    struct stat st;
    cr_assert_eq(stat(path_join(test_dir, name), &st), 0, "%s", name);
    return (long long)st.st_size;
}

/* Faults in the second of three frames (f1 f2 f3), each message naming
 * the file and the offset of the frame that failed; exit 2, nothing
 * published. Zero padding after the last frame is accepted and counted. */
Test(zstd, corrupt_truncated_and_garbage_name_the_frame)
{
    OK("sed -n '1,700p' " Z "data.csv | zstd -q -c > f1 && sed -n '701,1400p' " Z "data.csv | zstd -q -c > f2 && "
       "sed -n '1401,$p' " Z "data.csv | zstd -q -c > f3 && cat f1 f2 f3 > all.zst");
    long long s1 = size_of("f1"), s2 = size_of("f2"), all = size_of("all.zst");
    char want[512], cmd[512];
    /* truncated inside frame 2 */
    OK("head -c %lld all.zst > cut.zst", s1 + s2 / 2);
    snprintf(want, sizeof want,
             "cut.zst: truncated zstd stream at byte offset %lld (unexpected end of file in the frame starting at "
             "byte offset %lld)", s1 + s2 / 2, s1);
    fails_with(2, want, "\"$RS\" bucket --quiet --nodes 3 -o out cut.zst");
    /* the checksum of frame 2 broken by one changed byte of its data */
    OK("cp all.zst bad.zst && printf '\\377' | dd of=bad.zst bs=1 seek=%lld conv=notrunc 2>/dev/null && "
       "! zstd -t -q bad.zst 2>/dev/null", s1 + s2 - 6);
    snprintf(want, sizeof want, ") in the frame starting at byte offset %lld", s1);
    fails_with(2, want, "\"$RS\" bucket --quiet --nodes 3 -o out bad.zst");
    fails_with(2, "bad.zst: corrupt zstd data (", "\"$RS\" bucket --quiet --nodes 3 -o out bad.zst");
    /* garbage after the last frame; zeros then garbage */
    OK("cat all.zst > g.zst && printf 'xyz' >> g.zst && cat all.zst > zg.zst && printf '\\0\\0x' >> zg.zst");
    snprintf(want, sizeof want,
             "g.zst: garbage after zstd frame at byte offset %lld (3 trailing bytes that do not start a zstd frame)",
             all);
    fails_with(2, want, "\"$RS\" bucket --quiet --nodes 3 -o out g.zst");
    snprintf(want, sizeof want,
             "zg.zst: garbage after zstd frame at byte offset %lld (2 zero bytes, then byte 0x78 at byte offset "
             "%lld: only zero bytes may follow the last frame, up to the end of the file)", all, all + 2);
    fails_with(2, want, "\"$RS\" bucket --quiet --nodes 3 -o out zg.zst");
    /* a skippable frame cut short */
    OK("cat all.zst > sk.zst && printf 'P*M\\030\\020\\0\\0\\0abc' >> sk.zst");
    snprintf(want, sizeof want,
             "sk.zst: truncated zstd stream at byte offset %lld (unexpected end of file in the skippable frame "
             "starting at byte offset %lld)", all + 11, all);
    fails_with(2, want, "\"$RS\" bucket --quiet --nodes 3 -o out sk.zst");
    OK("test ! -e out");
    /* zero padding: read, and counted in the manifest */
    snprintf(cmd, sizeof cmd,
             "cat all.zst > pad.zst && head -c 512 /dev/zero >> pad.zst && "
             "\"$RS\" bucket --quiet --nodes 1 --compress none -o p pad.zst && cmp p/0.csv " Z "data.csv && "
             "grep -q '\"zero_padding_bytes\": 512' p/manifest.json");
    OK("%s", cmd);
}

/* A zstd frame (4-byte content size, 2 MiB window) of one raw last block. */
static size_t raw_frame(unsigned char *f, uint32_t fcs, const char *data)
{
    size_t n = strlen(data), k = 0;
    const unsigned char h[] = {0x28, 0xb5, 0x2f, 0xfd, 0x80, 0x58};
    memcpy(f, h, sizeof h);
    k = sizeof h;
    for (int i = 0; i < 4; i++)
        f[k++] = (unsigned char)(fcs >> (8 * i));
    uint32_t bh = (uint32_t)n << 3 | 1;  /* last block, raw, n bytes */
    for (int i = 0; i < 3; i++)
        f[k++] = (unsigned char)(bh >> (8 * i));
    memcpy(f + k, data, n);
    return k + n;
}

/* Whatever the input block and the read sizes, a frame whose blocks do not
 * decode to the content size its header gives is corrupt. libzstd 1.5.4's
 * streaming decoder lets an empty raw last block through when the input
 * comes in pieces or the output space is small (`zstd -t` passes such a
 * frame), and fails it when both are large: the outcome would depend on
 * read sizes (found by the fuzz_gzip harness). */
Test(zstd, content_size_must_match_whatever_the_read_sizes)
{
    struct {
        uint32_t fcs;
        const char *data;
    } bad[] = {{1000000, ""}, {1000000, "a,b\n1,2\n"}, {3, "a,b\n1,2\n"}, {0, "a,b\n"}};
    const size_t blocks[] = {2, 3, 7, 13, 64, 4096, 0};
    const size_t caps[] = {1, 13, 65536};
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
        unsigned char f[64];
        size_t n = raw_frame(f, bad[b].fcs, bad[b].data);
        const char *path = path_join(test_dir, "fcs.zst");
        FILE *fp = fopen(path, "wb");
        cr_assert(fp && fwrite(f, 1, n, fp) == n && fclose(fp) == 0);
        for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++)
            for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
                rs_error err;
                rs_error_clear(&err);
                rs_reader *r = rs_reader_open(path, RS_CODEC_AUTO, &err);
                cr_assert(r, "%s", err.msg);
                if (blocks[i])
                    cr_assert_eq(rs_reader_set_block_size(r, blocks[i]), 0);
                static unsigned char buf[65536];
                ssize_t k;
                while ((k = rs_reader_read(r, buf, caps[c], &err)) > 0)
                    ;
                rs_reader_close(r);
                cr_assert_eq(k, -1, "frame %zu (content size %u, %zu bytes): read whole with block %zu, reads of %zu",
                             b, bad[b].fcs, strlen(bad[b].data), blocks[i], caps[c]);
                cr_assert_eq(err.code, RS_EXIT_DATA);
                cr_assert(strstr(err.msg, "corrupt zstd data (") && strstr(err.msg, "in the frame starting at byte offset 0"),
                          "%s", err.msg);
            }
    }
    /* the command: the frame after a good one, named by its offset */
    unsigned char f[64];
    size_t n = raw_frame(f, 1000000, "");
    FILE *fp = fopen(path_join(test_dir, "empty.zst"), "wb");
    cr_assert(fp && fwrite(f, 1, n, fp) == n && fclose(fp) == 0);
    OK("printf 'a,b\\n1,2\\n' | zstd -q -c > good.zst && cat good.zst empty.zst > two.zst");
    char want[256];
    snprintf(want, sizeof want,
             "two.zst: corrupt zstd data (the frame header says 1000000 bytes of content, its blocks decode to 0) in "
             "the frame starting at byte offset %lld", size_of("good.zst"));
    fails_with(2, want, "\"$RS\" bucket --quiet --nodes 3 -o out two.zst");
    OK("test ! -e out");
}

Test(zstd, named_zst_but_not_zstd)
{
    OK("printf 'id,v\\n1,a\\n' > plain.csv.zst && cp plain.csv.zst X.ZSTD && : > empty.zst && printf '(\\265' > two.zst");
    fails_with(2,
               "plain.csv.zst: not zstd data (named .zst, but byte offset 0 holds 0x69 0x64 0x2c 0x76, not the zstd "
               "magic 28 b5 2f fd)",
               "\"$RS\" bucket --quiet --nodes 3 -o out plain.csv.zst");
    fails_with(2, "X.ZSTD: not zstd data (named .ZSTD, but byte offset 0 holds 0x69", "\"$RS\" stats --nodes 3 X.ZSTD");
    fails_with(2, "empty.zst: empty file (named .zst, but holds no zstd frame: end of file at byte offset 0)",
               "\"$RS\" bucket --quiet --nodes 3 -o out empty.zst");
    fails_with(2,
               "two.zst: not zstd data (named .zst, but byte offset 0 holds 0x28 0xb5 and then the file ends, not the "
               "zstd magic 28 b5 2f fd)",
               "\"$RS\" bucket --quiet --nodes 3 -o out two.zst");
    /* the other codec under the name: refused too, saying which it is */
    OK("printf 'id,v\\n1,a\\n' | zstd -q -c > z.csv.gz && printf 'id,v\\n1,a\\n' | gzip -c > g.csv.zst");
    fails_with(2,
               "z.csv.gz: not gzip data (named .gz, but byte offset 0 holds 0x28 0xb5, not the gzip magic 1f 8b: it "
               "is zstd data)",
               "\"$RS\" bucket --quiet --nodes 3 -o out z.csv.gz");
    fails_with(2,
               "g.csv.zst: not zstd data (named .zst, but byte offset 0 holds 0x1f 0x8b 0x08 0x00, not the zstd magic "
               "28 b5 2f fd: it is gzip data)",
               "\"$RS\" bucket --quiet --nodes 3 -o out g.csv.zst");
    OK("test ! -e out");
}

/* ------------------------------------------------------------- output */

/* The metadata frame's bytes (deflate.h, docs/format-data.md) and the zstd
 * frame after it: content size, checksum, the data. */
Test(zstd, metadata_frame_layout)
{
    rs_deflater *d = rs_compressor_new(RS_COMPRESS_ZSTD, 3, RS_CODEC_AUTO);
    cr_assert_not_null(d);
    const char *p[] = {"a,b\r\n1,2\r", "\n3,\"x\ry\"\n", ""};
    size_t l[] = {strlen(p[0]), strlen(p[1]), 0};
    rs_buf out = {0};
    rs_buf_append(&out, "xy", 2);
    uint32_t crc;
    cr_assert_eq(rs_deflater_member(d, (const void *const *)p, l, 3, 3, &out, &crc), 0);
    const unsigned char *m = (const unsigned char *)out.data + 2;
    size_t mlen = out.len - 2;
    static const unsigned char head[12] = {0x52, 0x2a, 0x4d, 0x18, 32, 0, 0, 0, 'R', 'S', 1, 1};
    cr_assert(!memcmp(m, head, sizeof head) && !m[12] && !m[13] && !m[14] && !m[15]);
    rs_member_info mi;
    cr_assert_eq(rs_zstd_meta_parse(m, mlen, &mi), 1);
    cr_assert(mi.size == mlen && mi.lines == 4 && mi.records == 3 && mi.flags == RS_MEMBER_BOUNDARY);
    const unsigned char *f = m + RS_ZSTD_META_LEN;
    size_t flen = mlen - RS_ZSTD_META_LEN;
    cr_assert_eq(ZSTD_findFrameCompressedSize(f, flen), flen, "one frame after the metadata");
    cr_assert_eq(ZSTD_getFrameContentSize(f, flen), l[0] + l[1], "the content size is in the frame");
    cr_assert(f[4] & 4, "the checksum flag is set");
    char text[64];
    cr_assert_eq(ZSTD_decompress(text, sizeof text, f, flen), l[0] + l[1]);
    cr_assert(!memcmp(text, p[0], l[0]) && !memcmp(text + l[0], p[1], l[1]));
    cr_assert_eq(crc, rs_crc32(rs_crc32(0, p[0], l[0]), p[1], l[1]));
    /* an empty piece still describes itself; other bytes are not metadata */
    out.len = 0;
    cr_assert_eq(rs_deflater_member(d, NULL, NULL, 0, 0, &out, &crc), 0);
    cr_assert_eq(rs_zstd_meta_parse(out.data, out.len, &mi), 1);
    cr_assert(mi.size == out.len && mi.lines == 0 && mi.records == 0);
    cr_assert_eq(ZSTD_getFrameContentSize((char *)out.data + RS_ZSTD_META_LEN, out.len - RS_ZSTD_META_LEN), 0);
    ((unsigned char *)out.data)[8] = 'X';
    cr_assert_eq(rs_zstd_meta_parse(out.data, out.len, &mi), 0);
    cr_assert_eq(rs_zstd_meta_parse(out.data, RS_ZSTD_META_LEN - 1, &mi), 0);
    rs_buf_free(&out);
    rs_deflater_free(d);
}

/* bucket --compress zstd: .csv.zst files that zstd -t and zstdcat read,
 * holding exactly the gzip run's rows, byte-identical for any -j and
 * every run, at levels 1 (the default), 19 and -5. */
Test(zstd, bucket_output_round_trips_and_is_deterministic)
{
    OK(GEN " --rows 30000 --seed 3 --newline-share 0.02 -o in.csv 2>/dev/null && "
       "\"$RS\" bucket --quiet --key bill_id --nodes 5 --memory 32M -o g in.csv");
    /* (level 19 takes 81 MiB of compressor state a thread: --memory says so) */
    const char *levels[] = {"--memory 32M", "--level 19 --memory 1G", "--level -5 --memory 32M"};
    for (int i = 0; i < 3; i++) {
        OK("rm -rf z1 z2 z3 && for j in 1 2 4; do \"$RS\" bucket --quiet -j $j --key bill_id --nodes 5 "
           "--compress zstd %s -o z$((j > 2 ? 3 : j)) in.csv || exit 9; done && "
           "diff -r -x manifest.json z1 z2 && diff -r -x manifest.json z1 z3 && "
           "for f in g/*.csv.gz; do b=$(basename $f .gz); zstd -t -q z1/$b.zst && zcat $f > x && "
           "zstdcat z1/$b.zst | cmp - x || exit 8; done && test $(ls z1 | grep -c '\\.csv\\.zst$') = 5",
           levels[i]);
        assert_verify(path_join(test_dir, "z1"));
    }
    OK("grep -q '\"compress\": \"zstd\"' z1/manifest.json && grep -q '\"level\": -5' z1/manifest.json && "
       "grep -q '\"compress\": \"gzip\"' g/manifest.json");
    /* zstd is smaller than gzip at the default levels */
    OK("rm -rf z1 && \"$RS\" bucket --quiet --key bill_id --nodes 5 --memory 32M --compress zstd -o z1 in.csv && "
       "test $(cat z1/*.zst | wc -c) -lt $(cat g/*.gz | wc -c) && grep -q '\"level\": 1,' z1/manifest.json");
}

/* Python's zstandard (Debian's python3-zstandard, for /usr/bin/python3, as
 * tools/deps.sh installs it) reads a multi-frame output whole through its
 * streaming readers, which skip the metadata frames; its one-shot
 * decompress() and read_to_iter() stop after the first frame (their
 * documented limit: read_across_frames "is not yet implemented"), and the
 * first frame of a ringshard file is a metadata frame, so they return
 * nothing: docs/formats.md says which calls to use. */
Test(zstd, python_zstandard_reads_the_outputs_whole)
{
    OK(GEN " --rows 40000 --seed 5 -o in.csv 2>/dev/null && "
       "\"$RS\" bucket --quiet --key bill_id --nodes 2 --memory 32M --compress zstd -o z in.csv && "
       "zstdcat z/0.csv.zst > want && test $(zstd -l z/0.csv.zst | awk 'NR == 2 { print $2 }') -ge 6");
    OK("/usr/bin/python3 -c '\n"
       "import io, sys, zstandard\n"
       "raw = open(sys.argv[1], \"rb\").read(); want = open(sys.argv[2], \"rb\").read()\n"
       "assert len(want) > 1000000, len(want)\n"
       "D = zstandard.ZstdDecompressor\n"
       "got = D().stream_reader(io.BytesIO(raw), read_across_frames=True).read()\n"
       "assert got == want, (\"stream_reader\", len(got))\n"
       "assert zstandard.open(io.BytesIO(raw), \"rb\").read() == want, \"open\"\n"
       "out = io.BytesIO(); D().copy_stream(io.BytesIO(raw), out)\n"
       "assert out.getvalue() == want, \"copy_stream\"\n"
       "assert D().decompress(raw) == b\"\", \"decompress() now reads more: update docs/formats.md\"\n"
       "' z/0.csv.zst want");
}

Test(zstd, level_checked_against_the_codec)
{
    fails_with(64, "--level: 0 is not a zstd level (-131072 to -1, or 1 to 22)",
               "\"$RS\" bucket --quiet --nodes 3 --level 0 --compress zstd -o out " Z "data.csv");
    fails_with(64, "--level: 12 is out of range [1, 9] (gzip levels; zstd's with --compress zstd)",
               "\"$RS\" bucket --quiet --nodes 3 --level 12 -o out " Z "data.csv");
    fails_with(64, "--level: -3 is out of range [1, 9]",
               "\"$RS\" plan --nodes 3 --add 1 --level -3 --emit out " Z "data.csv");
    fails_with(64, "--level: '23' is not a level (gzip: 1 to 9; zstd: -131072 to 22, not 0)",
               "\"$RS\" dedup --quiet --nodes 3 --compress zstd --level 23 -o out " Z "data.csv");
    fails_with(64, "--compress: expected gzip, zstd or none",
               "\"$RS\" bucket --quiet --nodes 3 --compress xz -o out " Z "data.csv");
    /* either order of the two options */
    OK("\"$RS\" bucket --quiet --nodes 3 -j 1 --memory 2G --level 22 --compress zstd -o a " Z "data.csv && "
       "\"$RS\" bucket --quiet --nodes 3 --compress zstd --level -1 -o b " Z "data.csv && "
       "zstdcat b/*.zst | sort > b.sorted && zstdcat a/*.zst | sort | cmp - b.sorted && "
       "test $(wc -l < b.sorted) = 2003");
}

/* ------------------------------------------------------------- units */

/* A ringshard .zst of 120,000 rows (several frames at --memory 32M). */
static void make_own_zst(void)
{
    OK(GEN " --rows 120000 --seed 11 --newline-share 0.01 -o in.csv 2>/dev/null && "
       "\"$RS\" bucket --quiet --key 1 --nodes 1 --memory 32M --compress zstd -o w in.csv && mkdir a && "
       "mv w/0.csv.zst a/data.zst && zstd -q -3 -c in.csv > a/other.zst && gzip -1 -c in.csv > a/data.gz");
}

Test(zstd, units_of_own_files_and_identical_reads)
{
    make_own_zst();
    rs_error err = {0};
    rs_input_unit *u;
    size_t n;
    uint64_t size;
    char *own = strdup(path_join(test_dir, "a/data.zst"));
    cr_assert_eq(rs_input_units(own, 1, &u, &n, &size, &err), 0, "%s", err.msg);
    cr_assert_gt(n, 2, "one unit per frame pair: %zu", n);
    uint64_t end = 0, lines = 0, records = 0;
    for (size_t k = 0; k < n; k++) {
        cr_assert(u[k].counted && u[k].zstd && u[k].offset == end && u[k].line_base == lines &&
                  u[k].record_base == records);
        end += u[k].size;
        lines += u[k].lines;
        records += u[k].records;
    }
    cr_assert(end == size && records == 120001, "%llu of %llu bytes, %llu records", (unsigned long long)end,
              (unsigned long long)size, (unsigned long long)records);
    free(u);
    free(own);
    /* zstd from the CLI: one unit, the whole file, not counted */
    cr_assert_eq(rs_input_units(path_join(test_dir, "a/other.zst"), 1, &u, &n, &size, &err), 0, "%s", err.msg);
    cr_assert(n == 1 && !u[0].counted && u[0].size == size);
    free(u);
    /* reading in units (every frame, ~1 MB, one) gives the rows of the
     * gzip file read whole, byte-identical for any -j */
    OK("cd a && \"$RS\" bucket --quiet --key bill_id --nodes 7 --memory 64M --compress none -o ref data.gz");
    const char *units[] = {"1", "1000000", ""};
    for (int k = 0; k < 3; k++)
        OK("cd a && for j in 1 2; do RINGSHARD_UNIT_BYTES=%s \"$RS\" bucket --quiet -j $j --key bill_id --nodes 7 "
           "--memory 64M --compress zstd -o u%d_$j data.zst || exit 9; done && diff -r -x manifest.json u%d_1 u%d_2 && "
           "for f in ref/*.csv; do zstdcat u%d_1/$(basename $f).zst | cmp - $f || exit 8; done",
           units[k], k, k, k, k);
    OK("cd a && ! diff -r -q -x manifest.json u0_1 u2_1 > /dev/null");
}

/* A metadata frame that lies about its records is caught with the unit's
 * byte range (exit 2); one whose size breaks the chain makes the file one
 * unit, read as plain zstd. */
Test(zstd, lying_metadata_frames)
{
    make_own_zst();
    OK("python3 -c '\n"
       "import struct\n"
       "d = bytearray(open(\"a/data.zst\", \"rb\").read()); off = 0; k = 0\n"
       "while off < len(d):\n"
       "    size, = struct.unpack(\"<Q\", d[off + 16:off + 24])\n"
       "    if k == 3: first = off\n"
       "    off += size; k += 1\n"
       "lie = bytearray(d); r, = struct.unpack(\"<Q\", lie[first + 32:first + 40])\n"
       "lie[first + 32:first + 40] = struct.pack(\"<Q\", r + 1); open(\"a/records.zst\", \"wb\").write(lie)\n"
       "lie = bytearray(d); s, = struct.unpack(\"<Q\", lie[first + 16:first + 24])\n"
       "lie[first + 16:first + 24] = struct.pack(\"<Q\", s - 1); open(\"a/size.zst\", \"wb\").write(lie)\n"
       "print(first)' > first");
    cmd_result f = sh_in_test_dir("cat first");
    long long first = atoll(f.out);
    cr_assert_gt(first, 0);
    cmd_result_free(&f);
    cmd_result r = sh_in_test_dir("cd a && RINGSHARD_UNIT_BYTES=1 \"$RS\" bucket --quiet --key bill_id --memory 32M "
                                  "-o out records.zst");
    cr_assert_eq(r.rc, 2, "%s", r.err);
    char want[160];
    snprintf(want, sizeof want, "records.zst: the zstd frames at byte offsets %lld to ", first);
    cr_assert(strstr(r.err, want) && strstr(r.err, "in their RS metadata frames but hold") &&
                  strstr(r.err, "(corrupt or altered metadata frames)"),
              "want \"%s\": %s", want, r.err);
    cmd_result_free(&r);
    OK("cd a && RINGSHARD_UNIT_BYTES=1 \"$RS\" bucket --quiet --key bill_id --memory 32M -o s size.zst && "
       "\"$RS\" bucket --quiet --key bill_id --memory 32M -o g data.gz && diff -r -x manifest.json s g");
}

/* The last unit's range must still end the file (a file appended to
 * after its frames were listed fails, exit 1). */
Test(zstd, data_appended_after_listing_fails)
{
    OK("printf 'id,v\\n1,a\\n2,b\\n' > t.csv && \"$RS\" bucket --quiet --nodes 1 --compress zstd -o t t.csv");
    rs_error err = {0};
    rs_input_unit *u;
    size_t n;
    uint64_t size;
    char *path = strdup(path_join(test_dir, "t/0.csv.zst"));
    static char buf[4096];
    cr_assert_eq(rs_input_units(path, 1, &u, &n, &size, &err), 0, "%s", err.msg);
    cr_assert(n >= 2 && u[n - 1].counted && u[n - 1].zstd);
    OK("printf 'x' >> t/0.csv.zst");
    rs_reader *r = rs_reader_open_range(path, RS_CODEC_AUTO, u[n - 1].offset, u[n - 1].size, &err);
    cr_assert_not_null(r);
    rs_reader_expect_file_end(r);
    ssize_t k;
    while ((k = rs_reader_read(r, buf, sizeof buf, &err)) > 0)
        ;
    cr_assert_eq(k, -1);
    cr_assert(err.code == RS_EXIT_IO && strstr(err.msg, "0.csv.zst: the file changed while it was read: its zstd "
                                                        "frames ended at byte offset ") && strstr(err.msg, "now holds"),
              "%s", err.msg);
    rs_reader_close(r);
    free(u);
    free(path);
}

/* ---------------------------------------------------------- commands */

/* dedup, plan --emit, plan --from-buckets, verify and stats on .csv.zst
 * directories give what they give on .csv.gz ones. */
Test(zstd, every_command_on_zst_directories)
{
    OK(GEN " --rows 20000 --seed 5 --dup-share 0.1 -o in.csv 2>/dev/null");
    OK("\"$RS\" bucket --quiet --key bill_id --nodes 5 -o g in.csv && "
       "\"$RS\" bucket --quiet --key bill_id --nodes 5 --compress zstd -o z in.csv && "
       "\"$RS\" stats g > sg && \"$RS\" stats z > sz && "
       "sed -n '/^nodes/,$p' sg > sg2 && sed -n '/^nodes/,$p' sz > sz2 && cmp sg2 sz2");
    assert_verify(path_join(test_dir, "z"));
    /* dedup --buckets of a zstd directory, to gzip and to zstd */
    OK("\"$RS\" dedup --quiet --buckets g -o dg && \"$RS\" dedup --quiet --buckets z -o dgz && "
       "\"$RS\" dedup --quiet --buckets z --compress zstd -o dz && diff -r -x manifest.json dg dgz && "
       "for f in dg/*.csv.gz; do b=$(basename $f .gz); zcat $f > x && zstdcat dz/$b.zst | cmp - x || exit 8; done && "
       "\"$RS\" dedup --quiet --key bill_id --nodes 5 --temp-compress zstd --compress zstd -o dt in.csv && "
       "diff -r -x manifest.json dz dt");
    assert_verify(path_join(test_dir, "dz"));
    /* plan --from-buckets, and --emit as zstd */
    OK("\"$RS\" plan --from-buckets g --add 2 > pg && \"$RS\" plan --from-buckets z --add 2 > pz && "
       "grep -v ' s to ' pg > pg2 && grep -v ' s to ' pz > pz2 && cmp pg2 pz2 && grep -q moved pz2 && "
       "\"$RS\" plan --quiet --from-buckets z --add 2 --emit eg > /dev/null && "
       "\"$RS\" plan --quiet --from-buckets z --add 2 --compress zstd --emit ez > /dev/null && "
       "ls ez | grep -q '__.*\\.csv\\.zst$' && for f in eg/*.csv.gz; do b=$(basename $f .gz); zcat $f > x && "
       "zstdcat ez/$b.zst | cmp - x || exit 8; done && grep -q '\"compress\": \"zstd\"' ez/manifest.json");
    assert_verify(path_join(test_dir, "ez"));
}

#else /* !RS_HAVE_ZSTD */

/* A build without libzstd refuses zstd, output or input, with exit 64. */
Test(zstd, build_without_zstd_refuses_it)
{
    const char *no = "this build of ringshard has no zstd support (rebuild it with libzstd: tools/deps.sh installs "
                     "libzstd-dev)";
    char want[256];
    snprintf(want, sizeof want, "--compress zstd: %s", no);
    fails_with(64, want, "\"$RS\" bucket --quiet --nodes 3 --compress zstd -o out " Z "data.csv");
    fails_with(64, want, "\"$RS\" plan --nodes 3 --add 1 --compress zstd --emit out " Z "data.csv");
    fails_with(64, want, "\"$RS\" dedup --quiet --nodes 3 --compress zstd -o out " Z "data.csv");
    snprintf(want, sizeof want, "--temp-compress zstd: %s", no);
    fails_with(64, want, "\"$RS\" dedup --quiet --nodes 3 --temp-compress zstd -o out " Z "data.csv");
    snprintf(want, sizeof want, "l1.csv.zst: zstd data (magic at byte offset 0), but %s", no);
    fails_with(64, want, "\"$RS\" bucket --quiet --nodes 3 -o out " Z "l1.csv.zst");
    fails_with(64, "skippable.csv.zst: zstd data (magic at byte offset 0), but",
               "\"$RS\" stats --nodes 3 " Z "skippable.csv.zst");
    OK("test ! -e out && cp " Z "l1.csv.zst l1.csv");
    fails_with(64, "l1.csv: zstd data (magic at byte offset 0), but", "\"$RS\" bucket --quiet --nodes 3 -o out l1.csv");
    cr_assert_eq(rs_have_zstd(), 0);
    cr_assert_null(rs_compressor_new(RS_COMPRESS_ZSTD, 1, RS_CODEC_AUTO));
    /* gzip is untouched */
    OK("\"$RS\" bucket --quiet --nodes 3 -o g " Z "data.csv && test $(zcat g/*.csv.gz | grep -vc '^id,') = 2000");
}

#endif
