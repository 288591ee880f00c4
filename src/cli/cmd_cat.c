/* ringshard cat: a bucket directory's rows of some nodes, across its
 * generations, as one CSV stream (jobs/cat.c does the work). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "ringshard/deflate.h"
#include "ringshard/job_cat.h"
#include "ringshard/outfile.h"

typedef struct {
    rs_cat_job_opts job;
    const char *output;
    int all, quiet;
} cat_args;

static const rs_opt opt_all = {.name = "all", .help = "every node, in the order of DIR's base files",
                               .kind = RS_KIND_FLAG, RS_AT(cat_args, all), .set = 1};
static const rs_opt opt_output = {.name = "output", .letter = 'o', .arg = "FILE",
                                  .help = "write to FILE (replaced whole once complete; - is\n"
                                          "standard output, the default)",
                                  .kind = RS_KIND_STRING, RS_AT(cat_args, output)};

static const rs_opt_command cat_command = {
    "cat",
    "ringshard cat [OPTIONS] DIR NODE...\n"
    "ringshard cat [OPTIONS] --all DIR",
    "Writes the rows of each NODE of the bucket directory DIR, across all its\n"
    "generations (the base file, then each appended generation's segment in\n"
    "order), as one CSV stream with one header line (when DIR has one),\n"
    "decompressed: what one `bucket` run over every input DIR ingested holds\n"
    "in those nodes' files. Each file is checked as it is read against its\n"
    "manifest (rows, data bytes, CRC-32, size): a file that differs stops the\n"
    "stream, named (exit 3).\n",
    (const rs_opt_section[]){
        {"\n",
         25,
         (const rs_opt_use[]){{&opt_all, 0, NULL, NULL}, {&opt_output, 0, NULL, NULL},
                              RS_USE_HELP(rs_opt_compress, cat_args, job.compress,
                                          "compress the stream (default none)"),
                              RS_USE_HELP(rs_opt_level, cat_args, job.level,
                                          "compression level (gzip 1-9, default 1; zstd)"),
                              RS_USE_HELP(rs_opt_threads, cat_args, job.threads,
                                          "files decoded at once (default: $OMP_NUM_THREADS, else\n"
                                          "all cores); the stream is the same for any N"),
                              RS_USE_HELP(rs_opt_quiet, cat_args, quiet, "no summary (with -o FILE)"), RS_HELP_USE,
                              {NULL, 0, NULL, NULL}},
         NULL, 0, "Options", NULL},
        RS_SECTIONS_END},
    RS_OPT_NOWHERE};

const rs_opt_command *rs_cmd_cat_options(void) { return &cat_command; }

/* Parses the options into *a: -1 to go on, else the exit code (the error
 * printed). */
static int parse(int argc, char **argv, cat_args *a)
{
    int optind, rc;
    a->job.level = INT_MIN;   /* not given: follows --compress */
    if ((rc = rs_cli_parse_options(&cat_command, a, argc, argv, &optind)) >= 0)
        return rc;
    rs_error e = {0}, *err = &e;
    if (a->job.level == INT_MIN)
        a->job.level = a->job.compress == RS_COMPRESS_ZSTD ? 3 : 1;
    if (rs_level_check("--level", a->job.compress, a->job.level, err) != 0)
        return rs_cli_fail("cat", err);
    int n = argc - optind;
    if (n < 1)
        rs_error_set(err, RS_EXIT_USAGE, "expected a bucket directory and nodes (or --all)");
    else if (a->all && n > 1)
        rs_error_set(err, RS_EXIT_USAGE, "--all and nodes: name nodes or give --all, not both");
    else if (!a->all && n < 2)
        rs_error_set(err, RS_EXIT_USAGE, "expected nodes after %s (or --all for every node)", argv[optind]);
    if (err->code)
        return rs_cli_fail("cat", err);
    a->job.dir = argv[optind];
    a->job.nodes = (const char *const *)argv + optind + 1;
    a->job.nnodes = (size_t)n - 1;
    return -1;
}

int rs_cmd_cat(int argc, char **argv)
{
    cat_args a = {0};
    rs_error err = {0};
    int p = parse(argc, argv, &a);
    if (p >= 0)
        return p;
    rs_cli_install_signals();
    rs_outfile of = {0};
    int to_file = a.output && strcmp(a.output, "-") != 0;
    a.job.out = to_file ? rs_outfile_open(&of, a.output, &err) : stdout;
    a.job.out_name = to_file ? a.output : "standard output";
    if (!a.job.out)
        return rs_cli_fail("cat", &err);
    rs_cat_job_result r;
    int rc = rs_cat_job_run(&a.job, &r, &err);
    if (to_file && rc == 0)
        rc = rs_outfile_commit(&of, &err);
    else if (to_file)
        rs_outfile_abort(&of);
    else if (rc == 0 && fflush(stdout) != 0)
        rc = rs_error_set(&err, RS_EXIT_IO, "standard output: write failed: %s", strerror(errno));
    if (rc != 0)
        return rs_cli_fail("cat", &err);
    if (to_file && !a.quiet)
        fprintf(stderr, "ringshard cat: %s: %llu rows of %zu nodes (%llu files, %llu generations) into %s\n",
                a.job.dir, (unsigned long long)r.rows, (size_t)r.nodes,
                (unsigned long long)r.files, (unsigned long long)r.generations, a.output);
    return 0;
}
