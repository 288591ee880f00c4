#!/usr/bin/env bash
# bench_compact.sh - what checking costs `ringshard compact`: a bucket
# directory of ROWS rows in GENS generations on the default ring (1000
# nodes), compacted with every file checked (the default: each part read
# once, written out and checked: the CRC-32 of its stored bytes against
# the manifest's stored_crc32) and with --no-check (copy_file_range, sizes
# only), on a warm page cache.
#
#   tools/bench/bench_compact.sh [-b BUILD_DIR] [-w WORK_DIR] [-r RUNS] [-n ROWS] [-g GENS] [-c gzip|zstd|none] [-o] [-p] [-q]
#
#   -b BUILD_DIR  holds ringshard and gen_bills (default: build/ or build-*/)
#   -w WORK_DIR   the directory is cached there between runs (default: a
#                 new temporary directory); about 55 bytes a row with gzip
#   -r RUNS       runs of each case, the median reported (default 3)
#   -n ROWS       rows in all (default 20M; k/M/G suffixes as gen_bills)
#   -g GENS       generations: the base, then GENS - 1 appends (default 5)
#   -c CODEC      the directory's --compress (default gzip)
#   -o            old manifests: the directory's manifests rewritten without
#                 stored_crc32 (tests/old_stored.py), as before 0.3.0, so
#                 that the checked cases decode every part
#   -p            prepare: build the directory in WORK_DIR, time nothing
#   -q            quick: 200k rows, 1 run, a smoke run of seconds
#
# Data: gen_bills --seed 1..GENS, ROWS / GENS rows each (its defaults: 5 %
# repeated bill ids, 0.1 % of rows with a line break in a quoted field);
# `bucket --key bill_id` of the first, `bucket --append` of each other.
# Each run compacts a hard-linked copy (cp -al: compact changes no file in
# place, it builds a new directory and exchanges it), whose files are read
# whole first (warm: in the page cache). The cases run interleaved
# (unchecked, checked, checked on one thread, then again), so that a change
# in the machine's load falls on all of them. Reported per case, medians of
# RUNS: wall s, CPU s (user + system, from /usr/bin/time), then the ratios
# checked / unchecked. The cases' directories of the first round are
# compared file by file: the same bytes whatever the case (with -o, the
# manifests apart).
# Exit status: 0 ok, 1 a step failed, 2 bad usage or a missing tool.
set -euo pipefail
export LC_ALL=C

RUNS=3
ROWS=20M
GENS=5
CODEC=gzip
BUILD=""
WORK=""
PREPARE=0
OLD=0
while getopts "b:w:r:n:g:c:opqh" o; do
    case $o in
    b) BUILD=$OPTARG ;;
    w) WORK=$OPTARG ;;
    r) RUNS=$OPTARG ;;
    n) ROWS=$OPTARG ;;
    g) GENS=$OPTARG ;;
    c) CODEC=$OPTARG ;;
    o) OLD=1 ;;
    p) PREPARE=1 ;;
    q) ROWS=200k RUNS=1 ;;
    *) sed -n '2,37p' "$0"; exit 2 ;;
    esac
done
die() { echo "bench_compact: $1" >&2; exit "${2:-1}"; }
note() { echo "bench_compact: $*" >&2; }
[[ $RUNS =~ ^[0-9]+$ && $RUNS -gt 0 ]] || die "-r: a positive integer (got '$RUNS')" 2
[[ $GENS =~ ^[0-9]+$ && $GENS -gt 1 ]] || die "-g: 2 or more (got '$GENS')" 2
case $CODEC in gzip | zstd | none) ;; *) die "-c: gzip, zstd or none (got '$CODEC')" 2 ;; esac
rows=$(awk -v x="$ROWS" 'BEGIN { m = 1; if (x ~ /[kK]$/) m = 1e3; if (x ~ /M$/) m = 1e6; if (x ~ /G$/) m = 1e9;
                                 sub(/[kKMG]$/, "", x); printf "%d", x * m }')
[ "$rows" -ge "$GENS" ] || die "-n: at least one row a generation (got '$ROWS')" 2
[ -x /usr/bin/time ] || die "/usr/bin/time missing (apt-get install time)" 2
here=$(cd "$(dirname "$0")/../.." && pwd)
if [ -z "$BUILD" ]; then
    for d in "$here/build" "$here"/build-*; do
        [ -x "$d/ringshard" ] && [ -x "$d/gen_bills" ] && { BUILD=$d; break; }
    done
fi
[ -n "$BUILD" ] || die "build ringshard and gen_bills first (-b BUILD_DIR)" 2
BUILD=$(cd "$BUILD" && pwd)
RS=$BUILD/ringshard
GEN=$BUILD/gen_bills
[ -x "$RS" ] && [ -x "$GEN" ] || die "no ringshard or gen_bills in $BUILD" 2
WORK=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/bench_compact.XXXXXX")}
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
cd "$WORK"
trap 'rm -rf "$WORK"/copy "$WORK"/copy.* "$WORK"/kept-* "$WORK/part.csv" "$WORK"/D-*-old' EXIT

