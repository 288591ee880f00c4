/* The chain of a bucket directory's generations, damaged as an operator's
 * mistake or a disk would damage it: every command that reads or changes
 * the directory sees the damage (the exit codes of docs/failures.md, "A
 * damaged chain of generations"), a refusal leaves DIR byte for byte as it
 * was (`snap DIR raw`, tests/append_lib.sh), and `repair` keeps every row
 * of the intact generations, counted from the files themselves (gzip -dc,
 * never ringshard), with the damaged directory kept whole beside it
 * (killed at any of its publishing system calls: tests/test_repair.c). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ringshard/dataset.h"
#include "support.h"
#include "wait.h"

#define sh sh_in_test_dir
#define LIB WAIT_SH APPEND_LIB CHAIN_SH
#define OK(...) SH_OK(LIB __VA_ARGS__)

/* rows DIR: the data rows of every file of DIR, from the files (each one,
 * segments too, starts with the header line). The inputs have no line
 * break inside a field, so a line is a row. */
#define CHAIN_SH                                                                                           \
    "rows() { n=0; for f in \"$1\"/*.csv.gz \"$1\"/g*/*.csv.gz; do [ -e \"$f\" ] && "                        \
    "n=$((n + $(gzip -dc \"$f\" | wc -l) - 1)); done; echo $n; }; "

/* W: a directory of 5 generations (the base, then 4 appends, 300 rows
 * each) over 8 nodes; in1.csv..in5.csv its inputs, more.csv another. */
static void chain_fixture(void)
{
    test_dir_setup();
    SH_OK("for i in 1 2 3 4 5; do " GEN " --rows 300 --seed $i --newline-share 0 --dup-share 0 -o in$i.csv "
          "2>/dev/null || exit 1; done; " GEN " --rows 50 --seed 9 --newline-share 0 --dup-share 0 -o more.csv && "
          "\"$RS\" bucket --quiet --key bill_id --nodes 8 -o W in1.csv && "
          "for i in 2 3 4 5; do \"$RS\" bucket --quiet --append -o W in$i.csv || exit 1; done && "
          "\"$RS\" verify --quiet W && test -d W/g00000005");
}

TestSuite(chain, .init = chain_fixture, .fini = test_dir_teardown, .timeout = 600);

/* The damages, each a shell command on a copy of W named D. */
static const struct {
    const char *name, *damage;
    int reader;     /* exit of plan --from-buckets, dedup --buckets */
    int stats;      /* exit of stats DIR (it reads the manifests, not the files) */
    int cat;        /* exit of cat --all */
    const char *says;  /* in every refusal's message */
} damages[] = {
    {"middle generation removed", "rm -rf D/g00000003", 2, 2, 2, "D/g00000003: missing"},
    {"last generation renamed", "mv D/g00000005 D/g00000007", 2, 2, 2, "D/g00000007: holds generation 5"},
    {"manifest removed", "rm D/g00000003/manifest.json", 2, 2, 2, "D/g00000003/manifest.json: missing"},
    {"digest mismatch", "sed -i 's/\"name\": \"ringshard\"/\"name\": \"ringshard \"/' D/g00000003/manifest.json", 2, 2, 2,
     "D/g00000004/manifest.json: manifest member \"previous\""},
    {"file removed", "rm D/g00000004/3.csv.gz", 3, 3, 3, "D/g00000004/3.csv.gz: missing"},
    {"file of another size", "echo xx >> D/g00000004/3.csv.gz", 3, 0, 3, "D/g00000004/3.csv.gz: "},
};

/* Runs cmd on a fresh damaged copy (M, made once) as D; asserts its exit
 * code, `says` and `says_too` (unless NULL) in its output (when refused)
 * and, for a refusal, D byte for byte as it was. */
