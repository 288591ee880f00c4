/* The placement engine against the reference implementations' vectors
 * (fixtures/vectors, copied from ../shared/vectors), through the library
 * and through the command. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ringshard/ring.h"
#include "support.h"
#include "tsv.h"

static rs_ring *build(const rs_ring_opts *o, const rs_nodes *n)
{
    rs_error err = {0};
    rs_ring *r = rs_ring_build(o, n, &err);
    cr_assert_not_null(r, "ring build failed: %s", err.msg);
    return r;
}

/* Scheme s's ring, with its default options, over nodes 0..nodes-1. */
static rs_ring *scheme_ring(rs_scheme_id s, uint32_t nodes)
{
    rs_ring_opts o;
    rs_nodes n;
    rs_error err = {0};
    rs_ring_opts_default(&o, s);
    cr_assert_eq(rs_nodes_init_count(&n, nodes, &err), 0);
    rs_ring *r = build(&o, &n);
    rs_nodes_free(&n);
    return r;
}

static rs_ring *default_ring(uint32_t nodes)
{
    return scheme_ring(RS_SCHEME_RING, nodes);
}

/* A random position of r's space (xorshift state *x). */
static uint64_t random_pos(uint64_t *x, const rs_ring *r)
{
    *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
    return (uint64_t)((rs_u128)*x % rs_ring_space(r));
}

static const char *locate_name(const rs_ring *r, const void *key, size_t len)
{
    return rs_ring_nodes(r)->names[rs_ring_locate(r, key, len)];
}

static size_t key_bytes(tsv *t, int hexcol, int keycol, unsigned char *buf, size_t cap)
{
    if (hexcol >= 0)
        return unhex(t->f[hexcol], buf, cap);
    size_t n = tsv_unescape(t->f[keycol]);
    cr_assert_lt(n, cap);
    memcpy(buf, t->f[keycol], n);
    return n;
}

static unsigned char kb[1 << 16];

Test(seed004, public_keys_positions_and_nodes)
{
    rs_ring *r = default_ring(1000);
    tsv t;
    cr_assert_eq(tsv_open(&t, "seed004_public.tsv"), 0);
    int ch = tsv_col(&t, "masked_hash"), cn = tsv_col(&t, "node"), cx = tsv_col(&t, "key_utf8_hex");
    size_t rows = 0;
    while (tsv_next(&t)) {
        size_t n = key_bytes(&t, cx, 0, kb, sizeof kb);
        unsigned long long want = strtoull(t.f[ch], NULL, 10);
        cr_assert_eq(rs_ring_position(r, kb, n), want, "row %zu key '%s'", t.rows, t.f[0]);
        cr_assert_str_eq(locate_name(r, kb, n), t.f[cn], "row %zu key '%s'", t.rows, t.f[0]);
        rows++;
    }
    cr_assert_eq(rows, 2178, "rows checked: %zu", rows);
    /* The vectors' README: the first point belongs to node 489. */
    cr_assert_str_eq(rs_ring_nodes(r)->names[rs_ring_point_node(r, 0)], "489");
    cr_assert_eq(rs_ring_collisions(r), 0);
    tsv_close(&t);
    rs_ring_free(r);
}

Test(seed004, ring_points_and_shares_exact)
{
    rs_ring *r = default_ring(1000);
    tsv t;
    cr_assert_eq(tsv_open(&t, "seed004_ring_1000x200.tsv.gz"), 0);
    uint32_t i = 0;
    char label[128];
    while (tsv_next(&t)) {
        cr_assert_lt(i, rs_ring_npoints(r));
        cr_assert_eq(rs_ring_point_pos(r, i), strtoull(t.f[0], NULL, 10), "point %u", i);
        cr_assert_str_eq(rs_ring_nodes(r)->names[rs_ring_point_node(r, i)], t.f[1]);
        rs_ring_point_label_text(r, i, label, sizeof label);
        cr_assert_str_eq(label, t.f[2]);
        i++;
    }
    cr_assert_eq(i, 200000);
    cr_assert_eq(rs_ring_npoints(r), 200000);
    tsv_close(&t);

    rs_u128 *owned = calloc(1000, sizeof *owned);
    cr_assert_eq(rs_ring_shares(r, owned), 0);
    cr_assert_eq(tsv_open(&t, "seed004_ringstats_1000x200.tsv"), 0);
    rs_u128 sum = 0;
    size_t rows = 0;
    char buf[48];
    while (tsv_next(&t)) {
        int64_t node = rs_nodes_find(rs_ring_nodes(r), t.f[0]);
        cr_assert_geq(node, 0);
        cr_assert_str_eq(rs_u128_str(owned[node], buf), t.f[2], "node %s", t.f[0]);
        sum += owned[node];
        rows++;
    }
    cr_assert_eq(rows, 1000);
    cr_assert(sum == ((rs_u128)1 << 63), "shares must cover the space exactly");
    free(owned);
    tsv_close(&t);
    rs_ring_free(r);
}

