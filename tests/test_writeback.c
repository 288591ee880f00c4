/* Write-behind (ringshard/writeback.h): the thread starts the kernel's
 * writeback of exactly the whole pages handed to it. Observed with
 * cachestat(2) (Linux 6.5+), which counts a file's dirty pages: pages whose
 * writeback was started are no longer dirty; pages never handed over still
 * are, as the kernel's own flusher waits 30 s before writing dirty pages.
 *
 * Something else may flush the disk meanwhile (a `sync`, or the kernel once
 * the machine's dirty pages pass its threshold). Every scenario therefore
 * keeps a canary file that is never handed over: if it is clean afterwards,
 * the scenario saw an outside flush and runs again. The files live under
 * the tests' working directory (the build tree, on a disk), not /tmp, which
 * may be a tmpfs whose pages are never written back. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
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

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define ATTEMPTS 5

/* Dirty pages of fd in [off, off + len) (len 0: to the end). */
static uint64_t dirty_pages(int fd, uint64_t off, uint64_t len)
{
    struct cs_range r = {off, len};
    struct cs st;
    memset(&st, 0, sizeof st);
    if (syscall(SYS_cachestat, fd, &r, &st, 0) != 0) {
        if (errno == ENOSYS)
            cr_skip_test("cachestat(2) needs Linux 6.5 or later: write-behind not checked on this kernel");
        cr_assert_fail("cachestat: %s", strerror(errno));
    }
    return st.dirty;
}

static void append_bytes(int fd, size_t n, char c)
{
    char *p = malloc(n);
    cr_assert_not_null(p);
    memset(p, c, n);
    cr_assert_eq(write(fd, p, n), (ssize_t)n);
    free(p);
}

static int new_file(const char *dir, const char *name, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
    append_bytes(fd, n, 'x');
    return fd;
}

/* A scenario writes its files into dir and checks them; it returns 1 if
 * its canary was flushed by someone else (the checks prove nothing then). */
typedef int (*scenario)(const char *dir);

static void run_scenario(scenario fn)
{
    for (int i = 0; i < ATTEMPTS; i++) {
        char dir[] = "writeback.XXXXXX";
        cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
        int disturbed = fn(dir);
        remove_tree(dir);
        if (!disturbed)
            return;
    }
    cr_assert_fail("something else flushed the disk in each of %d attempts", ATTEMPTS);
}

/* The canary: written, never handed over; 1 if it is not dirty. */
static int canary_flushed(int fd) { return dirty_pages(fd, 0, 0) == 0; }

static int whole_pages_handed_over_and_no_other(const char *dir)
{
    int fds[4];
    fds[0] = new_file(dir, "a", 4 * MiB + 100);
    fds[1] = -1;  /* a slot without a descriptor is skipped */
    fds[2] = new_file(dir, "c", 4 * MiB);
    fds[3] = new_file(dir, "canary", 1 * MiB);
    if (dirty_pages(fds[0], 0, 0) == 0 || canary_flushed(fds[3])) {
        /* flushed already: an outside flush, or a file system without
         * dirty pages (tmpfs), which the next attempts tell apart */
        for (int k = 0; k < 4; k++)
            if (fds[k] >= 0)
                close(fds[k]);
        return 1;
    }
    rs_writeback *wb = rs_writeback_start(fds, 4);
    cr_assert_not_null(wb);
    /* a: 2 MiB and 100 bytes, whose last page is partial; c: nothing */
    uint64_t lens[4] = {2 * MiB + 100, 0, 0, 0};
    rs_writeback_post(wb, lens);
    rs_writeback_stop(wb);  /* finishes what was handed over */
    int disturbed = canary_flushed(fds[3]);
    if (!disturbed) {
        cr_expect_eq(dirty_pages(fds[0], 0, 2 * MiB), 0, "the whole pages handed over are still dirty");
        cr_expect_gt(dirty_pages(fds[0], 2 * MiB, 4 * KiB), 0, "the partial last page was written back");
        cr_expect_gt(dirty_pages(fds[0], 2 * MiB + 4 * KiB, 0), 0, "bytes past the length were written back");
        cr_expect_gt(dirty_pages(fds[2], 0, 0), 0, "a file with nothing handed over was written back");
    }
    close(fds[0]);
    close(fds[2]);
    close(fds[3]);
    return disturbed;
}

Test(writeback, starts_the_writeback_of_the_whole_pages_handed_over_and_no_other)
{
    run_scenario(whole_pages_handed_over_and_no_other);
}

static int hand_overs_while_busy(const char *dir)
{
    int fds[3];
    fds[0] = new_file(dir, "a", 32 * MiB);
    fds[1] = new_file(dir, "b", 1 * MiB);
    fds[2] = new_file(dir, "canary", 1 * MiB);
    rs_writeback *wb = rs_writeback_start(fds, 3);
    cr_assert_not_null(wb);
    /* the thread starts on a's 32 MiB; b's bytes are handed over at once,
     * while it is almost surely still busy: they are taken all the same */
    uint64_t lens[3] = {32 * MiB, 0, 0};
    rs_writeback_post(wb, lens);
    lens[1] = 1 * MiB;
    rs_writeback_post(wb, lens);
    rs_writeback_stop(wb);
    int disturbed = canary_flushed(fds[2]);
    if (!disturbed) {
        cr_expect_eq(dirty_pages(fds[0], 0, 0), 0, "the first hand-over was not written back");
        cr_expect_eq(dirty_pages(fds[1], 0, 0), 0, "a hand-over made while the thread was busy was lost");
    }
    for (int k = 0; k < 3; k++)
        close(fds[k]);
    return disturbed;
}

Test(writeback, hand_overs_made_while_busy_are_not_lost)
{
    run_scenario(hand_overs_while_busy);
}

static int nothing_handed_over(const char *dir)
{
    int fd = new_file(dir, "a", 1 * MiB);
    rs_writeback_stop(rs_writeback_start(&fd, 1));
    int disturbed = canary_flushed(fd);  /* the file is its own canary */
    close(fd);
    return disturbed;
}

Test(writeback, nothing_handed_over_nothing_written_back)
{
    rs_writeback_stop(NULL);  /* NULL is accepted everywhere */
    rs_writeback_post(NULL, NULL);
    run_scenario(nothing_handed_over);
    /* run_scenario fails if the file was clean in every attempt: with nothing
     * handed over, the thread must not have flushed it */
}
