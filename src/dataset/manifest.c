/* DIR/manifest.json (ringshard/manifest.h). The full schema, with every
 * member's type and meaning, is in docs/format-manifest.md; in short:
 *
 * {
 *   "schema": 1,                          integer: 1, 2 (grows), 3 (a generation whose
 *                                         segments start with the header); others refused
 *   "segment_header": true,               schema 3 only (then files[].header_bytes)
 *   "kind": "buckets" | "moves",
 *   "tool": {"name": "ringshard", "version": "0.1.0"},
 *   "ring": {"fingerprint": "<32 hex>", "description": "<canonical text>"},
 *   "new_ring": {"fingerprint": ..., "description": ...},   moves only
 *   "options": {"key": "<--key as given>" | null (the default: column 1), "delimiter": ",", "header": true,
 *               "compress": "gzip" | "zstd" | "none", "level": 1, "keys_only": false},
 *   "header": "<header line without line end>" | null,
 *   "inputs": [{"path": ..., "size": n, "rows": n, "bytes": n,
 *               "rejected": n, "blank_lines": n, "zero_padding_bytes": n}, ...],
 *   "files": [{"file": "<name in DIR>",
 *              "node": "<node>",                           buckets
 *              "from": "<node>", "to": "<node>",           moves
 *              "wave": n,                    moves, only when nonzero
 *              "rows": n, "bytes": n, "file_bytes": n,
 *              "crc32": n, "crc32_hex": "<8 lowercase hex>",
 *              "stored_crc32": n             optional: CRC-32 of the stored bytes,
 *              "runs": "I:F-T ..."           optional: whose rows, in order}, ...],
 *   "totals": {"rows": n, "bytes": n, "rejected": n, "files": n}
 * }
 *
 * Written pretty (2-space indentation), members always in this order, so
 * two runs over the same data with the same options give byte-identical
 * manifests (no time of any kind: a run's duration is in its metrics). Integers are unsigned decimal and exact
 * to 2^64-1 (the reader keeps numbers as text). crc32 is the CRC-32
 * (ISO-HDLC, as zlib's crc32()) as an unsigned decimal integer; crc32_hex
 * is the same value as 8 lowercase hex digits, most significant first
 * (printf "%08x"). Strings are UTF-8; bytes that are not valid UTF-8 are
 * written as \u00xx (see json.h) and so do not read back identically:
 * such a string is followed by "<name>_hex" with its exact bytes, which
 * the reader uses instead (header, key, descriptions, paths, node names).
 *
 * Reading: unknown members are ignored. Optional: "tool", "seconds" (a
 * number or null, written before 0.8.0, ignored), files[].wave (default 0), files[].crc32_hex (checked against
 * crc32 when present), "new_ring" for buckets. Everything else is required;
 * "files"[].file must be a plain name (no '/', not empty, "." or ".."), and
 * totals.files must equal the number of "files" entries. The reader is
 * manifest_read.c. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ringshard/buf.h"
#include "ringshard/deflate.h"
#include "ringshard/filename.h"
#include "ringshard/json.h"
#include "ringshard/manifest.h"
#include "ringshard/util.h"
#include "rs_config.h"
#include "util/json_read.h"
#include "util/filemode.h"


static int is_moves(const char *kind) { return kind != NULL && strcmp(kind, "moves") == 0; }

/* 1 if s is well-formed UTF-8 (then the JSON string holds it exactly). */
static int is_utf8(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        if (p[i] < 0x80) {
            i++;
            continue;
        }
        size_t k = rs_utf8_seq_len(p + i, n - i);
        if (k == 0)
            return 0;
        i += k;
    }
    return 1;
}

/* "key": s, and when s is not UTF-8 (the JSON string then shows each bad
 * byte as U+00xx: lossy), "key_hex": the bytes of s in lowercase hex, which
 * readers use instead (docs/format-manifest.md, "Strings"). */