Test(seed004, migration_sample)
{
    rs_ring *r1000 = default_ring(1000), *r1010 = default_ring(1010);
    rs_ring_opts o;
    rs_nodes n;
    rs_error err = {0};
    rs_ring_opts_default(&o, RS_SCHEME_RING);
    rs_nodes_init_count(&n, 1000, &err);
    cr_assert_eq(rs_nodes_remove(&n, "17", &err), 0);
    cr_assert_eq(rs_nodes_remove(&n, "500", &err), 0);
    rs_ring *rm = build(&o, &n);
    rs_nodes_free(&n);
    tsv t;
    cr_assert_eq(tsv_open(&t, "seed004_migration_sample.tsv.gz"), 0);
    size_t rows = 0;
    while (tsv_next(&t)) {
        size_t len = key_bytes(&t, -1, 0, kb, sizeof kb);
        cr_assert_eq(rs_ring_position(r1000, kb, len), strtoull(t.f[1], NULL, 10));
        cr_assert_str_eq(locate_name(r1000, kb, len), t.f[2]);
        cr_assert_str_eq(locate_name(r1010, kb, len), t.f[3], "key %s", t.f[0]);
        cr_assert_str_eq(locate_name(rm, kb, len), t.f[4], "key %s", t.f[0]);
        rows++;
    }
    cr_assert_eq(rows, 5000);
    tsv_close(&t);
    rs_ring_free(r1000);
    rs_ring_free(r1010);
    rs_ring_free(rm);
}

/* The FNV1_32 ring (seed000_*.tsv): the FNV1_32 variant, hash % 100, and the 100-point ring named
 * i * 21474836, before and after adding server "2333". */
static rs_ring *seed000_ring(int with_2333)
{
    rs_ring_opts o;
    rs_nodes n = {0};
    rs_error err = {0};
    rs_ring_opts_default(&o, RS_SCHEME_RING);
    o.hash = RS_HASH_FNV1_32_JAVA;
    o.vnodes = 1;
    o.order = RS_ORDER_SIGNED;
    strcpy(o.label, "{node}");
    char name[32];
    for (int i = 0; i < 100; i++) {
        snprintf(name, sizeof name, "%d", i * 21474836);
        cr_assert_eq(rs_nodes_append(&n, name, 1, "test", &err), 0);
    }
    if (with_2333)
        cr_assert_eq(rs_nodes_append(&n, "2333", 1, "test", &err), 0);
    rs_ring *r = build(&o, &n);
    rs_nodes_free(&n);
    return r;
}

Test(seed000, modulo_and_ring)
{
    rs_ring_opts o;
    rs_nodes n;
    rs_error err = {0};
    rs_ring_opts_default(&o, RS_SCHEME_MODULO);
    o.hash = RS_HASH_FNV1_32_JAVA;
    rs_nodes_init_count(&n, 100, &err);
    rs_ring *mod = build(&o, &n);
    rs_nodes_free(&n);
    rs_ring *ring = seed000_ring(0), *ring2 = seed000_ring(1);
    tsv t;
    cr_assert_eq(tsv_open(&t, "seed000_vectors.tsv"), 0);
    int cx = tsv_col(&t, "key_utf8_hex");
    size_t rows = 0;
    while (tsv_next(&t)) {
        size_t len = key_bytes(&t, cx, 0, kb, sizeof kb);
        cr_assert_str_eq(locate_name(mod, kb, len), t.f[2], "mod100 of %s", t.f[0]);
        /* The Java code counts servers by value / 21474836; the added one is "2333". */
        const char *a = locate_name(ring, kb, len), *b = locate_name(ring2, kb, len);
        char ia[16], ib[16];
        snprintf(ia, sizeof ia, "%lld", atoll(a) / 21474836);
        snprintf(ib, sizeof ib, "%lld", atoll(b) / 21474836);
        cr_assert_str_eq(ia, t.f[3], "ring of %s", t.f[0]);
        cr_assert_str_eq(strcmp(b, "2333") ? ib : "2333", t.f[4], "ring+2333 of %s", t.f[0]);
        rows++;
    }
    cr_assert_eq(rows, 1257);
    tsv_close(&t);

    /* seed000_ring.tsv lists the ring after "2333" was added: 101 points. */
    cr_assert_eq(tsv_open(&t, "seed000_ring.tsv"), 0);
    uint32_t i = 0;
    while (tsv_next(&t)) {
        cr_assert_eq(rs_ring_point_pos(ring2, i), strtoull(t.f[0], NULL, 10), "point %u", i);
        cr_assert_str_eq(rs_ring_nodes(ring2)->names[rs_ring_point_node(ring2, i)], t.f[1]);
        i++;
    }
    cr_assert_eq(i, rs_ring_npoints(ring2));
    cr_assert_eq(i, 101);
    cr_assert_eq(rs_ring_npoints(ring), 100);
    tsv_close(&t);
    rs_ring_free(mod);
    rs_ring_free(ring);
    rs_ring_free(ring2);
}

