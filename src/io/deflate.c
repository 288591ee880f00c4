/* io/deflate.c - one complete gzip member per call, with one reused state.
 *
 * ISA-L (when built with it and the codec is RS_CODEC_AUTO): gzip levels 0-2
 * are ISA-L levels 0-2, 3-9 are ISA-L level 3, its highest. ISA-L level 0
 * still compresses (it has no "store" level). zlib: the level as given (0
 * stores). ISA-L levels 1 and 2 need a workaround to be deterministic
 * (isal_head below).
 * The member's CRC-32 is read back from its trailer, so it costs no extra pass.
 *
 * Every member starts with ringshard's own 44-byte header carrying the RS
 * extra subfield (layout in deflate.h, docs/format-data.md): the libraries write
 * the deflate data and (ISA-L) the trailer only, and the member's size is
 * patched into the header once it is known. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <unistd.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <emmintrin.h>
#include <zlib.h>

#include "rs_config.h"
#include "ringshard/deflate.h"
#include "io/io_internal.h"

#if RS_HAVE_ISAL
#include <isa-l/crc.h>
#include <isa-l/igzip_lib.h>
#endif

/* Largest input handed to one library call (they count in 32 bits). */
#define RS_MAX_IN ((size_t)1 << 30)

struct rs_deflater {
    void *zstd;     /* a ZSTD_CCtx: this compressor writes zstd frames */
    bool use_isal;
    int level;
    z_stream zs;
    bool zs_live;
#if RS_HAVE_ISAL
    struct isal_zstream *is;
    bool is_ours;  /* false: the caller's memory (rs_deflater_new_at) */
    uint8_t *level_buf;
#endif
};

static _Thread_local char codec_why[160];

int rs_codec_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(codec_why, sizeof codec_why, fmt, ap);
    va_end(ap);
    return -1;
}

const char *rs_deflater_why(void) { return codec_why[0] ? codec_why : "no failure recorded"; }

size_t rs_deflater_stream_size(void)
{
#if RS_HAVE_ISAL
    return sizeof(struct isal_zstream);
#else
    return 0;
#endif
}

#if RS_HAVE_ISAL
/* ISA-L's level for a gzip level: 0-2 as they are, 3-9 its highest, 3:
 * the ISA-L level nearest to what a gzip user asks for. Level 1, the
 * default, is ISA-L's fastest: about 1.5 times level 3's speed on 64 KiB
 * members, for 2.6% more output (measured with ringshard 0.1.0). */
static int isal_level(int level)
{
    if (level < 0)
        level = 0;
    return level < ISAL_DEF_MAX_LEVEL ? level : ISAL_DEF_MAX_LEVEL;
}

static const uint32_t isal_level_bytes[] = {ISAL_DEF_LVL0_DEFAULT, ISAL_DEF_LVL1_DEFAULT,
                                            ISAL_DEF_LVL2_DEFAULT, ISAL_DEF_LVL3_DEFAULT};
#endif

size_t rs_deflater_bytes(int level, rs_codec_choice codec)
{
#if RS_HAVE_ISAL
    if (codec == RS_CODEC_AUTO)  /* the ISA-L level rs_deflater_new picks */
        return sizeof(rs_deflater) + sizeof(struct isal_zstream) + isal_level_bytes[isal_level(level)];
#else
    (void)codec;
#endif
    (void)level;
    /* zlib.h: deflate needs (1 << (windowBits + 2)) + (1 << (memLevel + 9))
     * bytes, windowBits 15 and memLevel 8 here, plus its state */
    return sizeof(rs_deflater) + ((size_t)1 << 17) + ((size_t)1 << 17) + (8u << 10);
}

rs_deflater *rs_deflater_new(int level, rs_codec_choice codec)
{
    return rs_deflater_new_at(level, codec, NULL);
}

rs_deflater *rs_compressor_new(int compress, int level, rs_codec_choice codec)
{
    rs_deflater *d;
    if (compress != RS_COMPRESS_ZSTD) {
        d = rs_deflater_new(level, codec);
    } else if ((d = calloc(1, sizeof *d)) && !(d->zstd = rs_zstd_cctx_new(level))) {
        free(d);
        d = NULL;
    }
    if (!d)
        rs_codec_fail("out of memory (a compressor)");
    return d;
}

size_t rs_compressor_bytes(int compress, int level, rs_codec_choice codec)
{
    if (compress == RS_COMPRESS_ZSTD)
        return sizeof(rs_deflater) + rs_zstd_cctx_bytes(level);
    return rs_deflater_bytes(level, codec);
}

