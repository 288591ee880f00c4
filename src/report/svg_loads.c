/* report/svg_loads.c - per-node loads as a sorted bar chart and as a
 * histogram against the theory's normal curve, in SVG and HTML (see
 * include/ringshard/report.h; shared drawing helpers: svg.c). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ringshard/report.h"
#include "report/svg_internal.h"

/* ---- loads: sorted bar chart --------------------------------------------------- */

static const double *sort_key;
static int by_load_desc(const void *a, const void *b)
{
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    if (sort_key[i] != sort_key[j])
        return sort_key[i] > sort_key[j] ? -1 : 1;
    return i < j ? -1 : i > j;
}

static size_t *sorted_order(const rs_report_loads *r)
{
    size_t *ord = malloc((r->n ? r->n : 1) * sizeof *ord);
    if (!ord)
        return NULL;
    for (size_t i = 0; i < r->n; i++)
        ord[i] = i;
    sort_key = r->load;
    qsort(ord, r->n, sizeof *ord, by_load_desc);
    return ord;
}

static void load_range(const rs_report_loads *r, double *lo, double *hi)
{
    double mn = INFINITY, mx = -INFINITY;
    for (size_t i = 0; i < r->n; i++) {
        mn = fmin(mn, r->load[i]);
        mx = fmax(mx, r->load[i]);
        if (r->expected) {
            mn = fmin(mn, r->expected[i]);
            mx = fmax(mx, r->expected[i]);
        }
    }
    if (isfinite(r->band_lo))
        mn = fmin(mn, r->band_lo);
    if (isfinite(r->band_hi))
        mx = fmax(mx, r->band_hi);
    if (isfinite(r->capacity))
        mx = fmax(mx, r->capacity);
    if (isfinite(r->mean)) {
        mn = fmin(mn, r->mean);
        mx = fmax(mx, r->mean);
    }
    if (!isfinite(mn)) {
        mn = 0;
        mx = 1;
    }
    *lo = mn;
    *hi = mx;
}

/* The geometry of the loads chart, shared by its steps. */
typedef struct {
    double px, py, pw, ph;   /* the plot area */
    axis_box box;
    int truncated;           /* the axis does not start at 0 */
    size_t *ord;             /* nodes by load, descending */
    size_t cols;             /* bars (nodes aggregate when there are more than pixels) */
    double cw;               /* a bar's width */
} loads_geom;

/* The plot area and the load axis's range. */
static void loads_range(const rs_report_loads *r, double x, double y, double w, double h, loads_geom *g)
{
    g->px = x + 80, g->py = y + 44, g->pw = w - 100, g->ph = h - 44 - 52;
    double mn, mx;
    load_range(r, &mn, &mx);
    g->box = (axis_box){g->px, g->py, g->pw, g->ph, 0, mx * 1.05, 0};
    g->truncated = 0;
    if (mx > 0 && (mx - mn) < 0.2 * mx) {
        /* the loads differ by a few percent: a zero-based axis would hide
         * them, so the axis starts near the smallest value (said in a note) */
        double step = rs_svg_nice_step((mx - mn) > 0 ? (mx - mn) : mx * 0.01, 6);
        g->box.lo = floor((mn - (mx - mn) * 0.15) / step) * step;
        if (g->box.lo < 0)
            g->box.lo = 0;
        g->box.hi = ceil((mx + (mx - mn) * 0.1) / step) * step;
        if (g->box.hi <= mx)
            g->box.hi = mx + step;
        g->truncated = g->box.lo > 0;
    }
    if (g->box.hi <= g->box.lo)
        g->box.hi = g->box.lo + 1;
}