# The directory, cached: D-<rows>-<gens>-<codec>.
SRC=$WORK/D-$rows-$GENS-$CODEC
if [ ! -f "$SRC/manifest.json" ] || [ ! -d "$SRC/g$(printf %08d "$GENS")" ]; then
    note "building $SRC"
    rm -rf "$SRC"
    part=$((rows / GENS))
    for ((g = 1; g <= GENS; g++)); do
        n=$part
        [ "$g" = "$GENS" ] && n=$((rows - part * (GENS - 1)))
        "$GEN" --rows "$n" --seed "$g" -o part.csv 2>/dev/null || die "gen_bills failed"
        if [ "$g" = 1 ]; then
            "$RS" bucket --quiet --key bill_id --compress "$CODEC" -o "$SRC" part.csv || die "bucket failed"
        else
            "$RS" bucket --quiet --append -o "$SRC" part.csv || die "bucket --append failed"
        fi
    done
    rm -f part.csv
fi
bytes=$(du -sb "$SRC" | cut -f1)
[ "$PREPARE" = 0 ] || { note "$SRC: $((bytes / 1000000)) MB"; exit 0; }
if [ "$OLD" = 1 ]; then   # the data files linked, the manifests copied and rewritten
    rm -rf "$SRC-old"
    cp -al "$SRC" "$SRC-old"
    find "$SRC-old" -name manifest.json -exec sh -c 'cp --remove-destination "$1" "$1.t" && mv "$1.t" "$1"' _ {} \;
    python3 "$here/tests/old_stored.py" "$SRC-old" || die "old_stored.py failed"
    SRC=$SRC-old
fi

median() { tr ' ' '\n' <<<"$1" | { grep . || true; } | sort -g | awk '{ v[NR] = $1 } END { m = int((NR + 1) / 2); print NR % 2 ? v[m] : (v[m] + v[m + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "-" }'; }

# run CASE THREADS OPTIONS...: one compact of a fresh warm copy; appends
# "wall cpu" to WALL[CASE], CPU[CASE]; in the first round, keeps the
# result as kept-CASE.
declare -A WALL CPU
cases=(unchecked checked checked-1)
run() {
    local name=$1 threads=$2
    shift 2
    rm -rf copy copy.*
    cp -al "$SRC" copy
    find copy -type f -exec cat {} + > /dev/null
    OMP_NUM_THREADS=$threads /usr/bin/time -f "%e %U %S" -o time.txt "$RS" compact --quiet "$@" copy ||
        die "$name: ringshard compact $* failed"
    read -r e u s < time.txt
    WALL[$name]+="$e " CPU[$name]+="$(awk -v u="$u" -v s="$s" 'BEGIN { print u + s }') "
    note "  $name: wall $e s, CPU $u + $s s (load $(cut -d' ' -f1 /proc/loadavg))"
    if [ "$ROUND" = 0 ]; then mv copy "kept-$name"; else rm -rf copy; fi
}
note "$RUNS runs of $rows rows in $GENS generations ($CODEC, $((bytes / 1000000)) MB) in $WORK" \
     "(load average $(cut -d' ' -f1-3 /proc/loadavg))"
rm -rf kept-*
ex=()
[ "$OLD" = 0 ] || ex=(-x manifest.json)
for ((ROUND = 0; ROUND < RUNS; ROUND++)); do
    run unchecked "$(nproc)" --no-check
    run checked "$(nproc)"
    run checked-1 1
    if [ "$ROUND" = 0 ]; then
        for c in checked checked-1; do
            # (old manifests: --no-check has no stored_crc32 to combine, the checked runs write it)
            diff -r ${ex[@]+"${ex[@]}"} kept-unchecked "kept-$c" > /dev/null ||
                die "$c: not the bytes --no-check wrote"
        done
        rm -rf kept-*
    fi
done

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
old=""
[ "$OLD" = 0 ] || old=" (manifests without stored_crc32: checked by decoding)"
echo "$("$RS" --version), $cpu, $(nproc) cores; $rows rows in $GENS generations, 1000 nodes, $CODEC$old," \
     "$((bytes / 1000000)) MB; warm; medians of $RUNS runs; load average at the end $(cut -d' ' -f1-3 /proc/loadavg)."
echo
echo "| case | command | wall s | CPU s |"
echo "|---|---|---:|---:|"
label() {
    case $1 in
    unchecked) echo "compact --no-check (copy_file_range)" ;;
    checked) echo "compact (checked, $(nproc) threads)" ;;
    checked-1) echo "OMP_NUM_THREADS=1 compact (checked)" ;;
    esac
}
for c in "${cases[@]}"; do
    echo "| $c | $(label "$c") | $(median "${WALL[$c]}") | $(median "${CPU[$c]}") |"
done
echo
echo "Ratios to unchecked: checked wall $(ratio "$(median "${WALL[checked]}")" "$(median "${WALL[unchecked]}")")," \
     "CPU $(ratio "$(median "${CPU[checked]}")" "$(median "${CPU[unchecked]}")");" \
     "checked on one thread wall $(ratio "$(median "${WALL[checked-1]}")" "$(median "${WALL[unchecked]}")")."
