/* The command-line front end: shared option handling for the commands. */
#ifndef RS_CLI_H
#define RS_CLI_H

#include <getopt.h>
#include <stdio.h>
#include "ringshard/error.h"
#include "ringshard/metrics.h"
#include "ringshard/pipeline.h"
#include "ringshard/ring.h"
#include "ringshard/stats.h"

/* Long-option codes of the ring options shared by every command. */
enum {
    RS_OPT_SCHEME = 1000, RS_OPT_HASH, RS_OPT_SEED, RS_OPT_NODES, RS_OPT_NODES_FILE,
    RS_OPT_VNODES, RS_OPT_LABEL, RS_OPT_SIGN, RS_OPT_ORDER, RS_OPT_DOWN, RS_OPT_COMPAT,
    /* node edits of plan and simulate (rs_cli_edits_option) */
    RS_OPT_ADD = 1040, RS_OPT_ADD_NAMES, RS_OPT_REMOVE, RS_OPT_REWEIGHT,
    /* input options (rs_cli_input_option) */
    RS_OPT_KEY = 1050, RS_OPT_KEY_SEP, RS_OPT_DELIMITER, RS_OPT_HEADER, RS_OPT_NO_HEADER,
    RS_OPT_MAX_RECORD, RS_OPT_BAD_ROW, RS_OPT_THREADS, RS_OPT_MEMORY, RS_OPT_ZLIB, RS_OPT_QUIET,
    RS_OPT_FILES_FROM, RS_OPT_NULL, RS_OPT_PRODUCERS, RS_OPT_ALLOW_EMPTY,
    /* output options (rs_cli_output_option) */
    RS_OPT_COMPRESS = 1070, RS_OPT_LEVEL, RS_OPT_DIRECT_IO,
    /* balance options (rs_cli_balance_option) */
    RS_OPT_Z = 1080, RS_OPT_CAPACITY, RS_OPT_TSV, RS_OPT_SVG, RS_OPT_HTML,
    /* append options (rs_cli_append_option) */
    RS_OPT_APPEND = 1090, RS_OPT_ON_SEEN, RS_OPT_COMMIT_EVERY,
    /* --metrics FILE (rs_cli_metrics_option) */
    RS_OPT_METRICS = 1095,
    RS_OPT__FIRST_COMMAND = 1100
};

#define RS_INPUT_LONGOPTS                                                  \
    {"key", required_argument, 0, RS_OPT_KEY},                             \
    {"key-sep", required_argument, 0, RS_OPT_KEY_SEP},                     \
    {"delimiter", required_argument, 0, RS_OPT_DELIMITER},                 \
    {"header", no_argument, 0, RS_OPT_HEADER},                             \
    {"no-header", no_argument, 0, RS_OPT_NO_HEADER},                       \
    {"max-record", required_argument, 0, RS_OPT_MAX_RECORD},               \
    {"on-bad-row", required_argument, 0, RS_OPT_BAD_ROW},                  \
    {"threads", required_argument, 0, RS_OPT_THREADS},                     \
    {"memory", required_argument, 0, RS_OPT_MEMORY},                       \
    {"zlib", no_argument, 0, RS_OPT_ZLIB},                                 \
    {"quiet", no_argument, 0, RS_OPT_QUIET},                               \
    {"files-from", required_argument, 0, RS_OPT_FILES_FROM},               \
    {"null", no_argument, 0, RS_OPT_NULL},                                 \
    {"producers", required_argument, 0, RS_OPT_PRODUCERS},                 \
    {"allow-empty", no_argument, 0, RS_OPT_ALLOW_EMPTY}

#define RS_OUTPUT_LONGOPTS                                                 \
    {"compress", required_argument, 0, RS_OPT_COMPRESS},                   \
    {"level", required_argument, 0, RS_OPT_LEVEL},                         \
    {"direct-io", required_argument, 0, RS_OPT_DIRECT_IO}

#define RS_APPEND_LONGOPTS                                                 \
    {"append", no_argument, 0, RS_OPT_APPEND},                             \
    {"on-seen", required_argument, 0, RS_OPT_ON_SEEN},                     \
    {"commit-every", required_argument, 0, RS_OPT_COMMIT_EVERY}

#define RS_METRICS_LONGOPT {"metrics", required_argument, 0, RS_OPT_METRICS}

#define RS_BALANCE_LONGOPTS                                                \
    {"z", required_argument, 0, RS_OPT_Z},                                 \
    {"capacity-factor", required_argument, 0, RS_OPT_CAPACITY},           \
    {"tsv", no_argument, 0, RS_OPT_TSV},                                   \
    {"svg", required_argument, 0, RS_OPT_SVG},                             \
    {"html", required_argument, 0, RS_OPT_HTML}

