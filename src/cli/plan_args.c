/* The options of `ringshard plan` (cli/plan_args.h): parsed into the plan
 * job's options and what the command turns into them, then checked for
 * what does not fit together. */
#include <stdio.h>
#include <string.h>
#include "cli/plan_args.h"
#include "cli/plan_print.h"
#include "ringshard/dataset.h"

enum {
    OPT_OLD_NODES = RS_OPT__FIRST_COMMAND, OPT_OLD_NODES_FILE, OPT_NEW_NODES, OPT_NEW_NODES_FILE, OPT_FROM_BUCKETS, OPT_RING_ONLY, OPT_JSON, OPT_JSON_ARCS, OPT_ARCS,
    OPT_PAIRS, OPT_TOP, OPT_STRICT, OPT_EMIT, OPT_FORCE, OPT_BATCH_BYTES,
    OPT_WAVE_ORDER, OPT_SVG, OPT_HTML, OPT_FORCE_ANY
};

/* plan's own options. 1 if c is one (recorded in a), 0 if not; -1 with
 * err for a bad value, -2 with err for a usage error (err.msg: the message). */
static int plan_option(rs_cli_plan_args *a, int c, const char *arg, rs_error *err)
{
    switch (c) {
    case OPT_OLD_NODES: a->old_nodes = arg; break;
    case OPT_OLD_NODES_FILE: a->old_nodes_file = arg; break;
    case OPT_NEW_NODES: a->new_nodes = arg; break;
    case OPT_NEW_NODES_FILE: a->new_nodes_file = arg; break;
    case OPT_FROM_BUCKETS: a->o.from_buckets = arg; break;
    case OPT_RING_ONLY: a->o.ring_only = 1; break;
    case OPT_JSON: a->o.json = arg; break;
    case OPT_JSON_ARCS: a->o.json_arcs = 1; break;
    case OPT_ARCS: a->o.arcs = arg; break;
    case OPT_PAIRS: a->o.pairs = arg; break;
    case OPT_SVG: a->o.svg = arg; break;
    case OPT_HTML: a->o.html = arg; break;
    case OPT_TOP:
        if (rs_cli_uint("--top", arg, 0, UINT32_MAX, &a->top, err) != 0)
            return -1;
        break;
    case OPT_STRICT: a->o.strict = 1; break;
    case OPT_EMIT: a->o.emit = arg; break;
    case OPT_FORCE: a->o.force |= RS_OUTDIR_FORCE; break;
    case OPT_FORCE_ANY: a->o.force |= RS_OUTDIR_FORCE | RS_OUTDIR_FORCE_ANY; break;
    case OPT_BATCH_BYTES:
        if (rs_cli_size("--batch-bytes", arg, &a->batch_bytes, err) != 0)
            return -1;
        if (!a->batch_bytes)
            return rs_error_set(err, RS_EXIT_USAGE, "--batch-bytes: must be positive"), -2;
        break;
    default: return 0;
    }
    return 1;
}

