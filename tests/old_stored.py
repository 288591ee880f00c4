#!/usr/bin/env python3
"""old_stored.py DIR - rewrites the manifests of the bucket directory DIR
(its base and every generation's) as versions before 0.3.0 wrote them:
without files[].stored_crc32, every other byte as it was, and each
generation's "previous" the digest of the previous manifest as rewritten
(MurmurHash3_x64_128, seed 0: h1 then h2 as 16 lowercase hex digits each,
docs/format-manifest.md), so that the chain holds. What readers of older
directories must still read, and check by decoding."""
import os, re, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_history import murmur3_x64_128  # noqa: E402

# the member, with the comma before it: the last member of its object or not
STORED = re.compile(rb',\n *"stored_crc32": [0-9]+(?=,?\n)')


def main():
    d = sys.argv[1]
    gens = sorted(g for g in os.listdir(d) if re.fullmatch(r"g[0-9]{8}", g))
    previous = None
    for sub in [""] + gens:
        path = os.path.join(d, sub, "manifest.json")
        text = open(path, "rb").read()
        text, n = STORED.subn(b"", text)
        assert n > 0, path + ": no stored_crc32"
        if previous is not None:
            h1, h2 = murmur3_x64_128(previous, 0)
            text, n = re.subn(rb'"previous": "[0-9a-f]{32}"', b'"previous": "%016x%016x"' % (h1, h2), text)
            assert n == 1, path + ": no previous"
        open(path, "wb").write(text)
        previous = text


main()
