/* `ringshard verify`: a bucket directory and a move directory verify; every
 * kind of damage (missing, extra, altered, misplaced rows, corrupt gzip,
 * wrong header, tampered manifest) is found and named, with exit 3. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "support.h"

static char *tmp;

/* tmp/in.csv, tmp/old (20 buckets), tmp/moves (plan --emit, 20 -> 22) */
static void setup(void)
{
    tmp = make_tmpdir();
    char path[1024];
    snprintf(path, sizeof path, "%s/in.csv", tmp);
    FILE *f = fopen(path, "w");
    fputs("id,note,amount\n", f);
    for (int i = 0; i < 20000; i++)
        fprintf(f, "k%d,\"n,%d\",%d\n", i * 7919, i % 13, i);
    fclose(f);
    char *out, *err;
    int rc = runf(&out, &err,
                  "cd %s && \"$RS\" bucket --quiet --nodes 20 -o old in.csv && "
                  "\"$RS\" plan --quiet --from-buckets old --add 2 --emit moves",
                  tmp);
    cr_assert_eq(rc, 0, "setup: %s %s", out, err);
    free(out);
    free(err);
}

static void teardown(void)
{
    remove_tree(tmp);
    free(tmp);
}

TestSuite(verify, .init = setup, .fini = teardown, .timeout = 300);

static void expect(int want_rc, const char *damage, const char *dir, const char *needle)
{
    char *out, *err;
    int rc = runf(&out, &err, "cd %s && { %s ; } && \"$RS\" verify -j 2 %s", tmp, damage, dir);
    cr_assert_eq(rc, want_rc, "rc %d for '%s'\nstdout: %s\nstderr: %s", rc, damage, out, err);
    cr_assert(strstr(out, needle), "'%s' not in:\n%s", needle, out);
    free(out);
    free(err);
}

Test(verify, bucket_and_move_directories_verify)
{
    expect(0, "true", "old", "verify old: OK: buckets, 20 files, 20000 rows");
    expect(0, "true", "moves", "verify moves: OK: moves");
}

Test(verify, missing_and_extra_files)
{
    expect(3, "rm old/7.csv.gz && touch old/stray.csv", "old", "7.csv.gz: missing");
    expect(3, "true", "old", "stray.csv: extra file, not in the manifest");
    expect(3, "true", "old", "FAILED: 2 differences");
}

/* An entry is a stray by one definition, the dataset layer's, which
 * compact and repair trust too: a g<N> whose number no generation can
 * have is an extra file (compact refuses it, naming it), not a generation
 * after a gap; a g<N> in a move directory (which has no generations) is
 * an extra file too, not a generation directory to pass over. */
Test(verify, strays_as_the_dataset_layer_defines_them)
{
    expect(3, "mkdir old/g100000000", "old", "g100000000: extra file, not in the manifest");
    expect(3, "true", "old", "FAILED: 1 differences");
    char *out, *err;
    int rc = runf(&out, &err, "cd %s && sed 's/^k/j/' in.csv > in2.csv && "
                  "\"$RS\" bucket --quiet --append -o old in2.csv && \"$RS\" compact old", tmp);
    cr_assert_neq(rc, 0, "compact takes what verify calls a stray: %s %s", out, err);
    cr_assert(strstr(err, "g100000000"), "compact does not name the stray: %s", err);
    free(out);
    free(err);
    expect(3, "mkdir moves/g00000002", "moves", "g00000002: extra file, not in the manifest");
}

Test(verify, altered_row_changes_the_checksum)
{
    /* same row count and length, one byte changed in a non-key field */
    expect(3, "gzip -dc old/3.csv.gz | sed '2s/[0-9]$/x/' | gzip -c > t && mv t old/3.csv.gz", "old",
           "3.csv.gz: CRC-32 of the data");
}

