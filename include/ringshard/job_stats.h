/* ringshard/job_stats.h - the stats job: per-node balance of real data (the
 * bucketing pipeline, counting instead of writing) or of a bucket directory
 * (its manifest's rows per node, no data read), against what the ring's
 * exact shares and the theory of random rings predict, and bounded-load
 * capacity what-ifs. docs/stats.md derives every number. */
#ifndef RINGSHARD_JOB_STATS_H
#define RINGSHARD_JOB_STATS_H

#include <stdint.h>
#include "ringshard/error.h"
#include "ringshard/pipeline.h"
#include "ringshard/ring.h"
#include "ringshard/stats.h"

typedef struct {
    const char *dir;        /* a bucket directory: its manifest's counts and ring; NULL: data */
    const rs_ring *ring;    /* data: the ring the rows are counted on */
    rs_pipeline_opts pipe;  /* data: inputs, key, dialect, threads, quarantine (route and
                               destinations are the job's) */
    double z;               /* flag nodes outside the band of z sds */
    double factor;          /* bounded loads' capacity factor (>= 1); NAN: none. On data the
                               rows are then routed on one thread, to place them in input order */
} rs_stats_job_opts;

typedef struct {
    const rs_ring *ring;    /* the ring counted on: o->ring, or dir_ring */
    rs_ring *dir_ring;      /* dir: the ring of its manifest (owned) */
    uint64_t *counts;       /* rows per node */
    rs_node_stat *ns;       /* per node */
    rs_balance bal;
    rs_bounded bl;          /* with a factor */
    uint64_t *capacity;     /* per node, with a factor; else NULL */
    uint64_t *load;         /* per node after bounded placement (data with a factor); else NULL */
    uint64_t rejected;      /* data: rows rejected (--on-bad-row skip) */
    char source[1200];      /* where the counts come from, in words */
} rs_stats_job_result;

/* Counts the rows per node (data: reading every input through the
 * pipeline, nothing written but the quarantine file if asked; dir: from
 * manifest.json alone), then their balance and, with a factor, bounded
 * loads. Logs nothing to stdout. *r must be zeroed; it is filled as far as
 * the job got and rs_stats_job_result_free releases it either way. Returns
 * 0, or -1 with err (RS_EXIT_DATA: no rows, a manifest that is not a bucket
 * directory's or whose ring does not match; the pipeline's errors;
 * RS_EXIT_IO). Not collective. */
int rs_stats_job_run(const rs_stats_job_opts *o, rs_stats_job_result *r, rs_error *err);

void rs_stats_job_result_free(rs_stats_job_result *r);

#endif
