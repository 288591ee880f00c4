/* The plan job (ringshard/job_plan.h): builds the two rings, diffs them,
 * counts a plan on data (per-thread counters summed, then the ranks'),
 * emits the moved rows, and writes the plan's files, each published whole.
 * The plan JSON's writer is with the plan (src/plan/plan_json.c). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "ringshard/util.h"
#include "cluster/cluster.h"
#include "cluster/world.h"
#include "ringshard/dataset.h"
#include "ringshard/interrupt.h"
#include "ringshard/job_plan.h"
#include "ringshard/outfile.h"
#include "ringshard/plan.h"
#include "ringshard/report.h"
#include "ringshard/runplan.h"

/* ---------------------------------------------------------------- nodes */

/* The new side's explicit node set: a node file (read by the rules of the
 * ring's client preset), or N nodes "0".."N-1". */
static int node_spec(uint32_t count, const char *file, rs_compat_id compat, rs_nodes *nodes, rs_error *err)
{
    rs_nodes_syntax syn;
    rs_compat_syntax(compat, &syn);
    if (file)
        return rs_nodes_load_syntax(nodes, file, &syn, err);
    return rs_nodes_init_count(nodes, count, err);
}

/* The old side's ring options and nodes: from --from-buckets' manifest
 * (*bd is opened and kept: its files are the data), else o's. */
static int old_side(const rs_plan_job_opts *o, rs_bucketdir *bd, rs_ring_opts *ro, rs_nodes *old_nodes, rs_error *err)
{
    const rs_manifest *m = &bd->m;
    if (!o->from_buckets) {
        *ro = o->ring;
        return rs_nodes_copy(old_nodes, o->old_nodes, err);
    }
    /* the directory is opened once: its files are read through it */
    if (rs_cluster_bucketdir_open(bd, o->from_buckets, err) != 0)  /* collective */
        return -1;
    if (strcmp(m->kind, "buckets") != 0)
        return rs_error_set(err, RS_EXIT_USAGE, "--from-buckets: %s holds '%s', not buckets", o->from_buckets,
                            m->kind);
    /* its ring checked as every reader checks it; the old side is built
     * again below, from its nodes once --down marked them */
    char *mpath = rs_name_manifest_path(o->from_buckets);
    rs_ring *r = mpath ? rs_manifest_ring(m, mpath, ro, old_nodes, err) : NULL;
    if (!mpath)
        rs_error_set(err, RS_EXIT_IO, "out of memory");
    rs_ring_free(r);
    free(mpath);
    return r ? 0 : -1;
}

