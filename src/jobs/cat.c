/* The cat job (job_cat.h): the library side of `ringshard cat`.
 *
 * Each file is read with the dataset layer's row reader (dataset/rows.h),
 * which checks it against its manifest entry as it goes: what is written
 * is only ever rows that the manifests vouch for, and a file that differs
 * stops the stream there, named.
 *
 * Every core. Inflating a file is serial, so several files are decoded at
 * once: T worker threads (-j) take the files in stream order, and each
 * decodes its file's rows into BLOCKS of whole rows (each with its LF, and
 * where each row ends), queued on the file's SLOT. The calling thread, the
 * WRITER, takes the blocks in file order and puts the rows out as one
 * thread always did: the same chunks of CHUNK bytes ending at the same
 * row ends (found from the block's row ends), hence the same members when
 * compressing, so the stream is byte-identical for any -j. A file's error
 * reaches the writer after the blocks decoded before it, where one thread
 * met it: the same message and the same bytes out before it.
 *
 * Memory is bounded whatever the files' sizes: a worker takes a file at
 * most CAT_WINDOW files ahead of the writer, a file holds at most
 * CAT_AHEAD blocks queued, and the blocks are reused. So at most
 * CAT_WINDOW x CAT_AHEAD + T + 1 blocks are alive, each CAT_BLOCK bytes (or
 * one row longer than that, and freed once written): 5 MiB a thread, and
 * a reader per worker (rows.h: a 1 MiB buffer, or the longest record).
 * rs_cat_job_result.peak_block_bytes counts it. With one thread the writer
 * decodes the files itself, through the same code, and nothing is queued. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "dataset/rows.h"
#include "ringshard/text.h"
#include "ringshard/dataset.h"
#include "ringshard/deflate.h"
#include "ringshard/job_cat.h"
#include "ringshard/log.h"
#include "ringshard/nodes.h"
#include "ringshard/runplan.h"

#define CHUNK (1u << 20)   /* plain bytes per compressed member */
#define CAT_BLOCK ((size_t)1 << 20)
#define CAT_AHEAD 2u
#define CAT_WINDOW(T) (2 * (size_t)(T))

typedef struct {
    const rs_cat_job_opts *o;
    rs_deflater *dz;
    rs_buf chunk, member;
    rs_cat_job_result *r;
    int wrote;         /* a member (or any byte) is out */
    int header_done;   /* the header line is out (or was to be) */
} writer;

/* Writes w->chunk, and after it extra[0..n) (plain output only: the same
 * bytes as appending them first, without the copy); with final, an empty
 * member when no byte went out, so that a compressed stream of no rows is
 * still valid gzip or zstd. */
static int flush_with(writer *w, const char *extra, size_t nextra, int final, rs_error *err)
{
    const char *p = w->chunk.data ? w->chunk.data : "";
    size_t n = w->chunk.len;
    if (!n && !nextra && !(final && w->dz && !w->wrote))
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
    if (fwrite(p, 1, n, w->o->out) != n || (nextra && fwrite(extra, 1, nextra, w->o->out) != nextra))
        return rs_error_set(err, RS_EXIT_IO, "%s: write failed: %s", w->o->out_name, strerror(errno));
    return 0;
}

static int flush(writer *w, int final, rs_error *err) { return flush_with(w, NULL, 0, final, err); }

static int put(writer *w, const char *p, size_t n, rs_error *err)
{
    if (rs_buf_append(&w->chunk, p, n) != 0 || rs_buf_append(&w->chunk, "\n", 1) != 0)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    return w->chunk.len >= CHUNK ? flush(w, 0, err) : 0;
}

/* ------------------------------------------------------------- blocks */

/* Decoded rows of one file, in order. */
typedef struct cblock {
    struct cblock *next;
    rs_buf data;        /* rows, each with its LF */
    rs_buf ends;        /* uint32_t each: where a row ends in data (past its LF) */
    int header;         /* the file's header line: written only if none was */
    size_t counted;     /* data's and ends' capacity, as counted in held */
} cblock;

