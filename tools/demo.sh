#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job on the bundled
# data with the default ring (1000 nodes x 200 virtual nodes).
# Usage: tools/demo.sh            (the README's first command)
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh
BUILD=${BUILD:-build}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j"$(nproc)" --target ringshard
RS="$BUILD/ringshard"
echo "== the default ring"
"$RS" ring
echo
echo "== where sample keys go"
"$RS" locate CHONGQING CHANGSHA GUANGZHOU SHENZHEN 001c4becd89f49f7b1c52fe4fcd54397
