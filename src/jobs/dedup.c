/* The dedup job (job_dedup.h): the library side of `ringshard dedup`.
 *
 * Pass 1 is `ringshard bucket` into a temporary area inside the output's
 * temporary directory (same ring, same router; plain by default, gzip level
 * 1 with --temp-compress gzip):
 * every copy of a key lands in the same bucket, in input order. Pass 2
 * deduplicates the buckets in parallel, one bucket per thread at a time
 * (rs_dedup_file: in memory, or split again when a bucket does not fit in
 * --memory / threads), and writes the survivors as a bucket directory with
 * the same layout and manifest as `bucket`, published atomically. With
 * --buckets DIR, pass 1 is skipped and DIR's files are the buckets.
 *
 * Two passes, not one: keeping a hash set per bucket during pass 1 and
 * compressing kept rows as they come would need, for the same bytes, every
 * bucket's pending member (up to RS_DEDUP_CHUNK of kept rows, compressed
 * in one call) held until it is full: with 1000 buckets of about 1 MB
 * that is the whole output, beside the keys, so beyond --memory
 * (docs/dedup.md, "Why two passes", has the numbers and what was measured
 * of writing an output over its temporary bucket instead).
 *
 * With --append the output is a generation of DIR (jobs/append.h) and
 * each bucket is first checked against its history: pass 1's bucket k,
 * looked up in the key indexes of DIR's files of node k (history.h; the
 * ones a history written without them lacks are built on the way, from
 * those files' rows, once), loses the rows whose key DIR holds; the rest
 * is deduplicated as usual into a segment (header line first) and its key index.
 * The duplicates report then lists every new row dropped, with where its
 * key is kept: a generation of the history, or an earlier new row.
 *
 * Under MPI every step ends with an agreement of the ranks (world.h), so
 * that the steps below keep the order of the collectives: a step that
 * fails on one rank fails on all at the same point. */
#define _GNU_SOURCE  /* syncfs */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cluster/cluster.h"
#include "cluster/world.h"
#include "rs_config.h"
#include "ringshard/dataset.h"
#include "ringshard/dedup.h"
#include "ringshard/job_dedup.h"
#include "ringshard/runplan.h"
#include "ringshard/util.h"
#include "jobs/dedup_task.h"
#include "jobs/append.h"
#include "util/filemode.h"

static char *join(const char *a, const char *b, const char *c)
{
    size_t n = strlen(a) + strlen(b) + strlen(c) + 1;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s%s%s", a, b, c);
    return p;
}


static int not_conserved(rs_error *err, const char *what, uint64_t in_rows, uint64_t in_bytes, uint64_t out_rows,
                         uint64_t out_bytes, uint64_t dup_rows, uint64_t dup_bytes, uint64_t rejected)
{
    return rs_error_set(err, RS_EXIT_IO,
                        "internal error: rows/bytes not conserved (%s: in %llu/%llu, out %llu/%llu, "
                        "duplicates removed %llu/%llu, rejected %llu rows); nothing published",
                        what, (unsigned long long)in_rows, (unsigned long long)in_bytes,
                        (unsigned long long)out_rows, (unsigned long long)out_bytes, (unsigned long long)dup_rows,
                        (unsigned long long)dup_bytes, (unsigned long long)rejected);
}

/* Conservation, checked before publishing: rows and bytes read = rows and
 * bytes written + duplicates removed (+ rejected rows, which never enter a
 * bucket). Pass 1 (inputs): every input row accepted is in one bucket.
 * Each bucket: what pass 2 read is what pass 1 wrote (or the --buckets
 * manifest lists), and read = kept + removed, counted apart. In total: the
 * inputs' rows and bytes (--buckets: the manifest's files) = kept + removed.
 * Duplicates cannot be traced back to their input (a bucket mixes the
 * inputs), so "per input" is checked up to pass 1. */
static int check_conservation(const rs_dedup_job_opts *a, size_t ninputs, const rs_pipeline_result *res,
                              const rs_bucketdir *in_bd, const rs_dedup_task *jobs, uint32_t n, rs_error *err)
{
    uint64_t in_rows = 0, in_bytes = 0, rejected = 0, b_rows = 0, b_bytes = 0;
    uint64_t out_rows = 0, out_bytes = 0, dup_rows = 0, dup_bytes = 0;
    if (a->buckets_dir) {
        in_rows = in_bd->rows, in_bytes = in_bd->bytes;  /* every generation */
        rejected = in_bd->rejected;
    } else {
        for (size_t i = 0; i < ninputs; i++) {   /* the run's (--append: those not skipped) */
            in_rows += res->input[i].rows;
            in_bytes += res->input[i].bytes;
            rejected += res->input[i].rejected;
        }
        if (rejected != res->rejected)
            return not_conserved(err, "rejected rows of the inputs", in_rows, in_bytes, 0, 0, 0, 0, res->rejected);
        for (uint32_t i = 0; i < n; i++)
            b_rows += res->dest[i].rows, b_bytes += res->dest[i].bytes;
        if (b_rows != in_rows || b_bytes != in_bytes)
            return not_conserved(err, "pass 1, inputs into buckets", in_rows, in_bytes, b_rows, b_bytes, 0, 0,
                                 rejected);
    }
    for (uint32_t i = 0; i < n; i++) {
        const rs_dedup_result *d = &jobs[i].res;
        if (d->rows_in != jobs[i].rows || d->bytes_in != jobs[i].bytes ||
            d->rows_in != d->rows + d->dup_rows || d->bytes_in != d->bytes + d->dup_bytes) {
            char what[512];
            snprintf(what, sizeof what, "bucket %s, %llu/%llu expected", jobs[i].in,
                     (unsigned long long)jobs[i].rows, (unsigned long long)jobs[i].bytes);
            return not_conserved(err, what, d->rows_in, d->bytes_in, d->rows, d->bytes, d->dup_rows, d->dup_bytes,
                                 0);
        }
        out_rows += d->rows;
        out_bytes += d->bytes;
        dup_rows += d->dup_rows;
        dup_bytes += d->dup_bytes;
    }
    if (in_rows != out_rows + dup_rows || in_bytes != out_bytes + dup_bytes)
        return not_conserved(err, "total", in_rows, in_bytes, out_rows, out_bytes, dup_rows, dup_bytes, rejected);
    return 0;
}

