/* The ring: building (points from the scheme, sorted, collisions resolved
 * as TreeMap.put resolves them), the lookup index, shares, descriptions.
 *
 * Lookup. A plain binary search over 200,000 points costs ~18 dependent
 * cache misses (7.8 M lookups/s here). Instead a table over the top bits of
 * the position gives, for each prefix, the first point at or above it; with
 * ~4 table entries per point the search is a scan of 0-2 points on the same
 * cache line or two (the measured ~170 M/s with a 2^20 table). */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ring/ring_impl.h"
#include "ringshard/interrupt.h"
#include "ringshard/util.h"
#include "util/filemode.h"

static const rs_scheme_ops *const scheme_ops[RS_SCHEME__COUNT] = {
#define RS_SCHEME_OPS(id, name, help) &rs_scheme_##name,
    RS_SCHEME_TABLE(RS_SCHEME_OPS)
#undef RS_SCHEME_OPS
};
static const char *const scheme_names[RS_SCHEME__COUNT] = {
#define RS_SCHEME_NAME(id, name, help) #name,
    RS_SCHEME_TABLE(RS_SCHEME_NAME)
#undef RS_SCHEME_NAME
};
static const char *const scheme_helps[RS_SCHEME__COUNT] = {
#define RS_SCHEME_HELP(id, name, help) help,
    RS_SCHEME_TABLE(RS_SCHEME_HELP)
#undef RS_SCHEME_HELP
};

