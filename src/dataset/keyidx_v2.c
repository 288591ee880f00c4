/* Reading version-2 key indexes (ringshard/keyidx.h, docs/format-keyidx.md):
 * lookups that read one filter line a key and one range of chunks a key
 * the filter passes; a sequential cursor (compact's merge, verify's scan).
 * Nothing read is used before it is checked: every filter line and every
 * chunk carries its CRC-32, and a chunk's keys must be in order, in their
 * range, and as many and as long as its header says. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "dataset/keyidx_impl.h"
#include "ringshard/deflate.h"
#include "rs_config.h"
#if RS_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#endif

enum {
    CHUNK_HEADER = 24,
    WINDOW_LINES = 1024,           /* filter lines read at once, at most: 64 KiB */
    GAP_LINES = 64,                /* a piece of lines stops when it would hold this many more lines than keys */
    YES_MAX = 4096,                /* keys a filter passed, looked up in their ranges together */
    TABLE_GAP = 16,                /* range table entries between two ranges' read in one piece, at most */
    TABLE_WINDOW = 1024,           /* range table entries read at once, at most */
    RANGE_READ = 64 << 10,         /* a range up to this size is read whole, a bigger one chunk by chunk */
    SPAN_BYTES = 256 << 10,        /* adjacent ranges read in one piece, up to this */
    STREAM_BUF = 1 << 15,          /* a cursor: this, a chunk's payload and raw keys: < RS_KEYIDX_SOURCE_MEMORY */
};

struct rs_keyidx_v2 {
    uint64_t lines, ranges, filter_at, table_at, chunks_at, chunks_bytes, key_bytes, chunks;
    int looked;                    /* looked up in: read without readahead */
    unsigned char *win;            /* filter lines [win_first, win_first + win_n) */
    uint64_t win_first, win_n;
    uint32_t *yes;                 /* [YES_MAX]: the probes a filter line passed, to look up in their ranges */
    uint64_t range;                /* the range being looked in */
    int whole;                     /* the range's bytes are all in cwin */
    uint64_t ra, rb;               /* the range's bytes in the chunks region */
    rs_buf rbuf;                   /* a chunk's payload, when not whole */
    unsigned char *tab;            /* range table entries [tab_first, tab_first + tab_n), checked */
    uint64_t tab_first, tab_n;
    rs_buf cwin;                   /* chunks region bytes from cw_a: the ranges being looked in */
    uint64_t cw_a;
    /* the chunk decoded */
    uint64_t chunk_at;             /* its offset in the chunks region; UINT64_MAX: none */
    rs_buf raw;
    uint64_t *kfp;                 /* [nk] its keys' fingerprints */
    uint32_t *koff;                /* [nk + 1] their offsets in raw */
    uint32_t nk;
    int have_fps;                  /* kfp[] computed for the chunk decoded */
    rs_buf probe;                  /* a probe's key packed as a chunk's keys are */
    z_stream z;
    int z_live;
#if RS_HAVE_ISAL
    struct inflate_state *isal;    /* about 2.5x zlib's inflate on these chunks */
#endif
};

int kx_v2_open(rs_keyidx *x, const unsigned char *h, rs_error *err)
{
    if (kx_get32(h + 8) != 2 || kx_get32(h + 124) != rs_crc32(0, h, 124))
        return kx_bad(x, err, "header: not a version-2 key index, or damaged (CRC-32)");
    struct rs_keyidx_v2 *v = calloc(1, sizeof *v);
    if (!v)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    x->v2 = v;
    x->version = 2;
    x->runs = 1;
    x->of = (rs_keyidx_of){kx_get64(h + 32), kx_get64(h + 40), kx_get32(h + 48), kx_get32(h + 12)};
    x->entries = kx_get64(h + 16);
    x->fp_bits = kx_get32(h + 24);
    v->lines = kx_get64(h + 56), v->ranges = kx_get64(h + 64);
    v->filter_at = kx_get64(h + 72), v->table_at = kx_get64(h + 80), v->chunks_at = kx_get64(h + 88);
    v->chunks_bytes = kx_get64(h + 96), v->key_bytes = kx_get64(h + 104), v->chunks = kx_get64(h + 112);
    v->chunk_at = UINT64_MAX;
    if (kx_get32(h + 28) != RS_KEYIDX_RANGE_KEYS || kx_get32(h + 52) != RS_KEYIDX_FILTER_BITS ||
        x->fp_bits < 1 || x->fp_bits > 64)
        return kx_bad(x, err, "header: a geometry this version does not write (keys a range, filter bits)");
    if (x->entries > x->size || v->lines != kx_lines_for(x->entries) || v->ranges != kx_ranges_for(x->entries) ||
        v->filter_at != RS_KEYIDX_HEADER || v->table_at != v->filter_at + RS_KEYIDX_LINE * v->lines ||
        v->chunks_at != v->table_at + RS_KEYIDX_ENTRY * (v->ranges + 1) || v->chunks_bytes > x->size ||
        v->chunks_at + v->chunks_bytes != x->size)
        return kx_bad(x, err, "header: regions that do not add up to the file's %llu bytes",
                      (unsigned long long)x->size);
    return 0;
}

