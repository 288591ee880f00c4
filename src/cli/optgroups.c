/* The option rows several commands share, each defined once (util/opt.h):
 * the ring options, the input options, the output codec, append, balance
 * and node-edit options, --metrics, --quiet, -j and --help. A row that
 * holds one value (-j, --quiet, --compress ...) stores it at offset 0: a
 * command places it where its own struct keeps that value. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "ringshard/dataset.h"
#include "ringshard/deflate.h"
#include "ringshard/job_bucket.h"

/* ---- rows of one value ---------------------------------------------------- */

const rs_opt rs_opt_help = {.name = "help", .letter = 'h', .help = "this help", .kind = RS_KIND_FLAG,
                            .off = RS_OPT_NOWHERE, .flags = RS_OPTF_HELP};

const rs_opt rs_opt_quiet = {.name = "quiet", .help = "no progress line and no summary", .kind = RS_KIND_FLAG,
                             .off = 0, .size = sizeof(int), .set = 1};

const rs_opt rs_opt_threads = {
    .name = "threads", .letter = 'j', .arg = "N", .help = "worker threads (default: $OMP_NUM_THREADS, else all cores)",
    .kind = RS_KIND_INT, .off = 0, .size = sizeof(int), .min = 1, .max = 256};

const rs_opt rs_opt_memory = {.name = "memory", .arg = "SIZE",
                              .help = "bound on the memory used (default 1G, at least 32M)", .kind = RS_KIND_SIZE,
                              .off = 0, .size = sizeof(uint64_t), .min = 32ULL << 20, .max = UINT64_MAX};

const rs_opt rs_opt_producers = {
    .name = "producers", .arg = "N",
    .help = "at most N inputs (or units) inflated at once, each by a\n"
            "lane of the -j threads (default 0: automatic, about one per\n"
            "4 threads with gzip or zstd output, 3 without; fewer if --memory\n"
            "cannot hold their batches)",
    .kind = RS_KIND_INT, .off = 0, .size = sizeof(int), .min = 0, .max = 256};

const rs_opt rs_opt_zlib = {.name = "zlib", .help = "use zlib instead of ISA-L for gzip", .kind = RS_KIND_FLAG,
                            .off = 0, .size = sizeof(int), .set = RS_CODEC_ZLIB};

static const int compress_codes[] = {RS_COMPRESS_GZIP, RS_COMPRESS_ZSTD, RS_COMPRESS_NONE};

/* zstd in a build without libzstd is refused as the option is read. */
static int compress_apply(void *base, const rs_opt *o, const char *arg, rs_error *err)
{
    (void)o;
    int c;
    return rs_compress_parse_option("--compress", arg, &c, err) == 0
               ? (*(int *)base = c, 0)
               : -1;
}

const rs_opt rs_opt_compress = {.name = "compress", .arg = "gzip|zstd|none",
                                .help = "gzip members (default), zstd frames (.csv.zst)\nor plain CSV",
                                .kind = RS_KIND_ENUM, .off = 0, .size = sizeof(int), .values = "gzip|zstd|none",
                                .codes = compress_codes, .given = RS_GIVEN_COMPRESS, .apply = compress_apply};

static int level_apply(void *base, const rs_opt *o, const char *arg, rs_error *err)
{
    (void)o;
    return rs_level_parse("--level", arg, (int *)base, err);
}

const rs_opt rs_opt_level = {.name = "level", .arg = "N", .help = "compression level (gzip 1-9, default 1; zstd)",
                             .kind = RS_KIND_INT, .off = RS_OPT_NOWHERE, .min = (unsigned long long)RS_ZSTD_LEVEL_MIN,
                             .max = RS_ZSTD_LEVEL_MAX, .flags = RS_OPTF_SIGNED, .given = RS_GIVEN_LEVEL,
                             .apply = level_apply};

