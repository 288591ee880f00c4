/* What the commands that read data (bucket, dedup, plan with data, stats
 * on data, verify) do with their input options once parsed (their rows:
 * cli/optgroups.c): the inputs, the progress line, the signals.
 *
 * The inputs named by --files-from lists (ringshard/filelist.h): under MPI
 * every rank needs the same lists, and a list on standard input reaches
 * rank 0 only, so rank 0 reads every list and sends it to the others, and
 * rank 0 alone stats the files. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/cli.h"
#include "cluster/world.h"
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

int rs_cli_files_from_inputs(char **args, size_t nargs, const char *const **inputs, size_t *ninputs, rs_error *err)
{
    int me = rs_world_rank();
    if (rs_file_lists_args(&ff, args, nargs, err) != 0)
        return -1;
    for (size_t k = 0; k < ff.nlists && me == 0 && !err->code; k++)
        rs_file_lists_read(&ff, k, err);
    if (rs_world_agree(err) != 0)
        return -1;
    for (size_t k = 0; k < ff.nlists; k++) {
        uint64_t len = ff.lists[k].len;
        rs_world_bcast(&len, sizeof len, 0);
        char *text = me == 0 ? ff.lists[k].text : calloc(len + 1, 1);
        if (!text)
            abort();  /* as cluster.c: a rank cannot leave the others waiting */
        rs_world_bcast(text, len, 0);
        if (me != 0)
            rs_file_lists_adopt(&ff, k, text, (size_t)len);
    }
    if (rs_file_lists_split(&ff, args, nargs, err) == 0 && me == 0)
        rs_file_lists_check(&ff, nargs, err);
    if (rs_world_agree(err) != 0)
        return -1;
    *inputs = ff.inputs;
    *ninputs = ff.ninputs;
    return 0;
}

void rs_cli_input_defaults(rs_pipeline_opts *po)
{
    rs_pipeline_opts_default(po);
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
    if (!nargs && !rs_cli_files_from_given())
        return rs_error_set(err, RS_EXIT_USAGE, "no input files (use '-' for standard input)");
    rs_cli_install_signals();  /* before a list is read: it may be a quiet pipe */
    po->inputs = (const char *const *)(argv + first);
    po->ninputs = nargs;
    if (rs_cli_files_from_given() &&
        rs_cli_files_from_inputs(argv + first, nargs, &po->inputs, &po->ninputs, err) != 0)
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