/* The title, the legend and the load axis. */
static void loads_legend(FILE *f, const rs_report_loads *r, double x, double y, const loads_geom *g)
{
    char t[256];
    fputs("<g class=\"loads\">\n", f);
    snprintf(t, sizeof t, "Load per node, sorted (%zu nodes)", r->n);
    rs_svg_text(f, x + 20, y + 16, "start", 14, "font-weight=\"bold\"", t);
    double lx = x + 20;
    rs_svg_legend_item(f, &lx, y + 34, "rect", C_BAR, r->unit ? r->unit : "load");
    if (r->flag)
        rs_svg_legend_item(f, &lx, y + 34, "rect", C_FLAG, "outside its expected band");
    if (r->expected)
        rs_svg_legend_item(f, &lx, y + 34, "line", C_EXP, "node's expected load");
    rs_svg_legend_item(f, &lx, y + 34, "dash", C_MEAN, "mean");
    if (isfinite(r->band_lo) && isfinite(r->band_hi))
        rs_svg_legend_item(f, &lx, y + 34, "rect", C_BAND, r->band_label ? r->band_label : "expected band");
    if (isfinite(r->capacity))
        rs_svg_legend_item(f, &lx, y + 34, "line", C_CAP, "capacity");
    char ylabel[96];
    snprintf(ylabel, sizeof ylabel, "%s per node", r->unit ? r->unit : "load");
    rs_svg_y_axis(f, &g->box, ylabel);
}

/* The expected band's shading and the bars, one per node or per group of
 * ranks, with their titles. */
static void loads_bars(FILE *f, const rs_report_loads *r, loads_geom *g)
{
    char a[64], b[64];
    g->cols = r->n;
    if ((double)g->cols > g->pw)
        g->cols = (size_t)g->pw;
    g->cw = g->pw / (double)(g->cols ? g->cols : 1);
    int titles = r->n <= 5000;
    double base = rs_svg_map_y(&g->box, g->box.lo);
    if (isfinite(r->band_lo) && isfinite(r->band_hi)) {
        double y1 = rs_svg_map_y(&g->box, fmin(g->box.hi, r->band_hi)), y2 = rs_svg_map_y(&g->box, fmax(g->box.lo, r->band_lo));
        fprintf(f, "<rect class=\"band\" x=\"%.1f\" y=\"%.2f\" width=\"%.1f\" height=\"%.2f\" fill=\"" C_BAND
                   "\" fill-opacity=\"0.30\"/>\n", g->px, y1, g->pw, y2 - y1 > 0 ? y2 - y1 : 0);
    }
    fputs("<g class=\"bars\" shape-rendering=\"crispEdges\">\n", f);
    for (size_t c = 0; c < g->cols; c++) {
        size_t s = c * r->n / g->cols, e = (c + 1) * r->n / g->cols;
        if (e <= s)
            continue;
        double v = r->load[g->ord[s]];
        int flagged = 0;
        for (size_t k = s; k < e && r->flag; k++)
            flagged |= r->flag[g->ord[k]] != 0;
        double top = rs_svg_map_y(&g->box, v < g->box.lo ? g->box.lo : v);
        fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\">", g->px + g->cw * (double)c, top,
                g->cw > 2 ? g->cw * 0.85 : g->cw, base - top, flagged ? C_FLAG : C_BAR);
        if (titles) {
            rs_svg_num_text(v, a, sizeof a);
            if (e - s == 1) {
                fputs("<title>node ", f);
                rs_xml_text(f, r->names ? r->names[g->ord[s]] : "?");
                fprintf(f, ": %s", a);
                if (r->expected) {
                    rs_svg_num_text(r->expected[g->ord[s]], b, sizeof b);
                    fprintf(f, " (expected %s)", b);
                }
                fputs("</title>", f);
            } else {
                rs_svg_num_text(r->load[g->ord[e - 1]], b, sizeof b);
                fprintf(f, "<title>ranks %zu-%zu: %s down to %s</title>", s + 1, e, a, b);
            }
        }
        fputs("</rect>\n", f);
    }
    fputs("</g>\n", f);
}

/* Over the bars: each node's expected load, the band's edges, the mean and
 * the capacity. */
