/* dedup/rows.h - a bucket file's rows and keys, one after the other, as
 * the dedup passes read them: from a file (or a bucket's base file and its
 * segments, rs_dedup_opts.in_more), streamed or loaded whole, each row with
 * its key (the key spec's, or the whole row with RS_DEDUP_BY_ROW), checked
 * on the way against what the manifest says (rs_dedup_check). */
#ifndef RS_DEDUP_ROWS_H
#define RS_DEDUP_ROWS_H

#include <stdint.h>
#include "ringshard/buf.h"
#include "ringshard/dedup.h"
#include "ringshard/reader.h"

typedef struct {
    rs_reader *rd;           /* NULL once loaded whole */
    const char *path;
    const rs_dedup_opts *o;  /* for the further parts of the input */
    size_t part;             /* the part being read (0: in itself) */
    int whole;               /* the input itself, with its parts */
    const rs_csv_dialect *d;
    const rs_csv_keyspec *ks; /* NULL: no key wanted */
    rs_buf buf;
    size_t pos;
    int eof;
    uint64_t rec;            /* records returned so far (header included) */
    rs_buf scratch;
    int header;              /* the first record is a header */
    int started;             /* a UTF-8 BOM at the start was looked for */
    /* the input's first read, with o->check: what it held so far */
    const rs_dedup_check *chk;
    uint64_t size;           /* the file's size on disk at the open */
    uint64_t c_rows, c_bytes;
    uint32_t c_crc;
} rstream;

/* Opens path for reading (o->in_name under o->in_dirfd when path is the
 * input itself: o->in_path_), with keys when want_key (and not by row). 0
 * or -1 with err. */
int rows_open(rstream *s, const char *path, const rs_dedup_opts *o, int want_key, rs_error *err);

/* Reads the whole input into s->buf (size_hint: its expected bytes). */
int rows_load(rstream *s, uint64_t size_hint, rs_error *err);

/* The next record: 1 with row (and key), 0 at the end, -1 on error. With
 * nokey the key is not extracted (header records). */
int rows_next(rstream *s, int nokey, const char **row, size_t *rowlen, const char **key, size_t *keylen,
              rs_error *err);

/* Reads past the header record. */
int rows_skip_header(rstream *s, rs_error *err);

void rows_close(rstream *s);

#endif
