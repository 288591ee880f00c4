/* tests/failalloc.c - a preload library that makes realloc fail, so the
 * tests can drive ringshard's out-of-memory paths for real:
 *   LD_PRELOAD=librs_failalloc.so RS_FAIL_REALLOC_MIN=N [RS_FAIL_REALLOC_MAX=M]
 * fails every realloc of an existing block to a size in [N, M] (M default:
 * unlimited). Fresh allocations (realloc(NULL, n), malloc) still succeed,
 * so start-up is unaffected and only growing buffers fail.
 *   RS_FAIL_PTHREAD_CREATE=K
 * makes the K-th and every later pthread_create fail with EAGAIN, as under
 * a process limit (ulimit -u, which root does not feel).
 *   RS_FAIL_DIR_FSYNC=PATH
 * makes fsync of the directory PATH (by device and inode) fail with EIO.
 *   RS_FAIL_FILE_FSYNC=NAME[,NAME...]
 * makes fsync of a regular file of one of these base names fail with EIO. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static size_t lo, hi;
static long fail_thread_from;
static dev_t fsync_dev;
static ino_t fsync_ino;
static int fsync_armed;

/* A constructor, not the first call: realloc may run before the
 * environment is readable (sanitizer runtimes start first). */
__attribute__((constructor)) static void setup(void)
{
    const char *a = getenv("RS_FAIL_REALLOC_MIN"), *b = getenv("RS_FAIL_REALLOC_MAX");
    lo = a ? strtoull(a, NULL, 10) : 0;
    hi = b ? strtoull(b, NULL, 10) : (size_t)-1;
    const char *k = getenv("RS_FAIL_PTHREAD_CREATE"), *d = getenv("RS_FAIL_DIR_FSYNC");
    fail_thread_from = k ? strtol(k, NULL, 10) : 0;
    struct stat st;
    if (d && stat(d, &st) == 0) {
        fsync_dev = st.st_dev;
        fsync_ino = st.st_ino;
        fsync_armed = 1;
    }
}

int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
    static int (*next)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    static long calls;
    if (!next)
        next = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))dlsym(RTLD_NEXT,
                                                                                             "pthread_create");
    if (fail_thread_from > 0 && __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED) >= fail_thread_from)
        return EAGAIN;
    return next(t, a, fn, arg);
}

/* Whether fd is a regular file whose base name RS_FAIL_FILE_FSYNC lists. */
static int listed_file(int fd, const struct stat *st)
{
    const char *list = getenv("RS_FAIL_FILE_FSYNC");
    char link[64], path[PATH_MAX];
    if (!list || !S_ISREG(st->st_mode))
        return 0;
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0)
        return 0;
    path[n] = 0;
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    size_t len = strlen(base);
    for (const char *p = list; *p;) {
        size_t k = strcspn(p, ",");
        if (k == len && !strncmp(p, base, k))
            return 1;
        p += k + (p[k] == ',');
    }
    return 0;
}

int fsync(int fd)
{
    static int (*next)(int);
    if (!next)
        next = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    struct stat st;
    if (fstat(fd, &st) == 0 && listed_file(fd, &st)) {
        errno = EIO;
        return -1;
    }
    if (fsync_armed && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_dev == fsync_dev &&
        st.st_ino == fsync_ino) {
        errno = EIO;
        return -1;
    }
    return next(fd);
}

void *realloc(void *p, size_t n)
{
    static void *(*next)(void *, size_t);
    if (!next)
        next = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
    if (p != NULL && lo > 0 && n >= lo && n <= hi) {
        errno = ENOMEM;
        return NULL;
    }
    return next(p, n);
}
