/* report/svg_flows.c - (from, to) flow matrices in SVG and HTML (see
 * include/ringshard/report.h; shared drawing helpers: svg.c). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ringshard/report.h"
#include "report/svg_internal.h"

/* ---- flows: (from, to) matrix ------------------------------------------------ */

typedef struct {
    size_t n;          /* members */
    uint32_t *node;    /* member -> node index, in node order */
    size_t *slot;      /* node index -> member (SIZE_MAX if absent) */
    double *total;     /* per member */
    size_t groups;     /* drawn rows/columns */
} flow_axis;

static int flow_axis_init(flow_axis *a, const rs_report_flows *r, const uint32_t *side, double pixels)
{
    memset(a, 0, sizeof *a);
    a->slot = malloc((r->nnodes ? r->nnodes : 1) * sizeof *a->slot);
    a->node = malloc((r->nnodes ? r->nnodes : 1) * sizeof *a->node);
    a->total = calloc(r->nnodes ? r->nnodes : 1, sizeof *a->total);
    if (!a->slot || !a->node || !a->total)
        return -1;
    for (size_t i = 0; i < r->nnodes; i++)
        a->slot[i] = SIZE_MAX;
    uint8_t *seen = calloc(r->nnodes ? r->nnodes : 1, 1);
    if (!seen)
        return -1;
    for (size_t p = 0; p < r->npairs; p++)
        if (r->weight[p] > 0 && side[p] < r->nnodes)
            seen[side[p]] = 1;
    for (size_t i = 0; i < r->nnodes; i++)
        if (seen[i]) {
            a->slot[i] = a->n;
            a->node[a->n++] = (uint32_t)i;
        }
    free(seen);
    for (size_t p = 0; p < r->npairs; p++)
        if (r->weight[p] > 0 && side[p] < r->nnodes)
            a->total[a->slot[side[p]]] += r->weight[p];
    a->groups = a->n;
    if ((double)a->groups > pixels)
        a->groups = (size_t)pixels;
    return 0;
}

static void flow_axis_free(flow_axis *a)
{
    free(a->slot);
    free(a->node);
    free(a->total);
}

static size_t group_of(const flow_axis *a, size_t member) { return member * a->groups / a->n; }
static size_t group_start(const flow_axis *a, size_t g) { return (g * a->n + a->groups - 1) / a->groups; }

static void heat(double t, char *buf)
{
    /* white-blue sequential scale (#f7fbff -> #08306b) */
    static const double c0[3] = {247, 251, 255}, c1[3] = {8, 48, 107};
    if (t < 0)
        t = 0;
    if (t > 1)
        t = 1;
    t = 0.12 + 0.88 * t;
    sprintf(buf, "#%02x%02x%02x", (int)(c0[0] + (c1[0] - c0[0]) * t), (int)(c0[1] + (c1[1] - c0[1]) * t),
            (int)(c0[2] + (c1[2] - c0[2]) * t));
}

static void axis_names(FILE *f, const rs_report_flows *r, const flow_axis *a, int horizontal, double x0, double y0,
                       double len)
{
    double step = len / (double)(a->groups ? a->groups : 1);
    size_t every = 1;
    while ((double)every * step < 14)
        every++;
    for (size_t g = 0; g < a->groups; g += every) {
        size_t m = group_start(a, g);
        if (m >= a->n)
            break;
        const char *name = r->names ? r->names[a->node[m]] : "?";
        char label[80];
        snprintf(label, sizeof label, "%s", name);
        if (horizontal) {
            double cx = x0 + step * ((double)g + 0.5);
            char tr[96];
            snprintf(tr, sizeof tr, "transform=\"rotate(-60 %.1f %.1f)\"", cx, y0 - 4);
            rs_svg_text(f, cx, y0 - 4, "start", 10, tr, label);
        } else {
            rs_svg_text(f, x0 - 4, y0 + step * ((double)g + 0.5) + 3, "end", 10, NULL, label);
        }
    }
}

