/* Bucket directories that grow by appends, from the outside: `bucket
 * --append`, `compact` and the readers of a directory of several
 * generations, with real commands on real files. What a directory holds is
 * read with gzip, zstd, cat and cmp (tests/append_lib.sh), against a
 * directory that one run wrote from all the inputs, and with the Python
 * checkers; crashes are SIGKILLs injected by strace at each publishing
 * system call and at the pause points (ringshard/testhook.h); no test waits
 * for a time, only for a state. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "support.h"
#include "wait.h"

#define sh sh_in_test_dir
/* Every command starts with the shell functions of append_lib.sh. */
#define LIB WAIT_SH APPEND_LIB
#define CHECK_BUCKETS "python3 " RS_SOURCE_DIR "/tests/check_buckets.py \"$RS\" "
#define CHECK_DEDUP "python3 " RS_SOURCE_DIR "/tests/check_dedup.py "
#define CHECK_MEMBERS "python3 " RS_SOURCE_DIR "/tests/check_members.py "
#define KILL_SWEEP "python3 " RS_SOURCE_DIR "/tests/kill_sweep.py "

/* The ring and key of the directories below. */
#define RING "--key bill_id --nodes 5"

/* a.csv, b.csv.gz and c.csv (CRLF line ends): bills (quoted fields, line
 * breaks inside some, duplicated keys) to be appended one after the
 * other; next.csv: the input of the append that follows each crash. */
static void inputs(void)
{
    test_dir_setup();
    SH_OK(GEN " --rows 3000 --seed 1 --newline-share 0.01 -o a.csv 2>/dev/null && "
          GEN " --rows 2000 --seed 2 --newline-share 0.01 -o b.csv 2>/dev/null && gzip b.csv && "
          GEN " --rows 1000 --seed 3 --crlf -o c.csv 2>/dev/null && "
          GEN " --rows 40 --seed 4 -o next.csv 2>/dev/null");
}

TestSuite(append, .init = inputs, .fini = test_dir_teardown, .timeout = 600);

/* Runs the command after the library; asserts exit 0, showing its output. */
#define OK(...) SH_OK(LIB __VA_ARGS__)

/* Runs the command after the library; asserts that its stdout is `want`. */
#define OUT_EQ(want, ...)                                                                                  \
    do {                                                                                                   \
        cmd_result r_ = sh(LIB __VA_ARGS__);                                                               \
        cr_assert_str_eq(r_.out, want, "exit %d\nstdout: %s\nstderr: %s", r_.rc, r_.out, r_.err);          \
        cmd_result_free(&r_);                                                                              \
    } while (0)

/* Runs the command after the library; asserts exit 0 and `needle` in its
 * stderr. */
#define OK_SAYING(needle, ...)                                                                             \
    do {                                                                                                   \
        cmd_result r_ = sh(LIB __VA_ARGS__);                                                               \
        cr_assert_eq(r_.rc, 0, "exit %d\nstdout: %s\nstderr: %s", r_.rc, r_.out, r_.err);                    \
        cr_assert(strstr(r_.err, needle), "'%s' not in:\n%s", needle, r_.err);                              \
        cmd_result_free(&r_);                                                                              \
    } while (0)

/* The rc and a needle in stderr of a command. */
static void expect_fail(int rc, const char *needle, const char *cmd)
{
    cmd_result r = sh(LIB "%s", cmd);
    cr_assert_eq(r.rc, rc, "%s: exit %d, want %d\n%s", cmd, r.rc, rc, r.err);
    cr_assert(strstr(r.err, needle), "%s: '%s' not in:\n%s", cmd, needle, r.err);
    cmd_result_free(&r);
}

/* ---- the rows: an append is one run, bucket by bucket ------------------- */

/* `bucket A; bucket --append B; bucket --append C` holds, bucket by bucket
 * (the base file, then each generation's segment, read by the README's
 * one-liner), the rows of `bucket A B C` in the same order, for gzip, zstd
 * and plain files; verify passes; compact makes each node's file the
 * concatenation of its parts byte for byte, which the independent checkers
 * accept (rows in the right buckets, in input order; RS member headers), and
 * the next append goes on from the compacted generation. */
Test(append, appends_hold_the_rows_of_one_run_for_each_compression)
{
    static const char *const compress[] = {"gzip", "zstd", "none"};
    for (int k = 0; k < 3; k++) {
        OK("rm -rf D R P && \"$RS\" bucket --quiet " RING " --compress %s -o D a.csv && "
           "\"$RS\" bucket --quiet --append -o D b.csv.gz && \"$RS\" bucket --quiet --append -o D c.csv && "
           "\"$RS\" bucket --quiet " RING " --compress %s -o R a.csv b.csv.gz c.csv && "
           "test -d D/g00000002 && test -d D/g00000003 && test ! -e D/g00000004 && same_rows D R && "
           "\"$RS\" verify --quiet D && cat_parts D P && "
           "\"$RS\" compact --quiet D && same_parts D P && same_rows D R && \"$RS\" verify --quiet D && "
           "grep -q '\"generation\": 3,' D/manifest.json",
           compress[k], compress[k]);
        if (k != 1)  /* the checker reads gzip and plain files */
            OK(CHECK_BUCKETS "D bill_id a.csv b.csv.gz c.csv -- --nodes 5 >/dev/null");
        if (k == 0)
            OK(CHECK_MEMBERS "D/*.csv.gz >/dev/null");
        OK("\"$RS\" bucket --quiet --append -o D next.csv && test -d D/g00000004 && "
           "\"$RS\" bucket --quiet " RING " --compress %s -o R2 a.csv b.csv.gz c.csv next.csv && same_rows D R2 && "
           "\"$RS\" verify --quiet D && rm -r R2",
           compress[k]);
    }
}

/* The same for directories of keys only, without a header, and of tab
 * separated values; the options are left out of the appends (taken from
 * the directory). */
Test(append, keys_only_no_header_and_tab_directories_take_appends)
{
    OK("awk 'BEGIN { print \"k\\tv\"; for (i = 0; i < 2000; i++) print \"t\" i \"\\tx\" i }' > t1.tsv && "
       "awk 'BEGIN { print \"k\\tv\"; for (i = 0; i < 1500; i++) print \"u\" i \"\\ty \" i }' > t2.tsv && "
       GEN " --rows 2000 --seed 5 --no-header -o h1.csv 2>/dev/null && "
       GEN " --rows 1000 --seed 6 --no-header -o h2.csv 2>/dev/null");
    static const struct {
        const char *opts, *in1, *in2;
    } v[] = {
        {"--keys-only --key bill_id --nodes 4", "a.csv", "b.csv.gz"},
        {"--no-header --nodes 4 --compress zstd --level 3", "h1.csv", "h2.csv"},
        {"--delimiter tab --key k --nodes 4 --compress none", "t1.tsv", "t2.tsv"},
    };
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++)
        OK("rm -rf D R P && \"$RS\" bucket --quiet %s -o D %s && \"$RS\" bucket --quiet --append -o D %s && "
           "\"$RS\" bucket --quiet %s -o R %s %s && test -d D/g00000002 && same_rows D R && "
           "\"$RS\" verify --quiet D && cat_parts D P && \"$RS\" compact --quiet D && same_parts D P && "
           "same_rows D R && \"$RS\" verify --quiet D",
           v[k].opts, v[k].in1, v[k].in2, v[k].opts, v[k].in1, v[k].in2);
}

/* Every reader reads every generation: plan --from-buckets (and --emit),
 * dedup --buckets and stats of an appended directory give what they give
 * for the directory one run wrote; the dedup output is the one Python
 * computes from the inputs in order. */
Test(append, readers_of_an_appended_directory_equal_those_of_one_run)
{
    OK("\"$RS\" bucket --quiet " RING " -o D a.csv && \"$RS\" bucket --quiet --append -o D b.csv.gz && "
       "\"$RS\" bucket --quiet --append -o D c.csv && \"$RS\" bucket --quiet " RING " -o R a.csv b.csv.gz c.csv");
    OK("\"$RS\" plan --quiet --from-buckets D --add 2 --emit MD > pd.txt 2> pd.err && "
       "\"$RS\" plan --quiet --from-buckets R --add 2 --emit MR > pr.txt 2> pr.err && "
       "same_content MD MR && cmp pd.txt pr.txt && \"$RS\" verify --quiet MD && "
       "test $(ls MD | wc -l) -gt 1");
    OK("\"$RS\" dedup --quiet --keep last --buckets D -o XD && \"$RS\" dedup --quiet --keep last --buckets R -o XR && "
       "same_content XD XR && " CHECK_DEDUP "XD last bill_id a.csv b.csv.gz c.csv > /dev/null");
    OK("\"$RS\" stats D > sd.txt && \"$RS\" stats R > sr.txt && "
       "grep -q '^source .*bucket directory D: 15 files in 3 generations, 6000 rows' sd.txt && "
       "sed 1d sd.txt > a.t && sed 1d sr.txt > b.t && cmp a.t b.t");
}

