/* hash mod N (the FNV1_32 ring's baseline, `hash % N`): owner = floorMod(value, N) over the
 * nodes that are up. Position = the value's w-bit pattern (sign bit cleared
 * when the ring clears it). */
#include <stdlib.h>
#include "ring/ring_impl.h"

static int live_check(rs_ring *r, rs_error *err)
{
    for (uint32_t j = 0; j < r->nodes.count; j++)
        if (r->nodes.weights[j] != 1.0)
            return rs_error_set(err, RS_EXIT_USAGE, "%s does not support node weights",
                                rs_scheme_name(r->opts.scheme));
    r->live_map = malloc(r->live * sizeof *r->live_map);
    if (!r->live_map)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    uint32_t k = 0;
    for (uint32_t j = 0; j < r->nodes.count; j++)
        if (!r->nodes.down[j])
            r->live_map[k++] = j;
    /* Positions are the value's own bits here, not a comparison ordinal. */
    r->xor_mask = 0;
    return 0;
}

/* The signed Java value back from a position. */
static int64_t pos_value(const rs_ring *r, uint64_t pos)
{
    unsigned w = r->hash_bits;
    if (!r->hash_signed || r->opts.clear_sign || w == 64)
        return (int64_t)pos;
    uint64_t sign = (uint64_t)1 << (w - 1);
    return (int64_t)((pos ^ sign) - sign);  /* sign-extend from w bits */
}

static uint64_t modulo_position(const rs_ring *r, const void *key, size_t len)
{
    return rs_value_pos(r, r->hash(key, len, r->opts.seed));
}

static uint32_t modulo_owner(const rs_ring *r, uint64_t pos)
{
    int64_t n = r->live, v = pos_value(r, pos), m = v % n;
    return r->live_map[m < 0 ? m + n : m];
}

/* Exact: how many values of the hash's domain fall on each residue. */
static int modulo_shares(const rs_ring *r, rs_u128 *owned)
{
    uint64_t n = r->live;
    rs_u128 L = r->space;
    /* the domain's first value: 0, or -2^(w-1) for a signed hash with its sign */
    int neg = r->hash_signed && !r->opts.clear_sign;
    rs_u128 half = (rs_u128)1 << (r->hash_bits - 1);
    uint64_t r0 = neg ? (uint64_t)((n - (uint64_t)(half % n)) % n) : 0;
    rs_u128 base = L / n;
    uint64_t extra = (uint64_t)(L % n);
    for (uint64_t k = 0; k < n; k++)
        owned[r->live_map[k]] = base + (((k + n - r0) % n) < extra ? 1 : 0);
    return 0;
}

const rs_scheme_ops rs_scheme_modulo = {
    .check = live_check,
    .position = modulo_position,
    .owner = modulo_owner,
    .shares = modulo_shares,
    .shares_exact = 1,
};

/* Shared with scheme_jump.c: both map live buckets to node indices. */
int rs_scheme_live_check(rs_ring *r, rs_error *err);
int rs_scheme_live_check(rs_ring *r, rs_error *err) { return live_check(r, err); }
