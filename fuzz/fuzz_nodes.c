/* fuzz/fuzz_nodes.c - libFuzzer harness; the check is in fuzz/check_nodes.h
 * (shared with tests/test_fuzz_regressions.c). Built by tools/dev/fuzz.sh. */
#define _GNU_SOURCE
#include "check_nodes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return check_nodes(data, size);
}