void kx_v2_close(rs_keyidx *x)
{
    struct rs_keyidx_v2 *v = x->v2;
    free(v->win);
    free(v->yes);
    rs_buf_free(&v->rbuf);
    rs_buf_free(&v->cwin);
    free(v->tab);
    rs_buf_free(&v->raw);
    rs_buf_free(&v->probe);
    free(v->kfp);
    free(v->koff);
    if (v->z_live)
        inflateEnd(&v->z);
#if RS_HAVE_ISAL
    free(v->isal);
#endif
    free(v);
    x->v2 = NULL;
}

/* ------------------------------------------------------------- chunks */

static uint64_t get_leb(const unsigned char **p, const unsigned char *end, int *ok)
{
    uint64_t v = 0;
    for (int s = 0; s < 64 && *p < end; s += 7) {
        unsigned char c = *(*p)++;
        v |= (uint64_t)(c & 0x7f) << s;
        if (!(c & 0x80))
            return v;
    }
    *ok = 0;
    return 0;
}

static int inflate_into(struct rs_keyidx_v2 *v, const unsigned char *pay, size_t plen, size_t raw)
{
#if RS_HAVE_ISAL
    /* calloc: isal_inflate_init leaves fields such as hist_bits as they are */
    if (!v->isal && !(v->isal = calloc(1, sizeof *v->isal)))
        return -1;
    isal_inflate_init(v->isal);
    v->isal->crc_flag = ISAL_DEFLATE;
    v->isal->next_in = (uint8_t *)pay, v->isal->avail_in = (uint32_t)plen;
    v->isal->next_out = (uint8_t *)v->raw.data, v->isal->avail_out = (uint32_t)raw;
    int s = isal_inflate_stateless(v->isal);
    return s == ISAL_DECOMP_OK && v->isal->total_out == raw && v->isal->avail_in == 0 ? 0 : -1;
#endif
    if (!v->z_live) {
        if (inflateInit2(&v->z, -15) != Z_OK)
            return -1;
        v->z_live = 1;
    }
    inflateReset(&v->z);
    v->z.next_in = (Bytef *)pay, v->z.avail_in = (uInt)plen;
    v->z.next_out = (Bytef *)v->raw.data, v->z.avail_out = (uInt)raw;
    int r = inflate(&v->z, Z_FINISH);
    return r == Z_STREAM_END && v->z.total_out == raw && v->z.avail_in == 0 ? 0 : -1;
}

/* Room in v for the offsets and fingerprints of a chunk of `keys` keys. */
static int keys_room(struct rs_keyidx_v2 *v, uint32_t keys)
{
    uint64_t *nf = realloc(v->kfp, (keys + 1) * sizeof *nf);
    if (nf)
        v->kfp = nf;
    uint32_t *no = realloc(v->koff, (keys + 1) * sizeof *no);
    if (no)
        v->koff = no;
    return nf && no ? 0 : -1;
}

/* The keys' lengths (and, with fps, their fingerprints) of the chunk in
 * v->raw. */
static int parse_keys(struct rs_keyidx_v2 *v, uint32_t keys, int fps)
{
    const unsigned char *p = (const unsigned char *)v->raw.data, *end = p + v->raw.len;
    if (keys_room(v, keys) != 0)
        return -2;
    int ok = 1;
    uint64_t sum = 0;
    for (uint32_t i = 0; i < keys && ok; i++) {
        uint64_t len = get_leb(&p, end, &ok);
        v->koff[i] = (uint32_t)sum;   /* made absolute below */
        sum += len;
        if (sum > v->raw.len)
            ok = 0;
    }
    uint64_t base = (uint64_t)(p - (const unsigned char *)v->raw.data);
    if (!ok || base + sum != v->raw.len)
        return -1;
    for (uint32_t i = 0; i < keys; i++)
        v->koff[i] += (uint32_t)base;
    v->koff[keys] = (uint32_t)v->raw.len;
    for (uint32_t i = 0; fps && i < keys; i++)
        v->kfp[i] = rs_keyidx_fp(v->raw.data + v->koff[i], v->koff[i + 1] - v->koff[i]);
    v->nk = keys;
    v->have_fps = fps;
    return 0;
}

/* A packed chunk's payload read (keyidx_impl.h): its alphabet, key
 * length, bits a symbol, bytes a key and where the keys start. 0, or -1
 * when the payload is not as its header says. */
typedef struct {
    unsigned a, k;
    const unsigned char *alpha, *keys;
    uint64_t len;
    size_t per;
} packed;

