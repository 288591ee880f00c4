/* src/pipeline/produce.c - the producer: reads and inflates the inputs,
 * their headers and units, and cuts the stream into batches of whole
 * records and each batch into segments (see the top of pipeline.c for the
 * design, and rs_pipe_produce below). One thread at a time. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "ringshard/hash.h"
#include "ringshard/interrupt.h"
#include "ringshard/text.h"
#include "ringshard/util.h"
#include "pipeline/pipe.h"

#define RS_READ_STEP ((size_t)256 << 10) /* bytes inflated per call: counted while hot */
#define RS_RAMP 3                           /* an input's first batches: cap/8, cap/4, cap/2 */

/* First record boundary at or after `from` in p[0..len) given the quote
 * parity at `from`; len if none. A boundary follows LF, or a CR that is
 * not followed by LF, outside quotes. */
static size_t boundary_from(const char *p, size_t len, size_t from, int in_quote)
{
    for (size_t i = from; i < len; i++) {
        char c = p[i];
        if (c == '"')
            in_quote = !in_quote;
        else if (!in_quote && c == '\n')
            return i + 1;
        else if (!in_quote && c == '\r' && i + 1 < len && p[i + 1] != '\n')
            return i + 1;
    }
    return len;
}

/* The last record boundary in p[0..len) (p starts at one; it holds
 * `quotes` quotes), or 0 if there is none. A CR at the very end is not a
 * boundary yet: an LF may follow. */
static size_t last_boundary(const char *p, size_t len, size_t quotes)
{
    for (size_t j = len; j-- > 0;) {
        char c = p[j];
        if (c == '"')
            quotes--;
        else if ((quotes & 1) == 0 && (c == '\n' || (c == '\r' && j + 1 < len && p[j + 1] != '\n')))
            return j + 1;
    }
    return 0;
}

/* Where a malformed record ends under --on-bad-row skip|quarantine: at its
 * first line end outside quotes, the quotes followed past the fault
 * (rs_csv_resync): a record that is well-formed but lacks the key column,
 * has a key the run refuses or is longer than --max-record ends where it
 * ends, a quoted field never closed runs to the end of the input. Returns
 * the offset just past it, or 0 if its end is not in p[0..len) and more
 * input may follow (!at_eof). The splitter, the parser and bad_record all
 * use this rule, so they agree on every record boundary whatever the
 * input. */
size_t rs_pipe_bad_record_end(const rs_csv_dialect *d, const char *p, size_t len, int at_eof)
{
    int state = 0;
    size_t used;
    return rs_csv_resync(d, &state, p, len, at_eof, &used) ? used : 0;
}

/* The batch cut and segments for --on-bad-row skip|quarantine: records are
 * walked one by one with the parser's own recovery (bad_record_end), since
 * quote parity is wrong after a malformed quote. Slower than the parity
 * cut (one scan of the batch on the producing thread), and only used when
 * bad rows do not stop the run. Returns the cut (0: no complete record). */
static size_t cut_by_records(const rs_csv_dialect *d, batch *b, size_t len, int at_eof)
{
    const char *p = b->data;
    size_t pos = 0;
    int k = 1;
    b->seg[0] = 0;
    while (pos < len) {
        rs_csv_record rec;
        rs_csv_fault fault;
        int r = rs_csv_next(d, NULL, p + pos, len - pos, at_eof, &rec, NULL, NULL, NULL, &fault);
        size_t step;
        if (r == RS_CSV_OK)
            step = rec.consumed;
        else if (r == RS_CSV_MORE)
            break;
        else if (!(step = rs_pipe_bad_record_end(d, p + pos, len - pos, at_eof)))
            break;
        pos += step;
        while (k < RS_SEGMENTS && pos >= len / RS_SEGMENTS * (size_t)k)
            b->seg[k++] = pos;
    }
    while (k <= RS_SEGMENTS)
        b->seg[k++] = pos;
    return pos;
}

/* Counts the quotes of b->data[from..to) into b->quotes, recording the
 * checkpoints it passes (see batch). from is b's previous length. */
static void count_new(batch *b, size_t from, size_t to)
{
    while (from < to) {
        size_t next = (from / RS_QCK + 1) * RS_QCK;
        size_t stop = next < to ? next : to;
        b->quotes += rs_csv_count_quotes(b->data + from, stop - from);
        if (stop == next)
            b->qck[next / RS_QCK] = (uint32_t)b->quotes;
        from = stop;
    }
}

/* Quotes in b->data[0..at), from the nearest checkpoint at or before it. */
static size_t quotes_before(const batch *b, size_t at)
{
    size_t j = at / RS_QCK;
    return b->qck[j] + rs_csv_count_quotes(b->data + j * RS_QCK, at - j * RS_QCK);
}

static void cut_segments(batch *b)
{
    size_t prev = 0;
    b->seg[0] = 0;
    for (int k = 1; k < RS_SEGMENTS; k++) {
        size_t target = b->len / RS_SEGMENTS * (size_t)k;
        if (target < prev)
            target = prev;
        size_t bnd = target == 0 ? 0 : boundary_from(b->data, b->len, target, (int)(quotes_before(b, target) & 1));
        b->seg[k] = prev = bnd;
    }
    b->seg[RS_SEGMENTS] = b->len;
}

int rs_pipe_grow_batch(batch *b, size_t need)
{
    if (b->cap >= need)
        return 0;
    size_t nck = need / RS_QCK + 1;
    uint32_t *ck = realloc(b->qck, nck * sizeof *ck);
    if (!ck)
        return -1;
    b->qck = ck;
    char *d = realloc(b->data, need);
    if (!d)
        return -1;
    rs_advise_huge(d, need);
    b->data = d;
    b->cap = need;
    return 0;
}

