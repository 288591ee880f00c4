/* The exact ring diff (see ringshard/plan.h for what it computes).
 *
 * Arc schemes. Let U be the union of both rings' point positions. Between
 * two consecutive positions of U no point of either ring lies, so on the
 * elementary interval (u[k-1], u[k]] the old owner is the node of the first
 * old point >= u[k] and the new owner likewise (each wrapping to its first
 * point), and past the last position of U both rings wrap. One merge of the
 * two sorted point arrays visits every elementary interval once: O(P + Q).
 * Intervals whose owners differ by NAME are moves; adjacent moves of the
 * same (from, to) are coalesced into one arc. Weights come from
 * rs_ring_weight, which is the same function for both rings once the
 * position options agree (slots: the number of hash codes per position).
 *
 * modulo: exact by residues (CRT), jump: the expectation; see plan.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ringshard/plan.h"

const char *rs_plan_method_name(rs_plan_method m)
{
    switch (m) {
    case RS_PLAN_EXACT_ARCS: return "exact-arcs";
    case RS_PLAN_EXACT_RESIDUES: return "exact-residues";
    default: return "expected";
    }
}

/* ---- name matching ---------------------------------------------------- */

static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h ^ (h >> 29);
}

int rs_plan_match_names(const rs_nodes *a, const rs_nodes *b, uint32_t *a_to_b, uint32_t *b_to_a)
{
    uint64_t cap = 16;
    while (cap < 2 * (uint64_t)b->count)
        cap <<= 1;
    uint32_t *slot = malloc(cap * sizeof *slot);
    if (!slot)
        return -1;
    for (uint64_t k = 0; k < cap; k++)
        slot[k] = RS_PLAN_NONE;
    for (uint32_t j = 0; j < b->count; j++) {
        uint64_t h = name_hash(b->names[j]) & (cap - 1);
        while (slot[h] != RS_PLAN_NONE)
            h = (h + 1) & (cap - 1);
        slot[h] = j;
        if (b_to_a)
            b_to_a[j] = RS_PLAN_NONE;
    }
    for (uint32_t i = 0; i < a->count; i++) {
        uint64_t h = name_hash(a->names[i]) & (cap - 1);
        a_to_b[i] = RS_PLAN_NONE;
        for (; slot[h] != RS_PLAN_NONE; h = (h + 1) & (cap - 1))
            if (strcmp(b->names[slot[h]], a->names[i]) == 0) {
                a_to_b[i] = slot[h];
                if (b_to_a)
                    b_to_a[slot[h]] = i;
                break;
            }
    }
    free(slot);
    return 0;
}

/* ---- the (from, to) -> pair table ------------------------------------- */

static uint64_t pair_key(uint32_t from, uint32_t to) { return (uint64_t)from << 32 | to; }

static uint64_t pair_slot(uint64_t key, uint64_t mask)
{
    key *= 0x9E3779B97F4A7C15ULL;
    return (key ^ (key >> 31)) & mask;
}

static int table_init(rs_plan *p, size_t n)
{
    uint64_t cap = 16;
    while (cap < 2 * (uint64_t)n + 2)
        cap <<= 1;
    free(p->table_keys);
    free(p->table_vals);
    p->table_keys = malloc(cap * sizeof *p->table_keys);
    p->table_vals = malloc(cap * sizeof *p->table_vals);
    if (!p->table_keys || !p->table_vals)
        return -1;
    memset(p->table_keys, 0xff, cap * sizeof *p->table_keys);
    p->table_mask = cap - 1;
    return 0;
}

/* The slot holding key, or the empty slot where it would go. */
static uint64_t table_find(const rs_plan *p, uint64_t key)
{
    uint64_t h = pair_slot(key, p->table_mask);
    while (p->table_keys[h] != UINT64_MAX && p->table_keys[h] != key)
        h = (h + 1) & p->table_mask;
    return h;
}

/* Inserts (from, to) -> val unless present; returns the stored value. */
static uint32_t table_put(rs_plan *p, uint32_t from, uint32_t to, uint32_t val)
{
    uint64_t key = pair_key(from, to), h = table_find(p, key);
    if (p->table_keys[h] == key)
        return p->table_vals[h];
    p->table_keys[h] = key;
    p->table_vals[h] = val;
    return val;
}