static void run_on_damaged2(const char *name, const char *cmd, int want, const char *says, const char *says_too,
                            int unchanged)
{
    cmd_result r = sh(LIB "rm -rf D D.* O; cp -a M D && %s", cmd);
    cr_assert_eq(r.rc, want, "%s: %s: exit %d, want %d\n%s", name, cmd, r.rc, want, r.err);
    const char *const said[] = {says, says_too};
    for (int k = 0; k < 2; k++)
        if (want != 0 && said[k])
            cr_assert(strstr(r.err, said[k]) || strstr(r.out, said[k]), "%s: %s: '%s' not in\n%s%s", name, cmd,
                      said[k], r.out, r.err);
    cmd_result_free(&r);
    if (unchanged)
        OK("[ \"$(snap D raw)\" = \"$(cat m.snap)\" ] && test $(litter D) = 0 || { echo '%s: %s: D changed'; "
           "find D | sort; exit 1; }", name, cmd);
}

static void run_on_damaged(const char *name, const char *cmd, int want, const char *says, int unchanged)
{
    run_on_damaged2(name, cmd, want, says, NULL, unchanged);
}

/* Every command that reads or changes a directory, on each damage: the
 * writers (compact, both appends, --force of bucket and dedup) refuse with
 * exit 2 naming the damage and saying what to do, and leave D as it was;
 * the readers refuse (2 for the chain, 3 for a file that does not match
 * its manifest: a file of another size is named by the readers that read
 * it with what differs in it); verify reports it with exit 3; nothing is
 * ever read from a partial chain. */
Test(chain, every_command_refuses_each_damage_and_leaves_dir_as_it_was)
{
    for (size_t i = 0; i < sizeof damages / sizeof *damages; i++) {
        const char *n = damages[i].name, *says = damages[i].says;
        /* the damage commands name D: made there, then kept as M */
        OK("rm -rf M D && cp -a W D && %s && mv D M && snap M raw > m.snap", damages[i].damage);
        static const char *const writers[] = {
            "\"$RS\" compact D",
            "\"$RS\" bucket --quiet --append -o D more.csv",
            "\"$RS\" dedup --quiet --append -o D more.csv",
            "\"$RS\" bucket --quiet --force --key bill_id --nodes 8 -o D more.csv",
            "\"$RS\" dedup --quiet --force --key bill_id --nodes 8 -o D more.csv",
        };
        for (size_t w = 0; w < sizeof writers / sizeof *writers; w++)
            run_on_damaged2(n, writers[w], 2, says, "ringshard repair D", 1);
        run_on_damaged(n, "\"$RS\" plan --from-buckets D --add 1 > /dev/null", damages[i].reader, NULL, 1);
        run_on_damaged(n, "\"$RS\" dedup --quiet --buckets D -o O", damages[i].reader, NULL, 1);
        run_on_damaged(n, "\"$RS\" stats D > /dev/null", damages[i].stats, NULL, 1);
        run_on_damaged(n, "\"$RS\" cat --all D > /dev/null", damages[i].cat, says, 1);
        run_on_damaged(n, "\"$RS\" verify D", 3, says + 2, 1);
    }
}

/* verify reports every damage, not the first only: a removed generation,
 * a removed file of a later one and a stray, each a DIFF line; exit 3
 * (never 1, a manifest missing included). */
Test(chain, verify_reports_every_damage)
{
    cmd_result r = sh(LIB "rm -rf D && cp -a W D && rm -rf D/g00000002 && rm D/g00000004/1.csv.gz && "
                          "rm D/g00000005/manifest.json && echo x > D/notes.txt && \"$RS\" verify D");
    cr_assert_eq(r.rc, 3, "exit %d\n%s%s", r.rc, r.out, r.err);
    static const char *const lines[] = {
        "DIFF D: g00000002: missing: generation 2 of the chain",
        "DIFF D: g00000004/1.csv.gz: missing",
        "DIFF D: g00000005/manifest.json: missing",
        "DIFF D: notes.txt: extra file, not in the manifest",
    };
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++)
        cr_assert(strstr(r.out, lines[i]), "'%s' not in:\n%s", lines[i], r.out);
    cmd_result_free(&r);
}

