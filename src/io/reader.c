/* io/reader.c - the input layer: a file or stdin, plain, (multi-member) gzip or zstd.
 *
 * Compressed input is read in large blocks (RS_READER_BLOCK) into one buffer;
 * the inflater writes straight into the caller's buffer. Plain input is read
 * straight into the caller's buffer when it is large, else through the block.
 *
 * gzip members are decoded by ISA-L (isal_inflate, raw deflate plus trailer
 * check; the header is parsed in reader_gzip.c) or zlib (inflate with
 * windowBits 15+16, which parses the header itself). After a member ends, the
 * next bytes must start another member (1f 8b) or be the end of the input,
 * or be zero bytes up to the end of the input: the padding tape and block
 * writers leave (gzip, zcat, pigz and igzip accept it too). Anything after a
 * zero byte but more zeros, another member included, is garbage.
 *
 * Offsets in messages are compressed (on-disk) byte offsets: "at byte offset N"
 * is where the problem was detected (for ISA-L this can be a few bytes past the
 * exact spot, because it reads ahead into a 64-bit bit buffer); the member's
 * start offset is given as well where it helps.
 *
 * zstd frames are decoded by libzstd's ZSTD_decompressStream, from the same
 * input block into the caller's buffer; the frame boundaries are found
 * here, so that skippable frames, padding and garbage are handled as for
 * gzip members and a message can give the failing frame's start offset
 * (libzstd does not say where inside a frame it found a fault).
 *
 * This file opens the input, detects its format, reads plain input and
 * judges what follows the last member or frame; gzip members are decoded
 * in reader_gzip.c, zstd frames in reader_zstd.c (their shared state:
 * reader_internal.h), and input units are listed in input_units.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "rs_config.h"
#include "ringshard/interrupt.h"
#include "ringshard/deflate.h"
#include "ringshard/hash.h"
#include "ringshard/reader.h"
#include "ringshard/testhook.h"
#include "io/io_internal.h"
#include "io/reader_internal.h"

/* Plain reads of at least this many bytes bypass the block buffer. */
#define RS_PLAIN_DIRECT (64u * 1024u)
/* Largest output handed to one inflate call (the libraries count in 32 bits). */
#define RS_MAX_CHUNK ((size_t)1 << 30)

ssize_t rs_rd_fail(rs_reader *r, rs_error *err, int code, const char *fmt, ...)
{
    if (r->err.code == 0) {
        va_list ap;
        va_start(ap, fmt);
        char tmp[sizeof r->err.msg];
        vsnprintf(tmp, sizeof tmp, fmt, ap);
        va_end(ap);
        rs_error_set(&r->err, code, "%s: %s", r->name, tmp);
    }
    rs_error_set(err, r->err.code, "%s", r->err.msg);
    return -1;
}

/* Hands the n bytes just read from fd at p to the tee, if any. 0, or -1
 * with the tee's error (sticky). */
static int tee_out(rs_reader *r, const void *p, size_t n, rs_error *err)
{
    if (!r->tee || n == 0 || r->tee(r->tee_ctx, p, n, &r->err) == 0)
        return 0;
    rs_error_set(err, r->err.code, "%s", r->err.msg);
    return -1;
}

/* Fails when the regular file being read is not what was opened: its size
 * or modification time differs from the fstat at open (truncated, grown or
 * rewritten in place during the run). Called where the input ends, so that
 * a cut file is not taken for a short one, nor its cut last record for a
 * whole one. 0, or -1 with err (RS_EXIT_IO). */
static int check_unchanged(rs_reader *r, rs_error *err)
{
    struct stat st;
    if (!r->regular)
        return 0;
    if (fstat(r->fd, &st) != 0) {
        int e = errno;
        return (int)rs_rd_fail(r, err, RS_EXIT_IO, "cannot stat: %s", strerror(e));
    }
    if ((uint64_t)st.st_size != r->size)
        return (int)rs_rd_fail(r, err, RS_EXIT_IO, "the file changed while it was read (size %llu at open, %llu now)",
                         (unsigned long long)r->size, (unsigned long long)st.st_size);
    if (st.st_mtim.tv_sec != r->mtime.tv_sec || st.st_mtim.tv_nsec != r->mtime.tv_nsec)
        return (int)rs_rd_fail(r, err, RS_EXIT_IO,
                         "the file changed while it was read (size %llu, but modified since it was opened)",
                         (unsigned long long)r->size);
    return 0;
}

