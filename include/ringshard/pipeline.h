/* ringshard/pipeline.h - the parallel row pipeline shared by every command
 * that reads data (bucket, plan with data, stats on data, verify, dedup).
 *
 * It reads the inputs in order (gzip or plain, see reader.h), cuts the
 * decompressed stream into batches at record boundaries, and has the
 * OpenMP team parse rows, extract keys and ROUTE every row to one of
 * `ndest` destinations (or drop it). With an output directory, each
 * destination is a file that receives its rows in input order, as gzip
 * members or plain, byte-identical for any thread count. Without one,
 * rows are only counted (stats, plan without --emit). The design essay is
 * at the top of src/pipeline/pipeline.c. */
#ifndef RINGSHARD_PIPELINE_H
#define RINGSHARD_PIPELINE_H

#include <stddef.h>
#include <stdint.h>
#include "ringshard/buf.h"
#include "ringshard/csv.h"
#include "ringshard/error.h"
#include "ringshard/dataset.h"
#include "ringshard/reader.h"

#define RS_ROUTE_DROP UINT32_MAX

/* Called for every row by the worker threads, concurrently: return the
 * destination in [0, ndest) or RS_ROUTE_DROP. `tid` in [0, threads) lets the
 * router keep per-thread counters without locks (rs_pipeline_threads()
 * tells how many before the run). `input` is the index of the input the
 * row came from. key is the row's key (unquoted; composite keys joined),
 * row the record's original bytes without its line end. */
typedef uint32_t (*rs_route_fn)(void *ctx, int tid, uint32_t input, const char *key, size_t keylen,
                                const char *row, size_t rowlen);

/* A faster router for placements on a ring, called a block of rows at a
 * time (up to a few dozen) in three steps that the pipeline spreads over
 * the scanning of the next two blocks, so that the ring's cache misses are
 * served meanwhile: `positions` hashes the block's keys (just scanned, in
 * cache) into pos[] and prefetches what the lookup reads first;
 * `prefetch`, a block later, reads that into hint[] and prefetches what
 * the lookup reads next; `owners`, a block later still, returns the
 * destinations from pos[] and hint[]. With keys_only, rows take
 * the plain `route` path. */
enum { RS_DIRECT_AUTO = 0, RS_DIRECT_ON = 1, RS_DIRECT_OFF = 2 };

typedef struct {
    void (*positions)(void *ctx, const char *const *keys, const size_t *keylens, size_t n, uint64_t *pos);
    void (*prefetch)(void *ctx, const uint64_t *pos, size_t n, uint64_t *hint);
    void (*owners)(void *ctx, int tid, uint32_t input, const uint64_t *pos, const uint64_t *hint, size_t n,
                   uint32_t *dest);
} rs_pos_router;

typedef enum { RS_BAD_ROW_FAIL = 0, RS_BAD_ROW_SKIP, RS_BAD_ROW_QUARANTINE } rs_bad_row_policy;

