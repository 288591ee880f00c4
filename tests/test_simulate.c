/* `ringshard simulate`: the FNV1_32 ring's Java experiment reproduced exactly,
 * the balance of the default ring against theory, vnode sweeps, movement
 * against the exact arcs, bounded loads against a brute-force walk.
 *
 * OpenMP runs only in the ringshard child processes (run()); the in-process
 * checks below call library functions that use no OpenMP. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ringshard/stats.h"
#include "support.h"

static char *tmp;

static void setup(void) { tmp = make_tmpdir(); }
static void teardown(void)
{
    remove_tree(tmp);
    free(tmp);
}

TestSuite(simulate, .init = setup, .fini = teardown, .timeout = 300);

/* The value of a summary line "label<2+ spaces>value...". */
static double field(const char *out, const char *label)
{
    size_t n = strlen(label);
    for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, label, n) == 0 && p[n] == ' ' && p[n + 1] == ' ') {
            const char *v = p + n;
            while (*v == ' ')
                v++;
            return strtod(v, NULL);
        }
    }
    cr_assert_fail("no line '%s' in:\n%s", label, out);
    return NAN;
}

/* The rest of a summary line after its label. */
static const char *line_of(const char *out, const char *label, char *buf, size_t cap)
{
    size_t n = strlen(label);
    for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, label, n) == 0 && p[n] == ' ' && p[n + 1] == ' ') {
            const char *e = strchr(p, '\n');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            if (len >= cap)
                len = cap - 1;
            memcpy(buf, p, len);
            buf[len] = '\0';
            return buf;
        }
    cr_assert_fail("no line '%s' in:\n%s", label, out);
    return NULL;
}

#define SEED0_MODULO "\"$RS\" simulate --scheme modulo --hash fnv1_32_java --nodes 100 --keys 10000000 --key-pattern seq"

/* The FNV1_32 ring's NormalHashMethod: hash % 100 over "0".."9999999". */
Test(simulate, seed000_modulo_add_one_node)
{
    char *out, *err;
    cr_assert_eq(runf(&out, &err, SEED0_MODULO " --add 1"), 0, "%s", err);
    cr_assert_eq(field(out, "max"), 100653);
    cr_assert_eq(field(out, "min"), 99160);
    cr_assert_eq(field(out, "mean"), 100000);
    cr_assert_eq(field(out, "keys"), 10000000);
    /* result % 100 != result % 101 */
    cr_assert_eq(field(out, "moved"), 9900492);
    cr_assert_float_eq(field(out, "ideal fraction"), 1.0 / 101, 1e-7);
    char buf[256];
    cr_assert(strstr(line_of(out, "change", buf, sizeof buf), "100 -> 101 nodes"), "%s", buf);
    free(out);
    free(err);
}

Test(simulate, seed000_modulo_remove_one_node)
{
    char *out, *err;
    cr_assert_eq(runf(&out, &err, SEED0_MODULO " --remove 99"), 0, "%s", err);
    cr_assert_eq(field(out, "max"), 100653);
    cr_assert_eq(field(out, "min"), 99160);
    /* result % 100 != result % 99 */
    cr_assert_eq(field(out, "moved"), 9899656);
    cr_assert_float_eq(field(out, "ideal fraction"), 0.01, 1e-7);
    free(out);
    free(err);
}

/* The node file of the FNV1_32 ring's ConsistentHashMethod.init(): i * 21474836. */
static void seed0_nodes(char *path, size_t cap)
{
    snprintf(path, cap, "%s/seed0_nodes.txt", tmp);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    for (long i = 0; i < 100; i++)
        fprintf(f, "%ld\n", i * 21474836L);
    fclose(f);
}

