/* ringshard bucket: every row into the output of the node that owns its key. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "cluster/world.h"
#include "ringshard/job_bucket.h"
#include "ringshard/dataset.h"
#include "ringshard/util.h"

static const char bucket_help[] =
    "Usage: ringshard bucket [OPTIONS] -o DIR INPUT...   (or --files-from LIST)\n"
    "Streams every row of the inputs, places its key on the ring and writes the\n"
    "row into DIR/<node>.csv.gz, one file per node (a node that gets nothing has\n"
    "a header-only file), plus DIR/manifest.json. Rows keep their bytes and\n"
    "their input order; line ends become LF. The output is byte-identical for\n"
    "any -j. DIR appears only when complete (written beside it, then renamed).\n"
    "With --append, the rows are added to DIR as a new generation instead:\n"
    "DIR/g<N>/<node>.csv.gz for each node that got rows, published in one rename.\n\n"
    "Output options:\n"
    "  -o, --output DIR       the output directory (required)\n"
    "  --force                replace an existing DIR (a ringshard output or empty)\n"
    "  --force-any            replace an existing DIR whatever it holds\n"
    "  --compress gzip|zstd|none  gzip members (default), zstd frames (.csv.zst)\n"
    "                         or plain CSV\n"
    "  --level N              gzip level 1-9 (default 1): ISA-L's level 1, 2, or 3\n"
    "                         for 3-9; with --zlib, zlib's level N. zstd: -131072\n"
    "                         to 22 but 0 (default 1; negative: zstd --fast=N)\n"
    "  --direct-io auto|on|off  write DIR's files with O_DIRECT where the file\n"
    "                         system takes it (auto, the default: plain output\n"
    "                         only; on: compressed too) or through the page cache\n"
    "  --keys-only            write only the key column\n"
    "  -h, --help             this help\n\n"
    "File names: a node's name with bytes other than [a-z0-9-] (and '_' inside) as\n"
    "%XX, so that no name can leave DIR or be taken for another's, also where the\n"
    "file system folds case (\"A\" is %41.csv.gz, \"eu.csv1\" eu%2Ecsv1.csv.gz).\n\n";

enum { OPT_FORCE = RS_OPT__FIRST_COMMAND, OPT_KEYS_ONLY, OPT_FORCE_ANY };


/* The summary of an append: generations, inputs ingested and skipped. */
static void append_summary(const rs_bucket_job_result *r, const char *dir)
{
    if (!r->generations && r->inputs_empty) {
        fprintf(stderr, "ringshard bucket: %s not created: its inputs hold no header line and no row (the first "
                        "append with data creates it)\n", dir);
        return;
    }
    if (!r->generations) {
        fprintf(stderr, "ringshard bucket: nothing new for %s: %llu input%s already ingested\n", dir,
                (unsigned long long)r->inputs_skipped, r->inputs_skipped == 1 ? "" : "s");
        return;
    }
    if (r->first_gen == r->last_gen)
        fprintf(stderr, "ringshard bucket: generation %llu of %s", (unsigned long long)r->last_gen, dir);
    else
        fprintf(stderr, "ringshard bucket: generations %llu-%llu (%u) of %s", (unsigned long long)r->first_gen,
                (unsigned long long)r->last_gen, r->generations, dir);
    fprintf(stderr, ": %llu input%s ingested, %llu skipped as already ingested\n",
            (unsigned long long)r->inputs_ingested, r->inputs_ingested == 1 ? "" : "s",
            (unsigned long long)r->inputs_skipped);
    rs_cli_compact_hint("bucket", dir, r->dir_generations, r->dir_files);
}

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
    static const struct option longopts[] = {
        RS_RING_LONGOPTS,
        RS_INPUT_LONGOPTS,
        {"output", required_argument, 0, 'o'},
        RS_OUTPUT_LONGOPTS,
        RS_APPEND_LONGOPTS,
        {"force", no_argument, 0, OPT_FORCE},
        {"force-any", no_argument, 0, OPT_FORCE_ANY},
        {"keys-only", no_argument, 0, OPT_KEYS_ONLY},
        RS_METRICS_LONGOPT,
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    rs_cli_ring ro = {0};
    rs_pipeline_opts po;
    rs_cli_input_defaults(&po);
    const char *outdir = NULL;
    int force = 0, c, r;
    rs_cli_append ap = {0};
    rs_error err = {0};
    optind = 1;
    while ((c = rs_cli_getopt("bucket", argc, argv, "ho:j:", longopts)) != -1) {
        if ((r = rs_cli_append_option(&ap, c, optarg, &err)) != 0) {
            if (r < 0)
                return rs_cli_fail("bucket", &err);
            continue;
        }
        if (rs_cli_ring_option(&ro, c, optarg))
            continue;
        if ((r = rs_cli_input_option(&po, c, optarg, &err)) != 0) {
            if (r < 0)
                return rs_cli_fail("bucket", &err);
            continue;
        }
        if ((r = rs_cli_metrics_option("bucket", c, optarg, &err)) != 0) {
            if (r < 0)
                return rs_cli_fail("bucket", &err);
            continue;
        }
        if ((r = rs_cli_output_option("bucket", &po, c, optarg)) != 0) {
            if (r < 0)
                return RS_EXIT_USAGE;
            continue;
        }
        switch (c) {
        case 'o': outdir = optarg; break;
        case OPT_FORCE: force |= RS_OUTDIR_FORCE; break;
        case OPT_FORCE_ANY: force |= RS_OUTDIR_FORCE | RS_OUTDIR_FORCE_ANY; break;
        case OPT_KEYS_ONLY:
            po.keys_only = 1;
            ap.given |= RS_GIVEN_KEYS_ONLY;
            break;
        case 'h':
            fputs(bucket_help, stdout);
            fputs(rs_cli_append_help, stdout);
            fputc('\n', stdout);
            fputs(rs_cli_metrics_help, stdout);
            fputc('\n', stdout);
            fputs(rs_cli_input_help, stdout);
            fputc('\n', stdout);
            fputs(rs_cli_ring_help, stdout);
            return 0;
        default: return rs_cli_getopt_exit(c);
        }
    }
    if (!outdir)
        return rs_cli_usage_error("bucket", "no output directory (-o DIR)");
    int rc = rs_cli_dir_not_stdout("bucket", "-o", outdir, "a bucket directory",
                                   "write it to a directory and read it with ringshard cat");
    if (rc >= 0)
        return rc;
    if (rs_cli_append_finish(&ap, force, &err) != 0)
        return rs_cli_fail("bucket", &err);
    int quiet = rs_cli_input_finish(&po, argc, argv, optind, &err);
    if (quiet < 0 || rs_cli_outside_output("--on-bad-row quarantine=", po.quarantine, outdir, &err) != 0)
        return rs_cli_fail("bucket", &err);
    double t0 = rs_now();
    rs_ring *ring = rs_cli_ring_build_within(&ro, po.memory, &err);
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
            append_summary(&res, outdir);
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
