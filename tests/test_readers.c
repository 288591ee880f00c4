/* Readers of a bucket directory (verify, plan --from-buckets, dedup
 * --buckets, stats DIR): each reads one generation of the directory, even
 * while a --force run replaces it, and trusts nothing it reads that
 * differs from the manifest; headers and node names that are not UTF-8
 * survive the manifest. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ringshard/dataset.h"
#include "support.h"
#include "wait.h"

#define sh sh_in_test_dir

/* a.csv and b.csv: two inputs told apart by their keys' first letter and
 * their row counts (generation A: 3000 rows "a...", B: 3500 rows "b...");
 * D is A's bucket directory, D.B is B's. */
static void two_generations(void)
{
    test_dir_setup();
    SH_OK("{ echo id,v; i=0; while [ $i -lt 3000 ]; do echo a$i,x$i; i=$((i+1)); done; } > a.csv && "
          "{ echo id,v; i=0; while [ $i -lt 3500 ]; do echo b$i,y$i; i=$((i+1)); done; } > b.csv && "
          "\"$RS\" bucket --quiet --key id --nodes 8 -o D a.csv && "
          "\"$RS\" bucket --quiet --key id --nodes 8 -o D.B b.csv");
}

TestSuite(readers, .init = two_generations, .fini = test_dir_teardown, .timeout = 600);

/* Runs `cmd` with the test hold: once it has read D/manifest.json, D is
 * replaced by D.B (the old D kept aside as D.A), then it goes on; D is put
 * back afterwards. Waits for the hold file itself, never for a time. */
static cmd_result held(const char *cmd)
{
    return sh("rm -f hold; RINGSHARD_TEST_HOLD_DIR=$PWD/hold %s >held.out 2>held.err & p=$!\n"
              "i=0; while [ ! -e hold ]; do i=$((i+1)); if [ $i -gt 2400 ] || ! kill -0 $p 2>/dev/null; then "
              "echo 'the reader never reached its hold' >&2; cat held.err >&2; kill $p 2>/dev/null; exit 97; fi; "
              "sleep 0.05; done\n"
              "mv D D.A && mv D.B D && rm hold\n"
              "wait $p; rc=$?\n"
              "mv D D.B && mv D.A D\n"
              "cat held.out; cat held.err >&2; exit $rc",
              cmd);
}

/* The rows of the files DIR holds that start with letter c. */
static long rows_of(const char *dir, char c)
{
    cmd_result r = sh("cat %s/*.csv.gz | gzip -dc | grep -c '^%c' || true", dir, c);
    long n = atol(r.out);
    cmd_result_free(&r);
    return n;
}

Test(readers, a_replacement_after_the_manifest_is_read_changes_nothing_read)
{
    cmd_result r = held("\"$RS\" verify D");
    cr_assert_eq(r.rc, 0, "verify: exit %d\n%s%s", r.rc, r.out, r.err);
    cr_assert(strstr(r.out, "3000 rows"), "%s", r.out);
    cmd_result_free(&r);

    r = held("\"$RS\" plan --from-buckets D --add 1 --emit M");
    cr_assert_eq(r.rc, 0, "plan --emit: exit %d\n%s%s", r.rc, r.out, r.err);
    cr_assert(strstr(r.err, "3000 rows read"), "%s", r.err);
    cmd_result_free(&r);
    assert_verify(path_join(test_dir, "M"));
    cr_assert_gt(rows_of("M", 'a'), 0);
    cr_assert_eq(rows_of("M", 'b'), 0, "rows of generation B were emitted from generation A's manifest");

    r = held("\"$RS\" plan --from-buckets D --add 1");
    cr_assert_eq(r.rc, 0, "plan: exit %d\n%s%s", r.rc, r.out, r.err);
    cr_assert(strstr(r.err, "3000 rows read"), "%s", r.err);
    cmd_result_free(&r);

    r = held("\"$RS\" dedup --quiet --buckets D -o X");
    cr_assert_eq(r.rc, 0, "dedup: exit %d\n%s%s", r.rc, r.out, r.err);
    cmd_result_free(&r);
    assert_verify(path_join(test_dir, "X"));
    cr_assert_eq(rows_of("X", 'a'), 3000);
    cr_assert_eq(rows_of("X", 'b'), 0);

    r = held("\"$RS\" stats D");
    cr_assert_eq(r.rc, 0, "stats: exit %d\n%s%s", r.rc, r.out, r.err);
    cr_assert(strstr(r.out, "3000 rows"), "%s", r.out);
    cmd_result_free(&r);
}

