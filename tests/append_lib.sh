# Shell functions for the suites' shell commands (test_append, test_chain,
# test_compact, test_content, test_repair: APPEND_LIB in tests/support.h
# sources this file, with RS set to the ringshard binary and tests/wait.h's
# WAIT_SH defined first). They read bucket directories with gzip, zstd,
# cat, cmp and Python only, never with ringshard, so that what they check
# does not depend on what is tested.

# Decompresses standard input as the file name $1 says.
dec() {
  case "$1" in
    *.gz) gzip -dc ;;
    *.zst) zstd -dcq ;;
    *) cat ;;
  esac
}

# The stored bytes of the header line segment $2 of generation directory
# $1 starts with (its manifest's header_bytes; 0: none, an older
# version's segment or a directory without a header).
seg_header_bytes() {
  python3 -c 'import json, sys
m = json.load(open(sys.argv[1]))
print(next((f.get("header_bytes", 0) for f in m["files"] if f["file"] == sys.argv[2]), 0))' "$1/manifest.json" "$2"
}

# Segment $2 of generation directory $1 without its header line, as stored.
seg_rows() {
  tail -c +$(($(seg_header_bytes "$1" "$2") + 1)) "$1/$2"
}

# One bucket of DIR $1 (its base file $2 and the segments of every
# generation, each without its header line), decompressed.
one_bucket() {
  {
    cat "$1/$2"
    for ob_g in "$1"/g*; do
      [ -e "$ob_g/$2" ] && seg_rows "$ob_g" "$2"
    done
  } 2>/dev/null | dec "$2"
}

# Every node's rows in DIR $1 (one_bucket) are those of the same file of
# the one-run directory $2, byte for byte, in the same order; DIR has no
# node file $2 lacks.
same_rows() {
  sr_n=0
  for sr_f in $(ls "$2" | grep -v '^manifest.json$'); do
    one_bucket "$1" "$sr_f" > one.t
    dec "$sr_f" < "$2/$sr_f" > ref.t
    if ! cmp -s one.t ref.t; then
      echo "$1/$sr_f and its segments: rows differ from $2/$sr_f ($(wc -l < one.t) lines, $(wc -l < ref.t) expected)" >&2
      return 1
    fi
    sr_n=$((sr_n + 1))
  done
  if [ "$(ls "$1" | grep -v -e '^manifest.json$' -e '^g[0-9]*$' | wc -l)" != $sr_n ]; then
    echo "$1 holds other node files than $2" >&2
    return 1
  fi
  [ $sr_n -gt 0 ]
}

# Directories $1 and $2 hold the same files but their manifests, each
# with the same content once decompressed (how it is cut into gzip members
# or zstd frames may differ).
same_content() {
  [ "$(ls "$1" | grep -v '^manifest.json$')" = "$(ls "$2" | grep -v '^manifest.json$')" ] || {
    echo "$1 and $2 hold other files" >&2
    return 1
  }
  for sc_f in $(ls "$1" | grep -v '^manifest.json$'); do
    dec "$sc_f" < "$1/$sc_f" > one.t
    dec "$sc_f" < "$2/$sc_f" > ref.t
    cmp -s one.t ref.t || { echo "$1/$sc_f and $2/$sc_f differ" >&2; return 1; }
  done
}

# A snapshot of directory $1 (tests/snap.py, RS_TESTS its directory):
# `snap DIR` its tree and every file's CRC, manifests without their wall
# time, `snap DIR raw` manifests byte for byte too, `snap DIR TEXT` also
# without their lines holding TEXT; "absent" when there is no $1.
snap() { python3 -S "$RS_TESTS/snap.py" "$@"; }

# How many temporaries a run left beside DIR $1.
litter() {
  set -- "$1".ringshard-*
  if [ -e "$1" ] || [ -L "$1" ]; then echo $#; else echo 0; fi
}

# Copies each node's parts (base file, then its segments in generation
# order, without their header lines) of DIR $1, concatenated, into
# directory $2.
cat_parts() {
  mkdir -p "$2" || return 1
  for cp_f in $(ls "$1" | grep -v -e '^manifest.json$' -e '^g[0-9]*$'); do
    {
      cat "$1/$cp_f"
      for cp_g in "$1"/g*; do
        [ -e "$cp_g/$cp_f" ] && seg_rows "$cp_g" "$cp_f"
      done
    } > "$2/$cp_f" 2>/dev/null
  done
}

# Each file of directory $2 equals DIR $1's of the same name, byte for
# byte, and $1 has no generations left.
same_parts() {
  for sp_f in $(ls "$2"); do
    cmp "$1/$sp_f" "$2/$sp_f" || return 1
  done
  if ls -d "$1"/g* > /dev/null 2>&1; then
    echo "$1: generations left" >&2
    return 1
  fi
}
