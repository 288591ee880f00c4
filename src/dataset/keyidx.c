/* Key indexes (ringshard/keyidx.h): fingerprints, opening either version,
 * and the calls that dispatch to the version's reader.
 *
 * The files by job: keyidx_write.c sorts and writes version 2 (a writer's
 * spilled runs and compact's merge take the same path), keyidx_v2.c reads
 * it, keyidx_v1.c reads the version-1 indexes of ringshard 0.1.
 *
 * Why one sorted run per file with a filter and small chunks, and not the
 * sorted runs of 16,384 keys version 1 wrote: a day's new keys are a few
 * thousand against a history of millions a bucket; looked up in runs that
 * small, they touched every block of every run, so an append read every
 * fingerprint the history held. One run per file, cut into ranges of the
 * fingerprint space, is found by arithmetic (no fences to read); its
 * filter answers "not here" for ~99% of the keys a file does not hold
 * from one 64-byte line; the keys themselves, packed or deflated, take about what
 * their entropy does, which keeps the index a third of the data's size. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "dataset/keyidx_impl.h"
#include "ringshard/deflate.h"
#include "ringshard/hash.h"

/* ---------------------------------------------------------- fingerprint */

static uint64_t fp_mask(void)
{
    static uint64_t mask;
    static int ready;
    if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
        const char *v = getenv("RINGSHARD_TEST_FP_BITS");   /* testing knob: forced collisions */
        long bits = v && *v ? strtol(v, NULL, 10) : 64;
        uint64_t m = bits >= 64 || bits < 1 ? UINT64_MAX : (((uint64_t)1 << bits) - 1);
        __atomic_store_n(&mask, m, __ATOMIC_RELAXED);
        __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    }
    return __atomic_load_n(&mask, __ATOMIC_RELAXED);
}

uint32_t kx_fp_bits(void)
{
    uint64_t m = fp_mask();
    uint32_t b = 0;
    while (b < 64 && (m >> b) & 1)
        b++;
    return b;
}

uint64_t rs_keyidx_fp(const void *key, size_t len)
{
    uint64_t h[2];
    rs_murmur3_x64_128(key, len, RS_KEYIDX_SEED, h);
    return h[0] & fp_mask();
}

/* ------------------------------------------------------------- geometry */

uint64_t kx_lines_for(uint64_t n)
{
    uint64_t bits = n * RS_KEYIDX_FILTER_BITS, per = 8 * (RS_KEYIDX_LINE - 4);
    return bits / per + 1;
}

uint32_t kx_entry_crc(uint64_t r, uint64_t off)
{
    unsigned char b[16];
    kx_put64(b, r);
    kx_put64(b + 8, off);
    return rs_crc32(0, b, sizeof b);
}

uint64_t kx_ranges_for(uint64_t n)
{
    return n / RS_KEYIDX_RANGE_KEYS + 1;
}

/* splitmix64's finaliser: the bits a key sets in its line must not be the
 * fingerprint bits that chose the line. */
static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The 6 bit positions of fp in a 480-bit line: 16 bits of the mixed
 * fingerprint each, scaled to 480 (k = 6 is RocksDB's choice for a
 * cache-line Bloom filter of 10 bits a key). */
static void line_bits(uint64_t fp, unsigned *pos)
{
    uint64_t a = mix(fp), b = mix(a ^ 0x9e3779b97f4a7c15ull);
    uint64_t w[2] = {a, b};
    for (int i = 0; i < 6; i++)
        pos[i] = (unsigned)((((w[i / 4] >> (16 * (i % 4))) & 0xffff) * 480) >> 16);
}

void kx_line_set(unsigned char *line, uint64_t fp)
{
    unsigned pos[6];
    line_bits(fp, pos);
    for (int i = 0; i < 6; i++)
        line[pos[i] >> 3] |= (unsigned char)(1u << (pos[i] & 7));
}

int kx_line_has(const unsigned char *line, uint64_t fp)
{
    unsigned pos[6];
    line_bits(fp, pos);
    for (int i = 0; i < 6; i++)
        if (!(line[pos[i] >> 3] & (1u << (pos[i] & 7))))
            return 0;
    return 1;
}

/* -------------------------------------------------------------- reading */

