/* ringshard bucket: every row into the output of the node that owns its key. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "cluster/world.h"
#include "ringshard/job_bucket.h"
#include "ringshard/dataset.h"
#include "ringshard/util.h"

typedef struct {
    rs_cli_ring ro;
    rs_pipeline_opts po;
    rs_cli_append ap;
    const char *outdir;
    int force, quiet;
} bucket_args;

static const rs_opt opt_keys_only = {.name = "keys-only", .help = "write only the key column", .kind = RS_KIND_FLAG,
                                     RS_AT(bucket_args, po.keys_only), .set = 1, .given = RS_GIVEN_KEYS_ONLY};

static const rs_opt_command bucket_command = {
    "bucket",
    "ringshard bucket [OPTIONS] -o DIR INPUT...   (or --files-from LIST)",
    "Streams every row of the inputs, places its key on the ring and writes the\n"
    "row into DIR/<node>.csv.gz, one file per node (a node that gets nothing has\n"
    "a header-only file), plus DIR/manifest.json. Rows keep their bytes and\n"
    "their input order; line ends become LF. The output is byte-identical for\n"
    "any -j. DIR appears only when complete (written beside it, then renamed).\n"
    "With --append, the rows are added to DIR as a new generation instead:\n"
    "DIR/g<N>/<node>.csv.gz for each node that got rows, published in one rename.\n",
    (const rs_opt_section[]){
        {    "\n",
         25,
         (const rs_opt_use[]){
             RS_USE(rs_opt_output_dir, bucket_args, outdir), RS_USE(rs_opt_force, bucket_args, force),
             RS_USE(rs_opt_force_any, bucket_args, force), RS_USE(rs_opt_compress, bucket_args, po.compress),
             RS_USE_HELP(rs_opt_level, bucket_args, po.level,
                         "gzip level 1-9 (default 1): ISA-L's level 1, 2, or 3\n"
                         "for 3-9; with --zlib, zlib's level N. zstd: -131072\n"
                         "to 22 but 0 (default 1; negative: zstd --fast=N)"),
             RS_USE(rs_opt_direct_io, bucket_args, po.direct_io), {&opt_keys_only, 0, NULL, NULL}, RS_HELP_USE,
             {NULL, 0, NULL, NULL}},
         "\n"
    "File names: a node's name with bytes other than [a-z0-9-] (and '_' inside) as\n"
    "%XX, so that no name can leave DIR or be taken for another's, also where the\n"
    "file system folds case (\"A\" is %41.csv.gz, \"eu.csv1\" eu%2Ecsv1.csv.gz).\n\n", 0, "Output options", NULL},
        RS_APPEND_SECTION(bucket_args, ap),
        RS_METRICS_SECTION(bucket_args, "\n"),
        RS_INPUT_SECTION(bucket_args, po, quiet, "\n"),
        RS_RING_SECTION(bucket_args, ro),
        RS_SECTIONS_END},
    offsetof(bucket_args, ap.given)};

const rs_opt_command *rs_cmd_bucket_options(void) { return &bucket_command; }

/* The summary on stderr: rows, buckets, speed, the spread of rows per
 * bucket. The headline's time and rate are the whole command's
 * (seconds: the ring, the run, the publication and the removal of a
 * replaced output included), what a user waits for. */
static void summary(uint32_t ndest, const rs_pipeline_result *res, const char *dir, double seconds)
{
    uint64_t mn = UINT64_MAX, mx = 0;
    for (uint32_t d = 0; d < ndest; d++) {
        if (res->dest[d].rows < mn)
            mn = res->dest[d].rows;
        if (res->dest[d].rows > mx)
            mx = res->dest[d].rows;
    }
    double mean = ndest ? (double)res->rows / ndest : 0;
    char size[RS_HUMAN_MAX], rate[RS_HUMAN_MAX];
    fprintf(stderr,
            "ringshard bucket: %llu rows, %s into %u buckets in %s (%.2f s, %s)\n"
            "  rows per bucket: min %llu, mean %.1f, max %llu, max/mean %.3f",
            (unsigned long long)res->rows, rs_human_bytes((double)res->bytes, size, sizeof size), ndest, dir,
            seconds, rs_human_rate(seconds > 0 ? res->rows / seconds : 0, "rows", rate, sizeof rate),
            (unsigned long long)mn, mean,
            (unsigned long long)mx, mean > 0 ? mx / mean : 0);
    if (res->rejected)
        fprintf(stderr, "; rejected rows: %llu", (unsigned long long)res->rejected);
    fputc('\n', stderr);
}

