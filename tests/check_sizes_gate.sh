#!/usr/bin/env bash
# tools/check/check_sizes.sh against small trees made here (ctest:
# check_sizes_gate): a function of a header (a *_body.h template, a static
# inline function) is measured as one of a .c file is - 120 lines pass,
# 121 fail naming the header, the line and the length, unless
# tools/check/check_sizes.allow lists it with a reason; an entry without a reason
# or that names no long function fails; a file of 1,001 lines fails, one of
# 1,000 passes.
# Usage: tests/check_sizes_gate.sh SOURCE_DIR
set -euo pipefail
gate=$(cd "$1" && pwd)/tools/check/check_sizes.sh
work=$(mktemp -d "${RINGSHARD_TEST_TMPDIR:-/tmp}/check_sizes_gate.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }

# fresh: an empty tree with one short command file and an empty allow list
fresh() {
    rm -rf "$work/t"
    mkdir -p "$work/t/src/cli" "$work/t/src/csv" "$work/t/tools/check"
    printf 'int main(void)\n{\n    return 0;\n}\n' > "$work/t/src/cli/cmd_x.c"
    : > "$work/t/tools/check/check_sizes.allow"
}

# function FILE HEAD LINES: appends a function of LINES lines (from the
# line naming it to its closing brace) whose head is HEAD.
function_of() {
    {
        echo "$2"
        echo "{"
        for _ in $(seq $(($3 - 3))); do echo "    n++;"; done
        echo "}"
    } >> "$1"
}

# expect CODE WHAT [PATTERN]: runs the gate over the tree; its exit code
# must be CODE and, with PATTERN, its output must match it.
expect() {
    local rc=0
    bash "$gate" "$work/t" > "$work/out" 2>&1 || rc=$?
    [ "$rc" = "$1" ] || bad "$2: exit $rc, expected $1: $(cat "$work/out")"
    if [ $# -ge 3 ] && ! grep -q -- "$3" "$work/out"; then
        bad "$2: output without '$3': $(cat "$work/out")"
    fi
}

fresh
printf '/* a template */\n\n' > "$work/t/src/csv/t_body.h"
function_of "$work/t/src/csv/t_body.h" "static int NAME(int n)" 120
expect 0 "a template function of 120 lines"

fresh
printf '/* a template */\n\n' > "$work/t/src/csv/t_body.h"
function_of "$work/t/src/csv/t_body.h" "static int NAME(int n)" 121
expect 1 "a template function of 121 lines" "src/csv/t_body.h:3: NAME: 121 lines"

echo "src/csv/t_body.h NAME kept whole: measured" > "$work/t/tools/check/check_sizes.allow"
expect 0 "a template function of 121 lines, listed with a reason"

echo "src/csv/t_body.h NAME" > "$work/t/tools/check/check_sizes.allow"
expect 1 "an entry without a reason" "no reason given"

fresh
echo "static inline __attribute__((always_inline)) int" > "$work/t/src/csv/inl.h"
function_of "$work/t/src/csv/inl.h" "step(int n)" 121
expect 1 "a static inline function of 121 lines, its head on two lines" "src/csv/inl.h:2: step: 121 lines"

fresh
echo "src/csv/t_body.h NAME kept whole: measured" > "$work/t/tools/check/check_sizes.allow"
expect 1 "an entry naming no long function" "is not a function over 120 lines"

fresh
seq 1000 | sed 's|^|/* |; s|$| */|' > "$work/t/src/csv/long.c"
expect 0 "a file of 1,000 lines"
echo "/* one more */" >> "$work/t/src/csv/long.c"
expect 1 "a file of 1,001 lines" "src/csv/long.c: 1001 lines, more than 1000"
mv "$work/t/src/csv/long.c" "$work/t/src/csv/long.h"
expect 1 "a header of 1,001 lines" "src/csv/long.h: 1001 lines, more than 1000"

[ "$fail" = 0 ] && echo "check_sizes_gate: every case as expected"
exit "$fail"
