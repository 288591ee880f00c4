/* cluster/cluster.c - one job over several MPI ranks, byte-identical to one
 * process.
 *
 * Why this shape. A single process writes, for every destination file, a
 * header and then one gzip member per batch that had rows for it, batches
 * in input order; a batch never spans two inputs nor two units of one
 * input (reader.h: ringshard's own gzip files are cut into units of whole
 * members, any other input is one unit), and its cut points depend only
 * on the unit's bytes and --memory. So the member sequence of one unit is
 * the same whoever processes it. Ranks therefore take CONTIGUOUS ranges of
 * (input, unit) work items (balanced by compressed size) and run the
 * ordinary threaded pipeline on their range, and the file for destination
 * d is
 *
 *     header | rows(rank 0, d) | piece(rank 1, d) | ... | piece(R-1, d)
 *
 * Rank 0 writes the files themselves, header first (the header of the
 * lowest input that has one, as in a single process: rank 0's own unless
 * all its inputs were empty, when it is replaced). The other ranks write
 * private piece files without a header, learn where each piece goes from
 * an exclusive scan of the sizes, and copy it there (copy_file_range: on
 * one file system the kernel, or the file server, moves the bytes). No rank ever
 * holds more than its pipeline's buffers, and nothing is copied through
 * rank 0. The statistics are merged with reductions: sums for counts, a
 * rank-ordered (non-commutative) reduction for the CRC-32s.
 *
 * Every step ends with rs_world_agree, so that all ranks make the same
 * collective calls whatever fails where, and the error reported is that of
 * the lowest failing rank: the one whose inputs come first, which is the
 * error a single process would have stopped at.
 *
 * The destination files live in the output's temporary directory, which
 * must be on a file system every rank sees (see docs/clusters.md, "The
 * shared file system"); rank 0 alone creates, publishes or removes it.
 *
 * Lanes: ranks made of threads. One pipeline has one producer (an inflate
 * is serial), so a process never reads faster than one inflate: the wall
 * on a 16- or 64-core machine. So a rank divides its range once more,
 * among P lanes (cluster/lanes.c): pthreads of the process, each running the
 * ordinary pipeline with its own OpenMP team (threads/P threads) on a
 * contiguous sub-range, lane 0 into the rank's files (the destination
 * files on rank 0, its pieces elsewhere), lane k into "<file>.lane<k>"
 * beside them. The algorithm above is written once over a group
 * (world.h: rs_group) and runs at both levels: the MPI world, then a
 * thread group whose collectives are slots and barriers. Why not a
 * bounded reorder stage (several producers feeding one team, batches
 * written in input order): with P producers running ahead, the batches
 * waiting for an earlier one must be held whole or written out and read
 * back, which is the pieces again but with the bookkeeping new and
 * unproven; this reuses the assembly the MPI tests prove byte-identical,
 * the header rules, the error agreement (lowest lane = first error) and
 * the quarantine assembly. The cost: lanes k>0 write their bytes twice
 * (the piece, then copy_file_range into place - in the page cache of one
 * file system, no read into user space), and each lane holds its own
 * batches: the batch size stays the process's (the members depend on it),
 * so --memory must hold P times 8 of them (src/runplan/). How many: at most
 * --producers, one per RS_LANE_FEEDS_* threads (what one inflate keeps
 * busy, measured by tools/bench/bench_lanes.sh), at most -j, the work items and
 * what --memory holds; standard input and a quarantine written in place
 * are one lane. Lanes stop at batch boundaries like the pipeline; the
 * piece copy checks for a stop signal too, and nothing is published.
 *
 * The output directory, quarantine file and bucket directory that every
 * rank shares are opened and ended in shared_files.c. */
#define _GNU_SOURCE
#include "cluster/cluster.h"
#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ringshard/util.h"
#include "cluster/lanes.h"
#include "ringshard/runplan.h"
#include "cluster/world.h"
#include "ringshard/interrupt.h"
#include "ringshard/testhook.h"
#include "ringshard/deflate.h"
#include "ringshard/hash.h"
#include "ringshard/log.h"
#include "util/filemode.h"

/* ------------------------------------------------------------ partition */

/* Can the weights be cut into at most R contiguous ranges of at most L? */
static int fits(const uint64_t *w, size_t n, int R, uint64_t L)
{
    int ranges = 1;
    uint64_t load = 0;
    for (size_t i = 0; i < n; i++) {
        if (w[i] > L)
            return 0;
        if (load + w[i] > L) {
            ranges++;
            load = 0;
        }
        load += w[i];
    }
    return ranges <= R;
}

void rs_cluster_partition(const uint64_t *weight, size_t n, int R, int r, size_t *lo, size_t *hi)
{
    /* The smallest feasible largest load, by bisection; then the greedy cut
     * with that load (ranks past the last range get nothing). */
    uint64_t a = 0, b = 0;
    for (size_t i = 0; i < n; i++)
        b += weight[i];
    while (a < b) {
        uint64_t m = a + (b - a) / 2;
        if (fits(weight, n, R, m))
            b = m;
        else
            a = m + 1;
    }
    size_t i = 0;
    for (int k = 0; k <= r; k++) {
        *lo = i;
        uint64_t load = 0;
        while (i < n && load + weight[i] <= a) {  /* a >= every weight */
            load += weight[i];
            i++;
        }
        *hi = i;
    }
}

/* ------------------------------------------------------- the pipeline */

