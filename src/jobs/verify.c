/* The verify job (job_verify.h): the library side of `ringshard verify`.
 * Steps: open DIR once, rebuild the manifest's ring(s), compare the files
 * listed with those present, scan every usable file's rows through the
 * pipeline (placement, counts, CRC-32), then compare with the manifest. */
#define _GNU_SOURCE  /* vasprintf */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cluster/cluster.h"
#include "ringshard/text.h"
#include "ringshard/dataset.h"
#include "ringshard/job_verify.h"
#include "ringshard/deflate.h"
#include "ringshard/hash.h"
#include "ringshard/ring.h"
#include "ringshard/runplan.h"
#include "ringshard/util.h"

typedef struct {
    uint64_t *wrong;  /* [ninputs]: rows placed elsewhere */
    uint64_t *sum;    /* [2 * ninputs]: the digest of the keys of an indexed file */
    char pad[64];
} vcounts;

typedef struct {
    const rs_ring *ring, *new_ring;
    const uint32_t *want;      /* [ninputs] buckets: node; moves: from */
    const uint32_t *want_to;   /* [ninputs] moves: to (new ring index) */
    const uint8_t *sum_mode;   /* [ninputs] 0, or what the file's key index holds: KEYS, ROWS */
    vcounts *vc;
} vctx;

enum { KEYS = 1, ROWS = 2 };
#define KEY_DIGEST_SEED 0x6b646967u  /* "kdig": the order-free digest of a file's keys */

/* A file's key index, as its manifest lists it. */
typedef struct {
    char *name;        /* under DIR; NULL: none */
    uint64_t size;
    uint32_t crc32;
    uint8_t mode;      /* KEYS, ROWS */
} index_ref;

/* Adds a key to an order-free digest: the sum of its 128-bit hashes. */
static void digest_add(uint64_t *sum, const void *key, size_t len)
{
    uint64_t h[2];
    rs_murmur3_x64_128(key, len, KEY_DIGEST_SEED, h);
    sum[0] += h[0];
    sum[1] += h[1];
}

/* One run's state, shared by the steps. */
typedef struct {
    const rs_verify_job_opts *o;
    rs_verify_job_result *r;
    rs_pipeline_opts po;
    rs_bucketdir bd;
    rs_ring *ring, *new_ring;
    int moves;
    char *header;
    size_t *idx, nidx, nf;
    uint32_t *want, *want_to;
    rs_input_stats *st;
    uint64_t *wrong;
    uint8_t *scanned;
    vcounts *vc;
    int T;
    index_ref *ix;      /* [nf] each file's key index */
    uint8_t *sum_mode;  /* [nf] */
    uint64_t *sum;      /* [2 * nf] the digest of each indexed file's keys, from its rows */
} vstate;

static void diff_line(vstate *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Counts a difference; keeps its line while fewer than 8 * max_report are kept. */
static void diff_line(vstate *s, const char *fmt, ...)
{
    rs_verify_job_result *r = s->r;
    r->differences++;
    if (r->nlines >= s->o->max_report * 8)
        return;
    char **nl = realloc(r->lines, (r->nlines + 1) * sizeof *nl), *line = NULL;
    if (!nl)
        return;  /* counted all the same; the line is lost with the memory */
    r->lines = nl;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&line, fmt, ap) >= 0)
        r->lines[r->nlines++] = line;
    va_end(ap);
}

static uint32_t route_verify(void *vc, int tid, uint32_t input, const char *key, size_t keylen, const char *row,
                             size_t rowlen)
{
    vctx *c = vc;
    if (c->sum_mode[input])
        digest_add(c->vc[tid].sum + 2 * input, c->sum_mode[input] == ROWS ? row : key,
                   c->sum_mode[input] == ROWS ? rowlen : keylen);
    uint64_t pos = rs_ring_position(c->ring, key, keylen);
    int ok = rs_ring_owner(c->ring, pos) == c->want[input];
    if (ok && c->new_ring)
        ok = rs_ring_owner(c->new_ring, pos) == c->want_to[input];
    if (!ok)
        c->vc[tid].wrong[input]++;
    return RS_ROUTE_DROP;
}