/* A file being decoded: its blocks not yet written, and how it ended. */
typedef struct {
    size_t i;           /* its place in the stream (SIZE_MAX: none yet) */
    cblock *head, *tail;
    unsigned queued;
    int done, rc;       /* the worker is through, and how (rc, err) */
    rs_error err;
} cslot;

typedef struct {
    const rs_bucketdir *bd;
    const rs_cat_job_opts *o;
    const size_t *order;   /* the files, in stream order */
    size_t n;
    size_t window;         /* slots: how far ahead of the writer a file is taken */
    pthread_mutex_t mu;
    pthread_cond_t ready;  /* the writer waits for a block or a file's end */
    pthread_cond_t space;  /* the workers wait for a slot or room in theirs */
    cslot *slots;
    size_t next;           /* the next file to take */
    size_t at;             /* the file the writer is on */
    int stop;
    cblock *free;
    uint64_t held, peak;   /* bytes of the blocks alive, now and at most */
    writer *w;             /* the writer */
    int direct;            /* one thread: the blocks go straight to w */
} cat_run;

/* What a worker decoding one file holds: the file's place, its block. */
typedef struct {
    cat_run *c;
    size_t i;
    cblock *cur;
} sink;

/* Counts b's buffers in c->held (under c->mu). */
static void count_block(cat_run *c, cblock *b)
{
    size_t now = b->data.cap + b->ends.cap;
    c->held += now - b->counted;
    b->counted = now;
    if (c->held > c->peak)
        c->peak = c->held;
}

static cblock *block_get(cat_run *c)
{
    pthread_mutex_lock(&c->mu);
    cblock *b = c->free;
    if (b)
        c->free = b->next;
    pthread_mutex_unlock(&c->mu);
    if (!b)
        b = calloc(1, sizeof *b);
    if (b) {
        b->next = NULL;
        b->data.len = b->ends.len = 0;
        b->header = 0;
    }
    return b;
}

/* Gives b back for reuse; the buffers of a longer row are freed. */
static void block_put(cat_run *c, cblock *b)
{
    pthread_mutex_lock(&c->mu);
    if (b->data.cap > CAT_BLOCK || b->ends.cap > CAT_BLOCK) {
        rs_buf_free(&b->data);
        rs_buf_free(&b->ends);
    }
    count_block(c, b);
    b->next = c->free;
    c->free = b;
    pthread_mutex_unlock(&c->mu);
}

static void blocks_free(cblock *b)
{
    while (b) {
        cblock *next = b->next;
        rs_buf_free(&b->data);
        rs_buf_free(&b->ends);
        free(b);
        b = next;
    }
}

/* The rows of block b out through w, as put() would have put them one by
 * one: a chunk ends at the first row end that brings it to CHUNK bytes. */
static int write_block(writer *w, const cblock *b, rs_error *err)
{
    if (b->header) {
        int was = w->header_done;
        w->header_done = 1;
        if (was)
            return 0;
    }
    const char *p = b->data.data;
    const uint32_t *ends = (const uint32_t *)(void *)b->ends.data;
    size_t pos = 0, len = b->data.len, j = 0, n = b->ends.len / sizeof *ends;
    while (pos < len) {
        size_t room = CHUNK - w->chunk.len;   /* > 0: a full chunk is written at once */
        if (len - pos < room)
            return rs_buf_append(&w->chunk, p + pos, len - pos) != 0 ? rs_error_set(err, RS_EXIT_IO, "out of memory")
                                                                       : 0;
        size_t lo = j, hi = n;   /* the first row end at least room bytes on: it exists, len is one */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (ends[mid] - pos < room)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (w->dz && rs_buf_append(&w->chunk, p + pos, ends[lo] - pos) != 0)
            return rs_error_set(err, RS_EXIT_IO, "out of memory");
        if (flush_with(w, w->dz ? NULL : p + pos, w->dz ? 0 : ends[lo] - pos, 0, err) != 0)
            return -1;
        pos = ends[lo];
        j = lo + 1;
    }
    return 0;
}

/* Hands the sink's block on: to the writer itself (one thread), or onto
 * the file's slot, waiting while it holds CAT_AHEAD blocks. */
