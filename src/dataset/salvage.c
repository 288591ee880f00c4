/* What repair keeps of a damaged data file (salvage.h): its intact gzip
 * members (zstd pieces), and the record of the rows it could not keep.
 *
 * Why a file is kept member by member only when its runs are known: the
 * record of what is lost names rows of an input (ordinals among its rows
 * on the node, docs/format-generations.md), and a file's members map to
 * inputs' rows through its runs (runs.c): known for a file of one input's
 * rows, and recorded for the others that bucket, dedup, compact and repair
 * write (a member may span two inputs: its rows are cut along the runs).
 * A file of several inputs without them (dedup --buckets', an older
 * version's) is lost whole, as before: each input's rows it held are
 * recorded lost. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dataset/salvage.h"
#include "ringshard/deflate.h"
#include "ringshard/buf.h"
#include "ringshard/util.h"

int rs_lost_book_init(rs_lost_book *b, const rs_bucketdir *bd)
{
    memset(b, 0, sizeof *b);
    size_t n = bd->m.ninputs;
    for (size_t g = 0; g < bd->ngens; g++)
        n += bd->gens[g].ninputs;
    b->n = n;
    b->entry = calloc(n + 1, sizeof *b->entry);
    b->lost = calloc(n + 1, sizeof *b->lost);
    b->nlost = calloc(n + 1, sizeof *b->nlost);
    b->lost_rows = calloc(n + 1, sizeof *b->lost_rows);
    b->nlost_rows = calloc(n + 1, sizeof *b->nlost_rows);
    if (!b->entry || !b->lost || !b->nlost || !b->lost_rows || !b->nlost_rows)
        return -1;
    for (size_t g = 0, k = 0; g <= bd->ngens; g++) {
        const rs_manifest *m = g ? &bd->gens[g - 1] : &bd->m;
        for (size_t i = 0; i < m->ninputs; i++, k++) {
            const rs_manifest_input *e = b->entry[k] = &m->inputs[i];
            if (!(b->lost[k] = malloc((e->nlost + 1) * sizeof **b->lost)) ||
                !(b->lost_rows[k] = malloc((e->nlost_rows + 1) * sizeof **b->lost_rows)))
                return -1;
            if (e->nlost)
                memcpy(b->lost[k], e->lost, e->nlost * sizeof **b->lost);
            if (e->nlost_rows)
                memcpy(b->lost_rows[k], e->lost_rows, e->nlost_rows * sizeof **b->lost_rows);
            b->nlost[k] = e->nlost, b->nlost_rows[k] = e->nlost_rows;
        }
    }
    return 0;
}

void rs_lost_book_free(rs_lost_book *b)
{
    for (size_t k = 0; k < b->n; k++) {
        if (b->lost)
            free(b->lost[k]);
        if (b->lost_rows)
            free(b->lost_rows[k]);
    }
    free(b->entry);
    free(b->lost);
    free(b->nlost);
    free(b->lost_rows);
    free(b->nlost_rows);
    memset(b, 0, sizeof *b);
}

void rs_compact_keep_free(rs_compact_keep *keep)
{
    free(keep->at);
    free(keep->len);
    free(keep->lost);
    memset(keep, 0, sizeof *keep);
}

/* Adds node's rows [from, to) of input k to the book. */
static int add_rows(rs_lost_book *b, size_t k, const char *node, uint64_t from, uint64_t to)
{
    rs_manifest_rows *v = realloc(b->lost_rows[k], (b->nlost_rows[k] + 1) * sizeof *v);
    if (!v)
        return -1;
    b->lost_rows[k] = v;
    v[b->nlost_rows[k]++] = (rs_manifest_rows){(char *)node, from, to};
    return 0;
}

/* Adds every row of node of input k ("lost": what earlier versions read). */
static int add_node(rs_lost_book *b, size_t k, const char *node)
{
    char **v = realloc(b->lost[k], (b->nlost[k] + 1) * sizeof *v);
    if (!v)
        return -1;
    b->lost[k] = v;
    v[b->nlost[k]++] = (char *)node;
    return 0;
}

/* The file's rows [p, q), of runs v[0..nv), added to the book as ranges of
 * their inputs' rows; touched[i] set for each input i of the book they
 * name. */
static int add_mapped(rs_lost_book *b, const char *node, const rs_manifest_run *v, size_t nv, uint64_t p, uint64_t q,
                      uint8_t *touched)
{
    rs_manifest_run *sel = NULL;
    size_t n = 0, cap = 0;
    int rc = rs_runs_select(v, nv, p, q, &sel, &n, &cap);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        touched[sel[i].input] = 1;
        rc = add_rows(b, sel[i].input, node, sel[i].from, sel[i].to);
    }
    free(sel);
    return rc;
}

/* Appends path to out->inputs and out->paths, and its ranges v[0..n)
 * (rows lost of it, when not all) to out->ranges. */
