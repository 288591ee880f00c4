/* util/interrupt.c - see ringshard/interrupt.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include "ringshard/interrupt.h"
#include "ringshard/testhook.h"

/* Both sides go through the atomic builtins: the handler can run on any
 * thread (a pipeline worker, not only main), and a plain store racing with
 * the workers' atomic loads is a data race (TSan reports it). A lock-free
 * int atomic is async-signal-safe. */
static int raised;

/* The self-pipe: a signal that lands between a reader's check of the flag
 * and its blocking read() would otherwise be lost until the read returns,
 * which for a quiet pipe is never. Readers poll this descriptor beside
 * theirs. It is never drained: the flag stays raised. */
static int pipe_fd[2] = {-1, -1};

int rs_interrupt_init(void)
{
    if (__atomic_load_n(&pipe_fd[0], __ATOMIC_ACQUIRE) >= 0)
        return 0;
    int fds[2];
    if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0)
        return -1;
    __atomic_store_n(&pipe_fd[1], fds[1], __ATOMIC_RELEASE);
    __atomic_store_n(&pipe_fd[0], fds[0], __ATOMIC_RELEASE);
    return 0;
}

int rs_interrupt_fd(void) { return __atomic_load_n(&pipe_fd[0], __ATOMIC_ACQUIRE); }

void rs_interrupt_raise(void)
{
    __atomic_store_n(&raised, 1, __ATOMIC_RELAXED);
    int w = __atomic_load_n(&pipe_fd[1], __ATOMIC_ACQUIRE);
    if (w >= 0) {
        int saved = errno;   /* the interrupted code may be about to read errno */
        ssize_t k = write(w, "!", 1);   /* a full pipe already says it */
        (void)k;
        errno = saved;
    }
}

static char notice[256];
static size_t notice_len;
static int signalled;

void rs_interrupt_set_notice(const char *line)
{
    size_t n = line ? strlen(line) : 0;
    if (n >= sizeof notice)
        n = sizeof notice - 1;
    memcpy(notice, line ? line : "", n);
    notice_len = n;
}

void rs_interrupt_signal(void)
{
    /* only the first signal speaks: a second Ctrl-C while the cleanup
     * runs says nothing new */
    if (!__atomic_exchange_n(&signalled, 1, __ATOMIC_RELAXED) && notice_len) {
        int saved = errno;
        ssize_t k = write(STDERR_FILENO, notice, notice_len);   /* a closed stderr: nothing to do */
        (void)k;
        errno = saved;
    }
    rs_interrupt_raise();
}

int rs_interrupt_pending(void) { return __atomic_load_n(&raised, __ATOMIC_RELAXED) != 0; }

/* Set by the main thread only (rs_interrupt_publish_gate's contract). */
static int published;

int rs_interrupt_publish_gate(rs_error *err)
{
    rs_test_pause("file_publish");
    if (!published && rs_interrupt_pending())
        return rs_error_set(err, RS_EXIT_INTERRUPTED, "interrupted");
    published = 1;
    return 0;
}

void rs_interrupt_published(void) { published = 1; }