static void loads_marks(FILE *f, const rs_report_loads *r, const loads_geom *g)
{
    char t[256], a[64];
    if (r->expected) {
        /* each node's expected load, as a short dark tick over its bar */
        fputs("<path class=\"expected\" fill=\"none\" stroke=\"" C_EXP "\" stroke-width=\"1.5\" d=\"", f);
        for (size_t c = 0; c < g->cols; c++) {
            size_t s = c * r->n / g->cols, e = (c + 1) * r->n / g->cols;
            for (size_t k = s; k < e; k++) {
                double ev = r->expected[g->ord[k]];
                if (ev < g->box.lo || ev > g->box.hi)
                    continue;
                fprintf(f, "M%.2f %.2fh%.2f", g->px + g->cw * (double)c, rs_svg_map_y(&g->box, ev), g->cw > 1.5 ? g->cw * 0.85 : 1.5);
                if (e - s > 1)
                    break;   /* aggregated column: the first node only */
            }
        }
        fputs("\"/>\n", f);
    }
    if (isfinite(r->band_lo) && isfinite(r->band_hi)) {
        /* the band's edges over the bars (its shading is behind them) */
        for (int k = 0; k < 2; k++) {
            double v = k ? r->band_hi : r->band_lo;
            if (v < g->box.lo || v > g->box.hi)
                continue;
            double yb = rs_svg_map_y(&g->box, v);
            fprintf(f, "<line class=\"band-edge\" x1=\"%.1f\" y1=\"%.2f\" x2=\"%.1f\" y2=\"%.2f\" stroke=\"#c98a00\" "
                       "stroke-width=\"1.2\" stroke-dasharray=\"2,3\"/>\n", g->px, yb, g->px + g->pw, yb);
        }
    }
    if (isfinite(r->mean)) {
        double ym = rs_svg_map_y(&g->box, r->mean);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.2f\" x2=\"%.1f\" y2=\"%.2f\" stroke=\"" C_MEAN
                   "\" stroke-width=\"1.5\" stroke-dasharray=\"6,4\"/>\n", g->px, ym, g->px + g->pw, ym);
        rs_svg_num_text(r->mean, a, sizeof a);
        snprintf(t, sizeof t, "mean %s", a);
        rs_svg_text(f, g->px + g->pw - 4, ym - 4, "end", 11, "fill=\"" C_MEAN "\"", t);
    }
    if (isfinite(r->capacity)) {
        double yc = rs_svg_map_y(&g->box, r->capacity);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.2f\" x2=\"%.1f\" y2=\"%.2f\" stroke=\"" C_CAP "\" stroke-width=\"1.5\"/>\n",
                g->px, yc, g->px + g->pw, yc);
        rs_svg_num_text(r->capacity, a, sizeof a);
        snprintf(t, sizeof t, "capacity %s", a);
        rs_svg_text(f, g->px + g->pw - 4, yc - 4, "end", 11, "fill=\"" C_CAP "\"", t);
    }
}

/* The rank axis, its label and the truncation note. */
static void loads_ranks(FILE *f, const rs_report_loads *r, const loads_geom *g)
{
    char t[256], a[64];
    rs_svg_x_baseline(f, g->px, g->py + g->ph, g->pw);
    /* rank ticks */
    size_t ranks[5] = {1, r->n / 4, r->n / 2, 3 * r->n / 4, r->n};
    for (int k = 0; k < 5; k++) {
        if (ranks[k] < 1 || (k && ranks[k] == ranks[k - 1]))
            continue;
        double tx = g->px + g->pw * ((double)ranks[k] - 0.5) / (double)(r->n ? r->n : 1);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", tx, g->py + g->ph, tx,
                g->py + g->ph + 5);
        snprintf(t, sizeof t, "%zu", ranks[k]);
        rs_svg_text(f, tx, g->py + g->ph + 18, "middle", 11, NULL, t);
    }
    if (r->n && r->names) {
        snprintf(t, sizeof t, "nodes ranked by load (rank 1: node %s)", r->names[g->ord[0]]);
        rs_svg_text(f, g->px + g->pw / 2, g->py + g->ph + 36, "middle", 12, NULL, t);
    } else {
        rs_svg_text(f, g->px + g->pw / 2, g->py + g->ph + 36, "middle", 12, NULL, "nodes ranked by load");
    }
    if (g->truncated) {
        rs_svg_num_text(g->box.lo, a, sizeof a);
        snprintf(t, sizeof t, "note: the axis starts at %s, not 0", a);
        rs_svg_text(f, g->px + g->pw, g->py + g->ph + 36, "end", 11, "fill=\"#a00\"", t);
    }
}

