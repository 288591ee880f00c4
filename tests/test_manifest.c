/* The JSON writer and reader, manifest.json and atomic output directories
 * (the file names: test_names.c). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "ringshard/json.h"
#include "ringshard/dataset.h"
#include "support.h"
#include "util/json_read.h"

/* ---- helpers ---- */

/* Runs body(j) on a memory stream and returns what was written. */
typedef void (*json_body)(rs_json *j);

static char *json_text(json_body body, int pretty, int *rc)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert(f != NULL);
    rs_json j;
    rs_json_init(&j, f, pretty);
    body(&j);
    *rc = rs_json_finish(&j);
    fclose(f);
    return buf;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert(f != NULL, "%s: %s", path, strerror(errno));
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
}

static char *path_in(const char *dir, const char *name)
{
    char *p;
    cr_assert(asprintf(&p, "%s/%s", dir, name) > 0);
    return p;
}

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* Number of entries of dir whose name contains `part`. */
static int count_entries(const char *dir, const char *part)
{
    DIR *d = opendir(dir);
    cr_assert(d != NULL, "%s: %s", dir, strerror(errno));
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") && strstr(de->d_name, part))
            n++;
    closedir(d);
    return n;
}

static void python_parses(const char *path)
{
    char cmd[4096], *err;
    snprintf(cmd, sizeof cmd, "python3 -c 'import json,sys; json.load(open(sys.argv[1], encoding=\"utf-8\"))' '%s'",
             path);
    int st = run(cmd, NULL, &err);
    cr_assert_eq(st, 0, "python's json rejects %s: %s", path, err);
    free(err);
}

/* ---- the writer ---- */

static void body_escapes(rs_json *j)
{
    rs_json_array_begin(j);
    rs_json_string(j, "plain");
    rs_json_string(j, "q\"b\\s/");
    rs_json_string(j, "\b\f\n\r\t");
    rs_json_string(j, "\x01\x1f\x7f");
    rs_json_string(j, "\xc3\xa4\xe2\x82\xac\xf0\x9f\x98\x80");   /* ä € 😀: pass through */
    rs_json_string(j, "a\xff" "b");                               /* invalid byte */
    rs_json_string(j, "\xc3");                                    /* truncated */
    rs_json_string(j, "\xc0\x80");                                /* overlong NUL */
    rs_json_string(j, "\xed\xa0\x80");                            /* surrogate */
    rs_json_string(j, "\xf4\x90\x80\x80");                        /* > U+10FFFF */
    rs_json_string(j, "\x80\xe2\x82");                            /* stray + truncated */
    rs_json_string_n(j, "n\0l", 3);
    rs_json_string(j, NULL);
    rs_json_array_end(j);
}

Test(json_writer, escapes)
{
    int rc;
    char *out = json_text(body_escapes, 0, &rc);
    cr_assert_eq(rc, 0);
    const char *want = "[\"plain\",\"q\\\"b\\\\s/\",\"\\b\\f\\n\\r\\t\",\"\\u0001\\u001f\x7f\","
                       "\"\xc3\xa4\xe2\x82\xac\xf0\x9f\x98\x80\",\"a\\u00ffb\",\"\\u00c3\",\"\\u00c0\\u0080\","
                       "\"\\u00ed\\u00a0\\u0080\",\"\\u00f4\\u0090\\u0080\\u0080\",\"\\u0080\\u00e2\\u0082\","
                       "\"n\\u0000l\",null]";
    cr_assert_str_eq(out, want);

    /* read back: valid UTF-8 and escapes exact; invalid bytes as U+00xx */
    rs_jv v;
    rs_error err = {0};
    cr_assert_eq(rs_jv_parse(&v, out, strlen(out), "mem", &err, NULL), 0, "%s", err.msg);
    cr_assert_eq(v.type, RS_JV_ARRAY);
    cr_assert_eq(v.n, 13);
    cr_assert_str_eq(v.items[1].str, "q\"b\\s/");
    cr_assert_str_eq(v.items[2].str, "\b\f\n\r\t");
    cr_assert_str_eq(v.items[3].str, "\x01\x1f\x7f");
    cr_assert_str_eq(v.items[4].str, "\xc3\xa4\xe2\x82\xac\xf0\x9f\x98\x80");
    cr_assert_str_eq(v.items[5].str, "a\xc3\xbf" "b", "lossy: 0xff reads back as U+00FF");
    cr_assert_eq(v.items[11].len, 3);
    cr_assert(memcmp(v.items[11].str, "n\0l", 3) == 0);
    cr_assert_eq(v.items[12].type, RS_JV_NULL);
    rs_jv_free(&v);
    free(out);
}

static void body_structure(rs_json *j)
{
    rs_json_object_begin(j);
    rs_json_key(j, "a");
    rs_json_u64(j, 1);
    rs_json_key(j, "empty_obj");
    rs_json_object_begin(j);
    rs_json_object_end(j);
    rs_json_key(j, "empty_arr");
    rs_json_array_begin(j);
    rs_json_array_end(j);
    rs_json_key(j, "list");
    rs_json_array_begin(j);
    rs_json_bool(j, 1);
    rs_json_bool(j, 0);
    rs_json_null(j);
    rs_json_object_begin(j);
    rs_json_key(j, "k\"ey");
    rs_json_raw(j, "340282366920938463463374607431768211455");
    rs_json_object_end(j);
    rs_json_array_begin(j);
    rs_json_i64(j, -5);
    rs_json_array_end(j);
    rs_json_array_end(j);
    rs_json_object_end(j);
}

Test(json_writer, pretty_structure)
{
    int rc;
    char *out = json_text(body_structure, 1, &rc);
    cr_assert_eq(rc, 0);
    const char *want = "{\n"
                       "  \"a\": 1,\n"
                       "  \"empty_obj\": {},\n"
                       "  \"empty_arr\": [],\n"
                       "  \"list\": [\n"
                       "    true,\n"
                       "    false,\n"
                       "    null,\n"
                       "    {\n"
                       "      \"k\\\"ey\": 340282366920938463463374607431768211455\n"
                       "    },\n"
                       "    [\n"
                       "      -5\n"
                       "    ]\n"
                       "  ]\n"
                       "}";
    cr_assert_str_eq(out, want);
    free(out);
}

