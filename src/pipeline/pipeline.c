/* The row pipeline: inputs -> batches -> parse/route/scatter -> gzip members.
 *
 * Design. The physical floor of the main job is the codecs: inflating the
 * input and deflating 1000 outputs. Parsing, hashing and scattering are
 * cheaper, but all of it must run on every core, and the output must be
 * byte-identical for any thread count. So:
 *
 *  - The input is cut into BATCHES (up to --memory/8, at most 64 MiB) of
 *    whole records. A batch never spans two inputs, nor two UNITS of one
 *    input (reader.h: byte ranges of ringshard's own gzip members, which
 *    MPI ranks share out; any other input is one unit), so the batches -
 *    hence the output's members - do not depend on who reads which unit.
 *    Each unit is read as its own byte range; one after the first takes
 *    the header from the file's start and numbers lines and records from
 *    its base (the member headers' counts), checked when the unit ends;
 *    a unit before the file's last must end with a whole record, and the
 *    last one where the file ends. Under --on-bad-row skip|quarantine the
 *    headers' record counts and boundaries need not be this reader's, so
 *    every file is read whole (units_read_whole). A batch ends at a record
 *    boundary: quote parity is counted from the batch start (always a
 *    boundary) with a vectorised quote count, and the incomplete last
 *    record is carried into the next batch. Each batch is also cut into
 *    RS_SEGMENTS segments at record boundaries, by the same parity rule.
 *    Inflating one gzip stream is serial, so one thread produces a batch
 *    (several inputs are inflated at once by several pipelines of one
 *    process, "lanes": cluster/cluster.c; opts batch_bytes and tid_base serve them).
 *    It inflates RS_READ_STEP bytes at a time and counts their quotes at
 *    once, while they are in its cache, keeping a count every RS_QCK bytes
 *    from which the cuts are found: two more passes over a cold 64 MiB
 *    batch made the producer, the critical path without compression,
 *    about 10% slower. An input's first three batches are an eighth, a
 *    quarter and a half of the others, so that the team starts early
 *    and the producer keeps ahead of it (see produce).
 *
 *  - One OpenMP parallel region per batch, three steps:
 *    1. the first thread to arrive PRODUCES the next batch (reads and
 *       inflates it into the other of two buffers) while the others PARSE
 *       this one: groups of contiguous segments are claimed from an atomic
 *       counter. Parsing scans records (src/csv/scan.c), hashes keys, and -
 *       for ring placement - resolves owners in blocks of RS_BLOCK rows
 *       with prefetches so that the ring's cache misses overlap, then
 *       appends each row to its group's buffer for its destination;
 *    2. the thread that finishes the last group MERGES the groups' counts
 *       in input order: the first fault by position becomes the error (so
 *       messages do not depend on scheduling), quarantined rows get
 *       absolute line numbers;
 *    3. all threads COMPRESS and write: destinations are claimed from
 *       another counter; each destination's groups, in order, become ONE
 *       gzip member (one reused compressor per thread: 1000 live compressor
 *       states would thrash the caches), written with one write(2); plain
 *       output writes the pieces with one writev(2).
 *    The producer joins whichever step is under way when its batch is
 *    ready; nothing waits for it before the end of the region, so inflating
 *    overlaps parsing, merging and compressing alike. (With omp for and its
 *    barriers, the team idled at the end of step 1 until the producer was
 *    done: runs took about 13% longer on two cores.)
 *    Member contents are "this batch's rows for this destination", which
 *    does not depend on the thread count; neither do the members' bytes
 *    (see deflate.c on ISA-L levels), so the files are byte-identical for
 *    any -j.
 *
 *  Why not a separate reader thread: on two cores a third busy thread
 *  steals time from the team, and a batch's inflate takes less time than
 *  the rest of its work, so one of the team inflating and then joining the
 *  rest keeps both cores busy without oversubscription.
 *
 *  Nothing is published here: the caller writes into a temporary directory
 *  (outdir.h) and renames it when everything, manifest included, is done.
 *  Outputs that are kept (write_behind) and plain (or any, with
 *  --direct-io on) go to the disk by DIRECT I/O where the file system
 *  takes it (direct.h; compressed ones measured slower so): in step 3 a thread copies
 *  a destination's bytes into an arena instead of the page cache, and
 *  I/O threads that sleep on the disk write them while the next batch is
 *  parsed; the thread that merges the next batch first waits for them
 *  (the arena is then free again). This spares the page cache's copy and,
 *  above all, its fresh pages (about 4 CPU-s per GB on this VM:
 *  docs/performance.md). Otherwise a thread that sleeps on the disk (writeback.h)
 *  starts writing each batch's output to disk once it is written, so the
 *  fsyncs before publication find little left to do.
 *
 * Memory: two batch buffers, the scatter buffers (about one batch, grown by
 * doubling and reused), one compressed member per thread and, with direct
 * I/O, its arena (a batch) and a 4 KiB block per output: about six
 * batches, hence the batch size of --memory / 8. A record longer than
 * half a batch (the cap of --max-record) is a malformed row, not a reason to
 * grow without bound: one with no end in a whole batch becomes a BAD batch
 * (bad_record), skipped in bounded memory.
 */
#define _GNU_SOURCE
#include <emmintrin.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <omp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <linux/futex.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include "ringshard/deflate.h"
#include "ringshard/direct.h"
#include "ringshard/interrupt.h"
#include "ringshard/outfile.h"
#include "ringshard/log.h"
#include "ringshard/pipeline.h"
#include "ringshard/ring.h"
#include "ringshard/testhook.h"
#include "ringshard/writeback.h"

#define RS_SEGMENTS 64
#define RS_BATCH_MAX ((size_t)64 << 20)
#define RS_BATCH_MIN ((size_t)64 << 10)
#define RS_PREFETCH ((size_t)8 << 10)  /* parse: bytes prefetched ahead */
#define RS_QCK ((size_t)64 << 10)     /* quote-count checkpoint spacing (see batch) */
#define RS_READ_STEP ((size_t)256 << 10) /* bytes inflated per call: counted while hot */
#define RS_RAMP 3                           /* an input's first batches: cap/8, cap/4, cap/2 */

static const char *quarantine_name(const rs_pipeline_opts *o)
{
    return o->quarantine_name ? o->quarantine_name : o->quarantine;
}

void rs_pipeline_interrupt(void) { rs_interrupt_raise(); }
int rs_pipeline_interrupted(void) { return rs_interrupt_pending(); }