/* A stray file (one no manifest names) is not a damage: readers and
 * appends go on (it stays), verify names it, compact refuses naming it
 * (it would not be in the compacted directory) and leaves D as it was;
 * once moved out, compact runs. */
Test(chain, a_stray_file_is_kept_and_compact_refuses_it)
{
    OK("rm -rf M D && cp -a W M && echo mine > M/notes.txt && mkdir -p M/g00000003 && echo x > M/g00000003/y && "
       "snap M raw > m.snap");
    run_on_damaged("stray", "\"$RS\" compact D", 2, "D/g00000003/y: no manifest names it", 1);
    run_on_damaged("stray", "\"$RS\" verify D", 3, "notes.txt: extra file", 1);
    run_on_damaged("stray", "\"$RS\" stats D > /dev/null", 0, NULL, 1);
    run_on_damaged("stray", "\"$RS\" dedup --quiet --buckets D -o O", 0, NULL, 1);
    OK("rm -rf D && cp -a M D && \"$RS\" bucket --quiet --append -o D more.csv && test -d D/g00000006 && "
       "cmp D/notes.txt M/notes.txt && mv D/notes.txt D/g00000003/y . && \"$RS\" compact --quiet D && "
       "\"$RS\" verify --quiet D && test $(rows D) = 1550");
}

/* repair: the rows of every intact generation are kept (counted from the
 * files), after a gap too; a renamed generation (last, or moved past later
 * ones), a copy of one and a broken digest lose nothing (exit 0); what cannot be kept is listed with its rows and
 * inputs (exit 3): a generation without its manifest, or a data file
 * missing (its own rows only: its generation's other files are kept); the
 * damaged directory is D.damaged.1, byte for byte as it was; the new D
 * verifies and takes appends; a whole D is left alone. */
Test(chain, repair_keeps_the_rows_of_every_intact_generation)
{
    static const struct {
        const char *damage;
        int rc;
        const char *rows;  /* the repaired D's rows */
        const char *says;
    } cases[] = {
        {"rm -rf D/g00000003", 3, "1200", "DAMAGE D/g00000003: missing"},
        {"mv D/g00000005 D/g00000007", 0, "1500", "DAMAGE D/g00000007: holds generation 5"},
        {"mv D/g00000003 D/g00000009", 0, "1500", "DAMAGE D/g00000009: holds generation 3"},
        {"cp -a D/g00000003 D/g00000008", 0, "1500", "g00000003 is not missing (a copy?)"},
        {"rm D/g00000003/manifest.json", 3, "1200", "DAMAGE D/g00000003/manifest.json: missing"},
        {"sed -i 's/\"name\": \"ringshard\"/\"name\": \"ringshard \"/' D/g00000003/manifest.json", 0, "1500", "\"previous\""},
        {"rm D/g00000004/3.csv.gz", 3, "$((1500 - $(gzip -dc < W/g00000004/3.csv.gz | tail -n +2 | wc -l)))",
         "NOT KEPT D/g00000004/3.csv.gz: "},
        {"echo xx >> D/g00000002/0.csv.gz", 0, "1500", "CUT BACK D/g00000002/0.csv.gz: "},
        {"rm D/5.csv.gz", 3, "$((1500 - $(gzip -dc < W/5.csv.gz | tail -n +2 | wc -l)))",
         "NOT KEPT D/5.csv.gz: "},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cmd_result r = sh(LIB "rm -rf D D.* && cp -a W D && %s && snap D raw > before.snap && \"$RS\" repair D",
                          cases[i].damage);
        cr_assert_eq(r.rc, cases[i].rc, "%s: exit %d\n%s%s", cases[i].damage, r.rc, r.out, r.err);
        cr_assert(strstr(r.out, cases[i].says), "%s: '%s' not in:\n%s", cases[i].damage, cases[i].says, r.out);
        cmd_result_free(&r);
        OK("[ \"$(snap D.damaged.1 raw)\" = \"$(cat before.snap)\" ] && \"$RS\" verify --quiet D && "
           "test \"$(rows D)\" = %s && ! ls -d D/g* 2>/dev/null && test $(litter D) = 0 && "
           "\"$RS\" bucket --quiet --append -o D more.csv && \"$RS\" verify --quiet D && test \"$(rows D)\" = $((%s + 50))",
           cases[i].rows, cases[i].rows);
    }
    /* a file lost: appending every input again brings back its rows only, every row is back once */
    OK("rm -rf D D.* && cp -a W D && rm D/g00000004/3.csv.gz && { \"$RS\" repair --quiet D > /dev/null; test $? = 3; } && "
       "\"$RS\" bucket --quiet --append -o D in1.csv in2.csv in3.csv in4.csv in5.csv && test \"$(rows D)\" = 1500");
    /* nothing to repair: D untouched, exit 0 */
    OK("rm -rf D D.* && cp -a W D && snap D raw > before.snap && \"$RS\" repair D 2> r.err && "
       "grep -q 'no damage: nothing to repair' r.err && [ \"$(snap D raw)\" = \"$(cat before.snap)\" ] && "
       "! test -e D.damaged.1");
    /* a base file damaged: its rows are not kept (the base's other files
     * are); appending its input again brings them back */
    OK("rm -rf D D.* && cp -a W D && rm D/5.csv.gz && { \"$RS\" repair --quiet D > /dev/null; test $? = 3; } && "
       "\"$RS\" bucket --quiet --append -o D in1.csv && \"$RS\" verify --quiet D && test \"$(rows D)\" = 1500");
}

