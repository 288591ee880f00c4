/* ringshard/keyidx.h - the key index of a bucket file: what `dedup
 * --append` checks new keys against instead of reading the history's rows.
 *
 * A key index lists the keys of one data file (a base file or a segment of
 * a generation, docs/format-generations.md) - with --by row, its rows - ordered by a
 * 64-bit FINGERPRINT (MurmurHash3_x64_128 of the key, seed RS_KEYIDX_SEED,
 * first word), with the key's exact bytes: equality is decided on the
 * key's bytes, never on the fingerprint alone.
 *
 * Version 2 (RSKEYIX2, written by this version) is one sorted run per file,
 * in the shape of an LSM table: a blocked Bloom filter, a range table and
 * compressed key chunks. A lookup costs what the keys looked up cost, not
 * what the index holds: one 64-byte filter line per key (a key the file
 * does not hold stops there, but for ~1% of them), and for a key the
 * filter passes, two table entries and the one small chunk that can hold
 * it. The full layout is in docs/format-keyidx.md; in short (little-endian):
 *
 *   header, 128 bytes:
 *     0  8  magic "RSKEYIX2"         56  8  filter lines L
 *     8  4  version (2)              64  8  ranges R
 *    12  4  flags (bit 0: by row)    72  8  filter offset (128)
 *    16  8  entries n                80  8  range table offset (128 + 64 L)
 *    24  4  fingerprint bits         88  8  chunks offset (table + 12 (R + 1))
 *    28  4  keys a range holds (128) 96  8  chunks bytes
 *    32  8  rows  \  of the file     104 8  key bytes (sum of key lengths)
 *    40  8  bytes  } it indexes      112 8  chunks
 *    48  4  CRC-32 of its data       120 4  zero
 *    52  4  filter bits a key (10)   124 4  CRC-32 of bytes 0-123
 *   L filter lines of 64 bytes: 480 bits, then the CRC-32 of those 60 bytes;
 *     a key sets 6 bits of line (fp * L) >> bits;
 *   R + 1 range table entries of 12 bytes: the offset in the chunks region
 *     of range r's first chunk (entry R: the region's size), and the CRC-32
 *     of r and that offset (8 bytes each); range r holds the keys whose
 *     fingerprint gives (fp * R) >> bits = r, in fingerprint order, ties in
 *     the file's row order;
 *   the chunks, range after range, each at most 256 keys and 64 KiB of them
 *     (but for one longer key): a 24-byte header (CRC-32 of bytes 4-23 and
 *     the payload, payload bytes, raw bytes, keys, the payload's kind,
 *     the last key's fingerprint) and the payload: the keys PACKED when they
 *     share a length and at most 64 byte values (each byte a k-bit number in
 *     the chunk's alphabet), else raw deflate (or stored) of each key's
 *     length (LEB128) followed by the keys.
 *
 * Version 1 (RSKEYIX1) indexes, written by ringshard 0.1, are still read
 * (their layout is in docs/format-keyidx.md); `compact` rewrites them as version 2.
 * Every index file is written to a temporary and renamed into place by its
 * generation's publication; its size and CRC-32 are in the manifest; verify
 * checks its entries against the rows of the file it indexes. */
#ifndef RINGSHARD_KEYIDX_H
#define RINGSHARD_KEYIDX_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "ringshard/buf.h"
#include "ringshard/error.h"

#define RS_KEYIDX_MAGIC "RSKEYIX2"
#define RS_KEYIDX_HEADER 128
#define RS_KEYIDX_RANGE_KEYS 128u     /* keys a range holds on average */
#define RS_KEYIDX_CHUNK_KEYS 256u     /* at most, in one chunk */
#define RS_KEYIDX_CHUNK_RAW 65536u    /* key bytes in one chunk, at most (but for one longer key) */
#define RS_KEYIDX_FILTER_BITS 10u     /* filter bits a key: ~1% false positives */
#define RS_KEYIDX_LINE 64u            /* a filter line: 480 bits and a CRC-32 */
#define RS_KEYIDX_ENTRY 12u           /* a range table entry: an offset and a CRC-32 */
/* version 1 */
#define RS_KEYIDX1_MAGIC "RSKEYIX1"
#define RS_KEYIDX1_HEADER 64
#define RS_KEYIDX1_RUN_HEADER 32
#define RS_KEYIDX1_BLOCK 512u         /* entries per fence */
#define RS_KEYIDX_SEED 0x6b657973u    /* "keys" */
#define RS_KEYIDX_BY_ROW 1u