/* The flow matrix's layout and totals, shared by its steps. */
typedef struct {
    double mx0, my0, mw, mh;      /* the matrix */
    flow_axis fa, ta;             /* the sending and receiving nodes */
    int from_on_x;                /* the side with more nodes runs along x */
    flow_axis *xa, *ya;           /* fa and ta by direction */
    double cw, ch;                /* a cell's size */
    size_t ncell;
    double *cell;                 /* amounts per cell, rows of xa->groups */
    double total, cmin, cmax, xmax, ymax;
    double *xt, *yt;              /* totals per column and per row */
} flows_geom;

/* Which side runs along which axis, and the cells' size: at most one
 * group of nodes per pixel, and few rows or columns are not stretched. */
static void flows_layout(flows_geom *fg)
{
    /* the side with more nodes runs along the wider x axis */
    fg->from_on_x = fg->fa.n > fg->ta.n;
    fg->xa = fg->from_on_x ? &fg->fa : &fg->ta, fg->ya = fg->from_on_x ? &fg->ta : &fg->fa;
    if ((double)fg->xa->groups > fg->mw)
        fg->xa->groups = (size_t)fg->mw;
    if ((double)fg->ya->groups > fg->mh)
        fg->ya->groups = (size_t)fg->mh;
    fg->cw = fg->mw / (double)(fg->xa->groups ? fg->xa->groups : 1), fg->ch = fg->mh / (double)(fg->ya->groups ? fg->ya->groups : 1);
    if (fg->ch > 28) {   /* few rows: don't stretch them */
        fg->ch = 28;
        fg->mh = fg->ch * (double)fg->ya->groups;
    }
    if (fg->cw > 40) {
        fg->cw = 40;
        fg->mw = fg->cw * (double)fg->xa->groups;
    }
}

/* The pairs summed into cells, the smallest and largest cell (the colour
 * scale), and the totals of the marginal bars. */
static void flows_sum(const rs_report_flows *r, flows_geom *fg)
{
    for (size_t p = 0; p < r->npairs; p++) {
        if (!(r->weight[p] > 0))
            continue;
        size_t fm = fg->fa.slot[r->from[p]], tm = fg->ta.slot[r->to[p]];
        size_t xm = fg->from_on_x ? fm : tm, ym = fg->from_on_x ? tm : fm;
        fg->cell[group_of(fg->ya, ym) * fg->xa->groups + group_of(fg->xa, xm)] += r->weight[p];
        fg->total += r->weight[p];
    }
    fg->cmin = INFINITY;
    for (size_t c = 0; c < fg->ncell; c++) {
        fg->cmax = fmax(fg->cmax, fg->cell[c]);
        if (fg->cell[c] > 0)
            fg->cmin = fmin(fg->cmin, fg->cell[c]);
    }
    if (!isfinite(fg->cmin))
        fg->cmin = fg->cmax;
    fg->xt = calloc(fg->xa->groups, sizeof *fg->xt), fg->yt = calloc(fg->ya->groups, sizeof *fg->yt);
    for (size_t m = 0; fg->xt && m < fg->xa->n; m++)
        fg->xt[group_of(fg->xa, m)] += fg->xa->total[m];
    for (size_t m = 0; fg->yt && m < fg->ya->n; m++)
        fg->yt[group_of(fg->ya, m)] += fg->ya->total[m];
    for (size_t g = 0; fg->xt && g < fg->xa->groups; g++)
        fg->xmax = fmax(fg->xmax, fg->xt[g]);
    for (size_t g = 0; fg->yt && g < fg->ya->groups; g++)
        fg->ymax = fmax(fg->ymax, fg->yt[g]);
}

