/* Copying a byte range of one file into another (rs_copy_into, util.h):
 * in the kernel (copy_file_range: no trip through user space, a reflink or
 * a server-side copy where the file system offers one), else through a
 * buffer. */
#define _GNU_SOURCE  /* copy_file_range */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include "ringshard/interrupt.h"
#include "ringshard/util.h"

/* Bytes a copy_file_range call moves at most, so that a stop signal is
 * seen during a long copy. */
#define COPY_STEP ((uint64_t)16 << 20)

/* copy_into's fallback: read and write through buf. */
static int copy_through(int fd_in, loff_t in_off, uint64_t len, int fd_out, loff_t out_off, char *buf, size_t cap)
{
    while (len > 0) {
        if (rs_interrupt_pending())
            return errno = EINTR, -1;
        ssize_t n = pread(fd_in, buf, len < cap ? len : cap, in_off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = EIO;
            return -1;
        }
        for (ssize_t w = 0; w < n;) {
            ssize_t k = pwrite(fd_out, buf + w, (size_t)(n - w), out_off);
            if (k < 0 && errno == EINTR)
                continue;
            if (k < 0)
                return -1;
            w += k;
            out_off += k;
        }
        in_off += n;
        len -= (uint64_t)n;
    }
    return 0;
}

int rs_copy_into(int fd_in, uint64_t from, uint64_t len, int fd_out, uint64_t off)
{
    loff_t in_off = (loff_t)from, out_off = (loff_t)off;
    while (len > 0) {
        if (rs_interrupt_pending())
            return errno = EINTR, -1;
        ssize_t n = copy_file_range(fd_in, &in_off, fd_out, &out_off, len < COPY_STEP ? len : COPY_STEP, 0);
        if (n < 0 && (errno == EXDEV || errno == ENOSYS || errno == EOPNOTSUPP || errno == EINVAL))
            break;  /* fall back to read/write below */
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0) {
            errno = EIO;  /* the source is shorter than the caller said */
            return -1;
        }
        len -= (uint64_t)n;
    }
    if (len == 0)
        return 0;
    enum { BUF = 1 << 20 };
    char *buf = malloc(BUF);  /* lanes copy at the same time */
    if (!buf)
        return errno = ENOMEM, -1;
    int rc = copy_through(fd_in, in_off, len, fd_out, out_off, buf, BUF);
    free(buf);
    return rc;
}

