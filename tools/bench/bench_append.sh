#!/usr/bin/env bash
# Benchmarks appends to a bucket directory that grows (bucket --append,
# dedup --append) against what they replace, and prints Markdown tables.
#
# Usage (from the repo root):  tools/bench/bench_append.sh [bucket|dedup|both] [RUNS]
# Environment:
#   BUILD=build           build dir holding ringshard and gen_bills
#   WORK=/tmp/rs-append   work dir (inputs cached there, outputs, results)
#   DAYS=10               the history: DAYS inputs of DAY_ROWS rows each,
#   DAY_ROWS=10000000       appended one after the other (gen_bills, seeds 1..DAYS)
#   NEW_ROWS=1000000      the append timed against the history (seed 1000)
#   AT="1 5 10"           the history sizes (in appends) at which it is timed
#   HIT_SHARE=10          dedup: percent of the new rows whose key the history holds
#   FULL_RUNS=1           dedup: runs of the full dedup over every input (slow)
#   RS_ARGS=""            extra arguments for every ringshard run (e.g. "-j 2")
#   KEEP=0                1: keep the grown directories (tens of GB) at the end
#
# bucket: the new rows bucketed into an empty directory (the baseline) and
# appended to the growing directory after each size in AT; an append's
# generation is removed again after it is timed (rm -rf DIR/g<N>, which
# nothing else does to a directory), so that every timed append meets the
# same history. dedup: the same history built by dedup --append, the new
# rows (HIT_SHARE% of them copies of history rows) appended, against a dedup
# of every input again; its summary's "history:" line gives the bytes of
# key index read against the history's size.
# Each timed step reports its median wall time and CPU seconds (user +
# system) over RUNS runs. Take the timing lock first when others time on
# the machine: flock /tmp/ringshard-bench.lock tools/bench/bench_append.sh
set -euo pipefail
export LC_ALL=C

MODE=${1:-both}
RUNS=${2:-3}
BUILD=${BUILD:-build}
WORK=${WORK:-/tmp/rs-append}
DAYS=${DAYS:-10}
DAY_ROWS=${DAY_ROWS:-10000000}
NEW_ROWS=${NEW_ROWS:-1000000}
AT=${AT:-1 5 10}
HIT_SHARE=${HIT_SHARE:-10}
FULL_RUNS=${FULL_RUNS:-1}
RS_ARGS=${RS_ARGS:-}
RS=$BUILD/ringshard
GEN=$BUILD/gen_bills

die() { echo "bench_append: $1" >&2; exit "${2:-1}"; }
note() { echo "bench_append: $*" >&2; }
case $MODE in bucket | dedup | both) ;; *) die "mode: bucket, dedup or both (got '$MODE')" 2 ;; esac
[[ $RUNS =~ ^[0-9]+$ && $RUNS -gt 0 ]] || die "RUNS must be a positive integer" 2
[ -x "$RS" ] && [ -x "$GEN" ] || die "build ringshard and gen_bills first (BUILD=$BUILD)" 2
command -v igzip >/dev/null || die "igzip not found (tools/deps.sh installs isal)" 2
read -r -a extra <<<"$RS_ARGS"
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)

# ---------------------------------------------------------------- inputs
# gen FILE ROWS SEED: a gzip'd bills file, cached by its parameters
gen() {
  local f=$1 rows=$2 seed=$3 meta="$1.meta" want="rows=$2 seed=$3"
  if [ -f "$f" ] && [ "$(cat "$meta" 2>/dev/null)" = "$want" ]; then return; fi
  note "generating $f ($rows rows, seed $seed)"
  "$GEN" --rows "$rows" --seed "$seed" | igzip -1 -c >"$f.tmp"
  mv "$f.tmp" "$f"
  echo "$want" >"$meta"
}
for k in $(seq 1 "$DAYS"); do gen "$WORK/day$k.csv.gz" "$DAY_ROWS" "$k"; done
gen "$WORK/new.csv.gz" "$NEW_ROWS" 1000
# dedup's new rows: (100 - HIT_SHARE)% fresh, HIT_SHARE% copies of history rows
# taken evenly from the days
HITS=$((NEW_ROWS * HIT_SHARE / 100))
mixed_want="rows=$NEW_ROWS hits=$HITS days=$DAYS day_rows=$DAY_ROWS"
if [ "$MODE" != bucket ] && [ "$(cat "$WORK/mixed.meta" 2>/dev/null)" != "$mixed_want" ]; then
  note "making the dedup input: $((NEW_ROWS - HITS)) new rows, $HITS from the history"
  per=$((HITS / DAYS))
  {
    "$GEN" --rows $((NEW_ROWS - HITS)) --seed 1001
    for k in $(seq 1 "$DAYS"); do igzip -dc "$WORK/day$k.csv.gz" | sed -n "2,$((per + 1))p"; done
  } | igzip -1 -c >"$WORK/mixed.csv.gz.tmp"
  mv "$WORK/mixed.csv.gz.tmp" "$WORK/mixed.csv.gz"
  echo "$mixed_want" >"$WORK/mixed.meta"
fi

# ----------------------------------------------------------------- timing
# timed LABEL CMD...: runs CMD once, appends "LABEL wall cpu" to $WORK/times
timed() {
  local label=$1
  shift
  /usr/bin/time -f "%e %U %S" -o "$WORK/.t" "$@" >"$WORK/.out" 2>"$WORK/.err" ||
    { cat "$WORK/.err" >&2; die "$label: failed"; }
  read -r wall u s <"$WORK/.t"
  echo "$label $wall $(echo "$u + $s" | bc -l)" >>"$WORK/times"
}
# median LABEL FIELD: the median of a label's wall (2) or CPU (3) seconds
median() {
  awk -v l="$1" -v f="$2" '$1 == l { print $f }' "$WORK/times" | sort -g |
    awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) printf "%.2f", v[(NR + 1) / 2]; else printf "%.2f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
