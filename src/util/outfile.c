/* util/outfile.c - temporaries' names (util/tmpname.h) and files
 * published whole (ringshard/outfile.h).
 *
 * A report, a plan or a quarantine file written in place is truncated the
 * moment the run opens it: a run that then fails, or is killed, leaves
 * half a file where the previous good one was. Written to a temporary
 * beside it and renamed over it once complete and fsync'd, the target
 * holds the old bytes or the new ones, never a mix, at every instruction. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "ringshard/hash.h"
#include "ringshard/log.h"
#include "ringshard/outfile.h"
#include "util/tmpname.h"
#include "util/filemode.h"

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

/* ---- paths ---- */

/* Splits final (trailing slashes removed) into its parent and base name. */
int rs_tmp_split_path(const char *final, char **fin, char **parent, const char **base)
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

/* What the tagged names of base start with: base itself when the longest
 * tag fits after it, else base's first bytes (a UTF-8 sequence is not
 * split) + '~' + 16 hex digits of MurmurHash3 of the whole base, RS_TMP_STEM_MAX
 * bytes at most. The same base always gives the same stem, so that the
 * stale cleanup finds a killed run's names again. */
void rs_tmp_stem(const char *base, char out[RS_TMP_STEM_MAX + 1])
{
    size_t n = strlen(base);
    if (n <= RS_TMP_STEM_MAX) {
        memcpy(out, base, n + 1);
        return;
    }
    size_t cut = RS_TMP_STEM_MAX - 17;
    while (cut > 0 && ((unsigned char)base[cut] & 0xC0) == 0x80)
        cut--;
    uint64_t h[2];
    rs_murmur3_x64_128(base, n, 0, h);
    memcpy(out, base, cut);
    snprintf(out + cut, 18, "~%016" PRIx64, h[0]);
}

/* fin with its base name replaced by stem + tag + pid (+ '.' + 8 hex
 * digits when rnd): a sibling of fin. malloc'd, NULL when out of memory. */
char *rs_tmp_tagged_path(const char *fin, const char *base, const char *stem, const char *tag, int rnd)
{
    char *p;
    int n = rnd ? asprintf(&p, "%.*s%s%s%ld.%08" PRIx32, (int)(base - fin), fin, stem, tag, (long)getpid(),
                           random32())
                : asprintf(&p, "%.*s%s%s%ld", (int)(base - fin), fin, stem, tag, (long)getpid());
    return n < 0 ? NULL : p;
}

/* A process that has exited but was never reaped (a zombie: its parent,
 * e.g. mpirun, died first and nothing reaps orphans, as in containers
 * without an init) still answers kill(pid, 0): it is gone all the same. */
int rs_tmp_pid_gone(long pid)
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

/* If name is stem + tag + <digits> + (rest): the pid, with *rest after the
 * digits. Else -1. */
long rs_tmp_tagged_pid(const char *name, const char *stem, const char *tag, const char **rest)
{
    size_t bl = strlen(stem), tl = strlen(tag);
    if (strncmp(name, stem, bl) != 0 || strncmp(name + bl, tag, tl) != 0)
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

/* Removes the regular files "<stem>.ringshard-tmp.<pid>.*" in parent whose
 * process is gone (a killed run's temporaries). */
static void clean_stale_files(const char *parent, const char *stem)
{
    DIR *d = opendir(parent);
    if (d == NULL)
        return;   /* the open that follows reports a parent that is unusable */
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        const char *rest;
        long pid = rs_tmp_tagged_pid(de->d_name, stem, RS_TMP_TAG, &rest);
        struct stat st;
        if (pid < 0 || rest[0] != '.' || rest[1] == '\0' || !rs_tmp_pid_gone(pid) ||
            fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        rs_log(RS_LOG_INFO, "removing %s/%s, left by process %ld which is gone", parent, de->d_name, pid);
        if (unlinkat(dirfd(d), de->d_name, 0) != 0)
            rs_log(RS_LOG_WARN, "%s/%s: cannot remove: %s", parent, de->d_name, strerror(errno));
    }
    closedir(d);
}

char *rs_tmp_create_beside(const char *path, char **fin)
{
    char *parent, *tmp = NULL;
    const char *base;
    char *target = rs_tmp_final_path(path);   /* through a link: its target, the link stays */
    if (target == NULL)
        return NULL;
    int split = rs_tmp_split_path(target, fin, &parent, &base);
    free(target);
    if (split != 0) {
        errno = ENOMEM;
        return NULL;
    }
    char stem[RS_TMP_STEM_MAX + 1];
    rs_tmp_stem(base, stem);
    clean_stale_files(parent, stem);
    /* A file replaced keeps its permission bits, as one that cp or sort -o
     * writes into does: the temporary is created with no more than those
     * (the umask may take some: they are set exactly after), so that it is
     * never more open than the file it replaces, even while empty. A new
     * file gets the mode of every file for the user (util/filemode.h). */
    struct stat st;
    int keep = stat(*fin, &st) == 0 && S_ISREG(st.st_mode);
    int e = 0;
    for (int attempt = 0; attempt <= 100; attempt++) {
        if ((tmp = rs_tmp_tagged_path(*fin, base, stem, RS_TMP_TAG, 1)) == NULL) {
            e = ENOMEM;
            break;
        }
        int fd = keep ? open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, st.st_mode & 0777)
                      : rs_file_create(tmp, O_WRONLY | O_EXCL, RS_FILE_USER);
        if (fd >= 0) {
            if (keep)
                (void)fchmod(fd, st.st_mode & 07777);
            close(fd);
            free(parent);
            return tmp;
        }
        e = errno;
        free(tmp);
        tmp = NULL;
        if (e != EEXIST)
            break;
    }
    free(parent);
    free(*fin);
    *fin = NULL;
    errno = e;
    return NULL;
}

