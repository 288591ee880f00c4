/* src/pipeline/pipe.h - internal: what the pipeline's files share (the
 * batch, the producer's and the run's state, the parse groups'
 * accumulators and entries), and the functions one stage calls in
 * another. The design is told at the top of pipeline.c; which
 * file holds which stage:
 *   produce.c  read and inflate the inputs, headers and units, cut batches
 *              and segments (the producer);
 *   route.c    scan records, hash and place keys, keep each row's entry for
 *              its destination, quarantine helpers (the parse groups);
 *   emit.c     open the outputs, gather a destination's rows and compress
 *              and write them, header lines, direct I/O;
 *   cost.c     what its parts cost in memory (the run plan,
 *              src/runplan/, shares --memory out among them);
 *   pipeline.c the batches' OpenMP region, the merge, the run.
 * Not a public header; not for other directories. */
#ifndef RS_PIPELINE_PIPE_H
#define RS_PIPELINE_PIPE_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include "ringshard/deflate.h"
#include "ringshard/direct.h"
#include "ringshard/pipeline.h"
#include "ringshard/writeback.h"

#define RS_SEGMENTS 64
#define RS_BATCH_MAX ((size_t)64 << 20)
#define RS_BATCH_MIN ((size_t)64 << 10)
#define RS_QCK ((size_t)64 << 10)     /* quote-count checkpoint spacing (see batch) */
/* How messages name the quarantine file. */
static inline const char *quarantine_name(const rs_pipeline_opts *o)
{
    return o->quarantine_name ? o->quarantine_name : o->quarantine;
}

typedef struct {
    char *data;
    size_t cap, len;        /* len: bytes of complete records handed over */
    uint32_t input;
    uint64_t start_line;    /* the first batch of an input: lines of its header
                               (and blank lines before it); later ones: 0. The
                               team adds up the lines it parses. */
    size_t seg[RS_SEGMENTS + 1];
    int end;                /* no more batches */
    rs_error err;           /* the reader failed before this batch */
    /* units (reader.h): a batch never spans two */
    uint32_t unit;          /* of the input */
    int unit_first;         /* the unit's first batch: numbering starts at
                               line_base and record_base (units after the first) */
    int unit_last;          /* its last batch: check the counts after the merge */
    uint64_t line_base, record_base;
    const rs_input_unit *u; /* the unit (NULL: a whole input, nothing to check) */
    uint64_t hdr_records;   /* records before the data: the header (blank lines are not records) */
    /* Quote counts, taken as the producer reads (while the bytes are still
     * in its cache) instead of in two more passes over the whole batch:
     * quotes is the count in data[0..len), qck[j] the count in
     * data[0..j*RS_QCK) for every checkpoint j*RS_QCK <= len. */
    size_t quotes;
    uint32_t *qck;
    /* A BAD batch holds no rows but stands for one malformed record that
     * no batch could hold (see bad_record): the first fault in it, the
     * line ends it spans, and (skip/quarantine) its first max_record bytes. */
    int bad;
    rs_csv_fault bad_fault;
    uint64_t bad_lines;
    rs_buf bad_row;
} batch;

/* The inputs after the producer's, read ahead by idle threads (ahead.c). */
#define RS_AHEAD_SLOTS 3
#define RS_AHEAD_NONE UINT32_MAX
typedef struct {
    uint32_t input;         /* the input read ahead (RS_AHEAD_NONE: none) */
    int opened, done, failed;
    rs_reader *rd;
    rs_buf stash;           /* the input's first bytes, inflated */
    rs_error err;           /* failed: the open's or the read's error */
} ahead_slot;

typedef struct {
    int busy;               /* a thread holds it (atomic flag) */
    int wanted;             /* the producer is taking a stash: a helper stops */
    uint32_t base;          /* the input after the producer's */
    ahead_slot slot[RS_AHEAD_SLOTS];
} read_ahead;

/* The most bytes read ahead of one input: its first batch (produce.c's ramp). */
#define RS_AHEAD_MAX(cap) ((cap) / 8)

