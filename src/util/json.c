/* The streaming JSON writer (ringshard/json.h).
 *
 * State: j->first[d] holds flags for nesting level d (0 = top level):
 *   ST_FIRST  nothing written at this level yet (no comma needed)
 *   ST_KEY    a key was written; the next value is its member value
 *   ST_OBJ    the level is an object (keys required) rather than an array
 * A value is preceded by ",", a newline and indentation as needed; a key
 * takes care of that itself and the value after it follows ": " directly.
 *
 * Strings: RFC 8259 escapes; well-formed UTF-8 passes through; a byte that
 * is not part of a well-formed sequence is written as \u00xx of the byte
 * (lossy, documented in the header). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "ringshard/json.h"
#include "util/json_read.h"

enum { ST_FIRST = 1, ST_KEY = 2, ST_OBJ = 4 };
#define MAX_LEVEL ((int)(sizeof ((rs_json *)0)->first / sizeof ((rs_json *)0)->first[0]))

void rs_json_init(rs_json *j, FILE *f, int pretty)
{
    memset(j, 0, sizeof *j);
    j->f = f;
    j->pretty = pretty != 0;
    j->first[0] = ST_FIRST;
}

static void newline_indent(rs_json *j, int level)
{
    putc('\n', j->f);
    for (int i = 0; i < level; i++)
        fputs("  ", j->f);
}

/* Separator before a value. Returns 0, or -1 (error set) on misuse. */
static int before_value(rs_json *j)
{
    if (j->error)
        return -1;
    int *st = &j->first[j->depth];
    if (*st & ST_KEY) {
        *st &= ~ST_KEY;
        return 0;
    }
    if (*st & ST_OBJ) {   /* a value in an object needs a key first */
        j->error = 1;
        return -1;
    }
    if (j->depth > 0) {
        if (!(*st & ST_FIRST))
            putc(',', j->f);
        if (j->pretty)
            newline_indent(j, j->depth);
    } else if (!(*st & ST_FIRST)) {
        putc('\n', j->f);   /* several top-level values: one per line */
    }
    *st &= ~ST_FIRST;
    return 0;
}

static void write_escaped(rs_json *j, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, run = 0;   /* p[run..i) passes through */
    putc('"', j->f);
    while (i < n) {
        unsigned c = p[i];
        size_t len = 1;
        const char *esc = NULL;
        char ubuf[7];
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
            i++;
            continue;
        }
        if (c >= 0x80) {
            len = rs_utf8_seq_len(p + i, n - i);
            if (len > 0) {
                i += len;
                continue;
            }
            len = 1;
        }
        switch (c) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        default:   /* other control characters and invalid UTF-8 bytes */
            memcpy(ubuf, "\\u00", 4);
            ubuf[4] = hex[c >> 4];
            ubuf[5] = hex[c & 15];
            ubuf[6] = '\0';
            esc = ubuf;
        }
        if (i > run)
            fwrite(p + run, 1, i - run, j->f);
        fputs(esc, j->f);
        i += len;
        run = i;
    }
    if (n > run)
        fwrite(p + run, 1, n - run, j->f);
    putc('"', j->f);
}

static void begin(rs_json *j, int obj)
{
    if (before_value(j) != 0)
        return;
    if (j->depth + 1 >= MAX_LEVEL) {
        j->error = 1;
        return;
    }
    putc(obj ? '{' : '[', j->f);
    j->depth++;
    j->first[j->depth] = ST_FIRST | (obj ? ST_OBJ : 0);
}

static void end(rs_json *j, int obj)
{
    if (j->error)
        return;
    int st = j->first[j->depth];
    if (j->depth == 0 || !(st & ST_OBJ) != !obj || (st & ST_KEY)) {
        j->error = 1;
        return;
    }
    j->depth--;
    if (!(st & ST_FIRST) && j->pretty)
        newline_indent(j, j->depth);
    putc(obj ? '}' : ']', j->f);
}

void rs_json_object_begin(rs_json *j) { begin(j, 1); }
void rs_json_object_end(rs_json *j) { end(j, 1); }
void rs_json_array_begin(rs_json *j) { begin(j, 0); }
void rs_json_array_end(rs_json *j) { end(j, 0); }

void rs_json_key(rs_json *j, const char *key)
{
    if (j->error)
        return;
    int *st = &j->first[j->depth];
    if (!(*st & ST_OBJ) || (*st & ST_KEY) || key == NULL) {
        j->error = 1;
        return;
    }
    if (!(*st & ST_FIRST))
        putc(',', j->f);
    if (j->pretty)
        newline_indent(j, j->depth);
    write_escaped(j, key, strlen(key));
    fputs(j->pretty ? ": " : ":", j->f);
    *st = (*st & ~ST_FIRST) | ST_KEY;
}

void rs_json_string_n(rs_json *j, const char *s, size_t n)
{
    if (s == NULL) {
        rs_json_null(j);
        return;
    }
    if (before_value(j) == 0)
        write_escaped(j, s, n);
}

void rs_json_string(rs_json *j, const char *s)
{
    rs_json_string_n(j, s, s ? strlen(s) : 0);
}

void rs_json_u64(rs_json *j, uint64_t v)
{
    if (before_value(j) == 0)
        fprintf(j->f, "%" PRIu64, v);
}

void rs_json_i64(rs_json *j, int64_t v)
{
    if (before_value(j) == 0)
        fprintf(j->f, "%" PRId64, v);
}

void rs_json_double(rs_json *j, double v)
{
    if (before_value(j) != 0)
        return;
    if (!isfinite(v)) {
        fputs("null", j->f);
        return;
    }
    char buf[64];
    if (v == floor(v) && fabs(v) <= 9007199254740992.0)   /* 2^53 */
        snprintf(buf, sizeof buf, "%.0f", v);
    else
        snprintf(buf, sizeof buf, "%.17g", v);
    for (char *p = buf; *p; p++)   /* a locale's decimal comma */
        if (*p == ',')
            *p = '.';
    fputs(buf, j->f);
}

void rs_json_bool(rs_json *j, int v)
{
    if (before_value(j) == 0)
        fputs(v ? "true" : "false", j->f);
}

void rs_json_null(rs_json *j)
{
    if (before_value(j) == 0)
        fputs("null", j->f);
}

void rs_json_raw(rs_json *j, const char *text)
{
    if (text == NULL) {
        rs_json_null(j);
        return;
    }
    if (before_value(j) == 0)
        fputs(text, j->f);
}

int rs_json_finish(rs_json *j)
{
    if (j->depth != 0 || (j->first[0] & ST_FIRST))   /* unbalanced, or no value */
        j->error = 1;
    if (fflush(j->f) != 0 || ferror(j->f))
        j->error = 1;
    return j->error ? -1 : 0;
}
