/* Publishing an output directory under crashes, concurrency and odd
 * targets (two runs at once, kills at every step, odd targets, long
 * names): the real
 * command, real files. Windows are hit with the testing knob
 * RINGSHARD_TEST_PAUSE_AT (the process stops itself at a named point; the
 * test waits for the stopped state with waitpid(WUNTRACED), never sleeps)
 * and RINGSHARD_TEST_NO_EXCHANGE (acts as a file system without
 * renameat2 RENAME_EXCHANGE). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "support.h"

TestSuite(publish, .init = test_dir_setup, .fini = test_dir_teardown, .timeout = 600);

typedef cmd_result res;
#define sh sh_in_test_dir

/* Asserts that the command's output is `want`, showing stderr otherwise. */
#define SH_EQ(want, ...)                                                                     \
    do {                                                                                     \
        res r_ = sh(__VA_ARGS__);                                                            \
        cr_assert_str_eq(r_.out, want, "exit %d\nstdout: %s\nstderr: %s", r_.rc, r_.out, r_.err); \
        cmd_result_free(&r_);                                                                \
    } while (0)

/* With tests/failalloc.c preloaded, ASan must not insist on coming first. */
#define NO_ASAN_ORDER "ASAN_OPTIONS=\"$ASAN_OPTIONS:verify_asan_link_order=0\""

/* Counts what ringshard may leave beside an output: temporaries, -old. */
#define LITTER "find . -maxdepth 1 -name '*.ringshard-*' | wc -l"

static void make_input(void)
{
    SH_OK("{ echo id,v; seq 1 3000 | sed 's/.*/&,v&/'; } > in.csv");
}

/* Sends sig to the stopped pid, lets it continue, and returns its wait
 * status. */
static int signal_and_wait(pid_t pid, int sig)
{
    int st;
    cr_assert_eq(kill(pid, sig), 0);
    if (sig != SIGKILL)
        cr_assert_eq(kill(pid, SIGCONT), 0);
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    return st;
}

