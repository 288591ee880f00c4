/* fuzz/check_common.h - shared by the libFuzzer harnesses (fuzz/fuzz_*.c)
 * and their regression replay (tests/test_fuzz_regressions.c).
 *
 * Every check_*.h defines `int check_X(const uint8_t *data, size_t size)`:
 * it runs the code under test on the bytes, compares it with a reference
 * and calls abort() (after a message on stderr) on any disagreement or
 * broken invariant. It returns 0 otherwise. All helpers are static and
 * prefixed per harness so that one file may include every check_*.h. */
#ifndef RINGSHARD_FUZZ_CHECK_COMMON_H
#define RINGSHARD_FUZZ_CHECK_COMMON_H

#include <stdio.h>
#include <stdlib.h>

#define FZ_CHECK(cond, ...)                                                   \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, \
                    #cond);                                                   \
            fprintf(stderr, __VA_ARGS__);                                     \
            fputc('\n', stderr);                                              \
            abort();                                                          \
        }                                                                     \
    } while (0)

#endif
