/* The bucket job (job_bucket.h): the library side of `ringshard bucket`.
 *
 * A fresh run writes DIR whole, beside it, and publishes it in one rename
 * (outdir.h). An append (--append) adds a generation to an existing DIR
 * (jobs/append.h): the same pipeline, into segments staged
 * beside DIR, published in one rename of the generation's directory. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cluster/cluster.h"
#include "cluster/world.h"
#include "jobs/append.h"
#include "ringshard/dataset.h"
#include "ringshard/job_bucket.h"
#include "ringshard/runplan.h"
#include "ringshard/timeline.h"
#include "ringshard/util.h"

/* Conservation: every row read is written once or rejected. */
static int check_conservation(const rs_pipeline_opts *po, const rs_pipeline_result *res, rs_error *err)
{
    uint64_t in_rows = 0, in_bytes = 0, out_rows = 0, out_bytes = 0;
    for (size_t i = 0; i < po->ninputs; i++)
        in_rows += res->input[i].rows, in_bytes += res->input[i].bytes;
    for (uint32_t d = 0; d < po->ndest; d++)
        out_rows += res->dest[d].rows, out_bytes += res->dest[d].bytes;
    if (in_rows != out_rows || (!po->keys_only && in_bytes != out_bytes))
        return rs_error_set(err, RS_EXIT_IO,
                            "internal error: rows/bytes not conserved (in %llu/%llu, out %llu/%llu); nothing published",
                            (unsigned long long)in_rows, (unsigned long long)in_bytes, (unsigned long long)out_rows,
                            (unsigned long long)out_bytes);
    return 0;
}

/* Every node's data file name, no two alike; NULL with err. */
static char **node_file_names(const rs_ring *ring, int compress, rs_error *err)
{
    const rs_nodes *nodes = rs_ring_nodes(ring);
    return rs_data_files((const char *const *)nodes->names, NULL, nodes->count, compress, err);
}

/* Adds one run's statistics to the job's (several generations). */
static void add_run(rs_pipeline_result *sum, rs_pipeline_result *run, uint32_t ndest)
{
    if (!sum->dest) {  /* the first: taken whole */
        *sum = *run;
        memset(run, 0, sizeof *run);
        return;
    }
    sum->rows += run->rows, sum->bytes += run->bytes, sum->rejected += run->rejected;
    sum->seconds += run->seconds;
    for (uint32_t d = 0; d < ndest; d++) {
        sum->dest[d].rows += run->dest[d].rows;
        sum->dest[d].bytes += run->dest[d].bytes;
        sum->dest[d].file_bytes += run->dest[d].file_bytes;
    }
    rs_pipeline_result_free(run);
}

/* A run that writes DIR whole (a fresh bucket directory; with grow, one
 * that will take appends: schema 2, generation 1, the chunk ch of the
 * inputs). *raced: DIR appeared meanwhile (another run created it first);
 * ch->redo: an input is dropped, nothing published (rs_append_seen_after). */