int rs_pipeline_threads(const rs_pipeline_opts *o)
{
    /* omp_get_max_threads: OMP_NUM_THREADS if set, else the CPUs this
     * process may run on (its affinity mask: an MPI rank bound to a core
     * gets one) */
    int t = o->threads > 0 ? o->threads : omp_get_max_threads();
    return t < 1 ? 1 : (t > 256 ? 256 : t);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---------------------------------------------------------------- reader */

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

/* First record boundary at or after `from` in p[0..len) given the quote
 * parity at `from`; len if none. A boundary follows LF, or a CR that is
 * not followed by LF, outside quotes. */
static size_t boundary_from(const char *p, size_t len, size_t from, int in_quote)
{
    for (size_t i = from; i < len; i++) {
        char c = p[i];
        if (c == '"')
            in_quote = !in_quote;
        else if (!in_quote && c == '\n')
            return i + 1;
        else if (!in_quote && c == '\r' && i + 1 < len && p[i + 1] != '\n')
            return i + 1;
    }
    return len;
}

/* The last record boundary in p[0..len) (p starts at one; it holds
 * `quotes` quotes), or 0 if there is none. A CR at the very end is not a
 * boundary yet: an LF may follow. */
static size_t last_boundary(const char *p, size_t len, size_t quotes)
{
    for (size_t j = len; j-- > 0;) {
        char c = p[j];
        if (c == '"')
            quotes--;
        else if ((quotes & 1) == 0 && (c == '\n' || (c == '\r' && j + 1 < len && p[j + 1] != '\n')))
            return j + 1;
    }
    return 0;
}

/* Where a malformed record ends under --on-bad-row skip|quarantine: a record
 * that is well-formed but lacks the key column ends where it ends; any
 * other ends at the first LF at or after the fault (after a stray quote the
 * quote parity means nothing, so the next line starts afresh). Returns the
 * offset just past it, or 0 if that LF is not in p[0..len) and more input
 * may follow (!at_eof). The splitter and the parser both use this rule, so
 * they agree on every record boundary whatever the input. */
static size_t bad_record_end(const rs_csv_dialect *d, const char *p, size_t len, size_t fault_offset, int at_eof)
{
    rs_csv_record rec;
    rs_csv_fault f2;
    if (rs_csv_next(d, NULL, p, len, at_eof, &rec, NULL, NULL, NULL, &f2) == RS_CSV_OK)
        return rec.consumed;
    const char *lf = fault_offset < len ? memchr(p + fault_offset, '\n', len - fault_offset) : NULL;
    if (lf)
        return (size_t)(lf - p) + 1;
    return at_eof ? len : 0;
}

/* The batch cut and segments for --on-bad-row skip|quarantine: records are
 * walked one by one with the parser's own recovery (bad_record_end), since
 * quote parity is wrong after a malformed quote. Slower than the parity
 * cut (one scan of the batch on the producing thread), and only used when
 * bad rows do not stop the run. Returns the cut (0: no complete record). */
static size_t cut_by_records(const rs_csv_dialect *d, batch *b, size_t len, int at_eof)
{
    const char *p = b->data;
    size_t pos = 0;
    int k = 1;
    b->seg[0] = 0;
    while (pos < len) {
        rs_csv_record rec;
        rs_csv_fault fault;
        int r = rs_csv_next(d, NULL, p + pos, len - pos, at_eof, &rec, NULL, NULL, NULL, &fault);
        size_t step;
        if (r == RS_CSV_OK)
            step = rec.consumed;
        else if (r == RS_CSV_MORE)
            break;
        else if (!(step = bad_record_end(d, p + pos, len - pos, fault.offset, at_eof)))
            break;
        pos += step;
        while (k < RS_SEGMENTS && pos >= len / RS_SEGMENTS * (size_t)k)
            b->seg[k++] = pos;
    }
    while (k <= RS_SEGMENTS)
        b->seg[k++] = pos;
    return pos;
}

/* Counts the quotes of b->data[from..to) into b->quotes, recording the
 * checkpoints it passes (see batch). from is b's previous length. */
static void count_new(batch *b, size_t from, size_t to)
{
    while (from < to) {
        size_t next = (from / RS_QCK + 1) * RS_QCK;
        size_t stop = next < to ? next : to;
        b->quotes += rs_csv_count_quotes(b->data + from, stop - from);
        if (stop == next)
            b->qck[next / RS_QCK] = (uint32_t)b->quotes;
        from = stop;
    }
}

/* Quotes in b->data[0..at), from the nearest checkpoint at or before it. */
static size_t quotes_before(const batch *b, size_t at)
{
    size_t j = at / RS_QCK;
    return b->qck[j] + rs_csv_count_quotes(b->data + j * RS_QCK, at - j * RS_QCK);
}

static void cut_segments(batch *b)
{
    size_t prev = 0;
    b->seg[0] = 0;
    for (int k = 1; k < RS_SEGMENTS; k++) {
        size_t target = b->len / RS_SEGMENTS * (size_t)k;
        if (target < prev)
            target = prev;
        size_t bnd = target == 0 ? 0 : boundary_from(b->data, b->len, target, (int)(quotes_before(b, target) & 1));
        b->seg[k] = prev = bnd;
    }
    b->seg[RS_SEGMENTS] = b->len;
}

static int grow_batch(batch *b, size_t need)
{
    if (b->cap >= need)
        return 0;
    size_t nck = need / RS_QCK + 1;
    uint32_t *ck = realloc(b->qck, nck * sizeof *ck);
    if (!ck)
        return -1;
    b->qck = ck;
    char *d = realloc(b->data, need);
    if (!d)
        return -1;
    b->data = d;
    b->cap = need;
    return 0;
}

/* Resolves --key against the header (or column numbers without one). */
static int resolve_key(pipe_state *s, const char *header_fields, uint32_t nfields, const char *path,
                       rs_error *err)
{
    if (rs_csv_keyspec_resolve(&s->keyspec, s->o->key, s->o->key_sep, header_fields, nfields, path, err) != 0)
        return -1;
    s->keyspec_ready = 1;
    return 0;
}

/* Appends what the reader gives to b, growing b by 1 MiB when less than
 * 64 KiB is free; sets *eof at the end of the input. 0 or -1 with err. */
static int read_more(rs_reader *rd, batch *b, int *eof, rs_error *err)
{
    if (b->cap - b->len < (size_t)1 << 16 && grow_batch(b, b->len + ((size_t)1 << 20)) != 0)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    /* a step at a time: the first batch is then the producer's to size */
    size_t want = b->cap - b->len < RS_READ_STEP ? b->cap - b->len : RS_READ_STEP;
    ssize_t n = rs_reader_read(rd, b->data + b->len, want, err);
    if (n < 0)
        return -1;
    if (n == 0)
        *eof = 1;
    b->len += (size_t)n;
    return 0;
}

/* Appends field f for a message, quoted, its odd bytes escaped, cut after
 * RS_SHOW_FIELD bytes. */
#define RS_SHOW_FIELD 64
static void show_field(rs_buf *m, const char *f)
{
    rs_buf_append(m, "'", 1);
    size_t n = strlen(f), i = 0;
    for (; i < n && i < RS_SHOW_FIELD; i++) {
        unsigned char c = (unsigned char)f[i];
        char e[8];
        if (rs_csv_bom_len(f + i, n - i)) {
            rs_buf_append(m, "<UTF-8 BOM>", 11);
            i += RS_CSV_BOM_LEN - 1;
        } else if (c < 0x20 || c == 0x7f || c == '\\' || c == '\'') {
            rs_buf_append(m, e, (size_t)snprintf(e, sizeof e, "\\x%02x", c));
        } else {
            rs_buf_append(m, f + i, 1);
        }
    }
    rs_buf_append(m, i < n ? "'..." : "'", i < n ? 4 : 1);
}

void rs_pipeline_header_difference(char *out, size_t cap, const char *fields, uint32_t nf, int bom, const char *ref,
                                   const char *ref_fields, uint32_t ref_nf, int ref_bom)
{
    rs_buf m = {0};
    char num[64];
    uint32_t k = 0;
    const char *a = fields, *b = ref_fields;
    while (k < nf && k < ref_nf && strcmp(a, b) == 0) {
        a += strlen(a) + 1;
        b += strlen(b) + 1;
        k++;
    }
    if (k < nf && k < ref_nf) {
        rs_buf_append(&m, num, (size_t)snprintf(num, sizeof num, "field %u is ", k + 1));
        show_field(&m, a);
        rs_buf_append(&m, ", ", 2);
        rs_buf_append(&m, ref, strlen(ref));
        rs_buf_append(&m, " has ", 5);
        show_field(&m, b);
    } else if (k < nf) {
        rs_buf_append(&m, num, (size_t)snprintf(num, sizeof num, "field %u is ", k + 1));
        show_field(&m, a);
        rs_buf_append(&m, ", ", 2);
        rs_buf_append(&m, ref, strlen(ref));
        rs_buf_append(&m, num, (size_t)snprintf(num, sizeof num, " has only %u field%s", ref_nf, ref_nf == 1 ? "" : "s"));
    } else {
        rs_buf_append(&m, num, (size_t)snprintf(num, sizeof num, "it has only %u field%s, ", nf, nf == 1 ? "" : "s"));
        rs_buf_append(&m, ref, strlen(ref));
        rs_buf_append(&m, " has ", 5);
        show_field(&m, b);
        rs_buf_append(&m, num, (size_t)snprintf(num, sizeof num, " as field %u", k + 1));
    }
    if (bom != ref_bom) {
        const char *who = bom ? "its header" : ref;
        rs_buf_append(&m, " (", 2);
        rs_buf_append(&m, who, strlen(who));
        rs_buf_append(&m, bom ? "" : "'s header", bom ? 0 : 9);
        const char *tail = " starts with a UTF-8 BOM, which is ignored)";
        rs_buf_append(&m, tail, strlen(tail));
    }
    snprintf(out, cap, "%.*s", m.data ? (int)m.len : 0, m.data ? m.data : "");
    rs_buf_free(&m);
}

/* Where input i is opened: relative to opts->input_dirfd when the inputs
 * are the files of one directory opened once (pipeline.h), else by path. */
static int input_dirfd(const rs_pipeline_opts *o)
{
    return o->input_names ? o->input_dirfd : AT_FDCWD;
}

static const char *input_name(const rs_pipeline_opts *o, size_t i)
{
    return o->input_names ? o->input_names[i] : o->inputs[i];
}

/* The fields of opts->header_ref (NUL-separated, as rs_csv_fields leaves
 * them; a UTF-8 BOM at its start is no part of them, as for an input's
 * header): their count, or -1 with err. */
static int ref_fields(const rs_pipeline_opts *o, rs_buf *out, rs_error *err)
{
    size_t bom = rs_csv_bom_len(o->header_ref, strlen(o->header_ref));
    int nf = rs_csv_fields(&o->dialect, o->header_ref + bom, strlen(o->header_ref) - bom, out);
    if (nf < 0)
        rs_error_set(err, RS_EXIT_DATA, "%s: malformed header '%.200s'",
                     o->header_ref_name ? o->header_ref_name : "the reference header", o->header_ref);
    return nf;
}

/* bucket --append: the first header read must be the directory's
 * (opts header_ref, named header_ref_name); what follows it is compared with
 * that first one as usual. 1 with err when it differs (saying how, as for
 * two inputs), else 0. */
static int header_differs_from_ref(pipe_state *s, const rs_buf *fields, int nf, int has_bom, const char *path,
                                   uint64_t line, rs_error *err)
{
    const rs_pipeline_opts *o = s->o;
    rs_buf ref = {0};
    int nref = ref_fields(o, &ref, err);
    if (nref < 0)
        return 1;
    int same = nref == nf && ref.len == fields->len && memcmp(ref.data, fields->data, ref.len) == 0;
    if (!same) {
        char what[512];
        rs_pipeline_header_difference(what, sizeof what, fields->data, (uint32_t)nf, has_bom, o->header_ref_name,
                                      ref.data, (uint32_t)nref,
                                      rs_csv_bom_len(o->header_ref, strlen(o->header_ref)) != 0);
        rs_error_set(err, RS_EXIT_USAGE, "%s: line %llu: header differs from the header of %s: %s", path,
                     (unsigned long long)line, o->header_ref_name, what);
    }
    rs_buf_free(&ref);
    return !same;
}

/* Reads the header record of input i at b->data[0..len), reading more as
 * needed: a UTF-8 BOM at the input's first byte is not part of it (see
 * csv.h), but stays in res->header when the header follows it at once.
 * Returns bytes consumed (0 if the input is empty), -1 on error. */
static ssize_t read_header(pipe_state *s, rs_reader *rd, batch *b, uint32_t i, uint64_t *lines, uint64_t *records,
                           rs_error *err)
{
    const rs_pipeline_opts *o = s->o;
    const char *path = o->inputs[i];
    size_t off = 0, bom = SIZE_MAX;
    int eof = 0;
    rs_csv_record rec;
    rs_csv_fault fault;
    for (;;) {
        if (!eof && b->len - off < (size_t)1 << 16) {
            if (read_more(rd, b, &eof, err) != 0)
                return -1;
            continue;
        }
        if (bom == SIZE_MAX)  /* the input's first bytes */
            off = bom = rs_csv_bom_len(b->data, b->len);
        if (b->len == off)
            return (ssize_t)off;  /* empty input (or only blank lines) */
        int r = rs_csv_next(&o->dialect, NULL, b->data + off, b->len - off, eof, &rec, NULL, NULL, NULL, &fault);
        if (r == RS_CSV_MORE) {
            if (b->len - off > o->dialect.max_record)
                return rs_error_set(err, RS_EXIT_DATA, "%s: line %llu: header longer than the record limit",
                                    path, (unsigned long long)*lines + 1);
            if (!eof && read_more(rd, b, &eof, err) != 0)
                return -1;
            continue;
        }
        if (r == RS_CSV_BAD)
            return rs_error_set(err, RS_EXIT_DATA, "%s: line %llu: malformed header: %s (field %u)", path,
                                (unsigned long long)*lines + 1, fault.what, fault.field);
        *lines += rec.lines;
        if (rec.nfields == 0) {  /* blank line before the header: a line, not a record */
            if (s->unit == 0)    /* counted once, not again by a later unit's look at the header */
                s->res->input[i].blank_lines++;
            off += rec.consumed;
            continue;
        }
        ++*records;
        rs_buf fields = {0};
        int nf = rs_csv_fields(&o->dialect, b->data + off, rec.len, &fields);
        if (nf < 0) {
            rs_buf_free(&fields);
            return rs_error_set(err, RS_EXIT_DATA, "%s: line %llu: malformed header", path,
                                (unsigned long long)*lines);
        }
        rs_pipeline_result *res = s->res;
        int has_bom = bom && off == bom;  /* the header follows the BOM at once */
        if (!res->header && o->header_ref_name && header_differs_from_ref(s, &fields, nf, has_bom, path, *lines, err)) {
            rs_buf_free(&fields);
            return -1;
        }
        if (!res->header) {
            size_t keep = has_bom ? bom : 0;
            res->header = malloc(keep + rec.len + 1);
            res->header_fields = malloc((size_t)nf * sizeof *res->header_fields);
            if (!res->header || !res->header_fields) {
                rs_buf_free(&fields);
                return rs_error_set(err, RS_EXIT_IO, "out of memory");
            }
            memcpy(res->header, b->data + off - keep, keep + rec.len);
            res->header[keep + rec.len] = '\0';
            res->header_len = keep + rec.len;
            s->header_bom = has_bom;
            res->header_input = i;
            res->header_line = *lines;
            s->header_fields = fields;
            res->nheader_fields = (uint32_t)nf;
            const char *f = s->header_fields.data;
            for (int k = 0; k < nf; k++, f += strlen(f) + 1)
                res->header_fields[k] = (char *)f;
            if (resolve_key(s, s->header_fields.data, (uint32_t)nf, path, err) != 0)
                return -1;
        } else {
            int same = (uint32_t)nf == res->nheader_fields && fields.len == s->header_fields.len &&
                       memcmp(fields.data, s->header_fields.data, fields.len) == 0;
            if (same) {
                rs_buf_free(&fields);
            } else {
                const char *ref = o->inputs[res->header_input];
                char what[512];
                rs_pipeline_header_difference(what, sizeof what, fields.data, (uint32_t)nf, has_bom, ref,
                                              s->header_fields.data, res->nheader_fields, s->header_bom);
                res->mismatch_line = *lines;
                res->mismatch_fields = fields.data;  /* for a cluster's message (cluster.c) */
                res->mismatch_nfields = (uint32_t)nf;
                res->mismatch_bom = has_bom;
                return rs_error_set(err, RS_EXIT_DATA, "%s: line %llu: header differs from the header of %s: %s",
                                    path, (unsigned long long)*lines, ref, what);
            }
        }
        return (ssize_t)(off + rec.consumed);
    }
}

/* Without a header: drops a UTF-8 BOM at the input's first byte, which is
 * not part of the first record (as DuckDB reads it): its first field, the
 * key with --key 1, is what follows the BOM, and the row is written without
 * it. 0 or -1 with err. */
static int drop_bom(pipe_state *s, batch *b, rs_error *err)
{
    int eof = 0;
    while (b->len < RS_CSV_BOM_LEN && !eof)
        if (read_more(s->rd, b, &eof, err) != 0)
            return -1;
    s->eof |= eof;
    size_t n = rs_csv_bom_len(b->data, b->len);
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
    return 0;
}

/* The units of input i this run reads: [unit_from, unit_to). A cluster
 * rank's range may start and end inside a file (opts unit_lo, unit_hi);
 * the indexes are those of the unit list, which the cluster made too. A
 * file read whole (s->whole) is its unit 0 only: whoever holds that unit
 * reads the file, a rank holding only later units reads none of it. */
static uint32_t unit_from(const pipe_state *s, uint32_t i)
{
    return i == 0 ? s->o->unit_lo : 0;
}

static uint32_t unit_to(const pipe_state *s, uint32_t i)
{
    uint32_t n = s->whole ? 1 : (uint32_t)s->nunits[i];
    return i + 1 == s->o->ninputs && s->o->unit_hi && s->o->unit_hi < n ? s->o->unit_hi : n;
}

/* Moves the producer past inputs of which it reads no unit. */
static void skip_empty_ranges(pipe_state *s)
{
    while (s->next_input < s->o->ninputs && s->unit >= unit_to(s, s->next_input)) {
        s->next_input++;
        s->unit = s->next_input < s->o->ninputs ? unit_from(s, s->next_input) : 0;
    }
}

/* Moves the producer to the next unit (or input) after the current one. */
static void next_unit(pipe_state *s)
{
    ++s->unit;
    skip_empty_ranges(s);
}

/* Whether the reading settings can move record boundaries relative to the
 * writer's (docs/format.md, "Units and reading settings"). With
 * --on-bad-row fail, every record before the first fault is well-formed,
 * and a well-formed RFC 4180 record ends at the first line end at even
 * quote parity from its start, whatever the delimiter and --max-record: the
 * same records the writer counted in its RS headers, or the run stops at
 * the first record these settings reject, exactly where a whole-file read
 * stops. skip|quarantine recover from a malformed record at the next LF
 * (bad_record_end), which can split a record the writer kept whole (too
 * long for this --max-record, a stray quote under this --delimiter) and
 * then start a quoted field that runs past a member's end: neither the
 * headers' record counts nor their member boundaries then say where this
 * reader's records are. A quote, CR or LF as the delimiter breaks the
 * parity rule itself. */
static int units_read_whole(const rs_pipeline_opts *o)
{
    char c = o->dialect.delim;
    return o->bad_rows != RS_BAD_ROW_FAIL || c == '"' || c == '\n' || c == '\r';
}

/* Whether input i has no header line although the inputs have one
 * (opts input_headerless). */
static int headerless(const rs_pipeline_opts *o, uint32_t i)
{
    return o->input_headerless != NULL && o->input_headerless[i];
}

/* Resolves the key before any header was read: from the header
 * opts->header_ref gives (a headerless part of a bucket read first), else
 * by column numbers alone (no header). 0 or -1 with err. */
static int resolve_key_without_header(pipe_state *s, const char *path, rs_error *err)
{
    const rs_pipeline_opts *o = s->o;
    if (!o->header || !o->header_ref)
        return resolve_key(s, NULL, 0, path, err);
    rs_buf fields = {0};
    int nf = ref_fields(o, &fields, err);
    int rc = nf < 0 ? -1
                    : resolve_key(s, fields.data, (uint32_t)nf, o->header_ref_name ? o->header_ref_name : path, err);
    rs_buf_free(&fields);
    return rc;
}

/* Opens unit s->unit of input i into s->rd, with its header handled:
 * the first unit reads the header as a whole input does; a later one reads
 * it from the start of the file (for the key columns and the comparison
 * with other inputs' headers) and continues the numbering from the unit's
 * base, so that every message is the one a whole-file read gives.
 * 0 or -1 with err. */
static int open_unit(pipe_state *s, batch *b, uint32_t i, rs_error *err)
{
    const rs_pipeline_opts *o = s->o;
    const rs_input_unit *u = &s->units[i][s->unit];
    const char *path = o->inputs[i];
    int has_header = o->header && !headerless(o, i);
    s->eof = 0;
    s->ramp = s->unit == 0 ? 0 : RS_RAMP;
    s->carry.len = 0;
    s->unit_last_sent = 0;
    b->len = 0;
    b->unit_first = 1;
    s->hdr_records = 0;
    if (s->unit > 0) {
        uint64_t lines = 0;
        if (has_header) {
            rs_reader *hr = rs_reader_openat(input_dirfd(o), input_name(o, i), path, o->codec, err);
            ssize_t h = hr ? read_header(s, hr, b, i, &lines, &s->hdr_records, err) : -1;
            rs_reader_close(hr);
            b->len = 0;
            if (h < 0)
                return -1;
            if (lines > u->line_base)
                return rs_error_set(err, RS_EXIT_DATA,
                                    "%s: the header (line %llu) is not in the first %s (it ends past "
                                    "the unit at byte offset %llu)",
                                    path, (unsigned long long)lines, u->zstd ? "zstd frames" : "gzip members",
                                    (unsigned long long)u->offset);
        } else if (!s->keyspec_ready && resolve_key_without_header(s, path, err) != 0) {
            return -1;
        }
        b->line_base = u->line_base;
        b->record_base = u->record_base - s->hdr_records;
    }
    s->rd = u->counted ? rs_reader_openat_range(input_dirfd(o), input_name(o, i), path, o->codec, u->offset, u->size,
                                                err)
                       : rs_reader_openat(input_dirfd(o), input_name(o, i), path, o->codec, err);
    if (!s->rd)
        return -1;
    if (o->input_checksum)
        rs_reader_checksum_on(s->rd);  /* a range (u->counted) gives none: see rs_reader_checksum */
    /* The units cover the file as it was listed; other inputs are read to
     * their end, so bytes appended since must not be ignored silently. */
    if (u->counted && s->unit + 1 == s->nunits[i])
        rs_reader_expect_file_end(s->rd);
    if (s->unit == 0 && has_header) {
        uint64_t lines = 0;
        ssize_t h = read_header(s, s->rd, b, i, &lines, &s->hdr_records, err);
        if (h < 0)
            return -1;
        memmove(b->data, b->data + h, b->len - (size_t)h);
        b->len -= (size_t)h;
        b->start_line = lines;
    } else {
        /* a headerless part of a bucket starts with a row, whose bytes
         * (a BOM among them) are data */
        if (s->unit == 0 && !o->header && drop_bom(s, b, err) != 0)
            return -1;
        if (!s->keyspec_ready && resolve_key_without_header(s, path, err) != 0)
            return -1;
    }
    return 0;
}

/* Whether a fault is a record over the length limit. */
static int fault_is_long(const rs_csv_fault *f)
{
    return strcmp(f->what, "record longer than the limit") == 0;
}

/* The quarantine reason of a rejected record, and how many of its n bytes
 * the quarantine keeps: a record over the limit is kept cut to the limit,
 * its reason saying so, whether or not it fit a batch. */
static size_t quarantine_reason(const rs_csv_fault *f, size_t max_record, size_t n, char *why, size_t cap)
{
    if (!fault_is_long(f)) {
        snprintf(why, cap, "%s", f->what);
        return n;
    }
    snprintf(why, cap, "record longer than the limit (%zu bytes)", max_record);
    return n < max_record ? n : max_record;
}

/* A batch's worth of input (b->data[0..b->len), s->cap bytes or more) holds
 * no record boundary: its first record is malformed or longer than any
 * batch. Makes b a BAD batch (see batch) for the team to report or count
 * in input order, as it does the faults of shorter records. Under
 * --on-bad-row fail that is all; under skip|quarantine the record is
 * consumed here, to where recovery ends it (bad_record_end: the first LF at
 * or after the fault), reading on in steps and keeping only its first
 * max_record bytes, so memory stays bounded; what follows it is carried
 * into the next batch. 0, or -1 with err. */
static int bad_record(pipe_state *s, batch *b, rs_error *err)
{
    const rs_pipeline_opts *o = s->o;
    rs_csv_record rec;
    rs_csv_fault f;
    if (rs_csv_next(&o->dialect, NULL, b->data, b->len, 0, &rec, NULL, NULL, NULL, &f) != RS_CSV_BAD)
        f = (rs_csv_fault){"record longer than the limit", o->dialect.max_record, 1};
    b->bad = 1;
    b->bad_fault = f;
    b->bad_lines = 0;
    b->bad_row.len = 0;
    if (o->bad_rows != RS_BAD_ROW_FAIL) {
        size_t keep = b->len < o->dialect.max_record ? b->len : o->dialect.max_record;
        if (rs_buf_append(&b->bad_row, b->data, keep) != 0)
            return rs_error_set(err, RS_EXIT_IO, "out of memory");
        size_t from = f.offset < b->len ? f.offset : b->len;
        for (;;) {
            const char *lf = from < b->len ? memchr(b->data + from, '\n', b->len - from) : NULL;
            size_t end = lf ? (size_t)(lf - b->data) + 1 : b->len;
            /* a CR at the end may be half of a CRLF: count it with the next bytes */
            size_t counted = !lf && !s->eof && end > 0 && b->data[end - 1] == '\r' ? end - 1 : end;
            b->bad_lines += rs_count_line_ends(b->data, counted);
            if (lf || s->eof) {
                if (rs_buf_append(&s->carry, b->data + end, b->len - end) != 0)
                    return rs_error_set(err, RS_EXIT_IO, "out of memory");
                break;
            }
            memmove(b->data, b->data + counted, b->len - counted);
            b->len -= counted;
            from = 0;
            size_t want = b->cap - b->len < RS_READ_STEP ? b->cap - b->len : RS_READ_STEP;
            ssize_t n = rs_reader_read(s->rd, b->data + b->len, want, err);
            if (n < 0)
                return -1;
            s->eof |= n == 0;
            b->len += (size_t)n;
            s->consumed_now = s->consumed_done + rs_reader_consumed(s->rd);
            if (rs_interrupt_pending())
                return rs_error_set(err, RS_EXIT_INTERRUPTED, "interrupted");
        }
    }
    b->len = 0;
    b->quotes = 0;
    memset(b->seg, 0, sizeof b->seg);
    b->unit_last = s->eof && s->carry.len == 0;
    s->unit_last_sent |= b->unit_last;
    return 0;
}

/* Produces the next batch into b: records of one unit of one input, ending
 * at a record boundary (its incomplete last record waits in s->carry), or
 * sets b->end after the last input, or b->err. One thread at a time. A
 * unit whose counts are to be checked ends with a batch marked unit_last,
 * an empty one if need be.
 *
 * Kept whole, as parse_range is: it is the producer's loop, the
 * critical path without compression (docs/performance.md), tuned by
 * measurement - quotes counted as the bytes are inflated, while they are
 * in cache, and the ramp at each input's start. Cutting it into
 * functions would pass its dozen locals through pointers or a struct,
 * which the measured code keeps in registers; its steps are commented in
 * place instead. */
static void produce(pipe_state *s, batch *b)
{
    const rs_pipeline_opts *o = s->o;
    rs_error err = {0};
    b->len = 0;
    b->end = 0;
    b->err.code = 0;
    b->start_line = 0;
    b->unit_first = b->unit_last = 0;
    b->bad = 0;
    for (;;) {
        uint32_t i = s->next_input;
        if (!s->rd) {
            if (i >= o->ninputs) {
                b->end = 1;
                return;
            }
            if (open_unit(s, b, i, &err) != 0)
                goto fail;
        } else {
            /* The carry is one incomplete record (at most half a batch),
             * or, after an input's first batch, whatever reading its header
             * brought in past that batch's target: with a small --memory,
             * more than a batch. */
            if (grow_batch(b, s->carry.len) != 0) {
                rs_error_set(&err, RS_EXIT_IO, "out of memory");
                goto fail;
            }
            if (s->carry.len)
                memcpy(b->data, s->carry.data, s->carry.len);
            b->len = s->carry.len;
            s->carry.len = 0;
        }
        const rs_input_unit *u = &s->units[i][s->unit];
        b->input = i;
        b->unit = s->unit;
        b->u = u->counted ? u : NULL;
        b->hdr_records = s->hdr_records;
        b->quotes = 0;
        b->qck[0] = 0;
        count_new(b, 0, b->len);  /* the carry, or what follows the header */
        /* An input's first batches ramp up, an eighth, a quarter, a half
         * of the others: until the first is read the rest of the team has
         * nothing to do (one core idle for the 0.1 s a 64 MiB batch takes
         * to inflate), and as each batch's rows take about twice as long
         * to compress as to inflate, doubling keeps the producer of the
         * next batch from holding up the team. A rule of the input alone,
         * so the batches - the output's members - stay the same for any
         * thread or rank count. */
        size_t target = s->ramp < RS_RAMP ? s->cap >> (RS_RAMP - s->ramp) : s->cap;
    read:
        while (!s->eof && b->len < target) {
            size_t want = target - b->len < RS_READ_STEP ? target - b->len : RS_READ_STEP;
            ssize_t n = rs_reader_read(s->rd, b->data + b->len, want, &err);
            if (n < 0)
                goto fail;
            if (n == 0)
                s->eof = 1;
            count_new(b, b->len, b->len + (size_t)n);
            b->len += (size_t)n;
            s->consumed_now = s->consumed_done + rs_reader_consumed(s->rd);
            if (rs_interrupt_pending()) {
                rs_error_set(&err, RS_EXIT_INTERRUPTED, "interrupted");
                goto fail;
            }
        }
        if (b->len == 0 && s->eof) {  /* this unit is done */
            s->consumed_done += rs_reader_consumed(s->rd);
            s->res->input[i].zero_padding += rs_reader_zero_padding(s->rd);
            if (o->input_checksum)
                s->res->input[i].has_checksum = rs_reader_checksum(s->rd, &s->res->input[i].checksum);
            rs_reader_close(s->rd);
            s->rd = NULL;
            int check = u->counted && !s->unit_last_sent;
            next_unit(s);
            if (check) {  /* a unit without data rows: its counts are checked all the same */
                b->unit_last = 1;
                memset(b->seg, 0, sizeof b->seg);
                return;
            }
            b->unit_first = 0;
            continue;
        }
        int by_records = o->bad_rows != RS_BAD_ROW_FAIL;
        /* The batch is cut within its first `target` bytes, whatever was
         * read: reading the header may have read past them, by as much as
         * the reads happened to return (a pipe returns less than a file),
         * and the batches must not depend on that. */
        size_t span = b->len;
        int more = !s->eof;  /* bytes follow the span */
        if (span > target) {
            span = target;
            more = 1;
        }
        /* Only the file's end completes a record without a line end. A
         * unit before the last is cut as if more followed: a tail that is
         * not a whole record (a record the headers' boundary flag falsely
         * splits, which a whole-file read would join) waits in carry, and
         * fails the unit once the records before it are done. */
        int file_end = !more && !(u->counted && s->unit + 1 < s->nunits[i]);
        size_t cut = by_records ? cut_by_records(&o->dialect, b, span, file_end)
                     : file_end ? span
                                : last_boundary(b->data, span, span == b->len ? b->quotes : quotes_before(b, span));
        if (cut == 0 && more && target < s->cap) {  /* a record longer than a ramp batch */
            target = s->cap;
            goto read;
        }
        if (cut == 0 && !more && !file_end) {
            rs_error_set(&err, RS_EXIT_DATA,
                         "%s: the %s at byte offsets %llu to %llu end inside a record (their last %zu "
                         "bytes are not a whole record with its line end), yet the %s at byte offset %llu is "
                         "flagged as starting a record (corrupt or altered %s)",
                         o->inputs[i], u->zstd ? "zstd frames" : "gzip members", (unsigned long long)u->offset,
                         (unsigned long long)(u->offset + u->size), b->len, u->zstd ? "frame" : "member",
                         (unsigned long long)(u->offset + u->size), u->zstd ? "metadata frames" : "member headers");
            goto fail;
        }
        if (cut == 0) {  /* no boundary in a whole batch */
            if (bad_record(s, b, &err) != 0)
                goto fail;
            return;
        }
        if (rs_buf_append(&s->carry, b->data + cut, b->len - cut) != 0) {
            rs_error_set(&err, RS_EXIT_IO, "out of memory");
            goto fail;
        }
        b->len = cut;
        if (s->ramp < RS_RAMP)
            s->ramp++;
        b->unit_last = s->eof && s->carry.len == 0;
        s->unit_last_sent |= b->unit_last;
        if (!by_records)
            cut_segments(b);
        return;
    }
fail:
    b->err = err;
    b->input = s->next_input;
    b->len = 0;
    b->end = 1;
}

/* ------------------------------------------------------------------ team */

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
    uint32_t crc;
    uint64_t crc_len;
    thread_fault fault;
    int oom;                /* a buffer could not grow: the batch fails */
    rs_buf quarantine;      /* "reason\trow\n" entries */
    rs_buf qmarks;          /* quarantine_mark per entry */
    rs_buf scratch;
} thread_acc;