/* Where an input entry is in the chain (rs_bucketdir_input_place), as one
 * MPI rank tells another that opened the same state of DIR which entry it
 * means: every entry of every manifest read (the base's and each
 * generation's, enumerated here from bd->m and bd->gens directly) has a
 * place of its own that gives that entry back, and nothing else has one.
 * An intact chain has no lost node outstanding. */
Test(chain, input_places_name_each_entry_once)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/W", test_dir);
    rs_bucketdir bd;
    rs_error err = {0};
    cr_assert_eq(rs_bucketdir_open(&bd, dir, &err), 0, "%s", err.msg);
    cr_assert_eq(bd.ngens, 4);
    size_t n = 0;
    uint64_t places[64];
    for (size_t s = 0; s <= bd.ngens; s++) {
        const rs_manifest *m = s ? &bd.gens[s - 1] : &bd.m;
        cr_assert_gt(m->ninputs, 0, "manifest %zu lists no input", s);
        for (size_t i = 0; i < m->ninputs; i++) {
            const rs_manifest_input *e = &m->inputs[i];
            uint64_t p = rs_bucketdir_input_place(&bd, e);
            cr_assert_neq(p, 0, "%s: no place", e->path);
            cr_assert_eq(rs_bucketdir_input_at(&bd, p), e, "%s: its place gives another entry", e->path);
            cr_assert_eq(rs_bucketdir_outstanding(&bd, e), 0, "%s: lost nodes in an intact chain", e->path);
            for (size_t k = 0; k < n; k++)
                cr_assert_neq(places[k], p, "%s: a place given twice", e->path);
            cr_assert_lt(n, sizeof places / sizeof *places);
            places[n++] = p;
        }
    }
    cr_assert_eq(n, 5, "one input per generation: %zu entries", n);
    rs_manifest_input other = {0};
    cr_assert_eq(rs_bucketdir_input_place(&bd, &other), 0, "an entry that is not bd's has a place");
    cr_assert_null(rs_bucketdir_input_at(&bd, 0));
    cr_assert_null(rs_bucketdir_input_at(&bd, ((uint64_t)(bd.ngens + 2) << 32) | 1), "a generation after the last");
    cr_assert_null(rs_bucketdir_input_at(&bd, (1ull << 32) | (bd.m.ninputs + 1)), "an input after the base's last");
    rs_bucketdir_close(&bd);
}