/* The fingerprint of a key (the test knob RINGSHARD_TEST_FP_BITS=N keeps
 * its low N bits, 1 to 64, so that collisions can be forced). */
uint64_t rs_keyidx_fp(const void *key, size_t len);

/* What an index describes about the file it indexes. */
typedef struct {
    uint64_t rows, bytes;
    uint32_t crc32;
    uint32_t flags;     /* RS_KEYIDX_BY_ROW */
} rs_keyidx_of;

/* ------------------------------------------------------------ writing */

/* A writer sorts what fits in its memory (RS_KEYIDX_WRITER_MEMORY, or
 * rs_keyidx_set_memory's) and spills sorted runs to an unnamed temporary
 * file beside the index, merged when the index is finished (as many at
 * once as the memory holds, RS_KEYIDX_FAN_IN at most; a pass more for each
 * factor of it). The sort and the merge do not overlap: the pending keys
 * are freed before the merge. The index's bytes depend on the keys alone,
 * never on the memory or the thread count. */
#define RS_KEYIDX_WRITER_MEMORY ((uint64_t)16 << 20)
#define RS_KEYIDX_FAN_IN 32u
/* what the file's three regions and the deflate state take; and each
 * sorted run a merge reads, at most */
#define RS_KEYIDX_EMIT_MEMORY ((uint64_t)1 << 20)
#define RS_KEYIDX_SOURCE_MEMORY ((uint64_t)192 << 10)

struct rs_keyidx_spill;

/* Builds an index in bounded memory: keys are added in the file's row
 * order. */
typedef struct {
    int fd;
    char *path;
    rs_buf heap;           /* the pending keys */
    uint64_t *ent;         /* [n] pending (fingerprint, heap offset, length) triples */
    size_t n, cap;
    uint64_t entries;      /* added in all */
    uint64_t memory;       /* what the pending keys may take */
    unsigned fan_in;       /* sorted runs merged at once */
    struct rs_keyidx_spill *spill;  /* the sorted runs spilled, when any */
    int failed;            /* errno of the first failure */
} rs_keyidx_writer;

/* A test hook: the pending keys' memory and the merge's fan-in set below
 * rs_keyidx_set_memory's floor, so that tests cover many merge passes. */
void rs_keyidx_set_memory_for_tests(rs_keyidx_writer *w, uint64_t keys_bytes, unsigned fan_in);

/* Creates (truncates) path for an index. 0, or -1 with err (RS_EXIT_IO). */
int rs_keyidx_create(rs_keyidx_writer *w, const char *path, rs_error *err);

/* The memory w may use in all (by default RS_KEYIDX_WRITER_MEMORY): its
 * pending keys, or, when it finishes, the runs it merges at once, besides
 * RS_KEYIDX_EMIT_MEMORY; 2 MiB at least. */
void rs_keyidx_set_memory(rs_keyidx_writer *w, uint64_t bytes);

/* Adds the next row's key. 0, or -1 with err (out of memory, a write
 * failure). */
int rs_keyidx_add(rs_keyidx_writer *w, const void *key, size_t len, rs_error *err);

/* Sorts (merging what was spilled) and writes the index, with its header
 * (of: the file it indexes), and closes the file; *file_bytes and *crc32 get the index file's size
 * and CRC-32 (what the manifest records). A writer that failed reports its
 * first failure. 0 or -1 with err; w is released either way. */
int rs_keyidx_finish(rs_keyidx_writer *w, const rs_keyidx_of *of, uint64_t *file_bytes, uint32_t *crc32,
                     rs_error *err);

/* Releases a writer without finishing it and removes its file. */
void rs_keyidx_abort(rs_keyidx_writer *w);

