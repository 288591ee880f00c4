/* fuzz/fuzz_json.c - libFuzzer harness for the JSON reader and the
 * manifest reader; the check is in fuzz/check_json.h (shared with
 * tests/test_fuzz_regressions.c). Built by tools/dev/fuzz.sh. */
#define _GNU_SOURCE
#include "check_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return check_json(data, size);
}
