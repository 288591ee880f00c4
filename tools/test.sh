#!/usr/bin/env bash
# Installs what is missing, builds (Release), installs into a scratch prefix
# and builds a program against that with pkg-config, runs the whole test
# suite, builds without libzstd and runs the zstd suite there (the
# refusals), builds the MPI-aware command and runs the MPI suite under mpirun,
# then runs it again under AddressSanitizer + UBSan (tools/dev/sanitize.sh)
# and the pipeline suites against a ThreadSanitizer build (tools/dev/tsan.sh),
# and runs each libFuzzer harness for FUZZ_SECONDS (tools/dev/fuzz.sh);
# SANITIZE=0 skips these for a quick local run.
# The sanitizer passes come in two sizes. The default (SANITIZE=1, what CI
# runs) keeps the whole command near 15 minutes on 2 cores: ASan + UBSan
# over the suites that call the library in-process and the quick command
# suites (ASAN_QUICK below) and each fuzzer 5 s. SANITIZE=full also runs
# every suite under ASan, the pipeline's suites under TSan (tools/dev/tsan.sh)
# and each fuzzer 10 s: about 40 more minutes.
# Usage: tools/test.sh            (the README's test command; .ci/run calls it)
# Also: the README's tour (tools/check/readme_tour.sh) against the installed command.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh
tools/deps.sh --mpi
BUILD=${BUILD:-build}
SANITIZE=${SANITIZE:-1}
ASAN_QUICK='^test_(csv|io|keyidx|manifest|names|hash|ring|pipeline|runplan|outfile|writeback|waits|deflate_placement|fuzz_regressions|edges|verify|metrics|cli_ring|simulate)$'
if [ "$SANITIZE" = full ]; then
  export SAN_SUITES=${SAN_SUITES:-} FUZZ_SECONDS=${FUZZ_SECONDS:-10}
else
  export SAN_SUITES=${SAN_SUITES:-$ASAN_QUICK} FUZZ_SECONDS=${FUZZ_SECONDS:-5}
fi
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j"$(nproc)"

# The other configurations are built in the background, at a lower
# priority, while the Release suite runs: the suite leaves a core idle for
# much of its time (fsyncs, process start-ups, waits for a child's state),
# and the builds fill it. Their suites run after the Release suite.
prebuild() {
  # (without LTO: these two check behaviour, not speed, and LTO doubles
  # their build)
  cmake -S . -B "$BUILD-nozstd" -DCMAKE_BUILD_TYPE=Release -DRINGSHARD_LTO=OFF -DRINGSHARD_ZSTD=OFF >/dev/null
  cmake --build "$BUILD-nozstd" -j"$(nproc)" --target ringshard test_zstd
  cmake -S . -B "$BUILD-mpi" -DCMAKE_BUILD_TYPE=Release -DRINGSHARD_LTO=OFF -DRINGSHARD_MPI=ON >/dev/null
  cmake --build "$BUILD-mpi" -j"$(nproc)" --target ringshard gen_bills test_mpi
  if [ "$SANITIZE" != 0 ]; then
    tools/dev/fuzz.sh build
    if [ "$SANITIZE" = full ]; then tools/dev/tsan.sh build; fi
    tools/dev/sanitize.sh build
  fi
}
prelog=$(mktemp)
# (its own process group, so that an early exit stops every compiler in it)
setsid nice -n 10 bash -c "set -euo pipefail; $(declare -f prebuild); BUILD='$BUILD' SANITIZE='$SANITIZE' prebuild" \
  >"$prelog" 2>&1 &
pre=$!
prefix=$(mktemp -d)
trap 'kill -- -"$pre" 2>/dev/null || true; rm -rf "$prefix" "$prelog"' EXIT
cmake --install "$BUILD" --prefix "$prefix" >/dev/null
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
# shellcheck disable=SC2046 # pkg-config's flags are meant to split
cc tests/install/example.c $(pkg-config --cflags --libs --static ringshard) -o "$prefix/example"
"$prefix/example"
"$prefix/bin/ringshard" --version
# the README's tour with the installed command, as a user runs it after
# `cmake --install` (the suite runs it with the build's, ctest readme_tour)
tools/check/readme_tour.sh "$prefix/bin" > "$prefix/tour.log" 2>&1 || { cat "$prefix/tour.log" >&2; exit 1; }
tail -n 1 "$prefix/tour.log"

# Two suites at a time (each runs two tests at a time, Criterion --jobs 2):
# much of a suite's time is spent waiting for fsyncs on /tmp's disk and
# for child processes, which the other suite's work fills; the longest
# suites start first (their COST in CMakeLists.txt). Every test has a
# directory of its own (mkdtemp), so they cannot collide. readme_tour is
# left out: the same tour ran above, with the installed command.
ctest --test-dir "$BUILD" --output-on-failure -j2 -E '^readme_tour$'

if ! wait "$pre"; then
  cat "$prelog" >&2
  echo "test.sh: building the other configurations failed (above)" >&2
  exit 1
fi

# The build without libzstd: `--compress zstd` and zstd inputs
# are refused (exit 64). Only the command and the suite that checks it.
ctest --test-dir "$BUILD-nozstd" --output-on-failure -R '^test_zstd$'

# The MPI-aware build: the same command, built with
# -DRINGSHARD_MPI=ON against Open MPI, run by mpirun for R = 1..4 ranks and
# compared byte for byte with single-process runs (tests/test_mpi.c). Its
# test directories on a tmpfs (tools/dev/testdirs.sh): the ranks' fsyncs are
# most of its time on a disk, and the Release suite above ran on /tmp.
(. tools/dev/testdirs.sh mpi && ctest --test-dir "$BUILD-mpi" --output-on-failure -R '^test_mpi$')
if [ "$SANITIZE" != 0 ]; then
  FUZZ_PARALLEL=${FUZZ_PARALLEL:-$(nproc)} tools/dev/fuzz.sh run
  if [ "$SANITIZE" = full ]; then TSAN_TEST_BUILD="$BUILD" tools/dev/tsan.sh; fi
  tools/dev/sanitize.sh
fi
