/* tools/bench/bench_rowmove.c - three ways of moving a batch's rows into one
 * contiguous piece per destination, on real rows, apart from the rest of
 * the pipeline.
 *
 * Usage: bench_rowmove [--mb N] [--runs N] [--groups G] [--ahead N] file.csv
 *
 * Takes the first N MiB (default 64: a batch of the default --memory) of
 * the file's whole lines, places each line on the default ring by its
 * first field (rs_ring_locate; a model: lines, not CSV records), splits
 * the batch into G parse groups (default 8: four per thread on two cores)
 * and times, in CPU seconds per 10 M rows (median of --runs, default 5;
 * before each run 256 MiB are written so that the batch starts out of the
 * caches, as it does in the pipeline):
 *   entries  the pipeline's way (src/pipeline/route.c): a 9-byte entry per
 *            row for its group and destination, then per destination the
 *            rows read back from the batch, groups in order, the rows 8
 *            entries ahead prefetched;
 *   staged   rows copied at the scatter into a 256-byte staging area per
 *            destination (in cache), whose whole 64-byte lines are stored
 *            past the caches (non-temporal) into chunks per group and
 *            destination, then the chunks joined per destination;
 *   grouped  each group's rows gathered per destination as soon as the
 *            group is scattered (while its part of the batch is in cache),
 *            then the groups' pieces joined per destination;
 *   inline   each row copied with its LF into its group's buffer for its
 *            destination at the scatter (while in cache), the buffers
 *            joined per destination;
 *   across   entries as the pipeline's, but the prefetches run on a cursor
 *            of their own, --ahead entries ahead (default 8), that goes on
 *            into the next group's entries instead of starting afresh in
 *            each group.
 * Every way scans each block of 256 rows once before scattering it, as the
 * scanner does, and every way's pieces are checked against the first's. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include "ringshard/ring.h"

enum { NDEST = 1000, MAXG = 64, AHEAD = 8, STAGE = 256, SCAN_ROWS = 256, CHUNK = 4096 };

typedef struct {
    char *data;
    size_t len, cap;
} buf;

static char *batch;
static size_t nbytes, nrows, ngroups = 8;
static uint32_t *row_off, *row_len, *row_dest;
static buf entries[MAXG * NDEST], piece;
static uint64_t piece_sum[NDEST]; /* a checksum of each destination's piece */
static volatile uint64_t sink;

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "bench_rowmove: out of memory\n");
        exit(2);
    }
    return p;
}

static void reserve(buf *b, size_t more)
{
    if (b->cap - b->len >= more)
        return;
    size_t c = b->cap ? b->cap : 4096;
    while (c - b->len < more)
        c *= 2;
    char *d = realloc(b->data, c);
    if (!d) {
        fprintf(stderr, "bench_rowmove: out of memory\n");
        exit(2);
    }
    b->data = d, b->cap = c;
}

/* The rows of parse group g: [*first, *end). */
static void group_rows(size_t g, size_t *first, size_t *end)
{
    size_t per = (nrows + ngroups - 1) / ngroups;
    *first = g * per < nrows ? g * per : nrows;
    *end = (g + 1) * per < nrows ? (g + 1) * per : nrows;
}

/* What the scanner does to the rows before they are placed: reads them,
 * a block of SCAN_ROWS at a time (row i starts a block). */
static void scan_block(size_t i)
{
    size_t from = row_off[i], to = i + SCAN_ROWS < nrows ? row_off[i + SCAN_ROWS] : nbytes;
    uint64_t acc = 0;
    for (size_t o = from; o + 8 <= to; o += 8) {
        uint64_t v;
        memcpy(&v, batch + o, 8);
        acc += v;
    }
    sink += acc;
}

/* The end of one destination's piece: checked against the first way's. */
static void piece_done(int way, uint32_t d, size_t len)
{
    uint64_t h = len;
    for (size_t i = 0; i < len; i += 97)
        h = h * 31 + (unsigned char)piece.data[i];
    if (way == 0)
        piece_sum[d] = h;
    else if (piece_sum[d] != h) {
        fprintf(stderr, "bench_rowmove: way %d built another piece for destination %u\n", way, d);
        exit(1);
    }
}

