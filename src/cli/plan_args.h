/* cli/plan_args.h - the options of `ringshard plan` (cli/plan_args.c). */
#ifndef RS_CLI_PLAN_ARGS_H
#define RS_CLI_PLAN_ARGS_H

#include "cli/cli.h"
#include "ringshard/job_plan.h"

/* The options as given: the job's, and what the command turns into them. */
typedef struct {
    rs_plan_job_opts o;
    rs_cli_ring ro;
    const char *old_nodes, *old_nodes_file, *new_nodes, *new_nodes_file;
    rs_cli_edits ed;                /* --add, --add-names, --remove, --reweight, --down */
    unsigned long long top, batch_bytes;
    int have_order;
} rs_cli_plan_args;

/* Parses plan's options in argv into *a and *po (optind: the first INPUT
 * after). Returns -1 to go on, else the exit code (the error printed; 0
 * after --help). */
int rs_cli_plan_parse(int argc, char **argv, rs_cli_plan_args *a, rs_pipeline_opts *po);

/* The options that do not fit together, in the order they were always
 * checked; have_inputs: INPUT or --files-from given, data: the plan reads
 * rows. Returns -1 to go on, else the exit code (the error printed). */
int rs_cli_plan_check(rs_cli_plan_args *a, const rs_pipeline_opts *po, int have_inputs, int data);

#endif