/* stop_at, then SIGKILL. */
static void kill_at(const char *point, const char *env, const char *cmd)
{
    int st = signal_and_wait(stop_at(point, env, cmd, NULL), SIGKILL);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

/* out holds a complete output of `files` entries that verify accepts. */
static void assert_complete(const char *dir, int files)
{
    char want[32];
    snprintf(want, sizeof want, "%d\n", files);
    SH_EQ(want, "ls %s | wc -l", dir);
    assert_verify(path_join(test_dir, dir));
}

/* ---- item 1: --force is atomic -------------------------------------------- */

/* Two --force runs at once, 20 times: each round leaves exactly one
 * complete output and nothing beside it, both runs succeed. (Before: a run
 * could find no DIR and publish into the window, the other then failed
 * with "Directory not empty" and left an -old directory.) The same with
 * the two-rename fallback, which starts again when a run published into
 * its window. */
Test(publish, concurrent_force_runs_leave_one_complete_output)
{
    make_input();
    static const char *const mode[] = {"", "RINGSHARD_TEST_NO_EXCHANGE=1 "};
    for (int m = 0; m < 2; m++) {
        res r = sh("rm -rf out; bad=0; for i in $(seq 20); do "
                   "%s\"$RS\" bucket --quiet -j 1 --nodes 3 --force -o out in.csv 2>e1 & a=$!; "
                   "%s\"$RS\" bucket --quiet -j 1 --nodes 4 --force -o out in.csv 2>e2 & b=$!; "
                   "wait $a || { bad=1; cat e1; }; wait $b || { bad=1; cat e2; }; "
                   "n=$(ls out | wc -l); [ $n = 4 ] || [ $n = 5 ] || { bad=1; echo round $i: $n files; }; "
                   "\"$RS\" verify --quiet out || bad=1; "
                   "l=$(" LITTER "); [ $l = 0 ] || { bad=1; echo round $i: litter; ls -a; }; "
                   "done; echo bad=$bad",
                   mode[m], mode[m]);
        cr_assert_str_eq(r.out, "bad=0\n", "%s: %s %s", m ? "two renames" : "exchange", r.out, r.err);
        cmd_result_free(&r);
    }
}

/* A SIGKILL anywhere leaves DIR complete, old or new: before the publish
 * (the temporary is left, removed by the next run), after the exchange
 * (the previous output is left at the temporary's name, removed by the
 * next run). For bucket, dedup and plan --emit. */
Test(publish, sigkill_at_each_point_leaves_the_old_or_the_new_output)
{
    make_input();
    /* %d: the node count; each output has that many files and a manifest
     * (plan --emit: one file per move, n -> n+1 for each of the n nodes) */
    static const char *const cmd[] = {
        "\"$RS\" bucket --quiet -j 1 --nodes %d --force -o out in.csv",
        "\"$RS\" dedup --quiet -j 1 --nodes %d --force -o out in.csv",
        "\"$RS\" plan --nodes %d --add 1 --emit out --force in.csv",
    };
    static const char *const point[] = {"begun", "publish", "published"};
    for (size_t k = 0; k < sizeof cmd / sizeof *cmd; k++)
        for (int p = 0; p < 3; p++) {
            char old[256], nw[256];
            snprintf(old, sizeof old, cmd[k], 3);
            snprintf(nw, sizeof nw, cmd[k], 4);
            SH_OK("rm -rf out && %s > /dev/null", old);
            kill_at(point[p], NULL, nw);
            assert_complete("out", p < 2 ? 4 : 5);
            /* the next run removes what the killed one left */
            SH_OK("%s > /dev/null", nw);
            SH_EQ("0\n", LITTER);
            assert_complete("out", 5);
        }
}

/* Without the exchange, a kill between the two renames leaves no DIR; the
 * next run on DIR puts the previous output back (and, without --force,
 * then refuses as for any existing output). */
Test(publish, sigkill_between_two_renames_is_repaired_by_the_next_run)
{
    make_input();
    SH_OK("\"$RS\" bucket --quiet --nodes 3 -o out in.csv");
    kill_at("old", "RINGSHARD_TEST_NO_EXCHANGE=1", "\"$RS\" bucket --quiet --nodes 4 --force -o out in.csv");
    SH_EQ("missing\n1\n", "test -e out || echo missing; ls -d out.ringshard-old.* | wc -l");
    res r = sh("\"$RS\" bucket --quiet --nodes 5 -o out in.csv");
    cr_assert_eq(r.rc, 73, "%s", r.err);
    cr_assert(strstr(r.err, "out: restored from out.ringshard-old.") &&
                  strstr(r.err, ", left by an interrupted replacement (process ") &&
                  strstr(r.err, "ringshard bucket: out: output exists (use --force to replace it)"),
              "%s", r.err);
    cmd_result_free(&r);
    assert_complete("out", 4);
    SH_EQ("0\n", LITTER);
}

/* The fallback says why it is used. */
Test(publish, no_exchange_is_said)
{
    make_input();
    SH_OK("\"$RS\" bucket --quiet --nodes 3 -o out in.csv");
    res r = sh("RINGSHARD_TEST_NO_EXCHANGE=1 \"$RS\" bucket --quiet --nodes 4 --force -o out in.csv");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert(strstr(r.err, "ringshard: warning: out: the file system cannot exchange two directories (renameat2 "
                            "RENAME_EXCHANGE: Invalid argument): replacing it in two renames; if killed between "
                            "them, the next run on it restores the previous output from out.ringshard-old."),
              "%s", r.err);
    cmd_result_free(&r);
    assert_complete("out", 5);
    SH_EQ("0\n", LITTER);
}

/* ---- item 3: what --force may replace --------------------------------------- */

Test(publish, force_refuses_what_is_not_a_ringshard_output)
{
    make_input();
    SH_OK("mkdir mine && echo a > mine/a && echo b > mine/b && mkdir mine/sub");
    static const char *const cmd[] = {
        "\"$RS\" bucket --quiet --nodes 3 --force -o mine in.csv",
        "\"$RS\" dedup --quiet --nodes 3 --force -o mine in.csv",
        "\"$RS\" plan --nodes 3 --add 1 --force --emit mine in.csv",
    };
    for (int i = 0; i < 3; i++) {
        res r = sh("%s", cmd[i]);
        cr_assert_eq(r.rc, 73, "%s: %s", cmd[i], r.err);
        cr_assert(strstr(r.err, ": mine: not a ringshard output (holds 3 entries, no manifest.json): refusing to "
                                "replace it (--force-any replaces any directory)\n"),
                  "%s: %s", cmd[i], r.err);
        cmd_result_free(&r);
        SH_EQ("a b sub \n0\n", "ls mine | tr '\\n' ' '; echo; " LITTER);
    }
    /* a manifest.json that is not ours does not make it an output */
    SH_OK("echo '{\"name\": \"x\"}' > mine/manifest.json");
    res r = sh("\"$RS\" bucket --quiet --nodes 3 --force -o mine in.csv");
    cr_assert_eq(r.rc, 73, "%s", r.err);
    cr_assert(strstr(r.err, "mine: not a ringshard output (holds 4 entries, a manifest.json that ringshard did "
                            "not write): refusing to replace it"),
              "%s", r.err);
    cmd_result_free(&r);
    /* --force-any replaces it; an empty directory needs only --force */
    SH_OK("\"$RS\" bucket --quiet --nodes 3 --force-any -o mine in.csv");
    assert_complete("mine", 4);
    SH_OK("mkdir empty && \"$RS\" bucket --quiet --nodes 3 --force -o empty in.csv");
    assert_complete("empty", 4);
    /* a ringshard output of another command is replaced with --force */
    SH_OK("\"$RS\" dedup --quiet --nodes 2 --force -o mine in.csv");
    assert_complete("mine", 3);
    SH_EQ("0\n", LITTER);
}

/* A file, or a symbolic link (to a directory or anything), is never
 * replaced, not even with --force-any: the link's target is untouched. */
Test(publish, force_never_replaces_a_file_or_a_link)
{
    make_input();
    SH_OK("echo data > file && \"$RS\" bucket --quiet --nodes 3 -o real in.csv && ln -s real link && "
          "ln -s nowhere dangling");
    static const struct {
        const char *target, *msg;
    } t[] = {
        {"file", "ringshard bucket: file: exists and is not a directory (not replacing it)\n"},
        {"link", "ringshard bucket: link: is a symbolic link (not replacing it: name the directory itself)\n"},
        {"dangling", "ringshard bucket: dangling: is a symbolic link (not replacing it: name the directory itself)\n"},
    };
    for (int i = 0; i < 3; i++)
        for (int any = 0; any < 2; any++) {
            res r = sh("\"$RS\" bucket --quiet --nodes 2 %s -o %s in.csv", any ? "--force-any" : "--force",
                       t[i].target);
            cr_assert_eq(r.rc, 73, "%s: %s", t[i].target, r.err);
            cr_assert_str_eq(r.err, t[i].msg);
            cmd_result_free(&r);
        }
    SH_EQ("data\nlink real\n0\n", "cat file; test -L link && echo link $(readlink link); " LITTER);
    assert_complete("real", 4);
}

/* ---- item 17 (part): names near NAME_MAX ------------------------------------- */

/* A valid DIR name of 240, 250 or 255 bytes: the temporary and -old names
 * are cut and hashed to fit; --force replaces; what a killed run left is
 * still found and removed. (Before: "File name too long".) */
Test(publish, output_names_up_to_name_max)
{
    make_input();
    static const int len[] = {240, 250, 255};
    for (int i = 0; i < 3; i++) {
        char name[256];
        memset(name, 'd', (size_t)len[i]);
        name[len[i]] = '\0';
        SH_OK("\"$RS\" bucket --quiet --nodes 3 -o %s in.csv", name);
        assert_complete(name, 4);
        char cmd[512];
        snprintf(cmd, sizeof cmd, "\"$RS\" bucket --quiet --nodes 4 --force -o %s in.csv", name);
        kill_at("begun", NULL, cmd);
        SH_EQ("1\n", "ls -a | grep -c 'ringshard-tmp'");
        SH_OK("%s", cmd);
        SH_EQ("0\n", LITTER);
        assert_complete(name, 5);
        SH_OK("RINGSHARD_TEST_NO_EXCHANGE=1 \"$RS\" bucket --quiet --nodes 2 --force -o %s in.csv 2>/dev/null", name);
        SH_EQ("0\n", LITTER);
        assert_complete(name, 3);
        SH_OK("rm -rf %s", name);
    }
}

/* ---- item 8: a side file inside DIR ------------------------------------------- */

/* A quarantine file, a --duplicates report or a plan report inside the
 * output directory would be lost when the output is replaced: refused
 * (exit 64) in every spelling - relative, ./, .., absolute, a deeper
 * directory, a symbolic link to the directory or to a file in it (even
 * dangling, a chain, a relative one from a subdirectory) - before anything
 * is written; the previous output is intact.
 * A file beside it is fine. */
Test(publish, side_file_inside_the_output_is_refused)
{
    make_input();
    SH_OK("\"$RS\" bucket --quiet --nodes 3 -o out in.csv && ln -s out ldir && ln -s out/q.tsv lq && mkdir sub && "
          "ln -s lq lq2 && ln -s out/manifest.json lm && ln -s ../out/q.tsv sub/lo");
    static const char *const q[] = {"out/q.tsv", "./out/q.tsv", "sub/../out/q.tsv", "out/deeper/q.tsv", "ldir/q.tsv",
                                    "lq", "lq2", "lm", "sub/lo", "@/out/q.tsv"};
    for (size_t i = 0; i < sizeof q / sizeof *q; i++) {
        char path[4096];
        if (q[i][0] == '@')
            snprintf(path, sizeof path, "%s%s", test_dir, q[i] + 1);
        else
            snprintf(path, sizeof path, "%s", q[i]);
        res r = sh("\"$RS\" bucket --quiet --nodes 4 --force --on-bad-row quarantine=%s -o out in.csv", path);
        cr_assert_eq(r.rc, 64, "%s: %s", path, r.err);
        char want[8192];
        snprintf(want, sizeof want,
                 "ringshard bucket: --on-bad-row quarantine=%s: inside the output directory out, which is replaced "
                 "when the output is published (the file would be lost): write it elsewhere\n",
                 path);
        cr_assert_str_eq(r.err, want);
        cmd_result_free(&r);
    }
    res r = sh("\"$RS\" dedup --quiet --nodes 4 --force --duplicates ./out/d.tsv -o out in.csv");
    cr_assert_eq(r.rc, 64, "%s", r.err);
    cr_assert(strstr(r.err, "ringshard dedup: --duplicates ./out/d.tsv: inside the output directory out, which is"),
              "%s", r.err);
    cmd_result_free(&r);
    r = sh("\"$RS\" dedup --quiet --nodes 4 --force --duplicates lq2 -o out in.csv");
    cr_assert_eq(r.rc, 64, "%s", r.err);
    cr_assert(strstr(r.err, "ringshard dedup: --duplicates lq2: inside the output directory out, which is"), "%s", r.err);
    cmd_result_free(&r);
    r = sh("\"$RS\" dedup --quiet --nodes 4 --force --on-bad-row quarantine=out/q.tsv -o out in.csv");
    cr_assert_eq(r.rc, 64, "%s", r.err);
    cmd_result_free(&r);
    r = sh("\"$RS\" plan --nodes 3 --add 1 --emit out --force --json out/plan.json in.csv");
    cr_assert_eq(r.rc, 64, "%s", r.err);
    cr_assert(strstr(r.err, "ringshard plan: --json out/plan.json: inside the output directory out, which is"), "%s",
              r.err);
    cmd_result_free(&r);
    assert_complete("out", 4);
    SH_EQ("0\n", "test -e out/q.tsv || test -e out/d.tsv || test -e out/plan.json || echo 0");
    /* beside the output: fine */
    SH_OK("\"$RS\" bucket --quiet --nodes 4 --force --on-bad-row quarantine=q.tsv -o out in.csv && "
          "\"$RS\" dedup --quiet --nodes 4 --force --duplicates sub/d.tsv -o out in.csv && test -s q.tsv");
    assert_complete("out", 5);
}

/* ---- item 5: other faults ---------------------------------------------------- */

/* SIGHUP (a closed terminal, a logout) is handled as SIGTERM:
 * exit 130, the temporary removed, nothing published, a previous output
 * intact. (Before: killed by the signal, 129, the temporary left.) */
Test(publish, sighup_is_handled_as_sigterm)
{
    make_input();
    static const char *const cmd[] = {
        "\"$RS\" bucket --quiet -j 1 --nodes 4 --force -o out in.csv",
        "\"$RS\" dedup --quiet -j 1 --nodes 4 --force -o out in.csv",
    };
    for (int i = 0; i < 2; i++) {
        SH_OK("rm -rf out && \"$RS\" bucket --quiet --nodes 3 -o out in.csv");
        int st = signal_and_wait(stop_for_signal("begun", cmd[i], NULL), SIGHUP);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 130, "%s: status 0x%x", cmd[i], st);
        SH_EQ("0\n", LITTER);
        assert_complete("out", 4);
    }
}

