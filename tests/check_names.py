#!/usr/bin/env python3
"""Independent check of a bucket or move directory whose node names are
tricky (tests/test_names.c): where every row is and whose file it is in.

Usage: check_names.py RINGSHARD DIR all|first|moves KEYCOL INPUT... -- RING-OPTIONS... [-- NEW-RING-OPTIONS...]

Reads DIR/manifest.json and every generation's g<N>/manifest.json with
Python's json module, every file they list with Python's gzip and csv
modules (not ringshard's), and checks that:
  - no entry of a directory is listed twice, and no two of a directory's
    names (files, key indexes, manifest.json, g<N>) are equal after case
    folding: no two nodes share a file, also on a case-insensitive file
    system;
  - every listed file and key index exists;
  - each file starts with the inputs' header, and each of its rows' keys
    is placed by `ringshard locate` (RING-OPTIONS) on the file's node as
    the manifest names it (moves: on its "from" node by the old ring and
    its "to" node by NEW-RING-OPTIONS);
  - the multiset of the rows equals the inputs' (all), their first copy of
    each key (first), or, for moves, the input rows whose node changes;
  - (all, first) `ringshard cat DIR NODE`, node by node, gives that node's
    rows in the order of its files.
Prints "ok <rows> rows in <files> files of <nodes> nodes" and exits 0, or
the first difference and exits 1.
"""
import collections, csv, gzip, io, json, os, re, subprocess, sys


def rows_of(raw):
    return list(csv.reader(io.StringIO(raw.decode("utf-8", "surrogateescape"), newline=""), strict=True))


def read(path):
    raw = open(path, "rb").read()
    return gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw


def fail(msg):
    print("check_names: " + msg)
    return 1


def locate(rs, opts, keys):
    out = subprocess.run([rs, "locate", "--no-header"] + opts, input="\n".join(keys) + "\n",
                         capture_output=True, text=True, check=True).stdout
    owner = {}
    for line in out.splitlines():
        key, _, node = line.split("\t")
        owner[key] = node.replace("\\t", "\t").replace("\\\\", "\\")
    return owner


def main():
    args = sys.argv[1:]
    parts, cur = [[]], 0
    for a in args:
        if a == "--":
            parts.append([])
        else:
            parts[-1].append(a)
    rs, d, mode, keycol, inputs = parts[0][0], parts[0][1], parts[0][2], parts[0][3], parts[0][4:]
    ring, new_ring = parts[1], parts[2] if len(parts) > 2 else []
    header, data = None, []
    for path in inputs:
        rows = [r for r in rows_of(read(path)) if r]
        header = header or rows[0]
        data.extend(rows[1:])
    k = header.index(keycol)

    # the directories: the base, then every g<N>, in order
    dirs = [""] + sorted(e + "/" for e in os.listdir(d) if re.fullmatch(r"g\d{8}", e))
    listed = []   # (path, node or (from, to)) per data file, node by node in generation order
    for sub in dirs:
        m = json.load(open(os.path.join(d, sub, "manifest.json")))
        names = ["manifest.json"] + ([x[:-1] for x in dirs[1:]] if sub == "" else [])
        for f in m["files"]:
            names.append(f["file"])
            if f.get("index"):
                names.append(f["index"])
            listed.append((sub + f["file"], f.get("node") if mode != "moves" else (f["from"], f["to"])))
        names += [x["index"] for x in m.get("indexes", [])]
        folded = collections.Counter(n.lower() for n in names)
        twice = [n for n, c in folded.items() if c > 1]
        if twice:
            return fail(f"{d}/{sub}: {twice[0]!r} names {folded[twice[0]]} entries (case folded)")
        for n in names:
            if not os.path.exists(os.path.join(d, sub, n)):
                return fail(f"{d}/{sub}{n}: listed, missing")

    keys = sorted({r[k] for r in data})
    owner = locate(rs, ring, keys)
    new_owner = locate(rs, new_ring, keys) if mode == "moves" else None
    got, per_node = collections.Counter(), collections.defaultdict(list)
    for path, node in listed:
        rows = rows_of(read(os.path.join(d, path)))
        if rows[0] != header:
            return fail(f"{path}: header {rows[0]!r}")
        for r in rows[1:]:
            where = owner[r[k]] if mode != "moves" else (owner[r[k]], new_owner[r[k]])
            if where != node:
                return fail(f"{path}: key {r[k]} belongs to {where!r}, the file is {node!r}'s")
            got[tuple(r)] += 1
            per_node[node].append(r)
    if mode == "all":
        want = collections.Counter(tuple(r) for r in data)
    elif mode == "first":
        seen, want = set(), collections.Counter()
        for r in data:
            if r[k] not in seen:
                seen.add(r[k])
                want[tuple(r)] += 1
    else:
        want = collections.Counter(tuple(r) for r in data if owner[r[k]] != new_owner[r[k]])
    if got != want:
        return fail(f"rows: {sum(got.values())} in {d}, {sum(want.values())} expected; "
                    f"{sum((got - want).values())} extra, {sum((want - got).values())} missing")
    if mode != "moves":
        for node, rows in per_node.items():
            out = subprocess.run([rs, "cat", d, node], capture_output=True, check=True).stdout
            if rows_of(out) != [header] + rows:
                return fail(f"ringshard cat {d} {node!r}: not the rows of its files")
    print(f"ok {sum(got.values())} rows in {len(listed)} files of {len(per_node)} nodes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