static void write_str(rs_json *j, const char *key, const char *s)
{
    rs_json_key(j, key);
    rs_json_string(j, s);
    if (s == NULL || is_utf8(s))
        return;
    static const char digits[] = "0123456789abcdef";
    size_t n = strlen(s);
    char *hex = malloc(2 * n + 1), name[64];
    if (hex == NULL) {
        j->error = 1;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        hex[2 * i] = digits[(unsigned char)s[i] >> 4];
        hex[2 * i + 1] = digits[(unsigned char)s[i] & 15];
    }
    hex[2 * n] = '\0';
    snprintf(name, sizeof name, "%s_hex", key);
    rs_json_key(j, name);
    rs_json_string(j, hex);
    free(hex);
}

static void write_ring(rs_json *j, const char *name, const char *fingerprint, const char *description)
{
    rs_json_key(j, name);
    rs_json_object_begin(j);
    /* every string the reader takes with a _hex member is written so (ours
     * are ASCII; one read from a manifest may not be) */
    write_str(j, "fingerprint", fingerprint);
    write_str(j, "description", description);
    rs_json_object_end(j);
}

static void write_u64(rs_json *j, const char *key, uint64_t v)
{
    rs_json_key(j, key);
    rs_json_u64(j, v);
}

/* "runs": "I:F-T I:F-T ...", one string: a file of a base compacted from
 * a year of days has hundreds, which as JSON arrays would cost a parsed
 * value each at every open (and a line each, pretty-printed). */
static void write_runs(rs_json *j, const rs_manifest_file *fl)
{
    if (!fl->nruns) {   /* as read */
        rs_json_key(j, "runs");
        rs_json_string(j, fl->runs_text);
        return;
    }
    rs_buf b = {0};
    for (size_t i = 0; i < fl->nruns; i++) {
        char one[80];
        int n = snprintf(one, sizeof one, "%s%" PRIu64 ":%" PRIu64 "-%" PRIu64, i ? " " : "", fl->runs[i].input,
                         fl->runs[i].from, fl->runs[i].to);
        rs_buf_append(&b, one, (size_t)n);
    }
    if (rs_buf_append(&b, "", 1) != 0) {   /* its NUL */
        j->error = 1;
        rs_buf_free(&b);
        return;
    }
    rs_json_key(j, "runs");
    rs_json_string(j, b.data);
    rs_buf_free(&b);
}

/* The head: schema, kind, generation, previous, segment_header, tool. */
static void write_head(rs_json *j, const rs_manifest *m)
{
    int schema = m->schema ? m->schema : 1;
    rs_json_key(j, "schema");
    rs_json_i64(j, schema);
    write_str(j, "kind", m->kind);
    if (schema >= 2)
        write_u64(j, "generation", m->generation);
    if (m->previous != NULL)
        write_str(j, "previous", m->previous);
    if (m->segment_header) {
        rs_json_key(j, "segment_header");
        rs_json_bool(j, 1);
    }

    rs_json_key(j, "tool");
    rs_json_object_begin(j);
    rs_json_key(j, "name");
    rs_json_string(j, "ringshard");
    write_str(j, "version", m->tool_version ? m->tool_version : RS_VERSION);
    rs_json_object_end(j);
}

/* "options": the key, the CSV dialect, the compression, dedup. */
static void write_options(rs_json *j, const rs_manifest *m)
{
    rs_json_key(j, "options");
    rs_json_object_begin(j);
    write_str(j, "key", m->key);
    if (m->key_sep && m->key_sep != '|') {  /* the default is left out: older readers read the rest */
        rs_json_key(j, "key_sep");
        rs_json_string_n(j, &m->key_sep, 1);
    }
    rs_json_key(j, "delimiter");
    rs_json_string_n(j, &m->delimiter, 1);
    rs_json_key(j, "header");
    rs_json_bool(j, m->header);
    rs_json_key(j, "compress");
    rs_json_string(j, rs_compress_name(m->compress));
    rs_json_key(j, "level");
    rs_json_i64(j, m->level);
    rs_json_key(j, "keys_only");
    rs_json_bool(j, m->keys_only);
    if (m->dedup != NULL)
        write_str(j, "dedup", m->dedup);
    rs_json_object_end(j);
}

