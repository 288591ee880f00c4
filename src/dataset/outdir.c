/* Atomic publication of an output directory (ringshard/outdir.h).
 *
 * FINAL is built as <stem>.ringshard-tmp.<pid>.<8 hex> in FINAL's parent
 * (same file system, so renames are atomic), flushed (every file and
 * directory fsync'd) and published; then the parent is fsync'd so that the
 * publishing rename itself is durable. <stem> is FINAL's base name, or,
 * when that is too long for the tags to fit in NAME_MAX, its first bytes
 * and '~' and a hash of the whole name (see stem()).
 *
 * Publishing. When FINAL does not exist: renameat2(RENAME_NOREPLACE), so
 * that an output another run published meanwhile is never replaced without
 * force. With force over an existing FINAL: renameat2(RENAME_EXCHANGE)
 * swaps the two directories in one step - readers see the old generation
 * or the new one, never no FINAL - and the temporary's name then holds the
 * old generation, which is removed (a kill before that leaves it as a
 * stale temporary, removed by the next run). Two runs replacing the same
 * FINAL at once each swap in turn: one FINAL, complete, is left.
 *
 * What force replaces: a directory that is empty or holds a manifest.json
 * that ringshard wrote (its first bytes name the schema, the kind and
 * "ringshard"). Anything else - a user's directory, the inputs themselves -
 * is refused (RS_EXIT_EXISTS) unless RS_OUTDIR_FORCE_ANY; a file or a
 * symbolic link is always refused. The check is made at begin (to fail
 * before the work) and again just before the swap.
 *
 * Without the exchange (a file system that refuses it with EINVAL, e.g.
 * some network file systems; a warning says so), FINAL is first renamed to
 * <stem>.ringshard-old.<pid>, then the temporary renamed in, then the old
 * one removed. A kill between the two renames leaves no FINAL: the next
 * rs_outdir_begin on it puts the -old directory back (restores the previous
 * output: it is complete, while the temporary beside it may not be).
 *
 * Side files (rs_outdir_side): a file published with the directory (dedup
 * --duplicates) is written as <stem>.ringshard-tmp.<pid>.<hex> beside it
 * and renamed over it only after the directory is published (a killed
 * run's is removed by the next rs_outdir_side on the same path), so a
 * previous file survives any run that does not publish. Through a
 * symbolic link its target is the file replaced, as for every file
 * published whole (util/tmpname.h, rs_tmp_final_path: one rule).
 *
 * Removal never follows symbolic links: the tree is walked with
 * openat(O_NOFOLLOW)/fdopendir/unlinkat.
 *
 * Stale temporaries: a run that was killed leaves its temporary directory;
 * the next rs_outdir_begin on the same FINAL removes every sibling
 * <stem>.ringshard-tmp.<pid>.* whose process no longer exists (kill(pid, 0)
 * fails with ESRCH). A pid that was reused by an unrelated process keeps its
 * directory until that process is gone too; directories of processes on
 * other hosts (a shared file system) cannot be told apart - they count as
 * alive or dead by the local pid, so do not share output directories
 * between hosts.
 *
 * Testing knobs (environment): RINGSHARD_TEST_PAUSE_AT=begun|publish|
 * published|old stops the process with SIGSTOP at that point - the
 * temporary created, just before publishing, just after, between the two
 * renames of the fallback - so that a test can kill it there;
 * RINGSHARD_TEST_NO_EXCHANGE=1 acts as if the file system refused
 * RENAME_EXCHANGE. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "ringshard/hash.h"
#include "ringshard/interrupt.h"
#include "ringshard/log.h"
#include "ringshard/outdir.h"
#include "ringshard/bucketdir.h"
#include "ringshard/outfile.h"
#include "ringshard/testhook.h"
#include "ringshard/util.h"
#include "util/tmpname.h"
#include "dataset/outdir_impl.h"
#include "util/filemode.h"

#define TMP_TAG RS_TMP_TAG
#define OLD_TAG OD_OLD_TAG
#define HELD_TAG OD_HELD_TAG
#define MAX_TREE_DEPTH 256

/* ---- recursive removal without following links ---- */

int od_rm_tree_at(int dirfd, const char *name, int depth)
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
            if (od_rm_tree_at(fd, de->d_name, depth + 1) != 0) {
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
    return od_rm_tree_at(AT_FDCWD, path, 0);
}

/* ---- fsync of a tree ---- */