void rs_svg_loads(FILE *f, const rs_report_loads *r, double x, double y, double w, double h)
{
    loads_geom g;
    loads_range(r, x, y, w, h, &g);
    loads_legend(f, r, x, y, &g);
    if (!(g.ord = sorted_order(r))) {
        fputs("</g>\n", f);
        return;
    }
    loads_bars(f, r, &g);
    loads_marks(f, r, &g);
    loads_ranks(f, r, &g);
    fputs("</g>\n", f);
    free(g.ord);
}

/* ---- loads: histogram ------------------------------------------------------- */

static double normal_cdf(double x) { return 0.5 * erfc(-x / sqrt(2.0)); }

/* The theory curve: a gamma density with the given mean and sd (shape
 * mean^2/sd^2: a random ring's share is a sum of V spacings, Gamma(V)), or a
 * normal density when the shape is large (> 500) and the two agree. */
static double theory_density(double mean, double sd, double x)
{
    double k = mean * mean / (sd * sd);
    if (k > 500 || mean <= 0) {
        double z = (x - mean) / sd;
        return exp(-z * z / 2) / (sd * sqrt(2 * M_PI));
    }
    if (x <= 0)
        return k < 1 ? INFINITY : k == 1 ? 1 / (sd * sd / mean) : 0;
    double theta = sd * sd / mean;
    return exp((k - 1) * log(x) - x / theta - lgamma(k) - k * log(theta));
}

/* The histogram's bins and what is drawn over them, shared by its steps. */
typedef struct {
    double px, py, pw, ph;   /* the plot area */
    size_t nb;               /* bins */
    double bw, lo, hi;       /* bin width and the loads' axis */
    double *obs, *exp_;      /* nodes per bin: observed, expected from each node's share */
    int have_exp, have_theory;
    axis_box box;
    double cw;               /* a bin's width on the page */
} hist_geom;

/* The bins: a width that is a nice step (at least one: loads are counts)
 * over the loads, the band and the theory's +-3 sd; the observed nodes per
 * bin. -1 when out of memory (nothing drawn). */
static int hist_bins(const rs_report_loads *r, hist_geom *g)
{
    double mn = INFINITY, mx = -INFINITY;
    for (size_t i = 0; i < r->n; i++) {
        mn = fmin(mn, r->load[i]);
        mx = fmax(mx, r->load[i]);
    }
    if (!isfinite(mn))
        mn = 0, mx = 1;
    if (isfinite(r->band_lo))
        mn = fmin(mn, r->band_lo);
    if (isfinite(r->band_hi))
        mx = fmax(mx, r->band_hi);
    if (isfinite(r->theory_mean) && isfinite(r->theory_sd) && r->theory_sd > 0) {
        mn = fmin(mn, r->theory_mean - 3 * r->theory_sd);
        mx = fmax(mx, r->theory_mean + 3 * r->theory_sd);
    }
    if (mn < 0)
        mn = 0;
    g->nb = (size_t)ceil(2 * sqrt((double)r->n));
    if (g->nb < 10)
        g->nb = 10;
    if (g->nb > 80)
        g->nb = 80;
    double range = mx - mn;
    g->bw = rs_svg_nice_step(range > 0 ? range : 1, (int)g->nb);
    if (g->bw < 1)
        g->bw = 1;   /* loads are counts: no bin narrower than one */
    g->lo = floor(mn / g->bw) * g->bw, g->hi = (floor(mx / g->bw) + 1) * g->bw;
    g->nb = (size_t)llround((g->hi - g->lo) / g->bw);
    g->obs = calloc(g->nb, sizeof *g->obs), g->exp_ = calloc(g->nb, sizeof *g->exp_);
    if (!g->obs || !g->exp_) {
        free(g->obs);
        free(g->exp_);
        return -1;
    }
    return 0;
}

/* The observed and expected counts per bin, and the count axis (up to the
 * highest of them and of the theory's curve). */
