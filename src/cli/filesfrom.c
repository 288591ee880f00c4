/* cli/filesfrom.c - --files-from LIST: the inputs named in a file, for jobs
 * with more files than the kernel's argument limit (about 20,000 paths)
 * lets a command line hold; xargs would split them into several runs, hence
 * several outputs.
 *
 * A list is one path a line (LF), or with --null one path per NUL-ended
 * entry (find -print0), relative to the current directory; "-" as the list
 * is standard input, "-" as an entry names standard input as an input.
 * The inputs are the command line's, then every list's entries, lists in
 * the order of their options.
 *
 * Each list is read into one buffer and its entries are terminated in place,
 * so 100,000 paths cost their text plus one pointer each, not a malloc each.
 * The checks are made before anything is opened for reading, and name the
 * list's line: an empty line or entry, a line ending in CR (a Windows list),
 * a NUL inside a line (a find -print0 list without --null), a file that
 * cannot be opened, a directory, and a file that appears twice - by the
 * same name or another one (same st_dev and st_ino): its rows would be read
 * twice. Duplicates among command-line arguments alone are not checked (as
 * before lists existed).
 *
 * Under MPI every rank needs the same list, and a list on standard input
 * reaches rank 0 only: rank 0 reads every list and sends it to the others;
 * rank 0 alone stats the files. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli/cli.h"
#include "cluster/world.h"
#include "ringshard/interrupt.h"

typedef struct {
    const char *name;  /* as given; "-": standard input */
    char *text;        /* the whole list, len bytes plus a NUL */
    size_t len;
    size_t first, n;   /* its entries are inputs[first .. first + n) */
} file_list;

/* The options of this process's one command. The text and the inputs stay
 * allocated until exit: the pipeline's options point into them. */
static struct {
    file_list *lists;
    size_t nlists;
    int null;             /* --null */
    const char **inputs;  /* the command line's, then every list's entries */
} ff;

int rs_cli_files_from_option(int list, const char *arg, rs_error *err)
{
    if (!list) {
        ff.null = 1;
        return 0;
    }
    for (size_t i = 0; i < ff.nlists; i++)
        if (!strcmp(arg, "-") && !strcmp(ff.lists[i].name, "-"))
            return rs_error_set(err, RS_EXIT_USAGE, "--files-from -: given twice (standard input can be read once)"),
                   -1;
    file_list *l = realloc(ff.lists, (ff.nlists + 1) * sizeof *l);
    if (!l)
        return rs_error_set(err, RS_EXIT_IO, "out of memory"), -1;
    ff.lists = l;
    ff.lists[ff.nlists++] = (file_list){arg, NULL, 0, 0, 0};
    return 0;
}

int rs_cli_files_from_given(void)
{
    return ff.nlists > 0;
}

static int stdin_is_a_list(void)
{
    for (size_t i = 0; i < ff.nlists; i++)
        if (!strcmp(ff.lists[i].name, "-"))
            return 1;
    return 0;
}

/* The longest entry of a list: a path longer than PATH_MAX names no file. */
#define RS_LIST_ENTRY_MAX PATH_MAX

/* Counts the separators of text[from..to) into *entry, moving *entry_start
 * past the last (past to + 1 when an entry is empty: the list is bad, read
 * no more); fails when the entry then unfinished is longer than
 * RS_LIST_ENTRY_MAX (RS_EXIT_DATA), so that a list without separators (a
 * device, a binary file) is not read whole. 0, or -1 with err. */
static int entry_bound(const file_list *l, const char *text, size_t from, size_t to, size_t *entry_start,
                       size_t *entry, rs_error *err)
{
    char sep = ff.null ? '\0' : '\n';
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
                            ff.null ? "entry" : "line", *entry + 1, RS_LIST_ENTRY_MAX);
    return 0;
}

/* Reads list l whole into l->text. 0 or -1 with err (RS_EXIT_IO, as for
 * an input that cannot be read; RS_EXIT_INTERRUPTED). */