/* The Java hashCode slots (seed001_*.tsv): 1024 slots dealt to node_0..node_7;
 * dropping a node removes its slots only. Where the Java code throws (NPE),
 * ringshard wraps to slot 0. */
Test(seed001, slots)
{
    rs_ring_opts o;
    rs_nodes n = {0};
    rs_error err = {0};
    rs_ring_opts_default(&o, RS_SCHEME_SLOTS);
    char name[16];
    for (int i = 0; i < 8; i++) {
        snprintf(name, sizeof name, "node_%d", i);
        rs_nodes_append(&n, name, 1, "test", &err);
    }
    rs_ring *r = build(&o, &n);
    rs_nodes d2, d7;
    rs_nodes_copy(&d2, &n, &err);
    rs_nodes_copy(&d7, &n, &err);
    rs_nodes_set_down(&d2, "node_2", &err);
    rs_nodes_set_down(&d7, "node_7", &err);
    rs_ring *r2 = build(&o, &d2), *r7 = build(&o, &d7);
    tsv t;
    cr_assert_eq(tsv_open(&t, "seed001_vectors.tsv"), 0);
    int cx = tsv_col(&t, "key_utf8_hex");
    size_t rows = 0, npe = 0;
    while (tsv_next(&t)) {
        size_t len = key_bytes(&t, cx, 0, kb, sizeof kb);
        /* position = slot value + S - 1 */
        cr_assert_eq((int64_t)rs_ring_position(r, kb, len) - 1023, atoll(t.f[2]), "slot of %s", t.f[0]);
        cr_assert_str_eq(locate_name(r, kb, len), t.f[3]);
        cr_assert_str_eq(locate_name(r2, kb, len), t.f[4], "drop 2: %s", t.f[0]);
        if (!strcmp(t.f[5], "NPE")) {
            cr_assert_str_eq(locate_name(r7, kb, len), "node_0");
            npe++;
        } else
            cr_assert_str_eq(locate_name(r7, kb, len), t.f[5], "drop 7: %s", t.f[0]);
        rows++;
    }
    cr_assert_eq(rows, 1165);
    cr_assert_gt(npe, 0, "the vectors include keys where the Java code throws");
    /* Shares are over the 2^32 hash codes; slot 0 takes every negative code. */
    rs_u128 owned[8], sum = 0;
    rs_ring_shares(r, owned);
    for (int i = 0; i < 8; i++)
        sum += owned[i];
    cr_assert(sum == ((rs_u128)1 << 32));
    cr_assert_gt((double)owned[0] / 4294967296.0, 0.5);
    tsv_close(&t);
    rs_nodes_free(&n);
    rs_nodes_free(&d2);
    rs_nodes_free(&d7);
    rs_ring_free(r);
    rs_ring_free(r2);
    rs_ring_free(r7);
}

static rs_ring *seed002_ring(int servers)
{
    rs_ring_opts o;
    rs_nodes n = {0};
    rs_error err = {0};
    rs_ring_opts_default(&o, RS_SCHEME_RING);
    o.hash = RS_HASH_MURMUR64A_JAVA;
    o.seed = 0x1234ABCD;
    o.clear_sign = 0;
    o.order = RS_ORDER_SIGNED;
    o.vnodes = 1;
    strcpy(o.label, "{node}");
    char name[32];
    for (int i = 0; i < servers; i++) {
        snprintf(name, sizeof name, "192.168.1.%d:3306", 10 + i);
        rs_nodes_append(&n, name, 1, "test", &err);
    }
    rs_ring *r = build(&o, &n);
    rs_nodes_free(&n);
    return r;
}

