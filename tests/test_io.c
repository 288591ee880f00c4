/* test_io.c - the gzip input layer (reader.h) and the gzip member writer (deflate.h).
 *
 * gzip(1), pigz(1) and zlib are the independent references. Every test that
 * names "auto" runs ISA-L when the build has it (RS_HAVE_ISAL == 1) and zlib
 * otherwise; the "zlib" variants always run zlib. Nothing is skipped. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "rs_config.h"
#include "ringshard/deflate.h"
#include "ringshard/filelist.h"
#include "ringshard/reader.h"
#include "io/io_internal.h"
#include "support.h"

static const rs_codec_choice CODECS[] = {RS_CODEC_AUTO, RS_CODEC_ZLIB};

/* ---- helpers ----------------------------------------------------------- */

static uint64_t rng_state;
static uint32_t rnd(void)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(rng_state >> 33);
}

/* CSV-like text of exactly len bytes (deterministic for a seed). */
static char *make_csv(size_t len, uint64_t seed)
{
    rng_state = seed;
    char *p = malloc(len + 64);
    cr_assert_not_null(p);
    size_t n = 0;
    while (n < len) {
        n += (size_t)sprintf(p + n, "%08u,customer_%u,%u.%02u,2024-%02u-%02u,\"note %u, x\",%s\n",
                             rnd() % 100000000u, rnd() % 5000u, rnd() % 1000u, rnd() % 100u,
                             1 + rnd() % 12u, 1 + rnd() % 28u, rnd() % 77u,
                             (rnd() & 1) ? "active" : "closed");
    }
    return p;  /* only the first len bytes count */
}

static char *make_random(size_t len, uint64_t seed)
{
    rng_state = seed;
    char *p = malloc(len ? len : 1);
    cr_assert_not_null(p);
    for (size_t i = 0; i < len; i++)
        p[i] = (char)(rnd() >> 7);
    return p;
}

static void write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot create %s", path);
    if (len)
        cr_assert_eq(fwrite(data, 1, len, f), len);
    cr_assert_eq(fclose(f), 0);
}

static void append_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "ab");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(data, 1, len, f), len);
    cr_assert_eq(fclose(f), 0);
}

static unsigned char *read_raw(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *p = malloc((size_t)n + 1);
    cr_assert_eq(fread(p, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return p;
}

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *cmd;
    cr_assert(vasprintf(&cmd, fmt, ap) > 0);
    va_end(ap);
    char *err = NULL;
    int st = run(cmd, NULL, &err);
    cr_assert_eq(st, 0, "command failed (%d): %s\n%s", st, cmd, err);
    free(err);
    free(cmd);
}

/* Removes a test directory and frees its path. */
static void rm_dir(char *dir)
{
    cr_assert_eq(remove_tree(dir), 0);
    free(dir);
}

typedef struct {
    char *data;
    size_t len;
    int rc;          /* 0 or -1 */
    rs_error err;
    uint64_t consumed;
    uint64_t size;
    int is_gzip;
} slurp_result;

/* Reads a whole input with rs_reader (block 0 = default), cap bytes a call. */
static slurp_result reader_all(const char *path, rs_codec_choice codec, size_t cap, size_t block)
{
    slurp_result s = {0};
    rs_error_clear(&s.err);
    rs_reader *r = rs_reader_open(path, codec, &s.err);
    cr_assert_not_null(r, "open %s: %s", path, s.err.msg);
    if (block)
        cr_assert_eq(rs_reader_set_block_size(r, block), 0);
    size_t bufcap = 1 << 16;
    s.data = malloc(bufcap);
    char *tmp = malloc(cap);
    for (;;) {
        ssize_t n = rs_reader_read(r, tmp, cap, &s.err);
        if (n < 0) {
            s.rc = -1;
            cr_assert_neq(s.err.code, 0);
            /* errors are sticky */
            rs_error again;
            rs_error_clear(&again);
            cr_assert_eq(rs_reader_read(r, tmp, cap, &again), -1);
            cr_assert_eq(again.code, s.err.code);
            cr_assert_str_eq(again.msg, s.err.msg);
            break;
        }
        if (n == 0) {
            /* the end stays the end */
            cr_assert_eq(rs_reader_read(r, tmp, cap, &s.err), 0);
            break;
        }
        cr_assert_leq((size_t)n, cap);
        while (s.len + (size_t)n > bufcap) {
            bufcap *= 2;
            s.data = realloc(s.data, bufcap);
        }
        memcpy(s.data + s.len, tmp, (size_t)n);
        s.len += (size_t)n;
    }
    s.consumed = rs_reader_consumed(r);
    s.size = rs_reader_size(r);
    s.is_gzip = rs_reader_is_gzip(r);
    rs_reader_close(r);
    free(tmp);
    return s;
}

static void expect_bytes(const slurp_result *s, const void *want, size_t len, const char *what)
{
    cr_assert_eq(s->rc, 0, "%s: unexpected error: %s", what, s->err.msg);
    cr_assert_eq(s->len, len, "%s: got %zu bytes, want %zu", what, s->len, len);
    cr_assert(len == 0 || memcmp(s->data, want, len) == 0, "%s: bytes differ", what);
}

static void expect_data_error(const slurp_result *s, const char *path, const char *what,
                              const char *must_contain)
{
    cr_assert_eq(s->rc, -1, "%s: expected an error, read %zu bytes", what, s->len);
    cr_assert_eq(s->err.code, RS_EXIT_DATA, "%s: code %d (%s)", what, s->err.code, s->err.msg);
    cr_assert_not_null(strstr(s->err.msg, path), "%s: message does not name the file: %s",
                       what, s->err.msg);
    cr_assert_not_null(strstr(s->err.msg, "offset"), "%s: message has no offset: %s", what,
                       s->err.msg);
    if (must_contain)
        cr_assert_not_null(strstr(s->err.msg, must_contain), "%s: message lacks \"%s\": %s",
                           what, must_contain, s->err.msg);
}

/* Compresses pieces as one member with zlib-independent checks:
 * returns the member's bytes appended to out. */
static size_t one_member(rs_deflater *d, const void *const *pieces, const size_t *lens,
                         size_t n, rs_buf *out)
{
    size_t before = out->len;
    uint32_t crc = 0xdeadbeef;
    cr_assert_eq(rs_deflater_member(d, pieces, lens, n, 0, out, &crc), 0);
    uint32_t want = (uint32_t)crc32(0, NULL, 0);
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (lens[i])
            want = (uint32_t)crc32(want, pieces[i], (uInt)lens[i]);
        total += lens[i];
    }
    cr_assert_eq(crc, want, "crc_out %08x, want %08x", crc, want);
    size_t mlen = out->len - before;
    cr_assert_geq(mlen, 18u);
    const unsigned char *m = (const unsigned char *)out->data + before;
    cr_assert(m[0] == 0x1f && m[1] == 0x8b && m[2] == 8, "not a gzip header");
    /* The member alone inflates (zlib) to exactly the data and ends exactly at its end. */
    z_stream z = {0};
    cr_assert_eq(inflateInit2(&z, 15 + 16), Z_OK);
    char *buf = malloc(total + 1);
    z.next_in = (Bytef *)m;
    z.avail_in = (uInt)mlen;
    z.next_out = (Bytef *)buf;
    z.avail_out = (uInt)total + 1;
    cr_assert_eq(inflate(&z, Z_FINISH), Z_STREAM_END, "member does not inflate: %s",
                 z.msg ? z.msg : "");
    cr_assert_eq(z.avail_in, 0u, "bytes left after the member");
    cr_assert_eq(z.total_out, total);
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        cr_assert(lens[i] == 0 || memcmp(buf + off, pieces[i], lens[i]) == 0);
        off += lens[i];
    }
    inflateEnd(&z);
    free(buf);
    return mlen;
}

