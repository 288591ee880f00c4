/* Single files published whole (ringshard/outfile.h): plan's --json,
 * --pairs, --arcs, --svg and --html, the stats and simulate reports, and
 * the quarantine file are written beside their target and renamed over it
 * only when complete, so a run that fails, or is killed at any point,
 * leaves a previous file as it was; a killed run's temporary is removed
 * by the next run; /dev/stdout and FIFOs are written in place; through a
 * symbolic link the file it points at is replaced (the link stays), with
 * its mode. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ringshard/outfile.h"
#include "ringshard/text.h"
#include "ringshard/util.h"
#include "support.h"
#include "util/lines.h"
#include "wait.h"

TestSuite(outfile, .init = test_dir_setup, .fini = test_dir_teardown, .timeout = 300);

#define OK SH_OK

/* The stdout of a command that must succeed (malloc'd). */
static char *out_of(const char *cmd)
{
    cmd_result r = sh_in_test_dir("%s", cmd);
    cr_assert_eq(r.rc, 0, "%s\nexit %d\nstderr: %s", cmd, r.rc, r.err);
    free(r.err);
    return r.out;
}

/* No temporary is left beside the targets. */
static void no_temporaries(void)
{
    char *o = out_of("ls -a | grep ringshard-tmp || true");
    cr_assert_str_eq(o, "", "temporaries left: %s", o);
    free(o);
}

/* A write that fails part way (a file-size limit: EFBIG, SIGXFSZ is
 * ignored) leaves each previous plan file byte for byte as it was, and no
 * temporary. Before, the files were truncated at open and left half
 * written. */
Test(outfile, a_failed_write_leaves_the_previous_plan_files_intact)
{
    OK("\"$RS\" plan --nodes 400 --add 30 --json p.json --arcs a.tsv --svg p.svg --html p.html --quiet && "
       "for f in p.json a.tsv p.svg p.html; do cp $f $f.orig; done && test $(wc -c < a.tsv) -gt 8192");
    const char *const files[] = {"--json p.json", "--arcs a.tsv", "--svg p.svg", "--html p.html"};
    for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
        char cmd[512];
        snprintf(cmd, sizeof cmd,
                 "(ulimit -f 8; exec \"$RS\" plan --nodes 400 --add 31 %s --quiet); rc=$?; "
                 "for f in p.json a.tsv p.svg p.html; do cmp $f $f.orig >&2 || echo \"$f changed\" >&2; done; exit $rc",
                 files[k]);
        cmd_result r = sh_in_test_dir("%s", cmd);
        cr_assert_eq(r.rc, 1, "%s\nexit %d\nstderr: %s", cmd, r.rc, r.err);
        cr_assert(strstr(r.err, "File too large") && !strstr(r.err, "changed"), "%s\nstderr: %s", cmd, r.err);
        cmd_result_free(&r);
    }
    no_temporaries();
}

/* The same for the stats and simulate reports. */
Test(outfile, a_failed_write_leaves_the_previous_reports_intact)
{
    OK("seq 0 999 | sed 1s/^/id\\\\n/ > in.csv && \"$RS\" stats --nodes 300 --html s.html in.csv > /dev/null && cp s.html s.orig && "
       "\"$RS\" simulate --nodes 50 --keys 20000 --vnodes 10,20,40,80,160,320,640 --html m.html > /dev/null && cp m.html m.orig && "
       "test $(wc -c < s.html) -gt 8192 && test $(wc -c < m.html) -gt 8192");
    sh_expect_free(1, "File too large",
               "(ulimit -f 8; exec \"$RS\" stats --nodes 301 --html s.html in.csv > /dev/null); rc=$?; cmp s.html s.orig >&2 "
               "|| exit 9; exit $rc");
    sh_expect_free(1, "File too large",
               "(ulimit -f 8; exec \"$RS\" simulate --nodes 51 --keys 20000 --vnodes 10,20,40,80,160,320,640 --html m.html > /dev/null); rc=$?; "
               "cmp m.html m.orig >&2 || exit 9; exit $rc");
    no_temporaries();
}

