/* io/zstdout.c - zstd output: one metadata frame and one zstd frame per call.
 *
 * The counterpart of deflate.c's gzip members for `--compress zstd`: each
 * piece becomes a skippable frame carrying ringshard's metadata (the RS
 * frame, layout in deflate.h and docs/format-data.md) followed by one complete
 * zstd frame with its content size and an XXH64 checksum. Every frame is
 * compressed single-threaded (no ZSTD_c_nbWorkers) from the same input and
 * parameters, so the bytes never depend on the thread or the run. One
 * ZSTD_CCtx per rs_deflater (one per thread), reset between frames, never
 * recreated. The metadata parser is here in every build: listing units
 * needs no libzstd. */
#include <stdlib.h>
#include <string.h>

#include "rs_config.h"
#include "ringshard/deflate.h"
#include "io/io_internal.h"

#if RS_HAVE_ZSTD
#define ZSTD_STATIC_LINKING_ONLY  /* ZSTD_estimateCCtxSize, for the --memory budget */
#include <zstd.h>
#endif

int rs_zstd_meta_parse(const void *buf, size_t n, rs_member_info *mi)
{
    const unsigned char *p = buf;
    if (n < RS_ZSTD_META_LEN || rs_get_le(p, 4) != RS_ZSTD_META_MAGIC || rs_get_le(p + 4, 4) < RS_ZSTD_META_LEN - 8 ||
        p[8] != RS_MEMBER_SI1 || p[9] != RS_MEMBER_SI2 || p[10] != RS_MEMBER_VERSION)
        return 0;
    mi->version = p[10];
    mi->flags = p[11];
    mi->size = rs_get_le(p + 16, 8);
    mi->lines = rs_get_le(p + 24, 8);
    mi->records = rs_get_le(p + 32, 8);
    return 1;
}

/* Appends the metadata frame with size 0: patched once the frame is out. */
int rs_zstd_meta_write(rs_buf *out, uint64_t lines, uint64_t records)
{
    unsigned char h[RS_ZSTD_META_LEN] = {0};
    rs_put_le(h, RS_ZSTD_META_MAGIC, 4);
    rs_put_le(h + 4, RS_ZSTD_META_LEN - 8, 4);
    h[8] = RS_MEMBER_SI1;
    h[9] = RS_MEMBER_SI2;
    h[10] = RS_MEMBER_VERSION;
    h[11] = RS_MEMBER_BOUNDARY;
    rs_put_le(h + 24, lines, 8);
    rs_put_le(h + 32, records, 8);
    return rs_buf_append(out, h, sizeof h);
}

void rs_zstd_meta_set_size(void *meta, uint64_t size)
{
    rs_put_le((unsigned char *)meta + 16, size, 8);
}

#if RS_HAVE_ZSTD
void *rs_zstd_cctx_new(int level)
{
    ZSTD_CCtx *c = ZSTD_createCCtx();
    if (c == NULL)
        return NULL;
    /* Set once: ZSTD_reset_session_only between frames keeps them. The
     * checksum (XXH64, 4 bytes a frame) lets `zstd -t` and every reader
     * check the data; it costs well under 1% of level 1's time. */
    if (ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 1)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1))) {
        ZSTD_freeCCtx(c);
        return NULL;
    }
    return c;
}

void rs_zstd_cctx_free(void *cctx)
{
    ZSTD_freeCCtx(cctx);
}

size_t rs_zstd_cctx_bytes(int level)
{
    return ZSTD_estimateCCtxSize(level);
}

int rs_zstd_frame(void *cctx, const void *const *pieces, const size_t *lens, size_t npieces, rs_buf *out)
{
    ZSTD_CCtx *c = cctx;
    size_t total = 0;
    for (size_t k = 0; k < npieces; k++)
        total += lens[k];
    size_t e = ZSTD_CCtx_reset(c, ZSTD_reset_session_only);
    if (!ZSTD_isError(e))
        e = ZSTD_CCtx_setPledgedSrcSize(c, total);
    if (ZSTD_isError(e))
        return rs_codec_fail("zstd: %s", ZSTD_getErrorName(e));
    /* The space offered depends on the input's length only (as in
     * deflate.c's isal_feed): the bound, so that the frame is finished
     * without a second round whatever the buffer held before. */
    size_t offer = ZSTD_compressBound(total);
    if (out->cap - out->len < offer && rs_buf_reserve(out, offer) != 0)
        return rs_codec_fail("out of memory (%zu bytes for a zstd frame)", offer);
    ZSTD_outBuffer ob = {(char *)out->data + out->len, offer, 0};
    size_t last = npieces;  /* the last non-empty piece ends the frame */
    for (size_t k = npieces; k-- > 0;)
        if (lens[k] > 0) {
            last = k;
            break;
        }
    for (size_t k = 0; k < npieces; k++) {
        if (lens[k] == 0 && k != last)
            continue;
        ZSTD_inBuffer ib = {pieces[k], lens[k], 0};
        ZSTD_EndDirective mode = k == last ? ZSTD_e_end : ZSTD_e_continue;
        size_t r;
        do
            r = ZSTD_compressStream2(c, &ob, &ib, mode);
        while (!ZSTD_isError(r) && (mode == ZSTD_e_end ? r != 0 : ib.pos < ib.size) && ob.pos < ob.size);
        if (ZSTD_isError(r))
            return rs_codec_fail("zstd: %s", ZSTD_getErrorName(r));
        if ((mode == ZSTD_e_end && r != 0) || ib.pos < ib.size)
            return rs_codec_fail("zstd stopped short of its input's end with its output bound free");
    }
    if (last == npieces) {  /* nothing at all: an empty frame */
        ZSTD_inBuffer ib = {NULL, 0, 0};
        size_t r = ZSTD_compressStream2(c, &ob, &ib, ZSTD_e_end);
        if (ZSTD_isError(r) || r != 0)
            return rs_codec_fail("zstd: %s", ZSTD_isError(r) ? ZSTD_getErrorName(r) : "an empty frame did not end");
    }
    out->len += ob.pos;
    return 0;
}
#else
void *rs_zstd_cctx_new(int level)
{
    (void)level;
    return NULL;
}

void rs_zstd_cctx_free(void *cctx)
{
    (void)cctx;
}

size_t rs_zstd_cctx_bytes(int level)
{
    (void)level;
    return 0;
}

int rs_zstd_frame(void *cctx, const void *const *pieces, const size_t *lens, size_t npieces, rs_buf *out)
{
    (void)cctx, (void)pieces, (void)lens, (void)npieces, (void)out;
    return rs_codec_fail("this build of ringshard has no zstd support");
}
#endif

int rs_have_zstd(void)
{
    return RS_HAVE_ZSTD;
}