Test(seed002, murmur64a_signed_ring)
{
    rs_ring *r3 = seed002_ring(3), *r4 = seed002_ring(4);
    tsv t;
    cr_assert_eq(tsv_open(&t, "seed002_vectors.tsv"), 0);
    int cx = tsv_col(&t, "key_utf8_hex");
    size_t rows = 0;
    while (tsv_next(&t)) {
        size_t len = key_bytes(&t, cx, 0, kb, sizeof kb);
        cr_assert_str_eq(locate_name(r3, kb, len), t.f[4], "3 servers: %s", t.f[0]);
        cr_assert_str_eq(locate_name(r4, kb, len), t.f[5], "4 servers: %s", t.f[0]);
        rows++;
    }
    cr_assert_eq(rows, 1165);
    tsv_close(&t);
    cr_assert_eq(tsv_open(&t, "seed002_ring.tsv"), 0);
    uint32_t i = 0;
    while (tsv_next(&t)) {
        /* signed order: position = value with its sign bit flipped */
        uint64_t want = (uint64_t)strtoll(t.f[0], NULL, 10) ^ (1ULL << 63);
        cr_assert_eq(rs_ring_point_pos(r4, i), want);
        cr_assert_str_eq(rs_ring_nodes(r4)->names[rs_ring_point_node(r4, i)], t.f[2]);
        i++;
    }
    cr_assert_eq(i, 4);
    tsv_close(&t);
    rs_ring_free(r3);
    rs_ring_free(r4);
}

static rs_ring *seed003_ring(int without)
{
    rs_ring_opts o;
    rs_nodes n = {0};
    rs_error err = {0};
    rs_ring_opts_default(&o, RS_SCHEME_KETAMA);
    const char *s[] = {"1.2.3.4:11211", "5.6.7.8:11211", "9.8.7.6:11211"};
    for (int i = 0; i < 3; i++)
        if (!(without && i == 1))
            rs_nodes_append(&n, s[i], 1, "test", &err);
    rs_ring *r = build(&o, &n);
    rs_nodes_free(&n);
    return r;
}

Test(seed003, ketama)
{
    rs_ring *r = seed003_ring(0), *rw = seed003_ring(1);
    tsv t;
    cr_assert_eq(tsv_open(&t, "seed003_vectors.tsv"), 0);
    int cx = tsv_col(&t, "key_utf8_hex");
    size_t rows = 0;
    while (tsv_next(&t)) {
        size_t len = key_bytes(&t, cx, 0, kb, sizeof kb);
        cr_assert_eq(rs_ring_position(r, kb, len), strtoull(t.f[1], NULL, 10));
        cr_assert_str_eq(locate_name(r, kb, len), t.f[2], "key %s", t.f[0]);
        cr_assert_str_eq(locate_name(rw, kb, len), t.f[3], "key %s without", t.f[0]);
        rows++;
    }
    cr_assert_eq(rows, 1166);
    tsv_close(&t);
    cr_assert_eq(tsv_open(&t, "seed003_ring.tsv"), 0);
    uint32_t i = 0;
    char label[128];
    while (tsv_next(&t)) {
        cr_assert_eq(rs_ring_point_pos(r, i), strtoull(t.f[0], NULL, 10));
        cr_assert_str_eq(rs_ring_nodes(r)->names[rs_ring_point_node(r, i)], t.f[1]);
        rs_ring_point_label_text(r, i, label, sizeof label);
        cr_assert_str_eq(label, t.f[2]);
        i++;
    }
    cr_assert_eq(i, 480);
    tsv_close(&t);
    rs_ring_free(r);
    rs_ring_free(rw);
}

/* twemproxy's test_all.c: ketama_hash("server1-8", 0) and (…, 3). */
Test(golden, twemproxy_ketama_points)
{
    rs_ring_opts o;
    rs_nodes n = {0};
    rs_error err = {0};
    rs_ring_opts_default(&o, RS_SCHEME_KETAMA);
    strcpy(o.label, "{node}-{i}");
    rs_nodes_append(&n, "server1", 1, "test", &err);
    rs_ring *r = build(&o, &n);
    int found0 = 0, found3 = 0;
    for (uint32_t i = 0; i < rs_ring_npoints(r); i++) {
        if (rs_ring_point_label(r, i) == 8 * 4 + 0 && rs_ring_point_pos(r, i) == 3853726576u)
            found0 = 1;
        if (rs_ring_point_label(r, i) == 8 * 4 + 3 && rs_ring_point_pos(r, i) == 2667054752u)
            found3 = 1;
    }
    cr_assert(found0 && found3);
    rs_ring_free(r);
    rs_nodes_free(&n);
}

