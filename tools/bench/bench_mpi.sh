#!/usr/bin/env bash
# Benchmarks `ringshard bucket` under MPI: 2 ranks x 1 thread against
# 1 rank x 2 threads (one process) on the same rows, with `igzip -dc` of the
# same files as the baseline measured in the same run, and checks that both
# outputs are byte-identical. Prints a Markdown table for docs/clusters.md.
#
# Usage (from the repo root):  tools/bench/bench_mpi.sh [ROWS] [RUNS] [FILES]
#   ROWS   data rows in all (default 10000000)   RUNS  runs (default 3)
#   FILES  gzip files the rows are spread over (default 8): ranks divide
#          whole files, so one file would keep one rank busy
# Environment:
#   BUILD=build-mpi        a build with -DRINGSHARD_MPI=ON (ringshard, gen_bills)
#   WORK=/tmp/rs-bench-mpi work dir (input cache, outputs)
#   MPIRUN="mpirun --allow-run-as-root --bind-to core"
# Runs are interleaved (a, b, c, a, b, c, ...); medians are reported.
set -euo pipefail
export LC_ALL=C

ROWS=${1:-10000000}
RUNS=${2:-3}
FILES=${3:-8}
BUILD=${BUILD:-build-mpi}
WORK=${WORK:-/tmp/rs-bench-mpi}
MPIRUN=${MPIRUN:-mpirun --allow-run-as-root --bind-to core}
RS=$BUILD/ringshard
GEN=$BUILD/gen_bills

die() { echo "bench_mpi: $1" >&2; exit "${2:-1}"; }
[ -x "$RS" ] || die "no $RS: cmake -S . -B $BUILD -DRINGSHARD_MPI=ON && cmake --build $BUILD" 2
[ -x "$GEN" ] || die "no $GEN" 2
command -v igzip >/dev/null || die "igzip not found (tools/deps.sh installs isal)" 2
read -r -a mpirun <<<"$MPIRUN"
"${mpirun[@]}" -n 1 "$RS" --version >/dev/null || die "mpirun does not run $RS" 2

mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
meta="rows=$ROWS files=$FILES"
inputs=()
for ((f = 1; f <= FILES; f++)); do inputs+=("$WORK/part$f.csv.gz"); done
if [ "$(cat "$WORK/meta" 2>/dev/null)" != "$meta" ]; then
  echo "bench_mpi: generating $ROWS rows in $FILES gzip -6 files" >&2
  rm -f "$WORK"/part*.csv.gz "$WORK/meta"
  per=$((ROWS / FILES))
  for ((f = 1; f <= FILES; f++)); do
    n=$per
    [ "$f" = "$FILES" ] && n=$((ROWS - per * (FILES - 1)))
    "$GEN" --rows "$n" --seed "$f" 2>/dev/null | gzip -6 >"$WORK/part$f.csv.gz"
  done
  echo "$meta" >"$WORK/meta"
fi

# seconds of one command, wall clock
timed() {
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >/dev/null 2>"$WORK/last.err" || { cat "$WORK/last.err" >&2; die "failed: $*"; }
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }' 
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

declare -a T_IG T_ONE T_MPI
for ((r = 1; r <= RUNS; r++)); do
  sync
  T_IG+=("$(timed sh -c 'cat "$@" | igzip -dc > /dev/null' sh "${inputs[@]}")")
  rm -rf "$WORK/one"
  sync
  T_ONE+=("$(timed "$RS" bucket --quiet -j 2 -o "$WORK/one" "${inputs[@]}")")
  rm -rf "$WORK/two"
  sync
  T_MPI+=("$(timed "${mpirun[@]}" -n 2 "$RS" bucket --quiet -j 1 -o "$WORK/two" "${inputs[@]}")")
  echo "bench_mpi: run $r: igzip -dc ${T_IG[-1]} s, 1x2 ${T_ONE[-1]} s, 2x1 ${T_MPI[-1]} s" >&2
done
grep -v '"seconds"' "$WORK/one/manifest.json" >"$WORK/one.m"
grep -v '"seconds"' "$WORK/two/manifest.json" >"$WORK/two.m"
diff -r -x manifest.json "$WORK/one" "$WORK/two" >/dev/null && cmp -s "$WORK/one.m" "$WORK/two.m" ||
  die "the 2-rank output differs from the single-process output"

ig=$(printf '%s\n' "${T_IG[@]}" | median)
one=$(printf '%s\n' "${T_ONE[@]}" | median)
two=$(printf '%s\n' "${T_MPI[@]}" | median)
echo
echo "| $ROWS rows in $FILES files, medians of $RUNS | seconds | M rows/s | vs igzip -dc |"
echo "| --- | ---: | ---: | ---: |"
for row in "igzip -dc (all files, one stream)|$ig" "1 rank x 2 threads|$one" "2 ranks x 1 thread (mpirun)|$two"; do
  name=${row%|*}
  t=${row##*|}
  awk -v n="$name" -v t="$t" -v r="$ROWS" -v ig="$ig" 'BEGIN { printf "| %s | %.2f | %.2f | %.2f |\n", n, t, r / t / 1e6, t / ig }' 
done
awk -v a="$two" -v b="$one" 'BEGIN { printf "\n2 ranks x 1 thread / 1 rank x 2 threads = %.3f (outputs byte-identical)\n", a / b }' 