/* The FNV1_32 ring's ConsistentHashMethod: 100 single points, then "2333" added. */
Test(simulate, seed000_ring_and_the_true_move_count)
{
    char nodes[512], *out, *err;
    seed0_nodes(nodes, sizeof nodes);
    cr_assert_eq(runf(&out, &err,
                      "\"$RS\" simulate --scheme ring --hash fnv1_32_java --vnodes 1 --label '{node}' --nodes-file %s "
                      "--keys 10000000 --key-pattern seq --add-names 2333",
                      nodes),
                 0, "%s", err);
    char buf[256];
    cr_assert_eq(field(out, "max"), 479784);
    cr_assert_eq(field(out, "min"), 1367);
    cr_assert(strstr(line_of(out, "max", buf, sizeof buf), "node 1524713356"), "%s", buf);   /* 71 * 21474836 */
    cr_assert(strstr(line_of(out, "min", buf, sizeof buf), "node 1610612700"), "%s", buf);   /* 75 * 21474836 */
    /* the keys that really change owner: exactly those the new node takes */
    cr_assert_eq(field(out, "moved"), 922);
    cr_assert_eq(field(out, "min (after)"), 922);
    cr_assert(strstr(line_of(out, "min (after)", buf, sizeof buf), "node 2333"), "%s", buf);
    /* the new node's exact arc predicts 927.5 keys; binomial sd ~30 */
    double exact = field(out, "exact moved share") * 1e7;
    cr_assert(fabs(exact - 922) < 3 * sqrt(exact), "exact share predicts %.1f keys", exact);
    free(out);
    free(err);
}

/* The Java program's 138303, recomputed with its own rule from the two rings, and
 * taken apart: keys past the last point (both tailMaps empty: they wrap to
 * the same first point in both rings, yet the program counts them) plus the
 * keys whose first point >= hash changed (the true moves). */
Test(simulate, seed000_138303_is_wraps_plus_true_moves)
{
    char nodes[512];
    seed0_nodes(nodes, sizeof nodes);
    rs_error err = {0};
    rs_ring_opts o;
    rs_ring_opts_default(&o, RS_SCHEME_RING);
    o.hash = RS_HASH_FNV1_32_JAVA;
    o.seed = 0;
    o.vnodes = 1;
    strcpy(o.label, "{node}");
    rs_nodes a = {0}, b = {0};
    cr_assert_eq(rs_nodes_load(&a, nodes, &err), 0, "%s", err.msg);
    cr_assert_eq(rs_nodes_copy(&b, &a, &err), 0);
    cr_assert_eq(rs_nodes_append(&b, "2333", 1, "test", &err), 0);
    rs_ring *ra = rs_ring_build(&o, &a, &err), *rb = rs_ring_build(&o, &b, &err);
    cr_assert(ra && rb, "%s", err.msg);
    uint64_t last_a = rs_ring_point_pos(ra, rs_ring_npoints(ra) - 1);
    uint64_t last_b = rs_ring_point_pos(rb, rs_ring_npoints(rb) - 1);
    long both_empty = 0, first_differs = 0, old_empty_only = 0, owner_changed = 0;
    char key[32];
    for (long i = 0; i < 10000000; i++) {
        int n = snprintf(key, sizeof key, "%ld", i);
        uint64_t p = rs_ring_position(ra, key, (size_t)n);
        int ea = p > last_a, eb = p > last_b;   /* tailMap(hash).isEmpty() */
        if (ea && eb)
            both_empty++;
        else if (!ea && !eb &&
                 rs_ring_point_pos(ra, rs_ring_point_at(ra, p)) != rs_ring_point_pos(rb, rs_ring_point_at(rb, p)))
            first_differs++;
        else if (ea && !eb)
            old_empty_only++;
        if (strcmp(rs_ring_nodes(ra)->names[rs_ring_owner(ra, p)], rs_ring_nodes(rb)->names[rs_ring_owner(rb, p)]))
            owner_changed++;
    }
    cr_assert_eq(both_empty + first_differs, 138303, "the program's rule gives %ld", both_empty + first_differs);
    cr_assert_eq(both_empty, 137381);
    cr_assert_eq(first_differs, 922);
    cr_assert_eq(old_empty_only, 0, "2333's point is not past the old last point");
    cr_assert_eq(owner_changed, 922);
    rs_ring_free(ra);
    rs_ring_free(rb);
    rs_nodes_free(&a);
    rs_nodes_free(&b);
}

