/* ringshard bucket: every row into the output of the node that owns its key. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cli/cli.h"
#include "rs_config.h"
#include "ringshard/manifest.h"
#include "ringshard/outdir.h"

static const char bucket_help[] =
    "Usage: ringshard bucket [OPTIONS] -o DIR INPUT...\n"
    "Streams every row of the inputs, places its key on the ring and writes the\n"
    "row into DIR/<node>.csv.gz, one file per node (a node that gets nothing has\n"
    "a header-only file), plus DIR/manifest.json. Rows keep their bytes and\n"
    "their input order; line ends become LF. The output is byte-identical for\n"
    "any -j. DIR appears only when complete (written beside it, then renamed).\n\n"
    "Output options:\n"
    "  -o, --output DIR       the output directory (required)\n"
    "  --force                replace an existing DIR\n"
    "  --compress gzip|none   gzip members (default) or plain CSV\n"
    "  --level N              gzip level 1-9 (default 1)\n"
    "  --keys-only            write only the key column\n"
    "  -h, --help             this help\n\n"
    "File names: a node's name with bytes other than [A-Za-z0-9._-] as %XX and a\n"
    "leading '.' as %2E, so no name can leave DIR.\n\n";

enum { OPT_FORCE = RS_OPT__FIRST_COMMAND, OPT_COMPRESS, OPT_LEVEL, OPT_KEYS_ONLY };

static uint32_t route_ring(void *ctx, int tid, uint32_t input, const char *key, size_t keylen, const char *row,
                           size_t rowlen)
{
    (void)tid, (void)input, (void)row, (void)rowlen;
    return rs_ring_locate(ctx, key, keylen);
}

static uint64_t pos_ring(void *ctx, const char *key, size_t keylen) { return rs_ring_position(ctx, key, keylen); }
static void prefetch_index(void *ctx, uint64_t pos) { rs_ring_prefetch_index(ctx, pos); }
static void prefetch_point(void *ctx, uint64_t pos) { rs_ring_prefetch_point(ctx, pos); }
static uint32_t route_pos(void *ctx, int tid, uint32_t input, uint64_t pos, const char *row, size_t rowlen)
{
    (void)tid, (void)input, (void)row, (void)rowlen;
    return rs_ring_owner(ctx, pos);
}
static const rs_pos_router ring_router = {pos_ring, prefetch_index, prefetch_point, route_pos};

/* Fills the manifest's common part from a finished pipeline run. */
static int fill_manifest(rs_manifest *m, const rs_pipeline_opts *po, const rs_pipeline_result *res,
                         const rs_ring *ring, const char *const *files, rs_error *err)
{
    memset(m, 0, sizeof *m);
    m->schema = 1;
    m->kind = "buckets";
    m->tool_version = RS_VERSION;
    m->ring_description = (char *)rs_ring_description(ring);
    m->ring_fingerprint = (char *)rs_ring_fingerprint(ring);
    m->key = (char *)(po->key ? po->key : "1");
    m->delimiter = po->dialect.delim;
    m->header = res->header != NULL;
    m->header_line = res->header;
    m->compress = po->compress;
    m->level = po->level;
    m->keys_only = po->keys_only;
    m->ninputs = po->ninputs;
    m->inputs = calloc(po->ninputs, sizeof *m->inputs);
    m->nfiles = po->ndest;
    m->files = calloc(po->ndest, sizeof *m->files);
    if (!m->inputs || !m->files)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    for (size_t i = 0; i < po->ninputs; i++) {
        const rs_input_stats *in = &res->input[i];
        m->inputs[i] = (rs_manifest_input){(char *)in->path, in->size, in->rows, in->bytes, in->rejected, in->blank_lines};
    }
    const rs_nodes *nodes = rs_ring_nodes(ring);
    for (uint32_t d = 0; d < po->ndest; d++) {
        const rs_dest_stats *ds = &res->dest[d];
        const char *base = strrchr(files[d], '/');
        m->files[d] = (rs_manifest_file){(char *)(base ? base + 1 : files[d]), nodes->names[d], NULL, NULL,
                                         ds->rows, ds->bytes, ds->file_bytes, ds->crc, 0};
    }
    m->rows = res->rows;
    m->bytes = 0;  /* data bytes written (keys only: less than read) */
    for (uint32_t d = 0; d < po->ndest; d++)
        m->bytes += res->dest[d].bytes;
    m->rejected = res->rejected;
    m->seconds = res->seconds;
    return 0;
}

