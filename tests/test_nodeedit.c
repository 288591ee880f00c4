/* Node edits (rs_node_edits_apply, src/ring/nodeedit.c) and the plan and
 * simulate commands that share them: new names never reuse an old or a
 * removed one, edits that cancel themselves are refused, repeated list
 * options add up, and what moves is checked against an independent
 * recomputation of the rings (tests/check_ring_moves.py, itself checked
 * against the Java/Guava known answers in fixtures/vectors). */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ringshard/nodes.h"
#include "support.h"

#define CHECK_MOVES "python3 " RS_SOURCE_DIR "/tests/check_ring_moves.py "

TestSuite(edits, .timeout = 60);
TestSuite(cli, .init = test_dir_setup, .fini = test_dir_teardown, .timeout = 600);

/* ------------------------------------------------------------ library */

/* nodes from a space-separated list of names */
static void nodes_of(rs_nodes *n, const char *names)
{
    rs_error err = {0};
    char *copy = strdup(names), *save = NULL;
    memset(n, 0, sizeof *n);
    for (char *t = strtok_r(copy, " ", &save); t; t = strtok_r(NULL, " ", &save))
        cr_assert_eq(rs_nodes_append(n, t, 1.0, "test", &err), 0, "%s", err.msg);
    free(copy);
}

/* The names of n, space-separated, into buf. */
static const char *names_of(const rs_nodes *n, char *buf, size_t cap)
{
    size_t at = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < n->count && at < cap; i++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%s%s", i ? " " : "", n->names[i], n->down[i] ? "(down)" : "");
    return buf;
}

/* Applies e to the nodes `start` (ref: `ref`, NULL for none) and checks
 * the list that results, or (want NULL) the refusal whose message holds
 * `why`. */
static void expect(const char *start, const char *ref, const rs_node_edits *e, const char *want, const char *why)
{
    rs_nodes n, r;
    rs_node_edit_log log;
    rs_error err = {0};
    char buf[1024];
    nodes_of(&n, start);
    if (ref)
        nodes_of(&r, ref);
    int rc = rs_node_edits_apply(&n, ref ? &r : NULL, e, &log, &err);
    if (want) {
        cr_assert_eq(rc, 0, "%s: %s", start, err.msg);
        cr_assert_str_eq(names_of(&n, buf, sizeof buf), want);
    } else {
        cr_assert_eq(rc, -1, "%s: accepted, gave %s", start, names_of(&n, buf, sizeof buf));
        cr_assert_eq(err.code, RS_EXIT_USAGE, "%s", err.msg);
        cr_assert(strstr(err.msg, why), "'%s' does not say '%s'", err.msg, why);
    }
    rs_node_edit_log_free(&log);
    rs_nodes_free(&n);
    if (ref)
        rs_nodes_free(&r);
}

#define LIST(...) ((const char *const[]){__VA_ARGS__})

Test(edits, add_continues_after_every_name_used)
{
    /* the last name removed: the new one is not it again */
    expect("0 1 2 3", NULL, &(rs_node_edits){.remove = LIST("3"), .nremove = 1, .add = 1}, "0 1 2 4", NULL);
    expect("0 1 2 3", NULL, &(rs_node_edits){.remove = LIST("1,3"), .nremove = 1, .add = 2}, "0 2 4 5", NULL);
    /* after the largest number of the prefix anywhere, zero padding kept */
    expect("db01 db12 db07", NULL, &(rs_node_edits){.add = 2}, "db01 db12 db07 db13 db14", NULL);
    expect("db01 db12 db07", NULL, &(rs_node_edits){.remove = LIST("db12"), .nremove = 1, .add = 1},
           "db01 db07 db13", NULL);
    /* mixed names: only those with the last one's prefix count */
    expect("db01 db12 web3 db07", NULL, &(rs_node_edits){.add = 1}, "db01 db12 web3 db07 db13", NULL);
    expect("db01 web30 db02", NULL, &(rs_node_edits){.remove = LIST("db02"), .nremove = 1, .add = 1},
           "db01 web30 db03", NULL);
    /* names without a number: "<last>-N" after the largest such */
    expect("alpha beta", NULL, &(rs_node_edits){.add = 2}, "alpha beta beta-1 beta-2", NULL);
    expect("beta-4 alpha beta", NULL, &(rs_node_edits){.remove = LIST("beta-4"), .nremove = 1, .add = 1},
           "alpha beta beta-5", NULL);
    /* an explicit other list: the old one's names are used too */
    expect("0 1 2", "0 1 2 3 4 5", &(rs_node_edits){.add = 2}, "0 1 2 6 7", NULL);
    /* --add-names come first and count as used */
    expect("0 1", NULL, &(rs_node_edits){.add_names = LIST("7"), .nadd_names = 1, .add = 1}, "0 1 7 8", NULL);
    /* slots: the removed node stays, down, and its name is not reused */
    expect("0 1 2", NULL, &(rs_node_edits){.remove = LIST("2"), .nremove = 1, .add = 1, .slots = 1},
           "0 1 2(down) 3", NULL);
}