/* Row i's entry: a reference to it in the batch. */
static void put_entry(buf *b, size_t i)
{
    reserve(b, 9);
    unsigned char *e = (unsigned char *)b->data + b->len;
    uint32_t v[2] = {row_off[i], row_len[i]};
    e[0] = 255;
    memcpy(e + 1, v, sizeof v);
    b->len += 9;
}

/* Row i itself and its LF (the inline way). */
static void put_copy(buf *b, size_t i)
{
    reserve(b, row_len[i] + 1);
    memcpy(b->data + b->len, batch + row_off[i], row_len[i]);
    b->data[b->len + row_len[i]] = '\n';
    b->len += row_len[i] + 1;
}

/* Group g's rows, each put into its destination's buffer by put. */
static void scatter_with(size_t g, void (*put)(buf *b, size_t i))
{
    size_t first, end;
    group_rows(g, &first, &end);
    for (uint32_t d = 0; d < NDEST; d++)
        entries[g * NDEST + d].len = 0;
    for (size_t i = first; i < end; i++) {
        if ((i - first) % SCAN_ROWS == 0)
            scan_block(i);
        put(&entries[g * NDEST + row_dest[i]], i);
    }
}

static void scatter_entries(size_t g)
{
    scatter_with(g, put_entry);
}

/* Prefetches the row of entry e. Always inlined, as the pipeline's
 * prefetch_ref: gcc -O2 may find a prefetch-only function "const" and drop
 * its calls. */
static inline __attribute__((always_inline)) void prefetch_row(const unsigned char *e)
{
    uint32_t off;
    memcpy(&off, e + 1, 4);
    __builtin_prefetch(batch + off);
    __builtin_prefetch(batch + off + 64);
}

/* Copies the row of entry e and an LF to out; returns the end. */
static char *copy_row(char *out, const unsigned char *e)
{
    uint32_t v[2];
    memcpy(v, e + 1, sizeof v);
    memcpy(out, batch + v[0], v[1]);
    out += v[1];
    *out++ = '\n';
    return out;
}

/* Appends group g's rows of destination d, read from the batch through
 * their entries, at out; returns the end. */
static char *gather_entries(size_t g, uint32_t d, char *out)
{
    const buf *b = &entries[g * NDEST + d];
    const unsigned char *e = (const unsigned char *)b->data, *end = e + b->len, *ahead = e;
    for (int k = 0; k < AHEAD && ahead < end; k++)
        ahead += 9;
    for (; e < end; e += 9) {
        if (ahead < end) {
            prefetch_row(ahead);
            ahead += 9;
        }
        out = copy_row(out, e);
    }
    return out;
}

/* Destination d's rows, groups in order, through their entries, at out;
 * returns the end. */
static char *gather_by_group(uint32_t d, char *out)
{
    for (size_t g = 0; g < ngroups; g++)
        out = gather_entries(g, d, out);
    return out;
}

/* The entries' ways: scatter, then every destination's piece gathered. */
static void entries_way(double *join, int way, char *(*gather)(uint32_t d, char *out))
{
    for (size_t g = 0; g < ngroups; g++)
        scatter_entries(g);
    double t0 = cpu_now();
    for (uint32_t d = 0; d < NDEST; d++)
        piece_done(way, d, (size_t)(gather(d, piece.data) - piece.data));
    *join += cpu_now() - t0;
}

static void way_entries(double *join)
{
    entries_way(join, 0, gather_by_group);
}

/* across: the gather's prefetches on a cursor of their own that crosses
 * from one group's entries to the next. */
typedef struct {
    uint32_t d;
    size_t g;
    const unsigned char *e, *end;
} entry_cursor;

/* The next entry of the cursor's destination, groups in order, or NULL.
 * Entering a group, it prefetches the entries two groups on (their
 * buffer's address is in cache by then: see gather_across). */
static const unsigned char *cursor_next(entry_cursor *c)
{
    while (c->e == c->end) {
        if (++c->g >= ngroups)
            return NULL;
        const buf *b = &entries[c->g * NDEST + c->d];
        c->e = (const unsigned char *)b->data, c->end = c->e + b->len;
        if (c->g + 2 < ngroups)
            __builtin_prefetch(entries[(c->g + 2) * NDEST + c->d].data);
    }
    const unsigned char *e = c->e;
    c->e += 9;
    return e;
}

