/* Input, CSV and execution options shared by the commands that read data
 * (bucket, plan with data, stats on data). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/cli.h"
#include "ringshard/interrupt.h"

const char rs_cli_input_help[] =
    "Input options:\n"
    "  INPUT...               CSV files, gzip, zstd or plain (by content), '-' = stdin\n"
    "  --key COL[,COL...]     key column(s) by header name or 1-based index (default 1);\n"
    "                         several columns make a composite key joined by --key-sep\n"
    "  --key-sep C            separator of composite keys (default '|')\n"
    "  --delimiter C          field delimiter: a character, or 'tab' (default ',')\n"
    "  --header / --no-header the first line of every input is a header (default) or not\n"
    "  --max-record SIZE      longest record allowed (default and upper bound: about --memory / 32)\n"
    "  --on-bad-row fail|skip|quarantine=FILE\n"
    "                         a malformed row stops the run (default, exit 2), is counted\n"
    "                         and skipped, or is also written to FILE with its reason\n"
    "                         ('-': standard output)\n"
    "  -j, --threads N        worker threads (default: $OMP_NUM_THREADS, else all cores)\n"
    "  --memory SIZE          bound on the memory used (default 1G, at least 32M)\n"
    "  --producers N          at most N inputs (or units) inflated at once, each by a\n"
    "                         lane of the -j threads (default 0: automatic, about one per\n"
    "                         4 threads with gzip or zstd output, 3 without; fewer if --memory\n"
    "                         cannot hold their batches)\n"
    "  --zlib                 use zlib instead of ISA-L for gzip\n"
    "  --quiet                no progress line and no summary\n"
    "  --allow-empty          an input without rows (0 bytes; a header only when --key\n"
    "                         names the column) is counted, not an error (default:\n"
    "                         exit 2 naming it, nothing written)\n"
    "  --files-from LIST      also read the inputs named in LIST, one path a line ('-':\n"
    "                         stdin), after those on the command line; may be repeated.\n"
    "                         Empty lines, a CR at a line's end, a missing file, a\n"
    "                         directory or a file given twice (by any name) are errors\n"
    "  --null                 the lists' paths end with NUL (find -print0), not LF\n";

int rs_cli_input_option(rs_pipeline_opts *po, int code, const char *arg, rs_error *err)
{
    unsigned long long v;
    switch (code) {
    case RS_OPT_KEY: po->key = arg; return 1;
    case RS_OPT_KEY_SEP:
        if (strlen(arg) != 1)
            return rs_error_set(err, RS_EXIT_USAGE, "--key-sep: expected one character, not '%s'", arg), -1;
        po->key_sep = arg[0];
        return 1;
    case RS_OPT_DELIMITER:
        if (!strcmp(arg, "tab") || !strcmp(arg, "\\t"))
            po->dialect.delim = '\t';
        else if (!strcmp(arg, "\""))
            return rs_error_set(err, RS_EXIT_USAGE, "--delimiter: a double quote cannot be the delimiter (it quotes "
                                                    "fields)"), -1;
        else if (!strcmp(arg, "\n") || !strcmp(arg, "\r"))
            return rs_error_set(err, RS_EXIT_USAGE, "--delimiter: a line end (%s) cannot be the delimiter (it ends "
                                                    "records)", arg[0] == '\n' ? "LF" : "CR"), -1;
        else if (strlen(arg) == 1)
            po->dialect.delim = arg[0];
        else if (!*arg)
            return rs_error_set(err, RS_EXIT_USAGE, "--delimiter: empty (expected one character or 'tab')"), -1;
        else
            return rs_error_set(err, RS_EXIT_USAGE, "--delimiter: expected one character (one byte) or 'tab', not "
                                                    "'%s' (%zu bytes)", arg, strlen(arg)), -1;
        return 1;
    case RS_OPT_HEADER: po->header = 1; return 1;
    case RS_OPT_NO_HEADER: po->header = 0; return 1;
    case RS_OPT_MAX_RECORD:
        if (rs_cli_size("--max-record", arg, &v, err) != 0 || v == 0)
            return rs_error_set(err, RS_EXIT_USAGE, "--max-record: '%s' is not a positive size", arg), -1;
        po->dialect.max_record = v;
        return 1;
    case RS_OPT_BAD_ROW:
        if (!strcmp(arg, "fail"))
            po->bad_rows = RS_BAD_ROW_FAIL;
        else if (!strcmp(arg, "skip"))
            po->bad_rows = RS_BAD_ROW_SKIP;
        else if (!strncmp(arg, "quarantine=", 11) && arg[11]) {
            po->bad_rows = RS_BAD_ROW_QUARANTINE;
            po->quarantine = arg + 11;
            if (rs_cli_stdout_file("--on-bad-row quarantine=", &po->quarantine, err) != 0)
                return -1;
        } else
            return rs_error_set(err, RS_EXIT_USAGE, "--on-bad-row: expected fail, skip or quarantine=FILE, not '%s'",
                                arg), -1;
        return 1;
    case 'j':
    case RS_OPT_THREADS:
        if (rs_cli_uint("-j", arg, 1, 256, &v, err) != 0)
            return -1;
        po->threads = (int)v;
        return 1;
    case RS_OPT_MEMORY:
        if (rs_cli_size("--memory", arg, &v, err) != 0)
            return -1;
        if (v < (32ULL << 20))
            return rs_error_set(err, RS_EXIT_USAGE, "--memory: at least 32M"), -1;
        po->memory = v;
        return 1;
    case RS_OPT_ZLIB: po->codec = RS_CODEC_ZLIB; return 1;
    case RS_OPT_PRODUCERS:
        if (rs_cli_uint("--producers", arg, 0, 256, &v, err) != 0)
            return -1;
        po->producers = (int)v;
        return 1;
    case RS_OPT_QUIET: po->progress = -1; return 1;
    case RS_OPT_ALLOW_EMPTY: po->empty_inputs = RS_EMPTY_ALLOW; return 1;
    default: return rs_cli_files_from_option(code, arg, err);
    }
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

int rs_cli_input_finish(rs_pipeline_opts *po, int argc, char **argv, int first, rs_error *err)
{
    if (rs_csv_keyspec_check(po->key, po->header, err) != 0 ||
        rs_cli_level_check("--level", po->compress, po->level, err) != 0)
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
    int quiet = po->progress < 0;
    quiet_given = quiet;
    po->progress = !quiet && isatty(STDERR_FILENO);
    /* first 0: argv stands in for a directory's files (verify, plan
     * --from-buckets), whose header-only node files are no failed export */
    if (po->empty_inputs == RS_EMPTY_UNCHECKED && first > 0)
        po->empty_inputs = RS_EMPTY_REFUSE;
    return quiet;
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
