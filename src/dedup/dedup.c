/* dedup/dedup.c - exact deduplication of one bucket file (see dedup.h).
 *
 * In memory: the whole file is read into one buffer and parsed with the
 * pipeline's scanner (rs_csv_next, same dialect and key spec). Every key
 * goes into an open-addressing table (linear probing, 64-bit hash stored
 * per slot, the key compared byte for byte on a hash match). A key that is
 * one unquoted field is referenced in place in the buffer; keys the scanner
 * had to assemble (quoted or composite) are copied into one growing arena,
 * so nothing is allocated per row. Each slot remembers the first and the
 * winning row (first or last copy); the winners are marked in a bitmap and
 * marked rows are written in file order from the places remembered for them.
 *
 * Split again: a file too big for the budget is streamed into K plain
 * sub-files by an independent hash of its key (seeded per level); all
 * copies of a key land in the same sub-file, each sub-file is deduplicated
 * on its own (recursively) into a bitmap over its rows, and the original is
 * streamed once more to translate the sub-files' bitmaps back to its own
 * rows (recomputing each row's sub-file and its rank in it). The output
 * rows are therefore exactly those of the unsplit computation, in the same
 * order; the same pass merges the sub-files' duplicates reports by the
 * original row of each key's first occurrence (see "duplicates report"). */
#include "ringshard/dedup.h"
#include "ringshard/text.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ringshard/buf.h"
#include "ringshard/hash.h"
#include "dedup/source.h"
#include "ringshard/dataset.h"
#include "util/filemode.h"

#define TABLE_SEED 0x7ab1e000u
#define SPLIT_SEED 0x5b117000u
#define ARENA_FLAG (1ULL << 63)

/* ---------------------------------------------------------------- output */

typedef struct {
    FILE *f;
    const char *path;
    int compress;
    rs_deflater *dz;
    rs_buf chunk, member;
    uint64_t rows, bytes, file_bytes;
    uint64_t chunk_rows;    /* rows in chunk: the member's record count */
    uint32_t crc;
    uint32_t stored_crc;    /* of the file_bytes written, as they are written */
} owriter;

static int ow_write(owriter *w, const void *p, size_t n, rs_error *err)
{
    if (n && fwrite(p, 1, n, w->f) != n)
        return rs_error_set(err, RS_EXIT_IO, "%s: write failed: %s", w->path, strerror(errno));
    w->file_bytes += n;
    w->stored_crc = rs_crc32(w->stored_crc, p, n);
    return 0;
}

static int ow_member(owriter *w, const char *p, size_t n, uint64_t records, uint32_t *crc, rs_error *err)
{
    if (!w->compress) {
        *crc = rs_crc32(0, p, n);
        return ow_write(w, p, n, err);
    }
    const void *pieces[1] = {p};
    size_t lens[1] = {n};
    w->member.len = 0;
    if (rs_deflater_member(w->dz, pieces, lens, 1, records, &w->member, crc) != 0)
        return rs_error_set(err, RS_EXIT_IO, "%s: compressing failed: %s", w->path, rs_deflater_why());
    return ow_write(w, w->member.data, w->member.len, err);
}

static int ow_flush(owriter *w, rs_error *err)
{
    if (!w->chunk.len)
        return 0;
    uint32_t c;
    if (ow_member(w, w->chunk.data, w->chunk.len, w->chunk_rows, &c, err) != 0)
        return -1;
    w->chunk_rows = 0;
    w->crc = rs_crc32_combine(w->crc, c, w->chunk.len);
    w->bytes += w->chunk.len;
    w->chunk.len = 0;
    return 0;
}

static int ow_open(owriter *w, const char *path, int compress, rs_deflater *dz, rs_error *err)
{
    memset(w, 0, sizeof *w);
    w->path = path;
    w->compress = compress;
    w->dz = dz;
    w->f = rs_file_create_stream(path, "wb", RS_FILE_USER);
    if (!w->f)
        return rs_error_set(err, RS_EXIT_IO, "%s: cannot create: %s", path, strerror(errno));
    setvbuf(w->f, NULL, _IOFBF, 1u << 16);
    return 0;
}

static int ow_header(owriter *w, const char *h, size_t n, rs_error *err)
{
    rs_buf line = {0};
    if (rs_buf_append(&line, h, n) != 0 || rs_buf_append(&line, "\n", 1) != 0) {
        rs_buf_free(&line);
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    }
    uint32_t c;
    int rc = ow_member(w, line.data, line.len, 1, &c, err);
    rs_buf_free(&line);
    return rc;
}

static int ow_row(owriter *w, const char *row, size_t n, rs_error *err)
{
    if (rs_buf_append(&w->chunk, row, n) != 0 || rs_buf_append(&w->chunk, "\n", 1) != 0)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    w->rows++;
    w->chunk_rows++;
    if (w->chunk.len >= RS_DEDUP_CHUNK)
        return ow_flush(w, err);
    return 0;
}