static int run_fresh(const rs_bucket_job_opts *o, const rs_ring *ring, rs_pipeline_opts po, rs_append_chunk *ch,
                     rs_bucket_job_result *r, int *raced, rs_error *err)
{
    int grow = ch != NULL;
    const rs_nodes *nodes = rs_ring_nodes(ring);
    rs_outdir od = {0};
    rs_cluster_quarantine q = {0};
    rs_pipeline_result run = {0};
    char **files = NULL, **names = node_file_names(ring, po.compress, err);
    rs_manifest m = {0};
    int begun = 0, empty = 0;
    double tl = 0;
    *raced = 0;
    /* Failures up to the pipeline are agreed on by every rank (under MPI) */
    if (!err->code)
        rs_pipeline_threads_ready(rs_run_threads(&po), err);
    if (rs_cluster_outdir_begin(&od, o->outdir, o->force, err) != 0) {
        *raced = grow && err->code == RS_EXIT_EXISTS;
        goto out;
    }
    begun = 1;
    files = rs_outdir_paths(&od, (const char *const *)names, nodes->count, err);
    if (rs_cluster_quarantine_begin(&po, &od, &q, err) != 0)   /* agrees on the above */
        goto out;
    rs_pipeline_route_by_ring(&po, ring);
    po.dest_paths = (const char *const *)files;
    po.write_behind = 1;
    po.input_checksum = 1;
    po.input_rows = rs_pipeline_wants_input_rows(&po);
    if (rs_cluster_pipeline_run(&po, &run, err) != 0)
        goto out;
    tl = rs_timeline_start();
    /* every rank holds the merged statistics: all check, rank 0 writes */
    if (check_conservation(&po, &run, err) != 0 ||
        rs_append_seen_after(NULL, &po, &run, grow ? o->on_seen : RS_SEEN_AGAIN, ch, err) != 0)
        goto out;
    /* A directory that will grow takes its header from its first inputs:
     * without one (every input empty) it would take no append, so it is
     * not made yet (the same on every rank: the statistics are merged) */
    if ((empty = grow && po.header && !run.header) || (grow && ch->redo))
        goto out;
    if (rs_world_rank() == 0 && rs_manifest_of_run(&m, "buckets", ring, &po, &run, names, 0, err) == 0) {
        if (grow)
            rs_gen_first(&m);
        rs_outdir_manifest(&od, &m, err);
    }
out:;
    double t_publish = rs_now();
    int failed = err->code != 0;   /* before the publication: not a race (a pipe seen, exit 73, too) */
    if (begun && (empty || (grow && ch->redo))) {
        rs_cluster_outdir_abort(&od);
        r->inputs_empty += empty ? po.ninputs : 0;
    } else if (begun && rs_cluster_outdir_end(&od, err) == 0) {
        rs_timeline_end(RS_TL_PUBLISH, tl);
        r->published = 1;
        r->publish_seconds += rs_now() - t_publish;
        r->generations += grow;
        r->first_gen = r->first_gen ? r->first_gen : 1;
        r->last_gen = 1;
        r->inputs_ingested += po.ninputs;
    } else if (begun && grow && !failed && err->code == RS_EXIT_EXISTS) {
        *raced = 1;
    }
    rs_cluster_quarantine_end(&q, 1, err);   /* published with the directory: only released here */
    if (grow && ch->redo) {
        rs_pipeline_result_free(&run);   /* a run whose rows are not published */
    } else {
        add_run(&r->run, &run, nodes->count);
        r->ndest = nodes->count;
    }
    rs_manifest_of_run_free(&m);
    rs_free_strings(files, nodes->count);
    rs_free_strings(names, nodes->count);
    return err->code ? -1 : 0;
}

/* ---------------------------------------------------------------- append */

/* Removes the segments of a finished generation that got no rows (they
 * are not in its manifest: rs_manifest_of_run). 0, or -1 with err. */
static int remove_empty_segments(const rs_pipeline_opts *po, const rs_pipeline_result *res, char *const *files,
                                 rs_error *err)
{
    for (uint32_t d = 0; d < po->ndest; d++)
        if (res->dest[d].rows == 0 && unlink(files[d]) != 0 && errno != ENOENT)
            return rs_error_set(err, RS_EXIT_IO, "%s: cannot remove: %s", files[d], strerror(errno));
    return 0;
}

/* A directory that dedup --append keeps distinct (options.dedup in a
 * manifest) takes no rows from bucket --append: they would not be checked
 * against its keys (rs_append_job.refuse). */
static int refuse_distinct(void *ctx, const rs_append *g, rs_error *err)
{
    (void)ctx;
    const rs_bucketdir *bd = &g->bd;
    for (size_t k = 0; k <= bd->ngens; k++) {
        const rs_manifest *m = k ? &bd->gens[k - 1] : &bd->m;
        if (m->dedup)
            return rs_error_set(err, RS_EXIT_USAGE, "%s: DIR's rows are distinct %s (dedup --append keeps them so): "
                                "bucket --append would add rows unchecked against them; add them with ringshard "
                                "dedup --append",
                                g->mpath, strcmp(m->dedup, "row") ? "by key" : "by row");
    }
    return 0;
}

/* One generation of the chunk's inputs sel (those not skipped) into an
 * existing DIR (g opened and checked, ring DIR's). */
