/* ringshard/manifest.h - DIR/manifest.json of a bucket directory (bucket,
 * dedup) or of a move directory (plan --emit): what was written, with which
 * ring and options, so that plan, verify and stats can work from it; and
 * DIR/g<N>/manifest.json, what an appended generation added (kind
 * "generation"). Schema: docs/format-manifest.md. Versioned by "schema": 1 for a
 * directory of one generation, 2 for one that grows by appends (its base
 * manifest and its generations' manifests), 3 for a generation whose
 * segments start with the header line (what a reader of schema 2 would
 * take for a row: it refuses the schema instead). */
#ifndef RINGSHARD_MANIFEST_H
#define RINGSHARD_MANIFEST_H

#include <stddef.h>
#include <stdint.h>
#include "ringshard/error.h"

/* Row ordinals from (0-based) up to to (excluded); to UINT64_MAX: every
 * row from `from` on. */
typedef struct {
    uint64_t from, to;
} rs_row_range;

/* A range of an input's rows on one node ("lost_rows", "restored_rows"):
 * ordinals from (0-based) up to to (excluded), numbered among the rows of
 * the input that its generation wrote to that node, in input order. */
typedef struct {
    char *node;
    uint64_t from, to;
} rs_manifest_rows;

/* A run of a file's rows ("runs"): the rows from..to-1 of input `input`
 * (an index into the inputs of the manifest that lists the file) on the
 * file's node, numbered as rs_manifest_rows are. A file's runs, in order,
 * are its rows in order. */
typedef struct {
    uint64_t input, from, to;
} rs_manifest_run;

typedef struct {
    char *path;            /* as given on the command line */
    uint64_t size, rows, bytes, rejected, blank_lines;
    uint64_t zero_padding;  /* "zero_padding_bytes" (optional when read: 0) */
    char *checksum;        /* "crc64:<16 hex>": rs_crc64 of its stored bytes (NULL: not recorded) */
    uint64_t generation;   /* the generation that ingested it (0: not recorded) */
    char *content;         /* "crc64:<16 hex>": rs_crc64 of its decompressed bytes (NULL: not recorded) */
    uint64_t content_size; /* its decompressed bytes (with content) */
    char **lost;           /* [nlost] "lost": nodes whose rows of this input DIR does not hold (a
                              damaged file that repair could not keep); NULL when none */
    size_t nlost;
    char **restored;       /* [nrestored] "restored": this entry ingested only these nodes' rows
                              (an append that brought back what "lost" said); NULL: every row */
    size_t nrestored;
    rs_manifest_rows *lost_rows;     /* [nlost_rows] "lost_rows": ranges of a node's rows of this input
                                        DIR does not hold (repair kept the rest of the file) */
    size_t nlost_rows;
    rs_manifest_rows *restored_rows; /* [nrestored_rows] "restored_rows": this entry ingested these
                                        ranges of these nodes' rows (with "restored", the only rows) */
    size_t nrestored_rows;
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
    char *index;           /* NULL, or the key index of the file (keyidx.h), in its directory */
    uint64_t index_bytes;  /* the index file's size */
    uint32_t index_crc32;  /* CRC-32 of the index file's bytes */
    uint64_t header_bytes; /* a segment of a generation with segment_header: the stored bytes
                              of its header line (a gzip member, a zstd frame or the line) */
    uint32_t stored_crc32; /* with has_stored_crc32: CRC-32 of the file's stored bytes (all its
                              file_bytes as on disk, compressed, header included) */
    int has_stored_crc32;  /* 1: stored_crc32 recorded ("stored_crc32"; optional, absent in
                              manifests written before 0.3.0) */
    rs_manifest_run *runs; /* [nruns] "runs" to write: which input's rows the file holds, in order (a
                              file of several inputs); NULL: runs_text, or none */
    size_t nruns;
    char *runs_text;       /* "runs" as read (checked; rs_manifest_file_runs parses it), written as it is
                              when nruns is 0; NULL: none */
} rs_manifest_file;

/* A key index a generation built for a file of an earlier generation
 * (dedup --append over a history that had none; keyidx.h). */
typedef struct {
    uint64_t generation;   /* the indexed file's generation */
    char *file;            /* the indexed file's name (in its generation's directory) */
    char *index;           /* the index file's name, in this generation's directory */
    uint64_t index_bytes;
    uint32_t index_crc32;
} rs_manifest_index;