/* ---- inputs already ingested ---------------------------------------- */

/* The cron job run again: the same command adds nothing, exits 0 and
 * leaves DIR byte for byte; run again with one more input it adds that
 * one only. */
Test(append, running_an_append_again_adds_nothing)
{
    OK("\"$RS\" bucket --quiet " RING " --append -o D a.csv b.csv.gz && snap D raw > s1 && "
       "grep -q '\"schema\": 2,' D/manifest.json && grep -q '\"generation\": 1,' D/manifest.json");
    OK_SAYING("ringshard bucket: a.csv: already ingested by generation 1 (as a.csv): skipped\n"
              "ringshard bucket: b.csv.gz: already ingested by generation 1 (as b.csv.gz): skipped\n"
              "ringshard bucket: nothing new for D: 2 inputs already ingested\n",
              "\"$RS\" bucket " RING " --append -o D a.csv b.csv.gz && snap D raw | cmp - s1 && "
              "\"$RS\" bucket --quiet --append -o D b.csv.gz a.csv && snap D raw | cmp - s1");
    OK_SAYING("generation 2 of D: 1 input ingested, 2 skipped as already ingested",
              "\"$RS\" bucket " RING " --append -o D a.csv b.csv.gz c.csv && test ! -e D/g00000003 && "
              "\"$RS\" bucket --quiet " RING " -o R a.csv b.csv.gz c.csv && same_rows D R && "
              "\"$RS\" verify --quiet D");
}

/* By content, whatever the name: a renamed copy is skipped; two different
 * files with the same name (in two directories, or one file rewritten),
 * and one of the same size as an ingested one, are both ingested. */
Test(append, inputs_are_known_by_their_content_not_their_name)
{
    OK("\"$RS\" bucket --quiet " RING " -o D a.csv && cp a.csv renamed.csv && snap D raw > s1");
    OK_SAYING("renamed.csv: already ingested by generation 1 (as a.csv): skipped",
              "\"$RS\" bucket --append -o D renamed.csv && snap D raw | cmp - s1");
    /* day1/in.csv and day2/in.csv; then in.csv rewritten; then c.csv with
     * one byte changed (the same size: only the checksum tells) */
    OK("mkdir day1 day2 && " GEN " --rows 500 --seed 7 -o day1/in.csv 2>/dev/null && "
       GEN " --rows 500 --seed 8 -o day2/in.csv 2>/dev/null && "
       "\"$RS\" bucket --quiet --append -o D day1/in.csv && \"$RS\" bucket --quiet --append -o D day2/in.csv && "
       "cp c.csv in.csv && \"$RS\" bucket --quiet --append -o D in.csv && "
       GEN " --rows 800 --seed 9 -o in.csv 2>/dev/null && \"$RS\" bucket --quiet --append -o D in.csv && "
       "sed '2s/,USD,/,EUR,/; 2s/,CNY,/,EUR,/; 2s/,JPY,/,EUR,/' c.csv > c2.csv && ! cmp -s c.csv c2.csv && "
       "test $(wc -c < c.csv) = $(wc -c < c2.csv) && \"$RS\" bucket --quiet --append -o D c2.csv && "
       "test -d D/g00000006 && "
       "\"$RS\" bucket --quiet " RING " -o R a.csv day1/in.csv day2/in.csv c.csv in.csv c2.csv && same_rows D R && "
       "\"$RS\" verify --quiet D");
}

/* By content once decompressed: the same CSV gzipped again (-n, or with
 * another name and time in its gzip header), compressed with zstd, or
 * plain after its gzip was ingested, is skipped, DIR left byte for byte;
 * --on-seen fail refuses it (73), again ingests it; a different file of
 * the same content size, compressed, is ingested. Each input's content
 * checksum is in the manifest. */
Test(append, a_copy_compressed_otherwise_is_the_same_input)
{
    OK("gzip -n -c a.csv > a1.csv.gz && cp a.csv x.csv && touch -d '2001-01-01' x.csv && gzip -c x.csv > a2.csv.gz && "
       "! cmp -s a1.csv.gz a2.csv.gz && zstd -q -c a.csv > a3.csv.zst && "
       "\"$RS\" bucket --quiet " RING " --append -o D a1.csv.gz && snap D raw > s1 && "
       "grep -q '\"content\": \"crc64:' D/manifest.json && grep -q '\"content_size\": '$(wc -c < a.csv) D/manifest.json");
    OK_SAYING("ringshard bucket: a2.csv.gz: already ingested by generation 1 (as a1.csv.gz: the same content once "
              "decompressed): skipped\n"
              "ringshard bucket: a3.csv.zst: already ingested by generation 1 (as a1.csv.gz: the same content once "
              "decompressed): skipped\n"
              "ringshard bucket: a.csv: already ingested by generation 1 (as a1.csv.gz: the same content once "
              "decompressed): skipped\n",
              "\"$RS\" bucket --append -o D a2.csv.gz a3.csv.zst a.csv && snap D raw | cmp - s1");
    expect_fail(73, "a2.csv.gz: already ingested by generation 1 (as a1.csv.gz: the same content once decompressed) "
                    "(--on-seen fail); nothing written",
                "\"$RS\" bucket --append --on-seen fail -o D a2.csv.gz");
    /* within one run: the later copy is skipped */
    OK_SAYING("ringshard bucket: a2.csv.gz: the same content as a.csv, earlier in this run: skipped\n",
              "\"$RS\" bucket " RING " --append -o N a.csv a2.csv.gz && test $(grep -c '\"path\"' N/manifest.json) = 1");
    /* a pipe of the same content, zstd-compressed on the way (no size in
     * its frame): known once read, and its rows not published */
    OK_SAYING("standard input: already ingested by generation 1 (as a1.csv.gz: the same content once decompressed): "
              "skipped", "zstd -q -c a.csv | \"$RS\" bucket --append -o D - && snap D raw | cmp - s1");
    /* one byte changed, the same size: read to know, and ingested */
    OK("snap D raw | cmp - s1 && sed '2s/,USD,/,EUR,/; 2s/,CNY,/,EUR,/; 2s/,JPY,/,EUR,/' a.csv > d.csv && "
       "! cmp -s a.csv d.csv && test $(wc -c < a.csv) = $(wc -c < d.csv) && gzip -n d.csv && "
       "\"$RS\" bucket --quiet --append -o D d.csv.gz && test -d D/g00000002 && "
       "\"$RS\" bucket --quiet --append --on-seen again -o D a3.csv.zst && test -d D/g00000003 && "
       "\"$RS\" bucket --quiet " RING " -o R a.csv d.csv.gz a.csv && same_rows D R && \"$RS\" verify --quiet D");
}

/* --on-seen fail: exit 73 naming the input and the generation, nothing
 * written (not even the new input beside it); --on-seen again: ingested
 * once more. */
Test(append, on_seen_fail_writes_nothing_and_again_ingests_again)
{
    OK("\"$RS\" bucket --quiet " RING " -o D a.csv && snap D raw > s1");
    expect_fail(73, "ringshard bucket: a.csv: already ingested by generation 1 (as a.csv) (--on-seen fail); "
                    "nothing written",
                "\"$RS\" bucket --append --on-seen fail -o D c.csv a.csv");
    OK("snap D raw | cmp - s1 && test $(litter D) = 0 && "
       "\"$RS\" bucket --quiet --append --on-seen again -o D a.csv && "
       "\"$RS\" bucket --quiet " RING " -o R a.csv a.csv && same_rows D R && \"$RS\" verify --quiet D");
}

/* The same content twice in one command: once, with a note, into a new
 * directory or an existing one; fail and again as above. */