Test(json_writer, compact_structure)
{
    int rc;
    char *out = json_text(body_structure, 0, &rc);
    cr_assert_eq(rc, 0);
    cr_assert_str_eq(out, "{\"a\":1,\"empty_obj\":{},\"empty_arr\":[],\"list\":[true,false,null,"
                          "{\"k\\\"ey\":340282366920938463463374607431768211455},[-5]]}");
    rs_jv v;
    rs_error err = {0};
    cr_assert_eq(rs_jv_parse(&v, out, strlen(out), "mem", &err, NULL), 0, "%s", err.msg);
    const rs_jv *list = rs_jv_get(&v, "list");
    cr_assert(list && list->type == RS_JV_ARRAY && list->n == 5);
    cr_assert_str_eq(rs_jv_get(&list->items[3], "k\"ey")->str, "340282366920938463463374607431768211455");
    cr_assert_str_eq(list->items[4].items[0].str, "-5");
    rs_jv_free(&v);
    free(out);
}

static void body_numbers(rs_json *j)
{
    rs_json_array_begin(j);
    rs_json_u64(j, UINT64_MAX);
    rs_json_i64(j, INT64_MIN);
    rs_json_double(j, 1.0);
    rs_json_double(j, -0.0);
    rs_json_double(j, 0.5);
    rs_json_double(j, 9007199254740992.0);   /* 2^53 */
    rs_json_double(j, 1e15);
    rs_json_double(j, 1e300);
    rs_json_double(j, 0.1);
    rs_json_double(j, 1e-7);
    rs_json_double(j, NAN);
    rs_json_double(j, INFINITY);
    rs_json_double(j, -INFINITY);
    rs_json_array_end(j);
}

Test(json_writer, numbers)
{
    int rc;
    char *out = json_text(body_numbers, 0, &rc);
    cr_assert_eq(rc, 0);
    cr_assert_str_eq(out, "[18446744073709551615,-9223372036854775808,1,-0,0.5,9007199254740992,"
                          "1000000000000000,1.0000000000000001e+300,0.10000000000000001,9.9999999999999995e-08,"
                          "null,null,null]");
    rs_jv v;
    rs_error err = {0};
    cr_assert_eq(rs_jv_parse(&v, out, strlen(out), "mem", &err, NULL), 0, "%s", err.msg);
    uint64_t u;
    cr_assert_eq(rs_jv_u64(&v.items[0], &u), 0);
    cr_assert_eq(u, UINT64_MAX);
    const double want[] = {1.0, -0.0, 0.5, 9007199254740992.0, 1e15, 1e300, 0.1, 1e-7};
    for (int i = 0; i < 8; i++)
        cr_assert_eq(strtod(v.items[2 + i].str, NULL), want[i], "item %d", i);
    rs_jv_free(&v);
    free(out);
}

static void body_value_without_key(rs_json *j)
{
    rs_json_object_begin(j);
    rs_json_u64(j, 1);
    rs_json_object_end(j);
}
static void body_key_in_array(rs_json *j)
{
    rs_json_array_begin(j);
    rs_json_key(j, "x");
    rs_json_u64(j, 1);
    rs_json_array_end(j);
}
static void body_unbalanced(rs_json *j)
{
    rs_json_array_begin(j);
    rs_json_object_begin(j);
}
static void body_mismatched(rs_json *j)
{
    rs_json_array_begin(j);
    rs_json_object_end(j);
}
static void body_too_deep(rs_json *j)
{
    for (int i = 0; i < 70; i++)
        rs_json_array_begin(j);
    for (int i = 0; i < 70; i++)
        rs_json_array_end(j);
}
static void body_deep_ok(rs_json *j)
{
    for (int i = 0; i < 63; i++)
        rs_json_array_begin(j);
    for (int i = 0; i < 63; i++)
        rs_json_array_end(j);
}
static void body_nothing(rs_json *j) { (void)j; }

Test(json_writer, misuse_is_a_sticky_error)
{
    json_body bad[] = {body_value_without_key, body_key_in_array, body_unbalanced, body_mismatched, body_too_deep,
                       body_nothing};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc;
        free(json_text(bad[i], 1, &rc));
        cr_assert_eq(rc, -1, "case %zu", i);
    }
    int rc;
    free(json_text(body_deep_ok, 1, &rc));
    cr_assert_eq(rc, 0);
}

Test(json_writer, write_failure)
{
    FILE *f = fopen("/dev/full", "w");
    cr_assert(f != NULL);
    rs_json j;
    rs_json_init(&j, f, 1);
    rs_json_array_begin(&j);
    for (int i = 0; i < 10000; i++)
        rs_json_string(&j, "some text to fill the buffer");
    rs_json_array_end(&j);
    cr_assert_eq(rs_json_finish(&j), -1);
    fclose(f);
}

/* Random strings (valid UTF-8 and control characters) survive write ->
 * read, and python accepts the file. */
Test(json_writer, random_strings_round_trip)
{
    char *dir = make_tmpdir();
    char *path = path_in(dir, "r.json");
    enum { N = 300 };
    static char strs[N][64];
    static size_t lens[N];
    unsigned seed = 12345;
    for (int i = 0; i < N; i++) {
        size_t n = 0;
        while (n < 56) {
            seed = seed * 1103515245u + 12345u;
            unsigned r = (seed >> 8) % 6;
            unsigned cp = (seed >> 12);
            if (r == 0 && n > 40)
                break;
            if (r <= 1) {
                strs[i][n++] = (char)(cp % 0x80);   /* ASCII incl. controls and NUL */
            } else if (r == 2) {
                cp = 0x80 + cp % 0x780;
                strs[i][n++] = (char)(0xC0 | (cp >> 6));
                strs[i][n++] = (char)(0x80 | (cp & 63));
            } else if (r == 3) {
                cp = 0x800 + cp % 0xF800;
                if (cp >= 0xD800 && cp <= 0xDFFF)
                    cp = 0x20AC;
                strs[i][n++] = (char)(0xE0 | (cp >> 12));
                strs[i][n++] = (char)(0x80 | ((cp >> 6) & 63));
                strs[i][n++] = (char)(0x80 | (cp & 63));
            } else {
                cp = 0x10000 + cp % 0x100000;
                strs[i][n++] = (char)(0xF0 | (cp >> 18));
                strs[i][n++] = (char)(0x80 | ((cp >> 12) & 63));
                strs[i][n++] = (char)(0x80 | ((cp >> 6) & 63));
                strs[i][n++] = (char)(0x80 | (cp & 63));
            }
        }
        lens[i] = n;
    }
    FILE *f = fopen(path, "w");
    rs_json j;
    rs_json_init(&j, f, 1);
    rs_json_array_begin(&j);
    for (int i = 0; i < N; i++)
        rs_json_string_n(&j, strs[i], lens[i]);
    rs_json_array_end(&j);
    cr_assert_eq(rs_json_finish(&j), 0);
    fclose(f);
    python_parses(path);

    size_t len;
    char *text = slurp(path, &len);
    rs_jv v;
    rs_error err = {0};
    cr_assert_eq(rs_jv_parse(&v, text, len, path, &err, NULL), 0, "%s", err.msg);
    cr_assert_eq(v.n, N);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(v.items[i].len, lens[i], "string %d", i);
        cr_assert(memcmp(v.items[i].str, strs[i], lens[i]) == 0, "string %d", i);
    }
    rs_jv_free(&v);
    free(text);
    free(path);
    remove_tree(dir);
    free(dir);
}