/* libketama's python_ketama/tests.py: servers weighted 600 and 400 get 192
 * and 128 points (ringshard weights 1.2 and 0.8 give the same counts);
 * "test" hashes to 3446378249 and lands on point 3454255383 of :11211. */
Test(golden, libketama_weighted)
{
    rs_ring_opts o;
    rs_nodes n = {0};
    rs_error err = {0};
    const char text[] = "127.0.0.1:11211 1.2\n127.0.0.1:11212 0.8\n";
    cr_assert_eq(rs_nodes_parse(&n, text, sizeof text - 1, "test", &err), 0, "%s", err.msg);
    rs_ring_opts_default(&o, RS_SCHEME_KETAMA);
    strcpy(o.label, "{node}-{i}");
    rs_ring *r = build(&o, &n);
    cr_assert_eq(rs_ring_npoints(r), 320);
    uint64_t pos = rs_ring_position(r, "test", 4);
    cr_assert_eq(pos, 3446378249u);
    cr_assert_eq(rs_ring_point_pos(r, rs_ring_point_at(r, pos)), 3454255383u);
    cr_assert_str_eq(locate_name(r, "test", 4), "127.0.0.1:11211");
    rs_ring_free(r);
    rs_nodes_free(&n);
}

/* Guava HashingTest: consistentHash(i, 100) for i = 0..19 (golden100), and
 * the defining property: growing the bucket count only ever moves a key to
 * the new bucket. */
Test(golden, guava_jump)
{
    static const int golden100[] = {0, 55, 62, 8, 45, 59, 86, 97, 82, 59, 73, 37, 17, 56, 86, 21, 90, 37, 38, 83};
    for (int i = 0; i < 20; i++)
        cr_assert_eq(rs_jump_consistent_hash((uint64_t)i, 100), golden100[i], "consistentHash(%d, 100)", i);
    const uint64_t inputs[] = {(uint64_t)-1, 0, 1, 2, INT64_MAX, (uint64_t)INT64_MIN, 0x9999999999999999ULL};
    for (size_t k = 0; k < sizeof inputs / sizeof *inputs; k++) {
        int last = 0;
        for (int shards = 1; shards <= 20000; shards++) {
            int b = rs_jump_consistent_hash(inputs[k], shards);
            if (b != last) {
                cr_assert_eq(b, shards - 1);
                last = b;
            }
        }
    }
}

/* Two labels with equal points: the later insertion wins, as TreeMap.put. */
Test(ring, collisions_later_insertion_wins)
{
    for (int scheme = RS_SCHEME_RING; scheme <= RS_SCHEME_KETAMA; scheme++) {
        rs_ring_opts o;
        rs_nodes n = {0};
        rs_error err = {0};
        rs_ring_opts_default(&o, (rs_scheme_id)scheme);
        strcpy(o.label, "{node}{i}");
        o.vnodes = 20 * (scheme == RS_SCHEME_KETAMA ? 4 : 1);
        
        rs_nodes_append(&n, "a", 1, "test", &err);
        rs_nodes_append(&n, "a1", 1, "test", &err);
        rs_ring *r = build(&o, &n);
        /* labels a10..a19 of "a" are labels 0..9 of "a1" */
        uint32_t expect = scheme == RS_SCHEME_KETAMA ? 40 : 10;
        cr_assert_eq(rs_ring_collisions(r), expect, "scheme %d: %u collisions", scheme, rs_ring_collisions(r));
        uint64_t pos = rs_ring_position(r, "a10", 3);
        if (scheme == RS_SCHEME_RING)
            cr_assert_str_eq(rs_ring_nodes(r)->names[rs_ring_owner(r, pos)], "a1");
        rs_ring_free(r);
        /* swapping the order swaps the winner */
        rs_nodes m = {0};
        rs_nodes_append(&m, "a1", 1, "test", &err);
        rs_nodes_append(&m, "a", 1, "test", &err);
        r = build(&o, &m);
        if (scheme == RS_SCHEME_RING)
            cr_assert_str_eq(rs_ring_nodes(r)->names[rs_ring_owner(r, pos)], "a");
        rs_ring_free(r);
        rs_nodes_free(&n);
        rs_nodes_free(&m);
    }
}

/* The slot table of a ring of the default size (1000 nodes x 200 points:
 * most slots hold no point and answer alone) agrees with a plain binary
 * search, at random positions and at every point and its neighbours. */
