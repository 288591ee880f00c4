#!/bin/sh
# tools/dev/fuzz.sh - build and run the libFuzzer harnesses.
#
#   tools/dev/fuzz.sh [build|run|all] [HARNESS...]     (default: all csv gzip nodes size json)
#
# Builds fuzz/fuzz_<h>.c with clang -fsanitize=fuzzer,address,undefined
# against the library sources (compiled once into an instrumented archive),
# then replays
# fixtures/fuzz/regressions/<h>/ and fuzzes each harness for FUZZ_SECONDS
# (default 60) seconds, starting from fixtures/fuzz/<h>/. New corpus entries
# go to $FUZZ_BUILD/corpus/<h>/, crashes to $FUZZ_BUILD/artifacts/<h>/ (copy
# a crash into fixtures/fuzz/regressions/<h>/ once it is fixed). Exits
# non-zero if any harness fails to build, fails a regression input or finds
# a crash.
#
# Environment: FUZZ_SECONDS (60), FUZZ_BUILD (build-fuzz), FUZZ_CC (clang),
# FUZZ_FLAGS (extra libFuzzer flags, e.g. "-runs=10000000"; with -runs the
# time limit still applies), FUZZ_JOBS (compile parallelism, 2),
# FUZZ_PARALLEL (harnesses fuzzed at once, 1; tools/test.sh: the cores, 2),
# FUZZ_TRACE_CMP (1; 0 builds the library without comparison tracing:
# about twice the executions a second, less guidance - for long runs).
set -eu

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
B=${FUZZ_BUILD:-$ROOT/build-fuzz}
CC=${FUZZ_CC:-clang}
JOBS=${FUZZ_JOBS:-2}
PARALLEL=${FUZZ_PARALLEL:-1}
ALL="csv gzip nodes size json"

mode=all
case "${1:-}" in
build|run|all) mode=$1; shift ;;
-h|--help) sed -n '2,20p' "$0"; exit 0 ;;
esac
harnesses=${*:-$ALL}
for h in $harnesses; do
    [ -f "$ROOT/fuzz/fuzz_$h.c" ] || { echo "fuzz.sh: no harness fuzz/fuzz_$h.c" >&2; exit 64; }
done

LIBCOV=-fsanitize=fuzzer-no-link
[ "${FUZZ_TRACE_CMP:-1}" = 0 ] && LIBCOV="$LIBCOV -fno-sanitize-coverage=trace-cmp"
CFLAGS="-g -O1 -std=gnu11 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined -fopenmp"
INC="-I$ROOT/include -I$ROOT/src -I$B/include -I$ROOT/fuzz"