static int sink_push(sink *k, rs_error *err)
{
    cblock *b = k->cur;
    cat_run *c = k->c;
    if (!b || (!b->data.len && !b->header))
        return 0;
    if (c->direct) {
        int rc = write_block(c->w, b, err);
        b->data.len = b->ends.len = 0;
        b->header = 0;
        return rc;
    }
    k->cur = NULL;
    pthread_mutex_lock(&c->mu);
    cslot *s = &c->slots[k->i % c->window];
    while (!c->stop && s->queued >= CAT_AHEAD)
        pthread_cond_wait(&c->space, &c->mu);
    int stop = c->stop;
    if (!stop) {
        count_block(c, b);
        if (s->tail)
            s->tail->next = b;
        else
            s->head = b;
        s->tail = b;
        s->queued++;
        pthread_cond_signal(&c->ready);
    }
    pthread_mutex_unlock(&c->mu);
    if (stop) {
        block_put(c, b);
        return rs_error_set(err, RS_EXIT_IO, "stopped");   /* the writer has the run's error */
    }
    return 0;
}

/* Appends a row (and its LF) to the sink's block, passing a full one on
 * first; header: the row is the file's header line, in a block of its own. */
static int sink_row(sink *k, const char *row, size_t len, int header, rs_error *err)
{
    if (k->cur && (header || k->cur->header || k->cur->data.cap - k->cur->data.len < len + 1) &&
        sink_push(k, err) != 0)
        return -1;
    if (!k->cur && !(k->cur = block_get(k->c)))
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    cblock *b = k->cur;
    uint32_t end = (uint32_t)(b->data.len + len + 1);
    /* a block is CAT_BLOCK bytes, or one row longer than that */
    if ((b->data.cap - b->data.len < len + 1 &&
         rs_buf_reserve(&b->data, len + 1 > CAT_BLOCK ? len + 1 : CAT_BLOCK) != 0) ||
        rs_buf_append(&b->ends, &end, sizeof end) != 0)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    memcpy(b->data.data + b->data.len, row, len);
    b->data.data[b->data.len + len] = '\n';
    b->data.len += len + 1;
    b->header = header;
    return 0;
}

static int placed_anywhere(void *ctx, const char *key, size_t keylen)
{
    (void)ctx, (void)key, (void)keylen;
    return 1;
}

/* The rows of file k of bd into the sink, checked; its header line in a
 * block of its own (written when none was). */
static int decode_file(const rs_bucketdir *bd, size_t k, rs_codec_choice codec, sink *sk, rs_error *err)
{
    const rs_manifest_file *f = bd->files[k];
    rs_csv_dialect dialect = {0};
    dialect.delim = bd->m.delimiter;
    rs_rows_src o = {.dialect = &dialect, .header = bd->m.header && !bd->headerless[k], .codec = codec,
                     .name = bd->names[k], .dirfd = bd->fd, .path = bd->paths[k]};
    char *mp = rs_bucketdir_manifest_of(bd, k);
    rs_rows_check chk = {f->rows, f->bytes, f->file_bytes, f->crc32, mp ? mp : bd->path, f->node, NULL,
                          placed_anywhere, NULL};
    rs_rows s = {0};
    const char *row;
    size_t len;
    struct stat st;
    int r = 0;
    if (fstatat(bd->fd, bd->names[k], &st, 0) == 0 && (uint64_t)st.st_size != f->file_bytes)
        r = rs_error_set(err, RS_EXIT_VERIFY, "%s: %llu bytes on disk, the manifest says %llu (the file does not "
                         "match %s)", bd->paths[k], (unsigned long long)st.st_size,
                         (unsigned long long)f->file_bytes, mp ? mp : bd->path);
    else if (rs_rows_open(&s, bd->paths[k], &o, 0, err) != 0)
        r = -1;
    if (r == 0 && o.header && (r = rs_rows_next(&s, 1, &row, &len, NULL, NULL, err)) == 1) {
        const char *want = bd->m.keys_only ? NULL : bd->m.header_line;
        if (want && (len != strlen(want) || memcmp(row, want, len) != 0)) {
            char a[400], b[400];
            r = rs_error_set(err, RS_EXIT_VERIFY, "%s: header %s, the manifest says %s", bd->paths[k],
                             rs_text_shown(a, sizeof a, row, len, 300, '\''),
                             rs_text_shown_str(b, sizeof b, want, '\''));
        } else
            r = sink_row(sk, row, len, 1, err);
    }
    if (r >= 0) {
        s.chk = &chk;
        r = 0;
        while (r == 0 && (r = rs_rows_next(&s, 1, &row, &len, NULL, NULL, err)) == 1)
            r = sink_row(sk, row, len, 0, err);
    }
    rs_rows_close(&s);
    if (sink_push(sk, err) != 0)   /* the rows before an error too: one thread wrote them */
        r = -1;
    if (r < 0)
        rs_bucketdir_vouched_error(err, mp ? mp : bd->path);
    free(mp);
    return r < 0 ? -1 : 0;
}

