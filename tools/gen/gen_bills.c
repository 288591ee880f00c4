/*
 * gen_bills -- fast, deterministic generator of bill-like CSV test data.
 *
 *   gen_bills --rows N [--seed S] [--dup-share F] [--header|--no-header]
 *             [--newline-share F] [--crlf] [-o FILE]
 *
 * Writes CSV (RFC 4180 quoting) to stdout or FILE:
 *
 *   bill_id,user_id,amount,currency,created_at,merchant,note
 *
 *   bill_id    32 lowercase hex chars (128 bits)
 *   user_id    integer
 *   amount     decimal with 2 places
 *   currency   CNY, USD, EUR, JPY, GBP, HKD, ...
 *   created_at ISO-8601 UTC timestamp, e.g. 2023-07-14T09:26:53Z
 *   merchant   one word from a fixed list
 *   note       empty, plain words, or quoted text with commas and doubled
 *              quotes; with probability --newline-share (default 0.001) the
 *              note is quoted and contains a line break (the record
 *              terminator: "\n", or "\r\n" with --crlf).
 *
 * About 100 bytes a row on average. N accepts k/M/G suffixes (powers of 10).
 *
 * --dup-share F (default 0.05): each row after the first is, with
 * probability F, a duplicate: it reuses the bill_id of an earlier row chosen
 * uniformly from a bounded reservoir of the last 2^20 distinct ids (16 MiB),
 * with freshly drawn other fields. Memory stays bounded for any N.
 *
 * At the end one line goes to stderr:
 *   gen_bills: rows=N distinct_keys=D duplicate_rows=R      (R = N - D)
 *
 * Determinism: the only source of randomness is xoshiro256** seeded through
 * splitmix64 from --seed; no libc rand(), no clock, no locale-dependent
 * formatting. Same arguments -> byte-identical output (independent of
 * whether the output goes to stdout or -o FILE).
 *
 * Why D and R are EXACT (by construction, not by probability):
 *   A fresh bill_id is hi:lo where hi = fmix64(fresh_counter + key) and the
 *   counter is 0,1,2,... over the fresh ids of this run. fmix64 (MurmurHash3
 *   finalizer) is a bijection on 64-bit words (xor-shift and multiplication
 *   by an odd constant are each invertible mod 2^64), and adding a constant
 *   key is a bijection too, so distinct counters give distinct hi words and
 *   therefore distinct 128-bit ids, whatever lo is (lo is plain PRNG output
 *   for looks). Since the counter never exceeds 2^64 - 1, fresh ids never
 *   collide with each other. A duplicate row copies an id from the
 *   reservoir, which only ever contains ids already emitted. Hence every
 *   fresh row introduces exactly one new key and every duplicate row
 *   introduces none: D = #fresh rows, R = #duplicate rows = N - D.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ PRNG */

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* MurmurHash3 fmix64: a bijection on uint64_t. */
static inline uint64_t fmix64(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return k;
}

static uint64_t xs[4];

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static inline uint64_t next64(void)
{
    const uint64_t result = rotl(xs[1] * 5, 7) * 9;
    const uint64_t t = xs[1] << 17;
    xs[2] ^= xs[0];
    xs[3] ^= xs[1];
    xs[1] ^= xs[2];
    xs[0] ^= xs[3];
    xs[2] ^= t;
    xs[3] = rotl(xs[3], 45);
    return result;
}

/* Uniform in [0, n) (Lemire's multiply-shift; the tiny bias is irrelevant
 * here and the result is deterministic). */
static inline uint64_t below(uint64_t n)
{
    return (uint64_t)(((unsigned __int128)next64() * n) >> 64);
}

/* Probability threshold on 53 random bits: p(x) is true with prob. F. */
static uint64_t prob_threshold(double f)
{
    if (!(f > 0.0)) return 0;
    if (f >= 1.0) return (uint64_t)1 << 53;
    return (uint64_t)(f * 9007199254740992.0); /* 2^53 */
}

