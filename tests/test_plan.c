/* The migration planner: the exact ring diff against per-key recomputation
 * (the public migration sample and 1M random keys per scheme), the
 * conservation of shares, the consistency properties, and `ringshard plan`
 * with and without data (counts, --emit round trip, mismatches, waves).
 * Library tests run single-threaded in the test process; the command (with
 * its OpenMP pipeline) runs through run(). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include "ringshard/plan.h"
#include "support.h"
#include "tsv.h"
#include "util/json_read.h"

/* ------------------------------------------------------------ helpers */

static rs_ring *build(const rs_ring_opts *o, const rs_nodes *n)
{
    rs_error err = {0};
    rs_ring *r = rs_ring_build(o, n, &err);
    cr_assert_not_null(r, "ring build failed: %s", err.msg);
    return r;
}

static rs_ring *ring_of(rs_scheme_id scheme, uint32_t n, uint32_t vnodes)
{
    rs_ring_opts o;
    rs_nodes nodes;
    rs_error err = {0};
    rs_ring_opts_default(&o, scheme);
    if (vnodes)
        o.vnodes = vnodes;
    cr_assert_eq(rs_nodes_init_count(&nodes, n, &err), 0);
    rs_ring *r = build(&o, &nodes);
    rs_nodes_free(&nodes);
    return r;
}

static void diff(const rs_ring *a, const rs_ring *b, rs_plan *p)
{
    rs_error err = {0};
    cr_assert_eq(rs_plan_diff(a, b, p, &err), 0, "diff failed: %s", err.msg);
}

