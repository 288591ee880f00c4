/* fuzz/check_csv.h - the CSV record splitter and key extraction, checked
 * differentially against libcsv (see fuzz/check_common.h).
 *
 * The reference is libcsv as tests/test_csv.c drives it: CSV_STRICT |
 * CSV_STRICT_FINI, a space function that says no to every byte, default
 * terminators; libcsv skips empty lines, rs_csv_next reports them as
 * records with no fields. For the delimiter ',' (and '\t' if the input
 * has a tab) and every SIMD
 * variant this CPU has, the bytes are split by rs_csv_next (one call per
 * record on everything, at_eof = 1) and by libcsv: both must give the same
 * records with the same fields (rs_csv_fields), or both reject. Each record
 * is also scanned with keys {1,0} joined by '|' and {0}, which must equal
 * libcsv's fields (or fail with "missing key column"); feeding short
 * prefixes (RS_CSV_MORE, resumption) must give what one call gives; and
 * rs_csv_boundary_after must find each accepted record's end. The
 * structural scanner, rs_csv_rows (the pipeline's), must give the same
 * records, keys and faults as rs_csv_next at every offset, in every SIMD
 * variant, from the start and from a cursor started mid-input. */
#ifndef RINGSHARD_FUZZ_CHECK_CSV_H
#define RINGSHARD_FUZZ_CHECK_CSV_H

#include <csv.h>
#include <stdint.h>
#include <string.h>

#include "check_common.h"
#include "csv/scan_isa.h"
#include "ringshard/buf.h"
#include "ringshard/csv.h"

typedef struct {
    size_t off, len;   /* a field's bytes in joined */
} fzcsv_span;

typedef struct {
    size_t off;        /* record's fields in joined: [off, next record's off) */
    size_t first;      /* index of its first field */
    uint32_t nf;       /* number of fields */
} fzcsv_rec;

typedef struct {
    rs_buf joined;     /* every record's fields, each followed by a NUL */
    fzcsv_span *f;
    fzcsv_rec *rec;    /* nrec records, plus an end mark at rec[nrec] */
    size_t nf, capf, nrec, caprec, row_off, row_first;
    int bad;
} fzcsv_ref;

static void *fzcsv_grow(void *arr, size_t elem, size_t need, size_t *cap)
{
    if (need <= *cap)
        return arr;
    while (*cap < need)
        *cap = *cap ? 2 * *cap : 16;
    arr = realloc(arr, *cap * elem);
    FZ_CHECK(arr != NULL, "out of memory");
    return arr;
}

static void fzcsv_field(void *s, size_t n, void *data)
{
    fzcsv_ref *r = data;
    r->f = fzcsv_grow(r->f, sizeof *r->f, r->nf + 1, &r->capf);
    r->f[r->nf].off = r->joined.len;
    r->f[r->nf].len = n;
    r->nf++;
    FZ_CHECK(rs_buf_append(&r->joined, n ? s : "", n) == 0, "out of memory");
    FZ_CHECK(rs_buf_append(&r->joined, "", 1) == 0, "out of memory");
}

static void fzcsv_mark(fzcsv_ref *r)
{
    r->rec = fzcsv_grow(r->rec, sizeof *r->rec, r->nrec + 1, &r->caprec);
    r->rec[r->nrec].off = r->row_off;
    r->rec[r->nrec].first = r->row_first;
    r->rec[r->nrec].nf = (uint32_t)(r->nf - r->row_first);
}

static void fzcsv_row(int c, void *data)
{
    (void)c;
    fzcsv_ref *r = data;
    fzcsv_mark(r);
    r->nrec++;
    r->row_off = r->joined.len;
    r->row_first = r->nf;
}

static int fzcsv_no_space(unsigned char c)
{
    (void)c;
    return 0;
}