typedef struct {
    /* inputs */
    const char *const *inputs;  /* paths; "-" is standard input */
    size_t ninputs;
    /* NULL, or the inputs as names relative to the directory descriptor
     * input_dirfd, opened with openat(2) (inputs[] then only names them in
     * messages): the files of a bucket directory opened once, so that a
     * replacement of the directory during the run cannot mix generations */
    const char *const *input_names;
    int input_dirfd;
    /* NULL, or per input the manifest that lists it (a bucket directory's
     * files): a data error reading input i is then a file that differs from
     * its manifest (rs_bucketdir_vouched_error: RS_EXIT_VERIFY) */
    const char *const *input_vouched;
    rs_csv_dialect dialect;      /* delimiter, max_record */
    int header;                  /* 1: each input starts with a header line (all must agree) */
    /* NULL, or per input 1 when it has no header line although `header` is
     * set: a later part of a bucket whose header is elsewhere (a segment of
     * an appended generation, docs/format-generations.md). Its rows start at its first
     * byte and its lines are numbered from there. */
    const uint8_t *input_headerless;
    /* NULL, or the header line (without line end) the inputs are read
     * against: the key is resolved from it when a headerless input comes
     * before any header was read, and, with header_ref_name set, every
     * input's header must equal it (as a second input's header must equal
     * the first's), the messages naming header_ref_name as the reference
     * (bucket --append: DIR/manifest.json). */
    const char *header_ref;
    const char *header_ref_name;
    const char *key;             /* column names or 1-based indexes, comma-separated; NULL: column 1 */
    char key_sep;                /* joins composite keys */
    int key_sep_check;           /* 1 (dedup): a row whose composite key has a part holding
                                    key_sep is a malformed row (its joined key could be another
                                    row's: docs/dedup.md) */
    rs_codec_choice codec;
    /* execution */
    int threads;                 /* 0: all cores */
    uint64_t memory;             /* bound on the process's memory, bytes: what the
                                    pipeline allocates plus `held` plus a fixed
                                    allowance for code and libraries */
    uint64_t held;               /* bytes the caller holds during the run (the ring:
                                    rs_pipeline_route_by_ring sets it) */
    int progress;                /* 1: progress line on stderr (caller checks isatty) */
    const char *progress_label;  /* NULL, or what the progress line starts with
                                    ("generation 5 (2/4)": an append) */
    /* inputs without a row (rs_pipeline_empty_input): 0, not checked (the
     * jobs' own reads: segments, verify); RS_EMPTY_REFUSE, the run fails
     * (RS_EXIT_DATA naming the first) before anything is published, as a
     * broken upstream export must not pass for a quiet day;
     * RS_EMPTY_ALLOW, counted only (--allow-empty) */
    int empty_inputs;
    rs_bad_row_policy bad_rows;
    const char *quarantine;      /* with RS_BAD_ROW_QUARANTINE: file for rejected rows (created or
                                  * truncated; appended to when rs_outfile_in_place says so) */
    int quarantine_continue;     /* 1: the quarantine file holds earlier rows already (an earlier
                                  * generation's of the same command): appended to, its
                                  * column-name line not written again */
    const char *quarantine_name; /* how messages name that file (NULL: quarantine): a caller that
                                  * writes a temporary to publish it whole names the target */
    /* routing */
    uint32_t ndest;
    rs_route_fn route;
    void *route_ctx;
    const rs_pos_router *pos_router; /* optional: used (with route_ctx) instead
                                        of route when set and !keys_only */
    const uint8_t *const *only_dest; /* NULL, or per input (indexed as routers see
                                        inputs: with input_base) NULL (every row
                                        kept) or [ndest], 1 where its rows are kept: a
                                        row routed elsewhere is read and dropped, counted
                                        in rs_input_stats.filtered, not in rows (an
                                        append that brings back a repair's lost nodes) */
    const rs_row_range *const *const *only_rows; /* NULL, or per input (as only_dest) NULL or
                                        [ndest] NULL (every row routed there kept) or ranges,
                                        sorted, ending with one whose from is UINT64_MAX: of
                                        the input's rows routed to that destination, numbered
                                        from 0 in input order, only those the ranges hold are
                                        written; the others are read and dropped in the
                                        ordered write stage, counted in filtered (an append
                                        that brings back the rows of a repair's damaged
                                        members). An input must be one unit (reader.h). */
    /* output: NULL paths = count only */
    const char *const *dest_paths; /* ndest files, created (truncated) by the pipeline */
    int dest_scratch;            /* 1: dest_paths are the run's private scratch
                                    (mode 0600), 0: files for the user (0666
                                    less the umask; util/filemode.h) */
    int compress;                /* RS_COMPRESS_*: 1 gzip members, 2 zstd frames, 0 plain */
    int level;                   /* gzip or zstd level */
    int keys_only;               /* write only the key, not the row */
    int input_crc;               /* 1: compute rs_input_stats.crc (verify) */
    int input_checksum;          /* 1: compute rs_input_stats.checksum of every
                                    input read whole (reader.h) */
    int input_rows;              /* 1: count each input's rows written to each
                                    destination (rs_input_stats.dest_rows: what
                                    a manifest's files[].runs say) */
    uint32_t input_base;         /* added to the input index routers see (a
                                    cluster rank's first input), 0 normally */
    int write_behind;            /* 1: start writing the outputs to disk as
                                    batches complete (writeback.h): for outputs
                                    that are kept and will be fsync'd */
    int direct_io;               /* outputs with write_behind: RS_DIRECT_AUTO
                                    (0) O_DIRECT for plain outputs where the
                                    file system takes it, the page cache for
                                    compressed ones (measured:
                                    docs/performance.md); RS_DIRECT_ON for both;
                                    RS_DIRECT_OFF the page cache (direct.h) */
    int no_header;               /* 1: write no header into the outputs (a
                                    cluster rank writing a piece of each file:
                                    res->header_out still says what it would be) */
    /* units (reader.h, rs_input_units): a batch never spans two. A cluster
     * rank reads units [unit_lo, ...) of inputs[0] and [..., unit_hi) of
     * inputs[ninputs - 1] (unit_hi 0: all); 0 and 0 read everything. */
    uint32_t unit_lo, unit_hi;
    uint64_t unit_bytes;         /* 0: rs_unit_bytes() */
    /* A cluster rank: the size and unit count of each of its inputs as
     * rank 0 listed them (the ranges were cut from that listing); a file
     * that lists otherwise here changed meanwhile, an error. NULL: none. */
    const uint64_t *expect_size, *expect_units;
    /* lanes (cluster/lanes.h: several pipelines of one process at once) */
    int producers;               /* upper bound on the lanes, 0: automatic; the
                                    pipeline itself ignores it */
    size_t batch_bytes;          /* 0: the batch size follows from memory; else
                                    this size (a lane uses its process's, so that
                                    the output's members do not depend on the
                                    lanes), and memory must hold 8 of them */
    int tid_base;                /* added to the tid routers see (a lane's first
                                    thread among the process's), 0 normally */
} rs_pipeline_opts;

