/* Self-contained SVG and HTML reports: per-node loads, load histograms,
 * (from, to) flow matrices and line charts. See include/ringshard/report.h.
 *
 * Everything is drawn with plain SVG 1.1 elements and presentation
 * attributes; text uses the generic "sans-serif" family, so a viewer never
 * fetches anything. Numbers are printed with enough digits to be checked
 * (facts) or rounded for axes (ticks).
 *
 * This file holds what every chart shares: text, axes, legends, the SVG
 * and HTML documents (svg_internal.h declares the shared helpers). The
 * charts: svg_loads.c (per-node loads and their histogram), svg_flows.c
 * ((from, to) flow matrices), svg_lines.c (line charts). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ringshard/report.h"
#include "report/svg_internal.h"

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
void rs_svg_num_text(double v, char *buf, size_t cap)
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

void rs_svg_text(FILE *f, double x, double y, const char *anchor, double size, const char *extra, const char *s)
{
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%.0f\" text-anchor=\"%s\" " FONT "%s%s>", x, y, size,
            anchor, extra ? " " : "", extra ? extra : "");
    rs_xml_text(f, s);
    fputs("</text>\n", f);
}

/* ---- axes ------------------------------------------------------------------ */

double rs_svg_nice_step(double range, int target)
{
    if (!(range > 0))
        return 1;
    double raw = range / target, mag = pow(10, floor(log10(raw))), r = raw / mag;
    double step = r < 1.5 ? 1 : r < 3 ? 2 : r < 7 ? 5 : 10;
    return step * mag;
}

double rs_svg_map_y(const axis_box *b, double v)
{
    if (b->log) {
        double l = log10(v > 0 ? v : b->lo);
        return b->y + b->h - (l - log10(b->lo)) / (log10(b->hi) - log10(b->lo)) * b->h;
    }
    return b->y + b->h - (v - b->lo) / (b->hi - b->lo) * b->h;
}

double rs_svg_map_xv(double x0, double w, double lo, double hi, int lg, double v)
{
    if (lg)
        return x0 + (log10(v) - log10(lo)) / (log10(hi) - log10(lo)) * w;
    return x0 + (v - lo) / (hi - lo) * w;
}

/* Horizontal grid lines and labels of a linear y axis. */
void rs_svg_y_axis(FILE *f, const axis_box *b, const char *label)
{
    if (b->log) {
        for (double d = pow(10, floor(log10(b->lo))); d <= b->hi * 1.0001; d *= 10)
            for (int m = 1; m <= 9; m++) {
                double v = d * m;
                if (v < b->lo * 0.9999 || v > b->hi * 1.0001)
                    continue;
                double y = rs_svg_map_y(b, v);
                fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>\n", b->x, y,
                        b->x + b->w, y, m == 1 ? "#cccccc" : C_GRID);
                if (m == 1 || m == 2 || m == 5) {
                    char t[32];
                    tick_text(v, t, sizeof t);
                    rs_svg_text(f, b->x - 6, y + 4, "end", 11, NULL, t);
                }
            }
    } else {
        double step = rs_svg_nice_step(b->hi - b->lo, 6);
        for (double v = ceil(b->lo / step) * step; v <= b->hi + step * 1e-9; v += step) {
            double y = rs_svg_map_y(b, v);
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>\n", b->x, y,
                    b->x + b->w, y, C_GRID);
            char t[32];
            tick_text(fabs(v) < step * 1e-9 ? 0 : v, t, sizeof t);
            rs_svg_text(f, b->x - 6, y + 4, "end", 11, NULL, t);
        }
    }
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", b->x, b->y, b->x,
            b->y + b->h);
    char tr[96];
    double cx = b->x - 62, cy = b->y + b->h / 2;
    snprintf(tr, sizeof tr, "transform=\"rotate(-90 %.1f %.1f)\"", cx, cy);
    rs_svg_text(f, cx, cy, "middle", 12, tr, label);
}

void rs_svg_x_baseline(FILE *f, double x, double y, double w)
{
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", x, y, x + w, y);
}

/* Ticks and labels of a linear (or log) x axis over [lo, hi]. */
void rs_svg_x_axis_values(FILE *f, double x, double y, double w, double lo, double hi, int lg, const char *label)
{
    rs_svg_x_baseline(f, x, y, w);
    if (lg) {
        for (double d = pow(10, floor(log10(lo))); d <= hi * 1.0001; d *= 10)
            for (int m = 1; m <= 9; m++) {
                double v = d * m;
                if (v < lo * 0.9999 || v > hi * 1.0001)
                    continue;
                double px = rs_svg_map_xv(x, w, lo, hi, 1, v);
                fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", px, y, px,
                        y + (m == 1 ? 6 : 3));
                if (m == 1 || m == 2 || m == 5) {
                    char t[32];
                    tick_text(v, t, sizeof t);
                    rs_svg_text(f, px, y + 18, "middle", 11, NULL, t);
                }
            }
    } else {
        double step = rs_svg_nice_step(hi - lo, 8);
        for (double v = ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) {
            double px = rs_svg_map_xv(x, w, lo, hi, 0, v);
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", px, y, px, y + 5);
            char t[32];
            tick_text(fabs(v) < step * 1e-9 ? 0 : v, t, sizeof t);
            rs_svg_text(f, px, y + 18, "middle", 11, NULL, t);
        }
    }
    rs_svg_text(f, x + w / 2, y + 36, "middle", 12, NULL, label);
}

void rs_svg_legend_item(FILE *f, double *lx, double y, const char *kind, const char *color, const char *label)
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
    rs_svg_text(f, *lx + 18, y, "start", 11, NULL, label);
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

double rs_svg_facts_height(const rs_report_fact *facts, size_t n, double w)
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

void rs_svg_header(FILE *f, const char *title, const char *subtitle, double w)
{
    rs_svg_text(f, 20, 28, "start", 18, "font-weight=\"bold\"", title ? title : "ringshard");
    if (subtitle)
        rs_svg_text(f, 20, 48, "start", 12, "fill=\"#444\"", subtitle);
    (void)w;
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
