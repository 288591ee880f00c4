/* bench_lookup: hashes/s, lookups/s and hash+lookup/s on the default ring
 * (1000 nodes x 200 vnodes), single-threaded and on all cores, with the
 * slot table (the ring's index) next to a plain binary search in the same run.
 *
 * Usage: bench_lookup [KEYS] [RUNS] [PASSES]
 *   (default 65,536 distinct keys read 64 times, 5 runs)
 * Keys are realistic 32-character lowercase hex ids (like bill ids); the
 * set is small enough to stay in cache, as a batch's keys are when the
 * pipeline hashes them right after parsing (with 4 M keys streamed from
 * memory, this VM's memory bandwidth caps hashing at ~60 M/s whatever the
 * code). Each figure is the median of RUNS. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ringshard/ring.h"

#define KEYLEN 32

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static const rs_ring *ring;
static char *keys;
static uint64_t *pos;
static size_t nkeys;
static volatile uint64_t sink;

typedef void (*bench_fn)(size_t lo, size_t hi);

static void do_hash(size_t lo, size_t hi)
{
    uint64_t acc = 0;
    for (size_t i = lo; i < hi; i++)
        acc += rs_ring_position(ring, keys + i * KEYLEN, KEYLEN);
    sink += acc;
}
static void do_lookup_index(size_t lo, size_t hi)
{
    uint64_t acc = 0;
    for (size_t i = lo; i < hi; i++)
        acc += rs_ring_owner(ring, pos[i]);
    sink += acc;
}
static void do_lookup_bsearch(size_t lo, size_t hi)
{
    uint64_t acc = 0;
    for (size_t i = lo; i < hi; i++)
        acc += rs_ring_owner_bsearch(ring, pos[i]);
    sink += acc;
}
static void do_both_index(size_t lo, size_t hi)
{
    uint64_t acc = 0;
    for (size_t i = lo; i < hi; i++)
        acc += rs_ring_locate(ring, keys + i * KEYLEN, KEYLEN);
    sink += acc;
}
/* Positions for a block of keys, prefetches, then the owners, so that the
 * lookups' cache misses overlap (the pipeline's way before it took three
 * blocks in flight). */
static void do_both_batched(size_t lo, size_t hi)
{
    uint64_t acc = 0, p[32];
    for (size_t i = lo; i < hi; i += 32) {
        size_t n = hi - i < 32 ? hi - i : 32;
        for (size_t k = 0; k < n; k++) {
            p[k] = rs_ring_position(ring, keys + (i + k) * KEYLEN, KEYLEN);
            rs_ring_prefetch_index(ring, p[k]);
        }
        for (size_t k = 0; k < n; k++)
            rs_ring_prefetch_point(ring, p[k]);
        for (size_t k = 0; k < n; k++)
            acc += rs_ring_owner(ring, p[k]);
    }
    sink += acc;
}
/* As the pipeline does it (route.c): blocks of 64 keys in three steps a
 * block apart - block i is hashed and its slots prefetched while block
 * i - 1 reads its slots (hints) and prefetches its points and block i - 2
 * is looked up - through one call a block and step. */
enum { PIPE_BLOCK = 64, PIPE_FLIGHT = 3 };
static void do_both_pipelined(size_t lo, size_t hi)
{
    uint64_t acc = 0, p[PIPE_FLIGHT][PIPE_BLOCK], hint[PIPE_FLIGHT][PIPE_BLOCK];
    const char *kp[PIPE_BLOCK];
    size_t lens[PIPE_BLOCK], n[PIPE_FLIGHT] = {0};
    uint32_t own[PIPE_BLOCK];
    for (size_t k = 0; k < PIPE_BLOCK; k++)
        lens[k] = KEYLEN;
    size_t nblocks = (hi - lo + PIPE_BLOCK - 1) / PIPE_BLOCK;
    for (size_t b = 0; b < nblocks + PIPE_FLIGHT - 1; b++) {
        if (b < nblocks) {
            size_t i = lo + b * PIPE_BLOCK, *m = &n[b % PIPE_FLIGHT];
            *m = hi - i < PIPE_BLOCK ? hi - i : PIPE_BLOCK;
            for (size_t k = 0; k < *m; k++)
                kp[k] = keys + (i + k) * KEYLEN;
            rs_ring_positions(ring, kp, lens, *m, p[b % PIPE_FLIGHT]);
        }
        if (b >= 1 && b - 1 < nblocks)
            rs_ring_prefetch_points(ring, p[(b - 1) % PIPE_FLIGHT], n[(b - 1) % PIPE_FLIGHT],
                                    hint[(b - 1) % PIPE_FLIGHT]);
        if (b >= 2 && b - 2 < nblocks) {
            size_t x = (b - 2) % PIPE_FLIGHT;
            rs_ring_owners(ring, p[x], hint[x], n[x], own);
            for (size_t k = 0; k < n[x]; k++)
                acc += own[k];
        }
    }
    sink += acc;
}
static void do_both_bsearch(size_t lo, size_t hi)
{
    uint64_t acc = 0;
    for (size_t i = lo; i < hi; i++)
        acc += rs_ring_owner_bsearch(ring, rs_ring_position(ring, keys + i * KEYLEN, KEYLEN));
    sink += acc;
}