newest_gen() { ls -d "$1"/g* 2>/dev/null | tail -1; }
: >"$WORK/times"
cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
flags=$(grep -o -m1 -w 'avx512f\|avx2' /proc/cpuinfo | sort -u | tr '\n' ' ')

# ----------------------------------------------------------------- bucket
bench_bucket() {
  local hist=$WORK/hist-bucket
  rm -rf "$hist" "$WORK"/fresh-*
  for r in $(seq 1 "$RUNS"); do
    timed fresh "$RS" bucket --quiet "${extra[@]}" --key bill_id -o "$WORK/fresh-$r" "$WORK/new.csv.gz"
  done
  for k in $(seq 1 "$DAYS"); do
    timed "grow$k" "$RS" bucket --append --quiet "${extra[@]}" --key bill_id -o "$hist" "$WORK/day$k.csv.gz"
    for at in $AT; do
      [ "$at" = "$k" ] || continue
      for r in $(seq 1 "$RUNS"); do
        timed "append@$k" "$RS" bucket --append --on-seen again --quiet "${extra[@]}" -o "$hist" "$WORK/new.csv.gz"
        rm -rf "$(newest_gen "$hist")"
      done
    done
  done
  local base_w base_c
  base_w=$(median fresh 2) base_c=$(median fresh 3)
  echo
  echo "bucket --append of $NEW_ROWS rows ($(stat -c %s "$WORK/new.csv.gz") bytes gzip) into a directory of $DAYS x $DAY_ROWS rows,"
  echo "against bucketing them into an empty directory; medians of $RUNS; $cpu ($flags); RS_ARGS='$RS_ARGS'"
  echo
  echo "| history | wall | CPU s | wall / empty |"
  echo "| --- | ---: | ---: | ---: |"
  echo "| empty directory (\`bucket\`) | $base_w s | $base_c | 1.00 |"
  for at in $AT; do
    local w c
    w=$(median "append@$at" 2) c=$(median "append@$at" 3)
    echo "| after $at appends ($((at * DAY_ROWS)) rows, $((at + 1)) generations with the new one) | $w s | $c | $(echo "$w / $base_w" | bc -l | xargs printf %.2f) |"
  done
  echo
  echo "Each append of $DAY_ROWS rows that grew the history: $(for k in $(seq 1 "$DAYS"); do printf '%s ' "$(median "grow$k" 2)"; done)s"
  rm -rf "$WORK"/fresh-*
}

# ------------------------------------------------------------------ dedup
bench_dedup() {
  local hist=$WORK/hist-dedup full=$WORK/full-dedup
  rm -rf "$hist" "$full"
  for k in $(seq 1 "$DAYS"); do
    timed "dgrow$k" "$RS" dedup --append --quiet "${extra[@]}" --key bill_id -o "$hist" "$WORK/day$k.csv.gz"
  done
  local hist_data hist_index
  hist_data=$(find "$hist" -name '*.csv.gz' -printf '%s\n' | awk '{ s += $1 } END { printf "%.0f", s }')
  hist_index=$(find "$hist" -name '*.keyidx' -printf '%s\n' | awk '{ s += $1 } END { printf "%.0f", s }')
  local summary=""
  for r in $(seq 1 "$RUNS"); do
    timed dappend "$RS" dedup --append --on-seen again "${extra[@]}" -o "$hist" "$WORK/mixed.csv.gz"
    summary=$(grep -E '^ringshard dedup: generation|^  history:' "$WORK/.err")
    rm -rf "$(newest_gen "$hist")"
  done
  local inputs=()
  for k in $(seq 1 "$DAYS"); do inputs+=("$WORK/day$k.csv.gz"); done
  for r in $(seq 1 "$FULL_RUNS"); do
    rm -rf "$full"
    timed dfull "$RS" dedup --quiet "${extra[@]}" --key bill_id -o "$full" "${inputs[@]}" "$WORK/mixed.csv.gz"
  done
  rm -rf "$full"
  local aw ac fw fc
  aw=$(median dappend 2) ac=$(median dappend 3) fw=$(median dfull 2) fc=$(median dfull 3)
  echo
  echo "dedup --append of $NEW_ROWS rows ($HIT_SHARE% of them keys the history holds) to a history of $DAYS x $DAY_ROWS rows"
  echo "built by dedup --append, against dedup of every input again; $cpu ($flags); RS_ARGS='$RS_ARGS'"
  echo
  echo "| run | wall | CPU s | wall / full |"
  echo "| --- | ---: | ---: | ---: |"
  echo "| \`dedup\` of all $((DAYS * DAY_ROWS + NEW_ROWS)) rows (median of $FULL_RUNS) | $fw s | $fc | 1.00 |"
  echo "| \`dedup --append\` of the $NEW_ROWS (median of $RUNS) | $aw s | $ac | $(echo "$aw / $fw" | bc -l | xargs printf %.3f) |"
  echo
  echo "History: $((hist_data / 1000000)) MB of data files, $((hist_index / 1000000)) MB of key indexes. The append's summary:"
  echo
  echo '```'
  echo "$summary"
  echo '```'
  echo
  echo "Each dedup --append of $DAY_ROWS rows that grew the history: $(for k in $(seq 1 "$DAYS"); do printf '%s ' "$(median "dgrow$k" 2)"; done)s"
}

[ "$MODE" = dedup ] || bench_bucket
[ "$MODE" = bucket ] || bench_dedup
# the histories are tens of GB: removed unless KEEP=1 (the inputs stay cached)
[ "${KEEP:-0}" = 1 ] || rm -rf "$WORK/hist-bucket" "$WORK/hist-dedup"
