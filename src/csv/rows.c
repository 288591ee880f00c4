/* src/csv/rows.c - the structural scanner (see rs_csv_rows in ringshard/csv.h).
 *
 * rs_csv_next classifies the bytes from each record's start, and follows a
 * quoted field with memchr from quote to quote and counts its line ends in
 * two more passes: about two 64-byte blocks classified per 100-byte record,
 * and the bytes of quoted fields read three times. Here every block is
 * classified once, into four masks (quotes, delimiters, CR, LF), and the
 * quote parity is their prefix XOR carried from block to block (the
 * technique of simdjson's first stage and simdcsv, by a carry-less multiply
 * where the CPU has one): delimiters and line ends outside quotes are then
 * plain bits, and a record is a few bit scans. The blocks are classified
 * RS_CSV_CHUNK at a time, in a loop of their own, into a window of masks
 * that slides with the records; with AVX2 or AVX-512, a record that ends
 * within RS_ROW_SPAN blocks (most) is read off them with no branch on
 * where it ends.
 *
 * Exactness. The masks also say where every quote stands: an opening quote
 * must follow a field's start or a closing quote (the second of ""), a
 * closing quote must precede an opening quote, a delimiter, a line end or
 * the end. A record whose quotes all stand so is exactly RFC 4180's
 * grammar, which libcsv and rs_csv_next parse the same way; any record with
 * a quote out of place, an open quote at the end, more than max_record
 * bytes, too few fields for the key or a key to unescape is handed whole
 * to rs_csv_next (the slow path), which gives the fault or the record, and
 * the parity restarts after it. tests/test_csv.c and fuzz/check_csv.h
 * check both against libcsv record by record and field by field.
 *
 * A key of several columns takes the slow path on every record (it is
 * built in scratch, one per call): the common one-column key is the fast
 * path's. */
#include <stdint.h>
#include <string.h>

#include "ringshard/csv.h"

#include "csv/scan_isa.h"

#if (defined(__x86_64__) || defined(__i386__)) && defined(__SSE2__) && defined(__GNUC__)
#define RS_ROWS_X86 1
#include <immintrin.h>
#else
#define RS_ROWS_X86 0
#endif

/* How far ahead of the block being classified the scanner prefetches. */
#define RS_SCAN_AHEAD 4096

/* How many blocks a record may span and take the fast path (rows_body.h). */
#define RS_ROW_SPAN 3
_Static_assert(RS_ROW_SPAN <= RS_CSV_CHUNK, "a record's blocks fit the masks");

/* Bit i of the result: the XOR of bits 0..i of x (quote parity). */
static inline uint64_t prefix_xor(uint64_t x)
{
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    return x;
}

#if RS_ROWS_X86
/* prefix_xor by one carry-less multiply by all ones (simdjson's way): a
 * third of the block classifier's instructions were the shifts. */
__attribute__((target("pclmul"))) static inline uint64_t prefix_xor_clmul(uint64_t x)
{
    __m128i v = _mm_set_epi64x(0, (long long)x);
    return (uint64_t)_mm_cvtsi128_si64(_mm_clmulepi64_si128(v, _mm_set1_epi8((char)0xFF), 0));
}
#endif

/* Line ends (LF, CR not followed by LF) in a record's bytes before its
 * terminator: all inside quotes, and rare. */
static uint32_t inner_lines(const unsigned char *s, size_t n)
{
    uint32_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += s[i] == '\n' || (s[i] == '\r' && (i + 1 == n || s[i + 1] != '\n'));
    return k;
}

/* The record at c->pos by rs_csv_next, stored in *r; the cursor moves past
 * it. RS_CSV_OK, or RS_CSV_BAD with *fault. */
