#!/usr/bin/env bash
# Benchmarks `ringshard bucket` against igzip (the I/O + (de)compression floor)
# and a naive zcat | awk split, and prints a Markdown table for the README.
#
# Usage (from the repo root):  tools/bench_bucket.sh [ROWS] [RUNS]
#   ROWS  data rows to generate (default 10000000)     RUNS  runs (default 3)
# Environment:
#   BUILD=build            build dir holding ringshard and gen_bills
#   WORK=/tmp/rs-bench     work dir (input cache, outputs, results)
#   RINGSHARD=$BUILD/ringshard   GEN=$BUILD/gen_bills   (override for testing)
#   SEED=1                 gen_bills --seed
#   RS_ARGS=""             extra arguments for ringshard bucket (e.g. "-j 2")
#   AWK_RUNS=1             how many runs also time the (slow) awk baseline
#
# Each run times, interleaved: (a) igzip -dc, (b) igzip -1 of the decompressed
# CSV, (c) ringshard bucket (gzip output), (d) ringshard bucket --compress none,
# (e) the awk baseline (first AWK_RUNS runs only). Medians are reported.
# The generated input is cached in $WORK and reused when ROWS/SEED match.
# Exit status: 0 ok, 1 a step failed, 2 missing dependency / bad usage.
set -euo pipefail
export LC_ALL=C

ROWS=${1:-10000000}
RUNS=${2:-3}
BUILD=${BUILD:-build}
WORK=${WORK:-/tmp/rs-bench}
RINGSHARD=${RINGSHARD:-$BUILD/ringshard}
GEN=${GEN:-$BUILD/gen_bills}
SEED=${SEED:-1}
RS_ARGS=${RS_ARGS:-}
AWK_RUNS=${AWK_RUNS:-1}

die() { echo "bench_bucket: $1" >&2; exit "${2:-1}"; }
note() { echo "bench_bucket: $*" >&2; }

[[ $ROWS =~ ^[0-9]+$ && $ROWS -gt 0 ]] || die "ROWS must be a positive integer (got '$ROWS')" 2
[[ $RUNS =~ ^[0-9]+$ && $RUNS -gt 0 ]] || die "RUNS must be a positive integer (got '$RUNS')" 2
[[ $AWK_RUNS =~ ^[0-9]+$ ]] || die "AWK_RUNS must be a non-negative integer" 2
command -v igzip >/dev/null 2>&1 ||
  die "igzip not found; install the Debian package 'isal' (tools/deps.sh does it)" 2
for t in gzip zcat awk; do command -v "$t" >/dev/null 2>&1 || die "$t not found" 2; done
[ -x "$RINGSHARD" ] || die "ringshard binary not found at '$RINGSHARD' (set BUILD or RINGSHARD)" 2
[ -x "$GEN" ] || die "gen_bills not found at '$GEN' (build it: make -C $BUILD gen_bills)" 2
read -r -a rs_extra <<<"$RS_ARGS"

# awk may need ~1000 open files; raise the soft limit as far as allowed.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
GZ=$WORK/bills.csv.gz
CSV=$WORK/bills.csv
META=$WORK/bills.meta
OUT=$WORK/out
AWK_OUT=$WORK/awk_out
want_meta="rows=$ROWS seed=$SEED gen=gen_bills-defaults gz=gzip-6"

# ---------------------------------------------------------------- input
if [ -f "$GZ" ] && [ -f "$META" ] && [ "$(cat "$META")" = "$want_meta" ]; then
  note "reusing cached $GZ ($want_meta)"
else
  rm -f "$GZ" "$CSV" "$META"
  note "generating $ROWS rows (seed $SEED) ..."
  "$GEN" --rows "$ROWS" --seed "$SEED" -o "$CSV.tmp" || die "gen_bills failed"
  mv "$CSV.tmp" "$CSV"
  note "compressing with gzip -6 ..."
  gzip -6 -c "$CSV" >"$GZ.tmp" || die "gzip failed"
  mv "$GZ.tmp" "$GZ"
  touch "$CSV" # the CSV is the decompressed input already; keep it newer
  echo "$want_meta" >"$META"
