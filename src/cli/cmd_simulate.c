/* ringshard simulate: balance and movement of synthetic keys on any ring,
 * vnode sweeps, bounded-load capacity what-ifs. The options fill the
 * simulate job (ringshard/job_simulate.h, src/jobs/simulate.c);
 * cli/simulate_print.c prints its result and draws its pictures. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "cli/simulate_print.h"
#include "ringshard/job_simulate.h"

static const char simulate_help[] =
    "Usage: ringshard simulate [OPTIONS]\n"
    "Places K synthetic keys on a ring and reports the keys per node (mean, min,\n"
    "max, standard deviation, max/mean, min/mean) next to what the ring's exact\n"
    "shares and the theory of random rings predict; with --add/--remove, how many\n"
    "keys move, next to the least any placement must move. docs/stats.md derives\n"
    "every number.\n\n"
    "  --keys K            number of keys (default 1000000)\n"
    "  --key-pattern seq|random  seq: the strings \"0\"..\"K-1\" (the FNV1_32\n"
    "                      ring's experiment); random: 32 lowercase hex digits from\n"
    "                      splitmix64 (default)\n"
    "  --key-seed N        seed of the random keys (default 0); --seed is the hash's\n"
    "  --add K             add K nodes, named as plan --add names them: after the\n"
    "                      largest number any node had (\"999\" -> \"1000\"...,\n"
    "                      \"db07\" -> \"db08\"...), removed ones included\n"
    "  --add-names NAMES   add these nodes (comma-separated), in order\n"
    "  --remove NAMES      remove these nodes (comma-separated; slots: marked down,\n"
    "                      so that the others keep their slots)\n"
    "  --reweight NAME=W[,...]  change nodes' weights (ring, ketama)\n"
    "                      (the lists of --add-names, --remove, --reweight and\n"
    "                      --down add up when given again; an edit that cancels\n"
    "                      itself, or a name given twice, is refused: exit 64)\n"
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
    "                      (a FILE '-' is standard output; the text then goes\n"
    "                      to standard error)\n"
    "  -j, --threads N     worker threads (default: $OMP_NUM_THREADS, else all cores)\n"
    "  -h, --help          this help\n\n";

enum {
    OPT_KEYS = RS_OPT__FIRST_COMMAND, OPT_PATTERN, OPT_KEY_SEED
};

/* Parses the options into *ro, *bo, *ed and *so. Returns -1 to go on,
 * else the exit code (the error printed; 0 after --help). */
static int parse_args(int argc, char **argv, rs_cli_ring *ro, rs_cli_balance *bo, rs_cli_edits *ed,
                      rs_simulate_job_opts *so)
{
    static const struct option longopts[] = {
        RS_RING_LONGOPTS,
        {"keys", required_argument, 0, OPT_KEYS},
        {"key-pattern", required_argument, 0, OPT_PATTERN},
        {"key-seed", required_argument, 0, OPT_KEY_SEED},
        RS_EDIT_LONGOPTS,
        RS_BALANCE_LONGOPTS,
        {"threads", required_argument, 0, 'j'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    unsigned long long v;
    int c, r;
    rs_error err = {0};
    optind = 1;
    while ((c = rs_cli_getopt("simulate", argc, argv, "hj:", longopts)) != -1) {
        if ((r = rs_cli_edits_option(ed, c, optarg, &err)) != 0) {  /* before the ring's --down */
            if (r < 0)
                return rs_cli_fail("simulate", &err);
            continue;
        }
        if (rs_cli_ring_option(ro, c, optarg))
            continue;
        if ((r = rs_cli_balance_option(bo, c, optarg, &err)) != 0) {
            if (r < 0)
                return rs_cli_fail("simulate", &err);
            continue;
        }
        switch (c) {
        case OPT_KEYS:
            if (rs_cli_uint("--keys", optarg, 1, 1ULL << 40, &v, &err) != 0)
                return rs_cli_fail("simulate", &err);
            so->keys = v;
            break;
        case OPT_PATTERN:
            if (!strcmp(optarg, "seq"))
                so->pattern = RS_KEYS_SEQ;
            else if (!strcmp(optarg, "random"))
                so->pattern = RS_KEYS_RANDOM;
            else {
                rs_error_set(&err, RS_EXIT_USAGE, "--key-pattern: expected seq or random, not '%s'", optarg);
                return rs_cli_fail("simulate", &err);
            }
            break;
        case OPT_KEY_SEED:
            if (rs_cli_uint("--key-seed", optarg, 0, UINT64_MAX, &v, &err) != 0)
                return rs_cli_fail("simulate", &err);
            so->key_seed = v;
            break;
        case 'j':
            if (rs_cli_uint("--threads", optarg, 1, 1024, &v, &err) != 0)
                return rs_cli_fail("simulate", &err);
            so->threads = (int)v;
            break;
        case 'h': fputs(simulate_help, stdout); fputs(rs_cli_ring_help, stdout); return 0;
        default: return rs_cli_getopt_exit(c);
        }
    }
    if (optind < argc)
        return rs_cli_usage_error("simulate", "unexpected argument");
    return -1;
}

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
        if (rs_cli_uint("--vnodes", t, 1, 100000000, &v, err) != 0) {
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

int rs_cmd_simulate(int argc, char **argv)
{
    rs_cli_ring ro = {0};
    rs_simulate_job_opts so = {.keys = 1000000, .pattern = RS_KEYS_RANDOM};
    rs_cli_balance bo;
    rs_cli_balance_defaults(&bo);
    rs_cli_edits ed = {0};
    rs_error err = {0};
    so.threads = omp_get_max_threads();
    int r = parse_args(argc, argv, &ro, &bo, &ed, &so);
    if (r >= 0)
        return r;
    int changing = rs_cli_edits_change(&ed);
    rs_cli_edits_fill(&ed, &so.edits);
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
    if (sweep)
        rs_cli_simulate_print_sweep(&so, &res, pattern, changing, bo.factor);
    else
        rs_cli_simulate_print_one(&so, &res, pattern, changing, &bo);
    if (rs_cli_flush_stdout(&err) != 0 || rs_cli_simulate_pictures(&so, &res, sweep, &bo, &err) != 0)
        goto fail;
    goto done;
fail:
    rc = rs_cli_fail("simulate", &err);
done:
    rs_simulate_job_result_free(&res);
    rs_nodes_free(&nodes);
    return rc;
}
