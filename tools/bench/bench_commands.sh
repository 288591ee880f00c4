#!/usr/bin/env bash
# Benchmarks the commands that read a bucket directory - cat --all, plan
# --from-buckets --emit, verify and stats of the files - each against its
# floor (igzip -dc of the same files: the inflate every one of them must do)
# and its peer (ringshard bucket of the same rows, which wrote the
# directory), and prints a Markdown table for docs/performance.md.
#
# Usage (from the repo root):  tools/bench/bench_commands.sh [ROWS] [RUNS]
#   ROWS  data rows to generate (default 10000000)     RUNS  runs (default 3)
# Environment:
#   BUILD=build            build dir holding ringshard and gen_bills
#   WORK=/tmp/rs-bench-commands   work dir (input cache, directories, results)
#   RINGSHARD=$BUILD/ringshard   GEN=$BUILD/gen_bills   (override for testing)
#   SEED=1                 gen_bills --seed
#   BASE=""                another ringshard (e.g. the last release's) whose
#                          cat, plan, verify and stats are timed beside this
#                          one's, on the same directory
#   RS_ARGS=""             extra arguments for every ringshard command (e.g. "-j 2")
#
# The input, bills.csv.gz (gen_bills, gzip -6), and the bucket directory B
# (ringshard bucket --key bill_id: 1000 nodes) are made once and cached in
# WORK. Each run times, interleaved: igzip -dc B/*.csv.gz > /dev/null (one
# process: the floor on one core), ringshard bucket of bills.csv.gz (the
# peer), cat --all B > /dev/null, plan --from-buckets B --add 10 --emit M,
# verify B, stats --nodes 1000 --key bill_id of B's files (the pipeline's
# reading, as `stats DIR` reads only the manifest), and with BASE the same
# four with BASE. Medians of the runs are reported, of the wall time and of
# the CPU seconds (user + system, /usr/bin/time), with each command's wall
# over the floor's and over the peer's. Every step writes into a directory
# of its own, all deleted at the end (see bench_bucket.sh on ext4's inode
# reuse). Exit status: 0 ok, 1 a step failed, 2 missing dependency / bad usage.
set -euo pipefail
export LC_ALL=C

ROWS=${1:-10000000}
RUNS=${2:-3}
BUILD=${BUILD:-build}
WORK=${WORK:-/tmp/rs-bench-commands}
RINGSHARD=${RINGSHARD:-$BUILD/ringshard}
GEN=${GEN:-$BUILD/gen_bills}
SEED=${SEED:-1}
BASE=${BASE:-}
RS_ARGS=${RS_ARGS:-}

die() { echo "bench_commands: $1" >&2; exit "${2:-1}"; }
note() { echo "bench_commands: $*" >&2; }

[[ $ROWS =~ ^[0-9]+$ && $ROWS -gt 0 ]] || die "ROWS must be a positive integer (got '$ROWS')" 2
[[ $RUNS =~ ^[0-9]+$ && $RUNS -gt 0 ]] || die "RUNS must be a positive integer (got '$RUNS')" 2
command -v igzip >/dev/null 2>&1 || die "igzip not found; install the Debian package 'isal' (tools/deps.sh does it)" 2
[ -x /usr/bin/time ] || die "GNU time (/usr/bin/time) not found" 2
[ -x "$RINGSHARD" ] || die "ringshard binary not found at '$RINGSHARD' (set BUILD or RINGSHARD)" 2
[ -x "$GEN" ] || die "gen_bills not found at '$GEN' (build it: cmake --build $BUILD --target gen_bills)" 2
[ -z "$BASE" ] || [ -x "$BASE" ] || die "BASE '$BASE' is not an executable" 2
read -r -a rs_extra <<<"$RS_ARGS"

mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
GZ=$WORK/bills.csv.gz
B=$WORK/B
META=$WORK/bills.meta
RUNS_DIR=$WORK/runs
want_meta="rows=$ROWS seed=$SEED gen=gen_bills-defaults gz=gzip-6 buckets=bill_id"

if [ -f "$GZ" ] && [ -d "$B" ] && [ -f "$META" ] && [ "$(cat "$META")" = "$want_meta" ]; then
  note "reusing cached $GZ and $B ($want_meta)"
else
  rm -rf "$GZ" "$B" "$META"
  note "generating $ROWS rows (seed $SEED) ..."
  "$GEN" --rows "$ROWS" --seed "$SEED" -o "$WORK/bills.csv" 2>/dev/null || die "gen_bills failed"
  gzip -6 -c "$WORK/bills.csv" >"$GZ.tmp" && mv "$GZ.tmp" "$GZ" && rm -f "$WORK/bills.csv" || die "gzip failed"
  "$RINGSHARD" bucket --quiet --key bill_id -o "$B" "$GZ" || die "bucket failed"
  echo "$want_meta" >"$META"