static rs_ring *ring_from(const char *desc, const char *fp, const char *what, vstate *s, rs_error *err)
{
    char why[200];
    rs_ring *r = rs_ring_of_description(desc, fp, what, why, sizeof why, NULL, NULL, err);
    if (!r && err->code == RS_EXIT_DATA) {   /* naming the manifest, as every reader does */
        char head[PATH_MAX + 32];
        snprintf(head, sizeof head, "%s/manifest.json: ", s->bd.path);
        rs_error_restate(err, RS_EXIT_DATA, head, "");
    }
    if (r && why[0])
        diff_line(s, "manifest: %s", why);
    return r;
}

/* Runs the pipeline over inputs[idx[0..n)]; fills st and the wrong counts. */
static int scan(rs_pipeline_opts *po, const rs_bucketdir *bd, const size_t *idx, size_t n, vctx *c, int T,
                rs_input_stats *st, uint64_t *wrong, uint64_t *sum, char **header, rs_error *err)
{
    rs_bucketdir_sel sel;
    uint32_t *want = malloc((n ? n : 1) * sizeof *want), *want_to = malloc((n ? n : 1) * sizeof *want_to);
    uint8_t *mode = malloc(n ? n : 1);
    if (!want || !want_to || !mode || rs_bucketdir_inputs(bd, idx, n, po, &sel, err) != 0) {
        free(want);
        free(want_to);
        free(mode);
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    }
    po->input_vouched = NULL;   /* verify judges the files itself: a file that does not decode is a difference */
    for (size_t k = 0; k < n; k++) {
        want[k] = c->want[idx[k]];
        want_to[k] = c->want_to ? c->want_to[idx[k]] : 0;
        mode[k] = c->sum_mode[idx[k]];
    }
    vctx sub = {c->ring, c->new_ring, want, c->want_to ? want_to : NULL, mode, c->vc};
    for (int t = 0; t < T; t++) {
        memset(c->vc[t].wrong, 0, (n ? n : 1) * sizeof(uint64_t));
        memset(c->vc[t].sum, 0, 2 * (n ? n : 1) * sizeof(uint64_t));
    }
    po->route_ctx = &sub;
    rs_pipeline_result res = {0};
    int rc = rs_cluster_pipeline_run(po, &res, err);  /* lanes */
    if (rc == 0) {
        for (size_t k = 0; k < n; k++) {
            st[idx[k]] = res.input[k];
            st[idx[k]].path = bd->paths[idx[k]];
            for (int t = 0; t < T; t++) {
                wrong[idx[k]] += c->vc[t].wrong[k];
                sum[2 * idx[k]] += c->vc[t].sum[2 * k];
                sum[2 * idx[k] + 1] += c->vc[t].sum[2 * k + 1];
            }
        }
        free(*header);
        *header = res.header ? strdup(res.header) : NULL;
    }
    rs_pipeline_result_free(&res);
    rs_bucketdir_sel_free(&sel);
    free(want);
    free(want_to);
    free(mode);
    return rc;
}

/* The names the manifests list that are present in DIR, as they are
 * marked (mark_listed): a hash set of pointers (names owned elsewhere),
 * one probe per name - a directory may hold 100,000 files. */
typedef struct {
    const char **slot;
    size_t mask;
} name_set;

static int name_set_init(name_set *ns, size_t n)
{
    size_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    ns->slot = calloc(cap, sizeof *ns->slot);
    ns->mask = cap - 1;
    return ns->slot ? 0 : -1;
}

/* The slot that holds name, or the empty one where it would go. */
static const char **name_set_slot(const name_set *ns, const char *name)
{
    size_t h = rs_murmur3_x86_32(name, strlen(name), 0) & ns->mask;
    while (ns->slot[h] && strcmp(ns->slot[h], name) != 0)
        h = (h + 1) & ns->mask;
    return &ns->slot[h];
}

