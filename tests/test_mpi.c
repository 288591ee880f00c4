/* MPI runs (built with -DRINGSHARD_MPI=ON): `mpirun -n R ringshard ...` must
 * give output byte-identical to one process, for R = 1..4 and any threads
 * per rank, on inputs of very unequal sizes; one failing or killed rank
 * fails the job with the single-process message and publishes nothing.
 * Every run here is a real mpirun of the real command (Open MPI, with
 * --oversubscribe since this machine has fewer cores than ranks). */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "support.h"
#include "wait.h"

#define MPIRUN "mpirun --allow-run-as-root --oversubscribe --mca btl self,vader -n "
#define DATA RS_SOURCE_DIR "/fixtures/data/"

TestSuite(mpi, .init = test_dir_setup, .fini = test_dir_teardown, .timeout = 600);

typedef cmd_result res;
#define res_free cmd_result_free
#define sh sh_in_test_dir

#define OK SH_OK

/* Inputs of very unequal sizes: a 120,000-row gzip file (several batches at
 * --memory 32M), the fixtures (one of them CRLF and two members, one plain),
 * a header-only file, an empty file and a few tiny ones. */
static void make_inputs(void)
{
    OK(GEN " --rows 120000 --seed 5 --newline-share 0.01 -o big.csv 2>/dev/null && gzip -1 big.csv && "
       GEN " --rows 7 --seed 6 -o tiny1.csv 2>/dev/null && "
       GEN " --rows 300 --seed 7 -o tiny2.csv 2>/dev/null && gzip tiny2.csv && "
       "head -n 1 tiny1.csv > header_only.csv && : > empty.csv && "
       "cp " DATA "bills_a.csv.gz " DATA "bills_b.csv.gz " DATA "bills_c.csv .");
}

#define INPUT_FILES "tiny1.csv big.csv.gz header_only.csv bills_b.csv.gz empty.csv tiny2.csv.gz bills_a.csv.gz bills_c.csv"
/* the empty ones pass by --allow-empty */
#define INPUTS "--allow-empty " INPUT_FILES

/* diff -r of two output directories, the manifests compared without their
 * wall times. */
#define SAME(a, b)                                                                                   \
    "diff -r -x manifest.json " a " " b " && grep -v '\"seconds\"' " a "/manifest.json > " a ".m && " \
    "grep -v '\"seconds\"' " b "/manifest.json > " b ".m && cmp " a ".m " b ".m"

Test(mpi, bucket_identical_for_1_to_4_ranks_and_any_threads)
{
    make_inputs();
    OK("\"$RS\" bucket --quiet --key bill_id --memory 32M -o ref " INPUTS);
    /* (the checker reads every input's header: the empty file is left out) */
    OK("python3 " RS_SOURCE_DIR "/tests/check_buckets.py \"$RS\" ref bill_id "
       "tiny1.csv big.csv.gz header_only.csv bills_b.csv.gz tiny2.csv.gz bills_a.csv.gz bills_c.csv > /dev/null");
    for (int R = 1; R <= 4; R++)
        for (int T = 1; T <= 2; T++) {
            OK(MPIRUN "%d \"$RS\" bucket --quiet -j %d --key bill_id --memory 32M -o r%d_%d " INPUTS
                      " && " SAME("ref", "r%d_%d"),
               R, T, R, T, R, T, R, T, R, T, R, T);
        }
}

Test(mpi, plain_keys_only_and_quarantine_identical)
{
    make_inputs();
    /* a stray quote in a small file in the middle, and one in the last */
    OK("{ head -n 1 tiny1.csv; printf 'ab\"c,1\\nok1,2\\n'; } > bad1.csv && "
       "{ head -n 1 tiny1.csv; printf 'ok2,1\\nq\"q,2\\n'; } > bad2.csv");
#define QIN "tiny1.csv big.csv.gz bad1.csv bills_b.csv.gz tiny2.csv.gz bad2.csv"
    for (int k = 0; k < 2; k++) {
        const char *opts = k ? "--keys-only --key bill_id" : "--compress none --key bill_id";
        OK("\"$RS\" bucket --quiet %s --on-bad-row quarantine=ref.q --memory 32M -o ref " QIN, opts);
        for (int R = 2; R <= 4; R++)
            OK(MPIRUN "%d \"$RS\" bucket --quiet -j 1 %s --on-bad-row quarantine=r%d.q --memory 32M -o r%d " QIN
                      " && " SAME("ref", "r%d") " && cmp ref.q r%d.q",
               R, opts, R, R, R, R, R, R, R);
        OK("grep -c . ref.q | grep -qx 3 && rm -r ref r2 r3 r4 *.q");
    }
}

Test(mpi, more_ranks_than_inputs)
{
    OK("cp " DATA "bills_a.csv.gz . && \"$RS\" bucket --quiet --nodes 50 -o ref bills_a.csv.gz && " MPIRUN
       "4 \"$RS\" bucket --quiet --nodes 50 -o r bills_a.csv.gz && " SAME("ref", "r"));
}

/* RINGSHARD_LOG=info: each rank reports its steps' timing, and its lanes, once. */
Test(mpi, log_info_reports_every_rank_once)
{
    OK("cp " DATA "bills_a.csv.gz " DATA "bills_c.csv . && RINGSHARD_LOG=info " MPIRUN
       "2 \"$RS\" bucket --quiet --nodes 50 -o r bills_a.csv.gz bills_c.csv 2> log.txt && "
       "test $(grep -c '^ringshard: info: rank 0 of 2: pipeline [0-9.]* s ([0-9]* rows), pieces copied' log.txt) = 1 && "
       "test $(grep -c '^ringshard: info: rank 1 of 2: pipeline [0-9.]* s ([0-9]* rows), pieces copied' log.txt) = 1 && "
       "test $(grep -c '^ringshard: info: pipeline: ' log.txt) = 2 && "
       "test $(grep -c '^ringshard: info: lanes: 1 (' log.txt) = 2 && "
       /* how rank 0 writes the files; the other ranks' pieces are buffered */
       "test $(grep -c '^ringshard: info: outputs: ' log.txt) = 1 && test $(wc -l < log.txt) = 7");
}

