/* fuzz/check_nodes.h - the node-list parser (see fuzz/check_common.h).
 *
 * rs_nodes_parse on any bytes either fails with RS_EXIT_DATA and a message
 * naming the origin, or gives a list that keeps the documented invariants
 * (at least one node; names non-empty, without control characters other
 * than a tab, unique; weights finite and > 0; down 0 or 1). It must accept
 * exactly what an independent reading of the grammar below accepts, with
 * the same nodes. An accepted list, written back as `name weight [down]`
 * lines (weights with %.17g; names quoted where needed, then every name
 * quoted), must parse to the same list, and rs_nodes_copy / rs_nodes_find
 * must agree.
 *
 * The grammar: lines end at LF (a CR before it is dropped); a NUL is an
 * error; blanks are space and tab. A line is blanks, then nothing or a
 * comment ('#' to the end), or a name: either "..." with "" for a quote
 * (unterminated: error; after the closing quote: a blank, '#' or the end,
 * else error) or the bytes up to the first blank or '#'. After the name,
 * up to the first '#': an optional weight (strtod, whole token, finite,
 * > 0), an optional "down", nothing else. */
#ifndef RINGSHARD_FUZZ_CHECK_NODES_H
#define RINGSHARD_FUZZ_CHECK_NODES_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem */
#endif
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check_common.h"
#include "ringshard/buf.h"
#include "ringshard/error.h"
#include "ringshard/nodes.h"

static void fznodes_same(const rs_nodes *a, const rs_nodes *b, const char *what)
{
    FZ_CHECK(a->count == b->count, "%s: %u nodes, then %u", what, a->count, b->count);
    for (uint32_t i = 0; i < a->count; i++) {
        FZ_CHECK(strcmp(a->names[i], b->names[i]) == 0, "%s: node %u '%s' vs '%s'", what, i, a->names[i],
                 b->names[i]);
        FZ_CHECK(a->weights[i] == b->weights[i], "%s: weight of '%s' %.17g vs %.17g", what, a->names[i],
                 a->weights[i], b->weights[i]);
        FZ_CHECK(a->down[i] == b->down[i], "%s: down of '%s'", what, a->names[i]);
    }
}

typedef struct {
    char **names;
    double *weights;
    uint8_t *down;
    uint32_t count;
} fznodes_ref;

static void fzref_free(fznodes_ref *r)
{
    for (uint32_t i = 0; i < r->count; i++)
        free(r->names[i]);
    free(r->names);
    free(r->weights);
    free(r->down);
    memset(r, 0, sizeof *r);
}

static int fz_blank(char c) { return c == ' ' || c == '\t'; }

/* The grammar above, read independently of src/ring/nodes.c: 0 and the
 * list, or -1 (rejected). */
