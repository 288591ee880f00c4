#!/usr/bin/env bash
# Sums up a run's thread timeline (RINGSHARD_TIMELINE=FILE ringshard ...):
# where each thread's time went, and which stage ran alone while a core
# sat idle. See docs/performance.md, "Where the second core waits".
#
# Usage: tools/bench/timeline.sh FILE [CORES]     (CORES: default nproc)
#
# Prints three tables:
#  - threads: each thread's seconds in stages of work ("cpu"), asleep
#    waiting for another thread ("wait"), asleep on the disk ("io"), and
#    its CPU seconds (the thread's own clock) in all of them;
#  - stages: each stage's seconds over all threads, the CPU seconds of
#    them, the seconds runnable but waiting for a core (another process's
#    or a kernel thread's: the thread's schedstat), the rest asleep in the
#    kernel (I/O, a lock, a page), and its spans;
#  - idle: the core-seconds no "cpu" span used, from the first instant to
#    the process's exit, given to what ran meanwhile: a stage running alone
#    (shared equally when several ran), or "(nothing)" (start-up before the
#    first span, gaps no stage covers, the exit). With CORES cores and wall
#    time W there are CORES x W core-seconds: the idle ones plus the
#    busy ones add up to them.
# Exit status: 0, or 2 for a missing or unreadable FILE.
set -euo pipefail
export LC_ALL=C
f=${1:-}
cores=${2:-$(nproc)}
[[ -n $f && -r $f ]] || { echo "timeline: usage: tools/bench/timeline.sh FILE [CORES]" >&2; exit 2; }
[[ $cores =~ ^[1-9][0-9]*$ ]] || { echo "timeline: CORES must be a positive integer" >&2; exit 2; }

exit_at=$(awk -F'\t' '$1 == "# exit" { print $2 }' "$f")
[[ -n $exit_at ]] || exit_at=$(awk -F'\t' '!/^#/ && $5 > m { m = $5 } END { print m + 0 }' "$f")

echo "timeline: $f, $cores cores, wall ${exit_at} s (from start-up to exit)"
echo
awk -F'\t' '
    /^#/ { next }
    { d = $5 - $4; t[$1 "\t" $3] += d; th[$1] = 1; c[$1] += $6
      st[$2] += d; sc[$2] += $6; rq[$2] += $7; n[$2]++; kind[$2] = $3 }
    END {
        printf "%-8s %9s %9s %9s %9s\n", "thread", "cpu s", "wait s", "io s", "on-CPU s"
        for (x in th) printf "%-8s %9.3f %9.3f %9.3f %9.3f\n", x, t[x "\tcpu"], t[x "\twait"], t[x "\tio"], c[x] | "sort -n"
        close("sort -n")
        printf "\n%-16s %-5s %9s %9s %9s %9s %7s\n", "stage", "kind", "s", "on-CPU s", "runq s", "asleep s", "spans"
        for (s in st) printf "%-16s %-5s %9.3f %9.3f %9.3f %9.3f %7d\n", s, kind[s], st[s], sc[s], rq[s], st[s] - sc[s] - rq[s], n[s] | "sort -k3,3nr"
        close("sort -k3,3nr")
    }' "$f"
echo
# Sweep the cpu spans in time order: between two events, k spans run; the
# cores - k idle ones are given to the running stages (or to "(nothing)").
awk -F'\t' '!/^#/ && $3 == "cpu" { print $4 "\t1\t" $2; print $5 "\t-1\t" $2 }' "$f" | sort -t$'\t' -k1,1g -k2,2n |
    awk -F'\t' -v C="$cores" -v W="$exit_at" '
    function give(to,    dt, idle, s) {
        dt = to - last
        if (dt <= 0) return
        idle = (C - k > 0 ? C - k : 0) * dt
        busy += (k < C ? k : C) * dt
        if (k == 0) gone["(nothing)"] += idle
        else for (s in run) if (run[s] > 0) gone[s] += idle * run[s] / k
        last = to
    }
    { give($1 + 0); run[$3] += $2; k += $2 }
    END {
        give(W + 0)
        total = C * W
        printf "%-16s %14s %8s\n", "idle while", "core-s idle", "share"
        for (s in gone) if (gone[s] > 0.0005) { printf "%-16s %14.3f %7.1f%%\n", s, gone[s], 100 * gone[s] / total | "sort -k2,2nr"; all += gone[s] }
        close("sort -k2,2nr")
        printf "%-16s %14.3f %7.1f%%\n", "idle, all", all, 100 * all / total
        printf "%-16s %14.3f %7.1f%%  (of %d cores x %.3f s)\n", "busy (cpu spans)", busy, 100 * busy / total, C, W
    }'
