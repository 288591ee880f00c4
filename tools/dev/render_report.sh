#!/usr/bin/env bash
# Renders an SVG or HTML report of `ringshard stats|simulate|plan --svg/--html`
# to a PNG with headless Chromium, so a person can look at it.
#
# Usage: tools/dev/render_report.sh REPORT.svg|REPORT.html [OUT.png] [WIDTHxHEIGHT]
#   OUT.png defaults to REPORT.png beside the report; the window size defaults
#   to 1400x(the SVG's height + 20) for SVG files and 1400x900 for HTML.
#
# Installs Debian's `chromium` package with apt-get when no chromium is found
# (needs root or sudo). Chromium runs with a throw-away profile and with
# every background network feature off; the reports themselves reference
# nothing outside the file.
set -euo pipefail

if [ $# -lt 1 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
  sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
  exit 64
fi
in=$1
[ -f "$in" ] || { echo "render_report.sh: $in: no such file" >&2; exit 1; }
out=${2:-${in%.*}.png}
size=${3:-}

browser=""
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null 2>&1; then browser=$b; break; fi
done
if [ -z "$browser" ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  echo "render_report.sh: installing chromium (Debian package)" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
  browser=chromium
fi

if [ -z "$size" ]; then
  case "$in" in
    *.svg)
      h=$(sed -n 's/.*<svg[^>]* height="\([0-9.]*\)".*/\1/p' "$in" | head -1)
      size="1400,$(( ${h%.*} + 20 ))" ;;
    *) size="1400,900" ;;
  esac
else
  size=${size/x/,}
fi

abs=$(cd "$(dirname "$in")" && pwd)/$(basename "$in")
case "$out" in /*) ;; *) out=$PWD/$out ;; esac
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
"$browser" --headless --no-sandbox --disable-gpu --disable-background-networking \
  --disable-component-update --disable-sync --no-first-run --disable-extensions \
  --hide-scrollbars --user-data-dir="$profile" --screenshot="$out" \
  --window-size="$size" "file://$abs" >/dev/null 2>&1 || true
if [ ! -s "$out" ]; then
  echo "render_report.sh: $browser wrote no screenshot for $in" >&2
  exit 1
fi
echo "$out"
