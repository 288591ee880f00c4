/* tools/bench/bench_csv.c - libcsv vs rs_csv_next and rs_csv_rows on bill-like CSV.
 *
 * Usage: bench_csv [--mb N] [--runs N] [--key COL] [--block N] [--cpu] [file.csv]
 *
 * Without a file, generates about N MB (default 200) of bill-like rows in
 * memory: 32-hex id, user id, amount, currency, ISO timestamp, merchant, and
 * a note that is sometimes quoted with commas and doubled quotes; then the
 * same amount with no quoted notes at all; with a file, its first N MB
 * if --mb is given, else all of it. For each buffer it times
 *   libcsv     csv_parse + csv_fini (CSV_STRICT|CSV_STRICT_FINI, no space
 *              trimming) with field and row callbacks that only count;
 *   rs_csv     rs_csv_next over the buffer, extracting the key column COL
 *              (0-based, default 1), with the variant chosen for this CPU
 *              and then every other variant it supports (scalar, sse2,
 *              avx2, avx512bw);
 *   rows       rs_csv_rows (the structural scanner, the pipeline's), N
 *              records a call (default 32; the pipeline's is 64), the same
 *              key, in every variant;
 *   boundary   rs_csv_boundary_after cutting the buffer into 64 chunks; each
 *              call counts quote parity from the buffer start, so the 63
 *              calls read sum(from) = 31.5 x the buffer: both rates shown;
 * and prints the median MB/s of --runs runs (default 5) and the ratio.
 * --cpu times each run in CPU seconds of the process (the benchmark is
 * one thread) instead of wall-clock seconds: MB per CPU second, which
 * other work on a shared machine disturbs less. */
#include <csv.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "csv/scan_isa.h"
#include "ringshard/csv.h"

static clockid_t clock_id = CLOCK_MONOTONIC;   /* --cpu: CLOCK_PROCESS_CPUTIME_ID */

static double now(void)
{
    struct timespec ts;
    clock_gettime(clock_id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint32_t key_col = 1;   /* --key: the key column (0-based) */
static size_t block = 32;      /* --block: records a call of rs_csv_rows (the pipeline takes 64) */

static uint64_t rng = 0x243F6A8885A308D3ULL;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static const char *const CURRENCIES[] = {"EUR", "USD", "GBP", "JPY", "CHF", "SEK"};
static const char *const MERCHANTS[] = {"Acme Books", "Joe's Diner", "Fresh Market", "City Cab",
                                        "Cloud Storage Ltd", "Pharmacy 24", "Cinema Nova",
                                        "Electro Shop", "Bakery", "Fuel Station 12"};
static const char *const NOTES[] = {"", "", "", "ok", "monthly", "refund", "gift card",
                                    "split bill", "online", "recurring"};
static const char *const QNOTES[] = {"\"late fee, waived\"", "\"said \"\"thanks\"\", tipped\"",
                                     "\"A, B and C\"", "\"12\"\" pizza, extra cheese\""};

/* Appends bill rows to buf until len reaches target; quoted notes in about
 * one row in seven when `quotes`. Returns the length. */
static size_t generate(char *buf, size_t target, int quotes)
{
    static const char hexd[] = "0123456789abcdef";
    size_t n = 0;
    while (n < target) {
        char *p = buf + n;
        uint64_t r = rnd(), r2 = rnd();
        for (int i = 0; i < 32; i++)
            p[i] = hexd[(i < 16 ? r >> (4 * i) : r2 >> (4 * (i - 16))) & 15];
        size_t k = 32;
        uint64_t x = rnd();
        const char *note = quotes && x % 7 == 0 ? QNOTES[(x >> 8) % 4] : NOTES[(x >> 8) % 10];
        k += (size_t)sprintf(p + k, ",u%07u,%u.%02u,%s,2024-%02u-%02uT%02u:%02u:%02uZ,%s,%s\n",
                             (unsigned)(x >> 12) % 10000000u, (unsigned)(x >> 36) % 2000u,
                             (unsigned)(x >> 48) % 100u, CURRENCIES[(x >> 20) % 6],
                             1 + (unsigned)(x >> 24) % 12, 1 + (unsigned)(x >> 28) % 28,
                             (unsigned)(x >> 32) % 24, (unsigned)(x >> 40) % 60,
                             (unsigned)(x >> 44) % 60, MERCHANTS[(x >> 52) % 10], note);
        n += k;
    }
    return n;
}

static int no_space(unsigned char c)
{
    (void)c;
    return 0;
}

typedef struct {
    size_t fields, rows;
} counts;

static void cb_field(void *s, size_t len, void *data)
{
    (void)s;
    (void)len;
    ((counts *)data)->fields++;
}

static void cb_row(int c, void *data)
{
    (void)c;
    ((counts *)data)->rows++;
}

static size_t run_libcsv(const char *buf, size_t n)
{
    struct csv_parser p;
    counts c = {0, 0};
    if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI) != 0)
        abort();
    csv_set_space_func(&p, no_space);
    if (csv_parse(&p, buf, n, cb_field, cb_row, &c) != n || csv_fini(&p, cb_field, cb_row, &c) != 0) {
        fprintf(stderr, "bench_csv: libcsv: %s\n", csv_strerror(csv_error(&p)));
        exit(2);
    }
    csv_free(&p);
    return c.rows;
}

