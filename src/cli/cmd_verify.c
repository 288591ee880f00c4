/* ringshard verify: proves that a bucket directory (bucket) or a move
 * directory (plan --emit) holds exactly what its manifest says, placed by
 * the manifest's ring(s). */
#include <stdio.h>
#include "cli/cli.h"
#include "ringshard/job_verify.h"
#include "ringshard/util.h"

static const char verify_help[] =
    "Usage: ringshard verify [OPTIONS] DIR\n"
    "Rescans a bucket directory (ringshard bucket) or a move directory\n"
    "(ringshard plan --emit) in parallel and checks it against DIR/manifest.json:\n"
    "the chain of generations of a directory that grows (every g<N>, each\n"
    "manifest's link to the one before it: every damage is reported);\n"
    "the ring descriptions against their fingerprints; the files listed against\n"
    "those present (none missing, none other); every file's header; every row's\n"
    "place (in a bucket directory, the file of the node the ring assigns; in a\n"
    "move directory, the file of the pair of the old and the new ring's owners);\n"
    "every file's rows, bytes, CRC-32 of the data and size, and the totals.\n"
    "Exit 0 when everything holds; 3 with one line per difference otherwise.\n\n"
    "  -j, --threads N   worker threads (default: $OMP_NUM_THREADS, else all cores)\n"
    "  --memory SIZE     bound on buffers (default 1G)\n"
    "  --zlib            use zlib instead of ISA-L for gzip\n"
    "  --quiet           print only the differences\n"
    "  --producers N     at most N files read at once (default 0: automatic; see bucket)\n"
    "  --max-report N    differences printed per kind (default 20; all are counted)\n"
    "  -h, --help        this help\n";

enum { OPT_MAX_REPORT = RS_OPT__FIRST_COMMAND };

int rs_cmd_verify(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"threads", required_argument, 0, RS_OPT_THREADS},
        {"memory", required_argument, 0, RS_OPT_MEMORY},
        {"zlib", no_argument, 0, RS_OPT_ZLIB},
        {"quiet", no_argument, 0, RS_OPT_QUIET},
        {"producers", required_argument, 0, RS_OPT_PRODUCERS},
        {"max-report", required_argument, 0, OPT_MAX_REPORT},
        RS_METRICS_LONGOPT,
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    rs_pipeline_opts po;
    rs_cli_input_defaults(&po);
    rs_error err = {0};
    unsigned long long max_report = 20;
    int c, r;
    optind = 1;
    while ((c = rs_cli_getopt("verify", argc, argv, "hj:", longopts)) != -1) {
        if ((r = rs_cli_input_option(&po, c, optarg, &err)) != 0) {
            if (r < 0)
                return rs_cli_fail("verify", &err);
            continue;
        }
        if ((r = rs_cli_metrics_option("verify", c, optarg, &err)) != 0) {
            if (r < 0)
                return rs_cli_fail("verify", &err);
            continue;
        }
        switch (c) {
        case OPT_MAX_REPORT:
            if (rs_cli_uint("--max-report", optarg, 1, UINT32_MAX, &max_report, &err) != 0)
                return rs_cli_fail("verify", &err);
            break;
        case 'h':
            fputs(verify_help, stdout);
            fputc('\n', rs_cli_summary());
            fputs(rs_cli_metrics_help, stdout);
            return 0;
        default: return rs_cli_getopt_exit(c);
        }
    }
    if (optind + 1 != argc)
        return rs_cli_usage_error("verify", "expected one directory");
    const char *dir = argv[optind];
    int quiet = po.progress < 0;
    /* the progress line's decision and the signal handlers; the job reads
     * the directory's files as its inputs */
    char *dummy[1] = {(char *)"-"};
    if (rs_cli_input_finish(&po, 1, dummy, 0, &err) < 0)
        return rs_cli_fail("verify", &err);
    rs_verify_job_opts o = {dir, po, max_report};
    rs_verify_job_result res;
    double t0 = rs_now();
    int rc = 0, ran = rs_verify_job_run(&o, &res, &err) == 0;
    rs_metrics *m = rs_cli_metrics();
    if (m) {
        m->inputs = res.files, m->rows_read = res.rows, m->bytes_read = res.bytes;
        rs_metrics_add_phase(m, "verify", rs_now() - t0);
    }
    for (size_t k = 0; k < res.nlines; k++)
        fprintf(rs_cli_summary(), "DIFF %s: %s\n", dir, res.lines[k]);
    if (ran && res.nlines < res.differences)
        fprintf(rs_cli_summary(), "DIFF %s: ... %llu more differences not shown (--max-report)\n", dir,
                (unsigned long long)(res.differences - res.nlines));
    if (ran && res.differences) {
        fprintf(rs_cli_summary(), "verify %s: FAILED: %llu differences\n", dir, (unsigned long long)res.differences);
        rc = RS_EXIT_VERIFY;
    } else if (ran && !quiet) {
        fprintf(rs_cli_summary(), "verify %s: OK: %s, %zu files, %llu rows, %llu bytes; every row where %s, "
                        "counts and CRC-32 match the manifest",
                dir, res.moves ? "moves" : "buckets", res.files, (unsigned long long)res.rows,
                (unsigned long long)res.bytes, res.moves ? "the old and new rings put it" : "the ring puts it");
        if (res.indexes)
            fprintf(rs_cli_summary(), "; %zu key indexes hold their files' keys", res.indexes);
        fputc('\n', rs_cli_summary());
    }
    if (ran)
        rs_cli_flush_stdout(&err);
    if (err.code)
        rc = rs_cli_fail("verify", &err);
    rs_verify_job_result_free(&res);
    return rc;
}