/* The message a single process prints, the exit code, and: nothing
 * published, a previous output intact, no temporary left. */
static void expect_same_failure(int want_rc, const char *inputs, const char *extra)
{
    res s = sh("\"$RS\" bucket --quiet --force %s -o single %s", extra, inputs);
    cr_assert_eq(s.rc, want_rc, "single process: exit %d: %s", s.rc, s.err);
    for (int R = 2; R <= 4; R++) {
        OK("rm -rf out && mkdir out && echo keep > out/marker");
        /* -j 1 unless extra sets it (an option given twice is refused) */
        res m = sh(MPIRUN "%d \"$RS\" bucket --quiet %s --force-any %s -o out %s", R,
                   strstr(extra, "-j ") ? "" : "-j 1", extra, inputs);
        cr_assert_eq(m.rc, want_rc, "R=%d: exit %d, want %d: %s", R, m.rc, want_rc, m.err);
        char *line = strstr(m.err, "ringshard bucket: ");
        cr_assert(line, "R=%d: no message: %s", R, m.err);
        cr_assert(!strncmp(line, s.err, strlen(s.err)), "R=%d: message\n%s\ndiffers from one process's\n%s", R,
                  line, s.err);
        cr_assert(!strstr(line + 1, "ringshard bucket: "), "R=%d: reported more than once: %s", R, m.err);
        res_free(&m);
        res k = sh("ls -A out; cat out/marker; find . -name '*ringshard-tmp*' -o -name '*.rank[0-9]*' | wc -l");
        cr_assert_str_eq(k.out, "marker\nkeep\n0\n", "R=%d: previous output intact, nothing left: %s", R, k.out);
        res_free(&k);
    }
    res_free(&s);
}

Test(mpi, one_bad_input_fails_the_job_with_the_first_error)
{
    make_inputs();
    /* a corrupt gzip file late in the list, and a malformed row before it:
     * the row comes first in input order, so it is the error */
    OK("gzip -c tiny1.csv > late.gz && printf 'XXXXXXXX' | dd of=late.gz bs=1 seek=30 conv=notrunc 2>/dev/null && "
       "{ head -n 1 tiny1.csv; printf 'ab\"c,1\\n'; } > early.csv");
    expect_same_failure(2, "tiny1.csv big.csv.gz bills_b.csv.gz late.gz", "");
    expect_same_failure(2, "tiny1.csv early.csv big.csv.gz bills_b.csv.gz late.gz", "");
    /* different headers on different ranks */
    OK("printf 'other,cols\\n1,2\\n' > other.csv");
    expect_same_failure(2, "bills_c.csv big.csv.gz tiny2.csv.gz other.csv", "");
    /* a different header on a rank whose file also fails later: the header
     * comes first, as in one process */
    OK("printf 'other,cols\\n1,2\\nx\"y,3\\n' > other_bad.csv");
    expect_same_failure(2, "bills_c.csv big.csv.gz other_bad.csv", "");
}

Test(mpi, write_failure_on_a_rank_publishes_nothing)
{
    make_inputs();
    /* a 2 MB file-size limit: the pieces or the files outgrow it */
    OK("rm -rf out && mkdir out && echo keep > out/marker");
    /* The limit is set inside each rank (mpirun's own PMIx files need
     * more), and the ranks talk over TCP: the shared-memory transport's
     * segment files would outgrow the limit inside MPI_Init. */
    res m = sh("mpirun --allow-run-as-root --oversubscribe --mca btl self,tcp -n 3 sh -c 'ulimit -f 4096 && exec \"$RS\" \"$@\"' sh bucket --quiet -j 1 --nodes 2 "
               "--compress none --force-any -o out big.csv.gz bills_a.csv.gz bills_c.csv");
    cr_assert_eq(m.rc, 1, "exit %d: %s", m.rc, m.err);
    cr_assert(strstr(m.err, "ringshard bucket: ") && strstr(m.err, "File too large"), "%s", m.err);
    res_free(&m);
    res k = sh("ls -A out; find . -name '*ringshard-tmp*' -o -name '*.rank[0-9]*' | wc -l");
    cr_assert_str_eq(k.out, "marker\n0\n", "%s", k.out);
    res_free(&k);
}

Test(mpi, standard_input_needs_one_rank)
{
    res m = sh("cat " DATA "bills_c.csv | " MPIRUN "2 \"$RS\" bucket --quiet -o out -");
    cr_assert_eq(m.rc, 64, "exit %d: %s", m.rc, m.err);
    cr_assert(strstr(m.err, "standard input cannot be divided"), "%s", m.err);
    res_free(&m);
    OK("cat " DATA "bills_c.csv | " MPIRUN "1 \"$RS\" bucket --quiet -o one - && "
       "\"$RS\" bucket --quiet -o ref - < " DATA "bills_c.csv && " SAME("ref", "one"));
}

/* ours: prints the PIDs of the ringshard processes of this test (those
 * whose working directory is the test's). */
#define OURS_SH                                                                                      \
    "ours() { for p in $(pgrep -x ringshard); do [ \"$(readlink /proc/$p/cwd)\" = \"$PWD\" ] && echo $p; " \
    "done; true; }; "

/* The job blocks on a FIFO (rank 0 lists the inputs and waits for a writer;
 * the others wait for rank 0) and rank 1 is killed with SIGKILL once the
 * temporary directory exists: the job fails, nothing is published; the
 * same command again, with a real file in the FIFO's place, gives the
 * single-process output and removes the temporary. */