/* A run that fails after its quarantine file was begun (a corrupt gzip
 * input after a good one) leaves the previous quarantine file as it was;
 * one that succeeds replaces it. Also without an output directory (plan
 * and stats counting from data). */
Test(outfile, a_failed_run_leaves_the_previous_quarantine_file_intact)
{
    OK("printf 'id,v\\n1,a\\n\"bad\\n' > bad.csv && printf 'id,v\\n2,b\\n3,\"x\"y\\n' > more.csv && "
       "printf 'id,v\\n4,c\\n' | gzip > c.gz && head -c 15 c.gz > cut.gz && "
       "\"$RS\" bucket --quiet --nodes 3 --on-bad-row quarantine=q.tsv -o out more.csv && cp q.tsv q.orig && "
       "grep -q more.csv q.tsv");
    const char *const runs[] = {
        "\"$RS\" bucket --quiet --nodes 3 --on-bad-row quarantine=q.tsv -o out2 bad.csv cut.gz",
        "\"$RS\" bucket --quiet -j 2 --nodes 3 --on-bad-row quarantine=q.tsv -o out2 bad.csv cut.gz",
        "\"$RS\" plan --quiet --nodes 3 --add 1 --on-bad-row quarantine=q.tsv bad.csv cut.gz",
        "\"$RS\" stats --nodes 3 --on-bad-row quarantine=q.tsv bad.csv cut.gz",
        "\"$RS\" dedup --quiet --nodes 3 --key id --on-bad-row quarantine=q.tsv -o out3 bad.csv cut.gz",
    };
    for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, "%s; rc=$?; cmp q.tsv q.orig >&2 || exit 9; test ! -e out2 || exit 8; exit $rc",
                 runs[k]);
        sh_expect_free(2, "cut.gz: ", cmd);
    }
    no_temporaries();
    char *o = out_of("\"$RS\" stats --nodes 3 --on-bad-row quarantine=q.tsv bad.csv > /dev/null && cut -f 1,3 q.tsv");
    cr_assert_str_eq(o, "input\trecord\nbad.csv\t2\n");
    free(o);
    no_temporaries();
}

/* Killed while the quarantine temporary is open (stopped after its first
 * batch, then SIGKILL): the previous file is intact, the temporary is left,
 * and the next run on the same file removes it (its process is gone) and
 * publishes. */
Test(outfile, a_killed_run_leaves_the_previous_quarantine_and_the_next_cleans_up)
{
    OK("printf 'id,v\\n1,a\\n\"bad\\n' > bad.csv && echo previous > q.tsv");
    char *o = out_of(WAIT_SH "RINGSHARD_TEST_PAUSE_AT=batch_written \"$RS\" bucket --quiet --nodes 3 "
                     "--on-bad-row quarantine=q.tsv -o out bad.csv & pid=$!; "
                     "wait_stopped $pid 'the first batch' || exit 124; kill -KILL $pid; wait $pid; "
                     "cat q.tsv; ls | grep -c 'q.tsv.ringshard-tmp'");
    cr_assert_str_eq(o, "previous\n1\n", "%s", o);
    free(o);
    o = out_of("\"$RS\" bucket --quiet --nodes 3 --on-bad-row quarantine=q.tsv -o out bad.csv && cut -f 1,3 q.tsv");
    cr_assert_str_eq(o, "input\trecord\nbad.csv\t2\n");
    free(o);
    no_temporaries();
}

/* /dev/stdout (here a pipe, or a shell's redirection into a file that must
 * be written, not replaced) and a FIFO are written in place; a symbolic
 * link keeps pointing at the replaced file, which keeps its mode. */