static void name_input(rs_salvage *out, const char *path, const rs_manifest_rows *v, size_t n)
{
    char *t = NULL;
    const char **np = realloc(out->paths, (out->npaths + 1) * sizeof *np);
    if (np)
        out->paths = np, np[out->npaths++] = path;
    if (asprintf(&t, "%s%s%s", out->inputs ? out->inputs : "", out->inputs ? ", " : "", path) >= 0)
        free(out->inputs), out->inputs = t;
    if (!n)
        return;
    rs_buf b = {0};
    if (out->ranges)
        rs_buf_append(&b, out->ranges, strlen(out->ranges)), rs_buf_append(&b, "; ", 2);
    rs_buf_append(&b, "rows ", 5);
    for (size_t i = 0; i < n; i++) {
        char one[64];
        int len = v[i].to == UINT64_MAX ? snprintf(one, sizeof one, "%s%" PRIu64 " on", i ? ", " : "", v[i].from)
                                        : snprintf(one, sizeof one, "%s%" PRIu64 " to %" PRIu64, i ? ", " : "",
                                                   v[i].from, v[i].to - 1);
        rs_buf_append(&b, one, (size_t)len);
    }
    rs_buf_append(&b, " of ", 4);
    rs_buf_append(&b, path, strlen(path));
    if (rs_buf_append(&b, "", 1) == 0) {
        free(out->ranges);
        out->ranges = b.data;   /* NUL-terminated */
    } else
        rs_buf_free(&b);
}

/* File k lost whole: each input's rows of its node that it held recorded
 * lost (every row: "lost"; else their ranges). */
static int lose_whole(const rs_bucketdir *bd, size_t k, rs_lost_book *b, rs_row_range **held, const size_t *nheld,
                      rs_salvage *out)
{
    size_t n, at = rs_bucketdir_file_inputs(bd, k, &n);
    const char *node = bd->files[k]->node;
    out->rows_lost = bd->files[k]->rows;
    for (size_t i = 0; i < n; i++) {
        size_t before = b->nlost_rows[at + i];
        if (!nheld[i])
            continue;
        if (nheld[i] == 1 && held[i][0].from == 0 && held[i][0].to == UINT64_MAX) {
            if (add_node(b, at + i, node) != 0)
                return -1;
        } else
            for (size_t h = 0; h < nheld[i]; h++)
                if (add_rows(b, at + i, node, held[i][h].from, held[i][h].to) != 0)
                    return -1;
        name_input(out, b->entry[at + i]->path, b->lost_rows[at + i] + before, b->nlost_rows[at + i] - before);
    }
    return 0;
}

/* Whether member v (the first of a file) is the header line the manifest
 * says (or, keys-only, any one line: the key columns' names). */
static int head_intact(const rs_bucketdir *bd, const rs_member_verdict *v)
{
    const char *h = bd->m.header_line;
    if (!v->intact || v->records > 1)
        return 0;
    if (bd->m.keys_only || !h)
        return 1;
    size_t hl = strlen(h);
    return v->bytes == hl + 1 && v->crc == rs_crc32(rs_crc32(0, h, hl), "\n", 1);
}

/* The members v[0..n) of file k (chain up to tail) into keep and the
 * file's row ranges lost into lost[] (pairs); 0 when they add up to its
 * manifest's rows, -1 when they do not (or out of memory): lost whole. */
static int pick_members(const rs_bucketdir *bd, size_t k, const rs_member_verdict *v, size_t n, uint64_t tail,
                        rs_compact_keep *keep, uint64_t *lost, size_t *nlost, rs_salvage *out)
{
    const rs_manifest_file *f = bd->files[k];
    int seg = rs_bucketdir_segment(bd, k);
    size_t h = seg ? f->header_bytes > 0 : bd->m.header != 0;   /* the header member: v[0] */
    if (n < h || (seg && h && v[0].len != f->header_bytes) ||
        !(keep->at = calloc(n + 1, sizeof *keep->at)) || !(keep->len = calloc(n + 1, sizeof *keep->len)))
        return -1;
    keep->head_lost = !seg && h && !head_intact(bd, &v[0]);
    if (!seg && h && !keep->head_lost)
        keep->at[0] = v[0].at, keep->len[keep->n++] = v[0].len;
    uint64_t ord = 0;
    int doubt = 0;   /* a member lost whose count only its header says */
    for (size_t i = h; i < n; i++) {
        if (v[i].intact) {
            keep->at[keep->n] = v[i].at, keep->len[keep->n++] = v[i].len;
            keep->crc32 = rs_crc32_combine(keep->crc32, v[i].crc, v[i].bytes);
            keep->rows += v[i].records, keep->bytes += v[i].bytes;
        } else {
            doubt |= !v[i].counted;
            if (*nlost && lost[2 * *nlost - 1] == ord)
                lost[2 * *nlost - 1] = ord + v[i].records;
            else if (v[i].records)
                lost[2 * *nlost] = ord, lost[2 * (*nlost)++ + 1] = ord + v[i].records;
            out->members_lost++;
        }
        ord += v[i].records;
    }
    out->members = n - h;
    out->head_lost = keep->head_lost || (h && !v[0].intact);
    if (tail < f->file_bytes) {   /* the rest not read: its rows are the file's last */
        if (doubt || ord > f->rows)
            return -1;
        if (ord < f->rows)
            lost[2 * *nlost] = ord, lost[2 * (*nlost)++ + 1] = f->rows;
        out->members_lost++;
        ord = f->rows;
    }
    if (ord != f->rows)
        return -1;
    /* every row kept (its header member was the damage): they must be the
     * manifest's rows exactly */
    return *nlost || (keep->bytes == f->bytes && keep->crc32 == f->crc32) ? 0 : -1;
}

