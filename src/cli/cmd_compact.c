/* ringshard compact: a bucket directory's generations merged into one
 * file per node. */
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "ringshard/job_compact.h"
#include "ringshard/util.h"
#include "ringshard/metrics.h"

typedef struct {
    int quiet, no_check;
    unsigned long long memory;
} compact_args;

/* Not the pipeline's --memory: it bounds the merge of key indexes alone. */
static const rs_opt opt_memory = {.name = "memory", .arg = "SIZE",
                                  .help = "bound on the memory that merging a node's key indexes\n"
                                          "uses (default 16M, at least 2M); fewer sorted runs\n"
                                          "merged at once, never other bytes",
                                  .kind = RS_KIND_SIZE, RS_AT(compact_args, memory), .min = 2u << 20,
                                  .max = UINT64_MAX};
static const rs_opt opt_no_check = {.name = "no-check",
                                    .help = "copy each file in the kernel (copy_file_range), its\n"
                                            "size checked only, instead of reading it once,\n"
                                            "checking its CRC-32 against its manifest and\n"
                                            "writing it out: faster, but a damaged file is merged\n"
                                            "into its node's base file",
                                    .kind = RS_KIND_FLAG, RS_AT(compact_args, no_check), .set = 1};

static const rs_opt_command compact_command = {
    "compact",
    "ringshard compact [OPTIONS] DIR",
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
    "`ringshard repair` rebuilds a damaged DIR from its intact generations.\n",
    (const rs_opt_section[]){
        {    "\n",
         25,
         (const rs_opt_use[]){{&opt_memory, 0, NULL, NULL}, {&opt_no_check, 0, NULL, NULL},
                              RS_USE_HELP(rs_opt_quiet, compact_args, quiet, "no summary"), RS_HELP_USE,
                              {NULL, 0, NULL, NULL}},
         "\n", 0, "Options", NULL},
        RS_METRICS_SECTION(compact_args, NULL),
        RS_SECTIONS_END},
    RS_OPT_NOWHERE};

const rs_opt_command *rs_cmd_compact_options(void) { return &compact_command; }

int rs_cmd_compact(int argc, char **argv)
{
    compact_args a = {0};
    rs_error err = {0};
    int optind, rc = rs_cli_parse_options(&compact_command, &a, argc, argv, &optind);
    if (rc >= 0)
        return rc;
    int quiet = a.quiet;
    if (optind + 1 != argc)
        return rs_cli_usage_error("compact", "expected one directory");
    if (rs_cli_metrics_refuse_inside(argv[optind], &err) != 0)
        return rs_cli_fail("compact", &err);
    rs_cli_install_signals();
    rs_compact_job_opts o = {argv[optind], a.memory, a.no_check};
    rs_compact_job_result r;
    rc = rs_compact_job_run(&o, &r, &err);
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