/* Conservation: every row read is written once or rejected. */
static int check_conservation(const rs_pipeline_opts *po, const rs_pipeline_result *res, rs_error *err)
{
    uint64_t in_rows = 0, in_bytes = 0, out_rows = 0, out_bytes = 0;
    for (size_t i = 0; i < po->ninputs; i++)
        in_rows += res->input[i].rows, in_bytes += res->input[i].bytes;
    for (uint32_t d = 0; d < po->ndest; d++)
        out_rows += res->dest[d].rows, out_bytes += res->dest[d].bytes;
    if (in_rows != out_rows || (!po->keys_only && in_bytes != out_bytes))
        return rs_error_set(err, RS_EXIT_IO,
                            "internal error: rows/bytes not conserved (in %llu/%llu, out %llu/%llu); nothing published",
                            (unsigned long long)in_rows, (unsigned long long)in_bytes, (unsigned long long)out_rows,
                            (unsigned long long)out_bytes);
    return 0;
}

static void summary(const rs_pipeline_opts *po, const rs_pipeline_result *res, const char *dir)
{
    uint64_t mn = UINT64_MAX, mx = 0;
    for (uint32_t d = 0; d < po->ndest; d++) {
        if (res->dest[d].rows < mn)
            mn = res->dest[d].rows;
        if (res->dest[d].rows > mx)
            mx = res->dest[d].rows;
    }
    double mean = po->ndest ? (double)res->rows / po->ndest : 0;
    fprintf(stderr,
            "ringshard bucket: %llu rows, %.1f MB into %u buckets in %s (%.2f s, %.2f M rows/s)\n"
            "  rows per bucket: min %llu, mean %.1f, max %llu, max/mean %.3f",
            (unsigned long long)res->rows, res->bytes / 1e6, po->ndest, dir, res->seconds,
            res->seconds > 0 ? res->rows / res->seconds / 1e6 : 0, (unsigned long long)mn, mean,
            (unsigned long long)mx, mean > 0 ? mx / mean : 0);
    if (res->rejected)
        fprintf(stderr, "; rejected rows: %llu", (unsigned long long)res->rejected);
    fputc('\n', stderr);
}