uint32_t rs_plan_pair_find(const rs_plan *p, uint32_t from, uint32_t to)
{
    if (!p->table_keys)
        return RS_PLAN_NONE;
    uint64_t key = pair_key(from, to), h = table_find(p, key);
    return p->table_keys[h] == key ? p->table_vals[h] : RS_PLAN_NONE;
}

static int cmp_pair(const void *a, const void *b)
{
    const rs_plan_pair *x = a, *y = b;
    if (x->from != y->from)
        return x->from < y->from ? -1 : 1;
    return (x->to > y->to) - (x->to < y->to);
}

/* Sorts the pairs by (from, to) and rebuilds the table (and arcs' indexes). */
static int pairs_finish(rs_plan *p)
{
    if (p->npairs)  /* pairs may be NULL when nothing moves */
        qsort(p->pairs, p->npairs, sizeof *p->pairs, cmp_pair);
    if (table_init(p, p->npairs) != 0)
        return -1;
    for (size_t k = 0; k < p->npairs; k++)
        table_put(p, p->pairs[k].from, p->pairs[k].to, (uint32_t)k);
    for (size_t k = 0; k < p->narcs; k++)
        p->arcs[k].pair = rs_plan_pair_find(p, p->arcs[k].from, p->arcs[k].to);
    return 0;
}

static int pairs_push(rs_plan *p, size_t *cap, uint32_t from, uint32_t to, rs_u128 weight, double share,
                      uint64_t arcs)
{
    if (p->npairs == *cap) {
        size_t nc = *cap ? 2 * *cap : 256;
        rs_plan_pair *np = realloc(p->pairs, nc * sizeof *np);
        if (!np)
            return -1;
        p->pairs = np;
        *cap = nc;
    }
    p->pairs[p->npairs++] = (rs_plan_pair){from, to, weight, share, arcs, 0};
    return 0;
}

/* ---- arc schemes -------------------------------------------------------- */

static int diff_arcs(rs_plan *p)
{
    const rs_ring *A = p->old_ring, *B = p->new_ring;
    uint32_t np = rs_ring_npoints(A), nq = rs_ring_npoints(B);
    uint64_t last_pos = (uint64_t)(rs_ring_space(A) - 1);
    size_t cap = (size_t)np + nq + 2;
    p->arcs = malloc(cap * sizeof *p->arcs);
    if (!p->arcs)
        return -1;
    uint32_t i = 0, j = 0, wrap_from = rs_ring_point_node(A, 0), wrap_to = rs_ring_point_node(B, 0);
    uint64_t s = 0;
    int tail = 1;   /* positions remain after the last point */
    size_t n = 0;
#define EMIT(S, E, O, W)                                                                         \
    do {                                                                                         \
        if (p->old_to_new[O] != (W)) {                                                           \
            if (n && p->arcs[n - 1].last + 1 == (S) && p->arcs[n - 1].from == (O) &&             \
                p->arcs[n - 1].to == (W))                                                        \
                p->arcs[n - 1].last = (E);                                                       \
            else                                                                                 \
                p->arcs[n++] = (rs_plan_arc){(S), (E), (O), (W), 0, 0};                          \
        }                                                                                        \
    } while (0)
    while (i < np || j < nq) {
        uint64_t pa = i < np ? rs_ring_point_pos(A, i) : UINT64_MAX;
        uint64_t pb = j < nq ? rs_ring_point_pos(B, j) : UINT64_MAX;
        uint64_t e = pa < pb ? pa : pb;
        uint32_t o = i < np ? rs_ring_point_node(A, i) : wrap_from;
        uint32_t w = j < nq ? rs_ring_point_node(B, j) : wrap_to;
        i += pa == e;
        j += pb == e;
        EMIT(s, e, o, w);
        if (e == last_pos) {
            tail = 0;
            break;
        }
        s = e + 1;
    }
    if (tail)
        EMIT(s, last_pos, wrap_from, wrap_to);
#undef EMIT
    p->narcs = n;
    /* Weights, pairs. */
    if (table_init(p, 1024) != 0)
        return -1;
    size_t pcap = 0;
    for (size_t k = 0; k < n; k++) {
        rs_plan_arc *a = &p->arcs[k];
        a->weight = rs_ring_weight(A, a->start, a->last);
        p->moved += a->weight;
        if (p->npairs * 2 + 2 > p->table_mask) {
            /* grow: rebuild the table from the pairs so far; room for mask
             * pairs is twice the capacity */
            if (table_init(p, (size_t)p->table_mask) != 0)
                return -1;
            for (size_t q = 0; q < p->npairs; q++)
                table_put(p, p->pairs[q].from, p->pairs[q].to, (uint32_t)q);
        }
        uint32_t idx = table_put(p, a->from, a->to, (uint32_t)p->npairs);
        if (idx == p->npairs && pairs_push(p, &pcap, a->from, a->to, 0, 0, 0) != 0)
            return -1;
        p->pairs[idx].weight += a->weight;
        p->pairs[idx].arcs++;
    }
    p->pairs_complete = 1;
    return pairs_finish(p);
}

