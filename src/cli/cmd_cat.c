/* ringshard cat: a bucket directory's rows of some nodes, across its
 * generations, as one CSV stream (jobs/cat.c does the work). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "ringshard/deflate.h"
#include "ringshard/job_cat.h"
#include "ringshard/outfile.h"

static const char cat_help[] =
    "Usage: ringshard cat [OPTIONS] DIR NODE...\n"
    "       ringshard cat [OPTIONS] --all DIR\n"
    "Writes the rows of each NODE of the bucket directory DIR, across all its\n"
    "generations (the base file, then each appended generation's segment in\n"
    "order), as one CSV stream with one header line (when DIR has one),\n"
    "decompressed: what one `bucket` run over every input DIR ingested holds\n"
    "in those nodes' files. Each file is checked as it is read against its\n"
    "manifest (rows, data bytes, CRC-32, size): a file that differs stops the\n"
    "stream, named (exit 3).\n\n"
    "Options:\n"
    "  --all                  every node, in the order of DIR's base files\n"
    "  -o, --output FILE      write to FILE (replaced whole once complete; - is\n"
    "                         standard output, the default)\n"
    "  --compress gzip|zstd|none  compress the stream (default none)\n"
    "  --level N              compression level (gzip 1-9, default 1; zstd)\n"
    "  -j, --threads N        files decoded at once (default: $OMP_NUM_THREADS, else\n"
    "                         all cores); the stream is the same for any N\n"
    "  --quiet                no summary (with -o FILE)\n"
    "  -h, --help             this help\n";

enum { OPT_ALL = RS_OPT__FIRST_COMMAND, OPT_QUIET };

typedef struct {
    rs_cat_job_opts job;
    const char *output;
    int all, quiet, level_given;
} cat_args;

static int parse(int argc, char **argv, cat_args *a, rs_error *err)
{
    static const struct option longopts[] = {
        {"all", no_argument, 0, OPT_ALL},
        {"output", required_argument, 0, 'o'},
        {"compress", required_argument, 0, RS_OPT_COMPRESS},
        {"level", required_argument, 0, RS_OPT_LEVEL},
        {"threads", required_argument, 0, RS_OPT_THREADS},
        {"quiet", no_argument, 0, OPT_QUIET},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    int c;
    unsigned long long v;
    optind = 1;
    while ((c = rs_cli_getopt("cat", argc, argv, "o:j:h", longopts)) != -1) {
        switch (c) {
        case OPT_ALL: a->all = 1; break;
        case 'o': a->output = optarg; break;
        case RS_OPT_COMPRESS:
            if (rs_cli_compress_arg("--compress", optarg, &a->job.compress, err) != 0)
                return -1;
            break;
        case RS_OPT_LEVEL:
            if (rs_cli_level_arg("--level", optarg, &a->job.level, err) != 0)
                return -1;
            a->level_given = 1;
            break;
        case 'j':
        case RS_OPT_THREADS:
            if (rs_cli_uint("-j", optarg, 1, 256, &v, err) != 0)
                return -1;
            a->job.threads = (int)v;
            break;
        case OPT_QUIET: a->quiet = 1; break;
        case 'h': fputs(cat_help, stdout); return 1;
        default: return c == RS_CLI_GETOPT_VERSION ? 1 : -2;   /* said by rs_cli_getopt */
        }
    }
    if (!a->level_given)
        a->job.level = a->job.compress == RS_COMPRESS_ZSTD ? 3 : 1;
    if (rs_cli_level_check("--level", a->job.compress, a->job.level, err) != 0)
        return -1;
    int n = argc - optind;
    if (n < 1)
        return rs_error_set(err, RS_EXIT_USAGE, "expected a bucket directory and nodes (or --all)");
    if (a->all && n > 1)
        return rs_error_set(err, RS_EXIT_USAGE, "--all and nodes: name nodes or give --all, not both");
    if (!a->all && n < 2)
        return rs_error_set(err, RS_EXIT_USAGE, "expected nodes after %s (or --all for every node)", argv[optind]);
    a->job.dir = argv[optind];
    a->job.nodes = (const char *const *)argv + optind + 1;
    a->job.nnodes = (size_t)n - 1;
    return 0;
}

int rs_cmd_cat(int argc, char **argv)
{
    cat_args a = {0};
    rs_error err = {0};
    int p = parse(argc, argv, &a, &err);
    if (p > 0)
        return 0;
    if (p < 0)
        return p == -2 ? RS_EXIT_USAGE : rs_cli_fail("cat", &err);
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
