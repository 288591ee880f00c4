/* Writing version-2 key indexes (ringshard/keyidx.h, docs/format-keyidx.md).
 *
 * Keys arrive in the file's row order. What fits in the writer's memory is
 * sorted (by fingerprint, ties in row order) and, when more keys come,
 * spilled as a sorted run to an unnamed temporary file beside the index.
 * Finishing merges the runs (as many at once as the memory holds; more than that
 * are merged group by group into longer runs first) and streams the
 * merged entries into the file's three regions at once: the filter lines
 * and the range table, whose sizes the number of keys fixes, each through
 * a buffer written at its place, the chunks appended behind them. Every
 * region is written in order, so the file's CRC-32 is the combination of
 * theirs. compact's merge of indexes is the same path with the indexes'
 * runs as the sources. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "dataset/keyidx_impl.h"
#include "ringshard/deflate.h"
#include "util/filemode.h"

enum { SPILL_BUF = 1 << 16, REGION_BUF = 1 << 16 };

static int wfail(rs_keyidx_writer *w, rs_error *err)
{
    return rs_error_set(err, RS_EXIT_IO, "%s: write failed: %s", w->path, strerror(w->failed ? w->failed : EIO));
}

static int pwrite_all(int fd, const void *p, size_t n, uint64_t off)
{
    const char *c = p;
    while (n) {
        ssize_t k = pwrite(fd, c, n, (off_t)off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return errno ? errno : EIO;
        c += k, n -= (size_t)k, off += (uint64_t)k;
    }
    return 0;
}

/* ------------------------------------------------------------ spilling */

struct rs_keyidx_spill {
    int fd;
    uint64_t flushed;      /* bytes in the file */
    unsigned char *buf;    /* SPILL_BUF bytes not yet in the file */
    size_t len;
    uint64_t *runs;        /* [2 * nruns]: each run's start and end */
    size_t nruns, cap;
};

/* An unnamed file in the index's directory (the data's disk, not /tmp's),
 * gone with the process whatever stops it. */
static int spill_open(rs_keyidx_writer *w, rs_error *err)
{
    struct rs_keyidx_spill *sp = calloc(1, sizeof *sp);
    char *copy = strdup(w->path), *tmpl = NULL;
    if (!sp || !copy || !(sp->buf = malloc(SPILL_BUF)))
        goto oom;
    sp->fd = open(dirname(copy), O_TMPFILE | O_RDWR | O_CLOEXEC, rs_file_mode(RS_FILE_SCRATCH));
    if (sp->fd < 0) {   /* mkostemp's mode is the scratch mode, 0600 */
        if (asprintf(&tmpl, "%s.spill.XXXXXX", w->path) < 0)
            goto oom;
        if ((sp->fd = mkostemp(tmpl, O_CLOEXEC)) >= 0)
            unlink(tmpl);
    }
    if (sp->fd < 0) {
        rs_error_set(err, RS_EXIT_IO, "%s: cannot create a temporary file beside it: %s", w->path, strerror(errno));
        goto fail;
    }
    free(copy);
    free(tmpl);
    w->spill = sp;
    return 0;
oom:
    rs_error_set(err, RS_EXIT_IO, "out of memory");
fail:
    if (sp)
        free(sp->buf);
    free(sp);
    free(copy);
    free(tmpl);
    return -1;
}

static void spill_close(struct rs_keyidx_spill *sp)
{
    if (!sp)
        return;
    if (sp->fd >= 0)
        close(sp->fd);
    free(sp->buf);
    free(sp->runs);
    free(sp);
}

static int spill_flush(struct rs_keyidx_spill *sp)
{
    int e = pwrite_all(sp->fd, sp->buf, sp->len, sp->flushed);
    sp->flushed += sp->len;
    sp->len = 0;
    return e;
}