/* Runs `cmd` stopped between its open of D and its read of D's manifest
 * (RINGSHARD_TEST_PAUSE_AT=dir-opened); meanwhile D is replaced by D.B and
 * the old D removed, as a --force run does; D is put back afterwards. */
static cmd_result opened_then_removed(const char *cmd)
{
    return sh(WAIT_SH "cp -a D D.keep && RINGSHARD_TEST_PAUSE_AT=dir-opened %s >held.out 2>held.err & p=$!\n"
              "wait_stopped $p 'the reader to stop after opening D' || { kill -9 $p; cat held.err >&2; exit 124; }\n"
              "mv D D.A && mv D.B D && rm -rf D.A && kill -CONT $p\n"
              "wait $p; rc=$?\n"
              "mv D D.B && mv D.keep D\n"
              "cat held.out; cat held.err >&2; exit $rc",
              cmd);
}

/* D replaced and its old generation removed after a reader opened it but
 * before it read the manifest: exit 1 saying D was replaced, nothing
 * published; the same reader then reads D whole. */
Test(readers, a_replacement_before_the_manifest_is_read_is_said_so)
{
    static const char *const cmds[][2] = {
        {"\"$RS\" verify D", NULL},
        {"\"$RS\" plan --from-buckets D --add 1 --emit M", "M"},
        {"\"$RS\" dedup --quiet --buckets D -o X", "X"},
        {"\"$RS\" stats D", NULL},
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        cmd_result r = opened_then_removed(cmds[i][0]);
        cr_assert_eq(r.rc, 1, "%s: exit %d\n%s%s", cmds[i][0], r.rc, r.out, r.err);
        cr_assert(strstr(r.err, "D was replaced (or removed) while it was read") &&
                      strstr(r.err, "manifest.json"),
                  "%s: %s", cmds[i][0], r.err);
        cmd_result_free(&r);
        if (cmds[i][1]) {
            r = sh("test ! -e %s && ls -A | grep -c ringshard-tmp", cmds[i][1]);
            cr_assert_str_eq(r.out, "0\n", "%s: %s published or a temporary left", cmds[i][0], cmds[i][1]);
            cmd_result_free(&r);
        }
        r = sh("%s >/dev/null", cmds[i][0]);
        cr_assert_eq(r.rc, 0, "%s on D put back: exit %d\n%s", cmds[i][0], r.rc, r.err);
        cmd_result_free(&r);
        SH_OK("rm -rf M X");
    }
}

/* A reader's outcome while D is republished: wholly one generation (exit
 * 0), or a clear failure saying D went away or was replaced (exit 1);
 * never a difference (exit 3) nor a mix. */
static void assert_one_generation(cmd_result *r, const char *what, const char *outdir, int round)
{
    if (r->rc == 1) {
        cr_assert(strstr(r->err, "was replaced") || strstr(r->err, "cannot open the directory"),
                  "round %d, %s: exit 1 without saying D was replaced:\n%s", round, what, r->err);
        return;
    }
    cr_assert_eq(r->rc, 0, "round %d, %s: exit %d\n%s%s", round, what, r->rc, r->out, r->err);
    if (!outdir)
        return;
    assert_verify(path_join(test_dir, outdir));
    long a = rows_of(outdir, 'a'), b = rows_of(outdir, 'b');
    cr_assert(a == 0 || b == 0, "round %d, %s: %ld rows of generation A and %ld of B in one output", round, what,
              a, b);
}

