/* src/csv/scan.c - the hot-path CSV record scanner (see ringshard/csv.h).
 *
 * Reference semantics: libcsv 3.0.3 with CSV_STRICT | CSV_STRICT_FINI, a
 * space function that returns 0 for every byte (no trimming) and the default
 * terminator test (CR or LF). Established by probing libcsv and checked by
 * tests/test_csv.c (exhaustive short inputs, random inputs, fixtures).
 *
 * libcsv behaviours matched here, including the ones RFC 4180 would call
 * malformed or does not cover:
 *  1. LF alone and CR alone each end a record (RFC 4180 wants CRLF). CRLF is
 *     one terminator here; libcsv ends the record at CR and then skips the
 *     LF as an empty line, which yields the same records.
 *  2. Empty lines (a terminator at the start of a record) produce no record
 *     in libcsv; here they are returned as len == 0, nfields == 0 records
 *     (one per line end; CRLF is one) so that callers can count lines.
 *     A line holding only spaces or only a delimiter is NOT empty: " " is one
 *     field " ", "," is two empty fields.
 *  3. The last record may lack a terminator (complete at EOF).
 *  4. Any byte other than the delimiter, '"', CR and LF is data, including
 *     NUL, other control bytes and bytes >= 0x80 (no UTF-8 validation).
 *  5. Spaces and tabs are data everywhere; nothing is trimmed.
 *  6. A trailing delimiter adds an empty last field ("a," is "a","").
 *  7. Records may have different numbers of fields.
 *  8. Inside quotes, the delimiter, CR and LF (alone or paired) are data.
 *  Rejected, as libcsv rejects them (the first error in input order wins):
 *  9. A '"' inside an unquoted field (a"b, ab""c): "stray quote in unquoted
 *     field", at the quote.
 * 10. After a closing quote, anything but the delimiter, CR, LF or EOF, even
 *     a space ("ab"c, "ab" ,): "unexpected character after closing quote".
 * 11. A quoted field still open at EOF ("ab  or  a,"x""  or  """):
 *     "unterminated quoted field" (CSV_STRICT_FINI), at the opening quote.
 * Own rules, outside libcsv:
 * 12. A record longer than max_record bytes (terminator excluded) is
 *     rejected as soon as byte max_record is seen and is not a terminator,
 *     without waiting for the record to end; max_record == 0 means no limit.
 * 13. A delimiter of '"', CR or LF is rejected ("bad delimiter").
 * 14. A key of one field is a pointer into the input when that field has no
 *     doubled quote (a quoted field is returned without its quotes); other
 *     keys are built in scratch, whose len is reset to 0 first (the key is
 *     then also NUL-terminated). An empty line returns OK with an empty key
 *     (*keyp = p, *keylen = 0): callers skip records with nfields == 0.
 * 15. A CR that ends avail when !at_eof returns RS_CSV_MORE (it may be the
 *     first half of CRLF). avail == 0 returns RS_CSV_MORE (no record).
 * rs_csv_fields resets out->len to 0 and rejects a CR or LF outside quotes
 * (a complete record holds no terminator). rs_csv_boundary_after treats a CR
 * at p[len-1] as a terminator (returns len).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ringshard/csv.h"

#include "csv/scan_isa.h"

#if (defined(__x86_64__) || defined(__i386__)) && defined(__SSE2__) && defined(__GNUC__)
#define RS_CSV_X86 1
#include <immintrin.h>
#else
#define RS_CSV_X86 0
#endif

#define BLK 64 /* bytes classified per step of the unquoted scan: one uint64_t mask */
_Static_assert(BLK == 64, "the masks are uint64_t");

/* Fault messages (one object each, so a message has one address). */
static const char E_STRAY[] = "stray quote in unquoted field";
static const char E_AFTER[] = "unexpected character after closing quote";
static const char E_UNTERM[] = "unterminated quoted field";
static const char E_LONG[] = "record longer than the limit";
static const char E_MISSING[] = "missing key column";
static const char E_DELIM[] = "bad delimiter";
static const char E_KEYSPEC[] = "bad key spec";
static const char E_SCRATCH[] = "key needs a scratch buffer";
static const char E_NOMEM[] = "out of memory";

