/* Node edits (--remove, --reweight, --add-names, --add, --down): one
 * implementation for the plan and simulate jobs, so that both accept,
 * refuse and name the same changes alike. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ringshard/nodes.h"

/* The largest number --add counts to: 18 digits fit an unsigned long long
 * with room to add. */
#define ADD_NUMBER_MAX 999999999999999999ULL

/* Per node of the list being edited: what this edit did to it. */
enum { MARK_REMOVED = 1, MARK_REWEIGHTED = 2 };

typedef struct {
    rs_nodes *nodes;         /* the list edited */
    int slots;               /* removing marks down */
    rs_node_edit edit;       /* index of the list as it was, and the nodes dropped */
    uint8_t *mark;           /* [count before the edit] MARK_* */
    uint32_t count0;         /* nodes before the edit */
    rs_node_edit_log *log;
    rs_error *err;
} edit_state;

/* Calls fn on each item of each comma-separated list (empty items, as in
 * "a,,b" or a trailing comma, are skipped). Stops at the first failure. */
static int for_each_item(const char *const *lists, int n, int (*fn)(edit_state *, const char *), edit_state *s)
{
    for (int k = 0; k < n; k++) {
        char *copy = strdup(lists[k]), *save = NULL;
        if (!copy)
            return rs_error_set(s->err, RS_EXIT_IO, "out of memory");
        int rc = 0;
        for (char *item = strtok_r(copy, ",", &save); item && rc == 0; item = strtok_r(NULL, ",", &save))
            rc = fn(s, item);
        free(copy);
        if (rc != 0)
            return -1;
    }
    return 0;
}

/* Appends a copy of name to one of the log's lists (*list of *n). */
static int log_name(char ***list, uint32_t *n, const char *name, rs_error *err)
{
    if ((*n & (*n - 1)) == 0) {   /* 0, 1, 2, 4...: grown to the next power of two */
        char **grown = realloc(*list, (*n ? 2 * (size_t)*n : 1) * sizeof *grown);
        if (!grown)
            return rs_error_set(err, RS_EXIT_IO, "out of memory");
        *list = grown;
    }
    if (!((*list)[*n] = strdup(name)))
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    (*n)++;
    return 0;
}

static int do_remove(edit_state *s, const char *name)
{
    rs_nodes *nodes = s->nodes;
    int64_t i = rs_node_index_find(&s->edit.ix, nodes, name);
    if (i < 0)
        return rs_error_set(s->err, RS_EXIT_USAGE, "--remove: no node '%s'", name);
    if (s->mark[i] & MARK_REMOVED)
        return rs_error_set(s->err, RS_EXIT_USAGE, "--remove: node '%s' is given twice", name);
    if (nodes->down[i])
        return rs_error_set(s->err, RS_EXIT_USAGE,
                            "--remove: node '%s' is down (--down or its node file): it owns nothing to remove", name);
    s->mark[i] |= MARK_REMOVED;
    if (s->slots)   /* the others keep their slots */
        nodes->down[i] = 1;
    else
        rs_node_edit_remove(&s->edit, (uint32_t)i);
    return log_name(&s->log->removed, &s->log->nremoved, name, s->err);
}

static int do_reweight(edit_state *s, const char *item)
{
    rs_nodes *nodes = s->nodes;
    const char *eq = strrchr(item, '=');
    if (!eq || eq == item)
        return rs_error_set(s->err, RS_EXIT_USAGE, "--reweight: expected NAME=WEIGHT, not '%s'", item);
    char name[RS_NODE_NAME_MAX + 1];
    size_t n = (size_t)(eq - item);
    if (n >= sizeof name)
        return rs_error_set(s->err, RS_EXIT_USAGE, "--reweight: node name longer than %d bytes", RS_NODE_NAME_MAX);
    memcpy(name, item, n);
    name[n] = '\0';
    char *end;
    errno = 0;
    double w = strtod(eq + 1, &end);
    if (!eq[1] || *end || errno || !(w > 0) || !isfinite(w))
        return rs_error_set(s->err, RS_EXIT_USAGE, "--reweight: '%s' is not a positive weight", eq + 1);
    int64_t i = rs_node_index_find(&s->edit.ix, nodes, name);
    if (i < 0)
        return rs_error_set(s->err, RS_EXIT_USAGE, "--reweight: no node '%s'", name);
    if (s->mark[i] & MARK_REMOVED)
        return rs_error_set(s->err, RS_EXIT_USAGE,
                            "--reweight: node '%s' is also given to --remove: a node removed has no weight to change",
                            name);
    if (s->mark[i] & MARK_REWEIGHTED)
        return rs_error_set(s->err, RS_EXIT_USAGE, "--reweight: node '%s' is given twice", name);
    s->mark[i] |= MARK_REWEIGHTED;
    nodes->weights[i] = w;
    return log_name(&s->log->reweighted, &s->log->nreweighted, name, s->err);
}

