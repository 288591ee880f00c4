/* Self-contained SVG and HTML reports: per-node loads, load histograms,
 * (from, to) flow matrices and line charts. See include/ringshard/report.h.
 *
 * Everything is drawn with plain SVG 1.1 elements and presentation
 * attributes; text uses the generic "sans-serif" family, so a viewer never
 * fetches anything. Numbers are printed with enough digits to be checked
 * (facts) or rounded for axes (ticks). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
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

/* ---- text ------------------------------------------------------------------ */

/* Length of the valid UTF-8 sequence at s (0 if invalid). */
static size_t utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    size_t n;
    unsigned min;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef)
        n = 3, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 4, min = 0x10000;
    else
        return 0;
    unsigned cp = c & (0x7f >> n);
    for (size_t k = 1; k < n; k++) {
        if ((s[k] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[k] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

void rs_xml_text(FILE *f, const char *str)
{
    const unsigned char *s = (const unsigned char *)(str ? str : "");
    while (*s) {
        switch (*s) {
        case '&': fputs("&amp;", f); s++; continue;
        case '<': fputs("&lt;", f); s++; continue;
        case '>': fputs("&gt;", f); s++; continue;
        case '"': fputs("&quot;", f); s++; continue;
        case '\'': fputs("&#39;", f); s++; continue;
        default: break;
        }
        if (*s < 0x20 && *s != '\t' && *s != '\n') {
            fputs("\xef\xbf\xbd", f);
            s++;
            continue;
        }
        size_t n = utf8_len(s);
        if (!n) {
            fputs("\xef\xbf\xbd", f);
            s++;
            continue;
        }
        fwrite(s, 1, n, f);
        s += n;
    }
}

/* A number for axis ticks: integers plainly up to 6 digits, then k/M/G. */
static void tick_text(double v, char *buf, size_t cap)
{
    double a = fabs(v);
    if (a >= 1e9 && fmod(a, 1e7) == 0)
        snprintf(buf, cap, "%gG", v / 1e9);
    else if (a >= 1e6 && fmod(a, 1e4) == 0)
        snprintf(buf, cap, "%gM", v / 1e6);
    else if (a >= 1e4 && fmod(a, 100) == 0)
        snprintf(buf, cap, "%gk", v / 1e3);
    else
        snprintf(buf, cap, "%.6g", v);
}

/* Plain number with up to `prec` significant digits, integers in full. */
static void num_text(double v, char *buf, size_t cap)
{
    if (!isfinite(v))
        snprintf(buf, cap, "%s", isnan(v) ? "n/a" : v > 0 ? "inf" : "-inf");
    else if (v == floor(v) && fabs(v) < 1e15)
        snprintf(buf, cap, "%.0f", v);
    else if (fabs(v) >= 100)
        snprintf(buf, cap, "%.2f", v);
    else
        snprintf(buf, cap, "%.6g", v);
}

static void text(FILE *f, double x, double y, const char *anchor, double size, const char *extra, const char *s)
{
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%.0f\" text-anchor=\"%s\" " FONT "%s%s>", x, y, size,
            anchor, extra ? " " : "", extra ? extra : "");
    rs_xml_text(f, s);
    fputs("</text>\n", f);
}

/* ---- axes ------------------------------------------------------------------ */

static double nice_step(double range, int target)
{
    if (!(range > 0))
        return 1;
    double raw = range / target, mag = pow(10, floor(log10(raw))), r = raw / mag;
    double step = r < 1.5 ? 1 : r < 3 ? 2 : r < 7 ? 5 : 10;
    return step * mag;
}

typedef struct {
    double x, y, w, h;     /* plot area */
    double lo, hi;         /* value range (linear) */
    int log;
} axis_box;

static double map_y(const axis_box *b, double v)
{
    if (b->log) {
        double l = log10(v > 0 ? v : b->lo);
        return b->y + b->h - (l - log10(b->lo)) / (log10(b->hi) - log10(b->lo)) * b->h;
    }
    return b->y + b->h - (v - b->lo) / (b->hi - b->lo) * b->h;
}

static double map_xv(double x0, double w, double lo, double hi, int lg, double v)
{
    if (lg)
        return x0 + (log10(v) - log10(lo)) / (log10(hi) - log10(lo)) * w;
    return x0 + (v - lo) / (hi - lo) * w;
}

/* Horizontal grid lines and labels of a linear y axis. */
static void y_axis(FILE *f, const axis_box *b, const char *label)
{
    if (b->log) {
        for (double d = pow(10, floor(log10(b->lo))); d <= b->hi * 1.0001; d *= 10)
            for (int m = 1; m <= 9; m++) {
                double v = d * m;
                if (v < b->lo * 0.9999 || v > b->hi * 1.0001)
                    continue;
                double y = map_y(b, v);
                fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>\n", b->x, y,
                        b->x + b->w, y, m == 1 ? "#cccccc" : C_GRID);
                if (m == 1 || m == 2 || m == 5) {
                    char t[32];
                    tick_text(v, t, sizeof t);
                    text(f, b->x - 6, y + 4, "end", 11, NULL, t);
                }
            }
    } else {
        double step = nice_step(b->hi - b->lo, 6);
        for (double v = ceil(b->lo / step) * step; v <= b->hi + step * 1e-9; v += step) {
            double y = map_y(b, v);
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>\n", b->x, y,
                    b->x + b->w, y, C_GRID);
            char t[32];
            tick_text(fabs(v) < step * 1e-9 ? 0 : v, t, sizeof t);
            text(f, b->x - 6, y + 4, "end", 11, NULL, t);
        }
    }
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", b->x, b->y, b->x,
            b->y + b->h);
    char tr[96];
    double cx = b->x - 62, cy = b->y + b->h / 2;
    snprintf(tr, sizeof tr, "transform=\"rotate(-90 %.1f %.1f)\"", cx, cy);
    text(f, cx, cy, "middle", 12, tr, label);
}

