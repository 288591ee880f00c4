/* fuzz/check_json.h - the JSON reader and the manifest reader (see
 * fuzz/check_common.h). Seeds: real manifests and plan --json reports.
 *
 * rs_jv_parse on any bytes either fails with RS_EXIT_DATA, a message
 * naming the input and an error offset inside it, or gives a tree whose
 * strings are NUL-terminated at their length, well-formed UTF-8 (they may
 * hold NUL from \u0000), whose numbers match the JSON number grammar, and
 * whose offsets lie inside the input. rs_manifest_parse on the same bytes
 * either fails with RS_EXIT_DATA naming the input, or gives a manifest
 * that keeps its documented invariants (kind buckets or moves; plain file
 * names; node for buckets, from/to for moves) and that, written with
 * rs_manifest_write and read again, is the same manifest, byte for byte in
 * every string (node names, headers that are not UTF-8 included: the
 * "_hex" members), every number and flag ("seconds" aside: a double). */
#ifndef RINGSHARD_FUZZ_CHECK_JSON_H
#define RINGSHARD_FUZZ_CHECK_JSON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_common.h"
#include "rs_config.h"
#include "ringshard/error.h"
#include "ringshard/manifest.h"
#include "util/json_read.h"

/* The JSON number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static int fzjson_number_ok(const char *s)
{
    if (*s == '-')
        s++;
    if (*s == '0')
        s++;
    else if (*s >= '1' && *s <= '9')
        while (*s >= '0' && *s <= '9')
            s++;
    else
        return 0;
    if (*s == '.') {
        s++;
        if (!(*s >= '0' && *s <= '9'))
            return 0;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-')
            s++;
        if (!(*s >= '0' && *s <= '9'))
            return 0;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    return *s == '\0';
}

static void fzjson_utf8(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t k = p[i] < 0x80 ? 1 : rs_utf8_seq_len(p + i, n - i);
        FZ_CHECK(k > 0, "string byte %zu (0x%02x) is not UTF-8", i, p[i]);
        i += k;
    }
}

static void fzjson_tree(const rs_jv *v, size_t size, int depth)
{
    FZ_CHECK(depth <= RS_JSON_MAX_DEPTH + 1, "depth %d", depth);
    FZ_CHECK(v->offset < size, "offset %zu of %zu", v->offset, size);
    switch (v->type) {
    case RS_JV_STRING:
        FZ_CHECK(v->str && v->str[v->len] == '\0', "string not terminated at its length");
        fzjson_utf8(v->str, v->len);
        break;
    case RS_JV_NUMBER:
        FZ_CHECK(v->str && strlen(v->str) == v->len && fzjson_number_ok(v->str), "number '%s'", v->str);
        break;
    case RS_JV_ARRAY:
        for (size_t i = 0; i < v->n; i++)
            fzjson_tree(&v->items[i], size, depth + 1);
        break;
    case RS_JV_OBJECT:
        for (size_t i = 0; i < v->n; i++) {
            FZ_CHECK(v->members[i].key[v->members[i].keylen] == '\0', "key not terminated");
            fzjson_utf8(v->members[i].key, v->members[i].keylen);
            fzjson_tree(&v->members[i].value, size, depth + 1);
        }
        break;
    default:
        break;
    }
}

static int fzjson_same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

#define FZJSON_SAME(a, b, what) FZ_CHECK(fzjson_same_str(a, b), "%s: '%s' written, '%s' read back", what, \
                                         (a) ? (a) : "(null)", (b) ? (b) : "(null)")

static void fzjson_same_manifest(const rs_manifest *a, const rs_manifest *b)
{
    FZJSON_SAME(a->kind, b->kind, "kind");
    FZJSON_SAME(a->tool_version ? a->tool_version : RS_VERSION, b->tool_version, "tool.version");
    FZJSON_SAME(a->ring_description, b->ring_description, "ring.description");
    FZJSON_SAME(a->ring_fingerprint, b->ring_fingerprint, "ring.fingerprint");
    FZJSON_SAME(a->new_ring_description, b->new_ring_description, "new_ring.description");
    FZJSON_SAME(a->new_ring_fingerprint, b->new_ring_fingerprint, "new_ring.fingerprint");
    FZJSON_SAME(a->key, b->key, "options.key");
    FZJSON_SAME(a->header_line, b->header_line, "header");
    FZ_CHECK(a->delimiter == b->delimiter && a->header == b->header && a->compress == b->compress &&
                 a->level == b->level && a->keys_only == b->keys_only,
             "options differ");
    FZ_CHECK(a->ninputs == b->ninputs && a->nfiles == b->nfiles, "counts differ");
    FZ_CHECK(a->rows == b->rows && a->bytes == b->bytes && a->rejected == b->rejected, "totals differ");
    for (size_t i = 0; i < a->ninputs; i++) {
        const rs_manifest_input *x = &a->inputs[i], *y = &b->inputs[i];
        FZJSON_SAME(x->path, y->path, "inputs[].path");
        FZ_CHECK(x->size == y->size && x->rows == y->rows && x->bytes == y->bytes && x->rejected == y->rejected &&
                     x->blank_lines == y->blank_lines,
                 "inputs[%zu] differs", i);
    }
    for (size_t i = 0; i < a->nfiles; i++) {
        const rs_manifest_file *x = &a->files[i], *y = &b->files[i];
        FZJSON_SAME(x->file, y->file, "files[].file");
        FZJSON_SAME(x->node, y->node, "files[].node");
        FZJSON_SAME(x->from, y->from, "files[].from");
        FZJSON_SAME(x->to, y->to, "files[].to");
        FZ_CHECK(x->rows == y->rows && x->bytes == y->bytes && x->file_bytes == y->file_bytes &&
                     x->crc32 == y->crc32 && x->wave == y->wave,
                 "files[%zu] differs", i);
    }
}

static void fzjson_manifest(const char *text, size_t size)
{
    rs_manifest m;
    rs_error err = {0};
    if (rs_manifest_parse(&m, text, size, "fuzz.json", &err) != 0) {
        FZ_CHECK(err.code == RS_EXIT_DATA || err.code == RS_EXIT_IO, "exit %d: %s", err.code, err.msg);
        FZ_CHECK(strncmp(err.msg, "fuzz.json: ", 11) == 0, "message '%s'", err.msg);
        return;
    }
    int moves = strcmp(m.kind, "moves") == 0;
    FZ_CHECK(moves || strcmp(m.kind, "buckets") == 0, "kind '%s'", m.kind);
    for (size_t i = 0; i < m.nfiles; i++) {
        const rs_manifest_file *f = &m.files[i];
        FZ_CHECK(f->file[0] && !strchr(f->file, '/') && strcmp(f->file, ".") && strcmp(f->file, ".."),
                 "file name '%s'", f->file);
        FZ_CHECK(moves ? f->from && f->to && !f->node : f->node && !f->from && !f->to, "files[%zu] members", i);
    }
    /* written and read again: the same manifest */
    static char path[64];
    if (!path[0])
        snprintf(path, sizeof path, "/tmp/fuzz_json.%ld.json", (long)getpid());
    FZ_CHECK(rs_manifest_write(&m, path, &err) == 0, "write: %s", err.msg);
    rs_manifest back;
    int rc = rs_manifest_read(&back, path, &err);
    unlink(path);
    FZ_CHECK(rc == 0, "read back: %s", err.msg);
    fzjson_same_manifest(&m, &back);
    rs_manifest_free(&back);
    rs_manifest_free(&m);
}

static int check_json(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    rs_jv root;
    rs_error err = {0};
    size_t at = 0;
    if (rs_jv_parse(&root, text, size, "fuzz.json", &err, &at) != 0) {
        FZ_CHECK(err.code == RS_EXIT_DATA || err.code == RS_EXIT_IO, "exit %d: %s", err.code, err.msg);
        FZ_CHECK(err.code != RS_EXIT_DATA || at <= size, "error offset %zu past %zu bytes", at, size);
        FZ_CHECK(strncmp(err.msg, "fuzz.json: ", 11) == 0, "message '%s'", err.msg);
    } else {
        fzjson_tree(&root, size ? size : 1, 0);
        rs_jv_free(&root);
    }
    fzjson_manifest(text, size);
    return 0;
}

#endif
