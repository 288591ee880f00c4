/* ringshard ring: what a ring looks like. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"

enum { MODE_SUMMARY, MODE_POINTS, MODE_SHARES, MODE_DESCRIPTION };

typedef struct {
    rs_cli_ring ro;
    int mode;
} ring_args;

static const rs_opt opt_points = {.name = "points", .help = "instead, every point as TSV: point, node, label",
                                  .kind = RS_KIND_FLAG, RS_AT(ring_args, mode), .set = MODE_POINTS};
static const rs_opt opt_shares = {.name = "shares",
                                  .help = "instead, every node's exact share as TSV:\n"
                                          "node, points, owned_hash_values, owned_fraction",
                                  .kind = RS_KIND_FLAG, RS_AT(ring_args, mode), .set = MODE_SHARES};
static const rs_opt opt_description = {.name = "description", .help = "instead, the canonical ring description",
                                       .kind = RS_KIND_FLAG, RS_AT(ring_args, mode), .set = MODE_DESCRIPTION};

static const rs_opt_command ring_command = {
    "ring",
    "ringshard ring [OPTIONS]",
    "Prints a summary of the ring: scheme, nodes, points, collisions, the\n"
    "fingerprint, and each node's share of the position space (min, mean,\n"
    "max, max/mean).\n",
    (const rs_opt_section[]){
        {"\n",
         18, (const rs_opt_use[]){{&opt_points, 0, NULL, NULL}, {&opt_shares, 0, NULL, NULL}, {&opt_description, 0, NULL, NULL},
                                  RS_HELP_USE, {NULL, 0, NULL, NULL}},
         "\n", 0, NULL, NULL},
        RS_RING_SECTION(ring_args, ro),
        RS_SECTIONS_END},
    RS_OPT_NOWHERE};

const rs_opt_command *rs_cmd_ring_options(void) { return &ring_command; }

static double u128_to_double(rs_u128 v) { return (double)v; }

static int print_summary(const rs_ring *r)
{
    const rs_nodes *nodes = rs_ring_nodes(r);
    const rs_ring_opts *o = rs_ring_get_opts(r);
    rs_u128 *owned = malloc(nodes->count * sizeof *owned);
    if (!owned || rs_ring_shares(r, owned) != 0) {
        free(owned);
        fprintf(stderr, "ringshard ring: out of memory\n");
        return RS_EXIT_IO;
    }
    uint32_t up = 0, imin = UINT32_MAX, imax = 0;
    double space = u128_to_double(rs_ring_total_weight(r));
    for (uint32_t i = 0; i < nodes->count; i++) {
        if (nodes->down[i])
            continue;
        up++;
        if (imin == UINT32_MAX || owned[i] < owned[imin])
            imin = i;
        if (owned[i] > owned[imax] || nodes->down[imax])
            imax = i;
    }
    char buf[48];
    double mean = 1.0 / up;
    printf("scheme       %s\n", rs_scheme_name(o->scheme));
    printf("hash         %s (seed %llu, sign %s, %s order)\n", rs_hash_get(o->hash)->name,
           (unsigned long long)o->seed, o->clear_sign ? "clear" : "keep",
           o->order == RS_ORDER_SIGNED ? "signed" : "unsigned");
    if (o->compat != RS_COMPAT_NONE)
        printf("compat       %s: %s\n", rs_compat_get(o->compat)->name, rs_compat_get(o->compat)->help);
    else if (o->scheme == RS_SCHEME_RING || o->scheme == RS_SCHEME_KETAMA)
        printf("labels       %s, %u per node\n", o->label, o->vnodes);
    if (o->scheme == RS_SCHEME_SLOTS)
        printf("slots        %u\n", o->vnodes);
    printf("nodes        %u (%u up)\n", nodes->count, up);
    if (rs_ring_has_points(r))
        printf("points       %u (collisions: %u)\n", rs_ring_npoints(r), rs_ring_collisions(r));
    printf("space        %s positions", rs_u128_str(rs_ring_space(r), buf));
    if (rs_ring_total_weight(r) != rs_ring_space(r))
        printf(" (weighted: %s hash values)", rs_u128_str(rs_ring_total_weight(r), buf));
    putchar('\n');
    printf("fingerprint  %s\n", rs_ring_fingerprint(r));
    printf("shares       %s\n", rs_ring_shares_exact(r) ? "exact" : "expected (no closed form for this scheme)");
    printf("  min        %.9f (node %s)\n", u128_to_double(owned[imin]) / space, nodes->names[imin]);
    printf("  mean       %.9f\n", mean);
    printf("  max        %.9f (node %s)\n", u128_to_double(owned[imax]) / space, nodes->names[imax]);
    printf("  max/mean   %.4f\n", u128_to_double(owned[imax]) / space / mean);
    printf("  min/mean   %.4f\n", u128_to_double(owned[imin]) / space / mean);
    free(owned);
    return 0;
}

static int print_points(const rs_ring *r)
{
    if (!rs_ring_has_points(r)) {
        fprintf(stderr, "ringshard ring: scheme %s has no points\n", rs_scheme_name(rs_ring_get_opts(r)->scheme));
        return RS_EXIT_USAGE;
    }
    const rs_nodes *nodes = rs_ring_nodes(r);
    char label[4200];
    fputs("point\tnode\tvnode\n", stdout);
    for (uint32_t i = 0; i < rs_ring_npoints(r); i++) {
        rs_ring_point_label_text(r, i, label, sizeof label);
        /* names and labels escaped as keys are (\\ \t \n \r): node names may hold tabs */
        const char *name = nodes->names[rs_ring_point_node(r, i)];
        printf("%llu\t", (unsigned long long)rs_ring_point_pos(r, i));
        rs_text_put_tsv(stdout, name, strlen(name));
        putchar('\t');
        rs_text_put_tsv(stdout, label, strlen(label));
        putchar('\n');
    }
    return 0;
}

