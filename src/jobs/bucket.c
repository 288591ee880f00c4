/* The bucket job (job_bucket.h): the library side of `ringshard bucket`. */
#include <stdlib.h>
#include <string.h>
#include "cluster/cluster.h"
#include "cluster/world.h"
#include "ringshard/bucketdir.h"
#include "ringshard/job_bucket.h"
#include "ringshard/manifest.h"
#include "ringshard/outdir.h"
#include "ringshard/util.h"

/* The manifest of a finished run: one file per node. */
static int fill_manifest(rs_manifest *m, const rs_pipeline_opts *po, const rs_pipeline_result *res,
                         const rs_ring *ring, char *const *names, rs_error *err)
{
    if (rs_manifest_start(m, "buckets", ring, po, res, po->ndest, err) != 0)
        return -1;
    const rs_nodes *nodes = rs_ring_nodes(ring);
    m->nfiles = po->ndest;
    for (uint32_t d = 0; d < po->ndest; d++) {
        const rs_dest_stats *ds = &res->dest[d];
        m->files[d] = (rs_manifest_file){names[d], nodes->names[d], NULL, NULL, ds->rows, ds->bytes,
                                         ds->file_bytes, ds->crc, 0};
    }
    m->rows = res->rows;
    m->bytes = 0;  /* data bytes written (keys only: less than read) */
    for (uint32_t d = 0; d < po->ndest; d++)
        m->bytes += res->dest[d].bytes;
    return 0;
}

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

int rs_bucket_job_run(const rs_bucket_job_opts *o, rs_bucket_job_result *r, rs_error *err)
{
    memset(r, 0, sizeof *r);
    rs_pipeline_opts po = o->pipeline;
    const rs_ring *ring = o->ring;
    const rs_nodes *nodes = rs_ring_nodes(ring);
    rs_outdir od = {0};
    rs_cluster_quarantine q = {0};
    char **names = calloc(nodes->count, sizeof *names), **files = NULL;
    rs_manifest m = {0};
    int begun = 0;
    /* Failures up to the pipeline are agreed on by every rank (under MPI) */
    for (uint32_t i = 0; names && i < nodes->count && !err->code; i++)
        if (!(names[i] = rs_data_file(nodes->names[i], NULL, po.compress)))
            rs_error_set(err, RS_EXIT_IO, "out of memory");
    if (!names)
        rs_error_set(err, RS_EXIT_IO, "out of memory");
    if (!err->code)
        rs_pipeline_threads_ready(rs_pipeline_threads(&po), err);
    if (rs_cluster_outdir_begin(&od, o->outdir, o->force, err) != 0)
        goto out;
    begun = 1;
    files = rs_outdir_paths(&od, (const char *const *)names, nodes->count, err);
    if (rs_cluster_quarantine_begin(&po, &od, &q, err) != 0)   /* agrees on the above */
        goto out;
    rs_pipeline_route_by_ring(&po, ring);
    po.dest_paths = (const char *const *)files;
    po.write_behind = 1;
    if (rs_cluster_pipeline_run(&po, &r->run, err) != 0)
        goto out;
    /* every rank holds the merged statistics: all check, rank 0 writes */
    if (check_conservation(&po, &r->run, err) != 0)
        goto out;
    if (rs_world_rank() == 0 && fill_manifest(&m, &po, &r->run, ring, names, err) == 0)
        rs_outdir_manifest(&od, &m, err);
out:;
    double t_publish = rs_now();
    if (begun && rs_cluster_outdir_end(&od, err) == 0) {
        r->published = 1;
        r->publish_seconds = rs_now() - t_publish;
    }
    rs_cluster_quarantine_end(&q, 1, err);   /* published with the directory: only released here */
    free(m.inputs);
    free(m.files);
    rs_free_strings(files, nodes->count);
    rs_free_strings(names, nodes->count);
    return err->code ? -1 : 0;
}

void rs_bucket_job_result_free(rs_bucket_job_result *r)
{
    rs_pipeline_result_free(&r->run);
    memset(r, 0, sizeof *r);
}