/* ---- the reader ---- */

Test(json_reader, escapes_and_surrogates)
{
    const char *t = "{\"s\": \"\\u00e4\\u20AC\\ud83d\\ude00 \\/\\\\\\\"\\b\\f\\n\\r\\t\\u0041\", "
                    "\"raw\": \"\xc3\xa4\xf0\x9f\x98\x80\", \"a\": [ ], \"o\": { }, \"t\": true, \"f\": false,"
                    " \"n\": null, \"dup\": 1, \"dup\": 2}";
    rs_jv v;
    rs_error err = {0};
    cr_assert_eq(rs_jv_parse(&v, t, strlen(t), "mem", &err, NULL), 0, "%s", err.msg);
    cr_assert_str_eq(rs_jv_get(&v, "s")->str, "\xc3\xa4\xe2\x82\xac\xf0\x9f\x98\x80 /\\\"\b\f\n\r\tA");
    cr_assert_str_eq(rs_jv_get(&v, "raw")->str, "\xc3\xa4\xf0\x9f\x98\x80");
    cr_assert_eq(rs_jv_get(&v, "a")->type, RS_JV_ARRAY);
    cr_assert_eq(rs_jv_get(&v, "a")->n, 0);
    cr_assert_eq(rs_jv_get(&v, "o")->type, RS_JV_OBJECT);
    cr_assert_eq(rs_jv_get(&v, "t")->boolean, 1);
    cr_assert_eq(rs_jv_get(&v, "f")->type, RS_JV_BOOL);
    cr_assert_eq(rs_jv_get(&v, "f")->boolean, 0);
    cr_assert_eq(rs_jv_get(&v, "n")->type, RS_JV_NULL);
    cr_assert_str_eq(rs_jv_get(&v, "dup")->str, "2", "the last duplicate wins");
    cr_assert_null(rs_jv_get(&v, "missing"));
    rs_jv_free(&v);
}

Test(json_reader, integers_exact)
{
    const char *t = "[18446744073709551615, 18446744073709551616, 0, -1, 1.5, 1e3, 9007199254740993]";
    rs_jv v;
    rs_error err = {0};
    cr_assert_eq(rs_jv_parse(&v, t, strlen(t), "mem", &err, NULL), 0, "%s", err.msg);
    uint64_t u;
    cr_assert_eq(rs_jv_u64(&v.items[0], &u), 0);
    cr_assert_eq(u, UINT64_MAX);
    cr_assert_eq(rs_jv_u64(&v.items[1], &u), -1, "overflow");
    cr_assert_eq(rs_jv_u64(&v.items[2], &u), 0);
    cr_assert_eq(u, 0);
    cr_assert_eq(rs_jv_u64(&v.items[3], &u), -1);
    cr_assert_eq(rs_jv_u64(&v.items[4], &u), -1);
    cr_assert_eq(rs_jv_u64(&v.items[5], &u), -1);
    cr_assert_eq(rs_jv_u64(&v.items[6], &u), 0);
    cr_assert_eq(u, 9007199254740993ULL, "beyond 2^53, exact");
    cr_assert_str_eq(v.items[4].str, "1.5");
    rs_jv_free(&v);
}

Test(json_reader, syntax_errors_with_offsets)
{
    static const struct {
        const char *text;
        size_t offset;
    } cases[] = {
        {"", 0},
        {"   ", 3},
        {"{\"a\":1,}", 7},
        {"[1 2]", 3},
        {"[1,]", 3},
        {"{\"a\" 1}", 5},
        {"{1:2}", 1},
        {"\"abc", 4},
        {"[tru]", 1},
        {"[nul", 1},
        {"01", 1},
        {"-", 1},
        {"1.", 2},
        {"1e+", 3},
        {"[1] x", 4},
        {"\"a\tb\"", 2},
        {"\"\\x\"", 1},
        {"\"\\u12G4\"", 5},
        {"\"\\ud83d\"", 1},
        {"\"\\ude00\"", 1},
        {"\"\\ud83d\\u0041\"", 1},
        {"\"a\xff\"", 2},
        {"\"\xc0\x80\"", 1},
        {"\"\xed\xa0\x80\"", 1},
        {"[1,\n {\"k\": @}]", 11},
        {"+1", 0},
        {"{\"a\":1", 6},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rs_jv v;
        rs_error err = {0};
        size_t off = 999;
        cr_assert_eq(rs_jv_parse(&v, cases[i].text, strlen(cases[i].text), "in.json", &err, &off), -1,
                     "case %zu accepted: %s", i, cases[i].text);
        cr_assert_eq(err.code, RS_EXIT_DATA);
        cr_assert_eq(off, cases[i].offset, "case %zu (%s): offset %zu, want %zu: %s", i, cases[i].text, off,
                     cases[i].offset, err.msg);
        char want[64];
        snprintf(want, sizeof want, "in.json: JSON syntax error at byte %zu ", cases[i].offset);
        cr_assert(strncmp(err.msg, want, strlen(want)) == 0, "message: %s", err.msg);
    }
}

Test(json_reader, error_names_line_and_column)
{
    const char *t = "{\n  \"a\": 1,\n  \"\xc3\xa4\": x\n}";
    rs_jv v;
    rs_error err = {0};
    cr_assert_eq(rs_jv_parse(&v, t, strlen(t), "f.json", &err, NULL), -1);
    cr_assert_str_eq(err.msg, "f.json: JSON syntax error at byte 20 (line 3, column 8): "
                              "unexpected character (a value was expected)");
}

Test(json_reader, depth_is_bounded)
{
    char deep[300];
    for (int depth = 63; depth <= 66; depth++) {
        size_t n = 0;
        for (int i = 0; i < depth; i++)
            deep[n++] = '[';
        for (int i = 0; i < depth; i++)
            deep[n++] = ']';
        rs_jv v;
        rs_error err = {0};
        size_t off = 0;
        int rc = rs_jv_parse(&v, deep, n, "deep", &err, &off);
        if (depth <= RS_JSON_MAX_DEPTH) {
            cr_assert_eq(rc, 0, "depth %d: %s", depth, err.msg);
            rs_jv_free(&v);
        } else {
            cr_assert_eq(rc, -1, "depth %d accepted", depth);
            cr_assert_eq(off, RS_JSON_MAX_DEPTH);
            cr_assert(strstr(err.msg, "nesting too deep"));
        }
    }
    /* a very deep document fails cleanly rather than exhausting the stack */
    size_t big = 1000000;
    char *p = malloc(big);
    memset(p, '[', big);
    rs_jv v;
    rs_error err = {0};
    cr_assert_eq(rs_jv_parse(&v, p, big, "deep", &err, NULL), -1);
    free(p);
}