Test(mpi, killed_rank_then_rerun)
{
    make_inputs();
    OK("mkfifo mid.csv");
    res m = sh(WAIT_SH OURS_SH
               "rank() { for p in $(ours); do tr '\\0' '\\n' < /proc/$p/environ 2>/dev/null | "
               "grep -qx OMPI_COMM_WORLD_RANK=$1 && echo $p && return 0; done; return 1; }; "
               MPIRUN "3 \"$RS\" bucket --quiet -j 1 -o out big.csv.gz mid.csv bills_a.csv.gz > mpirun.log 2>&1 & "
               "job=$!; wait_for 'rank 1' 'victim=$(rank 1)' && "
               "wait_for 'the temporary directory' 'ls -d out.ringshard-tmp.*/ > /dev/null 2>&1' || "
               "{ for p in $(ours); do kill -9 $p; done; kill $job; exit 124; }; kill -9 $victim; wait $job; "
               "echo rc=$?; "
               /* the other ranks may outlive mpirun (blocked in a collective
                * until the launcher's SIGKILL): finish them as a scheduler
                * would, since a temporary directory is removed only once
                * its rank 0 is gone */
               "wait_for 'the other ranks gone' 'for p in $(ours); do kill -9 $p; done; [ -z \"$(ours)\" ]'");
    cr_assert_eq(m.rc, 0, "%s %s", m.out, m.err);
    cr_assert(!strstr(m.out, "rc=0"), "the job must fail: %s", m.out);
    res_free(&m);
    OK("test ! -e out");
    OK("rm mid.csv && cp tiny1.csv mid.csv && \"$RS\" bucket --quiet -o ref big.csv.gz mid.csv bills_a.csv.gz && "
       MPIRUN "3 \"$RS\" bucket --quiet -j 1 -o out big.csv.gz mid.csv bills_a.csv.gz && " SAME("ref", "out") " && "
       "test $(find . -name '*ringshard-tmp*' | wc -l) = 0");
}

Test(mpi, plan_counts_and_emit_identical)
{
    make_inputs();
#define PLAN "plan --old-nodes 100 --new-nodes 103 --key bill_id --memory 32M --batch-bytes 64K"
    OK("\"$RS\" " PLAN " --emit ref --json ref.json " INPUTS " > ref.txt");
    for (int R = 2; R <= 4; R++)
        OK(MPIRUN "%d \"$RS\" " PLAN " -j 1 --emit r%d --json r%d.json " INPUTS " > r%d.txt && " SAME("ref", "r%d")
               " && grep -v -e second -e emit ref.json > a.json && grep -v -e second -e emit r%d.json > b.json && "
               "cmp a.json b.json && grep -v -e method -e emitted ref.txt > a.txt && "
               "grep -v -e method -e emitted r%d.txt > b.txt && cmp a.txt b.txt",
           R, R, R, R, R, R, R, R, R, R);
    /* from a bucket directory: the bucket files are the inputs */
    OK("\"$RS\" bucket --quiet --nodes 100 --key bill_id -o b " INPUTS " && "
       "\"$RS\" plan --new-nodes 97 --from-buckets b --emit fb1 > /dev/null && "
       MPIRUN "3 \"$RS\" plan -j 1 --new-nodes 97 --from-buckets b --emit fb3 > /dev/null && " SAME("fb1", "fb3"));
}

Test(mpi, dedup_identical_with_split_buckets)
{
    make_inputs();
    /* 40% duplicates; --memory 32M over 3 buckets makes pass 2 split them again */
    OK(GEN " --rows 60000 --seed 9 --dup-share 0.4 -o dups.csv 2>/dev/null");
#define DEDUP "dedup --key bill_id --nodes 3 --memory 32M --quiet"
    OK("\"$RS\" " DEDUP " --duplicates ref.dups -o ref dups.csv " INPUTS);
    for (int R = 2; R <= 4; R++)
        OK(MPIRUN "%d \"$RS\" " DEDUP " -j 1 --duplicates r%d.dups -o r%d dups.csv " INPUTS " && " SAME("ref", "r%d")
               " && cmp ref.dups r%d.dups",
           R, R, R, R, R, R, R, R);
    OK("\"$RS\" dedup --quiet --keep last --buckets ref -o again1 && " MPIRUN
       "3 \"$RS\" dedup --quiet -j 1 --keep last --buckets ref -o again3 && " SAME("again1", "again3"));
}

Test(mpi, other_commands_run_once_on_rank_0)
{
    OK("\"$RS\" bucket --quiet --nodes 20 -o b " DATA "bills_c.csv && \"$RS\" verify b > v1.txt 2>&1 && "
       "\"$RS\" locate --nodes 20 k1 k2 > l1.txt && " MPIRUN "3 \"$RS\" verify b > v3.txt 2>&1 && "
       MPIRUN "3 \"$RS\" locate --nodes 20 k1 k2 > l3.txt && cmp l1.txt l3.txt && "
       "test $(grep -c . v3.txt) = $(grep -c . v1.txt)");
}

/* ^C on a terminal sends SIGINT to the whole foreground process group,
 * ranks included: every rank stops within its batch, the ranks agree,
 * nothing is published, the message is said once and mpirun passes on the
 * ranks' 130. (The signal goes to the ranks themselves: a shell running a
 * job in the background starts it with SIGINT ignored, which mpirun keeps.) */
