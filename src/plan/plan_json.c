/* The plan's JSON (schema in docs/plan.md), written with the module that
 * owns the plan, in named steps, one per top-level member; and the words
 * the summary, the JSON and the report share. */
#include <stdio.h>
#include "rs_config.h"
#include "ringshard/json.h"
#include "ringshard/plan.h"

const char *rs_plan_check_name(rs_plan_check c)
{
    switch (c) {
    case RS_PLAN_CHECK_ADD: return "add";
    case RS_PLAN_CHECK_REMOVE: return "remove";
    case RS_PLAN_CHECK_MIXED: return "mixed";
    default: return "none";
    }
}

const char *rs_plan_check_property(rs_plan_check c)
{
    switch (c) {
    case RS_PLAN_CHECK_ADD: return "every move goes to an added node";
    case RS_PLAN_CHECK_REMOVE: return "every move comes from a removed node";
    case RS_PLAN_CHECK_MIXED: return "every move touches a changed node (added, removed or reweighted)";
    default: return "nothing moves (no node changed)";
    }
}

static int equal_weights(const rs_nodes *n)
{
    for (uint32_t i = 0; i < n->count; i++)
        if (!n->down[i] && n->weights[i] != 1.0)
            return 0;
    return 1;
}

uint32_t rs_plan_up_count(const rs_nodes *n)
{
    uint32_t up = 0;
    for (uint32_t i = 0; i < n->count; i++)
        up += !n->down[i];
    return up;
}

/* The ideal's rule in words, e.g. "k/(N+k) = 10/1010". */
void rs_plan_ideal_rule(const rs_plan *p, char *buf, size_t cap)
{
    const rs_nodes *a = rs_ring_nodes(p->old_ring), *b = rs_ring_nodes(p->new_ring);
    int eq = equal_weights(a) && equal_weights(b);
    uint32_t N = rs_plan_up_count(a);
    if (eq && p->check == RS_PLAN_CHECK_ADD)
        snprintf(buf, cap, "k/(N+k) = %u/%u", p->nadded, N + p->nadded);
    else if (eq && p->check == RS_PLAN_CHECK_REMOVE)
        snprintf(buf, cap, "k/N = %u/%u", p->nremoved, N);
    else
        snprintf(buf, cap, "sum over nodes of max(0, old ideal share - new ideal share)");
}

static void json_u128(rs_json *j, const char *key, rs_u128 v)
{
    char b[48];
    rs_json_key(j, key);
    rs_json_string(j, rs_u128_str(v, b));
}

static void json_ring(rs_json *j, const char *key, const rs_ring *r, double balance)
{
    const rs_nodes *n = rs_ring_nodes(r);
    rs_json_key(j, key);
    rs_json_object_begin(j);
    rs_json_key(j, "fingerprint");
    rs_json_string(j, rs_ring_fingerprint(r));
    rs_json_key(j, "scheme");
    rs_json_string(j, rs_scheme_name(rs_ring_get_opts(r)->scheme));
    rs_json_key(j, "nodes");
    rs_json_u64(j, n->count);
    rs_json_key(j, "up");
    rs_json_u64(j, rs_plan_up_count(n));
    rs_json_key(j, "points");
    rs_json_u64(j, rs_ring_npoints(r));
    rs_json_key(j, "balance");
    rs_json_double(j, balance);
    rs_json_key(j, "description");
    rs_json_string(j, rs_ring_description(r));
    rs_json_object_end(j);
}

/* Schema, tool, method and both rings. */
static void json_head(rs_json *j, const rs_plan *p)
{
    rs_json_key(j, "schema");
    rs_json_string(j, "ringshard-plan");
    rs_json_key(j, "version");
    rs_json_u64(j, 1);
    rs_json_key(j, "tool");
    rs_json_object_begin(j);
    rs_json_key(j, "name");
    rs_json_string(j, "ringshard");
    rs_json_key(j, "version");
    rs_json_string(j, RS_VERSION);
    rs_json_object_end(j);
    rs_json_key(j, "method");
    rs_json_string(j, rs_plan_method_name(p->method));
    json_ring(j, "old_ring", p->old_ring, p->balance_old);
    json_ring(j, "new_ring", p->new_ring, p->balance_new);
}