/* ---- CRC --------------------------------------------------------------- */

Test(crc, matches_zlib_on_random_data)
{
    char *data = make_random(1 << 20, 42);
    static const size_t lens[] = {0, 1, 2, 3, 7, 15, 16, 31, 63, 64, 100, 255, 256, 1000,
                                  4095, 4096, 65537, 1 << 20};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        for (size_t off = 0; off < 4; off++) {
            size_t n = lens[i] - (lens[i] == (1u << 20) ? off : 0);
            uint32_t want = (uint32_t)crc32(0, (const Bytef *)data + off, (uInt)n);
            cr_assert_eq(rs_crc32(0, data + off, n), want, "len %zu off %zu", n, off);
            /* continuing from a non-zero crc */
            uint32_t w2 = (uint32_t)crc32(0x12345678u, (const Bytef *)data + off, (uInt)n);
            cr_assert_eq(rs_crc32(0x12345678u, data + off, n), w2);
        }
    }
    /* chaining */
    uint32_t c = 0;
    for (size_t off = 0; off < (1u << 20); off += 12345) {
        size_t n = (1u << 20) - off < 12345 ? (1u << 20) - off : 12345;
        c = rs_crc32(c, data + off, n);
    }
    cr_assert_eq(c, (uint32_t)crc32(0, (const Bytef *)data, 1u << 20));
    cr_assert_eq(rs_crc32(0, "123456789", 9), 0xcbf43926u);  /* the check value */
    free(data);
}

Test(crc, combine_property)
{
    char *data = make_random(300000, 7);
    static const size_t splits[] = {0, 1, 17, 4096, 150000, 299999, 300000};
    uint32_t whole = rs_crc32(0, data, 300000);
    for (size_t i = 0; i < sizeof splits / sizeof splits[0]; i++) {
        size_t k = splits[i];
        uint32_t a = rs_crc32(0, data, k), b = rs_crc32(0, data + k, 300000 - k);
        cr_assert_eq(rs_crc32_combine(a, b, 300000 - k), whole, "split %zu", k);
        cr_assert_eq(rs_crc32_combine(a, b, 300000 - k),
                     (uint32_t)crc32_combine(a, b, (z_off_t)(300000 - k)));
    }
    /* three-way, and a length beyond 4 GiB against zlib */
    uint32_t a = rs_crc32(0, data, 1000), b = rs_crc32(0, data + 1000, 2000),
             c = rs_crc32(0, data + 3000, 297000);
    cr_assert_eq(rs_crc32_combine(rs_crc32_combine(a, b, 2000), c, 297000), whole);
    uint64_t big = (uint64_t)5 << 30;
    cr_assert_eq(rs_crc32_combine(a, b, big), (uint32_t)crc32_combine(a, b, (z_off_t)big));
    free(data);
}

Test(codec, names)
{
    cr_assert_str_eq(rs_codec_name(RS_CODEC_ZLIB), "zlib");
    cr_assert_str_eq(rs_codec_name(RS_CODEC_AUTO), RS_HAVE_ISAL ? "isal" : "zlib");
}

/* ---- deflater ---------------------------------------------------------- */

/* Several members (empty member, empty pieces, many pieces, one large piece,
 * incompressible data) with codec and level; the file must be what gzip reads. */