/* Resolves --key against the header (or column numbers without one). */
static int resolve_key(pipe_state *s, const char *header_fields, uint32_t nfields, const char *path,
                       rs_error *err)
{
    if (rs_csv_keyspec_resolve(&s->keyspec, s->o->key, s->o->key_sep, header_fields, nfields, path, err) != 0)
        return -1;
    s->keyspec_ready = 1;
    return 0;
}

/* Appends what the reader gives to b, growing b by 1 MiB when less than
 * 64 KiB is free; sets *eof at the end of the input. 0 or -1 with err. */
static int read_more(pipe_state *s, rs_reader *rd, batch *b, int *eof, rs_error *err)
{
    if (b->cap - b->len < (size_t)1 << 16 && rs_pipe_grow_batch(b, b->len + ((size_t)1 << 20)) != 0)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    /* a step at a time: the first batch is then the producer's to size */
    size_t want = b->cap - b->len < RS_READ_STEP ? b->cap - b->len : RS_READ_STEP;
    ssize_t n = rs_pipe_read(s, rd, b->data + b->len, want, err);
    if (n < 0)
        return -1;
    if (n == 0)
        *eof = 1;
    b->len += (size_t)n;
    return 0;
}

/* Appends field f for a message, quoted, its odd bytes escaped
 * (rs_text_escape; a UTF-8 BOM, invisible otherwise, as <UTF-8 BOM>), cut
 * after RS_SHOW_FIELD bytes. */
#define RS_SHOW_FIELD 64
static void show_field(rs_buf *m, const char *f)
{
    size_t n = strlen(f), bom = rs_csv_bom_len(f, n);
    rs_buf_append(m, "'", 1);
    if (bom)
        rs_buf_append(m, "<UTF-8 BOM>", 11);
    rs_buf esc = {0};
    rs_text_escape(&esc, f + bom, n - bom, RS_SHOW_FIELD, '\'');  /* 'text'... */
    if (esc.len > 2)
        rs_buf_append(m, esc.data + 1, esc.len - 2);  /* without its quotes, which "..." may follow */
    rs_buf_append(m, "'", 1);
    if (esc.len >= 3 && memcmp(esc.data + esc.len - 3, "...", 3) == 0)
        rs_buf_append(m, "...", 3);
    rs_buf_free(&esc);
}

void rs_pipeline_header_difference(char *out, size_t cap, const char *fields, uint32_t nf, int bom, const char *ref,
                                   const char *ref_fields, uint32_t ref_nf, int ref_bom)
{
    rs_buf m = {0};
    char num[64];
    uint32_t k = 0;
    const char *a = fields, *b = ref_fields;
    while (k < nf && k < ref_nf && strcmp(a, b) == 0) {
        a += strlen(a) + 1;
        b += strlen(b) + 1;
        k++;
    }
    if (k < nf && k < ref_nf) {
        rs_buf_append(&m, num, (size_t)snprintf(num, sizeof num, "field %u is ", k + 1));
        show_field(&m, a);
        rs_buf_append(&m, ", ", 2);
        rs_buf_append(&m, ref, strlen(ref));
        rs_buf_append(&m, " has ", 5);
        show_field(&m, b);
    } else if (k < nf) {
        rs_buf_append(&m, num, (size_t)snprintf(num, sizeof num, "field %u is ", k + 1));
        show_field(&m, a);
        rs_buf_append(&m, ", ", 2);
        rs_buf_append(&m, ref, strlen(ref));
        rs_buf_append(&m, num, (size_t)snprintf(num, sizeof num, " has only %u field%s", ref_nf, ref_nf == 1 ? "" : "s"));
    } else {
        rs_buf_append(&m, num, (size_t)snprintf(num, sizeof num, "it has only %u field%s, ", nf, nf == 1 ? "" : "s"));
        rs_buf_append(&m, ref, strlen(ref));
        rs_buf_append(&m, " has ", 5);
        show_field(&m, b);
        rs_buf_append(&m, num, (size_t)snprintf(num, sizeof num, " as field %u", k + 1));
    }
    if (bom != ref_bom) {
        const char *who = bom ? "its header" : ref;
        rs_buf_append(&m, " (", 2);
        rs_buf_append(&m, who, strlen(who));
        rs_buf_append(&m, bom ? "" : "'s header", bom ? 0 : 9);
        const char *tail = " starts with a UTF-8 BOM, which is ignored)";
        rs_buf_append(&m, tail, strlen(tail));
    }
    snprintf(out, cap, "%.*s", m.data ? (int)m.len : 0, m.data ? m.data : "");
    rs_buf_free(&m);
}

/* Where input i is opened: relative to opts->input_dirfd when the inputs
 * are the files of one directory opened once (pipeline.h), else by path. */
static int input_dirfd(const rs_pipeline_opts *o)
{
    return o->input_names ? o->input_dirfd : AT_FDCWD;
}

static const char *input_name(const rs_pipeline_opts *o, size_t i)
{
    return o->input_names ? o->input_names[i] : o->inputs[i];
}

/* The fields of opts->header_ref (NUL-separated, as rs_csv_fields leaves
 * them; a UTF-8 BOM at its start is no part of them, as for an input's
 * header): their count, or -1 with err. */
static int ref_fields(const rs_pipeline_opts *o, rs_buf *out, rs_error *err)
{
    size_t bom = rs_csv_bom_len(o->header_ref, strlen(o->header_ref));
    int nf = rs_csv_fields(&o->dialect, o->header_ref + bom, strlen(o->header_ref) - bom, out);
    if (nf < 0) {
        char shown[640];
        rs_error_set(err, RS_EXIT_DATA, "%s: malformed header %s",
                     o->header_ref_name ? o->header_ref_name : "the reference header",
                     rs_text_shown(shown, sizeof shown, o->header_ref, strlen(o->header_ref), 200, '\''));
    }
    return nf;
}