static void x_baseline(FILE *f, double x, double y, double w)
{
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", x, y, x + w, y);
}

/* Ticks and labels of a linear (or log) x axis over [lo, hi]. */
static void x_axis_values(FILE *f, double x, double y, double w, double lo, double hi, int lg, const char *label)
{
    x_baseline(f, x, y, w);
    if (lg) {
        for (double d = pow(10, floor(log10(lo))); d <= hi * 1.0001; d *= 10)
            for (int m = 1; m <= 9; m++) {
                double v = d * m;
                if (v < lo * 0.9999 || v > hi * 1.0001)
                    continue;
                double px = map_xv(x, w, lo, hi, 1, v);
                fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", px, y, px,
                        y + (m == 1 ? 6 : 3));
                if (m == 1 || m == 2 || m == 5) {
                    char t[32];
                    tick_text(v, t, sizeof t);
                    text(f, px, y + 18, "middle", 11, NULL, t);
                }
            }
    } else {
        double step = nice_step(hi - lo, 8);
        for (double v = ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) {
            double px = map_xv(x, w, lo, hi, 0, v);
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", px, y, px, y + 5);
            char t[32];
            tick_text(fabs(v) < step * 1e-9 ? 0 : v, t, sizeof t);
            text(f, px, y + 18, "middle", 11, NULL, t);
        }
    }
    text(f, x + w / 2, y + 36, "middle", 12, NULL, label);
}

static void legend_item(FILE *f, double *lx, double y, const char *kind, const char *color, const char *label)
{
    if (!strcmp(kind, "rect"))
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"10\" fill=\"%s\"%s/>\n", *lx, y - 9, color,
                !strcmp(color, C_BAND) ? " fill-opacity=\"0.45\"" : "");
    else if (!strcmp(kind, "dash"))
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\" "
                   "stroke-dasharray=\"5,3\"/>\n", *lx, y - 4, *lx + 14, y - 4, color);
    else if (!strcmp(kind, "dot"))
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n", *lx + 7, y - 4, color);
    else
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"/>\n", *lx,
                y - 4, *lx + 14, y - 4, color);
    text(f, *lx + 18, y, "start", 11, NULL, label);
    *lx += 18 + 6.2 * (double)strlen(label) + 18;
}

