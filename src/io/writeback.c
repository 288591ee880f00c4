/* io/writeback.c - write-behind thread (see ringshard/writeback.h).
 *
 * One pthread, mostly asleep: a hand-over (a generation number and the
 * files' lengths) wakes it; it starts the writeback of each file's whole
 * pages between what it started last time and the new length, then sleeps
 * again. Hand-overs that arrive while it works only replace the lengths it
 * will take next, so the producer of hand-overs never waits for the disk
 * and the last one is never lost. A file's partial last page is left
 * alone: the next batch's write would dirty it again and send it to disk
 * once more (and, on a device that wants stable pages, wait for it). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ringshard/interrupt.h"
#include "ringshard/timeline.h"
#include "ringshard/writeback.h"

struct rs_writeback {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned posted, taken;  /* hand-overs made; the last one the thread took */
    int stop;
    uint32_t n;
    uint64_t page;
    int *fd;
    uint64_t *next;          /* the latest lengths handed over (under mu) */
    uint64_t *len;           /* the thread's own: the lengths it works on */
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
        memcpy(wb->len, wb->next, wb->n * sizeof *wb->len);
        pthread_mutex_unlock(&wb->mu);
        double tl = rs_timeline_start();
        /* an interrupted run publishes nothing: writeback started now is
         * only more I/O for the removal of its files to wait for */
        for (uint32_t d = 0; d < wb->n && !rs_interrupt_pending(); d++) {
            uint64_t to = wb->len[d] / wb->page * wb->page, from = wb->started[d];
            if (wb->fd[d] < 0 || to <= from)
                continue;
            /* errors are the final fsync's to report */
            (void)sync_file_range(wb->fd[d], (off_t)from, (off_t)(to - from), SYNC_FILE_RANGE_WRITE);
            wb->started[d] = to;
        }
        rs_timeline_end(RS_TL_WRITEBACK, tl);
        pthread_mutex_lock(&wb->mu);
    }
    pthread_mutex_unlock(&wb->mu);
    return NULL;
}

static void release(rs_writeback *wb)
{
    free(wb->fd);
    free(wb->next);
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
    long page = sysconf(_SC_PAGESIZE);
    wb->page = page > 0 ? (uint64_t)page : 4096;
    wb->fd = malloc((n ? n : 1) * sizeof *wb->fd);
    wb->next = calloc(n ? n : 1, sizeof *wb->next);
    wb->len = calloc(n ? n : 1, sizeof *wb->len);
    wb->started = calloc(n ? n : 1, sizeof *wb->started);
    if (!wb->fd || !wb->next || !wb->len || !wb->started) {
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
    memcpy(wb->next, lens, wb->n * sizeof *lens);  /* replaces one not yet taken */
    wb->posted++;
    pthread_cond_signal(&wb->cv);
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
