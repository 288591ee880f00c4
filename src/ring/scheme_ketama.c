/* ketama (libketama, twemproxy): each node has P points (160 by
 * default); the MD5 digest of label "{node}{i}" (libketama/twemproxy:
 * "{node}-{i}") gives 4 points, its 4 little-endian 32-bit words. Keys are
 * hashed with the ring's hash (md5_ketama by default) onto the same 2^32
 * circle.
 *
 * Weights: P * weight points, rounded to a multiple of 4. libketama and
 * twemproxy scale by weight / total weight * number of servers, so adding a
 * server changes every other server's point count and moves keys between
 * servers that did not change; here a node's count depends on its own
 * weight only.
 *
 * Client presets (opts.compat, RS_COMPAT_TABLE) reproduce those clients
 * instead: their label formats, their point counts computed with the same
 * float and double operations in the same order (so that equal weights give
 * 39 digests where the client's arithmetic rounds down), their collision
 * rule and twemproxy's empty key. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ring/ring_impl.h"

/* A preset's weights: integers in [1, 2^32) except for hashring, whose
 * weights are JavaScript numbers. libketama copies a name into 22 bytes. */
static int compat_check(rs_ring *r, rs_error *err)
{
    const rs_compat_info *c = rs_compat_get(r->opts.compat);
    for (uint32_t j = 0; j < r->nodes.count; j++) {
        double w = r->nodes.weights[j];
        if (c->count != RS_COMPAT_COUNT_HASHRING && (w != floor(w) || w > UINT32_MAX))
            return rs_error_set(err, RS_EXIT_USAGE,
                                "--compat %s: node '%s' has weight %.17g; %s weights are whole numbers from 1 to %u",
                                c->name, r->nodes.names[j], w, c->name, UINT32_MAX);
        if (r->opts.compat == RS_COMPAT_LIBKETAMA && strlen(r->nodes.names[j]) > 21)
            return rs_error_set(err, RS_EXIT_USAGE,
                                "--compat libketama: node name '%s' is longer than libketama's 21 bytes",
                                r->nodes.names[j]);
    }
    r->keep_first = c->keep != RS_COMPAT_KEEP_LAST;
    return 0;
}