static const rs_compat_info compat_table[RS_COMPAT__COUNT] = {
    {"none", RS_COMPAT_LABEL_FULL, RS_COMPAT_COUNT_LIBKETAMA, RS_COMPAT_KEEP_LAST, "no preset"},
#define RS_COMPAT_ROW(id, name, label, count, keep, help) \
    {name, RS_COMPAT_LABEL_##label, RS_COMPAT_COUNT_##count, RS_COMPAT_KEEP_##keep, help},
    RS_COMPAT_TABLE(RS_COMPAT_ROW)
#undef RS_COMPAT_ROW
};

const rs_compat_info *rs_compat_get(rs_compat_id id) { return &compat_table[id]; }

int rs_compat_by_name(const char *name)
{
    for (int i = 1; i < RS_COMPAT__COUNT; i++)
        if (strcmp(compat_table[i].name, name) == 0)
            return i;
    return -1;
}

void rs_compat_syntax(rs_compat_id id, rs_nodes_syntax *syn)
{
    memset(syn, 0, sizeof *syn);
    if (id == RS_COMPAT_NONE || id >= RS_COMPAT__COUNT)
        return;
    const rs_compat_info *c = rs_compat_get(id);
    syn->client = c->name;
    syn->weight_max = c->count == RS_COMPAT_COUNT_HASHRING ? 0 : UINT32_MAX;
    syn->host_port = c->label != RS_COMPAT_LABEL_FULL;
    syn->server_lines = id == RS_COMPAT_TWEMPROXY;
}

void rs_ring_opts_compat(rs_ring_opts *o, rs_compat_id compat)
{
    rs_ring_opts_default(o, RS_SCHEME_KETAMA);
    strcpy(o->label, "{node}-{i}");
    o->compat = compat;
}

const char *rs_scheme_name(rs_scheme_id id) { return id < RS_SCHEME__COUNT ? scheme_names[id] : NULL; }
const char *rs_scheme_help(rs_scheme_id id) { return id < RS_SCHEME__COUNT ? scheme_helps[id] : NULL; }

int rs_scheme_by_name(const char *name)
{
    for (int i = 0; i < RS_SCHEME__COUNT; i++)
        if (strcmp(scheme_names[i], name) == 0)
            return i;
    return -1;
}

void rs_ring_opts_default(rs_ring_opts *o, rs_scheme_id scheme)
{
    memset(o, 0, sizeof *o);
    o->scheme = scheme;
    o->hash = RS_HASH_MURMUR3_128;
    o->order = RS_ORDER_UNSIGNED;
    switch (scheme) {
    case RS_SCHEME_RING:
        o->clear_sign = 1;
        o->vnodes = 200;
        strcpy(o->label, "{node}&Node{i}");
        break;
    case RS_SCHEME_KETAMA:
        o->hash = RS_HASH_MD5_KETAMA;
        o->vnodes = 160;
        strcpy(o->label, "{node}{i}");
        break;
    case RS_SCHEME_SLOTS:
        o->hash = RS_HASH_JAVA_HASHCODE;
        o->order = RS_ORDER_SIGNED;
        o->vnodes = 1024;
        break;
    case RS_SCHEME_MODULO:
        o->clear_sign = 1;
        break;
    case RS_SCHEME_JUMP:
    default:
        break;
    }
    o->seed = rs_hash_get(o->hash)->default_seed;
}

size_t rs_label_expand(const rs_ring *r, uint32_t node, uint32_t i, char *buf, size_t cap)
{
    const char *t = r->opts.label, *name = r->nodes.names[node];
    size_t n = 0;
    while (*t) {
        if (strncmp(t, "{node}", 6) == 0) {
            n += (size_t)snprintf(buf + (n < cap ? n : cap), n < cap ? cap - n : 0, "%s", name);
            t += 6;
        } else if (strncmp(t, "{i}", 3) == 0) {
            n += (size_t)snprintf(buf + (n < cap ? n : cap), n < cap ? cap - n : 0, "%u", i);
            t += 3;
        } else {
            if (n + 1 < cap)
                buf[n] = *t;
            n++;
            t++;
        }
    }
    if (cap)
        buf[n < cap ? n : cap - 1] = '\0';
    return n;
}

static int cmp_raw(const void *a, const void *b)
{
    const rs_raw_point *x = a, *y = b;
    if (x->pos != y->pos)
        return x->pos < y->pos ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Sorts points as cmp_raw orders them, by position then seq. The schemes
 * emit points in insertion order (seq = index), so a stable sort by
 * position alone orders ties by seq: an LSD radix sort, a byte a pass
 * (passes where every point has the same byte are skipped). qsort took 35
 * of the 80 ms that `ringshard locate` spent building the default ring of
 * 200,000 points; this takes about 5. Points in another order, or no memory
 * for the scratch copy: qsort. Returns 0, or -1 when interrupted (err). */
static int sort_raw(rs_raw_point *a, size_t n, rs_error *err)
{
    int in_order = 1;
    for (size_t i = 0; i < n && in_order; i++)
        in_order = a[i].seq == i;
    rs_raw_point *tmp = in_order && n > 1 ? malloc(n * sizeof *tmp) : NULL;
    if (!tmp) {
        qsort(a, n, sizeof *a, cmp_raw);
        return rs_ring_check_interrupt(err);
    }
    size_t count[8][256];  /* 16 KiB */
    memset(count, 0, sizeof count);
    for (size_t i = 0; i < n; i++)
        for (int b = 0; b < 8; b++)
            count[b][(a[i].pos >> (8 * b)) & 255]++;
    rs_raw_point *src = a, *dst = tmp;
    for (int b = 0; b < 8; b++) {
        if (rs_ring_check_interrupt(err) != 0) {  /* a pass over 10^8 points takes a second */
            free(tmp);
            return -1;
        }
        size_t *c = count[b];
        if (c[(a[0].pos >> (8 * b)) & 255] == n)
            continue;  /* one value: the pass would not move anything */
        size_t at = 0;
        for (int v = 0; v < 256; v++) {
            size_t k = c[v];
            c[v] = at;
            at += k;
        }
        for (size_t i = 0; i < n; i++)
            dst[c[(src[i].pos >> (8 * b)) & 255]++] = src[i];
        rs_raw_point *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, n * sizeof *a);
    free(tmp);
    return 0;
}

int rs_ring_check_interrupt(rs_error *err)
{
    if (!rs_interrupt_pending())
        return 0;
    return rs_error_set(err, RS_EXIT_INTERRUPTED, "interrupted while building the ring");
}

/* Test hook (tests/test_edges.c): with RINGSHARD_TEST_RING_PAUSE=FILE in
 * the environment the build opens FILE (creating it; a FIFO makes the
 * opener wait for the test) when it starts making points and
 * waits there for the interrupt flag, so that a test can signal a process
 * that is certainly inside the ring build without timing anything. The
 * signals are blocked between the check and sigsuspend, so none is lost. */
static void test_pause_hook(void)
{
    const char *file = getenv("RINGSHARD_TEST_RING_PAUSE");
    if (!file || !*file)
        return;
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigprocmask(SIG_BLOCK, &block, &old);
    int fd = rs_file_create(file, O_WRONLY | O_TRUNC, RS_FILE_USER);  /* a FIFO: blocks for its reader */
    if (fd >= 0)
        close(fd);
    while (!rs_interrupt_pending())
        sigsuspend(&old);
    sigprocmask(SIG_SETMASK, &old, NULL);
}

static unsigned bits_for(rs_u128 space)
{
    unsigned b = 0;
    while (b < 64 && ((rs_u128)1 << b) < space)
        b++;
    return b;
}

/* The slot table (ring_impl.h): a slot per 2 points or so, at most 2^19,
 * so that lookups mostly end in it and it stays small enough for the
 * caches (4 MiB at most; its size is index_bytes). */
static int build_index(rs_ring *r, rs_error *err)
{
    unsigned want = 3;
    while (want < 19 && ((uint64_t)1 << want) < (uint64_t)r->npoints * 2)
        want++;
    if (want > r->space_bits)
        want = r->space_bits;
    r->slot_shift = r->space_bits - want;
    r->nslots = (uint64_t)((r->space - 1) >> r->slot_shift) + 1;
    r->slot = rs_alloc_huge(r->nslots * sizeof *r->slot);
    if (!r->slot)
        return rs_error_set(err, RS_EXIT_IO, "out of memory for the ring index");
    uint32_t i = 0;
    for (uint64_t b = 0; b < r->nslots; b++) {
        while (i < r->npoints && (r->pos[i] >> r->slot_shift) < b)
            i++;
        r->slot[b].first = i;
    }
    for (uint64_t b = 0; b < r->nslots; b++) {
        uint32_t next = b + 1 < r->nslots ? r->slot[b + 1].first : r->npoints;
        uint32_t i0 = r->slot[b].first;
        r->slot[b].owner = next != i0 ? RS_SLOT_SEARCH : r->node[i0 == r->npoints ? 0 : i0];
    }
    return 0;
}

static int build_points(rs_ring *r, rs_error *err)
{
    rs_raw_point *raw = NULL;
    size_t n = 0;
    test_pause_hook();
    if (r->ops->points(r, &raw, &n, err) != 0)
        return -1;
    if (n == 0) {
        free(raw);
        return rs_error_set(err, RS_EXIT_USAGE, "the ring has no points (every node is down)");
    }
    if (n > UINT32_MAX - 1) {
        free(raw);
        return rs_error_set(err, RS_EXIT_USAGE, "too many points on the ring");
    }
    if (sort_raw(raw, n, err) != 0) {
        free(raw);
        return -1;
    }
    /* Keep the last of each run of equal positions: TreeMap.put replaces.
     * Client presets that sort stably and search for the first point >= the
     * key keep the first instead. */
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (r->keep_first ? kept && raw[kept - 1].pos == raw[i].pos : i + 1 < n && raw[i + 1].pos == raw[i].pos)
            continue;
        raw[kept++] = raw[i];
    }
    r->collisions = (uint32_t)(n - kept);
    r->npoints = (uint32_t)kept;
    r->pos = rs_alloc_huge(kept * sizeof *r->pos);
    r->node = rs_alloc_huge(kept * sizeof *r->node);
    r->label = malloc(kept * sizeof *r->label);
    if (!r->pos || !r->node || !r->label) {
        free(raw);
        return rs_error_set(err, RS_EXIT_IO, "out of memory for the ring");
    }
    for (size_t i = 0; i < kept; i++) {
        r->pos[i] = raw[i].pos;
        r->node[i] = raw[i].node;
        r->label[i] = raw[i].label;
    }
    free(raw);
    return build_index(r, err);
}

static char *describe(const rs_ring *r)
{
    const rs_ring_opts *o = &r->opts;
    size_t cap = 320 + RS_LABEL_MAX;
    for (uint32_t i = 0; i < r->nodes.count; i++)
        cap += strlen(r->nodes.names[i]) + 40;
    char *d = malloc(cap);
    if (!d)
        return NULL;
    size_t n = (size_t)snprintf(d, cap,
                                "ringshard-ring 1\nscheme\t%s\nhash\t%s\nseed\t%llu\nsign\t%s\norder\t%s\n"
                                "vnodes\t%u\nlabel\t%s\nnodes\t%u\n",
                                rs_scheme_name(o->scheme), rs_hash_get(o->hash)->name,
                                (unsigned long long)o->seed, o->clear_sign ? "clear" : "keep",
                                o->order == RS_ORDER_SIGNED ? "signed" : "unsigned", o->vnodes, o->label,
                                r->nodes.count);
    /* Appended only for a preset: every other ring keeps its description
     * and fingerprint byte for byte. */
    if (o->compat != RS_COMPAT_NONE)
        n += (size_t)snprintf(d + n, cap - n, "compat\t%s\n", rs_compat_get(o->compat)->name);
    /* An alias (a twemproxy server NAME, hashed as written) is an "alias"
     * line: a reader that does not know aliases refuses the description
     * rather than read the name as host:port. */
    for (uint32_t i = 0; i < r->nodes.count; i++)
        n += (size_t)snprintf(d + n, cap - n, "%s\t%.17g\t%s\t%s\n", r->nodes.alias[i] ? "alias" : "node",
                              r->nodes.weights[i], r->nodes.down[i] ? "down" : "up", r->nodes.names[i]);
    return d;
}

rs_ring *rs_ring_build(const rs_ring_opts *opts, const rs_nodes *nodes, rs_error *err)
{
    if (opts->scheme >= RS_SCHEME__COUNT || opts->hash >= RS_HASH__COUNT) {
        rs_error_set(err, RS_EXIT_USAGE, "unknown scheme or hash");
        return NULL;
    }
    if (opts->compat != RS_COMPAT_NONE && opts->scheme != RS_SCHEME_KETAMA) {
        rs_error_set(err, RS_EXIT_USAGE, "client presets are ketama rings");
        return NULL;
    }
    if (nodes->count == 0) {
        rs_error_set(err, RS_EXIT_USAGE, "the ring needs at least one node");
        return NULL;
    }
    rs_ring *r = calloc(1, sizeof *r);
    if (!r) {
        rs_error_set(err, RS_EXIT_IO, "out of memory");
        return NULL;
    }
    r->opts = *opts;
    r->ops = scheme_ops[opts->scheme];
    const rs_hash_info *h = rs_hash_get(opts->hash);
    r->hash = h->fn;
    r->hash_bits = h->bits;
    r->hash_signed = h->is_signed;
    uint64_t wmask = h->bits == 64 ? UINT64_MAX : ((uint64_t)1 << h->bits) - 1;
    uint64_t sign = (uint64_t)1 << (h->bits - 1);
    r->and_mask = wmask;
    r->space = (rs_u128)wmask + 1;
    if (h->is_signed && opts->clear_sign) {
        r->and_mask = wmask >> 1;
        r->space = (rs_u128)(wmask >> 1) + 1;
    } else if (h->is_signed && opts->order == RS_ORDER_SIGNED) {
        r->xor_mask = sign;
    }
    r->space_bits = bits_for(r->space);
    if (rs_nodes_copy(&r->nodes, nodes, err) != 0)
        goto fail;
    for (uint32_t i = 0; i < nodes->count; i++)
        r->live += !nodes->down[i];
    if (r->live == 0) {
        rs_error_set(err, RS_EXIT_USAGE, "every node is down");
        goto fail;
    }
    if (r->ops->check(r, err) != 0)
        goto fail;
    r->space_bits = bits_for(r->space);
    if (r->ops->points && build_points(r, err) != 0)
        goto fail;
    r->description = describe(r);
    if (!r->description) {
        rs_error_set(err, RS_EXIT_IO, "out of memory");
        goto fail;
    }
    uint64_t fp[2];
    rs_murmur3_x64_128(r->description, strlen(r->description), 0, fp);
    for (int k = 0; k < 16; k++)
        snprintf(r->fingerprint + 2 * k, 3, "%02x", (unsigned)((fp[k / 8] >> (8 * (k % 8))) & 0xff));
    return r;
fail:
    rs_ring_free(r);
    return NULL;
}

/* The nodes' names, weights and flags, as the ring copies them, and the
 * description (a line per node); slots' prefix table; the index. */
static uint64_t nodes_bytes(const rs_nodes *nodes)
{
    uint64_t b = 0;
    for (uint32_t i = 0; i < nodes->count; i++)
        b += 2 * (strlen(nodes->names[i]) + 1) + 40 + sizeof(char *) + sizeof(double) + 2 * sizeof(uint32_t);
    return b + 4096;
}

/* What the memory plans count for the slot table: half as many 8-byte
 * slots as this count of 4-byte words, plus 4 bytes of slack. (The batch
 * size, hence the output's members, follows from what is counted here:
 * it must not change.) */
static uint64_t index_bytes(uint64_t npoints)
{
    uint64_t b = 16;
    while (b < ((uint64_t)1 << 20) && b < npoints * 4)
        b *= 2;
    return (b + 1) * sizeof(uint32_t);
}

uint64_t rs_ring_build_bytes(const rs_ring_opts *opts, const rs_nodes *nodes)
{
    if (opts->scheme >= RS_SCHEME__COUNT)
        return 0;
    rs_ring probe;
    memset(&probe, 0, sizeof probe);
    probe.opts = *opts;
    probe.nodes = *nodes;  /* read only: count looks at weights and down */
    probe.ops = scheme_ops[opts->scheme];
    uint64_t n = probe.ops->count ? probe.ops->count(&probe) : 0;
    uint64_t extra = opts->scheme == RS_SCHEME_SLOTS ? 2 * (uint64_t)opts->vnodes * sizeof(rs_u128) : 0;
    /* The raw points and the radix sort's copy live together; then the
     * kept arrays (pos, node, label) beside the raw points. */
    return n * 2 * sizeof(rs_raw_point) + index_bytes(n) + nodes_bytes(nodes) + extra;
}

uint64_t rs_ring_bytes(const rs_ring *r)
{
    uint64_t b = sizeof *r + nodes_bytes(&r->nodes);
    if (r->npoints)
        b += (uint64_t)r->npoints * (sizeof *r->pos + sizeof *r->node + sizeof *r->label) + index_bytes(r->npoints);
    if (r->live_map)
        b += (uint64_t)r->nodes.count * sizeof *r->live_map;
    if (r->prefix)
        b += 2 * (uint64_t)r->opts.vnodes * sizeof *r->prefix;
    return b;
}

void rs_ring_free(rs_ring *r)
{
    if (!r)
        return;
    rs_nodes_free(&r->nodes);
    free(r->pos);
    free(r->node);
    free(r->label);
    free(r->slot);
    free(r->live_map);
    free(r->prefix);
    free(r->description);
    free(r);
}

uint64_t rs_ring_position(const rs_ring *r, const void *key, size_t len)
{
    return r->ops->position(r, key, len);
}

/* The first point at or after pos among points [lo, hi), every one of
 * them in pos's slot: the answer is in [lo, hi] (hi: the next slot's
 * first point), point 0 past the last. */
static inline uint32_t search_slot(const rs_ring *r, uint32_t lo, uint32_t hi, uint64_t pos)
{
    while (hi - lo > 8) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (r->pos[mid] < pos)
            lo = mid + 1;
        else
            hi = mid;
    }
    while (lo < hi && r->pos[lo] < pos)
        lo++;
    return lo == r->npoints ? 0 : lo;
}