/* One run's state, shared by the steps. */
typedef struct {
    const rs_dedup_job_opts *o;
    rs_pipeline_opts po;       /* o->pipeline, with --buckets' or DIR's dialect and key */
    const rs_ring *ring;       /* o->ring, or ring_owned */
    rs_ring *ring_owned;       /* --buckets or --append: the manifest's ring */
    rs_bucketdir bd;           /* --buckets */
    char *in_mpath;            /* --buckets: DIR/manifest.json, for messages */
    rs_append *g;                 /* --append to an existing DIR: the generation being added */
    int grow;                  /* --append: indexes, the per-row report, schema 2 */
    rs_append_chunk *ch;          /* --append: the chunk of inputs this run reads (NULL: none) */
    int report_more;           /* --commit-every: an earlier generation of this command published the report */
    int report_cut;            /* the --duplicates pipe's reader left (rs_dedup_report_concat) */
    unsigned long long report_written; /* the bytes it took */
    rs_outdir od;              /* the output (appending: g->od) */
    rs_cluster_quarantine q;
    rs_pipeline_result res;    /* pass 1 */
    rs_manifest m;
    rs_dedup_task *jobs;
    uint32_t njobs;
    char *pass1;               /* the temporary buckets' directory */
    char **out_names, **index_names;
    const char *header;
    size_t header_len;
    rs_dedup_pass pass;        /* pass 2's options, and the history */
    rs_index_at *at;           /* --append: where each history file's index is */
    rs_node_index nix;         /* the ring's nodes by name: a lookup per file of a directory */
    size_t *hist_at;           /* --append: [node] where its files start in DIR's list, + 1 (0: none) */
    int out_compress, out_level; /* the output's (--append: DIR's) */
    double t1, t2, t2_start;   /* pass 1, pass 2 seconds; when pass 2 began */
    uint64_t *in_rows, *kept; /* with pass 1's input_rows: [njobs * ninputs] each bucket's rows of each input,
                                 and those kept (files[].runs); NULL: none counted */
} dstate;

static rs_outdir *od_of(dstate *s)
{
    return s->g ? &s->g->od : &s->od;
}

/* A file of the output: in the staged generation, or the output itself. */
static char *out_path(dstate *s, const char *name)
{
    return s->g ? rs_append_path(s->g, name) : rs_outdir_path(&s->od, name);
}

/* Under MPI each rank deduplicated buckets [lo, hi): every rank gets every
 * bucket's result (each is zero outside its owner, so a sum gathers them),
 * and the sizes and CRCs of the history indexes each built. */
enum { R_ROWS_IN, R_BYTES_IN, R_ROWS, R_BYTES, R_DUP_ROWS, R_DUP_BYTES, R_FILE_BYTES, R_CRC, R_DUP_KEYS, R_SPLITS,
       R_STREAMED, R_INDEX_BYTES, R_INDEX_CRC, R_H_ROWS, R_H_BYTES, R_H_READ, R_REREAD, R_HEADER_BYTES,
       R_CONFIRMED, R_CONFIRM_BYTES, R_STORED_CRC, R_FILTER_BYTES, R_FILTER_PASSES, R_KEPT_OK, R_FIELDS };

static void share_results(dstate *s, size_t lo, size_t hi)
{
    uint32_t n = s->njobs;
    size_t nb = s->g ? s->g->bd.nfiles : 0;
    size_t nk = s->kept ? (size_t)n * s->po.ninputs : 0;   /* each bucket's rows kept per input */
    uint64_t *v = calloc((size_t)n * R_FIELDS + 2 * nb + nk + 1, sizeof *v);
    if (!v)
        abort();
    for (size_t i = lo; i < hi; i++) {
        const rs_dedup_task *j = &s->jobs[i];
        const rs_dedup_result *d = &j->res;
        uint64_t *f = v + i * R_FIELDS;
        f[R_ROWS_IN] = d->rows_in, f[R_BYTES_IN] = d->bytes_in, f[R_ROWS] = d->rows, f[R_BYTES] = d->bytes;
        f[R_DUP_ROWS] = d->dup_rows, f[R_DUP_BYTES] = d->dup_bytes, f[R_FILE_BYTES] = d->file_bytes;
        f[R_CRC] = d->crc, f[R_DUP_KEYS] = d->dup_keys, f[R_SPLITS] = d->splits, f[R_STREAMED] = d->streamed;
        f[R_INDEX_BYTES] = d->index_bytes, f[R_INDEX_CRC] = d->index_crc32;
        f[R_H_ROWS] = j->hres.dropped_rows, f[R_H_BYTES] = j->hres.dropped_bytes;
        f[R_H_READ] = j->hres.index_bytes_read, f[R_REREAD] = j->rows_reread;
        f[R_HEADER_BYTES] = d->header_bytes, f[R_STORED_CRC] = d->stored_crc;
        f[R_CONFIRMED] = j->hres.keys_confirmed, f[R_CONFIRM_BYTES] = j->hres.confirm_bytes;
        f[R_FILTER_BYTES] = j->hres.filter_bytes, f[R_FILTER_PASSES] = j->hres.filter_passes;
        f[R_KEPT_OK] = (uint64_t)d->kept_rows_ok;
    }
    uint64_t *b = v + (size_t)n * R_FIELDS;   /* the indexes built, by their builder */
    for (size_t k = 0; k < nb; k++)
        b[2 * k] = s->pass.built_bytes[k], b[2 * k + 1] = s->pass.built_crc[k];
    uint64_t *kept = b + 2 * nb;   /* (zeros for the buckets of other ranks) */
    if (nk)
        memcpy(kept, s->kept, nk * sizeof *kept);
    rs_world_sum_u64(v, (size_t)n * R_FIELDS + 2 * nb + nk);
    if (nk)
        memcpy(s->kept, kept, nk * sizeof *kept);
    for (uint32_t i = 0; i < n; i++) {
        const uint64_t *f = v + (size_t)i * R_FIELDS;
        rs_dedup_task *j = &s->jobs[i];
        j->res = (rs_dedup_result){f[R_ROWS_IN], f[R_BYTES_IN], f[R_ROWS], f[R_BYTES], f[R_DUP_ROWS], f[R_DUP_BYTES],
                                   f[R_FILE_BYTES], (uint32_t)f[R_CRC], f[R_DUP_KEYS], (uint32_t)f[R_SPLITS],
                                   (uint32_t)f[R_STREAMED], f[R_INDEX_BYTES], (uint32_t)f[R_INDEX_CRC],
                                   f[R_HEADER_BYTES], (uint32_t)f[R_STORED_CRC], (int)f[R_KEPT_OK]};
        j->hres.dropped_rows = f[R_H_ROWS], j->hres.dropped_bytes = f[R_H_BYTES];
        j->hres.index_bytes_read = f[R_H_READ], j->rows_reread = f[R_REREAD];
        j->hres.keys_confirmed = f[R_CONFIRMED], j->hres.confirm_bytes = f[R_CONFIRM_BYTES];
        j->hres.filter_bytes = f[R_FILTER_BYTES], j->hres.filter_passes = f[R_FILTER_PASSES];
    }
    for (size_t k = 0; k < nb; k++)
        s->pass.built_bytes[k] = b[2 * k], s->pass.built_crc[k] = (uint32_t)b[2 * k + 1];
    free(v);
}

