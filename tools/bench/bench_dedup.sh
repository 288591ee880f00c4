#!/usr/bin/env bash
# bench_dedup.sh - `ringshard dedup` against the usual ways to deduplicate a
# CSV on its key, side by side in one run, on the same generated bills data
# with a known number of duplicates.
#
#   tools/bench/bench_dedup.sh [-n ROWS] [-j THREADS] [-r RUNS] [-b BUILD_DIR] [-w WORK_DIR]
#
# Data: gen_bills --rows ROWS (default 10M) --dup-share 0.1 --newline-share 0,
# gzip -1. No quoted line breaks: the line-oriented baselines (sort, awk)
# would split such records, ringshard would not; without them all four
# compute the same thing and their row counts are checked against what
# gen_bills says it planted.
#
# Timed, each RUNS times (default 3), the median reported:
#   ringshard dedup   dedup -j THREADS -o DIR in.csv.gz (gzip output, published atomically)
#                     and the same with --compress none (plain output, as the baselines)
#   ringshard bucket  bucket -j THREADS -o DIR in.csv.gz (the bucketing alone, for the 1.5x target)
#   GNU sort -u       zcat | tail -n +2 | LC_ALL=C sort -t, -k1,1 -u --parallel=THREADS -S 1G
#   hash set (awk)    zcat | awk -F, '!seen[$1]++'   (mawk on Debian; one thread)
# The baselines write plain text to a file (no compression, no fsync), which
# favours them. Targets: dedup at least 3x faster than GNU sort,
# and at most 1.5x the time of bucket. Prints a Markdown table.
set -euo pipefail

ROWS=10000000
THREADS=$(nproc)
RUNS=3
BUILD=""
WORK=""
while getopts "n:j:r:b:w:h" o; do
    case $o in
    n) ROWS=$OPTARG ;;
    j) THREADS=$OPTARG ;;
    r) RUNS=$OPTARG ;;
    b) BUILD=$OPTARG ;;
    w) WORK=$OPTARG ;;
    *) sed -n '2,22p' "$0"; exit 2 ;;
    esac
done
here=$(cd "$(dirname "$0")/../.." && pwd)
if [ -z "$BUILD" ]; then
    for d in "$here/build" "$here"/build-*; do
        [ -x "$d/ringshard" ] && [ -x "$d/gen_bills" ] && { BUILD=$d; break; }
    done
fi
BUILD=$(cd "$BUILD" && pwd)
RS=$BUILD/ringshard
GEN=$BUILD/gen_bills
[ -x "$RS" ] && [ -x "$GEN" ] || { echo "bench_dedup: build ringshard and gen_bills first (-b BUILD_DIR)" >&2; exit 2; }
WORK=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/bench_dedup.XXXXXX")}
mkdir -p "$WORK"
cd "$WORK"

echo "bench_dedup: $ROWS rows, -j $THREADS, $RUNS runs, in $WORK" >&2
"$GEN" --rows "$ROWS" --seed 42 --dup-share 0.1 --newline-share 0 -o in.csv 2> gen.txt
cat gen.txt >&2
distinct=$(sed -n 's/.*distinct_keys=\([0-9]*\).*/\1/p' gen.txt)
planted=$(sed -n 's/.*duplicate_rows=\([0-9]*\).*/\1/p' gen.txt)
gzip -1 -f in.csv
bytes=$(gzip -dc in.csv.gz | wc -c)

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# time_it NAME FUNCTION: runs it RUNS times; medians of wall and CPU
# (user + system, children included) seconds in T[NAME] and C[NAME]
declare -A T C
time_it() {
    local name=$1 fn=$2
    local ts=() cs=()
    for ((i = 0; i < RUNS; i++)); do
        rm -rf out.d out.b out.txt
        sync
        /usr/bin/time -f "%e %U %S" -o time.txt bash -c "$fn"
        read -r e u s < time.txt
        ts+=("$e")
        cs+=("$(echo "$u + $s" | bc -l)")
    done
    T[$name]=$(printf '%s\n' "${ts[@]}" | median)
    C[$name]=$(printf '%s\n' "${cs[@]}" | median)
    echo "  $name: wall ${ts[*]} -> median ${T[$name]} s; cpu median ${C[$name]} s" >&2
}

