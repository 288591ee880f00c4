/* The names on disk (ringshard/filename.h): the encoding of node names -
 * injective, also after case folding, against a reference decoder, over
 * a generated set of tricky names - every name made from it, the
 * generations' names, the codec table; then every command over a ring
 * whose node names look like the directory's own names or like each
 * other's files (tests/check_names.py: Python's gzip, csv and json, and
 * `ringshard locate`). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "ringshard/dataset.h"
#include "ringshard/deflate.h"
#include "support.h"

/* ---- the encoding ---- */

/* The reference decoder: %XX (hex digits of either case) is the byte XX,
 * every other byte itself. Returns malloc'd, or NULL when s holds a '~'
 * (a cut name: not decodable) or a '%' without two hex digits. */
static char *decode(const char *s)
{
    char *o = malloc(strlen(s) + 1), *p = o;
    for (; *s; s++) {
        if (*s == '~') {
            free(o);
            return NULL;
        }
        if (*s != '%') {
            *p++ = *s;
            continue;
        }
        if (!isxdigit((unsigned char)s[1]) || !isxdigit((unsigned char)s[2])) {
            free(o);
            return NULL;
        }
        char hex[3] = {s[1], s[2], 0};
        *p++ = (char)strtol(hex, NULL, 16);
        s += 2;
    }
    *p = '\0';
    return o;
}

static void fold(char *s)
{
    for (; *s; s++)
        *s = (char)tolower((unsigned char)*s);
}

/* What every encoded name must be (filename.h): no '.', no "__", no '_'
 * first or last, no uppercase letter but an escape's hex digit, nothing
 * but [a-z0-9_%A-F~-]; and, uncut, decoded back to the name also once
 * case folded. */
static void check_encoding(const char *name, const char *enc)
{
    size_t n = strlen(enc);
    cr_assert(n > 0 && n <= 217, "'%s' -> '%s'", name, enc);
    cr_assert_null(strchr(enc, '.'), "'%s' -> '%s'", name, enc);
    cr_assert_null(strstr(enc, "__"), "'%s' -> '%s'", name, enc);
    cr_assert(enc[0] != '_' && enc[n - 1] != '_', "'%s' -> '%s'", name, enc);
    cr_assert_eq(strspn(enc, "abcdefghijklmnopqrstuvwxyz0123456789_%ABCDEF~-"), n, "'%s' -> '%s'", name, enc);
    for (size_t i = 0; i < n; i++)
        if (isupper((unsigned char)enc[i]))
            cr_assert((i >= 1 && enc[i - 1] == '%') || (i >= 2 && enc[i - 2] == '%'), "'%s' -> '%s'", name, enc);
    if (strchr(enc, '~'))
        return;
    char *copy = strdup(enc);
    for (int pass = 0; pass < 2; pass++) {   /* as made, then case folded: x -> fold(enc(x)) is injective */
        if (pass)
            fold(copy);
        char *back = decode(copy);
        cr_assert_not_null(back, "'%s'", copy);
        cr_assert_str_eq(back, name, "'%s' -> '%s'", name, copy);   /* "" -> "%00": a NUL, read as "" */
        free(back);
    }
    free(copy);
}

Test(names, cases)
{
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"0", "0"}, {"999", "999"}, {"node-b", "node-b"}, {"g00000001", "g00000001"},
        {"x_y", "x_y"}, {"a_b_c", "a_b_c"}, {"_x", "%5Fx"}, {"x_", "x%5F"}, {"a__b", "a%5F%5Fb"}, {"_", "%5F"},
        {"A", "%41"}, {"Node-A", "%4Eode-%41"}, {"eu.csv1", "eu%2Ecsv1"}, {"a.keyidx", "a%2Ekeyidx"},
        {"manifest.json", "manifest%2Ejson"}, {"x y", "x%20y"}, {"50%", "50%25"}, {"\xce\xa9", "%CE%A9"},
        {"a/b", "a%2Fb"}, {"..", "%2E%2E"}, {".", "%2E"}, {"~", "%7E"}, {"\x01", "%01"}, {"", "%00"},
        {"\\:*?\"<>|", "%5C%3A%2A%3F%22%3C%3E%7C"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = rs_name_node(cases[i].in);
        cr_assert_str_eq(got, cases[i].out, "case %zu", i);
        free(got);
    }
}

