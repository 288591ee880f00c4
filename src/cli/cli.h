/* The command-line front end: shared option handling for the commands. */
#ifndef RS_CLI_H
#define RS_CLI_H

#include <stddef.h>
#include <stdio.h>
#include "ringshard/deflate.h"
#include "ringshard/error.h"
#include "ringshard/metrics.h"
#include "ringshard/pipeline.h"
#include "ringshard/ring.h"
#include "ringshard/stats.h"
#include "ringshard/text.h"

#include "util/opt.h"
#include "util/numparse.h"

/* The ring options as given (cli/optgroups.c): an rs_ring_spec whose
 * --down lists the parser adds up. */
typedef struct {
    const char *scheme, *hash, *seed, *nodes, *nodes_file, *vnodes, *label, *sign, *order, *compat;
    rs_opt_list down;
} rs_cli_ring;

/* The rows every command shares (cli/optgroups.c). */
extern const rs_opt rs_opt_help, rs_opt_quiet, rs_opt_threads, rs_opt_memory, rs_opt_producers, rs_opt_zlib,
    rs_opt_compress, rs_opt_level, rs_opt_direct_io, rs_opt_force, rs_opt_force_any, rs_opt_output_dir,
    rs_opt_metrics;
extern const rs_opt rs_opt_scheme, rs_opt_hash, rs_opt_seed, rs_opt_nodes, rs_opt_nodes_file, rs_opt_vnodes,
    rs_opt_slots, rs_opt_label, rs_opt_sign, rs_opt_order, rs_opt_down, rs_opt_compat;
extern const rs_opt rs_opt_input_operand, rs_opt_key, rs_opt_key_sep, rs_opt_delimiter, rs_opt_header, rs_opt_no_header,
    rs_opt_max_record, rs_opt_on_bad_row, rs_opt_allow_empty, rs_opt_files_from, rs_opt_null;
extern const rs_opt rs_opt_append, rs_opt_on_seen, rs_opt_commit_every;
extern const rs_opt rs_opt_z, rs_opt_capacity, rs_opt_tsv, rs_opt_svg, rs_opt_html;
extern const rs_opt rs_opt_add, rs_opt_add_names, rs_opt_remove, rs_opt_reweight;

/* The groups of rows, for a command's struct T: its rs_cli_ring at R, its
 * rs_pipeline_opts at P, its int quiet at Q, ... */
#define RS_USE(row, T, at) {&(row), offsetof(T, at), NULL, NULL}
#define RS_USE_HELP(row, T, at, text) {&(row), offsetof(T, at), text, NULL}
#define RS_USE_AS(row, T, at, syn, text) {&(row), offsetof(T, at), text, syn}
#define RS_HELP_USE {&rs_opt_help, 0, NULL, NULL}
#define RS_RING_SECTION(T, R)                                                                              \
    {NULL, 22,                                                                                             \
     (const rs_opt_use[]){RS_USE(rs_opt_scheme, T, R), RS_USE(rs_opt_hash, T, R), RS_USE(rs_opt_seed, T, R),     \
                          RS_USE(rs_opt_nodes, T, R), RS_USE(rs_opt_nodes_file, T, R),                     \
                          RS_USE(rs_opt_vnodes, T, R), RS_USE(rs_opt_slots, T, R), RS_USE(rs_opt_label, T, R), \
                          RS_USE(rs_opt_sign, T, R), RS_USE(rs_opt_order, T, R), RS_USE(rs_opt_down, T, R),  \
                          RS_USE(rs_opt_compat, T, R), {NULL, 0, NULL, NULL}},                                   \
     NULL, 0, "Ring options", "the default is the Java/Guava ring: 1000 nodes x 200 vnodes"}
