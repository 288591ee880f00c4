/* Adding a generation to a bucket directory (jobs/append.h). */
#define _GNU_SOURCE  /* asprintf */
#include "jobs/append.h"
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cluster/cluster.h"
#include "cluster/world.h"
#include "ringshard/deflate.h"
#include "ringshard/log.h"
#include "ringshard/outfile.h"
#include "ringshard/reader.h"
#include "util/filemode.h"

int rs_append_open(rs_append *g, const char *dir, rs_error *err)
{
    memset(g, 0, sizeof *g);
    g->lockfd = -1;
    g->dir = dir;
    uint64_t missing = 0;
    if (rs_world_rank() == 0 && !err->code) {
        int r = rs_outdir_lock(dir, &g->lockfd, err);
        missing = r == 1;
        g->locked = r == 0;
    }
    rs_world_bcast(&missing, sizeof missing, 0);
    if (rs_world_agree(err) != 0)
        return -1;
    if (missing)
        return 1;
    if (!(g->mpath = rs_name_manifest_path(dir))) {
        rs_error_set(err, RS_EXIT_IO, "out of memory");
    } else if (rs_world_rank() == 0 && access(g->mpath, F_OK) != 0 && errno == ENOENT) {
        rs_error_set(err, RS_EXIT_EXISTS, "%s: exists but holds no manifest.json: not a bucket directory that "
                     "ringshard wrote (--append adds to one; name another directory, or remove this one)", dir);
    }
    if (rs_world_agree(err) != 0 || rs_cluster_bucketdir_open_flags(&g->bd, dir, RS_BUCKETDIR_TOLERANT, err) != 0)
        return -1;
    g->opened = 1;
    return rs_gen_next(&g->bd, g->mpath, &g->gen, g->gen_name, err);
}

/* ------------------------------------------------------------- options */

int rs_append_check(rs_append *g, rs_pipeline_opts *po, unsigned given, const rs_ring *ring_given, rs_ring **ring,
                    rs_error *err)
{
    const rs_manifest *m = &g->bd.m;
    rs_shaping here = {po->key, po->key_sep, po->dialect.delim, po->header, po->compress, po->level, po->keys_only},
               dir;
    *ring = NULL;
    if (rs_shaping_check(m, g->mpath, &here, given, err) != 0 || !(*ring = rs_manifest_ring(m, g->mpath, NULL, NULL,
                                                                                             err)))
        return -1;
    if ((given & RS_GIVEN_RING) && rs_shaping_check_ring(m, g->mpath, ring_given, err) != 0)
        return -1;
    rs_shaping_of_manifest(m, &dir);
    po->key = dir.key;
    po->key_sep = dir.key_sep;
    po->dialect.delim = dir.delimiter;
    po->header = dir.header;
    po->compress = dir.compress;
    po->level = dir.level;
    po->keys_only = dir.keys_only;
    po->header_ref = m->header ? m->header_line : NULL;
    po->header_ref_name = g->mpath;
    return 0;
}

/* --------------------------------------------------------------- inputs */

/* Acts on input `path` being what `was` holds; 1 when it is skipped. */
static int on_seen(const rs_held *was, const char *path, rs_on_seen policy, const char *cmd, rs_error *err)
{
    char where[256];
    rs_held_where(was, where, sizeof where);
    if (policy == RS_SEEN_FAIL)
        return rs_error_set(err, RS_EXIT_EXISTS, "%s: %s (--on-seen fail); nothing written", path, where);
    if (policy == RS_SEEN_AGAIN)
        return 0;
    if (cmd)
        fprintf(stderr, "ringshard %s: %s: %s: skipped\n", cmd, path, where);
    return 1;
}

/* Acts on input i (path) of the job being what `was` holds: as on_seen,
 * but an input whose DIR entry has lost nodes outstanding (restore.c) is
 * ingested for them (g->restore_of[i]), unless the policy ingests it
 * whole anyway. */
