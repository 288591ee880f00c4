/* ringshard dedup: keep one row per key, at scale. Parses the options,
 * runs the dedup job (job_dedup.h, src/jobs/dedup.c: the two passes) and
 * prints its summary (rs_dedup_job_print, src/jobs/dedup_print.c). */
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "cluster/world.h"
#include "ringshard/dataset.h"
#include "ringshard/job_dedup.h"
#include "ringshard/procio.h"
#include "ringshard/util.h"

/* The options of `ringshard dedup` as given: what the command turns into
 * the job's options, and what its summaries name. */
typedef struct {
    /* options */
    rs_pipeline_opts po;
    rs_cli_ring ro;
    const char *outdir, *dups_path, *buckets_dir;
    int force, quiet, temp_compress, by_row, keep_last, compress, level;
    rs_cli_append ap;
    rs_procio io0;   /* the kernel's read counters when the command began */
} rs_cli_dedup_args;

static const rs_opt opt_keep = {.name = "keep", .arg = "first|last",
                                .help = "which copy of a key survives, by input order: inputs\n"
                                        "in the order given, rows in file order (default first)",
                                .kind = RS_KIND_ENUM, RS_AT(rs_cli_dedup_args, keep_last), .values = "first|last"};
static const rs_opt opt_by = {.name = "by", .arg = "key|row",
                              .help = "duplicates are rows with equal keys (default) or\n"
                                      "whole-row duplicates (equal row bytes)",
                              .kind = RS_KIND_ENUM, RS_AT(rs_cli_dedup_args, by_row), .values = "key|row"};
static const rs_opt opt_duplicates = {
    .name = "duplicates", .arg = "FILE",
    .help = "write every duplicated key: KEY<TAB>COUNT<TAB>KEPT-ROW\n"
            "(--by row: ROW<TAB>COUNT), escapes \\\\ \\t \\n \\r, by bucket\n"
            "then first occurrence; with --append, every new row\n"
            "dropped: KEY<TAB>WHERE<TAB>ROW, WHERE the generation\n"
            "holding the key (g00000003) or 'repeat' (an earlier\n"
            "new row kept). '-': standard output",
    .kind = RS_KIND_STRING, RS_AT(rs_cli_dedup_args, dups_path)};
static const rs_opt opt_buckets = {.name = "buckets", .arg = "BUCKETDIR",
                                   .help = "deduplicate an existing bucket directory (its manifest\n"
                                           "gives the ring, key and dialect; no INPUT)",
                                   .kind = RS_KIND_STRING, RS_AT(rs_cli_dedup_args, buckets_dir)};
/* pass 1's codec: the output's row, without its given bit (it shapes nothing) */
static const int temp_codes[] = {RS_COMPRESS_GZIP, RS_COMPRESS_ZSTD, RS_COMPRESS_NONE};
static int temp_apply(void *base, const rs_opt *o, const char *arg, rs_error *err)
{
    (void)o, (void)base;
    int c;
    return rs_compress_parse_option("--temp-compress", arg, &c, err);
}
static const rs_opt opt_temp_compress = {.name = "temp-compress", .arg = "gzip|zstd|none",
                                         .help = "pass 1's temporary buckets: plain (default,\n"
                                                 "faster) or level 1 gzip/zstd (less temporary disk)",
                                         .kind = RS_KIND_ENUM, RS_AT(rs_cli_dedup_args, temp_compress),
                                         .values = "gzip|zstd|none", .codes = temp_codes, .apply = temp_apply};