#define RS_INPUT_SECTION(T, P, Q, tail)                                                                    \
    {NULL, 25,                                                                                             \
     (const rs_opt_use[]){{&rs_opt_input_operand, 0, NULL, NULL}, RS_USE(rs_opt_key, T, P), RS_USE(rs_opt_key_sep, T, P), \
                          RS_USE(rs_opt_delimiter, T, P), RS_USE(rs_opt_header, T, P),                     \
                          RS_USE(rs_opt_no_header, T, P), RS_USE(rs_opt_max_record, T, P.dialect.max_record),                 \
                          RS_USE(rs_opt_on_bad_row, T, P), RS_USE(rs_opt_threads, T, P.threads),           \
                          RS_USE(rs_opt_memory, T, P.memory), RS_USE(rs_opt_producers, T, P.producers),    \
                          RS_USE(rs_opt_zlib, T, P.codec), RS_USE(rs_opt_quiet, T, Q),                     \
                          RS_USE(rs_opt_allow_empty, T, P), RS_USE(rs_opt_files_from, T, P),               \
                          RS_USE(rs_opt_null, T, P), {NULL, 0, NULL, NULL}},                                     \
     tail, RS_CLI_GIVEN_INPUT, "Input options", NULL}
#define RS_METRICS_SECTION(T, tail)                                                                        \
    {NULL, 25, (const rs_opt_use[]){{&rs_opt_metrics, 0, NULL, NULL}, {NULL, 0, NULL, NULL}}, tail, 0, "Monitoring", NULL}
#define RS_APPEND_SECTION(T, A)                                                                            \
    {NULL, 25,                                                                                             \
     (const rs_opt_use[]){RS_USE(rs_opt_append, T, A), RS_USE(rs_opt_on_seen, T, A),                      \
                          RS_USE(rs_opt_commit_every, T, A), {NULL, 0, NULL, NULL}},                             \
     "\n", 0, "Append options", "a directory that grows, run after run: docs/bucket.md"}
#define RS_SECTIONS_END {NULL, 0, NULL, NULL, 0, NULL, NULL}

/* A given-mask bit beside RS_GIVEN_* (job_bucket.h): an input option. */
#define RS_CLI_GIVEN_INPUT (1u << 24)

/* Parses argv of command c into args (rs_opt_scan) and says what it
 * found: -1 with *first the first operand's index; else the exit code,
 * after printing --help or the version (0), or the fault as "ringshard
 * CMD: ..." (with a hint at --help when the syntax is at fault), once,
 * on rank 0. */
int rs_cli_parse_options(const rs_opt_command *c, void *args, int argc, char **argv, int *first);

/* The command whose options rs_cli_parse_options reads (for --metrics). */
const char *rs_cli_command_name(void);

/* rs_ring_spec_resolve (ringshard/ring.h) of the recorded options; 1 if
 * any ring option was given (for commands that take the ring from a
 * manifest instead); rs_cli_ring_finish + rs_ring_build. */
int rs_cli_ring_finish(const rs_cli_ring *ro, rs_ring_opts *opts, rs_nodes *nodes, rs_error *err);
int rs_cli_ring_given(const rs_cli_ring *ro);
rs_ring *rs_cli_ring_build(const rs_cli_ring *ro, rs_error *err);

/* rs_cli_ring_build for a run bounded by --memory: a ring whose build
 * would not fit in `memory` (with RS_MEMORY_FIXED) is refused before it is
 * made (RS_EXIT_USAGE, saying how much it needs). */
rs_ring *rs_cli_ring_build_within(const rs_cli_ring *ro, uint64_t memory, rs_error *err);

/* Prints err as "ringshard <cmd>: <msg>" and returns its exit code. */
int rs_cli_fail(const char *cmd, const rs_error *err);

/* Reports an unknown option / missing argument from getopt and returns
 * RS_EXIT_USAGE. */
int rs_cli_usage_error(const char *cmd, const char *msg);

/* What --append, --on-seen and --commit-every asked for (bucket, dedup),
 * and which options that shape the files the command line gave
 * (RS_GIVEN_* of job_bucket.h, the parser's given mask: an append takes
 * the others from DIR). */
typedef struct {
    int append;
    int on_seen;            /* rs_on_seen; -1 until given (RS_CLI_APPEND_INIT) */
    uint64_t commit_every;  /* 0: none */
    int commit_bytes;       /* commit_every is a size */
    int on_seen_given;
    unsigned given;
} rs_cli_append;
#define RS_CLI_APPEND_INIT {.on_seen = -1}

/* Checks the append options once all are in: --on-seen and --commit-every
 * need --append, --append refuses --force; --on-seen not given is skip.
 * 0 or -1 with err. */
int rs_cli_append_finish(rs_cli_append *a, int force, rs_error *err);

/* --files-from LIST (list 1) or --null (list 0), recorded (the inputs:
 * rs_cli_input_finish); 1 if a --files-from was given. */
