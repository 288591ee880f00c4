#!/bin/sh
# tools/gen/gen_zstd_fixtures.sh - writes fixtures/zstd/: zstd files from another
# writer (the zstd CLI) for tests/test_zstd.c, all of the same CSV, data.csv.
# The tests read the committed outputs; run this to recreate them (zstd
# 1.5.4 wrote the committed ones; another version may write other bytes
# for the same data, which the tests accept: they compare rows, not bytes).
#
#   data.csv            2000 rows and a header (plain)
#   l1.csv.zst          zstd -1 (content size, checksum)
#   l19.csv.zst         zstd -19
#   fast.csv.zst        zstd --fast=3 (a negative level)
#   nocheck.csv.zst     zstd -3 --no-check (no checksum)
#   long.csv.zst        zstd --long=27 from a pipe: window log 27, no content size
#   long28.zst          zstd --long=28 from a pipe: a window ringshard refuses
#   frames.csv.zst      three frames, cut at lines 1, 700, 1400 (header in the first)
#   skippable.csv.zst   the three frames with skippable frames before, between and after
#   dict.csv.zst        zstd -D dict: a frame that needs dictionary (dict, trained here)
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
D="$ROOT/fixtures/zstd"
mkdir -p "$D"
cd "$D"
awk 'BEGIN { print "id,name,amount"; for (i = 1; i <= 2000; i++) printf "k%05d,name %d,%d.%02d\n", i, i % 37, i * 7, i % 100 }' > data.csv
zstd -q -f -1 data.csv -o l1.csv.zst
zstd -q -f -19 data.csv -o l19.csv.zst
zstd -q -f --fast=3 data.csv -o fast.csv.zst
zstd -q -f -3 --no-check data.csv -o nocheck.csv.zst
zstd -q -f --long=27 -c < data.csv > long.csv.zst
zstd -q -f --long=28 -c < data.csv > long28.zst
sed -n '1,700p' data.csv | zstd -q -c > frames.csv.zst
sed -n '701,1400p' data.csv | zstd -q -c >> frames.csv.zst
sed -n '1401,$p' data.csv | zstd -q -c >> frames.csv.zst
# a skippable frame: magic 0x184D2A5n (little-endian), size, bytes
skip() { printf "$1\052\115\030$2\000\000\000$3"; }
{
    skip '\120' '\005' 'hello'
    sed -n '1,700p' data.csv | zstd -q -c
    skip '\137' '\000' ''
    sed -n '701,1400p' data.csv | zstd -q -c
    skip '\125' '\003' 'abc'
    sed -n '1401,$p' data.csv | zstd -q -c
    skip '\121' '\001' 'z'
} > skippable.csv.zst
tmp=$(mktemp -d)
i=1
while [ $i -le 200 ]; do
    awk -v i=$i 'BEGIN { for (j = i; j < i + 50; j++) printf "k%05d,name %d,%d.%02d\n", j, j % 37, j * 7, j % 100 }' > "$tmp/s$i"
    i=$((i + 1))
done
zstd -q -f --train "$tmp"/s* --maxdict=4096 -o dict
rm -rf "$tmp"
zstd -q -f -D dict data.csv -o dict.csv.zst