typedef struct {
    uint64_t rows, bytes;        /* rows and bytes (row bytes + 1 LF each) written or counted */
    uint64_t file_bytes;         /* size of the output file, header included */
    uint32_t crc;                /* CRC-32 of the rows' bytes as written (after the header) */
    uint32_t stored_crc;         /* CRC-32 of the file's file_bytes as stored (compressed, header
                                    included): the manifest's files[].stored_crc32 */
} rs_dest_stats;

typedef struct {
    const char *path;
    uint64_t size;               /* compressed size on disk (0 for a pipe) */
    uint64_t rows;               /* data rows read (header excluded) */
    uint64_t bytes;              /* data bytes read, line ends counted as one LF (as written) */
    uint64_t rejected;           /* rows rejected under skip/quarantine */
    uint64_t blank_lines;        /* empty lines, skipped as libcsv skips them */
    uint32_t crc;                /* with input_crc: CRC-32 of the data rows, each
                                    as written to outputs (row bytes + LF) */
    uint64_t zero_padding;       /* zero bytes after the last gzip member (reader.h) */
    uint64_t checksum;           /* with input_checksum: rs_crc64 of the input's
                                    stored bytes, when has_checksum */
    int has_checksum;            /* 1: the input was read whole with the checksum on
                                    (not a unit of a ringshard file, see reader.h) */
    uint64_t content;            /* with has_content: rs_crc64 of its content (its
                                    decompressed bytes, rs_reader_content) */
    uint64_t content_size;       /* and their number */
    int has_content;             /* as has_checksum */
    uint64_t filtered;           /* rows read and dropped by only_dest (not in rows, bytes) */
    uint64_t *dest_rows;         /* with opts.input_rows: [ndest] its rows written to each
                                    destination (in the block res->input_rows); else NULL */
} rs_input_stats;

typedef struct {
    rs_dest_stats *dest;         /* ndest entries */
    rs_input_stats *input;       /* ninputs entries */
    uint64_t *input_rows;        /* with opts.input_rows: [ninputs * ndest] the block
                                    input[i].dest_rows point into; else NULL */
    char *header;                /* the header line (malloc'd; NULL with no header) */
    size_t header_len;
    char **header_fields;        /* column names */
    uint32_t nheader_fields;
    char *header_fields_storage; /* owns the strings header_fields point to */
    uint64_t rows, bytes, rejected;
    double seconds;
    /* where the header came from: index into opts->inputs and its line
     * number (1-based); -1 and 0 with no header */
    int64_t header_input;
    uint64_t header_line;
    char *header_out;            /* the header line the outputs start with, LF
                                    included (keys-only: the key columns); NULL
                                    with no header (malloc'd) */
    size_t header_out_len;
    /* on failure: the input the error is in (-1: none, e.g. a write
     * error), and, when the error is an input's header differing from the
     * first one, that header's line (else 0) */
    int64_t fail_input;
    uint64_t mismatch_line;
    char *mismatch_fields;       /* and its fields (NUL-separated, malloc'd; NULL if none), */
    uint32_t mismatch_nfields;   /* how many, */
    int mismatch_bom;            /* whether it started with a UTF-8 BOM */
} rs_pipeline_result;