/* The subtitle, the colour scale and the marginal bars with their labels. */
static void flows_legend(FILE *f, const rs_report_flows *r, double x, double y, double w, const flows_geom *fg)
{
    char t[256], a[64];
    snprintf(t, sizeof t, "rows: %s nodes (%zu); columns: %s nodes (%zu); colour: %s moved (log scale)",
             fg->from_on_x ? "receiving" : "sending", fg->ya->n, fg->from_on_x ? "sending" : "receiving", fg->xa->n,
             r->unit ? r->unit : "amount");
    rs_svg_text(f, x + 20, y + 36, "start", 12, "fill=\"#444\"", t);
    /* colour legend */
    fputs("<defs><linearGradient id=\"rsheat\" x1=\"0\" x2=\"1\" y1=\"0\" y2=\"0\">", f);
    char c0[8], c1[8];
    heat(0, c0);
    heat(1, c1);
    fprintf(f, "<stop offset=\"0\" stop-color=\"%s\"/><stop offset=\"1\" stop-color=\"%s\"/></linearGradient></defs>\n",
            c0, c1);
    double lgx = x + w - 330;
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"160\" height=\"10\" fill=\"url(#rsheat)\" stroke=\"#999\"/>\n", lgx,
            y + 8);
    rs_svg_num_text(fg->cmin, a, sizeof a);
    rs_svg_text(f, lgx - 4, y + 17, "end", 10, NULL, a);
    rs_svg_num_text(fg->cmax, a, sizeof a);
    rs_svg_text(f, lgx + 164, y + 17, "start", 10, NULL, a);
    /* marginal bars: totals per column above, per row to the right */
    double bar_h = 50, bar_w = 100;
    for (size_t g = 0; fg->xt && g < fg->xa->groups; g++) {
        double hh = fg->xmax > 0 ? fg->xt[g] / fg->xmax * bar_h : 0;
        fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"" C_BAR "\"/>\n",
                fg->mx0 + fg->cw * (double)g, fg->my0 - 8 - hh - 60, fg->cw > 2 ? fg->cw * 0.85 : fg->cw, hh);
    }
    for (size_t g = 0; fg->yt && g < fg->ya->groups; g++) {
        double ww = fg->ymax > 0 ? fg->yt[g] / fg->ymax * bar_w : 0;
        fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"" C_BAR "\"/>\n", fg->mx0 + fg->mw + 8,
                fg->my0 + fg->ch * (double)g, ww, fg->ch > 2 ? fg->ch * 0.85 : fg->ch);
    }
    rs_svg_num_text(fg->xmax, a, sizeof a);
    snprintf(t, sizeof t, "column totals (max %s)", a);
    rs_svg_text(f, fg->mx0, fg->my0 - 60 - bar_h - 14, "start", 10, "fill=\"#444\"", t);
    rs_svg_num_text(fg->ymax, a, sizeof a);
    snprintf(t, sizeof t, "row totals (max %s)", a);
    rs_svg_text(f, fg->mx0 + fg->mw + 8, fg->my0 - 6, "start", 10, "fill=\"#444\"", t);
}

/* The cells, coloured on a log scale, with their titles. */
static void flows_cells(FILE *f, const rs_report_flows *r, const flows_geom *fg)
{
    char a[64];
    /* the cells */
    int titles = fg->ncell <= 40000;
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#fbfbfb\" stroke=\"#bbb\"/>\n", fg->mx0,
            fg->my0, fg->mw, fg->mh);
    fputs("<g class=\"cells\" shape-rendering=\"crispEdges\">\n", f);
    double lmin = log(fg->cmin), lspan = log(fg->cmax) - lmin;
    for (size_t gy = 0; gy < fg->ya->groups; gy++)
        for (size_t gx = 0; gx < fg->xa->groups; gx++) {
            double v = fg->cell[gy * fg->xa->groups + gx];
            if (!(v > 0))
                continue;
            char col[8];
            heat(lspan > 0 ? (log(v) - lmin) / lspan : 1, col);
            fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\">", fg->mx0 + fg->cw * (double)gx,
                    fg->my0 + fg->ch * (double)gy, fg->cw, fg->ch, col);
            if (titles) {
                rs_svg_num_text(v, a, sizeof a);
                size_t xs = group_start(fg->xa, gx), ys = group_start(fg->ya, gy);
                const char *xn = r->names ? r->names[fg->xa->node[xs]] : "?", *yn = r->names ? r->names[fg->ya->node[ys]] : "?";
                fputs("<title>", f);
                rs_xml_text(f, fg->from_on_x ? xn : yn);
                fputs(group_start(fg->from_on_x ? fg->xa : fg->ya, (fg->from_on_x ? gx : gy) + 1) - (fg->from_on_x ? xs : ys) > 1 ? "\xe2\x80\xa6" : "", f);
                fputs(" \xe2\x86\x92 ", f);
                rs_xml_text(f, fg->from_on_x ? yn : xn);
                fputs(group_start(fg->from_on_x ? fg->ya : fg->xa, (fg->from_on_x ? gy : gx) + 1) - (fg->from_on_x ? ys : xs) > 1 ? "\xe2\x80\xa6" : "", f);
                fprintf(f, ": %s</title>", a);
            }
            fputs("</rect>\n", f);
        }
    fputs("</g>\n", f);
}