static const char *name_of(const rs_ring *r, uint32_t i) { return rs_ring_nodes(r)->names[i]; }

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;
static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static size_t random_key(char *buf)
{
    static const char al[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    size_t n = 12 + rnd() % 8;
    for (size_t i = 0; i < n; i++)
        buf[i] = al[rnd() % 62];
    buf[n] = '\0';
    return n;
}

/* Shares are conserved: for every name, what it owned minus what leaves it
 * equals what it owns afterwards minus what arrives (exact, in u128). */
static void check_conservation(const rs_plan *p)
{
    const rs_nodes *a = rs_ring_nodes(p->old_ring), *b = rs_ring_nodes(p->new_ring);
    rs_u128 *oa = calloc(a->count, sizeof *oa), *ob = calloc(b->count, sizeof *ob);
    rs_u128 *out = calloc(a->count, sizeof *out), *in = calloc(b->count, sizeof *in);
    cr_assert_eq(rs_ring_shares(p->old_ring, oa), 0);
    cr_assert_eq(rs_ring_shares(p->new_ring, ob), 0);
    rs_u128 sum = 0;
    for (size_t k = 0; k < p->npairs; k++) {
        out[p->pairs[k].from] += p->pairs[k].weight;
        in[p->pairs[k].to] += p->pairs[k].weight;
        sum += p->pairs[k].weight;
    }
    cr_assert(sum == p->moved, "pairs add up to the moved weight");
    for (uint32_t i = 0; i < a->count; i++) {
        cr_assert(out[i] <= oa[i], "node %s sends more than it owned", a->names[i]);
        rs_u128 stay_old = oa[i] - out[i];
        uint32_t j = p->old_to_new[i];
        if (j == RS_PLAN_NONE) {
            cr_assert(stay_old == 0, "node %s is gone but keeps weight", a->names[i]);
            continue;
        }
        cr_assert(in[j] <= ob[j]);
        cr_assert(stay_old == ob[j] - in[j], "node %s: old - out != new - in", a->names[i]);
    }
    for (uint32_t j = 0; j < b->count; j++)
        if (p->new_to_old[j] == RS_PLAN_NONE)
            cr_assert(ob[j] == in[j], "new node %s: owns %s but receives less", b->names[j], "weight");
    free(oa);
    free(ob);
    free(out);
    free(in);
}

/* The arcs are sorted, disjoint, inside the space, owned as they say, and add up. */
static void check_arcs(const rs_plan *p)
{
    rs_u128 sum = 0;
    for (size_t k = 0; k < p->narcs; k++) {
        const rs_plan_arc *r = &p->arcs[k];
        cr_assert_leq(r->start, r->last);
        cr_assert((rs_u128)r->last < rs_ring_space(p->old_ring));
        if (k)
            cr_assert_gt(r->start, p->arcs[k - 1].last);
        uint64_t mid = r->start + (r->last - r->start) / 2;
        uint64_t probe[3] = {r->start, mid, r->last};
        for (int q = 0; q < 3; q++) {
            cr_assert_eq(rs_ring_owner(p->old_ring, probe[q]), r->from, "arc %zu", k);
            cr_assert_eq(rs_ring_owner(p->new_ring, probe[q]), r->to, "arc %zu", k);
        }
        cr_assert_neq(p->old_to_new[r->from], r->to);
        cr_assert(r->weight == rs_ring_weight(p->old_ring, r->start, r->last));
        cr_assert_eq(p->pairs[r->pair].from, r->from);
        cr_assert_eq(p->pairs[r->pair].to, r->to);
        sum += r->weight;
        /* just outside the arc, if not another arc, the owners keep their names */
        if (r->start > 0 && (k == 0 || p->arcs[k - 1].last + 1 < r->start)) {
            uint64_t x = r->start - 1;
            cr_assert_eq(p->old_to_new[rs_ring_owner(p->old_ring, x)], rs_ring_owner(p->new_ring, x));
        }
    }
    cr_assert(sum == p->moved);
}

/* ---------------------------------------------- the public migration sample */

static void sample_check(const char *column, int remove)
{
    rs_ring *a = ring_of(RS_SCHEME_RING, 1000, 0), *b;
    if (remove) {
        rs_ring_opts o;
        rs_nodes n;
        rs_error err = {0};
        rs_ring_opts_default(&o, RS_SCHEME_RING);
        cr_assert_eq(rs_nodes_init_count(&n, 1000, &err), 0);
        cr_assert_eq(rs_nodes_remove(&n, "17", &err), 0);
        cr_assert_eq(rs_nodes_remove(&n, "500", &err), 0);
        b = build(&o, &n);
        rs_nodes_free(&n);
    } else {
        b = ring_of(RS_SCHEME_RING, 1010, 0);
    }
    rs_plan p;
    diff(a, b, &p);
    cr_assert_eq(p.method, RS_PLAN_EXACT_ARCS);
    cr_assert_eq(p.check, remove ? RS_PLAN_CHECK_REMOVE : RS_PLAN_CHECK_ADD);
    cr_assert_eq(p.nviolations, 0);
    check_arcs(&p);
    check_conservation(&p);

    tsv t;
    cr_assert_eq(tsv_open(&t, "seed004_migration_sample.tsv.gz"), 0);
    int ch = tsv_col(&t, "masked_hash"), c0 = tsv_col(&t, "node_1000"), c1 = tsv_col(&t, column);
    cr_assert(ch >= 0 && c0 >= 0 && c1 >= 0);
    size_t rows = 0, moved = 0;
    while (tsv_next(&t)) {
        uint64_t pos = strtoull(t.f[ch], NULL, 10);
        size_t klen = tsv_unescape(t.f[0]);
        cr_assert_eq(rs_ring_position(a, t.f[0], klen), pos, "row %zu", t.rows);
        int64_t arc = rs_plan_arc_at(&p, pos);
        int differs = strcmp(t.f[c0], t.f[c1]) != 0;
        cr_assert_eq(arc >= 0, differs, "row %zu key '%s': arc %lld but owners %s -> %s", t.rows, t.f[0],
                     (long long)arc, t.f[c0], t.f[c1]);
        if (arc >= 0) {
            const rs_plan_arc *r = &p.arcs[arc];
            cr_assert(r->start <= pos && pos <= r->last);
            cr_assert_str_eq(name_of(a, r->from), t.f[c0], "row %zu", t.rows);
            cr_assert_str_eq(name_of(b, r->to), t.f[c1], "row %zu", t.rows);
            moved++;
        }
        uint32_t o, n;
        uint32_t k = rs_plan_key_pair(&p, t.f[0], klen, &o, &n);
        cr_assert_str_eq(name_of(a, o), t.f[c0]);
        cr_assert_str_eq(name_of(b, n), t.f[c1]);
        cr_assert_eq(k == RS_PLAN_STAY, !differs);
        if (differs)
            cr_assert_eq(k, (uint32_t)p.arcs[arc].pair);
        rows++;
    }
    cr_assert_eq(rows, 5000);
    cr_assert_gt(moved, 0);
    /* the share of the sample that moved is near the exact share */
    double sd = sqrt(5000 * p.moved_share * (1 - p.moved_share));
    cr_assert_lt(fabs(moved - 5000 * p.moved_share), 5 * sd + 1, "moved %zu, expected %.1f", moved,
                 5000 * p.moved_share);
    /* the arcs' total = the difference of the exact per-node shares */
    rs_u128 *oa = calloc(1000, sizeof *oa), *ob = calloc(1010, sizeof *ob), want = 0;
    rs_ring_shares(a, oa);
    rs_ring_shares(b, ob);
    if (remove) {
        want = oa[17] + oa[500];
    } else {
        for (uint32_t j = 1000; j < 1010; j++)
            want += ob[j];
    }
    cr_assert(p.moved == want, "moved weight = the added nodes' exact shares (or the removed ones')");
    cr_assert(p.floor == p.moved, "a consistent change moves exactly the floor: no excess churn");
    free(oa);
    free(ob);
    tsv_close(&t);
    rs_plan_free(&p);
    rs_ring_free(a);
    rs_ring_free(b);
}

Test(sample, ring_1000_to_1010_agrees_per_key) { sample_check("node_1010", 0); }
Test(sample, ring_1000_minus_17_500_agrees_per_key) { sample_check("node_1000_minus_17_500", 1); }

Test(diff, ideal_shares)
{
    rs_nodes a, b;
    rs_error err = {0};
    cr_assert_eq(rs_nodes_init_count(&a, 1000, &err), 0);
    cr_assert_eq(rs_nodes_init_count(&b, 1010, &err), 0);
    cr_assert_float_eq(rs_plan_ideal_share(&a, &b), 10.0 / 1010, 1e-12);
    cr_assert_float_eq(rs_plan_ideal_share(&b, &a), 10.0 / 1010, 1e-12);
    rs_nodes_free(&b);
    cr_assert_eq(rs_nodes_copy(&b, &a, &err), 0);
    rs_nodes_remove(&b, "3", &err);
    rs_nodes_set_down(&b, "7", &err);
    cr_assert_float_eq(rs_plan_ideal_share(&a, &b), 2.0 / 1000, 1e-12);
    rs_nodes_free(&a);
    rs_nodes_free(&b);
    cr_assert_eq(rs_nodes_parse(&a, "x\ny\n", 4, "t", &err), 0);
    cr_assert_eq(rs_nodes_parse(&b, "x 3\ny\n", 6, "t", &err), 0);
    cr_assert_float_eq(rs_plan_ideal_share(&a, &b), 0.25, 1e-12);
    rs_nodes_free(&a);
    rs_nodes_free(&b);
}

Test(diff, refuses_incomparable_rings)
{
    rs_ring *a = ring_of(RS_SCHEME_RING, 10, 0);
    rs_ring_opts o;
    rs_nodes n;
    rs_error err = {0};
    rs_ring_opts_default(&o, RS_SCHEME_RING);
    o.hash = RS_HASH_MURMUR3_32;
    rs_nodes_init_count(&n, 10, &err);
    rs_ring *b = build(&o, &n);
    rs_plan p;
    cr_assert_eq(rs_plan_diff(a, b, &p, &err), -1);
    cr_assert_eq(err.code, RS_EXIT_USAGE);
    cr_assert(strstr(err.msg, "hash"), "%s", err.msg);
    rs_nodes_free(&n);
    rs_ring_free(a);
    rs_ring_free(b);
}

Test(diff, identical_rings_move_nothing)
{
    rs_ring *a = ring_of(RS_SCHEME_RING, 100, 0), *b = ring_of(RS_SCHEME_RING, 100, 0);
    rs_plan p;
    diff(a, b, &p);
    cr_assert_eq(p.narcs, 0);
    cr_assert_eq(p.npairs, 0);
    cr_assert(p.moved == 0);
    cr_assert_eq(p.check, RS_PLAN_CHECK_NONE);
    cr_assert_eq(p.nviolations, 0);
    rs_plan_free(&p);
    rs_ring_free(a);
    rs_ring_free(b);
}

Test(diff, waves_pack_by_bytes)
{
    uint64_t bytes[5] = {5, 1, 3, 0, 7};
    uint32_t w[5];
    cr_assert_eq(rs_plan_waves(bytes, 5, 8, 0, w), 3);
    cr_assert_eq(w[1], 1);
    cr_assert_eq(w[2], 1);
    cr_assert_eq(w[0], 2);
    cr_assert_eq(w[4], 3);
    cr_assert_eq(w[3], 0);
    cr_assert_eq(rs_plan_waves(bytes, 5, 8, 1, w), 3);
    cr_assert_eq(w[4], 1);
    cr_assert_eq(w[0], 2);
    cr_assert_eq(w[2], 2);
    cr_assert_eq(w[1], 3);
    uint64_t big[2] = {100, 1};
    cr_assert_eq(rs_plan_waves(big, 2, 8, 1, w), 2, "a move over the cap gets its own wave");
}

/* ---------------------------------------------- property tests, 1M keys */

typedef enum { CH_ADD, CH_REMOVE, CH_BOTH } change_kind;

/* A random change of a random node set; slots removes by marking down. */
static void random_change(rs_scheme_id scheme, change_kind kind, rs_nodes *a, rs_nodes *b)
{
    rs_error err = {0};
    uint32_t n = 5 + (uint32_t)(rnd() % 40);
    char name[32];
    memset(a, 0, sizeof *a);
    for (uint32_t i = 0; i < n; i++) {
        snprintf(name, sizeof name, "node-%llu", (unsigned long long)(rnd() % 1000000));
        if (rs_nodes_find(a, name) < 0)
            cr_assert_eq(rs_nodes_append(a, name, 1.0, "t", &err), 0);
    }
    cr_assert_eq(rs_nodes_copy(b, a, &err), 0);
    if (kind != CH_ADD) {
        uint32_t k = 1 + (uint32_t)(rnd() % (a->count / 3 + 1));
        for (uint32_t q = 0; q < k; q++) {
            const char *victim = a->names[rnd() % a->count];
            int64_t idx = rs_nodes_find(b, victim);
            if (idx < 0 || b->down[idx])
                continue;
            if (scheme == RS_SCHEME_SLOTS)
                cr_assert_eq(rs_nodes_set_down(b, victim, &err), 0);
            else
                cr_assert_eq(rs_nodes_remove(b, victim, &err), 0);
        }
    }
    if (kind != CH_REMOVE) {
        uint32_t k = 1 + (uint32_t)(rnd() % 5);
        for (uint32_t q = 0; q < k; q++) {
            snprintf(name, sizeof name, "new-%llu", (unsigned long long)(rnd() % 1000000));
            if (rs_nodes_find(b, name) < 0)
                cr_assert_eq(rs_nodes_append(b, name, 1.0, "t", &err), 0);
        }
    }
}

static void binomial_ok(uint64_t count, uint64_t n, double p, const char *what)
{
    double mean = n * p, sd = sqrt(n * p * (1 - p));
    cr_assert_leq(fabs((double)count - mean), 6 * sd + 2, "%s: counted %llu, expected %.1f (sd %.1f)", what,
                  (unsigned long long)count, mean, sd);
}

static void property(rs_scheme_id scheme, uint32_t vnodes, change_kind kind, uint64_t nkeys)
{
    rs_nodes na, nb;
    random_change(scheme, kind, &na, &nb);
    rs_ring_opts o;
    rs_ring_opts_default(&o, scheme);
    if (vnodes)
        o.vnodes = vnodes;
    rs_ring *a = build(&o, &na), *b = build(&o, &nb);
    rs_plan p;
    diff(a, b, &p);
    cr_assert(p.pairs_complete);
    if (p.method != RS_PLAN_EXPECTED)
        check_conservation(&p);
    if (p.method == RS_PLAN_EXACT_ARCS)
        check_arcs(&p);
    uint64_t *count = calloc(p.npairs + 1, sizeof *count), moved = 0, violating = 0;
    char key[32];
    for (uint64_t i = 0; i < nkeys; i++) {
        size_t len = random_key(key);
        uint32_t k = rs_plan_key_pair(&p, key, len, NULL, NULL);
        cr_assert_neq(k, RS_PLAN_UNKNOWN, "key %s moves along a pair the diff lacks", key);
        if (p.method == RS_PLAN_EXACT_ARCS) {
            int64_t arc = rs_plan_arc_at(&p, rs_ring_position(a, key, len));
            cr_assert_eq(arc >= 0, k != RS_PLAN_STAY, "key %s", key);
            if (arc >= 0)
                cr_assert_eq(p.arcs[arc].pair, k);
        }
        if (k == RS_PLAN_STAY)
            continue;
        count[k]++;
        moved++;
        violating += p.pairs[k].violation;
    }
    binomial_ok(moved, nkeys, p.moved_share, "moved keys");
    for (size_t k = 0; k < p.npairs; k++) {
        char what[96];
        snprintf(what, sizeof what, "pair %s -> %s", name_of(a, p.pairs[k].from), name_of(b, p.pairs[k].to));
        binomial_ok(count[k], nkeys, p.pairs[k].share, what);
    }
    /* the consistency property: holds where the scheme is consistent for the
     * change (ring, ketama always; slots for removals; jump for appends), and
     * is reported, never hidden, where it fails */
    int consistent = scheme == RS_SCHEME_RING || scheme == RS_SCHEME_KETAMA ||
                     (scheme == RS_SCHEME_SLOTS && kind == CH_REMOVE) || (scheme == RS_SCHEME_JUMP && kind == CH_ADD);
    if (consistent)
        cr_assert_eq(p.nviolations, 0, "%s: %zu violations (change %d)", rs_scheme_name(scheme), p.nviolations, kind);
    if (p.nviolations == 0)
        cr_assert_eq(violating, 0);
    if ((double)p.violation_weight / (double)p.total > 1e-3)
        cr_assert_gt(violating, 0, "violating pairs carry keys");
    if (scheme == RS_SCHEME_SLOTS && kind == CH_ADD)
        cr_assert_gt(p.nviolations, 0, "slots re-deal every slot when a node is added");
    free(count);
    rs_plan_free(&p);
    rs_ring_free(a);
    rs_ring_free(b);
    rs_nodes_free(&na);
    rs_nodes_free(&nb);
}

#define NKEYS 1000000

Test(property, ring_adds, .timeout = 300) { rng_state = 11; property(RS_SCHEME_RING, 50, CH_ADD, NKEYS); }
Test(property, ring_removes, .timeout = 300) { rng_state = 12; property(RS_SCHEME_RING, 50, CH_REMOVE, NKEYS); }
Test(property, ring_both, .timeout = 300) { rng_state = 13; property(RS_SCHEME_RING, 100, CH_BOTH, NKEYS); }
Test(property, ketama_adds, .timeout = 300) { rng_state = 21; property(RS_SCHEME_KETAMA, 0, CH_ADD, NKEYS); }
Test(property, ketama_removes, .timeout = 300) { rng_state = 22; property(RS_SCHEME_KETAMA, 0, CH_REMOVE, NKEYS); }
Test(property, ketama_both, .timeout = 300) { rng_state = 23; property(RS_SCHEME_KETAMA, 40, CH_BOTH, NKEYS); }
Test(property, slots_adds_reported_inconsistent, .timeout = 300)
{
    rng_state = 31;
    property(RS_SCHEME_SLOTS, 0, CH_ADD, NKEYS);
}
Test(property, slots_removes, .timeout = 300) { rng_state = 32; property(RS_SCHEME_SLOTS, 0, CH_REMOVE, NKEYS); }
Test(property, slots_both, .timeout = 300) { rng_state = 33; property(RS_SCHEME_SLOTS, 0, CH_BOTH, NKEYS); }
Test(property, modulo_exact_residues, .timeout = 300)
{
    rng_state = 41;
    property(RS_SCHEME_MODULO, 0, CH_BOTH, NKEYS);
}
Test(property, jump_expected, .timeout = 300) { rng_state = 51; property(RS_SCHEME_JUMP, 0, CH_ADD, NKEYS); }
Test(property, jump_expected_removes, .timeout = 300)
{
    rng_state = 52;
    property(RS_SCHEME_JUMP, 0, CH_REMOVE, NKEYS);
}

Test(diff, full_64_bit_space_signed_order)
{
    /* murmur3_128 with the sign kept, signed order: positions fill [0, 2^64) */
    rs_ring_opts o;
    rs_nodes n;
    rs_error err = {0};
    rs_ring_opts_default(&o, RS_SCHEME_RING);
    o.clear_sign = 0;
    o.order = RS_ORDER_SIGNED;
    o.vnodes = 50;
    rs_nodes_init_count(&n, 30, &err);
    rs_ring *a = build(&o, &n);
    rs_nodes_append(&n, "x", 1, "t", &err);
    rs_nodes_remove(&n, "4", &err);
    rs_ring *b = build(&o, &n);
    rs_nodes_free(&n);
    cr_assert(rs_ring_space(a) == (rs_u128)1 << 64);
    rs_plan p;
    diff(a, b, &p);
    check_arcs(&p);
    check_conservation(&p);
    cr_assert_eq(p.nviolations, 0);
    char key[32];
    rng_state = 77;
    for (int i = 0; i < 200000; i++) {
        size_t len = random_key(key);
        uint32_t k = rs_plan_key_pair(&p, key, len, NULL, NULL);
        int64_t arc = rs_plan_arc_at(&p, rs_ring_position(a, key, len));
        cr_assert_eq(arc >= 0, k != RS_PLAN_STAY);
    }
    rs_plan_free(&p);
    rs_ring_free(a);
    rs_ring_free(b);
}

Test(diff, modulo_exact_known_values)
{
    /* 8 -> 10: v stays iff v mod 8 == v mod 10, i.e. v mod 40 < 8 */
    rs_ring *a = ring_of(RS_SCHEME_MODULO, 8, 0), *b = ring_of(RS_SCHEME_MODULO, 10, 0);
    rs_plan p;
    diff(a, b, &p);
    cr_assert_eq(p.method, RS_PLAN_EXACT_RESIDUES);
    rs_u128 total = (rs_u128)1 << 63, stays = 8 * (total / 40);
    for (uint64_t r = 0; r < total % 40; r++)
        stays += r < 8;
    cr_assert(p.moved == total - stays);
    check_conservation(&p);
    rs_plan_free(&p);
    rs_ring_free(b);
    /* the signed domain [-2^63, 2^63) with the sign kept */
    rs_ring_opts o;
    rs_nodes n;
    rs_error err = {0};
    rs_ring_opts_default(&o, RS_SCHEME_MODULO);
    o.clear_sign = 0;
    rs_nodes_init_count(&n, 7, &err);
    rs_ring *c = build(&o, &n);
    rs_nodes_free(&n);
    rs_nodes_init_count(&n, 12, &err);
    rs_ring *d = build(&o, &n);
    rs_nodes_free(&n);
    diff(c, d, &p);
    check_conservation(&p);
    rs_plan_free(&p);
    rs_ring_free(a);
    rs_ring_free(c);
    rs_ring_free(d);
}

Test(diff, jump_append_moves_the_expected_share)
{
    rs_ring *a = ring_of(RS_SCHEME_JUMP, 1000, 0), *b = ring_of(RS_SCHEME_JUMP, 1010, 0);
    rs_plan p;
    diff(a, b, &p);
    cr_assert_eq(p.method, RS_PLAN_EXPECTED);
    cr_assert_float_eq(p.moved_share, 10.0 / 1010, 1e-12);
    cr_assert_eq(p.npairs, 10000);
    cr_assert_eq(p.nviolations, 0);
    rs_plan_free(&p);
    rs_ring_free(a);
    rs_ring_free(b);
}

/* ---------------------------------------------- the command */

static char *tmp;

static void setup(void) { tmp = make_tmpdir(); }
static void teardown(void)
{
    remove_tree(tmp);
    free(tmp);
}

static const char *path_in(const char *name) { return path_join(tmp, name); }

static const rs_jv *jget(const rs_jv *o, const char *key)
{
    for (size_t i = 0; o && o->type == RS_JV_OBJECT && i < o->n; i++)
        if (!strcmp(o->members[i].key, key))
            return &o->members[i].value;
    return NULL;
}

TestSuite(cli, .init = setup, .fini = teardown, .timeout = 300);

/* User + system CPU seconds of the waited-for children so far. */
static double children_cpu_seconds(void)
{
    struct rusage ru;
    cr_assert_eq(getrusage(RUSAGE_CHILDREN, &ru), 0);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

Test(cli, summary_json_arcs_pairs_for_1000_to_1010)
{
    char *out, *err;
    /* The bound is on the command's CPU time, not the wall clock: a loaded
     * machine stretches the latter (1 s measured at load 15 for 0.13 s of
     * CPU), not the work done. */
    double cpu0 = children_cpu_seconds();
    int rc = runf(&out, &err, "\"$RS\" plan --old-nodes 1000 --new-nodes 1010");
    double secs = children_cpu_seconds() - cpu0;
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert_lt(secs, 2.0, "plan 1000 -> 1010 took %.3f s of CPU", secs);
    cr_assert(strstr(out, "1000 -> 1010 nodes up (10 added, 0 removed, 0 reweighted)"), "%s", out);
    cr_assert(strstr(out, "k/(N+k) = 10/1010"), "%s", out);
    cr_assert(strstr(out, "consistency  OK: every move goes to an added node"), "%s", out);
    free(out);
    free(err);

    rc = runf(&out, &err, "cd %s && \"$RS\" plan --add 10 --json p.json --json-arcs --arcs a.tsv --pairs p.csv --quiet",
              tmp);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert_str_eq(out, "", "--quiet prints no summary");
    free(out);
    free(err);

    rs_ring *a = ring_of(RS_SCHEME_RING, 1000, 0), *b = ring_of(RS_SCHEME_RING, 1010, 0);
    rs_plan p;
    diff(a, b, &p);
    char num[48];

    /* the arcs TSV is the library's arc list */
    char *text = slurp(path_in("a.tsv"), NULL);
    cr_assert_not_null(text);
    char *line = strtok(text, "\n");
    cr_assert_str_eq(line, "start\tend\tfrom\tto\tweight\tshare");
    size_t k = 0;
    while ((line = strtok(NULL, "\n"))) {
        cr_assert_lt(k, p.narcs);
        char want[256];
        snprintf(want, sizeof want, "%llu\t%s\t%s\t%s\t", (unsigned long long)p.arcs[k].start,
                 rs_u128_str((rs_u128)p.arcs[k].last + 1, num), name_of(a, p.arcs[k].from), name_of(b, p.arcs[k].to));
        cr_assert(!strncmp(line, want, strlen(want)), "arc %zu: %s vs %s", k, line, want);
        k++;
    }
    cr_assert_eq(k, p.narcs);
    free(text);

    /* the pairs CSV */
    text = slurp(path_in("p.csv"), NULL);
    size_t lines = 0;
    for (char *c = text; *c; c++)
        lines += *c == '\n';
    cr_assert_eq(lines, p.npairs + 1);
    cr_assert(!strncmp(text, "from,to,weight,share,arcs,keys,bytes,wave,violation\n", 52));
    free(text);

    /* the JSON */
    size_t len;
    text = slurp(path_in("p.json"), &len);
    rs_jv root;
    rs_error e = {0};
    cr_assert_eq(rs_jv_parse(&root, text, len, "p.json", &e, NULL), 0, "%s", e.msg);
    cr_assert_str_eq(jget(&root, "schema")->str, "ringshard-plan");
    cr_assert_str_eq(jget(&root, "version")->str, "1");
    cr_assert_str_eq(jget(&root, "method")->str, "exact-arcs");
    cr_assert_str_eq(jget(jget(&root, "old_ring"), "fingerprint")->str, rs_ring_fingerprint(a));
    cr_assert_str_eq(jget(jget(&root, "new_ring"), "description")->str, rs_ring_description(b));
    cr_assert_str_eq(jget(jget(&root, "moved"), "weight")->str, rs_u128_str(p.moved, num));
    cr_assert_eq(jget(&root, "pairs")->n, p.npairs);
    cr_assert_eq(jget(&root, "arcs")->n, p.narcs);
    cr_assert_eq(jget(jget(&root, "change"), "added")->n, 10);
    cr_assert_str_eq(jget(jget(&root, "change"), "kind")->str, "add");
    cr_assert(jget(jget(&root, "consistency"), "ok")->boolean);
    cr_assert_eq(jget(&root, "data")->type, RS_JV_NULL);
    rs_jv_free(&root);
    free(text);
    rs_plan_free(&p);
    rs_ring_free(a);
    rs_ring_free(b);
}

Test(cli, svg_and_html_flow_reports)
{
    char *out, *err;
    int rc = runf(&out, &err, "cd %s && \"$RS\" plan --quiet --nodes 50 --add 5 --svg p.svg --html p.html", tmp);
    cr_assert_eq(rc, 0, "%s", err);
    char *svg = slurp(path_in("p.svg"), NULL), *html = slurp(path_in("p.html"), NULL);
    cr_assert(svg && strstr(svg, "<svg") && strstr(svg, "</svg>"), "svg");
    cr_assert(strstr(svg, "moved share of the hash space"), "the facts are in the picture");
    cr_assert(html && strstr(html, "<html") && strstr(html, "Largest flows"), "html");
    free(svg);
    free(html);
    free(out);
    free(err);
}

Test(cli, changes_by_name_and_refusals)
{
    char *out, *err;
    FILE *f = fopen(path_in("nodes.txt"), "w");
    fputs("db01\ndb02\ndb07 2\n", f);
    fclose(f);
    int rc = runf(&out, &err, "cd %s && \"$RS\" plan --old-nodes-file nodes.txt --add 2 --reweight db01=3 --json p.json",
                  tmp);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert(strstr(out, "(2 added, 0 removed, 1 reweighted)"), "%s", out);
    char *json = slurp(path_in("p.json"), NULL);
    cr_assert(strstr(json, "\"db08\"") && strstr(json, "\"db09\""), "names continue the last: %s", json);
    free(json);
    free(out);
    free(err);
    /* slots: removing marks the node down, the others keep their slots */
    rc = runf(&out, &err, "\"$RS\" plan --scheme slots --nodes 8 --remove 2");
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert(strstr(out, "consistency  OK: every move comes from a removed node"), "%s", out);
    free(out);
    free(err);
    /* slots: adding re-deals every slot - reported, never hidden; --strict fails */
    rc = runf(&out, &err, "\"$RS\" plan --scheme slots --nodes 8 --add 1 --strict");
    cr_assert_eq(rc, 3, "%s", err);
    cr_assert(strstr(out, "consistency  VIOLATED"), "%s", out);
    free(out);
    free(err);
    rc = runf(&out, &err, "\"$RS\" plan --nodes 10");
    cr_assert_eq(rc, 64);
    cr_assert(strstr(err, "no new side"), "%s", err);
    free(out);
    free(err);
    rc = runf(&out, &err, "\"$RS\" plan --scheme modulo --nodes 10 --add 1 --arcs /dev/null");
    cr_assert_eq(rc, 64);
    cr_assert(strstr(err, "no arcs"), "%s", err);
    free(out);
    free(err);
    rc = runf(&out, &err, "\"$RS\" plan --nodes 10 --remove 99");
    cr_assert_eq(rc, 64);
    free(out);
    free(err);
    rc = runf(&out, &err, "\"$RS\" plan --nodes 10 --add 1 --emit x");
    cr_assert_eq(rc, 64, "--emit without data");
    free(out);
    free(err);
    rc = runf(&out, &err, "\"$RS\" plan --scheme jump --nodes 100 --new-nodes 110");
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert(strstr(out, "expected"), "%s", out);
    free(out);
    free(err);
}

/* ---------------------------------------------- with data */

#define NROWS 30000

/* Writes DIR/in.csv: id,text,amount with quoted fields; returns nothing. */
static void write_csv(const char *name, uint64_t seed)
{
    FILE *f = fopen(path_in(name), "w");
    cr_assert_not_null(f);
    rng_state = seed;
    fputs("id,text,amount\n", f);
    for (int i = 0; i < NROWS; i++)
        fprintf(f, "u%llu-%d,\"x, \"\"%d\"\"\",%llu\n", (unsigned long long)(rnd() % 1000000), i, i % 7,
                (unsigned long long)(rnd() % 100000));
    fclose(f);
}

typedef struct {
    char **lines;
    size_t n, cap;
} lines_t;

static void lines_add(lines_t *l, const char *s, size_t n)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->lines = realloc(l->lines, l->cap * sizeof *l->lines);
    }
    l->lines[l->n++] = strndup(s, n);
}

