/* Jump consistent hash (Lamping and Veach 2014) exactly as Guava's
 * Hashing.consistentHash(long, int), including its linear congruential
 * generator and its double arithmetic, so that the golden values agree.
 * The input is the hash's value as Guava's padToLong gives it: a 64-bit
 * hash's long, a 32-bit hash's int zero-extended (UnsignedInts.toLong). */
#include "ring/ring_impl.h"

int rs_scheme_live_check(rs_ring *r, rs_error *err);


int32_t rs_jump_consistent_hash(uint64_t input, int32_t buckets)
{
    uint64_t state = input;
    int32_t candidate = 0;
    for (;;) {
        state = 2862933555777941757ULL * state + 1;
        uint32_t top = (uint32_t)(state >> 33);  /* [0, 2^31) */
        /* Guava computes (int) top + 1 in int, which wraps to MIN_VALUE
         * for top = 2^31 - 1: nextDouble is -1.0, next is negative and
         * Guava returns the current candidate. Adding in int32_t here
         * would be undefined behaviour, so that case is taken first. */
        if (top == INT32_MAX)
            return candidate;
        double d = (double)(top + 1) / 0x1.0p31;  /* (0, 1] */
        double next = (double)(candidate + 1) / d;
        /* Java's (int) saturates at MAX_VALUE >= buckets, and a quotient
         * >= buckets truncates to >= buckets: both end the walk; anything
         * below converts exactly as Java's cast does. */
        if (next >= buckets)
            return candidate;
        candidate = (int32_t)next;
    }
}

static uint64_t jump_position(const rs_ring *r, const void *key, size_t len)
{
    return rs_value_pos(r, r->hash(key, len, r->opts.seed));
}

static uint32_t jump_owner(const rs_ring *r, uint64_t pos)
{
    return r->live_map[rs_jump_consistent_hash(pos, (int32_t)r->live)];
}

/* Jump's shares have no closed form; report the expected space / N. */
static int jump_shares(const rs_ring *r, rs_u128 *owned)
{
    for (uint32_t k = 0; k < r->live; k++)
        owned[r->live_map[k]] = r->space / r->live + (k < r->space % r->live ? 1 : 0);
    return 0;
}

const rs_scheme_ops rs_scheme_jump = {
    .check = rs_scheme_live_check,
    .position = jump_position,
    .owner = jump_owner,
    .shares = jump_shares,
    .shares_exact = 0,
};
