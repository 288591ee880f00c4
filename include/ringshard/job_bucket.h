/* ringshard/job_bucket.h - the bucket job: every row of the inputs into
 * the output of the node that owns its key, as `ringshard bucket` runs it. */
#ifndef RINGSHARD_JOB_BUCKET_H
#define RINGSHARD_JOB_BUCKET_H

#include "ringshard/error.h"
#include "ringshard/pipeline.h"
#include "ringshard/ring.h"

typedef struct {
    /* The inputs and how to read and write them: inputs, key, dialect,
     * threads, memory, compress/level, keys_only, quarantine, progress
     * (rs_pipeline_opts; the job sets the routing and the destinations
     * itself, on a copy). */
    rs_pipeline_opts pipeline;
    const rs_ring *ring;     /* the ring; the same on every rank under MPI */
    const char *outdir;      /* DIR: published whole, with DIR/manifest.json */
    int force;               /* RS_OUTDIR_FORCE [| RS_OUTDIR_FORCE_ANY] */
} rs_bucket_job_opts;

typedef struct {
    rs_pipeline_result run;  /* the merged statistics: rows, bytes, per input and per node */
    int published;           /* 1 when DIR was published */
    double publish_seconds;  /* flushing to disk and publishing */
} rs_bucket_job_result;

/* Runs the bucket job: writes DIR/<node>.csv.gz (.csv.zst, .csv) for every
 * node of o->ring, header first, rows in input order, then
 * DIR/manifest.json, into a temporary directory beside DIR that is
 * published atomically (outdir.h) only when everything is written and rows
 * and bytes are conserved; the quarantine file (pipeline.quarantine) is
 * published with it. Collective under MPI (every rank calls it with the
 * same options; cluster.h). Returns 0, or -1 with err (the pipeline's
 * codes: RS_EXIT_DATA for a bad row or input, RS_EXIT_IO, RS_EXIT_USAGE,
 * RS_EXIT_EXISTS for DIR, RS_EXIT_INTERRUPTED); on failure nothing is
 * published unless r->published (a failure after publication, such as the
 * parent directory's fsync or the quarantine file's). r is filled either
 * way; rs_bucket_job_result_free releases it. */
int rs_bucket_job_run(const rs_bucket_job_opts *o, rs_bucket_job_result *r, rs_error *err);

/* Frees what r holds (r itself is the caller's); r may be zeroed. */
void rs_bucket_job_result_free(rs_bucket_job_result *r);

#endif