rs_deflater *rs_deflater_new_at(int level, rs_codec_choice codec, void *stream)
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
        int il = isal_level(level);
        d->is_ours = stream == NULL;
        d->is = d->is_ours ? malloc(sizeof *d->is) : stream;
        if (d->is == NULL)
            goto fail;
        memset(d->is, 0, sizeof *d->is);  /* init leaves some fields (hist_bits) alone */
        isal_deflate_init(d->is);
        d->is->level = (uint32_t)il;
        d->is->gzip_flag = IGZIP_GZIP_NO_HDR;
        d->is->hist_bits = 0;
        if (isal_level_bytes[il] > 0) {
            d->level_buf = calloc(1, isal_level_bytes[il]);  /* level 3 reads its hash map before writing it (valgrind) */
            if (d->level_buf == NULL)
                goto fail;
            d->is->level_buf = d->level_buf;
            d->is->level_buf_size = isal_level_bytes[il];
        }
        return d;
    }
#else
    (void)codec;
    (void)stream;
#endif
    /* raw deflate: the header and trailer are ours (see member_zlib) */
    if (deflateInit2(&d->zs, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
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
    rs_zstd_cctx_free(d->zstd);
    if (d->zs_live)
        deflateEnd(&d->zs);
#if RS_HAVE_ISAL
    if (d->is_ours)
        free(d->is);
    free(d->level_buf);
#endif
    free(d);
}

/* Makes sure out has at least `want` free bytes (growing by doubling). */
static int room(rs_buf *out, size_t want)
{
    if (out->cap - out->len < want && rs_buf_reserve(out, want) != 0)
        return rs_codec_fail("out of memory (%zu bytes of compressed output)", out->len + want);
    return 0;
}

uint64_t rs_count_line_ends(const void *buf, size_t n)
{
    const char *p = buf;
    uint64_t c = 0;
    size_t i = 0;
    /* LFs 16 bytes at a time (as count_quotes in the pipeline): cmpeq gives
     * 0xFF per LF, 0 - that is 1, psadbw sums, flushed every 255 blocks. */
    const __m128i lf = _mm_set1_epi8('\n'), zero = _mm_setzero_si128();
    while (i + 16 <= n) {
        __m128i acc = zero;
        size_t stop = i + 16 * 255 < n ? i + 16 * 255 : n;
        for (; i + 16 <= stop; i += 16)
            acc = _mm_sub_epi8(acc, _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(p + i)), lf));
        __m128i sums = _mm_sad_epu8(acc, zero);
        c += (uint64_t)_mm_cvtsi128_si64(sums) + (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(sums, sums));
    }
    for (; i < n; i++)
        c += p[i] == '\n';
    /* lone CRs: rare in CSV, so memchr skips most of the data */
    for (const char *s = p, *e = p + n, *q; s < e && (q = memchr(s, '\r', (size_t)(e - s))) != NULL; s = q + 1)
        c += q + 1 == e || q[1] != '\n';
    return c;
}

/* The line ends of the pieces' concatenation: a CR ending one piece and an
 * LF starting the next non-empty one are a single CRLF. */
static uint64_t count_pieces(const void *const *pieces, const size_t *lens, size_t npieces)
{
    uint64_t c = 0;
    int cr_end = 0;
    for (size_t k = 0; k < npieces; k++) {
        if (lens[k] == 0)
            continue;
        const char *p = pieces[k];
        c += rs_count_line_ends(p, lens[k]);
        c -= cr_end && p[0] == '\n';
        cr_end = p[lens[k] - 1] == '\r';
    }
    return c;
}

/* Appends the member header (deflate.h) with size 0: patched at the end. */
static int write_header(rs_buf *out, uint64_t lines, uint64_t records)
{
    unsigned char h[RS_MEMBER_HEADER_LEN] = {0x1f, 0x8b, 8, 4, 0, 0, 0, 0, 0, 3};
    rs_put_le(h + 10, 4 + RS_MEMBER_PAYLOAD, 2);
    h[12] = RS_MEMBER_SI1;
    h[13] = RS_MEMBER_SI2;
    rs_put_le(h + 14, RS_MEMBER_PAYLOAD, 2);
    h[16] = RS_MEMBER_VERSION;
    h[17] = RS_MEMBER_BOUNDARY;
    rs_put_le(h + 28, lines, 8);
    rs_put_le(h + 36, records, 8);
    return rs_buf_append(out, h, sizeof h);
}

