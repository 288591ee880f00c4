#!/usr/bin/env python3
"""The rows of a bucket directory against the rows of CSV files.

usage: check_rows.py DIR [--first-by-key] CSV...

Reads DIR's files - the base files DIR/*.csv[.gz|.zst] and every
generation's segments DIR/g*/* - with Python's gzip, zstandard and csv
modules (not with ringshard), and the CSV files (plain, gzip or zstd; a
UTF-8 BOM and the header record dropped) likewise. Exit 0 when DIR's rows,
as a multiset of field tuples, are the CSVs' rows (--first-by-key: the
first row of each key, the first field, in the order the files are given:
what `dedup` keeps), and every file of DIR starts with the same header line,
byte for byte: the base's. Otherwise says what differs on stderr, exit 1.
"""
import collections
import csv
import glob
import gzip
import io
import os
import sys


def raw(path):
    with open(path, 'rb') as f:
        data = f.read()
    if data[:2] == b'\x1f\x8b':
        return gzip.decompress(data)  # every member
    if data[:4] == b'\x28\xb5\x2f\xfd':
        import zstandard
        return b''.join(zstandard.ZstdDecompressor().read_to_iter(io.BytesIO(data), read_across_frames=True))
    return data


def records(data):
    text = data.decode('utf-8')
    if text.startswith('\ufeff'):
        text = text[1:]
    return list(csv.reader(io.StringIO(text, newline='')))


def main(argv):
    first_by_key = '--first-by-key' in argv
    args = [a for a in argv if a != '--first-by-key']
    top, inputs = args[0], args[1:]
    want = collections.Counter()
    seen = set()
    for path in inputs:
        for row in records(raw(path))[1:]:
            if first_by_key:
                if row[0] in seen:
                    continue
                seen.add(row[0])
            want[tuple(row)] += 1
    files = sorted(p for p in glob.glob(os.path.join(top, '*')) if os.path.isfile(p) and
                   not p.endswith(('manifest.json', '.keyidx')))
    files += sorted(p for p in glob.glob(os.path.join(top, 'g*', '*')) if not p.endswith(('manifest.json', '.keyidx')))
    got = collections.Counter()
    header = None
    ok = True
    for path in files:
        data = raw(path)
        line = data[:data.find(b'\n') + 1]
        if header is None:
            header = line
        elif line != header:
            print('%s: starts with %r, the base with %r' % (path, line, header), file=sys.stderr)
            ok = False
        for row in records(data)[1:]:
            got[tuple(row)] += 1
    if got != want:
        extra, lost = got - want, want - got
        print('%s: %d rows (%d expected): %d not expected, %d missing; e.g. %r' %
              (top, sum(got.values()), sum(want.values()), sum(extra.values()), sum(lost.values()),
               next(iter(extra or lost))), file=sys.stderr)
        ok = False
    return 0 if ok and files else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
