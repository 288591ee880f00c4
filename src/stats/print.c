/* Text and picture output of balance statistics, shared by stats,
 * simulate and plan. The text is "label  value  (note)" lines: the label
 * never holds two spaces in a row, so a reader splits at the first run of
 * two or more spaces. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include "ringshard/report.h"
#include "ringshard/stats.h"

#define LBL "%-24s"

static void print_sd(FILE *f, const char *label, double sd, double mean, const char *note)
{
    if (isnan(sd))
        fprintf(f, LBL "n/a  (%s)\n", label, note);
    else
        fprintf(f, LBL "%.2f  (relative %.6f; %s)\n", label, sd, mean > 0 ? sd / mean : 0, note);
}

void rs_balance_print(FILE *f, const rs_ring *r, const rs_balance *b, const char *unit)
{
    const rs_nodes *nodes = rs_ring_nodes(r);
    fprintf(f, LBL "%u\n", "nodes", b->nodes);
    fprintf(f, LBL "%llu\n", unit, (unsigned long long)b->total);
    fprintf(f, LBL "%.2f\n", "mean", b->mean);
    fprintf(f, LBL "%llu  (node %s)\n", "min", (unsigned long long)b->min, nodes->names[b->argmin]);
    fprintf(f, LBL "%llu  (node %s)\n", "max", (unsigned long long)b->max, nodes->names[b->argmax]);
    fprintf(f, LBL "%.4f\n", "max/mean", b->max_mean);
    fprintf(f, LBL "%.4f\n", "min/mean", b->min_mean);
    fprintf(f, LBL "%.2f\n", "sd", b->sd);
    fprintf(f, LBL "%.6f\n", "relative sd", b->rel_sd);
    print_sd(f, "expected sd (ring)", b->sd_ring, b->mean,
             b->shares_exact ? "this ring's exact shares: binomial noise plus the spread of the shares"
                             : "this scheme's shares have no closed form: equal shares assumed");
    print_sd(f, "expected sd (equal)", b->sd_equal, b->mean, "equal shares: sampling noise only");
    char note[160];
    if (b->vnodes)
        snprintf(note, sizeof note, "a random ring of %u points per node: relative share sd sqrt((N-1)/(NV+1))",
                 b->vnodes);
    else if (b->share_rel_sd_theory == 0)
        snprintf(note, sizeof note, "equal shares by construction");
    else
        snprintf(note, sizeof note, "no theory for this scheme or for weighted nodes");
    print_sd(f, "expected sd (theory)", b->sd_theory, b->mean, note);
    fprintf(f, LBL "%.6f  (relative sd of the exact shares)\n", "share spread", b->share_rel_sd);
    if (isnan(b->share_rel_sd_theory))
        fprintf(f, LBL "n/a\n", "share spread (theory)");
    else if (b->vnodes)
        fprintf(f, LBL "%.6f  (1/sqrt(V) = %.6f)\n", "share spread (theory)", b->share_rel_sd_theory,
                1 / sqrt((double)b->vnodes));
    else
        fprintf(f, LBL "%.6f\n", "share spread (theory)", b->share_rel_sd_theory);
    fprintf(f, LBL "%u  (%u above, %u below K*p_i +- %g*sqrt(K*p_i*(1-p_i)); %.1f expected by chance)\n", "flagged",
            b->above + b->below, b->above, b->below, b->z, b->flag_chance);
    if (b->stray)
        fprintf(f, LBL "%llu  (%s on nodes that are down)\n", "stray", (unsigned long long)b->stray, unit);
}

static const rs_node_stat *flag_ns;
static int by_abs_z(const void *a, const void *b)
{
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    double x = fabs(flag_ns[i].z), y = fabs(flag_ns[j].z);
    if (x != y)
        return x > y ? -1 : 1;
    return i < j ? -1 : i > j;
}

void rs_balance_print_flagged(FILE *f, const rs_ring *r, const rs_node_stat *ns, size_t limit)
{
    const rs_nodes *nodes = rs_ring_nodes(r);
    uint32_t *ord = malloc((nodes->count ? nodes->count : 1) * sizeof *ord), n = 0;
    if (!ord)
        return;
    for (uint32_t i = 0; i < nodes->count; i++)
        if (ns[i].flag)
            ord[n++] = i;
    flag_ns = ns;
    qsort(ord, n, sizeof *ord, by_abs_z);
    if (n)
        fprintf(f, "flagged nodes (largest |z| first)\n  %-16s %12s %14s %12s %8s\n", "node", "count", "expected",
                "expected_sd", "z");
    for (uint32_t k = 0; k < n && k < limit; k++) {
        const rs_node_stat *x = &ns[ord[k]];
        fprintf(f, "  %-16s %12llu %14.2f %12.2f %+8.2f\n", nodes->names[ord[k]], (unsigned long long)x->count,
                x->expected, x->expected_sd, x->z);
    }
    if (n > limit)
        fprintf(f, "  ... %u more (see --tsv)\n", n - (uint32_t)limit);
    free(ord);
}

void rs_balance_print_table(FILE *f, const rs_ring *r, const rs_node_stat *ns, const uint64_t *capacity,
                            const uint64_t *load)
{
    const rs_nodes *nodes = rs_ring_nodes(r);
    fputs("node\tpoints\tshare\texpected\texpected_sd\tcount\tz\tflag", f);
    if (capacity)
        fputs("\tcapacity", f);
    if (load)
        fputs("\tload_after", f);
    fputc('\n', f);
    for (uint32_t i = 0; i < nodes->count; i++) {
        const rs_node_stat *x = &ns[i];
        fprintf(f, "%s\t%u\t%.9f\t%.2f\t%.2f\t%llu\t%.3f\t%s", nodes->names[i], x->points, x->share, x->expected,
                x->expected_sd, (unsigned long long)x->count, x->z,
                x->down ? "down" : x->flag > 0 ? "above" : x->flag < 0 ? "below" : "ok");
        if (capacity)
            fprintf(f, "\t%llu", (unsigned long long)capacity[i]);
        if (load)
            fprintf(f, "\t%llu", (unsigned long long)load[i]);
        fputc('\n', f);
    }
}

void rs_bounded_print(FILE *f, const rs_bounded *bl, const char *unit)
{
    fprintf(f, LBL "%g\n", "capacity factor", bl->factor);
    fprintf(f, LBL "%llu  (%s per node: ceil(F*K/N))\n", "capacity", (unsigned long long)bl->capacity, unit);
    fprintf(f, LBL "%u  (nodes with more than F*mean = %.2f %s)\n", "over F*mean", bl->over, bl->limit, unit);
    fprintf(f, LBL "%llu  (%s above capacity: a lower bound of the spill)\n", "excess",
            (unsigned long long)bl->excess, unit);
    if (bl->simulated) {
        fprintf(f, LBL "%llu  (%s placed away from their owner, in input order)\n", "spilled",
                (unsigned long long)bl->spilled, unit);
        fprintf(f, LBL "%llu\n", "max after", (unsigned long long)bl->max_after);
        fprintf(f, LBL "%llu  (points passed clockwise by one key)\n", "longest walk",
                (unsigned long long)bl->longest_walk);
        fprintf(f, LBL "%llu\n", "full nodes", (unsigned long long)bl->full_nodes);
    }
}

/* ---- pictures ---- */