Test(readers, readers_during_republishing_see_one_generation)
{
    /* the publisher: D replaced with --force, A and B in turn, until told to stop */
    SH_OK("( while [ ! -e stop ] && [ -e a.csv ]; do \"$RS\" bucket --quiet --force --key id --nodes 8 -o D b.csv; "
          "\"$RS\" bucket --quiet --force --key id --nodes 8 -o D a.csv; done ) >/dev/null 2>&1 </dev/null & "
          "echo $! > publisher.pid");
    for (int round = 0; round < 12; round++) {
        cmd_result r = sh("\"$RS\" plan --quiet --from-buckets D --add 1 --emit M --force");
        assert_one_generation(&r, "plan --emit", r.rc == 0 ? "M" : NULL, round);
        cmd_result_free(&r);
        r = sh("\"$RS\" verify --quiet D");
        assert_one_generation(&r, "verify", NULL, round);
        cmd_result_free(&r);
        r = sh("\"$RS\" dedup --quiet --buckets D -o X --force");
        assert_one_generation(&r, "dedup --buckets", r.rc == 0 ? "X" : NULL, round);
        cmd_result_free(&r);
    }
    SH_OK("touch stop; p=$(cat publisher.pid); i=0; while kill -0 $p 2>/dev/null && [ $i -lt 1200 ]; do "
          "i=$((i+1)); sleep 0.05; done; ! kill -0 $p 2>/dev/null");
}

/* ---- readers trust what they read (item 6) ---- */

/* D: generation A's bucket directory (tests/restamp.py rewrites a
 * manifest entry to what its file now holds). */
static void one_generation(void)
{
    test_dir_setup();
    SH_OK("{ echo id,v; i=0; while [ $i -lt 3000 ]; do echo a$i,x$i; i=$((i+1)); done; } > a.csv && "
          "\"$RS\" bucket --quiet --key id --nodes 8 -o D a.csv");
}

TestSuite(trust, .init = one_generation, .fini = test_dir_teardown, .timeout = 300);

#define RESTAMP "python3 " RS_SOURCE_DIR "/tests/restamp.py"

/* Runs `damage` then `cmd` and asserts exit 3, stderr holding every needle,
 * and no output directory `out` left. */
static void expect_untrusted(const char *damage, const char *cmd, const char *out, const char *n1, const char *n2)
{
    cmd_result r = sh("%s && %s", damage, cmd);
    cr_assert_eq(r.rc, 3, "exit %d for %s\nstdout: %s\nstderr: %s", r.rc, cmd, r.out, r.err);
    cr_assert(strstr(r.err, n1), "'%s' not in: %s", n1, r.err);
    cr_assert(!n2 || strstr(r.err, n2), "'%s' not in: %s", n2, r.err);
    cmd_result_free(&r);
    r = sh("test ! -e %s && ls -A | grep -c ringshard-tmp", out);
    cr_assert_str_eq(r.out, "0\n", "%s published or a temporary left: %s", out, r.err);
    cmd_result_free(&r);
}

/* a row of bucket 3 moved into bucket 4, both entries restamped: the
 * counts, bytes and CRC-32 agree, only the placement is wrong */
#define MOVE_ROW_3_TO_4                                                                              \
    "gzip -dc D/3.csv.gz > t3 && gzip -dc D/4.csv.gz > t4 && sed -n 2p t3 >> t4 && sed -i 2d t3 && " \
    "gzip -c t3 > D/3.csv.gz && gzip -c t4 > D/4.csv.gz && " RESTAMP " D 3.csv.gz 4.csv.gz"

Test(trust, dedup_buckets_refuses_a_row_in_the_wrong_bucket)
{
    expect_untrusted(MOVE_ROW_3_TO_4, "\"$RS\" dedup --quiet --buckets D -o X", "X", "D/4.csv.gz: data row ",
                     "its key belongs to another node than 4 under the ring of D/manifest.json");
    /* verify agrees that D is wrong */
    cmd_result r = sh("\"$RS\" verify D");
    cr_assert_eq(r.rc, 3, "%s", r.out);
    cmd_result_free(&r);
}

