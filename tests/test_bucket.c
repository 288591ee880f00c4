/* `ringshard bucket` end to end, checked by an independent reader
 * (tests/check_buckets.py: Python's csv, gzip and zlib modules). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "support.h"
#include "wait.h"

#define DATA RS_SOURCE_DIR "/fixtures/data/"
#define INPUTS DATA "bills_a.csv.gz " DATA "bills_b.csv.gz " DATA "bills_c.csv"
#define CHECK "python3 " RS_SOURCE_DIR "/tests/check_buckets.py \"$RS\" "

static char *tmp;

static void setup(void) { tmp = make_tmpdir(); }
static void teardown(void)
{
    remove_tree(tmp);
    free(tmp);
}

TestSuite(bucket, .init = setup, .fini = teardown, .timeout = 300);

Test(bucket, every_row_where_locate_says_in_input_order)
{
    char *out, *err;
    int rc = runf(&out, &err, "cd %s && \"$RS\" bucket --key bill_id -o out " INPUTS " && " CHECK "out bill_id " INPUTS,
                  tmp);
    cr_assert_eq(rc, 0, "stdout: %s\nstderr: %s", out, err);
    cr_assert(strstr(out, "ok 29000 rows in 1000 files"), "%s", out);
    cr_assert(strstr(err, "29000 rows"), "summary: %s", err);
    free(out);
    free(err);
}

Test(bucket, byte_identical_for_any_thread_count)
{
    char *out, *err;
    int rc = runf(&out, &err,
                  "cd %s && for j in 1 2 8; do \"$RS\" bucket --quiet -j $j --memory 32M -o out$j " INPUTS " || exit 9; "
                  "done && diff -r out1 out2 && diff -r out1 out8 && ls out1 | grep -c csv",
                  tmp);
    cr_assert_eq(rc, 0, "outputs differ across -j: %s %s", out, err);
    cr_assert_eq(atoi(out), 1000);
    free(out);
    free(err);
}

Test(bucket, stdin_and_multi_member_input)
{
    char *out, *err;
    /* bills_b.csv.gz: two gzip members whose boundary falls inside a record */
    int rc = runf(&out, &err,
                  "cd %s && cat " DATA "bills_b.csv.gz | \"$RS\" bucket --quiet -o a - && "
                  "\"$RS\" bucket --quiet -o b " DATA "bills_b.csv.gz && "
                  "diff -r -x manifest.json a b && " CHECK "a 1 " DATA "bills_b.csv.gz",
                  tmp);
    cr_assert_eq(rc, 0, "%s %s", out, err);
    cr_assert(strstr(out, "ok 6000 rows"), "%s", out);
    free(out);
    free(err);
}

Test(bucket, outputs_are_complete_gzip_members_ending_at_rows)
{
    char *out, *err;
    int rc = runf(&out, &err,
                  "cd %s && \"$RS\" bucket --quiet --memory 32M -o out " INPUTS " && gzip -t out/*.csv.gz && "
                  "python3 -c \"\nimport zlib,glob,sys\nn=0\nfor f in glob.glob('out/*.csv.gz'):\n"
                  " d=open(f,'rb').read()\n while d:\n  o=zlib.decompressobj(31); t=o.decompress(d)\n"
                  "  assert t.endswith(b'\\\\n'), f\n  d=o.unused_data; n+=1\nprint(n)\"",
                  tmp);
    cr_assert_eq(rc, 0, "%s %s", out, err);
    cr_assert_geq(atoi(out), 2000, "at least a header member and a data member per file: %s", out);
    free(out);
    free(err);
}

Test(bucket, plain_output_keys_only_and_zlib)
{
    char *out, *err;
    int rc = runf(&out, &err,
                  "cd %s && \"$RS\" bucket --quiet --compress none -o plain " INPUTS " && "
                  "\"$RS\" bucket --quiet --zlib -o z " INPUTS " && \"$RS\" bucket --quiet -o i " INPUTS " && "
                  /* one gzip over each directory's copy, not one per file (20 s of process starts) */
                  "cp -r i gi && cp -r z gz && gzip -d gi/*.csv.gz gz/*.csv.gz && "
                  "diff -r -x manifest.json gi plain && diff -r -x manifest.json gz plain && " CHECK "plain 1 " INPUTS " && "
                  "\"$RS\" bucket --quiet --keys-only --compress none -o k " INPUTS " && head -1 k/0.csv && "
                  "cat k/*.csv | grep -vc bill_id",
                  tmp);
    cr_assert_eq(rc, 0, "%s %s", out, err);
    cr_assert(strstr(out, "ok 29000 rows"), "%s", out);
    cr_assert(strstr(out, "bill_id\n29000"), "keys-only header and rows: %s", out);
    free(out);
    free(err);
}

