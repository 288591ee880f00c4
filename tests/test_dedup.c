/* `ringshard dedup` end to end: planted duplicates found exactly (data from
 * tools/gen/gen_bills.c, which says how many it planted), --keep first/last and
 * --by row checked row by row by an independent computation
 * (tests/check_dedup.py: Python's csv and gzip modules), the split-again
 * path under a small --memory, --buckets, byte-identical output for any -j
 * and `ringshard verify` on every output. */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "support.h"

#define DATA RS_SOURCE_DIR "/fixtures/data/"
#define INPUTS DATA "bills_a.csv.gz " DATA "bills_b.csv.gz " DATA "bills_c.csv"
#define CHECK "python3 " RS_SOURCE_DIR "/tests/check_dedup.py "
/* gen_bills is built by the same build, next to the ringshard binary */

static char *tmp;

static void setup(void) { tmp = make_tmpdir(); }
static void teardown(void)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    system(cmd);
    free(tmp);
}

static int sh(char **out, char **err, const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    return run(cmd, out, err);
}

/* The number before `what` in s ("... 123 duplicates removed"), or -1. */
static long long number_before(const char *s, const char *what)
{
    const char *p = strstr(s, what);
    if (!p)
        return -1;
    while (p > s && p[-1] == ' ')
        p--;
    while (p > s && p[-1] >= '0' && p[-1] <= '9')
        p--;
    return atoll(p);
}

static long long number_after(const char *s, const char *what)
{
    const char *p = strstr(s, what);
    return p ? atoll(p + strlen(what)) : -1;
}

TestSuite(dedup, .init = setup, .fini = teardown, .timeout = 600);

Test(dedup, finds_exactly_the_planted_duplicates_on_several_seeds)
{
    static const struct {
        int seed;
        const char *rows, *share, *extra;
    } runs[] = {
        {1, "40000", "0.05", ""},
        {2, "60000", "0.3", "--nodes 7"},
        {3, "30000", "0.5", "--nodes 50 --keep last"},
        {4, "50000", "0.1", "--scheme ketama --nodes 20 -j 1"},
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        char *out, *err;
        int rc = sh(&out, &err,
                    "cd %s && " GEN " --rows %s --seed %d --dup-share %s -o in%zu.csv 2>&1 && gzip in%zu.csv && "
                    "\"$RS\" dedup %s -o out%zu in%zu.csv.gz && \"$RS\" verify out%zu",
                    tmp, runs[i].rows, runs[i].seed, runs[i].share, i, i, runs[i].extra, i, i, i);
        cr_assert_eq(rc, 0, "seed %d: %s %s", runs[i].seed, out, err);
        long long planted = number_after(out, "duplicate_rows=");
        long long removed = number_before(err, "duplicates removed");
        long long distinct = number_after(out, "distinct_keys=");
        cr_assert_gt(planted, 0, "%s", out);
        cr_assert_eq(removed, planted, "seed %d: removed %lld, gen_bills planted %lld\n%s", runs[i].seed, removed,
                     planted, err);
        cr_assert_eq(number_before(err, "distinct rows"), distinct, "%s", err);
        cr_assert(strstr(out, "verify out") && strstr(out, ": OK"), "%s", out);
        free(out);
        free(err);
    }
}

Test(dedup, keep_first_row_by_row_against_python)
{
    char *out, *err;
    int rc = sh(&out, &err,
                "cd %s && \"$RS\" dedup --key bill_id --keep first --duplicates d.tsv -o out " INPUTS " && " CHECK
                "out first bill_id " INPUTS " --dups d.tsv && \"$RS\" verify --quiet out",
                tmp);
    cr_assert_eq(rc, 0, "%s %s", out, err);
    cr_assert(strstr(out, "ok 27536 distinct of 29000 rows in 1000 files"), "%s", out);
    cr_assert(strstr(err, "1464 duplicates removed"), "%s", err);
    free(out);
    free(err);
}

