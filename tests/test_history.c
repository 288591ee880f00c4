/* dedup --append (dedup against the history a directory holds), from the
 * outside: real commands on real files, their results read by
 * tests/check_history.py, which recomputes what must be kept with Python
 * alone (csv, gzip, its own MurmurHash3 for the key indexes) and reads the
 * directory, its manifests and its key indexes without ringshard. What
 * each test asserts fails without the feature: a run that ignored the
 * history, or trusted a fingerprint, or left an index unchecked, keeps or
 * drops other rows than the reference. (Peak memory: test_memory.c; MPI
 * ranks: test_mpi.c.) */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "support.h"
#include "wait.h"

#define sh sh_in_test_dir
#define CHECK "python3 " RS_SOURCE_DIR "/tests/check_history.py "
#define BILLS " --dup-share 0.2 --newline-share 0.02"
/* The ring and key of the directories below. */
#define RING "--key bill_id --nodes 5"

/* a.csv: 3000 bills, a fifth reusing an earlier bill id, quoted notes with
 * line breaks; b.csv.gz: 1500 others and then the first 400 rows of a.csv
 * again (the same bytes: gen_bills' rows are a prefix of a longer run's);
 * c.csv (CRLF line ends): 1200 others, then rows of b.csv.gz's and of
 * a.csv's; next.csv: 40 fresh bills, the append after a crash. */
static void inputs(void)
{
    test_dir_setup();
    SH_OK("{ " GEN " --rows 3000 --seed 1" BILLS " -o a.csv && "
          "{ " GEN " --rows 1500 --seed 2" BILLS " && " GEN " --rows 400 --seed 1" BILLS " --no-header; } "
          "| gzip > b.csv.gz && "
          "{ " GEN " --rows 1200 --seed 3 --crlf && " GEN " --rows 300 --seed 2" BILLS " --crlf --no-header && "
          GEN " --rows 200 --seed 1" BILLS " --crlf --no-header; } > c.csv && "
          GEN " --rows 40 --seed 4 -o next.csv; } 2>/dev/null");
}

TestSuite(history, .init = inputs, .fini = test_dir_teardown, .timeout = 600);

/* Runs the printf-formatted command and asserts its exit status and that
 * `needle` (unless NULL) is in its stderr or stdout; returns them (free
 * with cmd_result_free). */