fi
nfiles=$(find "$B" -name '*.csv.gz' | wc -l)
rm -rf "$RUNS_DIR"
mkdir -p "$RUNS_DIR"
trap 'rm -rf "$RUNS_DIR"' EXIT

declare -A TIMES CPUS
# timeit NAME CMD...: runs CMD (a shell command line) under GNU time.
timeit() {
  local name=$1 tf=$WORK/.time.$1 t u s c
  shift
  /usr/bin/time -f '%e %U %S' -o "$tf" sh -c "$1" || die "step '$name' failed: $1"
  read -r t u s < <(tail -n 1 "$tf")
  c=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')
  TIMES[$name]+="$t "
  CPUS[$name]+="$c "
  note "  $name: ${t}s ${c} CPU-s"
}

# the commands, as timed (RS is the binary; OUT a fresh directory)
cmd_of() {
  local rs=$1 which=$2 out=$3 x=${rs_extra[*]:-}
  case $which in
  cat) echo "'$rs' cat $x --all '$B' > /dev/null" ;;
  plan) echo "'$rs' plan $x --quiet --from-buckets '$B' --add 10 --emit '$out' > /dev/null" ;;
  verify) echo "'$rs' verify $x --quiet '$B'" ;;
  stats) echo "'$rs' stats $x --key bill_id --nodes 1000 $(find "$B" -name '*.csv.gz' | sort | tr '\n' ' ') > /dev/null" ;;
  esac
}

for ((run = 1; run <= RUNS; run++)); do
  note "run $run of $RUNS (load: $(cut -d' ' -f1-3 /proc/loadavg))"
  rd=$RUNS_DIR/$run
  mkdir -p "$rd"
  timeit igzip "igzip -dc '$B'/*.csv.gz > /dev/null"
  timeit bucket "'$RINGSHARD' bucket ${rs_extra[*]:-} --quiet --key bill_id -o '$rd/bucket' '$GZ'"
  for c in cat plan verify stats; do
    timeit "$c" "$(cmd_of "$RINGSHARD" "$c" "$rd/$c")"
    [ -z "$BASE" ] || timeit "base_$c" "$(cmd_of "$BASE" "$c" "$rd/base_$c")"
  done
done

median() { printf '%s\n' $1 | sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print ""; else if (NR % 2) print a[(NR + 1) / 2]; else printf "%.3f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }

cpu=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
ver=$("$RINGSHARD" --version 2>/dev/null | head -n 1 || true)
fl=$(median "${TIMES[igzip]}")
peer=$(median "${TIMES[bucket]}")
{
  echo "### Reading a bucket directory"
  echo
  echo "$ver; CPU: ${cpu:-unknown}, $(nproc) cores; $ROWS rows from \`gen_bills --rows $ROWS --seed $SEED\`,"
  echo "bucketed by \`ringshard bucket --key bill_id\` into $nfiles gzip files; medians of $RUNS runs; the machine's"
  echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg). Floor: \`igzip -dc B/*.csv.gz > /dev/null\` (one"
  echo "process, one core); peer: \`ringshard bucket\` of the same rows (bills.csv.gz, gzip -6)."
  echo
  echo "| command | wall s | CPU s | x floor (wall) | x bucket (wall) |${BASE:+ base wall s | base CPU s |}"
  echo "| --- | ---: | ---: | ---: | ---: |${BASE:+ ---: | ---: |}"
  printf '| `igzip -dc B/*.csv.gz > /dev/null` (floor) | %s | %s | 1.00 | %s |%s\n' "$fl" "$(median "${CPUS[igzip]}")" \
    "$(ratio "$fl" "$peer")" "${BASE:+ | |}"
  printf '| `ringshard bucket --key bill_id -o out bills.csv.gz` (peer) | %s | %s | %s | 1.00 |%s\n' "$peer" \
    "$(median "${CPUS[bucket]}")" "$(ratio "$peer" "$fl")" "${BASE:+ | |}"
  for c in cat plan verify stats; do
    case $c in
    cat) shown='ringshard cat --all B > /dev/null' ;;
    plan) shown='ringshard plan --from-buckets B --add 10 --emit M' ;;
    verify) shown='ringshard verify B' ;;
    stats) shown="ringshard stats --key bill_id --nodes 1000 B/*.csv.gz" ;;
    esac
    t=$(median "${TIMES[$c]}")
    b=""
    [ -z "$BASE" ] || b=" $(median "${TIMES[base_$c]}") | $(median "${CPUS[base_$c]}") |"
    printf '| `%s` | %s | %s | %s | %s |%s\n' "$shown" "$t" "$(median "${CPUS[$c]}")" "$(ratio "$t" "$fl")" \
      "$(ratio "$t" "$peer")" "$b"
  done
}
