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
 * must be on a file system every rank sees (see README, "Running on a
 * cluster"); rank 0 alone creates, publishes or removes it. */
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
#include "cluster/world.h"
#include "ringshard/deflate.h"
#include "ringshard/log.h"

int rs_cluster_outdir_begin(rs_outdir *od, const char *final, int force, rs_error *err)
{
    memset(od, 0, sizeof *od);
    if (err->code)  /* this rank failed before: only agree (and fail) */
        return rs_world_agree(err), -1;
    if (rs_world_size() == 1)
        return rs_outdir_begin(od, final, force, err);
    if (rs_world_rank() == 0)
        rs_outdir_begin(od, final, force, err);
    if (rs_world_agree(err) != 0) {
        rs_outdir_abort(od);  /* rank 0's, if another rank failed */
        return -1;
    }
    uint64_t len = rs_world_rank() == 0 ? strlen(od->tmp) : 0;
    rs_world_bcast(&len, sizeof len, 0);
    if (rs_world_rank() != 0) {
        od->tmp = calloc(len + 1, 1);
        if (!od->tmp)
            abort();
    }
    rs_world_bcast(od->tmp, len, 0);
    return 0;
}

void rs_cluster_outdir_abort(rs_outdir *od)
{
    if (rs_world_rank() == 0) {
        rs_outdir_abort(od);
    } else {
        free(od->tmp);
        memset(od, 0, sizeof *od);
    }
}

int rs_cluster_outdir_end(rs_outdir *od, rs_error *err)
{
    if (rs_world_size() == 1) {
        if (err->code == 0 && rs_outdir_commit(od, err) == 0)
            return 0;
        rs_outdir_abort(od);
        return -1;
    }
    int ok = rs_world_agree(err) == 0;
    if (rs_world_rank() == 0) {
        if (ok)
            rs_outdir_commit(od, err);
        else
            rs_outdir_abort(od);
    } else {
        free(od->tmp);
        memset(od, 0, sizeof *od);
    }
    return rs_world_agree(err) == 0 && ok ? 0 : -1;
}

int rs_cluster_quarantine_begin(rs_pipeline_opts *po, rs_outdir *od, rs_cluster_quarantine *q, rs_error *err)
{
    memset(q, 0, sizeof *q);
    if (po->bad_rows != RS_BAD_ROW_QUARANTINE || po->quarantine == NULL)
        return 0;
    const char *tmp = NULL;
    if (rs_world_rank() == 0 && !err->code) {
        if (od)
            tmp = rs_outdir_side(od, po->quarantine, err);
        else if (rs_outfile_reserve(&q->of, po->quarantine, err) == 0)
            tmp = q->of.tmp;
    }
    if (rs_world_agree(err) != 0)
        return -1;
    uint64_t len = tmp ? strlen(tmp) : 0;
    rs_world_bcast(&len, sizeof len, 0);
    q->name = calloc(len + 1, 1);
    if (!q->name)
        abort();
    if (tmp)
        memcpy(q->name, tmp, len);
    rs_world_bcast(q->name, len, 0);
    q->slot = &po->quarantine;
    q->given = po->quarantine;
    q->name_slot = &po->quarantine_name;
    *q->name_slot = po->quarantine;
    po->quarantine = q->name;
    return 0;
}

int rs_cluster_quarantine_end(rs_cluster_quarantine *q, int ok, rs_error *err)
{
    int rc = 0;
    if (q->of.tmp) {
        if (ok && err->code == 0)
            rc = rs_outfile_commit(&q->of, err);
        else
            rs_outfile_abort(&q->of);
    }
    if (q->slot) {
        *q->slot = q->given;
        *q->name_slot = NULL;
    }
    free(q->name);
    memset(q, 0, sizeof *q);
    return rc;
}

int rs_cluster_same_dir(const rs_bucketdir *bd, rs_error *err)
{
    if (rs_world_size() == 1)
        return 0;
    uint64_t mine[4] = {bd->dev, bd->ino, bd->digest[0], bd->digest[1]}, root[4];
    memcpy(root, mine, sizeof root);
    rs_world_bcast(root, sizeof root, 0);
    int same_kernel = rs_world_same_kernel_as_root();
    if (!err->code && (mine[2] != root[2] || mine[3] != root[3] ||
                       (same_kernel && (mine[0] != root[0] || mine[1] != root[1]))))
        rs_error_set(err, RS_EXIT_IO,
                     "%s: rank %d read another generation of the directory than rank 0 (%s; replaced by "
                     "another run meanwhile?): run again",
                     bd->path ? bd->path : "?", rs_world_rank(),
                     mine[2] != root[2] || mine[3] != root[3] ? "its manifest.json differs"
                                                              : "it is another directory (device and inode)");
    return rs_world_agree(err);
}

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

static char *part_path(const char *path, int rank)
{
    char *p;
    return asprintf(&p, "%s.rank%d", path, rank) < 0 ? NULL : p;
}

/* Copies all of `from` into fd_out at offset off. 0 or -1 with errno. */
static int copy_into(int fd_in, uint64_t len, int fd_out, uint64_t off)
{
    loff_t in_off = 0, out_off = (loff_t)off;
    while (len > 0) {
        ssize_t n = copy_file_range(fd_in, &in_off, fd_out, &out_off, len, 0);
        if (n < 0 && (errno == EXDEV || errno == ENOSYS || errno == EOPNOTSUPP || errno == EINVAL))
            break;  /* fall back to read/write below */
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0) {
            errno = EIO;  /* the piece is shorter than the pipeline said */
            return -1;
        }
        len -= (uint64_t)n;
    }
    static char buf[1 << 20];
    while (len > 0) {
        ssize_t n = pread(fd_in, buf, len < sizeof buf ? len : sizeof buf, in_off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = EIO;
            return -1;
        }
        for (ssize_t w = 0; w < n;) {
            ssize_t k = pwrite(fd_out, buf + w, (size_t)(n - w), out_off);
            if (k < 0 && errno == EINTR)
                continue;
            if (k < 0)
                return -1;
            w += k;
            out_off += k;
        }
        in_off += n;
        len -= (uint64_t)n;
    }
    return 0;
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

/* The header exchange: every rank learns each rank's header; the first
 * one (lowest input) is the output's; a rank whose own header differs
 * fails with the single-process message. */
static void exchange_headers(const rs_pipeline_opts *o, size_t lo, const rs_pipeline_result *mine,
                             rs_pipeline_result *res, rs_error *err)
{
    int R = rs_world_size();
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
    rs_world_gather_bytes(rec.data, rec.len, &all, lens);
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
        const char *ref = o->inputs[res->header_input];
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
            header_differs(err, o->inputs[h.input], h.line, ref, what);
        } else if (err->code && mine->mismatch_line && fail != INT64_MAX) {
            /* measured against my first header, which is the output's */
            char what[512];
            rs_pipeline_header_difference(what, sizeof what, mine->mismatch_fields, mine->mismatch_nfields,
                                          mine->mismatch_bom, ref, res->header_fields_storage, res->nheader_fields,
                                          rs_csv_bom_len(res->header, res->header_len) != 0);
            header_differs(err, o->inputs[fail], mine->mismatch_line, ref, what);
        }
    }
    free(all);
    free(lens);
    rs_buf_free(&rec);
}

