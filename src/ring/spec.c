/* ring/spec.c - a ring as a user describes it, resolved into its options
 * and nodes (ringshard/ring.h, rs_ring_spec).
 *
 * The fields are kept as text until every one is in: the scheme decides
 * the defaults of the others (a hash's seed, ketama's points), and a
 * client preset (--compat) replaces what it sets, so it refuses them. */
#include <stdlib.h>
#include <string.h>
#include "ringshard/nodes.h"
#include "ringshard/ring.h"
#include "util/numparse.h"

/* The scheme, then the client preset, hash, seed, points, label, sign and
 * order over its defaults. 0, or -1 with err (RS_EXIT_USAGE). */
static int resolve_opts(const rs_ring_spec *s, rs_ring_opts *o, rs_error *err)
{
    int scheme = RS_SCHEME_RING;
    if (s->scheme && (scheme = rs_scheme_by_name(s->scheme)) < 0)
        return rs_error_set(err, RS_EXIT_USAGE, "--scheme: unknown scheme '%s' (ring, ketama, slots, modulo, jump)",
                            s->scheme);
    rs_ring_opts_default(o, (rs_scheme_id)scheme);
    if (s->compat) {
        int c = rs_compat_by_name(s->compat);
        if (c < 0)
            return rs_error_set(err, RS_EXIT_USAGE,
                                "--compat: unknown client '%s' (libketama, libmemcached, libmemcached-spy, twemproxy, "
                                "spymemcached, hashring)", s->compat);
        if (s->scheme || s->hash || s->seed || s->vnodes || s->label || s->sign || s->order)
            return rs_error_set(err, RS_EXIT_USAGE,
                                "--compat %s sets the scheme, hash, points and labels: it excludes --scheme, --hash, "
                                "--seed, --vnodes, --label, --sign and --order", s->compat);
        rs_ring_opts_compat(o, (rs_compat_id)c);
    }
    if (s->hash) {
        const rs_hash_info *h = rs_hash_by_name(s->hash);
        if (!h)
            return rs_error_set(err, RS_EXIT_USAGE, "--hash: unknown hash '%s' (see --help)", s->hash);
        o->hash = h->id;
        o->seed = h->default_seed;
    }
    unsigned long long v;
    if (s->seed) {
        if (rs_parse_uint("--seed", s->seed, 0, UINT64_MAX, &v, err) != 0)
            return -1;
        o->seed = v;
    }
    if (s->vnodes) {
        if (rs_parse_uint("--vnodes", s->vnodes, 1, RS_RING_VNODES_MAX, &v, err) != 0)
            return -1;
        o->vnodes = (uint32_t)v;
    }
    if (s->label) {
        if (strlen(s->label) >= RS_LABEL_MAX)
            return rs_error_set(err, RS_EXIT_USAGE, "--label: template longer than %d bytes", RS_LABEL_MAX - 1);
        strcpy(o->label, s->label);
    }
    if (s->sign) {
        if (strcmp(s->sign, "clear") && strcmp(s->sign, "keep"))
            return rs_error_set(err, RS_EXIT_USAGE, "--sign: expected clear or keep, not '%s'", s->sign);
        o->clear_sign = strcmp(s->sign, "clear") == 0;
    }
    if (s->order) {
        if (strcmp(s->order, "signed") && strcmp(s->order, "unsigned"))
            return rs_error_set(err, RS_EXIT_USAGE, "--order: expected signed or unsigned, not '%s'", s->order);
        o->order = strcmp(s->order, "signed") == 0 ? RS_ORDER_SIGNED : RS_ORDER_UNSIGNED;
    }
    return 0;
}

int rs_ring_spec_resolve(const rs_ring_spec *s, rs_ring_opts *o, rs_nodes *nodes, rs_error *err)
{
    if (resolve_opts(s, o, err) != 0)
        return -1;
    if (s->nodes && s->nodes_file)
        return rs_error_set(err, RS_EXIT_USAGE, "--nodes and --nodes-file exclude each other");
    if (s->nodes_file) {
        rs_nodes_syntax syn;   /* the preset's rules, checked line by line */
        rs_compat_syntax(o->compat, &syn);
        if (rs_nodes_load_syntax(nodes, s->nodes_file, &syn, err) != 0)
            return -1;
    } else {
        unsigned long long n = 1000;
        if (s->nodes && rs_parse_uint("--nodes", s->nodes, 1, RS_RING_NODES_MAX, &n, err) != 0)
            return -1;
        if (rs_nodes_init_count(nodes, (uint32_t)n, err) != 0)
            return -1;
    }
    for (int i = 0; i < s->ndown; i++) {   /* the lists add up */
        char *list = strdup(s->down[i]), *save = NULL;
        for (char *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save))
            if (rs_nodes_set_down(nodes, name, err) != 0) {
                free(list);
                rs_nodes_free(nodes);
                return -1;
            }
        free(list);
    }
    return 0;
}

int rs_ring_spec_given(const rs_ring_spec *s)
{
    return s->scheme || s->hash || s->seed || s->nodes || s->nodes_file || s->vnodes || s->label || s->sign ||
           s->order || s->ndown || s->compat;
}

rs_ring *rs_ring_build_default(rs_error *err)
{
    rs_ring_spec none = {0};
    rs_ring_opts o;
    rs_nodes nodes;
    if (rs_ring_spec_resolve(&none, &o, &nodes, err) != 0)
        return NULL;
    rs_ring *r = rs_ring_build(&o, &nodes, err);
    rs_nodes_free(&nodes);
    return r;
}
