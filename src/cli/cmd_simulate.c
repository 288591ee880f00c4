/* ringshard simulate: balance and movement of synthetic keys on any ring,
 * vnode sweeps, bounded-load capacity what-ifs. The keys are generated,
 * hashed and counted per node in parallel (per-thread counters, summed);
 * the bounded-load placement is sequential, in key order. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "ringshard/report.h"
#include "ringshard/stats.h"

static const char simulate_help[] =
    "Usage: ringshard simulate [OPTIONS]\n"
    "Places K synthetic keys on a ring and reports the keys per node (mean, min,\n"
    "max, standard deviation, max/mean, min/mean) next to what the ring's exact\n"
    "shares and the theory of random rings predict; with --add/--remove, how many\n"
    "keys move, next to the least any placement must move. docs/stats.md derives\n"
    "every number.\n\n"
    "  --keys K            number of keys (default 1000000)\n"
    "  --key-pattern P     seq: the strings \"0\"..\"K-1\" (seed 000's experiments);\n"
    "                      random: 32 lowercase hex digits from splitmix64 (default)\n"
    "  --key-seed N        seed of the random keys (default 0); --seed is the hash's\n"
    "  --add K             add K nodes, named as plan --add names them (\"999\" ->\n"
    "                      \"1000\"..., \"db07\" -> \"db08\"...)\n"
    "  --add-names NAMES   add these nodes (comma-separated), in order\n"
    "  --remove NAMES      remove these nodes (comma-separated; slots: marked down,\n"
    "                      so that the others keep their slots)\n"
    "  --vnodes V1,V2,...  a sweep: one TSV row per vnode count (balance, and the\n"
    "                      moved fraction with --add/--remove); a single V is the\n"
    "                      ring option\n"
    "  --capacity-factor F bounded loads (F >= 1): capacity ceil(F*K/N) per node;\n"
    "                      which nodes exceed F*mean, and how many keys spill to\n"
    "                      successors when placed in key order\n"
    "  --z Z               flag nodes outside K*p_i +- Z*sqrt(K*p_i*(1-p_i)) (default 3)\n"
    "  --tsv               instead of the summary, the per-node TSV table:\n"
    "                      node points share expected expected_sd count z flag\n"
    "                      [capacity load_after]\n"
    "  --svg FILE          write the pictures as one SVG file (a sweep: a line chart)\n"
    "  --html FILE         write a self-contained HTML report\n"
    "  -j, --threads N     worker threads (default: $OMP_NUM_THREADS, else all cores)\n"
    "  -h, --help          this help\n\n";

enum {
    OPT_KEYS = RS_OPT__FIRST_COMMAND, OPT_PATTERN, OPT_KEY_SEED, OPT_ADD, OPT_ADD_NAMES, OPT_REMOVE
};

typedef struct {
    uint32_t vnodes;          /* 0: not a sweep */
    rs_ring *base, *changed;
    uint32_t *map;            /* base node -> changed node */
    uint64_t *counts, *counts_changed;  /* per thread x nodes while counting, then summed into [0] */
    uint64_t moved;
    rs_balance bal, bal_changed;
    rs_node_stat *ns;
    rs_bounded bounded;
    uint64_t *capacity, *load_after;
    double ideal, exact_moved;
} sim_ring;

typedef struct {
    uint64_t keys;
    rs_key_pattern pattern;
    uint64_t key_seed;
    int threads;
} sim_opts;

static void fail_oom(rs_error *err) { rs_error_set(err, RS_EXIT_IO, "out of memory"); }

