/* A new bucket's rows against its history's key indexes (history.h).
 *
 * One pass over the new bucket, in parts that fit the budget: a part's rows
 * and keys are held, its keys looked up in every index of the history
 * (oldest first, so that a key's oldest copy is the one named), then its
 * rows written out in order - to `out` when the history lacks their key, to
 * the report otherwise. Nothing is held across parts, so memory is the
 * budget's whatever the bucket's size. */
#include "ringshard/history.h"
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "dedup/source.h"
#include "ringshard/buf.h"
#include "ringshard/text.h"
#include "util/filemode.h"

/* The rows of one part, their keys, and what the lookups found. */
typedef struct {
    rs_buf arena;            /* each row's bytes, then its key's */
    uint64_t *at;            /* [4n]: row offset and length, key offset and length (in arena) */
    uint64_t *gen;           /* [n]: the generation holding the row's key, 0: none */
    rs_keyidx_probe *p;      /* [n] */
    size_t n, cap;
    uint64_t looking;        /* the generation of the index being looked up */
} part;

#define ROW_COST (4 * sizeof(uint64_t) + sizeof(uint64_t) + sizeof(rs_keyidx_probe))

static void on_hit(void *ctx, uint32_t id)
{
    part *pt = ctx;
    if (!pt->gen[id])   /* an older generation's copy was found first */
        pt->gen[id] = pt->looking;
}

static int grow(part *pt)
{
    size_t nc = pt->cap ? 2 * pt->cap : 4096;
    rs_keyidx_probe *np = realloc(pt->p, nc * sizeof *np);
    if (np)
        pt->p = np;
    uint64_t *na = realloc(pt->at, 4 * nc * sizeof *na);
    if (na)
        pt->at = na;
    uint64_t *ng = realloc(pt->gen, nc * sizeof *ng);
    if (ng)
        pt->gen = ng;
    if (!np || !na || !ng)
        return -1;
    pt->cap = nc;
    return 0;
}

static int add_row(part *pt, const char *row, size_t rowlen, const char *key, size_t keylen)
{
    if (pt->n == pt->cap && grow(pt) != 0)
        return -1;
    uint64_t *a = pt->at + 4 * pt->n;
    a[0] = pt->arena.len, a[1] = rowlen, a[2] = pt->arena.len + rowlen, a[3] = keylen;
    pt->gen[pt->n] = 0;
    pt->p[pt->n] = (rs_keyidx_probe){rs_keyidx_fp(key, keylen), NULL, (uint32_t)keylen, (uint32_t)pt->n};
    pt->n++;
    if (rs_buf_append(&pt->arena, row, rowlen) != 0 || rs_buf_append(&pt->arena, key, keylen) != 0)
        return -1;
    return 0;
}

/* What the part holds once a row and key of len more bytes are added: its
 * arrays (grow doubles them) and arena as allocated, and the copy of the
 * probes qsort makes to sort them (rs_keyidx_probe_sort). */
static uint64_t part_bytes_with(const part *pt, size_t len)
{
    size_t cap = pt->n < pt->cap ? pt->cap : pt->cap ? 2 * pt->cap : 4096;
    return rs_buf_cap_after(&pt->arena, len) + (uint64_t)cap * ROW_COST + (uint64_t)(pt->n + 1) * sizeof *pt->p;
}

static int put_line(FILE *f, const char *row, size_t len)
{
    return fwrite(row, 1, len, f) != len || fputc('\n', f) == EOF ? -1 : 0;
}

/* Orders probes by fingerprint, then by key bytes, so that equal keys are
 * neighbours. */
static int probe_cmp(const void *a, const void *b)
{
    const rs_keyidx_probe *x = a, *y = b;
    if (x->fp != y->fp)
        return x->fp < y->fp ? -1 : 1;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    return memcmp(x->key, y->key, x->len);
}

/* The distinct keys among the part's rows that the history holds: its
 * probes, no longer needed once looked up, keep only those and are sorted
 * by key in place. */
static uint64_t dropped_keys(part *pt)
{
    size_t m = 0;
    for (size_t k = 0; k < pt->n; k++)
        if (pt->gen[pt->p[k].id])
            pt->p[m++] = pt->p[k];
    qsort(pt->p, m, sizeof *pt->p, probe_cmp);
    uint64_t distinct = 0;
    for (size_t k = 0; k < m; k++)
        distinct += k == 0 || probe_cmp(&pt->p[k - 1], &pt->p[k]) != 0;
    return distinct;
}

/* Looks the part's keys up in every index (oldest first), writes its rows
 * in order - kept to out, dropped to the report - and empties it. */