Test(dedup, keep_last_row_by_row_against_python)
{
    char *out, *err;
    /* inputs in another order: "last" follows the order given */
    int rc = sh(&out, &err,
                "cd %s && \"$RS\" dedup --quiet --key bill_id --keep last --duplicates d.tsv -o out " DATA
                "bills_c.csv " DATA "bills_a.csv.gz " DATA "bills_b.csv.gz && " CHECK "out last bill_id " DATA
                "bills_c.csv " DATA "bills_a.csv.gz " DATA "bills_b.csv.gz --dups d.tsv && "
                "\"$RS\" dedup --quiet --key bill_id --keep first -o first " DATA "bills_c.csv " DATA
                "bills_a.csv.gz " DATA "bills_b.csv.gz && ! diff -rq -x manifest.json out first >/dev/null",
                tmp);
    cr_assert_eq(rc, 0, "%s %s", out, err);
    cr_assert(strstr(out, "ok 27536 distinct of 29000 rows"), "%s", out);
    assert_verify(path_join(tmp, "out"));
    assert_verify(path_join(tmp, "first"));
    free(out);
    free(err);
}

Test(dedup, generated_data_with_line_breaks_first_and_last)
{
    char *out, *err;
    int rc = sh(&out, &err,
                "cd %s && " GEN " --rows 20000 --seed 11 --dup-share 0.4 --newline-share 0.05 -o a.csv 2>/dev/null && "
                GEN " --rows 10000 --seed 11 --dup-share 0.4 --crlf -o b.csv 2>/dev/null && gzip b.csv && "
                "for k in first last; do \"$RS\" dedup --quiet --nodes 13 --keep $k --duplicates d$k -o $k a.csv "
                "b.csv.gz && " CHECK "$k $k 1 a.csv b.csv.gz --dups d$k || exit 1; done",
                tmp);
    cr_assert_eq(rc, 0, "%s %s", out, err);
    cr_assert(strstr(out, "ok "), "%s", out);
    assert_verify(path_join(tmp, "first"));
    assert_verify(path_join(tmp, "last"));
    free(out);
    free(err);
}

Test(dedup, whole_row_duplicates)
{
    char *out, *err;
    int rc = sh(&out, &err,
                "cd %s && \"$RS\" dedup --by row --duplicates d.tsv -o out " DATA "bills_c.csv " DATA
                "bills_c.csv " DATA "bills_a.csv.gz && " CHECK "out row 1 " DATA "bills_c.csv " DATA
                "bills_c.csv " DATA "bills_a.csv.gz --dups d.tsv && wc -l < d.tsv",
                tmp);
    cr_assert_eq(rc, 0, "%s %s", out, err);
    cr_assert(strstr(out, "ok 23000 distinct of 26000 rows"), "%s", out);
    cr_assert(strstr(err, "3000 duplicates removed"), "%s", err);
    assert_verify(path_join(tmp, "out"));
    free(out);
    free(err);
}

Test(dedup, byte_identical_for_any_thread_count)
{
    char *out, *err;
    int rc = sh(&out, &err,
                "cd %s && for j in 1 2 4; do \"$RS\" dedup --quiet -j $j --keep last --duplicates d$j -o out$j " INPUTS
                " || exit 9; done && "
                "diff -r out1 out2 && diff -r out1 out4 && cmp d1 d2 && cmp d1 d4 && "
                "ls out1 | grep -c csv",
                tmp);
    cr_assert_eq(rc, 0, "outputs differ across -j: %s %s", out, err);
    cr_assert_eq(atoi(out), 1000);
    free(out);
    free(err);
}

Test(dedup, small_memory_splits_buckets_again_with_the_same_result)
{
    char *out, *err;
    /* 2 buckets of ~10 MB and ~100k rows each: more than 32M / 2 threads */
    int rc = sh(&out, &err,
                "cd %s && " GEN " --rows 200000 --seed 7 --dup-share 0.3 -o in.csv 2>gen.txt && "
                "\"$RS\" dedup -j 2 --memory 32M --nodes 2 --keep last --duplicates ds -o small in.csv && "
                "\"$RS\" dedup --quiet -j 2 --memory 1G --nodes 2 --keep last --duplicates db -o big in.csv && "
                "diff -r -x manifest.json small big && cmp ds db && "
                "\"$RS\" verify --quiet small && " CHECK "small last 1 in.csv --dups ds && cat gen.txt",
                tmp);
    cr_assert_eq(rc, 0, "%s %s", out, err);
    cr_assert(strstr(err, "split again: 2 buckets"), "the split path was not taken: %s", err);
    cr_assert_eq(number_before(err, "duplicates removed"), number_after(out, "duplicate_rows="), "%s %s", out, err);
    cr_assert(strstr(out, "ok 140326 distinct of 200000 rows in 2 files"), "%s", out);
    free(out);
    free(err);
}

