/* fuzz/check_gzip.h - the gzip input layer (see fuzz/check_common.h).
 *
 * The bytes are written to a temporary file (a memfd, opened again through
 * /proc/self/fd/N; a file in /dev/shm or TMPDIR where memfds are missing)
 * and read with rs_reader twice: RS_CODEC_AUTO (ISA-L when built with it)
 * in odd small reads, and RS_CODEC_ZLIB in large reads, each with an input
 * block size picked by the input's length (rs_reader_set_block_size: tiny
 * blocks split headers, trailers and members across refills). Both must give the
 * same bytes, or both fail with RS_EXIT_DATA and a message that names the
 * byte offset. The reference is a direct zlib decode: input not starting
 * with 1f 8b is plain (read as is); otherwise gzip members (inflate with
 * windowBits 15+16) follow each other to the end of the input, where
 * zero bytes up to the end after the last member are padding, and
 * anything else (a truncated member, corrupt data, garbage after a member,
 * zeros followed by anything) is an error. zlib's gzread, which tolerates trailing garbage, must give a
 * prefix-consistent result: where the reference accepts, the same bytes.
 * Input starting with a zstd magic (28 b5 2f fd, or a skippable frame's
 * 5X 2a 4d 18) is zstd: the reference decodes it with libzstd directly,
 * frame by frame (ZSTD_decompressStream, window log up to 27, no
 * dictionary), skippable frames skipped, with the same rules for what may
 * follow the last frame; in a build without zstd the reader must refuse it
 * (RS_EXIT_USAGE). */
#ifndef RINGSHARD_FUZZ_CHECK_GZIP_H
#define RINGSHARD_FUZZ_CHECK_GZIP_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "check_common.h"
#include "io/io_internal.h"
#include "ringshard/buf.h"
#include "ringshard/deflate.h"
#include "ringshard/error.h"
#include "ringshard/reader.h"
#include "rs_config.h"
#if RS_HAVE_ZSTD
#include <zstd.h>
#endif

static int fzgz_fd = -1;
static char fzgz_path[256];

