/* --memory bounds the whole process, whatever the input size: the peak
 * resident set of `ringshard bucket` over 300,000 generated rows (30 MB of
 * CSV, many batches) stays within the budget. Measured by Python's
 * resource.getrusage(RUSAGE_CHILDREN), i.e. by the kernel. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rs_config.h"
#include "support.h"


Test(memory, peak_rss_within_budget, .timeout = 300)
{
    char *tmp = make_tmpdir();
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "cd %s && \"$(dirname \"$RS\")/gen_bills\" --rows 300000 --seed 9 --newline-share 0.01 2>/dev/null "
             "| gzip -1 > in.csv.gz && python3 -c \"\nimport resource, subprocess, sys\n"
             "for mem in (32, 64):\n"
             "    subprocess.run([sys.argv[1], 'bucket', '--quiet', '--memory', f'{mem}M', '-o', f'out{mem}', "
             "'in.csv.gz'], check=True)\n"
             "    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB, max over children so far\n"
             "    print(mem, peak)\n"
             "\" \"$RS\"",
             tmp);
    char *out, *err;
    int rc = run(cmd, &out, &err);
    cr_assert_eq(rc, 0, "%s %s", out, err);
    int mem, peak, n = 0;
    const char *p = out;
    while (sscanf(p, "%d %d", &mem, &peak) == 2) {
        cr_assert_leq(peak, mem * 1024, "--memory %dM: peak RSS %d KiB", mem, peak);
        cr_assert_gt(peak, 8 * 1024, "the measurement itself must see the process (%d KiB)", peak);
        n++;
        p = strchr(p, '\n');
        if (!p)
            break;
        p++;
    }
    cr_assert_eq(n, 2, "%s", out);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    system(cmd);
    free(out);
    free(err);
    free(tmp);
}

/* What --memory counts (threads, outputs, the ring), in runs of
 * their own directory. */
TestSuite(memory_bound, .init = test_dir_setup, .fini = test_dir_teardown);

/* ---- --memory is a bound on the whole process ----------------------------- */

/* Runs `ringshard ARGS` (split at blanks) in a fresh Python (so that
 * RUSAGE_CHILDREN's peak is this run's) and returns its exit status;
 * *peak_kib gets the child's peak RSS, *err_text its stderr. */
static int peak_of(const char *args, long *peak_kib, char **err_text)
{
    cmd_result r = sh_in_test_dir(
        "python3 -c \"\nimport resource, subprocess, sys\n"
        "p = subprocess.run([sys.argv[1]] + sys.argv[2].split(), stderr=subprocess.PIPE, text=True)\n"
        "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
        "sys.stderr.write(p.stderr)\n\" \"$RS\" '%s'",
        args);
    int rc = -1;
    cr_assert_eq(sscanf(r.out, "%d %ld", &rc, peak_kib), 2, "%s %s", r.out, r.err);
    *err_text = strdup(r.err);
    cmd_result_free(&r);
    return rc;
}

/* peak_of `ringshard bucket --quiet OPTS -o out in.csv.gz`, out removed
 * first. */
static int bucket_peak(const char *opts, long *peak_kib, char **err_text)
{
    char args[512];
    snprintf(args, sizeof args, "bucket --quiet %s -o out in.csv.gz", opts);
    SH_OK("rm -rf out");
    return peak_of(args, peak_kib, err_text);
}

/* Three runs that went over --memory in earlier builds (97, 75 and 950 MB):
 * each now either keeps to it or is refused before it uses the memory,
 * naming the minimum; a run given that minimum keeps to it. */
