/* ringshard plan: what moves where when the node set changes - the exact
 * ring diff without data, counted keys and bytes with data, the moved rows
 * themselves with --emit. The plan JSON schema is in docs/plan.md. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/cli.h"
#include "cluster/cluster.h"
#include "cluster/world.h"
#include "rs_config.h"
#include "ringshard/json.h"
#include "ringshard/bucketdir.h"
#include "ringshard/outdir.h"
#include "ringshard/outfile.h"
#include "ringshard/plan.h"
#include "ringshard/report.h"

static const char plan_help[] =
    "Usage: ringshard plan [OPTIONS] [INPUT...] [--files-from LIST]\n"
    "Compares an old and a new node set on the same ring options and tells what\n"
    "moves where. Without INPUT: the exact ring diff (arcs of the hash space whose\n"
    "owner changes, aggregated per (from, to) pair). With INPUT (the same CSV\n"
    "inputs and options as 'ringshard bucket'): keys and bytes counted per pair;\n"
    "with --emit DIR the moved rows themselves.\n\n"
    "Old side (default: the ring options' nodes, 1000):\n"
    "  --old-nodes N          nodes \"0\"..\"N-1\" (same as --nodes)\n"
    "  --old-nodes-file FILE  a node file (same as --nodes-file)\n"
    "  --from-buckets DIR     the ring DIR/manifest.json was written with; its rows\n"
    "                         are the data (each must sit in its old bucket), unless\n"
    "                         --ring-only. Ring options may not be given with it.\n"
    "  --ring-only            with --from-buckets: use only the ring, read no rows\n"
    "New side (an explicit node set, or changes to the old one, or both):\n"
    "  --new-nodes N          nodes \"0\"..\"N-1\"\n"
    "  --new-nodes-file FILE  a node file\n"
    "  --add K                K nodes named after the last one (\"999\" -> \"1000\"...,\n"
    "                         \"db07\" -> \"db08\"...; a name without digits gets -1, -2...)\n"
    "  --add-names A,B        nodes with these names (weight 1)\n"
    "  --remove A,B           remove nodes (slots: marked down, so that the others\n"
    "                         keep their slots, as seed 001's dropBadNode)\n"
    "  --reweight NAME=W[,..] change a node's weight (ring, ketama)\n"
    "  --down NAMES           nodes listed but down, on both sides where listed\n"
    "Outputs (the summary goes to standard output):\n"
    "  --json FILE            the plan as JSON (schema: docs/plan.md)\n"
    "  --json-arcs            include every moving arc in --json\n"
    "  --arcs FILE            every moving arc as TSV: start end from to weight share\n"
    "  --pairs FILE           every (from, to) pair as CSV\n"
    "  --svg FILE             the flow matrix (from x to) and the summary as SVG\n"
    "  --html FILE            the same as a self-contained HTML page, with tables\n"
    "  --top N                pairs listed in the summary (default 10)\n"
    "  --strict               exit 3 if a move breaks the change's consistency property\n"
    "With data:\n"
    "  --emit DIR             write the moved rows, one <from>__<to>.csv.gz per pair,\n"
    "                         plus DIR/manifest.json (kind \"moves\"); rows that stay\n"
    "                         are not written\n"
    "  --force                replace an existing --emit DIR (a ringshard output or empty)\n"
    "  --force-any            replace an existing --emit DIR whatever it holds\n"
    "  --compress gzip|zstd|none  --emit files gzip (default), zstd or plain\n"
    "  --level N              level (default 1): gzip 1-9, zstd -131072 to 22 but 0\n"
    "  --batch-bytes SIZE     group the moves into numbered waves of at most SIZE bytes\n"
    "  --order smallest|largest  which moves go first (default smallest; --order\n"
    "                         signed|unsigned remains the ring option)\n"
    "  -h, --help             this help\n\n"
    "Exit: 0; 3 when rows of --from-buckets sit in the wrong bucket (then nothing is\n"
    "emitted) or, with --strict, when the consistency property is broken.\n\n";

enum {
    OPT_OLD_NODES = RS_OPT__FIRST_COMMAND, OPT_OLD_NODES_FILE, OPT_NEW_NODES, OPT_NEW_NODES_FILE, OPT_ADD,
    OPT_ADD_NAMES, OPT_REMOVE, OPT_REWEIGHT, OPT_FROM_BUCKETS, OPT_RING_ONLY, OPT_JSON, OPT_JSON_ARCS, OPT_ARCS,
    OPT_PAIRS, OPT_TOP, OPT_STRICT, OPT_EMIT, OPT_FORCE, OPT_BATCH_BYTES,
    OPT_WAVE_ORDER, OPT_SVG, OPT_HTML, OPT_FORCE_ANY
};

#define MAX_CHANGES 256

typedef struct {
    rs_cli_ring ro;
    const char *old_nodes, *old_nodes_file, *new_nodes, *new_nodes_file;
    unsigned long long add;
    const char *add_names[MAX_CHANGES], *remove[MAX_CHANGES], *reweight[MAX_CHANGES];
    int nadd_names, nremove, nreweight;
    const char *from_buckets;
    int ring_only;
    const char *json, *arcs, *pairs, *emit, *svg, *html;
    int json_arcs, strict, force;
    unsigned long long top, batch_bytes;
    int largest_first, have_order;
} plan_args;

/* ---------------------------------------------------------------- nodes */

static int for_each_name(const char *list, rs_nodes *nodes, const char *what,
                         int (*fn)(rs_nodes *, const char *, const char *, void *), void *ctx, rs_error *err)
{
    char *copy = strdup(list), *save = NULL;
    if (!copy)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    int rc = 0;
    for (char *name = strtok_r(copy, ",", &save); name && rc == 0; name = strtok_r(NULL, ",", &save))
        rc = fn(nodes, name, what, ctx);
    free(copy);
    return rc;
}

typedef struct {
    int slots;
    rs_error *err;
} remove_ctx;

static int do_remove(rs_nodes *nodes, const char *name, const char *what, void *ctx)
{
    remove_ctx *rc = ctx;
    (void)what;
    int64_t i = rs_nodes_find(nodes, name);
    if (i < 0 || nodes->down[i])
        return rs_error_set(rc->err, RS_EXIT_USAGE, "--remove: no node '%s' is up on the old side", name);
    return rc->slots ? rs_nodes_set_down(nodes, name, rc->err) : rs_nodes_remove(nodes, name, rc->err);
}

static int do_reweight(rs_nodes *nodes, const char *item, const char *what, void *ctx)
{
    rs_error *err = ctx;
    (void)what;
    const char *eq = strrchr(item, '=');
    if (!eq || eq == item)
        return rs_error_set(err, RS_EXIT_USAGE, "--reweight: expected NAME=WEIGHT, not '%s'", item);
    char name[4096];
    size_t n = (size_t)(eq - item);
    if (n >= sizeof name)
        return rs_error_set(err, RS_EXIT_USAGE, "--reweight: name too long");
    memcpy(name, item, n);
    name[n] = '\0';
    char *end;
    errno = 0;
    double w = strtod(eq + 1, &end);
    if (!eq[1] || *end || errno || !(w > 0) || !isfinite(w))
        return rs_error_set(err, RS_EXIT_USAGE, "--reweight: '%s' is not a positive weight", eq + 1);
    int64_t i = rs_nodes_find(nodes, name);
    if (i < 0)
        return rs_error_set(err, RS_EXIT_USAGE, "--reweight: no node '%s'", name);
    nodes->weights[i] = w;
    return 0;
}

static int apply_down(rs_nodes *old_nodes, rs_nodes *new_nodes, const char *list, rs_error *err)
{
    char *copy = strdup(list), *save = NULL;
    if (!copy)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    int rc = 0;
    for (char *name = strtok_r(copy, ",", &save); name && rc == 0; name = strtok_r(NULL, ",", &save)) {
        int64_t a = rs_nodes_find(old_nodes, name), b = new_nodes ? rs_nodes_find(new_nodes, name) : -1;
        if (a < 0 && b < 0)
            rc = rs_error_set(err, RS_EXIT_USAGE, "--down: no node '%s' on either side", name);
        if (a >= 0)
            old_nodes->down[a] = 1;
        if (b >= 0)
            new_nodes->down[b] = 1;
    }
    free(copy);
    return rc;
}

static int node_spec(const char *count, const char *file, rs_nodes *nodes, const char *what, rs_error *err)
{
    if (count && file)
        return rs_error_set(err, RS_EXIT_USAGE, "%s-nodes and %s-nodes-file exclude each other", what, what);
    if (file)
        return rs_nodes_load(nodes, file, err);
    unsigned long long n;
    char opt[32];
    snprintf(opt, sizeof opt, "%s-nodes", what);
    if (rs_cli_uint(opt, count, 1, 10000000, &n, err) != 0)
        return -1;
    return rs_nodes_init_count(nodes, (uint32_t)n, err);
}

