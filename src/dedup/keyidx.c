/* Key indexes (ringshard/keyidx.h): writing them in bounded memory,
 * looking keys up, scanning them for verify.
 *
 * Why sorted fingerprints with fences and not a hash table on disk: an
 * append's new keys are few against the history's, and sorted, they touch
 * the history's fingerprint blocks in one forward pass, reading only the
 * blocks that can hold them (a fence per 512 fingerprints says which);
 * the exact keys, needed only for the fingerprints that match, are read
 * one by one. A file too big to sort in memory is written as several
 * sorted runs, each looked up the same way. */
#define _GNU_SOURCE
#include "ringshard/keyidx.h"
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ringshard/deflate.h"
#include "ringshard/hash.h"

/* ---------------------------------------------------------- fingerprint */

static uint64_t fp_mask(void)
{
    static uint64_t mask;
    static int ready;
    if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
        const char *v = getenv("RINGSHARD_TEST_FP_BITS");   /* testing knob: forced collisions */
        long bits = v && *v ? strtol(v, NULL, 10) : 64;
        uint64_t m = bits >= 64 || bits < 1 ? UINT64_MAX : (((uint64_t)1 << bits) - 1);
        __atomic_store_n(&mask, m, __ATOMIC_RELAXED);
        __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    }
    return __atomic_load_n(&mask, __ATOMIC_RELAXED);
}

static uint32_t fp_bits(void)
{
    uint64_t m = fp_mask();
    uint32_t b = 0;
    while (b < 64 && (m >> b) & 1)
        b++;
    return b;
}

uint64_t rs_keyidx_fp(const void *key, size_t len)
{
    uint64_t h[2];
    rs_murmur3_x64_128(key, len, RS_KEYIDX_SEED, h);
    return h[0] & fp_mask();
}

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_u64(const unsigned char *p)
{
    return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
}

/* -------------------------------------------------------------- writing */

static void put(rs_keyidx_writer *w, const void *p, size_t n)
{
    if (w->failed || n == 0)
        return;
    if (fwrite(p, 1, n, w->f) != n) {
        w->failed = errno ? errno : EIO;
        return;
    }
    w->crc = rs_crc32(w->crc, p, n);
    w->bytes += n;
}

static void put64(rs_keyidx_writer *w, uint64_t v)
{
    unsigned char b[8];
    put_u64(b, v);
    put(w, b, 8);
}

static int cmp_ent(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;  /* (fp, heap offset, length): ties by offset, the row order */
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : x[1] > y[1];
}

/* Sorts and writes the pending keys as one run. */
static void flush_run(rs_keyidx_writer *w)
{
    if (w->n == 0)
        return;
    uint64_t *e = w->ent, n = w->n, blocks = (n + RS_KEYIDX_BLOCK - 1) / RS_KEYIDX_BLOCK;
    qsort(e, n, 3 * sizeof *e, cmp_ent);
    uint64_t heap = 0;
    for (size_t i = 0; i < n; i++)
        heap += e[3 * i + 2];
    put64(w, n), put64(w, blocks), put64(w, heap), put64(w, 0);
    for (uint64_t k = 0; k < blocks; k++)
        put64(w, e[3 * k * RS_KEYIDX_BLOCK]);
    for (size_t i = 0; i < n; i++)
        put64(w, e[3 * i]);
    uint64_t off = 0;
    for (size_t i = 0; i <= n; i++) {
        put64(w, off);
        off += i < n ? e[3 * i + 2] : 0;
    }
    for (size_t i = 0; i < n; i++)
        put(w, w->heap.data + e[3 * i + 1], e[3 * i + 2]);
    w->runs++;
    w->n = 0;
    w->heap.len = 0;
}

int rs_keyidx_create(rs_keyidx_writer *w, const char *path, rs_error *err)
{
    memset(w, 0, sizeof *w);
    if (!(w->path = strdup(path)))
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    if (!(w->f = fopen(path, "w"))) {
        rs_error_set(err, RS_EXIT_IO, "%s: cannot create: %s", path, strerror(errno));
        free(w->path);
        return -1;
    }
    static const unsigned char zero[RS_KEYIDX_HEADER];
    if (fwrite(zero, 1, sizeof zero, w->f) != sizeof zero)
        w->failed = errno ? errno : EIO;
    return 0;
}