static int ow_close(owriter *w, int ok, rs_error *err)
{
    int rc = 0;
    if (ok)
        rc = ow_flush(w, err);
    if (ok && rc == 0 && w->compress && w->file_bytes == 0) {
        /* no header and no row: one empty member, so that the file is
         * still gzip (or zstd), as the pipeline's outputs are */
        uint32_t c;
        rc = ow_member(w, "", 0, 0, &c, err);
    }
    if (w->f && fclose(w->f) != 0 && rc == 0 && ok)
        rc = rs_error_set(err, RS_EXIT_IO, "%s: write failed: %s", w->path, strerror(errno));
    w->f = NULL;
    rs_buf_free(&w->chunk);
    rs_buf_free(&w->member);
    return rc;
}

rs_rows_src rs_dedup_rows_src(const rs_dedup_opts *o)
{
    return (rs_rows_src){.dialect = &o->dialect, .keyspec = o->mode != RS_DEDUP_BY_ROW ? &o->keyspec : NULL,
                         .header = o->header, .codec = o->codec, .name = o->in_name, .dirfd = o->in_dirfd,
                         .path = o->in_path_, .more = o->in_more, .more_paths = o->in_more_paths,
                         .more_files = o->in_more_files, .nmore = o->nin_more};
}

/* rs_rows_open of path, a file of o's input (the input itself, or one it
 * was split into). */
static int open_rows(rs_rows *s, const char *path, const rs_dedup_opts *o, int want_key, rs_error *err)
{
    rs_rows_src src = rs_dedup_rows_src(o);
    return rs_rows_open(s, path, &src, want_key, err);
}

/* The key of a row as rs_rows_next gives it (by row: the row itself), parsed
 * again from the row's bytes: for the rows whose key was not kept. */
static int row_key(const rs_dedup_opts *o, const char *row, size_t len, rs_buf *scratch, const char **key,
                   size_t *klen, rs_error *err)
{
    if (o->mode == RS_DEDUP_BY_ROW) {
        *key = row, *klen = len;
        return 0;
    }
    rs_csv_record rec;
    rs_csv_fault fault = {0};
    if (rs_csv_next(&o->dialect, &o->keyspec, row, len, 1, &rec, key, klen, scratch, &fault) != RS_CSV_OK)
        return rs_error_set(err, RS_EXIT_DATA, "a row that was read changed: %s", fault.what ? fault.what : "?");
    return 0;
}

/* One row of the output's order: written (and indexed) when kept, else
 * counted as a duplicate (and reported to o->dropped). */
static int emit(const rs_dedup_opts *o, owriter *w, rs_keyidx_writer *idx, rs_buf *scratch, const char *row,
                size_t len, int keep, rs_dedup_result *res, rs_error *err)
{
    const char *key;
    size_t klen;
    if (!keep) {
        res->dup_rows++;
        res->dup_bytes += len + 1;
        if (!o->dropped)
            return 0;
        if (row_key(o, row, len, scratch, &key, &klen, err) != 0)
            return -1;
        rs_text_put_tsv(o->dropped, key, klen);
        fputs("\trepeat\t", o->dropped);
        rs_text_put_tsv(o->dropped, row, len);
        fputc('\n', o->dropped);
        return 0;
    }
    if (ow_row(w, row, len, err) != 0)
        return -1;
    if (!idx)
        return 0;
    return row_key(o, row, len, scratch, &key, &klen, err) == 0 ? rs_keyidx_add(idx, key, klen, err) : -1;
}

void rs_input_walk_start(rs_input_walk *w, const uint64_t *rows, uint64_t *kept, size_t n)
{
    *w = (rs_input_walk){rows && n ? rows : NULL, kept, n, 0, rows && n ? rows[0] : 0, 0};
    if (w->rows)
        memset(kept, 0, n * sizeof *kept);
}

int rs_input_walk_whole(const rs_input_walk *w)
{
    uint64_t total = 0;
    for (size_t i = 0; w->rows && i < w->n; i++)
        total += w->rows[i];
    return w->rows && w->seen == total;
}

/* ------------------------------------------------------------- escaping */

/* Appends bytes to b with \\ \t \n \r escaped, as rs_text_put_tsv writes them. */
static int esc_append(rs_buf *b, const char *p, size_t len)
{
    size_t run = 0;
    for (size_t i = 0; i < len; i++) {
        char e = rs_text_tsv_escape(p[i]);
        if (!e)
            continue;
        char pair[2] = {'\\', e};
        if (rs_buf_append(b, p + run, i - run) != 0 || rs_buf_append(b, pair, 2) != 0)
            return -1;
        run = i + 1;
    }
    return rs_buf_append(b, p + run, len - run);
}

/* ------------------------------------------------------ duplicates report
 *
 * The report of a file lists its duplicated keys in the order of their
 * first occurrence in that file. A file that is split again gets the
 * reports of its sub-files, each in first-occurrence order by the
 * sub-file's own row numbers; to merge them it needs those row numbers, so
 * below the top level (depth > 0) every line is written as a tagged record
 * {uint64 first row, uint64 length, the line}. The split's mapping pass
 * (which streams the file in order and knows every row's sub-file and rank
 * in it) emits each sub-file's next record when it reaches the row that is
 * that record's first occurrence: a merge by original first row, with one
 * record per sub-file pending, and the result tagged with this file's own
 * row numbers in turn. At the top level the lines are written as they are. */

