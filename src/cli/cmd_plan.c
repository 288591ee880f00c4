/* ringshard plan: what moves where when the node set changes - the exact
 * ring diff without data, counted keys and bytes with data, the moved rows
 * themselves with --emit. The options fill the plan job
 * (ringshard/job_plan.h, src/jobs/plan.c); cli/plan_print.c holds its
 * help and prints its result. The plan JSON schema is in docs/plan.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "cli/plan_print.h"
#include "cluster/world.h"
#include "ringshard/job_plan.h"
#include "ringshard/outdir.h"

enum {
    OPT_OLD_NODES = RS_OPT__FIRST_COMMAND, OPT_OLD_NODES_FILE, OPT_NEW_NODES, OPT_NEW_NODES_FILE, OPT_ADD,
    OPT_ADD_NAMES, OPT_REMOVE, OPT_REWEIGHT, OPT_FROM_BUCKETS, OPT_RING_ONLY, OPT_JSON, OPT_JSON_ARCS, OPT_ARCS,
    OPT_PAIRS, OPT_TOP, OPT_STRICT, OPT_EMIT, OPT_FORCE, OPT_BATCH_BYTES,
    OPT_WAVE_ORDER, OPT_SVG, OPT_HTML, OPT_FORCE_ANY
};

#define MAX_CHANGES 256

/* The options as given: the job's, and what the command turns into them. */
typedef struct {
    rs_plan_job_opts o;
    rs_cli_ring ro;
    const char *old_nodes, *old_nodes_file, *new_nodes, *new_nodes_file;
    unsigned long long add, top, batch_bytes;
    const char *add_names[MAX_CHANGES], *remove[MAX_CHANGES], *reweight[MAX_CHANGES];
    int have_order;
} plan_args;

static int push(const char **list, int *n, const char *v, const char *what, rs_error *err)
{
    if (*n >= MAX_CHANGES)
        return rs_error_set(err, RS_EXIT_USAGE, "%s: at most %d times (use a comma-separated list)", what,
                            MAX_CHANGES);
    list[(*n)++] = v;
    return 0;
}

/* Parses the options into *a and *po. Returns -1 to go on, else the exit
 * code (the error printed; 0 after --help). */