/* Builds both rings. *bd is opened (and kept) with --from-buckets. */
static int build_rings(plan_args *a, rs_bucketdir *bd, rs_ring **old_ring, rs_ring **new_ring, rs_error *err)
{
    const rs_manifest *m = &bd->m;
    rs_ring_opts o;
    rs_nodes old_nodes = {0}, new_nodes = {0};
    int have_new = a->new_nodes || a->new_nodes_file;
    int changes = a->add || a->nadd_names || a->nremove || a->nreweight;
    int rc = -1;
    if (!have_new && !changes)
        return rs_error_set(err, RS_EXIT_USAGE,
                            "no new side: give --new-nodes, --new-nodes-file or a change (--add, --add-names, "
                            "--remove, --reweight)");
    if (a->from_buckets) {
        if (rs_cli_ring_given(&a->ro) || a->old_nodes || a->old_nodes_file)
            return rs_error_set(err, RS_EXIT_USAGE,
                                "--from-buckets takes the old ring from %s/manifest.json: no ring or old-node options",
                                a->from_buckets);
        /* the directory is opened once: its files are read through it */
        int opened = rs_bucketdir_open(bd, a->from_buckets, err);
        if (rs_cluster_same_dir(bd, err) != 0 || opened != 0)  /* collective: every rank calls it */
            return -1;
        if (strcmp(m->kind, "buckets") != 0)
            return rs_error_set(err, RS_EXIT_USAGE, "--from-buckets: %s holds '%s', not buckets", a->from_buckets,
                                m->kind);
        if (rs_ring_parse_description(m->ring_description, &o, &old_nodes, err) != 0)
            return -1;
    } else {
        rs_cli_ring ro = a->ro;
        ro.nodes = a->old_nodes;
        ro.nodes_file = a->old_nodes_file;
        ro.down = NULL;
        if (ro.nodes && ro.nodes_file)
            return rs_error_set(err, RS_EXIT_USAGE, "--old-nodes and --old-nodes-file exclude each other");
        if (rs_cli_ring_finish(&ro, &o, &old_nodes, err) != 0)
            return -1;
    }
    if (have_new) {
        if (node_spec(a->new_nodes, a->new_nodes_file, &new_nodes, "--new", err) != 0)
            goto out;
    } else if (rs_nodes_copy(&new_nodes, &old_nodes, err) != 0) {
        goto out;
    }
    if (a->ro.down && apply_down(&old_nodes, &new_nodes, a->ro.down, err) != 0)
        goto out;
    remove_ctx rmc = {o.scheme == RS_SCHEME_SLOTS, err};
    for (int k = 0; k < a->nremove; k++)
        if (for_each_name(a->remove[k], &new_nodes, "--remove", do_remove, &rmc, err) != 0)
            goto out;
    for (int k = 0; k < a->nreweight; k++)
        if (for_each_name(a->reweight[k], &new_nodes, "--reweight", do_reweight, err, err) != 0)
            goto out;
    for (int k = 0; k < a->nadd_names; k++)
        if (rs_cli_add_names(&new_nodes, a->add_names[k], err) != 0)
            goto out;
    if (a->add && rs_cli_add_nodes(&new_nodes, (uint32_t)a->add, err) != 0)
        goto out;
    if (!(*old_ring = rs_ring_build(&o, &old_nodes, err)))
        goto out;
    if (!(*new_ring = rs_ring_build(&o, &new_nodes, err))) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        rs_error_clear(err);
        rs_error_set(err, RS_EXIT_USAGE, "new ring: %s", msg);
        goto out;
    }
    rc = 0;
out:
    rs_nodes_free(&old_nodes);
    rs_nodes_free(&new_nodes);
    return rc;
}

/* ---------------------------------------------------------------- data */

typedef struct {
    uint64_t *keys, *bytes;    /* [npairs + 1]: the last one counts rows that stay */
    uint64_t *mismatch;        /* [ninputs] */
    uint64_t *in_rows, *in_bytes; /* [ninputs]: every row routed, by input (conservation) */
    uint64_t mismatch_bytes;
    uint64_t unknown;
    char pad[64];
} thread_counts;

typedef struct {
    const rs_plan *plan;
    uint32_t npairs;
    const uint32_t *input_node; /* --from-buckets: input -> old node index */
    int emit;
    thread_counts *tc;
} route_ctx;

static uint32_t route_plan(void *vctx, int tid, uint32_t input, const char *key, size_t keylen, const char *row,
                           size_t rowlen)
{
    route_ctx *c = vctx;
    thread_counts *t = &c->tc[tid];
    const rs_plan *p = c->plan;
    (void)row;
    t->in_rows[input]++;
    t->in_bytes[input] += rowlen + 1;
    uint64_t pos = rs_ring_position(p->old_ring, key, keylen);
    uint32_t o = rs_ring_owner(p->old_ring, pos);
    if (c->input_node && o != c->input_node[input]) {
        t->mismatch[input]++;
        t->mismatch_bytes += rowlen + 1;
        return RS_ROUTE_DROP;
    }
    uint32_t n = rs_ring_owner(p->new_ring, pos);
    uint32_t k = c->npairs;
    if (p->old_to_new[o] != n) {
        k = rs_plan_pair_find(p, o, n);
        if (k == RS_PLAN_NONE) {
            t->unknown++;
            return RS_ROUTE_DROP;
        }
    }
    t->keys[k]++;
    t->bytes[k] += rowlen + 1;
    return c->emit && k < c->npairs ? k : RS_ROUTE_DROP;
}

typedef struct {
    int have;                  /* data was read */
    uint64_t rows, bytes;      /* every row read (bytes: row + LF) */
    uint64_t moved_rows, moved_bytes;
    uint64_t *keys, *bytes_of; /* per pair */
    uint64_t *mismatch;        /* per input */
    uint64_t mismatches;
    uint32_t *wave;            /* per pair, with --batch-bytes */
    uint32_t nwaves;
    size_t ninputs;
    const char *const *inputs;
    char **input_labels;       /* --from-buckets: file names */
    const size_t *input_files; /* --from-buckets: input -> index in the manifest's files */
    const char **input_nodes;
    double seconds;
    int emitted;
} data_result;

/* The file names of the emitted pairs: "<from>__<to>.csv[.gz]", made unique. */
static char **pair_file_names(const rs_plan *p, int compress, rs_error *err)
{
    char **names = calloc(p->npairs ? p->npairs : 1, sizeof *names);
    if (!names) {
        rs_error_set(err, RS_EXIT_IO, "out of memory");
        return NULL;
    }
    const rs_nodes *a = rs_ring_nodes(p->old_ring), *b = rs_ring_nodes(p->new_ring);
    for (size_t k = 0; k < p->npairs; k++)
        if (!(names[k] = rs_cli_data_file(a->names[p->pairs[k].from], b->names[p->pairs[k].to], compress))) {
            rs_cli_free_strings(names, k);
            rs_error_set(err, RS_EXIT_IO, "out of memory");
            return NULL;
        }
    /* Names containing "__" could collide: suffix duplicates with ~2, ~3... */
    for (size_t k = 1; k < p->npairs; k++)
        for (size_t q = 0; q < k; q++)
            if (!strcmp(names[k], names[q])) {
                size_t n = strlen(names[k]) + 24;
                char *u = malloc(n);
                if (!u)
                    break;
                const char *ext = rs_cli_data_ext(compress);
                size_t stem = strlen(names[k]) - strlen(ext);
                snprintf(u, n, "%.*s~%zu%s", (int)stem, names[k], k, ext);
                free(names[k]);
                names[k] = u;
                q = (size_t)-1;  /* recheck from the start */
            }
    return names;
}

/* Conservation, checked after every data run (before --emit publishes):
 * per input, the rows and bytes the reader delivered are the rows and
 * bytes routed from it; in total, rows and bytes read = moved (emitted with
 * --emit, checked per pair after this) + stay + rows on the wrong node
 * (--from-buckets; nothing is emitted then). Rejected rows
 * (--on-bad-row skip) are outside both sides and only reported. */
