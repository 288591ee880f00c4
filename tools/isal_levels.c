/* isal_levels - does an ISA-L deflate level give the same bytes on every run?
 *
 * Compresses MEMBERS pieces of FILE (20-80 KB each, at offsets from a fixed
 * pseudo-random sequence: the same pieces on every run) one after another,
 * in one thread, the way ringshard compresses a member (one reused stream,
 * isal_deflate_reset, the whole piece in one call, output space a function
 * of the input length only), and prints a 64-bit FNV-1a hash of all the
 * output. Run it several times: a level whose hash changes from run to run
 * depends on something other than its input.
 *
 *   for i in 1 2 3 4 5 6; do build/isal_levels bills.csv 1 10000; done | sort | uniq -c
 *
 * On this project's machine (ISA-L 2.30, AVX-512), level 1 gave 4
 * different hashes in 6 runs and level 3 one; with address-space
 * randomisation off (setarch -R) level 1 gave the same hash 3 times out of
 * 3: its bytes depend on where the process's memory happens to lie. That
 * is why ringshard maps every gzip level to ISA-L level 3
 * (src/io/deflate.c).
 * Exit status: 0, 1 on a failure, 2 on bad usage. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rs_config.h"

#if RS_HAVE_ISAL
#include <isa-l/igzip_lib.h>

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: isal_levels FILE LEVEL(0-3) MEMBERS\n");
        return 2;
    }
    int level = atoi(argv[2]);
    long members = atol(argv[3]);
    if (level < 0 || level > 3 || members <= 0) {
        fprintf(stderr, "isal_levels: LEVEL must be 0-3 and MEMBERS positive\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    size_t cap = (size_t)64 << 20;
    uint8_t *data = malloc(cap), *out = malloc(200000);
    size_t n = data ? fread(data, 1, cap, f) : 0;
    fclose(f);
    if (!data || !out || n < 200000) {
        fprintf(stderr, "isal_levels: %s: need at least 200 KB (and memory)\n", argv[1]);
        return 1;
    }
    static const uint32_t bufsz[] = {ISAL_DEF_LVL0_DEFAULT, ISAL_DEF_LVL1_DEFAULT, ISAL_DEF_LVL2_DEFAULT,
                                     ISAL_DEF_LVL3_DEFAULT};
    struct isal_zstream *s = calloc(1, sizeof *s);
    uint8_t *level_buf = calloc(1, bufsz[level] ? bufsz[level] : 1);
    if (!s || !level_buf)
        return 1;
    isal_deflate_init(s);
    s->level = (uint32_t)level;
    s->hist_bits = 0;
    s->level_buf = bufsz[level] ? level_buf : NULL;
    s->level_buf_size = bufsz[level];
    uint64_t hash = 1469598103934665603ULL, x = 88172645463325252ULL;
    for (long m = 0; m < members; m++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;  /* xorshift64: the same pieces every run */
        size_t len = 20000 + (size_t)(x % 60000);
        size_t off = (size_t)((x >> 20) % (n - len));
        isal_deflate_reset(s);
        s->gzip_flag = IGZIP_GZIP_NO_HDR;
        s->end_of_stream = 1;
        s->flush = NO_FLUSH;
        size_t offer = len + (len >> 3) + 4096;
        s->next_in = data + off;
        s->avail_in = (uint32_t)len;
        s->next_out = out;
        s->avail_out = (uint32_t)offer;
        if (isal_deflate(s) != COMP_OK || s->internal_state.state != ZSTATE_END) {
            fprintf(stderr, "isal_levels: isal_deflate failed\n");
            return 1;
        }
        for (size_t k = 0; k < offer - s->avail_out; k++)
            hash = (hash ^ out[k]) * 1099511628211ULL;
    }
    printf("level %d, %ld members: %016llx\n", level, members, (unsigned long long)hash);
    return 0;
}
#else
int main(void)
{
    fprintf(stderr, "isal_levels: this build has no ISA-L\n");
    return 2;
}
#endif
