/* Golden tests for every hash function: the reference vectors in
 * fixtures/vectors/, SMHasher's verification values, RFC 1321, and values
 * computed by the real JDK 17 / Guava 31.1 for inputs the vector files do
 * not cover (malformed UTF-8, murmur3_32 with seeds). */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ringshard/hash.h"
#include "support.h"

/* ---- a minimal TSV reader over a slurped file ---- */

typedef struct {
    char *buf;
    char **head;
    int ncols;
    char ***rows;     /* rows[i][col], NUL-terminated fields inside buf */
    size_t nrows;
    size_t nlines;    /* data lines counted independently of the split */
} tsv;

static char **split_fields(char *line, int *n)
{
    int cap = 8;
    char **f = malloc(sizeof *f * cap);
    *n = 0;
    for (;;) {
        if (*n == cap)
            f = realloc(f, sizeof *f * (cap *= 2));
        f[(*n)++] = line;
        char *tab = strchr(line, '\t');
        if (!tab)
            break;
        *tab = '\0';
        line = tab + 1;
    }
    return f;
}

static void tsv_load(tsv *t, const char *rel)
{
    size_t len;
    t->buf = slurp(fixture(rel), &len);
    cr_assert_not_null(t->buf, "cannot read fixtures/%s", rel);
    cr_assert(len > 0 && t->buf[len - 1] == '\n', "%s: must end with LF", rel);
    cr_assert_null(memchr(t->buf, '\r', len), "%s: raw CR in file (keys escape it)", rel);
    t->nlines = 0;
    for (size_t i = 0; i < len; i++)
        t->nlines += t->buf[i] == '\n';
    t->nlines--;   /* the header */

    t->rows = malloc(sizeof *t->rows * (t->nlines + 1));
    t->nrows = 0;
    char *line = t->buf;
    int first = 1;
    while (*line) {
        char *nl = strchr(line, '\n');
        *nl = '\0';
        int n;
        char **f = split_fields(line, &n);
        if (first) {
            t->head = f;
            t->ncols = n;
            first = 0;
        } else {
            cr_assert_eq(n, t->ncols, "%s row %zu: %d fields, header has %d", rel, t->nrows + 1, n,
                         t->ncols);
            t->rows[t->nrows++] = f;
        }
        line = nl + 1;
    }
    cr_assert_eq(t->nrows, t->nlines);
}

static int tsv_col(const tsv *t, const char *name)
{
    for (int i = 0; i < t->ncols; i++)
        if (strcmp(t->head[i], name) == 0)
            return i;
    cr_assert_fail("no column %s", name);
    return -1;
}

static void tsv_free(tsv *t)
{
    for (size_t i = 0; i < t->nrows; i++)
        free(t->rows[i]);
    free(t->rows);
    free(t->head);
    free(t->buf);
}

static int64_t parse_i64(const char *s)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    cr_assert(errno == 0 && end != s && *end == '\0', "bad integer '%s'", s);
    return v;
}

static uint64_t parse_hex64(const char *s)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 16);
    cr_assert(errno == 0 && strlen(s) == 16 && *end == '\0', "bad hex64 '%s'", s);
    return v;
}

/* The key bytes from key_utf8_hex (malloc'd, so ASan sees over-reads). */
static uint8_t *key_bytes(const char *hex, size_t *len)
{
    size_t n = strlen(hex);
    cr_assert(n % 2 == 0, "odd hex '%s'", hex);
    uint8_t *k = malloc(n / 2 + 1);
    *len = unhex(hex, k, n / 2);
    cr_assert_eq(*len, n / 2);
    return k;
}

/* Undoes the vector files' four escapes (\\ \t \n \r). */
static uint8_t *unescape_key(const char *s, size_t *len)
{
    uint8_t *k = malloc(strlen(s) + 1);
    size_t n = 0;
    for (; *s; s++) {
        if (*s != '\\') {
            k[n++] = (uint8_t)*s;
            continue;
        }
        s++;
        switch (*s) {
        case '\\': k[n++] = '\\'; break;
        case 't':  k[n++] = '\t'; break;
        case 'n':  k[n++] = '\n'; break;
        case 'r':  k[n++] = '\r'; break;
        default:   cr_assert_fail("unknown escape \\%c", *s);
        }
    }
    *len = n;
    return k;
}