/* Marks `name` (under DIR, kept by the caller until the listing's end) as
 * listed by a manifest: 1 when present (*st, when given, its fstatat). */
static int mark_listed(vstate *s, name_set *listed, const char *name, struct stat *st)
{
    struct stat sb;
    if (fstatat(s->bd.fd, name, st ? st : &sb, AT_SYMLINK_NOFOLLOW) != 0)
        return 0;
    *name_set_slot(listed, name) = name;   /* listed twice: a damage of the manifest (rs_bucketdir_audit) */
    return 1;
}

/* Records file i's key index (name under DIR) and marks it listed. */
static void note_index(vstate *s, name_set *listed, size_t i, char *name, uint64_t size, uint32_t crc, uint8_t mode)
{
    if (!name)
        return;
    if (!mark_listed(s, listed, name, NULL)) {
        diff_line(s, "%s: missing (the key index of %s)", name, s->bd.names[i]);
        free(name);
        return;
    }
    s->ix[i] = (index_ref){name, size, crc, mode};
    s->sum_mode[i] = mode;
}

/* The key indexes the manifests list are files of DIR; their contents are
 * checked against the rows by check_indexes. */
static int mark_indexes(vstate *s, name_set *listed, rs_error *err)
{
    const rs_bucketdir *bd = &s->bd;
    if (!(s->ix = calloc(bd->nfiles + 1, sizeof *s->ix)) || !(s->sum_mode = calloc(bd->nfiles + 1, 1)) ||
        !(s->sum = calloc(2 * (bd->nfiles + 1), sizeof *s->sum)))
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    for (size_t i = 0; i < bd->nfiles; i++) {
        char *name;
        uint64_t size;
        uint32_t crc;
        int by_row, r = rs_bucketdir_index_of(bd, i, &name, &size, &crc, &by_row);
        if (r < 0)
            return rs_error_set(err, RS_EXIT_IO, "out of memory");
        if (r > 0)
            note_index(s, listed, i, name, size, crc, by_row ? ROWS : KEYS);
    }
    for (size_t g = 0; g < bd->ngens; g++)  /* one that indexes no file of DIR */
        for (size_t k = 0; k < bd->gens[g].nindexes; k++) {
            char *name = NULL, dn[16];
            rs_gen_dir_name(bd->gen_dir[g], dn);
            if (asprintf(&name, "%s/%s", dn, bd->gens[g].indexes[k].index) < 0)
                continue;
            if (!*name_set_slot(listed, name))
                diff_line(s, "%s: a key index of %s, which is not a file of generation %llu", name,
                          bd->gens[g].indexes[k].file, (unsigned long long)bd->gens[g].indexes[k].generation);
            free(name);
        }
    return 0;
}

/* The manifests' files against those present: listed twice, missing,
 * extra (the strays of DIR as rs_bucketdir_open found them: the one
 * definition, which compact and repair trust too), wrong size, not a node
 * of the ring(s); the totals. Files that can be read and whose node is
 * known go into s->idx for the scan. */