fi
if [ ! -f "$CSV" ] || [ "$CSV" -ot "$GZ" ]; then
  note "decompressing $GZ once for the igzip -1 step ..."
  igzip -dc "$GZ" >"$CSV.tmp" || die "igzip -dc failed"
  mv "$CSV.tmp" "$CSV"
fi
CSV_BYTES=$(stat -c %s "$CSV")
GZ_BYTES=$(stat -c %s "$GZ")
cat "$GZ" "$CSV" >/dev/null # warm the page cache

# ---------------------------------------------------------------- timing
declare -A TIMES=() RSS=()
HAVE_GNU_TIME=0
[ -x /usr/bin/time ] && HAVE_GNU_TIME=1
[ $HAVE_GNU_TIME = 1 ] || note "/usr/bin/time missing: wall time via \$EPOCHREALTIME, no peak RSS"

# timeit NAME CMD...: runs CMD (stdout as redirected by the caller), records
# wall seconds and peak RSS (KB); aborts the benchmark if CMD fails.
timeit() {
  local name=$1; shift
  local tf=$WORK/.time.$name rc=0 t m
  if [ $HAVE_GNU_TIME = 1 ]; then
    /usr/bin/time -f '%e %M' -o "$tf" "$@" || rc=$?
    [ $rc -eq 0 ] || die "step '$name' failed (exit $rc): $*"
    read -r t m < <(tail -n 1 "$tf")
  else
    local t0=$EPOCHREALTIME
    "$@" || rc=$?
    [ $rc -eq 0 ] || die "step '$name' failed (exit $rc): $*"
    t=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.3f", b - a}')
    m=0
  fi
  TIMES[$name]+="$t "
  RSS[$name]+="$m "
  note "  $name: ${t}s ${m}KB"
}

# shellcheck disable=SC2016,SC2089,SC2090 # literal awk program, passed as one argument
AWK_PROG='BEGIN { h = "0123456789abcdef" }
NR > 1 { k = 0; for (i = 1; i <= 5; i++) k = k * 16 + index(h, substr($1, i, 1)) - 1
         if (k < 0) k = -k; f = "awk_out/" (k % 1000) ".csv"; print > f }'
awk_split() { # zcat | awk 1000-way split on the bill_id prefix, in $WORK
  cd "$WORK" && zcat "$GZ" | awk -F, "$AWK_PROG"
}
export -f awk_split
# shellcheck disable=SC2090
export WORK GZ AWK_PROG

# The manifest's "seconds" is the row pipeline alone: the wall time less
# start-up and the final flush to disk (fsync of every file) and rename.
pipeline_seconds() {
  local t
  t=$(sed -n 's/^ *"seconds": *\([0-9.]*\).*/\1/p' "$OUT/manifest.json" | tail -n 1)
  [ -n "$t" ] || die "no \"seconds\" in $OUT/manifest.json"
  TIMES[$1_pipe]+="$t "
}

# Data files only (manifest.json is not one of the 1000).
nfiles() { find "$1" -type f ! -name manifest.json | wc -l; }

for run in $(seq 1 "$RUNS"); do
  note "run $run/$RUNS"
  sync
  timeit igzip_dc igzip -dc "$GZ" >/dev/null
  timeit igzip_c1 igzip -1 -c "$CSV" >/dev/null

  rm -rf "$OUT"; sync  # the previous step's dirty pages must not be flushed during this one
  timeit rs_gzip "$RINGSHARD" bucket --key bill_id -o "$OUT" --force --quiet "${rs_extra[@]}" "$GZ"
  n=$(nfiles "$OUT"); [ "$n" -eq 1000 ] || note "  warning: ringshard wrote $n files, expected 1000"
  pipeline_seconds rs_gzip
  rm -rf "$OUT"; sync

  timeit rs_none "$RINGSHARD" bucket --key bill_id -o "$OUT" --force --quiet --compress none "${rs_extra[@]}" "$GZ"
  n=$(nfiles "$OUT"); [ "$n" -eq 1000 ] || note "  warning: ringshard --compress none wrote $n files, expected 1000"
  pipeline_seconds rs_none
  rm -rf "$OUT"

  if [ "$run" -le "$AWK_RUNS" ]; then
    rm -rf "$AWK_OUT"; mkdir -p "$AWK_OUT"
    timeit awk bash -o pipefail -c awk_split
    n=$(nfiles "$AWK_OUT"); [ "$n" -ge 1000 ] || note "  warning: awk baseline wrote $n files"
    rm -rf "$AWK_OUT"
  fi
