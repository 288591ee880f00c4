/* ringshard/dedup.h - exact deduplication of one bucket file.
 *
 * A bucket file (as `ringshard bucket` writes it: an optional header line,
 * then rows in input order, gzip members or plain) holds every copy of the
 * keys it owns, so it can be deduplicated on its own. rs_dedup_file reads
 * it, keeps one row per key (the first or the last copy in file order, or
 * one row per distinct row) and writes the survivors, in file order, as a
 * bucket file of the same layout: the header line as its own gzip member,
 * then members of at most RS_DEDUP_CHUNK uncompressed bytes (cut at row
 * ends), so the output depends only on the input, never on the thread.
 *
 * Equality is on the full key bytes (the unquoted key, composite keys
 * joined as the pipeline joins them; with RS_DEDUP_BY_ROW the row's bytes
 * as written), never on a hash alone.
 *
 * Memory: a file whose estimated cost (its bytes + RS_DEDUP_ROW_COST per
 * row) exceeds opts->budget is split again into K sub-files by an
 * independent hash of the key (MurmurHash3_x64_128 with a per-level seed),
 * each deduplicated on its own (recursively, up to RS_DEDUP_MAX_DEPTH
 * levels). A sub-file that still does not fit, at the last level or because
 * it received nearly all the rows (a few keys with very many copies), is
 * deduplicated as a stream: only its distinct keys are held in memory, and
 * the kept rows for the duplicates report are fetched by a second pass.
 * The survivors of the sub-files are marked in a bitmap (one bit per row)
 * and the original file is streamed once more to write them, so the output
 * of a split file is byte-identical to the unsplit one. The sub-files'
 * duplicates reports (temporary files of records tagged with each key's
 * first row in the sub-file) are merged by that same pass, which maps
 * sub-file rows back to the file's rows, into the order of the keys' first
 * occurrence in the file: the report of a split file is byte-identical to
 * the unsplit one too, so nothing depends on the budget (or the threads). */
#ifndef RINGSHARD_DEDUP_H
#define RINGSHARD_DEDUP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "ringshard/csv.h"
#include "ringshard/deflate.h"
#include "ringshard/error.h"
#include "ringshard/dataset.h"
#include "ringshard/reader.h"

#define RS_DEDUP_CHUNK (1u << 20)   /* uncompressed bytes per output member */
#define RS_DEDUP_ROW_COST 176u      /* bytes per row, at most: table (8-byte slots at load
                                       <= 0.7, rounded up to a power of two, and a 56-byte
                                       entry per key) + the row's place */
#define RS_DEDUP_MAX_DEPTH 4
#define RS_DEDUP_MAX_FANOUT 64

typedef enum { RS_DEDUP_KEEP_FIRST = 0, RS_DEDUP_KEEP_LAST, RS_DEDUP_BY_ROW } rs_dedup_mode;

/* What a bucket file read by rs_dedup_file must hold (dedup --buckets:
 * its manifest entry): the dataset layer's check of a stored file's rows
 * as they are read (rs_rows_check). */
typedef rs_rows_check rs_dedup_check;

typedef struct {
    rs_csv_dialect dialect;
    rs_csv_keyspec keyspec;      /* unused with RS_DEDUP_BY_ROW */
    int header;                  /* the input file starts with a header line */
    rs_dedup_mode mode;
    rs_codec_choice codec;
    int compress;                /* output: RS_COMPRESS_* (1 gzip members, 2 zstd frames, 0 plain) */
    int level;                   /* output gzip level (of the caller's rs_deflater) */
    uint64_t budget;             /* memory for one file, bytes */
    const char *tmpdir;          /* where split files go (removed after use) */
    const char *tmpname;         /* unique prefix for this file's split files */
    FILE *dups;                  /* NULL, or receives one line per duplicated key */
    /* NULL, or the input file as a name relative to the directory
     * descriptor in_dirfd (openat: a bucket directory opened once, so that
     * every pass reads the same generation); `in` then names it in
     * messages only */
    const char *in_name;
    int in_dirfd;
    /* With in_name: further parts of the same bucket, read after it as if
     * concatenated (the segments of appended generations), as names under
     * in_dirfd and paths for messages, with their manifest entries
     * (in_more_files: a segment's header line, header_bytes of stored
     * bytes, is skipped; an older version's has none). o->check then says
     * what all the parts hold together (rows, bytes, sizes summed; the
     * CRC-32 of their data one after the other). */
    const char *const *in_more;
    const char *const *in_more_paths;
    const rs_manifest_file *const *in_more_files;
    size_t nin_more;
    const rs_dedup_check *check; /* NULL, or what the input must hold */
    /* dedup --append */
    int no_header_out;           /* the output gets no header line (a segment) */
    const char *index_out;       /* NULL, or where the output's key index goes (keyidx.h) */
    uint64_t index_memory;       /* with index_out: what its writer may hold in all (0: its default) */
    FILE *dropped;               /* NULL, or a line per row not kept (an earlier copy
                                    kept): KEY TAB "repeat" TAB ROW, escaped as the
                                    duplicates report (instead of `dups`) */
    /* NULL, or the input's rows per input of the run, in order (pass 1
     * writes a bucket input after input: nin_rows counts): the rows kept
     * of each are then counted into kept_rows[nin_rows], for the
     * manifest's files[].runs (rs_dedup_result.kept_rows_ok) */
    const uint64_t *in_rows;
    size_t nin_rows;
    uint64_t *kept_rows;
    const char *in_path_;        /* internal: set by rs_dedup_file */
} rs_dedup_opts;