/* Builds both rings. *bd is opened (and kept) with --from-buckets. */
static int build_rings(const rs_plan_job_opts *o, rs_bucketdir *bd, rs_ring **old_ring, rs_ring **new_ring,
                       rs_error *err)
{
    rs_ring_opts ro;
    rs_nodes old_nodes = {0}, new_nodes = {0};
    int have_new = o->new_count || o->new_nodes_file;
    const rs_node_edits *e = &o->edits;
    int changes = e->add || e->nadd_names || e->nremove || e->nreweight;
    rs_node_edit_log log = {0};
    int rc = -1;
    if (!have_new && !changes)
        return rs_error_set(err, RS_EXIT_USAGE,
                            "no new side: give --new-nodes, --new-nodes-file or a change (--add, --add-names, "
                            "--remove, --reweight)");
    if (old_side(o, bd, &ro, &old_nodes, err) != 0)
        goto out;
    if (have_new) {
        if (node_spec(o->new_count, o->new_nodes_file, ro.compat, &new_nodes, err) != 0)
            goto out;
    } else if (rs_nodes_copy(&new_nodes, &old_nodes, err) != 0) {
        goto out;
    }
    if (rs_node_edits_down(e, &old_nodes, &new_nodes, err) != 0)
        goto out;
    rs_node_edits ne = *e;
    ne.slots = ro.scheme == RS_SCHEME_SLOTS;  /* the others keep their slots */
    if (changes && rs_node_edits_apply(&new_nodes, &old_nodes, &ne, &log, err) != 0)
        goto out;
    if (!(*old_ring = rs_ring_build(&ro, &old_nodes, err)))
        goto out;
    if (!(*new_ring = rs_ring_build(&ro, &new_nodes, err))) {
        rs_error_restate(err, RS_EXIT_USAGE, "new ring: ", "");
        goto out;
    }
    rc = 0;
out:
    rs_node_edit_log_free(&log);
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
/* The file names of the emitted pairs: "<from>__<to>.csv[.gz]" (rs_data_file), no two alike. */
static char **pair_file_names(const rs_plan *p, int compress, rs_error *err)
{
    size_t n = p->npairs;
    const char **from = calloc(n ? n : 1, sizeof *from), **to = calloc(n ? n : 1, sizeof *to);
    const rs_nodes *a = rs_ring_nodes(p->old_ring), *b = rs_ring_nodes(p->new_ring);
    char **names = NULL;
    for (size_t k = 0; from && to && k < n; k++) {
        from[k] = a->names[p->pairs[k].from];
        to[k] = b->names[p->pairs[k].to];
    }
    if (!from || !to)
        rs_error_set(err, RS_EXIT_IO, "out of memory");
    else
        names = rs_data_files(from, to, n, compress, err);
    free(from);
    free(to);
    return names;
}

/* Conservation, checked after every data run (before --emit publishes):
 * per input, the rows and bytes the reader delivered are the rows and
 * bytes routed from it; in total, rows and bytes read = moved (emitted with
 * --emit, checked per pair after this) + stay + rows on the wrong node
 * (--from-buckets; nothing is emitted then). Rejected rows
 * (--on-bad-row skip) are outside both sides and only reported. */
static int check_conservation(const rs_pipeline_opts *po, const rs_pipeline_result *res, const thread_counts *tc,
                              int T, uint32_t npairs, const rs_plan_data *d, rs_error *err)
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

/* --from-buckets: each input's node on the old ring, into input_node[n]
 * (a lookup per file of the directory: indexed, not linear). */
static int input_nodes(const rs_plan_job_opts *o, const rs_nodes *old_nodes, const rs_plan_data *d, size_t n,
                       uint32_t *input_node, rs_error *err)
{
    rs_node_index ix;
    if (rs_node_index_build(&ix, old_nodes, err) != 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        int64_t k = rs_node_index_find(&ix, old_nodes, d->input_nodes[i]);
        if (k < 0)
            rc = rs_error_set(err, RS_EXIT_DATA, "%s/manifest.json: file %s belongs to node '%s', not on its ring",
                              o->from_buckets, d->input_labels[i], d->input_nodes[i]);
        else
            input_node[i] = (uint32_t)k;
    }
    rs_node_index_free(&ix);
    return rc;
}

/* The per-thread counters and, with --from-buckets, each input's old node
 * (a row elsewhere is on the wrong node). */
static int data_prepare(const rs_plan_job_opts *o, const rs_pipeline_opts *po, const rs_plan *p, const rs_plan_data *d,
                        int T, thread_counts **tcp, uint32_t **input_nodep, rs_error *err)
{
    uint32_t npairs = (uint32_t)p->npairs;
    const rs_nodes *old_nodes = rs_ring_nodes(p->old_ring);
    thread_counts *tc = *tcp = calloc((size_t)T, sizeof *tc);
    if (!tc)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    if (!p->pairs_complete)
        return rs_error_set(err, RS_EXIT_USAGE,
                            "this change has too many (from, to) pairs to count (more than %u): no data mode",
                            RS_PLAN_MAX_PAIRS);
    if (o->from_buckets) {
        uint32_t *input_node = *input_nodep = malloc((po->ninputs ? po->ninputs : 1) * sizeof *input_node);
        if (!input_node)
            return rs_error_set(err, RS_EXIT_IO, "out of memory");
        if (input_nodes(o, old_nodes, d, po->ninputs, input_node, err) != 0)
            return -1;
    }
    for (int t = 0; t < T && !err->code; t++) {
        tc[t].keys = calloc(npairs + 1, sizeof(uint64_t));
        tc[t].bytes = calloc(npairs + 1, sizeof(uint64_t));
        tc[t].mismatch = calloc(po->ninputs ? po->ninputs : 1, sizeof(uint64_t));
        tc[t].in_rows = calloc(po->ninputs ? po->ninputs : 1, sizeof(uint64_t));
        tc[t].in_bytes = calloc(po->ninputs ? po->ninputs : 1, sizeof(uint64_t));
        if (!tc[t].keys || !tc[t].bytes || !tc[t].mismatch || !tc[t].in_rows || !tc[t].in_bytes)
            return rs_error_set(err, RS_EXIT_IO, "out of memory");
    }
    return 0;
}

static void data_free_counts(thread_counts *tc, int T)
{
    for (int t = 0; tc && t < T; t++) {
        free(tc[t].keys);
        free(tc[t].bytes);
        free(tc[t].mismatch);
        free(tc[t].in_rows);
        free(tc[t].in_bytes);
    }
    free(tc);
}

/* Under MPI each rank counted its own inputs: one thread's counters take
 * every thread's, then the ranks' are summed; d gets the totals. */
static int data_merge(const rs_pipeline_opts *po, thread_counts *tc, int T, uint32_t npairs, rs_plan_data *d,
                      rs_error *err)
{
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
    d->keys = calloc(npairs + 1, sizeof *d->keys);
    d->bytes_of = calloc(npairs + 1, sizeof *d->bytes_of);
    d->mismatch = calloc(po->ninputs ? po->ninputs : 1, sizeof *d->mismatch);
    if (!d->keys || !d->bytes_of || !d->mismatch)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
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
    if (unknown)
        return rs_error_set(err, RS_EXIT_IO, "internal error: %llu keys moved along a pair the diff does not have",
                            (unsigned long long)unknown);
    for (uint32_t k = 0; k < npairs; k++) {
        d->moved_rows += d->keys[k];
        d->moved_bytes += d->bytes_of[k];
    }
    for (size_t i = 0; i < po->ninputs; i++)
        d->mismatches += d->mismatch[i];
    return 0;
}

/* Conservation of --emit: every moved row was written once; *written_rows
 * gets their number. */
static int emit_check(const rs_pipeline_opts *po, const rs_pipeline_result *res, uint32_t npairs,
                      const rs_plan_data *d, uint64_t *written_rows, rs_error *err)
{
    uint64_t written = 0, written_bytes = 0;
    for (uint32_t k = 0; k < npairs; k++) {
        written += res->dest[k].rows;
        written_bytes += res->dest[k].bytes;
        if (res->dest[k].rows != d->keys[k] || (!po->keys_only && res->dest[k].bytes != d->bytes_of[k]))
            return rs_error_set(err, RS_EXIT_IO,
                                "internal error: rows/bytes not conserved (pair %u: moved %llu/%llu, written "
                                "%llu/%llu); nothing published",
                                k, (unsigned long long)d->keys[k], (unsigned long long)d->bytes_of[k],
                                (unsigned long long)res->dest[k].rows, (unsigned long long)res->dest[k].bytes);
    }
    if (written != d->moved_rows || (!po->keys_only && written_bytes != d->moved_bytes))
        return rs_error_set(err, RS_EXIT_IO,
                            "internal error: rows/bytes not conserved (moved %llu/%llu, written %llu/%llu); "
                            "nothing published",
                            (unsigned long long)d->moved_rows, (unsigned long long)d->moved_bytes,
                            (unsigned long long)written, (unsigned long long)written_bytes);
    *written_rows = written;
    return 0;
}

/* The manifest of --emit: only the pairs that moved rows; empty files are
 * removed. Written into od's temporary directory by rank 0. -1 only when
 * the manifest cannot be started; a later failure is left in err for
 * rs_cluster_outdir_end, which every rank meets. */
static int emit_manifest(const rs_pipeline_opts *po, const rs_pipeline_result *res, const rs_plan *p,
                         const rs_manifest *m, const rs_plan_data *d, char **names, char **files, uint64_t written,
                         const rs_outdir *od, rs_manifest *em, rs_error *err)
{
    uint32_t npairs = (uint32_t)p->npairs;
    const rs_nodes *old_nodes = rs_ring_nodes(p->old_ring);
    if (rs_manifest_start(em, "moves", p->old_ring, po, res, npairs, err) != 0)
        return -1;
    em->new_ring_description = (char *)rs_ring_description(p->new_ring);
    em->new_ring_fingerprint = (char *)rs_ring_fingerprint(p->new_ring);
    em->keys_only = po->keys_only || (m && m->keys_only);
    const rs_nodes *new_nodes = rs_ring_nodes(p->new_ring);
    for (uint32_t k = 0; k < po->ndest && !err->code; k++) {
        if (k < npairs && res->dest[k].rows) {
            const rs_dest_stats *ds = &res->dest[k];
            em->files[em->nfiles++] = (rs_manifest_file){.file = names[k],
                                                         .from = old_nodes->names[p->pairs[k].from],
                                                         .to = new_nodes->names[p->pairs[k].to], .rows = ds->rows,
                                                         .bytes = ds->bytes, .file_bytes = ds->file_bytes,
                                                         .crc32 = ds->crc, .wave = d->wave ? d->wave[k] : 0,
                                                         .stored_crc32 = ds->stored_crc, .has_stored_crc32 = 1};
        } else if (rs_world_rank() == 0 && unlink(files[k]) != 0) {
            rs_error_set(err, RS_EXIT_IO, "%s: cannot remove: %s", files[k], strerror(errno));
        }
    }
    em->rows = written;
    em->bytes = d->moved_bytes;
    if (rs_world_rank() == 0 && !err->code)
        rs_outdir_manifest(od, em, err);
    return 0;
}

/* Reads the data: counts every row per pair (route_plan), checks the files
 * of --from-buckets against their manifest and conservation, groups the
 * waves, and with --emit writes and publishes the moved rows. */
static int run_data(const rs_plan_job_opts *o, rs_pipeline_opts *po, const rs_plan *p, const rs_bucketdir *bd,
                    int quiet, rs_plan_data *d, rs_error *err)
{
    const rs_manifest *m = bd ? &bd->m : NULL;
    uint32_t npairs = (uint32_t)p->npairs;
    char **files = NULL, **names = NULL;
    uint32_t *input_node = NULL;
    thread_counts *tc = NULL;
    rs_outdir od = {0};
    rs_cluster_quarantine q = {0};
    int begun = 0, rc = -1;
    rs_pipeline_result res = {0};
    rs_manifest em = {0};
    route_ctx rc_ctx = {p, npairs, NULL, o->emit != NULL, NULL};
    int T = rs_run_threads(po);
    data_prepare(o, po, p, d, T, &tc, &input_node, err);
    /* under MPI, a failure so far on any rank stops every rank here */
    if (rs_world_agree(err) != 0)
        goto out;
    rc_ctx.input_node = input_node;
    rc_ctx.tc = tc;
    po->ndest = npairs ? npairs : 1;
    po->route = route_plan;
    po->route_ctx = &rc_ctx;
    if (o->emit) {
        /* no pairs: the pipeline still wants a destination; it is removed below */
        static const char *const no_moves[] = {"no-moves.tmp"};
        if (!err->code)
            rs_pipeline_threads_ready(T, err);
        if (rs_cluster_outdir_begin(&od, o->emit, o->force, err) != 0)
            goto out;
        begun = 1;
        if ((names = pair_file_names(p, po->compress, err)))
            files = rs_outdir_paths(&od, npairs ? (const char *const *)names : no_moves, po->ndest, err);
        po->dest_paths = (const char *const *)files;
        po->write_behind = 1;
        if (rs_world_agree(err) != 0)
            goto out;
    }
    if (rs_cluster_quarantine_begin(po, o->emit ? &od : NULL, &q, err) != 0 ||
        rs_cluster_pipeline_run(po, &res, err) != 0)
        goto out;
    /* Every file read is what the manifest says it is (rows, bytes, CRC-32,
     * header; placement is counted by route_plan), before anything is
     * counted as moved or published. */
    for (size_t i = 0; bd && i < po->ninputs; i++)
        if (rs_bucketdir_check_file(bd, d->input_files[i], &res.input[i], 1, res.header, err) != 0)
            goto out;
    d->seconds = res.seconds;
    if (data_merge(po, tc, T, npairs, d, err) != 0)
        goto out;
    d->rows = res.rows;
    d->bytes = res.bytes;
    d->rejected = res.rejected;
    if (check_conservation(po, &res, tc, T, npairs, d, err) != 0)
        goto out;
    d->ninputs = po->ninputs;
    if (o->batch_bytes) {
        d->wave = calloc(npairs ? npairs : 1, sizeof *d->wave);
        if (!d->wave) {
            rs_error_set(err, RS_EXIT_IO, "out of memory");
            goto out;
        }
        d->nwaves = rs_plan_waves(d->bytes_of, npairs, o->batch_bytes, o->largest_first, d->wave);
    }
    /* A migration from a directory that does not match its ring is not emitted. */
    if (!o->emit || d->mismatches) {
        rc = 0;
        goto out;
    }
    uint64_t written = 0;
    if (emit_check(po, &res, npairs, d, &written, err) != 0 ||
        emit_manifest(po, &res, p, m, d, names, files, written, &od, &em, err) != 0)
        goto out;
    begun = 0;
    if (rs_cluster_outdir_end(&od, err) != 0)
        goto out;
    d->emitted = 1;
    rs_interrupt_published();  /* the files that follow are then published whatever comes */
    rc = 0;
out:
    if (!quiet && d->have && rs_world_rank() == 0) {
        char rate[RS_HUMAN_MAX];
        fprintf(stderr, "ringshard plan: %llu rows read in %.2f s (%s)\n", (unsigned long long)res.rows, res.seconds,
                rs_human_rate(res.seconds > 0 ? res.rows / res.seconds : 0, "rows", rate, sizeof rate));
    }
    if (begun)
        rs_cluster_outdir_abort(&od);
    rs_cluster_quarantine_end(&q, rc == 0, err);   /* without --emit, published here if all went well */
    data_free_counts(tc, T);
    free(input_node);
    free(em.inputs);
    free(em.files);
    rs_free_strings(files, po->ndest);
    rs_free_strings(names, npairs);
    rs_pipeline_result_free(&res);
    return rc;
}

/* ---------------------------------------------------------------- files */

/* The plan's files are published whole (ringshard/outfile.h): a failed or
 * killed run leaves a previous --json, --pairs, --arcs, --svg or --html as
 * it was, and so does a stop signal before the first of them is published
 * (rs_interrupt_publish_gate). One file is open at a time. */
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
    if (rs_interrupt_publish_gate(err) != 0) {
        rs_outfile_abort(&out_file);
        return -1;
    }
    return rs_outfile_commit(&out_file, err);
}

