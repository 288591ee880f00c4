#!/usr/bin/env python3
"""Runs the recipes of docs/bucket.md ("Reading a bucket directory with other
tools") as written there, and compares what each reads with `ringshard cat`.

Every fenced block of the page whose info string is `LANG recipe:all` or
`LANG recipe:node` is a recipe, run verbatim in each SHAPE directory (which
holds `buckets/`, the directory the recipes name, and `all.csv` and
`node7.csv`, the output of `ringshard cat --all buckets` and `ringshard cat
buckets 7`):
  - sql: one DuckDB query, through its Node.js package (NODE_PATH);
  - python: exec'd; its result is `df` (a pandas DataFrame) or `rows` (dicts
    from csv.DictReader), every field a string;
  - sh: run by bash; its standard output.
recipe:all must give the rows of all.csv (as a multiset), recipe:node the
rows of node7.csv in their order (sh: the same bytes). Every other block of
the section that names a tool must say that it is untested.
Usage: check_tool_readers.py DOC SHAPE_DIR...   (exit 0: every recipe matched)
"""
import collections
import csv
import io
import json
import os
import re
import subprocess
import sys

DUCKDB_JS = r"""
const { DuckDBInstance } = require('@duckdb/node-api');
(async () => {
    const db = await (await DuckDBInstance.create(':memory:')).connect();
    const reader = await db.runAndReadAll(process.env.RECIPE_SQL);
    process.stdout.write(JSON.stringify({ columns: reader.columnNames(), rows: reader.getRows() }));
})().catch((e) => { console.error(e.message); process.exitCode = 1; });
"""


def blocks(doc):
    """(info string, text) of each fenced block of the section on other tools."""
    text = open(doc, encoding='utf-8').read()
    m = re.search(r'^## Reading a bucket directory with other tools\n(.*?)(?=^## )', text, re.S | re.M)
    if not m:
        sys.exit(f'FAIL: {doc}: no section "Reading a bucket directory with other tools"')
    return re.findall(r'^```([^\n]*)\n(.*?)^```\n', m.group(1), re.S | re.M)


def csv_rows(data):
    """Header and rows of CSV text, parsed by Python's csv module (the reference)."""
    r = list(csv.reader(io.StringIO(data, newline='')))
    return tuple(r[0]), [tuple(x) for x in r[1:]]


def run_recipe(lang, code, shape):
    """The rows a recipe reads, as tuples of strings (sh: its output, as bytes)."""
    if lang == 'sql':
        out = subprocess.run(['node', '-e', DUCKDB_JS], cwd=shape, capture_output=True, text=True,
                             env=dict(os.environ, RECIPE_SQL=code))
        if out.returncode != 0:
            raise RuntimeError(out.stderr.strip())
        res = json.loads(out.stdout)
        # CSV has no NULL: DuckDB reads an empty unquoted field as one
        return tuple(res['columns']), [tuple('' if v is None else v for v in row) for row in res['rows']]
    if lang == 'python':
        ns = {}
        cwd = os.getcwd()
        os.chdir(shape)
        try:
            exec(compile(code, 'recipe', 'exec'), ns)
        finally:
            os.chdir(cwd)
        if 'df' in ns:
            df = ns['df']
            for col in df.columns:
                bad = [v for v in df[col] if not isinstance(v, str)]
                if bad:
                    raise RuntimeError(f'column {col}: {bad[0]!r} is not read as text')
            return tuple(df.columns), [tuple(x) for x in df.itertuples(index=False, name=None)]
        rows = ns['rows']
        header = tuple(rows[0].keys()) if rows else None
        return header, [tuple(d.values()) for d in rows]
    if lang == 'sh':
        out = subprocess.run(['bash', '-euo', 'pipefail', '-c', code], cwd=shape, capture_output=True)
        if out.returncode != 0 or out.stderr:
            raise RuntimeError(f'exit {out.returncode}: {out.stderr.decode(errors="replace").strip()}')
        return out.stdout
    raise RuntimeError(f'no runner for {lang}')


def main():
    doc, shapes = sys.argv[1], sys.argv[2:]
    recipes, failures = [], 0
    for info, code in blocks(doc):
        m = re.fullmatch(r'(\w+) recipe:(all|node)', info.strip())
        if m:
            recipes.append((m.group(1), m.group(2), code))
        elif re.search(r'duckdb|pandas|polars|spark|csv|zcat', code, re.I) and 'untested' not in code \
                and not code.lstrip().startswith('ringshard'):
            sys.exit(f'FAIL: {doc}: a block that is neither a recipe nor marked untested:\n{code}')
    kinds = collections.Counter((lang, what) for lang, what, _ in recipes)
    # the page's recipes: DuckDB, Python's csv and pandas for both, the shell for a node
    want = {('sql', 'all'): 1, ('sql', 'node'): 1, ('python', 'all'): 2, ('python', 'node'): 2, ('sh', 'node'): 1}
    if kinds != collections.Counter(want):
        sys.exit(f'FAIL: {doc}: recipes found {dict(kinds)}, expected {want}')
    for shape in shapes:
        raw = {w: open(os.path.join(shape, f), 'rb').read() for w, f in (('all', 'all.csv'), ('node', 'node7.csv'))}
        ref = {w: csv_rows(raw[w].decode('utf-8')) for w in raw}
        for lang, what, code in recipes:
            first = code.splitlines()[0]
            where = f'{os.path.basename(shape)}: {lang} {first}'
            try:
                got = run_recipe(lang, code, shape)
            except Exception as e:  # the recipe fails on this shape: that is what this test is for
                print(f'FAIL: {where}: {e}', file=sys.stderr)
                failures += 1
                continue
            if lang == 'sh':
                ok = got == raw[what]
                detail = f'{len(got)} bytes, `ringshard cat` wrote {len(raw[what])}'
            else:
                header, rows = got
                want_header, want_rows = ref[what]
                if what == 'all':
                    ok = collections.Counter(rows) == collections.Counter(want_rows)
                else:
                    ok = rows == want_rows
                ok = ok and (header is None or header == want_header)
                detail = f'{len(rows)} rows, `ringshard cat` {len(want_rows)}; header {header}'
            if not ok:
                print(f'FAIL: {where}: differs from ringshard cat ({detail})', file=sys.stderr)
                failures += 1
        print(f'tool_readers: {os.path.basename(shape)}: {len(recipes)} recipes run, '
              f'{len(ref["all"][1])} rows, {len(ref["node"][1])} of node 7')
    if failures:
        sys.exit(f'FAIL: {failures} recipe runs differ from ringshard cat')


if __name__ == '__main__':
    main()