static int spill_put(struct rs_keyidx_spill *sp, const void *p, size_t n)
{
    const unsigned char *c = p;
    while (n) {
        if (sp->len == SPILL_BUF) {
            int e = spill_flush(sp);
            if (e)
                return e;
        }
        size_t k = SPILL_BUF - sp->len < n ? SPILL_BUF - sp->len : n;
        memcpy(sp->buf + sp->len, c, k);
        sp->len += k, c += k, n -= k;
    }
    return 0;
}

/* A record of a spilled run: fingerprint (8), key length (4), key. */
static int spill_entry(void *ctx, uint64_t fp, const char *key, size_t len)
{
    struct rs_keyidx_spill *sp = ctx;
    unsigned char h[12];
    kx_put64(h, fp);
    kx_put32(h + 8, (uint32_t)len);
    int e = spill_put(sp, h, sizeof h);
    return e ? e : spill_put(sp, key, len);
}

static int spill_begin_run(struct rs_keyidx_spill *sp)
{
    if (sp->nruns == sp->cap) {
        size_t nc = sp->cap ? 2 * sp->cap : 16;
        uint64_t *nr = realloc(sp->runs, 2 * nc * sizeof *nr);
        if (!nr)
            return ENOMEM;
        sp->runs = nr, sp->cap = nc;
    }
    sp->runs[2 * sp->nruns] = sp->flushed + sp->len;
    return 0;
}

static int spill_end_run(struct rs_keyidx_spill *sp)
{
    int e = spill_flush(sp);
    sp->runs[2 * sp->nruns + 1] = sp->flushed;
    sp->nruns++;
    return e;
}

/* A spilled run read back: a kx_source. */
typedef struct {
    int fd;
    uint64_t pos, end;
    unsigned char *buf;
    size_t len, at;
    rs_buf key;
    const char *path;
} spill_reader;

static int sr_get(spill_reader *r, void *out, size_t n, rs_error *err)
{
    unsigned char *o = out;
    while (n) {
        if (r->at == r->len) {
            if (!r->buf && !(r->buf = malloc(SPILL_BUF)))
                return rs_error_set(err, RS_EXIT_IO, "out of memory");
            size_t want = r->end - r->pos < SPILL_BUF ? (size_t)(r->end - r->pos) : SPILL_BUF;
            ssize_t k = want ? pread(r->fd, r->buf, want, (off_t)r->pos) : 0;
            if (k <= 0)
                return rs_error_set(err, RS_EXIT_IO, "%s: reading its temporary file: %s", r->path,
                                    k < 0 ? strerror(errno) : "cut short");
            r->pos += (uint64_t)k, r->len = (size_t)k, r->at = 0;
        }
        size_t k = r->len - r->at < n ? r->len - r->at : n;
        memcpy(o, r->buf + r->at, k);
        r->at += k, o += k, n -= k;
    }
    return 0;
}

static int sr_next(kx_source *s, rs_error *err)
{
    spill_reader *r = s->impl;
    if (r->pos == r->end && r->at == r->len)
        return 0;
    unsigned char h[12];
    if (sr_get(r, h, sizeof h, err) != 0)
        return -1;
    size_t len = kx_get32(h + 8);
    r->key.len = 0;
    if (rs_buf_reserve(&r->key, len + 1) != 0)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    if (sr_get(r, r->key.data, len, err) != 0)
        return -1;
    s->fp = kx_get64(h), s->key = r->key.data, s->len = len;
    return 1;
}

static void sr_release(kx_source *s)
{
    spill_reader *r = s->impl;
    if (!r)
        return;
    free(r->buf);
    rs_buf_free(&r->key);
    free(r);
    s->impl = NULL;
}

static int spill_source(rs_keyidx_writer *w, size_t run, kx_source *s, rs_error *err)
{
    spill_reader *r = calloc(1, sizeof *r);
    if (!r)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    r->fd = w->spill->fd, r->pos = w->spill->runs[2 * run], r->end = w->spill->runs[2 * run + 1];
    r->path = w->path;
    *s = (kx_source){sr_next, sr_release, 0, NULL, 0, r};
    return 0;
}