int rs_cli_files_from_option(int list, const char *arg, rs_error *err);
int rs_cli_files_from_given(void);

/* Takes argv[first..argc) as the inputs (then the --files-from lists'),
 * sets inputs without rows to be refused unless --allow-empty was given,
 * checks the key and the output level, and settles the run
 * (rs_cli_input_settle). Returns quiet, or -1 with err (no inputs, or
 * rs_cluster_file_lists_inputs's errors). */
int rs_cli_input_finish(rs_pipeline_opts *po, int quiet, int argc, char **argv, int first, rs_error *err);

/* For a run whose inputs are a directory's files (verify, plan
 * --from-buckets): decides on the progress line (only on a terminal,
 * never with --quiet) and installs the SIGINT/SIGTERM handlers (they stop
 * the pipeline within the batch in progress). Returns quiet. */
int rs_cli_input_settle(rs_pipeline_opts *po, int quiet);

/* '-' names standard output for every option but those that name a
 * directory: for those (OPT: "-o", "--emit") it would make a directory
 * called "-". Returns -1 when dir is not "-", else RS_EXIT_USAGE, the
 * error printed (saying that `what`, "a bucket directory", cannot go to
 * standard output, and `instead`: how to get its rows there). */
int rs_cli_dir_not_stdout(const char *cmd, const char *opt, const char *dir, const char *what, const char *instead);

/* "-" as the FILE of an output option (option: "--json", as messages
 * name it): *path becomes "/dev/stdout" (written in place, not replaced)
 * and the summaries that go to stdout go to stderr instead
 * (rs_cli_summary). 0, or -1 with err (RS_EXIT_USAGE) when another option
 * took standard output already. Nothing for a path other than "-". */
int rs_cli_stdout_file(const char *option, const char **path, rs_error *err);

/* rs_cli_stdout_file for each (option, &path) pair of the NULL-terminated
 * list. 0, or -1 with err at the first conflict. */
int rs_cli_stdout_files(rs_error *err, ...);

/* Where a command prints its summary or report: stdout, or stderr when an
 * output option writes its FILE to stdout ("-"), so that stdout carries
 * only that data. */
FILE *rs_cli_summary(void);

/* Flushes standard output; a failed write anywhere before is an error
 * too. Returns 0, or -1 with err (RS_EXIT_IO). */
int rs_cli_flush_stdout(rs_error *err);

/* Notes the time the run starts (main, before the command runs): the
 * metrics' start time. */
void rs_cli_metrics_start(void);

/* Records --metrics FILE for command cmd (a static string, the file's
 * command label) and reserves FILE's temporary, so that a FILE that
 * cannot be written stops the run before any work. 0, or -1 with err
 * (RS_EXIT_USAGE: given twice; RS_EXIT_IO: FILE cannot be created). Under
 * MPI only rank 0 reserves and writes. */
int rs_cli_metrics_option(const char *cmd, const char *arg, rs_error *err);

/* The run's metrics for the command to fill in (counts, phases), or NULL
 * when no --metrics was given (or on ranks other than 0). */
rs_metrics *rs_cli_metrics(void);

/* Refuses (RS_EXIT_USAGE, as every side file) a --metrics FILE inside
 * dir, the output directory the command publishes or rewrites: it would
 * be lost with the old directory, or be an entry no manifest names. 0
 * when there is none or it is elsewhere. */
int rs_cli_metrics_refuse_inside(const char *dir, rs_error *err);

/* After the command (main): with --allow-empty, says on stderr (unless
 * quiet) that inputs had no rows ("ringshard CMD: 1 input without rows,
 * allowed by --allow-empty: t.csv") and counts them in the metrics'
 * ringshard_empty_inputs. Nothing when there is none. */
void rs_cli_empty_report(const char *cmd, int quiet);

/* 1 once rs_cli_input_finish saw --quiet, else 0. */
int rs_cli_quiet(void);

/* Fills the metrics' inputs, rows, bytes and rejected rows read from a
 * pipeline's result, and the rows and bytes written from the same when
 * `written` (the output was published: every row read was written);
 * nothing without --metrics. */
void rs_cli_metrics_pipeline(const rs_pipeline_result *res, size_t ninputs, int written);