/* Files are flushed in windows of SYNC_WINDOW: first every file's
 * writeback is started (sync_file_range), then the files are fsync'd by
 * SYNC_THREADS threads at once. One fsync after another leaves the device
 * idle between files; starting the writeback first keeps its queue full,
 * and concurrent fsyncs share their journal commits and cache flushes
 * (the block layer merges flushes that wait together): 1000 files of
 * 480 kB whose data is already on the disk took 0.07-0.48 s one by one
 * and 0.016-0.019 s on 8 threads (docs/performance.md, publishing). */
#define SYNC_WINDOW 256
#define SYNC_THREADS 8

typedef struct {
    int fd[SYNC_WINDOW];
    char *name[SYNC_WINDOW];
    int err[SYNC_WINDOW];   /* errno of the file's fsync, 0 when it succeeded */
    int n, next;            /* files; the next one a thread claims */
} sync_window;

static void *fsync_worker(void *arg)
{
    sync_window *w = arg;
    for (int i; (i = __atomic_fetch_add(&w->next, 1, __ATOMIC_RELAXED)) < w->n;)
        w->err[i] = fsync(w->fd[i]) == 0 ? 0 : errno;
    return NULL;
}

/* fsyncs every file of w, on up to SYNC_THREADS threads (fewer when
 * threads cannot be made: the calling thread does the rest). A window of
 * fewer than SYNC_PARALLEL_MIN files is synced by the calling thread
 * alone, in order: threads buy nothing there, and its system calls keep
 * one order (the fault-injection sweeps of tests/append_lib.sh count
 * each thread's calls). */
#define SYNC_PARALLEL_MIN 32
static void fsync_all(sync_window *w)
{
    pthread_t th[SYNC_THREADS];
    int made = 0;
    w->next = 0;
    if (w->n < SYNC_PARALLEL_MIN) {
        fsync_worker(w);
        return;
    }
    pthread_attr_t at;
    int attr = pthread_attr_init(&at) == 0;
    if (attr)
        pthread_attr_setstacksize(&at, (size_t)64 << 10);
    while (made < SYNC_THREADS - 1 && made < w->n - 1 &&
           pthread_create(&th[made], attr ? &at : NULL, fsync_worker, w) == 0)
        made++;
    if (attr)
        pthread_attr_destroy(&at);
    fsync_worker(w);
    for (int k = 0; k < made; k++)
        pthread_join(th[k], NULL);
}

/* The first failure in directory order is the one reported, whichever
 * thread met it first. */
