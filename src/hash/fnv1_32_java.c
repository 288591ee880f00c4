/* The FNV1_32 ring's hash: a Java FNV1_32 variant over the UTF-16 code units
 * of the key (charAt), with its extra avalanche steps and final Math.abs
 * (fixtures/vectors/seed000_*.tsv). */
#include "hash/hash_impl.h"

/* Java's int >> on a value held as uint32_t. Written without relying on
 * implementation-defined signed right shift. */
static inline uint32_t sar32(uint32_t x, int r)
{
    uint32_t s = x >> r;
    if (x & 0x80000000u)
        s |= ~(UINT32_MAX >> r);
    return s;
}

int64_t rs_hash_fnv1_32_java(const uint8_t *key, size_t len, uint64_t seed)
{
    (void)seed;
    uint32_t h = 2166136261u;
    uint16_t u[2];
    size_t pos = 0;
    while (pos < len) {
        int n = rs_utf8_next_utf16(key, len, &pos, u);
        for (int i = 0; i < n; i++)
            h = (h ^ u[i]) * 16777619u;
    }
    h += h << 13;
    h ^= sar32(h, 7);
    h += h << 3;
    h ^= sar32(h, 17);
    h += h << 5;
    /* Math.abs: negating in unsigned keeps INT_MIN as INT_MIN, like Java. */
    if (h & 0x80000000u)
        h = 0u - h;
    return (int32_t)h;
}