Test(append, the_same_content_twice_in_one_command)
{
    OK("cp b.csv.gz b2.csv.gz");
    OK_SAYING("b2.csv.gz: the same content as b.csv.gz, earlier in this run: skipped",
              "\"$RS\" bucket " RING " --append -o N a.csv b.csv.gz b2.csv.gz && "
              "\"$RS\" bucket --quiet " RING " -o R a.csv b.csv.gz && same_rows N R && rm -r R");
    OK("cp c.csv c2.csv && \"$RS\" bucket --quiet " RING " -o D a.csv && snap D raw > s1");
    expect_fail(73, "c2.csv: the same content as c.csv, earlier in this run (--on-seen fail); nothing written",
                "\"$RS\" bucket --append --on-seen fail -o D c.csv c2.csv");
    OK("snap D raw | cmp - s1 && \"$RS\" bucket --quiet --append -o D c.csv c2.csv && "
       "\"$RS\" bucket --quiet " RING " -o R a.csv c.csv && same_rows D R && rm -r R && "
       "\"$RS\" bucket --quiet --append --on-seen again -o D next.csv next.csv && "
       "\"$RS\" bucket --quiet " RING " -o R a.csv c.csv next.csv next.csv && same_rows D R");
}

/* A pipe is read once: content already ingested is known once read, and
 * skipped (its rows not published: the run is done again without it) or
 * refused (--on-seen fail, exit 73, nothing published); content first
 * ingested through a pipe is known when it comes again as a file. */
Test(append, a_pipe_of_content_already_ingested)
{
    OK("\"$RS\" bucket --quiet " RING " -o D a.csv && snap D raw > s1");
    OK_SAYING("standard input: already ingested by generation 1 (as a.csv): skipped",
              "cat a.csv | \"$RS\" bucket --append -o D - && snap D raw | cmp - s1");
    expect_fail(73, "standard input: already ingested by generation 1 (as a.csv) (--on-seen fail); nothing written",
                "cat a.csv | \"$RS\" bucket --quiet --append --on-seen fail -o D -");
    OK("snap D raw | cmp - s1 && test $(litter D) = 0 && "
       "gzip -dc b.csv.gz | \"$RS\" bucket --quiet --append -o D - && test -d D/g00000002");
    OK_SAYING("b.csv: already ingested by generation 2 (as -): skipped",
              "gzip -dc b.csv.gz > b.csv && \"$RS\" bucket --append -o D b.csv && "
              "test ! -e D/g00000003 && \"$RS\" bucket --quiet " RING " -o R a.csv b.csv && "
              "same_rows D R && \"$RS\" verify --quiet D");
    OK("cat c.csv | \"$RS\" bucket --quiet --append --on-seen again -o D - && "
       "cat c.csv | \"$RS\" bucket --quiet --append --on-seen again -o D - && "
       "\"$RS\" bucket --quiet " RING " -o R2 a.csv b.csv c.csv c.csv && same_rows D R2 && snap D raw > s2");
    /* a pipe and a file of the same content in one command, to DIR or to
     * the DIR it creates: the pipe is the one dropped (the file can be
     * read again), whatever their order */
    OK_SAYING("standard input: the same content as next.csv, earlier in this run: skipped",
              "cat next.csv | \"$RS\" bucket --append -o D next.csv - && test -d D/g00000005 && "
              "test ! -e D/g00000006 && grep -q '\"path\": \"next.csv\"' D/g00000005/manifest.json && "
              "test $(grep -c '\"path\"' D/g00000005/manifest.json) = 1");
    OK_SAYING("standard input: the same content as next.csv, later in this run: skipped",
              "cat next.csv | \"$RS\" bucket --append " RING " -o N - next.csv && "
              "test $(grep -c '\"path\"' N/manifest.json) = 1 && test $(litter N) = 0 && "
              "\"$RS\" bucket --quiet " RING " -o R3 next.csv && same_rows N R3 && rm -r N");
    OK("cat next.csv | \"$RS\" bucket --quiet --append --on-seen again " RING " -o N - next.csv && "
       "\"$RS\" bucket --quiet " RING " -o R4 next.csv next.csv && same_rows N R4");
}

/* ---- what shapes the files must be the directory's ------------------ */

/* Each option that shapes the files, given with another value than DIR's:
 * exit 64 naming the option and both values, DIR byte for byte as it was,
 * nothing left beside it. The same values given explicitly are taken. */
Test(append, each_mismatched_shaping_option_is_refused)
{
    OK("\"$RS\" bucket --quiet " RING " -o D a.csv && snap D raw > s1 && "
       "\"$RS\" bucket --quiet --key bill_id --compress zstd --level 3 --nodes 5 -o Z a.csv && snap Z raw > z1 && "
       "\"$RS\" bucket --quiet --no-header --nodes 5 -o H next.csv && snap H raw > h1");
    static const struct {
        const char *dir, *opts, *n1;
    } v[] = {
        {"D", "--key user_id", "--key: 'user_id' here, D/manifest.json says 'bill_id'"},
        {"D", "--delimiter ';'", "--delimiter: ';' here, D/manifest.json says ','"},
        {"D", "--delimiter tab", "--delimiter: tab here, D/manifest.json says ','"},
        {"D", "--no-header", "--no-header: no header here, D/manifest.json says a header"},
        {"H", "--header", "--header: a header here, H/manifest.json says no header"},
        {"D", "--compress zstd", "--compress: zstd here, D/manifest.json says gzip"},
        {"D", "--compress none", "--compress: none here, D/manifest.json says gzip"},
        {"Z", "--compress gzip", "--compress: gzip here, Z/manifest.json says zstd"},
        {"D", "--level 6", "--level: 6 here, D/manifest.json says 1"},
        {"Z", "--level 5", "--level: 5 here, Z/manifest.json says 3"},
        {"D", "--keys-only", "--keys-only: keys only here, D/manifest.json says whole rows"},
        /* the ring: the first thing its description says differently,
         * and both fingerprints (checked below) */
        {"D", "--nodes 6", "--nodes: '6' here, D/manifest.json says '5' (the ring's fingerprint "},
        {"D", "--vnodes 100", "--vnodes: '100' here, D/manifest.json says '200' (the ring's fingerprint "},
        {"D", "--nodes 5 --scheme jump", "--scheme: 'jump' here, D/manifest.json says 'ring' (the ring's "},
        {"D", "--nodes 5 --seed 7", "--seed: '7' here, D/manifest.json says '0' (the ring's fingerprint "},
        {"D", "--nodes 5 --hash murmur3_32", "--hash: 'murmur3_32' here, D/manifest.json says 'murmur3_128' ("},
        {"D", "--nodes 5 --down 2", "the node list (--nodes, --nodes-file, --down): a node: '1 down 2' here, "
                                    "D/manifest.json says '1 up 2' (the ring's fingerprint "},
    };
    cmd_result fp = sh("sed -n 's/.*\"fingerprint\": \"\\(.*\\)\".*/\\1/p' D/manifest.json");
    cr_assert_eq(strlen(fp.out), 33, "%s", fp.out);
    fp.out[32] = '\0';
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
        const char *input = v[k].dir[0] == 'H' ? "c.csv" : "b.csv.gz";
        cmd_result r = sh(LIB "\"$RS\" bucket --append %s -o %s %s", v[k].opts, v[k].dir, input);
        cr_assert_eq(r.rc, 64, "%s: exit %d\n%s", v[k].opts, r.rc, r.err);
        cr_assert(strstr(r.err, v[k].n1), "%s: '%s' not in %s", v[k].opts, v[k].n1, r.err);
        if (strstr(v[k].n1, "' (")) {
            /* both fingerprints: that of the ring the options make, DIR's */
            cmd_result o = sh("rm -rf O && \"$RS\" bucket --quiet --key bill_id %s -o O next.csv && "
                              "sed -n 's/.*\"fingerprint\": \"\\(.*\\)\".*/\\1/p' O/manifest.json",
                              v[k].opts);
            cr_assert_eq(o.rc, 0, "%s", o.err);
            o.out[strcspn(o.out, "\n")] = '\0';
            char want[128];
            snprintf(want, sizeof want, "fingerprint %s here, %s there)", o.out, fp.out);
            cr_assert(strlen(o.out) == 32 && strstr(r.err, want), "%s: '%s' not in %s", v[k].opts, want, r.err);
            cmd_result_free(&o);
        }
        cmd_result_free(&r);
        OK("snap D raw | cmp - s1 && snap Z raw | cmp - z1 && snap H raw | cmp - h1 && "
           "test $(litter D) = 0 && test $(litter Z) = 0 && test $(litter H) = 0");
    }
    cmd_result_free(&fp);
    /* an input whose header is not DIR's */
    expect_fail(2, "other.csv: line 1: header differs from the header of D/manifest.json: field 2 is 'USER_ID', "
                    "D/manifest.json has 'user_id'",
                "sed '1s/user_id/USER_ID/' c.csv > other.csv && \"$RS\" bucket --append -o D other.csv");
    expect_fail(64, "--append adds to DIR, --force replaces it: give one of them",
                "\"$RS\" bucket --append --force -o D b.csv.gz");
    OK("snap D raw | cmp - s1 && test $(litter D) = 0");
    /* the directory's own values, given, are taken */
    OK("\"$RS\" bucket --quiet --append --key bill_id --nodes 5 --delimiter , --header --compress gzip --level 1 "
       "-o D b.csv.gz && \"$RS\" bucket --quiet --append --compress zstd --level 3 -o Z b.csv.gz && "
       "\"$RS\" bucket --quiet --append --no-header -o H c.csv && test -d D/g00000002 && test -d Z/g00000002 && "
       "test -d H/g00000002 && \"$RS\" verify --quiet D && \"$RS\" verify --quiet Z && \"$RS\" verify --quiet H");
}