static const int direct_codes[] = {RS_DIRECT_AUTO, RS_DIRECT_ON, RS_DIRECT_OFF};
const rs_opt rs_opt_direct_io = {
    .name = "direct-io", .arg = "auto|on|off",
    .help = "write DIR's files with O_DIRECT where the file\n"
            "system takes it (auto, the default: plain output\n"
            "only; on: compressed too) or through the page cache",
    .kind = RS_KIND_ENUM, .off = 0, .size = sizeof(int), .values = "auto|on|off", .codes = direct_codes};

const rs_opt rs_opt_force = {.name = "force", .help = "replace an existing DIR (a ringshard output or empty)",
                             .kind = RS_KIND_FLAG, .off = 0, .size = sizeof(int), .set = RS_OUTDIR_FORCE,
                             .flags = RS_OPTF_OR};

const rs_opt rs_opt_force_any = {.name = "force-any", .help = "replace an existing DIR whatever it holds",
                                 .kind = RS_KIND_FLAG, .off = 0, .size = sizeof(int),
                                 .set = RS_OUTDIR_FORCE | RS_OUTDIR_FORCE_ANY, .flags = RS_OPTF_OR};

const rs_opt rs_opt_output_dir = {.name = "output", .letter = 'o', .arg = "DIR",
                                  .help = "the output directory (required)", .kind = RS_KIND_STRING, .off = 0,
                                  .size = sizeof(char *)};

static int metrics_apply(void *base, const rs_opt *o, const char *arg, rs_error *err)
{
    (void)base, (void)o;
    return rs_cli_metrics_option(rs_cli_command_name(), arg, err);
}

const rs_opt rs_opt_metrics = {.name = "metrics", .arg = "FILE",
                               .help = "write the run's result, times, counts and phases to\n"
                                       "FILE, replaced whole at the end of every run\n"
                                       "(Prometheus text format: docs/metrics.md); '-':\n"
                                       "standard output",
                               .kind = RS_KIND_STRING, .off = RS_OPT_NOWHERE, .apply = metrics_apply};

/* ---- the ring options (rs_cli_ring; checked by rs_ring_spec_resolve) ---------- */

#define RING(field) RS_AT(rs_cli_ring, field), .flags = RS_OPTF_DEFER, .given = RS_GIVEN_RING
const rs_opt rs_opt_scheme = {.name = "scheme", .arg = "NAME", .help = "ring (default), ketama, slots, modulo, jump",
                              .kind = RS_KIND_ENUM, .values = "ring|ketama|slots|modulo|jump", RING(scheme)};
const rs_opt rs_opt_hash = {
    .name = "hash", .arg = "NAME",
    .help = "murmur3_128 (ring default), murmur3_32, fnv1_32_java,\n"
            "java_hashcode (slots default), murmur64a_java, md5_ketama (ketama default)",
    .kind = RS_KIND_ENUM, .values = "murmur3_128|murmur3_32|fnv1_32_java|java_hashcode|murmur64a_java|md5_ketama",
    RING(hash)};
const rs_opt rs_opt_seed = {.name = "seed", .arg = "N", .help = "hash seed (default: the hash's own, 0 or 0x1234ABCD)",
                            .kind = RS_KIND_INT, .min = 0, .max = UINT64_MAX, RING(seed)};
const rs_opt rs_opt_nodes = {.name = "nodes", .arg = "N", .help = "nodes named \"0\"..\"N-1\" (default 1000)",
                             .kind = RS_KIND_INT, .min = 1, .max = RS_RING_NODES_MAX, RING(nodes)};
const rs_opt rs_opt_nodes_file = {
    .name = "nodes-file", .arg = "FILE",
    .help = "one node a line: name [weight] [down]; # comments; a name with\n"
            "blanks or # in double quotes, \"\" for a quote: \"node a\" 2 down",
    .kind = RS_KIND_STRING, RING(nodes_file)};
const rs_opt rs_opt_vnodes = {.name = "vnodes", .arg = "V",
                              .help = "ring: points per node (200); ketama: points per node (160)",
                              .kind = RS_KIND_INT, .min = 1, .max = RS_RING_VNODES_MAX, RING(vnodes)};
const rs_opt rs_opt_slots = {.name = "slots", .arg = "S", .help = "slots: the number of slots (1024)",
                             .kind = RS_KIND_INT, .min = 1, .max = RS_RING_VNODES_MAX, RING(vnodes)};