/* The test hook (RINGSHARD_TEST_PAUSE_AT=first-read, ringshard/testhook.h):
 * the process stops itself after the first read of a named file, so that a
 * test can change the file at a known point and let it go on (SIGCONT). */
static void test_pause(rs_reader *r)
{
    if (r->pause) {
        r->pause = false;
        rs_test_pause("first-read");
    }
}

/* Waits until fd has data or the stop flag is raised. A pipe, FIFO or
 * terminal can block for ever; waiting on the flag's self-pipe too means a
 * signal that lands just before the read is not lost. Returns 0 (read now),
 * or -1 with errno EINTR (stop). */
static int wait_readable(int fd)
{
    int ifd = rs_interrupt_fd();
    if (ifd < 0)
        return 0;
    struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = ifd, .events = POLLIN}};
    for (;;) {
        if (poll(p, 2, -1) >= 0 || errno != EINTR || rs_interrupt_pending())
            break;
    }
    if (rs_interrupt_pending() || (p[1].revents & POLLIN)) {
        errno = EINTR;
        return -1;
    }
    return 0;   /* data, end of input or an error: read() tells which */
}

static ssize_t read_fd(int fd, bool may_block, void *buf, size_t n)
{
    if (n > RS_MAX_CHUNK)
        n = RS_MAX_CHUNK;
    for (;;) {
        if (may_block && wait_readable(fd) != 0)
            return -1;
        ssize_t k = read(fd, buf, n);
        /* A stop signal interrupts a read that may never return (a pipe
         * whose writer went quiet): give up, the caller checks the flag */
        if (k >= 0 || errno != EINTR || rs_interrupt_pending())
            return k;
    }
}

/* Appends up to one block of input after the unconsumed bytes (moving them to
 * the front). Sets eof at the end. Returns 0, or -1 (read error, err set). */
int rs_rd_fill(rs_reader *r, rs_error *err)
{
    if (r->eof)
        return 0;
    if (r->in == NULL) {
        r->in = r->in_next = malloc(r->in_cap);
        if (r->in == NULL)
            return (int)rs_rd_fail(r, err, RS_EXIT_IO, "out of memory for a read buffer of %zu bytes", r->in_cap);
    }
    if (r->in_avail > 0 && r->in_next != r->in)
        memmove(r->in, r->in_next, r->in_avail);
    r->in_next = r->in;
    if (r->in_avail == r->in_cap)
        return 0;
    size_t want = r->in_cap - r->in_avail;
    if (r->range_end - r->in_total < want)
        want = (size_t)(r->range_end - r->in_total);
    ssize_t k = want ? read_fd(r->fd, !r->regular, r->in + r->in_avail, want) : 0;
    if (k < 0) {
        int e = errno;
        rs_rd_fail(r, err, RS_EXIT_IO, "read error at byte offset %llu: %s",
             (unsigned long long)r->in_total, strerror(e));
        return -1;
    }
    if (want == 0 && r->expect_end) {
        /* the range is exhausted (once: eof is set below) */
        struct stat st;
        if (fstat(r->fd, &st) != 0) {
            int e = errno;
            rs_rd_fail(r, err, RS_EXIT_IO, "cannot stat: %s", strerror(e));
            return -1;
        }
        if ((uint64_t)st.st_size != r->range_end) {
            rs_rd_fail(r, err, RS_EXIT_IO,
                 "the file changed while it was read: its %s ended at byte offset %llu when they "
                 "were listed, and it now holds %llu bytes (written to during the run?)",
                 r->is_zstd ? "zstd frames" : "gzip members", (unsigned long long)r->range_end,
                 (unsigned long long)st.st_size);
            return -1;
        }
    }
    if (k == 0 && check_unchanged(r, err) != 0)
        return -1;
    if (k == 0)
        r->eof = true;
    else
        test_pause(r);
    if (r->sum_on && k > 0)
        r->sum = rs_crc64(r->sum, r->in + r->in_avail, (size_t)k);
    if (k > 0 && tee_out(r, r->in + r->in_avail, (size_t)k, err) != 0)
        return -1;
    r->in_avail += (size_t)k;
    r->in_total += (uint64_t)k;
    return 0;
}