static size_t ahead_across = AHEAD;

/* Destination d's rows as gather_by_group, the prefetches ahead_across
 * entries ahead across the groups. */
static char *gather_across(uint32_t d, char *at)
{
    for (size_t g = 0; g < ngroups; g++) /* the groups' buffers' addresses */
        __builtin_prefetch(&entries[g * NDEST + d]);
    if (ngroups > 1)
        __builtin_prefetch(entries[NDEST + d].data);
    const unsigned char *first = (const unsigned char *)entries[d].data;
    entry_cursor copy = {d, 0, first, first + entries[d].len}, pf = copy;
    const unsigned char *p = NULL, *e;
    for (size_t k = 0; k < ahead_across && (p = cursor_next(&pf)); k++)
        prefetch_row(p);
    while ((e = cursor_next(&copy))) {
        if (p && (p = cursor_next(&pf)))
            prefetch_row(p);
        at = copy_row(at, e);
    }
    return at;
}

static void way_across(double *join)
{
    entries_way(join, 4, gather_across);
}

/* staged: per group and destination a list of CHUNK-byte chunks of a
 * group's pool, written 64 bytes at a time past the caches. */
typedef struct {
    char *w, *end;
    buf chunks; /* char * of each chunk */
} chunk_stream;
static chunk_stream streams[MAXG * NDEST];
static char *pools[MAXG];
static size_t pool_used[MAXG], pool_cap;
static _Alignas(64) char stage[NDEST][STAGE];
static uint32_t stage_fill[NDEST];

static void store_line(char *dst, const char *src)
{
#ifdef __SSE2__
    for (int k = 0; k < 64; k += 16)
        _mm_stream_si128((__m128i *)(dst + k), _mm_load_si128((const __m128i *)(src + k)));
#else
    memcpy(dst, src, 64);
#endif
}

static void next_chunk(size_t g, chunk_stream *s)
{
    if (pool_used[g] + CHUNK > pool_cap) {
        fprintf(stderr, "bench_rowmove: a group's pool is full\n");
        exit(2);
    }
    char *c = pools[g] + pool_used[g];
    pool_used[g] += CHUNK;
    reserve(&s->chunks, sizeof c);
    memcpy(s->chunks.data + s->chunks.len, &c, sizeof c);
    s->chunks.len += sizeof c;
    s->w = c, s->end = c + CHUNK;
}

/* Streams destination d's whole staged lines into its chunks. */
static void flush_stage(size_t g, uint32_t d)
{
    chunk_stream *s = &streams[g * NDEST + d];
    uint32_t whole = stage_fill[d] & ~63u;
    for (uint32_t o = 0; o < whole; o += 64) {
        if (s->w == s->end)
            next_chunk(g, s);
        store_line(s->w, stage[d] + o);
        s->w += 64;
    }
    memmove(stage[d], stage[d] + whole, stage_fill[d] - whole);
    stage_fill[d] -= whole;
}

static void stage_bytes(size_t g, uint32_t d, const char *p, size_t n)
{
    while (n > STAGE - stage_fill[d]) {
        size_t take = STAGE - stage_fill[d];
        memcpy(stage[d] + stage_fill[d], p, take);
        stage_fill[d] = STAGE;
        p += take, n -= take;
        flush_stage(g, d);
    }
    memcpy(stage[d] + stage_fill[d], p, n);
    stage_fill[d] += (uint32_t)n;
    if (stage_fill[d] >= STAGE - 128)
        flush_stage(g, d);
}