/* ---- documents --------------------------------------------------------------- */

void rs_svg_begin(FILE *f, double width, double height, const char *title)
{
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" height=\"%.0f\" "
               "viewBox=\"0 0 %.0f %.0f\">\n<title>", width, height, width, height);
    rs_xml_text(f, title);
    fprintf(f, "</title>\n<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"#ffffff\"/>\n", width, height);
}

void rs_svg_end(FILE *f) { fputs("</svg>\n", f); }

/* As many columns (3 at most) as the longest fact allows, at ~6.6 px a character. */
static int facts_columns(const rs_report_fact *facts, size_t n, double w)
{
    size_t longest = 0;
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(facts[i].label ? facts[i].label : "") + 1 + strlen(facts[i].value ? facts[i].value : "");
        if (l > longest)
            longest = l;
    }
    int cols = 3;
    while (cols > 1 && (double)longest * 6.6 > w / cols - 10)
        cols--;
    return cols;
}

static double facts_height(const rs_report_fact *facts, size_t n, double w)
{
    if (!n)
        return 0;
    int cols = facts_columns(facts, n, w);
    return 16 * (double)((n + (size_t)cols - 1) / (size_t)cols) + 8;
}

double rs_svg_facts(FILE *f, const rs_report_fact *facts, size_t n, double x, double y, double w)
{
    if (!n)
        return 0;
    int cols = facts_columns(facts, n, w);
    size_t rows = (n + (size_t)cols - 1) / (size_t)cols;
    double cw = w / cols;
    fputs("<g class=\"facts\">\n", f);
    for (size_t i = 0; i < n; i++) {
        double cx = x + cw * (double)(i / rows), cy = y + 16 * (double)(i % rows) + 12;
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" " FONT "><tspan font-weight=\"bold\">", cx, cy);
        rs_xml_text(f, facts[i].label);
        fputs("</tspan> ", f);
        rs_xml_text(f, facts[i].value);
        fputs("</text>\n", f);
    }
    fputs("</g>\n", f);
    return 16 * (double)rows + 8;
}