/* Applies --add / --add-names / --remove to a copy of the base ring's nodes. */
static rs_ring *build_changed(const rs_ring *base, unsigned long long add, const char *add_names, const char *remove,
                              char *what, size_t whatcap, rs_error *err)
{
    rs_nodes nodes = {0};
    if (rs_nodes_copy(&nodes, rs_ring_nodes(base), err) != 0)
        return NULL;
    uint32_t before = 0, after = 0;
    /* slots: a removed node is marked down, so that the others keep their
     * slots (seed 001's dropBadNode; plan does the same) */
    int slots = rs_ring_get_opts(base)->scheme == RS_SCHEME_SLOTS;
    for (uint32_t i = 0; i < nodes.count; i++)
        before += !nodes.down[i];
    size_t wl = 0;
    if (remove) {
        char *list = strdup(remove), *save = NULL;
        for (char *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save))
            if (rs_nodes_find(&nodes, name) < 0 ||
                (slots ? rs_nodes_set_down(&nodes, name, err) : rs_nodes_remove(&nodes, name, err)) != 0) {
                rs_error_set(err, RS_EXIT_USAGE, "--remove: no node named '%s'", name);
                free(list);
                rs_nodes_free(&nodes);
                return NULL;
            }
        free(list);
        wl += (size_t)snprintf(what + wl, whatcap - wl, "remove %s", remove);
    }
    if (add_names) {
        if (rs_nodes_add_names(&nodes, add_names, err) != 0) {
            rs_nodes_free(&nodes);
            return NULL;
        }
        wl += (size_t)snprintf(what + wl, whatcap - wl, "%sadd %s", wl ? ", " : "", add_names);
    }
    if (add) {
        if (rs_nodes_add_after(&nodes, (uint32_t)add, err) != 0) {
            rs_nodes_free(&nodes);
            return NULL;
        }
        wl += (size_t)snprintf(what + (wl < whatcap ? wl : whatcap), wl < whatcap ? whatcap - wl : 0,
                               "%sadd %llu node%s", wl ? ", " : "", add, add == 1 ? "" : "s");
    }
    for (uint32_t i = 0; i < nodes.count; i++)
        after += !nodes.down[i];
    if (wl < whatcap)
        snprintf(what + wl, whatcap - wl, " (%u -> %u nodes)", before, after);
    rs_ring *r = rs_ring_build(rs_ring_get_opts(base), &nodes, err);
    rs_nodes_free(&nodes);
    return r;
}

#define SIM_BLOCK 32

typedef char sim_key[RS_SYNTH_KEY_MAX + 8];

/* The positions of a block's n keys on ring r (pos0, those on the first
 * ring, when every ring shares them; else computed into pos), with r's
 * prefetch hints given for all of them before the first lookup. */
static inline const uint64_t *block_positions(const rs_ring *r, int same_pos, const uint64_t *pos0, uint64_t *pos,
                                              const sim_key *keys, const size_t *lens, int n)
{
    if (!same_pos) {
        for (int k = 0; k < n; k++)
            pos[k] = rs_ring_position(r, keys[k], lens[k]);
        pos0 = pos;
    }
    for (int k = 0; k < n; k++)
        rs_ring_prefetch_index(r, pos0[k]);
    for (int k = 0; k < n; k++)
        rs_ring_prefetch_point(r, pos0[k]);
    return pos0;
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
        uint32_t own[SIM_BLOCK];
        /* blocks of keys: hash them all, then look them up with the ring's
         * prefetch hints, so that the cache misses of one block overlap */
#pragma omp for schedule(static, 1024)
        for (long long blk = 0; blk < nblocks; blk++) {
            long long i0 = blk * SIM_BLOCK;
            int n = (int)(K - i0 < SIM_BLOCK ? K - i0 : SIM_BLOCK);
            for (int k = 0; k < n; k++) {
                lens[k] = rs_synth_key(so->pattern, so->key_seed, (uint64_t)(i0 + k), keys[k]);
                pos0[k] = rs_ring_position(sr[0].base, keys[k], lens[k]);
            }
            for (size_t s = 0; s < nr; s++) {
                const rs_ring *b = sr[s].base;
                const uint64_t *p = block_positions(b, same_pos, pos0, pos, (const sim_key *)keys, lens, n);
                uint64_t *cnt = sr[s].counts + (size_t)t * rs_ring_nodes(b)->count;
                for (int k = 0; k < n; k++) {
                    own[k] = rs_ring_owner(b, p[k]);
                    cnt[own[k]]++;
                }
                if (sr[s].changed) {
                    const rs_ring *c = sr[s].changed;
                    p = block_positions(c, same_pos, pos0, pos, (const sim_key *)keys, lens, n);
                    uint64_t *cc = sr[s].counts_changed + (size_t)t * rs_ring_nodes(c)->count;
                    const uint32_t *map = sr[s].map;
                    uint64_t mv = 0;
                    for (int k = 0; k < n; k++) {
                        uint32_t o2 = rs_ring_owner(c, p[k]);
                        cc[o2]++;
                        mv += map[own[k]] != o2;
                    }
                    local_moved[s] += mv;
                }
            }
        }
#pragma omp critical
        for (size_t s = 0; s < nr; s++)
            moved[s] += local_moved[s];
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
            size_t len = rs_synth_key(so->pattern, so->key_seed, (uint64_t)i, key);
            start[i] = rs_bounded_start(b, rs_ring_position(b, key, len));
        }
    }
    uint32_t n = rs_ring_nodes(b)->count;
    sr->capacity = malloc((size_t)n * sizeof *sr->capacity);
    sr->load_after = malloc((size_t)n * sizeof *sr->load_after);
    if (!sr->capacity || !sr->load_after)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    if (rs_bounded_capacities(b, so->keys, factor, sr->capacity, err) != 0)
        return -1;
    return rs_bounded_place(b, start, so->keys, sr->counts, factor, &sr->bounded, sr->load_after, err);
}

