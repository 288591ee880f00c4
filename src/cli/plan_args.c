/* The options of `ringshard plan` (cli/plan_args.h): parsed into the plan
 * job's options and what the command turns into them, then checked for
 * what does not fit together. */
#include <stdio.h>
#include <string.h>
#include "cli/plan_args.h"
#include "ringshard/dataset.h"
#include "ringshard/job_bucket.h"

#define P rs_cli_plan_args
#define STRING_AT(field) .kind = RS_KIND_STRING, RS_AT(P, field)
#define FLAG_AT(field) .kind = RS_KIND_FLAG, RS_AT(P, field), .set = 1

static const rs_opt opt_old_nodes = {.name = "old-nodes", .arg = "N", .help = "nodes \"0\"..\"N-1\" (same as --nodes)",
                                     .kind = RS_KIND_INT, RS_AT(P, ro.nodes), .min = 1, .max = RS_RING_NODES_MAX,
                                     .flags = RS_OPTF_DEFER, .given = RS_GIVEN_RING};
static const rs_opt opt_old_nodes_file = {.name = "old-nodes-file", .arg = "FILE",
                                          .help = "a node file (same as --nodes-file)", .kind = RS_KIND_STRING,
                                          RS_AT(P, ro.nodes_file), .flags = RS_OPTF_DEFER, .given = RS_GIVEN_RING};
static const rs_opt opt_from_buckets = {.name = "from-buckets", .arg = "DIR",
                                        .help = "the ring DIR/manifest.json was written with; its rows\n"
                                                "are the data (each must sit in its old bucket), unless\n"
                                                "--ring-only. Ring options may not be given with it.",
                                        STRING_AT(o.from_buckets)};
static const rs_opt opt_ring_only = {.name = "ring-only", .help = "with --from-buckets: use only the ring, read no rows",
                                     FLAG_AT(o.ring_only)};
static const rs_opt opt_new_nodes = {.name = "new-nodes", .arg = "N", .help = "nodes \"0\"..\"N-1\"",
                                     .kind = RS_KIND_INT, RS_AT(P, new_nodes), .min = 1, .max = RS_RING_NODES_MAX,
                                     .flags = RS_OPTF_DEFER};
static const rs_opt opt_new_nodes_file = {.name = "new-nodes-file", .arg = "FILE", .help = "a node file",
                                          STRING_AT(new_nodes_file)};
static const rs_opt opt_json = {.name = "json", .arg = "FILE", .help = "the plan as JSON (schema: docs/plan.md)",
                                STRING_AT(o.json)};
static const rs_opt opt_json_arcs = {.name = "json-arcs", .help = "include every moving arc in --json",
                                     FLAG_AT(o.json_arcs)};
static const rs_opt opt_arcs = {.name = "arcs", .arg = "FILE",
                                .help = "every moving arc as TSV: start end from to weight share", STRING_AT(o.arcs)};
static const rs_opt opt_pairs = {.name = "pairs", .arg = "FILE", .help = "every (from, to) pair as CSV",
                                 STRING_AT(o.pairs)};
static const rs_opt opt_svg = {.name = "svg", .arg = "FILE",
                               .help = "the flow matrix (from x to) and the summary as SVG", STRING_AT(o.svg)};
static const rs_opt opt_html = {.name = "html", .arg = "FILE",
                                .help = "the same as a self-contained HTML page, with tables", STRING_AT(o.html)};
static const rs_opt opt_top = {.name = "top", .arg = "N", .help = "pairs listed in the summary (default 10)",
                               .kind = RS_KIND_INT, RS_AT(P, top), .min = 0, .max = UINT32_MAX};
static const rs_opt opt_strict = {.name = "strict",
                                  .help = "exit 3 if a move breaks the change's consistency property",
                                  FLAG_AT(o.strict)};
static const rs_opt opt_emit = {.name = "emit", .arg = "DIR",
                                .help = "write the moved rows, one <from>__<to>.csv.gz per pair,\n"
                                        "plus DIR/manifest.json (kind \"moves\"); rows that stay\n"
                                        "are not written",
                                STRING_AT(o.emit)};
static const rs_opt opt_batch_bytes = {.name = "batch-bytes", .arg = "SIZE",
                                       .help = "group the moves into numbered waves of at most SIZE bytes",
                                       .kind = RS_KIND_SIZE, RS_AT(P, batch_bytes), .min = 1, .max = UINT64_MAX,
                                       .flags = RS_OPTF_POSITIVE};
static const rs_opt opt_wave_order = {.name = "wave-order", .arg = "smallest|largest",
                                      .help = "which moves go first (default smallest)", .kind = RS_KIND_ENUM,
                                      RS_AT(P, wave_order), .values = "smallest|largest"};