/* ------------------------------------------------------------- the run */

/* A worker: takes the next file (at most window files ahead of the
 * writer), decodes it onto its slot, says how it ended; until none is
 * left or the run stops. */
static void *worker(void *arg)
{
    cat_run *c = arg;
    pthread_mutex_lock(&c->mu);
    for (;;) {
        while (!c->stop && c->next < c->n && c->next >= c->at + c->window)
            pthread_cond_wait(&c->space, &c->mu);
        if (c->stop || c->next >= c->n)
            break;
        size_t i = c->next++;
        cslot *s = &c->slots[i % c->window];
        s->i = i;
        s->head = s->tail = NULL;
        s->queued = 0;
        s->done = s->rc = 0;
        rs_error_clear(&s->err);
        pthread_mutex_unlock(&c->mu);
        sink k = {c, i, NULL};
        int rc = decode_file(c->bd, c->order[i], c->o->codec, &k, &s->err);
        if (k.cur)
            block_put(c, k.cur);
        pthread_mutex_lock(&c->mu);
        s->rc = rc;
        s->done = 1;
        pthread_cond_signal(&c->ready);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

static void stop_run(cat_run *c)
{
    pthread_mutex_lock(&c->mu);
    c->stop = 1;
    pthread_cond_broadcast(&c->space);
    pthread_mutex_unlock(&c->mu);
}

/* The writer's side of file i: its blocks in order, then how it ended.
 * 0, or -1 with err (the file's, or the writer's own). */
static int write_file(cat_run *c, size_t i, rs_error *err)
{
    cslot *s = &c->slots[i % c->window];
    for (;;) {
        pthread_mutex_lock(&c->mu);
        while (s->i != i || (!s->head && !s->done))
            pthread_cond_wait(&c->ready, &c->mu);
        cblock *b = s->head;
        if (b) {
            s->head = b->next;
            if (!s->head)
                s->tail = NULL;
            s->queued--;
            pthread_cond_broadcast(&c->space);
        }
        pthread_mutex_unlock(&c->mu);
        if (!b)
            break;
        int rc = write_block(c->w, b, err);
        block_put(c, b);
        if (rc != 0)
            return -1;
    }
    if (s->rc != 0) {
        *err = s->err;
        return -1;
    }
    pthread_mutex_lock(&c->mu);
    c->at = i + 1;
    pthread_cond_broadcast(&c->space);
    pthread_mutex_unlock(&c->mu);
    return 0;
}

/* Every file of c->order out through w, decoded by T threads. 0 or -1
 * with err. */
static int run_files(cat_run *c, writer *w, int T, rs_error *err)
{
    int rc = 0;
    if (T <= 1) {   /* the writer decodes: blocks go straight out */
        c->w = w;
        c->direct = 1;
        sink k = {c, 0, NULL};
        for (size_t i = 0; rc == 0 && i < c->n; i++)
            if ((rc = decode_file(c->bd, c->order[i], c->o->codec, &k, err)) == 0)
                w->r->files++, w->r->rows += c->bd->files[c->order[i]]->rows,
                    w->r->bytes += c->bd->files[c->order[i]]->bytes;
        if (k.cur) {
            pthread_mutex_lock(&c->mu);
            count_block(c, k.cur);
            pthread_mutex_unlock(&c->mu);
            blocks_free(k.cur);
        }
        return rc;
    }
    c->window = CAT_WINDOW(T);
    pthread_t tid[RS_CAT_THREADS_MAX];
    int started = 0;
    if (!(c->slots = calloc(c->window, sizeof *c->slots)))
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    for (size_t k = 0; k < c->window; k++)
        c->slots[k].i = SIZE_MAX;
    for (; started < T; started++)
        if (pthread_create(&tid[started], NULL, worker, c) != 0)
            break;
    if (!started)
        rc = rs_error_set(err, RS_EXIT_IO, "cannot start a thread: %s", strerror(errno));
    c->w = w;
    for (size_t i = 0; rc == 0 && i < c->n; i++)
        if ((rc = write_file(c, i, err)) == 0)
            w->r->files++, w->r->rows += c->bd->files[c->order[i]]->rows,
                w->r->bytes += c->bd->files[c->order[i]]->bytes;
    c->w = NULL;
    stop_run(c);
    for (int t = 0; t < started; t++)
        pthread_join(tid[t], NULL);
    for (size_t k = 0; k < c->window; k++)
        blocks_free(c->slots[k].head);
    free(c->slots);
    return rc;
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
 * that cat --all does not go through every file for every node;
 * appended to the stream's order. */
static int node_files(const rs_bucketdir *bd, size_t b, rs_buf *order, rs_error *err)
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
        if (rs_buf_append(order, &k, sizeof k) != 0)
            return rs_error_set(err, RS_EXIT_IO, "out of memory");
    return 0;
}

/* The files of the nodes asked for (base[0..nnodes), or every node), in
 * the stream's order, through w on T threads. */
static int cat_files(const rs_bucketdir *bd, const rs_cat_job_opts *o, const long *base, writer *w, rs_error *err)
{
    rs_buf order = {0};
    size_t n = o->nnodes ? o->nnodes : bd->m.nfiles;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = node_files(bd, o->nnodes ? (size_t)base[i] : i, &order, err);
    cat_run c = {0};
    c.bd = bd;
    c.o = o;
    c.order = (const size_t *)(void *)order.data;
    c.n = order.len / sizeof(size_t);
    rs_pipeline_opts po = {0};
    po.threads = o->threads;
    int T = rs_run_threads(&po);
    T = (size_t)T > c.n ? (int)c.n : T;
    if (T > RS_CAT_THREADS_MAX)
        T = RS_CAT_THREADS_MAX;
    pthread_mutex_init(&c.mu, NULL);
    pthread_cond_init(&c.ready, NULL);
    pthread_cond_init(&c.space, NULL);
    if (rc == 0)
        rc = run_files(&c, w, T, err);
    w->r->nodes = rc == 0 ? n : 0;
    w->r->threads = T < 1 ? 1 : T;
    w->r->peak_block_bytes = c.peak;
    rs_log(RS_LOG_INFO, "cat: %zu files decoded by %d thread%s, at most %llu bytes of decoded rows held at once", c.n,
           w->r->threads, w->r->threads == 1 ? "" : "s", (unsigned long long)c.peak);
    blocks_free(c.free);
    pthread_mutex_destroy(&c.mu);
    pthread_cond_destroy(&c.ready);
    pthread_cond_destroy(&c.space);
    rs_buf_free(&order);
    return rc;
}

int rs_cat_job_run(const rs_cat_job_opts *o, rs_cat_job_result *r, rs_error *err)
{
    memset(r, 0, sizeof *r);
    rs_bucketdir bd;
    if (rs_bucketdir_open(&bd, o->dir, err) != 0)
        return -1;
    writer w = {o, NULL, {0}, {0}, r, 0, 0};
    long *base = calloc(o->nnodes + 1, sizeof *base);
    node_lookup look = {0};
    int rc = 0;
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
    if (rc == 0)
        rc = cat_files(&bd, o, base, &w, err);
    if (rc == 0 && !w.header_done && bd.m.header && bd.m.header_line && !bd.m.keys_only)
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