/* A stop signal that comes after the pipeline's last look at the flag but
 * before the directory is published - while the files are closed, the
 * manifest written and the tree fsync'd, seconds for a large output -
 * still means exit 130 and nothing published: stopped at "publish" (the
 * tree fsync'd, just before the rename), the signal (stop_for_signal,
 * signal_stopped) then SIGCONT. (Before: the run published, exit 0,
 * the previous output gone; plan --emit also replaced its --json file.) */
Test(publish, stop_signal_before_a_directory_is_published_keeps_the_previous_one)
{
    make_input();
    static const char *const cmd[] = {
        "\"$RS\" bucket --quiet -j 1 --nodes 4 --force -o out in.csv",
        "\"$RS\" dedup --quiet -j 1 --nodes 4 --force -o out in.csv",
        "\"$RS\" plan --quiet --nodes 4 --add 1 --force --emit out --json f in.csv",
    };
    static const int sig[] = {SIGTERM, SIGINT, SIGHUP};
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++) {
            SH_OK("rm -rf out err && \"$RS\" bucket --quiet --nodes 3 -o out in.csv && printf 'previous\\n' > f");
            pid_t pid = stop_for_signal("publish", cmd[i], "err");
            signal_stopped(pid, sig[k]);
            int st;
            cr_assert_eq(waitpid(pid, &st, 0), pid);
            cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 130, "%s, signal %d: status 0x%x", cmd[i], sig[k], st);
            SH_EQ("1\n", "grep -c ': interrupted$' err");
            SH_EQ("0\n", LITTER);
            SH_EQ("previous\n", "cat f");
            assert_complete("out", 4);   /* the previous output: 3 nodes and its manifest */
        }
}

