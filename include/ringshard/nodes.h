/* ringshard/nodes.h - node lists: the names (and weights) a ring is built on.
 *
 * A node list is ordered: the order decides collision winners on the ring
 * (the later node wins, as Java's TreeMap.put) and the order of outputs. */
#ifndef RINGSHARD_NODES_H
#define RINGSHARD_NODES_H

#include <stddef.h>
#include <stdint.h>
#include "ringshard/error.h"

/* The longest node name, in bytes: a name is a host, a host:port or a
 * label a person chose, and its virtual-node labels (the name and an
 * index, through --label) must fit the ring builder's 4096-byte buffer. */
#define RS_NODE_NAME_MAX 1024

/* The longest line of a node list file (a name, its weight, "down" and a
 * comment): a longer one is a bad node list (RS_EXIT_DATA), found while the
 * file is read, so that memory stays bounded whatever the file holds. */
#define RS_NODES_LINE_MAX 65536

typedef struct {
    uint32_t count;
    uint32_t cap;
    char **names;     /* NUL-terminated, non-empty, no control characters */
    double *weights;  /* > 0; 1 unless the node file says otherwise */
    uint8_t *down;    /* 1: listed but down - owns no points. For slots this
                         keeps the deal of the others (the Java slots'
                         dropBadNode); for ring and ketama it equals
                         removing the node. */
    uint8_t *alias;   /* 1: the name is a label prefix chosen by hand (a
                         twemproxy server's NAME), hashed as written: it
                         is not read as host:port. Only a node file's
                         server line (rs_nodes_syntax.server_lines) or a
                         ring description sets it. */
} rs_nodes;

/* What a node file's lines may hold beyond `name [weight] [down]`, and
 * what they must not, for one ring (a client preset's rules, from
 * rs_compat_syntax in ringshard/ring.h): checked line by line so that a
 * message names the file and the line. All zero: the plain rules. */
typedef struct {
    const char *client;   /* the preset's name, for messages */
    double weight_max;    /* > 0: weights are integers of at most this */
    int host_port;        /* names are read as host:port (the port the
                             digits after the last ':'): an IPv6 host
                             without its port, which that reading would
                             split inside the address, is refused */
    int server_lines;     /* twemproxy's `host:port:weight NAME` server
                             line (optionally after nutcracker's "- "):
                             the node is NAME, an alias (rs_nodes.alias),
                             weight the line's */
} rs_nodes_syntax;

/* Makes the list "0", "1", ..., "n-1" with weight 1. n must be >= 1.
 * Returns 0, or -1 (RS_EXIT_USAGE for n == 0, RS_EXIT_IO out of memory). */
int rs_nodes_init_count(rs_nodes *nodes, uint32_t n, rs_error *err);

/* Parses a node file's text: one node a line, `name [weight] [down]`,
 * separated by spaces or tabs; `#` starts a comment; blank lines are ignored; CRLF is
 * accepted. A name in double quotes may hold spaces, tabs and `#`, with `""`
 * for a literal quote (`"node a" 2 down`); an unquoted name is everything up
 * to the first blank (a quote inside it is literal). An unterminated quote,
 * or a character other than a blank or `#` right after the closing quote,
 * is an error. A duplicate name, a name with control characters or longer
 * than RS_NODE_NAME_MAX bytes, a non-positive or malformed weight, or no
 * node at all is an error naming `origin` and the line (RS_EXIT_DATA). */
int rs_nodes_parse(rs_nodes *nodes, const char *text, size_t len, const char *origin,
                   rs_error *err);

/* rs_nodes_parse with syn's rules on top (NULL: none); a line breaking one
 * is an error naming origin and the line (RS_EXIT_DATA). */
int rs_nodes_parse_syntax(rs_nodes *nodes, const char *text, size_t len, const char *origin,
                          const rs_nodes_syntax *syn, rs_error *err);