build() {
    command -v "$CC" >/dev/null || { echo "fuzz.sh: $CC not found (apt-get install clang libclang-rt-dev)" >&2; exit 1; }
    mkdir -p "$B/include" "$B/obj"
    version=$(sed -n 's/^project(ringshard VERSION \([0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")
    isal=0
    pkg-config --exists libisal 2>/dev/null && isal=1
    libs="-lcsv -lz -lm"
    [ "$isal" = 1 ] && libs="$libs $(pkg-config --libs libisal)"
    zstd=0
    pkg-config --exists libzstd 2>/dev/null && zstd=1
    [ "$zstd" = 1 ] && libs="$libs $(pkg-config --libs libzstd)"
    cat >"$B/include/rs_config.h.new" <<CFG
#ifndef RS_CONFIG_H
#define RS_CONFIG_H
#define RS_VERSION "${version:-0.0.0}"
#define RS_HAVE_ISAL $isal
#define RS_HAVE_ZSTD $zstd
#endif
CFG
    if cmp -s "$B/include/rs_config.h.new" "$B/include/rs_config.h"; then
        rm "$B/include/rs_config.h.new"
    else
        mv "$B/include/rs_config.h.new" "$B/include/rs_config.h"
    fi
    # the library, every source but the command line, instrumented for coverage
    rm -f "$B/obj"/*.o
    (cd "$ROOT" && find src -name '*.c' ! -path 'src/cli/*' | sort) | \
        xargs -P "$JOBS" -I{} sh -c '
            o="$1/obj/$(echo "$2" | tr / _ | sed "s/\.c\$/.o/")"
            '"$CC $CFLAGS $LIBCOV $INC"' -c "$3/$2" -o "$o"' sh "$B" {} "$ROOT"
    rm -f "$B/libringshard_fuzz.a"
    ar rcs "$B/libringshard_fuzz.a" "$B/obj"/*.o
    for h in $harnesses; do
        echo "fuzz.sh: building fuzz_$h"
        # the checking code needs no comparison tracing (it slows each run
        # by half and steers nothing); the library keeps it
        $CC $CFLAGS -fsanitize=fuzzer -fno-sanitize-coverage=trace-cmp $INC -c "$ROOT/fuzz/fuzz_$h.c" \
            -o "$B/obj_fuzz_$h.o"
        $CC $CFLAGS -fsanitize=fuzzer $LIBCOV $INC "$B/obj_fuzz_$h.o" "$B/libringshard_fuzz.a" $libs -o "$B/fuzz_$h"
    done
}

# One harness: replays its regressions, then fuzzes it; returns non-zero if
# either fails.
run_one() {
    h=$1
    bin="$B/fuzz_$h"
    reg="$ROOT/fixtures/fuzz/regressions/$h"
    if [ -d "$reg" ] && [ -n "$(ls -A "$reg")" ]; then
        echo "fuzz.sh: $h: replaying $(ls "$reg" | wc -l) regression inputs"
        if ! "$bin" -runs=1 "$reg"/* >"$B/regressions_$h.log" 2>&1; then
            tail -n 30 "$B/regressions_$h.log" >&2
            echo "fuzz.sh: $h: a regression input fails" >&2
            return 1
        fi
    fi
    mkdir -p "$B/corpus/$h" "$B/artifacts/$h"
    seeds="$ROOT/fixtures/fuzz/$h"
    [ -d "$seeds" ] || seeds=
    [ -d "$reg" ] && seeds="$seeds $reg"
    case $h in
    size) maxlen=64 ;;
    *) maxlen=4096 ;;
    esac
    echo "fuzz.sh: $h: fuzzing for ${FUZZ_SECONDS}s"
    # shellcheck disable=SC2086
    if "$bin" -max_total_time="$FUZZ_SECONDS" -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 -max_len=$maxlen \
        -artifact_prefix="$B/artifacts/$h/" ${FUZZ_FLAGS:-} "$B/corpus/$h" $seeds >"$B/fuzz_$h.log" 2>&1; then
        grep -E '^stat::number_of_executed_units|^stat::average_exec_per_sec' "$B/fuzz_$h.log" | \
            sed "s/^/fuzz.sh: $h: /"
    else
        tail -n 60 "$B/fuzz_$h.log" >&2
        echo "fuzz.sh: $h: FAILED (crash input in $B/artifacts/$h/; log $B/fuzz_$h.log)" >&2
        return 1
    fi
}

# FUZZ_PARALLEL harnesses at a time (a libFuzzer process keeps one core
# busy, so on 2 cores two of them each get the executions they would get
# alone, in half the time), their output printed in order after each group.
run() {
    status=0
    for h in $harnesses; do
        [ -x "$B/fuzz_$h" ] || { echo "fuzz.sh: $B/fuzz_$h is not built" >&2; exit 1; }
    done
    # shellcheck disable=SC2086 # the names are meant to split
    set -- $harnesses
    while [ $# -gt 0 ]; do
        group=
        # shellcheck disable=SC2086
        while [ $# -gt 0 ] && [ "$(echo $group | wc -w)" -lt "$PARALLEL" ]; do
            rm -f "$B/run_$1.rc"
            { if run_one "$1"; then echo 0 >"$B/run_$1.rc"; else echo 1 >"$B/run_$1.rc"; fi; } >"$B/run_$1.out" 2>"$B/run_$1.err" &
            group="$group $1"
            shift
        done
        wait
        for h in $group; do
            cat "$B/run_$h.out"
            cat "$B/run_$h.err" >&2
            [ "$(cat "$B/run_$h.rc" 2>/dev/null)" = 0 ] || status=1
        done
    done
    return $status
}

case $mode in
build) build ;;
run) run ;;
all) build; run ;;
esac