static void fzcsv_ref_parse(fzcsv_ref *r, const char *buf, size_t n, char delim)
{
    memset(r, 0, sizeof *r);
    struct csv_parser p;
    FZ_CHECK(csv_init(&p, CSV_STRICT | CSV_STRICT_FINI) == 0, "csv_init");
    csv_set_space_func(&p, fzcsv_no_space);
    csv_set_delim(&p, (unsigned char)delim);
    if (csv_parse(&p, buf, n, fzcsv_field, fzcsv_row, r) != n)
        r->bad = 1;
    else if (csv_fini(&p, fzcsv_field, fzcsv_row, r) != 0)
        r->bad = 1;
    csv_free(&p);
    fzcsv_mark(r); /* the end mark */
}

static void fzcsv_ref_free(fzcsv_ref *r)
{
    rs_buf_free(&r->joined);
    free(r->f);
    free(r->rec);
}

static const char *const FZCSV_STRAY = "stray quote in unquoted field";
static const char *const FZCSV_AFTER = "unexpected character after closing quote";
static const char *const FZCSV_UNTERM = "unterminated quoted field";
static const char *const FZCSV_MISSING = "missing key column";

static size_t fzcsv_line_ends(const char *p, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (p[i] == '\n' || (p[i] == '\r' && (i + 1 == n || p[i + 1] != '\n')))
            k++;
    return k;
}

/* Field `col` of reference record ri. */
static void fzcsv_ref_field(const fzcsv_ref *r, size_t ri, uint32_t col, const char **s, size_t *len)
{
    const fzcsv_span *f = &r->f[r->rec[ri].first + col];
    *s = r->joined.data + f->off;
    *len = f->len;
}

/* Scans the record at buf[off..n) with key spec ks and compares the key
 * with reference record ri (nf fields). */
static void fzcsv_check_key(const rs_csv_dialect *d, const rs_csv_keyspec *ks, const char *buf, size_t n,
                            size_t off, const rs_csv_record *want, const fzcsv_ref *ref, size_t ri)
{
    rs_buf scratch = {0}, exp = {0};
    rs_csv_record rec;
    rs_csv_fault fault = {0};
    const char *key = NULL;
    size_t keylen = 0;
    uint32_t nf = ref->rec[ri].nf;
    int missing = -1;
    for (uint32_t i = 0; i < ks->ncols; i++)
        if (ks->cols[i] >= nf && missing < 0)
            missing = (int)i;
    int r = rs_csv_next(d, ks, buf + off, n - off, 1, &rec, &key, &keylen, &scratch, &fault);
    if (missing >= 0) {
        FZ_CHECK(r == RS_CSV_BAD, "key column %u of %u fields accepted at offset %zu", ks->cols[missing], nf,
                 off);
        FZ_CHECK(strcmp(fault.what, FZCSV_MISSING) == 0, "fault '%s'", fault.what);
        FZ_CHECK(fault.field == ks->cols[missing] + 1, "fault field %u", fault.field);
        FZ_CHECK(fault.offset == want->len, "fault offset %zu, record length %zu", fault.offset, want->len);
    } else {
        FZ_CHECK(r == RS_CSV_OK, "key scan failed (%s) at offset %zu", r == RS_CSV_BAD ? fault.what : "more",
                 off);
        FZ_CHECK(rec.consumed == want->consumed && rec.len == want->len && rec.nfields == want->nfields,
                 "key scan record differs at offset %zu", off);
        for (uint32_t i = 0; i < ks->ncols; i++) {
            const char *s;
            size_t len;
            fzcsv_ref_field(ref, ri, ks->cols[i], &s, &len);
            if (i)
                FZ_CHECK(rs_buf_append(&exp, &ks->sep, 1) == 0, "out of memory");
            FZ_CHECK(rs_buf_append(&exp, len ? s : "", len) == 0, "out of memory");
        }
        FZ_CHECK(keylen == exp.len, "key length %zu, libcsv %zu, record at offset %zu", keylen, exp.len, off);
        FZ_CHECK(keylen == 0 || memcmp(key, exp.data, keylen) == 0, "key bytes differ at offset %zu", off);
        if (ks->ncols == 1 && keylen && memchr(exp.data, '"', exp.len) == NULL)
            FZ_CHECK(key >= buf + off && key + keylen <= buf + off + want->len,
                     "a simple key must point into the input");
    }
    rs_buf_free(&scratch);
    rs_buf_free(&exp);
}

