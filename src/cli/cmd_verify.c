/* ringshard verify: proves that a bucket directory (bucket) or a move
 * directory (plan --emit) holds exactly what its manifest says, placed by
 * the manifest's ring(s). */
#include <stdio.h>
#include "cli/cli.h"
#include "ringshard/job_verify.h"
#include "ringshard/util.h"

typedef struct {
    rs_pipeline_opts po;
    int quiet;
    unsigned long long max_report;
} verify_args;

static const rs_opt opt_max_report = {.name = "max-report", .arg = "N",
                                      .help = "differences printed per kind (default 20; all are counted)",
                                      .kind = RS_KIND_INT, RS_AT(verify_args, max_report), .min = 1,
                                      .max = UINT32_MAX};

static const rs_opt_command verify_command = {
    "verify",
    "ringshard verify [OPTIONS] DIR",
    "Rescans a bucket directory (ringshard bucket) or a move directory\n"
    "(ringshard plan --emit) in parallel and checks it against DIR/manifest.json:\n"
    "the chain of generations of a directory that grows (every g<N>, each\n"
    "manifest's link to the one before it: every damage is reported);\n"
    "the ring descriptions against their fingerprints; the files listed against\n"
    "those present (none missing, none other); every file's header; every row's\n"
    "place (in a bucket directory, the file of the node the ring assigns; in a\n"
    "move directory, the file of the pair of the old and the new ring's owners);\n"
    "every file's rows, bytes, CRC-32 of the data and size, and the totals.\n"
    "Exit 0 when everything holds; 3 with one line per difference otherwise.\n",
    (const rs_opt_section[]){
        {    "\n",
         20,
         (const rs_opt_use[]){RS_USE(rs_opt_threads, verify_args, po.threads),
                              RS_USE_HELP(rs_opt_memory, verify_args, po.memory, "bound on buffers (default 1G)"),
                              RS_USE(rs_opt_zlib, verify_args, po.codec),
                              RS_USE_HELP(rs_opt_quiet, verify_args, quiet, "print only the differences"),
                              RS_USE_HELP(rs_opt_producers, verify_args, po.producers,
                                          "at most N files read at once (default 0: automatic; see bucket)"),
                              {&opt_max_report, 0, NULL, NULL}, RS_HELP_USE, {NULL, 0, NULL, NULL}},
         "\n", 0, NULL, NULL},
        RS_METRICS_SECTION(verify_args, NULL),
        RS_SECTIONS_END},
    RS_OPT_NOWHERE};

const rs_opt_command *rs_cmd_verify_options(void) { return &verify_command; }

int rs_cmd_verify(int argc, char **argv)
{
    verify_args a = {.max_report = 20};
    rs_pipeline_opts_default(&a.po);
    rs_error err = {0};
    int optind, r = rs_cli_parse_options(&verify_command, &a, argc, argv, &optind);
    if (r >= 0)
        return r;
    rs_pipeline_opts po = a.po;
    unsigned long long max_report = a.max_report;
    if (optind + 1 != argc)
        return rs_cli_usage_error("verify", "expected one directory");
    const char *dir = argv[optind];
    /* the progress line's decision and the signal handlers; the job reads
     * the directory's files as its inputs */
    int quiet = rs_cli_input_settle(&po, a.quiet);
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
