/* ringshard/job_simulate.h - the simulate job: balance and movement of
 * synthetic keys on a ring (or a sweep of rings differing in their vnode
 * count), optionally against a changed node set and bounded loads. The
 * keys are generated, hashed and counted per node in parallel (per-thread
 * counters, summed); the bounded-load placement is sequential, in key
 * order. docs/stats.md derives every number. */
#ifndef RINGSHARD_JOB_SIMULATE_H
#define RINGSHARD_JOB_SIMULATE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "ringshard/error.h"
#include "ringshard/nodes.h"
#include "ringshard/ring.h"
#include "ringshard/stats.h"

#define RS_SIMULATE_MAX_SWEEP 64   /* rings in one sweep */

typedef struct {
    rs_ring_opts ring;              /* the ring's options */
    const rs_nodes *nodes;          /* its nodes (with their down marks) */
    const uint32_t *vnodes;         /* a sweep: one ring per value, as ring.vnodes; NULL: one ring */
    size_t nvnodes;                 /* at most RS_SIMULATE_MAX_SWEEP */
    uint64_t keys;                  /* synthetic keys, >= 1 */
    rs_key_pattern pattern;
    uint64_t key_seed;
    int threads;                    /* OpenMP threads, >= 1 */
    /* the change (no list and add 0: none), applied to a copy of each
     * ring's nodes by rs_node_edits_apply (remove, reweight, add_names,
     * add; edits.slots is the job's; edits.down is not read: the caller
     * marks the base nodes down) */
    rs_node_edits edits;
    double z;                       /* flag nodes outside the band of z sds */
    double factor;                  /* bounded loads' capacity factor (>= 1); NAN: none */
} rs_simulate_job_opts;

/* One simulated ring of the result. */
typedef struct {
    uint32_t vnodes;                /* the sweep's value; 0: not a sweep */
    rs_ring *base, *changed;        /* changed: NULL without a change */
    uint32_t *map;                  /* base node -> changed node */
    uint64_t *counts, *counts_changed;  /* keys per node ([0..count) summed over the threads) */
    uint64_t moved;                 /* keys whose node changed */
    rs_balance bal, bal_changed;
    rs_node_stat *ns;               /* per base node */
    rs_bounded bounded;             /* with a factor */
    uint64_t *capacity, *load_after;/* per base node, with a factor */
    double ideal, exact_moved;      /* least share any placement must move; share of the space
                                       changing owner (NAN without arcs) */
} rs_simulate_ring;

typedef struct {
    size_t nrings;
    rs_simulate_ring *rings;
    char what[512];                 /* the change in words, names cut to fit, e.g.
                                       "remove 999; add 1000 (1000 -> 1000 nodes)" */
} rs_simulate_job_result;

/* Builds the ring(s) and the changed ring(s), counts o->keys keys on each
 * (o->threads threads), their balance and, with a factor, the bounded
 * placement. Writes nothing. *r must be zeroed; it is filled as far as the
 * job got and rs_simulate_job_result_free releases it either way. Returns
 * 0, or -1 with err (RS_EXIT_USAGE: a sweep of a scheme without vnodes, a
 * change rs_node_edits_apply refuses; RS_EXIT_IO: out of memory;
 * RS_EXIT_INTERRUPTED "interrupted": the stop flag (interrupt.h) was
 * raised, seen within a block of keys in the counting and the bounded
 * placement). Not collective. */
int rs_simulate_job_run(const rs_simulate_job_opts *o, rs_simulate_job_result *r, rs_error *err);

/* The sweep's line chart (relative spread by vnode count: observed, the
 * rings' exact expectation, the random-ring theory, max/mean - 1, and the
 * moved fraction with a change) as SVG, or HTML when html, published
 * whole at path. 0, or -1 with err (RS_EXIT_IO). */
int rs_simulate_sweep_picture(const char *path, int html, const rs_simulate_job_opts *o,
                              const rs_simulate_job_result *r, const char *title, rs_error *err);

/* Prints the sweep's table of r, run with o, to f: a comment line naming
 * the keys (pattern), the ring and the change, then one TSV row per vnode
 * count; changing adds the moved columns, a factor not NaN the bounded-load
 * ones. Write errors are left in f's error flag. */
void rs_simulate_job_print_sweep(FILE *f, const rs_simulate_job_opts *o, const rs_simulate_job_result *r,
                                 const char *pattern, int changing, double factor);

/* Prints the one ring's summary of r to f (with tsv, the per-node table
 * instead): the ring, the keys (pattern), balance, the flagged nodes, the
 * change when changing, the bounded loads when factor is not NaN. */
void rs_simulate_job_print_one(FILE *f, const rs_simulate_job_opts *o, const rs_simulate_job_result *r,
                               const char *pattern, int changing, int tsv, double factor);

void rs_simulate_job_result_free(rs_simulate_job_result *r);

#endif
