/* ringshard stats: per-node balance of real data (the bucketing pipeline,
 * counting instead of writing) or of a bucket directory (its manifest, no
 * data read), against what the ring's exact shares and the theory of
 * random rings predict; capacity what-ifs; pictures. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cli/cli.h"
#include "cluster/cluster.h"
#include "ringshard/bucketdir.h"
#include "ringshard/stats.h"

static const char stats_help[] =
    "Usage: ringshard stats [OPTIONS] INPUT...             (or --files-from LIST)\n"
    "       ringshard stats [OPTIONS] DIR          (DIR/manifest.json of `bucket`)\n"
    "On INPUT files, reads the rows as `bucket` does and counts them per node\n"
    "(nothing is written); on a bucket directory, takes the rows per node and\n"
    "the ring from its manifest (no data is read; ring options are refused).\n"
    "Prints the rows per node (mean, min, max, sd, max/mean, min/mean), the\n"
    "observed sd next to the expected ones (binomial noise around the ring's\n"
    "exact shares; the 1/sqrt(V) spread of a random V-vnode ring), and flags\n"
    "the nodes whose count lies outside K*p_i +- Z*sqrt(K*p_i*(1-p_i)).\n"
    "docs/stats.md derives every number.\n\n"
    "  --z Z               width of the expected band in sds (default 3)\n"
    "  --capacity-factor F bounded loads (F >= 1): capacity ceil(F*K/N) per node;\n"
    "                      nodes over F*mean and the excess over capacity; on\n"
    "                      INPUTs also the rows that would spill to successors\n"
    "                      when placed in input order (routing then runs on one\n"
    "                      thread, to keep that order)\n"
    "  --tsv               instead of the summary, the per-node TSV table:\n"
    "                      node points share expected expected_sd count z flag\n"
    "                      [capacity load_after]\n"
    "  --svg FILE          write the bar chart and histogram as one SVG file\n"
    "  --html FILE         write a self-contained HTML report\n"
    "  -h, --help          this help\n\n";

/* The router: the owning node; with bounded loads (one thread) also each
 * row's start point, in input order. */
typedef struct {
    const rs_ring *ring;
    int record;
    uint32_t *start;
    uint64_t n, cap;
    int oom;
} stats_ctx;

static uint32_t route_count(void *ctx, int tid, uint32_t input, const char *key, size_t keylen, const char *row,
                            size_t rowlen)
{
    (void)tid, (void)input, (void)row, (void)rowlen;
    stats_ctx *c = ctx;
    uint64_t pos = rs_ring_position(c->ring, key, keylen);
    if (c->record) {
        if (c->n == c->cap) {
            uint64_t ncap = c->cap ? c->cap * 2 : 1 << 20;
            uint32_t *p = realloc(c->start, ncap * sizeof *p);
            if (!p) {
                c->oom = 1;
                rs_pipeline_interrupt();
                return rs_ring_owner(c->ring, pos);
            }
            c->start = p;
            c->cap = ncap;
        }
        c->start[c->n++] = rs_bounded_start(c->ring, pos);
    }
    return rs_ring_owner(c->ring, pos);
}

static int is_bucket_dir(const char *path, char *manifest, size_t cap)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return 0;
    snprintf(manifest, cap, "%s/manifest.json", path);
    return 1;
}