static void roundtrip(rs_codec_choice codec, int level)
{
    char *dir = make_tmpdir();
    char *gz = path_dup(dir, "out.gz"), *raw = path_dup(dir, "want.csv");
    char *csv = make_csv(3u << 20, 1000 + (uint64_t)level);
    char *bin = make_random(200000, 99);
    rs_deflater *d = rs_deflater_new(level, codec);
    cr_assert_not_null(d);
    rs_buf out = {0};
    FILE *want = fopen(raw, "wb");

#define MEMBER(...)                                                                  \
    do {                                                                             \
        const struct {                                                               \
            const void *p;                                                           \
            size_t n;                                                                \
        } ps_[] = {__VA_ARGS__};                                                     \
        size_t np_ = sizeof ps_ / sizeof ps_[0];                                     \
        const void *pp_[16];                                                         \
        size_t ln_[16];                                                              \
        for (size_t i_ = 0; i_ < np_; i_++) {                                        \
            pp_[i_] = ps_[i_].p;                                                     \
            ln_[i_] = ps_[i_].n;                                                     \
            if (ps_[i_].n)                                                           \
                fwrite(ps_[i_].p, 1, ps_[i_].n, want);                               \
        }                                                                            \
        one_member(d, pp_, ln_, np_, &out);                                          \
    } while (0)

    MEMBER({csv, 1000});
    MEMBER({"", 0});                                    /* a 0-length member */
    MEMBER({csv + 1000, 0}, {csv + 1000, 5}, {"", 0});  /* empty pieces around */
    MEMBER({csv + 2000, 70000}, {csv + 72000, 1}, {csv + 72001, 65535}, {bin, 200000},
           {csv + 140000, 0}, {csv + 140000, 333333});
    MEMBER({csv, 3u << 20});                            /* one large piece */
    MEMBER({bin, 1});
    MEMBER({bin, 200000});                              /* incompressible */
    /* a member with no pieces at all */
    size_t before = out.len;
    uint32_t crc = 1;
    cr_assert_eq(rs_deflater_member(d, NULL, NULL, 0, 0, &out, &crc), 0);
    cr_assert_eq(crc, 0u);
    cr_assert_gt(out.len, before);
    MEMBER({csv + 5, 100}, {csv + 7, 100}, {csv + 9, 100});
#undef MEMBER
    fclose(want);
    write_file(gz, out.data, out.len);
    sh("gzip -t '%s'", gz);
    sh("gzip -dc '%s' | cmp - '%s'", gz, raw);
    sh("pigz -dc '%s' | cmp - '%s'", gz, raw);
    /* and our reader, both codecs */
    size_t wl;
    unsigned char *w = read_raw(raw, &wl);
    for (int c = 0; c < 2; c++) {
        slurp_result s = reader_all(gz, CODECS[c], 1 << 20, 0);
        expect_bytes(&s, w, wl, "reader of deflater output");
        free(s.data);
    }
    free(w);
    rs_buf_free(&out);
    rs_deflater_free(d);
    free(csv);
    free(bin);
    free(gz);
    free(raw);
    rm_dir(dir);
}

Test(deflate, roundtrip_auto_level1) { roundtrip(RS_CODEC_AUTO, 1); }
Test(deflate, roundtrip_auto_level0) { roundtrip(RS_CODEC_AUTO, 0); }
Test(deflate, roundtrip_auto_level2) { roundtrip(RS_CODEC_AUTO, 2); }
Test(deflate, roundtrip_auto_level3) { roundtrip(RS_CODEC_AUTO, 3); }
Test(deflate, roundtrip_auto_level6) { roundtrip(RS_CODEC_AUTO, 6); }
Test(deflate, roundtrip_auto_level9) { roundtrip(RS_CODEC_AUTO, 9); }
Test(deflate, roundtrip_zlib_level0) { roundtrip(RS_CODEC_ZLIB, 0); }
Test(deflate, roundtrip_zlib_level1) { roundtrip(RS_CODEC_ZLIB, 1); }
Test(deflate, roundtrip_zlib_level6) { roundtrip(RS_CODEC_ZLIB, 6); }
Test(deflate, roundtrip_zlib_level9) { roundtrip(RS_CODEC_ZLIB, 9); }

Test(deflate, compresses_and_reuses_buffers)
{
    char *csv = make_csv(1u << 20, 5);
    for (int c = 0; c < 2; c++) {
        rs_deflater *d = rs_deflater_new(1, CODECS[c]);
        cr_assert_not_null(d);
        rs_buf out = {0};
        const void *p[] = {csv};
        size_t n[] = {1u << 20};
        uint32_t crc;
        cr_assert_eq(rs_deflater_member(d, p, n, 1, 0, &out, &crc), 0);
        cr_assert_lt(out.len, (1u << 20) / 2, "%s level 1 ratio too poor: %zu",
                     rs_codec_name(CODECS[c]), out.len);
        size_t first = out.len;
        /* the same member again, into a buffer that is already large enough:
         * identical bytes (state fully reset), no growth */
        out.len = 0;
        char *cap_before = out.data;
        size_t capb = out.cap;
        cr_assert_eq(rs_deflater_member(d, p, n, 1, 0, &out, &crc), 0);
        cr_assert_eq(out.len, first);
        cr_assert_eq(out.data, cap_before);
        cr_assert_eq(out.cap, capb);
        rs_buf_free(&out);
        rs_deflater_free(d);
    }
    rs_deflater_free(NULL);
    free(csv);
}

/* ---- reader: good inputs ----------------------------------------------- */

struct inputs {
    char *dir;
    char *csv;       /* original data */
    size_t len;
    char *plain, *gz, *pigz, *multi, *empty, *emptygz, *plaingz, *small, *smallgz, *tiny;
    char *multi_want;  /* expected content of multi */
    size_t multi_len;
    char *small_data;
    size_t small_len;
};

static struct inputs make_inputs(size_t len)
{
    struct inputs in = {0};
    in.dir = make_tmpdir();
    in.len = len;
    in.csv = make_csv(len, 123);
    in.plain = path_dup(in.dir, "data.csv");
    in.gz = path_dup(in.dir, "gzip.csv.gz");
    in.pigz = path_dup(in.dir, "pigz.csv.gz");
    in.multi = path_dup(in.dir, "multi.csv.gz");
    in.empty = path_dup(in.dir, "empty.csv");
    in.emptygz = path_dup(in.dir, "empty.csv.gz");
    in.plaingz = path_dup(in.dir, "gzip-content.dat");  /* gzip under another name */
    in.small = path_dup(in.dir, "small.csv");
    in.smallgz = path_dup(in.dir, "small.csv.gz");
    in.tiny = path_dup(in.dir, "tiny");
    write_file(in.plain, in.csv, len);
    write_file(in.empty, "", 0);
    write_file(in.tiny, "\x1f", 1);
    in.small_len = len < 150000 ? len : 150000;
    in.small_data = in.csv;
    write_file(in.small, in.csv, in.small_len);
    sh("gzip -c '%s' > '%s'", in.plain, in.gz);  /* has FNAME */
    sh("gzip -c '%s' > '%s'", in.plain, in.plaingz);
    sh("pigz -c -p 2 -b 128 '%s' > '%s'", in.plain, in.pigz);
    sh("gzip -c < '%s' > '%s'", in.empty, in.emptygz);
    sh("gzip -1 -c < '%s' > '%s'", in.small, in.smallgz);
    /* multi: gzip file + empty member + pigz file + small member + ours */
    sh("cat '%s' '%s' '%s' '%s' > '%s'", in.gz, in.emptygz, in.pigz, in.smallgz, in.multi);
    in.multi_len = 2 * len + in.small_len;
    in.multi_want = malloc(in.multi_len);
    memcpy(in.multi_want, in.csv, len);
    memcpy(in.multi_want + len, in.csv, len);
    memcpy(in.multi_want + 2 * len, in.csv, in.small_len);
    return in;
}

