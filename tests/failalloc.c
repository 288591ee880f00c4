/* tests/failalloc.c - a preload library that makes realloc fail, so the
 * tests can drive ringshard's out-of-memory paths for real:
 *   LD_PRELOAD=librs_failalloc.so RS_FAIL_REALLOC_MIN=N [RS_FAIL_REALLOC_MAX=M]
 * fails every realloc of an existing block to a size in [N, M] (M default:
 * unlimited). Fresh allocations (realloc(NULL, n), malloc) still succeed,
 * so start-up is unaffected and only growing buffers fail. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>

static size_t lo, hi;

/* A constructor, not the first call: realloc may run before the
 * environment is readable (sanitizer runtimes start first). */
__attribute__((constructor)) static void setup(void)
{
    const char *a = getenv("RS_FAIL_REALLOC_MIN"), *b = getenv("RS_FAIL_REALLOC_MAX");
    lo = a ? strtoull(a, NULL, 10) : 0;
    hi = b ? strtoull(b, NULL, 10) : (size_t)-1;
}

void *realloc(void *p, size_t n)
{
    static void *(*next)(void *, size_t);
    if (!next)
        next = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
    if (p != NULL && lo > 0 && n >= lo && n <= hi) {
        errno = ENOMEM;
        return NULL;
    }
    return next(p, n);
}