Test(dedup, hot_key_bucket_is_streamed_within_memory)
{
    char *out, *err;
    /* one key with ~144k copies in a 17 MB bucket: splitting by key cannot
     * shrink it, so the part is deduplicated as a stream (keys in memory) */
    int rc = sh(&out, &err,
                "cd %s && awk 'BEGIN { print \"id,v,note\"; srand(5); p = \"\"; for (i = 0; i < 120; i++) p = p \"x\"; "
                "for (i = 0; i < 160000; i++) { k = rand() < 0.9 ? \"HOT\" : \"k\" int(rand() * 5000); "
                "printf \"%%s,%%d,\\\"pad %%s\\\"\\n\", k, i, substr(p, 1, 60 + int(rand() * 60)) } }' > hot.csv && "
                "\"$RS\" dedup -j 2 --memory 32M --nodes 1 --keep last --duplicates ds -o small hot.csv && "
                "\"$RS\" dedup --quiet --nodes 1 --keep last --duplicates db -o big hot.csv && "
                "diff -r -x manifest.json small big && cmp ds db && "
                CHECK "small last 1 hot.csv --dups ds && \"$RS\" verify --quiet small",
                tmp);
    cr_assert_eq(rc, 0, "%s %s", out, err);
    cr_assert(strstr(err, "split again: 1 buckets") && strstr(err, "deduplicated as a stream"), "%s", err);
    cr_assert(strstr(out, "ok ") && strstr(out, " of 160000 rows in 1 files"), "%s", out);
    free(out);
    free(err);
}

/* The --duplicates report (and the output) must not depend on the thread
 * count nor on the memory: pass 2's per-file budget is --memory / threads,
 * so -j decides which buckets are split again (-j 1: none at 32M here;
 * -j 2 and 4: all three; -j 16: nested splits down to the last level and
 * streamed parts). A split bucket's report must still list its duplicated
 * keys in the order of their first occurrence in the bucket, which
 * check_dedup.py checks independently (by manifest file, then first row). */
Test(dedup, duplicates_report_identical_for_any_threads_and_memory)
{
    char *out, *err;
    int rc = sh(&out, &err,
                "cd %s && " GEN " --rows 60000 --seed 9 --dup-share 0.4 -o dups.csv 2>/dev/null && "
                GEN " --rows 120000 --seed 5 --newline-share 0.01 -o big.csv 2>/dev/null && gzip -1 big.csv && "
                "for run in 'j1 -j 1 --memory 32M' 'j2 -j 2 --memory 32M' 'j4 -j 4 --memory 32M' "
                "'j16 -j 16 --memory 32M' 'big -j 2 --memory 1G'; do set -- $run; n=$1; shift; "
                "\"$RS\" dedup --key bill_id --nodes 3 \"$@\" --duplicates d$n -o o$n dups.csv big.csv.gz " DATA
                "bills_a.csv.gz 2> s$n || exit 9; grep -v '\"seconds\"' o$n/manifest.json > m$n; done && "
                "for n in j2 j4 j16 big; do cmp dj1 d$n && cmp mj1 m$n && diff -r -x manifest.json oj1 o$n || exit 8; done && "
                CHECK "oj2 first bill_id dups.csv big.csv.gz " DATA "bills_a.csv.gz --dups dj2 && "
                CHECK "oj16 first bill_id dups.csv big.csv.gz " DATA "bills_a.csv.gz --dups dj16 && "
                "\"$RS\" verify --quiet oj16 && echo dupkeys=$(wc -l < dj1) && cat sj1 sj2 sj4 sj16 sbig",
                tmp);
    cr_assert_eq(rc, 0, "%s %s", out, err);
    cr_assert(strstr(out, "ok 168960 distinct of 200000 rows in 3 files"), "%s", out);
    cr_assert_eq(number_after(out, "dupkeys="), 21062, "duplicated keys listed: %s", out);
    /* the splits really happened (and nested ones, and streamed parts, at -j 16) */
    const char *p = out;
    long long split[5], splits[5];
    for (int i = 0; i < 5; i++) {
        p = strstr(p, "split again: ");
        cr_assert(p, "summary %d missing: %s", i, out);
        split[i] = number_after(p, "split again: ");
        splits[i] = number_after(p, "buckets (");
        p++;
    }
    cr_assert_eq(split[0], 0, "-j 1 at 32M fits in memory: %s", out);
    cr_assert_eq(split[1], 3, "-j 2 at 32M splits every bucket: %s", out);
    cr_assert_eq(split[2], 3, "%s", out);
    cr_assert_gt(splits[3], 3, "-j 16 splits again at several levels: %s", out);
    cr_assert(strstr(out, "deduplicated as a stream"), "-j 16 streams the last level: %s", out);
    cr_assert_eq(split[4], 0, "%s", out);
    free(out);
    free(err);
}