/* bucket --append: the first header read must be the directory's
 * (opts header_ref, named header_ref_name); what follows it is compared with
 * that first one as usual. 1 with err when it differs (saying how, as for
 * two inputs), else 0. */
static int header_differs_from_ref(pipe_state *s, const rs_buf *fields, int nf, int has_bom, const char *path,
                                   uint64_t line, rs_error *err)
{
    const rs_pipeline_opts *o = s->o;
    rs_buf ref = {0};
    int nref = ref_fields(o, &ref, err);
    if (nref < 0)
        return 1;
    int same = nref == nf && ref.len == fields->len && memcmp(ref.data, fields->data, ref.len) == 0;
    if (!same) {
        char what[512];
        rs_pipeline_header_difference(what, sizeof what, fields->data, (uint32_t)nf, has_bom, o->header_ref_name,
                                      ref.data, (uint32_t)nref,
                                      rs_csv_bom_len(o->header_ref, strlen(o->header_ref)) != 0);
        rs_error_set(err, RS_EXIT_DATA, "%s: line %llu: header differs from the header of %s: %s", path,
                     (unsigned long long)line, o->header_ref_name, what);
    }
    rs_buf_free(&ref);
    return !same;
}

/* How much of an input's start is looked at for control bytes. */
#define RS_TEXT_SNIFF 8192

/* Fails when at least 1 in RS_TEXT_DENSE of the input's first
 * RS_TEXT_SNIFF bytes (those of b->data[0..b->len); b->data[0] is the
 * input's byte base; the caller has read that many, or the whole input)
 * are control bytes other than NUL, TAB, LF and CR, and at least 4 are:
 * random or binary bytes hold one in nine, CSV text next to none. A NUL
 * byte alone does not count: in a field it is data, kept byte for byte
 * (a header with one is refused by the text rule). 0, or -1 with err
 * (RS_EXIT_DATA). */
#define RS_TEXT_DENSE 64
static int sniff_binary(const rs_reader *rd, const char *path, const batch *b, size_t base, rs_error *err)
{
    size_t n = b->len < RS_TEXT_SNIFF - base ? b->len : RS_TEXT_SNIFF - base, first;
    size_t c = rs_text_controls(b->data, n, &first);
    if (c < 4 || c * RS_TEXT_DENSE < n)
        return 0;
    int decoded = rs_reader_is_gzip(rd) || rs_reader_is_zstd(rd);
    return rs_error_set(err, RS_EXIT_DATA,
                        "%s: %zu control bytes in its first %zu bytes%s (the first at byte offset %llu), where CSV "
                        "text holds next to none: not CSV text (docs/formats.md, \"Text\")%s",
                        path, c, n, decoded ? " of decompressed data" : "", (unsigned long long)(base + first),
                        base ? "" : rs_inner_format((const unsigned char *)b->data, b->len, decoded));
}

/* The text rule (docs/formats.md, "Text"): an input's header, or without
 * one its first record, must be text (rs_text_check). That is where a file
 * that is not CSV shows: a binary file, a format without a magic number
 * (reader.h refuses those with one), text in another encoding. Checks
 * b->data[*chk..end), bytes of the record that starts at b->data[rec] (line
 * `line` of input i, `what` in words), and moves *chk past what passed;
 * b->data[0] is the input's byte
 * `base`. 0, or -1 with err (RS_EXIT_DATA, naming the file, the line and
 * the byte offset). */
static int check_text(const rs_reader *rd, const char *path, const char *what, const batch *b, size_t rec,
                      size_t *chk, size_t end, uint64_t line, size_t base, rs_error *err)
{
    size_t from = *chk > rec ? *chk : rec;
    if (from >= end)
        return 0;
    const char *why;
    size_t k = from + rs_text_check(b->data + from, end - from, &why);
    *chk = k;
    if (!why)
        return 0;
    char shown[160];
    size_t n = k - rec + 8 < 48 ? k - rec + 8 : 48;  /* its start, up to a little past the fault */
    int decoded = rs_reader_is_gzip(rd) || rs_reader_is_zstd(rd);
    return rs_error_set(err, RS_EXIT_DATA,
                        "%s: line %llu: the %s is not text: %s at byte offset %llu%s (it starts %s); ringshard "
                        "reads CSV text, without control bytes there (docs/formats.md, \"Text\")%s",
                        path, (unsigned long long)line, what, why, (unsigned long long)(base + k),
                        decoded ? " of the decompressed data" : "",
                        rs_text_shown(shown, sizeof shown, b->data + rec, end - rec < n ? end - rec : n, 0, '\''),
                        base + rec ? "" : rs_inner_format((const unsigned char *)b->data + rec, end - rec, decoded));
}

/* Reads the header record of input i at b->data[0..len), reading more as
 * needed: a UTF-8 BOM at the input's first byte is not part of it (see
 * csv.h), but stays in res->header when the header follows it at once.
 * Returns bytes consumed (0 if the input is empty), -1 on error. */
