#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job - bucketing the
# bundled bill data with the default ring (1000 nodes x 200 virtual nodes) -
# then checks the result.
# Usage: tools/demo.sh            (the README's first command)
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh
BUILD=${BUILD:-build}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j"$(nproc)" --target ringshard
RS="$BUILD/ringshard"
OUT=${OUT:-out/demo}
mkdir -p "$(dirname "$OUT")"
echo "== ringshard bucket: fixtures/data/ -> $OUT (default ring)"
"$RS" bucket --key bill_id --force -o "$OUT" fixtures/data/bills_a.csv.gz fixtures/data/bills_b.csv.gz \
  fixtures/data/bills_c.csv
echo
echo "== ringshard verify $OUT"
"$RS" verify "$OUT"
echo
echo "== where two of the bill ids went"
"$RS" locate "$(gzip -dc fixtures/data/bills_a.csv.gz | sed -n 2p | cut -d, -f1)" CHONGQING
echo
echo "== the ring"
"$RS" ring
