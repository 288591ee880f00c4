/* Node lists: construction, the node-file parser, edits. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ringshard/text.h"
#include "ringshard/nodes.h"

static int grow(rs_nodes *n, rs_error *err)
{
    if (n->count < n->cap)
        return 0;
    uint32_t cap = n->cap ? n->cap * 2 : 16;
    char **names = realloc(n->names, cap * sizeof *names);
    if (names)
        n->names = names;
    double *w = realloc(n->weights, cap * sizeof *w);
    if (w)
        n->weights = w;
    uint8_t *d = realloc(n->down, cap * sizeof *d);
    if (d)
        n->down = d;
    uint8_t *a = realloc(n->alias, cap * sizeof *a);
    if (a)
        n->alias = a;
    if (!names || !w || !d || !a)
        return rs_error_set(err, RS_EXIT_IO, "out of memory for the node list");
    n->cap = cap;
    return 0;
}

/* A name must be printable: control characters would break node files,
 * descriptions and messages. Non-ASCII UTF-8 is fine, and so is a tab
 * (written in a node file inside a quoted name). Its length is bounded
 * (RS_NODE_NAME_MAX) so that its labels fit the ring builder. The problem
 * in words goes to why[cap]. */
static const char *name_problem(const char *name, char *why, size_t cap)
{
    if (*name == '\0')
        return "empty node name";
    const unsigned char *p = (const unsigned char *)name;
    for (; *p; p++)
        if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
            return "control character in node name";
    size_t len = (size_t)(p - (const unsigned char *)name);
    if (len > RS_NODE_NAME_MAX) {
        int shown = 40;   /* the name's start, whole UTF-8 characters */
        while (shown > 0 && ((unsigned char)name[shown] & 0xC0) == 0x80)
            shown--;
        snprintf(why, cap, "node name '%.*s...' is %zu bytes long, more than the limit of %d bytes", shown, name,
                 len, RS_NODE_NAME_MAX);
        return why;
    }
    return NULL;
}

/* A quoted name at line[0] == '"': "" is a literal quote. Undoubles it in
 * place (the name starts at line + 1 and is NUL-terminated) and returns the
 * rest of the line after the closing quote, or NULL if the quote is not
 * closed. */
static char *unquote(char *line)
{
    char *r = line + 1, *w = line + 1;
    for (;;) {
        if (*r == '\0')
            return NULL;
        if (*r == '"') {
            if (r[1] != '"') {
                *w = '\0';
                return r + 1;
            }
            r++;
        }
        *w++ = *r++;
    }
}

static uint64_t comparisons;   /* rs_nodes_comparisons */

static void count_comparisons(uint64_t n) { __atomic_fetch_add(&comparisons, n, __ATOMIC_RELAXED); }

uint64_t rs_nodes_comparisons(void) { return __atomic_load_n(&comparisons, __ATOMIC_RELAXED); }

int64_t rs_nodes_find(const rs_nodes *n, const char *name)
{
    uint32_t i = 0;
    while (i < n->count && strcmp(n->names[i], name) != 0)
        i++;
    count_comparisons(i + (i < n->count));
    return i < n->count ? (int64_t)i : -1;
}

/* FNV-1a, 64 bits: node names are short and few hash alike. */
static uint64_t name_hash(const char *name)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 0x100000001b3ULL;
    return h;
}

/* The slot of name in ix: where it is, or the empty slot where it goes. */
static uint32_t index_slot(const rs_node_index *ix, const rs_nodes *nodes, const char *name)
{
    uint32_t s = (uint32_t)name_hash(name) & ix->mask, compared = 0;
    while (ix->slot[s] && (compared++, strcmp(nodes->names[ix->slot[s] - 1], name) != 0))
        s = (s + 1) & ix->mask;
    count_comparisons(compared);
    return s;
}

/* Room for one more entry: the table is kept at most half full, so that
 * probe runs stay short. */