typedef struct {
    char label[48];
    char value[160];
} fact_buf;

static void fact(fact_buf *fb, size_t *n, const char *label, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void fact(fact_buf *fb, size_t *n, const char *label, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    snprintf(fb[*n].label, sizeof fb[*n].label, "%s", label);
    vsnprintf(fb[*n].value, sizeof fb[*n].value, fmt, ap);
    va_end(ap);
    (*n)++;
}

int rs_balance_report(const char *path, int html, const char *title, const rs_ring *r, const rs_balance *b,
                      const rs_node_stat *ns, const rs_bounded *bl, const char *unit, rs_error *err)
{
    const rs_nodes *nodes = rs_ring_nodes(r);
    size_t n = 0;
    const char **names = malloc((nodes->count + 1) * sizeof *names);
    double *load = malloc((nodes->count + 1) * sizeof *load), *expected = malloc((nodes->count + 1) * sizeof *expected);
    double *esd = malloc((nodes->count + 1) * sizeof *esd);
    int *flag = malloc((nodes->count + 1) * sizeof *flag);
    fact_buf fb[24];
    size_t nf = 0;
    int rc = -1;
    if (!names || !load || !expected || !esd || !flag) {
        rs_error_set(err, RS_EXIT_IO, "out of memory");
        goto done;
    }
    for (uint32_t i = 0; i < nodes->count; i++) {
        if (nodes->down[i])
            continue;
        names[n] = nodes->names[i];
        load[n] = (double)ns[i].count;
        expected[n] = ns[i].expected;
        esd[n] = ns[i].expected_sd;
        flag[n] = ns[i].flag;
        n++;
    }
    fact(fb, &nf, "nodes", "%u", b->nodes);
    fact(fb, &nf, unit, "%llu", (unsigned long long)b->total);
    fact(fb, &nf, "mean", "%.2f", b->mean);
    fact(fb, &nf, "sd", "%.2f (relative %.6f)", b->sd, b->rel_sd);
    fact(fb, &nf, "min", "%llu (node %s, %.4f x mean)", (unsigned long long)b->min, nodes->names[b->argmin], b->min_mean);
    fact(fb, &nf, "max", "%llu (node %s, %.4f x mean)", (unsigned long long)b->max, nodes->names[b->argmax], b->max_mean);
    fact(fb, &nf, "max/mean", "%.4f", b->max_mean);
    fact(fb, &nf, "min/mean", "%.4f", b->min_mean);
    fact(fb, &nf, "expected sd (ring)", "%.2f", b->sd_ring);
    if (isnan(b->sd_theory))
        fact(fb, &nf, "expected sd (theory)", "n/a");
    else if (b->vnodes)
        fact(fb, &nf, "expected sd (theory)", "%.2f (random ring, V=%u)", b->sd_theory, b->vnodes);
    else
        fact(fb, &nf, "expected sd (theory)", "%.2f (equal shares)", b->sd_theory);
    fact(fb, &nf, "flagged", "%u outside K*p_i +- %g sd (%.1f by chance)", b->above + b->below, b->z,
         b->flag_chance);
    if (bl) {
        fact(fb, &nf, "capacity factor", "%g (capacity %llu)", bl->factor, (unsigned long long)bl->capacity);
        fact(fb, &nf, "over F*mean", "%u nodes", bl->over);
        if (bl->simulated) {
            fact(fb, &nf, "spilled", "%llu %s", (unsigned long long)bl->spilled, unit);
            fact(fb, &nf, "max after", "%llu", (unsigned long long)bl->max_after);
        } else {
            fact(fb, &nf, "excess", "%llu %s (lower bound of the spill)", (unsigned long long)bl->excess, unit);
        }
    }
    rs_report_fact facts[24];
    for (size_t k = 0; k < nf; k++) {
        facts[k].label = fb[k].label;
        facts[k].value = fb[k].value;
    }
    char sub[600], band_label[96], theory_label[96];
    const rs_ring_opts *o = rs_ring_get_opts(r);
    char v[32] = "";
    if (o->scheme == RS_SCHEME_RING || o->scheme == RS_SCHEME_KETAMA)
        snprintf(v, sizeof v, ", V=%u", o->vnodes);
    else if (o->scheme == RS_SCHEME_SLOTS)
        snprintf(v, sizeof v, ", S=%u", o->vnodes);
    snprintf(sub, sizeof sub, "scheme %s, hash %s, %u nodes%s, ring fingerprint %s", rs_scheme_name(o->scheme),
             rs_hash_get(o->hash)->name, b->nodes, v, rs_ring_fingerprint(r));
    snprintf(band_label, sizeof band_label, "mean +- %g sd expected for this ring", b->z);
    if (b->vnodes)
        snprintf(theory_label, sizeof theory_label, "theory: random ring, V=%u", b->vnodes);
    else
        snprintf(theory_label, sizeof theory_label, "theory: equal shares");
    rs_report_loads rep = {
        .title = title,
        .subtitle = sub,
        .unit = unit,
        .n = n,
        .names = names,
        .load = load,
        .expected = expected,
        .expected_sd = esd,
        .flag = flag,
        .mean = b->mean,
        .band_lo = b->mean - b->z * b->sd_ring,
        .band_hi = b->mean + b->z * b->sd_ring,
        .band_label = band_label,
        .capacity = bl ? (double)bl->capacity : NAN,
        .theory_mean = isnan(b->sd_theory) ? NAN : b->mean,
        .theory_sd = b->sd_theory,
        .theory_label = theory_label,
        .facts = facts,
        .nfacts = nf,
    };
    rc = rs_report_save_loads(path, html, &rep, err);
done:
    free(names);
    free(load);
    free(expected);
    free(esd);
    free(flag);
    return rc;
}
