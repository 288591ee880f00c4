/* src/pipeline/route.c - the parse groups: scan the records of a batch's
 * segments with the structural scanner, hash and place their keys on the
 * ring, keep each row's entry for its destination (gathered by emit.c),
 * and count, skip or quarantine malformed records. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "pipeline/pipe.h"

/* Whether a fault is a record over the length limit. */
static int fault_is_long(const rs_csv_fault *f)
{
    return strcmp(f->what, "record longer than the limit") == 0;
}

/* The quarantine reason of a rejected record, and how many of its n bytes
 * the quarantine keeps: a record over the limit is kept cut to the limit,
 * its reason saying so, whether or not it fit a batch. */
size_t rs_pipe_quarantine_reason(const rs_csv_fault *f, size_t max_record, size_t n, char *why, size_t cap)
{
    if (!fault_is_long(f)) {
        snprintf(why, cap, "%s", f->what);
        return n;
    }
    snprintf(why, cap, "record longer than the limit (%zu bytes)", max_record);
    return n < max_record ? n : max_record;
}

const char rs_pipe_fault_key_sep[] = "key part holds the key separator";

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
int rs_pipe_write_quarantine(FILE *f, const char *path, const thread_acc *a, uint64_t line0, uint64_t rec0)
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

void rs_pipe_quote_key(rs_buf *b, const char *k, size_t n, char delim)
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

void rs_pipe_escape(rs_buf *b, const char *p, size_t n)
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
 * entry, adding the bytes written to *bytes. 0, or -1 if out of memory. */