/* Data rows of a (gzip or plain) CSV file, header skipped. */
static void read_rows(const char *path, lines_t *l)
{
    char *text = slurp(path, NULL);
    cr_assert_not_null(text, "cannot read %s", path);
    char *p = strchr(text, '\n');
    cr_assert_not_null(p);
    p++;
    while (*p) {
        char *nl = strchr(p, '\n');
        cr_assert_not_null(nl);
        lines_add(l, p, (size_t)(nl - p));
        p = nl + 1;
    }
    free(text);
}

static int cmp_line(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void lines_free(lines_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->lines[i]);
    free(l->lines);
    memset(l, 0, sizeof *l);
}

static rs_ring *ring_names(uint32_t n, const char *const *remove, int nremove, int add)
{
    rs_ring_opts o;
    rs_nodes nodes;
    rs_error err = {0};
    rs_ring_opts_default(&o, RS_SCHEME_RING);
    rs_nodes_init_count(&nodes, n, &err);
    for (int k = 0; k < nremove; k++)
        cr_assert_eq(rs_nodes_remove(&nodes, remove[k], &err), 0);
    char name[16];
    for (int k = 0; k < add; k++) {
        snprintf(name, sizeof name, "%d", n + k);
        cr_assert_eq(rs_nodes_append(&nodes, name, 1, "t", &err), 0);
    }
    rs_ring *r = build(&o, &nodes);
    rs_nodes_free(&nodes);
    return r;
}