static int seen_or_restore(rs_append *g, size_t n, size_t i, const rs_held *was, const char *path, rs_on_seen policy,
                           const char *cmd, rs_error *err)
{
    if (g && g->opened && was->entry && !was->this_run && policy != RS_SEEN_AGAIN &&
        rs_bucketdir_outstanding(&g->bd, was->entry)) {
        if (!g->restore_of && !(g->restore_of = calloc(n + 1, sizeof *g->restore_of)))
            return rs_error_set(err, RS_EXIT_IO, "out of memory");
        g->restore_of[i] = was->entry;
        if (cmd)
            fprintf(stderr, "ringshard %s: %s: ingested by generation %" PRIu64 " (as %.200s), but a repair could "
                    "not keep the rows of some of its nodes: those rows only are ingested again\n", cmd, path,
                    was->gen, was->path);
        return 0;
    }
    return on_seen(was, path, policy, cmd, err);
}

/* What is known of the content of one of this run's inputs: its size
 * from its first and last bytes (rs_file_content_size_hint), and once read
 * (only when that size is one that DIR or an earlier input has), its
 * CRC-64. */
typedef struct {
    uint64_t hint, size;
    int mod32, hinted, summed;
    int none;   /* summed, but it has no content sum (several gzip members or zstd frames) */
    char sum[RS_CHECKSUM_TEXT];
} probe;

/* Input bytes read before a run to tell inputs already ingested, for the
 * summary (rs_append_seen_bytes): rank 0's, the process's whole life. */
static uint64_t seen_read;

uint64_t rs_append_seen_bytes(void)
{
    return __atomic_load_n(&seen_read, __ATOMIC_RELAXED);
}

static void count_seen_read(uint64_t n)
{
    __atomic_fetch_add(&seen_read, n, __ATOMIC_RELAXED);
}

static int probe_sum(probe *p, const rs_pipeline_opts *po, const char *path, rs_error *err)
{
    uint64_t crc;
    struct stat st;
    if (p->summed)
        return 0;
    int known = rs_file_content(AT_FDCWD, path, path, po->codec, &crc, &p->size, err);
    if (known < 0)
        return -1;
    count_seen_read(stat(path, &st) == 0 ? (uint64_t)st.st_size : 0);   /* read whole, as stored */
    rs_checksum_text(crc, p->sum);
    p->summed = 1;
    p->none = !known;
    return 0;
}

/* Whether the file at path is stored plain (no gzip nor zstd magic in its
 * first bytes): then its content sum is its stored bytes' checksum. */
static int stored_plain(const char *path)
{
    unsigned char m[4] = {0};
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : pread(fd, m, sizeof m, 0);
    if (fd >= 0)
        close(fd);
    if (n < 0)
        return 0;
    int gzip = n >= 2 && m[0] == 0x1f && m[1] == 0x8b;
    int zstd = n == 4 && ((m[0] == 0x28 && m[1] == 0xb5 && m[2] == 0x2f && m[3] == 0xfd) ||
                          ((m[0] & 0xf0) == 0x50 && m[1] == 0x2a && m[2] == 0x4d && m[3] == 0x18));
    return !gzip && !zstd;
}

/* Input i of this run [lo, i], whose stored bytes are new: is its content
 * one DIR holds, or an earlier input of this run's (not skipped)? Only an
 * input whose content size (pr[].hint) is such an input's is read to know
 * (a decompression, and the earlier input's too): any other is new at the
 * cost of the two small reads of its hint. 1 with *was (a copy) when it
 * is held, 0 when not, -1 with err. */
