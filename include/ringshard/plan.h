/* ringshard/plan.h - the migration planner: what moves where when a node
 * set changes.
 *
 * rs_plan_diff compares two rings built with the same position function
 * (scheme, hash, seed, sign and order; slots: the same S) and computes:
 *
 *  - for schemes with arcs (ring, ketama, slots), the EXACT set of arcs of
 *    the position space whose owner changes, by merging the two sorted
 *    point sets (linear in the points, no sampling). Between two consecutive
 *    points of the union neither owner can change, so every elementary
 *    interval has one (old owner, new owner); adjacent intervals with the
 *    same pair are coalesced. The wrap-around arc (after the last point of
 *    the union and up to the first) appears as two arcs: one at the end of
 *    the space and one starting at position 0.
 *  - for modulo, the exact moved weight by residues: a value v stays iff
 *    the node named like old_live[v mod N] is new_live[v mod M]; by the
 *    Chinese remainder theorem every residue pair (a, b) with a = b mod
 *    gcd(N, M) holds exactly the values v = c mod lcm(N, M), counted over
 *    the hash's domain.
 *  - for jump, the EXPECTED moved weight: going from N to M > N buckets a
 *    key keeps its bucket with probability N/M and otherwise lands
 *    uniformly on [N, M), its old bucket uniform on [0, N) (and the mirror
 *    image for M < N); buckets are matched to nodes through the live lists.
 *
 * Nodes are matched across the rings by NAME (indexes differ). A key whose
 * owners carry the same name does not move. */
#ifndef RINGSHARD_PLAN_H
#define RINGSHARD_PLAN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "ringshard/error.h"
#include "ringshard/ring.h"

#define RS_PLAN_NONE UINT32_MAX        /* no node of that name on the other side */
#define RS_PLAN_STAY UINT32_MAX        /* rs_plan_key_pair: the key does not move */
#define RS_PLAN_UNKNOWN (UINT32_MAX - 1) /* rs_plan_key_pair: a pair not enumerated */

typedef enum {
    RS_PLAN_EXACT_ARCS = 0,   /* ring, ketama, slots: merged point sets */
    RS_PLAN_EXACT_RESIDUES,   /* modulo: counted residues */
    RS_PLAN_EXPECTED          /* jump: expectation over uniform hash values */
} rs_plan_method;

/* Which consistency property applies to the change. */
typedef enum {
    RS_PLAN_CHECK_NONE = 0,   /* nothing changed */
    RS_PLAN_CHECK_ADD,        /* only nodes added: every move must go to an added node */
    RS_PLAN_CHECK_REMOVE,     /* only nodes removed: every move must come from a removed node */
    RS_PLAN_CHECK_MIXED       /* anything else: every move must touch a changed node
                                 (added, removed or reweighted) */
} rs_plan_check;

typedef struct {
    uint64_t start;    /* first position of the arc */
    uint64_t last;     /* last position (inclusive): the arc is [start, last + 1) */
    uint32_t from;     /* owner's index in the old ring's node list */
    uint32_t to;       /* owner's index in the new ring's node list */
    uint32_t pair;     /* index into rs_plan.pairs */
    rs_u128 weight;    /* hash values in the arc (rs_ring_weight) */
} rs_plan_arc;

typedef struct {
    uint32_t from, to; /* node indexes in the old / new ring */
    rs_u128 weight;    /* hash values moving from -> to (jump: expected, rounded) */
    double share;      /* weight / total weight (jump: the expectation itself) */
    uint64_t arcs;     /* arcs of the pair (0 without arcs) */
    int violation;     /* 1 if the move breaks the change's consistency property */
} rs_plan_pair;

typedef struct {
    const rs_ring *old_ring, *new_ring;
    rs_plan_method method;
    rs_u128 total;             /* total weight of the space */
    rs_u128 moved;             /* weight that changes owner (jump: expected) */
    double moved_share;        /* moved / total */
    double ideal_share;        /* rs_plan_ideal_share */
    rs_u128 floor;             /* sum over names of max(0, old owned - new owned): the
                                  least any placement could move between these two
                                  rings' exact shares; moved - floor is excess churn
                                  (jump: from expected shares) */
    double floor_share;        /* floor / total */

    size_t narcs;
    rs_plan_arc *arcs;         /* ascending by start; empty without arcs */
    size_t npairs;
    rs_plan_pair *pairs;       /* ascending by (from, to) index */
    int pairs_complete;        /* 0: too many (from, to) pairs to list (modulo,
                                  jump with huge N*M); totals are still exact */

    uint32_t *old_to_new;      /* old index -> new index of the same name, or RS_PLAN_NONE */
    uint32_t *new_to_old;

    /* the change, by name: up in one ring and absent or down in the other */
    uint32_t nadded, nremoved, nreweighted;
    uint32_t *added;           /* new-ring indexes */
    uint32_t *removed;         /* old-ring indexes */
    uint32_t *reweighted;      /* old-ring indexes (up on both sides, weight differs) */

    /* the consistency property that applies, and the pairs that break it */
    rs_plan_check check;
    size_t nviolations;
    rs_u128 violation_weight;

    /* balance: max/mean of the up nodes' shares (jump: expected, so 1) */
    double balance_old, balance_new;
    int shares_exact;

    /* internal: (from, to) -> pair lookup */
    uint64_t *table_keys;
    uint32_t *table_vals;
    uint64_t table_mask;
} rs_plan;

/* Largest number of pairs rs_plan_diff lists for modulo and jump. */
#define RS_PLAN_MAX_PAIRS (1u << 24)

/* Computes the plan from old_ring to new_ring (both must outlive plan).
 * Refuses (RS_EXIT_USAGE) rings whose positions are not comparable.
 * Returns 0, or -1 with err. */