static int slow(const rs_csv_dialect *d, const rs_csv_keyspec *key, rs_csv_cursor *c, rs_csv_row *r,
                rs_buf *scratch, rs_csv_fault *fault)
{
    size_t s = c->pos;
    rs_csv_record rec;
    const char *k = c->p + s;
    size_t kl = 0;
    int rr = rs_csv_next(d, key, c->p + s, c->end - s, 1, &rec, &k, &kl, scratch, fault);
    if (rr == RS_CSV_MORE) { /* at_eof is set: only for nothing left */
        fault->what = "incomplete record";
        fault->offset = c->end - s;
        fault->field = 0;
    }
    if (rr != RS_CSV_OK)
        return RS_CSV_BAD;
    r->off = s;
    r->len = rec.len;
    r->next = s + rec.consumed;
    r->nfields = rec.nfields;
    r->lines = rec.lines;
    r->key = key ? k : c->p + s;
    r->keylen = key ? kl : 0;
    c->pos = r->next;
    return RS_CSV_OK;
}

/* Block classifiers: the masks of '"', the delimiter, CR and LF in
 * s[0..64). */
static inline void classify4_scalar(const unsigned char *s, unsigned char delim, uint64_t *q, uint64_t *d,
                                    uint64_t *cr, uint64_t *lf)
{
    uint64_t a = 0, b = 0, c = 0, e = 0;
    for (int k = 0; k < 64; k++) {
        a |= (uint64_t)(s[k] == '"') << k;
        b |= (uint64_t)(s[k] == delim) << k;
        c |= (uint64_t)(s[k] == '\r') << k;
        e |= (uint64_t)(s[k] == '\n') << k;
    }
    *q = a, *d = b, *cr = c, *lf = e;
}

#if RS_ROWS_X86
static inline void classify4_sse2(const unsigned char *s, unsigned char delim, uint64_t *q, uint64_t *d,
                                  uint64_t *cr, uint64_t *lf)
{
    const __m128i vq = _mm_set1_epi8('"'), vd = _mm_set1_epi8((char)delim);
    const __m128i vr = _mm_set1_epi8('\r'), vn = _mm_set1_epi8('\n');
    uint64_t a = 0, b = 0, c = 0, e = 0;
    for (int k = 0; k < 4; k++) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(s + 16 * k));
        a |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(x, vq)) << (16 * k);
        b |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(x, vd)) << (16 * k);
        c |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(x, vr)) << (16 * k);
        e |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(x, vn)) << (16 * k);
    }
    *q = a, *d = b, *cr = c, *lf = e;
}

__attribute__((target("avx2"))) static inline uint64_t mask64_avx2(__m256i x0, __m256i x1, __m256i v)
{
    return (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(x0, v)) |
           (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(x1, v)) << 32;
}

__attribute__((target("avx2"))) static inline void classify4_avx2(const unsigned char *s, unsigned char delim,
                                                                  uint64_t *q, uint64_t *d, uint64_t *cr,
                                                                  uint64_t *lf)
{
    __m256i x0 = _mm256_loadu_si256((const __m256i *)(const void *)s);
    __m256i x1 = _mm256_loadu_si256((const __m256i *)(const void *)(s + 32));
    *q = mask64_avx2(x0, x1, _mm256_set1_epi8('"'));
    *d = mask64_avx2(x0, x1, _mm256_set1_epi8((char)delim));
    *cr = mask64_avx2(x0, x1, _mm256_set1_epi8('\r'));
    *lf = mask64_avx2(x0, x1, _mm256_set1_epi8('\n'));
}

__attribute__((target("avx512bw"))) static inline void classify4_avx512(const unsigned char *s, unsigned char delim,
                                                                        uint64_t *q, uint64_t *d, uint64_t *cr,
                                                                        uint64_t *lf)
{
    __m512i x = _mm512_loadu_si512((const void *)s);
    *q = _mm512_cmpeq_epi8_mask(x, _mm512_set1_epi8('"'));
    *d = _mm512_cmpeq_epi8_mask(x, _mm512_set1_epi8((char)delim));
    *cr = _mm512_cmpeq_epi8_mask(x, _mm512_set1_epi8('\r'));
    *lf = _mm512_cmpeq_epi8_mask(x, _mm512_set1_epi8('\n'));
}
#endif

/* The row of a record [s, t) whose masks were read (rows_body.h): field
 * is its count of delimiters, [ks, ke) its key column as far as found
 * (fstart: where its last field starts), inl whether a line end lies in
 * its bytes (in quotes). 0, or -1 when the record takes the slow path:
 * longer than maxrec, a missing key column, or a key with "" to halve.
 * Inlined into each ROWS_NAME, so that its values stay in registers. */
