/* ringshard/dataset.h - the bucket directory as a format: the dataset layer.
 *
 * What the layer owns (src/dataset/):
 *   - the manifest (manifest.h, manifest.c): reading, writing and the
 *     digest of DIR/manifest.json and DIR/g<N>/manifest.json;
 *   - output directories (outdir.h, outdir.c): the temporary directory
 *     beside DIR, publishing it whole (one rename or exchange), the
 *     writer lock, the clean-up of what a killed run left;
 *   - reading a bucket or move directory (bucketdir.h, bucketdir.c): one
 *     descriptor, the base and every generation, their chain of digests,
 *     the damages (each manifest audited against itself: audit.c), each
 *     file checked against its manifest, and the strays
 *     (the one definition of an entry no manifest names: verify reports
 *     them, compact refuses them, repair moves them);
 *   - every name on disk (filename.h, filename.c): data files, key
 *     indexes, generations, the damaged copy, node names encoded into file
 *     names, the codec table;
 *   - what a writer shares (outputs.c): its files' paths in the temporary
 *     directory, input checksums as a manifest writes them, the manifest
 *     written into the temporary directory;
 *   - generations (generation.c, rs_gen_*, below): g<N>'s name, whether
 *     DIR can take one more, what its manifest holds (the previous
 *     generation's digest, the base's shaping options), a schema-1 base
 *     rewritten as schema 2, the inputs DIR records as ingested (what an
 *     append tells again: rs_bucketdir_ingested);
 *   - compaction's merge (compact.c): a directory's generations merged
 *     into one file per node, each part checked as it is copied, into a
 *     temporary directory that the compact job or repair publishes;
 *   - what shapes a directory's files (shaping.c): the one comparison of
 *     a command line's key, delimiter, header, codec, level, keys-only and
 *     ring with a manifest's, and the one way to read a manifest's ring
 *     (built from its description, checked against its fingerprint);
 *   - the inputs a directory holds (catalog.c): what "already ingested"
 *     means, by stored bytes, by content, a pipe's, an older entry's;
 *   - rows a repair could not keep (lost.c): which rows of which nodes of
 *     an input the manifests name lost more often than restored; a
 *     damaged file read member by member (members.c, salvage.c: what
 *     repair keeps), and what a repair keeps of every file
 *     (repair_plan.c: the decisions the repair job reports);
 *   - a stored file's rows (rows.c, dataset/rows.h), read and checked
 *     against its manifest entry as they go (rs_rows_check): the one
 *     checked row reader of dedup, its history, cat and key index rebuilds;
 *   - key indexes (keyidx.h, keyidx*.c): writing, reading, verifying.
 *
 * It knows nothing of rows in flight: the pipeline, the jobs and the
 * cluster layer call it (pipeline.h adds what binds a directory to a
 * pipeline run: a directory's files as a run's inputs, a manifest started
 * from a finished run); it calls only the codecs, the CSV, ring and I/O
 * modules, the hashes and util. Everything here is single-process; the
 * collectives of an append (one rank locks, decides and publishes) and its
 * retry driver are the jobs' (jobs/append.h, rs_append_*) and the cluster
 * layer's, over these functions.
 *
 * Recovery contract: nothing is published until complete and flushed, in
 * one rename; a failed or killed writer leaves DIR as it was (its
 * temporary directory is removed by the next run on DIR once its process
 * is gone); a reader sees the generations that were in place when it
 * opened DIR, whatever is published or replaced meanwhile, and trusts no
 * file that differs from its manifest. The on-disk layout is in
 * docs/format-layout.md (every name, made by filename.h),
 * docs/format-generations.md, docs/format-keyidx.md and
 * docs/format-manifest.md; what each fault leaves behind, and its
 * exit code, in docs/failures.md ("Publishing", "Appends and compaction",
 * "A damaged chain of generations").
 *
 * Outside src/dataset/ this is the header to include: the separate
 * headers it includes are its parts (tools/check/check_layers.sh). */
#ifndef RINGSHARD_DATASET_H
#define RINGSHARD_DATASET_H

#include <stdint.h>
#include "ringshard/bucketdir.h"
#include "ringshard/csv.h"
#include "ringshard/error.h"
#include "ringshard/keyidx.h"
#include "ringshard/manifest.h"
#include "ringshard/nodes.h"
#include "ringshard/outdir.h"
#include "ringshard/ring.h"

/* Generations (docs/format-generations.md, "Bucket directories that grow"). */