/* --buckets: opens the directory once (every bucket is read through it),
 * checks it is a full bucket directory and builds its ring; the dialect
 * and key come from its manifest. Collective (rs_cluster_bucketdir_open). */
static int open_buckets(dstate *s, rs_error *err)
{
    char *mpath = s->in_mpath = rs_name_manifest_path(s->o->buckets_dir);
    if (!mpath)
        rs_error_set(err, RS_EXIT_IO, "out of memory");
    if (rs_world_agree(err) != 0 || rs_cluster_bucketdir_open(&s->bd, s->o->buckets_dir, err) != 0)  /* collective */
        return -1;
    const rs_manifest *in_m = &s->bd.m;
    if (!in_m->kind || strcmp(in_m->kind, "buckets") != 0)
        return rs_error_set(err, RS_EXIT_DATA, "%s: kind '%s': dedup reads bucket directories", mpath,
                            in_m->kind ? in_m->kind : "?");
    if (in_m->keys_only)
        return rs_error_set(err, RS_EXIT_DATA, "%s: a --keys-only bucket directory has no rows to keep", mpath);
    /* the ring every row's placement is checked against */
    if (!(s->ring = s->ring_owned = rs_manifest_ring(in_m, mpath, NULL, NULL, err)))
        return -1;
    s->po.dialect.delim = in_m->delimiter;
    s->po.header = in_m->header;
    s->po.key = in_m->key;
    s->po.key_sep = in_m->key_sep ? in_m->key_sep : '|';
    s->header = in_m->header_line;
    s->header_len = s->header ? strlen(s->header) : 0;
    return 0;
}

/* The temporary buckets' directory inside the output's temporary
 * directory, and the quarantine file. Agreed on by every rank. */
static int begin_pass1_dir(dstate *s, rs_error *err)
{
    s->pass1 = rs_outdir_path(od_of(s), RS_NAME_SCRATCH);
    if (!s->pass1 || (rs_world_rank() == 0 && rs_dir_create(s->pass1, RS_FILE_SCRATCH) != 0))
        rs_error_set(err, RS_EXIT_IO, "%s: cannot create: %s", s->pass1 ? s->pass1 : s->o->outdir, strerror(errno));
    if (rs_world_agree(err) != 0 || rs_cluster_quarantine_begin(&s->po, od_of(s), &s->q, err) != 0 ||
        (s->report_more && rs_cluster_quarantine_continue(&s->q, &s->po, err) != 0))  /* --commit-every */
        return -1;
    return 0;
}

/* ------------------------------------------------------------- history */

/* Where history file k's key index is: its own (beside it), one a later
 * generation built (in that generation's directory), or none yet: then
 * this run builds it into its own generation. */
static int locate_index(dstate *s, size_t k, rs_error *err)
{
    const rs_bucketdir *bd = &s->g->bd;
    rs_index_at *at = &s->at[k];
    char *name;
    uint64_t size;
    uint32_t crc;
    int by_row, r = rs_bucketdir_index_of(bd, k, &name, &size, &crc, &by_row);
    at->dirfd = bd->fd;
    if (r < 0)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    if (r > 0) {
        at->name = name;
        return 0;
    }
    char *bname = rs_name_keyidx_built(bd->files[k]->node, bd->file_gen[k]);
    at->built = bname ? out_path(s, bname) : NULL;
    at->name = bname;  /* its name in the generation's directory */
    return at->built ? 0 : rs_error_set(err, RS_EXIT_IO, "out of memory");
}

/* --append: the history's modes must be this run's (an index holds keys
 * or rows), and its indexes located. */
static int setup_history(dstate *s, rs_error *err)
{
    const rs_bucketdir *bd = &s->g->bd;
    const char *want = s->o->mode == RS_DEDUP_BY_ROW ? "row" : "first";
    for (size_t g = 0; g <= bd->ngens; g++) {
        const rs_manifest *m = g ? &bd->gens[g - 1] : &bd->m;
        if (m->dedup && strcmp(m->dedup, want) != 0)
            return rs_error_set(err, RS_EXIT_USAGE, "%s: DIR's rows are distinct %s (its key indexes hold %s); this "
                                "run asks %s",
                                s->g->mpath, !strcmp(m->dedup, "row") ? "by row" : "by key",
                                !strcmp(m->dedup, "row") ? "rows" : "keys", want[0] == 'r' ? "--by row" : "--keep first");
    }
    size_t n = bd->nfiles;
    s->at = calloc(n + 1, sizeof *s->at);
    s->pass.built_bytes = calloc(n + 1, sizeof *s->pass.built_bytes);
    s->pass.built_crc = calloc(n + 1, sizeof *s->pass.built_crc);
    if (!s->at || !s->pass.built_bytes || !s->pass.built_crc)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    size_t missing = 0;
    for (size_t k = 0; k < n; k++) {
        if (locate_index(s, k, err) != 0)
            return -1;
        missing += s->at[k].built != NULL;
    }
    if (missing && !s->o->quiet && rs_world_rank() == 0)
        fprintf(stderr, "ringshard dedup: %s: %zu of its %zu files have no key index yet: building them (their rows "
                        "are read this once)\n", s->o->outdir, missing, n);
    s->pass.bd = bd;
    s->pass.at = s->at;
    return 0;
}