Test(edits, refusals_name_the_option_and_the_node)
{
    expect("0 1 2", NULL, &(rs_node_edits){.remove = LIST("2"), .nremove = 1, .add_names = LIST("2"), .nadd_names = 1},
           NULL, "--add-names: node '2' is also given to --remove");
    expect("0 1 2", NULL, &(rs_node_edits){.remove = LIST("1"), .nremove = 1, .reweight = LIST("1=2"), .nreweight = 1},
           NULL, "--reweight: node '1' is also given to --remove");
    expect("0 1 2", NULL, &(rs_node_edits){.remove = LIST("1,1"), .nremove = 1}, NULL, "node '1' is given twice");
    expect("0 1 2", NULL, &(rs_node_edits){.remove = LIST("1", "0,1"), .nremove = 2}, NULL, "'1' is given twice");
    expect("0 1 2", NULL, &(rs_node_edits){.reweight = LIST("1=2", "1=3"), .nreweight = 2}, NULL,
           "--reweight: node '1' is given twice");
    expect("0 1 2", NULL, &(rs_node_edits){.add_names = LIST("a", "a"), .nadd_names = 2}, NULL,
           "--add-names: node 'a' is given twice");
    expect("0 1 2", NULL, &(rs_node_edits){.add_names = LIST("1"), .nadd_names = 1}, NULL, "node '1' exists already");
    expect("0 1 2", NULL, &(rs_node_edits){.remove = LIST("9"), .nremove = 1}, NULL, "--remove: no node '9'");
    expect("0 1 2", NULL, &(rs_node_edits){.reweight = LIST("1=0"), .nreweight = 1}, NULL, "not a positive weight");
    expect("0 1 2", NULL, &(rs_node_edits){.reweight = LIST("1"), .nreweight = 1}, NULL, "expected NAME=WEIGHT");
    /* slots: removed twice is still twice, not "down already" */
    expect("0 1 2", NULL, &(rs_node_edits){.remove = LIST("1", "1"), .nremove = 2, .slots = 1}, NULL, "given twice");
    /* a node down already owns nothing to remove */
    rs_nodes n;
    rs_node_edit_log log;
    rs_error err = {0};
    nodes_of(&n, "0 1 2");
    n.down[1] = 1;
    cr_assert_eq(rs_node_edits_apply(&n, NULL, &(rs_node_edits){.remove = LIST("1"), .nremove = 1}, &log, &err), -1);
    cr_assert(strstr(err.msg, "node '1' is down"), "%s", err.msg);
    rs_node_edit_log_free(&log);
    rs_nodes_free(&n);
}

