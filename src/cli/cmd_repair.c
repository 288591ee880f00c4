/* ringshard repair: a bucket directory whose chain of generations is
 * damaged rebuilt from its intact generations, the damaged one kept aside. */
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "ringshard/job_repair.h"
#include "ringshard/metrics.h"

typedef struct {
    int quiet;
} repair_args;

static const rs_opt_command repair_command = {
    "repair",
    "ringshard repair [OPTIONS] DIR",
    "Rebuilds the bucket directory DIR when it is damaged: its chain of\n"
    "generations (a generation missing or renamed, a manifest missing or\n"
    "unreadable, a digest that does not chain) or a file (missing, cut\n"
    "short, longer, or whose bytes are not what its manifest says: every\n"
    "file is read and its CRC-32 checked, as `ringshard verify DIR` does,\n"
    "which names the same files). Keeps every data file that is what its\n"
    "manifest says, of the base and of every generation whose manifest\n"
    "reads, after a gap too. A damaged data file costs its own rows only\n"
    "(NOT KEPT): its generation's other files are kept, and of a gzip or\n"
    "zstd file that holds one input's rows, its intact members too (only\n"
    "the rows of its damaged members are lost; a damaged header line's\n"
    "member costs none: KEPT); the new manifest records which rows of\n"
    "which node the inputs whose rows it held lost, and those are named:\n"
    "an append of them again writes only those rows, bringing them back\n"
    "once. A file longer\n"
    "than its manifest says whose first bytes are intact is cut back to\n"
    "them (CUT BACK); a damaged key index costs no row: the new DIR has\n"
    "none, and the next `dedup --append` builds them (INDEXES NOT CARRIED).\n"
    "What is kept is merged into one file per node as compact writes them\n"
    "and published in one exchange with DIR; the damaged directory is kept\n"
    "whole as DIR.damaged.<N>, for inspection. Prints on stdout each damage\n"
    "(DAMAGE), each file not kept with its rows, node and inputs (NOT\n"
    "KEPT), each node's rows kept and not kept (NODE) and each entry no\n"
    "manifest names (NOT CARRIED: it stays in DIR.damaged.<N>); on stderr\n"
    "when --metrics - takes stdout. A directory\n"
    "without damage is left as it is. Exit 0 when every row was kept, 3\n"
    "when DIR was rebuilt without some (listed), 2 when an interrupted\n"
    "repair left a complete directory beside DIR (the message says where\n"
    "and how to put it back).\n",
    (const rs_opt_section[]){
        {    "\n",
         25,
         (const rs_opt_use[]){RS_USE_HELP(rs_opt_quiet, repair_args, quiet, "no summary"), RS_HELP_USE,
                              {NULL, 0, NULL, NULL}},
         "\n", 0, "Options", NULL},
        RS_METRICS_SECTION(repair_args, NULL),
        RS_SECTIONS_END},
    RS_OPT_NOWHERE};

const rs_opt_command *rs_cmd_repair_options(void) { return &repair_command; }

/* The summary line on stderr. */
static void summary(const char *dir, const rs_repair_job_result *r)
{
    if (r->whole) {
        fprintf(stderr, "ringshard repair: %s: no damage: nothing to repair%s\n", dir,
                r->strays ? " (it holds entries no manifest names: `ringshard verify` lists them)" : "");
        return;
    }
    fprintf(stderr, "ringshard repair: %s rebuilt from %llu generation%s (to generation %llu): %llu rows in %llu "
            "file%s; the damaged directory is %s", dir, (unsigned long long)r->generations,
            r->generations == 1 ? "" : "s", (unsigned long long)r->generation, (unsigned long long)r->rows,
            (unsigned long long)r->files_after, r->files_after == 1 ? "" : "s", r->aside);
    if (r->cut_back)
        fprintf(stderr, "; %zu longer files cut back (every row kept)", r->cut_back);
    if (r->rewritten)
        fprintf(stderr, "; %zu files rewritten (stored bytes altered, every row kept)", r->rewritten);
    if (r->lost_files && !r->kept_in_part)
        fprintf(stderr, "; %llu damaged files not kept (%llu rows; their generations' other files kept)",
                (unsigned long long)r->lost_files, (unsigned long long)r->lost_rows);
    else if (r->kept_in_part)
        fprintf(stderr, "; %llu damaged files not kept, %llu kept but for their damaged members (%llu rows not kept; "
                "their generations' other files kept)", (unsigned long long)r->lost_files,
                (unsigned long long)r->kept_in_part, (unsigned long long)r->lost_rows);
    if (r->lost_generations)
        fprintf(stderr, "; %llu generations not kept (without a usable manifest: their rows unknown; they stay in %s)",
                (unsigned long long)r->lost_generations, r->aside);
    fputc('\n', stderr);
}

int rs_cmd_repair(int argc, char **argv)
{
    repair_args a = {0};
    rs_error err = {0};
    int optind, rc = rs_cli_parse_options(&repair_command, &a, argc, argv, &optind);
    if (rc >= 0)
        return rc;
    int quiet = a.quiet;
    if (optind + 1 != argc)
        return rs_cli_usage_error("repair", "expected one directory");
    if (rs_cli_metrics_refuse_inside(argv[optind], &err) != 0)
        return rs_cli_fail("repair", &err);
    rs_cli_install_signals();
    rs_repair_job_opts o = {argv[optind]};
    rs_repair_job_result r;
    rc = rs_repair_job_run(&o, &r, &err);
    rs_metrics *m = rs_cli_metrics();
    if (m) {
        m->rows_written = r.rows;
        m->bytes_written = r.file_bytes;
        m->repair = 1;
        m->rows_not_kept = r.lost_rows;
        /* the file is written once the command returns (main): what it
         * points to stays, reachable, in for_metrics */
        static rs_repair_job_result for_metrics;
        for_metrics = (rs_repair_job_result){.nnodes = r.nnodes, .node = r.node, .node_kept = r.node_kept,
                                             .node_lost = r.node_lost, .nagain = r.nagain, .again = r.again};
        r.nnodes = r.nagain = 0, r.node = r.again = NULL, r.node_kept = r.node_lost = NULL;
        m->nrepair_nodes = for_metrics.nnodes, m->repair_node = (const char *const *)for_metrics.node;
        m->repair_kept = for_metrics.node_kept, m->repair_lost = for_metrics.node_lost;
        m->nrepair_inputs = for_metrics.nagain, m->repair_input = (const char *const *)for_metrics.again;
        rs_metrics_add_phase(m, "repair", r.seconds);
    }
    FILE *report = rs_cli_summary();   /* stderr when --metrics - takes stdout */
    for (size_t k = 0; k < r.nlines; k++)
        fprintf(report, "%s\n", r.lines[k]);
    if (rc == 0 && r.nlines && report == stdout)
        rs_cli_flush_stdout(&err);
    if (rc != 0 || err.code) {
        rs_repair_job_result_free(&r);
        return rs_cli_fail("repair", &err);
    }
    if (!quiet)
        summary(o.dir, &r);
    rc = r.lost_generations || r.lost_files || r.lost_rows ? RS_EXIT_VERIFY : 0;
    rs_repair_job_result_free(&r);
    return rc;
}