static int content_held(const rs_catalog *c, const rs_pipeline_opts *po, size_t lo, size_t i, probe *pr,
                        const uint8_t *skip, rs_held *was, rs_error *err)
{
    probe *me = &pr[i - lo];
    int dir = me->hinted && rs_catalog_has_content_size(c, me->hint, me->mod32), run = 0;
    for (size_t j = lo; me->hinted && j < i && !run; j++) {
        const probe *q = &pr[j - lo];
        run = !skip[j] && q->hinted && rs_content_sizes_match(q->hint, q->mod32, me->hint, me->mod32);
    }
    if (!dir && !run)
        return 0;
    if (probe_sum(me, po, po->inputs[i], err) != 0)
        return -1;
    if (me->none)
        return 0;
    const rs_held *w = dir ? rs_catalog_content(c, me->size, me->sum) : NULL;
    if (w) {
        *was = *w;
        was->by_content = 1;
        return 1;
    }
    for (size_t j = lo; run && j < i; j++) {
        probe *q = &pr[j - lo];
        if (skip[j] || !q->hinted || !rs_content_sizes_match(q->hint, q->mod32, me->hint, me->mod32))
            continue;
        if (probe_sum(q, po, po->inputs[j], err) != 0)
            return -1;
        if (!q->none && q->size == me->size && strcmp(q->sum, me->sum) == 0) {
            *was = (rs_held){.path = po->inputs[j], .this_run = 1};
            return 1;
        }
    }
    return 0;
}

static int is_pipe_input(const char *path, struct stat *st)
{
    return strcmp(path, "-") == 0 || stat(path, st) != 0 || !S_ISREG(st->st_mode);
}

/* rank 0's part of rs_append_seen. */
static int seen_decide(rs_append *g, const rs_pipeline_opts *po, size_t lo, size_t hi, rs_on_seen policy,
                       uint8_t *skip, const char *cmd, rs_error *err)
{
    rs_catalog cat = {0};
    int rc = 0;
    if (g && g->opened && rs_catalog_of_dir(&cat, &g->bd) != 0)
        rc = rs_error_set(err, RS_EXIT_IO, "out of memory");
    /* this run's inputs by size; checksummed when a size is shared */
    uint64_t *size = calloc(hi - lo + 1, sizeof *size);
    uint8_t *known = calloc(hi - lo + 1, 1);  /* 1: a regular file (size known) */
    probe *pr = calloc(hi - lo + 1, sizeof *pr);
    if (!size || !known || !pr)
        rc = rs_error_set(err, RS_EXIT_IO, "out of memory");
    /* content sizes are looked at when DIR recorded contents (not before
     * 0.2.0) or the run has inputs to compare among themselves */
    int contents = hi - lo > 1;
    for (size_t k = 0; k < cat.n && !contents; k++)
        contents = cat.v[k].content != NULL;
    for (size_t i = lo; rc == 0 && i < hi; i++) {
        struct stat st;
        if (skip[i] || is_pipe_input(po->inputs[i], &st))
            continue;  /* dropped by a run before (rs_append_seen_after); checked after the run, or the pipeline
                        * reports it */
        known[i - lo] = 1;
        size[i - lo] = (uint64_t)st.st_size;
        probe *p = &pr[i - lo];
        p->hinted = contents && rs_file_content_size_hint(AT_FDCWD, po->inputs[i], &p->hint, &p->mod32);
    }
    for (size_t i = lo; rc == 0 && i < hi; i++) {
        if (!known[i - lo])
            continue;
        const rs_held *old = rs_catalog_by_path(&cat, size[i - lo], po->inputs[i]);
        int r0 = old ? seen_or_restore(g, po->ninputs, i, old, po->inputs[i], policy, cmd, err) : 0;
        if (r0 != 0) {
            if (r0 < 0)
                rc = -1;
            else
                skip[i] = 1;
            continue;
        }
        int shared = rs_catalog_has_size(&cat, size[i - lo]);
        for (size_t j = i + 1; !shared && j < hi; j++)
            shared = known[j - lo] && size[j - lo] == size[i - lo];
        if (!shared) {  /* no other stored bytes of its size: its content may still be held */
            rs_held was;
            int c = content_held(&cat, po, lo, i, pr, skip, &was, err);
            int r = c > 0 ? seen_or_restore(g, po->ninputs, i, &was, po->inputs[i], policy, cmd, err) : c;
            if (r < 0) {
                rc = -1;
                break;
            }
            skip[i] = r > 0;
            continue;
        }
        uint64_t crc, sz;
        if (rs_file_checksum(AT_FDCWD, po->inputs[i], po->inputs[i], &crc, &sz, err) != 0) {
            rc = -1;
            break;
        }
        count_seen_read(sz);
        probe *p = &pr[i - lo];
        if (p->hinted && !p->summed && stored_plain(po->inputs[i])) {   /* its content: not read again */
            p->summed = 1, p->size = sz, p->none = 0;
            rs_checksum_text(crc, p->sum);
        }
        rs_held e = {.size = sz, .path = po->inputs[i], .this_run = 1};
        rs_checksum_text(crc, e.sum);
        const rs_held *was = rs_catalog_stored(&cat, sz, e.sum);
        rs_held byc;
        int c = was ? 0 : content_held(&cat, po, lo, i, pr, skip, &byc, err);
        was = c > 0 ? &byc : was;
        int r = c < 0 ? -1 : was ? seen_or_restore(g, po->ninputs, i, was, po->inputs[i], policy, cmd, err) : 0;
        if (r < 0)
            rc = -1;
        else if (r > 0)
            skip[i] = 1;
        else if (rs_catalog_add(&cat, &e) != 0)
            rc = rs_error_set(err, RS_EXIT_IO, "out of memory");
    }
    free(size);
    free(known);
    free(pr);
    rs_catalog_free(&cat);
    return rc;
}

