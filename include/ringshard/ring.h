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
 * so shares are shares of the 2^32 hash codes. Where the Java slots code
 * throws (no slot at or above the position), ringshard wraps to the first
 * slot.
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
    X(RING, ring, "consistent-hash ring, V virtual nodes per node (default; Guava's)") \
    X(KETAMA, ketama, "ketama: MD5 of labels, 4 points per digest (libketama)")      \
    X(SLOTS, slots, "S fixed slots dealt round-robin (Java hashCode slots)")         \
    X(MODULO, modulo, "hash mod N (the FNV1_32 ring's baseline)")                    \
    X(JUMP, jump, "jump consistent hash (Guava Hashing.consistentHash)")

typedef enum {
#define RS_SCHEME_ENUM(id, name, help) RS_SCHEME_##id,
    RS_SCHEME_TABLE(RS_SCHEME_ENUM)
#undef RS_SCHEME_ENUM
    RS_SCHEME__COUNT
} rs_scheme_id;

typedef enum { RS_ORDER_UNSIGNED = 0, RS_ORDER_SIGNED = 1 } rs_order;

/* The one table of client presets (--compat): ketama rings exactly as a
 * memcached client builds them. Columns: id, name, label format, point-count
 * arithmetic, collision rule, help. Label formats (i from 0; a node name
 * "host:port" or "host", whose port is the digits after its last ':', 11211
 * when absent):
 *   FULL       "{name}-{i}", the name as given
 *   NODEFAULT  "host-{i}" when the port is 11211, else "host:port-{i}"
 *   SLASH      "/host:port-{i}" (port 11211 written out)
 * An alias (rs_nodes.alias: a twemproxy server NAME) is "{name}-{i}" under
 * any of them; under the libmemcached presets a name starting with '/' is
 * a unix socket, host the whole path, port 0; twemproxy's labels are cut
 * to 272 bytes.
 * Point counts (4 points a digest; n live nodes, w a node's weight, t the
 * live nodes' total weight), each in its client's float/double operations:
 *   LIBKETAMA  floorf(((float)w/(float)t) * 40.0 * (float)n) digests
 *   MEMCACHED  floor((float)(pct*160/4*(float)n + 1e-10F)) digests, all float
 *   TWEMPROXY  floorf((float)(pct*160/4*(float)n + 1e-10)): the add in double
 *   SPY        40 digests when every weight is 1, else TWEMPROXY's formula
 *   HASHRING   Math.floor(w/t*40*n) in double, t summed (and the points
 *              made) in JavaScript's Object.keys order of the names:
 *              array indices first, by value, then node order
 * Collisions (equal points of different labels): FIRST keeps the point of
 * the earlier node (then the earlier label), as a stable sort and a search
 * for the first point >= the key do; LAST keeps the later one (TreeMap.put);
 * NAMEORDER keeps the point of the node whose label prefix ("host" or
 * "host:port") sorts first, shorter first, then by bytes: twemproxy sorts
 * its servers so (conf_validate_server, to find duplicates) before it
 * builds the continuum.
 * Every preset hashes keys with md5_ketama; twemproxy hashes the empty key
 * to 0. Every preset except hashring wants integer weights. */
#define RS_COMPAT_TABLE(X)                                                                   \
    X(LIBKETAMA, "libketama", FULL, LIBKETAMA, FIRST, "libketama (RJ/ketama): host:port-i, floorf(pct*40*n)") \
    X(LIBMEMCACHED, "libmemcached", NODEFAULT, MEMCACHED, FIRST,                             \
      "libmemcached KETAMA_WEIGHTED: host-i (port 11211 dropped), float point counts")     \
    X(LIBMEMCACHED_SPY, "libmemcached-spy", SLASH, MEMCACHED, FIRST,                         \
      "libmemcached KETAMA_WEIGHTED + DISTRIBUTION_CONSISTENT_KETAMA_SPY: /host:port-i")   \
    X(TWEMPROXY, "twemproxy", NODEFAULT, TWEMPROXY, NAMEORDER,                                   \
      "twemproxy (nutcracker) distribution ketama, hash md5: host-i, empty key -> 0")      \
    X(SPYMEMCACHED, "spymemcached", FULL, SPY, LAST,                                         \
      "spymemcached KetamaNodeLocator, KETAMA_HASH, format SPYMEMCACHED: host:port-i")     \
    X(HASHRING, "hashring", FULL, HASHRING, FIRST, "npm hashring: host:port-i, Math.floor(pct*40*n)")

typedef enum {
    RS_COMPAT_NONE = 0,
#define RS_COMPAT_ENUM(id, name, label, count, keep, help) RS_COMPAT_##id,
    RS_COMPAT_TABLE(RS_COMPAT_ENUM)
#undef RS_COMPAT_ENUM
    RS_COMPAT__COUNT
} rs_compat_id;

typedef enum { RS_COMPAT_LABEL_FULL, RS_COMPAT_LABEL_NODEFAULT, RS_COMPAT_LABEL_SLASH } rs_compat_label;
typedef enum {
    RS_COMPAT_COUNT_LIBKETAMA, RS_COMPAT_COUNT_MEMCACHED, RS_COMPAT_COUNT_TWEMPROXY,
    RS_COMPAT_COUNT_SPY, RS_COMPAT_COUNT_HASHRING
} rs_compat_count;
typedef enum { RS_COMPAT_KEEP_FIRST, RS_COMPAT_KEEP_LAST, RS_COMPAT_KEEP_NAMEORDER } rs_compat_keep;

typedef struct {
    const char *name; /* the --compat name */
    rs_compat_label label;
    rs_compat_count count;
    rs_compat_keep keep;
    const char *help;
} rs_compat_info;

