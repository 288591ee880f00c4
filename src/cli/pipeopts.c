/* What the commands that read data (bucket, dedup, plan with data, stats
 * on data, verify) do with their input options once parsed (their rows:
 * cli/optgroups.c): the inputs (with --files-from lists read as the
 * cluster layer shares them out: rs_cluster_file_lists_inputs), the
 * progress line, the signals. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/cli.h"
#include "cluster/cluster.h"
#include "ringshard/filelist.h"
#include "ringshard/interrupt.h"

/* The lists of this process's one command: the pipeline's options point
 * into them until exit. */
static rs_file_lists ff;

int rs_cli_files_from_option(int list, const char *arg, rs_error *err)
{
    if (!list)
        return ff.null = 1, 0;
    return rs_file_lists_add(&ff, arg, err);
}

int rs_cli_files_from_given(void)
{
    return ff.nlists > 0;
}

static void on_signal(int sig)
{
    (void)sig;
    rs_interrupt_signal();   /* the notice "ringshard CMD: stopping (interrupted)...", then the flag */
}

static int quiet_given;

int rs_cli_quiet(void) { return quiet_given; }

int rs_cli_input_settle(rs_pipeline_opts *po, int quiet)
{
    rs_cli_install_signals();
    quiet_given = quiet;
    po->progress = !quiet && isatty(STDERR_FILENO);
    return quiet;
}

int rs_cli_input_finish(rs_pipeline_opts *po, int quiet, int argc, char **argv, int first, rs_error *err)
{
    if (rs_csv_keyspec_check(po->key, po->header, err) != 0 ||
        rs_level_check("--level", po->compress, po->level, err) != 0)
        return -1;
    size_t nargs = first < argc ? (size_t)(argc - first) : 0;
    if (ff.null && !rs_cli_files_from_given())   /* an option that would do nothing is a mistake to say */
        return rs_error_set(err, RS_EXIT_USAGE, "--null goes with --files-from (it says how the lists' paths end)");
    if (!nargs && !rs_cli_files_from_given())
        return rs_error_set(err, RS_EXIT_USAGE, "no input files (use '-' for standard input)");
    rs_cli_install_signals();  /* before a list is read: it may be a quiet pipe */
    po->inputs = (const char *const *)(argv + first);
    po->ninputs = nargs;
    for (size_t i = 0, seen = 0; i < nargs; i++)   /* a second read of it would find it empty */
        if (!strcmp(argv[first + i], "-") && seen++)
            return rs_error_set(err, RS_EXIT_USAGE, "-: standard input given twice (it can be read once)");
    if (rs_cli_files_from_given() &&
        rs_cluster_file_lists_inputs(&ff, argv + first, nargs, &po->inputs, &po->ninputs, err) != 0)
        return -1;
    if (!po->ninputs)
        return rs_error_set(err, RS_EXIT_USAGE, "no input files (the --files-from lists are empty)");
    if (po->empty_inputs == RS_EMPTY_UNCHECKED)
        po->empty_inputs = RS_EMPTY_REFUSE;
    return rs_cli_input_settle(po, quiet);
}

void rs_cli_install_signals(void)
{
    (void)rs_interrupt_init();   /* without it a read of a quiet pipe can miss a signal */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);   /* a closed terminal or a logout: stop as cleanly */
    /* A file-size limit must fail the write (EFBIG), not kill the process;
     * a closed stderr or stdout must fail the write (EPIPE), not kill the
     * process after it published, with an exit code that hides the job's. */
    signal(SIGXFSZ, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
}