uint32_t rs_ring_point_at(const rs_ring *r, uint64_t pos)
{
    if (!r->npoints)
        return UINT32_MAX;
    uint64_t b = pos >> r->slot_shift;
    return search_slot(r, r->slot[b].first, b + 1 < r->nslots ? r->slot[b + 1].first : r->npoints, pos);
}

/* The prefetches, inlined where they are used. Not a function of their
 * own: GCC's interprocedural analysis takes a function that only
 * prefetches for one without side effects (a const function) and drops
 * the calls whose result is unused - all of them. The pipeline's index
 * prefetches were lost so (GCC 12, with or without LTO). The public
 * entries below are kept out of that analysis (noipa) for the same
 * reason: a call costs less than a prefetch that never happens. */
static inline __attribute__((always_inline)) void prefetch_index(const rs_ring *r, uint64_t pos)
{
    if (r->npoints)
        __builtin_prefetch(&r->slot[pos >> r->slot_shift]);
}

static inline __attribute__((always_inline)) void prefetch_point(const rs_ring *r, uint64_t pos)
{
    if (r->npoints) {
        const rs_ring_slot *sl = &r->slot[pos >> r->slot_shift];
        if (sl->owner == RS_SLOT_SEARCH) {
            __builtin_prefetch(&r->pos[sl->first]);
            __builtin_prefetch(&r->node[sl->first]);
        }
    }
}

