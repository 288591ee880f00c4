/* The row pipeline: inputs -> batches -> parse/route/scatter -> gzip members.
 *
 * The stages live in files of their own (pipe.h lists them): produce.c
 * reads and cuts the batches, route.c parses and places the rows, emit.c
 * compresses and writes them, cost.c prices the parts --memory is shared
 * out among (by the run plan, src/runplan/); this file holds the design,
 * the OpenMP region of the batches, the merge and the run.
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
 *    and the producer keeps ahead of it (see rs_pipe_produce).
 *
 *  - One OpenMP parallel region for all the batches; each batch, three
 *    steps, and a hand-over:
 *    1. the first thread to arrive PRODUCES the next batch (reads and
 *       inflates it into the other of two buffers) while the others PARSE
 *       this one: groups of contiguous segments are claimed from an atomic
 *       counter. Parsing scans records with the structural scanner
 *       (rs_csv_rows: each 64-byte block classified once, quote parity
 *       as a bit mask), RS_BLOCK at a time, hashes their keys while they
 *       are in cache and - for ring placement - resolves owners in three
 *       steps a block apart (index, points, owner: the ring's cache
 *       misses are served while the next blocks are scanned), then keeps
 *       for each row an ENTRY in its group's buffer for its destination:
 *       a reference to the row in the batch (route.c);
 *    2. the thread that finishes the last group MERGES the groups' counts
 *       in input order: the first fault by position becomes the error (so
 *       messages do not depend on scheduling), quarantined rows get
 *       absolute line numbers;
 *    3. all threads COMPRESS and write: destinations are claimed from
 *       another counter; each destination's rows are GATHERED from the
 *       groups' entries, in order, into one piece - the one copy of a row
 *       (with prefetches: the batch is out of the cache by then) - which
 *       becomes ONE gzip member (one reused compressor per thread: 1000
 *       live compressor states would thrash the caches), written with one
 *       write(2), or is written as it is.
 *    4. the last thread done with the batch ENDS it (errors in input
 *       order, the write-behind told) and BEGINS the next one, then
 *       releases the others, who spin up to 200 us and then sleep (a
 *       futex): the end of one batch is the start of the next without
 *       libgomp's region end and start, whose passive waits put the team
 *       to sleep and took 2 to 8 ms to wake it again on a virtual CPU,
 *       about 5% of the wall time (docs/performance.md).
 *    Threads that run out of work wait asleep (a futex), for the merge and
 *    at the batch's end, not spinning in libgomp's barrier.
 *    A thread with nothing left of the batch while the producer is still
 *    inflating reads the input after the producer's ahead (ahead.c): over
 *    many small inputs the producer then finds the next one inflated.
 *    The producer joins whichever step is under way when its batch is
 *    ready; nothing waits for it before the end of the batch, so inflating
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
 * Memory (cost.c): two batch buffers, the groups' entries (9 bytes a row
 * of more than 15 bytes, the bytes of shorter ones: at most 1.5 x a batch,
 * a tenth of one on the bill file), reused while half used or more; a
 * destination's gathered rows and compressed member per thread and, with
 * direct I/O, its arena (a batch) and a 4 KiB block per output: about six
 * batches, hence the batch size of --memory / 8. A record longer than
 * half a batch (the cap of --max-record) is a malformed row, not a reason to
 * grow without bound: one with no end in a whole batch becomes a BAD batch
 * (bad_record), skipped in bounded memory.
 */
#define _GNU_SOURCE
#include <emmintrin.h>
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "ringshard/dataset.h"
#include "ringshard/interrupt.h"
#include "ringshard/log.h"
#include "ringshard/ring.h"
#include "ringshard/testhook.h"
#include "ringshard/timeline.h"
#include "ringshard/util.h"
#include "pipeline/pipe.h"

void rs_pipeline_interrupt(void) { rs_interrupt_raise(); }
int rs_pipeline_interrupted(void) { return rs_interrupt_pending(); }

/* ---------------------------------------------------------------- reader */

