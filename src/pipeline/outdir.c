/* Atomic publication of an output directory (ringshard/outdir.h).
 *
 * FINAL is built as FINAL.ringshard-tmp.<pid>.<8 hex> in FINAL's parent
 * (same file system, so rename(2) is atomic), flushed (every file and
 * directory fsync'd) and renamed into place; then the parent is fsync'd so
 * that the rename itself is durable. With force an existing FINAL is first
 * renamed to FINAL.ringshard-old.<pid> and removed after the new one is in.
 * Removal never follows symbolic links: the tree is walked with
 * openat(O_NOFOLLOW)/fdopendir/unlinkat.
 *
 * Stale temporaries: a run that was killed leaves its temporary directory;
 * the next rs_outdir_begin on the same FINAL removes every sibling
 * FINAL.ringshard-tmp.<pid>.* whose process no longer exists (kill(pid, 0)
 * fails with ESRCH). A pid that was reused by an unrelated process keeps its
 * directory until that process is gone too; directories of processes on
 * other hosts (a shared file system) cannot be told apart - they count as
 * alive or dead by the local pid, so do not share output directories
 * between hosts. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "ringshard/hash.h"
#include "ringshard/log.h"
#include "ringshard/outdir.h"

#define TMP_TAG ".ringshard-tmp."
#define OLD_TAG ".ringshard-old."
#define MAX_TREE_DEPTH 256

/* ---- recursive removal without following links ---- */

static int rm_tree_at(int dirfd, const char *name, int depth)
{
    if (unlinkat(dirfd, name, 0) == 0)
        return 0;
    if (errno == ENOENT)
        return 0;
    if (errno != EISDIR && errno != EPERM)
        return -1;
    if (depth >= MAX_TREE_DEPTH) {
        errno = ELOOP;
        return -1;
    }
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    DIR *d = fdopendir(fd);
    if (d == NULL) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    int rc = 0, saved = 0;
    for (int pass = 0; pass < 4; pass++) {
        struct dirent *de;
        int removed = 0;
        rewinddir(d);
        while ((de = readdir(d)) != NULL) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                continue;
            if (rm_tree_at(fd, de->d_name, depth + 1) != 0) {
                if (!saved)
                    saved = errno;
                rc = -1;
            } else {
                removed++;
            }
        }
        if (rc != 0 || removed == 0)
            break;
        if (unlinkat(dirfd, name, AT_REMOVEDIR) == 0) {
            closedir(d);
            return 0;
        }
        if (errno != ENOTEMPTY && errno != EEXIST)
            break;   /* the final attempt below reports it */
    }
    closedir(d);
    if (rc != 0) {
        errno = saved;
        return -1;
    }
    return unlinkat(dirfd, name, AT_REMOVEDIR);
}

static int rm_tree(const char *path)
{
    return rm_tree_at(AT_FDCWD, path, 0);
}

/* ---- fsync of a tree ---- */

/* Files are flushed in windows of SYNC_WINDOW: first every file's
 * writeback is started (sync_file_range), then each is fsync'd. One fsync
 * after another leaves the device idle between files; starting them all
 * first keeps its queue full (about half the time for 1000 files). */
#define SYNC_WINDOW 256

typedef struct {
    int fd[SYNC_WINDOW];
    char *name[SYNC_WINDOW];
    int n;
} sync_window;

static int flush_window(const char *path, sync_window *w, rs_error *err)
{
    int rc = 0;
    for (int i = 0; i < w->n; i++)
        (void)sync_file_range(w->fd[i], 0, 0, SYNC_FILE_RANGE_WRITE);  /* a hint: fsync reports errors */
    for (int i = 0; i < w->n; i++) {
        if (rc == 0 && fsync(w->fd[i]) != 0)
            rc = rs_error_set(err, RS_EXIT_IO, "%s/%s: fsync: %s", path, w->name[i], strerror(errno));
        close(w->fd[i]);
        free(w->name[i]);
    }
    w->n = 0;
    return rc;
}