static FILE *open_out(const char *path, rs_error *err)
{
    return rs_outfile_open(&out_file, path, err);
}

/* --arcs and --pairs (src/plan/plan_tables.c), published whole. */
static int write_arcs(const char *path, const rs_plan *p, rs_error *err)
{
    FILE *f = open_out(path, err);
    if (!f)
        return -1;
    rs_plan_arcs_write(f, p);
    return close_file(f, path, 0, err);
}

static int write_pairs(const char *path, const rs_plan *p, const rs_plan_data *d, rs_error *err)
{
    FILE *f = open_out(path, err);
    if (!f)
        return -1;
    rs_plan_pairs_write(f, p, d);
    return close_file(f, path, 0, err);
}

/* The plan as JSON (src/plan/plan_json.c), published whole. */
static int write_json(const char *path, const rs_plan_job_opts *o, const rs_plan *p, const rs_plan_data *d,
                      rs_error *err)
{
    FILE *f = open_out(path, err);
    if (!f)
        return -1;
    rs_plan_json_opts jo = {o->from_buckets ? "buckets" : "inputs", o->emit, o->batch_bytes, o->largest_first,
                            o->json_arcs};
    return close_file(f, path, rs_plan_json_write(f, p, d, &jo), err);
}

static double pct(double x) { return 100.0 * x; }