/* A member's piece of path: "path.rank2", "path.lane1" - beside path, so
 * in the output's temporary directory when path is. */
static char *part_path(const char *path, const char *tag, int k)
{
    char *p;
    return asprintf(&p, "%s.%s%d", path, tag, k) < 0 ? NULL : p;
}


/* What each rank tells the others about its header. */
typedef struct {
    int64_t input;       /* global index, -1: none */
    uint64_t line;
    uint64_t raw_len, fields_len, nfields, out_len;
} header_info;

static size_t fields_len(const rs_pipeline_result *res)
{
    size_t n = 0;
    for (uint32_t k = 0; k < res->nheader_fields; k++)
        n += strlen(res->header_fields[k]) + 1;
    return n;
}

/* Copies a rank's header record (header_info, then its bytes, as
 * exchange_headers gathers them) into res. */
static void adopt_header(rs_pipeline_result *res, const char *rec)
{
    header_info h;
    memcpy(&h, rec, sizeof h);
    const char *p = rec + sizeof h;
    res->header = malloc(h.raw_len + 1);
    res->header_fields_storage = malloc(h.fields_len ? h.fields_len : 1);
    res->header_fields = malloc((h.nfields ? h.nfields : 1) * sizeof *res->header_fields);
    res->header_out = h.out_len ? malloc(h.out_len) : NULL;
    if (!res->header || !res->header_fields_storage || !res->header_fields || (h.out_len && !res->header_out))
        abort();
    memcpy(res->header, p, h.raw_len);
    res->header[h.raw_len] = '\0';
    res->header_len = h.raw_len;
    p += h.raw_len;
    memcpy(res->header_fields_storage, p, h.fields_len);
    p += h.fields_len;
    const char *f = res->header_fields_storage;
    for (uint64_t k = 0; k < h.nfields; k++, f += strlen(f) + 1)
        res->header_fields[k] = (char *)f;
    res->nheader_fields = (uint32_t)h.nfields;
    if (h.out_len)
        memcpy(res->header_out, p, h.out_len);
    res->header_out_len = h.out_len;
    res->header_input = h.input;
    res->header_line = h.line;
}

/* Replaces err with the pipeline's own message for a header mismatch;
 * what: rs_pipeline_header_difference's text. */
static void header_differs(rs_error *err, const char *path, uint64_t line, const char *ref, const char *what)
{
    rs_error_clear(err);
    rs_error_set(err, RS_EXIT_DATA, "%s: line %llu: header differs from the header of %s: %s", path,
                 (unsigned long long)line, ref, what);
}

/* The header exchange: every member learns each member's header; the first
 * one (lowest input) is the output's; a member whose own header differs
 * fails with the single-process message (and 1 is returned: its first
 * header is then where it fails). */
static int exchange_headers(rs_group *g, const rs_pipeline_opts *o, size_t lo, const rs_pipeline_result *mine,
                            rs_pipeline_result *res, rs_error *err)
{
    int R = g->size, own_differs = 0;
    rs_buf rec = {0};
    header_info h = {-1, 0, 0, 0, 0, 0};
    if (mine->header && mine->header_input >= 0) {
        h.input = (int64_t)lo + mine->header_input;
        h.line = mine->header_line;
        h.raw_len = mine->header_len;
        h.fields_len = fields_len(mine);
        h.nfields = mine->nheader_fields;
        h.out_len = mine->header_out_len;
    }
    if (rs_buf_append(&rec, &h, sizeof h) != 0 || rs_buf_append(&rec, mine->header, h.raw_len) != 0 ||
        rs_buf_append(&rec, mine->header_fields_storage ? mine->header_fields_storage : "", h.fields_len) != 0 ||
        rs_buf_append(&rec, mine->header_out, h.out_len) != 0)
        abort();
    char *all;
    size_t *lens = calloc((size_t)R, sizeof *lens);
    if (!lens)
        abort();
    g->gather_bytes(g, rec.data, rec.len, &all, lens);
    size_t off = 0, first = SIZE_MAX;
    for (int r = 0; r < R; r++) {
        header_info hr;
        memcpy(&hr, all + off, sizeof hr);
        if (hr.input >= 0 && first == SIZE_MAX)
            first = off;
        off += lens[r];
    }
    if (first != SIZE_MAX) {
        adopt_header(res, all + first);
        const char *ref = rs_input_label(o->inputs[res->header_input]);
        /* My first header against the output's: a difference there comes
         * before any error of mine in a later input. A header mismatch
         * inside my range was measured against my first header, which then
         * equals the output's: say so with the output's reference, as a
         * single process does. */
        int64_t fail = mine->fail_input >= 0 ? (int64_t)lo + mine->fail_input : INT64_MAX;
        if (h.input >= 0 && h.input != res->header_input && h.input <= fail &&
            (h.nfields != res->nheader_fields || h.fields_len != fields_len(res) ||
             memcmp(mine->header_fields_storage, res->header_fields_storage, h.fields_len) != 0)) {
            char what[512];
            rs_pipeline_header_difference(what, sizeof what, mine->header_fields_storage, (uint32_t)h.nfields,
                                          rs_csv_bom_len(mine->header, mine->header_len) != 0, ref,
                                          res->header_fields_storage, res->nheader_fields,
                                          rs_csv_bom_len(res->header, res->header_len) != 0);
            header_differs(err, rs_input_label(o->inputs[h.input]), h.line, ref, what);
            own_differs = 1;
        } else if (err->code && mine->mismatch_line && fail != INT64_MAX) {
            /* measured against my first header, which is the output's */
            char what[512];
            rs_pipeline_header_difference(what, sizeof what, mine->mismatch_fields, mine->mismatch_nfields,
                                          mine->mismatch_bom, ref, res->header_fields_storage, res->nheader_fields,
                                          rs_csv_bom_len(res->header, res->header_len) != 0);
            header_differs(err, rs_input_label(o->inputs[fail]), mine->mismatch_line, ref, what);
        }
    }
    free(all);
    free(lens);
    rs_buf_free(&rec);
    return own_differs;
}