static int check_conservation(const rs_pipeline_opts *po, const rs_pipeline_result *res, const thread_counts *tc,
                              int T, uint32_t npairs, const data_result *d, rs_error *err)
{
    uint64_t in_rows = 0, in_bytes = 0, rejected = 0, mismatch_bytes = 0;
    for (size_t i = 0; i < po->ninputs; i++) {
        uint64_t r = 0, b = 0;
        for (int t = 0; t < T; t++)
            r += tc[t].in_rows[i], b += tc[t].in_bytes[i];
        if (r != res->input[i].rows || b != res->input[i].bytes)
            return rs_error_set(err, RS_EXIT_IO,
                                "internal error: rows/bytes not conserved (%s: read %llu/%llu, routed %llu/%llu); "
                                "nothing published",
                                res->input[i].path, (unsigned long long)res->input[i].rows,
                                (unsigned long long)res->input[i].bytes, (unsigned long long)r,
                                (unsigned long long)b);
        in_rows += r;
        in_bytes += b;
        rejected += res->input[i].rejected;
    }
    for (int t = 0; t < T; t++)
        mismatch_bytes += tc[t].mismatch_bytes;
    uint64_t stay_rows = d->keys[npairs], stay_bytes = d->bytes_of[npairs];
    if (in_rows != res->rows || in_rows != d->moved_rows + stay_rows + d->mismatches ||
        in_bytes != d->moved_bytes + stay_bytes + mismatch_bytes || rejected != res->rejected)
        return rs_error_set(err, RS_EXIT_IO,
                            "internal error: rows/bytes not conserved (in %llu/%llu, moved %llu/%llu, stay %llu/%llu, "
                            "on the wrong node %llu/%llu, rejected %llu rows); nothing published",
                            (unsigned long long)in_rows, (unsigned long long)in_bytes,
                            (unsigned long long)d->moved_rows, (unsigned long long)d->moved_bytes,
                            (unsigned long long)stay_rows, (unsigned long long)stay_bytes,
                            (unsigned long long)d->mismatches, (unsigned long long)mismatch_bytes,
                            (unsigned long long)rejected);
    return 0;
}

static int run_data(const plan_args *a, rs_pipeline_opts *po, const rs_plan *p, const rs_bucketdir *bd, int quiet,
                    data_result *d, rs_error *err)
{
    const rs_manifest *m = bd ? &bd->m : NULL;
    uint32_t npairs = (uint32_t)p->npairs;
    const rs_nodes *old_nodes = rs_ring_nodes(p->old_ring);
    char **files = NULL, **names = NULL;
    uint32_t *input_node = NULL;
    rs_outdir od = {0};
    rs_cluster_quarantine q = {0};
    int begun = 0, rc = -1;
    rs_pipeline_result res = {0};
    rs_manifest em = {0};
    route_ctx rc_ctx = {p, npairs, NULL, a->emit != NULL, NULL};
    int T = rs_pipeline_threads(po);
    thread_counts *tc = calloc((size_t)T, sizeof *tc);
    if (!tc) {
        rs_error_set(err, RS_EXIT_IO, "out of memory");
        goto agree;
    }
    if (!p->pairs_complete) {
        rs_error_set(err, RS_EXIT_USAGE,
                     "this change has too many (from, to) pairs to count (more than %u): no data mode",
                     RS_PLAN_MAX_PAIRS);
        goto agree;
    }
    if (m) {
        input_node = malloc((po->ninputs ? po->ninputs : 1) * sizeof *input_node);
        if (!input_node) {
            rs_error_set(err, RS_EXIT_IO, "out of memory");
            goto agree;
        }
        for (size_t i = 0; i < po->ninputs; i++) {
            int64_t k = rs_nodes_find(old_nodes, d->input_nodes[i]);
            if (k < 0) {
                rs_error_set(err, RS_EXIT_DATA, "%s/manifest.json: file %s belongs to node '%s', not on its ring",
                             a->from_buckets, d->input_labels[i], d->input_nodes[i]);
                goto agree;
            }
            input_node[i] = (uint32_t)k;
        }
        rc_ctx.input_node = input_node;
    }
    for (int t = 0; t < T && !err->code; t++) {
        tc[t].keys = calloc(npairs + 1, sizeof(uint64_t));
        tc[t].bytes = calloc(npairs + 1, sizeof(uint64_t));
        tc[t].mismatch = calloc(po->ninputs ? po->ninputs : 1, sizeof(uint64_t));
        tc[t].in_rows = calloc(po->ninputs ? po->ninputs : 1, sizeof(uint64_t));
        tc[t].in_bytes = calloc(po->ninputs ? po->ninputs : 1, sizeof(uint64_t));
        if (!tc[t].keys || !tc[t].bytes || !tc[t].mismatch || !tc[t].in_rows || !tc[t].in_bytes) {
            rs_error_set(err, RS_EXIT_IO, "out of memory");
            goto agree;
        }
    }
    /* under MPI, a failure so far on any rank stops every rank here */
agree:
    if (rs_world_agree(err) != 0)
        goto out;
    rc_ctx.tc = tc;
    po->ndest = npairs ? npairs : 1;
    po->route = route_plan;
    po->route_ctx = &rc_ctx;
    if (a->emit) {
        /* no pairs: the pipeline still wants a destination; it is removed below */
        static const char *const no_moves[] = {"no-moves.tmp"};
        if (!err->code)
            rs_cli_threads_ready(rs_pipeline_threads(po), err);
        if (rs_cluster_outdir_begin(&od, a->emit, a->force, err) != 0)
            goto out;
        begun = 1;
        if ((names = pair_file_names(p, po->compress, err)))
            files = rs_cli_outdir_paths(&od, npairs ? (const char *const *)names : no_moves, po->ndest, err);
        po->dest_paths = (const char *const *)files;
        po->write_behind = 1;
        if (rs_world_agree(err) != 0)
            goto out;
    }
    if (rs_cluster_quarantine_begin(po, a->emit ? &od : NULL, &q, err) != 0 ||
        rs_cluster_pipeline_run(po, &res, err) != 0)
        goto out;
    /* Every file read is what the manifest says it is (rows, bytes, CRC-32,
     * header; placement is counted by route_plan), before anything is
     * counted as moved or published. */
    for (size_t i = 0; bd && i < po->ninputs; i++)
        if (rs_bucketdir_check_file(bd, d->input_files[i], &res.input[i], 1, res.header, err) != 0)
            goto out;
    /* Under MPI each rank counted its own inputs: one thread's counters
     * take every thread's, then the ranks' are summed. */
    for (int t = 1; t < T; t++) {
        for (uint32_t k = 0; k <= npairs; k++) {
            tc[0].keys[k] += tc[t].keys[k], tc[t].keys[k] = 0;
            tc[0].bytes[k] += tc[t].bytes[k], tc[t].bytes[k] = 0;
        }
        for (size_t i = 0; i < po->ninputs; i++) {
            tc[0].mismatch[i] += tc[t].mismatch[i], tc[t].mismatch[i] = 0;
            tc[0].in_rows[i] += tc[t].in_rows[i], tc[t].in_rows[i] = 0;
            tc[0].in_bytes[i] += tc[t].in_bytes[i], tc[t].in_bytes[i] = 0;
        }
        tc[0].mismatch_bytes += tc[t].mismatch_bytes, tc[t].mismatch_bytes = 0;
        tc[0].unknown += tc[t].unknown, tc[t].unknown = 0;
    }
    rs_world_sum_u64(tc[0].keys, npairs + 1);
    rs_world_sum_u64(tc[0].bytes, npairs + 1);
    rs_world_sum_u64(tc[0].mismatch, po->ninputs);
    rs_world_sum_u64(tc[0].in_rows, po->ninputs);
    rs_world_sum_u64(tc[0].in_bytes, po->ninputs);
    rs_world_sum_u64(&tc[0].mismatch_bytes, 1);
    rs_world_sum_u64(&tc[0].unknown, 1);
    d->have = 1;
    d->seconds = res.seconds;
    d->keys = calloc(npairs + 1, sizeof *d->keys);
    d->bytes_of = calloc(npairs + 1, sizeof *d->bytes_of);
    d->mismatch = calloc(po->ninputs ? po->ninputs : 1, sizeof *d->mismatch);
    if (!d->keys || !d->bytes_of || !d->mismatch) {
        rs_error_set(err, RS_EXIT_IO, "out of memory");
        goto out;
    }
    uint64_t unknown = 0;
    for (int t = 0; t < T; t++) {
        for (uint32_t k = 0; k <= npairs; k++) {
            d->keys[k] += tc[t].keys[k];
            d->bytes_of[k] += tc[t].bytes[k];
        }
        for (size_t i = 0; i < po->ninputs; i++)
            d->mismatch[i] += tc[t].mismatch[i];
        unknown += tc[t].unknown;
    }
    if (unknown) {
        rs_error_set(err, RS_EXIT_IO, "internal error: %llu keys moved along a pair the diff does not have",
                     (unsigned long long)unknown);
        goto out;
    }
    for (uint32_t k = 0; k < npairs; k++) {
        d->moved_rows += d->keys[k];
        d->moved_bytes += d->bytes_of[k];
    }
    for (size_t i = 0; i < po->ninputs; i++)
        d->mismatches += d->mismatch[i];
    d->rows = res.rows;
    d->bytes = res.bytes;
    if (check_conservation(po, &res, tc, T, npairs, d, err) != 0)
        goto out;
    d->ninputs = po->ninputs;
    if (a->batch_bytes) {
        d->wave = calloc(npairs ? npairs : 1, sizeof *d->wave);
        if (!d->wave) {
            rs_error_set(err, RS_EXIT_IO, "out of memory");
            goto out;
        }
        d->nwaves = rs_plan_waves(d->bytes_of, npairs, a->batch_bytes, a->largest_first, d->wave);
    }
    if (!a->emit) {
        rc = 0;
        goto out;
    }
    if (d->mismatches) {
        /* A migration from a directory that does not match its ring is not emitted. */
        rc = 0;
        goto out;
    }
    /* conservation: every moved row was written once */
    uint64_t written = 0, written_bytes = 0;
    for (uint32_t k = 0; k < npairs; k++) {
        written += res.dest[k].rows;
        written_bytes += res.dest[k].bytes;
        if (res.dest[k].rows != d->keys[k] || (!po->keys_only && res.dest[k].bytes != d->bytes_of[k])) {
            rs_error_set(err, RS_EXIT_IO,
                         "internal error: rows/bytes not conserved (pair %u: moved %llu/%llu, written %llu/%llu); "
                         "nothing published",
                         k, (unsigned long long)d->keys[k], (unsigned long long)d->bytes_of[k],
                         (unsigned long long)res.dest[k].rows, (unsigned long long)res.dest[k].bytes);
            goto out;
        }
    }
    if (written != d->moved_rows || (!po->keys_only && written_bytes != d->moved_bytes)) {
        rs_error_set(err, RS_EXIT_IO,
                     "internal error: rows/bytes not conserved (moved %llu/%llu, written %llu/%llu); "
                     "nothing published",
                     (unsigned long long)d->moved_rows, (unsigned long long)d->moved_bytes,
                     (unsigned long long)written, (unsigned long long)written_bytes);
        goto out;
    }
    /* manifest: only the pairs that moved rows; empty files are removed */
    if (rs_cli_manifest_start(&em, "moves", p->old_ring, po, &res, npairs, err) != 0)
        goto out;
    em.new_ring_description = (char *)rs_ring_description(p->new_ring);
    em.new_ring_fingerprint = (char *)rs_ring_fingerprint(p->new_ring);
    em.keys_only = po->keys_only || (m && m->keys_only);
    const rs_nodes *new_nodes = rs_ring_nodes(p->new_ring);
    for (uint32_t k = 0; k < po->ndest && !err->code; k++) {
        if (k < npairs && res.dest[k].rows) {
            const rs_dest_stats *ds = &res.dest[k];
            em.files[em.nfiles++] = (rs_manifest_file){names[k], NULL, old_nodes->names[p->pairs[k].from],
                                                       new_nodes->names[p->pairs[k].to], ds->rows, ds->bytes,
                                                       ds->file_bytes, ds->crc, d->wave ? d->wave[k] : 0};
        } else if (rs_world_rank() == 0 && unlink(files[k]) != 0) {
            rs_error_set(err, RS_EXIT_IO, "%s: cannot remove: %s", files[k], strerror(errno));
        }
    }
    em.rows = written;
    em.bytes = d->moved_bytes;
    if (rs_world_rank() == 0 && !err->code)
        rs_cli_outdir_manifest(&od, &em, err);
    begun = 0;
    if (rs_cluster_outdir_end(&od, err) != 0)
        goto out;
    d->emitted = 1;
    rc = 0;
out:
    if (!quiet && d->have && rs_world_rank() == 0)
        fprintf(stderr, "ringshard plan: %llu rows read in %.2f s (%.2f M rows/s)\n", (unsigned long long)res.rows,
                res.seconds, res.seconds > 0 ? res.rows / res.seconds / 1e6 : 0);
    if (begun)
        rs_cluster_outdir_abort(&od);
    rs_cluster_quarantine_end(&q, rc == 0, err);   /* without --emit, published here if all went well */
    for (int t = 0; tc && t < T; t++) {
        free(tc[t].keys);
        free(tc[t].bytes);
        free(tc[t].mismatch);
        free(tc[t].in_rows);
        free(tc[t].in_bytes);
    }
    free(tc);
    free(input_node);
    free(em.inputs);
    free(em.files);
    rs_cli_free_strings(files, po->ndest);
    rs_cli_free_strings(names, npairs);
    rs_pipeline_result_free(&res);
    return rc;
}