int rs_cmd_bucket(int argc, char **argv)
{
    static const struct option longopts[] = {
        RS_RING_LONGOPTS,
        RS_INPUT_LONGOPTS,
        {"output", required_argument, 0, 'o'},
        {"force", no_argument, 0, OPT_FORCE},
        {"compress", required_argument, 0, OPT_COMPRESS},
        {"level", required_argument, 0, OPT_LEVEL},
        {"keys-only", no_argument, 0, OPT_KEYS_ONLY},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    rs_cli_ring ro = {0};
    rs_pipeline_opts po;
    rs_cli_input_defaults(&po);
    const char *outdir = NULL;
    int force = 0, c, r;
    rs_error err = {0};
    unsigned long long v;
    optind = 1;
    while ((c = getopt_long(argc, argv, "ho:j:", longopts, NULL)) != -1) {
        if (rs_cli_ring_option(&ro, c, optarg))
            continue;
        if ((r = rs_cli_input_option(&po, c, optarg, &err)) != 0) {
            if (r < 0)
                return rs_cli_fail("bucket", &err);
            continue;
        }
        switch (c) {
        case 'o': outdir = optarg; break;
        case OPT_FORCE: force = 1; break;
        case OPT_COMPRESS:
            if (!strcmp(optarg, "gzip"))
                po.compress = 1;
            else if (!strcmp(optarg, "none"))
                po.compress = 0;
            else
                return rs_cli_usage_error("bucket", "--compress: expected gzip or none");
            break;
        case OPT_LEVEL:
            if (rs_cli_uint("--level", optarg, 1, 9, &v, &err) != 0)
                return rs_cli_fail("bucket", &err);
            po.level = (int)v;
            break;
        case OPT_KEYS_ONLY: po.keys_only = 1; break;
        case 'h':
            fputs(bucket_help, stdout);
            fputs(rs_cli_input_help, stdout);
            fputc('\n', stdout);
            fputs(rs_cli_ring_help, stdout);
            return 0;
        default: return rs_cli_usage_error("bucket", "bad option");
        }
    }
    if (!outdir)
        return rs_cli_usage_error("bucket", "no output directory (-o DIR)");
    int quiet = rs_cli_input_finish(&po, argc, argv, optind, &err);
    if (quiet < 0)
        return rs_cli_fail("bucket", &err);
    rs_ring *ring = rs_cli_ring_build(&ro, &err);
    if (!ring)
        return rs_cli_fail("bucket", &err);
    const rs_nodes *nodes = rs_ring_nodes(ring);
    rs_outdir od = {0};
    char **files = calloc(nodes->count, sizeof *files);
    rs_pipeline_result res = {0};
    rs_manifest m = {0};
    int rc = 0, begun = 0;
    if (!files) {
        rs_error_set(&err, RS_EXIT_IO, "out of memory");
        goto out;
    }
    if (rs_outdir_begin(&od, outdir, force, &err) != 0)
        goto out;
    begun = 1;
    for (uint32_t i = 0; i < nodes->count; i++) {
        char *safe = rs_safe_filename(nodes->names[i]);
        size_t n = strlen(safe) + 16;
        char *name = malloc(n);
        if (!safe || !name) {
            free(safe);
            free(name);
            rs_error_set(&err, RS_EXIT_IO, "out of memory");
            goto out;
        }
        snprintf(name, n, "%s%s", safe, po.compress ? ".csv.gz" : ".csv");
        files[i] = rs_outdir_path(&od, name);
        free(safe);
        free(name);
        if (!files[i]) {
            rs_error_set(&err, RS_EXIT_IO, "out of memory");
            goto out;
        }
    }
    po.ndest = nodes->count;
    po.route = route_ring;
    po.pos_router = &ring_router;
    po.route_ctx = ring;
    po.dest_paths = (const char *const *)files;
    if (rs_pipeline_run(&po, &res, &err) != 0)
        goto out;
    if (check_conservation(&po, &res, &err) != 0)
        goto out;
    if (fill_manifest(&m, &po, &res, ring, (const char *const *)files, &err) != 0)
        goto out;
    char *mpath = rs_outdir_path(&od, "manifest.json");
    int mrc = mpath ? rs_manifest_write(&m, mpath, &err) : rs_error_set(&err, RS_EXIT_IO, "out of memory");
    free(mpath);
    if (mrc != 0)
        goto out;
    double t_publish = rs_cli_now();
    if (rs_outdir_commit(&od, &err) != 0)
        goto out;
    begun = 0;
    if (!quiet) {
        summary(&po, &res, outdir);
        fprintf(stderr, "  flushed to disk and published in %.2f s\n", rs_cli_now() - t_publish);
    }
out:
    if (begun)
        rs_outdir_abort(&od);
    if (err.code)
        rc = rs_cli_fail("bucket", &err);
    free(m.inputs);
    free(m.files);
    rs_pipeline_result_free(&res);
    for (uint32_t i = 0; files && i < nodes->count; i++)
        free(files[i]);
    free(files);
    rs_ring_free(ring);
    return rc;
}