/* The default ring (1000 x 200), 10M random keys: the spread of the counts
 * is what theory says. Theory (docs/stats.md): relative sd
 * sqrt((1/N)(1-1/N)N/K + (K-1)/K (N-1)/(NV+1)) = 0.07138 (1/sqrt(200) = 0.07071 for the
 * shares alone). The observed sd over N = 1000 nodes is one draw of a sample
 * sd: its relative standard error is ~1/sqrt(2(N-1)) = 2.24% (near-normal
 * loads, excess kurtosis 6/V), so the tolerance is 3 of them, 6.7%. Given
 * this ring's exact shares, the sd's only randomness is the binomial noise:
 * relative standard error ~0.5% (docs/stats.md), tolerance 1.5%. */
Test(simulate, default_ring_spread_matches_theory)
{
    char *out, *err;
    cr_assert_eq(runf(&out, &err, "\"$RS\" simulate --keys 10000000 --key-pattern random"), 0, "%s", err);
    double N = 1000, V = 200, K = 1e7;
    double rel = field(out, "relative sd"), sd = field(out, "sd");
    cr_assert_eq(field(out, "nodes"), 1000);
    cr_assert_eq(field(out, "mean"), 10000);
    double theory = sqrt(K / N * (1 - 1 / N) + K * (K - 1) * (N - 1) / (N * N * (N * V + 1))) / (K / N);
    cr_assert_float_eq(field(out, "expected sd (theory)") / 10000, theory, 1e-5);
    double tol = 3 / sqrt(2 * (N - 1));
    cr_assert(fabs(rel / theory - 1) < tol, "relative sd %.6f vs theory %.6f: off by %.2f%% (tolerance %.2f%%)", rel,
              theory, 100 * (rel / theory - 1), 100 * tol);
    cr_assert(fabs(rel * sqrt(V) - 1) < tol, "relative sd %.6f vs 1/sqrt(200)", rel);
    double ring = field(out, "expected sd (ring)");
    cr_assert(fabs(sd / ring - 1) < 0.015, "sd %.2f vs %.2f expected from the exact shares", sd, ring);
    /* the share spread of this very ring against the same theory */
    double share = field(out, "share spread");
    cr_assert(fabs(share / sqrt((N - 1) / (N * V + 1)) - 1) < tol, "share spread %.6f", share);
    /* flags: about N * 2 Phi(-3) = 2.7 by chance; Poisson, so < 10 */
    cr_assert_lt(field(out, "flagged"), 10);
    free(out);
    free(err);
}

Test(simulate, vnode_sweep_rows_and_trend)
{
    char *out, *err;
    cr_assert_eq(runf(&out, &err, "\"$RS\" simulate --nodes 200 --keys 400000 --vnodes 1,10,100,400 --add 2 | tail -n +2"),
                 0, "%s", err);
    char *line = strtok(out, "\n");
    cr_assert(line && !strncmp(line, "vnodes\tpoints\tmean\tsd\trel_sd\t", 29), "%s", line);
    double prev = INFINITY;
    int rows = 0;
    while ((line = strtok(NULL, "\n"))) {
        unsigned v, points;
        double mean, sd, rel, rel_exp, rel_th, inv, mnm, mxm, flagged, moved, movedf, ideal, exact;
        int nf = sscanf(line, "%u\t%u\t%lf\t%lf\t%lf\t%lf\t%lf\t%lf\t%lf\t%lf\t%lf\t%lf\t%lf\t%lf\t%lf", &v, &points,
                        &mean, &sd, &rel, &rel_exp, &rel_th, &inv, &mnm, &mxm, &flagged, &moved, &movedf, &ideal,
                        &exact);
        cr_assert_eq(nf, 15, "%s", line);
        cr_assert_eq(points, 200 * v);
        cr_assert_float_eq(mean, 2000, 1e-9);
        cr_assert_float_eq(inv, 1 / sqrt(v), 1e-6);
        cr_assert_lt(rel, prev, "the spread shrinks as V grows");
        prev = rel;
        /* one ring is one draw: within 4 standard errors of the theory */
        cr_assert(fabs(rel / rel_th - 1) < 4 / sqrt(2 * 199.0), "V=%u: %f vs %f", v, rel, rel_th);
        cr_assert_float_eq(ideal, 2.0 / 202, 1e-7);
        /* measured moves vs the exact arcs: binomial noise */
        double e = exact * 400000;
        cr_assert(fabs(moved - e) < 4 * sqrt(e) + 1, "V=%u: moved %f, arcs predict %f", v, moved, e);
        rows++;
    }
    cr_assert_eq(rows, 4);
    free(out);
    free(err);
}

