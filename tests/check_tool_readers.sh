#!/usr/bin/env bash
# The recipes of docs/bucket.md ("Reading a bucket directory with other
# tools"), run as the page writes them (tests/check_tool_readers.py reads
# them from it) on three shapes of one bucket directory (ctest:
# tool_readers):
#   - fresh: one `bucket` run, no generation (a down node: a file with a
#     header and no row);
#   - grown: the same grown by three appends, one of them without a row for
#     node 7 (so no segment of node 7 in that generation);
#   - compacted: the grown one after `ringshard compact`.
# Each recipe must give exactly the rows of `ringshard cat` on the same
# directory: every row (`cat --all`), or node 7's in order. `ringshard cat`
# itself is first checked, node by node, against the file of a one-shot
# `bucket` of the same inputs, byte for byte.
# DuckDB: its Node.js package (@duckdb/node-api), installed by this script
# into the build directory once (a failed install fails the test); pandas:
# Debian's python3-pandas (tools/deps.sh), for the python3 on the PATH or
# /usr/bin/python3.
# Usage: tests/check_tool_readers.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
RS=${RINGSHARD_TEST_BINARY:-$build/ringshard}
DUCKDB_VERSION=1.5.6-r.1   # @duckdb/node-api: DuckDB 1.5 for Node.js, prebuilt binaries from npm
for t in node npm; do
    command -v $t > /dev/null || { echo "tool_readers: $t not found (tools/deps.sh installs it)" >&2; exit 1; }
done
py=
for p in python3 /usr/bin/python3; do
    if command -v "$p" > /dev/null && "$p" -c 'import pandas' 2> /dev/null; then py=$p; break; fi
done
[ -n "$py" ] || { echo "tool_readers: no python3 with pandas (tools/deps.sh installs python3-pandas)" >&2; exit 1; }

# DuckDB, once per build directory (a lock: ctest may run this twice at once)
duck=$build/tool_readers_node
mkdir -p "$duck"
(
    flock 9
    if [ ! -e "$duck/node_modules/@duckdb/node-api/package.json" ]; then
        cd "$duck" && npm install --no-audit --no-fund --loglevel=error "@duckdb/node-api@$DUCKDB_VERSION" > npm.log 2>&1 ||
            { cat npm.log >&2; echo "tool_readers: cannot install @duckdb/node-api from npm" >&2; exit 1; }
    fi
) 9> "$duck/.lock"

dir=$(mktemp -d "${RINGSHARD_TEST_TMPDIR:-${TMPDIR:-/tmp}}/tool_readers.XXXXXX")
trap 'rm -rf "$dir"' EXIT
cd "$dir"
gen=$build/gen_bills
"$gen" --rows 3000 --seed 1 --newline-share 0.01 -o a.csv 2> /dev/null
"$gen" --rows 2000 --seed 2 --newline-share 0.01 -o b.csv 2> /dev/null && gzip b.csv
"$gen" --rows 1000 --seed 3 --crlf -o c.csv 2> /dev/null
"$gen" --rows 1500 --seed 4 -o d.csv 2> /dev/null
ring=(--key bill_id --nodes 10 --down 9)
# an input whose rows all go to node 3: its generation has no segment of node 7
"$RS" bucket --quiet "${ring[@]}" -o only3 d.csv
"$RS" cat only3 3 > e.csv
mkdir fresh grown compacted
"$RS" bucket --quiet "${ring[@]}" -o fresh/buckets a.csv b.csv.gz
cp -r fresh/buckets grown/buckets
for f in c.csv e.csv d.csv; do "$RS" bucket --quiet --append -o grown/buckets "$f"; done
[ -d grown/buckets/g00000004 ] && [ -e grown/buckets/g00000002/7.csv.gz ] && [ ! -e grown/buckets/g00000003/7.csv.gz ] ||
    { echo "FAIL: grown/buckets: not 4 generations, g00000002 with node 7 and g00000003 without" >&2; exit 1; }
cp -r grown/buckets compacted/buckets
"$RS" compact --quiet compacted/buckets
[ ! -e compacted/buckets/g00000002 ] || { echo "FAIL: compacted/buckets still has generations" >&2; exit 1; }
"$RS" bucket --quiet "${ring[@]}" -o R a.csv b.csv.gz c.csv e.csv d.csv

# ringshard cat, the reference: each node's stream is the file of a one-shot
# run of the same inputs, byte for byte; --all the files one after the other
nodes=$(cd R && ls *.csv.gz | sed 's/\.csv\.gz$//' | sort -n)
first=$(echo $nodes | cut -d' ' -f1)
for shape in fresh grown compacted; do
    ref=R; [ $shape = fresh ] && ref=fresh/buckets
    for n in $nodes; do
        "$RS" cat $shape/buckets "$n" | cmp -s - <(gzip -dc "$ref/$n.csv.gz") ||
            { echo "FAIL: ringshard cat $shape/buckets $n differs from $ref/$n.csv.gz" >&2; exit 1; }
    done
    "$RS" cat --all $shape/buckets > $shape/all.csv
    for n in $(cd $shape/buckets && ls *.csv.gz | sed 's/\.csv\.gz$//'); do
        gzip -dc "$ref/$n.csv.gz" | if [ "$n" = "$first" ]; then cat; else tail -n +2; fi
    done | cmp -s - $shape/all.csv || { echo "FAIL: ringshard cat --all $shape/buckets differs from its files one after the other" >&2; exit 1; }
    "$RS" cat $shape/buckets 7 > $shape/node7.csv
done

NODE_PATH=$duck/node_modules "$py" "$src/tests/check_tool_readers.py" "$src/docs/bucket.md" "$dir/fresh" "$dir/grown" "$dir/compacted"
echo "tool_readers: the recipes of docs/bucket.md read a fresh, a grown and a compacted directory as ringshard cat does"