Test(dedup, from_an_existing_bucket_directory)
{
    char *out, *err;
    int rc = sh(&out, &err,
                "cd %s && \"$RS\" bucket --quiet --key bill_id --nodes 30 -o b " INPUTS " && "
                "\"$RS\" dedup --quiet --key bill_id --nodes 30 --keep last -o direct " INPUTS " && "
                "\"$RS\" dedup --keep last --buckets b -o again && diff -r -x manifest.json direct again && "
                "\"$RS\" verify --quiet again && " CHECK "again last bill_id " INPUTS " && "
                "\"$RS\" stats again > /dev/null && \"$RS\" plan --from-buckets again --add 1 --emit mv > /dev/null && "
                "\"$RS\" verify --quiet mv && "
                "\"$RS\" bucket --quiet --compress none --nodes 5 -o p " INPUTS " && "
                "\"$RS\" dedup --quiet --buckets p --compress none -o pd && ls pd | head -1 && "
                "\"$RS\" verify --quiet pd && " CHECK "pd first 1 " INPUTS,
                tmp);
    cr_assert_eq(rc, 0, "%s %s", out, err);
    cr_assert(strstr(err, "1464 duplicates removed"), "%s", err);
    cr_assert(strstr(out, "0.csv\n"), "plain output names: %s", out);
    free(out);
    free(err);
}

Test(dedup, gzip_temporary_area_and_plain_output)
{
    char *out, *err;
    int rc = sh(&out, &err,
                "cd %s && \"$RS\" dedup --quiet --temp-compress gzip -o g " INPUTS " && "
                "\"$RS\" dedup --quiet --compress none -o p " INPUTS " && "
                /* one process for the 1000 comparisons, not 2000 */
                "python3 -c \"import gzip, glob, os, sys\n"
                "for f in glob.glob('g/*.csv.gz'):\n"
                "    if gzip.open(f).read() != open('p/' + os.path.basename(f)[:-3], 'rb').read(): sys.exit(7)\" && "
                "gzip -t g/*.csv.gz && ls -a g p | grep -c pass1",
                tmp);
    cr_assert_eq(rc, 1, "grep finds no temporary area: %s %s", out, err);
    cr_assert_str_eq(out, "0\n");
    assert_verify(path_join(tmp, "g"));
    assert_verify(path_join(tmp, "p"));
    free(out);
    free(err);
}

Test(dedup, usage_errors_and_existing_output)
{
    char *out, *err;
    int rc = sh(&out, &err, "cd %s && \"$RS\" dedup --keep middle -o x " DATA "bills_c.csv", tmp);
    cr_assert_eq(rc, 64, "%s", err);
    cr_assert(strstr(err, "--keep"), "%s", err);
    free(out);
    free(err);
    rc = sh(&out, &err, "cd %s && \"$RS\" dedup --buckets nowhere -o x " DATA "bills_c.csv", tmp);
    cr_assert_eq(rc, 64, "%s", err);
    free(out);
    free(err);
    rc = sh(&out, &err, "cd %s && \"$RS\" dedup -o x", tmp);
    cr_assert_eq(rc, 64, "%s", err);
    free(out);
    free(err);
    rc = sh(&out, &err,
            "cd %s && mkdir out && echo keep > out/mine && \"$RS\" dedup --quiet -o out " DATA "bills_c.csv; "
            "echo rc=$?; cat out/mine; ls -a . | grep -c ringshard-tmp",
            tmp);
    cr_assert(strstr(out, "rc=73\nkeep\n0"), "refused, previous output intact, no temporary left: %s %s", out,
              err);
    free(out);
    free(err);
    rc = sh(&out, &err, "cd %s && printf 'a,b\\nx,\"oops\\n' > bad.csv && \"$RS\" dedup -o y bad.csv; echo rc=$?; "
            "ls -a . | grep -c '^y'", tmp);
    cr_assert(strstr(out, "rc=2\n0"), "bad row fails, nothing published: %s %s", out, err);
    free(out);
    free(err);
}

