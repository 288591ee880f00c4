/* The command-line front end: shared option handling for the commands. */
#ifndef RS_CLI_H
#define RS_CLI_H

#include <getopt.h>
#include <stdio.h>
#include "ringshard/error.h"
#include "ringshard/ring.h"

/* Long-option codes of the ring options shared by every command. */
enum {
    RS_OPT_SCHEME = 1000, RS_OPT_HASH, RS_OPT_SEED, RS_OPT_NODES, RS_OPT_NODES_FILE,
    RS_OPT_VNODES, RS_OPT_LABEL, RS_OPT_SIGN, RS_OPT_ORDER, RS_OPT_DOWN,
    RS_OPT__FIRST_COMMAND = 1100
};

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

/* Writes a key to f with the vectors' escapes (\\ \t \n \r). */
void rs_cli_put_escaped(FILE *f, const char *key, size_t len);

/* The commands. */
#define RS_COMMAND_TABLE(X)                                                          \
    X(locate, "print each key's position and node")                                  \
    X(ring, "describe a ring: points, collisions, shares, fingerprint")

#define RS_COMMAND_DECL(name, summary) int rs_cmd_##name(int argc, char **argv);
RS_COMMAND_TABLE(RS_COMMAND_DECL)
#undef RS_COMMAND_DECL

#endif
