#!/usr/bin/env bash
# Regenerates fixtures/vectors/clients/*.tsv from the real memcached clients:
# libmemcached and nutcracker (twemproxy) and spymemcached from Debian
# (tools/deps.sh --clients), npm hashring (installed into a scratch
# directory), libketama built from its source (LIBKETAMA_SRC: a directory
# with RJ/ketama's libketama/ketama.c, ketama.h, md5.c, md5.h; without it
# libketama's vectors are left as they are). The test suite needs none of
# this: it reads the committed vectors.
# Usage: tools/gen/gen_client_vectors.sh [client ...]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
src=$root/tools/gen/clients
drv=$(mktemp -d /tmp/ringshard-drivers.XXXXXX)
trap 'rm -rf "$drv"' EXIT
clients=("$@")
[ ${#clients[@]} -eq 0 ] && clients=(libmemcached libmemcached-spy twemproxy spymemcached hashring libketama)
gcc -O2 -Wall -o "$drv/drv_libmemcached" "$src/drv_libmemcached.c" -lmemcached
javac -cp /usr/share/java/spymemcached.jar -d "$drv" "$src/DrvSpymemcached.java"
(cd "$drv" && npm install --no-audit --no-fund --silent hashring@3.2.0 >/dev/null)
want=()
for c in "${clients[@]}"; do
  if [ "$c" = libketama ]; then
    if [ -z "${LIBKETAMA_SRC:-}" ]; then
      echo "gen_client_vectors: LIBKETAMA_SRC not set: libketama vectors kept" >&2
      continue
    fi
    gcc -O3 -w -I"$LIBKETAMA_SRC" -o "$drv/drv_libketama" "$src/drv_libketama.c" \
        "$LIBKETAMA_SRC/ketama.c" "$LIBKETAMA_SRC/md5.c" -lm
  fi
  want+=("$c")
done
python3 "$src/client_vectors.py" "$drv" "$root/fixtures/vectors/clients" "${want[@]}"