static ssize_t read_header(pipe_state *s, rs_reader *rd, batch *b, uint32_t i, uint64_t *lines, uint64_t *records,
                           rs_error *err)
{
    const rs_pipeline_opts *o = s->o;
    const char *path = rs_input_label(o->inputs[i]);
    size_t off = 0, bom = SIZE_MAX, chk = 0;
    int eof = 0;
    rs_csv_record rec;
    rs_csv_fault fault;
    for (;;) {
        if (!eof && b->len - off < (size_t)1 << 16) {
            if (read_more(s, rd, b, &eof, err) != 0)
                return -1;
            continue;
        }
        if (bom == SIZE_MAX)  /* the input's first bytes */
            off = bom = rs_csv_bom_len(b->data, b->len);
        if (b->len == off)
            return (ssize_t)off;  /* empty input (or only blank lines) */
        int r = rs_csv_next(&o->dialect, NULL, b->data + off, b->len - off, eof, &rec, NULL, NULL, NULL, &fault);
        if (r != RS_CSV_OK || rec.nfields) {
            size_t end = r == RS_CSV_MORE ? b->len : off + (r == RS_CSV_BAD ? fault.offset : rec.len);
            if (check_text(rd, path, "header", b, off, &chk, end, *lines + 1, 0, err) != 0 ||
                (r == RS_CSV_OK && sniff_binary(rd, path, b, 0, err) != 0))
                return -1;
        }
        if (r == RS_CSV_MORE) {
            if (b->len - off > o->dialect.max_record)
                return rs_error_set(err, RS_EXIT_DATA, "%s: line %llu: header longer than the record limit",
                                    path, (unsigned long long)*lines + 1);
            if (!eof && read_more(s, rd, b, &eof, err) != 0)
                return -1;
            continue;
        }
        if (r == RS_CSV_BAD)
            return rs_error_set(err, RS_EXIT_DATA, "%s: line %llu: malformed header: %s (field %u)", path,
                                (unsigned long long)*lines + 1, fault.what, fault.field);
        *lines += rec.lines;
        if (rec.nfields == 0) {  /* blank line before the header: a line, not a record */
            if (s->unit == 0)    /* counted once, not again by a later unit's look at the header */
                s->res->input[i].blank_lines++;
            off += rec.consumed;
            continue;
        }
        ++*records;
        rs_buf fields = {0};
        int nf = rs_csv_fields(&o->dialect, b->data + off, rec.len, &fields);
        if (nf < 0) {
            rs_buf_free(&fields);
            return rs_error_set(err, RS_EXIT_DATA, "%s: line %llu: malformed header", path,
                                (unsigned long long)*lines);
        }
        rs_pipeline_result *res = s->res;
        int has_bom = bom && off == bom;  /* the header follows the BOM at once */
        if (!res->header && o->header_ref_name && header_differs_from_ref(s, &fields, nf, has_bom, path, *lines, err)) {
            rs_buf_free(&fields);
            return -1;
        }
        if (!res->header) {
            /* the line the outputs start with: the input's bytes, or (bucket
             * --append) the directory's, whose fields it has just been found
             * to hold, spelled as the directory spells them: a BOM, quotes
             * or a CR otherwise are this input's spelling, not a new header */
            size_t keep = has_bom ? bom : 0, len = keep + rec.len;
            const char *line = b->data + off - keep;
            if (o->header_ref_name && o->header_ref)
                line = o->header_ref, len = strlen(o->header_ref);
            res->header = malloc(len + 1);
            res->header_fields = malloc((size_t)nf * sizeof *res->header_fields);
            if (!res->header || !res->header_fields) {
                rs_buf_free(&fields);
                return rs_error_set(err, RS_EXIT_IO, "out of memory");
            }
            memcpy(res->header, line, len);
            res->header[len] = '\0';
            res->header_len = len;
            s->header_bom = has_bom;
            res->header_input = i;
            res->header_line = *lines;
            s->header_fields = fields;
            res->nheader_fields = (uint32_t)nf;
            const char *f = s->header_fields.data;
            for (int k = 0; k < nf; k++, f += strlen(f) + 1)
                res->header_fields[k] = (char *)f;
            if (resolve_key(s, s->header_fields.data, (uint32_t)nf, path, err) != 0)
                return -1;
        } else {
            int same = (uint32_t)nf == res->nheader_fields && fields.len == s->header_fields.len &&
                       memcmp(fields.data, s->header_fields.data, fields.len) == 0;
            if (same) {
                rs_buf_free(&fields);
            } else {
                const char *ref = rs_input_label(o->inputs[res->header_input]);
                char what[512];
                rs_pipeline_header_difference(what, sizeof what, fields.data, (uint32_t)nf, has_bom, ref,
                                              s->header_fields.data, res->nheader_fields, s->header_bom);
                res->mismatch_line = *lines;
                res->mismatch_fields = fields.data;  /* for a cluster's message (cluster.c) */
                res->mismatch_nfields = (uint32_t)nf;
                res->mismatch_bom = has_bom;
                return rs_error_set(err, RS_EXIT_DATA, "%s: line %llu: header differs from the header of %s: %s",
                                    path, (unsigned long long)*lines, ref, what);
            }
        }
        return (ssize_t)(off + rec.consumed);
    }
}

/* Without a header: the text rule for the input's first record (after
 * blank lines), as check_text says, reading what it needs into b (kept
 * there for the batches; b->data[0] is the input's byte base). A record that is malformed or too long is left
 * to the batches to report. 0, or -1 with err. */