/* "key": [{"node": ...}, ...] (nodes) or [{"node": ..., "from": A, "to":
 * B}, ...] (rows), when n > 0: objects, so that a node name that is not
 * UTF-8 gets its node_hex as files[].node does. */
static void write_nodes(rs_json *j, const char *key, char *const *nodes, const rs_manifest_rows *rows, size_t n)
{
    if (n == 0)
        return;
    rs_json_key(j, key);
    rs_json_array_begin(j);
    for (size_t i = 0; i < n; i++) {
        rs_json_object_begin(j);
        write_str(j, "node", rows ? rows[i].node : nodes[i]);
        if (rows) {
            write_u64(j, "from", rows[i].from);
            write_u64(j, "to", rows[i].to);
        }
        rs_json_object_end(j);
    }
    rs_json_array_end(j);
}

/* "inputs": one object per input, in input order. */
static void write_inputs(rs_json *j, const rs_manifest *m)
{
    rs_json_key(j, "inputs");
    rs_json_array_begin(j);
    for (size_t i = 0; i < m->ninputs; i++) {
        const rs_manifest_input *in = &m->inputs[i];
        rs_json_object_begin(j);
        write_str(j, "path", in->path);
        write_u64(j, "size", in->size);
        write_u64(j, "rows", in->rows);
        write_u64(j, "bytes", in->bytes);
        write_u64(j, "rejected", in->rejected);
        write_u64(j, "blank_lines", in->blank_lines);
        write_u64(j, "zero_padding_bytes", in->zero_padding);
        if (in->checksum != NULL)
            write_str(j, "checksum", in->checksum);
        if (in->content != NULL) {
            write_str(j, "content", in->content);
            write_u64(j, "content_size", in->content_size);
        }
        if (in->generation != 0)
            write_u64(j, "generation", in->generation);
        write_nodes(j, "lost", in->lost, NULL, in->nlost);
        write_nodes(j, "restored", in->restored, NULL, in->nrestored);
        write_nodes(j, "lost_rows", NULL, in->lost_rows, in->nlost_rows);
        write_nodes(j, "restored_rows", NULL, in->restored_rows, in->nrestored_rows);
        rs_json_object_end(j);
    }
    rs_json_array_end(j);
}

/* "files": one object per file, a move file with its from and to. */
static void write_files(rs_json *j, const rs_manifest *m, int moves)
{
    rs_json_key(j, "files");
    rs_json_array_begin(j);
    for (size_t i = 0; i < m->nfiles; i++) {
        const rs_manifest_file *fl = &m->files[i];
        char hex[9];
        snprintf(hex, sizeof hex, "%08" PRIx32, fl->crc32);
        rs_json_object_begin(j);
        write_str(j, "file", fl->file);  /* ringshard's names are ASCII; a read one may not be */
        if (moves) {
            write_str(j, "from", fl->from);
            write_str(j, "to", fl->to);
            if (fl->wave != 0)
                write_u64(j, "wave", fl->wave);
        } else {
            write_str(j, "node", fl->node);
        }
        write_u64(j, "rows", fl->rows);
        write_u64(j, "bytes", fl->bytes);
        write_u64(j, "file_bytes", fl->file_bytes);
        if (m->segment_header)
            write_u64(j, "header_bytes", fl->header_bytes);
        write_u64(j, "crc32", fl->crc32);
        rs_json_key(j, "crc32_hex");
        rs_json_string(j, hex);
        if (fl->has_stored_crc32)
            write_u64(j, "stored_crc32", fl->stored_crc32);
        if (fl->nruns || fl->runs_text)
            write_runs(j, fl);
        if (fl->index != NULL) {
            write_str(j, "index", fl->index);
            write_u64(j, "index_bytes", fl->index_bytes);
            write_u64(j, "index_crc32", fl->index_crc32);
        }
        rs_json_object_end(j);
    }
    rs_json_array_end(j);
}

/* "indexes" (only when there are any): key indexes built since for files
 * of earlier generations. */
