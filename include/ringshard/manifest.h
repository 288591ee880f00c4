/* ringshard/manifest.h - DIR/manifest.json of a bucket directory (bucket,
 * dedup) or of a move directory (plan --emit): what was written, with which
 * ring and options, so that plan, verify and stats can work from it.
 * Schema: docs/manifest.md.
 * Versioned by "schema": 1. */
#ifndef RINGSHARD_MANIFEST_H
#define RINGSHARD_MANIFEST_H

#include <stddef.h>
#include <stdint.h>
#include "ringshard/error.h"

typedef struct {
    char *path;            /* as given on the command line */
    uint64_t size, rows, bytes, rejected, blank_lines;
    uint64_t zero_padding;  /* "zero_padding_bytes" (optional when read: 0) */
} rs_manifest_input;

typedef struct {
    char *file;            /* file name inside the directory */
    char *node;            /* bucket: the node; moves: NULL */
    char *from, *to;       /* moves: the (from, to) nodes; buckets: NULL */
    uint64_t rows;         /* data rows */
    uint64_t bytes;        /* uncompressed data bytes (rows + LF), header excluded */
    uint64_t file_bytes;   /* size of the file on disk */
    uint32_t crc32;        /* CRC-32 of the uncompressed data bytes (header excluded) */
    uint32_t wave;         /* moves with --batch-bytes: wave number (1-based); else 0 */
} rs_manifest_file;

typedef struct {
    int schema;                 /* 1 */
    char *kind;                 /* "buckets" or "moves" */
    char *tool_version;
    char *ring_description;     /* the canonical description (ring.h) */
    char *ring_fingerprint;
    char *new_ring_description; /* moves: the new ring; else NULL */
    char *new_ring_fingerprint;
    /* options that shape the files */
    char *key;                  /* the --key as given; NULL: none (column 1 by position) */
    char delimiter;
    int header;                 /* files start with the header line */
    char *header_line;          /* without line end; NULL if no header */
    int compress;               /* RS_COMPRESS_*: 1 gzip, 2 zstd, 0 plain */
    int level;
    int keys_only;
    size_t ninputs;
    rs_manifest_input *inputs;
    size_t nfiles;
    rs_manifest_file *files;
    uint64_t rows, bytes, rejected;
    double seconds;
} rs_manifest;

/* Writes m as JSON to path (pretty-printed, keys in a fixed order;
 * "schema" is always written as 1; tool_version NULL writes the version of
 * this build). kind "moves" selects from/to/wave and new_ring, anything
 * else node. Write errors are RS_EXIT_IO naming path. */
int rs_manifest_write(const rs_manifest *m, const char *path, rs_error *err);

/* Reads path into m. Unknown members are ignored; a missing required member,
 * a schema other than 1 or malformed JSON is RS_EXIT_DATA naming the file
 * (and byte offset for syntax errors). Optional members: "tool", "seconds",
 * files[].wave, files[].crc32_hex (checked against crc32 when present) and
 * "new_ring" for buckets. A file that cannot be read is RS_EXIT_IO. On
 * failure m is left empty (zeroed). */
int rs_manifest_read(rs_manifest *m, const char *path, rs_error *err);

/* rs_manifest_read of the file `name` relative to the directory descriptor
 * dirfd (openat(2); AT_FDCWD: the working directory), named `path` in
 * messages (NULL: name). With digest, it receives MurmurHash3_x64_128
 * (seed 0) of the bytes read: what tells two generations of a directory
 * apart (MPI ranks compare it, see rs_bucketdir). */
int rs_manifest_readat(rs_manifest *m, int dirfd, const char *name, const char *path, uint64_t digest[2],
                       rs_error *err);

/* Parses a manifest held in memory (text[0..len), named `path` in
 * messages), with the rules of rs_manifest_read. */
int rs_manifest_parse(rs_manifest *m, const char *text, size_t len, const char *path, rs_error *err);

/* Frees every string and array of m (all must be malloc'd, as
 * rs_manifest_read makes them) and zeroes m. */
void rs_manifest_free(rs_manifest *m);

#endif
