/* fuzz/fuzz_size.c - libFuzzer harness; the check is in fuzz/check_size.h
 * (shared with tests/test_fuzz_regressions.c). Built by tools/dev/fuzz.sh. */
#include "check_size.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return check_size(data, size);
}