#define USE(row) {&(row), 0, NULL, NULL}
const rs_opt_command rs_cli_plan_command = {
    "plan",
    "ringshard plan [OPTIONS] [INPUT...] [--files-from LIST]",
    "Compares an old and a new node set on the same ring options and tells what\n"
    "moves where. Without INPUT: the exact ring diff (arcs of the hash space whose\n"
    "owner changes, aggregated per (from, to) pair). With INPUT (the same CSV\n"
    "inputs and options as 'ringshard bucket'): keys and bytes counted per pair;\n"
    "with --emit DIR the moved rows themselves.\n",
    (const rs_opt_section[]){
        {"\n",
         25, (const rs_opt_use[]){USE(opt_old_nodes), USE(opt_old_nodes_file), USE(opt_from_buckets),
                                  USE(opt_ring_only), {NULL, 0, NULL, NULL}},
         NULL, 0, "Old side", "default: the ring options' nodes, 1000"},
        {NULL, 25,
         (const rs_opt_use[]){
             USE(opt_new_nodes), USE(opt_new_nodes_file),
             RS_USE_HELP(rs_opt_add, P, ed,
                         "K nodes named after the last one, after the largest\n"
                         "number any node had, removed ones included (\"999\" ->\n"
                         "\"1000\"..., \"db07\" -> \"db08\"...; a name without digits\n"
                         "gets -1, -2...)"),
             RS_USE_AS(rs_opt_add_names, P, ed, "--add-names A,B", "nodes with these names (weight 1)"),
             RS_USE_AS(rs_opt_remove, P, ed, "--remove A,B",
                         "remove nodes (slots: marked down, so that the others\n"
                         "keep their slots, as the Java slots' dropBadNode)"),
             RS_USE_HELP(rs_opt_reweight, P, ed, "change a node's weight (ring, ketama)"),
             RS_USE_HELP(rs_opt_down, P, ro,
                         "nodes listed but down, on both sides where listed\n"
                         "(the lists of --remove, --add-names, --reweight and\n"
                         "--down add up when given again; an edit that cancels\n"
                         "itself, or a name given twice, is refused: exit 64)"),
             {NULL, 0, NULL, NULL}},
         NULL, 0, "New side", "an explicit node set, or changes to the old one, or both"},
        {NULL,
         25, (const rs_opt_use[]){USE(opt_json), USE(opt_json_arcs), USE(opt_arcs), USE(opt_pairs), USE(opt_svg),
                                  USE(opt_html), USE(opt_top), USE(opt_strict), {NULL, 0, NULL, NULL}},
         NULL, 0, "Outputs", "the summary goes to standard output; a FILE '-' is standard output,\n"
         "one at most, and the summary then goes to standard error"},
        {NULL, 25,
         (const rs_opt_use[]){
             USE(opt_emit),
             RS_USE_HELP(rs_opt_force, P, o.force, "replace an existing --emit DIR (a ringshard output or empty)"),
             RS_USE_HELP(rs_opt_force_any, P, o.force, "replace an existing --emit DIR whatever it holds"),
             RS_USE_HELP(rs_opt_compress, P, po.compress, "--emit files gzip (default), zstd or plain"),
             RS_USE_HELP(rs_opt_level, P, po.level, "level (default 1): gzip 1-9, zstd -131072 to 22 but 0"),
             RS_USE_HELP(rs_opt_direct_io, P, po.direct_io, "--emit files with O_DIRECT (auto: plain ones only)"),
             USE(opt_batch_bytes), USE(opt_wave_order), RS_HELP_USE, {NULL, 0, NULL, NULL}},
         "\nExit: 0; 3 when rows of --from-buckets sit in the wrong bucket (then nothing is\n"
         "emitted) or, with --strict, when the consistency property is broken.\n\n", 0, "With data", NULL},
        RS_METRICS_SECTION(P, "\n"),
        RS_INPUT_SECTION(P, po, quiet, "\n"),
        RS_RING_SECTION(P, ro),
        RS_SECTIONS_END},
    RS_OPT_NOWHERE};
#undef USE
#undef P

const rs_opt_command *rs_cmd_plan_options(void) { return &rs_cli_plan_command; }

int rs_cli_plan_check(rs_cli_plan_args *a, const rs_pipeline_opts *po, int have_inputs, int data)
{
    rs_error err = {0};
    if (a->o.from_buckets && have_inputs)
        return rs_cli_usage_error("plan", "--from-buckets reads the bucket files: no INPUT arguments nor --files-from");
    if (a->o.ring_only && !a->o.from_buckets)
        return rs_cli_usage_error("plan", "--ring-only goes with --from-buckets");
    if (!data && (a->o.emit || a->batch_bytes))
        return rs_cli_usage_error("plan", "--emit and --batch-bytes need data (INPUT... or --from-buckets DIR)");
    if (a->wave_order >= 0 && !a->batch_bytes)
        return rs_cli_usage_error("plan", "--wave-order goes with --batch-bytes");
    if (a->o.json_arcs && !a->o.json)
        return rs_cli_usage_error("plan", "--json-arcs goes with --json (it adds the arcs to that report)");
    int rc = a->o.emit ? rs_cli_dir_not_stdout("plan", "--emit", a->o.emit, "a move directory",
                                               "write it to a directory (ringshard verify reads it back)")
                       : -1;
    if (rc >= 0)
        return rc;
    const char *const side[][2] = {{"--on-bad-row quarantine=", po->quarantine}, {"--json ", a->o.json},
                                   {"--arcs ", a->o.arcs}, {"--pairs ", a->o.pairs}, {"--svg ", a->o.svg},
                                   {"--html ", a->o.html}};
    for (size_t i = 0; i < sizeof side / sizeof *side; i++)
        if (rs_outdir_refuse_inside(side[i][0], side[i][1], a->o.emit, &err) != 0)
            return rs_cli_fail("plan", &err);
    if (rs_cli_metrics_refuse_inside(a->o.emit, &err) != 0)
        return rs_cli_fail("plan", &err);
    if (rs_cli_stdout_files(&err, "--json", &a->o.json, "--arcs", &a->o.arcs, "--pairs", &a->o.pairs, "--svg",
                            &a->o.svg, "--html", &a->o.html, NULL) != 0)
        return rs_cli_fail("plan", &err);
    return -1;
}