/* The TSV escape of byte c (\\, \t, \n, \r), or NULL if it stands as is. */
static const char *tsv_escape(char c)
{
    switch (c) {
    case '\\': return "\\\\";
    case '\t': return "\\t";
    case '\n': return "\\n";
    case '\r': return "\\r";
    default: return NULL;
    }
}

/* Writes a thread's quarantined rows with absolute line and record
 * numbers: TSV input, line, record, reason, row. The input's name is
 * escaped as the row is: a file name may hold a tab or a line end, which
 * would otherwise shift or split the TSV's columns. Returns 0, or the errno
 * of the first write that failed (stdio reports the error later, when
 * errno no longer holds the reason). */
static int write_quarantine(FILE *f, const char *path, const thread_acc *a, uint64_t line0, uint64_t rec0)
{
    int e = 0;
    size_t n = a->qmarks.len / sizeof(quarantine_mark);
    for (size_t i = 0; i < n; i++) {
        quarantine_mark m;
        memcpy(&m, a->qmarks.data + i * sizeof m, sizeof m);
        size_t end = a->quarantine.len;
        if (i + 1 < n) {
            quarantine_mark next;
            memcpy(&next, a->qmarks.data + (i + 1) * sizeof next, sizeof next);
            end = next.start;
        }
        errno = 0;
        int bad = 0;
        for (const char *c = path; *c && !bad; c++) {
            const char *x = tsv_escape(*c);
            bad = (x ? fputs(x, f) : putc(*c, f)) == EOF;
        }
        if ((bad ||
             fprintf(f, "\t%llu\t%llu\t", (unsigned long long)(line0 + m.line), (unsigned long long)(rec0 + m.record)) < 0 ||
             fwrite(a->quarantine.data + m.start, 1, end - m.start, f) != end - m.start) &&
            !e)
            e = errno ? errno : EIO;
    }
    return e;
}