Test(ring, slots_agree_with_binary_search_on_a_large_ring)
{
    rs_ring_opts o;
    rs_nodes n;
    rs_error err = {0};
    rs_ring_opts_default(&o, RS_SCHEME_RING);
    rs_nodes_init_count(&n, 1000, &err);
    rs_ring *r = build(&o, &n);
    uint64_t x = 0x2545F4914F6CDD1DULL;
    for (int i = 0; i < 1000000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t pos = (uint64_t)((rs_u128)x % rs_ring_space(r));
        cr_assert_eq(rs_ring_owner(r, pos), rs_ring_owner_bsearch(r, pos), "pos %llu", (unsigned long long)pos);
    }
    for (uint32_t i = 0; i < rs_ring_npoints(r); i++) {
        uint64_t p = rs_ring_point_pos(r, i);
        cr_assert_eq(rs_ring_owner(r, p), rs_ring_owner_bsearch(r, p));
        /* the neighbours, near and far within a slot and across slots */
        static const uint64_t near[] = {1, 2, (uint64_t)1 << 12, (uint64_t)1 << 13, (uint64_t)1 << 14,
                                        (uint64_t)1 << 20, (uint64_t)1 << 31, (uint64_t)1 << 32, (uint64_t)1 << 33};
        for (size_t k = 0; k < sizeof near / sizeof *near; k++) {
            if ((rs_u128)p + near[k] < rs_ring_space(r))
                cr_assert_eq(rs_ring_owner(r, p + near[k]), rs_ring_owner_bsearch(r, p + near[k]), "p %llu + %llu",
                             (unsigned long long)p, (unsigned long long)near[k]);
            if (p >= near[k])
                cr_assert_eq(rs_ring_owner(r, p - near[k]), rs_ring_owner_bsearch(r, p - near[k]), "p %llu - %llu",
                             (unsigned long long)p, (unsigned long long)near[k]);
        }
    }
    rs_ring_free(r);
    rs_nodes_free(&n);
}

/* The three batched steps (positions, prefetch_points with its hints,
 * owners) give rs_ring_owner of every position, for every scheme, in
 * blocks of every size up to 150 (past the owners' runs of 64): at the
 * points, beside them and at random. */
Test(ring, batched_steps_agree_with_the_owner)
{
    uint64_t x = 0xD1B54A32D192ED03ULL;
    for (int s = 0; s < RS_SCHEME__COUNT; s++) {
        rs_ring *r = scheme_ring((rs_scheme_id)s, s == RS_SCHEME_RING ? 1000 : 37);
        enum { N = 150 };
        uint64_t pos[N], hint[N];
        uint32_t own[N];
        long checked = 0;
        for (int round = 0; round < 2000; round++) {
            size_t m = (size_t)round % (N + 1);
            for (size_t i = 0; i < m; i++) {
                uint64_t p = random_pos(&x, r);
                if (rs_ring_has_points(r) && i % 3) { /* at a point, or beside it */
                    p = rs_ring_point_pos(r, (uint32_t)(x >> 7) % rs_ring_npoints(r));
                    if (i % 3 == 2 && (rs_u128)p + 1 < rs_ring_space(r))
                        p++;
                }
                pos[i] = p;
            }
            memset(hint, 0xA5, sizeof hint); /* what the prefetch step must overwrite */
            rs_ring_prefetch_points(r, pos, m, hint);
            rs_ring_owners(r, pos, hint, m, own);
            for (size_t i = 0; i < m; i++, checked++)
                cr_assert_eq(own[i], rs_ring_owner(r, pos[i]), "scheme %d pos %llu", s, (unsigned long long)pos[i]);
        }
        cr_assert_eq(checked, 2000L / (N + 1) * (N * (N + 1) / 2) + (2000 % (N + 1)) * ((2000 % (N + 1)) - 1) / 2);
        /* and from keys, positions hashed by the first step */
        const char *keys[3] = {"a", "bill-42", ""};
        size_t lens[3] = {1, 7, 0};
        rs_ring_positions(r, keys, lens, 3, pos);
        rs_ring_prefetch_points(r, pos, 3, hint);
        rs_ring_owners(r, pos, hint, 3, own);
        for (int i = 0; i < 3; i++)
            cr_assert_eq(own[i], rs_ring_locate(r, keys[i], lens[i]), "scheme %d key '%s'", s, keys[i]);
        rs_ring_free(r);
    }
}