static int first_record_text(pipe_state *s, batch *b, const char *path, size_t base, rs_error *err)
{
    const rs_pipeline_opts *o = s->o;
    size_t off = 0, chk = 0;
    uint64_t lines = 0;
    for (;;) {
        rs_csv_record rec;
        rs_csv_fault fault;
        int r = b->len > off ? rs_csv_next(&o->dialect, NULL, b->data + off, b->len - off, s->eof, &rec, NULL, NULL,
                                           NULL, &fault)
                             : RS_CSV_MORE;
        if (r == RS_CSV_OK && rec.nfields == 0) {
            off += rec.consumed;
            lines += rec.lines;
            continue;
        }
        if (b->len > off) {
            size_t end = r == RS_CSV_MORE ? b->len : off + (r == RS_CSV_BAD ? fault.offset : rec.len);
            if (check_text(s->rd, path, "first record", b, off, &chk, end, lines + 1, base, err) != 0)
                return -1;
        }
        int eof = 0;
        if (r != RS_CSV_MORE || s->eof || b->len - off > o->dialect.max_record) {
            while (!s->eof && b->len < RS_TEXT_SNIFF) {  /* what sniff_binary looks at, whatever the reads give */
                if (read_more(s, s->rd, b, &eof, err) != 0)
                    return -1;
                s->eof |= eof;
            }
            return sniff_binary(s->rd, path, b, base, err);
        }
        if (read_more(s, s->rd, b, &eof, err) != 0)
            return -1;
        s->eof |= eof;
    }
}

/* Without a header: drops a UTF-8 BOM at the input's first byte, which is
 * not part of the first record (as DuckDB reads it): its first field, the
 * key with --key 1, is what follows the BOM, and the row is written without
 * it; *dropped gets its length (0 without one). 0 or -1 with err. */
static int drop_bom(pipe_state *s, batch *b, size_t *dropped, rs_error *err)
{
    int eof = 0;
    while (b->len < RS_CSV_BOM_LEN && !eof)
        if (read_more(s, s->rd, b, &eof, err) != 0)
            return -1;
    s->eof |= eof;
    size_t n = rs_csv_bom_len(b->data, b->len);
    *dropped = n;
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
    return 0;
}

/* The units of input i this run reads: [unit_from, unit_to). A cluster
 * rank's range may start and end inside a file (opts unit_lo, unit_hi);
 * the indexes are those of the unit list, which the cluster made too. A
 * file read whole (s->whole) is its unit 0 only: whoever holds that unit
 * reads the file, a rank holding only later units reads none of it. */
static uint32_t unit_from(const pipe_state *s, uint32_t i)
{
    return i == 0 ? s->o->unit_lo : 0;
}

static uint32_t unit_to(const pipe_state *s, uint32_t i)
{
    uint32_t n = s->whole ? 1 : (uint32_t)s->nunits[i];
    return i + 1 == s->o->ninputs && s->o->unit_hi && s->o->unit_hi < n ? s->o->unit_hi : n;
}

/* Moves the producer past inputs of which it reads no unit. */
static void skip_empty_ranges(pipe_state *s)
{
    while (s->next_input < s->o->ninputs && s->unit >= unit_to(s, s->next_input)) {
        s->next_input++;
        s->unit = s->next_input < s->o->ninputs ? unit_from(s, s->next_input) : 0;
    }
}

/* Input i's checksums once its unit s->unit is read: its stored bytes'
 * (a whole read only) and its content's, the unit's combined with the
 * earlier units' in order: the file's, whatever units it is read in (the
 * pipelines of other lanes or ranks combine theirs likewise, cluster.c). */
static void unit_sums(pipe_state *s, uint32_t i)
{
    rs_input_stats *in = &s->res->input[i];
    uint64_t crc = 0, size = 0;
    int ok = rs_reader_content(s->rd, &crc, &size);
    in->has_checksum = rs_reader_checksum(s->rd, &in->checksum);
    if (s->unit == unit_from(s, i)) {
        in->has_content = ok, in->content = crc, in->content_size = size;
        return;
    }
    in->has_content &= ok;
    in->content = rs_crc64_combine(in->content, crc, size);
    in->content_size += size;
}

/* Moves the producer to the next unit (or input) after the current one. */
static void next_unit(pipe_state *s)
{
    ++s->unit;
    skip_empty_ranges(s);
}

/* Whether the reading settings can move record boundaries relative to the
 * writer's (docs/format-data.md, "Units and reading settings"). With
 * --on-bad-row fail, every record before the first fault is well-formed,
 * and a well-formed RFC 4180 record ends at the first line end at even
 * quote parity from its start, whatever the delimiter and --max-record: the
 * same records the writer counted in its RS headers, or the run stops at
 * the first record these settings reject, exactly where a whole-file read
 * stops. skip|quarantine read on past a malformed record to its line end
 * outside quotes (bad_record_end), where a quote that is stray to recovery
 * may open a field to the writer (under another --delimiter), and a quoted
 * field never closed runs past a member's end: neither the headers' record
 * counts nor their member boundaries then say where this reader's records
 * are. A quote, CR or LF as the delimiter breaks the parity rule itself. */
static int units_read_whole(const rs_pipeline_opts *o)
{
    char c = o->dialect.delim;
    /* only_rows numbers an input's rows in order: one producer reads it */
    return o->bad_rows != RS_BAD_ROW_FAIL || c == '"' || c == '\n' || c == '\r' || o->only_rows;
}

/* Whether input i has no header line although the inputs have one
 * (opts input_headerless). */
static int headerless(const rs_pipeline_opts *o, uint32_t i)
{
    return o->input_headerless != NULL && o->input_headerless[i];
}

/* Resolves the key before any header was read: from the header
 * opts->header_ref gives (a headerless part of a bucket read first), else
 * by column numbers alone (no header). 0 or -1 with err. */
static int resolve_key_without_header(pipe_state *s, const char *path, rs_error *err)
{
    const rs_pipeline_opts *o = s->o;
    if (!o->header || !o->header_ref)
        return resolve_key(s, NULL, 0, path, err);
    rs_buf fields = {0};
    int nf = ref_fields(o, &fields, err);
    int rc = nf < 0 ? -1
                    : resolve_key(s, fields.data, (uint32_t)nf, o->header_ref_name ? o->header_ref_name : path, err);
    rs_buf_free(&fields);
    return rc;
}

