/* The cat job (job_cat.h): the library side of `ringshard cat`.
 *
 * Each file is read with the dedup passes' row reader (dedup/rows.h),
 * which checks it against its manifest entry as it goes: what is written
 * is only ever rows that the manifests vouch for, and a file that differs
 * stops the stream there, named. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "dedup/rows.h"
#include "ringshard/text.h"
#include "ringshard/dataset.h"
#include "ringshard/deflate.h"
#include "ringshard/job_cat.h"
#include "ringshard/nodes.h"

#define CHUNK (1u << 20)   /* plain bytes per compressed member */

typedef struct {
    const rs_cat_job_opts *o;
    rs_deflater *dz;
    rs_buf chunk, member;
    rs_cat_job_result *r;
    int wrote;         /* a member (or any byte) is out */
} writer;

/* Writes what w->chunk holds (a member of it when compressing); with
 * final, an empty member when no byte went out, so that a compressed
 * stream of no rows is still valid gzip or zstd. */
static int flush(writer *w, int final, rs_error *err)
{
    const char *p = w->chunk.data ? w->chunk.data : "";
    size_t n = w->chunk.len;
    if (!n && !(final && w->dz && !w->wrote))
        return 0;
    if (w->dz) {
        const void *pieces[1] = {w->chunk.data};
        uint32_t crc;
        w->member.len = 0;
        if (rs_deflater_member(w->dz, pieces, &n, 1, 0, &w->member, &crc) != 0)
            return rs_error_set(err, RS_EXIT_IO, "%s: compressing failed: %s", w->o->out_name, rs_deflater_why());
        p = w->member.data, n = w->member.len;
    }
    w->chunk.len = 0;
    w->wrote = 1;
    if (fwrite(p, 1, n, w->o->out) != n)
        return rs_error_set(err, RS_EXIT_IO, "%s: write failed: %s", w->o->out_name, strerror(errno));
    return 0;
}

static int put(writer *w, const char *p, size_t n, rs_error *err)
{
    if (rs_buf_append(&w->chunk, p, n) != 0 || rs_buf_append(&w->chunk, "\n", 1) != 0)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    return w->chunk.len >= CHUNK ? flush(w, 0, err) : 0;
}

static int placed_anywhere(void *ctx, const char *key, size_t keylen)
{
    (void)ctx, (void)key, (void)keylen;
    return 1;
}

/* The rows of file k of bd into w, checked; the header line goes out
 * first when none has (*header_done). */
static int cat_file(const rs_bucketdir *bd, size_t k, writer *w, int *header_done, rs_error *err)
{
    const rs_manifest_file *f = bd->files[k];
    rs_dedup_opts o = {0};
    o.dialect.delim = bd->m.delimiter;
    o.header = bd->m.header && !bd->headerless[k];
    o.mode = RS_DEDUP_BY_ROW;
    o.codec = w->o->codec;
    o.in_name = bd->names[k];
    o.in_dirfd = bd->fd;
    o.in_path_ = bd->paths[k];
    char *mp = rs_bucketdir_manifest_of(bd, k);
    rs_dedup_check chk = {f->rows, f->bytes, f->file_bytes, f->crc32, mp ? mp : bd->path, f->node, NULL,
                          placed_anywhere, NULL};
    rstream s = {0};
    const char *row;
    size_t len;
    struct stat st;
    int r = 0;
    if (fstatat(bd->fd, bd->names[k], &st, 0) == 0 && (uint64_t)st.st_size != f->file_bytes)
        r = rs_error_set(err, RS_EXIT_VERIFY, "%s: %llu bytes on disk, the manifest says %llu (the file does not "
                         "match %s)", bd->paths[k], (unsigned long long)st.st_size,
                         (unsigned long long)f->file_bytes, mp ? mp : bd->path);
    else if (rows_open(&s, bd->paths[k], &o, 0, err) != 0)
        r = -1;
    if (r == 0 && o.header && (r = rows_next(&s, 1, &row, &len, NULL, NULL, err)) == 1) {
        const char *want = bd->m.keys_only ? NULL : bd->m.header_line;
        if (want && (len != strlen(want) || memcmp(row, want, len) != 0)) {
            char a[400], b[400];
            r = rs_error_set(err, RS_EXIT_VERIFY, "%s: header %s, the manifest says %s", bd->paths[k],
                             rs_text_shown(a, sizeof a, row, len, 300, '\''),
                             rs_text_shown_str(b, sizeof b, want, '\''));
        } else if (!*header_done)
            r = put(w, row, len, err);
        *header_done = 1;
    }
    if (r >= 0) {
        s.chk = &chk;
        r = 0;
        while (r == 0 && (r = rows_next(&s, 1, &row, &len, NULL, NULL, err)) == 1)
            r = put(w, row, len, err);
    }
    rows_close(&s);
    if (r < 0 && err->code == RS_EXIT_DATA) {
        /* a file its manifest vouches for that does not decode: it differs */
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        rs_error_clear(err);
        rs_error_set(err, RS_EXIT_VERIFY, "%s (the file does not match %s)", msg, mp ? mp : bd->path);
    }
    free(mp);
    if (r < 0)
        return -1;
    w->r->files++, w->r->rows += f->rows, w->r->bytes += f->bytes;
    return 0;
}