/* rs_csv_next fed growing prefixes of buf[off..n); returns its result. */
static int fzcsv_next_short(const rs_csv_dialect *d, const char *buf, size_t n, size_t off,
                            rs_csv_record *rec, rs_csv_fault *fault)
{
    size_t k = 1 + off % 3;
    for (;;) {
        size_t a = k < n - off ? k : n - off;
        int eof = off + a == n;
        int r = rs_csv_next(d, NULL, buf + off, a, eof, rec, NULL, NULL, NULL, fault);
        if (r != RS_CSV_MORE)
            return r;
        FZ_CHECK(!eof, "RS_CSV_MORE at eof, offset %zu", off);
        k += k < 64 ? 1 + (k % 5) : k; /* small steps, then doubling */
    }
}

/* One pass of rs_csv_next over buf[0..n) (short: fed short prefixes) against
 * the reference. */
static void fzcsv_pass(const char *buf, size_t n, char delim, const fzcsv_ref *ref, int short_feed,
                       int boundaries)
{
    rs_csv_dialect d = {delim, 0};
    rs_csv_keyspec k10, k0;
    memset(&k10, 0, sizeof k10);
    memset(&k0, 0, sizeof k0);
    k10.ncols = 2;
    k10.cols[0] = 1;
    k10.cols[1] = 0;
    k10.sep = '|';
    k0.ncols = 1;
    k0.sep = '|';
    rs_buf fields = {0};
    size_t off = 0, ri = 0, lines = 0;
    int bad = 0;
    rs_csv_fault fault = {0};
    while (off < n) {
        rs_csv_record rec;
        int r;
        if (short_feed) {
            r = fzcsv_next_short(&d, buf, n, off, &rec, &fault);
            rs_csv_record full;
            rs_csv_fault ff = {0};
            int r2 = rs_csv_next(&d, NULL, buf + off, n - off, 1, &full, NULL, NULL, NULL, &ff);
            FZ_CHECK(r == r2, "short feed gives %d, one call %d, at offset %zu", r, r2, off);
            if (r == RS_CSV_OK)
                FZ_CHECK(full.len == rec.len && full.consumed == rec.consumed && full.nfields == rec.nfields &&
                             full.lines == rec.lines,
                         "short feed record differs at offset %zu", off);
            else
                FZ_CHECK(!strcmp(ff.what, fault.what) && ff.offset == fault.offset && ff.field == fault.field,
                         "short feed fault differs at offset %zu: '%s'@%zu vs '%s'@%zu", off, fault.what,
                         fault.offset, ff.what, ff.offset);
        } else {
            r = rs_csv_next(&d, NULL, buf + off, n - off, 1, &rec, NULL, NULL, NULL, &fault);
        }
        FZ_CHECK(r == RS_CSV_OK || r == RS_CSV_BAD, "result %d at eof, offset %zu", r, off);
        if (r == RS_CSV_BAD) {
            bad = 1;
            FZ_CHECK(!strcmp(fault.what, FZCSV_STRAY) || !strcmp(fault.what, FZCSV_AFTER) ||
                         !strcmp(fault.what, FZCSV_UNTERM),
                     "unexpected fault '%s'", fault.what);
            FZ_CHECK(fault.offset < n - off, "fault offset %zu past the input", fault.offset);
            char c = buf[off + fault.offset];
            if (!strcmp(fault.what, FZCSV_STRAY) || !strcmp(fault.what, FZCSV_UNTERM))
                FZ_CHECK(c == '"', "fault '%s' at byte 0x%02x", fault.what, (unsigned char)c);
            else
                FZ_CHECK(c != delim && c != '\r' && c != '\n', "fault '%s' at byte 0x%02x", fault.what,
                         (unsigned char)c);
            break;
        }
        FZ_CHECK(rec.consumed > 0 && rec.consumed <= n - off, "consumed %zu of %zu", rec.consumed, n - off);
        FZ_CHECK(rec.len <= rec.consumed && rec.consumed - rec.len <= 2, "len %zu consumed %zu", rec.len,
                 rec.consumed);
        FZ_CHECK(rec.lines == fzcsv_line_ends(buf + off, rec.consumed), "lines %u at offset %zu", rec.lines, off);
        lines += rec.lines;
        if (rec.nfields == 0) {
            FZ_CHECK(rec.len == 0, "no fields but length %zu", rec.len);
        } else {
            FZ_CHECK(ri < ref->nrec, "extra record at offset %zu (libcsv has %zu)", off, ref->nrec);
            FZ_CHECK(rec.nfields == ref->rec[ri].nf, "record %zu: %u fields, libcsv %u", ri, rec.nfields,
                     ref->rec[ri].nf);
            int nf = rs_csv_fields(&d, buf + off, rec.len, &fields);
            FZ_CHECK(nf == (int)rec.nfields, "rs_csv_fields gives %d fields, rs_csv_next %u", nf, rec.nfields);
            size_t elen = ref->rec[ri + 1].off - ref->rec[ri].off;
            FZ_CHECK(fields.len == elen && memcmp(fields.data, ref->joined.data + ref->rec[ri].off, elen) == 0,
                     "fields of record %zu differ from libcsv", ri);
            if (!short_feed) {
                fzcsv_check_key(&d, &k10, buf, n, off, &rec, ref, ri);
                fzcsv_check_key(&d, &k0, buf, n, off, &rec, ref, ri);
            }
            ri++;
        }
        if (boundaries && !ref->bad && (ri < 8 || off + rec.consumed == n)) {
            /* the record containing any of its bytes ends where it ends
             * (each call scans from the start: first records and the last) */
            int term = rec.consumed > rec.len;
            size_t want = term ? off + rec.consumed : n + 1;
            size_t probes[3] = {off, off + rec.len / 2, rec.len ? off + rec.len - 1 : off};
            for (int i = 0; i < 3; i++) {
                size_t got = rs_csv_boundary_after(buf, n, probes[i]);
                FZ_CHECK(got == want, "rs_csv_boundary_after(from %zu) = %zu, record ends at %zu", probes[i],
                         got, want);
            }
        }
        off += rec.consumed;
    }
    FZ_CHECK(bad == ref->bad, "libcsv %s, rs_csv %s (%s)", ref->bad ? "rejects" : "accepts",
             bad ? "rejects" : "accepts", bad ? fault.what : "");
    FZ_CHECK(ri == ref->nrec, "%zu records, libcsv %zu", ri, ref->nrec);
    if (!bad)
        FZ_CHECK(lines == fzcsv_line_ends(buf, n), "line count %zu", lines);
    rs_buf_free(&fields);
}

