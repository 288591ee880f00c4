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
#include "ringshard/bucketdir.h"
#include "ringshard/dedup.h"
#include "ringshard/job_dedup.h"
#include "ringshard/outdir.h"
#include "ringshard/util.h"

/* dedup --buckets: a row belongs in its bucket when the manifest's ring
 * puts its key on the bucket's node. */
typedef struct {
    const rs_ring *ring;
    uint32_t node;
} placement;

static int placed_on(void *ctx, const char *key, size_t keylen)
{
    const placement *p = ctx;
    return rs_ring_owner(p->ring, rs_ring_position(p->ring, key, keylen)) == p->node;
}

/* One bucket of pass 2. */
typedef struct {
    char *in;            /* the bucket to deduplicate */
    const char *in_name; /* --buckets: its name under the directory's descriptor */
    const char *const *more, *const *more_paths; /* --buckets: its segments (appended generations) */
    size_t nmore;
    rs_dedup_check check; /* --buckets: what it must hold (its manifest entry) */
    placement place;     /* --buckets: check.ctx */
    char *out;           /* its output, inside the output's temporary directory */
    char *dups;          /* its --duplicates part, or NULL */
    const char *node;
    uint64_t rows, bytes; /* the input bucket's data rows and bytes */
    rs_dedup_result res;
    rs_error err;
} task;

typedef struct {
    uint64_t bytes;
    uint32_t i;
} by_size;

static int cmp_size(const void *a, const void *b)
{
    const by_size *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}


/* Pass 2: every job, biggest first, dynamic schedule. jobs are buckets
 * first.. of the whole run (split files are named by that number). Returns
 * 0, or -1 with err (the failure of the lowest-numbered bucket). */
static int pass2(task *jobs, uint32_t n, uint32_t first, const rs_dedup_opts *base, int threads, rs_error *err)
{
    by_size *bs = malloc((n ? n : 1) * sizeof *bs);
    uint32_t *order = malloc((n ? n : 1) * sizeof *order);
    if (!bs || !order) {
        free(bs);
        free(order);
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    }
    for (uint32_t i = 0; i < n; i++)
        bs[i] = (by_size){jobs[i].bytes, i};
    qsort(bs, n, sizeof *bs, cmp_size);
    for (uint32_t i = 0; i < n; i++)
        order[i] = bs[i].i;
    free(bs);
    int failed = 0;
#pragma omp parallel num_threads(threads)
    {
        rs_deflater *dz = rs_compressor_new(base->compress, base->level, base->codec);
#pragma omp for schedule(dynamic, 1)
        for (uint32_t k = 0; k < n; k++) {
            task *j = &jobs[order[k]];
            int stop;
#pragma omp atomic read
            stop = failed;
            if (stop)
                continue;
            if (rs_pipeline_interrupted()) {
                rs_error_set(&j->err, RS_EXIT_INTERRUPTED, "interrupted; nothing published");
            } else if (!dz) {
                rs_error_set(&j->err, RS_EXIT_IO, "out of memory");
            } else {
                rs_dedup_opts o = *base;
                if (j->in_name) {
                    o.in_name = j->in_name;
                    o.in_more = j->more;
                    o.in_more_paths = j->more_paths;
                    o.nin_more = j->nmore;
                    o.check = &j->check;
                }
                char name[32];
                snprintf(name, sizeof name, "b%u", first + order[k]);  /* unique across MPI ranks */
                o.tmpname = name;
                o.dups = NULL;
                rs_dedup_report rf;
                if (j->dups && !(o.dups = rs_dedup_report_open(j->dups, &rf)))
                    rs_error_set(&j->err, RS_EXIT_IO, "%s: cannot create: %s", j->dups, strerror(errno));
                else
                    rs_dedup_file(&o, dz, j->in, j->rows, j->bytes, j->out, &j->res, &j->err);
                int e = o.dups ? rs_dedup_report_finish(o.dups, &rf) : 0;
                if (e && !j->err.code)
                    rs_error_set(&j->err, RS_EXIT_IO, "%s: write failed: %s", j->dups, strerror(e));
            }
            if (j->err.code) {
#pragma omp atomic write
                failed = 1;
            }
        }
        rs_deflater_free(dz);
    }
    free(order);
    for (uint32_t i = 0; i < n; i++)
        if (jobs[i].err.code) {
            *err = jobs[i].err;
            return -1;
        }
    return 0;
}