static inline int chance(uint64_t thr) { return (next64() >> 11) < thr; }

/* -------------------------------------------------------------- output */

#define OUTBUF_SIZE (1u << 20)
#define ROW_MAX 1024 /* generous upper bound on one row's length */

static char *outbuf;
static size_t outlen;
static FILE *outfp;
static const char *outname = "stdout";

static void die(const char *fmt, const char *arg)
{
    fprintf(stderr, "gen_bills: ");
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    exit(1);
}

static void flush_out(void)
{
    if (outlen && fwrite(outbuf, 1, outlen, outfp) != outlen)
        die("write error on %s", outname);
    outlen = 0;
}

static inline char *put(char *p, const char *s, size_t n)
{
    memcpy(p, s, n);
    return p + n;
}

#define PUTS(p, lit) put((p), (lit), sizeof(lit) - 1)

/* Writes v in decimal; returns the new end. */
static inline char *put_u64(char *p, uint64_t v)
{
    char tmp[20];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n) *p++ = tmp[--n];
    return p;
}

static char hex2[256][2];
static char dig2[100][2];

static inline char *put_hex64(char *p, uint64_t v)
{
    for (int s = 56; s >= 0; s -= 8) {
        memcpy(p, hex2[(v >> s) & 0xff], 2);
        p += 2;
    }
    return p;
}

/* ------------------------------------------------------------ vocabulary */

typedef struct { const char *s; size_t n; } word_t;
#define W(x) { x, sizeof(x) - 1 }

static const word_t currencies[] = {
    /* weighted by repetition: CNY dominant */
    W("CNY"), W("CNY"), W("CNY"), W("CNY"), W("CNY"), W("CNY"), W("CNY"), W("CNY"),
    W("USD"), W("USD"), W("USD"), W("EUR"), W("EUR"), W("JPY"), W("GBP"), W("HKD"),
};
#define N_CURRENCIES (sizeof currencies / sizeof currencies[0])

static const word_t merchants[] = {
    W("alibaba"), W("jd"), W("meituan"), W("pinduoduo"), W("starbucks"),
    W("mcdonalds"), W("kfc"), W("walmart"), W("carrefour"), W("ikea"),
    W("apple"), W("xiaomi"), W("huawei"), W("didi"), W("uber"), W("amazon"),
    W("taobao"), W("tmall"), W("suning"), W("gome"), W("luckin"),
    W("heytea"), W("costco"), W("sephora"), W("nike"), W("adidas"),
    W("uniqlo"), W("zara"), W("ctrip"), W("airbnb"), W("booking"), W("shell"),
};
#define N_MERCHANTS (sizeof merchants / sizeof merchants[0])

static const word_t words[] = {
    W("refund"), W("order"), W("gift"), W("monthly"), W("fee"), W("coffee"),
    W("lunch"), W("dinner"), W("taxi"), W("hotel"), W("ticket"), W("rent"),
    W("deposit"), W("bonus"), W("split"), W("with"), W("friends"), W("team"),
    W("office"), W("supplies"), W("late"), W("payment"), W("card"), W("cash"),
    W("transfer"), W("online"), W("store"), W("promo"), W("discount"),
    W("subscription"), W("renewal"), W("invoice"), W("paid"), W("pending"),
    W("weekend"), W("trip"), W("groceries"), W("fuel"), W("parking"), W("misc"),
    W("urgent"), W("ok"), W("thanks"), W("see"), W("attached"), W("receipt"),
    W("batch"), W("correction"), W("duplicate"), W("charge"), W("approved"),
    W("by"), W("manager"), W("for"), W("the"), W("client"), W("meeting"),
    W("q3"), W("annual"), W("plan"), W("upgrade"), W("return"), W("item"),
    W("damaged"),
};
#define N_WORDS (sizeof words / sizeof words[0])