/* The flow matrix: nodes are the union of both sides' names (old ones
 * first); amounts are moved rows with data, else parts per million of the
 * hash space. */
static int write_report(const rs_plan_job_opts *a, const rs_plan *p, const rs_plan_data *d, rs_error *err)
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
    snprintf(f_cons, sizeof f_cons, "%s: %s", p->nviolations ? "VIOLATED" : "OK", rs_plan_check_property(p->check));
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
             rs_scheme_name(rs_ring_get_opts(p->old_ring)->scheme), rs_plan_up_count(an), rs_plan_up_count(bn), p->nadded,
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

/* ---------------------------------------------------------------- the job */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The data's inputs: the caller's (o->take_inputs), or the files
 * --from-buckets' manifest lists, each checked against it as it is read. */
static int take_inputs(const rs_plan_job_opts *o, rs_pipeline_opts *po, rs_plan_job_result *r, rs_error *err)
{
    rs_plan_data *d = &r->data;
    if (!o->from_buckets)
        return o->take_inputs && o->take_inputs(po, o->take_inputs_ctx, err) < 0 ? -1 : 0;
    size_t n = 0;
    const rs_bucketdir *bd = &r->bd;
    const rs_manifest *m = &bd->m;
    r->in_files = calloc(bd->nfiles + 1, sizeof *r->in_files);
    d->input_labels = calloc(bd->nfiles + 1, sizeof *d->input_labels);
    d->input_nodes = calloc(bd->nfiles + 1, sizeof *d->input_nodes);
    if (!r->in_files || !d->input_labels || !d->input_nodes)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    for (size_t i = 0; i < bd->nfiles; i++) {  /* every generation's files */
        if (!bd->files[i]->node)
            continue;
        r->in_files[n] = i;
        d->input_labels[n] = bd->names[i];
        d->input_nodes[n] = bd->files[i]->node;
        n++;
    }
    if (n == 0)
        return rs_error_set(err, RS_EXIT_DATA, "%s/manifest.json lists no bucket files", o->from_buckets);
    po->header = m->header;
    po->dialect.delim = m->delimiter;
    po->key = m->keys_only ? NULL : m->key;  /* NULL: column 1 by position */
    po->key_sep = m->key_sep ? m->key_sep : '|';
    po->input_crc = 1;  /* every file is checked against the manifest */
    if ((o->take_inputs && o->take_inputs(po, o->take_inputs_ctx, err) < 0) ||
        rs_bucketdir_inputs(&r->bd, r->in_files, n, po, &r->in_sel, err) != 0)
        return -1;
    d->input_files = r->in_files;
    return 0;
}