Test(cli, data_counts_equal_per_key_recomputation)
{
    write_csv("in.csv", 7);
    char *out, *err;
    int rc = runf(&out, &err,
                  "cd %s && \"$RS\" plan --nodes 40 --add 3 --remove 5,11 --pairs p.csv --json p.json -j 2 in.csv", tmp);
    cr_assert_eq(rc, 0, "%s", err);
    /* recompute */
    const char *rm[2] = {"5", "11"};
    rs_ring *a = ring_names(40, NULL, 0, 0), *b = ring_names(40, rm, 2, 3);
    rs_plan p;
    diff(a, b, &p);
    uint64_t *keys = calloc(p.npairs, sizeof *keys), *bytes = calloc(p.npairs, sizeof *bytes);
    uint64_t moved = 0, moved_bytes = 0, all_bytes = 0;
    lines_t l = {0};
    read_rows(path_in("in.csv"), &l);
    cr_assert_eq(l.n, NROWS);
    for (size_t i = 0; i < l.n; i++) {
        const char *comma = strchr(l.lines[i], ',');
        size_t rowlen = strlen(l.lines[i]);
        all_bytes += rowlen + 1;
        uint32_t k = rs_plan_key_pair(&p, l.lines[i], (size_t)(comma - l.lines[i]), NULL, NULL);
        cr_assert_neq(k, RS_PLAN_UNKNOWN);
        if (k == RS_PLAN_STAY)
            continue;
        keys[k]++;
        bytes[k] += rowlen + 1;
        moved++;
        moved_bytes += rowlen + 1;
    }
    char want[256];
    snprintf(want, sizeof want, "%llu/%d keys (%.4f%%) and %llu/%llu bytes", (unsigned long long)moved, NROWS,
             100.0 * moved / NROWS, (unsigned long long)moved_bytes, (unsigned long long)all_bytes);
    cr_assert(strstr(out, want), "want '%s' in\n%s", want, out);
    /* every pair's line in the CSV */
    char *csv = slurp(path_in("p.csv"), NULL);
    char num[48];
    for (size_t k = 0; k < p.npairs; k++) {
        char line[256];
        snprintf(line, sizeof line, "\n%s,%s,%s,", name_of(a, p.pairs[k].from), name_of(b, p.pairs[k].to),
                 rs_u128_str(p.pairs[k].weight, num));
        char *at = strstr(csv, line);
        cr_assert_not_null(at, "pair %s missing", line + 1);
        char tail[64];
        snprintf(tail, sizeof tail, ",%llu,%llu,,", (unsigned long long)keys[k], (unsigned long long)bytes[k]);
        char *eol = strchr(at + 1, '\n');
        cr_assert(eol && memmem(at, (size_t)(eol - at), tail, strlen(tail)), "pair %s: want %s in %.*s", line + 1,
                  tail, (int)(eol - at), at);
    }
    free(csv);
    lines_free(&l);
    free(keys);
    free(bytes);
    rs_plan_free(&p);
    rs_ring_free(a);
    rs_ring_free(b);
    free(out);
    free(err);
}

