/* io/reader_gzip.c - the reader's gzip members: the header parser used with
 * ISA-L, the decoders (ISA-L or zlib) and the member loop (see reader.c for
 * the rules on what may follow a member, and for byte offsets in messages). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "io/reader_internal.h"

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
                return (int)rs_rd_fail(r, err, RS_EXIT_DATA,
                                 "invalid gzip header (bad magic) in member starting at byte "
                                 "offset %llu", ms);
            if (r->hfixed[2] != 8)
                return (int)rs_rd_fail(r, err, RS_EXIT_DATA,
                                 "invalid gzip header (unknown compression method %u) in "
                                 "member starting at byte offset %llu", r->hfixed[2], ms);
            if (r->hfixed[3] & 0xe0)
                return (int)rs_rd_fail(r, err, RS_EXIT_DATA,
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
                return (int)rs_rd_fail(r, err, RS_EXIT_DATA,
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

int rs_rd_gzip_init(rs_reader *r, rs_error *err)
{
#if RS_HAVE_ISAL
    if (r->use_isal) {
        /* calloc, not malloc: isal_inflate_init leaves fields such as
         * hist_bits untouched, and garbage there breaks decoding. */
        r->isal = calloc(1, sizeof *r->isal);
        if (r->isal == NULL)
            return (int)rs_rd_fail(r, err, RS_EXIT_IO, "out of memory");
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
        return (int)rs_rd_fail(r, err, RS_EXIT_IO, "out of memory (zlib inflateInit2)");
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
        unsigned long long at = (unsigned long long)rs_rd_consumed(r);
        unsigned long long ms = (unsigned long long)r->member_start;
        switch (ret) {
        case ISAL_DECOMP_OK:
        case ISAL_END_INPUT:
        case ISAL_OUT_OVERFLOW:
            break;
        case ISAL_INCORRECT_CHECKSUM:
            return rs_rd_fail(r, err, RS_EXIT_DATA,
                        "CRC-32 or length (ISIZE) mismatch in gzip member starting at byte "
                        "offset %llu (detected at byte offset %llu)", ms, at);
        case ISAL_INVALID_WRAPPER:
        case ISAL_UNSUPPORTED_METHOD:
            return rs_rd_fail(r, err, RS_EXIT_DATA,
                        "invalid gzip header in member starting at byte offset %llu", ms);
        case ISAL_INVALID_BLOCK:
        case ISAL_INVALID_SYMBOL:
        case ISAL_INVALID_LOOKBACK:
            return rs_rd_fail(r, err, RS_EXIT_DATA,
                        "corrupt deflate data (%s) at byte offset %llu in gzip member starting "
                        "at byte offset %llu",
                        ret == ISAL_INVALID_BLOCK    ? "invalid block"
                        : ret == ISAL_INVALID_SYMBOL ? "invalid symbol"
                                                     : "invalid distance",
                        at, ms);
        default:
            return rs_rd_fail(r, err, RS_EXIT_DATA,
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
    unsigned long long at = (unsigned long long)rs_rd_consumed(r);
    unsigned long long ms = (unsigned long long)r->member_start;
    switch (ret) {
    case Z_OK:
    case Z_BUF_ERROR: /* no progress possible: more input is needed */
        return (ssize_t)produced;
    case Z_STREAM_END:
        r->member_done = true;
        return (ssize_t)produced;
    case Z_MEM_ERROR:
        return rs_rd_fail(r, err, RS_EXIT_IO, "out of memory (zlib inflate)");
    default:
        break;
    }
    const char *m = z->msg ? z->msg : "unknown error";
    if (strcmp(m, "incorrect data check") == 0)
        return rs_rd_fail(r, err, RS_EXIT_DATA,
                    "CRC-32 mismatch in gzip member starting at byte offset %llu "
                    "(detected at byte offset %llu)", ms, at);
    if (strcmp(m, "incorrect length check") == 0)
        return rs_rd_fail(r, err, RS_EXIT_DATA,
                    "length (ISIZE) mismatch in gzip member starting at byte offset %llu "
                    "(detected at byte offset %llu)", ms, at);
    return rs_rd_fail(r, err, RS_EXIT_DATA,
                "corrupt gzip data (%s) at byte offset %llu in member starting at byte "
                "offset %llu", m, at, ms);
}

ssize_t rs_rd_read_gzip(rs_reader *r, unsigned char *buf, size_t cap, rs_error *err)
{
    for (;;) {
        if (r->member_done) {
            /* After a member: another member, the end, or garbage. */
            if (r->in_avail < 2 && !r->eof) {
                if (rs_rd_fill(r, err) != 0)
                    return -1;
                continue;
            }
            int k = rs_rd_after_piece(r, err);
            if (k < 2)
                return k;
            if (k == 2)
                continue;
            if (r->in_avail < 2 || r->in_next[0] != 0x1f || r->in_next[1] != 0x8b)
                return rs_rd_garbage(r, err);
            decoder_reset(r);
            r->member_done = false;
            r->member_start = rs_rd_consumed(r);
        }
        if (r->in_avail == 0 && !r->eof && rs_rd_fill(r, err) != 0)
            return -1;
        if (r->in_header) {
            int h = header_parse(r, err);
            if (h < 0)
                return -1;
            if (h == 0) {
                if (r->eof)
                    return rs_rd_fail(r, err, RS_EXIT_DATA,
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
                return rs_rd_fail(r, err, RS_EXIT_DATA,
                            "truncated gzip stream at byte offset %llu (unexpected end of "
                            "file in the member starting at byte offset %llu)",
                            (unsigned long long)r->in_total,
                            (unsigned long long)r->member_start);
            if (r->in_avail == r->in_cap)
                return rs_rd_fail(r, err, RS_EXIT_DATA,
                            "corrupt gzip data at byte offset %llu (decoder stalled)",
                            (unsigned long long)rs_rd_consumed(r));
            if (rs_rd_fill(r, err) != 0)
                return -1;
        }
    }
}