/* rs_buf_append, but nothing at all for n == 0 (a fresh buffer's data is
 * NULL, and memcpy(NULL, p, 0) is undefined). */
static int append(rs_buf *b, const void *p, size_t n)
{
    return n ? rs_buf_append(b, p, n) : 0;
}

static int fail(rs_csv_fault *f, const char *what, size_t offset, uint32_t field)
{
    f->what = what;
    f->offset = offset;
    f->field = field;
    return RS_CSV_BAD;
}

/* Block classifiers: set *dm to the bit mask of delimiter bytes and *om to
 * the mask of '"', CR and LF bytes in s[0..BLK). One per instruction set;
 * the body of rs_csv_next (scan_body.h) is compiled once with each. */
static inline void classify_scalar(const unsigned char *s, unsigned char delim, uint64_t *dm,
                                   uint64_t *om)
{
    uint64_t d = 0, o = 0;
    for (int k = 0; k < BLK; k++) {
        unsigned char c = s[k];
        d |= (uint64_t)(c == delim) << k;
        o |= (uint64_t)(c == '"' || c == '\r' || c == '\n') << k;
    }
    *dm = d;
    *om = o;
}

#if RS_CSV_X86
static inline void classify_sse2(const unsigned char *s, unsigned char delim, uint64_t *dm,
                                 uint64_t *om)
{
    const __m128i vd = _mm_set1_epi8((char)delim), vq = _mm_set1_epi8('"');
    const __m128i vr = _mm_set1_epi8('\r'), vn = _mm_set1_epi8('\n');
    uint64_t d = 0, o = 0;
    for (int k = 0; k < BLK / 16; k++) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(s + 16 * k));
        __m128i ot = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, vq), _mm_cmpeq_epi8(x, vr)),
                                  _mm_cmpeq_epi8(x, vn));
        d |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(x, vd)) << (16 * k);
        o |= (uint64_t)(uint32_t)_mm_movemask_epi8(ot) << (16 * k);
    }
    *dm = d;
    *om = o;
}

__attribute__((target("avx2"))) static inline void
classify_avx2(const unsigned char *s, unsigned char delim, uint64_t *dm, uint64_t *om)
{
    const __m256i vd = _mm256_set1_epi8((char)delim), vq = _mm256_set1_epi8('"');
    const __m256i vr = _mm256_set1_epi8('\r'), vn = _mm256_set1_epi8('\n');
    __m256i x0 = _mm256_loadu_si256((const __m256i *)(const void *)s);
    __m256i x1 = _mm256_loadu_si256((const __m256i *)(const void *)(s + 32));
    __m256i o0 = _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi8(x0, vq), _mm256_cmpeq_epi8(x0, vr)),
                                 _mm256_cmpeq_epi8(x0, vn));
    __m256i o1 = _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi8(x1, vq), _mm256_cmpeq_epi8(x1, vr)),
                                 _mm256_cmpeq_epi8(x1, vn));
    *dm = (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(x0, vd)) |
          (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(x1, vd)) << 32;
    *om = (uint64_t)(uint32_t)_mm256_movemask_epi8(o0) |
          (uint64_t)(uint32_t)_mm256_movemask_epi8(o1) << 32;
}

__attribute__((target("avx512bw"))) static inline void
classify_avx512(const unsigned char *s, unsigned char delim, uint64_t *dm, uint64_t *om)
{
    __m512i x = _mm512_loadu_si512((const void *)s);
    *dm = _mm512_cmpeq_epi8_mask(x, _mm512_set1_epi8((char)delim));
    *om = _mm512_cmpeq_epi8_mask(x, _mm512_set1_epi8('"')) |
          _mm512_cmpeq_epi8_mask(x, _mm512_set1_epi8('\r')) |
          _mm512_cmpeq_epi8_mask(x, _mm512_set1_epi8('\n'));
}
#endif

