/* The stats job (ringshard/job_stats.h): rows per node from the pipeline
 * (a router that counts instead of writing) or from a bucket directory's
 * manifest, then their balance and bounded loads. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cluster/cluster.h"
#include "ringshard/dataset.h"
#include "ringshard/job_stats.h"
#include "ringshard/stats.h"
#include "ringshard/util.h"


/* The router: the owning node; with bounded loads (one thread) also each
 * row's start point, in input order. */
typedef struct {
    const rs_ring *ring;
    int record;
    uint32_t *start;
    uint64_t n, cap;
    int oom;
} stats_ctx;

static uint32_t route_count(void *ctx, int tid, uint32_t input, const char *key, size_t keylen, const char *row,
                            size_t rowlen)
{
    (void)tid, (void)input, (void)row, (void)rowlen;
    stats_ctx *c = ctx;
    uint64_t pos = rs_ring_position(c->ring, key, keylen);
    if (c->record) {
        if (c->n == c->cap) {
            uint64_t ncap = c->cap ? c->cap * 2 : 1 << 20;
            uint32_t *p = realloc(c->start, ncap * sizeof *p);
            if (!p) {
                c->oom = 1;
                rs_pipeline_interrupt();
                return rs_ring_owner(c->ring, pos);
            }
            c->start = p;
            c->cap = ncap;
        }
        c->start[c->n++] = rs_bounded_start(c->ring, pos);
    }
    return rs_ring_owner(c->ring, pos);
}

/* Counts per node from a bucket directory's manifest. */
static rs_ring *from_manifest(const char *dir, const char *mpath, uint64_t **counts_out, char *source, size_t scap,
                              rs_error *err)
{
    rs_bucketdir bd;
    rs_ring *ring = NULL;
    rs_node_index ix = {0};
    uint64_t *counts = NULL;
    /* stats reads only the manifest, through one descriptor of DIR as
     * every reader of a bucket directory does */
    if (rs_bucketdir_open(&bd, dir, err) != 0)
        return NULL;
    const rs_manifest m = bd.m;
    if (!m.kind || strcmp(m.kind, "buckets") != 0) {
        rs_error_set(err, RS_EXIT_DATA, "%s: kind '%s': stats reads bucket directories (a move directory's flows: plan)",
                     mpath, m.kind ? m.kind : "?");
        goto out;
    }
    if (!(ring = rs_manifest_ring(&m, mpath, NULL, NULL, err)))
        goto out;
    const rs_nodes *rn = rs_ring_nodes(ring);
    counts = calloc(rn->count ? rn->count : 1, sizeof *counts);
    if (!counts) {
        rs_error_set(err, RS_EXIT_IO, "out of memory");
        goto fail;
    }
    if (rs_node_index_build(&ix, rn, err) != 0)   /* a lookup per file: no linear search */
        goto fail;
    uint64_t total = 0;
    for (size_t i = 0; i < bd.nfiles; i++) {  /* every generation's files */
        const rs_manifest_file *f = bd.files[i];
        int64_t k = f->node ? rs_node_index_find(&ix, rn, f->node) : -1;
        if (k < 0) {
            rs_error_set(err, RS_EXIT_DATA, "%s: file '%s' belongs to node '%s', which the ring does not have", mpath,
                         bd.names[i], f->node ? f->node : "");
            goto fail;
        }
        counts[k] += f->rows;
        total += f->rows;
    }
    char size[RS_HUMAN_MAX];
    if (bd.ngens)
        snprintf(source, scap, "bucket directory %s: %zu files in %zu generations, %llu rows, %s (manifests)", dir,
                 bd.nfiles, bd.ngens + 1, (unsigned long long)total, rs_human_bytes((double)bd.bytes, size, sizeof size));
    else
        snprintf(source, scap, "bucket directory %s: %zu files, %llu rows, %s (manifest)", dir, m.nfiles,
                 (unsigned long long)total, rs_human_bytes((double)m.bytes, size, sizeof size));
    *counts_out = counts;
    goto out;
fail:
    rs_ring_free(ring);
    ring = NULL;
    free(counts);
out:
    rs_node_index_free(&ix);
    rs_bucketdir_close(&bd);
    return ring;
}

/* Counts per node from the data: the pipeline routes every row to its
 * node and counts it there (no destination files). */
