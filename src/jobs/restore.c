/* Appends that bring back what a repair could not keep (jobs/append.h):
 * an input whose manifest entry names "lost" nodes (a damaged file that
 * repair left out: docs/format-generations.md, "Rows a repair could not
 * keep") is not "already ingested" for those nodes. Its append writes only
 * their rows (only the ranges of them named "lost_rows", when a repair kept
 * the rest of a file), and its entry in the new generation says so
 * ("restored", "restored_rows").
 * Which nodes are outstanding is the manifests' record, read by the
 * dataset layer (dataset/lost.c); this file is the append's part: the run
 * restricted to them, the new entries, and rank 0's findings shared. */
#include <stdlib.h>
#include <string.h>
#include "cluster/world.h"
#include "jobs/append.h"
#include "ringshard/util.h"

/* The ranges of input e's rows outstanding on node d (rs_bucketdir_lost_ranges):
 * a node whole ([0, UINT64_MAX)) goes to g->restored[k]; ranges to
 * g->restored_rows[k], and (filter) to g->rows[k][d] for only_rows. */
static int restore_node(rs_append *g, size_t k, const rs_manifest_input *e, const rs_nodes *nodes, uint32_t d,
                        size_t *nnames, int filter)
{
    rs_row_range *v;
    size_t n;
    if (rs_bucketdir_lost_ranges(&g->bd, e, nodes->names[d], &v, &n) != 0)
        return -1;
    if (n == 1 && v[0].from == 0 && v[0].to == UINT64_MAX) {
        g->restored[k][(*nnames)++] = nodes->names[d];
        free(v);
        return 0;
    }
    rs_manifest_rows *r = realloc(g->restored_rows[k], (g->nrestored_rows[k] + n + 1) * sizeof *r);
    if (!r)
        return free(v), -1;
    g->restored_rows[k] = r;
    for (size_t q = 0; q < n; q++)
        r[g->nrestored_rows[k]++] = (rs_manifest_rows){nodes->names[d], v[q].from, v[q].to};
    rs_row_range *w = filter ? realloc(v, (n + 1) * sizeof *w) : NULL;
    if (!w)
        return free(v), filter ? -1 : 0;
    w[n] = (rs_row_range){UINT64_MAX, UINT64_MAX};   /* the end */
    if (!g->rows[k] && !(g->rows[k] = calloc(nodes->count + 1, sizeof *g->rows[k])))
        return free(w), -1;
    g->rows[k][d] = w;
    return 0;
}

/* Input k of the run (DIR's entry e): its nodes kept (g->only[k]), and
 * what it brings back of each. */
static int restore_input(rs_append *g, size_t k, const rs_manifest_input *e, const rs_nodes *nodes)
{
    if (!(g->only[k] = calloc(nodes->count + 1, 1)) ||
        !(g->restored[k] = calloc(nodes->count + 1, sizeof *g->restored[k])))
        return -1;
    rs_bucketdir_lost_nodes(&g->bd, e, g->only[k], nodes);
    size_t nnames = 0;
    for (uint32_t d = 0; d < nodes->count; d++)
        if (g->only[k][d] && restore_node(g, k, e, nodes, d, &nnames, !g->distinct) != 0)
            return -1;
    return 0;
}