typedef struct {
    uint64_t first, len;
} dtag;

static int dups_line(FILE *f, int tagged, uint64_t first, const rs_buf *line)
{
    if (tagged) {
        dtag t = {first, line->len};
        if (fwrite(&t, sizeof t, 1, f) != 1)
            return -1;
    }
    return line->len && fwrite(line->data, 1, line->len, f) != line->len ? -1 : 0;
}

/* ------------------------------------------------------------- key spec */

int rs_dedup_keyspec(const char *key, char sep, const rs_csv_dialect *d, const char *header_line,
                     size_t header_len, rs_csv_keyspec *ks, rs_error *err)
{
    rs_buf fields = {0};
    int nf = 0;
    if (header_line) {
        size_t bom = rs_csv_bom_len(header_line, header_len);  /* kept in the line, not in the name */
        nf = rs_csv_fields(d, header_line + bom, header_len - bom, &fields);
        if (nf < 0) {
            rs_buf_free(&fields);
            return rs_error_set(err, RS_EXIT_DATA, "malformed header line");
        }
    }
    int rc = rs_csv_keyspec_resolve(ks, key, sep, header_line ? fields.data : NULL, (uint32_t)nf, "the manifest",
                                    err);
    rs_buf_free(&fields);
    return rc;
}

/* ---------------------------------------------------------------- table */

typedef struct {
    uint64_t h;
    uint64_t koff;           /* offset in the buffer, or ARENA_FLAG | offset in the arena */
    uint64_t first;          /* row index of the first copy */
    uint64_t winner;         /* row index of the kept copy */
    uint64_t woff;           /* the kept copy's offset in the buffer */
    uint32_t klen, wlen;
    uint64_t count;          /* copies */
} entry;

/* A probe slot: the hash's high half and the entry's index + 1 (0: empty).
 * The slots are probed, the entries (in the order of their first copies)
 * read only on a match of the high half: a bucket's slots stay in the
 * cache where its 56-byte entries would not. */
typedef struct {
    uint32_t tag, idx1;
} slot;

typedef struct {
    slot *s;
    size_t cap;              /* slots: a power of two */
    entry *e;
    size_t size, ecap;       /* entries used, allocated */
    rs_buf arena;
} table;

static int tb_init(table *t, uint64_t rows)
{
    memset(t, 0, sizeof *t);
    size_t cap = 1024;
    while (cap * 7 < rows * 10)
        cap <<= 1;
    t->s = calloc(cap, sizeof *t->s);
    t->cap = cap;
    t->ecap = cap * 7 / 10 + 1;
    t->e = malloc(t->ecap * sizeof *t->e);
    return t->s && t->e ? 0 : -1;
}

static void tb_free(table *t)
{
    free(t->s);
    free(t->e);
    rs_buf_free(&t->arena);
}

/* Doubles the slots (the entries stay where they are). */
static int tb_grow(table *t)
{
    size_t cap = t->cap * 2;
    slot *n = calloc(cap, sizeof *n);
    entry *e = realloc(t->e, (cap * 7 / 10 + 1) * sizeof *e);
    if (!n || !e) {
        free(n);
        if (e)
            t->e = e;
        return -1;
    }
    t->e = e;
    t->ecap = cap * 7 / 10 + 1;
    for (size_t i = 0; i < t->size; i++) {
        size_t j = t->e[i].h & (cap - 1);
        while (n[j].idx1)
            j = (j + 1) & (cap - 1);
        n[j] = (slot){(uint32_t)(t->e[i].h >> 32), (uint32_t)(i + 1)};
    }
    free(t->s);
    t->s = n;
    t->cap = cap;
    return 0;
}

static inline const char *tb_key(const table *t, const char *base, const entry *e)
{
    return e->koff & ARENA_FLAG ? t->arena.data + (e->koff & ~ARENA_FLAG) : base + e->koff;
}

static int cmp_first(const void *a, const void *b)
{
    const entry *x = *(entry *const *)a, *y = *(entry *const *)b;
    return x->first < y->first ? -1 : x->first > y->first;
}

typedef struct {
    uint64_t off;
    uint64_t len;
} rowref;

/* Deduplicates the loaded stream s (positioned after its header) into a
 * bitmap of the surviving rows; *nrows gets the number of data rows. With
 * refs, (*refs)[i] gets row i's place in the buffer (so that the survivors
 * can be written without parsing the buffer again). */
static int cmp_winner(const void *a, const void *b)
{
    const entry *x = *(entry *const *)a, *y = *(entry *const *)b;
    return x->winner < y->winner ? -1 : x->winner > y->winner;
}

/* The duplicates report of one file: a line per key (or row) with more
 * than one copy, in first-occurrence order, with its count and (by key)
 * the kept row; streaming, the kept rows are fetched by a second pass over
 * the file. Apart from dedup_mem's per-row loop, which it follows. */