/* Every command that writes a file handles SIGINT, SIGTERM and SIGHUP as
 * bucket does: stopped at "file_publish" (the file written to its
 * temporary, just before the check for a stop signal and the rename), a
 * signal then SIGCONT ends it with exit 130 and "interrupted", the
 * temporary removed, a previous file byte for byte as it was. The signal
 * is seen at the point (stop_for_signal, signal_stopped). (Before: plan, simulate and
 * stats DIR were killed with 128 + the signal and left the temporary; stats
 * on data published its pictures and exited 0.) */
Test(publish, stop_signal_before_a_file_is_published_keeps_the_previous_one)
{
    make_input();
    SH_OK("\"$RS\" bucket --quiet --nodes 4 -o b in.csv && printf 'bad\\n\"x\n' > bad.csv");
    static const char *const cmd[] = {
        "\"$RS\" plan --quiet --nodes 10 --new-nodes 11 --json f",
        "\"$RS\" plan --quiet -j 2 --nodes 4 --new-nodes 5 --pairs f in.csv",
        "\"$RS\" plan --quiet --nodes 4 --new-nodes 5 --on-bad-row quarantine=f bad.csv",
        "\"$RS\" plan --quiet --nodes 10 --new-nodes 12 --svg f",
        "\"$RS\" simulate --nodes 20 --keys 2000 --html f",
        "\"$RS\" stats --quiet -j 2 --nodes 4 --svg f in.csv",
        "\"$RS\" stats b --html f",
    };
    static const int sig[] = {SIGTERM, SIGINT, SIGHUP};
    for (int i = 0; i < (int)(sizeof cmd / sizeof *cmd); i++) {
        SH_OK("printf 'previous\\n' > f && rm -f err");
        pid_t pid = stop_for_signal("file_publish", cmd[i], "err");
        SH_EQ("1\n", LITTER);   /* the temporary, written */
        signal_stopped(pid, sig[i % 3]);
        int st;
        cr_assert_eq(waitpid(pid, &st, 0), pid);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 130, "%s: status 0x%x", cmd[i], st);
        SH_EQ("0\n", LITTER);
        SH_EQ("previous\n", "cat f");
        SH_EQ("1\n", "grep -c ': interrupted$' err");
    }
}