/* A composite key joined by another --key-sep than '|': the manifest
 * records the separator, so that an append that leaves it out places the
 * rows as the directory's first run did (before, they were joined by '|',
 * silently in other buckets), another one is refused, and verify, dedup
 * --buckets and plan --from-buckets read the keys as they were written
 * (before, verify found most rows "in another node"). The default leaves
 * the manifest as it was. */
Test(append, a_composite_key_keeps_its_separator)
{
    OK("\"$RS\" bucket --quiet --key bill_id,user_id --key-sep ';' --nodes 5 -o K a.csv && "
       "grep -q '\"key_sep\": \";\",' K/manifest.json && \"$RS\" verify --quiet K && "
       "\"$RS\" bucket --quiet --append -o K b.csv.gz && "
       "\"$RS\" bucket --quiet --key bill_id,user_id --key-sep ';' --nodes 5 -o R a.csv b.csv.gz && same_rows K R && "
       "\"$RS\" verify --quiet K && snap K raw > k1 && "
       "\"$RS\" dedup --quiet --buckets K -o X && \"$RS\" verify --quiet X && "
       "\"$RS\" dedup --quiet --buckets R -o XR && same_content X XR && "
       "\"$RS\" plan --quiet --from-buckets K --add 1 --emit M && \"$RS\" verify --quiet M && "
       "\"$RS\" bucket --quiet --key bill_id,user_id --nodes 5 -o P a.csv && ! grep -q key_sep P/manifest.json");
    expect_fail(64, "--key-sep: '|' here, K/manifest.json says ';'", "\"$RS\" bucket --append --key-sep '|' -o K c.csv");
    OK("snap K raw | cmp - k1 && \"$RS\" bucket --quiet --append --key-sep ';' -o K c.csv && test -d K/g00000003");
}

/* ---- crashes: the old generation or the new one, never anything else ---- */

/* The system calls a publication makes (and compact's copies: pwrite64
 * checked, copy_file_range with --no-check). */
#define PUBLISH_SYSCALLS                                                                                  \
    "mkdir renameat2 renameat rename fsync fdatasync sync_file_range unlinkat unlink rmdir flock copy_file_range " \
    "pwrite64"

/* Puts D back as the state before a run (B; none when there is no B). */
#define RESTORE "rm -rf D D.ringshard-*; if [ -e B ]; then cp -a B D; fi"

/* The append after a kill (D's ring; creates D when the killed run was to). */
#define NEXT "'\"$RS\" bucket --quiet -j 1 --append --key bill_id --nodes 2 -o D next.csv'"

/* tests/kill_sweep.py for a command that turns state `before` (made by
 * `prepare` in B, then copied to D for each run) into a new one, killed at
 * each pause point and at each call of each publishing system call;
 * `upgraded`: the publication first upgrades a schema-1 manifest. Returns
 * the sweep's summary line (malloc'd). */
static char *crash_everywhere(const char *prepare, const char *cmd, const char *points, int upgraded)
{
    OK("rm -rf B D && %s", prepare);
    cmd_result r = sh(KILL_SWEEP "D --setup '" RESTORE "' --cmd '%s' --points '%s' --syscalls '" PUBLISH_SYSCALLS
                                 "' --next " NEXT " %s",
                      cmd, points, upgraded ? "--upgraded" : "");
    cr_assert_eq(r.rc, 0, "%s: killed at a pause point or a system call: %s\n%s", cmd, r.out, r.err);
    char *line = strdup(r.out);
    cmd_result_free(&r);
    return line;
}

/* Every system call the sweep line `s` lists was called at least once. */
static int all_called(const char *s)
{
    const char *calls = strstr(s, " calls:");
    return calls && !strstr(calls, "=0");
}

/* An append to a schema-2 directory, and one that upgrades a schema-1
 * directory: SIGKILL at each call of each publishing system call, and at
 * each pause point, leaves the old generation or the new one (or, between
 * the two renames of an upgrade, the old one under its upgraded
 * manifest), verify passes and the next append works. */
Test(append, sigkill_at_every_publishing_call_of_an_append)
{
    RELEASE_SUITE_ONLY();
    char *s = crash_everywhere("\"$RS\" bucket --quiet --append --key bill_id --nodes 2 -o B c.csv",
                               "\"$RS\" bucket --quiet -j 1 --append -o D a.csv b.csv.gz",
                               "dir-open begun batch_written publish published", 0);
    /* both states were seen, and the publishing calls were made */
    cr_assert(strstr(s, " old=") && !strstr(s, " old=0 ") && !strstr(s, " new=0 ") && strstr(s, " upgraded=0 "),
              "%s", s);
    cr_assert(!strstr(s, " mkdir=0") && !strstr(s, " renameat2=0") && !strstr(s, " fsync=0") &&
                  !strstr(s, " flock=0"), "%s", s);
    free(s);
    s = crash_everywhere("\"$RS\" bucket --quiet --key bill_id --nodes 2 -o B c.csv",
                         "\"$RS\" bucket --quiet -j 1 --append -o D a.csv b.csv.gz",
                         "begun publish upgraded published", 1);
    cr_assert(!strstr(s, " old=0 ") && !strstr(s, " new=0 ") && !strstr(s, " upgraded=0 ") &&
                  !strstr(s, " renameat=0"), "%s", s);
    free(s);
}

/* The first append of all, which creates DIR: killed anywhere, there is
 * no DIR or a complete one. */
Test(append, sigkill_at_every_publishing_call_of_the_append_that_creates_dir)
{
    RELEASE_SUITE_ONLY();
    char *s = crash_everywhere("true", "\"$RS\" bucket --quiet -j 1 --append --key bill_id --nodes 2 -o D c.csv",
                               "begun batch_written publish published", 0);
    cr_assert(!strstr(s, " old=0 ") && !strstr(s, " new=0 "), "%s", s);
    free(s);
}

/* compact: killed anywhere, DIR is the appended one or the compacted one,
 * verify passes, and the next append goes on from either; without the
 * exchange, killed between its two renames, the next append restores
 * DIR. */
Test(append, sigkill_at_every_publishing_call_of_compact)
{
    RELEASE_SUITE_ONLY();
    char *s = crash_everywhere("\"$RS\" bucket --quiet --key bill_id --nodes 2 -o B c.csv && "
                               "\"$RS\" bucket --quiet --append -o B a.csv && "
                               "\"$RS\" bucket --quiet --append -o B b.csv.gz",
                               "\"$RS\" compact --quiet D", "dir-open begun publish published", 0);
    cr_assert(!strstr(s, " old=0 ") && !strstr(s, " new=0 ") && !strstr(s, " pwrite64=0") &&
                  !strstr(s, " renameat2=0"), "%s", s);
    free(s);
    /* where the file system cannot exchange two directories, a kill
     * between the two renames leaves no DIR: the next append puts the
     * appended DIR back, then appends to it */
    OK("rm -rf D && cp -a B D && RINGSHARD_TEST_NO_EXCHANGE=1 RINGSHARD_TEST_PAUSE_AT=old "
       "\"$RS\" compact --quiet D > /dev/null 2>&1 & p=$!; wait_stopped $p 'compact between its renames' || exit 1; "
       "kill -9 $p; wait $p; test ! -e D && ls -d D.ringshard-old.* > /dev/null && "
       "\"$RS\" bucket --quiet --append --key bill_id --nodes 2 -o D next.csv 2> restore.err && "
       "grep -q 'restored from D.ringshard-old.' restore.err && test -d D/g00000004 && "
       "\"$RS\" bucket --quiet --key bill_id --nodes 2 -o R c.csv a.csv b.csv.gz next.csv && same_rows D R && "
       "\"$RS\" verify --quiet D && test $(litter D) = 0");
}