Test(simulate, same_counts_for_any_thread_count_and_seq_keys)
{
    char *out, *err;
    cr_assert_eq(runf(&out, &err,
                      "for j in 1 2 5; do \"$RS\" simulate -j $j --nodes 37 --keys 300001 --key-seed 7 --tsv > %s/t$j || "
                      "exit 9; done; cmp %s/t1 %s/t2 && cmp %s/t1 %s/t5 && "
                      "awk -F'\\t' 'NR>1 {s+=$6} END {print s}' %s/t1",
                      tmp, tmp, tmp, tmp, tmp, tmp),
                 0, "%s", err);
    cr_assert_eq(atol(out), 300001);
    free(out);
    free(err);
}

/* --tsv's observed-vs-expected columns against `ring --shares`. */
Test(simulate, tsv_expected_columns_from_exact_shares)
{
    char *out, *err;
    cr_assert_eq(runf(&out, &err,
                      "\"$RS\" ring --nodes 20 --vnodes 7 --shares > %s/shares && "
                      "\"$RS\" simulate --nodes 20 --vnodes 7 --keys 50000 --tsv --z 2 > %s/t && "
                      "tail -n +2 %s/shares | LC_ALL=C sort > %s/a && tail -n +2 %s/t | LC_ALL=C sort > %s/b && "
                      "LC_ALL=C join -t \"$(printf '\\t')\" %s/a %s/b | "
                      "awk -F'\\t' '{K=50000; p=$4; e=K*p; s=sqrt(K*p*(1-p)); z=($9-e)/s; "
                      "f=(z>2)?\"above\":(z<-2)?\"below\":\"ok\"; "
                      "if ($2!=$5 || (e-$7)^2>0.0001 || (s-$8)^2>0.0001 || (z-$10)^2>1e-5 || f!=$11) {print \"bad\", $0; exit 1} n++} "
                      "END {print n}'",
                      tmp, tmp, tmp, tmp, tmp, tmp, tmp, tmp),
                 0, "%s%s", out, err);
    cr_assert_eq(atoi(out), 20, "%s", out);
    free(out);
    free(err);
}