/* simulate's counting looks at the stop flag as it goes: a signal that
 * comes while a hundred billion keys are being counted (hours of work)
 * ends the run at once with exit 130, the previous file kept. The run stops
 * itself just before the count (simulate_keys) and gets the signal there.
 * (Before: the signal waited for the file's publication, after the whole
 * count: this test then gave up after 300 s.) */
Test(publish, stop_signal_during_simulate_counting_ends_it, .timeout = 300)
{
    SH_OK("printf 'previous\\n' > f && rm -f err");
    pid_t pid = stop_for_signal("simulate_keys", "\"$RS\" simulate --nodes 20 --keys 100000000000 --html f", "err");
    signal_stopped(pid, SIGINT);
    int st;
    /* the whole count would take hours: wait for the exit, generously,
     * and kill a run that ignored the signal rather than leave it behind */
    pid_t w = 0;
    for (int i = 0; i < 6000 && (w = waitpid(pid, &st, WNOHANG)) == 0; i++)
        usleep(50000);
    if (w == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
    }
    cr_assert_eq(w, pid, "still counting 300 s after SIGINT");
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 130, "status 0x%x", st);
    SH_EQ("0\n", LITTER);
    SH_EQ("previous\n", "cat f");
    SH_EQ("1\n", "grep -c ': interrupted$' err");
}

/* A stop signal once the run has published something (plan --emit's
 * directory) does not stop the files that follow: exit 130 would say
 * "nothing published" and the plan would not describe the emitted
 * directory. The run ends as an uninterrupted one does. */
Test(publish, stop_signal_after_emit_is_published_finishes_the_run)
{
    make_input();
    SH_OK("printf 'previous\\n' > f");
    pid_t pid = stop_for_signal("file_publish", "\"$RS\" plan --quiet --nodes 4 --new-nodes 5 --emit out --json f in.csv",
                        NULL);
    signal_stopped(pid, SIGTERM);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status 0x%x", st);
    SH_EQ("0\n", LITTER);
    SH_EQ("1\n", "grep -c '\"emit\": \"out\"' f");
    assert_verify(path_join(test_dir, "out"));
}

/* stderr closed before the summary: the write fails (EPIPE, SIGPIPE is
 * ignored) and the exit code is the job's, 0, with the output published.
 * (Before: killed by SIGPIPE after publishing, exit 141.) */
Test(publish, closed_stderr_does_not_change_the_exit_code)
{
    make_input();
    static const char *const cmd[] = {
        "exec \"$RS\" bucket --nodes 4 -o out in.csv",
        "exec \"$RS\" dedup --nodes 4 --force -o out in.csv",
    };
    for (int i = 0; i < 2; i++) {
        int fd[2];
        cr_assert_eq(pipe(fd), 0);
        close(fd[0]);   /* nobody reads: every write to stderr fails */
        pid_t pid = spawn_in_test_dir(cmd[i], NULL, NULL, fd[1]);
        close(fd[1]);
        int st;
        cr_assert_eq(waitpid(pid, &st, 0), pid);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: status 0x%x", cmd[i], st);
        assert_complete("out", 5);
    }
}

/* A thread that cannot be created (a process limit; here
 * tests/failalloc.c's pthread_create fails from the 2nd call): a clear
 * message, exit 1, no temporary, a previous output intact. (Before:
 * libgomp's "Thread creation failed" and the temporary left.) */
Test(publish, thread_creation_failure_fails_cleanly)
{
    make_input();
    static const char *const cmd[] = {
        "\"$RS\" bucket --quiet -j 4 --nodes 4 --force -o out in.csv",
        "\"$RS\" dedup --quiet -j 4 --nodes 4 --force -o out in.csv",
        "\"$RS\" plan -j 4 --nodes 4 --add 1 --force --emit out in.csv",
    };
    SH_OK("\"$RS\" bucket --quiet --nodes 3 -o out in.csv");
    for (int i = 0; i < 3; i++) {
        res r = sh("LD_PRELOAD='%s' " NO_ASAN_ORDER " RS_FAIL_PTHREAD_CREATE=2 %s", RS_FAILALLOC, cmd[i]);
        cr_assert_eq(r.rc, 1, "%s: %s", cmd[i], r.err);
        cr_assert(strstr(r.err, ": cannot start the threads of -j 4 (4 of them, with the write-behind thread): "
                                "Resource temporarily unavailable (a limit on processes, ulimit -u?); nothing "
                                "written\n"),
                  "%s: %s", cmd[i], r.err);
        cr_assert(!strstr(r.err, "libgomp"), "%s", r.err);
        cmd_result_free(&r);
        SH_EQ("0\n", LITTER);
        assert_complete("out", 4);
    }
}

/* A quarantine file that cannot be written says why. (Before: "write
 * failed" and no reason.) */
Test(publish, quarantine_write_failure_says_why)
{
    SH_OK("printf 'id,v\\n1,a\\n2,b\"c\\n3,d\\n' > bad.csv");
    res r = sh("\"$RS\" bucket --quiet --nodes 3 --on-bad-row quarantine=/dev/full -o out bad.csv");
    cr_assert_eq(r.rc, 1, "%s", r.err);
    cr_assert_str_eq(r.err, "ringshard bucket: /dev/full: write failed: No space left on device\n");
    cmd_result_free(&r);
    SH_EQ("0\n", "ls -a | grep -c 'out' || true");
}