/* A publishing system call that fails (EIO, ENOSPC: strace fault
 * injection at each call, as above): exit 1, DIR as it was (or, for the
 * fsync after the rename, published and said not durable; for the rename
 * of the generation after an upgrade's, the old rows under the upgraded
 * manifest), nothing left beside it; for an append and for compact. */
Test(append, a_failed_publishing_call_leaves_dir_as_it_was)
{
    OK("\"$RS\" bucket --quiet --key bill_id --nodes 2 -o B c.csv");
    cmd_result r = sh(KILL_SWEEP "D --setup '" RESTORE "' --cmd '\"$RS\" bucket --quiet -j 1 --append -o D a.csv' "
                                 "--error EIO --upgraded --next " NEXT " --syscalls 'mkdir renameat2 renameat fsync flock'");
    cr_assert_eq(r.rc, 0, "%s%s", r.out, r.err);
    cr_assert(!strstr(r.out, " old=0 ") && strstr(r.out, " new=1 upgraded=1 calls:") && all_called(r.out), "%s",
              r.out);
    cmd_result_free(&r);
    OK("rm -rf B D && \"$RS\" bucket --quiet --key bill_id --nodes 2 -o B c.csv && "
       "\"$RS\" bucket --quiet --append -o B a.csv && \"$RS\" bucket --quiet --append -o B b.csv.gz");
    r = sh(KILL_SWEEP "D --setup '" RESTORE "' --cmd '\"$RS\" compact --quiet D' --error ENOSPC --next " NEXT
                      " --syscalls 'mkdir renameat2 fsync flock pwrite64'");
    cr_assert_eq(r.rc, 0, "%s%s", r.out, r.err);
    cr_assert(!strstr(r.out, " old=0 ") && strstr(r.out, " new=1 upgraded=0 calls:") && all_called(r.out), "%s",
              r.out);
    cmd_result_free(&r);
}

/* ^C (SIGINT) at each pause point: before the publication, exit 130 and
 * the old generation, nothing left beside DIR; once the publication has
 * begun (an upgrade renamed in, the generation renamed in), the run
 * finishes it and exits 0. For an append that upgrades a schema-1 DIR and
 * for compact. */
Test(append, an_interrupt_publishes_all_or_nothing)
{
    OK("\"$RS\" bucket --quiet --key bill_id --nodes 2 -o B c.csv");
    cmd_result r = sh(KILL_SWEEP "D --setup '" RESTORE "' --cmd '\"$RS\" bucket --quiet -j 1 --append -o D a.csv' "
                                 "--upgraded --interrupt --points 'dir-open begun batch_written publish upgraded published'");
    cr_assert_eq(r.rc, 0, "%s%s", r.out, r.err);
    cr_assert(strstr(r.out, "dir-open:130:old begun:130:old batch_written:130:old publish:130:old upgraded:0:new "
                            "published:0:new kills=") == r.out, "%s", r.out);
    cmd_result_free(&r);
    OK("rm -rf B D && \"$RS\" bucket --quiet --key bill_id --nodes 2 -o B c.csv && "
       "\"$RS\" bucket --quiet --append -o B a.csv && \"$RS\" bucket --quiet --append -o B b.csv.gz");
    r = sh(KILL_SWEEP "D --setup '" RESTORE "' --cmd '\"$RS\" compact --quiet D' --interrupt "
                      "--points 'dir-open begun publish published'");
    cr_assert_eq(r.rc, 0, "%s%s", r.out, r.err);
    cr_assert(strstr(r.out, "dir-open:130:old begun:130:old publish:130:old published:0:new kills=") == r.out, "%s",
              r.out);
    cmd_result_free(&r);
}

/* ---- concurrency ------------------------------------------------------ */

/* Two appends of different inputs at once, 20 times: one waits for the
 * other (DIR's writer lock), nothing is lost or doubled, the generations are
 * 2..41 with no gap, verify passes, nothing is left beside DIR. Then two
 * appends that both find no DIR: one creates it, the other appends. */
Test(append, two_appends_at_once_lose_nothing)
{
    OK("i=0; while [ $i -lt 40 ]; do i=$((i+1)); "
       "awk -v i=$i 'BEGIN { print \"id,v\"; for (r = 0; r < 150; r++) print \"r\" i \"_\" r \",\" r }' > in$i.csv; "
       "done && printf 'id,v\\nbase,0\\n' > base.csv && \"$RS\" bucket --quiet --nodes 3 -o D base.csv");
    OK("r=0; while [ $r -lt 20 ]; do r=$((r+1)); "
       "\"$RS\" bucket --quiet --append -o D in$((2*r-1)).csv 2> e1 & p1=$!; "
       "\"$RS\" bucket --quiet --append -o D in$((2*r)).csv 2> e2 & p2=$!; "
       "wait $p1 || { cat e1; exit 1; }; wait $p2 || { cat e2; exit 1; }; done; "
       "test \"$(ls D | grep '^g' | tr '\\n' ' ')\" = \"$(seq -f 'g%%08g' 2 41 | tr '\\n' ' ')\" && "
       "for f in 0 1 2; do one_bucket D $f.csv.gz; done | grep '^r' | LC_ALL=C sort > got && "
       "cat in*.csv | grep '^r' | LC_ALL=C sort > want && cmp got want && test $(wc -l < got) = 6000 && "
       "\"$RS\" verify --quiet D && test $(litter D) = 0");
    OK("r=0; while [ $r -lt 10 ]; do r=$((r+1)); rm -rf N; "
       "\"$RS\" bucket --quiet --nodes 3 --append -o N in1.csv 2> e1 & p1=$!; "
       "\"$RS\" bucket --quiet --nodes 3 --append -o N in2.csv 2> e2 & p2=$!; "
       "wait $p1 || { cat e1; exit 1; }; wait $p2 || { cat e2; exit 1; }; "
       "test -d N/g00000002 && test ! -e N/g00000003 && "
       "for f in 0 1 2; do one_bucket N $f.csv.gz; done | grep -c '^r' | grep -qx 300 && "
       "\"$RS\" verify --quiet N && test $(litter N) = 0 || exit 1; done");
}

/* A writer that holds DIR's lock (stopped just before its publication):
 * an append waits for it, saying so, then adds its generation after the
 * first one's; a compaction that replaces DIR while an append waits: the
 * append goes on from the compacted DIR. */
Test(append, an_append_waits_for_the_writer_before_it)
{
    static const char *const first[] = {"\"$RS\" bucket --quiet --append -o D b.csv.gz", "\"$RS\" compact --quiet D"};
    for (int k = 0; k < 2; k++) {
        OK("rm -rf D R && \"$RS\" bucket --quiet " RING " -o D a.csv && \"$RS\" bucket --quiet --append -o D next.csv && "
           "RINGSHARD_TEST_PAUSE_AT=publish %s > /dev/null 2> e1 & p1=$!; "
           "wait_stopped $p1 'the first writer to stop before its publication' || exit 1; "
           "\"$RS\" bucket --quiet --append -o D c.csv 2> e2 & p2=$!; "
           "wait_for 'the append to wait' \"grep -q 'D: another run is writing it; waiting for it to finish' e2\" "
           "|| { kill -9 $p1 $p2; exit 1; }; ! is_gone $p2 && kill -CONT $p1 && wait $p1 && wait $p2 && "
           "\"$RS\" verify --quiet D && test $(litter D) = 0",
           first[k]);
        if (k == 0)  /* the first writer's generation, then the waiting one's */
            OK("test -d D/g00000004 && test ! -e D/g00000005 && "
               "\"$RS\" bucket --quiet " RING " -o R a.csv next.csv b.csv.gz c.csv && same_rows D R");
        else  /* the compacted generation 2, then the waiting append's */
            OK("test -d D/g00000003 && test ! -e D/g00000002 && test ! -e D/g00000004 && "
               "\"$RS\" bucket --quiet " RING " -o R a.csv next.csv c.csv && same_rows D R");
    }
}

/* A --force run and an append at once, 10 times: each round leaves the
 * --force run's rows, with or without the append's generation after them
 * (as the two took turns), never the old rows, always complete. */
Test(append, a_force_run_racing_an_append)
{
    OK("r=0; while [ $r -lt 10 ]; do r=$((r+1)); rm -rf D; \"$RS\" bucket --quiet " RING " -o D a.csv || exit 1; "
       "\"$RS\" bucket --quiet " RING " --force -o D c.csv 2> e1 & p1=$!; "
       "\"$RS\" bucket --quiet --append -o D next.csv 2> e2 & p2=$!; "
       "wait $p1 || { cat e1; exit 1; }; wait $p2 || { cat e2; exit 1; }; "
       "\"$RS\" verify --quiet D && test $(litter D) = 0 && rm -rf R && "
       "if [ -e D/g00000002 ]; then \"$RS\" bucket --quiet " RING " -o R c.csv next.csv; "
       "else \"$RS\" bucket --quiet " RING " -o R c.csv; fi && same_rows D R || exit 1; done");
}

