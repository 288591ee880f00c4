#!/usr/bin/env python3
"""old_segments.py GENDIR - rewrites the generation directory GENDIR (the
newest of its bucket directory: nothing names its manifest's digest) as
versions before 0.2.0 wrote generations: each segment without its header
line (the first header_bytes of the file dropped, as stored), its
file_bytes so, and the manifest of schema 2 without segment_header and
header_bytes (and without stored_crc32, which those versions did not
write). What readers of older directories must still read."""
import json, os, sys

d = sys.argv[1]
path = os.path.join(d, "manifest.json")
m = json.load(open(path, encoding="utf-8", errors="surrogateescape"))
assert m["schema"] == 3 and m.pop("segment_header") is True
m["schema"] = 2
for f in m["files"]:
    skip = f.pop("header_bytes")
    f.pop("stored_crc32", None)
    name = os.path.join(d, f["file"])
    raw = open(name, "rb").read()[skip:]
    open(name, "wb").write(raw)
    f["file_bytes"] = len(raw)
text = json.dumps(m, indent=2, ensure_ascii=False)
open(path, "w", encoding="utf-8", errors="surrogateescape").write(text + "\n")
