/* io/direct.c - direct I/O for kept outputs (see ringshard/direct.h).
 *
 * The queue is a vector of jobs (file, arena bytes, offset) filled between
 * two drains and taken in order by the I/O threads under one mutex: a lock
 * per file and batch, never per row. A job's offset is fixed when it is
 * queued (the file's bytes before it are known then), so jobs of one file
 * may complete in any order. The first failure is kept (sticky) and names
 * its file; later drains report it again. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ringshard/direct.h"
#include "ringshard/timeline.h"
#include "ringshard/util.h"

#define RS_DIRECT_ALIGN ((size_t)RS_DIRECT_BLOCK)
#define RS_DIRECT_THREADS 4  /* writes in flight: a virtio disk wants several */

typedef struct {
    uint32_t d;
    char *p;
    size_t len;
    uint64_t off;
} dx_job;

struct rs_direct {
    uint32_t n;
    int *fds;                   /* a copy of the caller's */
    const char *const *paths;
    char *carry;                /* [n][RS_DIRECT_ALIGN], aligned */
    uint32_t *carry_len;
    uint64_t *off;              /* where file d's carry starts */
    char *arena;
    size_t arena_cap, arena_used;  /* arena_used: atomic */
    pthread_mutex_t mu;
    pthread_cond_t work, idle;
    dx_job *q;
    size_t qlen, qcap, qnext, qdone;
    int stop;                   /* 1: end when the queue is empty; 2: now */
    int failed, fail_errno;
    uint32_t fail_d;
    pthread_t th[RS_DIRECT_THREADS];
    int nth;
};

/* pwrite of all of p[0..len) at off; a short write goes on while what is
 * left stays aligned. 0, or -1 with errno. */
static int write_all(int fd, const char *p, size_t len, uint64_t off, int direct)
{
    while (len > 0) {
        ssize_t w = pwrite(fd, p, len, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        if (w == 0 || (direct && (size_t)w % RS_DIRECT_ALIGN)) {
            errno = w == 0 ? ENOSPC : EIO;  /* nothing written, or the rest misaligned */
            return -1;
        }
        p += w, len -= (size_t)w, off += (uint64_t)w;
    }
    return 0;
}

static void note_failure(rs_direct *dx, uint32_t d, int e)
{
    if (!dx->failed) {
        dx->failed = 1;
        dx->fail_errno = e;
        dx->fail_d = d;
    }
}

static void *io_main(void *arg)
{
    rs_direct *dx = arg;
    pthread_mutex_lock(&dx->mu);
    for (;;) {
        while (dx->qnext == dx->qlen && !dx->stop)
            pthread_cond_wait(&dx->work, &dx->mu);
        if (dx->stop == 2 || dx->qnext == dx->qlen)
            break;
        dx_job j = dx->q[dx->qnext++];
        int skip = dx->failed;  /* the run has failed: no more disk traffic */
        pthread_mutex_unlock(&dx->mu);
        double tl = rs_timeline_start();
        int rc = skip ? 0 : write_all(dx->fds[j.d], j.p, j.len, j.off, 1);
        rs_timeline_end(RS_TL_DIRECT, tl);
        int e = errno;
        pthread_mutex_lock(&dx->mu);
        if (rc != 0)
            note_failure(dx, j.d, e);
        if (++dx->qdone == dx->qlen)
            pthread_cond_broadcast(&dx->idle);
    }
    pthread_mutex_unlock(&dx->mu);
    return NULL;
}

/* Sets or clears O_DIRECT on fd. 0, or -1. */
static int set_direct(int fd, int on)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0)
        return -1;
    return fcntl(fd, F_SETFL, on ? fl | O_DIRECT : fl & ~O_DIRECT);
}

/* Whether fd's file system takes aligned direct writes: statx says which
 * alignment it wants (it must divide ours), and one block written at
 * offset 0 (then truncated away) proves it. */
static const char *probe(int fd)
{
    struct statx sx;
    if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) != 0 || !(sx.stx_mask & STATX_DIOALIGN) ||
        !sx.stx_dio_offset_align || !sx.stx_dio_mem_align)
        return "the file system reports no direct I/O alignment";
    if (RS_DIRECT_ALIGN % sx.stx_dio_offset_align || RS_DIRECT_ALIGN % sx.stx_dio_mem_align)
        return "the file system wants a direct I/O alignment over 4096 bytes";
    char *blk = aligned_alloc(RS_DIRECT_ALIGN, RS_DIRECT_ALIGN);
    if (!blk)
        return "out of memory";
    memset(blk, 0, RS_DIRECT_ALIGN);
    int ok = set_direct(fd, 1) == 0 && write_all(fd, blk, RS_DIRECT_ALIGN, 0, 1) == 0;
    free(blk);
    if (ftruncate(fd, 0) != 0 || set_direct(fd, 0) != 0)
        return "a probe write could not be undone";
    return ok ? NULL : "the file system refused a direct write";
}