/* Whether bd (DIR, opened with RS_BUCKETDIR_TOLERANT under its writer
 * lock) can take one more generation: refused when its chain is damaged
 * (rs_bucketdir_refuse_damage), when it is not a bucket directory (kind
 * other than "buckets") or has no header line yet although it has one
 * (its inputs were empty), or when it holds RS_GEN_MAX generations: all
 * RS_EXIT_USAGE but the damage's, messages naming mpath (DIR's
 * manifest.json) or DIR. *gen gets the new generation's number
 * (bd->last_gen + 1) and name its directory's name (rs_gen_dir_name).
 * 0, or -1 with err. */
int rs_gen_next(const rs_bucketdir *bd, const char *mpath, uint64_t *gen, char name[16], rs_error *err);

/* The manifest of a fresh bucket directory that will grow: schema 2,
 * generation 1, every input recorded as ingested by generation 1. */
void rs_gen_first(rs_manifest *m);

/* Writes generation gen's manifest m as gen_tmp/manifest.json (gen_tmp:
 * g<N> staged in od's temporary directory): fills m's schema (3 with
 * segment_header, else 2), kind "generation", generation, previous (the
 * digest of bd's newest manifest: the chain) and the shaping options from
 * bd's base (ring, key, delimiter, header, compression, level, keys only),
 * and every input's generation. A schema-1 base is first written as
 * schema 2 (the same content) into od's temporary directory, *upgrade set
 * to 1 (the caller publishes it with g<N>), and the chain names its
 * digest. m->previous is NULL again on return. 0, or -1 with err. */
int rs_gen_write_manifests(const rs_bucketdir *bd, const rs_outdir *od, uint64_t gen, const char *gen_tmp,
                           rs_manifest *m, int *upgrade, rs_error *err);

/* What shapes a bucket directory's files (docs/format-manifest.md,
 * "options"; src/dataset/shaping.c): an append writes with the
 * directory's, and a reader reads by them. */
typedef struct {
    const char *key;     /* --key as given; NULL: column 1 */
    char key_sep;        /* joins a composite key's columns ('|' unless set) */
    char delimiter;
    int header;          /* files start with the header line */
    int compress;        /* RS_COMPRESS_* */
    int level;
    int keys_only;
} rs_shaping;

/* The options that shape the files, as the command line gave them (the
 * `given` bits of rs_shaping_check, rs_bucket_job_opts.given): an append
 * takes the others from DIR's manifest, and refuses given ones that
 * differ from it. */
enum {
    RS_GIVEN_KEY = 1, RS_GIVEN_DELIMITER = 2, RS_GIVEN_HEADER = 4, RS_GIVEN_COMPRESS = 8, RS_GIVEN_LEVEL = 16,
    RS_GIVEN_KEYS_ONLY = 32, RS_GIVEN_RING = 64, RS_GIVEN_KEY_SEP = 128
};

/* Starts manifest m (zeroed first) of `kind` (schema 1, this version)
 * for files made with ring desc/fp and shaping s (every field as given:
 * a key_sep of 0 is written as such), whose header line is header_line
 * (NULL: none, as with empty inputs). Strings point into the arguments.
 * The one place a writer records what shapes its files (bucket's runs,
 * dedup). */
void rs_manifest_shape(rs_manifest *m, const char *kind, const char *desc, const char *fp, const rs_shaping *s,
                       const char *header_line);

/* m's shaping options into *s (key_sep '|' when m records none). */
void rs_shaping_of_manifest(const rs_manifest *m, rs_shaping *s);

/* Each option of `here` that `given` (RS_GIVEN_* bits) names must equal
 * m's (the level only when m compresses): 0, or RS_EXIT_USAGE naming the
 * option, both values and mpath (DIR's manifest.json). */
int rs_shaping_check(const rs_manifest *m, const char *mpath, const rs_shaping *here, unsigned given, rs_error *err);

/* A ring given on the command line (RS_GIVEN_RING) against m's: 0 when
 * their fingerprints are equal, else RS_EXIT_USAGE naming the option that
 * makes the first line of the descriptions that differs and both values. */
int rs_shaping_check_ring(const rs_manifest *m, const char *mpath, const rs_ring *given, rs_error *err);

/* The ring a manifest's description desc describes (its ring.description,
 * or a move directory's new_ring.description; `what` names it in
 * messages: "ring", "new ring"), built; NULL with err when it cannot be
 * parsed or built. When its fingerprint is not fp, why (whylen bytes)
 * says so, without a file name ("the ring description has fingerprint X,
 * the manifest says Y"), and the ring is returned all the same: verify
 * reports it and goes on; every other reader refuses (rs_manifest_ring).
 * why[0] is 0 when they agree. ro and nodes (when not NULL) get the
 * options and nodes parsed; the caller frees *nodes. */