/* Opens unit s->unit of input i into s->rd, with its header handled:
 * the first unit reads the header as a whole input does; a later one reads
 * it from the start of the file (for the key columns and the comparison
 * with other inputs' headers) and continues the numbering from the unit's
 * base, so that every message is the one a whole-file read gives.
 * 0 or -1 with err. */
static int open_unit(pipe_state *s, batch *b, uint32_t i, rs_error *err)
{
    const rs_pipeline_opts *o = s->o;
    const rs_input_unit *u = &s->units[i][s->unit];
    const char *path = rs_input_label(o->inputs[i]);
    int has_header = o->header && !headerless(o, i);
    s->eof = 0;
    s->ramp = s->unit == 0 ? 0 : RS_RAMP;
    s->carry.len = 0;
    s->unit_last_sent = 0;
    b->len = 0;
    b->unit_first = 1;
    s->hdr_records = 0;
    if (s->unit > 0) {
        uint64_t lines = 0;
        if (has_header) {
            rs_reader *hr = rs_reader_openat(input_dirfd(o), input_name(o, i), path, o->codec, err);
            ssize_t h = hr ? read_header(s, hr, b, i, &lines, &s->hdr_records, err) : -1;
            rs_reader_close(hr);
            b->len = 0;
            if (h < 0)
                return -1;
            if (lines > u->line_base)
                return rs_error_set(err, RS_EXIT_DATA,
                                    "%s: the header (line %llu) is not in the first %s (it ends past "
                                    "the unit at byte offset %llu)",
                                    path, (unsigned long long)lines, u->zstd ? "zstd frames" : "gzip members",
                                    (unsigned long long)u->offset);
        } else if (!s->keyspec_ready && resolve_key_without_header(s, path, err) != 0) {
            return -1;
        }
        b->line_base = u->line_base;
        b->record_base = u->record_base - s->hdr_records;
    }
    /* an input's first unit may have been opened and read ahead (ahead.c) */
    int took = s->unit == 0 ? rs_pipe_take_ahead(s, i, err) : 0;
    if (took < 0)
        return -1;
    if (!took) {
        s->stash.len = s->stash_pos = 0;
        s->stash_failed = 0;
        if (!(s->rd = rs_pipe_open_reader(s, i, s->unit, err)))
            return -1;
    }
    if (s->unit == 0 && has_header) {
        uint64_t lines = 0;
        ssize_t h = read_header(s, s->rd, b, i, &lines, &s->hdr_records, err);
        if (h < 0)
            return -1;
        memmove(b->data, b->data + h, b->len - (size_t)h);
        b->len -= (size_t)h;
        b->start_line = lines;
    } else {
        /* a headerless part of a bucket starts with a row, whose bytes
         * (a BOM among them) are data */
        size_t bom = 0;
        if (s->unit == 0 && !o->header &&
            (drop_bom(s, b, &bom, err) != 0 || first_record_text(s, b, path, bom, err) != 0))
            return -1;
        if (!s->keyspec_ready && resolve_key_without_header(s, path, err) != 0)
            return -1;
    }
    return 0;
}

/* A batch's worth of input (b->data[0..b->len), s->cap bytes or more) holds
 * no record boundary: its first record is malformed or longer than any
 * batch. Makes b a BAD batch (see batch) for the team to report or count
 * in input order, as it does the faults of shorter records. Under
 * --on-bad-row fail that is all; under skip|quarantine the record is
 * consumed here, to where recovery ends it (bad_record_end: its line end
 * outside quotes, or the input's end), reading on in steps, following its
 * quotes from its first byte, and keeping only its first
 * max_record bytes, so memory stays bounded; what follows it is carried
 * into the next batch. 0, or -1 with err. */
static int bad_record(pipe_state *s, batch *b, rs_error *err)
{
    const rs_pipeline_opts *o = s->o;
    rs_csv_record rec;
    rs_csv_fault f;
    if (rs_csv_next(&o->dialect, NULL, b->data, b->len, 0, &rec, NULL, NULL, NULL, &f) != RS_CSV_BAD)
        f = (rs_csv_fault){"record longer than the limit", o->dialect.max_record, 1};
    b->bad = 1;
    b->bad_fault = f;
    b->bad_lines = 0;
    b->bad_row.len = 0;
    if (o->bad_rows != RS_BAD_ROW_FAIL) {
        size_t keep = b->len < o->dialect.max_record ? b->len : o->dialect.max_record;
        if (rs_buf_append(&b->bad_row, b->data, keep) != 0)
            return rs_error_set(err, RS_EXIT_IO, "out of memory");
        int state = 0;  /* rs_pipe_bad_record_end's rule, fed in steps */
        for (;;) {
            size_t used;
            int found = rs_csv_resync(&o->dialect, &state, b->data, b->len, s->eof, &used);
            b->bad_lines += rs_count_line_ends(b->data, used);
            if (found) {
                if (rs_buf_append(&s->carry, b->data + used, b->len - used) != 0)
                    return rs_error_set(err, RS_EXIT_IO, "out of memory");
                break;
            }
            memmove(b->data, b->data + used, b->len - used);  /* a CR held back */
            b->len -= used;
            size_t want = b->cap - b->len < RS_READ_STEP ? b->cap - b->len : RS_READ_STEP;
            ssize_t n = rs_pipe_read(s, s->rd, b->data + b->len, want, err);
            if (n < 0)
                return -1;
            s->eof |= n == 0;
            b->len += (size_t)n;
            s->consumed_now = s->consumed_done + rs_reader_consumed(s->rd);
            if (rs_interrupt_pending())
                return rs_error_set(err, RS_EXIT_INTERRUPTED, "interrupted");
        }
    }
    b->len = 0;
    b->quotes = 0;
    memset(b->seg, 0, sizeof b->seg);
    b->unit_last = s->eof && s->carry.len == 0;
    s->unit_last_sent |= b->unit_last;
    return 0;
}

