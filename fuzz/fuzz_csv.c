/* fuzz/fuzz_csv.c - libFuzzer harness; the check is in fuzz/check_csv.h
 * (shared with tests/test_fuzz_regressions.c). Built by tools/dev/fuzz.sh. */
#include "check_csv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return check_csv(data, size);
}