static int read_list(file_list *l, rs_error *err)
{
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
        if (entry_bound(l, text, len, len + (size_t)n, &entry_start, &entry, err) != 0)
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

/* "line N" (or "entry N" with --null) of the input at index i of ff.inputs
 * (a list's entry), into buf. */
static const file_list *where(size_t i, char *buf, size_t cap)
{
    for (size_t k = 0; k < ff.nlists; k++) {
        const file_list *l = &ff.lists[k];
        if (i >= l->first && i < l->first + l->n) {
            snprintf(buf, cap, "%s %zu", ff.null ? "entry" : "line", i - l->first + 1);
            return l;
        }
    }
    snprintf(buf, cap, "the command line");
    return NULL;
}

/* Splits list l into ff.inputs[l->first ...), checking what can be checked
 * without the file system. 0 or -1 with err (RS_EXIT_USAGE). */
static int split_list(file_list *l, rs_error *err)
{
    char sep = ff.null ? '\0' : '\n';
    const char *what = ff.null ? "entry" : "line";
    size_t k = 0;
    for (size_t at = 0; at < l->len; k++) {
        char *p = l->text + at, *e = memchr(p, sep, l->len - at);
        size_t n = e ? (size_t)(e - p) : l->len - at;
        at += n + 1;
        if (n == 0)
            return rs_error_set(err, RS_EXIT_USAGE, "--files-from %s: %s %zu: empty (every %s must name a file)",
                                l->name, what, k + 1, what), -1;
        if (!ff.null && memchr(p, 0, n))
            return rs_error_set(err, RS_EXIT_USAGE,
                                "--files-from %s: line %zu: holds a NUL byte (a NUL-separated list, as find "
                                "-print0 writes? add --null)", l->name, k + 1), -1;
        if (!ff.null && p[n - 1] == '\r')
            return rs_error_set(err, RS_EXIT_USAGE,
                                "--files-from %s: line %zu: ends in a carriage return (a list with Windows line "
                                "ends? convert it, e.g. with tr -d '\\r')", l->name, k + 1), -1;
        if (n == 1 && p[0] == '-' && stdin_is_a_list())
            return rs_error_set(err, RS_EXIT_USAGE,
                                "--files-from %s: %s %zu: '-' names standard input, which is a file list here "
                                "(--files-from -)", l->name, what, k + 1), -1;
        p[n] = 0;  /* the separator, or the NUL after the text */
        ff.inputs[l->first + k] = p;
    }
    l->n = k;
    return 0;
}

/* Entries of list l: separators, plus an unterminated last one. */
static size_t count_entries(const file_list *l)
{
    char sep = ff.null ? '\0' : '\n';
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

/* Rank 0: every list entry names a file that can be opened and is not a
 * directory, and no file comes twice where the later one is from a list.
 * 0 or -1 with err (RS_EXIT_IO as for an input named on the command line,
 * RS_EXIT_USAGE for a duplicate). */
static int check_files(size_t nargs, size_t n, rs_error *err)
{
    file_id *ids = malloc((n ? n : 1) * sizeof *ids);
    if (!ids)
        return rs_error_set(err, RS_EXIT_IO, "out of memory for the inputs' identities (%zu inputs)", n), -1;
    size_t m = 0;
    char at[64];
    for (size_t i = 0; i < n; i++) {
        const char *p = ff.inputs[i];
        struct stat st;
        int ok = strcmp(p, "-") ? stat(p, &st) == 0 : fstat(STDIN_FILENO, &st) == 0;
        if (i < nargs) {  /* the pipeline reports what it cannot open, as before */
            if (ok)
                ids[m++] = (file_id){(uint64_t)st.st_dev, (uint64_t)st.st_ino, i};
            continue;
        }
        const file_list *l = where(i, at, sizeof at);
        if (!ok) {
            int e = errno;
            rs_error_set(err, RS_EXIT_IO, "--files-from %s: %s: %s: cannot open: %s%s", l->name, at, p, strerror(e),
                         ff.null && strchr(p, '\n') ? " (a list of lines? --null expects NUL-separated entries)"
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
    const file_list *l = where(dup, at, sizeof at), *lo = where(orig, first, 64);
    if (lo && lo != l)
        snprintf(first + strlen(first), sizeof first - strlen(first), " of --files-from %s", lo->name);
    const char *p = ff.inputs[dup], *q = ff.inputs[orig];
    if (!strcmp(p, q))
        return rs_error_set(err, RS_EXIT_USAGE, "--files-from %s: %s: %s is listed twice (also on %s): its rows "
                                                "would be read twice", l->name, at, p, first), -1;
    return rs_error_set(err, RS_EXIT_USAGE, "--files-from %s: %s: %s is the same file as %s (on %s): its rows would "
                                            "be read twice", l->name, at, p, q, first), -1;
fail:
    free(ids);
    return -1;
}

int rs_cli_files_from_inputs(char **args, size_t nargs, const char *const **inputs, size_t *ninputs, rs_error *err)
{
    int me = rs_world_rank();
    for (size_t i = 0; i < nargs && stdin_is_a_list(); i++)
        if (!strcmp(args[i], "-"))
            return rs_error_set(err, RS_EXIT_USAGE, "'-' on the command line: standard input is the file list "
                                                    "(--files-from -)"), -1;
    for (size_t k = 0; k < ff.nlists && me == 0 && !err->code; k++)
        read_list(&ff.lists[k], err);
    if (rs_world_agree(err) != 0)
        return -1;
    size_t n = nargs;
    for (size_t k = 0; k < ff.nlists; k++) {
        file_list *l = &ff.lists[k];
        uint64_t len = l->len;
        rs_world_bcast(&len, sizeof len, 0);
        if (me != 0 && !(l->text = calloc(len + 1, 1)))
            abort();  /* as cluster.c: a rank cannot leave the others waiting */
        l->len = (size_t)len;
        rs_world_bcast(l->text, len, 0);
        l->first = n;
        l->n = count_entries(l);
        n += l->n;
    }
    if (!(ff.inputs = malloc((n ? n : 1) * sizeof *ff.inputs)))
        return rs_error_set(err, RS_EXIT_IO, "out of memory for %zu input names", n), -1;
    for (size_t i = 0; i < nargs; i++)
        ff.inputs[i] = args[i];
    for (size_t k = 0; k < ff.nlists && !err->code; k++)
        split_list(&ff.lists[k], err);
    if (!err->code && me == 0)
        check_files(nargs, n, err);
    if (rs_world_agree(err) != 0)
        return -1;
    *inputs = ff.inputs;
    *ninputs = n;
    return 0;
}
