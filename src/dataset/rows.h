/* dataset/rows.h - the rows and keys of a file, one after the other: a
 * file of a bucket directory (its base file and its segments read as one,
 * each segment's header line skipped), or any CSV file (the dedup passes'
 * split files), streamed or loaded whole, each row with its key (the key
 * spec's, or the whole row), and - for a file of a bucket directory - checked on the way against
 * what its manifest says of it (rs_rows_check: placement, counts,
 * CRC-32 of the data, size on disk). The readers of stored rows (dedup,
 * the history of dedup --append, cat, key index rebuilds) share it. */
#ifndef RS_DATASET_ROWS_H
#define RS_DATASET_ROWS_H

#include <stdint.h>
#include "ringshard/buf.h"
#include "ringshard/csv.h"
#include "ringshard/dataset.h"
#include "ringshard/reader.h"

/* Where a file's rows come from, and how to read them. */
typedef struct {
    const rs_csv_dialect *dialect;
    const rs_csv_keyspec *keyspec;  /* the key rs_rows_next gives; NULL: the whole row */
    int header;                     /* the file starts with a header line */
    rs_codec_choice codec;
    /* NULL, or the file as a name under the directory descriptor dirfd
     * (a bucket directory opened once), read when rs_rows_open is given
     * path (that very pointer: a message's name for it) */
    const char *name;
    int dirfd;
    const char *path;
    /* With name: further parts of the same file, read after it as if
     * concatenated (the segments of appended generations), as names under
     * dirfd and paths for messages, with their manifest entries
     * (more_files: a segment's header line, header_bytes of stored bytes,
     * is skipped; an older version's has none). A check then says what
     * all the parts hold together. */
    const char *const *more;
    const char *const *more_paths;
    const rs_manifest_file *const *more_files;
    size_t nmore;
} rs_rows_src;

typedef struct {
    rs_reader *rd;           /* NULL once loaded whole */
    const char *path;
    rs_rows_src src;
    size_t part;             /* the part being read (0: in itself) */
    int whole;               /* the file itself, with its parts */
    const rs_csv_keyspec *ks; /* NULL: no key wanted */
    rs_buf buf;
    size_t pos;
    int eof;
    uint64_t rec;            /* records returned so far (header included) */
    rs_buf scratch;
    int started;             /* a UTF-8 BOM at the start was looked for */
    /* set by the caller before the rows: what the file holds, checked as
     * it is read (NULL: unchecked), and what was read so far */
    const rs_rows_check *chk;
    uint64_t size;           /* the file's size on disk at the open */
    uint64_t c_rows, c_bytes;
    uint32_t c_crc;
} rs_rows;

/* Opens path for reading (src->name under src->dirfd when path is
 * src->path), with keys when want_key (and src->keyspec). 0 or -1 with
 * err. */
int rs_rows_open(rs_rows *s, const char *path, const rs_rows_src *src, int want_key, rs_error *err);

/* Reads the whole file into s->buf (size_hint: its expected bytes). */
int rs_rows_load(rs_rows *s, uint64_t size_hint, rs_error *err);

/* The next record: 1 with row (and key), 0 at the end, -1 on error. With
 * nokey the key is not extracted (header records). */
int rs_rows_next(rs_rows *s, int nokey, const char **row, size_t *rowlen, const char **key, size_t *keylen,
                 rs_error *err);

/* Reads past the header record. */
int rs_rows_skip_header(rs_rows *s, rs_error *err);

void rs_rows_close(rs_rows *s);

#endif