static int print_shares(const rs_ring *r)
{
    const rs_nodes *nodes = rs_ring_nodes(r);
    rs_u128 *owned = malloc(nodes->count * sizeof *owned);
    uint32_t *points = calloc(nodes->count, sizeof *points);
    if (!owned || !points || rs_ring_shares(r, owned) != 0) {
        free(owned);
        free(points);
        fprintf(stderr, "ringshard ring: out of memory\n");
        return RS_EXIT_IO;
    }
    for (uint32_t i = 0; i < rs_ring_npoints(r); i++)
        points[rs_ring_point_node(r, i)]++;
    double space = u128_to_double(rs_ring_total_weight(r));
    char buf[48];
    fputs("node\tpoints\towned_hash_values\towned_fraction\n", stdout);
    for (uint32_t i = 0; i < nodes->count; i++)
    {
        rs_text_put_tsv(stdout, nodes->names[i], strlen(nodes->names[i]));
        printf("\t%u\t%s\t%.9f\n", points[i], rs_u128_str(owned[i], buf), u128_to_double(owned[i]) / space);
    }
    free(owned);
    free(points);
    return 0;
}

int rs_cmd_ring(int argc, char **argv)
{
    ring_args a = {0};
    int first, rc = rs_cli_parse_options(&ring_command, &a, argc, argv, &first);
    if (rc >= 0)
        return rc;
    if (first < argc)
        return rs_cli_usage_error("ring", "unexpected argument");
    rs_error err = {0};
    rs_ring *r = rs_cli_ring_build(&a.ro, &err);
    if (!r)
        return rs_cli_fail("ring", &err);
    switch (a.mode) {
    case MODE_POINTS: rc = print_points(r); break;
    case MODE_SHARES: rc = print_shares(r); break;
    case MODE_DESCRIPTION: fputs(rs_ring_description(r), stdout); rc = 0; break;
    default: rc = print_summary(r);
    }
    rs_ring_free(r);
    if (rs_cli_flush_stdout(&err) != 0)
        return rs_cli_fail("ring", &err);
    return rc;
}
