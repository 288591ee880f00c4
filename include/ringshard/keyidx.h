/* ringshard/keyidx.h - the key index of a bucket file: what `dedup
 * --append` checks new keys against instead of reading the history's rows.
 *
 * A key index lists the keys of one data file (a base file or a segment of
 * a generation, docs/format.md) - with --by row, its rows - each with a
 * 64-bit FINGERPRINT (MurmurHash3_x64_128 of the key, seed RS_KEYIDX_SEED,
 * first word), sorted by fingerprint, and the key's exact bytes. A lookup
 * reads the fingerprints (and only the blocks of them that can hold the
 * fingerprints looked for, found from a fence per block), then the exact
 * key of every fingerprint that matches: equality is decided on the key's
 * bytes, never on the fingerprint alone.
 *
 * File layout (all integers little-endian, unsigned):
 *
 *   header, 64 bytes:
 *     0  8  magic "RSKEYIX1"
 *     8  4  version (1)
 *    12  4  flags: bit 0 the keys are whole rows (dedup --by row)
 *    16  8  entries (the file's rows)
 *    24  4  fingerprint bits (64; fewer only under the test knob
 *           RINGSHARD_TEST_FP_BITS, which keeps the low bits: collisions)
 *    28  4  runs
 *    32  8  rows of the indexed file      \
 *    40  8  data bytes of the indexed file  } what it indexes, as its
 *    48  4  CRC-32 of the indexed file's data  manifest entry says
 *    52  4  zero
 *    56  4  CRC-32 of bytes 0-55
 *    60  4  zero
 *   then `runs` runs, each (a run holds at most RS_KEYIDX_RUN_KEYS keys and
 *   RS_KEYIDX_RUN_BYTES of them, cut in the file's row order):
 *     run header, 32 bytes: entries n, blocks b = ceil(n / 512), heap
 *       bytes h, zero
 *     b fences: the first fingerprint of each block of 512 entries
 *     n fingerprints, ascending (ties in the file's row order)
 *     n + 1 offsets into the heap: key i is heap[off[i], off[i+1])
 *     h heap bytes: the keys
 *
 * An index file is written to a temporary and renamed into place by its
 * generation's publication (it is a file of the generation's directory),
 * and its size and CRC-32 are in the manifest; verify checks its entries
 * against the rows of the file it indexes. */
#ifndef RINGSHARD_KEYIDX_H
#define RINGSHARD_KEYIDX_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "ringshard/buf.h"
#include "ringshard/error.h"

#define RS_KEYIDX_MAGIC "RSKEYIX1"
#define RS_KEYIDX_HEADER 64
#define RS_KEYIDX_RUN_HEADER 32
#define RS_KEYIDX_BLOCK 512u          /* entries per fence */
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

/* A run holds at most RS_KEYIDX_RUN_KEYS keys and RS_KEYIDX_RUN_BYTES of
 * them (a longer key alone): sizes of the data's, never of --memory or -j,
 * so that an index's bytes depend on its file alone. A writer holds one
 * pending run: at most RS_KEYIDX_WRITER_MEMORY (its keys, their entries
 * and the sort's copy of them), but for a single key longer than a run. */
#define RS_KEYIDX_RUN_KEYS 16384u
#define RS_KEYIDX_RUN_BYTES ((size_t)4 << 20)
#define RS_KEYIDX_WRITER_MEMORY ((uint64_t)5 << 20)

/* Builds an index in bounded memory: keys are added in the file's row
 * order and kept until a run is full, then sorted and written out. */
typedef struct {
    FILE *f;
    char *path;
    rs_buf heap;           /* the pending run's keys */
    uint64_t *ent;         /* [n] pending (fingerprint, heap offset, length) triples */
    size_t n, cap;
    uint64_t entries;      /* added in all */
    uint32_t runs;
    uint32_t crc;          /* CRC-32 of what was written after the header */
    uint64_t bytes;        /* bytes written after the header */
    int failed;            /* errno of the first failure */
} rs_keyidx_writer;

/* Creates (truncates) path for an index. 0, or -1 with err (RS_EXIT_IO). */
int rs_keyidx_create(rs_keyidx_writer *w, const char *path, rs_error *err);

/* Adds the next row's key. 0, or -1 with err (out of memory, a write
 * failure). */
int rs_keyidx_add(rs_keyidx_writer *w, const void *key, size_t len, rs_error *err);

/* Writes the last run and the header (of: the file it indexes), fsyncs
 * and closes the file; *file_bytes and *crc32 get the index file's size
 * and CRC-32 (what the manifest records). A writer that failed reports its
 * first failure. 0 or -1 with err; w is released either way. */
int rs_keyidx_finish(rs_keyidx_writer *w, const rs_keyidx_of *of, uint64_t *file_bytes, uint32_t *crc32,
                     rs_error *err);

/* Releases a writer without finishing it and removes its file. */
void rs_keyidx_abort(rs_keyidx_writer *w);

/* Writes the index of files concatenated (compact): the runs of indexes
 * names[0..n) under dirfd (paths for messages), opened with rs_keyidx_open
 * against want[k] and sizes[k], copied one after the other behind a new
 * header saying `of` (the merged file). *file_bytes and *crc32 get the new
 * index's size and CRC-32. 0, or -1 with err (the file removed). */
int rs_keyidx_concat(const char *out, int dirfd, const char *const *names, const char *const *paths,
                     const rs_keyidx_of *want, const uint64_t *sizes, size_t n, const rs_keyidx_of *of,
                     uint64_t *file_bytes, uint32_t *crc32, rs_error *err);

/* ------------------------------------------------------------ reading */

/* An index opened for lookups. */
typedef struct {
    int fd;
    char *path;            /* for messages */
    rs_keyidx_of of;
    uint64_t entries;
    uint32_t runs, fp_bits;
    uint64_t size;
    uint64_t bytes_read;   /* what the lookups read from it */
    uint64_t keys_confirmed;  /* probes whose exact key the lookups found in it */
    uint64_t confirm_bytes;   /* of bytes_read, what was read to compare exact keys */
} rs_keyidx;

/* Opens index `name` under dirfd (named path in messages) and checks its
 * header: magic, version, header CRC, and that it indexes what `want`
 * says (rows, data bytes, CRC-32, by row or by key) and is size bytes
 * long. RS_EXIT_VERIFY naming the file and what differs. */
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
 * holds (equal bytes), calls hit(ctx, id). Reads the fences, the blocks of
 * fingerprints that can hold a probe's, and the exact key of every
 * fingerprint that matches one (counted in x->bytes_read). 0, or -1 with
 * err (RS_EXIT_IO; RS_EXIT_VERIFY for an index that is not sorted or
 * whose offsets leave its heap). */
int rs_keyidx_lookup(rs_keyidx *x, const rs_keyidx_probe *p, size_t n, void (*hit)(void *ctx, uint32_t id),
                     void *ctx, rs_error *err);

/* Reads every entry of x in file order (run after run), calling each(ctx,
 * fp, key, len) (verify: every entry's fingerprint against its key, the
 * runs sorted, the keys against the file's rows). 0, or -1 with err. */
int rs_keyidx_scan(rs_keyidx *x, int (*each)(void *ctx, uint64_t fp, const char *key, size_t len), void *ctx,
                   rs_error *err);

#endif
