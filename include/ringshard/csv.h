/* ringshard/csv.h - the hot-path CSV record scanner (RFC 4180).
 *
 * libcsv is the reference: for any input, this scanner yields the same
 * records and fields as libcsv in strict mode (CSV_STRICT|CSV_STRICT_FINI)
 * with no space trimming, or both reject it. Records end at LF, CRLF or a
 * lone CR outside quotes; empty lines are skipped (as libcsv skips them) and
 * reported as records with len == 0 and nfields == 0 so callers can count
 * them. Inside quotes, delimiters, CR and LF are data; "" is one quote.
 *
 * The scanner never allocates per record: a key that is one unquoted field
 * is returned as a pointer into the input; only a key that needs unquoting
 * or joining is assembled in the caller's scratch buffer. */
#ifndef RINGSHARD_CSV_H
#define RINGSHARD_CSV_H

#include <stddef.h>
#include <stdint.h>
#include "ringshard/buf.h"
#include "ringshard/error.h"

#define RS_CSV_MAX_KEY_COLS 16

typedef struct {
    char delim;          /* field delimiter, ',' by default */
    size_t max_record;   /* a record longer than this (bytes) is an error */
} rs_csv_dialect;

typedef struct {
    uint32_t ncols;                     /* key parts, >= 1 */
    uint32_t cols[RS_CSV_MAX_KEY_COLS]; /* 0-based column index of each part */
    char sep;                           /* joins the parts of a composite key */
} rs_csv_keyspec;

typedef struct {
    size_t len;        /* record bytes, without the terminator */
    size_t consumed;   /* record bytes plus the terminator */
    uint32_t nfields;  /* 0 for an empty line */
    uint32_t lines;    /* line ends (LF, or CR not followed by LF) in consumed */
} rs_csv_record;

/* Results of rs_csv_next. */
enum { RS_CSV_BAD = -1, RS_CSV_MORE = 0, RS_CSV_OK = 1 };

typedef struct {
    const char *what;  /* e.g. "stray quote in unquoted field" (static) */
    size_t offset;     /* byte offset within the record where it was found */
    uint32_t field;    /* 1-based field number */
} rs_csv_fault;

/* Scans one record at p[0..avail). at_eof says no bytes follow avail (so a
 * record without a final line end is complete, and an open quote is an
 * error). key may be NULL (no key wanted). Returns RS_CSV_OK with *rec and,
 * if key != NULL, *keyp and *keylen filled (a missing key column is RS_CSV_BAD);
 * RS_CSV_MORE if the record may continue past avail (only when !at_eof);
 * RS_CSV_BAD with *fault filled. */
int rs_csv_next(const rs_csv_dialect *d, const rs_csv_keyspec *key, const char *p, size_t avail,
                int at_eof, rs_csv_record *rec, const char **keyp, size_t *keylen,
                rs_buf *scratch, rs_csv_fault *fault);

/* Where a record that may be malformed ends (the recovery of --on-bad-row
 * skip|quarantine): at the first line end (LF, CRLF or a lone CR) outside
 * quotes, quotes followed as rs_csv_next follows them - a quote opens a
 * quoted field only at a field's start, "" inside one is a quote - but
 * past any fault: a stray quote is data, a byte after a closing quote goes
 * on as unquoted data, and no length limit applies. On a well-formed
 * record it ends where rs_csv_next does; a quoted field never closed runs
 * to the end of the input (one record, as libcsv sees it). Resumable, so
 * that a record of any length is followed in bounded memory: *state starts
 * at 0 at the record's start, and its bytes are fed in pieces.
 * Feeds p[0..len). Returns 1 with *used just past the record's line end
 * (CRLF whole) when it ends in p[0..len), or *used = len when at_eof (no
 * bytes follow); else 0 with *used the bytes taken: len, or len - 1 when p
 * ends with a CR (half of a CRLF, maybe: feed it again with what follows). */
int rs_csv_resync(const rs_csv_dialect *d, int *state, const char *p, size_t len, int at_eof, size_t *used);

/* ------------------------------------------------ the structural scanner
 *
 * rs_csv_rows scans many records of a range in one pass: each 64-byte
 * block is classified once (quotes, delimiters, CR, LF), quote parity is
 * carried from block to block as a bit mask, and records, fields and the
 * key are read off the masks. It gives exactly what rs_csv_next gives at
 * the same offsets with at_eof set (the range holds whole records; the
 * last may lack its line end): a record whose quotes are not well placed,
 * that is too long or lacks a key column is handed to rs_csv_next. */

