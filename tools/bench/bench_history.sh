#!/usr/bin/env bash
# bench_history.sh - what `ringshard dedup --append` costs against a large
# history: a day of new rows checked against the key indexes of a bucket
# directory holding 1 M, 4 M and 10 M keys a bucket, and what that cost
# grows with (the history, or the new keys).
#
#   tools/bench/bench_history.sh [-b BUILD_DIR] [-w WORK_DIR] [-r RUNS] [-s SCALE] [-q] [-n NODES]
#
#   -b BUILD_DIR  holds ringshard and gen_bills (default: build/ or build-*/)
#   -w WORK_DIR   histories are cached there between runs (default: a new
#                 temporary directory); several GB at scale 1
#   -r RUNS       runs of each timed step, the median reported (default 3)
#   -s SCALE      every size times SCALE (default 1)
#   -q            quick: SCALE 0.1 and RUNS 1, a smoke run of a minute or two
#   -n NODES      the nightly shape instead (below), on a ring of NODES nodes
#                 (1000: the default ring's)
#
# Data (2 nodes, --key bill_id; gen_bills --dup-share 0 --newline-share 0):
#   history    dedup --append -o H of 2*D distinct-key rows, D = 1 M, 4 M and
#              10 M keys a bucket (one generation: nothing to compact)
#   day        2,000 rows: 1,800 fresh keys and 200 rows whose key H holds
#              (rows of the history, picked evenly), i.e. 1,000 new keys a
#              bucket, 10 % of them seen
#   dense day  (1 M only) 10 % of the history's rows, 10 % of them seen
#   H5         the 1 M history's rows appended in 5 parts: 5 generations,
#              compacted
# Timed steps, each on a copy of the history (cp -al: hard links, as an
# append never changes a file in place, it publishes a new generation by a
# rename; so every run starts from the same state, without copying GBs):
#   dedup --append -o COPY day.csv     warm: the copy's files read whole
#                                      first (in the page cache); cold:
#                                      sync, then every file of the copy
#                                      evicted (posix_fadvise DONTNEED)
#   compact COPY5                      cold
# Reported per step, medians of RUNS: CPU s (user + system, from wait4),
# wall s, and the bytes the process read as the kernel counts them
# (/proc/<pid>/io of ringshard: rchar, every byte read() returned, cached
# or not; read_bytes, what it fetched from storage), taken from the
# --metrics file (ringshard_io_rchar_bytes, ringshard_io_read_bytes), and
# the key index bytes the append says it read. Then the ratios 4M/1M and
# 10M/4M, and the disk bytes of the key indexes against the data files.
#
# The nightly shape (-n NODES): many nodes, each with a history of tens of
# thousands of keys and a day of about a thousand new keys:
#   days       gen_bills --rows 10 M --seed 100+k --newline-share 0 (5 % of
#              the rows repeat a key), k = 1..8, appended one by one with
#              dedup --append: the history after 2 days (19 M rows, 2
#              generations) and after 8 (76 M rows, 8 generations), never
#              compacted, and both compacted (compact of a copy). All four
#              are kept in WORK_DIR/N<NODES>-<day rows>/ (at scale 1 about 11
#              GB: 4.9 of the 76 M history, 4.9 of its compacted copy, 1.2 of
#              the 19 M one compacted; the 19 M history shares the 76 M
#              one's files by hard links), with every 100th row of each day
#   day        1 M rows: 900,000 of gen_bills --seed 1001 --newline-share 0
#              and 100,000 rows of the history (10 %), picked evenly from the
#              samples of the days it holds
#   timed      dedup --append -o COPY day.csv on a copy of each of the four,
#              warm and cold (as above; /proc/sys/vm/drop_caches instead of
#              the evictions when it is writable); the day is read first
#              either way, so that read_bytes is the history's
#   floor      what the append has to read: the filter bytes of the key
#              indexes it looked up plus 4 KiB (a page) for every new key
#              that a filter line passed, in each index (ringshard's own
#              count: ringshard_history_filter_bytes and
#              ringshard_history_filter_passes of --metrics); reported with
#              read_bytes / floor, and read_bytes of 76 M against 19 M
#   oracle     at 19 M, the rows kept, the rows dropped as held, the repeats
#              and the keys confirmed (one a row) against a Python recomputation: the
#              day's keys marked from the history's rows (zcat)
# Exit status: 0 ok, 1 a step failed or the oracle disagrees, 2 bad usage or
# a missing tool.
set -euo pipefail
export LC_ALL=C