/* ---------------------------------------------------------------- output */

static const char *check_name(rs_plan_check c)
{
    switch (c) {
    case RS_PLAN_CHECK_ADD: return "add";
    case RS_PLAN_CHECK_REMOVE: return "remove";
    case RS_PLAN_CHECK_MIXED: return "mixed";
    default: return "none";
    }
}

static const char *check_property(rs_plan_check c)
{
    switch (c) {
    case RS_PLAN_CHECK_ADD: return "every move goes to an added node";
    case RS_PLAN_CHECK_REMOVE: return "every move comes from a removed node";
    case RS_PLAN_CHECK_MIXED: return "every move touches a changed node (added, removed or reweighted)";
    default: return "nothing moves (no node changed)";
    }
}

static int equal_weights(const rs_nodes *n)
{
    for (uint32_t i = 0; i < n->count; i++)
        if (!n->down[i] && n->weights[i] != 1.0)
            return 0;
    return 1;
}

static uint32_t up_count(const rs_nodes *n)
{
    uint32_t up = 0;
    for (uint32_t i = 0; i < n->count; i++)
        up += !n->down[i];
    return up;
}

/* The ideal's rule in words, e.g. "k/(N+k) = 10/1010". */
static void ideal_rule(const rs_plan *p, char *buf, size_t cap)
{
    const rs_nodes *a = rs_ring_nodes(p->old_ring), *b = rs_ring_nodes(p->new_ring);
    int eq = equal_weights(a) && equal_weights(b);
    uint32_t N = up_count(a);
    if (eq && p->check == RS_PLAN_CHECK_ADD)
        snprintf(buf, cap, "k/(N+k) = %u/%u", p->nadded, N + p->nadded);
    else if (eq && p->check == RS_PLAN_CHECK_REMOVE)
        snprintf(buf, cap, "k/N = %u/%u", p->nremoved, N);
    else
        snprintf(buf, cap, "sum over nodes of max(0, old ideal share - new ideal share)");
}

static const char *points_word(const rs_ring *r, char *buf, size_t cap)
{
    if (rs_ring_has_points(r))
        snprintf(buf, cap, "%u points", rs_ring_npoints(r));
    else
        snprintf(buf, cap, "no points");
    return buf;
}

static double pct(double x) { return 100.0 * x; }

typedef struct {
    const rs_plan *p;
    const data_result *d;
} rank_ctx;

static rank_ctx g_rank;

static int cmp_rank(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    const rs_plan_pair *pa = &g_rank.p->pairs[a], *pb = &g_rank.p->pairs[b];
    if (g_rank.d && g_rank.d->have && g_rank.d->bytes_of[a] != g_rank.d->bytes_of[b])
        return g_rank.d->bytes_of[a] > g_rank.d->bytes_of[b] ? -1 : 1;
    if (pa->weight != pb->weight)
        return pa->weight > pb->weight ? -1 : 1;
    return (a > b) - (a < b);
}