/* Per-input statistics, as u64 fields, every rank's in input order. An
 * input split into units among ranks appears on each of them: its counts
 * are summed, its CRC-32s combined in rank (= unit) order. */
enum { IN_INDEX, IN_SIZE, IN_ROWS, IN_BYTES, IN_REJECTED, IN_BLANK, IN_CRC, IN_PAD, IN_FIELDS };

static void merge_inputs(const rs_pipeline_opts *o, const rs_pipeline_result *mine, size_t lo, size_t n,
                         rs_pipeline_result *res)
{
    uint64_t *v = calloc(n ? n * IN_FIELDS : 1, sizeof *v);
    size_t *lens = calloc((size_t)rs_world_size(), sizeof *lens);
    unsigned char *seen = calloc(o->ninputs ? o->ninputs : 1, 1);
    if (!v || !lens || !seen)
        abort();
    for (size_t i = 0; i < n; i++) {
        const rs_input_stats *in = &mine->input[i];
        uint64_t *f = v + i * IN_FIELDS;
        f[IN_INDEX] = lo + i, f[IN_SIZE] = in->size, f[IN_ROWS] = in->rows, f[IN_BYTES] = in->bytes;
        f[IN_REJECTED] = in->rejected, f[IN_BLANK] = in->blank_lines, f[IN_CRC] = in->crc;
        f[IN_PAD] = in->zero_padding;
    }
    char *all;
    rs_world_gather_bytes(v, n * IN_FIELDS * sizeof *v, &all, lens);
    size_t total = 0;
    for (int r = 0; r < rs_world_size(); r++)
        total += lens[r];
    for (size_t k = 0; k < total / sizeof(uint64_t[IN_FIELDS]); k++) {
        uint64_t f[IN_FIELDS];
        memcpy(f, all + k * sizeof f, sizeof f);
        if (f[IN_INDEX] >= o->ninputs)
            abort();
        rs_input_stats *in = &res->input[f[IN_INDEX]];
        if (!seen[f[IN_INDEX]]) {
            seen[f[IN_INDEX]] = 1;
            *in = (rs_input_stats){o->inputs[f[IN_INDEX]], f[IN_SIZE], f[IN_ROWS], f[IN_BYTES],
                                   f[IN_REJECTED], f[IN_BLANK], (uint32_t)f[IN_CRC], f[IN_PAD]};
            continue;
        }
        in->crc = rs_crc32_combine(in->crc, (uint32_t)f[IN_CRC], f[IN_BYTES]);
        in->rows += f[IN_ROWS], in->bytes += f[IN_BYTES];
        in->rejected += f[IN_REJECTED], in->blank_lines += f[IN_BLANK];
        in->zero_padding += f[IN_PAD];
    }
    for (size_t i = 0; i < o->ninputs; i++)
        if (!seen[i])
            abort();  /* the ranges cover every input */
    free(all);
    free(v);
    free(lens);
    free(seen);
}