RUNS=3
SCALE=1
BUILD=""
WORK=""
NODES=""
while getopts "b:w:r:s:n:qh" o; do
    case $o in
    b) BUILD=$OPTARG ;;
    w) WORK=$OPTARG ;;
    r) RUNS=$OPTARG ;;
    s) SCALE=$OPTARG ;;
    q) SCALE=0.1 RUNS=1 ;;
    n) NODES=$OPTARG ;;
    *) sed -n '2,68p' "$0"; exit 2 ;;
    esac
done
die() { echo "bench_history: $1" >&2; exit "${2:-1}"; }
note() { echo "bench_history: $*" >&2; }
[[ $RUNS =~ ^[0-9]+$ && $RUNS -gt 0 ]] || die "-r: a positive integer (got '$RUNS')" 2
[[ $SCALE =~ ^[0-9]*\.?[0-9]+$ ]] || die "-s: a positive number (got '$SCALE')" 2
[[ -z $NODES || $NODES =~ ^[1-9][0-9]*$ ]] || die "-n: a positive integer (got '$NODES')" 2
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
command -v python3 >/dev/null || die "python3 missing" 2
WORK=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/bench_history.XXXXXX")}
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
cd "$WORK"
trap 'rm -rf "$WORK/copy" "$WORK/copy.tmp"' EXIT

n() { awk -v x="$1" -v s="$SCALE" 'BEGIN { printf "%d", x * s + 0.5 }'; }
ring=(--key bill_id --nodes 2)
gen() { "$GEN" --dup-share 0 --newline-share 0 "$@" 2>/dev/null; }

# history ROWS: H-ROWS (cached), one generation of ROWS distinct keys.
history() {
    local rows=$1 h=$WORK/H-$1
    if [ ! -f "$h/manifest.json" ]; then
        note "building $h ($rows rows)"
        rm -rf "$h"
        gen --rows "$rows" --seed 7 -o hist.csv
        "$RS" dedup --append --quiet "${ring[@]}" -o "$h" hist.csv || die "building $h failed"
        rm -f hist.csv
    fi
    echo "$h"
}

# day FILE ROWS SEEN HROWS SEED: ROWS rows, ROWS - SEEN fresh ones then
# SEEN rows of the history of HROWS rows, picked evenly from its first
# min(100 x SEEN, HROWS) (gen_bills' rows with seed 7 are a prefix of the
# history's; where a key's entry lies in an index depends on its hash, not
# on its place in the input).
day() {
    local file=$1 rows=$2 seen=$3 hrows=$4 seed=$5
    local from=$((100 * seen < hrows ? 100 * seen : hrows))
    [ -s "$file" ] && return
    { gen --rows $((rows - seen)) --seed "$seed"
      gen --rows "$from" --seed 7 --no-header | awk -v k=$((from / seen)) -v m="$seen" \
          'NR % k == 0 && c < m { print; c++ }'; } > "$file.tmp"
    [ "$(($(wc -l < "$file.tmp") - 1))" = "$rows" ] || die "$file: not $rows rows"
    mv "$file.tmp" "$file"
}