/* Readers that opened DIR finish on the generations they read while 10
 * appends publish newer ones: verify, plan --from-buckets --emit, dedup
 * --buckets and stats, each held just after reading the manifests
 * (RINGSHARD_TEST_HOLD_DIR), exit 0 with what they give for a copy of
 * DIR made before the appends. */
Test(append, readers_finish_on_the_generation_they_opened)
{
    OK("\"$RS\" bucket --quiet " RING " -o D a.csv && \"$RS\" bucket --quiet --append -o D b.csv.gz && "
       "cp -a D D0 && i=0; while [ $i -lt 10 ]; do i=$((i+1)); "
       "awk -v i=$i 'BEGIN { print \"bill_id,x\"; for (r = 0; r < 100; r++) print \"new\" i \"_\" r \",\" r }' "
       "| sed '1s/.*/'\"$(head -n 1 a.csv)\"'/; 2,$s/$/,0,USD,2024-01-01T00:00:00Z,m,n/' > n$i.csv; done && "
       "\"$RS\" verify D0 | sed 's/D0/D/g' > v.want && "
       "\"$RS\" plan --quiet --from-buckets D0 --add 1 --emit M0 && \"$RS\" dedup --quiet --buckets D0 -o X0 && "
       "\"$RS\" stats D0 | sed 's/D0/D/g' > s.want");
    OK("hold() { h=$1; shift; RINGSHARD_TEST_HOLD_DIR=$PWD/hold.$h \"$@\" > out.$h 2> err.$h; echo $? > rc.$h; }; "
       "hold verify \"$RS\" verify D & hold plan \"$RS\" plan --quiet --from-buckets D --add 1 --emit M & "
       "hold dedup \"$RS\" dedup --quiet --buckets D -o X & hold stats \"$RS\" stats D & "
       "for r in verify plan dedup stats; do wait_for \"$r to hold\" \"[ -e hold.$r ]\" || exit 124; done; "
       "i=0; while [ $i -lt 10 ]; do i=$((i+1)); \"$RS\" bucket --quiet --append -o D n$i.csv || exit 1; done; "
       "test -d D/g00000012 && rm hold.verify hold.plan hold.dedup hold.stats && wait && "
       "for r in verify plan dedup stats; do [ $(cat rc.$r) = 0 ] || { echo $r: exit $(cat rc.$r); cat err.$r; "
       "exit 1; }; done; cmp out.verify v.want && cmp out.stats s.want && same_content M M0 && "
       "same_content X X0 && ! one_bucket X 0.csv.gz | grep -q ^new");
    OK("\"$RS\" verify --quiet D");
}

/* ---- resume ----------------------------------------------------------- */

/* A --commit-every job killed between two generations (before the 2nd or
 * the 3rd publication, or mid-chunk at the first batch) and run again by
 * the same command ends as the uninterrupted run: the same files, the
 * same manifests (but their wall time and so the digests chained), one
 * generation per chunk; the run that resumes says what it skipped. */
Test(append, a_killed_commit_every_job_resumed_equals_an_uninterrupted_run)
{
    OK("i=0; while [ $i -lt 6 ]; do i=$((i+1)); "
       "awk -v i=$i 'BEGIN { print \"id,v\"; for (r = 0; r < 300; r++) print \"c\" i \"_\" r \",\" r }' > i$i.csv; "
       "done");
#define JOB(every) "\"$RS\" bucket --quiet -j 1 --nodes 4 --append --commit-every " every " -o D i1.csv i2.csv " \
                   "i3.csv i4.csv i5.csv i6.csv"
    static const char *const every[] = {"2", "5K"};
    for (int e = 0; e < 2; e++) {
        char job[256];
        snprintf(job, sizeof job, JOB("%s"), every[e]);
        OK("rm -rf D && %s && ls D | grep -c ^g | grep -qx 2 && snap D '\"previous\"' > u.snap && "
           "\"$RS\" bucket --quiet --nodes 4 -o R i1.csv i2.csv i3.csv i4.csv i5.csv i6.csv && same_rows D R && "
           "rm -r R",
           job);
        /* killed before the publication of the 2nd and of the 3rd generation */
        for (int k = 2; k <= 3; k++) {
            cmd_result r = sh(LIB "rm -rf D && strace -f -qq -o /dev/null -e trace=renameat2 "
                                  "-e inject=renameat2:signal=SIGKILL:when=%d %s; echo rc=$?; "
                                  "ls D | grep -c ^g || true",
                              k, job);
            char want[32];
            snprintf(want, sizeof want, "rc=137\n%d\n", k - 2);
            cr_assert_str_eq(r.out, want, "killed before publication %d: %s", k, r.err);
            cmd_result_free(&r);
            /* the same command again */
            r = sh(LIB "%s && snap D '\"previous\"' | cmp - u.snap && \"$RS\" verify --quiet D && "
                       "test $(litter D) = 0",
                   job);
            cr_assert_eq(r.rc, 0, "resumed after a kill before publication %d: %s", k, r.err);
            cmd_result_free(&r);
        }
        /* killed mid-chunk (the first batch written), and after the first
         * publication: the same again */
        OK("for pt in batch_written published; do rm -rf D; RINGSHARD_TEST_PAUSE_AT=$pt %s > /dev/null 2>&1 & p=$!; "
           "wait_stopped $p \"the job to stop at $pt\" || exit 1; kill -9 $p; wait $p; "
           "%s && snap D '\"previous\"' | cmp - u.snap && \"$RS\" verify --quiet D && test $(litter D) = 0 || exit 1; "
           "done",
           job, job);
    }
    /* what the resumed run says */
    OK_SAYING("generations 2-3 (2) of D: 4 inputs ingested, 2 skipped as already ingested",
              "rm -rf D && strace -f -qq -o /dev/null -e trace=renameat2 "
              "-e inject=renameat2:signal=SIGKILL:when=2 " JOB("2") "; "
              "\"$RS\" bucket -j 1 --nodes 4 --append --commit-every 2 -o D i1.csv i2.csv i3.csv i4.csv "
              "i5.csv i6.csv");
}

/* ---- schema 1 ----------------------------------------------------------- */

/* A directory plain `bucket` wrote (schema 1) is read by every reader, and
 * its first append rewrites its manifest as schema 2 with the same content
 * (generation 1, its inputs ingested by generation 1); so is one whose
 * manifest an older ringshard wrote (no checksums, no _hex members): the
 * checksums it lacks cannot be made up, the next inputs have theirs. */
Test(append, a_schema_1_directory_is_read_and_upgraded_by_its_first_append)
{
    OK("\"$RS\" bucket --quiet " RING " -o D a.csv && grep -q '\"schema\": 1,' D/manifest.json && "
       "! grep -q '\"generation\"' D/manifest.json && cp D/manifest.json m1.json && "
       "\"$RS\" verify --quiet D && \"$RS\" stats D | grep -q 'bucket directory D: 5 files, 3000 rows' && "
       "\"$RS\" bucket --quiet --append -o D b.csv.gz && grep -q '\"schema\": 2,' D/manifest.json && "
       "python3 -c '\n"
       "import json\n"
       "old, new = json.load(open(\"m1.json\")), json.load(open(\"D/manifest.json\"))\n"
       "assert new.pop(\"schema\") == 2 and old.pop(\"schema\") == 1 and new.pop(\"generation\") == 1\n"
       "assert [i.pop(\"generation\") for i in new[\"inputs\"]] == [1]\n"
       "assert old == new, (old, new)' && "
       "\"$RS\" bucket --quiet " RING " -o R a.csv b.csv.gz && same_rows D R && \"$RS\" verify --quiet D && "
       "\"$RS\" bucket --quiet --append -o D a.csv b.csv.gz && test ! -e D/g00000003");
    /* an older writer's manifest */
    OK("rm -rf D R && \"$RS\" bucket --quiet " RING " -o D a.csv && python3 -c '\n"
       "import json\n"
       "m = json.load(open(\"D/manifest.json\"))\n"
       "for i in m[\"inputs\"]:\n"
       "    del i[\"checksum\"], i[\"zero_padding_bytes\"]\n"
       "for f in m[\"files\"]:\n"
       "    del f[\"crc32_hex\"]\n"
       "json.dump(m, open(\"D/manifest.json\", \"w\"), indent=2)' && ! grep -q -e checksum -e _hex D/manifest.json && "
       "\"$RS\" verify --quiet D && \"$RS\" bucket --quiet --append -o D b.csv.gz c.csv && "
       "grep -q '\"schema\": 2,' D/manifest.json && \"$RS\" bucket --quiet " RING " -o R a.csv b.csv.gz c.csv && "
       "same_rows D R && \"$RS\" verify --quiet D && \"$RS\" bucket --quiet --append -o D c.csv && "
       "test ! -e D/g00000003");
}