Test(mpi, sigint_stops_every_rank_and_publishes_nothing)
{
    OK(GEN " --rows 1000000 --seed 3 -o s1.csv 2>/dev/null && " GEN " --rows 1000000 --seed 4 -o s2.csv 2>/dev/null");
    /* the signal goes mid-run, while both ranks are in their pipelines:
     * each rank stops itself after its first batch (RINGSHARD_TEST_PAUSE_AT,
     * inherited from mpirun), gets SIGINT there and is continued, and sees
     * it there whichever thread takes it (RINGSHARD_TEST_PAUSE_INTERRUPTED) */
    res m = sh(WAIT_SH OURS_SH
               "stopped_ranks() { n=0; for p in $(ours); do is_stopped $p && n=$((n+1)); done; [ $n = $1 ]; }; "
               "RINGSHARD_TEST_PAUSE_AT=batch_written RINGSHARD_TEST_PAUSE_INTERRUPTED=1 "
               MPIRUN "2 \"$RS\" bucket --quiet -j 1 -o out s1.csv s2.csv > mpirun.log 2>&1 & job=$!; "
               "wait_for 'both ranks stopped after their first batch' 'stopped_ranks 2' || "
               "{ for p in $(ours); do kill -9 $p; done; kill $job; exit 124; }; "
               "ls out.ringshard-tmp.*/ | grep -q 'rank1$' && echo mid-run; "
               "for p in $(ours); do kill -INT $p; kill -CONT $p; done; wait $job; echo rc=$?; "
               "grep -c 'ringshard bucket: interrupted' mpirun.log; ls -A | grep -c -e '^out' -e 'ringshard-tmp' -e rank || true");
    cr_assert_eq(m.rc, 0, "%s %s", m.out, m.err);
    cr_assert(!strncmp(m.out, "mid-run\nrc=130\n1\n0\n", 20), "exit 130, one message, nothing left: %s", m.out);
    res_free(&m);
}

/* A rank that fails before any collective step (here: rank 1 reads an
 * empty node list, since mpirun gives standard input to rank 0 only) fails
 * the job with its message, at once, instead of leaving the others
 * waiting; one help text for all ranks. */
Test(mpi, set_up_failure_on_one_rank_and_help_once)
{
    OK("printf 'bill_id,x\\n1,2\\n' > a.csv");
    const char *cmds[] = {"bucket --quiet --nodes-file /dev/stdin -o out a.csv",
                          "dedup --quiet --nodes-file /dev/stdin -o out a.csv",
                          "plan --quiet --old-nodes-file /dev/stdin --new-nodes 3 --emit out a.csv"};
    for (int k = 0; k < 3; k++) {
        res m = sh("printf 'a\\nb\\n' | timeout 120 " MPIRUN "2 \"$RS\" %s", cmds[k]);
        cr_assert_eq(m.rc, 2, "%s: exit %d (124: hung): %s", cmds[k], m.rc, m.err);
        cr_assert(strstr(m.err, "/dev/stdin: no nodes"), "%s: %s", cmds[k], m.err);
        res_free(&m);
        OK("test ! -e out && test $(ls -A | grep -c ringshard-tmp) = 0");
    }
    OK(MPIRUN "3 \"$RS\" bucket --help > h3.txt && \"$RS\" bucket --help > h1.txt && cmp h1.txt h3.txt");
}

/* One large file of ringshard gzip members (120,000 rows, written by
 * `bucket --nodes 1`), split among the ranks by member ranges (units of
 * about 1 MB: RINGSHARD_UNIT_BYTES, set here and so inherited by mpirun's
 * local ranks), and a small plain file. With `bad`, the record after
 * row 110,000 (about 92% into the file) has one field only; badoff gets
 * the byte offset of the member that holds it. */
static void make_split_inputs(int bad)
{
    setenv("RINGSHARD_UNIT_BYTES", "1000000", 1);
    OK(GEN " --rows 120000 --seed 12 --newline-share 0.01 -o in.csv 2>/dev/null && "
       GEN " --rows 50 --seed 13 -o small.csv 2>/dev/null && python3 -c '\n"
       "lines = open(\"in.csv\", \"rb\").read().split(b\"\\n\"); quotes = 0; want = [110000] if %d else []\n"
       "for i, l in enumerate(lines):\n"
       "    if want and quotes %% 2 == 0 and i >= want[0] and b\"\\x22\" not in l:\n"
       "        lines[i] = l.split(b\",\")[0]; want.pop(0); open(\"badline\", \"w\").write(str(i + 1))\n"
       "    quotes += l.count(b\"\\x22\")\n"
       "open(\"in2.csv\", \"wb\").write(b\"\\n\".join(lines))' && "
       "\"$RS\" bucket --quiet --key 1 --nodes 1 --memory 32M -o w in2.csv && mv w/0.csv.gz big.rs.gz && rm -r w",
       bad);
    if (bad)  /* the member holding the bad line, from the RS headers' line counts */
        OK("python3 -c '\n"
           "import struct\n"
           "d = open(\"big.rs.gz\", \"rb\").read(); bad = int(open(\"badline\").read()); off = 0; lines = 0\n"
           "while off < len(d):\n"
           "    size, n = struct.unpack(\"<QQ\", d[off + 20:off + 36])\n"
           "    if lines < bad <= lines + n: print(off)\n"
           "    off += size; lines += n' > badoff && test -s badoff");
}

#define SPLIT_IN "big.rs.gz small.csv"

Test(mpi, split_file_identical_for_1_to_4_ranks_and_any_threads)
{
    make_split_inputs(0);
    OK("\"$RS\" bucket --quiet --key bill_id --nodes 7 --memory 32M -o ref " SPLIT_IN " && "
       "python3 " RS_SOURCE_DIR "/tests/check_buckets.py \"$RS\" ref bill_id in2.csv small.csv -- --nodes 7 > /dev/null");
    for (int R = 1; R <= 4; R++)
        for (int T = 1; T <= 2; T++)
            OK(MPIRUN "%d -x RINGSHARD_SHOW_RANGES=1 \"$RS\" bucket --quiet -j %d --key bill_id --nodes 7 --memory 32M "
                      "-o r%d_%d " SPLIT_IN " 2> ranges%d_%d && " SAME("ref", "r%d_%d"),
               R, T, R, T, R, T, R, T, R, T, R, T, R, T);
    /* the file was split: with 4 ranks, ranks 1-3 start inside it */
    OK("test $(grep -c 'from big.rs.gz byte [1-9]' ranges4_1) = 3 && grep -q 'rank 0: .* byte 0$' ranges4_1");
    /* plan --emit and dedup use the same pipeline */
    OK("\"$RS\" " PLAN " --emit pref " SPLIT_IN " > /dev/null && " MPIRUN "3 \"$RS\" " PLAN " -j 1 --emit p3 " SPLIT_IN
       " > /dev/null && " SAME("pref", "p3"));
    OK("\"$RS\" " DEDUP " -o dref " SPLIT_IN " && " MPIRUN "3 \"$RS\" " DEDUP " -j 1 -o d3 " SPLIT_IN " && "
       SAME("dref", "d3"));
}