/* Holds at least n unconsumed bytes, or all that is left before the end:
 * what a decision on the next bytes needs (a magic, a zstd frame header).
 * Grows a block smaller than n (tests use tiny ones). 0, or -1 (err set). */
int rs_rd_lookahead(rs_reader *r, size_t n, rs_error *err)
{
    if (r->in_cap < n && r->in != NULL) {
        size_t at = (size_t)(r->in_next - r->in);
        unsigned char *p = realloc(r->in, n);
        if (p == NULL)
            return (int)rs_rd_fail(r, err, RS_EXIT_IO, "out of memory for a read buffer of %zu bytes", n);
        r->in = p;
        r->in_next = p + at;
    }
    if (r->in_cap < n)
        r->in_cap = n;
    while (r->in_avail < n && !r->eof)
        if (rs_rd_fill(r, err) != 0)
            return -1;
    return 0;
}

const char *rs_input_label(const char *path)
{
    return strcmp(path, "-") ? path : "standard input";
}

rs_reader *rs_reader_openat(int dirfd, const char *name, const char *display, rs_codec_choice codec,
                            rs_error *err)
{
    if (display == NULL)
        display = name;
    rs_reader *r = calloc(1, sizeof *r);
    if (r == NULL) {
        rs_error_set(err, RS_EXIT_IO, "%s: out of memory", display);
        return NULL;
    }
    bool is_stdin = dirfd == AT_FDCWD && strcmp(name, "-") == 0;
    r->name = strdup(is_stdin ? rs_input_label("-") : display);
    r->in_cap = RS_READER_BLOCK;   /* allocated by the first fill: a reader opened to be sized or
                                      * given another block size never pays for this one */
    if (r->name == NULL) {
        rs_error_set(err, RS_EXIT_IO, "%s: out of memory", display);
        goto fail;
    }
    r->range_end = UINT64_MAX;
#if RS_HAVE_ISAL
    r->use_isal = codec == RS_CODEC_AUTO;
#else
    (void)codec;
#endif
    if (is_stdin) {
        r->fd = STDIN_FILENO;
    } else {
        r->fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
        if (r->fd < 0) {
            rs_error_set(err, RS_EXIT_IO, "%s: cannot open: %s", display, strerror(errno));
            goto fail;
        }
        r->own_fd = true;
        r->pause = true;
    }
    struct stat st;
    if (fstat(r->fd, &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            rs_error_set(err, RS_EXIT_IO, "%s: cannot read: is a directory", r->name);
            goto fail;
        }
        if (S_ISREG(st.st_mode)) {
            r->size = (uint64_t)st.st_size;
            r->regular = true;
            r->mtime = st.st_mtim;
            (void)posix_fadvise(r->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
        }
    }
    return r;
fail:
    rs_reader_close(r);
    return NULL;
}

int rs_file_content(int dirfd, const char *name, const char *display, rs_codec_choice codec, uint64_t *crc,
                    uint64_t *size, rs_error *err)
{
    rs_reader *r = rs_reader_openat(dirfd, name, display ? display : name, codec, err);
    if (!r)
        return -1;
    rs_reader_checksum_on(r);
    size_t cap = (size_t)1 << 20;
    unsigned char *buf = malloc(cap);
    ssize_t n = buf ? 1 : rs_error_set(err, RS_EXIT_IO, "%s: out of memory", display ? display : name);
    while (n > 0) {
        if (rs_interrupt_pending()) {
            n = rs_error_set(err, RS_EXIT_INTERRUPTED, "interrupted");
            break;
        }
        n = rs_reader_read(r, buf, cap, err);
    }
    int known = n == 0 && rs_reader_content(r, crc, size);
    free(buf);
    rs_reader_close(r);
    return n == 0 ? known : -1;
}

int rs_file_content_size_hint(int dirfd, const char *name, uint64_t *size, int *mod32)
{
    unsigned char head[18], tail[4];
    struct stat st;
    int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC), ok = 0;
    if (fd < 0)
        return 0;
    ssize_t h = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? pread(fd, head, sizeof head, 0) : -1;
    *mod32 = 0;
    if (h >= 2 && head[0] == 0x1f && head[1] == 0x8b) {
        if (st.st_size >= 18 && pread(fd, tail, 4, st.st_size - 4) == 4) {
            *size = (uint64_t)tail[0] | (uint64_t)tail[1] << 8 | (uint64_t)tail[2] << 16 | (uint64_t)tail[3] << 24;
            *mod32 = ok = 1;
        }
    } else if (h >= 4 && head[0] == 0x28 && head[1] == 0xb5 && head[2] == 0x2f && head[3] == 0xfd) {
#if RS_HAVE_ZSTD
        unsigned long long c = ZSTD_getFrameContentSize(head, (size_t)h);
        if (c != ZSTD_CONTENTSIZE_UNKNOWN && c != ZSTD_CONTENTSIZE_ERROR)
            *size = c, ok = 1;
#endif
    } else if (h >= 0) {
        *size = (uint64_t)st.st_size, ok = 1;
    }
    close(fd);
    return ok;
}

