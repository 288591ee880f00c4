/* Synthetic keys for `simulate`: decimal sequence numbers, or random
 * 32-hex-digit ids from a random-access splitmix64 stream. */
#include <string.h>
#include "ringshard/stats.h"

#define SPLITMIX_GAMMA 0x9e3779b97f4a7c15ULL

uint64_t rs_splitmix64_at(uint64_t seed, uint64_t n)
{
    uint64_t z = seed + (n + 1) * SPLITMIX_GAMMA;   /* the state after n+1 steps */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void hex16(uint64_t v, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 15; i >= 0; i--) {
        out[i] = digits[v & 15];
        v >>= 4;
    }
}

size_t rs_synth_key(rs_key_pattern pat, uint64_t seed, uint64_t i, char *buf)
{
    if (pat == RS_KEYS_RANDOM) {
        hex16(rs_splitmix64_at(seed, 2 * i), buf);
        hex16(rs_splitmix64_at(seed, 2 * i + 1), buf + 16);
        buf[32] = '\0';
        return 32;
    }
    char tmp[24];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + i % 10);
        i /= 10;
    } while (i);
    for (size_t k = 0; k < n; k++)
        buf[k] = tmp[n - 1 - k];
    buf[n] = '\0';
    return n;
}
