#!/usr/bin/env bash
# Benchmarks ringshard on a shared machine: every command that reads a
# bucket directory or streams rows, run on a quiet machine and again beside
# LOAD CPU-bound processes (`sh -c 'while :; do :; done'`, started before
# and killed after each loaded round), and prints a Markdown table of
# medians for docs/performance.md: wall and CPU seconds (user + system,
# /usr/bin/time) quiet and loaded, and the CPU ratio loaded / quiet, whose
# target is <= 1.5 for every command. Idle threads that spin while they
# wait show up as that ratio: beside the load, the spinning takes time
# slices from the thread with the work, so it spins longer still.
#
# Usage (from the repo root):  tools/bench/bench_shared.sh [ROWS] [RUNS]
#   ROWS  rows of the bill file (default 1000000)   RUNS  rounds (default 3)
# Environment:
#   BUILD=build              build dir holding ringshard and gen_bills
#   RINGSHARD=$BUILD/ringshard   GEN=$BUILD/gen_bills
#   OLD=                     a second ringshard binary (e.g. an older build),
#                            run interleaved with RINGSHARD, command by command
#   WORK=/tmp/rs-shared      work dir (inputs cached there, outputs deleted)
#   NODES=1000  LOAD=2  SEED=1
#   RS_ARGS=""               extra arguments for every command (e.g. "-j 2")
#   NEW_LABEL=new OLD_LABEL=old   the builds' names in the table
# The commands (each run writes its outputs afresh and they are deleted
# after it; inputs are made once):
#   verify DIR                          the bucket directory of ROWS rows
#   plan --from-buckets DIR --new-nodes NODES+1
#   stats INPUT                         (reads every row; `stats DIR` reads none)
#   dedup --buckets DIR -o OUT
#   compact DIR2                        DIR2: DIR plus a generation of ROWS/2 rows
#                                       (copied before each run, not timed)
#   bucket INPUT -o OUT
# The user's OMP_WAIT_POLICY, GOMP_SPINCOUNT and KMP_BLOCKTIME are unset for
# the runs, so that each binary runs with its own default.
# Exit status: 0 ok (whatever the ratios), 1 a step failed, 2 bad usage or
# missing tool.
set -euo pipefail
export LC_ALL=C
unset OMP_WAIT_POLICY GOMP_SPINCOUNT KMP_BLOCKTIME

ROWS=${1:-1000000}
RUNS=${2:-3}
BUILD=${BUILD:-build}
RINGSHARD=${RINGSHARD:-$BUILD/ringshard}
GEN=${GEN:-$BUILD/gen_bills}
OLD=${OLD:-}
WORK=${WORK:-/tmp/rs-shared}
NODES=${NODES:-1000}
LOAD=${LOAD:-2}
SEED=${SEED:-1}
RS_ARGS=${RS_ARGS:-}
NEW_LABEL=${NEW_LABEL:-new}
OLD_LABEL=${OLD_LABEL:-old}

die() { echo "bench_shared: $1" >&2; exit "${2:-1}"; }
note() { echo "bench_shared: $*" >&2; }
[[ $ROWS =~ ^[0-9]+$ && $ROWS -ge 2 ]] || die "ROWS must be an integer >= 2 (got '$ROWS')" 2
[[ $RUNS =~ ^[0-9]+$ && $RUNS -gt 0 ]] || die "RUNS must be a positive integer (got '$RUNS')" 2
[[ $LOAD =~ ^[0-9]+$ ]] || die "LOAD must be a non-negative integer (got '$LOAD')" 2
[ -x /usr/bin/time ] || die "/usr/bin/time missing (tools/deps.sh installs it)" 2
[ -x "$RINGSHARD" ] || die "ringshard not found at '$RINGSHARD' (set BUILD or RINGSHARD)" 2
[ -x "$GEN" ] || die "gen_bills not found at '$GEN'" 2
[ -z "$OLD" ] || [ -x "$OLD" ] || die "OLD='$OLD' is not an executable" 2
read -r -a rs_extra <<<"$RS_ARGS"

mkdir -p "$WORK"
spinners=()
stop_load() {
  local p
  for p in "${spinners[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${spinners[@]}"; do wait "$p" 2>/dev/null || true; done
  spinners=()
}
start_load() {
  local i
  for ((i = 0; i < LOAD; i++)); do
    sh -c 'while :; do :; done' &
    spinners+=($!)
  done
  sleep 1  # the spinners at full speed before the first timed step
}
trap 'stop_load; rm -rf "$WORK/run"' EXIT