/* res->input_rows and each input's dest_rows, zeroed, when o->input_rows
 * (else, or out of memory: NULL, and no runs are recorded). */
void rs_pipeline_input_rows(const rs_pipeline_opts *o, rs_pipeline_result *res);

/* Says what first differs between a header's fields and the reference
 * header's (both NUL-separated, as rs_csv_fields leaves them; compared
 * without a leading UTF-8 BOM, see csv.h), for "header differs" messages:
 * "field 3 is 'x', REF has 'y'", "field 4 is 'x', REF has only 3 fields" or
 * "it has only 3 fields, REF has 'y' as field 4"; control bytes, quotes and
 * backslashes escaped (\xNN), a UTF-8 BOM shown as <UTF-8 BOM>, long names
 * cut. bom and ref_bom say whether each header line started with a BOM: when
 * only one did, the text says that it was ignored. Writes a NUL-terminated
 * text into out[0..cap). */
void rs_pipeline_header_difference(char *out, size_t cap, const char *fields, uint32_t nf, int bom, const char *ref,
                                   const char *ref_fields, uint32_t ref_nf, int ref_bom);

/* What --memory keeps for code, libraries and runtimes (measured: 10 MiB
 * of RSS for a tiny input at -j 1, no ring). */
#define RS_MEMORY_FIXED ((uint64_t)14 << 20)

/* What the parts of one pipeline cost in memory, for the run plan
 * (ringshard/runplan.h), which shares --memory out among them. */
typedef struct {
    uint64_t outputs;            /* the outputs' state (per output its counts, file) */
    uint64_t base;               /* RS_MEMORY_FIXED + held + outputs */
    uint64_t threads;            /* the threads': stacks, buffers, compressors */
    uint64_t per_group;          /* one parse group's: accumulators, counts, scatter */
    size_t batch_min, batch_max; /* the batch sizes the pipeline takes */
    int max_groups;              /* parse groups a batch is cut into at most */
} rs_pipeline_costs;

/* The costs of a run with options o (outputs, compression, held) on
 * `threads` threads. */
void rs_pipeline_costs_of(const rs_pipeline_opts *o, int threads, rs_pipeline_costs *c);

/* How one pipeline runs, as the run plan decided it: the pipeline takes
 * it as given. */
typedef struct {
    int threads;                 /* its OpenMP team */
    int groups;                  /* parse groups (the output does not depend on them) */
    size_t batch_bytes;          /* the batch size (the output's members do) */
    size_t member_keep;          /* what a thread keeps of its buffers between batches */
} rs_pipeline_shape;

/* The least --memory a run with opts (threads, outputs, compression, held)
 * can keep to: runs below it are refused. (The run plan's, runplan.c.) */
uint64_t rs_pipeline_min_memory(const rs_pipeline_opts *opts);

/* The batch size a run with opts would use (its cut points, hence its
 * output's members, follow from it), or 0 when opts->memory is below what
 * the run needs (rs_pipeline_run would refuse it). With batch_bytes set:
 * batch_bytes, or 0 when memory cannot hold its buffers. (The run
 * plan's, runplan.c.) */
size_t rs_pipeline_batch_bytes(const rs_pipeline_opts *opts);

/* Whether `lanes` pipelines of one process (cluster/lanes.h), each with
 * its share of opts->memory (what the ring and the libraries leave, split
 * evenly: *share gets it), ceil(threads / lanes) threads and batches of
 * cap bytes (the process's batch size, so that the output does not depend
 * on the lanes), fit their shares. (The run plan's, runplan.c.) */
int rs_pipeline_lanes_fit(const rs_pipeline_opts *opts, int lanes, size_t cap, uint64_t *share);

/* Runs the pipeline. Returns 0, or -1 with err: RS_EXIT_USAGE when
 * opts->memory is below rs_pipeline_min_memory (the message says what it
 * needs and why; the plan is ringshard/runplan.h's), RS_EXIT_DATA for bad input
 * (the message names the file, line and record, or the gzip byte offset),
 * RS_EXIT_IO for read/write failures, RS_EXIT_INTERRUPTED after SIGINT or
 * SIGTERM (see rs_pipeline_interrupt). On failure the destination files
 * may be partial: the caller publishes nothing (see outdir.h). */
int rs_pipeline_run(const rs_pipeline_opts *opts, rs_pipeline_result *res, rs_error *err);