/* A walk of a bucket's rows along the inputs they came from (rows[i] of
 * input i, one after the other): each row taken, kept or not, advances
 * it, and kept[i] counts input i's rows kept. */
typedef struct {
    const uint64_t *rows;
    uint64_t *kept;
    size_t n, cur;
    uint64_t end, seen;   /* rows up to the end of input cur; rows taken */
} rs_input_walk;

/* Starts w over rows[0..n) (kept[0..n) zeroed); rows NULL: a walk that
 * counts nothing. */
void rs_input_walk_start(rs_input_walk *w, const uint64_t *rows, uint64_t *kept, size_t n);

static inline void rs_input_walk_row(rs_input_walk *w, int keep)
{
    if (!w->rows)
        return;
    while (w->seen >= w->end && w->cur + 1 < w->n)
        w->end += w->rows[++w->cur];
    if (keep && w->seen < w->end)
        w->kept[w->cur]++;
    w->seen++;
}

/* Whether w took every row the counts say, and no more. */
int rs_input_walk_whole(const rs_input_walk *w);

typedef struct {
    uint64_t rows_in, bytes_in;  /* data rows / bytes read (rows + LF) */
    uint64_t rows, bytes;        /* data rows / bytes written (rows + LF) */
    uint64_t dup_rows, dup_bytes; /* data rows / bytes dropped as duplicates (rows + LF),
                                    counted apart from the written ones, so that
                                    rows_in = rows + dup_rows (and bytes) checks the run */
    uint64_t file_bytes;         /* size of the output file */
    uint32_t crc;                /* CRC-32 of the data bytes written */
    uint64_t dup_keys;           /* keys (or rows) that had more than one copy */
    uint32_t splits;             /* files split again (this one and nested) */
    uint32_t streamed;           /* sub-files deduplicated as a stream (keys only in memory) */
    uint64_t index_bytes;        /* with index_out: the index file's size */
    uint32_t index_crc32;        /* and its CRC-32 */
    uint64_t header_bytes;       /* of file_bytes, its header line's (a member of its own) */
    uint32_t stored_crc;         /* CRC-32 of the file_bytes as stored (compressed, header included) */
    int kept_rows_ok;            /* with o->in_rows: o->kept_rows counted every row (the input held
                                    exactly the rows in_rows says) */
} rs_dedup_result;

/* Deduplicates bucket file `in` into `out` (created, truncated). rows_hint
 * and bytes_hint are the file's data rows and uncompressed bytes when known
 * (0: unknown, the file is measured by a first pass) and decide whether it is
 * split. dz is the calling thread's compressor. With o->dups, every key with
 * more than one copy is written as one line "KEY<TAB>COUNT<TAB>WINNER"
 * (WINNER: the kept row; BY_ROW: "ROW<TAB>COUNT"), escaped as \\ \t \n \r,
 * in the order of the keys' first occurrence in the file, split or not.
 * Returns 0, or -1 with err (RS_EXIT_DATA
 * for a malformed row, naming the file and record; RS_EXIT_IO; with
 * o->check, RS_EXIT_VERIFY naming the file and what differs from it). */
int rs_dedup_file(const rs_dedup_opts *o, rs_deflater *dz, const char *in, uint64_t rows_hint,
                  uint64_t bytes_hint, const char *out, rs_dedup_result *res, rs_error *err);

/* Resolves a --key specification (column names or 1-based indexes,
 * comma-separated) against a header line (NULL: indexes only), as the
 * pipeline does. */
int rs_dedup_keyspec(const char *key, char sep, const rs_csv_dialect *d, const char *header_line,
                     size_t header_len, rs_csv_keyspec *ks, rs_error *err);


/* A --duplicates part or report being written: a FILE over a descriptor
 * that keeps the errno of its first failed write (rs_dedup_file leaves the
 * report's errors to ferror at the end, when errno no longer says why). */
typedef struct {
    int fd;
    int err;   /* errno of the first failure, 0 while none */
    char *buf; /* the FILE's buffer (NULL: stdio's own), freed by rs_dedup_report_finish */
    unsigned long long written; /* bytes written so far */
} rs_dedup_report;

/* Creates (truncates) path and returns a FILE writing to it through r;
 * NULL with errno. Close it with rs_dedup_report_finish. scratch: 1 for a
 * run's own part, removed once copied (created 0600), 0 for the report
 * (0666 less the umask). */
FILE *rs_dedup_report_open(const char *path, int scratch, rs_dedup_report *r);

/* Closes f (opened by rs_dedup_report_open with r): 0, or the errno of its
 * first failure (EIO when none was kept). */
int rs_dedup_report_finish(FILE *f, rs_dedup_report *r);

/* Concatenates the per-bucket --duplicates parts[0..n) into tmp (created),
 * in order, removing each part once copied, then fsyncs tmp: the report's
 * temporary, renamed over the report when the output is published. prev,
 * unless NULL, is copied first and kept (dedup --append --commit-every:
 * the report an earlier generation of the same command published).
 * Messages name the report as `shown`. A pipe whose reader has left
 * (EPIPE: `--duplicates - | head`) is no error: the rest of the report is
 * not written (the parts are removed all the same), *cut is set to 1 and
 * *written to the bytes the pipe took, so that the dedup itself is
 * published (as `tee -p` goes on when a pipe closes). Returns 0, or -1
 * with err (RS_EXIT_IO). */
int rs_dedup_report_concat(const char *tmp, const char *shown, const char *prev, char *const *parts, size_t n,
                           int *cut, unsigned long long *written, rs_error *err);

#endif
