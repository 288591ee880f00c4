/* io/level.c - compression levels (ringshard/deflate.h): one range for
 * the parser, the codec's own once the codec is known. */
#include <errno.h>
#include <stdlib.h>
#include "ringshard/deflate.h"

int rs_level_parse(const char *what, const char *arg, int *level, rs_error *err)
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

int rs_level_check(const char *what, int compress, int level, rs_error *err)
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