/* The plan's files, in this order; the first that fails stops. */
static int write_files(const rs_plan_job_opts *o, const rs_plan *p, const rs_plan_data *d, rs_error *err)
{
    if (o->json && write_json(o->json, o, p, d, err) != 0)
        return -1;
    if (o->arcs && write_arcs(o->arcs, p, err) != 0)
        return -1;
    if (o->pairs && write_pairs(o->pairs, p, d, err) != 0)
        return -1;
    if ((o->svg || o->html) && write_report(o, p, d, err) != 0)
        return -1;
    return 0;
}

int rs_plan_job_run(const rs_plan_job_opts *o, rs_plan_job_result *r, rs_error *err)
{
    rs_pipeline_opts po = o->pipe;
    rs_plan *plan = &r->plan;
    int quiet = o->quiet, agreed = 0;
    double t0 = now(), t1, t2;
    if (build_rings(o, &r->bd, &r->old_ring, &r->new_ring, err) != 0)
        goto out;
    t1 = now();
    if (rs_plan_diff(r->old_ring, r->new_ring, plan, err) != 0)
        goto out;
    r->have_plan = 1;
    t2 = now();
    r->build_seconds = t1 - t0;
    r->diff_seconds = t2 - t1;
    if (o->arcs && plan->method != RS_PLAN_EXACT_ARCS) {
        rs_error_set(err, RS_EXIT_USAGE, "--arcs: scheme %s has no arcs",
                     rs_scheme_name(rs_ring_get_opts(r->old_ring)->scheme));
        goto out;
    }
    if (o->data) {
        if (take_inputs(o, &po, r, err) != 0)
            goto out;
        /* under MPI, a rank that failed so far (a node file or manifest it
         * could not read) stops every rank here; see also out: */
        if (rs_world_agree_once(&agreed, err) != 0)
            goto out;
        if (run_data(o, &po, plan, o->from_buckets ? &r->bd : NULL, quiet, &r->data, err) != 0)
            goto out;
    }
    r->verify_failed = r->data.mismatches || (o->strict && (plan->nviolations || !plan->pairs_complete));
    if (rs_world_rank() == 0)  /* under MPI, rank 0 writes every file */
        write_files(o, plan, &r->data, err);
out:
    if (o->data)
        rs_world_agree_once(&agreed, err);
    rs_bucketdir_explain(&r->bd, err);
    return err->code ? -1 : 0;
}

void rs_plan_job_result_free(rs_plan_job_result *r)
{
    if (r->have_plan)
        rs_plan_free(&r->plan);
    rs_ring_free(r->old_ring);
    rs_ring_free(r->new_ring);
    rs_bucketdir_close(&r->bd);
    rs_bucketdir_sel_free(&r->in_sel);
    free(r->in_files);
    free(r->data.input_labels);
    free(r->data.input_nodes);
    free(r->data.keys);
    free(r->data.bytes_of);
    free(r->data.mismatch);
    free(r->data.wave);
    memset(r, 0, sizeof *r);
}
