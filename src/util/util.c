/* Small helpers shared by the jobs and the cluster layer (util.h). */
#include <stdlib.h>
#include <time.h>
#include "ringshard/util.h"

double rs_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void rs_free_strings(char **list, size_t n)
{
    for (size_t i = 0; list && i < n; i++)
        free(list[i]);
    free(list);
}
