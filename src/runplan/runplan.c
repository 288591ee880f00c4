/* src/runplan/runplan.c - the plan of a run (ringshard/runplan.h), decided
 * in one place.
 *
 * What is decided, from what:
 *   threads T     -j, else OMP_NUM_THREADS or the CPUs of the process's
 *                 affinity mask (an MPI rank bound to a core gets one);
 *   batch size    a sixteenth of what --memory leaves after the fixed
 *                 parts (code and libraries, the caller's ring, the
 *                 outputs' state), within the pipeline's bounds; it must
 *                 not depend on T, the lanes or anything else of the
 *                 machine: the output's members follow from it;
 *   lanes P       --producers or one per RS_LANE_FEEDS_* threads (by the
 *                 output codec), at most T and the work items, as many as
 *                 --memory holds (each lane: its share, 8 batches of the
 *                 process's size, its threads and one parse group) and as
 *                 the open-file limit allows (each lane holds every
 *                 output); one for standard input or a quarantine written
 *                 in place (neither can be cut into pieces);
 *   per lane      its threads (T split evenly), parse groups (4 a thread,
 *                 at most the pipeline's maximum, as many as fit beside the
 *                 threads in what the batches leave of its share) and
 *                 what a thread keeps between batches (a batch / its
 *                 threads, 64 KiB at least).
 * The pipeline only says what its parts cost (rs_pipeline_costs_of); it
 * takes its shape as given. Why once: every number here is part of the
 * output's definition or of its memory bound, so it is computed in one
 * place from the options, before anything is allocated, and read
 * everywhere else - a lane count tried is a sum over the costs here, not a
 * pipeline planned again, and no layer asks a higher one. */
#include "ringshard/runplan.h"
#include <omp.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include "ringshard/deflate.h"
#include "ringshard/outfile.h"

int rs_run_threads(const rs_pipeline_opts *o)
{
    /* omp_get_max_threads: OMP_NUM_THREADS if set, else the CPUs this
     * process may run on (its affinity mask: an MPI rank bound to a core
     * gets one) */
    int t = o->threads > 0 ? o->threads : omp_get_max_threads();
    return t < 1 ? 1 : (t > 256 ? 256 : t);
}

/* The least memory a pipeline with costs c holds: its fixed parts, and
 * the more of the smallest batches (16: the batch is a sixteenth of what
 * is left) and twice its threads and one group (they must fit in the half
 * the batches leave). */
static uint64_t floor_of(const rs_pipeline_costs *c)
{
    uint64_t room = 2 * (c->threads + c->per_group), batches = 16 * (uint64_t)c->batch_min;
    return c->base + (room > batches ? room : batches);
}

static int below_floor(const rs_pipeline_opts *o, int T, uint64_t memory, const rs_pipeline_costs *c, rs_error *err)
{
    double mib = 1048576.0;
    uint64_t floor = floor_of(c);
    return rs_error_set(err, RS_EXIT_USAGE,
                        "--memory %.0f MiB is below what these options need: at least %.0f MiB (%d thread%s: %.1f "
                        "MiB of compressor state, stacks and buffers, kept to half of what the ring and "
                        "libraries leave; %u output%s: %.1f MiB; the ring: %.1f MiB; code and libraries: %.0f "
                        "MiB); raise --memory or lower -j",
                        memory / mib, (double)((floor + (1 << 20) - 1) >> 20), T, T == 1 ? "" : "s", c->threads / mib,
                        o->ndest, o->ndest == 1 ? "" : "s", (c->outputs + c->per_group) / mib, o->held / mib,
                        (double)RS_MEMORY_FIXED / mib);
}

/* One pipeline of o's outputs on T threads in `memory`, with batches of
 * `given` bytes (a lane: its process's) or (0) of the size memory gives.
 * Refuses (RS_EXIT_USAGE) when even one group or the smallest batches do
 * not fit, or memory cannot hold 8 batches of the given size besides the
 * threads and one group. */