/* One record found by rs_csv_rows. */
typedef struct {
    size_t off;        /* its first byte, from the cursor's p */
    size_t len;        /* its bytes before the line end */
    size_t next;       /* the offset just past its line end (the next record) */
    uint32_t nfields;  /* 0 for an empty line */
    uint32_t lines;    /* line ends in [off, next) */
    const char *key;   /* with a key spec: into p, or into scratch */
    size_t keylen;
} rs_csv_row;

/* How many 64-byte blocks rs_csv_rows classifies at a time. */
#define RS_CSV_CHUNK 16

/* Where rs_csv_rows stands in p[pos..end). The fields after end are the
 * scanner's own (the masks of the blocks classified ahead); set them with
 * rs_csv_cursor_init only. */
typedef struct {
    const char *p;
    size_t pos, end;
    size_t blk;                  /* first byte of the current block, block i of those classified */
    uint32_t i, nblk;
    uint64_t in_end;             /* all ones when the last block classified ends inside quotes */
    uint64_t open_ok;            /* 1: its last byte may precede an opening quote */
    uint64_t dout[RS_CSV_CHUNK]; /* each block's delimiters outside quotes, */
    uint64_t lout[RS_CSV_CHUNK]; /* CR and LF outside quotes, */
    uint64_t bad[RS_CSV_CHUNK];  /* misplaced quotes, */
    uint64_t inl[RS_CSV_CHUNK];  /* CR and LF inside quotes */
    int loaded;
} rs_csv_cursor;

/* Starts a cursor at p[pos], which must begin a record, for the whole
 * records of p[pos..end). */
void rs_csv_cursor_init(rs_csv_cursor *c, const char *p, size_t pos, size_t end);

/* Scans up to max records at the cursor into rows[0..*n) and moves the
 * cursor past them. Returns RS_CSV_OK (cursor at end when no record is
 * left), or RS_CSV_BAD when the record at c->pos (after the *n stored) is
 * malformed: *fault as rs_csv_next gives it, the cursor left at that
 * record (restart it with rs_csv_cursor_init past the record). A key that
 * needs scratch (composite, or with "") ends the call after its record,
 * so that it stays valid until the next call. */
int rs_csv_rows(const rs_csv_dialect *d, const rs_csv_keyspec *key, rs_csv_cursor *c, rs_csv_row *rows,
                size_t max, size_t *n, rs_buf *scratch, rs_csv_fault *fault);

/* Quotes in p[0..n) with the widest vector unit the CPU has (the batch
 * cutter's parity). */
size_t rs_csv_count_quotes(const char *p, size_t n);

/* Checks a --key spec's form before any input is read: NULL (column 1)
 * passes; an empty spec or an empty item ("", "1,", ",1", "a,,b"), more
 * than RS_CSV_MAX_KEY_COLS items, and without a header (header == 0) a
 * name or a number below 1 are errors. Returns 0, or -1 with RS_EXIT_USAGE. */
int rs_csv_keyspec_check(const char *spec, int header, rs_error *err);

/* Resolves a --key spec ("name", "3", "a,b": header names or 1-based
 * indexes, a name first: a header may call a column "2"; NULL means column
 * 1 by position, whatever the names; rs_csv_keyspec_check's errors first)
 * against a header's fields (stored NUL-separated as rs_csv_fields leaves
 * them; NULL without a header) into
 * ks, joining composite keys with sep. `origin` names the header's file in
 * messages. Returns 0, or -1 with RS_EXIT_USAGE. */
int rs_csv_keyspec_resolve(rs_csv_keyspec *ks, const char *spec, char sep, const char *fields, uint32_t nfields,
                           const char *origin, rs_error *err);

/* Splits one complete record (without terminator) into unquoted fields,
 * stored NUL-terminated one after another in out; returns the number of
 * fields, or -1 if malformed. Used for headers, not in hot loops. */
int rs_csv_fields(const rs_csv_dialect *d, const char *rec, size_t len, rs_buf *out);

/* The UTF-8 byte order mark (EF BB BF). A header that starts with it is
 * matched and compared without it (it is an encoding mark, not part of the
 * first column's name: as DuckDB and Python's utf-8-sig read it); the
 * header line is still written out byte for byte. */
#define RS_CSV_BOM_LEN 3

/* RS_CSV_BOM_LEN if p[0..len) starts with the UTF-8 byte order mark, else 0. */
size_t rs_csv_bom_len(const char *p, size_t len);

/* Finds the first record boundary at or after `from` in p[0..len), given
 * that p starts at a record boundary: quote parity is counted from p (a
 * doubled quote toggles twice). Returns the offset just past the record
 * terminator that ends the record containing `from`, or len+1 if none
 * (no terminator outside quotes in [from, len)). */
size_t rs_csv_boundary_after(const char *p, size_t len, size_t from);

#endif
