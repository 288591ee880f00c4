/* ringshard/stats.h - balance of per-node counts against theory, capacity
 * (bounded-load) what-ifs, movement between two rings, synthetic keys.
 * Used by `stats`, `simulate` and `plan`. The formulas are derived in
 * docs/stats.md; the short version:
 *
 *   K keys, N up nodes, exact shares p_i (rs_ring_shares / total weight).
 *   count_i ~ Binomial(K, p_i): expected K p_i, sd sqrt(K p_i (1 - p_i)).
 *   sd of the counts around their mean K/N (population sd over up nodes):
 *     observed       sqrt(1/N sum (c_i - K/N)^2)
 *     this ring      sqrt(1/N sum [K p_i (1-p_i) + (K p_i - K/N)^2])   (exact expectation)
 *     equal shares   sqrt(K/N (1 - 1/N))                                (pure sampling noise)
 *     random V-vnode ring: shares p ~ Beta(V, (N-1)V), so
 *                    sqrt(K/N (1 - 1/N) + K (K-1) (N-1) / (N^2 (N V + 1)))
 *                    whose relative part sqrt((N-1)/(N V + 1)) ~ 1/sqrt(V).
 *   A node is flagged when c_i lies outside K p_i +- z sqrt(K p_i (1 - p_i)).
 */
#ifndef RINGSHARD_STATS_H
#define RINGSHARD_STATS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "ringshard/error.h"
#include "ringshard/ring.h"

/* ---- synthetic keys ---------------------------------------------------- */

typedef enum { RS_KEYS_SEQ = 0, RS_KEYS_RANDOM = 1 } rs_key_pattern;

#define RS_SYNTH_KEY_MAX 32

/* splitmix64 (Steele, Lea, Flood 2014): the output for state s + n*gamma,
 * gamma = 0x9e3779b97f4a7c15, i.e. output n of the stream seeded with s. */
uint64_t rs_splitmix64_at(uint64_t seed, uint64_t n);

/* Key number i (0-based) of a pattern into buf (>= RS_SYNTH_KEY_MAX + 1
 * bytes, NUL-terminated); returns its length.
 *   seq:    the decimal string of i ("0", "1", ..., as in the
 *           FNV1_32 ring's experiment)
 *   random: 32 lowercase hex digits: outputs 2i and 2i+1 of the splitmix64
 *           stream seeded with `seed`, each as 16 hex digits, most
 *           significant first (random access, so any thread count gives
 *           the same keys). */
size_t rs_synth_key(rs_key_pattern pat, uint64_t seed, uint64_t i, char *buf);

/* ---- balance against theory -------------------------------------------- */

typedef struct {
    uint64_t count;       /* observed */
    uint32_t points;      /* points of the node on the ring (0 without points) */
    double share;         /* exact share p_i of the hash space */
    double expected;      /* K p_i */
    double expected_sd;   /* sqrt(K p_i (1 - p_i)) */
    double z;             /* (count - expected) / expected_sd; +-INFINITY if sd is 0 */
    int flag;             /* +1 above the band, -1 below, 0 inside; 0 for down nodes */
    int down;             /* listed but down (excluded from the statistics) */
} rs_node_stat;

typedef struct {
    uint32_t nodes;       /* up nodes N */
    uint64_t total;       /* K = sum of the counts of up nodes */
    uint64_t stray;       /* counts on down nodes (should be 0) */
    double mean;          /* K / N */
    uint64_t min, max;
    uint32_t argmin, argmax;   /* node indices */
    double sd, rel_sd;         /* observed population sd, and sd / mean */
    double max_mean, min_mean;
    double sd_ring;            /* expected sd given this ring's exact shares */
    double sd_equal;           /* expected sd with equal shares (sampling noise only) */
    double sd_theory;          /* expected sd for a random ring of this V; NAN when n/a */
    double share_rel_sd;       /* relative sd of the exact shares among up nodes */
    double share_rel_sd_theory;/* sqrt((N-1)/(N V + 1)) (~1/sqrt(V)); 0 for modulo/jump; NAN n/a */
    uint32_t vnodes;           /* V used by the theory (0: n/a) */
    int shares_exact;          /* rs_ring_shares_exact */
    double z;                  /* band half-width in sds */
    uint32_t above, below;     /* nodes flagged */
    double flag_chance;        /* nodes expected outside the band by chance: N * 2 Phi(-z) */
} rs_balance;

/* Computes the balance of counts[0..nodes) (indexed like rs_ring_nodes)
 * on ring. per_node may be NULL; else it gets one entry per listed node.
 * Returns 0, or -1 (out of memory) with err. */
int rs_balance_compute(const rs_ring *ring, const uint64_t *counts, double z, rs_node_stat *per_node,
                       rs_balance *b, rs_error *err);