static int flush_part(const rs_history_opts *h, rs_keyidx *x, part *pt, FILE *out, const char *out_path,
                      rs_input_walk *walk, rs_history_result *r, rs_error *err)
{
    for (size_t i = 0; i < pt->n; i++)
        pt->p[i].key = pt->arena.data + pt->at[4 * i + 2];
    rs_keyidx_probe_sort(pt->p, pt->n);
    for (size_t k = 0; k < h->nidx; k++) {
        pt->looking = h->idx[k].generation;
        if (rs_keyidx_lookup(&x[k], pt->p, pt->n, on_hit, pt, err) != 0)
            return -1;
    }
    for (size_t i = 0; i < pt->n; i++) {
        const uint64_t *a = pt->at + 4 * i;
        const char *row = pt->arena.data + a[0];
        rs_input_walk_row(walk, !pt->gen[i]);
        if (!pt->gen[i]) {
            if (put_line(out, row, a[1]) != 0)
                return rs_error_set(err, RS_EXIT_IO, "%s: write failed: %s", out_path, strerror(errno));
            continue;
        }
        r->dropped_rows++;
        r->dropped_bytes += a[1] + 1;
        if (h->report) {
            rs_text_put_tsv(h->report, pt->arena.data + a[2], a[3]);
            char dn[16];
            rs_gen_dir_name(pt->gen[i], dn);
            fprintf(h->report, "\t%s\t", dn);
            rs_text_put_tsv(h->report, row, a[1]);
            fputc('\n', h->report);
        }
    }
    r->dropped_keys += dropped_keys(pt);
    r->parts++;
    pt->n = 0;
    pt->arena.len = 0;
    return 0;
}

/* The new bucket's rows, part by part, into out. */
static int filter(const rs_history_opts *h, const rs_dedup_opts *d, const char *in, FILE *out, const char *out_path,
                  rs_keyidx *x, rs_history_result *r, rs_error *err)
{
    part pt;
    memset(&pt, 0, sizeof pt);
    rs_rows s;
    rs_rows_src src = rs_dedup_rows_src(d);
    const char *row, *key;
    size_t rowlen, keylen;
    uint64_t room = h->budget / 4 < RS_HISTORY_STREAMS_MEMORY ? h->budget - h->budget / 4
                                                               : h->budget - RS_HISTORY_STREAMS_MEMORY;
    rs_input_walk walk;
    rs_input_walk_start(&walk, h->in_rows, h->kept_rows, h->nin_rows);
    int rc = rs_rows_open(&s, in, &src, 1, err);
    if (rc == 0 && d->header && (rc = rs_rows_next(&s, 1, &row, &rowlen, NULL, NULL, err)) == 1)
        rc = put_line(out, row, rowlen) ? rs_error_set(err, RS_EXIT_IO, "%s: write failed: %s", out_path, strerror(errno))
                                        : 0;
    while (rc == 0 && (rc = rs_rows_next(&s, 0, &row, &rowlen, &key, &keylen, err)) == 1) {
        /* a part ends before a row whose room would take it past the budget */
        if (pt.n && part_bytes_with(&pt, rowlen + keylen) > room &&
            (rc = flush_part(h, x, &pt, out, out_path, &walk, r, err)) != 0)
            break;
        rc = 0;
        if (add_row(&pt, row, rowlen, key, keylen) != 0) {
            rc = rs_error_set(err, RS_EXIT_IO, "out of memory");
            break;
        }
        r->rows_in++;
        r->bytes_in += rowlen + 1;
    }
    if (rc == 0 && pt.n)
        rc = flush_part(h, x, &pt, out, out_path, &walk, r, err);
    r->kept_rows_ok = rc == 0 && rs_input_walk_whole(&walk);
    rs_rows_close(&s);
    rs_buf_free(&pt.arena);
    free(pt.at);
    free(pt.gen);
    free(pt.p);
    return rc < 0 ? -1 : 0;
}

int rs_history_filter(const rs_history_opts *h, const rs_dedup_opts *dopts, const char *in, const char *out,
                      rs_history_result *r, rs_error *err)
{
    memset(r, 0, sizeof *r);
    rs_dedup_opts d = *dopts;
    d.in_name = NULL;   /* `in` is a file of its own (pass 1's bucket) */
    d.check = NULL;
    rs_keyidx *x = calloc(h->nidx + 1, sizeof *x);
    FILE *f = x ? rs_file_create_stream(out, "w", RS_FILE_SCRATCH) : NULL;
    int rc = !x ? rs_error_set(err, RS_EXIT_IO, "out of memory")
             : !f ? rs_error_set(err, RS_EXIT_IO, "%s: cannot create: %s", out, strerror(errno))
                  : 0;
    size_t opened = 0;
    for (; rc == 0 && opened < h->nidx; opened++) {
        const rs_history_index *hi = &h->idx[opened];
        if ((rc = rs_keyidx_open(&x[opened], hi->dirfd, hi->name, hi->path, &hi->of, hi->size, err)) != 0)
            break;
    }
    if (rc == 0)
        rc = filter(h, &d, in, f, out, x, r, err);
    for (size_t k = 0; k < opened; k++) {
        r->index_bytes_read += x[k].bytes_read;
        r->keys_confirmed += x[k].keys_confirmed;
        r->confirm_bytes += x[k].confirm_bytes;
        r->filter_bytes += x[k].filter_bytes;
        r->filter_passes += x[k].filter_passes;
        rs_keyidx_close(&x[k]);
    }
    if (f && fclose(f) != 0 && rc == 0)
        rc = rs_error_set(err, RS_EXIT_IO, "%s: write failed: %s", out, strerror(errno));
    r->filtered = rc == 0;
    free(x);
    return rc;
}