/* --append: s->hist_at, each node's base file in DIR's list (the first
 * one of that node), found once for all tasks. */
static int history_starts(dstate *s, rs_error *err)
{
    const rs_bucketdir *bd = &s->g->bd;
    const rs_nodes *nodes = rs_ring_nodes(s->ring);
    if (!(s->hist_at = calloc(nodes->count + 1, sizeof *s->hist_at)))
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    for (size_t k = 0; k < bd->nfiles; k++) {
        int64_t n = rs_bucketdir_segment(bd, k) ? -1
                    : rs_node_index_find(&s->nix, nodes, bd->files[k]->node ? bd->files[k]->node : "");
        if (n >= 0 && !s->hist_at[n])
            s->hist_at[n] = k + 1;
    }
    return 0;
}

/* Task i's history: its node's files in DIR. */
static void task_history(dstate *s, rs_dedup_task *j, uint32_t node)
{
    const rs_bucketdir *bd = &s->g->bd;
    size_t k = s->hist_at[node];
    if (k-- == 0)
        return;
    size_t e = k + 1;   /* the base file, then its segments */
    while (e < bd->nfiles && bd->file_base[e] == bd->file_base[k])
        e++;
    j->part0 = k;
    j->nparts = e - k;
}

/* ---------------------------------------------------------------- tasks */

/* The buckets' output names (rs_data_file of each node, --buckets too),
 * no two alike (only two node names cut at the limit with the same hash
 * could be: ringshard/filename.h), and their paths in the output. */
static int output_names(dstate *s, int compress, rs_error *err)
{
    const char **nodes = malloc((s->njobs + 1) * sizeof *nodes);
    if (!nodes)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    for (uint32_t i = 0; i < s->njobs; i++)
        nodes[i] = s->jobs[i].node;
    s->out_names = rs_data_files(nodes, NULL, s->njobs, compress, err);
    free(nodes);
    for (uint32_t i = 0; s->out_names && i < s->njobs; i++)
        if (!(s->jobs[i].out = out_path(s, s->out_names[i])))
            return rs_error_set(err, RS_EXIT_IO, "out of memory");
    return s->out_names ? 0 : -1;
}

/* The buckets: their input, output and --duplicates part paths, and their
 * output names (output_names). */
static int setup_tasks(dstate *s, rs_error *err)
{
    const rs_dedup_job_opts *o = s->o;
    const rs_manifest *in_mp = &s->bd.m;
    s->njobs = o->buckets_dir ? (uint32_t)in_mp->nfiles : rs_ring_nodes(s->ring)->count;
    s->jobs = calloc(s->njobs ? s->njobs : 1, sizeof *s->jobs);
    s->index_names = calloc(s->njobs ? s->njobs : 1, sizeof *s->index_names);
    if (!s->jobs || !s->index_names)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    if (rs_node_index_build(&s->nix, rs_ring_nodes(s->ring), err) != 0 ||
        (s->g && !o->buckets_dir && history_starts(s, err) != 0))
        return -1;
    size_t k = 0;  /* --buckets: the directory's files, node by node (bucketdir.h) */
    for (uint32_t i = 0; i < s->njobs; i++) {
        rs_dedup_task *j = &s->jobs[i];
        if (o->buckets_dir) {
            const rs_manifest_file *f = &in_mp->files[i];
            int64_t node = f->node ? rs_node_index_find(&s->nix, rs_ring_nodes(s->ring), f->node) : -1;
            if (node < 0)
                return rs_error_set(err, RS_EXIT_DATA, "%s: file %s belongs to node '%s', not on its ring",
                                    s->in_mpath, f->file, f->node ? f->node : "");
            j->in = join(o->buckets_dir, "/", f->file);
            j->in_name = f->file;
            j->node = f->node;
            j->place = (rs_placement){s->ring, (uint32_t)node};
            /* the node's base file, then its segments: one bucket */
            size_t k0 = k;
            j->check = (rs_dedup_check){0, 0, 0, 0, s->in_mpath, f->node, &s->pass.o.keyspec, rs_placed_on, &j->place};
            for (; k < s->bd.nfiles && s->bd.file_base[k] == i; k++) {
                const rs_manifest_file *part = s->bd.files[k];
                j->check.crc = rs_crc32_combine(j->check.crc, part->crc32, part->bytes);
                j->check.rows += part->rows;
                j->check.bytes += part->bytes;
                j->check.file_bytes += part->file_bytes;
            }
            j->more = s->bd.names + k0 + 1;
            j->more_paths = (const char *const *)s->bd.paths + k0 + 1;
            j->more_files = (const rs_manifest_file *const *)s->bd.files + k0 + 1;
            j->nmore = k - k0 - 1;
            j->rows = j->check.rows;
            j->bytes = j->check.bytes;
        } else {
            const char *node = rs_ring_nodes(s->ring)->names[i];
            s->index_names[i] = s->grow ? rs_name_keyidx(node) : NULL;
            j->in = rs_name_scratch(s->pass1, i, RS_SCRATCH_ROWS, o->temp_compress);
            j->node = node;
            j->place = (rs_placement){s->ring, i};
            if (s->grow && (!s->index_names[i] || !(j->index = out_path(s, s->index_names[i])) ||
                            !(j->filtered = rs_name_scratch(s->pass1, i, RS_SCRATCH_FILTERED, 0))))
                return rs_error_set(err, RS_EXIT_IO, "out of memory");
            if (s->g)
                task_history(s, j, i);
        }
        j->dups = o->duplicates ? rs_name_scratch(s->pass1, i, RS_SCRATCH_DUPS, 0) : NULL;
        if (!j->in || (o->duplicates && !j->dups))
            return rs_error_set(err, RS_EXIT_IO, "out of memory");
    }
    return output_names(s, o->buckets_dir ? o->compress : s->out_compress, err);
}