run_dedup() { "$RS" dedup --quiet -j "$THREADS" -o out.d in.csv.gz; }
run_dedup_plain() { "$RS" dedup --quiet -j "$THREADS" --compress none -o out.d in.csv.gz; }
run_bucket() { "$RS" bucket --quiet -j "$THREADS" -o out.b in.csv.gz; }
run_sort() { gzip -dc in.csv.gz | tail -n +2 | LC_ALL=C sort -t, -k1,1 -u --parallel="$THREADS" -S 1G > out.txt; }
run_awk() { gzip -dc in.csv.gz | tail -n +2 | awk -F, '!seen[$1]++' > out.txt; }
export RS THREADS
export -f run_dedup run_dedup_plain run_bucket run_sort run_awk

load=$(cut -d' ' -f1-3 /proc/loadavg)
time_it dedup run_dedup
got=$(python3 -c "import json;print(json.load(open('out.d/manifest.json'))['totals']['rows'])")
[ "$got" = "$distinct" ] || { echo "bench_dedup: dedup kept $got rows, expected $distinct" >&2; exit 1; }
time_it dedup_plain run_dedup_plain
time_it bucket run_bucket
time_it sort run_sort
got=$(wc -l < out.txt)
[ "$got" = "$distinct" ] || { echo "bench_dedup: sort kept $got rows, expected $distinct" >&2; exit 1; }
time_it awk run_awk
got=$(wc -l < out.txt)
[ "$got" = "$distinct" ] || { echo "bench_dedup: awk kept $got rows, expected $distinct" >&2; exit 1; }
rm -rf out.d out.b out.txt

fmt() { printf '%.2f' "$1"; }
ratio() { printf '%.2f' "$(echo "$1 / $2" | bc -l)"; }
mrows() { printf '%.2f' "$(echo "$ROWS / $1 / 1000000" | bc -l)"; }
cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
fs=$(df -P . | awk 'NR==2 {print $1}')
echo
echo "$ROWS rows ($(echo "$bytes / 1000000" | bc) MB uncompressed, gzip -1 input), $planted duplicate rows planted," \
     "$distinct distinct keys; -j $THREADS on $(nproc) cores ($cpu); work dir on $fs; median of $RUNS runs;" \
     "load average before: $load."
echo
echo "| method | wall s | M rows/s | CPU s | dedup faster by (wall) |"
echo "|---|---:|---:|---:|---:|"
echo "| ringshard dedup | $(fmt "${T[dedup]}") | $(mrows "${T[dedup]}") | $(fmt "${C[dedup]}") | - |"
echo "| ringshard dedup --compress none (plain output, like the baselines) | $(fmt "${T[dedup_plain]}") | $(mrows "${T[dedup_plain]}") | $(fmt "${C[dedup_plain]}") | - |"
echo "| ringshard bucket (bucketing only) | $(fmt "${T[bucket]}") | $(mrows "${T[bucket]}") | $(fmt "${C[bucket]}") | - |"
echo "| GNU sort -u --parallel=$THREADS | $(fmt "${T[sort]}") | $(mrows "${T[sort]}") | $(fmt "${C[sort]}") | $(ratio "${T[sort]}" "${T[dedup]}")x |"
echo "| hash set (awk '!seen[\$1]++') | $(fmt "${T[awk]}") | $(mrows "${T[awk]}") | $(fmt "${C[awk]}") | $(ratio "${T[awk]}" "${T[dedup]}")x |"
echo
s=$(ratio "${T[sort]}" "${T[dedup]}")
sp=$(ratio "${T[sort]}" "${T[dedup_plain]}")
sc=$(ratio "${C[sort]}" "${C[dedup]}")
b=$(ratio "${T[dedup]}" "${T[bucket]}")
met() { echo "$1" | bc -l | sed 's/1/met/;s/0/NOT met/'; }
echo "Targets: GNU sort / dedup = ${s}x wall (${sp}x with plain output, ${sc}x in CPU time)" \
     "(target >= 3x: $(met "$s >= 3") / $(met "$sp >= 3") / $(met "$sc >= 3"));" \
     "dedup / bucket = ${b}x wall (target <= 1.5x: $(met "$b <= 1.5"))."