static int shape_pipeline(const rs_pipeline_opts *o, int T, uint64_t memory, size_t given, rs_pipeline_shape *s,
                          rs_error *err)
{
    rs_pipeline_costs c;
    rs_pipeline_costs_of(o, T, &c);
    if (memory < floor_of(&c))
        return below_floor(o, T, memory, &c, err);
    uint64_t cap = (memory - c.base) / 16;
    s->threads = T;
    s->batch_bytes = cap < c.batch_min ? c.batch_min : (cap > c.batch_max ? c.batch_max : (size_t)cap);
    if (given) {
        s->batch_bytes = given;
        if (memory < c.base + 8 * (uint64_t)given + c.threads + c.per_group)
            return rs_error_set(err, RS_EXIT_USAGE,
                                "internal error: a lane's %.0f MiB of --memory cannot hold its batches of %.1f MiB",
                                memory / 1048576.0, given / 1048576.0);
    }
    uint64_t room = memory - c.base - 8 * (uint64_t)s->batch_bytes - c.threads; /* >= per_group: the floor */
    int G = 4 * T > c.max_groups ? c.max_groups : 4 * T;
    while (G > 1 && (uint64_t)G * c.per_group > room)
        G /= 2;
    s->groups = G;
    s->member_keep = s->batch_bytes / (size_t)T > ((size_t)64 << 10) ? s->batch_bytes / (size_t)T : (size_t)64 << 10;
    return 0;
}

int rs_run_plan_one(const rs_pipeline_opts *o, rs_pipeline_shape *shape, rs_error *err)
{
    return shape_pipeline(o, rs_run_threads(o), o->memory, o->batch_bytes, shape, err);
}

/* Whether P lanes of T threads in all fit: each gets an even share of
 * what the ring and the libraries leave (*share), ceil(T / P) threads
 * (the most a lane gets) and batches of cap bytes. */
static int lanes_fit(const rs_pipeline_opts *o, int T, int P, size_t cap, uint64_t *share)
{
    uint64_t common = RS_MEMORY_FIXED + o->held;
    if (o->memory <= common)
        return 0;
    *share = common + (o->memory - common) / (uint64_t)P;
    rs_pipeline_shape s;
    rs_error e = {0};
    return shape_pipeline(o, (T + P - 1) / P, *share, cap, &s, &e) == 0;
}

static int undividable(const rs_pipeline_opts *o)
{
    for (size_t i = 0; i < o->ninputs; i++)
        if (!o->input_names && !strcmp(o->inputs[i], "-"))
            return 1;
    /* pieces are named after the file: /dev/stderr.lane1 cannot be made */
    return o->bad_rows == RS_BAD_ROW_QUARANTINE && o->quarantine && rs_outfile_in_place(o->quarantine);
}

/* The lanes the options, threads and items allow, before memory and
 * files; pl->items_bound and pl->why say what bounded them. */
static int lanes_wanted(const rs_pipeline_opts *o, int T, size_t nitems, rs_run_plan *pl)
{
    int feeds = !o->dest_paths || o->compress == RS_COMPRESS_NONE ? RS_LANE_FEEDS_PLAIN
                : o->compress == RS_COMPRESS_ZSTD                 ? RS_LANE_FEEDS_ZSTD
                                                                  : RS_LANE_FEEDS_GZIP;
    int P = o->producers > 0 ? o->producers : (T + feeds - 1) / feeds;
    if (o->producers > 0)
        snprintf(pl->why, sizeof pl->why, "--producers %d", o->producers);
    else
        snprintf(pl->why, sizeof pl->why, "automatic: %d threads / %d a producer feeds", T, feeds);
    if (P > T)
        P = T, snprintf(pl->why, sizeof pl->why, "one thread a lane at least (%d threads)", T);
    pl->items_bound = (size_t)P;
    if (nitems < (size_t)P)
        P = nitems ? (int)nitems : 1, snprintf(pl->why, sizeof pl->why, "%zu work items", nitems);
    if (P > 1 && undividable(o))
        P = 1, snprintf(pl->why, sizeof pl->why, "standard input or a quarantine written in place");
    return P;
}

/* Every lane holds a descriptor per output file (its own files or
 * pieces) besides its reader's: at most the lanes whose descriptors the
 * hard limit allows, and the soft limit raised for them (a lane's
 * pipeline raises it for its own files only; its fallback past the limit,
 * reopening files per write, would race with the other lanes' opens). */