static int fzref_parse(const char *t, size_t size, fznodes_ref *r)
{
    memset(r, 0, sizeof *r);
    size_t pos = 0;
    while (pos < size) {
        size_t end = pos;
        while (end < size && t[end] != '\n')
            end++;
        size_t e = end;
        if (e > pos && t[e - 1] == '\r')
            e--;
        const char *p = t + pos, *q = t + e;
        pos = end + 1;
        if (memchr(p, '\0', (size_t)(q - p)))
            goto bad;
        while (p < q && fz_blank(*p))
            p++;
        if (p == q || *p == '#')
            continue;
        char *name = malloc((size_t)(q - p) + 1);
        FZ_CHECK(name != NULL, "out of memory");
        size_t nl = 0;
        if (*p == '"') {
            p++;
            for (;;) {
                if (p == q) {
                    free(name);
                    goto bad;
                }
                if (*p == '"') {
                    if (p + 1 < q && p[1] == '"') {
                        name[nl++] = '"';
                        p += 2;
                        continue;
                    }
                    p++;
                    break;
                }
                name[nl++] = *p++;
            }
            if (p < q && !fz_blank(*p) && *p != '#') {
                free(name);
                goto bad;
            }
        } else {
            while (p < q && !fz_blank(*p) && *p != '#')
                name[nl++] = *p++;
        }
        name[nl] = '\0';
        int ok = nl > 0 && nl <= RS_NODE_NAME_MAX;   /* nodes.h: the limit on a name's bytes */
        for (size_t k = 0; k < nl; k++)
            if (((unsigned char)name[k] < 0x20 && name[k] != '\t') || name[k] == 0x7f)
                ok = 0;
        /* the rest, up to a comment: [weight] [down] */
        const char *c = memchr(p, '#', (size_t)(q - p));
        if (c)
            q = c;
        char *tok[2] = {NULL, NULL};
        int ntok = 0;
        while (ok) {
            while (p < q && fz_blank(*p))
                p++;
            if (p == q)
                break;
            const char *s0 = p;
            while (p < q && !fz_blank(*p))
                p++;
            if (ntok == 2) { /* name [weight] [down]: never a third */
                ok = 0;
                break;
            }
            tok[ntok] = strndup(s0, (size_t)(p - s0));
            FZ_CHECK(tok[ntok] != NULL, "out of memory");
            ntok++;
        }
        double w = 1.0;
        int down = 0, k = 0;
        if (ok && k < ntok && strcmp(tok[k], "down") != 0) {
            char *endp;
            errno = 0;
            w = strtod(tok[k], &endp);
            ok = !*endp && !errno && w > 0 && isfinite(w);
            k++;
        }
        if (ok && k < ntok && strcmp(tok[k], "down") == 0)
            down = 1, k++;
        free(tok[0]);
        free(tok[1]);
        if (!ok || k < ntok) {
            free(name);
            goto bad;
        }
        for (uint32_t i = 0; i < r->count; i++)
            if (strcmp(r->names[i], name) == 0) {
                free(name);
                goto bad;
            }
        r->names = realloc(r->names, (r->count + 1) * sizeof *r->names);
        r->weights = realloc(r->weights, (r->count + 1) * sizeof *r->weights);
        r->down = realloc(r->down, (r->count + 1) * sizeof *r->down);
        FZ_CHECK(r->names && r->weights && r->down, "out of memory");
        r->names[r->count] = name;
        r->weights[r->count] = w;
        r->down[r->count++] = (uint8_t)down;
    }
    if (r->count == 0)
        goto bad;
    return 0;
bad:
    fzref_free(r);
    return -1;
}

/* name, quoted ("" for a quote) when `always` or when it needs it. */
static void fz_put_name(rs_buf *out, const char *name, int always)
{
    size_t len = strlen(name);
    int need = always || name[0] == '"' || strpbrk(name, " \t#") != NULL;
    if (!need) {
        FZ_CHECK(rs_buf_append(out, name, len) == 0, "out of memory");
        return;
    }
    FZ_CHECK(rs_buf_append(out, "\"", 1) == 0, "out of memory");
    for (size_t k = 0; k < len; k++)
        FZ_CHECK(rs_buf_append(out, name + k, 1) == 0 && (name[k] != '"' || rs_buf_append(out, "\"", 1) == 0),
                 "out of memory");
    FZ_CHECK(rs_buf_append(out, "\"", 1) == 0, "out of memory");
}

