#!/usr/bin/env python3
"""Independent check of a `ringshard dedup` output directory.

Usage: check_dedup.py OUTDIR first|last|row KEYCOL INPUT... [--dups FILE]

Reads the inputs with Python's csv, gzip modules (not ringshard's parser),
in the order given, and computes the expected survivors:
  first  the first copy of every key (inputs in order, rows in file order)
  last   the last copy of every key
  row    one copy of every distinct row (equal fields)
Then reads every output file listed in OUTDIR/manifest.json and checks:
  - every file starts with the inputs' header;
  - the output rows are exactly the expected survivors, each once (compared
    field by field);
  - within each file, survivors keep their input order;
  - the manifest's per-file rows and total match, and each file's size and
    the CRC-32 of its stored bytes its file_bytes and stored_crc32.
With --dups FILE, also checks the duplicates report: exactly the keys (rows)
with more than one copy, each with its count and (first/last) the kept row,
and their order: by output file (the manifest's order), then by the key's
first occurrence in the inputs (which is its first occurrence in its bucket
file, whatever the splitting).
Prints "ok <distinct> distinct of <rows> rows in <files> files" and exits 0,
or prints the first difference and exits 1.
"""
import csv, gzip, io, json, os, sys, zlib


def open_text(path):
    raw = open(path, "rb").read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return raw


def rows_of(raw):
    text = raw.decode("utf-8", "surrogateescape")
    return [r for r in csv.reader(io.StringIO(text, newline=""), strict=True) if r]


def unescape(s):
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            out.append({"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}[s[i + 1]])
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def fail(msg):
    print("FAIL", msg)
    return 1


def main():
    args = sys.argv[1:]
    dups = None
    if "--dups" in args:
        i = args.index("--dups")
        dups = args[i + 1]
        del args[i:i + 2]
    outdir, mode, keycol, inputs = args[0], args[1], args[2], args[3:]
    header, data = None, []
    for path in inputs:
        rows = rows_of(open_text(path))
        if header is None:
            header = rows[0]
        elif rows[0] != header:
            return fail(f"{path}: header differs")
        data.extend(rows[1:])
    k = header.index(keycol) if keycol in header else int(keycol) - 1
    ident = (lambda r: tuple(r)) if mode == "row" else (lambda r: r[k])
    winner, count, first = {}, {}, {}
    for i, r in enumerate(data):
        key = ident(r)
        count[key] = count.get(key, 0) + 1
        if key not in winner:
            first[key] = i
            winner[key] = i
        elif mode == "last":
            winner[key] = i
    expect = set(winner.values())

    manifest = json.load(open(os.path.join(outdir, "manifest.json")))
    seen, total, file_of = set(), 0, {}
    for fi, f in enumerate(manifest["files"]):
        rows = rows_of(open_text(os.path.join(outdir, f["file"])))
        if not rows or rows[0] != header:
            return fail(f"{f['file']}: header missing or different")
        rows = rows[1:]
        if len(rows) != f["rows"]:
            return fail(f"{f['file']}: {len(rows)} rows, manifest says {f['rows']}")
        stored = open(os.path.join(outdir, f["file"]), "rb").read()
        if f["file_bytes"] != len(stored) or f.get("stored_crc32") != zlib.crc32(stored):
            return fail(f"{f['file']}: manifest file_bytes/stored_crc32 {f['file_bytes']}/{f.get('stored_crc32')} "
                        f"vs {len(stored)}/{zlib.crc32(stored)}")
        last = -1
        for r in rows:
            key = ident(r)
            if key not in winner:
                return fail(f"{f['file']}: row {r} is not in the inputs")
            w = winner[key]
            if data[w] != r:
                return fail(f"{f['file']}: key {key!r}: kept {r}, expected {data[w]}")
            if w in seen:
                return fail(f"{f['file']}: key {key!r} kept twice")
            if w < last:
                return fail(f"{f['file']}: rows out of input order at key {key!r}")
            last = w
            seen.add(w)
            file_of[key] = fi
        total += len(rows)
    if seen != expect:
        return fail(f"{len(expect - seen)} survivors missing, e.g. {data[min(expect - seen)]}")
    if manifest["totals"]["rows"] != total:
        return fail(f"manifest total {manifest['totals']['rows']} != {total}")

    if dups is not None:
        want = {key: n for key, n in count.items() if n > 1}
        got, prev = {}, None
        for line in open(dups, encoding="utf-8", errors="surrogateescape", newline="\n"):
            parts = line.rstrip("\n").split("\t")
            if mode == "row":
                rec = rows_of(unescape(parts[0]).encode("utf-8", "surrogateescape"))
                key = tuple(rec[0])
            else:
                key = unescape(parts[0])
            if key in got:
                return fail(f"duplicates: {key!r} listed twice")
            if key in file_of:
                place = (file_of[key], first[key])
                if prev is not None and place < prev[0]:
                    return fail(f"duplicates: {key!r} (file {place[0]}, first row {place[1]}) listed after "
                                f"{prev[1]!r} (file {prev[0][0]}, first row {prev[0][1]}): not in "
                                "first-occurrence order")
                prev = (place, key)
            got[key] = int(parts[1])
            if got[key] != want.get(key):
                return fail(f"duplicates: {key!r} count {parts[1]}, expected {want.get(key)}")
            if mode != "row":
                kept = rows_of(unescape(parts[2]).encode("utf-8", "surrogateescape"))[0]
                if kept != data[winner[key]]:
                    return fail(f"duplicates: {key!r} kept {kept}, expected {data[winner[key]]}")
        if len(got) != len(want):
            return fail(f"duplicates: {len(got)} keys listed, expected {len(want)}")
    print(f"ok {total} distinct of {len(data)} rows in {len(manifest['files'])} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
