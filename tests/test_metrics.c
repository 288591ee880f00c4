/* --metrics FILE: the Prometheus text-format file of a run (docs/metrics.md).
 * Every file is checked by `promtool check metrics` (Debian's prometheus
 * package, tools/deps.sh), the parser and linter of the Prometheus project:
 * HELP and TYPE lines, names, labels, values. The values themselves are
 * checked here: the exit code, the counts, the last-success timestamp
 * carried over by a failed run. Kill tests stop the run at named points
 * (RINGSHARD_TEST_PAUSE_AT, ringshard/testhook.h) and check that FILE is
 * never anything but the previous file, whole. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include "ringshard/metrics.h"
#include "support.h"

TestSuite(metrics, .init = test_dir_setup, .fini = test_dir_teardown, .timeout = 600);

typedef cmd_result res;
#define sh sh_in_test_dir

/* 3000 rows, and one with a stray quote on line 1502 */
static void make_inputs(void)
{
    SH_OK("{ echo id,v; seq 1 3000 | sed 's/.*/&,v&/'; } > in.csv && "
          "{ echo id,v; seq 1 1500 | sed 's/.*/&,v&/'; echo 'x\"y,1'; seq 1501 3000 | sed 's/.*/&,v&/'; } > bad.csv");
}

/* Asserts that promtool accepts FILE (in the test directory). */
static void assert_promtool(const char *file)
{
    res r = sh("command -v promtool >/dev/null || { echo 'promtool not found: tools/deps.sh installs it "
               "(Debian package prometheus)'; exit 127; }; promtool check metrics < %s", file);
    cr_assert_eq(r.rc, 0, "promtool check metrics %s: exit %d\n%s%s", file, r.rc, r.out, r.err);
    cmd_result_free(&r);
}

/* The value of the sample `series` (name and labels, exactly as written)
 * in the test directory's FILE, malloc'd; fails the test when absent. */
static char *sample(const char *file, const char *series)
{
    char *text = slurp(path_join(test_dir, file), NULL);
    cr_assert(text, "%s: cannot read", file);
    size_t n = strlen(series);
    for (char *line = text; *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        if (strncmp(line, series, n) == 0 && line[n] == ' ') {
            char *v = strdup(line + n + 1);
            free(text);
            return v;
        }
        line = nl ? nl + 1 : line + strlen(line);
    }
    cr_assert_fail("%s: no sample %s", file, series);
    return NULL;
}

static void assert_sample(const char *file, const char *series, const char *want)
{
    char *v = sample(file, series);
    cr_assert_str_eq(v, want, "%s: %s is %s, not %s", file, series, v, want);
    free(v);
}

/* assert_sample for each "NAME VALUE" of want (NULL-terminated): the
 * sample ringshard_NAME{command="bucket"}. */
static void assert_bucket(const char *file, const char *const *want)
{
    for (; *want; want++) {
        char series[128];
        const char *sp = strchr(*want, ' ');
        snprintf(series, sizeof series, "ringshard_%.*s{command=\"bucket\"}", (int)(sp - *want), *want);
        assert_sample(file, series, sp + 1);
    }
}

Test(metrics, a_successful_bucket_run_is_valid_text_format_with_its_counts)
{
    make_inputs();
    SH_OK("\"$RS\" bucket --quiet --nodes 5 --metrics m.prom -o out in.csv");
    assert_promtool("m.prom");
    assert_bucket("m.prom", (const char *const[]){"exit_code 0", "success 1", "inputs 1", "rows_read 3000",
                                                   "rows_written 3000", "rows_rejected 0", "inputs_skipped 0", NULL});
    /* bytes: each row and its LF, as the manifest counts them */
    SH_OK("test \"$(grep -o '\"bytes\": [0-9]*' out/manifest.json | tail -1 | grep -o '[0-9]*$')\" = "
          "\"$(sed -n 's/^ringshard_bytes_read{command=\"bucket\"} //p' m.prom)\"");
    char *start = sample("m.prom", "ringshard_start_time_seconds{command=\"bucket\"}");
    char *end = sample("m.prom", "ringshard_end_time_seconds{command=\"bucket\"}");
    char *last = sample("m.prom", "ringshard_last_success_timestamp_seconds{command=\"bucket\"}");
    cr_assert(atof(start) > 1.5e9 && atof(start) <= atof(end), "start %s, end %s", start, end);
    cr_assert_str_eq(last, end, "a success is the last success");
    free(start), free(end), free(last);
    for (const char *const *p = (const char *const[]){"ring", "pipeline", "publish", NULL}; *p; p++) {
        char series[128];
        snprintf(series, sizeof series, "ringshard_phase_seconds{command=\"bucket\",phase=\"%s\"}", *p);
        free(sample("m.prom", series));
    }
}