/* Adds seconds to the metrics' phase `name` (a static string); nothing
 * without --metrics. */
void rs_cli_metrics_phase(const char *name, double seconds);

/* Publishes the metrics file with exit code rc (main, after the command
 * returned), if --metrics was given. Returns rc, or RS_EXIT_IO after
 * printing the error when rc is 0 and the file cannot be written (a failed
 * run keeps its own code). */
int rs_cli_metrics_finish(int rc);

/* The node edits as given to plan and simulate, so that both take them
 * alike: the list options add up when given again; --down is the ring
 * group's. */
typedef struct {
    rs_opt_list remove, reweight, add_names;
    unsigned long long add;
} rs_cli_edits;

#define RS_EDIT_USES(T, E) RS_USE(rs_opt_add, T, E), RS_USE(rs_opt_add_names, T, E), RS_USE(rs_opt_remove, T, E), \
    RS_USE(rs_opt_reweight, T, E)

/* The edits for the job (pointing into ed and down; slots left 0 for
 * the job). */
void rs_cli_edits_fill(const rs_cli_edits *ed, const rs_opt_list *down, rs_node_edits *e);

/* 1 if ed changes the node set (--down aside), else 0. */
int rs_cli_edits_change(const rs_cli_edits *ed);

/* The balance options as given (stats, simulate). */
typedef struct {
    double z;                 /* band half-width in sds */
    double factor;            /* --capacity-factor; NAN: not given */
    int tsv;                  /* the per-node table instead of the summary */
    const char *svg, *html;   /* picture files; NULL: not wanted */
} rs_cli_balance;

/* Defaults: z 3, no capacity factor, the summary, no pictures. */
void rs_cli_balance_defaults(rs_cli_balance *bo);

/* Writes rs_balance_report's pictures to bo->svg (SVG) and bo->html (HTML),
 * those that are set, in that order. Returns 0, or -1 with err at the first
 * file that fails. */
int rs_cli_balance_pictures(const rs_cli_balance *bo, const char *title, const rs_ring *ring, const rs_balance *b,
                            const rs_node_stat *ns, const rs_bounded *bl, const char *unit, rs_error *err);

/* SIGINT, SIGTERM and SIGHUP raise the interrupt flag: a running pipeline
 * stops at its next read, a ring build within 65,536 points, and a file
 * about to be published whole is dropped instead (rs_interrupt_publish_gate):
 * exit 130, nothing published. Every command that writes a file calls it
 * (bucket, dedup, verify, stats, plan with a file or data, simulate with a
 * picture); ring and locate write only to stdout and keep the default
 * action. SIGXFSZ and SIGPIPE are ignored so that a file-size limit or a
 * closed stderr/stdout fails the write (EFBIG, EPIPE) instead of killing
 * the process. */
void rs_cli_install_signals(void);

/* The commands. */
/* name, summary, and whether the command divides its work among MPI ranks
 * (the others run on rank 0 alone when started by mpirun). */
#define RS_COMMAND_TABLE(X)                                                             \
    X(locate, 0, "print each key's position and node")                                  \
    X(ring, 0, "describe a ring: points, collisions, shares, fingerprint")              \
    X(bucket, 1, "split CSV rows into one output per node")                             \
    X(dedup, 1, "keep one row per key, at scale")                                       \
    X(plan, 1, "plan a node-set change: what moves where, with or without data")        \
    X(verify, 0, "prove a bucket or move directory matches its manifest and ring")      \
    X(compact, 0, "merge a bucket directory's appended generations into one file per node") \
    X(repair, 0, "rebuild a damaged bucket directory from its intact generations")     \
    X(cat, 0, "a bucket directory's rows of some nodes, across generations, as one CSV") \
    X(stats, 0, "per-node balance of data or a bucket directory, against theory")       \
    X(simulate, 0, "balance and movement of synthetic keys, vnode sweeps")

/* rs_cmd_NAME runs the command; rs_cmd_NAME_options gives its option
 * table (for --dump-options). */
#define RS_COMMAND_DECL(name, cluster, summary)                                                             \
    int rs_cmd_##name(int argc, char **argv);                                                               \
    const rs_opt_command *rs_cmd_##name##_options(void);
RS_COMMAND_TABLE(RS_COMMAND_DECL)
#undef RS_COMMAND_DECL

#endif
