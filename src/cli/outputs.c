/* Where the commands write: standard output shared by one output option
 * at most ("-"), the summary beside it, and a directory never named "-". */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"

int rs_cli_dir_not_stdout(const char *cmd, const char *opt, const char *dir, const char *what, const char *instead)
{
    if (strcmp(dir, "-") != 0)
        return -1;
    char msg[320];
    snprintf(msg, sizeof msg, "%s -: %s cannot go to standard output; %s", opt, what, instead);
    return rs_cli_usage_error(cmd, msg);
}

int rs_cli_flush_stdout(rs_error *err)
{
    if (fflush(stdout) != 0 || ferror(stdout))
        return rs_error_set(err, RS_EXIT_IO, "write error on standard output");
    return 0;
}

/* The option that took standard output ("-"), or NULL. */
static const char *stdout_taker;

int rs_cli_stdout_file(const char *option, const char **path, rs_error *err)
{
    if (*path && !**path)   /* refused before any work, not found at the publication */
        return rs_error_set(err, RS_EXIT_USAGE, "%s: an empty path (give a file, or - for standard output)", option);
    if (!*path || strcmp(*path, "-") != 0)
        return 0;
    if (stdout_taker && strcmp(stdout_taker, option) != 0)
        return rs_error_set(err, RS_EXIT_USAGE, "%s - and %s -: both would write to standard output (give one of "
                            "them a file)", stdout_taker, option);
    stdout_taker = option;
    /* by name, as a FIFO or a device: written in place (appended to),
     * never replaced (ringshard/outfile.h), by every writer of a file */
    *path = "/dev/stdout";
    return 0;
}

int rs_cli_stdout_files(rs_error *err, ...)
{
    va_list ap;
    va_start(ap, err);
    const char *option;
    int rc = 0;
    while (rc == 0 && (option = va_arg(ap, const char *)) != NULL)
        rc = rs_cli_stdout_file(option, va_arg(ap, const char **), err);
    va_end(ap);
    return rc;
}

FILE *rs_cli_summary(void)
{
    return stdout_taker ? stderr : stdout;
}
