/* Java String.hashCode() of the key decoded from UTF-8 (see rs_utf8_next_utf16). */
#include "hash/hash_impl.h"

int64_t rs_hash_java_hashcode(const uint8_t *key, size_t len, uint64_t seed)
{
    (void)seed;
    /* Unsigned arithmetic: Java int overflow wraps, C signed overflow is UB. */
    uint32_t h = 0;
    uint16_t u[2];
    size_t pos = 0;
    while (pos < len) {
        int n = rs_utf8_next_utf16(key, len, &pos, u);
        for (int i = 0; i < n; i++)
            h = 31 * h + u[i];
    }
    return (int32_t)h;
}