# Inputs, cached: two gzip bill files (ROWS and ROWS/2 rows), the bucket
# directory of the first and that directory with the second appended as a
# generation, made by OLD when it is given (a newer build reads an older
# one's directories; the reverse may not hold), else by RINGSHARD.
in_a=$WORK/bills-$ROWS-$SEED.csv.gz
in_b=$WORK/bills-$((ROWS / 2))-$((SEED + 1)).csv.gz
for f in "$in_a:$ROWS:$SEED" "$in_b:$((ROWS / 2)):$((SEED + 1))"; do
  IFS=: read -r path n s <<<"$f"
  if [ ! -s "$path" ]; then
    note "generating $path"
    "$GEN" --rows "$n" --seed "$s" 2>/dev/null | gzip -1 >"$path.tmp" || die "gen_bills failed"
    mv "$path.tmp" "$path"
  fi
done
ring=(--key bill_id --nodes "$NODES")
base=$WORK/base-$ROWS-$NODES
two=$WORK/two-$ROWS-$NODES
rm -rf "$base" "$two" "$WORK/run"
maker=${OLD:-$RINGSHARD}
"$maker" bucket "${ring[@]}" --quiet -o "$base" "$in_a" || die "making $base failed"
cp -a "$base" "$two"
"$maker" bucket "${ring[@]}" --append --quiet -o "$two" "$in_b" || die "appending to $two failed"

declare -A WALL CPU
bins=(new)
[ -n "$OLD" ] && bins=(old new)
cmds=(verify plan stats dedup compact bucket)

# step BIN CMD PHASE: one timed run; its outputs under $WORK/run.
step() {
  local bin=$1 cmd=$2 phase=$3 rs=$RINGSHARD out=$WORK/run rc=0 t u s
  [ "$bin" = old ] && rs=$OLD
  rm -rf "$out"
  mkdir -p "$out"
  local args
  case $cmd in
  verify) args=(verify "${rs_extra[@]}" "$base") ;;
  plan) args=(plan "${rs_extra[@]}" --from-buckets "$base" --new-nodes $((NODES + 1))) ;;
  stats) args=(stats "${rs_extra[@]}" "${ring[@]}" "$in_a") ;;
  dedup) args=(dedup "${rs_extra[@]}" --quiet --buckets "$base" -o "$out/dedup") ;;
  compact)
    cp -a "$two" "$out/two"
    args=(compact "${rs_extra[@]}" --quiet "$out/two")
    ;;
  bucket) args=(bucket "${rs_extra[@]}" "${ring[@]}" --quiet -o "$out/bucket" "$in_a") ;;
  esac
  /usr/bin/time -f '%e %U %S' -o "$WORK/.time" "$rs" "${args[@]}" >/dev/null 2>"$WORK/.err" || rc=$?
  [ $rc -eq 0 ] || { cat "$WORK/.err" >&2; die "$bin $cmd ($phase) failed (exit $rc)"; }
  read -r t u s < <(tail -n 1 "$WORK/.time")
  WALL[$bin.$cmd.$phase]+="$t "
  CPU[$bin.$cmd.$phase]+="$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }') "
  note "  $bin $cmd $phase: ${t} s wall, $u + $s CPU s"
  rm -rf "$out"
}

median() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{ v[NR] = $1 } END { m = int((NR + 1) / 2); printf "%.2f", NR % 2 ? v[m] : (v[m] + v[m + 1]) / 2 }'; }

# Interleaved: in every round each command runs quiet then loaded, and
# each binary runs it in turn, so that a change in the machine's load
# falls on both.
for ((r = 1; r <= RUNS; r++)); do
  note "round $r of $RUNS (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  for phase in quiet loaded; do
    [ "$phase" = loaded ] && start_load
    for cmd in "${cmds[@]}"; do
      for bin in "${bins[@]}"; do step "$bin" "$cmd" "$phase"; done
    done
    [ "$phase" = loaded ] && stop_load
  done
done

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
echo "Input: \`gen_bills --rows $ROWS --seed $SEED\` (gzip -1), $NODES nodes; compact: plus a generation of $((ROWS / 2)) rows."
echo "$("$RINGSHARD" --version), $cpu, $(nproc) cores; medians of $RUNS interleaved rounds; loaded: beside $LOAD \`sh -c 'while :; do :; done'\`."
echo
echo "| command | build | quiet wall s | quiet CPU s | loaded wall s | loaded CPU s | CPU loaded / quiet |"
echo "|---|---|---:|---:|---:|---:|---:|"
for cmd in "${cmds[@]}"; do
  for bin in "${bins[@]}"; do
    qw=$(median "${WALL[$bin.$cmd.quiet]}") qc=$(median "${CPU[$bin.$cmd.quiet]}")
    lw=$(median "${WALL[$bin.$cmd.loaded]}") lc=$(median "${CPU[$bin.$cmd.loaded]}")
    ratio=$(awk -v a="$lc" -v b="$qc" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "-" }')
    over=$(awk -v x="$ratio" 'BEGIN { if (x + 0 > 1.5) printf " (over 1.5)" }')
    name=$NEW_LABEL
    [ "$bin" = old ] && name=$OLD_LABEL
    echo "| $cmd | $name | $qw | $qc | $lw | $lc | $ratio$over |"
  done
done
rm -rf "$base" "$two"
