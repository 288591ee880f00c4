/* MurmurHash3 x86_32 (Austin Appleby, public domain), as Guava's
 * Hashing.murmur3_32(seed) computes it. Guava's asInt() reads the 4-byte
 * digest little-endian, which is exactly the plain x86_32 result. */
#include <string.h>
#include "hash/hash_impl.h"

static inline uint32_t rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

static inline uint32_t load32le(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

uint32_t rs_murmur3_x86_32(const void *key, size_t len, uint32_t seed)
{
    const uint8_t *data = key;
    const size_t nblocks = len / 4;
    const uint32_t c1 = 0xcc9e2d51, c2 = 0x1b873593;
    uint32_t h1 = seed;

    for (size_t i = 0; i < nblocks; i++) {
        uint32_t k1 = load32le(data + i * 4);
        k1 *= c1; k1 = rotl32(k1, 15); k1 *= c2;
        h1 ^= k1; h1 = rotl32(h1, 13); h1 = h1 * 5 + 0xe6546b64;
    }

    /* Tail bytes unsigned, as in Guava (and unlike the signed-char reference
     * on x86, which differs for bytes >= 0x80). */
    const uint8_t *tail = data + nblocks * 4;
    uint32_t k1 = 0;
    switch (len & 3) {
    case 3: k1 ^= (uint32_t)tail[2] << 16; /* fall through */
    case 2: k1 ^= (uint32_t)tail[1] << 8;  /* fall through */
    case 1: k1 ^= (uint32_t)tail[0];
            k1 *= c1; k1 = rotl32(k1, 15); k1 *= c2; h1 ^= k1;
    }

    /* Only the low 32 bits of the length enter the hash, as in the reference. */
    h1 ^= (uint32_t)len;
    h1 ^= h1 >> 16; h1 *= 0x85ebca6b;
    h1 ^= h1 >> 13; h1 *= 0xc2b2ae35;
    h1 ^= h1 >> 16;
    return h1;
}

int64_t rs_hash_murmur3_32(const uint8_t *key, size_t len, uint64_t seed)
{
    return (int32_t)rs_murmur3_x86_32(key, len, (uint32_t)seed);
}