Test(bucket, composite_key_tsv_and_index)
{
    char *out, *err;
    int rc = runf(&out, &err,
                  "cd %s && printf 'a\\tb\\tc\\nx\\t1\\tp\\ny\\t2\\tq\\n' > in.tsv && "
                  "\"$RS\" bucket --quiet --delimiter tab --key c,a --nodes 4 --compress none -o o in.tsv && "
                  "\"$RS\" locate --nodes 4 --no-header 'p|x' 'q|y' | cut -f3 > want && "
                  "for n in $(cat want); do :; done; grep -l 'x' o/*.csv | xargs basename; "
                  "head -1 want",
                  tmp);
    cr_assert_eq(rc, 0, "%s %s", out, err);
    char a[32], b[32];
    cr_assert_eq(sscanf(out, "%31s %31s", a, b), 2, "%s", out);
    char want[40];
    snprintf(want, sizeof want, "%s.csv", b);
    cr_assert_str_eq(a, want, "row x (key 'p|x') landed in %s, locate says node %s", a, b);
    free(out);
    free(err);
}

Test(bucket, existing_output_refused_without_force)
{
    char *out, *err;
    int rc = runf(&out, &err, "cd %s && mkdir out && echo keep > out/mine && \"$RS\" bucket --quiet -o out " DATA
                  "bills_c.csv", tmp);
    cr_assert_eq(rc, 73, "%s", err);
    cr_assert(strstr(err, "out") && strstr(err, "--force"), "%s", err);
    free(out);
    free(err);
    rc = runf(&out, &err, "cd %s && cat out/mine && ls -a . | grep -c ringshard-tmp", tmp);
    cr_assert(strstr(out, "keep\n0"), "previous output intact, no temporary left: %s", out);
    free(out);
    free(err);
    /* out is not a ringshard output: --force refuses it, --force-any replaces it */
    rc = runf(&out, &err, "cd %s && \"$RS\" bucket --quiet --force -o out " DATA "bills_c.csv", tmp);
    cr_assert_eq(rc, 73, "%s", err);
    cr_assert(strstr(err, "out: not a ringshard output (holds 1 entry, no manifest.json): refusing to replace it"),
              "%s", err);
    free(out);
    free(err);
    rc = runf(&out, &err, "cd %s && \"$RS\" bucket --quiet --force-any -o out " DATA "bills_c.csv && ls out | wc -l",
              tmp);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert_eq(atoi(out), 1001);
    free(out);
    free(err);
}

Test(bucket, malformed_row_fails_naming_file_and_line)
{
    char *out, *err;
    int rc = runf(&out, &err,
                  "cd %s && printf 'id,v\\n1,a\\n2,b\"c\\n3,d\\n' > bad.csv && mkdir out && echo old > out/x && "
                  "\"$RS\" bucket --quiet --force-any -o out bad.csv",
                  tmp);
    cr_assert_eq(rc, 2, "%s", err);
    cr_assert(strstr(err, "bad.csv: line 3 (record 2)"), "%s", err);
    free(out);
    free(err);
    rc = runf(&out, &err, "cd %s && cat out/x && ls -a | grep -c ringshard-tmp", tmp);
    cr_assert(strstr(out, "old\n0"), "previous output intact, no temporary: %s", out);
    free(out);
    free(err);
}

Test(bucket, bad_rows_skipped_or_quarantined_and_counted)
{
    char *out, *err;
    int rc = runf(&out, &err,
                  "cd %s && printf 'id,v\\n1,a\\n2,b\"c\\n3,d\\n' > bad.csv && "
                  "\"$RS\" bucket --quiet --on-bad-row quarantine=q.tsv --nodes 3 -o out bad.csv && cat q.tsv && "
                  "python3 -c \"import json; m=json.load(open('out/manifest.json')); "
                  "print('rows', m['totals']['rows'], 'rejected', m['totals']['rejected'], m['inputs'][0]['rejected'])\"",
                  tmp);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert(strstr(out, "bad.csv\t3\t2\tstray quote"), "quarantine names input, line, record, reason: %s", out);
    cr_assert(strstr(out, "2,b\"c"), "%s", out);
    cr_assert(strstr(out, "rows 2 rejected 1 1"), "%s", out);
    free(out);
    free(err);
}

Test(bucket, different_headers_are_an_error)
{
    char *out, *err;
    int rc = runf(&out, &err, "cd %s && printf 'a,b\\n1,2\\n' > x.csv && printf 'a,c\\n1,2\\n' > y.csv && "
                  "\"$RS\" bucket --quiet -o out x.csv y.csv", tmp);
    cr_assert_eq(rc, 2);
    cr_assert(strstr(err, "y.csv") && strstr(err, "header"), "%s", err);
    free(out);
    free(err);
}