/* bucket with the old ring, plan --from-buckets --emit, apply the moves to
 * the old buckets: the result is exactly bucket with the new ring. */
Test(cli, emit_round_trip_gives_the_new_bucketing)
{
    write_csv("in.csv", 99);
    FILE *f = fopen(path_in("new.txt"), "w");
    for (int i = 0; i < 40; i++)
        if (i != 5 && i != 11)
            fprintf(f, "%d\n", i);
    fputs("40\n41\n42\n", f);
    fclose(f);
    char *out, *err;
    int rc = runf(&out, &err,
                  "cd %s && \"$RS\" bucket --quiet --nodes 40 -o old in.csv && "
                  "\"$RS\" bucket --quiet --nodes-file new.txt -o new in.csv && "
                  "\"$RS\" plan --from-buckets old --add 3 --remove 5,11 --emit moves --batch-bytes 4K "
                  "--wave-order largest --json plan.json && \"$RS\" verify moves",
                  tmp);
    cr_assert_eq(rc, 0, "%s\n%s", out, err);
    cr_assert(strstr(out, "emitted      moves"), "%s", out);
    cr_assert(strstr(out, "verify moves: OK"), "%s", out);
    /* apply: old buckets minus the moved rows plus the moved rows at their destination */
    size_t len;
    char *mtext = slurp(path_in("moves/manifest.json"), &len);
    rs_jv m;
    rs_error e = {0};
    cr_assert_eq(rs_jv_parse(&m, mtext, len, "manifest", &e, NULL), 0, "%s", e.msg);
    cr_assert_str_eq(jget(&m, "kind")->str, "moves");
    const rs_jv *files = jget(&m, "files");
    lines_t node[43] = {{0}};
    char name[64];
    for (int i = 0; i < 40; i++) {
        snprintf(name, sizeof name, "old/%d.csv.gz", i);
        read_rows(path_in(name), &node[i]);
    }
    size_t moved = 0;
    uint32_t max_wave = 0;
    for (size_t k = 0; k < files->n; k++) {
        const rs_jv *fl = &files->items[k];
        int from = atoi(jget(fl, "from")->str), to = atoi(jget(fl, "to")->str);
        const rs_jv *w = jget(fl, "wave");
        cr_assert_not_null(w, "--batch-bytes gives every file a wave");
        if ((uint32_t)atoi(w->str) > max_wave)
            max_wave = (uint32_t)atoi(w->str);
        snprintf(name, sizeof name, "moves/%s", jget(fl, "file")->str);
        lines_t mv = {0};
        read_rows(path_in(name), &mv);
        cr_assert_eq((unsigned long long)mv.n, strtoull(jget(fl, "rows")->str, NULL, 10));
        for (size_t i = 0; i < mv.n; i++) {
            size_t q;
            for (q = 0; q < node[from].n; q++)
                if (node[from].lines[q] && !strcmp(node[from].lines[q], mv.lines[i]))
                    break;
            cr_assert_lt(q, node[from].n, "moved row '%s' is not in bucket %d", mv.lines[i], from);
            free(node[from].lines[q]);
            node[from].lines[q] = NULL;
            lines_add(&node[to], mv.lines[i], strlen(mv.lines[i]));
            moved++;
        }
        lines_free(&mv);
    }
    cr_assert_gt(moved, 0);
    cr_assert_gt(max_wave, 1);
    for (int i = 0; i < 43; i++) {
        lines_t want = {0};
        snprintf(name, sizeof name, "new/%d.csv.gz", i);
        if (i == 5 || i == 11) {
            for (size_t q = 0; q < node[i].n; q++)
                cr_assert_null(node[i].lines[q], "a removed node keeps a row");
            lines_free(&node[i]);
            continue;
        }
        read_rows(path_in(name), &want);
        size_t kept = 0;
        for (size_t q = 0; q < node[i].n; q++)
            if (node[i].lines[q])
                node[i].lines[kept++] = node[i].lines[q];
        node[i].n = kept;
        cr_assert_eq(kept, want.n, "node %d: %zu rows after the moves, %zu when bucketed anew", i, kept, want.n);
        qsort(node[i].lines, kept, sizeof(char *), cmp_line);
        qsort(want.lines, want.n, sizeof(char *), cmp_line);
        for (size_t q = 0; q < kept; q++)
            cr_assert_str_eq(node[i].lines[q], want.lines[q], "node %d", i);
        lines_free(&want);
        lines_free(&node[i]);
    }
    /* the plan JSON has the waves, each within the cap unless a single pair */
    char *ptext = slurp(path_in("plan.json"), &len);
    rs_jv pj;
    cr_assert_eq(rs_jv_parse(&pj, ptext, len, "plan", &e, NULL), 0, "%s", e.msg);
    const rs_jv *waves = jget(jget(&pj, "data"), "waves");
    cr_assert_eq(waves->n, max_wave);
    for (size_t k = 0; k < waves->n; k++) {
        unsigned long long b = strtoull(jget(&waves->items[k], "bytes")->str, NULL, 10);
        unsigned long long np = strtoull(jget(&waves->items[k], "pairs")->str, NULL, 10);
        cr_assert(b <= 4096 || np == 1, "wave %zu: %llu bytes in %llu pairs", k + 1, b, np);
    }
    cr_assert_str_eq(jget(jget(&pj, "data"), "source")->str, "buckets");
    rs_jv_free(&pj);
    free(ptext);
    rs_jv_free(&m);
    free(mtext);
    free(out);
    free(err);
}

