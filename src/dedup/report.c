/* The --duplicates report of dedup (its format: dedup.h, docs/dedup.md):
 * the per-bucket parts written by rs_dedup_file and their concatenation,
 * through a FILE that keeps the errno of its first failed write. */
#define _GNU_SOURCE  /* fopencookie */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ringshard/dedup.h"
#include "util/filemode.h"

static ssize_t report_write(void *c, const char *buf, size_t n)
{
    rs_dedup_report *r = c;
    size_t done = 0;
    while (done < n) {
        ssize_t k = write(r->fd, buf + done, n - done);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (!r->err)
                r->err = k < 0 ? errno : EIO;
            return done ? (ssize_t)done : -1;
        }
        done += (size_t)k;
        r->written += (unsigned long long)k;
    }
    return (ssize_t)done;
}

static int report_close(void *c)
{
    rs_dedup_report *r = c;
    int rc = close(r->fd);
    if (rc != 0 && !r->err)
        r->err = errno;
    return rc;
}

#define REPORT_BUFFER ((size_t)1 << 16)

FILE *rs_dedup_report_open(const char *path, int scratch, rs_dedup_report *r)
{
    r->err = 0;
    r->buf = NULL;
    r->written = 0;
    r->fd = rs_file_create(path, O_WRONLY | O_TRUNC, scratch ? RS_FILE_SCRATCH : RS_FILE_USER);
    if (r->fd < 0)
        return NULL;
    FILE *f = fopencookie(r, "w", (cookie_io_functions_t){NULL, report_write, NULL, report_close});
    if (!f) {
        int e = errno;
        close(r->fd);
        errno = e;
        return NULL;
    }
    /* a report can list every row of an input: 64 KiB writes rather than
     * stdio's 8 KiB (glibc sizes a buffer only when given one) */
    r->buf = malloc(REPORT_BUFFER);
    if (r->buf)
        setvbuf(f, r->buf, _IOFBF, REPORT_BUFFER);
    return f;
}

int rs_dedup_report_finish(FILE *f, rs_dedup_report *r)
{
    int bad = ferror(f), closed = fclose(f);
    free(r->buf);
    r->buf = NULL;
    if (closed != 0 || bad)
        return r->err ? r->err : EIO;
    return 0;
}

int rs_dedup_report_concat(const char *tmp, const char *shown, const char *prev, char *const *parts, size_t n,
                           int *cut, unsigned long long *written, rs_error *err)
{
    rs_dedup_report rf;
    FILE *out = rs_dedup_report_open(tmp, 0, &rf);
    if (!out)
        return rs_error_set(err, RS_EXIT_IO, "%s: cannot create: %s", shown, strerror(errno));
    char buf[1 << 16];
    /* after EPIPE (rf.err), the parts are still removed, their bytes unread */
    for (size_t i = prev ? 0 : 1; i <= n && (!ferror(out) || rf.err == EPIPE); i++) {
        const char *part = i ? parts[i - 1] : prev;
        FILE *in = fopen(part, "rb");
        if (!in) {
            rs_dedup_report_finish(out, &rf);
            return rs_error_set(err, RS_EXIT_IO, "%s: cannot open: %s", part, strerror(errno));
        }
        size_t k;
        while (!rf.err && (k = fread(buf, 1, sizeof buf, in)) > 0)
            if (fwrite(buf, 1, k, out) != k)
                break;
        int bad_in = ferror(in), e = errno;
        fclose(in);
        if (i)
            unlink(part);
        if (bad_in) {
            rs_dedup_report_finish(out, &rf);
            return rs_error_set(err, RS_EXIT_IO, "%s: read failed: %s", part, strerror(e));
        }
    }
    int e = fflush(out) != 0 || ferror(out) ? (rf.err ? rf.err : EIO) : 0;
    if (!e && fsync(rf.fd) != 0 && errno != EINVAL)   /* a pipe, a terminal: nothing to sync */
        e = errno;
    *written = rf.written;
    int ce = rs_dedup_report_finish(out, &rf);
    if (e == EPIPE) {  /* the reader left: what it read was all it wanted */
        *cut = 1;
        return 0;
    }
    if (e || ce)
        return rs_error_set(err, RS_EXIT_IO, "%s: write failed: %s", shown, strerror(e ? e : ce));
    return 0;
}