static void hist_counts(const rs_report_loads *r, hist_geom *g)
{
    for (size_t i = 0; i < r->n; i++) {
        long k = (long)floor((r->load[i] - g->lo) / g->bw);
        if (k < 0)
            k = 0;
        if ((size_t)k >= g->nb)
            k = (long)g->nb - 1;
        g->obs[k]++;
    }
    g->have_exp = r->expected && r->expected_sd;
    if (g->have_exp)
        for (size_t i = 0; i < r->n; i++) {
            double e = r->expected[i], s = r->expected_sd[i];
            /* P(count in [a, a + bw)) with a continuity correction */
            for (size_t k = 0; k < g->nb; k++) {
                double a = g->lo + g->bw * (double)k - 0.5, b = a + g->bw;
                if (s > 0) {
                    if (e + 8 * s < a || e - 8 * s > b)
                        continue;
                    g->exp_[k] += normal_cdf((b - e) / s) - normal_cdf((a - e) / s);
                } else if (e >= a && e < b) {
                    g->exp_[k] += 1;
                }
            }
        }
    double ymax = 1;
    for (size_t k = 0; k < g->nb; k++)
        ymax = fmax(ymax, fmax(g->obs[k], g->exp_[k]));
    g->have_theory = isfinite(r->theory_mean) && isfinite(r->theory_sd) && r->theory_sd > 0;
    if (g->have_theory)
        for (int s = 0; s <= 200; s++) {
            double d = (double)r->n * g->bw * theory_density(r->theory_mean, r->theory_sd, g->lo + (g->hi - g->lo) * s / 200.0);
            if (isfinite(d))
                ymax = fmax(ymax, fmin(d, 2 * ymax));
        }
    g->box = (axis_box){g->px, g->py, g->pw, g->ph, 0, ymax * 1.1, 0};
}

/* The title, the legend, the count axis and the band's shading. */
static void hist_legend(FILE *f, const rs_report_loads *r, double x, double y, const hist_geom *g)
{
    char t[256];
    fputs("<g class=\"histogram\">\n", f);
    snprintf(t, sizeof t, "How many nodes carry each load (bins of %.6g %s)", g->bw, r->unit ? r->unit : "");
    rs_svg_text(f, x + 20, y + 16, "start", 14, "font-weight=\"bold\"", t);
    double lx = x + 20;
    rs_svg_legend_item(f, &lx, y + 34, "rect", C_BAR, "nodes observed");
    if (g->have_exp)
        rs_svg_legend_item(f, &lx, y + 34, "dot", C_EXP, "expected from each node's share");
    if (g->have_theory)
        rs_svg_legend_item(f, &lx, y + 34, "dash", C_THEORY, r->theory_label ? r->theory_label : "theory");
    if (isfinite(r->band_lo) && isfinite(r->band_hi))
        rs_svg_legend_item(f, &lx, y + 34, "rect", C_BAND, r->band_label ? r->band_label : "expected band");
    rs_svg_y_axis(f, &g->box, "nodes");
    if (isfinite(r->band_lo) && isfinite(r->band_hi)) {
        double x1 = rs_svg_map_xv(g->px, g->pw, g->lo, g->hi, 0, fmax(g->lo, r->band_lo)), x2 = rs_svg_map_xv(g->px, g->pw, g->lo, g->hi, 0, fmin(g->hi, r->band_hi));
        fprintf(f, "<rect class=\"band\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"" C_BAND
                   "\" fill-opacity=\"0.30\"/>\n", x1, g->py, x2 > x1 ? x2 - x1 : 0, g->ph);
    }
}

/* The observed bins, with their titles. */
static void hist_bars(FILE *f, hist_geom *g)
{
    double base = rs_svg_map_y(&g->box, 0);
    g->cw = g->pw / (double)g->nb;
    fputs("<g class=\"bins\" shape-rendering=\"crispEdges\">\n", f);
    for (size_t k = 0; k < g->nb; k++) {
        if (!g->obs[k])
            continue;
        double top = rs_svg_map_y(&g->box, g->obs[k]);
        fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"" C_BAR "\">"
                   "<title>%.6g to %.6g: %.0f nodes", g->px + g->cw * (double)k + (g->cw > 3 ? 0.5 : 0), top,
                g->cw > 3 ? g->cw - 1 : g->cw, base - top, g->lo + g->bw * (double)k, g->lo + g->bw * (double)(k + 1) - (g->bw >= 1 ? 1 : 0),
                g->obs[k]);
        if (g->have_exp)
            fprintf(f, " (expected %.1f)", g->exp_[k]);
        fputs("</title></rect>\n", f);
    }
    fputs("</g>\n", f);
}