Test(memory_bound, threads_outputs_and_the_ring, .timeout = 600)
{
    SH_OK("\"$(dirname \"$RS\")/gen_bills\" --rows 100000 --seed 9 2>/dev/null | gzip -1 > in.csv.gz");
    static const struct {
        const char *opts;
        long mib;
    } cases[] = {
        {"-j 256 --memory 32M", 32},
        {"-j 64 --memory 64M", 64},
        {"--nodes 100000 --memory 32M", 32},
        {"-j 2 --memory 32M", 32},
    };
    int refused = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        long peak;
        char *e;
        int rc = bucket_peak(cases[i].opts, &peak, &e);
        cr_assert_leq(peak, cases[i].mib * 1024, "%s: peak RSS %ld KiB", cases[i].opts, peak);
        cr_assert_gt(peak, 4 * 1024, "the measurement must see the process (%ld KiB)", peak);
        if (rc == 0) {
            assert_verify(path_join(test_dir, "out"));
        } else {
            cr_assert_eq(rc, 64, "%s: %s", cases[i].opts, e);
            const char *at = strstr(e, "at least ");
            cr_assert(at, "%s: the refusal names the minimum: %s", cases[i].opts, e);
            long min = atol(at + 9);
            cr_assert_gt(min, cases[i].mib, "%s", e);
            refused++;
            /* given the minimum it names, the same run keeps to it (the
             * ring of 100000 nodes is left out: 1 GB for a test) */
            if (min <= 256) {
                char opts[256];
                snprintf(opts, sizeof opts, "%.*s --memory %ldM", (int)(strstr(cases[i].opts, " --memory") -
                                                                         cases[i].opts), cases[i].opts, min);
                char *e2;
                int rc2 = bucket_peak(opts, &peak, &e2);
                cr_assert_eq(rc2, 0, "%s: %s", opts, e2);
                cr_assert_leq(peak, min * 1024, "%s: peak RSS %ld KiB", opts, peak);
                assert_verify(path_join(test_dir, "out"));
                free(e2);
            }
        }
        free(e);
    }
    cr_assert_geq(refused, 2, "-j 256 and 100000 nodes cannot fit in 32 MiB");
}

/* Inputs whose batches each go to one destination - a bucket directory's
 * own files, bucketed again on its ring - take no more memory than the
 * same rows in one file, whose batches go everywhere: the parse groups'
 * buffers for a destination do not keep the size of the largest batch it
 * ever had, destination after destination (they did: a peak of 23 MB
 * against 11 MB here, and many batches' worth with more destinations). */
Test(memory_bound, batches_that_each_go_to_one_destination, .timeout = 300)
{
    SH_OK("awk 'BEGIN { print \"k,v\"; for (i = 0; i < 4000000; i++) printf \"k%%08d,%%09d\\n\", i, i * 7 }' > in.csv && "
          "\"$RS\" bucket --quiet --nodes 40 --compress none -o src in.csv && ls src/*.csv > list && "
          "test $(wc -l < list) = 40");
    long spread, skewed;
    char *e1, *e2;
    int rc1 = peak_of("bucket --quiet --nodes 40 --compress none --memory 40M -j 1 -o once in.csv", &spread, &e1);
    int rc2 = peak_of("bucket --quiet --nodes 40 --compress none --memory 40M -j 1 -o again --files-from list", &skewed,
                      &e2);
    cr_assert_eq(rc1, 0, "%s", e1);
    cr_assert_eq(rc2, 0, "%s", e2);
    cr_assert_gt(spread, 4 * 1024, "the measurement must see the process (%ld KiB)", spread);
    cr_assert_leq(skewed, spread + 4096, "one destination a batch: peak RSS %ld KiB, against %ld KiB for the rows in one file",
                  skewed, spread);
    /* each file's rows, bucketed again on the same ring, are that file */
    SH_OK("for f in src/*.csv; do cmp \"$f\" \"again/${f#src/}\" || exit 1; done && "
          "test $(ls again/*.csv | wc -l) = 40");
    free(e1);
    free(e2);
}

/* Lanes (--producers) keep to --memory too. Each lane holds 8
 * batches of the process's size (64 MiB from about 1.04G up), so 1100M
 * holds two lanes and 1000M one (said by RINGSHARD_LOG=info); with two
 * lanes, two inputs inflated at once, the peak stays within the bound. */