static void print_summary(FILE *f, const plan_args *a, const rs_plan *p, const data_result *d, double build_s,
                          double diff_s)
{
    const rs_ring *A = p->old_ring, *B = p->new_ring;
    const rs_nodes *an = rs_ring_nodes(A), *bn = rs_ring_nodes(B);
    char b1[48], b2[48], rule[160];
    fprintf(f, "ringshard plan: %s scheme, %u -> %u nodes up (%u added, %u removed, %u reweighted)\n",
            rs_scheme_name(rs_ring_get_opts(A)->scheme), up_count(an), up_count(bn), p->nadded, p->nremoved,
            p->nreweighted);
    fprintf(f, "  old ring     %s  %u nodes, %s\n", rs_ring_fingerprint(A), an->count, points_word(A, b1, sizeof b1));
    fprintf(f, "  new ring     %s  %u nodes, %s\n", rs_ring_fingerprint(B), bn->count, points_word(B, b2, sizeof b2));
    switch (p->method) {
    case RS_PLAN_EXACT_ARCS:
        fprintf(f, "  method       exact: merged %u + %u points into %zu moving arcs (%.3f s to build the rings, "
                   "%.3f s to diff)\n",
                rs_ring_npoints(A), rs_ring_npoints(B), p->narcs, build_s, diff_s);
        break;
    case RS_PLAN_EXACT_RESIDUES:
        fprintf(f, "  method       exact: modulo has no arcs; residue pairs counted over the %s hash values\n",
                rs_u128_str(p->total, b1));
        break;
    default:
        fprintf(f, "  method       expected: jump has no arcs; by its rule a key changes bucket with probability "
                   "|M-N|/max(M,N)\n");
    }
    fprintf(f, "  moved        %.6f%% of the hash space%s (%s of %s hash values)\n", pct(p->moved_share),
            p->method == RS_PLAN_EXPECTED ? ", expected" : "", rs_u128_str(p->moved, b1), rs_u128_str(p->total, b2));
    ideal_rule(p, rule, sizeof rule);
    fprintf(f, "  ideal        %.6f%% = %s: the least any placement could move (moved/ideal %.4f)\n",
            pct(p->ideal_share), rule, p->ideal_share > 0 ? p->moved_share / p->ideal_share : NAN);
    fprintf(f, "  floor        %.6f%%: the least any placement could move between these two rings' %s shares "
               "(excess churn %.6f%%)\n",
            pct(p->floor_share), p->shares_exact ? "exact" : "expected", pct(p->moved_share - p->floor_share));
    if (p->pairs_complete)
        fprintf(f, "  pairs        %zu (from, to) pairs\n", p->npairs);
    else
        fprintf(f, "  pairs        more than %u (from, to) pairs: not listed\n", RS_PLAN_MAX_PAIRS);
    fprintf(f, "  balance      max/mean %.4f before, %.4f after%s\n", p->balance_old, p->balance_new,
            p->shares_exact ? "" : " (expected shares)");
    /* consistency */
    if (!p->pairs_complete)
        fprintf(f, "  consistency  not checked: pairs not listed\n");
    else if (!p->nviolations)
        fprintf(f, "  consistency  OK: %s\n", check_property(p->check));
    else {
        fprintf(f, "  consistency  VIOLATED: %s does not hold for %zu pairs (%.6f%% of the hash space):\n",
                check_property(p->check), p->nviolations, pct((double)p->violation_weight / (double)p->total));
        size_t shown = 0;
        for (size_t k = 0; k < p->npairs; k++) {
            if (!p->pairs[k].violation)
                continue;
            if (shown == (a->top > 20 ? a->top : 20)) {
                fprintf(f, "    ... and %zu more (all in --pairs and --json)\n", p->nviolations - shown);
                break;
            }
            fprintf(f, "    %s -> %s  %.6f%%\n", an->names[p->pairs[k].from], bn->names[p->pairs[k].to],
                    pct(p->pairs[k].share));
            shown++;
        }
    }
    if (d && d->have) {
        fprintf(f, "  data         %llu/%llu keys (%.4f%%) and %llu/%llu bytes (%.4f%%) to move\n",
                (unsigned long long)d->moved_rows, (unsigned long long)d->rows,
                d->rows ? pct((double)d->moved_rows / d->rows) : 0.0, (unsigned long long)d->moved_bytes,
                (unsigned long long)d->bytes, d->bytes ? pct((double)d->moved_bytes / d->bytes) : 0.0);
        if (d->nwaves)
            fprintf(f, "  waves        %u waves of at most %llu bytes, %s moves first\n", d->nwaves,
                    (unsigned long long)a->batch_bytes, a->largest_first ? "largest" : "smallest");
        if (d->mismatches) {
            fprintf(f, "  MISMATCH     %llu rows sit in a bucket their old ring does not assign:\n",
                    (unsigned long long)d->mismatches);
            for (size_t i = 0; i < d->ninputs; i++)
                if (d->mismatch[i])
                    fprintf(f, "    %s (node %s): %llu rows\n", d->input_labels[i], d->input_nodes[i],
                            (unsigned long long)d->mismatch[i]);
            if (a->emit)
                fprintf(f, "    nothing emitted: fix the buckets first (ringshard verify %s)\n", a->from_buckets);
        }
        if (d->emitted)
            fprintf(f, "  emitted      %s\n", a->emit);
    }
    /* the largest pairs */
    size_t top = a->top < p->npairs ? (size_t)a->top : p->npairs;
    if (top) {
        uint32_t *idx = malloc(p->npairs * sizeof *idx);
        if (!idx)
            return;
        for (size_t k = 0; k < p->npairs; k++)
            idx[k] = (uint32_t)k;
        g_rank = (rank_ctx){p, d};
        qsort(idx, p->npairs, sizeof *idx, cmp_rank);
        fprintf(f, "\n  largest moves (%zu of %zu pairs):\n", top, p->npairs);
        int data = d && d->have;
        fprintf(f, "    %-16s %-16s %12s %8s", "from", "to", "share", "arcs");
        if (data)
            fprintf(f, " %12s %14s", "keys", "bytes");
        if (data && d->nwaves)
            fprintf(f, " %6s", "wave");
        fputc('\n', f);
        for (size_t k = 0; k < top; k++) {
            const rs_plan_pair *q = &p->pairs[idx[k]];
            fprintf(f, "    %-16s %-16s %11.6f%% %8llu", an->names[q->from], bn->names[q->to], pct(q->share),
                    (unsigned long long)q->arcs);
            if (data)
                fprintf(f, " %12llu %14llu", (unsigned long long)d->keys[idx[k]],
                        (unsigned long long)d->bytes_of[idx[k]]);
            if (data && d->nwaves)
                fprintf(f, " %6u", d->wave[idx[k]]);
            fputc('\n', f);
        }
        free(idx);
    }
}

static void csv_field(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    putc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            putc('"', f);
        putc(*s, f);
    }
    putc('"', f);
}

/* The plan's files are published whole (ringshard/outfile.h): a failed or
 * killed run leaves a previous --json, --pairs, --arcs, --svg or --html as
 * it was. One file is open at a time. */
static rs_outfile out_file;

/* Publishes the open file; wrote: its writer's result (non-zero: a write
 * failed, and the file is dropped instead). */
static int close_file(FILE *f, const char *path, int wrote, rs_error *err)
{
    (void)f;
    if (wrote != 0 || ferror(out_file.f)) {
        int e = errno;
        rs_outfile_abort(&out_file);
        return rs_error_set(err, RS_EXIT_IO, "%s: write failed: %s", path, strerror(e ? e : EIO));
    }
    return rs_outfile_commit(&out_file, err);
}

static FILE *open_out(const char *path, rs_error *err)
{
    return rs_outfile_open(&out_file, path, err);
}

static void tsv_name(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '\\': fputs("\\\\", f); break;
        case '\t': fputs("\\t", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        default: putc(*s, f);
        }
    }
}

static int write_arcs(const char *path, const rs_plan *p, rs_error *err)
{
    FILE *f = open_out(path, err);
    if (!f)
        return -1;
    const rs_nodes *an = rs_ring_nodes(p->old_ring), *bn = rs_ring_nodes(p->new_ring);
    char s[48], e[48], w[48];
    fputs("start\tend\tfrom\tto\tweight\tshare\n", f);
    for (size_t k = 0; k < p->narcs; k++) {
        const rs_plan_arc *r = &p->arcs[k];
        rs_u128_str(r->start, s);
        rs_u128_str((rs_u128)r->last + 1, e);
        rs_u128_str(r->weight, w);
        fprintf(f, "%s\t%s\t", s, e);
        tsv_name(f, an->names[r->from]);
        putc('\t', f);
        tsv_name(f, bn->names[r->to]);
        fprintf(f, "\t%s\t%.17g\n", w, (double)r->weight / (double)p->total);
    }
    return close_file(f, path, 0, err);
}

static int write_pairs(const char *path, const rs_plan *p, const data_result *d, rs_error *err)
{
    FILE *f = open_out(path, err);
    if (!f)
        return -1;
    const rs_nodes *an = rs_ring_nodes(p->old_ring), *bn = rs_ring_nodes(p->new_ring);
    char w[48];
    int data = d && d->have;
    fputs("from,to,weight,share,arcs,keys,bytes,wave,violation\n", f);
    for (size_t k = 0; k < p->npairs; k++) {
        const rs_plan_pair *q = &p->pairs[k];
        csv_field(f, an->names[q->from]);
        putc(',', f);
        csv_field(f, bn->names[q->to]);
        fprintf(f, ",%s,%.17g,%llu,", rs_u128_str(q->weight, w), q->share, (unsigned long long)q->arcs);
        if (data)
            fprintf(f, "%llu,%llu", (unsigned long long)d->keys[k], (unsigned long long)d->bytes_of[k]);
        else
            fputc(',', f);
        putc(',', f);
        if (data && d->wave)
            fprintf(f, "%u", d->wave[k]);
        fprintf(f, ",%d\n", q->violation);
    }
    return close_file(f, path, 0, err);
}

static void json_u128(rs_json *j, const char *key, rs_u128 v)
{
    char b[48];
    rs_json_key(j, key);
    rs_json_string(j, rs_u128_str(v, b));
}

