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

typedef struct {
    rs_cli_ring ro;
    rs_pipeline_opts po;
    rs_cli_balance bo;
    int quiet;
    unsigned given;
} stats_args;

static const rs_opt_command stats_command = {
    "stats",
    "ringshard stats [OPTIONS] INPUT...             (or --files-from LIST)\n"
    "ringshard stats [OPTIONS] DIR          (DIR/manifest.json of `bucket`)",
    "On INPUT files, reads the rows as `bucket` does and counts them per node\n"
    "(nothing is written); on a bucket directory, takes the rows per node and\n"
    "the ring from its manifest (no data is read; ring options are refused).\n"
    "Prints the rows per node (mean, min, max, sd, max/mean, min/mean), the\n"
    "observed sd next to the expected ones (binomial noise around the ring's\n"
    "exact shares; the 1/sqrt(V) spread of a random V-vnode ring), and flags\n"
    "the nodes whose count lies outside K*p_i +- Z*sqrt(K*p_i*(1-p_i)).\n"
    "docs/stats.md derives every number.\n",
    (const rs_opt_section[]){
        {    "\n",
         22,
         (const rs_opt_use[]){
             RS_USE(rs_opt_z, stats_args, bo),
             RS_USE_HELP(rs_opt_capacity, stats_args, bo,
                         "bounded loads (F >= 1): capacity ceil(F*K/N) per node;\n"
                         "nodes over F*mean and the excess over capacity; on\n"
                         "INPUTs also the rows that would spill to successors\n"
                         "when placed in input order (routing then runs on one\n"
                         "thread, to keep that order)"),
             RS_USE(rs_opt_tsv, stats_args, bo),
             RS_USE_HELP(rs_opt_svg, stats_args, bo, "write the bar chart and histogram as one SVG file"),
             RS_USE_HELP(rs_opt_html, stats_args, bo,
                         "write a self-contained HTML report\n"
                         "(a FILE '-' is standard output; the summary then goes\n"
                         "to standard error)"),
             RS_HELP_USE, {NULL, 0, NULL, NULL}},
         "\n", 0, NULL, NULL},
        RS_INPUT_SECTION(stats_args, po, quiet, "\n"),
        RS_RING_SECTION(stats_args, ro),
        RS_SECTIONS_END},
    offsetof(stats_args, given)};

const rs_opt_command *rs_cmd_stats_options(void) { return &stats_command; }

static int is_bucket_dir(const char *path, char *manifest, size_t cap)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return 0;
    snprintf(manifest, cap, "%s/" RS_NAME_MANIFEST, path);
    return 1;
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
    stats_args a = {0};
    rs_pipeline_opts_default(&a.po);
    rs_cli_balance_defaults(&a.bo);
    int optind, r = rs_cli_parse_options(&stats_command, &a, argc, argv, &optind);
    if (r >= 0)
        return r;
    rs_cli_ring ro = a.ro;
    rs_pipeline_opts po = a.po;
    rs_cli_balance bo = a.bo;
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
        if (a.given & RS_CLI_GIVEN_INPUT) {
            rs_error_set(&err, RS_EXIT_USAGE, "input options do not apply to a bucket directory (%s)", argv[optind]);
            goto fail;
        }
        o.dir = argv[optind];
        if (bo.svg || bo.html)  /* as with data (rs_cli_input_finish), so that a stop signal drops the pictures */
            rs_cli_install_signals();
    } else {
        if (rs_cli_input_finish(&po, a.quiet, argc, argv, optind, &err) < 0)
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