/* The node names along both axes, the axis labels and the total. */
static void flows_labels(FILE *f, const rs_report_flows *r, double x, const flows_geom *fg)
{
    char t[256], a[64];
    axis_names(f, r, fg->xa, 1, fg->mx0, fg->my0, fg->mw);
    axis_names(f, r, fg->ya, 0, fg->mx0, fg->my0, fg->mh);
    snprintf(t, sizeof t, "%s node%s", fg->from_on_x ? "from (sending)" : "to (receiving)",
             fg->xa->groups < fg->xa->n ? " - columns aggregate consecutive nodes" : "");
    rs_svg_text(f, fg->mx0 + fg->mw / 2, fg->my0 + fg->mh + 22, "middle", 12, NULL, t);
    char tr[96];
    double cx = x + 16, cy = fg->my0 + fg->mh / 2;
    snprintf(tr, sizeof tr, "transform=\"rotate(-90 %.1f %.1f)\"", cx, cy);
    snprintf(t, sizeof t, "%s node%s", fg->from_on_x ? "to (receiving)" : "from (sending)",
             fg->ya->groups < fg->ya->n ? " (rows aggregated)" : "");
    rs_svg_text(f, cx, cy, "middle", 12, tr, t);
    rs_svg_num_text(fg->total, a, sizeof a);
    snprintf(t, sizeof t, "total moved: %s %s in %zu pairs", a, r->unit ? r->unit : "", r->npairs);
    rs_svg_text(f, fg->mx0, fg->my0 + fg->mh + 44, "start", 12, NULL, t);
}

void rs_svg_flows(FILE *f, const rs_report_flows *r, double x, double y, double w, double h)
{
    flows_geom g = {.mx0 = x + 110, .my0 = y + 180,          /* matrix origin */
                    .mw = w - 110 - 150, .mh = h - 180 - 60}; /* matrix size */
    if (flow_axis_init(&g.fa, r, r->from, 1e9) != 0 || flow_axis_init(&g.ta, r, r->to, 1e9) != 0) {
        flow_axis_free(&g.fa);
        flow_axis_free(&g.ta);
        return;
    }
    flows_layout(&g);
    /* aggregate the pairs into cells */
    g.ncell = g.xa->groups * g.ya->groups;
    g.cell = calloc(g.ncell ? g.ncell : 1, sizeof *g.cell);
    fputs("<g class=\"flows\">\n", f);
    rs_svg_text(f, x + 20, y + 16, "start", 14, "font-weight=\"bold\"", "Flows between nodes");
    if (!g.cell || !g.xa->n || !g.ya->n) {
        rs_svg_text(f, x + 20, y + 40, "start", 12, NULL, "no flows");
        fputs("</g>\n", f);
        free(g.cell);
        flow_axis_free(&g.fa);
        flow_axis_free(&g.ta);
        return;
    }
    flows_sum(r, &g);
    flows_legend(f, r, x, y, w, &g);
    flows_cells(f, r, &g);
    flows_labels(f, r, x, &g);
    fputs("</g>\n", f);
    free(g.cell);
    free(g.xt);
    free(g.yt);
    flow_axis_free(&g.fa);
    flow_axis_free(&g.ta);
}

static double flows_height(const rs_report_flows *r)
{
    /* rows grow to 28 px each for few receivers; at most 700 */
    flow_axis fa, ta;
    double h = 560;
    if (flow_axis_init(&fa, r, r->from, 1e9) == 0 && flow_axis_init(&ta, r, r->to, 1e9) == 0) {
        size_t rows = fa.n > ta.n ? ta.n : fa.n;
        double mh = 28.0 * (double)rows;
        if (mh > 620)
            mh = 620;
        if (mh < 120)
            mh = 120;
        h = 180 + mh + 60;
    }
    flow_axis_free(&fa);
    flow_axis_free(&ta);
    return h;
}