/* -------------------------------------------------- the pending keys */

static int cmp_ent(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;  /* (fp, heap offset, length): ties by offset, the row order */
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : x[1] > y[1];
}

/* The pending keys, sorted: a kx_source. */
typedef struct {
    rs_keyidx_writer *w;
    size_t i;
} mem_reader;

static int mem_next(kx_source *s, rs_error *err)
{
    (void)err;
    mem_reader *m = s->impl;
    if (m->i == m->w->n)
        return 0;
    const uint64_t *e = m->w->ent + 3 * m->i++;
    s->fp = e[0], s->key = m->w->heap.data + e[1], s->len = (size_t)e[2];
    return 1;
}

static void mem_release(kx_source *s) { (void)s; }

static void sort_pending(rs_keyidx_writer *w)
{
    if (w->n)   /* an empty set's array may be NULL: qsort must not see it */
        qsort(w->ent, w->n, 3 * sizeof *w->ent, cmp_ent);
}

static int spill_pending(rs_keyidx_writer *w, rs_error *err)
{
    if (!w->spill && spill_open(w, err) != 0)
        return -1;
    sort_pending(w);
    int e = spill_begin_run(w->spill);
    for (size_t i = 0; !e && i < w->n; i++) {
        const uint64_t *t = w->ent + 3 * i;
        e = spill_entry(w->spill, t[0], w->heap.data + t[1], (size_t)t[2]);
    }
    if (!e)
        e = spill_end_run(w->spill);
    w->n = 0;
    w->heap.len = 0;
    if (e) {
        w->failed = e;
        return wfail(w, err);
    }
    return 0;
}

int rs_keyidx_create(rs_keyidx_writer *w, const char *path, rs_error *err)
{
    memset(w, 0, sizeof *w);
    w->fd = -1;
    rs_keyidx_set_memory(w, RS_KEYIDX_WRITER_MEMORY);
    if (!(w->path = strdup(path)))
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    if ((w->fd = rs_file_create(path, O_RDWR | O_TRUNC, RS_FILE_USER)) < 0) {
        rs_error_set(err, RS_EXIT_IO, "%s: cannot create: %s", path, strerror(errno));
        free(w->path);
        w->path = NULL;
        return -1;
    }
    return 0;
}

void rs_keyidx_set_memory(rs_keyidx_writer *w, uint64_t bytes)
{
    uint64_t room = bytes > RS_KEYIDX_EMIT_MEMORY + ((uint64_t)1 << 20) ? bytes - RS_KEYIDX_EMIT_MEMORY
                                                                        : (uint64_t)1 << 20;
    w->memory = room;
    uint64_t f = room / RS_KEYIDX_SOURCE_MEMORY;
    w->fan_in = f < 2 ? 2 : f > RS_KEYIDX_FAN_IN ? RS_KEYIDX_FAN_IN : (unsigned)f;
}

/* Below a writer's memory floor, for the tests of many merge passes. */
void rs_keyidx_set_memory_for_tests(rs_keyidx_writer *w, uint64_t keys_bytes, unsigned fan_in)
{
    w->memory = keys_bytes;
    w->fan_in = fan_in < 2 ? 2 : fan_in;
}

