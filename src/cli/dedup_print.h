/* cli/dedup_print.h - what `ringshard dedup` prints (cli/dedup_print.c). */
#ifndef RS_CLI_DEDUP_PRINT_H
#define RS_CLI_DEDUP_PRINT_H

#include "cli/cli.h"
#include "ringshard/job_dedup.h"
#include "ringshard/procio.h"

/* The options of `ringshard dedup` as given: what the command turns into
 * the job's options, and what its summaries name. */
typedef struct {
    /* options */
    rs_pipeline_opts po;
    rs_cli_ring ro;
    const char *outdir, *dups_path, *buckets_dir;
    int force, quiet, temp_compress, by_row, keep_last, compress, level;
    rs_cli_append ap;
    rs_procio io0;   /* the kernel's read counters when the command began */
} rs_cli_dedup_args;

/* Prints the summary of the dedup job's result r, run with a, on stderr:
 * rows in and out, the largest bucket, splits. */
void rs_cli_dedup_summary(const rs_cli_dedup_args *a, const rs_dedup_job_result *r);

/* Prints the summary of an --append run on stderr: the generations, the
 * inputs, what the history held and what was read of it (as ringshard
 * counts it, and as the kernel does since a->io0); or why nothing was
 * added. */
void rs_cli_dedup_append_summary(const rs_cli_dedup_args *a, const rs_dedup_job_result *r);

#endif