static int report_dups(const rs_dedup_opts *o, const rs_rows *s, table *t, const char *base, int streaming,
                       int has_header, int depth, FILE *dups, size_t ndup, rs_error *err)
{
    rs_buf rowbuf = {0}, line = {0};
    rs_rows s2;
    memset(&s2, 0, sizeof s2);
    const char *row;
    size_t rowlen;
    int r = 0, rc = -1;
    entry **dl = malloc(ndup * sizeof *dl);
    if (!dl) {
        rs_error_set(err, RS_EXIT_IO, "out of memory");
        goto out;
    }
    size_t n = 0;
    for (size_t k = 0; k < t->size; k++)
        if (t->e[k].count > 1)
            dl[n++] = &t->e[k];
    const char *rows = base;
    if (streaming && o->mode != RS_DEDUP_BY_ROW) {
        /* fetch the kept rows of the duplicated keys */
        qsort(dl, n, sizeof *dl, cmp_winner);
        if (open_rows(&s2, s->path, o, 0, err) != 0 || (has_header && rs_rows_skip_header(&s2, err) != 0))
            goto out;
        uint64_t q = 0;
        size_t p = 0;
        while (p < n && (r = rs_rows_next(&s2, 1, &row, &rowlen, NULL, NULL, err)) == 1) {
            if (q++ != dl[p]->winner)
                continue;
            dl[p]->woff = rowbuf.len;
            dl[p]->wlen = (uint32_t)rowlen;
            if (rs_buf_append(&rowbuf, row, rowlen) != 0) {
                rs_error_set(err, RS_EXIT_IO, "out of memory");
                goto out;
            }
            p++;
        }
        if (p < n) {
            if (r >= 0)
                rs_error_set(err, RS_EXIT_IO, "%s: changed while being deduplicated", s->path);
            goto out;
        }
        rows = rowbuf.data;
    }
    qsort(dl, n, sizeof *dl, cmp_first);
    for (size_t k = 0; k < n; k++) {
        char num[32];
        int nl = snprintf(num, sizeof num, "\t%llu", (unsigned long long)dl[k]->count);
        line.len = 0;
        if (esc_append(&line, tb_key(t, base, dl[k]), dl[k]->klen) != 0 ||
            rs_buf_append(&line, num, (size_t)nl) != 0 ||
            (o->mode != RS_DEDUP_BY_ROW &&
             (rs_buf_append(&line, "\t", 1) != 0 || esc_append(&line, rows + dl[k]->woff, dl[k]->wlen) != 0)) ||
            rs_buf_append(&line, "\n", 1) != 0) {
            rs_error_set(err, RS_EXIT_IO, "out of memory");
            goto out;
        }
        /* at the top level the caller checks ferror(o->dups) and names the file */
        if (dups_line(dups, depth > 0, dl[k]->first, &line) != 0 && depth > 0) {
            rs_error_set(err, RS_EXIT_IO, "duplicates report: write failed: %s", strerror(errno));
            goto out;
        }
    }
    rc = 0;
out:
    rs_rows_close(&s2);
    rs_buf_free(&rowbuf);
    rs_buf_free(&line);
    free(dl);
    return rc;
}

/* With streaming, s is read as a stream (not loaded): every key is copied
 * into the arena, and the kept rows of duplicated keys are fetched by a
 * second pass over the file (only for the duplicates report). */