/* rs_pipeline_run with the shape the run plan decided (rs_pipeline_run
 * plans one pipeline with opts and calls this; a process's lanes each get
 * theirs, cluster/lanes.h). shape NULL: the plan refused the run (err says
 * why): res is only made empty, -1. */
int rs_pipeline_run_shaped(const rs_pipeline_opts *opts, const rs_pipeline_shape *shape, rs_pipeline_result *res,
                           rs_error *err);

/* The defaults the commands start from: every field zero (threads from
 * OMP_NUM_THREADS or the cores, no progress line, no quarantine), then
 * comma-separated with a header, key column 1, key-sep '|', 1 GiB of
 * memory, gzip level 1 output. */
void rs_pipeline_opts_default(rs_pipeline_opts *po);

/* The number of worker threads a run with opts->threads will use
 * (router contexts size their per-thread state with it; the run plan's,
 * rs_run_threads). */
int rs_pipeline_threads(const rs_pipeline_opts *opts);

/* Starts and joins `threads` threads (a run's -j N: N-1 OpenMP workers
 * and the write-behind thread), then fills the OpenMP pool with N. libgomp
 * cannot report a thread it fails to create - it prints its own message
 * and exits, which would leave the output's temporary directory behind -
 * so the jobs call this before creating it. Returns 0, or -1 with err
 * (RS_EXIT_IO: the reason, "ulimit -u?"). */
int rs_pipeline_threads_ready(int threads, rs_error *err);

/* Routes every row to the node that owns its key on `ring` (one destination
 * per node, in node-list order), with batched lookups: sets ndest, route,
 * pos_router and route_ctx, and adds the ring's bytes to held. The ring
 * must outlive the run. */
struct rs_ring;
void rs_pipeline_route_by_ring(rs_pipeline_opts *o, const struct rs_ring *ring);

/* The bytes every output of a run with options o starts with, given the
 * header line `line` (LF included; len 0 for no header): a gzip member of
 * the line (an empty member when there is none, so that every gzip output
 * is valid gzip), or the line itself, or nothing. Appends to out; 0 or -1
 * (out of memory). */
int rs_pipeline_header_bytes(const rs_pipeline_opts *o, const char *line, size_t len, rs_buf *out);

/* Frees what rs_pipeline_run allocated in res. */
void rs_pipeline_result_free(rs_pipeline_result *res);

enum { RS_EMPTY_UNCHECKED = 0, RS_EMPTY_REFUSE, RS_EMPTY_ALLOW };

/* Whether input i of a finished run counts as empty: it gave no row (none
 * read, none rejected) and is 0 bytes (a regular file; nothing on a pipe),
 * or held no header line either (nothing once decompressed: a gzip of
 * nothing; with one input only, as the run's header tells), or o->key
 * names a key column by name (a header-only export). A header-only input
 * read by column numbers alone passes. 1 or 0. */
int rs_pipeline_empty_input(const rs_pipeline_opts *o, const rs_pipeline_result *res, size_t i);

/* How many inputs of a finished run are empty (rs_pipeline_empty_input). */
size_t rs_pipeline_empty_inputs(const rs_pipeline_opts *o, const rs_pipeline_result *res);

/* How many inputs without rows RS_EMPTY_ALLOW let pass so far in this
 * process (rs_pipeline_check_empty counts them), *first the first one's
 * name ("" when none). */
size_t rs_pipeline_allowed_empty(const char **first);

/* How many inputs read so far in this process (rs_pipeline_check_empty
 * counts them) ended in zero bytes after their last gzip member or zstd
 * frame, accepted as padding; *bytes those zero bytes, *first the first
 * one's name. A copy cut short into a preallocated file looks the same:
 * the command says so (exit 0, as gzip reads it). */
size_t rs_pipeline_padded(const char **first, uint64_t *bytes);

/* With o->empty_inputs RS_EMPTY_ALLOW: counts the empty inputs
 * (rs_pipeline_allowed_empty), 0. With RS_EMPTY_REFUSE: -1 with err (RS_EXIT_DATA, "FILE:
 * empty input (0 bytes): ...") at the first empty input; else 0. */
int rs_pipeline_check_empty(const rs_pipeline_opts *o, const rs_pipeline_result *res, rs_error *err);

/* Asks a running pipeline to stop (async-signal-safe): the batch in
 * progress is abandoned (its remaining parse groups and outputs are
 * skipped) and the run fails with RS_EXIT_INTERRUPTED. */
void rs_pipeline_interrupt(void);

