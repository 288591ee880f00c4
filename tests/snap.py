#!/usr/bin/env python3
"""The snapshot of a directory tree that every test suite compares, to tell
whether a run changed a directory: its tree (every path below it, with its
type) and every regular file's size and CRC-32, manifests (files whose name
ends in manifest.json) without their wall time, the lines holding
"seconds", which differ from run to run.

  snap.py DIR [raw | TEXT]
      Prints one digest line of DIR, or "absent" when there is no DIR.
      raw: the manifests byte for byte too; TEXT: the manifests' lines
      holding TEXT are left out as well (e.g. '"previous"').

  snap.py --test
      The helper's own test: what a snapshot sees and what it leaves out.

tests/append_lib.sh's `snap` runs this; tests/kill_sweep.py imports it.
It reads DIR in this one process (no process per file; a kill sweep takes
a snapshot after every kill) and never with ringshard, so that what it sees
does not depend on what is tested. It imports nothing but os, stat, sys and
zlib, so that a call costs little more than the interpreter's start.
"""
import os, stat, sys, zlib

SECONDS = b'"seconds"'


def _file(path, name, raw, drop):
    """A regular file's size and CRC-32, a manifest without its lines that
    hold "seconds" (or drop) unless raw."""
    with open(path, "rb") as f:
        data = f.read()
    if not raw and name.endswith("manifest.json"):
        data = b"\n".join(l for l in data.split(b"\n")
                          if SECONDS not in l and (drop is None or drop not in l))
    return zlib.crc32(data), len(data)


def snap(d, raw=False, drop=None):
    """DIR as a dict: each path below it (relative to DIR) to "dir", a
    symbolic link's ("link", target), another non-regular file's ("special",
    its type bits) or a regular file's (CRC-32, size), manifests as _file
    reads them (drop: bytes or str, lines holding it left out too). None
    when there is no DIR. Symbolic links are not followed."""
    if not os.path.lexists(d):
        return None
    if isinstance(drop, str):
        drop = drop.encode()
    out = {}
    for top, dirs, files in os.walk(d):
        for n in dirs + files:
            path = os.path.join(top, n)
            rel = os.path.relpath(path, d)
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = "dir"
            elif stat.S_ISREG(st.st_mode):
                out[rel] = _file(path, n, raw, drop)
            else:  # a FIFO or socket: opening it could block
                out[rel] = ("special", stat.S_IFMT(st.st_mode))
    return out


def digest(d, raw=False, drop=None):
    """snap(d, raw, drop) as one line: "absent", or a CRC-32 of every entry
    in path order with the number of entries."""
    s = snap(d, raw, drop)
    if s is None:
        return "absent"
    text = "\n".join(f"{k}\t{s[k]!r}" for k in sorted(s))
    return f"{zlib.crc32(text.encode(errors='surrogateescape')):08x} {len(s)}"


def self_test():
    """What a snapshot sees and what it leaves out: each case changes a
    fresh tree and must (or must not) change its digest."""
    import shutil, tempfile
    root = tempfile.mkdtemp(prefix="snap_test.")

    def tree():
        d = os.path.join(root, "D")
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(os.path.join(d, "g00000002"))
        for name, body in (("0.csv.gz", b"\x1f\x8bdata"), ("1.csv", b"a,b\n1,2\n"),
                           ("g00000002/0.csv.gz", b"\x1f\x8bmore")):
            with open(os.path.join(d, name), "wb") as f:
                f.write(body)
        for m in ("manifest.json", "g00000002/manifest.json"):
            with open(os.path.join(d, m), "wb") as f:
                f.write(b'{\n  "rows": 2,\n  "previous": "g00000001",\n  "seconds": 0.25\n}\n')
        return d

    def edit(rel, old, new):
        def do(d):
            p = os.path.join(d, rel)
            with open(p, "rb") as f:
                data = f.read()
            assert old in data, (rel, old)
            with open(p, "wb") as f:
                f.write(data.replace(old, new, 1))
        return do

    def write(rel, body):
        def do(d):
            with open(os.path.join(d, rel), "wb") as f:
                f.write(body)
        return do

    # (what, change, the arguments of digest, seen)
    cases = [
        ("nothing", lambda d: None, {}, False),
        ("a changed byte of a data file", edit("1.csv", b"2", b"3"), {}, True),
        ("a changed byte in a generation", edit("g00000002/0.csv.gz", b"more", b"mord"), {}, True),
        ("a byte appended", write("1.csv", b"a,b\n1,2\n\n"), {}, True),
        ("a new file", write("2.csv.gz", b""), {}, True),
        ("a new empty directory", lambda d: os.mkdir(os.path.join(d, "g00000003")), {}, True),
        ("a removed file", lambda d: os.remove(os.path.join(d, "0.csv.gz")), {}, True),
        ("a removed generation", lambda d: shutil.rmtree(os.path.join(d, "g00000002")), {}, True),
        ("a renamed file", lambda d: os.rename(os.path.join(d, "1.csv"), os.path.join(d, "3.csv")), {}, True),
        ("a symbolic link", lambda d: os.symlink("1.csv", os.path.join(d, "l.csv")), {}, True),
        ("a manifest's seconds", edit("manifest.json", b"0.25", b"9.75"), {}, False),
        ("a generation manifest's seconds", edit("g00000002/manifest.json", b"0.25", b"1"), {}, False),
        ("a manifest's seconds, raw", edit("manifest.json", b"0.25", b"9.75"), {"raw": True}, True),
        ("another manifest line", edit("manifest.json", b'"rows": 2', b'"rows": 3'), {}, True),
        ("a dropped manifest line", edit("manifest.json", b"g00000001", b"g00000007"),
         {"drop": '"previous"'}, False),
        ("a manifest line not dropped", edit("manifest.json", b"g00000001", b"g00000007"), {}, True),
        ("seconds in a data file", edit("1.csv", b"a,b", b'"seconds"'), {}, True),
    ]
    bad = []
    try:
        for what, change, kw, seen in cases:
            d = tree()
            before = digest(d, **kw)
            change(d)
            after = digest(d, **kw)
            if (before != after) != seen:
                bad.append(f"{what}: {'not seen' if seen else 'seen'} ({before} -> {after})")
        d = tree()
        if digest(d, raw=True) == digest(d):
            bad.append("raw and not raw give the same digest of a manifest with seconds")
        if digest(os.path.join(root, "nosuch")) != "absent":
            bad.append("no DIR: not \"absent\"")
        os.mkfifo(os.path.join(d, "fifo"))  # seen, and not opened (that would block)
        if snap(d)["fifo"][0] != "special":
            bad.append("a FIFO: not seen as one")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    for b in bad:
        print(f"snap.py --test: {b}", file=sys.stderr)
    if not bad:
        print(f"ok {len(cases) + 3} cases")
    return 1 if bad else 0


def main():
    args = sys.argv[1:]
    if args == ["--test"]:
        return self_test()
    if len(args) not in (1, 2) or not args[0]:
        print("usage: snap.py DIR [raw | TEXT] | snap.py --test", file=sys.stderr)
        return 64
    mode = args[1] if len(args) == 2 else None
    print(digest(args[0], raw=mode == "raw", drop=None if mode in (None, "raw") else mode))
    return 0


if __name__ == "__main__":
    sys.exit(main())