typedef struct {
    const rs_pipeline_opts *o;
    rs_pipeline_result *res;
    batch b[2];
    size_t cap;
    /* the producer's position */
    uint32_t next_input;
    uint32_t unit;          /* of next_input */
    int unit_last_sent;     /* a batch of this unit was marked unit_last */
    uint64_t hdr_records;   /* of next_input, see batch */
    rs_input_unit **units;  /* per input */
    size_t *nunits;
    int whole;              /* the settings may move record boundaries: every
                               file is read whole (units_read_whole) */
    rs_reader *rd;
    read_ahead ahead;
    rs_buf stash;           /* taken from ahead with rd: read before rd */
    size_t stash_pos;
    int stash_failed;       /* reading ahead failed after the stash: */
    rs_error stash_err;     /* the error, given once the stash is read */
    int eof;
    int ramp;               /* batches of the unit produced, up to RS_RAMP (see produce) */
    rs_buf carry;           /* the incomplete last record of the last batch */
    uint64_t consumed_done; /* compressed bytes of finished inputs */
    uint64_t consumed_now;  /* written by the producer, read between regions */
    uint64_t total_size;
    int size_unknown;       /* an input is a pipe: total_size is not the total */
    /* header and key */
    rs_buf header_fields;   /* the first input's fields, NUL-separated */
    int header_bom;         /* its header line starts with a UTF-8 BOM */
    rs_csv_keyspec keyspec;
    int keyspec_ready;
    int quarantine_errno;   /* the first failed write's, for the message */
} pipe_state;

typedef struct {
    int failed;
    size_t offset;          /* in the batch */
    uint64_t line, record;  /* within the batch */
    rs_csv_fault fault;
} thread_fault;

typedef struct {
    size_t start;           /* of the entry in thread_acc.quarantine */
    uint64_t line, record;  /* relative to the thread's range */
} quarantine_mark;

typedef struct {
    uint64_t rows, bytes, blank, rejected, lines, records;
    uint64_t filtered;      /* rows read and dropped by only_dest (not in rows, bytes) */
    uint32_t crc;
    uint64_t crc_len;
    thread_fault fault;
    int oom;                /* a buffer could not grow: the batch fails */
    rs_buf quarantine;      /* "reason\trow\n" entries */
    rs_buf qmarks;          /* quarantine_mark per entry */
    rs_buf scratch;
} thread_acc;

/* A parse group's rows for one destination in one batch, their line ends
 * as written (each row ends with an LF: the member's header needs them,
 * and the scanner has counted them already) and the bytes they take so,
 * which the gather needs first. All fit 32 bits: a batch is far below
 * 4 GiB. */
typedef struct {
    uint32_t rows, lines, bytes;
} dest_count;

typedef struct {
    rs_buf *bufs;           /* [group * ndest + d] */
    dest_count *count;      /* [group * ndest + d] */
} scatter;

typedef struct {
    int fd;                 /* -1: reopen with O_APPEND for each write */
    rs_dest_stats st;
} dest_file;

/* With only_rows, per output: the input (+ 1) whose rows n counts, and
 * its rows routed there so far (the next one's ordinal). Apart from
 * dest_file, so that a run without only_rows keeps its memory plan (and
 * so its batches and members). */
typedef struct {
    uint32_t input;
    uint64_t n;
} dest_ord;

/* What one run holds besides pipe_state: the outputs, the per-group and
 * per-thread buffers, the quarantine file and the write-behind thread
 * (rs_pipeline_run's steps below share it). */
typedef struct {
    int T, G;                  /* threads; parse groups */
    uint32_t ndest;
    size_t member_keep;        /* a thread's member buffer kept between batches */
    dest_file *df;
    dest_ord *ord;             /* [ndest] with only_rows, else NULL */
    scatter sc;
    thread_acc *acc;           /* [G] */
    rs_deflater **dz;          /* [T] */
    rs_buf *members;           /* [T] */
    rs_buf *gathered;          /* [T]: a destination's rows of a batch, in one piece (gather) */
    rs_error *terr;            /* [T] */
    FILE *quarantine;
    rs_direct *dx;             /* the outputs' direct I/O, or NULL */
    rs_writeback *wb;
    uint64_t *wb_lens;
    uint64_t *input_records, *input_lines;  /* [ninputs]: numbering continued across batches */
    int headers_written;
    double t0, last_progress;
} run_state;

/* ----------------------------------------------------- across the stages */

/* produce.c */

/* Produces the next batch into b (see its comment in produce.c). */
void rs_pipe_produce(pipe_state *s, batch *b);

/* Where a malformed record ends under --on-bad-row skip|quarantine; the
 * rule the cutter, bad_record and the parser share (produce.c). */
size_t rs_pipe_bad_record_end(const rs_csv_dialect *d, const char *p, size_t len, int at_eof);

/* Grows batch b (and its quote checkpoints) to need bytes. 0 or -1. */
int rs_pipe_grow_batch(batch *b, size_t need);

/* Every input's units, their sizes and the total the progress line shows;
 * a cluster rank's range checked. 0 or -1 with err. */
int rs_pipe_list_units(pipe_state *s, rs_error *err);

/* ahead.c */

/* Opens unit `unit` of input i as the producer reads it (a byte range for
 * a counted unit, checksums on when asked). NULL with err. */