static int packed_of(const unsigned char *pay, size_t plen, uint32_t keys, uint32_t raw, packed *pk)
{
    const unsigned char *p = pay, *end = pay + plen;
    int ok = 1;
    if (plen < 2 || (pk->a = *p++) == 0 || pk->a > KX_ALPHABET_MAX || (size_t)(end - p) < pk->a)
        return -1;
    pk->alpha = p;
    p += pk->a;
    for (unsigned i = 1; i < pk->a; i++)
        if (pk->alpha[i] <= pk->alpha[i - 1])
            return -1;
    pk->len = get_leb(&p, end, &ok);
    pk->k = kx_pack_bits(pk->a);
    if (!ok || pk->len == 0 || pk->len > raw || pk->len * keys != raw)
        return -1;
    pk->per = (size_t)((pk->len * pk->k + 7) / 8);
    pk->keys = p;
    return (uint64_t)(end - p) == (uint64_t)pk->per * keys ? 0 : -1;
}

/* Packed key i into out (len bytes). -1 for a symbol outside the alphabet. */
static int unpack_key(const packed *pk, uint32_t i, char *out)
{
    const unsigned char *b = pk->keys + (size_t)i * pk->per;
    uint64_t acc = 0;
    unsigned nb = 0;
    for (uint64_t j = 0; j < pk->len; j++) {
        while (nb < pk->k)
            acc = acc << 8 | *b++, nb += 8;
        unsigned s = (unsigned)(acc >> (nb - pk->k)) & ((1u << pk->k) - 1);
        nb -= pk->k;
        if (s >= pk->a)
            return -1;
        out[j] = (char)pk->alpha[s];
    }
    return 0;
}

/* A probe's key in the packed form of pk into out (pk->per bytes): 0, or
 * -1 when it cannot be one of pk's keys (its length, or a byte outside
 * the alphabet). */
static int pack_probe(const packed *pk, const rs_keyidx_probe *p, unsigned char *out)
{
    if (p->len != pk->len)
        return -1;
    unsigned char sym[256];
    memset(sym, 0xff, sizeof sym);
    for (unsigned i = 0; i < pk->a; i++)
        sym[pk->alpha[i]] = (unsigned char)i;
    const unsigned char *k = (const unsigned char *)p->key;
    uint64_t acc = 0;
    unsigned nb = 0;
    for (uint32_t j = 0; j < p->len; j++) {
        if (sym[k[j]] == 0xff)
            return -1;
        acc = acc << pk->k | sym[k[j]];
        for (nb += pk->k; nb >= 8; nb -= 8)
            *out++ = (unsigned char)(acc >> (nb - 8));
        acc &= ((uint64_t)1 << nb) - 1;
    }
    if (nb)
        *out = (unsigned char)(acc << (8 - nb));
    return 0;
}

/* A packed chunk's keys into v->raw, one after the other, and their
 * offsets (and fingerprints, with fps). 0, -1 (not as its header says),
 * -2 out of memory. */
static int unpack_chunk(struct rs_keyidx_v2 *v, const unsigned char *pay, size_t plen, uint32_t keys, uint32_t raw,
                        int fps)
{
    packed pk;
    if (packed_of(pay, plen, keys, raw, &pk) != 0)
        return -1;
    if (keys_room(v, keys) != 0)
        return -2;
    for (uint32_t i = 0; i <= keys; i++)
        v->koff[i] = (uint32_t)(i * pk.len);
    for (uint32_t i = 0; i < keys; i++)
        if (unpack_key(&pk, i, v->raw.data + v->koff[i]) != 0)
            return -1;
    v->raw.len = raw;
    for (uint32_t i = 0; fps && i < keys; i++)
        v->kfp[i] = rs_keyidx_fp(v->raw.data + v->koff[i], (size_t)pk.len);
    v->nk = keys;
    v->have_fps = fps;
    return 0;
}

/* Checks and decodes the chunk at offset `at` of the chunks region (h its
 * header, pay its payload): its keys into v. With fps (verify, compact),
 * the keys' fingerprints too, checked against the order and the header; a
 * lookup compares keys by their bytes and leaves them out: the chunk's
 * CRC-32 already says it is as written. */
