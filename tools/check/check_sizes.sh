#!/usr/bin/env bash
# The size rules of the source tree (ctest: check_sizes):
#   - every command file src/cli/cmd_*.c holds at most 300 lines (option
#     parsing and running go to files of their own, such as plan_args.c;
#     what a job's result reads as goes beside the job: src/jobs/*_print.c);
#   - no file in src/ holds more than 1,000 lines (split it by job, with
#     a private header of its directory for what the parts share);
#   - no function in src/**/*.c or src/**/*.h (the *_body.h templates, the
#     static inline helpers) spans more than 120 lines, from the line
#     that names it (at column 0) to its closing brace (at column 0), unless
#     tools/check/check_sizes.allow lists it (FILE FUNCTION REASON, the reason
#     the one a comment above the function gives); an entry whose function
#     is no longer that long fails too, so that the list stays exact.
# Prints every breach; exit 0 when none, 1 otherwise.
#
# Usage: tools/check/check_sizes.sh [SOURCE_DIR]   (default: this script's tree)
set -euo pipefail
# shellcheck source=tools/check/allow_list.sh
. "$(cd "$(dirname "$0")" && pwd)/allow_list.sh"
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root"
max_cmd=300 max_fn=120 max_file=1000
allow=tools/check/check_sizes.allow
fail=0

for f in src/cli/cmd_*.c; do
    n=$(wc -l < "$f")
    if [ "$n" -gt "$max_cmd" ]; then
        echo "check_sizes: $f: $n lines, more than $max_cmd: split it (options, running, printing)" >&2
        fail=1
    fi
done

for f in $(find src -name '*.[ch]' | LC_ALL=C sort); do
    n=$(wc -l < "$f")
    if [ "$n" -gt "$max_file" ]; then
        echo "check_sizes: $f: $n lines, more than $max_file: split it by job" >&2
        fail=1
    fi
done

# FILE<TAB>FUNCTION<TAB>LINE<TAB>LENGTH of every function over the limit. A
# function starts at the last line at column 0 naming it before a '{' at
# column 0 (the project's style: the brace on a line of its own), and ends
# at the next '}' at column 0.
long=$(find src -name '*.[ch]' | LC_ALL=C sort | xargs awk -v max="$max_fn" '
    FNR == 1 { head = 0; start = 0 }
    start == 0 && /^[A-Za-z_].*\(/ {
        head = FNR
        name = $0
        sub(/\(.*/, "", name)
        sub(/.*[^A-Za-z0-9_]/, "", name)
    }
    start == 0 && /^[A-Za-z_].*;[ \t]*$/ { head = 0 }
    start == 0 && /^\{/ && head { start = head; next }
    start && /^\}/ {
        if (FNR - start + 1 > max)
            printf "%s\t%s\t%d\t%d\n", FILENAME, name, start, FNR - start + 1
        start = 0
        head = 0
    }')

while IFS=$'\t' read -r file fn line len; do
    [ -n "$file" ] || continue
    if ! allow_has "$allow" "$file" "$fn"; then
        echo "check_sizes: $file:$line: $fn: $len lines, more than $max_fn: cut it into named steps, or list it" \
             "in $allow with the reason a comment above it gives" >&2
        fail=1
    fi
done <<< "$long"

allow_stale check_sizes "$allow" "$long" "not a function over $max_fn lines" || fail=1

[ "$fail" -eq 0 ] && echo "check_sizes: command files <= $max_cmd lines, files <= $max_file, functions <= $max_fn lines (or listed)"
exit "$fail"