Test(bucket, corrupt_gzip_names_the_offset)
{
    char *out, *err;
    runf(&out, &err, "cd %s && head -c 100000 " DATA "bills_a.csv.gz > cut.gz && "
                  "\"$RS\" bucket --quiet -o out cut.gz; echo rc=$?; ls -a | grep -c -e '^out' -e ringshard-tmp", tmp);
    cr_assert(strstr(out, "rc=2\n0"), "%s / %s", out, err);
    cr_assert(strstr(err, "cut.gz") && strstr(err, "offset"), "%s", err);
    free(out);
    free(err);
}

Test(bucket, many_outputs_under_a_low_open_file_limit)
{
    char *out, *err;
    int rc = runf(&out, &err, "cd %s && (ulimit -n 128 && \"$RS\" bucket --quiet -o out " DATA "bills_c.csv) && "
                  CHECK "out 1 " DATA "bills_c.csv", tmp);
    cr_assert_eq(rc, 0, "%s %s", out, err);
    cr_assert(strstr(out, "ok 3000 rows in 1000 files"), "%s", out);
    cr_assert(!strstr(err, "open-file limit"), "quiet at the default log level: %s", err);
    free(out);
    free(err);
    /* RINGSHARD_LOG=info says which way the files were written */
    rc = runf(&out, &err, "cd %s && (ulimit -n 128 && RINGSHARD_LOG=info \"$RS\" bucket --quiet -o out2 " DATA
                  "bills_c.csv)", tmp);
    cr_assert_eq(rc, 0, "%s %s", out, err);
    cr_assert(strstr(err, "ringshard: info: open-file limit reached at "), "%s", err);
    free(out);
    free(err);
}

/* A real file-size limit (RLIMIT_FSIZE): the write fails with EFBIG, not
 * SIGXFSZ; the message names the file; nothing is published or left. */
Test(bucket, file_size_limit_fails_cleanly)
{
    /* gzip members are written with write(2), plain pieces with writev(2) */
    static const char *const opt[] = {"", "--compress none"}, *const suffix[] = {".csv.gz", ".csv"};
    for (int k = 0; k < 2; k++) {
        char *out, *err;
        int rc = runf(&out, &err,
                      "cd %s && rm -rf out && mkdir out && echo old > out/x && "
                      "(ulimit -f 200; \"$RS\" bucket --quiet --force-any --nodes 2 %s -o out " DATA "bills_a.csv.gz); "
                      "echo rc=$?; cat out/x; ls -a | grep -c ringshard-tmp || true",
                      tmp, opt[k]);
        cr_assert_eq(rc, 0);
        cr_assert(strstr(out, "rc=1\nold\n0"), "%s: exit 1, previous output intact, no temporary: %s", opt[k], out);
        char want[64];
        snprintf(want, sizeof want, "%s: write failed: File too large", suffix[k]);
        cr_assert(strstr(err, want), "%s: %s", opt[k], err);
        free(out);
        free(err);
    }
}

/* SIGINT and SIGTERM stop the run within its batch: exit 130, nothing
 * published, the temporary directory removed. The input comes through a
 * pipe, in 3 batches (--memory 32M); the run stops itself after the first
 * (RINGSHARD_TEST_PAUSE_AT), gets the signal there and is continued, so
 * that the signal arrives mid-run whatever the machine's speed, and is seen
 * there whichever thread takes it (RINGSHARD_TEST_PAUSE_INTERRUPTED). */
Test(bucket, interrupted_runs_publish_nothing)
{
    for (int k = 0; k < 2; k++) {
        char *out, *err;
        int rc = runf(&out, &err,
                      "cd %s && rm -rf out && " WAIT_SH
                      "( { echo id,v; seq 1 500000 | sed 's/$/,x/'; } | "
                      "RINGSHARD_TEST_PAUSE_AT=batch_written RINGSHARD_TEST_PAUSE_INTERRUPTED=1 "
                      "\"$RS\" bucket --quiet --memory 32M --nodes 3 -o out - & p=$!; "
                      "wait_stopped $p 'the first batch written' || { kill -9 $p 2>/dev/null; exit 124; }; "
                      "ls -d out.ringshard-tmp.*/ > /dev/null && echo mid-run; "
                      "kill -%s $p; kill -CONT $p; wait $p; echo rc=$? ); "
                      "ls -a | grep -c -e '^out$' -e ringshard-tmp || true",
                      tmp, k ? "TERM" : "INT");
        cr_assert_eq(rc, 0);
        cr_assert(strstr(out, "mid-run\nrc=130\n0"), "SIG%s: %s / %s", k ? "TERM" : "INT", out, err);
        cr_assert(strstr(err, "interrupted"), "%s", err);
        free(out);
        free(err);
    }
}

