/* util/path.c - where a path really is (ringshard/util.h, rs_path_within),
 * and which file a publication replaces (util/tmpname.h, rs_tmp_final_path).
 *
 * Compared by real paths, so that "./", "..", relative and linked forms of
 * one place are one place; a path that does not exist yet is placed by its
 * nearest existing ancestor's real path plus the names below it. */
#define _GNU_SOURCE  /* asprintf */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ringshard/util.h"
#include "util/tmpname.h"

/* The directory part of path ("." when none), trailing slashes of path
 * removed first; *base gets the rest. malloc'd, NULL when out of memory. */
static char *dir_part(const char *path, char **base)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    size_t k = n;
    while (k > 0 && path[k - 1] != '/')
        k--;
    *base = strndup(path + k, n - k);
    char *dir = k == 0 ? strdup(".") : strndup(path, k > 1 ? k - 1 : 1);
    if (!dir || !*base) {
        free(dir);
        free(*base);
        return NULL;
    }
    return dir;
}

/* The canonical path of path, itself or, when it does not exist, its
 * parent's (canonical in its turn: several levels may not exist yet) + '/'
 * + its name. malloc'd; NULL when nothing resolves, or a missing part is
 * "." or ".." (no place can be told: the kernel refuses such a path). */
static char *canonical(const char *path)
{
    char *r = realpath(path, NULL);
    if (r || errno != ENOENT)
        return r;
    char *base, *dir = dir_part(path, &base), *p = NULL;
    int named = dir && strcmp(base, ".") && strcmp(base, "..") && strcmp(dir, path);
    char *rd = named ? canonical(dir) : NULL;
    if (rd && asprintf(&p, "%s%s%s", rd, strcmp(rd, "/") ? "/" : "", base) < 0)
        p = NULL;
    free(rd);
    free(dir);
    free(base);
    return p;
}

char *rs_tmp_final_path(const char *path)
{
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/')
        len--;   /* "link/" is the link: readlink would refuse it */
    char *p = strndup(path, len);
    for (int hops = 0; p; hops++) {
        char target[PATH_MAX];
        ssize_t n = readlink(p, target, sizeof target - 1);
        if (n < 0)
            return p;   /* not a link (a file, a directory, nothing yet): the end of the chain */
        if (hops == 40) {   /* as the kernel's limit for a path */
            free(p);
            errno = ELOOP;
            return NULL;
        }
        target[n] = '\0';
        char *base, *dir = dir_part(p, &base), *next = NULL;
        if (dir && (target[0] == '/' ? (next = strdup(target)) == NULL
                                     : asprintf(&next, "%s/%s", dir, target) < 0))
            next = NULL;
        free(dir);
        free(base);
        free(p);
        p = next;
    }
    errno = ENOMEM;
    return NULL;
}

int rs_path_within(const char *path, const char *dir)
{
    char *out = canonical(dir), *in = NULL, *real = rs_tmp_final_path(path);   /* where it is written */
    char *file = real ? realpath(real, NULL) : NULL;   /* an existing file: where it really is */
    if (file) {
        char *base;
        in = dir_part(file, &base);
        free(base);
        free(file);
    } else {
        char *base = NULL, *d = real ? dir_part(real, &base) : NULL;
        in = d ? canonical(d) : NULL;
        free(d);
        free(base);
    }
    size_t n = out ? strlen(out) : 0;
    int inside = out && in && !strncmp(in, out, n) && (in[n] == '\0' || in[n] == '/');
    free(out);
    free(in);
    free(real);
    return inside;
}