/* Starts batch b with the carry: one incomplete record (at most half a
 * batch), or, after an input's first batch, whatever reading its header
 * brought in past that batch's target: with a small --memory, more than a
 * batch. 0, or -1 with err (out of memory). */
static int take_carry(pipe_state *s, batch *b, rs_error *err)
{
    if (rs_pipe_grow_batch(b, s->carry.len) != 0)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    if (s->carry.len)
        memcpy(b->data, s->carry.data, s->carry.len);
    b->len = s->carry.len;
    s->carry.len = 0;
    return 0;
}

/* Unit u of input i is read to its end, its last batch sent: closes its
 * reader and moves to the next unit. 1 when b is to go out as the unit's
 * last batch all the same (a unit without data rows: its counts are
 * checked), 0 when the producer goes on to the next unit. */
static int unit_done(pipe_state *s, batch *b, uint32_t i, const rs_input_unit *u)
{
    s->consumed_done += rs_reader_consumed(s->rd);
    s->res->input[i].zero_padding += rs_reader_zero_padding(s->rd);
    if (s->o->input_checksum)
        unit_sums(s, i);
    rs_reader_close(s->rd);
    s->rd = NULL;
    int check = u->counted && !s->unit_last_sent;
    next_unit(s);
    if (check) {
        b->unit_last = 1;
        memset(b->seg, 0, sizeof b->seg);
        return 1;
    }
    b->unit_first = 0;
    return 0;
}

/* The error of a unit before the last of input `name` whose `len` last
 * bytes are no whole record, though the next unit's header says a record
 * starts there. */
static void unit_cut_inside(const char *name, const rs_input_unit *u, size_t len, rs_error *err)
{
    rs_error_set(err, RS_EXIT_DATA,
                 "%s: the %s at byte offsets %llu to %llu end inside a record (their last %zu "
                 "bytes are not a whole record with its line end), yet the %s at byte offset %llu is "
                 "flagged as starting a record (corrupt or altered %s)",
                 name, u->zstd ? "zstd frames" : "gzip members", (unsigned long long)u->offset,
                 (unsigned long long)(u->offset + u->size), len, u->zstd ? "frame" : "member",
                 (unsigned long long)(u->offset + u->size), u->zstd ? "metadata frames" : "member headers");
}

/* Produces the next batch into b: records of one unit of one input, ending
 * at a record boundary (its incomplete last record waits in s->carry), or
 * sets b->end after the last input, or b->err. One thread at a time. A
 * unit whose counts are to be checked ends with a batch marked unit_last,
 * an empty one if need be.
 *
 * It is the producer's loop, the critical path without compression
 * (docs/performance.md), tuned by measurement - quotes counted as the
 * bytes are inflated, while they are in cache, and the ramp at each
 * input's start. The loop's locals (target, span, cut) stay here; the
 * steps taken once a batch or a unit (take_carry, unit_done,
 * unit_cut_inside) are functions of their own. */
void rs_pipe_produce(pipe_state *s, batch *b)
{
    const rs_pipeline_opts *o = s->o;
    rs_error err = {0};
    b->len = 0;
    b->end = 0;
    b->err.code = 0;
    b->start_line = 0;
    b->unit_first = b->unit_last = 0;
    b->bad = 0;
    for (;;) {
        uint32_t i = s->next_input;
        if (!s->rd) {
            if (i >= o->ninputs) {
                b->end = 1;
                return;
            }
            if (open_unit(s, b, i, &err) != 0)
                goto fail;
        } else if (take_carry(s, b, &err) != 0) {
            goto fail;
        }
        const rs_input_unit *u = &s->units[i][s->unit];
        b->input = i;
        b->unit = s->unit;
        b->u = u->counted ? u : NULL;
        b->hdr_records = s->hdr_records;
        b->quotes = 0;
        b->qck[0] = 0;
        count_new(b, 0, b->len);  /* the carry, or what follows the header */
        /* An input's first batches ramp up, an eighth, a quarter, a half
         * of the others: until the first is read the rest of the team has
         * nothing to do (one core idle for the 0.1 s a 64 MiB batch takes
         * to inflate), and as each batch's rows take about twice as long
         * to compress as to inflate, doubling keeps the producer of the
         * next batch from holding up the team. A rule of the input alone,
         * so the batches - the output's members - stay the same for any
         * thread or rank count. */
        size_t target = s->ramp < RS_RAMP ? s->cap >> (RS_RAMP - s->ramp) : s->cap;
    read:
        while (!s->eof && b->len < target) {
            size_t want = target - b->len < RS_READ_STEP ? target - b->len : RS_READ_STEP;
            ssize_t n = rs_pipe_read(s, s->rd, b->data + b->len, want, &err);
            if (n < 0)
                goto fail;
            if (n == 0)
                s->eof = 1;
            count_new(b, b->len, b->len + (size_t)n);
            b->len += (size_t)n;
            s->consumed_now = s->consumed_done + rs_reader_consumed(s->rd);
            if (rs_interrupt_pending()) {
                rs_error_set(&err, RS_EXIT_INTERRUPTED, "interrupted");
                goto fail;
            }
        }
        if (b->len == 0 && s->eof) {  /* this unit is done */
            if (unit_done(s, b, i, u))
                return;
            continue;
        }
        int by_records = o->bad_rows != RS_BAD_ROW_FAIL;
        /* The batch is cut within its first `target` bytes, whatever was
         * read: reading the header may have read past them, by as much as
         * the reads happened to return (a pipe returns less than a file),
         * and the batches must not depend on that. */
        size_t span = b->len;
        int more = !s->eof;  /* bytes follow the span */
        if (span > target) {
            span = target;
            more = 1;
        }
        /* Only the file's end completes a record without a line end. A
         * unit before the last is cut as if more followed: a tail that is
         * not a whole record (a record the headers' boundary flag falsely
         * splits, which a whole-file read would join) waits in carry, and
         * fails the unit once the records before it are done. */
        int file_end = !more && !(u->counted && s->unit + 1 < s->nunits[i]);
        size_t cut = by_records ? cut_by_records(&o->dialect, b, span, file_end)
                     : file_end ? span
                                : last_boundary(b->data, span, span == b->len ? b->quotes : quotes_before(b, span));
        if (cut == 0 && more && target < s->cap) {  /* a record longer than a ramp batch */
            target = s->cap;
            goto read;
        }
        if (cut == 0 && !more && !file_end) {
            unit_cut_inside(o->inputs[i], u, b->len, &err);
            goto fail;
        }
        if (cut == 0) {  /* no boundary in a whole batch */
            if (bad_record(s, b, &err) != 0)
                goto fail;
            return;
        }
        if (rs_buf_append(&s->carry, b->data + cut, b->len - cut) != 0) {
            rs_error_set(&err, RS_EXIT_IO, "out of memory");
            goto fail;
        }
        b->len = cut;
        if (s->ramp < RS_RAMP)
            s->ramp++;
        b->unit_last = s->eof && s->carry.len == 0;
        s->unit_last_sent |= b->unit_last;
        if (!by_records)
            cut_segments(b);
        return;
    }
fail:
    b->err = err;
    b->input = s->next_input;
    b->len = 0;
    b->end = 1;
}

