#!/usr/bin/env python3
"""Independent checks of a directory that `ringshard dedup --append` grows.

The checks read the inputs and the directory with Python alone (csv, gzip,
zlib, json and the zstd command; its own MurmurHash3), never with ringshard.

  check_history.py rows DIR MODE KEY RUN... [--sep C] [--dups FILE] [--since K]
      RUN is KIND:FILE[+FILE...], one per generation of DIR in order (the
      base first): KIND `bucket` keeps every row (a `bucket` run, or an
      append of bucket --append), `dedup` a row only if its key (MODE row:
      its bytes) is neither in an earlier generation nor earlier in this
      run. MODE: first (by key) or row. KEY: the key's 1-based column
      numbers, comma separated (a composite key is joined by --sep, '|').
      Checks that DIR holds exactly the rows kept, each once: every node's
      rows (its base file, then its segment in each generation, in order)
      in input order, byte for byte as the inputs hold them (a CR before
      the line end dropped), every key on one node only, the manifests'
      counts. With --dups, the report of the runs from the Kth (--since,
      default the last; one command with --commit-every makes several): one
      line per new row dropped, KEY TAB WHERE TAB ROW (escaped), WHERE g<N>
      (the oldest generation holding the key) or `repeat`, as a multiset.
      Prints "ok KEPT kept of ROWS rows; appended: K new rows kept of N;
      dropped: H whose key the history holds, R repeats", the counts of those
      runs in the words of dedup --append's summary.

  check_history.py indexes DIR MODE KEY [--sep C] [--bits N]
      Every key index DIR lists (files' "index", generations' "indexes"):
      its size and CRC-32 against the manifest, its header against the
      file it indexes, each run's fences, sorted fingerprints and offsets,
      every fingerprint MurmurHash3_x64_128(key, seed 0x6b657973) (low N
      bits), and its keys those of the file's rows (as a multiset). Prints
      "ok N indexes, E entries".

  check_history.py filters DIR MODE KEY GEN INPUT... [--sep C] [--bits N]
      What the append that made generation GEN of DIR from INPUT... had to
      read of the history's version-2 key indexes: prints "FILTER_BYTES
      PASSES CONFIRMED", the filters' size of the indexes of the nodes its
      new keys went to, the distinct new keys a filter line passes and
      the new rows whose key is held, summed over those indexes (dedup --append's metrics
      ringshard_history_filter_bytes, _filter_passes, _keys_confirmed).

  check_history.py same DIR REF
      Every node's parts in DIR (its base file, then its segment in each
      generation), decompressed one after the other, are REF's file of the
      node (a directory one run wrote), byte for byte.

  check_history.py total DIR
      The rows DIR holds, as its manifests say.

  check_history.py index FILE
      Reads one key index (either version) with this file's own reader:
      prints "entries N keys N crc C rewrite same|differs|-", C the CRC-32
      of its keys in order joined by |, and for version 2 whether writing
      its keys again from docs/format-keyidx.md gives the same bytes.

  check_history.py tamper DIR INDEX HOW
      Damages key index INDEX (a path under DIR) for verify to find:
      flip (a byte of its keys), swapkey (one key replaced by another, its
      fingerprint recomputed, the run sorted again, the header and the
      manifest's size and CRC-32 made right: only the keys' digest can
      tell), cut (its last 8 bytes cut off), cutfixed (cut, and the
      manifest's size and CRC-32 made right), remove.
"""
import collections, csv, gzip, io, json, os, struct, subprocess, sys, zlib

M64 = (1 << 64) - 1
C1, C2 = 0x87C37B91114253D5, 0x4CF5AD432745937F


def rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M64


def fmix(k):
    k ^= k >> 33
    k = (k * 0xFF51AFD7ED558CCD) & M64
    k ^= k >> 33
    k = (k * 0xC4CEB9FE1A85EC53) & M64
    return k ^ (k >> 33)


def murmur3_x64_128_h1(data, seed):
    """The first 64-bit word of MurmurHash3_x64_128 (Appleby's reference)."""
    return murmur3_x64_128(data, seed)[0]


