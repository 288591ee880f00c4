/* cli/simulate_print.h - what `ringshard simulate` prints (cli/simulate_print.c). */
#ifndef RS_CLI_SIMULATE_PRINT_H
#define RS_CLI_SIMULATE_PRINT_H

#include "cli/cli.h"
#include "ringshard/job_simulate.h"

/* Prints the sweep's table, run with so, to the summary stream
 * (rs_cli_summary): a comment line naming the keys (pattern), the ring and
 * the change, then one TSV row per vnode count; changing adds the moved
 * columns, a factor not NaN the bounded-load ones. */
void rs_cli_simulate_print_sweep(const rs_simulate_job_opts *so, const rs_simulate_job_result *res,
                                 const char *pattern, int changing, double factor);

/* Prints the summary of the one ring (with bo->tsv the per-node table
 * instead) to the summary stream: the ring, the keys (pattern), balance,
 * the flagged nodes, the change when changing, bounded loads. */
void rs_cli_simulate_print_one(const rs_simulate_job_opts *so, const rs_simulate_job_result *res, const char *pattern,
                               int changing, const rs_cli_balance *bo);

/* Writes the pictures bo asks for (--svg, --html), after the text: the
 * sweep's line chart, or the ring's balance pictures. 0, or -1 with err. */
int rs_cli_simulate_pictures(const rs_simulate_job_opts *so, const rs_simulate_job_result *res, int sweep,
                             const rs_cli_balance *bo, rs_error *err);

#endif