Test(verify, misplaced_row_is_named)
{
    expect(3, "gzip -dc old/4.csv.gz > t && gzip -dc old/3.csv.gz | sed -n 2p >> t && gzip -c t > old/4.csv.gz",
           "old", "4.csv.gz: 1 of");
    expect(3, "true", "old", "rows belong to another node than 4");
    expect(3, "true", "old", "rows, the manifest says");
}

Test(verify, moved_row_in_the_wrong_pair)
{
    char *out;
    /* append a row that stays (it is in its old bucket, and the new ring keeps it) to a move file */
    runf(&out, NULL, "cd %s/moves && ls *.csv.gz | head -1", tmp);
    out[strcspn(out, "\n")] = '\0';
    char damage[1024];
    snprintf(damage, sizeof damage,
             "gzip -dc moves/%s > t && gzip -dc old/0.csv.gz | sed -n 2,40p >> t && gzip -c t > moves/%s", out, out);
    char needle[256];
    snprintf(needle, sizeof needle, "%s: ", out);
    expect(3, damage, "moves", "rows do not move");
    free(out);
}

Test(verify, corrupt_gzip_is_named_and_the_rest_still_checked)
{
    expect(3, "head -c 100 old/9.csv.gz > t && mv t old/9.csv.gz && rm old/2.csv.gz", "old", "9.csv.gz: unreadable");
    expect(3, "true", "old", "2.csv.gz: missing");
}

Test(verify, tampered_manifest)
{
    expect(3, "sed -i 's/\"rows\": 1\\([0-9][0-9][0-9]\\),/\"rows\": 2\\1,/' old/manifest.json", "old",
           "rows, the manifest says 2");
    expect(3, "true", "old", "manifest.json: files add up to");
}

Test(verify, wrong_header)
{
    expect(3, "for f in old/*.csv.gz; do gzip -dc $f | sed '1s/id/ID/' | gzip -c > t && mv t $f; done", "old",
           "header");
}

Test(verify, bad_usage)
{
    char *out, *err;
    int rc = runf(&out, &err, "\"$RS\" verify");
    cr_assert_eq(rc, 64);
    free(out);
    free(err);
    rc = runf(&out, &err, "\"$RS\" verify %s/nothing-here", tmp);
    cr_assert_neq(rc, 0);
    cr_assert_neq(rc, 3);
    free(out);
    free(err);
}

/* A manifest whose ring description does not give its fingerprint: verify
 * says so (exit 3, and goes on); every other command that reads a
 * directory's ring refuses it (exit 2) naming the manifest, as one check
 * (rs_manifest_ring) makes it: stats, plan --from-buckets, dedup
 * --buckets and an append used to differ (two of them trusted it). */
Test(verify, a_ring_whose_fingerprint_differs_is_refused_by_every_reader)
{
    const char *tamper = "python3 -c \"import sys; p = 'old/manifest.json'; s = open(p).read(); "
                         "i = s.index('\\\"fingerprint\\\": \\\"') + 16; "
                         "open(p, 'w').write(s[:i] + ('1' if s[i] == '0' else '0') + s[i + 1:])\"";
    expect(3, tamper, "old", "manifest: the ring description has fingerprint ");
    static const char *const readers[] = {
        "stats old",
        "plan --quiet --from-buckets old --add 1",
        "dedup --quiet --buckets old -o d",
        "bucket --quiet --append -o old in.csv",
    };
    for (size_t i = 0; i < sizeof readers / sizeof *readers; i++) {
        char *out, *err;
        int rc = runf(&out, &err, "cd %s && \"$RS\" %s", tmp, readers[i]);
        cr_assert_eq(rc, 2, "%s: rc %d\n%s", readers[i], rc, err);
        cr_assert(strstr(err, "old/manifest.json: the ring description has fingerprint "), "%s:\n%s", readers[i], err);
        free(out);
        free(err);
    }
    char *out, *err;
    cr_assert_eq(runf(&out, &err, "cd %s && test ! -e d && test ! -d old/g00000002", tmp), 0, "a refused run wrote");
    free(out);
    free(err);
}