/* A file that lists differently on another rank changed after rank 0 cut
 * the ranges: an error, not units silently skipped or read twice. Each
 * rank runs in its own directory, where rank 1's copy has 100 rows more
 * (one more member at its end). */
Test(mpi, a_file_changed_between_listings_is_an_error)
{
    make_split_inputs(0);
    OK("mkdir d0 d1 && cp big.rs.gz d0/in.gz && head -101 small.csv > extra.csv && "
       "\"$RS\" bucket --quiet --key 1 --nodes 1 -o e extra.csv && gzip -dc e/0.csv.gz | sed 1d > /dev/null && "
       "python3 -c '\n"
       "import struct\n"
       "d = open(\"e/0.csv.gz\", \"rb\").read(); size = struct.unpack(\"<Q\", d[20:28])[0]\n"
       "open(\"d1/in.gz\", \"wb\").write(open(\"big.rs.gz\", \"rb\").read() + d[size:])' && "
       "mkdir out && echo keep > out/marker");
    res m = sh(MPIRUN "2 sh -c 'cd d$OMPI_COMM_WORLD_RANK && exec \"$RS\" bucket --quiet -j 1 --key 1 --force-any -o ../out in.gz'");
    cr_assert_eq(m.rc, 1, "rc %d: %s", m.rc, m.err);
    cr_assert(strstr(m.err, "in.gz: the file changed while it was read ("), "%s", m.err);
    res_free(&m);
    OK("ls -A out | tr '\\n' ' ' | grep -qx 'marker ' && test $(find . -name '*ringshard-tmp*' | wc -l) = 0");
}

Test(mpi, bad_row_in_a_unit_on_rank_2_reported_as_one_process)
{
    make_split_inputs(1);
    /* with 3 ranks, the last third of the file, bad row included, is rank 2's */
    res m = sh(MPIRUN "3 -x RINGSHARD_SHOW_RANGES=1 \"$RS\" bucket --quiet -j 1 --key 3 -o out " SPLIT_IN
                      " 2>&1 | grep 'rank 2:' | sed 's/.*byte //'; cat badoff");
    unsigned long long start = 0, badoff = 0;
    cr_assert_eq(sscanf(m.out, "%llu %llu", &start, &badoff), 2, "%s", m.out);
    cr_assert(start > 0 && start <= badoff, "rank 2 starts at %llu, the bad row's member at %llu", start, badoff);
    res_free(&m);
    /* the message names the line and record a whole-file read gives */
    res s = sh("gzip -6 -c in2.csv > whole.gz && \"$RS\" bucket --quiet --key 3 -o w whole.gz small.csv");
    cr_assert_eq(s.rc, 2);
    res b = sh("cat badline");
    char want[128];
    snprintf(want, sizeof want, "whole.gz: line %d (record ", atoi(b.out));
    cr_assert(strstr(s.err, want), "want \"%s\": %s", want, s.err);
    res_free(&b);
    const char *msg = strstr(s.err, ": line ");
    res one = sh("\"$RS\" bucket --quiet --key 3 -o w " SPLIT_IN);
    cr_assert(strstr(one.err, msg), "split, one process: %s\nwhole: %s", one.err, s.err);
    res_free(&one);
    res_free(&s);
    expect_same_failure(2, SPLIT_IN, "-j 2 --key 3");
}

/* Ranks that open a bucket directory at different moments with a
 * replacement in between - rank 0 has read generation A (it waits at the
 * hold, RINGSHARD_TEST_HOLD_DIR, until released; rank 1 opens after rank 0,
 * at the generations rank 0 found), rank 1 stops before its open
 * (RINGSHARD_TEST_PAUSE_AT=dir-open), D is replaced by another directory,
 * then rank 1 goes on - fail the run on every rank naming the directory (exit 1), nothing
 * emitted, instead of mixing the generations' rows (plan --from-buckets
 * --emit, dedup --buckets). Waits for the states, never for a time. */
Test(mpi, ranks_that_read_two_generations_fail_the_run)
{
    OK("{ echo id,v; i=0; while [ $i -lt 3000 ]; do echo a$i,x$i; i=$((i+1)); done; } > a.csv && "
       "{ echo id,v; i=0; while [ $i -lt 3500 ]; do echo b$i,y$i; i=$((i+1)); done; } > b.csv && "
       "\"$RS\" bucket --quiet --key id --nodes 8 -o D a.csv && \"$RS\" bucket --quiet --key id --nodes 8 -o D.B b.csv");
    const char *const cmds[] = {"plan --quiet --from-buckets D --add 1 --emit M", "dedup --quiet --buckets D -o M"};
    for (size_t k = 0; k < sizeof cmds / sizeof cmds[0]; k++) {
        res r = sh(WAIT_SH "rm -f hold rank1.pid; " MPIRUN "2 sh -c 'if [ \"$OMPI_COMM_WORLD_RANK\" = 0 ]; then "
                   "export RINGSHARD_TEST_HOLD_DIR=\"$PWD/hold\"; else echo $$ > rank1.pid; "
                   "export RINGSHARD_TEST_PAUSE_AT=dir-open; fi; exec \"$RS\" \"$@\"' sh %s > mpirun.log 2>&1 & job=$!; "
                   "wait_for 'rank 0 to read generation A' '[ -e hold ]' || { kill $job; exit 124; }; "
                   "rm hold; wait_for 'rank 1 to start' '[ -s rank1.pid ]' || { kill $job; exit 124; }; "
                   "wait_stopped $(cat rank1.pid) 'rank 1 before its open' || { kill $job; exit 124; }; "
                   "mv D D.A && mv D.B D && kill -CONT $(cat rank1.pid); "
                   "wait $job; rc=$?; mv D D.B && mv D.A D; cat mpirun.log >&2; "
                   "if test -e M; then echo emitted >&2; exit 42; fi; exit $rc",
                   cmds[k]);
        cr_assert_eq(r.rc, 1, "%s: exit %d\n%s", cmds[k], r.rc, r.err);
        cr_assert(strstr(r.err, "D: rank 1 read another generation of the directory than rank 0 (its manifest.json "
                                "differs; replaced by another run meanwhile?): run again"),
                  "%s: %s", cmds[k], r.err);
        res_free(&r);
    }
}

