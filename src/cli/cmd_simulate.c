/* ringshard simulate: balance and movement of synthetic keys on any ring,
 * vnode sweeps, bounded-load capacity what-ifs. The options fill the
 * simulate job (ringshard/job_simulate.h, src/jobs/simulate.c);
 * src/jobs/simulate_print.c prints its result; the pictures are drawn
 * here. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "ringshard/job_simulate.h"

typedef struct {
    rs_cli_ring ro;
    rs_cli_balance bo;
    rs_cli_edits ed;
    rs_simulate_job_opts so;
} sim_args;

static const int pattern_codes[] = {RS_KEYS_SEQ, RS_KEYS_RANDOM};
static const rs_opt opt_keys = {.name = "keys", .arg = "K", .help = "number of keys (default 1000000)",
                                .kind = RS_KIND_INT, RS_AT(sim_args, so.keys), .min = 1, .max = 1ULL << 40};
static const rs_opt opt_pattern = {.name = "key-pattern", .arg = "seq|random",
                                   .help = "seq: the strings \"0\"..\"K-1\" (the FNV1_32\n"
                                           "ring's experiment); random: 32 lowercase hex digits from\n"
                                           "splitmix64 (default)",
                                   .kind = RS_KIND_ENUM, RS_AT(sim_args, so.pattern), .values = "seq|random",
                                   .codes = pattern_codes};
static const rs_opt opt_key_seed = {.name = "key-seed", .arg = "N",
                                    .help = "seed of the random keys (default 0); --seed is the hash's",
                                    .kind = RS_KIND_INT, RS_AT(sim_args, so.key_seed), .min = 0,
                                    .max = UINT64_MAX};

static const rs_opt_command simulate_command = {
    "simulate",
    "ringshard simulate [OPTIONS]",
    "Places K synthetic keys on a ring and reports the keys per node (mean, min,\n"
    "max, standard deviation, max/mean, min/mean) next to what the ring's exact\n"
    "shares and the theory of random rings predict; with --add/--remove, how many\n"
    "keys move, next to the least any placement must move. docs/stats.md derives\n"
    "every number.\n",
    (const rs_opt_section[]){
        {    "\n",
         22,
         (const rs_opt_use[]){
             {&opt_keys, 0, NULL, NULL}, {&opt_pattern, 0, NULL, NULL}, {&opt_key_seed, 0, NULL, NULL},
             RS_USE_HELP(rs_opt_add, sim_args, ed,
                         "add K nodes, named as plan --add names them: after the\n"
                         "largest number any node had (\"999\" -> \"1000\"...,\n"
                         "\"db07\" -> \"db08\"...), removed ones included"),
             RS_USE_HELP(rs_opt_add_names, sim_args, ed, "add these nodes (comma-separated), in order"),
             RS_USE_HELP(rs_opt_remove, sim_args, ed,
                         "remove these nodes (comma-separated; slots: marked down,\n"
                         "so that the others keep their slots)"),
             RS_USE_HELP(rs_opt_reweight, sim_args, ed,
                         "change nodes' weights (ring, ketama)\n"
                         "(the lists of --add-names, --remove, --reweight and\n"
                         "--down add up when given again; an edit that cancels\n"
                         "itself, or a name given twice, is refused: exit 64)"),
             RS_USE_AS(rs_opt_vnodes, sim_args, ro, "--vnodes V1,V2,...",
                         "a sweep: one TSV row per vnode count (balance, and the\n"
                         "moved fraction with --add/--remove); a single V is the\n"
                         "ring option"),
             RS_USE_HELP(rs_opt_capacity, sim_args, bo,
                         "bounded loads (F >= 1): capacity ceil(F*K/N) per node;\n"
                         "which nodes exceed F*mean, and how many keys spill to\n"
                         "successors when placed in key order"),
             RS_USE_HELP(rs_opt_z, sim_args, bo, "flag nodes outside K*p_i +- Z*sqrt(K*p_i*(1-p_i)) (default 3)"),
             RS_USE(rs_opt_tsv, sim_args, bo),
             RS_USE_HELP(rs_opt_svg, sim_args, bo, "write the pictures as one SVG file (a sweep: a line chart)"),
             RS_USE_HELP(rs_opt_html, sim_args, bo,
                         "write a self-contained HTML report\n"
                         "(a FILE '-' is standard output; the text then goes\n"
                         "to standard error)"),
             RS_USE(rs_opt_threads, sim_args, so.threads), RS_HELP_USE, {NULL, 0, NULL, NULL}},
         "\n", 0, NULL, NULL},
        RS_RING_SECTION(sim_args, ro),
        RS_SECTIONS_END},
    RS_OPT_NOWHERE};

const rs_opt_command *rs_cmd_simulate_options(void) { return &simulate_command; }

/* The vnode sweep: --vnodes with a comma. *nr gets the count of values. */
static int parse_sweep(const rs_cli_ring *ro, const rs_cli_balance *bo, uint32_t *vlist, size_t *nr, rs_error *err)
{
    char *list = strdup(ro->vnodes), *save = NULL;
    unsigned long long v;
    *nr = 0;
    for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (*nr == RS_SIMULATE_MAX_SWEEP) {
            free(list);
            return rs_error_set(err, RS_EXIT_USAGE, "--vnodes: at most 64 values in a sweep");
        }
        if (rs_opt_check_uint(&rs_opt_vnodes, t, &v, err) != 0) {
            free(list);
            return -1;
        }
        vlist[(*nr)++] = (uint32_t)v;
    }
    free(list);
    if (!*nr)
        return rs_error_set(err, RS_EXIT_USAGE, "--vnodes: empty list");
    if (bo->tsv)
        return rs_error_set(err, RS_EXIT_USAGE, "--tsv shows one ring; a --vnodes sweep prints its own table");
    return 0;
}