static int check_listing(vstate *s, rs_error *err)
{
    const rs_bucketdir *bd = &s->bd;
    size_t nf = s->nf = bd->nfiles;
    s->want = calloc(nf + 1, sizeof *s->want);
    s->want_to = calloc(nf + 1, sizeof *s->want_to);
    s->idx = calloc(nf + 1, sizeof *s->idx);
    s->st = calloc(nf + 1, sizeof *s->st);
    s->wrong = calloc(nf + 1, sizeof *s->wrong);
    name_set listed = {0};
    char (*dirs)[16] = calloc(bd->nlisted + 1, sizeof *dirs);   /* the generations' names, marked */
    const rs_nodes *on = rs_ring_nodes(s->ring), *nn = s->new_ring ? rs_ring_nodes(s->new_ring) : NULL;
    rs_node_index oix = {0}, nix = {0};   /* a node lookup per file: no linear search */
    if (!s->want || !s->want_to || !s->idx || !s->st || !s->wrong || !dirs ||
        name_set_init(&listed, bd->nlisted + 2 * nf) != 0 || rs_node_index_build(&oix, on, err) != 0 ||
        (nn && rs_node_index_build(&nix, nn, err) != 0)) {
        free(listed.slot);
        free(dirs);
        rs_node_index_free(&oix);
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    }
    for (size_t g = 0; g < bd->nlisted; g++) {  /* a generation's directory is its files' (a damaged one: */
        rs_gen_dir_name(bd->listed[g], dirs[g]);  /* reported by report_damage) */
        mark_listed(s, &listed, dirs[g], NULL);
    }
    for (size_t i = 0; i < nf; i++) {
        const rs_manifest_file *f = bd->files[i];
        const char *name = bd->names[i];
        struct stat sb;
        int hit = mark_listed(s, &listed, name, &sb), usable = 1;
        if (s->moves) {
            int64_t a = rs_node_index_find(&oix, on, f->from), b = rs_node_index_find(&nix, nn, f->to);
            if (a < 0 || b < 0) {
                diff_line(s, "%s: moves %s -> %s, but %s is not a node of the %s ring", name, f->from, f->to,
                          a < 0 ? f->from : f->to, a < 0 ? "old" : "new");
                usable = 0;
            } else {
                s->want[i] = (uint32_t)a;
                s->want_to[i] = (uint32_t)b;
            }
        } else {
            int64_t a = rs_node_index_find(&oix, on, f->node);
            if (a < 0)
                usable = 0;   /* its base entry's node: a damage of the manifest (rs_bucketdir_audit) */
            else
                s->want[i] = (uint32_t)a;
        }
        if (!hit || !S_ISREG(sb.st_mode)) {
            diff_line(s, "%s: missing (listed in the manifest with %llu rows)", name, (unsigned long long)f->rows);
            continue;
        }
        if ((uint64_t)sb.st_size != f->file_bytes)
            diff_line(s, "%s: %llu bytes on disk, the manifest says %llu", name, (unsigned long long)sb.st_size,
                      (unsigned long long)f->file_bytes);
        if (usable)
            s->idx[s->nidx++] = i;
    }
    rs_node_index_free(&oix);
    rs_node_index_free(&nix);
    int rc = mark_indexes(s, &listed, err);
    free(listed.slot);
    free(dirs);
    if (rc != 0)
        return -1;
    for (size_t k = 0; k < bd->nstray; k++)
        diff_line(s, "%s: extra file, not in the manifest", bd->stray[k]);
    return 0;
}

/* Scans the usable files' rows in one run; when one is bad (a data or
 * usage error), again one by one to say which. Marks s->scanned. */
