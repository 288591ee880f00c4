#!/usr/bin/env python3
"""Gives the files of a directory of one generation the names that earlier
versions gave them (tests/test_names.c): a directory as they wrote it.

Usage: old_names.py DIR

Earlier versions kept the bytes [A-Za-z0-9._-] of a node name, wrote every
other byte as %XX (uppercase hex) and a leading '.' as %2E; the key index
was that name and ".keyidx". Every data file and key index DIR/manifest.json
lists is renamed so, and the manifest rewritten to list the new names (its
members otherwise as they were). Only a directory of one generation: the
digest chain of later generations would name the old manifest's bytes.
Prints each "old -> new" renaming.
"""
import json, os, sys

EXTS = (".csv.gz", ".csv.zst", ".csv")


def old_spelling(node):
    out = []
    for i, c in enumerate(node.encode()):
        ch = chr(c)
        keep = ch.isascii() and (ch.isalnum() or ch in "_-" or (ch == "." and i > 0))
        out.append(ch if keep else "%%%02X" % c)
    return "".join(out)


def main():
    d = sys.argv[1]
    if any(e.startswith("g") and e[1:].isdigit() for e in os.listdir(d)):
        print("old_names: the directory has generations")
        return 1
    path = os.path.join(d, "manifest.json")
    m = json.load(open(path))
    for f in m["files"]:
        ext = next(e for e in EXTS if f["file"].endswith(e))
        renames = [("file", old_spelling(f["node"]) + ext)]
        if f.get("index"):
            renames.append(("index", old_spelling(f["node"]) + ".keyidx"))
        for member, new in renames:
            if new != f[member]:
                os.rename(os.path.join(d, f[member]), os.path.join(d, new))
                print(f"{f[member]} -> {new}")
                f[member] = new
    with open(path + ".new", "w") as out:
        json.dump(m, out, indent=2, ensure_ascii=False)
        out.write("\n")
    os.rename(path + ".new", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