static size_t keysum;
static size_t run_rs(const char *buf, size_t n)
{
    rs_csv_dialect d = {',', 1 << 20};
    rs_csv_keyspec ks = {.ncols = 1, .cols = {key_col}, .sep = '|'};
    rs_buf scratch = {0};
    size_t off = 0, rows = 0, ksum = 0;
    while (off < n) {
        rs_csv_record rec;
        rs_csv_fault f;
        const char *key;
        size_t kl;
        int r = rs_csv_next(&d, &ks, buf + off, n - off, 1, &rec, &key, &kl, &scratch, &f);
        if (r != RS_CSV_OK) {
            fprintf(stderr, "bench_csv: rs_csv_next at byte %zu: %s (+%zu, field %u)\n", off,
                    r == RS_CSV_BAD ? f.what : "more", f.offset, f.field);
            exit(2);
        }
        rows += rec.nfields > 0;
        ksum += kl + (kl ? (unsigned char)key[0] : 0);
        off += rec.consumed;
    }
    rs_buf_free(&scratch);
    keysum += ksum;
    return rows;
}

static size_t run_rows(const char *buf, size_t n)
{
    rs_csv_dialect d = {',', 1 << 20};
    rs_csv_keyspec ks = {.ncols = 1, .cols = {key_col}, .sep = '|'};
    rs_buf scratch = {0};
    rs_csv_cursor c;
    rs_csv_cursor_init(&c, buf, 0, n);
    rs_csv_row rows[64];
    size_t nr = 0, ksum = 0;
    while (c.pos < n) {
        size_t k;
        rs_csv_fault f;
        if (rs_csv_rows(&d, &ks, &c, rows, block, &k, &scratch, &f) != RS_CSV_OK) {
            fprintf(stderr, "bench_csv: rs_csv_rows at byte %zu: %s\n", c.pos, f.what);
            exit(2);
        }
        for (size_t i = 0; i < k; i++) {
            nr += rows[i].nfields > 0;
            ksum += rows[i].keylen + (rows[i].keylen ? (unsigned char)rows[i].key[0] : 0);
        }
    }
    rs_buf_free(&scratch);
    keysum += ksum;
    return nr;
}