/* ---- modulo: residues ---------------------------------------------------- */

__extension__ typedef __int128 s128;

static uint64_t gcd_u64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Inverse of a modulo m (gcd(a, m) = 1, m >= 1). */
static uint64_t inverse_mod(uint64_t a, uint64_t m)
{
    if (m == 1)
        return 0;
    s128 t = 0, nt = 1, r = (s128)m, nr = (s128)(a % m);
    while (nr) {
        s128 q = r / nr, tmp;
        tmp = t - q * nt; t = nt; nt = tmp;
        tmp = r - q * nr; r = nr; nr = tmp;
    }
    if (t < 0)
        t += (s128)m;
    return (uint64_t)t;
}

static s128 floor_mod(s128 a, s128 m)
{
    s128 r = a % m;
    return r < 0 ? r + m : r;
}

typedef struct {
    uint64_t N, M, g, L, inv;  /* L = lcm; inv = (N/g)^-1 mod (M/g) */
    s128 lo;                    /* the domain's first value */
    rs_u128 len;                /* the domain's length */
} residues;

/* Values v of the domain with v = a (mod N) and v = b (mod M). */
static rs_u128 residue_count(const residues *R, uint64_t a, uint64_t b)
{
    if ((a % R->g) != (b % R->g))
        return 0;
    uint64_t Mg = R->M / R->g;
    /* c = a + N * t, t = ((b - a) / g) * inv (mod M/g) */
    s128 diff = ((s128)b - (s128)a) / (s128)R->g;
    s128 t = floor_mod(floor_mod(diff, (s128)Mg) * (s128)R->inv, (s128)Mg);
    s128 c = (s128)a + (s128)R->N * t;   /* in [0, L) */
    s128 first = R->lo + floor_mod(c - R->lo, (s128)R->L);
    s128 end = R->lo + (s128)R->len;     /* exclusive */
    if (first >= end)
        return 0;
    return (rs_u128)((end - 1 - first) / (s128)R->L) + 1;
}

/* Modulo and jump place keys on buckets, the up nodes in list order. */
typedef struct {
    uint32_t N, M;        /* up nodes of the old and the new ring */
    uint32_t *la, *lb;    /* bucket -> node index, old and new */
    uint32_t *bucket_b;   /* new node index -> its bucket, or RS_PLAN_NONE (down) */
} buckets;

static uint32_t *live_list(const rs_nodes *nodes, uint32_t *count)
{
    uint32_t *l = malloc((nodes->count ? nodes->count : 1) * sizeof *l), n = 0;
    if (!l)
        return NULL;
    for (uint32_t k = 0; k < nodes->count; k++)
        if (!nodes->down[k])
            l[n++] = k;
    *count = n;
    return l;
}

static void buckets_free(buckets *B)
{
    free(B->la);
    free(B->lb);
    free(B->bucket_b);
}