/* Pass 1: the inputs into the temporary buckets (whole buckets on the
 * shared file system under MPI). */
/* Each bucket's rows of each input, as pass 1 counted them (its
 * input_rows), for pass 2 to count the rows it keeps of each: the
 * manifest's files[].runs. None when pass 1 did not count them. */
static void bucket_input_rows(dstate *s)
{
    size_t ni = s->po.ninputs, n = (size_t)s->njobs * ni;
    if (!s->res.input_rows || !n || !(s->in_rows = malloc(n * sizeof *s->in_rows)) ||
        !(s->kept = calloc(n, sizeof *s->kept))) {
        free(s->in_rows), s->in_rows = NULL;
        return;
    }
    for (uint32_t d = 0; d < s->njobs; d++) {
        for (size_t i = 0; i < ni; i++)
            s->in_rows[d * ni + i] = s->res.input[i].dest_rows[d];
        s->jobs[d].in_rows = s->in_rows + d * ni, s->jobs[d].kept_rows = s->kept + d * ni;
        s->jobs[d].nin_rows = ni;
    }
}

static int run_pass1(dstate *s, rs_error *err)
{
    char **paths = malloc((s->njobs ? s->njobs : 1) * sizeof *paths);
    if (!paths)
        abort();  /* a few KiB: not worth a path that other ranks must follow */
    for (uint32_t i = 0; i < s->njobs; i++)
        paths[i] = s->jobs[i].in;
    rs_pipeline_route_by_ring(&s->po, s->ring);  /* njobs == the node count here */
    s->po.dest_paths = (const char *const *)paths;
    s->po.dest_scratch = 1;
    s->po.compress = s->o->temp_compress;
    s->po.level = 1;
    s->po.input_checksum = 1;
    s->po.input_rows = rs_pipeline_wants_input_rows(&s->po);
    char label[64];
    if (s->g) {
        snprintf(label, sizeof label, "generation %llu", (unsigned long long)s->g->gen);
        s->po.progress_label = label;
    }
    int prc = rs_cluster_pipeline_run(&s->po, &s->res, err);
    s->po.progress_label = NULL;  /* whole buckets on the shared file system */
    free(paths);
    s->po.dest_paths = NULL;
    s->po.dest_scratch = 0;
    s->po.input_rows = 0;
    if (prc != 0 || rs_append_seen_after(s->g, &s->po, &s->res, s->o->on_seen, s->ch, err) != 0)
        return -1;
    if (s->ch && s->ch->redo)
        return 1;   /* an input dropped: nothing of this run is published */
    for (uint32_t i = 0; i < s->njobs; i++) {
        s->jobs[i].rows = s->res.dest[i].rows;
        s->jobs[i].bytes = s->res.dest[i].bytes;
    }
    bucket_input_rows(s);
    s->header = s->res.header;
    s->header_len = s->res.header_len;
    if (s->g && !s->header && s->g->bd.m.header) {  /* every new input empty: the key is DIR's */
        s->header = s->g->bd.m.header_line;
        s->header_len = s->header ? strlen(s->header) : 0;
    }
    return 0;
}

/* Pass 2's options. */
static int pass2_opts(dstate *s, int threads, rs_error *err)
{
    const rs_dedup_job_opts *jo = s->o;
    rs_dedup_opts *o = &s->pass.o;
    o->dialect = s->po.dialect;
    if (!o->dialect.max_record)
        o->dialect.max_record = (size_t)(s->po.memory / 16);
    o->header = s->po.header;
    o->mode = jo->mode;
    o->codec = s->po.codec;
    o->compress = s->out_compress;
    o->level = s->out_level;
    o->tmpdir = s->pass1;
    o->in_dirfd = s->bd.fd;  /* --buckets: jobs[].in_name are under it */
    uint64_t memory = s->po.memory;
    if (s->grow) {
        /* --append fills its budgets (the new keys' parts, the key indexes
         * being written): what the process keeps apart from them, its code
         * and the ring, as pass 1 counts it, is not theirs */
        uint64_t kept = RS_MEMORY_FIXED + s->po.held;
        memory = memory > 2 * kept ? memory - kept : memory / 2;
    }
    o->budget = memory / (uint64_t)(threads > 0 ? threads : 1);
    s->pass.append = s->grow;
    s->pass.segments = s->g != NULL;
    /* --buckets checks every row's placement by the key, in any mode, as
     * does --append building an index of the history. With a header but
     * none read (every input empty, allowed by --allow-empty) there is no
     * row to key: a key named by the header it lacks is no error, as for
     * bucket, and column 1 stands in. */
    const char *key = s->po.header && !s->header ? NULL : s->po.key;
    if ((jo->mode != RS_DEDUP_BY_ROW || jo->buckets_dir || s->g) &&
        rs_dedup_keyspec(key, s->po.key_sep, &o->dialect, s->header, s->header_len, &o->keyspec, err) != 0)
        return -1;
    return 0;
}

/* Pass 2 on this rank's buckets, then every rank's results shared and
 * conservation checked; the temporary buckets are removed. */
static int run_pass2(dstate *s, rs_error *err)
{
    const rs_dedup_job_opts *jo = s->o;
    int threads = rs_run_threads(&s->po);
    if (pass2_opts(s, threads, err) != 0)
        return -1;
    double t2s = rs_now();
    /* Under MPI each rank takes a contiguous range of buckets, balanced by
     * bytes: a failure of the lowest rank is that of the lowest bucket. */
    size_t blo = 0, bhi = s->njobs;
    if (rs_world_size() > 1) {
        uint64_t *w = malloc((s->njobs ? s->njobs : 1) * sizeof *w);
        if (!w)
            abort();
        for (uint32_t i = 0; i < s->njobs; i++)
            w[i] = s->jobs[i].bytes + 4096;
        rs_cluster_partition(w, s->njobs, rs_world_size(), rs_world_rank(), &blo, &bhi);
        free(w);
    }
    rs_dedup_pass2(s->jobs + blo, (uint32_t)(bhi - blo), (uint32_t)blo, &s->pass, threads, err);
    if (rs_world_size() > 1 && rs_world_rank() != 0 && bhi > blo && !err->code) {
        /* on a network file system rank 0's fsyncs at publication do not
         * reach this rank's writes: flush them first */
        int fd = open(s->pass1, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || syncfs(fd) != 0)
            rs_error_set(err, RS_EXIT_IO, "%s: sync failed: %s", s->pass1, strerror(errno));
        if (fd >= 0)
            close(fd);
    }
    if (rs_world_agree(err) != 0)
        return -1;
    if (rs_world_size() > 1)
        share_results(s, blo, bhi);
    if (check_conservation(jo, s->po.ninputs, &s->res, &s->bd, s->jobs, s->njobs, err) != 0)
        return -1;
    for (size_t i = blo; i < bhi; i++)
        if (!jo->buckets_dir)
            unlink(s->jobs[i].in);
    s->t2_start = t2s;
    return 0;
}

