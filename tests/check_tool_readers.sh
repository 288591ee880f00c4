#!/usr/bin/env bash
# A bucket directory grown by three appends, read by the tools its users
# have, as docs/bucket.md ("Reading a bucket directory with other tools")
# shows them (ctest: tool_readers):
#   - DuckDB (its Node.js package, @duckdb/node-api, installed by this
#     script into the build directory once; a failed install fails the
#     test) over the glob DIR/**/*.csv.gz, and node by node over
#     [DIR/N.csv.gz, DIR/g*/N.csv.gz];
#   - Python's csv module, file by file, each file's first line its header;
#   - `ringshard cat`, node by node and --all.
# Each must give exactly the rows of the inputs, with their keys in the key
# column (compared as multisets, all fields as text), and node by node the
# rows of the same node's file in a one-shot `bucket` of all the inputs.
# Usage: tests/check_tool_readers.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
RS=${RINGSHARD_TEST_BINARY:-$build/ringshard}
DUCKDB_VERSION=1.5.6-r.1   # @duckdb/node-api: DuckDB 1.5 for Node.js, prebuilt binaries from npm
for t in node npm python3; do
    command -v $t > /dev/null || { echo "tool_readers: $t not found (tools/deps.sh installs it)" >&2; exit 1; }
done

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
"$RS" bucket --quiet --key bill_id --nodes 5 -o D a.csv
for f in b.csv.gz c.csv d.csv; do "$RS" bucket --quiet --append -o D "$f"; done
[ -d D/g00000004 ] || { echo "FAIL: D did not grow to 4 generations" >&2; exit 1; }
"$RS" bucket --quiet --key bill_id --nodes 5 -o R a.csv b.csv.gz c.csv d.csv
nodes=$(cd R && ls *.csv.gz | sed 's/\.csv\.gz$//')

NODE_PATH=$duck/node_modules node - $nodes <<'EOF'
const { DuckDBInstance } = require('@duckdb/node-api');
const opts = "header = true, all_varchar = true, delim = ',', quote = '\"', escape = '\"'";
const inputs = "['a.csv', 'b.csv.gz', 'c.csv', 'd.csv']";
(async () => {
    const db = await (await DuckDBInstance.create(':memory:')).connect();
    const one = async (sql) => (await (await db.run(sql)).getRows())[0];
    const fail = (what) => { console.error('FAIL: DuckDB: ' + what); process.exitCode = 1; };
    // the glob over every generation: every row once, its key in bill_id
    const [rows, keys] = await one(`SELECT count(*), count(bill_id) FROM read_csv('D/**/*.csv.gz', ${opts})`);
    if (rows !== 7500n || keys !== 7500n) fail(`D/**/*.csv.gz: ${rows} rows, ${keys} keys, 7500 expected`);
    const cols = (await one(`SELECT string_agg(column_name, ',') FROM (DESCRIBE SELECT * FROM read_csv('D/**/*.csv.gz', ${opts}))`))[0];
    if (cols !== 'bill_id,user_id,amount,currency,created_at,merchant,note') fail(`columns ${cols}`);
    for (const [a, b] of [[`read_csv('D/**/*.csv.gz', ${opts})`, `read_csv(${inputs}, ${opts})`]]) {
        const [x] = await one(`SELECT count(*) FROM (SELECT * FROM ${a} EXCEPT ALL SELECT * FROM ${b})`);
        const [y] = await one(`SELECT count(*) FROM (SELECT * FROM ${b} EXCEPT ALL SELECT * FROM ${a})`);
        if (x !== 0n || y !== 0n) fail(`the glob and the inputs differ: ${x} rows only in D, ${y} only in the inputs`);
    }
    // node by node: the base file and its segments, as the one-shot run's file
    for (const n of process.argv.slice(2)) {
        const a = `read_csv(['D/${n}.csv.gz', 'D/g*/${n}.csv.gz'], ${opts})`, b = `read_csv('R/${n}.csv.gz', ${opts})`;
        const [x] = await one(`SELECT count(*) FROM (SELECT * FROM ${a} EXCEPT ALL SELECT * FROM ${b})`);
        const [y] = await one(`SELECT count(*) FROM (SELECT * FROM ${b} EXCEPT ALL SELECT * FROM ${a})`);
        const [k] = await one(`SELECT count(*) FROM ${a} WHERE bill_id IS NULL`);
        if (x !== 0n || y !== 0n || k !== 0n) fail(`node ${n}: ${x} rows only in D, ${y} only in R, ${k} without a key`);
    }
})().catch((e) => { console.error('FAIL: DuckDB: ' + e.message); process.exitCode = 1; });
EOF

python3 - $nodes <<'EOF'
import collections, csv, glob, gzip, io, sys
def rows(path, want_header=True):
    opener = gzip.open if path.endswith('.gz') else open
    with opener(path, 'rt', newline='', encoding='utf-8') as f:
        r = list(csv.reader(f))
    if want_header and (not r or r[0] != HEADER):
        sys.exit(f'FAIL: Python csv: {path}: first line {r[0] if r else None}, not the header')
    return r[1:]
HEADER = 'bill_id,user_id,amount,currency,created_at,merchant,note'.split(',')
inputs = collections.Counter(tuple(x) for p in ['a.csv', 'b.csv.gz', 'c.csv', 'd.csv'] for x in rows(p))
files = sorted(glob.glob('D/**/*.csv.gz', recursive=True))
got = collections.Counter(tuple(x) for p in files for x in rows(p))
if got != inputs:
    sys.exit(f'FAIL: Python csv: the files of D hold {sum(got.values())} rows, not the inputs\' {sum(inputs.values())}')
for n in sys.argv[1:]:
    parts = [f'D/{n}.csv.gz'] + sorted(glob.glob(f'D/g*/{n}.csv.gz'))
    if collections.Counter(tuple(x) for p in parts for x in rows(p)) != collections.Counter(map(tuple, rows(f'R/{n}.csv.gz'))):
        sys.exit(f'FAIL: Python csv: node {n}: its files in D do not hold the rows of R/{n}.csv.gz')
EOF

# ringshard cat: each node's stream is the one-shot file's content, byte for byte
for n in $nodes; do
    "$RS" cat D "$n" | cmp -s - <(gzip -dc "R/$n.csv.gz") || { echo "FAIL: ringshard cat D $n differs from R/$n.csv.gz" >&2; exit 1; }
done
"$RS" cat --all D > all.csv
{ for n in $nodes; do gzip -dc "R/$n.csv.gz" | if [ "$n" = "$(echo $nodes | cut -d' ' -f1)" ]; then cat; else tail -n +2; fi; done; } |
    cmp -s - all.csv || { echo "FAIL: ringshard cat --all D differs from R's files one after the other" >&2; exit 1; }
echo "tool_readers: DuckDB, Python's csv and ringshard cat read D as one run's buckets"