static void json_ring(rs_json *j, const char *key, const rs_ring *r, double balance)
{
    const rs_nodes *n = rs_ring_nodes(r);
    rs_json_key(j, key);
    rs_json_object_begin(j);
    rs_json_key(j, "fingerprint");
    rs_json_string(j, rs_ring_fingerprint(r));
    rs_json_key(j, "scheme");
    rs_json_string(j, rs_scheme_name(rs_ring_get_opts(r)->scheme));
    rs_json_key(j, "nodes");
    rs_json_u64(j, n->count);
    rs_json_key(j, "up");
    rs_json_u64(j, up_count(n));
    rs_json_key(j, "points");
    rs_json_u64(j, rs_ring_npoints(r));
    rs_json_key(j, "balance");
    rs_json_double(j, balance);
    rs_json_key(j, "description");
    rs_json_string(j, rs_ring_description(r));
    rs_json_object_end(j);
}

static int write_json(const char *path, const plan_args *a, const rs_plan *p, const data_result *d, rs_error *err)
{
    FILE *f = open_out(path, err);
    if (!f)
        return -1;
    const rs_nodes *an = rs_ring_nodes(p->old_ring), *bn = rs_ring_nodes(p->new_ring);
    char rule[160];
    rs_json j;
    rs_json_init(&j, f, 1);
    rs_json_object_begin(&j);
    rs_json_key(&j, "schema");
    rs_json_string(&j, "ringshard-plan");
    rs_json_key(&j, "version");
    rs_json_u64(&j, 1);
    rs_json_key(&j, "tool");
    rs_json_object_begin(&j);
    rs_json_key(&j, "name");
    rs_json_string(&j, "ringshard");
    rs_json_key(&j, "version");
    rs_json_string(&j, RS_VERSION);
    rs_json_object_end(&j);
    rs_json_key(&j, "method");
    rs_json_string(&j, rs_plan_method_name(p->method));
    json_ring(&j, "old_ring", p->old_ring, p->balance_old);
    json_ring(&j, "new_ring", p->new_ring, p->balance_new);

    rs_json_key(&j, "change");
    rs_json_object_begin(&j);
    rs_json_key(&j, "kind");
    rs_json_string(&j, check_name(p->check));
    rs_json_key(&j, "added");
    rs_json_array_begin(&j);
    for (uint32_t k = 0; k < p->nadded; k++)
        rs_json_string(&j, bn->names[p->added[k]]);
    rs_json_array_end(&j);
    rs_json_key(&j, "removed");
    rs_json_array_begin(&j);
    for (uint32_t k = 0; k < p->nremoved; k++)
        rs_json_string(&j, an->names[p->removed[k]]);
    rs_json_array_end(&j);
    rs_json_key(&j, "reweighted");
    rs_json_array_begin(&j);
    for (uint32_t k = 0; k < p->nreweighted; k++) {
        uint32_t i = p->reweighted[k];
        rs_json_object_begin(&j);
        rs_json_key(&j, "node");
        rs_json_string(&j, an->names[i]);
        rs_json_key(&j, "old_weight");
        rs_json_double(&j, an->weights[i]);
        rs_json_key(&j, "new_weight");
        rs_json_double(&j, bn->weights[p->old_to_new[i]]);
        rs_json_object_end(&j);
    }
    rs_json_array_end(&j);
    rs_json_object_end(&j);

    rs_json_key(&j, "space");
    rs_json_object_begin(&j);
    json_u128(&j, "positions", rs_ring_space(p->old_ring));
    json_u128(&j, "total_weight", p->total);
    rs_json_object_end(&j);

    rs_json_key(&j, "moved");
    rs_json_object_begin(&j);
    json_u128(&j, "weight", p->moved);
    rs_json_key(&j, "share");
    rs_json_double(&j, p->moved_share);
    rs_json_key(&j, "exact");
    rs_json_bool(&j, p->method != RS_PLAN_EXPECTED);
    rs_json_key(&j, "pairs");
    if (p->pairs_complete)
        rs_json_u64(&j, p->npairs);
    else
        rs_json_null(&j);
    rs_json_key(&j, "arcs");
    rs_json_u64(&j, p->narcs);
    rs_json_object_end(&j);

    ideal_rule(p, rule, sizeof rule);
    rs_json_key(&j, "ideal");
    rs_json_object_begin(&j);
    rs_json_key(&j, "share");
    rs_json_double(&j, p->ideal_share);
    rs_json_key(&j, "rule");
    rs_json_string(&j, rule);
    json_u128(&j, "floor_weight", p->floor);
    rs_json_key(&j, "floor_share");
    rs_json_double(&j, p->floor_share);
    rs_json_object_end(&j);

    rs_json_key(&j, "consistency");
    rs_json_object_begin(&j);
    rs_json_key(&j, "property");
    rs_json_string(&j, check_property(p->check));
    rs_json_key(&j, "checked");
    rs_json_bool(&j, p->pairs_complete);
    rs_json_key(&j, "ok");
    rs_json_bool(&j, p->pairs_complete && p->nviolations == 0);
    rs_json_key(&j, "violations");
    rs_json_u64(&j, p->nviolations);
    json_u128(&j, "violation_weight", p->violation_weight);
    rs_json_object_end(&j);

    rs_json_key(&j, "data");
    if (d && d->have) {
        rs_json_object_begin(&j);
        rs_json_key(&j, "source");
        rs_json_string(&j, a->from_buckets ? "buckets" : "inputs");
        rs_json_key(&j, "inputs");
        rs_json_u64(&j, d->ninputs);
        rs_json_key(&j, "rows");
        rs_json_u64(&j, d->rows);
        rs_json_key(&j, "bytes");
        rs_json_u64(&j, d->bytes);
        rs_json_key(&j, "rows_moved");
        rs_json_u64(&j, d->moved_rows);
        rs_json_key(&j, "bytes_moved");
        rs_json_u64(&j, d->moved_bytes);
        rs_json_key(&j, "mismatched_rows");
        rs_json_u64(&j, d->mismatches);
        rs_json_key(&j, "mismatches");
        rs_json_array_begin(&j);
        for (size_t i = 0; i < d->ninputs; i++)
            if (d->mismatch[i]) {
                rs_json_object_begin(&j);
                rs_json_key(&j, "file");
                rs_json_string(&j, d->input_labels[i]);
                rs_json_key(&j, "node");
                rs_json_string(&j, d->input_nodes[i]);
                rs_json_key(&j, "rows");
                rs_json_u64(&j, d->mismatch[i]);
                rs_json_object_end(&j);
            }
        rs_json_array_end(&j);
        rs_json_key(&j, "emit");
        if (d->emitted)
            rs_json_string(&j, a->emit);
        else
            rs_json_null(&j);
        rs_json_key(&j, "batch_bytes");
        rs_json_u64(&j, a->batch_bytes);
        rs_json_key(&j, "wave_order");
        rs_json_string(&j, a->largest_first ? "largest" : "smallest");
        rs_json_key(&j, "waves");
        rs_json_array_begin(&j);
        for (uint32_t w = 1; w <= d->nwaves; w++) {
            uint64_t np = 0, rows = 0, bytes = 0;
            for (size_t k = 0; k < p->npairs; k++)
                if (d->wave[k] == w) {
                    np++;
                    rows += d->keys[k];
                    bytes += d->bytes_of[k];
                }
            rs_json_object_begin(&j);
            rs_json_key(&j, "wave");
            rs_json_u64(&j, w);
            rs_json_key(&j, "pairs");
            rs_json_u64(&j, np);
            rs_json_key(&j, "rows");
            rs_json_u64(&j, rows);
            rs_json_key(&j, "bytes");
            rs_json_u64(&j, bytes);
            rs_json_object_end(&j);
        }
        rs_json_array_end(&j);
        rs_json_object_end(&j);
    } else {
        rs_json_null(&j);
    }

    rs_json_key(&j, "pairs_complete");
    rs_json_bool(&j, p->pairs_complete);
    rs_json_key(&j, "pairs");
    rs_json_array_begin(&j);
    for (size_t k = 0; k < p->npairs; k++) {
        const rs_plan_pair *q = &p->pairs[k];
        rs_json_object_begin(&j);
        rs_json_key(&j, "from");
        rs_json_string(&j, an->names[q->from]);
        rs_json_key(&j, "to");
        rs_json_string(&j, bn->names[q->to]);
        json_u128(&j, "weight", q->weight);
        rs_json_key(&j, "share");
        rs_json_double(&j, q->share);
        rs_json_key(&j, "arcs");
        rs_json_u64(&j, q->arcs);
        rs_json_key(&j, "violation");
        rs_json_bool(&j, q->violation);
        if (d && d->have) {
            rs_json_key(&j, "rows");
            rs_json_u64(&j, d->keys[k]);
            rs_json_key(&j, "bytes");
            rs_json_u64(&j, d->bytes_of[k]);
            if (d->wave) {
                rs_json_key(&j, "wave");
                rs_json_u64(&j, d->wave[k]);
            }
        }
        rs_json_object_end(&j);
    }
    rs_json_array_end(&j);
    if (a->json_arcs) {
        rs_json_key(&j, "arcs");
        rs_json_array_begin(&j);
        for (size_t k = 0; k < p->narcs; k++) {
            const rs_plan_arc *r = &p->arcs[k];
            rs_json_object_begin(&j);
            json_u128(&j, "start", r->start);
            json_u128(&j, "end", (rs_u128)r->last + 1);
            rs_json_key(&j, "from");
            rs_json_string(&j, an->names[r->from]);
            rs_json_key(&j, "to");
            rs_json_string(&j, bn->names[r->to]);
            json_u128(&j, "weight", r->weight);
            rs_json_object_end(&j);
        }
        rs_json_array_end(&j);
    }
    rs_json_object_end(&j);
    fputc('\n', f);
    return close_file(f, path, rs_json_finish(&j), err);
}