static void free_inputs(struct inputs *in)
{
    char **paths[] = {&in->plain, &in->gz, &in->pigz, &in->multi, &in->empty, &in->emptygz,
                      &in->plaingz, &in->small, &in->smallgz, &in->tiny};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        free(*paths[i]);
    free(in->csv);
    free(in->multi_want);
    rm_dir(in->dir);
}

static void read_all_kinds(rs_codec_choice codec, const size_t *caps, size_t ncaps, size_t len)
{
    struct inputs in = make_inputs(len);
    for (size_t i = 0; i < ncaps; i++) {
        size_t cap = caps[i];
        slurp_result s;
        uint64_t gzsize;
        struct stat st;

        s = reader_all(in.gz, codec, cap, 0);
        expect_bytes(&s, in.csv, in.len, "gzip -c file");
        cr_assert_eq(s.is_gzip, 1);
        cr_assert_eq(stat(in.gz, &st), 0);
        gzsize = (uint64_t)st.st_size;
        cr_assert_eq(s.size, gzsize);
        cr_assert_eq(s.consumed, gzsize);
        free(s.data);

        s = reader_all(in.pigz, codec, cap, 0);
        expect_bytes(&s, in.csv, in.len, "pigz file");
        free(s.data);

        s = reader_all(in.multi, codec, cap, 0);
        expect_bytes(&s, in.multi_want, in.multi_len, "multi-member file");
        cr_assert_eq(stat(in.multi, &st), 0);
        cr_assert_eq(s.consumed, (uint64_t)st.st_size);
        free(s.data);

        s = reader_all(in.plain, codec, cap, 0);
        expect_bytes(&s, in.csv, in.len, "plain file");
        cr_assert_eq(s.is_gzip, 0);
        cr_assert_eq(s.consumed, (uint64_t)in.len);
        cr_assert_eq(s.size, (uint64_t)in.len);
        free(s.data);

        s = reader_all(in.plaingz, codec, cap, 0);
        expect_bytes(&s, in.csv, in.len, "gzip content named .dat (detected by its magic)");
        cr_assert_eq(s.is_gzip, 1);
        free(s.data);

        s = reader_all(in.empty, codec, cap, 0);
        expect_bytes(&s, "", 0, "empty file");
        cr_assert_eq(s.is_gzip, 0);
        free(s.data);

        s = reader_all(in.emptygz, codec, cap, 0);
        expect_bytes(&s, "", 0, "gzip of an empty file");
        cr_assert_eq(s.is_gzip, 1);
        free(s.data);

        s = reader_all(in.tiny, codec, cap, 0);
        expect_bytes(&s, "\x1f", 1, "a 1-byte file");
        cr_assert_eq(s.is_gzip, 0);
        free(s.data);
    }
    free_inputs(&in);
}

static const size_t BIG_CAPS[] = {4096, 65536, 1u << 20, 3u << 20};
static const size_t SMALL_CAPS[] = {1, 7};

Test(reader, all_kinds_auto_big_caps, .timeout = 300) { read_all_kinds(RS_CODEC_AUTO, BIG_CAPS, 4, 2u << 20); }
Test(reader, all_kinds_zlib_big_caps, .timeout = 300) { read_all_kinds(RS_CODEC_ZLIB, BIG_CAPS, 4, 2u << 20); }
Test(reader, all_kinds_auto_small_caps, .timeout = 300) { read_all_kinds(RS_CODEC_AUTO, SMALL_CAPS, 2, 200000); }
Test(reader, all_kinds_zlib_small_caps, .timeout = 300) { read_all_kinds(RS_CODEC_ZLIB, SMALL_CAPS, 2, 200000); }

/* Tiny input blocks put headers, trailers and member boundaries across refills. */
static void tiny_blocks(rs_codec_choice codec)
{
    struct inputs in = make_inputs(50000);
    /* many small members made by us plus one by gzip, and an empty member */
    char *many = path_dup(in.dir, "many.gz");
    rs_deflater *d = rs_deflater_new(1, RS_CODEC_ZLIB);
    rs_buf out = {0};
    for (size_t off = 0; off < in.len; off += 997) {
        size_t n = in.len - off < 997 ? in.len - off : 997;
        const void *p[] = {in.csv + off};
        size_t l[] = {n};
        uint32_t crc;
        cr_assert_eq(rs_deflater_member(d, p, l, 1, 0, &out, &crc), 0);
    }
    write_file(many, out.data, out.len);
    size_t el;
    unsigned char *eg = read_raw(in.emptygz, &el);
    append_file(many, eg, el);
    size_t gl;
    unsigned char *g = read_raw(in.smallgz, &gl);
    append_file(many, g, gl);
    char *want = malloc(in.len + in.small_len);
    memcpy(want, in.csv, in.len);
    memcpy(want + in.len, in.small_data, in.small_len);

    static const size_t blocks[] = {2, 3, 5, 8, 17, 64, 331, 4096};
    static const size_t caps[] = {1, 13, 65536};
    for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++)
        for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
            if (caps[c] == 1 && blocks[b] > 64)
                continue;  /* covered by the smaller blocks; keeps the test quick */
            slurp_result s = reader_all(many, codec, caps[c], blocks[b]);
            expect_bytes(&s, want, in.len + in.small_len, "many members, tiny blocks");
            cr_assert_eq(s.consumed, (uint64_t)out.len + el + gl);
            free(s.data);
            s = reader_all(in.gz, codec, caps[c], blocks[b]);
            expect_bytes(&s, in.csv, in.len, "gzip file, tiny blocks");
            free(s.data);
            s = reader_all(in.plain, codec, caps[c], blocks[b]);
            expect_bytes(&s, in.csv, in.len, "plain file, tiny blocks");
            free(s.data);
        }
    rs_buf_free(&out);
    rs_deflater_free(d);
    free(eg);
    free(g);
    free(want);
    free(many);
    free_inputs(&in);
}

