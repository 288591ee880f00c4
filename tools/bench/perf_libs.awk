# CPU seconds by library and by symbol of one `perf record` run, from
#   perf report --sort dso,sym --stdio -F sample,dso,sym
# A library's user CPU is its share of the user samples times the run's
# user seconds (perf's cpu-clock samples on a VM count time, not cycles).
# The kernel's samples are left out of the shares: its CPU is the run's
# system seconds, which the caller has.
#
# Variables: u (the run's user CPU seconds, /usr/bin/time %U), own (the
# ringshard binary's file name, as perf names its DSO).
# Output, tab-separated: "lib NAME SECONDS" for own, libc, isal, gomp and
# other, then "sym NAME SECONDS" for each symbol of own code + libc, in no
# order (mawk has no sort: pipe it through `sort -t<TAB> -k3,3gr`).
# Used by tools/bench/bench_bucket.sh and tools/bench/bench_cpu_ab.sh.
/^#/ { next }
NF >= 4 {
    n = $1; dso = $2; sub(/^[^]]*\] /, ""); sym = $0
    g = dso ~ /kernel/ ? "kernel" : dso ~ /isal/ ? "isal" : dso ~ /libc\.so/ ? "libc" : dso == own ? "own" : dso ~ /gomp/ ? "gomp" : "other"
    cnt[g] += n
    if (g == "own" || g == "libc")
        by[sym] += n
}
END {
    us = cnt["own"] + cnt["libc"] + cnt["isal"] + cnt["gomp"] + cnt["other"]
    k = us ? u / us : 0
    split("own libc isal gomp other", libs, " ")
    for (i = 1; i <= 5; i++)
        printf "lib\t%s\t%.6f\n", libs[i], cnt[libs[i]] * k
    for (x in by)
        printf "sym\t%s\t%.6f\n", x, by[x] * k
}
