/* Reading a bucket directory on every core: `cat` decodes several files at
 * once and writes them in order, and the pipeline's idle threads read the
 * next inputs ahead of its producer (verify, plan --from-buckets, stats).
 * Whatever the threads, the bytes out are the same: each output is
 * compared for -j 1, 2 and more with cmp, and against what the files hold
 * read by gzip itself; a damaged file in the middle stops every thread
 * count at the same file with the same message and the same bytes out
 * before it, and publishes nothing; what cat holds decoded is counted
 * (RINGSHARD_LOG=info) and stays under its bound however large the files. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "support.h"

#define sh sh_in_test_dir

/* D: 7 nodes, a base and an appended generation (rows with line breaks
 * inside quoted fields); R: the same rows in one run. */
static void dirs(void)
{
    test_dir_setup();
    SH_OK(GEN " --rows 30000 --seed 1 --newline-share 0.01 -o a.csv 2>/dev/null && "
          GEN " --rows 12000 --seed 2 --newline-share 0.01 -o b.csv 2>/dev/null && "
          "\"$RS\" bucket --quiet --key bill_id --nodes 7 -o D a.csv && "
          "\"$RS\" bucket --quiet --append -o D b.csv && "
          "\"$RS\" bucket --quiet --key bill_id --nodes 7 -o R a.csv b.csv && test -d D/g00000002");
}

TestSuite(parread, .init = dirs, .fini = test_dir_teardown, .timeout = 600);

/* cat --all and cat of some nodes: the same bytes for -j 1, 2 and 5, each
 * node's rows those of the one-run file (gzip -dc), gzip output too. */
Test(parread, cat_writes_the_same_stream_for_any_threads)
{
    SH_OK("set -e; for j in 1 2 5; do \"$RS\" cat -j $j --all D > all$j.csv; "
          "\"$RS\" cat -j $j D 3 0 6 > some$j.csv; "
          "\"$RS\" cat -j $j --compress gzip --all D > all$j.csv.gz; done; "
          "cmp all1.csv all2.csv; cmp all1.csv all5.csv; cmp some1.csv some2.csv; cmp some1.csv some5.csv; "
          "cmp all1.csv.gz all2.csv.gz; cmp all1.csv.gz all5.csv.gz; gzip -dc all2.csv.gz | cmp - all1.csv; "
          "{ gzip -dc R/3.csv.gz; gzip -dc R/0.csv.gz | sed 1d; gzip -dc R/6.csv.gz | sed 1d; } | cmp - some2.csv; "
          "for n in 0 1 2 3 4 5 6; do gzip -dc R/$n.csv.gz > r.t; \"$RS\" cat -j 2 D $n | cmp - r.t; done; "
          "test $(wc -c < all1.csv) -gt 2000000");
}

/* Files larger than cat's blocks and its look-ahead: 3 nodes of about
 * 12 MB each. Every thread count writes the same bytes, and -j 2 holds at
 * most (2 x 2 files x 2 blocks + 2 + 1) blocks of about 1 MiB (and their
 * row ends) however large the files. */
Test(parread, cat_holds_a_bounded_number_of_blocks)
{
    SH_OK("set -e; " GEN " --rows 400000 --seed 5 -o big.csv 2>/dev/null; "
          "\"$RS\" bucket --quiet --key bill_id --nodes 3 -o BIG big.csv; "
          "RINGSHARD_LOG=info \"$RS\" cat -j 2 --all BIG 2> log2 > big2.csv; "
          "\"$RS\" cat -j 1 --all BIG > big1.csv; cmp big1.csv big2.csv; "
          "{ head -1 big.csv; for n in 0 1 2; do gzip -dc BIG/$n.csv.gz | sed 1d; done; } | cmp - big1.csv; "
          "held=$(sed -n 's/.*at most \\([0-9]*\\) bytes of decoded rows.*/\\1/p' log2); "
          "grep -q 'decoded by 2 threads' log2; test -n \"$held\"; "
          "test $held -gt 1000000; test $held -le $((11 * (1048576 + 262144))); "
          "test $(wc -c < big1.csv) -gt $((2 * held))");
}

/* A file in the middle that does not decode (a byte changed) or is not
 * the size its manifest says: every thread count stops at it with the
 * same message and exit 3, the same bytes out before it on standard
 * output, and no -o FILE. */