static int dedup_mem(const rs_dedup_opts *o, rs_rows *s, int streaming, int has_header, uint64_t rows_hint,
                     int depth, FILE *dups, uint64_t **bits, uint64_t *nrows, rowref **refs, rs_dedup_result *res,
                     rs_error *err)
{
    size_t nref = 0, capref = 0;
    table t;
    if (tb_init(&t, rows_hint) != 0) {
        tb_free(&t);
        return rs_error_set(err, RS_EXIT_IO, "out of memory deduplicating %s", s->path);
    }
    const char *base = s->buf.data;
    const char *end = base + s->buf.len;
    const char *row, *key;
    size_t rowlen, keylen;
    uint64_t i = 0;
    int r, rc = -1;
    while ((r = rs_rows_next(s, 0, &row, &rowlen, &key, &keylen, err)) == 1) {
        uint64_t h[2];
        rs_murmur3_x64_128(key, keylen, TABLE_SEED + (uint32_t)depth, h);
        size_t j = h[0] & (t.cap - 1);
        uint32_t tag = (uint32_t)(h[0] >> 32);
        entry *e = NULL;
        for (; t.s[j].idx1; j = (j + 1) & (t.cap - 1)) {
            if (t.s[j].tag != tag)
                continue;
            e = &t.e[t.s[j].idx1 - 1];
            if (e->h == h[0] && e->klen == keylen && memcmp(tb_key(&t, base, e), key, keylen) == 0)
                break;
            e = NULL;
        }
        if (!e) {
            if (t.size >= UINT32_MAX - 1) {
                rs_error_set(err, RS_EXIT_IO, "%s: more than 4G distinct keys in one part", s->path);
                goto out;
            }
            t.s[j] = (slot){tag, (uint32_t)(t.size + 1)};
            e = &t.e[t.size];
            e->h = h[0];
            e->klen = (uint32_t)keylen;
            if (!streaming && key >= base && key + keylen <= end) {
                e->koff = (uint64_t)(key - base);
            } else {
                e->koff = ARENA_FLAG | t.arena.len;
                if (rs_buf_append(&t.arena, key, keylen) != 0) {
                    rs_error_set(err, RS_EXIT_IO, "out of memory deduplicating %s", s->path);
                    goto out;
                }
            }
            e->first = e->winner = i;
            if (!streaming) {
                e->woff = (uint64_t)(row - base);
                e->wlen = (uint32_t)rowlen;
            }
            e->count = 1;
            if (++t.size >= t.ecap && tb_grow(&t) != 0) {
                rs_error_set(err, RS_EXIT_IO, "out of memory deduplicating %s", s->path);
                goto out;
            }
        } else {
            e->count++;
            if (o->mode == RS_DEDUP_KEEP_LAST) {
                e->winner = i;
                if (!streaming) {
                    e->woff = (uint64_t)(row - base);
                    e->wlen = (uint32_t)rowlen;
                }
            }
        }
        if (refs) {
            if (nref == capref) {
                size_t nc = capref ? capref * 2 : (size_t)rows_hint + 16;
                rowref *nr = realloc(*refs, nc * sizeof *nr);
                if (!nr) {
                    rs_error_set(err, RS_EXIT_IO, "out of memory deduplicating %s", s->path);
                    goto out;
                }
                *refs = nr;
                capref = nc;
            }
            (*refs)[nref++] = (rowref){(uint64_t)(row - base), rowlen};
        }
        res->bytes_in += rowlen + 1;
        i++;
    }
    if (r < 0)
        goto out;
    res->rows_in += i;
    *nrows = i;
    *bits = calloc((size_t)(i / 64 + 1), sizeof **bits);
    if (!*bits) {
        rs_error_set(err, RS_EXIT_IO, "out of memory deduplicating %s", s->path);
        goto out;
    }
    size_t ndup = 0;
    for (size_t k = 0; k < t.size; k++) {
        entry *e = &t.e[k];
        (*bits)[e->winner / 64] |= 1ULL << (e->winner % 64);
        if (e->count > 1)
            ndup++;
    }
    res->dup_keys += ndup;
    if (dups && ndup && report_dups(o, s, &t, base, streaming, has_header, depth, dups, ndup, err) != 0)
        goto out;
    rc = 0;
out:
    tb_free(&t);
    return rc;
}

/* ---------------------------------------------------------------- split */

static int dedup_bits(const rs_dedup_opts *o, const char *path, int has_header, int depth, int hot,
                      uint64_t rows_hint, uint64_t bytes_hint, FILE *dups, uint64_t **bits, uint64_t *nrows,
                      rs_dedup_result *res, rs_error *err);

static int fits(const rs_dedup_opts *o, uint64_t rows, uint64_t bytes)
{
    return bytes + rows * RS_DEDUP_ROW_COST + 2ULL * RS_DEDUP_CHUNK <= o->budget;
}

static inline uint32_t sub_of(const char *key, size_t keylen, int depth, uint32_t k)
{
    uint64_t h[2];
    rs_murmur3_x64_128(key, keylen, SPLIT_SEED + (uint32_t)depth, h);
    return (uint32_t)(h[1] % k);
}


/* Reads the next tagged record's header from a sub-file's report: 1, 0 at
 * its end, -1 on error. */
static int dr_next(FILE *f, dtag *t)
{
    size_t n = fread(t, sizeof *t, 1, f);
    if (n == 1)
        return 1;
    return ferror(f) ? -1 : 0;
}

/* The k sub-files of one split, and with a duplicates report theirs. */
typedef struct {
    uint32_t k;
    char **names;
    FILE **f;
    uint64_t *rows, *bytes, *rank;   /* per sub-file: rows, bytes written; rows met when mapping back */
    uint64_t **sb;                   /* per sub-file: its survivors' bitmap */
    /* with dups: the sub-files' reports (tagged records, see dups_line) */
    char **dnames;
    FILE **df;
    dtag *pend;
    unsigned char *has;
} subfiles;

/* Names and creates the k sub-files (and report names with dups). */
static int sub_create(const rs_dedup_opts *o, subfiles *sf, int depth, FILE *dups, rs_error *err)
{
    for (uint32_t i = 0; i < sf->k; i++) {
        if (!(sf->names[i] = rs_name_split(o->tmpdir, o->tmpname, depth, i, 0)) ||
            (dups && !(sf->dnames[i] = rs_name_split(o->tmpdir, o->tmpname, depth, i, 1))))
            return rs_error_set(err, RS_EXIT_IO, "out of memory");
        sf->f[i] = rs_file_create_stream(sf->names[i], "wb", RS_FILE_SCRATCH);
        if (!sf->f[i])
            return rs_error_set(err, RS_EXIT_IO, "%s: cannot create: %s", sf->names[i], strerror(errno));
        setvbuf(sf->f[i], NULL, _IOFBF, 1u << 16);
    }
    return 0;
}

/* Step 2: deduplicates each sub-file (rows_in is counted there), then
 * opens their reports to be read back together, one record pending per
 * sub-file. */