/* Line ends (LF, or CR not followed by LF) in p[a..b), where p[b] (if read)
 * is known not to be LF: it is a quote. */
static uint32_t count_lines(const char *p, size_t a, size_t b)
{
    uint32_t n = 0;
    const char *s = p + a, *e = p + b, *q;
    while (s < e && (q = memchr(s, '\n', (size_t)(e - s))) != NULL) {
        n++;
        s = q + 1;
    }
    s = p + a;
    while (s < e && (q = memchr(s, '\r', (size_t)(e - s))) != NULL) {
        if (q + 1 == e || q[1] != '\n')
            n++;
        s = q + 1;
    }
    return n;
}

typedef struct {
    size_t s[RS_CSV_MAX_KEY_COLS]; /* field start (at the opening quote if quoted) */
    size_t e[RS_CSV_MAX_KEY_COLS]; /* field end (past the closing quote) */
    unsigned char q[RS_CSV_MAX_KEY_COLS]; /* 0 unquoted, 1 quoted, 2 quoted with "" */
    uint32_t found;
} key_spans;

static inline void keep(const rs_csv_keyspec *ks, key_spans *k, uint32_t field, size_t s,
                        size_t e, int q)
{
    for (uint32_t i = 0; i < ks->ncols; i++)
        if (ks->cols[i] == field) {
            k->s[i] = s;
            k->e[i] = e;
            k->q[i] = (unsigned char)q;
            k->found |= 1u << i;
        }
}

/* Appends the value of a quoted field's inside p[s..e) with "" -> ". */
static int append_unquoted(rs_buf *b, const char *p, size_t s, size_t e)
{
    while (s < e) {
        const char *q = memchr(p + s, '"', e - s);
        size_t upto = q ? (size_t)(q - p) + 1 : e; /* keep one quote of the pair */
        if (append(b, p + s, upto - s) != 0)
            return -1;
        s = q ? upto + 1 : e;
    }
    return 0;
}

static int make_key(const rs_csv_keyspec *ks, const key_spans *k, const char *p,
                    const char **keyp, size_t *keylen, rs_buf *scratch, rs_csv_fault *fault)
{
    if (ks->ncols == 1 && k->q[0] != 2) {
        size_t a = k->s[0] + k->q[0], b = k->e[0] - k->q[0];
        *keyp = p + a;
        *keylen = b - a;
        return RS_CSV_OK;
    }
    if (scratch == NULL)
        return fail(fault, E_SCRATCH, 0, ks->cols[0] + 1);
    scratch->len = 0;
    for (uint32_t i = 0; i < ks->ncols; i++) {
        if (i > 0 && append(scratch, &ks->sep, 1) != 0)
            goto oom;
        int r;
        if (k->q[i] == 0)
            r = append(scratch, p + k->s[i], k->e[i] - k->s[i]);
        else
            r = append_unquoted(scratch, p, k->s[i] + 1, k->e[i] - 1);
        if (r != 0)
            goto oom;
    }
    if (rs_buf_reserve(scratch, 1) != 0)
        goto oom;
    scratch->data[scratch->len] = '\0';
    *keyp = scratch->data;
    *keylen = scratch->len;
    return RS_CSV_OK;
oom:
    return fail(fault, E_NOMEM, 0, 0);
}

enum { ST_UNQ, ST_QUO, ST_AFTERQ };

/* The checks of rs_csv_next before its first byte (scan_body.h): the
 * delimiter, the key spec (*klim: 1 + the last key column, 0 without a
 * key) and an empty input; the record's counts set to 0. RS_CSV_OK to go
 * on, else what rs_csv_next returns. */