# Every file under DIR read (warm) or evicted from the page cache (cold:
# the whole page cache dropped when this user may, else DIR's files).
warm() { find "$1" -type f -exec cat {} + > /dev/null; }
cold() {
    sync
    if [ -w /proc/sys/vm/drop_caches ]; then
        echo 3 > /proc/sys/vm/drop_caches
        return
    fi
    python3 - "$1" <<'EOF'
import os, sys
for root, _, files in os.walk(sys.argv[1]):
    for f in files:
        fd = os.open(os.path.join(root, f), os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
EOF
}

median() { tr ' ' '\n' <<<"$1" | { grep . || true; } | sort -g | awk '{ v[NR] = $1 } END { m = int((NR + 1) / 2); print NR % 2 ? v[m] : (v[m] + v[m + 1]) / 2 }'; }
metric() { sed -n "s/^ringshard_$1{command=\"[a-z]*\"} //p" "$2"; }

# step NAME CACHE CMD...: RUNS runs of `ringshard CMD` on a fresh copy of
# $SRC (the word COPY in CMD), warm or cold; medians into CPU[NAME], WALL,
# RCHAR, RBYTES, IDX (the key index bytes the summary says it read), and
# of the last run FB and FP (the filter bytes looked up and the keys a
# filter passed, when --metrics reports them) and its stderr in NAME.err.
declare -A CPU WALL RCHAR RBYTES IDX DISK FB FP

# Runs CMD; prints "wall user system" in seconds to the millisecond
# (wait4's rusage: /usr/bin/time rounds to 10 ms, which is most of a
# small append's CPU); CMD's stdout is dropped, its stderr kept.
timed() {
    python3 -c '
import os, sys, time
t = time.time()
pid = os.fork()
if pid == 0:
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    os.execv(sys.argv[1], sys.argv[1:])
_, status, ru = os.wait4(pid, 0)
print("%.3f %.3f %.3f" % (time.time() - t, ru.ru_utime, ru.ru_stime))
sys.exit(os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status >> 8)
' "$@"
}
step() {
    local name=$1 cache=$2
    shift 2
    local c="" w="" rc="" rb="" ix="" i a args
    for ((i = 0; i < RUNS; i++)); do
        rm -rf copy copy.tmp
        cp -al "$SRC" copy
        args=()
        for a in "$@"; do args+=("${a//COPY/copy}"); done
        "$cache" copy
        # the inputs in the page cache, whatever the history's state (the
        # kernel may have reclaimed them since they were written)
        for a in "${args[@]}"; do [ -f "$a" ] && cat "$a" > /dev/null; done
        timed "$RS" "${args[@]}" --metrics m.prom > time.txt 2> err.txt ||
            { cat err.txt >&2; die "$name: ringshard ${args[*]} failed"; }
        read -r e u s < <(tail -n 1 time.txt)
        c+="$(awk -v u="$u" -v s="$s" 'BEGIN { print u + s }') " w+="$e "
        rc+="$(metric io_rchar_bytes m.prom) " rb+="$(metric io_read_bytes m.prom) "
        ix+="$(sed -n 's/.*history: \([0-9.]*\) \([kMGT]*\)B of key index read.*/\1 \2/p' err.txt |
               awk '{ m = $2 == "k" ? 1e3 : $2 == "M" ? 1e6 : $2 == "G" ? 1e9 : $2 == "T" ? 1e12 : 1; print $1 * m }') "
    done
    CPU[$name]=$(median "$c") WALL[$name]=$(median "$w") RCHAR[$name]=$(median "$rc") RBYTES[$name]=$(median "$rb")
    IDX[$name]=$(median "${ix:-0}")
    FB[$name]=$(metric history_filter_bytes m.prom) FP[$name]=$(metric history_filter_passes m.prom)
    cp err.txt "$name.err"
    note "  $name ($cache): CPU $c s; wall $w s; rchar $rc; read_bytes $rb"
}

mb() { awk -v x="$1" 'BEGIN { printf "%.1f", x / 1e6 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "-" }'; }

# ------------------------------------------------------- the nightly shape

