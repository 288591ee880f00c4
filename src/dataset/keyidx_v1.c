/* Version-1 key indexes (RSKEYIX1, ringshard 0.1): read for lookups, for
 * verify and as sources of compact's merge, which rewrites them as version
 * 2. Their layout is in docs/format-keyidx.md: a 64-byte header, then runs of at
 * most 16,384 keys, each a header (n, blocks, heap bytes), a fence per 512
 * fingerprints, the n fingerprints, n + 1 heap offsets and the heap. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "dataset/keyidx_impl.h"
#include "ringshard/deflate.h"

int kx_v1_open(rs_keyidx *x, const unsigned char *h, rs_error *err)
{
    if (kx_get32(h + 8) != 1 || kx_get32(h + 56) != rs_crc32(0, h, 56))
        return kx_bad(x, err, "header: not a version-1 key index, or damaged");
    x->version = 1;
    x->of = (rs_keyidx_of){kx_get64(h + 32), kx_get64(h + 40), kx_get32(h + 48), kx_get32(h + 12)};
    x->entries = kx_get64(h + 16);
    x->fp_bits = kx_get32(h + 24);
    x->runs = kx_get32(h + 28);
    return 0;
}

/* A run's place in the file. */
typedef struct {
    uint64_t n, blocks, heap;
    uint64_t fences, fps, offs, keys;  /* file offsets */
    uint64_t end;
} run_at;

static int read_run(rs_keyidx *x, uint64_t pos, run_at *r, rs_error *err)
{
    unsigned char h[RS_KEYIDX1_RUN_HEADER];
    if (pos + sizeof h > x->size)
        return kx_bad(x, err, "ends before its runs do");
    if (kx_read_at(x, h, sizeof h, pos, err) != 0)
        return -1;
    r->n = kx_get64(h), r->blocks = kx_get64(h + 8), r->heap = kx_get64(h + 16);
    if (r->n > x->size / 16 || r->blocks != (r->n + RS_KEYIDX1_BLOCK - 1) / RS_KEYIDX1_BLOCK || r->heap > x->size)
        return kx_bad(x, err, "run header: counts that do not fit the file");
    r->fences = pos + sizeof h;
    r->fps = r->fences + 8 * r->blocks;
    r->offs = r->fps + 8 * r->n;
    r->keys = r->offs + 8 * (r->n + 1);
    r->end = r->keys + r->heap;
    if (r->end > x->size)
        return kx_bad(x, err, "run larger than the file");
    return 0;
}

/* Key j of run r into key (grown as needed); its length in *len. */
static int read_key(rs_keyidx *x, const run_at *r, uint64_t j, rs_buf *key, size_t *len, rs_error *err)
{
    unsigned char o[16];
    if (kx_read_at(x, o, sizeof o, r->offs + 8 * j, err) != 0)
        return -1;
    uint64_t a = kx_get64(o), b = kx_get64(o + 8);
    if (a > b || b > r->heap)
        return kx_bad(x, err, "offsets outside its keys");
    key->len = 0;
    if (rs_buf_reserve(key, (size_t)(b - a) + 1) != 0)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    if (kx_read_at(x, key->data, (size_t)(b - a), r->keys + a, err) != 0)
        return -1;
    *len = (size_t)(b - a);
    return 0;
}

/* The probes of one block of fingerprints blk[0..m) (block b of run r),
 * from probe i on: the exact key of every fingerprint that matches one. */
static int lookup_block(rs_keyidx *x, const run_at *r, uint64_t b, const uint64_t *blk, uint64_t m,
                        const rs_keyidx_probe *p, size_t i, size_t n, rs_buf *key,
                        void (*hit)(void *, uint32_t), void *ctx, rs_error *err)
{
    size_t q = i;
    for (uint64_t j = 0; j < m; j++) {
        if (j > 0 && blk[j] < blk[j - 1])
            return kx_bad(x, err, "not sorted (fingerprints)");
        while (q < n && p[q].fp < blk[j])
            q++;
        if (q == n)
            break;
        if (p[q].fp != blk[j])
            continue;
        size_t len = 0;
        uint64_t before = x->bytes_read;
        if (read_key(x, r, b * RS_KEYIDX1_BLOCK + j, key, &len, err) != 0)
            return -1;
        x->confirm_bytes += x->bytes_read - before;
        x->keys_confirmed += kx_hits(p, q, n, blk[j], key->data, len, hit, ctx);
    }
    return 0;
}