static inline __attribute__((always_inline)) int scan_start(const rs_csv_dialect *d, const rs_csv_keyspec *key,
                                                            size_t avail, rs_csv_record *rec, uint32_t *klim,
                                                            rs_csv_fault *fault)
{
    const unsigned char delim = (unsigned char)d->delim;
    if (delim == '"' || delim == '\r' || delim == '\n')
        return fail(fault, E_DELIM, 0, 0);
    if (key != NULL) {
        if (key->ncols == 0 || key->ncols > RS_CSV_MAX_KEY_COLS)
            return fail(fault, E_KEYSPEC, 0, 0);
        for (uint32_t i = 0; i < key->ncols; i++)
            if (key->cols[i] >= *klim)
                *klim = key->cols[i] == UINT32_MAX ? UINT32_MAX : key->cols[i] + 1;
    }

    rec->len = rec->consumed = 0;
    rec->nfields = rec->lines = 0;
    if (avail == 0)
        return RS_CSV_MORE;
    return RS_CSV_OK;
}

/* The end of a record of rs_csv_next (scan_body.h), with its scan's state:
 * terminated by the CR or LF outside quotes at p[t] (terminated 1), or out
 * of bytes (0) in `state` at lim (avail, or maxrec when the record may be
 * no longer). Takes the terminator, keeps the last field, sets *rec and
 * makes the key. What rs_csv_next returns. Inlined into each SCAN_NAME, so
 * that its values stay in registers. */
static inline __attribute__((always_inline)) int
scan_end(int terminated, int state, size_t t, size_t lim, size_t maxrec, const char *p, size_t avail, int at_eof,
         const rs_csv_keyspec *key, key_spans *ks, uint32_t klim, uint32_t field, size_t fstart, int cq,
         uint32_t lines, rs_csv_record *rec, const char **keyp, size_t *keylen, rs_buf *scratch,
         rs_csv_fault *fault)
{
    const unsigned char *u = (const unsigned char *)p;
    if (terminated)
        goto terminated;
    if (lim < avail) { /* byte maxrec exists: only a terminator may stand there */
        unsigned char c = u[lim];
        if (state != ST_QUO && (c == '\r' || c == '\n')) {
            t = lim;
            goto terminated;
        }
        return fail(fault, E_LONG, maxrec, field + 1);
    }
    if (!at_eof)
        return RS_CSV_MORE;
    if (state == ST_QUO)
        return fail(fault, E_UNTERM, fstart, field + 1);
    rec->consumed = avail; /* the last record, without a terminator */
    t = avail;
    goto complete;

terminated: /* u[t] is CR or LF outside quotes */
    if (u[t] == '\n') {
        rec->consumed = t + 1;
    } else if (t + 1 < avail) {
        rec->consumed = t + 1 + (u[t + 1] == '\n');
    } else if (at_eof) {
        rec->consumed = t + 1;
    } else {
        return RS_CSV_MORE;
    }
    lines++;
    if (t == 0) { /* empty line */
        rec->lines = lines;
        if (key != NULL) {
            *keyp = p;
            *keylen = 0;
        }
        return RS_CSV_OK;
    }

complete:
    if (field < klim)
        keep(key, ks, field, fstart, t, cq);
    rec->len = t;
    rec->nfields = field + 1;
    rec->lines = lines;
    if (key == NULL)
        return RS_CSV_OK;
    if (ks->found != (1u << key->ncols) - 1) {
        for (uint32_t i = 0; i < key->ncols; i++)
            if (!(ks->found & (1u << i)))
                return fail(fault, E_MISSING, t, key->cols[i] + 1);
    }
    return make_key(key, ks, p, keyp, keylen, scratch, fault);
}

/* rs_csv_next, once per instruction set. */
#define SCAN_NAME next_scalar
#define CLASSIFY classify_scalar
#include "csv/scan_body.h"

#if RS_CSV_X86
#define SCAN_NAME next_sse2
#define CLASSIFY classify_sse2
#include "csv/scan_body.h"

#pragma GCC push_options
#pragma GCC target("avx2")
#define SCAN_NAME next_avx2
#define CLASSIFY classify_avx2
#include "csv/scan_body.h"
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512bw")
#define SCAN_NAME next_avx512
#define CLASSIFY classify_avx512
#include "csv/scan_body.h"
#pragma GCC pop_options
#endif