static void svg_header(FILE *f, const char *title, const char *subtitle, double w)
{
    text(f, 20, 28, "start", 18, "font-weight=\"bold\"", title ? title : "ringshard");
    if (subtitle)
        text(f, 20, 48, "start", 12, "fill=\"#444\"", subtitle);
    (void)w;
}

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
        double step = nice_step((mx - mn) > 0 ? (mx - mn) : mx * 0.01, 6);
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
    text(f, x + 20, y + 16, "start", 14, "font-weight=\"bold\"", t);
    double lx = x + 20;
    legend_item(f, &lx, y + 34, "rect", C_BAR, r->unit ? r->unit : "load");
    if (r->flag)
        legend_item(f, &lx, y + 34, "rect", C_FLAG, "outside its expected band");
    if (r->expected)
        legend_item(f, &lx, y + 34, "line", C_EXP, "node's expected load");
    legend_item(f, &lx, y + 34, "dash", C_MEAN, "mean");
    if (isfinite(r->band_lo) && isfinite(r->band_hi))
        legend_item(f, &lx, y + 34, "rect", C_BAND, r->band_label ? r->band_label : "expected band");
    if (isfinite(r->capacity))
        legend_item(f, &lx, y + 34, "line", C_CAP, "capacity");
    char ylabel[96];
    snprintf(ylabel, sizeof ylabel, "%s per node", r->unit ? r->unit : "load");
    y_axis(f, &g->box, ylabel);
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
    double base = map_y(&g->box, g->box.lo);
    if (isfinite(r->band_lo) && isfinite(r->band_hi)) {
        double y1 = map_y(&g->box, fmin(g->box.hi, r->band_hi)), y2 = map_y(&g->box, fmax(g->box.lo, r->band_lo));
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
        double top = map_y(&g->box, v < g->box.lo ? g->box.lo : v);
        fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\">", g->px + g->cw * (double)c, top,
                g->cw > 2 ? g->cw * 0.85 : g->cw, base - top, flagged ? C_FLAG : C_BAR);
        if (titles) {
            num_text(v, a, sizeof a);
            if (e - s == 1) {
                fputs("<title>node ", f);
                rs_xml_text(f, r->names ? r->names[g->ord[s]] : "?");
                fprintf(f, ": %s", a);
                if (r->expected) {
                    num_text(r->expected[g->ord[s]], b, sizeof b);
                    fprintf(f, " (expected %s)", b);
                }
                fputs("</title>", f);
            } else {
                num_text(r->load[g->ord[e - 1]], b, sizeof b);
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
                fprintf(f, "M%.2f %.2fh%.2f", g->px + g->cw * (double)c, map_y(&g->box, ev), g->cw > 1.5 ? g->cw * 0.85 : 1.5);
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
            double yb = map_y(&g->box, v);
            fprintf(f, "<line class=\"band-edge\" x1=\"%.1f\" y1=\"%.2f\" x2=\"%.1f\" y2=\"%.2f\" stroke=\"#c98a00\" "
                       "stroke-width=\"1.2\" stroke-dasharray=\"2,3\"/>\n", g->px, yb, g->px + g->pw, yb);
        }
    }
    if (isfinite(r->mean)) {
        double ym = map_y(&g->box, r->mean);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.2f\" x2=\"%.1f\" y2=\"%.2f\" stroke=\"" C_MEAN
                   "\" stroke-width=\"1.5\" stroke-dasharray=\"6,4\"/>\n", g->px, ym, g->px + g->pw, ym);
        num_text(r->mean, a, sizeof a);
        snprintf(t, sizeof t, "mean %s", a);
        text(f, g->px + g->pw - 4, ym - 4, "end", 11, "fill=\"" C_MEAN "\"", t);
    }
    if (isfinite(r->capacity)) {
        double yc = map_y(&g->box, r->capacity);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.2f\" x2=\"%.1f\" y2=\"%.2f\" stroke=\"" C_CAP "\" stroke-width=\"1.5\"/>\n",
                g->px, yc, g->px + g->pw, yc);
        num_text(r->capacity, a, sizeof a);
        snprintf(t, sizeof t, "capacity %s", a);
        text(f, g->px + g->pw - 4, yc - 4, "end", 11, "fill=\"" C_CAP "\"", t);
    }
}