/* Per-input statistics, as u64 fields, every rank's in input order. An
 * input split into units among ranks appears on each of them: its counts
 * are summed, its CRC-32s combined in rank (= unit) order. With
 * opts.input_rows, its rows per destination follow (IN_HAS_ROWS: the
 * member counted them; one that could not leaves the merge without). */
enum { IN_INDEX, IN_SIZE, IN_ROWS, IN_BYTES, IN_REJECTED, IN_BLANK, IN_CRC, IN_PAD, IN_SUM, IN_HAS_SUM, IN_CONTENT,
       IN_CONTENT_SIZE, IN_HAS_CONTENT, IN_HAS_ROWS, IN_FIELDS };

/* Input k of a member (*in, its index lo + k) as a record of rec u64s. */
static void input_record(const rs_pipeline_opts *o, const rs_input_stats *in, size_t index, uint64_t *f)
{
    f[IN_INDEX] = index, f[IN_SIZE] = in->size, f[IN_ROWS] = in->rows, f[IN_BYTES] = in->bytes;
    f[IN_REJECTED] = in->rejected, f[IN_BLANK] = in->blank_lines, f[IN_CRC] = in->crc;
    f[IN_PAD] = in->zero_padding;
    f[IN_SUM] = in->checksum, f[IN_HAS_SUM] = (uint64_t)in->has_checksum;
    f[IN_CONTENT] = in->content, f[IN_CONTENT_SIZE] = in->content_size;
    f[IN_HAS_CONTENT] = (uint64_t)in->has_content;
    f[IN_HAS_ROWS] = in->dest_rows != NULL;
    if (o->input_rows && in->dest_rows)
        memcpy(f + IN_FIELDS, in->dest_rows, o->ndest * sizeof *f);
}

/* A record's rows per destination into the merged input *in: added, or
 * (a member without them) the merge's dropped. */
static void merge_input_rows(const rs_pipeline_opts *o, const uint64_t *f, rs_input_stats *in,
                             rs_pipeline_result *res)
{
    if (!res->input_rows)
        return;
    if (!f[IN_HAS_ROWS]) {
        free(res->input_rows);
        res->input_rows = NULL;
        for (size_t i = 0; i < o->ninputs; i++)
            res->input[i].dest_rows = NULL;
        return;
    }
    in->dest_rows = res->input_rows + (size_t)f[IN_INDEX] * o->ndest;
    for (uint32_t d = 0; d < o->ndest; d++)
        in->dest_rows[d] += f[IN_FIELDS + d];
}

static void merge_inputs(rs_group *g, const rs_pipeline_opts *o, const rs_pipeline_result *mine, size_t lo,
                         size_t n, rs_pipeline_result *res)
{
    size_t rec = IN_FIELDS + (o->input_rows ? o->ndest : 0);
    uint64_t *v = calloc(n ? n * rec : 1, sizeof *v);
    size_t *lens = calloc((size_t)g->size, sizeof *lens);
    unsigned char *seen = calloc(o->ninputs ? o->ninputs : 1, 1);
    if (!v || !lens || !seen)
        abort();
    rs_pipeline_input_rows(o, res);
    for (size_t i = 0; i < n; i++)
        input_record(o, &mine->input[i], lo + i, v + i * rec);
    char *all;
    g->gather_bytes(g, v, n * rec * sizeof *v, &all, lens);
    size_t total = 0;
    for (int r = 0; r < g->size; r++)
        total += lens[r];
    uint64_t *f = malloc(rec * sizeof *f);
    if (!f)
        abort();
    for (size_t k = 0; k < total / (rec * sizeof *f); k++) {
        memcpy(f, all + k * rec * sizeof *f, rec * sizeof *f);
        if (f[IN_INDEX] >= o->ninputs)
            abort();
        rs_input_stats *in = &res->input[f[IN_INDEX]];
        if (!seen[f[IN_INDEX]]) {
            seen[f[IN_INDEX]] = 1;
            *in = (rs_input_stats){o->inputs[f[IN_INDEX]], f[IN_SIZE], f[IN_ROWS], f[IN_BYTES],
                                   f[IN_REJECTED], f[IN_BLANK], (uint32_t)f[IN_CRC], f[IN_PAD], f[IN_SUM],
                                   (int)f[IN_HAS_SUM], f[IN_CONTENT], f[IN_CONTENT_SIZE],
                                   (int)f[IN_HAS_CONTENT], 0, NULL};
            merge_input_rows(o, f, in, res);
            continue;
        }
        /* an input split among members was read as ranges: no checksum of
         * its stored bytes; its content's are combined in rank (= unit)
         * order. A member that read none of it (a file read whole belongs
         * to the holder of its first unit) says nothing of its content. */
        in->has_checksum = 0;
        if (f[IN_HAS_CONTENT] || f[IN_CONTENT_SIZE] || f[IN_ROWS] || f[IN_BYTES]) {
            in->has_content &= (int)f[IN_HAS_CONTENT];
            in->content = rs_crc64_combine(in->content, f[IN_CONTENT], f[IN_CONTENT_SIZE]);
            in->content_size += f[IN_CONTENT_SIZE];
        }
        in->crc = rs_crc32_combine(in->crc, (uint32_t)f[IN_CRC], f[IN_BYTES]);
        in->rows += f[IN_ROWS], in->bytes += f[IN_BYTES];
        in->rejected += f[IN_REJECTED], in->blank_lines += f[IN_BLANK];
        in->zero_padding += f[IN_PAD];
        merge_input_rows(o, f, in, res);
    }
    for (size_t i = 0; i < o->ninputs; i++)
        if (!seen[i])
            abort();  /* the ranges cover every input */
    free(f);
    free(all);
    free(v);
    free(lens);
    free(seen);
}