/* ---- manifests ---- */

static const char *DESC = "scheme\tketama\nhash\tmd5\nseed\t0\nnode\t\"q\"uoted\"\t100\nnode\tM\xc3\xbcnchen\t1\n";

static void fill_buckets(rs_manifest *m)
{
    memset(m, 0, sizeof *m);
    m->schema = 1;
    m->kind = strdup("buckets");
    m->tool_version = strdup("9.8.7-test");
    m->ring_description = strdup(DESC);
    m->ring_fingerprint = strdup("0123456789abcdef0123456789abcdef");
    m->key = strdup("id,\"name\"");
    m->delimiter = ',';
    m->header = 1;
    m->header_line = strdup("id,name,\"city\"\tx");
    m->compress = 1;
    m->level = 6;
    m->keys_only = 0;
    m->ninputs = 2;
    m->inputs = calloc(2, sizeof *m->inputs);
    m->inputs[0] = (rs_manifest_input){.path = strdup("data/a b.csv.gz"), .size = 1, .rows = 2, .bytes = 3,
                                       .rejected = 4, .blank_lines = 5, .zero_padding = 6};
    m->inputs[1] = (rs_manifest_input){.path = strdup("-"), .rows = UINT64_MAX, .bytes = UINT64_MAX - 1,
                                       .blank_lines = 18446744073709551ULL};
    m->nfiles = 3;
    m->files = calloc(3, sizeof *m->files);
    m->files[0] = (rs_manifest_file){.file = strdup("%22q%22uoted%22.csv.gz"), .node = strdup("\"q\"uoted\""),
                                     .rows = 10, .bytes = 200, .file_bytes = 90, .crc32 = 0xDEADBEEF};
    m->files[1] = (rs_manifest_file){.file = strdup("M%C3%BCnchen.csv.gz"), .node = strdup("M\xc3\xbcnchen"),
                                     .rows = UINT64_MAX, .bytes = 1, .file_bytes = 2, .crc32 = 0xFFFFFFFF,
                                     .stored_crc32 = 0x89ABCDEF, .has_stored_crc32 = 1};
    m->files[2] = (rs_manifest_file){.file = strdup("empty.csv.gz"), .node = strdup("empty"), .crc32 = 0x00000a0b};
    m->rows = UINT64_MAX;
    m->bytes = 201;
    m->rejected = 7;
    m->seconds = 1.25;
}

static void assert_str_or_null(const char *got, const char *want, const char *what)
{
    if (want == NULL)
        cr_assert_null(got, "%s", what);
    else
        cr_assert(got != NULL && strcmp(got, want) == 0, "%s: got '%s', want '%s'", what, got, want);
}

static void assert_manifests_equal(const rs_manifest *a, const rs_manifest *b)
{
    cr_assert_eq(a->schema, b->schema);
    assert_str_or_null(a->kind, b->kind, "kind");
    assert_str_or_null(a->tool_version, b->tool_version, "tool_version");
    assert_str_or_null(a->ring_description, b->ring_description, "ring_description");
    assert_str_or_null(a->ring_fingerprint, b->ring_fingerprint, "ring_fingerprint");
    assert_str_or_null(a->new_ring_description, b->new_ring_description, "new_ring_description");
    assert_str_or_null(a->new_ring_fingerprint, b->new_ring_fingerprint, "new_ring_fingerprint");
    assert_str_or_null(a->key, b->key, "key");
    cr_assert_eq(a->delimiter, b->delimiter);
    cr_assert_eq(a->header, b->header);
    assert_str_or_null(a->header_line, b->header_line, "header_line");
    cr_assert_eq(a->compress, b->compress);
    cr_assert_eq(a->level, b->level);
    cr_assert_eq(a->keys_only, b->keys_only);
    cr_assert_eq(a->ninputs, b->ninputs);
    for (size_t i = 0; i < a->ninputs; i++) {
        const rs_manifest_input *x = &a->inputs[i], *y = &b->inputs[i];
        assert_str_or_null(x->path, y->path, "input path");
        cr_assert(x->size == y->size && x->rows == y->rows && x->bytes == y->bytes && x->rejected == y->rejected &&
                      x->blank_lines == y->blank_lines && x->zero_padding == y->zero_padding,
                  "input %zu", i);
    }
    cr_assert_eq(a->nfiles, b->nfiles);
    for (size_t i = 0; i < a->nfiles; i++) {
        const rs_manifest_file *x = &a->files[i], *y = &b->files[i];
        assert_str_or_null(x->file, y->file, "file");
        assert_str_or_null(x->node, y->node, "node");
        assert_str_or_null(x->from, y->from, "from");
        assert_str_or_null(x->to, y->to, "to");
        cr_assert(x->rows == y->rows && x->bytes == y->bytes && x->file_bytes == y->file_bytes &&
                      x->crc32 == y->crc32 && x->wave == y->wave && x->has_stored_crc32 == y->has_stored_crc32 &&
                      x->stored_crc32 == y->stored_crc32,
                  "file %zu", i);
    }
    cr_assert_eq(a->rows, b->rows);
    cr_assert_eq(a->bytes, b->bytes);
    cr_assert_eq(a->rejected, b->rejected);
    cr_assert_eq(a->seconds, b->seconds);
}