int rs_keyidx_add(rs_keyidx_writer *w, const void *key, size_t len, rs_error *err)
{
    /* A run ends at a size of the data's alone - never of --memory or -j -
     * so that the index's bytes are the same for any of them */
    if (w->n && (w->n == RS_KEYIDX_RUN_KEYS || w->heap.len + len > RS_KEYIDX_RUN_BYTES))
        flush_run(w);
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
    if (w->failed)
        return rs_error_set(err, RS_EXIT_IO, "%s: write failed: %s", w->path, strerror(w->failed));
    return 0;
}

static void release(rs_keyidx_writer *w)
{
    if (w->f)
        fclose(w->f);
    rs_buf_free(&w->heap);
    free(w->ent);
    free(w->path);
    memset(w, 0, sizeof *w);
}

int rs_keyidx_finish(rs_keyidx_writer *w, const rs_keyidx_of *of, uint64_t *file_bytes, uint32_t *crc32,
                     rs_error *err)
{
    flush_run(w);
    unsigned char h[RS_KEYIDX_HEADER] = {0};
    memcpy(h, RS_KEYIDX_MAGIC, 8);
    put_u32(h + 8, 1);
    put_u32(h + 12, of->flags);
    put_u64(h + 16, w->entries);
    put_u32(h + 24, fp_bits());
    put_u32(h + 28, w->runs);
    put_u64(h + 32, of->rows);
    put_u64(h + 40, of->bytes);
    put_u32(h + 48, of->crc32);
    put_u32(h + 56, rs_crc32(0, h, 56));
    if (!w->failed && fflush(w->f) != 0)
        w->failed = errno ? errno : EIO;
    if (!w->failed && pwrite(fileno(w->f), h, sizeof h, 0) != (ssize_t)sizeof h)
        w->failed = errno ? errno : EIO;
    if (fclose(w->f) != 0 && !w->failed)
        w->failed = errno ? errno : EIO;
    w->f = NULL;
    int rc = 0;
    if (w->failed) {
        rc = rs_error_set(err, RS_EXIT_IO, "%s: write failed: %s", w->path, strerror(w->failed));
    } else {
        *file_bytes = RS_KEYIDX_HEADER + w->bytes;
        *crc32 = rs_crc32_combine(rs_crc32(0, h, sizeof h), w->crc, w->bytes);
    }
    release(w);
    return rc;
}

void rs_keyidx_abort(rs_keyidx_writer *w)
{
    if (w->path)
        unlink(w->path);
    release(w);
}

/* -------------------------------------------------------------- reading */

static int bad(const rs_keyidx *x, rs_error *err, const char *what)
{
    return rs_error_set(err, RS_EXIT_VERIFY, "%s: key index %s", x->path, what);
}

static int read_at(rs_keyidx *x, void *buf, size_t n, uint64_t off, rs_error *err)
{
    size_t got = 0;
    while (got < n) {
        ssize_t k = pread(x->fd, (char *)buf + got, n - got, (off_t)(off + got));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return k < 0 ? rs_error_set(err, RS_EXIT_IO, "%s: read error: %s", x->path, strerror(errno))
                         : bad(x, err, "ends early (cut short?)");
        got += (size_t)k;
    }
    x->bytes_read += n;
    return 0;
}

int rs_keyidx_open(rs_keyidx *x, int dirfd, const char *name, const char *path, const rs_keyidx_of *want,
                   uint64_t size, rs_error *err)
{
    memset(x, 0, sizeof *x);
    x->fd = -1;
    if (!(x->path = strdup(path)))
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    if ((x->fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC)) < 0) {
        rs_error_set(err, RS_EXIT_IO, "%s: cannot open: %s", path, strerror(errno));
        goto fail;
    }
    struct stat st;
    if (fstat(x->fd, &st) != 0 || (uint64_t)st.st_size != size) {
        rs_error_set(err, RS_EXIT_VERIFY, "%s: key index of %llu bytes, the manifest says %llu", path,
                     (unsigned long long)st.st_size, (unsigned long long)size);
        goto fail;
    }
    x->size = size;
    unsigned char h[RS_KEYIDX_HEADER];
    if (size < sizeof h) {
        bad(x, err, "shorter than its header");
        goto fail;
    }
    if (read_at(x, h, sizeof h, 0, err) != 0)
        goto fail;
    if (memcmp(h, RS_KEYIDX_MAGIC, 8) != 0 || get_u32(h + 8) != 1 || get_u32(h + 56) != rs_crc32(0, h, 56)) {
        bad(x, err, "header: not a version-1 key index, or damaged");
        goto fail;
    }
    x->of = (rs_keyidx_of){get_u64(h + 32), get_u64(h + 40), get_u32(h + 48), get_u32(h + 12)};
    x->entries = get_u64(h + 16);
    x->fp_bits = get_u32(h + 24);
    x->runs = get_u32(h + 28);
    if (want && (x->of.rows != want->rows || x->of.bytes != want->bytes || x->of.crc32 != want->crc32 ||
                 x->of.flags != want->flags || x->entries != want->rows)) {
        bad(x, err, x->of.flags != want->flags ? "holds the keys of another mode (by key / by row)"
                                               : "describes another file than the manifest's (rows, bytes, CRC-32)");
        goto fail;
    }
    if (x->fp_bits != fp_bits()) {
        bad(x, err, "fingerprints of another width than this run's (RINGSHARD_TEST_FP_BITS)");
        goto fail;
    }
    return 0;