static inline char *put_word(char *p, const word_t *w) { return put(p, w->s, w->n); }

/* ------------------------------------------------------------ timestamps */

/* created_at spans 2022-01-01T00:00:00Z .. +N_DAYS days. */
#define BASE_YEAR 2022
#define N_DAYS 1096
static char day_str[N_DAYS][10]; /* "YYYY-MM-DD" */

static void init_days(void)
{
    static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int y = BASE_YEAR, m = 0, d = 1;
    for (int i = 0; i < N_DAYS; i++) {
        char *p = day_str[i];
        p[0] = (char)('0' + y / 1000);
        p[1] = (char)('0' + y / 100 % 10);
        p[2] = (char)('0' + y / 10 % 10);
        p[3] = (char)('0' + y % 10);
        p[4] = '-';
        memcpy(p + 5, dig2[m + 1], 2);
        p[7] = '-';
        memcpy(p + 8, dig2[d], 2);
        int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        int md = mdays[m] + (m == 1 && leap);
        if (++d > md) {
            d = 1;
            if (++m == 12) { m = 0; y++; }
        }
    }
}

/* ------------------------------------------------------------------ note */

static const char *eol = "\n";
static size_t eol_len = 1;
static uint64_t nl_thr;

/* Quoted note: words joined by spaces, with ", " separators, a quoted
 * word rendered as ""word"" (CSV-escaped quote), and an optional line
 * break. */
static char *put_quoted_note(char *p, int with_newline)
{
    *p++ = '"';
    int nw = 2 + (int)below(5); /* 2..6 words */
    int nl_at = with_newline ? 1 + (int)below((uint64_t)nw - 1) : -1;
    int q_at = (int)below((uint64_t)nw + 1); /* == nw: no quoted word */
    for (int i = 0; i < nw; i++) {
        if (i) {
            if (i == nl_at) p = put(p, eol, eol_len);
            else if ((next64() >> 62) == 0) p = PUTS(p, ", ");
            else *p++ = ' ';
        }
        const word_t *w = &words[below(N_WORDS)];
        if (i == q_at) {
            p = PUTS(p, "\"\"");
            p = put_word(p, w);
            p = PUTS(p, "\"\"");
        } else {
            p = put_word(p, w);
        }
    }
    if (q_at == nw || (next64() & 3) == 0) { /* ensure a comma appears */
        p = PUTS(p, ", #");
        p = put_u64(p, below(100000));
    }
    *p++ = '"';
    return p;
}

static char *put_note(char *p)
{
    if (chance(nl_thr)) return put_quoted_note(p, 1);
    uint64_t k = below(100);
    if (k < 30) return p;                  /* 30% empty */
    if (k < 72) {                          /* 42% plain words */
        int nw = 1 + (int)below(4);
        for (int i = 0; i < nw; i++) {
            if (i) *p++ = ' ';
            p = put_word(p, &words[below(N_WORDS)]);
        }
        return p;
    }
    return put_quoted_note(p, 0);          /* 28% quoted */
}

/* ------------------------------------------------------------------ main */

#define RESERVOIR_BITS 20
#define RESERVOIR_SIZE ((uint64_t)1 << RESERVOIR_BITS)

static uint64_t parse_count(const char *s, const char *opt)
{
    char *end;
    errno = 0;
    if (*s == '-' || *s == '\0') die("bad value for %s", opt);
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s) die("bad value for %s", opt);
    uint64_t mul = 1;
    if (*end == 'k' || *end == 'K') mul = 1000ULL, end++;
    else if (*end == 'm' || *end == 'M') mul = 1000000ULL, end++;
    else if (*end == 'g' || *end == 'G') mul = 1000000000ULL, end++;
    if (*end != '\0') die("bad value for %s", opt);
    if (v > UINT64_MAX / mul) die("value too large for %s", opt);
    return (uint64_t)v * mul;
}

