/* util/text.c - escaping input bytes for messages, and the text rule
 * (ringshard/text.h). */
#include "ringshard/text.h"
#include <stdio.h>
#include <string.h>

/* The length of the valid UTF-8 sequence at p[0..n) (2 to 4; p[0] >= 0x80),
 * 0 when it is not one, or -1 when p ends inside what could still be one. */
static int utf8_seq(const unsigned char *p, size_t n)
{
    unsigned c = p[0];
    int k = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (k == 0)
        return 0;
    /* the second byte's range rules out overlong forms, surrogates and
     * code points above U+10FFFF (RFC 3629, section 4) */
    unsigned lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80;
    unsigned hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;
    for (int i = 1; i < k; i++) {
        if ((size_t)i >= n)
            return -1;
        unsigned b = p[i];
        if (i == 1 ? b < lo || b > hi : (b & 0xc0) != 0x80)
            return 0;
    }
    return k;
}

/* 1 for a C1 control (U+0080-U+009F: C2 80 to C2 9F), which some
 * terminals obey as they obey ESC. */
static int c1_control(const unsigned char *p)
{
    return p[0] == 0xc2 && p[1] <= 0x9f;
}

/* Writes the shown form of the unit at p[0..n) (a byte or a UTF-8
 * sequence) into o (room for 4 bytes); *used gets the input bytes it
 * covers. Returns the bytes written. */
static size_t unit(const unsigned char *p, size_t n, char quote, char *o, size_t *used)
{
    static const char hex[] = "0123456789abcdef";
    unsigned c = p[0];
    *used = 1;
    if (c >= 0x80) {
        int k = utf8_seq(p, n);
        if (k > 0 && !c1_control(p)) {
            memcpy(o, p, (size_t)k);
            *used = (size_t)k;
            return (size_t)k;
        }
    } else if (c == '\t' || c == '\n' || c == '\r' || c == '\\') {
        o[0] = '\\';
        o[1] = c == '\t' ? 't' : c == '\n' ? 'n' : c == '\r' ? 'r' : '\\';
        return 2;
    } else if (c >= 0x20 && c != 0x7f && c != (unsigned char)quote) {
        o[0] = (char)c;
        return 1;
    }
    o[0] = '\\';
    o[1] = 'x';
    o[2] = hex[c >> 4];
    o[3] = hex[c & 15];
    return 4;
}

int rs_text_escape(rs_buf *out, const char *p, size_t n, size_t max, char quote)
{
    const unsigned char *u = (const unsigned char *)p;
    size_t shown = max && max < n ? max : n, i = 0;
    if (quote && rs_buf_append(out, &quote, 1) != 0)
        return -1;
    while (i < shown) {
        char o[4];
        size_t used, w = unit(u + i, n - i, quote, o, &used);
        if (rs_buf_append(out, o, w) != 0)
            return -1;
        i += used;
    }
    if (quote && rs_buf_append(out, &quote, 1) != 0)
        return -1;
    return i < n ? rs_buf_append(out, "...", 3) : 0;
}

const char *rs_text_shown(char *buf, size_t cap, const char *p, size_t n, size_t max, char quote)
{
    const unsigned char *u = (const unsigned char *)p;
    size_t shown = max && max < n ? max : n, i = 0, len = 0;
    size_t room = cap - 5;  /* the closing quote, "..." and the NUL */
    if (quote)
        buf[len++] = quote;
    while (i < shown) {
        char o[4];
        size_t used, w = unit(u + i, n - i, quote, o, &used);
        if (len + w > room)
            break;
        memcpy(buf + len, o, w);
        len += w;
        i += used;
    }
    if (quote)
        buf[len++] = quote;
    if (i < n)
        memcpy(buf + len, "...", 3), len += 3;
    buf[len] = '\0';
    return buf;
}

const char *rs_text_shown_str(char *buf, size_t cap, const char *s, char quote)
{
    return rs_text_shown(buf, cap, s, strlen(s), 0, quote);
}

size_t rs_text_check(const char *p, size_t n, const char **why)
{
    static _Thread_local char what[32];  /* one message at a time: the caller formats it at once */
    const unsigned char *u = (const unsigned char *)p;
    *why = NULL;
    for (size_t i = 0; i < n; i++) {
        unsigned c = u[i];
        if ((c >= 0x20 && c != 0x7f) || c == '\t' || c == '\n' || c == '\r')
            continue;
        if (c == 0)
            *why = "a NUL byte";
        else
            snprintf(what, sizeof what, "control byte 0x%02x", c), *why = what;
        return i;
    }
    return n;
}

size_t rs_text_controls(const char *p, size_t n, size_t *first)
{
    size_t count = 0;
    *first = n;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if ((c < 0x20 && c != 0 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) {
            *first = count++ ? *first : i;
        }
    }
    return count;
}

char rs_text_tsv_escape(char c)
{
    switch (c) {
    case '\\': return '\\';
    case '\t': return 't';
    case '\n': return 'n';
    case '\r': return 'r';
    default: return 0;
    }
}

void rs_text_put_tsv(FILE *f, const char *p, size_t n)
{
    size_t run = 0;   /* bytes are written in runs between escapes, not one by one */
    for (size_t i = 0; i < n; i++) {
        char e = rs_text_tsv_escape(p[i]);
        if (!e)
            continue;
        fwrite(p + run, 1, i - run, f);
        fputc('\\', f);
        fputc(e, f);
        run = i + 1;
    }
    fwrite(p + run, 1, n - run, f);
}