Test(manifest, buckets_round_trip)
{
    char *dir = make_tmpdir();
    char *path = path_in(dir, "manifest.json");
    rs_manifest m, r;
    rs_error err = {0};
    fill_buckets(&m);
    cr_assert_eq(rs_manifest_write(&m, path, &err), 0, "%s", err.msg);
    python_parses(path);
    cr_assert_eq(rs_manifest_read(&r, path, &err), 0, "%s", err.msg);
    assert_manifests_equal(&r, &m);

    char *text = slurp(path, NULL);
    cr_assert(strncmp(text, "{\n  \"schema\": 1,\n  \"kind\": \"buckets\",\n  \"tool\": {\n    \"name\": \"ringshard\",\n",
                      strlen("{\n  \"schema\": 1,\n  \"kind\": \"buckets\",\n  \"tool\": {\n    \"name\": \"ringshard\",\n")) == 0,
              "%s", text);
    cr_assert(strstr(text, "\"description\": \"scheme\\tketama\\nhash\\tmd5\\nseed\\t0\\nnode\\t\\\"q\\\"uoted\\\"\\t100\\n"));
    cr_assert(strstr(text, "      \"crc32\": 3735928559,\n      \"crc32_hex\": \"deadbeef\"\n"));
    cr_assert(strstr(text, "      \"crc32\": 2571,\n      \"crc32_hex\": \"00000a0b\"\n"));
    /* stored_crc32 only where recorded, after crc32_hex */
    cr_assert(strstr(text, "      \"crc32_hex\": \"ffffffff\",\n      \"stored_crc32\": 2309737967\n    }"), "%s", text);
    cr_assert(r.files[1].has_stored_crc32 && !r.files[0].has_stored_crc32 && !r.files[2].has_stored_crc32);
    cr_assert(strstr(text, "\"rows\": 18446744073709551615"));
    cr_assert(strstr(text, "\"delimiter\": \",\""));
    cr_assert(strstr(text, "\"compress\": \"gzip\""));
    cr_assert(strstr(text, "  \"totals\": {\n    \"rows\": 18446744073709551615,\n    \"bytes\": 201,\n"
                           "    \"rejected\": 7,\n    \"files\": 3\n  },\n  \"seconds\": 1.25\n}\n"));
    cr_assert_null(strstr(text, "new_ring"));
    cr_assert_null(strstr(text, "\"wave\""));
    cr_assert_null(strstr(text, "\"from\""));

    /* identical apart from "seconds" */
    char *path2 = path_in(dir, "manifest2.json");
    m.seconds = 1234.5;
    cr_assert_eq(rs_manifest_write(&m, path2, &err), 0, "%s", err.msg);
    char *text2 = slurp(path2, NULL);
    char *s1 = strstr(text, "\"seconds\""), *s2 = strstr(text2, "\"seconds\"");
    cr_assert(s1 && s2 && s1 - text == s2 - text2);
    cr_assert(strncmp(text, text2, (size_t)(s1 - text)) == 0);
    cr_assert_str_eq(s2, "\"seconds\": 1234.5\n}\n");

    free(text);
    free(text2);
    rs_manifest_free(&m);
    rs_manifest_free(&r);
    cr_assert_null(r.kind);
    free(path);
    free(path2);
    remove_tree(dir);
    free(dir);
}

Test(manifest, moves_round_trip)
{
    char *dir = make_tmpdir();
    char *path = path_in(dir, "manifest.json");
    rs_manifest m, r;
    rs_error err = {0};
    memset(&m, 0, sizeof m);
    m.schema = 1;
    m.kind = strdup("moves");
    m.tool_version = strdup("0.1.0");
    m.ring_description = strdup("old\tring\n");
    m.ring_fingerprint = strdup("00000000000000000000000000000000");
    m.new_ring_description = strdup("new\tring\nnode\t\xe6\x9d\xb1\xe4\xba\xac\t5\n");
    m.new_ring_fingerprint = strdup("ffffffffffffffffffffffffffffffff");
    m.key = strdup("3");
    m.delimiter = '\t';
    m.header = 0;
    m.header_line = NULL;
    m.compress = 0;
    m.level = 0;
    m.keys_only = 1;
    m.nfiles = 2;
    m.files = calloc(2, sizeof *m.files);
    m.files[0] = (rs_manifest_file){.file = strdup("a--b.csv"), .from = strdup("a"), .to = strdup("b"), .rows = 5,
                                    .bytes = 50, .file_bytes = 50, .crc32 = 1, .wave = 3};
    m.files[1] = (rs_manifest_file){.file = strdup("c--d.csv"), .from = strdup("c\"\\"), .to = strdup("\xe6\x9d\xb1"),
                                    .crc32 = 2, .wave = 0};
    m.rows = 5;
    m.bytes = 50;
    m.seconds = 0.1;
    cr_assert_eq(rs_manifest_write(&m, path, &err), 0, "%s", err.msg);
    python_parses(path);
    cr_assert_eq(rs_manifest_read(&r, path, &err), 0, "%s", err.msg);
    assert_manifests_equal(&r, &m);
    char *text = slurp(path, NULL);
    cr_assert(strstr(text, "  \"new_ring\": {\n    \"fingerprint\": \"ffffffffffffffffffffffffffffffff\",\n"));
    cr_assert(strstr(text, "\"header\": null,"));
    cr_assert(strstr(text, "\"inputs\": [],"));
    cr_assert(strstr(text, "\"delimiter\": \"\\t\""));
    cr_assert(strstr(text, "\"compress\": \"none\""));
    cr_assert(strstr(text, "      \"to\": \"b\",\n      \"wave\": 3,\n"));
    cr_assert_eq(strstr(strstr(text, "c--d.csv"), "\"wave\""), NULL, "wave 0 is not written");
    cr_assert_null(strstr(text, "\"node\""));
    free(text);
    rs_manifest_free(&r);

    /* a delimiter byte >= 0x80 goes out as \u00xx and comes back as the byte */
    m.delimiter = (char)0xA7;
    cr_assert_eq(rs_manifest_write(&m, path, &err), 0, "%s", err.msg);
    text = slurp(path, NULL);
    cr_assert(strstr(text, "\"delimiter\": \"\\u00a7\""), "%s", text);
    cr_assert_eq(rs_manifest_read(&r, path, &err), 0, "%s", err.msg);
    cr_assert_eq(r.delimiter, (char)0xA7);
    free(text);
    rs_manifest_free(&r);
    rs_manifest_free(&m);
    free(path);
    remove_tree(dir);
    free(dir);
}

/* Writes the good manifest, applies sed to it, reads it. */
static int read_edited(const char *sed, rs_error *err)
{
    char *dir = make_tmpdir();
    char *path = path_in(dir, "manifest.json");
    rs_manifest m, r;
    fill_buckets(&m);
    rs_error werr = {0};
    cr_assert_eq(rs_manifest_write(&m, path, &werr), 0, "%s", werr.msg);
    rs_manifest_free(&m);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "sed -i -e '%s' '%s'", sed, path);
    cr_assert_eq(run(cmd, NULL, NULL), 0);
    rs_error_clear(err);
    int rc = rs_manifest_read(&r, path, err);
    if (rc == 0)
        rs_manifest_free(&r);
    else
        cr_assert(strncmp(err->msg, path, strlen(path)) == 0, "the message names the file: %s", err->msg);
    free(path);
    remove_tree(dir);
    free(dir);
    return rc;
}