/* Conservation: before publishing, dedup checks that rows and
 * bytes read = kept + duplicates removed (+ rejected), per input through
 * pass 1, per bucket and in total. On real runs (in memory and split
 * again, a rejected row) it passes and the published numbers add up; a
 * --buckets directory whose manifest claims one row (or byte) more than a
 * file holds fails it: exit 1, nothing published, a previous DIR intact. */
Test(dedup, conservation_checked_before_publishing)
{
    char *out, *err;
    int rc = sh(&out, &err,
                "cd %s && python3 -c \"\nimport random\nrandom.seed(9)\n"
                "open('a.csv', 'w').write('id,v\\n' + ''.join('k%%d,x%%d\\n' %% (random.randrange(700), i) for i in range(4000)))\n"
                "open('b.csv', 'w').write('id,v\\n' + ''.join('k%%d,y%%d\\n' %% (random.randrange(700), i) for i in range(2000)) + 'bad\\\"row,1\\n')\" && "
                "gzip -k b.csv && \"$RS\" dedup --on-bad-row skip --nodes 5 -o d a.csv b.csv.gz 2> sum.txt && "
                "\"$RS\" verify --quiet d && "
                "\"$RS\" dedup --quiet --on-bad-row skip --memory 32M -j 2 --nodes 5 -o d2 a.csv b.csv.gz && "
                "diff -r -x manifest.json d d2 && "
                "python3 -c \"\nimport csv, gzip, glob, json, re\n"
                "n = sum(1 for f in ('a.csv', 'b.csv') for r in csv.reader(open(f, newline='')) if r) - 2\n"
                "m = json.load(open('d/manifest.json'))\n"
                "kept = sum(sum(1 for r in csv.reader(gzip.open(f, 'rt', newline='')) if r) - 1 for f in glob.glob('d/*.csv.gz'))\n"
                "removed = int(re.search(r'(\\d+) duplicates removed', open('sum.txt').read()).group(1))\n"
                "print(n, kept, m['totals']['rows'], removed, m['totals']['rejected'], kept + removed + m['totals']['rejected'])\"",
                tmp);
    cr_assert_eq(rc, 0, "%s %s", out, err);
    cr_assert_str_eq(out, "6001 700 700 5300 1 6001\n", "records, kept, manifest rows, removed, rejected, sum: %s",
                     out);
    assert_verify(path_join(tmp, "d2"));
    free(out);
    free(err);
    /* a manifest that claims more than its file holds (its totals too, so
     * that it agrees with itself): rows, then bytes; the file is named, as
     * verify names it (exit 3), nothing published */
    static const char *const field[] = {"rows", "bytes"};
    for (int i = 0; i < 2; i++) {
        rc = sh(&out, &err,
                "cd %s && rm -rf b out && \"$RS\" bucket --quiet --nodes 5 -o b a.csv && "
                "python3 -c \"import json; m = json.load(open('b/manifest.json')); m['files'][2]['%s'] += 1; m['totals']['%s'] += 1; "
                "json.dump(m, open('b/manifest.json', 'w'))\" && mkdir out && echo keep > out/marker && "
                "\"$RS\" dedup --force-any --buckets b -o out; echo rc=$?; ls -A out; find . -name '*ringshard-tmp*' | wc -l",
                tmp, field[i], field[i]);
        cr_assert_str_eq(out, "rc=3\nmarker\n0\n", "%s: %s %s", field[i], out, err);
        cr_assert(strstr(err, "ringshard dedup: b/2.csv.gz: ") &&
                      strstr(err, i ? " data bytes, the manifest says " : " rows, the manifest says ") &&
                      strstr(err, "(the file does not match b/manifest.json)"),
                  "%s", err);
        free(out);
        free(err);
    }
}

