/* io/reader_internal.h - the state of an rs_reader and the helpers its
 * parts share: reader.c (opening, format detection, plain input, what may
 * follow the last gzip member or zstd frame), reader_gzip.c (gzip members)
 * and reader_zstd.c (zstd frames). Not part of the public API. */
#ifndef RS_READER_INTERNAL_H
#define RS_READER_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include <zlib.h>

#include "rs_config.h"
#include "ringshard/reader.h"
#include "io/io_internal.h"

#if RS_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#endif
#if RS_HAVE_ZSTD
#include <zstd.h>
#include <zstd_errors.h>
#endif

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

    /* Our own gzip header parser, for ISA-L (see rs_rd_gzip_init, reader_gzip.c). */
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
    unsigned long long zwindow; /* the frame's window size, from its header (0: unknown) */
    uint64_t zout;           /* bytes the frame has decoded to so far */
#endif
#if RS_HAVE_ISAL
    struct inflate_state *isal;
#endif
};

/* zstd frame magics, as the first 4 bytes (little-endian) of a frame. */
#define RS_ZSTD_MAGIC 0xFD2FB528u
#define RS_ZSTD_SKIP_MASK 0xFFFFFFF0u
#define RS_ZSTD_SKIP_MAGIC 0x184D2A50u

/* 1 when p (4 bytes) starts a zstd frame or a skippable frame. */
static inline int rs_rd_zstd_magic(const unsigned char *p)
{
    uint32_t m = (uint32_t)rs_get_le(p, 4);
    return m == RS_ZSTD_MAGIC || (m & RS_ZSTD_SKIP_MASK) == RS_ZSTD_SKIP_MAGIC;
}

/* The file offset of the first unconsumed byte. */
static inline uint64_t rs_rd_consumed(const rs_reader *r)
{
    return r->in_total - r->in_avail;
}

/* reader.c */

/* Fails the reader (sticky) and reports the error to err. Returns -1. */
ssize_t rs_rd_fail(rs_reader *r, rs_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Appends up to one block of input after the unconsumed bytes. 0, or -1
 * (err set). */
int rs_rd_fill(rs_reader *r, rs_error *err);
/* Holds at least n unconsumed bytes, or all that is left. 0, or -1. */
int rs_rd_lookahead(rs_reader *r, size_t n, rs_error *err);
/* Fails on bytes after a member or frame that start neither another one
 * nor zero padding. Returns -1 (err set). */
ssize_t rs_rd_garbage(rs_reader *r, rs_error *err);
/* After a member or frame: 0 at the clean end, 2 after zero padding, 3
 * when the next bytes must start a member or frame, -1 on error. */
int rs_rd_after_piece(rs_reader *r, rs_error *err);

/* reader_gzip.c */

/* Sets up the gzip decoder (ISA-L or zlib) for the first member. 0, or -1. */
int rs_rd_gzip_init(rs_reader *r, rs_error *err);
/* Decodes gzip members into buf: bytes produced, 0 at the end, -1 (err set). */
ssize_t rs_rd_read_gzip(rs_reader *r, unsigned char *buf, size_t cap, rs_error *err);

/* reader_zstd.c */

/* Sets up the zstd decoder (refuses in a build without zstd). 0, or -1. */
int rs_rd_zstd_init(rs_reader *r, rs_error *err);
/* Decodes zstd frames into buf: bytes produced, 0 at the end, -1 (err set). */
ssize_t rs_rd_read_zstd(rs_reader *r, unsigned char *buf, size_t cap, rs_error *err);

#endif