/* Checks the key text column against key_utf8_hex, so that both readings
 * of the key are known to agree before the hex one is trusted. */
static uint8_t *row_key(const tsv *t, size_t row, int kcol, int hcol, size_t *len)
{
    uint8_t *k = key_bytes(t->rows[row][hcol], len);
    size_t ulen;
    uint8_t *u = unescape_key(t->rows[row][kcol], &ulen);
    cr_assert(ulen == *len && memcmp(u, k, ulen) == 0, "row %zu: key '%s' != its hex", row + 1,
              t->rows[row][kcol]);
    free(u);
    return k;
}

/* ---- SMHasher verification ---- */

static uint32_t load32le(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void store64le(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

Test(smhasher, murmur3_x64_128_verification)
{
    uint8_t key[256], digests[256 * 16];
    for (int i = 0; i < 256; i++) {
        key[i] = (uint8_t)i;
        uint64_t h[2];
        rs_murmur3_x64_128(key, (size_t)i, 256 - i, h);
        store64le(digests + i * 16, h[0]);
        store64le(digests + i * 16 + 8, h[1]);
        /* The table's function is h1 of the same digest. */
        cr_assert_eq(rs_hash(RS_HASH_MURMUR3_128, key, (size_t)i, 256 - i), (int64_t)h[0]);
    }
    uint64_t fin[2];
    rs_murmur3_x64_128(digests, sizeof digests, 0, fin);
    uint8_t out[16];
    store64le(out, fin[0]);
    cr_assert_eq(load32le(out), 0x6384BA69u, "got %08" PRIx32, load32le(out));
}

Test(smhasher, murmur3_x86_32_verification)
{
    uint8_t key[256], digests[256 * 4];
    for (int i = 0; i < 256; i++) {
        key[i] = (uint8_t)i;
        int64_t v = rs_hash(RS_HASH_MURMUR3_32, key, (size_t)i, 256 - i);
        cr_assert_eq(v, (int32_t)v, "not a sign-extended int");
        uint32_t h = (uint32_t)v;
        cr_assert_eq(h, rs_murmur3_x86_32(key, (size_t)i, 256 - i));
        for (int b = 0; b < 4; b++)
            digests[i * 4 + b] = (uint8_t)(h >> (8 * b));
    }
    uint32_t fin = rs_murmur3_x86_32(digests, sizeof digests, 0);
    cr_assert_eq(fin, 0xB0F57EE3u, "got %08" PRIx32, fin);
}

/* Guava 31.1 Hashing.murmur3_32(seed).hashBytes(key).asInt(). */
Test(murmur3_32, guava_values)
{
    static const struct { const char *hex; uint32_t seed; int32_t want; } v[] = {
        {"", 0x00000000u, 0},
        {"", 0x00000001u, 1364076727},
        {"", 0x9747b28cu, -340344280},
        {"", 0xffffffffu, -2114883783},
        {"61", 0x00000000u, 1009084850},
        {"61", 0x9747b28cu, 2141232806},
        {"6162", 0x00000000u, -1681926305},
        {"6162", 0xffffffffu, -1350713883},
        {"616263", 0x00000000u, -1277324294},
        {"616263", 0x00000001u, -1435112961},
        {"61626364", 0x00000000u, 1139631978},
        {"61626364", 0x9747b28cu, -263748057},
        {"6162636465", 0x00000000u, -392455434},
        {"6162636465", 0xffffffffu, -1991480460},
        {"ff", 0x00000000u, -43192051},
        {"ff", 0x00000001u, -797126820},
        {"808182", 0x00000000u, 1963501909},
        {"808182", 0xffffffffu, -218199621},
        {"68c3a96c6c6f", 0x00000000u, -1130389400},
        {"68656c6c6f20776f726c64", 0x00000000u, 1586663183},
        {"68656c6c6f20776f726c64", 0x9747b28cu, -1087048224},
        {"f09f9880", 0x00000000u, -1095487750},
        {"e4b8ade69687e4b8ade69687e4b8", 0x00000000u, 1580574708},
        {"e4b8ade69687e4b8ade69687e4b8", 0xffffffffu, 1546048068},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        size_t len;
        uint8_t *k = key_bytes(v[i].hex, &len);
        int64_t got = rs_hash(RS_HASH_MURMUR3_32, k, len, v[i].seed);
        cr_assert_eq(got, (int64_t)v[i].want, "key %s seed %08" PRIx32 ": %" PRId64, v[i].hex,
                     v[i].seed, got);
        /* The seed is the low 32 bits of the 64-bit argument. */
        cr_assert_eq(rs_hash(RS_HASH_MURMUR3_32, k, len, 0xABCD000000000000ull | v[i].seed), got);
        free(k);
    }
}

/* ---- the Guava ring's murmur3_128 (seed004_*.tsv) ---- */

Test(seed004, public_masked_hash)
{
    tsv t;
    tsv_load(&t, "vectors/seed004_public.tsv");
    int kc = tsv_col(&t, "key"), hc = tsv_col(&t, "key_utf8_hex"), mc = tsv_col(&t, "masked_hash");
    size_t checked = 0;
    for (size_t r = 0; r < t.nrows; r++) {
        size_t len;
        uint8_t *k = row_key(&t, r, kc, hc, &len);
        int64_t want = parse_i64(t.rows[r][mc]);
        cr_assert(want >= 0);
        int64_t got = rs_hash(RS_HASH_MURMUR3_128, k, len, 0) & INT64_MAX;
        cr_assert_eq(got, want, "row %zu key '%s': %" PRId64 " != %" PRId64, r + 1, t.rows[r][kc],
                     got, want);
        free(k);
        checked++;
    }
    cr_assert_eq(checked, t.nlines);
    cr_assert_eq(checked, 2178);
    tsv_free(&t);
}

Test(seed004, raw_aslong)
{
    tsv pub, raw;
    tsv_load(&pub, "vectors/seed004_public.tsv");
    tsv_load(&raw, "vectors/seed004_public_raw.tsv");
    int pk = tsv_col(&pub, "key"), ph = tsv_col(&pub, "key_utf8_hex");
    int rk = tsv_col(&raw, "key"), rs = tsv_col(&raw, "aslong_signed"),
        rx = tsv_col(&raw, "aslong_hex"), rm = tsv_col(&raw, "masked_hash");
    size_t checked = 0;
    for (size_t r = 0; r < raw.nrows; r++) {
        /* The raw file has no hex column: find the key by its escaped text
         * (same order in practice, but not relied on). */
        size_t p = r < pub.nrows && strcmp(pub.rows[r][pk], raw.rows[r][rk]) == 0 ? r : SIZE_MAX;
        for (size_t i = 0; p == SIZE_MAX && i < pub.nrows; i++)
            if (strcmp(pub.rows[i][pk], raw.rows[r][rk]) == 0)
                p = i;
        cr_assert_neq(p, SIZE_MAX, "raw row %zu key '%s' not in seed004_public.tsv", r + 1,
                      raw.rows[r][rk]);
        size_t len;
        uint8_t *k = key_bytes(pub.rows[p][ph], &len);
        int64_t got = rs_hash(RS_HASH_MURMUR3_128, k, len, 0);
        cr_assert_eq(got, parse_i64(raw.rows[r][rs]), "row %zu key '%s': %" PRId64, r + 1,
                     raw.rows[r][rk], got);
        cr_assert_eq((uint64_t)got, parse_hex64(raw.rows[r][rx]));
        cr_assert_eq(got & INT64_MAX, parse_i64(raw.rows[r][rm]));
        free(k);
        checked++;
    }
    cr_assert_eq(checked, raw.nlines);
    cr_assert_eq(checked, pub.nlines);
    tsv_free(&pub);
    tsv_free(&raw);
}

/* ---- the FNV1_32 ring, Java hashCode slots, MurmurHash64A ring, ketama (seed000..003_*.tsv) ---- */

Test(seed000, fnv1_32_java)
{
    tsv t;
    tsv_load(&t, "vectors/seed000_vectors.tsv");
    int kc = tsv_col(&t, "key"), hc = tsv_col(&t, "key_utf8_hex"), fc = tsv_col(&t, "fnv"),
        mc = tsv_col(&t, "mod100");
    size_t checked = 0;
    for (size_t r = 0; r < t.nrows; r++) {
        size_t len;
        uint8_t *k = row_key(&t, r, kc, hc, &len);
        int64_t got = rs_hash(RS_HASH_FNV1_32_JAVA, k, len, 0);
        cr_assert_eq(got, parse_i64(t.rows[r][fc]), "row %zu key '%s': %" PRId64, r + 1,
                     t.rows[r][kc], got);
        /* The final mix always clears bit 31 before the last *33, so the
         * value is never INT_MIN and abs() always leaves it >= 0. */
        cr_assert(got >= 0 && got <= INT32_MAX);
        cr_assert_eq(got % 100, parse_i64(t.rows[r][mc]));
        free(k);
        checked++;
    }
    cr_assert_eq(checked, t.nlines);
    cr_assert_eq(checked, 1257);
    tsv_free(&t);
}

Test(seed001, java_hashcode)
{
    tsv t;
    tsv_load(&t, "vectors/seed001_vectors.tsv");
    int kc = tsv_col(&t, "key"), hc = tsv_col(&t, "key_utf8_hex"), jc = tsv_col(&t, "hashcode"),
        sc = tsv_col(&t, "slot");
    size_t checked = 0, negative = 0;
    for (size_t r = 0; r < t.nrows; r++) {
        size_t len;
        uint8_t *k = row_key(&t, r, kc, hc, &len);
        int64_t got = rs_hash(RS_HASH_JAVA_HASHCODE, k, len, 12345);
        cr_assert_eq(got, parse_i64(t.rows[r][jc]), "row %zu key '%s': %" PRId64, r + 1,
                     t.rows[r][kc], got);
        cr_assert_eq(got, (int32_t)got);
        /* Java's % truncates toward zero, as C's does. */
        cr_assert_eq((int32_t)got % 1024, parse_i64(t.rows[r][sc]));
        negative += got < 0;
        free(k);
        checked++;
    }
    cr_assert_eq(checked, t.nlines);
    cr_assert_eq(checked, 1165);
    cr_assert_gt(negative, 0, "the file should exercise negative slots");
    tsv_free(&t);
}

/* Textbook MurmurHash64A (Appleby), only to show the MurmurHash64A ring's
 * variant (seed002_*.tsv) is not it. */
static uint64_t std_murmur64a(const uint8_t *key, size_t len, uint64_t seed)
{
    const uint64_t m = 0xc6a4a7935bd1e995ULL;
    uint64_t h = seed ^ (len * m);
    size_t n = len / 8;
    for (size_t i = 0; i < n; i++) {
        uint64_t k = 0;
        for (int j = 7; j >= 0; j--)
            k = k << 8 | key[i * 8 + j];
        k *= m; k ^= k >> 47; k *= m;
        h ^= k; h *= m;
    }
    const uint8_t *t = key + n * 8;
    switch (len & 7) {
    case 7: h ^= (uint64_t)t[6] << 48; /* fall through */
    case 6: h ^= (uint64_t)t[5] << 40; /* fall through */
    case 5: h ^= (uint64_t)t[4] << 32; /* fall through */
    case 4: h ^= (uint64_t)t[3] << 24; /* fall through */
    case 3: h ^= (uint64_t)t[2] << 16; /* fall through */
    case 2: h ^= (uint64_t)t[1] << 8;  /* fall through */
    case 1: h ^= (uint64_t)t[0]; h *= m;
    }
    h ^= h >> 47; h *= m; h ^= h >> 47;
    return h;
}

Test(seed002, murmur64a_java)
{
    tsv t;
    tsv_load(&t, "vectors/seed002_vectors.tsv");
    int kc = tsv_col(&t, "key"), hc = tsv_col(&t, "key_utf8_hex"), vc = tsv_col(&t, "murmur64a"),
        xc = tsv_col(&t, "murmur64a_hex"), sc = tsv_col(&t, "std64a_hex");
    uint64_t seed = rs_hash_get(RS_HASH_MURMUR64A_JAVA)->default_seed;
    cr_assert_eq(seed, 0x1234ABCD);
    size_t checked = 0, unaligned = 0, high_tail = 0;
    for (size_t r = 0; r < t.nrows; r++) {
        size_t len;
        uint8_t *k = row_key(&t, r, kc, hc, &len);
        int64_t got = rs_hash(RS_HASH_MURMUR64A_JAVA, k, len, seed);
        cr_assert_eq(got, parse_i64(t.rows[r][vc]), "row %zu key '%s': %" PRId64, r + 1,
                     t.rows[r][kc], got);
        cr_assert_eq((uint64_t)got, parse_hex64(t.rows[r][xc]));
        uint64_t std = std_murmur64a(k, len, seed);
        cr_assert_eq(std, parse_hex64(t.rows[r][sc]), "row %zu: textbook 64A", r + 1);
        if (len % 8 == 0) {
            cr_assert_eq((uint64_t)got, std);
        } else {
            cr_assert_neq((uint64_t)got, std, "row %zu: variant tail equals textbook", r + 1);
            unaligned++;
            for (size_t j = len & ~(size_t)7; j < len; j++)
                if (k[j] >= 0x80) {
                    high_tail++;
                    break;
                }
        }
        free(k);
        checked++;
    }
    cr_assert_eq(checked, t.nlines);
    cr_assert_eq(checked, 1165);
    cr_assert_gt(unaligned, 0);
    cr_assert_gt(high_tail, 0, "no row exercises sign-extended tail bytes");
    tsv_free(&t);
}

Test(seed003, md5_ketama)
{
    tsv t;
    tsv_load(&t, "vectors/seed003_vectors.tsv");
    int kc = tsv_col(&t, "key"), hc = tsv_col(&t, "key_utf8_hex"), vc = tsv_col(&t, "ketama_hash");
    size_t checked = 0, high = 0;
    for (size_t r = 0; r < t.nrows; r++) {
        size_t len;
        uint8_t *k = row_key(&t, r, kc, hc, &len);
        int64_t got = rs_hash(RS_HASH_MD5_KETAMA, k, len, 99);
        cr_assert_eq(got, parse_i64(t.rows[r][vc]), "row %zu key '%s': %" PRId64, r + 1,
                     t.rows[r][kc], got);
        cr_assert(got >= 0 && got <= (int64_t)UINT32_MAX, "not zero-extended");
        high += got > INT32_MAX;
        free(k);
        checked++;
    }
    cr_assert_eq(checked, t.nlines);
    cr_assert_eq(checked, 1166);
    cr_assert_gt(high, 0, "no row has bit 31 set: zero extension untested");
    tsv_free(&t);
}

/* ---- MD5 ---- */

static void md5_hex(const void *p, size_t len, char out[33])
{
    uint8_t d[16];
    rs_md5(p, len, d);
    for (int i = 0; i < 16; i++)
        sprintf(out + 2 * i, "%02x", d[i]);
}

Test(md5, rfc1321_suite)
{
    static const struct { const char *in, *want; } v[] = {
        {"", "d41d8cd98f00b204e9800998ecf8427e"},
        {"a", "0cc175b9c0f1b6a831c399e269772661"},
        {"abc", "900150983cd24fb0d6963f7d28e17f72"},
        {"message digest", "f96b697d7cb7938d525a2f31aaf161d0"},
        {"abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"},
        {"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
         "d174ab98d277d9f5a5611c2c9f419d9f"},
        {"12345678901234567890123456789012345678901234567890123456789012345678901234567890",
         "57edf4a22be3c955ac49da2e2107b67a"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char got[33];
        md5_hex(v[i].in, strlen(v[i].in), got);
        cr_assert_str_eq(got, v[i].want, "MD5(\"%s\")", v[i].in);
    }
    /* ketama reads digest bytes d4 1d 8c d9 little-endian. */
    cr_assert_eq(rs_hash(RS_HASH_MD5_KETAMA, "", 0, 0), (int64_t)0xd98c1dd4);
}

/* Lengths around the padding boundaries (one vs two final blocks);
 * expected digests from java.security.MessageDigest. */
Test(md5, padding_boundaries)
{
    static const struct { size_t n; const char *want; } v[] = {
        {55, "ef1772b6dff9a122358552954ad0df65"},  {56, "3b0c8ac703f828b04c6c197006d17218"},
        {57, "652b906d60af96844ebd21b674f35e93"},  {63, "b06521f39153d618550606be297466d5"},
        {64, "014842d480b571495a4a0363793f7367"},  {65, "c743a45e0d2e6a95cb859adae0248435"},
        {119, "8a7bd0732ed6a28ce75f6dabc90e1613"}, {120, "5f61c0ccad4cac44c75ff505e1f1e537"},
        {128, "e510683b3f5ffe4093d021808bc6ff70"}, {1000, "cabe45dcc9ae5b66ba86600cca6b8ba8"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char *buf = malloc(v[i].n);
        memset(buf, 'a', v[i].n);
        char got[33];
        md5_hex(buf, v[i].n, got);
        cr_assert_str_eq(got, v[i].want, "MD5('a' x %zu)", v[i].n);
        free(buf);
    }
}

/* ---- UTF-8 -> UTF-16 (Java's decoder) ---- */

static int32_t java_hash_units(const uint16_t *u, size_t n)
{
    uint32_t h = 0;
    for (size_t i = 0; i < n; i++)
        h = 31 * h + u[i];
    return (int32_t)h;
}

/* Expected units written out from the Unicode rule; `java_hc` and
 * `java_fnv` are what JDK 17 gives for new String(bytes, UTF_8), so the
 * units themselves are checked against Java too. Note eda080: Java rejects
 * an encoded surrogate only after decoding all 3 bytes, so it is ONE U+FFFD
 * (Unicode best practice would say three). */
Test(utf16, malformed_like_java)
{
    static const struct {
        const char *hex;
        uint16_t units[6];
        size_t nunits;
        int32_t java_hc, java_fnv;
    } v[] = {
        {"618062", {0x61, 0xFFFD, 0x62}, 3, 2124838, 1869130979},
        {"e28241", {0xFFFD, 0x41}, 2, 2031588, 1848059186},
        {"f09f9880", {0xD83D, 0xDE00}, 2, 1772899, 1804067645},
        {"eda080", {0xFFFD}, 1, 65533, 222225476},
        {"eda041", {0xFFFD, 0x41}, 2, 2031588, 1848059186},
        {"eda0", {0xFFFD}, 1, 65533, 222225476},
        {"c0af", {0xFFFD, 0xFFFD}, 2, 2097056, 1939398865},
        {"f4908080", {0xFFFD, 0xFFFD, 0xFFFD, 0xFFFD}, 4, 2017367872, 1106727821},
        {"e282", {0xFFFD}, 1, 65533, 222225476},
        {"f09f98", {0xFFFD}, 1, 65533, 222225476},
        {"f09f9841", {0xFFFD, 0x41}, 2, 2031588, 1848059186},
        {"e08080", {0xFFFD, 0xFFFD, 0xFFFD}, 3, 65074269, 1959976988},
        {"f888808080", {0xFFFD, 0xFFFD, 0xFFFD, 0xFFFD, 0xFFFD}, 5, -1886039875, 1774215956},
        {"c2", {0xFFFD}, 1, 65533, 222225476},
        {"c241", {0xFFFD, 0x41}, 2, 2031588, 1848059186},
        {"f0808080", {0xFFFD, 0xFFFD, 0xFFFD, 0xFFFD}, 4, 2017367872, 1106727821},
        {"f48fbfbf", {0xDBFF, 0xDFFF}, 2, 1803232, 1971743330},
        {"efbfbf", {0xFFFF}, 1, 65535, 1548636669},
        {"ed9fbf", {0xD7FF}, 1, 55295, 671387777},
        {"ee8080", {0xE000}, 1, 57344, 7085506},
        {"ff", {0xFFFD}, 1, 65533, 222225476},
        {"41f5", {0x41, 0xFFFD}, 2, 67548, 1356275558},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        size_t len;
        uint8_t *k = key_bytes(v[i].hex, &len);

        uint16_t got[16], u[2];
        size_t n = 0, pos = 0;
        while (pos < len) {
            size_t before = pos;
            int c = rs_utf8_next_utf16(k, len, &pos, u);
            cr_assert(c == 1 || c == 2);
            cr_assert(pos > before && pos <= len, "%s: position did not advance sanely", v[i].hex);
            cr_assert(n + (size_t)c <= 16);
            for (int j = 0; j < c; j++)
                got[n++] = u[j];
        }
        cr_assert_eq(n, v[i].nunits, "%s: %zu units, want %zu", v[i].hex, n, v[i].nunits);
        for (size_t j = 0; j < n; j++)
            cr_assert_eq(got[j], v[i].units[j], "%s unit %zu: %04x", v[i].hex, j, got[j]);

        int32_t want = java_hash_units(v[i].units, v[i].nunits);
        cr_assert_eq(want, v[i].java_hc, "%s: table's units disagree with Java", v[i].hex);
        cr_assert_eq(rs_hash(RS_HASH_JAVA_HASHCODE, k, len, 0), (int64_t)want, "%s", v[i].hex);
        cr_assert_eq(rs_hash(RS_HASH_FNV1_32_JAVA, k, len, 0), (int64_t)v[i].java_fnv, "%s",
                     v[i].hex);
        free(k);
    }
    cr_assert_eq(rs_hash(RS_HASH_JAVA_HASHCODE, "", 0, 0), 0);

    /* At the end of input the decoder reads nothing and produces nothing. */
    uint16_t u[2];
    size_t pos = 1;
    cr_assert_eq(rs_utf8_next_utf16((const uint8_t *)"a", 1, &pos, u), 0);
    cr_assert_eq(pos, 1);
}

/* Every byte string of length 0..4 over bytes at the decoder's boundaries
 * (551,881 inputs), folded as acc = acc*31 + value; the expected folds come
 * from running the same loop in JDK 17 on new String(bytes, UTF_8). */
Test(utf16, exhaustive_boundaries_match_jdk)
{
    static const uint8_t A[] = {0x00, 0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf,
                                0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xe1, 0xec, 0xed, 0xee,
                                0xef, 0xf0, 0xf1, 0xf3, 0xf4, 0xf5, 0xf7, 0xf8, 0xff};
    const size_t na = sizeof A;
    uint64_t acc_hc = 0, acc_fnv = 0, acc_units = 0, count = 0;
    for (size_t len = 0; len <= 4; len++) {
        size_t total = 1;
        for (size_t i = 0; i < len; i++)
            total *= na;
        for (size_t idx = 0; idx < total; idx++) {
            uint8_t b[4];
            size_t x = idx;
            for (size_t i = len; i-- > 0; x /= na)
                b[i] = A[x % na];
            uint64_t units = 0;
            uint16_t u[2];
            for (size_t pos = 0; pos < len;)
                units += (uint64_t)rs_utf8_next_utf16(b, len, &pos, u);
            acc_hc = acc_hc * 31 + (uint64_t)rs_hash(RS_HASH_JAVA_HASHCODE, b, len, 0);
            acc_fnv = acc_fnv * 31 + (uint64_t)rs_hash(RS_HASH_FNV1_32_JAVA, b, len, 0);
            acc_units = acc_units * 31 + units;
            count++;
        }
    }
    cr_assert_eq(count, 551881);
    cr_assert_eq((int64_t)acc_units, INT64_C(-4702386500478037822));
    cr_assert_eq((int64_t)acc_hc, INT64_C(-177790020306785628));
    cr_assert_eq((int64_t)acc_fnv, INT64_C(9017977499625075851));
}

/* ---- the table ---- */

Test(table, names_and_lookup)
{
    static const struct { const char *name; unsigned bits; int is_signed; uint64_t seed; } want[] = {
        {"murmur3_128", 64, 1, 0},  {"murmur3_32", 32, 1, 0},
        {"fnv1_32_java", 32, 1, 0}, {"java_hashcode", 32, 1, 0},
        {"murmur64a_java", 64, 1, 0x1234ABCD}, {"md5_ketama", 32, 0, 0},
    };
    cr_assert_eq(RS_HASH__COUNT, sizeof want / sizeof want[0]);
    for (int id = 0; id < RS_HASH__COUNT; id++) {
        const rs_hash_info *h = rs_hash_get((rs_hash_id)id);
        cr_assert_not_null(h);
        cr_assert_eq(h->id, (rs_hash_id)id);
        cr_assert_str_eq(h->name, want[id].name);
        cr_assert_eq(h->bits, want[id].bits);
        cr_assert_eq(h->is_signed, want[id].is_signed);
        cr_assert_eq(h->default_seed, want[id].seed);
        cr_assert_not_null(h->fn);
        cr_assert(h->help && h->help[0]);
        cr_assert_eq(rs_hash_by_name(want[id].name), h, "by_name(%s)", want[id].name);
        /* rs_hash dispatches to the row's own function. */
        cr_assert_eq(rs_hash((rs_hash_id)id, "abc", 3, h->default_seed),
                     h->fn((const uint8_t *)"abc", 3, h->default_seed));
    }
    cr_assert_null(rs_hash_by_name("nope"));
    cr_assert_null(rs_hash_by_name(""));
    cr_assert_null(rs_hash_by_name("MURMUR3_128"));
    cr_assert_null(rs_hash_by_name("murmur3_12"));
    cr_assert_null(rs_hash_by_name("murmur3_128 "));
}

/* 32-bit values are sign-extended, md5_ketama zero-extended, over keys whose
 * values cover both signs. */
Test(table, value_widths)
{
    char key[32];
    int neg[RS_HASH__COUNT] = {0};
    for (int i = 0; i < 200; i++) {
        int n = snprintf(key, sizeof key, "a longer key number %d", i);
        for (int id = 0; id < RS_HASH__COUNT; id++) {
            const rs_hash_info *h = rs_hash_get((rs_hash_id)id);
            int64_t v = rs_hash((rs_hash_id)id, key, (size_t)n, h->default_seed);
            if (h->bits == 32 && h->is_signed)
                cr_assert_eq(v, (int32_t)v, "%s(%s)", h->name, key);
            if (!h->is_signed)
                cr_assert(v >= 0 && v <= (int64_t)UINT32_MAX, "%s(%s)", h->name, key);
            neg[id] += v < 0;
        }
    }
    cr_assert_gt(neg[RS_HASH_MURMUR3_32], 0);
    cr_assert_gt(neg[RS_HASH_JAVA_HASHCODE], 0);
    cr_assert_eq(neg[RS_HASH_FNV1_32_JAVA], 0);
    cr_assert_eq(neg[RS_HASH_MD5_KETAMA], 0);
}

/* CRC-64/XZ: its check value, and rs_crc64_combine against the CRC of the
 * whole, for splits of every kind (empty pieces, one byte, long pieces
 * whose lengths have high bits set), by ISA-L's and the table's code. */
Test(crc64, check_value_and_combine)
{
    cr_assert_eq(rs_crc64(0, "123456789", 9), 0x995dc9bbdf1939faULL);
    cr_assert_eq(rs_crc64_portable(0, "123456789", 9), 0x995dc9bbdf1939faULL);
    size_t n = (size_t)3 << 20;
    unsigned char *buf = malloc(n);
    cr_assert_not_null(buf);
    uint64_t x = 88172645463325252ULL;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        buf[i] = (unsigned char)x;
    }
    uint64_t whole = rs_crc64(0, buf, n);
    cr_assert_eq(whole, rs_crc64_portable(0, buf, n));
    size_t cuts[] = {0, 1, 2, 7, 8, 9, 255, 4096, 65537, (size_t)1 << 20, n - 1, n};
    for (size_t a = 0; a < sizeof cuts / sizeof *cuts; a++)
        for (size_t b = a; b < sizeof cuts / sizeof *cuts; b++) {
            size_t i = cuts[a], j = cuts[b];  /* three pieces: [0,i) [i,j) [j,n) */
            uint64_t c = rs_crc64(0, buf, i);
            c = rs_crc64_combine(c, rs_crc64(0, buf + i, j - i), j - i);
            c = rs_crc64_combine(c, rs_crc64_portable(0, buf + j, n - j), n - j);
            cr_assert_eq(c, whole, "cuts at %zu and %zu: %016llx, whole %016llx", i, j, (unsigned long long)c,
                         (unsigned long long)whole);
        }
    /* nothing before, or nothing after */
    cr_assert_eq(rs_crc64_combine(0, whole, n), whole);
    cr_assert_eq(rs_crc64_combine(whole, 0, 0), whole);
    free(buf);
}