#define RS_RING_LONGOPTS                                                   \
    {"scheme", required_argument, 0, RS_OPT_SCHEME},                       \
    {"hash", required_argument, 0, RS_OPT_HASH},                           \
    {"seed", required_argument, 0, RS_OPT_SEED},                           \
    {"nodes", required_argument, 0, RS_OPT_NODES},                         \
    {"nodes-file", required_argument, 0, RS_OPT_NODES_FILE},               \
    {"vnodes", required_argument, 0, RS_OPT_VNODES},                       \
    {"slots", required_argument, 0, RS_OPT_VNODES},                        \
    {"label", required_argument, 0, RS_OPT_LABEL},                         \
    {"sign", required_argument, 0, RS_OPT_SIGN},                           \
    {"order", required_argument, 0, RS_OPT_ORDER},                         \
    {"down", required_argument, 0, RS_OPT_DOWN},                           \
    {"compat", required_argument, 0, RS_OPT_COMPAT}

/* The ring options as given; defaults are applied by rs_cli_ring_finish
 * once the scheme is known, so options may come in any order. */
typedef struct {
    const char *scheme, *hash, *seed, *nodes, *nodes_file, *vnodes, *label, *sign, *order, *down, *compat;
} rs_cli_ring;

/* Help text of the ring options (for every command's --help). */
extern const char rs_cli_ring_help[];

/* Records ring option `code` (an RS_OPT_* below RS_OPT__FIRST_COMMAND).
 * Returns 1 if it was a ring option, 0 if not. */
int rs_cli_ring_option(rs_cli_ring *ro, int code, const char *arg);

/* Builds opts and the node list from the recorded options (default: the
 * ring scheme on 1000 nodes). Returns 0 or -1 with err (RS_EXIT_USAGE for
 * bad values, RS_EXIT_DATA for a bad node file). */
int rs_cli_ring_finish(const rs_cli_ring *ro, rs_ring_opts *opts, rs_nodes *nodes, rs_error *err);

/* 1 if any ring option was given (for commands that take the ring from a
 * manifest instead), else 0. */
int rs_cli_ring_given(const rs_cli_ring *ro);

/* rs_cli_ring_finish + rs_ring_build. */
rs_ring *rs_cli_ring_build(const rs_cli_ring *ro, rs_error *err);

/* rs_cli_ring_build for a run bounded by --memory: a ring whose build
 * would not fit in `memory` (with RS_MEMORY_FIXED) is refused before it is
 * made (RS_EXIT_USAGE, saying how much it needs). */
rs_ring *rs_cli_ring_build_within(const rs_cli_ring *ro, uint64_t memory, rs_error *err);

/* Parses an unsigned integer option value; -1 with RS_EXIT_USAGE naming
 * `what` if it is not a number in [min, max]. */
int rs_cli_uint(const char *what, const char *arg, unsigned long long min, unsigned long long max,
                unsigned long long *out, rs_error *err);

/* Parses a size with an optional K, M, G, T suffix (powers of 1024; "KiB",
 * "MB" forms accepted the same). */
int rs_cli_size(const char *what, const char *arg, unsigned long long *out, rs_error *err);

/* getopt_long for command cmd, quietly (opterr = 0): an unknown option, a
 * missing or unwanted argument is said once as "ringshard CMD: ..." with
 * the nearest long options by edit distance ("did you mean '--key'?") and
 * returns RS_CLI_GETOPT_BAD; --version prints the version and returns
 * RS_CLI_GETOPT_VERSION. Other returns as getopt_long's. The command's
 * `default:` branch returns rs_cli_getopt_exit(c) (cli/args.c). */
int rs_cli_getopt(const char *cmd, int argc, char **argv, const char *shortopts, const struct option *longopts);
enum { RS_CLI_GETOPT_BAD = -2, RS_CLI_GETOPT_VERSION = -3 };

/* The exit code for rs_cli_getopt's RS_CLI_GETOPT_* code: 0 after
 * --version, else RS_EXIT_USAGE (the message is out already). */
int rs_cli_getopt_exit(int code);

/* Edit distance (insert, delete, substitute, swap neighbours: 1 each). */
size_t rs_cli_edit_distance(const char *a, const char *b);

/* 1 if typed is likely a misspelling of name (at most 2 edits, and at
 * most a third of the longer one's length beyond 1), with the distance in
 * *dist; else 0. */
int rs_cli_similar(const char *typed, const char *name, size_t *dist);

/* Prints err as "ringshard <cmd>: <msg>" and returns its exit code. */
int rs_cli_fail(const char *cmd, const rs_error *err);

/* Reports an unknown option / missing argument from getopt and returns
 * RS_EXIT_USAGE. */
