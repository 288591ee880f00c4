/* A small recursive-descent JSON reader building a DOM (util/json_read.h).
 * Recursion is bounded by RS_JSON_MAX_DEPTH. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/json_read.h"

size_t rs_utf8_seq_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    if (c < 0xC2)   /* continuation byte, or overlong 2-byte lead */
        return 0;
#define CONT(i) (n > (i) && (s[i] & 0xC0) == 0x80)
    if (c < 0xE0)
        return CONT(1) ? 2 : 0;
    if (c < 0xF0) {
        if (!CONT(1) || !CONT(2))
            return 0;
        if (c == 0xE0 && s[1] < 0xA0)   /* overlong */
            return 0;
        if (c == 0xED && s[1] > 0x9F)   /* surrogates U+D800..DFFF */
            return 0;
        return 3;
    }
    if (c < 0xF5) {
        if (!CONT(1) || !CONT(2) || !CONT(3))
            return 0;
        if (c == 0xF0 && s[1] < 0x90)   /* overlong */
            return 0;
        if (c == 0xF4 && s[1] > 0x8F)   /* > U+10FFFF */
            return 0;
        return 4;
    }
#undef CONT
    return 0;
}

typedef struct {
    const char *p;      /* the text */
    size_t len, pos;
    const char *name;
    rs_error *err;
    size_t err_offset;
    int failed;
} parser;

static int fail_at(parser *ps, size_t off, const char *what)
{
    if (ps->failed)
        return -1;
    ps->failed = 1;
    ps->err_offset = off;
    size_t line = 1, col = 1;
    for (size_t i = 0; i < off && i < ps->len; i++) {
        if (ps->p[i] == '\n') {
            line++;
            col = 1;
        } else if (((unsigned char)ps->p[i] & 0xC0) != 0x80) {
            col++;   /* columns count characters, not bytes */
        }
    }
    rs_error_set(ps->err, RS_EXIT_DATA, "%s: JSON syntax error at byte %zu (line %zu, column %zu): %s",
                 ps->name, off, line, col, what);
    return -1;
}

static int oom(parser *ps)
{
    if (!ps->failed) {
        ps->failed = 1;
        ps->err_offset = ps->pos;
        rs_error_set(ps->err, RS_EXIT_IO, "%s: out of memory reading JSON", ps->name);
    }
    return -1;
}