/* Every name of length 1 to 3 over bytes that matter to the encoding, and
 * names that look like a directory's own. */
static char **tricky_names(size_t *n)
{
    static const char alphabet[] = "aA_.%-~ 2E/\xce\xa9";
    static const char *const extra[] = {
        "eu", "eu.csv1", "eu.csv", "EU.CSV1", "a.keyidx", "a.g00000001.keyidx", "g00000001", "G00000001",
        "manifest.json", "MANIFEST.JSON", "x y", "50%", "50%25", "\xce\xa9", "A", "a", "", "%00", "%2E", "a%2Eb",
        "a~0123456789abcdef", "x.ringshard-tmp.1.ab", "d.damaged.1", "a__b", "a_", "_b", "0", "999", "node-b",
    };
    size_t k = sizeof alphabet - 1, cap = k + k * k + k * k * k + sizeof extra / sizeof extra[0];
    char **v = calloc(cap, sizeof *v);
    *n = 0;
    for (size_t len = 1; len <= 3; len++) {
        size_t total = len == 1 ? k : len == 2 ? k * k : k * k * k;
        for (size_t c = 0; c < total; c++) {
            char s[4] = {0};
            for (size_t i = 0, x = c; i < len; i++, x /= k)
                s[i] = alphabet[x % k];
            v[(*n)++] = strdup(s);
        }
    }
    for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++) {
        int dup = 0;
        for (size_t j = 0; j < *n && !dup; j++)
            dup = !strcmp(v[j], extra[i]);
        if (!dup)
            v[(*n)++] = strdup(extra[i]);
    }
    return v;
}

static int cmp_folded(const void *a, const void *b)
{
    return strcasecmp(*(char *const *)a, *(char *const *)b);
}

/* No two of names[0..n) are equal after case folding (sorted by it). */
static void assert_distinct_folded(char **names, size_t n, const char *what)
{
    qsort(names, n, sizeof *names, cmp_folded);
    for (size_t i = 1; i < n; i++)
        cr_assert(strcasecmp(names[i - 1], names[i]) != 0, "%s: '%s' and '%s'", what, names[i - 1], names[i]);
}

