/* cli/plan_print.h - what `ringshard plan` prints (cli/plan_print.c). */
#ifndef RS_CLI_PLAN_PRINT_H
#define RS_CLI_PLAN_PRINT_H

#include <stdio.h>
#include "ringshard/job_plan.h"


/* Prints the plan job's result r, run with a, to f: the change, the method,
 * moved/ideal/floor, balance, consistency (violating pairs: max(top, 20)
 * listed), the data, and the top largest moves. Write errors are left in
 * f's error flag. */
void rs_cli_plan_summary(FILE *f, const rs_plan_job_opts *a, unsigned long long top, const rs_plan_job_result *r);

#endif