static void print_change(FILE *f, const sim_ring *sr, const sim_opts *so, const char *what)
{
    fprintf(f, "%-24s%s\n", "change", what);
    fprintf(f, "%-24s%llu\n", "moved", (unsigned long long)sr->moved);
    fprintf(f, "%-24s%.7f\n", "moved fraction", (double)sr->moved / (double)so->keys);
    fprintf(f, "%-24s%.7f  (the least any placement must move: %.1f keys)\n", "ideal fraction", sr->ideal,
            sr->ideal * (double)so->keys);
    if (isnan(sr->exact_moved))
        fprintf(f, "%-24sn/a  (no arcs to compare for this scheme)\n", "exact moved share");
    else
        fprintf(f, "%-24s%.7f  (hash space changing owner, from the arcs: %.1f keys expected)\n",
                "exact moved share", sr->exact_moved, sr->exact_moved * (double)so->keys);
    const rs_balance *a = &sr->bal_changed;
    const rs_nodes *nodes = rs_ring_nodes(sr->changed);
    fprintf(f, "%-24s%llu  (node %s)\n", "min (after)", (unsigned long long)a->min, nodes->names[a->argmin]);
    fprintf(f, "%-24s%llu  (node %s)\n", "max (after)", (unsigned long long)a->max, nodes->names[a->argmax]);
    fprintf(f, "%-24s%.2f\n", "sd (after)", a->sd);
    fprintf(f, "%-24s%.4f\n", "max/mean (after)", a->max_mean);
}