/* The index never disagrees with a plain binary search, for every scheme. */
Test(ring, index_agrees_with_binary_search)
{
    uint64_t x = 0x9E3779B97F4A7C15ULL;
    for (int s = 0; s < RS_SCHEME__COUNT; s++) {
        rs_ring *r = scheme_ring((rs_scheme_id)s, 37);
        for (int i = 0; i < 200000; i++) {
            uint64_t pos = random_pos(&x, r);
            if (i < 4)
                pos = i < 2 ? (uint64_t)i : (uint64_t)(rs_ring_space(r) - (i - 1));
            cr_assert_eq(rs_ring_owner(r, pos), rs_ring_owner_bsearch(r, pos), "scheme %d pos %llu", s,
                         (unsigned long long)pos);
        }
        if (rs_ring_has_points(r))
            for (uint32_t i = 0; i < rs_ring_npoints(r); i++) {
                uint64_t p = rs_ring_point_pos(r, i);
                cr_assert_eq(rs_ring_point_at(r, p), i);
                cr_assert_eq(rs_ring_owner(r, p), rs_ring_owner_bsearch(r, p), "scheme %d", s);
                if ((rs_u128)p + 1 < rs_ring_space(r)) {
                    cr_assert_eq(rs_ring_point_at(r, p + 1), i + 1 == rs_ring_npoints(r) ? 0 : i + 1);
                    cr_assert_eq(rs_ring_owner(r, p + 1), rs_ring_owner_bsearch(r, p + 1), "scheme %d", s);
                }
                if (p > 0)
                    cr_assert_eq(rs_ring_owner(r, p - 1), rs_ring_owner_bsearch(r, p - 1), "scheme %d", s);
            }
        rs_u128 *owned = calloc(37, sizeof *owned), sum = 0;
        rs_ring_shares(r, owned);
        for (int i = 0; i < 37; i++)
            sum += owned[i];
        cr_assert(sum == rs_ring_total_weight(r), "scheme %d: shares sum to the total weight", s);
        if (s != RS_SCHEME_SLOTS)
            cr_assert(rs_ring_total_weight(r) == rs_ring_space(r));
        free(owned);
        rs_ring_free(r);
    }
}

Test(ring, weights_scale_points_independently)
{
    rs_ring_opts o;
    rs_nodes n = {0};
    rs_error err = {0};
    const char text[] = "# comment\nalpha 2\n\nbeta\t0.5  # half\r\ngamma\n";
    cr_assert_eq(rs_nodes_parse(&n, text, sizeof text - 1, "nodes.txt", &err), 0, "%s", err.msg);
    cr_assert_eq(n.count, 3);
    rs_ring_opts_default(&o, RS_SCHEME_RING);
    rs_ring *r = build(&o, &n);
    uint32_t pts[3] = {0};
    for (uint32_t i = 0; i < rs_ring_npoints(r); i++)
        pts[rs_ring_point_node(r, i)]++;
    cr_assert_eq(pts[0], 400);
    cr_assert_eq(pts[1], 100);
    cr_assert_eq(pts[2], 200);
    rs_ring_free(r);
    /* ketama: a node's count depends on its own weight only */
    rs_ring_opts_default(&o, RS_SCHEME_KETAMA);
    r = build(&o, &n);
    cr_assert_eq(rs_ring_npoints(r), 320 + 80 + 160);
    rs_ring_free(r);
    rs_nodes_free(&n);
}