static size_t run_boundary(const char *buf, size_t n)
{
    size_t cuts = 0;
    for (size_t c = 1; c < 64; c++)
        cuts += rs_csv_boundary_after(buf, n, n / 64 * c) <= n;
    return cuts;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_mbps(size_t (*fn)(const char *, size_t), const char *buf, size_t n, int runs,
                          size_t *result)
{
    double t[64];
    for (int i = 0; i < runs; i++) {
        double t0 = now();
        *result = fn(buf, n);
        t[i] = now() - t0;
    }
    qsort(t, (size_t)runs, sizeof t[0], cmp_double);
    return (double)n / 1e6 / t[runs / 2];
}

static void bench(const char *label, const char *buf, size_t n, int runs)
{
    size_t rows_lib, rows_rs, cuts;
    double lib = median_mbps(run_libcsv, buf, n, runs, &rows_lib);
    int best = rs_csv_isa_get();
    double rs = median_mbps(run_rs, buf, n, runs, &rows_rs);
    printf("%s: %.1f MB, %zu rows (libcsv %zu)\n", label, (double)n / 1e6, rows_rs, rows_lib);
    printf("  libcsv            %8.1f MB/s\n", lib);
    printf("  rs_csv %-10s %8.1f MB/s  ratio %.2fx  (key col %u)\n", rs_csv_isa_name(best), rs,
           rs / lib, key_col);
    if (rows_lib != rows_rs) {
        fprintf(stderr, "bench_csv: row counts differ\n");
        exit(2);
    }
    for (int isa = RS_CSV_ISA_AVX512; isa >= RS_CSV_ISA_SCALAR; isa--) {
        if (isa == best || rs_csv_isa_set(isa) != 0)
            continue;
        double v = median_mbps(run_rs, buf, n, runs, &rows_rs);
        printf("  rs_csv %-10s %8.1f MB/s  ratio %.2fx\n", rs_csv_isa_name(isa), v, v / lib);
    }
    for (int isa = RS_CSV_ISA_AVX512; isa >= RS_CSV_ISA_SCALAR; isa--) {
        if (rs_csv_isa_set(isa) != 0)
            continue;
        double v = median_mbps(run_rows, buf, n, runs, &rows_rs);
        printf("  rows   %-10s %8.1f MB/s  ratio %.2fx\n", rs_csv_isa_name(isa), v, v / lib);
        if (rows_lib != rows_rs) {
            fprintf(stderr, "bench_csv: rs_csv_rows counts %zu rows, libcsv %zu\n", rows_rs, rows_lib);
            exit(2);
        }
    }
    rs_csv_isa_set(best);
    double bnd = median_mbps(run_boundary, buf, n, runs, &cuts);
    printf("  boundary_after    %8.1f MB/s of buffer cut in 64 (%.1f GB/s of parity scan)\n", bnd,
           bnd * 31.5 / 1000);
}

int main(int argc, char **argv)
{
    size_t mb = 200;
    int runs = 5;
    const char *file = NULL;
    int mb_given = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--mb") == 0 && i + 1 < argc)
            mb = strtoul(argv[++i], NULL, 10), mb_given = 1;
        else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--key") == 0 && i + 1 < argc)
            key_col = (uint32_t)strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--block") == 0 && i + 1 < argc)
            block = strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--cpu") == 0)
            clock_id = CLOCK_PROCESS_CPUTIME_ID;
        else if (argv[i][0] == '-') {
            fprintf(stderr, "usage: bench_csv [--mb N] [--runs N] [--key COL] [--block N] [--cpu] [file.csv]\n");
            return 64;
        } else
            file = argv[i];
    }
    if (runs < 1 || runs > 63 || mb < 1 || block < 1 || block > 64 || key_col > 1000)
        return 64;
    if (file != NULL) {
        FILE *f = fopen(file, "rb");
        if (!f) {
            perror(file);
            return 1;
        }
        size_t cap = 1 << 20, n = 0, r;
        char *buf = malloc(cap);
        while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
            n += r;
            if (n == cap)
                buf = realloc(buf, cap *= 2);
        }
        fclose(f);
        if (!buf)
            return 1;
        if (mb_given && n > mb << 20) { /* whole records only */
            n = mb << 20;
            while (n > 0 && buf[n - 1] != '\n')
                n--;
        }
        bench(file, buf, n, runs);
        free(buf);
        return 0;
    }
    size_t target = mb << 20;
    char *buf = malloc(target + 4096);
    if (!buf)
        return 1;
    size_t n = generate(buf, target, 1);
    bench("bills (1 row in 7 has a quoted note)", buf, n, runs);
    n = generate(buf, target, 0);
    bench("bills, no quotes", buf, n, runs);
    free(buf);
    printf("(key checksum %zu)\n", keysum);
    return 0;
}