/* rs_csv_rows over the whole records of buf[from..n), max records a call,
 * against rs_csv_next at the same offsets (compared with libcsv above);
 * after a fault it goes on past the next LF from a new cursor. */
static void fzcsv_rows(const char *buf, size_t from, size_t n, char delim, const rs_csv_keyspec *ks, size_t max)
{
    rs_csv_dialect d = {delim, 0};
    rs_csv_cursor c;
    rs_csv_cursor_init(&c, buf, from, n);
    rs_csv_row rows[32];
    rs_buf sc = {0}, sc2 = {0};
    size_t off = from;
    while (off < n) {
        size_t k = 0;
        rs_csv_fault f = {0}, f2 = {0};
        int r = rs_csv_rows(&d, ks, &c, rows, max, &k, &sc, &f);
        rs_csv_record rec;
        const char *key = NULL;
        size_t kl = 0;
        for (size_t i = 0; i < k; i++) {
            FZ_CHECK(rows[i].off == off, "row at %zu, expected %zu", rows[i].off, off);
            int r2 = rs_csv_next(&d, ks, buf + off, n - off, 1, &rec, &key, &kl, &sc2, &f2);
            FZ_CHECK(r2 == RS_CSV_OK, "rs_csv_rows accepts what rs_csv_next rejects (%s) at %zu", f2.what, off);
            FZ_CHECK(rows[i].len == rec.len && rows[i].next == off + rec.consumed && rows[i].nfields == rec.nfields &&
                         rows[i].lines == rec.lines,
                     "record at %zu differs from rs_csv_next's", off);
            FZ_CHECK(!ks || (rows[i].keylen == kl && (kl == 0 || memcmp(rows[i].key, key, kl) == 0)),
                     "key at %zu differs", off);
            off = rows[i].next;
        }
        FZ_CHECK(c.pos == off, "cursor at %zu, records end at %zu", c.pos, off);
        if (r == RS_CSV_OK) {
            FZ_CHECK(k > 0 || off == n, "no progress at %zu", off);
            continue;
        }
        FZ_CHECK(rs_csv_next(&d, ks, buf + off, n - off, 1, &rec, &key, &kl, &sc2, &f2) == RS_CSV_BAD,
                 "rs_csv_rows rejects what rs_csv_next accepts at %zu", off);
        FZ_CHECK(!strcmp(f.what, f2.what) && f.offset == f2.offset && f.field == f2.field,
                 "fault at %zu: '%s'@%zu, rs_csv_next '%s'@%zu", off, f.what, f.offset, f2.what, f2.offset);
        const char *lf = f.offset < n - off ? memchr(buf + off + f.offset, '\n', n - off - f.offset) : NULL;
        off = lf ? (size_t)(lf - buf) + 1 : n;
        rs_csv_cursor_init(&c, buf, off, n);
    }
    rs_buf_free(&sc);
    rs_buf_free(&sc2);
}

