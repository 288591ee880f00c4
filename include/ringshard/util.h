/* ringshard/util.h - small helpers the jobs and the cluster layer share. */
#ifndef RINGSHARD_UTIL_H
#define RINGSHARD_UTIL_H

#include <stddef.h>

/* Monotonic seconds (CLOCK_MONOTONIC), for the timings jobs report. */
double rs_now(void);

/* Frees list[0..n) and list itself; list may be NULL. */
void rs_free_strings(char **list, size_t n);

#endif