static int check_nodes(const uint8_t *data, size_t size)
{
    char *text = malloc(size ? size : 1); /* exact size: ASan sees over-reads */
    FZ_CHECK(text != NULL, "out of memory");
    if (size)
        memcpy(text, data, size);
    rs_nodes n;
    rs_error err;
    rs_error_clear(&err);
    int rc = rs_nodes_parse(&n, text, size, "fuzz.nodes", &err);
    fznodes_ref ref;
    int ref_rc = fzref_parse(text, size, &ref);
    FZ_CHECK((rc == 0) == (ref_rc == 0), "parser %s, the grammar %s (%s)", rc ? "rejects" : "accepts",
             ref_rc ? "rejects" : "accepts", rc ? err.msg : "");
    if (rc == 0 && ref_rc == 0) {
        FZ_CHECK(n.count == ref.count, "%u nodes, the grammar says %u", n.count, ref.count);
        for (uint32_t i = 0; i < n.count; i++) {
            FZ_CHECK(strcmp(n.names[i], ref.names[i]) == 0, "node %u '%s', the grammar says '%s'", i, n.names[i],
                     ref.names[i]);
            FZ_CHECK(n.weights[i] == ref.weights[i] && n.down[i] == ref.down[i], "node '%s': weight or down",
                     n.names[i]);
        }
    }
    fzref_free(&ref);
    if (rc != 0) {
        FZ_CHECK(rc == -1, "rs_nodes_parse returned %d", rc);
        FZ_CHECK(err.code == RS_EXIT_DATA, "error code %d: %s", err.code, err.msg);
        FZ_CHECK(strncmp(err.msg, "fuzz.nodes", 10) == 0, "message does not name the origin: %s", err.msg);
        FZ_CHECK(n.count == 0, "a failed parse leaves %u nodes", n.count);
        rs_nodes_free(&n);
        free(text);
        return 0;
    }
    FZ_CHECK(n.count >= 1, "no nodes accepted");
    rs_buf out = {0};
    for (uint32_t i = 0; i < n.count; i++) {
        const char *name = n.names[i];
        size_t len = strlen(name);
        FZ_CHECK(len > 0, "empty name at %u", i);
        for (size_t k = 0; k < len; k++) {
            unsigned char c = (unsigned char)name[k];
            FZ_CHECK((c >= 0x20 || c == '\t') && c != 0x7f, "node %u has byte 0x%02x", i, c);
        }
        if (!strchr(name, '"'))
            FZ_CHECK(memmem(text, size, name, len) != NULL, "name '%s' is not in the input", name);
        FZ_CHECK(isfinite(n.weights[i]) && n.weights[i] > 0, "weight %.17g of '%s'", n.weights[i], name);
        FZ_CHECK(n.down[i] <= 1, "down %u", n.down[i]);
        if (n.count <= 256 || i % (n.count / 128) == 0) /* unique: found at i (linear, so sampled) */
            FZ_CHECK(rs_nodes_find(&n, name) == (int64_t)i, "rs_nodes_find('%s') is not %u", name, i);
        char w[64];
        int wl = snprintf(w, sizeof w, " %.17g%s\n", n.weights[i], n.down[i] ? " down" : "");
        fz_put_name(&out, name, 0);
        FZ_CHECK(rs_buf_append(&out, w, (size_t)wl) == 0, "out of memory");
    }
    rs_nodes again, copy;
    rs_error_clear(&err);
    FZ_CHECK(rs_nodes_parse(&again, out.data, out.len, "round-trip", &err) == 0, "the written list fails: %s",
             err.msg);
    fznodes_same(&n, &again, "round trip");
    rs_nodes_free(&again);
    out.len = 0;
    for (uint32_t i = 0; i < n.count; i++) {
        fz_put_name(&out, n.names[i], 1);
        FZ_CHECK(rs_buf_append(&out, n.down[i] ? " down\n" : "\n", n.down[i] ? 6 : 1) == 0, "out of memory");
    }
    rs_error_clear(&err);
    FZ_CHECK(rs_nodes_parse(&again, out.data, out.len, "quoted", &err) == 0, "the quoted list fails: %s", err.msg);
    for (uint32_t i = 0; i < n.count; i++)
        FZ_CHECK(strcmp(n.names[i], again.names[i]) == 0 && n.down[i] == again.down[i], "quoted: node %u", i);
    rs_error_clear(&err);
    FZ_CHECK(rs_nodes_copy(&copy, &n, &err) == 0, "rs_nodes_copy: %s", err.msg);
    fznodes_same(&n, &copy, "copy");
    rs_nodes_free(&again);
    rs_nodes_free(&copy);
    rs_nodes_free(&n);
    rs_buf_free(&out);
    free(text);
    return 0;
}

#endif
