/* cli/plan_args.h - the options of `ringshard plan` (cli/plan_args.c). */
#ifndef RS_CLI_PLAN_ARGS_H
#define RS_CLI_PLAN_ARGS_H

#include "cli/cli.h"
#include "ringshard/job_plan.h"

/* The options as given: the job's, and what the command turns into them. */
typedef struct {
    rs_plan_job_opts o;
    rs_cli_ring ro;                 /* --old-nodes is its --nodes, --old-nodes-file its --nodes-file */
    rs_pipeline_opts po;
    const char *new_nodes, *new_nodes_file;
    rs_cli_edits ed;                /* --add, --add-names, --remove, --reweight (--down: ro's) */
    unsigned long long top, batch_bytes;
    int wave_order;                 /* -1: not given, else 1 for largest first */
    int quiet;
} rs_cli_plan_args;

/* plan's option table (cli/plan_args.c). */
extern const rs_opt_command rs_cli_plan_command;

/* The options that do not fit together, in the order they were always
 * checked; have_inputs: INPUT or --files-from given, data: the plan reads
 * rows. Returns -1 to go on, else the exit code (the error printed). */
int rs_cli_plan_check(rs_cli_plan_args *a, const rs_pipeline_opts *po, int have_inputs, int data);

#endif
