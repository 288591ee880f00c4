/* Reports written to files: the same creation and error handling for every
 * kind of document. */
#include <errno.h>
#include <string.h>
#include "ringshard/report.h"

static FILE *create(const char *path, rs_error *err)
{
    FILE *f = fopen(path, "w");
    if (!f)
        rs_error_set(err, RS_EXIT_IO, "%s: cannot create: %s", path, strerror(errno));
    return f;
}

/* wrote: the document writer's result; fclose flushes, so a full disk
 * shows up here even when every fprintf succeeded */
static int finish(FILE *f, const char *path, int wrote, rs_error *err)
{
    if (fclose(f) != 0 || wrote != 0)
        return rs_error_set(err, RS_EXIT_IO, "%s: write error: %s", path, strerror(errno));
    return 0;
}

int rs_report_save_loads(const char *path, int html, const rs_report_loads *r, rs_error *err)
{
    FILE *f = create(path, err);
    if (!f)
        return -1;
    return finish(f, path, html ? rs_report_loads_html(f, r) : rs_report_loads_svg(f, r), err);
}

int rs_report_save_lines(const char *path, int html, const rs_report_lines *r, rs_error *err)
{
    FILE *f = create(path, err);
    if (!f)
        return -1;
    return finish(f, path, html ? rs_report_lines_html(f, r) : rs_report_lines_svg(f, r), err);
}