Test(metrics, a_failed_run_keeps_the_previous_last_success)
{
    make_inputs();
    SH_OK("\"$RS\" bucket --quiet --nodes 5 --metrics m.prom -o out in.csv");
    char *last = sample("m.prom", "ringshard_last_success_timestamp_seconds{command=\"bucket\"}");
    /* bad input (exit 2), then an existing output (exit 73), then a usage
     * error after --metrics (exit 64): each recorded, the success kept */
    static const struct { const char *args; const char *code; } fail[] = {
        {"--force -o out bad.csv", "2"}, {"-o out in.csv", "73"}, {"-o out --level 12 in.csv", "64"}};
    for (size_t i = 0; i < sizeof fail / sizeof *fail; i++) {
        res r = sh("\"$RS\" bucket --quiet --nodes 5 --metrics m.prom %s", fail[i].args);
        cr_assert_eq(r.rc, atoi(fail[i].code), "%s: exit %d\n%s", fail[i].args, r.rc, r.err);
        cmd_result_free(&r);
        assert_promtool("m.prom");
        assert_sample("m.prom", "ringshard_exit_code{command=\"bucket\"}", fail[i].code);
        assert_sample("m.prom", "ringshard_success{command=\"bucket\"}", "0");
        assert_sample("m.prom", "ringshard_last_success_timestamp_seconds{command=\"bucket\"}", last);
    }
    /* rejected rows with --on-bad-row skip: a success, counted */
    SH_OK("\"$RS\" bucket --quiet --nodes 5 --metrics m.prom --on-bad-row skip --force -o out bad.csv");
    assert_sample("m.prom", "ringshard_rows_rejected{command=\"bucket\"}", "1");
    assert_sample("m.prom", "ringshard_rows_read{command=\"bucket\"}", "3000");
    char *now = sample("m.prom", "ringshard_last_success_timestamp_seconds{command=\"bucket\"}");
    cr_assert(atof(now) >= atof(last) && strcmp(now, last) != 0, "a new success: %s after %s", now, last);
    free(now);
    free(last);
}

Test(metrics, a_failure_with_no_previous_file_has_no_last_success)
{
    make_inputs();
    res r = sh("\"$RS\" bucket --quiet --nodes 5 --metrics m.prom -o out bad.csv");
    cr_assert_eq(r.rc, 2, "%s", r.err);
    cmd_result_free(&r);
    assert_promtool("m.prom");
    assert_sample("m.prom", "ringshard_last_success_timestamp_seconds{command=\"bucket\"}", "0.000");
    /* another command's file is another job's: its success is not this one's */
    SH_OK("\"$RS\" verify --quiet --metrics v.prom out 2>/dev/null; \"$RS\" bucket --quiet --nodes 5 -o out in.csv");
    SH_OK("\"$RS\" verify --quiet --metrics v.prom out");
    r = sh("\"$RS\" bucket --quiet --nodes 5 --metrics v.prom -o out in.csv");
    cr_assert_eq(r.rc, 73, "%s", r.err);
    cmd_result_free(&r);
    assert_sample("v.prom", "ringshard_last_success_timestamp_seconds{command=\"bucket\"}", "0.000");
}