/* 1 once rs_pipeline_interrupt was called. */
int rs_pipeline_interrupted(void);

/* Bucket and move directories (ringshard/dataset.h) as a pipeline run
 * reads and writes them: a directory's files as the run's inputs, what the
 * run found checked against their manifests, and a manifest started from
 * a finished run. */
#include "ringshard/dataset.h"
#include "ringshard/ring.h"

/* The pipeline inputs for files idx[0..n) of bd (idx NULL: every file, in
 * order): what rs_bucketdir_inputs points a pipeline at, owned here. */
typedef struct {
    const char **names, **paths;
    uint8_t *headerless;
    const char **vouched;   /* each one's manifest: one string a generation, in manifests */
    char **manifests;       /* [ngens + 1] the base's, then each generation's (NULL: not selected) */
    size_t nmanifests;
} rs_bucketdir_sel;

/* Points the pipeline's inputs at files idx[0..n) of bd (idx NULL: every
 * file): inputs get "DIR/<name>" for messages, input_names the names under
 * bd->fd, input_headerless the segments, input_vouched their manifests, header_ref the base's header (a
 * lane may start with a segment). sel owns the arrays
 * (rs_bucketdir_sel_free). 0, or -1 when out of memory. */
int rs_bucketdir_inputs(const rs_bucketdir *bd, const size_t *idx, size_t n, rs_pipeline_opts *po,
                        rs_bucketdir_sel *sel, rs_error *err);

void rs_bucketdir_sel_free(rs_bucketdir_sel *sel);

/* rs_bucketdir_check_found with what a pipeline run found in file i of bd
 * (its input statistics; found->crc as input_crc computes it). */
int rs_bucketdir_check_file(const rs_bucketdir *bd, size_t i, const rs_input_stats *found, int check_crc,
                            const char *header, rs_error *err);

/* m->inputs from a finished run's statistics (their checksums' text in
 * the same block: freeing m->inputs frees them). 0, or -1 with err. */
int rs_manifest_inputs(rs_manifest *m, const rs_pipeline_opts *po, const rs_pipeline_result *res, rs_error *err);

/* Starts manifest m of `kind` for a finished pipeline run: the ring, the
 * options that shape the files (key, delimiter, header, compression, keys
 * only), every input's statistics (its checksum when the run took one),
 * rejected rows and seconds; m->files gets
 * room for nfiles entries (nfiles itself is left 0). Strings point into
 * kind, ring, po and res (they must outlive m), the checksums into the
 * block of m->inputs; m->inputs and m->files are
 * malloc'd for the caller to free. The caller fills files, rows and bytes
 * (and, for moves, the new ring). Returns 0, or -1 with err (RS_EXIT_IO)
 * when out of memory. */
int rs_manifest_start(rs_manifest *m, const char *kind, const rs_ring *ring, const rs_pipeline_opts *po,
                      const rs_pipeline_result *res, size_t nfiles, rs_error *err);

/* Whether a run of po's inputs counts each input's rows per destination
 * (opts.input_rows), for the manifest's files[].runs: with several inputs
 * and at most RS_RUNS_MAX_CELLS inputs x destinations. The counts (8 bytes
 * a cell: 2 MiB at most, a level of lanes or ranks twice that) live in
 * RS_MEMORY_FIXED's margin, so that the memory plan, hence the batches and
 * the bytes written, do not depend on them; beyond, no runs are recorded
 * and a damaged file of several inputs is lost whole. */
#define RS_RUNS_MAX_CELLS ((size_t)1 << 18)
int rs_pipeline_wants_input_rows(const rs_pipeline_opts *po);

/* The manifest of `kind` of a finished run routed by ring
 * (rs_manifest_start), whose output d is the file names[d] of node d:
 * every output (a base directory's), or with segments only the outputs
 * that got rows, each starting with the header line (a generation's);
 * the rows and data bytes written; with po->input_rows, each file of
 * several inputs' runs (malloc'd: rs_manifest_of_run_free). Strings point
 * into names and as rs_manifest_start's. 0, or -1 with err (RS_EXIT_IO). */
int rs_manifest_of_run(rs_manifest *m, const char *kind, const rs_ring *ring, const rs_pipeline_opts *po,
                       const rs_pipeline_result *res, char *const *names, int segments, rs_error *err);

/* Frees what rs_manifest_of_run allocated (the inputs, the files, their
 * runs). */
void rs_manifest_of_run_free(rs_manifest *m);

#endif