Test(outfile, devices_fifos_links_and_modes)
{
    char *o = out_of("\"$RS\" plan --nodes 10 --add 1 --quiet --json /dev/stdout | head -c 1");
    cr_assert_str_eq(o, "{");
    free(o);
    o = out_of("echo 'keep me' > log && { \"$RS\" plan --nodes 10 --add 1 --quiet --json /dev/stdout; } >> log && "
               "head -n 1 log && tail -c 2 log | od -An -c | tr -d ' '");
    cr_assert_str_eq(o, "keep me\n}\\n\n", "%s", o);
    free(o);
    o = out_of("mkfifo f && { cat f > got & } && \"$RS\" plan --nodes 10 --add 1 --quiet --json f && wait && "
               "head -c 1 got && test -p f && echo fifo");
    cr_assert_str_eq(o, "{fifo\n");
    free(o);
    o = out_of("mkdir real && echo old > real/p.json && chmod 600 real/p.json && ln -s real/p.json p.json && "
               "\"$RS\" plan --nodes 10 --add 1 --quiet --json p.json && test -L p.json && head -c 1 real/p.json && "
               "stat -c ' %a' real/p.json");
    cr_assert_str_eq(o, "{ 600\n");
    free(o);
    no_temporaries();
}

/* The library call: reserve, write, commit; abort leaves the target. */
Test(outfile, library_commit_and_abort)
{
    OK("echo old > t.txt");
    char *dir = sh_in_test_dir("pwd").out;
    dir[strcspn(dir, "\n")] = '\0';
    char path[4096];
    snprintf(path, sizeof path, "%s/t.txt", dir);
    rs_error err = {0};
    rs_outfile of;
    FILE *f = rs_outfile_open(&of, path, &err);
    cr_assert(f != NULL, "%s", err.msg);
    fputs("new\n", f);
    rs_outfile_abort(&of);
    char *o = out_of("cat t.txt");
    cr_assert_str_eq(o, "old\n");
    free(o);
    f = rs_outfile_open(&of, path, &err);
    cr_assert(f != NULL, "%s", err.msg);
    fputs("new\n", f);
    cr_assert_eq(rs_outfile_commit(&of, &err), 0, "%s", err.msg);
    o = out_of("cat t.txt");
    cr_assert_str_eq(o, "new\n");
    free(o);
    snprintf(path, sizeof path, "%s/no/such/dir/t.txt", dir);
    cr_assert(rs_outfile_open(&of, path, &err) == NULL);
    cr_assert(strstr(err.msg, "no/such/dir/t.txt: cannot create: No such file or directory"), "%s", err.msg);
    free(dir);
    no_temporaries();
}

/* rs_path_within, by real places: relative, "..", and symbolic links
 * (also dangling: fopen "w" would create their target) count; a sibling
 * whose name starts with the directory's does not. */
Test(path, within_by_real_places)
{
    char *d = make_tmpdir(), *cwd = getcwd(NULL, 0);
    cr_assert_eq(chdir(d), 0);
    cr_assert_eq(mkdir("out", 0755), 0);
    cr_assert_eq(mkdir("outer", 0755), 0);
    cr_assert_eq(symlink("out/new.csv", "dangling"), 0);
    cr_assert_eq(symlink("out", "alias"), 0);
    cr_assert_eq(rs_path_within("out/x.csv", "out"), 1);
    cr_assert_eq(rs_path_within("outer/../out/x.csv", "out"), 1);
    cr_assert_eq(rs_path_within("alias/x.csv", "out"), 1);
    cr_assert_eq(rs_path_within("dangling", "out"), 1);
    cr_assert_eq(mkdir("out/sub", 0755), 0);
    cr_assert_eq(rs_path_within("out/sub/c.csv", "out/"), 1, "below");
    cr_assert_eq(rs_path_within("x.csv", "out"), 0);
    cr_assert_eq(rs_path_within("outer/x.csv", "out"), 0);
    cr_assert_eq(rs_path_within("out/../x.csv", "out"), 0);
    cr_assert_eq(rs_path_within("x.csv", "not-yet"), 0);
    cr_assert_eq(rs_path_within("not-yet/x.csv", "not-yet"), 1, "an output directory that does not exist yet");
    cr_assert_eq(rs_path_within("out/a/b/x.csv", "out"), 1, "levels that do not exist yet, below an existing one");
    cr_assert_eq(rs_path_within("not-yet/a/b/x.csv", "not-yet"), 1, "below a directory that does not exist yet");
    cr_assert_eq(rs_path_within("alias/a/x.csv", "out"), 1, "missing levels below a link");
    cr_assert_eq(rs_path_within("outer/a/b/x.csv", "out"), 0);
    cr_assert_eq(rs_path_within("not-yet/../x.csv", "not-yet"), 0, "a missing part then '..': no place to tell");
    cr_assert_eq(chdir(cwd), 0);
    free(cwd);
    remove_tree(d);
}

