/* Options and pictures of the commands that report per-node balance
 * against theory (stats on data, simulate on synthetic keys). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include "cli/cli.h"

void rs_cli_balance_defaults(rs_cli_balance *bo)
{
    bo->z = 3;
    bo->factor = NAN;
    bo->tsv = 0;
    bo->svg = bo->html = NULL;
}

int rs_cli_balance_option(rs_cli_balance *bo, int code, const char *arg, rs_error *err)
{
    char *end;
    switch (code) {
    case RS_OPT_Z:
        errno = 0;
        bo->z = strtod(arg, &end);
        if (*end || errno || !(bo->z > 0) || !isfinite(bo->z))
            return rs_error_set(err, RS_EXIT_USAGE, "--z: '%s' is not a positive number", arg);
        return 1;
    case RS_OPT_CAPACITY:
        errno = 0;
        bo->factor = strtod(arg, &end);
        if (*end || errno || !(bo->factor >= 1) || !isfinite(bo->factor))
            return rs_error_set(err, RS_EXIT_USAGE, "--capacity-factor: '%s' is not a number >= 1", arg);
        return 1;
    case RS_OPT_TSV: bo->tsv = 1; return 1;
    case RS_OPT_SVG: bo->svg = arg; return rs_cli_stdout_file("--svg", &bo->svg, err) == 0 ? 1 : -1;
    case RS_OPT_HTML: bo->html = arg; return rs_cli_stdout_file("--html", &bo->html, err) == 0 ? 1 : -1;
    default: return 0;
    }
}

int rs_cli_balance_pictures(const rs_cli_balance *bo, const char *title, const rs_ring *ring, const rs_balance *b,
                            const rs_node_stat *ns, const rs_bounded *bl, const char *unit, rs_error *err)
{
    for (int html = 0; html < 2; html++) {
        const char *path = html ? bo->html : bo->svg;
        if (path && rs_balance_report(path, html, title, ring, b, ns, bl, unit, err) != 0)
            return -1;
    }
    return 0;
}
