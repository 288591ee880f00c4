/* ringshard dedup: keep one row per key, at scale. Parses the options,
 * runs the dedup job (job_dedup.h, src/jobs/dedup.c: the two passes) and
 * prints its summary (cli/dedup_print.c). */
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "cli/dedup_print.h"
#include "cluster/world.h"
#include "ringshard/job_dedup.h"
#include "ringshard/util.h"
#include "ringshard/dataset.h"

static const char dedup_help[] =
    "Usage: ringshard dedup [OPTIONS] -o DIR INPUT...    (or --files-from LIST)\n"
    "       ringshard dedup [OPTIONS] -o DIR --buckets BUCKETDIR\n"
    "Keeps one row per key. Pass 1 buckets the rows by key on the ring (as\n"
    "`ringshard bucket`) into a temporary area; pass 2 deduplicates every bucket\n"
    "in parallel, in memory, comparing full key bytes. The output is a bucket\n"
    "directory like bucket's (DIR/<node>.csv.gz + manifest.json, published\n"
    "atomically), holding the surviving rows of each bucket in input order;\n"
    "it is byte-identical for any -j and any --memory.\n"
    "With --append, DIR keeps growing: a new row is kept only when its key is\n"
    "in neither DIR (the history, whose copy wins) nor earlier in the new\n"
    "inputs; the survivors are added as a new generation of DIR, each file with\n"
    "a key index, so the history's rows are never read again (docs/dedup.md).\n\n"
    "Dedup options:\n"
    "  -o, --output DIR       the output directory (required)\n"
    "  --keep first|last      which copy of a key survives, by input order: inputs\n"
    "                         in the order given, rows in file order (default first)\n"
    "  --by key|row           duplicates are rows with equal keys (default) or\n"
    "                         whole-row duplicates (equal row bytes)\n"
    "  --duplicates FILE      write every duplicated key: KEY<TAB>COUNT<TAB>KEPT-ROW\n"
    "                         (--by row: ROW<TAB>COUNT), escapes \\\\ \\t \\n \\r, by bucket\n"
    "                         then first occurrence; with --append, every new row\n"
    "                         dropped: KEY<TAB>WHERE<TAB>ROW, WHERE the generation\n"
    "                         holding the key (g00000003) or 'repeat' (an earlier\n"
    "                         new row kept). '-': standard output\n"
    "  --buckets BUCKETDIR    deduplicate an existing bucket directory (its manifest\n"
    "                         gives the ring, key and dialect; no INPUT)\n"
    "  --temp-compress gzip|zstd|none  pass 1's temporary buckets: plain (default,\n"
    "                         faster) or level 1 gzip/zstd (less temporary disk)\n"
    "  --force                replace an existing DIR (a ringshard output or empty)\n"
    "  --force-any            replace an existing DIR whatever it holds\n"
    "  --compress gzip|zstd|none  output as gzip members (default), zstd frames\n"
    "                         (DIR/<node>.csv.zst) or plain CSV\n"
    "  --level N              output level (default 1): gzip 1-9; zstd -131072 to 22\n"
    "                         but 0 (negative: zstd --fast=N)\n"
    "  -h, --help             this help\n\n"
    "Memory: a bucket is deduplicated in memory when its bytes plus a table of\n"
    "176 bytes per row fit in --memory / threads; a bigger bucket is split again\n"
    "on disk by an independent hash of the key, each part deduplicated on its own,\n"
    "with the same result. The summary says how many buckets were split.\n\n";

enum {
    OPT_FORCE = RS_OPT__FIRST_COMMAND, OPT_COMPRESS, OPT_LEVEL, OPT_KEEP, OPT_BY, OPT_DUPLICATES, OPT_BUCKETS,
    OPT_TEMP_COMPRESS, OPT_FORCE_ANY
};


/* dedup's own options. 1 if c is one (recorded in a), 0 if not; -1 with
 * err for a bad value, -2 with err for a usage error (err.msg: the message). */
static int dedup_option(rs_cli_dedup_args *a, int c, const char *arg, rs_error *err)
{
switch (c) {
    case 'o': a->outdir = arg; break;
    case OPT_FORCE: a->force |= RS_OUTDIR_FORCE; break;
    case OPT_FORCE_ANY: a->force |= RS_OUTDIR_FORCE | RS_OUTDIR_FORCE_ANY; break;
    case OPT_COMPRESS:
    case OPT_TEMP_COMPRESS: {
        int z;
        if (rs_cli_compress_arg(c == OPT_COMPRESS ? "--compress" : "--temp-compress", arg, &z, err) != 0)
            return -1;
        if (c == OPT_COMPRESS)
            a->compress = z;
        else
            a->temp_compress = z;
        break;
    }
    case OPT_LEVEL:
        if (rs_cli_level_arg("--level", arg, &a->level, err) != 0)
            return -1;
        break;
    case OPT_KEEP:
        a->keep_given = 1;
        if (!strcmp(arg, "first"))
            a->keep_last = 0;
        else if (!strcmp(arg, "last"))
            a->keep_last = 1;
        else
            return rs_error_set(err, RS_EXIT_USAGE, "--keep: expected first or last"), -2;
        break;
    case OPT_BY:
        if (!strcmp(arg, "key"))
            a->by_row = 0;
        else if (!strcmp(arg, "row"))
            a->by_row = 1;
        else
            return rs_error_set(err, RS_EXIT_USAGE, "--by: expected key or row"), -2;
        break;
    case OPT_DUPLICATES: a->dups_path = arg; break;
    case OPT_BUCKETS: a->buckets_dir = arg; break;
    default: return 0;
    }
    return 1;
}

