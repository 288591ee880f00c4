/* The command line's conventions: '-' as standard output for every option
 * that writes a file, one error format with suggestions, `help CMD` and
 * --version everywhere, header diagnostics, empty inputs, a closed stdout,
 * the stop notice and the summaries' units. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include "ringshard/util.h"
#include "support.h"

TestSuite(conventions, .init = test_dir_setup, .fini = test_dir_teardown, .timeout = 600);


static void make_bills(void)
{
    SH_OK(GEN " --rows 3000 --seed 5 -o b.csv 2>/dev/null");
}

/* '-' writes the file's data to stdout (parsed here), the summary goes to
 * stderr, and no file named '-' appears (it used to: plan --json - wrote
 * a file called '-'). */
Test(conventions, dash_is_standard_output_for_every_file_option)
{
    /* stdout is the picture alone: its first line the XML declaration,
     * and no line of a table or summary anywhere in it */
#define SVG_ALONE "awk 'NR == 1 && /^<[?]xml/ {ok = 1} /\t/ {ok = 0; exit} END {exit !ok}'"
    make_bills();
    /* the command, and what reads its stdout (to the end: one that stops
     * early ends the command with 141, as tested below) */
    static const char *const cmds[][2] = {
        {"\"$RS\" plan --add 10 --json -", "python3 -m json.tool > /dev/null"},
        {"\"$RS\" plan --add 10 --arcs -", "awk 'NR == 1 && /^start/ {ok = 1} END {exit !ok}'"},
        {"\"$RS\" plan --add 10 --svg -", SVG_ALONE},
        {"\"$RS\" dedup --key bill_id --nodes 4 -o d --duplicates - b.csv", "awk -F'\\t' 'NF < 3 {exit 1}'"},
        {"\"$RS\" bucket --key bill_id --nodes 4 -o o --metrics - b.csv",
         "grep -c '^ringshard_success{command=\"bucket\"} 1$' > /dev/null"},
        {"\"$RS\" stats --key bill_id --nodes 4 --html - b.csv", "grep -c '<html' > /dev/null"},
        {"\"$RS\" simulate --keys 1000 --svg -", SVG_ALONE},
        {"\"$RS\" simulate --keys 1000 --vnodes 10,20 --svg -", SVG_ALONE},   /* the sweep's table on stderr */
        {"\"$RS\" bucket --key bill_id --nodes 4 -o q --on-bad-row quarantine=- b.csv", "cat > /dev/null"},
    };
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        cmd_result r = sh_in_test_dir("{ %s 2> err; echo $? > rc; } | %s && test \"$(cat rc)\" = 0 && ! test -e ./-",
                                      cmds[i][0], cmds[i][1]);
        cr_assert_eq(r.rc, 0, "%s | %s: %s", cmds[i][0], cmds[i][1], r.err);
        cmd_result_free(&r);
    }
    /* the plan's summary went to stderr, stdout is the JSON alone */
    cmd_result r = sh_expect(0, "ringshard plan: ring scheme, 1000 -> 1010 nodes", "\"$RS\" plan --add 10 --json -");
    cr_assert_eq(r.out[0], '{', "%.200s", r.out);
    cmd_result_free(&r);
    sh_expect_free(64, "ringshard plan: --json - and --svg -: both would write to standard output",
                "\"$RS\" plan --add 10 --json - --svg -");
    sh_expect_free(64, "--metrics - and --duplicates -", "\"$RS\" dedup --key bill_id -o d2 --metrics - --duplicates - b.csv");
}

/* A misspelt option: one message, the command's prefix, the nearest
 * option; a misspelt command: the nearest command; exit 64 both. */