/* Writes the index of files concatenated (compact): one version-2 index of
 * the keys of indexes names[0..n) under dirfd (paths for messages; version
 * 1 or 2), opened with rs_keyidx_open against want[k] and sizes[k], merged
 * in one streaming pass (or more, beyond the sorted runs `memory` merges
 * at once; 0: RS_KEYIDX_WRITER_MEMORY), behind a header saying `of` (the merged
 * file); byte-identical to the index rs_keyidx_add would build from the
 * merged file's rows. *file_bytes and *crc32 get the new index's size and
 * CRC-32. 0, or -1 with err (the file removed). */
int rs_keyidx_merge(const char *out, int dirfd, const char *const *names, const char *const *paths,
                    const rs_keyidx_of *want, const uint64_t *sizes, size_t n, const rs_keyidx_of *of,
                    uint64_t memory, uint64_t *file_bytes, uint32_t *crc32, rs_error *err);

/* ------------------------------------------------------------ reading */

struct rs_keyidx_v2;

/* An index opened for lookups. */
typedef struct {
    int fd;
    int version;           /* 1 or 2 */
    struct rs_keyidx_v2 *v2;  /* version 2: its geometry and buffers */
    char *path;            /* for messages */
    rs_keyidx_of of;
    uint64_t entries;
    uint32_t runs, fp_bits;  /* runs: version 1 */
    uint64_t size;
    uint64_t bytes_read;   /* what the lookups read from it */
    uint64_t keys_confirmed;  /* probes whose exact key the lookups found in it */
    uint64_t confirm_bytes;   /* of bytes_read, what was read to compare exact keys */
    uint64_t filter_bytes;    /* version 2, once looked up in: the size of its filter */
    uint64_t filter_passes;   /* version 2: keys (distinct fingerprints) a filter line passed, each lookup's */
} rs_keyidx;

/* Opens index `name` under dirfd (named path in messages) and checks its
 * header: magic, version, header CRC, and that it indexes what `want`
 * says (rows, data bytes, CRC-32, by row or by key) and is size bytes
 * long. RS_EXIT_DATA naming the file and what differs. */
int rs_keyidx_open(rs_keyidx *x, int dirfd, const char *name, const char *path, const rs_keyidx_of *want,
                   uint64_t size, rs_error *err);

void rs_keyidx_close(rs_keyidx *x);

/* The keys looked up: sorted by fingerprint (rs_keyidx_probe_sort). */
typedef struct {
    uint64_t fp;
    const char *key;
    uint32_t len;
    uint32_t id;           /* the caller's: which key this is */
} rs_keyidx_probe;

void rs_keyidx_probe_sort(rs_keyidx_probe *p, size_t n);

/* Looks up p[0..n) (sorted) in x: for every probe whose key the index
 * holds (equal bytes), calls hit(ctx, id). Version 2 reads each probe's
 * filter line (at most one line a key: crowded lines in one read) and, for
 * a probe the filter passes, its range's table entries and chunks (adjacent
 * ranges in one read), without readahead; version 1 its fences, the
 * blocks of fingerprints that can hold a probe's and the exact key of each
 * fingerprint matching one. What it reads is counted in x->bytes_read, the
 * part that compares exact keys in x->confirm_bytes. Every block read is
 * checked (CRC-32, order, bounds) before it is used. 0, or -1 with err
 * (RS_EXIT_IO; RS_EXIT_DATA naming the file and the damaged block). */
int rs_keyidx_lookup(rs_keyidx *x, const rs_keyidx_probe *p, size_t n, void (*hit)(void *ctx, uint32_t id),
                     void *ctx, rs_error *err);

/* Reads every entry of x in file order, calling each(ctx, fp, key, len)
 * (verify: the keys against the file's rows). Checks everything the file
 * holds as it goes: every CRC-32, the order, each key in its range and in
 * its filter line, the counts against the header. 0, or -1 with err
 * (RS_EXIT_DATA naming the file and what is wrong). */
int rs_keyidx_scan(rs_keyidx *x, int (*each)(void *ctx, uint64_t fp, const char *key, size_t len), void *ctx,
                   rs_error *err);

#endif