/* Who was added, removed, reweighted. */
static void json_change(rs_json *j, const rs_plan *p)
{
    const rs_nodes *an = rs_ring_nodes(p->old_ring), *bn = rs_ring_nodes(p->new_ring);
    rs_json_key(j, "change");
    rs_json_object_begin(j);
    rs_json_key(j, "kind");
    rs_json_string(j, rs_plan_check_name(p->check));
    rs_json_key(j, "added");
    rs_json_array_begin(j);
    for (uint32_t k = 0; k < p->nadded; k++)
        rs_json_string(j, bn->names[p->added[k]]);
    rs_json_array_end(j);
    rs_json_key(j, "removed");
    rs_json_array_begin(j);
    for (uint32_t k = 0; k < p->nremoved; k++)
        rs_json_string(j, an->names[p->removed[k]]);
    rs_json_array_end(j);
    rs_json_key(j, "reweighted");
    rs_json_array_begin(j);
    for (uint32_t k = 0; k < p->nreweighted; k++) {
        uint32_t i = p->reweighted[k];
        rs_json_object_begin(j);
        rs_json_key(j, "node");
        rs_json_string(j, an->names[i]);
        rs_json_key(j, "old_weight");
        rs_json_double(j, an->weights[i]);
        rs_json_key(j, "new_weight");
        rs_json_double(j, bn->weights[p->old_to_new[i]]);
        rs_json_object_end(j);
    }
    rs_json_array_end(j);
    rs_json_object_end(j);
}

/* The space, the moved weight and the least any placement could move. */
static void json_moved(rs_json *j, const rs_plan *p)
{
    char rule[160];
    rs_json_key(j, "space");
    rs_json_object_begin(j);
    json_u128(j, "positions", rs_ring_space(p->old_ring));
    json_u128(j, "total_weight", p->total);
    rs_json_object_end(j);

    rs_json_key(j, "moved");
    rs_json_object_begin(j);
    json_u128(j, "weight", p->moved);
    rs_json_key(j, "share");
    rs_json_double(j, p->moved_share);
    rs_json_key(j, "exact");
    rs_json_bool(j, p->method != RS_PLAN_EXPECTED);
    rs_json_key(j, "pairs");
    if (p->pairs_complete)
        rs_json_u64(j, p->npairs);
    else
        rs_json_null(j);
    rs_json_key(j, "arcs");
    rs_json_u64(j, p->narcs);
    rs_json_object_end(j);

    rs_plan_ideal_rule(p, rule, sizeof rule);
    rs_json_key(j, "ideal");
    rs_json_object_begin(j);
    rs_json_key(j, "share");
    rs_json_double(j, p->ideal_share);
    rs_json_key(j, "rule");
    rs_json_string(j, rule);
    json_u128(j, "floor_weight", p->floor);
    rs_json_key(j, "floor_share");
    rs_json_double(j, p->floor_share);
    rs_json_object_end(j);
}

static void json_consistency(rs_json *j, const rs_plan *p)
{
    rs_json_key(j, "consistency");
    rs_json_object_begin(j);
    rs_json_key(j, "property");
    rs_json_string(j, rs_plan_check_property(p->check));
    rs_json_key(j, "checked");
    rs_json_bool(j, p->pairs_complete);
    rs_json_key(j, "ok");
    rs_json_bool(j, p->pairs_complete && p->nviolations == 0);
    rs_json_key(j, "violations");
    rs_json_u64(j, p->nviolations);
    json_u128(j, "violation_weight", p->violation_weight);
    rs_json_object_end(j);
}

/* The --batch-bytes waves: pairs, rows and bytes of each. */
static void json_waves(rs_json *j, const rs_plan *p, const rs_plan_data *d)
{
    rs_json_key(j, "waves");
    rs_json_array_begin(j);
    for (uint32_t w = 1; w <= d->nwaves; w++) {
        uint64_t np = 0, rows = 0, bytes = 0;
        for (size_t k = 0; k < p->npairs; k++)
            if (d->wave[k] == w) {
                np++;
                rows += d->keys[k];
                bytes += d->bytes_of[k];
            }
        rs_json_object_begin(j);
        rs_json_key(j, "wave");
        rs_json_u64(j, w);
        rs_json_key(j, "pairs");
        rs_json_u64(j, np);
        rs_json_key(j, "rows");
        rs_json_u64(j, rows);
        rs_json_key(j, "bytes");
        rs_json_u64(j, bytes);
        rs_json_object_end(j);
    }
    rs_json_array_end(j);
}

