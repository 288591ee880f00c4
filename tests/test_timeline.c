/* Thread timelines (RINGSHARD_TIMELINE, ringshard/timeline.h) and their
 * summary (tools/bench/timeline.sh): a run records every stage it goes through,
 * each span inside the run and no longer than its wall time in CPU, the
 * spans of one thread one after another; the outputs are the same with
 * the timeline on; the summary's idle and busy core-seconds add up to
 * cores x wall. Nothing here depends on how long anything takes. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "support.h"

TestSuite(timeline, .init = test_dir_setup, .fini = test_dir_teardown, .timeout = 300);

typedef struct {
    unsigned thread;
    char stage[32], kind[8];
    double t0, t1, cpu, runq;
} span;

typedef struct {
    span *s;
    size_t n;
    double exit_at;
} timeline;

static timeline read_timeline(const char *name)
{
    const char *path = path_join(test_dir, name);
    FILE *f = fopen(path, "r");
    cr_assert(f, "no timeline written at %s", path);
    timeline t = {calloc(1 << 16, sizeof(span)), 0, -1};
    char line[256];
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') {
            sscanf(line, "# exit\t%lf", &t.exit_at);
            continue;
        }
        cr_assert_lt(t.n, (size_t)1 << 16);
        span *s = &t.s[t.n++];
        int got = sscanf(line, "%u\t%31[^\t]\t%7[^\t]\t%lf\t%lf\t%lf\t%lf", &s->thread, s->stage, s->kind, &s->t0, &s->t1,
                         &s->cpu, &s->runq);
        cr_assert_eq(got, 7, "not a span line: %s", line);
    }
    fclose(f);
    cr_assert_geq(t.exit_at, 0, "no '# exit' line");
    return t;
}

static size_t count_stage(const timeline *t, const char *stage)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++)
        n += !strcmp(t->s[i].stage, stage);
    return n;
}

static int by_thread_then_start(const void *a, const void *b)
{
    const span *x = a, *y = b;
    if (x->thread != y->thread)
        return x->thread < y->thread ? -1 : 1;
    return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

/* Six batches at least: two inputs, a small --memory. */
static void bucket_run(const char *env, const char *out)
{
    SH_OK("%s \"$RS\" bucket --quiet -j 2 --memory 40M --key bill_id -o %s %s %s", env, out,
          fixture("data/bills_a.csv.gz"), fixture("data/bills_b.csv.gz"));
}

Test(timeline, a_run_records_its_stages_in_order)
{
    bucket_run("RINGSHARD_TIMELINE=tl.tsv", "out");
    timeline t = read_timeline("tl.tsv");
    const char *every[] = {"setup", "open-outputs", "produce-first", "produce", "parse", "merge", "compress-write",
                           "wait-end", "close", "publish"};
    for (size_t i = 0; i < sizeof every / sizeof *every; i++)
        cr_expect_gt(count_stage(&t, every[i]), 0, "no %s span", every[i]);
    cr_expect_eq(count_stage(&t, "setup"), 1);
    cr_expect_eq(count_stage(&t, "publish"), 1);
    /* one merge a batch, and every batch but the first produced in a region */
    cr_expect_geq(count_stage(&t, "merge"), 2);
    cr_expect_eq(count_stage(&t, "produce"), count_stage(&t, "merge"));
    for (size_t i = 0; i < t.n; i++) {
        span *s = &t.s[i];
        cr_expect(s->t0 >= 0 && s->t0 <= s->t1 && s->t1 <= t.exit_at, "%s: %f..%f outside 0..%f", s->stage, s->t0,
                  s->t1, t.exit_at);
        /* a thread's CPU clock cannot run faster than the wall clock
         * (clock reads a few microseconds apart: 1 ms of slack) */
        cr_expect(s->cpu >= 0 && s->cpu <= s->t1 - s->t0 + 1e-3, "%s: %f CPU s in %f s", s->stage, s->cpu,
                  s->t1 - s->t0);
        cr_expect(s->runq >= 0 && s->runq <= s->t1 - s->t0 + 1e-3, "%s: %f s runnable in %f s", s->stage, s->runq,
                  s->t1 - s->t0);
        cr_expect(!strcmp(s->kind, "cpu") || !strcmp(s->kind, "wait") || !strcmp(s->kind, "io"), "kind %s", s->kind);
    }
    /* the spans of one thread follow one another */
    qsort(t.s, t.n, sizeof *t.s, by_thread_then_start);
    for (size_t i = 1; i < t.n; i++)
        if (t.s[i].thread == t.s[i - 1].thread)
            cr_expect_geq(t.s[i].t0, t.s[i - 1].t1 - 1e-6, "thread %u: %s at %f begins before %s ends at %f",
                          t.s[i].thread, t.s[i].stage, t.s[i].t0, t.s[i - 1].stage, t.s[i - 1].t1);
    free(t.s);
}

Test(timeline, the_outputs_do_not_change)
{
    bucket_run("RINGSHARD_TIMELINE=tl.tsv", "on");
    bucket_run("", "off");
    SH_OK("test -s tl.tsv && cd on && for f in *.gz; do cmp \"$f\" \"../off/$f\" || exit 1; done && "
          "test \"$(ls | wc -l)\" = \"$(ls ../off | wc -l)\"");
}

/* Parses "LABEL   N ..." from the summary: the first number after label. */
static double summary_value(const char *out, const char *label)
{
    const char *p = strstr(out, label);
    cr_assert(p, "no '%s' in the summary:\n%s", label, out);
    return strtod(p + strlen(label), NULL);
}

Test(timeline, the_summary_accounts_for_every_core_second)
{
    bucket_run("RINGSHARD_TIMELINE=tl.tsv", "out");
    timeline t = read_timeline("tl.tsv");
    for (int cores = 1; cores <= 3; cores++) {
        cmd_result r = sh_in_test_dir("bash %s/tools/bench/timeline.sh tl.tsv %d", RS_SOURCE_DIR, cores);
        cr_assert_eq(r.rc, 0, "exit %d: %s", r.rc, r.err);
        double idle = summary_value(r.out, "idle, all"), busy = summary_value(r.out, "busy (cpu spans)");
        cr_expect(idle >= 0 && busy > 0, "%s", r.out);
        cr_expect_leq(fabs(idle + busy - cores * t.exit_at), 0.002 * cores + 1e-6,
                      "%d cores: idle %f + busy %f != %d x %f\n%s", cores, idle, busy, cores, t.exit_at, r.out);
        cr_expect(strstr(r.out, "compress-write"), "%s", r.out);
        cmd_result_free(&r);
    }
    free(t.s);
}

Test(timeline, off_by_default_and_an_unwritable_file_is_reported)
{
    bucket_run("", "out");
    SH_OK("test -z \"$(ls | grep -v '^out$')\"");
    cmd_result r = sh_in_test_dir("RINGSHARD_TIMELINE=no/such/dir/tl.tsv \"$RS\" bucket --quiet --key bill_id -o out2 %s",
                                  fixture("data/bills_a.csv.gz"));
    cr_expect_eq(r.rc, 0, "the run's exit status changed: %d", r.rc);
    cr_expect(strstr(r.err, "RINGSHARD_TIMELINE: cannot write no/such/dir/tl.tsv"), "stderr: %s", r.err);
    cmd_result_free(&r);
    r = sh_in_test_dir("bash %s/tools/bench/timeline.sh missing.tsv", RS_SOURCE_DIR);
    cr_expect_eq(r.rc, 2, "exit %d", r.rc);
    cmd_result_free(&r);
}
