/* Stale siblings of an output directory (ringshard/outdir.h): what runs
 * that were killed left beside it - temporaries, the previous output of an
 * interrupted two-rename replacement, the directory a repair held while it
 * published - removed, put back, or, when no run may remove it, said.
 * The rest of the publication is outdir.c. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "ringshard/log.h"
#include "ringshard/outdir.h"
#include "util/tmpname.h"
#include "dataset/outdir_impl.h"

#define TMP_TAG RS_TMP_TAG
#define OLD_TAG OD_OLD_TAG
#define HELD_TAG OD_HELD_TAG

typedef struct {
    char *name;
    long pid;
    int old;
    struct timespec ctime;
} stale_entry;

static int later(struct timespec a, struct timespec b)
{
    return a.tv_sec != b.tv_sec ? a.tv_sec > b.tv_sec : a.tv_nsec > b.tv_nsec;
}

/* An interrupted two-rename replacement left base missing and its previous
 * output in an -old directory: the latest one goes back to base (it is
 * complete; the temporary beside it may not be). Returns the index of the
 * restored entry, n if none was, or -1 if the restore failed (then no -old
 * directory may be removed). */
static ptrdiff_t restore_old(int dfd, const char *parent, const char *base, const stale_entry *v, size_t n)
{
    size_t best = n;
    for (size_t i = 0; i < n; i++)
        if (v[i].old == 1 && (best == n || later(v[i].ctime, v[best].ctime)))
            best = i;
    if (best == n || v[best].old != 1)
        return (ptrdiff_t)n;
    if (od_rename_noreplace_at(dfd, v[best].name, dfd, base) != 0) {
        if (errno == EEXIST || errno == ENOTEMPTY)
            return (ptrdiff_t)n;   /* another run published meanwhile: the -old ones are stale */
        rs_log(RS_LOG_WARN, "%s/%s: previous output left by an interrupted replacement (process %ld); "
               "cannot restore it as %s/%s: %s; kept", parent, v[best].name, v[best].pid, parent, base,
               strerror(errno));
        return -1;
    }
    rs_log(RS_LOG_WARN, "%s/%s: restored from %s, left by an interrupted replacement (process %ld)", parent, base,
           v[best].name, v[best].pid);
    return (ptrdiff_t)best;
}

/* A directory beside base that no run may remove: one a repair renamed
 * to <stem>.ringshard-repair.<pid> (HELD_TAG) once it was complete - the
 * repaired directory before its exchange with base, the damaged one after
 * it - or, base missing while a <base>.damaged.N exists, a temporary that
 * holds a manifest.json (the repaired directory of a repair that an
 * earlier version published in two renames, killed between them). Says
 * where it is and how to put it back: -1 with err (RS_EXIT_DATA). */
static int refuse_held(const char *parent, const char *base, const char *name, long pid, int held, int base_missing,
                       rs_error *err)
{
    if (held && base_missing)
        return rs_error_set(err, RS_EXIT_DATA, "%s/%s: missing, and %s/%s holds the directory a repair (process %ld, "
                            "killed) was publishing: put it in place with `mv %s/%s %s/%s`, then run again (the "
                            "damaged directory is at %s/%s.damaged.<N>); nothing was changed", parent, base, parent,
                            name, pid, parent, name, parent, base, parent, base);
    if (held)
        return rs_error_set(err, RS_EXIT_DATA, "%s/%s: a complete directory that a repair of %s/%s (process %ld, "
                            "killed while it published) left: the damaged directory it replaced, or the repaired "
                            "one it had not put in place (%s/%s is the other; `ringshard verify` tells them "
                            "apart); nothing was changed: keep it with `mv %s/%s %s/%s.damaged.<N>` (N not taken), or "
                            "remove it, then run again", parent, name, parent, base, pid, parent, base, parent, name,
                            parent, base);
    return rs_error_set(err, RS_EXIT_DATA, "%s/%s: missing, and %s/%s (left by process %ld) holds a complete "
                        "directory, while %s/%s.damaged.<N> exists: the directory an interrupted repair was putting "
                        "in place? nothing was changed: `mv %s/%s %s/%s` puts it in place, then run again", parent,
                        base, parent, name, pid, parent, base, parent, name, parent, base);
}

