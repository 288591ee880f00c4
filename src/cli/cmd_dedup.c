/* ringshard dedup: keep one row per key, at scale.
 *
 * Pass 1 is `ringshard bucket` into a temporary area inside the output's
 * temporary directory (same ring, same router; plain by default, gzip level
 * 1 with --temp-compress gzip):
 * every copy of a key lands in the same bucket, in input order. Pass 2
 * deduplicates the buckets in parallel, one bucket per thread at a time
 * (rs_dedup_file: in memory, or split again when a bucket does not fit in
 * --memory / threads), and writes the survivors as a bucket directory with
 * the same layout and manifest as `bucket`, published atomically. With
 * --buckets DIR, pass 1 is skipped and DIR's files are the buckets. */
#define _GNU_SOURCE  /* syncfs */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli/cli.h"
#include "cli/cluster.h"
#include "cli/world.h"
#include "rs_config.h"
#include "ringshard/bucketdir.h"
#include "ringshard/dedup.h"
#include "ringshard/outdir.h"

static const char dedup_help[] =
    "Usage: ringshard dedup [OPTIONS] -o DIR INPUT...    (or --files-from LIST)\n"
    "       ringshard dedup [OPTIONS] -o DIR --buckets BUCKETDIR\n"
    "Keeps one row per key. Pass 1 buckets the rows by key on the ring (as\n"
    "`ringshard bucket`) into a temporary area; pass 2 deduplicates every bucket\n"
    "in parallel, in memory, comparing full key bytes. The output is a bucket\n"
    "directory like bucket's (DIR/<node>.csv.gz + manifest.json, published\n"
    "atomically), holding the surviving rows of each bucket in input order;\n"
    "it is byte-identical for any -j and any --memory.\n\n"
    "Dedup options:\n"
    "  -o, --output DIR       the output directory (required)\n"
    "  --keep first|last      which copy of a key survives, by input order: inputs\n"
    "                         in the order given, rows in file order (default first)\n"
    "  --by key|row           duplicates are rows with equal keys (default) or\n"
    "                         whole-row duplicates (equal row bytes)\n"
    "  --duplicates FILE      write every duplicated key: KEY<TAB>COUNT<TAB>KEPT-ROW\n"
    "                         (--by row: ROW<TAB>COUNT), escapes \\\\ \\t \\n \\r, by bucket\n"
    "                         then first occurrence\n"
    "  --buckets BUCKETDIR    deduplicate an existing bucket directory (its manifest\n"
    "                         gives the ring, key and dialect; no INPUT)\n"
    "  --temp-compress gzip|zstd|none  pass 1's temporary buckets: plain (default,\n"
    "                         faster) or level 1 gzip/zstd (less temporary disk)\n"
    "  --force                replace an existing DIR (a ringshard output or empty)\n"
    "  --force-any            replace an existing DIR whatever it holds\n"
    "  --compress gzip|zstd|none  output as gzip members (default), zstd frames\n"
    "                         (DIR/<node>.csv.zst) or plain CSV\n"
    "  --level N              output level (default 1): gzip 1-9; zstd -131072 to 22\n"
    "                         but 0 (negative: zstd --fast=N)\n"
    "  -h, --help             this help\n\n"
    "Memory: a bucket is deduplicated in memory when its bytes plus a table of\n"
    "176 bytes per row fit in --memory / threads; a bigger bucket is split again\n"
    "on disk by an independent hash of the key, each part deduplicated on its own,\n"
    "with the same result. The summary says how many buckets were split.\n\n";

enum {
    OPT_FORCE = RS_OPT__FIRST_COMMAND, OPT_COMPRESS, OPT_LEVEL, OPT_KEEP, OPT_BY, OPT_DUPLICATES, OPT_BUCKETS,
    OPT_TEMP_COMPRESS, OPT_FORCE_ANY
};


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
    rs_dedup_check check; /* --buckets: what it must hold (its manifest entry) */
    placement place;     /* --buckets: check.ctx */
    char *out;           /* its output, inside the output's temporary directory */
    char *dups;          /* its --duplicates part, or NULL */
    const char *node;
    uint64_t rows, bytes; /* the input bucket's data rows and bytes */
    rs_dedup_result res;
    rs_error err;
} job;

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

/* A FILE over a file descriptor that keeps the errno of its first failed
 * write: rs_dedup_file leaves the report's errors to ferror at the end,
 * when errno no longer says why. */