/* Reads and parses a node file (see rs_nodes_parse); a line longer than
 * RS_NODES_LINE_MAX stops the read (RS_EXIT_DATA, naming the file and line). */
int rs_nodes_load(rs_nodes *nodes, const char *path, rs_error *err);

/* rs_nodes_load with syn's rules (see rs_nodes_parse_syntax). */
int rs_nodes_load_syntax(rs_nodes *nodes, const char *path, const rs_nodes_syntax *syn, rs_error *err);

/* Appends a node. Checks the name as rs_nodes_parse does (duplicates too).
 * `what` names the source for messages (e.g. "--add-names"). */
int rs_nodes_append(rs_nodes *nodes, const char *name, double weight, const char *what,
                    rs_error *err);

/* Removes the node `name`, keeping the order of the others. Returns -1 with
 * RS_EXIT_USAGE if there is no such node. */
int rs_nodes_remove(rs_nodes *nodes, const char *name, rs_error *err);

/* Marks the node `name` down (see rs_nodes.down). RS_EXIT_USAGE if absent. */
int rs_nodes_set_down(rs_nodes *nodes, const char *name, rs_error *err);

/* Index of `name`, or -1. Linear: a loop of these is quadratic in the
 * node count; a caller with many names to look up uses rs_node_index. */
int64_t rs_nodes_find(const rs_nodes *nodes, const char *name);

/* A name -> position lookup over a node list, for callers that look up a
 * name per file of a directory or per line of a ring description (50,000
 * nodes and more): a hash table of positions, the names read from the
 * list. The list must outlive the index and change only through
 * rs_nodes_append_indexed while the index is in use. */
typedef struct {
    uint32_t *slot;   /* position + 1, 0 when empty; a power of two slots, at least twice the entries */
    uint32_t mask;    /* slots - 1 */
    uint32_t used;    /* entries */
} rs_node_index;

/* Indexes every node of nodes (of a name given twice, the first, as
 * rs_nodes_find finds it). Returns 0, or -1 with err (RS_EXIT_IO) when out
 * of memory (ix is then empty: freeing it is fine). */
int rs_node_index_build(rs_node_index *ix, const rs_nodes *nodes, rs_error *err);

/* Position of `name` in nodes, the list ix was built on: what
 * rs_nodes_find returns, in a few comparisons whatever the node count. */
int64_t rs_node_index_find(const rs_node_index *ix, const rs_nodes *nodes, const char *name);

/* rs_nodes_append (same checks and messages) with the duplicate check made
 * by ix, an index of nodes, which then indexes the new node too. */
int rs_nodes_append_indexed(rs_nodes *nodes, rs_node_index *ix, const char *name, double weight, const char *what,
                            rs_error *err);

/* Frees the index (a zeroed one is fine). */
void rs_node_index_free(rs_node_index *ix);

/* Many names removed from a list at once (--remove, --down, --reweight of
 * thousands of nodes): one index over the list, removals only marked, and
 * the list closed up once at the end, where rs_nodes_remove for each name
 * searches and moves the whole list every time. */
typedef struct {
    rs_node_index ix;
    uint8_t *gone;    /* per node of the list: removed in this edit */
} rs_node_edit;

/* Starts an edit of nodes. 0, or -1 with err (RS_EXIT_IO). */
int rs_node_edit_begin(rs_node_edit *e, const rs_nodes *nodes, rs_error *err);

/* Position of `name` among the nodes the edit has not removed, or -1. */
int64_t rs_node_edit_find(const rs_node_edit *e, const rs_nodes *nodes, const char *name);

/* Marks node i removed (dropped by rs_node_edit_end). */
void rs_node_edit_remove(rs_node_edit *e, uint32_t i);

/* Drops the removed nodes, keeping the others' order (what rs_nodes_remove
 * of each would leave), and frees the edit's memory. With nodes NULL, only
 * frees it (an edit given up). */
void rs_node_edit_end(rs_node_edit *e, rs_nodes *nodes);