/* Over the bins: the expected counts, the theory's curve, the mean and the
 * capacity, then the load axis. */
static void hist_marks(FILE *f, const rs_report_loads *r, const hist_geom *g)
{
    if (g->have_exp) {
        fputs("<polyline class=\"expected\" fill=\"none\" stroke=\"" C_EXP "\" stroke-width=\"1.2\" points=\"", f);
        for (size_t k = 0; k < g->nb; k++)
            fprintf(f, "%.2f,%.2f ", g->px + g->cw * ((double)k + 0.5), rs_svg_map_y(&g->box, g->exp_[k]));
        fputs("\"/>\n", f);
        for (size_t k = 0; k < g->nb; k++)
            if (g->exp_[k] >= 0.05)
                fprintf(f, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"2.5\" fill=\"" C_EXP "\"/>\n", g->px + g->cw * ((double)k + 0.5),
                        rs_svg_map_y(&g->box, g->exp_[k]));
    }
    if (g->have_theory) {
        fputs("<polyline class=\"theory\" fill=\"none\" stroke=\"" C_THEORY
              "\" stroke-width=\"2\" stroke-dasharray=\"6,4\" points=\"", f);
        for (int s = 0; s <= 200; s++) {
            double v = g->lo + (g->hi - g->lo) * s / 200.0;
            double dens = (double)r->n * g->bw * theory_density(r->theory_mean, r->theory_sd, v);
            if (!isfinite(dens) || dens > g->box.hi)
                dens = g->box.hi;
            fprintf(f, "%.2f,%.2f ", rs_svg_map_xv(g->px, g->pw, g->lo, g->hi, 0, v), rs_svg_map_y(&g->box, dens));
        }
        fputs("\"/>\n", f);
    }
    if (isfinite(r->mean) && r->mean >= g->lo && r->mean <= g->hi) {
        double xm = rs_svg_map_xv(g->px, g->pw, g->lo, g->hi, 0, r->mean);
        fprintf(f, "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"" C_MEAN
                   "\" stroke-width=\"1.5\" stroke-dasharray=\"6,4\"/>\n", xm, g->py, xm, g->py + g->ph);
    }
    if (isfinite(r->capacity) && r->capacity >= g->lo && r->capacity <= g->hi) {
        double xc = rs_svg_map_xv(g->px, g->pw, g->lo, g->hi, 0, r->capacity);
        fprintf(f, "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"" C_CAP "\" stroke-width=\"1.5\"/>\n",
                xc, g->py, xc, g->py + g->ph);
    }
    char xl[96];
    snprintf(xl, sizeof xl, "%s per node", r->unit ? r->unit : "load");
    rs_svg_x_axis_values(f, g->px, g->py + g->ph, g->pw, g->lo, g->hi, 0, xl);
}

void rs_svg_histogram(FILE *f, const rs_report_loads *r, double x, double y, double w, double h)
{
    hist_geom g = {.px = x + 80, .py = y + 44, .pw = w - 100, .ph = h - 44 - 52};
    if (hist_bins(r, &g) != 0)
        return;
    hist_counts(r, &g);
    hist_legend(f, r, x, y, &g);
    hist_bars(f, &g);
    hist_marks(f, r, &g);
    fputs("</g>\n", f);
    free(g.obs);
    free(g.exp_);
}

int rs_report_loads_svg(FILE *f, const rs_report_loads *r)
{
    double w = 1200;
    double facts_h = rs_svg_facts_height(r->facts, r->nfacts, w - 40);
    double h = 60 + facts_h + 430 + 380 + 10;
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
    rs_svg_begin(f, w, h, r->title);
    rs_svg_header(f, r->title, r->subtitle, w);
    double y = 60 + rs_svg_facts(f, r->facts, r->nfacts, 20, 60, w - 40);
    rs_svg_loads(f, r, 0, y, w, 430);
    rs_svg_histogram(f, r, 0, y + 430, w, 380);
    rs_svg_end(f);
    return ferror(f) ? -1 : 0;
}

