/* Bounded lines of a stream (util/lines.h). One buffer that doubles up to
 * max + 64 KiB: lines are cut where they are, and the unfinished tail is
 * moved to the front before the next read, so that a stream of any length
 * costs the longest line allowed, not the stream. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "util/lines.h"

#define LINES_SLACK ((size_t)1 << 16)

/* Grows buf (cap bytes, len of them used) so that at least 32 KiB are free
 * to read into, never past max + LINES_SLACK. 0, or -1 with err. */
static int make_room(char **buf, size_t *cap, size_t len, size_t max, rs_error *err)
{
    if (*cap - len >= LINES_SLACK / 2)
        return 0;
    size_t want = *cap * 2 < max + LINES_SLACK ? *cap * 2 : max + LINES_SLACK;
    char *t = want > *cap ? realloc(*buf, want) : NULL;
    if (!t)
        return rs_error_set(err, RS_EXIT_IO, "out of memory (a line of %zu bytes)", len);
    *buf = t;
    *cap = want;
    return 0;
}

int rs_lines_each(FILE *in, const char *name, size_t max, const char *limit, rs_line_fn fn, void *ctx, rs_error *err)
{
    size_t cap = LINES_SLACK, len = 0, start = 0;
    unsigned long long line = 0;
    char *buf = malloc(cap);
    int eof = 0, rc = 0;
    if (!buf)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    for (;;) {
        char *lf = memchr(buf + start, '\n', len - start);
        size_t n = lf ? (size_t)(lf - (buf + start)) : len - start;
        if (n > max + 1 || (n == max + 1 && buf[start + n - 1] != '\r')) {  /* a CR may end it */
            rc = rs_error_set(err, RS_EXIT_DATA, "%s: line %llu: longer than %s (%zu bytes)", name, line + 1, limit,
                              max);
            break;
        }
        if (lf || (eof && n > 0)) {
            size_t next = start + n + (lf ? 1 : 0);
            line++;
            if (n && buf[start + n - 1] == '\r')
                n--;
            if ((rc = fn(ctx, buf + start, n, err)) != 0)
                break;
            start = next;
            continue;
        }
        if (eof)
            break;
        memmove(buf, buf + start, len - start);
        len -= start;
        start = 0;
        if ((rc = make_room(&buf, &cap, len, max, err)) != 0)
            break;
        size_t k = fread(buf + len, 1, cap - len, in);
        len += k;
        if (k == 0 && ferror(in)) {
            rc = rs_error_set(err, RS_EXIT_IO, "%s: read error: %s", name, strerror(errno));
            break;
        }
        eof = k == 0;
    }
    free(buf);
    return rc ? -1 : 0;
}
