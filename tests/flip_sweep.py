#!/usr/bin/env python3
"""A bit flipped at many offsets of one file of a directory, a command run
on each damaged copy: tests/test_compact.c's sweeps.

    flip_sweep.py DIR FILE [options] -- COMMAND...

For each offset: bit 0 of the byte of DIR/FILE at that offset is inverted,
COMMAND runs (from the current directory), the bit is inverted back, and:
  - COMMAND exited with --exit (default 2);
  - its standard error names the file ("DIR/FILE: "), holds every
    --stderr-has string and no --stderr-lacks string;
  - DIR is again what it was before the sweep: the same entries, every
    file's bytes the same (CRC-32 and size), and nothing beside DIR whose
    name starts with "DIR.ringshard-" (a temporary left behind). A byte the
    command changed would stay changed once the flip is undone.
Prints one line per failed offset on standard output (nothing when all
pass) and fails when fewer than --least offsets were tried.

The offsets: every --head-step byte of the first 48 from --from, then
--points evenly spaced between (at least --min-step bytes apart, 97
unless told), then every
--tail-step byte of the last 12.

One process for the whole sweep: flipping with od and dd and listing the
tree with find and cksum cost about fifteen processes an offset, which made
these sweeps the longest part of the suite.
"""
import argparse
import os
import subprocess
import sys
import zlib


def tree(d):
    """Every entry under d with each file's size and CRC-32."""
    out = []
    for root, dirs, files in os.walk(d):
        dirs.sort()
        for name in sorted(files):
            p = os.path.join(root, name)
            with open(p, 'rb') as f:
                b = f.read()
            out.append((os.path.relpath(p, d), len(b), zlib.crc32(b)))
        out.extend((os.path.relpath(os.path.join(root, x), d), 'dir') for x in dirs)
    return sorted(out, key=repr)


def litter(d):
    parent = os.path.dirname(os.path.abspath(d))
    prefix = os.path.basename(os.path.abspath(d)) + '.ringshard-'
    return [x for x in os.listdir(parent) if x.startswith(prefix)]


def flip(path, off):
    with open(path, 'r+b') as f:
        f.seek(off)
        b = f.read(1)
        if len(b) != 1:
            raise SystemExit(f'{path}: no byte at {off}')
        f.seek(off)
        f.write(bytes([b[0] ^ 1]))


def offsets(size, start, head_step, points, tail_step, min_step):
    o = start
    step = max((size - start) // points, min_step)
    while o < size:
        yield o
        if o < start + 47:
            o += head_step
        elif o >= size - 13:
            o += tail_step
        elif o + step < size - 12:
            o += step
        else:
            o = size - 12


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('dir')
    ap.add_argument('file')
    ap.add_argument('--exit', type=int, default=2)
    ap.add_argument('--from', dest='start', type=int, default=0)
    ap.add_argument('--head-step', type=int, default=8)
    ap.add_argument('--points', type=int, default=6)
    ap.add_argument('--tail-step', type=int, default=4)
    ap.add_argument('--least', type=int, default=10)
    ap.add_argument('--min-step', type=int, default=97)
    ap.add_argument('--stderr-has', action='append', default=[])
    ap.add_argument('--stderr-lacks', action='append', default=[])
    argv = sys.argv[1:]
    if '--' not in argv or argv.index('--') == len(argv) - 1:
        ap.error('no command (after --)')
    cut = argv.index('--')
    a, cmd = ap.parse_args(argv[:cut]), argv[cut + 1:]
    path = os.path.join(a.dir, a.file)
    clean = tree(a.dir)
    name = f'{a.dir}/{a.file}: '
    n = 0
    for off in offsets(os.path.getsize(path), a.start, a.head_step, a.points, a.tail_step, a.min_step):
        n += 1
        flip(path, off)
        r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        flip(path, off)
        err = r.stderr.decode(errors='replace').strip()
        where = f'{a.file}@{off}'
        if r.returncode != a.exit:
            print(f'{where}: exit {r.returncode}, want {a.exit}: {err}')
        elif name not in err:
            print(f'{where}: {name.strip()} not named: {err}')
        elif any(s not in err for s in a.stderr_has) or any(s in err for s in a.stderr_lacks):
            print(f'{where}: want {a.stderr_has} and not {a.stderr_lacks} in: {err}')
        elif tree(a.dir) != clean or litter(a.dir):
            print(f'{where}: {a.dir} changed')
    if n < a.least:
        print(f'{a.file}: only {n} flips')


if __name__ == '__main__':
    sys.exit(main())