Test(names, injective_and_case_blind)
{
    size_t n;
    char **names = tricky_names(&n);
    cr_assert_gt(n, 2000);
    char **enc = calloc(n, sizeof *enc);
    for (size_t i = 0; i < n; i++) {
        enc[i] = rs_name_node(names[i]);
        check_encoding(names[i], enc[i]);
    }
    assert_distinct_folded(enc, n, "encoded names");
    /* every name a node gives a directory, and the directory's own, in one
       set: no two alike (they live in two directories at most, but no type
       of name can be taken for another) */
    size_t m = 0, cap = 4 * n + 8;
    char **all = calloc(cap, sizeof *all);
    all[m++] = strdup("manifest.json");
    all[m++] = strdup("g00000001");
    all[m++] = strdup("g00000002");
    for (size_t i = 0; i < n; i++) {
        all[m++] = rs_data_file(names[i], NULL, RS_COMPRESS_GZIP);
        all[m++] = rs_data_file(names[i], NULL, RS_COMPRESS_NONE);
        all[m++] = rs_name_keyidx(names[i]);
        all[m++] = rs_name_keyidx_built(names[i], 1);
    }
    assert_distinct_folded(all, m, "a directory's names");
    for (size_t i = 0; i < m; i++)
        free(all[i]);
    free(all);
    for (size_t i = 0; i < n; i++)
        free(enc[i]);
    free(enc);
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

Test(names, pairs_unambiguous)
{
    static const char *const v[] = {"a", "a_", "_b", "a__b", "b", "a_b", "A", "_", "__", "x.csv", "x", "csv",
                                    "eu", "eu.csv1", "a%5F", "%5Fb", "g00000001", "\xce\xa9", "", "~"};
    size_t k = sizeof v / sizeof v[0], n = 0;
    char **names = calloc(k * k + k, sizeof *names);
    for (size_t i = 0; i < k; i++) {
        names[n++] = rs_data_file(v[i], NULL, RS_COMPRESS_GZIP);
        for (size_t j = 0; j < k; j++)
            names[n++] = rs_data_file(v[i], v[j], RS_COMPRESS_GZIP);
    }
    for (size_t i = 0; i < n; i++) {   /* the join is the only "__" (a bucket's name has none) */
        int joins = 0;
        for (const char *q = names[i]; *q; q++)
            joins += q[0] == '_' && q[1] == '_';
        cr_assert_eq(joins, i % (k + 1) == 0 ? 0 : 1, "%s", names[i]);
    }
    assert_distinct_folded(names, n, "pairs");
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

Test(names, long_names)
{
    char a[301], b[301];
    memset(a, 'n', 300);
    a[300] = '\0';
    memcpy(b, a, sizeof a);
    b[299] = 'm';
    char *sa = rs_name_node(a), *sb = rs_name_node(b);
    cr_assert_eq(strlen(sa), 217, "%s", sa);
    cr_assert(strncmp(sa, a, 200) == 0);
    cr_assert_eq(sa[200], '~');
    cr_assert_eq(strspn(sa + 201, "0123456789abcdef"), 16);
    cr_assert(strncmp(sa, sb, 201) == 0 && strcmp(sa, sb) != 0, "same prefix, different hash");
    check_encoding(a, sa);
    /* exactly 200 bytes: not cut */
    a[200] = '\0';
    char *s200 = rs_name_node(a);
    cr_assert_str_eq(s200, a);
    /* an escape is never split by the cut */
    memset(a, 'n', 199);
    strcpy(a + 199, "\xc3\xa4\xc3\xa4");
    char *split = rs_name_node(a);
    cr_assert_eq(strlen(split), 199 + 17);
    cr_assert_eq(split[199], '~');
    /* a pair of two long names fits NAME_MAX, and so does a built index */
    memset(a, 'n', 300);
    a[300] = '\0';
    char *pair = rs_data_file(a, b, RS_COMPRESS_ZSTD), *built = rs_name_keyidx_built(a, RS_GEN_MAX);
    cr_assert_leq(strlen(pair), 255, "%zu", strlen(pair));
    cr_assert_leq(strlen(built), 255, "%zu", strlen(built));
    cr_assert_not_null(strstr(pair, "~"));
    /* and can be created */
    char *dir = make_tmpdir();
    FILE *f = fopen(path_join(dir, pair), "w");
    cr_assert_not_null(f, "%s", pair);
    fclose(f);
    remove_tree(dir);
    free(dir);
    free(sa);
    free(sb);
    free(s200);
    free(split);
    free(pair);
    free(built);
}

Test(names, created_in_the_directory)
{
    size_t n;
    char **names = tricky_names(&n);
    char *dir = make_tmpdir();
    for (size_t i = 0; i < n; i++) {
        char *file = rs_data_file(names[i], NULL, RS_COMPRESS_GZIP);
        cr_assert(file[0] != '.' && !strchr(file, '/'), "%s", file);
        FILE *f = fopen(path_join(dir, file), "wx");
        cr_assert_not_null(f, "'%s' -> %s: cannot create it, or it exists", names[i], file);
        fclose(f);
        free(file);
        free(names[i]);
    }
    free(names);
    DIR *dh = opendir(dir);
    size_t count = 0;
    for (struct dirent *de; (de = readdir(dh));)
        count += de->d_name[0] != '.';
    closedir(dh);
    cr_assert_eq(count, n);
    remove_tree(dir);
    free(dir);
}

Test(names, collisions_refused)
{
    char a[] = "eu.csv.gz", b[] = "x.csv.gz", c[] = "EU.csv.gz";
    char *names[] = {a, b, c};
    const char *nodes[] = {"one", "two", "three"}, *to[] = {"p", "q", "r"};
    rs_error err = {0};
    cr_assert_eq(rs_names_distinct(names, nodes, NULL, 2, &err), 0);
    cr_assert_eq(rs_names_distinct(names, nodes, NULL, 3, &err), -1);
    cr_assert_eq(err.code, RS_EXIT_USAGE);
    cr_assert(strstr(err.msg, "node 'one'") && strstr(err.msg, "node 'three'"), "%s", err.msg);
    err = (rs_error){0};
    cr_assert_eq(rs_names_distinct(names, nodes, to, 3, &err), -1);
    cr_assert(strstr(err.msg, "'one' -> 'p'"), "%s", err.msg);
}

Test(names, generations)
{
    char dn[16];
    rs_gen_dir_name(2, dn);
    cr_assert_str_eq(dn, "g00000002");
    rs_gen_dir_name(RS_GEN_MAX, dn);
    cr_assert_str_eq(dn, "g99999999");
    cr_assert_eq(rs_gen_dir_parse("g00000002"), 2);
    cr_assert_eq(rs_gen_dir_parse("g99999999"), RS_GEN_MAX);
    cr_assert_eq(rs_gen_dir_parse("g100000000"), RS_GEN_MAX + 1);
    static const char *const no[] = {"g00000000", "g0000002", "g000000002", "G00000002", "g00000002 ",
                                     "g00000002.keyidx", "g", "", "x00000002", "g0000000a", "g-0000002"};
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        cr_assert_eq(rs_gen_dir_parse(no[i]), 0, "%s", no[i]);
    for (uint64_t g = 1; g < 5000; g += 7) {
        rs_gen_dir_name(g, dn);
        cr_assert_eq(rs_gen_dir_parse(dn), g);
    }
    char *k = rs_name_keyidx_built("a.b", 3);
    cr_assert_str_eq(k, "a%2Eb.g00000003.keyidx");
    free(k);
}

Test(names, codecs)
{
    static const struct {
        int c;
        const char *name, *ext;
    } t[] = {{RS_COMPRESS_GZIP, "gzip", ".csv.gz"}, {RS_COMPRESS_ZSTD, "zstd", ".csv.zst"},
             {RS_COMPRESS_NONE, "none", ".csv"}};
    for (size_t i = 0; i < 3; i++) {
        int c = -1;
        cr_assert_str_eq(rs_compress_name(t[i].c), t[i].name);
        cr_assert_str_eq(rs_data_ext(t[i].c), t[i].ext);
        cr_assert_eq(rs_compress_parse(t[i].name, &c), 0);
        cr_assert_eq(c, t[i].c);
    }
    int c = 7;
    cr_assert_eq(rs_compress_parse("GZIP", &c), -1);
    cr_assert_eq(rs_compress_parse("gz", &c), -1);
    cr_assert_eq(c, 7);
}

Test(names, damaged_copy)
{
    char *dir = make_tmpdir();
    char d[600], first[640];
    snprintf(d, sizeof d, "%s/D", dir);
    char *p = rs_name_damaged(d);
    snprintf(first, sizeof first, "%s.damaged.1", d);
    cr_assert_str_eq(p, first);
    cr_assert_eq(mkdir(p, 0755), 0);
    free(p);
    strcat(d, "//");
    p = rs_name_damaged(d);
    snprintf(first, sizeof first, "%s/D.damaged.2", dir);
    cr_assert_str_eq(p, first);
    free(p);
    remove_tree(dir);
    free(dir);
}

/* ---- every command over tricky node names ---- */

#define CHECK "python3 " RS_SOURCE_DIR "/tests/check_names.py \"$RS\" "
#define OLD_NAMES "python3 " RS_SOURCE_DIR "/tests/old_names.py "
#define RING "--key bill_id --nodes-file nodes.txt"

/* nodes.txt: names like each other's files ("eu" and "eu.csv1"), like a
 * directory's own names, with a space, '%', non-ASCII bytes, two that
 * differ only in case, and plain ones; nodes2.txt the same without "A"
 * (earlier versions gave "A" and "a" files that a case-folding file system
 * takes for one). new.txt: nodes.txt and three more (plan --emit). Inputs:
 * bills with repeated keys. */
static void inputs(void)
{
    test_dir_setup();
    static const char nodes[] = "eu\neu.csv1\na.keyidx\ng00000001\nmanifest.json\n\"x y\"\n50%\n\xce\xa9\n"
                                "a\n0\n7\nnode-b\nx_y\n";
    FILE *f = fopen(path_join(test_dir, "nodes2.txt"), "w");
    fputs(nodes, f);
    fclose(f);
    f = fopen(path_join(test_dir, "nodes.txt"), "w");
    fprintf(f, "%sA\n", nodes);
    fclose(f);
    f = fopen(path_join(test_dir, "new.txt"), "w");
    fprintf(f, "%sA\nnew.csv\nEu\ng00000002\n", nodes);
    fclose(f);
    SH_OK(GEN " --rows 3000 --seed 1 --dup-share 0.1 -o a.csv 2>/dev/null && "
          GEN " --rows 2000 --seed 2 --dup-share 0.1 -o b.csv 2>/dev/null && gzip b.csv && "
          GEN " --rows 1000 --seed 3 --dup-share 0.1 -o c.csv 2>/dev/null");
}

TestSuite(names_cmd, .init = inputs, .fini = test_dir_teardown, .timeout = 600);

/* Runs the command; asserts exit `want` and, unless NULL, `needle` in its
 * stdout or stderr. */
#define EXPECT(want, needle, ...)                                                                          \
    do {                                                                                                   \
        cmd_result r_ = sh_in_test_dir(__VA_ARGS__);                                                       \
        cr_assert_eq(r_.rc, want, "exit %d\nstdout: %s\nstderr: %s", r_.rc, r_.out, r_.err);               \
        const char *n_ = needle;                                                                           \
        cr_assert(!n_ || strstr(r_.out, n_) || strstr(r_.err, n_), "'%s' not in\nstdout: %s\nstderr: %s",  \
                  n_ ? n_ : "", r_.out, r_.err);                                                           \
        cmd_result_free(&r_);                                                                              \
    } while (0)

#define VERIFY(dir) EXPECT(0, "OK: ", "\"$RS\" verify " dir)

Test(names_cmd, bucket_append_compact_repair_plan)
{
    SH_OK("\"$RS\" bucket " RING " -o B a.csv 2>/dev/null");
    VERIFY("B");
    EXPECT(0, "ok 3000 rows in 14 files of 14 nodes", CHECK "B all bill_id a.csv -- --nodes-file nodes.txt");
    SH_OK("\"$RS\" bucket " RING " --append -o B b.csv.gz 2>/dev/null");
    VERIFY("B");
    EXPECT(0, "ok 5000 rows in 28 files", CHECK "B all bill_id a.csv b.csv.gz -- --nodes-file nodes.txt");
    SH_OK("\"$RS\" compact B 2>/dev/null");
    VERIFY("B");
    EXPECT(0, "ok 5000 rows in 14 files", CHECK "B all bill_id a.csv b.csv.gz -- --nodes-file nodes.txt");
    /* a segment one byte short: repair keeps the rest (exit 3: that file's
       rows not kept), B verifies again, and an append of its input brings
       them back */
    SH_OK("\"$RS\" bucket " RING " --append -o B c.csv 2>/dev/null");
    VERIFY("B");
    SH_OK("f=$(ls B/g*/eu%%2Ecsv1.csv.gz) && truncate -s -1 \"$f\"");
    EXPECT(3, "eu%2Ecsv1.csv.gz", "\"$RS\" verify B");
    EXPECT(3, "NOT KEPT B/g00000003/eu%2Ecsv1.csv.gz: ", "\"$RS\" repair B");
    EXPECT(0, "no damage", "\"$RS\" repair B");
    SH_OK("test -d B.damaged.1");
    VERIFY("B");
    SH_OK("\"$RS\" bucket --quiet --append -o B c.csv");
    VERIFY("B");
    EXPECT(0, "ok 6000 rows in 15 files", CHECK "B all bill_id a.csv b.csv.gz c.csv -- --nodes-file nodes.txt");
    EXPECT(0, "nodes                   14", "\"$RS\" stats B");
    /* the moves to three added nodes, one a case variant of another */
    SH_OK("\"$RS\" plan --from-buckets B --add-names 'new.csv,Eu,g00000002' --emit M >/dev/null 2>&1");
    VERIFY("M");
    EXPECT(0, "ok ", CHECK "M moves bill_id a.csv b.csv.gz c.csv -- --nodes-file nodes.txt -- --nodes-file new.txt");
    SH_OK("test -f M/eu%%2Ecsv1__%%45u.csv.gz && test -f M/x%%20y__g00000002.csv.gz");
}

Test(names_cmd, dedup_append_compact)
{
    SH_OK("\"$RS\" dedup " RING " --append -o D a.csv 2>/dev/null");
    VERIFY("D");
    SH_OK("\"$RS\" dedup " RING " --append -o D b.csv.gz 2>/dev/null");
    VERIFY("D");
    EXPECT(0, "in 28 files of 14 nodes", CHECK "D first bill_id a.csv b.csv.gz -- --nodes-file nodes.txt");
    SH_OK("\"$RS\" compact D 2>/dev/null");
    EXPECT(0, "14 key indexes hold their files' keys", "\"$RS\" verify D");
    EXPECT(0, "in 14 files of 14 nodes", CHECK "D first bill_id a.csv b.csv.gz -- --nodes-file nodes.txt");
    /* each node its own index: "eu" and "eu.csv1" no longer share eu.keyidx */
    SH_OK("test -f D/eu.keyidx && test -f D/eu%%2Ecsv1.keyidx && test -f D/%%41.keyidx && test -f D/a.keyidx");
    SH_OK("\"$RS\" dedup " RING " --append -o D c.csv 2>/dev/null");
    VERIFY("D");
    EXPECT(0, "no damage", "\"$RS\" repair D");
    SH_OK("\"$RS\" compact D 2>/dev/null");
    VERIFY("D");
    EXPECT(0, "in 14 files of 14 nodes", CHECK "D first bill_id a.csv b.csv.gz c.csv -- --nodes-file nodes.txt");
}

/* Directories whose files carry the names earlier versions gave them
 * ("eu.csv1.csv.gz", "manifest.json.keyidx"): read, appended, compacted
 * and verified through their manifests. */
Test(names_cmd, old_spelling)
{
    SH_OK("\"$RS\" dedup --key bill_id --nodes-file nodes2.txt --append -o D a.csv 2>/dev/null");
    EXPECT(0, "eu%2Ecsv1.csv.gz -> eu.csv1.csv.gz", OLD_NAMES "D");
    SH_OK("test -f D/manifest.json.keyidx && test -f D/a.keyidx.csv.gz");
    VERIFY("D");
    SH_OK("\"$RS\" dedup --key bill_id --nodes-file nodes2.txt --append -o D b.csv.gz 2>/dev/null");
    VERIFY("D");
    SH_OK("\"$RS\" compact D 2>/dev/null");
    VERIFY("D");
    EXPECT(0, "in 13 files of 13 nodes", CHECK "D first bill_id a.csv b.csv.gz -- --nodes-file nodes2.txt");
    SH_OK("test -f D/eu.csv1.csv.gz");   /* compact keeps a base file's name */

    SH_OK("\"$RS\" bucket --key bill_id --nodes-file nodes2.txt -o B a.csv 2>/dev/null");
    EXPECT(0, "-> manifest.json.csv.gz", OLD_NAMES "B");
    SH_OK("\"$RS\" bucket --key bill_id --nodes-file nodes2.txt --append -o B b.csv.gz 2>/dev/null");
    VERIFY("B");
    EXPECT(0, "ok 5000 rows", CHECK "B all bill_id a.csv b.csv.gz -- --nodes-file nodes2.txt");
    SH_OK("\"$RS\" compact B 2>/dev/null");
    VERIFY("B");
    EXPECT(0, "ok 5000 rows in 13 files", CHECK "B all bill_id a.csv b.csv.gz -- --nodes-file nodes2.txt");
}
