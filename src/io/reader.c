/* io/reader.c - the input layer: a file or stdin, plain, (multi-member) gzip or zstd.
 *
 * Compressed input is read in large blocks (RS_READER_BLOCK) into one buffer;
 * the inflater writes straight into the caller's buffer. Plain input is read
 * straight into the caller's buffer when it is large, else through the block.
 *
 * gzip members are decoded by ISA-L (isal_inflate, raw deflate plus trailer
 * check; the header is parsed here, see decoder_init) or zlib (inflate with
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
 * (libzstd does not say where inside a frame it found a fault). */
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

#if RS_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#endif
#if RS_HAVE_ZSTD
#include <zstd.h>
#include <zstd_errors.h>
#endif

/* Plain reads of at least this many bytes bypass the block buffer. */
#define RS_PLAIN_DIRECT (64u * 1024u)
/* Largest output handed to one inflate call (the libraries count in 32 bits). */
#define RS_MAX_CHUNK ((size_t)1 << 30)

struct rs_reader {
    int fd;
    bool own_fd;
    char *name;              /* for messages */
    bool use_isal;
    uint64_t size;           /* regular files: st_size; else 0 */
    bool regular;            /* a regular file: checked for change at its end */
    struct timespec mtime;   /* its st_mtim at open */
    bool pause;              /* RINGSHARD_TEST_PAUSE_AT=first-read: stop after the first read */
    bool sum_on;             /* rs_reader_checksum_on: every byte read from fd is summed */
    bool sum_broken;         /* a byte was read before the sum was turned on */
    uint64_t sum;            /* rs_crc64 of the bytes read from fd so far */
    uint64_t content;        /* with sum_on, compressed input: rs_crc64 of the bytes returned */
    uint64_t content_size;   /* the bytes returned so far */
    bool content_late;       /* sum_on came after the first read: content is not all of them */
    rs_reader_tee_fn tee;    /* rs_reader_tee: every block read from fd goes to it */
    void *tee_ctx;

    unsigned char *in;       /* the block buffer */
    size_t in_cap;
    unsigned char *in_next;  /* unconsumed input */
    size_t in_avail;
    uint64_t in_total;       /* file offset after the bytes read from fd so far */
    uint64_t range_start;    /* rs_reader_open_range: the range's first byte, else 0 */
    uint64_t range_end;      /* the range's end, or UINT64_MAX (read to EOF) */
    bool expect_end;         /* the file must end at range_end (rs_reader_expect_file_end) */
    bool eof;

    bool started;            /* format detected */
    bool is_gzip;
    bool is_zstd;
    const char *piece;       /* "gzip member" or "zstd frame", for messages */
    bool member_done;        /* the current member ended; next: member, end or garbage */
    bool padding;            /* in zero bytes after the last member */
    uint64_t zero_padding;   /* how many so far */
    uint64_t pad_start;      /* the offset of the first */
    bool finished;           /* clean end of input reached */
    uint64_t member_start;   /* compressed offset of the current member */

    /* Our own gzip header parser, for ISA-L (see decoder_init). */
    bool in_header;          /* parsing the current member's header */
    int hstate;              /* H_* */
    uint8_t hflg;
    uint8_t hfixed[10];
    uint32_t hneed;          /* bytes still to take in this state */
    uint32_t hcrc;           /* CRC-32 of the header so far (for FHCRC) */

    rs_error err;            /* sticky */

    bool zs_live;
    z_stream zs;
    uint64_t skip_left;      /* zstd: bytes of the current skippable frame still to skip */
    bool in_skip;            /* zstd: inside a skippable frame */
#if RS_HAVE_ZSTD
    ZSTD_DCtx *zd;
    unsigned long long zfcs; /* the frame's declared content size, or ZSTD_CONTENTSIZE_UNKNOWN */
    uint64_t zout;           /* bytes the frame has decoded to so far */
#endif
#if RS_HAVE_ISAL
    struct inflate_state *isal;
#endif
};

static uint64_t consumed(const rs_reader *r)
{
    return r->in_total - r->in_avail;
}

