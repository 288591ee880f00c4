/* cli/plan_summary.h - the summary of `ringshard plan` (cli/plan_summary.c). */
#ifndef RS_CLI_PLAN_SUMMARY_H
#define RS_CLI_PLAN_SUMMARY_H

#include <stdio.h>
#include "ringshard/job_plan.h"

/* Prints the plan job's result r, run with a, to f: the change, the method,
 * moved/ideal/floor, balance, consistency (violating pairs: max(top, 20)
 * listed), the data, and the top largest moves. Write errors are left in
 * f's error flag. */
void rs_cli_plan_summary(FILE *f, const rs_plan_job_opts *a, unsigned long long top, const rs_plan_job_result *r);

#endif