/* One run: its blocks that can hold a probe's fingerprint, merged with
 * the probes. */
static int lookup_run(rs_keyidx *x, const run_at *r, const rs_keyidx_probe *p, size_t n,
                      void (*hit)(void *, uint32_t), void *ctx, rs_error *err)
{
    uint64_t *fence = malloc((r->blocks + 1) * 8), blk[RS_KEYIDX1_BLOCK];
    unsigned char *raw = malloc((r->blocks > RS_KEYIDX1_BLOCK ? r->blocks : RS_KEYIDX1_BLOCK) * 8);
    rs_buf key = {0};
    int rc = 0;
    if (!fence || !raw)
        rc = rs_error_set(err, RS_EXIT_IO, "out of memory");
    else if (r->blocks && kx_read_at(x, raw, 8 * r->blocks, r->fences, err) != 0)
        rc = -1;
    for (uint64_t b = 0; rc == 0 && b < r->blocks; b++)
        fence[b] = kx_get64(raw + 8 * b);
    size_t i = 0;  /* the first probe not yet past */
    for (uint64_t b = 0; rc == 0 && b < r->blocks && i < n; b++) {
        if (b + 1 < r->blocks && fence[b + 1] < fence[b]) {
            rc = kx_bad(x, err, "not sorted (fences)");
            break;
        }
        while (i < n && p[i].fp < fence[b])
            i++;
        /* the block holds fingerprints in [fence[b], fence[b+1]] */
        if (i == n || (b + 1 < r->blocks && p[i].fp > fence[b + 1]))
            continue;
        uint64_t m = b + 1 < r->blocks ? RS_KEYIDX1_BLOCK : r->n - b * RS_KEYIDX1_BLOCK;
        if (kx_read_at(x, raw, 8 * m, r->fps + 8 * b * RS_KEYIDX1_BLOCK, err) != 0) {
            rc = -1;
            break;
        }
        for (uint64_t j = 0; j < m; j++)
            blk[j] = kx_get64(raw + 8 * j);
        if (blk[0] != fence[b])
            rc = kx_bad(x, err, "not sorted (fingerprints)");
        else
            rc = lookup_block(x, r, b, blk, m, p, i, n, &key, hit, ctx, err);
    }
    free(fence);
    free(raw);
    rs_buf_free(&key);
    return rc;
}

/* Calls fn on every run of x, checking that they add up to the file. */
static int each_run(rs_keyidx *x, int (*fn)(rs_keyidx *x, const run_at *r, void *ctx, rs_error *err), void *ctx,
                    rs_error *err)
{
    uint64_t pos = RS_KEYIDX1_HEADER, seen = 0;
    for (uint32_t k = 0; k < x->runs; k++) {
        run_at r;
        if (read_run(x, pos, &r, err) != 0 || fn(x, &r, ctx, err) != 0)
            return -1;
        seen += r.n;
        pos = r.end;
    }
    if (pos != x->size || seen != x->entries)
        return kx_bad(x, err, "runs that do not add up to its header's entries and size");
    return 0;
}

typedef struct {
    const rs_keyidx_probe *p;
    size_t n;
    void (*hit)(void *, uint32_t);
    void *ctx;
} lookup_job;

static int lookup_one(rs_keyidx *x, const run_at *r, void *ctx, rs_error *err)
{
    const lookup_job *j = ctx;
    return lookup_run(x, r, j->p, j->n, j->hit, j->ctx, err);
}

int kx_v1_lookup(rs_keyidx *x, const rs_keyidx_probe *p, size_t n, void (*hit)(void *, uint32_t), void *ctx,
                 rs_error *err)
{
    lookup_job j = {p, n, hit, ctx};
    return each_run(x, lookup_one, &j, err);
}

/* ------------------------------------------------------ reading a run */

/* A run read entry by entry, checked as it goes: a kx_source. */
typedef struct {
    rs_keyidx *x;
    run_at r;
    kx_stream f, o, k;
    unsigned char *mem;    /* the three streams' buffers, allocated at the first entry */
    rs_buf key;
    uint64_t j, prev_fp, prev_off;
} run_cursor;