int rs_file_checksum(int dirfd, const char *name, const char *display, uint64_t *crc, uint64_t *size, rs_error *err)
{
    if (display == NULL)
        display = name;
    int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return rs_error_set(err, RS_EXIT_IO, "%s: cannot open: %s", display, strerror(errno));
    struct stat before, after;
    size_t cap = (size_t)1 << 20;
    unsigned char *buf = malloc(cap);
    int rc = -1;
    if (!buf) {
        rs_error_set(err, RS_EXIT_IO, "%s: out of memory", display);
        goto out;
    }
    if (fstat(fd, &before) != 0 || !S_ISREG(before.st_mode)) {
        rs_error_set(err, RS_EXIT_IO, "%s: %s", display, S_ISREG(before.st_mode) ? strerror(errno) : "not a regular file");
        goto out;
    }
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    uint64_t c = 0, n = 0;
    for (;;) {
        ssize_t k = read_fd(fd, false, buf, cap);
        if (k < 0) {
            rs_error_set(err, RS_EXIT_IO, "%s: read error at byte offset %llu: %s", display, (unsigned long long)n,
                         strerror(errno));
            goto out;
        }
        if (k == 0)
            break;
        c = rs_crc64(c, buf, (size_t)k);
        n += (uint64_t)k;
        if (rs_interrupt_pending()) {
            rs_error_set(err, RS_EXIT_INTERRUPTED, "interrupted");
            goto out;
        }
    }
    if (fstat(fd, &after) != 0 || (uint64_t)after.st_size != n || after.st_mtim.tv_sec != before.st_mtim.tv_sec ||
        after.st_mtim.tv_nsec != before.st_mtim.tv_nsec) {
        rs_error_set(err, RS_EXIT_IO, "%s: the file changed while it was read (size %llu at open, %llu read)", display,
                     (unsigned long long)before.st_size, (unsigned long long)n);
        goto out;
    }
    *crc = c;
    *size = n;
    rc = 0;
out:
    free(buf);
    close(fd);
    return rc;
}

void rs_reader_tee(rs_reader *r, rs_reader_tee_fn fn, void *ctx)
{
    r->tee = fn;
    r->tee_ctx = ctx;
}

void rs_reader_checksum_on(rs_reader *r)
{
    r->sum_on = true;
    r->sum_broken |= r->in_total != 0;
    r->content_late |= r->started;
}

int rs_reader_checksum(const rs_reader *r, uint64_t *crc)
{
    if (!r->sum_on || r->sum_broken || r->range_start != 0 || r->range_end != UINT64_MAX || !r->eof)
        return 0;
    *crc = r->sum;
    return 1;
}