/* Member 0 appends the other members' quarantine pieces, without their
 * column-name line, to its own file. */
static int assemble_quarantine(rs_group *g, const rs_pipeline_opts *o, rs_error *err)
{
    if (g->rank != 0)
        return 0;
    FILE *out = rs_file_create_stream(o->quarantine, "a", RS_FILE_USER);
    if (!out)
        return rs_error_set(err, RS_EXIT_IO, "%s: cannot append: %s", o->quarantine_name ? o->quarantine_name : o->quarantine, strerror(errno));
    for (int r = 1; r < g->size && !err->code; r++) {
        char *pp = part_path(o->quarantine, g->tag, r);
        FILE *in = pp ? fopen(pp, "r") : NULL;
        if (!in) {
            rs_error_set(err, RS_EXIT_IO, "%s: cannot read: %s", pp ? pp : o->quarantine, strerror(errno));
            free(pp);
            break;
        }
        int c, skipping = 1;
        while ((c = getc(in)) != EOF) {
            if (!skipping)
                putc(c, out);
            else if (c == '\n')
                skipping = 0;
        }
        fclose(in);
        unlink(pp);
        free(pp);
    }
    if (fclose(out) != 0 && !err->code)
        rs_error_set(err, RS_EXIT_IO, "%s: write failed: %s", o->quarantine, strerror(errno));
    return err->code ? -1 : 0;
}

/* Prints "rank R: items A-B, from INPUT byte N" (or "lane L: ...": items
 * of the rank's list; N: the first unit's offset in its input, from the
 * weights: unit sizes, plus 4096 on each input's first unit). */
static void show_range(const rs_group *g, const rs_pipeline_opts *o, const uint64_t *nunits, const uint64_t *w,
                       size_t ilo, size_t ihi)
{
    const char *tag = g->tag;
    int me = g->rank;
    size_t item = 0;
    for (size_t i = 0; i < o->ninputs; item += nunits[i], i++)
        if (ilo < item + nunits[i]) {
            uint64_t off = 0;
            for (size_t k = item; k < ilo; k++)
                off += w[k] - (k == item ? 4096 : 0);
            fprintf(stderr, "ringshard: %s %d: items %zu-%zu, from %s byte %llu\n", tag, me, ilo, ihi, o->inputs[i],
                    (unsigned long long)off);
            return;
        }
    fprintf(stderr, "ringshard: %s %d: nothing\n", tag, me);
}

/* The work items of one level (the world's inputs, or a rank's range of
 * them): per input of the level's options its unit count and size as
 * listed (UINT64_MAX: unlisted), per unit (flat, input order) its weight;
 * the level's own items are [ilo, ihi) of that list. */
typedef struct {
    const uint64_t *nunits, *sizes, *w;
    uint64_t unit_bytes;
    size_t ilo, ihi;
} unit_list;

/* Member 0 lists the units of every input and tells the others, so that
 * every member cuts the same ranges. A per-input constant in the weights
 * keeps many empty files spread. *nunits, *sizes and wb are the caller's. */
static void list_units(rs_group *g, const rs_pipeline_opts *o, uint64_t **nunits, uint64_t **sizes, rs_buf *wb,
                       unit_list *ul)
{
    *nunits = calloc(o->ninputs ? o->ninputs : 1, sizeof **nunits);
    *sizes = calloc(o->ninputs ? o->ninputs : 1, sizeof **sizes);
    uint64_t unit_bytes = rs_unit_bytes(), nitems = 0;
    if (!*nunits || !*sizes)
        abort();
    for (size_t i = 0; i < o->ninputs && g->rank == 0; i++) {
        rs_input_unit *u = NULL;
        size_t n = 0;
        uint64_t size;
        rs_error e2 = {0};
        if (rs_input_units_at(o->input_names ? o->input_dirfd : AT_FDCWD,
                              o->input_names ? o->input_names[i] : o->inputs[i], o->inputs[i], unit_bytes, &u, &n,
                              &size, &e2) != 0)
            n = 0;  /* the pipeline of the member that reads it reports the error */
        (*nunits)[i] = n ? n : 1;
        (*sizes)[i] = n ? size : UINT64_MAX;
        for (size_t k = 0; k < (*nunits)[i]; k++) {
            uint64_t wk = (n ? u[k].size : 0) + (k == 0 ? 4096 : 0);
            if (rs_buf_append(wb, &wk, sizeof wk) != 0)
                abort();
        }
        free(u);
    }
    g->bcast(g, &unit_bytes, sizeof unit_bytes, 0);
    g->bcast(g, *nunits, o->ninputs * sizeof **nunits, 0);
    g->bcast(g, *sizes, o->ninputs * sizeof **sizes, 0);
    for (size_t i = 0; i < o->ninputs; i++)
        nitems += (*nunits)[i];
    if (g->rank != 0 && rs_buf_reserve(wb, nitems * sizeof(uint64_t)) != 0)
        abort();
    g->bcast(g, wb->data, nitems * sizeof(uint64_t), 0);
    *ul = (unit_list){*nunits, *sizes, (const uint64_t *)wb->data, unit_bytes, 0, nitems};
}