/* Edit distance of a and b (short names: O(|a| |b|) in a row). */
static size_t distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64)
        return la > lb ? la : lb;
    size_t row[65];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            best = up + 1 < best ? up + 1 : best;
            best = row[j - 1] + 1 < best ? row[j - 1] + 1 : best;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* The base files' nodes, for the lookups of the NODE arguments: a list
 * view of names into bd's manifest and its index (one lookup per NODE,
 * not a pass over every node: `cat DIR` may be given thousands). */
typedef struct {
    rs_nodes view;
    rs_node_index ix;
} node_lookup;

static int lookup_build(node_lookup *l, const rs_manifest *m, rs_error *err)
{
    memset(l, 0, sizeof *l);
    if (!(l->view.names = malloc((m->nfiles + 1) * sizeof *l->view.names)))
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    for (size_t i = 0; i < m->nfiles; i++)
        l->view.names[i] = (char *)(m->files[i].node ? m->files[i].node : "");
    l->view.count = (uint32_t)m->nfiles;
    return rs_node_index_build(&l->ix, &l->view, err);
}

static void lookup_free(node_lookup *l)
{
    rs_node_index_free(&l->ix);
    free(l->view.names);   /* the names are the manifest's */
}

/* Node name's base file in bd, or -1 with err naming the nearest node. */
static long find_node(const rs_bucketdir *bd, const node_lookup *l, const char *name, rs_error *err)
{
    const rs_manifest *m = &bd->m;
    int64_t hit = rs_node_index_find(&l->ix, &l->view, name);
    if (hit >= 0)
        return (long)hit;
    size_t best = 0, bestd = (size_t)-1;
    for (size_t i = 0; i < m->nfiles; i++) {
        size_t d = distance(name, m->files[i].node ? m->files[i].node : "");
        if (d < bestd)
            best = i, bestd = d;
    }
    if (m->nfiles && bestd <= 2 + strlen(name) / 3)
        rs_error_set(err, RS_EXIT_USAGE, "%s: no node '%s' (did you mean '%s'?)", bd->path, name,
                     m->files[best].node ? m->files[best].node : "");
    else
        rs_error_set(err, RS_EXIT_USAGE, "%s: no node '%s' (its %zu nodes are listed by `ringshard stats %s`)",
                     bd->path, name, m->nfiles, bd->path);
    return -1;
}

/* Node b's files: its base file and the segments after it, a run of
 * bd->files (node by node, in base file order) found by bisection, so
 * that cat --all does not go through every file for every node. */
static int cat_node(const rs_bucketdir *bd, size_t b, writer *w, int *header_done, rs_error *err)
{
    size_t lo = 0, hi = bd->nfiles;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (bd->file_base[mid] < b)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t k = lo; k < bd->nfiles && bd->file_base[k] == b; k++)
        if (cat_file(bd, k, w, header_done, err) != 0)
            return -1;
    return 0;
}

int rs_cat_job_run(const rs_cat_job_opts *o, rs_cat_job_result *r, rs_error *err)
{
    memset(r, 0, sizeof *r);
    rs_bucketdir bd;
    if (rs_bucketdir_open(&bd, o->dir, err) != 0)
        return -1;
    writer w = {o, NULL, {0}, {0}, r, 0};
    long *base = calloc(o->nnodes + 1, sizeof *base);
    node_lookup look = {0};
    int rc = 0, header_done = 0;
    if (strcmp(bd.m.kind, "buckets") != 0)
        rc = rs_error_set(err, RS_EXIT_USAGE, "%s: a directory of kind '%s': cat reads bucket directories", o->dir,
                          bd.m.kind);
    else if (!base)
        rc = rs_error_set(err, RS_EXIT_IO, "out of memory");
    if (rc == 0 && o->nnodes && lookup_build(&look, &bd.m, err) != 0)
        rc = -1;
    for (size_t i = 0; rc == 0 && i < o->nnodes; i++)   /* every name checked before a row is written */
        if ((base[i] = find_node(&bd, &look, o->nodes[i], err)) < 0)
            rc = -1;
    lookup_free(&look);
    if (rc == 0 && o->compress && !(w.dz = rs_compressor_new(o->compress, o->level, o->codec)))
        rc = rs_error_set(err, RS_EXIT_IO, "out of memory");
    size_t n = o->nnodes ? o->nnodes : bd.m.nfiles;
    for (size_t i = 0; rc == 0 && i < n; i++, r->nodes++)
        rc = cat_node(&bd, o->nnodes ? (size_t)base[i] : i, &w, &header_done, err);
    if (rc == 0 && !header_done && bd.m.header && bd.m.header_line && !bd.m.keys_only)
        rc = put(&w, bd.m.header_line, strlen(bd.m.header_line), err);
    if (rc == 0)
        rc = flush(&w, 1, err);
    if (rc != 0)
        rs_bucketdir_explain(&bd, err);
    r->generations = bd.last_gen - (bd.m.generation ? bd.m.generation : 1) + 1;
    rs_deflater_free(w.dz);
    rs_buf_free(&w.chunk);
    rs_buf_free(&w.member);
    free(base);
    rs_bucketdir_close(&bd);
    return rc ? -1 : 0;
}