/* What the data said: rows and bytes read and moved, mismatches, waves. */
static void json_data(rs_json *j, const rs_plan *p, const rs_plan_data *d, const rs_plan_json_opts *o)
{
    rs_json_key(j, "data");
    if (d && d->have) {
        rs_json_object_begin(j);
        rs_json_key(j, "source");
        rs_json_string(j, o->source);
        rs_json_key(j, "inputs");
        rs_json_u64(j, d->ninputs);
        rs_json_key(j, "rows");
        rs_json_u64(j, d->rows);
        rs_json_key(j, "bytes");
        rs_json_u64(j, d->bytes);
        rs_json_key(j, "rows_moved");
        rs_json_u64(j, d->moved_rows);
        rs_json_key(j, "bytes_moved");
        rs_json_u64(j, d->moved_bytes);
        rs_json_key(j, "mismatched_rows");
        rs_json_u64(j, d->mismatches);
        rs_json_key(j, "mismatches");
        rs_json_array_begin(j);
        for (size_t i = 0; i < d->ninputs; i++)
            if (d->mismatch[i]) {
                rs_json_object_begin(j);
                rs_json_key(j, "file");
                rs_json_string(j, d->input_labels[i]);
                rs_json_key(j, "node");
                rs_json_string(j, d->input_nodes[i]);
                rs_json_key(j, "rows");
                rs_json_u64(j, d->mismatch[i]);
                rs_json_object_end(j);
            }
        rs_json_array_end(j);
        rs_json_key(j, "emit");
        if (d->emitted)
            rs_json_string(j, o->emit);
        else
            rs_json_null(j);
        rs_json_key(j, "batch_bytes");
        rs_json_u64(j, o->batch_bytes);
        rs_json_key(j, "wave_order");
        rs_json_string(j, o->largest_first ? "largest" : "smallest");
        json_waves(j, p, d);
        rs_json_object_end(j);
    } else {
        rs_json_null(j);
    }
}

/* Every pair, with its rows and bytes when counted. */
static void json_pairs(rs_json *j, const rs_plan *p, const rs_plan_data *d)
{
    const rs_nodes *an = rs_ring_nodes(p->old_ring), *bn = rs_ring_nodes(p->new_ring);
    rs_json_key(j, "pairs_complete");
    rs_json_bool(j, p->pairs_complete);
    rs_json_key(j, "pairs");
    rs_json_array_begin(j);
    for (size_t k = 0; k < p->npairs; k++) {
        const rs_plan_pair *q = &p->pairs[k];
        rs_json_object_begin(j);
        rs_json_key(j, "from");
        rs_json_string(j, an->names[q->from]);
        rs_json_key(j, "to");
        rs_json_string(j, bn->names[q->to]);
        json_u128(j, "weight", q->weight);
        rs_json_key(j, "share");
        rs_json_double(j, q->share);
        rs_json_key(j, "arcs");
        rs_json_u64(j, q->arcs);
        rs_json_key(j, "violation");
        rs_json_bool(j, q->violation);
        if (d && d->have) {
            rs_json_key(j, "rows");
            rs_json_u64(j, d->keys[k]);
            rs_json_key(j, "bytes");
            rs_json_u64(j, d->bytes_of[k]);
            if (d->wave) {
                rs_json_key(j, "wave");
                rs_json_u64(j, d->wave[k]);
            }
        }
        rs_json_object_end(j);
    }
    rs_json_array_end(j);
}

/* Every moving arc (--json-arcs). */
static void json_arcs(rs_json *j, const rs_plan *p)
{
    const rs_nodes *an = rs_ring_nodes(p->old_ring), *bn = rs_ring_nodes(p->new_ring);
    rs_json_key(j, "arcs");
    rs_json_array_begin(j);
    for (size_t k = 0; k < p->narcs; k++) {
        const rs_plan_arc *r = &p->arcs[k];
        rs_json_object_begin(j);
        json_u128(j, "start", r->start);
        json_u128(j, "end", (rs_u128)r->last + 1);
        rs_json_key(j, "from");
        rs_json_string(j, an->names[r->from]);
        rs_json_key(j, "to");
        rs_json_string(j, bn->names[r->to]);
        json_u128(j, "weight", r->weight);
        rs_json_object_end(j);
    }
    rs_json_array_end(j);
}

int rs_plan_json_write(FILE *f, const rs_plan *p, const rs_plan_data *d, const rs_plan_json_opts *o)
{
    rs_json j;
    rs_json_init(&j, f, 1);
    rs_json_object_begin(&j);
    json_head(&j, p);
    json_change(&j, p);
    json_moved(&j, p);
    json_consistency(&j, p);
    json_data(&j, p, d, o);
    json_pairs(&j, p, d);
    if (o->arcs)
        json_arcs(&j, p);
    rs_json_object_end(&j);
    fputc('\n', f);
    return rs_json_finish(&j);
}