Test(memory_bound, lanes_within_budget, .timeout = 600)
{
    SH_OK("\"$(dirname \"$RS\")/gen_bills\" --rows 300000 --seed 9 2>/dev/null | gzip -1 > in.csv.gz && "
          "\"$(dirname \"$RS\")/gen_bills\" --rows 300000 --seed 10 2>/dev/null | gzip -1 > in2.csv.gz");
    setenv("RINGSHARD_LOG", "info", 1);
    long peak;
    char *e;
    int rc = bucket_peak("-j 2 --producers 2 --memory 1100M in2.csv.gz", &peak, &e);
    cr_assert_eq(rc, 0, "%s", e);
    cr_assert(strstr(e, "lanes: 2 (--producers 2"), "two lanes ran: %s", e);
    cr_assert_leq(peak, 1100 * 1024, "peak RSS %ld KiB", peak);
    cr_assert_gt(peak, 4 * 1024, "the measurement must see the process (%ld KiB)", peak);
    assert_verify(path_join(test_dir, "out"));
    free(e);
    rc = bucket_peak("-j 2 --producers 2 --memory 1000M in2.csv.gz", &peak, &e);
    cr_assert_eq(rc, 0, "%s", e);
    cr_assert(strstr(e, "lanes: 1 (--memory"), "1000M holds one lane: %s", e);
    cr_assert_leq(peak, 1000 * 1024, "peak RSS %ld KiB", peak);
    free(e);
    unsetenv("RINGSHARD_LOG");
}

/* Direct I/O (direct.h) keeps to --memory as well: its arena (a batch and
 * a block per output) and the outputs' last blocks come out of the share of
 * the batches. At 128M the batches are about 6.6 MiB, room enough for the
 * blocks of the 1000 outputs, so direct I/O is on where the file system
 * offers it (and the log says why not where it does not). */
Test(memory_bound, direct_io_within_budget, .timeout = 600)
{
    SH_OK("\"$(dirname \"$RS\")/gen_bills\" --rows 300000 --seed 9 2>/dev/null | gzip -1 > in.csv.gz");
    setenv("RINGSHARD_LOG", "info", 1);
    static const char *const opts[] = {"--memory 128M --direct-io on", "--memory 128M --compress none",
                                       "--memory 128M -j 3 --direct-io on"};
    for (size_t i = 0; i < sizeof opts / sizeof *opts; i++) {
        long peak;
        char *e;
        int rc = bucket_peak(opts[i], &peak, &e);
        cr_assert_eq(rc, 0, "%s: %s", opts[i], e);
        cr_assert(strstr(e, "info: outputs: direct I/O") ||
                      strstr(e, "info: outputs: written through the page cache (the file system"),
                  "%s: %s", opts[i], e);
        cr_assert_leq(peak, 128 * 1024, "%s: peak RSS %ld KiB", opts[i], peak);
        cr_assert_gt(peak, 4 * 1024, "the measurement must see the process (%ld KiB)", peak);
        assert_verify(path_join(test_dir, "out"));
        free(e);
    }
    unsetenv("RINGSHARD_LOG");
}

/* dedup --append keeps to --memory whatever the size of the history: at
 * --memory 32M -j 2, against a history whose key indexes hold more than
 * 32 MiB (2 million keys on 2 nodes, so that each node's index is also
 * larger than a thread's share), the peak RSS stays within 32 MiB, and so
 * it does against the same rows as a bucket directory, whose indexes the
 * run builds on the way (reading its rows once). Both write the new
 * generation and the duplicates report a --memory 1G run writes, byte for
 * byte; at 32M the new keys are looked up in several parts (the indexes
 * are read more than once). The rows are bill ids alone (gen_bills' first
 * column), to keep the data small. */