int rs_append_seen(rs_append *g, const rs_pipeline_opts *po, size_t lo, size_t hi, rs_on_seen policy, uint8_t *skip,
                   size_t *nskipped, const char *cmd, rs_error *err)
{
    /* --on-seen again ingests every input whatever DIR holds: reading one
     * before the run to compare it (a copy's size matches) would only read
     * it twice */
    if (rs_world_rank() == 0 && !err->code && policy != RS_SEEN_AGAIN)
        seen_decide(g, po, lo, hi, policy, skip, cmd, err);
    if (rs_world_agree(err) != 0)
        return -1;
    rs_world_bcast(skip + lo, hi - lo, 0);
    if (rs_append_restore_share(g, po->ninputs, lo, hi, err) != 0)
        return -1;
    *nskipped = 0;
    for (size_t i = lo; i < hi; i++)
        *nskipped += skip[i];
    return 0;
}

/* ------------------------------------------------- after the run, before publishing
 *
 * Some inputs cannot be known before they are read: a pipe, and a file
 * whose content size its first and last bytes do not tell (several gzip
 * members, as bgzip writes or `cat a.gz b.gz`
 * makes; a zstd frame written from a pipe, which declares no size; several
 * frames). The run reads them anyway, and their content sums with them
 * (rs_reader_content: the same for one CSV whatever its compression and
 * layout, and whoever reads it); so they are compared once the run is
 * done, before anything is published. An input found held is dropped by
 * running the chunk AGAIN without it (rs_append_chunk redo): the staged
 * generation is removed and the inputs are read a second time.
 *
 * Why again rather than holding the rows of such inputs apart until the
 * check: a run's rows are interleaved batch by batch into one segment per
 * node, so holding one input's rows apart would mean a second set of
 * segments per input (or its rows in memory) and a merge before each
 * publication - for every such input, held or not, in the common case of
 * a new day delivered as bgzip. Running again costs nothing when no input
 * is held (the common case: the check is a comparison of sums the run
 * computed anyway), keeps memory what the run takes, and costs one more
 * read of the chunk's other inputs only when a copy was given. What
 * cannot be read twice - a pipe, a quarantine written in place that
 * already holds rows - stops the run instead (exit 73, nothing published),
 * unless it is the input dropped (a pipe whose content DIR holds, or a
 * pipe with the content of a file of the same run: the file is kept). */

/* Whether the input is read once only: standard input, a pipe, a FIFO. */
static int read_once(const rs_pipeline_opts *po, size_t k)
{
    struct stat st;
    return is_pipe_input(po->inputs[k], &st);
}

static const char *shown(const char *path)
{
    return rs_input_label(path);
}

/* Whether the run's inputs a and b hold the same content (none: no rows,
 * nothing to drop). */