def murmur3_x64_128(data, seed):
    """MurmurHash3_x64_128 (Appleby's reference): its two 64-bit words."""
    h1 = h2 = seed
    n = len(data) // 16
    for i in range(n):
        k1, k2 = struct.unpack_from("<QQ", data, 16 * i)
        k1 = (rotl((k1 * C1) & M64, 31) * C2) & M64
        h1 ^= k1
        h1 = (rotl(h1, 27) + h2) & M64
        h1 = (h1 * 5 + 0x52DCE729) & M64
        k2 = (rotl((k2 * C2) & M64, 33) * C1) & M64
        h2 ^= k2
        h2 = (rotl(h2, 31) + h1) & M64
        h2 = (h2 * 5 + 0x38495AB5) & M64
    tail = data[16 * n:]
    if len(tail) > 8:
        k2 = int.from_bytes(tail[8:], "little")
        h2 ^= (rotl((k2 * C2) & M64, 33) * C1) & M64
    if tail:
        k1 = int.from_bytes(tail[:8], "little")
        h1 ^= (rotl((k1 * C1) & M64, 31) * C2) & M64
    h1 ^= len(data)
    h2 ^= len(data)
    h1 = (h1 + h2) & M64
    h2 = (h2 + h1) & M64
    h1, h2 = fmix(h1), fmix(h2)
    h1 = (h1 + h2) & M64
    return h1, (h2 + h1) & M64


def fingerprint(key, bits):
    return murmur3_x64_128_h1(key, 0x6B657973) & ((1 << bits) - 1)


# ---------------------------------------------------------------- reading


def data_of(path):
    raw = open(path, "rb").read()
    if raw[:2] == b"\x1f\x8b":
        return gzip.decompress(raw)
    # a zstd frame, or a skippable one (ringshard's files start with one)
    if raw[:4] == b"\x28\xb5\x2f\xfd" or (raw[1:4] == b"\x2a\x4d\x18" and raw[0] & 0xF0 == 0x50):
        return subprocess.run(["zstd", "-dcq"], input=raw, stdout=subprocess.PIPE, check=True).stdout
    return raw


def records(data):
    """The records of CSV bytes: each its bytes (LF ends, quotes followed,
    a CR before the LF dropped)."""
    out, start, quoted = [], 0, False
    for i, c in enumerate(data):
        if c == 0x22:
            quoted = not quoted
        elif c == 0x0A and not quoted:
            rec = data[start:i]
            out.append(rec[:-1] if rec.endswith(b"\r") else rec)
            start = i + 1
    if start < len(data):
        out.append(data[start:])
    return [r for r in out if r]


class Keys:
    """A record's key: its KEY columns (1-based, comma separated) joined by
    sep, unquoted as Python's csv reads them; by row, its bytes."""

    def __init__(self, mode, key, sep):
        self.row = mode == "row"
        self.cols = [int(c) - 1 for c in key.split(",")]
        self.sep = sep.encode()

    def __call__(self, rec):
        if self.row:
            return rec
        text = rec.decode("utf-8", "surrogateescape")
        fields = next(csv.reader(io.StringIO(text, newline=""), strict=True))
        return self.sep.join(fields[c].encode("utf-8", "surrogateescape") for c in self.cols)


def input_rows(files):
    rows = []
    for path in files:
        recs = records(data_of(path))
        rows.extend(recs[1:])  # the header line
    return rows


def manifests(d):
    """The base manifest and every generation's, in order, each with the
    directory its files are in."""
    base = json.load(open(os.path.join(d, "manifest.json")))
    out = [(base, d)]
    g = base.get("generation", 1) + 1
    while os.path.isdir(os.path.join(d, "g%08d" % g)):
        gd = os.path.join(d, "g%08d" % g)
        out.append((json.load(open(os.path.join(gd, "manifest.json"))), gd))
        g += 1
    return out


def fail(msg):
    print("FAIL", msg)
    return 1


def unescape(s):
    out, i = bytearray(), 0
    while i < len(s):
        if s[i] == 0x5C and i + 1 < len(s):
            out += {0x5C: b"\\", 0x74: b"\t", 0x6E: b"\n", 0x72: b"\r"}[s[i + 1]]
            i += 2
        else:
            out.append(s[i])
            i += 1
    return bytes(out)


# ------------------------------------------------------------------- rows


