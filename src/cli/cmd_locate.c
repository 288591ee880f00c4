/* ringshard locate: where keys go. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "util/lines.h"

/* The default --max-record: what bucket takes with its default --memory. */
#define RS_LOCATE_MAX_LINE ((size_t)32 << 20)

typedef struct {
    rs_cli_ring ro;
    int explain, header;
    size_t max;
} locate_args;

static const rs_opt opt_explain = {.name = "explain",
                                   .help = "also print the owning point's label and its arc\n"
                                           "[start, end) of positions (arc_start > arc_end: it wraps)",
                                   .kind = RS_KIND_FLAG, RS_AT(locate_args, explain), .set = 1};
static const rs_opt opt_no_header = {.name = "no-header", .help = "no header line", .kind = RS_KIND_FLAG,
                                     RS_AT(locate_args, header), .set = 0};

static const rs_opt_command locate_command = {
    "locate",
    "ringshard locate [OPTIONS] [KEY...]",
    "Prints, for each KEY (or each line of standard input when no KEY is given:\n"
    "LF-terminated, a CR before the LF is removed), one TSV line:\n"
    "  key  position  node        (node = the owning node's name)\n"
    "Keys are printed with \\\\, \\t, \\n, \\r escaped.\n",
    (const rs_opt_section[]){
        {"\n",
         18,
         (const rs_opt_use[]){RS_USE_HELP(rs_opt_max_record, locate_args, max,
                                          "longest line of standard input (default 32M): a longer\n"
                                          "one is an error (exit 2), so that memory stays bounded"),
                              {&opt_explain, 0, NULL, NULL}, {&opt_no_header, 0, NULL, NULL}, RS_HELP_USE, {NULL, 0, NULL, NULL}},
         "\n", 0, NULL, NULL},
        RS_RING_SECTION(locate_args, ro),
        RS_SECTIONS_END},
    RS_OPT_NOWHERE};

const rs_opt_command *rs_cmd_locate_options(void) { return &locate_command; }

static void locate_one(const rs_ring *r, const char *key, size_t len, int explain, FILE *out)
{
    uint64_t pos = rs_ring_position(r, key, len);
    uint32_t node = rs_ring_owner(r, pos);
    rs_text_put_tsv(out, key, len);
    const char *name = rs_ring_nodes(r)->names[node];
    fprintf(out, "\t%llu\t", (unsigned long long)pos);
    rs_text_put_tsv(out, name, strlen(name));  /* node names may hold tabs */
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
            rs_text_put_tsv(out, label, strlen(label));  /* labels hold the node's name */
            fprintf(out, "\t%llu\t%llu", (unsigned long long)start, (unsigned long long)end);
        }
    }
    putc('\n', out);
}

typedef struct {
    const rs_ring *ring;
    int explain;
} locate_ctx;

static int locate_line(void *ctx, const char *line, size_t len, rs_error *err)
{
    (void)err;
    const locate_ctx *c = ctx;
    locate_one(c->ring, line, len, c->explain, stdout);
    return 0;
}

int rs_cmd_locate(int argc, char **argv)
{
    locate_args a = {.header = 1, .max = RS_LOCATE_MAX_LINE};
    rs_error err = {0};
    int first, rc = rs_cli_parse_options(&locate_command, &a, argc, argv, &first);
    if (rc >= 0)
        return rc;
    int explain = a.explain;
    rs_ring *r = rs_cli_ring_build(&a.ro, &err);
    if (!r)
        return rs_cli_fail("locate", &err);
    if (a.header)
        fputs(explain ? "key\tposition\tnode\tlabel\tarc_start\tarc_end\n" : "key\tposition\tnode\n", stdout);
    if (first < argc) {
        for (int i = first; i < argc; i++)
            locate_one(r, argv[i], strlen(argv[i]), explain, stdout);
    } else if (rs_lines_each(stdin, "standard input", a.max, "--max-record", locate_line,
                             &(locate_ctx){r, explain}, &err) != 0) {
        rs_ring_free(r);
        return rs_cli_fail("locate", &err);
    }
    rs_ring_free(r);
    if (rs_cli_flush_stdout(&err) != 0)
        return rs_cli_fail("locate", &err);
    return 0;
}