__attribute__((noipa)) void rs_ring_prefetch_index(const rs_ring *r, uint64_t pos) { prefetch_index(r, pos); }

__attribute__((noipa)) void rs_ring_prefetch_point(const rs_ring *r, uint64_t pos) { prefetch_point(r, pos); }

uint32_t rs_ring_owner(const rs_ring *r, uint64_t pos)
{
    if (!r->npoints)
        return r->ops->owner(r, pos);
    uint32_t own = r->slot[pos >> r->slot_shift].owner;
    return own != RS_SLOT_SEARCH ? own : r->node[rs_ring_point_at(r, pos)];
}

uint32_t rs_ring_locate(const rs_ring *r, const void *key, size_t len)
{
    return rs_ring_owner(r, r->ops->position(r, key, len));
}

void rs_ring_positions(const rs_ring *r, const char *const *keys, const size_t *lens, size_t n, uint64_t *pos)
{
    for (size_t i = 0; i < n; i++) {
        pos[i] = r->ops->position(r, keys[i], lens[i]);
        prefetch_index(r, pos[i]);
    }
}

/* A hint (rs_ring_prefetch_points): the slot's owner, or the first of its
 * points in the low 32 bits and how many it has in the high ones. */
void rs_ring_prefetch_points(const rs_ring *r, const uint64_t *pos, size_t n, uint64_t *hint)
{
    if (!r->npoints) {
        memset(hint, 0, n * sizeof *hint);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t b = pos[i] >> r->slot_shift;
        const rs_ring_slot *sl = &r->slot[b];
        if (sl->owner != RS_SLOT_SEARCH) {
            hint[i] = sl->owner;
            continue;
        }
        uint32_t hi = b + 1 < r->nslots ? sl[1].first : r->npoints;
        hint[i] = sl->first | (uint64_t)(hi - sl->first) << 32;
        __builtin_prefetch(&r->pos[sl->first]);
        __builtin_prefetch(&r->node[sl->first]);
    }
}