int rs_member_parse(const void *buf, size_t n, rs_member_info *mi, size_t *hdr_need)
{
    const unsigned char *p = buf;
    *hdr_need = 0;
    if (n < 12 || p[0] != 0x1f || p[1] != 0x8b || p[2] != 8 || !(p[3] & 4))
        return 0;
    size_t xlen = (size_t)rs_get_le(p + 10, 2);
    *hdr_need = 12 + xlen;
    if (n < 12 + xlen)
        return 0;
    /* subfields: SI1 SI2 LEN(2) payload */
    for (size_t at = 12; at + 4 <= 12 + xlen;) {
        size_t len = (size_t)rs_get_le(p + at + 2, 2);
        if (at + 4 + len > 12 + xlen)
            return 0;  /* malformed extra field */
        if (p[at] == RS_MEMBER_SI1 && p[at + 1] == RS_MEMBER_SI2) {
            const unsigned char *q = p + at + 4;
            if (len < RS_MEMBER_PAYLOAD || q[0] != RS_MEMBER_VERSION)
                return 0;
            mi->version = q[0];
            mi->flags = q[1];
            mi->size = rs_get_le(q + 4, 8);
            mi->lines = rs_get_le(q + 12, 8);
            mi->records = rs_get_le(q + 20, 8);
            return 1;
        }
        at += 4 + len;
    }
    return 0;
}

#if RS_HAVE_ISAL
/* Bytes fed alone at the start of a member at ISA-L levels 1 and 2: the
 * body's input slop when flushing (MIN_INBUF_PADDING in
 * igzip_icf_body_h1_gr_bt.asm). */
#define RS_ISAL_HEAD 16

/* Runs isal_deflate on [p, p + n) until it is consumed (or, at the end of
 * the stream, the trailer is out), appending to out. */
static int isal_feed(struct isal_zstream *s, const uint8_t *p, size_t n, rs_buf *out)
{
    s->next_in = (uint8_t *)p;
    s->avail_in = (uint32_t)n;
    /* One call consumes its input as long as there is output space. The
     * space offered is a function of the input length only, never of the
     * buffer's capacity: isal_deflate shapes its blocks by avail_out, so
     * offering whatever a reused buffer happened to have made the same
     * input compress to different (valid) bytes depending on what the
     * thread had compressed before. */
    const size_t offer = n + (n >> 3) + 4096;
    for (;;) {
        if (room(out, offer) != 0)
            return -1;
        s->next_out = (uint8_t *)out->data + out->len;
        s->avail_out = (uint32_t)offer;
        int ret = isal_deflate(s);
        out->len += offer - s->avail_out;
        if (ret != COMP_OK)
            return rs_codec_fail("isal_deflate returned %d", ret);
        if (s->end_of_stream ? s->internal_state.state == ZSTATE_END : s->avail_in == 0)
            return 0;
    }
}

/* The workaround for levels 1 and 2 (ISA-L 2.30 to 2.32.1 and master, on
 * every CPU with SSE4.2): the first body call of a stream takes the branch
 * .write_first_byte of isal_deflate_icf_body_hash_hist_{01,02,04}, which
 * hashes position 2 from a register (rcx) that still holds the stream's
 * address instead of the input. Position 2 then goes into the hash slot
 * crc32c(address >> 16) & mask, and the member's bytes depend, now and
 * then, on where the isal_zstream lies. Fed alone with SYNC_FLUSH, the
 * first 16 bytes are all slop to the body, which returns before that
 * branch; ISA-L's C finish routine hashes them correctly and sets has_hist,
 * so the body never takes the branch for the rest. About 11 bytes a
 * member (one more block and the sync marker). head: the member's first
 * RS_ISAL_HEAD bytes (it has more). */
static int isal_head(struct isal_zstream *s, const uint8_t *head, rs_buf *out)
{
    s->flush = SYNC_FLUSH;
    s->end_of_stream = 0;
    if (isal_feed(s, head, RS_ISAL_HEAD, out) != 0)
        return -1;
    s->flush = NO_FLUSH;
    /* what makes the rest safe: a new block next, with history */
    if (s->internal_state.state == ZSTATE_NEW_HDR && s->internal_state.has_hist == IGZIP_HIST)
        return 0;
    return rs_codec_fail("ISA-L's first block left the stream in state %d (history %d), not a new block with "
                         "history: the level 1/2 workaround (deflate.c) does not fit this ISA-L",
                         (int)s->internal_state.state, (int)s->internal_state.has_hist);
}