static int write_sweep_picture(const char *path, int html, sim_ring *sr, size_t nr, const sim_opts *so,
                               const char *title, rs_error *err)
{
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

int rs_cmd_simulate(int argc, char **argv)
{
    static const struct option longopts[] = {
        RS_RING_LONGOPTS,
        {"keys", required_argument, 0, OPT_KEYS},
        {"key-pattern", required_argument, 0, OPT_PATTERN},
        {"key-seed", required_argument, 0, OPT_KEY_SEED},
        {"add", required_argument, 0, OPT_ADD},
        {"add-names", required_argument, 0, OPT_ADD_NAMES},
        {"remove", required_argument, 0, OPT_REMOVE},
        RS_BALANCE_LONGOPTS,
        {"threads", required_argument, 0, 'j'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    rs_cli_ring ro = {0};
    sim_opts so = {.keys = 1000000, .pattern = RS_KEYS_RANDOM};
    rs_cli_balance bo;
    rs_cli_balance_defaults(&bo);
    unsigned long long add = 0, v;
    const char *add_names = NULL, *remove = NULL;
    int c, r;
    rs_error err = {0};
    optind = 1;
    so.threads = omp_get_max_threads();
    while ((c = getopt_long(argc, argv, "hj:", longopts, NULL)) != -1) {
        if (rs_cli_ring_option(&ro, c, optarg))
            continue;
        if ((r = rs_cli_balance_option(&bo, c, optarg, &err)) != 0) {
            if (r < 0)
                return rs_cli_fail("simulate", &err);
            continue;
        }
        switch (c) {
        case OPT_KEYS:
            if (rs_cli_uint("--keys", optarg, 1, 1ULL << 40, &v, &err) != 0)
                return rs_cli_fail("simulate", &err);
            so.keys = v;
            break;
        case OPT_PATTERN:
            if (!strcmp(optarg, "seq"))
                so.pattern = RS_KEYS_SEQ;
            else if (!strcmp(optarg, "random"))
                so.pattern = RS_KEYS_RANDOM;
            else {
                rs_error_set(&err, RS_EXIT_USAGE, "--key-pattern: expected seq or random, not '%s'", optarg);
                return rs_cli_fail("simulate", &err);
            }
            break;
        case OPT_KEY_SEED:
            if (rs_cli_uint("--key-seed", optarg, 0, UINT64_MAX, &v, &err) != 0)
                return rs_cli_fail("simulate", &err);
            so.key_seed = v;
            break;
        case OPT_ADD:
            if (rs_cli_uint("--add", optarg, 1, 10000000, &add, &err) != 0)
                return rs_cli_fail("simulate", &err);
            break;
        case OPT_ADD_NAMES: add_names = optarg; break;
        case OPT_REMOVE: remove = optarg; break;
        case 'j':
            if (rs_cli_uint("--threads", optarg, 1, 1024, &v, &err) != 0)
                return rs_cli_fail("simulate", &err);
            so.threads = (int)v;
            break;
        case 'h': fputs(simulate_help, stdout); fputs(rs_cli_ring_help, stdout); return 0;
        default: return rs_cli_usage_error("simulate", "bad option");
        }
    }
    if (optind < argc)
        return rs_cli_usage_error("simulate", "unexpected argument");
    int changing = add || add_names || remove;

    /* the vnode sweep: --vnodes with a comma */
    unsigned long long vlist[64];
    size_t nr = 1;
    int sweep = ro.vnodes && strchr(ro.vnodes, ',');
    if (sweep) {
        char *list = strdup(ro.vnodes), *save = NULL;
        nr = 0;
        for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            if (nr == 64) {
                free(list);
                rs_error_set(&err, RS_EXIT_USAGE, "--vnodes: at most 64 values in a sweep");
                return rs_cli_fail("simulate", &err);
            }
            if (rs_cli_uint("--vnodes", t, 1, 100000000, &vlist[nr], &err) != 0) {
                free(list);
                return rs_cli_fail("simulate", &err);
            }
            nr++;
        }
        free(list);
        if (!nr) {
            rs_error_set(&err, RS_EXIT_USAGE, "--vnodes: empty list");
            return rs_cli_fail("simulate", &err);
        }
        if (bo.tsv) {
            rs_error_set(&err, RS_EXIT_USAGE, "--tsv shows one ring; a --vnodes sweep prints its own table");
            return rs_cli_fail("simulate", &err);
        }
    }

    sim_ring *sr = calloc(nr, sizeof *sr);
    uint32_t *start = NULL;
    char what[512] = "";
    int rc = 0;
    if (!sr) {
        fail_oom(&err);
        return rs_cli_fail("simulate", &err);
    }
    for (size_t s = 0; s < nr; s++) {
        char vbuf[32];
        rs_cli_ring r2 = ro;
        if (sweep) {
            snprintf(vbuf, sizeof vbuf, "%llu", vlist[s]);
            r2.vnodes = vbuf;
            sr[s].vnodes = (uint32_t)vlist[s];
        }
        sr[s].exact_moved = NAN;
        if (!(sr[s].base = rs_cli_ring_build(&r2, &err)))
            goto fail;
        if (sweep) {
            rs_scheme_id sch = rs_ring_get_opts(sr[s].base)->scheme;
            if (sch != RS_SCHEME_RING && sch != RS_SCHEME_KETAMA && sch != RS_SCHEME_SLOTS) {
                rs_error_set(&err, RS_EXIT_USAGE, "--vnodes: scheme %s has no virtual nodes to sweep",
                             rs_scheme_name(sch));
                goto fail;
            }
        }
        if (changing) {
            what[0] = '\0';
            if (!(sr[s].changed = build_changed(sr[s].base, add, add_names, remove, what, sizeof what, &err)))
                goto fail;
            if (!(sr[s].map = rs_node_map(sr[s].base, sr[s].changed))) {
                fail_oom(&err);
                goto fail;
            }
            sr[s].ideal = rs_ideal_moved(sr[s].base, sr[s].changed);
            sr[s].exact_moved = rs_moved_share(sr[s].base, sr[s].changed, sr[s].map);
        }
    }
    if (count_keys(sr, nr, &so, &err) != 0)
        goto fail;
    for (size_t s = 0; s < nr; s++) {
        uint32_t n = rs_ring_nodes(sr[s].base)->count;
        if (!(sr[s].ns = malloc((size_t)n * sizeof *sr[s].ns))) {
            fail_oom(&err);
            goto fail;
        }
        if (rs_balance_compute(sr[s].base, sr[s].counts, bo.z, sr[s].ns, &sr[s].bal, &err) != 0)
            goto fail;
        if (sr[s].changed &&
            rs_balance_compute(sr[s].changed, sr[s].counts_changed, bo.z, NULL, &sr[s].bal_changed, &err) != 0)
            goto fail;
    }
    if (!isnan(bo.factor)) {
        if (!(start = malloc((size_t)so.keys * sizeof *start))) {
            rs_error_set(&err, RS_EXIT_IO, "out of memory: --capacity-factor needs 4 bytes per key (%llu keys)",
                         (unsigned long long)so.keys);
            goto fail;
        }
        for (size_t s = 0; s < nr; s++)
            if (bounded(&sr[s], &so, bo.factor, start, &err) != 0)
                goto fail;
    }

    /* output */
    const rs_ring_opts *o = rs_ring_get_opts(sr[0].base);
    char pattern[128];
    if (so.pattern == RS_KEYS_SEQ)
        snprintf(pattern, sizeof pattern, "seq (\"0\"..\"%llu\")", (unsigned long long)so.keys - 1);
    else
        snprintf(pattern, sizeof pattern, "random (32 hex digits, splitmix64 seed %llu)",
                 (unsigned long long)so.key_seed);
    if (sweep) {
        printf("# ringshard simulate: %llu keys, pattern %s; scheme %s, hash %s, %u nodes%s%s\n",
               (unsigned long long)so.keys, pattern, rs_scheme_name(o->scheme), rs_hash_get(o->hash)->name,
               sr[0].bal.nodes, changing ? "; change: " : "", changing ? what : "");
        fputs("vnodes\tpoints\tmean\tsd\trel_sd\trel_sd_expected\trel_sd_theory\tinv_sqrt_v\tmin_mean\tmax_mean\tflagged",
              stdout);
        if (changing)
            fputs("\tmoved\tmoved_fraction\tideal_fraction\texact_moved_share", stdout);
        if (!isnan(bo.factor))
            fputs("\tover\tspilled\tmax_after", stdout);
        putchar('\n');
        for (size_t s = 0; s < nr; s++) {
            const rs_balance *b = &sr[s].bal;
            printf("%u\t%u\t%.2f\t%.2f\t%.6f\t%.6f\t%.6f\t%.6f\t%.4f\t%.4f\t%u", sr[s].vnodes,
                   rs_ring_npoints(sr[s].base), b->mean, b->sd, b->rel_sd, b->sd_ring / b->mean,
                   b->sd_theory / b->mean, 1 / sqrt((double)sr[s].vnodes), b->min_mean, b->max_mean,
                   b->above + b->below);
            if (changing)
                printf("\t%llu\t%.7f\t%.7f\t%.7f", (unsigned long long)sr[s].moved,
                       (double)sr[s].moved / (double)so.keys, sr[s].ideal, sr[s].exact_moved);
            if (!isnan(bo.factor))
                printf("\t%u\t%llu\t%llu", sr[s].bounded.over, (unsigned long long)sr[s].bounded.spilled,
                       (unsigned long long)sr[s].bounded.max_after);
            putchar('\n');
        }
    } else if (bo.tsv) {
        rs_balance_print_table(stdout, sr[0].base, sr[0].ns, sr[0].capacity, sr[0].load_after);
    } else {
        printf("%-24sscheme %s, hash %s, fingerprint %s\n", "ring", rs_scheme_name(o->scheme),
               rs_hash_get(o->hash)->name, rs_ring_fingerprint(sr[0].base));
        printf("%-24s%s\n", "pattern", pattern);
        rs_balance_print(stdout, sr[0].base, &sr[0].bal, "keys");
        rs_balance_print_flagged(stdout, sr[0].base, sr[0].ns, 10);
        if (changing)
            print_change(stdout, &sr[0], &so, what);
        if (!isnan(bo.factor))
            rs_bounded_print(stdout, &sr[0].bounded, "keys");
    }
    if (rs_cli_flush_stdout(&err) != 0)
        goto fail;
    char title[256];
    if (sweep) {
        snprintf(title, sizeof title, "ringshard simulate: balance by vnode count (%llu keys)",
                 (unsigned long long)so.keys);
        for (int html = 0; html < 2; html++) {
            const char *path = html ? bo.html : bo.svg;
            if (path && write_sweep_picture(path, html, sr, nr, &so, title, &err) != 0)
                goto fail;
        }
    } else {
        snprintf(title, sizeof title, "ringshard simulate: %llu %s keys on %u nodes", (unsigned long long)so.keys,
                 so.pattern == RS_KEYS_SEQ ? "seq" : "random", sr[0].bal.nodes);
        if (rs_cli_balance_pictures(&bo, title, sr[0].base, &sr[0].bal, sr[0].ns,
                                    isnan(bo.factor) ? NULL : &sr[0].bounded, "keys", &err) != 0)
            goto fail;
    }
    goto done;
fail:
    rc = rs_cli_fail("simulate", &err);
done:
    for (size_t s = 0; s < nr; s++) {
        rs_ring_free(sr[s].base);
        rs_ring_free(sr[s].changed);
        free(sr[s].map);
        free(sr[s].counts);
        free(sr[s].counts_changed);
        free(sr[s].ns);
        free(sr[s].capacity);
        free(sr[s].load_after);
    }
    free(sr);
    free(start);
    return rc;
}