Test(conventions, typos_get_one_message_and_a_suggestion)
{
    cmd_result r = sh_expect(64, NULL, "\"$RS\" bucket --kye bill_id -o o x.csv");
    cr_assert_str_eq(r.err, "ringshard bucket: unrecognized option '--kye' (did you mean '--key'?)\n"
                            "Try 'ringshard bucket --help'.\n", "%s", r.err);
    cmd_result_free(&r);
    r = sh_expect(64, NULL, "\"$RS\" buckt");
    cr_assert_str_eq(r.err, "ringshard: 'buckt' is not a command. The most similar command is: bucket\n"
                            "See 'ringshard --help'.\n", "%s", r.err);
    cmd_result_free(&r);
    sh_expect_free(64, "ringshard plan: unrecognized option '--jsno' (did you mean '--json'?)", "\"$RS\" plan --jsno x");
    sh_expect_free(64, "ringshard bucket: option '--output' requires an argument", "\"$RS\" bucket --output");
    sh_expect_free(64, "ringshard stats: option '--ke' is ambiguous ('--key', '--key-sep')", "\"$RS\" stats --ke x b");
    r = sh_expect(64, "ringshard ring: invalid option '-Q'", "\"$RS\" ring -Q");
    cr_assert(!strstr(r.err, "ring: invalid option --"), "getopt's own line: %s", r.err);
    cmd_result_free(&r);
    r = sh_expect(64, "ringshard: 'zzzzzz' is not a command.\n", "\"$RS\" zzzzzz");
    cr_assert(!strstr(r.err, "similar"), "%s", r.err);
    cmd_result_free(&r);
}

/* `ringshard help CMD` is `ringshard CMD --help`; --version works for
 * every command `ringshard --help` lists. */
Test(conventions, help_cmd_and_version_everywhere)
{
    SH_OK("for c in $(\"$RS\" --help | awk '/^Commands:/ {on = 1; next} on && /^  [a-z]/ {print $1}'); do "
          "\"$RS\" help $c > h1 && \"$RS\" $c --help > h2 && cmp h1 h2 && grep -q \"ringshard $c\" h1 && "
          "test \"$(\"$RS\" $c --version)\" = \"$(\"$RS\" --version)\" || { echo $c; exit 1; }; done");
    sh_expect_free(64, "'buckt' is not a command", "\"$RS\" help buckt");
}

/* `ringshard --version` is the version of CHANGELOG.md's newest heading,
 * `## X.Y.Z - YYYY-MM-DD`, which carries the date it was released (a real
 * calendar date): a version bumped without its entry, or an entry left
 * undated, fails here. A `## X.Y.Z - unreleased` section above it (the
 * next version's changes, not yet released) is passed over. */
Test(conventions, version_is_the_newest_changelog_entry)
{
    char *log = slurp(RS_SOURCE_DIR "/CHANGELOG.md", NULL);
    cr_assert(log, "cannot read " RS_SOURCE_DIR "/CHANGELOG.md");
    const char *h = strstr(log, "\n## ");
    cr_assert(h, "CHANGELOG.md: no '## ' heading");
    /* The next version's changes collect under '## X.Y.Z - unreleased'
     * above the newest release until it is dated: the binary still
     * carries the release below it. */
    char next[32], word[16];
    if (sscanf(h + 4, "%31[0-9.] - %15[a-z]", next, word) == 2 && !strcmp(word, "unreleased")) {
        h = strstr(h + 1, "\n## ");
        cr_assert(h, "CHANGELOG.md: no release under the unreleased section");
    }
    char ver[32], date[16], rest[8];
    int n = sscanf(h + 4, "%31[0-9.] - %10[0-9-]%7[^\n]", ver, date, rest);
    cr_assert_eq(n, 2, "CHANGELOG.md: the newest heading is not '## X.Y.Z - YYYY-MM-DD': %.60s", h + 1);
    int y, m, d;
    char tail;
    cr_assert(strlen(date) == 10 && sscanf(date, "%4d-%2d-%2d%c", &y, &m, &d, &tail) == 3,
              "CHANGELOG.md: '%s' is not a date", date);
    struct tm tm = {.tm_year = y - 1900, .tm_mon = m - 1, .tm_mday = d, .tm_hour = 12};
    cr_assert(mktime(&tm) != (time_t)-1 && tm.tm_year == y - 1900 && tm.tm_mon == m - 1 && tm.tm_mday == d,
              "CHANGELOG.md: %s is not a calendar date", date);
    char want[64];
    snprintf(want, sizeof want, "ringshard %s\n", ver);
    cmd_result r = sh_in_test_dir("\"$RS\" --version");
    cr_assert_eq(r.rc, 0);
    cr_assert_str_eq(r.out, want, "--version prints '%s', CHANGELOG.md's newest entry is %s of %s", r.out, ver,
                     date);
    cmd_result_free(&r);
    free(log);
}

/* A TSV read with the default comma: the header read is shown and the
 * delimiter it seems to use named as the option takes it. */
