/* ringshard/job_compact.h - the compact job: a bucket directory that grew
 * by appends (DIR/g<N>/ segments, docs/format-generations.md) merged back into one
 * file per node, DIR/<node>.csv.gz as `bucket` writes it, as
 * `ringshard compact` runs it. */
#ifndef RINGSHARD_JOB_COMPACT_H
#define RINGSHARD_JOB_COMPACT_H

#include <stdint.h>
#include "ringshard/dataset.h"
#include "ringshard/error.h"

typedef struct {
    const char *dir;          /* the bucket directory */
    uint64_t memory;          /* what merging a node's key indexes may use (0: RS_KEYIDX_WRITER_MEMORY) */
    int no_check;             /* 1: copy each file in the kernel, its size checked only (--no-check) */
} rs_compact_job_opts;

typedef struct {
    int published;            /* 1 when DIR was replaced by its compacted form */
    uint64_t generations;     /* generations merged: the base and every appended one */
    uint64_t generation;      /* the compacted base's generation number (the newest merged) */
    uint64_t files_before, files_after;  /* data files */
    uint64_t rows, bytes;     /* data rows and bytes (unchanged by the merge) */
    uint64_t file_bytes;      /* bytes copied */
    double seconds;
} rs_compact_job_result;

/* Compacts o->dir under its writer lock (appends wait for it): for every
 * node, its base file then its segments (each without its header line,
 * files[].header_bytes), concatenated byte for byte (gzip members and zstd
 * frames concatenate, so the file is what one `bucket` run over the same
 * rows would write, up to where its members end), each read once, written
 * out and decoded as it is read: its decoded data's CRC-32 and bytes (and a
 * base file's header line) checked against its manifest, a damaged file
 * refused (RS_EXIT_DATA, naming it) before anything is published; with
 * o->no_check, copied in the kernel (copy_file_range), its size checked
 * only. Nodes are merged on OMP_NUM_THREADS threads (default: one a CPU),
 * the same bytes and the same first error whatever their number. All go
 * into a new DIR built beside it, with a manifest of schema 2 whose
 * generation is the newest merged one and whose inputs are
 * every generation's; then DIR is replaced in one step as --force replaces
 * it (outdir.h). The rows, their order, their bytes and every file's CRC-32
 * stay as they were. A directory of one generation is left as it is
 * (r->published 0). Each file's size is checked against its manifest
 * before it is copied (RS_EXIT_VERIFY). Returns 0, or -1 with err:
 * RS_EXIT_IO (no such directory, a read or write failed), RS_EXIT_DATA (a
 * manifest that cannot be read, a damaged chain, file or key index),
 * RS_EXIT_USAGE (not a bucket directory),
 * RS_EXIT_VERIFY, RS_EXIT_INTERRUPTED; nothing is replaced then. */
int rs_compact_job_run(const rs_compact_job_opts *o, rs_compact_job_result *r, rs_error *err);

/* The compacted form of the generations bd holds (its base and bd->gens,
 * whatever their numbers: repair passes those it keeps) written into od's
 * temporary directory: each node's files merged, their key indexes when
 * every file has one and drop_indexes is 0 (merged within `memory`, 0:
 * the default, keyidx.h; with drop_indexes the merged files get none, the
 * manifest keeping what they would hold, and dedup --append builds them),
 * the manifest (generation: the last one of bd; the
 * inputs of the generations held). Every file is checked as it is copied,
 * as rs_compact_job_run checks it. Adds r->file_bytes, sets
 * r->files_after. 0, or -1 with err (RS_EXIT_IO, RS_EXIT_DATA for a damaged
 * file or key index, RS_EXIT_VERIFY for a file whose size is not its
 * manifest's, RS_EXIT_INTERRUPTED); od is the
 * caller's to commit or abort. */
int rs_compact_into(const rs_bucketdir *bd, const rs_outdir *od, uint64_t memory, int drop_indexes,
                    rs_compact_job_result *r, rs_error *err);

/* rs_compact_into taking the parts `take` says (NULL: rs_compact_into):
 * the merged files and the manifest's totals hold the parts taken only.
 * Indexes are merged only with drop_indexes 0, and (take->record_lost)
 * for the nodes none of whose parts is left out: a lost part's node gets
 * no index, which the next dedup --append builds. */
int rs_compact_parts(const rs_bucketdir *bd, const rs_outdir *od, uint64_t memory, int drop_indexes,
                     const rs_compact_take *take, rs_compact_job_result *r, rs_error *err);

#endif