Test(manifest, malformed_json_names_offset)
{
    char *dir = make_tmpdir();
    char *path = path_in(dir, "manifest.json");
    write_file(path, "{\n  \"schema\": 1,\n  \"kind\": \"buckets\"\n  \"x\": 1\n}\n");
    rs_manifest r;
    rs_error err = {0};
    cr_assert_eq(rs_manifest_read(&r, path, &err), -1);
    cr_assert_eq(err.code, RS_EXIT_DATA);
    char want[512];
    snprintf(want, sizeof want, "%s: JSON syntax error at byte 39 (line 4, column 3): ',' or '}' expected", path);
    cr_assert_str_eq(err.msg, want);
    cr_assert_null(r.kind, "nothing is left allocated");

    write_file(path, "[1, 2]");
    rs_error_clear(&err);
    cr_assert_eq(rs_manifest_read(&r, path, &err), -1);
    cr_assert_eq(err.code, RS_EXIT_DATA);
    cr_assert(strstr(err.msg, "not a manifest"), "%s", err.msg);

    char *missing = path_in(dir, "nope.json");
    rs_error_clear(&err);
    cr_assert_eq(rs_manifest_read(&r, missing, &err), -1);
    cr_assert_eq(err.code, RS_EXIT_IO);
    cr_assert(strstr(err.msg, "No such file"), "%s", err.msg);
    free(missing);
    free(path);
    remove_tree(dir);
    free(dir);
}

Test(manifest, schema_4_rejected_3_for_generations_and_2_needs_a_generation)
{
    rs_error err = {0};
    cr_assert_eq(read_edited("s/\"schema\": 1,/\"schema\": 4,/", &err), -1);
    cr_assert_eq(err.code, RS_EXIT_DATA);
    cr_assert(strstr(err.msg, "unsupported manifest schema 4 (this version of ringshard reads schemas 1 to 3)"), "%s",
              err.msg);
    cr_assert_eq(read_edited("s/\"schema\": 1,/\"schema\": 3, \"generation\": 2,/", &err), -1);
    cr_assert(strstr(err.msg, "\"schema\": 3 is for kind \"generation\" only"), "%s", err.msg);
    cr_assert_eq(read_edited("s/\"schema\": 1,/\"schema\": 2, \"generation\": 2, \"segment_header\": true,/", &err), -1);
    cr_assert(strstr(err.msg, "\"segment_header\": true needs schema 3"), "%s", err.msg);
    cr_assert_eq(read_edited("s/\"schema\": 1,/\"schema\": 2,/", &err), -1);
    cr_assert(strstr(err.msg, "\"generation\": missing"), "%s", err.msg);
    cr_assert_eq(read_edited("s/\"schema\": 1,/\"schema\": 2, \"generation\": 0,/", &err), -1);
    cr_assert(strstr(err.msg, "\"generation\": a generation number from 1 expected"), "%s", err.msg);
    cr_assert_eq(read_edited("s/\"schema\": 1,/\"schema\": 2, \"generation\": 7,/", &err), 0, "%s", err.msg);
    cr_assert_eq(read_edited("s/\"schema\": 1,/\"schema\": \"1\",/", &err), -1);
    cr_assert(strstr(err.msg, "\"schema\": a number expected"), "%s", err.msg);
    cr_assert_eq(read_edited("/\"schema\"/d", &err), -1);
    cr_assert(strstr(err.msg, "\"schema\": missing"), "%s", err.msg);
}