const rs_opt rs_opt_label = {.name = "label", .arg = "TEMPLATE",
                             .help = "label of a virtual node: {node} and {i} (ring: {node}&Node{i},\n"
                                     "ketama: {node}{i}; libketama/twemproxy: {node}-{i})",
                             .kind = RS_KIND_STRING, RING(label)};
const rs_opt rs_opt_sign = {.name = "sign", .arg = "clear|keep",
                            .help = "clear the hash value's sign bit (ring and modulo: clear)", .kind = RS_KIND_ENUM,
                            .values = "clear|keep", RING(sign)};
const rs_opt rs_opt_order = {.name = "order", .arg = "unsigned|signed",
                             .help = "compare positions as unsigned or as Java signed values", .kind = RS_KIND_ENUM,
                             .values = "unsigned|signed", RING(order)};
const rs_opt rs_opt_down = {.name = "down", .arg = "NAMES",
                            .help = "comma-separated nodes that are listed but down (own nothing);\n"
                                    "given again, the lists add up",
                            .kind = RS_KIND_LIST, .repeat = RS_REPEAT_ACCUMULATE, RING(down)};
const rs_opt rs_opt_compat = {
    .name = "compat", .arg = "CLIENT",
    .help = "libketama, libmemcached, libmemcached-spy, twemproxy,\n"
            "spymemcached, hashring: the ketama ring that client builds\n"
            "(it sets scheme, hash, points, labels, collisions); nodes\n"
            "are named host:port",
    .kind = RS_KIND_ENUM, .values = "libketama|libmemcached|libmemcached-spy|twemproxy|spymemcached|hashring",
    RING(compat)};
#undef RING

/* ---- the input options (rs_pipeline_opts) ------------------------------------ */

static int key_sep_apply(void *base, const rs_opt *o, const char *arg, rs_error *err)
{
    (void)o;
    if (strlen(arg) != 1)
        return rs_error_set(err, RS_EXIT_USAGE, "--key-sep: expected one character, not '%s'", arg);
    ((rs_pipeline_opts *)base)->key_sep = arg[0];
    return 0;
}

static int delimiter_apply(void *base, const rs_opt *o, const char *arg, rs_error *err)
{
    (void)o;
    rs_pipeline_opts *po = base;
    if (!strcmp(arg, "tab") || !strcmp(arg, "\\t"))
        po->dialect.delim = '\t';
    else if (!strcmp(arg, "\""))
        return rs_error_set(err, RS_EXIT_USAGE, "--delimiter: a double quote cannot be the delimiter (it quotes "
                                                "fields)");
    else if (!strcmp(arg, "\n") || !strcmp(arg, "\r"))
        return rs_error_set(err, RS_EXIT_USAGE, "--delimiter: a line end (%s) cannot be the delimiter (it ends "
                                                "records)", arg[0] == '\n' ? "LF" : "CR");
    else if (strlen(arg) == 1)
        po->dialect.delim = arg[0];
    else if (!*arg)
        return rs_error_set(err, RS_EXIT_USAGE, "--delimiter: empty (expected one character or 'tab')");
    else
        return rs_error_set(err, RS_EXIT_USAGE, "--delimiter: expected one character (one byte) or 'tab', not "
                                                "'%s' (%zu bytes)", arg, strlen(arg));
    return 0;
}

static int bad_row_apply(void *base, const rs_opt *o, const char *arg, rs_error *err)
{
    (void)o;
    rs_pipeline_opts *po = base;
    if (!strcmp(arg, "fail"))
        po->bad_rows = RS_BAD_ROW_FAIL;
    else if (!strcmp(arg, "skip"))
        po->bad_rows = RS_BAD_ROW_SKIP;
    else if (!strncmp(arg, "quarantine=", 11) && arg[11]) {
        po->bad_rows = RS_BAD_ROW_QUARANTINE;
        po->quarantine = arg + 11;
        return rs_cli_stdout_file("--on-bad-row quarantine=", &po->quarantine, err);
    } else
        return rs_error_set(err, RS_EXIT_USAGE, "--on-bad-row: expected fail, skip or quarantine=FILE, not '%s'", arg);
    return 0;
}