static int buckets_init(buckets *B, const rs_plan *p)
{
    const rs_nodes *a = rs_ring_nodes(p->old_ring), *b = rs_ring_nodes(p->new_ring);
    B->N = B->M = 0;
    B->la = live_list(a, &B->N);
    B->lb = live_list(b, &B->M);
    B->bucket_b = malloc((b->count ? b->count : 1) * sizeof *B->bucket_b);
    if (!B->la || !B->lb || !B->bucket_b) {
        buckets_free(B);
        return -1;
    }
    for (uint32_t k = 0; k < b->count; k++)
        B->bucket_b[k] = RS_PLAN_NONE;
    for (uint32_t k = 0; k < B->M; k++)
        B->bucket_b[B->lb[k]] = k;
    return 0;
}

/* Runs diff (modulo's or jump's: 0, or -1 when out of memory) on the
 * rings' buckets, then indexes the pairs it listed. */
static int diff_buckets(rs_plan *p, int (*diff)(rs_plan *, const buckets *))
{
    buckets B;
    if (buckets_init(&B, p) != 0)
        return -1;
    int rc = diff(p, &B);
    buckets_free(&B);
    return rc != 0 ? -1 : pairs_finish(p);
}

static int diff_modulo(rs_plan *p, const buckets *B)
{
    uint32_t N = B->N, M = B->M, *la = B->la, *lb = B->lb, *bucket_b = B->bucket_b;
    const rs_hash_info *h = rs_hash_get(rs_ring_get_opts(p->old_ring)->hash);
    residues R;
    R.N = N;
    R.M = M;
    R.g = gcd_u64(N, M);
    R.L = N / R.g * M;
    R.inv = inverse_mod((N / R.g) % (M / R.g ? M / R.g : 1), M / R.g);
    R.len = rs_ring_space(p->old_ring);
    /* Positions are the value's bits; with the sign kept (or a 64-bit value)
     * a full-width space holds the negative values too (floorMod). */
    int negative = R.len == ((rs_u128)1 << h->bits) && (h->is_signed || h->bits == 64);
    R.lo = negative ? -((s128)1 << (h->bits - 1)) : 0;

    rs_u128 stays = 0;
    for (uint32_t x = 0; x < N; x++) {
        uint32_t nb = p->old_to_new[la[x]];
        if (nb != RS_PLAN_NONE && bucket_b[nb] != RS_PLAN_NONE)
            stays += residue_count(&R, x, bucket_b[nb]);
    }
    p->moved = p->total - stays;
    uint64_t npairs = (uint64_t)N * (M / R.g);
    if (npairs <= RS_PLAN_MAX_PAIRS) {
        size_t cap = 0;
        for (uint32_t x = 0; x < N; x++)
            for (uint64_t y = x % R.g; y < M; y += R.g) {
                if (p->old_to_new[la[x]] == lb[y])
                    continue;
                rs_u128 c = residue_count(&R, x, y);
                if (c && pairs_push(p, &cap, la[x], lb[y], c, 0, 0) != 0)
                    return -1;
            }
        p->pairs_complete = 1;
    }
    return 0;
}

/* ---- jump: expectation ---------------------------------------------------- */

static int diff_jump(rs_plan *p, const buckets *B)
{
    uint32_t N = B->N, M = B->M, *la = B->la, *lb = B->lb, *bucket_b = B->bucket_b;
    uint32_t lo = N < M ? N : M, hi = N < M ? M : N;
    rs_u128 NM = (rs_u128)N * M;
    /* P(old bucket x, new bucket y) = [x == y < lo] / hi
     *   + [x < N <= y] / (N M) when growing, [y < M <= x] / (N M) when shrinking.
     * The off-diagonal region holds one same-name cell per old node at most. */
    uint64_t diag = 0, same = 0;
    for (uint32_t x = 0; x < lo; x++)
        diag += p->old_to_new[la[x]] != lb[x];
    for (uint32_t x = 0; x < N; x++) {
        uint32_t nb = p->old_to_new[la[x]];
        uint32_t y = nb == RS_PLAN_NONE ? RS_PLAN_NONE : bucket_b[nb];
        if (y != RS_PLAN_NONE && (M >= N ? y >= N : x >= M))
            same++;
    }
    uint64_t region = (uint64_t)(hi - lo) * lo;
    uint64_t off = region - same;
    rs_u128 numer = (rs_u128)diag * lo + off;
    p->moved = p->total / NM * numer + (p->total % NM) * numer / NM;
    p->moved_share = (double)numer / (double)NM;
    if (diag + off <= RS_PLAN_MAX_PAIRS) {
        size_t cap = 0;
        int fail = 0;
        for (uint32_t x = 0; x < lo && !fail; x++)
            if (p->old_to_new[la[x]] != lb[x])
                fail = pairs_push(p, &cap, la[x], lb[x], p->total / hi, 1.0 / hi, 0);
        uint32_t x0 = M >= N ? 0 : M, y0 = M >= N ? N : 0;
        for (uint32_t x = x0; x < N && !fail; x++)
            for (uint32_t y = y0; y < M && !fail; y++)
                if (p->old_to_new[la[x]] != lb[y])
                    fail = pairs_push(p, &cap, la[x], lb[y], p->total / NM, 1.0 / (double)NM, 0);
        if (fail)
            return -1;
        p->pairs_complete = 1;
    }
    return 0;
}