static inline __attribute__((always_inline)) int row_fill(rs_csv_row *r, const char *p, size_t s, size_t t,
                                                          size_t end, size_t maxrec, uint32_t field, uint32_t klim,
                                                          size_t fstart, size_t ks, size_t ke, uint64_t inl)
{
    const unsigned char *u = (const unsigned char *)p;
    const uint32_t kcol = klim ? klim - 1 : 0;
    if (t - s > maxrec)
        return -1;
    r->off = s;
    r->next = t == end ? end : u[t] == '\n' ? t + 1 : t + 1 < end && u[t + 1] == '\n' ? t + 2 : t + 1;
    r->key = p + s;
    r->keylen = 0;
    if (t == s && t < end) { /* an empty line */
        r->len = 0;
        r->nfields = 0;
        r->lines = 1;
        return 0;
    }
    if (field + 1 < klim)
        return -1; /* a missing key column: rs_csv_next says so */
    if (klim && field == kcol)
        ks = fstart, ke = t;
    if (klim && ke > ks && u[ks] == '"') { /* quoted: without its quotes */
        ks++, ke--;
        if (memchr(u + ks, '"', ke - ks))
            return -1; /* "" to halve: rs_csv_next builds it in scratch */
    }
    r->len = t - s;
    r->nfields = field + 1;
    r->lines = (t < end) + (inl ? inner_lines(u + s, t - s) : 0);
    r->key = p + ks;
    r->keylen = ke - ks;
    return 0;
}

#define ROWS_NAME rows_scalar
#define LOAD_NAME load_scalar
#define NEXT_NAME next_block_scalar
#define MASKS_NAME masks_scalar
#define PREFIX_XOR prefix_xor
#define ROW_SPAN_FAST 0 /* slower than the loop without popcnt and clmul */
#define CLASSIFY4 classify4_scalar
#include "csv/rows_body.h"

#if RS_ROWS_X86
#define ROWS_NAME rows_sse2
#define LOAD_NAME load_sse2
#define NEXT_NAME next_block_sse2
#define MASKS_NAME masks_sse2
#define PREFIX_XOR prefix_xor
#define ROW_SPAN_FAST 0 /* slower than the loop without popcnt and clmul */
#define CLASSIFY4 classify4_sse2
#include "csv/rows_body.h"

#pragma GCC push_options
#pragma GCC target("avx2,popcnt,bmi,pclmul")
#define ROWS_NAME rows_avx2
#define LOAD_NAME load_avx2
#define NEXT_NAME next_block_avx2
#define MASKS_NAME masks_avx2
#define PREFIX_XOR prefix_xor_clmul
#define ROW_SPAN_FAST 1
#define CLASSIFY4 classify4_avx2
#include "csv/rows_body.h"
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512bw,popcnt,bmi,pclmul")
#define ROWS_NAME rows_avx512
#define LOAD_NAME load_avx512
#define NEXT_NAME next_block_avx512
#define MASKS_NAME masks_avx512
#define PREFIX_XOR prefix_xor_clmul
#define ROW_SPAN_FAST 1
#define CLASSIFY4 classify4_avx512
#include "csv/rows_body.h"
#pragma GCC pop_options
#endif

void rs_csv_cursor_init(rs_csv_cursor *c, const char *p, size_t pos, size_t end)
{
    memset(c, 0, sizeof *c);
    c->p = p;
    c->pos = pos;
    c->end = end;
}

/* Every record by the slow path: a delimiter the masks cannot stand for
 * ('"', CR, LF: rs_csv_next rejects it) or a key of several columns. */
static int rows_slow(const rs_csv_dialect *d, const rs_csv_keyspec *key, rs_csv_cursor *c, rs_csv_row *rows,
                     size_t max, size_t *np, rs_buf *scratch, rs_csv_fault *fault)
{
    size_t n = 0;
    int r = RS_CSV_OK;
    while (n < max && c->pos < c->end) {
        if ((r = slow(d, key, c, &rows[n], scratch, fault)) != RS_CSV_OK)
            break;
        if (rows[n++].key == (scratch ? scratch->data : NULL))
            break; /* keep the scratch key valid: return with it */
    }
    *np = n;
    return r;
}