static int parse_args(int argc, char **argv, plan_args *a, rs_pipeline_opts *po)
{
    static const struct option longopts[] = {
        RS_RING_LONGOPTS,
        RS_INPUT_LONGOPTS,
        {"old-nodes", required_argument, 0, OPT_OLD_NODES},
        {"old-nodes-file", required_argument, 0, OPT_OLD_NODES_FILE},
        {"new-nodes", required_argument, 0, OPT_NEW_NODES},
        {"new-nodes-file", required_argument, 0, OPT_NEW_NODES_FILE},
        {"add", required_argument, 0, OPT_ADD},
        {"add-names", required_argument, 0, OPT_ADD_NAMES},
        {"remove", required_argument, 0, OPT_REMOVE},
        {"reweight", required_argument, 0, OPT_REWEIGHT},
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
        switch (c) {
        case OPT_OLD_NODES: a->old_nodes = optarg; break;
        case OPT_OLD_NODES_FILE: a->old_nodes_file = optarg; break;
        case OPT_NEW_NODES: a->new_nodes = optarg; break;
        case OPT_NEW_NODES_FILE: a->new_nodes_file = optarg; break;
        case OPT_ADD:
            if (rs_cli_uint("--add", optarg, 1, 10000000, &a->add, &err) != 0)
                return rs_cli_fail("plan", &err);
            break;
        case OPT_ADD_NAMES:
            if (push(a->add_names, &a->o.nadd_names, optarg, "--add-names", &err) != 0)
                return rs_cli_fail("plan", &err);
            break;
        case OPT_REMOVE:
            if (push(a->remove, &a->o.nremove, optarg, "--remove", &err) != 0)
                return rs_cli_fail("plan", &err);
            break;
        case OPT_REWEIGHT:
            if (push(a->reweight, &a->o.nreweight, optarg, "--reweight", &err) != 0)
                return rs_cli_fail("plan", &err);
            break;
        case OPT_FROM_BUCKETS: a->o.from_buckets = optarg; break;
        case OPT_RING_ONLY: a->o.ring_only = 1; break;
        case OPT_JSON: a->o.json = optarg; break;
        case OPT_JSON_ARCS: a->o.json_arcs = 1; break;
        case OPT_ARCS: a->o.arcs = optarg; break;
        case OPT_PAIRS: a->o.pairs = optarg; break;
        case OPT_SVG: a->o.svg = optarg; break;
        case OPT_HTML: a->o.html = optarg; break;
        case OPT_TOP:
            if (rs_cli_uint("--top", optarg, 0, UINT32_MAX, &a->top, &err) != 0)
                return rs_cli_fail("plan", &err);
            break;
        case OPT_STRICT: a->o.strict = 1; break;
        case OPT_EMIT: a->o.emit = optarg; break;
        case OPT_FORCE: a->o.force |= RS_OUTDIR_FORCE; break;
        case OPT_FORCE_ANY: a->o.force |= RS_OUTDIR_FORCE | RS_OUTDIR_FORCE_ANY; break;
        case OPT_BATCH_BYTES:
            if (rs_cli_size("--batch-bytes", optarg, &a->batch_bytes, &err) != 0)
                return rs_cli_fail("plan", &err);
            if (!a->batch_bytes)
                return rs_cli_usage_error("plan", "--batch-bytes: must be positive");
            break;
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

/* The options that do not fit together, in the order they were always
 * checked. Returns -1 to go on, else the exit code (the error printed). */
static int check_args(plan_args *a, const rs_pipeline_opts *po, int have_inputs, int data)
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

/* The ring options the job takes ready: the old side's ring (unless
 * --from-buckets takes it from the manifest) and the new side's count. */
static int ring_sides(const plan_args *a, rs_plan_job_opts *o, rs_nodes *old_nodes, rs_error *err)
{
    int have_new = a->new_nodes || a->new_nodes_file;
    int changes = a->add || a->o.nadd_names || a->o.nremove || a->o.nreweight;
    if (!have_new && !changes)
        return rs_error_set(err, RS_EXIT_USAGE,
                            "no new side: give --new-nodes, --new-nodes-file or a change (--add, --add-names, "
                            "--remove, --reweight)");
    if (a->o.from_buckets) {
        if (rs_cli_ring_given(&a->ro) || a->old_nodes || a->old_nodes_file)
            return rs_error_set(err, RS_EXIT_USAGE,
                                "--from-buckets takes the old ring from %s/manifest.json: no ring or old-node options",
                                a->o.from_buckets);
    } else {
        rs_cli_ring ro = a->ro;
        ro.nodes = a->old_nodes;
        ro.nodes_file = a->old_nodes_file;
        ro.down = NULL;  /* the job marks --down on both sides */
        if (ro.nodes && ro.nodes_file)
            return rs_error_set(err, RS_EXIT_USAGE, "--old-nodes and --old-nodes-file exclude each other");
        if (rs_cli_ring_finish(&ro, &o->ring, old_nodes, err) != 0)
            return -1;
        o->old_nodes = old_nodes;
    }
    if (a->new_nodes && a->new_nodes_file)
        return rs_error_set(err, RS_EXIT_USAGE, "--new-nodes and --new-nodes-file exclude each other");
    unsigned long long n = 0;
    if (a->new_nodes && !a->new_nodes_file && rs_cli_uint("--new-nodes", a->new_nodes, 1, 10000000, &n, err) != 0)
        return -1;
    o->new_count = (uint32_t)n;
    o->new_nodes_file = a->new_nodes_file;
    return 0;
}

/* The INPUT arguments and --files-from lists, taken when the job asks. */
typedef struct {
    int argc, first;
    char **argv;
} inputs_ctx;

static int take_inputs(rs_pipeline_opts *po, void *ctx, rs_error *err)
{
    inputs_ctx *c = ctx;
    return rs_cli_input_finish(po, c->argc, c->argv, c->first, err);
}

/* The rest of the job's options: the lists, the data's pipeline and the
 * inputs, taken when the job asks. */
static void fill_job(plan_args *a, const rs_pipeline_opts *po, int data, inputs_ctx *ic)
{
    rs_plan_job_opts *o = &a->o;
    o->down = a->ro.down;
    o->remove = a->remove, o->reweight = a->reweight, o->add_names = a->add_names;
    o->add = (uint32_t)a->add;
    o->batch_bytes = a->batch_bytes;
    o->data = data;
    o->pipe = *po;
    o->take_inputs = take_inputs;
    o->take_inputs_ctx = ic;
}

int rs_cmd_plan(int argc, char **argv)
{
    plan_args a;
    memset(&a, 0, sizeof a);
    a.top = 10;
    rs_pipeline_opts po;
    rs_cli_input_defaults(&po);
    int r = parse_args(argc, argv, &a, &po);
    if (r >= 0)
        return r;
    int have_inputs = optind < argc || rs_cli_files_from_given();
    int data = have_inputs || (a.o.from_buckets && !a.o.ring_only);
    if ((r = check_args(&a, &po, have_inputs, data)) >= 0)
        return r;

    rs_error err = {0};
    rs_plan_job_result res = {0};
    rs_nodes old_nodes = {0};
    char *dummy[1] = {(char *)"-"};
    inputs_ctx ic = {argc, optind, argv};
    if (a.o.from_buckets)
        ic = (inputs_ctx){1, 0, dummy};  /* the job takes the directory's files */
    int rc = 0, quiet = po.progress < 0, agreed = 0;
    /* A run that writes a file or reads data stops on a signal with exit
     * 130, nothing published, from the ring build on; a plan printed to
     * stdout alone keeps the signals' default action (nothing to clean up,
     * and the diff does not poll the flag). */
    if (data || a.o.json || a.o.arcs || a.o.pairs || a.o.svg || a.o.html)
        rs_cli_install_signals();
    if (ring_sides(&a, &a.o, &old_nodes, &err) != 0) {
        if (data)  /* under MPI the other ranks meet this rank's failure */
            rs_world_agree_once(&agreed, &err);
        goto out;
    }
    fill_job(&a, &po, data, &ic);
    int ran = rs_plan_job_run(&a.o, &res, &err);
    rs_metrics *m = rs_cli_metrics();
    if (m) {
        m->inputs = res.data.ninputs;
        m->rows_read = res.data.rows, m->bytes_read = res.data.bytes, m->rows_rejected = res.data.rejected;
        m->rows_written = res.data.emitted ? res.data.moved_rows : 0;
        m->bytes_written = res.data.emitted ? res.data.moved_bytes : 0;
        rs_metrics_add_phase(m, "ring", res.build_seconds);
        rs_metrics_add_phase(m, "diff", res.diff_seconds);
        rs_metrics_add_phase(m, "data", res.data.seconds);
    }
    if (ran != 0)
        goto out;
    rc = res.verify_failed ? RS_EXIT_VERIFY : 0;
    if (rs_world_rank() != 0)  /* under MPI, rank 0 prints */
        goto out;
    if (!quiet) {
        rs_cli_plan_summary(rs_cli_summary(), &a.o, a.top, &res);
        if (rs_cli_flush_stdout(&err) != 0)
            goto out;
    }
    if (res.data.mismatches)
        fprintf(stderr, "ringshard plan: %llu rows of %s sit in the wrong bucket%s\n",
                (unsigned long long)res.data.mismatches, a.o.from_buckets, a.o.emit ? "; nothing emitted" : "");
    else if (res.verify_failed)
        fprintf(stderr, "ringshard plan: --strict: %s does not hold\n", rs_plan_check_property(res.plan.check));
out:
    if (err.code)
        rc = rs_cli_fail("plan", &err);
    rs_plan_job_result_free(&res);
    rs_nodes_free(&old_nodes);
    return rc;
}
