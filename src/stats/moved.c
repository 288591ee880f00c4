/* Movement between two rings: which node of b each node of a is, the least
 * fraction of keys any placement must move, and the exact fraction of the
 * hash space that changes owner. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ringshard/stats.h"

static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

uint32_t *rs_node_map(const rs_ring *a, const rs_ring *b)
{
    const rs_nodes *na = rs_ring_nodes(a), *nb = rs_ring_nodes(b);
    size_t cap = 16;
    while (cap < 2 * (size_t)nb->count)
        cap <<= 1;
    uint32_t *table = malloc(cap * sizeof *table), *map = malloc(((size_t)na->count + 1) * sizeof *map);
    if (!table || !map) {
        free(table);
        free(map);
        return NULL;
    }
    memset(table, 0xff, cap * sizeof *table);
    for (uint32_t j = 0; j < nb->count; j++) {
        size_t h = (size_t)name_hash(nb->names[j]) & (cap - 1);
        while (table[h] != UINT32_MAX)
            h = (h + 1) & (cap - 1);
        table[h] = j;
    }
    for (uint32_t i = 0; i < na->count; i++) {
        map[i] = UINT32_MAX;
        size_t h = (size_t)name_hash(na->names[i]) & (cap - 1);
        for (; table[h] != UINT32_MAX; h = (h + 1) & (cap - 1))
            if (!strcmp(nb->names[table[h]], na->names[i])) {
                if (!nb->down[table[h]])
                    map[i] = table[h];
                break;
            }
    }
    free(table);
    return map;
}

double rs_ideal_moved(const rs_ring *a, const rs_ring *b)
{
    const rs_nodes *na = rs_ring_nodes(a), *nb = rs_ring_nodes(b);
    uint32_t *map = rs_node_map(a, b);
    uint8_t *matched = calloc(nb->count ? nb->count : 1, 1);
    if (!map || !matched) {
        free(map);
        free(matched);
        return NAN;
    }
    double Wa = 0, Wb = 0, tv = 0;
    for (uint32_t i = 0; i < na->count; i++)
        Wa += na->down[i] ? 0 : na->weights[i];
    for (uint32_t j = 0; j < nb->count; j++)
        Wb += nb->down[j] ? 0 : nb->weights[j];
    for (uint32_t i = 0; i < na->count; i++) {
        if (na->down[i])
            continue;
        double pa = na->weights[i] / Wa, pb = 0;
        if (map[i] != UINT32_MAX) {
            pb = nb->weights[map[i]] / Wb;
            matched[map[i]] = 1;
        }
        tv += fabs(pa - pb);
    }
    for (uint32_t j = 0; j < nb->count; j++)
        if (!nb->down[j] && !matched[j])
            tv += nb->weights[j] / Wb;
    free(map);
    free(matched);
    return tv / 2;
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
