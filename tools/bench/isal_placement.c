/* isal_placement - reproduces ISA-L's level 1/2 bug: the compressed bytes
 * depend on the isal_zstream's address.
 *
 *   build/isal_placement [--workaround] [LEVEL]     (LEVEL 1 or 2, default 1)
 *
 * Compresses one fixed 200-byte CSV text (one isal_deflate call, a raw
 * deflate stream, as in any gzip/zlib use) with the stream placed at 256
 * addresses 64 KiB apart in one allocation, checks with zlib that every
 * output inflates back to the text, and prints how many different outputs
 * it got, with the first address giving each. ISA-L 2.30 to 2.32.1 (and
 * master as of 2026) give several: igzip_icf_body_h1_gr_bt.asm, in
 * .write_first_byte (the first body call of every stream), hashes position
 * 2 from tmp2 = rcx, which still holds the stream's address, instead of
 * from the input: `shr tmp2, 16 / compute_hash hash2, tmp2` without a
 * `mov tmp2, curr_data` before it. The text's third byte is then filed in
 * hash slot crc32c(address >> 16) & mask instead of its own. The output
 * stays valid, but when that slot is an earlier position's (here position
 * 0's, "2024"), that position is lost and the next row's "2024" no longer
 * matches it. For a text this short ISA-L uses 256 slots, and 256
 * consecutive 64 KiB steps try them all: one placement differs.
 * --workaround feeds the first 16 bytes alone with SYNC_FLUSH, as
 * ringshard does (src/io/deflate.c, isal_head): one output for all.
 * Exit status: 0 one output for all placements, 1 several (or a failure),
 * 2 bad usage. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "rs_config.h"

#if RS_HAVE_ISAL
#include <isa-l/igzip_lib.h>

#define STEPS 256
#define STEP ((size_t)64 << 10)

#define TEXT 200 /* under 256: ISA-L shrinks the hash table to 256 slots */
static char text[TEXT + 80];

/* Bill-like CSV rows, the same on every run: the text's third byte starts
 * a 4-byte string that recurs in the rows after it. */
static void make_text(void)
{
    static const char *how[] = {"alipay", "wechat", "card"};
    uint64_t x = 1;
    for (size_t n = 0; n < TEXT;) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        n += (size_t)snprintf(text + n, 80, "2024-01-%02u,%s,CNY,%u.%02u\n", (unsigned)(x % 28 + 1),
                              how[(x >> 8) % 3], (unsigned)(x >> 20) % 200, (unsigned)(x >> 40) % 100);
    }
}

/* One raw deflate stream of text into out (cap bytes); returns its length, 0 on failure. */
static size_t compress_at(struct isal_zstream *s, uint8_t *level_buf, int level, int workaround,
                          uint8_t *out, size_t cap)
{
    memset(s, 0, sizeof *s);
    isal_deflate_init(s);
    s->level = (uint32_t)level;
    s->level_buf = level_buf;
    s->level_buf_size = level == 1 ? ISAL_DEF_LVL1_DEFAULT : ISAL_DEF_LVL2_DEFAULT;
    s->next_out = out;
    s->avail_out = (uint32_t)cap;
    s->next_in = (uint8_t *)text;
    s->avail_in = TEXT;
    if (workaround) {
        s->avail_in = 16;
        s->flush = SYNC_FLUSH;
        if (isal_deflate(s) != COMP_OK || s->avail_in != 0)
            return 0;
        s->flush = NO_FLUSH;
        s->avail_in = TEXT - 16;
    }
    s->end_of_stream = 1;
    if (isal_deflate(s) != COMP_OK || s->internal_state.state != ZSTATE_END)
        return 0;
    return s->total_out;
}

static int inflates_to_text(const uint8_t *p, size_t n)
{
    char got[TEXT + 1];
    z_stream z = {0};
    if (inflateInit2(&z, -15) != Z_OK)
        return 0;
    z.next_in = (Bytef *)p;
    z.avail_in = (uInt)n;
    z.next_out = (Bytef *)got;
    z.avail_out = sizeof got;
    int ok = inflate(&z, Z_FINISH) == Z_STREAM_END && z.total_out == TEXT &&
             memcmp(got, text, TEXT) == 0;
    inflateEnd(&z);
    return ok;
}

int main(int argc, char **argv)
{
    int workaround = argc > 1 && strcmp(argv[1], "--workaround") == 0;
    int level = argc > 1 + workaround ? atoi(argv[1 + workaround]) : 1;
    if (argc > 2 + workaround || (level != 1 && level != 2)) {
        fprintf(stderr, "usage: isal_placement [--workaround] [LEVEL (1 or 2)]\n");
        return 2;
    }
    make_text();
    /* 256 steps from a 16 MiB boundary: address >> 16 runs through all
     * values of its low 8 bits */
    size_t align = STEPS * STEP;
    uint8_t *arena = aligned_alloc(align, 2 * align);  /* C11: a multiple of align; pages untouched stay free */
    uint8_t *level_buf = calloc(1, ISAL_DEF_LVL2_DEFAULT);
    static uint8_t outs[STEPS][1024];
    size_t lens[STEPS];
    if (!arena || !level_buf) {
        fprintf(stderr, "isal_placement: out of memory\n");
        return 1;
    }
    int distinct = 0;
    for (int k = 0; k < STEPS; k++) {
        struct isal_zstream *s = (struct isal_zstream *)(arena + (size_t)k * STEP);
        lens[k] = compress_at(s, level_buf, level, workaround, outs[k], sizeof outs[k]);
        if (lens[k] == 0 || !inflates_to_text(outs[k], lens[k])) {
            fprintf(stderr, "isal_placement: compressing with the stream at %p failed\n", (void *)s);
            return 1;
        }
        int seen = 0;
        for (int j = 0; j < k && !seen; j++)
            seen = lens[j] == lens[k] && memcmp(outs[j], outs[k], lens[k]) == 0;
        if (!seen) {
            distinct++;
            printf("stream at %p: %zu bytes, a new output\n", (void *)s, lens[k]);
        }
    }
    printf("ISA-L level %d%s: %d different output(s) for the same %d bytes at %d addresses\n", level,
           workaround ? " with the workaround" : "", distinct, TEXT, STEPS);
    free(arena);
    free(level_buf);
    return distinct == 1 ? 0 : 1;
}
#else
int main(void)
{
    fprintf(stderr, "isal_placement: this build has no ISA-L\n");
    return 1;
}
#endif