static int index_reserve(rs_node_index *ix, const rs_nodes *nodes, rs_error *err)
{
    if (ix->slot && 2 * ((uint64_t)ix->used + 1) <= (uint64_t)ix->mask + 1)
        return 0;
    uint64_t size = ix->slot ? 2 * ((uint64_t)ix->mask + 1) : 64;
    while (size < 2 * ((uint64_t)ix->used + 1))
        size *= 2;
    if (size > (uint64_t)UINT32_MAX + 1)
        return rs_error_set(err, RS_EXIT_IO, "out of memory for the node index");
    rs_node_index grown = {calloc(size, sizeof *grown.slot), (uint32_t)(size - 1), ix->used};
    if (!grown.slot)
        return rs_error_set(err, RS_EXIT_IO, "out of memory for the node index");
    for (uint64_t s = 0; ix->slot && s <= ix->mask; s++)
        if (ix->slot[s])
            grown.slot[index_slot(&grown, nodes, nodes->names[ix->slot[s] - 1])] = ix->slot[s];
    free(ix->slot);
    *ix = grown;
    return 0;
}

/* Indexes node i of nodes unless its name is indexed already. */
static int index_add(rs_node_index *ix, const rs_nodes *nodes, uint32_t i, rs_error *err)
{
    if (index_reserve(ix, nodes, err) != 0)
        return -1;
    uint32_t s = index_slot(ix, nodes, nodes->names[i]);
    if (!ix->slot[s]) {
        ix->slot[s] = i + 1;
        ix->used++;
    }
    return 0;
}

int rs_node_index_build(rs_node_index *ix, const rs_nodes *nodes, rs_error *err)
{
    memset(ix, 0, sizeof *ix);
    for (uint32_t i = 0; i < nodes->count; i++)
        if (index_add(ix, nodes, i, err) != 0) {
            rs_node_index_free(ix);
            return -1;
        }
    return 0;
}

int64_t rs_node_index_find(const rs_node_index *ix, const rs_nodes *nodes, const char *name)
{
    if (!ix->slot)
        return -1;
    uint32_t v = ix->slot[index_slot(ix, nodes, name)];
    return v ? (int64_t)v - 1 : -1;
}

void rs_node_index_free(rs_node_index *ix)
{
    free(ix->slot);
    memset(ix, 0, sizeof *ix);
}

int rs_node_edit_begin(rs_node_edit *e, const rs_nodes *nodes, rs_error *err)
{
    memset(e, 0, sizeof *e);
    if (!(e->gone = calloc(nodes->count ? nodes->count : 1, 1)))
        return rs_error_set(err, RS_EXIT_IO, "out of memory for the node list");
    if (rs_node_index_build(&e->ix, nodes, err) != 0) {
        free(e->gone);
        e->gone = NULL;
        return -1;
    }
    return 0;
}

int64_t rs_node_edit_find(const rs_node_edit *e, const rs_nodes *nodes, const char *name)
{
    int64_t i = rs_node_index_find(&e->ix, nodes, name);
    return i >= 0 && !e->gone[i] ? i : -1;
}

void rs_node_edit_remove(rs_node_edit *e, uint32_t i) { e->gone[i] = 1; }

void rs_node_edit_end(rs_node_edit *e, rs_nodes *n)
{
    uint32_t kept = 0;
    for (uint32_t i = 0; n && i < n->count; i++) {
        if (e->gone[i]) {
            free(n->names[i]);
            continue;
        }
        n->names[kept] = n->names[i];
        n->weights[kept] = n->weights[i];
        n->down[kept] = n->down[i];
        n->alias[kept] = n->alias[i];
        kept++;
    }
    if (n)
        n->count = kept;
    rs_node_index_free(&e->ix);
    free(e->gone);
    memset(e, 0, sizeof *e);
}

/* The duplicate check is quadratic only for appends by hand; the file parser
 * uses a sorted index instead (100,000-node lists must load instantly). */