rs_ring *rs_ring_of_description(const char *desc, const char *fp, const char *what, char *why, size_t whylen,
                                rs_ring_opts *ro, rs_nodes *nodes, rs_error *err);

/* m's ring, checked: as rs_ring_of_description of its ring.description,
 * but a fingerprint that differs is NULL with RS_EXIT_DATA naming mpath.
 * The one way every command reads a directory's ring. */
rs_ring *rs_manifest_ring(const rs_manifest *m, const char *mpath, rs_ring_opts *ro, rs_nodes *nodes, rs_error *err);

/* What a file of a bucket directory must hold (its manifest entry),
 * checked on its first read, as it goes (dataset/rows.c, which readers of
 * stored rows share): every row's placement at once, the counts, the
 * CRC-32 of the data and the size on disk at its end; a difference is
 * RS_EXIT_VERIFY naming the file, the row and the manifest. */
typedef struct {
    uint64_t rows, bytes;        /* data rows, data bytes (rows + LF) */
    uint64_t file_bytes;         /* size on disk */
    uint32_t crc;                /* CRC-32 of the data bytes */
    const char *manifest;        /* named in messages: "DIR/manifest.json" */
    const char *node;            /* named in messages: the file's node */
    const rs_csv_keyspec *keyspec; /* the key the ring places by (any mode) */
    /* 1 when a row with this key belongs in the file (called from the
     * deduplicating thread) */
    int (*placed)(void *ctx, const char *key, size_t keylen);
    void *ctx;
} rs_rows_check;

/* An input that a directory's manifests record as ingested, as an append
 * tells it again (docs/format-manifest.md, "Members": inputs): by the checksum of
 * its stored bytes (entry->checksum), or, an older version's entry
 * without one, by its path and size; by its content (entry->content,
 * entry->content_size) when recorded. */
typedef struct {
    const rs_manifest_input *entry;
    uint64_t gen;      /* the generation that ingested it */
    int any_size;      /* size 0 with a checksum not that of no bytes: a pipe's, of any size */
} rs_ingested;

/* Every input record of bd's manifests, the base's then each
 * generation's, in order, as shallow copies (strings are bd's) into *v
 * (malloc'd, the caller's to free), *n of them: each with the generation
 * that ingested it (a compacted or repaired base lists them so), or, with
 * fresh, none (0): the records of a new directory made of bd's rows (dedup
 * --buckets). 0, or -1 when out of memory. */
int rs_bucketdir_input_records(const rs_bucketdir *bd, int fresh, rs_manifest_input **v, size_t *n);

/* Every input bd's manifests record (the base's, then each generation's,
 * in order) but those that cannot be known again (an older version's
 * entry of size 0, a pipe's, without a checksum): *v (malloc'd, the
 * caller's to free), *n of them. 0, or -1 when out of memory. */
int rs_bucketdir_ingested(const rs_bucketdir *bd, rs_ingested **v, size_t *n);

/* The catalogue of the inputs a directory holds, and an append's earlier
 * inputs (src/dataset/catalog.c): what "already ingested" means. */

/* An input held: by DIR (entry, gen) or by this run (this_run). */
typedef struct {
    uint64_t size, gen;             /* stored size (0: a pipe's); the generation that ingested it */
    char sum[RS_CHECKSUM_TEXT];     /* "crc64:..." of its stored bytes (empty: by_path) */
    const char *path;
    int this_run;                   /* 1: an earlier input of this run, 2: a later one */
    int any_size;                   /* a pipe's: size 0, any size matches */
    int by_path;                    /* an older version's entry without a checksum: known by path and size */
    const char *content;            /* "crc64:..." of its decompressed bytes (NULL: not recorded) */
    uint64_t content_size;          /* their number */
    int by_content;                 /* (a match) the same content, stored otherwise */
    const rs_manifest_input *entry; /* DIR's entry (NULL: one of this run's) */
} rs_held;

typedef struct {
    rs_held *v;
    size_t n, cap;
} rs_catalog;

/* What a run read of one input, as rs_catalog_read compares it. */
typedef struct {
    uint64_t size, bytes;           /* stored size (0: unknown), bytes read */
    uint64_t checksum;              /* CRC-64 of the stored bytes, when has_checksum */
    int has_checksum;
    uint64_t content, content_size; /* CRC-64 of the content and its size, when has_content */
    int has_content;
} rs_read_sums;

/* c (zeroed) gets every input bd's manifests record as ingested
 * (rs_bucketdir_ingested). 0, or -1 when out of memory. */