int kx_bad(const rs_keyidx *x, rs_error *err, const char *fmt, ...)
{
    char what[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return rs_error_set(err, RS_EXIT_DATA, "%s: key index damaged: %s", x->path, what);
}

int kx_read_at(rs_keyidx *x, void *buf, size_t n, uint64_t off, rs_error *err)
{
    size_t got = 0;
    while (got < n) {
        ssize_t k = pread(x->fd, (char *)buf + got, n - got, (off_t)(off + got));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return k < 0 ? rs_error_set(err, RS_EXIT_IO, "%s: read error: %s", x->path, strerror(errno))
                         : kx_bad(x, err, "ends early at byte %llu (cut short?)", (unsigned long long)(off + got));
        got += (size_t)k;
    }
    x->bytes_read += n;
    return 0;
}

int kx_sget(rs_keyidx *x, kx_stream *s, void *out, size_t n, rs_error *err)
{
    unsigned char *o = out;
    while (n) {
        if (s->at == s->len) {
            uint64_t left = s->end - s->pos;
            if (left == 0)
                return kx_bad(x, err, "a region ends early (cut short?)");
            if (!s->buf && !(s->buf = malloc(s->cap)))
                return rs_error_set(err, RS_EXIT_IO, "out of memory");
            s->len = left < s->cap ? (size_t)left : s->cap;
            if (kx_read_at(x, s->buf, s->len, s->pos, err) != 0)
                return -1;
            s->pos += s->len;
            s->at = 0;
        }
        size_t k = s->len - s->at < n ? s->len - s->at : n;
        memcpy(o, s->buf + s->at, k);
        s->at += k, o += k, n -= k;
    }
    return 0;
}

/* What the header says against what the manifest says. */
static int check_want(rs_keyidx *x, const rs_keyidx_of *want, rs_error *err)
{
    if (want && (x->of.rows != want->rows || x->of.bytes != want->bytes || x->of.crc32 != want->crc32 ||
                 x->of.flags != want->flags || x->entries != want->rows))
        return kx_bad(x, err, "%s", x->of.flags != want->flags
                                       ? "holds the keys of another mode (by key / by row)"
                                       : "describes another file than the manifest's (rows, bytes, CRC-32)");
    if (x->fp_bits != kx_fp_bits())   /* not damage: the test knob of another run */
        return rs_error_set(err, RS_EXIT_VERIFY, "%s: key index fingerprints of another width than this run's "
                            "(RINGSHARD_TEST_FP_BITS)", x->path);
    return 0;
}

static int open_header(rs_keyidx *x, const rs_keyidx_of *want, rs_error *err)
{
    unsigned char h[RS_KEYIDX_HEADER];
    if (x->size < RS_KEYIDX1_HEADER)
        return kx_bad(x, err, "shorter than its header");
    if (kx_read_at(x, h, RS_KEYIDX1_HEADER, 0, err) != 0)
        return -1;
    int r;
    if (memcmp(h, RS_KEYIDX1_MAGIC, 8) == 0) {
        r = kx_v1_open(x, h, err);
    } else if (memcmp(h, RS_KEYIDX_MAGIC, 8) == 0) {
        if (x->size < RS_KEYIDX_HEADER)
            return kx_bad(x, err, "shorter than its header");
        r = kx_read_at(x, h + RS_KEYIDX1_HEADER, RS_KEYIDX_HEADER - RS_KEYIDX1_HEADER, RS_KEYIDX1_HEADER, err);
        if (r == 0)
            r = kx_v2_open(x, h, err);
    } else {
        return kx_bad(x, err, "header: not a key index (magic RSKEYIX1 or RSKEYIX2)");
    }
    return r != 0 ? -1 : check_want(x, want, err);
}

int rs_keyidx_open(rs_keyidx *x, int dirfd, const char *name, const char *path, const rs_keyidx_of *want,
                   uint64_t size, rs_error *err)
{
    memset(x, 0, sizeof *x);
    x->fd = -1;
    if (!(x->path = strdup(path)))
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    if ((x->fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC)) < 0) {
        rs_error_set(err, RS_EXIT_IO, "%s: cannot open: %s", path, strerror(errno));
        goto fail;
    }
    /* before the first read: a read with readahead on leaves a mark that
     * starts the kernel's asynchronous readahead when a later read reaches
     * it, whatever is advised afterwards, and lookups reading in file order
     * then pull in the whole file (measured: the whole index of every file,
     * cold). A lookup reads what it needs; compact's and verify's readers
     * ask for sequential reading themselves. */
    (void)posix_fadvise(x->fd, 0, 0, POSIX_FADV_RANDOM);
    struct stat st;
    if (fstat(x->fd, &st) != 0 || (uint64_t)st.st_size != size) {
        rs_error_set(err, RS_EXIT_DATA, "%s: key index of %llu bytes, the manifest says %llu", path,
                     (unsigned long long)st.st_size, (unsigned long long)size);
        goto fail;
    }
    x->size = size;
    if (open_header(x, want, err) != 0)
        goto fail;
    return 0;
fail:
    rs_keyidx_close(x);
    return -1;
}