Test(trust, dedup_buckets_names_a_file_whose_counts_differ)
{
    expect_untrusted("gzip -dc D/4.csv.gz > t4 && sed -n 2p t4 >> t4 && gzip -c t4 > D/4.csv.gz",
                     "\"$RS\" dedup --quiet --buckets D -o X", "X", "D/4.csv.gz: ",
                     " rows, the manifest says ");
}

Test(trust, plan_from_buckets_refuses_a_changed_byte_outside_the_key)
{
    /* "a12,x12" -> "a12,q12": rows and bytes as before, CRC-32 not */
    expect_untrusted("gzip -dc D/4.csv.gz | sed '2s/,x/,q/' > t4 && gzip -c t4 > D/4.csv.gz",
                     "\"$RS\" plan --quiet --from-buckets D --add 1 --emit M", "M", "D/4.csv.gz: CRC-32 of the data ",
                     "(the file does not match D/manifest.json)");
    cmd_result r = sh("\"$RS\" plan --quiet --from-buckets D --add 1");
    cr_assert_eq(r.rc, 3, "plan without --emit: exit %d: %s", r.rc, r.err);
    cmd_result_free(&r);
}

Test(trust, plan_from_buckets_refuses_a_duplicated_row)
{
    expect_untrusted("gzip -dc D/4.csv.gz > t4 && sed -n 2p t4 >> t4 && gzip -c t4 > D/4.csv.gz",
                     "\"$RS\" plan --quiet --from-buckets D --add 1 --emit M", "M", "D/4.csv.gz: ",
                     " rows, the manifest says ");
}

Test(trust, plan_from_plain_buckets_refuses_a_byte_changed_in_place)
{
    /* a plain directory, one byte changed in place: even the size agrees */
    SH_OK("rm -rf D && \"$RS\" bucket --quiet --compress none --key id --nodes 8 -o D a.csv");
    expect_untrusted("sed -i '3s/,x/,y/' D/2.csv", "\"$RS\" plan --quiet --from-buckets D --add 1 --emit M", "M",
                     "D/2.csv: CRC-32 of the data ", NULL);
}

/* ---- headers and node names that are not UTF-8 (item 12) ---- */

/* A Latin-1 header "Gr\xf6\xdfe,x" keyed by its non-UTF-8 name, and a node
 * named "n\xffode" (node files take any bytes but control characters). */
static void latin1(void)
{
    test_dir_setup();
    SH_OK("printf 'Gr\\366\\337e,x\\n' > l.csv && i=0; while [ $i -lt 500 ]; do echo k$i,$i >> l.csv; "
          "i=$((i+1)); done; printf 'n\\377ode\\nnode2\\n' > nodes.txt && "
          "\"$RS\" bucket --quiet --key \"$(printf 'Gr\\366\\337e')\" --nodes-file nodes.txt -o D l.csv");
}

TestSuite(latin1, .init = latin1, .fini = test_dir_teardown, .timeout = 300);

