/* Rows a repair could not keep, as the manifests record them
 * (ringshard/dataset.h; docs/format-generations.md, "Rows a repair could
 * not keep"): an input entry names the nodes whose rows of it are "lost"
 * (a damaged file that repair left out), and a later append that brings
 * them back names them "restored".
 *
 * Why counts and not sets: a node lost, restored, and lost again (the
 * restoring segment damaged in its turn) is lost once more; a node is
 * outstanding while its input's entries name it lost more often than
 * restored. */
#include <string.h>
#include "ringshard/dataset.h"

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

int rs_bucketdir_lost_nodes(const rs_bucketdir *bd, const rs_manifest_input *e, uint8_t *mask, const rs_nodes *nodes)
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

int rs_bucketdir_outstanding(const rs_bucketdir *bd, const rs_manifest_input *e)
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

uint64_t rs_bucketdir_input_place(const rs_bucketdir *bd, const rs_manifest_input *e)
{
    for (size_t s = 0; s <= bd->ngens; s++) {
        const rs_manifest *m = s ? &bd->gens[s - 1] : &bd->m;
        if (e >= m->inputs && e < m->inputs + m->ninputs)
            return ((uint64_t)(s + 1) << 32) | (uint64_t)(e - m->inputs + 1);
    }
    return 0;
}

const rs_manifest_input *rs_bucketdir_input_at(const rs_bucketdir *bd, uint64_t place)
{
    size_t s = (size_t)(place >> 32), k = (size_t)(place & 0xffffffffu);
    if (!s || !k || s > bd->ngens + 1)
        return NULL;
    const rs_manifest *m = s > 1 ? &bd->gens[s - 2] : &bd->m;
    return k <= m->ninputs ? &m->inputs[k - 1] : NULL;
}