Test(edits, lists_add_up_and_the_log_names_each_change)
{
    rs_nodes n;
    rs_node_edit_log log;
    rs_error err = {0};
    char buf[256];
    nodes_of(&n, "0 1 2 3 4 5");
    rs_node_edits e = {.remove = LIST("1", ",4,"), .nremove = 2, .reweight = LIST("0=2", "5=0.5"), .nreweight = 2,
                       .add_names = LIST("x", "y,z"), .nadd_names = 2, .add = 1};
    cr_assert_eq(rs_node_edits_apply(&n, NULL, &e, &log, &err), 0, "%s", err.msg);
    cr_assert_str_eq(names_of(&n, buf, sizeof buf), "0 2 3 5 x y z 6");
    cr_assert_eq(n.weights[0], 2.0);
    cr_assert_eq(n.weights[3], 0.5);
    cr_assert_eq(log.nremoved, 2);
    cr_assert_str_eq(log.removed[0], "1");
    cr_assert_str_eq(log.removed[1], "4");
    cr_assert_eq(log.nreweighted, 2);
    cr_assert_str_eq(log.reweighted[1], "5");
    cr_assert_eq(log.nadded, 4);
    cr_assert_str_eq(log.added[0], "x");
    cr_assert_str_eq(log.added[3], "6");
    rs_node_edit_log_free(&log);
    /* --down, on both sides where listed; the lists add up */
    rs_nodes b;
    nodes_of(&b, "0 2 9");
    e = (rs_node_edits){.down = LIST("2", "9,3"), .ndown = 2};
    cr_assert_eq(rs_node_edits_down(&e, &n, &b, &err), 0, "%s", err.msg);
    cr_assert_str_eq(names_of(&n, buf, sizeof buf), "0 2(down) 3(down) 5 x y z 6");
    cr_assert_str_eq(names_of(&b, buf, sizeof buf), "0 2(down) 9(down)");
    e = (rs_node_edits){.down = LIST("0", "0"), .ndown = 2};
    cr_assert_eq(rs_node_edits_down(&e, &n, &b, &err), -1);
    cr_assert(strstr(err.msg, "given twice"), "%s", err.msg);
    rs_error_clear(&err);
    e = (rs_node_edits){.down = LIST("nope"), .ndown = 1};
    cr_assert_eq(rs_node_edits_down(&e, &n, &b, &err), -1);
    cr_assert(strstr(err.msg, "no node 'nope' on either side"), "%s", err.msg);
    rs_nodes_free(&b);
    rs_nodes_free(&n);
}

Test(edits, names_text_cuts_long_lists)
{
    const char *names[] = {"a", "bb", "ccc", "dddd"};
    char buf[64];
    cr_assert_str_eq(rs_node_names_text(buf, sizeof buf, names, 4, 4), "a, bb, ccc, dddd");
    cr_assert_str_eq(rs_node_names_text(buf, sizeof buf, names, 2, 4000), "a, bb ... (3998 more)");
    /* what does not fit is counted, never cut in the middle of a name */
    char small[40];
    const char *longer[] = {"aaaaaaaaaa", "bbbbbbbbbb", "cccccccccc"};
    cr_assert_str_eq(rs_node_names_text(small, sizeof small, longer, 3, 3), "... (3 more)");
    char mid[48];
    cr_assert_str_eq(rs_node_names_text(mid, sizeof mid, longer, 3, 3), "aaaaaaaaaa ... (2 more)");
}

/* ------------------------------------------------------------ commands */

