/* ringshard/bucketdir.h - reading a bucket or move directory consistently.
 *
 * A directory that ringshard writes is replaced whole by a later run with
 * --force (the new one is built beside it and renamed or exchanged into
 * place). A reader that opened DIR/manifest.json and then DIR/<file> by
 * path could read the manifest of one generation and files of the next.
 * rs_bucketdir opens DIR once (an O_DIRECTORY descriptor) and every reader
 * opens manifest.json and the files relative to that descriptor (openat),
 * so all it reads comes from the generation that was in place at that one
 * open, whatever is renamed meanwhile.
 *
 * What was read is then checked against the manifest
 * (rs_bucketdir_check_file): a reader trusts no file that differs from
 * what the manifest says of it. */
#ifndef RINGSHARD_BUCKETDIR_H
#define RINGSHARD_BUCKETDIR_H

#include <stddef.h>
#include <stdint.h>
#include "ringshard/error.h"
#include "ringshard/manifest.h"
#include "ringshard/pipeline.h"

typedef struct {
    int fd;                 /* DIR, opened once; -1 when closed */
    char *path;             /* DIR as given */
    uint64_t dev, ino;      /* DIR's identity (st_dev, st_ino) at the open */
    uint64_t digest[2];     /* MurmurHash3_x64_128 of manifest.json's bytes */
    rs_manifest m;          /* DIR/manifest.json, read through fd */
    char **paths;           /* [m.nfiles] "DIR/<file>": names in messages */
    const char **names;     /* [m.nfiles] m.files[i].file: names under fd */
} rs_bucketdir;

/* Opens the directory dir and reads its manifest through the descriptor.
 * Errors: dir cannot be opened or is not a directory (RS_EXIT_IO), the
 * manifest cannot be read (RS_EXIT_IO) or is malformed (RS_EXIT_DATA, as
 * rs_manifest_read). On failure bd is closed (fd -1). */
int rs_bucketdir_open(rs_bucketdir *bd, const char *dir, rs_error *err);

/* Closes the descriptor and frees everything bd holds (a zeroed or closed
 * bd is fine). */
void rs_bucketdir_close(rs_bucketdir *bd);

/* Points the pipeline's inputs at files idx[0..n) of bd (n may be 0:
 * every file, in manifest order): inputs get "DIR/<file>" for messages,
 * input_names the names under bd->fd. *names and *paths are malloc'd
 * arrays the caller frees (not their strings). 0, or -1 when out of
 * memory. */
int rs_bucketdir_inputs(const rs_bucketdir *bd, const size_t *idx, size_t n, rs_pipeline_opts *po,
                        const char ***names, const char ***paths, rs_error *err);

/* Checks what a reader found in file i of bd against the manifest: its size
 * on disk (found->size), data rows, data bytes and, with check_crc, the
 * CRC-32 of its data (found->crc, as pipeline input_crc computes it), and
 * with header non-NULL (the header line the file started with; ignored
 * when the manifest has none or the file is keys-only) the header line.
 * Returns 0, or -1 with RS_EXIT_VERIFY naming the file and what differs
 * (found, then what the manifest says). */
int rs_bucketdir_check_file(const rs_bucketdir *bd, size_t i, const rs_input_stats *found, int check_crc,
                            const char *header, rs_error *err);

/* 1 when bd->path no longer names the directory that was opened (it was
 * replaced or removed since), else 0. */
int rs_bucketdir_replaced(const rs_bucketdir *bd);

/* After a read of bd failed with RS_EXIT_IO (e.g. a file that can no
 * longer be opened: a --force run replaced DIR and removed the previous
 * generation, whose files this reader was still reading): when DIR is no
 * longer the directory that was opened, rewrites err to say so. */
void rs_bucketdir_explain(const rs_bucketdir *bd, rs_error *err);

/* Writing a bucket or move directory (bucket, dedup, plan --emit). */
#include "ringshard/outdir.h"
#include "ringshard/ring.h"

/* The data files' extension: ".csv.gz" for gzip, ".csv.zst" for zstd,
 * else ".csv". */
const char *rs_data_ext(int compress);

/* The data file name of node a (b NULL: a bucket) or of the move a -> b
 * (plan --emit): rs_safe_filename of each, joined by "__", then
 * rs_data_ext. malloc'd; NULL when out of memory. */
char *rs_data_file(const char *a, const char *b, int compress);

/* The paths of names[0..n) inside od's temporary directory: a malloc'd
 * array of n malloc'd paths (rs_free_strings frees it), or NULL with err
 * (RS_EXIT_IO) when out of memory. */
char **rs_outdir_paths(const rs_outdir *od, const char *const *names, size_t n, rs_error *err);

/* Starts manifest m of `kind` for a finished pipeline run: the ring, the
 * options that shape the files (key, delimiter, header, compression, keys
 * only), every input's statistics, rejected rows and seconds; m->files gets
 * room for nfiles entries (nfiles itself is left 0). Strings point into
 * kind, ring, po and res (they must outlive m); m->inputs and m->files are
 * malloc'd for the caller to free. The caller fills files, rows and bytes
 * (and, for moves, the new ring). Returns 0, or -1 with err (RS_EXIT_IO)
 * when out of memory. */
int rs_manifest_start(rs_manifest *m, const char *kind, const rs_ring *ring, const rs_pipeline_opts *po,
                      const rs_pipeline_result *res, size_t nfiles, rs_error *err);

/* Writes m as manifest.json into od's temporary directory. Returns 0, or -1
 * with err (rs_manifest_write's, or RS_EXIT_IO when out of memory). */
int rs_outdir_manifest(const rs_outdir *od, const rs_manifest *m, rs_error *err);

#endif