int rs_keyidx_add(rs_keyidx_writer *w, const void *key, size_t len, rs_error *err)
{
    /* what the pending keys hold once this one is added, as allocated:
     * the entries and the keys (both grow by doubling) and qsort's copy
     * of the entries */
    size_t cap = w->n < w->cap ? w->cap : w->cap ? 2 * w->cap : 1024;
    uint64_t need = (uint64_t)cap * 24 + (uint64_t)(w->n + 1) * 24 + rs_buf_cap_after(&w->heap, len);
    if (w->n && need > w->memory && spill_pending(w, err) != 0)
        return -1;
    if (w->n == w->cap) {
        size_t nc = w->cap ? 2 * w->cap : 1024;
        uint64_t *ne = realloc(w->ent, nc * 3 * sizeof *ne);
        if (!ne)
            return rs_error_set(err, RS_EXIT_IO, "%s: out of memory", w->path);
        w->ent = ne;
        w->cap = nc;
    }
    uint64_t *e = w->ent + 3 * w->n;
    e[0] = rs_keyidx_fp(key, len);
    e[1] = w->heap.len;
    e[2] = len;
    if (rs_buf_append(&w->heap, key, len) != 0)
        return rs_error_set(err, RS_EXIT_IO, "%s: out of memory", w->path);
    w->n++;
    w->entries++;
    return 0;
}

static void release(rs_keyidx_writer *w)
{
    if (w->fd >= 0)
        close(w->fd);
    spill_close(w->spill);
    rs_buf_free(&w->heap);
    free(w->ent);
    free(w->path);
    memset(w, 0, sizeof *w);
}

void rs_keyidx_abort(rs_keyidx_writer *w)
{
    if (w->path)
        unlink(w->path);
    release(w);
}

int rs_keyidx_finish(rs_keyidx_writer *w, const rs_keyidx_of *of, uint64_t *file_bytes, uint32_t *crc32,
                     rs_error *err)
{
    if (w->spill) {
        if (w->n && spill_pending(w, err) != 0) {
            rs_keyidx_abort(w);
            return -1;
        }
        rs_buf_free(&w->heap);   /* the merge's memory now */
        free(w->ent);
        w->ent = NULL, w->cap = 0;
        return kx_write_sorted(w, NULL, 0, w->entries, of, file_bytes, crc32, err);
    }
    sort_pending(w);
    mem_reader m = {w, 0};
    kx_source s = {mem_next, mem_release, 0, NULL, 0, &m};
    return kx_write_sorted(w, &s, 1, w->entries, of, file_bytes, crc32, err);
}

/* ------------------------------------------------------------- merging */

/* A heap of sources by (fingerprint, source number). */
typedef struct {
    kx_source *s;
    size_t *h, n;
} heap;

static int before(const heap *q, size_t a, size_t b)
{
    const kx_source *x = &q->s[a], *y = &q->s[b];
    return x->fp != y->fp ? x->fp < y->fp : a < b;
}

static void sift_down(heap *q, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < q->n && before(q, q->h[l], q->h[m]))
            m = l;
        if (l + 1 < q->n && before(q, q->h[l + 1], q->h[m]))
            m = l + 1;
        if (m == i)
            return;
        size_t t = q->h[i];
        q->h[i] = q->h[m], q->h[m] = t;
        i = m;
    }
}

/* Merges s[0..n) into out(ctx, fp, key, len), in order; releases them. */
static int merge(kx_source *s, size_t n, int (*out)(void *, uint64_t, const char *, size_t), void *ctx,
                 rs_error *err)
{
    heap q = {s, malloc((n + 1) * sizeof(size_t)), 0};
    int rc = q.h ? 0 : rs_error_set(err, RS_EXIT_IO, "out of memory");
    for (size_t i = 0; rc == 0 && i < n; i++) {
        int k = s[i].next(&s[i], err);
        if (k < 0)
            rc = -1;
        else if (k == 1)
            q.h[q.n++] = i;
    }
    for (size_t i = q.n / 2; rc == 0 && i-- > 0;)
        sift_down(&q, i);
    while (rc == 0 && q.n) {
        kx_source *top = &s[q.h[0]];
        int e = out(ctx, top->fp, top->key, top->len);
        if (e) {
            rc = e < 0 ? -1 : rs_error_set(err, RS_EXIT_IO, "writing a key index: %s", strerror(e));
            break;
        }
        int k = top->next(top, err);
        if (k < 0)
            rc = -1;
        else if (k == 0)
            q.h[0] = q.h[--q.n];
        if (q.n)
            sift_down(&q, 0);
    }
    for (size_t i = 0; i < n; i++)
        s[i].release(&s[i]);
    free(q.h);
    return rc;
}