/* The output of a command that must succeed (freed by the caller). */
static char *ok(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *ok(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cmd_result r = vsh_in(test_dir, fmt, ap);
    va_end(ap);
    cr_assert_eq(r.rc, 0, "exit %d\nstdout: %s\nstderr: %s", r.rc, r.out, r.err);
    free(r.err);
    return r.out;
}

/* The rest of the line of out that starts with `label`, into buf. */
static const char *line_after(const char *out, const char *label, char *buf, size_t cap)
{
    const char *p = strstr(out, label);
    cr_assert_not_null(p, "no '%s' in:\n%s", label, out);
    p += strlen(label);
    while (*p == ' ')
        p++;
    size_t n = strcspn(p, "\n");
    cr_assert_lt(n, cap);
    memcpy(buf, p, n);
    buf[n] = '\0';
    return buf;
}

/* plan's move set, --arcs, against the recomputed diff of the old ring
 * "0".."999" and the node set `want` (check_ring_moves.py's ranges), and
 * the moved weight of its summary against the recomputed one. */
static void plan_moves_are_the_diff(const char *changes, const char *want, const char *header)
{
    char *out = ok("\"$RS\" plan %s --arcs arcs.tsv --json plan.json", changes);
    cr_assert(strstr(out, header), "'%s' not in:\n%s", header, out);
    char *moved = ok(CHECK_MOVES "arcs 0-999 %s arcs.tsv", want);
    moved[strcspn(moved, "\n")] = '\0';
    char buf[256], expect_line[128];
    snprintf(expect_line, sizeof expect_line, "%s of 9223372036854775808 hash values)", moved);
    cr_assert(strstr(line_after(out, "\n  moved ", buf, sizeof buf), expect_line), "moved %s, recomputed %s", buf, moved);
    free(moved);
    free(out);
}

Test(cli, the_ring_behind_the_checks_is_guavas)
{
    char *out = ok(CHECK_MOVES "guava %s", fixture("vectors"));
    cr_assert_str_eq(out, "ok\n");
    free(out);
}

Test(cli, plan_remove_999_add_1_moves_the_exact_diff)
{
    plan_moves_are_the_diff("--remove 999 --add 1", "0-998,1000",
                            "1000 -> 1000 nodes up (1 added, 1 removed, 0 reweighted)\n"
                            "  added        1000\n"
                            "  removed      999\n");
    char *json = ok("tr -d ' \\n' < plan.json");
    cr_assert(strstr(json, "\"kind\":\"mixed\",\"added\":[\"1000\"],\"removed\":[\"999\"],\"reweighted\":[]"), "%s",
              json);
    free(json);
}

Test(cli, plan_add_10_remove_3_moves_the_exact_diff)
{
    plan_moves_are_the_diff("--add 10 --remove 17,500,999", "0-16,18-499,501-998,1000-1009",
                            "1000 -> 1007 nodes up (10 added, 3 removed, 0 reweighted)\n"
                            "  added        1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009\n"
                            "  removed      17, 500, 999\n");
    /* the same change, the lists given in pieces */
    plan_moves_are_the_diff("--remove 17 --add 10 --remove 500 --remove 999", "0-16,18-499,501-998,1000-1009",
                            "(10 added, 3 removed, 0 reweighted)");
}

/* simulate's moved keys (seq keys "0".."K-1") against the recomputation. */
static void simulate_moves(const char *changes, const char *want, const char *change_line)
{
    char *out = ok("\"$RS\" simulate --keys 20000 --key-pattern seq %s", changes);
    char buf[512];
    cr_assert_str_eq(line_after(out, "\nchange ", buf, sizeof buf), change_line);
    char *moved = ok(CHECK_MOVES "keys 0-999 %s 20000", want);
    moved[strcspn(moved, "\n")] = '\0';
    cr_assert_str_eq(line_after(out, "\nmoved ", buf, sizeof buf), moved, "simulate moved %s, recomputed %s", buf,
                     moved);
    cr_assert_gt(atoi(moved), 0);
    free(moved);
    free(out);
}

Test(cli, simulate_moves_equal_the_recomputation)
{
    simulate_moves("--remove 999 --add 1", "0-998,1000", "remove 999; add 1000 (1000 -> 1000 nodes)");
    simulate_moves("--add 10 --remove 17 --remove 500,999", "0-16,18-499,501-998,1000-1009",
                   "remove 17, 500, 999; add 1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007 ... (2 more) "
                   "(1000 -> 1007 nodes)");
}

Test(cli, cancelling_edits_exit_64_in_both_commands)
{
    static const struct {
        const char *args, *why;
    } cases[] = {
        {"--remove 5 --add-names 5", "--add-names: node '5' is also given to --remove"},
        {"--remove 5 --reweight 5=2", "--reweight: node '5' is also given to --remove"},
        {"--remove 5,6,5", "--remove: node '5' is given twice"},
        {"--remove 5 --remove 5", "--remove: node '5' is given twice"},
        {"--reweight 3=2 --reweight 3=4", "--reweight: node '3' is given twice"},
        {"--add-names x,y --add-names x", "--add-names: node 'x' is given twice"},
        {"--add-names 7", "--add-names: node '7' exists already"},
        {"--down 4 --remove 4", "--remove: node '4' is down"},
        {"--down 4 --down 4 --add 1", "--down: node '4' is given twice"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        const char *cmd[] = {"plan", "simulate --keys 10"};
        for (int c = 0; c < 2; c++) {
            cmd_result r = sh_in_test_dir("\"$RS\" %s --nodes 10 %s", cmd[c], cases[k].args);
            cr_assert_eq(r.rc, 64, "%s %s: exit %d\n%s", cmd[c], cases[k].args, r.rc, r.err);
            cr_assert(strstr(r.err, cases[k].why), "%s %s: %s", cmd[c], cases[k].args, r.err);
            cr_assert_str_eq(r.out, "");
            cmd_result_free(&r);
        }
    }
}

Test(cli, repeated_lists_add_up_in_both_commands)
{
    char buf[512];
    /* plan: --add-names, --reweight and --down in pieces (3 and 4 down on
     * both sides: 8 nodes up before) */
    char *out = ok("\"$RS\" plan --nodes 10 --add-names a --add-names b,c --reweight 1=2 --reweight 2=3 "
                   "--down 3 --down 4 --json p.json");
    cr_assert(strstr(out, "8 -> 11 nodes up (3 added, 0 removed, 2 reweighted)"), "%s", out);
    cr_assert_str_eq(line_after(out, "  added", buf, sizeof buf), "a, b, c");
    cr_assert_str_eq(line_after(out, "  reweighted", buf, sizeof buf), "1, 2");
    free(out);
    /* simulate: the same edits, each down node owning nothing */
    out = ok("\"$RS\" simulate --nodes 10 --keys 1000 --add-names a --add-names b,c --reweight 1=2 --reweight 2=3 "
             "--down 3 --down 4 --tsv");
    for (const char *node = "3"; node; node = strcmp(node, "3") ? NULL : "4") {
        char want[16];
        snprintf(want, sizeof want, "\n%s\t0\t", node);
        cr_assert(strstr(out, want), "node %s is not down:\n%s", node, out);
    }
    free(out);
    out = ok("\"$RS\" simulate --nodes 10 --keys 1000 --add-names a --add-names b,c --reweight 1=2 --reweight 2=3");
    cr_assert_str_eq(line_after(out, "\nchange ", buf, sizeof buf), "reweight 1, 2; add a, b, c (10 -> 13 nodes)");
    free(out);
}

Test(cli, thousands_of_names_are_cut_readably)
{
    char buf[1024];
    char *out = ok("\"$RS\" plan --nodes 5000 --remove $(seq -s, 0 2999) --add 1500");
    cr_assert(strstr(out, "5000 -> 3500 nodes up (1500 added, 3000 removed, 0 reweighted)"), "%s", out);
    cr_assert_str_eq(line_after(out, "  removed", buf, sizeof buf), "0, 1, 2, 3, 4, 5, 6, 7, 8, 9 ... (2990 more)");
    cr_assert_str_eq(line_after(out, "  added", buf, sizeof buf),
                     "5000, 5001, 5002, 5003, 5004, 5005, 5006, 5007, 5008, 5009 ... (1490 more)");
    free(out);
    out = ok("\"$RS\" simulate --nodes 5000 --keys 1000 --remove $(seq -s, 0 2999) --add 1500");
    cr_assert_str_eq(line_after(out, "\nchange ", buf, sizeof buf),
                     "remove 0, 1, 2, 3, 4, 5, 6, 7 ... (2992 more); add 5000, 5001, 5002, 5003, 5004, 5005, 5006, "
                     "5007 ... (1492 more) (5000 -> 3500 nodes)");
    free(out);
}