/* Bounded loads: the union-find placement against a plain clockwise walk. */
Test(simulate, bounded_loads_equal_a_brute_force_walk)
{
    rs_error err = {0};
    rs_ring_opts o;
    rs_ring_opts_default(&o, RS_SCHEME_RING);
    o.vnodes = 5;
    rs_nodes nodes = {0};
    cr_assert_eq(rs_nodes_init_count(&nodes, 13, &err), 0);
    rs_ring *r = rs_ring_build(&o, &nodes, &err);
    cr_assert(r, "%s", err.msg);
    const uint64_t K = 20000;
    uint32_t *start = malloc(K * sizeof *start);
    uint64_t counts[13] = {0}, load[13], brute[13] = {0};
    char key[64];
    for (uint64_t i = 0; i < K; i++) {
        size_t n = rs_synth_key(RS_KEYS_RANDOM, 3, i, key);
        start[i] = rs_bounded_start(r, rs_ring_position(r, key, n));
        counts[rs_ring_point_node(r, start[i])]++;
    }
    for (int f = 0; f < 3; f++) {
        double F = f == 0 ? 1.0 : f == 1 ? 1.1 : 1.25;
        rs_bounded bl;
        cr_assert_eq(rs_bounded_place(r, start, K, counts, F, &bl, load, &err), 0, "%s", err.msg);
        uint64_t cap = (uint64_t)ceil(F * K / 13 - 1e-9), spilled = 0, longest = 0, over = 0, excess = 0;
        memset(brute, 0, sizeof brute);
        uint32_t P = rs_ring_npoints(r);
        for (uint64_t i = 0; i < K; i++) {
            uint32_t p = start[i];
            uint64_t walk = 0;
            while (brute[rs_ring_point_node(r, p)] >= cap) {
                p = (p + 1) % P;
                walk++;
            }
            brute[rs_ring_point_node(r, p)]++;
            spilled += rs_ring_point_node(r, p) != rs_ring_point_node(r, start[i]);
            if (walk > longest)
                longest = walk;
        }
        for (int i = 0; i < 13; i++) {
            cr_assert_eq(load[i], brute[i], "F=%g node %d", F, i);
            cr_assert_leq(load[i], cap);
            over += counts[i] > F * K / 13;
            excess += counts[i] > cap ? counts[i] - cap : 0;
        }
        cr_assert_eq(bl.capacity, cap);
        cr_assert_eq(bl.spilled, spilled, "F=%g", F);
        cr_assert_eq(bl.longest_walk, longest);
        cr_assert_eq(bl.over, over);
        cr_assert_eq(bl.excess, excess);
        cr_assert_geq(bl.spilled, bl.excess);
        cr_assert_gt(bl.spilled, 0, "F=%g: this ring is unbalanced enough to spill", F);
    }
    free(start);
    rs_ring_free(r);
    rs_nodes_free(&nodes);
}

Test(simulate, capacity_factor_in_the_summary_and_table)
{
    char *out, *err;
    cr_assert_eq(runf(&out, &err, "\"$RS\" simulate --nodes 50 --vnodes 20 --keys 200000 --capacity-factor 1.1"), 0, "%s",
                 err);
    cr_assert_eq(field(out, "capacity"), 4400);
    cr_assert_eq(field(out, "max after"), 4400);
    double spilled = field(out, "spilled"), excess = field(out, "excess");
    cr_assert_gt(spilled, 0);
    cr_assert_geq(spilled, excess);
    free(out);
    cr_assert_eq(runf(&out, &err,
                      "\"$RS\" simulate --nodes 50 --vnodes 20 --keys 200000 --capacity-factor 1.1 --tsv | "
                      "awk -F'\\t' 'NR==1 {print $9, $10} NR>1 {s+=$10; if ($10>$9) bad++; if ($6>4400) o++} "
                      "END {print s, bad+0, o+0}'"),
                 0, "%s", err);
    char h1[32], h2[32];
    long sum, bad, over;
    cr_assert_eq(sscanf(out, "%31s %31s %ld %ld %ld", h1, h2, &sum, &bad, &over), 5, "%s", out);
    cr_assert_str_eq(h1, "capacity");
    cr_assert_str_eq(h2, "load_after");
    cr_assert_eq(sum, 200000, "every key placed");
    cr_assert_eq(bad, 0, "no node above capacity");
    cr_assert_gt(over, 0);
    free(out);
    free(err);
}

