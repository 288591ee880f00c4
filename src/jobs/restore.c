/* Appends that bring back what a repair could not keep (jobs/append.h):
 * an input whose manifest entry names "lost" nodes (a damaged file that
 * repair left out: docs/format-generations.md, "Rows a repair could not
 * keep") is not "already ingested" for those nodes. Its append writes only
 * their rows, and its entry in the new generation says so ("restored").
 * Which nodes are outstanding is the manifests' record, read by the
 * dataset layer (dataset/lost.c); this file is the append's part: the run
 * restricted to them, the new entries, and rank 0's findings shared. */
#include <stdlib.h>
#include <string.h>
#include "cluster/world.h"
#include "jobs/append.h"
#include "ringshard/util.h"

/* g->restored[k]: the names of the nodes g->only[k] keeps (the ring's). */
static int name_restored(rs_append *g, size_t k, const rs_nodes *nodes)
{
    if (!(g->restored[k] = calloc(nodes->count + 1, sizeof *g->restored[k])))
        return -1;
    size_t n = 0;
    for (uint32_t d = 0; d < nodes->count; d++)
        if (g->only[k][d])
            g->restored[k][n++] = nodes->names[d];
    return 0;
}

int rs_append_restoring(rs_append *g, rs_pipeline_opts *po, size_t lo, size_t hi, const uint8_t *skip,
                        const rs_ring *ring, rs_error *err)
{
    if (!g || !g->restore_of)
        return 0;
    const rs_nodes *nodes = rs_ring_nodes(ring);
    g->nonly = po->ninputs;
    g->only = calloc(po->ninputs + 1, sizeof *g->only);
    g->restored = calloc(po->ninputs + 1, sizeof *g->restored);
    if (!g->only || !g->restored)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    int any = 0;
    for (size_t i = lo, k = 0; i < hi; i++) {
        if (skip[i])
            continue;
        const rs_manifest_input *e = g->restore_of[i];
        if (e) {
            if (!(g->only[k] = calloc(nodes->count + 1, 1)))
                return rs_error_set(err, RS_EXIT_IO, "out of memory");
            rs_bucketdir_lost_nodes(&g->bd, e, g->only[k], nodes);
            if (name_restored(g, k, nodes) != 0)
                return rs_error_set(err, RS_EXIT_IO, "out of memory");
            any = 1;
        }
        k++;
    }
    po->only_dest = any ? (const uint8_t *const *)g->only : NULL;
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
        m->inputs[k].restored = g->restored[k];   /* g's, freed by rs_append_close */
        m->inputs[k].nrestored = n;
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
    free(g->only);
    free(g->restored);
    free(g->restore_of);
    g->only = NULL, g->restored = NULL, g->restore_of = NULL, g->nonly = 0;
}