/* A parse group's rows for one destination in one batch, and their line
 * ends as written (each row ends with an LF): the member's header needs
 * them, and the scanner has counted them already. Both fit 32 bits (a
 * batch is far below 4 GiB), and the pair is the uint64_t that the memory
 * plan counts per group and output. */
typedef struct {
    uint32_t rows, lines;
} dest_count;
_Static_assert(sizeof(dest_count) == sizeof(uint64_t), "the memory plan counts 8 bytes per group and output");

typedef struct {
    rs_buf *bufs;           /* [group * ndest + d] */
    dest_count *count;      /* [group * ndest + d] */
} scatter;

static void quote_key(rs_buf *b, const char *k, size_t n, char delim)
{
    int need = 0;
    for (size_t i = 0; i < n; i++)
        if (k[i] == delim || k[i] == '"' || k[i] == '\n' || k[i] == '\r')
            need = 1;
    if (!need) {
        rs_buf_append(b, k, n);
        return;
    }
    rs_buf_append(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        if (k[i] == '"')
            rs_buf_append(b, "\"", 1);
        rs_buf_append(b, k + i, 1);
    }
    rs_buf_append(b, "\"", 1);
}

static void escape_into(rs_buf *b, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *e = tsv_escape(p[i]);
        if (e)
            rs_buf_append(b, e, 2);
        else
            rs_buf_append(b, p + i, 1);
    }
}

#define RS_BLOCK 64

/* What a parse group keeps for a destination: ENTRIES, which the thread
 * that writes the destination gathers into one contiguous piece (see
 * gather), so that a row is copied once, into the bytes the compressor or
 * the write reads, and not first into the group's buffer and again into
 * the joined piece. An entry is a tag byte, then
 *   0..253   that many bytes, as they are written (a short row and its LF:
 *            copying it costs no more than pointing at it);
 *   254      a 4-byte length, then that many bytes (a quoted key);
 *   255      a 4-byte offset and a 4-byte length of a row in the batch,
 *            written with an LF after it.
 * A row of n bytes takes at most 1.5 x (n + 1) bytes here (at most 17
 * inline, 9 as a reference), never more than the copy it replaces by half. */
#define RS_ENTRY_INLINE 16 /* rows up to this many bytes with their LF are copied */
#define RS_ENTRY_LONG 254
#define RS_ENTRY_REF 255
_Static_assert(RS_ENTRY_INLINE < RS_ENTRY_LONG, "inline tags are lengths");

/* Appends row p[off..off+len) of the batch to out as an entry. 0, or -1 if
 * out of memory. */
static inline int scatter_row(rs_buf *out, const char *base, size_t off, size_t len)
{
    if (out->cap - out->len < RS_ENTRY_INLINE + 1 && rs_buf_reserve(out, RS_ENTRY_INLINE + 1) != 0)
        return -1;
    unsigned char *e = (unsigned char *)out->data + out->len;
    if (len + 1 <= RS_ENTRY_INLINE) {
        e[0] = (unsigned char)(len + 1);
        memcpy(e + 1, base + off, len);
        e[1 + len] = '\n';
        out->len += len + 2;
    } else {
        uint32_t v[2] = {(uint32_t)off, (uint32_t)len}; /* a batch is far below 4 GiB */
        e[0] = RS_ENTRY_REF;
        memcpy(e + 1, v, sizeof v);
        out->len += 1 + sizeof v;
    }
    return 0;
}

/* Appends a key, quoted as a CSV field needs, and an LF to out as an
 * entry. 0, or -1 if out of memory. */
static int scatter_key(rs_buf *out, const char *key, size_t len, char delim)
{
    if (rs_buf_reserve(out, 1 + sizeof(uint32_t) + 2 * len + 3) != 0) /* quoting at most doubles the key */
        return -1;
    size_t at = out->len;
    out->data[at] = (char)RS_ENTRY_LONG;
    out->len += 1 + sizeof(uint32_t);
    quote_key(out, key, len, delim);
    rs_buf_append(out, "\n", 1);
    uint32_t n = (uint32_t)(out->len - at - 1 - sizeof n);
    memcpy(out->data + at + 1, &n, sizeof n);
    return 0;
}

/* A 4-byte field of an entry (native order: entries never leave memory). */
static inline uint32_t entry_u32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* The size of the entry at e. */
static inline size_t entry_size(const unsigned char *e)
{
    return *e < RS_ENTRY_LONG ? 1u + *e : *e == RS_ENTRY_REF ? 9u : 5u + entry_u32(e + 1);
}

/* The rows (or keys) of destination d in batch b, groups in order, from
 * their entries into out (emptied first). The references point all over
 * the batch, which is out of the cache by now: the rows a few entries
 * ahead are prefetched. 0, or -1 if out of memory. */
static int gather(const batch *b, const scatter *sc, int G, uint32_t ndest, uint32_t d, rs_buf *out)
{
    enum { AHEAD = 8 };
    out->len = 0;
    for (int g = 0; g < G; g++) {
        const rs_buf *eb = &sc->bufs[(size_t)g * ndest + d];
        const unsigned char *e = (const unsigned char *)eb->data, *end = e + eb->len, *ahead = e;
        for (int k = 0; k < AHEAD && ahead < end; k++)
            ahead += entry_size(ahead);
        while (e < end) {
            if (ahead < end) { /* keep AHEAD entries ahead: prefetch the row of the next reference */
                if (*ahead == RS_ENTRY_REF) {
                    const char *row = b->data + entry_u32(ahead + 1);
                    __builtin_prefetch(row);
                    __builtin_prefetch(row + 64);
                }
                ahead += entry_size(ahead);
            }
            const char *p;
            size_t n, lf = 0;
            if (*e < RS_ENTRY_LONG) {
                p = (const char *)e + 1, n = *e;
                e += 1 + n;
            } else if (*e == RS_ENTRY_LONG) {
                p = (const char *)e + 5, n = entry_u32(e + 1);
                e += 5 + n;
            } else {
                p = b->data + entry_u32(e + 1), n = entry_u32(e + 5), lf = 1;
                e += 9;
            }
            if (out->cap - out->len < n + lf && rs_buf_reserve(out, n + lf) != 0)
                return -1;
            memcpy(out->data + out->len, p, n);
            out->len += n;
            if (lf)
                out->data[out->len++] = '\n';
        }
    }
    return 0;
}

/* The rows of one call of the scanner, on their way (see parse_range). */
typedef struct {
    rs_csv_row rows[RS_BLOCK];
    size_t n;
    size_t at[RS_BLOCK];        /* which rows are records (not empty lines) */
    uint32_t k;                 /* how many */
    uint64_t pos[RS_BLOCK];     /* their ring positions (pos_router) */
    uint32_t dest[RS_BLOCK];
} row_block;

/* Counts x's rows and, for a ring, hashes their keys (in cache: just
 * scanned) and prefetches their index slots; with another router, routes
 * them. */
static void take_rows(pipe_state *s, const batch *b, int tid, row_block *x, thread_acc *acc)
{
    const rs_pipeline_opts *o = s->o;
    const rs_pos_router *pr = o->keys_only ? NULL : o->pos_router;
    const char *keys[RS_BLOCK];
    size_t keylens[RS_BLOCK];
    uint32_t k = 0;
    for (size_t i = 0; i < x->n; i++) {
        const rs_csv_row *r = &x->rows[i];
        acc->lines += r->lines;
        if (r->nfields == 0) { /* a line, not a record */
            acc->blank++;
            continue;
        }
        acc->records++;
        acc->rows++;
        acc->bytes += r->len + 1;
        if (o->input_crc) {
            acc->crc = rs_crc32(acc->crc, b->data + r->off, r->len);
            acc->crc = rs_crc32(acc->crc, "\n", 1);
            acc->crc_len += r->len + 1;
        }
        keys[k] = r->key;
        keylens[k] = r->keylen;
        x->at[k++] = i;
    }
    x->k = k;
    uint32_t input = b->input + o->input_base;
    if (pr)
        pr->positions(o->route_ctx, keys, keylens, k, x->pos);
    else
        for (uint32_t j = 0; j < k; j++) {
            const rs_csv_row *r = &x->rows[x->at[j]];
            x->dest[j] = o->route(o->route_ctx, tid, input, keys[j], keylens[j], b->data + r->off, r->len);
        }
}

/* Appends x's rows (or keys) to their destinations' buffers, in order. */
static void scatter_rows(pipe_state *s, const batch *b, const row_block *x, rs_buf *bufs, dest_count *dc,
                         thread_acc *acc)
{
    const rs_pipeline_opts *o = s->o;
    for (uint32_t j = 0; j < x->k; j++) {
        const rs_csv_row *r = &x->rows[x->at[j]];
        uint32_t d = x->dest[j];
        if (d == RS_ROUTE_DROP)
            continue;
        dc[d].rows++;
        dc[d].lines += r->lines + (r->next == r->off + r->len); /* a last row without its line end gets one */
        if (!bufs)
            continue;
        if (o->keys_only ? scatter_key(&bufs[d], r->key, r->keylen, o->dialect.delim)
                         : scatter_row(&bufs[d], b->data, r->off, r->len))
            acc->oom = 1;
    }
}