static int member_isal(rs_deflater *d, const void *const *pieces, const size_t *lens,
                       size_t npieces, rs_buf *out)
{
    struct isal_zstream *s = d->is;
    isal_deflate_reset(s);  /* keeps level, level_buf, gzip_flag and end_of_stream */
    /* deflate data and the gzip trailer: the header is ours (write_header) */
    s->gzip_flag = IGZIP_GZIP_NO_HDR;
    s->end_of_stream = 0;
    s->flush = NO_FLUSH;

    /* skip: bytes already fed by isal_head */
    size_t total = 0, skip = 0;
    for (size_t k = 0; k < npieces; k++)
        total += lens[k];
    if ((s->level == 1 || s->level == 2) && total > RS_ISAL_HEAD) {
        uint8_t head[RS_ISAL_HEAD];
        for (size_t k = 0; skip < RS_ISAL_HEAD; k++) {
            size_t take = lens[k] < RS_ISAL_HEAD - skip ? lens[k] : RS_ISAL_HEAD - skip;
            memcpy(head + skip, pieces[k], take);
            skip += take;
        }
        if (isal_head(s, head, out) != 0)
            return -1;
    }
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
            size_t drop = lens[i] < skip ? lens[i] : skip;
            p = (const uint8_t *)pieces[i] + drop;
            left = lens[i] - drop;
            skip -= drop;
            i++;
        }
        size_t chunk = left > RS_MAX_IN ? RS_MAX_IN : left;
        s->end_of_stream = (last == npieces || i > last) && chunk == left;
        if (isal_feed(s, p, chunk, out) != 0)
            return -1;
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
        return rs_codec_fail("zlib deflateReset failed");
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
                return rs_codec_fail("zlib deflate returned %d (%s)", ret, z->msg ? z->msg : "no message");
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
            break;
    }
    /* the gzip trailer: CRC-32 and ISIZE (length mod 2^32), little-endian */
    uint32_t crc = 0;
    uint64_t total = 0;
    for (size_t k = 0; k < npieces; k++) {
        crc = rs_crc32(crc, pieces[k], lens[k]);
        total += lens[k];
    }
    unsigned char t[8];
    rs_put_le(t, crc, 4);
    rs_put_le(t + 4, total, 4);
    return rs_buf_append(out, t, sizeof t) == 0 ? 0 : rs_codec_fail("out of memory (the gzip trailer)");
}

/* rs_deflater_member for a zstd compressor: metadata frame, data frame. */
static int member_zstd(rs_deflater *d, const void *const *pieces, const size_t *lens, size_t npieces,
                       uint64_t records, uint64_t lines, rs_buf *out, uint32_t *crc_out)
{
    size_t start = out->len;
    if (rs_zstd_meta_write(out, lines, records) != 0)
        rs_codec_fail("out of memory (a zstd metadata frame)");
    if (out->len == start || rs_zstd_frame(d->zstd, pieces, lens, npieces, out) != 0) {
        out->len = start;  /* no partial piece */
        return -1;
    }
    rs_zstd_meta_set_size((char *)out->data + start, out->len - start);
    if (crc_out) {  /* zstd checks with XXH64; the manifest's figure is CRC-32 */
        uint32_t crc = 0;
        for (size_t k = 0; k < npieces; k++)
            crc = rs_crc32(crc, pieces[k], lens[k]);
        *crc_out = crc;
    }
    return 0;
}

int rs_deflater_member(rs_deflater *d, const void *const *pieces, const size_t *lens,
                       size_t npieces, uint64_t records, rs_buf *out, uint32_t *crc_out)
{
    return rs_deflater_member_lines(d, pieces, lens, npieces, records, count_pieces(pieces, lens, npieces), out,
                                    crc_out);
}

int rs_deflater_member_lines(rs_deflater *d, const void *const *pieces, const size_t *lens, size_t npieces,
                             uint64_t records, uint64_t lines, rs_buf *out, uint32_t *crc_out)
{
    if (d->zstd)
        return member_zstd(d, pieces, lens, npieces, records, lines, out, crc_out);
    size_t start = out->len;
    int rc = write_header(out, lines, records);
    if (rc != 0)
        rs_codec_fail("out of memory (a gzip member header)");
#if RS_HAVE_ISAL
    if (rc == 0 && d->use_isal)
        rc = member_isal(d, pieces, lens, npieces, out);
    else
#endif
    if (rc == 0)
        rc = member_zlib(d, pieces, lens, npieces, out);
    if (rc != 0) {
        out->len = start;  /* no partial member */
        return -1;
    }
    rs_put_le((unsigned char *)out->data + start + 20, out->len - start, 8);
    if (crc_out)
        *crc_out = (uint32_t)rs_get_le((const unsigned char *)out->data + out->len - 8, 4);
    return 0;
}

int rs_crc32_fileat(int dirfd, const char *name, uint32_t *crc)
{
    return rs_crc32_fileat_n(dirfd, name, UINT64_MAX, crc);
}

int rs_crc32_fileat_n(int dirfd, const char *name, uint64_t len, uint32_t *crc)
{
    int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[1 << 16];
    ssize_t k;
    *crc = 0;
    while (len && ((k = read(fd, buf, len < sizeof buf ? (size_t)len : sizeof buf)) > 0 || (k < 0 && errno == EINTR)))
        if (k > 0) {
            *crc = rs_crc32(*crc, buf, (size_t)k);
            len -= (uint64_t)k;
        }
    if (!len)
        k = 0;
    int e = errno;
    close(fd);
    errno = e;
    return k < 0 ? -1 : 0;
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
