/* Write-behind (ringshard/writeback.h): the thread starts the kernel's
 * writeback of exactly the ranges handed to it. Observed with cachestat(2)
 * (Linux 6.5+), which counts a file's dirty pages: pages whose writeback was
 * started are no longer dirty, pages of a file never handed over still are
 * (the kernel's own flusher waits 30 s before it writes dirty pages). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "ringshard/writeback.h"
#include "support.h"

TestSuite(writeback, .timeout = 60);

#ifndef SYS_cachestat
#define SYS_cachestat 451
#endif

struct cs_range {
    uint64_t off, len;
};
struct cs {
    uint64_t cache, dirty, writeback, evicted, recently_evicted;
};

/* Dirty pages of fd in [off, off + len). */
static uint64_t dirty_pages(int fd, uint64_t off, uint64_t len)
{
    struct cs_range r = {off, len};
    struct cs st;
    memset(&st, 0, sizeof st);
    long rc = syscall(SYS_cachestat, fd, &r, &st, 0);
    cr_assert_eq(rc, 0, "cachestat: %s (this test needs Linux 6.5 or later)", strerror(errno));
    return st.dirty;
}

#define MiB ((size_t)1 << 20)

static int file_with(const char *dir, const char *name, size_t n)
{
    int fd = open(path_join(dir, name), O_RDWR | O_CREAT | O_TRUNC, 0644);
    cr_assert_geq(fd, 0);
    char *p = malloc(n);
    cr_assert_not_null(p);
    memset(p, 'x', n);
    cr_assert_eq(write(fd, p, n), (ssize_t)n);
    free(p);
    return fd;
}

Test(writeback, starts_the_writeback_of_the_ranges_handed_over_and_no_other)
{
    char *dir = make_tmpdir();
    int fds[3];
    fds[0] = file_with(dir, "a", 4 * MiB);
    fds[1] = -1;  /* a slot without a descriptor is skipped */
    fds[2] = file_with(dir, "c", 4 * MiB);
    cr_assert_gt(dirty_pages(fds[0], 0, 0), 0, "freshly written pages should be dirty");
    cr_assert_gt(dirty_pages(fds[2], 0, 0), 0);

    rs_writeback *wb = rs_writeback_start(fds, 3);
    cr_assert_not_null(wb);
    uint64_t lens[3] = {2 * MiB, 0, 0};  /* the first half of a; nothing of c */
    rs_writeback_post(wb, lens);
    rs_writeback_stop(wb);  /* finishes the hand-over in progress */

    cr_expect_eq(dirty_pages(fds[0], 0, 2 * MiB), 0, "the range handed over is still dirty");
    cr_expect_gt(dirty_pages(fds[0], 2 * MiB, 2 * MiB), 0, "bytes past the length handed over were written back");
    cr_expect_gt(dirty_pages(fds[2], 0, 0), 0, "a file with nothing handed over was written back");
    close(fds[0]);
    close(fds[2]);
    remove_tree(dir);
    free(dir);
}

Test(writeback, later_hand_overs_continue_where_the_last_one_ended)
{
    char *dir = make_tmpdir();
    int fd = file_with(dir, "a", 1 * MiB);
    rs_writeback *wb = rs_writeback_start(&fd, 1);
    cr_assert_not_null(wb);
    uint64_t len = 1 * MiB;
    rs_writeback_post(wb, &len);
    /* more bytes arrive, as with every batch; hand-overs that find the
     * thread busy are dropped, the last one (after stop's wait) is not */
    char *p = malloc(3 * MiB);
    cr_assert_not_null(p);
    memset(p, 'y', 3 * MiB);
    cr_assert_eq(write(fd, p, 3 * MiB), (ssize_t)(3 * MiB));
    free(p);
    len = 4 * MiB;
    for (int i = 0; i < 100; i++) {
        rs_writeback_post(wb, &len);
        usleep(1000);
    }
    rs_writeback_stop(wb);
    cr_expect_eq(dirty_pages(fd, 0, 0), 0, "some of the file was never written back");
    close(fd);
    remove_tree(dir);
    free(dir);
}

Test(writeback, nothing_handed_over_nothing_written_back)
{
    char *dir = make_tmpdir();
    int fd = file_with(dir, "a", 1 * MiB);
    rs_writeback_stop(rs_writeback_start(&fd, 1));
    rs_writeback_stop(NULL);    /* NULL is accepted everywhere */
    rs_writeback_post(NULL, NULL);
    cr_expect_gt(dirty_pages(fd, 0, 0), 0);
    close(fd);
    remove_tree(dir);
    free(dir);
}