static int sub_dedup(const rs_dedup_opts *o, subfiles *sf, int depth, FILE *dups, rs_dedup_result *res,
                     rs_error *err)
{
    uint64_t rows_total = 0;
    for (uint32_t i = 0; i < sf->k; i++)
        rows_total += sf->rows[i];
    for (uint32_t i = 0; i < sf->k; i++) {
        uint64_t nr;
        /* a sub-file that got (nearly) everything holds few keys with many
         * copies: splitting it again would not help */
        int hot = sf->rows[i] > 1000 && sf->rows[i] * 10 >= rows_total * 9;
        FILE *sd = NULL;
        if (dups && !(sd = rs_file_create_stream(sf->dnames[i], "wb", RS_FILE_SCRATCH)))
            return rs_error_set(err, RS_EXIT_IO, "%s: cannot create: %s", sf->dnames[i], strerror(errno));
        if (sd)
            setvbuf(sd, NULL, _IOFBF, 1u << 16);
        int c = dedup_bits(o, sf->names[i], 0, depth + 1, hot, sf->rows[i], sf->bytes[i], sd, &sf->sb[i], &nr, res,
                           err);
        if (sd) {
            int bad = ferror(sd);
            if (fclose(sd) != 0)
                bad = 1;
            if (bad && c == 0) {
                rs_error_set(err, RS_EXIT_IO, "%s: write failed: %s", sf->dnames[i], strerror(errno));
                c = -1;
            }
        }
        if (c != 0)
            return -1;
        unlink(sf->names[i]);
        free(sf->names[i]);
        sf->names[i] = NULL;
    }
    for (uint32_t i = 0; dups && i < sf->k; i++) {
        if (!(sf->df[i] = fopen(sf->dnames[i], "rb")))
            return rs_error_set(err, RS_EXIT_IO, "%s: cannot open: %s", sf->dnames[i], strerror(errno));
        int c = dr_next(sf->df[i], &sf->pend[i]);
        if (c < 0)
            return rs_error_set(err, RS_EXIT_IO, "%s: read failed", sf->dnames[i]);
        sf->has[i] = (unsigned char)c;
    }
    return 0;
}

/* Step 3: maps the sub-files' survivors back to this file's rows (a second
 * read of path into s); with dups, emits each sub-file's report records
 * when this pass reaches the row of their first occurrence (so in
 * first-occurrence order here). */
static int sub_map_back(const rs_dedup_opts *o, subfiles *sf, rs_rows *s, const char *path, int has_header,
                        int depth, FILE *dups, uint64_t **bits, uint64_t *nrows, rs_error *err)
{
    rs_buf line = {0};
    const char *row, *key;
    size_t rowlen, keylen;
    uint64_t n = 0, total = 0;
    int r, rc = -1;
    for (uint32_t i = 0; i < sf->k; i++)
        total += sf->rows[i];
    *bits = calloc((size_t)(total / 64 + 1), sizeof **bits);
    if (!*bits) {
        rs_error_set(err, RS_EXIT_IO, "out of memory");
        goto out;
    }
    if (open_rows(s, path, o, 1, err) != 0 || (has_header && rs_rows_skip_header(s, err) != 0))
        goto out;
    while ((r = rs_rows_next(s, 0, &row, &rowlen, &key, &keylen, err)) == 1) {
        uint32_t j = sub_of(key, keylen, depth, sf->k);
        uint64_t q = sf->rank[j]++;
        if (n >= total || q >= sf->rows[j]) {
            rs_error_set(err, RS_EXIT_IO, "%s: changed while being deduplicated", path);
            goto out;
        }
        if (sf->sb[j][q / 64] >> (q % 64) & 1)
            (*bits)[n / 64] |= 1ULL << (n % 64);
        if (dups && sf->has[j] && sf->pend[j].first == q) {
            line.len = 0;
            if (rs_buf_reserve(&line, (size_t)sf->pend[j].len) != 0) {
                rs_error_set(err, RS_EXIT_IO, "out of memory");
                goto out;
            }
            if (fread(line.data, 1, (size_t)sf->pend[j].len, sf->df[j]) != sf->pend[j].len) {
                rs_error_set(err, RS_EXIT_IO, "%s: read failed", sf->dnames[j]);
                goto out;
            }
            line.len = (size_t)sf->pend[j].len;
            if (dups_line(dups, depth > 0, n, &line) != 0 && depth > 0) {
                rs_error_set(err, RS_EXIT_IO, "duplicates report: write failed: %s", strerror(errno));
                goto out;
            }
            int c = dr_next(sf->df[j], &sf->pend[j]);
            if (c < 0 || (c == 1 && sf->pend[j].first <= q)) {
                rs_error_set(err, RS_EXIT_IO, "%s: read failed", sf->dnames[j]);
                goto out;
            }
            sf->has[j] = (unsigned char)c;
        }
        n++;
    }
    if (r < 0)
        goto out;
    for (uint32_t i = 0; dups && i < sf->k; i++)
        if (sf->has[i]) {
            rs_error_set(err, RS_EXIT_IO, "%s: changed while being deduplicated", path);
            goto out;
        }
    *nrows = n;
    rc = 0;
out:
    rs_buf_free(&line);
    return rc;
}