static int scan_rows(vstate *s, rs_error *err)
{
    const rs_manifest *m = &s->bd.m;
    rs_pipeline_opts *po = &s->po;
    po->header = m->header;
    po->dialect.delim = m->delimiter;
    po->key = m->keys_only ? NULL : m->key;  /* NULL: column 1 by position */
    po->key_sep = m->key_sep ? m->key_sep : '|';
    po->input_crc = 1;
    po->ndest = 1;
    po->route = route_verify;
    s->T = rs_run_threads(po);
    if (!(s->vc = calloc((size_t)s->T, sizeof *s->vc)))
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    for (int t = 0; t < s->T; t++)
        if (!(s->vc[t].wrong = calloc(s->nf + 1, sizeof(uint64_t))) ||
            !(s->vc[t].sum = calloc(2 * (s->nf + 1), sizeof(uint64_t))))
            return rs_error_set(err, RS_EXIT_IO, "out of memory");
    vctx ctx = {s->ring, s->new_ring, s->want, s->moves ? s->want_to : NULL, s->sum_mode, s->vc};
    if (!(s->scanned = calloc(s->nf + 1, 1)))
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    int check_header = m->header && m->header_line && !m->keys_only;
    if (!s->nidx)
        return 0;
    if (scan(po, &s->bd, s->idx, s->nidx, &ctx, s->T, s->st, s->wrong, s->sum, &s->header, err) == 0) {
        for (size_t k = 0; k < s->nidx; k++)
            s->scanned[s->idx[k]] = 1;
        if (check_header && (!s->header || strcmp(s->header, m->header_line) != 0)) {
            char a[400], b[400];
            diff_line(s, "header: the files start with %s, the manifest says %s",
                      rs_text_shown_str(a, sizeof a, s->header ? s->header : "", '\''),
                      rs_text_shown_str(b, sizeof b, m->header_line, '\''));
        }
        return 0;
    }
    if (err->code != RS_EXIT_DATA && err->code != RS_EXIT_USAGE)
        return -1;
    /* One file is bad: scan them one by one to say which. */
    rs_error_clear(err);
    po->progress = 0;
    for (size_t k = 0; k < s->nidx; k++) {
        size_t one = s->idx[k];
        rs_error e1 = {0};
        if (scan(po, &s->bd, &one, 1, &ctx, s->T, s->st, s->wrong, s->sum, &s->header, &e1) == 0) {
            s->scanned[one] = 1;
            if (check_header && !s->bd.headerless[one] && s->st[one].rows + s->st[one].blank_lines > 0 &&
                (!s->header || strcmp(s->header, m->header_line) != 0)) {
                char a[400], b[400];
                diff_line(s, "%s: header %s, the manifest says %s", s->bd.names[one],
                          rs_text_shown_str(a, sizeof a, s->header ? s->header : "", '\''),
                          rs_text_shown_str(b, sizeof b, m->header_line, '\''));
            }
        } else if (e1.code == RS_EXIT_DATA || e1.code == RS_EXIT_USAGE)
            diff_line(s, "%s: unreadable: %s", s->bd.names[one], e1.msg);
        else {
            *err = e1;
            return -1;
        }
    }
    return 0;
}

/* Every scanned file's rows, bytes, CRC-32, placement and blank lines
 * against its manifest entry; sums the rows and bytes read. */
static void check_counts(vstate *s)
{
    for (size_t i = 0; i < s->nf; i++) {
        if (!s->scanned[i])
            continue;
        const rs_manifest_file *f = s->bd.files[i];
        const char *name = s->bd.names[i];
        const rs_input_stats *st = &s->st[i];
        uint64_t wrong = s->wrong[i], before = s->r->differences;
        s->r->rows += st->rows;
        s->r->bytes += st->bytes;
        if (wrong) {
            if (s->moves)
                diff_line(s, "%s: %llu of %llu rows do not move %s -> %s under the manifest's rings", name,
                          (unsigned long long)wrong, (unsigned long long)st->rows, f->from, f->to);
            else
                diff_line(s, "%s: %llu of %llu rows belong to another node than %s", name,
                          (unsigned long long)wrong, (unsigned long long)st->rows, f->node);
        }
        if (st->rows != f->rows)
            diff_line(s, "%s: %llu rows, the manifest says %llu", name, (unsigned long long)st->rows,
                      (unsigned long long)f->rows);
        if (st->bytes != f->bytes)
            diff_line(s, "%s: %llu data bytes, the manifest says %llu", name, (unsigned long long)st->bytes,
                      (unsigned long long)f->bytes);
        if (st->crc != f->crc32)
            diff_line(s, "%s: CRC-32 of the data %08x, the manifest says %08x", name, st->crc, f->crc32);
        if (st->blank_lines)
            diff_line(s, "%s: %llu blank lines (ringshard writes none)", name,
                      (unsigned long long)st->blank_lines);
        rs_error e = {0};
        /* rows intact: the bytes no decoder reads, as compact checks them */
        if (s->r->differences == before && rs_bucketdir_check_stored(&s->bd, i, name, &e) != 0)
            diff_line(s, "%s", e.msg);
        rs_error_clear(&e);
    }
}

/* Segment i's header (its first header_bytes, as its manifest says) must
 * decode to its header line alone, and its rows must start right after
 * it: where compact cuts it and dedup --buckets and cat skip it. */