static int append_unchecked(rs_nodes *n, const char *name, double weight, rs_error *err)
{
    if (grow(n, err) != 0)
        return -1;
    char *copy = strdup(name);
    if (!copy)
        return rs_error_set(err, RS_EXIT_IO, "out of memory for the node list");
    n->names[n->count] = copy;
    n->weights[n->count] = weight;
    n->down[n->count] = 0;
    n->alias[n->count] = 0;
    n->count++;
    return 0;
}

/* The checks rs_nodes_append makes but the duplicate one. */
static int check_new_node(const char *name, double weight, const char *what, rs_error *err)
{
    char buf[128];
    const char *why = name_problem(name, buf, sizeof buf);
    if (why)
        return rs_error_set(err, RS_EXIT_USAGE, "%s: %s", what, why);
    if (!(weight > 0) || !isfinite(weight))
        return rs_error_set(err, RS_EXIT_USAGE, "%s: weight of node '%s' must be positive", what, name);
    return 0;
}

int rs_nodes_append(rs_nodes *n, const char *name, double weight, const char *what, rs_error *err)
{
    if (check_new_node(name, weight, what, err) != 0)
        return -1;
    if (rs_nodes_find(n, name) >= 0)
        return rs_error_set(err, RS_EXIT_USAGE, "%s: duplicate node name '%s'", what, name);
    return append_unchecked(n, name, weight, err);
}

int rs_nodes_append_indexed(rs_nodes *n, rs_node_index *ix, const char *name, double weight, const char *what,
                            rs_error *err)
{
    if (check_new_node(name, weight, what, err) != 0)
        return -1;
    if (rs_node_index_find(ix, n, name) >= 0)
        return rs_error_set(err, RS_EXIT_USAGE, "%s: duplicate node name '%s'", what, name);
    if (append_unchecked(n, name, weight, err) != 0)
        return -1;
    return index_add(ix, n, n->count - 1, err);
}

int rs_nodes_init_count(rs_nodes *n, uint32_t count, rs_error *err)
{
    memset(n, 0, sizeof *n);
    if (count == 0)
        return rs_error_set(err, RS_EXIT_USAGE, "the number of nodes must be at least 1");
    char name[16];
    for (uint32_t i = 0; i < count; i++) {
        snprintf(name, sizeof name, "%u", i);
        if (append_unchecked(n, name, 1.0, err) != 0) {
            rs_nodes_free(n);
            return -1;
        }
    }
    return 0;
}

typedef struct {
    const char *name;
    uint32_t line;
} name_line;

static int cmp_name_line(const void *a, const void *b)
{
    const name_line *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->line > y->line) - (x->line < y->line);
}

/* 1 if s is n decimal digits, lo <= n <= hi. */
static int digits(const char *s, size_t lo, size_t hi)
{
    size_t n = strspn(s, "0123456789");
    return !s[n] && n >= lo && n <= hi;
}

/* twemproxy's server line, `[- ]host:port:weight [NAME] [down]` (what a
 * nutcracker.yml `servers:` item holds): 1 with *name (NAME, an alias, or
 * else host:port), *wtext and *alias set, cut in place in line; 0 when the
 * line is not one (the plain form then reads it); -1 with err. Without
 * nutcracker's "- " the line must carry a NAME that is not a weight, or
 * `a:1:2 3` (node "a:1:2", weight 3) would change meaning. */
