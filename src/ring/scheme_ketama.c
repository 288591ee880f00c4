/* ketama (seed 003, libketama, twemproxy): each node has P points (160 by
 * default); the MD5 digest of label "{node}{i}" (libketama/twemproxy:
 * "{node}-{i}") gives 4 points, its 4 little-endian 32-bit words. Keys are
 * hashed with the ring's hash (md5_ketama by default) onto the same 2^32
 * circle.
 *
 * Weights: P * weight points, rounded to a multiple of 4. libketama and
 * twemproxy scale by weight / total weight * number of servers, so adding a
 * server changes every other server's point count and moves keys between
 * servers that did not change; here a node's count depends on its own
 * weight only. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ring/ring_impl.h"

static int ketama_check(rs_ring *r, rs_error *err)
{
    if (r->opts.vnodes == 0 || r->opts.vnodes % 4)
        return rs_error_set(err, RS_EXIT_USAGE, "ketama needs a positive multiple of 4 points per node (got %u)",
                            r->opts.vnodes);
    if (r->hash_bits != 32)
        return rs_error_set(err, RS_EXIT_USAGE, "ketama places keys on a 32-bit circle: use a 32-bit hash");
    if (!strstr(r->opts.label, "{node}") || !strstr(r->opts.label, "{i}"))
        return rs_error_set(err, RS_EXIT_USAGE, "label template '%s' needs {node} and {i}", r->opts.label);
    /* Points are unsigned 32-bit words whatever the key hash's sign rule. */
    r->xor_mask = 0;
    r->and_mask = UINT32_MAX;
    r->space = (rs_u128)1 << 32;
    return 0;
}

static uint32_t digests_for(const rs_ring *r, uint32_t node)
{
    double w = r->nodes.weights[node];
    double d = floor(r->opts.vnodes / 4.0 * w + 0.5);
    return d < 1 ? 1 : (d > 1e7 ? 10000000u : (uint32_t)d);
}

static size_t ketama_count(const rs_ring *r)
{
    size_t total = 0;
    for (uint32_t j = 0; j < r->nodes.count; j++)
        if (!r->nodes.down[j])
            total += 4 * (size_t)digests_for(r, j);
    return total;
}

static int ketama_points(rs_ring *r, rs_raw_point **out, size_t *n, rs_error *err)
{
    size_t total = ketama_count(r);
    rs_raw_point *p = malloc((total ? total : 1) * sizeof *p);
    if (!p)
        return rs_error_set(err, RS_EXIT_IO, "out of memory for %zu ketama points", total);
    size_t k = 0;
    char label[4096];
    uint8_t d[16];
    for (uint32_t j = 0; j < r->nodes.count; j++) {
        if (r->nodes.down[j])
            continue;
        uint32_t digests = digests_for(r, j);
        for (uint32_t i = 0; i < digests; i++) {
            if (k % RS_RING_POLL == 0 && rs_ring_check_interrupt(err) != 0) {
                free(p);
                return -1;
            }
            size_t len = rs_label_expand(r, j, i, label, sizeof label);
            if (len >= sizeof label) {
                free(p);
                return rs_error_set(err, RS_EXIT_USAGE, "label of node '%s' is too long", r->nodes.names[j]);
            }
            rs_md5(label, len, d);
            for (uint32_t h = 0; h < 4; h++) {
                uint64_t v = (uint64_t)d[4 * h] | (uint64_t)d[4 * h + 1] << 8 |
                             (uint64_t)d[4 * h + 2] << 16 | (uint64_t)d[4 * h + 3] << 24;
                p[k] = (rs_raw_point){v, k, j, i * 4 + h};
                k++;
            }
        }
    }
    *out = p;
    *n = k;
    return 0;
}

static uint64_t ketama_position(const rs_ring *r, const void *key, size_t len)
{
    return (uint64_t)r->hash(key, len, r->opts.seed) & UINT32_MAX;
}

/* "{node}{i}#h": the label, then which of the digest's 4 words. */
static size_t ketama_label_text(const rs_ring *r, uint32_t i, char *buf, size_t cap)
{
    size_t n = rs_label_expand(r, r->node[i], r->label[i] / 4, buf, cap);
    if (n + 3 < cap) {
        buf[n++] = '#';
        buf[n++] = (char)('0' + r->label[i] % 4);
        buf[n] = '\0';
    }
    return n;
}

const rs_scheme_ops rs_scheme_ketama = {
    .check = ketama_check,
    .count = ketama_count,
    .points = ketama_points,
    .position = ketama_position,
    .shares_exact = 1,
    .label_text = ketama_label_text,
};