static char *join(const char *a, const char *b, const char *c)
{
    size_t n = strlen(a) + strlen(b) + strlen(c) + 1;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s%s%s", a, b, c);
    return p;
}

/* "name.csv.gz" / "name.csv.zst" / "name.csv" -> the same name with the
 * output's suffix. */
static char *renamed(const char *file, int compress)
{
    size_t n = strlen(file);
    if (n > 7 && (!strcmp(file + n - 7, ".csv.gz") || !strcmp(file + n - 8, ".csv.zst")))
        n -= file[n - 1] == 't' ? 8 : 7;
    else if (n > 4 && !strcmp(file + n - 4, ".csv"))
        n -= 4;
    char *p = malloc(n + strlen(rs_data_ext(compress)) + 1);
    if (p) {
        memcpy(p, file, n);
        strcpy(p + n, rs_data_ext(compress));
    }
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
static int check_conservation(const rs_dedup_job_opts *a, const rs_pipeline_result *res, const rs_bucketdir *in_bd,
                              const task *jobs, uint32_t n, rs_error *err)
{
    uint64_t in_rows = 0, in_bytes = 0, rejected = 0, b_rows = 0, b_bytes = 0;
    uint64_t out_rows = 0, out_bytes = 0, dup_rows = 0, dup_bytes = 0;
    if (a->buckets_dir) {
        in_rows = in_bd->rows, in_bytes = in_bd->bytes;  /* every generation */
        rejected = in_bd->rejected;
    } else {
        for (size_t i = 0; i < a->pipeline.ninputs; i++) {
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

/* Under MPI each rank deduplicated buckets [lo, hi): every rank gets every
 * bucket's result (each is zero outside its owner, so a sum gathers them). */
enum { R_ROWS_IN, R_BYTES_IN, R_ROWS, R_BYTES, R_DUP_ROWS, R_DUP_BYTES, R_FILE_BYTES, R_CRC, R_DUP_KEYS, R_SPLITS,
       R_STREAMED, R_FIELDS };

static void share_results(task *jobs, uint32_t n, size_t lo, size_t hi)
{
    uint64_t *v = calloc(n ? (size_t)n * R_FIELDS : 1, sizeof *v);
    if (!v)
        abort();
    for (size_t i = lo; i < hi; i++) {
        const rs_dedup_result *d = &jobs[i].res;
        uint64_t *f = v + i * R_FIELDS;
        f[R_ROWS_IN] = d->rows_in, f[R_BYTES_IN] = d->bytes_in, f[R_ROWS] = d->rows, f[R_BYTES] = d->bytes;
        f[R_DUP_ROWS] = d->dup_rows, f[R_DUP_BYTES] = d->dup_bytes, f[R_FILE_BYTES] = d->file_bytes;
        f[R_CRC] = d->crc, f[R_DUP_KEYS] = d->dup_keys, f[R_SPLITS] = d->splits, f[R_STREAMED] = d->streamed;
    }
    rs_world_sum_u64(v, (size_t)n * R_FIELDS);
    for (uint32_t i = 0; i < n; i++) {
        const uint64_t *f = v + (size_t)i * R_FIELDS;
        jobs[i].res = (rs_dedup_result){f[R_ROWS_IN], f[R_BYTES_IN], f[R_ROWS], f[R_BYTES], f[R_DUP_ROWS],
                                        f[R_DUP_BYTES], f[R_FILE_BYTES], (uint32_t)f[R_CRC], f[R_DUP_KEYS],
                                        (uint32_t)f[R_SPLITS], (uint32_t)f[R_STREAMED]};
    }
    free(v);
}


/* One run's state, shared by the steps. */
typedef struct {
    const rs_dedup_job_opts *o;
    rs_pipeline_opts po;       /* o->pipeline, with --buckets' dialect and key */
    const rs_ring *ring;       /* o->ring, or ring_owned */
    rs_ring *ring_owned;       /* --buckets: the manifest's ring */
    rs_bucketdir bd;
    char *in_mpath;            /* --buckets: DIR/manifest.json, for messages */
    rs_outdir od;
    rs_cluster_quarantine q;
    rs_pipeline_result res;    /* pass 1 */
    rs_manifest m;
    task *jobs;
    uint32_t njobs;
    char *pass1;               /* the temporary buckets' directory */
    char **out_names;
    const char *header;
    size_t header_len;
    rs_dedup_opts dd;          /* pass 2's options */
    double t1, t2, t2_start;   /* pass 1, pass 2 seconds; when pass 2 began */
} dstate;

/* --buckets: opens the directory once (every bucket is read through it),
 * checks it is a full bucket directory and builds its ring; the dialect
 * and key come from its manifest. Collective (rs_cluster_bucketdir_open). */
static int open_buckets(dstate *s, rs_error *err)
{
    char *mpath = s->in_mpath = join(s->o->buckets_dir, "/", "manifest.json");
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
    rs_ring_opts ropts;
    rs_nodes rnodes = {0};
    if (rs_ring_parse_description(in_m->ring_description, &ropts, &rnodes, err) == 0)
        s->ring_owned = rs_ring_build(&ropts, &rnodes, err);
    rs_nodes_free(&rnodes);
    if (!(s->ring = s->ring_owned))
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
    s->pass1 = rs_outdir_path(&s->od, ".pass1");
    if (!s->pass1 || (rs_world_rank() == 0 && mkdir(s->pass1, 0700) != 0))
        rs_error_set(err, RS_EXIT_IO, "%s: cannot create: %s", s->pass1 ? s->pass1 : s->o->outdir, strerror(errno));
    if (rs_world_agree(err) != 0 || rs_cluster_quarantine_begin(&s->po, &s->od, &s->q, err) != 0)
        return -1;
    return 0;
}

/* The buckets: their input, output and --duplicates part paths, and their
 * output names (--buckets: the manifest's, with the output's suffix). */
static int setup_tasks(dstate *s, rs_error *err)
{
    const rs_dedup_job_opts *o = s->o;
    const rs_manifest *in_mp = &s->bd.m;
    s->njobs = o->buckets_dir ? (uint32_t)in_mp->nfiles : rs_ring_nodes(s->ring)->count;
    s->jobs = calloc(s->njobs ? s->njobs : 1, sizeof *s->jobs);
    s->out_names = calloc(s->njobs ? s->njobs : 1, sizeof *s->out_names);
    if (!s->jobs || !s->out_names)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    size_t k = 0;  /* --buckets: the directory's files, node by node (bucketdir.h) */
    for (uint32_t i = 0; i < s->njobs; i++) {
        task *j = &s->jobs[i];
        char num[32];
        snprintf(num, sizeof num, "/%u", i);
        if (o->buckets_dir) {
            const rs_manifest_file *f = &in_mp->files[i];
            int64_t node = f->node ? rs_nodes_find(rs_ring_nodes(s->ring), f->node) : -1;
            if (node < 0)
                return rs_error_set(err, RS_EXIT_DATA, "%s: file %s belongs to node '%s', not on its ring",
                                    s->in_mpath, f->file, f->node ? f->node : "");
            s->out_names[i] = renamed(f->file, o->compress);
            j->in = join(o->buckets_dir, "/", f->file);
            j->in_name = f->file;
            j->node = f->node;
            j->place = (placement){s->ring, (uint32_t)node};
            /* the node's base file, then its segments: one bucket */
            size_t k0 = k;
            j->check = (rs_dedup_check){0, 0, 0, 0, s->in_mpath, f->node, &s->dd.keyspec, placed_on, &j->place};
            for (; k < s->bd.nfiles && s->bd.file_base[k] == i; k++) {
                const rs_manifest_file *part = s->bd.files[k];
                j->check.crc = rs_crc32_combine(j->check.crc, part->crc32, part->bytes);
                j->check.rows += part->rows;
                j->check.bytes += part->bytes;
                j->check.file_bytes += part->file_bytes;
            }
            j->more = s->bd.names + k0 + 1;
            j->more_paths = (const char *const *)s->bd.paths + k0 + 1;
            j->nmore = k - k0 - 1;
            j->rows = j->check.rows;
            j->bytes = j->check.bytes;
        } else {
            const char *node = rs_ring_nodes(s->ring)->names[i];
            char *safe = rs_safe_filename(node);
            s->out_names[i] = safe ? join(safe, rs_data_ext(o->compress), "") : NULL;
            free(safe);
            j->in = join(s->pass1, num, rs_data_ext(o->temp_compress));
            j->node = node;
        }
        j->out = s->out_names[i] ? rs_outdir_path(&s->od, s->out_names[i]) : NULL;
        j->dups = o->duplicates ? join(s->pass1, num, ".dups") : NULL;
        if (!s->out_names[i] || !j->in || !j->out || (o->duplicates && !j->dups))
            return rs_error_set(err, RS_EXIT_IO, "out of memory");
    }
    return 0;
}

/* Pass 1: the inputs into the temporary buckets (whole buckets on the
 * shared file system under MPI). */
static int run_pass1(dstate *s, rs_error *err)
{
    char **paths = malloc((s->njobs ? s->njobs : 1) * sizeof *paths);
    if (!paths)
        abort();  /* a few KiB: not worth a path that other ranks must follow */
    for (uint32_t i = 0; i < s->njobs; i++)
        paths[i] = s->jobs[i].in;
    rs_pipeline_route_by_ring(&s->po, s->ring);  /* njobs == the node count here */
    s->po.dest_paths = (const char *const *)paths;
    s->po.compress = s->o->temp_compress;
    s->po.level = 1;
    int prc = rs_cluster_pipeline_run(&s->po, &s->res, err);  /* whole buckets on the shared file system */
    free(paths);
    s->po.dest_paths = NULL;
    if (prc != 0)
        return -1;
    for (uint32_t i = 0; i < s->njobs; i++) {
        s->jobs[i].rows = s->res.dest[i].rows;
        s->jobs[i].bytes = s->res.dest[i].bytes;
    }
    s->header = s->res.header;
    s->header_len = s->res.header_len;
    return 0;
}

/* Pass 2 on this rank's buckets, then every rank's results shared and
 * conservation checked; the temporary buckets are removed. */
static int run_pass2(dstate *s, rs_error *err)
{
    const rs_dedup_job_opts *jo = s->o;
    rs_dedup_opts *o = &s->dd;
    o->dialect = s->po.dialect;
    if (!o->dialect.max_record)
        o->dialect.max_record = (size_t)(s->po.memory / 16);
    o->header = s->po.header;
    o->mode = jo->mode;
    o->codec = s->po.codec;
    o->compress = jo->compress;
    o->level = jo->level;
    o->tmpdir = s->pass1;
    o->in_dirfd = s->bd.fd;  /* --buckets: jobs[].in_name are under it */
    int threads = rs_pipeline_threads(&s->po);
    o->budget = s->po.memory / (uint64_t)(threads > 0 ? threads : 1);
    /* --buckets checks every row's placement by the key, in any mode */
    if ((jo->mode != RS_DEDUP_BY_ROW || jo->buckets_dir) &&
        rs_dedup_keyspec(s->po.key, s->po.key_sep, &o->dialect, s->header, s->header_len, &o->keyspec, err) != 0)
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
    pass2(s->jobs + blo, (uint32_t)(bhi - blo), (uint32_t)blo, o, threads, err);
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
        share_results(s->jobs, s->njobs, blo, bhi);
    if (check_conservation(jo, &s->res, &s->bd, s->jobs, s->njobs, err) != 0)
        return -1;
    for (size_t i = blo; i < bhi; i++)
        if (!jo->buckets_dir)
            unlink(s->jobs[i].in);
    s->t2_start = t2s;
    return 0;
}

/* The manifest: bucket's, with the survivors' files. */
static int write_manifest(dstate *s, rs_error *err)
{
    const rs_dedup_job_opts *o = s->o;
    const rs_manifest *in_mp = &s->bd.m;
    rs_manifest *m = &s->m;
    m->schema = 1;
    m->kind = "buckets";
    m->tool_version = RS_VERSION;
    m->ring_description = o->buckets_dir ? in_mp->ring_description : (char *)rs_ring_description(s->ring);
    m->ring_fingerprint = o->buckets_dir ? in_mp->ring_fingerprint : (char *)rs_ring_fingerprint(s->ring);
    m->key = o->buckets_dir ? in_mp->key : (char *)s->po.key;  /* NULL: the default, column 1 */
    m->key_sep = s->po.key_sep;
    m->delimiter = s->po.dialect.delim;
    m->header = s->po.header != 0;  /* the option: with empty inputs there is no header line */
    m->header_line = (char *)s->header;
    m->compress = o->compress;
    m->level = o->level;
    m->keys_only = 0;
    if (o->buckets_dir) {  /* every generation's inputs (shallow copies) */
        size_t n = in_mp->ninputs;
        for (size_t g = 0; g < s->bd.ngens; g++)
            n += s->bd.gens[g].ninputs;
        if (!(m->inputs = calloc(n + 1, sizeof *m->inputs)))
            return rs_error_set(err, RS_EXIT_IO, "out of memory");
        memcpy(m->inputs, in_mp->inputs, in_mp->ninputs * sizeof *m->inputs);
        m->ninputs = in_mp->ninputs;
        for (size_t g = 0; g < s->bd.ngens; g++) {
            memcpy(m->inputs + m->ninputs, s->bd.gens[g].inputs, s->bd.gens[g].ninputs * sizeof *m->inputs);
            m->ninputs += s->bd.gens[g].ninputs;
        }
        for (size_t i = 0; i < m->ninputs; i++)
            m->inputs[i].generation = 0;  /* this output is a directory of its own */
        m->rejected = s->bd.rejected;
    } else {
        m->ninputs = s->po.ninputs;
        m->inputs = calloc(s->po.ninputs ? s->po.ninputs : 1, sizeof *m->inputs);
        if (!m->inputs)
            return rs_error_set(err, RS_EXIT_IO, "out of memory");
        for (size_t i = 0; i < s->po.ninputs; i++) {
            const rs_input_stats *in = &s->res.input[i];
            m->inputs[i] = (rs_manifest_input){.path = (char *)in->path, .size = in->size, .rows = in->rows,
                                               .bytes = in->bytes, .rejected = in->rejected,
                                               .blank_lines = in->blank_lines, .zero_padding = in->zero_padding};
        }
        m->rejected = s->res.rejected;
    }
    m->nfiles = s->njobs;
    m->files = calloc(s->njobs ? s->njobs : 1, sizeof *m->files);
    if (!m->files)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    for (uint32_t i = 0; i < s->njobs; i++) {
        const rs_dedup_result *d = &s->jobs[i].res;
        m->files[i] = (rs_manifest_file){.file = s->out_names[i], .node = (char *)s->jobs[i].node, .rows = d->rows,
                                         .bytes = d->bytes, .file_bytes = d->file_bytes, .crc32 = d->crc};
        m->rows += d->rows;
        m->bytes += d->bytes;
    }
    m->seconds = s->t1 + s->t2;
    return rs_outdir_manifest(&s->od, m, err);
}

/* Rank 0's part before publication: the --duplicates report (renamed with
 * the publication), the temporary buckets' directory removed, the
 * manifest. Its errors are agreed on at publication. */
static int finish_output(dstate *s, rs_error *err)
{
    const rs_dedup_job_opts *o = s->o;
    if (o->duplicates) {
        const char *dtmp = rs_outdir_side(&s->od, o->duplicates, err);   /* renamed with the publication */
        char **parts = dtmp ? malloc((s->njobs ? s->njobs : 1) * sizeof *parts) : NULL;
        if (dtmp && !parts)
            rs_error_set(err, RS_EXIT_IO, "out of memory");
        for (uint32_t i = 0; parts && i < s->njobs; i++)
            parts[i] = s->jobs[i].dups;
        int drc = parts ? rs_dedup_report_concat(dtmp, o->duplicates, parts, s->njobs, err) : -1;
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
        const rs_dedup_result *d = &s->jobs[i].res;
        r->rows_in += d->rows_in;
        r->rows += d->rows;
        r->dup_keys += d->dup_keys;
        r->split_buckets += d->splits > 0;
        r->splits += d->splits;
        r->streamed += d->streamed;
        if (d->bytes_in > s->jobs[big].res.bytes_in)
            big = i;
    }
    if (s->njobs) {
        r->largest_node = strdup(s->jobs[big].node);
        r->largest_rows_in = s->jobs[big].res.rows_in;
        r->largest_bytes_in = s->jobs[big].res.bytes_in;
        r->largest_rows = s->jobs[big].res.rows;
    }
    r->pass1_seconds = s->t1;
    r->pass2_seconds = s->t2;
    r->rejected = s->m.rejected;
}

static void free_state(dstate *s)
{
    free(s->m.inputs);
    free(s->m.files);
    rs_bucketdir_close(&s->bd);
    free(s->in_mpath);
    rs_pipeline_result_free(&s->res);
    for (uint32_t i = 0; s->jobs && i < s->njobs; i++) {
        free(s->jobs[i].in);
        free(s->jobs[i].out);
        free(s->jobs[i].dups);
        free(s->out_names[i]);
    }
    free(s->jobs);
    free(s->out_names);
    free(s->pass1);
    rs_ring_free(s->ring_owned);
}

int rs_dedup_job_run(const rs_dedup_job_opts *o, rs_dedup_job_result *r, rs_error *err)
{
    memset(r, 0, sizeof *r);
    dstate s;
    memset(&s, 0, sizeof s);
    s.o = o;
    s.po = o->pipeline;
    s.ring = o->ring;
    /* with a ring given, its build was agreed on by the caller */
    int begun = 0, agreed = !o->buckets_dir;
    double t0 = rs_now();

    /* Pass 2 allocates and frees a buffer and a table per bucket: keep freed
     * memory in the heap, so that every bucket does not pay for munmap and
     * fresh zeroed pages (measured: pass 2 2.7x faster on 2 threads). */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    if (o->buckets_dir && open_buckets(&s, err) != 0)
        goto out;
    /* under MPI, a rank that failed so far (a manifest it could not read)
     * stops every rank here; see also out: */
    if (rs_world_agree_once(&agreed, err) != 0)
        goto out;
    rs_pipeline_threads_ready(rs_pipeline_threads(&s.po), err);
    if (rs_cluster_outdir_begin(&s.od, o->outdir, o->force, err) != 0)
        goto out;
    begun = 1;
    if (begin_pass1_dir(&s, err) != 0)
        goto out;
    setup_tasks(&s, err);
    if (rs_world_agree(err) != 0)  /* every rank agrees before the collective pass 1 */
        goto out;
    if (!o->buckets_dir && run_pass1(&s, err) != 0)
        goto out;
    s.t1 = rs_now() - t0;
    if (run_pass2(&s, err) != 0)
        goto out;
    /* the rest is rank 0's (its errors are agreed on at publication) */
    rs_world_barrier();
    if (rs_world_rank() == 0)
        finish_output(&s, err);
    begun = 0;
    if (rs_cluster_outdir_end(&s.od, err) == 0) {
        r->published = 1;
        fill_result(&s, r);
    }
out:
    rs_world_agree_once(&agreed, err);  /* meets the others' first agreement if this rank failed before it */
    if (begun)
        rs_cluster_outdir_abort(&s.od);
    rs_bucketdir_explain(&s.bd, err);
    rs_cluster_quarantine_end(&s.q, 1, err);   /* published with the directory: only released here */
    free_state(&s);
    return err->code ? -1 : 0;
}

void rs_dedup_job_result_free(rs_dedup_job_result *r)
{
    free(r->largest_node);
    memset(r, 0, sizeof *r);
}