static int files_from_apply(void *base, const rs_opt *o, const char *arg, rs_error *err)
{
    (void)base;
    return rs_cli_files_from_option(o->arg != NULL, arg, err);
}

/* The inputs' line of --help: an operand, not an option. */
const rs_opt rs_opt_input_operand = {.name = "INPUT...", .help = "CSV files, gzip, zstd or plain (by content), '-' = stdin",
                                     .off = RS_OPT_NOWHERE, .flags = RS_OPTF_OPERAND, .synopsis = "INPUT..."};

const rs_opt rs_opt_key = {.name = "key", .arg = "COL[,COL...]",
                           .help = "key column(s) by header name or 1-based index (default 1);\n"
                                   "several columns make a composite key joined by --key-sep",
                           .kind = RS_KIND_STRING, RS_AT(rs_pipeline_opts, key), .given = RS_GIVEN_KEY};
const rs_opt rs_opt_key_sep = {.name = "key-sep", .arg = "C", .help = "separator of composite keys (default '|')",
                               .kind = RS_KIND_STRING, .off = RS_OPT_NOWHERE, .given = RS_GIVEN_KEY_SEP,
                               .apply = key_sep_apply};
const rs_opt rs_opt_delimiter = {.name = "delimiter", .arg = "C",
                                 .help = "field delimiter: a character, or 'tab' (default ',')",
                                 .kind = RS_KIND_STRING, .off = RS_OPT_NOWHERE, .given = RS_GIVEN_DELIMITER,
                                 .apply = delimiter_apply};
const rs_opt rs_opt_header = {.name = "header", .help = "the first line of every input is a header (default) or not",
                              .kind = RS_KIND_FLAG, RS_AT(rs_pipeline_opts, header), .set = 1,
                              .given = RS_GIVEN_HEADER, .synopsis = "--header / --no-header"};
const rs_opt rs_opt_no_header = {.name = "no-header", .help = "the first line of every input is not a header",
                                 .kind = RS_KIND_FLAG, RS_AT(rs_pipeline_opts, header), .set = 0,
                                 .flags = RS_OPTF_JOINED, .given = RS_GIVEN_HEADER};
const rs_opt rs_opt_max_record = {
    .name = "max-record", .arg = "SIZE", .help = "longest record allowed (default and upper bound: about --memory / 32)",
    .kind = RS_KIND_SIZE, .off = 0, .size = sizeof(size_t), .min = 1, .max = SIZE_MAX / 2,
    .flags = RS_OPTF_POSITIVE};
const rs_opt rs_opt_on_bad_row = {.name = "on-bad-row", .arg = "fail|skip|quarantine=FILE",
                                  .help = "\na malformed row stops the run (default, exit 2), is counted\n"
                                          "and skipped, or is also written to FILE with its reason\n"
                                          "('-': standard output)",
                                  .kind = RS_KIND_ENUM, .values = "fail|skip|quarantine=FILE",
                                  .off = RS_OPT_NOWHERE, .flags = RS_OPTF_DEFER, .apply = bad_row_apply};
const rs_opt rs_opt_allow_empty = {.name = "allow-empty",
                                   .help = "an input without rows (0 bytes; a header only when --key\n"
                                           "names the column) is counted, not an error (default:\n"
                                           "exit 2 naming it, nothing written)",
                                   .kind = RS_KIND_FLAG, RS_AT(rs_pipeline_opts, empty_inputs), .set = RS_EMPTY_ALLOW};
const rs_opt rs_opt_files_from = {.name = "files-from", .arg = "LIST",
                                  .help = "also read the inputs named in LIST, one path a line ('-':\n"
                                          "stdin), after those on the command line; may be repeated.\n"
                                          "Empty lines, a CR at a line's end, a missing file, a\n"
                                          "directory or a file given twice (by any name) are errors",
                                  .kind = RS_KIND_LIST, .repeat = RS_REPEAT_ACCUMULATE, .off = RS_OPT_NOWHERE,
                                  .apply = files_from_apply};
