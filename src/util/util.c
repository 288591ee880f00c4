/* Small helpers shared by the jobs and the cluster layer (util.h). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/mman.h>
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

void rs_advise_huge(void *p, size_t n)
{
#ifdef MADV_HUGEPAGE
    const uintptr_t page = 4096;
    uintptr_t from = ((uintptr_t)p + page - 1) & ~(page - 1), to = ((uintptr_t)p + n) & ~(page - 1);
    if (n >= RS_HUGE_MIN && to > from)
        madvise((void *)from, to - from, MADV_HUGEPAGE);
#else
    (void)p, (void)n;
#endif
}

void *rs_alloc_huge(size_t n)
{
    const size_t huge = (size_t)2 << 20;
    if (n < RS_HUGE_MIN)
        return malloc(n ? n : 1);
    size_t whole = (n + huge - 1) / huge * huge; /* whole huge pages: at most 1 MiB more than asked */
    void *p = NULL;
    if (posix_memalign(&p, huge, whole) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, whole, MADV_HUGEPAGE); /* a hint: refused or ignored, lookups are only slower */
#endif
    return p;
}