int rs_cmd_bucket(int argc, char **argv)
{
    double t_start = rs_now();
    bucket_args a = {.ap = RS_CLI_APPEND_INIT};
    rs_pipeline_opts_default(&a.po);
    int optind, rc = rs_cli_parse_options(&bucket_command, &a, argc, argv, &optind);
    if (rc >= 0)
        return rc;
    rs_cli_ring ro = a.ro;
    rs_pipeline_opts po = a.po;
    rs_cli_append ap = a.ap;
    const char *outdir = a.outdir;
    int force = a.force;
    rs_error err = {0};
    if (!outdir)
        return rs_cli_usage_error("bucket", "no output directory (-o DIR)");
    rc = rs_cli_dir_not_stdout("bucket", "-o", outdir, "a bucket directory",
                                   "write it to a directory and read it with ringshard cat");
    if (rc >= 0)
        return rc;
    if (rs_cli_append_finish(&ap, force, &err) != 0)
        return rs_cli_fail("bucket", &err);
    int quiet = rs_cli_input_finish(&po, a.quiet, argc, argv, optind, &err);
    if (quiet < 0 || rs_outdir_refuse_inside("--on-bad-row quarantine=", po.quarantine, outdir, &err) != 0 ||
        rs_cli_metrics_refuse_inside(outdir, &err) != 0)
        return rs_cli_fail("bucket", &err);
    double t0 = rs_now();
    /* an append without ring options takes DIR's: the default ring is
     * built by the job only if DIR is made */
    rs_ring *ring = ap.append && !rs_cli_ring_given(&ro) ? NULL : rs_cli_ring_build_within(&ro, po.memory, &err);
    rs_cli_metrics_phase("ring", rs_now() - t0);
    if (rs_world_agree(&err) != 0) {  /* under MPI, every rank read the node file */
        rs_ring_free(ring);
        return rs_cli_fail("bucket", &err);
    }
    rs_bucket_job_opts o = {.pipeline = po, .ring = ring, .outdir = outdir, .force = force, .append = ap.append,
                            .on_seen = (rs_on_seen)ap.on_seen, .commit_every = ap.commit_every,
                            .commit_bytes = ap.commit_bytes, .given = ap.given, .quiet = quiet};
    rs_bucket_job_result res;
    rc = 0;
    rs_bucket_job_run(&o, &res, &err);
    rs_cli_metrics_pipeline(&res.run, po.ninputs - res.inputs_skipped, res.published);
    rs_cli_metrics_phase("pipeline", res.run.seconds);
    rs_cli_metrics_phase("publish", res.publish_seconds);
    if (rs_cli_metrics())
        rs_cli_metrics()->inputs_skipped = res.inputs_skipped;
    if ((res.published || (ap.append && !err.code)) && !quiet && rs_world_rank() == 0) {
        if (ap.append)  /* published, even if something failed after */
            rs_bucket_job_print_append(stderr, outdir, &res);
        if (res.published) {
            summary(res.ndest, &res.run, outdir, rs_now() - t_start);
            fprintf(stderr, "  flushed to disk and published in %.2f s\n", res.publish_seconds);
        }
    }
    if (err.code)
        rc = rs_cli_fail("bucket", &err);
    rs_bucket_job_result_free(&res);
    rs_ring_free(ring);
    return rc;
}
