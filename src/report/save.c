/* Reports written to files: the same creation and error handling for every
 * kind of document, published whole (ringshard/outfile.h): a failed run
 * leaves a previous report as it was. */
#include <errno.h>
#include <string.h>
#include "ringshard/interrupt.h"
#include "ringshard/outfile.h"
#include "ringshard/report.h"

/* wrote: the document writer's result; the commit flushes, so a full disk
 * shows up there even when every fprintf succeeded */
static int finish(rs_outfile *of, const char *path, int wrote, rs_error *err)
{
    if (wrote != 0) {
        int e = errno;
        rs_outfile_abort(of);
        return rs_error_set(err, RS_EXIT_IO, "%s: write error: %s", path, strerror(e ? e : EIO));
    }
    if (rs_interrupt_publish_gate(err) != 0) {  /* a stop signal: the previous report stays */
        rs_outfile_abort(of);
        return -1;
    }
    return rs_outfile_commit(of, err);
}

int rs_report_save_loads(const char *path, int html, const rs_report_loads *r, rs_error *err)
{
    rs_outfile of;
    FILE *f = rs_outfile_open(&of, path, err);
    if (!f)
        return -1;
    return finish(&of, path, html ? rs_report_loads_html(f, r) : rs_report_loads_svg(f, r), err);
}

int rs_report_save_lines(const char *path, int html, const rs_report_lines *r, rs_error *err)
{
    rs_outfile of;
    FILE *f = rs_outfile_open(&of, path, err);
    if (!f)
        return -1;
    return finish(&of, path, html ? rs_report_lines_html(f, r) : rs_report_lines_svg(f, r), err);
}
