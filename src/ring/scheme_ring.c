/* The consistent-hash ring of the Guava murmur3_128 reference (and, with
 * other options, the one-point FNV1_32 and MurmurHash64A rings): each node contributes V labels
 * ("{node}&Node{i}"), each label's hash is a point. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ring/ring_impl.h"

#define POINTS_MAX 100000000.0   /* a node's points: 16 bytes each, 1.6 GB for one node */

/* Points per node: round(V * weight), at least 1 (ring_check refused more
 * than POINTS_MAX). */
static uint32_t node_points(const rs_ring *r, uint32_t node, uint32_t base)
{
    double w = r->nodes.weights[node];
    if (w == 1.0)
        return base;
    double p = floor(base * w + 0.5);
    return p < 1 ? 1 : (p > POINTS_MAX ? (uint32_t)POINTS_MAX : (uint32_t)p);
}

static int ring_check(rs_ring *r, rs_error *err)
{
    for (uint32_t j = 0; j < r->nodes.count; j++)   /* a weight is never cut silently to another ring */
        if (floor(r->opts.vnodes * r->nodes.weights[j] + 0.5) > POINTS_MAX)
            return rs_error_set(err, RS_EXIT_USAGE,
                                "node '%s' has weight %g: %u virtual nodes x %g = %.0f points, more than the %.0f a "
                                "node may have (lower its weight or --vnodes)",
                                r->nodes.names[j], r->nodes.weights[j], r->opts.vnodes, r->nodes.weights[j],
                                floor(r->opts.vnodes * r->nodes.weights[j] + 0.5), POINTS_MAX);
    if (r->opts.vnodes == 0)
        return rs_error_set(err, RS_EXIT_USAGE, "--vnodes must be at least 1");
    if (!strstr(r->opts.label, "{node}"))
        return rs_error_set(err, RS_EXIT_USAGE, "label template '%s' lacks {node}", r->opts.label);
    if (!strstr(r->opts.label, "{i}") && r->opts.vnodes > 1)
        return rs_error_set(err, RS_EXIT_USAGE,
                            "label template '%s' lacks {i}, so its %u labels per node would all collide",
                            r->opts.label, r->opts.vnodes);
    return 0;
}

static size_t ring_count(const rs_ring *r)
{
    size_t total = 0;
    for (uint32_t j = 0; j < r->nodes.count; j++)
        if (!r->nodes.down[j])
            total += node_points(r, j, r->opts.vnodes);
    return total;
}

static int ring_points(rs_ring *r, rs_raw_point **out, size_t *n, rs_error *err)
{
    size_t total = ring_count(r);
    rs_raw_point *p = malloc((total ? total : 1) * sizeof *p);
    if (!p)
        return rs_error_set(err, RS_EXIT_IO, "out of memory for %zu ring points", total);
    size_t k = 0;
    char label[4096];
    for (uint32_t j = 0; j < r->nodes.count; j++) {
        if (r->nodes.down[j])
            continue;
        uint32_t count = node_points(r, j, r->opts.vnodes);
        for (uint32_t i = 0; i < count; i++) {
            if (k % RS_RING_POLL == 0 && rs_ring_check_interrupt(err) != 0) {
                free(p);
                return -1;
            }
            size_t len = rs_label_expand(r, j, i, label, sizeof label);
            if (len >= sizeof label) {
                free(p);
                return rs_error_set(err, RS_EXIT_USAGE, "--label: a label of node '%s' is longer than %zu bytes "
                                    "(a shorter --label template)", r->nodes.names[j], sizeof label - 1);
            }
            int64_t v = r->hash((const uint8_t *)label, len, r->opts.seed);
            p[k] = (rs_raw_point){rs_value_pos(r, v), k, j, i};
            k++;
        }
    }
    *out = p;
    *n = k;
    return 0;
}

static uint64_t ring_position(const rs_ring *r, const void *key, size_t len)
{
    return rs_value_pos(r, r->hash(key, len, r->opts.seed));
}

const rs_scheme_ops rs_scheme_ring = {
    .check = ring_check,
    .count = ring_count,
    .points = ring_points,
    .position = ring_position,
    .shares_exact = 1,
};