static int same_content(const rs_input_stats *a, const rs_input_stats *b)
{
    return a->has_content && b->has_content && a->content_size && a->content_size == b->content_size &&
           a->content == b->content;
}

/* rank 0's part of rs_append_seen_after: marks in drop[k] (k: po's inputs)
 * the inputs DIR or another input of this run holds, their reasons in
 * why[k]; the number marked, or -1 with err (a dropped input's run that
 * cannot be redone, --on-seen fail). */
static long after_decide(const rs_append *g, const rs_pipeline_opts *po, const rs_pipeline_result *res,
                         rs_on_seen policy, uint8_t *drop, rs_held *why, rs_error *err)
{
    rs_catalog cat = {0};
    long ndrop = 0;
    if (g && g->opened && rs_catalog_of_dir(&cat, &g->bd) != 0) {
        rs_catalog_free(&cat);
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    }
    for (size_t i = 0; i < po->ninputs; i++) {
        const rs_input_stats *in = &res->input[i];
        int pipe = read_once(po, i);
        if (po->only_dest && po->only_dest[i])
            continue;   /* held, and read for the rows DIR lost of it (rs_append_restoring) */
        rs_read_sums rd = {in->size, in->bytes, in->checksum, in->has_checksum, in->content, in->content_size,
                           in->has_content};
        if (rs_catalog_read(&cat, &rd, pipe, &why[i])) {
            drop[i] = 1, ndrop++;
            continue;
        }
        for (size_t j = 0; j < i; j++) {
            if (drop[j] || !same_content(&res->input[j], in))
                continue;
            /* the one dropped is read again by nobody: a pipe if either is */
            size_t d = pipe || !read_once(po, j) ? i : j, keep = d == i ? j : i;
            drop[d] = 1, ndrop++;
            why[d] = (rs_held){.path = po->inputs[keep], .this_run = keep < d ? 1 : 2};
            break;
        }
    }
    rs_catalog_free(&cat);
    size_t first = 0;   /* the first input dropped */
    while (ndrop && !drop[first])
        first++;
    const char *name = shown(po->inputs[first]);
    if (ndrop && policy == RS_SEEN_FAIL)
        return on_seen(&why[first], name, policy, NULL, err);
    char where[256];
    rs_held_where(&why[first], where, sizeof where);
    for (size_t k = 0; ndrop && k < po->ninputs; k++)   /* the others are read again: can they be? */
        if (!drop[k] && read_once(po, k))
            return rs_error_set(err, RS_EXIT_EXISTS, "%s: %s; it was read with %s, which cannot be read again to "
                                "run without it: nothing published (give that input as a file, or leave %s out)",
                                name, where, shown(po->inputs[k]), name);
    if (ndrop && po->bad_rows == RS_BAD_ROW_QUARANTINE && res->rejected && po->quarantine_name &&
        rs_outfile_in_place(po->quarantine_name))
        return rs_error_set(err, RS_EXIT_EXISTS, "%s: %s; the run cannot be done again without it: its rejected "
                            "rows are written to %s already: nothing published (quarantine into a file, or leave "
                            "%s out)", name, where, po->quarantine_name, name);
    return ndrop;
}