rs_direct *rs_direct_start(const int *fds, const char *const *paths, uint32_t n, size_t arena, const char **why)
{
    *why = n ? probe(fds[0]) : "no files";
    if (*why)
        return NULL;
    rs_direct *dx = calloc(1, sizeof *dx);
    size_t cap = (arena + RS_DIRECT_ALIGN - 1) / RS_DIRECT_ALIGN * RS_DIRECT_ALIGN;
    if (!dx || !(dx->fds = malloc(n * sizeof *dx->fds)) || !(dx->carry_len = calloc(n, sizeof *dx->carry_len)) ||
        !(dx->off = calloc(n, sizeof *dx->off)) || !(dx->carry = aligned_alloc(RS_DIRECT_ALIGN, n * RS_DIRECT_ALIGN)) ||
        !(dx->arena = aligned_alloc(RS_DIRECT_ALIGN, cap)) || !(dx->q = malloc((dx->qcap = n) * sizeof *dx->q))) {
        *why = "out of memory";
        rs_direct_free(dx);
        return NULL;
    }
    memcpy(dx->fds, fds, n * sizeof *fds);
    dx->n = n;
    dx->paths = paths;
    dx->arena_cap = cap;
    rs_advise_huge(dx->arena, cap);
    pthread_mutex_init(&dx->mu, NULL);
    pthread_cond_init(&dx->work, NULL);
    pthread_cond_init(&dx->idle, NULL);
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, (size_t)64 << 10);
    while (dx->nth < RS_DIRECT_THREADS && pthread_create(&dx->th[dx->nth], &at, io_main, dx) == 0)
        dx->nth++;
    pthread_attr_destroy(&at);
    uint32_t d = 0;
    while (dx->nth && d < n && set_direct(fds[d], 1) == 0)
        d++;
    if (d < n) {
        *why = dx->nth ? "a file refused O_DIRECT" : "its threads cannot be started";
        while (d-- > 0)
            (void)set_direct(fds[d], 0);
        rs_direct_free(dx);
        return NULL;
    }
    return dx;
}

/* Arena room for len bytes (a multiple of the alignment), or NULL. */
static char *reserve(rs_direct *dx, size_t len)
{
    size_t at = __atomic_fetch_add(&dx->arena_used, len, __ATOMIC_RELAXED);
    return at + len <= dx->arena_cap ? dx->arena + at : NULL;
}

static int queue(rs_direct *dx, const dx_job *j, rs_error *err)
{
    pthread_mutex_lock(&dx->mu);
    if (dx->qlen == dx->qcap) {
        dx_job *q = realloc(dx->q, 2 * dx->qcap * sizeof *q);
        if (!q) {
            pthread_mutex_unlock(&dx->mu);
            return rs_error_set(err, RS_EXIT_IO, "out of memory for the output queue");
        }
        dx->q = q;
        dx->qcap *= 2;
    }
    dx->q[dx->qlen++] = *j;
    pthread_cond_signal(&dx->work);
    pthread_mutex_unlock(&dx->mu);
    return 0;
}

int rs_direct_begin(rs_direct *dx, uint32_t d, size_t total, rs_direct_room *room, rs_error *err)
{
    size_t c = dx->carry_len[d];
    char *carry = dx->carry + (size_t)d * RS_DIRECT_ALIGN;
    size_t whole = (c + total) / RS_DIRECT_ALIGN * RS_DIRECT_ALIGN;
    *room = (rs_direct_room){carry + c, NULL, total, total, NULL, 0, 0};
    if (!whole)  /* still less than a block: it all joins the carry */
        return 0;
    char *blk = reserve(dx, whole);
    int bounce = !blk;  /* the arena is full: this thread writes them */
    if (bounce && !(blk = aligned_alloc(RS_DIRECT_ALIGN, whole)))
        return rs_error_set(err, RS_EXIT_IO, "out of memory for the writes of %s", dx->paths[d]);
    memcpy(blk, carry, c);
    *room = (rs_direct_room){blk + c, carry, whole - c, total, blk, whole, bounce};
    return 0;
}

