/* Ketama's key position (libketama; fixtures/vectors/seed003_*.tsv): MD5 digest bytes 0..3 little-endian,
 * an unsigned 32-bit value. */
#include "hash/hash_impl.h"

int64_t rs_hash_md5_ketama(const uint8_t *key, size_t len, uint64_t seed)
{
    (void)seed;
    uint8_t d[16];
    rs_md5(key, len, d);
    return (int64_t)((uint32_t)d[0] | (uint32_t)d[1] << 8 | (uint32_t)d[2] << 16 |
                     (uint32_t)d[3] << 24);
}
