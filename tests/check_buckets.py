#!/usr/bin/env python3
"""Independent check of a bucket directory against its inputs.

Usage: check_buckets.py RINGSHARD OUTDIR KEYCOL INPUT... [-- RING-OPTIONS...]

Parses the inputs and every output file with Python's csv module (not
ringshard's parser), asks `ringshard locate` where each key belongs, and
checks that:
  - every output file starts with the inputs' header;
  - every input row appears in exactly the file of its key's node, and
    nowhere else (no row lost, none duplicated);
  - within each file, rows keep their input order;
  - the manifest's per-file rows and CRC-32 (of the decompressed bytes after
    the header line) match the files, and its totals add up;
  - each file's size and the CRC-32 of its stored bytes (compressed, header
    included) are the manifest's file_bytes and stored_crc32.
Prints "ok <rows> rows in <files> files" and exits 0, or prints the first
difference and exits 1.
"""
import csv, gzip, io, json, os, subprocess, sys, zlib


def open_text(path):
    raw = sys.stdin.buffer.read() if path == "-" else open(path, "rb").read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return raw


def rows_of(raw):
    return list(csv.reader(io.StringIO(raw.decode("utf-8", "surrogateescape"), newline=""), strict=True))


def main():
    args = sys.argv[1:]
    ring_opts = []
    if "--" in args:
        i = args.index("--")
        args, ring_opts = args[:i], args[i + 1:]
    rs, outdir, keycol, inputs = args[0], args[1], args[2], args[3:]
    header, data = None, []
    for path in inputs:
        rows = [r for r in rows_of(open_text(path)) if r]
        if header is None:
            header = rows[0]
        elif rows[0] != header:
            return fail(f"{path}: header differs")
        data.extend(rows[1:])
    k = header.index(keycol) if keycol in header else int(keycol) - 1
    keys = sorted({r[k] for r in data})
    for key in keys:
        if "\n" in key or "\r" in key:
            return fail("checker cannot pass keys with line breaks to locate")
    out = subprocess.run([rs, "locate", "--no-header"] + ring_opts, input="\n".join(keys) + "\n",
                         capture_output=True, text=True, check=True).stdout
    owner = {}
    for line in out.splitlines():
        key, _, node = line.split("\t")
        owner[key.replace("\\t", "\t").replace("\\\\", "\\")] = node
    manifest = json.load(open(os.path.join(outdir, "manifest.json")))
    files = {f["node"]: f for f in manifest["files"]}
    expect = {}
    for r in data:
        expect.setdefault(owner[r[k]], []).append(r)
    total = 0
    listed = {f["file"] for f in manifest["files"]}
    present = set(os.listdir(outdir)) - {"manifest.json"}
    if listed != present:
        return fail(f"files listed {sorted(listed ^ present)[:5]} differ from files present")
    for node, f in files.items():
        raw = open_text(os.path.join(outdir, f["file"]))
        body = raw.split(b"\n", 1)[1] if header else raw
        got = rows_of(raw)
        if got[0] != header:
            return fail(f"{f['file']}: header {got[0]!r}")
        got = got[1:]
        want = expect.get(node, [])
        if got != want:
            return fail(f"{f['file']}: {len(got)} rows, expected {len(want)} (order or content differs)")
        if f["rows"] != len(got) or f["crc32"] != zlib.crc32(body) or f["bytes"] != len(body):
            return fail(f"{f['file']}: manifest rows/bytes/crc32 {f['rows']}/{f['bytes']}/{f['crc32']} vs "
                        f"{len(got)}/{len(body)}/{zlib.crc32(body)}")
        stored = open(os.path.join(outdir, f["file"]), "rb").read()
        if f["file_bytes"] != len(stored) or f.get("stored_crc32") != zlib.crc32(stored):
            return fail(f"{f['file']}: manifest file_bytes/stored_crc32 {f['file_bytes']}/{f.get('stored_crc32')} vs "
                        f"{len(stored)}/{zlib.crc32(stored)}")
        total += len(got)
    if total != len(data) or manifest["totals"]["rows"] != len(data):
        return fail(f"rows: {total} written, {len(data)} read, manifest {manifest['totals']['rows']}")
    print(f"ok {total} rows in {len(files)} files")
    return 0


def fail(msg):
    print("check_buckets: " + msg)
    return 1


if __name__ == "__main__":
    sys.exit(main())