Test(conventions, header_errors_show_the_header_and_a_likely_delimiter)
{
    SH_OK("printf 'bill_id\\tuser_id\\n1\\t2\\n' > t.tsv && printf 'a;bill_id\\n1;2\\n' > s.csv && "
          "printf 'id,name\\n1,2\\n' > c.csv");
    sh_expect_free(64, "--key: no column 'bill_id' in the header of t.tsv (it has 1 field: \"bill_id\\tuser_id\"); "
                    "the header looks tab-separated: try --delimiter tab",
                "\"$RS\" bucket --key bill_id --nodes 3 -o o t.tsv");
    sh_expect_free(64, "the header looks semicolon-separated: try --delimiter ';'",
                "\"$RS\" stats --key bill_id --nodes 3 s.csv");
    cmd_result r = sh_expect(64, "no column 'bill_id' in the header of c.csv (it has 2 fields: \"id\",\"name\")",
                          "\"$RS\" bucket --key bill_id --nodes 3 -o o c.csv");
    cr_assert(!strstr(r.err, "looks"), "%s", r.err);
    cmd_result_free(&r);
    SH_OK("\"$RS\" bucket --quiet --delimiter tab --key bill_id --nodes 3 -o o t.tsv");
}

/* A 0-byte input, a gzip of nothing, a header-only input with --key: exit
 * 2 naming the file, nothing published; --allow-empty: a line in the
 * summary and ringshard_empty_inputs. */
Test(conventions, empty_inputs_fail_unless_allowed)
{
    make_bills();
    SH_OK(": > e.csv && printf '' | gzip > e.csv.gz && head -n 1 b.csv > h.csv");
    sh_expect_free(2, "ringshard bucket: e.csv: empty input (0 bytes): ", "\"$RS\" bucket --key bill_id -o o e.csv");
    sh_expect_free(2, "e.csv: empty input (0 bytes): an export that failed upstream? nothing written; use "
                   "--allow-empty if it may be empty", "\"$RS\" bucket --nodes 3 -o o b.csv e.csv");
    sh_expect_free(2, "e.csv.gz: empty input (no rows", "\"$RS\" bucket --nodes 3 -o o e.csv.gz");
    sh_expect_free(2, "h.csv: empty input (no rows", "\"$RS\" bucket --key bill_id --nodes 3 -o o h.csv");
    sh_expect_free(2, "ringshard dedup: e.csv: empty input", "\"$RS\" dedup --key bill_id --nodes 3 -o d e.csv");
    sh_expect_free(2, "standard input: empty input", "\"$RS\" bucket --key bill_id --nodes 3 -o o - < e.csv");
    SH_OK("! test -e o && ! test -e d && ! ls | grep -q ringshard-tmp");
    /* nothing published over a previous output either */
    SH_OK("\"$RS\" bucket --quiet --key bill_id --nodes 3 -o p b.csv && cp -r p before");
    sh_expect_free(2, "h.csv: empty input", "\"$RS\" bucket --force --key bill_id --nodes 3 -o p h.csv");
    SH_OK("diff -r before p");
    cmd_result r = sh_expect(0, "ringshard bucket: 1 input without rows, allowed by --allow-empty: e.csv\n",
                          "\"$RS\" bucket --allow-empty --key bill_id --nodes 3 --metrics m.prom -o a e.csv b.csv");
    cmd_result_free(&r);
    SH_OK("grep -q '^ringshard_empty_inputs{command=\"bucket\"} 1$' m.prom && "
          "\"$RS\" bucket --quiet --allow-empty --nodes 3 -o a2 e.csv.gz");
    /* dedup, and an append, say and count them the same */
    sh_expect_free(0, "ringshard dedup: 1 input without rows, allowed by --allow-empty: e.csv\n",
                "\"$RS\" dedup --allow-empty --key bill_id --nodes 3 --metrics d.prom -o dd e.csv b.csv");
    sh_expect_free(0, "ringshard bucket: 2 inputs without rows, allowed by --allow-empty: e.csv, ...\n",
                "\"$RS\" bucket --append --allow-empty --key bill_id --nodes 3 --metrics g.prom -o G b.csv e.csv h.csv");
    SH_OK("grep -q '^ringshard_empty_inputs{command=\"dedup\"} 1$' d.prom && "
          "grep -q '^ringshard_empty_inputs{command=\"bucket\"} 2$' g.prom");
    /* a header-only input read by column number is no failed export */
    SH_OK("\"$RS\" bucket --quiet --nodes 3 -o h h.csv && \"$RS\" bucket --quiet --key 1 --nodes 3 -o h1 h.csv");
}