/* ---- what else a user tries ----------------------------------------------- */

/* Not a bucket directory to append to: a move directory (plan --emit), a
 * generation's directory, a file, a symbolic link (readers follow it); DIR
 * is left as it was. */
Test(append, what_cannot_take_an_append_is_refused_and_left_as_it_was)
{
    OK("\"$RS\" bucket --quiet " RING " -o D a.csv && \"$RS\" bucket --quiet --append -o D c.csv && "
       "\"$RS\" plan --quiet --from-buckets D --add 1 --emit M && snap M raw > m1 && snap D raw > s1 && "
       "ln -s D L && echo x > F");
    expect_fail(64, "M/manifest.json: kind 'moves': --append adds rows to bucket directories",
                "\"$RS\" bucket --append -o M b.csv.gz");
    expect_fail(64, "M: kind 'moves': compact merges bucket directories", "\"$RS\" compact M");
    expect_fail(2, "D/g00000002/manifest.json: a generation of a bucket directory: name the directory above it",
                "\"$RS\" bucket --append -o D/g00000002 b.csv.gz");
    expect_fail(73, "L: is a symbolic link (name the directory itself)", "\"$RS\" bucket --append -o L b.csv.gz");
    expect_fail(73, "L: is a symbolic link (name the directory itself)", "\"$RS\" bucket --append -o L/ b.csv.gz");
    expect_fail(73, "L: is a symbolic link (name the directory itself)", "\"$RS\" compact L");
    expect_fail(73, "F: exists and is not a directory", "\"$RS\" bucket --append -o F b.csv.gz");
    OK("snap M raw | cmp - m1 && snap D raw | cmp - s1 && test $(litter D) = 0 && test $(litter L) = 0 && "
       "test $(cat F) = x && \"$RS\" verify --quiet L && \"$RS\" stats L > /dev/null");
}

/* Inputs without rows: an empty file and a header-only one add no rows
 * (and are known again as ingested); an append with --on-bad-row
 * quarantine puts the bad rows in the quarantine file, the good ones in
 * the generation (a quarantine file inside DIR is refused); a directory
 * whose inputs were all empty. */
Test(append, empty_inputs_and_quarantine)
{
    OK("\"$RS\" bucket --quiet " RING " -o D a.csv && : > empty.csv && head -n 1 a.csv > header_only.csv && "
       "\"$RS\" bucket --quiet --append -o D --allow-empty empty.csv header_only.csv && \"$RS\" verify --quiet D && "
       "\"$RS\" bucket --quiet " RING " -o R a.csv && same_rows D R && snap D raw > s1 && "
       "\"$RS\" bucket --quiet --append -o D --allow-empty empty.csv header_only.csv && snap D raw | cmp - s1");
    OK("{ head -n 1 a.csv; sed -n 2,20p c.csv | tr -d '\\r'; printf 'bad\"quote,1,2,3,4,5,6\\n'; "
       "sed -n 21,40p c.csv | tr -d '\\r'; } > bad.csv && "
       "\"$RS\" bucket --quiet --append --on-bad-row quarantine=q.tsv -o D bad.csv && "
       "test $(grep -c 'bad\"quote' q.tsv) = 1 && grep -v 'bad\"quote' bad.csv > good.csv && "
       "\"$RS\" bucket --quiet " RING " -o R2 a.csv good.csv && same_rows D R2 && \"$RS\" verify --quiet D");
    expect_fail(64, "inside the output directory D",
                "\"$RS\" bucket --append --on-bad-row quarantine=D/q.tsv -o D b.csv.gz");
    /* a directory of empty inputs has no header line to hold the rows of
     * inputs with a header (before, it said "no header" and took the next
     * input's header line for a row): one made by bucket refuses appends;
     * --append does not make one from nothing, and its first append with
     * data makes it; without a header it takes them */
    OK("\"$RS\" bucket --quiet " RING " --allow-empty -o E empty.csv && snap E raw > e1 && \"$RS\" verify --quiet E");
    OK_SAYING("E2 not created: its inputs hold no header line and no row",
              "\"$RS\" bucket --append " RING " --allow-empty -o E2 empty.csv && test ! -e E2");
    expect_fail(64, "E/manifest.json: DIR has no header line yet (its inputs were empty)",
                "\"$RS\" bucket --append -o E b.csv.gz");
    OK("\"$RS\" bucket --quiet --append " RING " --allow-empty -o E2 empty.csv b.csv.gz && \"$RS\" bucket --quiet " RING " -o R3 b.csv.gz && "
       "same_rows E2 R3 && \"$RS\" verify --quiet E2");
    OK("snap E raw | cmp - e1 && \"$RS\" bucket --quiet --no-header --nodes 3 --allow-empty -o EN empty.csv && "
       "sed 1d a.csv > a_body.csv && \"$RS\" bucket --quiet --append -o EN a_body.csv && "
       "\"$RS\" bucket --quiet --no-header --nodes 3 -o RN a_body.csv && same_rows EN RN");
}

/* A directory dedup --append keeps distinct: bucket --append is refused
 * (its rows would not be checked against the directory's keys); dedup
 * --append skips an input already ingested (before: "internal error: rows
 * not conserved", exit 1); compact drops the parts' key indexes, which
 * the merged files do not match (before, the compacted manifest still
 * listed them: verify exit 3, the next dedup --append exit 1), and the
 * next dedup --append builds them again; the rows are those Python keeps
 * (the first copy of each key, inputs in order). */
Test(append, a_directory_dedup_append_keeps_distinct)
{
    OK("\"$RS\" dedup --quiet --append " RING " -o Y a.csv && snap Y raw > y1");
    expect_fail(64, "Y/manifest.json: DIR's rows are distinct by key (dedup --append keeps them so)",
                "\"$RS\" bucket --append -o Y b.csv.gz");
    OK("snap Y raw | cmp - y1 && \"$RS\" dedup --quiet --append -o Y b.csv.gz a.csv && test -d Y/g00000002 && "
       "\"$RS\" verify --quiet Y && \"$RS\" compact --quiet Y && \"$RS\" verify --quiet Y && "
       "\"$RS\" dedup --quiet --append -o Y c.csv && \"$RS\" verify --quiet Y && \"$RS\" compact --quiet Y && "
       "\"$RS\" verify --quiet Y && " CHECK_DEDUP "Y first bill_id a.csv b.csv.gz c.csv > /dev/null");
}

/* compact of a directory of one generation (from plain bucket, from an
 * append that created it, or already compacted) says so and changes
 * nothing; after a compaction, appends go on numbering from its
 * generation. */
Test(append, compact_of_one_generation_changes_nothing)
{
    OK_SAYING("ringshard compact: D has one generation (1): nothing to merge\n",
              "\"$RS\" bucket --quiet " RING " -o D a.csv && snap D raw > s1 && \"$RS\" compact D && "
              "snap D raw | cmp - s1 && \"$RS\" bucket --quiet --append " RING " -o N a.csv && "
              "snap N raw > n1 && \"$RS\" compact N && snap N raw | cmp - n1");
    OK("\"$RS\" bucket --quiet --append -o D b.csv.gz && \"$RS\" compact --quiet D && snap D raw > s2 && "
       "\"$RS\" compact --quiet D && snap D raw | cmp - s2 && \"$RS\" bucket --quiet --append -o D c.csv && "
       "test -d D/g00000003 && test ! -e D/g00000002 && \"$RS\" verify --quiet D && "
       "\"$RS\" bucket --quiet " RING " -o R a.csv b.csv.gz c.csv && same_rows D R && "
       "\"$RS\" bucket --quiet --append -o D b.csv.gz && test ! -e D/g00000004");
}

/* --commit-every with --on-bad-row quarantine=FILE: FILE holds the
 * rejected rows of every generation the command published, once each, in
 * input order, with one column-name line (before, each generation's
 * publication replaced it with its own rows alone); bucket and dedup. */