/* dedup --duplicates FILE is written beside FILE and renamed over it only
 * with the publication: a run that fails - the report cannot be written,
 * the output appeared meanwhile, a SIGKILL just before publishing - leaves
 * a previous FILE as it was, and the next run removes a killed run's
 * temporary; a run that succeeds replaces FILE. (Before: FILE was
 * overwritten in place before publishing.) */
Test(publish, duplicates_report_is_published_with_the_output)
{
    SH_OK("{ echo id,v; seq 1 3000 | sed 's/.*/&,aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa&/'; "
          "seq 1 3000 | sed 's/.*/&,bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb&/'; } > dup.csv && "
          "echo previous > d.tsv");
    /* a report larger than the file-size limit (every other file is smaller) */
    res r = sh("ulimit -f 100; \"$RS\" dedup --quiet --nodes 20 --duplicates d.tsv -o out dup.csv");
    cr_assert_eq(r.rc, 1, "%s", r.err);
    cr_assert_str_eq(r.err, "ringshard dedup: d.tsv: write failed: File too large\n");
    cmd_result_free(&r);
    SH_EQ("previous\n0\n0\n", "cat d.tsv; ls -a | grep -c ringshard; test -e out || echo 0");
    /* the output appears while the run is about to publish */
    pid_t pid = stop_at("publish", NULL, "\"$RS\" dedup --quiet --nodes 20 --duplicates d.tsv -o out dup.csv", NULL);
    SH_OK("mkdir out");
    int st = signal_and_wait(pid, SIGCONT);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 73, "status 0x%x", st);
    SH_EQ("previous\n0\n", "cat d.tsv; ls -a | grep -c ringshard");
    /* killed just before publishing, then run again */
    SH_OK("rmdir out");
    kill_at("publish", NULL, "\"$RS\" dedup --quiet --nodes 20 --duplicates d.tsv -o out dup.csv");
    SH_EQ("previous\n1\n", "cat d.tsv; ls -a | grep -c '^d.tsv.ringshard-tmp.'");
    SH_OK("\"$RS\" dedup --quiet --nodes 20 --duplicates d.tsv -o out dup.csv");
    SH_EQ("3000\n0\n", "wc -l < d.tsv; " LITTER);
    assert_complete("out", 21);
}

/* Counts temporaries anywhere below the test directory (beside a link's
 * target as well as beside the link). */
#define LITTER_ALL "find . -name '*.ringshard-tmp.*' | wc -l"

/* A side file named through a symbolic link (dedup --duplicates, bucket
 * --on-bad-row quarantine=) is published as a single file is
 * (util/outfile.c): the file the link leads to is replaced, atomically,
 * with its mode kept, and the link stays - for a link into another
 * directory (the temporary is beside the target: one file system), a
 * relative one from a subdirectory, a chain; a dangling link's target is
 * created, as plan --json creates it, and a link to a missing directory
 * fails naming it. The contents are those written to a plain file.
 * (Before: the link was replaced by a regular file.) */
Test(publish, side_files_through_a_symbolic_link_replace_its_target)
{
    SH_OK("{ echo id,v; seq 1 300 | sed 's/.*/&,a&/'; seq 1 300 | sed 's/.*/&,a&/'; } > dup.csv && "
          "printf 'id,v\\n1,a\\n2,b\"c\\n3,d\\n4,e\"f\\n' > bad.csv && mkdir elsewhere sub && "
          "echo old > elsewhere/d.tsv && chmod 640 elsewhere/d.tsv && ln -s elsewhere/d.tsv d.tsv && "
          "echo old > elsewhere/q.tsv && ln -s elsewhere/q.tsv q1 && ln -s q1 q.tsv && "
          "ln -s ../elsewhere/r.tsv sub/r.tsv && ln -s elsewhere/new.tsv dangling && "
          "ln -s elsewhere/plan.json plan.json && ln -s nodir/x.tsv nowhere");
    /* the references: the same runs into plain files */
    SH_OK("\"$RS\" dedup --quiet --nodes 5 --duplicates ref-d.tsv -o ref-d dup.csv && "
          "\"$RS\" bucket --quiet --nodes 3 --on-bad-row quarantine=ref-q.tsv -o ref-q bad.csv && "
          "\"$RS\" plan --nodes 10 --add 1 --quiet --json ref-plan.json && test -s ref-d.tsv && "
          "test $(wc -l < ref-q.tsv) = 3");
    /* killed just before publishing: the temporary is beside the target */
    kill_at("publish", NULL, "\"$RS\" dedup --quiet --nodes 5 --duplicates d.tsv -o out dup.csv");
    SH_EQ("old\n1\n0\n", "cat d.tsv; ls elsewhere | grep -c '^d.tsv.ringshard-tmp.'; ls -a | grep -c '^d.tsv.' || true");
    SH_OK("rm -rf out*");
    SH_OK("\"$RS\" dedup --quiet --nodes 5 --duplicates d.tsv -o out dup.csv && "
          "\"$RS\" bucket --quiet --nodes 3 --on-bad-row quarantine=q.tsv -o outq bad.csv && "
          "\"$RS\" bucket --quiet --nodes 3 --on-bad-row quarantine=sub/r.tsv -o outr bad.csv && "
          "\"$RS\" dedup --quiet --nodes 5 --duplicates dangling -o outn dup.csv && "
          "\"$RS\" plan --nodes 10 --add 1 --quiet --json plan.json");
    SH_EQ("elsewhere/d.tsv q1 elsewhere/q.tsv ../elsewhere/r.tsv elsewhere/new.tsv elsewhere/plan.json\n",
          "echo $(readlink d.tsv q.tsv q1 sub/r.tsv dangling plan.json)");
    SH_OK("cmp elsewhere/d.tsv ref-d.tsv && cmp elsewhere/q.tsv ref-q.tsv && cmp elsewhere/r.tsv ref-q.tsv && "
          "cmp elsewhere/new.tsv ref-d.tsv && cmp elsewhere/plan.json ref-plan.json");
    SH_EQ("640\n0\n", "stat -c %%a elsewhere/d.tsv; " LITTER_ALL);
    /* a dangling link into a missing directory: nothing published, the link kept */
    res r = sh("\"$RS\" dedup --quiet --nodes 5 --duplicates nowhere -o outm dup.csv");
    cr_assert_eq(r.rc, 1, "%s", r.err);
    cr_assert(strstr(r.err, "nowhere: cannot create a file beside it: No such file or directory"), "%s", r.err);
    cmd_result_free(&r);
    r = sh("\"$RS\" plan --nodes 10 --add 1 --quiet --json nowhere");
    cr_assert_eq(r.rc, 1, "%s", r.err);
    cr_assert(strstr(r.err, "nowhere: cannot create: No such file or directory"), "%s", r.err);
    cmd_result_free(&r);
    SH_EQ("nodir/x.tsv\n0\n", "readlink nowhere; test -e outm || " LITTER_ALL);
    assert_complete("out", 6);
    assert_complete("outq", 4);
}

