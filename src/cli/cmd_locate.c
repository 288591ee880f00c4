/* ringshard locate: where keys go. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"

static const char locate_help[] =
    "Usage: ringshard locate [OPTIONS] [KEY...]\n"
    "Prints, for each KEY (or each line of standard input when no KEY is given:\n"
    "LF-terminated, a CR before the LF is removed), one TSV line:\n"
    "  key  position  node        (node = the owning node's name)\n"
    "Keys are printed with \\\\, \\t, \\n, \\r escaped.\n\n"
    "  --explain       also print the owning point's label and its arc\n"
    "                  [start, end) of positions (arc_start > arc_end: it wraps)\n"
    "  --no-header     no header line\n"
    "  -h, --help      this help\n\n";

enum { OPT_EXPLAIN = RS_OPT__FIRST_COMMAND, OPT_NO_HEADER };

static void locate_one(const rs_ring *r, const char *key, size_t len, int explain, FILE *out)
{
    uint64_t pos = rs_ring_position(r, key, len);
    uint32_t node = rs_ring_owner(r, pos);
    rs_cli_put_escaped(out, key, len);
    const char *name = rs_ring_nodes(r)->names[node];
    fprintf(out, "\t%llu\t", (unsigned long long)pos);
    rs_cli_put_escaped(out, name, strlen(name));  /* node names may hold tabs */
    if (explain) {
        uint32_t p = rs_ring_point_at(r, pos);
        if (p == UINT32_MAX) {
            fputs("\t-\t-\t-", out);
        } else {
            char label[4200];
            rs_ring_point_label_text(r, p, label, sizeof label);
            uint32_t prev = p ? p - 1 : rs_ring_npoints(r) - 1;
            uint64_t start = rs_ring_point_pos(r, prev) + 1, end = rs_ring_point_pos(r, p) + 1;
            if ((rs_u128)start == rs_ring_space(r))
                start = 0;
            if ((rs_u128)end == rs_ring_space(r))
                end = 0;
            putc('\t', out);
            rs_cli_put_escaped(out, label, strlen(label));  /* labels hold the node's name */
            fprintf(out, "\t%llu\t%llu", (unsigned long long)start, (unsigned long long)end);
        }
    }
    putc('\n', out);
}

int rs_cmd_locate(int argc, char **argv)
{
    static const struct option longopts[] = {
        RS_RING_LONGOPTS,
        {"explain", no_argument, 0, OPT_EXPLAIN},
        {"no-header", no_argument, 0, OPT_NO_HEADER},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    rs_cli_ring ro = {0};
    int explain = 0, header = 1, c;
    optind = 1;
    while ((c = rs_cli_getopt("locate", argc, argv, "h", longopts)) != -1) {
        if (rs_cli_ring_option(&ro, c, optarg))
            continue;
        switch (c) {
        case OPT_EXPLAIN: explain = 1; break;
        case OPT_NO_HEADER: header = 0; break;
        case 'h': fputs(locate_help, stdout); fputs(rs_cli_ring_help, stdout); return 0;
        default: return rs_cli_getopt_exit(c);
        }
    }
    rs_error err = {0};
    rs_ring *r = rs_cli_ring_build(&ro, &err);
    if (!r)
        return rs_cli_fail("locate", &err);
    if (header)
        fputs(explain ? "key\tposition\tnode\tlabel\tarc_start\tarc_end\n" : "key\tposition\tnode\n", stdout);
    if (optind < argc) {
        for (int i = optind; i < argc; i++)
            locate_one(r, argv[i], strlen(argv[i]), explain, stdout);
    } else {
        char *line = NULL;
        size_t cap = 0;
        ssize_t n;
        while ((n = getline(&line, &cap, stdin)) >= 0) {
            if (n && line[n - 1] == '\n')
                n--;
            if (n && line[n - 1] == '\r')
                n--;
            locate_one(r, line, (size_t)n, explain, stdout);
        }
        free(line);
    }
    rs_ring_free(r);
    if (rs_cli_flush_stdout(&err) != 0)
        return rs_cli_fail("locate", &err);
    return 0;
}