int rs_plan_diff(const rs_ring *old_ring, const rs_ring *new_ring, rs_plan *plan, rs_error *err);

void rs_plan_free(rs_plan *plan);

/* The pair index of (from, to), or RS_PLAN_NONE. O(1). */
uint32_t rs_plan_pair_find(const rs_plan *plan, uint32_t from, uint32_t to);

/* Where a key goes: its old and new owners (indexes, either may be NULL) and
 * the pair index, RS_PLAN_STAY when the owners have the same name, or
 * RS_PLAN_UNKNOWN when the pair was not enumerated (!pairs_complete).
 * Thread-safe (read-only). */
uint32_t rs_plan_key_pair(const rs_plan *plan, const void *key, size_t len, uint32_t *old_owner,
                          uint32_t *new_owner);

/* The least share of the hash space any placement could move for this
 * change: with ideal (weight-proportional) shares s_old(n) = w_old(n) /
 * sum w_old and s_new(n) likewise (0 for a node absent or down),
 * sum over names n of max(0, s_old(n) - s_new(n)). Adding k equal nodes to
 * N gives k/(N+k); removing k of N gives k/N. */
double rs_plan_ideal_share(const rs_nodes *old_nodes, const rs_nodes *new_nodes);

/* Matches two node lists by name: a_to_b[i] = the index in b of the name
 * of a's node i (down or not), or RS_PLAN_NONE; b_to_a (may be NULL)
 * likewise. Names are unique within a list. Returns 0, or -1 when out of
 * memory. */
int rs_plan_match_names(const rs_nodes *a, const rs_nodes *b, uint32_t *a_to_b, uint32_t *b_to_a);

/* The arc containing position pos (index into plan->arcs), or -1 if pos
 * does not move. Binary search. */
int64_t rs_plan_arc_at(const rs_plan *plan, uint64_t pos);

/* Groups n moves of bytes[i] bytes into waves of at most cap bytes each
 * (a move larger than cap gets a wave of its own): moves are taken in
 * order of bytes (ascending if largest_first == 0, else descending; ties by
 * index) and a new wave starts when the next move would overflow the
 * current one. Writes 1-based wave numbers into wave[i] and returns the
 * number of waves. Moves of zero bytes get wave 0. */
uint32_t rs_plan_waves(const uint64_t *bytes, size_t n, uint64_t cap, int largest_first, uint32_t *wave);

/* "exact-arcs", "exact-residues", "expected". */
const char *rs_plan_method_name(rs_plan_method m);

/* ---------------------------------------------------------------- with data */

/* A plan counted on data (the plan job, ringshard/job_plan.h): the rows
 * and bytes of every pair. Arrays are malloc'd and owned by whoever owns
 * the struct (rs_plan_job_result_free frees the job's). */
typedef struct {
    int have;                  /* data was read */
    uint64_t rows, bytes;      /* every row read (bytes: row + LF) */
    uint64_t rejected;         /* rows rejected by --on-bad-row skip or quarantine */
    uint64_t moved_rows, moved_bytes;
    uint64_t *keys, *bytes_of; /* per pair; [npairs] counts the rows that stay */
    uint64_t *mismatch;        /* per input: rows in a bucket their old ring does not assign */
    uint64_t mismatches;
    uint32_t *wave;            /* per pair, with --batch-bytes; else NULL */
    uint32_t nwaves;
    size_t ninputs;
    const char *const *inputs;
    const char **input_labels; /* --from-buckets: file names */
    const size_t *input_files; /* --from-buckets: input -> index in the manifest's files */
    const char **input_nodes;  /* --from-buckets: each file's node */
    double seconds;
    int emitted;               /* the moved rows were published (--emit) */
} rs_plan_data;

/* What the plan JSON (docs/plan.md) says beyond the plan and its data. */
typedef struct {
    const char *source;        /* the data's: "buckets" or "inputs" */
    const char *emit;          /* the --emit directory (named when data->emitted), or NULL */
    uint64_t batch_bytes;      /* --batch-bytes, 0 without */
    int largest_first;         /* wave order */
    int arcs;                  /* list every moving arc (--json-arcs) */
} rs_plan_json_opts;

/* Writes the plan as JSON (schema "ringshard-plan" version 1, docs/plan.md)
 * to f, with its data when d is non-NULL and d->have. Returns
 * rs_json_finish's result: 0, or non-zero when a write failed (errno
 * tells). f stays open. */
int rs_plan_json_write(FILE *f, const rs_plan *p, const rs_plan_data *d, const rs_plan_json_opts *o);

/* Writes every moving arc to f as TSV: a header line "start end from to
 * weight share", then one line per arc (end exclusive; names with the
 * vectors' escapes; share with 17 significant digits). Write errors are
 * left in f's error flag. */
void rs_plan_arcs_write(FILE *f, const rs_plan *p);

/* Writes every (from, to) pair to f as CSV: "from,to,weight,share,arcs,
 * keys,bytes,wave,violation", keys and bytes empty without data (d NULL or
 * !d->have), wave empty without waves. Write errors are left in f's error
 * flag. */
void rs_plan_pairs_write(FILE *f, const rs_plan *p, const rs_plan_data *d);

/* The change's kind in the JSON: "add", "remove", "mixed", "none". */
const char *rs_plan_check_name(rs_plan_check c);

/* The consistency property of the change in words ("every move goes to an
 * added node"...), for the summary, the JSON and the report. */
const char *rs_plan_check_property(rs_plan_check c);

/* Nodes of the list that are up. */
uint32_t rs_plan_up_count(const rs_nodes *n);

/* The ideal's rule in words into buf[cap], e.g. "k/(N+k) = 10/1010". */
void rs_plan_ideal_rule(const rs_plan *p, char *buf, size_t cap);

#endif
