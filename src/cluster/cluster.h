/* cluster/cluster.h - the commands' jobs run across MPI ranks (see world.h),
 * with output byte-identical to a single process.
 *
 * A single process (size 1) runs exactly the single-process code: every
 * function here then reduces to the ordinary call. */
#ifndef RS_CLUSTER_CLUSTER_H
#define RS_CLUSTER_CLUSTER_H

#include "ringshard/dataset.h"
#include "ringshard/filelist.h"
#include "ringshard/outfile.h"
#include "ringshard/pipeline.h"

/* The inputs of args[0..nargs) and the --files-from lists recorded in ff
 * (ringshard/filelist.h), the same on every rank: rank 0 reads the lists
 * and sends their texts to the others, splits them, and alone checks the
 * files. Collective; 0, or -1 on every rank with the first failure. */
int rs_cluster_file_lists_inputs(rs_file_lists *ff, char **args, size_t nargs, const char *const **inputs,
                                 size_t *ninputs, rs_error *err);

/* rs_outdir_begin on rank 0; the other ranks get the same temporary
 * directory path in od->tmp (and no od->final: only rank 0 publishes or
 * removes it). Collective; -1 on every rank with the first failure, the
 * directory removed. A rank whose err is already set on entry makes every
 * rank fail (errors before this point are agreed on here). */
int rs_cluster_outdir_begin(rs_outdir *od, const char *final, int force, rs_error *err);

/* Ends the output: with ok (every rank's err clear), rank 0 commits the
 * directory; otherwise rank 0 removes it. Collective: returns 0 when
 * published, -1 on every rank with the first error otherwise (err is each
 * rank's error on entry). *od is released either way. */
int rs_cluster_outdir_end(rs_outdir *od, rs_error *err);

/* rs_cluster_outdir_end for a staged output (RS_OUTDIR_STAGE): rank 0
 * moves names[0..n) into the final directory (rs_outdir_commit_into).
 * Collective: 0 when published, -1 on every rank otherwise. */
int rs_cluster_outdir_end_into(rs_outdir *od, const char *const *names, size_t n, rs_error *err);

/* Removes the temporary directory (rank 0) without publishing; the other
 * ranks only release *od. Not collective: call it on every rank. */
void rs_cluster_outdir_abort(rs_outdir *od);

/* rs_pipeline_run across the ranks. The inputs' units (reader.h: whole
 * files, or member ranges of ringshard's own gzip files) are divided into
 * contiguous ranges, balanced by size on disk (compressed size); each rank
 * runs the threaded pipeline on its range: rank 0 into the destination
 * files themselves, the others into a piece file beside each, copied after
 * rank 0's part at offsets from an exclusive scan of the piece sizes, so
 * that each file holds its rows in input order exactly as a single process
 * writes it. Statistics
 * are merged (sums, per-input lists - an input split among ranks summed -,
 * CRC-32s concatenated in rank order) and are the same on every rank. A quarantine file is assembled the same
 * way. Routers see global input indexes (opts->input_base). Collective; on failure -1 on every rank with the error of the
 * lowest failing rank (the first in (input, unit) order). Standard input ("-")
 * cannot be divided: with more than one rank it is an error. Each rank (a
 * single process too) divides its range once more among its lanes
 * (cluster/lanes.h: o->producers, -j, --memory), the same way with threads
 * for ranks; with one lane and one rank this is rs_pipeline_run itself. */
int rs_cluster_pipeline_run(const rs_pipeline_opts *o, rs_pipeline_result *res, rs_error *err);

/* Opens a bucket directory on every rank (rs_bucketdir_open), all of them
 * at the state rank 0 found (its generations: appends published after are
 * left unread by every rank), then rs_cluster_same_dir. Collective; 0, or
 * -1 on every rank with the first failure. Size 1: rs_bucketdir_open. */
int rs_cluster_bucketdir_open(rs_bucketdir *bd, const char *dir, rs_error *err);

/* rs_cluster_bucketdir_open with rs_bucketdir_open_flags's flags (a
 * writer opens TOLERANT, then refuses a damage with its own message). */
int rs_cluster_bucketdir_open_flags(rs_bucketdir *bd, const char *dir, int flags, rs_error *err);

/* After every rank opened the same bucket directory with
 * rs_bucketdir_open (ranks cannot share a descriptor): checks that each
 * read the generation rank 0 read - the same manifest bytes (digest) and,
 * on rank 0's kernel, the same directory (st_dev, st_ino) - so that a
 * --force replacement between the ranks' opens fails the run clearly
 * (RS_EXIT_IO) instead of mixing generations. Collective: call it on every
 * rank, also one whose open failed (err set); -1 on every rank with the
 * first failure (an agreement, see world.h). Size 1: returns 0. */
int rs_cluster_same_dir(const rs_bucketdir *bd, rs_error *err);

/* A run's quarantine file (--on-bad-row quarantine=FILE), published whole:
 * the run writes a temporary beside FILE, which replaces FILE only once the
 * run succeeds, so a run that fails or is killed leaves a previous FILE as
 * it was. With od (a begun output directory), the temporary is a side file
 * of od (ringshard/outdir.h), published with the directory; without, it is
 * published by rs_cluster_quarantine_end. FILE written in place
 * (rs_outfile_in_place: /dev/stderr, a FIFO) stays so. */
typedef struct {
    rs_outfile of;   /* rank 0, without od */
    char *name;      /* the temporary, on every rank */
    const char **slot, *given;   /* po->quarantine, and what it said: put back at the end */
    const char **name_slot;      /* po->quarantine_name: the target's name, for messages */
} rs_cluster_quarantine;

/* Points po->quarantine at the temporary (the same name on every rank: the
 * ranks' pieces are named after it) when po quarantines bad rows; does
 * nothing otherwise. Collective; 0, or -1 on every rank with the first
 * error (a failure already in err on entry included). */
int rs_cluster_quarantine_begin(rs_pipeline_opts *po, rs_outdir *od, rs_cluster_quarantine *q, rs_error *err);

/* The run goes on from the quarantine file an earlier generation of the
 * same command published (--commit-every): rank 0 copies it into the
 * temporary, and po appends to it (quarantine_continue). Collective; 0, or
 * -1 on every rank with the first error. Nothing to do for a file written
 * in place. */
int rs_cluster_quarantine_continue(rs_cluster_quarantine *q, rs_pipeline_opts *po, rs_error *err);

/* After the run (and after od's publication, if any): rank 0 publishes the
 * temporary when ok and err is clear and rs_interrupt_publish_gate lets it
 * (a stop signal: -1, err "interrupted"), else removes it (od's side files are od's).
 * Puts po->quarantine back and releases *q. 0, or -1 with err. Not
 * collective. */
int rs_cluster_quarantine_end(rs_cluster_quarantine *q, int ok, rs_error *err);

/* Which inputs rank r of R gets: [*lo, *hi), contiguous, balanced by
 * weight (the largest rank load is minimal among contiguous splits). */
void rs_cluster_partition(const uint64_t *weight, size_t n, int R, int r, size_t *lo, size_t *hi);

#endif