Test(metrics, dedup_plan_emit_and_verify_write_theirs)
{
    make_inputs();
    SH_OK("cat in.csv > twice.csv && tail -n +2 in.csv >> twice.csv && "
          "\"$RS\" dedup --quiet --nodes 5 --key id --metrics d.prom -o distinct twice.csv && "
          "\"$RS\" plan --quiet --from-buckets distinct --add 1 --emit moves --metrics p.prom && "
          "\"$RS\" verify --quiet --metrics v.prom moves");
    assert_promtool("d.prom");
    assert_promtool("p.prom");
    assert_promtool("v.prom");
    assert_sample("d.prom", "ringshard_rows_read{command=\"dedup\"}", "6000");
    assert_sample("d.prom", "ringshard_rows_written{command=\"dedup\"}", "3000");
    free(sample("d.prom", "ringshard_phase_seconds{command=\"dedup\",phase=\"pass2\"}"));
    free(sample("d.prom", "ringshard_phase_seconds{command=\"dedup\",phase=\"publish\"}"));
    /* the kernel's counts (Linux): the run read its input at least once */
    char *rchar = sample("d.prom", "ringshard_io_rchar_bytes{command=\"dedup\"}");
    res sz = sh("stat -c %%s twice.csv");
    cr_assert(strtoull(rchar, NULL, 10) >= strtoull(sz.out, NULL, 10), "rchar %s, input %s", rchar, sz.out);
    cmd_result_free(&sz);
    free(rchar);
    free(sample("d.prom", "ringshard_io_read_bytes{command=\"dedup\"}"));
    assert_sample("p.prom", "ringshard_rows_read{command=\"plan\"}", "3000");
    assert_sample("p.prom", "ringshard_inputs{command=\"plan\"}", "5");
    /* the moved rows are what verify reads in the move directory */
    char *moved = sample("p.prom", "ringshard_rows_written{command=\"plan\"}");
    cr_assert(atoi(moved) > 0 && atoi(moved) < 3000, "moved %s", moved);
    assert_sample("v.prom", "ringshard_rows_read{command=\"verify\"}", moved);
    free(moved);
    assert_sample("v.prom", "ringshard_exit_code{command=\"verify\"}", "0");
    /* differences: verify's exit 3 */
    SH_OK("mv moves/manifest.json m.json && sed 's/\"rows\": [1-9]/\"rows\": 9/' m.json > moves/manifest.json");
    res r = sh("\"$RS\" verify --quiet --metrics v.prom moves");
    cr_assert_eq(r.rc, 3, "%s%s", r.out, r.err);
    cmd_result_free(&r);
    assert_sample("v.prom", "ringshard_exit_code{command=\"verify\"}", "3");
}

Test(metrics, a_file_that_cannot_be_written_stops_the_run_before_any_work)
{
    make_inputs();
    res r = sh("\"$RS\" bucket --quiet --nodes 5 --metrics nodir/m.prom -o out in.csv");
    cr_assert_eq(r.rc, 1, "exit %d: %s", r.rc, r.err);
    cr_assert(strstr(r.err, "ringshard bucket: nodir/m.prom: cannot create: No such file or directory"), "%s", r.err);
    cmd_result_free(&r);
    SH_OK("test ! -e out && test \"$(ls | grep -c ringshard-tmp)\" = 0");
    r = sh("\"$RS\" bucket --metrics a.prom --metrics b.prom -o out in.csv");
    cr_assert_eq(r.rc, 64, "exit %d: %s", r.rc, r.err);
    cr_assert(strstr(r.err, "--metrics: given twice"), "%s", r.err);
    cmd_result_free(&r);
}

/* Starts bucket with --metrics m.prom stopping at `point`, checks that
 * m.prom is still good.prom there, then sends sig (seen at the point,
 * stop_for_signal; then SIGCONT, unless SIGKILL) and returns the wait status. */
static int run_stopped_at(const char *point, int sig)
{
    pid_t pid = stop_for_signal(point, "\"$RS\" bucket --quiet -j 1 --nodes 5 --force --metrics m.prom -o out in.csv",
                        "err.txt");
    res r = sh("cmp m.prom good.prom");
    cr_assert_eq(r.rc, 0, "%s: m.prom changed before the end of the run", point);
    cmd_result_free(&r);
    if (sig == SIGKILL)
        cr_assert_eq(kill(pid, SIGKILL), 0);
    else
        signal_stopped(pid, sig);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    return st;
}

Test(metrics, a_killed_run_leaves_the_previous_file_whole)
{
    make_inputs();
    SH_OK("\"$RS\" bucket --quiet --nodes 5 --metrics m.prom -o out in.csv && cp m.prom good.prom");
    static const char *const points[] = {"begun", "batch_written", "publish", "published", "metrics_publish"};
    for (size_t i = 0; i < sizeof points / sizeof *points; i++) {
        int st = run_stopped_at(points[i], SIGKILL);
        cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "%s: status 0x%x", points[i], st);
        /* the previous file, byte for byte; the temporary, if any, is not
         * a *.prom file that the textfile collector would read */
        SH_OK("cmp m.prom good.prom && test \"$(ls *.prom | wc -l)\" = 2");
    }
    /* the next run removes what the killed ones left, and replaces FILE */
    SH_OK("\"$RS\" bucket --quiet --nodes 5 --force --metrics m.prom -o out in.csv && "
          "test \"$(ls -a | grep -c ringshard-tmp)\" = 0 && ! cmp -s m.prom good.prom");
    assert_promtool("m.prom");
}