int rs_report_flows_svg(FILE *f, const rs_report_flows *r)
{
    double w = 1200, fh = flows_height(r);
    double facts_h = rs_svg_facts_height(r->facts, r->nfacts, w - 40);
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
    rs_svg_begin(f, w, 60 + facts_h + fh + 10, r->title);
    rs_svg_header(f, r->title, r->subtitle, w);
    double y = 60 + rs_svg_facts(f, r->facts, r->nfacts, 20, 60, w - 40);
    rs_svg_flows(f, r, 0, y, w, fh);
    rs_svg_end(f);
    return ferror(f) ? -1 : 0;
}

static const double *flow_w;
static int by_weight_desc(const void *a, const void *b)
{
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    if (flow_w[i] != flow_w[j])
        return flow_w[i] > flow_w[j] ? -1 : 1;
    return i < j ? -1 : i > j;
}

int rs_report_flows_html(FILE *f, const rs_report_flows *r)
{
    char a[64], b[64];
    rs_html_begin(f, r->title, r->subtitle);
    rs_html_facts(f, r->facts, r->nfacts);
    double fh = flows_height(r);
    fputs("<h2>Flows</h2>\n", f);
    rs_svg_begin(f, 1200, fh, "flows between nodes");
    rs_svg_flows(f, r, 0, 0, 1200, fh);
    rs_svg_end(f);
    size_t *ord = malloc((r->npairs ? r->npairs : 1) * sizeof *ord);
    double total = 0;
    for (size_t p = 0; p < r->npairs; p++)
        total += r->weight[p] > 0 ? r->weight[p] : 0;
    if (ord) {
        for (size_t p = 0; p < r->npairs; p++)
            ord[p] = p;
        flow_w = r->weight;
        qsort(ord, r->npairs, sizeof *ord, by_weight_desc);
        size_t shown = r->npairs < 50 ? r->npairs : 50;
        fprintf(f, "<h2>Largest flows (%zu of %zu)</h2>\n<table class=\"pairs\">\n"
                   "<tr><th class=\"l\">from</th><th class=\"l\">to</th><th>%s</th><th>share</th></tr>\n",
                shown, r->npairs, r->unit ? r->unit : "amount");
        for (size_t k = 0; k < shown; k++) {
            size_t p = ord[k];
            fputs("<tr><td class=\"l\">", f);
            rs_xml_text(f, r->names ? r->names[r->from[p]] : "?");
            fputs("</td><td class=\"l\">", f);
            rs_xml_text(f, r->names ? r->names[r->to[p]] : "?");
            rs_svg_num_text(r->weight[p], a, sizeof a);
            snprintf(b, sizeof b, "%.4f%%", total > 0 ? 100 * r->weight[p] / total : 0);
            fprintf(f, "</td><td>%s</td><td>%s</td></tr>\n", a, b);
        }
        fputs("</table>\n", f);
    }
    free(ord);
    double *out = calloc(r->nnodes ? r->nnodes : 1, sizeof *out), *in = calloc(r->nnodes ? r->nnodes : 1, sizeof *in);
    if (out && in) {
        for (size_t p = 0; p < r->npairs; p++)
            if (r->weight[p] > 0) {
                out[r->from[p]] += r->weight[p];
                in[r->to[p]] += r->weight[p];
            }
        fprintf(f, "<h2>Per node</h2>\n<details><summary>nodes sending or receiving</summary>\n<table class=\"nodes\">\n"
                   "<tr><th class=\"l\">node</th><th>sends</th><th>receives</th></tr>\n");
        for (size_t i = 0; i < r->nnodes; i++) {
            if (!(out[i] > 0) && !(in[i] > 0))
                continue;
            fputs("<tr><td class=\"l\">", f);
            rs_xml_text(f, r->names ? r->names[i] : "?");
            rs_svg_num_text(out[i], a, sizeof a);
            rs_svg_num_text(in[i], b, sizeof b);
            fprintf(f, "</td><td>%s</td><td>%s</td></tr>\n", a, b);
        }
        fputs("</table>\n</details>\n", f);
    }
    free(out);
    free(in);
    rs_html_end(f);
    return ferror(f) ? -1 : 0;
}
