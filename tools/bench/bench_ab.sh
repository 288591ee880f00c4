#!/usr/bin/env bash
# A/B timing of two ringshard binaries on the same inputs, interleaved (A, B,
# A, B, ...) so that a noisy machine treats both alike; prints the medians.
# Three runs each: 8 gzip inputs with gzip output, the same with
# --compress none, and one big gzip input (the inputs tools/bench/bench_lanes.sh
# and tools/bench/bench_bucket.sh make and cache). Output on tmpfs.
# Usage: tools/bench/bench_ab.sh OLD_BINARY NEW_BINARY [RUNS]
#   LANES_DIR=/tmp/rs-bench-lanes (part0..7.csv.gz)   BIG=/tmp/rs-bench/bills.csv.gz
#   OUT=/dev/shm/rs-bench-ab
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,9p' "$0" >&2; exit 2; }
OLD=$1 NEW=$2 N=${3:-5}
LANES_DIR=${LANES_DIR:-/tmp/rs-bench-lanes}
BIG=${BIG:-/tmp/rs-bench/bills.csv.gz}
OUT=${OUT:-/dev/shm/rs-bench-ab}
parts=("$LANES_DIR"/part?.csv.gz)
[ "${#parts[@]}" = 8 ] && [ -f "$BIG" ] || { echo "bench_ab: run tools/bench/bench_lanes.sh and tools/bench/bench_bucket.sh first (inputs)" >&2; exit 2; }
declare -A T=()
timeit() { # NAME CMD...
  local k=$1 a b
  shift
  rm -rf "$OUT"
  a=$(date +%s.%N)
  "$@"
  b=$(date +%s.%N)
  T[$k]+="$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", b - a }') "
}
# shellcheck disable=SC2086 # the list is split on purpose
median() { printf '%s\n' $1 | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
for _ in $(seq "$N"); do
  for v in OLD NEW; do
    bin=${!v}
    timeit "8gz_$v" "$bin" bucket --quiet --key bill_id -o "$OUT" "${parts[@]}"
    timeit "8none_$v" "$bin" bucket --quiet --key bill_id --compress none -o "$OUT" "${parts[@]}"
    timeit "1gz_$v" "$bin" bucket --quiet --key bill_id -o "$OUT" "$BIG"
  done
done
rm -rf "$OUT"
echo "medians of $N, interleaved; $(nproc) CPUs: $(lscpu | sed -n 's/^Model name: *//p' | head -n 1)"
for k in 8gz 8none 1gz; do
  echo "$k: old $(median "${T[${k}_OLD]}") s, new $(median "${T[${k}_NEW]}") s"
done