Test(metrics, an_interrupted_run_is_recorded_as_such)
{
    make_inputs();
    SH_OK("\"$RS\" bucket --quiet --nodes 5 --metrics m.prom -o out in.csv && cp m.prom good.prom");
    char *last = sample("m.prom", "ringshard_last_success_timestamp_seconds{command=\"bucket\"}");
    int st = run_stopped_at("batch_written", SIGTERM);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 130, "status 0x%x", st);
    assert_promtool("m.prom");
    assert_sample("m.prom", "ringshard_exit_code{command=\"bucket\"}", "130");
    assert_sample("m.prom", "ringshard_last_success_timestamp_seconds{command=\"bucket\"}", last);
    free(last);
}

Test(metrics, last_success_is_read_back_strictly)
{
    const char *ok = "ringshard_last_success_timestamp_seconds{command=\"bucket\"} 1700000000.250\n";
    cr_assert_float_eq(rs_metrics_last_success_in(ok, strlen(ok), "bucket"), 1700000000.25, 1e-6);
    cr_assert_eq(rs_metrics_last_success_in(ok, strlen(ok), "dedup"), 0);
    /* a last line without its LF is read as well */
    cr_assert_eq(rs_metrics_last_success_in(ok, strlen(ok) - 5, "bucket"), 1700000000.0);
    static const char *const bad[] = {
        "ringshard_last_success_timestamp_seconds{command=\"bucket\"} -5\n",
        "ringshard_last_success_timestamp_seconds{command=\"bucket\"} NaN\n",
        "ringshard_last_success_timestamp_seconds{command=\"bucket\"} 12abc\n",
        "ringshard_last_success_timestamp_seconds{command=\"bucket\"}\n",
        "# ringshard_last_success_timestamp_seconds{command=\"bucket\"} 5\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        cr_assert_eq(rs_metrics_last_success_in(bad[i], strlen(bad[i]), "bucket"), 0, "%s", bad[i]);
}

/* An append that finds its input already ingested skips it: a success
 * that read and wrote nothing, the input counted as skipped. */
Test(metrics, an_append_counts_the_inputs_it_skips)
{
    make_inputs();
    SH_OK("\"$RS\" bucket --quiet --nodes 5 --append --metrics m.prom -o out in.csv");
    assert_bucket("m.prom", (const char *const[]){"inputs_skipped 0", "rows_written 3000", NULL});
    SH_OK("cp in.csv again.csv && \"$RS\" bucket --quiet --nodes 5 --append --metrics m.prom -o out again.csv");
    assert_promtool("m.prom");
    assert_bucket("m.prom",
                  (const char *const[]){"success 1", "inputs_skipped 1", "inputs 0", "rows_written 0", NULL});
}

/* compact writes its own: the rows it merged, and its failure (exit 2: a
 * file whose size is not its manifest's is a damaged directory, refused)
 * without a last success. */
Test(metrics, compact_writes_its_own)
{
    make_inputs();
    SH_OK("head -n 1001 in.csv > a.csv && { head -n 1 in.csv; tail -n +1002 in.csv; } > b.csv && "
          "\"$RS\" bucket --quiet --nodes 5 --key id --append -o out a.csv && "
          "\"$RS\" bucket --quiet --append -o out b.csv && \"$RS\" compact --quiet --metrics c.prom out");
    assert_promtool("c.prom");
    assert_sample("c.prom", "ringshard_exit_code{command=\"compact\"}", "0");
    assert_sample("c.prom", "ringshard_success{command=\"compact\"}", "1");
    assert_sample("c.prom", "ringshard_rows_written{command=\"compact\"}", "3000");
    free(sample("c.prom", "ringshard_phase_seconds{command=\"compact\",phase=\"merge\"}"));
    SH_OK("\"$RS\" bucket --quiet --append -o out a.csv b.csv --on-seen again && "
          "f=$(ls out/g*/*.csv.gz | head -1) && printf 'x' >> \"$f\"");
    res r = sh("\"$RS\" compact --quiet --metrics c.prom out");
    cr_assert_eq(r.rc, 2, "%s%s", r.out, r.err);
    cmd_result_free(&r);
    assert_promtool("c.prom");
    assert_sample("c.prom", "ringshard_exit_code{command=\"compact\"}", "2");
    assert_sample("c.prom", "ringshard_success{command=\"compact\"}", "0");
}