/* Whether parent (dfd) holds "<base>.damaged.<something>". */
static int has_damaged_aside(DIR *d, const char *base)
{
    size_t n = strlen(base);
    struct dirent *de;
    rewinddir(d);
    while ((de = readdir(d)) != NULL)
        if (strncmp(de->d_name, base, n) == 0 && strncmp(de->d_name + n, ".damaged.", 9) == 0)
            return 1;
    return 0;
}

/* The stale siblings of base in parent, into *v (*n): temporary, -old and
 * held directories of processes that are gone. */
static void list_stale(DIR *d, const char *stem, stale_entry **v, size_t *n)
{
    int dfd = dirfd(d);
    size_t cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        const char *rest;
        long pid = rs_tmp_tagged_pid(de->d_name, stem, TMP_TAG, &rest);
        int old = 0;
        if (pid < 0 || rest[0] != '.' || rest[1] == '\0') {
            old = 1;
            pid = rs_tmp_tagged_pid(de->d_name, stem, OLD_TAG, &rest);
            if (pid < 0 || rest[0] != '\0')
                old = 2, pid = rs_tmp_tagged_pid(de->d_name, stem, HELD_TAG, &rest);
            if (pid < 0 || rest[0] != '\0')
                continue;
        }
        struct stat st;
        if (!rs_tmp_pid_gone(pid) || fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
            continue;
        if (*n == cap) {
            size_t nc = cap ? cap * 2 : 8;
            void *p = realloc(*v, nc * sizeof **v);
            if (p == NULL)
                break;
            *v = p;
            cap = nc;
        }
        char *name = strdup(de->d_name);
        if (name != NULL)
            (*v)[(*n)++] = (stale_entry){name, pid, old, st.st_ctim};
    }
}

/* Removes the stale siblings of base in parent: temporary and -old
 * directories of processes that are gone, once one -old directory is
 * restored when base is missing (restore_old). A directory that must not
 * be removed (refuse_held) stops it first: -1 with err, nothing removed.
 * (Stale temporary files: rs_tmp_create_beside.) */
int od_clean_stale(const char *parent, const char *base, const char *stem, rs_error *err)
{
    DIR *d = opendir(parent);
    if (d == NULL)
        return 0;   /* mkdir will report a parent that is unusable */
    int dfd = dirfd(d), rc = 0;
    stale_entry *v = NULL;
    size_t n = 0;
    list_stale(d, stem, &v, &n);
    struct stat st;
    int missing = fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT;
    int asides = missing && n ? has_damaged_aside(d, base) : 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        int fd = v[i].old || !asides ? -1 : openat(dfd, v[i].name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int complete = fd >= 0 && od_holds_our_manifest(fd) > 0;
        if (fd >= 0)
            close(fd);
        if (v[i].old == 2 || complete)
            rc = refuse_held(parent, base, v[i].name, v[i].pid, v[i].old == 2, missing, err);
    }
    ptrdiff_t restored = (ptrdiff_t)n;
    if (rc == 0 && missing)
        restored = restore_old(dfd, parent, base, v, n);
    for (size_t i = 0; i < n; i++) {
        if (rc == 0 && (ptrdiff_t)i != restored && !(v[i].old && restored < 0)) {
            rs_log(RS_LOG_INFO, "removing %s/%s, left by process %ld which is gone", parent, v[i].name, v[i].pid);
            if (od_rm_tree_at(dfd, v[i].name, 0) != 0)
                rs_log(RS_LOG_WARN, "%s/%s: cannot remove: %s", parent, v[i].name, strerror(errno));
        }
        free(v[i].name);
    }
    free(v);
    closedir(d);
    return rc;
}

int rs_outdir_recover_lock(const char *dir, int *fd, rs_error *err)
{
    *fd = -1;
    if (rs_outdir_recover(dir, err) != 0)
        return -1;
    int lr = rs_outdir_lock(dir, fd, err);
    return lr > 0 ? rs_error_set(err, RS_EXIT_IO, "%s: no such directory", dir) : lr;
}

int rs_outdir_recover(const char *final, rs_error *err)
{
    char *fin, *parent;
    const char *base;
    if (final == NULL || final[0] == '\0' || rs_tmp_split_path(final, &fin, &parent, &base) != 0)
        return 0;
    char stem[RS_TMP_STEM_MAX + 1];
    rs_tmp_stem(base, stem);
    int rc = od_clean_stale(parent, base, stem, err);
    free(fin);
    free(parent);
    return rc;
}
