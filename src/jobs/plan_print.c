/* The plan job's summary as text (job_plan.h, rs_plan_job_print), what
 * `ringshard plan` prints on standard output: the change, the method, the
 * moved share against the ideal and the floor, consistency, the data, and
 * the largest moves. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "ringshard/job_plan.h"

static const char *points_word(const rs_ring *r, char *buf, size_t cap)
{
    if (rs_ring_has_points(r))
        snprintf(buf, cap, "%u points", rs_ring_npoints(r));
    else
        snprintf(buf, cap, "no points");
    return buf;
}

static double pct(double x) { return 100.0 * x; }

typedef struct {
    const rs_plan *p;
    const rs_plan_data *d;
} rank_ctx;

static rank_ctx g_rank;

static int cmp_rank(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    const rs_plan_pair *pa = &g_rank.p->pairs[a], *pb = &g_rank.p->pairs[b];
    if (g_rank.d && g_rank.d->have && g_rank.d->bytes_of[a] != g_rank.d->bytes_of[b])
        return g_rank.d->bytes_of[a] > g_rank.d->bytes_of[b] ? -1 : 1;
    if (pa->weight != pb->weight)
        return pa->weight > pb->weight ? -1 : 1;
    return (a > b) - (a < b);
}

/* The data's lines: keys and bytes to move, waves, mismatched files. */
static void print_data(FILE *f, const rs_plan_job_opts *a, const rs_plan_data *d)
{
    fprintf(f, "  data         %llu/%llu keys (%.4f%%) and %llu/%llu bytes (%.4f%%) to move\n",
            (unsigned long long)d->moved_rows, (unsigned long long)d->rows,
            d->rows ? pct((double)d->moved_rows / d->rows) : 0.0, (unsigned long long)d->moved_bytes,
            (unsigned long long)d->bytes, d->bytes ? pct((double)d->moved_bytes / d->bytes) : 0.0);
    if (d->nwaves)
        fprintf(f, "  waves        %u waves of at most %llu bytes, %s moves first\n", d->nwaves,
                (unsigned long long)a->batch_bytes, a->largest_first ? "largest" : "smallest");
    if (d->mismatches) {
        fprintf(f, "  MISMATCH     %llu rows sit in a bucket their old ring does not assign:\n",
                (unsigned long long)d->mismatches);
        for (size_t i = 0; i < d->ninputs; i++)
            if (d->mismatch[i])
                fprintf(f, "    %s (node %s): %llu rows\n", d->input_labels[i], d->input_nodes[i],
                        (unsigned long long)d->mismatch[i]);
        if (a->emit)
            fprintf(f, "    nothing emitted: fix the buckets first (ringshard verify %s)\n", a->from_buckets);
    }
    if (d->emitted)
        fprintf(f, "  emitted      %s\n", a->emit);
}

/* The largest pairs, by bytes with data, else by weight. */
static void print_top(FILE *f, unsigned long long top_opt, const rs_plan *p, const rs_plan_data *d)
{
    const rs_nodes *an = rs_ring_nodes(p->old_ring), *bn = rs_ring_nodes(p->new_ring);
    /* the largest pairs */
    size_t top = top_opt < p->npairs ? (size_t)top_opt : p->npairs;
    if (top) {
        uint32_t *idx = malloc(p->npairs * sizeof *idx);
        if (!idx)
            return;
        for (size_t k = 0; k < p->npairs; k++)
            idx[k] = (uint32_t)k;
        g_rank = (rank_ctx){p, d};
        qsort(idx, p->npairs, sizeof *idx, cmp_rank);
        fprintf(f, "\n  largest moves (%zu of %zu pairs):\n", top, p->npairs);
        int data = d && d->have;
        fprintf(f, "    %-16s %-16s %12s %8s", "from", "to", "share", "arcs");
        if (data)
            fprintf(f, " %12s %14s", "keys", "bytes");
        if (data && d->nwaves)
            fprintf(f, " %6s", "wave");
        fputc('\n', f);
        for (size_t k = 0; k < top; k++) {
            const rs_plan_pair *q = &p->pairs[idx[k]];
            fprintf(f, "    %-16s %-16s %11.6f%% %8llu", an->names[q->from], bn->names[q->to], pct(q->share),
                    (unsigned long long)q->arcs);
            if (data)
                fprintf(f, " %12llu %14llu", (unsigned long long)d->keys[idx[k]],
                        (unsigned long long)d->bytes_of[idx[k]]);
            if (data && d->nwaves)
                fprintf(f, " %6u", d->wave[idx[k]]);
            fputc('\n', f);
        }
        free(idx);
    }
}

/* One line naming the nodes of idx[0..n) in nodes (a few, then how many
 * more: every name is in --json); nothing when n is 0. */