/* ------------------------------------------------------------- manifest */

/* The manifest's inputs: pass 1's, or --buckets' every generation's. */
static int manifest_inputs(dstate *s, rs_manifest *m, rs_error *err)
{
    if (s->o->buckets_dir) {  /* every generation's inputs: this output is a directory of its own */
        if (rs_bucketdir_input_records(&s->bd, 1, &m->inputs, &m->ninputs) != 0)
            return rs_error_set(err, RS_EXIT_IO, "out of memory");
        m->rejected = s->bd.rejected;
        return 0;
    }
    m->rejected = s->res.rejected;
    return rs_manifest_inputs(m, &s->po, &s->res, err);
}

/* File f's runs from its rows kept of each of m's inputs (kept[ninputs]),
 * as rs_manifest_file_take_runs says, unless an input of m restores rows
 * (whose ordinals are not counted from 0). 0, or -1 out of memory. */
static int kept_runs(const rs_manifest *m, const uint64_t *kept, rs_manifest_file *f)
{
    for (size_t i = 0; i < m->ninputs; i++)
        if (m->inputs[i].nrestored || m->inputs[i].nrestored_rows)
            return 0;
    rs_manifest_run *v = malloc((m->ninputs + 1) * sizeof *v);
    size_t n = 0;
    if (!v)
        return -1;
    for (size_t i = 0; i < m->ninputs; i++)
        if (kept[i])
            v[n++] = (rs_manifest_run){i, 0, kept[i]};
    rs_manifest_file_take_runs(f, v, n);
    return 0;
}

/* The manifest's files: one per bucket; a generation lists only the
 * buckets that kept rows (the others' segment and index are removed). */
static int manifest_files(dstate *s, rs_manifest *m, rs_error *err)
{
    m->files = calloc(s->njobs ? s->njobs : 1, sizeof *m->files);
    if (!m->files)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    for (uint32_t i = 0; i < s->njobs; i++) {
        const rs_dedup_result *d = &s->jobs[i].res;
        if (s->g && d->rows == 0) {
            if ((unlink(s->jobs[i].out) != 0 && errno != ENOENT) ||
                (s->jobs[i].index && unlink(s->jobs[i].index) != 0 && errno != ENOENT))
                return rs_error_set(err, RS_EXIT_IO, "%s: cannot remove: %s", s->jobs[i].out, strerror(errno));
            continue;
        }
        rs_manifest_file *f = &m->files[m->nfiles++];
        *f = (rs_manifest_file){.file = s->out_names[i], .node = (char *)s->jobs[i].node, .rows = d->rows,
                                .bytes = d->bytes, .file_bytes = d->file_bytes, .header_bytes = d->header_bytes,
                                .crc32 = d->crc, .stored_crc32 = d->stored_crc, .has_stored_crc32 = 1};
        m->segment_header |= s->g && d->header_bytes;
        if (s->grow) {
            f->index = s->index_names[i];
            f->index_bytes = d->index_bytes;
            f->index_crc32 = d->index_crc32;
        }
        m->rows += d->rows;
        m->bytes += d->bytes;
        if (d->kept_rows_ok && s->kept && kept_runs(m, s->kept + (size_t)i * s->po.ninputs, f) != 0)
            return rs_error_set(err, RS_EXIT_IO, "out of memory");
    }
    return 0;
}

/* A generation's "indexes": the history indexes this run built. */
static int manifest_indexes(dstate *s, rs_manifest *m, rs_error *err)
{
    const rs_bucketdir *bd = &s->g->bd;
    size_t n = 0;
    for (size_t k = 0; k < bd->nfiles; k++)
        n += s->at[k].built != NULL;
    if (!n)
        return 0;
    if (!(m->indexes = calloc(n, sizeof *m->indexes)))
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    for (size_t k = 0; k < bd->nfiles; k++)
        if (s->at[k].built)
            m->indexes[m->nindexes++] = (rs_manifest_index){bd->file_gen[k], bd->files[k]->file, (char *)s->at[k].name,
                                                            s->pass.built_bytes[k], s->pass.built_crc[k]};
    return 0;
}

/* The manifest: bucket's, with the survivors' files. */
static int write_manifest(dstate *s, rs_error *err)
{
    const rs_dedup_job_opts *o = s->o;
    const rs_manifest *in_mp = &s->bd.m;
    rs_manifest *m = &s->m;
    rs_shaping sh = {o->buckets_dir ? in_mp->key : s->po.key, s->po.key_sep, s->po.dialect.delim, s->po.header,
                     s->out_compress, s->out_level, 0};
    rs_manifest_shape(m, "buckets", o->buckets_dir ? in_mp->ring_description : rs_ring_description(s->ring),
                      o->buckets_dir ? in_mp->ring_fingerprint : rs_ring_fingerprint(s->ring), &sh, s->header);
    if (s->grow)
        m->dedup = o->mode == RS_DEDUP_BY_ROW ? "row" : "first";
    if (manifest_inputs(s, m, err) != 0 || manifest_files(s, m, err) != 0 ||
        (s->g && manifest_indexes(s, m, err) != 0))
        return -1;
    if (s->g)
        return 0;   /* rs_append_publish writes it, as the generation's */
    if (s->grow)
        rs_gen_first(m);
    return rs_outdir_manifest(&s->od, m, err);
}

/* Rank 0's part before publication: the --duplicates report (renamed with
 * the publication), the temporary buckets' directory removed, the
 * manifest. Its errors are agreed on at publication. */
