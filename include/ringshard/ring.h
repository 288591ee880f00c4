/* ringshard/ring.h - placement: which node owns a key.
 *
 * Every scheme maps a key to a POSITION, an unsigned 64-bit ordinal in the
 * scheme's position space [0, space), such that unsigned order of positions
 * is the order the reference implementation compares in. Schemes with arcs
 * (ring, ketama, slots) own positions through sorted POINTS: the owner of a
 * position is the node of the first point >= it, wrapping to the first
 * point. Point i therefore owns the arc (point[i-1], point[i]]; the first
 * point also owns everything after the last point. modulo and jump have no
 * points: the owner is a function of the position.
 *
 * From hash value to position (ring and ketama): v = the hash's Java value
 * (see hash.h), w = the hash width. With clear_sign, the sign bit (bit w-1)
 * is cleared and space = 2^(w-1); else with signed order the sign bit is
 * flipped (Java's signed compare becomes unsigned compare) and space = 2^w;
 * else (unsigned order) space = 2^w. Unsigned hashes (md5_ketama) ignore the
 * order. The default ring: murmur3_128, clear_sign, space 2^63.
 *
 * slots: position = java_hashcode(key) % S with Java's remainder (in
 * (-S, S)) plus S-1, so space = 2S-1; the points are the remaining slots.
 * A position's weight is the number of 32-bit hash codes that land on it,
 * so shares are shares of the 2^32 hash codes. Where seed 001 throws (no
 * slot at or above the position), ringshard wraps to the first slot.
 */
#ifndef RINGSHARD_RING_H
#define RINGSHARD_RING_H

#include <stddef.h>
#include <stdint.h>
#include "ringshard/error.h"
#include "ringshard/hash.h"
#include "ringshard/nodes.h"

/* 128-bit unsigned, for exact weights of arcs in a 2^64 space. */
__extension__ typedef unsigned __int128 rs_u128;

/* The one table of placement schemes: id, name, help. */
#define RS_SCHEME_TABLE(X)                                                         \
    X(RING, ring, "consistent-hash ring, V virtual nodes per node (default; seed 004)") \
    X(KETAMA, ketama, "ketama: MD5 of labels, 4 points per digest (seed 003)")       \
    X(SLOTS, slots, "S fixed slots dealt round-robin (seed 001)")                    \
    X(MODULO, modulo, "hash mod N (seed 000's baseline)")                            \
    X(JUMP, jump, "jump consistent hash (Guava Hashing.consistentHash)")

typedef enum {
#define RS_SCHEME_ENUM(id, name, help) RS_SCHEME_##id,
    RS_SCHEME_TABLE(RS_SCHEME_ENUM)
#undef RS_SCHEME_ENUM
    RS_SCHEME__COUNT
} rs_scheme_id;

typedef enum { RS_ORDER_UNSIGNED = 0, RS_ORDER_SIGNED = 1 } rs_order;

#define RS_LABEL_MAX 64

typedef struct {
    rs_scheme_id scheme;
    rs_hash_id hash;        /* the key hash (ring: also the label hash) */
    uint64_t seed;          /* hash seed */
    int clear_sign;         /* clear the hash value's sign bit */
    rs_order order;
    uint32_t vnodes;        /* ring: points per node (V); ketama: points per
                               node, a multiple of 4; slots: S */
    char label[RS_LABEL_MAX]; /* ring/ketama label template: {node} and {i} */
} rs_ring_opts;

/* Fills opts with scheme's defaults:
 *   ring:   murmur3_128, seed 0, clear_sign, V=200, label "{node}&Node{i}"
 *   ketama: md5_ketama, 160 points, label "{node}{i}" (twemproxy: "{node}-{i}")
 *   slots:  java_hashcode, S=1024, signed order
 *   modulo: murmur3_128, clear_sign (owner = floorMod(value, N))
 *   jump:   murmur3_128, sign kept (Guava consistentHash(asLong(), N)) */
void rs_ring_opts_default(rs_ring_opts *opts, rs_scheme_id scheme);

/* Name <-> id of schemes (NULL / -1 when unknown). */
const char *rs_scheme_name(rs_scheme_id id);
int rs_scheme_by_name(const char *name);
const char *rs_scheme_help(rs_scheme_id id);

typedef struct rs_ring rs_ring;

/* Builds a ring. Points of equal position: the one inserted later (node
 * order, then label index) wins, as TreeMap.put; they are counted as
 * collisions. Weights scale a node's point count (ring: round(V*w),
 * ketama: 4*round(P*w/4), at least 1 point or 4); slots, modulo and jump
 * refuse weights other than 1. Returns NULL and fills err on bad options,
 * and (RS_EXIT_INTERRUPTED) when the process's interrupt flag
 * (ringshard/interrupt.h) is raised while the points are made or sorted:
 * a ring of 10^8 points takes seconds, and SIGINT/SIGTERM must not wait. */
rs_ring *rs_ring_build(const rs_ring_opts *opts, const rs_nodes *nodes, rs_error *err);

