/* Reading a file's rows and keys (dataset/rows.h). */
#include "dataset/rows.h"
#include <stdlib.h>
#include <string.h>
#include "ringshard/deflate.h"

int rs_rows_open(rs_rows *s, const char *path, const rs_rows_src *src, int want_key, rs_error *err)
{
    memset(s, 0, sizeof *s);
    s->path = path;
    s->src = *src;
    s->ks = want_key ? src->keyspec : NULL;
    s->whole = src->name && path == src->path;
    if (s->whole)  /* the file itself, not a split file */
        s->rd = rs_reader_openat(src->dirfd, src->name, path, src->codec, err);
    else
        s->rd = rs_reader_open(path, src->codec, err);
    if (s->rd)
        s->size = rs_reader_size(s->rd);
    return s->rd ? 0 : -1;
}

/* Reads from the file, moving on to its next part at the end of one. */
static ssize_t read_parts(rs_rows *s, void *buf, size_t cap, rs_error *err)
{
    const rs_rows_src *o = &s->src;
    for (;;) {
        ssize_t n = rs_reader_read(s->rd, buf, cap, err);
        if (n != 0 || !s->whole || s->part >= o->nmore)
            return n;
        rs_reader_close(s->rd);
        const char *path = o->more_paths[s->part];
        /* a segment's header line is its first member (frame, or line):
         * the rows go on after it, as in one file */
        uint64_t skip = o->more_files ? o->more_files[s->part]->header_bytes : 0;
        s->rd = skip ? rs_reader_openat_range(o->dirfd, o->more[s->part], path, o->codec, skip, UINT64_MAX - skip,
                                              err)
                     : rs_reader_openat(o->dirfd, o->more[s->part], path, o->codec, err);
        s->part++;
        if (!s->rd)
            return -1;
        s->path = path;
        s->size += rs_reader_size(s->rd);
    }
}

/* Checks one more row of the file against s->chk (rs_rows_next). */
static int check_row(rs_rows *s, const char *row, size_t len, const char *key, size_t keylen, rs_error *err)
{
    const rs_rows_check *c = s->chk;
    s->c_rows++;
    s->c_bytes += len + 1;
    s->c_crc = rs_crc32(rs_crc32(s->c_crc, row, len), "\n", 1);
    if (!c->placed(c->ctx, key, keylen))
        return rs_error_set(err, RS_EXIT_VERIFY,
                            "%s: data row %llu: its key belongs to another node than %s under the ring of %s",
                            s->path, (unsigned long long)s->c_rows, c->node, c->manifest);
    return 0;
}

/* At the file's end: its counts, CRC-32 and size against s->chk. */
static int check_end(rs_rows *s, rs_error *err)
{
    const rs_rows_check *c = s->chk;
    s->chk = NULL;
    const char *what = s->c_rows != c->rows ? "rows" : s->c_bytes != c->bytes ? "data bytes" : NULL;
    if (what)
        return rs_error_set(err, RS_EXIT_VERIFY, "%s: %llu %s, the manifest says %llu (the file does not match %s)",
                            s->path, (unsigned long long)(what[0] == 'r' ? s->c_rows : s->c_bytes), what,
                            (unsigned long long)(what[0] == 'r' ? c->rows : c->bytes), c->manifest);
    if (s->c_crc != c->crc)
        return rs_error_set(err, RS_EXIT_VERIFY,
                            "%s: CRC-32 of the data %08x, the manifest says %08x (the file does not match %s)",
                            s->path, s->c_crc, c->crc, c->manifest);
    if (s->size != c->file_bytes)
        return rs_error_set(err, RS_EXIT_VERIFY,
                            "%s: %llu bytes on disk, the manifest says %llu (the file does not match %s)", s->path,
                            (unsigned long long)s->size, (unsigned long long)c->file_bytes, c->manifest);
    return 0;
}

void rs_rows_close(rs_rows *s)
{
    rs_reader_close(s->rd);
    rs_buf_free(&s->buf);
    rs_buf_free(&s->scratch);
    memset(s, 0, sizeof *s);
}

