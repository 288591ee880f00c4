/* Capacity what-if: consistent hashing with bounded loads (Mirrokni,
 * Thorup, Zadimoghaddam, SODA 2018). Every node gets a capacity; keys are
 * placed in order, each at the first point clockwise from its owning point
 * whose node still has room.
 *
 * The walk is done with a union-find over the points: a point whose node is
 * full is linked to its clockwise successor, so finding the first point
 * with room is near O(1) amortised (path halving) however long the run of
 * full nodes. The number of points walked is (found - start) mod P. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ringshard/interrupt.h"
#include "ringshard/stats.h"

int rs_bounded_capacities(const rs_ring *r, uint64_t total, double factor, uint64_t *cap, rs_error *err)
{
    const rs_nodes *nodes = rs_ring_nodes(r);
    if (!(factor >= 1.0) || !isfinite(factor))
        return rs_error_set(err, RS_EXIT_USAGE, "--capacity-factor: %g is not a number >= 1", factor);
    long double W = 0;
    for (uint32_t i = 0; i < nodes->count; i++)
        if (!nodes->down[i])
            W += nodes->weights[i];
    for (uint32_t i = 0; i < nodes->count; i++) {
        if (nodes->down[i]) {
            cap[i] = 0;
            continue;
        }
        long double x = (long double)factor * (long double)total * nodes->weights[i] / W;
        /* ceil, forgiving the rounding error of a decimal factor like 1.1 */
        long double c = ceill(x - x * 1e-15L);
        cap[i] = (uint64_t)c;
    }
    return 0;
}

int rs_bounded_from_counts(const rs_ring *r, const uint64_t *counts, double factor, rs_bounded *out, rs_error *err)
{
    const rs_nodes *nodes = rs_ring_nodes(r);
    uint64_t *cap = malloc((size_t)nodes->count * sizeof *cap);
    if (!cap)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    uint64_t total = 0;
    long double W = 0;
    for (uint32_t i = 0; i < nodes->count; i++)
        if (!nodes->down[i]) {
            total += counts[i];
            W += nodes->weights[i];
        }
    if (rs_bounded_capacities(r, total, factor, cap, err) != 0) {
        free(cap);
        return -1;
    }
    memset(out, 0, sizeof *out);
    out->factor = factor;
    int first = 1;
    for (uint32_t i = 0; i < nodes->count; i++) {
        if (nodes->down[i])
            continue;
        long double limit = (long double)factor * total * nodes->weights[i] / W;
        if (first) {
            out->capacity = cap[i];
            out->limit = (double)limit;
            first = 0;
        }
        if ((long double)counts[i] > limit)
            out->over++;
        if (counts[i] > cap[i])
            out->excess += counts[i] - cap[i];
    }
    free(cap);
    return 0;
}

uint32_t rs_bounded_start(const rs_ring *r, uint64_t pos)
{
    if (rs_ring_has_points(r))
        return rs_ring_point_at(r, pos);
    return rs_ring_owner(r, pos);
}

