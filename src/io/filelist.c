/* io/filelist.c - file lists: the inputs named in a file (ringshard/filelist.h).
 *
 * Every check names the list and its line, and is made before an input is
 * opened for reading, so that a bad list costs nothing but its message. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ringshard/filelist.h"
#include "ringshard/interrupt.h"

int rs_file_lists_add(rs_file_lists *fl, const char *name, rs_error *err)
{
    if (!strcmp(name, "-") && rs_file_lists_stdin(fl))
        return rs_error_set(err, RS_EXIT_USAGE, "--files-from -: given twice (standard input can be read once)"),
               -1;
    rs_file_list *l = realloc(fl->lists, (fl->nlists + 1) * sizeof *l);
    if (!l)
        return rs_error_set(err, RS_EXIT_IO, "out of memory"), -1;
    fl->lists = l;
    fl->lists[fl->nlists++] = (rs_file_list){name, NULL, 0, 0, 0};
    return 0;
}

int rs_file_lists_stdin(const rs_file_lists *fl)
{
    for (size_t i = 0; i < fl->nlists; i++)
        if (!strcmp(fl->lists[i].name, "-"))
            return 1;
    return 0;
}

int rs_file_lists_args(const rs_file_lists *fl, char *const *args, size_t nargs, rs_error *err)
{
    for (size_t i = 0; i < nargs && rs_file_lists_stdin(fl); i++)
        if (!strcmp(args[i], "-"))
            return rs_error_set(err, RS_EXIT_USAGE, "'-' on the command line: standard input is the file list "
                                                    "(--files-from -)"), -1;
    return 0;
}

/* The longest entry of a list: a path longer than PATH_MAX names no file. */
#define RS_LIST_ENTRY_MAX PATH_MAX

/* Counts the separators of text[from..to) into *entry, moving *entry_start
 * past the last (past to + 1 when an entry is empty: the list is bad, read
 * no more); fails when the entry then unfinished is longer than
 * RS_LIST_ENTRY_MAX (RS_EXIT_DATA), so that a list without separators (a
 * device, a binary file) is not read whole. 0, or -1 with err. */
static int entry_bound(const rs_file_lists *fl, const rs_file_list *l, const char *text, size_t from, size_t to, size_t *entry_start,
                       size_t *entry, rs_error *err)
{
    char sep = fl->null ? '\0' : '\n';
    for (const char *p = text + from; (p = memchr(p, sep, (size_t)(text + to - p))) != NULL; p++) {
        if ((size_t)(p - text) == *entry_start) {
            *entry_start = to + 1;
            return 0;
        }
        ++*entry;
        *entry_start = (size_t)(p - text) + 1;
    }
    if (to - *entry_start > RS_LIST_ENTRY_MAX)
        return rs_error_set(err, RS_EXIT_DATA, "--files-from %s: %s %zu: longer than %d bytes (no path is)", l->name,
                            fl->null ? "entry" : "line", *entry + 1, RS_LIST_ENTRY_MAX);
    return 0;
}

/* Reads list k whole into its text: one read and one allocation for a
 * regular file, a doubling buffer for a pipe; an entry too long stops the
 * reading (entry_bound). */