int rs_rows_load(rs_rows *s, uint64_t size_hint, rs_error *err)
{
    /* exactly the expected size (plus room to see the end), not a power of two */
    s->buf.data = malloc((size_t)size_hint + (1u << 16));
    if (!s->buf.data)
        return rs_error_set(err, RS_EXIT_IO, "out of memory reading %s", s->path);
    s->buf.cap = (size_t)size_hint + (1u << 16);
    for (;;) {
        if (s->buf.cap - s->buf.len < (1u << 12) && rs_buf_reserve(&s->buf, 1u << 16) != 0)
            return rs_error_set(err, RS_EXIT_IO, "out of memory reading %s", s->path);
        ssize_t n = read_parts(s, s->buf.data + s->buf.len, s->buf.cap - s->buf.len, err);
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        s->buf.len += (size_t)n;
    }
    rs_reader_close(s->rd);
    s->rd = NULL;
    s->eof = 1;
    return 0;
}

int rs_rows_next(rs_rows *s, int nokey, const char **row, size_t *rowlen, const char **key, size_t *keylen,
                 rs_error *err)
{
    for (;;) {
        size_t bom = 0;
        if (!s->started && (s->buf.len >= RS_CSV_BOM_LEN || s->eof)) {
            /* a UTF-8 BOM at the file's start is no part of the first
             * record: kept in a header's line, dropped before a row (as
             * the pipeline reads it) */
            s->started = 1;
            bom = rs_csv_bom_len(s->buf.data, s->buf.len);
            if (!s->src.header)
                s->pos += bom, bom = 0;
        }
        if (s->started && (s->pos < s->buf.len || s->eof)) {
            if (s->pos >= s->buf.len)
                return s->chk ? check_end(s, err) : 0;
            s->pos += bom;
            rs_csv_record rec;
            rs_csv_fault fault = {0};
            const char *k = NULL;
            size_t kl = 0;
            const rs_csv_keyspec *ks = nokey ? NULL : s->ks;
            /* a checked read parses the placement key whatever the caller wants */
            const rs_csv_keyspec *pks = s->chk ? s->chk->keyspec : ks;
            int r = rs_csv_next(s->src.dialect, pks, s->buf.data + s->pos, s->buf.len - s->pos, s->eof, &rec, pks ? &k : NULL,
                                pks ? &kl : NULL, &s->scratch, &fault);
            if (r == RS_CSV_OK) {
                const char *p = s->buf.data + s->pos - bom;
                s->pos += rec.consumed;
                if (rec.nfields == 0)
                    continue;
                s->rec++;
                if (s->chk && check_row(s, p, rec.len, k, kl, err) != 0)
                    return -1;
                *row = p;
                *rowlen = rec.len + bom;
                if (key) {
                    *key = ks ? k : p;
                    *keylen = ks ? kl : rec.len;
                }
                return 1;
            }
            if (r == RS_CSV_BAD)
                return rs_error_set(err, RS_EXIT_DATA, "%s: record %llu: %s (field %u)", s->path,
                                    (unsigned long long)s->rec + 1, fault.what ? fault.what : "malformed record",
                                    fault.field);
            /* RS_CSV_MORE: read more below */
        }
        if (!s->rd)
            return rs_error_set(err, RS_EXIT_DATA, "%s: truncated record", s->path);
        if (s->pos > 0) {
            memmove(s->buf.data, s->buf.data + s->pos, s->buf.len - s->pos);
            s->buf.len -= s->pos;
            s->pos = 0;
        }
        if (s->buf.cap - s->buf.len < (1u << 16)) {
            size_t limit = s->src.dialect->max_record ? s->src.dialect->max_record : ((size_t)1 << 30);
            if (s->buf.len > limit + 2)
                return rs_error_set(err, RS_EXIT_DATA, "%s: record %llu longer than the record limit (%zu bytes)",
                                    s->path, (unsigned long long)s->rec + 1, limit);
            if (rs_buf_reserve(&s->buf, s->buf.cap < (1u << 20) ? (1u << 20) : s->buf.cap) != 0)
                return rs_error_set(err, RS_EXIT_IO, "out of memory reading %s", s->path);
        }
        ssize_t n = read_parts(s, s->buf.data + s->buf.len, s->buf.cap - s->buf.len, err);
        if (n < 0)
            return -1;
        if (n == 0)
            s->eof = 1;
        s->buf.len += (size_t)n;
    }
}

int rs_rows_skip_header(rs_rows *s, rs_error *err)
{
    const char *row;
    size_t n;
    int r = rs_rows_next(s, 1, &row, &n, NULL, NULL, err);
    return r < 0 ? -1 : 0;
}