int rs_reader_content(const rs_reader *r, uint64_t *crc, uint64_t *size)
{
    if (!r->is_gzip && !r->is_zstd) {   /* plain: the content is the stored bytes */
        if (!rs_reader_checksum(r, crc))
            return 0;
        *size = r->in_total;
        return 1;
    }
    /* every member or frame decoded to the clean end, of the file or of
     * the range: a range's is its part of the file's content, which the
     * caller combines with the other ranges' (rs_crc64_combine), so that a
     * file has one content sum whoever reads it, whole or in units */
    if (!r->sum_on || r->content_late || !r->finished)
        return 0;
    *crc = r->content, *size = r->content_size;
    return 1;
}

rs_reader *rs_reader_open(const char *path, rs_codec_choice codec, rs_error *err)
{
    return rs_reader_openat(AT_FDCWD, path, path, codec, err);
}

rs_reader *rs_reader_openat_range(int dirfd, const char *name, const char *display, rs_codec_choice codec,
                                  uint64_t offset, uint64_t length, rs_error *err)
{
    rs_reader *r = rs_reader_openat(dirfd, name, display, codec, err);
    if (r == NULL)
        return NULL;
    if (offset > 0 && lseek(r->fd, (off_t)offset, SEEK_SET) != (off_t)offset) {
        rs_error_set(err, RS_EXIT_IO, "%s: cannot seek to byte offset %llu: %s", r->name,
                     (unsigned long long)offset, strerror(errno));
        rs_reader_close(r);
        return NULL;
    }
    r->in_total = r->range_start = r->member_start = offset;
    r->range_end = offset + length;
    return r;
}

rs_reader *rs_reader_open_range(const char *path, rs_codec_choice codec, uint64_t offset, uint64_t length,
                                rs_error *err)
{
    return rs_reader_openat_range(AT_FDCWD, path, path, codec, offset, length, err);
}

void rs_reader_expect_file_end(rs_reader *r)
{
    r->expect_end = r->range_end != UINT64_MAX;
}

int rs_reader_set_block_size(rs_reader *r, size_t block)
{
    if (r->started || r->in_total != r->range_start || block < 2)
        return -1;
    if (r->in == NULL) {
        r->in_cap = block;
        return 0;
    }
    unsigned char *p = realloc(r->in, block);
    if (p == NULL)
        return -1;
    r->in = r->in_next = p;
    r->in_cap = block;
    return 0;
}

/* ---- reading ----------------------------------------------------------- */

/* The suffix among `suffixes` the name ends with (any case), or NULL. */
static const char *named_as(const char *name, const char *const *suffixes, size_t ns)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < ns; i++) {
        size_t k = strlen(suffixes[i]);
        if (n > k && strcasecmp(name + n - k, suffixes[i]) == 0)
            return name + n - k;  /* as the user wrote it: ".GZ" */
    }
    return NULL;
}

/* The gzip suffix the name ends with (".gz", ".gzip", ".tgz", any case), or NULL. */
static const char *named_gzip(const char *name)
{
    static const char *const suffixes[] = {".gz", ".gzip", ".tgz"};
    return named_as(name, suffixes, sizeof suffixes / sizeof suffixes[0]);
}

/* The zstd suffix the name ends with (".zst", ".zstd", any case), or NULL. */
static const char *named_zstd(const char *name)
{
    static const char *const suffixes[] = {".zst", ".zstd"};
    return named_as(name, suffixes, sizeof suffixes / sizeof suffixes[0]);
}

/* Fails on a file that its name says is compressed (gzip or zstd) but
 * that does not start with that codec's magic. */
static int misnamed(rs_reader *r, const char *suffix, const char *codec, const char *magic, const char *piece,
                    const char *other, rs_error *err)
{
    if (r->in_avail == 0)
        return (int)rs_rd_fail(r, err, RS_EXIT_DATA,
                         "empty file (named %s, but holds no %s: end of file at byte offset 0)", suffix, piece);
    char held[40];
    size_t k = r->in_avail < (size_t)(strlen(magic) + 1) / 3 ? r->in_avail : (strlen(magic) + 1) / 3;
    int w = 0;
    for (size_t i = 0; i < k; i++)
        w += snprintf(held + w, sizeof held - (size_t)w, "%s0x%02x", i ? " " : "", r->in_next[i]);
    return (int)rs_rd_fail(r, err, RS_EXIT_DATA, "not %s data (named %s, but byte offset 0 holds %s%s, not the %s magic %s%s%s)%s",
                     codec, suffix, held, r->eof && r->in_avail == k && k < (strlen(magic) + 1) / 3
                         ? " and then the file ends" : "", codec, magic, other ? ": " : "", other ? other : "",
                     rs_inner_format(r->in_next, r->in_avail, 0));
}