int rs_append_seen_after(const rs_append *g, const rs_pipeline_opts *po, rs_pipeline_result *res, rs_on_seen policy,
                         rs_append_chunk *ch, rs_error *err)
{
    uint64_t v[2] = {0};
    for (size_t i = 0; i < po->ninputs; i++) {
        rs_input_stats *in = &res->input[i];
        struct stat st;
        int pipe = is_pipe_input(po->inputs[i], &st);
        /* a unit-split file's checksum, on rank 0, shared */
        v[0] = in->checksum, v[1] = (uint64_t)in->has_checksum;
        if (!in->has_checksum && !pipe && rs_world_rank() == 0 && !err->code) {
            uint64_t sz;
            if (rs_file_checksum(AT_FDCWD, po->inputs[i], po->inputs[i], &v[0], &sz, err) == 0)
                v[1] = 1;
        }
        rs_world_bcast(v, sizeof v, 0);
        in->checksum = v[0], in->has_checksum = (int)v[1];
    }
    if (rs_world_agree(err) != 0 || policy == RS_SEEN_AGAIN || !ch)
        return err->code ? -1 : 0;
    uint8_t *drop = calloc(po->ninputs + 1, 1);
    rs_held *why = calloc(po->ninputs + 1, sizeof *why);
    uint64_t ndrop = 0;
    if (!drop || !why)
        rs_error_set(err, RS_EXIT_IO, "out of memory");
    else if (rs_world_rank() == 0 && !err->code) {
        long r = after_decide(g, po, res, policy, drop, why, err);
        ndrop = r > 0 ? (uint64_t)r : 0;
    }
    if (rs_world_agree(err) == 0) {
        rs_world_bcast(&ndrop, sizeof ndrop, 0);
        rs_world_bcast(drop, po->ninputs, 0);
        /* po's inputs are those of [lo, hi) not skipped, in order */
        for (size_t i = ch->lo, k = 0; ndrop && i < ch->hi; i++) {
            if (ch->skip[i])
                continue;
            if (drop[k] && rs_world_rank() == 0)
                on_seen(&why[k], shown(po->inputs[k]), RS_SEEN_SKIP, ch->cmd, err);
            ch->skip[i] = drop[k++];
        }
        ch->redo = ndrop != 0;
        if (ch->redo)   /* the read was spent telling what these inputs are */
            for (size_t k = 0; k < po->ninputs; k++)
                count_seen_read(res->input[k].size);
    }
    free(drop);
    free(why);
    return err->code ? -1 : 0;
}

/* -------------------------------------------------------------- staging */

int rs_append_stage(rs_append *g, rs_error *err)
{
    if (rs_cluster_outdir_begin(&g->od, g->dir, RS_OUTDIR_STAGE, err) != 0)
        return -1;
    g->staged = 1;
    if (!(g->gen_tmp = rs_outdir_path(&g->od, g->gen_name)))
        rs_error_set(err, RS_EXIT_IO, "out of memory");
    else if (rs_world_rank() == 0 && rs_dir_create(g->gen_tmp, RS_FILE_USER) != 0)
        rs_error_set(err, RS_EXIT_IO, "%s: cannot create: %s", g->gen_tmp, strerror(errno));
    return rs_world_agree(err);
}

char *rs_append_path(const rs_append *g, const char *name)
{
    char *p;
    return asprintf(&p, "%s/%s", g->gen_tmp, name) < 0 ? NULL : p;
}

int rs_append_publish(rs_append *g, rs_manifest *m, rs_error *err)
{
    int upgrade = 0;
    rs_append_mark_restored(g, m);
    if (rs_world_rank() == 0 && !err->code)
        rs_gen_write_manifests(&g->bd, &g->od, g->gen, g->gen_tmp, m, &upgrade, err);
    const char *names[2] = {RS_NAME_MANIFEST, g->gen_name};
    int rc = rs_cluster_outdir_end_into(&g->od, upgrade ? names : names + 1, upgrade ? 2 : 1, err);
    g->staged = 0;   /* published or removed */
    g->files_after = g->bd.nfiles + m->nfiles;
    g->gens_after = g->bd.ngens + 2;
    return rc;
}

void rs_append_close(rs_append *g)
{
    if (g->staged)
        rs_cluster_outdir_abort(&g->od);
    if (g->locked)
        close(g->lockfd);
    if (g->opened)
        rs_bucketdir_close(&g->bd);
    free(g->gen_tmp);
    free(g->mpath);
    rs_append_restore_free(g);
    memset(g, 0, sizeof *g);
    g->lockfd = -1;
}

size_t rs_append_chunk_end(const rs_pipeline_opts *po, uint64_t every, int bytes, size_t lo)
{
    size_t n = po->ninputs;
    if (!every)
        return n;
    if (!bytes)
        return lo + every < n ? lo + (size_t)every : n;
    uint64_t sum = 0;
    size_t i = lo;
    while (i < n && sum < every) {
        struct stat st;
        sum += stat(po->inputs[i], &st) == 0 ? (uint64_t)st.st_size : 0;
        i++;
    }
    return i;
}