int rs_cli_plan_parse(int argc, char **argv, rs_cli_plan_args *a, rs_pipeline_opts *po)
{
    static const struct option longopts[] = {
        RS_RING_LONGOPTS,
        RS_INPUT_LONGOPTS,
        {"old-nodes", required_argument, 0, OPT_OLD_NODES},
        {"old-nodes-file", required_argument, 0, OPT_OLD_NODES_FILE},
        {"new-nodes", required_argument, 0, OPT_NEW_NODES},
        {"new-nodes-file", required_argument, 0, OPT_NEW_NODES_FILE},
        RS_EDIT_LONGOPTS,
        {"from-buckets", required_argument, 0, OPT_FROM_BUCKETS},
        {"ring-only", no_argument, 0, OPT_RING_ONLY},
        {"json", required_argument, 0, OPT_JSON},
        {"json-arcs", no_argument, 0, OPT_JSON_ARCS},
        {"arcs", required_argument, 0, OPT_ARCS},
        {"pairs", required_argument, 0, OPT_PAIRS},
        {"top", required_argument, 0, OPT_TOP},
        {"strict", no_argument, 0, OPT_STRICT},
        {"emit", required_argument, 0, OPT_EMIT},
        {"force", no_argument, 0, OPT_FORCE},
        {"force-any", no_argument, 0, OPT_FORCE_ANY},
        RS_OUTPUT_LONGOPTS,
        {"batch-bytes", required_argument, 0, OPT_BATCH_BYTES},
        {"wave-order", required_argument, 0, OPT_WAVE_ORDER},
        {"svg", required_argument, 0, OPT_SVG},
        {"html", required_argument, 0, OPT_HTML},
        RS_METRICS_LONGOPT,
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    rs_error err = {0};
    int c, r;
    optind = 1;
    while ((c = rs_cli_getopt("plan", argc, argv, "hj:", longopts)) != -1) {
        if ((c == RS_OPT_ORDER && optarg && (!strcmp(optarg, "smallest") || !strcmp(optarg, "largest"))) ||
            c == OPT_WAVE_ORDER) {
            if (strcmp(optarg, "smallest") && strcmp(optarg, "largest"))
                return rs_cli_usage_error("plan", "--wave-order: expected smallest or largest");
            a->o.largest_first = !strcmp(optarg, "largest");
            a->have_order = 1;
            continue;
        }
        if (c == RS_OPT_NODES) {
            a->old_nodes = optarg;
            continue;
        }
        if (c == RS_OPT_NODES_FILE) {
            a->old_nodes_file = optarg;
            continue;
        }
        if ((r = rs_cli_edits_option(&a->ed, c, optarg, &err)) != 0) {  /* before the ring's --down */
            if (r < 0)
                return rs_cli_fail("plan", &err);
            continue;
        }
        if (rs_cli_ring_option(&a->ro, c, optarg))
            continue;
        if ((r = rs_cli_input_option(po, c, optarg, &err)) != 0) {
            if (r < 0)
                return rs_cli_fail("plan", &err);
            continue;
        }
        if ((r = rs_cli_metrics_option("plan", c, optarg, &err)) != 0) {
            if (r < 0)
                return rs_cli_fail("plan", &err);
            continue;
        }
        if ((r = rs_cli_output_option("plan", po, c, optarg)) != 0) {
            if (r < 0)
                return RS_EXIT_USAGE;
            continue;
        }
        if ((r = plan_option(a, c, optarg, &err)) != 0) {
            if (r == -1)
                return rs_cli_fail("plan", &err);
            if (r == -2)
                return rs_cli_usage_error("plan", err.msg);
            continue;
        }
        switch (c) {
        case 'h':
            fputs(rs_cli_plan_help, stdout);
            fputs(rs_cli_metrics_help, stdout);
            fputc('\n', stdout);
            fputs(rs_cli_input_help, stdout);
            fputc('\n', stdout);
            fputs(rs_cli_ring_help, stdout);
            return 0;
        default: return rs_cli_getopt_exit(c);
        }
    }
    return -1;
}

int rs_cli_plan_check(rs_cli_plan_args *a, const rs_pipeline_opts *po, int have_inputs, int data)
{
    rs_error err = {0};
    if (a->o.from_buckets && have_inputs)
        return rs_cli_usage_error("plan", "--from-buckets reads the bucket files: no INPUT arguments nor --files-from");
    if (a->o.ring_only && !a->o.from_buckets)
        return rs_cli_usage_error("plan", "--ring-only goes with --from-buckets");
    if (!data && (a->o.emit || a->batch_bytes))
        return rs_cli_usage_error("plan", "--emit and --batch-bytes need data (INPUT... or --from-buckets DIR)");
    if (a->have_order && !a->batch_bytes)
        return rs_cli_usage_error("plan", "--order smallest|largest goes with --batch-bytes");
    int rc = a->o.emit ? rs_cli_dir_not_stdout("plan", "--emit", a->o.emit, "a move directory",
                                               "write it to a directory (ringshard verify reads it back)")
                       : -1;
    if (rc >= 0)
        return rc;
    const char *const side[][2] = {{"--on-bad-row quarantine=", po->quarantine}, {"--json ", a->o.json},
                                   {"--arcs ", a->o.arcs}, {"--pairs ", a->o.pairs}, {"--svg ", a->o.svg},
                                   {"--html ", a->o.html}};
    for (size_t i = 0; i < sizeof side / sizeof *side; i++)
        if (rs_cli_outside_output(side[i][0], side[i][1], a->o.emit, &err) != 0)
            return rs_cli_fail("plan", &err);
    if (rs_cli_stdout_files(&err, "--json", &a->o.json, "--arcs", &a->o.arcs, "--pairs", &a->o.pairs, "--svg",
                            &a->o.svg, "--html", &a->o.html, NULL) != 0)
        return rs_cli_fail("plan", &err);
    return -1;
}