static int sync_tree(const char *path, int fd, int depth, rs_error *err)
{
    DIR *d = fdopendir(fd);
    if (d == NULL) {
        int e = errno;
        close(fd);
        return rs_error_set(err, RS_EXIT_IO, "%s: %s", path, strerror(e));
    }
    sync_window *w = malloc(sizeof *w);
    if (w == NULL) {
        closedir(d);
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    }
    w->n = 0;
    struct dirent *de;
    int rc = 0;
    errno = 0;
    while (rc == 0 && (de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        struct stat st;
        if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            rc = rs_error_set(err, RS_EXIT_IO, "%s/%s: %s", path, de->d_name, strerror(errno));
            break;
        }
        if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
            continue;
        if (S_ISDIR(st.st_mode) && depth >= MAX_TREE_DEPTH)
            continue;
        int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (S_ISDIR(st.st_mode) ? O_DIRECTORY : 0);
        int cfd = openat(fd, de->d_name, flags);
        if (cfd < 0 && errno == EMFILE && w->n > 0) {   /* a low open-file limit: a smaller window */
            if ((rc = flush_window(path, w, err)) != 0)
                break;
            cfd = openat(fd, de->d_name, flags);
        }
        if (cfd < 0) {
            rc = rs_error_set(err, RS_EXIT_IO, "%s/%s: %s", path, de->d_name, strerror(errno));
            break;
        }
        if (S_ISDIR(st.st_mode)) {
            char *sub;
            if (asprintf(&sub, "%s/%s", path, de->d_name) < 0) {
                close(cfd);
                rc = rs_error_set(err, RS_EXIT_IO, "out of memory");
                break;
            }
            rc = flush_window(path, w, err);   /* fds for one window at a time */
            if (rc == 0)
                rc = sync_tree(sub, cfd, depth + 1, err);   /* closes cfd */
            else
                close(cfd);
            free(sub);
        } else {
            char *name = strdup(de->d_name);
            if (name == NULL) {
                close(cfd);
                rc = rs_error_set(err, RS_EXIT_IO, "out of memory");
                break;
            }
            w->fd[w->n] = cfd;
            w->name[w->n++] = name;
            if (w->n == SYNC_WINDOW)
                rc = flush_window(path, w, err);
        }
        errno = 0;
    }
    if (rc == 0 && errno != 0)
        rc = rs_error_set(err, RS_EXIT_IO, "%s: %s", path, strerror(errno));
    int frc = flush_window(path, w, rc == 0 ? err : &(rs_error){0});   /* closes what is left */
    if (rc == 0)
        rc = frc;
    free(w);
    if (rc == 0 && fsync(dirfd(d)) != 0 && errno != EINVAL)
        rc = rs_error_set(err, RS_EXIT_IO, "%s: fsync: %s", path, strerror(errno));
    closedir(d);
    return rc;
}

static int sync_dir(const char *path, rs_error *err)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return rs_error_set(err, RS_EXIT_IO, "%s: %s", path, strerror(errno));
    int rc = 0;
    if (fsync(fd) != 0 && errno != EINVAL)
        rc = rs_error_set(err, RS_EXIT_IO, "%s: fsync: %s", path, strerror(errno));
    close(fd);
    return rc;
}

/* ---- paths ---- */

/* Splits final (trailing slashes removed) into its parent and base name. */
static int split_path(const char *final, char **fin, char **parent, const char **base)
{
    size_t n = strlen(final);
    while (n > 1 && final[n - 1] == '/')
        n--;
    *fin = strndup(final, n);
    if (*fin == NULL)
        return -1;
    char *slash = strrchr(*fin, '/');
    if (slash == NULL) {
        *parent = strdup(".");
        *base = *fin;
    } else {
        *parent = slash == *fin ? strdup("/") : strndup(*fin, (size_t)(slash - *fin));
        *base = slash + 1;
    }
    if (*parent == NULL) {
        free(*fin);
        return -1;
    }
    return 0;
}

/* A process that has exited but was never reaped (a zombie: its parent,
 * e.g. mpirun, died first and nothing reaps orphans, as in containers
 * without an init) still answers kill(pid, 0): it is gone all the same. */
static int pid_gone(long pid)
{
    if (pid <= 0 || pid != (long)(pid_t)pid)
        return 0;
    if (kill((pid_t)pid, 0) != 0)
        return errno == ESRCH;
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *st = strrchr(buf, ')');  /* "pid (comm) S ...": comm may hold ')' */
    return st && st[1] == ' ' && st[2] == 'Z';
}

/* If name is base + tag + <digits> + (rest): the pid, with *rest after the
 * digits. Else -1. */
static long tagged_pid(const char *name, const char *base, const char *tag, const char **rest)
{
    size_t bl = strlen(base), tl = strlen(tag);
    if (strncmp(name, base, bl) != 0 || strncmp(name + bl, tag, tl) != 0)
        return -1;
    const char *p = name + bl + tl;
    long pid = 0;
    if (*p < '0' || *p > '9')
        return -1;
    while (*p >= '0' && *p <= '9') {
        if (pid > 100000000L)
            return -1;
        pid = pid * 10 + (*p++ - '0');
    }
    *rest = p;
    return pid;
}