/* ---- the change, consistency, balance ---------------------------------- */

double rs_plan_ideal_share(const rs_nodes *a, const rs_nodes *b)
{
    uint32_t *a_to_b = malloc((a->count ? a->count : 1) * sizeof *a_to_b);
    if (!a_to_b || rs_plan_match_names(a, b, a_to_b, NULL) != 0) {
        free(a_to_b);
        return NAN;
    }
    double wa = 0, wb = 0, sum = 0;
    for (uint32_t i = 0; i < a->count; i++)
        wa += a->down[i] ? 0 : a->weights[i];
    for (uint32_t j = 0; j < b->count; j++)
        wb += b->down[j] ? 0 : b->weights[j];
    for (uint32_t i = 0; i < a->count; i++) {
        if (a->down[i])
            continue;
        double so = a->weights[i] / wa, sn = 0;
        uint32_t j = a_to_b[i];
        if (j != RS_PLAN_NONE && !b->down[j])
            sn = b->weights[j] / wb;
        if (so > sn)
            sum += so - sn;
    }
    free(a_to_b);
    return sum;
}

static double balance(const rs_ring *r, int *ok)
{
    const rs_nodes *n = rs_ring_nodes(r);
    rs_u128 *owned = malloc((n->count ? n->count : 1) * sizeof *owned);
    if (!owned || rs_ring_shares(r, owned) != 0) {
        free(owned);
        *ok = 0;
        return NAN;
    }
    rs_u128 max = 0;
    uint32_t up = 0;
    for (uint32_t i = 0; i < n->count; i++) {
        if (n->down[i])
            continue;
        up++;
        if (owned[i] > max)
            max = owned[i];
    }
    free(owned);
    return (double)max * up / (double)rs_ring_total_weight(r);
}

static int floor_weight(rs_plan *p)
{
    const rs_nodes *a = rs_ring_nodes(p->old_ring), *b = rs_ring_nodes(p->new_ring);
    rs_u128 *oa = malloc((a->count ? a->count : 1) * sizeof *oa), *ob = malloc((b->count ? b->count : 1) * sizeof *ob);
    if (!oa || !ob || rs_ring_shares(p->old_ring, oa) != 0 || rs_ring_shares(p->new_ring, ob) != 0) {
        free(oa);
        free(ob);
        return -1;
    }
    p->floor = 0;
    for (uint32_t i = 0; i < a->count; i++) {
        uint32_t j = p->old_to_new[i];
        rs_u128 after = j == RS_PLAN_NONE ? 0 : ob[j];
        if (oa[i] > after)
            p->floor += oa[i] - after;
    }
    p->floor_share = (double)p->floor / (double)p->total;
    free(oa);
    free(ob);
    return 0;
}