/* Removes what is left of the sub-files and frees the lists. */
static void sub_free(subfiles *sf)
{
    for (uint32_t i = 0; i < sf->k; i++) {
        if (sf->f && sf->f[i])
            fclose(sf->f[i]);
        if (sf->names && sf->names[i]) {
            unlink(sf->names[i]);
            free(sf->names[i]);
        }
        if (sf->sb)
            free(sf->sb[i]);
        if (sf->df && sf->df[i])
            fclose(sf->df[i]);
        if (sf->dnames && sf->dnames[i]) {
            unlink(sf->dnames[i]);
            free(sf->dnames[i]);
        }
    }
    free(sf->dnames);
    free(sf->df);
    free(sf->pend);
    free(sf->has);
    free(sf->names);
    free(sf->f);
    free(sf->rows);
    free(sf->bytes);
    free(sf->rank);
    free(sf->sb);
}

static int dedup_split(const rs_dedup_opts *o, const char *path, int has_header, int depth, uint64_t rows_hint,
                       uint64_t bytes_hint, FILE *dups, uint64_t **bits, uint64_t *nrows, rs_dedup_result *res,
                       rs_error *err)
{
    uint64_t need = bytes_hint + rows_hint * RS_DEDUP_ROW_COST + 2ULL * RS_DEDUP_CHUNK;
    uint64_t k64 = 2 * ((need + o->budget - 1) / o->budget);
    uint32_t k = k64 < 2 ? 2 : k64 > RS_DEDUP_MAX_FANOUT ? RS_DEDUP_MAX_FANOUT : (uint32_t)k64;
    subfiles sf = {k, calloc(k, sizeof(char *)), calloc(k, sizeof(FILE *)), calloc(k, sizeof(uint64_t)),
                   calloc(k, sizeof(uint64_t)), calloc(k, sizeof(uint64_t)), calloc(k, sizeof(uint64_t *)),
                   dups ? calloc(k, sizeof(char *)) : NULL, dups ? calloc(k, sizeof(FILE *)) : NULL,
                   dups ? calloc(k, sizeof(dtag)) : NULL, dups ? calloc(k, 1) : NULL};
    rs_rows s = {0};
    int rc = -1, r;
    const char *row, *key;
    size_t rowlen, keylen;
    res->splits++;
    if (!sf.names || !sf.f || !sf.rows || !sf.bytes || !sf.rank || !sf.sb ||
        (dups && (!sf.dnames || !sf.df || !sf.pend || !sf.has))) {
        rs_error_set(err, RS_EXIT_IO, "out of memory");
        goto out;
    }
    if (sub_create(o, &sf, depth, dups, err) != 0)
        goto out;
    /* 1: distribute (the input's first read: checked) */
    if (open_rows(&s, path, o, 1, err) != 0 || (has_header && rs_rows_skip_header(&s, err) != 0))
        goto out;
    if (depth == 0)
        s.chk = o->check;
    while ((r = rs_rows_next(&s, 0, &row, &rowlen, &key, &keylen, err)) == 1) {
        uint32_t j = sub_of(key, keylen, depth, k);
        if (fwrite(row, 1, rowlen, sf.f[j]) != rowlen || putc('\n', sf.f[j]) == EOF) {
            rs_error_set(err, RS_EXIT_IO, "%s: write failed: %s", sf.names[j], strerror(errno));
            goto out;
        }
        sf.rows[j]++;
        sf.bytes[j] += rowlen + 1;
    }
    if (r < 0)
        goto out;
    rs_rows_close(&s);
    for (uint32_t i = 0; i < k; i++) {
        int c = fclose(sf.f[i]);
        sf.f[i] = NULL;
        if (c != 0) {
            rs_error_set(err, RS_EXIT_IO, "%s: write failed: %s", sf.names[i], strerror(errno));
            goto out;
        }
    }
    /* 2 and 3 */
    if (sub_dedup(o, &sf, depth, dups, res, err) != 0 ||
        sub_map_back(o, &sf, &s, path, has_header, depth, dups, bits, nrows, err) != 0)
        goto out;
    rc = 0;
out:
    rs_rows_close(&s);
    sub_free(&sf);
    if (rc != 0 && bits) {
        free(*bits);
        *bits = NULL;
    }
    return rc;
}

/* In memory if the file fits; else split again; else (a hot sub-file, or
 * the last level) streamed: only the keys are kept in memory. */
static int dedup_bits(const rs_dedup_opts *o, const char *path, int has_header, int depth, int hot,
                      uint64_t rows_hint, uint64_t bytes_hint, FILE *dups, uint64_t **bits, uint64_t *nrows,
                      rs_dedup_result *res, rs_error *err)
{
    int in_memory = fits(o, rows_hint, bytes_hint);
    if (!in_memory && !hot && depth < RS_DEDUP_MAX_DEPTH)
        return dedup_split(o, path, has_header, depth, rows_hint, bytes_hint, dups, bits, nrows, res, err);
    if (!in_memory)
        res->streamed++;
    rs_rows s;
    int rc = -1;
    if (open_rows(&s, path, o, 1, err) == 0 && (!in_memory || rs_rows_load(&s, bytes_hint, err) == 0) &&
        (!has_header || rs_rows_skip_header(&s, err) == 0))
        rc = dedup_mem(o, &s, !in_memory, has_header, rows_hint, depth, dups, bits, nrows, NULL, res, err);
    rs_rows_close(&s);
    return rc;
}