static int isa_supported(int isa)
{
    switch (isa) {
    case RS_CSV_ISA_SCALAR:
        return 1;
#if RS_CSV_X86
    case RS_CSV_ISA_SSE2:
        return 1;
    case RS_CSV_ISA_AVX2: /* the structural scanner's parity is a carry-less multiply */
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("popcnt");
    case RS_CSV_ISA_AVX512:
        return __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("pclmul") &&
               __builtin_cpu_supports("popcnt");
#endif
    default:
        return 0;
    }
}

static int best_isa(void)
{
    for (int isa = RS_CSV_ISA_AVX512; isa > RS_CSV_ISA_SCALAR; isa--)
        if (isa_supported(isa))
            return isa;
    return RS_CSV_ISA_SCALAR;
}

/* Set once before main (and by tests through rs_csv_isa_set); read-only
 * afterwards, so threads may share it. */
static int csv_isa = RS_CSV_ISA_SCALAR;

/* RINGSHARD_CSV_ISA (scalar, sse2, avx2, avx512bw) caps the variant, so
 * that one machine can measure the paths of smaller ones (tools/
 * bench_bucket.sh, docs/performance.md); an unknown name is ignored. */
__attribute__((constructor)) static void csv_isa_init(void)
{
    csv_isa = best_isa();
    const char *want = getenv("RINGSHARD_CSV_ISA");
    for (int isa = RS_CSV_ISA_SCALAR; want && isa < csv_isa; isa++)
        if (strcmp(want, rs_csv_isa_name(isa)) == 0 && isa_supported(isa))
            csv_isa = isa;
}

int rs_csv_isa_set(int isa)
{
    if (isa == RS_CSV_ISA_AUTO)
        isa = best_isa();
    if (!isa_supported(isa))
        return -1;
    csv_isa = isa;
    return 0;
}

int rs_csv_isa_get(void)
{
    return csv_isa;
}

const char *rs_csv_isa_name(int isa)
{
    static const char *const names[] = {"scalar", "sse2", "avx2", "avx512bw"};
    return isa >= 0 && isa < 4 ? names[isa] : "?";
}

int rs_csv_next(const rs_csv_dialect *d, const rs_csv_keyspec *key, const char *p, size_t avail,
                int at_eof, rs_csv_record *rec, const char **keyp, size_t *keylen,
                rs_buf *scratch, rs_csv_fault *fault)
{
    switch (csv_isa) {
#if RS_CSV_X86
    case RS_CSV_ISA_AVX512:
        return next_avx512(d, key, p, avail, at_eof, rec, keyp, keylen, scratch, fault);
    case RS_CSV_ISA_AVX2:
        return next_avx2(d, key, p, avail, at_eof, rec, keyp, keylen, scratch, fault);
    case RS_CSV_ISA_SSE2:
        return next_sse2(d, key, p, avail, at_eof, rec, keyp, keylen, scratch, fault);
#endif
    default:
        return next_scalar(d, key, p, avail, at_eof, rec, keyp, keylen, scratch, fault);
    }
}

int rs_csv_fields(const rs_csv_dialect *d, const char *rec, size_t len, rs_buf *out)
{
    const unsigned char delim = (unsigned char)d->delim;
    if (delim == '"' || delim == '\r' || delim == '\n')
        return -1;
    if (out != NULL)
        out->len = 0;
    if (len == 0)
        return 0;
    const unsigned char *u = (const unsigned char *)rec;
    int n = 0;
    size_t i = 0;
    static const char nul = '\0';
    for (;;) { /* at the start of a field; i <= len */
        if (i < len && u[i] == '"') {
            size_t s = ++i;
            for (;;) {
                const unsigned char *q = memchr(u + i, '"', len - i);
                if (q == NULL)
                    return -1; /* unterminated */
                i = (size_t)(q - u);
                if (i + 1 < len && u[i + 1] == '"') {
                    i += 2; /* "" stays a pair here; halved when copied */
                    continue;
                }
                break;
            }
            if (out != NULL && append_unquoted(out, rec, s, i) != 0)
                return -1;
            i++; /* past the closing quote */
        } else {
            size_t s = i;
            while (i < len && u[i] != delim && u[i] != '"' && u[i] != '\r' && u[i] != '\n')
                i++;
            if (out != NULL && append(out, rec + s, i - s) != 0)
                return -1;
        }
        if (out != NULL && append(out, &nul, 1) != 0)
            return -1;
        n++;
        if (i == len)
            return n;
        if (u[i] != delim)
            return -1; /* stray quote, CR/LF, or junk after a closing quote */
        i++;
    }
}