static int flush_window(const char *path, sync_window *w, rs_error *err)
{
    int rc = 0;
    for (int i = 0; i < w->n; i++)
        (void)sync_file_range(w->fd[i], 0, 0, SYNC_FILE_RANGE_WRITE);  /* a hint: fsync reports errors */
    fsync_all(w);
    for (int i = 0; i < w->n; i++) {
        if (rc == 0 && w->err[i])
            rc = rs_error_set(err, RS_EXIT_IO, "%s/%s: fsync: %s", path, w->name[i], strerror(w->err[i]));
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

/* rename only if `to` does not exist. 0, or -1 with errno (EEXIST or
 * ENOTEMPTY: `to` exists). */
int od_rename_noreplace_at(int fromfd, const char *from, int tofd, const char *to)
{
#ifdef RENAME_NOREPLACE
    if (renameat2(fromfd, from, tofd, to, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return -1;
#endif
    struct stat st;
    if (fstatat(tofd, to, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        errno = EEXIST;
        return -1;
    }
    return renameat(fromfd, from, tofd, to);   /* an empty directory created meanwhile would be replaced */
}

/* Swaps two directories in one step. -1 with EINVAL or ENOSYS where the
 * file system (or the kernel) cannot, or RINGSHARD_TEST_NO_EXCHANGE=1. */
static int exchange(const char *a, const char *b)
{
    const char *knob = getenv("RINGSHARD_TEST_NO_EXCHANGE");
    if (knob != NULL && strcmp(knob, "1") == 0) {
        errno = EINVAL;
        return -1;
    }
#ifdef RENAME_EXCHANGE
    return renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE);
#else
    errno = ENOSYS;
    return -1;
#endif
}

/* Does the directory hold a manifest.json that ringshard wrote? Its first
 * bytes are enough: a JSON object naming "schema", "kind" and "ringshard"
 * (the "tool" member), in the order the writer puts them. */
int od_holds_our_manifest(int dfd)
{
    int fd = openat(dfd, "manifest.json", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ELOOP ? -2 : -1;   /* a link, or none */
    char buf[4096];
    ssize_t k = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (k <= 0)
        return 0;
    buf[k] = '\0';
    const char *p = buf + strspn(buf, " \t\r\n");
    const char *schema = strstr(p, "\"schema\""), *kind = schema ? strstr(schema, "\"kind\"") : NULL;
    return *p == '{' && kind != NULL && strstr(kind, "\"ringshard\"") != NULL;
}

/* A bucket directory whose chain of generations is damaged is not
 * replaced by --force: the rows of its intact generations would go with
 * it, unseen (repair keeps them; --force-any replaces it all the same).
 * One that cannot be opened as a bucket directory is judged as before.
 * Damage seen in a directory that another --force run replaced meanwhile
 * (it removes the old one's files after its exchange) is that old one's
 * removal, not damage: the directory now in place is looked at again. */
static int refuse_damaged(const char *fin, rs_error *err)
{
    rs_bucketdir bd;
    for (int tries = 0;; tries++) {
        rs_error e = {0};
        if (rs_bucketdir_open_flags(&bd, fin, UINT64_MAX, RS_BUCKETDIR_TOLERANT, &e) != 0)
            return 0;
        if (!bd.ndamage || tries == 100 || !rs_bucketdir_replaced(&bd))
            break;
        rs_bucketdir_close(&bd);
    }
    int rc = 0;
    if (bd.ndamage) {
        size_t more = bd.ndamage - 1;
        rc = rs_error_set(err, RS_EXIT_DATA, "%s: damaged: %s%s%s; --force refuses to replace a damaged directory "
                          "and left it as it was: run `ringshard verify %s` for every damage; `ringshard repair %s` "
                          "keeps the rows of the intact generations (--force-any replaces it all the same)", fin,
                          bd.damage[0].msg, more ? ", and " : "", more ? (more == 1 ? "1 more damage" : "more damages") : "",
                          fin, fin);
    }
    rs_bucketdir_close(&bd);
    return rc;
}

/* May fin (an existing directory) be replaced: empty, or a ringshard
 * output, or any directory with RS_OUTDIR_FORCE_ANY? 0, or -1 with err
 * (RS_EXIT_EXISTS) saying what is there. */
static int check_replaceable(const char *fin, int flags, rs_error *err)
{
    if (flags & RS_OUTDIR_FORCE_ANY)
        return 0;
    int fd = open(fin, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return rs_error_set(err, RS_EXIT_IO, "%s: %s", fin, strerror(errno));
    int ours = od_holds_our_manifest(fd);
    DIR *d = fdopendir(fd);
    if (d == NULL) {
        int e = errno;
        close(fd);
        return rs_error_set(err, RS_EXIT_IO, "%s: %s", fin, strerror(e));
    }
    size_t entries = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        entries += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
    closedir(d);
    if (entries == 0)
        return 0;
    if (ours > 0)
        return refuse_damaged(fin, err);
    return rs_error_set(err, RS_EXIT_EXISTS,
                        "%s: not a ringshard output (holds %zu %s, %s): refusing to replace it "
                        "(--force-any replaces any directory)",
                        fin, entries, entries == 1 ? "entry" : "entries",
                        ours == -2 ? "its manifest.json a symbolic link, which ringshard never writes"
                        : ours < 0 ? "no manifest.json" : "a manifest.json that ringshard did not write");
}

/* Refuses an existing fin (lstat'd into st) that must not be replaced:
 * anything but a directory, any directory without force, and one that
 * check_replaceable refuses. 0 or -1 with err. */
static int check_existing(const char *fin, const struct stat *st, int flags, rs_error *err)
{
    if (S_ISLNK(st->st_mode))
        return rs_error_set(err, RS_EXIT_EXISTS,
                            "%s: is a symbolic link (not replacing it: name the directory itself)", fin);
    if (!S_ISDIR(st->st_mode))
        return rs_error_set(err, RS_EXIT_EXISTS, "%s: exists and is not a directory (not replacing it)", fin);
    if (!(flags & (RS_OUTDIR_FORCE | RS_OUTDIR_FORCE_ANY)))
        return rs_error_set(err, RS_EXIT_EXISTS, "%s: output exists (use --force to replace it)", fin);
    return check_replaceable(fin, flags, err);
}

/* ---- the API ---- */

int rs_outdir_begin(rs_outdir *od, const char *final, int force, rs_error *err)
{
    char *fin, *parent;
    const char *base;
    memset(od, 0, sizeof *od);
    if (final == NULL || final[0] == '\0')
        return rs_error_set(err, RS_EXIT_USAGE, "an empty path is not an output directory");
    if (rs_tmp_split_path(final, &fin, &parent, &base) != 0)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    if (base[0] == '\0' || strcmp(base, ".") == 0 || strcmp(base, "..") == 0) {
        rs_error_set(err, RS_EXIT_USAGE, "%s: cannot be used as an output directory (name a new directory)", final);
        goto fail;
    }
    char stem[RS_TMP_STEM_MAX + 1];
    rs_tmp_stem(base, stem);
    if (od_clean_stale(parent, base, stem, err) != 0)   /* first: it may restore fin */
        goto fail;

    struct stat st;
    if (force & RS_OUTDIR_STAGE) {
        if (lstat(fin, &st) != 0 || !S_ISDIR(st.st_mode)) {
            rs_error_set(err, RS_EXIT_IO, "%s: %s", fin, errno ? strerror(errno) : "not a directory");
            goto fail;
        }
    } else if (lstat(fin, &st) == 0) {
        if (check_existing(fin, &st, force, err) != 0)
            goto fail;
    } else if (errno != ENOENT) {
        rs_error_set(err, RS_EXIT_IO, "%s: %s", fin, strerror(errno));
        goto fail;
    }

    char *tmp = NULL;
    for (int attempt = 0;; attempt++) {
        if ((tmp = rs_tmp_tagged_path(fin, base, stem, TMP_TAG, 1)) == NULL) {
            rs_error_set(err, RS_EXIT_IO, "out of memory");
            goto fail;
        }
        if (rs_dir_create(tmp, RS_FILE_USER) == 0)
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
    od->force = force;
    rs_test_pause("begun");
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

const char *rs_outdir_side(rs_outdir *od, const char *path, rs_error *err)
{
    if (od->tmp == NULL) {
        rs_error_set(err, RS_EXIT_IO, "internal error: output directory not begun");
        return NULL;
    }
    if (rs_outfile_in_place(path))
        return path;   /* /dev/stdout, a FIFO: nothing to replace */
    char *fin, *tmp = rs_tmp_create_beside(path, &fin);
    if (tmp == NULL) {
        rs_error_set(err, RS_EXIT_IO, "%s: cannot create a file beside it: %s", path, strerror(errno));
        return NULL;
    }
    char **f = realloc(od->side_final, (od->nside + 1) * sizeof *f);
    if (f)
        od->side_final = f;
    char **t = f ? realloc(od->side_tmp, (od->nside + 1) * sizeof *t) : NULL;
    if (t)
        od->side_tmp = t;
    if (!f || !t) {
        unlink(tmp);
        free(tmp);
        free(fin);
        rs_error_set(err, RS_EXIT_IO, "out of memory");
        return NULL;
    }
    f[od->nside] = fin;
    t[od->nside++] = tmp;
    return tmp;
}

static void release(rs_outdir *od)
{
    if (od->lockfd > 0)
        close(od->lockfd);
    free(od->final);
    free(od->tmp);
    for (size_t i = 0; i < od->nside; i++) {
        free(od->side_final[i]);
        free(od->side_tmp[i]);
    }
    free(od->side_final);
    free(od->side_tmp);
    memset(od, 0, sizeof *od);
}

/* The file system refuses the exchange: FINAL is replaced in two renames,
 * with a window without FINAL. Said once a process. */
static void warn_no_exchange(const char *fin, const char *old, int e)
{
    static int said;
    if (said++)
        return;
    rs_log(RS_LOG_WARN, "%s: the file system cannot exchange two directories (renameat2 RENAME_EXCHANGE: %s): "
           "replacing it in two renames; if killed between them, the next run on it restores the previous "
           "output from %s", fin, strerror(e), old);
}

/* The two-rename replacement: fin -> old, tmp -> fin. 0 when published
 * (old then holds the previous output), 1 to start again (fin went away,
 * or another run published into the window: what old holds is older than
 * that, and removed), -1 with err (fin put back in place if possible). */
static int replace_in_two(rs_outdir *od, const char *fin, const char *old, rs_error *err)
{
    struct stat st;
    if (lstat(old, &st) == 0 && rm_tree(old) != 0)   /* ours, from an earlier commit */
        return rs_error_set(err, RS_EXIT_IO, "%s: cannot remove: %s", old, strerror(errno));
    if (rename(fin, old) != 0) {
        if (errno == ENOENT)
            return 1;
        return rs_error_set(err, RS_EXIT_IO, "cannot rename %s to %s: %s", fin, old, strerror(errno));
    }
    rs_test_pause("old");
    if (od_rename_noreplace_at(AT_FDCWD, od->tmp, AT_FDCWD, fin) == 0)
        return 0;
    int e = errno;
    if (e == EEXIST || e == ENOTEMPTY) {
        if (rm_tree(old) != 0)
            return rs_error_set(err, RS_EXIT_IO, "%s: cannot remove: %s", old, strerror(errno));
        return 1;
    }
    if (rename(old, fin) != 0)
        return rs_error_set(err, RS_EXIT_IO, "cannot rename %s to %s: %s; the previous output is at %s", od->tmp,
                            fin, strerror(e), old);
    return rs_error_set(err, RS_EXIT_IO, "cannot rename %s to %s: %s", od->tmp, fin, strerror(e));
}

/* Publishes od->tmp as fin. 0 with *displaced set to what now holds the
 * previous output (od->tmp after an exchange, old after two renames) or
 * NULL; -1 with err. */
static int publish(rs_outdir *od, const char *fin, const char *old, const char **displaced, rs_error *err)
{
    *displaced = NULL;
    for (int attempt = 0; attempt < 100; attempt++) {
        if (od_rename_noreplace_at(AT_FDCWD, od->tmp, AT_FDCWD, fin) == 0)
            return 0;
        int e = errno;
        if (e != EEXIST && e != ENOTEMPTY)
            return rs_error_set(err, RS_EXIT_IO, "cannot rename %s to %s: %s", od->tmp, fin, strerror(e));
        struct stat st;
        if (lstat(fin, &st) != 0) {
            if (errno == ENOENT)
                continue;   /* gone meanwhile: rename again */
            return rs_error_set(err, RS_EXIT_IO, "%s: %s", fin, strerror(errno));
        }
        if (check_existing(fin, &st, od->force, err) != 0)
            return -1;
        /* an append or another replacement under way finishes first; the
         * lock is held until the displaced generation is removed */
        if (!od->lockfd) {
            int lfd, lr = rs_outdir_lock(fin, &lfd, err);
            if (lr < 0)
                return -1;
            if (lr > 0)
                continue;   /* gone meanwhile: rename again */
            od->lockfd = lfd;
            if (check_existing(fin, &st, od->force, err) != 0)
                return -1;
        }
        if (exchange(od->tmp, fin) == 0) {
            *displaced = od->tmp;
            return 0;
        }
        e = errno;
        if (e == ENOENT)
            continue;
        if (e != EINVAL && e != ENOSYS)
            return rs_error_set(err, RS_EXIT_IO, "cannot exchange %s and %s: %s", od->tmp, fin, strerror(e));
        warn_no_exchange(fin, old, e);
        int r = replace_in_two(od, fin, old, err);
        if (r < 0)
            return -1;
        if (r == 0) {
            *displaced = old;
            return 0;
        }
    }
    return rs_error_set(err, RS_EXIT_IO, "%s: cannot publish: it keeps changing (other runs replacing it?)", fin);
}

/* After the directory is published: its side files over their targets.
 * A failure leaves the new file at its temporary name and says so. */
static int publish_sides(rs_outdir *od, rs_error *err)
{
    int rc = 0;
    for (size_t i = 0; i < od->nside; i++) {
        if (rename(od->side_tmp[i], od->side_final[i]) != 0) {
            if (rc == 0)
                rc = rs_error_set(err, RS_EXIT_IO, "%s: published, but %s cannot be put in place: %s (it is at %s)",
                                  od->final, od->side_final[i], strerror(errno), od->side_tmp[i]);
        } else if (rs_tmp_sync_parent(od->side_final[i]) != 0 && rc == 0) {
            rc = rs_error_set(err, RS_EXIT_IO, "%s: published, but may not be durable: fsync of the directory of %s "
                              "failed: %s", od->side_final[i], od->side_final[i], strerror(errno));
        }
        free(od->side_tmp[i]);
        free(od->side_final[i]);
    }
    od->nside = 0;
    return rc;
}

/* The temporary tree made durable, then the last look at a stop signal
 * before anything is published: a signal that came after the pipeline's
 * last look at the flag (while the files were closed, the manifest
 * written, the tree fsync'd: seconds for a large output) makes exit 130,
 * which says nothing was published, so nothing is. (Files published whole
 * have the same check in rs_interrupt_publish_gate.) */
static int ready_to_publish(rs_outdir *od, rs_error *err)
{
    int fd = open(od->tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return rs_error_set(err, RS_EXIT_IO, "%s: %s", od->tmp, strerror(errno));
    if (sync_tree(od->tmp, fd, 0, err) != 0)   /* closes fd */
        return -1;
    rs_test_pause("publish");
    if (rs_interrupt_pending())
        return rs_error_set(err, RS_EXIT_INTERRUPTED, "interrupted");
    return 0;
}

int rs_outdir_commit(rs_outdir *od, rs_error *err)
{
    if (od->tmp == NULL || od->final == NULL)
        return rs_error_set(err, RS_EXIT_IO, "internal error: output directory not begun");
    char *fin, *parent, *old = NULL;
    const char *base;
    int rc = -1;
    if (rs_tmp_split_path(od->final, &fin, &parent, &base) != 0) {
        rs_error_set(err, RS_EXIT_IO, "out of memory");
        rs_outdir_abort(od);
        return -1;
    }
    char stem[RS_TMP_STEM_MAX + 1];
    rs_tmp_stem(base, stem);
    if ((old = rs_tmp_tagged_path(fin, base, stem, OLD_TAG, 0)) == NULL) {
        rs_error_set(err, RS_EXIT_IO, "out of memory");
        goto out;
    }
    if (ready_to_publish(od, err) != 0)
        goto out;
    const char *displaced;
    if (publish(od, fin, old, &displaced, err) != 0)
        goto out;
    char *gone = displaced == od->tmp ? od->tmp : NULL;   /* now the previous output */
    if (gone == NULL)
        free(od->tmp);
    od->tmp = NULL;   /* published: nothing to remove any more */
    rs_test_pause("published");
    /* readers may see fin now: a failure from here on cannot be undone */
    rc = rs_tmp_sync_parent(fin);
    if (rc != 0)
        rs_error_set(err, RS_EXIT_IO, "%s: published, but may not be durable: fsync of %s failed: %s", fin, parent,
                     strerror(errno));
    if (publish_sides(od, rc == 0 ? err : &(rs_error){0}) != 0)
        rc = -1;
    if (displaced != NULL && rm_tree(displaced) != 0)
        rs_log(RS_LOG_WARN, "%s: cannot remove the replaced output: %s", displaced, strerror(errno));
    free(gone);

out:
    free(old);
    free(fin);
    free(parent);
    rs_outdir_abort(od);   /* removes tmp if not published; releases od */
    return rc;
}

/* The held directory (see commit_aside) exchanged with fin, then renamed
 * to aside; where the file system cannot exchange, fin renamed to aside
 * and held to fin. 0, or -1 with err: *kept 0 when held is still the new
 * directory and fin untouched (or put back), 1 when held must stay. */
static int swap_aside(const char *held, const char *fin, const char *aside, int *kept, rs_error *err)
{
    *kept = 0;
    if (exchange(held, fin) == 0) {
        rs_interrupt_published();   /* from here the run finishes */
        rs_test_pause("exchanged");
        *kept = 1;
        if (od_rename_noreplace_at(AT_FDCWD, held, AT_FDCWD, aside) != 0)
            return rs_error_set(err, RS_EXIT_IO, "%s: published, but the directory it replaced cannot be renamed "
                                "from %s to %s: %s (move it there yourself)", fin, held, aside, strerror(errno));
        return 0;
    }
    int e = errno;
    if (e != EINVAL && e != ENOSYS)
        return rs_error_set(err, RS_EXIT_IO, "cannot exchange %s and %s: %s", held, fin, strerror(e));
    rs_log(RS_LOG_WARN, "%s: the file system cannot exchange two directories (renameat2 RENAME_EXCHANGE: %s): "
           "replacing it in two renames; if killed between them, the next run on it says how to put %s in place",
           fin, strerror(e), held);
    if (od_rename_noreplace_at(AT_FDCWD, fin, AT_FDCWD, aside) != 0)
        return rs_error_set(err, RS_EXIT_IO, "cannot rename %s to %s: %s", fin, aside, strerror(errno));
    rs_interrupt_published();
    rs_test_pause("aside");
    if (od_rename_noreplace_at(AT_FDCWD, held, AT_FDCWD, fin) != 0) {
        e = errno;
        *kept = 1;
        if (od_rename_noreplace_at(AT_FDCWD, aside, AT_FDCWD, fin) == 0)
            return rs_error_set(err, RS_EXIT_IO, "cannot rename %s to %s: %s; %s put back as it was", held, fin,
                                strerror(e), fin);
        return rs_error_set(err, RS_EXIT_IO, "cannot rename %s to %s: %s; the previous %s is at %s, the new one at "
                            "%s", held, fin, strerror(e), fin, aside, held);
    }
    return 0;
}

/* Why not an exchange of the temporary itself: after it the previous
 * directory would sit at the temporary's name, which the next run removes
 * as litter. The complete temporary is first renamed to a name that no
 * run removes (<stem>.ringshard-repair.<pid>: a run that finds it says
 * where it is and how to put it back, clean_stale), and that one is
 * exchanged with final: final names a whole directory at every instant. */
int rs_outdir_commit_aside(rs_outdir *od, const char *aside, rs_error *err)
{
    char *fin = NULL, *parent = NULL, *held = NULL;
    const char *base;
    int rc = -1;
    if (od->tmp == NULL || od->final == NULL) {
        rs_outdir_abort(od);
        return rs_error_set(err, RS_EXIT_IO, "internal error: output directory not begun");
    }
    char stem[RS_TMP_STEM_MAX + 1];
    if (rs_tmp_split_path(od->final, &fin, &parent, &base) != 0 ||
        (rs_tmp_stem(base, stem), !(held = rs_tmp_tagged_path(fin, base, stem, HELD_TAG, 0)))) {
        rs_error_set(err, RS_EXIT_IO, "out of memory");
        goto out;
    }
    if (ready_to_publish(od, err) != 0)
        goto out;
    if (od_rename_noreplace_at(AT_FDCWD, od->tmp, AT_FDCWD, held) != 0) {
        rs_error_set(err, RS_EXIT_IO, "cannot rename %s to %s: %s", od->tmp, held, strerror(errno));
        goto out;
    }
    rs_test_pause("held");
    int kept;
    if (swap_aside(held, od->final, aside, &kept, err) != 0) {
        if (!kept && od_rename_noreplace_at(AT_FDCWD, held, AT_FDCWD, od->tmp) != 0)
            rs_log(RS_LOG_WARN, "%s: cannot rename it back to %s: %s", held, od->tmp, strerror(errno));
        goto out;
    }
    free(od->tmp);
    od->tmp = NULL;
    rs_test_pause("published");
    rc = 0;
    if (rs_tmp_sync_parent(od->final) != 0)
        rc = rs_error_set(err, RS_EXIT_IO, "%s: published, but may not be durable: fsync of its parent failed: %s",
                          od->final, strerror(errno));
out:
    free(fin);
    free(parent);
    free(held);
    rs_outdir_abort(od);
    return rc;
}

/* Waits until flock(fd, LOCK_EX) is ours or a stop signal comes. */
static int wait_lock(int fd, const char *dir, rs_error *err)
{
    if (flock(fd, LOCK_EX | LOCK_NB) == 0)
        return 0;
    if (errno != EWOULDBLOCK && errno != EINTR)
        return rs_error_set(err, RS_EXIT_IO, "%s: cannot lock: %s", dir, strerror(errno));
    rs_log(RS_LOG_WARN, "%s: another run is writing it; waiting for it to finish", dir);
    struct pollfd p = {rs_interrupt_fd(), POLLIN, 0};
    while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK && errno != EINTR)
            return rs_error_set(err, RS_EXIT_IO, "%s: cannot lock: %s", dir, strerror(errno));
        if (rs_interrupt_pending())
            return rs_error_set(err, RS_EXIT_INTERRUPTED, "interrupted while waiting for the lock of %s", dir);
        /* wakes at once on a stop signal (the interrupt pipe), else retries */
        (void)poll(&p, p.fd >= 0 ? 1 : 0, 50);
    }
    return 0;
}

static int lock_dir(const char *dir, int *fd, rs_error *err)
{
    for (int attempt = 0; attempt < 1000; attempt++) {
        struct stat st, now;
        if (lstat(dir, &st) != 0) {
            if (errno == ENOENT)
                return 1;
            return rs_error_set(err, RS_EXIT_IO, "%s: %s", dir, strerror(errno));
        }
        if (S_ISLNK(st.st_mode))
            return rs_error_set(err, RS_EXIT_EXISTS, "%s: is a symbolic link (name the directory itself)", dir);
        if (!S_ISDIR(st.st_mode))
            return rs_error_set(err, RS_EXIT_EXISTS, "%s: exists and is not a directory", dir);
        int d = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (d < 0) {
            if (errno == ENOENT)
                continue;   /* removed between the lstat and the open */
            return rs_error_set(err, RS_EXIT_IO, "%s: cannot open: %s", dir, strerror(errno));
        }
        if (wait_lock(d, dir, err) != 0) {
            close(d);
            return -1;
        }
        /* the run we waited for may have replaced dir (--force, compact) */
        if (fstat(d, &st) == 0 && lstat(dir, &now) == 0 && st.st_dev == now.st_dev && st.st_ino == now.st_ino) {
            *fd = d;
            return 0;
        }
        close(d);
    }
    return rs_error_set(err, RS_EXIT_IO, "%s: cannot lock: it keeps being replaced", dir);
}

int rs_outdir_lock(const char *dir, int *fd, rs_error *err)
{
    *fd = -1;
    /* DIR/ is DIR: without the slash, so that lstat sees a symbolic link
     * as rs_outdir_begin does (the slash would follow it) */
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/')
        len--;
    char *d = strndup(dir, len);
    if (!d)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    int rc = lock_dir(d, fd, err);
    free(d);
    return rc;
}

int rs_outdir_commit_into(rs_outdir *od, const char *const *names, size_t n, rs_error *err)
{
    if (od->tmp == NULL || od->final == NULL || !(od->force & RS_OUTDIR_STAGE)) {
        rs_outdir_abort(od);
        return rs_error_set(err, RS_EXIT_IO, "internal error: no staged output directory");
    }
    int rc = -1, fin_fd = -1, tmp_fd = open(od->tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (tmp_fd < 0 || sync_tree(od->tmp, dup(tmp_fd), 0, err) != 0) {
        if (tmp_fd < 0)
            rs_error_set(err, RS_EXIT_IO, "%s: %s", od->tmp, strerror(errno));
        goto out;
    }
    if ((fin_fd = open(od->final, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        rs_error_set(err, RS_EXIT_IO, "%s: %s", od->final, strerror(errno));
        goto out;
    }
    rs_test_pause("publish");
    if (rs_interrupt_pending()) {   /* as in rs_outdir_commit: nothing published yet */
        rs_error_set(err, RS_EXIT_INTERRUPTED, "interrupted");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        int is_dir = fstatat(tmp_fd, names[i], &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
        int r = is_dir ? od_rename_noreplace_at(tmp_fd, names[i], fin_fd, names[i])
                       : renameat(tmp_fd, names[i], fin_fd, names[i]);
        if (r != 0) {
            rs_error_set(err, RS_EXIT_IO, "cannot rename %s/%s into %s: %s%s", od->tmp, names[i], od->final,
                         strerror(errno), i ? " (the names before it are published)" : "");
            goto out;
        }
        if (i == 0)
            rs_interrupt_published();
        if (i + 2 == n)
            rs_test_pause("upgraded");
    }
    rs_test_pause("published");
    rc = 0;
    if (fsync(fin_fd) != 0) {
        rs_error_set(err, RS_EXIT_IO, "%s: published, but may not be durable: fsync failed: %s", od->final,
                     strerror(errno));
        rc = -1;
    }
    if (publish_sides(od, rc == 0 ? err : &(rs_error){0}) != 0)
        rc = -1;
out:
    if (tmp_fd >= 0)
        close(tmp_fd);
    if (fin_fd >= 0)
        close(fin_fd);
    rs_outdir_abort(od);   /* removes what is left of the temporary; releases od */
    return rc;
}

void rs_outdir_abort(rs_outdir *od)
{
    if (od->tmp != NULL && rm_tree(od->tmp) != 0)
        rs_log(RS_LOG_WARN, "%s: cannot remove the temporary directory: %s", od->tmp, strerror(errno));
    for (size_t i = 0; i < od->nside; i++)
        if (unlink(od->side_tmp[i]) != 0 && errno != ENOENT)
            rs_log(RS_LOG_WARN, "%s: cannot remove: %s", od->side_tmp[i], strerror(errno));
    release(od);
}

int rs_outdir_refuse_inside(const char *what, const char *path, const char *outdir, rs_error *err)
{
    if (!path || !outdir || !strcmp(path, "-") || !rs_path_within(path, outdir))
        return 0;
    return rs_error_set(err, RS_EXIT_USAGE,
                        "%s%s: inside the output directory %s, which is replaced when the output is published "
                        "(the file would be lost): write it elsewhere",
                        what, path, outdir);
}