/* ----------------------------------------------------------------- file */

int rs_dedup_file(const rs_dedup_opts *opts, rs_deflater *dz, const char *in, uint64_t rows_hint,
                  uint64_t bytes_hint, const char *out, rs_dedup_result *res, rs_error *err)
{
    rs_dedup_opts oo = *opts;
    oo.in_path_ = in;  /* rs_open: this path is the input (o->in_name) */
    const rs_dedup_opts *o = &oo;
    memset(res, 0, sizeof *res);
    uint64_t *bits = NULL, nrows = 0;
    rowref *refs = NULL;
    rs_rows s;
    owriter w;
    rs_keyidx_writer idx, *idxp = NULL;
    rs_buf scratch = {0};
    int rc = -1, r, opened = 0;
    const char *row, *key;
    size_t rowlen, keylen;
    memset(&w, 0, sizeof w);
    if (open_rows(&s, in, o, 1, err) != 0)
        goto out;
    int split = !fits(o, rows_hint, bytes_hint);
    if (!split && rs_rows_load(&s, bytes_hint, err) != 0)
        goto out;
    if (ow_open(&w, out, o->compress, dz, err) != 0)
        goto out;
    opened = 1;
    if (o->index_out && rs_keyidx_create(&idx, o->index_out, err) == 0) {
        idxp = &idx;
        if (o->index_memory)
            rs_keyidx_set_memory(&idx, o->index_memory);
    }
    else if (o->index_out)
        goto out;
    if (o->header) {
        r = rs_rows_next(&s, 1, &row, &rowlen, NULL, NULL, err);
        if (r < 0)
            goto out;
        if (r == 1 && !o->no_header_out && ow_header(&w, row, rowlen, err) != 0)
            goto out;
        res->header_bytes = w.file_bytes;
    }
    rs_input_walk walk;
    rs_input_walk_start(&walk, o->in_rows, o->kept_rows, o->nin_rows);
    if (!split)
        s.chk = o->check;  /* dedup_mem's pass is the input's first read */
    if (split) {
        if (dedup_split(o, in, o->header, 0, rows_hint, bytes_hint, o->dups, &bits, &nrows, res, err) != 0)
            goto out;
    } else {
        if (dedup_mem(o, &s, 0, o->header, rows_hint, 0, o->dups, &bits, &nrows, &refs, res, err) != 0)
            goto out;
        for (uint64_t i = 0; i < nrows; i++) {
            int keep = (int)(bits[i / 64] >> (i % 64) & 1);
            rs_input_walk_row(&walk, keep);
            if (emit(o, &w, idxp, &scratch, s.buf.data + refs[i].off, refs[i].len, keep, res, err) != 0)
                goto out;
        }
        res->kept_rows_ok = rs_input_walk_whole(&walk);
        rc = 0;
        goto out;
    }
    /* split: the original is streamed once more to write the survivors */
    rs_rows_close(&s);
    if (open_rows(&s, in, o, 0, err) != 0 || (o->header && rs_rows_skip_header(&s, err) != 0))
        goto out;
    uint64_t i = 0, bytes_in = 0;
    while ((r = rs_rows_next(&s, 1, &row, &rowlen, &key, &keylen, err)) == 1) {
        if (i >= nrows) {
            rs_error_set(err, RS_EXIT_IO, "%s: changed while being deduplicated", in);
            goto out;
        }
        int keep = (int)(bits[i / 64] >> (i % 64) & 1);
        rs_input_walk_row(&walk, keep);
        if (emit(o, &w, idxp, &scratch, row, rowlen, keep, res, err) != 0)
            goto out;
        bytes_in += rowlen + 1;
        i++;
    }
    if (r < 0)
        goto out;
    if (i != nrows) {
        rs_error_set(err, RS_EXIT_IO, "%s: changed while being deduplicated", in);
        goto out;
    }
    res->bytes_in = bytes_in;
    res->kept_rows_ok = rs_input_walk_whole(&walk);
    rc = 0;
out:
    if (opened && ow_close(&w, rc == 0, err) != 0)
        rc = -1;
    if (rc == 0) {
        res->rows = w.rows;
        res->bytes = w.bytes;
        res->file_bytes = w.file_bytes;
        res->crc = w.crc;
        res->stored_crc = w.stored_crc;
    }
    if (idxp && rc == 0) {
        rs_keyidx_of of = {res->rows, res->bytes, res->crc, o->mode == RS_DEDUP_BY_ROW ? RS_KEYIDX_BY_ROW : 0};
        rc = rs_keyidx_finish(idxp, &of, &res->index_bytes, &res->index_crc32, err);
    } else if (idxp) {
        rs_keyidx_abort(idxp);
    }
    rs_buf_free(&scratch);
    rs_rows_close(&s);
    free(bits);
    free(refs);
    if (rc != 0 && o->check)  /* the input is a bucket directory's file its manifest vouches for */
        rs_bucketdir_vouched_error(err, o->check->manifest);
    return rc;
}