static void check_segment_header(vstate *s, size_t i)
{
    const rs_manifest_file *f = s->bd.files[i];
    const rs_manifest *m = &s->bd.m;
    if (!rs_bucketdir_segment(&s->bd, i) || !f->header_bytes)
        return;
    rs_error e = {0};
    char buf[1 << 12];
    rs_buf line = {0};
    rs_reader *r = rs_reader_openat_range(s->bd.fd, s->bd.names[i], s->bd.paths[i], RS_CODEC_AUTO, 0,
                                          f->header_bytes, &e);
    ssize_t k = r ? 1 : -1;
    while (k > 0 && (k = rs_reader_read(r, buf, sizeof buf, &e)) > 0 && line.len < (1u << 20))
        if (rs_buf_append(&line, buf, (size_t)k) != 0)
            k = -1;
    rs_reader_close(r);
    r = NULL;
    const char *want = m->header_line && !m->keys_only ? m->header_line : NULL;
    size_t n = line.len;
    if (k < 0 || n == 0 || line.data[n - 1] != '\n' ||
        (want && (n - 1 != strlen(want) || memcmp(line.data, want, n - 1) != 0)))
        diff_line(s, "%s: its first %llu bytes (header_bytes) are not its header line%s%s", s->bd.names[i],
                  (unsigned long long)f->header_bytes, k < 0 ? ": " : "", k < 0 ? e.msg : "");
    else if (!(r = rs_reader_openat_range(s->bd.fd, s->bd.names[i], s->bd.paths[i], RS_CODEC_AUTO,
                                          f->header_bytes, UINT64_MAX - f->header_bytes, &e)) ||
             rs_reader_read(r, buf, sizeof buf, &e) < 0)
        diff_line(s, "%s: its rows do not start after its header (header_bytes %llu): %s", s->bd.names[i],
                  (unsigned long long)f->header_bytes, e.msg);
    rs_reader_close(r);
    rs_buf_free(&line);
}

static void check_segment_headers(vstate *s)
{
    for (size_t i = 0; i < s->nf; i++)
        if (s->scanned[i])
            check_segment_header(s, i);
}

/* What an index's entries add up to, checked as they are read. */
typedef struct {
    uint64_t sum[2];
    uint64_t bad_fp;     /* entries whose fingerprint is not their key's */
} index_scan;

static int scan_entry(void *ctx, uint64_t fp, const char *key, size_t len)
{
    index_scan *c = ctx;
    if (fp != rs_keyidx_fp(key, len))
        c->bad_fp++;
    digest_add(c->sum, key, len);
    return 0;
}

/* File i's key index against its manifest entry (size, CRC-32), the file
 * it indexes (rows, bytes, CRC-32, mode) and, entry by entry, the file's
 * keys: every fingerprint its key's, the runs sorted, the keys the same
 * multiset as the rows' (an order-free digest of both). */
static void check_index(vstate *s, size_t i)
{
    const index_ref *x = &s->ix[i];
    const rs_manifest_file *f = s->bd.files[i];
    char *path = NULL;
    uint32_t crc;
    if (asprintf(&path, "%s/%s", s->o->dir, x->name) < 0)
        return;
    if (rs_crc32_fileat(s->bd.fd, x->name, &crc) != 0)
        diff_line(s, "%s: unreadable: %s", x->name, strerror(errno));
    else if (crc != x->crc32)
        diff_line(s, "%s: CRC-32 %08x, the manifest says %08x", x->name, crc, x->crc32);
    rs_keyidx k;
    rs_error e = {0};
    rs_keyidx_of want = {f->rows, f->bytes, f->crc32, x->mode == ROWS ? RS_KEYIDX_BY_ROW : 0};
    index_scan c = {{0, 0}, 0};
    if (rs_keyidx_open(&k, s->bd.fd, x->name, path, &want, x->size, &e) != 0 || rs_keyidx_scan(&k, scan_entry, &c, &e) != 0)
        diff_line(s, "%s: %s", x->name, e.msg);
    else if (c.bad_fp)
        diff_line(s, "%s: %llu entries whose fingerprint is not their key's", x->name, (unsigned long long)c.bad_fp);
    else if (s->scanned[i] && (c.sum[0] != s->sum[2 * i] || c.sum[1] != s->sum[2 * i + 1]))
        diff_line(s, "%s: its %s are not those of %s", x->name, x->mode == ROWS ? "rows" : "keys", s->bd.names[i]);
    rs_keyidx_close(&k);
    free(path);
}