int rs_catalog_of_dir(rs_catalog *c, const rs_bucketdir *bd);
/* Adds a copy of *e. 0, or -1 when out of memory. */
int rs_catalog_add(rs_catalog *c, const rs_held *e);
void rs_catalog_free(rs_catalog *c);
/* The input held whose stored bytes have this size (a pipe's: any) and
 * checksum text, or NULL. */
const rs_held *rs_catalog_stored(const rs_catalog *c, uint64_t size, const char *sum);
/* An older version's entry without a checksum with this path and size
 * (most likely the same file), or NULL. */
const rs_held *rs_catalog_by_path(const rs_catalog *c, uint64_t size, const char *path);
/* Whether an input held has stored bytes of this size (so that a file of
 * that size must be checksummed to know). */
int rs_catalog_has_size(const rs_catalog *c, uint64_t size);
/* The input held whose content has this size and checksum text, or NULL. */
const rs_held *rs_catalog_content(const rs_catalog *c, uint64_t size, const char *sum);
/* Whether an input held has content of a size that size (mod32: known
 * mod 2^32 only, as a gzip trailer tells it) can be. */
int rs_catalog_has_content_size(const rs_catalog *c, uint64_t size, int mod32);
/* Whether content sizes a and b (each known mod 2^32 when its flag is
 * set) can be equal. */
int rs_content_sizes_match(uint64_t a, int a_mod32, uint64_t b, int b_mod32);
/* Whether what a run read of an input (a pipe's stored bytes, of any
 * size; anyone's content) is an input held: 1 with a copy in *was
 * (by_content set for a match by content), else 0. */
int rs_catalog_read(const rs_catalog *c, const rs_read_sums *in, int pipe, rs_held *was);
/* What holds an input, for messages: "already ingested by generation 3
 * (as day.csv.gz)", "the same content as a.csv, earlier in this run"... */
void rs_held_where(const rs_held *was, char *where, size_t n);

/* Compaction's merge (compact.c). */

/* Which parts rs_bucketdir_merge takes (repair: what it keeps). */
enum { RS_TAKE_NONE = 0, RS_TAKE_WHOLE = 1, RS_TAKE_CUT = 2, RS_TAKE_REREAD = 3, RS_TAKE_MEMBERS = 4 };

/* The intact gzip members (zstd pieces) of a damaged file that repair
 * keeps (RS_TAKE_MEMBERS), and what they hold. */
typedef struct {
    uint64_t *at, *len;       /* [n] their byte ranges in the file, in order (a segment's header member not
                                 among them) */
    size_t n;
    uint64_t rows, bytes;     /* the data rows and bytes they hold (a header line not counted) */
    uint32_t crc32;           /* and those bytes' CRC-32 */
    int head_lost;            /* a base file whose header member is not taken: the merged file starts with
                                 the header bytes (rs_compact_take.head) */
    uint64_t *lost;           /* [2 * nlost] the file's rows not kept: [from, to) pairs, in order, numbered from
                                 0 among its data rows (the merged file's runs leave them out) */
    size_t nlost;
} rs_compact_keep;

typedef struct {
    const uint8_t *take;      /* [bd->nfiles] per file: RS_TAKE_NONE leaves it out, RS_TAKE_WHOLE takes it as
                                 compact does, RS_TAKE_CUT its first file_bytes (a longer file), RS_TAKE_REREAD
                                 those too, the merged file's stored_crc32 computed from them (a file whose rows
                                 are intact but whose stored bytes are not what stored_crc32 says),
                                 RS_TAKE_MEMBERS the members keep[k] names; NULL: all whole */
    const rs_compact_keep *keep;  /* [bd->nfiles]: with RS_TAKE_MEMBERS */
    const void *head;         /* the header bytes (rs_pipeline_header_bytes) a merged file starts with when its
                                 node's base file, or its header member, is left out */
    size_t head_len;
    int record_lost;          /* rows of a node are lost (a part not taken whole): its merged file gets no key
                                 index */
    /* with record_lost: per input of the new manifest (the base's, then each generation's, in order), its
       "lost" and "lost_rows" as they are to be written (NULL arrays: as they were) */
    char **const *lost;
    const size_t *nlost;
    rs_manifest_rows *const *lost_rows;
    const size_t *nlost_rows;
} rs_compact_take;

