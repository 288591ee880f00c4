#!/usr/bin/env bash
# Benchmarks `ringshard bucket` against igzip (the (de)compression floor), the
# output disk's write-and-fsync rate (the disk floor), a naive zcat | awk
# split and DuckDB's COPY ... PARTITION_BY, and zstd in and out
# against zstd itself (the zstd codec floor), and prints a Markdown table for
# docs/performance.md.
#
# Usage (from the repo root):  tools/bench/bench_bucket.sh [ROWS] [RUNS]
#   ROWS  data rows to generate (default 10000000)     RUNS  runs (default 3)
# Environment:
#   BUILD=build            build dir holding ringshard and gen_bills
#   WORK=/tmp/rs-bench     work dir (input cache, outputs, results)
#   RINGSHARD=$BUILD/ringshard   GEN=$BUILD/gen_bills   (override for testing)
#   SEED=1                 gen_bills --seed
#   RS_ARGS=""             extra arguments for ringshard bucket (e.g. "-j 2")
#   AWK_RUNS=1             how many runs also time the (slow) awk baseline
#   DUCKDB_RUNS=1          how many runs also time DuckDB (0: never); needs node
#                          and npm: @duckdb/node-api is installed into
#                          $BUILD/duckdb-bench on first use
#   DUCKDB_VERSION=1.5.6-r.1   the @duckdb/node-api version to install
#   DD_MB=1024             MiB written by the disk-rate steps (dd ... conv=fsync,
#                          through the page cache and with oflag=direct)
#   BUFFERED=1             also time ringshard gzip and --compress none with
#                          --direct-io off (0: skip)
#   TIMELINE=1             after the rounds, one more gzip and one more
#                          --compress none run each record their thread
#                          timeline (RINGSHARD_TIMELINE), summed up in the
#                          report by tools/bench/timeline.sh: where the cores
#                          waited (0: skip)
#   PERF=1                 profile ringshard gzip and --compress none under
#                          `perf record -F 999` (each run, as extra steps) for
#                          the CPU table: CPU seconds by library (ringshard's
#                          own code + libc, ISA-L, libgomp, kernel), minor
#                          faults and the top symbols (0: skip; skipped
#                          without perf)
#
# Each run times, interleaved: (a) igzip -dc, (b) igzip -1 of the decompressed
# CSV, (c) ringshard bucket (gzip output), (d) ringshard bucket --compress none,
# (e) the awk baseline (first AWK_RUNS runs only), (f) DuckDB (first
# DUCKDB_RUNS runs only), (g) dd of DD_MB MiB with conv=fsync into $WORK (the
# output file system's sustained write-and-fsync rate), and with zstd (the
# zstd CLI and a ringshard built with libzstd; ZSTD=0 skips it): (h) zstd -dc
# of the input as zstd -1 (bills.csv.zst, cached), (i) zstd -1 and (j)
# zstd --fast=3 of the CSV, (k) ringshard gzip in -> zstd out, (l) zstd in ->
# zstd out, (m) zstd in -> gzip out. Medians are reported, of the wall
# time and of the CPU seconds (user + system); the CPU budget table sets
# each ringshard step's CPU seconds against what its target leaves on these
# cores (target ratio x floor x cores).
# The disk floor of a step is the bytes it wrote over that rate.
# Every step writes into a directory of its own and all of them are kept
# until the end of the script, then deleted: ext4 avoids reusing inodes
# deleted in the last minute or more (recently_deleted), so deleting one
# run's 1000 files just before the next run creates its own would make that
# run pay for scanning past them.
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
DUCKDB_RUNS=${DUCKDB_RUNS:-1}
DUCKDB_VERSION=${DUCKDB_VERSION:-1.5.6-r.1}
DD_MB=${DD_MB:-1024}
ZSTD=${ZSTD:-1}
BUFFERED=${BUFFERED:-1}
PERF=${PERF:-1}
TIMELINE=${TIMELINE:-1}

TOOLS=$(cd "$(dirname "$0")" && pwd)
TAB=$'\t'
die() { echo "bench_bucket: $1" >&2; exit "${2:-1}"; }
note() { echo "bench_bucket: $*" >&2; }

[[ $ROWS =~ ^[0-9]+$ && $ROWS -gt 0 ]] || die "ROWS must be a positive integer (got '$ROWS')" 2
[[ $RUNS =~ ^[0-9]+$ && $RUNS -gt 0 ]] || die "RUNS must be a positive integer (got '$RUNS')" 2
[[ $AWK_RUNS =~ ^[0-9]+$ ]] || die "AWK_RUNS must be a non-negative integer" 2
[[ $DUCKDB_RUNS =~ ^[0-9]+$ ]] || die "DUCKDB_RUNS must be a non-negative integer" 2
[[ $DD_MB =~ ^[0-9]+$ && $DD_MB -gt 0 ]] || die "DD_MB must be a positive integer" 2
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
ZST=$WORK/bills.csv.zst
CSV=$WORK/bills.csv
META=$WORK/bills.meta
RUNS_DIR=$WORK/runs  # every step's output, kept until the end (see above)
DDTEST=$WORK/ddtest
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

