/* ringshard/job_dedup.h - the dedup job: one row per key (or per distinct
 * row), at scale, as `ringshard dedup` runs it. Pass 1 buckets the inputs
 * on the ring (the bucket pipeline, into the output's temporary
 * directory); pass 2 deduplicates every bucket in parallel (dedup.h:
 * in memory, or split again when a bucket does not fit). With a bucket
 * directory as the input, pass 1 is skipped. docs/dedup.md has the
 * ordering rules. */
#ifndef RINGSHARD_JOB_DEDUP_H
#define RINGSHARD_JOB_DEDUP_H

#include <stdint.h>
#include <stdio.h>
#include "ringshard/dedup.h"
#include "ringshard/error.h"
#include "ringshard/job_bucket.h"  /* rs_on_seen, RS_GIVEN_* */
#include "ringshard/pipeline.h"
#include "ringshard/procio.h"
#include "ringshard/ring.h"

typedef struct {
    /* The inputs and how to read them (inputs, key, dialect, threads,
     * memory, codec, quarantine, progress); with buckets_dir only threads,
     * memory and codec count (the rest comes from its manifest). Copied. */
    rs_pipeline_opts pipeline;
    const rs_ring *ring;      /* the ring, the same on every rank; NULL with buckets_dir, and
                                 with append when no ring was given (as rs_bucket_job_opts's) */
    const char *buckets_dir;  /* NULL, or a bucket directory to deduplicate (no pass 1) */
    const char *outdir;       /* DIR: a bucket directory, published whole */
    int force;                /* RS_OUTDIR_FORCE [| RS_OUTDIR_FORCE_ANY] */
    const char *duplicates;   /* NULL, or the --duplicates report, published with DIR */
    rs_dedup_mode mode;       /* keep first, keep last, or whole-row duplicates */
    int compress, level;      /* DIR's files: RS_COMPRESS_* and level */
    int temp_compress;        /* pass 1's temporary buckets: RS_COMPRESS_* (level 1) */
    /* --append: the rows of the inputs whose key DIR does not hold yet
     * (the history's copy wins), as a new generation of DIR (created when
     * missing); every file of DIR gets a key index (keyidx.h). Refuses
     * RS_DEDUP_KEEP_LAST and buckets_dir. */
    int append;
    rs_on_seen on_seen;       /* an input DIR (or this run) already holds */
    uint64_t commit_every;    /* as rs_bucket_job_opts */
    int commit_bytes;
    unsigned given;           /* RS_GIVEN_* bits: the others are DIR's */
    int quiet;                /* no notes on stderr */
} rs_dedup_job_opts;

typedef struct {
    int published;            /* 1 when DIR was published */
    uint32_t buckets;         /* buckets deduplicated (DIR's files) */
    uint64_t rows_in, rows;   /* data rows read by pass 2, and kept */
    uint64_t bytes_in, bytes; /* their bytes (row + LF) */
    uint64_t dup_keys;        /* keys (rows, by row) that had more than one copy */
    uint64_t split_buckets, splits, streamed;  /* buckets split again, splits, parts streamed */
    char *largest_node;       /* the bucket with the most bytes (NULL when none) */
    uint64_t largest_rows_in, largest_bytes_in, largest_rows;
    double pass1_seconds, pass2_seconds;
    double seconds;           /* the whole job: the inputs' identity checks, both passes, the
                                 publication (its fsyncs) */
    uint64_t rejected;        /* rows rejected by --on-bad-row (or by the input directory's run) */
    int duplicates_cut;       /* the --duplicates pipe's reader left: the report was cut */
    unsigned long long duplicates_written; /* the report's bytes written (what the reader took, when cut) */
    /* --append */
    uint32_t generations;     /* generations published */
    uint64_t first_gen, last_gen;
    uint64_t inputs_skipped, inputs_ingested;
    uint64_t inputs_empty;    /* as rs_bucket_job_result's */
    uint64_t history_rows;    /* new rows dropped because DIR's history held their key */
    uint64_t repeat_rows;     /* new rows dropped as repeats within the new inputs */
    uint64_t index_read;      /* bytes read from the history's key indexes */
    uint64_t keys_confirmed;  /* new keys found in the history by their exact bytes */
    uint64_t confirm_bytes;   /* of index_read, read to compare those exact keys */
    uint64_t filter_bytes;    /* the filters' size, of the key indexes looked up in */
    uint64_t filter_passes;   /* new keys a filter line passed, in each index looked up in */
    uint64_t seen_bytes;      /* input bytes read before the run to tell inputs already
                                 ingested (read again by the run when not skipped) */
    uint64_t index_bytes;     /* the size of the key indexes consulted */
    uint64_t history_bytes;   /* the size of the history's data files (never read) */
    uint64_t rows_reread;     /* history rows read to build missing key indexes */
    uint64_t indexes_built;   /* key indexes built for history files that had none */
    uint64_t dir_files;       /* DIR's data files after the run, every generation's */
    uint64_t dir_generations; /* and its generations, the base's included (past
                                 RS_GEN_COMPACT_HINT, the command suggests compact) */
} rs_dedup_job_result;

/* Runs the dedup job: writes DIR/<node>.csv.gz (.csv.zst, .csv) with each
 * bucket's surviving rows in input order and DIR/manifest.json (kind
 * "buckets", as `bucket` writes it), byte-identical for any threads,
 * --memory and ranks; the temporary buckets live in DIR's temporary
 * directory. DIR, the --duplicates report and the quarantine file are
 * published only when rows and bytes are conserved (read = kept + removed
 * + rejected). Under MPI collective: every rank calls it with the same
 * options (cluster.h); r is filled on rank 0 (counts on every rank). The
 * process's malloc thresholds are raised (mallopt) for pass 2. Returns 0,
 * or -1 with err: RS_EXIT_DATA (bad row or input, a buckets_dir that is not
 * a full bucket directory or whose rows are misplaced), RS_EXIT_IO,
 * RS_EXIT_USAGE (a key that the header lacks), RS_EXIT_EXISTS,
 * RS_EXIT_INTERRUPTED; nothing is published unless r->published (a failure
 * after publication). rs_dedup_job_result_free releases r. */
int rs_dedup_job_run(const rs_dedup_job_opts *o, rs_dedup_job_result *r, rs_error *err);

/* Frees what r holds (r itself is the caller's); r may be zeroed. */
void rs_dedup_job_result_free(rs_dedup_job_result *r);

/* Prints the summary of r to f (what `ringshard dedup` prints on
 * stderr): rows in and out, duplicates (counted by keys, or rows with
 * by_row), the buckets in outdir, the passes' times, the largest bucket,
 * splits. */
void rs_dedup_job_print(FILE *f, const char *outdir, int by_row, const rs_dedup_job_result *r);

/* Prints the summary of an append run to f: the generations of outdir,
 * the inputs, what the history held and what was read of it (as the job
 * counts it, and as the kernel does since `since`); or why nothing was
 * added. */
void rs_dedup_job_print_append(FILE *f, const char *outdir, const rs_procio *since, const rs_dedup_job_result *r);

#endif