/* A bucket directory whose chain is damaged (its middle generation
 * removed) under mpirun: every rank sees the damage, the readers (plan
 * --from-buckets --emit, dedup --buckets) and an append refuse it with
 * exit 2 naming it, nothing is emitted and D is left byte for byte as it
 * was (tests/test_chain.c has every damage against every command). */
Test(mpi, ranks_refuse_a_damaged_chain)
{
    OK("{ echo id,v; i=0; while [ $i -lt 900 ]; do echo a$i,x$i; i=$((i+1)); done; } > a.csv && "
       "for g in 2 3 4; do { echo id,v; i=0; while [ $i -lt 300 ]; do echo g$g$i,y$i; i=$((i+1)); done; } > g$g.csv; done && "
       "\"$RS\" bucket --quiet --key id --nodes 8 -o D a.csv && for g in 2 3 4; do "
       "\"$RS\" bucket --quiet --append -o D g$g.csv || exit 1; done && rm -rf D/g00000003 && "
       "find D -type f | sort | xargs cksum > before.sum");
    const char *const cmds[] = {"plan --quiet --from-buckets D --add 1 --emit M", "dedup --quiet --buckets D -o M",
                                "bucket --quiet -j 1 --append -o D g2.csv"};
    for (size_t k = 0; k < sizeof cmds / sizeof cmds[0]; k++) {
        res r = sh(MPIRUN "2 \"$RS\" %s", cmds[k]);
        cr_assert_eq(r.rc, 2, "%s: exit %d\n%s", cmds[k], r.rc, r.err);
        cr_assert(strstr(r.err, "D/g00000003: missing: generation 3 of the chain"), "%s: %s", cmds[k], r.err);
        res_free(&r);
        OK("! test -e M && find D -type f | sort | xargs cksum > after.sum && cmp before.sum after.sum && "
           "! ls -d D.ringshard-* 2>/dev/null");
    }
}

/* --files-from under mpirun: rank 0 reads the list - a
 * file, or standard input, which mpirun gives to rank 0 alone - and sends it
 * to the other ranks, so every rank divides the same inputs: the output is
 * one process's. A list's error is said once, nothing published; stats
 * (run by rank 0 alone) takes a list on standard input too. */
Test(mpi, files_from_lists_read_by_rank_0)
{
    make_inputs();
    OK("printf '%%s\\n' " INPUT_FILES " > list && printf 'tiny1.csv\\nnope.csv\\n' > bad.lst");
    OK("\"$RS\" bucket --quiet --key bill_id --memory 32M -o ref " INPUTS);
    for (int R = 2; R <= 3; R++) {
        OK(MPIRUN "%d \"$RS\" bucket --quiet -j 1 --key bill_id --memory 32M --allow-empty -o f%d --files-from list && "
               SAME("ref", "f%d"), R, R, R, R, R, R);
        OK(MPIRUN "%d \"$RS\" bucket --quiet -j 1 --key bill_id --memory 32M --allow-empty -o s%d --files-from - < list && "
               SAME("ref", "s%d"), R, R, R, R, R, R);
    }
    OK("\"$RS\" stats --quiet --tsv --key bill_id " INPUTS " > st1 && "
       MPIRUN "3 \"$RS\" stats --quiet --tsv --key bill_id --allow-empty --files-from - < list > st3 && cmp st1 st3 && test -s st1");
    res m = sh(MPIRUN "3 \"$RS\" bucket --quiet -j 1 --key bill_id -o bad --files-from bad.lst");
    cr_assert_eq(m.rc, 1, "%s", m.err);
    const char *msg = "ringshard bucket: --files-from bad.lst: line 2: nope.csv: cannot open: No such file or directory\n";
    const char *first = strstr(m.err, msg);
    cr_assert(first && !strstr(first + 1, msg), "said once: %s", m.err);
    res_free(&m);
    OK("test ! -e bad && ! ls -a | grep -q ringshard-tmp");
}

/* 20,000 files through a list under `ulimit -n 1024` on 2 ranks: rank 0's
 * unit listing and each rank's change checks open one input at a time. */
Test(mpi, files_from_many_files_under_ulimit)
{
    OK("mkdir many && python3 -c '\n"
       "lst = open(\"list\", \"w\")\n"
       "for i in range(20000):\n"
       "    p = \"many/f%%05d.csv\" %% i\n"
       "    open(p, \"w\").write(\"id,v\\nk%%d,%%d\\n\" %% (i, i))\n"
       "    lst.write(p + \"\\n\")\n"
       "'");
    OK("\"$RS\" bucket --quiet --nodes 16 --compress none -o ref --files-from list");
    OK("sh -c 'ulimit -n 1024 && exec " MPIRUN "2 \"$RS\" bucket --quiet -j 1 --nodes 16 --compress none -o r2 "
       "--files-from list' && " SAME("ref", "r2"));
}