static int ketama_check(rs_ring *r, rs_error *err)
{
    if (r->opts.compat >= RS_COMPAT__COUNT)
        return rs_error_set(err, RS_EXIT_USAGE, "unknown client preset");
    if (r->opts.compat != RS_COMPAT_NONE) {
        if (r->opts.hash != RS_HASH_MD5_KETAMA || r->opts.vnodes != 160)
            return rs_error_set(err, RS_EXIT_USAGE, "client preset %s needs md5_ketama and 160 points",
                                rs_compat_get(r->opts.compat)->name);
        if (compat_check(r, err) != 0)
            return -1;
    }
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

/* Digests of a node of weight w among n live nodes of total weight t
 * (integers except for hashring), written as each client writes it.
 * FLT_EVAL_METHOD is 0 on the targets (SSE): float operations round to
 * float, as Java's do. The volatile stores keep a compiler that may fuse
 * a multiply and an add (-ffp-contract with FMA) from rounding once where
 * the client rounds twice. */
static uint32_t compat_digests(rs_compat_count rule, double w, double t, uint32_t n, int all_ones)
{
    volatile float prod;
    switch (rule) {
    case RS_COMPAT_COUNT_LIBKETAMA: {
        /* libketama: float pct = (float)memory / (float)total;
         * unsigned ks = floorf(pct * 40.0 * (float)numservers);
         * the product is double, floorf's argument rounds it to float. */
        float pct = (float)(unsigned long)w / (float)(unsigned long)t;
        volatile double x = pct * 40.0;
        x = x * (float)n;
        return (uint32_t)floorf((float)x);
    }
    case RS_COMPAT_COUNT_MEMCACHED: {
        /* libmemcached: floor((float)(pct * 160 / 4 * (float)live + 0.0000000001F)) * 4 */
        float pct = (float)(uint32_t)w / (float)(uint64_t)t;
        prod = pct * 160 / 4 * (float)n;
        return (uint32_t)floor((float)(prod + 0.0000000001F));
    }
    case RS_COMPAT_COUNT_SPY:
        if (all_ones)
            return 40; /* no weight map: numReps / 4 digests */
        __attribute__((fallthrough)); /* the weighted locator's formula is twemproxy's */
    case RS_COMPAT_COUNT_TWEMPROXY: {
        /* twemproxy: floorf((float)(pct * 160 / 4 * (float)n + 0.0000000001)) * 4;
         * spymemcached: Math.floor((float)(percent * (float)160 / 4 * (float)nodeCount
         * + 0.0000000001)) * 4: the product in float, the add in double. */
        float pct = (float)(uint32_t)w / (float)(uint32_t)t;
        prod = pct * 160 / 4 * (float)n;
        return (uint32_t)floorf((float)(prod + 0.0000000001));
    }
    case RS_COMPAT_COUNT_HASHRING:
    default: {
        /* hashring: Math.floor(server.weight / total * vnodes * servers.length) */
        volatile double x = w / t * 40;
        return (uint32_t)floor(x * n);
    }
    }
}

/* The port of a "host:port" name: the digits after the last ':' (11211
 * when there are none); *hostlen is the length of the host part. */
static unsigned name_port(const char *name, size_t *hostlen)
{
    const char *c = strrchr(name, ':');
    *hostlen = strlen(name);
    if (!c || !c[1] || strspn(c + 1, "0123456789") != strlen(c + 1) || strlen(c + 1) > 5)
        return 11211;
    *hostlen = (size_t)(c - name);
    return (unsigned)atoi(c + 1);
}

/* nutcracker 0.5.0 (nc_ketama.c) writes each label into a buffer of
 * KETAMA_MAX_HOSTLEN (273) bytes with snprintf and hashes what fits: the
 * first 272 bytes ("Unexpectedly forced to truncate a hostname"). */
#define TWEMPROXY_LABEL_MAX 272

/* The room label_prefix needs: a name, ':', a port, '/' and the NUL. */
#define PREFIX_CAP (RS_NODE_NAME_MAX + 16)

/* A preset's label prefix of node `node`, the text before "-{i}" (see
 * RS_COMPAT_TABLE), into buf (cap >= PREFIX_CAP); returns its length.
 * An alias (a twemproxy server NAME) is the prefix as written. Under the
 * libmemcached presets a name starting with '/' is a unix socket, which
 * libmemcached gives port 0 ("/path:0-i"), whatever follows the last
 * ':' of the path; a trailing ":0" is the same port written out. */
static size_t label_prefix(const rs_ring *r, uint32_t node, char *buf, size_t cap)
{
    const char *name = r->nodes.names[node];
    rs_compat_label kind = rs_compat_get(r->opts.compat)->label;
    if (r->nodes.alias[node] || kind == RS_COMPAT_LABEL_FULL)
        return (size_t)snprintf(buf, cap, "%s", name);
    size_t hl;
    unsigned port;
    if (name[0] == '/' && r->opts.compat != RS_COMPAT_TWEMPROXY) {
        hl = strlen(name);
        if (hl > 2 && !strcmp(name + hl - 2, ":0"))
            hl -= 2;
        port = 0;
    } else {
        port = name_port(name, &hl);
    }
    if (kind == RS_COMPAT_LABEL_SLASH)
        return (size_t)snprintf(buf, cap, "/%.*s:%u", (int)hl, name, port);
    if (port == 11211)
        return (size_t)snprintf(buf, cap, "%.*s", (int)hl, name);
    return (size_t)snprintf(buf, cap, "%.*s:%u", (int)hl, name, port);
}

/* A preset's label i of node `node` (see RS_COMPAT_TABLE); twemproxy's
 * cut to what its buffer holds. */
static size_t compat_label(const rs_ring *r, uint32_t node, uint32_t i, char *buf, size_t cap)
{
    char prefix[PREFIX_CAP];
    size_t pl = label_prefix(r, node, prefix, sizeof prefix);
    size_t n = (size_t)snprintf(buf, cap, "%.*s-%u", (int)pl, prefix, i);
    if (r->opts.compat == RS_COMPAT_TWEMPROXY && n > TWEMPROXY_LABEL_MAX && cap > TWEMPROXY_LABEL_MAX) {
        n = TWEMPROXY_LABEL_MAX;
        buf[n] = '\0';
    }
    return n;
}

static size_t label_of(const rs_ring *r, uint32_t node, uint32_t i, char *buf, size_t cap)
{
    if (r->opts.compat != RS_COMPAT_NONE)
        return compat_label(r, node, i, buf, cap);
    return rs_label_expand(r, node, i, buf, cap);
}

/* The sums over the live nodes that every client's point count uses. */
typedef struct {
    double total;
    uint32_t live;
    int all_ones;
} live_sums;

/* order: the nodes in the order the client sums them (hashring's
 * reduce: emit_order), or NULL for node order; the integer sums of the
 * other presets are exact in any order. */
static live_sums sum_live(const rs_ring *r, const uint32_t *order)
{
    live_sums s = {0, 0, 1};
    for (uint32_t o = 0; o < r->nodes.count; o++) {
        uint32_t j = order ? order[o] : o;
        if (!r->nodes.down[j]) {
            s.total += r->nodes.weights[j];  /* hashring's reduce: in node order */
            s.live++;
            s.all_ones &= r->nodes.weights[j] == 1;
        }
    }
    return s;
}

static uint32_t digests_of(const rs_ring *r, uint32_t j, const live_sums *s)
{
    if (r->nodes.down[j])
        return 0;
    if (r->opts.compat == RS_COMPAT_NONE)
        return digests_for(r, j);
    return compat_digests(rs_compat_get(r->opts.compat)->count, r->nodes.weights[j], s->total, s->live, s->all_ones);
}

/* Digests per node into d[0..count) (0 for down nodes); order as sum_live's. */
static void node_digests(const rs_ring *r, const uint32_t *order, uint32_t *d)
{
    live_sums s = sum_live(r, order);
    for (uint32_t j = 0; j < r->nodes.count; j++)
        d[j] = digests_of(r, j, &s);
}

static uint32_t *emit_order(const rs_ring *r);

/* The points the ring will hold, for the memory budget before it is built
 * (out of memory for the order: node order's sum, a count as close). */
static size_t ketama_count(const rs_ring *r)
{
    uint32_t *order = emit_order(r);
    live_sums s = sum_live(r, order);
    free(order);
    size_t total = 0;
    for (uint32_t j = 0; j < r->nodes.count; j++)
        total += 4 * (size_t)digests_of(r, j, &s);
    return total;
}

/* twemproxy's server order: by label prefix, shorter first, then bytes
 * (string_compare); the prefixes (in one block, a name each, up to 1 KiB)
 * travel with the nodes being sorted, as qsort has no context argument. */
typedef struct {
    const char *prefix;
    size_t len;
    uint32_t node;
} named_node;

static int cmp_named(const void *a, const void *b)
{
    const named_node *x = a, *y = b;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    return memcmp(x->prefix, y->prefix, x->len);
}

/* Sorts order[] (every node) into twemproxy's server order. 0, or -1 out
 * of memory. */
static int name_order(const rs_ring *r, uint32_t *order)
{
    uint32_t count = r->nodes.count;
    char buf[PREFIX_CAP];
    size_t bytes = 0;
    for (uint32_t j = 0; j < count; j++)
        bytes += label_prefix(r, j, buf, sizeof buf);
    named_node *nn = malloc(count * sizeof *nn);
    char *text = malloc(bytes ? bytes : 1);
    if (!nn || !text) {
        free(nn);
        free(text);
        return -1;
    }
    for (size_t j = 0, at = 0; j < count; j++) {
        size_t len = label_prefix(r, (uint32_t)j, buf, sizeof buf);
        memcpy(text + at, buf, len);
        nn[j] = (named_node){text + at, len, (uint32_t)j};
        at += len;
    }
    qsort(nn, count, sizeof *nn, cmp_named);
    for (uint32_t j = 0; j < count; j++)
        order[j] = nn[j].node;
    free(nn);
    free(text);
    return 0;
}

/* A canonical JavaScript array index: "0", or digits without a leading
 * zero of value at most 2^32 - 2; *v its value. */
static int array_index(const char *name, uint64_t *v)
{
    size_t n = strspn(name, "0123456789");
    if (name[n] || n == 0 || n > 10 || (name[0] == '0' && n > 1))
        return 0;
    *v = strtoull(name, NULL, 10);
    return *v <= UINT32_MAX - 1;
}

typedef struct {
    uint64_t v;
    uint32_t node;
} indexed_node;

static int cmp_indexed(const void *a, const void *b)
{
    const indexed_node *x = a, *y = b;
    return (x->v > y->v) - (x->v < y->v);
}

/* hashring's server order, Object.keys of the servers object it is given:
 * the names that are array indices first, by value, then the others in
 * insertion (node) order. It both sums the weights (a double sum: its
 * order changes the point counts) and emits the points in it. 0, or -1
 * out of memory. */
static int js_key_order(const rs_ring *r, uint32_t *order)
{
    uint32_t count = r->nodes.count, ni = 0, k = 0;
    indexed_node *ix = malloc(count * sizeof *ix);
    if (!ix)
        return -1;
    uint64_t v;
    for (uint32_t j = 0; j < count; j++)
        if (array_index(r->nodes.names[j], &v))
            ix[ni++] = (indexed_node){v, j};
    qsort(ix, ni, sizeof *ix, cmp_indexed);  /* names are unique: no ties */
    for (uint32_t i = 0; i < ni; i++)
        order[k++] = ix[i].node;
    for (uint32_t j = 0; j < count; j++)
        if (!array_index(r->nodes.names[j], &v))
            order[k++] = j;
    free(ix);
    return 0;
}

/* The order in which nodes emit points (their seq decides collisions):
 * node order, twemproxy's name order or hashring's key order. Returns
 * NULL out of memory. */
static uint32_t *emit_order(const rs_ring *r)
{
    uint32_t count = r->nodes.count, *order = malloc(count * sizeof *order);
    if (!order)
        return NULL;
    for (uint32_t j = 0; j < count; j++)
        order[j] = j;
    int rc = 0;
    if (r->opts.compat == RS_COMPAT_HASHRING)
        rc = js_key_order(r, order);
    else if (r->opts.compat != RS_COMPAT_NONE && rs_compat_get(r->opts.compat)->keep == RS_COMPAT_KEEP_NAMEORDER)
        rc = name_order(r, order);
    if (rc != 0) {
        free(order);
        return NULL;
    }
    return order;
}

static int ketama_points(rs_ring *r, rs_raw_point **out, size_t *n, rs_error *err)
{
    uint32_t *digests = malloc(r->nodes.count * sizeof *digests);
    if (!digests)
        return rs_error_set(err, RS_EXIT_IO, "out of memory for the ketama point counts");
    uint32_t *order = emit_order(r);
    if (!order) {
        free(digests);
        return rs_error_set(err, RS_EXIT_IO, "out of memory for the ketama node order");
    }
    node_digests(r, order, digests);
    size_t total = 0;
    for (uint32_t j = 0; j < r->nodes.count; j++)
        total += 4 * (size_t)digests[j];
    rs_raw_point *p = malloc((total ? total : 1) * sizeof *p);
    if (!p) {
        free(p);
        free(order);
        free(digests);
        return rs_error_set(err, RS_EXIT_IO, "out of memory for %zu ketama points", total);
    }
    size_t k = 0;
    char label[4096];
    uint8_t d[16];
    for (uint32_t o = 0; o < r->nodes.count; o++) {
        uint32_t j = order[o];
        for (uint32_t i = 0; i < digests[j]; i++) {
            if (k % RS_RING_POLL == 0 && rs_ring_check_interrupt(err) != 0) {
                free(p);
                free(order);
                free(digests);
                return -1;
            }
            size_t len = label_of(r, j, i, label, sizeof label);
            if (len >= sizeof label) {
                free(p);
                free(order);
                free(digests);
                return rs_error_set(err, RS_EXIT_USAGE, "--label: a label of node '%s' is longer than %zu bytes "
                                    "(a shorter --label template)", r->nodes.names[j], sizeof label - 1);
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
    free(order);
    free(digests);
    *out = p;
    *n = k;
    return 0;
}

static uint64_t ketama_position(const rs_ring *r, const void *key, size_t len)
{
    if (len == 0 && r->opts.compat == RS_COMPAT_TWEMPROXY)
        return 0;  /* server_pool_hash: "if (keylen == 0) return 0;" */
    return (uint64_t)r->hash(key, len, r->opts.seed) & UINT32_MAX;
}

/* "{node}{i}#h": the label, then which of the digest's 4 words. */
static size_t ketama_label_text(const rs_ring *r, uint32_t i, char *buf, size_t cap)
{
    size_t n = label_of(r, r->node[i], r->label[i] / 4, buf, cap);
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
