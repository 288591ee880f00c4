/* Lanes (--producers, cluster/lanes.h): several pipelines of one process
 * at once, each on a contiguous range of the work items, their pieces
 * copied into place. Whatever the lanes (--producers) and threads (-j),
 * the output is the one lane's byte for byte, failures say what one lane
 * says, and a stop during the piece copy publishes nothing. Every test
 * checks that lanes really ran (RINGSHARD_LOG=info, RINGSHARD_SHOW_RANGES):
 * otherwise it would compare one lane with itself. (Lanes under MPI ranks:
 * test_mpi.c.) */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rs_config.h"
#include "support.h"
#include "wait.h"

#define CHECK_BUCKETS "python3 " RS_SOURCE_DIR "/tests/check_buckets.py \"$RS\" "

TestSuite(lanes, .init = test_dir_setup, .fini = test_dir_teardown, .timeout = 900);

#define OK SH_OK

/* Two output directories the same, byte for byte (manifests included). */
#define SAME(a, b) "diff -r " a " " b

/* Units of about 1 MB (ringshard's own file is cut into several), and
 * --memory enough for 4 lanes of the 64 MiB batches that --memory gives
 * from about 1 GiB up (a lane holds 8 batches, see lanes.c). */
/* (RUN_AS takes the key and node count: an option given twice is refused) */
#define RUN_AS "RINGSHARD_UNIT_BYTES=1000000 \"$RS\" bucket --quiet --allow-empty --memory 4G "
#define RUN RUN_AS "--key bill_id --nodes 7 "

/* The mix: small plain files, gzip files (one unit each) and one file of
 * ringshard's gzip members (120,000 rows: several units); a header-only
 * and an empty file between them. */
static void make_mix(void)
{
    OK(GEN " --rows 120000 --seed 21 --newline-share 0.01 -o in.csv 2>/dev/null && "
       "\"$RS\" bucket --quiet --key 1 --nodes 1 --memory 32M -o w in.csv && mv w/0.csv.gz own.gz && rm -r w && "
       GEN " --rows 3000 --seed 22 -o p1.csv 2>/dev/null && " GEN " --rows 9000 --seed 23 -o p2.csv 2>/dev/null && "
       GEN " --rows 20000 --seed 24 -o g1.csv 2>/dev/null && gzip -1 g1.csv && "
       GEN " --rows 15000 --seed 25 -o g2.csv 2>/dev/null && gzip -6 g2.csv && "
       "head -n 1 p1.csv > hdr.csv && : > empty.csv");
}

#define MIX "--allow-empty p1.csv g1.csv.gz own.gz hdr.csv p2.csv empty.csv g2.csv.gz"

/* Asserts that the run whose stderr is in file `log` had `lanes` lanes. */
#define LANES_RAN(log, lanes) "grep -q '^ringshard: info: lanes: " lanes " (' " log

Test(lanes, identical_for_any_threads_and_producers)
{
    make_mix();
    OK(RUN "-j 1 --producers 1 -o ref " MIX " && " CHECK_BUCKETS "ref bill_id p1.csv g1.csv.gz in.csv hdr.csv p2.csv "
           "g2.csv.gz -- --nodes 7 > /dev/null");
    int threads[] = {1, 2, 3, 8};
    for (int t = 0; t < 4; t++)
        for (int P = 1; P <= 4; P++) {
            /* lanes get one thread at least: -j bounds them */
            int lanes = P < threads[t] ? P : threads[t];
            OK("RINGSHARD_LOG=info " RUN "-j %d --producers %d -o o " MIX " 2> log && " LANES_RAN("log", "%d")
               " && " SAME("ref", "o") " && rm -r o", threads[t], P, lanes);
        }
    /* 4 lanes: lanes 1-3 started inside the inputs, one inside own.gz */
    OK("RINGSHARD_SHOW_RANGES=1 " RUN "-j 4 --producers 4 -o show " MIX " 2> ranges && "
       "test $(grep -c '^ringshard: lane [1-3]: items' ranges) = 3 && grep -q 'lane [1-3]: .* from own.gz byte [1-9]' ranges");
    /* and no piece is left beside the files */
    OK("! ls show | grep -q lane");
}

