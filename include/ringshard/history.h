/* ringshard/history.h - a new bucket's rows against the keys its history
 * already holds (dedup --append), without reading the history's rows.
 *
 * Consistent bucketing puts every copy of a key in the same bucket, run
 * after run, so the new rows of bucket k need only be checked against the
 * keys of bucket k's files in earlier generations: their key indexes
 * (keyidx.h). rs_history_filter reads the new bucket's keys in parts that
 * fit its budget, looks each part up in every index of the history (the
 * fingerprint blocks that can hold them, then the exact key of every
 * fingerprint that matches), and drops every new row whose key the history
 * holds: the history's copy wins. It holds one part's rows at a time, so
 * its memory is the budget's whatever the bucket's size (or the history's:
 * the indexes are read block by block). What it reads of the history is bounded
 * by the indexes' fingerprints (fences and blocks) plus the keys of the
 * matches, times the number of parts (one unless the new bucket's keys
 * exceed the budget). */
#ifndef RINGSHARD_HISTORY_H
#define RINGSHARD_HISTORY_H

#include <stdint.h>
#include <stdio.h>
#include "ringshard/dedup.h"
#include "ringshard/error.h"
#include "ringshard/dataset.h"

/* What the filter holds apart from a part: the new bucket's reader (its
 * buffer, which grows to twice a row at worst past 1 MiB, and the codec's
 * state), the lookups' stream buffers and fences, the output's FILE. A part
 * gets the rest of the budget. */
#define RS_HISTORY_STREAMS_MEMORY ((uint64_t)3 << 20)

/* One key index of the history. */
typedef struct {
    int dirfd;              /* the bucket directory */
    const char *name;       /* the index under dirfd */
    char *path;             /* for messages (its owner frees it) */
    uint64_t size;          /* as its manifest says */
    rs_keyidx_of of;        /* the file it indexes, as its manifest says */
    uint64_t generation;    /* the indexed file's generation */
} rs_history_index;

typedef struct {
    const rs_history_index *idx;   /* the bucket's history, oldest first */
    size_t nidx;
    uint64_t budget;               /* memory for the filter: a part's rows and keys, and its streams */
    FILE *report;                  /* NULL, or a line per dropped row: KEY TAB g<N> TAB ROW */
    const uint64_t *in_rows;       /* NULL, or the bucket's rows per input (rs_dedup_opts.in_rows): */
    uint64_t *kept_rows;           /* [nin_rows] then gets each one's rows `out` holds */
    size_t nin_rows;
} rs_history_opts;

typedef struct {
    uint64_t rows_in, bytes_in;          /* the new bucket's rows and bytes (rows + LF) */
    uint64_t dropped_rows, dropped_bytes;/* rows whose key the history holds */
    uint64_t dropped_keys;               /* their distinct keys (each a key with copies), counted
                                            exactly within a part (docs/dedup.md) */
    uint64_t index_bytes_read;           /* read from the indexes */
    uint64_t keys_confirmed;             /* new keys found in an index by their exact bytes */
    uint64_t confirm_bytes;              /* of index_bytes_read, read to compare exact keys */
    uint64_t filter_bytes;               /* the filters' size, of the version-2 indexes looked up in */
    uint64_t filter_passes;              /* keys a filter line passed (in each index, each part) */
    uint32_t parts;                      /* parts the new keys were looked up in */
    int filtered;                        /* 1: `out` holds the rows that stay, complete */
    int kept_rows_ok;                    /* with h->in_rows: h->kept_rows counted every row */
} rs_history_result;

/* Reads bucket file `in` (as dedup's pass 1 writes it, read with o's
 * dialect, header and key: dopts) and looks its keys up in the history:
 * writes the rows whose key it lacks to `out` (plain CSV, the header line
 * first when the file has one; r->filtered then says `out` is complete),
 * and the others to h->report, with the generation of the history's oldest
 * copy. Returns 0, or -1 with err (RS_EXIT_IO; RS_EXIT_VERIFY for
 * an index that does not describe its file or is damaged; RS_EXIT_DATA
 * for a malformed row). */
int rs_history_filter(const rs_history_opts *h, const rs_dedup_opts *dopts, const char *in, const char *out,
                      rs_history_result *r, rs_error *err);

#endif
