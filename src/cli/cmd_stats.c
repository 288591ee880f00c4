/* ringshard stats: per-node balance of real data (the bucketing pipeline,
 * counting instead of writing) or of a bucket directory (its manifest, no
 * data read), against what the ring's exact shares and the theory of
 * random rings predict; capacity what-ifs; pictures. The options fill the
 * stats job (ringshard/job_stats.h, src/jobs/stats.c); this file prints its
 * result and draws its pictures. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cli/cli.h"
#include "ringshard/dataset.h"
#include "ringshard/job_stats.h"
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
    "                      (a FILE '-' is standard output; the summary then goes\n"
    "                      to standard error)\n"
    "  -h, --help          this help\n\n";

static int is_bucket_dir(const char *path, char *manifest, size_t cap)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return 0;
    snprintf(manifest, cap, "%s/" RS_NAME_MANIFEST, path);
    return 1;
}

/* Parses the options. Returns -1 to go on, else the exit code (the error
 * printed; 0 after --help). *input_opts: an input option was given. */
static int parse_args(int argc, char **argv, rs_cli_ring *ro, rs_pipeline_opts *po, rs_cli_balance *bo,
                      int *input_opts)
{
    static const struct option longopts[] = {
        RS_RING_LONGOPTS,
        RS_INPUT_LONGOPTS,
        RS_BALANCE_LONGOPTS,
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    int c, r;
    rs_error err = {0};
    optind = 1;
    while ((c = rs_cli_getopt("stats", argc, argv, "hj:", longopts)) != -1) {
        if (rs_cli_ring_option(ro, c, optarg))
            continue;
        if ((r = rs_cli_input_option(po, c, optarg, &err)) != 0) {
            if (r < 0)
                return rs_cli_fail("stats", &err);
            *input_opts = 1;
            continue;
        }
        if ((r = rs_cli_balance_option(bo, c, optarg, &err)) != 0) {
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
        default: return rs_cli_getopt_exit(c);
        }
    }
    return -1;
}

/* The summary (or with --tsv the per-node table). */
static void print_result(const rs_stats_job_result *r, const rs_cli_balance *bo)
{
    FILE *out = rs_cli_summary();   /* stderr when a picture goes to stdout */
    const rs_ring *ring = r->ring;
    if (bo->tsv) {
        rs_balance_print_table(out, ring, r->ns, r->capacity, r->load);
        return;
    }
    const rs_ring_opts *o = rs_ring_get_opts(ring);
    fprintf(out, "%-24s%s\n", "source", r->source);
    fprintf(out, "%-24sscheme %s, hash %s, fingerprint %s\n", "ring", rs_scheme_name(o->scheme),
           rs_hash_get(o->hash)->name, rs_ring_fingerprint(ring));
    if (r->rejected)
        fprintf(out, "%-24s%llu\n", "rejected rows", (unsigned long long)r->rejected);
    rs_balance_print(out, ring, &r->bal, "rows");
    rs_balance_print_flagged(out, ring, r->ns, 10);
    if (!isnan(bo->factor))
        rs_bounded_print(out, &r->bl, "rows");
}

int rs_cmd_stats(int argc, char **argv)
{
    rs_cli_ring ro = {0};
    rs_pipeline_opts po;
    rs_cli_input_defaults(&po);
    rs_cli_balance bo;
    rs_cli_balance_defaults(&bo);
    int input_opts = 0;
    int r = parse_args(argc, argv, &ro, &po, &bo, &input_opts);
    if (r >= 0)
        return r;
    rs_error err = {0};
    rs_ring *ring = NULL;
    rs_stats_job_opts o = {.z = bo.z, .factor = bo.factor};
    rs_stats_job_result res = {0};
    char mpath[4200];
    int rc = 0;
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
        o.dir = argv[optind];
        if (bo.svg || bo.html)  /* as with data (rs_cli_input_finish), so that a stop signal drops the pictures */
            rs_cli_install_signals();
    } else {
        if (rs_cli_input_finish(&po, argc, argv, optind, &err) < 0)
            goto fail;
        if (!(ring = rs_cli_ring_build_within(&ro, po.memory, &err)))
            goto fail;
        o.ring = ring;
        o.pipe = po;
    }
    if (rs_stats_job_run(&o, &res, &err) != 0)
        goto fail;
    print_result(&res, &bo);
    if (rs_cli_flush_stdout(&err) != 0)
        goto fail;
    char title[256];
    snprintf(title, sizeof title, "ringshard stats: %llu rows on %u nodes", (unsigned long long)res.bal.total,
             res.bal.nodes);
    if (rs_cli_balance_pictures(&bo, title, res.ring, &res.bal, res.ns, isnan(bo.factor) ? NULL : &res.bl, "rows",
                                &err) != 0)
        goto fail;
    goto done;
fail:
    rc = rs_cli_fail("stats", &err);
done:
    rs_stats_job_result_free(&res);
    rs_ring_free(ring);
    return rc;
}