Test(nodes, parse_errors_name_the_line)
{
    struct {
        const char *text, *want;
    } cases[] = {
        {"a\nb\na\n", "nodes.txt:3: duplicate node name 'a' (first on line 1)"},
        {"a\nb -1\n", "nodes.txt:2: weight '-1' of node 'b' is not a positive number"},
        {"a\nb 0\n", "nodes.txt:2: weight '0'"},
        {"a\nb x\n", "nodes.txt:2: weight 'x'"},
        {"a\nb\x01z\n", "nodes.txt:2: control character in node name"},
        {"# nothing\n\n", "nodes.txt: no nodes in the node list"},
        {"a 1 down extra\n", "nodes.txt:1: unexpected 'extra'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        rs_nodes n;
        rs_error err = {0};
        cr_assert_eq(rs_nodes_parse(&n, cases[i].text, strlen(cases[i].text), "nodes.txt", &err), -1, "case %zu", i);
        cr_assert_eq(err.code, 2);
        cr_assert(strstr(err.msg, cases[i].want), "case %zu: '%s' lacks '%s'", i, err.msg, cases[i].want);
    }
}

Test(ring, description_and_fingerprint)
{
    rs_ring *a = default_ring(1000), *b = default_ring(1000), *c = default_ring(1001);
    cr_assert_str_eq(rs_ring_fingerprint(a), rs_ring_fingerprint(b));
    cr_assert_str_neq(rs_ring_fingerprint(a), rs_ring_fingerprint(c));
    cr_assert_eq(strlen(rs_ring_fingerprint(a)), 32);
    rs_ring_opts o;
    rs_nodes n;
    rs_error err = {0};
    cr_assert_eq(rs_ring_parse_description(rs_ring_description(c), &o, &n, &err), 0, "%s", err.msg);
    rs_ring *d = build(&o, &n);
    cr_assert_str_eq(rs_ring_description(d), rs_ring_description(c));
    cr_assert_str_eq(rs_ring_fingerprint(d), rs_ring_fingerprint(c));
    cr_assert_eq(rs_ring_parse_description("ringshard-ring 1\nscheme\tring\nbogus\t1\n", &o, &n, &err), -1);
    rs_nodes_free(&n);
    rs_ring_free(a);
    rs_ring_free(b);
    rs_ring_free(c);
    rs_ring_free(d);
}

/* A ring spec (ringshard/ring.h), resolved by the library as the command's
 * ring options are: defaults from the scheme, the client preset's
 * exclusions, the ranges, and --down lists that add up. */
Test(spec, resolves_defaults_fields_and_down_lists)
{
    rs_ring_opts o, want;
    rs_nodes n;
    rs_error err = {0};
    rs_ring_spec none = {0};
    cr_assert_eq(rs_ring_spec_given(&none), 0);
    cr_assert_eq(rs_ring_spec_resolve(&none, &o, &n, &err), 0, "%s", err.msg);
    rs_ring_opts_default(&want, RS_SCHEME_RING);
    cr_assert_eq(o.vnodes, want.vnodes);
    cr_assert_str_eq(o.label, want.label);
    cr_assert_eq(n.count, 1000);
    rs_nodes_free(&n);

    const char *down[] = {"1,2", "5"};
    rs_ring_spec s = {.scheme = "ketama", .nodes = "8", .vnodes = "40", .seed = "0x10", .down = down, .ndown = 2};
    cr_assert_eq(rs_ring_spec_given(&s), 1);
    cr_assert_eq(rs_ring_spec_resolve(&s, &o, &n, &err), 0, "%s", err.msg);
    cr_assert_eq(o.scheme, RS_SCHEME_KETAMA);
    cr_assert_eq(o.vnodes, 40);
    cr_assert_eq(o.seed, 16);
    cr_assert_eq(n.count, 8);
    uint32_t ndown = 0;
    for (uint32_t i = 0; i < n.count; i++)
        ndown += n.down[i] != 0;
    cr_assert_eq(ndown, 3, "the two --down lists add up: 1, 2 and 5");
    cr_assert(n.down[1] && n.down[2] && n.down[5] && !n.down[0]);
    rs_nodes_free(&n);
}

Test(spec, refuses_what_the_options_refuse)
{
    struct {
        rs_ring_spec s;
        int code;
        const char *says;
    } bad[] = {
        {{.scheme = "rings"}, RS_EXIT_USAGE, "--scheme: unknown scheme 'rings'"},
        {{.compat = "twemproxy", .vnodes = "10"}, RS_EXIT_USAGE, "--compat twemproxy sets the scheme"},
        {{.hash = "md6"}, RS_EXIT_USAGE, "--hash: unknown hash 'md6'"},
        {{.nodes = "0"}, RS_EXIT_USAGE, "--nodes"},
        {{.nodes = "10000001"}, RS_EXIT_USAGE, "--nodes"},
        {{.vnodes = "100000001"}, RS_EXIT_USAGE, "--vnodes"},
        {{.nodes = "3", .nodes_file = "x"}, RS_EXIT_USAGE, "--nodes and --nodes-file exclude each other"},
        {{.sign = "maybe"}, RS_EXIT_USAGE, "--sign: expected clear or keep, not 'maybe'"},
        {{.order = "random"}, RS_EXIT_USAGE, "--order: expected signed or unsigned"},
        {{.label = "{node}-{i}-0123456789012345678901234567890123456789012345678901234567890"}, RS_EXIT_USAGE,
         "--label: template longer than 63 bytes"},
        {{.nodes = "4", .down = (const char *[]){"9"}, .ndown = 1}, RS_EXIT_USAGE, "9"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        rs_ring_opts o;
        rs_nodes n;
        rs_error err = {0};
        cr_assert_eq(rs_ring_spec_resolve(&bad[i].s, &o, &n, &err), -1, "case %zu resolved", i);
        cr_assert_eq(err.code, bad[i].code, "case %zu: code %d: %s", i, err.code, err.msg);
        cr_assert(strstr(err.msg, bad[i].says), "case %zu: '%s' does not say '%s'", i, err.msg, bad[i].says);
    }
}
