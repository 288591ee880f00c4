/* io/deflate.c - one complete gzip member per call, with one reused state.
 *
 * ISA-L (when built with it and the codec is RS_CODEC_AUTO): gzip levels 0-3
 * are ISA-L levels 0-3, 4-9 are ISA-L level 3. ISA-L level 0 still compresses
 * (it has no "store" level). zlib: the level as given (0 stores).
 * The member's CRC-32 is read back from its trailer, so it costs no extra pass. */
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "rs_config.h"
#include "ringshard/deflate.h"

#if RS_HAVE_ISAL
#include <isa-l/crc.h>
#include <isa-l/igzip_lib.h>
#endif

/* Largest input handed to one library call (they count in 32 bits). */
#define RS_MAX_IN ((size_t)1 << 30)

struct rs_deflater {
    bool use_isal;
    int level;
    z_stream zs;
    bool zs_live;
#if RS_HAVE_ISAL
    struct isal_zstream *is;
    uint8_t *level_buf;
#endif
};

rs_deflater *rs_deflater_new(int level, rs_codec_choice codec)
{
    if (level < 0)
        level = 0;
    if (level > 9)
        level = 9;
    rs_deflater *d = calloc(1, sizeof *d);
    if (d == NULL)
        return NULL;
    d->level = level;
#if RS_HAVE_ISAL
    if (codec == RS_CODEC_AUTO) {
        d->use_isal = true;
        /* Every gzip level 1-9 is ISA-L level 3. ISA-L 2.30's levels 1 and 2
         * are not deterministic when two threads compress at the same time
         * (the same member comes out as different, equally valid bytes in
         * about half of the stress runs; stateless and stateful alike), and
         * ringshard's outputs must be byte-identical for any thread count.
         * Level 3 never differed (tests/test_determinism.c); it costs about
         * 10% of speed against level 1 for a slightly better ratio. */
        int il = level == 0 ? 0 : ISAL_DEF_MAX_LEVEL;
        static const uint32_t bufsz[] = {ISAL_DEF_LVL0_DEFAULT, ISAL_DEF_LVL1_DEFAULT,
                                         ISAL_DEF_LVL2_DEFAULT, ISAL_DEF_LVL3_DEFAULT};
        d->is = calloc(1, sizeof *d->is);  /* init leaves some fields (hist_bits) alone */
        if (d->is == NULL)
            goto fail;
        isal_deflate_init(d->is);
        d->is->level = (uint32_t)il;
        d->is->gzip_flag = IGZIP_GZIP;
        d->is->hist_bits = 0;
        if (bufsz[il] > 0) {
            d->level_buf = calloc(1, bufsz[il]);  /* level 3 reads its hash map before writing it (valgrind) */
            if (d->level_buf == NULL)
                goto fail;
            d->is->level_buf = d->level_buf;
            d->is->level_buf_size = bufsz[il];
        }
        return d;
    }
#else
    (void)codec;
#endif
    if (deflateInit2(&d->zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        goto fail;
    d->zs_live = true;
    return d;
fail:
    rs_deflater_free(d);
    return NULL;
}

void rs_deflater_free(rs_deflater *d)
{
    if (d == NULL)
        return;
    if (d->zs_live)
        deflateEnd(&d->zs);
#if RS_HAVE_ISAL
    free(d->is);
    free(d->level_buf);
#endif
    free(d);
}

/* Makes sure out has at least `want` free bytes (growing by doubling). */
static int room(rs_buf *out, size_t want)
{
    if (out->cap - out->len < want && rs_buf_reserve(out, want) != 0)
        return -1;
    return 0;
}

static uint32_t get_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

#if RS_HAVE_ISAL
static int member_isal(rs_deflater *d, const void *const *pieces, const size_t *lens,
                       size_t npieces, rs_buf *out)
{
    struct isal_zstream *s = d->is;
    isal_deflate_reset(s);  /* keeps level, level_buf, gzip_flag and end_of_stream */
    /* isal_deflate turns gzip_flag IGZIP_GZIP into IGZIP_GZIP_NO_HDR once it
     * has written the header, and reset keeps it: without this line every
     * member after the first would lack its gzip header. */
    s->gzip_flag = IGZIP_GZIP;
    s->end_of_stream = 0;
    s->flush = NO_FLUSH;

    size_t last = npieces;  /* last non-empty piece, or npieces if none */
    for (size_t i = npieces; i-- > 0;)
        if (lens[i] > 0) {
            last = i;
            break;
        }
    size_t i = 0;
    const uint8_t *p = NULL;
    size_t left = 0;
    for (;;) {
        while (left == 0 && last != npieces && i <= last) {
            p = pieces[i];
            left = lens[i];
            i++;
        }
        size_t chunk = left > RS_MAX_IN ? RS_MAX_IN : left;
        s->next_in = (uint8_t *)p;
        s->avail_in = (uint32_t)chunk;
        s->end_of_stream = (last == npieces || i > last) && chunk == left;
        /* One call consumes its input as long as there is output space.
         * The space offered is a function of the input length only, never
         * of the buffer's capacity: isal_deflate shapes its blocks by
         * avail_out, so offering whatever a reused buffer happened to have
         * made the same input compress to different (valid) bytes
         * depending on what the thread had compressed before. */
        const size_t offer = chunk + (chunk >> 3) + 4096;
        for (;;) {
            if (room(out, offer) != 0)
                return -1;
            s->next_out = (uint8_t *)out->data + out->len;
            s->avail_out = (uint32_t)offer;
            int ret = isal_deflate(s);
            out->len += offer - s->avail_out;
            if (ret != COMP_OK)
                return -1;
            if (s->end_of_stream ? s->internal_state.state == ZSTATE_END : s->avail_in == 0)
                break;
        }
        if (chunk) {
            p += chunk;
            left -= chunk;
        }
        if (s->end_of_stream)
            return 0;
    }
}
#endif

static int member_zlib(rs_deflater *d, const void *const *pieces, const size_t *lens,
                       size_t npieces, rs_buf *out)
{
    z_stream *z = &d->zs;
    if (deflateReset(z) != Z_OK)
        return -1;
    size_t last = npieces;
    for (size_t i = npieces; i-- > 0;)
        if (lens[i] > 0) {
            last = i;
            break;
        }
    /* Walk the non-empty pieces, feeding at most RS_MAX_IN bytes a call; the
     * final call (Z_FINISH) carries the tail of the last piece (or nothing). */
    size_t i = 0;
    const Bytef *p = NULL;
    size_t left = 0;
    for (;;) {
        while (left == 0 && last != npieces && i <= last) {
            p = pieces[i];
            left = lens[i];
            i++;
        }
        size_t chunk = left > RS_MAX_IN ? RS_MAX_IN : left;
        bool final = (last == npieces || i > last) && chunk == left;
        z->next_in = (Bytef *)p;
        z->avail_in = (uInt)chunk;
        if (room(out, deflateBound(z, chunk)) != 0)
            return -1;
        for (;;) {
            size_t avail = out->cap - out->len;
            if (avail > UINT_MAX)
                avail = UINT_MAX;
            z->next_out = (Bytef *)out->data + out->len;
            z->avail_out = (uInt)avail;
            int ret = deflate(z, final ? Z_FINISH : Z_NO_FLUSH);
            out->len += avail - z->avail_out;
            if (ret == Z_STREAM_END)
                break;
            if (ret != Z_OK && ret != Z_BUF_ERROR)
                return -1;
            if (!final && z->avail_in == 0)
                break;
            if (z->avail_out == 0 && room(out, out->cap) != 0)
                return -1;
        }
        if (chunk) {
            p += chunk;
            left -= chunk;
        }
        if (final)
            return 0;
    }
}

int rs_deflater_member(rs_deflater *d, const void *const *pieces, const size_t *lens,
                       size_t npieces, rs_buf *out, uint32_t *crc_out)
{
    size_t start = out->len;
    int rc;
#if RS_HAVE_ISAL
    if (d->use_isal)
        rc = member_isal(d, pieces, lens, npieces, out);
    else
#endif
        rc = member_zlib(d, pieces, lens, npieces, out);
    if (rc != 0) {
        out->len = start;  /* no partial member */
        return -1;
    }
    if (crc_out)
        *crc_out = get_le32((const unsigned char *)out->data + out->len - 8);
    return 0;
}

uint32_t rs_crc32(uint32_t crc, const void *buf, size_t len)
{
#if RS_HAVE_ISAL
    return crc32_gzip_refl(crc, buf, len);
#else
    return (uint32_t)crc32_z(crc, buf, len);
#endif
}

uint32_t rs_crc32_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b)
{
    /* z_off_t is 64-bit on LP64 Linux, the only target. */
    _Static_assert(sizeof(z_off_t) >= 8, "z_off_t must be 64-bit");
    return (uint32_t)crc32_combine(crc_a, crc_b, (z_off_t)len_b);
}

const char *rs_codec_name(rs_codec_choice c)
{
#if RS_HAVE_ISAL
    return c == RS_CODEC_AUTO ? "isal" : "zlib";
#else
    (void)c;
    return "zlib";
#endif
}