/* zstd: ringshard's own .zst cut into units across ranks, next
 * to zstd from the CLI and gzip, written as zstd: the single process's
 * bytes for any R; and dedup --buckets of that .csv.zst directory. */
Test(mpi, zstd_units_and_outputs_identical)
{
    OK(GEN " --rows 120000 --seed 12 --newline-share 0.01 -o big.csv 2>/dev/null && "
       "\"$RS\" bucket --quiet --key 1 --nodes 1 --memory 32M --compress zstd -o w big.csv && mv w/0.csv.zst own.zst && "
       GEN " --rows 3000 --seed 13 -o small.csv 2>/dev/null && zstd -q -3 small.csv -o cli.csv.zst && "
       "gzip -c small.csv > small.csv.gz && "
       "RINGSHARD_UNIT_BYTES=1000000 \"$RS\" bucket --quiet --key bill_id --memory 32M --compress zstd -o ref "
       "own.zst cli.csv.zst small.csv.gz && test $(ls ref/*.csv.zst | wc -l) = 1000");
    for (int R = 1; R <= 3; R++)
        OK("RINGSHARD_UNIT_BYTES=1000000 " MPIRUN "%d \"$RS\" bucket --quiet -j %d --key bill_id --memory 32M "
           "--compress zstd -o r%d own.zst cli.csv.zst small.csv.gz && " SAME("ref", "r%d"),
           R, R == 1 ? 2 : 1, R, R, R, R, R);
    OK("\"$RS\" dedup --quiet --buckets ref --compress zstd -o d1 && "
       MPIRUN "3 \"$RS\" dedup --quiet -j 1 --buckets ref --compress zstd -o d3 && " SAME("d1", "d3"));
}

/* Lanes under ranks: every rank divides its range among its
 * lanes (--producers), pieces of lanes inside pieces of ranks. The mix of
 * small plain files, gzip files and ringshard's own file in units of
 * about 1 MB: the single process's bytes for 1-3 ranks x 1-3 lanes, and
 * the lanes did run on every rank (RINGSHARD_LOG=info). --memory 4G: room
 * for 3 lanes of 64 MiB batches (see lanes.c). */
Test(mpi, lanes_under_ranks_identical)
{
    make_split_inputs(0);
    OK(GEN " --rows 9000 --seed 14 -o g1.csv 2>/dev/null && gzip -1 g1.csv && "
       GEN " --rows 4000 --seed 15 -o p1.csv 2>/dev/null && : > empty.csv && "
       "\"$RS\" bucket --quiet --key bill_id --nodes 7 --memory 4G --producers 1 -o ref p1.csv big.rs.gz g1.csv.gz "
       "--allow-empty empty.csv small.csv");
    for (int R = 1; R <= 3; R++)
        for (int P = 1; P <= 3; P++)
            OK(MPIRUN "%d -x RINGSHARD_LOG=info \"$RS\" bucket --quiet -j 3 --producers %d --key bill_id --nodes 7 "
                      "--memory 4G -o r p1.csv big.rs.gz g1.csv.gz --allow-empty empty.csv small.csv 2> log && "
                      "test $(grep -c '^ringshard: info: lanes: ' log) = %d && grep -q '^ringshard: info: lanes: %d (' log && "
                      SAME("ref", "r") " && rm -r r",
               R, P, R, P);
    /* and the whole product for 2 and 3 ranks: -j 1/2/3/8 x P 1..4
     * (a lane has a thread at least: P lanes need -j P; a rank's lanes are
     * at most its work items, so only "some rank ran several" is asserted) */
    const int js[] = {1, 2, 3, 8};
    for (int R = 2; R <= 3; R++)
        for (int k = 0; k < 4; k++)
            for (int P = 1; P <= 4; P++) {
                int several = P > 1 && js[k] > 1;
                OK(MPIRUN "%d -x RINGSHARD_LOG=info \"$RS\" bucket --quiet -j %d --producers %d --key bill_id "
                          "--nodes 7 --memory 4G -o r p1.csv big.rs.gz g1.csv.gz --allow-empty empty.csv small.csv 2> log && "
                          "%s" SAME("ref", "r") " && rm -r r",
                   R, js[k], P, several ? "grep -q '^ringshard: info: lanes: [2-4] (' log && " : "");
            }
}

/* A bucket directory of three generations (bucket, then two appends):
 * plan --from-buckets --emit and dedup --buckets under 1-3 ranks give one
 * process's bytes, reading every generation; and `bucket --append` itself
 * under 1-3 ranks (two generations with --commit-every 1) adds the bytes
 * one process adds, manifests included but their wall times (tiny1.csv.gz
 * holds the content of the base's tiny1.csv: --on-seen again ingests it). */
Test(mpi, multi_generation_directory_identical_for_1_to_3_ranks)
{
    make_inputs();
    OK("\"$RS\" bucket --quiet --key bill_id --nodes 7 --memory 32M -o D big.csv.gz tiny1.csv && "
       "\"$RS\" bucket --quiet --append -o D bills_a.csv.gz tiny2.csv.gz && "
       "\"$RS\" bucket --quiet --append -o D bills_b.csv.gz && test -d D/g00000003 && "
       "\"$RS\" plan --quiet --from-buckets D --add 2 --emit pref > pref.txt && "
       "\"$RS\" dedup --quiet --buckets D -o dref");
    /* the appended generations, manifests but their wall times (and so the
     * digests that chain them: verify checks the chain) */
#define SAME_GENS(a, b)                                                                                  \
    "diff -r -x manifest.json " a " " b " && for m in $(cd " a " && ls -d manifest.json g*/manifest.json); do " \
    "grep -v -e '\"seconds\"' -e '\"previous\"' " a "/$m > m1 && grep -v -e '\"seconds\"' -e '\"previous\"' " b "/$m " \
    "> m2 && cmp m1 m2 || exit 1; done"
    OK("gzip -c tiny1.csv > tiny1.csv.gz && rm -rf A && cp -a D A && "
       "\"$RS\" bucket --quiet --append --on-seen again --commit-every 1 --memory 32M -o A bills_c.csv tiny1.csv.gz && "
       "test -d A/g00000005 && \"$RS\" verify --quiet A");
    for (int R = 1; R <= 3; R++) {
        OK(MPIRUN "%d \"$RS\" plan --quiet -j 1 --from-buckets D --add 2 --emit p%d > p%d.txt && " SAME("pref", "p%d")
               " && cmp pref.txt p%d.txt",
           R, R, R, R, R, R, R, R);
        OK(MPIRUN "%d \"$RS\" dedup --quiet -j 1 --buckets D -o d%d && " SAME("dref", "d%d"), R, R, R, R, R, R);
        OK("rm -rf B && cp -a D B && " MPIRUN "%d \"$RS\" bucket --quiet -j 1 --append --on-seen again --commit-every 1 --memory 32M "
           "-o B bills_c.csv tiny1.csv.gz && " SAME_GENS("A", "B") " && \"$RS\" verify --quiet B && rm -r B",
           R);
    }
}

