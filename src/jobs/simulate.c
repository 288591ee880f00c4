/* The simulate job (ringshard/job_simulate.h): synthetic keys counted per
 * node in parallel (per-thread counters, summed), in blocks whose lookups
 * overlap their cache misses; the bounded-load placement is sequential, in
 * key order. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ringshard/interrupt.h"
#include "ringshard/job_simulate.h"
#include "ringshard/report.h"
#include "ringshard/stats.h"
#include "ringshard/testhook.h"

typedef rs_simulate_ring sim_ring;
typedef rs_simulate_job_opts sim_opts;

static void fail_oom(rs_error *err) { rs_error_set(err, RS_EXIT_IO, "out of memory"); }

/* Appends "<sep><verb> <names>" to what (at *wl of cap), the names cut
 * to a few when there are many. */
static void say_names(char *what, size_t cap, size_t *wl, const char *verb, char *const *names, uint32_t n)
{
    char list[160];   /* three of them fit the result's 512 bytes */
    if (!n || *wl >= cap)
        return;
    rs_node_names_text(list, sizeof list, (const char *const *)names, n < 8 ? n : 8, n);
    *wl += (size_t)snprintf(what + *wl, cap - *wl, "%s%s %s", *wl ? "; " : "", verb, list);
}

/* The base ring's nodes changed by the job's edits (rs_node_edits_apply),
 * the change in words into what. */
static rs_ring *build_changed(const rs_ring *base, const rs_node_edits *edits, char *what, size_t whatcap,
                              rs_error *err)
{
    rs_nodes nodes = {0};
    rs_node_edit_log log = {0};
    rs_node_edits e = *edits;
    /* slots: a removed node is marked down, so that the others keep their
     * slots (the Java hashCode slots scheme's dropBadNode;
     * plan does the same) */
    e.slots = rs_ring_get_opts(base)->scheme == RS_SCHEME_SLOTS;
    if (rs_nodes_copy(&nodes, rs_ring_nodes(base), err) != 0)
        return NULL;
    uint32_t before = 0, after = 0;
    for (uint32_t i = 0; i < nodes.count; i++)
        before += !nodes.down[i];
    if (rs_node_edits_apply(&nodes, rs_ring_nodes(base), &e, &log, err) != 0) {
        rs_node_edit_log_free(&log);
        rs_nodes_free(&nodes);
        return NULL;
    }
    for (uint32_t i = 0; i < nodes.count; i++)
        after += !nodes.down[i];
    size_t wl = 0;
    say_names(what, whatcap, &wl, "remove", log.removed, log.nremoved);
    say_names(what, whatcap, &wl, "reweight", log.reweighted, log.nreweighted);
    say_names(what, whatcap, &wl, "add", log.added, log.nadded);
    if (wl < whatcap)
        snprintf(what + wl, whatcap - wl, " (%u -> %u nodes)", before, after);
    rs_node_edit_log_free(&log);
    rs_ring *r = rs_ring_build(rs_ring_get_opts(base), &nodes, err);
    rs_nodes_free(&nodes);
    return r;
}

#define SIM_BLOCK 32

typedef char sim_key[RS_SYNTH_KEY_MAX + 8];

/* The owners own[0..n) on ring r of a block's n keys, whose positions are
 * pos0 (those on the first ring) when every ring shares them, else
 * computed into pos: the slots of all of them are prefetched, then read
 * into hints (prefetching the points of those that need a search), then
 * the owners found, so that the cache misses of a block overlap. */
static inline void block_owners(const rs_ring *r, int same_pos, const uint64_t *pos0, uint64_t *pos,
                                const sim_key *keys, const size_t *lens, int n, uint32_t *own)
{
    uint64_t hint[SIM_BLOCK];
    if (!same_pos) {
        for (int k = 0; k < n; k++)
            pos[k] = rs_ring_position(r, keys[k], lens[k]);
        pos0 = pos;
    }
    for (int k = 0; k < n; k++)
        rs_ring_prefetch_index(r, pos0[k]);
    rs_ring_prefetch_points(r, pos0, (size_t)n, hint);
    rs_ring_owners(r, pos0, hint, (size_t)n, own);
}

