#!/usr/bin/env python3
"""Independent check of the RS member headers of ringshard's gzip outputs.

Usage: check_members.py FILE...

Walks each file from member header to member header using only the RS
extra subfield (docs/format-data.md), and checks with Python's zlib that:
  - every member starts with 1f 8b 08, FLG FEXTRA, and carries an 'RS'
    subfield of version 1 with the record-boundary flag set;
  - its size is exactly the bytes one gzip member occupies (zlib stops
    there) and the chain ends exactly at the end of the file;
  - its lines field is the member's line ends (LF, and CR not followed by
    LF) and its records field is the CSV records Python's csv module reads
    in it;
  - its data is empty or ends with an LF outside quotes (even quote count):
    whole records, so that the next member does start at a record boundary
    as its flag says (readers cut units there, docs/format-data.md).
Prints "ok <members> members <lines> lines <records> records" and exits 0,
or prints the first problem and exits 1.
"""
import csv, io, struct, sys, zlib


def line_ends(b):
    return b.count(b"\n") + sum(1 for i in range(len(b)) if b[i:i + 1] == b"\r" and b[i + 1:i + 2] != b"\n")


def main():
    members = lines = records = 0
    for path in sys.argv[1:]:
        data = open(path, "rb").read()
        off = 0
        while off < len(data):
            h = data[off:off + 44]
            if h[:4] != b"\x1f\x8b\x08\x04":
                print(f"{path}: offset {off}: not a gzip header with FEXTRA: {h[:4].hex()}")
                return 1
            xlen = struct.unpack("<H", h[10:12])[0]
            extra = data[off + 12:off + 12 + xlen]
            at, rs = 0, None
            while at + 4 <= len(extra):
                si, ln = extra[at:at + 2], struct.unpack("<H", extra[at + 2:at + 4])[0]
                if si == b"RS":
                    rs = extra[at + 4:at + 4 + ln]
                at += 4 + ln
            if rs is None or len(rs) < 28 or rs[0] != 1 or not rs[1] & 1 or rs[2:4] != b"\0\0":
                print(f"{path}: offset {off}: no valid RS subfield: {extra.hex()}")
                return 1
            size, nl, nr = struct.unpack("<QQQ", rs[4:28])
            d = zlib.decompressobj(16 + 15)
            body = d.decompress(data[off:])
            used = len(data) - off - len(d.unused_data)
            if not d.eof or used != size:
                print(f"{path}: offset {off}: member is {used} bytes, header says {size}")
                return 1
            got_r = len(list(csv.reader(io.StringIO(body.decode("utf-8", "surrogateescape"), newline=""))))
            if line_ends(body) != nl or got_r != nr:
                print(f"{path}: offset {off}: {line_ends(body)} lines, {got_r} records; header says {nl}, {nr}")
                return 1
            if body and (body[-1:] != b"\n" or body.count(b'"') % 2):
                print(f"{path}: offset {off}: the member's data ends inside a record, not with a line end outside quotes")
                return 1
            members += 1
            lines += nl
            records += nr
            off += size
    print(f"ok {members} members {lines} lines {records} records")
    return 0


if __name__ == "__main__":
    sys.exit(main())