int rs_csv_rows(const rs_csv_dialect *d, const rs_csv_keyspec *key, rs_csv_cursor *c, rs_csv_row *rows,
                size_t max, size_t *n, rs_buf *scratch, rs_csv_fault *fault)
{
    rs_csv_fault spare;
    if (fault == NULL)
        fault = &spare;
    unsigned char dl = (unsigned char)d->delim;
    if (dl == '"' || dl == '\r' || dl == '\n' || (key && (key->ncols != 1 || key->cols[0] == UINT32_MAX)))
        return rows_slow(d, key, c, rows, max, n, scratch, fault);
    uint32_t klim = key ? key->cols[0] + 1 : 0;
    switch (rs_csv_isa_get()) {
#if RS_ROWS_X86
    case RS_CSV_ISA_AVX512:
        return rows_avx512(d, key, klim, c, rows, max, n, scratch, fault);
    case RS_CSV_ISA_AVX2:
        return rows_avx2(d, key, klim, c, rows, max, n, scratch, fault);
    case RS_CSV_ISA_SSE2:
        return rows_sse2(d, key, klim, c, rows, max, n, scratch, fault);
#endif
    default:
        return rows_scalar(d, key, klim, c, rows, max, n, scratch, fault);
    }
}

/* ------------------------------------------------------------ quote count */

static size_t count_quotes_scalar(const char *p, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += p[i] == '"';
    return c;
}

#if RS_ROWS_X86
/* 16 bytes at a time: cmpeq gives 0xFF per quote, 0 - that is 1, psadbw
 * sums the bytes; flushed every 255 blocks (a byte holds at most 255). */
static size_t count_quotes_sse2(const char *p, size_t n)
{
    size_t c = 0, i = 0;
    const __m128i q = _mm_set1_epi8('"'), zero = _mm_setzero_si128();
    while (i + 16 <= n) {
        __m128i acc = zero;
        size_t stop = i + 16 * 255 < n ? i + 16 * 255 : n;
        for (; i + 16 <= stop; i += 16)
            acc = _mm_sub_epi8(acc, _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)(p + i)), q));
        __m128i sums = _mm_sad_epu8(acc, zero);
        c += (size_t)_mm_cvtsi128_si64(sums) + (size_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(sums, sums));
    }
    return c + count_quotes_scalar(p + i, n - i);
}

__attribute__((target("avx2,popcnt"))) static size_t count_quotes_avx2(const char *p, size_t n)
{
    size_t c = 0, i = 0;
    const __m256i q = _mm256_set1_epi8('"');
    for (; i + 64 <= n; i += 64) {
        __m256i x0 = _mm256_loadu_si256((const __m256i *)(const void *)(p + i));
        __m256i x1 = _mm256_loadu_si256((const __m256i *)(const void *)(p + i + 32));
        c += (size_t)__builtin_popcountll(mask64_avx2(x0, x1, q));
    }
    return c + count_quotes_scalar(p + i, n - i);
}

__attribute__((target("avx512bw,popcnt"))) static size_t count_quotes_avx512(const char *p, size_t n)
{
    size_t c = 0, i = 0;
    const __m512i q = _mm512_set1_epi8('"');
    for (; i + 64 <= n; i += 64)
        c += (size_t)__builtin_popcountll(_mm512_cmpeq_epi8_mask(_mm512_loadu_si512((const void *)(p + i)), q));
    return c + count_quotes_scalar(p + i, n - i);
}
#endif

size_t rs_csv_count_quotes(const char *p, size_t n)
{
    switch (rs_csv_isa_get()) {
#if RS_ROWS_X86
    case RS_CSV_ISA_AVX512:
        return count_quotes_avx512(p, n);
    case RS_CSV_ISA_AVX2:
        return count_quotes_avx2(p, n);
    case RS_CSV_ISA_SSE2:
        return count_quotes_sse2(p, n);
#endif
    default:
        return count_quotes_scalar(p, n);
    }
}