/* Counts per node from a bucket directory's manifest. */
static rs_ring *from_manifest(const char *dir, const char *mpath, uint64_t **counts_out, char *source, size_t scap,
                              rs_error *err)
{
    rs_bucketdir bd;
    rs_ring *ring = NULL;
    rs_nodes nodes = {0};
    uint64_t *counts = NULL;
    /* stats reads only the manifest, through one descriptor of DIR as
     * every reader of a bucket directory does */
    if (rs_bucketdir_open(&bd, dir, err) != 0)
        return NULL;
    const rs_manifest m = bd.m;
    if (!m.kind || strcmp(m.kind, "buckets") != 0) {
        rs_error_set(err, RS_EXIT_DATA, "%s: kind '%s': stats reads bucket directories (a move directory's flows: plan)",
                     mpath, m.kind ? m.kind : "?");
        goto out;
    }
    rs_ring_opts opts;
    if (rs_ring_parse_description(m.ring_description, &opts, &nodes, err) != 0)
        goto out;
    if (!(ring = rs_ring_build(&opts, &nodes, err)))
        goto out;
    if (m.ring_fingerprint && strcmp(m.ring_fingerprint, rs_ring_fingerprint(ring)) != 0) {
        rs_error_set(err, RS_EXIT_DATA, "%s: the ring's fingerprint %s does not match its description (%s)", mpath,
                     m.ring_fingerprint, rs_ring_fingerprint(ring));
        goto fail;
    }
    const rs_nodes *rn = rs_ring_nodes(ring);
    counts = calloc(rn->count ? rn->count : 1, sizeof *counts);
    if (!counts) {
        rs_error_set(err, RS_EXIT_IO, "out of memory");
        goto fail;
    }
    uint64_t total = 0;
    for (size_t i = 0; i < m.nfiles; i++) {
        int64_t k = m.files[i].node ? rs_nodes_find(rn, m.files[i].node) : -1;
        if (k < 0) {
            rs_error_set(err, RS_EXIT_DATA, "%s: file '%s' belongs to node '%s', which the ring does not have", mpath,
                         m.files[i].file ? m.files[i].file : "?", m.files[i].node ? m.files[i].node : "");
            goto fail;
        }
        counts[k] += m.files[i].rows;
        total += m.files[i].rows;
    }
    snprintf(source, scap, "bucket directory %s: %zu files, %llu rows, %.1f MB (manifest)", dir, m.nfiles,
             (unsigned long long)total, (double)m.bytes / 1e6);
    *counts_out = counts;
    goto out;
fail:
    rs_ring_free(ring);
    ring = NULL;
    free(counts);
out:
    rs_nodes_free(&nodes);
    rs_bucketdir_close(&bd);
    return ring;
}