static void release_all(kx_source *s, size_t from, size_t to)
{
    for (size_t k = from; k < to; k++)
        s[k].release(&s[k]);
}

/* Merges groups of w->fan_in consecutive sources into spilled runs
 * until no more than that many are left (in place: a group's run takes a
 * place its sources left). On failure every source is released. */
static int reduce(rs_keyidx_writer *w, kx_source *s, size_t *n, rs_error *err)
{
    while (*n > w->fan_in) {
        size_t out = 0;
        if (!w->spill && spill_open(w, err) != 0) {
            release_all(s, 0, *n);
            return -1;
        }
        for (size_t a = 0; a < *n; a += w->fan_in) {
            size_t b = a + w->fan_in < *n ? a + w->fan_in : *n;
            int e = spill_begin_run(w->spill), rc = 0, ran = !e;
            if (ran && (rc = merge(s + a, b - a, spill_entry, w->spill, err)) == 0)
                e = spill_end_run(w->spill);
            if (e)
                w->failed = e, rc = wfail(w, err);
            else if (rc == 0)
                rc = spill_source(w, w->spill->nruns - 1, &s[out], err);
            if (rc != 0) {
                if (!ran)   /* merge releases its sources */
                    release_all(s, a, b);
                release_all(s, b, *n);
                release_all(s, 0, out);
                return -1;
            }
            out++;
        }
        *n = out;
    }
    return 0;
}

/* ------------------------------------------------------------ emitting */

/* One region of the file, written in order through a buffer. */
typedef struct {
    int fd;
    uint64_t at;           /* where the region starts */
    uint64_t bytes;        /* written (and buffered) so far */
    unsigned char *buf;
    size_t len;
    uint32_t crc;
    int failed;
} region;

static void region_flush(region *r)
{
    if (!r->failed && r->len)
        r->failed = pwrite_all(r->fd, r->buf, r->len, r->at + r->bytes - r->len);
    r->len = 0;
}

static void region_put(region *r, const void *p, size_t n)
{
    const unsigned char *c = p;
    r->crc = rs_crc32(r->crc, p, n);
    while (n) {
        if (r->len == REGION_BUF)
            region_flush(r);
        size_t k = REGION_BUF - r->len < n ? REGION_BUF - r->len : n;
        memcpy(r->buf + r->len, c, k);
        r->len += k, r->bytes += k, c += k, n -= k;
    }
}

typedef struct {
    uint64_t n, seen, lines, ranges, line, tabled, prev_fp, key_bytes, chunks;
    uint32_t bits;
    region filter, table, data;
    unsigned char cur[RS_KEYIDX_LINE];
    rs_buf lens, keys, raw, out;
    uint32_t ckeys;
    size_t clen;                   /* the pending chunk's first key's length */
    int fixed;                     /* its keys all have that length */
    uint64_t last_fp;
    z_stream z;
    int z_live, unsorted;
} emitter;

static void put_line(emitter *m)
{
    kx_put32(m->cur + RS_KEYIDX_LINE - 4, rs_crc32(0, m->cur, RS_KEYIDX_LINE - 4));
    region_put(&m->filter, m->cur, RS_KEYIDX_LINE);
    memset(m->cur, 0, sizeof m->cur);
}

/* Entry m->tabled of the range table. */
static void put_table(emitter *m)
{
    unsigned char b[RS_KEYIDX_ENTRY];
    kx_put64(b, m->data.bytes);
    kx_put32(b + 8, kx_entry_crc(m->tabled, m->data.bytes));
    region_put(&m->table, b, sizeof b);
}