static int decode_chunk(rs_keyidx *x, const unsigned char *h, const unsigned char *pay, uint64_t at, int fps,
                        rs_error *err)
{
    struct rs_keyidx_v2 *v = x->v2;
    uint32_t plen = kx_get32(h + 4), raw = kx_get32(h + 8), keys = h[12] | (uint32_t)h[13] << 8;
    v->chunk_at = UINT64_MAX;
    if (kx_get32(h) != rs_crc32(rs_crc32(0, h + 4, 20), pay, plen))
        return kx_bad(x, err, "chunk at byte %llu: CRC-32 mismatch", (unsigned long long)(v->chunks_at + at));
    if (keys == 0 || keys > RS_KEYIDX_CHUNK_KEYS || h[14] > KX_PACKED || h[15] || (h[14] == KX_STORED && raw != plen) ||
        (h[14] == KX_DEFLATED && (uint64_t)raw > (uint64_t)plen * 1032 + 64) ||
        (h[14] == KX_PACKED && (uint64_t)raw > (uint64_t)plen * 8))
        return kx_bad(x, err, "chunk at byte %llu: a header this version does not write",
                      (unsigned long long)(v->chunks_at + at));
    v->raw.len = 0;
    if (rs_buf_reserve(&v->raw, (size_t)raw + 1) != 0)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    int r;
    if (h[14] == KX_PACKED) {
        r = unpack_chunk(v, pay, plen, keys, raw, fps);
    } else {
        if (h[14] == KX_STORED)
            memcpy(v->raw.data, pay, raw);
        else if (inflate_into(v, pay, plen, raw) != 0)
            return kx_bad(x, err, "chunk at byte %llu: its keys do not inflate",
                          (unsigned long long)(v->chunks_at + at));
        v->raw.len = raw;
        r = parse_keys(v, keys, fps);
    }
    if (r == -2)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    for (uint32_t i = 1; fps && r == 0 && i < keys; i++)
        if (v->kfp[i] < v->kfp[i - 1])
            r = -1;
    if (r != 0 || (fps && v->kfp[keys - 1] != kx_get64(h + 16)))
        return kx_bad(x, err, "chunk at byte %llu: keys that are not as its header says, or not in order",
                      (unsigned long long)(v->chunks_at + at));
    v->chunk_at = at;
    return 0;
}

/* ------------------------------------------------------------ lookups */

/* A lookup reads what its keys need and no more, whatever their density:
 * the file is read without readahead (POSIX_FADV_RANDOM: a cold read
 * fetches the pages asked for, not the kernel's guess of what follows),
 * in pieces that hold only what some key needs. Two steps a batch of keys:
 * the filter lines of the keys, a piece spanning no more lines than the
 * keys it serves (one line a key at most: keys that crowd lines read the
 * lines between them, a key far from the others reads its own line), then
 * for the keys a line passed, their ranges' table entries and the chunks
 * of those ranges, adjacent ranges in one read. */

/* The probes from i on: the filter lines read in one piece, from probe i's
 * line to the furthest line up to which the piece holds no more lines than
 * keys (distinct fingerprints), at most WINDOW_LINES. */
static int read_lines(rs_keyidx *x, const rs_keyidx_probe *p, size_t i, size_t n, rs_error *err)
{
    struct rs_keyidx_v2 *v = x->v2;
    uint64_t first = kx_part(p[i].fp, v->lines, x->fp_bits), best = first, keys = 0;
    for (size_t k = i; k < n; k++) {
        if (k > i && p[k].fp == p[k - 1].fp)
            continue;
        uint64_t l = kx_part(p[k].fp, v->lines, x->fp_bits);
        if (l - first >= WINDOW_LINES || l - first > keys + GAP_LINES)
            break;   /* past the window, or too far behind to catch up */
        if (l - first + 1 <= ++keys)
            best = l;
    }
    if (!v->win && !(v->win = malloc(WINDOW_LINES * RS_KEYIDX_LINE)))
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    v->win_n = 0;
    if (kx_read_at(x, v->win, (best - first + 1) * RS_KEYIDX_LINE, v->filter_at + first * RS_KEYIDX_LINE, err) != 0)
        return -1;
    v->win_first = first, v->win_n = best - first + 1;
    return 0;
}

/* Range table entries [r, r + n), read and checked into v->tab. */
static int read_table(rs_keyidx *x, uint64_t r, uint64_t n, rs_error *err)
{
    struct rs_keyidx_v2 *v = x->v2;
    if (!v->tab && !(v->tab = malloc(TABLE_WINDOW * RS_KEYIDX_ENTRY)))
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    v->tab_n = 0;
    if (kx_read_at(x, v->tab, n * RS_KEYIDX_ENTRY, v->table_at + RS_KEYIDX_ENTRY * r, err) != 0)
        return -1;
    for (uint64_t k = 0; k < n; k++)
        if (kx_get32(v->tab + RS_KEYIDX_ENTRY * k + 8) != kx_entry_crc(r + k, kx_get64(v->tab + RS_KEYIDX_ENTRY * k)))
            return kx_bad(x, err, "range table entry %llu: CRC-32 mismatch", (unsigned long long)(r + k));
    v->tab_first = r, v->tab_n = n;
    return 0;
}

/* Table entry r, from those read. */
static uint64_t entry(const struct rs_keyidx_v2 *v, uint64_t r)
{
    return kx_get64(v->tab + RS_KEYIDX_ENTRY * (r - v->tab_first));
}

