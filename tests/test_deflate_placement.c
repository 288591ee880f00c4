/* A member's bytes must not depend on where the compressor's state lies in
 * memory. ISA-L's level 1 and 2 body (2.30 to 2.32.1) hashes the third byte
 * of each stream from the isal_zstream's address (bits 16 and up), so the
 * same input gave different, valid members now and then depending on the
 * stream's placement; src/io/deflate.c works around it (isal_head). Here
 * the stream is placed at many addresses (rs_deflater_new_at: 64 KiB steps
 * through one allocation, and small offsets) and every member must come out
 * byte-identical to the first placement's, and inflate back (zlib) to its
 * input. Short members make the bug likely to show: ISA-L shrinks the hash
 * table to the input (256 slots for 128-255 bytes), so the wrong slot lands
 * on one that matters for about one placement in 100. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "rs_config.h"
#include "io/io_internal.h"

#define MEMBERS 400
#define STEPS 64         /* placements 64 KiB apart */
#define STEP ((size_t)64 << 10)
#define DATA (256 << 10)

static const size_t small_off[] = {8, 16, 24, 4096 + 40, 32768 + 8, STEP - 8};
#define PLACEMENTS (STEPS + sizeof small_off / sizeof small_off[0])

static char data[DATA];
static size_t off[MEMBERS], len[MEMBERS];

/* Repetitive CSV, as bill rows are: a member's first bytes recur in the
 * rows after, so where ISA-L files its third byte changes the matches. */
static void make_data(void)
{
    static const char *words[] = {"alipay", "wechat", "card", "refund", "CNY", "USD"};
    uint64_t x = 88172645463325252ULL;
    size_t n = 0;
    while (n < DATA - 80) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        n += (size_t)snprintf(data + n, 80, "2024-01-%02u,%s,%s,%u.%02u\n", (unsigned)(x % 28 + 1),
                              words[(x >> 8) % 4], words[4 + (x >> 16) % 2], (unsigned)(x >> 24) % 1000,
                              (unsigned)(x >> 40) % 100);
    }
    for (int i = 0; i < MEMBERS; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        /* mostly 17-400 bytes; a few at the workaround's edges and larger */
        static const size_t edge[] = {0, 1, 15, 16, 17, 18, 30000};
        len[i] = i < 7 ? edge[i] : 17 + (x >> 32) % 384;
        off[i] = x % (DATA - 30000);
    }
}

/* The member at d for piece i: header, then deflate data and trailer. */
static void compress_one(rs_deflater *d, int i, rs_buf *out)
{
    const void *p[1] = {data + off[i]};
    size_t l[1] = {len[i]};
    uint32_t crc;
    out->len = 0;
    cr_assert_eq(rs_deflater_member(d, p, l, 1, 0, out, &crc), 0);
    cr_assert_eq(crc, (uint32_t)crc32(0, (const Bytef *)data + off[i], (uInt)len[i]));
}

/* The member inflates (zlib, as gzip) to exactly the piece, ending exactly. */
static void check_inflates(const rs_buf *m, const char *want, size_t n)
{
    z_stream z = {0};
    char *got = malloc(n + 1);
    cr_assert(got);
    cr_assert_eq(inflateInit2(&z, 15 + 16), Z_OK);
    z.next_in = (Bytef *)m->data;
    z.avail_in = (uInt)m->len;
    z.next_out = (Bytef *)got;
    z.avail_out = (uInt)n + 1;
    cr_assert_eq(inflate(&z, Z_FINISH), Z_STREAM_END, "member does not inflate: %s", z.msg ? z.msg : "?");
    cr_assert_eq(z.avail_in, 0, "bytes after the member");
    cr_assert_eq(z.total_out, n);
    cr_assert(n == 0 || memcmp(got, want, n) == 0);
    inflateEnd(&z);
    free(got);
}

static void check_level(int level)
{
    size_t ssz = rs_deflater_stream_size();
    cr_assert_gt(ssz, 0);
    /* 8-byte offsets from a 64 KiB-aligned base: placement k is base + k x 64 KiB */
    char *arena = aligned_alloc(STEP, (STEPS * STEP + ssz + STEP - 1) / STEP * STEP);  /* C11: a multiple */
    cr_assert(arena);
    static rs_buf ref[MEMBERS];
    rs_buf out = {0};
    int diffs = 0, first_diff = -1;
    size_t first_at = 0;
    for (size_t k = 0; k < PLACEMENTS; k++) {
        size_t at = k < STEPS ? k * STEP : small_off[k - STEPS];
        rs_deflater *d = rs_deflater_new_at(level, RS_CODEC_AUTO, arena + at);
        cr_assert(d);
        for (int i = 0; i < MEMBERS; i++) {
            rs_buf *m = k == 0 ? &ref[i] : &out;
            compress_one(d, i, m);
            if (k == 0) {
                check_inflates(m, data + off[i], len[i]);
            } else if (m->len != ref[i].len || memcmp(m->data, ref[i].data, m->len) != 0) {
                if (diffs++ == 0)
                    first_diff = i, first_at = at;
            }
        }
        rs_deflater_free(d);
    }
    cr_assert_eq(diffs, 0,
                 "ISA-L level %d: %d of %zu members differ with the stream elsewhere in memory "
                 "(first: member %d, %zu bytes, stream at offset %zu)",
                 level, diffs, (PLACEMENTS - 1) * MEMBERS, first_diff, len[first_diff < 0 ? 0 : first_diff],
                 first_at);
    for (int i = 0; i < MEMBERS; i++)
        rs_buf_free(&ref[i]);
    rs_buf_free(&out);
    free(arena);
}

Test(deflate_placement, level_1, .init = make_data, .timeout = 300)
{
#if !RS_HAVE_ISAL
    cr_skip_test("built without ISA-L: zlib's state has no address in it to test");
#endif
    check_level(1);
}

Test(deflate_placement, level_2, .init = make_data, .timeout = 300)
{
#if !RS_HAVE_ISAL
    cr_skip_test("built without ISA-L: zlib's state has no address in it to test");
#endif
    check_level(2);
}

Test(deflate_placement, levels_0_and_3, .init = make_data, .timeout = 300)
{
#if !RS_HAVE_ISAL
    cr_skip_test("built without ISA-L: zlib's state has no address in it to test");
#endif
    check_level(0);
    check_level(3);
}

/* The first 16 bytes go in on their own (deflate.c, isal_head): gathered
 * across pieces of any length, empty ones included, the member is still
 * exactly the pieces' concatenation. */
Test(deflate_placement, head_across_pieces, .init = make_data)
{
    static const size_t cuts[][4] = {{1, 0, 2, 300}, {15, 1, 0, 1}, {16, 0, 0, 1}, {0, 8, 8, 1},
                                     {3, 5, 7, 40}, {17, 0, 0, 0}, {0, 0, 0, 17}};
    for (int lvl = 1; lvl <= 3; lvl++) {
        rs_deflater *d = rs_deflater_new(lvl, RS_CODEC_AUTO);
        cr_assert(d);
        for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
            const void *p[4];
            size_t total = 0;
            for (int k = 0; k < 4; k++) {
                p[k] = data + 100 + total;
                total += cuts[c][k];
            }
            rs_buf m = {0};
            uint32_t crc;
            cr_assert_eq(rs_deflater_member(d, p, cuts[c], 4, 0, &m, &crc), 0);
            cr_assert_eq(crc, (uint32_t)crc32(0, (const Bytef *)data + 100, (uInt)total));
            check_inflates(&m, data + 100, total);
            rs_buf_free(&m);
        }
        rs_deflater_free(d);
    }
}