static int server_line(char *line, const char *origin, uint32_t lineno, char **name, char **wtext, int *alias,
                       int *down, rs_error *err)
{
    char *p = line + strspn(line, " \t");
    if (*p == '"')
        return 0;
    char *tok[5], *save = NULL, *hash = strchr(p, '#');
    int n = 0;
    if (hash)
        *hash = '\0';
    for (char *t = strtok_r(p, " \t", &save); t && n < 5; t = strtok_r(NULL, " \t", &save))
        tok[n++] = t;
    int dash = n > 0 && strcmp(tok[0], "-") == 0, at = dash;
    char *server = at < n ? tok[at++] : NULL;
    /* host:port:weight, read from the end as nutcracker reads it */
    char *wcolon = server ? strrchr(server, ':') : NULL, *pcolon = NULL;
    int form = 0;
    if (wcolon && digits(wcolon + 1, 1, 20)) {
        *wcolon = '\0';
        pcolon = strrchr(server, ':');
        form = pcolon && pcolon > server && digits(pcolon + 1, 1, 5);
        *wcolon = ':';
    }
    char *alias_name = at < n && strcmp(tok[at], "down") != 0 ? tok[at++] : NULL;
    int is_down = at < n && strcmp(tok[at], "down") == 0;
    at += is_down;
    if (!dash) {
        char *end;
        if (!form || !alias_name || at < n)
            return 0;
        errno = 0;
        (void)strtod(alias_name, &end);
        if (!*end)
            return 0;   /* `name weight`: the plain form */
    } else if (!form || at < n) {
        return rs_error_set(err, RS_EXIT_DATA,
                            "%s:%u: a line starting with '-' is a twemproxy server line: "
                            "'- host:port:weight [NAME] [down]'", origin, lineno);
    }
    *wcolon = '\0';
    *wtext = wcolon + 1;
    *name = alias_name ? alias_name : server;
    *alias = alias_name != NULL;
    *down = is_down;
    return 1;
}

/* The syntax's checks of one node: its weight (as written, wtext) and
 * its name read as host:port. 0, or -1 with err naming origin:lineno. */
static int syntax_check(const rs_nodes_syntax *syn, const char *name, int alias, const char *wtext, double weight,
                        const char *origin, uint32_t lineno, rs_error *err)
{
    char t[200], nm[RS_NODE_NAME_MAX * 4 + 8];
    if (syn->weight_max > 0 && (weight != floor(weight) || weight > syn->weight_max))
        return rs_error_set(err, RS_EXIT_DATA,
                            "%s:%u: weight %s of node %s: --compat %s weights are whole numbers from 1 to %.0f",
                            origin, lineno, rs_text_shown_str(t, sizeof t, wtext, '\''),
                            rs_text_shown_str(nm, sizeof nm, name, '\''), syn->client, syn->weight_max);
    /* Read as host:port, "2001:db8::1" is host "2001:db8:" (half of the
     * "::") and port 1: no client writes that host, and whether the last
     * group was meant as a port nothing in the name tells. A host ending
     * in "::" ("2001:db8:::11211") is a whole address. */
    const char *c = strrchr(name, ':');
    if (syn->host_port && !alias && name[0] != '/' && c && c > name && c[-1] == ':' &&
        (c - name < 2 || c[-2] != ':') && digits(c + 1, 1, 5))
        return rs_error_set(err, RS_EXIT_DATA,
                            "%s:%u: node %s is ambiguous under --compat %s: read as host:port its host ends "
                            "inside an IPv6 address; an IPv6 host needs its port written out (%s:11211)",
                            origin, lineno, rs_text_shown_str(nm, sizeof nm, name, '\''), syn->client, name);
    return 0;
}

/* One line of a node list, NUL-terminated in line (l bytes; blanks and
 * the comment are cut in place): `name [weight] [down]`, the name maybe
 * quoted. Returns 1 with *name (into line), *weight and *down; 0 for a
 * line without a node (blank, comment); -1 with err (RS_EXIT_DATA, naming
 * origin and lineno). */