Test(parread, cat_stops_at_a_damaged_file_the_same_for_any_threads)
{
    const char *damage[] = {
        "s=$(stat -c %s X/4.csv.gz); printf 'ZZZZ' | dd of=X/4.csv.gz bs=1 seek=$((s / 2)) conv=notrunc 2>/dev/null",
        "echo xx >> X/g00000002/2.csv.gz",
    };
    for (size_t i = 0; i < sizeof damage / sizeof *damage; i++) {
        cmd_result r = sh("set -e; rm -rf X out*.csv; cp -a D X; %s; "
                          "for j in 1 2 5; do set +e; \"$RS\" cat -j $j --all X > o$j.csv 2> e$j; echo $? > rc$j; "
                          "\"$RS\" cat -j $j -o out$j.csv --all X 2> f$j; echo $? > rcf$j; set -e; "
                          "test ! -e out$j.csv; done; "
                          "cmp o1.csv o2.csv; cmp o1.csv o5.csv; cmp e1 e2; cmp e1 e5; cmp f1 f5; "
                          "cat rc1 rc2 rc5 rcf1 rcf2 rcf5 | tr '\\n' ' '; cat e2",
                          damage[i]);
        cr_assert_eq(r.rc, 0, "damage %zu: exit %d\n%s\n%s", i, r.rc, r.out, r.err);
        cr_assert(strstr(r.out, "3 3 3 3 3 3 "), "damage %zu: exits %s", i, r.out);
        cr_assert(strstr(r.out, i == 0 ? "X/4.csv.gz: " : "X/g00000002/2.csv.gz: "), "damage %zu: %s", i, r.out);
        cr_assert(strstr(r.out, "(the file does not match X/"), "damage %zu: %s", i, r.out);
        cmd_result_free(&r);
    }
}

/* The pipeline's readers: verify, plan --from-buckets --emit and stats of
 * the files give the same bytes for -j 1, 2 and 3, with the default
 * --memory (each file read ahead whole) and a small one (read ahead in
 * part: an eighth of a batch), and the moved rows are those of the files. */
Test(parread, pipeline_readers_write_the_same_for_any_threads)
{
    SH_OK("set -e; for m in 1G 40M; do for j in 1 2 3; do "
          "\"$RS\" verify -j $j --memory $m D > v$j; "
          "\"$RS\" plan -j $j --memory $m --from-buckets D --add 2 --emit M$j --json p$j.json --quiet > /dev/null; "
          "sed -i '/\"seconds\"/d; /\"emit\"/d' M$j/manifest.json p$j.json; "
          "\"$RS\" stats -j $j --memory $m --key bill_id --nodes 7 D/*.csv.gz D/g*/*.csv.gz > s$j; sed 1d s$j > s$j.t; done; "
          "for j in 2 3; do cmp v1 v$j; diff -r M1 M$j; cmp p1.json p$j.json; sed 1d s1 | cmp - s$j.t; done; "
          "rm -rf M1 M2 M3; done; grep -q OK v1; "
          "\"$RS\" plan -j 2 --from-buckets D --add 2 --emit M --quiet > /dev/null; "
          "test $(ls M/*.csv.gz | wc -l) -gt 0; "
          "for f in M/*.csv.gz; do gzip -dc $f | sed 1d; done | sort > moved; "
          "\"$RS\" cat -j 1 --all D | sed 1d | sort > every; comm -23 moved every | wc -l | grep -qx 0");
}

/* A damaged file in the middle of what verify and plan read: the same
 * verdict and message for every thread count, read ahead or not, and no
 * --emit directory. */
Test(parread, pipeline_readers_stop_at_a_damaged_file_the_same_for_any_threads)
{
    SH_OK("set -e; cp -a D X; s=$(stat -c %%s X/4.csv.gz); "
          "printf 'ZZZZ' | dd of=X/4.csv.gz bs=1 seek=$((s / 2)) conv=notrunc 2>/dev/null; "
          "for j in 1 2 3; do set +e; \"$RS\" verify -j $j X > v$j 2>&1; echo $? >> v$j; "
          "\"$RS\" plan -j $j --from-buckets X --add 2 --emit M$j --quiet > p$j 2>&1; echo $? >> p$j; set -e; "
          "test ! -e M$j; done; cmp v1 v2; cmp v1 v3; cmp p1 p2; cmp p1 p3; "
          "grep -q 'X/4.csv.gz' v1 || grep -q '4.csv.gz' v1; grep -q 'X/4.csv.gz' p1; "
          "test $(tail -1 v1) = 3; test $(tail -1 p1) != 0");
}
