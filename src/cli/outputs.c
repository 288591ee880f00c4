/* What the commands write: data files in an output directory and its
 * manifest (bucket, plan --emit), and the summary on standard output. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "ringshard/dataset.h"
#include "ringshard/deflate.h"
#include "ringshard/util.h"
#include "rs_config.h"

int rs_cli_compress_arg(const char *what, const char *arg, int *compress, rs_error *err)
{
    int c;
    if (rs_compress_parse(arg, &c) != 0)
        return rs_error_set(err, RS_EXIT_USAGE, "%s: expected gzip, zstd or none", what);
    if (c == RS_COMPRESS_ZSTD && !rs_have_zstd())
        return rs_error_set(err, RS_EXIT_USAGE, "%s zstd: this build of ringshard has no zstd support (rebuild it "
                            "with libzstd: tools/deps.sh installs libzstd-dev)", what);
    *compress = c;
    return 0;
}

int rs_cli_dir_not_stdout(const char *cmd, const char *opt, const char *dir, const char *what, const char *instead)
{
    if (strcmp(dir, "-") != 0)
        return -1;
    char msg[320];
    snprintf(msg, sizeof msg, "%s -: %s cannot go to standard output; %s", opt, what, instead);
    return rs_cli_usage_error(cmd, msg);
}

int rs_cli_outside_output(const char *what, const char *path, const char *outdir, rs_error *err)
{
    if (!path || !outdir || !strcmp(path, "-") || !rs_path_within(path, outdir))
        return 0;
    return rs_error_set(err, RS_EXIT_USAGE,
                        "%s%s: inside the output directory %s, which is replaced when the output is published "
                        "(the file would be lost): write it elsewhere",
                        what, path, outdir);
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