static cmd_result expect(int rc, const char *needle, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static cmd_result expect(int rc, const char *needle, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cmd_result r = vsh_in(test_dir, fmt, ap);
    va_end(ap);
    cr_assert_eq(r.rc, rc, "exit %d, want %d\nstdout: %s\nstderr: %s", r.rc, rc, r.out, r.err);
    cr_assert(!needle || strstr(r.err, needle) || strstr(r.out, needle), "'%s' not in:\n%s%s", needle, r.out, r.err);
    return r;
}

/* Runs the command, which ends with `check_history.py rows` of what the
 * append(s) in it added, and asserts that the appends' summary (its stderr)
 * says what the reference counted: the new rows kept, those whose key the
 * history holds and the repeats. Returns its output (cmd_result_free). */
static cmd_result counts_agree(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static cmd_result counts_agree(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cmd_result r = vsh_in(test_dir, fmt, ap);
    va_end(ap);
    cr_assert_eq(r.rc, 0, "exit %d\nstdout: %s\nstderr: %s", r.rc, r.out, r.err);
    const char *counts = strstr(r.out, "appended: ");
    cr_assert(counts, "%s", r.out);
    char want[256];
    snprintf(want, sizeof want, "%.*s", (int)strcspn(counts + 10, "\n"), counts + 10);
    cr_assert(strstr(r.err, want), "the summary does not say '%s':\n%s", want, r.err);
    return r;
}

/* Frees what a check returned (nothing more to look at). */
#define CHECKED(result)               \
    do {                              \
        cmd_result c_ = (result);     \
        cmd_result_free(&c_);         \
    } while (0)

/* ---- the rows: appends are one dedup of everything, the history first ---- */

/* `dedup A; dedup --append B; dedup --append C` holds, node by node (the
 * base file, then each generation's segment), the rows of `dedup A B C`
 * with --keep first, byte for byte, for gzip, zstd and plain files: the
 * history's copy of a key wins over B's and C's, a key repeated within B
 * is kept once. The base comes from a plain dedup (gzip), from the append
 * that creates DIR (zstd), or the three inputs are one command with
 * --commit-every 1 (plain: a generation each, its duplicates report that
 * of all three); pass 1's temporary buckets are plain, gzip or zstd. Every
 * time the whole set is Python's, the duplicates report lists every row
 * dropped with where its key is kept (a generation, or `repeat`), the
 * summary's counts are the reference's, the key indexes are checked entry
 * by entry, and verify passes. */
Test(history, appends_equal_one_dedup_of_all_inputs)
{
    static const char *const how[] = {
        "\"$RS\" dedup --quiet --compress gzip " RING " -o D a.csv && \"$RS\" dedup --quiet --append -o D b.csv.gz && "
        "\"$RS\" dedup --append --temp-compress gzip -o D --duplicates dups c.csv",
        "\"$RS\" dedup --quiet --append --compress zstd " RING " -o D a.csv && "
        "\"$RS\" dedup --quiet --append --temp-compress zstd -o D b.csv.gz && "
        "\"$RS\" dedup --append -o D --duplicates dups c.csv",
        "\"$RS\" dedup --append --commit-every 1 --compress none " RING " -o D --duplicates dups a.csv b.csv.gz c.csv",
    };
    static const char *const compress[] = {"gzip", "zstd", "none"}, *const since[] = {"3", "3", "1"};
    for (int i = 0; i < 3; i++)
        CHECKED(counts_agree("rm -rf D R && \"$RS\" dedup --quiet --compress %s " RING " -o R a.csv b.csv.gz c.csv "
                             "&& %s && test -d D/g00000003 && ! test -e D/g00000004 && " CHECK "same D R && "
                             CHECK "indexes D first 1 && \"$RS\" verify --quiet D && "
                             CHECK "rows D first 1 dedup:a.csv dedup:b.csv.gz dedup:c.csv --dups dups --since %s",
                             compress[i], how[i], since[i]));
}

/* The same with --by row: a new row is dropped when its bytes are in the
 * history or earlier in the new inputs (b.csv.gz repeats 400 rows of
 * a.csv byte for byte; c.csv rows of both, with CRLF ends), rows that only
 * share a key are all kept; the directory records "dedup": "row" and its
 * indexes hold rows. */
Test(history, by_row_appends_equal_one_dedup_by_row)
{
    CHECKED(counts_agree("\"$RS\" dedup --quiet --by row " RING " -o R a.csv b.csv.gz c.csv && "
                         "\"$RS\" dedup --quiet --by row " RING " -o D a.csv && "
                         "\"$RS\" dedup --quiet --append --by row -o D b.csv.gz && "
                         "\"$RS\" dedup --append --by row -o D --duplicates dups c.csv && "
                         "grep -q '\"dedup\": \"row\"' D/g00000003/manifest.json && " CHECK "same D R && "
                         CHECK "indexes D row 1 && \"$RS\" verify --quiet D && "
                         CHECK "rows D row 1 dedup:a.csv dedup:b.csv.gz dedup:c.csv --dups dups"));
}

static void put_file(const char *name, const char *text)
{
    FILE *f = fopen(path_join(test_dir, name), "w");
    cr_assert(f && fputs(text, f) >= 0 && fclose(f) == 0, "%s", name);
}

/* Keys as the pipeline extracts them, compared on their full bytes: a
 * composite key (id|sub), quoted or not ("a" and a are one key), with a
 * quoted comma or line break, a key that is a prefix of another, one with
 * a trailing blank, bytes >= 0x80, and "a;1" + "" against "a" + "1;" (a
 * part holding the separator itself is refused: dedup's
 * composite_key_part_holding_the_separator_is_a_bad_row). The history's copy wins, repeats within the new rows
 * are dropped; Python's csv module says which. */
Test(history, quoted_and_composite_keys)
{
    put_file("k1.csv", "id,sub,note\n\"a,b\",1,first\na,1,\"quoted \"\"note\"\"\"\n\"multi\nline\",2,z\n"
                       "\xc3\xa9,1,accent\nab,1,prefix\n\"a;1\",,semicolon\nx,1,plain\n\"a,b\",1,repeated in the base\n");
    put_file("k2.csv", "id,sub,note\n\"a\",1,history (quoted)\na,\"1\",history\n\"a,b\",1,history\nab,2,new\n"
                       "ab,1,history\nabc,1,new: ab is a prefix\n\"multi\nline\",2,history\n\"multi\nline \",2,new\n"
                       "a,1;,\"new: a|1; is not a;1|\"\n\xc3\xa9,1,history\ne,1,new\nn1,1,new\n"
                       "n1,1,repeat\n\"n1\",1,repeat (quoted)\n");
    CHECKED(counts_agree("\"$RS\" dedup --quiet --key id,sub --nodes 3 -o R k1.csv k2.csv && "
                         "\"$RS\" dedup --quiet --key id,sub --nodes 3 -o D k1.csv && "
                         "\"$RS\" dedup --append -o D --duplicates dups k2.csv && " CHECK "same D R && "
                         CHECK "indexes D first 1,2 && \"$RS\" verify --quiet D && "
                         CHECK "rows D first 1,2 dedup:k1.csv dedup:k2.csv --dups dups"));
}

/* ---- fingerprints: equality is on the key's bytes ------------------------ */

/* With RINGSHARD_TEST_FP_BITS=4 (16 fingerprints) and =1 (two) every key
 * of a node shares its fingerprint with thousands of others, across many
 * blocks of the index: distinct keys are neither dropped nor merged (the
 * result is Python's, and the 64-bit run's byte for byte), each index
 * holds every key under its short fingerprint. An index records its width:
 * a run with another width refuses it (exit 3, nothing published), and so
 * does verify. */
Test(history, colliding_fingerprints_are_kept_apart)
{
    SH_OK("{ " GEN " --rows 20000 --seed 5 -o h.csv && { " GEN " --rows 2000 --seed 6" BILLS " && "
          GEN " --rows 3000 --seed 5 --no-header; } > n.csv; } 2>/dev/null && "
          "\"$RS\" dedup --quiet --append --key bill_id --nodes 2 -o G h.csv && "
          "\"$RS\" dedup --quiet --append -o G --duplicates gd n.csv");
    for (int bits = 1; bits <= 4; bits += 3)
        CHECKED(counts_agree("export RINGSHARD_TEST_FP_BITS=%d && rm -rf F && "
                             "\"$RS\" dedup --quiet --append --key bill_id --nodes 2 -o F h.csv && "
                             "\"$RS\" dedup --append -o F --duplicates fd n.csv && "
                             CHECK "indexes F first 1 --bits %d && \"$RS\" verify --quiet F && cmp fd gd && "
                             "cmp F/g00000002/0.csv.gz G/g00000002/0.csv.gz && "
                             "cmp F/g00000002/1.csv.gz G/g00000002/1.csv.gz && "
                             CHECK "rows F first 1 dedup:h.csv dedup:n.csv --dups fd",
                             bits, bits));
    cmd_result r = expect(3, "key index fingerprints of another width than this run's",
                          "\"$RS\" dedup --quiet --append -o F next.csv || "
                          "{ rc=$?; test ! -e F/g00000003 && exit $rc; }");
    cmd_result_free(&r);
    r = expect(3, "fingerprints of another width", "\"$RS\" verify F");
    cmd_result_free(&r);
}

/* ---- histories without key indexes --------------------------------------- */

/* A directory from `bucket` (schema 1; a key's copies all kept), from a
 * plain `dedup` (schema 1) and from `bucket --append` (schema 2, two
 * generations holding some keys both): the first dedup --append says it
 * builds the missing key indexes, reads every history row once to do so,
 * lists the indexes in its generation's manifest ("indexes") and upgrades
 * a schema-1 manifest; verify and the Python reader accept them; the next
 * append builds none and reads no history row ("0 rows re-read"). The
 * keys a bucket directory holds several times stay as they are; the
 * appends' rows are the reference's, a dropped row's key said to be kept
 * in the oldest generation holding it. */
Test(history, histories_without_key_indexes_are_indexed_once)
{
    static const struct {
        const char *make, *runs;
        int files;
    } dirs[] = {
        {"\"$RS\" bucket --quiet " RING " -o X a.csv", "bucket:a.csv", 5},
        {"\"$RS\" dedup --quiet " RING " -o X a.csv", "dedup:a.csv", 5},
        {"\"$RS\" bucket --quiet --append " RING " -o X a.csv && \"$RS\" bucket --quiet --append -o X c.csv",
         "bucket:a.csv bucket:c.csv", 10},
    };
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
        char note[160], reread[160];
        snprintf(note, sizeof note, "X: %d of its %d files have no key index yet: building them (their rows are read "
                 "this once)", dirs[i].files, dirs[i].files);
        cmd_result r = expect(0, note, "rm -rf X && %s && " CHECK "total X && \"$RS\" dedup --append -o X b.csv.gz",
                              dirs[i].make);
        snprintf(reread, sizeof reread, "B of data), %ld rows re-read to build %d missing key indexes\n", atol(r.out),
                 dirs[i].files);
        cr_assert(atol(r.out) > 2000 && strstr(r.err, reread), "'%s' not in:\n%s", reread, r.err);
        cmd_result_free(&r);
        SH_OK("grep -q '\"schema\": 2' X/manifest.json && python3 -c 'import json, sys; "
              "assert len(json.load(open(sys.argv[1]))[\"indexes\"]) == %d' X/g0000000%d/manifest.json && "
              CHECK "indexes X first 1 && \"$RS\" verify --quiet X",
              dirs[i].files, dirs[i].files == 5 ? 2 : 3);
        r = counts_agree("\"$RS\" dedup --append --on-seen again -o X --duplicates dups c.csv && "
                         CHECK "indexes X first 1 && "
                         "\"$RS\" verify --quiet X && "
                         CHECK "rows X first 1 %s dedup:b.csv.gz dedup:c.csv --dups dups",
                         dirs[i].runs);
        cr_assert(strstr(r.err, ", 0 rows re-read\n") && !strstr(r.err, "no key index yet"), "%s", r.err);
        cmd_result_free(&r);
    }
}

/* ---- verify: a key index must be its file's ------------------------------ */

/* verify (exit 3) finds each damaged key index, naming it: a flipped byte;
 * a key replaced by another with its fingerprint recomputed, the run
 * sorted again and the header's and the manifest's size and CRC-32 made
 * right (only the keys' digest against the rows can tell: it is the one
 * difference); an index cut short (the manifest's size, or, with the
 * manifest made right, the index's own structure); a missing index; and a
 * flipped byte in an index an append built for a bucket directory's file.
 * The untouched directories pass. */
Test(history, a_tampered_key_index_fails_verify)
{
    SH_OK("\"$RS\" dedup --quiet --append --key bill_id --nodes 2 -o T a.csv && \"$RS\" dedup --quiet --append -o T "
          "b.csv.gz && \"$RS\" verify --quiet T && \"$RS\" bucket --quiet --key bill_id --nodes 2 -o U a.csv && "
          "\"$RS\" dedup --quiet --append -o U b.csv.gz && \"$RS\" verify --quiet U");
    static const struct {
        const char *dir, *index, *how, *says;
    } cases[] = {
        {"T", "g00000002/0.keyidx", "flip", "DIFF X: g00000002/0.keyidx: CRC-32 "},
        {"T", "0.keyidx", "flip", "DIFF X: 0.keyidx: CRC-32 "},
        {"T", "g00000002/1.keyidx", "swapkey", "DIFF X: g00000002/1.keyidx: its keys are not those of "
                                               "g00000002/1.csv.gz\nverify X: FAILED: 1 differences"},
        {"T", "g00000002/0.keyidx", "cut", "g00000002/0.keyidx: key index of "},
        {"T", "g00000002/0.keyidx", "cutfixed", "DIFF X: g00000002/0.keyidx: X/g00000002/0.keyidx: key index "},
        {"T", "1.keyidx", "remove", "DIFF X: 1.keyidx: missing (the key index of 1.csv.gz)"},
        {"U", "g00000002/1.g00000001.keyidx", "flip", "DIFF X: g00000002/1.g00000001.keyidx: CRC-32 "},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cmd_result r = expect(3, cases[i].says, "rm -rf X && cp -a %s X && " CHECK "tamper X %s %s && \"$RS\" verify X",
                              cases[i].dir, cases[i].index, cases[i].how);
        cmd_result_free(&r);
    }
}

/* ---- crashes: the old generation or the new one -------------------------- */

/* The ring of the crash tests' directories (few nodes: few calls). */
#define RING2 "--key bill_id --nodes 2"

/* tests/kill_sweep.py: `cmd` on D, put back as `setup` makes it before
 * each run, killed (SIGKILL) at each pause point and at each call of each
 * system call listed (strace fault injection); each time D is as before
 * or as after the run, verify passes, the next append works and verify
 * passes again, and nothing is left beside D. Returns what it printed
 * (malloc'd): where each point left D and the counts. */
static char *crash(const char *setup, const char *cmd, const char *points, const char *syscalls, int upgraded)
{
    cmd_result r = sh("python3 " RS_SOURCE_DIR "/tests/kill_sweep.py D --setup '%s' --cmd '%s' "
                      "--next '\"$RS\" dedup --quiet -j 1 --append " RING2 " -o D next.csv' "
                      "--points '%s' --syscalls '%s' %s",
                      setup, cmd, points, syscalls, upgraded ? "--upgraded" : "");
    cr_assert_eq(r.rc, 0, "%s: %s%s", cmd, r.out, r.err);
    char *said = strdup(r.out);
    cmd_result_free(&r);
    return said;
}

/* An append to a history with key indexes: killed at each pause point
 * (before its generation is renamed in: the old one; after: the new one)
 * and at each call of each publishing system call. */
Test(history, sigkill_during_an_append_leaves_the_old_or_the_new_generation)
{
    RELEASE_SUITE_ONLY();
    SH_OK("\"$RS\" dedup --quiet --append " RING2 " -o B a.csv");
    char *s = crash("rm -rf D D.ringshard-*; cp -a B D", "\"$RS\" dedup --quiet -j 1 --append -o D b.csv.gz",
                    "dir-open begun batch_written publish published",
                    "mkdir renameat2 renameat rename fsync unlinkat unlink rmdir", 0);
    cr_assert(strstr(s, "dir-open:old begun:old batch_written:old publish:old published:new kills="), "%s", s);
    cr_assert(!strstr(s, " renameat2=0") && !strstr(s, " fsync=0") && !strstr(s, " mkdir=0"), "%s", s);
    free(s);
}

/* The first append to a bucket directory (schema 1), which builds the
 * missing key indexes and upgrades the manifest (between the two renames:
 * the old rows under the upgraded manifest), and the append that creates
 * DIR: killed anywhere, DIR is as before or after. */
Test(history, sigkill_during_an_append_that_builds_indexes_or_creates_dir)
{
    RELEASE_SUITE_ONLY();
    SH_OK("\"$RS\" bucket --quiet " RING2 " -o B a.csv");
    char *s = crash("rm -rf D D.ringshard-*; cp -a B D", "\"$RS\" dedup --quiet -j 1 --append -o D b.csv.gz",
                    "dir-open begun batch_written publish upgraded published", "renameat2 renameat rename fsync", 1);
    cr_assert(strstr(s, "publish:old upgraded:upgraded published:new kills="), "%s", s);
    cr_assert(!strstr(s, " renameat2=0") && !strstr(s, " renameat=0") && !strstr(s, " fsync=0"), "%s", s);
    free(s);
    s = crash("rm -rf D D.ringshard-*", "\"$RS\" dedup --quiet -j 1 --append " RING2 " -o D a.csv",
              "begun batch_written publish published", "renameat2 rename fsync", 0);
    cr_assert(strstr(s, "begun:old batch_written:old publish:old published:new kills="), "%s", s);
    free(s);
}

/* Two appends at once: the second waits for the first (DIR's writer lock)
 * and only then reads the history, so it holds the first's new keys too:
 * its rows whose key only the first added are dropped, said to be kept in
 * the first's generation. (It waits for states, never for a time.) */
Test(history, an_append_waiting_for_another_sees_its_keys)
{
    CHECKED(counts_agree(WAIT_SH "\"$RS\" dedup --quiet --append " RING " -o D a.csv && "
                         "RINGSHARD_TEST_PAUSE_AT=publish \"$RS\" dedup --quiet --append -o D b.csv.gz "
                         "> /dev/null 2> e1 "
                         "& p1=$!; wait_stopped $p1 'the first append to stop before its publication' || exit 1; "
                         "\"$RS\" dedup --append -o D --duplicates dups c.csv 2> e2 & p2=$!; "
                         "wait_for 'the second append to wait' "
                         "\"grep -q 'D: another run is writing it; waiting' e2\" || "
                         "{ kill -9 $p1 $p2; exit 1; }; kill -CONT $p1 && wait $p1 && wait $p2 && cat e2 >&2 && "
                         "grep -q g00000002 dups && \"$RS\" verify --quiet D && "
                         CHECK "rows D first 1 dedup:a.csv dedup:b.csv.gz dedup:c.csv --dups dups"));
}

/* ---- what a user would try ----------------------------------------------- */

/* Refused with exit 64 and DIR left as it was, byte for byte: --keep last
 * (the history's copy would have to change) and --buckets with --append;
 * --by row on a directory deduplicated by key, and by key on one by row,
 * each message naming both modes; a --keys-only directory (no rows). */
Test(history, what_cannot_be_appended_is_refused_and_left_as_it_was)
{
    SH_OK("\"$RS\" dedup --quiet --append " RING " -o K a.csv && \"$RS\" dedup --quiet --append --by row " RING
          " -o W a.csv && \"$RS\" bucket --quiet --keys-only " RING " -o O a.csv && "
          "for d in K W O; do " SNAP "$d > $d.snap || exit 1; done");
    static const struct {
        const char *cmd, *says[2];
    } cases[] = {
        {"--keep last -o K b.csv.gz", {"--keep last", "the history's copy wins"}},
        {"--buckets W -o K", {"--buckets", NULL}},
        {"--by row -o K b.csv.gz", {"K/manifest.json: DIR's rows are distinct by key", "this run asks --by row"}},
        {"-o W b.csv.gz", {"W/manifest.json: DIR's rows are distinct by row", "this run asks --keep first"}},
        {"-o O b.csv.gz", {"--keys-only", "no rows to keep"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cmd_result r = expect(64, cases[i].says[0], "\"$RS\" dedup --append %s", cases[i].cmd);
        cr_assert(!cases[i].says[1] || strstr(r.err, cases[i].says[1]), "%s: %s", cases[i].cmd, r.err);
        cmd_result_free(&r);
    }
    SH_OK("for d in K W O; do " SNAP "$d | cmp - $d.snap || exit 1; done && ! ls -d *.ringshard-* 2>/dev/null");
}

/* Inputs already ingested are skipped (a re-run adds nothing and leaves
 * the last duplicates report as it was; a renamed copy beside a new input: only the new one's rows are appended); empty
 * inputs and an input whose every row DIR holds (--on-seen again) publish
 * a generation with no segment, which verify and the next append take;
 * the duplicates report goes to a pipe too; the rows are the reference's
 * every time. */
Test(history, ingested_empty_and_all_duplicate_inputs)
{
    SH_OK("\"$RS\" dedup --quiet --append " RING " -o D a.csv && \"$RS\" dedup --quiet --append -o D b.csv.gz");
    cmd_result r = expect(0, "ringshard dedup: nothing new for D: 1 input already ingested",
                          "\"$RS\" dedup --append -o D b.csv.gz && ! test -e D/g00000003");
    cmd_result_free(&r);
    /* a run that ingests nothing leaves the last report as it was */
    r = expect(0, "nothing new for D", "echo kept > old.dups && \"$RS\" dedup --append -o D --duplicates old.dups "
                                       "b.csv.gz && test \"$(cat old.dups)\" = kept");
    cmd_result_free(&r);
    CHECKED(counts_agree("cp a.csv again.csv && \"$RS\" dedup --append -o D --duplicates dups again.csv c.csv && "
                         "test -d D/g00000003 && " CHECK "rows D first 1 dedup:a.csv dedup:b.csv.gz dedup:c.csv "
                         "--dups dups"));
    CHECKED(counts_agree("head -n 1 a.csv > header.csv && : > empty.csv && \"$RS\" dedup --append -o D --duplicates "
                         "dups --allow-empty header.csv empty.csv && test \"$(ls D/g00000004)\" = manifest.json && "
                         "\"$RS\" verify --quiet D && test ! -s dups && " CHECK "rows D first 1 dedup:a.csv "
                         "dedup:b.csv.gz dedup:c.csv dedup:header.csv+empty.csv --dups dups"));
    CHECKED(counts_agree("{ \"$RS\" dedup --append --on-seen again -o D --duplicates /dev/stdout a.csv; "
                         "echo $? > rc; } "
                         "| cat > dups && test $(cat rc) = 0 && test \"$(ls D/g00000005)\" = manifest.json && "
                         "! grep -q repeat dups && \"$RS\" verify --quiet D && " CHECK "rows D first 1 dedup:a.csv "
                         "dedup:b.csv.gz dedup:c.csv dedup:header.csv+empty.csv dedup:a.csv --dups dups"));
    SH_OK("\"$RS\" dedup --quiet --append -o D next.csv && test -d D/g00000006 && " CHECK "indexes D first 1 && "
          "\"$RS\" verify --quiet D");
}

/* compact merges each node's files and their key indexes (the runs one
 * after the other): the Python reader and verify accept the indexes, and
 * the next append uses them as they are (no row re-read): its rows are the
 * reference's, the keys of the compacted generation held in it. */
Test(history, compact_then_append)
{
    SH_OK("\"$RS\" dedup --quiet --append " RING " -o D a.csv && \"$RS\" dedup --quiet --append -o D b.csv.gz && "
          "\"$RS\" compact --quiet D && ! test -e D/g00000002 && grep -q '\"generation\": 2,' D/manifest.json && "
          CHECK "indexes D first 1 && \"$RS\" verify --quiet D");
    cmd_result r = counts_agree("\"$RS\" dedup --append -o D --duplicates dups c.csv && test -d D/g00000003 && "
                                "grep -q g00000002 dups && " CHECK "indexes D first 1 && \"$RS\" verify --quiet D && "
                                CHECK "rows D first 1 dedup:a.csv+b.csv.gz dedup:c.csv --dups dups");
    cr_assert(strstr(r.err, ", 0 rows re-read\n"), "%s", r.err);
    cmd_result_free(&r);
}

/* ---- what the summary says it read ---------------------------------------- */

/* h.csv: 500 distinct bills on single lines; day.csv: 30 fresh bills, then
 * 100 rows of h.csv (keys the history holds). */
static void summary_inputs(void)
{
    SH_OK("{ " GEN " --rows 500 --seed 9 --dup-share 0 --newline-share 0 -o h.csv && "
          "{ " GEN " --rows 30 --seed 10 --dup-share 0 --newline-share 0 && sed -n '2,101p' h.csv; } > day.csv; } "
          "2>/dev/null && \"$RS\" dedup --quiet --append " RING " -o D h.csv");
}

/* "12.3 kB" at s, in bytes (rs_human_bytes' units); -1 if s is not one. */
static double human(const char *s)
{
    double v;
    char unit[4];
    if (!s || sscanf(s, "%lf %3s", &v, unit) != 2)
        return -1;
    static const char *const units[] = {"B", "kB", "MB", "GB", "TB"};
    for (int i = 0; i < 5; i++, v *= 1000)
        if (!strcmp(unit, units[i]))
            return v;
    return -1;
}

static double file_size(const char *name)
{
    cmd_result r = sh("stat -c %%s %s", name);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    double v = atof(r.out);
    cmd_result_free(&r);
    return v;
}

/* The append's summary counts the new keys the history's indexes confirmed
 * by their bytes (the 100 rows of h.csv, no more: a fresh key is never
 * confirmed) and the index bytes that took; it gives the process's reads
 * as the kernel counts them (rchar covers at least the input, read once);
 * its time is the whole job's: the append held stopped just before its
 * publication until 2 s have passed (the stopped time is in no pass)
 * reports at least that much outside pass 1 and pass 2. */
Test(history, the_summary_counts_confirmed_keys_kernel_reads_and_the_publication)
{
    summary_inputs();
    cmd_result r = expect(0, "dropped: 100 whose key the history holds",
                          WAIT_SH "RINGSHARD_TEST_PAUSE_AT=publish \"$RS\" dedup --append -o D day.csv 2> e & p=$!; "
                          "wait_stopped $p 'the append to stop before its publication' || exit 1; "
                          "t0=$(date +%%s%%N); wait_for 'two seconds of the append stopped' "
                          "'[ $(( $(date +%%s%%N) - t0 )) -ge 2000000000 ]' || exit 1; "
                          "kill -CONT $p && wait $p; rc=$?; cat e >&2; exit $rc");
    unsigned long long keys = 0;
    const char *k = strstr(r.err, "  history keys: ");
    cr_assert(k && sscanf(k, "  history keys: %llu new keys found by their exact bytes", &keys) == 1, "%s", r.err);
    cr_assert_eq(keys, 100, "%s", r.err);
    const char *cb = strstr(k, "(");
    cr_assert(human(cb ? cb + 1 : NULL) >= 100 * 32, "the confirmations read less than the 100 keys:\n%s", r.err);
    const char *io = strstr(r.err, "  read (kernel): ");
    cr_assert(io, "%s", r.err);
    cr_assert(human(io + 17) >= file_size("day.csv"), "rchar below the input's size:\n%s", r.err);
    cr_assert(strstr(io, " returned by reads (rchar), ") && strstr(io, " from storage (read_bytes)"), "%s", r.err);
    double total, p1, p2, rest;
    const char *t = strstr(r.err, "buckets in D (");
    cr_assert(t && sscanf(t, "buckets in D (%lf s: pass 1 %lf s, pass 2 %lf s, checks and publication %lf s)",
                          &total, &p1, &p2, &rest) == 4, "%s", r.err);
    cr_assert(rest >= 2.0 && total >= p1 + p2 + 2.0, "the publication's time is left out:\n%s", r.err);
    cmd_result_free(&r);
}

/* The append's metrics say what its lookups had to read of the history:
 * the filters' size of the key indexes of the nodes its new keys went to,
 * the new keys a filter line passed in each index, and those the indexes
 * hold, as tests/check_history.py recomputes them from the format alone
 * (a history of two generations, c.csv holding keys of both). */
Test(history, the_metrics_count_the_filters_their_passes_and_the_keys_confirmed)
{
    SH_OK("\"$RS\" dedup --append --quiet " RING " -o D a.csv && \"$RS\" dedup --append --quiet -o D b.csv.gz && "
          "\"$RS\" dedup --append --quiet --metrics m.prom -o D c.csv");
    cmd_result want = expect(0, NULL, CHECK "filters D first 1 3 c.csv");
    cmd_result got = expect(0, NULL, "for m in filter_bytes filter_passes keys_confirmed; do "
                                     "sed -n \"s/^ringshard_history_${m}{command=\\\"dedup\\\"} //p\" m.prom; "
                                     "done | paste -sd ' '");
    cr_assert_str_eq(got.out, want.out, "the metrics say %s, the recomputation %s", got.out, want.out);
    unsigned long long fb, passes, confirmed;
    cr_assert(sscanf(want.out, "%llu %llu %llu", &fb, &passes, &confirmed) == 3, "%s", want.out);
    cr_assert(fb > 0 && passes > 0 && confirmed >= 500, "%s", want.out);   /* c.csv: 500 rows of a.csv and b.csv.gz */
    cmd_result_free(&want);
    cmd_result_free(&got);
}

/* An input of the size of one DIR ingested is read before the run only
 * when the answer changes what the run does: with --on-seen skip (the
 * default) a different file of that size is checksummed first (and then
 * ingested, read a second time: the summary says how much the first read
 * took), but --on-seen again ingests a copy without that first read.
 * Counted by the job (the bytes it read to tell), not timed. */
Test(history, on_seen_again_reads_an_input_once)
{
    summary_inputs();
    /* the same bytes, two rows swapped: h.csv's size, another checksum */
    SH_OK("{ head -n 1 h.csv; sed -n 3p h.csv; sed -n 2p h.csv; tail -n +4 h.csv; } > swapped.csv && "
          "test $(stat -c %%s swapped.csv) = $(stat -c %%s h.csv) && ! cmp -s swapped.csv h.csv && "
          "cp -r D D2");
    cmd_result r = expect(0, "1 input ingested, 0 skipped", "\"$RS\" dedup --append -o D swapped.csv");
    const char *first = strstr(r.err, " of inputs read before the run to tell ingested ones");
    while (first && first > r.err && first[-1] != ';')
        first--;
    double size = file_size("h.csv"), got = human(first ? first + 1 : NULL);
    cr_assert(got > 0.99 * size && got < 1.01 * size, "not one read of swapped.csv (%.0f B) counted:\n%s", size,
              r.err);
    cmd_result_free(&r);
    r = expect(0, "dropped: 500 whose key the history holds, 0 repeats within the new inputs; 1 input ingested, 0 "
                  "skipped", "\"$RS\" dedup --append --on-seen again -o D2 h.csv");
    cr_assert(!strstr(r.err, "of inputs read before the run"), "h.csv read before the run:\n%s", r.err);
    cmd_result_free(&r);
    r = expect(0, "nothing new for D2: 1 input already ingested", "\"$RS\" dedup --append -o D2 h.csv");
    cmd_result_free(&r);
}

/* ---- key indexes: version 1, damaged blocks ------------------------------ */

#define V1 RS_SOURCE_DIR "/fixtures/history_v1"

/* fixtures/history_v1/H, written by ringshard 0.1 (two generations, key
 * indexes of version 1), is read as it is: verify passes; an append onto
 * it keeps and drops what the same append onto the same history written by
 * this version does (its generation's files and its duplicates report,
 * byte for byte); compact (--memory 2M) rewrites its indexes as version 2, the same
 * bytes as the compacted index of the directory this version wrote, and
 * the Python reader checks them entry by entry. */
Test(history, version_1_indexes_are_read_and_compact_rewrites_them)
{
    SH_OK("cp -a " V1 "/H old && zcat " V1 "/day1.csv.gz > day1.csv && zcat " V1 "/day2.csv.gz > day2.csv && "
          "\"$RS\" dedup --quiet --append --key bill_id --nodes 2 -o new day1.csv && "
          "\"$RS\" dedup --quiet --append -o new day2.csv && "
          "head -c 8 old/0.keyidx | grep -qx RSKEYIX1 && head -c 8 new/0.keyidx | grep -qx RSKEYIX2 && "
          "\"$RS\" verify --quiet old && "
          "\"$RS\" dedup --quiet --append -o old --duplicates old.dups " V1 "/day3.csv && "
          "\"$RS\" dedup --quiet --append -o new --duplicates new.dups " V1 "/day3.csv && cmp old.dups new.dups && "
          "test \"$(grep -c \"$(printf '\\tg0000000')\" old.dups)\" -eq 100 && "
          "for f in 0.csv.gz 1.csv.gz 0.keyidx 1.keyidx; do cmp old/g00000003/$f new/g00000003/$f || exit 1; done && "
          "\"$RS\" compact --quiet --memory 2M old && \"$RS\" compact --quiet new && "
          "for f in 0.csv.gz 1.csv.gz 0.keyidx 1.keyidx; do cmp old/$f new/$f || exit 1; done && "
          "head -c 8 old/1.keyidx | grep -qx RSKEYIX2 && \"$RS\" verify --quiet old && " CHECK "indexes old first 1");
}

/* A byte flipped in a history index's filter, or in its chunks (the
 * manifest's size and CRC-32 left as they are: an append does not read a
 * whole index to check them, it checks each block it reads): the append
 * that reads the block stops with exit 2, naming the index and the block;
 * the directory is as it was, nothing is published; verify says so too. */
Test(history, an_append_reading_a_damaged_index_block_stops)
{
    SH_OK("\"$RS\" dedup --quiet --append " RING " -o T a.csv && " SNAP "T > snap.before");
    static const struct {
        const char *where, *says;
    } cases[] = {
        {"fa+64*(L//2)+5", "key index damaged: filter line "},
        {"ca+30", "key index damaged: chunk at byte "},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        /* every new key is looked up in every line's neighbourhood: c.csv
         * holds a.csv's keys again, so the first chunk is read too */
        SH_OK("rm -rf X && cp -a T X && for f in X/*.keyidx; do python3 -c \"import struct,sys; "
              "f=open(sys.argv[1],'r+b'); h=f.read(128); L,R,fa,ta,ca=struct.unpack_from('<QQQQQ',h,56); at=%s; "
              "f.seek(at); b=f.read(1); f.seek(at); f.write(bytes([b[0]^0x10]))\" $f || exit 1; done && "
              SNAP "X > snap.damaged",
              cases[i].where);
        cmd_result r = expect(2, cases[i].says, "\"$RS\" dedup --append -o X c.csv");
        cr_assert(strstr(r.err, ".keyidx: key index damaged"), "%s", r.err);
        cmd_result_free(&r);
        SH_OK(SNAP "X | cmp - snap.damaged && ! ls -d X/g00000002 2>/dev/null && "
              "test -z \"$(ls -A . | grep -v -e '^[a-z]*\\.csv' -e '^[a-z]*\\.csv\\.gz$' -e '^snap\\.' -e '^[TX]$')\"");
        r = expect(3, "key index damaged", "\"$RS\" verify X");
        cmd_result_free(&r);
    }
    SH_OK(SNAP "T | cmp - snap.before");
}

/* After that: `repair` finds the index whose bytes are not its manifest's
 * CRC-32 (the chain itself whole), rebuilds DIR with every row and no key
 * index, the damaged directory kept aside; the next append builds the
 * indexes from the rows and keeps and drops exactly what the same append
 * onto an undamaged copy does; verify passes. */
Test(history, repair_drops_damaged_key_indexes_and_the_next_append_rebuilds_them)
{
    SH_OK("\"$RS\" dedup --quiet --append " RING " -o T a.csv && \"$RS\" dedup --quiet --append -o T b.csv.gz && "
          "cp -a T U && for f in T/*.keyidx T/g*/*.keyidx; do python3 -c \"import struct,sys; "
          "f=open(sys.argv[1],'r+b'); h=f.read(128); ca=struct.unpack_from('<Q',h,88)[0]; f.seek(ca+30); "
          "b=f.read(1); f.seek(ca+30); f.write(bytes([b[0]^0x10]))\" $f || exit 1; done");
    cmd_result r = expect(2, "key index damaged: chunk at byte ", "\"$RS\" dedup --append -o T c.csv");
    cmd_result_free(&r);
    r = expect(0, "INDEXES NOT CARRIED: 10 damaged key indexes", "\"$RS\" repair T");
    cr_assert(strstr(r.out, "DAMAGE T/g00000002/0.keyidx: CRC-32 "), "%s", r.out);
    cmd_result_free(&r);
    SH_OK("test -d T.damaged.1 && ! ls T/*.keyidx 2>/dev/null && \"$RS\" verify --quiet T && "
          "\"$RS\" dedup --append -o T --duplicates t.dups c.csv 2> t.err && "
          "grep -q 'rows re-read to build 5 missing key indexes' t.err && "
          "\"$RS\" dedup --quiet --append -o U --duplicates u.dups c.csv && "
          "cut -f 1,3 t.dups > t.rows && cut -f 1,3 u.dups > u.rows && cmp t.rows u.rows && "
          "for n in 0 1 2 3 4; do cmp T/g00000003/$n.csv.gz U/g00000003/$n.csv.gz || exit 1; done && "
          "\"$RS\" verify --quiet T && " CHECK "indexes T first 1");
}