/* First byte in p[pos..len) that is '"', CR or LF; len if none. */
static size_t find_qcrlf(const char *p, size_t pos, size_t len)
{
#if RS_CSV_X86
    const __m128i vq = _mm_set1_epi8('"'), vr = _mm_set1_epi8('\r'), vn = _mm_set1_epi8('\n');
    while (len - pos >= 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(p + pos));
        __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, vq), _mm_cmpeq_epi8(x, vr)),
                                 _mm_cmpeq_epi8(x, vn));
        unsigned mm = (unsigned)_mm_movemask_epi8(m);
        if (mm)
            return pos + (size_t)__builtin_ctz(mm);
        pos += 16;
    }
#endif
    for (; pos < len; pos++)
        if (p[pos] == '"' || p[pos] == '\r' || p[pos] == '\n')
            return pos;
    return len;
}

size_t rs_csv_boundary_after(const char *p, size_t len, size_t from)
{
    if (from >= len)
        return len + 1;
    int inq = 0;
    const char *s = p, *e = p + from, *q;
    while (s < e && (q = memchr(s, '"', (size_t)(e - s))) != NULL) {
        inq ^= 1;
        s = q + 1;
    }
    size_t pos = from;
    for (;;) {
        if (inq) {
            q = memchr(p + pos, '"', len - pos);
            if (q == NULL)
                return len + 1;
            pos = (size_t)(q - p) + 1;
            inq = 0;
        }
        size_t t = find_qcrlf(p, pos, len);
        if (t == len)
            return len + 1;
        if (p[t] == '"') {
            inq = 1;
            pos = t + 1;
            continue;
        }
        if (p[t] == '\r' && t + 1 < len && p[t + 1] == '\n')
            return t + 2;
        return t + 1;
    }
}

/* ------------------------------------------------------------ recovery */

enum { RZ_FIELD, RZ_UNQ, RZ_QUO, RZ_AFTERQ }; /* at a field's start, in an unquoted one, ... */

int rs_csv_resync(const rs_csv_dialect *d, int *state, const char *p, size_t len, int at_eof, size_t *used)
{
    const unsigned char delim = (unsigned char)d->delim;
    /* a CR at the end is held back: an LF may follow */
    size_t n = !at_eof && len && p[len - 1] == '\r' ? len - 1 : len;
    int st = *state;
    for (size_t i = 0; i < n; i++) {
        if (st == RZ_QUO) { /* to the next quote: delimiters and line ends are data */
            const char *q = memchr(p + i, '"', n - i);
            if (!q) {
                i = n;
                break;
            }
            i = (size_t)(q - p);
            st = RZ_AFTERQ;
            continue;
        }
        unsigned char c = (unsigned char)p[i];
        if (c == '\r' || c == '\n') { /* p[i + 1] exists unless at_eof (held back) */
            *state = RZ_FIELD;
            *used = i + 1 + (c == '\r' && i + 1 < len && p[i + 1] == '\n');
            return 1;
        }
        if (c == delim)
            st = RZ_FIELD;
        else if (c == '"')
            st = st == RZ_FIELD || st == RZ_AFTERQ ? RZ_QUO : RZ_UNQ; /* "" in quotes; a stray quote is data */
        else
            st = RZ_UNQ;
    }
    *state = at_eof ? RZ_FIELD : st;
    *used = n;
    return at_eof;
}