/* Fails the reader (sticky) and reports the error to err. */
static ssize_t fail(rs_reader *r, rs_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static ssize_t fail(rs_reader *r, rs_error *err, int code, const char *fmt, ...)
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
        return (int)fail(r, err, RS_EXIT_IO, "cannot stat: %s", strerror(e));
    }
    if ((uint64_t)st.st_size != r->size)
        return (int)fail(r, err, RS_EXIT_IO, "the file changed while it was read (size %llu at open, %llu now)",
                         (unsigned long long)r->size, (unsigned long long)st.st_size);
    if (st.st_mtim.tv_sec != r->mtime.tv_sec || st.st_mtim.tv_nsec != r->mtime.tv_nsec)
        return (int)fail(r, err, RS_EXIT_IO,
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
static int fill(rs_reader *r, rs_error *err)
{
    if (r->eof)
        return 0;
    if (r->in == NULL) {
        r->in = r->in_next = malloc(r->in_cap);
        if (r->in == NULL)
            return (int)fail(r, err, RS_EXIT_IO, "out of memory for a read buffer of %zu bytes", r->in_cap);
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
        fail(r, err, RS_EXIT_IO, "read error at byte offset %llu: %s",
             (unsigned long long)r->in_total, strerror(e));
        return -1;
    }
    if (want == 0 && r->expect_end) {
        /* the range is exhausted (once: eof is set below) */
        struct stat st;
        if (fstat(r->fd, &st) != 0) {
            int e = errno;
            fail(r, err, RS_EXIT_IO, "cannot stat: %s", strerror(e));
            return -1;
        }
        if ((uint64_t)st.st_size != r->range_end) {
            fail(r, err, RS_EXIT_IO,
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
static int lookahead(rs_reader *r, size_t n, rs_error *err)
{
    if (r->in_cap < n && r->in != NULL) {
        size_t at = (size_t)(r->in_next - r->in);
        unsigned char *p = realloc(r->in, n);
        if (p == NULL)
            return (int)fail(r, err, RS_EXIT_IO, "out of memory for a read buffer of %zu bytes", n);
        r->in = p;
        r->in_next = p + at;
    }
    if (r->in_cap < n)
        r->in_cap = n;
    while (r->in_avail < n && !r->eof)
        if (fill(r, err) != 0)
            return -1;
    return 0;
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
    r->name = strdup(is_stdin ? "(standard input)" : display);
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

/* ---- gzip header (RFC 1952), incremental ------------------------------- */
#if RS_HAVE_ISAL

enum { H_FIXED, H_XLEN, H_EXTRA, H_NAME, H_COMMENT, H_HCRC, H_DONE };
enum { F_TEXT = 1, F_HCRC = 2, F_EXTRA = 4, F_NAME = 8, F_COMMENT = 16 };

static void header_start(rs_reader *r)
{
    r->in_header = true;
    r->hstate = H_FIXED;
    r->hneed = 10;
    r->hcrc = (uint32_t)crc32(0, NULL, 0);
}

/* The state after `st` given the flags (skipping absent fields). */
static void header_next(rs_reader *r, int st)
{
    uint8_t f = r->hflg;
    if (st < H_XLEN && (f & F_EXTRA)) {
        r->hstate = H_XLEN;
        r->hneed = 2;
    } else if (st < H_NAME && (f & F_NAME)) {
        r->hstate = H_NAME;
    } else if (st < H_COMMENT && (f & F_COMMENT)) {
        r->hstate = H_COMMENT;
    } else if (st < H_HCRC && (f & F_HCRC)) {
        r->hstate = H_HCRC;
        r->hneed = 2;
    } else {
        r->hstate = H_DONE;
    }
}

/* Consumes header bytes from the input. Returns 1 when the header is complete,
 * 0 when more input is needed, -1 on a bad header (err set). */
static int header_parse(rs_reader *r, rs_error *err)
{
    while (r->hstate != H_DONE && r->in_avail > 0) {
        const unsigned char *p = r->in_next;
        size_t n = r->in_avail, take;
        switch (r->hstate) {
        case H_FIXED:
        case H_XLEN:
        case H_HCRC: {
            take = n < r->hneed ? n : r->hneed;
            size_t have = (r->hstate == H_FIXED ? 10u : 2u) - r->hneed;
            memcpy(r->hfixed + have, p, take);
            r->hneed -= (uint32_t)take;
            if (r->hstate != H_HCRC)
                r->hcrc = (uint32_t)crc32(r->hcrc, p, (uInt)take);
            break;
        }
        case H_EXTRA:
            take = n < r->hneed ? n : r->hneed;
            r->hcrc = (uint32_t)crc32(r->hcrc, p, (uInt)take);
            r->hneed -= (uint32_t)take;
            break;
        default: { /* H_NAME, H_COMMENT: up to and including a NUL */
            const unsigned char *z = memchr(p, 0, n);
            take = z ? (size_t)(z - p) + 1 : n;
            r->hcrc = (uint32_t)crc32(r->hcrc, p, (uInt)take);
            r->hneed = z ? 0 : 1;
            break;
        }
        }
        r->in_next += take;
        r->in_avail -= take;
        if (r->hneed != 0)
            continue;
        unsigned long long ms = (unsigned long long)r->member_start;
        switch (r->hstate) {
        case H_FIXED:
            if (r->hfixed[0] != 0x1f || r->hfixed[1] != 0x8b)
                return (int)fail(r, err, RS_EXIT_DATA,
                                 "invalid gzip header (bad magic) in member starting at byte "
                                 "offset %llu", ms);
            if (r->hfixed[2] != 8)
                return (int)fail(r, err, RS_EXIT_DATA,
                                 "invalid gzip header (unknown compression method %u) in "
                                 "member starting at byte offset %llu", r->hfixed[2], ms);
            if (r->hfixed[3] & 0xe0)
                return (int)fail(r, err, RS_EXIT_DATA,
                                 "invalid gzip header (reserved flags set) in member starting "
                                 "at byte offset %llu", ms);
            r->hflg = r->hfixed[3];
            header_next(r, H_FIXED);
            break;
        case H_XLEN:
            r->hneed = (uint32_t)r->hfixed[0] | (uint32_t)r->hfixed[1] << 8;
            r->hstate = H_EXTRA;
            if (r->hneed == 0)
                header_next(r, H_EXTRA);
            break;
        case H_HCRC:
            if (((uint32_t)r->hfixed[0] | (uint32_t)r->hfixed[1] << 8) != (r->hcrc & 0xffff))
                return (int)fail(r, err, RS_EXIT_DATA,
                                 "gzip header CRC mismatch in member starting at byte offset "
                                 "%llu", ms);
            header_next(r, H_HCRC);
            break;
        default:
            header_next(r, r->hstate);
            break;
        }
    }
    if (r->hstate != H_DONE)
        return 0;
    r->in_header = false;
    return 1;
}
#else
static int header_parse(rs_reader *r, rs_error *err)
{
    (void)r, (void)err;
    return 1;  /* never called: zlib parses the header */
}
#endif

/* ---- decoders ---------------------------------------------------------- */

static int decoder_init(rs_reader *r, rs_error *err)
{
#if RS_HAVE_ISAL
    if (r->use_isal) {
        /* calloc, not malloc: isal_inflate_init leaves fields such as
         * hist_bits untouched, and garbage there breaks decoding. */
        r->isal = calloc(1, sizeof *r->isal);
        if (r->isal == NULL)
            return (int)fail(r, err, RS_EXIT_IO, "out of memory");
        isal_inflate_init(r->isal);
        r->isal->hist_bits = 0;  /* the full 32 KiB window */
        /* We parse the gzip header ourselves and let ISA-L decode the deflate
         * data and verify the trailer (CRC-32 and ISIZE). ISA-L 2.30's own
         * header parsing (crc_flag ISAL_GZIP) reads uninitialised stack
         * memory when a header with FNAME is split across input buffers (and
         * fails on FEXTRA+FNAME+FCOMMENT+FHCRC headers): valgrind shows it. */
        r->isal->crc_flag = ISAL_GZIP_NO_HDR_VER;
        header_start(r);
        return 0;
    }
#endif
    memset(&r->zs, 0, sizeof r->zs);
    if (inflateInit2(&r->zs, 15 + 16) != Z_OK)
        return (int)fail(r, err, RS_EXIT_IO, "out of memory (zlib inflateInit2)");
    r->zs_live = true;
    return 0;
}

static void decoder_reset(rs_reader *r)
{
#if RS_HAVE_ISAL
    if (r->use_isal) {
        /* reset keeps crc_flag (set it anyway: with ISAL_GZIP, isal_inflate
         * rewrites it after the header, a trap for multi-member input). */
        isal_inflate_reset(r->isal);
        r->isal->crc_flag = ISAL_GZIP_NO_HDR_VER;
        header_start(r);
        return;
    }
#endif
    inflateReset(&r->zs);
}

/* One decoder call: input from in_next/in_avail, output to buf (cap <= 1 GiB).
 * Returns bytes produced, or -1 (err set). Sets member_done at a member's end. */
static ssize_t decode(rs_reader *r, unsigned char *buf, size_t cap, rs_error *err)
{
#if RS_HAVE_ISAL
    if (r->use_isal) {
        struct inflate_state *s = r->isal;
        s->next_in = r->in_next;
        s->avail_in = (uint32_t)(r->in_avail > UINT32_MAX ? UINT32_MAX : r->in_avail);
        size_t held = r->in_avail - s->avail_in;
        s->next_out = buf;
        s->avail_out = (uint32_t)cap;
        int ret = isal_inflate(s);
        r->in_next = s->next_in;
        r->in_avail = s->avail_in + held;
        size_t produced = (size_t)(s->next_out - buf);
        unsigned long long at = (unsigned long long)consumed(r);
        unsigned long long ms = (unsigned long long)r->member_start;
        switch (ret) {
        case ISAL_DECOMP_OK:
        case ISAL_END_INPUT:
        case ISAL_OUT_OVERFLOW:
            break;
        case ISAL_INCORRECT_CHECKSUM:
            return fail(r, err, RS_EXIT_DATA,
                        "CRC-32 or length (ISIZE) mismatch in gzip member starting at byte "
                        "offset %llu (detected at byte offset %llu)", ms, at);
        case ISAL_INVALID_WRAPPER:
        case ISAL_UNSUPPORTED_METHOD:
            return fail(r, err, RS_EXIT_DATA,
                        "invalid gzip header in member starting at byte offset %llu", ms);
        case ISAL_INVALID_BLOCK:
        case ISAL_INVALID_SYMBOL:
        case ISAL_INVALID_LOOKBACK:
            return fail(r, err, RS_EXIT_DATA,
                        "corrupt deflate data (%s) at byte offset %llu in gzip member starting "
                        "at byte offset %llu",
                        ret == ISAL_INVALID_BLOCK    ? "invalid block"
                        : ret == ISAL_INVALID_SYMBOL ? "invalid symbol"
                                                     : "invalid distance",
                        at, ms);
        default:
            return fail(r, err, RS_EXIT_DATA,
                        "corrupt gzip data (ISA-L error %d) at byte offset %llu in member "
                        "starting at byte offset %llu", ret, at, ms);
        }
        if (s->block_state == ISAL_BLOCK_FINISH)
            r->member_done = true;
        return (ssize_t)produced;
    }
#endif
    z_stream *z = &r->zs;
    z->next_in = r->in_next;
    z->avail_in = (uInt)(r->in_avail > UINT_MAX ? UINT_MAX : r->in_avail);
    size_t held = r->in_avail - z->avail_in;
    z->next_out = buf;
    z->avail_out = (uInt)cap;
    int ret = inflate(z, Z_NO_FLUSH);
    r->in_next = z->next_in;
    r->in_avail = z->avail_in + held;
    size_t produced = (size_t)(z->next_out - buf);
    unsigned long long at = (unsigned long long)consumed(r);
    unsigned long long ms = (unsigned long long)r->member_start;
    switch (ret) {
    case Z_OK:
    case Z_BUF_ERROR: /* no progress possible: more input is needed */
        return (ssize_t)produced;
    case Z_STREAM_END:
        r->member_done = true;
        return (ssize_t)produced;
    case Z_MEM_ERROR:
        return fail(r, err, RS_EXIT_IO, "out of memory (zlib inflate)");
    default:
        break;
    }
    const char *m = z->msg ? z->msg : "unknown error";
    if (strcmp(m, "incorrect data check") == 0)
        return fail(r, err, RS_EXIT_DATA,
                    "CRC-32 mismatch in gzip member starting at byte offset %llu "
                    "(detected at byte offset %llu)", ms, at);
    if (strcmp(m, "incorrect length check") == 0)
        return fail(r, err, RS_EXIT_DATA,
                    "length (ISIZE) mismatch in gzip member starting at byte offset %llu "
                    "(detected at byte offset %llu)", ms, at);
    return fail(r, err, RS_EXIT_DATA,
                "corrupt gzip data (%s) at byte offset %llu in member starting at byte "
                "offset %llu", m, at, ms);
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

/* zstd frame magics, as the first 4 bytes (little-endian) of a frame. */
#define RS_ZSTD_MAGIC 0xFD2FB528u
#define RS_ZSTD_SKIP_MASK 0xFFFFFFF0u
#define RS_ZSTD_SKIP_MAGIC 0x184D2A50u

/* 1 when p (4 bytes) starts a zstd frame or a skippable frame. */
static int zstd_magic(const unsigned char *p)
{
    uint32_t m = (uint32_t)rs_get_le(p, 4);
    return m == RS_ZSTD_MAGIC || (m & RS_ZSTD_SKIP_MASK) == RS_ZSTD_SKIP_MAGIC;
}

static int zstd_init(rs_reader *r, rs_error *err)
{
#if RS_HAVE_ZSTD
    r->zd = ZSTD_createDCtx();
    if (r->zd == NULL)
        return (int)fail(r, err, RS_EXIT_IO, "out of memory (ZSTD_createDCtx)");
    /* 27 (128 MiB) is what `zstd --long=27` (and --long) writes, and
     * libzstd's default limit: larger windows are refused rather than
     * allocated, so that one input cannot take more than that. */
    ZSTD_DCtx_setParameter(r->zd, ZSTD_d_windowLogMax, RS_ZSTD_WINDOW_LOG_MAX);
    r->member_done = true;   /* at a frame boundary */
    return 0;
#else
    return (int)fail(r, err, RS_EXIT_USAGE,
                     "zstd data (magic at byte offset 0), but this build of ringshard has no zstd support "
                     "(rebuild it with libzstd: tools/deps.sh installs libzstd-dev)");
#endif
}

/* Fails on a file that its name says is compressed (gzip or zstd) but
 * that does not start with that codec's magic. */
static int misnamed(rs_reader *r, const char *suffix, const char *codec, const char *magic, const char *piece,
                    const char *other, rs_error *err)
{
    if (r->in_avail == 0)
        return (int)fail(r, err, RS_EXIT_DATA,
                         "empty file (named %s, but holds no %s: end of file at byte offset 0)", suffix, piece);
    char held[40];
    size_t k = r->in_avail < (size_t)(strlen(magic) + 1) / 3 ? r->in_avail : (strlen(magic) + 1) / 3;
    int w = 0;
    for (size_t i = 0; i < k; i++)
        w += snprintf(held + w, sizeof held - (size_t)w, "%s0x%02x", i ? " " : "", r->in_next[i]);
    return (int)fail(r, err, RS_EXIT_DATA, "not %s data (named %s, but byte offset 0 holds %s%s, not the %s magic %s%s%s)",
                     codec, suffix, held, r->eof && r->in_avail == k && k < (strlen(magic) + 1) / 3
                         ? " and then the file ends" : "", codec, magic, other ? ": " : "", other ? other : "");
}

static int detect(rs_reader *r, rs_error *err)
{
    /* enough for every magic number: ranges start at a gzip member or
     * zstd frame, which the first four bytes tell */
    if (lookahead(r, r->range_start ? 4 : RS_MAGIC_LOOK, err) != 0)
        return -1;
    r->started = true;
    r->is_gzip = r->in_avail >= 2 && r->in_next[0] == 0x1f && r->in_next[1] == 0x8b;
    r->is_zstd = !r->is_gzip && r->in_avail >= 4 && zstd_magic(r->in_next);
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
        return (int)fail(r, err, RS_EXIT_DATA, "%s input is not supported: %s", foreign, advice);
    if (r->is_gzip)
        return decoder_init(r, err);
    if (r->is_zstd)
        return zstd_init(r, err);
    return 0;
}

static ssize_t read_plain(rs_reader *r, unsigned char *buf, size_t cap, rs_error *err)
{
    if (r->in_avail == 0 && !r->eof) {
        if (cap >= RS_PLAIN_DIRECT && r->range_end == UINT64_MAX) {
            ssize_t k = read_fd(r->fd, !r->regular, buf, cap);
            if (k < 0) {
                int e = errno;
                return fail(r, err, RS_EXIT_IO, "read error at byte offset %llu: %s",
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
        if (fill(r, err) != 0)
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
static ssize_t garbage(rs_reader *r, rs_error *err)
{
    if (check_unchanged(r, err) != 0)   /* bytes appended during the run: the file changed, exit 1 */
        return -1;
    uint64_t at = consumed(r), end = r->size && r->range_end > r->size ? r->size : r->range_end;
    int known = end != UINT64_MAX && end >= at;
    uint64_t n = known ? end - at : r->in_avail;
    return fail(r, err, RS_EXIT_DATA, "garbage after %s at byte offset %llu (%s%llu trailing byte%s that %s "
                "not start a %s)", r->piece, (unsigned long long)at, known ? "" : "at least ", (unsigned long long)n,
                n == 1 ? "" : "s", n == 1 ? "does" : "do", r->piece);
}

/* Consumes zero bytes after the last member. 0 when every byte held was
 * zero (more may follow); -1 (err set) at a non-zero byte: zero padding
 * must run to the end of the input. */
static int skip_padding(rs_reader *r, rs_error *err)
{
    if (!r->padding)
        r->pad_start = consumed(r);
    r->padding = true;
    size_t k = 0;
    while (k < r->in_avail && r->in_next[k] == 0)
        k++;
    r->in_next += k;
    r->in_avail -= k;
    r->zero_padding += k;
    if (r->in_avail == 0)
        return 0;
    if (check_unchanged(r, err) != 0)   /* as in garbage() */
        return -1;
    return (int)fail(r, err, RS_EXIT_DATA,
                     "garbage after %s at byte offset %llu (%llu zero byte%s, then byte 0x%02x at byte "
                     "offset %llu: only zero bytes may follow the last %s, up to the end of the file)",
                     r->piece, (unsigned long long)r->pad_start, (unsigned long long)r->zero_padding,
                     r->zero_padding == 1 ? "" : "s", r->in_next[0], (unsigned long long)consumed(r),
                     r->is_zstd ? "frame" : "member");
}

/* After a member or frame, with the bytes that decide held: 0 at the clean
 * end (finished set), 2 after consuming zero padding (look again), 3 when
 * the next bytes must start a member or frame; -1 when padding is
 * followed by anything but zeros (err set). */
static int after_piece(rs_reader *r, rs_error *err)
{
    if (r->in_avail == 0) {
        r->finished = true;
        return 0;
    }
    if (r->padding || r->in_next[0] == 0)
        return skip_padding(r, err) != 0 ? -1 : 2;
    return 3;
}

static ssize_t read_gzip(rs_reader *r, unsigned char *buf, size_t cap, rs_error *err)
{
    for (;;) {
        if (r->member_done) {
            /* After a member: another member, the end, or garbage. */
            if (r->in_avail < 2 && !r->eof) {
                if (fill(r, err) != 0)
                    return -1;
                continue;
            }
            int k = after_piece(r, err);
            if (k < 2)
                return k;
            if (k == 2)
                continue;
            if (r->in_avail < 2 || r->in_next[0] != 0x1f || r->in_next[1] != 0x8b)
                return garbage(r, err);
            decoder_reset(r);
            r->member_done = false;
            r->member_start = consumed(r);
        }
        if (r->in_avail == 0 && !r->eof && fill(r, err) != 0)
            return -1;
        if (r->in_header) {
            int h = header_parse(r, err);
            if (h < 0)
                return -1;
            if (h == 0) {
                if (r->eof)
                    return fail(r, err, RS_EXIT_DATA,
                                "truncated gzip stream at byte offset %llu (unexpected end of "
                                "file in the header of the member starting at byte offset "
                                "%llu)",
                                (unsigned long long)r->in_total,
                                (unsigned long long)r->member_start);
                continue;  /* header_parse consumed everything: refill */
            }
        }
        size_t before = r->in_avail;
        ssize_t n = decode(r, buf, cap, err);
        if (n != 0)
            return n;  /* bytes, or -1 */
        if (r->member_done)
            continue;
        if (r->in_avail == before) {
            /* No progress: the decoder needs more input than we hold. */
            if (r->eof)
                return fail(r, err, RS_EXIT_DATA,
                            "truncated gzip stream at byte offset %llu (unexpected end of "
                            "file in the member starting at byte offset %llu)",
                            (unsigned long long)r->in_total,
                            (unsigned long long)r->member_start);
            if (r->in_avail == r->in_cap)
                return fail(r, err, RS_EXIT_DATA,
                            "corrupt gzip data at byte offset %llu (decoder stalled)",
                            (unsigned long long)consumed(r));
            if (fill(r, err) != 0)
                return -1;
        }
    }
}

/* ---- zstd -------------------------------------------------------------- */

#if RS_HAVE_ZSTD
/* At a frame boundary: starts the next frame (zstd or skippable), or ends
 * the input, or takes zero padding. Returns 1 when a frame was started,
 * 0 at the clean end (finished set), -1 on error. */
static int zstd_next_frame(rs_reader *r, rs_error *err)
{
    for (;;) {
        /* a frame header is at most 18 bytes (ZSTD_FRAMEHEADERSIZE_MAX) */
        if (lookahead(r, 18, err) != 0)
            return -1;
        int k = after_piece(r, err);
        if (k < 2)
            return k;
        if (k == 2)
            continue;
        if (r->in_avail < 4 || !zstd_magic(r->in_next))
            return (int)garbage(r, err);
        r->member_start = consumed(r);
        unsigned long long ms = (unsigned long long)r->member_start;
        if (((uint32_t)rs_get_le(r->in_next, 4) & RS_ZSTD_SKIP_MASK) == RS_ZSTD_SKIP_MAGIC) {
            if (r->in_avail < 8)
                return (int)fail(r, err, RS_EXIT_DATA,
                                 "truncated zstd stream at byte offset %llu (unexpected end of file in the "
                                 "header of the skippable frame starting at byte offset %llu)",
                                 (unsigned long long)r->in_total, ms);
            r->skip_left = rs_get_le(r->in_next + 4, 4);
            r->in_next += 8;
            r->in_avail -= 8;
            r->in_skip = true;
            return 1;
        }
        unsigned dict = ZSTD_getDictID_fromFrame(r->in_next, r->in_avail);
        if (dict != 0)
            return (int)fail(r, err, RS_EXIT_DATA,
                             "the zstd frame starting at byte offset %llu needs dictionary %u: ringshard reads "
                             "no dictionary-compressed zstd (decompress it with zstd -D DICT first)", ms, dict);
        /* the header is whole here (lookahead of 18), or the frame is
         * truncated, which the decoder reports */
        r->zfcs = ZSTD_getFrameContentSize(r->in_next, r->in_avail);
        if (r->zfcs == ZSTD_CONTENTSIZE_ERROR)
            r->zfcs = ZSTD_CONTENTSIZE_UNKNOWN;
        r->zout = 0;
        ZSTD_DCtx_reset(r->zd, ZSTD_reset_session_only);
        return 1;
    }
}

/* A frame that decodes to more or fewer bytes than its header says is
 * corrupt (RFC 8878, Frame_Content_Size). libzstd 1.5.4 checks it only on
 * some paths: a frame whose last block is empty and raw passes its
 * streaming decoder when the input comes in pieces or the output space is
 * small, and fails when it is whole, so the outcome would depend on read
 * sizes. -1 with err when the frame's bytes so far (done: all of them)
 * do not fit its declared size. */
static int zstd_check_size(rs_reader *r, int done, rs_error *err)
{
    if (r->zfcs == ZSTD_CONTENTSIZE_UNKNOWN || (done ? r->zout == r->zfcs : r->zout <= r->zfcs))
        return 0;
    return (int)fail(r, err, RS_EXIT_DATA,
                     "corrupt zstd data (the frame header says %llu bytes of content, its blocks decode to %s%llu) "
                     "in the frame starting at byte offset %llu",
                     r->zfcs, done ? "" : "more than ", done ? (unsigned long long)r->zout : r->zfcs,
                     (unsigned long long)r->member_start);
}

/* Consumes the rest of a skippable frame (ringshard's metadata among them:
 * the data frames describe the same bytes). 0, or -1 at a truncation. */
static int zstd_skip(rs_reader *r, rs_error *err)
{
    while (r->skip_left > 0) {
        if (r->in_avail == 0 && !r->eof && fill(r, err) != 0)
            return -1;
        if (r->in_avail == 0)
            return (int)fail(r, err, RS_EXIT_DATA,
                             "truncated zstd stream at byte offset %llu (unexpected end of file in the skippable "
                             "frame starting at byte offset %llu)",
                             (unsigned long long)r->in_total, (unsigned long long)r->member_start);
        size_t k = r->in_avail < r->skip_left ? r->in_avail : (size_t)r->skip_left;
        r->in_next += k;
        r->in_avail -= k;
        r->skip_left -= k;
    }
    r->in_skip = false;
    r->member_done = true;
    return 0;
}

static ssize_t read_zstd(rs_reader *r, unsigned char *buf, size_t cap, rs_error *err)
{
    for (;;) {
        if (r->member_done) {
            int k = zstd_next_frame(r, err);
            if (k <= 0)
                return k;
            r->member_done = false;
        }
        if (r->in_skip) {
            if (zstd_skip(r, err) != 0)
                return -1;
            continue;
        }
        if (r->in_avail == 0 && !r->eof && fill(r, err) != 0)
            return -1;
        ZSTD_inBuffer in = {r->in_next, r->in_avail, 0};
        ZSTD_outBuffer out = {buf, cap, 0};
        size_t ret = ZSTD_decompressStream(r->zd, &out, &in);
        r->in_next += in.pos;
        r->in_avail -= in.pos;
        if (ZSTD_isError(ret) && ZSTD_getErrorCode(ret) == ZSTD_error_frameParameter_windowTooLarge)
            return fail(r, err, RS_EXIT_DATA,
                        "the zstd frame starting at byte offset %llu needs a window larger than %u MiB (window "
                        "log %d), the most ringshard allows (written with zstd --long=%d or more?)",
                        (unsigned long long)r->member_start, 1u << (RS_ZSTD_WINDOW_LOG_MAX - 20),
                        RS_ZSTD_WINDOW_LOG_MAX, RS_ZSTD_WINDOW_LOG_MAX + 1);
        if (ZSTD_isError(ret))
            return fail(r, err, RS_EXIT_DATA,
                        "corrupt zstd data (%s) in the frame starting at byte offset %llu",
                        ZSTD_getErrorName(ret), (unsigned long long)r->member_start);
        r->zout += out.pos;
        if (zstd_check_size(r, ret == 0, err) != 0)
            return -1;
        if (ret == 0)
            r->member_done = true;  /* decoded and flushed */
        if (out.pos > 0)
            return (ssize_t)out.pos;
        if (ret == 0 || in.pos > 0)
            continue;
        /* no progress: the frame needs more input than we hold */
        if (r->eof && r->in_avail == 0)
            return fail(r, err, RS_EXIT_DATA,
                        "truncated zstd stream at byte offset %llu (unexpected end of file in the frame starting "
                        "at byte offset %llu)",
                        (unsigned long long)r->in_total, (unsigned long long)r->member_start);
        if (r->eof || r->in_avail == r->in_cap)
            return fail(r, err, RS_EXIT_DATA, "corrupt zstd data at byte offset %llu (decoder stalled) in the frame "
                        "starting at byte offset %llu", (unsigned long long)consumed(r),
                        (unsigned long long)r->member_start);
        if (fill(r, err) != 0)
            return -1;
    }
}
#else
static ssize_t read_zstd(rs_reader *r, unsigned char *buf, size_t cap, rs_error *err)
{
    (void)r, (void)buf, (void)cap, (void)err;
    return -1;  /* never called: zstd_init refuses */
}
#endif

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
    ssize_t n = r->is_zstd ? read_zstd(r, buf, cap, err) : read_gzip(r, buf, cap, err);
    if (n > 0 && r->sum_on) {  /* ISA-L's CRC-64 folds over 10 GB/s: a fraction of inflate's time */
        r->content = rs_crc64(r->content, buf, (size_t)n);
        r->content_size += (uint64_t)n;
    }
    return n;
}

uint64_t rs_reader_consumed(const rs_reader *r)
{
    return consumed(r) - r->range_start;
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

/* ---- units ------------------------------------------------------------- */

uint64_t rs_unit_bytes(void)
{
    const char *e = getenv("RINGSHARD_UNIT_BYTES");
    if (e && *e) {
        char *end;
        unsigned long long v = strtoull(e, &end, 10);
        if (*end == '\0' && v > 0)
            return v;
    }
    return (uint64_t)64 << 20;
}

static ssize_t pread_all(int fd, void *buf, size_t n, uint64_t off)
{
    size_t got = 0;
    while (got < n) {
        ssize_t k = pread(fd, (char *)buf + got, n - got, (off_t)(off + got));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return k < 0 ? -1 : (ssize_t)got;
        got += (size_t)k;
    }
    return (ssize_t)got;
}

/* Whether bytes [off, size) of the file are all zero (padding after the
 * last member, see rs_reader_read). */
static int all_zero(int fd, uint64_t off, uint64_t size, unsigned char *buf, size_t cap)
{
    while (off < size) {
        size_t n = size - off < cap ? (size_t)(size - off) : cap;
        if (pread_all(fd, buf, n, off) != (ssize_t)n)
            return 0;
        for (size_t i = 0; i < n; i++)
            if (buf[i])
                return 0;
        off += n;
    }
    return 1;
}

/* The member chain of a file of `size` bytes: appends its units to *u.
 * Returns 1 when every member from offset 0 carries an RS subfield and the
 * sizes end exactly at the end of the file (or where zero padding runs to
 * it: the last unit takes the padding), 0 otherwise (not splittable),
 * -1 when out of memory. */
static int list_members(int fd, uint64_t size, uint64_t unit, rs_input_unit **u, size_t *n)
{
    unsigned char *h = malloc(12 + 65535);
    size_t cap = 0;
    uint64_t off = 0, lines = 0, records = 0, next_cut = unit;
    int ok = h != NULL ? 1 : -1, zstd = -1;  /* zstd: the first piece's kind, every piece's */
    *n = 0;
    while (ok == 1 && off < size) {
        rs_member_info mi;
        size_t need = 0, least;
        ssize_t k = pread_all(fd, h, RS_MEMBER_HEADER_LEN, off);
        if (k > 0 && h[0] == 0 && *n > 0 && all_zero(fd, off, size, h, 12 + 65535)) {
            /* zero padding to the end: the last unit's reader skips it */
            (*u)[*n - 1].size += size - off;
            break;
        }
        if (zstd < 0)
            zstd = k >= 4 && rs_zstd_meta_parse(h, (size_t)k, &mi);
        if (zstd) {
            /* the metadata frame, then at least a frame header and one
             * empty block (zstd's smallest frame: 4 + 2 + 3 bytes) */
            least = RS_ZSTD_META_LEN + 9;
            if (k < RS_ZSTD_META_LEN || !rs_zstd_meta_parse(h, (size_t)k, &mi)) {
                ok = 0;
                break;
            }
        } else if (k < 12 || (rs_member_parse(h, (size_t)k, &mi, &need) != 1 &&
                              (need <= (size_t)k || pread_all(fd, h, need, off) != (ssize_t)need ||
                               rs_member_parse(h, need, &mi, &need) != 1))) {
            ok = 0;  /* no RS subfield here: gzip from another tool, or garbage */
            break;
        } else {
            /* a member holds at least its header, an empty deflate block
             * and the trailer */
            least = need + 2 + 8;
        }
        /* it must end inside the file */
        if (mi.size < least || mi.size > size - off) {
            ok = 0;
            break;
        }
        /* The first unit holds at least the file's first line (its header,
         * when read with one): a later unit takes the header from there. */
        if (*n == 0 || (off >= next_cut && (mi.flags & RS_MEMBER_BOUNDARY) && lines > 0)) {
            if (*n == cap) {
                cap = cap ? 2 * cap : 16;
                rs_input_unit *g = realloc(*u, cap * sizeof *g);
                if (!g) {
                    ok = -1;
                    break;
                }
                *u = g;
            }
            (*u)[(*n)++] = (rs_input_unit){off, 0, lines, records, 0, 0, 1, zstd};
            next_cut = (off / unit + 1) * unit;
        }
        rs_input_unit *cur = &(*u)[*n - 1];
        cur->size += mi.size;
        cur->lines += mi.lines;
        cur->records += mi.records;
        lines += mi.lines;
        records += mi.records;
        off += mi.size;
    }
    free(h);
    return ok;
}

int rs_input_units_at(int dirfd, const char *name, const char *path, uint64_t unit_bytes, rs_input_unit **units,
                      size_t *n, uint64_t *size, rs_error *err)
{
    if (path == NULL)
        path = name;
    *units = NULL;
    *n = 0;
    *size = 0;
    int fd = -1;
    struct stat st;
    int named = dirfd != AT_FDCWD || strcmp(name, "-") != 0;
    if (named) {
        /* stat, not open: opening a FIFO here, and again to read it, would
         * take the writer's data (or its only open) away from the reader.
         * Only a regular file can be listed; anything else is one unit,
         * opened once, by the reader. */
        if (fstatat(dirfd, name, &st, 0) != 0)
            return rs_error_set(err, RS_EXIT_IO, "%s: cannot open: %s", path, strerror(errno));
        if (S_ISDIR(st.st_mode))
            return rs_error_set(err, RS_EXIT_IO, "%s: cannot read: is a directory", path);
    }
    if (named && S_ISREG(st.st_mode)) {
        fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return rs_error_set(err, RS_EXIT_IO, "%s: cannot open: %s", path, strerror(errno));
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
            *size = (uint64_t)st.st_size;
    }
    int ok = 0;
    if (fd >= 0 && *size > 0)
        ok = list_members(fd, *size, unit_bytes ? unit_bytes : 1, units, n);
    if (fd >= 0)
        close(fd);
    if (ok < 0) {
        free(*units);
        *units = NULL;
        return rs_error_set(err, RS_EXIT_IO, "%s: out of memory listing gzip members or zstd frames", path);
    }
    if (ok == 0) {  /* one unit: the whole input, read as a stream */
        free(*units);
        *units = malloc(sizeof **units);
        if (!*units)
            return rs_error_set(err, RS_EXIT_IO, "%s: out of memory", path);
        **units = (rs_input_unit){0, *size, 0, 0, 0, 0, 0, 0};
        *n = 1;
    }
    return 0;
}

int rs_input_units(const char *path, uint64_t unit_bytes, rs_input_unit **units, size_t *n, uint64_t *size,
                   rs_error *err)
{
    return rs_input_units_at(AT_FDCWD, path, path, unit_bytes, units, n, size, err);
}
