/* ringshard compact: a bucket directory's generations merged into one
 * file per node. */
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "ringshard/job_compact.h"
#include "ringshard/util.h"
#include "ringshard/metrics.h"

static const char compact_help[] =
    "Usage: ringshard compact [OPTIONS] DIR\n"
    "Merges the generations that appends added to the bucket directory DIR\n"
    "(DIR/g<N>/<node>.csv.gz) into one file per node, DIR/<node>.csv.gz, as\n"
    "`bucket` writes it: the same rows in the same order, each node's files\n"
    "concatenated byte for byte (gzip members and zstd frames concatenate),\n"
    "each segment's header line left out.\n"
    "DIR is rebuilt beside itself and replaced in one step, as --force does;\n"
    "appends wait for it. A directory of one generation is left as it is.\n"
    "A damaged chain of generations (see `ringshard verify`), or an entry of\n"
    "DIR that no manifest names, is refused (exit 2), DIR left as it was;\n"
    "so is a file whose data is not what its manifest says (its CRC-32, checked\n"
    "as each file is copied, or a damaged gzip member or zstd frame) and a\n"
    "damaged key index, naming the file.\n"
    "`ringshard repair` rebuilds a damaged DIR from its intact generations.\n\n"
    "Options:\n"
    "  --memory SIZE          bound on the memory that merging a node's key indexes\n"
    "                         uses (default 16M, at least 2M); fewer sorted runs\n"
    "                         merged at once, never other bytes\n"
    "  --no-check             copy each file in the kernel (copy_file_range), its\n"
    "                         size checked only, instead of reading it once,\n"
    "                         checking its CRC-32 against its manifest and\n"
    "                         writing it out: faster, but a damaged file is merged\n"
    "                         into its node's base file\n"
    "  --quiet                no summary\n"
    "  -h, --help             this help\n";

enum { OPT_QUIET = RS_OPT__FIRST_COMMAND, OPT_MEMORY, OPT_NO_CHECK };

int rs_cmd_compact(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"quiet", no_argument, 0, OPT_QUIET},
        {"memory", required_argument, 0, OPT_MEMORY},
        {"no-check", no_argument, 0, OPT_NO_CHECK},
        RS_METRICS_LONGOPT,
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    int c, got, quiet = 0, no_check = 0;
    unsigned long long memory = 0;
    rs_error err = {0};
    optind = 1;
    while ((c = rs_cli_getopt("compact", argc, argv, "h", longopts)) != -1) {
        if ((got = rs_cli_metrics_option("compact", c, optarg, &err)) != 0) {
            if (got < 0)
                return rs_cli_fail("compact", &err);
            continue;
        }
        switch (c) {
        case OPT_QUIET: quiet = 1; break;
        case OPT_NO_CHECK: no_check = 1; break;
        case OPT_MEMORY:
            if (rs_cli_size("--memory", optarg, &memory, &err) != 0)
                return rs_cli_fail("compact", &err);
            if (memory < (2u << 20))
                return rs_cli_usage_error("compact", "--memory: at least 2M");
            break;
        case 'h':
            fputs(compact_help, stdout);
            fputc('\n', stdout);
            fputs(rs_cli_metrics_help, stdout);
            return 0;
        default: return rs_cli_getopt_exit(c);
        }
    }
    if (optind + 1 != argc)
        return rs_cli_usage_error("compact", "expected one directory");
    rs_cli_install_signals();
    rs_compact_job_opts o = {argv[optind], memory, no_check};
    rs_compact_job_result r;
    int rc = rs_compact_job_run(&o, &r, &err);
    rs_metrics *m = rs_cli_metrics();
    if (m) {
        m->inputs = r.files_before;
        m->rows_read = m->rows_written = r.rows;
        m->bytes_read = m->bytes_written = r.bytes;
        rs_metrics_add_phase(m, "merge", r.seconds);
    }
    if (rc != 0)
        return rs_cli_fail("compact", &err);
    if (quiet)
        return 0;
    if (!r.published)
        fprintf(stderr, "ringshard compact: %s has one generation (%llu): nothing to merge\n", o.dir,
                (unsigned long long)r.generation);
    else {
        char data[RS_HUMAN_MAX], copied[RS_HUMAN_MAX];
        fprintf(stderr,
                "ringshard compact: %s: %llu generations (%llu files) merged into %llu files, generation %llu: "
                "%llu rows, %s of data, %s copied in %.2f s\n",
                o.dir, (unsigned long long)r.generations, (unsigned long long)r.files_before,
                (unsigned long long)r.files_after, (unsigned long long)r.generation, (unsigned long long)r.rows,
                rs_human_bytes((double)r.bytes, data, sizeof data),
                rs_human_bytes((double)r.file_bytes, copied, sizeof copied), r.seconds);
    }
    return 0;
}
