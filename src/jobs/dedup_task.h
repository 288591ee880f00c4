/* jobs/dedup_task.h - one bucket of the dedup job's pass 2, and the pass
 * that runs them: the bucket's rows (pass 1's temporary bucket, or the
 * files of a --buckets directory) deduplicated into the output, and with
 * --append first filtered against the keys the bucket's history holds
 * (history.h), the history's missing key indexes built on the way. */
#ifndef RS_JOBS_DEDUP_TASK_H
#define RS_JOBS_DEDUP_TASK_H

#include <stdint.h>
#include "ringshard/dataset.h"
#include "ringshard/dedup.h"
#include "ringshard/history.h"
#include "ringshard/ring.h"

/* dedup --buckets: a row belongs in its bucket when the manifest's ring
 * puts its key on the bucket's node. */
typedef struct {
    const rs_ring *ring;
    uint32_t node;
} rs_placement;

int rs_placed_on(void *ctx, const char *key, size_t keylen);

/* A history file's key index: where it is, or where it is built now. */
typedef struct {
    const char *name;     /* under dirfd: DIR's own index, or a staged one */
    int dirfd;
    char *built;          /* NULL, or the path of the index this run builds (staged) */
} rs_index_at;

typedef struct {
    char *in;             /* the bucket to deduplicate */
    const char *in_name;  /* --buckets: its name under the directory's descriptor */
    const char *const *more, *const *more_paths; /* --buckets: its segments (appended generations) */
    const rs_manifest_file *const *more_files;   /* and their manifest entries */
    size_t nmore;
    rs_dedup_check check; /* --buckets: what it must hold (its manifest entry) */
    rs_placement place;   /* --buckets, and --append's history: check.ctx */
    char *out;            /* its output, inside the output's temporary directory */
    char *dups;           /* its --duplicates part, or NULL */
    const char *node;
    uint64_t rows, bytes; /* the input bucket's data rows and bytes */
    /* --append */
    char *index;          /* the output's key index, or NULL */
    char *filtered;       /* pass 1's bucket without the history's keys */
    size_t part0, nparts; /* its node's files in the history (rs_bucketdir order) */
    rs_history_result hres;
    uint64_t rows_reread; /* history rows read to build missing indexes */
    rs_dedup_result res;
    const uint64_t *in_rows; /* NULL, or its rows of each input, as pass 1 counted them (rs_dedup_opts) */
    uint64_t *kept_rows;     /* [nin_rows] then the rows kept of each (res.kept_rows_ok) */
    size_t nin_rows;
    rs_error err;
} rs_dedup_task;

/* What the tasks of one run share: the options (o), and with --append the
 * history (bd: DIR as opened under its lock) and where each history
 * file's key index is (at[k] for bd's file k). */
typedef struct {
    rs_dedup_opts o;
    int append;           /* per-row duplicates report, indexes, segments */
    int segments;         /* the outputs are segments (a generation's) */
    const rs_bucketdir *bd;
    rs_index_at *at;
    uint64_t *built_bytes;  /* [bd->nfiles]: the size and CRC-32 of each index built */
    uint32_t *built_crc;
} rs_dedup_pass;

/* Runs tasks jobs[0..n) (buckets first.. of the whole run: split files are
 * named by that number) on `threads` threads, biggest first. Returns 0, or
 * -1 with err (the failure of the lowest-numbered bucket). */
int rs_dedup_pass2(rs_dedup_task *jobs, uint32_t n, uint32_t first, const rs_dedup_pass *p, int threads,
                   rs_error *err);

#endif
