/* CRC-64/XZ (ECMA-182 polynomial, reflected; what xz's --check=crc64
 * computes): the checksum a bucket directory's manifest records of every
 * input's stored bytes, so that an input already ingested is recognised by
 * its content whatever it is called now (hash.h). ISA-L's folding
 * implementation (PCLMULQDQ; over 10 GB/s a core) when the build has it, a
 * slicing-by-8 table otherwise: the same values either way (tested against
 * the check value of "123456789", 0x995dc9bbdf1939fa). */
#include <stdint.h>
#include <string.h>
#include "ringshard/hash.h"
#include "rs_config.h"
#if RS_HAVE_ISAL
#include <isa-l/crc64.h>
#endif

#define POLY 0xC96C5795D7870F42ULL  /* ECMA-182, reflected */

static uint64_t table[8][256];
static int table_ready;

static void make_table(void)
{
    for (int n = 0; n < 256; n++) {
        uint64_t c = (uint64_t)n;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
        table[0][n] = c;
    }
    for (int n = 0; n < 256; n++)
        for (int k = 1; k < 8; k++)
            table[k][n] = (table[k - 1][n] >> 8) ^ table[0][table[k - 1][n] & 0xff];
    __atomic_store_n(&table_ready, 1, __ATOMIC_RELEASE);
}

uint64_t rs_crc64_portable(uint64_t crc, const void *buf, size_t len)
{
    if (!__atomic_load_n(&table_ready, __ATOMIC_ACQUIRE))
        make_table();  /* idempotent: threads that race compute the same table */
    const unsigned char *p = buf;
    crc = ~crc;
    for (; len >= 8; p += 8, len -= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        w ^= crc;  /* little-endian hosts (x86-64, the supported target) */
        crc = table[7][w & 0xff] ^ table[6][(w >> 8) & 0xff] ^ table[5][(w >> 16) & 0xff] ^
              table[4][(w >> 24) & 0xff] ^ table[3][(w >> 32) & 0xff] ^ table[2][(w >> 40) & 0xff] ^
              table[1][(w >> 48) & 0xff] ^ table[0][w >> 56];
    }
    while (len--)
        crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
    return ~crc;
}

uint64_t rs_crc64(uint64_t crc, const void *buf, size_t len)
{
#if RS_HAVE_ISAL
    return crc64_ecma_refl(crc, (const unsigned char *)buf, (uint64_t)len);
#else
    return rs_crc64_portable(crc, buf, len);
#endif
}

/* a * b modulo the polynomial, both reflected (bit 63 is x^0). */
static uint64_t mult_mod(uint64_t a, uint64_t b)
{
    uint64_t p = 0;
    for (uint64_t m = (uint64_t)1 << 63; m; m >>= 1) {
        if (a & m)
            p ^= b;
        b = b & 1 ? (b >> 1) ^ POLY : b >> 1;
    }
    return p;
}

uint64_t rs_crc64_combine(uint64_t crc_a, uint64_t crc_b, uint64_t len_b)
{
    /* crc(A||B) = crc_a times x^(8 len_b) xor crc_b: the initial value and
     * the final XOR, all ones in both, cancel out (zlib's reasoning).
     * x^(8 len_b) by squaring: 64 products at most, each 64 steps */
    uint64_t xn = (uint64_t)1 << 63, sq = (uint64_t)1 << (63 - 8);  /* x^0, x^8 */
    for (uint64_t n = len_b; n; n >>= 1) {
        if (n & 1)
            xn = mult_mod(xn, sq);
        sq = mult_mod(sq, sq);
    }
    return mult_mod(xn, crc_a) ^ crc_b;
}