# nightly_build DIR: the four histories under DIR (hist: 8 days, h19: the
# first 2, hist-c and h19-c compacted) and each day's sample, as far as
# they are not there yet.
nightly_build() {
    local dir=$1 k have=0
    mkdir -p "$dir/samples"
    [ -f "$dir/days" ] && have=$(cat "$dir/days")
    for ((k = have + 1; k <= 8; k++)); do
        note "appending day $k of 8 ($DAYROWS rows) to $dir/hist"
        "$GEN" --rows "$DAYROWS" --seed $((100 + k)) --newline-share 0 -o day.csv 2>/dev/null
        tail -n +2 day.csv | awk 'NR % 100 == 0' > "$dir/samples/$k.csv"
        "$RS" dedup --append --quiet "${ring[@]}" -o "$dir/hist" day.csv || die "day $k: the append failed"
        rm -f day.csv
        if [ "$k" = 2 ]; then
            rm -rf "$dir/h19"
            cp -al "$dir/hist" "$dir/h19"
        fi
        echo "$k" > "$dir/days"
    done
    for h in h19 hist; do
        [ -f "$dir/$h-c/manifest.json" ] && continue
        note "compacting a copy of $dir/$h"
        rm -rf "$dir/$h-c" "$dir/$h-c.tmp"
        cp -al "$dir/$h" "$dir/$h-c.tmp"
        "$RS" compact --quiet "$dir/$h-c.tmp" || die "compact of $h failed"
        mv "$dir/$h-c.tmp" "$dir/$h-c"
    done
}

# nightly_day FILE DAYS: the day of a history of DAYS days: 90 % fresh rows,
# 10 % rows of the history picked evenly from its days' samples.
nightly_day() {
    local file=$1 days=$2 held=$((NEWROWS / 10))
    [ -s "$file" ] && return
    { "$GEN" --rows $((NEWROWS - held)) --seed 1001 --newline-share 0 2>/dev/null
      for ((k = 1; k <= days; k++)); do cat "$DIR/samples/$k.csv"; done |
          awk -v m="$held" -v t=$((days * DAYROWS / 100)) 'NR * m > c * t && c < m { print; c++ }'; } > "$file.tmp"
    [ "$(($(wc -l < "$file.tmp") - 1))" = "$NEWROWS" ] || die "$file: not $NEWROWS rows"
    mv "$file.tmp" "$file"
}

# nightly_oracle HISTORY DAY ERR...: the summaries in ERR... against the
# rows kept, dropped as held and repeated, and the keys confirmed, that a
# Python set of DAY's keys marked from HISTORY's rows gives.
nightly_oracle() {
    python3 - "$@" <<'EOF'
import os, re, subprocess, sys
hist, day, errs = sys.argv[1], sys.argv[2], sys.argv[3:]
keys = {}
rows = 0
with open(day, "rb") as f:
    next(f)
    for line in f:
        k = line.split(b",", 1)[0]
        keys[k] = keys.get(k, 0) + 1
        rows += 1
held = set()
files = sorted(os.path.join(r, n) for r, _, fs in os.walk(hist) for n in fs if n.endswith(".csv.gz"))
hrows = 0
for i in range(0, len(files), 256):
    z = subprocess.Popen(["zcat"] + files[i:i + 256], stdout=subprocess.PIPE, bufsize=1 << 20)
    for line in z.stdout:
        k = line.split(b",", 1)[0]
        hrows += 1
        if k in keys:
            held.add(k)
    if z.wait() != 0:
        sys.exit("oracle: zcat failed")
want = {"kept": len(keys) - len(held), "in": rows, "held": sum(keys[k] for k in held),
        "repeats": sum(c - 1 for k, c in keys.items() if k not in held),
        "confirmed": sum(keys[k] for k in held)}   # a probe a row: each held row's key found once
print(f"oracle: {hrows} history lines (headers included), day {rows} rows, {len(keys)} distinct keys, "
      f"{len(held)} held: {want}", file=sys.stderr)
bad = 0
for e in errs:
    t = open(e).read()
    m = re.search(r"(\d+) new rows kept of (\d+); dropped: (\d+) whose key the history holds, (\d+) repeats", t)
    c = re.search(r"history keys: (\d+) new keys found", t)
    got = {"kept": int(m[1]), "in": int(m[2]), "held": int(m[3]), "repeats": int(m[4]),
           "confirmed": int(c[1])} if m and c else None
    if got != want:
        print(f"oracle: {e}: {got}, the recomputation {want}", file=sys.stderr)
        bad = 1
sys.exit(bad)
EOF
}