def expected(runs, gens, ident):
    """The rows kept (in input order) and each run's dropped rows; run i is
    generation gens[i]."""
    kept, holder, dropped = [], {}, []
    for gen, (kind, files) in zip(gens, runs):
        seen = set()
        dropped.append([])
        for rec in input_rows(files):
            k = ident(rec)
            if kind == "dedup" and (k in holder or k in seen):
                dropped[-1].append((k, "g%08d" % holder[k] if k in holder else "repeat", rec))
                continue
            seen.add(k)
            kept.append(rec)
        for k in seen:
            holder.setdefault(k, gen)
    return kept, dropped


def check_rows(d, mode, key, sep, runs, dups, since):
    ident = Keys(mode, key, sep)
    ms = manifests(d)
    if len(ms) != len(runs):
        return fail(f"{d}: {len(ms)} generations, expected {len(runs)}")
    kept, dropped = expected(runs, [m.get("generation", 1) for m, _ in ms], ident)
    since = since or len(runs)
    dropped, new = sum(dropped[since - 1:], []), sum(len(input_rows(f)) for _, f in runs[since - 1:])
    places = collections.defaultdict(list)
    for i, rec in enumerate(kept):
        places[rec].append(i)
    for v in places.values():
        v.reverse()
    header = ms[0][0].get("options", {}).get("header", True)
    node_rows, node_of = collections.defaultdict(list), {}
    for gi, (m, gd) in enumerate(ms):
        n = 0
        for f in m["files"]:
            recs = records(data_of(os.path.join(gd, f["file"])))
            if (gi == 0 and header or m.get("segment_header")) and recs:
                recs = recs[1:]  # the header line (a segment's since 0.2.0)
            if len(recs) != f["rows"]:
                return fail(f"{gd}/{f['file']}: {len(recs)} rows, its manifest says {f['rows']}")
            n += len(recs)
            node_rows[f["node"]].extend(recs)
        if m["totals"]["rows"] != n:
            return fail(f"{gd}: manifest total {m['totals']['rows']} rows, its files hold {n}")
    got = 0
    for node, recs in node_rows.items():
        last = -1
        for rec in recs:
            if not places.get(rec):
                return fail(f"node {node}: row {rec!r} kept but not expected (or kept twice)")
            i = places[rec].pop()
            if i < last:
                return fail(f"node {node}: row {rec!r} out of input order")
            last = i
            k = ident(rec)
            if node_of.setdefault(k, node) != node:
                return fail(f"key {k!r} on nodes {node_of[k]} and {node}")
            got += 1
    missing = [r for r, v in places.items() if v]
    if missing:
        return fail(f"{len(kept) - got} expected rows missing, e.g. {missing[0]!r}")
    if dups is not None:
        want = collections.Counter(dropped)
        lines = open(dups, "rb").read().split(b"\n")
        if lines[-1] != b"":
            return fail(f"{dups}: does not end with a line end")
        have = collections.Counter()
        for line in lines[:-1]:
            parts = line.split(b"\t")
            if len(parts) != 3:
                return fail(f"{dups}: line {line!r}: not KEY TAB WHERE TAB ROW")
            have[(unescape(parts[0]), parts[1].decode(), unescape(parts[2]))] += 1
        if have != want:
            extra, lack = have - want, want - have
            return fail(f"{dups}: {sum(have.values())} lines, expected {sum(want.values())}; "
                        f"unexpected {list(extra)[:3]}, missing {list(lack)[:3]}")
    hist = sum(1 for x in dropped if x[1] != "repeat")
    print(f"ok {len(kept)} kept of {sum(len(input_rows(f)) for _, f in runs)} rows; appended: "
          f"{new - len(dropped)} new rows kept of {new}; dropped: {hist} whose key the history holds, "
          f"{len(dropped) - hist} repeats")
    return 0


# ---------------------------------------------------------------- indexes


def listed_indexes(d):
    """(index path, file path, file entry, generation dir) of every key
    index DIR lists."""
    ms = manifests(d)
    entries = {}
    for m, gd in ms:
        for f in m["files"]:
            entries[(m.get("generation", 1), f["file"])] = (f, gd)
    out = []
    for m, gd in ms:
        for f in m["files"]:
            if f.get("index"):
                out.append((os.path.join(gd, f["index"]), os.path.join(gd, f["file"]), f, f, gd, m))
        for x in m.get("indexes", []):
            f, fd = entries[(x["generation"], x["file"])]
            out.append((os.path.join(gd, x["index"]), os.path.join(fd, f["file"]), f, x, gd, m))
    return out, ms[0][0]