int rs_direct_commit(rs_direct *dx, uint32_t d, const rs_direct_room *room, rs_error *err)
{
    dx->carry_len[d] = (uint32_t)(dx->carry_len[d] + room->total - room->whole);
    if (!room->whole)
        return 0;
    dx_job j = {d, room->blk, room->whole, dx->off[d]};
    dx->off[d] += room->whole;
    if (!room->bounce)
        return queue(dx, &j, err);
    int rc = write_all(dx->fds[d], room->blk, room->whole, j.off, 1), e = errno;
    free(room->blk);
    if (rc != 0) {
        pthread_mutex_lock(&dx->mu);
        note_failure(dx, d, e);
        pthread_mutex_unlock(&dx->mu);
        return rs_error_set(err, RS_EXIT_IO, "%s: write failed: %s", dx->paths[d], strerror(e));
    }
    return 0;
}

int rs_direct_write(rs_direct *dx, uint32_t d, const void *const *p, const size_t *len, size_t np, rs_error *err)
{
    size_t total = 0;
    for (size_t i = 0; i < np; i++)
        total += len[i];
    rs_direct_room room;
    if (rs_direct_begin(dx, d, total, &room, err) != 0)
        return -1;
    char *at = room.first;
    size_t left = room.nfirst;  /* then the rest: the new carry */
    for (size_t i = 0; i < np; i++) {
        const char *s = p[i];
        size_t k = len[i];
        while (k) {
            if (left == 0) {
                at = room.rest;
                left = SIZE_MAX;
            }
            size_t m = k < left ? k : left;
            memcpy(at, s, m);
            at += m, s += m, k -= m;
            if (left != SIZE_MAX)
                left -= m;
        }
    }
    return rs_direct_commit(dx, d, &room, err);
}

int rs_direct_drain(rs_direct *dx, rs_error *err)
{
    pthread_mutex_lock(&dx->mu);
    while (dx->qdone < dx->qlen)
        pthread_cond_wait(&dx->idle, &dx->mu);
    dx->qlen = dx->qnext = dx->qdone = 0;
    __atomic_store_n(&dx->arena_used, 0, __ATOMIC_RELAXED);
    int failed = dx->failed, e = dx->fail_errno;
    uint32_t d = dx->fail_d;
    pthread_mutex_unlock(&dx->mu);
    if (failed)
        return rs_error_set(err, RS_EXIT_IO, "%s: write failed: %s", dx->paths[d], strerror(e));
    return 0;
}

/* Ends the threads: stop 1 after the queued writes, 2 at once. */
static void stop_threads(rs_direct *dx, int how)
{
    pthread_mutex_lock(&dx->mu);
    dx->stop = how;
    pthread_cond_broadcast(&dx->work);
    pthread_mutex_unlock(&dx->mu);
    for (int t = 0; t < dx->nth; t++)
        pthread_join(dx->th[t], NULL);
    dx->nth = 0;
}

int rs_direct_finish(rs_direct *dx, rs_error *err)
{
    int rc = rs_direct_drain(dx, err);
    stop_threads(dx, 1);
    for (uint32_t d = 0; d < dx->n; d++) {
        int fd = dx->fds[d];
        if (set_direct(fd, 0) != 0 && rc == 0)
            rc = rs_error_set(err, RS_EXIT_IO, "%s: cannot end direct I/O: %s", dx->paths[d], strerror(errno));
        if (rc == 0 && dx->carry_len[d] &&
            write_all(fd, dx->carry + (size_t)d * RS_DIRECT_ALIGN, dx->carry_len[d], dx->off[d], 0) != 0)
            rc = rs_error_set(err, RS_EXIT_IO, "%s: write failed: %s", dx->paths[d], strerror(errno));
    }
    return rc;
}

void rs_direct_free(rs_direct *dx)
{
    if (!dx)
        return;
    if (dx->nth)
        stop_threads(dx, 2);
    if (dx->arena_cap) {  /* set once the mutex and conditions exist */
        pthread_mutex_destroy(&dx->mu);
        pthread_cond_destroy(&dx->work);
        pthread_cond_destroy(&dx->idle);
    }
    free(dx->fds);
    free(dx->carry_len);
    free(dx->off);
    free(dx->carry);
    free(dx->arena);
    free(dx->q);
    free(dx);
}