static int passes;

static double measure(bench_fn fn, int threads, int runs)
{
    double t[32];
    for (int r = 0; r < runs; r++) {
        double t0 = now();
        if (threads == 1) {
            for (int p = 0; p < passes; p++)
                fn(0, nkeys);
        } else {
#pragma omp parallel num_threads(threads)
            {
                int id = omp_get_thread_num(), n = omp_get_num_threads();
                for (int p = 0; p < passes; p++)
                    fn(nkeys * id / n, nkeys * (id + 1) / n);
            }
        }
        t[r] = now() - t0;
    }
    qsort(t, runs, sizeof *t, cmp_double);
    return (double)nkeys * passes / t[runs / 2] / 1e6;
}

int main(int argc, char **argv)
{
    nkeys = argc > 1 ? strtoull(argv[1], NULL, 10) : 65536;
    int runs = argc > 2 ? atoi(argv[2]) : 5;
    passes = argc > 3 ? atoi(argv[3]) : 64;
    if (passes < 1)
        passes = 1;
    if (runs < 1 || runs > 31)
        runs = 5;
    rs_ring_opts o;
    rs_nodes n;
    rs_error err = {0};
    rs_ring_opts_default(&o, RS_SCHEME_RING);
    rs_nodes_init_count(&n, 1000, &err);
    double t0 = now();
    rs_ring *r = rs_ring_build(&o, &n, &err);
    double build = now() - t0;
    if (!r) {
        fprintf(stderr, "bench_lookup: %s\n", err.msg);
        return 1;
    }
    ring = r;
    keys = malloc(nkeys * KEYLEN);
    pos = malloc(nkeys * sizeof *pos);
    uint64_t x = 0x243F6A8885A308D3ULL;
    for (size_t i = 0; i < nkeys * KEYLEN; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        keys[i] = "0123456789abcdef"[x & 15];
    }
    for (size_t i = 0; i < nkeys; i++)
        pos[i] = rs_ring_position(r, keys + i * KEYLEN, KEYLEN);
    /* the batched ways must find the owners the plain lookup does */
    bench_fn ways[] = {do_both_index, do_both_batched, do_both_pipelined};
    uint64_t sums[3];
    for (int w = 0; w < 3; w++) {
        sink = 0;
        ways[w](0, nkeys);
        sums[w] = sink;
    }
    if (sums[1] != sums[0] || sums[2] != sums[0]) {
        fprintf(stderr, "bench_lookup: the batched lookups disagree with rs_ring_locate\n");
        return 1;
    }
    int cores = omp_get_max_threads();
    printf("default ring built in %.3f s; %zu distinct keys of %d bytes, %d passes; median of %d runs; %d cores\n\n",
           build, nkeys, KEYLEN, passes, runs, cores);
    printf("| operation | 1 thread (M/s) | %d threads (M/s) |\n|---|---:|---:|\n", cores);
    struct {
        const char *name;
        bench_fn fn;
    } rows[] = {
        {"murmur3_128 hash (position)", do_hash},
        {"lookup, slot table", do_lookup_index},
        {"lookup, binary search", do_lookup_bsearch},
        {"hash + lookup, slot table", do_both_index},
        {"hash + lookup, blocks of 32, prefetched", do_both_batched},
        {"hash + lookup, blocks of 64 in three steps a block apart (the pipeline's way)", do_both_pipelined},
        {"hash + lookup, binary search", do_both_bsearch},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
        printf("| %s | %.1f | %.1f |\n", rows[i].name, measure(rows[i].fn, 1, runs), measure(rows[i].fn, cores, runs));
    rs_ring_free(r);
    rs_nodes_free(&n);
    free(keys);
    free(pos);
    return 0;
}
