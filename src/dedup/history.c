/* A new bucket's rows against its history's key indexes (history.h). */
#include "ringshard/history.h"
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "dedup/rows.h"
#include "ringshard/buf.h"

/* The new keys of one part, and what the lookups found. */
typedef struct {
    rs_buf arena;            /* the keys' bytes */
    uint64_t *koff;          /* [n] each key's offset in arena */
    rs_keyidx_probe *p;      /* [n] */
    size_t n, cap;
    uint64_t first_row;      /* the part's first row in the file */
    /* over the whole file */
    uint64_t *hit;           /* a bit per row: its key is in the history */
    size_t hit_words;
    uint64_t *hit_gen;       /* (row, generation) of each row found, in the order found */
    size_t nhit, hit_cap;
    uint64_t gen;            /* the index being looked up */
    int oom;
} part;

static int grow_hits(part *pt, uint64_t rows)
{
    size_t words = (size_t)(rows / 64 + 1);
    if (words <= pt->hit_words)
        return 0;
    size_t nw = pt->hit_words ? pt->hit_words : 1024;
    while (nw < words)
        nw *= 2;
    uint64_t *nh = realloc(pt->hit, nw * sizeof *nh);
    if (!nh)
        return -1;
    memset(nh + pt->hit_words, 0, (nw - pt->hit_words) * sizeof *nh);
    pt->hit = nh;
    pt->hit_words = nw;
    return 0;
}

static void on_hit(void *ctx, uint32_t id)
{
    part *pt = ctx;
    uint64_t row = pt->first_row + id;
    if (pt->hit[row / 64] >> (row % 64) & 1)
        return;  /* an older generation's copy was found first */
    pt->hit[row / 64] |= 1ULL << (row % 64);
    if (pt->nhit == pt->hit_cap) {
        size_t nc = pt->hit_cap ? 2 * pt->hit_cap : 256;
        uint64_t *ng = realloc(pt->hit_gen, nc * 2 * sizeof *ng);
        if (!ng) {
            pt->oom = 1;
            return;
        }
        pt->hit_gen = ng;
        pt->hit_cap = nc;
    }
    pt->hit_gen[2 * pt->nhit] = row;
    pt->hit_gen[2 * pt->nhit + 1] = pt->gen;
    pt->nhit++;
}

static int add_key(part *pt, const char *key, size_t len)
{
    if (pt->n == pt->cap) {
        size_t nc = pt->cap ? 2 * pt->cap : 4096;
        rs_keyidx_probe *np = realloc(pt->p, nc * sizeof *np);
        if (np)
            pt->p = np;
        uint64_t *nk = realloc(pt->koff, nc * sizeof *nk);
        if (nk)
            pt->koff = nk;
        if (!np || !nk)
            return -1;
        pt->cap = nc;
    }
    pt->koff[pt->n] = pt->arena.len;
    pt->p[pt->n] = (rs_keyidx_probe){rs_keyidx_fp(key, len), NULL, (uint32_t)len, (uint32_t)pt->n};
    pt->n++;
    return rs_buf_append(&pt->arena, key, len);
}

/* Looks the part's keys up in every index (oldest first), then empties it. */
static int lookup_part(const rs_history_opts *h, rs_keyidx *x, part *pt, rs_history_result *r, rs_error *err)
{
    for (size_t i = 0; i < pt->n; i++)
        pt->p[i].key = pt->arena.data + pt->koff[i];
    rs_keyidx_probe_sort(pt->p, pt->n);
    for (size_t k = 0; k < h->nidx; k++) {
        pt->gen = h->idx[k].generation;
        if (rs_keyidx_lookup(&x[k], pt->p, pt->n, on_hit, pt, err) != 0)
            return -1;
        if (pt->oom)
            return rs_error_set(err, RS_EXIT_IO, "out of memory");
    }
    r->parts++;
    pt->first_row += pt->n;
    pt->n = 0;
    pt->arena.len = 0;
    return 0;
}

/* Phase 1: the keys, part by part, looked up. */
static int find(const rs_history_opts *h, const rs_dedup_opts *d, const char *in, rs_keyidx *x, part *pt,
                rs_history_result *r, rs_error *err)
{
    rstream s;
    const char *row, *key;
    size_t rowlen, keylen;
    int rc;
    if (rows_open(&s, in, d, 1, err) != 0)
        return -1;
    if (d->header && rows_skip_header(&s, err) != 0) {
        rows_close(&s);
        return -1;
    }
    while ((rc = rows_next(&s, 0, &row, &rowlen, &key, &keylen, err)) == 1) {
        if (add_key(pt, key, keylen) != 0 || grow_hits(pt, r->rows_in + 1) != 0) {
            rc = rs_error_set(err, RS_EXIT_IO, "out of memory");
            break;
        }
        r->rows_in++;
        r->bytes_in += rowlen + 1;
        if (pt->arena.len + pt->n * (sizeof *pt->p + sizeof *pt->koff) > h->budget &&
            (rc = lookup_part(h, x, pt, r, err)) != 0)
            break;
    }
    if (rc == 0 && pt->n)
        rc = lookup_part(h, x, pt, r, err);
    rows_close(&s);
    return rc;
}