/* Files are fsync'd by several threads at once (64 files: a window of 32
 * or more): when two of them fail,
 * the one reported is the first in the directory's order, whichever
 * thread met it first - the same message every time - and nothing is
 * published. */
Test(publish, a_file_fsync_failure_names_the_file_and_publishes_nothing)
{
    make_input();
    const char *first = NULL;
    for (int run = 0; run < 4; run++) {
        res r = sh("LD_PRELOAD='%s' " NO_ASAN_ORDER " RS_FAIL_FILE_FSYNC=1.csv.gz,17.csv.gz \"$RS\" bucket "
                   "--quiet --nodes 64 -o out in.csv",
                   RS_FAILALLOC);
        cr_assert_eq(r.rc, 1, "%s", r.err);
        const char *named = strstr(r.err, "/1.csv.gz: fsync: Input/output error\n")    ? "1.csv.gz"
                            : strstr(r.err, "/17.csv.gz: fsync: Input/output error\n") ? "17.csv.gz"
                                                                                        : NULL;
        cr_assert(named, "%s", r.err);
        cr_expect_eq(strchr(r.err, '\n') + 1, r.err + strlen(r.err), "one message: %s", r.err);
        if (!first)
            first = named;
        else
            cr_expect_str_eq(named, first, "another file named on another run");
        cmd_result_free(&r);
        SH_EQ("0\n", "test -e out || echo 0");
        SH_EQ("0\n", LITTER);
    }
}

/* The parent's fsync fails after the publishing rename: the output is
 * published (readers may see it: no rollback) and the run says so, exit 1.
 * (tests/failalloc.c makes fsync of that directory fail with EIO.) */
Test(publish, parent_fsync_failure_says_published_but_not_durable)
{
    make_input();
    res r = sh("LD_PRELOAD='%s' " NO_ASAN_ORDER " RS_FAIL_DIR_FSYNC=\"$PWD\" \"$RS\" bucket --quiet --nodes 3 -o out in.csv",
               RS_FAILALLOC);
    cr_assert_eq(r.rc, 1, "%s", r.err);
    cr_assert_str_eq(r.err, "ringshard bucket: out: published, but may not be durable: fsync of . failed: "
                            "Input/output error\n");
    cmd_result_free(&r);
    assert_complete("out", 4);
    SH_EQ("0\n", LITTER);
}

/* ---- the modes of what ringshard creates (util/filemode.h) ---- */

static mode_t walk_mask;
static int walk_files, walk_dirs;

static int check_mode(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)flag, (void)ftw;
    mode_t got = st->st_mode & 07777;
    if (S_ISREG(st->st_mode)) {
        cr_expect_eq(got, 0666 & ~walk_mask, "%s: file mode %04o, not %04o (umask %03o)", path, (unsigned)got,
                     (unsigned)(0666 & ~walk_mask), (unsigned)walk_mask);
        walk_files++;
    } else if (S_ISDIR(st->st_mode)) {
        cr_expect_eq(got, 0777 & ~walk_mask, "%s: directory mode %04o, not %04o (umask %03o)", path,
                     (unsigned)got, (unsigned)(0777 & ~walk_mask), (unsigned)walk_mask);
        walk_dirs++;
    } else {
        cr_expect_fail("%s: neither a file nor a directory", path);
    }
    return 0;
}

/* Asserts that every regular file below root has the mode 0666 less mask
 * and every directory 0777 less mask; *files and *dirs get their counts. */