static int detect(rs_reader *r, rs_error *err)
{
    /* enough for every magic number: ranges start at a gzip member or
     * zstd frame, which the first four bytes tell */
    if (rs_rd_lookahead(r, r->range_start ? 4 : RS_MAGIC_LOOK, err) != 0)
        return -1;
    r->started = true;
    r->is_gzip = r->in_avail >= 2 && r->in_next[0] == 0x1f && r->in_next[1] == 0x8b;
    r->is_zstd = !r->is_gzip && r->in_avail >= 4 && rs_rd_zstd_magic(r->in_next);
    r->piece = r->is_zstd ? "zstd frame" : "gzip member";
    const char *advice = NULL;
    const char *foreign = r->is_gzip || r->is_zstd ? NULL : rs_foreign_format(r->in_next, r->in_avail, &advice);
    char other[80];
    if (foreign)
        snprintf(other, sizeof other, "it is %s data", foreign);
    /* The name promises a codec: plain bytes (or none) are a mistake, not
     * CSV, and so is the other codec (a mislabelled file: zcat and zstd -d
     * refuse it too). */
    const char *gz = named_gzip(r->name), *zs = named_zstd(r->name);
    if (gz && !r->is_gzip)
        return misnamed(r, gz, "gzip", "1f 8b", "gzip member",
                        r->is_zstd ? "it is zstd data" : foreign ? other : NULL, err);
    if (zs && !r->is_zstd)
        return misnamed(r, zs, "zstd", "28 b5 2f fd", "zstd frame",
                        r->is_gzip ? "it is gzip data" : foreign ? other : NULL, err);
    /* Any other format known by its magic number is refused by name (the
     * content decides, whatever the name): read as CSV, its bytes would
     * make rows of garbage. */
    if (foreign)
        return (int)rs_rd_fail(r, err, RS_EXIT_DATA, "%s input is not supported: %s", foreign, advice);
    if (r->is_gzip)
        return rs_rd_gzip_init(r, err);
    if (r->is_zstd)
        return rs_rd_zstd_init(r, err);
    return 0;
}

static ssize_t read_plain(rs_reader *r, unsigned char *buf, size_t cap, rs_error *err)
{
    if (r->in_avail == 0 && !r->eof) {
        if (cap >= RS_PLAIN_DIRECT && r->range_end == UINT64_MAX) {
            ssize_t k = read_fd(r->fd, !r->regular, buf, cap);
            if (k < 0) {
                int e = errno;
                return rs_rd_fail(r, err, RS_EXIT_IO, "read error at byte offset %llu: %s",
                            (unsigned long long)r->in_total, strerror(e));
            }
            if (k == 0 && check_unchanged(r, err) != 0)
                return -1;
            if (k == 0)
                r->eof = true;
            else
                test_pause(r);
            if (r->sum_on && k > 0)
                r->sum = rs_crc64(r->sum, buf, (size_t)k);
            if (k > 0 && tee_out(r, buf, (size_t)k, err) != 0)
                return -1;
            r->in_total += (uint64_t)k;
            return k;
        }
        if (rs_rd_fill(r, err) != 0)
            return -1;
    }
    size_t n = r->in_avail < cap ? r->in_avail : cap;
    memcpy(buf, r->in_next, n);
    r->in_next += n;
    r->in_avail -= n;
    return (ssize_t)n;
}

/* Fails on bytes after a member that start neither a member nor padding,
 * saying how many there are up to the end of the input ("at least" what is
 * held when the end is unknown: a pipe). */
