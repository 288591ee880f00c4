/* bench_manifest: what opening a directory's manifest costs as its
 * history grows, with and without files[].runs: a base compacted from
 * INPUTS daily appends over NODES nodes (every input has rows on every
 * node: INPUTS runs a file), written by rs_manifest_write, then read back
 * by rs_manifest_read RUNS times; prints its bytes and the median read
 * time of each, in the same run.
 *
 * Usage: bench_manifest [INPUTS] [NODES] [RUNS]   (default 365 1000 7)
 * The file lands in $TMPDIR (or /tmp) and is removed. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "ringshard/dataset.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The synthetic base: `inputs` inputs of 1000 rows a node, `nodes` files. */
static void fill(rs_manifest *m, size_t inputs, size_t nodes, int runs)
{
    static char names[2][64];
    memset(m, 0, sizeof *m);
    m->schema = 2, m->generation = inputs, m->kind = "buckets";
    m->ring_description = "scheme\tguava\n", m->ring_fingerprint = "0123456789abcdef0123456789abcdef";
    m->delimiter = ',', m->header = 1, m->header_line = "bill_id,user_id,amount", m->compress = 1, m->level = 1;
    m->ninputs = inputs;
    m->inputs = calloc(inputs, sizeof *m->inputs);
    m->nfiles = nodes;
    m->files = calloc(nodes, sizeof *m->files);
    if (!m->inputs || !m->files)
        exit(1);
    for (size_t i = 0; i < inputs; i++) {
        char *p = malloc(32);
        snprintf(p, 32, "day%04zu.csv.gz", i);
        m->inputs[i] = (rs_manifest_input){.path = p, .size = 1 << 20, .rows = 1000 * nodes, .bytes = 1 << 26,
                                           .checksum = "crc64:0123456789abcdef", .generation = i + 1};
    }
    for (size_t d = 0; d < nodes; d++) {
        rs_manifest_file *f = &m->files[d];
        snprintf(names[0], sizeof names[0], "%zu", d);
        f->node = strdup(names[0]);
        snprintf(names[1], sizeof names[1], "%zu.csv.gz", d);
        f->file = strdup(names[1]);
        f->rows = 1000 * inputs, f->bytes = 70000 * inputs, f->file_bytes = 20000 * inputs;
        f->crc32 = 0xdeadbeef, f->stored_crc32 = 0x12345678, f->has_stored_crc32 = 1;
        if (!runs)
            continue;
        f->nruns = inputs;
        f->runs = malloc(inputs * sizeof *f->runs);
        for (size_t i = 0; i < inputs; i++)
            f->runs[i] = (rs_manifest_run){i, 0, 1000};
    }
    m->rows = 1000 * inputs * nodes;
}

static void unfill(rs_manifest *m)
{
    for (size_t i = 0; i < m->ninputs; i++)
        free(m->inputs[i].path);
    for (size_t d = 0; d < m->nfiles; d++)
        free(m->files[d].node), free(m->files[d].file), free(m->files[d].runs);
    free(m->inputs);
    free(m->files);
}

int main(int argc, char **argv)
{
    size_t inputs = argc > 1 ? strtoul(argv[1], NULL, 10) : 365, nodes = argc > 2 ? strtoul(argv[2], NULL, 10) : 1000;
    int runs = argc > 3 ? atoi(argv[3]) : 7;
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char path[4096];
    snprintf(path, sizeof path, "%s/bench_manifest.%d.json", tmp, (int)getpid());
    printf("bench_manifest: %zu inputs x %zu nodes, median of %d reads\n", inputs, nodes, runs < 1 ? 1 : runs);
    for (int with = 0; with < 2; with++) {
        rs_manifest m, r;
        rs_error err = {0};
        fill(&m, inputs, nodes, with);
        if (rs_manifest_write(&m, path, &err) != 0) {
            fprintf(stderr, "bench_manifest: %s\n", err.msg);
            return 1;
        }
        unfill(&m);
        struct stat st;
        double *t = calloc(runs < 1 ? 1 : (size_t)runs, sizeof *t);
        for (int k = 0; k < (runs < 1 ? 1 : runs); k++) {
            double t0 = now();
            if (rs_manifest_read(&r, path, &err) != 0) {
                fprintf(stderr, "bench_manifest: %s\n", err.msg);
                return 1;
            }
            t[k] = now() - t0;
            rs_manifest_free(&r);
        }
        qsort(t, runs < 1 ? 1 : (size_t)runs, sizeof *t, cmp_double);
        stat(path, &st);
        printf("%-12s %10jd bytes  read %8.2f ms\n", with ? "with runs" : "without runs", (intmax_t)st.st_size,
               t[(runs < 1 ? 1 : runs) / 2] * 1e3);
        free(t);
        unlink(path);
    }
    return 0;
}
