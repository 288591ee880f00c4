/* Fixed slots (the Java hashCode slots scheme): S slots (1024 by default) dealt round-robin, slot
 * s to node s % N in node-list order. A key's slot value is its hash code
 * % S with Java's remainder, so it lies in (-S, S); its owner is the first
 * remaining slot >= that value. Negative values therefore go to the first
 * slot (as the Java code's ceilingEntry does: over half of all keys land on
 * node 0's slot 0), and when no slot is at or above the value (after a
 * node is dropped) ringshard wraps to the first slot where the Java code throws
 * a NullPointerException.
 *
 * Positions are slot values shifted by S-1 into [0, 2S-1). Dropping a node
 * = marking it down: its slots go, everyone else keeps theirs. A position's
 * weight is how many hash codes map to it, so shares are of the 2^w codes. */
#include <stdio.h>
#include <stdlib.h>
#include "ring/ring_impl.h"

#define SLOTS_MAX (1u << 24)

static rs_u128 value_weight(const rs_ring *r, int64_t v)
{
    uint64_t S = r->opts.vnodes;
    if (!r->hash_signed) {  /* codes in [0, 2^w) */
        if (v < 0)
            return 0;
        rs_u128 top = ((rs_u128)1 << r->hash_bits) - 1;
        return (top - (rs_u128)v) / S + 1;
    }
    rs_u128 H = (rs_u128)1 << (r->hash_bits - 1);
    if (v > 0)
        return (H - 1 - (rs_u128)v) / S + 1;
    if (v < 0)
        return (H - (rs_u128)(-v)) / S + 1;
    return (H - 1) / S + 1 + H / S;
}

static int slots_check(rs_ring *r, rs_error *err)
{
    uint32_t S = r->opts.vnodes;
    if (S == 0 || S > SLOTS_MAX)
        return rs_error_set(err, RS_EXIT_USAGE, "--slots must be between 1 and %u", SLOTS_MAX);
    if (r->opts.clear_sign)
        return rs_error_set(err, RS_EXIT_USAGE, "slots uses the hash code's sign (Java remainder): --sign keep");
    for (uint32_t j = 0; j < r->nodes.count; j++)
        if (r->nodes.weights[j] != 1.0)
            return rs_error_set(err, RS_EXIT_USAGE, "slots are dealt round-robin: node weights are not supported");
    r->space = 2 * (rs_u128)S - 1;
    r->prefix = malloc((2 * (size_t)S) * sizeof *r->prefix);
    if (!r->prefix)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    r->prefix[0] = 0;
    for (uint32_t k = 0; k + 1 < 2 * S; k++)
        r->prefix[k + 1] = r->prefix[k] + value_weight(r, (int64_t)k - (int64_t)(S - 1));
    return 0;
}

static size_t slots_count(const rs_ring *r) { return r->opts.vnodes; }

static int slots_points(rs_ring *r, rs_raw_point **out, size_t *n, rs_error *err)
{
    uint32_t S = r->opts.vnodes, N = r->nodes.count;
    rs_raw_point *p = malloc(S * sizeof *p);
    if (!p)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    size_t k = 0;
    for (uint32_t s = 0; s < S; s++) {
        uint32_t node = s % N;
        if (r->nodes.down[node])
            continue;
        p[k] = (rs_raw_point){(uint64_t)s + (S - 1), k, node, s};
        k++;
    }
    *out = p;
    *n = k;
    return 0;
}

static uint64_t slots_position(const rs_ring *r, const void *key, size_t len)
{
    int64_t S = r->opts.vnodes;
    int64_t v = r->hash(key, len, r->opts.seed);
    return (uint64_t)(v % S + (S - 1));  /* C's % truncates, as Java's */
}

static rs_u128 slots_weight(const rs_ring *r, uint64_t lo, uint64_t hi)
{
    return r->prefix[hi + 1] - r->prefix[lo];
}

static size_t slots_label_text(const rs_ring *r, uint32_t i, char *buf, size_t cap)
{
    return (size_t)snprintf(buf, cap, "slot%u", r->label[i]);
}

const rs_scheme_ops rs_scheme_slots = {
    .check = slots_check,
    .count = slots_count,
    .points = slots_points,
    .position = slots_position,
    .weight = slots_weight,
    .shares_exact = 1,
    .label_text = slots_label_text,
};