Test(memory_bound, dedup_append_on_a_history_larger_than_memory, .timeout = 600)
{
    SH_OK(GEN " --rows 2000000 --seed 3 --dup-share 0 --newline-share 0 2>/dev/null | cut -d, -f1 | gzip -1 > h.csv.gz "
          "&& { " GEN " --rows 360000 --seed 4 --newline-share 0 2>/dev/null | cut -d, -f1 && "
          "gzip -dc h.csv.gz | awk 'NR > 1 && NR %% 37 == 0'; } | gzip -1 > n.csv.gz && "
          "\"$RS\" dedup --quiet --append --nodes 2 -o H h.csv.gz && \"$RS\" bucket --quiet --nodes 2 -o B h.csv.gz && "
          "cp -al H H1 && cp -al H H32 && cp -al B B32");
    /* what the summary must say of the history (H's manifest) */
    cmd_result m = sh_in_test_dir("python3 -c 'import json; f = json.load(open(\"H/manifest.json\"))[\"files\"]; "
                                  "n = sum(x[\"index_bytes\"] for x in f); assert n > 32 << 20, n; "
                                  "print(\"(of %%.1f MB of indexes, %%.1f MB of data)\" %% "
                                  "(n / 1e6, sum(x[\"file_bytes\"] for x in f) / 1e6), end=\"\")'");
    cr_assert_eq(m.rc, 0, "%s", m.err);
    static const char *const runs[] = {"H1 1G", "H32 32M", "B32 32M"};
    double read[3];
    for (int i = 0; i < 3; i++) {
        char dir[8], mem[8], args[256], *e;
        long peak;
        sscanf(runs[i], "%7s %7s", dir, mem);
        snprintf(args, sizeof args, "dedup --append -j 2 --memory %s -o %s --duplicates %s.dups n.csv.gz", mem, dir,
                 dir);
        int rc = peak_of(args, &peak, &e);
        cr_assert_eq(rc, 0, "%s: %s", args, e);
        if (i > 0)
            cr_assert_leq(peak, 32 * 1024, "%s: peak RSS %ld KiB", args, peak);
        cr_assert_gt(peak, 8 * 1024, "the measurement must see the process (%ld KiB)", peak);
        cr_assert(strstr(e, "dropped: 54054 whose key the history holds"), "%s: %s", args, e);
        cr_assert(strstr(e, i < 2 ? ", 0 rows re-read" : ", 2000000 rows re-read to build 2 missing"), "%s: %s", args,
                  e);
        cr_assert(i == 2 || strstr(e, m.out), "%s: '%s' not in: %s", args, m.out, e);
        const char *h = strstr(e, "history: ");
        char unit[4];
        cr_assert(h && sscanf(h, "history: %lf %3s of key index read", &read[i], unit) == 2, "%s", e);
        read[i] *= !strcmp(unit, "GB") ? 1e3 : !strcmp(unit, "MB") ? 1 : !strcmp(unit, "kB") ? 1e-3 : 1e-6;
        free(e);
    }
    cmd_result_free(&m);
    cr_assert_gt(read[1], read[0] * 1.5, "at 32M the new keys are looked up in parts: %.1f MB, %.1f at 1G", read[1],
                 read[0]);
    SH_OK("for d in H32 B32; do for f in 0.csv.gz 1.csv.gz 0.keyidx 1.keyidx; do cmp H1/g00000002/$f $d/g00000002/$f || exit 1; done; "
          "cmp H1.dups $d.dups && \"$RS\" verify --quiet $d || exit 1; done");
}

#if RS_HAVE_ZSTD
/* --memory bounds a zstd in -> zstd out run as a gzip one:
 * peak RSS of 300,000 rows (many batches) at 32M and 64M, and at 64M with
 * -j 2, measured by the kernel (getrusage of the child). (Here, not in
 * test_zstd.c: ASan's shadow memory makes RSS meaningless, and
 * tools/dev/sanitize.sh leaves this suite out.) */
Test(memory_bound, zstd_in_zstd_out_within_budget, .timeout = 600)
{
    SH_OK("\"$(dirname \"$RS\")/gen_bills\" --rows 300000 --seed 9 --newline-share 0.01 2>/dev/null | "
          "zstd -q -3 > in.csv.zst");
    const char *opts[] = {"--memory 32M", "--memory 64M", "-j 2 --memory 64M"};
    const long mib[] = {32, 64, 64};
    for (int i = 0; i < 3; i++) {
        cmd_result r = sh_in_test_dir(
            "rm -rf out; python3 -c \"\nimport resource, subprocess, sys\n"
            "p = subprocess.run([sys.argv[1], 'bucket', '--quiet', '--compress', 'zstd'] + sys.argv[2].split() + "
            "['-o', 'out', 'in.csv.zst'])\n"
            "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n\" \"$RS\" '%s'",
            opts[i]);
        int rc = -1;
        long peak = 0;
        cr_assert_eq(sscanf(r.out, "%d %ld", &rc, &peak), 2, "%s %s", r.out, r.err);
        cr_assert_eq(rc, 0, "%s: %s", opts[i], r.err);
        cr_assert_leq(peak, mib[i] * 1024, "%s: peak RSS %ld KiB", opts[i], peak);
        cr_assert_gt(peak, 4 * 1024, "the measurement must see the process (%ld KiB)", peak);
        cmd_result_free(&r);
        assert_verify(path_join(test_dir, "out"));
    }
}
#endif