static int scatter_key(rs_buf *out, const char *key, size_t len, char delim, uint32_t *bytes)
{
    if (rs_buf_reserve(out, 1 + sizeof(uint32_t) + 2 * len + 3) != 0) /* quoting at most doubles the key */
        return -1;
    size_t at = out->len;
    out->data[at] = (char)RS_ENTRY_LONG;
    out->len += 1 + sizeof(uint32_t);
    rs_pipe_quote_key(out, key, len, delim);
    rs_buf_append(out, "\n", 1);
    uint32_t n = (uint32_t)(out->len - at - 1 - sizeof n);
    memcpy(out->data + at + 1, &n, sizeof n);
    *bytes += n;
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

/* The bytes of destination d's rows (or keys) in batch b, each with its
 * LF: what rs_pipe_gather gathers, as the groups counted them (walking
 * the entries for it read them from memory once more: 5% of our CPU). */
size_t rs_pipe_gather_size(const scatter *sc, int G, uint32_t ndest, uint32_t d)
{
    size_t total = 0;
    for (int g = 0; g < G; g++)
        total += sc->count[(size_t)g * ndest + d].bytes;
    return total;
}

/* Copies n bytes to where the gather is: the first range while it has
 * room, then the second. */
static inline void put_split(char **at, size_t *room, char **rest, const char *p, size_t n)
{
    if (n <= *room) {
        memcpy(*at, p, n);
        *at += n, *room -= n;
        return;
    }
    memcpy(*at, p, *room);
    p += *room, n -= *room;
    *at = *rest, *room = SIZE_MAX;   /* the second range is the rest, whatever it is */
    memcpy(*at, p, n);
    *at += n;
}

/* A walk over destination d's entries, groups in order. */
typedef struct {
    const rs_buf *bufs; /* the scatter's, [g * ndest + d] */
    uint32_t ndest, d;
    int G, g;
    const unsigned char *e, *end;
} entry_walk;

/* The walk's next entry, or NULL after the last group's. Entering a
 * group, it prefetches the entries two groups on: with many groups (many
 * threads) a destination has few entries in each, and the misses on each
 * group's first entries would otherwise come one after the other. */
static inline const unsigned char *walk_next(entry_walk *w)
{
    while (w->e == w->end) {
        if (++w->g >= w->G)
            return NULL;
        const rs_buf *eb = &w->bufs[(size_t)w->g * w->ndest + w->d];
        w->e = (const unsigned char *)eb->data, w->end = w->e + eb->len;
        if (w->g + 2 < w->G)
            __builtin_prefetch(w->bufs[(size_t)(w->g + 2) * w->ndest + w->d].data);
    }
    const unsigned char *e = w->e;
    w->e += entry_size(e);
    return e;
}

/* Prefetches the batch row an entry refers to, if it refers to one.
 * Always inlined: gcc -O2 finds a function whose only effect is a
 * prefetch "const" and drops its calls (as ring.c's prefetch_index). */
static inline __attribute__((always_inline)) void prefetch_ref(const batch *b, const unsigned char *e)
{
    if (*e == RS_ENTRY_REF) {
        const char *row = b->data + entry_u32(e + 1);
        __builtin_prefetch(row);
        __builtin_prefetch(row + 64);
    }
}

/* The rows (or keys) of destination d in batch b, groups in order, from
 * their entries: the first n1 bytes to a, the others to rest (a's room
 * and rest's together hold rs_pipe_gather_size). The references point all
 * over the batch, which is out of the cache by now: a second walk keeps
 * AHEAD entries ahead of the copy, across the groups' boundaries, and
 * prefetches their rows (tools/bench/bench_rowmove.c, its "across" way: as cheap as
 * a walk per group at 8 groups, a fifth cheaper at 32 and 64). */
void rs_pipe_gather_split(const batch *b, const scatter *sc, int G, uint32_t ndest, uint32_t d, char *a, size_t n1,
                          char *rest)
{
    enum { AHEAD = 8 };
    for (int g = 0; g < G; g++) /* the groups' buffer headers, one line each */
        __builtin_prefetch(&sc->bufs[(size_t)g * ndest + d]);
    entry_walk copy = {sc->bufs, ndest, d, G, -1, NULL, NULL}, ahead = copy;
    const unsigned char *p = NULL, *e;
    for (int k = 0; k < AHEAD && (p = walk_next(&ahead)); k++)
        prefetch_ref(b, p);
    char *at = a;
    size_t room = n1;
    while ((e = walk_next(&copy))) {
        if (p && (p = walk_next(&ahead)))
            prefetch_ref(b, p);
        if (*e < RS_ENTRY_LONG)
            put_split(&at, &room, &rest, (const char *)e + 1, *e);
        else if (*e == RS_ENTRY_LONG)
            put_split(&at, &room, &rest, (const char *)e + 5, entry_u32(e + 1));
        else {
            put_split(&at, &room, &rest, b->data + entry_u32(e + 1), entry_u32(e + 5));
            put_split(&at, &room, &rest, "\n", 1);
        }
    }
}

int rs_pipe_gather(const batch *b, const scatter *sc, int G, uint32_t ndest, uint32_t d, rs_buf *out)
{
    size_t total = rs_pipe_gather_size(sc, G, ndest, d);
    out->len = 0;
    if (out->cap < total && rs_buf_reserve(out, total) != 0)
        return -1;
    rs_pipe_gather_split(b, sc, G, ndest, d, out->data, total, NULL);
    out->len = total;
    return 0;
}

int rs_pipe_gather_kept(const batch *b, const scatter *sc, int G, uint32_t ndest, uint32_t d, uint64_t base,
                        const rs_row_range *v, rs_buf *out, uint64_t *rows)
{
    size_t total = rs_pipe_gather_size(sc, G, ndest, d);
    out->len = *rows = 0;
    if (out->cap < total && rs_buf_reserve(out, total) != 0)
        return -1;
    entry_walk w = {sc->bufs, ndest, d, G, -1, NULL, NULL};
    const unsigned char *e;
    for (uint64_t j = base; (e = walk_next(&w)); j++) {
        while (j >= v->to && v->from != UINT64_MAX)
            v++;   /* the ranges are sorted: the first that may hold j */
        if (j < v->from)
            continue;
        if (*e < RS_ENTRY_LONG)
            rs_buf_append(out, (const char *)e + 1, *e);
        else if (*e == RS_ENTRY_LONG)
            rs_buf_append(out, (const char *)e + 5, entry_u32(e + 1));
        else {
            rs_buf_append(out, b->data + entry_u32(e + 1), entry_u32(e + 5));
            rs_buf_append(out, "\n", 1);
        }
        ++*rows;
    }
    return 0;
}

/* A group's entries for a destination keep their buffer from batch to
 * batch (about as many come each time) while it is at most twice what
 * they took, or 256 bytes (what the memory plan counts for each): inputs
 * whose batches each go to a few destinations - a bucket directory's own
 * files bucketed again - would otherwise leave every destination's
 * buffers sized for the largest batch it ever had, many batches' worth
 * in all. */
void rs_pipe_scatter_done(scatter *sc, int G, uint32_t ndest, uint32_t d)
{
    for (int g = 0; g < G; g++) {
        rs_buf *e = &sc->bufs[(size_t)g * ndest + d];
        if (e->cap > 256 && e->cap > 2 * e->len)
            rs_buf_free(e);
        e->len = 0;
    }
}

/* The rows of one call of the scanner, on their way (see parse_range). */
typedef struct {
    rs_csv_row rows[RS_BLOCK];
    size_t n;
    size_t at[RS_BLOCK];        /* which rows are records (not empty lines) */
    uint32_t k;                 /* how many */
    uint64_t pos[RS_BLOCK];     /* their ring positions (pos_router) */
    uint64_t hint[RS_BLOCK];    /* what the router's prefetch step read for them */
    int hinted;                 /* whether that step ran (owners needs it) */
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

/* The router's second step for block x. */
static void prefetch_block(const rs_pipeline_opts *o, row_block *x)
{
    o->pos_router->prefetch(o->route_ctx, x->pos, x->k, x->hint);
    x->hinted = 1;
}

/* Appends x's rows (or keys) to their destinations' buffers, in order. */
static void scatter_rows(pipe_state *s, const batch *b, const row_block *x, rs_buf *bufs, dest_count *dc,
                         thread_acc *acc)
{
    const rs_pipeline_opts *o = s->o;
    const uint8_t *only = o->only_dest ? o->only_dest[b->input + o->input_base] : NULL;
    for (uint32_t j = 0; j < x->k; j++) {
        const rs_csv_row *r = &x->rows[x->at[j]];
        uint32_t d = x->dest[j];
        if (d == RS_ROUTE_DROP)
            continue;
        if (only && !only[d]) {   /* counted as read by take_rows: not as a row of the input's */
            acc->filtered++;
            acc->rows--;
            acc->bytes -= r->len + 1;
            continue;
        }
        dc[d].rows++;
        dc[d].lines += r->lines + (r->next == r->off + r->len); /* a last row without its line end gets one */
        if (!bufs)
            continue;
        if (o->keys_only) {
            if (scatter_key(&bufs[d], r->key, r->keylen, o->dialect.delim, &dc[d].bytes))
                acc->oom = 1;
        } else {
            dc[d].bytes += (uint32_t)r->len + 1;
            if (scatter_row(&bufs[d], b->data, r->off, r->len))
                acc->oom = 1;
        }
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
    size_t step = rs_pipe_bad_record_end(&o->dialect, base + pos, end - pos, 1);
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
        rl = rs_pipe_quarantine_reason(fault, o->dialect.max_record, rl, why, sizeof why);
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
        rs_pipe_escape(&acc->quarantine, base + pos, rl);
        rs_buf_append(&acc->quarantine, "\n", 1);
    }
    acc->rejected++;
    acc->records++;
    acc->lines += nl ? nl : 1;
    return next;
}

/* Whether p[0..n) holds more than k bytes c. */
static int holds_more(const char *p, size_t n, char c, uint32_t k)
{
    const char *e = p + n;
    for (uint32_t i = 0; i <= k; i++) {
        const char *q = memchr(p, c, (size_t)(e - p));
        if (!q)
            return 0;
        p = q + 1;
    }
    return 1;
}

/* The 1-based field of the first key part of record rec[0..len) that
 * holds the key separator (split again: a rare path). */
static uint32_t key_sep_field(const pipe_state *s, const char *rec, size_t len)
{
    const rs_csv_keyspec *ks = &s->keyspec;
    rs_buf f = {0};
    int nf = rs_csv_fields(&s->o->dialect, rec, len, &f);
    uint32_t found = ks->cols[0] + 1;
    for (uint32_t i = 0; nf > 0 && i < ks->ncols; i++) {
        const char *v = f.data, *e = f.data + f.len;
        for (uint32_t c = 0; c < ks->cols[i] && v < e; c++)
            v += strlen(v) + 1;
        if (v < e && strchr(v, ks->sep)) {
            found = ks->cols[i] + 1;
            break;
        }
    }
    rs_buf_free(&f);
    return found;
}

/* dedup (opts key_sep_check): a composite key with a part that holds the
 * separator joins to bytes other parts may join to too (("x|y","z") and
 * ("x","y|z")), so its row is malformed. The joined key is checked - more
 * separators than the parts need - with a memchr per part; only the last
 * row of a scanner's call has a composite key (rs_csv_rows). At such a
 * row, x ends before it and the cursor is put back to it, as the scanner
 * leaves it at a fault. Returns RS_CSV_BAD with *fault then, else r. */
static int key_sep_fault(const pipe_state *s, const batch *b, row_block *x, rs_csv_cursor *cur, int r,
                         rs_csv_fault *fault)
{
    const rs_csv_keyspec *ks = &s->keyspec;
    for (size_t i = 0; i < x->n; i++) {
        const rs_csv_row *row = &x->rows[i];
        if (row->nfields == 0 || !holds_more(row->key, row->keylen, ks->sep, ks->ncols - 1))
            continue;
        x->n = i;
        cur->pos = row->off;
        *fault = (rs_csv_fault){rs_pipe_fault_key_sep, 0, key_sep_field(s, b->data + row->off, row->len)};
        return RS_CSV_BAD;
    }
    return r;
}

/* How many blocks after its own the ring's steps take a block: its
 * slots are read (and its points prefetched) once RS_HINT_LAG more blocks
 * are scanned, it is placed once RS_PLACE_LAG more are. */
#define RS_HINT_LAG 1
#define RS_PLACE_LAG 2
#define RS_IN_FLIGHT (RS_PLACE_LAG + 1)
_Static_assert(RS_HINT_LAG < RS_PLACE_LAG, "a block's index is read before it is placed");

/* Places block y: its owners (ring), then its rows to their buffers. */
static void place_block(pipe_state *s, const batch *b, int tid, row_block *y, rs_buf *bufs, dest_count *dc,
                        thread_acc *acc)
{
    const rs_pipeline_opts *o = s->o;
    const rs_pos_router *pr = o->keys_only ? NULL : o->pos_router;
    if (pr) {
        if (!y->hinted)
            prefetch_block(o, y);
        pr->owners(o->route_ctx, tid, b->input + o->input_base, y->pos, y->hint, y->k, y->dest);
    }
    scatter_rows(s, b, y, bufs, dc, acc);
}

/* Parses segments [sa, sb) of batch b on thread tid (as routers see it:
 * with opts tid_base): the structural scanner (src/csv/rows.c) gives
 * RS_BLOCK records a call, and a malformed record fails the group or is
 * skipped. With a ring (pos_router), the blocks go through three steps
 * some blocks apart - hash and prefetch the index, read it and prefetch
 * the points, look up and scatter - so that each step's memory has
 * arrived when it is read: block i is hashed while block i - RS_HINT_LAG
 * reads its index and block i - RS_PLACE_LAG is placed. */
void rs_pipe_parse_range(pipe_state *s, const batch *b, int tid, int group, int sa, int sb, scatter *sc,
                        thread_acc *acc)
{
    const rs_pipeline_opts *o = s->o;
    const rs_pos_router *pr = o->keys_only ? NULL : o->pos_router;
    const char *base = b->data;
    size_t end = b->seg[sb];
    uint32_t ndest = o->ndest;
    rs_buf *bufs = o->dest_paths ? sc->bufs + (size_t)group * ndest : NULL;
    dest_count *dc = sc->count + (size_t)group * ndest;
    rs_csv_cursor cur;
    rs_csv_cursor_init(&cur, base, b->seg[sa], end);
    row_block blk[RS_IN_FLIGHT];
    unsigned taken = 0, placed = 0; /* blocks scanned; blocks scattered */
    for (;;) {
        int r = RS_CSV_OK;
        rs_csv_fault fault;
        if (cur.pos < end) {
            row_block *x = &blk[taken % RS_IN_FLIGHT];
            x->hinted = 0;
            r = rs_csv_rows(&o->dialect, &s->keyspec, &cur, x->rows, RS_BLOCK, &x->n, &acc->scratch, &fault);
            if (o->key_sep_check && s->keyspec.ncols > 1)
                r = key_sep_fault(s, b, x, &cur, r, &fault);
            take_rows(s, b, tid, x, acc);
            taken++;
            if (pr && r == RS_CSV_OK && cur.pos < end) {
                if (taken - placed > RS_HINT_LAG) /* not after a fault's drain */
                    prefetch_block(o, &blk[(taken - 1 - RS_HINT_LAG) % RS_IN_FLIGHT]);
                if (taken - placed <= RS_PLACE_LAG)
                    continue; /* the pipeline fills */
                place_block(s, b, tid, &blk[placed++ % RS_IN_FLIGHT], bufs, dc, acc);
                continue;
            }
        }
        while (placed < taken) /* every block at the end or a fault */
            place_block(s, b, tid, &blk[placed++ % RS_IN_FLIGHT], bufs, dc, acc);
        if (r != RS_CSV_OK) {
            if (o->bad_rows == RS_BAD_ROW_FAIL) {
                acc->fault = (thread_fault){1, cur.pos, acc->lines, acc->records, fault};
                return;
            }
            rs_csv_cursor_init(&cur, base, skip_bad_row(s, b, cur.pos, end, &fault, acc), end);
        }
        if (cur.pos >= end)
            return;
    }
}