static int parse_line(char *line, size_t l, const char *origin, uint32_t lineno, const rs_nodes_syntax *syn,
                      char **name_out, double *weight_out, int *down_out, int *alias_out, rs_error *err)
{
    if (memchr(line, '\0', l))
        return rs_error_set(err, RS_EXIT_DATA, "%s:%u: NUL byte in node list", origin, lineno);
    *alias_out = 0;
    if (syn->server_lines) {
        char *copy = strdup(line), *name = NULL, *wtext = NULL;
        int alias = 0, down = 0, got = copy ? server_line(copy, origin, lineno, &name, &wtext, &alias, &down, err) : -2;
        if (got == 1) {   /* the name and weight move to the front of line, which outlives copy */
            char buf[128];
            const char *why = name_problem(name, buf, sizeof buf);
            double w = strtod(wtext, NULL);
            int rc = why ? rs_error_set(err, RS_EXIT_DATA, "%s:%u: %s", origin, lineno, why)
                   : !(w > 0) ? rs_error_set(err, RS_EXIT_DATA, "%s:%u: weight %s of server '%s' is not positive",
                                             origin, lineno, wtext, name)
                              : syntax_check(syn, name, alias, wtext, w, origin, lineno, err);
            if (rc == 0) {
                memmove(line, name, strlen(name) + 1);
                *name_out = line;
                *weight_out = w;
                *down_out = down;
                *alias_out = alias;
            }
            free(copy);
            return rc == 0 ? 1 : -1;
        }
        free(copy);
        if (got == -2)
            return rs_error_set(err, RS_EXIT_IO, "%s: out of memory", origin);
        if (got < 0)
            return -1;
    }
    /* a name in double quotes may hold blanks and '#' ("" is a quote) */
    char *start = line + strspn(line, " \t"), *name, *rest;
    if (*start == '"') {
        name = start + 1;
        rest = unquote(start);
        if (!rest)
            return rs_error_set(err, RS_EXIT_DATA, "%s:%u: unterminated quoted node name (the quote at column %zu)",
                                origin, lineno, (size_t)(start - line) + 1);
        if (*rest && *rest != ' ' && *rest != '\t' && *rest != '#')
            return rs_error_set(err, RS_EXIT_DATA,
                                "%s:%u: unexpected '%c' after the quoted node name (expected a blank, '#' or the end)",
                                origin, lineno, *rest);
    } else {
        name = NULL;
        rest = line;
    }
    char *hash = strchr(rest, '#');
    if (hash)
        *hash = '\0';
    char *save = NULL;
    if (!name) {
        name = strtok_r(rest, " \t", &save);
        if (!name)
            return 0;
        rest = NULL;
    }
    char buf[128];
    const char *why = name_problem(name, buf, sizeof buf);
    if (why)
        return rs_error_set(err, RS_EXIT_DATA, "%s:%u: %s", origin, lineno, why);
    double weight = 1.0;
    int down = 0;
    char *tok = strtok_r(rest, " \t", &save);
    const char *wtext = "1";
    if (tok && strcmp(tok, "down") != 0) {
        wtext = tok;
        char *endp;
        errno = 0;
        weight = strtod(tok, &endp);
        if (*endp || errno || !(weight > 0) || !isfinite(weight)) {
            char t[200], nm[RS_NODE_NAME_MAX * 4 + 8];  /* a name whole, every byte escaped at worst */
            return rs_error_set(err, RS_EXIT_DATA, "%s:%u: weight %s of node %s is not a positive number",
                                origin, lineno, rs_text_shown_str(t, sizeof t, tok, '\''),
                                rs_text_shown_str(nm, sizeof nm, name, '\''));
        }
        tok = strtok_r(NULL, " \t", &save);
    }
    if (tok && strcmp(tok, "down") == 0) {
        down = 1;
        tok = strtok_r(NULL, " \t", &save);
    }
    if (tok) {
        char t[200], nm[RS_NODE_NAME_MAX * 4 + 8];  /* a name whole, every byte escaped at worst */
        return rs_error_set(err, RS_EXIT_DATA, "%s:%u: unexpected %s after node %s (expected: name [weight] [down])",
                            origin, lineno, rs_text_shown_str(t, sizeof t, tok, '\''),
                            rs_text_shown_str(nm, sizeof nm, name, '\''));
    }
    if (syntax_check(syn, name, 0, wtext, weight, origin, lineno, err) != 0)
        return -1;
    *name_out = name;
    *weight_out = weight;
    *down_out = down;
    return 1;
}

