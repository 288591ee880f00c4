/* What the commands write: data files in an output directory and its
 * manifest (bucket, plan --emit), and the summary on standard output. */
#define _GNU_SOURCE  /* asprintf */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/cli.h"
#include "ringshard/dataset.h"
#include "ringshard/deflate.h"
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

int rs_cli_level_arg(const char *what, const char *arg, int *level, rs_error *err)
{
    char *end;
    errno = 0;
    long v = arg && *arg ? strtol(arg, &end, 10) : 0;
    if (!arg || !*arg || *end || errno || v < RS_ZSTD_LEVEL_MIN || v > RS_ZSTD_LEVEL_MAX)
        return rs_error_set(err, RS_EXIT_USAGE, "%s: '%s' is not a level (gzip: 1 to 9; zstd: %d to %d, not 0)",
                            what, arg ? arg : "", RS_ZSTD_LEVEL_MIN, RS_ZSTD_LEVEL_MAX);
    *level = (int)v;
    return 0;
}

int rs_cli_level_check(const char *what, int compress, int level, rs_error *err)
{
    /* checked once every option is in: --level may come before --compress */
    if (compress == RS_COMPRESS_ZSTD && level == 0)
        return rs_error_set(err, RS_EXIT_USAGE, "%s: 0 is not a zstd level (%d to -1, or 1 to %d)", what,
                            RS_ZSTD_LEVEL_MIN, RS_ZSTD_LEVEL_MAX);
    if (compress != RS_COMPRESS_ZSTD && (level < 1 || level > 9))
        return rs_error_set(err, RS_EXIT_USAGE, "%s: %d is out of range [1, 9] (gzip levels; zstd's with "
                            "--compress zstd)", what, level);
    return 0;
}

/* The directory part of path ("." when none), trailing slashes of path
 * removed first; *base gets the rest. malloc'd, NULL when out of memory. */
static char *dir_part(const char *path, char **base)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    size_t k = n;
    while (k > 0 && path[k - 1] != '/')
        k--;
    *base = strndup(path + k, n - k);
    char *dir = k == 0 ? strdup(".") : strndup(path, k > 1 ? k - 1 : 1);
    if (!dir || !*base) {
        free(dir);
        free(*base);
        return NULL;
    }
    return dir;
}

/* The canonical path of path, itself or, when it does not exist, its
 * parent's + '/' + its name. malloc'd; NULL when neither resolves. */
static char *canonical(const char *path)
{
    char *r = realpath(path, NULL);
    if (r || errno != ENOENT)
        return r;
    char *base, *dir = dir_part(path, &base), *p = NULL;
    char *rd = dir ? realpath(dir, NULL) : NULL;
    if (rd && asprintf(&p, "%s%s%s", rd, strcmp(rd, "/") ? "/" : "", base) < 0)
        p = NULL;
    free(rd);
    free(dir);
    free(base);
    return p;
}

/* path with symbolic links at its end followed, even dangling ones (an
 * fopen "w" creates their target). malloc'd; NULL when out of memory. */
static char *follow_links(const char *path)
{
    char *p = strdup(path);
    for (int hops = 0; p && hops < 40; hops++) {
        char target[PATH_MAX];
        ssize_t n = readlink(p, target, sizeof target - 1);
        if (n < 0)
            break;
        target[n] = '\0';
        char *base, *dir = dir_part(p, &base), *next = NULL;
        if (dir && (target[0] == '/' ? (next = strdup(target)) == NULL
                                     : asprintf(&next, "%s/%s", dir, target) < 0))
            next = NULL;
        free(dir);
        free(base);
        free(p);
        p = next;
    }
    return p;
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
    if (!path || !outdir || !strcmp(path, "-"))
        return 0;
    char *out = canonical(outdir), *in = NULL, *real = follow_links(path);
    char *file = real ? realpath(real, NULL) : NULL;   /* an existing file: where it really is */
    if (file) {
        char *base;
        in = dir_part(file, &base);
        free(base);
        free(file);
    } else {
        char *base = NULL, *dir = real ? dir_part(real, &base) : NULL;
        in = dir ? canonical(dir) : NULL;
        free(dir);
        free(base);
    }
    size_t n = out ? strlen(out) : 0;
    int inside = out && in && !strncmp(in, out, n) && (in[n] == '\0' || in[n] == '/');
    free(out);
    free(in);
    free(real);
    if (inside)
        return rs_error_set(err, RS_EXIT_USAGE,
                            "%s%s: inside the output directory %s, which is replaced when the output is published "
                            "(the file would be lost): write it elsewhere",
                            what, path, outdir);
    return 0;
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