static void assert_tree_modes(const char *root, mode_t mask, int *files, int *dirs)
{
    walk_mask = mask;
    walk_files = walk_dirs = 0;
    cr_assert_eq(nftw(root, check_mode, 16, FTW_PHYS), 0, "%s: cannot walk", root);
    *files = walk_files;
    *dirs = walk_dirs;
}

/* Every file and directory a run creates for the user - data files, key
 * indexes, manifests, generations, the duplicates report, quarantine,
 * metrics, SVG and timeline files, a move directory, compacted and
 * repaired directories, the damaged directory repair keeps, a directory
 * replaced by --force - has the mode 0666 (0777) less the umask, whichever
 * command wrote it, under a umask that opens to the group (002) and one
 * that closes to all but the owner (077). A file replaced keeps its mode
 * (600 and 640 here), as with cp and sort -o. */
Test(publish, every_file_and_directory_gets_the_umask_mode)
{
    SH_OK("{ echo id,v; seq 1 2000 | sed 's/.*/&,v&/'; echo '7,x\"y'; } > in1.csv && "
          "{ echo id,v; seq 1500 3000 | sed 's/.*/&,w&/'; } > in2.csv && "
          "{ echo id,v; seq 2500 4000 | sed 's/.*/&,z&/'; } > in3.csv");
    static const mode_t masks[] = {002, 077};
    for (size_t i = 0; i < sizeof masks / sizeof *masks; i++) {
        mode_t mask = masks[i];
        /* out/F first written under umask 022, then replaced by --force */
        SH_OK("mkdir u%03o && cd u%03o && umask %03o && mkdir out keep && "
              "echo old > keep/m.prom && chmod 600 keep/m.prom && echo old > keep/d.tsv && chmod 640 keep/d.tsv && "
              "\"$RS\" bucket --quiet --key id --nodes 4 -o out/B --metrics out/b.prom "
              "--on-bad-row quarantine=out/bad.tsv ../in1.csv && "
              "RINGSHARD_TIMELINE=out/t.tsv \"$RS\" bucket --quiet --append -o out/B ../in2.csv && "
              "\"$RS\" dedup --quiet --key id --nodes 4 -o out/D --duplicates out/dups.tsv --on-bad-row skip "
              "../in1.csv ../in2.csv && "
              "\"$RS\" dedup --quiet --append -o out/D --duplicates out/dups2.tsv --metrics keep/m.prom ../in3.csv && "
              "\"$RS\" dedup --quiet --append -o out/B ../in3.csv && "
              "\"$RS\" dedup --quiet --append --key id --nodes 3 -o out/N --duplicates keep/d.tsv ../in2.csv && "
              "\"$RS\" compact --quiet out/D && "
              "\"$RS\" plan --quiet --from-buckets out/B --add 2 --emit out/M --svg out/p.svg > /dev/null && "
              "(umask 022 && \"$RS\" bucket --quiet --key id --nodes 2 -o out/F ../in3.csv) && "
              "\"$RS\" bucket --quiet --force --key id --nodes 3 -o out/F ../in3.csv && "
              "truncate -s -9 out/B/g00000002/1.csv.gz && { \"$RS\" repair out/B > r.out 2>&1; test $? = 3; }",
              (unsigned)mask, (unsigned)mask, (unsigned)mask);
        /* what the walk must meet, so that it cannot pass on less */
        SH_OK("cd u%03o/out && ls b.prom bad.tsv t.tsv dups.tsv dups2.tsv p.svg D/manifest.json D/0.keyidx "
              "N/0.keyidx N/manifest.json M/manifest.json F/2.csv.gz B/0.keyidx B/manifest.json "
              "B.damaged.1/g00000002/manifest.json B.damaged.1/g00000003/0.g00000001.keyidx > /dev/null",
              (unsigned)mask);
        char root[4096];
        snprintf(root, sizeof root, "%s/u%03o/out", test_dir, (unsigned)mask);
        int files, dirs;
        assert_tree_modes(root, mask, &files, &dirs);
        cr_expect_geq(files, 70, "%s: %d files", root, files);
        cr_expect_eq(dirs, 9, "%s: %d directories", root, dirs);
        SH_EQ("600\n640\n", "stat -c %%a u%03o/keep/m.prom u%03o/keep/d.tsv", (unsigned)mask, (unsigned)mask);
    }
}

/* dedup's pass-1 buckets, the run's own scratch, are 0600 in a .pass1
 * directory of 0700 whatever the umask (here 002, which opens the output
 * to the group: its temporary directory is 0775); the run then removes
 * them and publishes files of 0664. */
Test(publish, dedup_scratch_is_private_whatever_the_umask)
{
    make_input();
    umask(002);   /* this test's process only: Criterion runs each test in one */
    pid_t pid = stop_at("batch_written", NULL, "\"$RS\" dedup --quiet --nodes 3 -o out in.csv", NULL);
    SH_EQ("775\n700\n600 600 600\n",
          "cd out.ringshard-tmp.*/ && stat -c %%a . .pass1 && stat -c %%a .pass1/* | sort | tr '\\n' ' ' | "
          "sed 's/ $/\\n/'");
    int st = signal_and_wait(pid, SIGCONT);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status 0x%x", st);
    SH_EQ("775\n664\n664\n664\n664\n", "stat -c %%a out out/* | sort -r");
    SH_EQ("0\n", LITTER);
}