done
rm -f "$WORK"/.time.*

# ---------------------------------------------------------------- report
# shellcheck disable=SC2086 # word splitting of the space-separated list is intended
median() { printf '%s\n' $1 | sort -g | awk '{ a[NR] = $1 }
  END { if (NR == 0) { print ""; exit } if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
# shellcheck disable=SC2086
maxof() { printf '%s\n' $1 | sort -g | tail -n 1; }
# shellcheck disable=SC2086
count() { set -- ${1:-}; echo $#; }
fmt() { awk -v x="$1" -v f="$2" 'BEGIN { if (x == "") print "n/a"; else printf f, x }'; }
# ratio NUM DEN -> "1.234" or "n/a"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 <= 0) print "n/a"; else printf "%.3f", a / b }'; }
verdict() { # VALUE OP TARGET
  awk -v v="$1" -v op="$2" -v t="$3" 'BEGIN { if (v == "n/a") { print "n/a"; exit }
    ok = (op == "<=") ? (v + 0 <= t + 0) : (v + 0 >= t + 0); print ok ? "ok" : "MISSED" }'; }

declare -A MED=()
for k in igzip_dc igzip_c1 rs_gzip rs_none rs_gzip_pipe rs_none_pipe awk; do MED[$k]=$(median "${TIMES[$k]:-}"); done

cpu=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
igv=$(igzip --version 2>&1 | head -n 1 | awk '{ print $NF }')
awkv=$(awk -W version 2>/dev/null | head -n 1 || true)
[ -n "$awkv" ] || awkv=$(awk --version 2>/dev/null | head -n 1 || echo awk)
csv_mb=$(awk -v b="$CSV_BYTES" 'BEGIN { printf "%.1f", b / 1e6 }')
gz_mb=$(awk -v b="$GZ_BYTES" 'BEGIN { printf "%.1f", b / 1e6 }')
awk_n=$(count "${TIMES[awk]:-}")

row() { # LABEL CMD KEY
  local t=${MED[$3]} m
  m=$(maxof "${RSS[$3]:-}")
  local rps mbs rss
  rps=$(awk -v r="$ROWS" -v t="$t" 'BEGIN { if (t == "" || t + 0 <= 0) print "n/a"; else printf "%.2f M", r / t / 1e6 }')
  mbs=$(awk -v b="$CSV_BYTES" -v t="$t" 'BEGIN { if (t == "" || t + 0 <= 0) print "n/a"; else printf "%.0f", b / t / 1e6 }')
  rss=$(awk -v m="$m" -v g="$HAVE_GNU_TIME" 'BEGIN { if (m == "" || g == 0) print "n/a"; else printf "%.1f", m / 1024 }')
  # shellcheck disable=SC2016
  printf '| %s | `%s` | %s | %s | %s | %s |\n' "$1" "$2" "$(fmt "$t" "%.2f")" "$rss" "$rps" "$mbs"
}

r1=$(ratio "${MED[rs_gzip]}" "$(awk -v a="${MED[igzip_dc]}" -v b="${MED[igzip_c1]}" 'BEGIN { print (a + b) / 2 }')")
r2=$(ratio "${MED[rs_none]}" "${MED[igzip_dc]}")
r3=$(ratio "${MED[awk]}" "${MED[rs_gzip]}")
r1p=$(ratio "${MED[rs_gzip_pipe]}" "$(awk -v a="${MED[igzip_dc]}" -v b="${MED[igzip_c1]}" 'BEGIN { print (a + b) / 2 }')")
r2p=$(ratio "${MED[rs_none_pipe]}" "${MED[igzip_dc]}")
rsx=${RS_ARGS:+ $RS_ARGS}

REPORT=$WORK/bench_bucket.md
{
  echo "### ringshard bucket benchmark"
  echo
  echo "\`BUILD=$BUILD tools/bench_bucket.sh $ROWS $RUNS\`${RS_ARGS:+ (RS_ARGS=\"$RS_ARGS\")} on $(nproc) x ${cpu:-unknown CPU}, $(date -u +%Y-%m-%d)."
  echo "Input: $ROWS rows from \`gen_bills --rows $ROWS --seed $SEED\` (5% duplicate keys, 0.1% quoted newlines),"
  echo "$csv_mb MB CSV, $gz_mb MB as \`gzip -6\`. Ring: 1000 nodes x 200 vnodes (default), 1000 output files."
  echo "Median wall time of $RUNS interleaved runs (awk baseline: $awk_n run(s)); peak RSS is the max over runs;"
  echo "rows/s and MB/s are of the uncompressed input. igzip $igv, $awkv."
  echo
  echo "| step | command | wall s | peak RSS MB | rows/s | MB/s |"
  echo "|---|---|---:|---:|---:|---:|"
  row "igzip -dc" "igzip -dc bills.csv.gz > /dev/null" igzip_dc
  row "igzip -1" "igzip -1 -c bills.csv > /dev/null" igzip_c1
  row "ringshard" "ringshard bucket --key bill_id -o out --force --quiet$rsx bills.csv.gz" rs_gzip
  row "ringshard, no compression" "ringshard bucket --key bill_id -o out --force --quiet --compress none$rsx bills.csv.gz" rs_none
  if [ "$awk_n" -gt 0 ]; then
    row "awk baseline" "zcat bills.csv.gz \| awk -F, '...print > f' (1000 files)" awk
  fi
  echo
  echo "| ratio | value | target | |"
  echo "|---|---:|---:|---|"
  echo "| T(ringshard) / ((T(igzip -dc) + T(igzip -1)) / 2) | $r1 | <= 1.4 | $(verdict "$r1" "<=" 1.4) |"
  echo "| T(ringshard --compress none) / T(igzip -dc) | $r2 | <= 1.3 | $(verdict "$r2" "<=" 1.3) |"
  if [ "$awk_n" -gt 0 ]; then
    echo "| T(awk) / T(ringshard) | $r3 | >= 10 | $(verdict "$r3" ">=" 10) |"
  fi
  echo
  echo "Where the time goes: the manifest's \"seconds\" is the row pipeline alone; the rest of the wall"
  echo "time is start-up and publishing (every file fsync'd, then renamed), which the igzip baselines"
  echo "(writing to /dev/null) do not pay."
  echo
  echo "| | ringshard | no compression |"
  echo "|---|---:|---:|"
  echo "| pipeline s (median) | $(fmt "${MED[rs_gzip_pipe]}" "%.2f") | $(fmt "${MED[rs_none_pipe]}" "%.2f") |"
  echo "| start-up + flush + publish s | $(awk -v a="${MED[rs_gzip]}" -v b="${MED[rs_gzip_pipe]}" 'BEGIN { printf "%.2f", a - b }') | $(awk -v a="${MED[rs_none]}" -v b="${MED[rs_none_pipe]}" 'BEGIN { printf "%.2f", a - b }') |"
  echo "| pipeline / its baseline | $r1p | $r2p |"
  if [ "$awk_n" -gt 0 ]; then
    echo
    echo "awk baseline (not CSV-aware: rows with quoted newlines are split wrongly; uncompressed output):"
    echo
    echo '```'
    printf "zcat bills.csv.gz | awk -F, '%s'\n" "$AWK_PROG"
    echo '```'
  fi
} | tee "$REPORT"
note "report saved to $REPORT"