#if RS_HAVE_ZSTD
Test(lanes, zstd_output_identical)
{
    make_mix();
    OK(RUN "-j 1 --compress zstd -o ref " MIX);
    for (int P = 2; P <= 3; P++)
        OK("RINGSHARD_LOG=info " RUN "-j 3 --producers %d --compress zstd -o z " MIX " 2> log && "
           LANES_RAN("log", "%d") " && " SAME("ref", "z") " && rm -r z", P, P);
}
#endif

Test(lanes, plain_keys_only_stats_and_verify)
{
    make_mix();
    OK(RUN "-j 1 --compress none -o ref " MIX " && RINGSHARD_LOG=info " RUN "-j 3 --producers 3 --compress none -o o3 "
           MIX " 2> log && " LANES_RAN("log", "3") " && " SAME("ref", "o3"));
    /* the counting commands divide the same way: stats' report, verify's verdict */
    OK("RINGSHARD_UNIT_BYTES=1000000 \"$RS\" stats --quiet --key bill_id --nodes 7 --memory 4G -j 1 " MIX " > s1 && "
       "RINGSHARD_LOG=info RINGSHARD_UNIT_BYTES=1000000 \"$RS\" stats --quiet --key bill_id --nodes 7 --memory 4G -j 3 "
       "--producers 3 " MIX " > s3 2> log && " LANES_RAN("log", "3") " && grep -v ' read in ' s1 > s1.r && "
       "grep -v ' read in ' s3 > s3.r && cmp s1.r s3.r");
    OK("RINGSHARD_LOG=info \"$RS\" verify --quiet --memory 4G -j 3 --producers 3 o3 2> log && " LANES_RAN("log", "3"));
}

/* Runs the mix with `bad` in place of p2.csv (in a later lane) with one
 * lane and with three, keyed by `key` (an option's words); the exit code
 * and stderr must be the same. */
static void same_failure(const char *key)
{
    OK("RINGSHARD_SHOW_RANGES=1 " RUN_AS "--nodes 7 %s -j 3 --producers 3 -o x p1.csv g1.csv.gz own.gz hdr.csv bad.csv empty.csv "
       "g2.csv.gz 2> ranges; grep -q '^ringshard: lane [12]: items .* from \\(own.gz\\|hdr.csv\\|bad.csv\\)' ranges",
       key);
    OK("for P in 1 3; do " RUN_AS "--nodes 7 %s -j 3 --producers $P -o x$P p1.csv g1.csv.gz own.gz hdr.csv bad.csv empty.csv "
       "g2.csv.gz > /dev/null 2> err$P; echo $? > rc$P; done; test \"$(cat rc1)\" != 0 && test -s err1 && "
       "cmp rc1 rc3 && cmp err1 err3 && ! test -e x1 && ! test -e x3 && ! ls | grep -q ringshard-tmp",
       key);
}

Test(lanes, failures_in_a_later_lane_say_what_one_lane_says)
{
    make_mix();
    /* a row without the key column */
    OK("python3 -c \"l = open('p2.csv').read().split('\\n'); l[4000] = 'x'; open('bad.csv', 'w').write('\\n'.join(l))\"");
    same_failure("--key 3");
    /* a header that differs from the first input's */
    OK("{ head -n 1 p2.csv | tr a-z A-Z; tail -n +2 p2.csv; } > bad.csv");
    same_failure("--key bill_id");
    /* a corrupt gzip member: a byte in the middle of gzip data */
    OK("gzip -1 -c p2.csv > bad.csv && python3 -c \"d = bytearray(open('bad.csv', 'rb').read()); "
       "d[len(d) // 2] ^= 0xff; open('bad.csv', 'wb').write(d)\"");
    same_failure("--key bill_id");
}

