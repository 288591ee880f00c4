/* ringshard/util.h - small helpers the jobs and the cluster layer share. */
#ifndef RINGSHARD_UTIL_H
#define RINGSHARD_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Monotonic seconds (CLOCK_MONOTONIC), for the timings jobs report. */
double rs_now(void);

/* 1 if the file path names (its real place: symbolic links at its end
 * followed, even dangling ones, as fopen "w" would create their target)
 * lies in the directory dir or below, else 0. Compared by real paths, so
 * that "./", "..", relative and linked forms count; a path or dir that does
 * not exist yet is placed by its nearest existing ancestor's real path plus
 * the names below it. 0 when neither can be resolved, or out of memory. */
int rs_path_within(const char *path, const char *dir);

/* Copies len bytes of fd_in from offset `from` into fd_out at offset off:
 * copy_file_range (a reflink or server-side copy where the file system
 * offers one), else read and write through a buffer. 0, or -1 with errno
 * (EINTR: a stop signal came, rs_interrupt_pending; EIO: fd_in ended
 * first). */
int rs_copy_into(int fd_in, uint64_t from, uint64_t len, int fd_out, uint64_t off);

/* The largest that rs_human_bytes and rs_human_rate write, with the NUL. */
#define RS_HUMAN_MAX 48

/* n bytes for a summary, in decimal units with one decimal: "532 B",
 * "19.3 MB", "10.3 GB", "1.2 TB" (the largest unit that keeps the number
 * under 1000). Writes into buf (cap bytes, RS_HUMAN_MAX suffice) and
 * returns it. */
const char *rs_human_bytes(double n, char *buf, size_t cap);

/* A speed for a summary, three significant digits with k, M or G:
 * "85.0 rows/s", "352 k rows/s", "1.25 M rows/s" (what: "rows"). Into buf,
 * returned. */
const char *rs_human_rate(double per_second, const char *what, char *buf, size_t cap);

/* Marks p[0..n), a large block about to be filled (a batch buffer, the
 * direct-I/O arena), MADV_HUGEPAGE where the kernel offers transparent
 * huge pages on request: the whole 2 MiB pages inside it are then faulted
 * in 512 times fewer and covered by one TLB entry each, which the random
 * reads of the gather (a destination's rows, all over a 64 MiB batch) and
 * the pinning of direct writes feel. A hint: nothing when refused, and
 * nothing for a block under RS_HUGE_MIN. */
void rs_advise_huge(void *p, size_t n);

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