/* Inputs [lo, hi) of a->po into DIR: a new generation, or DIR itself when
 * it does not exist (again as an append if another run creates it first). */
static int append_chunk(const rs_append_job *a, size_t lo, size_t hi, uint8_t *skip, rs_error *err)
{
    uint64_t skipped0 = *a->inputs_skipped;   /* each attempt counts the chunk's skipped inputs anew */
    /* again when another run created DIR first (once), or when an input is
     * dropped after the run (rs_append_seen_after: at most once per input) */
    for (int races = 0;;) {
        rs_append_chunk ch = {lo, hi, skip, a->cmd, 0};
        rs_append g;
        rs_ring *ring = NULL;
        rs_pipeline_opts po = a->po, sel_po;
        const char **sel = NULL;
        size_t nskipped = 0;
        *a->inputs_skipped = skipped0;
        int raced = 0, rc = rs_append_open(&g, a->dir, err);
        if (rc == 0 && (!a->refuse || a->refuse(a->ctx, &g, err) == 0) &&
            rs_append_check(&g, &po, a->given, a->ring, &ring, err) == 0 &&
            rs_append_seen(&g, &po, lo, hi, a->on_seen, skip, &nskipped, ch.cmd, err) == 0 &&
            rs_append_select(&po, lo, hi, skip, &sel_po, &sel, err) == 0 &&
            (g.distinct = a->distinct, rs_append_restoring(&g, &sel_po, lo, hi, skip, ring, err)) == 0) {
            *a->inputs_skipped += nskipped;
            if (sel_po.ninputs)
                a->run(a->ctx, &g, &sel_po, ring, &ch, &raced, err);
        } else if (rc == 1 && rs_append_seen(NULL, &po, lo, hi, a->on_seen, skip, &nskipped, ch.cmd, err) == 0 &&
                   rs_append_select(&po, lo, hi, skip, &sel_po, &sel, err) == 0) {
            *a->inputs_skipped += nskipped;
            /* DIR is made: by the command line's ring, or the default one,
             * built only now (an append to an existing DIR takes DIR's) */
            if (sel_po.ninputs && (a->ring || (ring = rs_ring_build_default(err))))
                a->run(a->ctx, NULL, &sel_po, a->ring ? a->ring : ring, &ch, &raced, err);
        }
        free(sel);
        rs_ring_free(ring);
        rs_append_close(&g);   /* removes the staged generation unless published */
        if (ch.redo && !err->code)
            continue;
        if (!raced || races++ > 0)
            return err->code ? -1 : 0;
        rs_error_clear(err);   /* another run created DIR meanwhile: append to it */
        memset(skip + lo, 0, hi - lo);
    }
}

int rs_append_run(const rs_append_job *a, uint64_t every, int bytes, rs_error *err)
{
    size_t n = a->po.ninputs;
    uint8_t *skip = calloc(n + 1, 1);   /* skip[i]: input i skipped by its chunk (rs_append_seen) */
    if (!skip)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    for (size_t lo = 0; lo < n && !err->code;) {
        size_t hi = rs_append_chunk_end(&a->po, every, bytes, lo);
        append_chunk(a, lo, hi, skip, err);
        lo = hi;
    }
    free(skip);
    return err->code ? -1 : 0;
}

int rs_append_select(const rs_pipeline_opts *all, size_t lo, size_t hi, const uint8_t *skip, rs_pipeline_opts *po,
                     const char ***sel, rs_error *err)
{
    *po = *all;
    if (!(*sel = malloc((hi - lo + 1) * sizeof **sel)))
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    size_t n = 0;
    for (size_t i = lo; i < hi; i++)
        if (!skip[i])
            (*sel)[n++] = all->inputs[i];
    po->inputs = *sel;
    po->ninputs = n;
    return 0;
}