Test(manifest, bad_members)
{
    rs_error err = {0};
    /* unknown members are ignored; optional ones may go */
    cr_assert_eq(read_edited("s/\"schema\": 1,/\"schema\": 1, \"future\": {\"x\": [1]},/", &err), 0, "%s", err.msg);
    cr_assert_eq(read_edited("/\"seconds\"/d; /\"files\": 3$/{n;s/},/}/;}", &err), 0, "%s", err.msg);
    cr_assert_eq(read_edited("/\"crc32_hex\"/d; /\"crc32\": [0-9]*,$/{N;s/,\\n\\( *}\\)/\\n\\1/;}", &err), 0, "%s", err.msg);
    cr_assert_eq(read_edited("/\"stored_crc32\"/d; s/\"crc32_hex\": \"ffffffff\",/\"crc32_hex\": \"ffffffff\"/", &err), 0,
                 "%s", err.msg);

    static const struct {
        const char *sed, *msg;
    } cases[] = {
        {"s/\"crc32\": 3735928559,/\"crc32\": 3735928558,/", "\"files[0].crc32_hex\": does not match crc32"},
        {"s/\"crc32\": 3735928559,/\"crc32\": 4294967296,/", "\"files[0].crc32\": an unsigned integer up to 4294967295"},
        {"s/\"crc32_hex\": \"deadbeef\"/\"crc32_hex\": \"DEADBEEF\"/", "\"files[0].crc32_hex\": does not match"},
        {"/\"file_bytes\": 2,/d", "\"files[1].file_bytes\": missing"},
        {"s/\"stored_crc32\": 2309737967/\"stored_crc32\": 4294967296/",
         "\"files[1].stored_crc32\": an unsigned integer up to 4294967295"},
        {"s/\"stored_crc32\": 2309737967/\"stored_crc32\": \"89abcdef\"/", "\"files[1].stored_crc32\": a number expected"},
        {"s/\"rows\": 10,/\"rows\": -10,/", "\"files[0].rows\": an unsigned integer"},
        {"s/\"rows\": 10,/\"rows\": 1.0,/", "\"files[0].rows\": an unsigned integer"},
        {"s/\"file\": \"empty.csv.gz\"/\"file\": \"..\\/x\"/", "\"files[2].file\": not a plain file name"},
        {"s/\"file\": \"empty.csv.gz\"/\"file\": \"..\"/", "\"files[2].file\": not a plain file name"},
        {"s/\"kind\": \"buckets\"/\"kind\": \"bucket\"/", "\"kind\": \"buckets\" or \"moves\" expected"},
        {"s/\"kind\": \"buckets\"/\"kind\": \"moves\"/", "\"new_ring\": missing"},
        /* (zstd is a codec too) */
        {"s/\"compress\": \"gzip\"/\"compress\": \"xz\"/", "\"options.compress\": \"gzip\", \"zstd\" or \"none\" expected"},
        {"s/\"delimiter\": \",\"/\"delimiter\": \",,\"/", "\"options.delimiter\": one character expected"},
        {"s/\"header\": true/\"header\": 1/", "\"options.header\": a boolean expected, found a number"},
        {"s/\"files\": 3/\"files\": 4/", "\"totals.files\": does not match"},
        {"s/\"node\": \"empty\"/\"node\": \"e\\\\u0000\"/", "\"files[2].node\": contains a NUL"},
        {"s/\"path\": \"-\"/\"path\": null/", "\"inputs[1].path\": a string expected, found null"},
        {"/\"fingerprint\"/d", "\"ring.fingerprint\": missing"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_assert_eq(read_edited(cases[i].sed, &err), -1, "case %zu (%s) accepted", i, cases[i].sed);
        cr_assert_eq(err.code, RS_EXIT_DATA, "case %zu", i);
        cr_assert(strstr(err.msg, cases[i].msg), "case %zu: %s", i, err.msg);
    }
}

Test(manifest, write_failure)
{
    rs_manifest m;
    rs_error err = {0};
    fill_buckets(&m);
    cr_assert_eq(rs_manifest_write(&m, "/nonexistent-dir-rs/manifest.json", &err), -1);
    cr_assert_eq(err.code, RS_EXIT_IO);
    cr_assert(strstr(err.msg, "/nonexistent-dir-rs/manifest.json: No such file"), "%s", err.msg);
    rs_error_clear(&err);
    cr_assert_eq(rs_manifest_write(&m, "/dev/full", &err), -1);
    cr_assert_eq(err.code, RS_EXIT_IO);
    cr_assert(strstr(err.msg, "No space left"), "%s", err.msg);
    rs_manifest_free(&m);
}

/* ---- output directories ---- */

Test(outdir, begin_commit_publishes)
{
    char *dir = make_tmpdir();
    char *final = path_in(dir, "out");
    rs_outdir od;
    rs_error err = {0};
    cr_assert_eq(rs_outdir_begin(&od, final, 0, &err), 0, "%s", err.msg);
    cr_assert(strncmp(od.tmp, final, strlen(final)) == 0);
    const char *suffix = od.tmp + strlen(final);
    char want[64];
    int n = snprintf(want, sizeof want, ".ringshard-tmp.%ld.", (long)getpid());
    cr_assert(strncmp(suffix, want, (size_t)n) == 0, "%s", od.tmp);
    cr_assert_eq(strlen(suffix + n), 8);
    cr_assert_eq(strspn(suffix + n, "0123456789abcdef"), 8);
    struct stat st;
    cr_assert_eq(stat(od.tmp, &st), 0);
    cr_assert(S_ISDIR(st.st_mode));
    cr_assert(!exists(final), "nothing published before commit");

    char *p = rs_outdir_path(&od, "a.csv");
    write_file(p, "x,y\n");
    free(p);
    p = rs_outdir_path(&od, "sub");
    mkdir(p, 0755);
    free(p);
    p = rs_outdir_path(&od, "sub/b.csv");
    write_file(p, "z\n");
    free(p);
    cr_assert_eq(rs_outdir_commit(&od, &err), 0, "%s", err.msg);
    cr_assert_null(od.tmp);
    cr_assert_null(od.final);
    rs_outdir_abort(&od);   /* harmless after commit */

    char *a = path_in(final, "a.csv"), *b = path_in(final, "sub/b.csv");
    char *ta = slurp(a, NULL), *tb = slurp(b, NULL);
    cr_assert_str_eq(ta, "x,y\n");
    cr_assert_str_eq(tb, "z\n");
    cr_assert_eq(count_entries(dir, ".ringshard-"), 0);
    free(ta);
    free(tb);
    free(a);
    free(b);
    free(final);
    remove_tree(dir);
    free(dir);
}

Test(outdir, trailing_slash)
{
    char *dir = make_tmpdir();
    char *final = path_in(dir, "out//");
    rs_outdir od;
    rs_error err = {0};
    cr_assert_eq(rs_outdir_begin(&od, final, 0, &err), 0, "%s", err.msg);
    char *want = path_in(dir, "out");
    cr_assert_str_eq(od.final, want);
    cr_assert_eq(rs_outdir_commit(&od, &err), 0, "%s", err.msg);
    cr_assert(exists(want));
    free(want);
    free(final);
    remove_tree(dir);
    free(dir);
}

static char *make_previous(const char *dir)
{
    char *final = path_in(dir, "out");
    cr_assert_eq(mkdir(final, 0755), 0);
    char *p = path_in(final, "old.txt");
    write_file(p, "previous\n");
    free(p);
    p = path_in(final, "manifest.json");   /* a ringshard output: --force may replace it */
    write_file(p, "{\"schema\": 1, \"kind\": \"buckets\", \"tool\": {\"name\": \"ringshard\"}}\n");
    free(p);
    return final;
}

static void assert_previous(const char *final)
{
    char *p = path_in(final, "old.txt");
    char *t = slurp(p, NULL);
    cr_assert(t != NULL && strcmp(t, "previous\n") == 0, "previous output intact");
    free(t);
    free(p);
}

Test(outdir, exists_without_force)
{
    char *dir = make_tmpdir();
    char *final = make_previous(dir);
    rs_outdir od;
    rs_error err = {0};
    cr_assert_eq(rs_outdir_begin(&od, final, 0, &err), -1);
    cr_assert_eq(err.code, RS_EXIT_EXISTS);
    char want[512];
    snprintf(want, sizeof want, "%s: output exists (use --force to replace it)", final);
    cr_assert_str_eq(err.msg, want);
    cr_assert_null(od.tmp);
    assert_previous(final);
    cr_assert_eq(count_entries(dir, ".ringshard-"), 0);
    free(final);
    remove_tree(dir);
    free(dir);
}

Test(outdir, existing_file_not_replaced_even_with_force)
{
    char *dir = make_tmpdir();
    char *final = path_in(dir, "out");
    write_file(final, "a file\n");
    rs_outdir od;
    rs_error err = {0};
    cr_assert_eq(rs_outdir_begin(&od, final, 1, &err), -1);
    cr_assert_eq(err.code, RS_EXIT_EXISTS);
    cr_assert(strstr(err.msg, "is not a directory"), "%s", err.msg);
    char *t = slurp(final, NULL);
    cr_assert_str_eq(t, "a file\n");
    free(t);
    free(final);
    remove_tree(dir);
    free(dir);
}

Test(outdir, force_replaces)
{
    char *dir = make_tmpdir();
    char *final = make_previous(dir);
    rs_outdir od;
    rs_error err = {0};
    cr_assert_eq(rs_outdir_begin(&od, final, 1, &err), 0, "%s", err.msg);
    assert_previous(final);
    char *p = rs_outdir_path(&od, "new.txt");
    write_file(p, "new\n");
    free(p);
    cr_assert_eq(rs_outdir_commit(&od, &err), 0, "%s", err.msg);
    char *old = path_in(final, "old.txt"), *nw = path_in(final, "new.txt");
    cr_assert(!exists(old), "old content gone");
    char *t = slurp(nw, NULL);
    cr_assert_str_eq(t, "new\n");
    cr_assert_eq(count_entries(dir, ".ringshard-"), 0, "no temporary or old directory left");
    free(t);
    free(old);
    free(nw);
    free(final);
    remove_tree(dir);
    free(dir);
}

Test(outdir, abort_keeps_previous)
{
    char *dir = make_tmpdir();
    char *final = make_previous(dir);
    rs_outdir od;
    rs_error err = {0};
    cr_assert_eq(rs_outdir_begin(&od, final, 1, &err), 0, "%s", err.msg);
    char *p = rs_outdir_path(&od, "new.txt");
    write_file(p, "new\n");
    free(p);
    /* a symlink inside the temporary directory is removed, not followed */
    char *outside = path_in(dir, "outside.txt");
    write_file(outside, "keep me\n");
    p = rs_outdir_path(&od, "link");
    cr_assert_eq(symlink(dir, p), 0);
    free(p);
    rs_outdir_abort(&od);
    cr_assert_null(od.tmp);
    assert_previous(final);
    char *nw = path_in(final, "new.txt");
    cr_assert(!exists(nw));
    cr_assert(exists(outside), "the symlink's target survives");
    cr_assert_eq(count_entries(dir, ".ringshard-"), 0);
    rs_outdir_abort(&od);   /* twice is harmless */
    free(nw);
    free(outside);
    free(final);
    remove_tree(dir);
    free(dir);
}

Test(outdir, output_appearing_meanwhile_is_not_replaced_without_force)
{
    char *dir = make_tmpdir();
    char *final = path_in(dir, "out");
    rs_outdir od;
    rs_error err = {0};
    cr_assert_eq(rs_outdir_begin(&od, final, 0, &err), 0, "%s", err.msg);
    free(make_previous(dir));
    cr_assert_eq(rs_outdir_commit(&od, &err), -1);
    cr_assert_eq(err.code, RS_EXIT_EXISTS);
    assert_previous(final);
    cr_assert_eq(count_entries(dir, ".ringshard-"), 0, "the temporary directory is removed");
    free(final);
    remove_tree(dir);
    free(dir);
}

static pid_t dead_pid(void)
{
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0)
        _exit(0);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    return pid;
}

