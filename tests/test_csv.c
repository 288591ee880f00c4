/* tests/test_csv.c - the CSV scanner, proven equal to libcsv.
 *
 * The reference is libcsv with CSV_STRICT | CSV_STRICT_FINI, a space
 * function that says "no" to every byte, and the default terminators. Every
 * input (fixtures, all short strings over a small alphabet, random strings,
 * random well-formed CSV with mutations) is parsed by both; they must give
 * the same records with the same fields, or both reject it. rs_csv_next is
 * driven with the whole buffer and with artificially short `avail` (so that
 * RS_CSV_MORE and resumption are exercised). Every test of rs_csv_next runs
 * once per SIMD variant this CPU has (scalar, SSE2, AVX2, AVX-512BW). */
#include <criterion/criterion.h>
#include <csv.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csv/scan_isa.h"
#include "ringshard/csv.h"
#include "support.h"

/* ---------------------------------------------------------------- helpers */

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static size_t rndn(size_t n) { return n ? (size_t)(rnd() % n) : 0; }

static int cur_isa;

/* "[isa] bytes" with unprintable bytes escaped, for failure messages. */
static const char *hex(const char *p, size_t n)
{
    static char out[4096];
    size_t o = (size_t)snprintf(out, sizeof out, "[%s] ", rs_csv_isa_name(cur_isa));
    for (size_t i = 0; i < n && o + 8 < sizeof out; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c >= 33 && c < 127 && c != '\\')
            out[o++] = (char)c;
        else
            o += (size_t)snprintf(out + o, sizeof out - o, "\\x%02x", c);
    }
    out[o] = '\0';
    return out;
}

#define GROW(arr, n, cap)                                                     \
    do {                                                                      \
        if ((n) == (cap)) {                                                   \
            (cap) = (cap) ? 2 * (cap) : 16;                                   \
            (arr) = realloc((arr), (cap) * sizeof *(arr));                    \
        }                                                                     \
    } while (0)

/* Runs body once per variant of rs_csv_next that this CPU supports. */
static void run_each_isa(void (*body)(void))
{
    int ran = 0;
    for (int isa = RS_CSV_ISA_SCALAR; isa <= RS_CSV_ISA_AVX512; isa++) {
        if (rs_csv_isa_set(isa) != 0)
            continue;
        cur_isa = isa;
        body();
        ran++;
    }
#if defined(__x86_64__)
    cr_assert_geq(ran, 2, "scalar and SSE2 at least");
#endif
    cr_assert_geq(ran, 1);
    rs_csv_isa_set(RS_CSV_ISA_AUTO);
}