static inline uint32_t find(uint32_t *parent, uint32_t x)
{
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

int rs_bounded_place(const rs_ring *r, const uint32_t *start, uint64_t nkeys, const uint64_t *counts, double factor,
                     rs_bounded *out, uint64_t *load_out, rs_error *err)
{
    const rs_nodes *nodes = rs_ring_nodes(r);
    uint32_t n = nodes->count;
    int points = rs_ring_has_points(r);
    uint32_t P = points ? rs_ring_npoints(r) : 0;
    if (!points)
        for (uint32_t i = 0; i < n; i++)
            P += !nodes->down[i];
    uint32_t *unode = malloc((size_t)P * sizeof *unode), *parent = malloc((size_t)P * sizeof *parent);
    uint32_t *rank = points ? NULL : malloc((size_t)n * sizeof *rank);
    uint32_t *first = calloc((size_t)n + 1, sizeof *first), *members = malloc((size_t)P * sizeof *members);
    uint64_t *cap = malloc((size_t)n * sizeof *cap), *load = calloc(n, sizeof *load);
    uint64_t *own = counts ? NULL : calloc(n, sizeof *own);
    int rc = -1;
    if (!unode || !parent || (!points && !rank) || !first || !members || !cap || !load || (!counts && !own)) {
        rs_error_set(err, RS_EXIT_IO, "out of memory");
        goto done;
    }
    if (points) {
        for (uint32_t p = 0; p < P; p++)
            unode[p] = rs_ring_point_node(r, p);
    } else {
        uint32_t k = 0;
        for (uint32_t i = 0; i < n; i++) {
            rank[i] = k;
            if (!nodes->down[i])
                unode[k++] = i;
        }
    }
    if (!counts) {
        for (uint64_t k = 0; k < nkeys; k++)
            own[unode[points ? start[k] : rank[start[k]]]]++;
        counts = own;
    }
    if (rs_bounded_from_counts(r, counts, factor, out, err) != 0)
        goto done;
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++)
        if (!nodes->down[i])
            total += counts[i];
    if (total != nkeys) {
        rs_error_set(err, RS_EXIT_USAGE, "bounded loads: %llu keys but the counts add up to %llu",
                     (unsigned long long)nkeys, (unsigned long long)total);
        goto done;
    }
    rs_bounded_capacities(r, nkeys, factor, cap, err);
    /* the units (points) of each node, and the capacity they can reach */
    for (uint32_t p = 0; p < P; p++)
        first[unode[p] + 1]++;
    for (uint32_t i = 0; i < n; i++)
        first[i + 1] += first[i];
    {
        uint32_t *fill = calloc(n, sizeof *fill);
        if (!fill) {
            rs_error_set(err, RS_EXIT_IO, "out of memory");
            goto done;
        }
        for (uint32_t p = 0; p < P; p++)
            members[first[unode[p]] + fill[unode[p]]++] = p;
        free(fill);
    }
    uint64_t reachable = 0;
    for (uint32_t i = 0; i < n; i++)
        if (first[i + 1] > first[i])
            reachable += cap[i];
    if (reachable < nkeys || P == 0) {
        rs_error_set(err, RS_EXIT_USAGE, "bounded loads: the nodes with points can hold %llu keys, fewer than %llu",
                     (unsigned long long)reachable, (unsigned long long)nkeys);
        goto done;
    }
    for (uint32_t p = 0; p < P; p++)
        parent[p] = cap[unode[p]] == 0 ? (p + 1 == P ? 0 : p + 1) : p;
    out->simulated = 1;
    for (uint64_t k = 0; k < nkeys; k++) {
        if ((k & 0xFFFF) == 0 && rs_interrupt_pending()) {  /* a stop signal (interrupt.h) ends it */
            rs_error_set(err, RS_EXIT_INTERRUPTED, "interrupted");
            goto done;
        }
        uint32_t s = points ? start[k] : rank[start[k]];
        uint32_t u = find(parent, s);
        uint32_t node = unode[u];
        uint64_t walk = u >= s ? u - s : (uint64_t)u + P - s;
        if (node != unode[s])
            out->spilled++;
        if (walk > out->longest_walk)
            out->longest_walk = walk;
        if (++load[node] == cap[node]) {
            for (uint32_t m = first[node]; m < first[node + 1]; m++) {
                uint32_t q = members[m];
                parent[q] = q + 1 == P ? 0 : q + 1;
            }
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        if (load[i] > out->max_after)
            out->max_after = load[i];
        if (!nodes->down[i] && load[i] >= cap[i])
            out->full_nodes++;
    }
    if (load_out)
        memcpy(load_out, load, (size_t)n * sizeof *load);
    rc = 0;
done:
    free(unode);
    free(parent);
    free(rank);
    free(first);
    free(members);
    free(cap);
    free(load);
    free(own);
    return rc;
}