/* One parallel pass over the keys: counts per node of every ring, moved keys. */
static int count_keys(sim_ring *sr, size_t nr, const sim_opts *so, rs_error *err)
{
    int T = so->threads;
    for (size_t s = 0; s < nr; s++) {
        uint32_t n0 = rs_ring_nodes(sr[s].base)->count;
        sr[s].counts = calloc((size_t)T * n0, sizeof(uint64_t));
        if (!sr[s].counts)
            return rs_error_set(err, RS_EXIT_IO, "out of memory");
        if (sr[s].changed) {
            uint32_t n1 = rs_ring_nodes(sr[s].changed)->count;
            sr[s].counts_changed = calloc((size_t)T * n1, sizeof(uint64_t));
            if (!sr[s].counts_changed)
                return rs_error_set(err, RS_EXIT_IO, "out of memory");
        }
    }
    /* one position serves every ring unless slots' S varies across the sweep */
    int same_pos = rs_ring_get_opts(sr[0].base)->scheme != RS_SCHEME_SLOTS || nr == 1;
    uint64_t *moved = calloc(nr, sizeof *moved);
    if (!moved)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    long long K = (long long)so->keys;
    long long nblocks = (K + SIM_BLOCK - 1) / SIM_BLOCK;
#pragma omp parallel num_threads(T)
    {
        int t = omp_get_thread_num();
        uint64_t local_moved[64] = {0};   /* nr <= 64, checked by the caller */
        sim_key keys[SIM_BLOCK];
        size_t lens[SIM_BLOCK];
        uint64_t pos0[SIM_BLOCK], pos[SIM_BLOCK];
        uint32_t own[SIM_BLOCK], own2[SIM_BLOCK];
        /* blocks of keys: hash them all, then look them up with the ring's
         * prefetch hints, so that the cache misses of one block overlap */
#pragma omp for schedule(static, 1024)
        for (long long blk = 0; blk < nblocks; blk++) {
            /* a stop signal (handlers installed when a file is to be
             * published) skips the rest: a billion keys take a minute */
            if (rs_interrupt_pending())
                continue;
            long long i0 = blk * SIM_BLOCK;
            int n = (int)(K - i0 < SIM_BLOCK ? K - i0 : SIM_BLOCK);
            for (int k = 0; k < n; k++) {
                lens[k] = rs_synth_key(so->pattern, so->key_seed, (uint64_t)(i0 + k), keys[k]);
                pos0[k] = rs_ring_position(sr[0].base, keys[k], lens[k]);
            }
            for (size_t s = 0; s < nr; s++) {
                const rs_ring *b = sr[s].base;
                block_owners(b, same_pos, pos0, pos, (const sim_key *)keys, lens, n, own);
                uint64_t *cnt = sr[s].counts + (size_t)t * rs_ring_nodes(b)->count;
                for (int k = 0; k < n; k++)
                    cnt[own[k]]++;
                if (sr[s].changed) {
                    const rs_ring *c = sr[s].changed;
                    block_owners(c, same_pos, pos0, pos, (const sim_key *)keys, lens, n, own2);
                    uint64_t *cc = sr[s].counts_changed + (size_t)t * rs_ring_nodes(c)->count;
                    const uint32_t *map = sr[s].map;
                    uint64_t mv = 0;
                    for (int k = 0; k < n; k++) {
                        cc[own2[k]]++;
                        mv += map[own[k]] != own2[k];
                    }
                    local_moved[s] += mv;
                }
            }
        }
#pragma omp critical
        for (size_t s = 0; s < nr; s++)
            moved[s] += local_moved[s];
    }
    if (rs_interrupt_pending()) {
        free(moved);
        return rs_error_set(err, RS_EXIT_INTERRUPTED, "interrupted");
    }
    for (size_t s = 0; s < nr; s++) {
        uint32_t n0 = rs_ring_nodes(sr[s].base)->count;
        for (int t = 1; t < T; t++)
            for (uint32_t i = 0; i < n0; i++)
                sr[s].counts[i] += sr[s].counts[(size_t)t * n0 + i];
        if (sr[s].changed) {
            uint32_t n1 = rs_ring_nodes(sr[s].changed)->count;
            for (int t = 1; t < T; t++)
                for (uint32_t i = 0; i < n1; i++)
                    sr[s].counts_changed[i] += sr[s].counts_changed[(size_t)t * n1 + i];
        }
        sr[s].moved = moved[s];
    }
    free(moved);
    return 0;
}