# zstd: the CLI and a ringshard that writes it (a build with libzstd)
if [ "$ZSTD" = 1 ]; then
  if ! command -v zstd >/dev/null 2>&1; then
    ZSTD=0; note "zstd rows not run: zstd not found (tools/deps.sh installs it)"
  elif ! printf 'a\n1\n' | "$RINGSHARD" bucket --quiet --nodes 1 --compress zstd -o "$WORK/.zstd-probe" - 2>/dev/null; then
    ZSTD=0; note "zstd rows not run: $RINGSHARD has no zstd support"
  fi
  rm -rf "$WORK/.zstd-probe"
fi
ZST_BYTES=0
FAST_BYTES=0
if [ "$ZSTD" = 1 ]; then
  if [ ! -f "$ZST" ] || [ "$ZST" -ot "$CSV" ]; then
    note "compressing with zstd -1 ..."
    zstd -q -1 -c "$CSV" >"$ZST.tmp" || die "zstd -1 failed"
    mv "$ZST.tmp" "$ZST"
  fi
  ZST_BYTES=$(stat -c %s "$ZST")
  FAST_BYTES=$(zstd -q --fast=3 -c "$CSV" | wc -c)
  cat "$ZST" >/dev/null
fi
cat "$GZ" "$CSV" >/dev/null # warm the page cache

if [ -e "$RUNS_DIR" ] || [ -e "$DDTEST" ]; then
  note "deleting the outputs an earlier, interrupted benchmark left (the first run may pay for it)"
  rm -rf "$RUNS_DIR" "$DDTEST"
  sync
fi
mkdir -p "$RUNS_DIR"

# ---------------------------------------------------------------- DuckDB
# DuckDB has no Guava ring, so its rows go to hash(bill_id) % 1000: one hash
# of the key per row into 1000 partitions, the work ringshard's placement
# does, instead of a precomputed column that would spare DuckDB the hashing.
# all_varchar keeps the fields as text, as ringshard keeps their bytes (no
# type sniffing and re-formatting of numbers and dates).
DUCK_NOTE=""
DUCK_VER=""
if [ "$DUCKDB_RUNS" -gt 0 ]; then
  DUCK_DIR=$(mkdir -p "$BUILD/duckdb-bench" && cd "$BUILD/duckdb-bench" && pwd)
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    DUCK_NOTE="not run: node or npm not found"
  elif [ "$(cat "$DUCK_DIR/.version" 2>/dev/null)" != "$DUCKDB_VERSION" ] &&
    ! { note "installing @duckdb/node-api@$DUCKDB_VERSION into $DUCK_DIR ...";
        npm install --prefix "$DUCK_DIR" --no-audit --no-fund --loglevel=error \
          "@duckdb/node-api@$DUCKDB_VERSION" >&2 && echo "$DUCKDB_VERSION" >"$DUCK_DIR/.version"; }; then
    DUCK_NOTE="not run: npm install @duckdb/node-api@$DUCKDB_VERSION failed"
  fi
  if [ -z "$DUCK_NOTE" ]; then
    cat >"$DUCK_DIR/copy.js" <<'JS'