static int cmp_row(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

static int put_line(FILE *f, const char *row, size_t len)
{
    return fwrite(row, 1, len, f) != len || fputc('\n', f) == EOF ? -1 : 0;
}

/* Phase 2: the rows that stay into out, the others into the report. */
static int split(const rs_history_opts *h, const rs_dedup_opts *d, const char *in, const char *out, part *pt,
                 rs_history_result *r, rs_error *err)
{
    qsort(pt->hit_gen, pt->nhit, 2 * sizeof *pt->hit_gen, cmp_row);
    FILE *f = fopen(out, "w");
    if (!f)
        return rs_error_set(err, RS_EXIT_IO, "%s: cannot create: %s", out, strerror(errno));
    rstream s;
    const char *row, *key;
    size_t rowlen, keylen;
    int rc = rows_open(&s, in, d, h->report != NULL, err);
    if (rc == 0 && d->header && (rc = rows_next(&s, 1, &row, &rowlen, NULL, NULL, err)) == 1)
        rc = put_line(f, row, rowlen) ? rs_error_set(err, RS_EXIT_IO, "%s: write failed: %s", out, strerror(errno)) : 0;
    size_t q = 0;
    int more = 0;
    for (uint64_t i = 0; rc == 0 && (more = rows_next(&s, h->report == NULL, &row, &rowlen, &key, &keylen, err)) == 1;
         i++) {
        if (!(pt->hit[i / 64] >> (i % 64) & 1)) {
            if (put_line(f, row, rowlen) != 0)
                rc = rs_error_set(err, RS_EXIT_IO, "%s: write failed: %s", out, strerror(errno));
            continue;
        }
        r->dropped_rows++;
        r->dropped_bytes += rowlen + 1;
        while (q < pt->nhit && pt->hit_gen[2 * q] < i)
            q++;
        if (h->report) {
            rs_dedup_put_escaped(h->report, key, keylen);
            fprintf(h->report, "\tg%08" PRIu64 "\t", q < pt->nhit ? pt->hit_gen[2 * q + 1] : 0);
            rs_dedup_put_escaped(h->report, row, rowlen);
            fputc('\n', h->report);
        }
    }
    if (more < 0)
        rc = -1;
    rows_close(&s);
    if (fclose(f) != 0 && rc == 0)
        rc = rs_error_set(err, RS_EXIT_IO, "%s: write failed: %s", out, strerror(errno));
    return rc < 0 ? -1 : 0;
}

int rs_history_filter(const rs_history_opts *h, const rs_dedup_opts *dopts, const char *in, const char *out,
                      rs_history_result *r, rs_error *err)
{
    memset(r, 0, sizeof *r);
    rs_dedup_opts d = *dopts;
    d.in_name = NULL;   /* `in` is a file of its own (pass 1's bucket) */
    d.check = NULL;
    part pt;
    memset(&pt, 0, sizeof pt);
    rs_keyidx *x = calloc(h->nidx + 1, sizeof *x);
    int rc = x ? 0 : rs_error_set(err, RS_EXIT_IO, "out of memory");
    size_t opened = 0;
    for (; rc == 0 && opened < h->nidx; opened++) {
        const rs_history_index *hi = &h->idx[opened];
        rc = rs_keyidx_open(&x[opened], hi->dirfd, hi->name, hi->path, &hi->of, hi->size, err);
        if (rc != 0)
            break;
    }
    if (rc == 0)
        rc = find(h, &d, in, x, &pt, r, err);
    for (size_t k = 0; k < opened; k++) {
        r->index_bytes_read += x[k].bytes_read;
        rs_keyidx_close(&x[k]);
    }
    if (rc == 0 && pt.nhit) {
        rc = split(h, &d, in, out, &pt, r, err);
        r->filtered = rc == 0;
    }
    free(x);
    rs_buf_free(&pt.arena);
    free(pt.koff);
    free(pt.p);
    free(pt.hit);
    free(pt.hit_gen);
    return rc;
}