static int classify(rs_plan *p)
{
    const rs_nodes *a = rs_ring_nodes(p->old_ring), *b = rs_ring_nodes(p->new_ring);
    p->added = malloc((b->count ? b->count : 1) * sizeof *p->added);
    p->removed = malloc((a->count ? a->count : 1) * sizeof *p->removed);
    p->reweighted = malloc((a->count ? a->count : 1) * sizeof *p->reweighted);
    if (!p->added || !p->removed || !p->reweighted)
        return -1;
    for (uint32_t i = 0; i < a->count; i++) {
        if (a->down[i])
            continue;
        uint32_t j = p->old_to_new[i];
        if (j == RS_PLAN_NONE || b->down[j])
            p->removed[p->nremoved++] = i;
        else if (a->weights[i] != b->weights[j])
            p->reweighted[p->nreweighted++] = i;
    }
    for (uint32_t j = 0; j < b->count; j++) {
        if (b->down[j])
            continue;
        uint32_t i = p->new_to_old[j];
        if (i == RS_PLAN_NONE || a->down[i])
            p->added[p->nadded++] = j;
    }
    if (!p->nadded && !p->nremoved && !p->nreweighted)
        p->check = RS_PLAN_CHECK_NONE;
    else if (!p->nremoved && !p->nreweighted)
        p->check = RS_PLAN_CHECK_ADD;
    else if (!p->nadded && !p->nreweighted)
        p->check = RS_PLAN_CHECK_REMOVE;
    else
        p->check = RS_PLAN_CHECK_MIXED;
    return 0;
}

static int check_pairs(rs_plan *p)
{
    const rs_nodes *a = rs_ring_nodes(p->old_ring), *b = rs_ring_nodes(p->new_ring);
    uint8_t *ch_old = calloc(a->count ? a->count : 1, 1), *ch_new = calloc(b->count ? b->count : 1, 1);
    if (!ch_old || !ch_new) {
        free(ch_old);
        free(ch_new);
        return -1;
    }
    /* bit 1: added/removed, bit 2: reweighted */
    for (uint32_t k = 0; k < p->nremoved; k++)
        ch_old[p->removed[k]] |= 1;
    for (uint32_t k = 0; k < p->nadded; k++)
        ch_new[p->added[k]] |= 1;
    for (uint32_t k = 0; k < p->nreweighted; k++) {
        ch_old[p->reweighted[k]] |= 2;
        ch_new[p->old_to_new[p->reweighted[k]]] |= 2;
    }
    for (size_t k = 0; k < p->npairs; k++) {
        rs_plan_pair *q = &p->pairs[k];
        int ok;
        switch (p->check) {
        case RS_PLAN_CHECK_ADD: ok = ch_new[q->to] & 1; break;
        case RS_PLAN_CHECK_REMOVE: ok = ch_old[q->from] & 1; break;
        default: ok = ch_old[q->from] || ch_new[q->to]; break;
        }
        if (!ok) {
            q->violation = 1;
            p->nviolations++;
            p->violation_weight += q->weight;
        }
    }
    free(ch_old);
    free(ch_new);
    return 0;
}

static int comparable(const rs_ring *A, const rs_ring *B, rs_error *err)
{
    const rs_ring_opts *a = rs_ring_get_opts(A), *b = rs_ring_get_opts(B);
    const char *what = NULL;
    if (a->scheme != b->scheme)
        what = "scheme";
    else if (a->hash != b->hash)
        what = "hash";
    else if (a->seed != b->seed)
        what = "seed";
    else if (a->clear_sign != b->clear_sign)
        what = "sign";
    else if (a->order != b->order)
        what = "order";
    else if (a->scheme == RS_SCHEME_SLOTS && a->vnodes != b->vnodes)
        what = "slots";
    else if (rs_ring_space(A) != rs_ring_space(B))
        what = "position space";
    if (what)
        return rs_error_set(err, RS_EXIT_USAGE,
                            "the old and new rings differ in their %s: their positions are not comparable", what);
    return 0;
}