/* The error for a malformed record under --on-bad-row fail. Returns -1. */
static int bad_row_error(rs_error *err, const char *path, uint64_t line, uint64_t record, const rs_csv_fault *f,
                         char sep)
{
    if (f->what == rs_pipe_fault_key_sep)
        return rs_error_set(err, RS_EXIT_DATA,
                            "%s: line %llu (record %llu): key part (field %u) holds the key separator '%c', so its "
                            "joined key could be another row's: pick a --key-sep that no key part holds",
                            path, (unsigned long long)line, (unsigned long long)record, f->field, sep);
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
        return bad_row_error(err, rs_input_label(path), line, record, &b->bad_fault, s->keyspec.sep);
    if (quarantine) {
        char why[96];
        size_t n = rs_pipe_quarantine_reason(&b->bad_fault, o->dialect.max_record, b->bad_row.len, why, sizeof why);
        rs_buf row = {0};
        rs_pipe_escape(&row, b->bad_row.data, n);
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
            bad_row_error(err, rs_input_label(o->inputs[b->input]), input_lines[b->input] + lines + a->fault.line + 1,
                          input_records[b->input] + records + a->fault.record + 1, &a->fault.fault, s->keyspec.sep);
            return 1;
        }
        if (quarantine && a->quarantine.len) {
            int e = rs_pipe_write_quarantine(quarantine, o->inputs[b->input], a, input_lines[b->input] + lines,
                                     input_records[b->input] + records);
            if (e && !s->quarantine_errno)
                s->quarantine_errno = e;
        }
        lines += a->lines;
        records += a->records;
        rs_input_stats *in = &res->input[b->input];
        in->rows += a->rows;
        in->bytes += a->bytes;
        in->filtered += a->filtered;
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

/* Where a batch stands. Work is claimed with atomic counters
 * rather than omp for, whose barriers would make the team wait for the
 * producer: inflating the next batch then overlaps the whole batch. */
typedef struct {
    int producer;           /* claimed by the first thread to arrive */
    int next_group, groups_done;
    int phase;              /* 0 parsing, 1 merged, 2 merged and failed */
    uint32_t next_dest;     /* claimed 4 at a time */
    int werr;
    int left;               /* threads done with the batch */
    int failed, io_failed;  /* the merge's verdict; the last batch's direct writes failed */
    rs_error io_err;
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

/* "45.0%  files 3/8  read 12.3 MB of 27.3 MB  ..." - the inputs done (the
 * producer's: it has moved past them) and their bytes as stored (gzip
 * compressed), of all inputs; with a pipe among them the total is "?" and
 * there is no percentage nor ETA. Then the rows and data bytes routed. */
static void progress_line(pipe_state *s, double t0, int final)
{
    rs_pipeline_result *res = s->res;
    double el = rs_now() - t0;
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
        rs_human_bytes((double)(s->total_size), total, sizeof total);
    }
    rs_human_bytes((double)(got), done, sizeof done);
    fprintf(stderr, "\r%s%s%sfiles %u/%zu  read %s of %s  %llu rows  %.1f MB  %.2f M rows/s  %.0f MB/s%s\033[K",
            s->o->progress_label ? s->o->progress_label : "", s->o->progress_label ? "  " : "", pct, s->next_input,
            s->o->ninputs, done, total, (unsigned long long)res->rows, mb, res->rows / el / 1e6, mb / el, eta);
    if (final)
        fputc('\n', stderr);
}

/* The buffers of a run. -1 with err when out of memory. */
static int run_alloc(pipe_state *s, run_state *r, rs_error *err)
{
    const rs_pipeline_opts *o = s->o;
    rs_pipeline_result *res = s->res;
    uint32_t ndest = r->ndest;
    size_t cap = s->cap;
    int G = r->G, T = r->T;
    rs_log(RS_LOG_INFO, "pipeline: %d thread%s, batches of up to %.1f MiB, %d parse groups, %u outputs", T,
           T == 1 ? "" : "s", cap / 1048576.0, G, ndest);
    r->df = calloc(ndest ? ndest : 1, sizeof *r->df);
    r->ord = o->only_rows ? calloc(ndest ? ndest : 1, sizeof *r->ord) : NULL;
    r->sc.count = calloc((size_t)G * (ndest ? ndest : 1), sizeof *r->sc.count);
    if (o->dest_paths)
        r->sc.bufs = calloc((size_t)G * ndest, sizeof *r->sc.bufs);
    r->acc = calloc((size_t)G, sizeof *r->acc);
    r->dz = calloc((size_t)T, sizeof *r->dz);
    r->members = calloc((size_t)T, sizeof *r->members);
    r->gathered = calloc((size_t)T, sizeof *r->gathered);
    r->terr = calloc((size_t)T, sizeof *r->terr);
    if (!res->dest || !res->input || !r->df || (o->only_rows && !r->ord) || !r->sc.count || (o->dest_paths && !r->sc.bufs) || !r->acc || !r->dz ||
        !r->members || !r->gathered || !r->terr || rs_pipe_grow_batch(&s->b[0], cap) != 0 || rs_pipe_grow_batch(&s->b[1], cap) != 0)
        return rs_error_set(err, RS_EXIT_IO, "out of memory for the pipeline buffers (--memory %llu)",
                            (unsigned long long)o->memory);
    for (uint32_t d = 0; d < ndest; d++)
        r->df[d].fd = -1;
    return 0;
}

/* Zeroes the parse groups' counts before a batch. */
static void reset_counts(run_state *r)
{
    for (int g = 0; g < r->G; g++) {
        thread_acc *a = &r->acc[g];
        a->rows = a->bytes = a->blank = a->rejected = a->lines = a->records = a->filtered = 0;
        a->crc = 0;
        a->crc_len = 0;
        a->fault.failed = 0;
        a->oom = 0;
        a->quarantine.len = 0;
        a->qmarks.len = 0;
    }
    memset(r->sc.count, 0, (size_t)r->G * (r->ndest ? r->ndest : 1) * sizeof *r->sc.count);
}

/* Thread t's part of step 3: destinations claimed 4 at a time, each
 * gathered, compressed and written; the first failure stops every
 * thread's claims (bs->werr). */
static void write_dests(pipe_state *s, run_state *r, batch *b, batch_sched *bs, int t)
{
    for (;;) {
        uint32_t d0 = __atomic_fetch_add(&bs->next_dest, 4, __ATOMIC_RELAXED);
        if (d0 >= r->ndest)
            break;
        for (uint32_t d = d0; d < d0 + 4 && d < r->ndest; d++) {
            if (__atomic_load_n(&bs->werr, __ATOMIC_RELAXED) || rs_pipeline_interrupted())
                break;
            if (rs_pipe_write_dest(s->o, b, &r->sc, r->G, d, r->dz[t], &r->gathered[t], &r->members[t], &r->df[d],
                                   r->ord ? &r->ord[d] : NULL, r->dx, &s->res->input[b->input], &r->terr[t]) != 0)
                __atomic_store_n(&bs->werr, 1, __ATOMIC_RELAXED);
            /* A thread keeps small buffers only: T of them sized for the
             * largest destination each met would be T batches (-j 256). */
            if (r->members[t].cap > r->member_keep)
                rs_buf_free(&r->members[t]);
            if (r->gathered[t].cap > r->member_keep)
                rs_buf_free(&r->gathered[t]);
        }
    }
}

/* Before batch b: a stop signal, a read error, the outputs' header
 * lines (once the first batch shows what they are), the end of the
 * inputs; then the line numbers where b starts and a BAD batch taken.
 * 1 to run b, 0 to stop (err set, or the end). */
static int batch_begin(pipe_state *s, run_state *r, batch *b, rs_error *err)
{
    const rs_pipeline_opts *o = s->o;
    /* First: a read that a signal cut short failed because of it */
    if (rs_interrupt_pending()) {
        rs_error_set(err, RS_EXIT_INTERRUPTED, "interrupted");
        return 0;
    }
    if (b->err.code) {
        rs_error_set(err, b->err.code, "%s", b->err.msg);
        s->res->fail_input = b->input;
        return 0;
    }
    if (o->dest_paths && !r->headers_written && (b->end || b->len) && rs_pipe_emit_headers(s, r, err) != 0)
        return 0;
    if (b->end)
        return 0;
    if (b->unit_first && b->unit > 0) {  /* numbering continues from the unit's base */
        r->input_lines[b->input] = b->line_base;
        r->input_records[b->input] = b->record_base;
    }
    r->input_lines[b->input] += b->start_line;
    if (b->bad && take_bad_batch(s, b, r->quarantine, r->input_lines, r->input_records, err) != 0) {
        s->res->fail_input = b->input;
        return 0;
    }
    reset_counts(r);
    return 1;
}

/* Thread t's part of batch b while `next` is produced: whoever arrives
 * first produces the next batch (inflating it) while the others parse
 * this one's groups; the thread that finishes the last group merges the
 * counts and checks for errors in input order; then all compress and
 * write. The producer joins whatever step is under way when it is done:
 * no barrier waits for it before the batch's end. */
static void batch_team(pipe_state *s, run_state *r, batch *b, batch *next, batch_sched *bs, int t, int n,
                       rs_error *err)
{
    int G = r->G;
    double tl = rs_timeline_start();
    if (__atomic_exchange_n(&bs->producer, 1, __ATOMIC_ACQ_REL) == 0) {
        rs_pipe_produce(s, next);
        rs_timeline_end(RS_TL_PRODUCE, tl);
    }
    for (;;) {
        int g = __atomic_fetch_add(&bs->next_group, 1, __ATOMIC_RELAXED);
        if (g >= G)
            break;
        tl = rs_timeline_start();
        if (!rs_pipeline_interrupted())  /* a batch can take seconds on one thread */
            rs_pipe_parse_range(s, b, t + s->o->tid_base, g, RS_SEGMENTS * g / G, RS_SEGMENTS * (g + 1) / G, &r->sc,
                                &r->acc[g]);
        rs_timeline_end(RS_TL_PARSE, tl);
        if (__atomic_add_fetch(&bs->groups_done, 1, __ATOMIC_ACQ_REL) == G) {
            /* the last batch's direct writes, done while this one was
             * parsed: the arena is free for this one's */
            tl = rs_timeline_start();
            bs->io_failed = r->dx && rs_direct_drain(r->dx, &bs->io_err) != 0;
            rs_timeline_end(RS_TL_DRAIN, tl);
            tl = rs_timeline_start();
            bs->failed = bs->io_failed ||
                         merge_batch(s, b, r->acc, G, r->quarantine, r->input_lines, r->input_records, err);
            rs_timeline_end(RS_TL_MERGE, tl);
            publish_phase(&bs->phase, bs->failed ? 2 : 1);
        }
    }
    tl = rs_timeline_start();
    wait_for_phase(&bs->phase);
    rs_timeline_end(RS_TL_WAIT_MERGE, tl);
    tl = rs_timeline_start();
    if (bs->phase == 1 && s->o->dest_paths)
        write_dests(s, r, b, bs, t);
    rs_timeline_end(RS_TL_WRITE, tl);
    /* nothing left of this batch for this thread: read the inputs after
     * the producer's ahead (ahead.c) until the others are all done with it,
     * instead of waiting for them */
    if (bs->phase == 1 && n > 1 && __atomic_load_n(&bs->left, __ATOMIC_ACQUIRE) < n - 1) {
        tl = rs_timeline_start();
        rs_pipe_ahead(s, &bs->left, n - 1);
        rs_timeline_end(RS_TL_AHEAD, tl);
    }
}

/* After batch b, on the last thread done with it: the stop signal, the
 * errors in input order, the rows counted, the write-behind told. 0 to
 * go on, -1 with err to stop. */
static int batch_end(pipe_state *s, run_state *r, batch *b, const batch_sched *bs, rs_error *err)
{
    const rs_pipeline_opts *o = s->o;
    uint32_t ndest = r->ndest;
    rs_test_pause("batch_written");
    /* Stop within the batch: under mpirun, the launcher kills a rank
     * that does not exit about two seconds after a ^C (Open MPI's
     * odls_base_sigkill_timeout), too soon to finish a large batch. */
    if (rs_pipeline_interrupted()) {
        rs_error_clear(err);
        return rs_error_set(err, RS_EXIT_INTERRUPTED, "interrupted");
    }
    if (bs->io_failed)
        return rs_error_set(err, bs->io_err.code, "%s", bs->io_err.msg);
    if (bs->failed || (b->unit_last && check_unit(o, b, r->input_lines, r->input_records, err) != 0)) {
        s->res->fail_input = b->input;
        return -1;
    }
    if (bs->werr) {
        for (int t = 0; t < r->T; t++)
            if (r->terr[t].code)
                return rs_error_set(err, r->terr[t].code, "%s", r->terr[t].msg);
        return -1;
    }
    if (!o->dest_paths)
        for (int g = 0; g < r->G; g++)
            for (uint32_t d = 0; d < ndest; d++)
                r->df[d].st.rows += r->sc.count[(size_t)g * ndest + d].rows;
    if (r->wb_lens) {
        for (uint32_t d = 0; d < ndest; d++)
            r->wb_lens[d] = r->df[d].st.file_bytes;
        rs_writeback_post(r->wb, r->wb_lens);
    }
    return 0;
}

/* The team between two batches: the last thread done with a batch ends
 * it and begins the next (batch_between), then releases the others by
 * advancing `turn`; they wait for that as wait_for_turn says. */
typedef struct {
    batch_sched bs;        /* the batch under way */
    int slot;              /* its buffer: s->b[slot]; the other is produced */
    int go;                /* 0 once the team is to leave */
    unsigned turn;         /* batches ended: the waiters' futex word */
} team_state;

/* Waits until *turn is past `seen`: spinning up to about 200
 * microseconds, then asleep on the futex. A thread that ends its share of
 * a batch first usually waits for the others' last destinations and the
 * batch's end, a fraction of a millisecond; put to sleep, it took 2 to
 * 8 ms to run again on a two-core VM (a futex wake of an idle virtual
 * CPU), a sixth of the wall time lost at every batch's start and end
 * (docs/performance.md, where the second core waits). The spin is
 * bounded by time, not by count, so that a loaded machine loses at most
 * that much a batch to it. */
static void wait_for_turn(unsigned *turn, unsigned seen)
{
    double until = 0;
    for (unsigned n = 0; __atomic_load_n(turn, __ATOMIC_ACQUIRE) == seen; n++) {
        if ((n & 255) == 255) {
            double t = rs_now();
            if (until == 0)
                until = t + 200e-6;
            else if (t > until) {
                syscall(SYS_futex, turn, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
                continue;
            }
        }
        _mm_pause();
    }
}

/* On the last thread done with a batch: ends it, begins the next one,
 * and releases the team. */
static void batch_between(pipe_state *s, run_state *r, team_state *ts, rs_error *err)
{
    int go = batch_end(s, r, &s->b[ts->slot], &ts->bs, err) == 0;
    if (go) {
        ts->slot = 1 - ts->slot;
        if (s->o->progress && rs_now() - r->last_progress > 0.25) {
            progress_line(s, r->t0, 0);
            r->last_progress = rs_now();
        }
        memset(&ts->bs, 0, sizeof ts->bs);
        go = batch_begin(s, r, &s->b[ts->slot], err);
    }
    ts->go = go;
    __atomic_store_n(&ts->turn, ts->turn + 1, __ATOMIC_RELEASE);
    syscall(SYS_futex, &ts->turn, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* The batches, two slots: one parsed and written while the other is
 * produced. Stops at the end of the inputs or at the first error. One
 * parallel region for all of them: libgomp's own region start and end
 * put the team to sleep and wake it for every batch (with passive
 * waits), the latency wait_for_turn avoids. */
static void run_batches(pipe_state *s, run_state *r, rs_error *err)
{
    const rs_pipeline_opts *o = s->o;
    r->last_progress = rs_now();
    r->input_records = calloc(o->ninputs ? o->ninputs : 1, sizeof *r->input_records);
    r->input_lines = calloc(o->ninputs ? o->ninputs : 1, sizeof *r->input_lines);
    double tl = rs_timeline_start();
    rs_pipe_produce(s, &s->b[0]);
    rs_timeline_end(RS_TL_FIRST, tl);
    team_state ts;
    memset(&ts, 0, sizeof ts);
    tl = rs_timeline_start();
    ts.go = batch_begin(s, r, &s->b[0], err);
    rs_timeline_end(RS_TL_BETWEEN, tl);
    if (ts.go) {
#pragma omp parallel num_threads(r->T)
        {
            int t = omp_get_thread_num(), n = omp_get_num_threads();
            while (ts.go) {
                unsigned seen = __atomic_load_n(&ts.turn, __ATOMIC_ACQUIRE);
                batch_team(s, r, &s->b[ts.slot], &s->b[1 - ts.slot], &ts.bs, t, n, err);
                double tw = rs_timeline_start();
                if (__atomic_add_fetch(&ts.bs.left, 1, __ATOMIC_ACQ_REL) == n) {
                    batch_between(s, r, &ts, err);
                    rs_timeline_end(RS_TL_BETWEEN, tw);
                } else {
                    wait_for_turn(&ts.turn, seen);
                    rs_timeline_end(RS_TL_WAIT_END, tw);
                }
            }
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
    double tl = rs_timeline_start();
    if (r->dx && rs_direct_finish(r->dx, err) != 0)
        return -1;
    rs_timeline_end(RS_TL_DIRECT_FINISH, tl);
    tl = rs_timeline_start();
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
    rs_timeline_end(RS_TL_CLOSE, tl);
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
    rs_pipe_ahead_free(s);
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
    free(r->ord);
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

int rs_pipeline_run_shaped(const rs_pipeline_opts *o, const rs_pipeline_shape *mp, rs_pipeline_result *res,
                           rs_error *err)
{
    memset(res, 0, sizeof *res);
    res->header_input = -1;
    res->fail_input = -1;
    run_state r;
    memset(&r, 0, sizeof r);
    r.t0 = rs_now();
    r.ndest = o->ndest;
    if (!mp)  /* the run plan refused the run: err says why */
        return -1;
    r.T = mp->threads; /* the plan, handed down: threads, groups, batch size, what a thread keeps */
    r.G = mp->groups;
    r.member_keep = mp->member_keep;
    res->dest = calloc(r.ndest ? r.ndest : 1, sizeof *res->dest);
    res->input = calloc(o->ninputs ? o->ninputs : 1, sizeof *res->input);
    rs_pipeline_input_rows(o, res);
    pipe_state s;
    memset(&s, 0, sizeof s);
    s.o = o;
    s.res = res;
    size_t cap = mp->batch_bytes;
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
    rs_pipe_ahead_init(&s);

    int rc = -1;
    rs_timeline_setup_done();
    double tl = rs_timeline_start();
    int opened = run_alloc(&s, &r, err) == 0 && rs_pipe_list_units(&s, err) == 0 && rs_pipe_open_outputs(&s, &r, err) == 0;
    rs_timeline_end(RS_TL_OPEN, tl);
    if (opened) {
        run_batches(&s, &r, err);
        rc = finish_run(&s, &r, err);
    }
    if (o->only_rows) {   /* the write stage took the rows only_rows drops off the inputs' counts */
        res->rows = res->bytes = 0;
        for (size_t i = 0; i < o->ninputs; i++)
            res->rows += res->input[i].rows, res->bytes += res->input[i].bytes;
    }
    run_free(&s, &r);
    if (rc != 0 && o->input_vouched && res->fail_input >= 0 && (size_t)res->fail_input < o->ninputs)
        rs_bucketdir_vouched_error(err, o->input_vouched[res->fail_input]);
    res->seconds = rs_now() - r.t0;
    return rc;
}

void rs_pipeline_input_rows(const rs_pipeline_opts *o, rs_pipeline_result *res)
{
    if (!o->input_rows || !res->input || !o->ninputs ||
        !(res->input_rows = calloc(o->ninputs * (size_t)o->ndest + 1, sizeof *res->input_rows)))
        return;   /* (out of memory: no runs recorded) */
    for (size_t i = 0; i < o->ninputs; i++)
        res->input[i].dest_rows = res->input_rows + i * o->ndest;
}

void rs_pipeline_result_free(rs_pipeline_result *res)
{
    free(res->dest);
    free(res->input);
    free(res->input_rows);
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

static void ring_prefetch(void *ctx, const uint64_t *pos, size_t n, uint64_t *hint)
{
    rs_ring_prefetch_points(ctx, pos, n, hint);
}

static void ring_owners(void *ctx, int tid, uint32_t input, const uint64_t *pos, const uint64_t *hint, size_t n,
                        uint32_t *dest)
{
    (void)tid, (void)input;
    rs_ring_owners(ctx, pos, hint, n, dest);
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