# Version 2 (RSKEYIX2), read and written from docs/format-keyidx.md alone.
V2_RANGE_KEYS, V2_FILTER_BITS, V2_LINE = 128, 10, 64


def v2_lines(n):
    return n * V2_FILTER_BITS // (8 * (V2_LINE - 4)) + 1


def v2_ranges(n):
    return n // V2_RANGE_KEYS + 1


def v2_part(fp, n, bits):
    return (fp * n) >> bits


def splitmix(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def v2_line_bits(fp):
    a = splitmix(fp)
    w = (a, splitmix(a ^ 0x9E3779B97F4A7C15))
    return [(((w[i // 4] >> (16 * (i % 4))) & 0xFFFF) * 480) >> 16 for i in range(6)]


def leb(v):
    out = bytearray()
    while True:
        out.append((v & 0x7F) | (0x80 if v > 0x7F else 0))
        v >>= 7
        if not v:
            return bytes(out)


def read_leb(buf, q):
    """The unsigned LEB128 at buf[q], and the offset after it."""
    v, sh = 0, 0
    while True:
        c = buf[q]
        q += 1
        v |= (c & 0x7F) << sh
        sh += 7
        if not c & 0x80:
            return v, q


def pack_bits(a):
    k = 1
    while (1 << k) < a:
        k += 1
    return k


def pack_keys(keys):
    """The PACKED payload of keys (docs/format-keyidx.md), or None when they do not
    share a length or have more than 64 byte values."""
    n = len(keys[0])
    alpha = sorted(set(b"".join(keys)))
    if n == 0 or any(len(k) != n for k in keys) or len(alpha) > 64:
        return None
    k, sym = pack_bits(len(alpha)), {c: i for i, c in enumerate(alpha)}
    out = bytearray([len(alpha)]) + bytes(alpha) + leb(n)
    for key in keys:
        v = 0
        for c in key:
            v = v << k | sym[c]
        pad = (-n * k) % 8
        out += (v << pad).to_bytes((n * k + pad) // 8, "big")
    return bytes(out)


def unpack_keys(pay, nk):
    a, q = pay[0], 1
    alpha = pay[q:q + a]
    q += a
    n, q = read_leb(pay, q)
    k = pack_bits(a)
    per = (n * k + 7) // 8
    assert a >= 1 and list(alpha) == sorted(set(alpha)) and n >= 1 and len(pay) == q + per * nk, "packed chunk"
    keys = []
    for i in range(nk):
        v = int.from_bytes(pay[q + i * per:q + (i + 1) * per], "big") >> (per * 8 - n * k)
        syms = [(v >> (k * (n - 1 - j))) & ((1 << k) - 1) for j in range(n)]
        assert all(s < a for s in syms), "packed symbol"
        keys.append(bytes(alpha[s] for s in syms))
    return keys


def chunk_keys(pay, stored, nk, rawlen, at):
    """The keys of a deflated (0) or stored (1) chunk."""
    body = pay if stored else zlib.decompress(pay, -15)
    assert len(body) == rawlen, f"chunk at {at}: raw size"
    lens, q = [], 0
    for _ in range(nk):
        v, q = read_leb(body, q)
        lens.append(v)
    assert q + sum(lens) == rawlen, f"chunk at {at}: lengths"
    ck = []
    for ln in lens:
        ck.append(body[q:q + ln])
        q += ln
    return ck


def parse_index_v2(raw):
    h = raw[:128]
    (magic, version, flags, entries, bits, range_keys, rows, nbytes, crc, filter_bits, lines, ranges, filter_at,
     table_at, chunks_at, chunks_bytes, key_bytes, nchunks, z1, hcrc) = struct.unpack("<8sIIQIIQQIIQQQQQQQQII", h)
    assert magic == b"RSKEYIX2" and version == 2 and z1 == 0 and hcrc == zlib.crc32(h[:124]), "header"
    assert (range_keys, filter_bits) == (V2_RANGE_KEYS, V2_FILTER_BITS), "geometry"
    assert lines == v2_lines(entries) and ranges == v2_ranges(entries), "lines, ranges"
    assert filter_at == 128 and table_at == 128 + 64 * lines and chunks_at == table_at + 12 * (ranges + 1), "regions"
    assert chunks_at + chunks_bytes == len(raw), "size"
    for i in range(lines):
        ln = raw[filter_at + 64 * i:filter_at + 64 * i + 64]
        assert struct.unpack_from("<I", ln, 60)[0] == zlib.crc32(ln[:60]), f"filter line {i} CRC"
    ents = [struct.unpack_from("<QI", raw, table_at + 12 * r) for r in range(ranges + 1)]
    assert all(c == zlib.crc32(struct.pack("<QQ", r, off)) for r, (off, c) in enumerate(ents)), "range table CRC"
    table = [off for off, _ in ents]
    assert table[0] == 0 and table[ranges] == chunks_bytes and list(table) == sorted(table), "range table"
    fps, keys, pos, starts, kb = [], [], 0, {}, 0
    while pos < chunks_bytes:
        at = chunks_at + pos
        ccrc, plen, rawlen, nk, stored, z, last = struct.unpack_from("<IIIHBBQ", raw, at)
        pay = raw[at + 24:at + 24 + plen]
        assert ccrc == zlib.crc32(pay, zlib.crc32(raw[at + 4:at + 24])), f"chunk at {at}: CRC"
        assert 1 <= nk <= 256 and z == 0 and stored in (0, 1, 2), f"chunk at {at}: header"
        if stored == 2:
            ck = unpack_keys(pay, nk)
            assert sum(len(k) for k in ck) == rawlen, f"chunk at {at}: raw size"
            lens = [len(k) for k in ck]
        else:
            ck = chunk_keys(pay, stored, nk, rawlen, at)
            lens = [len(k) for k in ck]
        cf = [fingerprint(k, bits) for k in ck]
        assert cf[-1] == last, f"chunk at {at}: last fingerprint"
        r = v2_part(cf[0], ranges, bits)
        assert all(v2_part(f, ranges, bits) == r for f in cf), f"chunk at {at}: spans ranges"
        starts.setdefault(r, pos)
        fps += cf
        keys += ck
        kb += sum(lens)
        pos += 24 + plen
    assert pos == chunks_bytes and len(keys) == entries and kb == key_bytes, "counts"
    want = [chunks_bytes] * (ranges + 1)
    for r in range(ranges - 1, -1, -1):
        want[r] = starts.get(r, want[r + 1])
    assert list(table) == want, "range table"
    for fp in fps:
        ln = raw[filter_at + 64 * v2_part(fp, lines, bits):][:60]
        assert all(ln[b >> 3] >> (b & 7) & 1 for b in v2_line_bits(fp)), "a key missing from its filter line"
    assert all(fps[i] <= fps[i + 1] for i in range(len(fps) - 1)), "fingerprints not sorted"
    return dict(flags=flags, entries=entries, bits=bits, rows=rows, bytes=nbytes, crc=crc), [(fps, keys)]


def write_index_v2(hd, ents):
    """A version-2 index of ents, (fingerprint, key) sorted, described by
    hd (a parsed header)."""
    n, bits = len(ents), hd["bits"]
    lines, ranges = v2_lines(n), v2_ranges(n)
    filt = [bytearray(64) for _ in range(lines)]
    groups = collections.defaultdict(list)
    for fp, k in ents:
        for b in v2_line_bits(fp):
            filt[v2_part(fp, lines, bits)][b >> 3] |= 1 << (b & 7)
        groups[v2_part(fp, ranges, bits)].append((fp, k))
    chunks, table, nchunks = bytearray(), [], 0
    for r in range(ranges):
        table.append(len(chunks))
        parts, part = [], []
        for fp, k in groups.get(r, []):
            # a chunk: 256 keys at most, 64 KiB of them (but for one longer key)
            if part and (len(part) == 256 or sum(len(x) for _, x in part) + len(k) > 65536):
                parts.append(part)
                part = []
            part.append((fp, k))
        for part in parts + ([part] if part else []):
            pk = pack_keys([k for _, k in part])
            if pk is not None:
                pay, rawlen, how = pk, sum(len(k) for _, k in part), 2
            else:
                body = b"".join(leb(len(k)) for _, k in part) + b"".join(k for _, k in part)
                c = zlib.compressobj(6, zlib.DEFLATED, -15, 8, zlib.Z_FILTERED)
                pay = c.compress(body) + c.flush()
                pay, how = (body, 1) if len(pay) >= len(body) else (pay, 0)
                rawlen = len(body)
            head = struct.pack("<IIHBBQ", len(pay), rawlen, len(part), how, 0, part[-1][0])
            chunks += struct.pack("<I", zlib.crc32(pay, zlib.crc32(head))) + head + pay
            nchunks += 1
    table.append(len(chunks))
    for ln in filt:
        struct.pack_into("<I", ln, 60, zlib.crc32(bytes(ln[:60])))
    table_at = 128 + 64 * lines
    chunks_at = table_at + 12 * (ranges + 1)
    h = bytearray(struct.pack("<8sIIQIIQQIIQQQQQQQQI", b"RSKEYIX2", 2, hd["flags"], n, bits, V2_RANGE_KEYS,
                              hd["rows"], hd["bytes"], hd["crc"], V2_FILTER_BITS, lines, ranges, 128, table_at,
                              chunks_at, len(chunks), sum(len(k) for _, k in ents), nchunks, 0))
    h += struct.pack("<I", zlib.crc32(bytes(h)))
    tab = b"".join(struct.pack("<QI", off, zlib.crc32(struct.pack("<QQ", r, off))) for r, off in enumerate(table))
    return bytes(h) + b"".join(bytes(x) for x in filt) + tab + bytes(chunks)


def parse_index(raw):
    if raw[:8] == b"RSKEYIX2":
        return parse_index_v2(raw)
    h = raw[:64]
    magic, version, flags, entries, bits, runs, rows, nbytes, crc, z1, hcrc, z2 = struct.unpack(
        "<8sIIQIIQQIIII", h)
    assert magic == b"RSKEYIX1" and version == 1 and z1 == 0 and z2 == 0, "header"
    assert hcrc == zlib.crc32(h[:56]), "header CRC"
    pos, out = 64, []
    for _ in range(runs):
        n, blocks, heap, zero = struct.unpack_from("<QQQQ", raw, pos)
        assert zero == 0 and blocks == (n + 511) // 512, "run header"
        pos += 32
        fences = struct.unpack_from("<%dQ" % blocks, raw, pos)
        pos += 8 * blocks
        fps = struct.unpack_from("<%dQ" % n, raw, pos)
        pos += 8 * n
        offs = struct.unpack_from("<%dQ" % (n + 1), raw, pos)
        pos += 8 * (n + 1)
        keys = [raw[pos + offs[i]:pos + offs[i + 1]] for i in range(n)]
        assert offs[0] == 0 and offs[n] == heap and all(offs[i] <= offs[i + 1] for i in range(n)), "offsets"
        pos += heap
        assert list(fences) == [fps[512 * b] for b in range(blocks)], "fences"
        assert all(fps[i] <= fps[i + 1] for i in range(n - 1)), "fingerprints not sorted"
        out.append((list(fps), keys))
    assert pos == len(raw), "size"
    assert sum(len(r[0]) for r in out) == entries, "entries"
    return dict(flags=flags, entries=entries, bits=bits, rows=rows, bytes=nbytes, crc=crc), out


def starts_with_header(d, fpath):
    """Whether data file fpath of DIR d starts with the header line: a base
    file does, a segment when its generation says so (segment_header)."""
    gd = os.path.dirname(fpath)
    return gd == d or json.load(open(os.path.join(gd, "manifest.json"))).get("segment_header", False)


def rows_of(path, header):
    """The decompressed bytes of path, without its first line when header."""
    data = data_of(path)
    return data[data.index(b"\n") + 1:] if header and data else data


def check_indexes(d, mode, key, sep, bits):
    ident = Keys(mode, key, sep)
    idx, base = listed_indexes(d)
    header = base.get("options", {}).get("header", True)
    total = 0
    for ipath, fpath, f, entry, gd, m in idx:
        raw = open(ipath, "rb").read()
        if len(raw) != entry["index_bytes"] or zlib.crc32(raw) != entry["index_crc32"]:
            return fail(f"{ipath}: size or CRC-32 not the manifest's")
        try:
            h, runs = parse_index(raw)
        except AssertionError as e:
            return fail(f"{ipath}: {e}")
        if (h["rows"], h["bytes"], h["crc"], h["entries"]) != (f["rows"], f["bytes"], f["crc32"], f["rows"]):
            return fail(f"{ipath}: header {h}, the file's manifest entry {f}")
        if h["flags"] != (1 if mode == "row" else 0) or h["bits"] != bits:
            return fail(f"{ipath}: flags {h['flags']}, {h['bits']} bits")
        recs = records(data_of(fpath))
        if header and starts_with_header(d, fpath) and recs:
            recs = recs[1:]
        want = collections.Counter(ident(r) for r in recs)
        have = collections.Counter()
        for fps, keys in runs:
            for fp, k in zip(fps, keys):
                if fingerprint(k, bits) != fp:
                    return fail(f"{ipath}: fingerprint {fp:x} is not that of key {k!r}")
                have[k] += 1
        if have != want:
            return fail(f"{ipath}: its keys are not those of {fpath}")
        total += h["entries"]
    print(f"ok {len(idx)} indexes, {total} entries")
    return 0


def check_filters(d, mode, key, sep, bits, gen, files):
    """What the append that made generation GEN of DIR from FILES had to read
    of the history's key indexes (version 2), from the format alone: the
    filters' size of the indexes it looked up in (those of the nodes its
    new keys went to: the node whose index holds a key, after the append),
    the distinct new keys a filter line passes in each index, and the new
    rows whose key an index holds (once for each entry of the key in it).
    Prints "FILTER_BYTES PASSES CONFIRMED"."""
    ident = Keys(mode, key, sep)
    new = collections.Counter(ident(r) for r in input_rows(files))
    idx, _ = listed_indexes(d)
    node_of, held = {}, []
    for ipath, _, f, _, _, m in idx:
        raw = open(ipath, "rb").read()
        _, runs = parse_index(raw)
        keys = collections.Counter(k for _, ks in runs for k in ks)
        for k in keys.keys() & new.keys():
            node_of[k] = f["node"]
        if m.get("generation", 1) < gen:
            held.append((f["node"], raw, keys))
    by_node = collections.defaultdict(set)
    for k in new:
        by_node[node_of[k]].add(k)
    fbytes = passes = confirmed = 0
    for node, raw, keys in held:
        entries, lines = struct.unpack_from("<Q", raw, 16)[0], struct.unpack_from("<Q", raw, 56)[0]
        if raw[:8] != b"RSKEYIX2" or not entries or not by_node[node]:
            continue
        fbytes += V2_LINE * lines
        for k in by_node[node]:
            fp = fingerprint(k, bits)
            ln = raw[128 + V2_LINE * v2_part(fp, lines, bits):][:60]
            passes += all(ln[b >> 3] >> (b & 7) & 1 for b in v2_line_bits(fp))
            confirmed += new[k] * keys[k]
    print(fbytes, passes, confirmed)
    return 0


def print_index(path):
    """One index file read on its own: its entries' count, the CRC-32 of
    its keys in order, and whether a rewrite from its keys alone is the
    same file byte for byte (version 2)."""
    raw = open(path, "rb").read()
    try:
        h, runs = parse_index(raw)
    except AssertionError as e:
        return fail(f"{path}: {e}")
    keys = [k for _, ks in runs for k in ks]
    same = "-"
    if raw[:8] == b"RSKEYIX2":
        same = "same" if write_index_v2(h, list(zip(runs[0][0], runs[0][1]))) == raw else "differs"
    print(f"entries {h['entries']} keys {len(keys)} crc {zlib.crc32(b'|'.join(keys)):08x} rewrite {same}")
    return 0


# ----------------------------------------------------------------- tamper


def tamper(d, index, how):
    idx, _ = listed_indexes(d)
    ipath = os.path.join(d, index)
    entry, m, gd = next((e, m, gd) for ip, _, _, e, gd, m in idx if os.path.samefile(ip, ipath))
    raw = bytearray(open(ipath, "rb").read())
    if how == "remove":
        os.unlink(ipath)
        return 0
    if how == "flip":
        raw[-1] ^= 0x01
    elif how in ("cut", "cutfixed"):
        raw = raw[:-8]
    elif how == "swapkey" and raw[:8] == b"RSKEYIX2":
        h, runs = parse_index(bytes(raw))
        fps, keys = runs[0]
        old = keys[0]
        new = old[:-1] + (b"0" if old[-1:] != b"0" else b"1")
        ents = sorted([(fp, k) for fp, k in zip(fps[1:], keys[1:])] + [(fingerprint(new, h["bits"]), new)],
                      key=lambda e: e[0])
        raw = bytearray(write_index_v2(h, ents))
    elif how == "swapkey":
        h, runs = parse_index(bytes(raw))
        fps, keys = runs[0]
        old = keys[0]
        new = old[:-1] + (b"0" if old[-1:] != b"0" else b"1")
        ents = sorted([(fp, k) for fp, k in zip(fps[1:], keys[1:])] + [(fingerprint(new, h["bits"]), new)],
                      key=lambda e: e[0])
        body = bytearray(struct.pack("<QQQQ", len(ents), (len(ents) + 511) // 512, sum(len(k) for _, k in ents), 0))
        body += b"".join(struct.pack("<Q", ents[i][0]) for i in range(0, len(ents), 512))
        body += b"".join(struct.pack("<Q", fp) for fp, _ in ents)
        off = 0
        for _, k in ents:
            body += struct.pack("<Q", off)
            off += len(k)
        body += struct.pack("<Q", off) + b"".join(k for _, k in ents)
        assert len(runs) == 1
        raw = raw[:64] + body
        struct.pack_into("<I", raw, 56, zlib.crc32(bytes(raw[:56])))
    open(ipath, "wb").write(raw)
    if how in ("swapkey", "cutfixed"):
        entry["index_bytes"] = len(raw)
        entry["index_crc32"] = zlib.crc32(bytes(raw))
        json.dump(m, open(os.path.join(gd, "manifest.json"), "w"), indent=2)
    return 0


# ------------------------------------------------------------------- same


def check_same(d, ref):
    """Every node's parts in DIR (its base file, then its segment in each
    generation) hold, decompressed and concatenated, REF's file of that
    node byte for byte; DIR has no file REF lacks."""
    ms = manifests(d)
    names = {f["file"] for m, _ in ms for f in m["files"]}
    ref_files = [f["file"] for f in json.load(open(os.path.join(ref, "manifest.json")))["files"]]
    if names - set(ref_files):
        return fail(f"{d}: files {sorted(names - set(ref_files))} that {ref} lacks")
    for name in ref_files:
        got = b"".join(rows_of(os.path.join(gd, name), gi > 0 and m.get("segment_header"))
                       for gi, (m, gd) in enumerate(ms) if os.path.exists(os.path.join(gd, name)))
        if got != data_of(os.path.join(ref, name)):
            return fail(f"{d}: node file {name} and its segments differ from {ref}/{name}")
    print(f"ok {len(ref_files)} nodes")
    return 0


def main():
    args = sys.argv[1:]

    def opt(name, default):
        if name in args:
            i = args.index(name)
            v = args[i + 1]
            del args[i:i + 2]
            return v
        return default

    sep, dups, bits, since = opt("--sep", "|"), opt("--dups", None), int(opt("--bits", "64")), int(opt("--since", "0"))
    cmd = args.pop(0)
    if cmd == "rows":
        d, mode, key = args[:3]
        runs = [(r.split(":", 1)[0], r.split(":", 1)[1].split("+")) for r in args[3:]]
        return check_rows(d, mode, key, sep, runs, dups, since)
    if cmd == "indexes":
        return check_indexes(args[0], args[1], args[2], sep, bits)
    if cmd == "filters":
        return check_filters(args[0], args[1], args[2], sep, bits, int(args[3]), args[4:])
    if cmd == "index":
        return print_index(args[0])
    if cmd == "tamper":
        return tamper(*args)
    if cmd == "same":
        return check_same(*args)
    if cmd == "total":
        print(sum(m["totals"]["rows"] for m, _ in manifests(args[0])))
        return 0
    return fail(f"unknown command {cmd}")


if __name__ == "__main__":
    sys.exit(main())