Test(reader, tiny_blocks_auto, .timeout = 300) { tiny_blocks(RS_CODEC_AUTO); }
Test(reader, tiny_blocks_zlib, .timeout = 300) { tiny_blocks(RS_CODEC_ZLIB); }

/* A gzip header with FTEXT, FHCRC, FEXTRA, FNAME and FCOMMENT (not what gzip writes). */
static void full_header(rs_codec_choice codec)
{
    char *dir = make_tmpdir();
    char *path = path_dup(dir, "hdr.gz");
    char *csv = make_csv(100000, 77);
    unsigned char hdr[64];
    size_t h = 0;
    hdr[h++] = 0x1f, hdr[h++] = 0x8b, hdr[h++] = 8, hdr[h++] = 0x1f;  /* all flags */
    hdr[h++] = 1, hdr[h++] = 2, hdr[h++] = 3, hdr[h++] = 4;          /* mtime */
    hdr[h++] = 0, hdr[h++] = 3;                                      /* xfl, OS */
    hdr[h++] = 6, hdr[h++] = 0;                                      /* XLEN */
    memcpy(hdr + h, "AB\x02\x00xy", 6), h += 6;
    memcpy(hdr + h, "name.csv", 9), h += 9;
    memcpy(hdr + h, "a comment", 10), h += 10;
    uint32_t hc = (uint32_t)crc32(0, hdr, (uInt)h);
    hdr[h++] = hc & 0xff, hdr[h++] = (hc >> 8) & 0xff;
    unsigned char *body = malloc(200000);
    z_stream z = {0};
    cr_assert_eq(deflateInit2(&z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), Z_OK);
    z.next_in = (Bytef *)csv;
    z.avail_in = 100000;
    z.next_out = body;
    z.avail_out = 200000;
    cr_assert_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
    size_t bl = z.total_out;
    deflateEnd(&z);
    uint32_t crc = (uint32_t)crc32(0, (Bytef *)csv, 100000);
    unsigned char trl[8] = {crc & 0xff, (crc >> 8) & 0xff, (crc >> 16) & 0xff, crc >> 24,
                            100000 & 0xff, (100000 >> 8) & 0xff, (100000 >> 16) & 0xff, 0};
    write_file(path, hdr, h);
    append_file(path, body, bl);
    append_file(path, trl, 8);
    append_file(path, hdr, h);  /* twice: a second member */
    append_file(path, body, bl);
    append_file(path, trl, 8);
    sh("gzip -t '%s'", path);
    char *want = malloc(200000);
    memcpy(want, csv, 100000);
    memcpy(want + 100000, csv, 100000);
    static const size_t blocks[] = {0, 3, 11};
    for (size_t b = 0; b < 3; b++) {
        slurp_result s = reader_all(path, codec, 65536, blocks[b]);
        expect_bytes(&s, want, 200000, "full gzip header");
        free(s.data);
    }
    free(want);
    free(body);
    free(csv);
    free(path);
    rm_dir(dir);
}

Test(reader, full_header_auto) { full_header(RS_CODEC_AUTO); }

/* Bad headers: header CRC, reserved flags, method; and an empty FEXTRA. */
static void bad_headers(rs_codec_choice codec)
{
    char *dir = make_tmpdir();
    char *path = path_dup(dir, "h.gz");
    /* deflate of "hello\n" (fixed Huffman), CRC and ISIZE */
    static const unsigned char body[] = {0xcb, 0x48, 0xcd, 0xc9, 0xc9, 0xe7, 0x02, 0x00,
                                         0x20, 0x30, 0x3a, 0x36, 0x06, 0, 0, 0};
    unsigned char hdr[32];
    for (int variant = 0; variant < 5; variant++) {
        size_t h = 0;
        uint8_t flg = variant == 1 ? 0x20 : variant == 4 ? 0x04 : 0x0a;  /* FHCRC|FNAME */
        hdr[h++] = 0x1f, hdr[h++] = 0x8b, hdr[h++] = variant == 2 ? 7 : 8, hdr[h++] = flg;
        memset(hdr + h, 0, 6), h += 6;
        if (flg & 0x04)
            hdr[h++] = 0, hdr[h++] = 0;  /* XLEN 0 */
        if (flg & 0x08)
            memcpy(hdr + h, "n", 2), h += 2;
        if (flg & 0x02) {
            uint32_t c = (uint32_t)crc32(0, hdr, (uInt)h) ^ (variant == 0 ? 1u : 0u);
            hdr[h++] = c & 0xff, hdr[h++] = (c >> 8) & 0xff;
        }
        write_file(path, hdr, h);
        append_file(path, body, sizeof body);
        for (size_t blk = 0; blk < 8; blk += 3) {
            slurp_result s = reader_all(path, codec, 4096, blk);
            if (variant >= 3) {
                expect_bytes(&s, "hello\n", 6, "good header");
                sh("gzip -t '%s'", path);
            } else {
                expect_data_error(&s, path, "bad header", NULL);
                cr_assert_eq(s.len, 0u);
            }
            free(s.data);
        }
    }
    free(path);
    rm_dir(dir);
}

Test(reader, bad_headers_auto) { bad_headers(RS_CODEC_AUTO); }
Test(reader, bad_headers_zlib) { bad_headers(RS_CODEC_ZLIB); }
Test(reader, full_header_zlib) { full_header(RS_CODEC_ZLIB); }

/* Standard input: a redirected file and a pipe fed in small writes. */
static void from_stdin(rs_codec_choice codec)
{
    struct inputs in = make_inputs(1u << 20);
    const char *files[] = {in.multi, in.plain, in.empty};
    const char *wants[] = {in.multi_want, in.csv, ""};
    size_t wlens[] = {in.multi_len, in.len, 0};
    for (int i = 0; i < 3; i++) {
        /* a redirected regular file */
        int fd = open(files[i], O_RDONLY);
        cr_assert_geq(fd, 0);
        cr_assert_eq(dup2(fd, 0), 0);
        close(fd);
        slurp_result s = reader_all("-", codec, 1u << 20, 0);
        expect_bytes(&s, wants[i], wlens[i], "stdin (file)");
        free(s.data);

        /* a pipe, written by a child in odd-sized pieces */
        size_t fl;
        unsigned char *f = read_raw(files[i], &fl);
        int pfd[2];
        cr_assert_eq(pipe(pfd), 0);
        pid_t pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
            close(pfd[0]);
            size_t off = 0, step = 1;
            while (off < fl) {
                size_t n = fl - off < step ? fl - off : step;
                if (write(pfd[1], f + off, n) != (ssize_t)n)
                    _exit(1);
                off += n;
                step = step * 3 % 70001 + 1;
            }
            _exit(0);
        }
        close(pfd[1]);
        cr_assert_eq(dup2(pfd[0], 0), 0);
        close(pfd[0]);
        s = reader_all("-", codec, 65536, 0);
        expect_bytes(&s, wants[i], wlens[i], "stdin (pipe)");
        cr_assert_eq(s.size, 0u, "a pipe has no size");
        cr_assert_eq(s.consumed, (uint64_t)fl);
        int st;
        cr_assert_eq(waitpid(pid, &st, 0), pid);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        free(s.data);
        free(f);
    }
    free_inputs(&in);
}

