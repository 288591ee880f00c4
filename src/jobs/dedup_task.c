/* One bucket of the dedup job's pass 2, and the pass (jobs/dedup_task.h). */
#define _GNU_SOURCE
#include "jobs/dedup_task.h"
#include <errno.h>
#include <fcntl.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "dedup/source.h"
#include "ringshard/dataset.h"
#include "ringshard/pipeline.h"

int rs_placed_on(void *ctx, const char *key, size_t keylen)
{
    const rs_placement *p = ctx;
    return rs_ring_owner(p->ring, rs_ring_position(p->ring, key, keylen)) == p->node;
}

/* ---------------------------------------------------------- the history */

static rs_keyidx_of index_of(const rs_dedup_pass *p, size_t k)
{
    const rs_manifest_file *f = p->bd->files[k];
    return (rs_keyidx_of){f->rows, f->bytes, f->crc32, p->o.mode == RS_DEDUP_BY_ROW ? RS_KEYIDX_BY_ROW : 0};
}

/* Builds the key index of history file k, which has none, where
 * p->at[k].built says: its rows read once (checked against its manifest
 * entry, rows placed on their node, as dedup --buckets checks them). */
static int build_index(const rs_dedup_pass *p, size_t k, const rs_placement *place,
                       uint64_t *rows, rs_error *err)
{
    const rs_bucketdir *bd = p->bd;
    const rs_manifest_file *f = bd->files[k];
    rs_dedup_opts o = p->o;
    o.in_name = bd->names[k];
    o.in_dirfd = bd->fd;
    o.in_path_ = bd->paths[k];
    o.in_more = NULL;
    o.nin_more = 0;
    o.header = bd->m.header && !bd->headerless[k];
    rs_rows_check chk = {f->rows, f->bytes, f->file_bytes, f->crc32, bd->paths[k], f->node, &o.keyspec, rs_placed_on,
                          (void *)place};
    rs_keyidx_writer w;
    rs_rows s;
    rs_rows_src src = rs_dedup_rows_src(&o);
    const char *row, *key;
    size_t rowlen, keylen;
    if (rs_rows_open(&s, bd->paths[k], &src, 1, err) != 0)
        return -1;
    int r = o.header ? (rs_rows_skip_header(&s, err) < 0 ? -1 : 0) : 0;
    if (r == 0 && rs_keyidx_create(&w, p->at[k].built, err) != 0)
        r = -2;
    else if (r == 0)   /* the rest of the task's share goes to the reader of the rows */
        rs_keyidx_set_memory(&w, o.budget / 2 < RS_KEYIDX_WRITER_MEMORY ? o.budget / 2 : RS_KEYIDX_WRITER_MEMORY);
    s.chk = &chk;
    while (r == 0 && (r = rs_rows_next(&s, 0, &row, &rowlen, &key, &keylen, err)) == 1) {
        r = rs_keyidx_add(&w, key, keylen, err) != 0 ? -1 : 0;
        ++*rows;
    }
    rs_rows_close(&s);
    if (r == -2)
        return -1;
    rs_keyidx_of of = index_of(p, k);
    uint64_t bytes = 0;
    uint32_t crc = 0;
    if (r < 0) {
        rs_keyidx_abort(&w);
        return -1;
    }
    if (rs_keyidx_finish(&w, &of, &bytes, &crc, err) != 0)
        return -1;
    p->built_bytes[k] = bytes;
    p->built_crc[k] = crc;
    return 0;
}

/* The bucket's history as key indexes, oldest first; missing ones built.
 * *h (nparts entries) is the caller's to free. */
static int history_of(const rs_dedup_pass *p, rs_dedup_task *j, rs_history_index **h,
                      rs_error *err)
{
    const rs_bucketdir *bd = p->bd;
    if (!(*h = calloc(j->nparts + 1, sizeof **h)))
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    for (size_t q = 0; q < j->nparts; q++) {
        size_t k = j->part0 + q;
        const rs_index_at *at = &p->at[k];
        if (at->built && build_index(p, k, &j->place, &j->rows_reread, err) != 0)
            return -1;
        rs_history_index *x = &(*h)[q];
        x->dirfd = at->built ? AT_FDCWD : at->dirfd;
        x->name = at->built ? at->built : at->name;
        /* named as verify names it: DIR/g00000002/1.keyidx */
        if (at->built ? !(x->path = strdup(at->built)) : asprintf(&x->path, "%s/%s", bd->path, at->name) < 0) {
            x->path = NULL;
            return rs_error_set(err, RS_EXIT_IO, "out of memory");
        }
        x->of = index_of(p, k);
        x->generation = bd->file_gen[k];
        x->size = at->built ? p->built_bytes[k] : 0;
    }
    return 0;
}

/* ---------------------------------------------------------------- a task */

/* Where the rows come from and what a history filter left of them. */
static void input_of(const rs_dedup_task *j, const char **in, uint64_t *rows, uint64_t *bytes)
{
    *in = j->hres.filtered ? j->filtered : j->in;
    *rows = j->rows - j->hres.dropped_rows;
    *bytes = j->bytes - j->hres.dropped_bytes;
}