enum { CURSOR_BUF = 1 << 14 };

static int cursor_start(run_cursor *c, rs_error *err)
{
    if (!(c->mem = malloc(3 * CURSOR_BUF)))
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    c->f = (kx_stream){c->r.fps, c->r.offs, c->mem, 0, 0, CURSOR_BUF};
    c->o = (kx_stream){c->r.offs, c->r.keys, c->mem + CURSOR_BUF, 0, 0, CURSOR_BUF};
    c->k = (kx_stream){c->r.keys, c->r.end, c->mem + 2 * CURSOR_BUF, 0, 0, CURSOR_BUF};
    unsigned char b8[8];
    if (kx_sget(c->x, &c->o, b8, 8, err) != 0)
        return -1;
    if (kx_get64(b8) != 0)
        return kx_bad(c->x, err, "offsets that do not start at 0");
    return 0;
}

static int cursor_next(kx_source *s, rs_error *err)
{
    run_cursor *c = s->impl;
    if (!c->mem && cursor_start(c, err) != 0)
        return -1;
    if (c->j == c->r.n)
        return c->prev_off == c->r.heap ? 0 : kx_bad(c->x, err, "offsets that do not end at its keys' size");
    unsigned char b8[8];
    if (kx_sget(c->x, &c->f, b8, 8, err) != 0)
        return -1;
    uint64_t fp = kx_get64(b8);
    if (kx_sget(c->x, &c->o, b8, 8, err) != 0)
        return -1;
    uint64_t off = kx_get64(b8);
    if (off < c->prev_off || off > c->r.heap)
        return kx_bad(c->x, err, "offsets outside its keys");
    if (c->j > 0 && fp < c->prev_fp)
        return kx_bad(c->x, err, "not sorted (fingerprints)");
    size_t len = (size_t)(off - c->prev_off);
    c->key.len = 0;
    if (rs_buf_reserve(&c->key, len + 1) != 0)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    if (kx_sget(c->x, &c->k, c->key.data, len, err) != 0)
        return -1;
    c->j++;
    c->prev_fp = fp, c->prev_off = off;
    s->fp = fp, s->key = c->key.data, s->len = len;
    return 1;
}

static void cursor_release(kx_source *s)
{
    run_cursor *c = s->impl;
    if (!c)
        return;
    free(c->mem);
    rs_buf_free(&c->key);
    free(c);
    s->impl = NULL;
}

typedef struct {
    kx_source **srcs;
    size_t *n, *cap;
} sources_job;

static int add_source(rs_keyidx *x, const run_at *r, void *ctx, rs_error *err)
{
    sources_job *j = ctx;
    run_cursor *c = calloc(1, sizeof *c);
    if (!c || kx_sources_grow(j->srcs, *j->n, j->cap) != 0) {
        free(c);
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    }
    c->x = x, c->r = *r;
    (*j->srcs)[(*j->n)++] = (kx_source){cursor_next, cursor_release, 0, NULL, 0, c};
    return 0;
}

int kx_v1_sources(rs_keyidx *x, kx_source **srcs, size_t *n, size_t *cap, rs_error *err)
{
    sources_job j = {srcs, n, cap};
    return each_run(x, add_source, &j, err);
}

typedef struct {
    int (*each)(void *, uint64_t, const char *, size_t);
    void *ctx;
} scan_job;

static int scan_one(rs_keyidx *x, const run_at *r, void *ctx, rs_error *err)
{
    const scan_job *j = ctx;
    run_cursor c = {.x = x, .r = *r};
    kx_source s = {cursor_next, cursor_release, 0, NULL, 0, &c};
    int k;
    while ((k = cursor_next(&s, err)) == 1)
        if (j->each(j->ctx, s.fp, s.key, s.len) != 0) {
            k = -1;
            break;
        }
    free(c.mem);
    rs_buf_free(&c.key);
    return k < 0 ? -1 : 0;
}

int kx_v1_scan(rs_keyidx *x, int (*each)(void *, uint64_t, const char *, size_t), void *ctx, rs_error *err)
{
    scan_job j = {each, ctx};
    return each_run(x, scan_one, &j, err);
}
