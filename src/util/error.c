#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ringshard/error.h"

/* Copies full (n bytes) into dst (cap bytes) as head, a marker and tail:
 * a message holding a long name (a 10 KB node name) must still show its
 * end, which often says what is wrong. Cuts fall on UTF-8 boundaries. */
static void elide_middle(char *dst, size_t cap, const char *full, size_t n)
{
    char marker[64];
    size_t head = cap / 2, tail_start;
    while (head > 0 && ((unsigned char)full[head] & 0xC0) == 0x80)
        head--;
    /* The count depends on where the tail starts, which depends on the
     * marker's length: size it with n, then count exactly (never longer). */
    int mlen = snprintf(marker, sizeof marker, " [... %zu bytes left out ...] ", n);
    size_t tail_len = cap - 1 - head - (size_t)mlen;
    tail_start = n - tail_len;
    while (tail_start < n && ((unsigned char)full[tail_start] & 0xC0) == 0x80)
        tail_start++;
    mlen = snprintf(marker, sizeof marker, " [... %zu bytes left out ...] ", tail_start - head);
    memcpy(dst, full, head);
    memcpy(dst + head, marker, (size_t)mlen);
    memcpy(dst + head + (size_t)mlen, full + tail_start, n - tail_start);
    dst[head + (size_t)mlen + (n - tail_start)] = '\0';
}

int rs_error_set(rs_error *err, int code, const char *fmt, ...)
{
    if (err == NULL || err->code != 0)
        return -1;
    va_list ap, again;
    va_start(ap, fmt);
    va_copy(again, ap);
    int n = vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof err->msg) {
        char *full = malloc((size_t)n + 1);  /* on failure the plain cut stays */
        if (full) {
            vsnprintf(full, (size_t)n + 1, fmt, again);
            elide_middle(err->msg, sizeof err->msg, full, (size_t)n);
            free(full);
        }
    }
    va_end(again);
    err->code = code ? code : RS_EXIT_IO;
    return -1;
}

void rs_error_clear(rs_error *err)
{
    err->code = 0;
    err->msg[0] = '\0';
}

void rs_error_restate(rs_error *err, int code, const char *head, const char *tail)
{
    char was[sizeof err->msg];
    snprintf(was, sizeof was, "%s", err->msg);
    rs_error_clear(err);
    rs_error_set(err, code, "%s%s%s", head, was, tail);
}