/* The chunk at offset `at` of the range: its header into h and, when a
 * key of fingerprint fp can be in it (fp <= its last key's), its payload's
 * address into *pay (from the range's bytes, or read into rbuf); else
 * *pay = NULL. */
static int range_chunk(rs_keyidx *x, uint64_t at, uint64_t fp, unsigned char *h, const unsigned char **pay,
                       rs_error *err)
{
    struct rs_keyidx_v2 *v = x->v2;
    *pay = NULL;
    if (at + CHUNK_HEADER > v->rb)
        goto damaged;
    if (v->whole)
        memcpy(h, v->cwin.data + (at - v->cw_a), CHUNK_HEADER);
    else if (kx_read_at(x, h, CHUNK_HEADER, v->chunks_at + at, err) != 0)
        return -1;
    uint64_t plen = kx_get32(h + 4);
    if (at + CHUNK_HEADER + plen > v->rb)
        goto damaged;
    if (fp > kx_get64(h + 16))
        return 0;
    if (v->whole) {
        *pay = (const unsigned char *)v->cwin.data + (at - v->cw_a) + CHUNK_HEADER;
        return 0;
    }
    v->rbuf.len = 0;
    if (rs_buf_reserve(&v->rbuf, (size_t)plen + 1) != 0)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    *pay = (const unsigned char *)v->rbuf.data;
    return kx_read_at(x, v->rbuf.data, (size_t)plen, v->chunks_at + at + CHUNK_HEADER, err);
damaged:
    return kx_bad(x, err, "range %llu: a chunk runs past its range", (unsigned long long)v->range);
}

/* The probes p[i..j) against a packed chunk: each in packed form against
 * every key, byte for byte; nothing decoded. */
static int confirm_packed(rs_keyidx *x, const unsigned char *h, const unsigned char *pay, uint64_t at,
                          const rs_keyidx_probe *p, size_t i, size_t j, void (*hit)(void *, uint32_t), void *ctx,
                          rs_error *err)
{
    uint32_t plen = kx_get32(h + 4), raw = kx_get32(h + 8), keys = h[12] | (uint32_t)h[13] << 8;
    packed pk;
    if (kx_get32(h) != rs_crc32(rs_crc32(0, h + 4, 20), pay, plen))
        return kx_bad(x, err, "chunk at byte %llu: CRC-32 mismatch", (unsigned long long)(x->v2->chunks_at + at));
    if (keys == 0 || keys > RS_KEYIDX_CHUNK_KEYS || h[15] || packed_of(pay, plen, keys, raw, &pk) != 0)
        return kx_bad(x, err, "chunk at byte %llu: keys that are not as its header says",
                      (unsigned long long)(x->v2->chunks_at + at));
    rs_buf *probe = &x->v2->probe;
    probe->len = 0;
    if (rs_buf_reserve(probe, pk.per + 1) != 0)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    for (; i < j; i++) {
        if (pack_probe(&pk, &p[i], (unsigned char *)probe->data) != 0)
            continue;
        for (uint32_t k = 0; k < keys; k++)
            if (memcmp(pk.keys + (size_t)k * pk.per, probe->data, pk.per) == 0) {
                hit(ctx, p[i].id);
                x->keys_confirmed++;
            }
    }
    return 0;
}

/* The probes p[i..j) (one fingerprint fp) against the range's chunks
 * [v->ra, v->rb). */
static int confirm(rs_keyidx *x, const rs_keyidx_probe *p, size_t i, size_t j, void (*hit)(void *, uint32_t),
                   void *ctx, rs_error *err)
{
    struct rs_keyidx_v2 *v = x->v2;
    uint64_t fp = p[i].fp;
    for (uint64_t at = v->ra; at < v->rb;) {
        unsigned char h[CHUNK_HEADER];
        const unsigned char *pay;
        if (range_chunk(x, at, fp, h, &pay, err) != 0)
            return -1;
        uint64_t next = at + CHUNK_HEADER + kx_get32(h + 4), last = kx_get64(h + 16);
        if (pay && h[14] == KX_PACKED) {
            if (confirm_packed(x, h, pay, at, p, i, j, hit, ctx, err) != 0)
                return -1;
        } else if (pay) {
            if (v->chunk_at != at && decode_chunk(x, h, pay, at, 0, err) != 0)
                return -1;
            /* by the bytes: a key equal to a probe's has its fingerprint */
            for (uint32_t k = 0; k < v->nk; k++)
                x->keys_confirmed += kx_hits(p, i, j, fp, v->raw.data + v->koff[k], v->koff[k + 1] - v->koff[k], hit,
                                             ctx);
        }
        if (fp < last)
            break;
        at = next;
    }
    return 0;
}

