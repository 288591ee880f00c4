/* Balance of per-node counts against what the ring's exact shares and the
 * theory of random rings predict. Formulas: include/ringshard/stats.h and
 * docs/stats.md. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ringshard/stats.h"

double rs_two_sided_tail(double z)
{
    return erfc(fabs(z) / sqrt(2.0));
}

/* V of the theory: the points per node of ring and ketama with equal
 * weights; 0 (n/a) otherwise. */
static uint32_t theory_vnodes(const rs_ring *r)
{
    const rs_ring_opts *o = rs_ring_get_opts(r);
    const rs_nodes *nodes = rs_ring_nodes(r);
    if (o->scheme != RS_SCHEME_RING && o->scheme != RS_SCHEME_KETAMA)
        return 0;
    for (uint32_t i = 0; i < nodes->count; i++)
        if (!nodes->down[i] && nodes->weights[i] != 1.0)
            return 0;
    return o->vnodes;
}

int rs_balance_compute(const rs_ring *r, const uint64_t *counts, double z, rs_node_stat *ns, rs_balance *b,
                       rs_error *err)
{
    const rs_nodes *nodes = rs_ring_nodes(r);
    uint32_t n = nodes->count;
    rs_u128 *owned = malloc((size_t)n * sizeof *owned);
    uint32_t *points = calloc(n, sizeof *points);
    if (!owned || !points || rs_ring_shares(r, owned) != 0) {
        free(owned);
        free(points);
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    }
    for (uint32_t i = 0; i < rs_ring_npoints(r); i++)
        points[rs_ring_point_node(r, i)]++;
    memset(b, 0, sizeof *b);
    b->z = z;
    b->shares_exact = rs_ring_shares_exact(r);
    double total_w = (double)rs_ring_total_weight(r);
    int first = 1;
    for (uint32_t i = 0; i < n; i++) {
        if (nodes->down[i]) {
            b->stray += counts[i];
            continue;
        }
        b->nodes++;
        b->total += counts[i];
        if (first || counts[i] < b->min) {
            b->min = counts[i];
            b->argmin = i;
        }
        if (first || counts[i] > b->max) {
            b->max = counts[i];
            b->argmax = i;
        }
        first = 0;
    }
    double N = b->nodes, K = (double)b->total;
    b->mean = K / N;
    double ss = 0, ss_ring = 0, ss_share = 0;
    for (uint32_t i = 0; i < n; i++) {
        double p = (double)owned[i] / total_w;
        double e = K * p, s = sqrt(K * p * (1 - p));
        double d = (double)counts[i] - e;
        double zz = s > 0 ? d / s : d > 0 ? INFINITY : d < 0 ? -INFINITY : 0;
        int flag = nodes->down[i] ? 0 : zz > z ? 1 : zz < -z ? -1 : 0;
        b->above += flag == 1;
        b->below += flag == -1;
        if (ns) {
            rs_node_stat *x = &ns[i];
            x->count = counts[i];
            x->points = points[i];
            x->share = p;
            x->expected = e;
            x->expected_sd = s;
            x->down = nodes->down[i];
            x->z = zz;
            x->flag = flag;
        }
        if (nodes->down[i])
            continue;
        double dc = (double)counts[i] - b->mean;
        ss += dc * dc;
        ss_ring += K * p * (1 - p) + (e - b->mean) * (e - b->mean);
        ss_share += (p * N - 1) * (p * N - 1);
    }
    b->sd = sqrt(ss / N);
    b->rel_sd = b->mean > 0 ? b->sd / b->mean : 0;
    b->max_mean = b->mean > 0 ? (double)b->max / b->mean : 0;
    b->min_mean = b->mean > 0 ? (double)b->min / b->mean : 0;
    b->sd_ring = sqrt(ss_ring / N);
    b->sd_equal = sqrt(K / N * (1 - 1 / N));
    b->share_rel_sd = sqrt(ss_share / N);
    rs_scheme_id scheme = rs_ring_get_opts(r)->scheme;
    b->vnodes = theory_vnodes(r);
    if (b->vnodes) {
        double V = b->vnodes;
        double var_p = (N - 1) / (N * N * (N * V + 1));   /* Beta(V, (N-1)V) */
        b->share_rel_sd_theory = sqrt((N - 1) / (N * V + 1));
        b->sd_theory = sqrt(K / N * (1 - 1 / N) + K * (K - 1) * var_p);
    } else if (scheme == RS_SCHEME_MODULO || scheme == RS_SCHEME_JUMP) {
        b->share_rel_sd_theory = 0;   /* equal shares by construction */
        b->sd_theory = b->sd_equal;
    } else {
        b->share_rel_sd_theory = NAN;
        b->sd_theory = NAN;
    }
    b->flag_chance = N * rs_two_sided_tail(z);
    free(owned);
    free(points);
    return 0;
}
