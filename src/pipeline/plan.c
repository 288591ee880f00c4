/* src/pipeline/plan.c - the memory and thread plan: how --memory is
 * shared out among the batches, the threads, the parse groups and the
 * outputs, and whether a process's lanes fit (cluster/lanes.c asks here).
 * The batch size follows from it and the output's members from the batch
 * size, so every number here is part of the output's definition. */
#include <omp.h>
#include "pipeline/pipe.h"

int rs_pipeline_threads(const rs_pipeline_opts *o)
{
    /* omp_get_max_threads: OMP_NUM_THREADS if set, else the CPUs this
     * process may run on (its affinity mask: an MPI rank bound to a core
     * gets one) */
    int t = o->threads > 0 ? o->threads : omp_get_max_threads();
    return t < 1 ? 1 : (t > 256 ? 256 : t);
}

/* --memory accounting. Outside the buffers: code, C library, codec tables
 * and OpenMP runtime (RS_MEMORY_FIXED), the caller's share (the ring) and
 * per output its file state. Per thread: its stack pages and malloc arena
 * slack, the member buffer it keeps (member_keep) and its compressor. Per
 * parse group and output: its counts (dest_count) and, for files, a
 * scatter buffer (256 bytes at least once used; more only while half of
 * it is used: rs_pipe_scatter_done). The buffers are 8 batches (see the
 * top).
 * The batch size must not depend on the thread count (the output's bytes
 * follow the batches), so it is a sixteenth of what is left after the
 * fixed parts, and the threads and groups must fit in the other half. */
#define RS_MEM_THREAD ((uint64_t)192 << 10)

static void plan_parts(const rs_pipeline_opts *o, int T, mem_plan *m)
{
    uint32_t ndest = o->ndest;
    int files = o->dest_paths != NULL;
    m->T = T;
    m->outputs = (uint64_t)ndest * (sizeof(rs_dest_stats) + (files ? sizeof(dest_file) + 2 * sizeof(uint64_t) : 0));
    m->base = RS_MEMORY_FIXED + o->held + m->outputs;
    m->threads = (uint64_t)T * (RS_MEM_THREAD + sizeof(rs_error) + sizeof(rs_buf) +
                                (o->compress && files ? rs_compressor_bytes(o->compress, o->level, o->codec) : 0));
    m->per_group = sizeof(thread_acc) + (uint64_t)ndest * (sizeof(dest_count) + (files ? sizeof(rs_buf) + 256 : 0));
}

static uint64_t plan_floor(const mem_plan *m)
{
    uint64_t room = 2 * (m->threads + m->per_group), batches = 16 * (uint64_t)RS_BATCH_MIN;
    return m->base + (room > batches ? room : batches);
}

uint64_t rs_pipeline_min_memory(const rs_pipeline_opts *o)
{
    mem_plan m;
    plan_parts(o, rs_pipeline_threads(o), &m);
    return plan_floor(&m);
}

/* A lane (opts batch_bytes): the batch size is its process's, and its
 * share of --memory must hold 8 of them besides the threads and one parse
 * group (rs_pipeline_lanes_fit chooses the lanes so that it does). */
static int given_batch_fits(const rs_pipeline_opts *o, mem_plan *m, rs_error *err)
{
    m->cap = o->batch_bytes;
    if (o->memory >= m->base + 8 * (uint64_t)m->cap + m->threads + m->per_group)
        return 0;
    return rs_error_set(err, RS_EXIT_USAGE, "internal error: a lane's %.0f MiB of --memory cannot hold its batches of "
                                            "%.1f MiB", o->memory / 1048576.0, m->cap / 1048576.0);
}

size_t rs_pipeline_batch_bytes(const rs_pipeline_opts *o)
{
    mem_plan m;
    rs_error e = {0};
    return rs_pipe_plan(o, &m, &e) == 0 ? m.cap : 0;
}

/* Fits the run into o->memory: batches as above; as many parse groups as
 * useful (4 a thread, at most RS_SEGMENTS) that fit beside the threads;
 * a thread keeps buffers of a batch / T (64 KiB at least) between batches.
 * Refuses (RS_EXIT_USAGE) when even one group or the smallest batches do
 * not fit. */
int rs_pipe_plan(const rs_pipeline_opts *o, mem_plan *m, rs_error *err)
{
    int T = rs_pipeline_threads(o);
    plan_parts(o, T, m);
    uint64_t floor = plan_floor(m);
    if (o->memory < floor) {
        double mib = 1048576.0;
        return rs_error_set(err, RS_EXIT_USAGE,
                            "--memory %.0f MiB is below what these options need: at least %.0f MiB (%d thread%s: %.1f "
                            "MiB of compressor state, stacks and buffers, kept to half of what the ring and "
                            "libraries leave; %u output%s: %.1f MiB; the ring: %.1f MiB; code and libraries: %.0f "
                            "MiB); raise --memory or lower -j",
                            o->memory / mib, (double)((floor + (1 << 20) - 1) >> 20), T, T == 1 ? "" : "s",
                            m->threads / mib, o->ndest, o->ndest == 1 ? "" : "s", (m->outputs + m->per_group) / mib,
                            o->held / mib, (double)RS_MEMORY_FIXED / mib);
    }
    uint64_t cap = (o->memory - m->base) / 16;
    m->cap = cap < RS_BATCH_MIN ? RS_BATCH_MIN : (cap > RS_BATCH_MAX ? RS_BATCH_MAX : (size_t)cap);
    if (o->batch_bytes && given_batch_fits(o, m, err) != 0)
        return -1;
    uint64_t room = o->memory - m->base - 8 * (uint64_t)m->cap - m->threads;  /* >= per_group: the floor */
    int G = 4 * T > RS_SEGMENTS ? RS_SEGMENTS : 4 * T;
    while (G > 1 && (uint64_t)G * m->per_group > room)
        G /= 2;
    m->G = G;
    m->member_keep = m->cap / (size_t)T > ((size_t)64 << 10) ? m->cap / (size_t)T : (size_t)64 << 10;
    return 0;
}

int rs_pipeline_lanes_fit(const rs_pipeline_opts *o, int lanes, size_t cap, uint64_t *share)
{
    uint64_t common = RS_MEMORY_FIXED + o->held;
    if (o->memory <= common)
        return 0;
    int T = rs_pipeline_threads(o);
    rs_pipeline_opts l = *o;
    l.memory = common + (o->memory - common) / (uint64_t)lanes;
    l.batch_bytes = cap;
    l.threads = (T + lanes - 1) / lanes;
    *share = l.memory;
    mem_plan m;
    rs_error e = {0};
    return rs_pipe_plan(&l, &m, &e) == 0;
}
