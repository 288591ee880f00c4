/* Appends that bring back what a repair could not keep (jobs/generation.h):
 * an input whose manifest entry names "lost" nodes (a damaged file that
 * repair left out: docs/format-generations.md, "Rows a repair could not
 * keep") is not "already ingested" for those nodes. Its append writes only
 * their rows, and its entry in the new generation says so ("restored").
 *
 * Why counts and not sets: a node lost, restored, and lost again (the
 * restoring segment damaged in its turn) is lost once more; a node is
 * outstanding while its input's entries name it lost more often than
 * restored. */
#include <stdlib.h>
#include <string.h>
#include "cluster/world.h"
#include "jobs/generation.h"
#include "ringshard/util.h"

/* Whether two manifest entries are one input: the same content (once
 * decompressed), or the same stored bytes. */
static int same_input(const rs_manifest_input *a, const rs_manifest_input *b)
{
    if (a->content && b->content)
        return a->content_size == b->content_size && strcmp(a->content, b->content) == 0;
    return a->checksum && b->checksum && a->size == b->size && strcmp(a->checksum, b->checksum) == 0;
}

/* How often the entries of bd for input e name node lost (+1) and
 * restored (-1). */
static long balance_of(const rs_bucketdir *bd, const rs_manifest_input *e, const char *node)
{
    long c = 0;
    for (size_t g = 0; g <= bd->ngens; g++) {
        const rs_manifest *m = g ? &bd->gens[g - 1] : &bd->m;
        for (size_t i = 0; i < m->ninputs; i++) {
            const rs_manifest_input *in = &m->inputs[i];
            if (!same_input(in, e))
                continue;
            for (size_t k = 0; k < in->nlost; k++)
                c += strcmp(in->lost[k], node) == 0;
            for (size_t k = 0; k < in->nrestored; k++)
                c -= strcmp(in->restored[k], node) == 0;
        }
    }
    return c;
}

int rs_gen_lost_nodes(const rs_bucketdir *bd, const rs_manifest_input *e, uint8_t *mask, const rs_nodes *nodes)
{
    int any = 0;
    for (uint32_t d = 0; d < nodes->count; d++) {
        mask[d] = 0;
        for (size_t g = 0; g <= bd->ngens && !mask[d]; g++) {
            const rs_manifest *m = g ? &bd->gens[g - 1] : &bd->m;
            for (size_t i = 0; i < m->ninputs && !mask[d]; i++)
                for (size_t k = 0; k < m->inputs[i].nlost && !mask[d]; k++)
                    if (same_input(&m->inputs[i], e) && strcmp(m->inputs[i].lost[k], nodes->names[d]) == 0)
                        mask[d] = balance_of(bd, e, nodes->names[d]) > 0;
        }
        any |= mask[d];
    }
    return any;
}

int rs_gen_outstanding(const rs_bucketdir *bd, const rs_manifest_input *e)
{
    for (size_t g = 0; g <= bd->ngens; g++) {
        const rs_manifest *m = g ? &bd->gens[g - 1] : &bd->m;
        for (size_t i = 0; i < m->ninputs; i++)
            for (size_t k = 0; k < m->inputs[i].nlost; k++)
                if (same_input(&m->inputs[i], e) && balance_of(bd, e, m->inputs[i].lost[k]) > 0)
                    return 1;
    }
    return 0;
}

/* g->restored[k]: the names of the nodes g->only[k] keeps (the ring's). */
static int name_restored(rs_gen *g, size_t k, const rs_nodes *nodes)
{
    if (!(g->restored[k] = calloc(nodes->count + 1, sizeof *g->restored[k])))
        return -1;
    size_t n = 0;
    for (uint32_t d = 0; d < nodes->count; d++)
        if (g->only[k][d])
            g->restored[k][n++] = nodes->names[d];
    return 0;
}

int rs_gen_restoring(rs_gen *g, rs_pipeline_opts *po, size_t lo, size_t hi, const uint8_t *skip, const rs_ring *ring,
                     rs_error *err)
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
            rs_gen_lost_nodes(&g->bd, e, g->only[k], nodes);
            if (name_restored(g, k, nodes) != 0)
                return rs_error_set(err, RS_EXIT_IO, "out of memory");
            any = 1;
        }
        k++;
    }
    po->only_dest = any ? (const uint8_t *const *)g->only : NULL;
    return 0;
}

void rs_gen_mark_restored(const rs_gen *g, rs_manifest *m)
{
    if (!g->only || m->ninputs != g->nonly)
        return;
    for (size_t k = 0; k < g->nonly; k++) {
        if (!g->only[k])
            continue;
        size_t n = 0;
        while (g->restored[k][n])
            n++;
        m->inputs[k].restored = g->restored[k];   /* g's, freed by rs_gen_close */
        m->inputs[k].nrestored = n;
    }
}

int rs_gen_restore_share(rs_gen *g, size_t n, size_t lo, size_t hi, rs_error *err)
{
    if (rs_world_size() == 1 || !g || !g->opened)
        return 0;
    /* rank 0's entries, as (manifest, input) places: every rank opened DIR
     * at rank 0's state, so the same places hold the same entries */
    uint64_t *at = calloc(hi - lo + 1, sizeof *at);
    uint8_t any = g->restore_of != NULL;
    if (!at)
        abort();   /* a few bytes an input: not worth a path that other ranks must follow */
    const rs_bucketdir *bd = &g->bd;
    for (size_t i = lo; any && rs_world_rank() == 0 && i < hi; i++)
        for (size_t s = 0; g->restore_of[i] && s <= bd->ngens; s++) {
            const rs_manifest *m = s ? &bd->gens[s - 1] : &bd->m;
            if (g->restore_of[i] >= m->inputs && g->restore_of[i] < m->inputs + m->ninputs)
                at[i - lo] = ((uint64_t)(s + 1) << 32) | (uint64_t)(g->restore_of[i] - m->inputs + 1);
        }
    rs_world_bcast(&any, 1, 0);
    if (any)
        rs_world_bcast(at, (hi - lo) * sizeof *at, 0);
    if (any && rs_world_rank() != 0 && !g->restore_of && !(g->restore_of = calloc(n + 1, sizeof *g->restore_of)))
        rs_error_set(err, RS_EXIT_IO, "out of memory");
    for (size_t i = lo; any && rs_world_rank() != 0 && g->restore_of && i < hi; i++) {
        size_t s = (size_t)(at[i - lo] >> 32), k = (size_t)(at[i - lo] & 0xffffffffu);
        if (s && k) {
            const rs_manifest *m = s > 1 ? &bd->gens[s - 2] : &bd->m;
            g->restore_of[i] = &m->inputs[k - 1];
        }
    }
    free(at);
    return rs_world_agree(err);
}

void rs_gen_restore_free(rs_gen *g)
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
