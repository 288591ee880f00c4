/* The command-line front end: shared option handling for the commands. */
#ifndef RS_CLI_H
#define RS_CLI_H

#include <getopt.h>
#include <stdio.h>
#include "ringshard/error.h"
#include "ringshard/pipeline.h"
#include "ringshard/ring.h"

/* Long-option codes of the ring options shared by every command. */
enum {
    RS_OPT_SCHEME = 1000, RS_OPT_HASH, RS_OPT_SEED, RS_OPT_NODES, RS_OPT_NODES_FILE,
    RS_OPT_VNODES, RS_OPT_LABEL, RS_OPT_SIGN, RS_OPT_ORDER, RS_OPT_DOWN,
    /* input options (rs_cli_input_option) */
    RS_OPT_KEY = 1050, RS_OPT_KEY_SEP, RS_OPT_DELIMITER, RS_OPT_HEADER, RS_OPT_NO_HEADER,
    RS_OPT_MAX_RECORD, RS_OPT_BAD_ROW, RS_OPT_THREADS, RS_OPT_MEMORY, RS_OPT_ZLIB, RS_OPT_QUIET,
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
    {"quiet", no_argument, 0, RS_OPT_QUIET}

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
    {"down", required_argument, 0, RS_OPT_DOWN}

/* The ring options as given; defaults are applied by rs_cli_ring_finish
 * once the scheme is known, so options may come in any order. */
typedef struct {
    const char *scheme, *hash, *seed, *nodes, *nodes_file, *vnodes, *label, *sign, *order, *down;
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

/* rs_cli_ring_finish + rs_ring_build. */
rs_ring *rs_cli_ring_build(const rs_cli_ring *ro, rs_error *err);

/* Parses an unsigned integer option value; -1 with RS_EXIT_USAGE naming
 * `what` if it is not a number in [min, max]. */
int rs_cli_uint(const char *what, const char *arg, unsigned long long min, unsigned long long max,
                unsigned long long *out, rs_error *err);

/* Parses a size with an optional K, M, G, T suffix (powers of 1024; "KiB",
 * "MB" forms accepted the same). */
int rs_cli_size(const char *what, const char *arg, unsigned long long *out, rs_error *err);

/* Prints err as "ringshard: <cmd>: <msg>" and returns its exit code. */
int rs_cli_fail(const char *cmd, const rs_error *err);

/* Reports an unknown option / missing argument from getopt and returns
 * RS_EXIT_USAGE. */
int rs_cli_usage_error(const char *cmd, const char *msg);

/* Monotonic seconds, for timings in summaries. */
double rs_cli_now(void);

/* Writes a key to f with the vectors' escapes (\\ \t \n \r). */
void rs_cli_put_escaped(FILE *f, const char *key, size_t len);

/* Help text of the input options. */
extern const char rs_cli_input_help[];

/* Defaults of the input options: comma, header, key column 1, key-sep '|',
 * 1 GiB memory, gzip level 1 output. */
void rs_cli_input_defaults(rs_pipeline_opts *po);

/* Records input option `code` ('j' or an RS_OPT_* input code). Returns 1
 * if handled, 0 if not an input option, -1 with err on a bad value. */
int rs_cli_input_option(rs_pipeline_opts *po, int code, const char *arg, rs_error *err);

/* Takes argv[first..argc) as the inputs, decides on the progress line
 * (only on a terminal, never with --quiet) and installs the SIGINT/SIGTERM
 * handlers (they stop the pipeline at the next batch) and ignores SIGXFSZ.
 * Returns 1 if --quiet was given, 0 if not, -1 with err (no inputs). */
int rs_cli_input_finish(rs_pipeline_opts *po, int argc, char **argv, int first, rs_error *err);

/* The commands. */
#define RS_COMMAND_TABLE(X)                                                          \
    X(locate, "print each key's position and node")                                  \
    X(ring, "describe a ring: points, collisions, shares, fingerprint")              \
    X(bucket, "split CSV rows into one output per node")                           \
    X(plan, "plan a node-set change: what moves where, with or without data")      \
    X(verify, "prove a bucket or move directory matches its manifest and ring")    \
    X(stats, "per-node balance of data or a bucket directory, against theory")     \
    X(simulate, "balance and movement of synthetic keys, vnode sweeps")

#define RS_COMMAND_DECL(name, summary) int rs_cmd_##name(int argc, char **argv);
RS_COMMAND_TABLE(RS_COMMAND_DECL)
#undef RS_COMMAND_DECL

#endif