static int from_data(const rs_stats_job_opts *o, stats_ctx *ctx, rs_stats_job_result *r, rs_error *err)
{
    rs_pipeline_opts po = o->pipe;
    rs_pipeline_result res = {0};
    int rc = -1;
    ctx->ring = o->ring;
    if (!isnan(o->factor)) {
        /* bounded loads place rows in input order: one routing thread */
        ctx->record = 1;
        po.threads = 1;
    }
    po.ndest = rs_ring_nodes(o->ring)->count;
    po.route = route_count;
    po.route_ctx = ctx;
    po.dest_paths = NULL;
    rs_cluster_quarantine q;
    int prc = rs_cluster_quarantine_begin(&po, NULL, &q, err) != 0 ? -1 : rs_cluster_pipeline_run(&po, &res, err);
    rs_cluster_quarantine_end(&q, prc == 0, err);   /* a failed run leaves a previous file as it was */
    if (prc != 0 || err->code) {
        if (ctx->oom) {
            rs_error_clear(err);
            rs_error_set(err, RS_EXIT_IO, "out of memory: --capacity-factor keeps 4 bytes per row");
        }
        goto out;
    }
    r->counts = calloc(po.ndest ? po.ndest : 1, sizeof *r->counts);
    if (!r->counts) {
        rs_error_set(err, RS_EXIT_IO, "out of memory");
        goto out;
    }
    for (uint32_t i = 0; i < po.ndest; i++)
        r->counts[i] = res.dest[i].rows;
    r->rejected = res.rejected;
    char size[RS_HUMAN_MAX];
    snprintf(r->source, sizeof r->source, "%zu input%s, %llu rows, %s read%s", po.ninputs,
             po.ninputs == 1 ? "" : "s", (unsigned long long)res.rows,
             rs_human_bytes((double)res.bytes, size, sizeof size),
             res.rejected ? " (rows rejected: see below)" : "");
    rc = 0;
out:
    rs_pipeline_result_free(&res);
    return rc;
}

/* The balance of the counts and, with a factor, the capacities and the
 * bounded placement (in input order when the rows' start points were
 * recorded, else from the counts alone). */
static int balance(const rs_stats_job_opts *o, const stats_ctx *ctx, rs_stats_job_result *r, rs_error *err)
{
    const rs_ring *ring = r->ring;
    const rs_nodes *nodes = rs_ring_nodes(ring);
    if (!(r->ns = malloc((size_t)nodes->count * sizeof *r->ns)))
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    if (rs_balance_compute(ring, r->counts, o->z, r->ns, &r->bal, err) != 0)
        return -1;
    if (r->bal.total == 0)
        return rs_error_set(err, RS_EXIT_DATA, "no rows to count");
    if (isnan(o->factor))
        return 0;
    if (!(r->capacity = malloc((size_t)nodes->count * sizeof *r->capacity)))
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    if (rs_bounded_capacities(ring, r->bal.total, o->factor, r->capacity, err) != 0)
        return -1;
    if (!ctx->record)
        return rs_bounded_from_counts(ring, r->counts, o->factor, &r->bl, err);
    if (!(r->load = malloc((size_t)nodes->count * sizeof *r->load)))
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    return rs_bounded_place(ring, ctx->start, ctx->n, r->counts, o->factor, &r->bl, r->load, err);
}

int rs_stats_job_run(const rs_stats_job_opts *o, rs_stats_job_result *r, rs_error *err)
{
    stats_ctx ctx = {0};
    int rc = -1;
    if (o->dir) {
        char mpath[4200];
        snprintf(mpath, sizeof mpath, "%s/" RS_NAME_MANIFEST, o->dir);
        if (!(r->dir_ring = from_manifest(o->dir, mpath, &r->counts, r->source, sizeof r->source, err)))
            return -1;
        r->ring = r->dir_ring;
    } else {
        r->ring = o->ring;
        if (from_data(o, &ctx, r, err) != 0)
            goto out;
    }
    rc = balance(o, &ctx, r, err);
out:
    free(ctx.start);
    return rc;
}

void rs_stats_job_result_free(rs_stats_job_result *r)
{
    void *arrays[] = {r->counts, r->capacity, r->load, r->ns};
    rs_ring_free(r->dir_ring);
    for (size_t k = 0; k < sizeof arrays / sizeof *arrays; k++)
        free(arrays[k]);
    memset(r, 0, sizeof *r);
}