static void print_names(FILE *f, const char *label, const rs_nodes *nodes, const uint32_t *idx, uint32_t n)
{
    enum { SHOWN = 10 };
    const char *names[SHOWN];
    char text[640];
    if (!n)
        return;
    for (uint32_t k = 0; k < n && k < SHOWN; k++)
        names[k] = nodes->names[idx[k]];
    /* the names past the shown ones are only counted: no list of n pointers */
    fprintf(f, "  %-12s %s\n", label, rs_node_names_text(text, sizeof text, names, n < SHOWN ? n : SHOWN, n));
}

void rs_plan_job_print(FILE *f, const rs_plan_job_opts *a, unsigned long long top_opt, const rs_plan_job_result *r)
{
    const rs_plan *p = &r->plan;
    const rs_plan_data *d = &r->data;
    const rs_ring *A = p->old_ring, *B = p->new_ring;
    const rs_nodes *an = rs_ring_nodes(A), *bn = rs_ring_nodes(B);
    char b1[48], b2[48], rule[160];
    fprintf(f, "ringshard plan: %s scheme, %u -> %u nodes up (%u added, %u removed, %u reweighted)\n",
            rs_scheme_name(rs_ring_get_opts(A)->scheme), rs_plan_up_count(an), rs_plan_up_count(bn), p->nadded, p->nremoved,
            p->nreweighted);
    print_names(f, "added", bn, p->added, p->nadded);
    print_names(f, "removed", an, p->removed, p->nremoved);
    print_names(f, "reweighted", an, p->reweighted, p->nreweighted);
    fprintf(f, "  old ring     %s  %u nodes, %s\n", rs_ring_fingerprint(A), an->count, points_word(A, b1, sizeof b1));
    fprintf(f, "  new ring     %s  %u nodes, %s\n", rs_ring_fingerprint(B), bn->count, points_word(B, b2, sizeof b2));
    switch (p->method) {
    case RS_PLAN_EXACT_ARCS:
        /* no times in the report: the same plan prints the same bytes (they are in --metrics) */
        fprintf(f, "  method       exact: merged %u + %u points into %zu moving arcs\n", rs_ring_npoints(A),
                rs_ring_npoints(B), p->narcs);
        break;
    case RS_PLAN_EXACT_RESIDUES:
        fprintf(f, "  method       exact: modulo has no arcs; residue pairs counted over the %s hash values\n",
                rs_u128_str(p->total, b1));
        break;
    default:
        fprintf(f, "  method       expected: jump has no arcs; by its rule a key changes bucket with probability "
                   "|M-N|/max(M,N)\n");
    }
    fprintf(f, "  moved        %.6f%% of the hash space%s (%s of %s hash values)\n", pct(p->moved_share),
            p->method == RS_PLAN_EXPECTED ? ", expected" : "", rs_u128_str(p->moved, b1), rs_u128_str(p->total, b2));
    rs_plan_ideal_rule(p, rule, sizeof rule);
    fprintf(f, "  ideal        %.6f%% = %s: the least any placement could move (moved/ideal %.4f)\n",
            pct(p->ideal_share), rule, p->ideal_share > 0 ? p->moved_share / p->ideal_share : NAN);
    fprintf(f, "  floor        %.6f%%: the least any placement could move between these two rings' %s shares "
               "(excess churn %.6f%%)\n",
            pct(p->floor_share), p->shares_exact ? "exact" : "expected", pct(p->moved_share - p->floor_share));
    if (p->pairs_complete)
        fprintf(f, "  pairs        %zu (from, to) pairs\n", p->npairs);
    else
        fprintf(f, "  pairs        more than %u (from, to) pairs: not listed\n", RS_PLAN_MAX_PAIRS);
    fprintf(f, "  balance      max/mean %.4f before, %.4f after%s\n", p->balance_old, p->balance_new,
            p->shares_exact ? "" : " (expected shares)");
    /* consistency */
    if (!p->pairs_complete)
        fprintf(f, "  consistency  not checked: pairs not listed\n");
    else if (!p->nviolations)
        fprintf(f, "  consistency  OK: %s\n", rs_plan_check_property(p->check));
    else {
        fprintf(f, "  consistency  VIOLATED: %s does not hold for %zu pairs (%.6f%% of the hash space):\n",
                rs_plan_check_property(p->check), p->nviolations, pct((double)p->violation_weight / (double)p->total));
        size_t shown = 0;
        for (size_t k = 0; k < p->npairs; k++) {
            if (!p->pairs[k].violation)
                continue;
            if (shown == (top_opt > 20 ? top_opt : 20)) {
                fprintf(f, "    ... and %zu more (all in --pairs and --json)\n", p->nviolations - shown);
                break;
            }
            fprintf(f, "    %s -> %s  %.6f%%\n", an->names[p->pairs[k].from], bn->names[p->pairs[k].to],
                    pct(p->pairs[k].share));
            shown++;
        }
    }
    if (d && d->have)
        print_data(f, a, d);
    print_top(f, top_opt, p, d);
}