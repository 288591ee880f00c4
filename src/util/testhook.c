/* util/testhook.c - see ringshard/testhook.h. */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ringshard/interrupt.h"
#include "ringshard/testhook.h"

static const char *pause_at;  /* NULL: no pause point */
static int pause_interrupted; /* RINGSHARD_TEST_PAUSE_INTERRUPTED set */
static pthread_once_t pause_once = PTHREAD_ONCE_INIT;
static int paused;

static void read_pause_at(void)
{
    const char *v = getenv("RINGSHARD_TEST_PAUSE_AT");
    pause_at = v && *v ? v : NULL;
    pause_interrupted = getenv("RINGSHARD_TEST_PAUSE_INTERRUPTED") != NULL;
}

/* Waits, up to a minute, for the stop signal sent while the process was
 * stopped to raise the interrupt flag. The kernel may hand the signal to
 * another thread, whose handler can run after this one has gone on: on a
 * loaded machine the run then passed its next check first, as if the
 * signal had come later than the point. */
static void wait_interrupt_flag(void)
{
    struct timespec tick = {0, 1000000};
    for (int i = 0; i < 60000 && !rs_interrupt_pending(); i++)
        nanosleep(&tick, NULL);
}

void rs_test_pause(const char *point)
{
    pthread_once(&pause_once, read_pause_at);
    if (pause_at == NULL || strcmp(pause_at, point) != 0)
        return;
    if (__atomic_exchange_n(&paused, 1, __ATOMIC_ACQ_REL) == 0) {
        raise(SIGSTOP);
        if (pause_interrupted)
            wait_interrupt_flag();
    }
}