/* Parses the options into *a (*ring_given: a ring option was given).
 * Returns -1 to go on, else the exit code (the error printed; 0 after
 * --help). */
static int parse_args(int argc, char **argv, rs_cli_dedup_args *a, int *ring_given)
{
    static const struct option longopts[] = {
        RS_RING_LONGOPTS,
        RS_INPUT_LONGOPTS,
        {"output", required_argument, 0, 'o'},
        {"force", no_argument, 0, OPT_FORCE},
        {"force-any", no_argument, 0, OPT_FORCE_ANY},
        {"compress", required_argument, 0, OPT_COMPRESS},
        {"level", required_argument, 0, OPT_LEVEL},
        {"keep", required_argument, 0, OPT_KEEP},
        {"by", required_argument, 0, OPT_BY},
        {"duplicates", required_argument, 0, OPT_DUPLICATES},
        {"buckets", required_argument, 0, OPT_BUCKETS},
        {"temp-compress", required_argument, 0, OPT_TEMP_COMPRESS},
        RS_APPEND_LONGOPTS,
        RS_METRICS_LONGOPT,
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    rs_error err = {0};
    int c, r;
    optind = 1;
    while ((c = rs_cli_getopt("dedup", argc, argv, "ho:j:", longopts)) != -1) {
        if ((r = rs_cli_append_option(&a->ap, c, optarg, &err)) != 0) {
            if (r < 0)
                return rs_cli_fail("dedup", &err);
            continue;
        }
        if (c == OPT_COMPRESS || c == OPT_LEVEL)
            a->ap.given |= c == OPT_COMPRESS ? RS_GIVEN_COMPRESS : RS_GIVEN_LEVEL;
        if (rs_cli_ring_option(&a->ro, c, optarg)) {
            *ring_given = 1;
            continue;
        }
        if ((r = rs_cli_input_option(&a->po, c, optarg, &err)) != 0) {
            if (r < 0)
                return rs_cli_fail("dedup", &err);
            if (c == RS_OPT_KEY || c == RS_OPT_DELIMITER || c == RS_OPT_HEADER || c == RS_OPT_NO_HEADER)
                a->key_given = 1;
            continue;
        }
        if ((r = rs_cli_metrics_option("dedup", c, optarg, &err)) != 0) {
            if (r < 0)
                return rs_cli_fail("dedup", &err);
            continue;
        }
        if ((r = dedup_option(a, c, optarg, &err)) != 0) {
            if (r == -1)
                return rs_cli_fail("dedup", &err);
            if (r == -2)
                return rs_cli_usage_error("dedup", err.msg);
            continue;
        }
        switch (c) {
        case 'h':
            fputs(dedup_help, stdout);
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
    return -1;
}

/* The options that do not fit together, in the order they were always
 * checked, and the inputs (INPUT... and --files-from, or --buckets).
 * Returns -1 to go on, else the exit code (the error printed). */
static int check_args(int argc, char **argv, rs_cli_dedup_args *a, int ring_given)
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
        if (optind < argc || rs_cli_files_from_given())
            return rs_cli_usage_error("dedup", "--buckets takes no INPUT nor --files-from (the bucket directory is "
                                               "the input)");
        if (ring_given || a->key_given)
            return rs_cli_usage_error("dedup", "--buckets: the ring, key and CSV options come from its manifest");
        a->quiet = a->po.progress < 0;
        a->po.progress = 0;
        rs_cli_install_signals();
    } else {
        a->quiet = rs_cli_input_finish(&a->po, argc, argv, optind, &err);
        if (a->quiet < 0)
            return rs_cli_fail("dedup", &err);
    }
    if (rs_cli_level_check("--level", a->compress, a->level, &err) != 0)
        return rs_cli_fail("dedup", &err);

    if (rs_cli_outside_output("--on-bad-row quarantine=", a->po.quarantine, a->outdir, &err) != 0 ||
        rs_cli_outside_output("--duplicates ", a->dups_path, a->outdir, &err) != 0 ||
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
    rs_cli_input_defaults(&a.po);
    a.compress = 1;
    a.level = 1;
    a.temp_compress = 0;  /* measured: plain temporary buckets are faster (docs/dedup.md) */
    rs_error err = {0};
    int r, ring_given = 0;
    if ((r = parse_args(argc, argv, &a, &ring_given)) >= 0 || (r = check_args(argc, argv, &a, ring_given)) >= 0)
        return r;

    /* the ring: given, or (--buckets) the directory's, which the job reads */
    rs_ring *ring = NULL;
    if (!a.buckets_dir) {
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
        rs_cli_dedup_append_summary(&a, &res);
    fill_metrics(&a, &res);
    if (res.published && !a.quiet && rs_world_rank() == 0)  /* published, even if something failed after */
        rs_cli_dedup_summary(&a, &res);
    if (res.duplicates_cut && rs_world_rank() == 0)  /* not an error: docs/dedup.md, "The duplicates report" */
        fprintf(stderr, "ringshard dedup: --duplicates: its reader left after %llu bytes: the rest of the report was "
                "not written (the dedup itself went on)\n", res.duplicates_written);
    if (err.code)
        rc = rs_cli_fail("dedup", &err);
    rs_dedup_job_result_free(&res);
    rs_ring_free(ring);
    return rc;
}