/* Writes data to the scratch file (created once per process). */
static void fzgz_write(const uint8_t *data, size_t size)
{
    if (fzgz_fd < 0) {
#ifdef MFD_CLOEXEC
        fzgz_fd = memfd_create("ringshard-fuzz-gzip", MFD_CLOEXEC);
        if (fzgz_fd >= 0)
            snprintf(fzgz_path, sizeof fzgz_path, "/proc/self/fd/%d", fzgz_fd);
#endif
        if (fzgz_fd < 0) {
            const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
            snprintf(fzgz_path, sizeof fzgz_path, "%s/ringshard-fuzz-gzip-%ld", dir, (long)getpid());
            fzgz_fd = open(fzgz_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
            FZ_CHECK(fzgz_fd >= 0, "cannot create %s", fzgz_path);
            unlink(fzgz_path); /* reopened by /proc/self/fd below */
            snprintf(fzgz_path, sizeof fzgz_path, "/proc/self/fd/%d", fzgz_fd);
        }
    }
    FZ_CHECK(ftruncate(fzgz_fd, 0) == 0, "ftruncate");
    size_t done = 0;
    while (done < size) {
        ssize_t k = pwrite(fzgz_fd, data + done, size - done, (off_t)done);
        FZ_CHECK(k > 0, "pwrite");
        done += (size_t)k;
    }
}

/* Reads the scratch file with rs_reader; 0 with out filled, or -1 with err. */
static int fzgz_read_rs(rs_codec_choice codec, size_t block, int small, rs_buf *out, rs_error *err)
{
    rs_error_clear(err);
    out->len = 0;
    rs_reader *r = rs_reader_open(fzgz_path, codec, err);
    FZ_CHECK(r != NULL, "rs_reader_open: %s", err->msg);
    if (block)
        FZ_CHECK(rs_reader_set_block_size(r, block) == 0, "rs_reader_set_block_size(%zu)", block);
    static unsigned char chunk[1 << 16];
    size_t step = 1;
    int rc = 0;
    for (;;) {
        size_t cap = small ? step : sizeof chunk;
        step = step % 97 + 13;
        ssize_t k = rs_reader_read(r, chunk, cap, err);
        if (k < 0) {
            rc = -1;
            /* errors are sticky */
            rs_error again;
            rs_error_clear(&again);
            FZ_CHECK(rs_reader_read(r, chunk, sizeof chunk, &again) == -1, "a read after an error succeeds");
            FZ_CHECK(again.code == err->code && strcmp(again.msg, err->msg) == 0, "the error is not sticky: '%s' then '%s'",
                     err->msg, again.msg);
            break;
        }
        FZ_CHECK((size_t)k <= cap, "read %zd bytes into %zu", k, cap);
        if (k == 0)
            break;
        FZ_CHECK(rs_buf_append(out, chunk, (size_t)k) == 0, "out of memory");
    }
    rs_reader_close(r);
    return rc;
}

static uint32_t fzgz_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* 1 when p[0..4) is a zstd frame's or a skippable frame's magic. */
static int fzgz_zstd_magic(const uint8_t *p)
{
    uint32_t m = fzgz_le32(p);
    return m == 0xFD2FB528u || (m & 0xFFFFFFF0u) == 0x184D2A50u;
}

#if RS_HAVE_ZSTD
/* The zstd reference: 0 with out filled, -1 on bad input. */
static int fzgz_read_zstd_ref(const uint8_t *data, size_t size, rs_buf *out)
{
    static unsigned char chunk[1 << 16];
    ZSTD_DCtx *d = ZSTD_createDCtx();
    FZ_CHECK(d != NULL, "ZSTD_createDCtx");
    ZSTD_DCtx_setParameter(d, ZSTD_d_windowLogMax, RS_ZSTD_WINDOW_LOG_MAX);
    size_t pos = 0;
    int rc = 0;
    while (pos < size && rc == 0) {
        if (size - pos < 4 || !fzgz_zstd_magic(data + pos)) {
            while (pos < size && data[pos] == 0)  /* zero padding to the end, as for gzip */
                pos++;
            rc = pos == size ? 0 : -1;
            break;
        }
        if ((fzgz_le32(data + pos) & 0xFFFFFFF0u) == 0x184D2A50u) {
            if (size - pos < 8 || fzgz_le32(data + pos + 4) > size - pos - 8)
                rc = -1;
            else
                pos += 8 + (size_t)fzgz_le32(data + pos + 4);
            continue;
        }
        if (ZSTD_getDictID_fromFrame(data + pos, size - pos) != 0) {
            rc = -1;
            break;
        }
        ZSTD_DCtx_reset(d, ZSTD_reset_session_only);
        /* RFC 8878: a frame's content, when its header gives the size, is
         * that many bytes (libzstd 1.5.4's streaming decoder does not
         * always check) */
        unsigned long long fcs = ZSTD_getFrameContentSize(data + pos, size - pos);
        size_t start = out->len;
        ZSTD_inBuffer in = {data + pos, size - pos, 0};
        size_t ret;
        do {
            ZSTD_outBuffer ob = {chunk, sizeof chunk, 0};
            ret = ZSTD_decompressStream(d, &ob, &in);
            if (ZSTD_isError(ret))
                break;
            FZ_CHECK(rs_buf_append(out, chunk, ob.pos) == 0, "out of memory");
            if (ret != 0 && in.pos == in.size && ob.pos < ob.size)
                break;  /* wants input that is not there: truncated */
        } while (ret != 0);
        if (ZSTD_isError(ret) || ret != 0)
            rc = -1;
        else if (fcs != ZSTD_CONTENTSIZE_UNKNOWN && fcs != ZSTD_CONTENTSIZE_ERROR && out->len - start != fcs)
            rc = -1;
        pos += in.pos;
    }
    ZSTD_freeDCtx(d);
    return rc;
}
#endif

/* The reference: 0 with out filled, -1 on bad input. */
static int fzgz_read_ref(const uint8_t *data, size_t size, rs_buf *out)
{
    out->len = 0;
#if RS_HAVE_ZSTD
    if (size >= 4 && fzgz_zstd_magic(data))
        return fzgz_read_zstd_ref(data, size, out);
#endif
    if (size < 2 || data[0] != 0x1f || data[1] != 0x8b) {
        FZ_CHECK(rs_buf_append(out, size ? (const void *)data : "", size) == 0, "out of memory");
        return 0;
    }
    static unsigned char chunk[1 << 16];
    size_t pos = 0;
    while (pos < size) {
        if (size - pos < 2 || data[pos] != 0x1f || data[pos + 1] != 0x8b) {
            /* zero padding (tape and block writers) up to the end is
             * accepted after the last member; anything else is garbage */
            while (pos < size && data[pos] == 0)
                pos++;
            return pos == size ? 0 : -1;
        }
        z_stream z;
        memset(&z, 0, sizeof z);
        FZ_CHECK(inflateInit2(&z, 15 + 16) == Z_OK, "inflateInit2");
        z.next_in = (Bytef *)(data + pos);
        z.avail_in = (uInt)(size - pos);
        int ret;
        do {
            z.next_out = chunk;
            z.avail_out = sizeof chunk;
            ret = inflate(&z, Z_NO_FLUSH);
            FZ_CHECK(rs_buf_append(out, chunk, sizeof chunk - z.avail_out) == 0, "out of memory");
        } while (ret == Z_OK && !(z.avail_in == 0 && z.avail_out != 0));
        size_t used = (size - pos) - z.avail_in;
        inflateEnd(&z);
        if (ret != Z_STREAM_END)
            return -1; /* corrupt or truncated */
        pos += used;
    }
    return 0;
}

/* zlib's gzread on the scratch file: bytes it returns before any error. */
static void fzgz_read_gzread(rs_buf *out, int *failed)
{
    out->len = 0;
    *failed = 0;
    int fd = dup(fzgz_fd);
    FZ_CHECK(fd >= 0, "dup");
    FZ_CHECK(lseek(fd, 0, SEEK_SET) == 0, "lseek");
    gzFile g = gzdopen(fd, "rb");
    FZ_CHECK(g != NULL, "gzdopen");
    static unsigned char chunk[1 << 16];
    for (;;) {
        int k = gzread(g, chunk, sizeof chunk);
        if (k < 0) {
            *failed = 1;
            break;
        }
        if (k == 0) {
            int errnum;
            gzerror(g, &errnum);
            if (errnum != Z_OK)
                *failed = 1;
            break;
        }
        FZ_CHECK(rs_buf_append(out, chunk, (size_t)k) == 0, "out of memory");
    }
    gzclose(g);
}

static int fzgz_same(const rs_buf *a, const rs_buf *b)
{
    return a->len == b->len && (a->len == 0 || memcmp(a->data, b->data, a->len) == 0);
}

/* The unit listing (reader.h) over the same bytes, with units of 1 to 64
 * bytes so that every record-boundary member starts one: the units tile
 * the file in order, their bases add up, and reading them as ranges either
 * gives exactly the whole read's bytes or fails as bad data (headers that
 * lie about member sizes). Never other bytes. */
static void fzgz_check_units(const uint8_t *data, size_t size, int whole_ok, const rs_buf *whole)
{
    rs_member_info mi;
    size_t need = 0;
    int pr = rs_member_parse(data, size, &mi, &need);
    FZ_CHECK(pr == 0 || pr == 1, "rs_member_parse returned %d", pr);
    FZ_CHECK(pr == 0 || (need <= size && mi.version == 1), "parsed a header of %zu bytes from %zu", need, size);

    rs_input_unit *u = NULL;
    size_t n = 0;
    uint64_t fsize = 0;
    rs_error err;
    rs_error_clear(&err);
    FZ_CHECK(rs_input_units(fzgz_path, 1 + size % 64, &u, &n, &fsize, &err) == 0, "rs_input_units: %s", err.msg);
    FZ_CHECK(n >= 1 && fsize == size, "%zu units, size %llu of %zu", n, (unsigned long long)fsize, size);
    uint64_t at = 0;
    for (size_t k = 0; k < n; k++) {
        FZ_CHECK(u[k].offset == at, "unit %zu starts at %llu, not %llu", k, (unsigned long long)u[k].offset,
                 (unsigned long long)at);
        FZ_CHECK(k == 0 || u[k].size > 0, "empty unit %zu", k);
        if (k > 0)
            FZ_CHECK(u[k].counted && u[k].line_base == u[k - 1].line_base + u[k - 1].lines &&
                         u[k].record_base == u[k - 1].record_base + u[k - 1].records,
                     "unit %zu: bases do not add up", k);
        at += u[k].size;
    }
    FZ_CHECK(at == size, "units end at %llu, the file at %zu", (unsigned long long)at, size);
    if (n > 1 && whole_ok) {
        rs_buf cat = {0};
        static unsigned char chunk[1 << 16];
        int failed = 0;
        for (size_t k = 0; k < n && !failed; k++) {
            rs_reader *r = rs_reader_open_range(fzgz_path, RS_CODEC_AUTO, u[k].offset, u[k].size, &err);
            FZ_CHECK(r != NULL, "rs_reader_open_range: %s", err.msg);
            for (;;) {
                ssize_t got = rs_reader_read(r, chunk, sizeof chunk, &err);
                if (got < 0) {
                    FZ_CHECK(err.code == RS_EXIT_DATA, "a range fails with code %d: %s", err.code, err.msg);
                    failed = 1;
                    break;
                }
                if (got == 0)
                    break;
                FZ_CHECK(rs_buf_append(&cat, chunk, (size_t)got) == 0, "out of memory");
            }
            rs_reader_close(r);
        }
        FZ_CHECK(failed || fzgz_same(&cat, whole), "the units read %zu bytes, the whole file %zu", cat.len, whole->len);
        rs_buf_free(&cat);
    }
    free(u);
}

static int check_gzip(const uint8_t *data, size_t size)
{
    rs_buf a = {0}, z = {0}, ref = {0}, g = {0};
    rs_error ea, ez;
    fzgz_write(data, size);
    /* input blocks (0: the default 1 MiB) chosen by the size, so that a
     * replay reads the same way: tiny ones put headers, trailers and member
     * boundaries across refills */
    static const size_t blocks_a[] = {2, 3, 5, 8, 17, 64, 331, 4096};
    static const size_t blocks_z[] = {0, 2, 3, 7, 0, 19, 64, 0};
    size_t block_a = blocks_a[size % 8], block_z = blocks_z[(size / 8) % 8];
    int ra = fzgz_read_rs(RS_CODEC_AUTO, block_a, 1, &a, &ea);
    int rz = fzgz_read_rs(RS_CODEC_ZLIB, block_z, 0, &z, &ez);
    int rr = fzgz_read_ref(data, size, &ref);
    int is_gz = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
    int is_zst = !is_gz && size >= 4 && fzgz_zstd_magic(data);
#if !RS_HAVE_ZSTD
    if (is_zst) {  /* refused by a build without zstd, and read as plain by nothing else */
        FZ_CHECK(ra == -1 && rz == -1 && ea.code == RS_EXIT_USAGE && strstr(ea.msg, "no zstd support"),
                 "zstd input in a build without zstd: %s", ea.msg);
        rs_buf_free(&a);
        rs_buf_free(&z);
        rs_buf_free(&ref);
        return 0;
    }
#endif
    FZ_CHECK(ra == rz, "AUTO (block %zu) %s, ZLIB (block %zu) %s (%s)", block_a, ra ? "fails" : "succeeds", block_z,
             rz ? "fails" : "succeeds", ra ? ea.msg : ez.msg);
    const char *advice;
    if (ra != 0 && !is_gz && !is_zst && rs_foreign_format(data, size < RS_MAGIC_LOOK ? size : RS_MAGIC_LOOK, &advice)) {
        /* a format ringshard refuses by its magic number (io/magic.c), which the
         * reference reads as plain bytes: refused as such, and nothing else */
        FZ_CHECK(ea.code == RS_EXIT_DATA && strstr(ea.msg, "is not supported"), "foreign input: %s", ea.msg);
        rs_buf_free(&a);
        rs_buf_free(&z);
        rs_buf_free(&ref);
        return 0;
    }
    FZ_CHECK(ra == rr, "rs_reader %s, zlib reference %s (%s)", ra ? "fails" : "succeeds",
             rr ? "fails" : "succeeds", ra ? ea.msg : "");
    if (ra == 0) {
        FZ_CHECK(fzgz_same(&a, &z), "AUTO and ZLIB decode differently (%zu vs %zu bytes)", a.len, z.len);
        FZ_CHECK(fzgz_same(&a, &ref), "rs_reader and zlib decode differently (%zu vs %zu bytes)", a.len, ref.len);
        if (is_gz) {
            int gfail;
            fzgz_read_gzread(&g, &gfail);
            FZ_CHECK(!gfail && fzgz_same(&a, &g), "gzread %s, %zu bytes vs %zu", gfail ? "fails" : "succeeds",
                     g.len, a.len);
        }
    } else {
        FZ_CHECK(is_gz || is_zst, "plain input rejected: %s", ea.msg);
        FZ_CHECK(ea.code == RS_EXIT_DATA && ez.code == RS_EXIT_DATA, "error codes %d and %d", ea.code, ez.code);
        FZ_CHECK(strstr(ea.msg, "offset") != NULL, "AUTO message without an offset: %s", ea.msg);
        FZ_CHECK(strstr(ez.msg, "offset") != NULL, "ZLIB message without an offset: %s", ez.msg);
        /* what was returned before the error is a prefix of zlib's output */
        size_t pa = a.len < ref.len ? a.len : ref.len, pz = z.len < ref.len ? z.len : ref.len;
        FZ_CHECK(pa == 0 || memcmp(a.data, ref.data, pa) == 0, "AUTO bytes before the error differ from zlib");
        FZ_CHECK(pz == 0 || memcmp(z.data, ref.data, pz) == 0, "ZLIB bytes before the error differ from zlib");
    }
    fzgz_check_units(data, size, ra == 0, &a);
    rs_buf_free(&a);
    rs_buf_free(&z);
    rs_buf_free(&ref);
    rs_buf_free(&g);
    return 0;
}

#endif
