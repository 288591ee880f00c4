/* ringshard/runplan.h - the plan of a run: its threads, its lanes (several
 * pipelines of one process, cluster/lanes.h) and each lane's threads,
 * share of --memory and batch size, parse groups, what a thread keeps, the
 * open files it needs. Decided once, from the options and the machine,
 * before anything is allocated, and handed down: the lanes run it, each
 * pipeline takes its shape as given (rs_pipeline_run_shaped). Why once and
 * what follows from what: the design comment of src/runplan/runplan.c. */
#ifndef RINGSHARD_RUNPLAN_H
#define RINGSHARD_RUNPLAN_H

#include <stddef.h>
#include <stdint.h>
#include "ringshard/error.h"
#include "ringshard/pipeline.h"

/* What one producer can feed: the threads of parse, route and compress
 * work that keep up with one serial inflate, by output codec (measured
 * with tools/bench/bench_lanes.sh; docs/clusters.md, "Several producers"). */
#define RS_LANE_FEEDS_GZIP 4
#define RS_LANE_FEEDS_ZSTD 4
#define RS_LANE_FEEDS_PLAIN 3

#define RS_RUN_LANES_MAX 256

typedef struct {
    int threads;                 /* T: the run's threads (-j, or the CPUs it may use) */
    int lanes;                   /* P >= 1 */
    /* per lane: its threads (they add up to T; lane k gets T / P, one more
     * for k < T % P), parse groups, batch size (the process's, for every
     * lane: the output's members follow from it) and what a thread keeps;
     * all 0 for a lane whose share cannot hold its threads (lanes bounded
     * by the open files below what --memory holds): its run fails with
     * lane_refused, the first such lane's reason */
    rs_pipeline_shape lane[RS_RUN_LANES_MAX];
    rs_error lane_refused;
    uint64_t lane_memory;        /* per lane: its share of --memory (--memory itself with one lane) */
    size_t batch_bytes;          /* the process's batch size; 0: --memory cannot hold the run */
    size_t items_bound;          /* the lanes before the work items bounded them: with at
                                    least this many items the plan is the same */
    uint64_t open_files;         /* descriptors the lanes need (0: one lane, its pipeline's own) */
    uint64_t nofile_soft;        /* RLIMIT_NOFILE's soft limit raised to (0: left as it was) */
    char why[160];               /* for the log: what bounded P */
} rs_run_plan;

/* The worker threads of a run with o->threads (0: OMP_NUM_THREADS, else
 * the CPUs this process may run on), in [1, 256]. */
int rs_run_threads(const rs_pipeline_opts *o);

/* Plans a run with options o over nitems work items (SIZE_MAX: not
 * counted yet - the bound without them): P = the least of --producers (or
 * the automatic ceil(threads / RS_LANE_FEEDS_*)), the threads, the items,
 * and the lanes whose buffers fit in --memory with the process's batch
 * size and whose output files the open-file limit allows (the soft limit
 * is raised for them: the one side effect); 1 for standard input or a
 * quarantine file written in place. Fills *plan whole, and returns 0; or
 * -1 with err (RS_EXIT_USAGE, saying what the run needs) when --memory
 * cannot hold even one pipeline: *plan then still says its one lane and
 * why, for the log, and the run is to fail with err. */
int rs_run_plan_make(const rs_pipeline_opts *o, size_t nitems, rs_run_plan *plan, rs_error *err);

/* The plan of one pipeline with all of o (o->producers ignored, one
 * lane): its shape, as rs_pipeline_run takes it. 0, or -1 with err as
 * rs_run_plan_make. */
int rs_run_plan_one(const rs_pipeline_opts *o, rs_pipeline_shape *shape, rs_error *err);

#endif