#define D rs_cli_dedup_args
static const rs_opt_command dedup_command = {
    "dedup",
    "ringshard dedup [OPTIONS] -o DIR INPUT...    (or --files-from LIST)\n"
    "ringshard dedup [OPTIONS] -o DIR --buckets BUCKETDIR",
    "Keeps one row per key. Pass 1 buckets the rows by key on the ring (as\n"
    "`ringshard bucket`) into a temporary area; pass 2 deduplicates every bucket\n"
    "in parallel, in memory, comparing full key bytes. The output is a bucket\n"
    "directory like bucket's (DIR/<node>.csv.gz + manifest.json, published\n"
    "atomically), holding the surviving rows of each bucket in input order;\n"
    "it is byte-identical for any -j and any --memory.\n"
    "With --append, DIR keeps growing: a new row is kept only when its key is\n"
    "in neither DIR (the history, whose copy wins) nor earlier in the new\n"
    "inputs; the survivors are added as a new generation of DIR, each file with\n"
    "a key index, so the history's rows are never read again (docs/dedup.md).\n",
    (const rs_opt_section[]){
        {    "\n",
         25,
         (const rs_opt_use[]){
             RS_USE(rs_opt_output_dir, D, outdir), {&opt_keep, 0, NULL, NULL}, {&opt_by, 0, NULL, NULL},
             {&opt_duplicates, 0, NULL, NULL}, {&opt_buckets, 0, NULL, NULL}, {&opt_temp_compress, 0, NULL, NULL},
             RS_USE(rs_opt_force, D, force), RS_USE(rs_opt_force_any, D, force),
             RS_USE_HELP(rs_opt_compress, D, compress,
                         "output as gzip members (default), zstd frames\n"
                         "(DIR/<node>.csv.zst) or plain CSV"),
             RS_USE_HELP(rs_opt_level, D, level,
                         "output level (default 1): gzip 1-9; zstd -131072 to 22\n"
                         "but 0 (negative: zstd --fast=N)"),
             RS_HELP_USE, {NULL, 0, NULL, NULL}},
         "\n"
    "Memory: a bucket is deduplicated in memory when its bytes plus a table of\n"
    "176 bytes per row fit in --memory / threads; a bigger bucket is split again\n"
    "on disk by an independent hash of the key, each part deduplicated on its own,\n"
    "with the same result. The summary says how many buckets were split.\n\n", 0, "Dedup options", NULL},
        RS_APPEND_SECTION(D, ap),
        RS_METRICS_SECTION(D, "\n"),
        RS_INPUT_SECTION(D, po, quiet, "\n"),
        RS_RING_SECTION(D, ro),
        RS_SECTIONS_END},
    offsetof(D, ap.given)};
#undef D

const rs_opt_command *rs_cmd_dedup_options(void) { return &dedup_command; }

/* The options that do not fit together, in the order they were always
 * checked, and the inputs (INPUT... and --files-from, or --buckets).
 * Returns -1 to go on, else the exit code (the error printed). */
static int check_args(int argc, char **argv, rs_cli_dedup_args *a, int first)
{
    rs_error err = {0};
    if (!a->outdir)
        return rs_cli_usage_error("dedup", "no output directory (-o DIR)");
    int rc = rs_cli_dir_not_stdout("dedup", "-o", a->outdir, "a bucket directory",
                                   "write it to a directory and read it with ringshard cat");
    if (rc >= 0)
        return rc;
    if (rs_cli_append_finish(&a->ap, a->force, &err) != 0)
        return rs_cli_fail("dedup", &err);
    if (a->ap.append && (a->keep_last || a->buckets_dir))
        return rs_cli_usage_error("dedup", a->keep_last ? "--append keeps the first copy of each key (the history's "
                                                          "copy wins): --keep last cannot be honoured without rewriting "
                                                          "what the history published; dedup without --append, or "
                                                          "--keep first"
                                                        : "--append adds inputs to DIR: --buckets takes none");
    if (a->buckets_dir) {
        if (first < argc || rs_cli_files_from_given())
            return rs_cli_usage_error("dedup", "--buckets takes no INPUT nor --files-from (the bucket directory is "
                                               "the input)");
        if (a->ap.given & (RS_GIVEN_RING | RS_GIVEN_KEY | RS_GIVEN_DELIMITER | RS_GIVEN_HEADER))
            return rs_cli_usage_error("dedup", "--buckets: the ring, key and CSV options come from its manifest");
        a->po.progress = 0;
        rs_cli_install_signals();
    } else {
        if (rs_cli_input_finish(&a->po, a->quiet, argc, argv, first, &err) < 0)
            return rs_cli_fail("dedup", &err);
    }
    if (rs_level_check("--level", a->compress, a->level, &err) != 0)
        return rs_cli_fail("dedup", &err);

    if (rs_outdir_refuse_inside("--on-bad-row quarantine=", a->po.quarantine, a->outdir, &err) != 0 ||
        rs_outdir_refuse_inside("--duplicates ", a->dups_path, a->outdir, &err) != 0 ||
        rs_cli_metrics_refuse_inside(a->outdir, &err) != 0 ||
        rs_cli_stdout_file("--duplicates", &a->dups_path, &err) != 0)
        return rs_cli_fail("dedup", &err);
    return -1;
}

