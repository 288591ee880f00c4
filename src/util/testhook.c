/* util/testhook.c - see ringshard/testhook.h. */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include "ringshard/testhook.h"

static const char *pause_at;  /* NULL: no pause point */
static pthread_once_t pause_once = PTHREAD_ONCE_INIT;
static int paused;

static void read_pause_at(void)
{
    const char *v = getenv("RINGSHARD_TEST_PAUSE_AT");
    pause_at = v && *v ? v : NULL;
}

void rs_test_pause(const char *point)
{
    pthread_once(&pause_once, read_pause_at);
    if (pause_at == NULL || strcmp(pause_at, point) != 0)
        return;
    if (__atomic_exchange_n(&paused, 1, __ATOMIC_ACQ_REL) == 0)
        raise(SIGSTOP);
}