void rs_ring_owners(const rs_ring *r, const uint64_t *pos, const uint64_t *hint, size_t n, uint32_t *own)
{
    if (!r->npoints) {
        for (size_t i = 0; i < n; i++)
            own[i] = r->ops->owner(r, pos[i]);
        return;
    }
    /* The owners the slots gave first, then the searches: searching as
     * each came stalled the rows after it behind the branch, and reading
     * the slot again here (a block after it was prefetched) missed the
     * cache more often than not. */
    enum { RUN = 64 };
    uint32_t search[RUN];
    for (size_t at = 0; at < n; at += RUN) {
        size_t m = n - at < RUN ? n - at : RUN, k = 0;
        for (size_t i = 0; i < m; i++) {
            own[at + i] = (uint32_t)hint[at + i];
            search[k] = (uint32_t)i;
            k += (hint[at + i] >> 32) != 0;
        }
        for (size_t j = 0; j < k; j++) {
            size_t i = at + search[j];
            uint32_t lo = (uint32_t)hint[i], cnt = (uint32_t)(hint[i] >> 32);
            own[i] = r->node[search_slot(r, lo, lo + cnt, pos[i])];
        }
    }
}

uint32_t rs_ring_owner_bsearch(const rs_ring *r, uint64_t pos)
{
    if (!r->npoints)
        return r->ops->owner(r, pos);
    uint32_t lo = 0, hi = r->npoints;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (r->pos[mid] < pos)
            lo = mid + 1;
        else
            hi = mid;
    }
    return r->node[lo == r->npoints ? 0 : lo];
}