rs_reader *rs_pipe_open_reader(const pipe_state *s, uint32_t i, uint32_t unit, rs_error *err);

/* On a thread with nothing left of its batch: reads ahead the inputs
 * after the producer's into their stashes, until *left reaches others
 * (every other thread is done with the batch and waits for this one), the
 * producer wants a stash, or they are full. */
void rs_pipe_ahead(pipe_state *s, const int *left, int others);

/* The producer, opening input i's first unit: takes the reader and stash
 * read ahead for it into s->rd and s->stash (1), or finds none (0: open
 * it), or the error its open met (-1 with err); and names the inputs
 * after i as those to read ahead. */
int rs_pipe_take_ahead(pipe_state *s, uint32_t i, rs_error *err);

/* Reads from rd as rs_reader_read does; from s->rd, the stash first, then
 * the error met reading ahead, if any, then the reader. */
ssize_t rs_pipe_read(pipe_state *s, rs_reader *rd, void *buf, size_t cap, rs_error *err);

void rs_pipe_ahead_init(pipe_state *s);
void rs_pipe_ahead_free(pipe_state *s);

/* route.c */

/* Parses segments [sa, sb) of batch b as parse group `group` on thread
 * tid into sc and acc. */
void rs_pipe_parse_range(pipe_state *s, const batch *b, int tid, int group, int sa, int sb, scatter *sc,
                         thread_acc *acc);

/* Destination d's rows of batch b, the groups' entries in order, into out
 * (emptied first). 0, or -1 if out of memory. */
int rs_pipe_gather(const batch *b, const scatter *sc, int G, uint32_t ndest, uint32_t d, rs_buf *out);

/* rs_pipe_gather of the rows whose ordinals (base + their place in the
 * batch's rows of d) the ranges v hold (only_rows), into out; *rows gets
 * their number. 0, or -1 if out of memory. */
int rs_pipe_gather_kept(const batch *b, const scatter *sc, int G, uint32_t ndest, uint32_t d, uint64_t base,
                        const rs_row_range *v, rs_buf *out, uint64_t *rows);

/* What rs_pipe_gather would gather: its size, and the bytes themselves,
 * the first n1 of them into a and the others into rest (direct I/O: the
 * staging arena's whole blocks, then the file's carry). */
size_t rs_pipe_gather_size(const scatter *sc, int G, uint32_t ndest, uint32_t d);
void rs_pipe_gather_split(const batch *b, const scatter *sc, int G, uint32_t ndest, uint32_t d, char *a, size_t n1,
                          char *rest);

/* Empties destination d's entries once its rows are written (or when it
 * has none in the batch), freeing buffers much larger than what they held
 * (route.c says why). */
void rs_pipe_scatter_done(scatter *sc, int G, uint32_t ndest, uint32_t d);

/* The fault of a row whose composite key has a part holding the key
 * separator (opts key_sep_check), one object: compared by address. */
extern const char rs_pipe_fault_key_sep[];

/* The quarantine reason of fault f for a record of n bytes into why[cap];
 * returns how many bytes of it the quarantine keeps. */
size_t rs_pipe_quarantine_reason(const rs_csv_fault *f, size_t max_record, size_t n, char *why, size_t cap);

/* Appends p[0..n) to b with \\, \t, \n and \r escaped (the TSV of the
 * quarantine). */
void rs_pipe_escape(rs_buf *b, const char *p, size_t n);

/* Writes a group's quarantined rows to f with absolute line and record
 * numbers (from line0, rec0). 0, or the errno of the first failed write. */
int rs_pipe_write_quarantine(FILE *f, const char *path, const thread_acc *a, uint64_t line0, uint64_t rec0);

/* Appends key k[0..n) to b, quoted as a CSV field with delimiter delim
 * needs. */
void rs_pipe_quote_key(rs_buf *b, const char *k, size_t n, char delim);

/* emit.c */

/* Writes destination d's rows of batch b as one member (or plain). 0 or
 * -1 with err. */
int rs_pipe_write_dest(const rs_pipeline_opts *o, const batch *b, scatter *sc, int G, uint32_t d, rs_deflater *dz,
                       rs_buf *rows_buf, rs_buf *member, dest_file *df, dest_ord *ord, rs_direct *dx,
                       rs_input_stats *in, rs_error *err);

/* Creates the outputs, the quarantine file, the compressors and the
 * write-behind or direct I/O. 0 or -1 with err. */
int rs_pipe_open_outputs(pipe_state *s, run_state *r, rs_error *err);

/* Writes every output's header line, once the first batch shows it. 0 or
 * -1 with err. */
int rs_pipe_emit_headers(pipe_state *s, run_state *r, rs_error *err);

#endif