ssize_t rs_rd_garbage(rs_reader *r, rs_error *err)
{
    if (check_unchanged(r, err) != 0)   /* bytes appended during the run: the file changed, exit 1 */
        return -1;
    uint64_t at = rs_rd_consumed(r), end = r->size && r->range_end > r->size ? r->size : r->range_end;
    int known = end != UINT64_MAX && end >= at;
    uint64_t n = known ? end - at : r->in_avail;
    return rs_rd_fail(r, err, RS_EXIT_DATA, "garbage after %s at byte offset %llu (%s%llu trailing byte%s that %s "
                "not start a %s)", r->piece, (unsigned long long)at, known ? "" : "at least ", (unsigned long long)n,
                n == 1 ? "" : "s", n == 1 ? "does" : "do", r->piece);
}

/* Consumes zero bytes after the last member. 0 when every byte held was
 * zero (more may follow); -1 (err set) at a non-zero byte: zero padding
 * must run to the end of the input. */
static int skip_padding(rs_reader *r, rs_error *err)
{
    if (!r->padding)
        r->pad_start = rs_rd_consumed(r);
    r->padding = true;
    size_t k = 0;
    while (k < r->in_avail && r->in_next[k] == 0)
        k++;
    r->in_next += k;
    r->in_avail -= k;
    r->zero_padding += k;
    if (r->in_avail == 0)
        return 0;
    if (check_unchanged(r, err) != 0)   /* as in rs_rd_garbage() */
        return -1;
    return (int)rs_rd_fail(r, err, RS_EXIT_DATA,
                     "garbage after %s at byte offset %llu (%llu zero byte%s, then byte 0x%02x at byte "
                     "offset %llu: only zero bytes may follow the last %s, up to the end of the file)",
                     r->piece, (unsigned long long)r->pad_start, (unsigned long long)r->zero_padding,
                     r->zero_padding == 1 ? "" : "s", r->in_next[0], (unsigned long long)rs_rd_consumed(r),
                     r->is_zstd ? "frame" : "member");
}

/* After a member or frame, with the bytes that decide held: 0 at the clean
 * end (finished set), 2 after consuming zero padding (look again), 3 when
 * the next bytes must start a member or frame; -1 when padding is
 * followed by anything but zeros (err set). */
int rs_rd_after_piece(rs_reader *r, rs_error *err)
{
    if (r->in_avail == 0) {
        r->finished = true;
        return 0;
    }
    if (r->padding || r->in_next[0] == 0)
        return skip_padding(r, err) != 0 ? -1 : 2;
    return 3;
}

ssize_t rs_reader_read(rs_reader *r, void *buf, size_t cap, rs_error *err)
{
    if (r->err.code != 0) {
        rs_error_set(err, r->err.code, "%s", r->err.msg);
        return -1;
    }
    if (cap == 0 || r->finished)
        return 0;
    if (cap > RS_MAX_CHUNK)
        cap = RS_MAX_CHUNK;
    if (!r->started && detect(r, err) != 0)
        return -1;
    if (!r->is_zstd && !r->is_gzip)
        return read_plain(r, buf, cap, err);
    ssize_t n = r->is_zstd ? rs_rd_read_zstd(r, buf, cap, err) : rs_rd_read_gzip(r, buf, cap, err);
    if (n > 0 && r->sum_on) {  /* ISA-L's CRC-64 folds over 10 GB/s: a fraction of inflate's time */
        r->content = rs_crc64(r->content, buf, (size_t)n);
        r->content_size += (uint64_t)n;
    }
    return n;
}

uint64_t rs_reader_consumed(const rs_reader *r)
{
    return rs_rd_consumed(r) - r->range_start;
}

uint64_t rs_reader_size(const rs_reader *r)
{
    return r->size;
}

int rs_reader_is_gzip(const rs_reader *r)
{
    return r->is_gzip;
}

int rs_reader_is_zstd(const rs_reader *r)
{
    return r->is_zstd;
}

uint64_t rs_reader_zero_padding(const rs_reader *r)
{
    return r->zero_padding;
}

void rs_reader_close(rs_reader *r)
{
    if (r == NULL)
        return;
    if (r->own_fd && r->fd >= 0)
        close(r->fd);
    if (r->zs_live)
        inflateEnd(&r->zs);
#if RS_HAVE_ZSTD
    ZSTD_freeDCtx(r->zd);
#endif
#if RS_HAVE_ISAL
    free(r->isal);
#endif
    free(r->in);
    free(r->name);
    free(r);
}

