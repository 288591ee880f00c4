/* report/svg_lines.c - line charts in SVG and HTML (see
 * include/ringshard/report.h; shared drawing helpers: svg.c). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ringshard/report.h"
#include "report/svg_internal.h"

/* ---- line charts ----------------------------------------------------------------- */

static const char *const series_colors[] = {"#4c78a8", "#54a24b", "#e45756", "#b279a2", "#f58518", "#72b7b2"};

void rs_svg_lines(FILE *f, const rs_report_lines *r, double x, double y, double w, double h)
{
    double px = x + 80, py = y + 44, pw = w - 110, ph = h - 44 - 52;
    double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
    for (size_t s = 0; s < r->nseries; s++)
        for (size_t i = 0; i < r->series[s].n; i++) {
            double xv = r->series[s].x[i], yv = r->series[s].y[i];
            if (!isfinite(xv) || !isfinite(yv) || (r->xlog && xv <= 0) || (r->ylog && yv <= 0))
                continue;
            xlo = fmin(xlo, xv);
            xhi = fmax(xhi, xv);
            ylo = fmin(ylo, yv);
            yhi = fmax(yhi, yv);
        }
    fputs("<g class=\"lines\">\n", f);
    if (!isfinite(xlo)) {
        rs_svg_text(f, x + 20, y + 40, "start", 12, NULL, "no data");
        fputs("</g>\n", f);
        return;
    }
    if (r->xlog) {
        xlo = pow(10, floor(log10(xlo)));
        xhi = pow(10, ceil(log10(xhi)));
    } else if (xhi == xlo) {
        xhi = xlo + 1;
    }
    if (r->ylog) {
        ylo = pow(10, floor(log10(ylo)));
        yhi = pow(10, ceil(log10(yhi)));
    } else {
        ylo = fmin(0, ylo);
        yhi = yhi * 1.1 + (yhi == ylo);
    }
    axis_box box = {px, py, pw, ph, ylo, yhi, r->ylog};   /* the document carries the title */
    double lx = x + 20;
    for (size_t s = 0; s < r->nseries; s++)
        rs_svg_legend_item(f, &lx, y + 34, r->series[s].dashed ? "dash" : "line",
                    series_colors[s % (sizeof series_colors / sizeof *series_colors)], r->series[s].label);
    rs_svg_y_axis(f, &box, r->ylabel ? r->ylabel : "");
    rs_svg_x_axis_values(f, px, py + ph, pw, xlo, xhi, r->xlog, r->xlabel ? r->xlabel : "");
    for (size_t s = 0; s < r->nseries; s++) {
        const rs_report_series *se = &r->series[s];
        const char *col = series_colors[s % (sizeof series_colors / sizeof *series_colors)];
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"", col,
                se->dashed ? " stroke-dasharray=\"6,4\"" : "");
        for (size_t i = 0; i < se->n; i++) {
            if (!isfinite(se->x[i]) || !isfinite(se->y[i]) || (r->xlog && se->x[i] <= 0) || (r->ylog && se->y[i] <= 0))
                continue;
            fprintf(f, "%.2f,%.2f ", rs_svg_map_xv(px, pw, xlo, xhi, r->xlog, se->x[i]), rs_svg_map_y(&box, se->y[i]));
        }
        fputs("\"/>\n", f);
        for (size_t i = 0; i < se->n; i++) {
            if (!isfinite(se->x[i]) || !isfinite(se->y[i]) || (r->xlog && se->x[i] <= 0) || (r->ylog && se->y[i] <= 0))
                continue;
            fprintf(f, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"3.5\" fill=\"%s\"><title>", rs_svg_map_xv(px, pw, xlo, xhi, r->xlog,
                    se->x[i]), rs_svg_map_y(&box, se->y[i]), col);
            rs_xml_text(f, se->label);
            fprintf(f, ": x=%.6g y=%.6g</title></circle>\n", se->x[i], se->y[i]);
        }
    }
    fputs("</g>\n", f);
}

int rs_report_lines_svg(FILE *f, const rs_report_lines *r)
{
    double w = 1200;
    double facts_h = rs_svg_facts_height(r->facts, r->nfacts, w - 40);
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
    rs_svg_begin(f, w, 60 + facts_h + 460 + 10, r->title);
    rs_svg_header(f, r->title, r->subtitle, w);
    double y = 60 + rs_svg_facts(f, r->facts, r->nfacts, 20, 60, w - 40);
    rs_svg_lines(f, r, 0, y, w, 460);
    rs_svg_end(f);
    return ferror(f) ? -1 : 0;
}

int rs_report_lines_html(FILE *f, const rs_report_lines *r)
{
    rs_html_begin(f, r->title, r->subtitle);
    rs_html_facts(f, r->facts, r->nfacts);
    rs_svg_begin(f, 1200, 460, r->title);
    rs_svg_lines(f, r, 0, 0, 1200, 460);
    rs_svg_end(f);
    /* the series as a table */
    fputs("<h2>Values</h2>\n<table class=\"series\">\n<tr><th class=\"l\">series</th><th>", f);
    rs_xml_text(f, r->xlabel);
    fputs("</th><th>", f);
    rs_xml_text(f, r->ylabel);
    fputs("</th></tr>\n", f);
    for (size_t s = 0; s < r->nseries; s++)
        for (size_t i = 0; i < r->series[s].n; i++) {
            fputs("<tr><td class=\"l\">", f);
            rs_xml_text(f, r->series[s].label);
            fprintf(f, "</td><td>%.6g</td><td>%.6g</td></tr>\n", r->series[s].x[i], r->series[s].y[i]);
        }
    fputs("</table>\n", f);
    rs_html_end(f);
    return ferror(f) ? -1 : 0;
}
