/* Built against an installed ringshard with pkg-config by tools/test.sh:
 * proves that `cmake --install` gives a usable library, headers and .pc,
 * and that the library offers the jobs: it places a key, then buckets a
 * CSV it writes itself into a temporary directory (rs_bucket_job_run) and
 * verifies that directory (rs_verify_job_run), with public headers only.
 * Exit 0 when every check holds, 1 (with a message) when one fails. */
#define _GNU_SOURCE  /* mkdtemp */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ringshard/job_bucket.h>
#include <ringshard/job_verify.h>
#include <ringshard/dataset.h>
#include <ringshard/ring.h>

#define ROWS 1000

static int fail(const char *what, const rs_error *e)
{
    fprintf(stderr, "example: %s: %s\n", what, e && e->code ? e->msg : "check failed");
    return 1;
}

/* A small CSV: a header and ROWS rows keyed "key<i>". */
static int write_csv(const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs("id,amount\n", f);
    for (int i = 0; i < ROWS; i++)
        fprintf(f, "key%d,%d.%02d\n", i, i, i % 100);
    return fclose(f);
}

/* The default ring on nodes "0".."count-1"; NULL with e. */
static rs_ring *default_ring(uint32_t count, rs_error *e)
{
    rs_ring_opts o;
    rs_nodes n;
    rs_ring_opts_default(&o, RS_SCHEME_RING);
    if (rs_nodes_init_count(&n, count, e) != 0)
        return NULL;
    rs_ring *r = rs_ring_build(&o, &n, e);
    rs_nodes_free(&n);
    return r;
}

/* The default ring (Guava murmur3_128, 1000 x 200) on 1000 nodes places its first key as the
 * Java reference does. */
static int locate_check(void)
{
    rs_error e = {0};
    rs_ring *r = default_ring(1000, &e);
    if (!r)
        return fail("ring", &e);
    const char *node = rs_ring_nodes(r)->names[rs_ring_locate(r, "CHONGQING", 9)];
    printf("CHONGQING -> %s\n", node);
    int ok = strcmp(node, "949") == 0;
    rs_ring_free(r);
    return ok ? 0 : fail("CHONGQING is not on node 949", NULL);
}

/* Buckets input into dir on a ring of 16 nodes, then verifies dir. */
static int bucket_and_verify(const char *input, const char *dir)
{
    rs_error e = {0};
    rs_ring *ring = default_ring(16, &e);
    if (!ring)
        return fail("ring", &e);

    rs_bucket_job_opts bo = {0};
    rs_pipeline_opts_default(&bo.pipeline);
    bo.pipeline.inputs = &input;
    bo.pipeline.ninputs = 1;
    bo.pipeline.key = "id";
    bo.ring = ring;
    bo.outdir = dir;
    rs_bucket_job_result br;
    int rc = rs_bucket_job_run(&bo, &br, &e);
    int ok = rc == 0 && br.published && br.run.rows == ROWS;
    printf("bucket: %llu rows into %s, published %d\n", (unsigned long long)br.run.rows, dir, br.published);
    rs_bucket_job_result_free(&br);
    rs_ring_free(ring);
    if (!ok)
        return fail("bucket", &e);

    rs_verify_job_opts vo = {0};
    rs_pipeline_opts_default(&vo.pipeline);
    vo.dir = dir;
    vo.max_report = 20;
    rs_verify_job_result vr;
    rc = rs_verify_job_run(&vo, &vr, &e);
    ok = rc == 0 && vr.differences == 0 && vr.rows == ROWS && vr.files == 16 && !vr.moves;
    printf("verify: %zu files, %llu rows, %llu differences\n", vr.files, (unsigned long long)vr.rows,
           (unsigned long long)vr.differences);
    for (size_t i = 0; i < vr.nlines; i++)
        fprintf(stderr, "example: DIFF %s\n", vr.lines[i]);
    rs_verify_job_result_free(&vr);
    return ok ? 0 : fail("verify", &e);
}

int main(void)
{
    char tmp[] = "/tmp/ringshard-example.XXXXXX";
    if (!mkdtemp(tmp))
        return fail("mkdtemp", NULL);
    char input[64], dir[64];
    snprintf(input, sizeof input, "%s/in.csv", tmp);
    snprintf(dir, sizeof dir, "%s/out", tmp);
    int rc = locate_check();
    if (!rc && write_csv(input) != 0)
        rc = fail("cannot write the input", NULL);
    if (!rc)
        rc = bucket_and_verify(input, dir);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0)
        fprintf(stderr, "example: could not remove %s\n", tmp);
    return rc;
}
