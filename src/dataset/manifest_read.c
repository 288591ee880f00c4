/* Reading DIR/manifest.json (ringshard/manifest.h): every member checked
 * against docs/format-manifest.md, each refusal naming the file and the
 * member (the writer and the schema in short: manifest.c). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ringshard/filename.h"
#include "ringshard/hash.h"
#include "ringshard/manifest.h"
#include "ringshard/util.h"
#include "util/json_read.h"

#define MANIFEST_SCHEMA 3   /* the newest this version reads */

/* ---- reading ---- */

typedef struct {
    const char *path;
    rs_error *err;
} reader;

static const char *type_name(rs_jv_type t)
{
    switch (t) {
    case RS_JV_NULL: return "null";
    case RS_JV_BOOL: return "a boolean";
    case RS_JV_NUMBER: return "a number";
    case RS_JV_STRING: return "a string";
    case RS_JV_ARRAY: return "an array";
    case RS_JV_OBJECT: return "an object";
    }
    return "?";
}

static int bad(reader *r, const char *ctx, const char *key, const char *what)
{
    return rs_error_set(r->err, RS_EXIT_DATA, "%s: manifest member \"%s%s%s\": %s", r->path, ctx,
                        *ctx ? "." : "", key, what);
}

/* The member obj.key of the given type; NULL with the error set if missing
 * (when required) or of another type. Missing optional members (and null
 * ones when null_ok) give NULL with no error. */
static const rs_jv *member(reader *r, const rs_jv *obj, const char *ctx, const char *key, rs_jv_type type,
                           int required, int *failed)
{
    const rs_jv *v = rs_jv_get(obj, key);
    if (v == NULL) {
        if (required) {
            bad(r, ctx, key, "missing");
            *failed = 1;
        }
        return NULL;
    }
    if (v->type != type) {
        char what[64];
        snprintf(what, sizeof what, "%s expected, found %s", type_name(type), type_name(v->type));
        bad(r, ctx, key, what);
        *failed = 1;
        return NULL;
    }
    return v;
}