/* dedup --key a,b: the parts are joined by --key-sep into the key the ring
 * places (kept as is: users' code and the key indexes of histories hold
 * it), so ("x|y","z") and ("x","y|z") joined to the same bytes and one
 * row was dropped as a copy of the other, exit 0. A part holding the
 * separator makes its row malformed: by default exit 2 naming the file,
 * line, field and separator, nothing published; under skip or quarantine
 * the other rows are deduplicated as Python does on the (a, b) tuples
 * (keep.py); another --key-sep keeps every distinct pair; dedup --append
 * likewise; bucket places such rows as before. */
Test(dedup, composite_key_part_holding_the_separator_is_a_bad_row)
{
    char *out, *err;
    int rc = sh(&out, &err,
                "cd %s && printf 'a,b,v\\n\"x|y\",z,1\\nx,\"y|z\",2\\nx,y,3\\np,q,4\\nx,y,5\\n\"p\",q,6\\n' > in.csv && "
                "printf 'a,b,v\\nm,n,0\\nx,y,7\\n' > base.csv && "
                "printf 'import csv, glob, sys\\n"
                "sep, d, ins = sys.argv[1], sys.argv[2], sys.argv[3:]\\n"
                "want, seen = set(), set()\\n"
                "for f in ins:\\n"
                "    for r in list(csv.reader(open(f, newline=\"\")))[1:]:\\n"
                "        if sep not in r[0] + r[1] and (r[0], r[1]) not in seen:\\n"
                "            seen.add((r[0], r[1])); want.add(tuple(r))\\n"
                "got = [tuple(r) for f in glob.glob(d + \"/**/*.csv\", recursive=True) for r in list(csv.reader(open(f, newline=\"\")))[1:]]\\n"
                "assert len(got) == len(set(got)) and set(got) == want, (sorted(got), sorted(want))\\n"
                "print(len(got))\\n' > keep.py && "
                "\"$RS\" dedup --quiet --nodes 3 --compress none --key a,b -o d in.csv; echo \"rc=$?\"; ls",
                tmp);
    cr_assert_eq(rc, 0, "%s %s", out, err);
    cr_assert(strstr(out, "rc=2") && !strstr(out, "d\n"), "%s %s", out, err);
    cr_assert(strstr(err, "in.csv: line 2 (record 1): key part (field 1) holds the key separator '|'"), "%s", err);
    cr_assert(strstr(err, "pick a --key-sep that no key part holds"), "%s", err);
    free(out);
    free(err);
    rc = sh(&out, &err,
            "cd %s && \"$RS\" dedup --quiet --nodes 3 --compress none --key a,b --on-bad-row skip -o s in.csv && "
            "python3 keep.py '|' s in.csv && "
            "\"$RS\" dedup --quiet --nodes 3 --compress none --key a,b --on-bad-row quarantine=q.tsv -o q in.csv && "
            "python3 keep.py '|' q in.csv && tail -n +2 q.tsv | cut -f2-4 && "
            "\"$RS\" dedup --quiet --nodes 3 --compress none --key a,b --key-sep ';' -o k in.csv && "
            "python3 keep.py ';' k in.csv && "
            "\"$RS\" bucket --quiet --nodes 3 --compress none --key a,b -o b in.csv && cat b/*.csv | grep -vc '^a,b,v$'",
            tmp);
    cr_assert_eq(rc, 0, "%s %s", out, err);
    cr_assert_str_eq(out, "2\n2\n2\t1\tkey part holds the key separator\n3\t2\tkey part holds the key separator\n4\n6\n",
                     "%s", out);
    free(out);
    free(err);
    rc = sh(&out, &err,
            "cd %s && \"$RS\" dedup --quiet --nodes 3 --compress none --key a,b -o h base.csv && "
            "{ \"$RS\" dedup --quiet --append -o h in.csv; echo \"rc=$?\"; } && "
            "\"$RS\" dedup --quiet --append --on-bad-row skip -o h in.csv && python3 keep.py '|' h base.csv in.csv",
            tmp);
    cr_assert_eq(rc, 0, "%s %s", out, err);
    cr_assert_str_eq(out, "rc=2\n3\n", "%s %s", out, err);
    cr_assert(strstr(err, "in.csv: line 2 (record 1): key part (field 1) holds the key separator '|'"), "%s", err);
    free(out);
    free(err);
}