/* The flow matrix: nodes are the union of both sides' names (old ones
 * first); amounts are moved rows with data, else parts per million of the
 * hash space. */
static int write_report(const plan_args *a, const rs_plan *p, const data_result *d, rs_error *err)
{
    const rs_nodes *an = rs_ring_nodes(p->old_ring), *bn = rs_ring_nodes(p->new_ring);
    size_t nn = an->count;
    for (uint32_t j = 0; j < bn->count; j++)
        nn += p->new_to_old[j] == RS_PLAN_NONE;
    const char **names = malloc((nn ? nn : 1) * sizeof *names);
    uint32_t *new_idx = malloc((bn->count ? bn->count : 1) * sizeof *new_idx);
    uint32_t *from = malloc((p->npairs ? p->npairs : 1) * sizeof *from);
    uint32_t *to = malloc((p->npairs ? p->npairs : 1) * sizeof *to);
    double *w = malloc((p->npairs ? p->npairs : 1) * sizeof *w);
    int rc = -1;
    if (!names || !new_idx || !from || !to || !w) {
        rs_error_set(err, RS_EXIT_IO, "out of memory");
        goto out;
    }
    for (uint32_t i = 0; i < an->count; i++)
        names[i] = an->names[i];
    size_t k = an->count;
    for (uint32_t j = 0; j < bn->count; j++) {
        if (p->new_to_old[j] == RS_PLAN_NONE) {
            names[k] = bn->names[j];
            new_idx[j] = (uint32_t)k++;
        } else {
            new_idx[j] = p->new_to_old[j];
        }
    }
    int data = d && d->have;
    for (size_t q = 0; q < p->npairs; q++) {
        from[q] = p->pairs[q].from;
        to[q] = new_idx[p->pairs[q].to];
        w[q] = data ? (double)d->keys[q] : p->pairs[q].share * 1e6;
    }
    char f_moved[64], f_ideal[64], f_pairs[64], f_bal[64], f_data[128], f_cons[160], sub[256];
    snprintf(f_moved, sizeof f_moved, "%.6f%%%s", pct(p->moved_share), p->method == RS_PLAN_EXPECTED ? " (expected)" : "");
    snprintf(f_ideal, sizeof f_ideal, "%.6f%%", pct(p->ideal_share));
    snprintf(f_pairs, sizeof f_pairs, "%zu", p->npairs);
    snprintf(f_bal, sizeof f_bal, "%.4f -> %.4f", p->balance_old, p->balance_new);
    snprintf(f_cons, sizeof f_cons, "%s: %s", p->nviolations ? "VIOLATED" : "OK", check_property(p->check));
    rs_report_fact facts[8];
    size_t nf = 0;
    facts[nf++] = (rs_report_fact){"moved share of the hash space", f_moved};
    facts[nf++] = (rs_report_fact){"ideal (least possible)", f_ideal};
    facts[nf++] = (rs_report_fact){"(from, to) pairs", f_pairs};
    facts[nf++] = (rs_report_fact){"balance max/mean before -> after", f_bal};
    facts[nf++] = (rs_report_fact){"consistency", f_cons};
    if (data) {
        snprintf(f_data, sizeof f_data, "%llu/%llu rows, %llu/%llu bytes", (unsigned long long)d->moved_rows,
                 (unsigned long long)d->rows, (unsigned long long)d->moved_bytes, (unsigned long long)d->bytes);
        facts[nf++] = (rs_report_fact){"to move", f_data};
    }
    snprintf(sub, sizeof sub, "%s scheme, %u -> %u nodes up (%u added, %u removed, %u reweighted); old %s, new %s",
             rs_scheme_name(rs_ring_get_opts(p->old_ring)->scheme), up_count(an), up_count(bn), p->nadded,
             p->nremoved, p->nreweighted, rs_ring_fingerprint(p->old_ring), rs_ring_fingerprint(p->new_ring));
    rs_report_flows fl = {"ringshard plan: what moves where", sub, data ? "rows" : "ppm of the hash space", nn,
                          names, p->npairs, from, to, w, facts, nf};
    const char *paths[2] = {a->svg, a->html};
    for (int m = 0; m < 2; m++) {
        if (!paths[m])
            continue;
        FILE *f = open_out(paths[m], err);
        if (!f)
            goto out;
        int wr = m == 0 ? rs_report_flows_svg(f, &fl) : rs_report_flows_html(f, &fl);
        if (close_file(f, paths[m], wr, err) != 0)
            goto out;
    }
    rc = 0;
out:
    free(names);
    free(new_idx);
    free(from);
    free(to);
    free(w);
    return rc;
}

/* ---------------------------------------------------------------- main */

static int push(const char **list, int *n, const char *v, const char *what, rs_error *err)
{
    if (*n >= MAX_CHANGES)
        return rs_error_set(err, RS_EXIT_USAGE, "%s: at most %d times (use a comma-separated list)", what,
                            MAX_CHANGES);
    list[(*n)++] = v;
    return 0;
}