/* Bounded loads on the base ring: start points in parallel, placement in key order. */
static int bounded(sim_ring *sr, const sim_opts *so, double factor, uint32_t *start, rs_error *err)
{
    long long K = (long long)so->keys;
    const rs_ring *b = sr->base;
#pragma omp parallel num_threads(so->threads)
    {
        char key[RS_SYNTH_KEY_MAX + 8];
#pragma omp for schedule(static, 65536)
        for (long long i = 0; i < K; i++) {
            if (rs_interrupt_pending())  /* one load of a flag beside a hash: free */
                continue;
            size_t len = rs_synth_key(so->pattern, so->key_seed, (uint64_t)i, key);
            start[i] = rs_bounded_start(b, rs_ring_position(b, key, len));
        }
    }
    if (rs_interrupt_pending())
        return rs_error_set(err, RS_EXIT_INTERRUPTED, "interrupted");
    uint32_t n = rs_ring_nodes(b)->count;
    sr->capacity = malloc((size_t)n * sizeof *sr->capacity);
    sr->load_after = malloc((size_t)n * sizeof *sr->load_after);
    if (!sr->capacity || !sr->load_after)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    if (rs_bounded_capacities(b, so->keys, factor, sr->capacity, err) != 0)
        return -1;
    return rs_bounded_place(b, start, so->keys, sr->counts, factor, &sr->bounded, sr->load_after, err);
}

int rs_simulate_sweep_picture(const char *path, int html, const rs_simulate_job_opts *so,
                              const rs_simulate_job_result *r, const char *title, rs_error *err)
{
    const sim_ring *sr = r->rings;
    size_t nr = r->nrings;
    double *x = calloc(nr, sizeof *x), *obs = calloc(nr, sizeof *obs), *th = calloc(nr, sizeof *th);
    double *ring = calloc(nr, sizeof *ring), *mm = calloc(nr, sizeof *mm), *mv = calloc(nr, sizeof *mv);
    if (!x || !obs || !th || !ring || !mm || !mv) {
        free(x); free(obs); free(th); free(ring); free(mm); free(mv);
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    }
    for (size_t s = 0; s < nr; s++) {
        x[s] = sr[s].vnodes;
        obs[s] = sr[s].bal.rel_sd;
        ring[s] = sr[s].bal.sd_ring / sr[s].bal.mean;
        th[s] = sr[s].bal.sd_theory / sr[s].bal.mean;
        mm[s] = sr[s].bal.max_mean - 1;
        mv[s] = sr[s].changed ? (double)sr[s].moved / (double)so->keys : NAN;
    }
    rs_report_series series[5] = {
        {"observed sd / mean", nr, x, obs, 0},
        {"expected for these rings", nr, x, ring, 0},
        {"theory: random ring", nr, x, th, 1},
        {"max/mean - 1", nr, x, mm, 0},
        {"moved fraction", nr, x, mv, 0},
    };
    char sub[256], keys[64], nodes[64];
    const rs_ring_opts *o = rs_ring_get_opts(sr[0].base);
    snprintf(sub, sizeof sub, "scheme %s, hash %s, %u nodes, %llu %s keys", rs_scheme_name(o->scheme),
             rs_hash_get(o->hash)->name, sr[0].bal.nodes, (unsigned long long)so->keys,
             so->pattern == RS_KEYS_SEQ ? "seq" : "random");
    snprintf(keys, sizeof keys, "%llu", (unsigned long long)so->keys);
    snprintf(nodes, sizeof nodes, "%u", sr[0].bal.nodes);
    rs_report_fact facts[2] = {{"keys", keys}, {"nodes", nodes}};
    rs_report_lines rl = {
        .title = title, .subtitle = sub, .xlabel = "virtual nodes per node (V)", .ylabel = "relative spread",
        .xlog = 1, .ylog = 1, .nseries = sr[0].changed ? 5 : 4, .series = series, .facts = facts, .nfacts = 2,
    };
    int rc = rs_report_save_lines(path, html, &rl, err);
    free(x); free(obs); free(th); free(ring); free(mm); free(mv);
    return rc;
}

/* Ring s of the run: the base ring (a sweep: with its vnode count) and,
 * with a change, the changed ring, its node map and the ideal and exact
 * moved shares. */
