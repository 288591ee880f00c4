/* `ringshard locate` and `ringshard ring` as a user runs them. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "support.h"

Test(cli, ring_points_equal_reference_file)
{
    char *out, *want;
    cr_assert_eq(run("\"$RS\" ring --points", &out, NULL), 0);
    want = slurp(fixture("vectors/seed004_ring_1000x200.tsv.gz"), NULL);
    cr_assert(want && strcmp(out, want) == 0, "ring --points differs from seed004_ring_1000x200.tsv");
    free(out);
    free(want);
}

Test(cli, ring_shares_equal_reference_file)
{
    char *out, *want;
    cr_assert_eq(run("\"$RS\" ring --shares", &out, NULL), 0);
    want = slurp(fixture("vectors/seed004_ringstats_1000x200.tsv"), NULL);
    cr_assert(want && strcmp(out, want) == 0, "ring --shares differs from seed004_ringstats_1000x200.tsv");
    free(out);
    free(want);
}

/* Every public key without a line break goes through stdin; the node column
 * of the output must equal the vectors'. The files are in a directory of
 * the test's own (make_tmpdir), not at fixed names in /tmp that another
 * run of the suite at the same time (another build's, a sanitizer pass's)
 * would overwrite while this one reads them. */
Test(cli, locate_public_keys)
{
    char cmd[4096];
    char *d = make_tmpdir();
    snprintf(cmd, sizeof cmd,
             "cd '%s' && awk -F'\\t' 'NR>1 && $1 !~ /\\\\[nr]/ {print $1}' '%s' | "
             "sed 's/\\\\t/\\t/g; s/\\\\\\\\/\\\\/g' > keys.txt && "
             "\"$RS\" locate < keys.txt | tail -n +2 | awk -F'\\t' '{print $NF}' > got.txt && "
             "awk -F'\\t' 'NR>1 && $1 !~ /\\\\[nr]/ {print $3}' '%s' > want.txt && "
             "cmp got.txt want.txt && wc -l < want.txt",
             d, fixture("vectors/seed004_public.tsv"), fixture("vectors/seed004_public.tsv"));
    char *out;
    cr_assert_eq(run(cmd, &out, NULL), 0, "locate output differs from the vectors");
    cr_assert_gt(atoi(out), 2000, "keys compared: %s", out);
    free(out);
    remove_tree(d);
    free(d);
}

Test(cli, locate_arguments_and_explain)
{
    char *out;
    cr_assert_eq(run("\"$RS\" locate --explain CHONGQING", &out, NULL), 0);
    /* key position node label arc_start arc_end; the position lies in the arc */
    char key[64], label[64];
    unsigned long long pos, start, end;
    char node[16];
    cr_assert_eq(sscanf(strchr(out, '\n') + 1, "%63s %llu %15s %63s %llu %llu", key, &pos, node, label, &start, &end), 6);
    cr_assert_str_eq(node, "949");
    cr_assert_eq(pos, 6358303233538634385ULL);
    cr_assert(strncmp(label, "949&Node", 8) == 0);
    cr_assert(start <= pos && pos < end, "arc [%llu, %llu) must hold %llu", start, end, pos);
    free(out);
}