Test(append, quarantine_under_commit_every_keeps_every_generations_rows)
{
    OK("printf 'bill_id,x\\nz1,1\\n\"bad1,2\\n' > q1.csv && printf 'bill_id,x\\nz2,1\\n\"bad2,2\\n' > q2.csv && "
       "printf 'bill_id,x\\nz3,1\\n' > q3.csv && "
       "for cmd in bucket dedup; do rm -f q.tsv; "
       "\"$RS\" $cmd --quiet --append --on-bad-row quarantine=q.tsv --commit-every 1 --nodes 3 -o D$cmd "
       "q1.csv q2.csv q3.csv || exit 1; "
       "printf 'input\\tline\\trecord\\treason\\trow\\nq1.csv\\t3\\t2\\tunterminated quoted field\\t\"bad1,2\\n"
       "q2.csv\\t3\\t2\\tunterminated quoted field\\t\"bad2,2\\n' | cmp - q.tsv || exit 1; "
       "\"$RS\" verify --quiet D$cmd || exit 1; done");
}

/* ---- every data file a CSV file of its own -------------------------- */

/* Each segment starts with the header line the base files start with (its
 * own gzip member, zstd frame or line: header_bytes in a manifest of
 * schema 3, segment_header true); keys-only segments with the key
 * column's name; a directory without a header writes none (schema 2). Any
 * reader taking each file's first line for its header reads every row. */
Test(append, each_segment_starts_with_the_header)
{
    static const char *const compress[] = {"gzip", "zstd", "none"};
    for (int k = 0; k < 3; k++)
        OK("rm -rf D && \"$RS\" bucket --quiet " RING " --compress %s -o D a.csv && "
           "\"$RS\" bucket --quiet --append -o D b.csv.gz && h=$(head -1 a.csv) && n=0 && "
           "for f in D/g00000002/[0-9]*; do test \"$(dec $f < $f | head -1)\" = \"$h\" || exit 1; "
           "test $(seg_header_bytes D/g00000002 ${f##*/}) -gt 0 || exit 1; n=$((n + 1)); done && test $n = 5 && "
           "grep -q '\"schema\": 3,' D/g00000002/manifest.json && "
           "grep -q '\"segment_header\": true,' D/g00000002/manifest.json && "
           "test $(for f in D/*.csv* D/g*/*.csv*; do dec $f < $f | sed 1d; done | grep -c '^bill_id,') = 0",
           compress[k]);
    /* dedup --append writes its segments so too; compact and verify read them */
    OK("rm -rf X && \"$RS\" dedup --quiet --append " RING " -o X a.csv && \"$RS\" dedup --quiet --append -o X "
       "b.csv.gz && h=$(head -1 a.csv) && ls X/g00000002/*.csv.gz > /dev/null && for f in X/g00000002/*.csv.gz; do "
       "test \"$(gzip -dc $f | head -1)\" = \"$h\" || exit 1; done && grep -q '\"schema\": 3,' X/g00000002/manifest.json && "
       "\"$RS\" verify --quiet X && \"$RS\" cat --all X > x1.t && \"$RS\" compact --quiet X && \"$RS\" verify --quiet X && "
       "\"$RS\" cat --all X | cmp - x1.t && test $(grep -c \"^$h\\$\" x1.t) = 1");
    /* verify checks where the header ends: a manifest that says otherwise
     * (one byte short) is a difference, exit 3 */
    OK("python3 -c 'import json, sys; p = sys.argv[1]; m = json.load(open(p)); m[\"files\"][0][\"header_bytes\"] -= 1; "
       "json.dump(m, open(p, \"w\"), indent=2)' D/g00000002/manifest.json");
    OK("\"$RS\" verify D > v.out; test $? = 3 && grep -q 'its first .* bytes (header_bytes) are not its header line' v.out");
    OK("rm -rf D && \"$RS\" bucket --quiet --keys-only " RING " -o D a.csv && "
       "\"$RS\" bucket --quiet --append -o D b.csv.gz && "
       "for f in D/g00000002/*.csv.gz; do test \"$(gzip -dc $f | head -1)\" = bill_id || exit 1; done && "
       "\"$RS\" verify --quiet D && \"$RS\" cat D 0 | head -1 | grep -qx bill_id");
    OK(GEN " --rows 300 --seed 5 --no-header -o h1.csv 2>/dev/null && " GEN " --rows 300 --seed 6 --no-header "
       "-o h2.csv 2>/dev/null && rm -rf D && \"$RS\" bucket --quiet --no-header --nodes 3 -o D h1.csv && "
       "\"$RS\" bucket --quiet --append -o D h2.csv && grep -q '\"schema\": 2,' D/g00000002/manifest.json && "
       "! grep -q segment_header D/g00000002/manifest.json && "
       "\"$RS\" cat D 0 > c0.t && cat D/0.csv.gz D/g00000002/0.csv.gz | gzip -dc | cmp - c0.t && "
       "\"$RS\" verify --quiet D");
}

/* A directory whose segments an older version wrote (no header line,
 * schema 2: tests/old_segments.py makes one) is read as before by every
 * reader, takes appends (its new segments with the header) and compacts
 * into what one run writes. */
Test(append, older_headerless_segments_are_still_read)
{
    OK("\"$RS\" bucket --quiet " RING " -o D a.csv && \"$RS\" bucket --quiet --append -o D b.csv.gz && "
       "python3 " RS_SOURCE_DIR "/tests/old_segments.py D/g00000002 && "
       "test \"$(gzip -dc D/g00000002/0.csv.gz | head -1)\" != \"$(head -1 a.csv)\" && "
       "\"$RS\" bucket --quiet " RING " -o R a.csv b.csv.gz && \"$RS\" verify --quiet D && same_rows D R && "
       "\"$RS\" cat --all D > all.csv && { head -1 a.csv; for f in R/*.csv.gz; do gzip -dc $f | sed 1d; done; } | "
       "cmp - all.csv && "
       "\"$RS\" stats D | sed 1d > sd.t && \"$RS\" stats R | sed 1d > sr.t && cmp sd.t sr.t && "
       "\"$RS\" dedup --quiet --buckets D -o XD && \"$RS\" dedup --quiet --buckets R -o XR && same_content XD XR && "
       "\"$RS\" plan --quiet --from-buckets D --add 2 --emit MD > pd.t && "
       "\"$RS\" plan --quiet --from-buckets R --add 2 --emit MR > pr.t && same_content MD MR && cmp pd.t pr.t");
    OK("\"$RS\" bucket --quiet --append -o D c.csv && grep -q '\"schema\": 3,' D/g00000003/manifest.json && "
       "\"$RS\" bucket --quiet " RING " -o R2 a.csv b.csv.gz c.csv && \"$RS\" verify --quiet D && same_rows D R2 && "
       "for n in 0 1 2 3 4; do gzip -dc R2/$n.csv.gz > r.t && \"$RS\" cat D $n | cmp - r.t || exit 1; done && "
       "\"$RS\" compact --quiet D && \"$RS\" verify --quiet D && same_rows D R2");
}

/* ringshard cat: a node's rows across generations as one CSV (one
 * header), what one run's file holds; -o FILE only once complete; an
 * unknown node is a usage error with the nearest name; a file that differs
 * from its manifest stops it (exit 3, named). */
Test(append, cat_reads_a_node_across_generations)
{
    OK("\"$RS\" bucket --quiet " RING " -o D a.csv && \"$RS\" bucket --quiet --append -o D b.csv.gz && "
       "\"$RS\" bucket --quiet --append -o D c.csv && \"$RS\" bucket --quiet " RING " -o R a.csv b.csv.gz c.csv && "
       "\"$RS\" cat D 3 1 > c31.csv && { gzip -dc R/3.csv.gz; gzip -dc R/1.csv.gz | sed 1d; } | cmp - c31.csv && "
       "gzip -dc R/2.csv.gz > r2.t && \"$RS\" cat --quiet --compress gzip -o c2.csv.gz D 2 && "
       "gzip -dc c2.csv.gz | cmp - r2.t && \"$RS\" cat -o - D 2 | cmp - r2.t");
    expect_fail(64, "ringshard cat: D: no node '33' (did you mean '3'?)", "\"$RS\" cat -o out.csv D 1 33");
    OK("test ! -e out.csv && printf x >> D/g00000002/4.csv.gz");
    expect_fail(3, "D/g00000002/4.csv.gz: ", "\"$RS\" cat -o out.csv D 4");
    OK("test ! -e out.csv && \"$RS\" cat D 0 > /dev/null");
}