static uint64_t range_of(const rs_keyidx *x, const rs_keyidx_probe *p, const uint32_t *yes, size_t g)
{
    return kx_part(p[yes[g]].fp, x->v2->ranges, x->fp_bits);
}

/* The chunks of the ranges of the probes yes[g..h) (their table entries
 * read): adjacent ranges' read in one piece of at most SPAN_BYTES, a range
 * over RANGE_READ chunk by chunk; each probe's confirmed in its range. */
static int confirm_spans(rs_keyidx *x, const rs_keyidx_probe *p, size_t n, const uint32_t *yes, size_t g, size_t h,
                         void (*hit)(void *, uint32_t), void *ctx, rs_error *err)
{
    struct rs_keyidx_v2 *v = x->v2;
    for (size_t a = g, b; a < h; a = b) {
        uint64_t r0 = range_of(x, p, yes, a), r1 = r0, start = entry(v, r0), end = entry(v, r0 + 1);
        if (start > end || end > v->chunks_bytes)
            return kx_bad(x, err, "range table entry %llu: outside the chunks", (unsigned long long)r0);
        int big = end - start > RANGE_READ;
        for (b = a + 1; b < h; b++) {
            uint64_t r = range_of(x, p, yes, b);
            if (r == r1)
                continue;   /* another key of the same range */
            if (big || r > r1 + 1)
                break;
            uint64_t e = entry(v, r + 1);
            if (e < end || e > v->chunks_bytes || e - end > RANGE_READ || e - start > SPAN_BYTES)
                break;
            r1 = r, end = e;
        }
        v->whole = !big;
        if (v->whole) {
            v->cwin.len = 0;
            if (rs_buf_reserve(&v->cwin, (size_t)(end - start) + 1) != 0)
                return rs_error_set(err, RS_EXIT_IO, "out of memory");
            if (kx_read_at(x, v->cwin.data, (size_t)(end - start), v->chunks_at + start, err) != 0)
                return -1;
            v->cw_a = start;
        }
        for (size_t k = a; k < b; k++) {
            size_t i = yes[k], j = i + 1;
            while (j < n && p[j].fp == p[i].fp)
                j++;
            v->range = range_of(x, p, yes, k);
            v->ra = entry(v, v->range), v->rb = entry(v, v->range + 1);
            if (v->ra > v->rb)
                return kx_bad(x, err, "range table entry %llu: outside the chunks", (unsigned long long)v->range);
            if (confirm(x, p, i, j, hit, ctx, err) != 0)
                return -1;
        }
    }
    return 0;
}

/* The probes yes[0..ny) (the first of each fingerprint a filter line
 * passed, in order) in their ranges: the table entries of ranges close
 * together read in one piece, then their chunks. */
static int confirm_passed(rs_keyidx *x, const rs_keyidx_probe *p, size_t n, const uint32_t *yes, size_t ny,
                          void (*hit)(void *, uint32_t), void *ctx, rs_error *err)
{
    uint64_t before = x->bytes_read;
    for (size_t g = 0, h; g < ny; g = h) {
        uint64_t r0 = range_of(x, p, yes, g), r1 = r0;
        for (h = g + 1; h < ny; h++) {
            uint64_t r = range_of(x, p, yes, h);
            if (r - r1 > TABLE_GAP || r + 2 - r0 > TABLE_WINDOW)
                break;
            r1 = r;
        }
        if (read_table(x, r0, r1 + 2 - r0, err) != 0 || confirm_spans(x, p, n, yes, g, h, hit, ctx, err) != 0)
            return -1;
    }
    x->confirm_bytes += x->bytes_read - before;
    return 0;
}

/* The lookup's buffers (the filter lines, the keys passed, the table
 * entries, the ranges' chunks: up to 350 KiB) released once it is done: a
 * bucket's indexes are all open while its keys are looked up in one after
 * the other, and a history of many generations would otherwise hold them
 * all at once. */
static void release_buffers(struct rs_keyidx_v2 *v)
{
    free(v->win), free(v->yes), free(v->tab);
    v->win = NULL, v->yes = NULL, v->tab = NULL;
    v->win_n = 0, v->tab_n = 0;
    rs_buf_free(&v->cwin);
    rs_buf_free(&v->rbuf);
}