void rs_keyidx_close(rs_keyidx *x)
{
    if (x->v2)
        kx_v2_close(x);
    if (x->fd >= 0)
        close(x->fd);
    free(x->path);
    memset(x, 0, sizeof *x);
    x->fd = -1;
}

static int cmp_probe(const void *a, const void *b)
{
    const rs_keyidx_probe *x = a, *y = b;
    if (x->fp != y->fp)
        return x->fp < y->fp ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

void rs_keyidx_probe_sort(rs_keyidx_probe *p, size_t n)
{
    qsort(p, n, sizeof *p, cmp_probe);
}

uint64_t kx_hits(const rs_keyidx_probe *p, size_t i, size_t n, uint64_t fp, const char *k, size_t klen,
                 void (*hit)(void *, uint32_t), void *ctx)
{
    uint64_t found = 0;
    for (; i < n && p[i].fp == fp; i++)
        if (p[i].len == klen && memcmp(p[i].key, k, klen) == 0) {
            hit(ctx, p[i].id);
            found++;
        }
    return found;
}

int rs_keyidx_lookup(rs_keyidx *x, const rs_keyidx_probe *p, size_t n, void (*hit)(void *ctx, uint32_t id),
                     void *ctx, rs_error *err)
{
    if (n == 0)
        return 0;
    return x->version == 2 ? kx_v2_lookup(x, p, n, hit, ctx, err) : kx_v1_lookup(x, p, n, hit, ctx, err);
}

int rs_keyidx_scan(rs_keyidx *x, int (*each)(void *ctx, uint64_t fp, const char *key, size_t len), void *ctx,
                   rs_error *err)
{
    return x->version == 2 ? kx_v2_scan(x, each, ctx, err) : kx_v1_scan(x, each, ctx, err);
}

/* ---------------------------------------------------------------- merge */

int kx_sources_grow(kx_source **srcs, size_t n, size_t *cap)
{
    if (n < *cap)
        return 0;
    size_t nc = *cap ? 2 * *cap : 16;
    kx_source *ns = realloc(*srcs, nc * sizeof *ns);
    if (!ns)
        return -1;
    *srcs = ns;
    *cap = nc;
    return 0;
}

int rs_keyidx_merge(const char *out, int dirfd, const char *const *names, const char *const *paths,
                    const rs_keyidx_of *want, const uint64_t *sizes, size_t n, const rs_keyidx_of *of,
                    uint64_t memory, uint64_t *file_bytes, uint32_t *crc32, rs_error *err)
{
    rs_keyidx_writer w;
    rs_keyidx *x = calloc(n + 1, sizeof *x);
    kx_source *srcs = NULL;
    size_t nsrc = 0, cap = 0, opened = 0;
    uint64_t entries = 0;
    if (!x)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    if (rs_keyidx_create(&w, out, err) != 0) {
        free(x);
        return -1;
    }
    if (memory)
        rs_keyidx_set_memory(&w, memory);
    int rc = 0;
    for (; rc == 0 && opened < n; opened++) {
        if ((rc = rs_keyidx_open(&x[opened], dirfd, names[opened], paths[opened], &want[opened], sizes[opened],
                                 err)) != 0)
            break;
        entries += x[opened].entries;
        rc = x[opened].version == 2 ? kx_v2_source(&x[opened], &srcs, &nsrc, &cap, err)
                                    : kx_v1_sources(&x[opened], &srcs, &nsrc, &cap, err);
    }
    if (rc == 0) {
        rc = kx_write_sorted(&w, srcs, nsrc, entries, of, file_bytes, crc32, err);
    } else {
        for (size_t k = 0; k < nsrc; k++)
            srcs[k].release(&srcs[k]);
        rs_keyidx_abort(&w);
    }
    for (size_t k = 0; k < opened; k++)
        rs_keyidx_close(&x[k]);
    free(srcs);
    free(x);
    return rc;
}