const rs_ring_opts *rs_ring_get_opts(const rs_ring *r) { return &r->opts; }
const rs_nodes *rs_ring_nodes(const rs_ring *r) { return &r->nodes; }
rs_u128 rs_ring_space(const rs_ring *r) { return r->space; }
int rs_ring_has_points(const rs_ring *r) { return r->ops->points != NULL; }
uint32_t rs_ring_npoints(const rs_ring *r) { return r->npoints; }
uint64_t rs_ring_point_pos(const rs_ring *r, uint32_t i) { return r->pos[i]; }
uint32_t rs_ring_point_node(const rs_ring *r, uint32_t i) { return r->node[i]; }
uint32_t rs_ring_point_label(const rs_ring *r, uint32_t i) { return r->label[i]; }
uint32_t rs_ring_collisions(const rs_ring *r) { return r->collisions; }
const char *rs_ring_description(const rs_ring *r) { return r->description; }
const char *rs_ring_fingerprint(const rs_ring *r) { return r->fingerprint; }
int rs_ring_shares_exact(const rs_ring *r) { return r->ops->shares_exact; }

rs_u128 rs_ring_weight(const rs_ring *r, uint64_t lo, uint64_t hi)
{
    if (r->ops->weight)
        return r->ops->weight(r, lo, hi);
    return (rs_u128)(hi - lo) + 1;
}