int rs_cmd_plan(int argc, char **argv)
{
    static const struct option longopts[] = {
        RS_RING_LONGOPTS,
        RS_INPUT_LONGOPTS,
        {"old-nodes", required_argument, 0, OPT_OLD_NODES},
        {"old-nodes-file", required_argument, 0, OPT_OLD_NODES_FILE},
        {"new-nodes", required_argument, 0, OPT_NEW_NODES},
        {"new-nodes-file", required_argument, 0, OPT_NEW_NODES_FILE},
        {"add", required_argument, 0, OPT_ADD},
        {"add-names", required_argument, 0, OPT_ADD_NAMES},
        {"remove", required_argument, 0, OPT_REMOVE},
        {"reweight", required_argument, 0, OPT_REWEIGHT},
        {"from-buckets", required_argument, 0, OPT_FROM_BUCKETS},
        {"ring-only", no_argument, 0, OPT_RING_ONLY},
        {"json", required_argument, 0, OPT_JSON},
        {"json-arcs", no_argument, 0, OPT_JSON_ARCS},
        {"arcs", required_argument, 0, OPT_ARCS},
        {"pairs", required_argument, 0, OPT_PAIRS},
        {"top", required_argument, 0, OPT_TOP},
        {"strict", no_argument, 0, OPT_STRICT},
        {"emit", required_argument, 0, OPT_EMIT},
        {"force", no_argument, 0, OPT_FORCE},
        {"force-any", no_argument, 0, OPT_FORCE_ANY},
        RS_OUTPUT_LONGOPTS,
        {"batch-bytes", required_argument, 0, OPT_BATCH_BYTES},
        {"wave-order", required_argument, 0, OPT_WAVE_ORDER},
        {"svg", required_argument, 0, OPT_SVG},
        {"html", required_argument, 0, OPT_HTML},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    plan_args a;
    memset(&a, 0, sizeof a);
    a.top = 10;
    rs_pipeline_opts po;
    rs_cli_input_defaults(&po);
    rs_error err = {0};
    int c, r;
    optind = 1;
    while ((c = getopt_long(argc, argv, "hj:", longopts, NULL)) != -1) {
        if ((c == RS_OPT_ORDER && optarg && (!strcmp(optarg, "smallest") || !strcmp(optarg, "largest"))) ||
            c == OPT_WAVE_ORDER) {
            if (strcmp(optarg, "smallest") && strcmp(optarg, "largest"))
                return rs_cli_usage_error("plan", "--wave-order: expected smallest or largest");
            a.largest_first = !strcmp(optarg, "largest");
            a.have_order = 1;
            continue;
        }
        if (c == RS_OPT_NODES) {
            a.old_nodes = optarg;
            continue;
        }
        if (c == RS_OPT_NODES_FILE) {
            a.old_nodes_file = optarg;
            continue;
        }
        if (rs_cli_ring_option(&a.ro, c, optarg))
            continue;
        if ((r = rs_cli_input_option(&po, c, optarg, &err)) != 0) {
            if (r < 0)
                return rs_cli_fail("plan", &err);
            continue;
        }
        if ((r = rs_cli_output_option("plan", &po, c, optarg)) != 0) {
            if (r < 0)
                return RS_EXIT_USAGE;
            continue;
        }
        switch (c) {
        case OPT_OLD_NODES: a.old_nodes = optarg; break;
        case OPT_OLD_NODES_FILE: a.old_nodes_file = optarg; break;
        case OPT_NEW_NODES: a.new_nodes = optarg; break;
        case OPT_NEW_NODES_FILE: a.new_nodes_file = optarg; break;
        case OPT_ADD:
            if (rs_cli_uint("--add", optarg, 1, 10000000, &a.add, &err) != 0)
                return rs_cli_fail("plan", &err);
            break;
        case OPT_ADD_NAMES:
            if (push(a.add_names, &a.nadd_names, optarg, "--add-names", &err) != 0)
                return rs_cli_fail("plan", &err);
            break;
        case OPT_REMOVE:
            if (push(a.remove, &a.nremove, optarg, "--remove", &err) != 0)
                return rs_cli_fail("plan", &err);
            break;
        case OPT_REWEIGHT:
            if (push(a.reweight, &a.nreweight, optarg, "--reweight", &err) != 0)
                return rs_cli_fail("plan", &err);
            break;
        case OPT_FROM_BUCKETS: a.from_buckets = optarg; break;
        case OPT_RING_ONLY: a.ring_only = 1; break;
        case OPT_JSON: a.json = optarg; break;
        case OPT_JSON_ARCS: a.json_arcs = 1; break;
        case OPT_ARCS: a.arcs = optarg; break;
        case OPT_PAIRS: a.pairs = optarg; break;
        case OPT_SVG: a.svg = optarg; break;
        case OPT_HTML: a.html = optarg; break;
        case OPT_TOP:
            if (rs_cli_uint("--top", optarg, 0, UINT32_MAX, &a.top, &err) != 0)
                return rs_cli_fail("plan", &err);
            break;
        case OPT_STRICT: a.strict = 1; break;
        case OPT_EMIT: a.emit = optarg; break;
        case OPT_FORCE: a.force |= RS_OUTDIR_FORCE; break;
        case OPT_FORCE_ANY: a.force |= RS_OUTDIR_FORCE | RS_OUTDIR_FORCE_ANY; break;
        case OPT_BATCH_BYTES:
            if (rs_cli_size("--batch-bytes", optarg, &a.batch_bytes, &err) != 0)
                return rs_cli_fail("plan", &err);
            if (!a.batch_bytes)
                return rs_cli_usage_error("plan", "--batch-bytes: must be positive");
            break;
        case 'h':
            fputs(plan_help, stdout);
            fputs(rs_cli_input_help, stdout);
            fputc('\n', stdout);
            fputs(rs_cli_ring_help, stdout);
            return 0;
        default: return rs_cli_usage_error("plan", "bad option");
        }
    }
    int have_inputs = optind < argc || rs_cli_files_from_given();
    if (a.from_buckets && have_inputs)
        return rs_cli_usage_error("plan", "--from-buckets reads the bucket files: no INPUT arguments nor --files-from");
    int data = have_inputs || (a.from_buckets && !a.ring_only);
    if (a.ring_only && !a.from_buckets)
        return rs_cli_usage_error("plan", "--ring-only goes with --from-buckets");
    if (!data && (a.emit || a.batch_bytes))
        return rs_cli_usage_error("plan", "--emit and --batch-bytes need data (INPUT... or --from-buckets DIR)");
    if (a.have_order && !a.batch_bytes)
        return rs_cli_usage_error("plan", "--order smallest|largest goes with --batch-bytes");
    {
        const char *const side[][2] = {{"--on-bad-row quarantine=", po.quarantine}, {"--json ", a.json},
                                       {"--arcs ", a.arcs}, {"--pairs ", a.pairs}, {"--svg ", a.svg},
                                       {"--html ", a.html}};
        for (size_t i = 0; i < sizeof side / sizeof *side; i++)
            if (rs_cli_outside_output(side[i][0], side[i][1], a.emit, &err) != 0)
                return rs_cli_fail("plan", &err);
    }

    rs_bucketdir bd = {0};
    const char **in_names = NULL, **in_paths = NULL;
    size_t *in_files = NULL;
    rs_ring *old_ring = NULL, *new_ring = NULL;
    rs_plan plan = {0};
    data_result d = {0};
    int rc = 0, have_plan = 0, quiet = po.progress < 0, agreed = 0;
    double t0 = rs_cli_now();
    if (build_rings(&a, &bd, &old_ring, &new_ring, &err) != 0)
        goto out;
    double t1 = rs_cli_now();
    if (rs_plan_diff(old_ring, new_ring, &plan, &err) != 0)
        goto out;
    have_plan = 1;
    double t2 = rs_cli_now();
    if (a.arcs && plan.method != RS_PLAN_EXACT_ARCS) {
        rs_error_set(&err, RS_EXIT_USAGE, "--arcs: scheme %s has no arcs",
                     rs_scheme_name(rs_ring_get_opts(old_ring)->scheme));
        goto out;
    }
    if (data) {
        if (a.from_buckets) {
            size_t n = 0;
            const rs_manifest *m = &bd.m;
            in_files = calloc(m->nfiles + 1, sizeof *in_files);
            d.input_labels = calloc(m->nfiles + 1, sizeof *d.input_labels);
            d.input_nodes = calloc(m->nfiles + 1, sizeof *d.input_nodes);
            if (!in_files || !d.input_labels || !d.input_nodes) {
                rs_error_set(&err, RS_EXIT_IO, "out of memory");
                goto out;
            }
            for (size_t i = 0; i < m->nfiles; i++) {
                if (!m->files[i].node)
                    continue;
                in_files[n] = i;
                d.input_labels[n] = m->files[i].file;
                d.input_nodes[n] = m->files[i].node;
                n++;
            }
            if (n == 0) {
                rs_error_set(&err, RS_EXIT_DATA, "%s/manifest.json lists no bucket files", a.from_buckets);
                goto out;
            }
            po.header = m->header;
            po.dialect.delim = m->delimiter;
            po.key = m->keys_only ? "1" : m->key;
            po.input_crc = 1;  /* every file is checked against the manifest */
            char *dummy[1] = {(char *)"-"};
            if (rs_cli_input_finish(&po, 1, dummy, 0, &err) < 0 ||
                rs_bucketdir_inputs(&bd, in_files, n, &po, &in_names, &in_paths, &err) != 0)
                goto out;
            d.input_files = in_files;
        } else {
            int qr = rs_cli_input_finish(&po, argc, argv, optind, &err);
            if (qr < 0)
                goto out;
        }
        /* under MPI, a rank that failed so far (a node file or manifest it
         * could not read) stops every rank here; see also out: */
        if (rs_world_agree_once(&agreed, &err) != 0)
            goto out;
        if (run_data(&a, &po, &plan, a.from_buckets ? &bd : NULL, quiet, &d, &err) != 0)
            goto out;
    }
    if (rs_world_rank() != 0) {  /* under MPI, rank 0 writes every report */
        rc = d.mismatches || (a.strict && have_plan && (plan.nviolations || !plan.pairs_complete)) ? RS_EXIT_VERIFY : 0;
        goto out;
    }
    if (a.json && write_json(a.json, &a, &plan, &d, &err) != 0)
        goto out;
    if (a.arcs && write_arcs(a.arcs, &plan, &err) != 0)
        goto out;
    if (a.pairs && write_pairs(a.pairs, &plan, &d, &err) != 0)
        goto out;
    if ((a.svg || a.html) && write_report(&a, &plan, &d, &err) != 0)
        goto out;
    if (!quiet) {
        print_summary(stdout, &a, &plan, &d, t1 - t0, t2 - t1);
        if (rs_cli_flush_stdout(&err) != 0)
            goto out;
    }
    if (d.mismatches) {
        fprintf(stderr, "ringshard plan: %llu rows of %s sit in the wrong bucket%s\n",
                (unsigned long long)d.mismatches, a.from_buckets, a.emit ? "; nothing emitted" : "");
        rc = RS_EXIT_VERIFY;
    } else if (a.strict && have_plan && (plan.nviolations || !plan.pairs_complete)) {
        fprintf(stderr, "ringshard plan: --strict: %s does not hold\n", check_property(plan.check));
        rc = RS_EXIT_VERIFY;
    }
out:
    if (data)
        rs_world_agree_once(&agreed, &err);
    rs_bucketdir_explain(&bd, &err);
    if (err.code)
        rc = rs_cli_fail("plan", &err);
    if (have_plan)
        rs_plan_free(&plan);
    rs_ring_free(old_ring);
    rs_ring_free(new_ring);
    rs_bucketdir_close(&bd);
    free(in_names);
    free(in_paths);
    free(in_files);
    free(d.input_labels);
    free(d.input_nodes);
    free(d.keys);
    free(d.bytes_of);
    free(d.mismatch);
    free(d.wave);
    return rc;
}
