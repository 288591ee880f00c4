#!/usr/bin/env bash
# Runs the README's five-minute tour as written: every fenced block of
# README.md that opens with the line ```sh tour, in order, as one bash
# script (set -e, each line echoed as it runs), in a fresh temporary
# directory holding a link to the source tree's fixtures/, with the
# directory BIN (where the ringshard to run is) first on the PATH. The
# README says so where the tour starts; a new block with that marker joins
# the tour. Exit 0 when the whole tour ran; else the failing command's
# status, the lines up to it shown.
# Usage: tools/check/readme_tour.sh [BIN]   (default build; tools/test.sh runs it on
#        the installed bin/, the suite as ctest's readme_tour on the build)
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
bin=$(cd "${1:-$here/build}" && pwd)
[ -x "$bin/ringshard" ] || { echo "readme_tour: $bin/ringshard: not an executable" >&2; exit 2; }
tour=$(awk '/^```sh tour$/ { on = 1; next } on && /^```/ { on = 0; print ""; next } on { print }' "$here/README.md")
[ -n "$tour" ] || { echo "readme_tour: README.md has no \`\`\`sh tour block" >&2; exit 1; }
dir=$(mktemp -d "${RINGSHARD_TEST_TMPDIR:-${TMPDIR:-/tmp}}/readme_tour.XXXXXX")
trap 'rm -rf "$dir"' EXIT
ln -s "$here/fixtures" "$dir/fixtures"
cd "$dir"
rc=0
# the tour's own scratch directory (mktemp -d) goes inside $dir, removed with it
TMPDIR=$dir PATH="$bin:$PATH" bash -ev -c "$tour" || rc=$?
[ $rc = 0 ] && echo "readme_tour: the README's tour ran, $(grep -c . <<< "$tour") lines" ||
    echo "readme_tour: the README's tour failed (exit $rc) at the last line shown above" >&2
exit $rc