static void clean_stale(const char *parent, const char *base, int final_exists)
{
    DIR *d = opendir(parent);
    if (d == NULL)
        return;   /* mkdir will report a parent that is unusable */
    struct {
        char *name;
        long pid;
    } *victims = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        const char *rest;
        long pid = tagged_pid(de->d_name, base, TMP_TAG, &rest);
        int old = 0;
        if (pid < 0 || rest[0] != '.' || rest[1] == '\0') {
            pid = tagged_pid(de->d_name, base, OLD_TAG, &rest);
            if (pid < 0 || rest[0] != '\0')
                continue;
            old = 1;
        }
        if (!pid_gone(pid))
            continue;
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
            continue;
        if (old && !final_exists) {
            rs_log(RS_LOG_WARN, "%s/%s: previous output left by an interrupted replacement (process %ld); kept",
                   parent, de->d_name, pid);
            continue;
        }
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 8;
            void *p = realloc(victims, nc * sizeof *victims);
            if (p == NULL)
                break;
            victims = p;
            cap = nc;
        }
        if ((victims[n].name = strdup(de->d_name)) != NULL)
            victims[n++].pid = pid;
    }
    for (size_t i = 0; i < n; i++) {
        rs_log(RS_LOG_INFO, "removing %s/%s, left by process %ld which is gone", parent, victims[i].name,
               victims[i].pid);
        if (rm_tree_at(dirfd(d), victims[i].name, 0) != 0)
            rs_log(RS_LOG_WARN, "%s/%s: cannot remove: %s", parent, victims[i].name, strerror(errno));
        free(victims[i].name);
    }
    free(victims);
    closedir(d);
}

static uint32_t random32(void)
{
    uint32_t r;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) == (ssize_t)sizeof r)
        return r;
    static uint64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ ((uint64_t)getpid() << 17) ^
                 (++counter * 0x9E3779B97F4A7C15ULL);
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ULL;
    x ^= x >> 29;
    return (uint32_t)x;
}

/* ---- the API ---- */

int rs_outdir_begin(rs_outdir *od, const char *final, int force, rs_error *err)
{
    char *fin, *parent;
    const char *base;
    memset(od, 0, sizeof *od);
    if (final == NULL || final[0] == '\0')
        return rs_error_set(err, RS_EXIT_USAGE, "an empty path is not an output directory");
    if (split_path(final, &fin, &parent, &base) != 0)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    if (base[0] == '\0' || strcmp(base, ".") == 0 || strcmp(base, "..") == 0) {
        rs_error_set(err, RS_EXIT_USAGE, "%s: cannot be used as an output directory (name a new directory)", final);
        goto fail;
    }

    struct stat st;
    int exists = lstat(fin, &st) == 0;
    if (exists) {
        if (!S_ISDIR(st.st_mode)) {
            rs_error_set(err, RS_EXIT_EXISTS, "%s: exists and is not a directory (not replacing it)", fin);
            goto fail;
        }
        if (!force) {
            rs_error_set(err, RS_EXIT_EXISTS, "%s: output exists (use --force to replace it)", fin);
            goto fail;
        }
    } else if (errno != ENOENT) {
        rs_error_set(err, RS_EXIT_IO, "%s: %s", fin, strerror(errno));
        goto fail;
    }

    clean_stale(parent, base, exists);

    char *tmp = NULL;
    for (int attempt = 0;; attempt++) {
        if (asprintf(&tmp, "%s" TMP_TAG "%ld.%08" PRIx32, fin, (long)getpid(), random32()) < 0) {
            rs_error_set(err, RS_EXIT_IO, "out of memory");
            goto fail;
        }
        if (mkdir(tmp, 0755) == 0)
            break;
        int e = errno;
        free(tmp);
        if (e != EEXIST || attempt >= 100) {
            rs_error_set(err, RS_EXIT_IO, "%s: cannot create a directory in %s: %s", fin, parent, strerror(e));
            goto fail;
        }
    }
    free(parent);
    od->final = fin;
    od->tmp = tmp;
    od->force = force != 0;
    return 0;

fail:
    free(fin);
    free(parent);
    return -1;
}

char *rs_outdir_path(const rs_outdir *od, const char *name)
{
    char *p;
    if (od->tmp == NULL || asprintf(&p, "%s/%s", od->tmp, name) < 0)
        return NULL;
    return p;
}

/* rename(tmp, final) only if final does not exist. 0, or -1 with errno
 * (EEXIST/ENOTEMPTY: final exists). */
static int rename_noreplace(const char *from, const char *to)
{
#ifdef RENAME_NOREPLACE
    if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return -1;
#endif
    struct stat st;
    if (lstat(to, &st) == 0) {
        errno = EEXIST;
        return -1;
    }
    return rename(from, to);   /* an empty directory created meanwhile would be replaced */
}

