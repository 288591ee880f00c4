#!/usr/bin/env python3
"""An independent recomputation of what a node change moves on the default
ring (scheme ring: MurmurHash3 x64_128 seed 0, the digest's first word with
bit 63 cleared, 200 points a node labelled "<node>&Node<i>", a position's
owner the first point at or above it, wrapping), for `ringshard plan` and
`ringshard simulate`. Python alone: its MurmurHash3 is check_history.py's.

Node sets are given as comma-separated names and ranges: "0-998,1000-1009".

  check_ring_moves.py guava FIXTURES
      Checks this ring against the Java/Guava known answers in FIXTURES
      (fixtures/vectors): every point of the 1000-node ring
      (seed004_ring_1000x200.tsv.gz), and the owner of each key of
      seed004_migration_sample.tsv.gz on "0-999" and on "0-999" without 17
      and 500.

  check_ring_moves.py arcs OLD NEW ARCS
      Checks that ARCS (`plan --arcs`: start end from to weight share) is
      exactly the diff of the two rings: the same (from, to) runs over the
      whole hash space, once adjacent runs of the same pair are joined.
      Prints the moved weight.

  check_ring_moves.py keys OLD NEW K
      Prints how many of the keys "0".."K-1" (simulate --key-pattern seq)
      have another owner on NEW than on OLD.

Exit 0, or 1 with the first difference on standard error.
"""
import bisect, gzip, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_history import murmur3_x64_128_h1  # noqa: E402

MASK = (1 << 63) - 1
SPACE = 1 << 63
VNODES = 200


def fail(msg):
    print("check_ring_moves: " + msg, file=sys.stderr)
    sys.exit(1)


def node_set(spec):
    names = []
    for item in spec.split(","):
        if "-" in item:
            a, b = item.split("-")
            names += [str(i) for i in range(int(a), int(b) + 1)]
        elif item:
            names.append(item)
    return names


def position(data):
    return murmur3_x64_128_h1(data, 0) & MASK


def ring(names, cache={}):
    """(sorted points, their owners): later nodes win collisions (TreeMap.put)."""
    points = {}
    for name in names:
        if name not in cache:
            cache[name] = [position(("%s&Node%d" % (name, i)).encode()) for i in range(VNODES)]
        for p in cache[name]:
            points[p] = name
    keys = sorted(points)
    return keys, [points[p] for p in keys]


def owner(r, pos):
    keys, owners = r
    i = bisect.bisect_left(keys, pos)
    return owners[i if i < len(keys) else 0]


def runs(cuts):
    """Joins adjacent runs of the same pair: [(start, end, from, to)] sorted."""
    out = []
    for start, end, a, b in cuts:
        if out and out[-1][1] == start and out[-1][2:] == (a, b):
            out[-1] = (out[-1][0], end, a, b)
        else:
            out.append((start, end, a, b))
    return out


def diff(old, new):
    """Every stretch [start, end) of the space whose owner changes, by name."""
    bounds = sorted(set(old[0]) | set(new[0]))
    cuts, start = [], 0
    for b in bounds + [SPACE - 1]:
        # positions start..b share their owners: the first points at or above b
        a, n = owner(old, b), owner(new, b)
        if a != n:
            cuts.append((start, b + 1, a, n))
        start = b + 1
        if start >= SPACE:
            break
    return runs(cuts)


def cmd_guava(fixtures):
    r = ring(node_set("0-999"))
    with gzip.open(os.path.join(fixtures, "seed004_ring_1000x200.tsv.gz"), "rt") as f:
        header = f.readline().rstrip("\n").split("\t")
        ip, inode = header.index("point"), header.index("node")
        want = [(int(c[ip]), c[inode]) for c in (line.rstrip("\n").split("\t") for line in f)]
    if list(zip(*r)) != want:
        fail("the 1000-node ring differs from seed004_ring_1000x200.tsv.gz")
    minus = ring([n for n in node_set("0-999") if n not in ("17", "500")])
    with gzip.open(os.path.join(fixtures, "seed004_migration_sample.tsv.gz"), "rt") as f:
        header = f.readline().rstrip("\n").split("\t")
        ih, i0, i1 = header.index("masked_hash"), header.index("node_1000"), header.index("node_1000_minus_17_500")
        rows = 0
        for line in f:
            c = line.rstrip("\n").split("\t")
            pos = int(c[ih])
            if owner(r, pos) != c[i0] or owner(minus, pos) != c[i1]:
                fail("sample row %d (position %d): owners differ" % (rows + 1, pos))
            rows += 1
    if rows != 5000:
        fail("%d sample rows, not 5000" % rows)
    print("ok")


def cmd_arcs(old_spec, new_spec, path):
    want = diff(ring(node_set(old_spec)), ring(node_set(new_spec)))
    got = []
    with open(path) as f:
        if f.readline().rstrip("\n").split("\t")[:4] != ["start", "end", "from", "to"]:
            fail("%s: not an arcs file" % path)
        for line in f:
            c = line.rstrip("\n").split("\t")
            got.append((int(c[0]), int(c[1]), c[2], c[3]))
    got = runs(got)
    if got != want:
        for k, (g, w) in enumerate(zip(got, want)):
            if g != w:
                fail("run %d: %s has %s, the recomputation %s" % (k, path, g, w))
        fail("%d runs in %s, %d recomputed" % (len(got), path, len(want)))
    print(sum(end - start for start, end, _, _ in want))


def cmd_keys(old_spec, new_spec, k):
    old, new = ring(node_set(old_spec)), ring(node_set(new_spec))
    moved = 0
    for i in range(k):
        pos = position(str(i).encode())
        moved += owner(old, pos) != owner(new, pos)
    print(moved)


def main():
    a = sys.argv[1:]
    if a[:1] == ["guava"] and len(a) == 2:
        cmd_guava(a[1])
    elif a[:1] == ["arcs"] and len(a) == 4:
        cmd_arcs(a[1], a[2], a[3])
    elif a[:1] == ["keys"] and len(a) == 4:
        cmd_keys(a[1], a[2], int(a[3]))
    else:
        fail("usage: see the top of this file")


if __name__ == "__main__":
    main()