/* The thread count: OMP_NUM_THREADS when set, -j over it (the info log
 * says what the pipeline used); the output is the same either way. */
Test(bucket, threads_from_omp_num_threads_and_j)
{
    char *out, *err;
    int rc = runf(&out, &err,
                  "cd %s && OMP_NUM_THREADS=3 RINGSHARD_LOG=info \"$RS\" bucket --quiet --nodes 5 -o a " DATA
                  "bills_c.csv && OMP_NUM_THREADS=3 RINGSHARD_LOG=info \"$RS\" bucket --quiet -j 1 --nodes 5 -o b " DATA
                  "bills_c.csv && diff -r -x manifest.json a b && echo same",
                  tmp);
    cr_assert_eq(rc, 0, "%s %s", out, err);
    cr_assert(strstr(err, "ringshard: info: pipeline: 3 threads,"), "%s", err);
    cr_assert(strstr(err, "ringshard: info: pipeline: 1 thread,"), "%s", err);
    cr_assert(strstr(out, "same"), "%s", out);
    free(out);
    free(err);
}

/* A stop signal ends a run blocked in a read that would never return: a
 * FIFO whose writer keeps it open and writes nothing, or one that no
 * writer has opened yet (the open blocks). The signal goes once the run is
 * past its set-up (the temporary directory exists, so its handlers are in
 * place) and, with a writer, has the FIFO open; the writer holds the FIFO
 * until the run has ended, so that only the signal can have ended it. */
Test(bucket, a_signal_ends_a_read_blocked_on_a_quiet_pipe)
{
    for (int k = 0; k < 2; k++) {
        char *out, *err;
        int rc = runf(&out, &err,
                      "cd %s && rm -rf out quiet && mkfifo quiet && " WAIT_SH
                      "( %s \"$RS\" bucket --quiet --nodes 3 -o out quiet & p=$!; "
                      "wait_for 'the temporary directory' 'ls -d out.ringshard-tmp.*/ > /dev/null 2>&1' && "
                      "{ [ -z \"$w\" ] || wait_for 'the FIFO open' 'ls -l /proc/$p/fd 2>/dev/null | grep -q /quiet$'; } "
                      "|| { kill -9 $p $w 2>/dev/null; exit 124; }; "
                      "{ signal_until_gone TERM $p || kill -9 $p; }; wait $p; echo rc=$?; "
                      "[ -n \"$w\" ] && kill -0 $w && echo writer still there; kill $w 2>/dev/null; true ); "
                      "ls -a | grep -c -e '^out$' -e ringshard-tmp || true",
                      /* the writer's sleep only holds the FIFO open: it is killed at the end */
                      tmp, k ? "(exec 3>quiet; exec sleep 600) & w=$!;" : "w=;");
        cr_assert_eq(rc, 0);
        cr_assert(strstr(out, "rc=130\n"), "%s: %s / %s", k ? "quiet writer" : "no writer", out, err);
        if (k)
            cr_assert(strstr(out, "rc=130\nwriter still there\n"), "ended by the signal, the writer still there: %s",
                      out);
        cr_assert(strstr(out, "\n0\n"), "nothing published, no temporary: %s", out);
        cr_assert(strstr(err, "interrupted"), "%s", err);
        free(out);
        free(err);
    }
}

/* The progress line appears only on a terminal (script(1) provides one) and
 * never with --quiet; the summary appears unless --quiet. */
Test(bucket, progress_only_on_a_terminal)
{
    char *out, *err;
    int rc = runf(&out, &err,
                  "cd %s && script -qec '\"'\"$RS\"'\" bucket --memory 32M -o tty " DATA "bills_a.csv.gz' /dev/null "
                  "| tr '\\r' '\\n' | grep -c 'rows/s.*MB/s'; "
                  "\"$RS\" bucket --memory 32M -o notty " DATA "bills_a.csv.gz 2> notty.err; grep -c ETA notty.err || true; "
                  "grep -c 'rows per bucket' notty.err",
                  tmp);
    cr_assert_eq(rc, 0, "%s %s", out, err);
    int on_tty = 0, eta = -1, summary = 0;
    cr_assert_eq(sscanf(out, "%d %d %d", &on_tty, &eta, &summary), 3, "%s", out);
    cr_assert_geq(on_tty, 1, "progress on a terminal: %s", out);
    cr_assert_eq(eta, 0, "no progress line when stderr is not a terminal");
    cr_assert_eq(summary, 1, "one summary");
    free(out);
    free(err);
}
