/* Internal: the ring object and the interface every placement scheme
 * implements (one file per scheme: scheme_<name>.c). */
#ifndef RS_RING_IMPL_H
#define RS_RING_IMPL_H
#include "ringshard/ring.h"

/* A point before sorting; seq is the insertion order, which decides who
 * wins a collision (the later one, as TreeMap.put; the first one when
 * rs_ring.keep_first). */
typedef struct {
    uint64_t pos;
    uint64_t seq;
    uint32_t node;
    uint32_t label;
} rs_raw_point;

/* The lookup table over the top bits of a position. Most slots hold no
 * point (a ring of 200,000 points has 524,288 slots): their positions all
 * belong to the next point, whose node `owner` gives in the slot's one
 * cache line. A slot with points says RS_SLOT_SEARCH, and the search
 * starts at `first`. */
#define RS_SLOT_SEARCH UINT32_MAX
typedef struct {
    uint32_t first;      /* the first point with pos >> slot_shift >= the slot's number */
    uint32_t owner;      /* the node of every position in the slot, or RS_SLOT_SEARCH */
} rs_ring_slot;

typedef struct rs_scheme_ops {
    /* Validates r->opts against the scheme; may set scheme state. */
    int (*check)(rs_ring *r, rs_error *err);
    /* The number of points `points` will emit, before it runs (for the
     * memory estimate; NULL: no points). */
    size_t (*count)(const rs_ring *r);
    /* Emits the points in insertion order (NULL: no points). */
    int (*points)(rs_ring *r, rs_raw_point **out, size_t *n, rs_error *err);
    uint64_t (*position)(const rs_ring *r, const void *key, size_t len);
    /* Owner of a position for schemes without points. */
    uint32_t (*owner)(const rs_ring *r, uint64_t pos);
    /* Weight of positions [lo, hi] (NULL: hi - lo + 1). */
    rs_u128 (*weight)(const rs_ring *r, uint64_t lo, uint64_t hi);
    /* Shares for schemes without points. */
    int (*shares)(const rs_ring *r, rs_u128 *owned);
    int shares_exact;
    /* Label text of point i (NULL: expand the template). */
    size_t (*label_text)(const rs_ring *r, uint32_t i, char *buf, size_t cap);
} rs_scheme_ops;

struct rs_ring {
    rs_ring_opts opts;
    rs_nodes nodes;
    const rs_scheme_ops *ops;
    rs_hash_fn hash;
    unsigned hash_bits;
    int hash_signed;

    /* value -> position: pos = ((uint64_t)v ^ xor_mask) & and_mask */
    uint64_t xor_mask, and_mask;
    rs_u128 space;
    unsigned space_bits; /* ceil(log2(space)) */

    uint32_t npoints;
    uint64_t *pos;
    uint32_t *node;
    uint32_t *label;
    uint32_t collisions;
    int keep_first;      /* collisions keep the first point (presets) */

    rs_ring_slot *slot;  /* [nslots], a slot per value of pos >> slot_shift */
    uint64_t nslots;
    unsigned slot_shift;

    uint32_t live;       /* nodes not down */
    uint32_t *live_map;  /* modulo/jump: bucket -> node index */

    rs_u128 *prefix;     /* slots: prefix[k] = weight of positions [0, k) */

    char *description;
    char fingerprint[33];
};

/* Called by the point loops every RS_RING_POLL points: a big ring takes
 * seconds to build, and SIGINT/SIGTERM must stop it then, not once it is
 * built. Returns 0, or -1 with RS_EXIT_INTERRUPTED in err if the process's
 * interrupt flag (util/interrupt) is raised. */
#define RS_RING_POLL 65536
int rs_ring_check_interrupt(rs_error *err);

/* The ordinal transform shared by the hashed schemes. */
static inline uint64_t rs_value_pos(const rs_ring *r, int64_t v)
{
    return ((uint64_t)v ^ r->xor_mask) & r->and_mask;
}

/* Expands r->opts.label for node `node` and index i into buf (NUL-terminated).
 * Returns the length. */
size_t rs_label_expand(const rs_ring *r, uint32_t node, uint32_t i, char *buf, size_t cap);

#define RS_SCHEME_DECL(id, name, help) extern const rs_scheme_ops rs_scheme_##name;
RS_SCHEME_TABLE(RS_SCHEME_DECL)
#undef RS_SCHEME_DECL

#endif
