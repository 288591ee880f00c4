# Shell functions for tests/test_repair.c (sourced after tests/append_lib.sh,
# whose dec, snap and litter they use, with RS set to the ringshard binary).
# They read directories with gzip, zstd and cat only, never with ringshard.

# Every data row of directory $1 (its files and its generations' segments,
# each without its header line: every file starts with one), one a line.
# The inputs have no line break inside a field, so a line is a row.
rows_of() {
  for ro_f in "$1"/*.csv* "$1"/g*/*.csv*; do
    [ -e "$ro_f" ] || continue
    dec "$ro_f" < "$ro_f" | tail -n +2
  done
}

# The data rows of the inputs $@ (each without its header line).
rows_in() {
  for ri_f in "$@"; do
    tail -n +2 "$ri_f"
  done
}

# The files that verify's DIFF lines (v.out) and repair's DAMAGE, CUT BACK
# and REWRITTEN lines (r.out) name for directory D, sorted, into v.names and
# r.names.
names_said() {
  sed -n 's/^DIFF D: \([^:]*\):.*/\1/p' v.out | LC_ALL=C sort -u > v.names
  sed -n -e 's/^DAMAGE D\/\([^:]*\):.*/\1/p' -e 's/^CUT BACK D\/\([^:]*\):.*/\1/p' \
    -e 's/^REWRITTEN D\/\([^:]*\):.*/\1/p' r.out | LC_ALL=C sort -u > r.names
}

# The rows of the data files that repair's NOT KEPT lines (r.out) name,
# read from their intact copies in directory $1 (the source of D), one a
# line; and in lost.count the rows those lines say.
rows_lost() {
  sed -n 's/^NOT KEPT D\/\([^:]*\): \([0-9]*\) rows of node .*/\1 \2/p' r.out > lost.files
  awk '{ s += $2 } END { print s + 0 }' lost.files > lost.count
  while read -r rl_f rl_n; do
    dec "$1/$rl_f" < "$1/$rl_f" | tail -n +2
  done < lost.files
}

# repair_case SRC DAMAGE APPEND INPUTS...: D a copy of SRC, damaged by the
# shell command DAMAGE; verify fails (3) and repair repairs it (0, or 3
# when it reports rows not kept), both naming the same files; the repaired
# D verifies, the damaged one is D.damaged.1 byte for byte; D's rows are
# the multiset of the rows of INPUTS but those of the files repair says it
# did not keep (read from SRC's intact copies, and as many as it says;
# their generations' other files kept); `$RS APPEND --append -o D` of the
# inputs it names brings back exactly those (the multiset of every input's
# rows, nothing twice), and an append of them once more adds nothing.
# Prints "rc=N again=INPUTS lost=ROWS".
repair_case() {
  rc_src=$1 rc_damage=$2 rc_append=$3
  shift 3
  rm -rf D D.* && cp -a "$rc_src" D && eval "$rc_damage" || return 1
  snap D raw > damaged.snap
  "$RS" verify D > v.out 2>&1
  [ $? = 3 ] || { echo "$rc_damage: verify does not see it:" >&2; cat v.out >&2; return 1; }
  "$RS" repair D > r.out 2> r.err
  rc_rc=$?
  [ $rc_rc = 0 ] || [ $rc_rc = 3 ] || { echo "$rc_damage: repair exit $rc_rc:" >&2; cat r.out r.err >&2; return 1; }
  names_said
  if ! cmp -s v.names r.names || [ ! -s r.names ]; then
    echo "$rc_damage: verify and repair name other files:" >&2
    diff v.names r.names >&2
    cat v.out r.out >&2
    return 1
  fi
  [ "$(snap D.damaged.1 raw)" = "$(cat damaged.snap)" ] || { echo "$rc_damage: D.damaged.1 changed" >&2; return 1; }
  "$RS" verify --quiet D && [ "$(litter D)" = 0 ] || { echo "$rc_damage: the repaired D" >&2; return 1; }
  rc_again=$(sed -n 's/^NOT KEPT .*an append ingests again: //p' r.out | tr ',' '\n' | tr -d ' ' | awk 'NF && !seen[$0]++' |
    tr '\n' ' ' | sed 's/ $//')
  case "$rc_rc:$rc_again" in
    0:) ;;
    3:?*) ;;
    *) echo "$rc_damage: exit $rc_rc, inputs to append again: '$rc_again'" >&2; return 1 ;;
  esac
  rows_lost "$rc_src" | LC_ALL=C sort > lost.rows
  [ "$(wc -l < lost.rows)" = "$(cat lost.count)" ] ||
    { echo "$rc_damage: repair says $(cat lost.count) rows not kept, its files held $(wc -l < lost.rows)" >&2; return 1; }
  rows_of D | LC_ALL=C sort > got.rows
  rows_in "$@" | LC_ALL=C sort > all.rows
  LC_ALL=C comm -23 all.rows lost.rows > want.rows
  cmp -s got.rows want.rows || { echo "$rc_damage: D's rows are not every input's but those not kept" >&2; return 1; }
  for rc_pass in 1 2; do   # the second append of them adds nothing
    if [ -n "$rc_again" ]; then
      # shellcheck disable=SC2086
      "$RS" $rc_append --quiet --append -o D $rc_again || return 1
    fi
    rows_of D | LC_ALL=C sort > got.rows
    cmp -s got.rows all.rows ||
      { echo "$rc_damage: after append $rc_pass of $rc_again, D's rows are not every input's" >&2; return 1; }
    "$RS" verify --quiet D || return 1
  done
  echo "rc=$rc_rc again=$rc_again lost=$(cat lost.count)"
}

# Inserts 8 bytes at the middle of file $1: longer, and not cut back (its
# first bytes as its manifest says them are not intact).
insert8() {
  python3 -c 'import sys
p = sys.argv[1]; b = open(p, "rb").read(); at = len(b) // 2
open(p, "wb").write(b[:at] + b"12345678" + b[at:])' "$1"
}

# Flips bit 0 of the byte at offset $2 of file $1: at 4-7 of a gzip
# member, its MTIME, which no decoder reads (the rows stay intact).
flip_byte() {
  python3 -c 'import sys
p, at = sys.argv[1], int(sys.argv[2])
with open(p, "r+b") as f:
    f.seek(at); b = f.read(1); f.seek(at); f.write(bytes([b[0] ^ 1]))' "$1" "$2"
}

# Flips bit 2 of the byte at the middle of file $1 (its size unchanged).
flip() {
  python3 -c 'import os, sys
p = sys.argv[1]; at = os.path.getsize(p) // 2
with open(p, "r+b") as f:
    f.seek(at); b = f.read(1); f.seek(at); f.write(bytes([b[0] ^ 4]))' "$1"
}

# Adds 1 to the line count that the second member (gzip: its RS subfield)
# or piece (zstd: its RS metadata frame) of file $1 declares: the data
# intact, what the headers say of it not.
flip_rs_lines() {
  python3 -c 'import struct, sys
p = sys.argv[1]; b = bytearray(open(p, "rb").read())
zstd = p.endswith(".zst")
first = struct.unpack_from("<Q", b, 16 if zstd else 20)[0]
at = first + (24 if zstd else 28)
struct.pack_into("<Q", b, at, struct.unpack_from("<Q", b, at)[0] + 1)
open(p, "wb").write(b)' "$1"
}
