# Shell functions for tests/test_append.c (sourced by its commands, with
# RS set to the ringshard binary and tests/wait.h's WAIT_SH defined first).
# They read bucket directories with gzip, zstd, cat, cmp and cksum only,
# never with ringshard, so that what they check does not depend on what is
# tested.

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

# A snapshot of directory $1: its tree and every file's CRC, manifests
# without their wall time ("seconds"); `snap DIR raw` takes the manifests
# byte for byte too, `snap DIR PATTERN` also drops their lines that match
# PATTERN. "absent" when there is no $1.
snap() {
  if [ ! -e "$1" ]; then
    echo absent
    return
  fi
  # one cksum and one grep for the whole tree: a process a file made the
  # kill sweeps (a snapshot after every kill) spend most of their time here
  (
    cd "$1" || exit 1
    find . | LC_ALL=C sort
    if [ "$2" = raw ]; then
      find . -type f -print0 | LC_ALL=C sort -z | xargs -0r cksum
    else
      find . -type f ! -name '*manifest.json' -print0 | LC_ALL=C sort -z | xargs -0r cksum
      find . -type f -name '*manifest.json' -print0 | LC_ALL=C sort -z |
        xargs -0r grep -H -v -e '"seconds"' -e "${2:-\"seconds\"}"
    fi
    true
  ) | cksum
}

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

# The state DIR D is in, against the snapshots old.snap, new.snap and (when
# present) up.snap: prints old, new or upgraded, or fails saying what D
# holds.
state_of() {
  so_s=$(snap D)
  so_old= so_new= so_up=
  read -r so_old < old.snap
  read -r so_new < new.snap
  [ ! -e up.snap ] || read -r so_up < up.snap
  if [ "$so_s" = "$so_old" ]; then
    echo old
  elif [ "$so_s" = "$so_new" ]; then
    echo new
  elif [ -e up.snap ] && [ "$so_s" = "$so_up" ]; then
    echo upgraded
  else
    echo "D is neither the old nor the new generation:" >&2
    find D | LC_ALL=C sort >&2
    return 1
  fi
}

# After a run was killed ($1 says where): D is in a known state (state_of,
# counted in the variables old, new, upgraded), verify passes, and the next
# append (next.csv, with D's ring: --key bill_id --nodes 2, which creates
# D when the killed run was to) works, passes verify and removes what the
# killed run left beside D.
after_kill() {
  ak_st=$(state_of) || { echo "killed $1" >&2; return 1; }
  eval "$ak_st=\$((\$$ak_st + 1))"
  if [ -e D ] && ! "$RS" verify --quiet D >&2; then
    echo "killed $1: verify fails ($ak_st generation)" >&2
    return 1
  fi
  if ! "$RS" bucket --quiet -j 1 --append --key bill_id --nodes 2 -o D next.csv 2> next.err; then
    echo "killed $1: the next append fails:" >&2
    cat next.err >&2
    return 1
  fi
  if ! "$RS" verify --quiet D >&2 || [ "$(litter D)" != 0 ]; then
    echo "killed $1: after the next append, verify fails or temporaries are left:" >&2
    ls -a >&2
    return 1
  fi
}

# kill_sweep SETUP CMD SYSCALL...: for each SYSCALL and N = 1, 2, ... until
# CMD runs to its end: SETUP (puts D as it was before), then CMD under
# strace with SIGKILL injected on entry to the Nth call of SYSCALL (counted
# per thread), then after_kill. The run that ends must leave the new state.
# Prints "kills=K old=A new=B upgraded=C never: SYSCALLS NOT CALLED".
# With SWEEP_ERROR=ERRNO the Nth call fails with ERRNO instead: the run
# must exit 1 and leave nothing beside D (it removes its temporaries).
kill_sweep() {
  ks_setup=$1 ks_cmd=$2
  shift 2
  old=0 new=0 upgraded=0 ks_kills=0 ks_never=
  for ks_sc in "$@"; do
    ks_n=1
    while :; do
      eval "$ks_setup" || return 1
      ks_inject=${SWEEP_ERROR:+error=$SWEEP_ERROR}
      eval "strace -f -qq -o /dev/null -e trace=$ks_sc -e inject=$ks_sc:${ks_inject:-signal=SIGKILL}:when=$ks_n" \
        "$ks_cmd" > /dev/null 2> sweep.err
      ks_rc=$?
      [ $ks_rc = 0 ] && break
      ks_want=137
      [ -z "$SWEEP_ERROR" ] || ks_want=1
      if [ $ks_rc != $ks_want ]; then
        echo "call $ks_n of $ks_sc: exit $ks_rc, not the injected failure:" >&2
        cat sweep.err >&2
        return 1
      fi
      if [ -n "$SWEEP_ERROR" ] && [ "$(litter D)" != 0 ]; then
        echo "call $ks_n of $ks_sc failed: temporaries left" >&2
        return 1
      fi
      ks_kills=$((ks_kills + 1))
      after_kill "at call $ks_n of $ks_sc" || return 1
      ks_n=$((ks_n + 1))
    done
    [ "$(state_of)" = new ] || { echo "the run that was not killed ($ks_sc) did not publish" >&2; return 1; }
    [ $ks_n -gt 1 ] || ks_never="$ks_never $ks_sc"
  done
  echo "kills=$ks_kills old=$old new=$new upgraded=$upgraded never:$ks_never"
}

# kill_points SETUP CMD POINT...: for each POINT, SETUP, then CMD with
# RINGSHARD_TEST_PAUSE_AT=POINT: once it has stopped itself there, SIGKILL,
# then after_kill. Prints "POINT:STATE" for each.
kill_points() {
  kp_setup=$1 kp_cmd=$2
  shift 2
  old=0 new=0 upgraded=0
  for kp_pt in "$@"; do
    eval "$kp_setup" || return 1
    eval "RINGSHARD_TEST_PAUSE_AT=$kp_pt $kp_cmd > /dev/null 2>&1 &"
    kp_p=$!
    wait_stopped $kp_p "the run to stop at $kp_pt" || { kill -9 $kp_p; return 1; }
    kill -9 $kp_p
    wait $kp_p
    printf '%s:%s ' "$kp_pt" "$(state_of)"
    after_kill "at $kp_pt" || return 1
  done
  echo
}

# interrupt_points SETUP CMD POINT...: as kill_points, with SIGINT (then
# SIGCONT) instead of SIGKILL: the run goes on to its end; prints
# "POINT:EXIT:STATE" for each, and fails if the run leaves temporaries.
interrupt_points() {
  ip_setup=$1 ip_cmd=$2
  shift 2
  for ip_pt in "$@"; do
    eval "$ip_setup" || return 1
    eval "RINGSHARD_TEST_PAUSE_AT=$ip_pt $ip_cmd > /dev/null 2>&1 &"
    ip_p=$!
    wait_stopped $ip_p "the run to stop at $ip_pt" || { kill -9 $ip_p; return 1; }
    kill -INT $ip_p
    kill -CONT $ip_p
    wait $ip_p
    ip_rc=$?
    printf '%s:%s:%s ' "$ip_pt" $ip_rc "$(state_of)"
    [ "$(litter D)" = 0 ] || { echo "interrupted at $ip_pt: temporaries left" >&2; return 1; }
  done
  echo
}
