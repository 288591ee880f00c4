/* ringshard/direct.h - direct I/O for the outputs that are kept: their
 * bytes go from an aligned staging arena to the disk (O_DIRECT), written
 * by a few I/O threads that sleep on the disk, not on a core.
 *
 * Why. Every output of bucket and plan --emit is fsync'd before it is
 * published, so all of it must reach the disk during the run anyway; the
 * page cache only adds a copy of every byte and, when the outputs are
 * larger than what memory has spare, a fresh page for each 4 KiB. Fresh
 * pages are the expensive part: on the virtual machines measured in
 * docs/performance.md (free memory handed back to the host), writing 1 GB of new files
 * through the page cache costs about 4 CPU-seconds of system time, while
 * O_DIRECT from a buffer that is reused costs about 0.7 (docs/performance.md,
 * "Direct I/O of the outputs"). The outputs are not read back by the run, so nothing is
 * lost by not caching them.
 *
 * How. O_DIRECT wants the memory, the file offset and the length aligned
 * (statx STATX_DIOALIGN; 4096 is used, a multiple of what ext4 and xfs
 * ask). Each file keeps its last partial block (the CARRY) in memory; a
 * write copies the carry and the new bytes into the arena, queues the
 * whole blocks for the I/O threads and keeps the rest as the new carry
 * (rs_direct_begin hands a caller that makes its bytes itself - the
 * pipeline gathering rows - the arena's room instead, so it skips the
 * copy). The caller drains the queue before it reuses the arena (once a batch)
 * and finishes the files at the end: the carries are written with
 * O_DIRECT cleared. A file's bytes are exactly what buffered writes would
 * have made them.
 *
 * Where direct I/O is not offered (tmpfs, some network and FUSE file
 * systems: statx reports no alignment, or a probe write is refused), or
 * its threads or memory cannot be had, rs_direct_start returns NULL and
 * the caller writes through the page cache as before. */
#ifndef RINGSHARD_DIRECT_H
#define RINGSHARD_DIRECT_H

#include <stddef.h>
#include <stdint.h>
#include "ringshard/error.h"

/* The alignment used: memory, offsets and lengths; also what a file's
 * carry holds at most (its memory is accounted per output). */
#define RS_DIRECT_BLOCK 4096

typedef struct rs_direct rs_direct;

/* Switches the n files fds[0..n) - open for writing, empty, all on one
 * file system - to direct I/O, with a staging arena of `arena` bytes
 * between two drains. paths[d] names file d in messages (kept, not
 * copied). NULL when direct I/O cannot be used, *why then says why (a
 * static string, for the log); the files are left as they were. */
rs_direct *rs_direct_start(const int *fds, const char *const *paths, uint32_t n, size_t arena, const char **why);

/* Appends the bytes of pieces p[0..np) (lengths len[]) to file d. Threads
 * may write different files at once; one file is written by one thread at
 * a time. Does not wait for the disk, except when the arena is full: the
 * blocks are then written by the calling thread. 0, or -1 with err (that
 * synchronous write failed, or out of memory). */
int rs_direct_write(rs_direct *dx, uint32_t d, const void *const *p, const size_t *len, size_t np, rs_error *err);

/* Room for the next `total` bytes of file d, for a caller that makes the
 * bytes in place instead of copying them (rs_direct_write copies): the
 * first nfirst go to `first` (in the staging arena, after the file's
 * carry), the others to `rest` (the file's new carry, less than a block).
 * rs_direct_commit queues them once written. */
typedef struct {
    char *first, *rest;
    size_t nfirst, total;
    char *blk;          /* internal: the blocks' room */
    size_t whole;
    int bounce;
} rs_direct_room;

/* Reserves the room for total bytes of file d (nothing else may write to
 * d until the commit). 0, or -1 with err (out of memory). */
int rs_direct_begin(rs_direct *dx, uint32_t d, size_t total, rs_direct_room *room, rs_error *err);

/* Queues the whole blocks of the room, its bytes all written, and keeps
 * the rest as the file's carry. 0, or -1 with err (as rs_direct_write). */
int rs_direct_commit(rs_direct *dx, uint32_t d, const rs_direct_room *room, rs_error *err);

/* Waits for every write queued so far; the arena is free again after it.
 * Not concurrent with rs_direct_write. 0, or -1 with err: the first write
 * that failed, its file named (and every later call fails the same way). */
int rs_direct_drain(rs_direct *dx, rs_error *err);

/* Drains, then writes each file's carry with O_DIRECT cleared (the files
 * are ordinary descriptors again, still open: the caller closes them) and
 * ends the threads. 0, or -1 with err. */
int rs_direct_finish(rs_direct *dx, rs_error *err);

/* Ends the threads (queued writes not yet started are dropped: the caller
 * is giving up on the files) and frees dx. Accepts NULL. */
void rs_direct_free(rs_direct *dx);

#endif