static void run_task(const rs_dedup_pass *p, rs_dedup_task *j, rs_deflater *dz, uint32_t number,
                     const uint64_t *index_sizes)
{
    rs_dedup_opts o = p->o;
    if (j->in_name) {
        o.in_name = j->in_name;
        o.in_more = j->more;
        o.in_more_paths = j->more_paths;
        o.in_more_files = j->more_files;
        o.nin_more = j->nmore;
        o.check = &j->check;
    }
    char name[32];
    snprintf(name, sizeof name, "b%u", number);  /* unique across MPI ranks */
    o.tmpname = name;
    o.dups = NULL;
    rs_dedup_report rf;
    FILE *rep = NULL;
    if (j->dups && !(rep = rs_dedup_report_open(j->dups, 1, &rf))) {
        rs_error_set(&j->err, RS_EXIT_IO, "%s: cannot create: %s", j->dups, strerror(errno));
        return;
    }
    if (p->append) {
        o.dropped = rep;
        o.index_out = j->index;
        /* the index's writer: its sort and its merge (keyidx.h) */
        o.index_memory = o.budget / 2 < RS_KEYIDX_WRITER_MEMORY ? o.budget / 2 : RS_KEYIDX_WRITER_MEMORY;
        o.budget -= o.index_memory;
        o.no_header_out = 0;   /* segments too start with the header: each a CSV file of its own */
    } else {
        o.dups = rep;
    }
    rs_history_index *h = NULL;
    uint64_t *left = j->in_rows ? malloc(j->nin_rows * sizeof *left) : NULL;   /* its rows of each input the
                                                                                  history filter leaves */
    if (p->append && j->nparts && history_of(p, j, &h, &j->err) == 0) {
        for (size_t q = 0; q < j->nparts; q++)
            if (!h[q].size)
                h[q].size = index_sizes[j->part0 + q];
        rs_history_opts ho = {h, j->nparts, o.budget, rep, left ? j->in_rows : NULL, left, j->nin_rows};
        rs_history_filter(&ho, &o, j->in, j->filtered, &j->hres, &j->err);
    }
    o.in_rows = !j->hres.filtered ? j->in_rows : j->hres.kept_rows_ok ? left : NULL;
    o.kept_rows = j->kept_rows, o.nin_rows = j->nin_rows;
    for (size_t q = 0; h && q < j->nparts; q++)
        free(h[q].path);
    free(h);
    const char *in;
    uint64_t rows, bytes;
    input_of(j, &in, &rows, &bytes);
    if (!j->err.code)
        rs_dedup_file(&o, dz, in, rows, bytes, j->out, &j->res, &j->err);
    free(left);
    if (j->hres.filtered)
        unlink(j->filtered);
    /* what the history held counts as read and removed, as a repeat does */
    j->res.rows_in += j->hres.dropped_rows;
    j->res.bytes_in += j->hres.dropped_bytes;
    j->res.dup_rows += j->hres.dropped_rows;
    j->res.dup_keys += j->hres.dropped_keys;   /* apart from the new rows' own: the filter removed these */
    j->res.dup_bytes += j->hres.dropped_bytes;
    int e = rep ? rs_dedup_report_finish(rep, &rf) : 0;
    if (e && !j->err.code)
        rs_error_set(&j->err, RS_EXIT_IO, "%s: write failed: %s", j->dups, strerror(e));
}

typedef struct {
    uint64_t bytes;
    uint32_t i;
} by_size;

static int cmp_size(const void *a, const void *b)
{
    const by_size *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* The history's index sizes as their manifests give them (0 for one this
 * run builds). */
static uint64_t *index_sizes(const rs_dedup_pass *p)
{
    size_t n = p->bd ? p->bd->nfiles : 0;
    uint64_t *v = calloc(n + 1, sizeof *v);
    for (size_t k = 0; v && k < n; k++) {
        const rs_manifest_file *f = p->bd->files[k];
        if (f->index && !p->at[k].built)
            v[k] = f->index_bytes;
        for (size_t g = 0; !p->at[k].built && !f->index && g < p->bd->ngens; g++)
            for (size_t x = 0; x < p->bd->gens[g].nindexes; x++) {
                const rs_manifest_index *mi = &p->bd->gens[g].indexes[x];
                if (mi->generation == p->bd->file_gen[k] && !strcmp(mi->file, f->file))
                    v[k] = mi->index_bytes;
            }
    }
    return v;
}

int rs_dedup_pass2(rs_dedup_task *jobs, uint32_t n, uint32_t first, const rs_dedup_pass *p, int threads,
                   rs_error *err)
{
    by_size *bs = malloc((n ? n : 1) * sizeof *bs);
    uint32_t *order = malloc((n ? n : 1) * sizeof *order);
    uint64_t *sizes = index_sizes(p);
    if (!bs || !order || !sizes) {
        free(bs);
        free(order);
        free(sizes);
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    }
    for (uint32_t i = 0; i < n; i++)
        bs[i] = (by_size){jobs[i].bytes, i};
    qsort(bs, n, sizeof *bs, cmp_size);
    for (uint32_t i = 0; i < n; i++)
        order[i] = bs[i].i;
    free(bs);
    int failed = 0;
#pragma omp parallel num_threads(threads)
    {
        rs_deflater *dz = rs_compressor_new(p->o.compress, p->o.level, p->o.codec);
#pragma omp for schedule(dynamic, 1)
        for (uint32_t k = 0; k < n; k++) {
            rs_dedup_task *j = &jobs[order[k]];
            int stop;
#pragma omp atomic read
            stop = failed;
            if (stop)
                continue;
            if (rs_pipeline_interrupted())
                rs_error_set(&j->err, RS_EXIT_INTERRUPTED, "interrupted; nothing published");
            else if (!dz)
                rs_error_set(&j->err, RS_EXIT_IO, "out of memory");
            else
                run_task(p, j, dz, first + order[k], sizes);
            if (j->err.code) {
#pragma omp atomic write
                failed = 1;
            }
        }
        rs_deflater_free(dz);
    }
    free(order);
    free(sizes);
    for (uint32_t i = 0; i < n; i++)
        if (jobs[i].err.code) {
            *err = jobs[i].err;
            return -1;
        }
    return 0;
}