static int append_generation(const rs_bucket_job_opts *o, rs_append *g, const rs_pipeline_opts *sel,
                             const rs_ring *ring, rs_append_chunk *ch, rs_bucket_job_result *r, rs_error *err)
{
    rs_pipeline_opts po = *sel;
    rs_cluster_quarantine q = {0};
    rs_pipeline_result run = {0};
    rs_manifest m = {0};
    char **names = NULL, **files = NULL;
    uint32_t ndest = rs_ring_nodes(ring)->count;
    if (!(names = node_file_names(ring, po.compress, err)))
        goto out;
    rs_pipeline_threads_ready(rs_run_threads(&po), err);
    if (rs_append_stage(g, err) != 0)
        goto out;
    if (!(files = calloc(ndest + 1, sizeof *files)))
        rs_error_set(err, RS_EXIT_IO, "out of memory");
    for (uint32_t d = 0; files && d < ndest; d++)
        if (!(files[d] = rs_append_path(g, names[d])))
            rs_error_set(err, RS_EXIT_IO, "out of memory");
    if (rs_cluster_quarantine_begin(&po, &g->od, &q, err) != 0 ||   /* agrees on the above */
        (r->generations && rs_cluster_quarantine_continue(&q, &po, err) != 0))  /* --commit-every */
        goto out;
    char label[64];
    snprintf(label, sizeof label, "generation %llu", (unsigned long long)g->gen);
    po.progress_label = label;
    rs_pipeline_route_by_ring(&po, ring);
    po.dest_paths = (const char *const *)files;
    po.no_header = !po.header;   /* segments start with the header, as base files (none: nothing to write) */
    po.write_behind = 1;
    po.input_checksum = 1;
    po.input_rows = rs_pipeline_wants_input_rows(&po);
    if (rs_cluster_pipeline_run(&po, &run, err) != 0 || check_conservation(&po, &run, err) != 0 ||
        rs_append_seen_after(g, &po, &run, o->on_seen, ch, err) != 0 || ch->redo)
        goto out;   /* redo: the caller closes g, which removes the staged generation */
    double tl = rs_timeline_start();
    if (rs_world_rank() == 0 && rs_manifest_of_run(&m, "generation", ring, &po, &run, names, 1, err) == 0)
        remove_empty_segments(&po, &run, files, err);
    double t_publish = rs_now();
    if (rs_append_publish(g, &m, err) == 0) {
        rs_timeline_end(RS_TL_PUBLISH, tl);
        r->published = 1;
        r->publish_seconds += rs_now() - t_publish;
        r->generations++;
        r->first_gen = r->first_gen ? r->first_gen : g->gen;
        r->last_gen = g->gen;
        r->inputs_ingested += po.ninputs;
        r->dir_files = g->files_after;
        r->dir_generations = g->gens_after;
    }
out:
    rs_cluster_quarantine_end(&q, 1, err);
    if (ndest && !ch->redo) {
        add_run(&r->run, &run, ndest);
        r->ndest = ndest;
    } else
        rs_pipeline_result_free(&run);
    rs_manifest_of_run_free(&m);
    rs_free_strings(files, ndest);
    rs_free_strings(names, ndest);
    return err->code ? -1 : 0;
}

/* The bucket job as rs_append_run runs it. */
typedef struct {
    const rs_bucket_job_opts *o;
    rs_bucket_job_result *r;
} append_ctx;

static int append_run(void *ctx, rs_append *g, const rs_pipeline_opts *po, const rs_ring *ring, rs_append_chunk *ch,
                      int *raced, rs_error *err)
{
    append_ctx *c = ctx;
    if (g)
        return append_generation(c->o, g, po, ring, ch, c->r, err);
    return run_fresh(c->o, ring, *po, ch, c->r, raced, err);
}

int rs_bucket_job_run(const rs_bucket_job_opts *o, rs_bucket_job_result *r, rs_error *err)
{
    memset(r, 0, sizeof *r);
    append_ctx c = {o, r};
    rs_append_job a = {.dir = o->outdir, .po = o->pipeline, .given = o->given, .ring = o->ring,
                       .on_seen = o->on_seen, .cmd = o->quiet ? NULL : "bucket",
                       .inputs_skipped = &r->inputs_skipped, .refuse = refuse_distinct, .run = append_run, .ctx = &c};
    if (o->append)
        return rs_append_run(&a, o->commit_every, o->commit_bytes, err);
    int raced;
    if (!o->ring)
        return rs_error_set(err, RS_EXIT_USAGE, "internal error: bucket without a ring");
    return run_fresh(o, o->ring, o->pipeline, NULL, r, &raced, err);
}

void rs_bucket_job_result_free(rs_bucket_job_result *r)
{
    rs_pipeline_result_free(&r->run);
    memset(r, 0, sizeof *r);
}