Test(cli, errors_and_exit_codes)
{
    char *err;
    cr_assert_eq(run("\"$RS\" locate --bogus x", NULL, &err), 64);
    cr_assert(strstr(err, "bogus"), "%s", err);
    free(err);
    cr_assert_eq(run("\"$RS\" locate --nodes 0 x", NULL, &err), 64);
    cr_assert(strstr(err, "--nodes"), "%s", err);
    free(err);
    cr_assert_eq(run("\"$RS\" locate --nodes abc x", NULL, &err), 64);
    free(err);
    cr_assert_eq(run("\"$RS\" locate --scheme nope x", NULL, &err), 64);
    cr_assert(strstr(err, "nope"));
    free(err);
    cr_assert_eq(run("\"$RS\" locate --nodes-file /nonexistent/nodes x", NULL, &err), 1);
    cr_assert(strstr(err, "/nonexistent/nodes"));
    free(err);
    /* (in a directory of its own: see locate_public_keys) */
    char *d = make_tmpdir(), cmd[4096];
    snprintf(cmd, sizeof cmd, "cd '%s' && printf 'a\\nb\\na\\n' > dup-nodes && \"$RS\" ring --nodes-file dup-nodes", d);
    cr_assert_eq(run(cmd, NULL, &err), 2);
    cr_assert(strstr(err, "dup-nodes:3: duplicate node name 'a'"), "%s", err);
    free(err);
    /* a name longer than the documented limit (1024 bytes) is a bad node
     * list too, naming its file and line, for every command that reads one
     * (before: exit 64 from the ring builder, 'label of node ... is too
     * long', without file or line); a name of exactly 1024 bytes is fine */
    static const char *const readers[] = {"ring", "locate k", "plan --add 1", "simulate --keys 10",
                                          "bucket -o out in.csv"};
    for (size_t i = 0; i < sizeof readers / sizeof *readers; i++) {
        snprintf(cmd, sizeof cmd,
                 "cd '%s' && echo id > in.csv && { echo a; head -c 10240 /dev/zero | tr '\\0' y; echo; } > long-nodes "
                 "&& \"$RS\" %s --nodes-file long-nodes", d, readers[i]);
        cr_assert_eq(run(cmd, NULL, &err), 2, "%s: %s", readers[i], err);
        cr_assert(strstr(err, "long-nodes:2: node name 'yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy...' is 10240 bytes "
                              "long, more than the limit of 1024 bytes"), "%s: %s", readers[i], err);
        free(err);
    }
    snprintf(cmd, sizeof cmd, "cd '%s' && { echo a; head -c 1024 /dev/zero | tr '\\0' y; echo; } > max-nodes && "
             "\"$RS\" ring --nodes-file max-nodes > /dev/null && { echo a; head -c 1025 /dev/zero | tr '\\0' y; "
             "echo; } > max-nodes && \"$RS\" ring --nodes-file max-nodes", d);
    cr_assert_eq(run(cmd, NULL, &err), 2, "%s", err);
    cr_assert(strstr(err, "max-nodes:2: node name 'y") && strstr(err, "is 1025 bytes long"), "%s", err);
    free(err);
    remove_tree(d);
    free(d);
    cr_assert_eq(run("\"$RS\" frobnicate", NULL, &err), 64);
    free(err);
    /* RINGSHARD_LOG: a bad value is a warning, not a failure (test_bucket
     * checks info) */
    cr_assert_eq(run("RINGSHARD_LOG=loud \"$RS\" locate --nodes 3 k", NULL, &err), 0);
    cr_assert(strstr(err, "RINGSHARD_LOG=loud is not one of error, warn, info, debug: ignored"), "%s", err);
    free(err);

    char *out;
    cr_assert_eq(run("\"$RS\" --help", &out, NULL), 0);
    cr_assert(strstr(out, "locate") && strstr(out, "Exit codes"));
    free(out);
    cr_assert_eq(run("\"$RS\" ring --help", &out, NULL), 0);
    cr_assert(strstr(out, "--shares") && strstr(out, "--nodes-file"));
    free(out);
}

Test(cli, ring_summary)
{
    char *out;
    cr_assert_eq(run("\"$RS\" ring", &out, NULL), 0);
    cr_assert(strstr(out, "points       200000 (collisions: 0)"), "%s", out);
    cr_assert(strstr(out, "nodes        1000 (1000 up)"));
    cr_assert(strstr(out, "fingerprint  "));
    free(out);
}

/* Node names may hold tabs (quoted in a node file): the tab-separated
 * outputs escape them as keys are escaped, so the columns stay intact. */
Test(cli, node_names_with_tabs_are_escaped_in_tsv)
{
    char *out;
    cr_assert_eq(run("d=$(mktemp -d) && printf '\"a\\tb\"\\n\"c\\\\d\"\\n' > $d/n.txt && "
                     "\"$RS\" ring --nodes-file $d/n.txt --vnodes 2 --shares | cut -f1 | tail -n +2 && "
                     "\"$RS\" ring --nodes-file $d/n.txt --vnodes 2 --points | awk -F'\\t' '{print NF}' | sort -u && "
                     "\"$RS\" locate --nodes-file $d/n.txt k | awk -F'\\t' 'NR > 1 {print NF}' && "
                     "\"$RS\" locate --explain --nodes-file $d/n.txt a b c | awk -F'\\t' 'NR > 1 {print NF}' | sort -u && "
                     "\"$RS\" locate --explain --nodes-file $d/n.txt a b c | cut -f4 | tail -n +2 | sort -u; rm -r $d",
                     &out, NULL),
                 0);
    /* --explain's label column is escaped too: "a<TAB>b&Node0" would split it */
    const char *fields = "a\\tb\nc\\\\d\n3\n3\n6\n";
    cr_assert(!strncmp(out, fields, strlen(fields)), "%s", out);
    cr_assert(strstr(out, "&Node"), "%s", out);
    for (const char *l = out + strlen(fields) - 1; l && l[1]; l = strchr(l + 1, '\n'))
        cr_assert(!strncmp(l + 1, "a\\tb&Node", 9) || !strncmp(l + 1, "c\\\\d&Node", 9), "%s", out);
    free(out);
}