/* The TSV escapes of keys and names: \\ \t \n \r; every other byte (a
 * NUL, UTF-8) as it is. */
Test(text, tsv_escapes)
{
    static const char in[] = "a\\b\tc\nd\re\0f\xce\xa9";
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    cr_assert_not_null(f);
    rs_text_put_tsv(f, in, sizeof in - 1);
    cr_assert_eq(fclose(f), 0);
    static const char want[] = "a\\\\b\\tc\\nd\\re\0f\xce\xa9";
    cr_assert_eq(len, sizeof want - 1, "%zu bytes: %s", len, out);
    cr_assert_eq(memcmp(out, want, len), 0, "%s", out);
    cr_assert_eq(rs_text_tsv_escape('x'), 0);
    cr_assert_eq(rs_text_tsv_escape('\0'), 0);
    free(out);
}

typedef struct {
    char seen[4096];
    size_t len, lines, stop_at;
} lines_seen;

/* Joins the lines it is given with '|', and stops at line stop_at. */
static int join_line(void *ctx, const char *line, size_t len, rs_error *err)
{
    lines_seen *s = ctx;
    if (s->len + len + 1 < sizeof s->seen) {
        memcpy(s->seen + s->len, line, len);
        s->len += len;
        s->seen[s->len++] = '|';
    }
    if (++s->lines == s->stop_at)
        return rs_error_set(err, RS_EXIT_DATA, "stopped at %zu", s->lines);
    return 0;
}

static int lines_of(const char *text, size_t n, size_t max, lines_seen *s, rs_error *err)
{
    FILE *f = fmemopen((void *)text, n, "r");
    cr_assert_not_null(f);
    int rc = rs_lines_each(f, "in", max, "--max-record", join_line, s, err);
    fclose(f);
    return rc;
}

/* Lines in order, a CR before the LF dropped, the last one without its
 * LF kept, an empty line given as one; a line over the bound refused by
 * its number whatever follows, a CR allowed past it; the callback's stop
 * is the result. */
Test(lines, bounded_in_order_and_stoppable)
{
    lines_seen s = {0};
    rs_error err = {0};
    static const char in[] = "a\r\nbb\n\nccc\r\nlast";
    cr_assert_eq(lines_of(in, sizeof in - 1, 4, &s, &err), 0, "%s", err.msg);
    cr_assert_eq(s.lines, 5);
    cr_assert_eq(memcmp(s.seen, "a|bb||ccc|last|", s.len), 0, "%.*s", (int)s.len, s.seen);

    s = (lines_seen){0};
    cr_assert_eq(lines_of(in, sizeof in - 1, 2, &s, &err), -1);
    cr_assert_eq(err.code, RS_EXIT_DATA);
    cr_assert_str_eq(err.msg, "in: line 4: longer than --max-record (2 bytes)");
    cr_assert_eq(s.lines, 3, "the lines before the long one were given");

    /* a line of 300 KiB under a bound of 100 bytes: refused without
     * holding it (the buffer is at most max + 64 KiB) */
    size_t big = (size_t)300 << 10;
    char *text = malloc(big);
    cr_assert_not_null(text);
    memset(text, 'x', big);
    s = (lines_seen){0};
    err = (rs_error){0};
    cr_assert_eq(lines_of(text, big, 100, &s, &err), -1);
    cr_assert_str_eq(err.msg, "in: line 1: longer than --max-record (100 bytes)");
    /* the same line under a bound it fits: one line of 300 KiB */
    s = (lines_seen){0};
    cr_assert_eq(lines_of(text, big, big, &s, &err), 0);
    cr_assert_eq(s.lines, 1);
    free(text);

    s = (lines_seen){.stop_at = 2};
    err = (rs_error){0};
    cr_assert_eq(lines_of(in, sizeof in - 1, 3, &s, &err), -1);
    cr_assert_str_eq(err.msg, "stopped at 2");
}