int rs_plan_diff(const rs_ring *A, const rs_ring *B, rs_plan *p, rs_error *err)
{
    memset(p, 0, sizeof *p);
    if (comparable(A, B, err) != 0)
        return -1;
    p->old_ring = A;
    p->new_ring = B;
    p->total = rs_ring_total_weight(A);
    const rs_nodes *a = rs_ring_nodes(A), *b = rs_ring_nodes(B);
    p->old_to_new = malloc((a->count ? a->count : 1) * sizeof *p->old_to_new);
    p->new_to_old = malloc((b->count ? b->count : 1) * sizeof *p->new_to_old);
    if (!p->old_to_new || !p->new_to_old || rs_plan_match_names(a, b, p->old_to_new, p->new_to_old) != 0)
        goto oom;
    if (classify(p) != 0)
        goto oom;
    int rc;
    if (rs_ring_has_points(A)) {
        p->method = RS_PLAN_EXACT_ARCS;
        rc = diff_arcs(p);
    } else if (rs_ring_get_opts(A)->scheme == RS_SCHEME_MODULO) {
        p->method = RS_PLAN_EXACT_RESIDUES;
        rc = diff_buckets(p, diff_modulo);
    } else {
        p->method = RS_PLAN_EXPECTED;
        rc = diff_buckets(p, diff_jump);
    }
    if (rc != 0 || check_pairs(p) != 0)
        goto oom;
    if (p->method != RS_PLAN_EXPECTED) {
        p->moved_share = (double)p->moved / (double)p->total;
        for (size_t k = 0; k < p->npairs; k++)
            p->pairs[k].share = (double)p->pairs[k].weight / (double)p->total;
    }
    if (!p->pairs_complete)
        p->violation_weight = 0;
    p->ideal_share = rs_plan_ideal_share(a, b);
    int ok = 1;
    p->balance_old = balance(A, &ok);
    p->balance_new = balance(B, &ok);
    if (!ok || floor_weight(p) != 0)
        goto oom;
    p->shares_exact = rs_ring_shares_exact(A);
    return 0;
oom:
    rs_plan_free(p);
    return rs_error_set(err, RS_EXIT_IO, "out of memory for the plan");
}

void rs_plan_free(rs_plan *p)
{
    if (!p)
        return;
    free(p->arcs);
    free(p->pairs);
    free(p->old_to_new);
    free(p->new_to_old);
    free(p->added);
    free(p->removed);
    free(p->reweighted);
    free(p->table_keys);
    free(p->table_vals);
    memset(p, 0, sizeof *p);
}

uint32_t rs_plan_key_pair(const rs_plan *p, const void *key, size_t len, uint32_t *old_owner,
                          uint32_t *new_owner)
{
    uint64_t pos = rs_ring_position(p->old_ring, key, len);
    uint32_t o = rs_ring_owner(p->old_ring, pos), n = rs_ring_owner(p->new_ring, pos);
    if (old_owner)
        *old_owner = o;
    if (new_owner)
        *new_owner = n;
    if (p->old_to_new[o] == n)
        return RS_PLAN_STAY;
    uint32_t k = rs_plan_pair_find(p, o, n);
    return k == RS_PLAN_NONE ? RS_PLAN_UNKNOWN : k;
}

int64_t rs_plan_arc_at(const rs_plan *p, uint64_t pos)
{
    size_t lo = 0, hi = p->narcs;
    while (lo < hi) {   /* first arc with start > pos */
        size_t mid = lo + (hi - lo) / 2;
        if (p->arcs[mid].start <= pos)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || p->arcs[lo - 1].last < pos)
        return -1;
    return (int64_t)(lo - 1);
}

/* ---- waves ------------------------------------------------------------------ */

static const uint64_t *wave_bytes;
static int wave_desc;

static int cmp_wave(const void *x, const void *y)
{
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    if (wave_bytes[a] != wave_bytes[b])
        return (wave_bytes[a] < wave_bytes[b]) != wave_desc ? -1 : 1;
    return (a > b) - (a < b);
}

uint32_t rs_plan_waves(const uint64_t *bytes, size_t n, uint64_t cap, int largest_first, uint32_t *wave)
{
    size_t *idx = malloc((n ? n : 1) * sizeof *idx), m = 0;
    if (!idx)
        return 0;
    for (size_t k = 0; k < n; k++) {
        wave[k] = 0;
        if (bytes[k])
            idx[m++] = k;
    }
    wave_bytes = bytes;
    wave_desc = largest_first != 0;
    qsort(idx, m, sizeof *idx, cmp_wave);
    uint32_t w = 0;
    uint64_t fill = 0;
    for (size_t k = 0; k < m; k++) {
        uint64_t b = bytes[idx[k]];
        if (w == 0 || fill + b > cap || fill + b < fill) {
            w++;
            fill = 0;
        }
        fill += b;
        wave[idx[k]] = w;
    }
    free(idx);
    return w;
}