/* A member's share of its level: items [ilo, ihi) of the list, which are
 * inputs [lo, hi) from unit ulo of the first to unit uhi (exclusive) of
 * the last; first: the flat index of input lo's unit 0. */
typedef struct {
    size_t ilo, ihi, lo, hi, first;
    uint32_t ulo, uhi;
} member_range;

static void cut_range(rs_group *g, const rs_pipeline_opts *o, const unit_list *ul, member_range *m)
{
    memset(m, 0, sizeof *m);
    rs_cluster_partition(ul->w + ul->ilo, ul->ihi - ul->ilo, g->size, g->rank, &m->ilo, &m->ihi);
    m->ilo += ul->ilo, m->ihi += ul->ilo;
    if (getenv("RINGSHARD_SHOW_RANGES"))  /* a testing knob: where each member starts */
        show_range(g, o, ul->nunits, ul->w, m->ilo, m->ihi);
    for (size_t i = 0, first = 0; i < o->ninputs; first += ul->nunits[i], i++) {
        if (m->ilo >= first && m->ilo < first + ul->nunits[i])
            m->lo = i, m->ulo = (uint32_t)(m->ilo - first), m->first = first;
        if (m->ihi > first && m->ihi <= first + ul->nunits[i])
            m->hi = i + 1, m->uhi = (uint32_t)(m->ihi - first);
    }
    if (m->ihi == m->ilo) {  /* nothing for this member (ranges past the last one) */
        m->lo = m->hi = o->ninputs;
        m->ulo = m->uhi = 0;
        m->first = m->ilo = m->ihi = 0;
    }
}

/* What a member runs on its share: the pipeline, or (a rank) its lanes. */
typedef int (*member_fn)(rs_group *g, rs_pipeline_opts *local, const unit_list *sub, rs_pipeline_result *mine,
                         rs_error *err, void *ctx);

/* The failure that decides the level's: the lowest failing member's input
 * and, for a header mismatch, the mismatching header (what a level above
 * needs to name it against its own first header, see exchange_headers).
 * own_differs: exchange_headers failed this member on its first header. */
static void share_failure(rs_group *g, size_t lo, const rs_pipeline_result *mine, int own_differs,
                          rs_pipeline_result *res, const rs_error *err)
{
    uint64_t h[5] = {err->code != 0, UINT64_MAX, 0, 0, 0};  /* failed, input, line, fields, bom */
    const char *f = NULL;
    size_t flen = 0;
    if (err->code && own_differs) {
        h[1] = lo + (uint64_t)mine->header_input, h[2] = mine->header_line, h[3] = mine->nheader_fields;
        h[4] = rs_csv_bom_len(mine->header, mine->header_len) != 0;
        f = mine->header_fields_storage, flen = fields_len(mine);
    } else if (err->code) {
        h[1] = mine->fail_input >= 0 ? lo + (uint64_t)mine->fail_input : UINT64_MAX;
        h[2] = mine->mismatch_line, h[3] = mine->mismatch_nfields, h[4] = (uint64_t)mine->mismatch_bom;
        f = mine->mismatch_fields;
        for (uint32_t k = 0; f && k < mine->mismatch_nfields; k++)
            flen += strlen(f + flen) + 1;
    }
    rs_buf rec = {0};
    if (rs_buf_append(&rec, h, sizeof h) != 0 || rs_buf_append(&rec, f ? f : "", flen) != 0)
        abort();
    char *all;
    size_t *lens = calloc((size_t)g->size, sizeof *lens), off = 0;
    if (!lens)
        abort();
    g->gather_bytes(g, rec.data, rec.len, &all, lens);
    res->fail_input = -1;
    for (int r = 0; r < g->size; off += lens[r], r++) {
        memcpy(h, all + off, sizeof h);
        if (!h[0])
            continue;
        res->fail_input = h[1] == UINT64_MAX ? -1 : (int64_t)h[1];
        res->mismatch_line = h[2], res->mismatch_nfields = (uint32_t)h[3], res->mismatch_bom = (int)h[4];
        if (h[2] && lens[r] > sizeof h) {
            if (!(res->mismatch_fields = malloc(lens[r] - sizeof h)))
                abort();
            memcpy(res->mismatch_fields, all + off + sizeof h, lens[r] - sizeof h);
        }
        break;
    }
    free(all);
    free(lens);
    rs_buf_free(&rec);
}

/* The files' first bytes: the header of the lowest input that has one.
 * Member 0 wrote its own; it differs only when all of member 0's inputs
 * were empty (no header, hence no rows): then it is replaced. A level
 * that writes no header (a rank's lanes on a rank after the first) has
 * nothing to replace. */