static int hex_digit(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* A "<key>_hex" member: lowercase hex digits, two per byte, no NUL byte. */
static int get_hex(reader *r, const rs_jv *v, const char *ctx, const char *name, char **out)
{
    if (v->type != RS_JV_STRING || v->len % 2 != 0)
        return bad(r, ctx, name, "an even number of lowercase hex digits expected");
    char *b = malloc(v->len / 2 + 1);
    if (b == NULL)
        return rs_error_set(r->err, RS_EXIT_IO, "%s: out of memory", r->path);
    for (size_t i = 0; i < v->len / 2; i++) {
        int hi = hex_digit(v->str[2 * i]), lo = hex_digit(v->str[2 * i + 1]);
        if (hi < 0 || lo < 0 || (hi | lo) == 0) {
            free(b);
            return bad(r, ctx, name, hi < 0 || lo < 0 ? "an even number of lowercase hex digits expected"
                                                      : "contains a NUL byte (00)");
        }
        b[i] = (char)(hi << 4 | lo);
    }
    b[v->len / 2] = '\0';
    *out = b;
    return 0;
}

static int get_str(reader *r, const rs_jv *obj, const char *ctx, const char *key, char **out)
{
    int failed = 0;
    const rs_jv *v = member(r, obj, ctx, key, RS_JV_STRING, 1, &failed);
    if (v == NULL)
        return -1;
    if (strlen(v->str) != v->len)
        return bad(r, ctx, key, "contains a NUL character");
    char name[64];
    snprintf(name, sizeof name, "%s_hex", key);
    const rs_jv *hex = rs_jv_get(obj, name);
    if (hex != NULL)  /* the exact bytes of a string that is not UTF-8 */
        return get_hex(r, hex, ctx, name, out);
    *out = strdup(v->str);
    if (*out == NULL)
        return rs_error_set(r->err, RS_EXIT_IO, "%s: out of memory", r->path);
    return 0;
}

/* A string or null (-> NULL); required to be present. */
static int get_str_or_null(reader *r, const rs_jv *obj, const char *ctx, const char *key, char **out)
{
    const rs_jv *v = rs_jv_get(obj, key);
    if (v != NULL && v->type == RS_JV_NULL) {
        *out = NULL;
        return 0;
    }
    return get_str(r, obj, ctx, key, out);
}

static int get_u64(reader *r, const rs_jv *obj, const char *ctx, const char *key, int required, uint64_t max,
                   uint64_t *out)
{
    int failed = 0;
    const rs_jv *v = member(r, obj, ctx, key, RS_JV_NUMBER, required, &failed);
    if (v == NULL) {
        *out = 0;
        return failed ? -1 : 0;
    }
    if (rs_jv_u64(v, out) != 0 || *out > max) {
        char what[128];
        snprintf(what, sizeof what, "an unsigned integer up to %" PRIu64 " expected, found %.40s", max, v->str);
        return bad(r, ctx, key, what);
    }
    return 0;
}

static int get_bool(reader *r, const rs_jv *obj, const char *ctx, const char *key, int *out)
{
    int failed = 0;
    const rs_jv *v = member(r, obj, ctx, key, RS_JV_BOOL, 1, &failed);
    if (v == NULL)
        return -1;
    *out = v->boolean;
    return 0;
}

static int get_int(reader *r, const rs_jv *obj, const char *ctx, const char *key, int *out)
{
    int failed = 0;
    const rs_jv *v = member(r, obj, ctx, key, RS_JV_NUMBER, 1, &failed);
    if (v == NULL)
        return -1;
    const char *s = v->str + (v->str[0] == '-');
    uint64_t mag;
    rs_jv t = *v;
    t.str = (char *)s;
    t.len = v->len - (size_t)(s - v->str);
    if (rs_jv_u64(&t, &mag) != 0 || mag > (uint64_t)INT_MAX)
        return bad(r, ctx, key, "an integer expected");
    *out = s != v->str ? -(int)mag : (int)mag;
    return 0;
}

static int get_ring(reader *r, const rs_jv *root, const char *key, char **fingerprint, char **description)
{
    int failed = 0;
    const rs_jv *ring = member(r, root, "", key, RS_JV_OBJECT, 1, &failed);
    if (ring == NULL)
        return -1;
    if (get_str(r, ring, key, "fingerprint", fingerprint) != 0 ||
        get_str(r, ring, key, "description", description) != 0)
        return -1;
    return 0;
}

/* The delimiter is one byte. A byte >= 0x80 was written as \u00xx (json.h)
 * and reads back as the 2-byte UTF-8 of U+00xx: undo that. */
/* options.delimiter, or (name "key_sep", optional: '|' when absent)
 * options.key_sep: one character. */
static int get_delimiter(reader *r, const rs_jv *opts, const char *name, char *out)
{
    int failed = 0, required = strcmp(name, "key_sep") != 0;
    const rs_jv *v = member(r, opts, "options", name, RS_JV_STRING, required, &failed);
    if (v == NULL && !failed && !required) {
        *out = '|';
        return 0;
    }
    if (v == NULL)
        return -1;
    const unsigned char *s = (const unsigned char *)v->str;
    if (v->len == 1) {
        *out = (char)s[0];
        return 0;
    }
    if (v->len == 2 && (s[0] == 0xC2 || s[0] == 0xC3)) {
        *out = (char)(((s[0] & 0x03) << 6) | (s[1] & 0x3F));
        return 0;
    }
    return bad(r, "options", name, "one character expected");
}

static int safe_file_name(const char *s)
{
    return s[0] != '\0' && strchr(s, '/') == NULL && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

/* An optional string member that must be n lowercase hex digits after
 * `prefix` (NULL when absent). */
static int get_hex_token(reader *r, const rs_jv *obj, const char *ctx, const char *key, const char *prefix, size_t n,
                         char **out)
{
    *out = NULL;
    if (rs_jv_get(obj, key) == NULL)
        return 0;
    if (get_str(r, obj, ctx, key, out) != 0)
        return -1;
    size_t p = strlen(prefix);
    int ok = strlen(*out) == p + n && strncmp(*out, prefix, p) == 0;
    for (size_t i = p; ok && i < p + n; i++)
        ok = hex_digit((*out)[i]) >= 0;
    if (ok)
        return 0;
    free(*out);
    *out = NULL;
    char what[96];
    snprintf(what, sizeof what, "\"%s\" and %zu lowercase hex digits expected", prefix, n);
    return bad(r, ctx, key, what);
}

/* An optional array of {"node", "from", "to"} (write_nodes; ranged 0:
 * {"node"} only) into *out, *n: each range not empty. */
static int read_rows(reader *r, const rs_jv *o, const char *ctx, const char *key, int ranged, rs_manifest_rows **out,
                     size_t *n)
{
    int failed = 0;
    const rs_jv *arr = member(r, o, ctx, key, RS_JV_ARRAY, 0, &failed);
    if (arr == NULL || arr->n == 0)
        return failed ? -1 : 0;
    if (!(*out = calloc(arr->n, sizeof **out)))
        return rs_error_set(r->err, RS_EXIT_IO, "%s: out of memory", r->path);
    for (size_t i = 0; i < arr->n; i++) {
        char c[96];
        snprintf(c, sizeof c, "%s.%s[%zu]", ctx, key, i);
        rs_manifest_rows *v = &(*out)[i];
        if (arr->items[i].type != RS_JV_OBJECT)
            return rs_error_set(r->err, RS_EXIT_DATA, "%s: manifest member \"%s\": an object expected", r->path, c);
        *n = i + 1;
        if (get_str(r, &arr->items[i], c, "node", &v->node) != 0)
            return -1;
        if (ranged && (get_u64(r, &arr->items[i], c, "from", 1, UINT64_MAX, &v->from) != 0 ||
                       get_u64(r, &arr->items[i], c, "to", 1, UINT64_MAX, &v->to) != 0))
            return -1;
        if (ranged && v->to <= v->from)
            return bad(r, c, "to", "not more than \"from\"");
    }
    return 0;
}

/* An optional array of {"node": ...} (write_nodes) into *out, *n. */
static int read_nodes(reader *r, const rs_jv *o, const char *ctx, const char *key, char ***out, size_t *n)
{
    rs_manifest_rows *v = NULL;
    int rc = read_rows(r, o, ctx, key, 0, &v, n);
    if (v && !(*out = calloc(*n, sizeof **out)))
        rc = rs_error_set(r->err, RS_EXIT_IO, "%s: out of memory", r->path);
    for (size_t i = 0; v && i < *n; i++) {
        if (*out)
            (*out)[i] = v[i].node;
        else
            free(v[i].node);
    }
    if (!*out)
        *n = 0;
    free(v);
    return rc;
}

static int read_inputs(reader *r, const rs_jv *arr, rs_manifest *m)
{
    if (arr->n == 0)
        return 0;
    m->inputs = calloc(arr->n, sizeof *m->inputs);
    if (m->inputs == NULL)
        return rs_error_set(r->err, RS_EXIT_IO, "%s: out of memory", r->path);
    for (size_t i = 0; i < arr->n; i++) {
        const rs_jv *o = &arr->items[i];
        rs_manifest_input *in = &m->inputs[i];
        char ctx[48];
        snprintf(ctx, sizeof ctx, "inputs[%zu]", i);
        m->ninputs = i + 1;
        if (o->type != RS_JV_OBJECT)
            return rs_error_set(r->err, RS_EXIT_DATA, "%s: manifest member \"%s\": an object expected", r->path, ctx);
        if (get_str(r, o, ctx, "path", &in->path) != 0 || get_u64(r, o, ctx, "size", 1, UINT64_MAX, &in->size) != 0 ||
            get_u64(r, o, ctx, "rows", 1, UINT64_MAX, &in->rows) != 0 ||
            get_u64(r, o, ctx, "bytes", 1, UINT64_MAX, &in->bytes) != 0 ||
            get_u64(r, o, ctx, "rejected", 1, UINT64_MAX, &in->rejected) != 0 ||
            get_u64(r, o, ctx, "blank_lines", 1, UINT64_MAX, &in->blank_lines) != 0 ||
            get_u64(r, o, ctx, "zero_padding_bytes", 0, UINT64_MAX, &in->zero_padding) != 0 ||
            get_hex_token(r, o, ctx, "checksum", "crc64:", 16, &in->checksum) != 0 ||
            get_hex_token(r, o, ctx, "content", "crc64:", 16, &in->content) != 0 ||
            get_u64(r, o, ctx, "content_size", in->content != NULL, UINT64_MAX, &in->content_size) != 0 ||
            get_u64(r, o, ctx, "generation", 0, UINT64_MAX, &in->generation) != 0 ||
            read_nodes(r, o, ctx, "lost", &in->lost, &in->nlost) != 0 ||
            read_nodes(r, o, ctx, "restored", &in->restored, &in->nrestored) != 0 ||
            read_rows(r, o, ctx, "lost_rows", 1, &in->lost_rows, &in->nlost_rows) != 0 ||
            read_rows(r, o, ctx, "restored_rows", 1, &in->restored_rows, &in->nrestored_rows) != 0)
            return -1;
    }
    return 0;
}

/* "index", "index_bytes", "index_crc32": a key index file beside. */
static int read_index_ref(reader *r, const rs_jv *o, const char *ctx, char **index, uint64_t *bytes, uint32_t *crc)
{
    uint64_t v;
    if (get_str(r, o, ctx, "index", index) != 0)
        return -1;
    if (!safe_file_name(*index))
        return bad(r, ctx, "index", "not a plain file name");
    if (get_u64(r, o, ctx, "index_bytes", 1, UINT64_MAX, bytes) != 0 ||
        get_u64(r, o, ctx, "index_crc32", 1, UINT32_MAX, &v) != 0)
        return -1;
    *crc = (uint32_t)v;
    return 0;
}

/* A decimal number at *p (at most 2^64 - 1) into *x, *p past it; -1 when
 * there is none or it is too large. */
static int scan_u64(const char **p, uint64_t *x)
{
    const char *s = *p;
    uint64_t v = 0;
    if (*s < '0' || *s > '9' || (*s == '0' && s[1] >= '0' && s[1] <= '9'))
        return -1;
    for (; *s >= '0' && *s <= '9'; s++) {
        unsigned d = (unsigned)(*s - '0');
        if (v > UINT64_MAX / 10 || (v == UINT64_MAX / 10 && d > UINT64_MAX % 10))   /* (no division a digit) */
            return -1;
        v = v * 10 + d;
    }
    *x = v, *p = s;
    return 0;
}

size_t rs_manifest_runs_scan(const char *text, size_t ninputs, rs_manifest_run *v, size_t *n, uint64_t *rows,
                             const char **why)
{
    const char *p = text;
    *n = 0, *rows = 0;
    for (size_t i = 0; *p || i == 0; i++) {
        rs_manifest_run one;
        *why = "\"input:from-to\" expected, runs separated by one space";
        if ((i && *p++ != ' ') || scan_u64(&p, &one.input) != 0 || *p++ != ':' || scan_u64(&p, &one.from) != 0 ||
            *p++ != '-' || scan_u64(&p, &one.to) != 0 || (*p && *p != ' '))
            return i + 1;
        *why = "input not in the manifest";
        if (one.input >= ninputs)
            return i + 1;
        *why = "to not more than from";
        if (one.to <= one.from)
            return i + 1;
        if (v)
            v[i] = one;
        *n = i + 1, *rows += one.to - one.from;
    }
    return 0;
}

/* A file's optional "runs" (write_runs): each names an input of m, and
 * they hold the file's rows, no more, no less. Checked here, kept as text
 * (fl->runs_text, the parsed tree's string taken over): a base compacted
 * from a year of days has hundreds of runs a file, which only repair and
 * compact read (rs_manifest_file_runs), and which as arrays would cost
 * every open megabytes of memory to touch. */
static int read_runs(reader *r, const rs_jv *o, const char *ctx, const rs_manifest *m, rs_manifest_file *fl)
{
    int failed = 0;
    const rs_jv *t = member(r, o, ctx, "runs", RS_JV_STRING, 0, &failed);
    if (t == NULL)
        return failed ? -1 : 0;
    size_t n;
    uint64_t rows;
    const char *why;
    size_t at = strlen(t->str) != t->len ? 1 : rs_manifest_runs_scan(t->str, m->ninputs, NULL, &n, &rows, &why);
    if (at)
        return rs_error_set(r->err, RS_EXIT_DATA, "%s: manifest member \"%s.runs\": run %zu: %s", r->path, ctx, at,
                            strlen(t->str) != t->len ? "contains a NUL character" : why);
    if (rows != fl->rows)
        return rs_error_set(r->err, RS_EXIT_DATA, "%s: manifest member \"%s.runs\": its runs hold %" PRIu64 " rows, "
                            "\"rows\" says %" PRIu64, r->path, ctx, rows, fl->rows);
    fl->runs_text = t->str;   /* taken over: the tree is freed after the read */
    ((rs_jv *)t)->str = NULL, ((rs_jv *)t)->len = 0;
    return 0;
}

int rs_manifest_file_runs(const rs_manifest_file *f, rs_manifest_run **v, size_t *n)
{
    *v = NULL, *n = 0;
    size_t cap = f->nruns ? f->nruns : 1;
    for (const char *p = f->runs_text; !f->nruns && p && *p; p++)
        cap += *p == ' ';
    if ((f->nruns || f->runs_text) && !(*v = malloc(cap * sizeof **v)))
        return -1;
    if (f->nruns) {
        memcpy(*v, f->runs, f->nruns * sizeof **v);
        *n = f->nruns;
    } else if (f->runs_text) {
        uint64_t rows;
        const char *why;
        if (rs_manifest_runs_scan(f->runs_text, SIZE_MAX, *v, n, &rows, &why) != 0)
            *n = 0;   /* (checked as read: not for a manifest read here) */
    }
    if (!*n)
        free(*v), *v = NULL;
    return 0;
}

static int read_files(reader *r, const rs_jv *arr, rs_manifest *m, int moves)
{
    if (arr->n == 0)
        return 0;
    m->files = calloc(arr->n, sizeof *m->files);
    if (m->files == NULL)
        return rs_error_set(r->err, RS_EXIT_IO, "%s: out of memory", r->path);
    for (size_t i = 0; i < arr->n; i++) {
        const rs_jv *o = &arr->items[i];
        rs_manifest_file *fl = &m->files[i];
        char ctx[48];
        uint64_t v;
        snprintf(ctx, sizeof ctx, "files[%zu]", i);
        m->nfiles = i + 1;
        if (o->type != RS_JV_OBJECT)
            return rs_error_set(r->err, RS_EXIT_DATA, "%s: manifest member \"%s\": an object expected", r->path, ctx);
        if (get_str(r, o, ctx, "file", &fl->file) != 0)
            return -1;
        if (!safe_file_name(fl->file))
            return bad(r, ctx, "file", "not a plain file name");
        if (moves) {
            if (get_str(r, o, ctx, "from", &fl->from) != 0 || get_str(r, o, ctx, "to", &fl->to) != 0 ||
                get_u64(r, o, ctx, "wave", 0, UINT32_MAX, &v) != 0)
                return -1;
            fl->wave = (uint32_t)v;
        } else if (get_str(r, o, ctx, "node", &fl->node) != 0) {
            return -1;
        }
        if (get_u64(r, o, ctx, "rows", 1, UINT64_MAX, &fl->rows) != 0 ||
            get_u64(r, o, ctx, "bytes", 1, UINT64_MAX, &fl->bytes) != 0 ||
            get_u64(r, o, ctx, "file_bytes", 1, UINT64_MAX, &fl->file_bytes) != 0 ||
            get_u64(r, o, ctx, "header_bytes", m->segment_header, fl->file_bytes, &fl->header_bytes) != 0 ||
            get_u64(r, o, ctx, "crc32", 1, UINT32_MAX, &v) != 0)
            return -1;
        fl->crc32 = (uint32_t)v;
        const rs_jv *hex = rs_jv_get(o, "crc32_hex");
        if (hex != NULL) {
            char want[9];
            snprintf(want, sizeof want, "%08" PRIx32, fl->crc32);
            if (hex->type != RS_JV_STRING || strcmp(hex->str, want) != 0)
                return bad(r, ctx, "crc32_hex", "does not match crc32 (8 lowercase hex digits expected)");
        }
        /* optional: a manifest written before 0.3.0 has none, and its readers check the data */
        fl->has_stored_crc32 = rs_jv_get(o, "stored_crc32") != NULL;
        if (get_u64(r, o, ctx, "stored_crc32", 0, UINT32_MAX, &v) != 0)
            return -1;
        fl->stored_crc32 = (uint32_t)v;
        if (rs_jv_get(o, "index") != NULL &&
            read_index_ref(r, o, ctx, &fl->index, &fl->index_bytes, &fl->index_crc32) != 0)
            return -1;
        if (read_runs(r, o, ctx, m, fl) != 0)
            return -1;
    }
    return 0;
}

/* "indexes" of a generation: key indexes it built for earlier files. */
static int read_indexes(reader *r, const rs_jv *arr, rs_manifest *m)
{
    if (arr->n == 0)
        return 0;
    if (!(m->indexes = calloc(arr->n, sizeof *m->indexes)))
        return rs_error_set(r->err, RS_EXIT_IO, "%s: out of memory", r->path);
    for (size_t i = 0; i < arr->n; i++) {
        const rs_jv *o = &arr->items[i];
        rs_manifest_index *x = &m->indexes[i];
        char ctx[48];
        snprintf(ctx, sizeof ctx, "indexes[%zu]", i);
        m->nindexes = i + 1;
        if (o->type != RS_JV_OBJECT)
            return rs_error_set(r->err, RS_EXIT_DATA, "%s: manifest member \"%s\": an object expected", r->path, ctx);
        if (get_u64(r, o, ctx, "generation", 1, UINT64_MAX, &x->generation) != 0 ||
            get_str(r, o, ctx, "file", &x->file) != 0 ||
            read_index_ref(r, o, ctx, &x->index, &x->index_bytes, &x->index_crc32) != 0)
            return -1;
        if (!safe_file_name(x->file))
            return bad(r, ctx, "file", "not a plain file name");
    }
    return 0;
}

static int read_doc(reader *r, const rs_jv *root, rs_manifest *m)
{
    int failed = 0;
    const rs_jv *v;
    if (root->type != RS_JV_OBJECT)
        return rs_error_set(r->err, RS_EXIT_DATA, "%s: not a manifest (a JSON object expected)", r->path);
    v = member(r, root, "", "schema", RS_JV_NUMBER, 1, &failed);
    if (v == NULL)
        return -1;
    if (strcmp(v->str, "1") != 0 && strcmp(v->str, "2") != 0 && strcmp(v->str, "3") != 0)
        return rs_error_set(r->err, RS_EXIT_DATA,
                            "%s: unsupported manifest schema %.40s (this version of ringshard reads schemas 1 to %d)",
                            r->path, v->str, MANIFEST_SCHEMA);
    m->schema = v->str[0] - '0';

    if (get_str(r, root, "", "kind", &m->kind) != 0)
        return -1;
    int moves = strcmp(m->kind, "moves") == 0, gen = strcmp(m->kind, "generation") == 0;
    if (!moves && !gen && strcmp(m->kind, "buckets") != 0)
        return bad(r, "", "kind", "\"buckets\" or \"moves\" expected");  /* ("generation": a g<N>/ of one) */
    if (gen && m->schema < 2)
        return bad(r, "", "kind", "\"generation\" needs schema 2");
    if (!gen && m->schema > 2)
        return bad(r, "", "schema", "3 is for kind \"generation\" only");
    /* schema 3: its segments start with the header line; a reader of
     * schema 2 would take that line for a row, so it refuses the schema */
    const rs_jv *sh = member(r, root, "", "segment_header", RS_JV_BOOL, m->schema == 3, &failed);
    if (failed)
        return -1;
    m->segment_header = sh != NULL && sh->boolean;
    if (m->segment_header != (m->schema == 3))
        return bad(r, "", "segment_header", m->schema == 3 ? "true expected in schema 3" : "true needs schema 3");
    if (m->schema >= 2 && get_u64(r, root, "", "generation", 1, UINT64_MAX, &m->generation) != 0)
        return -1;
    if (m->schema >= 2 && m->generation == 0)
        return bad(r, "", "generation", "a generation number from 1 expected");
    if (gen && (rs_jv_get(root, "previous") == NULL ? bad(r, "", "previous", "missing")
                                                      : get_hex_token(r, root, "", "previous", "", 32, &m->previous)) != 0)
        return -1;

    const rs_jv *tool = member(r, root, "", "tool", RS_JV_OBJECT, 0, &failed);
    if (failed)
        return -1;
    if (tool != NULL && rs_jv_get(tool, "version") != NULL && get_str(r, tool, "tool", "version", &m->tool_version) != 0)
        return -1;

    if (get_ring(r, root, "ring", &m->ring_fingerprint, &m->ring_description) != 0)
        return -1;
    if ((moves || rs_jv_get(root, "new_ring") != NULL) &&
        get_ring(r, root, "new_ring", &m->new_ring_fingerprint, &m->new_ring_description) != 0)
        return -1;

    const rs_jv *opts = member(r, root, "", "options", RS_JV_OBJECT, 1, &failed);
    if (opts == NULL)
        return -1;
    char *compress = NULL;
    if (get_str_or_null(r, opts, "options", "key", &m->key) != 0 || get_delimiter(r, opts, "delimiter", &m->delimiter) != 0 ||
        get_delimiter(r, opts, "key_sep", &m->key_sep) != 0 ||
        get_bool(r, opts, "options", "header", &m->header) != 0 ||
        get_str(r, opts, "options", "compress", &compress) != 0)
        return -1;
    if (rs_compress_parse(compress, &m->compress) == 0) {
        free(compress);
    } else {
        free(compress);
        return bad(r, "options", "compress", "\"gzip\", \"zstd\" or \"none\" expected");
    }
    if (get_int(r, opts, "options", "level", &m->level) != 0 ||
        get_bool(r, opts, "options", "keys_only", &m->keys_only) != 0)
        return -1;
    if (rs_jv_get(opts, "dedup") != NULL && rs_jv_get(opts, "dedup")->type != RS_JV_NULL) {
        if (get_str(r, opts, "options", "dedup", &m->dedup) != 0)
            return -1;
        if (strcmp(m->dedup, "first") != 0 && strcmp(m->dedup, "row") != 0)
            return bad(r, "options", "dedup", "\"first\" or \"row\" expected");
    }

    if (get_str_or_null(r, root, "", "header", &m->header_line) != 0)
        return -1;

    const rs_jv *inputs = member(r, root, "", "inputs", RS_JV_ARRAY, 1, &failed);
    if (inputs == NULL || read_inputs(r, inputs, m) != 0)
        return -1;
    const rs_jv *files = member(r, root, "", "files", RS_JV_ARRAY, 1, &failed);
    if (files == NULL || read_files(r, files, m, moves) != 0)
        return -1;
    const rs_jv *indexes = member(r, root, "", "indexes", RS_JV_ARRAY, 0, &failed);
    if (failed || (indexes != NULL && read_indexes(r, indexes, m) != 0))
        return -1;

    const rs_jv *totals = member(r, root, "", "totals", RS_JV_OBJECT, 1, &failed);
    uint64_t nfiles;
    if (totals == NULL || get_u64(r, totals, "totals", "rows", 1, UINT64_MAX, &m->rows) != 0 ||
        get_u64(r, totals, "totals", "bytes", 1, UINT64_MAX, &m->bytes) != 0 ||
        get_u64(r, totals, "totals", "rejected", 1, UINT64_MAX, &m->rejected) != 0 ||
        get_u64(r, totals, "totals", "files", 1, UINT64_MAX, &nfiles) != 0)
        return -1;
    if (nfiles != m->nfiles)
        return bad(r, "totals", "files", "does not match the number of \"files\" entries");

    v = rs_jv_get(root, "seconds");   /* the run's duration, before 0.8.0: not used */
    if (v != NULL && v->type != RS_JV_NUMBER && v->type != RS_JV_NULL)
        return bad(r, "", "seconds", "a number expected");
    return 0;
}

/* Reads all of fd (closed here) into a malloc'd buffer. */
static char *read_fd(int fd, const char *path, size_t *len, rs_error *err)
{
    size_t cap = 1 << 16, n = 0;
    char *p = malloc(cap);
    for (;;) {
        if (p == NULL) {
            close(fd);
            rs_error_set(err, RS_EXIT_IO, "%s: out of memory", path);
            return NULL;
        }
        ssize_t k = read(fd, p + n, cap - n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            int e = errno;
            close(fd);
            free(p);
            rs_error_set(err, RS_EXIT_IO, "%s: %s", path, strerror(e));
            return NULL;
        }
        if (k == 0)
            break;
        n += (size_t)k;
        if (n < cap)
            continue;
        cap *= 2;
        char *q = realloc(p, cap);
        if (q == NULL)
            free(p);
        p = q;
    }
    close(fd);
    *len = n;
    return p;
}

int rs_manifest_parse(rs_manifest *m, const char *text, size_t len, const char *path, rs_error *err)
{
    memset(m, 0, sizeof *m);
    rs_jv root;
    if (rs_jv_parse(&root, text, len, path, err, NULL) != 0)
        return -1;
    reader r = {.path = path, .err = err};
    int rc = read_doc(&r, &root, m);
    rs_jv_free(&root);
    if (rc != 0) {
        rs_manifest_free(m);
        return -1;
    }
    return 0;
}

int rs_manifest_readat(rs_manifest *m, int dirfd, const char *name, const char *path, uint64_t digest[2],
                       rs_error *err)
{
    memset(m, 0, sizeof *m);
    if (path == NULL)
        path = name;
    int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return rs_error_set(err, RS_EXIT_IO, "%s: %s", path, strerror(errno));
    size_t len;
    char *text = read_fd(fd, path, &len, err);
    if (text == NULL)
        return -1;
    if (digest != NULL)
        rs_murmur3_x64_128(text, len, 0, digest);
    int rc = rs_manifest_parse(m, text, len, path, err);
    free(text);
    return rc;
}

void rs_manifest_digest_hex(const uint64_t digest[2], char out[33])
{
    snprintf(out, 33, "%016" PRIx64 "%016" PRIx64, digest[0], digest[1]);
}

int rs_manifest_read(rs_manifest *m, const char *path, rs_error *err)
{
    return rs_manifest_readat(m, AT_FDCWD, path, path, NULL, err);
}