static int put_leb(rs_buf *b, uint64_t v)
{
    unsigned char t[10];
    size_t n = 0;
    do {
        t[n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    return rs_buf_append(b, t, n);
}

/* The pending chunk's header and payload into the data region. */
static int put_payload(emitter *m, unsigned how, const char *pay, size_t plen, size_t raw)
{
    unsigned char h[24];
    kx_put32(h + 4, (uint32_t)plen);
    kx_put32(h + 8, (uint32_t)raw);
    h[12] = (unsigned char)m->ckeys, h[13] = (unsigned char)(m->ckeys >> 8);
    h[14] = (unsigned char)how, h[15] = 0;
    kx_put64(h + 16, m->last_fp);
    kx_put32(h, rs_crc32(rs_crc32(0, h + 4, 20), pay, plen));
    region_put(&m->data, h, sizeof h);
    region_put(&m->data, pay, plen);
    m->chunks++;
    m->ckeys = 0;
    m->lens.len = m->keys.len = 0;
    return 0;
}

/* The pending chunk PACKED into m->out (keyidx_impl.h), when its keys
 * qualify: 1; 0 when they do not; -1 out of memory. */
static int pack_chunk(emitter *m)
{
    size_t n = m->ckeys, L = m->clen;
    if (!m->fixed || L == 0)
        return 0;
    unsigned char present[256] = {0}, sym[256], alpha[KX_ALPHABET_MAX];
    const unsigned char *k8 = (const unsigned char *)m->keys.data;
    for (size_t i = 0; i < m->keys.len; i++)
        present[k8[i]] = 1;
    unsigned a = 0;
    for (unsigned c = 0; c < 256; c++)
        if (present[c]) {
            if (a == KX_ALPHABET_MAX)
                return 0;
            sym[c] = (unsigned char)a;
            alpha[a++] = (unsigned char)c;
        }
    unsigned k = kx_pack_bits(a);
    size_t per = (L * k + 7) / 8;
    m->out.len = 0;
    if (rs_buf_reserve(&m->out, 1 + a + 10 + n * per) != 0)
        return -1;
    unsigned char *o = (unsigned char *)m->out.data;
    *o++ = (unsigned char)a;
    memcpy(o, alpha, a);
    o += a;
    m->out.len = 1 + a;
    if (put_leb(&m->out, L) != 0)
        return -1;
    o = (unsigned char *)m->out.data + m->out.len;
    for (size_t i = 0; i < n; i++) {
        uint64_t acc = 0;
        unsigned nb = 0;
        for (size_t j = 0; j < L; j++) {
            acc = acc << k | sym[k8[i * L + j]];
            for (nb += k; nb >= 8; nb -= 8)
                *o++ = (unsigned char)(acc >> (nb - 8));
            acc &= ((uint64_t)1 << nb) - 1;
        }
        if (nb)
            *o++ = (unsigned char)(acc << (8 - nb));
    }
    m->out.len = (size_t)(o - (unsigned char *)m->out.data);
    return 1;
}

/* Encodes the pending chunk (packed, or deflated, or stored) and appends
 * it to the data region. */
static int put_chunk(emitter *m)
{
    if (!m->ckeys)
        return 0;
    int packed = pack_chunk(m);
    if (packed < 0)
        return ENOMEM;
    if (packed)
        return put_payload(m, KX_PACKED, m->out.data, m->out.len, m->keys.len);
    m->raw.len = 0;
    if (rs_buf_append(&m->raw, m->lens.data, m->lens.len) != 0 || rs_buf_append(&m->raw, m->keys.data, m->keys.len) != 0)
        return ENOMEM;
    uLong bound = deflateBound(&m->z, (uLong)m->raw.len);
    m->out.len = 0;
    if (rs_buf_reserve(&m->out, bound) != 0)
        return ENOMEM;
    deflateReset(&m->z);
    m->z.next_in = (Bytef *)m->raw.data, m->z.avail_in = (uInt)m->raw.len;
    m->z.next_out = (Bytef *)m->out.data, m->z.avail_out = (uInt)bound;
    int stored = deflate(&m->z, Z_FINISH) != Z_STREAM_END || m->z.total_out >= m->raw.len;
    if (stored)
        return put_payload(m, KX_STORED, m->raw.data, m->raw.len, m->raw.len);
    return put_payload(m, KX_DEFLATED, m->out.data, (size_t)m->z.total_out, m->raw.len);
}

/* The next entry of the merged stream into the three regions. */
static int emit_entry(void *ctx, uint64_t fp, const char *key, size_t len)
{
    emitter *m = ctx;
    if ((m->seen && fp < m->prev_fp) || m->seen == m->n) {
        m->unsorted = 1;
        return -1;
    }
    uint64_t line = kx_part(fp, m->lines, m->bits), range = kx_part(fp, m->ranges, m->bits);
    for (; m->line < line; m->line++)
        put_line(m);
    kx_line_set(m->cur, fp);
    int e = 0;
    /* range r's entry is written with its first key: a key of a range
     * without one starts a range (after the ranges without keys) */
    if (range >= m->tabled || m->ckeys == RS_KEYIDX_CHUNK_KEYS || (m->ckeys && m->keys.len + len > RS_KEYIDX_CHUNK_RAW))
        e = put_chunk(m);
    for (; !e && m->tabled <= range; m->tabled++)
        put_table(m);
    if (e || put_leb(&m->lens, len) != 0 || rs_buf_append(&m->keys, key, len) != 0)
        return e ? e : ENOMEM;
    if (!m->ckeys)
        m->clen = len, m->fixed = 1;
    else if (len != m->clen)
        m->fixed = 0;
    m->ckeys++;
    m->last_fp = fp;
    m->prev_fp = fp;
    m->seen++;
    m->key_bytes += len;
    return 0;
}

static void header(const emitter *m, const rs_keyidx_of *of, unsigned char *h)
{
    memset(h, 0, RS_KEYIDX_HEADER);
    memcpy(h, RS_KEYIDX_MAGIC, 8);
    kx_put32(h + 8, 2);
    kx_put32(h + 12, of->flags);
    kx_put64(h + 16, m->n);
    kx_put32(h + 24, m->bits);
    kx_put32(h + 28, RS_KEYIDX_RANGE_KEYS);
    kx_put64(h + 32, of->rows);
    kx_put64(h + 40, of->bytes);
    kx_put32(h + 48, of->crc32);
    kx_put32(h + 52, RS_KEYIDX_FILTER_BITS);
    kx_put64(h + 56, m->lines);
    kx_put64(h + 64, m->ranges);
    kx_put64(h + 72, m->filter.at);
    kx_put64(h + 80, m->table.at);
    kx_put64(h + 88, m->data.at);
    kx_put64(h + 96, m->data.bytes);
    kx_put64(h + 104, m->key_bytes);
    kx_put64(h + 112, m->chunks);
    kx_put32(h + 124, rs_crc32(0, h, 124));
}

static int emitter_init(emitter *m, int fd, uint64_t n)
{
    memset(m, 0, sizeof *m);
    m->n = n, m->bits = kx_fp_bits();
    m->lines = kx_lines_for(n), m->ranges = kx_ranges_for(n);
    m->filter = (region){fd, RS_KEYIDX_HEADER, 0, malloc(REGION_BUF), 0, 0, 0};
    m->table = (region){fd, m->filter.at + m->lines * RS_KEYIDX_LINE, 0, malloc(REGION_BUF), 0, 0, 0};
    m->data = (region){fd, m->table.at + RS_KEYIDX_ENTRY * (m->ranges + 1), 0, malloc(REGION_BUF), 0, 0, 0};
    /* level 6, filtered: keys in fingerprint order have little to match
     * but their alphabet (docs/format-keyidx.md has the sizes) */
    m->z_live = deflateInit2(&m->z, 6, Z_DEFLATED, -15, 8, Z_FILTERED) == Z_OK;
    return m->filter.buf && m->table.buf && m->data.buf && m->z_live ? 0 : ENOMEM;
}

static void emitter_free(emitter *m)
{
    free(m->filter.buf);
    free(m->table.buf);
    free(m->data.buf);
    rs_buf_free(&m->lens);
    rs_buf_free(&m->keys);
    rs_buf_free(&m->raw);
    rs_buf_free(&m->out);
    if (m->z_live)
        deflateEnd(&m->z);
}

/* Ends the regions, writes the header, closes the file. */
static int emitter_end(emitter *m, rs_keyidx_writer *w, const rs_keyidx_of *of, uint64_t *file_bytes, uint32_t *crc)
{
    int e = put_chunk(m);
    for (; m->line < m->lines; m->line++)
        put_line(m);
    for (; m->tabled <= m->ranges; m->tabled++)   /* through entry R, the chunks' size */
        put_table(m);
    region_flush(&m->filter), region_flush(&m->table), region_flush(&m->data);
    unsigned char h[RS_KEYIDX_HEADER];
    header(m, of, h);
    e = e ? e : m->filter.failed ? m->filter.failed : m->table.failed ? m->table.failed : m->data.failed;
    if (!e)
        e = pwrite_all(w->fd, h, sizeof h, 0);
    if (close(w->fd) != 0 && !e)
        e = errno ? errno : EIO;
    w->fd = -1;
    uint32_t c = rs_crc32_combine(rs_crc32(0, h, sizeof h), m->filter.crc, m->filter.bytes);
    c = rs_crc32_combine(c, m->table.crc, m->table.bytes);
    *crc = rs_crc32_combine(c, m->data.crc, m->data.bytes);
    *file_bytes = m->data.at + m->data.bytes;
    return e;
}

/* w's spilled runs, then srcs[0..n), as one array; on failure every
 * source is released. */
static kx_source *gather(rs_keyidx_writer *w, kx_source *srcs, size_t n, size_t *nall, rs_error *err)
{
    size_t nspill = w->spill ? w->spill->nruns : 0;
    kx_source *all = malloc((nspill + n + 1) * sizeof *all);
    *nall = 0;
    if (!all) {
        release_all(srcs, 0, n);
        rs_error_set(err, RS_EXIT_IO, "out of memory");
        return NULL;
    }
    for (size_t k = 0; k < nspill; k++)
        if (spill_source(w, k, &all[(*nall)++], err) != 0) {
            release_all(all, 0, --*nall);
            release_all(srcs, 0, n);
            free(all);
            return NULL;
        }
    for (size_t k = 0; k < n; k++)
        all[(*nall)++] = srcs[k];
    return all;
}

int kx_write_sorted(rs_keyidx_writer *w, kx_source *srcs, size_t n, uint64_t entries, const rs_keyidx_of *of,
                    uint64_t *file_bytes, uint32_t *crc32, rs_error *err)
{
    size_t nall;
    kx_source *all = gather(w, srcs, n, &nall, err);
    int rc = all ? reduce(w, all, &nall, err) : -1;
    emitter m;
    if (rc == 0 && emitter_init(&m, w->fd, entries) != 0) {
        rc = rs_error_set(err, RS_EXIT_IO, "out of memory");
        emitter_free(&m);
        release_all(all, 0, nall);
    }
    if (rc == 0) {
        int e;
        rc = merge(all, nall, emit_entry, &m, err);
        if ((rc == 0 || m.unsorted) && m.seen != entries)
            m.unsorted = 1;
        if (m.unsorted)
            rc = rs_error_set(err, RS_EXIT_DATA, "%s: the keys merged are not in order, or not as many as their "
                                                 "indexes say (a damaged index among them?)", w->path);
        if (rc == 0 && (e = emitter_end(&m, w, of, file_bytes, crc32)) != 0)
            w->failed = e, rc = wfail(w, err);
        emitter_free(&m);
    }
    free(all);
    if (rc != 0)
        rs_keyidx_abort(w);
    else
        release(w);
    return rc;
}
