/* fuzz/check_nodes.h - the node-list parser (see fuzz/check_common.h).
 *
 * rs_nodes_parse on any bytes either fails with RS_EXIT_DATA and a message
 * naming the origin, or gives a list that keeps the documented invariants
 * (at least one node; names non-empty, without control characters, blanks
 * or '#', unique; weights finite and > 0; down 0 or 1). An accepted list,
 * written back as `name weight [down]` lines (weights with %.17g), must
 * parse to the same list, and rs_nodes_copy / rs_nodes_find must agree. */
#ifndef RINGSHARD_FUZZ_CHECK_NODES_H
#define RINGSHARD_FUZZ_CHECK_NODES_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem */
#endif
#include <math.h>
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
            FZ_CHECK(c >= 0x20 && c != 0x7f && c != ' ' && c != '#', "node %u has byte 0x%02x", i, c);
        }
        FZ_CHECK(memmem(text, size, name, len) != NULL, "name '%s' is not in the input", name);
        FZ_CHECK(isfinite(n.weights[i]) && n.weights[i] > 0, "weight %.17g of '%s'", n.weights[i], name);
        FZ_CHECK(n.down[i] <= 1, "down %u", n.down[i]);
        if (n.count <= 256 || i % (n.count / 128) == 0) /* unique: found at i (linear, so sampled) */
            FZ_CHECK(rs_nodes_find(&n, name) == (int64_t)i, "rs_nodes_find('%s') is not %u", name, i);
        char w[64];
        int wl = snprintf(w, sizeof w, " %.17g%s\n", n.weights[i], n.down[i] ? " down" : "");
        FZ_CHECK(rs_buf_append(&out, name, len) == 0 && rs_buf_append(&out, w, (size_t)wl) == 0, "out of memory");
    }
    rs_nodes again, copy;
    rs_error_clear(&err);
    FZ_CHECK(rs_nodes_parse(&again, out.data, out.len, "round-trip", &err) == 0, "the written list fails: %s",
             err.msg);
    fznodes_same(&n, &again, "round trip");
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