static void write_indexes(rs_json *j, const rs_manifest *m)
{
    if (m->nindexes > 0) {
        rs_json_key(j, "indexes");
        rs_json_array_begin(j);
        for (size_t i = 0; i < m->nindexes; i++) {
            const rs_manifest_index *x = &m->indexes[i];
            rs_json_object_begin(j);
            write_u64(j, "generation", x->generation);
            write_str(j, "file", x->file);
            write_str(j, "index", x->index);
            write_u64(j, "index_bytes", x->index_bytes);
            write_u64(j, "index_crc32", x->index_crc32);
            rs_json_object_end(j);
        }
        rs_json_array_end(j);
    }
}

int rs_manifest_write(const rs_manifest *m, const char *path, rs_error *err)
{
    FILE *f = rs_file_create_stream(path, "w", RS_FILE_USER);
    if (f == NULL)
        return rs_error_set(err, RS_EXIT_IO, "%s: %s", path, strerror(errno));
    errno = 0;
    int moves = is_moves(m->kind);
    rs_json j;
    rs_json_init(&j, f, 1);
    rs_json_object_begin(&j);
    write_head(&j, m);

    write_ring(&j, "ring", m->ring_fingerprint, m->ring_description);
    if (moves || m->new_ring_description != NULL)
        write_ring(&j, "new_ring", m->new_ring_fingerprint, m->new_ring_description);

    write_options(&j, m);

    write_str(&j, "header", m->header_line);   /* NULL -> null */

    write_inputs(&j, m);
    write_files(&j, m, moves);
    write_indexes(&j, m);

    rs_json_key(&j, "totals");
    rs_json_object_begin(&j);
    write_u64(&j, "rows", m->rows);
    write_u64(&j, "bytes", m->bytes);
    write_u64(&j, "rejected", m->rejected);
    write_u64(&j, "files", m->nfiles);
    rs_json_object_end(&j);
    rs_json_object_end(&j);
    fputc('\n', f);

    int rc = rs_json_finish(&j);
    int e = ferror(f) ? (errno ? errno : EIO) : 0;
    if (fclose(f) != 0 && e == 0)
        e = errno ? errno : EIO;
    if (e != 0)
        return rs_error_set(err, RS_EXIT_IO, "%s: writing the manifest failed: %s", path, strerror(e));
    if (rc != 0)   /* misuse of the writer: a bug */
        return rs_error_set(err, RS_EXIT_IO, "%s: internal error writing the manifest", path);
    return 0;
}

void rs_manifest_free(rs_manifest *m)
{
    if (m == NULL)
        return;
    free(m->kind);
    free(m->tool_version);
    free(m->ring_description);
    free(m->ring_fingerprint);
    free(m->new_ring_description);
    free(m->new_ring_fingerprint);
    free(m->key);
    free(m->header_line);
    free(m->previous);
    free(m->dedup);
    for (size_t i = 0; i < m->ninputs; i++) {
        free(m->inputs[i].path);
        free(m->inputs[i].checksum);
        free(m->inputs[i].content);
        rs_free_strings(m->inputs[i].lost, m->inputs[i].nlost);
        rs_free_strings(m->inputs[i].restored, m->inputs[i].nrestored);
        for (size_t k = 0; k < m->inputs[i].nlost_rows; k++)
            free(m->inputs[i].lost_rows[k].node);
        for (size_t k = 0; k < m->inputs[i].nrestored_rows; k++)
            free(m->inputs[i].restored_rows[k].node);
        free(m->inputs[i].lost_rows);
        free(m->inputs[i].restored_rows);
    }
    free(m->inputs);
    for (size_t i = 0; i < m->nfiles; i++) {
        free(m->files[i].file);
        free(m->files[i].node);
        free(m->files[i].from);
        free(m->files[i].to);
        free(m->files[i].index);
        free(m->files[i].runs);
        free(m->files[i].runs_text);
    }
    free(m->files);
    for (size_t i = 0; i < m->nindexes; i++) {
        free(m->indexes[i].file);
        free(m->indexes[i].index);
    }
    free(m->indexes);
    memset(m, 0, sizeof *m);
}