static int finish_output(dstate *s, rs_error *err)
{
    const rs_dedup_job_opts *o = s->o;
    if (o->duplicates) {
        const char *dtmp = rs_outdir_side(od_of(s), o->duplicates, err);   /* renamed with the publication */
        char **parts = dtmp ? malloc((s->njobs ? s->njobs : 1) * sizeof *parts) : NULL;
        if (dtmp && !parts)
            rs_error_set(err, RS_EXIT_IO, "out of memory");
        for (uint32_t i = 0; parts && i < s->njobs; i++)
            parts[i] = s->jobs[i].dups;
        /* after an earlier generation of this command, the report goes on
         * from the one it published (a stream already has its lines) */
        const char *prev = s->report_more && dtmp != o->duplicates ? o->duplicates : NULL;
        unsigned long long w = 0;
        int drc = parts ? rs_dedup_report_concat(dtmp, o->duplicates, prev, parts, s->njobs, &s->report_cut, &w, err)
                        : -1;
        s->report_written += w;
        free(parts);
        if (drc != 0)
            return -1;
    }
    if (rmdir(s->pass1) != 0)
        return rs_error_set(err, RS_EXIT_IO, "%s: cannot remove: %s", s->pass1, strerror(errno));
    s->t2 = rs_now() - s->t2_start;
    return write_manifest(s, err);
}

/* What the summary says, from every bucket's result. */
static void fill_result(const dstate *s, rs_dedup_job_result *r)
{
    uint32_t big = 0;
    r->buckets = s->njobs;
    for (uint32_t i = 0; i < s->njobs; i++) {
        const rs_dedup_task *j = &s->jobs[i];
        const rs_dedup_result *d = &j->res;
        r->rows_in += d->rows_in;
        r->rows += d->rows;
        r->bytes_in += d->bytes_in;
        r->bytes += d->bytes;
        r->dup_keys += d->dup_keys;
        r->split_buckets += d->splits > 0;
        r->splits += d->splits;
        r->streamed += d->streamed;
        r->history_rows += j->hres.dropped_rows;
        r->repeat_rows += d->dup_rows - j->hres.dropped_rows;
        r->index_read += j->hres.index_bytes_read;
        r->keys_confirmed += j->hres.keys_confirmed;
        r->confirm_bytes += j->hres.confirm_bytes;
        r->filter_bytes += j->hres.filter_bytes;
        r->filter_passes += j->hres.filter_passes;
        r->rows_reread += j->rows_reread;
        if (d->bytes_in > s->jobs[big].res.bytes_in)
            big = i;
    }
    if (s->njobs && !r->largest_node) {
        r->largest_node = strdup(s->jobs[big].node);
        r->largest_rows_in = s->jobs[big].res.rows_in;
        r->largest_bytes_in = s->jobs[big].res.bytes_in;
        r->largest_rows = s->jobs[big].res.rows;
    }
    r->pass1_seconds += s->t1;
    r->pass2_seconds += s->t2;
    r->rejected += s->m.rejected;
    if (!s->g)
        return;
    const rs_bucketdir *bd = &s->g->bd;
    r->history_bytes = r->index_bytes = 0;   /* the history of the command's last generation */
    for (size_t k = 0; k < bd->nfiles; k++) {
        r->history_bytes += bd->files[k]->file_bytes;
        r->indexes_built += s->at[k].built != NULL;
        r->index_bytes += s->at[k].built ? s->pass.built_bytes[k] : bd->files[k]->index_bytes;
    }
    for (size_t g = 0; g < bd->ngens; g++)
        for (size_t x = 0; x < bd->gens[g].nindexes; x++)
            r->index_bytes += bd->gens[g].indexes[x].index_bytes;
}

static void free_state(dstate *s)
{
    for (size_t i = 0; s->m.files && i < s->m.nfiles; i++)
        free(s->m.files[i].runs);
    free(s->m.inputs);
    free(s->m.files);
    free(s->in_rows);
    free(s->kept);
    free(s->m.indexes);
    rs_bucketdir_close(&s->bd);
    free(s->in_mpath);
    rs_pipeline_result_free(&s->res);
    for (uint32_t i = 0; s->jobs && i < s->njobs; i++) {
        free(s->jobs[i].in);
        free(s->jobs[i].out);
        free(s->jobs[i].dups);
        free(s->jobs[i].index);
        free(s->jobs[i].filtered);
        free(s->out_names ? s->out_names[i] : NULL);
        free(s->index_names[i]);
    }
    for (size_t k = 0; s->at && s->g && k < s->g->bd.nfiles; k++) {
        free((char *)s->at[k].name);
        free(s->at[k].built);
    }
    free(s->at);
    free(s->hist_at);
    rs_node_index_free(&s->nix);
    free(s->pass.built_bytes);
    free(s->pass.built_crc);
    free(s->jobs);
    free(s->out_names);
    free(s->index_names);
    free(s->pass1);
    rs_ring_free(s->ring_owned);
}

/* ------------------------------------------------------------------ runs */

/* The output begins: a new directory, or (appending) the staged
 * generation with DIR's history located. */
static int begin_output(dstate *s, rs_error *err)
{
    if (!s->g)
        return rs_cluster_outdir_begin(&s->od, s->o->outdir, s->o->force, err);
    if (rs_append_stage(s->g, err) != 0)
        return -1;
    return setup_history(s, err);
}

/* One run: the output is a new DIR (g NULL; with ch, --append, one that
 * will take appends), or the generation g adds to DIR; ch: the chunk of
 * the inputs it reads. *raced: a DIR created meanwhile by another run
 * (grow); ch->redo: an input dropped after pass 1, nothing published. */