/* Writes the pictures bo asks for (--svg, --html), after the text: the
 * sweep's line chart, or the ring's balance pictures. 0, or -1 with err. */
static int write_pictures(const rs_simulate_job_opts *so, const rs_simulate_job_result *res, int sweep,
                          const rs_cli_balance *bo, rs_error *err)
{
    const rs_simulate_ring *sr = res->rings;
    char title[256];
    if (sweep) {
        snprintf(title, sizeof title, "ringshard simulate: balance by vnode count (%llu keys)",
                 (unsigned long long)so->keys);
        for (int html = 0; html < 2; html++) {
            const char *path = html ? bo->html : bo->svg;
            if (path && rs_simulate_sweep_picture(path, html, so, res, title, err) != 0)
                return -1;
        }
        return 0;
    }
    snprintf(title, sizeof title, "ringshard simulate: %llu %s keys on %u nodes", (unsigned long long)so->keys,
             so->pattern == RS_KEYS_SEQ ? "seq" : "random", sr[0].bal.nodes);
    return rs_cli_balance_pictures(bo, title, sr[0].base, &sr[0].bal, sr[0].ns,
                                   isnan(bo->factor) ? NULL : &sr[0].bounded, "keys", err);
}

int rs_cmd_simulate(int argc, char **argv)
{
    sim_args a = {.so = {.keys = 1000000, .pattern = RS_KEYS_RANDOM}};
    rs_cli_balance_defaults(&a.bo);
    rs_error err = {0};
    a.so.threads = omp_get_max_threads();
    int first, r = rs_cli_parse_options(&simulate_command, &a, argc, argv, &first);
    if (r >= 0)
        return r;
    if (first < argc)
        return rs_cli_usage_error("simulate", "unexpected argument");
    rs_cli_ring ro = a.ro;
    ro.down.n = 0;   /* --down is an edit here: the job marks it (rs_node_edits_down) */
    rs_cli_balance bo = a.bo;
    rs_cli_edits ed = a.ed;
    rs_simulate_job_opts so = a.so;
    int changing = rs_cli_edits_change(&ed);
    rs_cli_edits_fill(&ed, &a.ro.down, &so.edits);
    uint32_t vlist[RS_SIMULATE_MAX_SWEEP];
    size_t nr = 1;
    int sweep = ro.vnodes && strchr(ro.vnodes, ',');
    if (sweep && parse_sweep(&ro, &bo, vlist, &nr, &err) != 0)
        return rs_cli_fail("simulate", &err);

    rs_simulate_job_result res = {0};
    rs_nodes nodes = {0};
    int rc = 0;
    char vbuf[32];
    if (sweep) {  /* the job sets each ring's count; the first one is checked with the options */
        snprintf(vbuf, sizeof vbuf, "%u", vlist[0]);
        ro.vnodes = vbuf;
    }
    if (bo.svg || bo.html)  /* a file to publish: a stop signal removes it (exit 130); stdout alone needs no handler */
        rs_cli_install_signals();
    if (rs_cli_ring_finish(&ro, &so.ring, &nodes, &err) != 0 || rs_node_edits_down(&so.edits, &nodes, NULL, &err) != 0)
        goto fail;
    so.nodes = &nodes;
    so.vnodes = sweep ? vlist : NULL;
    so.nvnodes = nr;
    so.z = bo.z;
    so.factor = bo.factor;
    if (rs_simulate_job_run(&so, &res, &err) != 0)
        goto fail;
    char pattern[128];
    if (so.pattern == RS_KEYS_SEQ)
        snprintf(pattern, sizeof pattern, "seq (\"0\"..\"%llu\")", (unsigned long long)so.keys - 1);
    else
        snprintf(pattern, sizeof pattern, "random (32 hex digits, splitmix64 seed %llu)",
                 (unsigned long long)so.key_seed);
    FILE *out = rs_cli_summary();   /* stderr when a picture goes to stdout */
    if (sweep)
        rs_simulate_job_print_sweep(out, &so, &res, pattern, changing, bo.factor);
    else
        rs_simulate_job_print_one(out, &so, &res, pattern, changing, bo.tsv, bo.factor);
    if (rs_cli_flush_stdout(&err) != 0 || write_pictures(&so, &res, sweep, &bo, &err) != 0)
        goto fail;
    goto done;
fail:
    rc = rs_cli_fail("simulate", &err);
done:
    rs_simulate_job_result_free(&res);
    rs_nodes_free(&nodes);
    return rc;
}
