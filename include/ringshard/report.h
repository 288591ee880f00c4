/* ringshard/report.h - pictures: self-contained SVG and HTML reports.
 *
 * Nothing is fetched from anywhere: no scripts, no web fonts, no external
 * style sheets or images (generic font families only). Every number a
 * picture shows is also written as text ("facts"), so that the files can be
 * checked and searched. Charts stay readable at 1000+ nodes: bars narrower
 * than a pixel are aggregated (each column shows the largest load of the
 * nodes it stands for), and per-bar tooltips (<title>) are kept up to 5000
 * bars.
 *
 * Three charts:
 *  - loads: per-node load as a bar chart sorted by load (largest first),
 *    with the mean, a shaded expected band, optional capacity line, each
 *    node's own expected load as a tick, and flagged nodes in red;
 *  - histogram: how many nodes carry each load, against the expected
 *    number of nodes per bin (the sum over nodes of their normal
 *    approximations) and an optional theory curve (a gamma density with
 *    the theory's mean and sd: a random ring's share is Gamma(V)-shaped);
 *  - flows: a (from, to) matrix of moved keys or bytes (plans), with
 *    per-node totals in the margins; nodes without any flow are left out.
 */
#ifndef RINGSHARD_REPORT_H
#define RINGSHARD_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "ringshard/error.h"

/* A labelled number shown as text: ("mean", "100000.00"). */
typedef struct {
    const char *label;
    const char *value;
} rs_report_fact;

typedef struct {
    const char *title;           /* first line of the report */
    const char *subtitle;        /* second line (ring, options); may be NULL */
    const char *unit;            /* "keys", "rows" */
    size_t n;                    /* nodes */
    const char *const *names;    /* n names */
    const double *load;          /* n observed loads */
    const double *expected;      /* n expected loads (NULL: no ticks) */
    const double *expected_sd;   /* n sds of the expected loads (NULL: no expected histogram) */
    const int *flag;             /* n flags -1/0/+1 (NULL: none) */
    double mean;                 /* drawn as a line */
    double band_lo, band_hi;     /* shaded band; NAN: none */
    const char *band_label;      /* legend text of the band */
    double capacity;             /* capacity line; NAN: none */
    double theory_mean, theory_sd; /* dashed theory curve in the histogram: a gamma density
                                    with this mean and sd (normal when near-normal); NAN: none */
    const char *theory_label;
    const rs_report_fact *facts; /* shown as text */
    size_t nfacts;
} rs_report_loads;

typedef struct {
    const char *title;
    const char *subtitle;
    const char *unit;            /* "keys", "rows", "bytes" */
    size_t nnodes;
    const char *const *names;    /* node names; from/to index them */
    size_t npairs;
    const uint32_t *from, *to;   /* npairs node indices */
    const double *weight;        /* npairs amounts (keys or bytes) */
    const rs_report_fact *facts;
    size_t nfacts;
} rs_report_flows;

/* One (x, y) series of a line chart (simulate's vnode sweeps). */
typedef struct {
    const char *label;
    size_t n;
    const double *x, *y;
    int dashed;
} rs_report_series;

typedef struct {
    const char *title, *subtitle;
    const char *xlabel, *ylabel;
    int xlog, ylog;              /* logarithmic axes */
    size_t nseries;
    const rs_report_series *series;
    const rs_report_fact *facts;
    size_t nfacts;
} rs_report_lines;

/* ---- whole documents (0, or -1 if a write failed: check errno) ---- */

/* SVG: the facts, the sorted load chart and the histogram, one document. */
int rs_report_loads_svg(FILE *f, const rs_report_loads *r);
/* HTML: the same SVG charts inline, the facts as a table, the flagged nodes
 * and every node's numbers in a table. */
int rs_report_loads_html(FILE *f, const rs_report_loads *r);

int rs_report_flows_svg(FILE *f, const rs_report_flows *r);
/* HTML: the matrix inline plus the largest flows and per-node totals as tables. */
int rs_report_flows_html(FILE *f, const rs_report_flows *r);

int rs_report_lines_svg(FILE *f, const rs_report_lines *r);
int rs_report_lines_html(FILE *f, const rs_report_lines *r);

/* ---- whole documents into files ---- */

/* Writes the document into the file at path, published whole
 * (ringshard/outfile.h: a temporary beside it renamed over it, so a failure
 * leaves a previous file as it was): the SVG form, or the HTML form if
 * html. Returns 0, or -1 with err (RS_EXIT_IO, naming path: "cannot
 * create", "write error" or "write failed"). */
int rs_report_save_loads(const char *path, int html, const rs_report_loads *r, rs_error *err);
int rs_report_save_lines(const char *path, int html, const rs_report_lines *r, rs_error *err);

/* ---- pieces, for commands composing their own documents ---- */

/* <svg> root with the XML namespace (no XML declaration is needed). */
void rs_svg_begin(FILE *f, double width, double height, const char *title);
void rs_svg_end(FILE *f);
/* Charts drawn into the box (x, y, w, h) of the current SVG. */
void rs_svg_loads(FILE *f, const rs_report_loads *r, double x, double y, double w, double h);
void rs_svg_histogram(FILE *f, const rs_report_loads *r, double x, double y, double w, double h);
void rs_svg_flows(FILE *f, const rs_report_flows *r, double x, double y, double w, double h);
void rs_svg_lines(FILE *f, const rs_report_lines *r, double x, double y, double w, double h);
/* Facts as lines of text from (x, y); returns the height used. */
double rs_svg_facts(FILE *f, const rs_report_fact *facts, size_t n, double x, double y, double w);

void rs_html_begin(FILE *f, const char *title, const char *subtitle);
void rs_html_facts(FILE *f, const rs_report_fact *facts, size_t n);
void rs_html_end(FILE *f);

/* Writes s with XML's five special characters escaped (control characters
 * other than tab and newline become U+FFFD). */
void rs_xml_text(FILE *f, const char *s);

#endif