/* What --metrics FILE reports of the run. */
static void fill_metrics(const rs_cli_dedup_args *a, const rs_dedup_job_result *res)
{
    rs_metrics *m = rs_cli_metrics();
    if (m) {
        m->inputs = a->buckets_dir ? res->buckets : a->po.ninputs;
        m->inputs_skipped = res->inputs_skipped;
        m->rows_read = res->rows_in, m->bytes_read = res->bytes_in, m->rows_rejected = res->rejected;
        m->rows_written = res->published ? res->rows : 0, m->bytes_written = res->published ? res->bytes : 0;
        m->history = a->ap.append;
        m->history_index_read = res->index_read, m->history_filter_bytes = res->filter_bytes;
        m->history_filter_passes = res->filter_passes, m->history_keys_confirmed = res->keys_confirmed;
        rs_metrics_add_phase(m, "pass1", res->pass1_seconds);
        rs_metrics_add_phase(m, "pass2", res->pass2_seconds);
        rs_metrics_add_phase(m, "publish", res->seconds > res->pass1_seconds + res->pass2_seconds
                                               ? res->seconds - res->pass1_seconds - res->pass2_seconds : 0);
    }
}

int rs_cmd_dedup(int argc, char **argv)
{
    rs_cli_dedup_args a;
    memset(&a, 0, sizeof a);
    rs_procio_read(&a.io0);
    rs_pipeline_opts_default(&a.po);
    a.ap = (rs_cli_append)RS_CLI_APPEND_INIT;
    a.compress = 1;
    a.level = 1;
    a.temp_compress = 0;  /* measured: plain temporary buckets are faster (docs/dedup.md) */
    rs_error err = {0};
    int r, first;
    if ((r = rs_cli_parse_options(&dedup_command, &a, argc, argv, &first)) >= 0 ||
        (r = check_args(argc, argv, &a, first)) >= 0)
        return r;

    /* the ring: given, or (--buckets) the directory's, which the job reads;
     * an append without ring options takes DIR's (the default one is built
     * by the job only if DIR is made) */
    rs_ring *ring = NULL;
    if (!a.buckets_dir && !(a.ap.append && !rs_cli_ring_given(&a.ro))) {
        double t0 = rs_now();
        ring = rs_cli_ring_build_within(&a.ro, a.po.memory, &err);
        rs_cli_metrics_phase("ring", rs_now() - t0);
        if (rs_world_agree(&err) != 0) {  /* under MPI, every rank read the node file */
            rs_ring_free(ring);
            return rs_cli_fail("dedup", &err);
        }
    }
    rs_dedup_job_opts o = {.pipeline = a.po, .ring = ring, .buckets_dir = a.buckets_dir, .outdir = a.outdir,
                           .force = a.force, .duplicates = a.dups_path,
                           .mode = a.by_row ? RS_DEDUP_BY_ROW : a.keep_last ? RS_DEDUP_KEEP_LAST : RS_DEDUP_KEEP_FIRST,
                           .compress = a.compress, .level = a.level, .temp_compress = a.temp_compress,
                           .append = a.ap.append, .on_seen = (rs_on_seen)a.ap.on_seen,
                           .commit_every = a.ap.commit_every, .commit_bytes = a.ap.commit_bytes,
                           .given = a.ap.given, .quiet = a.quiet};
    rs_dedup_job_result res;
    int rc = 0;
    rs_dedup_job_run(&o, &res, &err);
    if (a.ap.append && !err.code && !a.quiet && rs_world_rank() == 0)
        rs_dedup_job_print_append(stderr, a.outdir, &a.io0, &res);
    fill_metrics(&a, &res);
    if (res.published && !a.quiet && rs_world_rank() == 0)  /* published, even if something failed after */
        rs_dedup_job_print(stderr, a.outdir, a.by_row, &res);
    if (res.duplicates_cut && rs_world_rank() == 0)  /* not an error: docs/dedup.md, "The duplicates report" */
        fprintf(stderr, "ringshard dedup: --duplicates: its reader left after %llu bytes: the rest of the report was "
                "not written (the dedup itself went on)\n", res.duplicates_written);
    if (err.code)
        rc = rs_cli_fail("dedup", &err);
    rs_dedup_job_result_free(&res);
    rs_ring_free(ring);
    return rc;
}
