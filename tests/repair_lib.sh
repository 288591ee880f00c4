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

# The files that verify's DIFF lines (v.out) and repair's DAMAGE and CUT
# BACK lines (r.out) name for directory D, sorted, into v.names and
# r.names.
names_said() {
  sed -n 's/^DIFF D: \([^:]*\):.*/\1/p' v.out | LC_ALL=C sort -u > v.names
  sed -n -e 's/^DAMAGE D\/\([^:]*\):.*/\1/p' -e 's/^CUT BACK D\/\([^:]*\):.*/\1/p' r.out | LC_ALL=C sort -u > r.names
}

# repair_case SRC DAMAGE APPEND INPUTS...: D a copy of SRC, damaged by the
# shell command DAMAGE; verify fails (3) and repair repairs it (0, or 3
# when it reports rows not kept), both naming the same files; the repaired
# D verifies, the damaged one is D.damaged.1 byte for byte; D's rows are
# the multiset of the rows of INPUTS but those repair names to append
# again; `$RS APPEND --append -o D` of those brings back exactly the rest
# (the multiset of every input's rows, nothing twice). Prints "rc=N
# again=INPUTS".
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
  rc_again=$(sed -n 's/^NOT KEPT .*its inputs, which an append ingests again: //p' r.out | tr ',' ' ')
  case "$rc_rc:$rc_again" in
    0:) ;;
    3:?*) ;;
    *) echo "$rc_damage: exit $rc_rc, inputs to append again: '$rc_again'" >&2; return 1 ;;
  esac
  rc_kept=
  for rc_i in "$@"; do
    case " $rc_again " in
      *" $rc_i "*) ;;
      *) rc_kept="$rc_kept $rc_i" ;;
    esac
  done
  rows_of D | LC_ALL=C sort > got.rows
  # shellcheck disable=SC2086
  rows_in $rc_kept | LC_ALL=C sort > want.rows
  cmp -s got.rows want.rows || { echo "$rc_damage: D's rows are not those of$rc_kept" >&2; return 1; }
  if [ -n "$rc_again" ]; then
    # shellcheck disable=SC2086
    "$RS" $rc_append --quiet --append -o D $rc_again || return 1
  fi
  rows_of D | LC_ALL=C sort > got.rows
  rows_in "$@" | LC_ALL=C sort > want.rows
  cmp -s got.rows want.rows || { echo "$rc_damage: after the append again, D's rows are not every input's" >&2; return 1; }
  "$RS" verify --quiet D || return 1
  echo "rc=$rc_rc again=$rc_again"
}

# Flips bit 2 of the byte at the middle of file $1 (its size unchanged).
flip() {
  python3 -c 'import os, sys
p = sys.argv[1]; at = os.path.getsize(p) // 2
with open(p, "r+b") as f:
    f.seek(at); b = f.read(1); f.seek(at); f.write(bytes([b[0] ^ 4]))' "$1"
}