const rs_opt rs_opt_null = {.name = "null", .help = "the lists' paths end with NUL (find -print0), not LF",
                            .kind = RS_KIND_FLAG, .off = RS_OPT_NOWHERE, .apply = files_from_apply};

/* ---- append (rs_cli_append) ------------------------------------------------- */

static int commit_apply(void *base, const rs_opt *o, const char *arg, rs_error *err)
{
    (void)o;
    rs_cli_append *a = base;
    unsigned long long v;
    size_t digits = strspn(arg, "0123456789");
    a->commit_bytes = arg[0] && arg[digits] != '\0';   /* a suffix: a size */
    if (a->commit_bytes ? rs_parse_size("--commit-every", arg, &v, err) != 0
                        : rs_parse_uint("--commit-every", arg, 1, UINT64_MAX, &v, err) != 0)
        return -1;
    if (v == 0)
        return rs_error_set(err, RS_EXIT_USAGE, "--commit-every: 0 is no interval");
    a->commit_every = v;
    return 0;
}

static const int seen_codes[] = {RS_SEEN_SKIP, RS_SEEN_FAIL, RS_SEEN_AGAIN};
const rs_opt rs_opt_append = {.name = "append",
                              .help = "add the inputs to DIR as a new generation (DIR is\n"
                                      "created when missing); what shapes the files (ring,\n"
                                      "--key, --delimiter, --header, --compress, --level,\n"
                                      "--keys-only) is DIR's: left out, it is taken from\n"
                                      "DIR's manifest; given, it must be the same",
                              .kind = RS_KIND_FLAG, RS_AT(rs_cli_append, append), .set = 1};
const rs_opt rs_opt_on_seen = {.name = "on-seen", .arg = "skip|fail|again",
                               .help = "an input DIR already ingested (same content,\n"
                                       "whatever its name): skip it with a note (default),\n"
                                       "fail (exit 73, nothing written) or ingest it again",
                               .kind = RS_KIND_ENUM, RS_AT(rs_cli_append, on_seen), .values = "skip|fail|again",
                               .codes = seen_codes};
const rs_opt rs_opt_commit_every = {.name = "commit-every", .arg = "N",
                                    .help = "publish a generation every N inputs, or every SIZE\n"
                                            "of inputs as stored (10G, 500M): a run killed\n"
                                            "between two is resumed by running it again",
                                    .kind = RS_KIND_SIZE, .min = 1, .max = UINT64_MAX, .off = RS_OPT_NOWHERE,
                                    .flags = RS_OPTF_DEFER, .apply = commit_apply};

/* ---- balance (rs_cli_balance) ------------------------------------------------ */

static int number_apply(void *base, const rs_opt *o, const char *arg, rs_error *err)
{
    rs_cli_balance *bo = base;
    char *end;
    errno = 0;
    double v = strtod(arg, &end);
    int z = o->name[0] == 'z';
    if (*end || errno || !(z ? v > 0 : v >= 1) || !isfinite(v))
        return rs_error_set(err, RS_EXIT_USAGE, z ? "--z: '%s' is not a positive number"
                                                  : "--capacity-factor: '%s' is not a number >= 1", arg);
    *(z ? &bo->z : &bo->factor) = v;
    return 0;
}

static int picture_apply(void *base, const rs_opt *o, const char *arg, rs_error *err)
{
    (void)arg;
    rs_cli_balance *bo = base;
    int svg = o->name[0] == 's';
    return rs_cli_stdout_file(svg ? "--svg" : "--html", svg ? &bo->svg : &bo->html, err);
}

const rs_opt rs_opt_z = {.name = "z", .arg = "Z", .help = "width of the expected band in sds (default 3)",
                         .kind = RS_KIND_NUMBER, .off = RS_OPT_NOWHERE, .apply = number_apply};
const rs_opt rs_opt_capacity = {
    .name = "capacity-factor", .arg = "F",
    .help = "bounded loads (F >= 1): capacity ceil(F*K/N) per node;\n"
            "nodes over F*mean and the excess over capacity",
    .kind = RS_KIND_NUMBER, .off = RS_OPT_NOWHERE, .apply = number_apply};