/* A name given twice is an error naming both lines (lines[i]: node i's). */
static int check_duplicates(const rs_nodes *n, const uint32_t *lines, const char *origin, rs_error *err)
{
    name_line *idx = malloc(n->count * sizeof *idx);
    if (!idx)
        return rs_error_set(err, RS_EXIT_IO, "%s: out of memory", origin);
    for (uint32_t i = 0; i < n->count; i++)
        idx[i] = (name_line){n->names[i], lines[i]};
    qsort(idx, n->count, sizeof *idx, cmp_name_line);
    for (uint32_t i = 1; i < n->count; i++)
        if (strcmp(idx[i - 1].name, idx[i].name) == 0) {
            char nm[RS_NODE_NAME_MAX * 4 + 8];
            rs_error_set(err, RS_EXIT_DATA, "%s:%u: duplicate node name %s (first on line %u)", origin,
                         idx[i].line, rs_text_shown_str(nm, sizeof nm, idx[i].name, '\''), idx[i - 1].line);
            free(idx);
            return -1;
        }
    free(idx);
    return 0;
}

int rs_nodes_parse(rs_nodes *n, const char *text, size_t len, const char *origin, rs_error *err)
{
    return rs_nodes_parse_syntax(n, text, len, origin, NULL, err);
}

int rs_nodes_parse_syntax(rs_nodes *n, const char *text, size_t len, const char *origin, const rs_nodes_syntax *syn,
                          rs_error *err)
{
    static const rs_nodes_syntax plain = {0};
    if (!syn)
        syn = &plain;
    memset(n, 0, sizeof *n);
    uint32_t *lines = NULL;
    size_t lines_cap = 0;
    char *line = NULL;
    uint32_t lineno = 0;
    size_t pos = 0;
    while (pos < len) {
        size_t end = pos;
        while (end < len && text[end] != '\n')
            end++;
        lineno++;
        size_t l = end - pos;
        if (l && text[pos + l - 1] == '\r')
            l--;
        free(line);
        line = malloc(l + 1);
        if (!line)
            goto oom;
        memcpy(line, text + pos, l);
        line[l] = '\0';
        pos = end + 1;
        char *name;
        double weight;
        int down, alias, got = parse_line(line, l, origin, lineno, syn, &name, &weight, &down, &alias, err);
        if (got < 0)
            goto fail;
        if (got == 0)
            continue;
        if (append_unchecked(n, name, weight, err) != 0)
            goto fail;
        n->down[n->count - 1] = (uint8_t)down;
        n->alias[n->count - 1] = (uint8_t)alias;
        if (n->count > lines_cap) {
            lines_cap = lines_cap ? lines_cap * 2 : 64;
            uint32_t *nl = realloc(lines, lines_cap * sizeof *nl);
            if (!nl)
                goto oom;
            lines = nl;
        }
        lines[n->count - 1] = lineno;
    }
    if (n->count == 0) {
        rs_error_set(err, RS_EXIT_DATA, "%s: no nodes in the node list", origin);
        goto fail;
    }
    if (check_duplicates(n, lines, origin, err) != 0)
        goto fail;
    free(lines);
    free(line);
    return 0;
oom:
    rs_error_set(err, RS_EXIT_IO, "%s: out of memory", origin);
fail:
    free(lines);
    free(line);
    rs_nodes_free(n);
    return -1;
}

/* Counts the line ends of text[from..to) into *lineno, moving *line_start
 * past the last; fails (RS_EXIT_DATA) when the line then unfinished is
 * longer than RS_NODES_LINE_MAX, so that a file without line ends (a
 * device, a binary file) is not read whole. 0, or -1 with err. */