/* A malformed record at pos under --on-bad-row skip|quarantine (the batch
 * was cut with the same rule): counted, quarantined, and skipped to where
 * recovery ends it. Returns the offset past it; end when out of memory
 * (acc->oom set). */
static size_t skip_bad_row(pipe_state *s, const batch *b, size_t pos, size_t end, const rs_csv_fault *fault,
                           thread_acc *acc)
{
    const rs_pipeline_opts *o = s->o;
    const char *base = b->data;
    size_t step = bad_record_end(&o->dialect, base + pos, end - pos, fault->offset, 1);
    size_t next = pos + (step ? step : end - pos);
    /* line ends as the scanner and the RS headers count them */
    uint64_t nl = rs_count_line_ends(base + pos, next - pos);
    if (o->bad_rows == RS_BAD_ROW_QUARANTINE) {
        /* line and record are relative to this thread's range until
         * the batch is done (see write_quarantine) */
        quarantine_mark m = {acc->quarantine.len, acc->lines + 1, acc->records + 1};
        size_t rl = next - pos;
        while (rl && (base[pos + rl - 1] == '\n' || base[pos + rl - 1] == '\r'))
            rl--;
        char why[96];
        rl = quarantine_reason(fault, o->dialect.max_record, rl, why, sizeof why);
        /* room first (escaping at most doubles the row), so that an
         * entry is whole or absent */
        if (rs_buf_reserve(&acc->qmarks, sizeof m) != 0 ||
            rs_buf_reserve(&acc->quarantine, strlen(why) + 2 * rl + 2) != 0) {
            acc->oom = 1;
            return end;
        }
        rs_buf_append(&acc->qmarks, &m, sizeof m);
        rs_buf_append(&acc->quarantine, why, strlen(why));
        rs_buf_append(&acc->quarantine, "\t", 1);
        escape_into(&acc->quarantine, base + pos, rl);
        rs_buf_append(&acc->quarantine, "\n", 1);
    }
    acc->rejected++;
    acc->records++;
    acc->lines += nl ? nl : 1;
    return next;
}

/* Parses segments [sa, sb) of batch b on thread tid (as routers see it:
 * with opts tid_base): the structural scanner (src/csv/rows.c) gives
 * RS_BLOCK records a call, and a malformed record fails the group or is
 * skipped. With a ring (pos_router), the blocks go through three steps
 * a block apart - hash and prefetch the index, prefetch the points, look
 * up and scatter - so that each step's memory has arrived when it is
 * read: block i is hashed while block i - 2 is placed. */
static void parse_range(pipe_state *s, const batch *b, int tid, int group, int sa, int sb, scatter *sc,
                        thread_acc *acc)
{
    const rs_pipeline_opts *o = s->o;
    const rs_pos_router *pr = o->keys_only ? NULL : o->pos_router;
    const char *base = b->data;
    size_t end = b->seg[sb];
    uint32_t ndest = o->ndest;
    rs_buf *bufs = o->dest_paths ? sc->bufs + (size_t)group * ndest : NULL;
    dest_count *dc = sc->count + (size_t)group * ndest;
    uint32_t input = b->input + o->input_base;
    rs_csv_cursor cur;
    rs_csv_cursor_init(&cur, base, b->seg[sa], end);
    row_block blk[3];
    unsigned taken = 0, placed = 0; /* blocks scanned; blocks scattered */
    /* The batch was inflated a whole batch ago, by another core: it is out
     * of this core's caches, and without prefetching the scanner spent
     * 60% of its time stalled on its first load of each record (perf
     * annotate). Keep 4 to 8 KiB ahead of it. */
    size_t fetched = cur.pos;
    for (;;) {
        int r = RS_CSV_OK;
        rs_csv_fault fault;
        if (cur.pos < end) {
            if (fetched < cur.pos + RS_PREFETCH / 2) {
                size_t upto = cur.pos + RS_PREFETCH < end ? cur.pos + RS_PREFETCH : end;
                for (fetched = fetched > cur.pos ? fetched : cur.pos; fetched < upto; fetched += 64)
                    __builtin_prefetch(base + fetched);
            }
            row_block *x = &blk[taken % 3];
            r = rs_csv_rows(&o->dialect, &s->keyspec, &cur, x->rows, RS_BLOCK, &x->n, &acc->scratch, &fault);
            take_rows(s, b, tid, x, acc);
            taken++;
            if (pr && taken - placed < 3 && r == RS_CSV_OK && cur.pos < end) {
                if (taken - placed == 2)
                    pr->prefetch(o->route_ctx, blk[placed % 3].pos, blk[placed % 3].k);
                continue; /* the pipeline fills */
            }
        }
        /* place the oldest block (all of them at the end or a fault) */
        while (placed < taken) {
            row_block *y = &blk[placed % 3];
            if (pr) {
                if (taken - placed > 1)
                    pr->prefetch(o->route_ctx, blk[(placed + 1) % 3].pos, blk[(placed + 1) % 3].k);
                pr->owners(o->route_ctx, tid, input, y->pos, y->k, y->dest);
            }
            scatter_rows(s, b, y, bufs, dc, acc);
            placed++;
            if (pr && r == RS_CSV_OK && cur.pos < end)
                break; /* two blocks stay in flight */
        }
        if (r != RS_CSV_OK) {
            if (o->bad_rows == RS_BAD_ROW_FAIL) {
                acc->fault = (thread_fault){1, cur.pos, acc->lines, acc->records, fault};
                return;
            }
            rs_csv_cursor_init(&cur, base, skip_bad_row(s, b, cur.pos, end, &fault, acc), end);
        }
        if (cur.pos >= end && placed == taken)
            return;
    }
}

typedef struct {
    int fd;                 /* -1: reopen with O_APPEND for each write */
    rs_dest_stats st;
} dest_file;