/* The standard normal upper tail Phi(-z) * 2 (two-sided). */
double rs_two_sided_tail(double z);

/* ---- capacity what-if: consistent hashing with bounded loads ------------ */

/* Mirrokni, Thorup, Zadimoghaddam (2018): every up node i has capacity
 * c_i = ceil(F K w_i / W) (= ceil(F K / N) with equal weights); keys are
 * placed one by one in the given order: to the owner if it has room, else
 * clockwise to the next point whose node has room. Schemes without points
 * (modulo, jump) walk to the next up node in node order (linear probing). */
typedef struct {
    double factor;        /* F >= 1 */
    uint64_t capacity;    /* c_i of the first up node (all equal without weights) */
    double limit;         /* F * K / N: "over" means count > limit (weighted: per node) */
    uint32_t over;        /* nodes whose count exceeds F times their fair share */
    uint64_t excess;      /* sum of max(0, count_i - c_i): a lower bound of spilled */
    int simulated;        /* 1: the fields below were measured by placing the keys */
    uint64_t spilled;     /* keys placed away from their owner */
    uint64_t max_after;   /* largest load after placement */
    uint64_t longest_walk;/* most points (or nodes) walked past the owner's */
    uint64_t full_nodes;  /* nodes at capacity after placement */
} rs_bounded;

/* The capacity of every node for K keys (capacity[0..nodes)); 0 for down nodes. */
int rs_bounded_capacities(const rs_ring *ring, uint64_t total, double factor, uint64_t *capacity,
                          rs_error *err);

/* Fills over, excess, capacity and limit from counts (no placement). */
int rs_bounded_from_counts(const rs_ring *ring, const uint64_t *counts, double factor, rs_bounded *out,
                           rs_error *err);

/* The unit a key starts its walk at: its owning point (schemes with
 * points), or the rank of its owner among up nodes. */
uint32_t rs_bounded_start(const rs_ring *ring, uint64_t pos);

/* Places nkeys keys whose start units are start[0..nkeys) (in that order)
 * under capacity factor F; fills out (counts given: over, excess too) and,
 * if load is not NULL, each node's load after placement. 0, or -1 with err
 * (RS_EXIT_INTERRUPTED once the stop flag of interrupt.h is raised: it is
 * looked at every 65,536 keys). */
int rs_bounded_place(const rs_ring *ring, const uint32_t *start, uint64_t nkeys, const uint64_t *counts,
                     double factor, rs_bounded *out, uint64_t *load, rs_error *err);

/* ---- movement between two rings ---------------------------------------- */

/* map[i] = index in b of a's node i with the same name, or UINT32_MAX if b
 * has no such node (or it is down in b). malloc'd; NULL when out of memory. */
uint32_t *rs_node_map(const rs_ring *a, const rs_ring *b);

/* The ideal (least possible) fraction of keys that must move from a to b:
 * the total variation distance between the weight-proportional shares of
 * the up nodes, 1/2 sum |w_a(x)/W_a - w_b(x)/W_b| over node names x. Adding
 * k equal nodes to N gives k/(N+k); removing k gives k/N. */
double rs_ideal_moved(const rs_ring *a, const rs_ring *b);

/* The exact fraction of the hash values whose owner (by name) differs
 * between a and b, from the two rings' arcs. NAN when it has no closed form
 * (either scheme without points, or different position spaces). */
double rs_moved_share(const rs_ring *a, const rs_ring *b, const uint32_t *map);

/* ---- text output shared by the commands -------------------------------- */

/* The balance block: "name  value  (note)" lines (docs/stats.md). unit is
 * "keys" or "rows". */
void rs_balance_print(FILE *f, const rs_ring *ring, const rs_balance *b, const char *unit);

/* The flagged nodes, up to `limit` of them (largest |z| first). */
void rs_balance_print_flagged(FILE *f, const rs_ring *ring, const rs_node_stat *ns, size_t limit);

/* The per-node TSV table: node points share expected expected_sd count z flag
 * [capacity load_after]. load may be NULL. */
void rs_balance_print_table(FILE *f, const rs_ring *ring, const rs_node_stat *ns, const uint64_t *capacity,
                            const uint64_t *load);

/* The capacity block. */
void rs_bounded_print(FILE *f, const rs_bounded *bl, const char *unit);

/* Writes the per-node report (bar chart + histogram, numbers) as a
 * self-contained SVG or HTML file at path (report.h). title names the run. */
int rs_balance_report(const char *path, int html, const char *title, const rs_ring *ring, const rs_balance *b,
                      const rs_node_stat *ns, const rs_bounded *bl, const char *unit, rs_error *err);

#endif