/* A reader of stdout that stops reading (head): no message, exit 141 as
 * `seq` or `cat` killed by SIGPIPE (before: "write error on standard
 * output", exit 1). The output is far larger than a pipe holds. */
Test(conventions, a_closed_stdout_exits_quietly)
{
    make_bills();
    static const char *const cmds[] = {
        "\"$RS\" stats --tsv --key bill_id --nodes 20000 b.csv",
        "\"$RS\" plan --add 100 --arcs -",
    };
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        cmd_result r = sh_in_test_dir("{ %s 2> err; echo $? > rc; } | head -n 1 > /dev/null; cat rc err", cmds[i]);
        cr_assert_str_eq(r.out, "141\n", "%s: %s", cmds[i], r.out);
        cmd_result_free(&r);
    }
    /* --duplicates - is a side report: its reader leaving does not undo the
     * dedup, which is published, exit 0, with a note (docs/dedup.md) */
    cmd_result r = sh_in_test_dir("{ \"$RS\" dedup --key bill_id --nodes 4 -o d --force --duplicates - b.csv b.csv "
                                  "2> err; echo $? > rc; } | head -n 1 > /dev/null; cat rc; grep -c 'reader left' err; "
                                  "\"$RS\" verify d > /dev/null && echo verified");
    cr_assert_str_eq(r.out, "0\n1\nverified\n", "%s", r.out);
    cmd_result_free(&r);
}

/* The first stop signal says so at once, before the cleanup's own
 * "interrupted" (before: only the latter, after the cleanup). */
Test(conventions, a_stop_signal_says_stopping_at_once)
{
    make_bills();
    pid_t pid = stop_for_signal("begun", "\"$RS\" bucket --key bill_id --nodes 20 -o o b.csv", "err");
    signal_stopped(pid, SIGINT);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 130, "status 0x%x", st);
    char *e = slurp(path_join(test_dir, "err"), NULL);
    cr_assert(e && !strcmp(e, "ringshard bucket: stopping (interrupted)...\nringshard bucket: interrupted\n"), "%s",
              e ? e : "(none)");
    free(e);
}

/* Summaries in human units: never "0.00 M rows/s", sizes past MB. */
Test(conventions, human_units)
{
    char b[RS_HUMAN_MAX];
    cr_assert_str_eq(rs_human_bytes(532, b, sizeof b), "532 B");
    cr_assert_str_eq(rs_human_bytes(4812, b, sizeof b), "4.8 kB");
    cr_assert_str_eq(rs_human_bytes(19.3e6, b, sizeof b), "19.3 MB");
    cr_assert_str_eq(rs_human_bytes(10312.4e6, b, sizeof b), "10.3 GB");
    cr_assert_str_eq(rs_human_bytes(2.5e12, b, sizeof b), "2.5 TB");
    cr_assert_str_eq(rs_human_bytes(999.96e6, b, sizeof b), "1.0 GB");
    cr_assert_str_eq(rs_human_rate(40.6, "rows", b, sizeof b), "40.6 rows/s");
    cr_assert_str_eq(rs_human_rate(3520, "rows", b, sizeof b), "3.52 k rows/s");
    cr_assert_str_eq(rs_human_rate(352000, "rows", b, sizeof b), "352 k rows/s");
    cr_assert_str_eq(rs_human_rate(1.25e6, "rows", b, sizeof b), "1.25 M rows/s");
    cr_assert_str_eq(rs_human_rate(0, "rows", b, sizeof b), "0.00 rows/s");
    SH_OK("printf 'id,v\\n1,a\\n2,b\\n' > s.csv");
    cmd_result r = sh_expect(0, " rows/s)", "\"$RS\" bucket --nodes 3 -o o s.csv");
    cr_assert(!strstr(r.err, "0.00 M rows/s") && strstr(r.err, "2 rows, 8 B into 3 buckets"),
              "%s", r.err);
    cmd_result_free(&r);
}