rs_u128 rs_ring_total_weight(const rs_ring *r)
{
    return rs_ring_weight(r, 0, (uint64_t)(r->space - 1));
}

int rs_ring_shares(const rs_ring *r, rs_u128 *owned)
{
    memset(owned, 0, r->nodes.count * sizeof *owned);
    if (!r->npoints)
        return r->ops->shares(r, owned);
    uint64_t last = r->pos[r->npoints - 1];
    /* The first point owns the wrap-around: after the last point, and up to itself. */
    rs_u128 wrap = rs_ring_weight(r, 0, r->pos[0]);
    if ((rs_u128)last + 1 < r->space)
        wrap += rs_ring_weight(r, last + 1, (uint64_t)(r->space - 1));
    owned[r->node[0]] += wrap;
    for (uint32_t i = 1; i < r->npoints; i++)
        owned[r->node[i]] += rs_ring_weight(r, r->pos[i - 1] + 1, r->pos[i]);
    return 0;
}

size_t rs_ring_point_label_text(const rs_ring *r, uint32_t i, char *buf, size_t cap)
{
    if (r->ops->label_text)
        return r->ops->label_text(r, i, buf, cap);
    return rs_label_expand(r, r->node[i], r->label[i], buf, cap);
}

char *rs_u128_str(rs_u128 v, char *buf)
{
    char tmp[48];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + (int)(v % 10));
        v /= 10;
    } while (v);
    for (int i = 0; i < n; i++)
        buf[i] = tmp[n - 1 - i];
    buf[n] = '\0';
    return buf;
}