static int build_ring(const sim_opts *so, sim_ring *sr, size_t s, char *what, size_t whatcap, rs_error *err)
{
    int sweep = so->vnodes != NULL;
    const rs_node_edits *e = &so->edits;
    int changing = e->add || e->nadd_names || e->nremove || e->nreweight;
    rs_ring_opts ro = so->ring;
    if (sweep) {
        ro.vnodes = so->vnodes[s];
        sr[s].vnodes = so->vnodes[s];
    }
    sr[s].exact_moved = NAN;
    if (!(sr[s].base = rs_ring_build(&ro, so->nodes, err)))
        return -1;
    if (sweep) {
        rs_scheme_id sch = rs_ring_get_opts(sr[s].base)->scheme;
        if (sch != RS_SCHEME_RING && sch != RS_SCHEME_KETAMA && sch != RS_SCHEME_SLOTS)
            return rs_error_set(err, RS_EXIT_USAGE, "--vnodes: scheme %s has no virtual nodes to sweep",
                                rs_scheme_name(sch));
    }
    if (changing) {
        what[0] = '\0';
        if (!(sr[s].changed = build_changed(sr[s].base, e, what, whatcap, err)))
            return -1;
        if (!(sr[s].map = rs_node_map(sr[s].base, sr[s].changed))) {
            fail_oom(err);
            return -1;
        }
        sr[s].ideal = rs_ideal_moved(sr[s].base, sr[s].changed);
        sr[s].exact_moved = rs_moved_share(sr[s].base, sr[s].changed, sr[s].map);
    }
    return 0;
}

int rs_simulate_job_run(const rs_simulate_job_opts *o, rs_simulate_job_result *r, rs_error *err)
{
    size_t nr = o->vnodes ? o->nvnodes : 1;
    if (nr == 0 || nr > RS_SIMULATE_MAX_SWEEP)
        return rs_error_set(err, RS_EXIT_USAGE, "--vnodes: at most %d values in a sweep", RS_SIMULATE_MAX_SWEEP);
    sim_ring *sr = r->rings = calloc(nr, sizeof *sr);
    if (!sr) {
        fail_oom(err);
        return -1;
    }
    r->nrings = nr;
    for (size_t s = 0; s < nr; s++)
        if (build_ring(o, sr, s, r->what, sizeof r->what, err) != 0)
            return -1;
    rs_test_pause("simulate_keys");
    if (count_keys(sr, nr, o, err) != 0)
        return -1;
    for (size_t s = 0; s < nr; s++) {
        uint32_t n = rs_ring_nodes(sr[s].base)->count;
        if (!(sr[s].ns = malloc((size_t)n * sizeof *sr[s].ns))) {
            fail_oom(err);
            return -1;
        }
        if (rs_balance_compute(sr[s].base, sr[s].counts, o->z, sr[s].ns, &sr[s].bal, err) != 0)
            return -1;
        if (sr[s].changed &&
            rs_balance_compute(sr[s].changed, sr[s].counts_changed, o->z, NULL, &sr[s].bal_changed, err) != 0)
            return -1;
    }
    if (!isnan(o->factor)) {
        /* one start array serves the rings in turn */
        uint32_t *start = malloc((size_t)o->keys * sizeof *start);
        if (!start)
            return rs_error_set(err, RS_EXIT_IO, "out of memory: --capacity-factor needs 4 bytes per key (%llu keys)",
                                (unsigned long long)o->keys);
        rs_test_pause("simulate_bounded");
        for (size_t s = 0; s < nr; s++)
            if (bounded(&sr[s], o, o->factor, start, err) != 0) {
                free(start);
                return -1;
            }
        free(start);
    }
    return 0;
}

void rs_simulate_job_result_free(rs_simulate_job_result *r)
{
    for (size_t s = 0; s < r->nrings; s++) {
        rs_simulate_ring *sr = &r->rings[s];
        void *arrays[] = {sr->map, sr->counts, sr->counts_changed, sr->ns, sr->capacity, sr->load_after};
        rs_ring_free(sr->base);
        rs_ring_free(sr->changed);
        for (size_t k = 0; k < sizeof arrays / sizeof *arrays; k++)
            free(arrays[k]);
    }
    free(r->rings);
    memset(r, 0, sizeof *r);
}