static double parse_share(const char *s, const char *opt)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end != '\0' || !(v >= 0.0 && v <= 1.0))
        die("%s must be a number in [0, 1]", opt);
    return v;
}

static void usage(FILE *f)
{
    fputs("usage: gen_bills --rows N [--seed S] [--dup-share F] "
          "[--header|--no-header]\n"
          "                 [--newline-share F] [--crlf] [-o FILE]\n"
          "  --rows N           rows to write (k/M/G suffixes allowed)\n"
          "  --seed S           PRNG seed (default 1)\n"
          "  --dup-share F      share of rows reusing an earlier bill_id (default 0.05)\n"
          "  --newline-share F  share of rows with a line break in the quoted note (default 0.001)\n"
          "  --header/--no-header  write the header line (default: yes)\n"
          "  --crlf             terminate records with CRLF\n"
          "  -o FILE            write to FILE instead of stdout\n", f);
}

int main(int argc, char **argv)
{
    uint64_t rows = 0, seed = 1;
    int have_rows = 0, header = 1;
    double dup_share = 0.05, nl_share = 0.001;
    const char *out_path = NULL;

    enum { O_ROWS = 256, O_SEED, O_DUP, O_HDR, O_NOHDR, O_NL, O_CRLF, O_HELP };
    static const struct option opts[] = {
        {"rows", required_argument, 0, O_ROWS},
        {"seed", required_argument, 0, O_SEED},
        {"dup-share", required_argument, 0, O_DUP},
        {"header", no_argument, 0, O_HDR},
        {"no-header", no_argument, 0, O_NOHDR},
        {"newline-share", required_argument, 0, O_NL},
        {"crlf", no_argument, 0, O_CRLF},
        {"output", required_argument, 0, 'o'},
        {"help", no_argument, 0, O_HELP},
        {0, 0, 0, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case O_ROWS: rows = parse_count(optarg, "--rows"); have_rows = 1; break;
        case O_SEED: seed = parse_count(optarg, "--seed"); break;
        case O_DUP: dup_share = parse_share(optarg, "--dup-share"); break;
        case O_HDR: header = 1; break;
        case O_NOHDR: header = 0; break;
        case O_NL: nl_share = parse_share(optarg, "--newline-share"); break;
        case O_CRLF: eol = "\r\n"; eol_len = 2; break;
        case 'o': out_path = optarg; break;
        case 'h': case O_HELP: usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc || !have_rows) {
        if (optind < argc) fprintf(stderr, "gen_bills: unexpected argument '%s'\n", argv[optind]);
        else fprintf(stderr, "gen_bills: --rows is required\n");
        usage(stderr);
        return 2;
    }

    for (int i = 0; i < 256; i++) {
        hex2[i][0] = "0123456789abcdef"[i >> 4];
        hex2[i][1] = "0123456789abcdef"[i & 15];
    }
    for (int i = 0; i < 100; i++) {
        dig2[i][0] = (char)('0' + i / 10);
        dig2[i][1] = (char)('0' + i % 10);
    }
    init_days();

    uint64_t sm = seed;
    for (int i = 0; i < 4; i++) xs[i] = splitmix64(&sm);
    const uint64_t id_key = splitmix64(&sm);
    const uint64_t dup_thr = prob_threshold(dup_share);
    nl_thr = prob_threshold(nl_share);

    if (out_path) {
        outfp = fopen(out_path, "wb");
        if (!outfp) die("cannot open %s for writing", out_path);
        outname = out_path;
    } else {
        outfp = stdout;
    }
    outbuf = malloc(OUTBUF_SIZE + ROW_MAX);
    /* Reservoir of the last RESERVOIR_SIZE fresh ids, allocated lazily in
     * proportion to use (rows < 2^20 keep it small). */
    uint64_t (*resv)[2] = NULL;
    uint64_t resv_cap = 0;
    if (!outbuf) die("%s", "out of memory");

    if (header) {
        outlen = (size_t)(PUTS(outbuf, "bill_id,user_id,amount,currency,created_at,merchant,note") - outbuf);
        memcpy(outbuf + outlen, eol, eol_len);
        outlen += eol_len;
    }

    uint64_t fresh = 0, dups = 0;
    for (uint64_t r = 0; r < rows; r++) {
        uint64_t hi, lo;
        if (fresh > 0 && chance(dup_thr)) {
            uint64_t avail = fresh < RESERVOIR_SIZE ? fresh : RESERVOIR_SIZE;
            /* j-th most recent fresh id, j in [0, avail) */
            uint64_t j = below(avail);
            uint64_t slot = (fresh - 1 - j) & (RESERVOIR_SIZE - 1);
            hi = resv[slot][0];
            lo = resv[slot][1];
            dups++;
        } else {
            hi = fmix64(fresh + id_key); /* bijective in fresh: never repeats */
            lo = next64();
            uint64_t slot = fresh & (RESERVOIR_SIZE - 1);
            if (slot >= resv_cap) {
                uint64_t ncap = resv_cap ? resv_cap * 2 : 4096;
                if (ncap > RESERVOIR_SIZE) ncap = RESERVOIR_SIZE;
                void *n = realloc(resv, ncap * sizeof resv[0]);
                if (!n) die("%s", "out of memory");
                resv = n;
                resv_cap = ncap;
            }
            resv[slot][0] = hi;
            resv[slot][1] = lo;
            fresh++;
        }

        char *p = outbuf + outlen;
        p = put_hex64(p, hi);
        p = put_hex64(p, lo);
        *p++ = ',';

        /* user_id: 80% from a hot set of 100k users, else up to 10M */
        uint64_t u = (next64() & 0xff) < 205 ? 100000 + below(100000) : 100000 + below(9900000);
        p = put_u64(p, u);
        *p++ = ',';

        /* amount: log-ish spread, 0.01 .. 99999.99 */
        static const uint64_t amt_max[5] = {1000, 10000, 100000, 1000000, 10000000};
        uint64_t x = next64();
        uint64_t cents = 1 + (uint64_t)(((unsigned __int128)(x >> 8) * amt_max[(x & 0xff) % 5]) >> 56);
        p = put_u64(p, cents / 100);
        *p++ = '.';
        memcpy(p, dig2[cents % 100], 2);
        p += 2;
        *p++ = ',';

        x = next64();
        p = put_word(p, &currencies[x & (N_CURRENCIES - 1)]);
        *p++ = ',';

        /* created_at */
        uint64_t secs = below((uint64_t)N_DAYS * 86400);
        uint64_t day = secs / 86400, tod = secs % 86400;
        p = put(p, day_str[day], 10);
        *p++ = 'T';
        memcpy(p, dig2[tod / 3600], 2);
        p[2] = ':';
        memcpy(p + 3, dig2[tod / 60 % 60], 2);
        p[5] = ':';
        memcpy(p + 6, dig2[tod % 60], 2);
        p[8] = 'Z';
        p += 9;
        *p++ = ',';

        p = put_word(p, &merchants[below(N_MERCHANTS)]);
        *p++ = ',';

        p = put_note(p);
        p = put(p, eol, eol_len);

        outlen = (size_t)(p - outbuf);
        if (outlen >= OUTBUF_SIZE) flush_out();
    }
    flush_out();
    if (outfp == stdout) {
        if (fflush(stdout) != 0 || ferror(stdout)) die("write error on %s", outname);
    } else if (fclose(outfp) != 0) {
        die("write error on %s", outname);
    }
    free(resv);
    free(outbuf);

    fprintf(stderr, "gen_bills: rows=%" PRIu64 " distinct_keys=%" PRIu64 " duplicate_rows=%" PRIu64 "\n",
            rows, fresh, dups);
    return 0;
}
