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
# shell command DAMAGE; verify fails (3), compact refuses it (2, D byte for
# byte) and repair repairs it (0, or 3
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
  "$RS" compact --quiet D 2> c.err
  rc_c=$?
  [ $rc_c = 2 ] && [ "$(snap D raw)" = "$(cat damaged.snap)" ] ||
    { echo "$rc_damage: compact exit $rc_c (not 2) or D changed:" >&2; cat c.err >&2; return 1; }
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

# Adds 1 to the rows that the totals of manifest $1 say (its files'
# entries unchanged: the totals contradict them).
tamper_totals() {
  python3 -c 'import json, sys
p = sys.argv[1]; m = json.load(open(p)); m["totals"]["rows"] += 1
open(p, "w").write(json.dumps(m, indent=2) + "\n")' "$1"
}

# Makes the first input record of manifest $1 name generation 9 as the one
# that ingested it.
tamper_input_generation() {
  python3 -c 'import json, sys
p = sys.argv[1]; m = json.load(open(p)); m["inputs"][0]["generation"] = 9
open(p, "w").write(json.dumps(m, indent=2) + "\n")' "$1"
}

# Lists the first file of manifest $1 twice (its totals counting both, so
# that only the listing is wrong).
list_twice() {
  python3 -c 'import json, sys
p = sys.argv[1]; m = json.load(open(p)); f = m["files"]; f.append(dict(f[0])); t = m["totals"]
t["rows"] += f[0]["rows"]; t["bytes"] += f[0]["bytes"]; t["files"] = len(f)
open(p, "w").write(json.dumps(m, indent=2) + "\n")' "$1"
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

# Recompresses gzip file $1 whole with gzip -9: other bytes, another
# size, the same rows (a base file so rewritten is kept whole).
recompress() {
  gzip -dc "$1" | gzip -9 > "$1.x" && mv "$1.x" "$1"
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

# members_lost SRC DAMAGED: the members (zstd pieces) of ringshard file
# SRC, walked by their RS headers' sizes with Python alone, whose bytes in
# DAMAGED (a damaged copy) differ from SRC's; prints their data rows,
# decoded from SRC (Python's zlib, zstd -d), one a line, and writes to
# members.ranges each run of them as "FROM TO": the ordinals of their rows
# among the file's data rows (its first member, the header line, not
# counted), TO excluded; members.count: "LOST MEMBERS" (data members).
members_lost() {
  python3 - "$1" "$2" <<'PY'
import struct, subprocess, sys, zlib
src, bad = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
zstd = sys.argv[1].endswith(".zst")
at, ordinal, first, ranges, lost, members = 0, 0, True, [], 0, 0
while at < len(src):
    size, lines, records = struct.unpack_from("<QQQ", src, at + (16 if zstd else 20))
    piece = src[at:at + size]
    if not first:
        members += 1
        if bad[at:at + size] != piece:
            lost += 1
            data = (subprocess.run(["zstd", "-dcq"], input=piece, stdout=subprocess.PIPE, check=True).stdout
                    if zstd else zlib.decompress(piece, 31))
            rows = data.decode("utf-8", "surrogateescape").splitlines()
            assert len(rows) == records, (at, len(rows), records)
            for r in rows:
                sys.stdout.write(r + "\n")
            if ranges and ranges[-1][1] == ordinal:
                ranges[-1][1] = ordinal + records
            else:
                ranges.append([ordinal, ordinal + records])
        ordinal += records
    first = False
    at += size
open("members.ranges", "w").write("".join("%d %d\n" % (a, b) for a, b in ranges))
open("members.count", "w").write("%d %d\n" % (lost, members))
PY
}

# repair_members_case SRC FILE DAMAGE APPEND INPUTS...: D a copy of SRC
# (a directory of files of several gzip members or zstd frames, each
# generation of one input), its file FILE damaged by the shell command
# DAMAGE; repair (exit 3) keeps FILE's intact members: D verifies and its
# rows are the multiset of the rows of INPUTS but exactly those of the
# members that DAMAGE changed (members_lost: read from SRC's intact copy),
# as many as repair's NOT KEPT line, NODE line and metrics say (the
# node's other rows kept); the manifest records them as those ordinals
# of the input's rows on the node (lost_rows); appending
# the input named brings back exactly them (every input's rows, none
# twice), recorded restored_rows, and appending it once more adds nothing.
# RM_BEFORE (default 0): the rows FILE holds before the input's (a
# compacted base: its node's rows of the earlier generations, read from
# the copy before compaction). Prints "lost=ROWS of=MEMBERS again=INPUT".
repair_members_case() {
  rm_src=$1 rm_file=$2 rm_damage=$3 rm_append=$4
  shift 4
  rm -rf D D.* && cp -a "$rm_src" D && eval "$rm_damage" || return 1
  "$RS" repair --metrics m.prom D > r.out 2> r.err
  rm_rc=$?
  [ $rm_rc = 3 ] || { echo "$rm_damage: repair exit $rm_rc:" >&2; cat r.out r.err >&2; return 1; }
  "$RS" verify --quiet D && [ "$(litter D)" = 0 ] || { echo "$rm_damage: the repaired D" >&2; return 1; }
  members_lost "$rm_src/$rm_file" "D.damaged.1/$rm_file" | LC_ALL=C sort > lost.rows
  read -r rm_lost rm_members < members.count
  rm_said=$(sed -n "s#^NOT KEPT D/$rm_file: \\([0-9]*\\) rows of node .*: $rm_lost of its $rm_members \\(gzip members\\|zstd frames\\) damaged.*#\\1#p" r.out)
  [ -n "$rm_said" ] && [ "$rm_said" = "$(wc -l < lost.rows)" ] && [ "$rm_said" -gt 0 ] ||
    { echo "$rm_damage: repair says '$rm_said' rows, $rm_lost of $rm_members members changed, $(wc -l < lost.rows) rows:" >&2; cat r.out >&2; return 1; }
  rm_base=${rm_file##*/}
  rm_all=$(for rm_f in "$rm_src/$rm_base" "$rm_src"/g*/"$rm_base"; do dec "$rm_f" < "$rm_f" | tail -n +2; done | wc -l)
  rm_kept=$((rm_all - rm_said))
  grep -q "^NODE [^:]*: $rm_kept rows kept, $rm_said not kept$" r.out &&
    grep -q "^ringshard_repair_rows_not_kept{command=\"repair\"} $rm_said$" m.prom &&
    grep -q "^ringshard_repair_node_rows{command=\"repair\",node=\"[^\"]*\",state=\"kept\"} $rm_kept$" m.prom ||
    { echo "$rm_damage: NODE line or metrics not $rm_kept kept, $rm_said not kept:" >&2; cat r.out m.prom >&2; return 1; }
  rows_of D | LC_ALL=C sort > got.rows
  rows_in "$@" | LC_ALL=C sort > all.rows
  LC_ALL=C comm -23 all.rows lost.rows > want.rows
  cmp -s got.rows want.rows || { echo "$rm_damage: D's rows are not every input's but those of the damaged members" >&2; return 1; }
  rm_again=$(sed -n 's/^NOT KEPT .*an append ingests again: //p' r.out)
  rm_node=$(sed -n "s|^NOT KEPT D/$rm_file: [0-9]* rows of node \\([^,]*\\),.*|\\1|p" r.out)
  python3 -c 'import json, sys
m = json.load(open("D/manifest.json"))
got = [[r["from"], r["to"]] for i in m["inputs"] if i["path"] == sys.argv[1] for r in i.get("lost_rows", [])
       if r["node"] == sys.argv[2]]
want = [[int(x) - int(sys.argv[3]) for x in l.split()] for l in open("members.ranges")]
others = [i["path"] for i in m["inputs"] if (i.get("lost_rows") or i.get("lost")) and i["path"] != sys.argv[1]]
sys.exit(0 if got == want and not others else "lost_rows %s, the damaged members %s, others %s" % (got, want, others))' \
    "$rm_again" "$rm_node" "${RM_BEFORE:-0}" || return 1
  "$RS" $rm_append --quiet --memory 32M --append -o D "$rm_again" || return 1
  rows_of D | LC_ALL=C sort > got.rows
  cmp -s got.rows all.rows || { echo "$rm_damage: after the append of $rm_again, D's rows are not every input's" >&2; return 1; }
  rm_gen=$(ls -d D/g* | tail -n 1)
  grep -q '"restored_rows"' "$rm_gen/manifest.json" || { echo "$rm_damage: no restored_rows in $rm_gen" >&2; return 1; }
  "$RS" $rm_append --quiet --append -o D "$rm_again" && [ "$(ls -d D/g* | tail -n 1)" = "$rm_gen" ] || return 1
  rows_of D | LC_ALL=C sort > got.rows
  cmp -s got.rows all.rows && "$RS" verify --quiet D || return 1
  echo "lost=$rm_said of=$rm_members again=$rm_again"
}