static void release(rs_outdir *od)
{
    free(od->final);
    free(od->tmp);
    memset(od, 0, sizeof *od);
}

int rs_outdir_commit(rs_outdir *od, rs_error *err)
{
    if (od->tmp == NULL || od->final == NULL)
        return rs_error_set(err, RS_EXIT_IO, "internal error: output directory not begun");
    char *fin, *parent, *old = NULL;
    const char *base;
    int rc = -1;
    if (split_path(od->final, &fin, &parent, &base) != 0) {
        rs_error_set(err, RS_EXIT_IO, "out of memory");
        rs_outdir_abort(od);
        return -1;
    }

    int fd = open(od->tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        rs_error_set(err, RS_EXIT_IO, "%s: %s", od->tmp, strerror(errno));
        goto out;
    }
    if (sync_tree(od->tmp, fd, 0, err) != 0)   /* closes fd */
        goto out;

    if (rename_noreplace(od->tmp, fin) != 0) {
        int e = errno;
        if (e != EEXIST && e != ENOTEMPTY) {
            rs_error_set(err, RS_EXIT_IO, "cannot rename %s to %s: %s", od->tmp, fin, strerror(e));
            goto out;
        }
        struct stat st;
        if (!od->force) {
            rs_error_set(err, RS_EXIT_EXISTS, "%s: output exists (use --force to replace it)", fin);
            goto out;
        }
        if (lstat(fin, &st) != 0 || !S_ISDIR(st.st_mode)) {
            rs_error_set(err, RS_EXIT_EXISTS, "%s: exists and is not a directory (not replacing it)", fin);
            goto out;
        }
        if (asprintf(&old, "%s" OLD_TAG "%ld", fin, (long)getpid()) < 0) {
            old = NULL;
            rs_error_set(err, RS_EXIT_IO, "out of memory");
            goto out;
        }
        if (lstat(old, &st) == 0 && rm_tree(old) != 0) {   /* ours, from an earlier commit */
            rs_error_set(err, RS_EXIT_IO, "%s: cannot remove: %s", old, strerror(errno));
            goto out;
        }
        if (rename(fin, old) != 0) {
            rs_error_set(err, RS_EXIT_IO, "cannot rename %s to %s: %s", fin, old, strerror(errno));
            goto out;
        }
        if (rename(od->tmp, fin) != 0) {
            e = errno;
            if (rename(old, fin) != 0)
                rs_error_set(err, RS_EXIT_IO, "cannot rename %s to %s: %s; the previous output is at %s", od->tmp,
                             fin, strerror(e), old);
            else
                rs_error_set(err, RS_EXIT_IO, "cannot rename %s to %s: %s", od->tmp, fin, strerror(e));
            goto out;
        }
    }
    free(od->tmp);
    od->tmp = NULL;   /* published: nothing to remove any more */
    rc = sync_dir(parent, err);
    if (old != NULL && rm_tree(old) != 0)
        rs_log(RS_LOG_WARN, "%s: cannot remove the replaced output: %s", old, strerror(errno));

out:
    free(old);
    free(fin);
    free(parent);
    rs_outdir_abort(od);   /* removes tmp if not published; releases od */
    return rc;
}

void rs_outdir_abort(rs_outdir *od)
{
    if (od->tmp != NULL && rm_tree(od->tmp) != 0)
        rs_log(RS_LOG_WARN, "%s: cannot remove the temporary directory: %s", od->tmp, strerror(errno));
    release(od);
}

/* ---- file names ---- */

char *rs_safe_filename(const char *name)
{
    static const char hex[] = "0123456789ABCDEF";
    enum { LIMIT = 200 };
    size_t n = strlen(name);
    if (n == 0)
        return strdup("%00");
    char *o = malloc(3 * n + 18);
    if (o == NULL)
        return NULL;
    size_t len = 0, cut = 0;   /* cut: the longest boundary <= LIMIT */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        int keep = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
                   c == '-' || (c == '.' && i > 0);
        if (keep) {
            o[len++] = (char)c;
        } else {
            o[len++] = '%';
            o[len++] = hex[c >> 4];
            o[len++] = hex[c & 15];
        }
        if (len <= LIMIT)
            cut = len;
    }
    if (len > LIMIT) {
        uint64_t h[2];
        rs_murmur3_x64_128(name, n, 0, h);
        len = cut + (size_t)snprintf(o + cut, 18, "~%016" PRIx64, h[0]);
    }
    o[len] = '\0';
    return o;
}