/* The compacted form of the generations bd holds (its base and bd->gens,
 * whatever their numbers: repair passes those it keeps) written into od's
 * temporary directory: for every node, its base file then its segments
 * (each without its header line, files[].header_bytes), concatenated byte
 * for byte, each read once, written out and checked as it is read
 * (check 1: against the manifest's stored_crc32, or decoded and its
 * data's CRC-32 and bytes checked when the manifest has none; check 0:
 * copied in the kernel, its size checked only), each file's size checked
 * against its manifest before it is copied; their key indexes merged when
 * every file has one and drop_indexes is 0 (within `memory`, 0: the
 * default, keyidx.h; with drop_indexes the merged files get none, the
 * manifest keeping what they would hold); the manifest (schema 2,
 * generation: the last one of bd; the inputs of the generations held).
 * take (NULL: every part whole) says which parts are taken: the merged
 * files and the manifest's totals hold those only, and (take->record_lost)
 * the inputs get the lost records take gives, the nodes of a part not
 * taken whole getting no key index. Nodes are merged on OMP_NUM_THREADS threads, the same bytes
 * and the same first error whatever their number. Adds the bytes written
 * to *file_bytes. 0, or -1 with err (RS_EXIT_IO, RS_EXIT_DATA for a
 * damaged file or key index, RS_EXIT_VERIFY for a file whose size is not
 * its manifest's, RS_EXIT_INTERRUPTED); od is the caller's to commit or
 * abort. */
int rs_bucketdir_merge(const rs_bucketdir *bd, const rs_outdir *od, uint64_t memory, int drop_indexes, int check,
                       const rs_compact_take *take, uint64_t *file_bytes, rs_error *err);

/* Rows a repair could not keep (docs/format-generations.md; lost.c). */

/* Whether two manifest entries are one input: the same content (once
 * decompressed), or the same stored bytes. */
int rs_manifest_same_input(const rs_manifest_input *a, const rs_manifest_input *b);

/* The rows of input e on node that DIR does not hold: where the entries of
 * bd's manifests for e (the same input) name them lost ("lost": every row
 * of the node; "lost_rows": ranges) more often than restored ("restored",
 * "restored_rows"), as sorted disjoint ranges of ordinals among e's rows
 * on node (to UINT64_MAX: every row from `from` on) into *v (malloc'd,
 * NULL when none), *n. 0, or -1 when out of memory. */
int rs_bucketdir_lost_ranges(const rs_bucketdir *bd, const rs_manifest_input *e, const char *node, rs_row_range **v,
                             size_t *n);

/* Whether input e has rows outstanding (rs_bucketdir_lost_ranges) on any
 * node: rows that an append of e brings back. */
int rs_bucketdir_outstanding(const rs_bucketdir *bd, const rs_manifest_input *e);

/* mask[d] for each of nodes' nodes (d < nodes->count): 1 when e has rows
 * of it outstanding, else 0. Returns 1 when any is. */
int rs_bucketdir_lost_nodes(const rs_bucketdir *bd, const rs_manifest_input *e, uint8_t *mask, const rs_nodes *nodes);

/* The rows of its input on node that entry e's generation wrote and that
 * no record of e says lost: those a file of node of that generation holds
 * of it (every row: an entry that restored nothing or the whole node;
 * its "restored_rows" of node; none: it restored other nodes only), as
 * sorted disjoint ranges (rs_bucketdir_lost_ranges) into *v, *n. 0, or -1
 * when out of memory. */
int rs_manifest_held(const rs_manifest_input *e, const char *node, rs_row_range **v, size_t *n);

/* The runs (files[].runs) of `rows` rows of input `input` taken in order
 * from the ranges of its rows held[0..nh) (an open range: as many as
 * there are), appended to *v (*n of them, room for *cap; one that goes on
 * from the last is joined to it): 1, 0 when the ranges hold fewer (or,
 * strict, more) rows, -1 out of memory (src/dataset/runs.c). */
int rs_runs_take(const rs_row_range *held, size_t nh, uint64_t input, uint64_t rows, int strict, rs_manifest_run **v,
                 size_t *n, size_t *cap);

/* Gives file f the runs v[0..n) (malloc'd, taken over) when they are what
 * a manifest records: of several inputs (a file of one input's rows needs
 * none) and holding f's rows exactly (a reader would refuse the manifest
 * otherwise); else frees them. The one rule of every writer of runs. */
void rs_manifest_file_take_runs(rs_manifest_file *f, rs_manifest_run *v, size_t n);

/* Where input entry e (an element of the inputs of bd->m or of one of
 * bd->gens) is in bd, as a number that is never 0, and the entry back
 * from it (NULL when bd has no such place): what one process tells
 * another that opened the same state of DIR. 0 when e is not bd's. */
uint64_t rs_bucketdir_input_place(const rs_bucketdir *bd, const rs_manifest_input *e);
const rs_manifest_input *rs_bucketdir_input_at(const rs_bucketdir *bd, uint64_t place);

#endif