static int lookup(rs_keyidx *x, const rs_keyidx_probe *p, size_t n, void (*hit)(void *, uint32_t), void *ctx,
                  rs_error *err)
{
    struct rs_keyidx_v2 *v = x->v2;
    if (!v->looked) {   /* once an index: its filter, and no readahead (as opened; again after a scan) */
        (void)posix_fadvise(x->fd, 0, 0, POSIX_FADV_RANDOM);
        x->filter_bytes = v->lines * RS_KEYIDX_LINE;
        v->looked = 1;
    }
    if (!v->yes && !(v->yes = malloc(YES_MAX * sizeof *v->yes)))
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    v->win_n = 0, v->chunk_at = UINT64_MAX;
    size_t ny = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && p[i].fp == p[i - 1].fp)
            continue;
        uint64_t line = kx_part(p[i].fp, v->lines, x->fp_bits);
        if ((!v->win_n || line < v->win_first || line >= v->win_first + v->win_n) && read_lines(x, p, i, n, err) != 0)
            return -1;
        const unsigned char *lp = v->win + (line - v->win_first) * RS_KEYIDX_LINE;
        if (kx_get32(lp + RS_KEYIDX_LINE - 4) != rs_crc32(0, lp, RS_KEYIDX_LINE - 4))
            return kx_bad(x, err, "filter line %llu: CRC-32 mismatch", (unsigned long long)line);
        if (!kx_line_has(lp, p[i].fp))
            continue;
        x->filter_passes++;
        v->yes[ny++] = (uint32_t)i;
        if (ny == YES_MAX) {
            if (confirm_passed(x, p, n, v->yes, ny, hit, ctx, err) != 0)
                return -1;
            ny = 0;
        }
    }
    return ny ? confirm_passed(x, p, n, v->yes, ny, hit, ctx, err) : 0;
}

int kx_v2_lookup(rs_keyidx *x, const rs_keyidx_probe *p, size_t n, void (*hit)(void *, uint32_t), void *ctx,
                 rs_error *err)
{
    if (x->entries == 0)
        return 0;
    int rc = lookup(x, p, n, hit, ctx, err);
    release_buffers(x->v2);
    return rc;
}

/* ------------------------------------------------- reading in order */

/* The chunks in order, key by key: a kx_source, and verify's scan. */
typedef struct {
    rs_keyidx *x;
    kx_stream s;
    rs_buf pay;
    uint64_t at;                /* the next chunk's offset in the chunks region */
    uint64_t chunk_start;       /* the decoded chunk's */
    uint32_t k;                 /* the next key of the decoded chunk */
    uint64_t seen, chunks, key_bytes, prev_fp;
} cursor;

static void cursor_init(cursor *c, rs_keyidx *x)
{
    memset(c, 0, sizeof *c);
    c->x = x;
    c->s = (kx_stream){x->v2->chunks_at, x->v2->chunks_at + x->v2->chunks_bytes, NULL, 0, 0, STREAM_BUF};
}

static void cursor_free(cursor *c)
{
    free(c->s.buf);
    rs_buf_free(&c->pay);
}

/* The next chunk into x->v2: 1, 0 at the end (the counts checked), -1. */
static int cursor_chunk(cursor *c, rs_error *err)
{
    rs_keyidx *x = c->x;
    struct rs_keyidx_v2 *v = x->v2;
    if (c->at == v->chunks_bytes) {
        if (c->seen != x->entries || c->chunks != v->chunks || c->key_bytes != v->key_bytes)
            return kx_bad(x, err, "chunks that do not add up to its header (entries, chunks, key bytes)");
        return 0;
    }
    unsigned char h[CHUNK_HEADER];
    if (kx_sget(x, &c->s, h, sizeof h, err) != 0)
        return -1;
    uint32_t plen = kx_get32(h + 4);
    if (c->at + CHUNK_HEADER + plen > v->chunks_bytes)
        return kx_bad(x, err, "chunk at byte %llu: runs past the file", (unsigned long long)(v->chunks_at + c->at));
    c->pay.len = 0;
    if (rs_buf_reserve(&c->pay, (size_t)plen + 1) != 0)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    if (kx_sget(x, &c->s, c->pay.data, plen, err) != 0 ||
        decode_chunk(x, h, (const unsigned char *)c->pay.data, c->at, 1, err) != 0)
        return -1;
    if (c->chunks && v->kfp[0] < c->prev_fp)
        return kx_bad(x, err, "chunk at byte %llu: not in order", (unsigned long long)(v->chunks_at + c->at));
    c->chunk_start = c->at;
    c->at += CHUNK_HEADER + plen;
    c->chunks++;
    c->seen += v->nk;
    c->key_bytes += v->raw.len - (v->koff[0]);
    c->prev_fp = v->kfp[v->nk - 1];
    c->k = 0;
    return 1;
}

static int cursor_next(kx_source *s, rs_error *err)
{
    cursor *c = s->impl;
    struct rs_keyidx_v2 *v = c->x->v2;
    if (c->k == v->nk || v->chunk_at != c->chunk_start) {
        if (c->chunks && v->chunk_at != c->chunk_start)
            return kx_bad(c->x, err, "read out of order");
        int r = cursor_chunk(c, err);
        if (r <= 0)
            return r;
    }
    uint32_t k = c->k++;
    s->fp = v->kfp[k], s->key = v->raw.data + v->koff[k], s->len = v->koff[k + 1] - v->koff[k];
    return 1;
}