static void way_staged(double *join)
{
    for (size_t g = 0; g < ngroups; g++) {
        size_t first, end;
        group_rows(g, &first, &end);
        pool_used[g] = 0;
        for (uint32_t d = 0; d < NDEST; d++) {
            streams[g * NDEST + d].chunks.len = 0;
            streams[g * NDEST + d].w = streams[g * NDEST + d].end = NULL;
            stage_fill[d] = 0;
        }
        for (size_t i = first; i < end; i++) {
            if ((i - first) % SCAN_ROWS == 0)
                scan_block(i);
            stage_bytes(g, row_dest[i], batch + row_off[i], row_len[i]);
            stage_bytes(g, row_dest[i], "\n", 1);
        }
        for (uint32_t d = 0; d < NDEST; d++) { /* the tails, in the caches */
            chunk_stream *s = &streams[g * NDEST + d];
            flush_stage(g, d);
            if (stage_fill[d]) {
                if (s->w == s->end)
                    next_chunk(g, s);
                memcpy(s->w, stage[d], stage_fill[d]);
                s->w += stage_fill[d];
            }
        }
    }
#ifdef __SSE2__
    _mm_sfence();
#endif
    double t0 = cpu_now();
    for (uint32_t d = 0; d < NDEST; d++) {
        size_t at = 0;
        for (size_t g = 0; g < ngroups; g++) {
            const chunk_stream *s = &streams[g * NDEST + d];
            size_t n = s->chunks.len / sizeof(char *);
            for (size_t k = 0; k < n; k++) {
                char *c;
                memcpy(&c, s->chunks.data + k * sizeof c, sizeof c);
                size_t len = k + 1 < n ? CHUNK : (size_t)(s->w - c);
                memcpy(piece.data + at, c, len);
                at += len;
            }
        }
        piece_done(1, d, at);
    }
    *join += cpu_now() - t0;
}

/* inline: rows copied at the scatter into the groups' buffers, joined. */
static void way_inline(double *join)
{
    for (size_t g = 0; g < ngroups; g++)
        scatter_with(g, put_copy);
    double t0 = cpu_now();
    for (uint32_t d = 0; d < NDEST; d++) {
        size_t at = 0;
        for (size_t g = 0; g < ngroups; g++) {
            const buf *b = &entries[g * NDEST + d];
            if (b->len == 0) /* a buffer never written has no data */
                continue;
            memcpy(piece.data + at, b->data, b->len);
            at += b->len;
        }
        piece_done(3, d, at);
    }
    *join += cpu_now() - t0;
}

static buf group_piece[MAXG];
static size_t *group_at; /* [g * (NDEST + 1) + d]: where d's rows start in group_piece[g] */

static void way_grouped(double *join)
{
    for (size_t g = 0; g < ngroups; g++) {
        scatter_entries(g);
        size_t first, end, total = 0;
        group_rows(g, &first, &end);
        for (size_t i = first; i < end; i++)
            total += row_len[i] + 1;
        group_piece[g].len = 0;
        reserve(&group_piece[g], total);
        char *at = group_piece[g].data;
        for (uint32_t d = 0; d < NDEST; d++) {
            group_at[g * (NDEST + 1) + d] = (size_t)(at - group_piece[g].data);
            at = gather_entries(g, d, at);
        }
        group_at[g * (NDEST + 1) + NDEST] = (size_t)(at - group_piece[g].data);
    }
    double t0 = cpu_now();
    for (uint32_t d = 0; d < NDEST; d++) {
        size_t at = 0;
        for (size_t g = 0; g < ngroups; g++) {
            size_t from = group_at[g * (NDEST + 1) + d], len = group_at[g * (NDEST + 1) + d + 1] - from;
            memcpy(piece.data + at, group_piece[g].data + from, len);
            at += len;
        }
        piece_done(2, d, at);
    }
    *join += cpu_now() - t0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Reads the first mb MiB of whole lines and places each on the ring. */
static void load(const char *path, size_t mb)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(2);
    }
    batch = xmalloc(mb << 20);
    nbytes = fread(batch, 1, mb << 20, f);
    fclose(f);
    while (nbytes && batch[nbytes - 1] != '\n')
        nbytes--;
    size_t cap = nbytes / 8 + 1;
    row_off = xmalloc(cap * 4), row_len = xmalloc(cap * 4), row_dest = xmalloc(cap * 4);
    rs_ring_opts o;
    rs_nodes n;
    rs_error err = {0};
    rs_ring_opts_default(&o, RS_SCHEME_RING);
    rs_ring *r = rs_nodes_init_count(&n, NDEST, &err) == 0 ? rs_ring_build(&o, &n, &err) : NULL;
    if (!r) {
        fprintf(stderr, "bench_rowmove: %s\n", err.msg);
        exit(2);
    }
    for (size_t off = 0; off < nbytes && nrows < cap;) {
        const char *nl = memchr(batch + off, '\n', nbytes - off);
        size_t len = (size_t)(nl - (batch + off));
        const char *comma = memchr(batch + off, ',', len);
        row_off[nrows] = (uint32_t)off;
        row_len[nrows] = (uint32_t)len;
        row_dest[nrows] = rs_ring_locate(r, batch + off, comma ? (size_t)(comma - (batch + off)) : len);
        nrows++;
        off += len + 1;
    }
    rs_ring_free(r);
    rs_nodes_free(&n);
}

