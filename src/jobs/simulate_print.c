/* The simulate job's results as text (job_simulate.h), what `ringshard
 * simulate` prints: the sweep's table, or the one ring's summary. */
#include <math.h>
#include <stdio.h>
#include "ringshard/job_simulate.h"
#include "ringshard/report.h"
#include "ringshard/stats.h"

/* The change's lines of the summary: what moved, next to the least any
 * placement must move, and the balance after. */
static void print_change(FILE *f, const rs_simulate_ring *sr, const rs_simulate_job_opts *so, const char *what)
{
    fprintf(f, "%-24s%s\n", "change", what);
    fprintf(f, "%-24s%llu\n", "moved", (unsigned long long)sr->moved);
    fprintf(f, "%-24s%.7f\n", "moved fraction", (double)sr->moved / (double)so->keys);
    fprintf(f, "%-24s%.7f  (the least any placement must move: %.1f keys)\n", "ideal fraction", sr->ideal,
            sr->ideal * (double)so->keys);
    if (isnan(sr->exact_moved))
        fprintf(f, "%-24sn/a  (no arcs to compare for this scheme)\n", "exact moved share");
    else
        fprintf(f, "%-24s%.7f  (hash space changing owner, from the arcs: %.1f keys expected)\n",
                "exact moved share", sr->exact_moved, sr->exact_moved * (double)so->keys);
    const rs_balance *a = &sr->bal_changed;
    const rs_nodes *nodes = rs_ring_nodes(sr->changed);
    fprintf(f, "%-24s%llu  (node %s)\n", "min (after)", (unsigned long long)a->min, nodes->names[a->argmin]);
    fprintf(f, "%-24s%llu  (node %s)\n", "max (after)", (unsigned long long)a->max, nodes->names[a->argmax]);
    fprintf(f, "%-24s%.2f\n", "sd (after)", a->sd);
    fprintf(f, "%-24s%.4f\n", "max/mean (after)", a->max_mean);
}

void rs_simulate_job_print_sweep(FILE *out, const rs_simulate_job_opts *so, const rs_simulate_job_result *res,
                                 const char *pattern, int changing, double factor)
{
    const rs_simulate_ring *sr = res->rings;
    const rs_ring_opts *o = rs_ring_get_opts(sr[0].base);
    fprintf(out, "# ringshard simulate: %llu keys, pattern %s; scheme %s, hash %s, %u nodes%s%s\n",
           (unsigned long long)so->keys, pattern, rs_scheme_name(o->scheme), rs_hash_get(o->hash)->name,
           sr[0].bal.nodes, changing ? "; change: " : "", changing ? res->what : "");
    fputs("vnodes\tpoints\tmean\tsd\trel_sd\trel_sd_expected\trel_sd_theory\tinv_sqrt_v\tmin_mean\tmax_mean\tflagged",
          out);
    if (changing)
        fputs("\tmoved\tmoved_fraction\tideal_fraction\texact_moved_share", out);
    if (!isnan(factor))
        fputs("\tover\tspilled\tmax_after", out);
    fputc('\n', out);
    for (size_t s = 0; s < res->nrings; s++) {
        const rs_balance *b = &sr[s].bal;
        fprintf(out, "%u\t%u\t%.2f\t%.2f\t%.6f\t%.6f\t%.6f\t%.6f\t%.4f\t%.4f\t%u", sr[s].vnodes,
               rs_ring_npoints(sr[s].base), b->mean, b->sd, b->rel_sd, b->sd_ring / b->mean,
               b->sd_theory / b->mean, 1 / sqrt((double)sr[s].vnodes), b->min_mean, b->max_mean,
               b->above + b->below);
        if (changing)
            fprintf(out, "\t%llu\t%.7f\t%.7f\t%.7f", (unsigned long long)sr[s].moved,
                   (double)sr[s].moved / (double)so->keys, sr[s].ideal, sr[s].exact_moved);
        if (!isnan(factor))
            fprintf(out, "\t%u\t%llu\t%llu", sr[s].bounded.over, (unsigned long long)sr[s].bounded.spilled,
                   (unsigned long long)sr[s].bounded.max_after);
        fputc('\n', out);
    }
}

void rs_simulate_job_print_one(FILE *out, const rs_simulate_job_opts *so, const rs_simulate_job_result *res,
                               const char *pattern, int changing, int tsv, double factor)
{
    const rs_simulate_ring *sr = res->rings;
    const rs_ring_opts *o = rs_ring_get_opts(sr[0].base);
    if (tsv) {
        rs_balance_print_table(out, sr[0].base, sr[0].ns, sr[0].capacity, sr[0].load_after);
        return;
    }
    fprintf(out, "%-24sscheme %s, hash %s, fingerprint %s\n", "ring", rs_scheme_name(o->scheme),
           rs_hash_get(o->hash)->name, rs_ring_fingerprint(sr[0].base));
    fprintf(out, "%-24s%s\n", "pattern", pattern);
    rs_balance_print(out, sr[0].base, &sr[0].bal, "keys");
    rs_balance_print_flagged(out, sr[0].base, sr[0].ns, 10);
    if (changing)
        print_change(out, &sr[0], so, res->what);
    if (!isnan(factor))
        rs_bounded_print(out, &sr[0].bounded, "keys");
}