int rs_cli_usage_error(const char *cmd, const char *msg);

/* Writes a key to f with the vectors' escapes (\\ \t \n \r). */
void rs_cli_put_escaped(FILE *f, const char *key, size_t len);

/* What --append, --on-seen and --commit-every asked for (bucket, dedup),
 * and which options that shape the files the command line gave
 * (RS_GIVEN_* of job_bucket.h: an append takes the others from DIR). */
typedef struct {
    int append;
    int on_seen;            /* rs_on_seen */
    uint64_t commit_every;  /* 0: none */
    int commit_bytes;       /* commit_every is a size */
    int on_seen_given, commit_given;
    unsigned given;
} rs_cli_append;

/* Help text of the append options. */
extern const char rs_cli_append_help[];

/* Records append option `code`, and notes in a->given the shaping options
 * (and ring options) as they come: call it for every option code. Returns
 * 1 if `code` was an append option, 0 if not, -1 with err (RS_EXIT_USAGE)
 * for a bad value. */
int rs_cli_append_option(rs_cli_append *a, int code, const char *arg, rs_error *err);

/* Checks the append options once all are in: --on-seen and --commit-every
 * need --append, --append refuses --force. 0 or -1 with err. */
int rs_cli_append_finish(const rs_cli_append *a, int force, rs_error *err);

/* Says on stderr that DIR could be compacted when it holds more than
 * RS_GEN_COMPACT_HINT generations (after an append). */
void rs_cli_compact_hint(const char *cmd, const char *dir, uint64_t generations, uint64_t files);

/* Help text of the input options. */
extern const char rs_cli_input_help[];

/* Defaults of the input options: comma, header, key column 1, key-sep '|',
 * 1 GiB memory, gzip level 1 output. */
void rs_cli_input_defaults(rs_pipeline_opts *po);

/* Records input option `code` ('j' or an RS_OPT_* input code). Returns 1
 * if handled, 0 if not an input option, -1 with err on a bad value. */
int rs_cli_input_option(rs_pipeline_opts *po, int code, const char *arg, rs_error *err);

/* Records --files-from LIST (several allowed, at most one "-") and --null
 * (cli/filesfrom.c). Returns 1 if `code` is one of them, 0 if not, -1 with
 * err (RS_EXIT_USAGE: "-" twice). */
int rs_cli_files_from_option(int code, const char *arg, rs_error *err);

/* 1 if a --files-from was given (commands that take no INPUT refuse it). */
int rs_cli_files_from_given(void);

/* The inputs: args[0..nargs), then every list's entries, lists in option
 * order; *inputs stays valid until exit. Collective under MPI (rank 0 reads
 * the lists and sends them to the others, and checks the files). Returns 0,
 * or -1 with err naming the list and its line: RS_EXIT_USAGE for an empty
 * line or entry, a CR at a line's end, a NUL in a line, '-' both as the list
 * and as an input, a file given twice (by any name: st_dev and st_ino) where
 * the second is a list's; RS_EXIT_IO for a list or a listed file that cannot
 * be opened, or a directory. */
int rs_cli_files_from_inputs(char **args, size_t nargs, const char *const **inputs, size_t *ninputs,
                             rs_error *err);

/* Takes argv[first..argc) as the inputs (then the --files-from lists'),
 * sets inputs without rows to be refused unless --allow-empty was given
 * (first > 0: the user's inputs, not a stand-in), decides on the progress line
 * (only on a terminal, never with --quiet) and installs the SIGINT/SIGTERM
 * handlers (they stop the pipeline within the batch in progress) and ignores SIGXFSZ.
 * Returns 1 if --quiet was given, 0 if not, -1 with err (no inputs, or
 * rs_cli_files_from_inputs's errors). */
int rs_cli_input_finish(rs_pipeline_opts *po, int argc, char **argv, int first, rs_error *err);

/* Parses a --compress value (gzip, zstd or none) into *compress
 * (RS_COMPRESS_*). 0, or -1 with err (RS_EXIT_USAGE: another word, or zstd
 * in a build without libzstd). `what` names the option in messages. */
int rs_cli_compress_arg(const char *what, const char *arg, int *compress, rs_error *err);

/* Parses a --level value: an integer in the union of the gzip and zstd
 * ranges (RS_ZSTD_LEVEL_MIN to RS_ZSTD_LEVEL_MAX); rs_cli_level_check
 * then checks it against the codec. 0, or -1 with err (RS_EXIT_USAGE). */
int rs_cli_level_arg(const char *what, const char *arg, int *level, rs_error *err);

/* Checks level against compress once all options are parsed: gzip (and
 * none) 1-9, zstd any of its levels but 0. 0, or -1 with err (RS_EXIT_USAGE). */