static int fds_fit(const rs_pipeline_opts *o, int P, rs_run_plan *pl)
{
    struct rlimit rl;
    if (P == 1 || !o->dest_paths || getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return P;
    uint64_t per = (uint64_t)o->ndest + 64;
    if (rl.rlim_max != RLIM_INFINITY && (uint64_t)rl.rlim_max < (uint64_t)P * per + 64) {
        uint64_t fit = rl.rlim_max > per + 64 ? ((uint64_t)rl.rlim_max - 64) / per : 1;
        P = fit > 1 ? (int)fit : 1;
        snprintf(pl->why, sizeof pl->why, "open-file limit %llu: %d lanes of %u outputs fit",
                 (unsigned long long)rl.rlim_max, P, o->ndest);
    }
    pl->open_files = P > 1 ? (uint64_t)P * per + 64 : 0;
    if (P > 1 && (uint64_t)rl.rlim_cur < pl->open_files) {
        rl.rlim_cur = (rlim_t)pl->open_files;
        if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
            pl->nofile_soft = pl->open_files;
    }
    return P;
}

int rs_run_plan_make(const rs_pipeline_opts *o, size_t nitems, rs_run_plan *pl, rs_error *err)
{
    memset(pl, 0, sizeof *pl);
    int T = rs_run_threads(o);
    pl->threads = T;
    int P = lanes_wanted(o, T, nitems, pl);
    rs_pipeline_shape whole;
    rs_error refused = {0};
    if (shape_pipeline(o, T, o->memory, o->batch_bytes, &whole, &refused) != 0)
        P = 1;  /* the run is refused: one lane says so */
    size_t cap = refused.code ? 0 : whole.batch_bytes;
    uint64_t share = o->memory;
    int want = P;
    while (P > 1 && !lanes_fit(o, T, P, cap, &share))
        P--;
    if (P < want)
        snprintf(pl->why, sizeof pl->why, "--memory: %d lanes of 8 batches of %.1f MiB fit", P, cap / 1048576.0);
    /* fewer lanes for the files keep the share of those --memory held */
    P = fds_fit(o, P, pl);
    pl->lanes = P;
    pl->batch_bytes = cap;
    pl->lane_memory = P > 1 ? share : o->memory;
    if (refused.code) {
        if (!err->code)  /* as rs_error_set: the first error stands */
            *err = refused;
        return -1;
    }
    if (P == 1) {
        pl->lane[0] = whole;
        return 0;
    }
    /* Lanes fewer for the files than for --memory have more threads each
     * in the same share: one that cannot hold them is refused (threads 0,
     * lane_refused saying why) and fails its run as its pipeline would. */
    for (int k = 0; k < P; k++) {
        rs_error e = {0};
        if (shape_pipeline(o, T / P + (k < T % P), pl->lane_memory, cap, &pl->lane[k], &e) != 0) {
            memset(&pl->lane[k], 0, sizeof pl->lane[k]);
            if (!pl->lane_refused.code)
                pl->lane_refused = e;
        }
    }
    return 0;
}

/* ----------------------------------- the pipeline's plan, as pipeline.h has it */

int rs_pipeline_threads(const rs_pipeline_opts *o) { return rs_run_threads(o); }

uint64_t rs_pipeline_min_memory(const rs_pipeline_opts *o)
{
    rs_pipeline_costs c;
    rs_pipeline_costs_of(o, rs_run_threads(o), &c);
    return floor_of(&c);
}

size_t rs_pipeline_batch_bytes(const rs_pipeline_opts *o)
{
    rs_pipeline_shape s = {0};   /* zeroed: LTO cannot see that a failed plan leaves it unread */
    rs_error e = {0};
    return rs_run_plan_one(o, &s, &e) == 0 ? s.batch_bytes : 0;
}

int rs_pipeline_lanes_fit(const rs_pipeline_opts *o, int lanes, size_t cap, uint64_t *share)
{
    return lanes_fit(o, rs_run_threads(o), lanes, cap, share);
}

int rs_pipeline_run(const rs_pipeline_opts *o, rs_pipeline_result *res, rs_error *err)
{
    rs_pipeline_shape s;
    return rs_pipeline_run_shaped(o, rs_run_plan_one(o, &s, err) == 0 ? &s : NULL, res, err);
}
