/* Inside the key index (ringshard/keyidx.h): what its files share. */
#ifndef RS_KEYIDX_IMPL_H
#define RS_KEYIDX_IMPL_H

#include <stdint.h>
#include "ringshard/keyidx.h"

static inline void kx_put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static inline void kx_put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint32_t kx_get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t kx_get64(const unsigned char *p)
{
    return (uint64_t)kx_get32(p) | (uint64_t)kx_get32(p + 4) << 32;
}

/* A chunk's payload (docs/format-keyidx.md): raw deflate of the keys' lengths and
 * the keys, the same stored, or the keys PACKED: when they share a length
 * L and at most 64 byte values, each byte as its k-bit number in the
 * chunk's alphabet, k the bits that number the alphabet (1 at least), a
 * key padded to a whole byte: a lookup compares keys without decoding
 * anything. */
enum { KX_DEFLATED = 0, KX_STORED = 1, KX_PACKED = 2, KX_ALPHABET_MAX = 64 };

static inline unsigned kx_pack_bits(unsigned a)
{
    unsigned k = 1;
    while ((1u << k) < a)
        k++;
    return k;
}

/* The width of this run's fingerprints (64 but under the test knob). */
uint32_t kx_fp_bits(void);

/* Where a fingerprint of `bits` bits falls among `n` equal parts of the
 * fingerprint space: monotone in fp, so that a sorted run fills its filter
 * lines and ranges in order. */
static inline uint64_t kx_part(uint64_t fp, uint64_t n, uint32_t bits)
{
    return (uint64_t)(((unsigned __int128)fp * n) >> bits);
}

/* The CRC-32 of range table entry r (r and its offset, 8 bytes each). */
uint32_t kx_entry_crc(uint64_t r, uint64_t off);

/* Filter geometry for n keys: lines and ranges (at least one of each). */
uint64_t kx_lines_for(uint64_t n);
uint64_t kx_ranges_for(uint64_t n);

/* Sets (or tests: 1 when all set) fp's bits in a 480-bit filter line. */
void kx_line_set(unsigned char *line, uint64_t fp);
int kx_line_has(const unsigned char *line, uint64_t fp);

/* Damage found in index x: RS_EXIT_DATA naming the file. */
int kx_bad(const rs_keyidx *x, rs_error *err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* pread of exactly n bytes at off, counted in x->bytes_read. */
int kx_read_at(rs_keyidx *x, void *buf, size_t n, uint64_t off, rs_error *err);

/* A forward reader of one region [pos, end) of x's file through a buffer
 * of cap bytes (allocated at the first read when buf is NULL: the caller
 * frees it then). */
typedef struct {
    uint64_t pos, end;
    unsigned char *buf;
    size_t len, at, cap;
} kx_stream;

/* The next n bytes of s into out; RS_EXIT_DATA when the region ends
 * first. 0 or -1 with err. */
int kx_sget(rs_keyidx *x, kx_stream *s, void *out, size_t n, rs_error *err);

/* A sorted stream of entries: an in-memory run, a spilled run, a run of a
 * version-1 index, a version-2 index. Ties between sources go to the
 * lower-numbered one, which holds the earlier rows. */
typedef struct kx_source kx_source;
struct kx_source {
    /* 1: the next entry is in fp, key, len (valid until the next call);
     * 0: the end; -1: err */
    int (*next)(kx_source *s, rs_error *err);
    void (*release)(kx_source *s);  /* frees what the source holds */
    uint64_t fp;
    const char *key;
    size_t len;
    void *impl;
};

/* The sources of an opened index, appended to *srcs (grown): one per run
 * of a version-1 index, one for a version-2 index. 0 or -1 with err. */
int kx_v1_sources(rs_keyidx *x, kx_source **srcs, size_t *n, size_t *cap, rs_error *err);
int kx_v2_source(rs_keyidx *x, kx_source **srcs, size_t *n, size_t *cap, rs_error *err);

/* Room for one more source in *srcs. 0 or -1 (out of memory). */
int kx_sources_grow(kx_source **srcs, size_t n, size_t *cap);

/* Writes the version-2 index of the entries of srcs[0..n) (n sources
 * merged, `entries` in all) to w's file, with the header saying `of`; the
 * runs w spilled take part as further sources. Frees the sources. */
int kx_write_sorted(rs_keyidx_writer *w, kx_source *srcs, size_t n, uint64_t entries, const rs_keyidx_of *of,
                    uint64_t *file_bytes, uint32_t *crc32, rs_error *err);

/* Version-specific opening, lookups and scans (keyidx_v1.c, keyidx_v2.c). */
int kx_v1_open(rs_keyidx *x, const unsigned char *h, rs_error *err);
int kx_v2_open(rs_keyidx *x, const unsigned char *h, rs_error *err);
void kx_v2_close(rs_keyidx *x);
int kx_v1_lookup(rs_keyidx *x, const rs_keyidx_probe *p, size_t n, void (*hit)(void *, uint32_t), void *ctx,
                 rs_error *err);
int kx_v2_lookup(rs_keyidx *x, const rs_keyidx_probe *p, size_t n, void (*hit)(void *, uint32_t), void *ctx,
                 rs_error *err);
int kx_v1_scan(rs_keyidx *x, int (*each)(void *, uint64_t, const char *, size_t), void *ctx, rs_error *err);
int kx_v2_scan(rs_keyidx *x, int (*each)(void *, uint64_t, const char *, size_t), void *ctx, rs_error *err);

/* The probes p[i..n) whose fingerprint is fp and whose key is k: hit, and
 * counted. */
uint64_t kx_hits(const rs_keyidx_probe *p, size_t i, size_t n, uint64_t fp, const char *k, size_t klen,
                 void (*hit)(void *, uint32_t), void *ctx);

#endif
