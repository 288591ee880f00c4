#!/usr/bin/env bash
# Benchmarks the lanes (--producers) on 8 gzip inputs - the
# bill rows split in 8, gzip -6 each - with the output on tmpfs (no disk
# floor), against igzip -dc of all 8 in sequence (one serial inflate: what
# one producer can never beat). Each run times, interleaved: igzip -dc of the
# 8 files, then ringshard bucket with --compress none and with gzip output,
# each with --producers 1, 2 and automatic, and with -j 1 (all the work on
# one thread: its time over one inflate is how many threads one producer
# keeps busy, the automatic rule's constant). Medians of RUNS; ratios printed.
#
# Usage (from the repo root):  tools/bench/bench_lanes.sh [ROWS] [RUNS]
#   ROWS  data rows in all (default 10000000)     RUNS  runs (default 5)
# Environment:
#   BUILD=build      build dir holding ringshard and gen_bills
#   WORK=/tmp/rs-bench-lanes   inputs (cached per ROWS and SEED)
#   OUT=/dev/shm/rs-bench-lanes   outputs (tmpfs), removed at the end
#   MEMORY=2G        --memory: a lane holds 8 batches of 64 MiB from about
#                    1 GiB up, so two lanes need about 1.1G (see docs/clusters.md)
#   RS_ARGS=""       extra arguments for ringshard bucket (e.g. "-j 2 --nodes 1000")
#   SEED=1
# Exit status: 0 ok, 1 a step failed, 2 missing dependency / bad usage.
set -euo pipefail
export LC_ALL=C

ROWS=${1:-10000000}
RUNS=${2:-5}
BUILD=${BUILD:-build}
WORK=${WORK:-/tmp/rs-bench-lanes}
OUT=${OUT:-/dev/shm/rs-bench-lanes}
MEMORY=${MEMORY:-2G}
RS_ARGS=${RS_ARGS:-}
SEED=${SEED:-1}
RINGSHARD=$BUILD/ringshard
GEN=$BUILD/gen_bills

die() { echo "bench_lanes: $1" >&2; exit "${2:-1}"; }
note() { echo "bench_lanes: $*" >&2; }
[[ $ROWS =~ ^[0-9]+$ && $ROWS -gt 0 ]] || die "ROWS must be a positive integer" 2
[[ $RUNS =~ ^[0-9]+$ && $RUNS -gt 0 ]] || die "RUNS must be a positive integer" 2
command -v igzip >/dev/null 2>&1 || die "igzip not found (Debian package isal)" 2
[ -x "$RINGSHARD" ] && [ -x "$GEN" ] || die "ringshard or gen_bills missing in $BUILD" 2
read -r -a rs_extra <<<"$RS_ARGS"

# ---------------------------------------------------------------- input
mkdir -p "$WORK"
META=$WORK/meta
want="rows=$ROWS seed=$SEED parts=8 gz=gzip-6"
if [ ! -f "$META" ] || [ "$(cat "$META")" != "$want" ]; then
  note "generating $ROWS rows in 8 gzip files ..."
  rm -f "$WORK"/part*.csv.gz "$WORK"/part*.csv "$META"
  "$GEN" --rows "$ROWS" --seed "$SEED" -o "$WORK/all.csv"
  # the header on every part, the records (some span lines: a quoted line
  # break) split in 8 contiguous ranges
  awk -v n="$ROWS" -v dir="$WORK" 'NR == 1 { h = $0; next }
    { if (!open) { k = int(rec * 8 / n); f = dir "/part" k ".csv"; if (!(k in seen)) { print h > f; seen[k] = 1 } }
      print > f; par = (par + gsub(/"/, "\"")) % 2; open = par; if (!par) rec++ }' "$WORK/all.csv"
  for k in 0 1 2 3 4 5 6 7; do gzip -6 "$WORK/part$k.csv"; done
  rm -f "$WORK/all.csv"
  echo "$want" >"$META"
fi
IN=("$WORK"/part?.csv.gz)
[ "${#IN[@]}" = 8 ] || die "expected 8 inputs in $WORK"

# ---------------------------------------------------------------- runs
declare -A TIMES=()
timeit() { # NAME CMD...: wall seconds into TIMES[NAME]
  local name=$1 t0 t1
  shift
  t0=$(date +%s.%N)
  "$@" || die "$name failed"
  t1=$(date +%s.%N)
  TIMES[$name]+="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }') "
}
inflate_all() { for f in "${IN[@]}"; do igzip -dc "$f"; done >/dev/null; }
bucket() { # OUTDIR COMPRESS PRODUCERS [OPTION...]
  local out=$1 c=$2 p=$3
  shift 3
  "$RINGSHARD" bucket --quiet --key bill_id --memory "$MEMORY" --compress "$c" --producers "$p" \
    "${rs_extra[@]}" "$@" -o "$out" "${IN[@]}"
}
mkdir -p "$OUT"
RINGSHARD_LOG=info bucket "$OUT/probe" none 0 2>&1 | grep 'lanes:' | sed 's/^/bench_lanes: none, auto: /' >&2 || true
RINGSHARD_LOG=info bucket "$OUT/probe2" gzip 0 2>&1 | grep 'lanes:' | sed 's/^/bench_lanes: gzip, auto: /' >&2 || true
rm -rf "$OUT/probe" "$OUT/probe2"
for run in $(seq 1 "$RUNS"); do
  note "run $run/$RUNS"
  timeit igzip inflate_all
  for c in none gzip; do
    for p in 1 2 0; do
      timeit "${c}_$p" bucket "$OUT/$c$p" "$c" "$p"
      rm -rf "${OUT:?}/$c$p"
    done
    # all the work on one thread: over one inflate, the threads one producer feeds
    timeit "${c}_j1" bucket "$OUT/${c}j1" "$c" 1 -j 1
    rm -rf "${OUT:?}/${c}j1"
  done
done
rm -rf "$OUT"

# ---------------------------------------------------------------- report
# shellcheck disable=SC2086 # the space-separated list is split on purpose
median() { printf '%s\n' $1 | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
declare -A MED=()
for k in "${!TIMES[@]}"; do MED[$k]=$(median "${TIMES[$k]}"); done
echo "ROWS=$ROWS in 8 gzip -6 files, RUNS=$RUNS (medians, s), --memory $MEMORY, output on $(dirname "$OUT"); $(nproc) CPUs:" \
  "$(lscpu | sed -n 's/^Model name: *//p' | head -n 1)"
echo "igzip -dc of the 8 in sequence: ${MED[igzip]}"
echo "| output | --producers 1 | --producers 2 | automatic | 2 / 1 | 1 / igzip | 2 / igzip |"
echo "|---|---|---|---|---|---|---|"
for c in none gzip; do
  echo "$c: -j 1 takes ${MED[${c}_j1]} s, $(ratio "${MED[${c}_j1]}" "${MED[igzip]}") x one inflate: one producer feeds" \
    "about that many threads (RS_LANE_FEEDS_* in include/ringshard/runplan.h)"
done
for c in none gzip; do
  echo "| $c | ${MED[${c}_1]} | ${MED[${c}_2]} | ${MED[${c}_0]} | $(ratio "${MED[${c}_2]}" "${MED[${c}_1]}") |" \
    "$(ratio "${MED[${c}_1]}" "${MED[igzip]}") | $(ratio "${MED[${c}_2]}" "${MED[igzip]}") |"
done
