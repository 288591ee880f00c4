/* tests/test_fuzz_regressions.c - replays the fuzzers' regression inputs.
 *
 * Every file under fixtures/fuzz/regressions/<harness>/ goes through the
 * same check the libFuzzer harness fuzz/fuzz_<harness>.c runs (fuzz/check_
 * <harness>.h), compiled here by the ordinary build without libFuzzer. A
 * check abort()s on any disagreement (its message and the input's name go
 * to stderr), which fails the test. Inputs land there when a fuzzer finds a
 * crash (tools/dev/fuzz.sh) and it is fixed; a few tricky seeds are kept too,
 * so that every harness has something to replay. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../fuzz/check_csv.h"
#include "../fuzz/check_gzip.h"
#include "../fuzz/check_json.h"
#include "../fuzz/check_nodes.h"
#include "../fuzz/check_size.h"


static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs check on every file of fixtures/fuzz/<sub>/, in name order; returns
 * how many. */
static size_t replay_dir(const char *sub, int (*check)(const uint8_t *, size_t))
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/fixtures/fuzz/%s", RS_SOURCE_DIR, sub);
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "cannot open %s", dir);
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            names = realloc(names, cap * sizeof *names);
            cr_assert_not_null(names);
        }
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, cmp_names);
    for (size_t i = 0; i < n; i++) {
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        FILE *f = fopen(path, "rb");
        cr_assert_not_null(f, "cannot open %s", path);
        uint8_t *buf = NULL;
        size_t len = 0, bcap = 0, k;
        do {
            if (bcap - len < 4096) {
                bcap = bcap ? 2 * bcap : 8192;
                buf = realloc(buf, bcap);
                cr_assert_not_null(buf);
            }
            k = fread(buf + len, 1, bcap - len, f);
            len += k;
        } while (k > 0);
        cr_assert(!ferror(f), "cannot read %s", path);
        fclose(f);
        fprintf(stderr, "fuzz input %s/%s (%zu bytes)\n", sub, names[i], len);
        cr_assert_eq(check(buf, len), 0, "%s", path);
        free(buf);
        free(names[i]);
    }
    free(names);
    return n;
}

/* The regression inputs of a harness: fixtures/fuzz/regressions/<harness>/. */
static size_t replay(const char *harness, int (*check)(const uint8_t *, size_t))
{
    char sub[256];
    snprintf(sub, sizeof sub, "regressions/%s", harness);
    return replay_dir(sub, check);
}

Test(fuzz_regressions, csv) { cr_assert_geq(replay("csv", check_csv), 1); }

/* The CSV harness's seed corpus too: rs_csv_next and rs_csv_rows against
 * libcsv on every file of it. */
Test(fuzz_regressions, csv_seed_corpus) { cr_assert_geq(replay_dir("csv", check_csv), 10); }
Test(fuzz_regressions, gzip) { cr_assert_geq(replay("gzip", check_gzip), 1); }
Test(fuzz_regressions, nodes) { cr_assert_geq(replay("nodes", check_nodes), 1); }
Test(fuzz_regressions, size) { cr_assert_geq(replay("size", check_size), 1); }
Test(fuzz_regressions, json) { cr_assert_geq(replay("json", check_json), 1); }