/* The rank axis, its label and the truncation note. */
static void loads_ranks(FILE *f, const rs_report_loads *r, const loads_geom *g)
{
    char t[256], a[64];
    x_baseline(f, g->px, g->py + g->ph, g->pw);
    /* rank ticks */
    size_t ranks[5] = {1, r->n / 4, r->n / 2, 3 * r->n / 4, r->n};
    for (int k = 0; k < 5; k++) {
        if (ranks[k] < 1 || (k && ranks[k] == ranks[k - 1]))
            continue;
        double tx = g->px + g->pw * ((double)ranks[k] - 0.5) / (double)(r->n ? r->n : 1);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", tx, g->py + g->ph, tx,
                g->py + g->ph + 5);
        snprintf(t, sizeof t, "%zu", ranks[k]);
        text(f, tx, g->py + g->ph + 18, "middle", 11, NULL, t);
    }
    if (r->n && r->names) {
        snprintf(t, sizeof t, "nodes ranked by load (rank 1: node %s)", r->names[g->ord[0]]);
        text(f, g->px + g->pw / 2, g->py + g->ph + 36, "middle", 12, NULL, t);
    } else {
        text(f, g->px + g->pw / 2, g->py + g->ph + 36, "middle", 12, NULL, "nodes ranked by load");
    }
    if (g->truncated) {
        num_text(g->box.lo, a, sizeof a);
        snprintf(t, sizeof t, "note: the axis starts at %s, not 0", a);
        text(f, g->px + g->pw, g->py + g->ph + 36, "end", 11, "fill=\"#a00\"", t);
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
    g->bw = nice_step(range > 0 ? range : 1, (int)g->nb);
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
    text(f, x + 20, y + 16, "start", 14, "font-weight=\"bold\"", t);
    double lx = x + 20;
    legend_item(f, &lx, y + 34, "rect", C_BAR, "nodes observed");
    if (g->have_exp)
        legend_item(f, &lx, y + 34, "dot", C_EXP, "expected from each node's share");
    if (g->have_theory)
        legend_item(f, &lx, y + 34, "dash", C_THEORY, r->theory_label ? r->theory_label : "theory");
    if (isfinite(r->band_lo) && isfinite(r->band_hi))
        legend_item(f, &lx, y + 34, "rect", C_BAND, r->band_label ? r->band_label : "expected band");
    y_axis(f, &g->box, "nodes");
    if (isfinite(r->band_lo) && isfinite(r->band_hi)) {
        double x1 = map_xv(g->px, g->pw, g->lo, g->hi, 0, fmax(g->lo, r->band_lo)), x2 = map_xv(g->px, g->pw, g->lo, g->hi, 0, fmin(g->hi, r->band_hi));
        fprintf(f, "<rect class=\"band\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"" C_BAND
                   "\" fill-opacity=\"0.30\"/>\n", x1, g->py, x2 > x1 ? x2 - x1 : 0, g->ph);
    }
}

/* The observed bins, with their titles. */
static void hist_bars(FILE *f, hist_geom *g)
{
    double base = map_y(&g->box, 0);
    g->cw = g->pw / (double)g->nb;
    fputs("<g class=\"bins\" shape-rendering=\"crispEdges\">\n", f);
    for (size_t k = 0; k < g->nb; k++) {
        if (!g->obs[k])
            continue;
        double top = map_y(&g->box, g->obs[k]);
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
            fprintf(f, "%.2f,%.2f ", g->px + g->cw * ((double)k + 0.5), map_y(&g->box, g->exp_[k]));
        fputs("\"/>\n", f);
        for (size_t k = 0; k < g->nb; k++)
            if (g->exp_[k] >= 0.05)
                fprintf(f, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"2.5\" fill=\"" C_EXP "\"/>\n", g->px + g->cw * ((double)k + 0.5),
                        map_y(&g->box, g->exp_[k]));
    }
    if (g->have_theory) {
        fputs("<polyline class=\"theory\" fill=\"none\" stroke=\"" C_THEORY
              "\" stroke-width=\"2\" stroke-dasharray=\"6,4\" points=\"", f);
        for (int s = 0; s <= 200; s++) {
            double v = g->lo + (g->hi - g->lo) * s / 200.0;
            double dens = (double)r->n * g->bw * theory_density(r->theory_mean, r->theory_sd, v);
            if (!isfinite(dens) || dens > g->box.hi)
                dens = g->box.hi;
            fprintf(f, "%.2f,%.2f ", map_xv(g->px, g->pw, g->lo, g->hi, 0, v), map_y(&g->box, dens));
        }
        fputs("\"/>\n", f);
    }
    if (isfinite(r->mean) && r->mean >= g->lo && r->mean <= g->hi) {
        double xm = map_xv(g->px, g->pw, g->lo, g->hi, 0, r->mean);
        fprintf(f, "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"" C_MEAN
                   "\" stroke-width=\"1.5\" stroke-dasharray=\"6,4\"/>\n", xm, g->py, xm, g->py + g->ph);
    }
    if (isfinite(r->capacity) && r->capacity >= g->lo && r->capacity <= g->hi) {
        double xc = map_xv(g->px, g->pw, g->lo, g->hi, 0, r->capacity);
        fprintf(f, "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"" C_CAP "\" stroke-width=\"1.5\"/>\n",
                xc, g->py, xc, g->py + g->ph);
    }
    char xl[96];
    snprintf(xl, sizeof xl, "%s per node", r->unit ? r->unit : "load");
    x_axis_values(f, g->px, g->py + g->ph, g->pw, g->lo, g->hi, 0, xl);
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
    double facts_h = facts_height(r->facts, r->nfacts, w - 40);
    double h = 60 + facts_h + 430 + 380 + 10;
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
    rs_svg_begin(f, w, h, r->title);
    svg_header(f, r->title, r->subtitle, w);
    double y = 60 + rs_svg_facts(f, r->facts, r->nfacts, 20, 60, w - 40);
    rs_svg_loads(f, r, 0, y, w, 430);
    rs_svg_histogram(f, r, 0, y + 430, w, 380);
    rs_svg_end(f);
    return ferror(f) ? -1 : 0;
}

