#!/usr/bin/env bash
# Checks that DuckDB reads ringshard's .csv.zst outputs whole (every frame,
# the metadata frames skipped): buckets generated rows with gzip and with
# zstd output and compares DuckDB's count(*) and sum(amount) of every bucket
# file across the two. Not part of the suite: it installs
# @duckdb/node-api from npm (the registry this machine reaches), as
# tools/bench/bench_bucket.sh does, into BUILD/duckdb-bench.
# Usage: tools/check/check_duckdb_zstd.sh [ROWS]   (BUILD=build, DUCKDB_VERSION=1.5.6-r.1)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROWS=${1:-300000}
BUILD=${BUILD:-build}
DUCKDB_VERSION=${DUCKDB_VERSION:-1.5.6-r.1}
DUCK_DIR=$(mkdir -p "$BUILD/duckdb-bench" && cd "$BUILD/duckdb-bench" && pwd)
if [ "$(cat "$DUCK_DIR/.version" 2>/dev/null)" != "$DUCKDB_VERSION" ]; then
  npm install --prefix "$DUCK_DIR" --no-audit --no-fund --loglevel=error "@duckdb/node-api@$DUCKDB_VERSION" >&2
  echo "$DUCKDB_VERSION" >"$DUCK_DIR/.version"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$BUILD/gen_bills" --rows "$ROWS" --seed 7 --newline-share 0.01 -o "$work/in.csv" 2>/dev/null
# small batches, hence many frames per file
"$BUILD/ringshard" bucket --quiet --key bill_id --nodes 4 --memory 32M -o "$work/g" "$work/in.csv"
"$BUILD/ringshard" bucket --quiet --key bill_id --nodes 4 --memory 32M --compress zstd -o "$work/z" "$work/in.csv"
cat >"$DUCK_DIR/sums.js" <<'JS'
// node sums.js FILE...: count(*) and sum(amount) of each CSV file, one line each.
const { DuckDBInstance } = require('@duckdb/node-api');
(async () => {
  const c = await (await DuckDBInstance.create(':memory:')).connect();
  for (const f of process.argv.slice(2)) {
    const r = await c.runAndReadAll(`SELECT count(*)::VARCHAR || ' ' || round(sum(amount), 2)::VARCHAR FROM read_csv('${f.replace(/'/g, "''")}', header = true)`);
    console.log(r.getRows()[0][0]);
  }
})().catch((e) => { console.error(e.message); process.exit(1); });
JS
(cd "$DUCK_DIR" && node sums.js "$work"/g/*.csv.gz) >"$work/g.txt"
(cd "$DUCK_DIR" && node sums.js "$work"/z/*.csv.zst) >"$work/z.txt"
frames=$(zstd -l "$work/z/0.csv.zst" | awk 'NR == 2 { print $1 }')
if cmp -s "$work/g.txt" "$work/z.txt" && [ "$(awk '{ n += $1 } END { print n }' "$work/z.txt")" = "$ROWS" ]; then
  echo "check_duckdb_zstd: DuckDB $DUCKDB_VERSION read every .csv.zst whole ($ROWS rows, $frames frames in 0.csv.zst): same counts and sums as gzip"
else
  paste "$work/g.txt" "$work/z.txt" >&2
  echo "check_duckdb_zstd: DuckDB's counts or sums differ (gzip left, zstd right)" >&2
  exit 1
fi
