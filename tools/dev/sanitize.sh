#!/usr/bin/env bash
# Builds the library, the command and the tests with AddressSanitizer and
# UndefinedBehaviorSanitizer (gcc) and runs the test suite under them; any
# report fails the run (halt_on_error). test_memory is left out, and says
# so: ASan's shadow memory makes peak RSS meaningless.
# Usage: tools/dev/sanitize.sh [build]  (tools/test.sh runs it after the normal suite;
#        `build` only builds, as tools/test.sh does in the background first)
# SAN_SUITES: a ctest regex of the suites to build and run (default: every
# suite); tools/test.sh passes its quick set unless SANITIZE=full.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${SAN_BUILD:-build-asan}
flags="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
SUITES=${SAN_SUITES:-}
if [ -n "$SUITES" ]; then
  # only the runners named, and what they run
  targets=$(cd tests && ls test_*.c | sed 's/\.c$//' | grep -E "$SUITES" | tr '\n' ' ')
  # shellcheck disable=SC2086 # one target a word
  cmake --build "$BUILD" -j"$(nproc)" --target ringshard gen_bills rs_failalloc $targets >/dev/null
else
  cmake --build "$BUILD" -j"$(nproc)" >/dev/null
fi
[ "${1:-}" = build ] && exit 0
# The test directories on a tmpfs, as for the TSan and MPI passes
# (tools/dev/testdirs.sh): about 100 CPU-s less (measured: 445 -> 336). It was
# also how UBSan found test_readers' republishing race reaching
# qsort(NULL, 0) in src/jobs/verify.c, now fixed. test_direct keeps its
# files in the build tree, so direct I/O is still checked under ASan.
. tools/dev/testdirs.sh sanitize
echo "sanitize: test_memory not run under ASan (RSS includes shadow memory); it runs in the normal suite"
# The kill sweeps of test_append and test_history are skipped here and
# say so (RELEASE_SUITE_ONLY in tests/support.h: hundreds of SIGKILLed runs
# whose point is the state on disk, which the Release suite checks).
# Leak checks are off: Criterion's failed assertions return early by design.
# Two suites at a time, as in tools/test.sh.
ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir "$BUILD" --output-on-failure -j2 -E '^test_memory$' ${SUITES:+-R "$SUITES"}