nightly() {
    DAYROWS=$(n 10000000) NEWROWS=$(n 1000000)
    DIR=$WORK/N$NODES-$DAYROWS
    ring=(--key bill_id --nodes "$NODES")
    note "$RUNS runs, scale $SCALE, $NODES nodes, in $DIR (load average $(cut -d' ' -f1-3 /proc/loadavg);" \
         "$(df -h --output=avail "$WORK" | tail -n 1 | tr -d ' ') free)"
    nightly_build "$DIR"
    nightly_day "day-19.csv" 2
    nightly_day "day-76.csv" 8
    local h c cache
    for h in 19 76; do
        for c in "" -c; do
            if [ "$h" = 19 ]; then SRC=$DIR/h19$c; else SRC=$DIR/hist$c; fi
            for cache in warm cold; do
                step "$h$c.$cache" "$cache" dedup --append -o COPY "day-$h.csv"
            done
        done
    done
    note "oracle at 19 M rows"
    nightly_oracle "$DIR/h19" day-19.csv 19.warm.err 19.cold.err 19-c.warm.err 19-c.cold.err ||
        die "the appends do not keep what the recomputation keeps"
    local cpu
    cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
    echo "$("$RS" --version), $cpu, $(nproc) cores; $NODES nodes; medians of $RUNS runs; load average at the end" \
         "$(cut -d' ' -f1-3 /proc/loadavg); scale $SCALE; day: $NEWROWS rows, 10 % of them held; histories" \
         "of days of $DAYROWS rows; oracle at 19 M: agrees."
    echo
    echo "| history | compacted | cache | CPU s | wall s | rchar MB | read_bytes MB | key index read MB | filters MB | keys passed | floor MB | read_bytes / floor |"
    echo "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    local k fl rows
    for h in 19 76; do
        rows=$(python3 "$here/tests/check_history.py" total "$([ $h = 19 ] && echo "$DIR/h19" || echo "$DIR/hist")")
        for c in "" -c; do
            for cache in warm cold; do
                k=$h$c.$cache
                fl=$(awk -v b="${FB[$k]:-0}" -v p="${FP[$k]:-0}" 'BEGIN { print b + 4096 * p }')
                echo "| $rows rows | $([ -n "$c" ] && echo yes || echo "no ($([ $h = 19 ] && echo 2 || echo 8) generations)") |" \
                     "$cache | ${CPU[$k]} | ${WALL[$k]} | $(mb "${RCHAR[$k]}") | $(mb "${RBYTES[$k]}") | $(mb "${IDX[$k]}") |" \
                     "$(mb "${FB[$k]:-0}") | ${FP[$k]:--} | $(mb "$fl") | $(ratio "${RBYTES[$k]}" "$fl") |"
            done
        done
    done
    echo
    for c in "" -c; do
        for cache in warm cold; do
            echo "76 M / 19 M ($([ -n "$c" ] && echo compacted || echo uncompacted), $cache): read_bytes" \
                 "$(ratio "${RBYTES[76$c.$cache]}" "${RBYTES[19$c.$cache]}"), rchar" \
                 "$(ratio "${RCHAR[76$c.$cache]}" "${RCHAR[19$c.$cache]}"), key index read" \
                 "$(ratio "${IDX[76$c.$cache]}" "${IDX[19$c.$cache]}"), CPU $(ratio "${CPU[76$c.$cache]}" "${CPU[19$c.$cache]}")."
        done
    done
}
if [ -n "$NODES" ]; then
    nightly
    exit 0
fi