Test(reader, stdin_auto) { from_stdin(RS_CODEC_AUTO); }
Test(reader, stdin_zlib) { from_stdin(RS_CODEC_ZLIB); }

/* ---- reader: faults ---------------------------------------------------- */

static void write_variant(const char *path, const unsigned char *g, size_t gl, size_t cut,
                          long flip_at, const void *extra, size_t extra_len)
{
    unsigned char *v = malloc(gl + extra_len + 1);
    memcpy(v, g, gl);
    if (flip_at >= 0)
        v[flip_at] ^= 0x55;
    if (extra_len)
        memcpy(v + cut, extra, extra_len);
    write_file(path, v, cut + extra_len);
    free(v);
}

static void faults(rs_codec_choice codec)
{
    struct inputs in = make_inputs(300000);
    size_t gl;
    unsigned char *g = read_raw(in.gz, &gl);  /* gzip -c: a 10-byte header + FNAME */
    char *bad = path_dup(in.dir, "bad.csv.gz");
    static const size_t blocks[] = {0, 7};
    for (size_t b = 0; b < 2; b++) {
        size_t blk = blocks[b];
        slurp_result s;

        /* truncated at several points (from 2 bytes on: 1 byte is plain data) */
        size_t cuts[] = {2, 3, 9, 10, 12, 30, gl / 3, gl / 2, gl - 9, gl - 8, gl - 5, gl - 4,
                         gl - 1};
        for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
            write_variant(bad, g, gl, cuts[i], -1, NULL, 0);
            s = reader_all(bad, codec, 65536, blk);
            char what[64];
            snprintf(what, sizeof what, "truncated at %zu of %zu", cuts[i], gl);
            expect_data_error(&s, bad, what, "truncated");
            free(s.data);
        }
        /* truncated in a second member */
        write_variant(bad, g, gl, gl, -1, g, gl / 2);
        s = reader_all(bad, codec, 65536, blk);
        expect_data_error(&s, bad, "truncated second member", "truncated");
        free(s.data);

        /* a flipped byte in the middle: corrupt data or CRC mismatch */
        static const double where[] = {0.3, 0.5, 0.7, 0.9};
        for (size_t i = 0; i < 4; i++) {
            write_variant(bad, g, gl, gl, (long)(gl * where[i]), NULL, 0);
            s = reader_all(bad, codec, 65536, blk);
            expect_data_error(&s, bad, "flipped byte", NULL);
            free(s.data);
        }
        /* flipped CRC in the trailer */
        for (int k = 8; k >= 5; k--) {
            write_variant(bad, g, gl, gl, (long)gl - k, NULL, 0);
            s = reader_all(bad, codec, 65536, blk);
            expect_data_error(&s, bad, "flipped CRC", "CRC");
            free(s.data);
        }
        /* wrong ISIZE */
        for (int k = 4; k >= 1; k--) {
            write_variant(bad, g, gl, gl, (long)gl - k, NULL, 0);
            s = reader_all(bad, codec, 65536, blk);
            expect_data_error(&s, bad, "wrong ISIZE", "ISIZE");
            free(s.data);
        }
        /* a bad header: wrong method */
        write_variant(bad, g, gl, gl, 2, NULL, 0);
        s = reader_all(bad, codec, 65536, blk);
        expect_data_error(&s, bad, "bad method", NULL);
        free(s.data);

        /* garbage after a member */
        struct {
            const char *bytes;
            size_t n;
            const char *msg;
        } tails[] = {
            {"xyz", 3, "garbage"},
            {"\n", 1, "garbage"},
            {"\x1f", 1, "garbage"},
            {"\x1f\x8c", 2, "garbage"},
            /* zero padding must run to the end (zeros alone: test_input.c) */
            {"\0\0\0\0\x1f\x8b\x08\0", 8, "garbage"},
            {"\0\0\0x", 4, "garbage"},
            {"\x1f\x8b", 2, "truncated"},        /* the start of a member, then EOF */
            {"\x1f\x8b\x08\0\0\0\0\0\0\x03", 10, "truncated"},
        };
        for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++) {
            write_variant(bad, g, gl, gl, -1, tails[i].bytes, tails[i].n);
            s = reader_all(bad, codec, 65536, blk);
            char what[64];
            snprintf(what, sizeof what, "trailing bytes #%zu", i);
            expect_data_error(&s, bad, what, tails[i].msg);
            /* everything before the garbage was delivered (or at most an error) */
            cr_assert_leq(s.len, in.len);
            free(s.data);
        }
        /* garbage offset is the end of the member */
        write_variant(bad, g, gl, gl, -1, "xyz", 3);
        s = reader_all(bad, codec, 65536, blk);
        char off[64];
        snprintf(off, sizeof off, "offset %zu", gl);
        cr_assert_not_null(strstr(s.err.msg, off), "garbage offset: %s", s.err.msg);
        free(s.data);
    }
    free(g);
    free(bad);
    free_inputs(&in);
}

Test(faults, auto, .timeout = 300) { faults(RS_CODEC_AUTO); }
Test(faults, zlib, .timeout = 300) { faults(RS_CODEC_ZLIB); }