/* ---- rs_outfile ---- */

int rs_tmp_sync_parent(const char *path)
{
    char *fin, *parent;
    const char *base;
    if (rs_tmp_split_path(path, &fin, &parent, &base) != 0)
        return -1;
    int rc = 0, fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || (fsync(fd) != 0 && errno != EINVAL))
        rc = -1;
    int e = errno;
    if (fd >= 0)
        close(fd);
    free(fin);
    free(parent);
    errno = e;
    return rc;
}

int rs_outfile_in_place(const char *path)
{
    /* /dev/stdout or /proc/self/fd/1 may lead to a regular file (a shell's
     * redirection, perhaps appending): replacing that file would drop what
     * the shell put there, and the shell keeps writing to the old one.
     * (/dev/shm is a directory of ordinary files, replaced as any.) */
    static const char *const fd_paths[] = {"/dev/stdout", "/dev/stderr", "/dev/fd/", "/proc/"};
    for (size_t i = 0; i < sizeof fd_paths / sizeof fd_paths[0]; i++)
        if (strncmp(path, fd_paths[i], strlen(fd_paths[i])) == 0)
            return 1;
    struct stat st;
    return stat(path, &st) == 0 && !S_ISREG(st.st_mode);   /* a FIFO, a device: nothing to replace */
}

int rs_outfile_reserve(rs_outfile *of, const char *path, rs_error *err)
{
    memset(of, 0, sizeof *of);
    if (rs_outfile_in_place(path)) {
        of->final = strdup(path);
        of->tmp = of->final ? strdup(path) : NULL;
        of->in_place = 1;
    } else {
        char *fin = NULL;
        of->tmp = rs_tmp_create_beside(path, &fin);   /* through a link: beside its target */
        if (of->tmp == NULL)
            return rs_error_set(err, RS_EXIT_IO, "%s: cannot create: %s", path, strerror(errno));
        of->final = fin;   /* the temporary has the mode fin had (rs_tmp_create_beside) */
    }
    if (of->final == NULL || of->tmp == NULL) {
        rs_outfile_abort(of);
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    }
    return 0;
}

FILE *rs_outfile_stream(const rs_outfile *of)
{
    if (of->in_place && strcmp(of->tmp, "/dev/stdout") == 0) {
        int fd = dup(STDOUT_FILENO);
        FILE *f = fd >= 0 ? fdopen(fd, "a") : NULL;
        if (!f && fd >= 0)
            close(fd);
        return f;
    }
    return rs_file_create_stream(of->tmp, of->in_place ? "a" : "w", RS_FILE_USER);
}

FILE *rs_outfile_open(rs_outfile *of, const char *path, rs_error *err)
{
    if (rs_outfile_reserve(of, path, err) != 0)
        return NULL;
    /* in place, appended to: /dev/stdout may be a shell's `>> log`, which
     * "w" (O_TRUNC) would empty */
    of->f = rs_outfile_stream(of);
    if (of->f == NULL) {
        int e = errno;
        rs_outfile_abort(of);
        rs_error_set(err, RS_EXIT_IO, "%s: cannot create: %s", path, strerror(e));
    }
    return of->f;
}

int rs_outfile_commit(rs_outfile *of, rs_error *err)
{
    int rc = 0, e = 0;
    if (of->f != NULL) {
        int bad = fflush(of->f) != 0 || ferror(of->f);
        e = errno;
        if (!bad && !of->in_place && fsync(fileno(of->f)) != 0)
            bad = 1, e = errno;
        if (fclose(of->f) != 0 && !bad)
            bad = 1, e = errno;
        of->f = NULL;
        if (bad)
            rc = rs_error_set(err, RS_EXIT_IO, "%s: write failed: %s", of->final, strerror(e ? e : EIO));
    } else if (!of->in_place) {
        int fd = open(of->tmp, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || fsync(fd) != 0)
            rc = rs_error_set(err, RS_EXIT_IO, "%s: fsync: %s", of->tmp, strerror(errno));
        if (fd >= 0)
            close(fd);
    }
    if (rc == 0 && !of->in_place) {
        if (rename(of->tmp, of->final) != 0)
            rc = rs_error_set(err, RS_EXIT_IO, "cannot rename %s to %s: %s", of->tmp, of->final, strerror(errno));
        else if (rs_tmp_sync_parent(of->final) != 0)
            rc = rs_error_set(err, RS_EXIT_IO, "%s: written, but may not be durable: the fsync of its directory "
                              "failed: %s", of->final, strerror(errno));
        else
            of->in_place = 1;   /* nothing left to remove */
    }
    rs_outfile_abort(of);
    return rc;
}

void rs_outfile_abort(rs_outfile *of)
{
    if (of->f != NULL)
        fclose(of->f);
    if (of->tmp != NULL && !of->in_place && unlink(of->tmp) != 0 && errno != ENOENT)
        rs_log(RS_LOG_WARN, "%s: cannot remove: %s", of->tmp, strerror(errno));
    free(of->final);
    free(of->tmp);
    memset(of, 0, sizeof *of);
}
