#!/usr/bin/env bash
# Checks that `ringshard bucket` throughput does not degrade with input size:
# buckets ROWS1 and ROWS2 rows and compares rows/s (target: within 10%).
#
# Usage (from the repo root):  tools/bench/bench_scaling.sh [RUNS]     (default 1)
# Environment:
#   ROWS1=10000000 ROWS2=50000000   input sizes (data rows)
#   BUILD=build  WORK=/tmp/rs-bench  RINGSHARD=$BUILD/ringshard  GEN=$BUILD/gen_bills
#   SEED=1       gen_bills --seed
#   RS_ARGS=""   extra arguments for ringshard bucket (e.g. "-j 2")
# Inputs are generated once (gen_bills | gzip -6) and cached in $WORK as
# bills-ROWS.csv.gz; tools/bench/bench_bucket.sh's bills.csv.gz is reused when it
# has the same ROWS and SEED. Reports the median of RUNS runs per size.
# Exit status: 0 measured (whatever the verdict), 1 a step failed, 2 usage /
# missing binary.
set -euo pipefail
export LC_ALL=C

RUNS=${1:-1}
ROWS1=${ROWS1:-10000000}
ROWS2=${ROWS2:-50000000}
BUILD=${BUILD:-build}
WORK=${WORK:-/tmp/rs-bench}
RINGSHARD=${RINGSHARD:-$BUILD/ringshard}
GEN=${GEN:-$BUILD/gen_bills}
SEED=${SEED:-1}
RS_ARGS=${RS_ARGS:-}

die() { echo "bench_scaling: $1" >&2; exit "${2:-1}"; }
note() { echo "bench_scaling: $*" >&2; }

for v in RUNS ROWS1 ROWS2; do
  [[ ${!v} =~ ^[0-9]+$ && ${!v} -gt 0 ]] || die "$v must be a positive integer (got '${!v}')" 2
done
[ -x "$RINGSHARD" ] || die "ringshard binary not found at '$RINGSHARD' (set BUILD or RINGSHARD)" 2
[ -x "$GEN" ] || die "gen_bills not found at '$GEN' (build it: make -C $BUILD gen_bills)" 2
command -v gzip >/dev/null 2>&1 || die "gzip not found" 2
read -r -a rs_extra <<<"$RS_ARGS"

mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
OUT=$WORK/out-scaling

# input ROWS -> prints the path of a cached gzip -6 input with ROWS rows
input() {
  local rows=$1 meta="rows=$1 seed=$SEED gen=gen_bills-defaults gz=gzip-6"
  if [ -f "$WORK/bills.csv.gz" ] && [ "$(cat "$WORK/bills.meta" 2>/dev/null)" = "$meta" ]; then
    echo "$WORK/bills.csv.gz"; return
  fi
  local gz=$WORK/bills-$rows.csv.gz
  if [ -f "$gz" ] && [ "$(cat "$gz.meta" 2>/dev/null)" = "$meta" ]; then
    echo "$gz"; return
  fi
  rm -f "$gz" "$gz.meta"
  note "generating $rows rows (seed $SEED) | gzip -6 -> $gz ..."
  set -o pipefail
  "$GEN" --rows "$rows" --seed "$SEED" | gzip -6 >"$gz.tmp" || die "generating $gz failed"
  mv "$gz.tmp" "$gz"
  echo "$meta" >"$gz.meta"
  echo "$gz"
}

GZ1=$(input "$ROWS1")
GZ2=$(input "$ROWS2")

HAVE_GNU_TIME=0
[ -x /usr/bin/time ] && HAVE_GNU_TIME=1

# measure GZ -> "SECONDS RSS_KB" for one ringshard bucket run
measure() {
  local gz=$1 tf=$WORK/.time.scaling rc=0 t m
  rm -rf "$OUT"
  cat "$gz" >/dev/null # warm the page cache
  local cmd=("$RINGSHARD" bucket --key bill_id -o "$OUT" --force --quiet "${rs_extra[@]}" "$gz")
  if [ $HAVE_GNU_TIME = 1 ]; then
    /usr/bin/time -f '%e %M' -o "$tf" "${cmd[@]}" || rc=$?
    [ $rc -eq 0 ] || die "ringshard failed (exit $rc): ${cmd[*]}"
    read -r t m < <(tail -n 1 "$tf")
    rm -f "$tf"
  else
    local t0=$EPOCHREALTIME
    "${cmd[@]}" || rc=$?
    [ $rc -eq 0 ] || die "ringshard failed (exit $rc): ${cmd[*]}"
    t=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.3f", b - a}')
    m=0
  fi
  rm -rf "$OUT"
  echo "$t $m"
}

# shellcheck disable=SC2086 # word splitting of the space-separated list is intended
median() { printf '%s\n' $1 | sort -g | awk '{ a[NR] = $1 }
  END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
# shellcheck disable=SC2086
maxof() { printf '%s\n' $1 | sort -g | tail -n 1; }

T1="" T2="" M1="" M2=""
for run in $(seq 1 "$RUNS"); do
  note "run $run/$RUNS"
  r=$(measure "$GZ1"); read -r t m <<<"$r"; T1+="$t "; M1+="$m "; note "  $ROWS1 rows: ${t}s ${m}KB"
  r=$(measure "$GZ2"); read -r t m <<<"$r"; T2+="$t "; M2+="$m "; note "  $ROWS2 rows: ${t}s ${m}KB"
done
t1=$(median "$T1"); t2=$(median "$T2")

awk -v r1="$ROWS1" -v r2="$ROWS2" -v t1="$t1" -v t2="$t2" -v m1="$(maxof "$M1")" -v m2="$(maxof "$M2")" \
    -v runs="$RUNS" -v gt="$HAVE_GNU_TIME" -v cmd="BUILD=$BUILD ROWS1=$ROWS1 ROWS2=$ROWS2 tools/bench/bench_scaling.sh $RUNS${RS_ARGS:+ (RS_ARGS=\"$RS_ARGS\")}" '
function rate(r, t) { return t > 0 ? r / t : 0 }
function rss(m) { return gt ? sprintf("%.1f", m / 1024) : "n/a" }
BEGIN {
  printf "### ringshard bucket scaling\n\n`%s` (median of %d run(s), gzip output, default ring)\n\n", cmd, runs
  print "| rows | wall s | rows/s | peak RSS MB |"
  print "|---:|---:|---:|---:|"
  printf "| %d | %.2f | %.2f M | %s |\n", r1, t1, rate(r1, t1) / 1e6, rss(m1)
  printf "| %d | %.2f | %.2f M | %s |\n", r2, t2, rate(r2, t2) / 1e6, rss(m2)
  if (rate(r1, t1) > 0 && rate(r2, t2) > 0) {
    q = rate(r2, t2) / rate(r1, t1); d = q - 1; if (d < 0) d = -d
    printf "\nrows/s(%d) / rows/s(%d) = %.3f (target: within 10%%, i.e. 0.90..1.10): %s\n", r2, r1, q, d <= 0.10 ? "ok" : "MISSED"
  } else {
    print "\nratio: n/a (zero time measured)"
  }
}' | tee "$WORK/bench_scaling.md"
note "report saved to $WORK/bench_scaling.md"