/* Test hook: the node names compared so far in this process by
 * rs_nodes_find, rs_nodes_append and the index. A test runs a command on N
 * nodes and checks the count grows with N, not N squared: no timing. */
uint64_t rs_nodes_comparisons(void);

/* Deep copy of src into dst (dst is overwritten, not freed). */
int rs_nodes_copy(rs_nodes *dst, const rs_nodes *src, rs_error *err);

/* Frees the list (a zeroed list is fine). */
void rs_nodes_free(rs_nodes *nodes);

/* One command's changes to a node list (plan's new side, simulate's
 * changed ring). Each list is one option's value as given: names (or
 * NAME=WEIGHT items) separated by commas, empty items skipped; an option
 * given again brings another list, and the lists add up. */
typedef struct {
    const char *const *remove;      /* names */
    const char *const *reweight;    /* NAME=WEIGHT items */
    const char *const *add_names;   /* names */
    const char *const *down;        /* names (rs_node_edits_down) */
    int nremove, nreweight, nadd_names, ndown;
    uint32_t add;                   /* --add K: K new names (rs_node_edits_apply) */
    int slots;                      /* a removed node stays, marked down, so that the others keep their slots */
} rs_node_edits;

/* What rs_node_edits_apply did: the names removed, reweighted and added,
 * in the order given (copies, owned by the log). */
typedef struct {
    char **removed, **reweighted, **added;
    uint32_t nremoved, nreweighted, nadded;
} rs_node_edit_log;

/* Applies e's remove, reweight, add_names and add, in this order, to
 * nodes; ref is the list the change starts from when nodes is another one
 * (plan's old side against an explicit new side; NULL: nodes itself).
 *
 * A removed node is dropped (e->slots: marked down). A node --add K
 * creates is named after the last node of nodes as it was before the
 * change: its trailing number (at most 18 digits; zero padding kept)
 * continues after the largest number any name with the same prefix
 * carries in ref, in nodes or among the names removed now, so that a new
 * name is never one of the old ring's, nor one removed in the same
 * command ("999" -> "1000"..., "db07" -> "db08"...); a last name without
 * such a number gets "<name>-1", "<name>-2"..., after the largest
 * "<name>-N" used. A node set of unrelated names (a node file of hosts)
 * thus grows as "<its last host>-1"...
 *
 * Refused with RS_EXIT_USAGE, err naming the option and the node (nodes
 * is then half edited: the caller drops it): a name that is not there; a node removed that is down
 * already; a name removed, reweighted or added twice (in one list or in
 * two); a node both removed and reweighted, or removed and added back by
 * add_names (the edit cancels itself); add_names of a node that stays; a
 * malformed NAME=WEIGHT or a weight that is not positive; rs_nodes_append's
 * checks of a new name. RS_EXIT_IO when out of memory. Lookups go through
 * one index: thousands of names cost what thousands of lookups do.
 * *log is filled (free it with rs_node_edit_log_free, either way). */
int rs_node_edits_apply(rs_nodes *nodes, const rs_nodes *ref, const rs_node_edits *e, rs_node_edit_log *log,
                        rs_error *err);

/* Frees what the log holds (a zeroed log is fine). */
void rs_node_edit_log_free(rs_node_edit_log *log);

/* Marks e's down names down in a and, when b is not NULL, in b (plan: the
 * old and the new side), wherever each is listed. A name in neither, or
 * given twice, is refused (RS_EXIT_USAGE). 0, or -1 with err. */
int rs_node_edits_down(const rs_node_edits *e, rs_nodes *a, rs_nodes *b, rs_error *err);

/* Writes the first names of a list of `total`, names[0..n) (n <= total),
 * as "a, b, c" into buf (cap bytes, NUL-terminated), as many of them as
 * fit, the rest counted: "a, b ... (998 more)". Returns buf. For
 * summaries of thousands of nodes: the caller passes only those it shows. */
char *rs_node_names_text(char *buf, size_t cap, const char *const *names, size_t n, size_t total);

#endif