Test(latin1, every_reader_takes_the_tools_own_output)
{
    /* the exact bytes beside the display strings */
    char *m = slurp(path_join(test_dir, "D/manifest.json"), NULL);
    cr_assert(m);
    cr_assert(strstr(m, "\"header\": \"Gr\\u00f6\\u00dfe,x\",\n  \"header_hex\": \"4772f6df652c78\""), "%s", m);
    cr_assert(strstr(m, "\"key_hex\": \"4772f6df65\""), "%s", m);
    cr_assert(strstr(m, "\"node_hex\": \"6eff6f6465\""), "%s", m);
    cr_assert(strstr(m, "\"description_hex\": "), "%s", m);
    free(m);
    SH_OK("test -f D/n%%FFode.csv.gz");
    /* before: verify said "the manifest says 'Gr\xc3\xb6\xc3\x9fe,x'" or
     * "no column 'Gr\xc3\xb6\xc3\x9fe'", plan exited 64 */
    assert_verify(path_join(test_dir, "D"));
    SH_OK("\"$RS\" plan --quiet --from-buckets D --add 1 --emit M");
    assert_verify(path_join(test_dir, "M"));
    cmd_result r = sh("grep -c '\"from_hex\": \"6eff6f6465\"' M/manifest.json");
    cr_assert_neq(atoi(r.out), 0, "%s", r.out);
    cmd_result_free(&r);
    SH_OK("\"$RS\" dedup --quiet --buckets D -o X");
    assert_verify(path_join(test_dir, "X"));
    SH_OK("\"$RS\" stats D | grep -q 'bucket directory D: 2 files, 500 rows'");
    /* an older manifest without the _hex members still reads (lossy as
     * before: here a header of UTF-8 only) */
    SH_OK("printf 'id,x\\n1,2\\n' > u.csv && \"$RS\" bucket --quiet --nodes 3 -o U u.csv && "
          "! grep -v crc32_hex U/manifest.json | grep -q _hex && \"$RS\" verify --quiet U");
}

/* Reads text as a manifest; returns the error code (0: read). */
static int parse(const char *text, rs_manifest *m, rs_error *err)
{
    memset(err, 0, sizeof *err);
    int rc = rs_manifest_parse(m, text, strlen(text), "m.json", err);
    return rc == 0 ? 0 : err->code;
}

static const char manifest_head[] =
    "{\"schema\": 1, \"kind\": \"buckets\", \"ring\": {\"fingerprint\": \"f\", \"description\": \"d\"},"
    "\"options\": {\"key\": \"k\", \"delimiter\": \",\", \"header\": true, \"compress\": \"none\", \"level\": 1,"
    "\"keys_only\": false},";

Test(latin1, hex_members_are_read_exactly_and_checked)
{
    char text[2048];
    rs_manifest m;
    rs_error err;
    snprintf(text, sizeof text,
             "%s\"header\": \"G\\u00f6\", \"header_hex\": \"47f6\", \"inputs\": [], \"files\": [{\"file\": "
             "\"n.csv\", \"node\": \"n?\", \"node_hex\": \"6eff\", \"rows\": 0, \"bytes\": 0, \"file_bytes\": 0, "
             "\"crc32\": 0}], \"totals\": {\"rows\": 0, \"bytes\": 0, \"rejected\": 0, \"files\": 1}}",
             manifest_head);
    cr_assert_eq(parse(text, &m, &err), 0, "%s", err.msg);
    cr_assert_str_eq(m.header_line, "G\xf6");
    cr_assert_str_eq(m.files[0].node, "n\xff");
    /* written back: the same bytes read again */
    char path[512];
    snprintf(path, sizeof path, "%s/w.json", test_dir);
    cr_assert_eq(rs_manifest_write(&m, path, &err), 0, "%s", err.msg);
    rs_manifest_free(&m);
    cr_assert_eq(rs_manifest_read(&m, path, &err), 0, "%s", err.msg);
    cr_assert_str_eq(m.header_line, "G\xf6");
    cr_assert_str_eq(m.files[0].node, "n\xff");
    rs_manifest_free(&m);
    static const char *const bad[] = {"4", "4G", "47F6", "4700"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(text, sizeof text,
                 "%s\"header\": \"G\", \"header_hex\": \"%s\", \"inputs\": [], \"files\": [], "
                 "\"totals\": {\"rows\": 0, \"bytes\": 0, \"rejected\": 0, \"files\": 0}}",
                 manifest_head, bad[i]);
        cr_assert_eq(parse(text, &m, &err), 2, "'%s' accepted", bad[i]);
        cr_assert(strstr(err.msg, "m.json: manifest member \"header_hex\": "), "%s", err.msg);
    }
}
