/* The plan's tables: every moving arc as TSV (--arcs) and every (from, to)
 * pair as CSV (--pairs), written with the module that owns the plan. */
#include <stdio.h>
#include <string.h>
#include "ringshard/plan.h"
#include "ringshard/text.h"

/* Names in a CSV field: quoted when they hold a comma, a quote or a line
 * break. */
static void csv_field(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    putc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            putc('"', f);
        putc(*s, f);
    }
    putc('"', f);
}

void rs_plan_arcs_write(FILE *f, const rs_plan *p)
{
    const rs_nodes *an = rs_ring_nodes(p->old_ring), *bn = rs_ring_nodes(p->new_ring);
    char s[48], e[48], w[48];
    fputs("start\tend\tfrom\tto\tweight\tshare\n", f);
    for (size_t k = 0; k < p->narcs; k++) {
        const rs_plan_arc *r = &p->arcs[k];
        rs_u128_str(r->start, s);
        rs_u128_str((rs_u128)r->last + 1, e);
        rs_u128_str(r->weight, w);
        fprintf(f, "%s\t%s\t", s, e);
        rs_text_put_tsv(f, an->names[r->from], strlen(an->names[r->from]));
        putc('\t', f);
        rs_text_put_tsv(f, bn->names[r->to], strlen(bn->names[r->to]));
        fprintf(f, "\t%s\t%.17g\n", w, (double)r->weight / (double)p->total);
    }
}

void rs_plan_pairs_write(FILE *f, const rs_plan *p, const rs_plan_data *d)
{
    const rs_nodes *an = rs_ring_nodes(p->old_ring), *bn = rs_ring_nodes(p->new_ring);
    char w[48];
    int data = d && d->have;
    fputs("from,to,weight,share,arcs,keys,bytes,wave,violation\n", f);
    for (size_t k = 0; k < p->npairs; k++) {
        const rs_plan_pair *q = &p->pairs[k];
        csv_field(f, an->names[q->from]);
        putc(',', f);
        csv_field(f, bn->names[q->to]);
        fprintf(f, ",%s,%.17g,%llu,", rs_u128_str(q->weight, w), q->share, (unsigned long long)q->arcs);
        if (data)
            fprintf(f, "%llu,%llu", (unsigned long long)d->keys[k], (unsigned long long)d->bytes_of[k]);
        else
            fputc(',', f);
        putc(',', f);
        if (data && d->wave)
            fprintf(f, "%u", d->wave[k]);
        fprintf(f, ",%d\n", q->violation);
    }
}
