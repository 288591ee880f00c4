/* io/reader_zstd.c - the reader's zstd frames: decoded by libzstd's
 * ZSTD_decompressStream, their boundaries found here (skippable frames,
 * padding and garbage are handled as for gzip members, see reader.c). */
#include <stdlib.h>
#include <string.h>

#include "io/reader_internal.h"

int rs_rd_zstd_init(rs_reader *r, rs_error *err)
{
#if RS_HAVE_ZSTD
    r->zd = ZSTD_createDCtx();
    if (r->zd == NULL)
        return (int)rs_rd_fail(r, err, RS_EXIT_IO, "out of memory (ZSTD_createDCtx)");
    /* 27 (128 MiB) is what `zstd --long=27` (and --long) writes, and
     * libzstd's default limit: larger windows are refused rather than
     * allocated, so that one input cannot take more than that. */
    ZSTD_DCtx_setParameter(r->zd, ZSTD_d_windowLogMax, RS_ZSTD_WINDOW_LOG_MAX);
    r->member_done = true;   /* at a frame boundary */
    return 0;
#else
    return (int)rs_rd_fail(r, err, RS_EXIT_USAGE,
                     "zstd data (magic at byte offset 0), but this build of ringshard has no zstd support "
                     "(rebuild it with libzstd: tools/deps.sh installs libzstd-dev)");
#endif
}

/* ---- zstd -------------------------------------------------------------- */

#if RS_HAVE_ZSTD
/* At a frame boundary: starts the next frame (zstd or skippable), or ends
 * the input, or takes zero padding. Returns 1 when a frame was started,
 * 0 at the clean end (finished set), -1 on error. */
/* The window a zstd frame's header asks for (RFC 8878 3.1.1.1.2: the
 * window descriptor, or the content size of a single-segment frame), to
 * name it when it is too large; 0 when the header is not whole. */
static unsigned long long frame_window(const unsigned char *p, size_t n, unsigned long long fcs)
{
    if (n < 6)
        return 0;
    if (p[4] & 0x20)   /* single segment: the window is the content */
        return fcs == ZSTD_CONTENTSIZE_UNKNOWN ? 0 : fcs;
    unsigned long long base = 1ull << (10 + (p[5] >> 3));
    return base + (base / 8) * (p[5] & 7);
}

static int zstd_next_frame(rs_reader *r, rs_error *err)
{
    for (;;) {
        /* a frame header is at most 18 bytes (ZSTD_FRAMEHEADERSIZE_MAX) */
        if (rs_rd_lookahead(r, 18, err) != 0)
            return -1;
        int k = rs_rd_after_piece(r, err);
        if (k < 2)
            return k;
        if (k == 2)
            continue;
        if (r->in_avail < 4 || !rs_rd_zstd_magic(r->in_next))
            return (int)rs_rd_garbage(r, err);
        r->member_start = rs_rd_consumed(r);
        unsigned long long ms = (unsigned long long)r->member_start;
        if (((uint32_t)rs_get_le(r->in_next, 4) & RS_ZSTD_SKIP_MASK) == RS_ZSTD_SKIP_MAGIC) {
            if (r->in_avail < 8)
                return (int)rs_rd_fail(r, err, RS_EXIT_DATA,
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
            return (int)rs_rd_fail(r, err, RS_EXIT_DATA,
                             "the zstd frame starting at byte offset %llu needs dictionary %u: ringshard reads "
                             "no dictionary-compressed zstd (decompress it with zstd -D DICT first)", ms, dict);
        /* the header is whole here (lookahead of 18), or the frame is
         * truncated, which the decoder reports */
        r->zfcs = ZSTD_getFrameContentSize(r->in_next, r->in_avail);
        if (r->zfcs == ZSTD_CONTENTSIZE_ERROR)
            r->zfcs = ZSTD_CONTENTSIZE_UNKNOWN;
        r->zwindow = frame_window(r->in_next, r->in_avail, r->zfcs);
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
    return (int)rs_rd_fail(r, err, RS_EXIT_DATA,
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
        if (r->in_avail == 0 && !r->eof && rs_rd_fill(r, err) != 0)
            return -1;
        if (r->in_avail == 0)
            return (int)rs_rd_fail(r, err, RS_EXIT_DATA,
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

ssize_t rs_rd_read_zstd(rs_reader *r, unsigned char *buf, size_t cap, rs_error *err)
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
        if (r->in_avail == 0 && !r->eof && rs_rd_fill(r, err) != 0)
            return -1;
        ZSTD_inBuffer in = {r->in_next, r->in_avail, 0};
        ZSTD_outBuffer out = {buf, cap, 0};
        size_t ret = ZSTD_decompressStream(r->zd, &out, &in);
        r->in_next += in.pos;
        r->in_avail -= in.pos;
        if (ZSTD_isError(ret) && ZSTD_getErrorCode(ret) == ZSTD_error_frameParameter_windowTooLarge) {
            int log = 10;   /* the frame's window log, rounded up: what zstd -d --long= needs */
            while (log < 63 && (1ull << log) < r->zwindow)
                log++;
            return rs_rd_fail(r, err, RS_EXIT_DATA,
                        "the zstd frame starting at byte offset %llu needs a window of %llu MiB (window log %d); "
                        "ringshard allows at most %u MiB (window log %d): decompress it first with zstd -d "
                        "--long=%d", (unsigned long long)r->member_start, (r->zwindow + (1u << 20) - 1) >> 20, log,
                        1u << (RS_ZSTD_WINDOW_LOG_MAX - 20), RS_ZSTD_WINDOW_LOG_MAX, log);
        }
        if (ZSTD_isError(ret))
            return rs_rd_fail(r, err, RS_EXIT_DATA,
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
            return rs_rd_fail(r, err, RS_EXIT_DATA,
                        "truncated zstd stream at byte offset %llu (unexpected end of file in the frame starting "
                        "at byte offset %llu)",
                        (unsigned long long)r->in_total, (unsigned long long)r->member_start);
        if (r->eof || r->in_avail == r->in_cap)
            return rs_rd_fail(r, err, RS_EXIT_DATA, "corrupt zstd data at byte offset %llu (decoder stalled) in the frame "
                        "starting at byte offset %llu", (unsigned long long)rs_rd_consumed(r),
                        (unsigned long long)r->member_start);
        if (rs_rd_fill(r, err) != 0)
            return -1;
    }
}
#else
ssize_t rs_rd_read_zstd(rs_reader *r, unsigned char *buf, size_t cap, rs_error *err)
{
    (void)r, (void)buf, (void)cap, (void)err;
    return -1;  /* never called: zstd_init refuses */
}
#endif
