/* MurmurHash3 x64_128 (Austin Appleby, public domain), as Guava's
 * Hashing.murmur3_128(seed) computes it. Guava's HashCode.asLong() is h1:
 * the digest's first 8 bytes read little-endian. */
#include <string.h>
#include "ringshard/hash.h"

static inline uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static inline uint64_t fmix64(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return k;
}

static inline uint64_t load64le(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

void rs_murmur3_x64_128(const void *key, size_t len, uint32_t seed, uint64_t out[2])
{
    const uint8_t *data = key;
    const size_t nblocks = len / 16;
    uint64_t h1 = seed, h2 = seed;
    const uint64_t c1 = 0x87c37b91114253d5ULL, c2 = 0x4cf5ad432745937fULL;

    for (size_t i = 0; i < nblocks; i++) {
        uint64_t k1 = load64le(data + i * 16), k2 = load64le(data + i * 16 + 8);
        k1 *= c1; k1 = rotl64(k1, 31); k1 *= c2; h1 ^= k1;
        h1 = rotl64(h1, 27); h1 += h2; h1 = h1 * 5 + 0x52dce729;
        k2 *= c2; k2 = rotl64(k2, 33); k2 *= c1; h2 ^= k2;
        h2 = rotl64(h2, 31); h2 += h1; h2 = h2 * 5 + 0x38495ab5;
    }

    /* The tail bytes are unsigned: a signed char here breaks every key with
     * a byte >= 0x80 in its last len % 16 bytes. */
    const uint8_t *tail = data + nblocks * 16;
    uint64_t k1 = 0, k2 = 0;
    switch (len & 15) {
    case 15: k2 ^= (uint64_t)tail[14] << 48; /* fall through */
    case 14: k2 ^= (uint64_t)tail[13] << 40; /* fall through */
    case 13: k2 ^= (uint64_t)tail[12] << 32; /* fall through */
    case 12: k2 ^= (uint64_t)tail[11] << 24; /* fall through */
    case 11: k2 ^= (uint64_t)tail[10] << 16; /* fall through */
    case 10: k2 ^= (uint64_t)tail[9] << 8;   /* fall through */
    case 9:  k2 ^= (uint64_t)tail[8];
             k2 *= c2; k2 = rotl64(k2, 33); k2 *= c1; h2 ^= k2;
             /* fall through */
    case 8:  k1 ^= (uint64_t)tail[7] << 56;  /* fall through */
    case 7:  k1 ^= (uint64_t)tail[6] << 48;  /* fall through */
    case 6:  k1 ^= (uint64_t)tail[5] << 40;  /* fall through */
    case 5:  k1 ^= (uint64_t)tail[4] << 32;  /* fall through */
    case 4:  k1 ^= (uint64_t)tail[3] << 24;  /* fall through */
    case 3:  k1 ^= (uint64_t)tail[2] << 16;  /* fall through */
    case 2:  k1 ^= (uint64_t)tail[1] << 8;   /* fall through */
    case 1:  k1 ^= (uint64_t)tail[0];
             k1 *= c1; k1 = rotl64(k1, 31); k1 *= c2; h1 ^= k1;
    }

    h1 ^= (uint64_t)len; h2 ^= (uint64_t)len;
    h1 += h2; h2 += h1;
    h1 = fmix64(h1); h2 = fmix64(h2);
    h1 += h2; h2 += h1;
    out[0] = h1;
    out[1] = h2;
}

int64_t rs_hash_murmur3_128(const uint8_t *key, size_t len, uint64_t seed)
{
    uint64_t h[2];
    rs_murmur3_x64_128(key, len, (uint32_t)seed, h);
    return (int64_t)h[0];
}
