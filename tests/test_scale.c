/* Costs in the node and file counts: looking a node up by name, reading a
 * ring description back, stats and verify of a directory of thousands of
 * files, and a file's key index built by a later generation. The lookups
 * are counted (rs_nodes_comparisons), never timed: a count that grows with
 * N squared (a pass over every node for every file or line) fails, one
 * that grows with N passes. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ringshard/dataset.h"
#include "ringshard/job_stats.h"
#include "ringshard/job_verify.h"
#include "ringshard/nodes.h"
#include "ringshard/ring.h"
#include "support.h"

TestSuite(scale, .init = test_dir_setup, .fini = test_dir_teardown, .timeout = 300);

/* At most this many name comparisons per node: a hash lookup makes one or
 * two; a linear search makes N / 2. */
#define PER_NODE 8

/* nodes "node-0".."node-(n-1)", added through the index. */
static void make_nodes(rs_nodes *n, rs_node_index *ix, uint32_t count)
{
    rs_error err = {0};
    memset(n, 0, sizeof *n);
    memset(ix, 0, sizeof *ix);
    char name[32];
    for (uint32_t i = 0; i < count; i++) {
        snprintf(name, sizeof name, "node-%u", i);
        cr_assert_eq(rs_nodes_append_indexed(n, ix, name, 1.0, "t", &err), 0, "%s", err.msg);
    }
}

Test(scale, node_index_finds_every_name_of_100000)
{
    enum { N = 100000 };
    rs_nodes n;
    rs_node_index ix;
    make_nodes(&n, &ix, N);
    cr_assert_eq(n.count, N);
    uint64_t before = rs_nodes_comparisons();
    char name[32];
    for (uint32_t i = 0; i < N; i++) {
        snprintf(name, sizeof name, "node-%u", i);
        cr_assert_eq(rs_node_index_find(&ix, &n, name), (int64_t)i, "%s", name);
        snprintf(name, sizeof name, "node-%u", N + i);   /* absent */
        cr_assert_eq(rs_node_index_find(&ix, &n, name), -1, "%s", name);
    }
    uint64_t used = rs_nodes_comparisons() - before;
    cr_assert_lt(used, (uint64_t)PER_NODE * N, "%llu comparisons for %d hits and %d misses", (unsigned long long)used,
                 N, N);
    /* a name given again is refused as rs_nodes_append refuses it */
    rs_error err = {0};
    cr_assert_eq(rs_nodes_append_indexed(&n, &ix, "node-99999", 1.0, "list", &err), -1);
    cr_assert_str_eq(err.msg, "list: duplicate node name 'node-99999'");
    cr_assert_eq(n.count, N);
    /* an index built over the list finds what rs_nodes_find finds */
    rs_node_index built;
    cr_assert_eq(rs_node_index_build(&built, &n, &err), 0);
    cr_assert_eq(rs_node_index_find(&built, &n, "node-12345"), rs_nodes_find(&n, "node-12345"));
    cr_assert_eq(rs_node_index_find(&built, &n, "node-"), -1);
    rs_node_index_free(&built);
    rs_node_index_free(&ix);
    rs_nodes_free(&n);
}