fail:
    rs_keyidx_close(x);
    return -1;
}

void rs_keyidx_close(rs_keyidx *x)
{
    if (x->fd >= 0)
        close(x->fd);
    free(x->path);
    memset(x, 0, sizeof *x);
    x->fd = -1;
}

static int cmp_probe(const void *a, const void *b)
{
    const rs_keyidx_probe *x = a, *y = b;
    if (x->fp != y->fp)
        return x->fp < y->fp ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

void rs_keyidx_probe_sort(rs_keyidx_probe *p, size_t n)
{
    qsort(p, n, sizeof *p, cmp_probe);
}

/* A run's place in the file. */
typedef struct {
    uint64_t n, blocks, heap;
    uint64_t fences, fps, offs, keys;  /* file offsets */
    uint64_t end;
} run_at;

static int read_run(rs_keyidx *x, uint64_t pos, run_at *r, rs_error *err)
{
    unsigned char h[RS_KEYIDX_RUN_HEADER];
    if (pos + sizeof h > x->size)
        return bad(x, err, "ends before its runs do");
    if (read_at(x, h, sizeof h, pos, err) != 0)
        return -1;
    r->n = get_u64(h), r->blocks = get_u64(h + 8), r->heap = get_u64(h + 16);
    if (r->n > x->size / 16 || r->blocks != (r->n + RS_KEYIDX_BLOCK - 1) / RS_KEYIDX_BLOCK || r->heap > x->size)
        return bad(x, err, "run header: counts that do not fit the file");
    r->fences = pos + sizeof h;
    r->fps = r->fences + 8 * r->blocks;
    r->offs = r->fps + 8 * r->n;
    r->keys = r->offs + 8 * (r->n + 1);
    r->end = r->keys + r->heap;
    if (r->end > x->size)
        return bad(x, err, "run larger than the file");
    return 0;
}

/* Key j of run r into key (grown as needed); its length in *len. */
static int read_key(rs_keyidx *x, const run_at *r, uint64_t j, rs_buf *key, size_t *len, rs_error *err)
{
    unsigned char o[16];
    if (read_at(x, o, sizeof o, r->offs + 8 * j, err) != 0)
        return -1;
    uint64_t a = get_u64(o), b = get_u64(o + 8);
    if (a > b || b > r->heap)
        return bad(x, err, "offsets outside its keys");
    key->len = 0;
    if (rs_buf_reserve(key, (size_t)(b - a) + 1) != 0)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    if (read_at(x, key->data, (size_t)(b - a), r->keys + a, err) != 0)
        return -1;
    *len = (size_t)(b - a);
    return 0;
}

/* The probes among p[lo..hi) whose fingerprint is fp and whose key is
 * history key k get hit. */
static uint64_t hits_of(const rs_keyidx_probe *p, size_t i, size_t n, uint64_t fp, const char *k, size_t klen,
                        void (*hit)(void *, uint32_t), void *ctx)
{
    uint64_t found = 0;
    for (; i < n && p[i].fp == fp; i++)
        if (p[i].len == klen && memcmp(p[i].key, k, klen) == 0) {
            hit(ctx, p[i].id);
            found++;
        }
    return found;
}

/* One run: its blocks that can hold a probe's fingerprint, merged with
 * the probes. */
static int lookup_run(rs_keyidx *x, const run_at *r, const rs_keyidx_probe *p, size_t n,
                      void (*hit)(void *, uint32_t), void *ctx, rs_error *err)
{
    uint64_t *fence = malloc((r->blocks + 1) * 8), blk[RS_KEYIDX_BLOCK];
    /* the fences, then one block of fingerprints at a time */
    unsigned char *raw = malloc((r->blocks > RS_KEYIDX_BLOCK ? r->blocks : RS_KEYIDX_BLOCK) * 8);
    rs_buf key = {0};
    int rc = 0;
    if (!fence || !raw) {
        rc = rs_error_set(err, RS_EXIT_IO, "out of memory");
        goto out;
    }
    if (r->blocks && read_at(x, raw, 8 * r->blocks, r->fences, err) != 0) {
        rc = -1;
        goto out;
    }
    for (uint64_t b = 0; b < r->blocks; b++)
        fence[b] = get_u64(raw + 8 * b);
    size_t i = 0;  /* the first probe not yet past */
    for (uint64_t b = 0; b < r->blocks && i < n && rc == 0; b++) {
        if (b + 1 < r->blocks && fence[b + 1] < fence[b]) {
            rc = bad(x, err, "not sorted (fences)");
            break;
        }
        while (i < n && p[i].fp < fence[b])
            i++;
        /* the block holds fingerprints in [fence[b], fence[b+1]] */
        if (i == n || (b + 1 < r->blocks && p[i].fp > fence[b + 1]))
            continue;
        uint64_t m = b + 1 < r->blocks ? RS_KEYIDX_BLOCK : r->n - b * RS_KEYIDX_BLOCK;
        if (read_at(x, raw, 8 * m, r->fps + 8 * b * RS_KEYIDX_BLOCK, err) != 0) {
            rc = -1;
            break;
        }
        for (uint64_t j = 0; j < m; j++)
            blk[j] = get_u64(raw + 8 * j);
        size_t q = i;
        for (uint64_t j = 0; j < m && rc == 0; j++) {
            if ((j > 0 && blk[j] < blk[j - 1]) || (j == 0 && blk[0] != fence[b])) {
                rc = bad(x, err, "not sorted (fingerprints)");
                break;
            }
            while (q < n && p[q].fp < blk[j])
                q++;
            if (q == n)
                break;
            if (p[q].fp != blk[j])
                continue;
            size_t len;
            uint64_t before = x->bytes_read;
            if (read_key(x, r, b * RS_KEYIDX_BLOCK + j, &key, &len, err) != 0) {
                rc = -1;
            } else {
                x->confirm_bytes += x->bytes_read - before;
                x->keys_confirmed += hits_of(p, q, n, blk[j], key.data, len, hit, ctx);
            }
        }
    }
out:
    free(fence);
    free(raw);
    rs_buf_free(&key);
    return rc;
}

/* Calls fn on every run of x, checking that they add up to the file. */
static int each_run(rs_keyidx *x, int (*fn)(rs_keyidx *x, const run_at *r, void *ctx, rs_error *err), void *ctx,
                    rs_error *err)
{
    uint64_t pos = RS_KEYIDX_HEADER, seen = 0;
    for (uint32_t k = 0; k < x->runs; k++) {
        run_at r;
        if (read_run(x, pos, &r, err) != 0 || fn(x, &r, ctx, err) != 0)
            return -1;
        seen += r.n;
        pos = r.end;
    }
    if (pos != x->size || seen != x->entries)
        return bad(x, err, "runs that do not add up to its header's entries and size");
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
    return j->n ? lookup_run(x, r, j->p, j->n, j->hit, j->ctx, err) : 0;
}

int rs_keyidx_lookup(rs_keyidx *x, const rs_keyidx_probe *p, size_t n, void (*hit)(void *ctx, uint32_t id),
                     void *ctx, rs_error *err)
{
    lookup_job j = {p, n, hit, ctx};
    return each_run(x, lookup_one, &j, err);
}

/* A forward reader of one region of the file, through a buffer. */
typedef struct {
    uint64_t pos, end;
    unsigned char *buf;
    size_t len, at, cap;
} stream;

static int sget(rs_keyidx *x, stream *s, void *out, size_t n, rs_error *err)
{
    unsigned char *o = out;
    while (n) {
        if (s->at == s->len) {
            uint64_t left = s->end - s->pos;
            if (left == 0)
                return bad(x, err, "ends early (cut short?)");
            s->len = left < s->cap ? (size_t)left : s->cap;
            if (read_at(x, s->buf, s->len, s->pos, err) != 0)
                return -1;
            s->pos += s->len;
            s->at = 0;
        }
        size_t k = s->len - s->at < n ? s->len - s->at : n;
        memcpy(o, s->buf + s->at, k);
        s->at += k, o += k, n -= k;
    }
    return 0;
}

static int scan_run(rs_keyidx *x, const run_at *r, int (*each)(void *, uint64_t, const char *, size_t), void *ctx,
                    rs_error *err)
{
    enum { CAP = 1 << 16 };
    stream f = {r->fps, r->offs, malloc(CAP), 0, 0, CAP}, o = {r->offs, r->keys, malloc(CAP), 0, 0, CAP},
           k = {r->keys, r->end, malloc(CAP), 0, 0, CAP};
    rs_buf key = {0};
    int rc = 0;
    unsigned char b8[8];
    uint64_t prev_fp = 0, prev_off = 0;
    if (!f.buf || !o.buf || !k.buf)
        rc = rs_error_set(err, RS_EXIT_IO, "out of memory");
    if (rc == 0 && (rc = sget(x, &o, b8, 8, err)) == 0 && (prev_off = get_u64(b8)) != 0)
        rc = bad(x, err, "offsets that do not start at 0");
    for (uint64_t j = 0; rc == 0 && j < r->n; j++) {
        if (sget(x, &f, b8, 8, err) != 0) {
            rc = -1;
            break;
        }
        uint64_t fp = get_u64(b8);
        if (sget(x, &o, b8, 8, err) != 0) {
            rc = -1;
            break;
        }
        uint64_t off = get_u64(b8);
        if ((j > 0 && fp < prev_fp) || off < prev_off || off > r->heap) {
            rc = bad(x, err, off < prev_off || off > r->heap ? "offsets outside its keys" : "not sorted (fingerprints)");
            break;
        }
        key.len = 0;
        if (rs_buf_reserve(&key, (size_t)(off - prev_off) + 1) != 0) {
            rc = rs_error_set(err, RS_EXIT_IO, "out of memory");
            break;
        }
        if (sget(x, &k, key.data, (size_t)(off - prev_off), err) != 0) {
            rc = -1;
            break;
        }
        rc = each(ctx, fp, key.data, (size_t)(off - prev_off));
        prev_fp = fp, prev_off = off;
    }
    if (rc == 0 && prev_off != r->heap)
        rc = bad(x, err, "offsets that do not end at its keys' size");
    free(f.buf);
    free(o.buf);
    free(k.buf);
    rs_buf_free(&key);
    return rc;
}

typedef struct {
    int (*each)(void *, uint64_t, const char *, size_t);
    void *ctx;
} scan_job;

static int scan_one(rs_keyidx *x, const run_at *r, void *ctx, rs_error *err)
{
    const scan_job *j = ctx;
    return scan_run(x, r, j->each, j->ctx, err);
}

int rs_keyidx_scan(rs_keyidx *x, int (*each)(void *ctx, uint64_t fp, const char *key, size_t len), void *ctx,
                   rs_error *err)
{
    scan_job j = {each, ctx};
    return each_run(x, scan_one, &j, err);
}

/* ---------------------------------------------------------- concatenation */

/* Copies index x's runs (all but its header) to w, through w's CRC. */
static int copy_runs(rs_keyidx *x, rs_keyidx_writer *w, rs_error *err)
{
    unsigned char buf[1 << 16];
    for (uint64_t pos = RS_KEYIDX_HEADER; pos < x->size;) {
        size_t n = x->size - pos < sizeof buf ? (size_t)(x->size - pos) : sizeof buf;
        if (read_at(x, buf, n, pos, err) != 0)
            return -1;
        put(w, buf, n);
        pos += n;
    }
    return w->failed ? rs_error_set(err, RS_EXIT_IO, "%s: write failed: %s", w->path, strerror(w->failed)) : 0;
}

int rs_keyidx_concat(const char *out, int dirfd, const char *const *names, const char *const *paths,
                     const rs_keyidx_of *want, const uint64_t *sizes, size_t n, const rs_keyidx_of *of,
                     uint64_t *file_bytes, uint32_t *crc32, rs_error *err)
{
    rs_keyidx_writer w;
    if (rs_keyidx_create(&w, out, err) != 0)
        return -1;
    for (size_t k = 0; k < n; k++) {
        rs_keyidx x;
        if (rs_keyidx_open(&x, dirfd, names[k], paths[k], &want[k], sizes[k], err) != 0) {
            rs_keyidx_abort(&w);
            return -1;
        }
        int rc = copy_runs(&x, &w, err);
        w.entries += x.entries;
        w.runs += x.runs;
        rs_keyidx_close(&x);
        if (rc != 0) {
            rs_keyidx_abort(&w);
            return -1;
        }
    }
    return rs_keyidx_finish(&w, of, file_bytes, crc32, err);
}
