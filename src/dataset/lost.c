/* Rows a repair could not keep, as the manifests record them
 * (ringshard/dataset.h; docs/format-generations.md, "Rows a repair could
 * not keep"): an input entry names the nodes whose rows of it are "lost"
 * (every row of the node: a damaged file that repair left out whole) or
 * ranges of a node's rows ("lost_rows": the damaged gzip members or zstd
 * frames of a file whose other members repair kept), and a later append
 * that brings them back names them "restored" ("restored_rows").
 *
 * Why counts and not sets: a row lost, restored, and lost again (the
 * restoring segment damaged in its turn) is lost once more; a row is
 * outstanding while its input's entries name it lost more often than
 * restored. A node-only entry counts for every row of its node, so that
 * the directories of earlier versions read as they did. */
#include <stdlib.h>
#include <string.h>
#include "ringshard/dataset.h"

int rs_manifest_same_input(const rs_manifest_input *a, const rs_manifest_input *b)
{
    if (a->content && b->content)
        return a->content_size == b->content_size && strcmp(a->content, b->content) == 0;
    return a->checksum && b->checksum && a->size == b->size && strcmp(a->checksum, b->checksum) == 0;
}

/* A point where the count of a row changes. */
typedef struct {
    uint64_t at;
    int delta;
} event;

static int cmp_event(const void *a, const void *b)
{
    const event *x = a, *y = b;
    return x->at < y->at ? -1 : x->at > y->at;
}

/* The events of entry in for node: lost (+1 from, -1 after) and restored
 * (the reverse), a node-only entry over every row. Counts them into *n,
 * and writes them to ev when it is not NULL. */
static void events_of(const rs_manifest_input *in, const char *node, event *ev, size_t *n)
{
    for (int lost = 0; lost < 2; lost++) {
        char **names = lost ? in->lost : in->restored;
        size_t nn = lost ? in->nlost : in->nrestored;
        const rs_manifest_rows *rows = lost ? in->lost_rows : in->restored_rows;
        size_t nr = lost ? in->nlost_rows : in->nrestored_rows;
        int d = lost ? 1 : -1;
        for (size_t k = 0; k < nn + nr; k++) {
            const char *name = k < nn ? names[k] : rows[k - nn].node;
            if (strcmp(name, node) != 0)
                continue;
            if (ev) {
                ev[*n] = (event){k < nn ? 0 : rows[k - nn].from, d};
                ev[*n + 1] = (event){k < nn ? UINT64_MAX : rows[k - nn].to, -d};
            }
            *n += 2;
        }
    }
}

/* The ranges where the sum of ev[0..n) (sorted here) is above 0 into *v
 * (malloc'd, NULL when none), *nv; frees ev. 0, or -1 out of memory. */
static int sweep(event *ev, size_t n, rs_row_range **v, size_t *nv)
{
    *v = NULL, *nv = 0;
    qsort(ev, n, sizeof *ev, cmp_event);
    rs_row_range *out = malloc((n / 2 + 1) * sizeof *out);
    long count = 0;
    for (size_t k = 0; out && k < n;) {
        uint64_t at = ev[k].at;
        while (k < n && ev[k].at == at)
            count += ev[k++].delta;
        if (count <= 0 || k == n)
            continue;
        if (*nv && out[*nv - 1].to == at)
            out[*nv - 1].to = ev[k].at;   /* adjacent: one range */
        else
            out[(*nv)++] = (rs_row_range){at, ev[k].at};
    }
    free(ev);
    if (!out)
        return -1;
    if (!*nv)
        free(out), out = NULL;
    *v = out;
    return 0;
}

int rs_bucketdir_lost_ranges(const rs_bucketdir *bd, const rs_manifest_input *e, const char *node, rs_row_range **v,
                             size_t *nv)
{
    size_t n = 0;
    event *ev = NULL;
    for (int pass = 0; pass < 2; pass++) {
        if (pass && !(ev = malloc((n + 1) * sizeof *ev)))
            return -1;
        n = 0;
        for (size_t g = 0; g <= bd->ngens; g++) {
            const rs_manifest *m = g ? &bd->gens[g - 1] : &bd->m;
            for (size_t i = 0; i < m->ninputs; i++)
                if (rs_manifest_same_input(&m->inputs[i], e))
                    events_of(&m->inputs[i], node, ev, &n);
        }
    }
    return sweep(ev, n, v, nv);
}

int rs_manifest_held(const rs_manifest_input *e, const char *node, rs_row_range **v, size_t *nv)
{
    size_t n = 0;
    event *ev = NULL;
    int whole = !e->nrestored && !e->nrestored_rows;
    for (size_t k = 0; k < e->nrestored; k++)
        whole |= strcmp(e->restored[k], node) == 0;
    for (int pass = 0; pass < 2; pass++) {
        if (pass && !(ev = malloc((n + 3) * sizeof *ev)))
            return -1;
        n = 0;
        if (whole && ev)
            ev[0] = (event){0, 1}, ev[1] = (event){UINT64_MAX, -1};
        n += whole ? 2 : 0;
        for (size_t k = 0; !whole && k < e->nrestored_rows; k++) {
            if (strcmp(e->restored_rows[k].node, node) != 0)
                continue;
            if (ev)
                ev[n] = (event){e->restored_rows[k].from, 1}, ev[n + 1] = (event){e->restored_rows[k].to, -1};
            n += 2;
        }
        /* what the entry lost already: its own "lost", "lost_rows" (the
         * restored ones are other entries') */
        rs_manifest_input own = *e;
        own.nrestored = own.nrestored_rows = 0;
        size_t before = n;
        events_of(&own, node, ev, &n);
        for (size_t k = before; ev && k < n; k++)
            ev[k].delta = -ev[k].delta;
    }
    return sweep(ev, n, v, nv);
}

/* Whether input e has rows of node outstanding (-1: out of memory). */
static int outstanding_on(const rs_bucketdir *bd, const rs_manifest_input *e, const char *node)
{
    rs_row_range *v;
    size_t n;
    if (rs_bucketdir_lost_ranges(bd, e, node, &v, &n) != 0)
        return -1;
    free(v);
    return n > 0;
}

int rs_bucketdir_lost_nodes(const rs_bucketdir *bd, const rs_manifest_input *e, uint8_t *mask, const rs_nodes *nodes)
{
    int any = 0;
    for (uint32_t d = 0; d < nodes->count; d++) {
        /* out of memory: not brought back this time (none written twice),
         * the record left as it is for the next append */
        mask[d] = outstanding_on(bd, e, nodes->names[d]) > 0;
        any |= mask[d];
    }
    return any;
}

int rs_bucketdir_outstanding(const rs_bucketdir *bd, const rs_manifest_input *e)
{
    for (size_t g = 0; g <= bd->ngens; g++) {
        const rs_manifest *m = g ? &bd->gens[g - 1] : &bd->m;
        for (size_t i = 0; i < m->ninputs; i++) {
            const rs_manifest_input *in = &m->inputs[i];
            if (!rs_manifest_same_input(in, e))
                continue;
            for (size_t k = 0; k < in->nlost + in->nlost_rows; k++)
                if (outstanding_on(bd, e, k < in->nlost ? in->lost[k] : in->lost_rows[k - in->nlost].node) != 0)
                    return 1;
        }
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