static void fix_header(rs_group *g, const rs_pipeline_opts *o, rs_pipeline_result *mine,
                       const rs_pipeline_result *res, rs_error *err)
{
    if (!o->dest_paths || g->rank != 0 || o->no_header)
        return;
    rs_buf head = {0}, own = {0};
    if (rs_pipeline_header_bytes(o, res->header_out ? res->header_out : "", res->header_out_len, &head) != 0 ||
        rs_pipeline_header_bytes(o, mine->header_out ? mine->header_out : "", mine->header_out_len, &own) != 0)
        abort();
    if ((own.len != head.len || memcmp(own.data, head.data, own.len) != 0) && mine->rows == 0)
        for (uint32_t d = 0; d < o->ndest && !err->code; d++) {
            int fd = open(o->dest_paths[d], O_WRONLY | O_TRUNC | O_CLOEXEC);
            if (fd < 0 || (head.len && pwrite(fd, head.data, head.len, 0) != (ssize_t)head.len))
                rs_error_set(err, RS_EXIT_IO, "%s: cannot write: %s", o->dest_paths[d], strerror(errno));
            if (fd >= 0 && close(fd) != 0 && !err->code)
                rs_error_set(err, RS_EXIT_IO, "%s: write failed: %s", o->dest_paths[d], strerror(errno));
            mine->dest[d].file_bytes = head.len;
            mine->dest[d].stored_crc = rs_crc32(0, head.data, head.len);
        }
    else if (own.len != head.len || memcmp(own.data, head.data, own.len) != 0)
        rs_error_set(err, RS_EXIT_IO, "internal error: %s 0 wrote rows without the header", g->tag);
    rs_buf_free(&own);
    rs_buf_free(&head);
}

/* Statistics: sums, scans and the member-ordered CRC; at[d]: where this
 * member's piece of file d goes. */
static void merge_stats(rs_group *g, const rs_pipeline_opts *o, const rs_pipeline_result *mine, size_t lo, size_t n,
                        rs_pipeline_result *res, uint64_t *at)
{
    uint32_t ndest = o->ndest;
    merge_inputs(g, o, mine, lo, n, res);
    uint64_t tot[3] = {mine->rows, mine->bytes, mine->rejected};
    g->sum_u64(g, tot, 3);
    res->rows = tot[0], res->bytes = tot[1], res->rejected = tot[2];
    uint64_t *v = calloc(ndest ? 3 * (size_t)ndest : 1, sizeof *v);
    uint64_t *crc = calloc(ndest ? 4 * (size_t)ndest : 1, sizeof *crc);
    if (!v || !crc)
        abort();
    for (uint32_t d = 0; d < ndest; d++) {
        v[d] = mine->dest[d].rows;
        v[ndest + d] = mine->dest[d].bytes;
        v[2 * ndest + d] = mine->dest[d].file_bytes;
    }
    g->exscan_u64(g, v + 2 * ndest, at, ndest);
    g->sum_u64(g, v, 3 * (size_t)ndest);
    /* (crc, bytes) of the rows, then (stored crc, file bytes) of the pieces,
     * each concatenated in member order: the file's pieces are in that order */
    uint64_t *stored = crc + 2 * (size_t)ndest;
    for (uint32_t d = 0; d < ndest; d++) {
        crc[2 * d] = mine->dest[d].crc, crc[2 * d + 1] = mine->dest[d].bytes;
        stored[2 * d] = mine->dest[d].stored_crc, stored[2 * d + 1] = mine->dest[d].file_bytes;
    }
    g->crc_concat(g, crc, 2 * (size_t)ndest);
    for (uint32_t d = 0; d < ndest; d++)  /* member 0's file bytes include the header */
        res->dest[d] = (rs_dest_stats){v[d], v[ndest + d], v[2 * ndest + d], (uint32_t)crc[2 * d],
                                       (uint32_t)stored[2 * d]};
    free(crc);
    free(v);
}

/* Member 0's pipeline created every file and wrote its own rows into them;
 * the other members copy their pieces after those. */
static void copy_pieces(rs_group *g, const rs_pipeline_opts *o, const rs_pipeline_result *mine, char **parts,
                        const uint64_t *at, double t_pipe, rs_error *err)
{
    double t_copy = rs_now();
    int last = -1;
    for (uint32_t d = 0; d < o->ndest && !err->code && g->rank != 0; d++) {
        uint64_t len = mine->dest[d].file_bytes;
        if (len == 0)
            continue;
        rs_test_pause("piece_copy");
        int in = open(parts[d], O_RDONLY | O_CLOEXEC), out = open(o->dest_paths[d], O_WRONLY | O_CLOEXEC);
        if (in < 0 || out < 0 || rs_copy_into(in, 0, len, out, at[d]) != 0) {
            if (rs_interrupt_pending())
                rs_error_set(err, RS_EXIT_INTERRUPTED, "interrupted");
            else
                rs_error_set(err, RS_EXIT_IO, "%s: cannot assemble from %s: %s", o->dest_paths[d], parts[d],
                             strerror(errno));
        }
        if (in >= 0)
            close(in);
        /* A piece is gone once copied: unlinked before the syncfs
         * below, its pages are dropped instead of written to disk. */
        if (!err->code)
            unlink(parts[d]);
        if (out >= 0 && close(out) != 0 && !err->code)
            rs_error_set(err, RS_EXIT_IO, "%s: write failed: %s", o->dest_paths[d], strerror(errno));
        last = (int)d;
    }
    /* The bytes this rank wrote must be on disk before rank 0 renames
     * the directory. Under rank 0's kernel they are in the page cache
     * that rank 0's fsyncs at publication flush; elsewhere (another
     * machine, a network file system) rank 0's fsyncs do not reach
     * them, and one syncfs covers them all. Lanes share their kernel. */
    if (last >= 0 && !err->code && !g->same_kernel_as_root) {
        int fd = open(o->dest_paths[last], O_RDONLY | O_CLOEXEC);
        if (fd < 0 || syncfs(fd) != 0)
            rs_error_set(err, RS_EXIT_IO, "%s: sync failed: %s", o->dest_paths[last], strerror(errno));
        if (fd >= 0)
            close(fd);
    }
    rs_log(RS_LOG_INFO, "%s %d of %d: pipeline %.2f s (%llu rows), pieces copied and synced %.2f s", g->tag, g->rank,
           g->size, t_pipe, (unsigned long long)mine->rows, rs_now() - t_copy);
}

