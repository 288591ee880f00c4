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
    rs_node_edit_log *log;
    rs_error *err;
} edit_state;

/* Calls fn on each item of each comma-separated list (empty items, as in
 * "a,,b" or a trailing comma, are skipped). Stops at the first failure. */
static int for_each_item(const char *const *lists, int n, int (*fn)(void *, const char *), void *ctx,
                         rs_error *err)
{
    for (int k = 0; k < n; k++) {
        char *copy = strdup(lists[k]), *save = NULL;
        if (!copy)
            return rs_error_set(err, RS_EXIT_IO, "out of memory");
        int rc = 0;
        for (char *item = strtok_r(copy, ",", &save); item && rc == 0; item = strtok_r(NULL, ",", &save))
            rc = fn(ctx, item);
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

static int do_remove(void *ctx, const char *name)
{
    edit_state *s = ctx;
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

static int do_reweight(void *ctx, const char *item)
{
    edit_state *s = ctx;
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
static int check_add_name(void *ctx, const char *name)
{
    edit_state *s = ctx;
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

static int append_name(void *ctx, const char *name)
{
    append_state *a = ctx;
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
    int rc = for_each_item(e->add_names, e->nadd_names, append_name, &a, err);
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
    edit_state s = {.nodes = nodes, .slots = e->slots, .log = log, .err = err};
    if (!(s.mark = calloc(nodes->count ? nodes->count : 1, 1)))
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    if (rs_node_edit_begin(&s.edit, nodes, err) != 0) {
        free(s.mark);
        return -1;
    }
    int rc = for_each_item(e->remove, e->nremove, do_remove, &s, err);
    if (rc == 0)
        rc = for_each_item(e->reweight, e->nreweight, do_reweight, &s, err);
    if (rc == 0)
        rc = for_each_item(e->add_names, e->nadd_names, check_add_name, &s, err);
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

typedef struct {
    rs_nodes *side[2];       /* side[1]: NULL for one list */
    rs_node_index ix[2];
    uint8_t *seen[2];        /* per node: named by --down already */
    rs_error *err;
} down_state;

static int do_down(void *ctx, const char *name)
{
    down_state *d = ctx;
    int64_t at[2] = {-1, -1};
    for (int s = 0; s < 2 && d->side[s]; s++)
        at[s] = rs_node_index_find(&d->ix[s], d->side[s], name);
    if (at[0] < 0 && at[1] < 0)
        return rs_error_set(d->err, RS_EXIT_USAGE, "--down: no node '%s'%s", name, d->side[1] ? " on either side" : "");
    for (int s = 0; s < 2; s++)
        if (at[s] >= 0 && d->seen[s][at[s]])
            return rs_error_set(d->err, RS_EXIT_USAGE, "--down: node '%s' is given twice", name);
    for (int s = 0; s < 2; s++)
        if (at[s] >= 0)
            d->side[s]->down[at[s]] = d->seen[s][at[s]] = 1;
    return 0;
}

int rs_node_edits_down(const rs_node_edits *e, rs_nodes *a, rs_nodes *b, rs_error *err)
{
    if (!e->ndown)
        return 0;
    down_state d = {.side = {a, b}, .err = err};
    int rc = 0;
    for (int s = 0; s < 2 && d.side[s] && rc == 0; s++) {
        if (!(d.seen[s] = calloc(d.side[s]->count ? d.side[s]->count : 1, 1)))
            rc = rs_error_set(err, RS_EXIT_IO, "out of memory");
        else
            rc = rs_node_index_build(&d.ix[s], d.side[s], err);
    }
    if (rc == 0)
        rc = for_each_item(e->down, e->ndown, do_down, &d, err);
    for (int s = 0; s < 2; s++) {
        rs_node_index_free(&d.ix[s]);
        free(d.seen[s]);
    }
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