Test(simulate, ideal_and_exact_moves_in_process)
{
    rs_error err = {0};
    rs_ring_opts o;
    rs_ring_opts_default(&o, RS_SCHEME_RING);
    o.vnodes = 50;
    rs_nodes a = {0}, b = {0};
    cr_assert_eq(rs_nodes_init_count(&a, 30, &err), 0);
    cr_assert_eq(rs_nodes_init_count(&b, 33, &err), 0);
    rs_ring *ra = rs_ring_build(&o, &a, &err), *rb = rs_ring_build(&o, &b, &err);
    cr_assert_float_eq(rs_ideal_moved(ra, rb), 3.0 / 33, 1e-12);
    cr_assert_float_eq(rs_ideal_moved(rb, ra), 3.0 / 33, 1e-12);
    uint32_t *map = rs_node_map(ra, rb);
    /* the exact share equals the shares the new nodes own (adding only moves to them) */
    rs_u128 owned[33];
    cr_assert_eq(rs_ring_shares(rb, owned), 0);
    double added = 0;
    for (int i = 30; i < 33; i++)
        added += (double)owned[i] / (double)rs_ring_total_weight(rb);
    cr_assert_float_eq(rs_moved_share(ra, rb, map), added, 1e-12);
    free(map);
    /* a ring against itself moves nothing; modulo has no arcs */
    map = rs_node_map(ra, ra);
    cr_assert_eq(rs_moved_share(ra, ra, map), 0);
    free(map);
    rs_ring_opts m;
    rs_ring_opts_default(&m, RS_SCHEME_MODULO);
    rs_ring *ma = rs_ring_build(&m, &a, &err);
    map = rs_node_map(ma, ma);
    cr_assert(isnan(rs_moved_share(ma, ma, map)));
    free(map);
    rs_ring_free(ma);
    rs_ring_free(ra);
    rs_ring_free(rb);
    rs_nodes_free(&a);
    rs_nodes_free(&b);
}

Test(simulate, synthetic_keys_are_documented)
{
    char k[64];
    cr_assert_eq(rs_synth_key(RS_KEYS_SEQ, 0, 0, k), 1);
    cr_assert_str_eq(k, "0");
    rs_synth_key(RS_KEYS_SEQ, 99, 9999999, k);
    cr_assert_str_eq(k, "9999999");
    rs_synth_key(RS_KEYS_SEQ, 0, UINT64_MAX, k);
    cr_assert_str_eq(k, "18446744073709551615");
    /* splitmix64 seeded with 0: first outputs e220a8397b1dcdaf, 6e789e6aa1b965f4 */
    cr_assert_eq(rs_synth_key(RS_KEYS_RANDOM, 0, 0, k), 32);
    cr_assert_str_eq(k, "e220a8397b1dcdaf6e789e6aa1b965f4");
}

Test(simulate, errors)
{
    char *err;
    cr_assert_eq(run("\"$RS\" simulate --key-pattern zipf", NULL, &err), 64);
    cr_assert(strstr(err, "zipf"), "%s", err);
    free(err);
    cr_assert_eq(run("\"$RS\" simulate --capacity-factor 0.9", NULL, &err), 64);
    cr_assert(strstr(err, "--capacity-factor"), "%s", err);
    free(err);
    cr_assert_eq(run("\"$RS\" simulate --nodes 10 --remove 77", NULL, &err), 64);
    cr_assert(strstr(err, "77"), "%s", err);
    free(err);
    cr_assert_eq(run("\"$RS\" simulate --keys 0", NULL, &err), 64);
    free(err);
    cr_assert_eq(run("\"$RS\" simulate --scheme modulo --vnodes 1,2", NULL, &err), 64);
    cr_assert(strstr(err, "modulo"), "%s", err);
    free(err);
    cr_assert_eq(run("\"$RS\" simulate --vnodes 1,x", NULL, &err), 64);
    free(err);
    cr_assert_eq(run("\"$RS\" simulate --svg /nonexistent/dir/x.svg --keys 10", NULL, &err), 1);
    cr_assert(strstr(err, "/nonexistent/dir/x.svg"), "%s", err);
    free(err);
}