/* This member's options: its range; member 0 writes the level's files
 * themselves (header first, unless the level writes none), the others
 * pieces beside them (*parts, *qpart: freed by the caller). */
static void member_opts(rs_group *g, const rs_pipeline_opts *o, const unit_list *ul, const member_range *m,
                        rs_pipeline_opts *local, unit_list *sub, char ***parts, char **qpart)
{
    int me = g->rank;
    *local = *o;
    local->inputs = o->inputs + m->lo;
    local->input_names = o->input_names ? o->input_names + m->lo : NULL;  /* this rank's own directory descriptor */
    local->input_headerless = o->input_headerless ? o->input_headerless + m->lo : NULL;
    local->input_vouched = o->input_vouched ? o->input_vouched + m->lo : NULL;
    local->ninputs = m->hi - m->lo;
    local->unit_lo = m->ulo;
    local->unit_hi = m->uhi;
    local->unit_bytes = ul->unit_bytes;
    local->expect_size = ul->sizes + m->lo;
    local->expect_units = ul->nunits + m->lo;
    local->no_header = o->no_header || me != 0;
    local->input_base = o->input_base + (uint32_t)m->lo;
    local->progress = o->progress && me == 0;
    *sub = (unit_list){ul->nunits + m->lo, ul->sizes + m->lo, ul->w + m->first, ul->unit_bytes, m->ilo - m->first,
                       m->ihi - m->first};
    *parts = NULL, *qpart = NULL;
    if (o->dest_paths && me != 0) {
        if (!(*parts = calloc(o->ndest ? o->ndest : 1, sizeof **parts)))
            abort();
        for (uint32_t d = 0; d < o->ndest; d++)
            if (!((*parts)[d] = part_path(o->dest_paths[d], g->tag, me)))
                abort();
        local->dest_paths = (const char *const *)*parts;
        local->write_behind = 0;  /* pieces are deleted once copied */
    }
    if (o->bad_rows == RS_BAD_ROW_QUARANTINE && me != 0) {
        if (!(*qpart = part_path(o->quarantine, g->tag, me)))
            abort();
        local->quarantine = *qpart;
        local->quarantine_continue = 0;   /* a piece of its own, appended by member 0 */
    }
}

/* One level of the division (see the top): this member runs `run` on its
 * contiguous share of ul's items, then the members assemble their files
 * and merge their statistics. Collective over g. */
static int group_run(rs_group *g, const rs_pipeline_opts *o, const unit_list *ul, member_fn run, void *ctx,
                     rs_pipeline_result *res, rs_error *err)
{
    memset(res, 0, sizeof *res);
    res->header_input = -1;
    res->fail_input = -1;
    double t0 = rs_now();
    uint32_t ndest = o->ndest;
    member_range m;
    cut_range(g, o, ul, &m);
    if (g->agree(g, err) != 0)
        return -1;
    rs_pipeline_opts local;
    unit_list sub;
    char **parts, *qpart;
    member_opts(g, o, ul, &m, &local, &sub, &parts, &qpart);

    rs_pipeline_result mine;
    double t_pipe = rs_now();
    run(g, &local, &sub, &mine, err, ctx);
    t_pipe = rs_now() - t_pipe;
    res->dest = calloc(ndest ? ndest : 1, sizeof *res->dest);
    res->input = calloc(o->ninputs ? o->ninputs : 1, sizeof *res->input);
    uint64_t *at = calloc(ndest ? ndest : 1, sizeof *at);
    if (!res->dest || !res->input || !at)
        abort();
    int own_differs = exchange_headers(g, o, m.lo, &mine, res, err);
    share_failure(g, m.lo, &mine, own_differs, res, err);
    int rc = -1;
    if (g->agree(g, err) != 0)
        goto done;
    fix_header(g, o, &mine, res, err);
    if (g->agree(g, err) != 0)
        goto done;
    merge_stats(g, o, &mine, m.lo, local.ninputs, res, at);
    if (o->dest_paths) {
        copy_pieces(g, o, &mine, parts, at, t_pipe, err);
        if (g->agree(g, err) != 0)
            goto done;
    }
    if (o->bad_rows == RS_BAD_ROW_QUARANTINE) {
        assemble_quarantine(g, o, err);
        if (g->agree(g, err) != 0)
            goto done;
    }
    rc = 0;
done:
    if (parts) {
        for (uint32_t d = 0; d < ndest; d++)
            if (parts[d])
                unlink(parts[d]);
        rs_free_strings(parts, ndest);
    }
    if (qpart) {
        unlink(qpart);
        free(qpart);
    }
    free(at);
    rs_pipeline_result_free(&mine);
    res->seconds = rs_now() - t0;
    return rc;
}

