/* Compressed members must not depend on which thread made them or what it
 * compressed before: bucket outputs are byte-identical for any -j. ISA-L's
 * levels 1 and 2 failed this on their own (the two threads' streams lie at
 * different addresses, which those levels read as data: deflate.c,
 * isal_head; tests/test_deflate_placement.c places the stream on purpose).
 * Plain pthreads here: no OpenMP in the test runner's process. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "ringshard/deflate.h"

/* Under AddressSanitizer (tools/dev/sanitize.sh builds the suites with it too)
 * 300 members: the compressors themselves (ISA-L, zlib) are not
 * instrumented, so what ASan checks, the deflater's own code at every level
 * and codec on two threads, is the same for 300 as for 3000, and the 3000
 * that make the determinism check stringent stay in the Release suite,
 * which tools/test.sh runs first (35 s of the ASan pass otherwise). */
#if defined(__SANITIZE_ADDRESS__)
#define MEMBERS 300
#else
#define MEMBERS 3000
#endif
#define DATA (4 << 20)

static char *data;
static size_t off[MEMBERS], len[MEMBERS];
static rs_buf ref[MEMBERS];
static int level, nmembers;
static rs_codec_choice codec_used;
static int diffs;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void make_data(void)
{
    data = malloc(DATA);
    uint64_t x = 88172645463325252ULL;
    static const char *words[] = {"alipay", "CNY", "2024-01-01T00:00:00Z", "\"a, \"\"b\"\"\"", "refund", "0.00"};
    size_t n = 0;
    while (n < DATA - 64) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        for (int i = 0; i < 32 && n < DATA - 64; i++)
            data[n++] = "0123456789abcdef"[(x >> (i % 16 * 4)) & 15];
        const char *w = words[x % 6];
        data[n++] = ',';
        memcpy(data + n, w, strlen(w));
        n += strlen(w);
        data[n++] = '\n';
    }
    for (int i = 0; i < MEMBERS; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        off[i] = x % (DATA - 80000);
        len[i] = 1 + (x >> 32) % 65536;
    }
}

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg, local = 0;
    rs_deflater *d = rs_deflater_new(level, codec_used);
    rs_buf out = {0};
    uint32_t crc;
    for (int i = id; i < nmembers; i += 2) {
        const void *p[1] = {data + off[i]};
        size_t l[1] = {len[i]};
        out.len = 0;
        rs_deflater_member(d, p, l, 1, 0, &out, &crc);
        local += out.len != ref[i].len || memcmp(out.data, ref[i].data, out.len) != 0;
    }
    rs_buf_free(&out);
    rs_deflater_free(d);
    pthread_mutex_lock(&mu);
    diffs += local;
    pthread_mutex_unlock(&mu);
    return NULL;
}

static void check_level(int lvl, rs_codec_choice codec, int members)
{
    nmembers = members;
    level = lvl;
    codec_used = codec;
    diffs = 0;
    /* the reference: one deflater, members in reverse order */
    rs_deflater *d = rs_deflater_new(lvl, codec);
    uint32_t crc;
    for (int i = nmembers - 1; i >= 0; i--) {
        const void *p[1] = {data + off[i]};
        size_t l[1] = {len[i]};
        ref[i].len = 0;
        cr_assert_eq(rs_deflater_member(d, p, l, 1, 0, &ref[i], &crc), 0);
    }
    rs_deflater_free(d);
    for (int round = 0; round < 3; round++) {
        pthread_t t[2];
        for (int k = 0; k < 2; k++)
            pthread_create(&t[k], NULL, worker, (void *)(intptr_t)k);
        for (int k = 0; k < 2; k++)
            pthread_join(t[k], NULL);
    }
    cr_assert_eq(diffs, 0, "%s level %d: %d of %d members differ when made on two threads", codec == RS_CODEC_ZLIB ? "zlib" : "auto", lvl, diffs, 3 * nmembers);
}

/* Every distinct compressor state: ISA-L's levels 0, 1, 2 and 3 (gzip levels
 * 3-9 all run ISA-L level 3, io/deflate.c: 3 and 9, the ends of that range,
 * stand for it), and zlib at a fast, the default-like and the best level.
 * zlib keeps no address in its output (it never had ISA-L's fault) and is
 * ten times slower: a sixth of the members check it, still on two threads. */
Test(determinism, every_level_two_threads_equal_one, .timeout = 300)
{
    static const int auto_levels[] = {0, 1, 2, 3, 9}, zlib_levels[] = {1, 5, 9};
    make_data();
    for (size_t i = 0; i < sizeof auto_levels / sizeof *auto_levels; i++)
        check_level(auto_levels[i], RS_CODEC_AUTO, MEMBERS);
    for (size_t i = 0; i < sizeof zlib_levels / sizeof *zlib_levels; i++)
        check_level(zlib_levels[i], RS_CODEC_ZLIB, MEMBERS / 6);
}