Test(outdir, stale_temporaries)
{
    char *dir = make_tmpdir();
    char *final = path_in(dir, "out");
    char name[256];
    pid_t dead = dead_pid();

    snprintf(name, sizeof name, "%s/out.ringshard-tmp.%ld.0badf00d", dir, (long)dead);
    char *stale = strdup(name);
    cr_assert_eq(mkdir(stale, 0755), 0);
    snprintf(name, sizeof name, "%s/sub", stale);
    cr_assert_eq(mkdir(name, 0755), 0);
    snprintf(name, sizeof name, "%s/sub/f.csv", stale);
    write_file(name, "x\n");
    char *outside = path_in(dir, "outside.txt");
    write_file(outside, "keep me\n");
    snprintf(name, sizeof name, "%s/link", stale);
    cr_assert_eq(symlink(dir, name), 0);

    snprintf(name, sizeof name, "%s/out.ringshard-tmp.%ld.cafebabe", dir, (long)getpid());
    char *live = strdup(name);
    cr_assert_eq(mkdir(live, 0755), 0);
    snprintf(name, sizeof name, "%s/other.ringshard-tmp.%ld.0badf00d", dir, (long)dead);
    char *other = strdup(name);
    cr_assert_eq(mkdir(other, 0755), 0);
    snprintf(name, sizeof name, "%s/out.ringshard-tmp.%ld.", dir, (long)dead);
    char *no_random = strdup(name);
    cr_assert_eq(mkdir(no_random, 0755), 0);

    rs_outdir od;
    rs_error err = {0};
    cr_assert_eq(rs_outdir_begin(&od, final, 0, &err), 0, "%s", err.msg);
    cr_assert(!exists(stale), "the dead process's directory is removed");
    cr_assert(exists(live), "the live process's directory is kept");
    cr_assert(exists(other), "another output's directory is not touched");
    cr_assert(exists(no_random), "a name that does not match the pattern is not touched");
    cr_assert(exists(outside));
    rs_outdir_abort(&od);
    cr_assert(exists(live));
    free(stale);
    free(live);
    free(other);
    free(no_random);
    free(outside);
    free(final);
    remove_tree(dir);
    free(dir);
}

Test(outdir, stale_old_directory)
{
    char *dir = make_tmpdir();
    char *final = make_previous(dir);
    char name[256];
    pid_t dead = dead_pid();
    snprintf(name, sizeof name, "%s.ringshard-old.%ld", final, (long)dead);
    cr_assert_eq(mkdir(name, 0755), 0);
    rs_outdir od;
    rs_error err = {0};
    cr_assert_eq(rs_outdir_begin(&od, final, 1, &err), 0, "%s", err.msg);
    cr_assert(!exists(name), "a finished replacement's leftover is removed");
    rs_outdir_abort(&od);
    assert_previous(final);

    /* without final, the old directory is the previous output of a
     * replacement killed between its two renames: put back as final */
    cr_assert_eq(rename(final, name), 0);
    cr_assert_eq(rs_outdir_begin(&od, final, 0, &err), -1);
    cr_assert_eq(err.code, RS_EXIT_EXISTS, "restored, so final exists: %s", err.msg);
    cr_assert(!exists(name));
    assert_previous(final);
    free(final);
    remove_tree(dir);
    free(dir);
}

Test(outdir, unusable_parent)
{
    char *dir = make_tmpdir();
    char *file = path_in(dir, "file");
    write_file(file, "x\n");
    char *under_file = path_in(file, "out");
    rs_outdir od;
    rs_error err = {0};
    cr_assert_eq(rs_outdir_begin(&od, under_file, 0, &err), -1);
    cr_assert_eq(err.code, RS_EXIT_IO);
    cr_assert(strstr(err.msg, under_file) && strstr(err.msg, strerror(ENOTDIR)), "%s", err.msg);
    cr_assert_null(od.tmp);

    char *missing = path_in(dir, "no/such/out");
    rs_error_clear(&err);
    cr_assert_eq(rs_outdir_begin(&od, missing, 1, &err), -1);
    cr_assert_eq(err.code, RS_EXIT_IO);
    cr_assert(strstr(err.msg, missing) && strstr(err.msg, strerror(ENOENT)), "%s", err.msg);

    rs_error_clear(&err);
    cr_assert_eq(rs_outdir_begin(&od, "/proc/ringshard-out", 0, &err), -1);
    cr_assert_eq(err.code, RS_EXIT_IO, "%s", err.msg);

    rs_error_clear(&err);
    cr_assert_eq(rs_outdir_begin(&od, "..", 1, &err), -1);
    cr_assert_eq(err.code, RS_EXIT_USAGE);
    cr_assert_eq(count_entries(dir, ".ringshard-"), 0);
    free(missing);
    free(under_file);
    free(file);
    remove_tree(dir);
    free(dir);
}