typedef struct {
    int fd;
    int err;
} report_file;

static ssize_t report_write(void *c, const char *buf, size_t n)
{
    report_file *r = c;
    size_t done = 0;
    while (done < n) {
        ssize_t k = write(r->fd, buf + done, n - done);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (!r->err)
                r->err = k < 0 ? errno : EIO;
            return done ? (ssize_t)done : -1;
        }
        done += (size_t)k;
    }
    return (ssize_t)done;
}

static int report_close(void *c)
{
    report_file *r = c;
    int rc = close(r->fd);
    if (rc != 0 && !r->err)
        r->err = errno;
    return rc;
}

/* Opens path for writing as a report_file; NULL with errno. */
static FILE *report_open(const char *path, report_file *r)
{
    r->err = 0;
    r->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (r->fd < 0)
        return NULL;
    FILE *f = fopencookie(r, "w", (cookie_io_functions_t){NULL, report_write, NULL, report_close});
    if (!f) {
        int e = errno;
        close(r->fd);
        errno = e;
    }
    return f;
}

/* Closes a report_file's FILE: 0, or the errno of its first failure. */
static int report_finish(FILE *f, report_file *r)
{
    int bad = ferror(f);
    if (fclose(f) != 0 || bad)
        return r->err ? r->err : EIO;
    return 0;
}

/* Pass 2: every job, biggest first, dynamic schedule. jobs are buckets
 * first.. of the whole run (split files are named by that number). Returns
 * 0, or -1 with err (the failure of the lowest-numbered bucket). */
static int pass2(job *jobs, uint32_t n, uint32_t first, const rs_dedup_opts *base, int threads, rs_error *err)
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
            job *j = &jobs[order[k]];
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
                    o.check = &j->check;
                }
                char name[32];
                snprintf(name, sizeof name, "b%u", first + order[k]);  /* unique across MPI ranks */
                o.tmpname = name;
                o.dups = NULL;
                report_file rf;
                if (j->dups && !(o.dups = report_open(j->dups, &rf)))
                    rs_error_set(&j->err, RS_EXIT_IO, "%s: cannot create: %s", j->dups, strerror(errno));
                else
                    rs_dedup_file(&o, dz, j->in, j->rows, j->bytes, j->out, &j->res, &j->err);
                int e = o.dups ? report_finish(o.dups, &rf) : 0;
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

/* Concatenates the per-bucket --duplicates parts into tmp (the report's
 * temporary beside it, renamed over it when the output is published), in
 * bucket order, then fsyncs it. Messages name the report as given. */
static int write_duplicates(const char *tmp, const char *shown, job *jobs, uint32_t n, rs_error *err)
{
    report_file rf;
    FILE *out = report_open(tmp, &rf);
    if (!out)
        return rs_error_set(err, RS_EXIT_IO, "%s: cannot create: %s", shown, strerror(errno));
    char buf[1 << 16];
    for (uint32_t i = 0; i < n && !ferror(out); i++) {
        FILE *in = fopen(jobs[i].dups, "rb");
        if (!in) {
            fclose(out);
            return rs_error_set(err, RS_EXIT_IO, "%s: cannot open: %s", jobs[i].dups, strerror(errno));
        }
        size_t k;
        while ((k = fread(buf, 1, sizeof buf, in)) > 0)
            if (fwrite(buf, 1, k, out) != k)
                break;
        int bad_in = ferror(in), e = errno;
        fclose(in);
        unlink(jobs[i].dups);
        if (bad_in) {
            fclose(out);
            return rs_error_set(err, RS_EXIT_IO, "%s: read failed: %s", jobs[i].dups, strerror(e));
        }
    }
    int e = fflush(out) != 0 || ferror(out) ? (rf.err ? rf.err : EIO) : 0;
    if (!e && fsync(rf.fd) != 0)
        e = errno;
    int ce = report_finish(out, &rf);
    if (e || ce)
        return rs_error_set(err, RS_EXIT_IO, "%s: write failed: %s", shown, strerror(e ? e : ce));
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
    char *p = malloc(n + strlen(rs_cli_data_ext(compress)) + 1);
    if (p) {
        memcpy(p, file, n);
        strcpy(p + n, rs_cli_data_ext(compress));
    }
    return p;
}

