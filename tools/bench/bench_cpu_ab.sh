#!/usr/bin/env bash
# CPU seconds by symbol of two or more ringshard binaries on the same job,
# interleaved (A, B, A, B, ...) so that a noisy machine treats them alike:
# each run under `perf record -F 999`, its own code + libc, ISA-L and the
# kernel counted as tools/bench/bench_bucket.sh counts them (a library's share of
# the user samples times the user seconds; the kernel is the system
# seconds), then the medians of every run of each binary, by symbol.
#
# Usage: tools/bench/bench_cpu_ab.sh RUNS BIN_A BIN_B [BIN...] [-- BUCKET_ARGS...]
#   e.g. tools/bench/bench_cpu_ab.sh 7 /tmp/old/ringshard build/ringshard -- --compress none
# INPUT=/tmp/rs-bench/bills.csv.gz (tools/bench/bench_bucket.sh makes and caches it)
# OUT=/tmp/rs-bench-cpu-ab (scratch outputs, removed after each run)
# Exit status: 0 ok, 1 a run failed, 2 bad usage or perf missing.
set -euo pipefail
export LC_ALL=C
TOOLS=$(cd "$(dirname "$0")" && pwd)
die() { echo "bench_cpu_ab: $1" >&2; exit "${2:-1}"; }
[ $# -ge 3 ] || { sed -n '9,12p' "$0" >&2; exit 2; }
RUNS=$1
shift
[[ $RUNS =~ ^[0-9]+$ && $RUNS -gt 0 ]] || die "RUNS must be a positive integer (got '$RUNS')" 2
bins=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do bins+=("$1"); shift; done
[ $# -gt 0 ] && shift
[ "${#bins[@]}" -ge 2 ] || die "name two binaries or more" 2
for b in "${bins[@]}"; do [ -x "$b" ] || die "$b: not an executable" 2; done
INPUT=${INPUT:-/tmp/rs-bench/bills.csv.gz}
OUT=${OUT:-/tmp/rs-bench-cpu-ab}
[ -f "$INPUT" ] || die "$INPUT: missing (tools/bench/bench_bucket.sh makes it)" 2
command -v perf >/dev/null 2>&1 || die "perf not found" 2
command -v python3 >/dev/null 2>&1 || die "python3 not found" 2
mkdir -p "$OUT"
log=$OUT/samples.txt
: > "$log"
for _ in $(seq "$RUNS"); do
  for i in "${!bins[@]}"; do
    b=${bins[$i]}
    rm -rf "$OUT/out"
    perf record -q -F 999 -o "$OUT/perf.data" -- /usr/bin/time -f '%U %S' -o "$OUT/time" \
      "$b" bucket --key bill_id -o "$OUT/out" --quiet "$@" "$INPUT" >/dev/null 2>&1 || die "run of $b failed"
    read -r u s < <(tail -n 1 "$OUT/time")
    perf report -i "$OUT/perf.data" --sort dso,sym --stdio -F sample,dso,sym 2>/dev/null |
      awk -v u="$u" -v own="$(basename "$b")" -f "$TOOLS/perf_libs.awk" |
      awk -F '\t' -v i="$i" -v s="$s" '
        $1 == "lib" { lib[$2] = $3; next }
        { printf "%s\t%s\t%.3f\n", i, $2, $3 }
        END { printf "%s\town code + libc\t%.3f\n%s\tISA-L\t%.3f\n%s\tkernel (system s)\t%.3f\n",
                i, lib["own"] + lib["libc"], i, lib["isal"], i, s }' >> "$log"
  done
done
rm -rf "$OUT/out" "$OUT/perf.data" "$OUT/time"
python3 - "$log" "${bins[@]}" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    i, name, v = line.rstrip("\n").split("\t")
    runs[(int(i), name)].append(float(v))
bins = sys.argv[2:]
def med(i, name):
    return statistics.median(runs[(i, name)]) if (i, name) in runs else 0.0
fixed = ["own code + libc", "ISA-L", "kernel (system s)"]
syms = sorted({n for (_, n) in runs if n not in fixed}, key=lambda n: -max(med(i, n) for i in range(len(bins))))
print("CPU s, medians of interleaved runs (%s)" % ", ".join("%s: %s" % (chr(65 + i), b) for i, b in enumerate(bins)))
print("| | " + " | ".join(chr(65 + i) for i in range(len(bins))) + " |")
print("|---|" + "---:|" * len(bins))
for n in fixed + [s for s in syms if max(med(i, s) for i in range(len(bins))) >= 0.02][:12]:
    print("| %s | %s |" % (n, " | ".join("%.3f" % med(i, n) for i in range(len(bins)))))
PY