/* Rank 0 appends the other ranks' quarantine pieces, without their
 * column-name line, to its own file. */
static int assemble_quarantine(const rs_pipeline_opts *o, rs_error *err)
{
    if (rs_world_rank() != 0)
        return 0;
    FILE *out = fopen(o->quarantine, "a");
    if (!out)
        return rs_error_set(err, RS_EXIT_IO, "%s: cannot append: %s", o->quarantine_name ? o->quarantine_name : o->quarantine, strerror(errno));
    for (int r = 1; r < rs_world_size() && !err->code; r++) {
        char *pp = part_path(o->quarantine, r);
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

/* Prints "rank R: items A-B, from INPUT byte N" (N: the first unit's
 * offset in its input, from the weights: unit sizes, plus 4096 on each
 * input's first unit). */
static void show_range(const rs_pipeline_opts *o, const uint64_t *nunits, const uint64_t *w, int me, size_t ilo,
                       size_t ihi)
{
    size_t item = 0;
    for (size_t i = 0; i < o->ninputs; item += nunits[i], i++)
        if (ilo < item + nunits[i]) {
            uint64_t off = 0;
            for (size_t k = item; k < ilo; k++)
                off += w[k] - (k == item ? 4096 : 0);
            fprintf(stderr, "ringshard: rank %d: items %zu-%zu, from %s byte %llu\n", me, ilo, ihi, o->inputs[i],
                    (unsigned long long)off);
            return;
        }
    fprintf(stderr, "ringshard: rank %d: nothing\n", me);
}

int rs_cluster_pipeline_run(const rs_pipeline_opts *o, rs_pipeline_result *res, rs_error *err)
{
    int R = rs_world_size(), me = rs_world_rank();
    if (R == 1)
        return rs_pipeline_run(o, res, err);
    memset(res, 0, sizeof *res);
    res->header_input = -1;
    double t0 = rs_now();
    uint32_t ndest = o->ndest;

    /* Who reads what: work items are the inputs' units (reader.h: a file
     * of ringshard gzip members is cut at member boundaries, any other
     * input is one unit), listed by rank 0 so that every rank cuts the same
     * ranges. A per-input constant keeps many empty files spread. */
    for (size_t i = 0; i < o->ninputs; i++)
        if (!o->input_names && !strcmp(o->inputs[i], "-"))
            rs_error_set(err, RS_EXIT_USAGE, "standard input cannot be divided among %d MPI ranks (name files)", R);
    uint64_t *nunits = calloc(o->ninputs ? o->ninputs : 1, sizeof *nunits);
    uint64_t *sizes = calloc(o->ninputs ? o->ninputs : 1, sizeof *sizes);  /* UINT64_MAX: unlisted */
    uint64_t unit_bytes = rs_unit_bytes(), nitems = 0;
    rs_buf wb = {0};
    if (!nunits || !sizes)
        abort();
    for (size_t i = 0; i < o->ninputs && me == 0; i++) {
        rs_input_unit *u = NULL;
        size_t n = 0;
        uint64_t size;
        rs_error e2 = {0};
        if (rs_input_units_at(o->input_names ? o->input_dirfd : AT_FDCWD,
                              o->input_names ? o->input_names[i] : o->inputs[i], o->inputs[i], unit_bytes, &u, &n,
                              &size, &e2) != 0)
            n = 0;  /* the pipeline of the rank that reads it reports the error */
        nunits[i] = n ? n : 1;
        sizes[i] = n ? size : UINT64_MAX;
        for (size_t k = 0; k < nunits[i]; k++) {
            uint64_t wk = (n ? u[k].size : 0) + (k == 0 ? 4096 : 0);
            if (rs_buf_append(&wb, &wk, sizeof wk) != 0)
                abort();
        }
        free(u);
    }
    rs_world_bcast(&unit_bytes, sizeof unit_bytes, 0);
    rs_world_bcast(nunits, o->ninputs * sizeof *nunits, 0);
    rs_world_bcast(sizes, o->ninputs * sizeof *sizes, 0);
    for (size_t i = 0; i < o->ninputs; i++)
        nitems += nunits[i];
    if (me != 0 && rs_buf_reserve(&wb, nitems * sizeof(uint64_t)) != 0)
        abort();
    rs_world_bcast(wb.data, nitems * sizeof(uint64_t), 0);
    size_t ilo, ihi;
    rs_cluster_partition((const uint64_t *)wb.data, nitems, R, me, &ilo, &ihi);
    if (getenv("RINGSHARD_SHOW_RANGES"))  /* a testing knob: where each rank starts */
        show_range(o, nunits, (const uint64_t *)wb.data, me, ilo, ihi);
    rs_buf_free(&wb);
    /* items [ilo, ihi) -> inputs [lo, hi), from unit ulo of the first to
     * unit uhi (exclusive) of the last */
    size_t lo = 0, hi = 0;
    uint32_t ulo = 0, uhi = 0;
    for (size_t i = 0, first = 0; i < o->ninputs; first += nunits[i], i++) {
        if (ilo >= first && ilo < first + nunits[i])
            lo = i, ulo = (uint32_t)(ilo - first);
        if (ihi > first && ihi <= first + nunits[i])
            hi = i + 1, uhi = (uint32_t)(ihi - first);
    }
    if (ihi == ilo) {  /* nothing for this rank (ranges past the last one) */
        lo = hi = o->ninputs;
        ulo = uhi = 0;
    }
    if (rs_world_agree(err) != 0) {
        free(nunits);
        free(sizes);
        return -1;
    }

    rs_pipeline_opts local = *o;
    local.inputs = o->inputs + lo;
    local.input_names = o->input_names ? o->input_names + lo : NULL;  /* this rank's own directory descriptor */
    local.ninputs = hi - lo;
    local.unit_lo = ulo;
    local.unit_hi = uhi;
    local.unit_bytes = unit_bytes;
    local.expect_size = sizes + lo;
    local.expect_units = nunits + lo;
    local.no_header = me != 0;  /* rank 0 writes the files themselves, header first */
    local.input_base = (uint32_t)lo;
    local.progress = o->progress && me == 0;
    char **parts = NULL, *qpart = NULL;
    if (o->dest_paths && me != 0) {
        parts = calloc(ndest ? ndest : 1, sizeof *parts);
        if (!parts)
            abort();
        for (uint32_t d = 0; d < ndest; d++)
            if (!(parts[d] = part_path(o->dest_paths[d], me)))
                abort();
        local.dest_paths = (const char *const *)parts;
        local.write_behind = 0;  /* pieces are deleted once copied */
    }
    if (o->bad_rows == RS_BAD_ROW_QUARANTINE && me != 0) {
        if (!(qpart = part_path(o->quarantine, me)))
            abort();
        local.quarantine = qpart;
    }

    rs_pipeline_result mine;
    double t_pipe = rs_now();
    rs_pipeline_run(&local, &mine, err);
    t_pipe = rs_now() - t_pipe;
    res->dest = calloc(ndest ? ndest : 1, sizeof *res->dest);
    res->input = calloc(o->ninputs ? o->ninputs : 1, sizeof *res->input);
    uint64_t *v = calloc(ndest ? 4 * (size_t)ndest : 1, sizeof *v), *at = NULL;
    if (!res->dest || !res->input || !v)
        abort();
    exchange_headers(o, lo, &mine, res, err);
    int rc = -1;
    rs_buf head = {0};
    if (rs_world_agree(err) != 0)
        goto done;

    /* The files' first bytes: the header of the lowest input that has one.
     * Rank 0 wrote its own; it differs only when all of rank 0's inputs
     * were empty (no header, hence no rows): then it is replaced. */
    if (o->dest_paths && ((res->header_out && rs_pipeline_header_bytes(o, res->header_out, res->header_out_len, &head) != 0) ||
                          (!res->header_out && rs_pipeline_header_bytes(o, "", 0, &head) != 0)))
        abort();
    if (o->dest_paths && me == 0) {
        rs_buf own = {0};
        if (rs_pipeline_header_bytes(o, mine.header_out ? mine.header_out : "", mine.header_out_len, &own) != 0)
            abort();
        if ((own.len != head.len || memcmp(own.data, head.data, own.len) != 0) && mine.rows == 0)
            for (uint32_t d = 0; d < ndest && !err->code; d++) {
                int fd = open(o->dest_paths[d], O_WRONLY | O_TRUNC | O_CLOEXEC);
                if (fd < 0 || (head.len && pwrite(fd, head.data, head.len, 0) != (ssize_t)head.len))
                    rs_error_set(err, RS_EXIT_IO, "%s: cannot write: %s", o->dest_paths[d], strerror(errno));
                if (fd >= 0 && close(fd) != 0 && !err->code)
                    rs_error_set(err, RS_EXIT_IO, "%s: write failed: %s", o->dest_paths[d], strerror(errno));
                mine.dest[d].file_bytes = head.len;
            }
        else if (own.len != head.len || memcmp(own.data, head.data, own.len) != 0)
            rs_error_set(err, RS_EXIT_IO, "internal error: rank 0 wrote rows without the header");
        rs_buf_free(&own);
    }
    if (rs_world_agree(err) != 0)
        goto done;

    /* Statistics: sums, scans and the rank-ordered CRC. */
    merge_inputs(o, &mine, lo, local.ninputs, res);
    uint64_t tot[3] = {mine.rows, mine.bytes, mine.rejected};
    rs_world_sum_u64(tot, 3);
    res->rows = tot[0], res->bytes = tot[1], res->rejected = tot[2];
    for (uint32_t d = 0; d < ndest; d++) {
        v[d] = mine.dest[d].rows;
        v[ndest + d] = mine.dest[d].bytes;
        v[2 * ndest + d] = mine.dest[d].file_bytes;
    }
    if (!(at = calloc(ndest ? ndest : 1, sizeof *at)))
        abort();
    rs_world_exscan_u64(v + 2 * ndest, at, ndest);
    rs_world_sum_u64(v, 3 * (size_t)ndest);
    uint64_t *crc = calloc(ndest ? 2 * (size_t)ndest : 1, sizeof *crc);
    if (!crc)
        abort();
    for (uint32_t d = 0; d < ndest; d++)
        crc[2 * d] = mine.dest[d].crc, crc[2 * d + 1] = mine.dest[d].bytes;
    rs_world_crc_concat(crc, ndest);
    for (uint32_t d = 0; d < ndest; d++)  /* rank 0's file bytes include the header */
        res->dest[d] = (rs_dest_stats){v[d], v[ndest + d], v[2 * ndest + d], (uint32_t)crc[2 * d]};
    free(crc);

    double t_copy = rs_now();
    if (o->dest_paths) {
        /* Rank 0's pipeline created every file and wrote its own rows
         * into them; the other ranks copy their pieces after those. */
        int last = -1;
        for (uint32_t d = 0; d < ndest && !err->code && me != 0; d++) {
            uint64_t len = mine.dest[d].file_bytes;
            if (len == 0)
                continue;
            int in = open(parts[d], O_RDONLY | O_CLOEXEC), out = open(o->dest_paths[d], O_WRONLY | O_CLOEXEC);
            if (in < 0 || out < 0 || copy_into(in, len, out, at[d]) != 0)
                rs_error_set(err, RS_EXIT_IO, "%s: cannot assemble from %s: %s", o->dest_paths[d], parts[d],
                             strerror(errno));
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
         * them, and one syncfs covers them all. */
        if (last >= 0 && !err->code && !rs_world_same_kernel_as_root()) {
            int fd = open(o->dest_paths[last], O_RDONLY | O_CLOEXEC);
            if (fd < 0 || syncfs(fd) != 0)
                rs_error_set(err, RS_EXIT_IO, "%s: sync failed: %s", o->dest_paths[last], strerror(errno));
            if (fd >= 0)
                close(fd);
        }
        rs_log(RS_LOG_INFO, "rank %d of %d: pipeline %.2f s (%llu rows), pieces copied and synced %.2f s", me,
               rs_world_size(), t_pipe, (unsigned long long)mine.rows, rs_now() - t_copy);
        if (rs_world_agree(err) != 0)
            goto done;
    }
    if (o->bad_rows == RS_BAD_ROW_QUARANTINE) {
        assemble_quarantine(o, err);
        if (rs_world_agree(err) != 0)
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
    rs_buf_free(&head);
    free(at);
    free(v);
    rs_pipeline_result_free(&mine);
    free(nunits);
    free(sizes);
    res->seconds = rs_now() - t0;
    return rc;
}