day_rows=$(n 2000)
densities=(1000000 4000000 10000000)
note "$RUNS runs, scale $SCALE, in $WORK (load average $(cut -d' ' -f1-3 /proc/loadavg))"
for d in "${densities[@]}"; do
    hrows=$(n $((2 * d)))
    SRC=$(history "$hrows")
    day "day-$hrows.csv" "$day_rows" $((day_rows / 10)) "$hrows" 11
    for cache in warm cold; do
        step "$d.$cache" "$cache" dedup --append -o COPY "day-$hrows.csv"
    done
    idx=$(find "$SRC" -name '*.keyidx' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
    dat=$(find "$SRC" -name '*.csv.gz' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
    DISK[$d]="$idx $dat"
done
# the dense day at 1 M keys a bucket
hrows=$(n 2000000)
SRC=$WORK/H-$hrows
dense=$((hrows / 10))
day "dense-$hrows.csv" "$dense" $((dense / 10)) "$hrows" 13
step dense.warm warm dedup --append -o COPY "dense-$hrows.csv"
step dense.cold cold dedup --append -o COPY "dense-$hrows.csv"
# compact of the 1 M history appended in 5 parts
H5=$WORK/H5-$hrows
if [ ! -f "$H5/manifest.json" ]; then
    note "building $H5 (5 generations)"
    rm -rf "$H5"
    gen --rows "$hrows" --seed 7 -o hist.csv
    part=$((hrows / 5))
    for ((p = 0; p < 5; p++)); do
        { head -n 1 hist.csv; tail -n +2 hist.csv | sed -n "$((p * part + 1)),$(((p + 1) * part))p"; } > part.csv
        "$RS" dedup --append --quiet "${ring[@]}" -o "$H5" part.csv || die "building $H5 failed"
    done
    rm -f hist.csv part.csv
fi
SRC=$H5
step compact cold compact --quiet COPY

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
echo "$("$RS" --version), $cpu, $(nproc) cores; 2 nodes; medians of $RUNS runs; load average at the end" \
     "$(cut -d' ' -f1-3 /proc/loadavg); scale $SCALE; day: $day_rows rows, 10 % of them seen."
echo
echo "| case | history rows | cache | CPU s | wall s | rchar MB | read_bytes MB | key index read MB (summary) |"
echo "|---|---:|---|---:|---:|---:|---:|---:|"
row() {  # row KEY LABEL HISTORY-ROWS CACHE
    echo "| $2 | $3 | $4 | ${CPU[$1]} | ${WALL[$1]} | $(mb "${RCHAR[$1]}") | $(mb "${RBYTES[$1]}") | $(mb "${IDX[$1]}") |"
}
for d in "${densities[@]}"; do
    for cache in warm cold; do
        row "$d.$cache" "append $day_rows rows, $(n "$d") keys a bucket" "$(n $((2 * d)))" "$cache"
    done
done
for cache in warm cold; do
    row "dense.$cache" "append $dense rows (dense), $(n 1000000) keys a bucket" "$hrows" "$cache"
done
row compact "compact, 5 generations, $(n 1000000) keys a bucket" "$hrows" cold
echo
for cache in warm cold; do
    a=1000000.$cache b=4000000.$cache c=10000000.$cache
    echo "Ratios ($cache): 4M/1M CPU $(ratio "${CPU[$b]}" "${CPU[$a]}"), rchar $(ratio "${RCHAR[$b]}" "${RCHAR[$a]}"); " \
         "10M/4M CPU $(ratio "${CPU[$c]}" "${CPU[$b]}"), rchar $(ratio "${RCHAR[$c]}" "${RCHAR[$b]}")."
done
echo
echo "| history keys a bucket | key indexes MB | data (csv.gz) MB | indexes / data |"
echo "|---:|---:|---:|---:|"
for d in "${densities[@]}"; do
    read -r idx dat <<<"${DISK[$d]}"
    echo "| $(n "$d") | $(mb "$idx") | $(mb "$dat") | $(ratio "$idx" "$dat") |"
done