/* The row of preset id (1 <= id < RS_COMPAT__COUNT). */
const rs_compat_info *rs_compat_get(rs_compat_id id);

/* The preset named `name`, or -1. */
int rs_compat_by_name(const char *name);

/* What a node file may hold under preset id (RS_COMPAT_NONE: the plain
 * rules, all zero): integer weights up to 4294967295 (the clients'
 * uint32_t) for every preset but hashring; names read as host:port
 * (libmemcached, libmemcached-spy, twemproxy), so an IPv6 host without
 * its port is refused; twemproxy's `host:port:weight NAME` server lines. */
void rs_compat_syntax(rs_compat_id id, rs_nodes_syntax *syn);

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
    rs_compat_id compat;    /* ketama only: a client preset (RS_COMPAT_NONE:
                               none); it replaces the label template, the
                               point counts and the collision rule */
} rs_ring_opts;

/* Fills opts with scheme's defaults:
 *   ring:   murmur3_128, seed 0, clear_sign, V=200, label "{node}&Node{i}"
 *   ketama: md5_ketama, 160 points, label "{node}{i}" (twemproxy: "{node}-{i}")
 *   slots:  java_hashcode, S=1024, signed order
 *   modulo: murmur3_128, clear_sign (owner = floorMod(value, N))
 *   jump:   murmur3_128, sign kept (Guava consistentHash(asLong(), N)) */
void rs_ring_opts_default(rs_ring_opts *opts, rs_scheme_id scheme);

/* Sets opts to client preset `compat` (see RS_COMPAT_TABLE): scheme
 * ketama, md5_ketama, 160 points a node (as the description records it),
 * the label template "{node}-{i}" (descriptive only: the preset formats
 * the labels). */
void rs_ring_opts_compat(rs_ring_opts *opts, rs_compat_id compat);

/* Name <-> id of schemes (NULL / -1 when unknown). */
const char *rs_scheme_name(rs_scheme_id id);
int rs_scheme_by_name(const char *name);
const char *rs_scheme_help(rs_scheme_id id);

typedef struct rs_ring rs_ring;

/* Builds a ring. Points of equal position: the one inserted later (node
 * order, then label index) wins, as TreeMap.put (a client preset may keep
 * the first instead); they are counted as collisions. Weights scale a node's point count (ring: round(V*w),
 * ketama: 4*round(P*w/4), at least 1 point or 4); slots, modulo and jump
 * refuse weights other than 1. Returns NULL and fills err on bad options,
 * and (RS_EXIT_INTERRUPTED) when the process's interrupt flag
 * (ringshard/interrupt.h) is raised while the points are made or sorted:
 * a ring of 10^8 points takes seconds, and SIGINT/SIGTERM must not wait. */
rs_ring *rs_ring_build(const rs_ring_opts *opts, const rs_nodes *nodes, rs_error *err);

void rs_ring_free(rs_ring *ring);

/* A ring as a user describes it (the command line's ring options): each
 * field the text given, NULL when not given; defaults follow from the
 * scheme once it is known, so the fields may be given in any order. down
 * holds ndown comma-separated lists of nodes that are listed but down; the
 * lists add up. */
typedef struct {
    const char *scheme, *hash, *seed, *nodes, *nodes_file, *vnodes, *label, *sign, *order, *compat;
    const char *const *down;
    int ndown;
} rs_ring_spec;

/* The ranges of a spec's numbers (the options' rows say the same). */
#define RS_RING_NODES_MAX 10000000
#define RS_RING_VNODES_MAX 100000000

/* Resolves spec into opts and the node list (default: the ring scheme on
 * 1000 nodes named "0".."999"); messages name the fields as the options
 * ("--seed"). Returns 0, or -1 with err: RS_EXIT_USAGE for a bad or
 * conflicting value (an unknown scheme, hash or client; --compat with
 * --scheme, --hash, --seed, --vnodes, --label, --sign or --order; --nodes
 * with --nodes-file; a number out of range; a label of RS_LABEL_MAX bytes
 * or more; a node in down that is not listed), or rs_nodes_load's for the
 * node file.
 * On success the caller frees nodes (rs_nodes_free). */
int rs_ring_spec_resolve(const rs_ring_spec *spec, rs_ring_opts *opts, rs_nodes *nodes, rs_error *err);

/* 1 if any field of spec was given, else 0. */
int rs_ring_spec_given(const rs_ring_spec *spec);

/* The ring of a spec with no field given: the ring scheme on 1000 nodes x
 * 200 vnodes (the Java/Guava placement). NULL with err when out of memory. */
rs_ring *rs_ring_build_default(rs_error *err);

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

/* The same for blocks, in three steps to be spread over time (a caller
 * that has other work between them hides the ring's memory latency):
 * rs_ring_positions hashes keys[0..n) (lengths lens[]) into pos[] and
 * prefetches their index slots; rs_ring_prefetch_points, once the slots
 * have arrived, reads them into hint[0..n) and prefetches the points of
 * those that need a search; rs_ring_owners, once those have arrived,
 * gives the owners from pos[] and hint[] (rs_ring_owner of each). */
void rs_ring_positions(const rs_ring *ring, const char *const *keys, const size_t *lens, size_t n, uint64_t *pos);
void rs_ring_prefetch_points(const rs_ring *ring, const uint64_t *pos, size_t n, uint64_t *hint);
void rs_ring_owners(const rs_ring *ring, const uint64_t *pos, const uint64_t *hint, size_t n, uint32_t *own);

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
 * per line (format in docs/rings.md, "Ring descriptions
 * and fingerprints"). Identical rings have
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