/* ---- HTML ---------------------------------------------------------------------- */

void rs_html_begin(FILE *f, const char *title, const char *subtitle)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>", f);
    rs_xml_text(f, title);
    fputs("</title>\n<style>\n"
          "body{font-family:sans-serif;margin:24px;color:#222;max-width:1240px}\n"
          "h1{font-size:20px}h2{font-size:16px;margin-top:28px}\n"
          "table{border-collapse:collapse;font-size:13px}\n"
          "td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}\n"
          "th{background:#f4f4f4}td.l,th.l{text-align:left}\n"
          "tr.flag td{background:#fde0dd}\n"
          ".sub{color:#555}\n"
          "</style>\n</head>\n<body>\n<h1>", f);
    rs_xml_text(f, title);
    fputs("</h1>\n", f);
    if (subtitle) {
        fputs("<p class=\"sub\">", f);
        rs_xml_text(f, subtitle);
        fputs("</p>\n", f);
    }
}

void rs_html_facts(FILE *f, const rs_report_fact *facts, size_t n)
{
    if (!n)
        return;
    fputs("<table class=\"facts\">\n", f);
    for (size_t i = 0; i < n; i++) {
        fputs("<tr><th class=\"l\">", f);
        rs_xml_text(f, facts[i].label);
        fputs("</th><td class=\"l\">", f);
        rs_xml_text(f, facts[i].value);
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
}

void rs_html_end(FILE *f) { fputs("</body>\n</html>\n", f); }

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
    num_text(r->load[i], a, sizeof a);
    fprintf(f, "</td><td>%s</td>", a);
    if (r->expected) {
        num_text(r->expected[i], b, sizeof b);
        fprintf(f, "<td>%s</td>", b);
    }
    if (r->expected && r->expected_sd) {
        double s = r->expected_sd[i], z = s > 0 ? (r->load[i] - r->expected[i]) / s : 0;
        num_text(s, c, sizeof c);
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
            text(f, cx, y0 - 4, "start", 10, tr, label);
        } else {
            text(f, x0 - 4, y0 + step * ((double)g + 0.5) + 3, "end", 10, NULL, label);
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
    text(f, x + 20, y + 36, "start", 12, "fill=\"#444\"", t);
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
    num_text(fg->cmin, a, sizeof a);
    text(f, lgx - 4, y + 17, "end", 10, NULL, a);
    num_text(fg->cmax, a, sizeof a);
    text(f, lgx + 164, y + 17, "start", 10, NULL, a);
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
    num_text(fg->xmax, a, sizeof a);
    snprintf(t, sizeof t, "column totals (max %s)", a);
    text(f, fg->mx0, fg->my0 - 60 - bar_h - 14, "start", 10, "fill=\"#444\"", t);
    num_text(fg->ymax, a, sizeof a);
    snprintf(t, sizeof t, "row totals (max %s)", a);
    text(f, fg->mx0 + fg->mw + 8, fg->my0 - 6, "start", 10, "fill=\"#444\"", t);
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
                num_text(v, a, sizeof a);
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
    text(f, fg->mx0 + fg->mw / 2, fg->my0 + fg->mh + 22, "middle", 12, NULL, t);
    char tr[96];
    double cx = x + 16, cy = fg->my0 + fg->mh / 2;
    snprintf(tr, sizeof tr, "transform=\"rotate(-90 %.1f %.1f)\"", cx, cy);
    snprintf(t, sizeof t, "%s node%s", fg->from_on_x ? "to (receiving)" : "from (sending)",
             fg->ya->groups < fg->ya->n ? " (rows aggregated)" : "");
    text(f, cx, cy, "middle", 12, tr, t);
    num_text(fg->total, a, sizeof a);
    snprintf(t, sizeof t, "total moved: %s %s in %zu pairs", a, r->unit ? r->unit : "", r->npairs);
    text(f, fg->mx0, fg->my0 + fg->mh + 44, "start", 12, NULL, t);
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
    text(f, x + 20, y + 16, "start", 14, "font-weight=\"bold\"", "Flows between nodes");
    if (!g.cell || !g.xa->n || !g.ya->n) {
        text(f, x + 20, y + 40, "start", 12, NULL, "no flows");
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
    double facts_h = facts_height(r->facts, r->nfacts, w - 40);
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
    rs_svg_begin(f, w, 60 + facts_h + fh + 10, r->title);
    svg_header(f, r->title, r->subtitle, w);
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
            num_text(r->weight[p], a, sizeof a);
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
            num_text(out[i], a, sizeof a);
            num_text(in[i], b, sizeof b);
            fprintf(f, "</td><td>%s</td><td>%s</td></tr>\n", a, b);
        }
        fputs("</table>\n</details>\n", f);
    }
    free(out);
    free(in);
    rs_html_end(f);
    return ferror(f) ? -1 : 0;
}

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
        text(f, x + 20, y + 40, "start", 12, NULL, "no data");
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
        legend_item(f, &lx, y + 34, r->series[s].dashed ? "dash" : "line",
                    series_colors[s % (sizeof series_colors / sizeof *series_colors)], r->series[s].label);
    y_axis(f, &box, r->ylabel ? r->ylabel : "");
    x_axis_values(f, px, py + ph, pw, xlo, xhi, r->xlog, r->xlabel ? r->xlabel : "");
    for (size_t s = 0; s < r->nseries; s++) {
        const rs_report_series *se = &r->series[s];
        const char *col = series_colors[s % (sizeof series_colors / sizeof *series_colors)];
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"", col,
                se->dashed ? " stroke-dasharray=\"6,4\"" : "");
        for (size_t i = 0; i < se->n; i++) {
            if (!isfinite(se->x[i]) || !isfinite(se->y[i]) || (r->xlog && se->x[i] <= 0) || (r->ylog && se->y[i] <= 0))
                continue;
            fprintf(f, "%.2f,%.2f ", map_xv(px, pw, xlo, xhi, r->xlog, se->x[i]), map_y(&box, se->y[i]));
        }
        fputs("\"/>\n", f);
        for (size_t i = 0; i < se->n; i++) {
            if (!isfinite(se->x[i]) || !isfinite(se->y[i]) || (r->xlog && se->x[i] <= 0) || (r->ylog && se->y[i] <= 0))
                continue;
            fprintf(f, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"3.5\" fill=\"%s\"><title>", map_xv(px, pw, xlo, xhi, r->xlog,
                    se->x[i]), map_y(&box, se->y[i]), col);
            rs_xml_text(f, se->label);
            fprintf(f, ": x=%.6g y=%.6g</title></circle>\n", se->x[i], se->y[i]);
        }
    }
    fputs("</g>\n", f);
}

int rs_report_lines_svg(FILE *f, const rs_report_lines *r)
{
    double w = 1200;
    double facts_h = facts_height(r->facts, r->nfacts, w - 40);
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
    rs_svg_begin(f, w, 60 + facts_h + 460 + 10, r->title);
    svg_header(f, r->title, r->subtitle, w);
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
