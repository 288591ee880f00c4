/* src/pipeline/cost.c - what the parts of a pipeline cost in memory: the
 * pipeline's only say in its plan. The run plan (src/runplan/runplan.c)
 * shares --memory out among these parts and hands the pipeline its shape
 * (threads, parse groups, batch size, what a thread keeps).
 *
 * Outside the buffers: code, C library, codec tables and OpenMP runtime
 * (RS_MEMORY_FIXED), the caller's share (the ring) and per output its file
 * state. Per thread: its stack pages and malloc arena slack, the member
 * buffer it keeps (member_keep) and its compressor. Per parse group and
 * output: its counts (dest_count) and, for files, a scatter buffer (256
 * bytes at least once used; more only while half of it is used:
 * rs_pipe_scatter_done). The buffers are 8 batches (see pipeline.c): about
 * six in use, and the read-ahead's two stashes (ahead.c), an eighth of a
 * batch each, within the rest (the batch size, and so the output, stays
 * what it was before reading ahead). */
#include "pipeline/pipe.h"

#define RS_MEM_THREAD ((uint64_t)192 << 10)

void rs_pipeline_costs_of(const rs_pipeline_opts *o, int T, rs_pipeline_costs *c)
{
    uint32_t ndest = o->ndest;
    int files = o->dest_paths != NULL;
    c->outputs = (uint64_t)ndest * (sizeof(rs_dest_stats) + (files ? sizeof(dest_file) + 2 * sizeof(uint64_t) : 0) +
                                    (o->only_rows ? sizeof(dest_ord) : 0));
    c->base = RS_MEMORY_FIXED + o->held + c->outputs;
    c->threads = (uint64_t)T * (RS_MEM_THREAD + sizeof(rs_error) + sizeof(rs_buf) +
                                (o->compress && files ? rs_compressor_bytes(o->compress, o->level, o->codec) : 0));
    c->per_group = sizeof(thread_acc) + (uint64_t)ndest * (sizeof(dest_count) + (files ? sizeof(rs_buf) + 256 : 0));
    c->batch_min = RS_BATCH_MIN;
    c->batch_max = RS_BATCH_MAX;
    c->max_groups = RS_SEGMENTS;
}