Test(lanes, quarantine_identical)
{
    make_mix();
    OK("python3 -c \"l = open('p2.csv').read().split('\\n'); l[4000] = 'x'; l[7000] = 'y,\\\"z'; "
       "open('bad.csv', 'w').write('\\n'.join(l))\"");
    OK("for P in 1 3; do RINGSHARD_LOG=info " RUN_AS "--key 3 --nodes 7 -j 3 --producers $P --on-bad-row quarantine=q$P.tsv "
       "-o x$P p1.csv g1.csv.gz own.gz bad.csv g2.csv.gz 2> log$P || exit 9; done && " LANES_RAN("log3", "3") " && "
       "cmp q1.tsv q3.tsv && test $(wc -l < q1.tsv) -ge 3 && " SAME("x1", "x3") " && ! ls | grep -q lane");
}

/* A stop signal while a lane copies its pieces into the files: nothing
 * is published, the previous output stays, no temporary is left. */
Test(lanes, interrupt_during_the_piece_copy_publishes_nothing)
{
    make_mix();
    OK(RUN "-j 2 -o out " MIX " && cp -r out before");
    cmd_result r = sh_in_test_dir(
        WAIT_SH "RINGSHARD_TEST_PAUSE_AT=piece_copy RINGSHARD_TEST_PAUSE_INTERRUPTED=1 " RUN "-j 2 --producers 2 --force -o out " MIX " 2> err & p=$!; "
        "wait_stopped $p 'the piece copy' || { kill -9 $p; exit 124; }; "
        "ls out.ringshard-tmp.*/ | grep -q 'lane1$' && echo pieces; "
        "kill -INT $p; kill -CONT $p; wait $p; echo rc=$?; cat err; "
        "ls -A | grep -c -e 'ringshard-tmp' -e lane || true");
    cr_assert_eq(r.rc, 0, "%s %s", r.out, r.err);
    cr_assert_str_eq(r.out, "pieces\nrc=130\nringshard bucket: stopping (interrupted)...\nringshard bucket: interrupted\n0\n", "%s", r.err);
    cmd_result_free(&r);
    OK(SAME("before", "out"));
}

/* What bounds the lanes, as RINGSHARD_LOG=info says: standard input is
 * one lane, so are fewer work items than lanes, and a --memory that
 * cannot hold two lanes' batches. */
Test(lanes, choice_of_lanes_logged)
{
    make_mix();
    OK("cat p1.csv | RINGSHARD_LOG=info " RUN "-j 4 --producers 4 -o a - p2.csv 2> log && "
       LANES_RAN("log", "1") " && grep -q 'standard input' log");
    OK("RINGSHARD_LOG=info " RUN "-j 4 --producers 4 -o b p1.csv p2.csv 2> log && "
       LANES_RAN("log", "2") " && grep -q '2 work items' log");
    OK("RINGSHARD_LOG=info \"$RS\" bucket --quiet --nodes 7 -j 4 --producers 4 --memory 1G -o c p1.csv p2.csv 2> log && "
       LANES_RAN("log", "1") " && grep -q -- '--memory' log");
    /* every lane holds a descriptor per output: 1000 outputs twice do not
     * fit under a hard limit of 1024 */
    OK("ulimit -n 1024 && RINGSHARD_LOG=info " RUN_AS "--key bill_id -j 4 --producers 2 --nodes 1000 -o f p1.csv p2.csv 2> log && "
       LANES_RAN("log", "1") " && grep -q 'open-file limit 1024' log");
    /* automatic: -j 8 with gzip output is ceil(8 / 4) = 2 lanes */
    OK("RINGSHARD_LOG=info " RUN "-j 8 -o d " MIX " 2> log && " LANES_RAN("log", "2") " && grep -q automatic log");
    OK("\"$RS\" bucket --producers x -o e p1.csv 2> err; test $? = 64 && grep -q -- --producers err");
}