Test(faults, truncated_offset_names_end_of_file)
{
    struct inputs in = make_inputs(100000);
    size_t gl;
    unsigned char *g = read_raw(in.gz, &gl);
    char *bad = path_dup(in.dir, "cut.gz");
    write_variant(bad, g, gl, gl / 2, -1, NULL, 0);
    for (int c = 0; c < 2; c++) {
        slurp_result s = reader_all(bad, CODECS[c], 4096, 0);
        char want[96];
        snprintf(want, sizeof want, "truncated gzip stream at byte offset %zu", gl / 2);
        cr_assert_not_null(strstr(s.err.msg, want), "%s", s.err.msg);
        free(s.data);
    }
    free(g);
    free(bad);
    free_inputs(&in);
}

Test(faults, missing_file_and_directory)
{
    for (int c = 0; c < 2; c++) {
        rs_error err;
        rs_error_clear(&err);
        rs_reader *r = rs_reader_open("/nonexistent/dir/file.csv.gz", CODECS[c], &err);
        cr_assert_null(r);
        cr_assert_eq(err.code, RS_EXIT_IO);
        cr_assert_not_null(strstr(err.msg, "/nonexistent/dir/file.csv.gz"), "%s", err.msg);
        char *dir = make_tmpdir();
        rs_error_clear(&err);
        r = rs_reader_open(dir, CODECS[c], &err);
        cr_assert_null(r);
        cr_assert_eq(err.code, RS_EXIT_IO, "%s", err.msg);
        rm_dir(dir);
    }
    rs_reader_close(NULL);
}

Test(faults, error_does_not_overwrite_callers_first_error)
{
    struct inputs in = make_inputs(10000);
    char *bad = path_dup(in.dir, "g.gz");
    size_t gl;
    unsigned char *g = read_raw(in.gz, &gl);
    write_variant(bad, g, gl, gl, -1, "xyz", 3);
    rs_reader *r = rs_reader_open(bad, RS_CODEC_AUTO, NULL);
    cr_assert_not_null(r);
    char buf[65536];
    ssize_t n;
    rs_error err;
    rs_error_clear(&err);
    while ((n = rs_reader_read(r, buf, sizeof buf, NULL)) > 0)
        ;
    cr_assert_eq(n, -1);  /* err may be NULL */
    cr_assert_eq(rs_reader_read(r, buf, sizeof buf, &err), -1);
    cr_assert_eq(err.code, RS_EXIT_DATA);
    cr_assert_not_null(strstr(err.msg, "garbage"));
    rs_reader_close(r);
    free(g);
    free(bad);
    free_inputs(&in);
}

/* A name ending in .gz, .gzip or .tgz (any case) promises gzip: plain bytes
 * or an empty file under such a name are an error naming the file and byte
 * offset 0, not plain CSV. Other names are read by content. */
static void named_gzip_must_be_gzip(rs_codec_choice codec)
{
    char *dir = make_tmpdir();
    static const struct {
        const char *name, *data, *msg;
    } cases[] = {
        {"plain.gz", "id,v\n1,a\n", "plain.gz: not gzip data (named .gz, but byte offset 0 holds 0x69 0x64, not the gzip magic 1f 8b)"},
        {"PLAIN.CSV.GZ", "AB", "PLAIN.CSV.GZ: not gzip data (named .GZ, but byte offset 0 holds 0x41 0x42"},
        {"x.gzip", "\x1f", "x.gzip: not gzip data (named .gzip, but byte offset 0 holds 0x1f and then the file ends"},
        {"x.tgz", "\x1f\x8c", "x.tgz: not gzip data (named .tgz, but byte offset 0 holds 0x1f 0x8c"},
        {"empty.gz", "", "empty.gz: empty file (named .gz, but holds no gzip member: end of file at byte offset 0)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *p = path_dup(dir, cases[i].name);
        write_file(p, cases[i].data, strlen(cases[i].data));
        slurp_result s = reader_all(p, codec, 4096, 0);
        cr_assert_eq(s.rc, -1, "%s must fail", cases[i].name);
        cr_assert_eq(s.err.code, RS_EXIT_DATA);
        cr_assert(strstr(s.err.msg, cases[i].msg), "%s: %s", cases[i].name, s.err.msg);
        free(s.data);
        free(p);
    }
    /* not a gzip name: read by content */
    static const char *const other[] = {"plain.gz.bak", "plain.csv", "gz", "empty.csv"};
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
        char *p = path_dup(dir, other[i]);
        const char *data = strcmp(other[i], "empty.csv") ? "id,v\n" : "";
        write_file(p, data, strlen(data));
        slurp_result s = reader_all(p, codec, 4096, 0);
        expect_bytes(&s, data, strlen(data), other[i]);
        cr_assert_eq(s.is_gzip, 0);
        free(s.data);
        free(p);
    }
    rm_dir(dir);
}

Test(reader, named_gzip_must_be_gzip_auto) { named_gzip_must_be_gzip(RS_CODEC_AUTO); }
Test(reader, named_gzip_must_be_gzip_zlib) { named_gzip_must_be_gzip(RS_CODEC_ZLIB); }

/* ---- file lists (ringshard/filelist.h) ------------------------------------ */

static void put_file(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fwrite(text, 1, len, f), len);
    cr_assert_eq(fclose(f), 0);
}

static char *test_io_dir;   /* the scratch directory of a filelist test */

/* The inputs of lists args + paths (each list's text given), or the error:
 * returns the exit code (0) and fills got with the inputs joined by ' '. */
static int lists_run(int null, char **args, size_t nargs, const char *const *texts, size_t ntexts, const size_t *lens,
                     char *got, size_t cap, rs_error *err)
{
    rs_file_lists fl = {0};
    fl.null = null;
    char *names[8] = {0};
    int rc = -1;
    for (size_t k = 0; k < ntexts; k++) {
        names[k] = strdup(path_dup(test_io_dir, k == 0 ? "l0" : k == 1 ? "l1" : "l2"));
        put_file(names[k], texts[k], lens[k]);
        if (rs_file_lists_add(&fl, names[k], err) != 0)
            goto out;
    }
    if (rs_file_lists_args(&fl, args, nargs, err) != 0)
        goto out;
    for (size_t k = 0; k < fl.nlists; k++)
        if (rs_file_lists_read(&fl, k, err) != 0)
            goto out;
    if (rs_file_lists_split(&fl, args, nargs, err) != 0 || rs_file_lists_check(&fl, nargs, err) != 0)
        goto out;
    got[0] = 0;
    for (size_t i = 0; i < fl.ninputs; i++) {
        const char *p = strrchr(fl.inputs[i], '/');
        snprintf(got + strlen(got), cap - strlen(got), "%s%s", i ? " " : "", p ? p + 1 : fl.inputs[i]);
    }
    rc = 0;
out:
    for (size_t k = 0; k < ntexts; k++)
        free(names[k]);
    rs_file_lists_free(&fl);
    cr_assert_eq(fl.nlists, 0);
    return rc ? err->code : 0;
}