Test(scale, ring_description_of_20000_nodes_reads_back_in_linear_lookups)
{
    enum { N = 20000 };
    rs_nodes n;
    rs_node_index ix;
    make_nodes(&n, &ix, N);
    rs_node_index_free(&ix);
    n.weights[N - 1] = 2.5;
    n.down[7] = 1;
    rs_ring_opts o;
    rs_ring_opts_default(&o, RS_SCHEME_RING);
    o.vnodes = 1;
    rs_error err = {0};
    rs_ring *ring = rs_ring_build(&o, &n, &err);
    cr_assert(ring, "%s", err.msg);
    rs_ring_opts back;
    rs_nodes read;
    uint64_t before = rs_nodes_comparisons();
    cr_assert_eq(rs_ring_parse_description(rs_ring_description(ring), &back, &read, &err), 0, "%s", err.msg);
    uint64_t used = rs_nodes_comparisons() - before;
    cr_assert_lt(used, (uint64_t)PER_NODE * N, "%llu comparisons to read %d nodes", (unsigned long long)used, N);
    cr_assert_eq(read.count, N);
    cr_assert_str_eq(read.names[N - 1], "node-19999");
    cr_assert_eq(read.weights[N - 1], 2.5);
    cr_assert_eq(read.down[7], 1);
    cr_assert_eq(read.down[8], 0);
    rs_nodes_free(&read);
    /* a node listed twice is still refused, naming it */
    const char *twice = "ringshard-ring 1\nscheme\tring\nnodes\t3\nnode\t1\tup\ta\nnode\t1\tup\tb\nnode\t1\tup\ta\n";
    cr_assert_eq(rs_ring_parse_description(twice, &back, &read, &err), -1);
    cr_assert_str_eq(err.msg, "ring description: duplicate node name 'a'");
    rs_ring_free(ring);
    rs_nodes_free(&n);
}

/* A bucket directory of `nodes` nodes (one file each) from 3 rows a node. */
static void bucket_dir(const char *dir, unsigned nodes)
{
    SH_OK("awk 'BEGIN { print \"id,v\"; for (i = 0; i < %u; i++) print \"k\" i \",\" i }' > in.csv && "
          "\"$RS\" bucket --quiet --key id --nodes %u -o %s in.csv", 3 * nodes, nodes, dir);
}

Test(scale, stats_and_verify_of_6000_files_look_each_node_up_once)
{
    enum { N = 6000 };
    bucket_dir("d", N);
    const char *dir = path_join(test_dir, "d");
    rs_error err = {0};
    rs_stats_job_opts so = {.dir = dir, .z = 3, .factor = NAN};
    rs_stats_job_result sr = {0};
    uint64_t before = rs_nodes_comparisons();
    cr_assert_eq(rs_stats_job_run(&so, &sr, &err), 0, "%s", err.msg);
    uint64_t used = rs_nodes_comparisons() - before;
    cr_assert_lt(used, (uint64_t)PER_NODE * N, "stats: %llu comparisons for %d files", (unsigned long long)used, N);
    cr_assert_eq(sr.bal.nodes, N);
    cr_assert_eq(sr.bal.total, 3 * N);
    rs_stats_job_result_free(&sr);

    rs_verify_job_opts vo = {0};
    rs_pipeline_opts_default(&vo.pipeline);
    vo.dir = dir;
    vo.max_report = 10;
    rs_verify_job_result vr;
    before = rs_nodes_comparisons();
    cr_assert_eq(rs_verify_job_run(&vo, &vr, &err), 0, "%s", err.msg);
    used = rs_nodes_comparisons() - before;
    cr_assert_lt(used, (uint64_t)PER_NODE * N, "verify: %llu comparisons for %d files", (unsigned long long)used, N);
    cr_assert_eq(vr.differences, 0, "%s", vr.nlines ? vr.lines[0] : "");
    cr_assert_eq(vr.files, N);
    cr_assert_eq(vr.rows, 3 * N);
    rs_verify_job_result_free(&vr);
}

/* dedup --append onto a directory that `bucket` made indexes every base
 * file in the new generation's "indexes": each base file finds its own. */
