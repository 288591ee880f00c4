/* ringshard/job_plan.h - the plan job: what moves where when a node set
 * changes. Without data, the exact ring diff (ringshard/plan.h); with data
 * (CSV inputs, or the rows of a bucket directory), keys and bytes counted
 * per (from, to) pair, and with an emit directory the moved rows
 * themselves (one <from>__<to> file per pair plus manifest.json, kind
 * "moves", published whole). The `ringshard plan` command is this job
 * plus its option parsing and its summary. */
#ifndef RINGSHARD_JOB_PLAN_H
#define RINGSHARD_JOB_PLAN_H

#include <stdint.h>
#include <stdio.h>
#include "ringshard/dataset.h"
#include "ringshard/error.h"
#include "ringshard/nodes.h"
#include "ringshard/pipeline.h"
#include "ringshard/plan.h"
#include "ringshard/ring.h"

typedef struct {
    /* The old side: the ring's options and nodes, or (from_buckets) the
     * ring DIR/manifest.json was written with, whose rows are the data
     * unless ring_only. */
    rs_ring_opts ring;
    const rs_nodes *old_nodes;      /* unused with from_buckets */
    const char *from_buckets;
    int ring_only;
    /* The new side: an explicit node set (new_count nodes "0".."N-1" or a
     * node file; neither: a copy of the old side), then the changes, in
     * this order: down (both sides, rs_node_edits_down), remove, reweight,
     * add_names, add (rs_node_edits_apply; edits.slots is the job's). */
    uint32_t new_count;             /* 0: not given */
    const char *new_nodes_file;
    rs_node_edits edits;
    /* Data: the pipeline's options (inputs, key, dialect, threads...). */
    int data;                       /* count rows (inputs, or from_buckets without ring_only) */
    rs_pipeline_opts pipe;
    /* Called once the rings are diffed, before any row is read, so that
     * the inputs' errors come after the rings' (the command takes its
     * INPUT arguments and --files-from lists here); NULL when pipe is
     * complete. With from_buckets it is called too, then the inputs are
     * the directory's files. */
    int (*take_inputs)(rs_pipeline_opts *po, void *ctx, rs_error *err);
    void *take_inputs_ctx;
    const char *emit;               /* directory of the moved rows, or NULL */
    int force;                      /* RS_OUTDIR_FORCE* for emit */
    uint64_t batch_bytes;           /* group the moves into waves of at most this, 0: no waves */
    int largest_first;              /* wave order */
    /* Files (each published whole; NULL: not wanted). */
    const char *json, *arcs, *pairs, *svg, *html;
    int json_arcs;                  /* every moving arc in json */
    int strict;                     /* a broken consistency property fails the job (verify_failed) */
    int quiet;                      /* no "rows read" line on stderr */
} rs_plan_job_opts;

typedef struct {
    rs_ring *old_ring, *new_ring;
    rs_plan plan;
    int have_plan;
    rs_plan_data data;              /* data.have: rows were counted */
    rs_bucketdir bd;                /* from_buckets: open; data's labels point into its manifest */
    double build_seconds, diff_seconds;
    int verify_failed;              /* rows in the wrong bucket, or (strict) the property broken */
    /* internal: the inputs taken from the bucket directory */
    rs_bucketdir_sel in_sel;        /* from_buckets: the pipeline's inputs */
    size_t *in_files;
} rs_plan_job_result;

/* Runs the plan: builds both rings, diffs them, counts the data (and
 * emits the moved rows) when o->data, and writes o's files (json, arcs,
 * pairs, svg, html; under MPI on rank 0 alone). Logs the rows read to
 * stderr unless o->pipe.progress < 0. Rows of from_buckets in the wrong
 * bucket emit nothing and set r->verify_failed, as does a broken
 * consistency property with o->strict; neither is an error.
 * Collective under MPI when o->data (the ranks share the inputs and agree
 * on every failure before returning). *r must be zeroed; it is filled
 * even on failure and rs_plan_job_result_free releases it either way.
 * Returns 0, or -1 with err (RS_EXIT_USAGE for options that do not fit
 * together, RS_EXIT_DATA for a bad node file or manifest, RS_EXIT_IO,
 * RS_EXIT_VERIFY for a file of from_buckets that is not what its manifest
 * says), nothing half-written published. */
int rs_plan_job_run(const rs_plan_job_opts *o, rs_plan_job_result *r, rs_error *err);

/* Prints the summary of r, run with o, to f (what `ringshard plan`
 * prints): the change, the method, moved/ideal/floor, balance,
 * consistency (violating pairs: max(top, 20) listed), the data, and the
 * top largest moves. Write errors are left in f's error flag. */
void rs_plan_job_print(FILE *f, const rs_plan_job_opts *o, unsigned long long top, const rs_plan_job_result *r);

/* Frees what r holds (the rings, the plan, the counts, the directory). */
void rs_plan_job_result_free(rs_plan_job_result *r);

#endif