static int line_bound(const char *text, size_t from, size_t to, size_t *line_start, unsigned *lineno,
                      const char *path, rs_error *err)
{
    for (const char *p = text + from; (p = memchr(p, '\n', (size_t)(text + to - p))) != NULL; p++) {
        ++*lineno;
        *line_start = (size_t)(p - text) + 1;
    }
    if (to - *line_start > RS_NODES_LINE_MAX)
        return rs_error_set(err, RS_EXIT_DATA, "%s:%u: line longer than %d bytes (a node list holds one node a line)",
                            path, *lineno + 1, RS_NODES_LINE_MAX);
    return 0;
}

int rs_nodes_load(rs_nodes *n, const char *path, rs_error *err)
{
    return rs_nodes_load_syntax(n, path, NULL, err);
}

int rs_nodes_load_syntax(rs_nodes *n, const char *path, const rs_nodes_syntax *syn, rs_error *err)
{
    memset(n, 0, sizeof *n);
    FILE *f = fopen(path, "rb");
    if (!f)
        return rs_error_set(err, RS_EXIT_IO, "%s: cannot open node list: %s", path, strerror(errno));
    size_t cap = 1 << 16, len = 0, r, line_start = 0;
    unsigned lineno = 0;
    char *text = malloc(cap);
    while (text && (r = fread(text + len, 1, cap - len, f)) > 0) {
        if (line_bound(text, len, len + r, &line_start, &lineno, path, err) != 0) {
            fclose(f);
            free(text);
            return -1;
        }
        len += r;
        if (len == cap) {
            char *t = realloc(text, cap *= 2);
            if (!t) {
                free(text);
                text = NULL;
            } else
                text = t;
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (!text)
        return rs_error_set(err, RS_EXIT_IO, "%s: out of memory", path);
    if (bad) {
        free(text);
        return rs_error_set(err, RS_EXIT_IO, "%s: read error", path);
    }
    int rc = rs_nodes_parse_syntax(n, text, len, path, syn, err);
    free(text);
    return rc;
}

int rs_nodes_remove(rs_nodes *n, const char *name, rs_error *err)
{
    int64_t i = rs_nodes_find(n, name);
    if (i < 0)
        return rs_error_set(err, RS_EXIT_USAGE, "no node named '%s'", name);
    free(n->names[i]);
    memmove(n->names + i, n->names + i + 1, (n->count - i - 1) * sizeof *n->names);
    memmove(n->weights + i, n->weights + i + 1, (n->count - i - 1) * sizeof *n->weights);
    memmove(n->down + i, n->down + i + 1, (n->count - i - 1) * sizeof *n->down);
    memmove(n->alias + i, n->alias + i + 1, (n->count - i - 1) * sizeof *n->alias);
    n->count--;
    return 0;
}

int rs_nodes_set_down(rs_nodes *n, const char *name, rs_error *err)
{
    int64_t i = rs_nodes_find(n, name);
    if (i < 0)
        return rs_error_set(err, RS_EXIT_USAGE, "no node named '%s'", name);
    n->down[i] = 1;
    return 0;
}

int rs_nodes_copy(rs_nodes *dst, const rs_nodes *src, rs_error *err)
{
    memset(dst, 0, sizeof *dst);
    for (uint32_t i = 0; i < src->count; i++) {
        if (append_unchecked(dst, src->names[i], src->weights[i], err) != 0) {
            rs_nodes_free(dst);
            return -1;
        }
        dst->down[i] = src->down[i];
        dst->alias[i] = src->alias[i];
    }
    return 0;
}

void rs_nodes_free(rs_nodes *n)
{
    for (uint32_t i = 0; i < n->count; i++)
        free(n->names[i]);
    free(n->names);
    free(n->weights);
    free(n->down);
    free(n->alias);
    memset(n, 0, sizeof *n);
}