int rs_append_restoring(rs_append *g, rs_pipeline_opts *po, size_t lo, size_t hi, const uint8_t *skip,
                        const rs_ring *ring, rs_error *err)
{
    if (!g || !g->restore_of)
        return 0;
    const rs_nodes *nodes = rs_ring_nodes(ring);
    g->nonly = po->ninputs;
    g->ndest = nodes->count;
    g->only = calloc(po->ninputs + 1, sizeof *g->only);
    g->restored = calloc(po->ninputs + 1, sizeof *g->restored);
    g->rows = calloc(po->ninputs + 1, sizeof *g->rows);
    g->restored_rows = calloc(po->ninputs + 1, sizeof *g->restored_rows);
    g->nrestored_rows = calloc(po->ninputs + 1, sizeof *g->nrestored_rows);
    if (!g->only || !g->restored || !g->rows || !g->restored_rows || !g->nrestored_rows)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    int any = 0, ranges = 0;
    for (size_t i = lo, k = 0; i < hi; i++) {
        if (skip[i])
            continue;
        const rs_manifest_input *e = g->restore_of[i];
        if (e && restore_input(g, k, e, nodes) != 0)
            return rs_error_set(err, RS_EXIT_IO, "out of memory");
        any |= e != NULL;
        ranges |= g->rows[k] != NULL;
        k++;
    }
    po->only_dest = any ? (const uint8_t *const *)g->only : NULL;
    po->only_rows = ranges ? (const rs_row_range *const *const *)g->rows : NULL;
    return 0;
}

void rs_append_mark_restored(const rs_append *g, rs_manifest *m)
{
    if (!g->only || m->ninputs != g->nonly)
        return;
    for (size_t k = 0; k < g->nonly; k++) {
        if (!g->only[k])
            continue;
        size_t n = 0;
        while (g->restored[k][n])
            n++;
        m->inputs[k].restored = n ? g->restored[k] : NULL;   /* g's, freed by rs_append_close */
        m->inputs[k].nrestored = n;
        m->inputs[k].restored_rows = g->restored_rows[k];
        m->inputs[k].nrestored_rows = g->nrestored_rows[k];
    }
}

int rs_append_restore_share(rs_append *g, size_t n, size_t lo, size_t hi, rs_error *err)
{
    if (rs_world_size() == 1 || !g || !g->opened)
        return 0;
    /* rank 0's entries, as their places in the chain: every rank opened
     * DIR at rank 0's state, so the same places hold the same entries */
    uint64_t *at = calloc(hi - lo + 1, sizeof *at);
    uint8_t any = g->restore_of != NULL;
    if (!at)
        abort();   /* a few bytes an input: not worth a path that other ranks must follow */
    const rs_bucketdir *bd = &g->bd;
    for (size_t i = lo; any && rs_world_rank() == 0 && i < hi; i++)
        at[i - lo] = g->restore_of[i] ? rs_bucketdir_input_place(bd, g->restore_of[i]) : 0;
    rs_world_bcast(&any, 1, 0);
    if (any)
        rs_world_bcast(at, (hi - lo) * sizeof *at, 0);
    if (any && rs_world_rank() != 0 && !g->restore_of && !(g->restore_of = calloc(n + 1, sizeof *g->restore_of)))
        rs_error_set(err, RS_EXIT_IO, "out of memory");
    for (size_t i = lo; any && rs_world_rank() != 0 && g->restore_of && i < hi; i++)
        if (at[i - lo])
            g->restore_of[i] = rs_bucketdir_input_at(bd, at[i - lo]);
    free(at);
    return rs_world_agree(err);
}

void rs_append_restore_free(rs_append *g)
{
    for (size_t k = 0; g->only && k < g->nonly; k++)
        free(g->only[k]);
    for (size_t k = 0; g->restored && k < g->nonly; k++)
        free(g->restored[k]);
    for (size_t k = 0; g->rows && k < g->nonly; k++) {
        for (uint32_t d = 0; g->rows[k] && d < g->ndest; d++)
            free(g->rows[k][d]);
        free(g->rows[k]);
    }
    for (size_t k = 0; g->restored_rows && k < g->nonly; k++)
        free(g->restored_rows[k]);
    free(g->only);
    free(g->restored);
    free(g->rows);
    free(g->restored_rows);
    free(g->nrestored_rows);
    free(g->restore_of);
    g->only = NULL, g->restored = NULL, g->restore_of = NULL, g->nonly = 0;
    g->rows = NULL, g->restored_rows = NULL, g->nrestored_rows = NULL;
}