/* --add-names against the list before the edit: a name there either
 * stays (a duplicate) or is removed now (the two cancel). Names given
 * twice are found when they are appended. */
static int check_add_name(edit_state *s, const char *name)
{
    int64_t i = rs_node_index_find(&s->edit.ix, s->nodes, name);
    if (i < 0)
        return 0;
    if (s->mark[i] & MARK_REMOVED)
        return rs_error_set(s->err, RS_EXIT_USAGE,
                            "--add-names: node '%s' is also given to --remove: removing and adding it cancel out", name);
    return rs_error_set(s->err, RS_EXIT_USAGE, "--add-names: node '%s' exists already", name);
}

typedef struct {
    rs_nodes *nodes;
    rs_node_index ix;        /* of the list after the removals */
    rs_node_edit_log *log;
    rs_error *err;
} append_state;

static int append_name(append_state *a, const char *name)
{
    rs_nodes *nodes = a->nodes;
    if (rs_node_index_find(&a->ix, nodes, name) >= 0)   /* check_add_name passed: an added one */
        return rs_error_set(a->err, RS_EXIT_USAGE, "--add-names: node '%s' is given twice", name);
    if (rs_nodes_append_indexed(nodes, &a->ix, name, 1.0, "--add-names", a->err) != 0)
        return -1;
    return log_name(&a->log->added, &a->log->nadded, name, a->err);
}

static int append_names(rs_nodes *nodes, const rs_node_edits *e, rs_node_edit_log *log, rs_error *err)
{
    append_state a = {.nodes = nodes, .log = log, .err = err};
    if (rs_node_index_build(&a.ix, nodes, err) != 0)
        return -1;
    int rc = 0;
    for (int k = 0; k < e->nadd_names && rc == 0; k++) {
        char *copy = strdup(e->add_names[k]), *save = NULL;
        if (!copy) {
            rc = rs_error_set(err, RS_EXIT_IO, "out of memory");
            break;
        }
        for (char *name = strtok_r(copy, ",", &save); name && rc == 0; name = strtok_r(NULL, ",", &save))
            rc = append_name(&a, name);
        free(copy);
    }
    rs_node_index_free(&a.ix);
    return rc;
}

/* The number name carries after prefix (plen bytes): its digits, all the
 * rest of the name, at most 18 of them. 0 and *v, or -1 if it has none. */
static int number_after(const char *name, const char *prefix, size_t plen, unsigned long long *v)
{
    if (strncmp(name, prefix, plen) != 0 || !name[plen])
        return -1;
    const char *p = name + plen;
    while (isdigit((unsigned char)*p))
        p++;
    if (*p || p - (name + plen) > 18)
        return -1;
    *v = strtoull(name + plen, NULL, 10);
    return 0;
}

/* Raises *next past the number of every name of names[0..n) with prefix. */
static void past_numbers(char *const *names, uint32_t n, const char *prefix, size_t plen, unsigned long long *next)
{
    unsigned long long v;
    for (uint32_t i = 0; i < n; i++)
        if (number_after(names[i], prefix, plen, &v) == 0 && v + 1 > *next)
            *next = v + 1;
}

/* --add K: the pattern of `last` (the list's last name before the edit),
 * the numbers after every name used (see rs_node_edits_apply). */
static int add_count(rs_nodes *nodes, const rs_node_edits *e, const char *last, const rs_nodes *ref,
                     rs_node_edit_log *log, rs_error *err)
{
    size_t len = strlen(last), d = len;
    while (d > 0 && isdigit((unsigned char)last[d - 1]))
        d--;
    char prefix[RS_NODE_NAME_MAX + 2];
    int width = 0;
    if (d == len || len - d > 18) {   /* no number to continue: "<last>-1", "<last>-2"... */
        snprintf(prefix, sizeof prefix, "%s-", last);
    } else {
        memcpy(prefix, last, d);
        prefix[d] = '\0';
        if (last[d] == '0' && len - d > 1)   /* "db07": keep the zero padding */
            width = (int)(len - d);
    }
    size_t plen = strlen(prefix);
    unsigned long long next = 1;
    if (ref)
        past_numbers(ref->names, ref->count, prefix, plen, &next);
    past_numbers(nodes->names, nodes->count, prefix, plen, &next);
    past_numbers(log->removed, log->nremoved, prefix, plen, &next);
    if (next > ADD_NUMBER_MAX - e->add)
        return rs_error_set(err, RS_EXIT_USAGE, "--add: the names after '%s%llu' would need more than 18 digits",
                            prefix, next - 1);
    rs_node_index ix;   /* --add 100000: no linear search per name */
    if (rs_node_index_build(&ix, nodes, err) != 0)
        return -1;
    char name[sizeof prefix + 24];
    int rc = 0;
    for (uint32_t k = 0; k < e->add && rc == 0; k++, next++) {
        snprintf(name, sizeof name, "%s%0*llu", prefix, width, next);
        rc = rs_nodes_append_indexed(nodes, &ix, name, 1.0, "--add", err);
        if (rc == 0)
            rc = log_name(&log->added, &log->nadded, name, err);
    }
    rs_node_index_free(&ix);
    return rc;
}