int rs_cli_level_check(const char *what, int compress, int level, rs_error *err);

/* Records output option `code` (RS_OPT_COMPRESS: gzip|zstd|none;
 * RS_OPT_LEVEL: a level, checked by rs_cli_input_finish; RS_OPT_DIRECT_IO:
 * on|off) into po. Returns 1 if handled, 0 if not an output option,
 * -1 after printing a bad value as command `cmd`'s error (the command then
 * exits RS_EXIT_USAGE). */
int rs_cli_output_option(const char *cmd, rs_pipeline_opts *po, int code, const char *arg);

/* Refuses (RS_EXIT_USAGE) a file that a run writes beside its output
 * directory (a quarantine file, a report) when it lies inside outdir or
 * below: publishing replaces outdir, so the file would be lost. Compared by
 * real paths: the file's directory (an existing file's own real path, so a
 * symbolic link into outdir counts) against outdir's (its parent's plus its
 * name while it does not exist), so "./", "..", relative and linked forms
 * are caught. what is the option as the message shows it ("--duplicates ").
 * path or outdir NULL, or path "-": nothing to check. 0 or -1 with err. */
int rs_cli_outside_output(const char *what, const char *path, const char *outdir, rs_error *err);

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

/* Help text of --metrics (cli/metricsopt.c), for the --help of every
 * command that takes it. */
extern const char rs_cli_metrics_help[];

/* Notes the time the run starts (main, before the command runs): the
 * metrics' start time. */
void rs_cli_metrics_start(void);

/* Records --metrics FILE (RS_OPT_METRICS) for command cmd (a static
 * string, the file's command label) and reserves FILE's temporary, so that
 * a FILE that cannot be written stops the run before any work. Returns 1
 * if code is RS_OPT_METRICS, 0 if not, -1 with err (RS_EXIT_USAGE: given
 * twice; RS_EXIT_IO: FILE cannot be created). Under MPI only rank 0
 * reserves and writes. */
int rs_cli_metrics_option(const char *cmd, int code, const char *arg, rs_error *err);

/* The run's metrics for the command to fill in (counts, phases), or NULL
 * when no --metrics was given (or on ranks other than 0). */
rs_metrics *rs_cli_metrics(void);

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
 * alike: the list options may each be given up to RS_CLI_MAX_EDIT_LISTS
 * times and their lists add up; --add K is one number (the last given). */
#define RS_CLI_MAX_EDIT_LISTS 256
typedef struct {
    const char *remove[RS_CLI_MAX_EDIT_LISTS], *reweight[RS_CLI_MAX_EDIT_LISTS],
        *add_names[RS_CLI_MAX_EDIT_LISTS], *down[RS_CLI_MAX_EDIT_LISTS];
    int nremove, nreweight, nadd_names, ndown;
    unsigned long long add;
} rs_cli_edits;

#define RS_EDIT_LONGOPTS                                                   \
    {"add", required_argument, 0, RS_OPT_ADD},                             \
    {"add-names", required_argument, 0, RS_OPT_ADD_NAMES},                 \
    {"remove", required_argument, 0, RS_OPT_REMOVE},                       \
    {"reweight", required_argument, 0, RS_OPT_REWEIGHT}

/* Records edit option `code` (RS_OPT_ADD, RS_OPT_ADD_NAMES, RS_OPT_REMOVE,
 * RS_OPT_REWEIGHT, and the ring option RS_OPT_DOWN, taken here so that it
 * adds up too). Returns 1 if handled, 0 if not an edit option, -1 with
 * err (RS_EXIT_USAGE: --add out of [1, 10000000], a list option given
 * more than RS_CLI_MAX_EDIT_LISTS times). */
int rs_cli_edits_option(rs_cli_edits *ed, int code, const char *arg, rs_error *err);

/* The edits for the job (pointing into ed; slots left 0 for the job). */
void rs_cli_edits_fill(const rs_cli_edits *ed, rs_node_edits *e);

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

/* Records balance option `code` (RS_OPT_Z, RS_OPT_CAPACITY, RS_OPT_TSV,
 * RS_OPT_SVG, RS_OPT_HTML). Returns 1 if handled, 0 if not a balance option,
 * -1 with err (RS_EXIT_USAGE) when z is not positive or the factor is not
 * a number >= 1. */
int rs_cli_balance_option(rs_cli_balance *bo, int code, const char *arg, rs_error *err);

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

#define RS_COMMAND_DECL(name, cluster, summary) int rs_cmd_##name(int argc, char **argv);
RS_COMMAND_TABLE(RS_COMMAND_DECL)
#undef RS_COMMAND_DECL

#endif
