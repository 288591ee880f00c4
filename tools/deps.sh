#!/usr/bin/env bash
# Installs the Debian packages ringshard needs, only those that are missing.
# Usage: tools/deps.sh [--mpi] [--clients]   (needs root or sudo; does nothing when all are present)
# --clients: the memcached clients tools/gen/gen_client_vectors.sh regenerates
# fixtures/vectors/clients/ from (the tests read the committed vectors);
# it also needs java and javac.
set -euo pipefail
pkgs=(cmake gcc make pkg-config zlib1g-dev libzstd-dev zstd libcsv-dev libcriterion-dev libisal-dev isal gzip pigz python3
      python3-zstandard  # tests/test_zstd.c reads the outputs with Python's zstandard too
      python3-pandas  # tests/check_tool_readers.sh runs docs/bucket.md's pandas recipes
      tabix  # bgzip: tests/test_content.c appends a bgzip copy of an input (many gzip members)
      xz-utils bzip2 lz4 zip  # tests/test_refused.c: real files of formats ringshard refuses by magic number
      time  # /usr/bin/time: CPU seconds in tools/bench/bench_shared.sh and bench_bucket.sh
      strace  # tests/test_append.c, test_history.c and test_chain.c kill runs at each publishing system call (fault injection)
      prometheus  # its promtool checks the --metrics files (tests/test_metrics.c)
      mandoc groff-base man-db bash-completion  # man pages and completion: checked
      clang libclang-rt-14-dev libomp-14-dev)  # the last three: TSan and libFuzzer runs
# tests/check_tool_readers.sh runs docs/bucket.md's DuckDB recipes with DuckDB's
# npm package: Debian's node and npm unless the machine has a Node.js with its
# own npm already (NodeSource's nodejs bundles npm and conflicts with Debian's)
command -v npm >/dev/null 2>&1 || pkgs+=(nodejs npm)
for a in "$@"; do
  case "$a" in
    --mpi) pkgs+=(libopenmpi-dev openmpi-bin) ;;
    --clients) pkgs+=(libmemcached-dev nutcracker libspymemcached-java default-jdk-headless) ;;
  esac
done
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
echo "tools/deps.sh: installing ${missing[*]}" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
