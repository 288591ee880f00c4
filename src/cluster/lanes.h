/* cluster/lanes.h - several pipelines of one process at once ("lanes"), so that
 * more than one thread inflates input: lanes are ranks made of threads.
 *
 * A lane is a pthread running the ordinary pipeline (its own OpenMP team)
 * on a contiguous range of the rank's work items; the lanes of a process
 * form a group (world.h) whose collectives are shared memory and barriers,
 * and cluster.c divides a rank's range among them and assembles their
 * pieces exactly as it does for MPI ranks. Why: see the design comment
 * in cluster.c and docs/clusters.md; how many, and what each is given:
 * the run plan (ringshard/runplan.h), which this file only runs. */
#ifndef RS_CLUSTER_LANES_H
#define RS_CLUSTER_LANES_H

#include <stddef.h>
#include <stdint.h>
#include "cluster/world.h"

/* Runs fn(g, ctx) on `lanes` threads at once, g being each one's member of
 * a thread group (tag "lane"; lane 0 on the calling thread), and returns
 * when all did. 0, or -1 (nothing run) when the threads cannot be started. */
typedef void (*rs_lane_fn)(rs_group *g, void *ctx);
int rs_lanes_run(int lanes, rs_lane_fn fn, void *ctx);

#endif
