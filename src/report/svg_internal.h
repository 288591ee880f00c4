/* report/svg_internal.h - the drawing helpers the charts of svg.c,
 * svg_loads.c, svg_flows.c and svg_lines.c share (defined in svg.c). Not
 * part of the public API. */
#ifndef RS_SVG_INTERNAL_H
#define RS_SVG_INTERNAL_H

#include <stdio.h>
#include "ringshard/report.h"

#define FONT "font-family=\"sans-serif\""
#define C_BAR "#4c78a8"
#define C_FLAG "#d62728"
#define C_BAND "#f2c14e"
#define C_MEAN "#222222"
#define C_CAP "#e45756"
#define C_EXP "#111111"
#define C_THEORY "#54a24b"
#define C_GRID "#e6e6e6"

typedef struct {
    double x, y, w, h;     /* plot area */
    double lo, hi;         /* value range (linear) */
    int log;
} axis_box;

/* A number for a label: integers in full, else 2 decimals (from 100 up)
 * or 6 significant digits; "n/a", "inf" or "-inf" when not finite. */
void rs_svg_num_text(double v, char *buf, size_t cap);
/* A <text> element at (x, y): anchor "start", "middle" or "end", font size,
 * extra attributes (or NULL), the text escaped for XML. */
void rs_svg_text(FILE *f, double x, double y, const char *anchor, double size, const char *extra, const char *s);
/* A round step (1, 2 or 5 times a power of ten) that cuts range into about
 * target intervals. */
double rs_svg_nice_step(double range, int target);
/* The y coordinate of value v in the plot area of b. */
double rs_svg_map_y(const axis_box *b, double v);
/* The x coordinate of value v on [lo, hi] (log scale when lg) drawn over
 * [x0, x0 + w]. */
double rs_svg_map_xv(double x0, double w, double lo, double hi, int lg, double v);
/* Horizontal grid lines and labels of a linear y axis. */
void rs_svg_y_axis(FILE *f, const axis_box *b, const char *label);
/* The x axis's base line from x to x + w at height y. */
void rs_svg_x_baseline(FILE *f, double x, double y, double w);
/* Ticks and labels of a linear (or log) x axis over [lo, hi]. */
void rs_svg_x_axis_values(FILE *f, double x, double y, double w, double lo, double hi, int lg, const char *label);
/* One legend entry (kind "rect", "dash", "dot" or a line) at *lx, which
 * moves past it. */
void rs_svg_legend_item(FILE *f, double *lx, double y, const char *kind, const char *color, const char *label);
/* The height rs_svg_facts takes for these facts in width w. */
double rs_svg_facts_height(const rs_report_fact *facts, size_t n, double w);
/* A chart's title (bold) and subtitle. */
void rs_svg_header(FILE *f, const char *title, const char *subtitle, double w);

#endif
