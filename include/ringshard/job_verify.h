/* ringshard/job_verify.h - the verify job: proves that a bucket directory
 * (bucket, dedup) or a move directory (plan --emit) holds exactly what its
 * manifest says, placed by the manifest's ring(s), as `ringshard verify`
 * runs it. */
#ifndef RINGSHARD_JOB_VERIFY_H
#define RINGSHARD_JOB_VERIFY_H

#include <stddef.h>
#include <stdint.h>
#include "ringshard/error.h"
#include "ringshard/pipeline.h"

typedef struct {
    const char *dir;           /* the directory to verify */
    /* How to read its files: threads, memory, codec, progress (the job
     * takes the key, dialect and header from the manifest, on a copy). */
    rs_pipeline_opts pipeline;
    uint64_t max_report;       /* differences kept per kind: 8 * max_report lines in all (>= 1) */
} rs_verify_job_opts;

typedef struct {
    uint64_t differences;      /* every difference found (also those not kept) */
    char **lines;              /* the first differences, one line each (no "DIFF DIR: ", no LF) */
    size_t nlines;
    int moves;                 /* 1: a move directory, 0: a bucket directory */
    size_t files;              /* files the manifest lists */
    uint64_t rows, bytes;      /* data rows and bytes read */
    size_t indexes;            /* key indexes checked (keyidx.h) */
} rs_verify_job_result;

/* Verifies o->dir: the ring descriptions against their fingerprints, the
 * files listed against those present (every generation's, docs/format-generations.md),
 * every file's header, every row's
 * placement (bucket: the node the ring assigns; moves: the (old owner, new
 * owner) pair), and every file's rows, bytes, CRC-32 and size against the
 * manifest, and the totals; every key index against its manifest entry and
 * the keys of the file it indexes. The directory is opened once and read through
 * that descriptor, so a replacement meanwhile cannot mix two generations.
 * Writes nothing. Not collective (one process). Returns 0 when the check
 * ran: r->differences says whether DIR holds what it should (0) or not;
 * -1 with err when it could not run: RS_EXIT_IO (no such directory,
 * unreadable, out of memory, DIR replaced while it was read), RS_EXIT_DATA
 * (a manifest that cannot be read), RS_EXIT_INTERRUPTED; r->lines then
 * holds the differences found before. rs_verify_job_result_free releases r. */
int rs_verify_job_run(const rs_verify_job_opts *o, rs_verify_job_result *r, rs_error *err);

/* Frees what r holds (r itself is the caller's); r may be zeroed. */
void rs_verify_job_result_free(rs_verify_job_result *r);

#endif