static void fzcsv_rows_all(const char *buf, size_t n, char delim)
{
    rs_csv_keyspec k0, k1, k10;
    memset(&k0, 0, sizeof k0);
    k0.ncols = 1;
    k0.sep = '|';
    k1 = k0;
    k1.cols[0] = 1;
    k10 = k1;
    k10.ncols = 2;
    k10.cols[1] = 0;
    fzcsv_rows(buf, 0, n, delim, NULL, 32);
    fzcsv_rows(buf, 0, n, delim, &k0, 1 + n % 31);
    fzcsv_rows(buf, 0, n, delim, &k1, 32);
    fzcsv_rows(buf, 0, n, delim, &k10, 32);
    /* from the first line end: a cursor whose blocks start mid-input */
    const char *lf = n ? memchr(buf, '\n', n) : NULL;
    if (lf)
        fzcsv_rows(buf, (size_t)(lf - buf) + 1, n, delim, &k0, 32);
}

static int check_csv(const uint8_t *data, size_t size)
{
    char *buf = malloc(size ? size : 1); /* exact size: ASan sees over-reads */
    FZ_CHECK(buf != NULL, "out of memory");
    if (size)
        memcpy(buf, data, size);
    /* ',' always; '\t' too when the input has a tab (else it would be the
     * same run with the roles of ',' and '\t' swapped) */
    static const char delims[] = {',', '\t'};
    size_t ndelims = size && memchr(buf, '\t', size) ? 2 : 1;
    for (size_t di = 0; di < ndelims; di++) {
        fzcsv_ref ref;
        fzcsv_ref_parse(&ref, buf, size, delims[di]);
        for (int isa = RS_CSV_ISA_SCALAR; isa <= RS_CSV_ISA_AVX512; isa++) {
            if (rs_csv_isa_set(isa) != 0)
                continue;
            fzcsv_pass(buf, size, delims[di], &ref, 0, isa == RS_CSV_ISA_SCALAR);
            fzcsv_rows_all(buf, size, delims[di]);
        }
        rs_csv_isa_set(RS_CSV_ISA_AUTO);
        fzcsv_pass(buf, size, delims[di], &ref, 1, 0);
        fzcsv_ref_free(&ref);
    }
    free(buf);
    return 0;
}

#endif