int rs_cmd_stats(int argc, char **argv)
{
    static const struct option longopts[] = {
        RS_RING_LONGOPTS,
        RS_INPUT_LONGOPTS,
        RS_BALANCE_LONGOPTS,
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    rs_cli_ring ro = {0};
    rs_pipeline_opts po;
    rs_cli_input_defaults(&po);
    rs_cli_balance bo;
    rs_cli_balance_defaults(&bo);
    int c, r, input_opts = 0;
    rs_error err = {0};
    optind = 1;
    while ((c = getopt_long(argc, argv, "hj:", longopts, NULL)) != -1) {
        if (rs_cli_ring_option(&ro, c, optarg))
            continue;
        if ((r = rs_cli_input_option(&po, c, optarg, &err)) != 0) {
            if (r < 0)
                return rs_cli_fail("stats", &err);
            input_opts = 1;
            continue;
        }
        if ((r = rs_cli_balance_option(&bo, c, optarg, &err)) != 0) {
            if (r < 0)
                return rs_cli_fail("stats", &err);
            continue;
        }
        switch (c) {
        case 'h':
            fputs(stats_help, stdout);
            fputs(rs_cli_input_help, stdout);
            fputc('\n', stdout);
            fputs(rs_cli_ring_help, stdout);
            return 0;
        default: return rs_cli_usage_error("stats", "bad option");
        }
    }
    rs_ring *ring = NULL;
    uint64_t *counts = NULL, *capacity = NULL, *load = NULL;
    rs_node_stat *ns = NULL;
    rs_pipeline_result res = {0};
    stats_ctx ctx = {0};
    char source[1200] = "", mpath[4200];
    int rc = 0, quiet = 0, simulated = 0;
    if (optind == argc - 1 && is_bucket_dir(argv[optind], mpath, sizeof mpath)) {
        if (rs_cli_ring_given(&ro)) {
            rs_error_set(&err, RS_EXIT_USAGE, "ring options do not apply to %s: its ring is in manifest.json",
                         argv[optind]);
            goto fail;
        }
        if (input_opts) {
            rs_error_set(&err, RS_EXIT_USAGE, "input options do not apply to a bucket directory (%s)", argv[optind]);
            goto fail;
        }
        if (!(ring = from_manifest(argv[optind], mpath, &counts, source, sizeof source, &err)))
            goto fail;
    } else {
        if ((quiet = rs_cli_input_finish(&po, argc, argv, optind, &err)) < 0)
            goto fail;
        if (!(ring = rs_cli_ring_build_within(&ro, po.memory, &err)))
            goto fail;
        ctx.ring = ring;
        if (!isnan(bo.factor)) {
            /* bounded loads place rows in input order: one routing thread */
            ctx.record = 1;
            po.threads = 1;
        }
        po.ndest = rs_ring_nodes(ring)->count;
        po.route = route_count;
        po.route_ctx = &ctx;
        po.dest_paths = NULL;
        rs_cluster_quarantine q;
        int prc = rs_cluster_quarantine_begin(&po, NULL, &q, &err) != 0 ? -1 : rs_cluster_pipeline_run(&po, &res, &err);
        rs_cluster_quarantine_end(&q, prc == 0, &err);   /* a failed run leaves a previous file as it was */
        if (prc != 0 || err.code) {
            if (ctx.oom) {
                rs_error_clear(&err);
                rs_error_set(&err, RS_EXIT_IO, "out of memory: --capacity-factor keeps 4 bytes per row");
            }
            goto fail;
        }
        counts = calloc(po.ndest ? po.ndest : 1, sizeof *counts);
        if (!counts) {
            rs_error_set(&err, RS_EXIT_IO, "out of memory");
            goto fail;
        }
        for (uint32_t i = 0; i < po.ndest; i++)
            counts[i] = res.dest[i].rows;
        snprintf(source, sizeof source, "%zu input%s, %llu rows, %.1f MB read in %.2f s%s", po.ninputs,
                 po.ninputs == 1 ? "" : "s", (unsigned long long)res.rows, (double)res.bytes / 1e6, res.seconds,
                 res.rejected ? " (rows rejected: see below)" : "");
    }
    const rs_nodes *nodes = rs_ring_nodes(ring);
    rs_balance bal;
    rs_bounded bl;
    memset(&bl, 0, sizeof bl);
    if (!(ns = malloc((size_t)nodes->count * sizeof *ns))) {
        rs_error_set(&err, RS_EXIT_IO, "out of memory");
        goto fail;
    }
    if (rs_balance_compute(ring, counts, bo.z, ns, &bal, &err) != 0)
        goto fail;
    if (bal.total == 0) {
        rs_error_set(&err, RS_EXIT_DATA, "no rows to count");
        goto fail;
    }
    if (!isnan(bo.factor)) {
        capacity = malloc((size_t)nodes->count * sizeof *capacity);
        if (!capacity) {
            rs_error_set(&err, RS_EXIT_IO, "out of memory");
            goto fail;
        }
        if (rs_bounded_capacities(ring, bal.total, bo.factor, capacity, &err) != 0)
            goto fail;
        if (ctx.record) {
            if (!(load = malloc((size_t)nodes->count * sizeof *load))) {
                rs_error_set(&err, RS_EXIT_IO, "out of memory");
                goto fail;
            }
            if (rs_bounded_place(ring, ctx.start, ctx.n, counts, bo.factor, &bl, load, &err) != 0)
                goto fail;
            simulated = 1;
        } else if (rs_bounded_from_counts(ring, counts, bo.factor, &bl, &err) != 0) {
            goto fail;
        }
    }
    (void)simulated;
    if (bo.tsv) {
        rs_balance_print_table(stdout, ring, ns, capacity, load);
    } else {
        const rs_ring_opts *o = rs_ring_get_opts(ring);
        printf("%-24s%s\n", "source", source);
        printf("%-24sscheme %s, hash %s, fingerprint %s\n", "ring", rs_scheme_name(o->scheme),
               rs_hash_get(o->hash)->name, rs_ring_fingerprint(ring));
        if (res.rejected)
            printf("%-24s%llu\n", "rejected rows", (unsigned long long)res.rejected);
        rs_balance_print(stdout, ring, &bal, "rows");
        rs_balance_print_flagged(stdout, ring, ns, 10);
        if (!isnan(bo.factor))
            rs_bounded_print(stdout, &bl, "rows");
    }
    if (rs_cli_flush_stdout(&err) != 0)
        goto fail;
    char title[256];
    snprintf(title, sizeof title, "ringshard stats: %llu rows on %u nodes", (unsigned long long)bal.total, bal.nodes);
    if (rs_cli_balance_pictures(&bo, title, ring, &bal, ns, isnan(bo.factor) ? NULL : &bl, "rows", &err) != 0)
        goto fail;
    (void)quiet;
    goto done;
fail:
    rc = rs_cli_fail("stats", &err);
done:
    rs_pipeline_result_free(&res);
    rs_ring_free(ring);
    free(counts);
    free(capacity);
    free(load);
    free(ns);
    free(ctx.start);
    return rc;
}
