/* The JSON writer (ringshard/json.h) and reader (util/json_read.h):
 * escapes, numbers, structure, errors with their offsets; Python's json
 * module reads what the writer writes. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ringshard/json.h"
#include "support.h"
#include "util/json_read.h"

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
    char *path = path_dup(dir, "r.json");
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
    assert_python_json(path);

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
