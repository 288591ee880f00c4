/* The pipeline through its library interface (pipeline.h), for what the
 * command line cannot reach: a --memory below the command's 32 MiB floor.
 * Each test runs in Criterion's forked child, so the OpenMP team lives
 * there, never in the runner. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ringshard/pipeline.h"
#include "support.h"

TestSuite(pipeline, .init = test_dir_setup, .fini = test_dir_teardown, .timeout = 120);

/* Destination: the key's first byte, modulo the destinations. */
static uint32_t first_byte(void *ctx, int tid, uint32_t input, const char *key, size_t keylen, const char *row,
                           size_t rowlen)
{
    (void)tid, (void)input, (void)row, (void)rowlen;
    uint32_t n = *(const uint32_t *)ctx;
    return keylen ? (uint32_t)(unsigned char)key[0] % n : 0;
}

/* Writes `blank` empty lines, a header and `rows` rows into path and
 * returns what one output of all the rows must hold: the header and the
 * rows, in order. */
static char *write_input(const char *path, size_t blank, int rows)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    size_t cap = (size_t)rows * 64 + 64, len = 0;
    char *want = malloc(cap);
    cr_assert_not_null(want);
    for (size_t i = 0; i < blank; i++)
        fputc('\n', f);
    len += (size_t)snprintf(want + len, cap - len, "id,value\n");
    for (int i = 0; i < rows; i++)
        len += (size_t)snprintf(want + len, cap - len, "%c%07d,row %d of the input\n", 'a' + i % 26, i, i);
    fputs(want, f);
    fclose(f);
    return want;
}

/* Reading the header of an input that starts with many blank lines reads
 * far past the first batch's target; with 4 MiB of --memory beyond the
 * fixed allowance (256 KiB batches) what is carried into the next batch is
 * larger than a batch. */
Test(pipeline, carry_larger_than_a_batch_under_a_small_memory)
{
    const char *in = path_join(test_dir, "in.csv");
    char *want = write_input(in, 192 * 1024 + 1, 20000);
    for (int threads = 1; threads <= 2; threads++) {
        char out[3][4096];
        const char *outs[3];
        for (int d = 0; d < 3; d++) {
            snprintf(out[d], sizeof out[d], "%s/out%d.%d.csv", test_dir, threads, d);
            outs[d] = out[d];
        }
        rs_pipeline_opts o;
        memset(&o, 0, sizeof o);
        const char *inputs[1] = {in};
        uint32_t ndest = 3;
        o.inputs = inputs;
        o.ninputs = 1;
        o.dialect.delim = ',';
        o.header = 1;
        o.key = "id";
        o.key_sep = '|';
        o.threads = threads;
        o.memory = RS_MEMORY_FIXED + ((uint64_t)4 << 20);
        o.ndest = ndest;
        o.route = first_byte;
        o.route_ctx = &ndest;
        o.dest_paths = outs;
        o.compress = 0;
        rs_pipeline_result res;
        rs_error err = {0};
        int rc = rs_pipeline_run(&o, &res, &err);
        cr_assert_eq(rc, 0, "-j%d: %s", threads, err.msg);
        cr_assert_eq(res.rows, 20000, "-j%d: %llu rows", threads, (unsigned long long)res.rows);
        rs_pipeline_result_free(&res);
        /* every row in its destination, in input order */
        for (int d = 0; d < 3; d++) {
            size_t len;
            char *got = slurp(out[d], &len);
            cr_assert_not_null(got);
            char *expect = malloc(strlen(want) + 1);
            cr_assert_not_null(expect);
            size_t el = 0;
            for (const char *line = want; *line;) {
                const char *nl = strchr(line, '\n');
                size_t ll = (size_t)(nl - line) + 1;
                if (line == want || (uint32_t)(unsigned char)line[0] % 3 == (uint32_t)d) {
                    memcpy(expect + el, line, ll);
                    el += ll;
                }
                line = nl + 1;
            }
            cr_assert_eq(len, el, "-j%d, output %d: %zu bytes, want %zu", threads, d, len, el);
            cr_assert(memcmp(got, expect, el) == 0, "-j%d, output %d differs", threads, d);
            free(got);
            free(expect);
        }
    }
    free(want);
}
