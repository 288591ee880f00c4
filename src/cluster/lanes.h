/* cluster/lanes.h - several pipelines of one process at once ("lanes"), so that
 * more than one thread inflates input: lanes are ranks made of threads.
 *
 * A lane is a pthread running the ordinary pipeline (its own OpenMP team)
 * on a contiguous range of the rank's work items; the lanes of a process
 * form a group (world.h) whose collectives are shared memory and barriers,
 * and cluster.c divides a rank's range among them and assembles their
 * pieces exactly as it does for MPI ranks. Why, and how many: see the
 * design comment in cluster.c and docs/clusters.md. */
#ifndef RS_CLUSTER_LANES_H
#define RS_CLUSTER_LANES_H

#include <stddef.h>
#include <stdint.h>
#include "cluster/world.h"
#include "ringshard/pipeline.h"

/* What one producer can feed: the threads of parse, route and compress
 * work that keep up with one serial inflate, by output codec (measured
 * with tools/bench_lanes.sh; docs/clusters.md, "Several producers"). */
#define RS_LANE_FEEDS_GZIP 4
#define RS_LANE_FEEDS_ZSTD 4
#define RS_LANE_FEEDS_PLAIN 3

/* The lanes a run gets and what each is given. */
typedef struct {
    int lanes;                  /* P >= 1 */
    int threads[256];           /* per lane; they add up to the run's threads */
    uint64_t memory;            /* per lane: its share of --memory */
    size_t batch_bytes;         /* the process's batch size, for every lane */
    char why[160];              /* for the log: what bounded P */
} rs_lane_plan;

/* Chooses the lanes for a run with options o over nitems work items
 * (SIZE_MAX: not counted yet - the bound without it): P = the least of
 * --producers (or the automatic ceil(threads / RS_LANE_FEEDS_*)), the
 * threads, the items, and the lanes whose buffers fit in --memory with the
 * process's batch size, and whose output files the open-file limit
 * allows (the soft limit is raised for them); 1 for standard input or a
 * quarantine file written in place. Fills *plan and returns P. */
int rs_lanes_choose(const rs_pipeline_opts *o, size_t nitems, rs_lane_plan *plan);

/* Runs fn(g, ctx) on `lanes` threads at once, g being each one's member of
 * a thread group (tag "lane"; lane 0 on the calling thread), and returns
 * when all did. 0, or -1 (nothing run) when the threads cannot be started. */
typedef void (*rs_lane_fn)(rs_group *g, void *ctx);
int rs_lanes_run(int lanes, rs_lane_fn fn, void *ctx);

#endif