static void cursor_release(kx_source *s)
{
    cursor *c = s->impl;
    if (!c)
        return;
    cursor_free(c);
    free(c);
    s->impl = NULL;
}

int kx_v2_source(rs_keyidx *x, kx_source **srcs, size_t *n, size_t *cap, rs_error *err)
{
    cursor *c = malloc(sizeof *c);
    if (!c || kx_sources_grow(srcs, *n, cap) != 0) {
        free(c);
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    }
    cursor_init(c, x);
    c->chunks = 0;
    x->v2->chunk_at = UINT64_MAX;
    (*srcs)[(*n)++] = (kx_source){cursor_next, cursor_release, 0, NULL, 0, c};
    (void)posix_fadvise(x->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    return 0;
}

/* verify's reading: the cursor's checks, and the filter lines and the
 * range table read beside it, every line's CRC-32, every key in its
 * line, every range's entry at its first chunk. */
typedef struct {
    rs_keyidx *x;
    kx_stream lines, table;
    unsigned char line[RS_KEYIDX_LINE];
    uint64_t lines_read, tabled;
} side;

static int next_line(side *d, rs_error *err)
{
    if (kx_sget(d->x, &d->lines, d->line, sizeof d->line, err) != 0)
        return -1;
    if (kx_get32(d->line + RS_KEYIDX_LINE - 4) != rs_crc32(0, d->line, RS_KEYIDX_LINE - 4))
        return kx_bad(d->x, err, "filter line %llu: CRC-32 mismatch", (unsigned long long)d->lines_read);
    d->lines_read++;
    return 0;
}

/* Range table entries through `upto` must all be `value`. */
static int table_through(side *d, uint64_t upto, uint64_t value, rs_error *err)
{
    for (; d->tabled <= upto; d->tabled++) {
        unsigned char b[RS_KEYIDX_ENTRY];
        if (kx_sget(d->x, &d->table, b, sizeof b, err) != 0)
            return -1;
        if (kx_get32(b + 8) != kx_entry_crc(d->tabled, kx_get64(b)))
            return kx_bad(d->x, err, "range table entry %llu: CRC-32 mismatch", (unsigned long long)d->tabled);
        if (kx_get64(b) != value)
            return kx_bad(d->x, err, "range table entry %llu: not where its range's chunks start",
                          (unsigned long long)d->tabled);
    }
    return 0;
}

static int scan_chunk(side *d, const cursor *c, uint64_t *range, int (*each)(void *, uint64_t, const char *, size_t),
                      void *ctx, rs_error *err)
{
    rs_keyidx *x = d->x;
    struct rs_keyidx_v2 *v = x->v2;
    uint64_t rf = kx_part(v->kfp[0], v->ranges, x->fp_bits), rl = kx_part(v->kfp[v->nk - 1], v->ranges, x->fp_bits);
    if (rf != rl || (c->chunks > 1 && rf < *range))
        return kx_bad(x, err, "chunk at byte %llu: keys of another range",
                      (unsigned long long)(v->chunks_at + c->chunk_start));
    if ((c->chunks == 1 || rf != *range) && table_through(d, rf, c->chunk_start, err) != 0)
        return -1;
    *range = rf;
    for (uint32_t k = 0; k < v->nk; k++) {
        uint64_t line = kx_part(v->kfp[k], v->lines, x->fp_bits);
        while (d->lines_read <= line)
            if (next_line(d, err) != 0)
                return -1;
        if (!kx_line_has(d->line, v->kfp[k]))
            return kx_bad(x, err, "filter line %llu: a key it holds is not in it", (unsigned long long)line);
        if (each(ctx, v->kfp[k], v->raw.data + v->koff[k], v->koff[k + 1] - v->koff[k]) != 0)
            return -1;
    }
    return 0;
}

int kx_v2_scan(rs_keyidx *x, int (*each)(void *, uint64_t, const char *, size_t), void *ctx, rs_error *err)
{
    struct rs_keyidx_v2 *v = x->v2;
    cursor c;
    cursor_init(&c, x);
    side d = {x, {v->filter_at, v->table_at, NULL, 0, 0, STREAM_BUF}, {v->table_at, v->chunks_at, NULL, 0, 0, STREAM_BUF}, {0}, 0, 0};
    (void)posix_fadvise(x->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    uint64_t range = 0;
    int r;
    while ((r = cursor_chunk(&c, err)) == 1)
        if (scan_chunk(&d, &c, &range, each, ctx, err) != 0) {
            r = -1;
            break;
        }
    while (r == 0 && d.lines_read < v->lines)
        r = next_line(&d, err);
    if (r == 0)
        r = table_through(&d, v->ranges, v->chunks_bytes, err);
    cursor_free(&c);
    free(d.lines.buf);
    free(d.table.buf);
    return r < 0 ? -1 : 0;
}
