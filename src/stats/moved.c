/* Movement between two rings: which node of b each node of a is, the least
 * fraction of keys any placement must move, and the exact fraction of the
 * hash space that changes owner. */
#include <math.h>
#include <stdlib.h>
#include "ringshard/plan.h"
#include "ringshard/stats.h"

uint32_t *rs_node_map(const rs_ring *a, const rs_ring *b)
{
    const rs_nodes *na = rs_ring_nodes(a), *nb = rs_ring_nodes(b);
    uint32_t *map = malloc(((size_t)na->count + 1) * sizeof *map);
    if (!map || rs_plan_match_names(na, nb, map, NULL) != 0) {
        free(map);
        return NULL;
    }
    /* a node that is down in b owns nothing there: its keys all move */
    for (uint32_t i = 0; i < na->count; i++)
        if (map[i] != RS_PLAN_NONE && nb->down[map[i]])
            map[i] = UINT32_MAX;
    return map;
}

/* The total variation distance equals the sum of the positive parts alone
 * (both share vectors sum to 1), which is plan's ideal. */
double rs_ideal_moved(const rs_ring *a, const rs_ring *b)
{
    return rs_plan_ideal_share(rs_ring_nodes(a), rs_ring_nodes(b));
}

/* Same positions and weights: the same key maps to the same position. */
static int same_space(const rs_ring *a, const rs_ring *b)
{
    const rs_ring_opts *oa = rs_ring_get_opts(a), *ob = rs_ring_get_opts(b);
    if (oa->scheme != ob->scheme || oa->hash != ob->hash || oa->seed != ob->seed ||
        oa->clear_sign != ob->clear_sign || oa->order != ob->order || rs_ring_space(a) != rs_ring_space(b))
        return 0;
    if (oa->scheme == RS_SCHEME_SLOTS && oa->vnodes != ob->vnodes)
        return 0;   /* the position is hashCode % S */
    return 1;
}

double rs_moved_share(const rs_ring *a, const rs_ring *b, const uint32_t *map)
{
    if (!rs_ring_has_points(a) || !rs_ring_has_points(b) || !same_space(a, b))
        return NAN;
    uint32_t Pa = rs_ring_npoints(a), Pb = rs_ring_npoints(b);
    if (!Pa || !Pb)
        return NAN;
    rs_u128 moved = 0;
    uint64_t space_last = (uint64_t)(rs_ring_space(a) - 1);
    uint64_t first = 0, prev = 0;
    int have_prev = 0;
    uint32_t i = 0, j = 0;
    while (i < Pa || j < Pb) {
        uint64_t x;
        uint64_t pa = i < Pa ? rs_ring_point_pos(a, i) : UINT64_MAX;
        uint64_t pb = j < Pb ? rs_ring_point_pos(b, j) : UINT64_MAX;
        if (i < Pa && (j >= Pb || pa <= pb))
            x = pa;
        else
            x = pb;
        while (i < Pa && rs_ring_point_pos(a, i) == x)
            i++;
        while (j < Pb && rs_ring_point_pos(b, j) == x)
            j++;
        if (!have_prev) {
            first = x;
            have_prev = 1;
        } else {
            uint32_t oa = rs_ring_owner(a, x), ob = rs_ring_owner(b, x);
            if (map[oa] != ob)
                moved += rs_ring_weight(a, prev + 1, x);
        }
        prev = x;
    }
    /* the wrap: (last, space) and [0, first] both belong to the first points */
    uint32_t oa = rs_ring_owner(a, first), ob = rs_ring_owner(b, first);
    if (map[oa] != ob) {
        moved += rs_ring_weight(a, 0, first);
        if (prev < space_last)
            moved += rs_ring_weight(a, prev + 1, space_last);
    }
    return (double)moved / (double)rs_ring_total_weight(a);
}
