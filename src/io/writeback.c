/* io/writeback.c - write-behind thread (see ringshard/writeback.h).
 *
 * One pthread, mostly asleep: a hand-over (a generation number and the
 * files' lengths) wakes it; it starts the writeback of each file's bytes
 * between what it started last time and the new length, then sleeps again.
 * A hand-over that arrives while it works is dropped rather than queued, so
 * the producer of hand-overs never waits for the disk. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ringshard/writeback.h"

struct rs_writeback {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned posted, taken;  /* hand-overs made; the one the thread works on (or last did) */
    int busy, stop;
    uint32_t n;
    int *fd;
    uint64_t *len;           /* handed over (written under mu, read by the thread while busy) */
    uint64_t *started;       /* the thread's own: writeback started below this */
};

static void *writeback_main(void *arg)
{
    rs_writeback *wb = arg;
    pthread_mutex_lock(&wb->mu);
    for (;;) {
        while (wb->taken == wb->posted && !wb->stop)
            pthread_cond_wait(&wb->cv, &wb->mu);
        if (wb->taken == wb->posted)
            break;  /* stopping, nothing pending */
        wb->taken = wb->posted;
        wb->busy = 1;
        pthread_mutex_unlock(&wb->mu);
        for (uint32_t d = 0; d < wb->n; d++) {
            uint64_t to = wb->len[d], from = wb->started[d];
            if (wb->fd[d] < 0 || to <= from)
                continue;
            /* errors are the final fsync's to report */
            (void)sync_file_range(wb->fd[d], (off_t)from, (off_t)(to - from), SYNC_FILE_RANGE_WRITE);
            wb->started[d] = to;
        }
        pthread_mutex_lock(&wb->mu);
        wb->busy = 0;
    }
    pthread_mutex_unlock(&wb->mu);
    return NULL;
}

static void release(rs_writeback *wb)
{
    free(wb->fd);
    free(wb->len);
    free(wb->started);
    free(wb);
}

rs_writeback *rs_writeback_start(const int *fds, uint32_t n)
{
    rs_writeback *wb = calloc(1, sizeof *wb);
    if (!wb)
        return NULL;
    wb->n = n;
    wb->fd = malloc((n ? n : 1) * sizeof *wb->fd);
    wb->len = calloc(n ? n : 1, sizeof *wb->len);
    wb->started = calloc(n ? n : 1, sizeof *wb->started);
    if (!wb->fd || !wb->len || !wb->started) {
        release(wb);
        return NULL;
    }
    memcpy(wb->fd, fds, n * sizeof *fds);
    pthread_mutex_init(&wb->mu, NULL);
    pthread_cond_init(&wb->cv, NULL);
    if (pthread_create(&wb->thread, NULL, writeback_main, wb) != 0) {
        pthread_mutex_destroy(&wb->mu);
        pthread_cond_destroy(&wb->cv);
        release(wb);
        return NULL;
    }
    return wb;
}

void rs_writeback_post(rs_writeback *wb, const uint64_t *lens)
{
    if (!wb)
        return;
    pthread_mutex_lock(&wb->mu);
    if (!wb->busy) {  /* a hand-over not yet taken is replaced */
        memcpy(wb->len, lens, wb->n * sizeof *lens);
        wb->posted = wb->taken + 1;
        pthread_cond_signal(&wb->cv);
    }
    pthread_mutex_unlock(&wb->mu);
}

void rs_writeback_stop(rs_writeback *wb)
{
    if (!wb)
        return;
    pthread_mutex_lock(&wb->mu);
    wb->stop = 1;
    pthread_cond_signal(&wb->cv);
    pthread_mutex_unlock(&wb->mu);
    pthread_join(wb->thread, NULL);
    pthread_mutex_destroy(&wb->mu);
    pthread_cond_destroy(&wb->cv);
    release(wb);
}
