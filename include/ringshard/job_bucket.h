/* ringshard/job_bucket.h - the bucket job: every row of the inputs into
 * the output of the node that owns its key, as `ringshard bucket` runs it. */
#ifndef RINGSHARD_JOB_BUCKET_H
#define RINGSHARD_JOB_BUCKET_H

#include <stdint.h>
#include <stdio.h>
#include "ringshard/error.h"
#include "ringshard/pipeline.h"
#include "ringshard/ring.h"

/* What an append does with an input whose content DIR already holds
 * (identified by its size and the CRC-64 of its stored bytes, whatever
 * its name): skip it with a note, fail the run (RS_EXIT_EXISTS), or ingest
 * it again. */
typedef enum { RS_SEEN_SKIP = 0, RS_SEEN_FAIL, RS_SEEN_AGAIN } rs_on_seen;

/* Past this many generations an append suggests `ringshard compact`:
 * every reader opens each generation's manifest and each of its segments,
 * and a node read in many small pieces costs more than one file does. */
#define RS_GEN_COMPACT_HINT 32

typedef struct {
    /* The inputs and how to read and write them: inputs, key, dialect,
     * threads, memory, compress/level, keys_only, quarantine, progress
     * (rs_pipeline_opts; the job sets the routing and the destinations
     * itself, on a copy). */
    rs_pipeline_opts pipeline;
    const rs_ring *ring;     /* the ring; the same on every rank under MPI. With append, NULL:
                                no ring given, DIR's (the default ring if DIR is made) */
    const char *outdir;      /* DIR: published whole, with DIR/manifest.json */
    int force;               /* RS_OUTDIR_FORCE [| RS_OUTDIR_FORCE_ANY] */
    /* --append: the inputs are added to DIR as new generations (DIR is
     * created, as a directory that grows, when it does not exist) */
    int append;
    rs_on_seen on_seen;      /* an input DIR (or this run) already holds */
    uint64_t commit_every;   /* 0: one generation; else one every this many inputs, */
    int commit_bytes;        /* or, with commit_bytes, inputs of this many bytes as stored */
    unsigned given;          /* RS_GIVEN_* bits (append: the rest comes from DIR) */
    int quiet;               /* no notes on stderr (a skipped input) */
} rs_bucket_job_opts;

typedef struct {
    rs_pipeline_result run;  /* the merged statistics: rows, bytes, per input and per node */
    uint32_t ndest;          /* run.dest's entries: the nodes of the ring used */
    int published;           /* 1 when DIR was published (append: a generation, or more) */
    double publish_seconds;  /* flushing to disk and publishing */
    /* append */
    uint32_t generations;    /* generations published by this run */
    uint64_t first_gen, last_gen; /* the first and the last of them */
    uint64_t inputs_skipped; /* inputs DIR already held, not ingested again */
    uint64_t inputs_ingested;
    uint64_t inputs_empty;    /* inputs that would have created DIR but hold no header line
                                 nor row: DIR is not created from nothing */
    uint64_t dir_files;       /* DIR's data files after the run, every generation's */
    uint64_t dir_generations; /* and its generations, the base's included (past
                                 RS_GEN_COMPACT_HINT, the command suggests compact) */
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
/* With o->append, the inputs are added to DIR instead (docs/format-generations.md,
 * "Appendable bucket directories"): each generation is DIR/g<N>/ with a
 * segment per node that got rows (header line first) and its manifest, published in
 * one rename under DIR's writer lock; inputs DIR already holds follow
 * o->on_seen; o->commit_every publishes a generation every so many inputs
 * (a run killed in between is resumed by running it again: what was
 * published is skipped). The options o->given leaves out are DIR's; given
 * ones that differ are RS_EXIT_USAGE. A DIR that does not exist is created
 * as the fresh run creates it, its manifest of schema 2. r counts the
 * generations; r->run sums their statistics. */

/* Frees what r holds (r itself is the caller's); r may be zeroed. */
void rs_bucket_job_result_free(rs_bucket_job_result *r);

/* The head of an append's summary, to f: why nothing was added (DIR not
 * created: its inputs hold no row; nothing new: every input already
 * ingested), a whole line, 0; or "ringshard CMD: generation N of DIR"
 * (generations first_gen-last_gen), no newline, 1: the caller goes on
 * with its counts. */
int rs_append_print_head(FILE *f, const char *cmd, const char *dir, uint32_t generations, uint64_t first_gen,
                         uint64_t last_gen, uint64_t inputs_skipped, uint64_t inputs_empty);

/* Says on f that DIR could be compacted, when it holds more than
 * RS_GEN_COMPACT_HINT generations (files: its data files). */
void rs_append_print_compact_hint(FILE *f, const char *cmd, const char *dir, uint64_t generations, uint64_t files);

/* The summary of a bucket --append run r of DIR, to f (what `ringshard
 * bucket` prints on stderr): rs_append_print_head, the inputs ingested and
 * skipped, the hint to compact. */
void rs_bucket_job_print_append(FILE *f, const char *dir, const rs_bucket_job_result *r);

#endif
