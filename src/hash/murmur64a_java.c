/* The MurmurHash64A ring's hash, a Java MurmurHash64A variant
 * (fixtures/vectors/seed002_*.tsv). It differs from textbook 64A only in the
 * tail (len % 8 != 0): the tail bytes are sign-extended Java bytes OR-ed in
 * from the last one down, then mixed with `k *= m; h ^= k` (no `h *= m`). */
#include "hash/hash_impl.h"

int64_t rs_hash_murmur64a_java(const uint8_t *key, size_t len, uint64_t seed)
{
    const uint64_t m = 0xc6a4a7935bd1e995ULL;
    const int r = 47;
    /* Java widens the int length to long before the multiply: a 64-bit
     * product, not a 32-bit one. */
    uint64_t h = seed ^ ((uint64_t)len * m);
    size_t nblocks = len >> 3;

    for (size_t i = 0; i < nblocks; i++) {
        const uint8_t *p = key + (i << 3);
        uint64_t k = 0;
        for (int j = 7; j >= 0; j--)
            k = (k << 8) | p[j];
        k *= m; k ^= k >> r; k *= m;
        h ^= k; h *= m;
    }

    if (len & 7) {
        uint64_t k = 0;
        for (size_t j = len; j-- > nblocks << 3;) {
            k <<= 8;
            /* `k |= data[j]` with a signed byte: a byte >= 0x80 sets all
             * the higher bits of k too. */
            k |= (uint64_t)(int64_t)(int8_t)key[j];
        }
        k *= m;
        h ^= k;
    }

    h ^= h >> r; h *= m; h ^= h >> r;
    return (int64_t)h;
}