Test(filelist, command_line_then_each_list_in_order)
{
    test_io_dir = make_tmpdir();
    const char *names[] = {"a", "b", "c", "d"};
    for (size_t i = 0; i < 4; i++)
        put_file(path_dup(test_io_dir, names[i]), "k\n1\n", 4);
    char *args[] = {path_dup(test_io_dir, "d")};
    char l0[256], l1[256], got[512];
    snprintf(l0, sizeof l0, "%s\n%s\n", path_dup(test_io_dir, "b"), path_dup(test_io_dir, "a"));
    snprintf(l1, sizeof l1, "%s", path_dup(test_io_dir, "c"));   /* the last line without its LF */
    const char *texts[] = {l0, l1};
    size_t lens[] = {strlen(l0), strlen(l1)};
    rs_error err = {0};
    cr_assert_eq(lists_run(0, args, 1, texts, 2, lens, got, sizeof got, &err), 0, "%s", err.msg);
    cr_assert_str_eq(got, "d b a c");
    /* NUL-ended entries, and a path with a newline in it */
    put_file(path_dup(test_io_dir, "e\nf"), "k\n", 2);
    char nul[256];
    size_t n = (size_t)snprintf(nul, sizeof nul, "%s", path_dup(test_io_dir, "e\nf")) + 1;
    n += (size_t)snprintf(nul + n, sizeof nul - n, "%s", path_dup(test_io_dir, "a")) + 1;
    const char *t2[] = {nul};
    cr_assert_eq(lists_run(1, NULL, 0, t2, 1, &n, got, sizeof got, &err), 0, "%s", err.msg);
    cr_assert_str_eq(got, "e\nf a");
    remove_tree(test_io_dir);
}

Test(filelist, each_fault_names_the_list_and_its_line)
{
    test_io_dir = make_tmpdir();
    put_file(path_dup(test_io_dir, "a"), "k\n", 2);
    cr_assert_eq(link(path_dup(test_io_dir, "a"), path_dup(test_io_dir, "hard")), 0);
    cr_assert_eq(mkdir(path_dup(test_io_dir, "sub"), 0755), 0);
    char a[256], sub[256];
    snprintf(a, sizeof a, "%s", path_dup(test_io_dir, "a"));
    snprintf(sub, sizeof sub, "%s", path_dup(test_io_dir, "sub"));
    struct {
        const char *fmt;
        int code;
        const char *says;
    } bad[] = {
        {"%s\n\n", RS_EXIT_USAGE, "line 2: empty"},
        {"%s\r\n", RS_EXIT_USAGE, "line 1: ends in a carriage return"},
        {"%s\nmissing\n", RS_EXIT_IO, "line 2: missing: cannot open"},
        {"%s\n%s\n", RS_EXIT_USAGE, "is listed twice"},
        {"%s\n%s/../hard\n", RS_EXIT_USAGE, "is the same file as"},
        {"%.0s%s\n", RS_EXIT_IO, "is a directory"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char text[1024], got[512];
        snprintf(text, sizeof text, bad[i].fmt, a, i >= 4 ? sub : a);
        const char *texts[] = {text};
        size_t len = strlen(text);
        rs_error err = {0};
        cr_assert_eq(lists_run(0, NULL, 0, texts, 1, &len, got, sizeof got, &err), bad[i].code, "case %zu: %s", i,
                     err.msg);
        cr_assert(strstr(err.msg, "--files-from ") && strstr(err.msg, bad[i].says), "case %zu: '%s' lacks '%s'", i,
                  err.msg, bad[i].says);
    }
    rs_file_lists fl = {0};
    rs_error err = {0};
    cr_assert_eq(rs_file_lists_add(&fl, "-", &err), 0);
    cr_assert_eq(rs_file_lists_add(&fl, "-", &err), -1, "standard input is one list at most");
    cr_assert_eq(err.code, RS_EXIT_USAGE);
    char *dash[] = {"-"};
    err = (rs_error){0};
    cr_assert_eq(rs_file_lists_args(&fl, dash, 1, &err), -1, "'-' is the list, so not an input");
    rs_file_lists_free(&fl);
    remove_tree(test_io_dir);
}

/* ---- compression levels ---------------------------------------------------- */

Test(level, one_range_to_parse_the_codec_s_to_check)
{
    int v;
    rs_error err = {0};
    cr_assert_eq(rs_level_parse("--level", "-131072", &v, &err), 0);
    cr_assert_eq(v, -131072);
    cr_assert_eq(rs_level_parse("--level", "0", &v, &err), 0, "0 parses; the codec refuses it");
    cr_assert_eq(rs_level_parse("--level", "23", &v, &err), -1);
    cr_assert(strstr(err.msg, "--level: '23' is not a level"), "%s", err.msg);
    cr_assert_eq(rs_level_parse("--level", "3x", &v, &err), -1);
    cr_assert_eq(rs_level_parse("--level", "", &v, &err), -1);
    cr_assert_eq(rs_level_check("--level", RS_COMPRESS_GZIP, 9, &err), 0);
    cr_assert_eq(rs_level_check("--level", RS_COMPRESS_ZSTD, -5, &err), 0);
    cr_assert_eq(rs_level_check("--level", RS_COMPRESS_ZSTD, 22, &err), 0);
    err = (rs_error){0};
    cr_assert_eq(rs_level_check("--level", RS_COMPRESS_ZSTD, 0, &err), -1);
    cr_assert_eq(err.code, RS_EXIT_USAGE);
    cr_assert_eq(rs_level_check("--level", RS_COMPRESS_GZIP, 10, &err), -1);
    cr_assert_eq(rs_level_check("--level", RS_COMPRESS_NONE, 0, &err), -1);
}