/* The inputs of the book whose rows the file lost (touched), each named
 * in out with the ranges added to it since before[] (book order). */
static void name_touched(const rs_lost_book *b, const uint8_t *touched, const size_t *before, rs_salvage *out)
{
    for (size_t i = 0; i < b->n; i++)
        if (touched[i])
            name_input(out, b->entry[i]->path, b->lost_rows[i] + before[i], b->nlost_rows[i] - before[i]);
}

/* File k member by member, its rows mapped to inputs' by its runs v[0..nv):
 * 1 kept so, 0 not (lost whole), -1 out of memory. */
static int salvage_members(const rs_bucketdir *bd, size_t k, rs_lost_book *b, const rs_manifest_run *runs, size_t nr,
                           rs_compact_keep *keep, rs_salvage *out)
{
    rs_member_verdict *v;
    size_t n;
    uint64_t tail;
    if (rs_bucketdir_members(bd, k, &v, &n, &tail) != 0)
        return 0;
    uint64_t *lost = calloc(2 * n + 4, sizeof *lost);
    size_t nlost = 0, *before = calloc(b->n + 1, sizeof *before);
    uint8_t *touched = calloc(b->n + 1, 1);
    int rc = lost && before && touched ? 1 : -1;
    if (rc == 1)
        rc = pick_members(bd, k, v, n, tail, keep, lost, &nlost, out) == 0 && keep->rows > 0;
    const char *node = bd->files[k]->node;
    for (size_t i = 0; rc == 1 && i < b->n; i++)
        before[i] = b->nlost_rows[i];
    for (size_t i = 0; rc == 1 && i < nlost; i++)
        if (add_mapped(b, node, runs, nr, lost[2 * i], lost[2 * i + 1], touched) != 0)
            rc = -1;
    if (rc == 1) {
        out->rows_kept = keep->rows;
        out->rows_lost = bd->files[k]->rows - keep->rows;
        name_touched(b, touched, before, out);
        keep->lost = lost, keep->nlost = nlost, lost = NULL;
    } else {
        for (size_t i = 0; before && i < b->n; i++)
            if (touched && touched[i])
                b->nlost_rows[i] = before[i];
        rs_compact_keep_free(keep);
        free(out->inputs), free(out->paths), free(out->ranges);
        out->inputs = out->ranges = NULL, out->paths = NULL, out->npaths = 0;
        out->members = out->members_lost = 0, out->head_lost = 0;
    }
    free(lost);
    free(before);
    free(touched);
    free(v);
    return rc;
}

int rs_salvage_file(const rs_bucketdir *bd, size_t k, rs_lost_book *b, rs_compact_keep *keep, rs_salvage *out)
{
    memset(out, 0, sizeof *out);
    memset(keep, 0, sizeof *keep);
    size_t n, at = rs_bucketdir_file_inputs(bd, k, &n), nr = 0;
    const char *node = bd->files[k]->node ? bd->files[k]->node : "";
    rs_row_range **held = calloc(n + 1, sizeof *held);
    size_t *nheld = calloc(n + 1, sizeof *nheld);
    rs_manifest_run *runs = NULL;
    int rc = held && nheld ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (b->entry[at + i]->rows)   /* (none: no row of it anywhere) */
            rc = rs_manifest_held(b->entry[at + i], node, &held[i], &nheld[i]);
    if (rc == 0 && bd->m.compress && bd->files[k]->rows)
        rc = rs_bucketdir_file_runs(bd, k, &runs, &nr);
    int kept = rc == 0 && nr ? salvage_members(bd, k, b, runs, nr, keep, out) : 0;
    if (kept < 0 || (rc == 0 && kept == 0 && lose_whole(bd, k, b, held, nheld, out) != 0))
        rc = -1;
    for (size_t i = 0; held && i < n; i++)
        free(held[i]);
    free(held);
    free(nheld);
    free(runs);
    return rc;
}