static int run_once(const rs_dedup_job_opts *o, const rs_pipeline_opts *po, const rs_ring *ring, rs_append *g,
                    rs_append_chunk *ch, rs_dedup_job_result *r, int *raced, rs_error *err)
{
    int grow = ch != NULL;
    dstate s;
    memset(&s, 0, sizeof s);
    s.o = o;
    s.po = *po;
    s.po.key_sep_check = 1;          /* equal joined keys must be equal parts (docs/dedup.md) */
    s.out_compress = po->compress;   /* the output's: pass 1 writes its own (run_pass1) */
    s.out_level = po->level;
    s.ring = ring;
    s.g = g;
    s.grow = grow;
    s.ch = ch;
    s.report_more = r->published;
    *raced = 0;
    /* with a ring given, its build was agreed on by the caller */
    int begun = 0, agreed = !o->buckets_dir;
    double t0 = rs_now();
    if (o->buckets_dir && open_buckets(&s, err) != 0)
        goto out;
    /* under MPI, a rank that failed so far (a manifest it could not read)
     * stops every rank here; see also out: */
    if (rs_world_agree_once(&agreed, err) != 0)
        goto out;
    rs_pipeline_threads_ready(rs_run_threads(&s.po), err);
    if (begin_output(&s, err) != 0) {
        *raced = grow && !g && err->code == RS_EXIT_EXISTS;
        goto out;
    }
    begun = 1;
    if (begin_pass1_dir(&s, err) != 0)
        goto out;
    setup_tasks(&s, err);
    if (rs_world_agree(err) != 0)  /* every rank agrees before the collective pass 1 */
        goto out;
    if (!o->buckets_dir && run_pass1(&s, err) != 0)
        goto out;
    if (grow && !g && s.po.header && !s.res.header) {  /* nothing to make DIR from: as bucket --append */
        r->inputs_empty += s.po.ninputs;
        goto out;
    }
    s.t1 = rs_now() - t0;
    if (run_pass2(&s, err) != 0)
        goto out;
    /* the rest is rank 0's (its errors are agreed on at publication) */
    rs_world_barrier();
    if (rs_world_rank() == 0)
        finish_output(&s, err);
    begun = 0;
    if ((g ? rs_append_publish(g, &s.m, err) : rs_cluster_outdir_end(&s.od, err)) == 0) {
        r->published = 1;
        r->generations += grow;
        r->first_gen = r->first_gen ? r->first_gen : g ? g->gen : 1;
        r->last_gen = g ? g->gen : 1;
        r->inputs_ingested += o->buckets_dir ? 0 : s.po.ninputs;
        r->dir_files = g ? g->files_after : s.njobs;
        r->dir_generations = g ? g->gens_after : 1;
        fill_result(&s, r);
    } else if (grow && !g && err->code == RS_EXIT_EXISTS) {
        *raced = 1;
    }
    r->duplicates_cut |= s.report_cut;
    r->duplicates_written += s.report_written;
out:
    rs_world_agree_once(&agreed, err);  /* meets the others' first agreement if this rank failed before it */
    if (begun && !g)
        rs_cluster_outdir_abort(&s.od);
    rs_bucketdir_explain(&s.bd, err);
    rs_cluster_quarantine_end(&s.q, 1, err);   /* published with the directory: only released here */
    free_state(&s);
    return err->code ? -1 : 0;
}

/* ---------------------------------------------------------------- append */

/* The dedup job as rs_append_run runs it. */
typedef struct {
    const rs_dedup_job_opts *o;
    rs_dedup_job_result *r;
} append_ctx;

/* A keys-only directory has no rows to keep distinct (rs_append_job.refuse). */
static int refuse_keys_only(void *ctx, const rs_append *g, rs_error *err)
{
    (void)ctx;
    if (!g->bd.m.keys_only)
        return 0;
    return rs_error_set(err, RS_EXIT_USAGE, "%s: a --keys-only bucket directory has no rows to keep", g->mpath);
}

static int append_run(void *ctx, rs_append *g, const rs_pipeline_opts *po, const rs_ring *ring, rs_append_chunk *ch,
                      int *raced, rs_error *err)
{
    append_ctx *c = ctx;
    return run_once(c->o, po, ring, g, ch, c->r, raced, err);
}

static int run_job(const rs_dedup_job_opts *o, rs_dedup_job_result *r, rs_error *err);

static int run_append(const rs_dedup_job_opts *o, rs_dedup_job_result *r, rs_error *err)
{
    if (o->mode == RS_DEDUP_KEEP_LAST || o->buckets_dir)
        return rs_error_set(err, RS_EXIT_USAGE, "--append keeps the first copy of each key (the history's): %s",
                            o->buckets_dir ? "--buckets reads another directory" : "--keep last would have to change rows "
                            "the history already published");
    append_ctx c = {o, r};
    rs_append_job a = {.dir = o->outdir, .po = o->pipeline, .given = o->given, .ring = o->ring,
                       .on_seen = o->on_seen, .cmd = o->quiet ? NULL : "dedup", .distinct = 1,
                       .inputs_skipped = &r->inputs_skipped, .refuse = refuse_keys_only, .run = append_run, .ctx = &c};
    a.po.compress = o->compress;   /* the output's, checked against DIR's as the shaping options */
    a.po.level = o->level;
    return rs_append_run(&a, o->commit_every, o->commit_bytes, err);
}

int rs_dedup_job_run(const rs_dedup_job_opts *o, rs_dedup_job_result *r, rs_error *err)
{
    memset(r, 0, sizeof *r);
    double t0 = rs_now();
    uint64_t seen0 = rs_append_seen_bytes();
    int rc = run_job(o, r, err);
    r->seconds = rs_now() - t0;   /* the publication's fsyncs and renames included */
    r->seen_bytes = rs_append_seen_bytes() - seen0;
    return rc;
}

/* rs_dedup_job_run's work, timed by it. */
static int run_job(const rs_dedup_job_opts *o, rs_dedup_job_result *r, rs_error *err)
{
    /* Pass 2 allocates and frees a buffer and a table per bucket: keep freed
     * memory in the heap, so that every bucket does not pay for munmap and
     * fresh zeroed pages (measured: pass 2 2.7x faster on 2 threads). */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    if (o->append)
        return run_append(o, r, err);
    rs_pipeline_opts po = o->pipeline;
    po.compress = o->compress;
    po.level = o->level;
    int raced;
    return run_once(o, &po, o->ring, NULL, NULL, r, &raced, err);
}

void rs_dedup_job_result_free(rs_dedup_job_result *r)
{
    free(r->largest_node);
    memset(r, 0, sizeof *r);
}