int main(int argc, char **argv)
{
    size_t mb = 64;
    int runs = 5;
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--mb") && i + 1 < argc)
            mb = strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--ahead") && i + 1 < argc)
            ahead_across = strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--groups") && i + 1 < argc)
            ngroups = strtoul(argv[++i], NULL, 10);
        else if (argv[i][0] != '-' && !path)
            path = argv[i];
        else {
            fprintf(stderr, "usage: bench_rowmove [--mb N] [--runs N] [--groups G] [--ahead N] file.csv\n");
            return 2;
        }
    }
    if (!path || mb < 1 || mb > 1024 || runs < 1 || runs > 31 || ngroups < 1 || ngroups > MAXG || ahead_across < 1 ||
        ahead_across > 256) {
        fprintf(stderr,
                "usage: bench_rowmove [--mb N (1-1024)] [--runs N (1-31)] [--groups G (1-%d)] [--ahead N (1-256)] "
                "file.csv\n",
                MAXG);
        return 2;
    }
    load(path, mb);
    if (!nrows) {
        fprintf(stderr, "bench_rowmove: %s: no whole line in its first %zu MiB\n", path, mb);
        return 2;
    }
    reserve(&piece, nbytes + nrows);
    /* aligned_alloc wants a size that is a multiple of the alignment */
    pool_cap = (2 * (nbytes / ngroups + nrows / ngroups) + (size_t)NDEST * CHUNK + 63) & ~(size_t)63;
    for (size_t g = 0; g < ngroups; g++)
        if (!(pools[g] = aligned_alloc(64, pool_cap))) {
            fprintf(stderr, "bench_rowmove: out of memory\n");
            return 2;
        }
    group_at = xmalloc(ngroups * (NDEST + 1) * sizeof *group_at);
    size_t flood_bytes = (size_t)256 << 20;
    char *flood = xmalloc(flood_bytes);

    struct {
        const char *name;
        void (*fn)(double *join);
    } ways[] = {{"entries (the pipeline's)", way_entries},
                {"staged (copied at the scatter, non-temporal)", way_staged},
                {"grouped (gathered per group, then joined)", way_grouped},
                {"inline (copied at the scatter, then joined)", way_inline},
                {"across (entries, prefetched across groups)", way_across}};
    enum { NWAYS = sizeof ways / sizeof *ways };
    double t[NWAYS][32], j[NWAYS][32];
    for (int w = 0; w < NWAYS; w++) { /* warm-up: buffers grown, pieces checked */
        double dummy = 0;
        ways[w].fn(&dummy);
    }
    for (int r = 0; r < runs; r++)
        for (int w = 0; w < NWAYS; w++) {
            memset(flood, r + w, flood_bytes);
            j[w][r] = 0;
            double t0 = cpu_now();
            ways[w].fn(&j[w][r]);
            t[w][r] = cpu_now() - t0;
        }
    double per10m = 1e7 / (double)nrows;
    printf("%zu rows, %.1f MiB, %zu groups, %d destinations; CPU s per 10 M rows, median of %d runs\n\n", nrows,
           (double)nbytes / (1 << 20), ngroups, NDEST, runs);
    printf("| way | scatter + gather | of which the gather or join |\n|---|---:|---:|\n");
    for (int w = 0; w < NWAYS; w++) {
        qsort(t[w], (size_t)runs, sizeof(double), cmp_double);
        qsort(j[w], (size_t)runs, sizeof(double), cmp_double);
        printf("| %s | %.3f | %.3f |\n", ways[w].name, t[w][runs / 2] * per10m, j[w][runs / 2] * per10m);
    }
    return 0;
}