/* writev(2) of all of iov[0..n), retried after short writes; consumes iov. */
static int writev_all(int fd, struct iovec *iov, int n)
{
    while (n > 0) {
        ssize_t w = writev(fd, iov, n > IOV_MAX ? IOV_MAX : n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        while (n > 0 && (size_t)w >= iov->iov_len) {
            w -= (ssize_t)iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (char *)iov->iov_base + w;
            iov->iov_len -= (size_t)w;
        }
    }
    return 0;
}

/* Writes pieces p[0..n) of lengths len[] (n <= RS_SEGMENTS: a piece per
 * parse group) to destination d's file, in one system call when it can.
 * 0, or -1 with err. */
static int dest_writev(const rs_pipeline_opts *o, dest_file *df, rs_direct *dx, uint32_t d, const void *const *p,
                       const size_t *len,
                       size_t n, rs_error *err)
{
    struct iovec iov[RS_SEGMENTS];
    size_t total = 0;
    if (dx) {
        for (size_t i = 0; i < n; i++)
            total += len[i];
        if (rs_direct_write(dx, d, p, len, n, err) != 0)
            return -1;
        df->st.file_bytes += total;
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        iov[i].iov_base = (void *)p[i];
        iov[i].iov_len = len[i];
        total += len[i];
    }
    int fd = df->fd;
    if (fd < 0)
        fd = open(o->dest_paths[d], O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0 || writev_all(fd, iov, (int)n) != 0) {
        int e = errno;
        if (fd >= 0 && df->fd < 0)
            close(fd);
        return rs_error_set(err, RS_EXIT_IO, "%s: write failed: %s", o->dest_paths[d], strerror(e));
    }
    if (df->fd < 0)
        close(fd);
    df->st.file_bytes += total;
    return 0;
}

static int dest_write(const rs_pipeline_opts *o, dest_file *df, rs_direct *dx, uint32_t d, const char *p, size_t n,
                      rs_error *err)
{
    const void *piece[1] = {p};
    return dest_writev(o, df, dx, d, piece, &n, 1, err);
}

/* The error for a malformed record under --on-bad-row fail. Returns -1. */
static int bad_row_error(rs_error *err, const char *path, uint64_t line, uint64_t record, const rs_csv_fault *f)
{
    return rs_error_set(err, RS_EXIT_DATA, "%s: line %llu (record %llu): %s (field %u, byte %zu of the record)", path,
                        (unsigned long long)line, (unsigned long long)record, f->what, f->field, f->offset + 1);
}

/* Takes a BAD batch (see bad_record) in input order, where the team would
 * have met its record: fails the run, or counts the record as rejected
 * (and quarantines it, cut to the limit). 0, or -1 with err. */
static int take_bad_batch(pipe_state *s, batch *b, FILE *quarantine, uint64_t *input_lines, uint64_t *input_records,
                          rs_error *err)
{
    const rs_pipeline_opts *o = s->o;
    const char *path = o->inputs[b->input];
    uint64_t line = input_lines[b->input] + 1, record = input_records[b->input] + 1;
    if (o->bad_rows == RS_BAD_ROW_FAIL)
        return bad_row_error(err, path, line, record, &b->bad_fault);
    if (quarantine) {
        char why[96];
        size_t n = quarantine_reason(&b->bad_fault, o->dialect.max_record, b->bad_row.len, why, sizeof why);
        rs_buf row = {0};
        escape_into(&row, b->bad_row.data, n);
        fprintf(quarantine, "%s\t%llu\t%llu\t%s\t%.*s\n", path, (unsigned long long)line, (unsigned long long)record,
                why, (int)row.len, row.data ? row.data : "");
        rs_buf_free(&row);
    }
    input_lines[b->input] += b->bad_lines ? b->bad_lines : 1;
    input_records[b->input]++;
    s->res->input[b->input].rejected++;
    s->res->rejected++;
    return 0;
}

/* Merges the groups' counts of a finished parse in input order: the first
 * fault (by position) becomes the error, quarantined rows get absolute
 * line and record numbers. Returns 1 if the batch failed. */
static int merge_batch(pipe_state *s, const batch *b, thread_acc *acc, int G, FILE *quarantine,
                       uint64_t *input_lines, uint64_t *input_records, rs_error *err)
{
    const rs_pipeline_opts *o = s->o;
    rs_pipeline_result *res = s->res;
    uint64_t lines = 0, records = 0;
    for (int g = 0; g < G; g++) {
        thread_acc *a = &acc[g];
        if (a->oom) {
            rs_error_set(err, RS_EXIT_IO, "out of memory for the rows of a batch (--memory %llu)",
                         (unsigned long long)o->memory);
            return 1;
        }
        if (a->fault.failed) {
            bad_row_error(err, o->inputs[b->input], input_lines[b->input] + lines + a->fault.line + 1,
                          input_records[b->input] + records + a->fault.record + 1, &a->fault.fault);
            return 1;
        }
        if (quarantine && a->quarantine.len) {
            int e = write_quarantine(quarantine, o->inputs[b->input], a, input_lines[b->input] + lines,
                                     input_records[b->input] + records);
            if (e && !s->quarantine_errno)
                s->quarantine_errno = e;
        }
        lines += a->lines;
        records += a->records;
        rs_input_stats *in = &res->input[b->input];
        in->rows += a->rows;
        in->bytes += a->bytes;
        in->blank_lines += a->blank;
        in->rejected += a->rejected;
        if (o->input_crc)
            in->crc = rs_crc32_combine(in->crc, a->crc, a->crc_len);
        res->rows += a->rows;
        res->bytes += a->bytes;
        res->rejected += a->rejected;
    }
    input_records[b->input] += records;
    input_lines[b->input] += lines;
    return 0;
}

/* Where a batch's region stands. Work is claimed with atomic counters
 * rather than omp for, whose barriers would make the team wait for the
 * producer: inflating the next batch then overlaps the whole batch. */
typedef struct {
    int producer;           /* claimed by the first thread to arrive */
    int next_group, groups_done;
    int phase;              /* 0 parsing, 1 merged, 2 merged and failed */
    uint32_t next_dest;     /* claimed 4 at a time */
    int werr;
    int left, all_left;     /* threads done with the batch; 1 once all are */
} batch_sched;

/* Waits for the last group's merge: spin briefly (a merge takes
 * microseconds), then sleep on the futex until the merging thread wakes
 * the team (publish_phase). The last group's parse can take milliseconds:
 * spinning or yielding through it burned a core's worth of CPU that
 * another process (or the producer) could have used. */
static void wait_for_phase(int *phase)
{
    for (unsigned n = 0; __atomic_load_n(phase, __ATOMIC_ACQUIRE) == 0; n++) {
        if (n < 2048)
            _mm_pause();
        else
            syscall(SYS_futex, phase, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
    }
}

static void publish_phase(int *phase, int value)
{
    __atomic_store_n(phase, value, __ATOMIC_RELEASE);
    syscall(SYS_futex, phase, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* Writes destination d's rows of batch b (gathered from the groups'
 * entries into `rows`, a buffer of the thread's) as one gzip member, or as
 * they are, by direct I/O when dx is not NULL. Returns 0 or -1 with err. */
static int write_dest(const rs_pipeline_opts *o, const batch *b, scatter *sc, int G, uint32_t d, rs_deflater *dz,
                      rs_buf *rows_buf, rs_buf *member, dest_file *df, rs_direct *dx, rs_error *err)
{
    uint32_t ndest = o->ndest;
    uint64_t rows = 0, lines = 0;
    for (int g = 0; g < G; g++) {
        rows += sc->count[(size_t)g * ndest + d].rows;
        lines += sc->count[(size_t)g * ndest + d].lines;
    }
    if (!rows)
        return 0;
    if (gather(b, sc, G, ndest, d, rows_buf) != 0)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    for (int g = 0; g < G; g++)
        sc->bufs[(size_t)g * ndest + d].len = 0;
    /* One contiguous piece: a compressor fed the same bytes in other
     * pieces may emit other (valid) bytes, and the groups depend on the
     * thread count, which the output must not. */
    const void *piece[1] = {rows_buf->data};
    size_t total = rows_buf->len;
    uint32_t crc = 0;
    int rc = 0;
    if (o->compress) {
        member->len = 0;
        /* keys only: a quoted key's line ends are not its row's */
        int r = o->keys_only ? rs_deflater_member(dz, piece, &total, 1, rows, member, &crc)
                             : rs_deflater_member_lines(dz, piece, &total, 1, rows, lines, member, &crc);
        if (r != 0)
            return rs_error_set(err, RS_EXIT_IO, "%s: compressing %zu bytes of rows failed: %s", o->dest_paths[d],
                                total, rs_deflater_why());
        rc = dest_write(o, df, dx, d, member->data, member->len, err);
    } else {
        crc = rs_crc32(0, rows_buf->data, total);
        rc = dest_write(o, df, dx, d, rows_buf->data, total, err);
    }
    df->st.crc = rs_crc32_combine(df->st.crc, crc, total);
    df->st.rows += rows;
    df->st.bytes += total;
    return rc;
}

static void raise_fd_limit(uint32_t need)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)need + 64) {
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > (rlim_t)need + 64 ? (rlim_t)need + 64 : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

static int open_dests(const rs_pipeline_opts *o, dest_file *df, rs_error *err)
{
    raise_fd_limit(o->ndest);
    int reopen = 0;
    for (uint32_t d = 0; d < o->ndest; d++) {
        int fd = open(o->dest_paths[d], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 && errno == EMFILE && !reopen) {
            /* Past the open-file limit: from here on files are reopened
             * (O_APPEND) for each write. Give back enough descriptors for
             * every thread to hold one such file, plus the reader's. */
            rs_log(RS_LOG_INFO, "open-file limit reached at %u outputs: reopening the others per write", d);
            reopen = 1;
            for (uint32_t k = d > 64 ? d - 64 : 0; k < d; k++)
                if (df[k].fd >= 0) {
                    close(df[k].fd);
                    df[k].fd = -1;
                }
            fd = open(o->dest_paths[d], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        }
        if (fd < 0)
            return rs_error_set(err, RS_EXIT_IO, "%s: cannot create: %s", o->dest_paths[d], strerror(errno));
        if (reopen) {
            close(fd);
            fd = -1;
        }
        df[d].fd = fd;
    }
    return 0;
}

int rs_pipeline_header_bytes(const rs_pipeline_opts *o, const char *line, size_t len, rs_buf *out)
{
    /* Without a header (--no-header, or only empty inputs) gzip files still
     * start with a member, an empty one: a 0-byte file is not valid gzip. */
    if (!o->compress)
        return rs_buf_append(out, line, len);
    rs_deflater *dz = rs_compressor_new(o->compress, o->level, o->codec);
    const void *pieces[1] = {line};
    size_t lens[1] = {len};
    uint32_t crc;
    int rc = dz && rs_deflater_member(dz, pieces, lens, 1, len ? 1 : 0, out, &crc) == 0 ? 0 : -1;
    rs_deflater_free(dz);
    return rc;
}

/* Writes the header line into every output: its own gzip member, so a
 * header-only file is exactly that member. */
static int write_headers(const rs_pipeline_opts *o, const rs_buf *line, dest_file *df, rs_direct *dx, rs_error *err)
{
    rs_buf bytes = {0};
    if (rs_pipeline_header_bytes(o, line->data, line->len, &bytes) != 0) {
        rs_buf_free(&bytes);
        return rs_error_set(err, RS_EXIT_IO, "compressing the header line failed: %s",
                            o->compress ? rs_deflater_why() : "out of memory");
    }
    int rc = 0;
    for (uint32_t d = 0; d < o->ndest && rc == 0 && bytes.len; d++)
        rc = dest_write(o, &df[d], dx, d, bytes.data, bytes.len, err);
    rs_buf_free(&bytes);
    return rc;
}

/* After the last batch of a unit with RS member headers: the line ends and
 * records the team counted must be what the headers declared, else the
 * headers lie (a corrupt or hand-edited file), and so would every line
 * number of a later unit read on its own. 0, or -1 with err. */
static int check_unit(const rs_pipeline_opts *o, const batch *b, const uint64_t *input_lines,
                      const uint64_t *input_records, rs_error *err)
{
    const rs_input_unit *u = b->u;
    if (!u)
        return 0;
    /* input_records excludes the header record */
    uint64_t lines = input_lines[b->input] - u->line_base;
    uint64_t records = input_records[b->input] + b->hdr_records - u->record_base;
    if (lines == u->lines && records == u->records)
        return 0;
    return rs_error_set(err, RS_EXIT_DATA,
                        "%s: the %s at byte offsets %llu to %llu declare %llu lines and %llu records "
                        "in their RS %s but hold %llu lines and %llu records (corrupt or altered %s)",
                        o->inputs[b->input], u->zstd ? "zstd frames" : "gzip members", (unsigned long long)u->offset,
                        (unsigned long long)(u->offset + u->size), (unsigned long long)u->lines,
                        (unsigned long long)u->records, u->zstd ? "metadata frames" : "headers",
                        (unsigned long long)lines, (unsigned long long)records,
                        u->zstd ? "metadata frames" : "member headers");
}

/* --memory accounting. Outside the buffers: code, C library, codec tables
 * and OpenMP runtime (RS_MEMORY_FIXED), the caller's share (the ring) and
 * per output its file state. Per thread: its stack pages and malloc arena
 * slack, the member buffer it keeps (member_keep) and its compressor. Per
 * parse group and output: a row count and, for files, a scatter buffer
 * (256 bytes at least once used). The buffers are 8 batches (see the top).
 * The batch size must not depend on the thread count (the output's bytes
 * follow the batches), so it is a sixteenth of what is left after the
 * fixed parts, and the threads and groups must fit in the other half. */
#define RS_MEM_THREAD ((uint64_t)192 << 10)

typedef struct {
    uint64_t base, threads, outputs, per_group;
    int G;
    size_t cap;
} mem_plan;

static void plan_parts(const rs_pipeline_opts *o, int T, mem_plan *m)
{
    uint32_t ndest = o->ndest;
    int files = o->dest_paths != NULL;
    m->outputs = (uint64_t)ndest * (sizeof(rs_dest_stats) + (files ? sizeof(dest_file) + 2 * sizeof(uint64_t) : 0));
    m->base = RS_MEMORY_FIXED + o->held + m->outputs;
    m->threads = (uint64_t)T * (RS_MEM_THREAD + sizeof(rs_error) + sizeof(rs_buf) +
                                (o->compress && files ? rs_compressor_bytes(o->compress, o->level, o->codec) : 0));
    m->per_group = sizeof(thread_acc) + (uint64_t)ndest * (sizeof(uint64_t) + (files ? sizeof(rs_buf) + 256 : 0));
}

static uint64_t plan_floor(const mem_plan *m)
{
    uint64_t room = 2 * (m->threads + m->per_group), batches = 16 * (uint64_t)RS_BATCH_MIN;
    return m->base + (room > batches ? room : batches);
}

uint64_t rs_pipeline_min_memory(const rs_pipeline_opts *o)
{
    mem_plan m;
    plan_parts(o, rs_pipeline_threads(o), &m);
    return plan_floor(&m);
}

/* A lane (opts batch_bytes): the batch size is its process's, and its
 * share of --memory must hold 8 of them besides the threads and one parse
 * group (cluster/lanes.c chooses the lanes so that it does). */
static int plan_memory(const rs_pipeline_opts *o, int T, mem_plan *m, rs_error *err);

static int given_batch_fits(const rs_pipeline_opts *o, mem_plan *m, rs_error *err)
{
    m->cap = o->batch_bytes;
    if (o->memory >= m->base + 8 * (uint64_t)m->cap + m->threads + m->per_group)
        return 0;
    return rs_error_set(err, RS_EXIT_USAGE, "internal error: a lane's %.0f MiB of --memory cannot hold its batches of "
                                            "%.1f MiB", o->memory / 1048576.0, m->cap / 1048576.0);
}

size_t rs_pipeline_batch_bytes(const rs_pipeline_opts *o)
{
    mem_plan m;
    rs_error e = {0};
    return plan_memory(o, rs_pipeline_threads(o), &m, &e) == 0 ? m.cap : 0;
}

/* Fits the run into o->memory: batches as above; as many parse groups as
 * useful (4 a thread, at most RS_SEGMENTS) that fit beside the threads
 * (the output does not depend on the groups). Refuses (RS_EXIT_USAGE)
 * when even one group or the smallest batches do not fit. */
static int plan_memory(const rs_pipeline_opts *o, int T, mem_plan *m, rs_error *err)
{
    plan_parts(o, T, m);
    uint64_t floor = plan_floor(m);
    if (o->memory < floor) {
        double mib = 1048576.0;
        return rs_error_set(err, RS_EXIT_USAGE,
                            "--memory %.0f MiB is below what these options need: at least %.0f MiB (%d thread%s: %.1f "
                            "MiB of compressor state, stacks and buffers, kept to half of what the ring and "
                            "libraries leave; %u output%s: %.1f MiB; the ring: %.1f MiB; code and libraries: %.0f "
                            "MiB); raise --memory or lower -j",
                            o->memory / mib, (double)((floor + (1 << 20) - 1) >> 20), T, T == 1 ? "" : "s",
                            m->threads / mib, o->ndest, o->ndest == 1 ? "" : "s", (m->outputs + m->per_group) / mib,
                            o->held / mib, (double)RS_MEMORY_FIXED / mib);
    }
    uint64_t cap = (o->memory - m->base) / 16;
    m->cap = cap < RS_BATCH_MIN ? RS_BATCH_MIN : (cap > RS_BATCH_MAX ? RS_BATCH_MAX : (size_t)cap);
    if (o->batch_bytes && given_batch_fits(o, m, err) != 0)
        return -1;
    uint64_t room = o->memory - m->base - 8 * (uint64_t)m->cap - m->threads;  /* >= per_group: the floor */
    int G = 4 * T > RS_SEGMENTS ? RS_SEGMENTS : 4 * T;
    while (G > 1 && (uint64_t)G * m->per_group > room)
        G /= 2;
    m->G = G;
    return 0;
}

/* Whether input i's size is known up front: a regular file (an empty one
 * too), not standard input nor another pipe. For the progress line only. */
static int input_size_known(const rs_pipeline_opts *o, size_t i)
{
    struct stat st;
    if (!o->input_names && !strcmp(o->inputs[i], "-"))
        return 0;
    return fstatat(input_dirfd(o), input_name(o, i), &st, 0) == 0 && S_ISREG(st.st_mode);
}

/* n bytes as "123 B", "12.3 kB", "12.3 MB" or "12.3 GB". */
static void human_bytes(char *out, size_t cap, uint64_t n)
{
    if (n < 1000)
        snprintf(out, cap, "%llu B", (unsigned long long)n);
    else if (n < 1000000)
        snprintf(out, cap, "%.1f kB", n / 1e3);
    else if (n < 10000000000ULL)
        snprintf(out, cap, "%.1f MB", n / 1e6);
    else
        snprintf(out, cap, "%.1f GB", n / 1e9);
}

/* "45.0%  files 3/8  read 12.3 MB of 27.3 MB  ..." - the inputs done (the
 * producer's: it has moved past them) and their bytes as stored (gzip
 * compressed), of all inputs; with a pipe among them the total is "?" and
 * there is no percentage nor ETA. Then the rows and data bytes routed. */
static void progress_line(pipe_state *s, double t0, int final)
{
    rs_pipeline_result *res = s->res;
    double el = now() - t0;
    if (el <= 0)
        el = 1e-9;
    double mb = res->bytes / 1e6;
    char eta[32] = "", pct[16] = "", done[24], total[24] = "?";
    int known = !s->size_unknown;
    /* at the end, what every unit consumed (the last read may not show it all) */
    uint64_t got = final ? s->consumed_done : s->consumed_now;
    double frac = s->total_size ? (double)got / (double)s->total_size : 1;
    if (known && frac > 0.001 && frac < 1 && !final)
        snprintf(eta, sizeof eta, " ETA %.0fs", el / frac - el);
    if (known) {
        snprintf(pct, sizeof pct, "%5.1f%%  ", frac * 100);
        human_bytes(total, sizeof total, s->total_size);
    }
    human_bytes(done, sizeof done, got);
    fprintf(stderr, "\r%sfiles %u/%zu  read %s of %s  %llu rows  %.1f MB  %.2f M rows/s  %.0f MB/s%s\033[K", pct,
            s->next_input, s->o->ninputs, done, total, (unsigned long long)res->rows, mb, res->rows / el / 1e6,
            mb / el, eta);
    if (final)
        fputc('\n', stderr);
}

/* What one run holds besides pipe_state: the outputs, the per-group and
 * per-thread buffers, the quarantine file and the write-behind thread
 * (rs_pipeline_run's steps below share it). */
typedef struct {
    int T, G;                  /* threads; parse groups */
    uint32_t ndest;
    size_t member_keep;        /* a thread's member buffer kept between batches */
    dest_file *df;
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

/* The buffers of a run. -1 with err when out of memory. */
static int run_alloc(pipe_state *s, run_state *r, rs_error *err)
{
    const rs_pipeline_opts *o = s->o;
    rs_pipeline_result *res = s->res;
    uint32_t ndest = r->ndest;
    size_t cap = s->cap;
    int G = r->G, T = r->T;
    r->member_keep = cap / (size_t)T > ((size_t)64 << 10) ? cap / (size_t)T : (size_t)64 << 10;
    rs_log(RS_LOG_INFO, "pipeline: %d thread%s, batches of up to %.1f MiB, %d parse groups, %u outputs", T,
           T == 1 ? "" : "s", cap / 1048576.0, G, ndest);
    r->df = calloc(ndest ? ndest : 1, sizeof *r->df);
    r->sc.count = calloc((size_t)G * (ndest ? ndest : 1), sizeof *r->sc.count);
    if (o->dest_paths)
        r->sc.bufs = calloc((size_t)G * ndest, sizeof *r->sc.bufs);
    r->acc = calloc((size_t)G, sizeof *r->acc);
    r->dz = calloc((size_t)T, sizeof *r->dz);
    r->members = calloc((size_t)T, sizeof *r->members);
    r->gathered = calloc((size_t)T, sizeof *r->gathered);
    r->terr = calloc((size_t)T, sizeof *r->terr);
    if (!res->dest || !res->input || !r->df || !r->sc.count || (o->dest_paths && !r->sc.bufs) || !r->acc || !r->dz ||
        !r->members || !r->gathered || !r->terr || grow_batch(&s->b[0], cap) != 0 || grow_batch(&s->b[1], cap) != 0)
        return rs_error_set(err, RS_EXIT_IO, "out of memory for the pipeline buffers (--memory %llu)",
                            (unsigned long long)o->memory);
    for (uint32_t d = 0; d < ndest; d++)
        r->df[d].fd = -1;
    return 0;
}

/* Every input's units (reader.h), their sizes and the total the progress
 * line shows; a cluster rank's range checked. */
static int list_units(pipe_state *s, rs_error *err)
{
    const rs_pipeline_opts *o = s->o;
    rs_pipeline_result *res = s->res;
    s->units = calloc(o->ninputs ? o->ninputs : 1, sizeof *s->units);
    s->nunits = calloc(o->ninputs ? o->ninputs : 1, sizeof *s->nunits);
    if (!s->units || !s->nunits)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    uint64_t unit_bytes = o->unit_bytes ? o->unit_bytes : rs_unit_bytes();
    s->whole = units_read_whole(o);
    for (size_t i = 0; i < o->ninputs; i++) {
        res->input[i].path = o->inputs[i];
        if (rs_input_units_at(input_dirfd(o), input_name(o, i), o->inputs[i], unit_bytes, &s->units[i], &s->nunits[i],
                              &res->input[i].size, err) != 0) {
            if (rs_interrupt_pending()) {  /* an open of a FIFO cut short by a signal */
                rs_error_clear(err);
                rs_error_set(err, RS_EXIT_INTERRUPTED, "interrupted");
            }
            return -1;
        }
        if (o->expect_size && o->expect_size[i] != UINT64_MAX &&
            (o->expect_size[i] != res->input[i].size || o->expect_units[i] != (uint64_t)s->nunits[i]))
            return rs_error_set(err, RS_EXIT_IO,
                                "%s: the file changed while it was read (%llu bytes in %llu units when the ranks "
                                "divided the work, %llu bytes in %llu units now)",
                                o->inputs[i], (unsigned long long)o->expect_size[i],
                                (unsigned long long)o->expect_units[i], (unsigned long long)res->input[i].size,
                                (unsigned long long)s->nunits[i]);
        s->total_size += res->input[i].size;
        if (o->progress && res->input[i].size == 0 && !input_size_known(o, i))
            s->size_unknown = 1;
        /* Read whole: unit 0 becomes the file, read as a stream to its end
         * with nothing checked, as gzip from another tool is. The list
         * keeps its length: a cluster rank's range indexes the same list
         * (see unit_to). */
        if (s->whole)
            s->units[i][0] = (rs_input_unit){0, res->input[i].size, 0, 0, 0, 0, 0, 0};
    }
    /* a cluster rank's range names existing units and is not empty */
    if (o->ninputs && (o->unit_lo >= s->nunits[0] || (o->ninputs == 1 && o->unit_hi && o->unit_hi <= o->unit_lo)))
        return rs_error_set(err, RS_EXIT_IO, "internal error: unit range %u..%u of %s", o->unit_lo, o->unit_hi,
                            o->inputs[0]);
    if (o->unit_lo || o->unit_hi) {  /* a cluster rank: the total is that of its units */
        s->total_size = 0;
        for (uint32_t i = 0; i < o->ninputs; i++)
            for (uint32_t k = unit_from(s, i); k < unit_to(s, i); k++)
                s->total_size += s->units[i][k].size;
    }
    s->unit = o->ninputs ? o->unit_lo : 0;
    skip_empty_ranges(s);
    return 0;
}

/* Direct I/O for outputs that are kept (direct.h): plain ones, or all with
 * --direct-io on; never with --direct-io off, nor when the files are
 * reopened per write (the open-file limit), nor where the file system does
 * not take it. Its arena (a batch, and a block per file) and
 * the files' carries (a block each) come out of the 3 batches of the 8
 * that the other buffers leave (see the top): when they do not fit, the
 * run writes through the page cache. 0 when it is on. */
static int start_direct(pipe_state *s, run_state *r)
{
    const rs_pipeline_opts *o = s->o;
    const char *why = o->direct_io == RS_DIRECT_OFF ? "--direct-io off" : NULL;
    /* Compressed outputs are half the bytes for the page cache, and the
     * direct writes' per-request cost (a small write per file and batch)
     * then outweighs it: gzip output took 0.5 to 0.9 s longer by direct
     * I/O in interleaved runs of 0.1.0 (2-core AVX2 EPYC), plain output 1 s
     * less. */
    if (!why && o->direct_io == RS_DIRECT_AUTO && o->compress)
        why = "--direct-io auto: compressed outputs";
    if (!why && (uint64_t)r->ndest * 2 * RS_DIRECT_BLOCK > 2 * (uint64_t)s->cap)
        why = "--memory leaves too little room for a block per output";
    int *fds = why ? NULL : malloc((r->ndest ? r->ndest : 1) * sizeof *fds);
    for (uint32_t d = 0; fds && d < r->ndest && !why; d++)
        if ((fds[d] = r->df[d].fd) < 0)
            why = "outputs reopened per write (open-file limit)";
    if (!why && fds)
        r->dx = rs_direct_start(fds, o->dest_paths, r->ndest, s->cap + (size_t)r->ndest * RS_DIRECT_BLOCK, &why);
    free(fds);
    if (!r->dx) {
        rs_log(RS_LOG_INFO, "outputs: written through the page cache (%s)", why ? why : "out of memory");
        return -1;
    }
    rs_log(RS_LOG_INFO, "outputs: direct I/O (O_DIRECT, %d-byte blocks)", RS_DIRECT_BLOCK);
    return 0;
}

/* The destinations, the quarantine file (with its header line), the
 * compressors and the write-behind thread (or direct I/O). */
static int open_outputs(pipe_state *s, run_state *r, rs_error *err)
{
    const rs_pipeline_opts *o = s->o;
    if (o->dest_paths && open_dests(o, r->df, err) != 0)
        return -1;
    if (o->bad_rows == RS_BAD_ROW_QUARANTINE) {
        /* /dev/stdout may be a shell's `>> log`: "w" would empty it */
        r->quarantine = fopen(o->quarantine, rs_outfile_in_place(o->quarantine) ? "a" : "w");
        if (!r->quarantine)
            return rs_error_set(err, RS_EXIT_IO, "%s: cannot create quarantine file: %s", quarantine_name(o),
                                strerror(errno));
        fputs("input\tline\trecord\treason\trow\n", r->quarantine);
    }
    if (o->compress && o->dest_paths)
        for (int t = 0; t < r->T; t++)
            if (!(r->dz[t] = rs_compressor_new(o->compress, o->level, o->codec)))
                return rs_error_set(err, RS_EXIT_IO, "out of memory for the compressors");

    if (o->write_behind && o->dest_paths && start_direct(s, r) == 0)
        return 0;  /* direct writes reach the disk as they are made */
    if (o->write_behind && o->dest_paths) {
        int *fds = malloc((r->ndest ? r->ndest : 1) * sizeof *fds);
        for (uint32_t d = 0; fds && d < r->ndest; d++)
            fds[d] = r->df[d].fd;
        r->wb = fds ? rs_writeback_start(fds, r->ndest) : NULL;  /* NULL: none, no harm */
        free(fds);
        r->wb_lens = r->wb ? calloc(r->ndest ? r->ndest : 1, sizeof *r->wb_lens) : NULL;
    }
    return 0;
}

/* The header line of every destination (keys only: the key columns'
 * names), written once the first batch shows what it is; kept in
 * res->header_out. */
static int emit_headers(pipe_state *s, run_state *r, rs_error *err)
{
    const rs_pipeline_opts *o = s->o;
    rs_pipeline_result *res = s->res;
    rs_buf line = {0};
    if (o->keys_only && o->header && res->header) {
        for (uint32_t k = 0; k < s->keyspec.ncols; k++) {
            if (k)
                rs_buf_append(&line, &o->key_sep, 1);
            const char *name = res->header_fields[s->keyspec.cols[k]];
            quote_key(&line, name, strlen(name), o->dialect.delim);
        }
        rs_buf_append(&line, "\n", 1);
    } else if (res->header) {
        rs_buf_append(&line, res->header, res->header_len);
        rs_buf_append(&line, "\n", 1);
    }
    if (line.len) {
        free(res->header_out);
        if (!(res->header_out = malloc(line.len))) {
            rs_buf_free(&line);
            return rs_error_set(err, RS_EXIT_IO, "out of memory");
        }
        memcpy(res->header_out, line.data, line.len);
        res->header_out_len = line.len;
    }
    int wr = o->no_header ? 0 : write_headers(o, &line, r->df, r->dx, err);
    rs_buf_free(&line);
    if (wr != 0)
        return -1;
    r->headers_written = 1;
    return 0;
}

/* One batch, b, while `next` is produced. 0 to go on, -1 with err to stop. */
static int run_batch(pipe_state *s, run_state *r, batch *b, batch *next, rs_error *err)
{
    const rs_pipeline_opts *o = s->o;
    rs_pipeline_result *res = s->res;
    int G = r->G, T = r->T;
    uint32_t ndest = r->ndest;
    scatter *sc = &r->sc;
    thread_acc *acc = r->acc;
    /* One parallel region a batch. Whoever arrives first produces the
     * next batch (inflating it) while the others parse this one's
     * groups; the thread that finishes the last group merges the counts
     * and checks for errors in input order; then all compress and
     * write. The producer joins whatever step is under way when it is
     * done: no barrier waits for it before the end of the region. */
    if (b->unit_first && b->unit > 0) {  /* numbering continues from the unit's base */
        r->input_lines[b->input] = b->line_base;
        r->input_records[b->input] = b->record_base;
    }
    r->input_lines[b->input] += b->start_line;
    if (b->bad && take_bad_batch(s, b, r->quarantine, r->input_lines, r->input_records, err) != 0) {
        res->fail_input = b->input;
        return -1;
    }
    for (int g = 0; g < G; g++) {
        thread_acc *a = &acc[g];
        a->rows = a->bytes = a->blank = a->rejected = a->lines = a->records = 0;
        a->crc = 0;
        a->crc_len = 0;
        a->fault.failed = 0;
        a->oom = 0;
        a->quarantine.len = 0;
        a->qmarks.len = 0;
    }
    memset(sc->count, 0, (size_t)G * (ndest ? ndest : 1) * sizeof *sc->count);
    batch_sched bs = {0};
    int failed = 0, io_failed = 0;
    rs_error io_err = {0};
#pragma omp parallel num_threads(T)
    {
        int t = omp_get_thread_num();
        if (__atomic_exchange_n(&bs.producer, 1, __ATOMIC_ACQ_REL) == 0)
            produce(s, next);
        for (;;) {
            int g = __atomic_fetch_add(&bs.next_group, 1, __ATOMIC_RELAXED);
            if (g >= G)
                break;
            if (!rs_pipeline_interrupted())  /* a batch can take seconds on one thread */
                parse_range(s, b, t + s->o->tid_base, g, RS_SEGMENTS * g / G, RS_SEGMENTS * (g + 1) / G, sc, &acc[g]);
            if (__atomic_add_fetch(&bs.groups_done, 1, __ATOMIC_ACQ_REL) == G) {
                /* the last batch's direct writes, done while this one was
                 * parsed: the arena is free for this one's */
                io_failed = r->dx && rs_direct_drain(r->dx, &io_err) != 0;
                failed = io_failed || merge_batch(s, b, acc, G, r->quarantine, r->input_lines, r->input_records, err);
                publish_phase(&bs.phase, failed ? 2 : 1);
            }
        }
        wait_for_phase(&bs.phase);
        if (bs.phase == 1 && o->dest_paths) {
            for (;;) {
                uint32_t d0 = __atomic_fetch_add(&bs.next_dest, 4, __ATOMIC_RELAXED);
                if (d0 >= ndest)
                    break;
                for (uint32_t d = d0; d < d0 + 4 && d < ndest; d++) {
                    if (__atomic_load_n(&bs.werr, __ATOMIC_RELAXED) || rs_pipeline_interrupted())
                        break;
                    if (write_dest(o, b, sc, G, d, r->dz[t], &r->gathered[t], &r->members[t], &r->df[d], r->dx,
                                   &r->terr[t]) != 0)
                        __atomic_store_n(&bs.werr, 1, __ATOMIC_RELAXED);
                    /* A thread keeps small buffers only: T of them
                     * sized for the largest destination each met
                     * would be T batches (-j 256). */
                    if (r->members[t].cap > r->member_keep)
                        rs_buf_free(&r->members[t]);
                    if (r->gathered[t].cap > r->member_keep)
                        rs_buf_free(&r->gathered[t]);
                }
            }
        }
        /* Leave the region together, the early ones asleep: at the
         * region's end libgomp's barrier spins (GOMP_SPINCOUNT, 300,000
         * rounds unless the environment says otherwise) while the last
         * thread still writes, CPU time taken from the producer or from
         * other processes (docs/performance.md, OpenMP waiting). */
        if (__atomic_add_fetch(&bs.left, 1, __ATOMIC_ACQ_REL) == omp_get_num_threads())
            publish_phase(&bs.all_left, 1);
        else
            wait_for_phase(&bs.all_left);
    }
    int werr = bs.werr;
    rs_test_pause("batch_written");
    /* Stop within the batch: under mpirun, the launcher kills a rank
     * that does not exit about two seconds after a ^C (Open MPI's
     * odls_base_sigkill_timeout), too soon to finish a large batch. */
    if (rs_pipeline_interrupted()) {
        rs_error_clear(err);
        return rs_error_set(err, RS_EXIT_INTERRUPTED, "interrupted");
    }
    if (io_failed)
        return rs_error_set(err, io_err.code, "%s", io_err.msg);
    if (failed || (b->unit_last && check_unit(o, b, r->input_lines, r->input_records, err) != 0)) {
        res->fail_input = b->input;
        return -1;
    }
    if (werr) {
        for (int t = 0; t < T; t++)
            if (r->terr[t].code)
                return rs_error_set(err, r->terr[t].code, "%s", r->terr[t].msg);
        return -1;
    }
    if (!o->dest_paths)
        for (int g = 0; g < G; g++)
            for (uint32_t d = 0; d < ndest; d++)
                r->df[d].st.rows += sc->count[(size_t)g * ndest + d].rows;
    if (r->wb_lens) {
        for (uint32_t d = 0; d < ndest; d++)
            r->wb_lens[d] = r->df[d].st.file_bytes;
        rs_writeback_post(r->wb, r->wb_lens);
    }
    return 0;
}

/* The batches, two slots: one parsed and written while the other is
 * produced. Stops at the end of the inputs or at the first error. */
static void run_batches(pipe_state *s, run_state *r, rs_error *err)
{
    const rs_pipeline_opts *o = s->o;
    r->last_progress = now();
    r->input_records = calloc(o->ninputs ? o->ninputs : 1, sizeof *r->input_records);
    r->input_lines = calloc(o->ninputs ? o->ninputs : 1, sizeof *r->input_lines);
    int slot = 0;
    produce(s, &s->b[0]);
    for (;;) {
        batch *b = &s->b[slot], *next = &s->b[1 - slot];
        /* First: a read that a signal cut short failed because of it */
        if (rs_interrupt_pending()) {
            rs_error_set(err, RS_EXIT_INTERRUPTED, "interrupted");
            break;
        }
        if (b->err.code) {
            rs_error_set(err, b->err.code, "%s", b->err.msg);
            s->res->fail_input = b->input;
            break;
        }
        if (o->dest_paths && !r->headers_written && (b->end || b->len) && emit_headers(s, r, err) != 0)
            break;
        if (b->end)
            break;
        if (run_batch(s, r, b, next, err) != 0)
            break;
        slot = 1 - slot;
        if (o->progress && now() - r->last_progress > 0.25) {
            progress_line(s, r->t0, 0);
            r->last_progress = now();
        }
    }
    rs_writeback_stop(r->wb);  /* before the files are closed */
    r->wb = NULL;
    free(r->input_records);
    free(r->input_lines);
}

/* After the last batch: the final progress line, the destinations closed
 * and their statistics into res, the quarantine file flushed. */
static int finish_run(pipe_state *s, run_state *r, rs_error *err)
{
    const rs_pipeline_opts *o = s->o;
    rs_pipeline_result *res = s->res;
    if (err->code != 0) {
        if (o->progress)
            fputc('\n', stderr);
        return -1;
    }
    if (o->progress)
        progress_line(s, r->t0, 1);
    if (r->dx && rs_direct_finish(r->dx, err) != 0)
        return -1;
    for (uint32_t d = 0; d < r->ndest; d++) {
        res->dest[d] = r->df[d].st;
        if (r->df[d].fd >= 0 && close(r->df[d].fd) != 0 && err->code == 0)
            rs_error_set(err, RS_EXIT_IO, "%s: close failed: %s", o->dest_paths[d], strerror(errno));
        r->df[d].fd = -1;
    }
    if (r->quarantine) {
        errno = 0;
        int flushed = fflush(r->quarantine) == 0 && !ferror(r->quarantine);
        int e = s->quarantine_errno ? s->quarantine_errno : errno ? errno : EIO;
        if (!flushed)
            rs_error_set(err, RS_EXIT_IO, "%s: write failed: %s", quarantine_name(o), strerror(e));
    }
    return err->code ? -1 : 0;
}

/* Releases what the run holds; the header fields go to res. */
static void run_free(pipe_state *s, run_state *r)
{
    const rs_pipeline_opts *o = s->o;
    rs_pipeline_result *res = s->res;
    uint32_t ndest = r->ndest;
    int G = r->G, T = r->T;
    rs_direct_free(r->dx);  /* before the files are closed */
    rs_writeback_stop(r->wb);
    free(r->wb_lens);
    if (s->rd)
        rs_reader_close(s->rd);
    for (size_t i = 0; s->units && i < o->ninputs; i++)
        free(s->units[i]);
    free(s->units);
    free(s->nunits);
    rs_buf_free(&s->carry);
    if (r->quarantine)
        fclose(r->quarantine);
    for (uint32_t d = 0; d < ndest; d++)
        if (r->df && r->df[d].fd >= 0)
            close(r->df[d].fd);
    if (r->sc.bufs)
        for (size_t i = 0; i < (size_t)G * ndest; i++)
            rs_buf_free(&r->sc.bufs[i]);
    for (int t = 0; r->acc && t < G; t++) {
        rs_buf_free(&r->acc[t].quarantine);
        rs_buf_free(&r->acc[t].qmarks);
        rs_buf_free(&r->acc[t].scratch);
    }
    for (int t = 0; r->dz && t < T; t++)
        rs_deflater_free(r->dz[t]);
    for (int t = 0; r->members && t < T; t++)
        rs_buf_free(&r->members[t]);
    for (int t = 0; r->gathered && t < T; t++)
        rs_buf_free(&r->gathered[t]);
    free(r->gathered);
    free(r->sc.bufs);
    free(r->sc.count);
    free(r->acc);
    free(r->dz);
    free(r->members);
    free(r->terr);
    free(r->df);
    free(s->b[0].data);
    free(s->b[1].data);
    free(s->b[0].qck);
    free(s->b[1].qck);
    rs_buf_free(&s->b[0].bad_row);
    rs_buf_free(&s->b[1].bad_row);
    if (!s->header_fields.data || !res->header_fields) {
        rs_buf_free(&s->header_fields);
    } else {
        /* header_fields point into this buffer: hand it to the result */
        res->header_fields_storage = s->header_fields.data;
    }
}

int rs_pipeline_run(const rs_pipeline_opts *o, rs_pipeline_result *res, rs_error *err)
{
    memset(res, 0, sizeof *res);
    res->header_input = -1;
    res->fail_input = -1;
    run_state r;
    memset(&r, 0, sizeof r);
    r.t0 = now();
    int T = r.T = rs_pipeline_threads(o);
    r.ndest = o->ndest;
    mem_plan mp;
    if (plan_memory(o, T, &mp, err) != 0)
        return -1;
    res->dest = calloc(r.ndest ? r.ndest : 1, sizeof *res->dest);
    res->input = calloc(o->ninputs ? o->ninputs : 1, sizeof *res->input);
    pipe_state s;
    memset(&s, 0, sizeof s);
    s.o = o;
    s.res = res;
    size_t cap = mp.cap;  /* plan_memory */
    s.cap = cap;
    rs_pipeline_opts local = *o;
    if (local.dialect.max_record > cap / 2) {
        rs_error_set(err, RS_EXIT_USAGE,
                     "--max-record: %zu bytes is more than --memory %llu allows (at most %zu bytes: half a batch of "
                     "%zu); raise --memory or lower --max-record",
                     local.dialect.max_record, (unsigned long long)o->memory, cap / 2, cap);
        return -1;
    }
    if (local.dialect.max_record == 0)
        local.dialect.max_record = cap / 2;
    s.o = &local;

    /* Groups of segments are parsed dynamically, so that the thread that
     * inflates the next batch simply takes fewer; each has its own scatter
     * buffers and counts, merged in order. */
    r.G = mp.G;
    int rc = -1;
    if (run_alloc(&s, &r, err) == 0 && list_units(&s, err) == 0 && open_outputs(&s, &r, err) == 0) {
        run_batches(&s, &r, err);
        rc = finish_run(&s, &r, err);
    }
    run_free(&s, &r);
    res->seconds = now() - r.t0;
    return rc;
}

void rs_pipeline_result_free(rs_pipeline_result *res)
{
    free(res->dest);
    free(res->input);
    free(res->header);
    free(res->header_fields);
    free(res->header_fields_storage);
    free(res->header_out);
    free(res->mismatch_fields);
    memset(res, 0, sizeof *res);
}

/* ----------------------------------------------------- ring placement */

static uint32_t ring_route(void *ctx, int tid, uint32_t input, const char *key, size_t keylen, const char *row,
                           size_t rowlen)
{
    (void)tid, (void)input, (void)row, (void)rowlen;
    return rs_ring_locate(ctx, key, keylen);
}

static void ring_positions(void *ctx, const char *const *keys, const size_t *keylens, size_t n, uint64_t *pos)
{
    rs_ring_positions(ctx, keys, keylens, n, pos);
}

static void ring_prefetch(void *ctx, const uint64_t *pos, size_t n) { rs_ring_prefetch_points(ctx, pos, n); }

static void ring_owners(void *ctx, int tid, uint32_t input, const uint64_t *pos, size_t n, uint32_t *dest)
{
    (void)tid, (void)input;
    rs_ring_owners(ctx, pos, n, dest);
}

static const rs_pos_router ring_pos_router = {ring_positions, ring_prefetch, ring_owners};

void rs_pipeline_route_by_ring(rs_pipeline_opts *o, const rs_ring *ring)
{
    o->ndest = rs_ring_nodes(ring)->count;
    o->route = ring_route;
    o->pos_router = &ring_pos_router;
    o->route_ctx = (void *)ring;
    o->held += rs_ring_bytes(ring);
}