Test(scale, key_indexes_a_later_generation_built_are_each_files_own)
{
    enum { N = 300 };
    bucket_dir("d", N);
    SH_OK("awk 'BEGIN { print \"id,v\"; for (i = 0; i < 50; i++) print \"n\" i \",\" i }' > more.csv && "
          "\"$RS\" dedup --quiet --append -o d more.csv");
    rs_bucketdir bd;
    rs_error err = {0};
    cr_assert_eq(rs_bucketdir_open(&bd, path_join(test_dir, "d"), &err), 0, "%s", err.msg);
    size_t found = 0;
    for (size_t i = 0; i < bd.nfiles; i++) {
        if (rs_bucketdir_segment(&bd, i))
            continue;
        char *name, want[64];
        uint64_t size;
        uint32_t crc;
        int by_row;
        cr_assert_eq(rs_bucketdir_index_of(&bd, i, &name, &size, &crc, &by_row), 1, "%s", bd.names[i]);
        snprintf(want, sizeof want, "g00000002/%s.g00000001.keyidx", bd.files[i]->node);
        cr_assert_str_eq(name, want);
        cr_assert_gt(size, 0);
        free(name);
        found++;
    }
    cr_assert_eq(found, N);
    rs_bucketdir_close(&bd);
    SH_OK("\"$RS\" verify d");
}

/* Removing half of 100,000 nodes by name through one edit: a few
 * comparisons a name, and the list left is the one rs_nodes_remove of
 * each name leaves (checked on 3,000 nodes, where the one-by-one removal
 * is affordable: it searches and moves the whole list every time). */
Test(scale, removing_half_of_100000_nodes_by_name_is_linear)
{
    enum { N = 100000, SMALL = 3000 };
    rs_nodes n;
    rs_node_index ix;
    make_nodes(&n, &ix, N);
    rs_node_index_free(&ix);
    rs_error err = {0};
    rs_node_edit e;
    char name[32];
    uint64_t before = rs_nodes_comparisons();
    cr_assert_eq(rs_node_edit_begin(&e, &n, &err), 0, "%s", err.msg);
    for (uint32_t i = 0; i < N; i += 2) {
        snprintf(name, sizeof name, "node-%u", i);
        int64_t at = rs_node_edit_find(&e, &n, name);
        cr_assert_eq(at, (int64_t)i, "%s", name);
        rs_node_edit_remove(&e, (uint32_t)at);
        cr_assert_eq(rs_node_edit_find(&e, &n, name), -1, "%s: found once removed", name);
    }
    rs_node_edit_end(&e, &n);
    uint64_t used = rs_nodes_comparisons() - before;
    cr_assert_lt(used, (uint64_t)PER_NODE * N, "%llu comparisons to remove %d names of %d", (unsigned long long)used,
                 N / 2, N);
    cr_assert_eq(n.count, N / 2);
    for (uint32_t k = 0; k < n.count; k++) {
        snprintf(name, sizeof name, "node-%u", 2 * k + 1);
        cr_assert_str_eq(n.names[k], name);
    }
    rs_nodes_free(&n);

    /* the same removals one by one, on a list small enough for them */
    rs_nodes a, b;
    make_nodes(&a, &ix, SMALL);
    rs_node_index_free(&ix);
    cr_assert_eq(rs_nodes_copy(&b, &a, &err), 0);
    a.weights[5] = b.weights[5] = 3.0;
    a.down[7] = b.down[7] = 1;
    cr_assert_eq(rs_node_edit_begin(&e, &b, &err), 0);
    for (uint32_t i = 0; i < SMALL; i += 3) {
        snprintf(name, sizeof name, "node-%u", i);
        cr_assert_eq(rs_nodes_remove(&a, name, &err), 0, "%s", err.msg);
        rs_node_edit_remove(&e, (uint32_t)rs_node_edit_find(&e, &b, name));
    }
    rs_node_edit_end(&e, &b);
    cr_assert_eq(a.count, b.count);
    for (uint32_t k = 0; k < a.count; k++) {
        cr_assert_str_eq(a.names[k], b.names[k]);
        cr_assert_eq(a.weights[k], b.weights[k], "%s", a.names[k]);
        cr_assert_eq(a.down[k], b.down[k], "%s", a.names[k]);
    }
    rs_nodes_free(&a);
    rs_nodes_free(&b);
}