void rs_ring_free(rs_ring *ring);

/* The bytes rs_ring_build(opts, nodes) needs at its peak (the raw points
 * and the sort's copy: 48 bytes a point), estimated before building it, so
 * that a ring too big for --memory is refused before it is made. */
uint64_t rs_ring_build_bytes(const rs_ring_opts *opts, const rs_nodes *nodes);

/* The bytes a built ring holds (16 a point, the index, the node list). */
uint64_t rs_ring_bytes(const rs_ring *ring);

/* The position of a key (see the top of this file). */
uint64_t rs_ring_position(const rs_ring *ring, const void *key, size_t len);

/* The node index owning position pos. O(1) expected: a table over the top
 * bits of the position narrows the search to about one cache line. */
uint32_t rs_ring_owner(const rs_ring *ring, uint64_t pos);

/* rs_ring_owner(ring, rs_ring_position(ring, key, len)). */
uint32_t rs_ring_locate(const rs_ring *ring, const void *key, size_t len);

/* Prefetch hints for batched lookups, which hide memory latency: issue
 * rs_ring_prefetch_index for a block of positions, then
 * rs_ring_prefetch_point for the same block, then rs_ring_owner. Both are
 * no-ops for schemes without points and never change a result. */
void rs_ring_prefetch_index(const rs_ring *ring, uint64_t pos);
void rs_ring_prefetch_point(const rs_ring *ring, uint64_t pos);

/* Owner by plain binary search over the points (the baseline the
 * benchmark compares the index against; same result as rs_ring_owner). */
uint32_t rs_ring_owner_bsearch(const rs_ring *ring, uint64_t pos);

const rs_ring_opts *rs_ring_get_opts(const rs_ring *ring);
const rs_nodes *rs_ring_nodes(const rs_ring *ring);

/* Size of the position space (up to 2^64). */
rs_u128 rs_ring_space(const rs_ring *ring);

/* 1 for schemes with points and arcs (ring, ketama, slots). */
int rs_ring_has_points(const rs_ring *ring);

/* Number of points (0 without points), and point i's position, node index
 * and label index (ring/ketama: i of the label; slots: the slot number). */
uint32_t rs_ring_npoints(const rs_ring *ring);
uint64_t rs_ring_point_pos(const rs_ring *ring, uint32_t i);
uint32_t rs_ring_point_node(const rs_ring *ring, uint32_t i);
uint32_t rs_ring_point_label(const rs_ring *ring, uint32_t i);

/* Index of the point owning pos (UINT32_MAX without points). */
uint32_t rs_ring_point_at(const rs_ring *ring, uint64_t pos);

/* Points that lost a collision at build time. */
uint32_t rs_ring_collisions(const rs_ring *ring);

/* Weight (number of hash values) of the positions [lo, hi] (inclusive,
 * lo <= hi < space): hi - lo + 1 except for slots. */
rs_u128 rs_ring_weight(const rs_ring *ring, uint64_t lo, uint64_t hi);

/* Total weight of the space: rs_ring_weight(0, space-1); equals the space
 * except for slots (2^w hash codes over 2S-1 positions). Shares are owned
 * weight / total weight. */
rs_u128 rs_ring_total_weight(const rs_ring *ring);

/* Each node's exact owned weight into owned[0..nodes); for modulo and jump
 * the expected weight (space / N, the remainder spread) - see
 * rs_ring_shares_exact. Returns 0, -1 out of memory. */
int rs_ring_shares(const rs_ring *ring, rs_u128 *owned);

/* 1 if rs_ring_shares is exact for this scheme (ring, ketama, slots, modulo). */
int rs_ring_shares_exact(const rs_ring *ring);

/* Writes the label of point i ("{node}&Node{i}" expanded) into buf;
 * returns its length (slots: "slot<N>"). */
size_t rs_ring_point_label_text(const rs_ring *ring, uint32_t i, char *buf, size_t cap);

/* The canonical description: a text naming the scheme, hash, seed, sign
 * and order rules, label template, V, and every node with its weight, one
 * per line (format in README, "Ring descriptions"). Identical rings have
 * identical descriptions. */
const char *rs_ring_description(const rs_ring *ring);

/* The fingerprint: MurmurHash3_x64_128 (seed 0) of the description, as 32
 * lowercase hex digits of the 16 digest bytes (h1 little-endian, then h2
 * little-endian). */
const char *rs_ring_fingerprint(const rs_ring *ring);

/* Parses a description back into opts and nodes (for manifests). */
int rs_ring_parse_description(const char *text, rs_ring_opts *opts, rs_nodes *nodes,
                              rs_error *err);

/* Guava's Hashing.consistentHash(input, buckets): jump consistent hash with
 * Guava's generator; buckets >= 1. */
int32_t rs_jump_consistent_hash(uint64_t input, int32_t buckets);

/* Formats a u128 in decimal into buf (>= 40 bytes); returns buf. */
char *rs_u128_str(rs_u128 v, char *buf);

#endif