typedef struct {
    int schema;                 /* 1, 2 (a directory that grows; 0 writes 1), or 3 (a
                                   generation whose segments start with a header line) */
    char *kind;                 /* "buckets", "moves", or "generation" (DIR/g<N>/manifest.json) */
    uint64_t generation;        /* schema 2: the generation described (the base's: 1 or the
                                   last compaction's); 0 in schema 1 */
    char *previous;             /* "generation": the previous generation's manifest digest
                                   (32 hex digits, rs_manifest_digest_hex) */
    int segment_header;         /* "generation" (schema 3): each segment starts with the
                                   header line, as a base file does (files[].header_bytes) */
    char *tool_version;
    char *ring_description;     /* the canonical description (ring.h) */
    char *ring_fingerprint;
    char *new_ring_description; /* moves: the new ring; else NULL */
    char *new_ring_fingerprint;
    /* options that shape the files */
    char *key;                  /* the --key as given; NULL: none (column 1 by position) */
    char key_sep;               /* joins a composite key's columns (--key-sep); 0: '|', the default */
    char delimiter;
    int header;                 /* files start with the header line */
    char *header_line;          /* without line end; NULL if no header */
    int compress;               /* RS_COMPRESS_*: 1 gzip, 2 zstd, 0 plain */
    int level;
    int keys_only;
    char *dedup;                /* options.dedup: NULL, or "first" / "row": the rows are
                                   distinct by key / by row (dedup --append) */
    size_t ninputs;
    rs_manifest_input *inputs;
    size_t nfiles;
    rs_manifest_file *files;
    size_t nindexes;            /* "generation": indexes built for earlier files */
    rs_manifest_index *indexes;
    uint64_t rows, bytes, rejected;
} rs_manifest;

/* Writes m as JSON to path (pretty-printed, keys in a fixed order;
 * "schema" is m->schema, 1 when 0; tool_version NULL writes the version of
 * this build). kind "moves" selects from/to/wave and new_ring, anything
 * else node. The members added by schema 2 (generation, previous,
 * options.dedup, inputs' checksum, content and generation, files' index,
 * indexes) and of schema 3 (segment_header, files' header_bytes) are
 * written only when set, as is files' stored_crc32 (has_stored_crc32), so a schema-1 manifest reads as before. Write
 * errors are RS_EXIT_IO naming path. */
int rs_manifest_write(const rs_manifest *m, const char *path, rs_error *err);

/* Reads path into m. Unknown members are ignored; a missing required member,
 * a schema other than 1, 2 or 3 (3: kind "generation" only) or malformed JSON is RS_EXIT_DATA naming the file
 * (and byte offset for syntax errors). Optional members: "tool",
 * files[].wave, files[].crc32_hex (checked against crc32 when present),
 * files[].stored_crc32 (has_stored_crc32 says whether it was there) and
 * "new_ring" for buckets; "seconds" (the run's duration, written before
 * 0.8.0) is accepted and ignored. A file that cannot be read is RS_EXIT_IO. On
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

/* The digest of a manifest's bytes (rs_manifest_readat's) as 32 lowercase
 * hex digits: h1 then h2, each as 16 digits most significant first, into
 * out[33]. */
void rs_manifest_digest_hex(const uint64_t digest[2], char out[33]);

/* Frees every string and array of m (all must be malloc'd, as
 * rs_manifest_read makes them) and zeroes m. */
void rs_manifest_free(rs_manifest *m);

/* File f's runs (its "runs": f->runs, or f->runs_text parsed) into *v
 * (malloc'd, the caller's to free), *n of them (0: none). 0, or -1 out of
 * memory. */
int rs_manifest_file_runs(const rs_manifest_file *f, rs_manifest_run **v, size_t *n);

/* Scans a "runs" text ("input:from-to" separated by one space): each run
 * into v[k] unless v is NULL (v: room for one more than text's spaces),
 * *n of them, *rows the rows they hold; each input under ninputs and each
 * to above its from. 0, or the 1-based number of the first run that is
 * not so, *why saying what is wrong. */
size_t rs_manifest_runs_scan(const char *text, size_t ninputs, rs_manifest_run *v, size_t *n, uint64_t *rows,
                             const char **why);

#endif