static void check_indexes(vstate *s)
{
    for (size_t i = 0; i < s->nf; i++)
        if (s->ix[i].name) {
            check_index(s, i);
            s->r->indexes++;
        }
}

/* The chain's damages (bucketdir.h), every one: those of its files are
 * reported by check_listing as for any directory. */
static void report_damage(vstate *s)
{
    size_t n = strlen(s->bd.path);
    for (size_t d = 0; d < s->bd.ndamage; d++) {
        const char *msg = s->bd.damage[d].msg;
        if (!s->bd.damage[d].file)
            diff_line(s, "%s", !strncmp(msg, s->bd.path, n) && msg[n] == '/' ? msg + n + 1 : msg);
    }
}

static int verify_steps(vstate *s, rs_error *err)
{
    /* DIR is opened once, and everything is read through that descriptor:
     * a replacement of DIR meanwhile cannot mix two generations */
    if (rs_bucketdir_open_flags(&s->bd, s->o->dir, UINT64_MAX, RS_BUCKETDIR_TOLERANT, err) != 0)
        return -1;
    report_damage(s);
    s->moves = s->r->moves = strcmp(s->bd.m.kind, "moves") == 0;
    if (!(s->ring = ring_from(s->bd.m.ring_description, s->bd.m.ring_fingerprint, s->moves ? "old ring" : "ring", s,
                              err)))
        return -1;
    if (s->moves &&
        !(s->new_ring = ring_from(s->bd.m.new_ring_description, s->bd.m.new_ring_fingerprint, "new ring", s, err)))
        return -1;
    if (check_listing(s, err) != 0)
        return -1;
    s->r->files = s->nf;
    if (scan_rows(s, err) != 0)
        return -1;
    check_counts(s);
    check_segment_headers(s);
    check_indexes(s);
    /* Files that vanished or cannot be read because DIR was replaced and
     * the generation opened was removed are not differences of DIR */
    if (s->r->differences && rs_bucketdir_replaced(&s->bd))
        return rs_error_set(err, RS_EXIT_IO, "%llu differences (files missing or unreadable)",
                            (unsigned long long)s->r->differences);  /* rs_bucketdir_explain says why */
    return 0;
}

int rs_verify_job_run(const rs_verify_job_opts *o, rs_verify_job_result *r, rs_error *err)
{
    memset(r, 0, sizeof *r);
    vstate s;
    memset(&s, 0, sizeof s);
    s.o = o;
    s.r = r;
    s.po = o->pipeline;
    int rc = verify_steps(&s, err);
    rs_bucketdir_explain(&s.bd, err);
    rs_bucketdir_close(&s.bd);
    rs_ring_free(s.ring);
    rs_ring_free(s.new_ring);
    for (int t = 0; s.vc && t < s.T; t++) {
        free(s.vc[t].wrong);
        free(s.vc[t].sum);
    }
    for (size_t i = 0; s.ix && i < s.nf; i++)
        free(s.ix[i].name);
    free(s.ix);
    free(s.sum_mode);
    free(s.sum);
    free(s.vc);
    free(s.want);
    free(s.want_to);
    free(s.idx);
    free(s.st);
    free(s.wrong);
    free(s.scanned);
    free(s.header);
    return rc;
}

void rs_verify_job_result_free(rs_verify_job_result *r)
{
    rs_free_strings(r->lines, r->nlines);
    memset(r, 0, sizeof *r);
}