Test(cli, misplaced_rows_are_reported_and_nothing_emitted)
{
    write_csv("in.csv", 5);
    char *out, *err;
    /* put one row of bucket 3 into bucket 4's file, the manifest restamped
     * to match the file (else the count differs first: tests/test_readers.c) */
    int rc = runf(&out, &err,
                  "cd %s && \"$RS\" bucket --quiet --nodes 20 -o old in.csv && "
                  "gzip -dc old/4.csv.gz > t && gzip -dc old/3.csv.gz | sed -n 2p >> t && gzip -c t > old/4.csv.gz && "
                  "python3 %s/tests/restamp.py old 4.csv.gz && "
                  "\"$RS\" plan --from-buckets old --add 2 --emit moves --json p.json",
                  tmp, RS_SOURCE_DIR);
    cr_assert_eq(rc, 3, "%s\n%s", out, err);
    cr_assert(strstr(out, "MISMATCH     1 rows sit in a bucket their old ring does not assign"), "%s", out);
    cr_assert(strstr(out, "4.csv.gz (node 4): 1 rows"), "%s", out);
    rc = runf(NULL, NULL, "test -e %s/moves", tmp);
    cr_assert_neq(rc, 0, "nothing is emitted from a directory that does not match its ring");
    char *json = slurp(path_in("p.json"), NULL);
    cr_assert(strstr(json, "\"mismatched_rows\": 1"), "%s", json);
    free(json);
    free(out);
    free(err);
    /* and the same directory with --ring-only plans without reading rows */
    rc = runf(&out, &err, "cd %s && \"$RS\" plan --from-buckets old --ring-only --add 2", tmp);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert(strstr(out, "20 -> 22 nodes"), "%s", out);
    free(out);
    free(err);
    rc = runf(&out, &err, "cd %s && \"$RS\" plan --from-buckets old --scheme ketama --add 2", tmp);
    cr_assert_eq(rc, 64, "ring options conflict with --from-buckets");
    free(out);
    free(err);
}