/* Reads back what describe() writes; unknown keys are errors so that a
 * newer description is never silently misread. */
int rs_ring_parse_description(const char *text, rs_ring_opts *o, rs_nodes *nodes, rs_error *err)
{
    memset(nodes, 0, sizeof *nodes);
    rs_ring_opts_default(o, RS_SCHEME_RING);
    rs_node_index ix = {0};   /* a description may list 100,000 nodes: no linear duplicate check */
    const char *p = text;
    unsigned lineno = 0, declared = 0;
    int seen_header = 0;
    char line[8192];
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        lineno++;
        if (len >= sizeof line)
            goto bad;
        memcpy(line, p, len);
        line[len] = '\0';
        p += len + (nl != NULL);
        char *tab = strchr(line, '\t');
        if (!seen_header) {
            if (strcmp(line, "ringshard-ring 1") != 0)
                goto bad;
            seen_header = 1;
            continue;
        }
        if (!tab)
            goto bad;
        *tab = '\0';
        const char *key = line, *val = tab + 1;
        if (!strcmp(key, "scheme")) {
            int s = rs_scheme_by_name(val);
            if (s < 0)
                goto bad;
            rs_ring_opts_default(o, (rs_scheme_id)s);
        } else if (!strcmp(key, "hash")) {
            const rs_hash_info *h = rs_hash_by_name(val);
            if (!h)
                goto bad;
            o->hash = h->id;
        } else if (!strcmp(key, "seed")) {
            o->seed = strtoull(val, NULL, 10);
        } else if (!strcmp(key, "sign")) {
            o->clear_sign = !strcmp(val, "clear");
        } else if (!strcmp(key, "order")) {
            o->order = !strcmp(val, "signed") ? RS_ORDER_SIGNED : RS_ORDER_UNSIGNED;
        } else if (!strcmp(key, "vnodes")) {
            o->vnodes = (uint32_t)strtoul(val, NULL, 10);
        } else if (!strcmp(key, "label")) {
            if (strlen(val) >= RS_LABEL_MAX)
                goto bad;
            strcpy(o->label, val);
        } else if (!strcmp(key, "compat")) {
            int c = rs_compat_by_name(val);
            if (c < 0 || o->scheme != RS_SCHEME_KETAMA)
                goto bad;
            o->compat = (rs_compat_id)c;
        } else if (!strcmp(key, "nodes")) {
            declared = (unsigned)strtoul(val, NULL, 10);
        } else if (!strcmp(key, "node") || !strcmp(key, "alias")) {
            char *t2 = strchr(val, '\t');
            char *t3 = t2 ? strchr(t2 + 1, '\t') : NULL;
            if (!t3)
                goto bad;
            *t2 = *t3 = '\0';
            if (rs_nodes_append_indexed(nodes, &ix, t3 + 1, strtod(val, NULL), "ring description", err) != 0)
                goto fail;
            nodes->down[nodes->count - 1] = !strcmp(t2 + 1, "down");
            nodes->alias[nodes->count - 1] = !strcmp(key, "alias");
        } else {
            goto bad;
        }
    }
    if (!seen_header || nodes->count == 0 || nodes->count != declared)
        goto bad;
    rs_node_index_free(&ix);
    return 0;
bad:
    rs_error_set(err, RS_EXIT_DATA, "ring description: malformed line %u", lineno);
fail:
    rs_node_index_free(&ix);
    rs_nodes_free(nodes);
    return -1;
}