int rs_file_lists_read(rs_file_lists *fl, size_t k, rs_error *err)
{
    rs_file_list *l = &fl->lists[k];
    int is_stdin = !strcmp(l->name, "-");
    int fd = is_stdin ? STDIN_FILENO : open(l->name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return rs_error_set(err, RS_EXIT_IO, "--files-from %s: cannot open: %s", l->name, strerror(errno));
    struct stat st;
    memset(&st, 0, sizeof st);  /* unknown: neither a directory nor a regular file */
    size_t cap = (size_t)1 << 16, len = 0, entry_start = 0, entry = 0;
    int rc = -1;
    char *text = NULL;
    if (fstat(fd, &st) != 0)
        memset(&st, 0, sizeof st);
    if (S_ISDIR(st.st_mode)) {
        rs_error_set(err, RS_EXIT_IO, "--files-from %s: cannot read: is a directory", l->name);
        goto out;
    }
    if (S_ISREG(st.st_mode) && (uint64_t)st.st_size + 1 > cap)  /* one read, one allocation */
        cap = (size_t)st.st_size + 1;
    for (;;) {
        if (!text || len + 1 >= cap) {
            size_t want = text ? cap * 2 : cap;
            char *t = realloc(text, want);
            if (!t) {
                rs_error_set(err, RS_EXIT_IO, "--files-from %s: out of memory (%zu bytes read)", l->name, len);
                goto out;
            }
            text = t;
            cap = want;
        }
        ssize_t n = read(fd, text + len, cap - 1 - len);
        if (n < 0 && errno == EINTR && !rs_interrupt_pending())
            continue;
        if (n < 0 && errno == EINTR) {
            rs_error_set(err, RS_EXIT_INTERRUPTED, "interrupted");
            goto out;
        }
        if (n < 0) {
            rs_error_set(err, RS_EXIT_IO, "--files-from %s: read failed: %s", l->name, strerror(errno));
            goto out;
        }
        if (n == 0)
            break;
        if (entry_bound(fl, l, text, len, len + (size_t)n, &entry_start, &entry, err) != 0)
            goto out;
        len += (size_t)n;
        if (entry_start > len)  /* an empty entry: split_list says so, reading no further */
            break;
    }
    text[len] = 0;
    l->text = text;
    l->len = len;
    text = NULL;
    rc = 0;
out:
    free(text);
    if (!is_stdin)
        close(fd);
    return rc;
}

/* "line N" (or "entry N" with null) of the input at index i of fl->inputs
 * (a list's entry), into buf; its list, or NULL for the command line. */
static const rs_file_list *where(const rs_file_lists *fl, size_t i, char *buf, size_t cap)
{
    for (size_t k = 0; k < fl->nlists; k++) {
        const rs_file_list *l = &fl->lists[k];
        if (i >= l->first && i < l->first + l->n) {
            snprintf(buf, cap, "%s %zu", fl->null ? "entry" : "line", i - l->first + 1);
            return l;
        }
    }
    snprintf(buf, cap, "the command line");
    return NULL;
}

/* Splits list l into fl->inputs[l->first ...), checking what can be checked
 * without the file system. 0 or -1 with err (RS_EXIT_USAGE). */
static int split_list(rs_file_lists *fl, rs_file_list *l, rs_error *err)
{
    char sep = fl->null ? '\0' : '\n';
    const char *what = fl->null ? "entry" : "line";
    size_t k = 0;
    for (size_t at = 0; at < l->len; k++) {
        char *p = l->text + at, *e = memchr(p, sep, l->len - at);
        size_t n = e ? (size_t)(e - p) : l->len - at;
        at += n + 1;
        if (n == 0)
            return rs_error_set(err, RS_EXIT_USAGE, "--files-from %s: %s %zu: empty (every %s must name a file)",
                                l->name, what, k + 1, what), -1;
        if (!fl->null && memchr(p, 0, n))
            return rs_error_set(err, RS_EXIT_USAGE,
                                "--files-from %s: line %zu: holds a NUL byte (a NUL-separated list, as find "
                                "-print0 writes? add --null)", l->name, k + 1), -1;
        if (!fl->null && p[n - 1] == '\r')
            return rs_error_set(err, RS_EXIT_USAGE,
                                "--files-from %s: line %zu: ends in a carriage return (a list with Windows line "
                                "ends? convert it, e.g. with tr -d '\\r')", l->name, k + 1), -1;
        if (n == 1 && p[0] == '-' && rs_file_lists_stdin(fl))
            return rs_error_set(err, RS_EXIT_USAGE,
                                "--files-from %s: %s %zu: '-' names standard input, which is a file list here "
                                "(--files-from -)", l->name, what, k + 1), -1;
        p[n] = 0;  /* the separator, or the NUL after the text */
        fl->inputs[l->first + k] = p;
    }
    l->n = k;
    return 0;
}

/* Entries of list l: separators, plus an unterminated last one. */
static size_t count_entries(const rs_file_lists *fl, const rs_file_list *l)
{
    char sep = fl->null ? '\0' : '\n';
    size_t n = 0;
    for (const char *p = l->text, *end = l->text + l->len; p < end; n++) {
        const char *e = memchr(p, sep, (size_t)(end - p));
        p = e ? e + 1 : end;
    }
    return n;
}

typedef struct {
    uint64_t dev, ino;
    size_t i;
} file_id;

static int by_id(const void *a, const void *b)
{
    const file_id *x = a, *y = b;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    if (x->ino != y->ino)
        return x->ino < y->ino ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* The identities of every input sorted by (dev, ino, index), so that the
 * first duplicate in input order is found in n log n, not n^2. */
int rs_file_lists_check(const rs_file_lists *fl, size_t nargs, rs_error *err)
{
    size_t n = fl->ninputs;
    file_id *ids = malloc((n ? n : 1) * sizeof *ids);
    if (!ids)
        return rs_error_set(err, RS_EXIT_IO, "out of memory for the inputs' identities (%zu inputs)", n), -1;
    size_t m = 0;
    char at[64];
    for (size_t i = 0; i < n; i++) {
        const char *p = fl->inputs[i];
        struct stat st;
        int ok = strcmp(p, "-") ? stat(p, &st) == 0 : fstat(STDIN_FILENO, &st) == 0;
        if (i < nargs) {  /* the pipeline reports what it cannot open, as before */
            if (ok)
                ids[m++] = (file_id){(uint64_t)st.st_dev, (uint64_t)st.st_ino, i};
            continue;
        }
        const rs_file_list *l = where(fl, i, at, sizeof at);
        if (!ok) {
            int e = errno;
            rs_error_set(err, RS_EXIT_IO, "--files-from %s: %s: %s: cannot open: %s%s", l->name, at, p, strerror(e),
                         fl->null && strchr(p, '\n') ? " (a list of lines? --null expects NUL-separated entries)"
                                                    : "");
            goto fail;
        }
        if (S_ISDIR(st.st_mode)) {
            rs_error_set(err, RS_EXIT_IO, "--files-from %s: %s: %s: cannot read: is a directory", l->name, at, p);
            goto fail;
        }
        ids[m++] = (file_id){(uint64_t)st.st_dev, (uint64_t)st.st_ino, i};
    }
    qsort(ids, m, sizeof *ids, by_id);
    size_t dup = SIZE_MAX, orig = 0;  /* the first duplicate in input order, and what it repeats */
    for (size_t k = 1, g = 0; k < m; k++) {
        if (ids[k].dev != ids[g].dev || ids[k].ino != ids[g].ino) {
            g = k;
            continue;
        }
        if (ids[k].i >= nargs && ids[k].i < dup)
            dup = ids[k].i, orig = ids[g].i;
    }
    free(ids);
    if (dup == SIZE_MAX)
        return 0;
    char first[64 + 4096];
    const rs_file_list *l = where(fl, dup, at, sizeof at), *lo = where(fl, orig, first, 64);
    if (lo && lo != l)
        snprintf(first + strlen(first), sizeof first - strlen(first), " of --files-from %s", lo->name);
    const char *p = fl->inputs[dup], *q = fl->inputs[orig];
    if (!strcmp(p, q))
        return rs_error_set(err, RS_EXIT_USAGE, "--files-from %s: %s: %s is listed twice (also on %s): its rows "
                                                "would be read twice", l->name, at, p, first), -1;
    return rs_error_set(err, RS_EXIT_USAGE, "--files-from %s: %s: %s is the same file as %s (on %s): its rows would "
                                            "be read twice", l->name, at, p, q, first), -1;
fail:
    free(ids);
    return -1;
}

void rs_file_lists_adopt(rs_file_lists *fl, size_t k, char *text, size_t len)
{
    free(fl->lists[k].text);
    fl->lists[k].text = text;
    fl->lists[k].len = len;
}

int rs_file_lists_split(rs_file_lists *fl, char *const *args, size_t nargs, rs_error *err)
{
    size_t n = nargs;
    for (size_t k = 0; k < fl->nlists; k++) {
        rs_file_list *l = &fl->lists[k];
        l->first = n;
        l->n = l->text ? count_entries(fl, l) : 0;
        n += l->n;
    }
    free(fl->inputs);
    if (!(fl->inputs = malloc((n ? n : 1) * sizeof *fl->inputs)))
        return rs_error_set(err, RS_EXIT_IO, "out of memory for %zu input names", n), -1;
    fl->ninputs = n;
    for (size_t i = 0; i < nargs; i++)
        fl->inputs[i] = args[i];
    for (size_t k = 0; k < fl->nlists; k++)
        if (fl->lists[k].text && split_list(fl, &fl->lists[k], err) != 0)
            return -1;
    return 0;
}

void rs_file_lists_free(rs_file_lists *fl)
{
    for (size_t k = 0; k < fl->nlists; k++)
        free(fl->lists[k].text);
    free(fl->lists);
    free(fl->inputs);
    *fl = (rs_file_lists){0};
}