/* ------------------------------------------------------------ the lanes */

typedef struct {
    const rs_pipeline_opts *o;  /* the rank's options */
    const unit_list *ul;        /* the rank's items */
    const rs_run_plan *plan;
    rs_pipeline_result *res;    /* per lane */
    rs_error *err;
} lanes_job;

/* A lane's pipeline, in the shape the plan gave it: its threads (tids
 * after the lower lanes'), its share of --memory, the process's batch
 * size. */
static int lane_pipeline(rs_group *g, rs_pipeline_opts *local, const unit_list *sub, rs_pipeline_result *mine,
                         rs_error *err, void *ctx)
{
    const lanes_job *j = ctx;
    (void)sub;
    local->threads = j->plan->lane[g->rank].threads;
    for (int k = 0; k < g->rank; k++)
        local->tid_base += j->plan->lane[k].threads;
    local->memory = j->plan->lane_memory;
    local->batch_bytes = j->plan->batch_bytes;
    const rs_pipeline_shape *shape = &j->plan->lane[g->rank];
    if (!shape->threads && !err->code)  /* refused: its share cannot hold its threads */
        *err = j->plan->lane_refused;
    return rs_pipeline_run_shaped(local, shape->threads ? shape : NULL, mine, err);
}

static void lane_main(rs_group *g, void *ctx)
{
    lanes_job *j = ctx;
    group_run(g, j->o, j->ul, lane_pipeline, j, &j->res[g->rank], &j->err[g->rank]);
}

/* A rank's share (a whole single process too): its lanes, or the
 * pipeline itself when one lane is all it gets. ctx: the plan a single
 * process made before its items were counted (NULL: a rank plans its own,
 * its options and items being its own). */
static int rank_lanes(rs_group *g, rs_pipeline_opts *local, const unit_list *sub, rs_pipeline_result *mine,
                      rs_error *err, void *ctx)
{
    (void)g;
    rs_run_plan mine_plan;
    const rs_run_plan *bound = ctx;
    const rs_run_plan *plan = bound;
    int refused = 0;
    if (!bound || sub->ihi - sub->ilo < bound->items_bound) {
        refused = rs_run_plan_make(local, sub->ihi - sub->ilo, &mine_plan, err) != 0;
        plan = &mine_plan;
    }
    int P = plan->lanes;
    rs_log(RS_LOG_INFO, "lanes: %d (%s; %zu work items, %d threads%s)", P, plan->why, sub->ihi - sub->ilo,
           plan->threads, P > 1 ? ", split among them" : "");
    if (P == 1)
        return rs_pipeline_run_shaped(local, refused ? NULL : &plan->lane[0], mine, err);
    lanes_job j = {local, sub, plan, calloc((size_t)P, sizeof *j.res), calloc((size_t)P, sizeof *j.err)};
    if (!j.res || !j.err)
        abort();
    int rc;
    if (rs_lanes_run(P, lane_main, &j) != 0) {
        rs_log(RS_LOG_INFO, "lanes: cannot start %d threads, one lane", P);
        rc = rs_pipeline_run(local, mine, err);
    } else {
        *mine = j.res[0];
        *err = j.err[0];
        rc = err->code ? -1 : 0;
        for (int k = 1; k < P; k++)
            rs_pipeline_result_free(&j.res[k]);
    }
    free(j.res);
    free(j.err);
    return rc;
}

static int run_lanes(const rs_pipeline_opts *o, rs_pipeline_result *res, rs_error *err)
{
    rs_group world;
    rs_world_group(&world);
    int R = world.size;
    rs_run_plan plan;
    if (R == 1) {
        int refused = rs_run_plan_make(o, SIZE_MAX, &plan, err) != 0;
        if (plan.lanes == 1) {
            rs_log(RS_LOG_INFO, "lanes: 1 (%s)", plan.why);
            /* one lane whatever the items: nothing to list */
            return rs_pipeline_run_shaped(o, refused ? NULL : &plan.lane[0], res, err);
        }
    }
    for (size_t i = 0; i < o->ninputs && R > 1; i++)
        if (!o->input_names && !strcmp(o->inputs[i], "-"))
            rs_error_set(err, RS_EXIT_USAGE, "standard input cannot be divided among %d MPI ranks (name files)", R);
    uint64_t *nunits, *sizes;
    rs_buf wb = {0};
    unit_list ul;
    list_units(&world, o, &nunits, &sizes, &wb, &ul);
    int rc;
    if (R == 1) {
        rs_pipeline_opts all = *o;
        double t0 = rs_now();
        rc = rank_lanes(&world, &all, &ul, res, err, &plan);
        res->seconds = rs_now() - t0;
    } else {
        rc = group_run(&world, o, &ul, rank_lanes, NULL, res, err);
    }
    rs_buf_free(&wb);
    free(nunits);
    free(sizes);
    return rc;
}

int rs_cluster_pipeline_run(const rs_pipeline_opts *o, rs_pipeline_result *res, rs_error *err)
{
    /* the merged statistics: every rank decides alike on empty inputs */
    if (run_lanes(o, res, err) != 0)
        return -1;
    return rs_pipeline_check_empty(o, res, err);
}
