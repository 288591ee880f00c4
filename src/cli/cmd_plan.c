/* ringshard plan: what moves where when the node set changes - the exact
 * ring diff without data, counted keys and bytes with data, the moved rows
 * themselves with --emit. The options (cli/plan_args.c) fill the plan job
 * (ringshard/job_plan.h, src/jobs/plan.c), whose summary
 * src/jobs/plan_print.c prints. The plan JSON schema is in docs/plan.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "cli/plan_args.h"
#include "cluster/world.h"
#include "ringshard/job_plan.h"
#include "ringshard/dataset.h"

/* The ring options the job takes ready: the old side's ring (unless
 * --from-buckets takes it from the manifest) and the new side's count. */
static int ring_sides(const rs_cli_plan_args *a, rs_plan_job_opts *o, rs_nodes *old_nodes, rs_error *err)
{
    int have_new = a->new_nodes || a->new_nodes_file;
    int changes = rs_cli_edits_change(&a->ed);
    if (!have_new && !changes)
        return rs_error_set(err, RS_EXIT_USAGE,
                            "no new side: give --new-nodes, --new-nodes-file or a change (--add, --add-names, "
                            "--remove, --reweight)");
    if (a->o.from_buckets) {
        if (rs_cli_ring_given(&a->ro))
            return rs_error_set(err, RS_EXIT_USAGE,
                                "--from-buckets takes the old ring from %s/manifest.json: no ring or old-node options",
                                a->o.from_buckets);
    } else {
        rs_cli_ring ro = a->ro;
        ro.down.n = 0;   /* --down is an edit here: the job marks it on both sides */
        if (ro.nodes && ro.nodes_file)
            return rs_error_set(err, RS_EXIT_USAGE, "--old-nodes and --old-nodes-file exclude each other");
        if (rs_cli_ring_finish(&ro, &o->ring, old_nodes, err) != 0)
            return -1;
        o->old_nodes = old_nodes;
    }
    if (a->new_nodes && a->new_nodes_file)
        return rs_error_set(err, RS_EXIT_USAGE, "--new-nodes and --new-nodes-file exclude each other");
    unsigned long long n = 0;
    if (a->new_nodes && !a->new_nodes_file && rs_parse_uint("--new-nodes", a->new_nodes, 1, 10000000, &n, err) != 0)
        return -1;
    o->new_count = (uint32_t)n;
    o->new_nodes_file = a->new_nodes_file;
    return 0;
}

/* The INPUT arguments and --files-from lists, taken when the job asks. */
typedef struct {
    int argc, first, quiet, from_buckets;
    char **argv;
} inputs_ctx;

static int take_inputs(rs_pipeline_opts *po, void *ctx, rs_error *err)
{
    inputs_ctx *c = ctx;
    if (!c->from_buckets)
        return rs_cli_input_finish(po, c->quiet, c->argc, c->argv, c->first, err);
    /* the job takes the directory's files: what is checked of the options,
     * then the progress line and the signals */
    if (rs_csv_keyspec_check(po->key, po->header, err) != 0 ||
        rs_level_check("--level", po->compress, po->level, err) != 0)
        return -1;
    return rs_cli_input_settle(po, c->quiet);
}

/* The rest of the job's options: the lists, the data's pipeline and the
 * inputs, taken when the job asks. */
static void fill_job(rs_cli_plan_args *a, const rs_pipeline_opts *po, int data, inputs_ctx *ic)
{
    rs_plan_job_opts *o = &a->o;
    rs_cli_edits_fill(&a->ed, &a->ro.down, &o->edits);   /* --down too: the job marks it on both sides */
    o->batch_bytes = a->batch_bytes;
    o->largest_first = a->wave_order == 1;
    o->data = data;
    o->quiet = a->quiet;
    o->pipe = *po;
    o->take_inputs = take_inputs;
    o->take_inputs_ctx = ic;
}

int rs_cmd_plan(int argc, char **argv)
{
    rs_cli_plan_args a;
    memset(&a, 0, sizeof a);
    a.top = 10;
    a.wave_order = -1;
    rs_pipeline_opts_default(&a.po);
    int optind, r = rs_cli_parse_options(&rs_cli_plan_command, &a, argc, argv, &optind);
    if (r >= 0)
        return r;
    rs_pipeline_opts po = a.po;
    int have_inputs = optind < argc || rs_cli_files_from_given();
    int data = have_inputs || (a.o.from_buckets && !a.o.ring_only);
    if ((r = rs_cli_plan_check(&a, &po, have_inputs, data)) >= 0)
        return r;

    rs_error err = {0};
    rs_plan_job_result res = {0};
    rs_nodes old_nodes = {0};
    inputs_ctx ic = {argc, optind, a.quiet, a.o.from_buckets != NULL, argv};
    int rc = 0, quiet = a.quiet, agreed = 0;
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
        rs_plan_job_print(rs_cli_summary(), &a.o, a.top, &res);
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