#define ISA_TEST(suite, name, ...)                                            \
    static void name##_body(void);                                            \
    Test(suite, name, __VA_ARGS__) { run_each_isa(name##_body); }             \
    static void name##_body(void)

/* ------------------------------------------------- the reference (libcsv) */

typedef struct {
    size_t off, len;
} span;

typedef struct {
    rs_buf bytes;                 /* all field values */
    span *f;                      /* fields */
    size_t nf, capf;
    size_t *rec_first;            /* index of each record's first field */
    size_t nrec, caprec;
    size_t end_mark;              /* fields of complete records */
    int bad;
} ref_t;

static void ref_field(void *s, size_t n, void *data)
{
    ref_t *r = data;
    GROW(r->f, r->nf, r->capf);
    r->f[r->nf].off = r->bytes.len;
    r->f[r->nf].len = n;
    r->nf++;
    if (n)
        cr_assert_eq(rs_buf_append(&r->bytes, s, n), 0);
}

static size_t last_row_mark;
static void ref_row(int c, void *data)
{
    (void)c;
    ref_t *r = data;
    GROW(r->rec_first, r->nrec, r->caprec);
    r->rec_first[r->nrec++] = last_row_mark;
    last_row_mark = r->nf;
}

static int no_space(unsigned char c)
{
    (void)c;
    return 0;
}

static void ref_init_parser(struct csv_parser *p, char delim)
{
    cr_assert_eq(csv_init(p, CSV_STRICT | CSV_STRICT_FINI), 0);
    csv_set_space_func(p, no_space);
    csv_set_delim(p, (unsigned char)delim);
}

static void ref_parse(ref_t *r, const char *buf, size_t n, char delim)
{
    memset(r, 0, sizeof *r);
    last_row_mark = 0;
    struct csv_parser p;
    ref_init_parser(&p, delim);
    if (csv_parse(&p, buf, n, ref_field, ref_row, r) != n)
        r->bad = 1;
    else if (csv_fini(&p, ref_field, ref_row, r) != 0)
        r->bad = 1;
    csv_free(&p);
    r->end_mark = last_row_mark;
}

static void ref_free(ref_t *r)
{
    rs_buf_free(&r->bytes);
    free(r->f);
    free(r->rec_first);
}

static size_t ref_nfields(const ref_t *r, size_t i)
{
    size_t end = i + 1 < r->nrec ? r->rec_first[i + 1] : r->end_mark;
    return end - r->rec_first[i];
}

static const span *ref_f(const ref_t *r, size_t rec, size_t col)
{
    return &r->f[r->rec_first[rec] + col];
}

/* Record i as rs_csv_fields stores it: each field followed by a NUL. */
static void ref_joined(const ref_t *r, size_t i, rs_buf *out)
{
    out->len = 0;
    size_t nf = ref_nfields(r, i);
    for (size_t k = 0; k < nf; k++) {
        const span *s = ref_f(r, i, k);
        if (s->len)
            cr_assert_eq(rs_buf_append(out, r->bytes.data + s->off, s->len), 0);
        cr_assert_eq(rs_buf_append(out, "", 1), 0);
    }
}

/* --------------------------------------------------- the differential run */

typedef struct {
    long cases, accepted, rejected, records, more_calls;
} stats_t;

static const char *const W_STRAY = "stray quote in unquoted field";
static const char *const W_AFTER = "unexpected character after closing quote";
static const char *const W_UNTERM = "unterminated quoted field";
static const char *const W_LONG = "record longer than the limit";
static const char *const W_MISSING = "missing key column";

/* Calls rs_csv_next at buf[off..n) feeding growing short prefixes. */
static int next_short(const rs_csv_dialect *d, const char *buf, size_t n, size_t off,
                      rs_csv_record *rec, rs_csv_fault *fault, stats_t *st)
{
    size_t k = 1 + rndn(8);
    for (;;) {
        size_t a = k < n - off ? k : n - off;
        int eof = off + a == n;
        int r = rs_csv_next(d, NULL, buf + off, a, eof, rec, NULL, NULL, NULL, fault);
        if (r != RS_CSV_MORE)
            return r;
        cr_assert(!eof, "RS_CSV_MORE at eof, input %s", hex(buf, n));
        st->more_calls++;
        k += 1 + rndn(8);
    }
}

/* Checks a key spec of random columns on the record at buf[off..]. */
static void check_key(const rs_csv_dialect *d, const char *buf, size_t n, size_t off,
                      const rs_csv_record *want, const ref_t *ref, size_t ri)
{
    rs_csv_keyspec ks;
    memset(&ks, 0, sizeof ks);
    ks.ncols = 1 + (uint32_t)rndn(3);
    ks.sep = rndn(2) ? '|' : '\0';
    size_t nf = ref_nfields(ref, ri);
    int missing = -1;
    for (uint32_t i = 0; i < ks.ncols; i++) {
        ks.cols[i] = (uint32_t)rndn(nf + 2);
        if (ks.cols[i] >= nf && missing < 0)
            missing = (int)i;
    }
    rs_buf scratch = {0};
    rs_csv_record rec;
    rs_csv_fault fault;
    const char *key = NULL;
    size_t keylen = 0;
    int r = rs_csv_next(d, &ks, buf + off, n - off, 1, &rec, &key, &keylen, &scratch, &fault);
    if (missing >= 0) {
        cr_assert_eq(r, RS_CSV_BAD, "key col %u of %zu fields accepted, input %s",
                     ks.cols[missing], nf, hex(buf, n));
        cr_assert_str_eq(fault.what, W_MISSING);
        cr_assert_eq(fault.field, ks.cols[missing] + 1);
        cr_assert_eq(fault.offset, want->len);
    } else {
        cr_assert_eq(r, RS_CSV_OK, "key failed (%s), input %s", r == RS_CSV_BAD ? fault.what : "more",
                     hex(buf, n));
        cr_assert_eq(rec.consumed, want->consumed);
        rs_buf exp = {0};
        for (uint32_t i = 0; i < ks.ncols; i++) {
            const span *s = ref_f(ref, ri, ks.cols[i]);
            if (i)
                rs_buf_append(&exp, &ks.sep, 1);
            if (s->len)
                rs_buf_append(&exp, ref->bytes.data + s->off, s->len);
        }
        cr_assert_eq(keylen, exp.len, "key length, input %s", hex(buf, n));
        cr_assert(keylen == 0 || memcmp(key, exp.data, keylen) == 0, "key bytes, input %s",
                  hex(buf, n));
        if (ks.ncols == 1 && keylen && memchr(exp.data, '"', exp.len) == NULL)
            cr_assert(key >= buf + off && key + keylen <= buf + off + want->len,
                      "simple key must point into the input");
        rs_buf_free(&exp);
    }
    rs_buf_free(&scratch);
}

static size_t count_line_ends(const char *p, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (p[i] == '\n' || (p[i] == '\r' && (i + 1 == n || p[i + 1] != '\n')))
            k++;
    return k;
}

/* rs_csv_rows over the whole records of buf[from..n), max records a call,
 * against rs_csv_next at the same offsets (at_eof), which the callers prove
 * equal to libcsv record for record and field for field: every record must
 * be the same (offset, length, line end, fields, lines, key bytes), every
 * fault the same fault. After a fault the scan goes on past the next LF
 * (as --on-bad-row skip does), from a new cursor. Returns the records. */
static long rows_vs_next(const rs_csv_dialect *d, const rs_csv_keyspec *ks, const char *buf, size_t from, size_t n,
                         size_t max)
{
    rs_csv_cursor c;
    rs_csv_cursor_init(&c, buf, from, n);
    rs_csv_row rows[64];
    rs_buf sc = {0}, sc2 = {0};
    size_t off = from;
    long records = 0;
    cr_assert_leq(max, 64);
    while (off < n) {
        size_t k = 99;
        rs_csv_fault f = {0};
        int r = rs_csv_rows(d, ks, &c, rows, max, &k, &sc, &f);
        cr_assert_leq(k, max);
        for (size_t i = 0; i < k; i++, records++) {
            rs_csv_record rec;
            rs_csv_fault f2;
            const char *key = NULL;
            size_t kl = 0;
            cr_assert_eq(rows[i].off, off, "row offset, input %s", hex(buf, n));
            int r2 = rs_csv_next(d, ks, buf + off, n - off, 1, &rec, &key, &kl, &sc2, &f2);
            cr_assert_eq(r2, RS_CSV_OK, "rs_csv_rows accepts what rs_csv_next rejects (%s) at %zu, input %s",
                         f2.what, off, hex(buf, n));
            cr_assert(rows[i].len == rec.len && rows[i].next == off + rec.consumed &&
                          rows[i].nfields == rec.nfields && rows[i].lines == rec.lines,
                      "record at %zu: len %zu/%zu next %zu/%zu fields %u/%u lines %u/%u, input %s", off,
                      rows[i].len, rec.len, rows[i].next, off + rec.consumed, rows[i].nfields, rec.nfields,
                      rows[i].lines, rec.lines, hex(buf, n));
            if (ks) {
                cr_assert(rows[i].keylen == kl && (kl == 0 || memcmp(rows[i].key, key, kl) == 0),
                          "key of the record at %zu, input %s", off, hex(buf, n));
                if (key != sc2.data)
                    cr_assert_eq(rows[i].key, key, "a key in the input is pointed at, input %s", hex(buf, n));
            }
            off = rows[i].next;
        }
        cr_assert_eq(c.pos, off);
        if (r == RS_CSV_OK) {
            cr_assert(k > 0 || off == n, "no progress at %zu, input %s", off, hex(buf, n));
            continue;
        }
        rs_csv_record rec;
        rs_csv_fault f2;
        const char *key = NULL;
        size_t kl = 0;
        cr_assert_eq(rs_csv_next(d, ks, buf + off, n - off, 1, &rec, &key, &kl, &sc2, &f2), RS_CSV_BAD,
                     "rs_csv_rows rejects what rs_csv_next accepts at %zu, input %s", off, hex(buf, n));
        cr_assert(!strcmp(f.what, f2.what) && f.offset == f2.offset && f.field == f2.field,
                  "fault at %zu: '%s'@%zu field %u, rs_csv_next '%s'@%zu field %u, input %s", off, f.what,
                  f.offset, f.field, f2.what, f2.offset, f2.field, hex(buf, n));
        const char *lf = memchr(buf + off + f.offset, '\n', f.offset < n - off ? n - off - f.offset : 0);
        off = lf ? (size_t)(lf - buf) + 1 : n;
        rs_csv_cursor_init(&c, buf, off, n);
    }
    rs_buf_free(&sc);
    rs_buf_free(&sc2);
    return records;
}

/* rs_csv_rows against rs_csv_next on buf[0..n): no key, a key of column 1
 * or 2, a composite key; one record a call, a few, many. */
static void rows_all_ways(const char *buf, size_t n, char delim, size_t max_record)
{
    rs_csv_dialect d = {delim, max_record};
    rs_csv_keyspec k0 = {.ncols = 1, .cols = {0}, .sep = '|'};
    rs_csv_keyspec k1 = {.ncols = 1, .cols = {1}, .sep = '|'};
    rs_csv_keyspec k10 = {.ncols = 2, .cols = {1, 0}, .sep = '|'};
    rows_vs_next(&d, NULL, buf, 0, n, 64);
    rows_vs_next(&d, &k0, buf, 0, n, 1);
    rows_vs_next(&d, &k1, buf, 0, n, 7);
    rows_vs_next(&d, &k10, buf, 0, n, 32);
}

/* Compares rs_csv_next (fed in `mode`: 0 whole buffer, 1 short prefixes)
 * with libcsv on buf[0..n). */
static void diff_one(const char *buf, size_t n, char delim, int mode, stats_t *st)
{
    ref_t ref;
    ref_parse(&ref, buf, n, delim);
    rs_csv_dialect d = {delim, 0};
    rs_buf fields = {0}, exp = {0};
    if (mode == 0)
        rows_all_ways(buf, n, delim, 0);
    size_t off = 0, ri = 0, lines = 0;
    int bad = 0;
    rs_csv_fault fault = {0};
    while (off < n) {
        rs_csv_record rec;
        int r = mode ? next_short(&d, buf, n, off, &rec, &fault, st)
                     : rs_csv_next(&d, NULL, buf + off, n - off, 1, &rec, NULL, NULL, NULL, &fault);
        cr_assert_neq(r, RS_CSV_MORE, "MORE at eof, input %s", hex(buf, n));
        if (mode) { /* resumption must give what one call on everything gives */
            rs_csv_record full;
            rs_csv_fault ff;
            int r2 = rs_csv_next(&d, NULL, buf + off, n - off, 1, &full, NULL, NULL, NULL, &ff);
            cr_assert_eq(r, r2, "short feed differs, input %s", hex(buf, n));
            if (r == RS_CSV_OK)
                cr_assert(full.len == rec.len && full.consumed == rec.consumed &&
                              full.nfields == rec.nfields && full.lines == rec.lines,
                          "short feed record differs, input %s", hex(buf, n));
            else
                cr_assert(!strcmp(ff.what, fault.what) && ff.offset == fault.offset &&
                              ff.field == fault.field,
                          "short feed fault differs, input %s", hex(buf, n));
        }
        if (r == RS_CSV_BAD) {
            bad = 1;
            cr_assert(!strcmp(fault.what, W_STRAY) || !strcmp(fault.what, W_AFTER) ||
                          !strcmp(fault.what, W_UNTERM),
                      "unexpected fault %s", fault.what);
            cr_assert_lt(fault.offset, n - off);
            if (strcmp(fault.what, W_UNTERM) != 0) {
                char c = buf[off + fault.offset];
                cr_assert(!strcmp(fault.what, W_STRAY) ? c == '"' : c != delim && c != '\r' && c != '\n');
            } else {
                cr_assert_eq(buf[off + fault.offset], '"');
            }
            break;
        }
        cr_assert_gt(rec.consumed, 0);
        cr_assert_leq(rec.consumed, n - off);
        cr_assert(rec.consumed - rec.len <= 2);
        lines += rec.lines;
        cr_assert_eq(rec.lines, count_line_ends(buf + off, rec.consumed),
                     "lines, input %s", hex(buf, n));
        if (rec.nfields == 0) {
            cr_assert_eq(rec.len, 0);
        } else {
            cr_assert_lt(ri, ref.nrec, "extra record at %zu, input %s", off, hex(buf, n));
            cr_assert_eq(rec.nfields, ref_nfields(&ref, ri), "field count of record %zu, input %s",
                         ri, hex(buf, n));
            int nf = rs_csv_fields(&d, buf + off, rec.len, &fields);
            cr_assert_eq(nf, (int)rec.nfields, "rs_csv_fields count, input %s", hex(buf, n));
            ref_joined(&ref, ri, &exp);
            cr_assert(fields.len == exp.len && memcmp(fields.data, exp.data, exp.len) == 0,
                      "fields of record %zu differ, input %s", ri, hex(buf, n));
            check_key(&d, buf, n, off, &rec, &ref, ri);
            ri++;
            st->records++;
        }
        off += rec.consumed;
    }
    cr_assert_eq(bad, ref.bad, "libcsv %s, rs_csv %s (%s), input %s",
                 ref.bad ? "rejects" : "accepts", bad ? "rejects" : "accepts",
                 bad ? fault.what : "", hex(buf, n));
    cr_assert_eq(ri, ref.nrec, "record count %zu vs libcsv %zu, input %s", ri, ref.nrec, hex(buf, n));
    if (!bad)
        cr_assert_eq(lines, count_line_ends(buf, n));
    st->cases++;
    if (bad)
        st->rejected++;
    else
        st->accepted++;
    rs_buf_free(&fields);
    rs_buf_free(&exp);
    ref_free(&ref);
}

static void diff_both(const char *in, size_t n, char delim, stats_t *st)
{
    char *buf = malloc(n ? n : 1); /* exact size, so that ASan sees any over-read */
    memcpy(buf, in, n);
    diff_one(buf, n, delim, 0, st);
    diff_one(buf, n, delim, 1, st);
    free(buf);
}

/* ------------------------------------------------------------- generators */

static const char ALPHA[] = {'a', 'b', ',', '"', '\r', '\n', ' ', '\0', (char)0xC3};
#define NALPHA sizeof ALPHA

/* Random well-formed CSV: records of fields, some quoted with anything inside
 * (quotes doubled), LF/CRLF/CR terminators, empty lines, maybe no final end. */
static size_t gen_csv(char *out, size_t cap, char delim, size_t maxrecs)
{
    static const char unq[] = {'a', 'b', ' ', '\0', (char)0xC3, 'x', '\t', ';'};
    size_t o = 0;
    size_t nrec = 1 + rndn(maxrecs);
    for (size_t r = 0; r < nrec && o + 64 < cap; r++) {
        if (rndn(8) == 0) { /* empty line */
            out[o++] = rndn(2) ? '\n' : '\r';
            continue;
        }
        size_t nf = 1 + rndn(5);
        for (size_t f = 0; f < nf && o + 40 < cap; f++) {
            if (f)
                out[o++] = delim;
            size_t len = rndn(6);
            if (rndn(3) == 0) {
                out[o++] = '"';
                for (size_t i = 0; i < len; i++) {
                    char c = ALPHA[rndn(NALPHA)];
                    if (c == ',')
                        c = delim;
                    out[o++] = c;
                    if (c == '"')
                        out[o++] = '"';
                }
                out[o++] = '"';
            } else {
                for (size_t i = 0; i < len; i++) {
                    char c = unq[rndn(sizeof unq)];
                    out[o++] = c == delim ? 'd' : c;
                }
            }
        }
        if (r + 1 < nrec || rndn(3)) {
            switch (rndn(3)) {
            case 0: out[o++] = '\n'; break;
            case 1: out[o++] = '\r'; out[o++] = '\n'; break;
            default: out[o++] = '\r'; break;
            }
        }
    }
    return o;
}

static void mutate(char *buf, size_t n)
{
    if (n == 0)
        return;
    size_t k = 1 + rndn(2);
    for (size_t i = 0; i < k; i++)
        buf[rndn(n)] = ALPHA[rndn(NALPHA)];
}

/* -------------------------------------------------------- the differential */

ISA_TEST(csv_diff, fixtures, .timeout = 600)
{
    DIR *dir = opendir(fixture("csv"));
    cr_assert_not_null(dir);
    struct dirent *e;
    stats_t st = {0};
    int files = 0, bad_files = 0;
    while ((e = readdir(dir)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l < 5 || strcmp(e->d_name + l - 4, ".csv") != 0)
            continue;
        char rel[300];
        snprintf(rel, sizeof rel, "csv/%s", e->d_name);
        size_t n;
        char *buf = slurp(fixture(rel), &n);
        cr_assert_not_null(buf, "%s", rel);
        char delim = strstr(e->d_name, "tab") ? '\t' : ',';
        long rej = st.rejected;
        diff_both(buf, n, delim, &st);
        int rejected = st.rejected != rej;
        int expect_bad = strncmp(e->d_name, "bad_", 4) == 0;
        cr_assert_eq(rejected, expect_bad, "%s: %s", rel, rejected ? "rejected" : "accepted");
        bad_files += expect_bad;
        /* every split point of the file, fed in two calls */
        for (size_t cut = 0; cut <= n && !expect_bad; cut++) {
            rs_csv_dialect d = {delim, 0};
            rs_csv_record rec;
            rs_csv_fault f;
            size_t off = 0;
            while (off < n) {
                size_t a = off < cut ? cut - off : n - off;
                int r = rs_csv_next(&d, NULL, buf + off, a, off + a == n, &rec, NULL, NULL, NULL, &f);
                if (r == RS_CSV_MORE) {
                    r = rs_csv_next(&d, NULL, buf + off, n - off, 1, &rec, NULL, NULL, NULL, &f);
                }
                cr_assert_eq(r, RS_CSV_OK, "%s cut %zu", rel, cut);
                off += rec.consumed;
            }
            cr_assert_eq(off, n);
        }
        free(buf);
        files++;
    }
    closedir(dir);
    cr_assert_geq(files, 15, "fixtures found: %d", files);
    cr_assert_geq(bad_files, 3);
    cr_assert_eq(st.cases, 2L * files);
}

ISA_TEST(csv_diff, exhaustive_short_inputs, .timeout = 600)
{
    /* every string of length 0..5 over the 9-byte alphabet */
    stats_t st = {0};
    char buf[8];
    long expect = 0, pw = 1;
    for (size_t len = 0; len <= 5; len++, pw *= (long)NALPHA) {
        expect += pw;
        for (long code = 0; code < pw; code++) {
            long c = code;
            for (size_t i = 0; i < len; i++, c /= (long)NALPHA)
                buf[i] = ALPHA[c % (long)NALPHA];
            diff_both(buf, len, ',', &st);
        }
    }
    cr_assert_eq(st.cases, 2 * expect);
    cr_assert_eq(expect, 66430);
    cr_assert_gt(st.accepted, 10000);
    cr_assert_gt(st.rejected, 10000);
    fprintf(stderr, "csv exhaustive [%s]: %ld inputs x2 feeds: %ld accepted, %ld rejected, %ld records\n",
            rs_csv_isa_name(cur_isa), expect, st.accepted / 2, st.rejected / 2, st.records / 2);
}

ISA_TEST(csv_diff, random_inputs, .timeout = 600)
{
    rng_state = 0x1234567887654321ULL;
    stats_t st = {0};
    char buf[256];
    const long N_RAW = 20000, N_TAB = 5000, N_CSV = 20000, N_LONG = 5000;
    for (long k = 0; k < N_RAW; k++) { /* raw bytes of the alphabet */
        size_t n = rndn(48);
        for (size_t i = 0; i < n; i++)
            buf[i] = ALPHA[rndn(NALPHA)];
        diff_both(buf, n, ',', &st);
    }
    for (long k = 0; k < N_TAB; k++) { /* tab delimiter; comma is data */
        size_t n = rndn(48);
        for (size_t i = 0; i < n; i++)
            buf[i] = rndn(10) == 0 ? '\t' : ALPHA[rndn(NALPHA)];
        diff_both(buf, n, '\t', &st);
    }
    for (long k = 0; k < N_CSV; k++) { /* well-formed CSV, a quarter mutated */
        char delim = rndn(5) == 0 ? '\t' : ',';
        size_t n = gen_csv(buf, sizeof buf, delim, 8);
        if (rndn(4) == 0)
            mutate(buf, n);
        diff_both(buf, n, delim, &st);
    }
    for (long k = 0; k < N_LONG; k++) { /* up to 4 SIMD blocks, few quotes */
        size_t n = rndn(sizeof buf);
        for (size_t i = 0; i < n; i++)
            buf[i] = rndn(40) == 0 ? '"' : rndn(12) == 0 ? '\n' : rndn(5) == 0 ? ',' : "ab \0\xc3\r\t"[rndn(7)];
        diff_both(buf, n, ',', &st);
    }
    long cases = N_RAW + N_TAB + N_CSV + N_LONG;
    cr_assert_eq(st.cases, 2 * cases, "random cases run: %ld", st.cases / 2);
    cr_assert_gt(st.accepted, 2 * 15000);
    cr_assert_gt(st.rejected, 2 * 10000);
    cr_assert_gt(st.more_calls, 100000);
    fprintf(stderr,
            "csv random [%s]: %ld inputs x2 feeds: %ld accepted, %ld rejected, %ld records, "
            "%ld RS_CSV_MORE returns\n",
            rs_csv_isa_name(cur_isa), cases, st.accepted / 2, st.rejected / 2, st.records / 2,
            st.more_calls);
}

/* ------------------------------------------------------------ key extraction */

static int next_key(const char *s, const rs_csv_keyspec *ks, rs_csv_record *rec, const char **key,
                    size_t *keylen, rs_buf *scratch, rs_csv_fault *f)
{
    rs_csv_dialect d = {',', 0};
    return rs_csv_next(&d, ks, s, strlen(s), 1, rec, key, keylen, scratch, f);
}

#define KEY_EQ(key, len, str)                                                 \
    do {                                                                      \
        cr_assert_eq((len), strlen(str));                                     \
        cr_assert(memcmp((key), (str), (len)) == 0, "key %.*s != %s", (int)(len), (key), (str)); \
    } while (0)

ISA_TEST(csv_key, single_unquoted_points_into_input, .timeout = 600)
{
    const char *s = "abc,user7,12.50\nnext";
    rs_csv_keyspec ks = {.ncols = 1, .cols = {1}, .sep = '|'};
    rs_csv_record rec;
    rs_csv_fault f;
    const char *key;
    size_t kl;
    rs_buf scratch = {0};
    cr_assert_eq(next_key(s, &ks, &rec, &key, &kl, &scratch, &f), RS_CSV_OK);
    KEY_EQ(key, kl, "user7");
    cr_assert_eq(key, s + 4);
    cr_assert_eq(scratch.data, NULL, "no scratch use for a plain key");
    cr_assert_eq(rec.len, 15);
    cr_assert_eq(rec.consumed, 16);
    cr_assert_eq(rec.nfields, 3);
    cr_assert_eq(rec.lines, 1);
    ks.cols[0] = 0;
    cr_assert_eq(next_key(s, &ks, &rec, &key, &kl, &scratch, &f), RS_CSV_OK);
    KEY_EQ(key, kl, "abc");
    ks.cols[0] = 2; /* last field, ends at the terminator */
    cr_assert_eq(next_key(s, &ks, &rec, &key, &kl, &scratch, &f), RS_CSV_OK);
    KEY_EQ(key, kl, "12.50");
    ks.cols[0] = 0;
    cr_assert_eq(next_key(",x\n", &ks, &rec, &key, &kl, &scratch, &f), RS_CSV_OK);
    cr_assert_eq(kl, 0);
}

ISA_TEST(csv_key, composite_reordered, .timeout = 600)
{
    const char *s = "id1,u2,3.00,EUR,ts\r\n";
    rs_csv_keyspec ks = {.ncols = 2, .cols = {3, 1}, .sep = '|'};
    rs_csv_record rec;
    rs_csv_fault f;
    const char *key;
    size_t kl;
    rs_buf scratch = {0};
    cr_assert_eq(next_key(s, &ks, &rec, &key, &kl, &scratch, &f), RS_CSV_OK);
    KEY_EQ(key, kl, "EUR|u2");
    cr_assert_eq(key, scratch.data);
    cr_assert_eq(key[kl], '\0');
    cr_assert_eq(rec.consumed, strlen(s));
    cr_assert_eq(rec.len, strlen(s) - 2);
    rs_csv_keyspec k3 = {.ncols = 3, .cols = {4, 0, 4}, .sep = '/'};
    cr_assert_eq(next_key(s, &k3, &rec, &key, &kl, &scratch, &f), RS_CSV_OK);
    KEY_EQ(key, kl, "ts/id1/ts");
    /* a quoted part with an escaped quote and a delimiter */
    cr_assert_eq(next_key("\"a,\"\"b\",x,\"\"\n", &k3, &rec, &key, &kl, &scratch, &f), RS_CSV_BAD);
    cr_assert_str_eq(f.what, W_MISSING);
    rs_csv_keyspec k2 = {.ncols = 2, .cols = {2, 0}, .sep = ':'};
    cr_assert_eq(next_key("\"a,\"\"b\",x,\"\"\n", &k2, &rec, &key, &kl, &scratch, &f), RS_CSV_OK);
    KEY_EQ(key, kl, ":a,\"b");
    rs_buf_free(&scratch);
}

ISA_TEST(csv_key, quoted, .timeout = 600)
{
    rs_csv_keyspec ks = {.ncols = 1, .cols = {1}, .sep = '|'};
    rs_csv_record rec;
    rs_csv_fault f;
    const char *key;
    size_t kl;
    rs_buf scratch = {0};
    const char *s = "x,\"he said \"\"hi\"\", twice\",y\n";
    cr_assert_eq(next_key(s, &ks, &rec, &key, &kl, &scratch, &f), RS_CSV_OK);
    KEY_EQ(key, kl, "he said \"hi\", twice");
    cr_assert_eq(key, scratch.data);
    s = "x,\"a,b\nc\",y\n";
    cr_assert_eq(next_key(s, &ks, &rec, &key, &kl, &scratch, &f), RS_CSV_OK);
    KEY_EQ(key, kl, "a,b\nc");
    cr_assert_eq(key, s + 3, "a quoted key without \"\" points into the input");
    cr_assert_eq(rec.lines, 2);
    cr_assert_eq(rec.nfields, 3);
    s = "x,\"\"\"\"\n"; /* one escaped quote */
    cr_assert_eq(next_key(s, &ks, &rec, &key, &kl, &scratch, &f), RS_CSV_OK);
    KEY_EQ(key, kl, "\"");
    s = "x,\"\"\n";
    cr_assert_eq(next_key(s, &ks, &rec, &key, &kl, &scratch, &f), RS_CSV_OK);
    cr_assert_eq(kl, 0);
    rs_buf_free(&scratch);
}

ISA_TEST(csv_key, missing_column, .timeout = 600)
{
    rs_csv_keyspec ks = {.ncols = 2, .cols = {1, 5}, .sep = '|'};
    rs_csv_record rec;
    rs_csv_fault f;
    const char *key;
    size_t kl;
    rs_buf scratch = {0};
    cr_assert_eq(next_key("a,b,c\nd", &ks, &rec, &key, &kl, &scratch, &f), RS_CSV_BAD);
    cr_assert_str_eq(f.what, W_MISSING);
    cr_assert_eq(f.field, 6);
    cr_assert_eq(f.offset, 5);
    rs_csv_keyspec k1 = {.ncols = 1, .cols = {1}};
    cr_assert_eq(next_key("only\n", &k1, &rec, &key, &kl, &scratch, &f), RS_CSV_BAD);
    cr_assert_eq(f.field, 2);
    cr_assert_eq(f.offset, 4);
    /* an empty line is not a missing column: it has no key at all */
    cr_assert_eq(next_key("\r\nx,y\n", &k1, &rec, &key, &kl, &scratch, &f), RS_CSV_OK);
    cr_assert_eq(rec.nfields, 0);
    cr_assert_eq(rec.consumed, 2);
    cr_assert_eq(rec.lines, 1);
    cr_assert_eq(kl, 0);
    rs_buf_free(&scratch);
}

ISA_TEST(csv_key, fault_offsets_and_fields, .timeout = 600)
{
    rs_csv_record rec;
    rs_csv_fault f;
    struct {
        const char *in;
        const char *what;
        size_t offset;
        uint32_t field;
    } cases[] = {
        {"ab,c\"d\n", W_STRAY, 4, 2},
        {"a\"\n", W_STRAY, 1, 1},
        {"x,y,z,ab\"\"c\n", W_STRAY, 8, 4},
        {"\"ab\"x,c\n", W_AFTER, 4, 1},
        {"a,\"b\" ,c\n", W_AFTER, 5, 2},
        {"a,b,\"c\"\"\"d\n", W_AFTER, 9, 3},
        {"a,\"bc", W_UNTERM, 2, 2},
        {"a,\"b\"\"", W_UNTERM, 2, 2},
        {"\"", W_UNTERM, 0, 1},
        {"1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,x\"\n",
         W_STRAY, 79, 30},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rs_csv_dialect d = {',', 0};
        const char *s = cases[i].in;
        for (int withkey = 0; withkey < 2; withkey++) {
            rs_csv_keyspec ks = {.ncols = 1, .cols = {0}};
            const char *key;
            size_t kl;
            rs_buf scratch = {0};
            int r = rs_csv_next(&d, withkey ? &ks : NULL, s, strlen(s), 1, &rec, &key, &kl,
                                &scratch, &f);
            cr_assert_eq(r, RS_CSV_BAD, "case %zu", i);
            cr_assert_str_eq(f.what, cases[i].what, "case %zu", i);
            cr_assert_eq(f.offset, cases[i].offset, "case %zu: offset %zu", i, f.offset);
            cr_assert_eq(f.field, cases[i].field, "case %zu: field %u", i, f.field);
            rs_buf_free(&scratch);
        }
    }
}

ISA_TEST(csv_key, records_and_lines, .timeout = 600)
{
    rs_csv_dialect d = {',', 0};
    rs_csv_record rec;
    rs_csv_fault f;
    /* CR at the end of avail may be the first half of CRLF */
    cr_assert_eq(rs_csv_next(&d, NULL, "a,b\r", 4, 0, &rec, NULL, NULL, NULL, &f), RS_CSV_MORE);
    cr_assert_eq(rs_csv_next(&d, NULL, "a,b\r", 4, 1, &rec, NULL, NULL, NULL, &f), RS_CSV_OK);
    cr_assert_eq(rec.consumed, 4);
    cr_assert_eq(rs_csv_next(&d, NULL, "a,b\r\n", 5, 0, &rec, NULL, NULL, NULL, &f), RS_CSV_OK);
    cr_assert_eq(rec.consumed, 5);
    cr_assert_eq(rec.lines, 1);
    cr_assert_eq(rs_csv_next(&d, NULL, "a,b\rc", 5, 0, &rec, NULL, NULL, NULL, &f), RS_CSV_OK);
    cr_assert_eq(rec.consumed, 4);
    cr_assert_eq(rs_csv_next(&d, NULL, "\r", 1, 0, &rec, NULL, NULL, NULL, &f), RS_CSV_MORE);
    cr_assert_eq(rs_csv_next(&d, NULL, "\r\r", 2, 0, &rec, NULL, NULL, NULL, &f), RS_CSV_OK);
    cr_assert_eq(rec.consumed, 1);
    cr_assert_eq(rec.nfields, 0);
    /* incomplete records */
    cr_assert_eq(rs_csv_next(&d, NULL, "a,b", 3, 0, &rec, NULL, NULL, NULL, &f), RS_CSV_MORE);
    cr_assert_eq(rs_csv_next(&d, NULL, "a,\"b\n", 5, 0, &rec, NULL, NULL, NULL, &f), RS_CSV_MORE);
    cr_assert_eq(rs_csv_next(&d, NULL, "a,\"b\"", 5, 0, &rec, NULL, NULL, NULL, &f), RS_CSV_MORE);
    cr_assert_eq(rs_csv_next(&d, NULL, "a,\"b\"", 5, 1, &rec, NULL, NULL, NULL, &f), RS_CSV_OK);
    cr_assert_eq(rec.nfields, 2);
    cr_assert_eq(rs_csv_next(&d, NULL, "", 0, 1, &rec, NULL, NULL, NULL, &f), RS_CSV_MORE);
    /* line ends inside quotes are counted, CRLF once */
    const char *s = "\"1\r\n2\n3\r4\r\",x\n";
    cr_assert_eq(rs_csv_next(&d, NULL, s, strlen(s), 0, &rec, NULL, NULL, NULL, &f), RS_CSV_OK);
    cr_assert_eq(rec.lines, 5);
    cr_assert_eq(rec.nfields, 2);
    cr_assert_eq(rec.len, strlen(s) - 1);
    /* bad delimiter */
    rs_csv_dialect dq = {'"', 0};
    cr_assert_eq(rs_csv_next(&dq, NULL, "a\n", 2, 1, &rec, NULL, NULL, NULL, &f), RS_CSV_BAD);
    cr_assert_eq(rs_csv_fields(&dq, "a", 1, NULL), -1);
}

Test(csv_fields, header)
{
    rs_csv_dialect d = {',', 0};
    rs_buf out = {0};
    const char *h = "id,\"user id\",\"a \"\"b\"\"\",,last";
    cr_assert_eq(rs_csv_fields(&d, h, strlen(h), &out), 5);
    const char want[] = "id\0user id\0a \"b\"\0\0last";
    cr_assert_eq(out.len, sizeof want);
    cr_assert(memcmp(out.data, want, sizeof want) == 0);
    cr_assert_eq(rs_csv_fields(&d, "", 0, &out), 0);
    cr_assert_eq(out.len, 0);
    cr_assert_eq(rs_csv_fields(&d, "a\"b", 3, &out), -1);
    cr_assert_eq(rs_csv_fields(&d, "\"a\"b", 4, &out), -1);
    cr_assert_eq(rs_csv_fields(&d, "\"a", 2, &out), -1);
    cr_assert_eq(rs_csv_fields(&d, "a\nb", 3, &out), -1);
    cr_assert_eq(rs_csv_fields(&d, "\"a\nb\"", 5, &out), 1);
    rs_buf_free(&out);
}

/* ------------------------------------------------------------ max_record */

ISA_TEST(csv_limit, max_record, .timeout = 600)
{
    rs_csv_record rec;
    rs_csv_fault f;
    rs_csv_dialect d4 = {',', 4};
    cr_assert_eq(rs_csv_next(&d4, NULL, "abcd\n", 5, 0, &rec, NULL, NULL, NULL, &f), RS_CSV_OK);
    cr_assert_eq(rec.len, 4);
    cr_assert_eq(rs_csv_next(&d4, NULL, "abcd", 4, 1, &rec, NULL, NULL, NULL, &f), RS_CSV_OK);
    cr_assert_eq(rs_csv_next(&d4, NULL, "abcd", 4, 0, &rec, NULL, NULL, NULL, &f), RS_CSV_MORE);
    cr_assert_eq(rs_csv_next(&d4, NULL, "abcd\r", 5, 0, &rec, NULL, NULL, NULL, &f), RS_CSV_MORE);
    cr_assert_eq(rs_csv_next(&d4, NULL, "abcd\r\n", 6, 0, &rec, NULL, NULL, NULL, &f), RS_CSV_OK);
    cr_assert_eq(rec.consumed, 6);
    cr_assert_eq(rs_csv_next(&d4, NULL, "\"ab\"\n", 5, 0, &rec, NULL, NULL, NULL, &f), RS_CSV_OK);
    /* too long, even though the record is incomplete */
    const char *too[] = {"abcde", "abcde\n", "a,b,c", "\"abcdef", "\"abc\"\"", "\"abc\"\n",
                         "ab,\"\n\n\n", "\"abc\",", "a,b,\"\""};
    for (size_t i = 0; i < sizeof too / sizeof too[0]; i++) {
        cr_assert_eq(rs_csv_next(&d4, NULL, too[i], strlen(too[i]), 0, &rec, NULL, NULL, NULL, &f),
                     RS_CSV_BAD, "%s", too[i]);
        cr_assert_str_eq(f.what, W_LONG);
        cr_assert_eq(f.offset, 4);
    }
    /* a fault before the limit wins, one after it does not */
    cr_assert_eq(rs_csv_next(&d4, NULL, "a\"cdef", 6, 0, &rec, NULL, NULL, NULL, &f), RS_CSV_BAD);
    cr_assert_str_eq(f.what, W_STRAY);
    cr_assert_eq(rs_csv_next(&d4, NULL, "abcd\"f", 6, 0, &rec, NULL, NULL, NULL, &f), RS_CSV_BAD);
    cr_assert_str_eq(f.what, W_LONG);
    /* every limit across several SIMD blocks, each special byte just at it */
    char buf[300];
    for (size_t M = 1; M <= 260; M++) {
        for (int form = 0; form < 3; form++) {
            for (size_t i = 0; i < M; i++) /* 0: one field; 1: many; 2: a quoted field */
                buf[i] = form == 1 && i % 7 == 3 ? ',' : 'a';
            if (form == 2)
                buf[0] = buf[M - 1] = '"';
            if (form == 2 && M < 2)
                continue;
            const char specials[] = {',', '"', '\n', '\r', 'a'};
            for (size_t c = 0; c < sizeof specials; c++) {
                buf[M] = specials[c];
                buf[M + 1] = 'z';
                buf[M + 2] = '\n';
                rs_csv_dialect dm = {',', M};
                int r = rs_csv_next(&dm, NULL, buf, M + 3, 0, &rec, NULL, NULL, NULL, &f);
                if (specials[c] == '\n' || specials[c] == '\r') {
                    cr_assert_eq(r, RS_CSV_OK, "M=%zu form %d c=%d", M, form, specials[c]);
                    cr_assert_eq(rec.len, M);
                    cr_assert_eq(rec.nfields, form == 1 ? 1 + (M + 3) / 7 : 1);
                } else {
                    cr_assert_eq(r, RS_CSV_BAD, "M=%zu form %d c=%d", M, form, specials[c]);
                    cr_assert_str_eq(f.what, W_LONG, "M=%zu form %d c=%d", M, form, specials[c]);
                    cr_assert_eq(f.offset, M);
                }
                rs_csv_dialect d0 = {',', 0}; /* and without a limit */
                r = rs_csv_next(&d0, NULL, buf, M + 3, 0, &rec, NULL, NULL, NULL, &f);
                if (specials[c] == 'a' && form == 2) {
                    cr_assert_eq(r, RS_CSV_BAD);
                    cr_assert_str_eq(f.what, W_AFTER);
                    cr_assert_eq(f.offset, M);
                } else if (specials[c] == ',' || specials[c] == 'a') {
                    cr_assert_eq(r, RS_CSV_OK);
                    cr_assert_eq(rec.len, M + 2);
                } else if (specials[c] == '"') { /* "" or a quote opening a field */
                    int open = form == 2 || buf[M - 1] == ',';
                    cr_assert_eq(r, open ? RS_CSV_MORE : RS_CSV_BAD, "M=%zu form %d", M, form);
                    if (open)
                        continue;
                    cr_assert_eq(f.offset, M);
                }
            }
        }
    }
    /* a huge record is refused after max_record bytes, not at its end */
    size_t big = 1 << 20;
    char *p = malloc(big);
    memset(p, 'x', big);
    rs_csv_dialect dk = {',', 1000};
    cr_assert_eq(rs_csv_next(&dk, NULL, p, big, 0, &rec, NULL, NULL, NULL, &f), RS_CSV_BAD);
    cr_assert_eq(f.offset, 1000);
    cr_assert_eq(f.field, 1);
    cr_assert_eq(rs_csv_next(&dk, NULL, p, 1000, 0, &rec, NULL, NULL, NULL, &f), RS_CSV_MORE);
    p[1000] = '\n';
    cr_assert_eq(rs_csv_next(&dk, NULL, p, big, 0, &rec, NULL, NULL, NULL, &f), RS_CSV_OK);
    cr_assert_eq(rec.len, 1000);
    free(p);
}

/* The limited scanner agrees with the unlimited one on random inputs. */
ISA_TEST(csv_limit, random_against_unlimited, .timeout = 600)
{
    rng_state = 0xabcdef0123456789ULL;
    char buf[256];
    long cases = 0, too_long = 0;
    for (int k = 0; k < 20000; k++) {
        size_t n, M;
        if (k % 3 == 0) {
            n = gen_csv(buf, sizeof buf, ',', 6);
            M = 1 + rndn(14);
        } else if (k % 3 == 1) {
            n = rndn(40);
            for (size_t i = 0; i < n; i++)
                buf[i] = ALPHA[rndn(NALPHA)];
            M = 1 + rndn(14);
        } else { /* long records across SIMD blocks, limits near block edges */
            n = rndn(sizeof buf);
            for (size_t i = 0; i < n; i++)
                buf[i] = rndn(60) == 0 ? '"' : rndn(90) == 0 ? '\n' : rndn(6) == 0 ? ',' : 'a';
            M = 1 + rndn(200);
        }
        rs_csv_dialect du = {',', 0}, dl = {',', M};
        rows_all_ways(buf, n, ',', M);
        size_t off = 0;
        while (off < n) {
            rs_csv_record ru, rl;
            rs_csv_fault fu, fl;
            int u = rs_csv_next(&du, NULL, buf + off, n - off, 1, &ru, NULL, NULL, NULL, &fu);
            int l = rs_csv_next(&dl, NULL, buf + off, n - off, 1, &rl, NULL, NULL, NULL, &fl);
            int expect_long;
            if (u == RS_CSV_OK)
                expect_long = ru.len > M;
            else if (!strcmp(fu.what, W_UNTERM))
                expect_long = n - off > M;
            else
                expect_long = fu.offset >= M;
            cases++;
            if (expect_long) {
                too_long++;
                cr_assert_eq(l, RS_CSV_BAD, "M=%zu input %s", M, hex(buf, n));
                cr_assert_str_eq(fl.what, W_LONG);
                cr_assert_eq(fl.offset, M);
            } else {
                cr_assert_eq(l, u, "M=%zu input %s", M, hex(buf, n));
                if (u == RS_CSV_OK)
                    cr_assert(rl.len == ru.len && rl.consumed == ru.consumed &&
                              rl.nfields == ru.nfields && rl.lines == ru.lines);
                else
                    cr_assert(!strcmp(fl.what, fu.what) && fl.offset == fu.offset && fl.field == fu.field);
            }
            /* never waits for more than max_record bytes (+1 to see CRLF) */
            for (size_t a = M + 2; a <= n - off; a++) {
                int r = rs_csv_next(&dl, NULL, buf + off, a, 0, &rl, NULL, NULL, NULL, &fl);
                cr_assert_neq(r, RS_CSV_MORE, "M=%zu avail=%zu input %s", M, a, hex(buf, n));
            }
            if (u != RS_CSV_OK)
                break;
            off += ru.consumed;
        }
    }
    cr_assert_gt(too_long, 1000);
    cr_assert_gt(cases - too_long, 1000);
}

/* ------------------------------------------------- the structural scanner */

/* Appends a record of fields to out at o: plain words, delimiters, and one
 * quoted field holding "", a delimiter, CR, LF or CRLF, placed so that its
 * quotes and line ends fall at every offset around a 64-byte block edge. */
static size_t straddler(char *out, size_t o, size_t lead, int inner, int term)
{
    static const char *const inside[] = {"a\"\"b", "x,y", "p\nq", "r\r\ns", "t\ru", "\"\"", "", ",\"\"\n"};
    for (size_t i = 0; i < lead; i++)
        out[o++] = i % 9 == 4 ? ',' : (char)('a' + i % 7);
    out[o++] = ',';
    out[o++] = '"';
    for (const char *c = inside[inner]; *c; c++)
        out[o++] = *c;
    out[o++] = '"';
    out[o++] = ',';
    out[o++] = 'z';
    static const char *const ends[] = {"\n", "\r\n", "\r"};
    for (const char *c = ends[term]; *c; c++)
        out[o++] = *c;
    return o;
}

/* Quotes, "" pairs and quoted line ends at every position around the
 * 64-byte block edges, with the range starting at every offset of a block
 * (the cursor's blocks start where it starts): rs_csv_rows gives
 * rs_csv_next's records and libcsv's fields. */
ISA_TEST(csv_rows, quotes_straddling_blocks, .timeout = 600)
{
    static char buf[4096];
    stats_t st = {0};
    long records = 0;
    for (size_t lead = 50; lead < 80; lead++)
        for (int inner = 0; inner < 8; inner++)
            for (int term = 0; term < 3; term++) {
                size_t n = 0;
                for (int r = 0; r < 3; r++)
                    n = straddler(buf, n, lead + (size_t)r, inner, term);
                diff_both(buf, n, ',', &st); /* rs_csv_next and rs_csv_rows against libcsv */
                rs_csv_dialect d = {',', 0};
                rs_csv_keyspec k2 = {.ncols = 1, .cols = {(uint32_t)(lead / 9) + 1}, .sep = '|'};
                rs_csv_record rec;
                rs_csv_fault f;
                /* from each record start, and after a prefix of 1..63 bytes
                 * of junk-free records that shifts the blocks */
                for (size_t off = 0; off < n;) {
                    records += rows_vs_next(&d, &k2, buf, off, n, 64);
                    cr_assert_eq(rs_csv_next(&d, NULL, buf + off, n - off, 1, &rec, NULL, NULL, NULL, &f),
                                 RS_CSV_OK);
                    off += rec.consumed;
                }
                for (size_t shift = 1; shift < 64; shift++) {
                    char *b2 = malloc(n + shift);
                    memset(b2, '\n', shift); /* empty lines: records of their own */
                    memcpy(b2 + shift, buf, n);
                    records += rows_vs_next(&d, &k2, b2, 0, n + shift, 64);
                    free(b2);
                }
            }
    cr_assert_eq(st.rejected, 0);
    cr_assert_gt(records, 100000);
}

/* Random CSV of records up to a few hundred bytes, quoted fields with
 * "" and line ends inside, a quarter mutated, in inputs of up to 6 KiB:
 * records that end two, three or more blocks after they start, and
 * quotes at the edges of the blocks the scanner classifies at a time
 * (RS_CSV_CHUNK) as its window slides. rs_csv_rows must give
 * rs_csv_next's records and faults, and rs_csv_next libcsv's fields. */
ISA_TEST(csv_rows, long_records_across_the_masks_window, .timeout = 600)
{
    rng_state = 0x7e57ab1ec0ffee11ULL;
    static char buf[6144];
    stats_t st = {0};
    for (int k = 0; k < 1500; k++) {
        size_t n = 0, want = 1024 + rndn(sizeof buf - 1024 - 512);
        while (n < want) {
            size_t nf = 1 + rndn(12);
            for (size_t f = 0; f < nf && n + 256 < sizeof buf; f++) { /* a field takes at most 243 bytes */
                if (f)
                    buf[n++] = ',';
                size_t len = rndn(rndn(4) == 0 ? 120 : 24);
                int quoted = rndn(3) == 0;
                if (quoted)
                    buf[n++] = '"';
                for (size_t i = 0; i < len; i++) {
                    char c = "abcdefgh 0123456789"[rndn(19)];
                    if (quoted && rndn(16) == 0)
                        c = "\"\n\r,"[rndn(4)];
                    buf[n++] = c;
                    if (c == '"')
                        buf[n++] = '"';
                }
                if (quoted)
                    buf[n++] = '"';
            }
            if (rndn(10) == 0)
                buf[n++] = '\r';
            buf[n++] = '\n';
        }
        if (rndn(4) == 0)
            for (int m = 0; m < 3; m++)
                buf[rndn(n)] = "\",x\n"[rndn(4)];
        char *b = malloc(n); /* exact size, so that ASan sees any over-read */
        memcpy(b, buf, n);
        diff_one(b, n, ',', 0, &st);
        free(b);
    }
    cr_assert_gt(st.accepted, 900);
    cr_assert_gt(st.rejected, 100);
    cr_assert_gt(st.records, 20000);
}

/* A closing quote in the last byte of every block up to the 48th, from
 * the range's start, followed by each byte that may or may not follow
 * it: whichever blocks end what the scanner classifies at a time, the
 * byte after one is read from the next classification. */
ISA_TEST(csv_rows, a_closing_quote_at_every_block_end, .timeout = 600)
{
    static char buf[4096];
    rs_csv_dialect d = {',', 0};
    rs_csv_keyspec k0 = {.ncols = 1, .cols = {0}, .sep = '|'};
    long bad = 0;
    for (size_t blk = 1; blk <= 48; blk++)
        for (int after = 0; after < 5; after++) {
            size_t q = 64 * blk - 1, n = 0; /* the closing quote's offset */
            while (q - n > 60) {            /* records of 30 bytes to near it */
                n += (size_t)snprintf(buf + n, sizeof buf - n, "%027zu,a\n", n);
            }
            size_t open = q - 5 > n + 2 ? q - 5 : n + 2;
            memset(buf + n, 'b', open - n);
            buf[n] = 'k';
            buf[open - 1] = ',';
            buf[open] = '"';
            memset(buf + open + 1, 'c', q - open - 1);
            buf[q] = '"';
            n = q + 1;
            buf[n++] = "x,\n\"y"[after];
            n += (size_t)snprintf(buf + n, sizeof buf - n, "z\nlast,row\n");
            rows_vs_next(&d, &k0, buf, 0, n, 64);
            rows_vs_next(&d, NULL, buf, 0, n, 64);
            rs_csv_record rec;
            rs_csv_fault f;
            size_t off = 0;
            while (off < n && rs_csv_next(&d, NULL, buf + off, n - off, 1, &rec, NULL, NULL, NULL, &f) == RS_CSV_OK)
                off += rec.consumed;
            bad += off < n;
        }
    cr_assert_eq(bad, 48 * 3, "x, y or a quote after the closing one: malformed (%ld inputs)", bad);
}

/* A batch is cut into ranges at record boundaries (the segments), each
 * scanned by its own cursor, the last maybe without a final line end: the
 * records of the ranges must be those of the whole, at every cut. */
ISA_TEST(csv_rows, range_edges_give_the_records_of_the_whole, .timeout = 600)
{
    rng_state = 0x0ddba11cafef00dULL;
    char buf[1024];
    rs_csv_dialect d = {',', 0};
    rs_csv_keyspec k0 = {.ncols = 1, .cols = {0}, .sep = '|'};
    long cuts = 0;
    for (int k = 0; k < 300; k++) {
        size_t n = gen_csv(buf, sizeof buf, ',', 40);
        ref_t ref;
        ref_parse(&ref, buf, n, ',');
        if (ref.bad) {
            ref_free(&ref);
            continue;
        }
        ref_free(&ref);
        size_t bnd[64], nb = 0, off = 0; /* record boundaries */
        while (off < n && nb < 64) {
            rs_csv_record rec;
            rs_csv_fault f;
            cr_assert_eq(rs_csv_next(&d, NULL, buf + off, n - off, 1, &rec, NULL, NULL, NULL, &f), RS_CSV_OK);
            bnd[nb++] = off;
            off += rec.consumed;
        }
        for (size_t a = 0; a < nb; a++)
            for (size_t b = a + 1; b <= nb; b++) {
                size_t to = b < nb ? bnd[b] : n;
                rows_vs_next(&d, &k0, buf, bnd[a], to, 1 + (size_t)(a + b) % 40);
                cuts++;
            }
    }
    cr_assert_gt(cuts, 10000);
}

/* The quote count the batch cutter takes, in every variant. */
ISA_TEST(csv_rows, quote_count, .timeout = 600)
{
    char buf[700];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = i % 3 == 0 || i % 64 == 63 ? '"' : 'a';
    for (size_t a = 0; a < 70; a++)
        for (size_t n = 0; a + n <= sizeof buf; n += 1 + n / 8) {
            size_t want = 0;
            for (size_t i = a; i < a + n; i++)
                want += buf[i] == '"';
            cr_assert_eq(rs_csv_count_quotes(buf + a, n), want, "at %zu, %zu bytes", a, n);
        }
}

/* -------------------------------------------------------- boundaries */

/* bnd[q] = 1 iff libcsv, fed p[0..q), stands at a record boundary: a row
 * callback fired on byte q-1, or q-1 was a boundary and byte q-1 is an
 * empty line's terminator (skipped). */
static int row_fired;
static void b_field(void *s, size_t n, void *d) { (void)s; (void)n; (void)d; }
static void b_row(int c, void *d) { (void)c; (void)d; row_fired = 1; }

static int libcsv_boundaries(const char *p, size_t n, unsigned char *bnd)
{
    struct csv_parser cp;
    ref_init_parser(&cp, ',');
    bnd[0] = 1;
    for (size_t q = 1; q <= n; q++) {
        row_fired = 0;
        if (csv_parse(&cp, p + q - 1, 1, b_field, b_row, NULL) != 1) {
            csv_free(&cp);
            return -1;
        }
        bnd[q] = row_fired || (bnd[q - 1] && (p[q - 1] == '\r' || p[q - 1] == '\n'));
    }
    int ok = csv_fini(&cp, b_field, b_row, NULL) == 0;
    csv_free(&cp);
    return ok ? 0 : -1;
}

/* rs_csv_resync from record boundary `from`, fed in pieces of `step`
 * bytes (a held-back CR fed again): where it ends the record. */
static size_t resync_end(const char *p, size_t n, size_t from, size_t step)
{
    rs_csv_dialect d = {',', 0};
    int state = 0;
    size_t pos = from, have = from;
    for (;;) {
        have = have + step < n ? have + step : n;
        size_t used;
        if (rs_csv_resync(&d, &state, p + pos, have - pos, have == n, &used))
            return pos + used;
        pos += used;
    }
}

static void check_boundaries(const char *in, size_t n, long *checked)
{
    char *p = malloc(n ? n : 1);
    memcpy(p, in, n);
    unsigned char *bnd = malloc(n + 1);
    cr_assert_eq(libcsv_boundaries(p, n, bnd), 0, "input must be valid: %s", hex(p, n));
    for (size_t from = 0; from <= n; from++) {
        size_t want = n + 1;
        for (size_t q = from + 1; q <= n; q++)
            if (bnd[q]) {
                want = p[q - 1] == '\r' && q < n && p[q] == '\n' ? q + 1 : q;
                break;
            }
        size_t got = rs_csv_boundary_after(p, n, from);
        cr_assert_eq(got, want, "from %zu: got %zu want %zu, input %s", from, got, want, hex(p, n));
        if (got <= n)
            cr_assert(bnd[got], "not a libcsv boundary");
        /* recovery (rs_csv_resync), fed in pieces, ends a record where libcsv does */
        if (from < n && bnd[from] && !(from > 0 && p[from - 1] == '\r' && p[from] == '\n'))
            for (size_t step = 1; step <= 64; step *= 4)
                cr_assert_eq(resync_end(p, n, from, step), want <= n ? want : n, "resync from %zu step %zu, input %s",
                             from, step, hex(p, n));
        (*checked)++;
    }
    free(bnd);
    free(p);
}

/* A random input libcsv accepts (gen_csv's, the invalid ones passed over:
 * the generator's fields may hold a NUL-free CR... all valid; keep it
 * honest). */
static size_t gen_valid(char *buf, size_t cap)
{
    for (;;) {
        size_t n = gen_csv(buf, cap, ',', 30);
        ref_t ref;
        ref_parse(&ref, buf, n, ',');
        int bad = ref.bad;
        ref_free(&ref);
        if (!bad)
            return n;
    }
}

Test(csv_boundary, random_quoted_newlines)
{
    rng_state = 0x5555aaaa3333cccc;
    char buf[1024];
    long inputs = 0, checked = 0;
    while (inputs < 3000) {
        size_t n = gen_valid(buf, sizeof buf);
        check_boundaries(buf, n, &checked);
        inputs++;
    }
    cr_assert_eq(inputs, 3000);
    cr_assert_gt(checked, 100000);
}

Test(csv_boundary, fixtures_and_fixed)
{
    long checked = 0;
    const char *names[] = {"quoted_newlines.csv", "doubled_quotes.csv", "crlf.csv", "lone_cr.csv",
                           "empty_lines.csv", "bills.csv", "no_final_newline.csv",
                           "quoted_delimiter.csv"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "csv/%s", names[i]);
        size_t n;
        char *p = slurp(fixture(rel), &n);
        cr_assert_not_null(p);
        check_boundaries(p, n, &checked);
        free(p);
    }
    const char *s = "a,\"x\ny\"\nb\r\n";
    cr_assert_eq(rs_csv_boundary_after(s, strlen(s), 0), 8);
    cr_assert_eq(rs_csv_boundary_after(s, strlen(s), 4), 8);
    cr_assert_eq(rs_csv_boundary_after(s, strlen(s), 8), 11);
    cr_assert_eq(rs_csv_boundary_after(s, strlen(s), 11), 12);
    cr_assert_eq(rs_csv_boundary_after("ab", 2, 0), 3);
}

/* Cutting a big buffer at boundaries and scanning the pieces separately gives
 * the records of one scan over the whole. */
ISA_TEST(csv_boundary, chunks_scan_like_whole, .timeout = 600)
{
    rng_state = 77;
    size_t cap = 4 << 20, n = 0;
    char *buf = malloc(cap);
    while (n + 2048 < cap)
        n += gen_csv(buf + n, 2048, ',', 40), buf[n++] = '\n';
    rs_csv_dialect d = {',', 0};
    rs_csv_record rec;
    rs_csv_fault f;
    size_t whole = 0, off = 0;
    while (off < n) {
        cr_assert_eq(rs_csv_next(&d, NULL, buf + off, n - off, 1, &rec, NULL, NULL, NULL, &f), RS_CSV_OK);
        whole += rec.nfields > 0;
        off += rec.consumed;
    }
    for (int chunks = 2; chunks <= 64; chunks *= 2) {
        size_t start = 0, pieces = 0, sum = 0;
        for (int c = 1; c <= chunks; c++) {
            size_t end = c == chunks ? n : rs_csv_boundary_after(buf, n, n / (size_t)chunks * (size_t)c);
            if (end > n)
                end = n;
            if (end <= start)
                continue;
            size_t o = start;
            while (o < end) {
                cr_assert_eq(rs_csv_next(&d, NULL, buf + o, end - o, 1, &rec, NULL, NULL, NULL, &f),
                             RS_CSV_OK);
                sum += rec.nfields > 0;
                o += rec.consumed;
            }
            cr_assert_eq(o, end);
            start = end;
            pieces++;
        }
        cr_assert_eq(sum, whole, "%d chunks", chunks);
        cr_assert_geq(pieces, 2);
    }
    free(buf);
}

/* ------------------------------------------------------------ dispatch */

Test(csv_isa, default_is_the_best_supported)
{
    int start = rs_csv_isa_get(), best = RS_CSV_ISA_SCALAR;
    for (int isa = RS_CSV_ISA_SCALAR; isa <= RS_CSV_ISA_AVX512; isa++)
        if (rs_csv_isa_set(isa) == 0)
            best = isa;
    cr_assert_eq(start, best, "default %s, best %s", rs_csv_isa_name(start), rs_csv_isa_name(best));
    cr_assert_eq(rs_csv_isa_set(99), -1);
    cr_assert_eq(rs_csv_isa_get(), best);
    fprintf(stderr, "csv: rs_csv_next uses %s\n", rs_csv_isa_name(start));
}

/* ---------------------------------------------------------- recovery */

/* Past a fault: a stray quote is data, a byte after a closing quote goes
 * on unquoted, CR ends a record as LF does; a quote never closed runs to
 * the end. */
Test(csv_resync, past_faults)
{
    static const struct {
        const char *in;
        size_t end;
    } cases[] = {
        {"2,x\"y\r3,c\r", 6},   {"2,x\"y\n3,c\n", 6},     {"2,x\"y\r\n3,c\r\n", 7}, {"\"ab\"c,\"x\ny\"\nz\n", 12},
        {"1,\"a\nb\nc\"\n2\n", 10}, {"2,\"open\n3,c\n4,d\n", 16}, {"a,b\"\"c\rd\n", 7},   {"\"a\"\"b\nc\"\rd", 9},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = strlen(cases[i].in);
        for (size_t step = 1; step <= n; step++)
            cr_assert_eq(resync_end(cases[i].in, n, 0, step), cases[i].end, "case %zu step %zu", i, step);
    }
}