typedef struct {
    /* options */
    rs_pipeline_opts po;
    rs_cli_ring ro;
    const char *outdir, *dups_path, *buckets_dir;
    int force, quiet, temp_compress, by_row, keep_last, compress, level, key_given;
} dedup_args;

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
static int check_conservation(const dedup_args *a, const rs_pipeline_result *res, const rs_manifest *in_m,
                              const job *jobs, uint32_t n, rs_error *err)
{
    uint64_t in_rows = 0, in_bytes = 0, rejected = 0, b_rows = 0, b_bytes = 0;
    uint64_t out_rows = 0, out_bytes = 0, dup_rows = 0, dup_bytes = 0;
    if (a->buckets_dir) {
        for (size_t i = 0; i < in_m->nfiles; i++)
            in_rows += in_m->files[i].rows, in_bytes += in_m->files[i].bytes;
        rejected = in_m->rejected;
    } else {
        for (size_t i = 0; i < a->po.ninputs; i++) {
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

static void share_results(job *jobs, uint32_t n, size_t lo, size_t hi)
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

static void summary(const dedup_args *a, const job *jobs, uint32_t n, double t1, double t2, uint64_t rejected)
{
    uint64_t in = 0, out = 0, keys = 0, split = 0, splits = 0, streamed = 0;
    uint32_t big = 0;
    for (uint32_t i = 0; i < n; i++) {
        in += jobs[i].res.rows_in;
        out += jobs[i].res.rows;
        keys += jobs[i].res.dup_keys;
        split += jobs[i].res.splits > 0;
        splits += jobs[i].res.splits;
        streamed += jobs[i].res.streamed;
        if (jobs[i].res.bytes_in > jobs[big].res.bytes_in)
            big = i;
    }
    fprintf(stderr,
            "ringshard dedup: %llu rows in, %llu distinct rows, %llu duplicates removed (%llu %s with copies), "
            "%u buckets in %s (%.2f s: pass 1 %.2f s, pass 2 %.2f s)\n",
            (unsigned long long)in, (unsigned long long)out, (unsigned long long)(in - out), (unsigned long long)keys,
            a->by_row ? "rows" : "keys", n, a->outdir, t1 + t2, t1, t2);
    if (n)
        fprintf(stderr, "  largest bucket: %s, %llu rows in (%.1f MB), %llu out; split again: %llu buckets (%llu splits)",
                jobs[big].node, (unsigned long long)jobs[big].res.rows_in, jobs[big].res.bytes_in / 1e6,
                (unsigned long long)jobs[big].res.rows, (unsigned long long)split, (unsigned long long)splits);
    if (streamed)
        fprintf(stderr, "; %llu parts deduplicated as a stream (hot keys)", (unsigned long long)streamed);
    if (rejected)
        fprintf(stderr, "; rejected rows: %llu", (unsigned long long)rejected);
    fputc('\n', stderr);
}

int rs_cmd_dedup(int argc, char **argv)
{
    static const struct option longopts[] = {
        RS_RING_LONGOPTS,
        RS_INPUT_LONGOPTS,
        {"output", required_argument, 0, 'o'},
        {"force", no_argument, 0, OPT_FORCE},
        {"force-any", no_argument, 0, OPT_FORCE_ANY},
        {"compress", required_argument, 0, OPT_COMPRESS},
        {"level", required_argument, 0, OPT_LEVEL},
        {"keep", required_argument, 0, OPT_KEEP},
        {"by", required_argument, 0, OPT_BY},
        {"duplicates", required_argument, 0, OPT_DUPLICATES},
        {"buckets", required_argument, 0, OPT_BUCKETS},
        {"temp-compress", required_argument, 0, OPT_TEMP_COMPRESS},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    dedup_args a;
    memset(&a, 0, sizeof a);
    rs_cli_input_defaults(&a.po);
    a.compress = 1;
    a.level = 1;
    a.temp_compress = 0;  /* measured: plain temporary buckets are faster (docs/dedup.md) */
    rs_error err = {0};
    int c, r, ring_given = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "ho:j:", longopts, NULL)) != -1) {
        if (rs_cli_ring_option(&a.ro, c, optarg)) {
            ring_given = 1;
            continue;
        }
        if ((r = rs_cli_input_option(&a.po, c, optarg, &err)) != 0) {
            if (r < 0)
                return rs_cli_fail("dedup", &err);
            if (c == RS_OPT_KEY || c == RS_OPT_DELIMITER || c == RS_OPT_HEADER || c == RS_OPT_NO_HEADER)
                a.key_given = 1;
            continue;
        }
        switch (c) {
        case 'o': a.outdir = optarg; break;
        case OPT_FORCE: a.force |= RS_OUTDIR_FORCE; break;
        case OPT_FORCE_ANY: a.force |= RS_OUTDIR_FORCE | RS_OUTDIR_FORCE_ANY; break;
        case OPT_COMPRESS:
        case OPT_TEMP_COMPRESS: {
            int z;
            if (rs_cli_compress_arg(c == OPT_COMPRESS ? "--compress" : "--temp-compress", optarg, &z, &err) != 0)
                return rs_cli_fail("dedup", &err);
            if (c == OPT_COMPRESS)
                a.compress = z;
            else
                a.temp_compress = z;
            break;
        }
        case OPT_LEVEL:
            if (rs_cli_level_arg("--level", optarg, &a.level, &err) != 0)
                return rs_cli_fail("dedup", &err);
            break;
        case OPT_KEEP:
            if (!strcmp(optarg, "first"))
                a.keep_last = 0;
            else if (!strcmp(optarg, "last"))
                a.keep_last = 1;
            else
                return rs_cli_usage_error("dedup", "--keep: expected first or last");
            break;
        case OPT_BY:
            if (!strcmp(optarg, "key"))
                a.by_row = 0;
            else if (!strcmp(optarg, "row"))
                a.by_row = 1;
            else
                return rs_cli_usage_error("dedup", "--by: expected key or row");
            break;
        case OPT_DUPLICATES: a.dups_path = optarg; break;
        case OPT_BUCKETS: a.buckets_dir = optarg; break;
        case 'h':
            fputs(dedup_help, stdout);
            fputs(rs_cli_input_help, stdout);
            fputc('\n', stdout);
            fputs(rs_cli_ring_help, stdout);
            return 0;
        default: return rs_cli_usage_error("dedup", "bad option");
        }
    }
    if (!a.outdir)
        return rs_cli_usage_error("dedup", "no output directory (-o DIR)");
    if (a.buckets_dir) {
        if (optind < argc || rs_cli_files_from_given())
            return rs_cli_usage_error("dedup", "--buckets takes no INPUT nor --files-from (the bucket directory is "
                                               "the input)");
        if (ring_given || a.key_given)
            return rs_cli_usage_error("dedup", "--buckets: the ring, key and CSV options come from its manifest");
        a.quiet = a.po.progress < 0;
        a.po.progress = 0;
        rs_cli_install_signals();
    } else {
        a.quiet = rs_cli_input_finish(&a.po, argc, argv, optind, &err);
        if (a.quiet < 0)
            return rs_cli_fail("dedup", &err);
    }
    if (rs_cli_level_check("--level", a.compress, a.level, &err) != 0)
        return rs_cli_fail("dedup", &err);

    if (rs_cli_outside_output("--on-bad-row quarantine=", a.po.quarantine, a.outdir, &err) != 0 ||
        rs_cli_outside_output("--duplicates ", a.dups_path, a.outdir, &err) != 0)
        return rs_cli_fail("dedup", &err);

    rs_ring *ring = NULL;
    rs_bucketdir bd;
    rs_manifest m;
    memset(&bd, 0, sizeof bd);
    const rs_manifest *in_mp = &bd.m;
    char *in_mpath = NULL;
    memset(&m, 0, sizeof m);
    rs_outdir od = {0};
    rs_cluster_quarantine q = {0};
    rs_pipeline_result res = {0};
    job *jobs = NULL;
    uint32_t njobs = 0;
    char *pass1 = NULL;
    char **out_names = NULL;
    int rc = 0, begun = 0, agreed = 0;
    double t0 = rs_cli_now(), t1 = 0, t2 = 0;
    const char *header = NULL;
    size_t header_len = 0;
    rs_dedup_opts o;
    memset(&o, 0, sizeof o);

    /* Pass 2 allocates and frees a buffer and a table per bucket: keep freed
     * memory in the heap, so that every bucket does not pay for munmap and
     * fresh zeroed pages (measured: pass 2 2.7x faster on 2 threads). */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    if (a.buckets_dir) {
        /* the directory is opened once: every bucket is read through it */
        char *mpath = in_mpath = join(a.buckets_dir, "/", "manifest.json");
        int opened = mpath ? rs_bucketdir_open(&bd, a.buckets_dir, &err)
                           : rs_error_set(&err, RS_EXIT_IO, "out of memory");
        if (rs_cluster_same_dir(&bd, &err) != 0 || opened != 0)  /* collective: every rank calls it */
            goto out;
        const rs_manifest in_m = bd.m;
        if (!in_m.kind || strcmp(in_m.kind, "buckets") != 0) {
            rs_error_set(&err, RS_EXIT_DATA, "%s: kind '%s': dedup reads bucket directories", mpath,
                         in_m.kind ? in_m.kind : "?");
            goto out;
        }
        if (in_m.keys_only) {
            rs_error_set(&err, RS_EXIT_DATA, "%s: a --keys-only bucket directory has no rows to keep", mpath);
            goto out;
        }
        /* the ring every row's placement is checked against */
        rs_ring_opts ropts;
        rs_nodes rnodes = {0};
        if (rs_ring_parse_description(in_m.ring_description, &ropts, &rnodes, &err) == 0)
            ring = rs_ring_build(&ropts, &rnodes, &err);
        rs_nodes_free(&rnodes);
        if (!ring)
            goto out;
        a.po.dialect.delim = in_mp->delimiter;
        a.po.header = in_mp->header;
        a.po.key = in_mp->key;
        header = in_mp->header_line;
        header_len = header ? strlen(header) : 0;
    } else {
        ring = rs_cli_ring_build_within(&a.ro, a.po.memory, &err);
        if (!ring)
            goto out;
    }
    /* under MPI, a rank that failed so far (a node file or manifest it
     * could not read) stops every rank here; see also out: */
    if (rs_world_agree_once(&agreed, &err) != 0)
        goto out;
    rs_cli_threads_ready(rs_pipeline_threads(&a.po), &err);
    if (rs_cluster_outdir_begin(&od, a.outdir, a.force, &err) != 0)
        goto out;
    begun = 1;
    pass1 = rs_outdir_path(&od, ".pass1");
    if (!pass1 || (rs_world_rank() == 0 && mkdir(pass1, 0700) != 0))
        rs_error_set(&err, RS_EXIT_IO, "%s: cannot create: %s", pass1 ? pass1 : a.outdir, strerror(errno));
    if (rs_world_agree(&err) != 0 || rs_cluster_quarantine_begin(&a.po, &od, &q, &err) != 0)
        goto out;

    /* the buckets: their names, and pass 1 when reading inputs */
    njobs = a.buckets_dir ? (uint32_t)in_mp->nfiles : rs_ring_nodes(ring)->count;
    jobs = calloc(njobs ? njobs : 1, sizeof *jobs);
    out_names = calloc(njobs ? njobs : 1, sizeof *out_names);
    if (!jobs || !out_names) {
        rs_error_set(&err, RS_EXIT_IO, "out of memory");
        goto setup_done;
    }
    for (uint32_t i = 0; i < njobs; i++) {
        char num[32];
        snprintf(num, sizeof num, "/%u", i);
        if (a.buckets_dir) {
            const rs_manifest_file *f = &in_mp->files[i];
            int64_t node = f->node ? rs_nodes_find(rs_ring_nodes(ring), f->node) : -1;
            if (node < 0) {
                rs_error_set(&err, RS_EXIT_DATA, "%s: file %s belongs to node '%s', not on its ring", in_mpath,
                             f->file, f->node ? f->node : "");
                goto setup_done;
            }
            out_names[i] = renamed(f->file, a.compress);
            jobs[i].in = join(a.buckets_dir, "/", f->file);
            jobs[i].in_name = f->file;
            jobs[i].node = f->node;
            jobs[i].rows = f->rows;
            jobs[i].bytes = f->bytes;
            jobs[i].place = (placement){ring, (uint32_t)node};
            jobs[i].check = (rs_dedup_check){f->rows, f->bytes, f->file_bytes, f->crc32, in_mpath, f->node,
                                             &o.keyspec, placed_on, &jobs[i].place};
        } else {
            const char *node = rs_ring_nodes(ring)->names[i];
            char *safe = rs_safe_filename(node);
            out_names[i] = safe ? join(safe, rs_cli_data_ext(a.compress), "") : NULL;
            free(safe);
            jobs[i].in = join(pass1, num, rs_cli_data_ext(a.temp_compress));
            jobs[i].node = node;
        }
        jobs[i].out = out_names[i] ? rs_outdir_path(&od, out_names[i]) : NULL;
        jobs[i].dups = a.dups_path ? join(pass1, num, ".dups") : NULL;
        if (!out_names[i] || !jobs[i].in || !jobs[i].out || (a.dups_path && !jobs[i].dups)) {
            rs_error_set(&err, RS_EXIT_IO, "out of memory");
            goto setup_done;
        }
    }
setup_done:  /* every rank agrees before the collective pass 1 */
    if (rs_world_agree(&err) != 0)
        goto out;
    if (!a.buckets_dir) {
        char **paths = malloc((njobs ? njobs : 1) * sizeof *paths);
        if (!paths)
            abort();  /* a few KiB: not worth a path that other ranks must follow */
        for (uint32_t i = 0; i < njobs; i++)
            paths[i] = jobs[i].in;
        rs_pipeline_route_by_ring(&a.po, ring);  /* njobs == the node count here */
        a.po.dest_paths = (const char *const *)paths;
        a.po.compress = a.temp_compress;
        a.po.level = 1;
        int prc = rs_cluster_pipeline_run(&a.po, &res, &err);  /* whole buckets on the shared file system */
        free(paths);
        a.po.dest_paths = NULL;
        if (prc != 0)
            goto out;
        for (uint32_t i = 0; i < njobs; i++) {
            jobs[i].rows = res.dest[i].rows;
            jobs[i].bytes = res.dest[i].bytes;
        }
        header = res.header;
        header_len = res.header_len;
    }
    t1 = rs_cli_now() - t0;

    /* pass 2 */
    o.dialect = a.po.dialect;
    if (!o.dialect.max_record)
        o.dialect.max_record = (size_t)(a.po.memory / 16);
    o.header = a.po.header;
    o.mode = a.by_row ? RS_DEDUP_BY_ROW : a.keep_last ? RS_DEDUP_KEEP_LAST : RS_DEDUP_KEEP_FIRST;
    o.codec = a.po.codec;
    o.compress = a.compress;
    o.level = a.level;
    o.tmpdir = pass1;
    o.in_dirfd = bd.fd;  /* --buckets: jobs[].in_name are under it */
    int threads = rs_pipeline_threads(&a.po);
    o.budget = a.po.memory / (uint64_t)(threads > 0 ? threads : 1);
    /* --buckets checks every row's placement by the key, in any mode */
    if ((!a.by_row || a.buckets_dir) && rs_dedup_keyspec(a.po.key, a.po.key_sep, &o.dialect, header, header_len, &o.keyspec, &err) != 0)
        goto out;
    double t2s = rs_cli_now();
    /* Under MPI each rank takes a contiguous range of buckets, balanced by
     * bytes: a failure of the lowest rank is that of the lowest bucket. */
    size_t blo = 0, bhi = njobs;
    if (rs_world_size() > 1) {
        uint64_t *w = malloc((njobs ? njobs : 1) * sizeof *w);
        if (!w)
            abort();
        for (uint32_t i = 0; i < njobs; i++)
            w[i] = jobs[i].bytes + 4096;
        rs_cluster_partition(w, njobs, rs_world_size(), rs_world_rank(), &blo, &bhi);
        free(w);
    }
    pass2(jobs + blo, (uint32_t)(bhi - blo), (uint32_t)blo, &o, threads, &err);
    if (rs_world_size() > 1 && rs_world_rank() != 0 && bhi > blo && !err.code) {
        /* on a network file system rank 0's fsyncs at publication do not
         * reach this rank's writes: flush them first */
        int fd = open(pass1, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || syncfs(fd) != 0)
            rs_error_set(&err, RS_EXIT_IO, "%s: sync failed: %s", pass1, strerror(errno));
        if (fd >= 0)
            close(fd);
    }
    if (rs_world_agree(&err) != 0)
        goto out;
    if (rs_world_size() > 1)
        share_results(jobs, njobs, blo, bhi);
    if (check_conservation(&a, &res, in_mp, jobs, njobs, &err) != 0)
        goto out;
    for (size_t i = blo; i < bhi; i++)
        if (!a.buckets_dir)
            unlink(jobs[i].in);
    /* the rest is rank 0's (its errors are agreed on at publication) */
    rs_world_barrier();
    if (rs_world_rank() != 0)
        goto publish;
    if (a.dups_path) {
        const char *dtmp = rs_outdir_side(&od, a.dups_path, &err);   /* renamed with the publication */
        if (!dtmp || write_duplicates(dtmp, a.dups_path, jobs, njobs, &err) != 0)
            goto publish;
    }
    if (rmdir(pass1) != 0) {
        rs_error_set(&err, RS_EXIT_IO, "%s: cannot remove: %s", pass1, strerror(errno));
        goto publish;
    }
    t2 = rs_cli_now() - t2s;

    /* the manifest: bucket's, with the survivors' files */
    m.schema = 1;
    m.kind = "buckets";
    m.tool_version = RS_VERSION;
    m.ring_description = a.buckets_dir ? in_mp->ring_description : (char *)rs_ring_description(ring);
    m.ring_fingerprint = a.buckets_dir ? in_mp->ring_fingerprint : (char *)rs_ring_fingerprint(ring);
    m.key = a.buckets_dir ? in_mp->key : (char *)(a.po.key ? a.po.key : "1");
    m.delimiter = a.po.dialect.delim;
    m.header = header != NULL;
    m.header_line = (char *)header;
    m.compress = a.compress;
    m.level = a.level;
    m.keys_only = 0;
    if (a.buckets_dir) {
        m.ninputs = in_mp->ninputs;
        m.inputs = in_mp->inputs;
        m.rejected = in_mp->rejected;
    } else {
        m.ninputs = a.po.ninputs;
        m.inputs = calloc(a.po.ninputs ? a.po.ninputs : 1, sizeof *m.inputs);
        if (!m.inputs) {
            rs_error_set(&err, RS_EXIT_IO, "out of memory");
            goto publish;
        }
        for (size_t i = 0; i < a.po.ninputs; i++) {
            const rs_input_stats *in = &res.input[i];
            m.inputs[i] = (rs_manifest_input){(char *)in->path, in->size, in->rows, in->bytes, in->rejected,
                                              in->blank_lines, in->zero_padding};
        }
        m.rejected = res.rejected;
    }
    m.nfiles = njobs;
    m.files = calloc(njobs ? njobs : 1, sizeof *m.files);
    if (!m.files) {
        rs_error_set(&err, RS_EXIT_IO, "out of memory");
        goto publish;
    }
    for (uint32_t i = 0; i < njobs; i++) {
        const rs_dedup_result *d = &jobs[i].res;
        m.files[i] = (rs_manifest_file){out_names[i], (char *)jobs[i].node, NULL, NULL, d->rows, d->bytes,
                                        d->file_bytes, d->crc, 0};
        m.rows += d->rows;
        m.bytes += d->bytes;
    }
    m.seconds = t1 + t2;
    char *mpath = rs_outdir_path(&od, "manifest.json");
    int mrc = mpath ? rs_manifest_write(&m, mpath, &err) : rs_error_set(&err, RS_EXIT_IO, "out of memory");
    free(mpath);
    (void)mrc;
publish:
    begun = 0;
    if (rs_cluster_outdir_end(&od, &err) != 0)
        goto out;
    if (!a.quiet && rs_world_rank() == 0)
        summary(&a, jobs, njobs, t1, t2, m.rejected);
out:
    rs_world_agree_once(&agreed, &err);  /* meets the others' first agreement if this rank failed before it */
    if (begun)
        rs_cluster_outdir_abort(&od);
    rs_bucketdir_explain(&bd, &err);
    rs_cluster_quarantine_end(&q, 1, &err);   /* published with the directory: only released here */
    if (err.code)
        rc = rs_cli_fail("dedup", &err);
    if (a.buckets_dir)
        m.inputs = NULL;
    else
        free(m.inputs);
    free(m.files);
    rs_bucketdir_close(&bd);
    free(in_mpath);
    rs_pipeline_result_free(&res);
    for (uint32_t i = 0; jobs && i < njobs; i++) {
        free(jobs[i].in);
        free(jobs[i].out);
        free(jobs[i].dups);
        free(out_names[i]);
    }
    free(jobs);
    free(out_names);
    free(pass1);
    rs_ring_free(ring);
    return rc;
}