/* The ranks read the generations rank 0 read, whatever appends publish
 * meanwhile: one appends after rank 0 has read the manifests (it waits at
 * the hold, RINGSHARD_TEST_HOLD_DIR), another while rank 1 is stopped
 * before its open (RINGSHARD_TEST_PAUSE_AT=dir-open); plan --from-buckets
 * --emit and dedup --buckets exit 0 with one process's output for the
 * directory as it was. Waits for the states, never for a time. */
Test(mpi, ranks_read_the_generations_rank_0_read_while_appends_publish)
{
    make_inputs();
    OK("\"$RS\" bucket --quiet --key bill_id --nodes 7 -o D bills_a.csv.gz && "
       "\"$RS\" bucket --quiet --append -o D bills_b.csv.gz && \"$RS\" bucket --quiet --append -o D bills_c.csv && "
       "\"$RS\" plan --quiet --from-buckets D --add 1 --emit Mref && \"$RS\" dedup --quiet --buckets D -o Xref");
    const char *const cmds[] = {"plan --quiet --from-buckets D --add 1 --emit M", "dedup --quiet --buckets D -o X"};
    const char *const outs[] = {"Mref M", "Xref X"};
    for (size_t k = 0; k < 2; k++) {
        res r = sh(WAIT_SH "rm -rf D.keep && cp -a D D.keep && rm -f hold rank1.pid; "
                   MPIRUN "2 sh -c 'if [ \"$OMPI_COMM_WORLD_RANK\" = 0 ]; then "
                   "export RINGSHARD_TEST_HOLD_DIR=\"$PWD/hold\"; else echo $$ > rank1.pid; "
                   "export RINGSHARD_TEST_PAUSE_AT=dir-open; fi; exec \"$RS\" \"$@\"' sh %s > mpirun.log 2>&1 & job=$!; "
                   "wait_for 'rank 0 to read the generations' '[ -e hold ]' || { kill $job; exit 124; }; "
                   "\"$RS\" bucket --quiet --append -o D tiny1.csv && rm hold && "
                   "wait_for 'rank 1 to start' '[ -s rank1.pid ]' || { kill $job; exit 124; }; "
                   "wait_stopped $(cat rank1.pid) 'rank 1 before its open' || { kill $job; exit 124; }; "
                   "\"$RS\" bucket --quiet --append -o D tiny2.csv.gz && kill -CONT $(cat rank1.pid); "
                   "wait $job; rc=$?; cat mpirun.log >&2; test -d D/g00000005 && rm -rf D && mv D.keep D && exit $rc",
                   cmds[k]);
        cr_assert_eq(r.rc, 0, "%s: exit %d\n%s", cmds[k], r.rc, r.err);
        res_free(&r);
        char a[8], b[8];
        sscanf(outs[k], "%7s %7s", a, b);
        OK("diff -r -x manifest.json %s %s", a, b);
    }
}

/* dedup --append into a directory of two generations without key indexes
 * (bucket, then bucket --append), three generations (--commit-every 1),
 * one input all of whose keys the history holds (--on-seen again): under
 * 1 to 3 ranks the missing indexes are built on the way (each bucket's by
 * the rank that has it) and the result is one process's, byte for byte:
 * every file, the manifests but their wall times (and the digests that
 * chain them), the duplicates report; its rows are Python's. */
Test(mpi, dedup_append_identical_for_1_to_3_ranks)
{
    make_inputs();
#define HISTORY_CHECK "python3 " RS_SOURCE_DIR "/tests/check_history.py "
#define APPEND "dedup --quiet -j 1 --append --commit-every 1 --on-seen again --memory 64M"
    OK("\"$RS\" bucket --quiet --key bill_id --nodes 7 -o D bills_a.csv.gz tiny1.csv && "
       "\"$RS\" bucket --quiet --append -o D bills_b.csv.gz && rm -rf ref && cp -a D ref && "
       "\"$RS\" " APPEND " --duplicates ref.dups -o ref bills_c.csv bills_a.csv.gz tiny2.csv.gz && "
       "test -d ref/g00000005 && "
       HISTORY_CHECK "rows ref first 1 bucket:bills_a.csv.gz+tiny1.csv bucket:bills_b.csv.gz dedup:bills_c.csv "
       "dedup:bills_a.csv.gz dedup:tiny2.csv.gz --dups ref.dups --since 3 && " HISTORY_CHECK "indexes ref first 1");
    for (int R = 1; R <= 3; R++)
        OK("rm -rf r && cp -a D r && " MPIRUN "%d \"$RS\" " APPEND " --duplicates r.dups -o r bills_c.csv "
           "bills_a.csv.gz tiny2.csv.gz && " SAME_GENS("ref", "r") " && cmp ref.dups r.dups && \"$RS\" verify --quiet r",
           R);
}