static const double *abs_z_key;
static int by_abs_desc(const void *a, const void *b)
{
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    double x = fabs(abs_z_key[i]), y = fabs(abs_z_key[j]);
    if (x != y)
        return x > y ? -1 : 1;
    return i < j ? -1 : i > j;
}

static void node_row(FILE *f, const rs_report_loads *r, size_t i)
{
    char a[64], b[64], c[64];
    fprintf(f, "<tr%s><td class=\"l\">", r->flag && r->flag[i] ? " class=\"flag\"" : "");
    rs_xml_text(f, r->names ? r->names[i] : "?");
    rs_svg_num_text(r->load[i], a, sizeof a);
    fprintf(f, "</td><td>%s</td>", a);
    if (r->expected) {
        rs_svg_num_text(r->expected[i], b, sizeof b);
        fprintf(f, "<td>%s</td>", b);
    }
    if (r->expected && r->expected_sd) {
        double s = r->expected_sd[i], z = s > 0 ? (r->load[i] - r->expected[i]) / s : 0;
        rs_svg_num_text(s, c, sizeof c);
        fprintf(f, "<td>%s</td><td>%+.2f</td>", c, z);
    }
    if (r->flag)
        fprintf(f, "<td>%s</td>", r->flag[i] > 0 ? "above" : r->flag[i] < 0 ? "below" : "");
    fputs("</tr>\n", f);
}

static void node_table_head(FILE *f, const rs_report_loads *r)
{
    fprintf(f, "<table class=\"nodes\">\n<tr><th class=\"l\">node</th><th>%s</th>", r->unit ? r->unit : "load");
    if (r->expected)
        fputs("<th>expected</th>", f);
    if (r->expected && r->expected_sd)
        fputs("<th>expected sd</th><th>z</th>", f);
    if (r->flag)
        fputs("<th>flag</th>", f);
    fputs("</tr>\n", f);
}

int rs_report_loads_html(FILE *f, const rs_report_loads *r)
{
    rs_html_begin(f, r->title, r->subtitle);
    rs_html_facts(f, r->facts, r->nfacts);
    fputs("<h2>Per-node load</h2>\n", f);
    rs_svg_begin(f, 1200, 430, "load per node, sorted");
    rs_svg_loads(f, r, 0, 0, 1200, 430);
    rs_svg_end(f);
    fputs("<h2>Distribution of loads</h2>\n", f);
    rs_svg_begin(f, 1200, 380, "histogram of loads");
    rs_svg_histogram(f, r, 0, 0, 1200, 380);
    rs_svg_end(f);
    size_t *ord = malloc((r->n ? r->n : 1) * sizeof *ord);
    double *zs = malloc((r->n ? r->n : 1) * sizeof *zs);
    if (ord && zs) {
        size_t nflag = 0;
        for (size_t i = 0; i < r->n; i++) {
            ord[i] = i;
            double s = r->expected_sd ? r->expected_sd[i] : 0;
            zs[i] = r->expected && s > 0 ? (r->load[i] - r->expected[i]) / s : 0;
            nflag += r->flag && r->flag[i];
        }
        if (r->flag) {
            fprintf(f, "<h2>Nodes outside their expected band (%zu)</h2>\n", nflag);
            if (nflag) {
                abs_z_key = zs;
                qsort(ord, r->n, sizeof *ord, by_abs_desc);
                node_table_head(f, r);
                size_t shown = 0;
                for (size_t k = 0; k < r->n && shown < 500; k++)
                    if (r->flag[ord[k]]) {
                        node_row(f, r, ord[k]);
                        shown++;
                    }
                fputs("</table>\n", f);
                if (nflag > shown)
                    fprintf(f, "<p>(%zu more not shown)</p>\n", nflag - shown);
            }
        }
        fprintf(f, "<h2>Every node</h2>\n<details><summary>%zu nodes</summary>\n", r->n);
        node_table_head(f, r);
        for (size_t i = 0; i < r->n; i++)
            node_row(f, r, i);
        fputs("</table>\n</details>\n", f);
    }
    free(ord);
    free(zs);
    rs_html_end(f);
    return ferror(f) ? -1 : 0;
}
