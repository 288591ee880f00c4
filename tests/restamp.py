#!/usr/bin/env python3
"""restamp.py DIR FILE... - rewrites the manifest entries of DIR's FILEs to
what the files hold now (rows, bytes, crc32, crc32_hex, file_bytes,
stored_crc32 when the manifest has it, and the totals), so that a test can alter a bucket file and keep the counts
consistent: only placement is then wrong. Bytes are read exactly (gzip or
plain); the header line, when the manifest has one, is not data."""
import gzip, json, os, sys, zlib

d = sys.argv[1]
path = os.path.join(d, "manifest.json")
m = json.load(open(path, encoding="utf-8", errors="surrogateescape"))
for name in sys.argv[2:]:
    raw = open(os.path.join(d, name), "rb").read()
    data = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    if m["options"]["header"] and data:
        data = data[data.index(b"\n") + 1:]
    f = next(f for f in m["files"] if f["file"] == name)
    f["rows"] = data.count(b"\n")
    f["bytes"] = len(data)
    f["crc32"] = zlib.crc32(data)
    f["crc32_hex"] = "%08x" % f["crc32"]
    f["file_bytes"] = len(raw)
    if "stored_crc32" in f:
        f["stored_crc32"] = zlib.crc32(raw)
m["totals"]["rows"] = sum(f["rows"] for f in m["files"])
m["totals"]["bytes"] = sum(f["bytes"] for f in m["files"])
json.dump(m, open(path, "w"), indent=2)