/* Conservation: plan --emit checks, before publishing, that per
 * input the rows and bytes read are the rows and bytes routed, that in
 * total read = moved + stay, and that every moved row was written once.
 * On real runs (plain and gzip inputs, a rejected row under skip, from a
 * bucket directory, one thread and two) the check passes and the
 * published numbers add up as an independent count says. */
Test(cli, emit_conserves_rows_and_bytes)
{
    char *out, *err;
    int rc = runf(&out, &err,
                  "cd %s && python3 -c \"\nimport random\nrandom.seed(3)\n"
                  "open('a.csv', 'w').write('id,v\\n' + ''.join('k%%d,x%%d\\n' %% (random.randrange(900), i) for i in range(3000)))\n"
                  "open('b.csv', 'w').write('id,v\\n' + ''.join('k%%d,\\\"y\\n%%d\\\"\\n' %% (i, i) for i in range(1500)) + 'bad\\\"row,1\\n')\" && "
                  "gzip -k b.csv && for j in 1 2; do "
                  "\"$RS\" plan -j $j --nodes 7 --add 2 --remove 3 --key id --on-bad-row skip --emit mv$j --json p$j.json "
                  "a.csv b.csv.gz > /dev/null || exit 9; \"$RS\" verify --quiet mv$j || exit 8; done && "
                  "diff -r -x manifest.json mv1 mv2 && "
                  "\"$RS\" bucket --quiet --on-bad-row skip --nodes 7 -o old a.csv b.csv && "
                  "\"$RS\" plan --from-buckets old --add 2 --remove 3 --emit mvb --json pb.json > /dev/null && "
                  "\"$RS\" verify --quiet mvb && "
                  "python3 -c \"\nimport csv, gzip, glob, json\n"
                  "n = sum(1 for f in ('a.csv', 'b.csv') for r in csv.reader(open(f, newline='')) if r) - 2\n"
                  "for mv, pj in (('mv1', 'p1.json'), ('mvb', 'pb.json')):\n"
                  "    m = json.load(open(mv + '/manifest.json')); d = json.load(open(pj))['data']\n"
                  "    files = sum(sum(1 for r in csv.reader(gzip.open(f, 'rt', newline='')) if r) - 1 for f in glob.glob(mv + '/*.csv.gz'))\n"
                  "    ins = sum(i['rows'] for i in m['inputs'])\n"
                  "    print(n, ins + m['totals']['rejected'], d['rows'], d['rows_moved'], m['totals']['rows'], files, "
                  "d['bytes_moved'] == m['totals']['bytes'], m['totals']['rejected'])\"",
                  tmp);
    cr_assert_eq(rc, 0, "%s\n%s", out, err);
    /* records; rows + rejected; read; moved; in the manifest; in the files */
    long long v[6];
    char eq[8];
    cr_assert_eq(sscanf(out, "%lld %lld %lld %lld %lld %lld %7s", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], eq), 7,
                 "%s", out);
    cr_assert_eq(v[0], 4501, "%s", out);
    cr_assert_eq(v[1], 4501, "rows + rejected = records: %s", out);
    cr_assert_eq(v[2], 4500, "%s", out);
    cr_assert(v[3] > 0 && v[3] < v[2], "%s", out);
    cr_assert_eq(v[4], v[3], "%s", out);
    cr_assert_eq(v[5], v[3], "%s", out);
    cr_assert_str_eq(eq, "True", "%s", out);
    cr_assert(strstr(out, "True 1\n") && strstr(out, "True 0\n"), "1 rejected from the inputs, 0 from old/: %s", out);
    free(out);
    free(err);
}