// node copy.js INPUT.csv.gz OUTDIR: DuckDB's 1000-way gzip PARTITION_BY.
const { DuckDBInstance } = require('@duckdb/node-api');
const [input, outdir] = process.argv.slice(2);
const q = (s) => "'" + s.replace(/'/g, "''") + "'";
(async () => {
  const db = await DuckDBInstance.create(':memory:');
  const con = await db.connect();
  await con.run('SET partitioned_write_max_open_files = 1000');
  await con.run(`COPY (SELECT *, hash(bill_id) % 1000 AS bucket
                       FROM read_csv(${q(input)}, header = true, all_varchar = true))
                 TO ${q(outdir)} (FORMAT csv, COMPRESSION gzip, PARTITION_BY (bucket))`);
})().catch((e) => { console.error(e.message || e); process.exit(1); });
JS
    DUCK_VER=$(node -p "require('$DUCK_DIR/node_modules/@duckdb/node-api/package.json').version" 2>/dev/null || echo "?")
  else
    note "DuckDB baseline $DUCK_NOTE"
  fi
fi

# ---------------------------------------------------------------- timing
declare -A TIMES=() RSS=() CPUS=() SYSS=()
HAVE_GNU_TIME=0
[ -x /usr/bin/time ] && HAVE_GNU_TIME=1
[ $HAVE_GNU_TIME = 1 ] || note "/usr/bin/time missing: wall time via \$EPOCHREALTIME, no peak RSS"

# timeit NAME CMD...: runs CMD (stdout as redirected by the caller), records
# wall seconds and peak RSS (KB); aborts the benchmark if CMD fails.
timeit() {
  local name=$1; shift
  local tf=$WORK/.time.$name rc=0 t m u s c=""
  if [ $HAVE_GNU_TIME = 1 ]; then
    /usr/bin/time -f '%e %M %U %S' -o "$tf" "$@" || rc=$?
    [ $rc -eq 0 ] || die "step '$name' failed (exit $rc): $*"
    read -r t m u s < <(tail -n 1 "$tf")
    c=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')
    CPUS[$name]+="$c "
    SYSS[$name]+="$s "
  else
    local t0=$EPOCHREALTIME
    "$@" || rc=$?
    [ $rc -eq 0 ] || die "step '$name' failed (exit $rc): $*"
    t=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.3f", b - a}')
    m=0
  fi
  TIMES[$name]+="$t "
  RSS[$name]+="$m "
  note "  $name: ${t}s ${m}KB${c:+ ${c} CPU-s}"
}

# The CPU table: perf's cpu-clock samples are faithful for user code (their
# count / 999 matches /usr/bin/time's user seconds) but miss much of the
# kernel's time on a virtual machine (parts that run with interrupts off),
# so a library's CPU seconds are its share of the user samples times the
# user seconds, and the kernel's are the system seconds. minor faults:
# /usr/bin/time's %R.
if [ "$PERF" = 1 ] && ! { command -v perf >/dev/null 2>&1 && perf record -q -F 999 -o "$WORK/.perf-probe" true 2>/dev/null; }; then
  PERF=0; note "CPU table not made: perf not found or not allowed (kernel.perf_event_paranoid)"
fi
rm -f "$WORK/.perf-probe"
declare -A PROF=()
# profileit NAME OUTDIR ARGS...: ringshard bucket under perf; appends the run's
# "own_libc isal gomp other sys faults total" and its top symbols to PROF.
profileit() {
  local name=$1 out=$2; shift 2
  local data=$WORK/.perf.$name tf=$WORK/.ptime.$name u s f
  perf record -q -F 999 -o "$data" -- /usr/bin/time -f '%U %S %R' -o "$tf" \
    "$RINGSHARD" bucket --key bill_id -o "$out" --quiet "$@" "$GZ" >/dev/null 2>&1 || die "step '$name' (perf) failed"
  read -r u s f < <(tail -n 1 "$tf")
  PROF[$name]+="$(perf report -i "$data" --sort dso,sym --stdio -F sample,dso,sym 2>/dev/null |
    awk -v u="$u" -v own="$(basename "$RINGSHARD")" -f "$TOOLS/perf_libs.awk" | sort -t "$TAB" -k1,1 -k3,3gr |
    awk -F "$TAB" -v u="$u" -v s="$s" -v f="$f" '
      $1 == "lib" { lib[$2] = $3 }
      $1 == "sym" && nsym < 6 { top = top sprintf(";%s %.3f", $2, $3); nsym++ }
      END { printf "%.3f %.3f %.3f %.3f %.2f %d %.2f%s\n", lib["own"] + lib["libc"], lib["isal"], lib["gomp"],
              lib["other"], s, f, u + s, top }')|"
  rm -f "$data" "$tf"
}

# shellcheck disable=SC2016,SC2089,SC2090 # literal awk program, passed as one argument
AWK_PROG='BEGIN { h = "0123456789abcdef" }
NR > 1 { k = 0; for (i = 1; i <= 5; i++) k = k * 16 + index(h, substr($1, i, 1)) - 1
         if (k < 0) k = -k; f = "awk_out/" (k % 1000) ".csv"; print > f }'
awk_split() { # DIR: zcat | awk 1000-way split on the bill_id prefix, into DIR/awk_out
  cd "$1" && zcat "$GZ" | awk -F, "$AWK_PROG"
}
export -f awk_split
# shellcheck disable=SC2090
export GZ AWK_PROG

# The metrics' "pipeline" phase is the row pipeline alone: the wall time less
# start-up and the final flush to disk (fsync of every file) and rename.
pipeline_seconds() { # NAME METRICS_FILE
  local t
  t=$(sed -n 's/^ringshard_phase_seconds{command="bucket",phase="pipeline"} *\([0-9.]*\).*/\1/p' "$2")
  [ -n "$t" ] || die "no pipeline phase in $2"
  TIMES[$1_pipe]+="$t "
}

# bytes_written NAME DIR: the bytes of every file under DIR, for the disk floor.
bytes_written() { BYTES[$1]+="$(find "$2" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }') "; }
declare -A BYTES=()

# Data files only (manifest.json is not one of the 1000).
nfiles() { find "$1" -type f ! -name manifest.json | wc -l; }

for run in $(seq 1 "$RUNS"); do
  note "run $run/$RUNS"
  rd=$RUNS_DIR/$run
  mkdir -p "$rd"
  sync  # no dirty pages of an earlier step may be flushed during the next one
  timeit igzip_dc igzip -dc "$GZ" >/dev/null
  timeit igzip_c1 igzip -1 -c "$CSV" >/dev/null

  # the output file system's sustained write-and-fsync rate (MB/s), through
  # the page cache and with O_DIRECT: the disk floor takes the faster
  timeit dd dd if=/dev/zero of="$DDTEST" bs=1M count="$DD_MB" conv=fsync status=none
  sync
  rm -f "$DDTEST"
  timeit dd_direct dd if=/dev/zero of="$DDTEST" bs=1M count="$DD_MB" oflag=direct conv=fsync status=none
  rm -f "$DDTEST"
  sync

  timeit rs_gzip "$RINGSHARD" bucket --key bill_id -o "$rd/gzip" --quiet --metrics "$rd/gzip.prom" "${rs_extra[@]}" "$GZ"
  n=$(nfiles "$rd/gzip"); [ "$n" -eq 1000 ] || note "  warning: ringshard wrote $n files, expected 1000"
  pipeline_seconds rs_gzip "$rd/gzip.prom"
  bytes_written rs_gzip "$rd/gzip"
  sync

  timeit rs_none "$RINGSHARD" bucket --key bill_id -o "$rd/none" --quiet --compress none --metrics "$rd/none.prom" \
    "${rs_extra[@]}" "$GZ"
  n=$(nfiles "$rd/none"); [ "$n" -eq 1000 ] || note "  warning: ringshard --compress none wrote $n files, expected 1000"
  pipeline_seconds rs_none "$rd/none.prom"
  bytes_written rs_none "$rd/none"
  sync

  if [ "$PERF" = 1 ]; then
    profileit rs_gzip "$rd/gzip_perf" "${rs_extra[@]}"
    sync
    profileit rs_none "$rd/none_perf" --compress none "${rs_extra[@]}"
    sync
    last=${PROF[rs_gzip]%|}
    note "  perf, gzip output: own+libc isal gomp other sys faults total: ${last##*|}"
  fi

  # the same two through the page cache (the A/B of direct I/O)
  if [ "$BUFFERED" = 1 ]; then
    timeit rs_gzip_buf "$RINGSHARD" bucket --key bill_id -o "$rd/gzip_buf" --quiet --direct-io off "${rs_extra[@]}" "$GZ"
    sync
    timeit rs_none_buf "$RINGSHARD" bucket --key bill_id -o "$rd/none_buf" --quiet --compress none --direct-io off \
      "${rs_extra[@]}" "$GZ"
    sync
  fi

  if [ "$ZSTD" = 1 ]; then
    timeit zstd_dc zstd -q -dc "$ZST" >/dev/null
    timeit zstd_c1 zstd -q -1 -c "$CSV" >/dev/null
    timeit zstd_fast zstd -q --fast=3 -c "$CSV" >/dev/null
    sync
    # gzip in -> zstd out, zstd in -> zstd out, zstd in -> gzip out
    for step in "rs_gz_zst $GZ zstd" "rs_zst_zst $ZST zstd" "rs_zst_gz $ZST gzip"; do
      read -r name in codec <<<"$step"
      timeit "$name" "$RINGSHARD" bucket --key bill_id -o "$rd/$name" --quiet --compress "$codec" "${rs_extra[@]}" "$in"
      n=$(nfiles "$rd/$name"); [ "$n" -eq 1000 ] || note "  warning: ringshard ($name) wrote $n files, expected 1000"
      bytes_written "$name" "$rd/$name"
      sync
    done
  fi

  if [ "$run" -le "$AWK_RUNS" ]; then
    mkdir -p "$rd/awk_out"
    # shellcheck disable=SC2016 # $0 is the inner shell's, the run directory
    timeit awk bash -o pipefail -c 'awk_split "$0"' "$rd"
    n=$(nfiles "$rd/awk_out"); [ "$n" -ge 1000 ] || note "  warning: awk baseline wrote $n files"
    sync
  fi

  if [ "$run" -le "$DUCKDB_RUNS" ] && [ -z "$DUCK_NOTE" ]; then
    timeit duckdb node "$DUCK_DIR/copy.js" "$GZ" "$rd/duckdb"
    n=$(nfiles "$rd/duckdb"); [ "$n" -ge 1000 ] || note "  warning: DuckDB wrote $n files, expected 1000"
    sync
  fi
done
if [ "$TIMELINE" = 1 ]; then
  note "timelines: one more gzip and one more --compress none run"
  for step in "gzip" "none --compress none"; do
    read -r name args <<<"$step"
    # shellcheck disable=SC2086 # $args is one option or none
    RINGSHARD_TIMELINE="$WORK/timeline_$name.tsv" "$RINGSHARD" bucket --key bill_id -o "$RUNS_DIR/timeline_$name" \
      --quiet $args "${rs_extra[@]}" "$GZ" || die "the timeline run ($name) failed"
    sync
  done
fi
note "deleting the runs' outputs"
rm -rf "$RUNS_DIR" "$DDTEST"
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
for k in igzip_dc igzip_c1 rs_gzip rs_none rs_gzip_buf rs_none_buf rs_gzip_pipe rs_none_pipe awk duckdb dd dd_direct \
  zstd_dc zstd_c1 zstd_fast rs_gz_zst rs_zst_zst rs_zst_gz; do MED[$k]=$(median "${TIMES[$k]:-}"); done
for k in rs_gzip rs_none rs_gz_zst rs_zst_zst rs_zst_gz; do MED[${k}_bytes]=$(median "${BYTES[$k]:-}"); done

cpu=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
igv=$(igzip --version 2>&1 | head -n 1 | awk '{ print $NF }')
awkv=$(awk -W version 2>/dev/null | head -n 1 || true)
[ -n "$awkv" ] || awkv=$(awk --version 2>/dev/null | head -n 1 || echo awk)
csv_mb=$(awk -v b="$CSV_BYTES" 'BEGIN { printf "%.1f", b / 1e6 }')
gz_mb=$(awk -v b="$GZ_BYTES" 'BEGIN { printf "%.1f", b / 1e6 }')
awk_n=$(count "${TIMES[awk]:-}")
duck_n=$(count "${TIMES[duckdb]:-}")

row() { # LABEL CMD KEY
  local t=${MED[$3]} m
  m=$(maxof "${RSS[$3]:-}")
  local rps mbs rss
  rps=$(awk -v r="$ROWS" -v t="$t" 'BEGIN { if (t == "" || t + 0 <= 0) print "n/a"; else printf "%.2f M", r / t / 1e6 }')
  mbs=$(awk -v b="$CSV_BYTES" -v t="$t" 'BEGIN { if (t == "" || t + 0 <= 0) print "n/a"; else printf "%.0f", b / t / 1e6 }')
  rss=$(awk -v m="$m" -v g="$HAVE_GNU_TIME" 'BEGIN { if (m == "" || g == 0) print "n/a"; else printf "%.1f", m / 1024 }')
  # shellcheck disable=SC2016
  printf '| %s | `%s` | %s | %s | %s | %s | %s |\n' "$1" "$2" "$(fmt "$t" "%.2f")" "$(fmt "$(median "${CPUS[$3]:-}")" "%.2f")" \
    "$rss" "$rps" "$mbs"
}

# budget_row LABEL STEP "BASELINES" TARGET_WALL: the CPU budget table's row.
budget_row() {
  local c codec=0 b cb n
  n=$(nproc)
  c=$(median "${CPUS[$2]:-}")
  for b in $3; do
    cb=$(median "${CPUS[$b]:-}")
    codec=$(awk -v a="$codec" -v b="$cb" 'BEGIN { print (b == "") ? "" : a + b }')
  done
  printf '| %s | %s | %s | %s | %s | %s |\n' "$1" "$(fmt "$c" "%.2f")" \
    "$(awk -v c="$c" -v n="$n" 'BEGIN { if (c == "") print "n/a"; else printf "%.2f", c / n }')" "$(fmt "$codec" "%.2f")" \
    "$(awk -v c="$c" -v k="$codec" 'BEGIN { if (c == "" || k == "") print "n/a"; else printf "%.2f", c - k }')" \
    "$(awk -v t="$4" -v n="$n" 'BEGIN { if (t == "") print "-"; else printf "%.2f", t * n }')"
}

# The disk floor: bytes written / the dd rate (bytes per second) of this run.
dd_fast=$(awk -v a="${MED[dd]}" -v b="${MED[dd_direct]}" 'BEGIN { if (b == "" || (a != "" && a + 0 < b + 0)) print a; else print b }')
dd_rate=$(awk -v t="$dd_fast" -v mb="$DD_MB" 'BEGIN { if (t == "" || t + 0 <= 0) print ""; else print mb * 1048576 / t }')
disk_floor() { awk -v b="$1" -v r="$dd_rate" 'BEGIN { if (b == "" || r == "") print ""; else printf "%.3f", b / r }'; }
max2() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "") print ""; else print (a + 0 > b + 0) ? a : b }'; }
codec_gz=$(awk -v a="${MED[igzip_dc]}" -v b="${MED[igzip_c1]}" 'BEGIN { print (a + b) / 2 }')
disk_gz=$(disk_floor "${MED[rs_gzip_bytes]}")
disk_none=$(disk_floor "${MED[rs_none_bytes]}")
r1d=$(ratio "${MED[rs_gzip]}" "$(max2 "$codec_gz" "$disk_gz")")
r2d=$(ratio "${MED[rs_none]}" "$(max2 "${MED[igzip_dc]}" "$disk_none")")
r4=$(ratio "${MED[duckdb]}" "${MED[rs_gzip]}")
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
  echo "\`BUILD=$BUILD tools/bench/bench_bucket.sh $ROWS $RUNS\`${RS_ARGS:+ (RS_ARGS=\"$RS_ARGS\")} on $(nproc) x ${cpu:-unknown CPU}, $(date -u +%Y-%m-%d)."
  echo "Input: $ROWS rows from \`gen_bills --rows $ROWS --seed $SEED\` (5% duplicate keys, 0.1% quoted newlines),"
  echo "$csv_mb MB CSV, $gz_mb MB as \`gzip -6\`. Ring: 1000 nodes x 200 vnodes (default), 1000 output files."
  echo "Median wall time of $RUNS interleaved runs (awk baseline: $awk_n run(s), DuckDB: $duck_n run(s)); peak RSS is the max over runs;"
  echo "rows/s and MB/s are of the uncompressed input. igzip $igv, $awkv."
  echo
  echo "| step | command | wall s | CPU s | peak RSS MB | rows/s | MB/s |"
  echo "|---|---|---:|---:|---:|---:|---:|"
  row "igzip -dc" "igzip -dc bills.csv.gz > /dev/null" igzip_dc
  row "igzip -1" "igzip -1 -c bills.csv > /dev/null" igzip_c1
  row "ringshard" "ringshard bucket --key bill_id -o out --quiet$rsx bills.csv.gz" rs_gzip
  row "ringshard, no compression" "ringshard bucket --key bill_id -o out --quiet --compress none$rsx bills.csv.gz" rs_none
  if [ -n "${MED[rs_none_buf]}" ]; then
    row "ringshard, page cache" "ringshard bucket --key bill_id -o out --quiet --direct-io off$rsx bills.csv.gz" rs_gzip_buf
    row "ringshard, no compression, page cache" "ringshard bucket ... --compress none --direct-io off$rsx bills.csv.gz" rs_none_buf
  fi
  if [ "$awk_n" -gt 0 ]; then
    row "awk baseline" "zcat bills.csv.gz \| awk -F, '...print > f' (1000 files)" awk
  fi
  if [ "$duck_n" -gt 0 ]; then
    row "DuckDB $DUCK_VER" "COPY (SELECT *, hash(bill_id) % 1000 AS bucket FROM read_csv(...)) TO 'dir' (FORMAT csv, COMPRESSION gzip, PARTITION_BY (bucket))" duckdb
  fi
  echo
  echo "Disk: \`dd if=/dev/zero of=WORK/ddtest bs=1M count=$DD_MB conv=fsync\` on the output file system, median"
  echo "$(fmt "${MED[dd]}" "%.2f") s through the page cache, $(fmt "${MED[dd_direct]}" "%.2f") s with \`oflag=direct\`; the faster, $(awk -v r="$dd_rate" 'BEGIN { if (r == "") print "n/a"; else printf "%.0f", r / 1e6 }') MB/s written and made durable, is the disk's rate. The disk floor of a step is the bytes it wrote over"
  echo "that rate: ringshard $(awk -v b="${MED[rs_gzip_bytes]}" 'BEGIN { printf "%.1f", b / 1e6 }') MB ($(fmt "$disk_gz" "%.2f") s), \`--compress none\` $(awk -v b="${MED[rs_none_bytes]}" 'BEGIN { printf "%.1f", b / 1e6 }') MB ($(fmt "$disk_none" "%.2f") s)."
  echo
  echo "| ratio | value | target | |"
  echo "|---|---:|---:|---|"
  echo "| T(ringshard) / ((T(igzip -dc) + T(igzip -1)) / 2) | $r1 | <= 1.35 (AVX2) | $(verdict "$r1" "<=" 1.35) |"
  echo "| T(ringshard --compress none) / T(igzip -dc) | $r2 | <= 1.3 | $(verdict "$r2" "<=" 1.3) |"
  echo "| T(ringshard) / max(codec floor above, disk floor) | $r1d | - | |"
  echo "| T(ringshard --compress none) / max(T(igzip -dc), disk floor) | $r2d | <= 1.3 | $(verdict "$r2d" "<=" 1.3) |"
  if [ "$awk_n" -gt 0 ]; then
    echo "| T(awk) / T(ringshard) | $r3 | >= 10 | $(verdict "$r3" ">=" 10) |"
  fi
  if [ "$duck_n" -gt 0 ]; then
    echo "| T(DuckDB) / T(ringshard) | $r4 | >= 10 | $(verdict "$r4" ">=" 10) |"
  elif [ -n "$DUCK_NOTE" ]; then
    echo "| T(DuckDB) / T(ringshard) | n/a | >= 10 | $DUCK_NOTE |"
  fi
  echo
  echo "Where the time goes: the manifest's \"seconds\" is the row pipeline alone; the rest of the wall"
  echo "time is start-up and publishing (every file fsync'd, then renamed), which the igzip baselines"
  echo "(writing to /dev/null) do not pay. Outputs are kept until the end of the benchmark (none is deleted"
  echo "between runs), so no run pays for the previous one's deletions."
  echo
  echo "| | ringshard | no compression |"
  echo "|---|---:|---:|"
  echo "| pipeline s (median) | $(fmt "${MED[rs_gzip_pipe]}" "%.2f") | $(fmt "${MED[rs_none_pipe]}" "%.2f") |"
  echo "| start-up + flush + publish s | $(awk -v a="${MED[rs_gzip]}" -v b="${MED[rs_gzip_pipe]}" 'BEGIN { printf "%.2f", a - b }') | $(awk -v a="${MED[rs_none]}" -v b="${MED[rs_none_pipe]}" 'BEGIN { printf "%.2f", a - b }') |"
  echo "| pipeline / its baseline | $r1p | $r2p |"
  if [ $HAVE_GNU_TIME = 1 ]; then
    echo
    echo "CPU budget: on $(nproc) cores a step cannot take less wall time than its CPU seconds / $(nproc); the codecs'"
    echo "own CPU seconds are the baselines' (the same work done by the reference tools); the rest is ringshard's own"
    echo "(CSV, hashing, ring, scatter, system calls, page faults). A target of R x the floor leaves R x floor x $(nproc) CPU s."
    echo
    echo "| step | CPU s | CPU s / $(nproc) cores | codecs' CPU s | the rest, CPU s | CPU s the target leaves |"
    echo "|---|---:|---:|---:|---:|---:|"
    budget_row "ringshard (gzip out)" rs_gzip "igzip_dc igzip_c1" "$(awk -v f="$codec_gz" 'BEGIN { print 1.6 * f }')"
    budget_row "ringshard --compress none" rs_none "igzip_dc" "$(awk -v f="$(max2 "${MED[igzip_dc]}" "$disk_none")" 'BEGIN { print 1.3 * f }')"
    if [ "$ZSTD" = 1 ]; then
      budget_row "ringshard, zstd in -> zstd out" rs_zst_zst "zstd_dc zstd_c1" \
        "$(awk -v a="${MED[zstd_dc]}" -v b="${MED[zstd_c1]}" 'BEGIN { print 1.5 * (a + b) / 2 }')"
      budget_row "ringshard, zstd in -> gzip out" rs_zst_gz "zstd_dc igzip_c1" ""
    fi
  fi
  if [ "$PERF" = 1 ]; then
    # medians of the profiled runs: field k of each "..." entry of PROF[name]
    pmed() { median "$(printf '%s' "${PROF[$1]}" | tr '|' '\n' | awk -v k="$2" 'NF { split($0, a, ";"); split(a[1], f, " "); print f[k] }')"; }
    ptop() { printf '%s' "${PROF[$1]}" | tr '|' '\n' | awk 'NF { print; exit }' | cut -d';' -f2- | sed 's/;/, /g'; }
    codec_cpu=$(awk -v a="$(median "${CPUS[igzip_dc]:-}")" -v b="$(median "${CPUS[igzip_c1]:-}")" 'BEGIN { print a + b }')
    echo
    echo "CPU by library, \`perf record -F 999\` of $(printf '%s' "${PROF[rs_gzip]}" | tr '|' '\n' | awk 'NF { n++ } END { print n + 0 }') extra run(s) of each (user code: its share of the"
    echo "user samples x the user seconds; kernel: the system seconds; minor faults: /usr/bin/time %R), medians."
    echo "The totals and the kernel's seconds are given for the timed runs too, and the target is judged on"
    echo "them: on a virtual machine perf's sampling is itself kernel work, and the profiled runs' system"
    echo "seconds ran higher than the timed runs' of the same rounds."
    echo
    echo "| | gzip output | \`--compress none\` | target |"
    echo "|---|---:|---:|---|"
    echo "| total CPU s, timed runs | $(fmt "$(median "${CPUS[rs_gzip]:-}")" "%.2f") | $(fmt "$(median "${CPUS[rs_none]:-}")" "%.2f") | gzip: <= codecs' $(fmt "$codec_cpu" "%.2f") + 2.5: $(verdict "$(median "${CPUS[rs_gzip]:-}")" "<=" "$(awk -v c="$codec_cpu" 'BEGIN { print c + 2.5 }')") |"
    echo "| kernel (system s), timed runs | $(fmt "$(median "${SYSS[rs_gzip]:-}")" "%.2f") | $(fmt "$(median "${SYSS[rs_none]:-}")" "%.2f") | |"
    echo "| total CPU s, profiled runs | $(fmt "$(pmed rs_gzip 7)" "%.2f") | $(fmt "$(pmed rs_none 7)" "%.2f") | |"
    echo "| ringshard's own code + libc | $(fmt "$(pmed rs_gzip 1)" "%.2f") | $(fmt "$(pmed rs_none 1)" "%.2f") | <= 1.2: $(verdict "$(pmed rs_gzip 1)" "<=" 1.2) / $(verdict "$(pmed rs_none 1)" "<=" 1.2) |"
    echo "| ISA-L (inflate, deflate, CRC) | $(fmt "$(pmed rs_gzip 2)" "%.2f") | $(fmt "$(pmed rs_none 2)" "%.2f") | |"
    echo "| libgomp | $(fmt "$(pmed rs_gzip 3)" "%.2f") | $(fmt "$(pmed rs_none 3)" "%.2f") | |"
    echo "| other libraries | $(fmt "$(pmed rs_gzip 4)" "%.2f") | $(fmt "$(pmed rs_none 4)" "%.2f") | |"
    echo "| kernel (system s), profiled runs | $(fmt "$(pmed rs_gzip 5)" "%.2f") | $(fmt "$(pmed rs_none 5)" "%.2f") | |"
    echo "| minor page faults | $(fmt "$(pmed rs_gzip 6)" "%.0f") | $(fmt "$(pmed rs_none 6)" "%.0f") | |"
    echo
    echo "Top symbols of own code + libc, CPU s (first profiled run): gzip output: $(ptop rs_gzip); plain: $(ptop rs_none)."
  fi
  if [ "$ZSTD" = 1 ]; then
    zv=$(zstd -V 2>&1 | sed -n 's/.*v\([0-9][0-9.]*\).*/\1/p' | head -n 1)
    mb() { awk -v b="$1" 'BEGIN { if (b == "") print "n/a"; else printf "%.1f", b / 1e6 }'; }
    # the zstd targets: zstd in -> gzip out gains at least the
    # difference of the inflate floors; zstd in -> zstd out within 1.5 x its
    # codec floor at level 1; peak RSS within --memory (1 GiB by default)
    codec_zst=$(awk -v a="${MED[zstd_dc]}" -v b="${MED[zstd_c1]}" 'BEGIN { print (a + b) / 2 }')
    gain=$(awk -v a="${MED[rs_gzip]}" -v b="${MED[rs_zst_gz]}" 'BEGIN { printf "%.3f", a - b }')
    floor_gain=$(awk -v a="${MED[igzip_dc]}" -v b="${MED[zstd_dc]}" 'BEGIN { printf "%.3f", a - b }')
    rz=$(ratio "${MED[rs_zst_zst]}" "$codec_zst")
    rss_zst=$(maxof "${RSS[rs_gz_zst]:-} ${RSS[rs_zst_zst]:-} ${RSS[rs_zst_gz]:-}")
    echo
    echo "zstd: zstd $zv; the zstd input is \`zstd -1\` of the CSV, $(mb "$ZST_BYTES") MB (\`zstd --fast=3\`: $(mb "$FAST_BYTES") MB);"
    echo "ringshard writes zstd at its default level 1. Output sizes are every file written (1000 files + manifest)."
    echo
    echo "| step | command | wall s | CPU s | peak RSS MB | rows/s | MB/s |"
    echo "|---|---|---:|---:|---:|---:|---:|"
    row "zstd -dc" "zstd -dc bills.csv.zst > /dev/null" zstd_dc
    row "zstd -1" "zstd -1 -c bills.csv > /dev/null" zstd_c1
    row "zstd --fast=3" "zstd --fast=3 -c bills.csv > /dev/null" zstd_fast
    row "ringshard, gzip in -> zstd out" "ringshard bucket --key bill_id -o out --quiet --compress zstd$rsx bills.csv.gz" rs_gz_zst
    row "ringshard, zstd in -> zstd out" "ringshard bucket --key bill_id -o out --quiet --compress zstd$rsx bills.csv.zst" rs_zst_zst
    row "ringshard, zstd in -> gzip out" "ringshard bucket --key bill_id -o out --quiet$rsx bills.csv.zst" rs_zst_gz
    echo
    echo "Output sizes: gzip out $(mb "${MED[rs_gzip_bytes]}") MB; gzip in -> zstd out $(mb "${MED[rs_gz_zst_bytes]}") MB; zstd in -> zstd out $(mb "${MED[rs_zst_zst_bytes]}") MB."
    echo
    echo "| ratio | value | target | |"
    echo "|---|---:|---:|---|"
    echo "| T(gzip in -> gzip out) - T(zstd in -> gzip out), s | $gain | >= T(igzip -dc) - T(zstd -dc) = $floor_gain | $(verdict "$gain" ">=" "$floor_gain") |"
    echo "| T(zstd in -> zstd out) / ((T(zstd -dc) + T(zstd -1)) / 2) | $rz | <= 1.5 | $(verdict "$rz" "<=" 1.5) |"
    echo "| peak RSS of the zstd runs, MB | $(awk -v m="$rss_zst" 'BEGIN { if (m == "") print "n/a"; else printf "%.1f", m / 1024 }') | <= 1024 (--memory 1G) | $(verdict "$(awk -v m="$rss_zst" 'BEGIN { if (m == "") print "n/a"; else printf "%.1f", m / 1024 }')" "<=" 1024) |"
  fi
  if [ "$TIMELINE" = 1 ]; then
    echo
    echo "Thread timelines of one more run each (\`RINGSHARD_TIMELINE=FILE\`, summed up by \`tools/bench/timeline.sh FILE\`):"
    echo "each stage's seconds over all threads, on a core, runnable but waiting for one, and asleep; the"
    echo "core-seconds no stage used, given to the stage that ran alone meanwhile."
    for name in gzip none; do
      echo
      echo '```'
      bash "$TOOLS/timeline.sh" "$WORK/timeline_$name.tsv" "$(nproc)" | sed "1s|.*|$name output: &|"
      echo '```'
    done
  fi
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
