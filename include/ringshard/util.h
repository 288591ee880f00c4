/* ringshard/util.h - small helpers the jobs and the cluster layer share. */
#ifndef RINGSHARD_UTIL_H
#define RINGSHARD_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Monotonic seconds (CLOCK_MONOTONIC), for the timings jobs report. */
double rs_now(void);

/* Copies len bytes of fd_in from offset `from` into fd_out at offset off:
 * copy_file_range (a reflink or server-side copy where the file system
 * offers one), else read and write through a buffer. 0, or -1 with errno
 * (EINTR: a stop signal came, rs_interrupt_pending; EIO: fd_in ended
 * first). */
int rs_copy_into(int fd_in, uint64_t from, uint64_t len, int fd_out, uint64_t off);

/* Frees list[0..n) and list itself; list may be NULL. */
void rs_free_strings(char **list, size_t n);

/* malloc for a large table read at random (the ring's arrays): from
 * RS_HUGE_MIN bytes up, whole 2 MiB pages (at most 1 MiB more than n, hence
 * the minimum) marked MADV_HUGEPAGE, so that where the kernel offers
 * transparent huge pages one TLB entry covers 2 MiB instead of 4 KiB
 * (random lookups over a few MiB otherwise miss the TLB as well as the
 * cache). Freed with free(). NULL when out of memory. */
#define RS_HUGE_MIN ((size_t)1 << 20)
void *rs_alloc_huge(size_t n);

#endif