/* ------------------------------------------------------------------ team */

/* Whether input i's size is known up front: a regular file (an empty one
 * too), not standard input nor another pipe. For the progress line only. */
static int input_size_known(const rs_pipeline_opts *o, size_t i)
{
    struct stat st;
    if (!o->input_names && !strcmp(o->inputs[i], "-"))
        return 0;
    return fstatat(input_dirfd(o), input_name(o, i), &st, 0) == 0 && S_ISREG(st.st_mode);
}

/* Every input's units (reader.h), their sizes and the total the progress
 * line shows; a cluster rank's range checked. */
int rs_pipe_list_units(pipe_state *s, rs_error *err)
{
    const rs_pipeline_opts *o = s->o;
    rs_pipeline_result *res = s->res;
    s->units = calloc(o->ninputs ? o->ninputs : 1, sizeof *s->units);
    s->nunits = calloc(o->ninputs ? o->ninputs : 1, sizeof *s->nunits);
    if (!s->units || !s->nunits)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    uint64_t unit_bytes = o->unit_bytes ? o->unit_bytes : rs_unit_bytes();
    s->whole = units_read_whole(o);
    for (size_t i = 0; i < o->ninputs; i++) {
        res->input[i].path = o->inputs[i];
        if (rs_input_units_at(input_dirfd(o), input_name(o, i), o->inputs[i], unit_bytes, &s->units[i], &s->nunits[i],
                              &res->input[i].size, err) != 0) {
            if (rs_interrupt_pending()) {  /* an open of a FIFO cut short by a signal */
                rs_error_clear(err);
                rs_error_set(err, RS_EXIT_INTERRUPTED, "interrupted");
            }
            return -1;
        }
        if (o->expect_size && o->expect_size[i] != UINT64_MAX &&
            (o->expect_size[i] != res->input[i].size || o->expect_units[i] != (uint64_t)s->nunits[i]))
            return rs_error_set(err, RS_EXIT_IO,
                                "%s: the file changed while it was read (%llu bytes in %llu units when the ranks "
                                "divided the work, %llu bytes in %llu units now)",
                                o->inputs[i], (unsigned long long)o->expect_size[i],
                                (unsigned long long)o->expect_units[i], (unsigned long long)res->input[i].size,
                                (unsigned long long)s->nunits[i]);
        s->total_size += res->input[i].size;
        if (o->progress && res->input[i].size == 0 && !input_size_known(o, i))
            s->size_unknown = 1;
        /* Read whole: unit 0 becomes the file, read as a stream to its end
         * with nothing checked, as gzip from another tool is. The list
         * keeps its length: a cluster rank's range indexes the same list
         * (see unit_to). */
        if (s->whole)
            s->units[i][0] = (rs_input_unit){0, res->input[i].size, 0, 0, 0, 0, 0, 0};
    }
    /* a cluster rank's range names existing units and is not empty */
    if (o->ninputs && (o->unit_lo >= s->nunits[0] || (o->ninputs == 1 && o->unit_hi && o->unit_hi <= o->unit_lo)))
        return rs_error_set(err, RS_EXIT_IO, "internal error: unit range %u..%u of %s", o->unit_lo, o->unit_hi,
                            o->inputs[0]);
    if (o->unit_lo || o->unit_hi) {  /* a cluster rank: the total is that of its units */
        s->total_size = 0;
        for (uint32_t i = 0; i < o->ninputs; i++)
            for (uint32_t k = unit_from(s, i); k < unit_to(s, i); k++)
                s->total_size += s->units[i][k].size;
    }
    s->unit = o->ninputs ? o->unit_lo : 0;
    skip_empty_ranges(s);
    return 0;
}

