/* A tiny reader for the reference vector TSV files (header line, LF ends,
 * the key column escaped with \\ \t \n \r). Tests only. */
#ifndef RS_TEST_TSV_H
#define RS_TEST_TSV_H
#include <stdlib.h>
#include <string.h>
#include "support.h"

#define TSV_MAX_COLS 16

typedef struct {
    char *text;
    char *pos;
    int ncols;
    char *cols[TSV_MAX_COLS]; /* header names */
    char *f[TSV_MAX_COLS];    /* current row */
    size_t rows;
} tsv;

static inline int tsv_split(char *line, char **f)
{
    int n = 0;
    f[n++] = line;
    for (char *p = line; *p; p++)
        if (*p == '\t' && n < TSV_MAX_COLS) {
            *p = '\0';
            f[n++] = p + 1;
        }
    return n;
}

/* Opens fixtures/vectors/NAME (gz allowed). Returns 0 on success. */
static inline int tsv_open(tsv *t, const char *name)
{
    char rel[256];
    snprintf(rel, sizeof rel, "vectors/%s", name);
    memset(t, 0, sizeof *t);
    t->text = slurp(fixture(rel), NULL);
    if (!t->text)
        return -1;
    char *nl = strchr(t->text, '\n');
    *nl = '\0';
    t->ncols = tsv_split(t->text, t->cols);
    t->pos = nl + 1;
    return 0;
}

static inline int tsv_col(const tsv *t, const char *name)
{
    for (int i = 0; i < t->ncols; i++)
        if (!strcmp(t->cols[i], name))
            return i;
    return -1;
}

/* Next row into t->f; returns 0 at the end. */
static inline int tsv_next(tsv *t)
{
    if (!*t->pos)
        return 0;
    char *nl = strchr(t->pos, '\n');
    if (nl)
        *nl = '\0';
    int n = tsv_split(t->pos, t->f);
    t->pos = nl ? nl + 1 : t->pos + strlen(t->pos);
    t->rows++;
    return n;
}

/* Unescapes the four escapes in place; returns the length. */
static inline size_t tsv_unescape(char *s)
{
    char *w = s;
    for (char *r = s; *r; r++) {
        if (*r == '\\' && r[1]) {
            r++;
            *w++ = *r == 't' ? '\t' : *r == 'n' ? '\n' : *r == 'r' ? '\r' : *r;
        } else
            *w++ = *r;
    }
    *w = '\0';
    return (size_t)(w - s);
}

static inline void tsv_close(tsv *t) { free(t->text); }
#endif