const rs_opt rs_opt_tsv = {.name = "tsv",
                           .help = "instead of the summary, the per-node TSV table:\n"
                                   "node points share expected expected_sd count z flag\n"
                                   "[capacity load_after]",
                           .kind = RS_KIND_FLAG, RS_AT(rs_cli_balance, tsv), .set = 1};
const rs_opt rs_opt_svg = {.name = "svg", .arg = "FILE", .help = "write the pictures as one SVG file",
                           .kind = RS_KIND_STRING, RS_AT(rs_cli_balance, svg), .apply = picture_apply};
const rs_opt rs_opt_html = {.name = "html", .arg = "FILE", .help = "write a self-contained HTML report",
                            .kind = RS_KIND_STRING, RS_AT(rs_cli_balance, html), .apply = picture_apply};

/* ---- node edits (rs_cli_edits) ------------------------------------------------ */

const rs_opt rs_opt_add = {.name = "add", .arg = "K", .help = "add K nodes", .kind = RS_KIND_INT,
                           RS_AT(rs_cli_edits, add), .min = 1, .max = 10000000};
const rs_opt rs_opt_add_names = {.name = "add-names", .arg = "NAMES", .help = "add these nodes (comma-separated)",
                                 .kind = RS_KIND_LIST, .repeat = RS_REPEAT_ACCUMULATE,
                                 RS_AT(rs_cli_edits, add_names)};
const rs_opt rs_opt_remove = {.name = "remove", .arg = "NAMES", .help = "remove these nodes (comma-separated)",
                              .kind = RS_KIND_LIST, .repeat = RS_REPEAT_ACCUMULATE, RS_AT(rs_cli_edits, remove)};
const rs_opt rs_opt_reweight = {.name = "reweight", .arg = "NAME=W[,...]", .help = "change nodes' weights",
                                .kind = RS_KIND_LIST, .repeat = RS_REPEAT_ACCUMULATE,
                                RS_AT(rs_cli_edits, reweight)};

/* ---- what the groups check once parsed ----------------------------------------- */

int rs_cli_append_finish(rs_cli_append *a, int force, rs_error *err)
{
    a->on_seen_given = a->on_seen >= 0;
    if (!a->on_seen_given)
        a->on_seen = RS_SEEN_SKIP;
    if (a->append && force)
        return rs_error_set(err, RS_EXIT_USAGE, "--append adds to DIR, --force replaces it: give one of them");
    if (!a->append && (a->on_seen_given || a->commit_every))
        return rs_error_set(err, RS_EXIT_USAGE, "%s needs --append", a->on_seen_given ? "--on-seen" : "--commit-every");
    return 0;
}

void rs_cli_edits_fill(const rs_cli_edits *ed, const rs_opt_list *down, rs_node_edits *e)
{
    *e = (rs_node_edits){
        .remove = ed->remove.v, .reweight = ed->reweight.v, .add_names = ed->add_names.v, .down = down->v,
        .nremove = ed->remove.n, .nreweight = ed->reweight.n, .nadd_names = ed->add_names.n, .ndown = down->n,
        .add = (uint32_t)ed->add,
    };
}

int rs_cli_edits_change(const rs_cli_edits *ed)
{
    return ed->add || ed->add_names.n || ed->remove.n || ed->reweight.n;
}

void rs_cli_balance_defaults(rs_cli_balance *bo)
{
    bo->z = 3;
    bo->factor = NAN;
    bo->tsv = 0;
    bo->svg = bo->html = NULL;
}

int rs_cli_balance_pictures(const rs_cli_balance *bo, const char *title, const rs_ring *ring, const rs_balance *b,
                            const rs_node_stat *ns, const rs_bounded *bl, const char *unit, rs_error *err)
{
    for (int html = 0; html < 2; html++) {
        const char *path = html ? bo->html : bo->svg;
        if (path && rs_balance_report(path, html, title, ring, b, ns, bl, unit, err) != 0)
            return -1;
    }
    return 0;
}
