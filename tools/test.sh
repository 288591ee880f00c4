#!/usr/bin/env bash
# Installs what is missing, builds (Release), and runs the whole test suite.
# Usage: tools/test.sh            (the README's test command; .ci/run calls it)
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh
BUILD=${BUILD:-build}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j"$(nproc)"
ctest --test-dir "$BUILD" --output-on-failure -j1