static void skip_ws(parser *ps)
{
    while (ps->pos < ps->len) {
        char c = ps->p[ps->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            break;
        ps->pos++;
    }
}

static int peek(parser *ps)
{
    return ps->pos < ps->len ? (unsigned char)ps->p[ps->pos] : -1;
}

static int parse_value(parser *ps, rs_jv *v, int depth);

static int hex4(parser *ps, size_t at, unsigned *out)
{
    unsigned v = 0;
    for (size_t i = 0; i < 4; i++) {
        if (at + i >= ps->len)
            return fail_at(ps, ps->len, "unexpected end of input in a \\u escape");
        char c = ps->p[at + i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return fail_at(ps, at + i, "bad hex digit in a \\u escape");
    }
    *out = v;
    return 0;
}

static size_t put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* At the opening quote. The decoded string is never longer than the
 * literal (an escape of k bytes decodes to at most k bytes). */
static int parse_string(parser *ps, char **out, size_t *outlen)
{
    size_t start = ++ps->pos;   /* after '"' */
    size_t end = start;
    /* find the closing quote to size the buffer */
    while (end < ps->len && ps->p[end] != '"') {
        if (ps->p[end] == '\\')
            end++;
        end++;
    }
    if (end >= ps->len)
        return fail_at(ps, ps->len, "unterminated string");
    char *o = malloc(end - start + 1);
    if (o == NULL)
        return oom(ps);
    size_t n = 0;
    const unsigned char *p = (const unsigned char *)ps->p;
    size_t i = start;
    while (i < end) {
        unsigned c = p[i];
        if (c < 0x20) {
            free(o);
            return fail_at(ps, i, "control character in a string (must be escaped)");
        }
        if (c >= 0x80) {
            size_t k = rs_utf8_seq_len(p + i, end - i);
            if (k == 0) {
                free(o);
                return fail_at(ps, i, "malformed UTF-8 in a string");
            }
            memcpy(o + n, p + i, k);
            n += k;
            i += k;
            continue;
        }
        if (c != '\\') {
            o[n++] = (char)c;
            i++;
            continue;
        }
        size_t esc_at = i;
        c = p[i + 1];   /* i + 1 < end: the scan above skipped it */
        i += 2;
        switch (c) {
        case '"': o[n++] = '"'; break;
        case '\\': o[n++] = '\\'; break;
        case '/': o[n++] = '/'; break;
        case 'b': o[n++] = '\b'; break;
        case 'f': o[n++] = '\f'; break;
        case 'n': o[n++] = '\n'; break;
        case 'r': o[n++] = '\r'; break;
        case 't': o[n++] = '\t'; break;
        case 'u': {
            unsigned cp, lo;
            if (hex4(ps, i, &cp) != 0) {
                free(o);
                return -1;
            }
            i += 4;
            if (cp >= 0xDC00 && cp <= 0xDFFF) {
                free(o);
                return fail_at(ps, esc_at, "unpaired low surrogate in a \\u escape");
            }
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (i + 1 >= end || p[i] != '\\' || p[i + 1] != 'u') {
                    free(o);
                    return fail_at(ps, esc_at, "unpaired high surrogate in a \\u escape");
                }
                if (hex4(ps, i + 2, &lo) != 0) {
                    free(o);
                    return -1;
                }
                if (lo < 0xDC00 || lo > 0xDFFF) {
                    free(o);
                    return fail_at(ps, esc_at, "high surrogate not followed by a low surrogate");
                }
                i += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            n += put_utf8(o + n, cp);
            break;
        }
        default:
            free(o);
            return fail_at(ps, esc_at, "bad escape in a string");
        }
    }
    o[n] = '\0';
    ps->pos = end + 1;
    *out = o;
    *outlen = n;
    return 0;
}

static int is_digit(int c) { return c >= '0' && c <= '9'; }

static int parse_number(parser *ps, rs_jv *v)
{
    size_t start = ps->pos, i = start;
    const char *p = ps->p;
    if (i < ps->len && p[i] == '-')
        i++;
    if (i >= ps->len || !is_digit((unsigned char)p[i]))
        return fail_at(ps, i, "bad number: digit expected");
    if (p[i] == '0') {
        i++;
        if (i < ps->len && is_digit((unsigned char)p[i]))
            return fail_at(ps, i, "bad number: leading zero");
    } else {
        while (i < ps->len && is_digit((unsigned char)p[i]))
            i++;
    }
    if (i < ps->len && p[i] == '.') {
        i++;
        if (i >= ps->len || !is_digit((unsigned char)p[i]))
            return fail_at(ps, i, "bad number: digit expected after '.'");
        while (i < ps->len && is_digit((unsigned char)p[i]))
            i++;
    }
    if (i < ps->len && (p[i] == 'e' || p[i] == 'E')) {
        i++;
        if (i < ps->len && (p[i] == '+' || p[i] == '-'))
            i++;
        if (i >= ps->len || !is_digit((unsigned char)p[i]))
            return fail_at(ps, i, "bad number: digit expected in the exponent");
        while (i < ps->len && is_digit((unsigned char)p[i]))
            i++;
    }
    v->type = RS_JV_NUMBER;
    v->len = i - start;
    v->str = malloc(v->len + 1);
    if (v->str == NULL)
        return oom(ps);
    memcpy(v->str, p + start, v->len);
    v->str[v->len] = '\0';
    ps->pos = i;
    return 0;
}

static int literal(parser *ps, const char *word)
{
    size_t n = strlen(word);
    if (ps->len - ps->pos < n || memcmp(ps->p + ps->pos, word, n) != 0)
        return fail_at(ps, ps->pos, "unexpected character (a value was expected)");
    ps->pos += n;
    return 0;
}

static int parse_array(parser *ps, rs_jv *v, int depth)
{
    size_t cap = 0;
    v->type = RS_JV_ARRAY;
    ps->pos++;   /* '[' */
    skip_ws(ps);
    if (peek(ps) == ']') {
        ps->pos++;
        return 0;
    }
    for (;;) {
        if (v->n == cap) {
            size_t nc = cap ? cap * 2 : 8;
            rs_jv *items = realloc(v->items, nc * sizeof *items);
            if (items == NULL)
                return oom(ps);
            v->items = items;
            cap = nc;
        }
        rs_jv *item = &v->items[v->n];
        memset(item, 0, sizeof *item);
        v->n++;
        if (parse_value(ps, item, depth + 1) != 0)
            return -1;
        skip_ws(ps);
        int c = peek(ps);
        if (c == ',') {
            ps->pos++;
            continue;
        }
        if (c == ']') {
            ps->pos++;
            return 0;
        }
        return fail_at(ps, ps->pos, c < 0 ? "unexpected end of input in an array" : "',' or ']' expected");
    }
}

static int parse_object(parser *ps, rs_jv *v, int depth)
{
    size_t cap = 0;
    v->type = RS_JV_OBJECT;
    ps->pos++;   /* '{' */
    skip_ws(ps);
    if (peek(ps) == '}') {
        ps->pos++;
        return 0;
    }
    for (;;) {
        skip_ws(ps);
        int c = peek(ps);
        if (c != '"')
            return fail_at(ps, ps->pos, c < 0 ? "unexpected end of input in an object" : "a member name (string) expected");
        if (v->n == cap) {
            size_t nc = cap ? cap * 2 : 8;
            rs_jv_member *m = realloc(v->members, nc * sizeof *m);
            if (m == NULL)
                return oom(ps);
            v->members = m;
            cap = nc;
        }
        rs_jv_member *m = &v->members[v->n];
        memset(m, 0, sizeof *m);
        v->n++;
        if (parse_string(ps, &m->key, &m->keylen) != 0)
            return -1;
        skip_ws(ps);
        if (peek(ps) != ':')
            return fail_at(ps, ps->pos, peek(ps) < 0 ? "unexpected end of input in an object" : "':' expected");
        ps->pos++;
        if (parse_value(ps, &m->value, depth + 1) != 0)
            return -1;
        skip_ws(ps);
        c = peek(ps);
        if (c == ',') {
            ps->pos++;
            continue;
        }
        if (c == '}') {
            ps->pos++;
            return 0;
        }
        return fail_at(ps, ps->pos, c < 0 ? "unexpected end of input in an object" : "',' or '}' expected");
    }
}

static int parse_value(parser *ps, rs_jv *v, int depth)
{
    skip_ws(ps);
    v->offset = ps->pos;
    int c = peek(ps);
    switch (c) {
    case -1:
        return fail_at(ps, ps->pos, "unexpected end of input (a value was expected)");
    case '{':
    case '[':
        if (depth >= RS_JSON_MAX_DEPTH)
            return fail_at(ps, ps->pos, "nesting too deep");
        return c == '{' ? parse_object(ps, v, depth) : parse_array(ps, v, depth);
    case '"':
        v->type = RS_JV_STRING;
        return parse_string(ps, &v->str, &v->len);
    case 't':
        v->type = RS_JV_BOOL;
        v->boolean = 1;
        return literal(ps, "true");
    case 'f':
        v->type = RS_JV_BOOL;
        return literal(ps, "false");
    case 'n':
        v->type = RS_JV_NULL;
        return literal(ps, "null");
    default:
        if (c == '-' || is_digit(c))
            return parse_number(ps, v);
        return fail_at(ps, ps->pos, "unexpected character (a value was expected)");
    }
}

int rs_jv_parse(rs_jv *root, const char *text, size_t len, const char *name, rs_error *err,
                size_t *err_offset)
{
    parser ps = {.p = text, .len = len, .name = name ? name : "JSON", .err = err};
    memset(root, 0, sizeof *root);
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
        ps.pos = 3;
    if (parse_value(&ps, root, 0) == 0) {
        skip_ws(&ps);
        if (ps.pos < ps.len)
            fail_at(&ps, ps.pos, "unexpected data after the JSON value");
    }
    if (ps.failed) {
        rs_jv_free(root);
        if (err_offset)
            *err_offset = ps.err_offset;
        return -1;
    }
    return 0;
}

void rs_jv_free(rs_jv *v)
{
    if (v == NULL)
        return;
    free(v->str);
    for (size_t i = 0; v->type == RS_JV_ARRAY && i < v->n; i++)
        rs_jv_free(&v->items[i]);
    for (size_t i = 0; v->type == RS_JV_OBJECT && i < v->n; i++) {
        free(v->members[i].key);
        rs_jv_free(&v->members[i].value);
    }
    free(v->items);
    free(v->members);
    memset(v, 0, sizeof *v);
}

const rs_jv *rs_jv_get(const rs_jv *v, const char *key)
{
    if (v == NULL || v->type != RS_JV_OBJECT)
        return NULL;
    size_t kl = strlen(key);
    for (size_t i = v->n; i-- > 0;)
        if (v->members[i].keylen == kl && memcmp(v->members[i].key, key, kl) == 0)
            return &v->members[i].value;
    return NULL;
}

int rs_jv_u64(const rs_jv *v, uint64_t *out)
{
    if (v == NULL || v->type != RS_JV_NUMBER || v->len == 0 || v->len > 20)
        return -1;
    uint64_t x = 0;
    for (size_t i = 0; i < v->len; i++) {
        char c = v->str[i];
        if (c < '0' || c > '9')
            return -1;
        unsigned d = (unsigned)(c - '0');
        if (x > (UINT64_MAX - d) / 10)
            return -1;
        x = x * 10 + d;
    }
    *out = x;
    return 0;
}