/* The removals and reweights on the list as it was, the removed nodes
 * dropped at the end; names to add checked against it before. */
static int edit_in_place(rs_nodes *nodes, const rs_node_edits *e, rs_node_edit_log *log, rs_error *err)
{
    edit_state s = {.nodes = nodes, .slots = e->slots, .count0 = nodes->count, .log = log, .err = err};
    if (!(s.mark = calloc(s.count0 ? s.count0 : 1, 1)))
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    if (rs_node_edit_begin(&s.edit, nodes, err) != 0) {
        free(s.mark);
        return -1;
    }
    int rc = for_each_item(e->remove, e->nremove, do_remove, &s);
    if (rc == 0)
        rc = for_each_item(e->reweight, e->nreweight, do_reweight, &s);
    if (rc == 0)
        rc = for_each_item(e->add_names, e->nadd_names, check_add_name, &s);
    rs_node_edit_end(&s.edit, rc == 0 ? nodes : NULL);
    free(s.mark);
    return rc;
}

int rs_node_edits_apply(rs_nodes *nodes, const rs_nodes *ref, const rs_node_edits *e, rs_node_edit_log *log,
                        rs_error *err)
{
    memset(log, 0, sizeof *log);
    if (nodes->count == 0)
        return rs_error_set(err, RS_EXIT_USAGE, "no nodes to change");
    char *last = strdup(nodes->names[nodes->count - 1]);   /* --add's pattern, before any removal */
    if (!last)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    int rc = edit_in_place(nodes, e, log, err);
    if (rc == 0)
        rc = append_names(nodes, e, log, err);
    if (rc == 0 && e->add)
        rc = add_count(nodes, e, last, ref, log, err);
    free(last);
    return rc;
}

void rs_node_edit_log_free(rs_node_edit_log *log)
{
    char **lists[] = {log->removed, log->reweighted, log->added};
    uint32_t counts[] = {log->nremoved, log->nreweighted, log->nadded};
    for (int l = 0; l < 3; l++) {
        for (uint32_t k = 0; k < counts[l]; k++)
            free(lists[l][k]);
        free(lists[l]);
    }
    memset(log, 0, sizeof *log);
}

int rs_node_edits_down(const rs_node_edits *e, rs_nodes *a, rs_nodes *b, rs_error *err)
{
    if (!e->ndown)
        return 0;
    rs_node_index ia = {0}, ib = {0};
    uint8_t *seen_a = calloc(a->count ? a->count : 1, 1), *seen_b = calloc(b && b->count ? b->count : 1, 1);
    int rc = !seen_a || !seen_b ? rs_error_set(err, RS_EXIT_IO, "out of memory") : 0;
    if (rc == 0 && (rs_node_index_build(&ia, a, err) != 0 || (b && rs_node_index_build(&ib, b, err) != 0)))
        rc = -1;
    for (int k = 0; k < e->ndown && rc == 0; k++) {
        char *copy = strdup(e->down[k]), *save = NULL;
        if (!copy) {
            rc = rs_error_set(err, RS_EXIT_IO, "out of memory");
            break;
        }
        for (char *name = strtok_r(copy, ",", &save); name && rc == 0; name = strtok_r(NULL, ",", &save)) {
            int64_t i = rs_node_index_find(&ia, a, name), j = b ? rs_node_index_find(&ib, b, name) : -1;
            if (i < 0 && j < 0)
                rc = rs_error_set(err, RS_EXIT_USAGE, "--down: no node '%s'%s", name, b ? " on either side" : "");
            else if ((i >= 0 && seen_a[i]) || (j >= 0 && seen_b[j]))
                rc = rs_error_set(err, RS_EXIT_USAGE, "--down: node '%s' is given twice", name);
            if (rc == 0 && i >= 0)
                a->down[i] = seen_a[i] = 1;
            if (rc == 0 && j >= 0)
                b->down[j] = seen_b[j] = 1;
        }
        free(copy);
    }
    rs_node_index_free(&ia);
    rs_node_index_free(&ib);
    free(seen_a);
    free(seen_b);
    return rc;
}

char *rs_node_names_text(char *buf, size_t cap, const char *const *names, size_t n, size_t total)
{
    enum { TAIL = 32 };   /* " ... (N more)" */
    size_t at = 0, k = 0;
    if (cap < TAIL + 1)
        return cap ? (*buf = '\0', buf) : buf;
    buf[0] = '\0';
    for (; k < n && k < total; k++) {
        size_t len = strlen(names[k]);
        if (at + (k ? 2 : 0) + len + (k + 1 < total ? TAIL : 0) + 1 > cap)
            break;
        at += (size_t)snprintf(buf + at, cap - at, "%s%s", k ? ", " : "", names[k]);
    }
    if (k < total)
        snprintf(buf + at, cap - at, "%s... (%zu more)", k ? " " : "", total - k);
    return buf;
}
