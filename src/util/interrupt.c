/* util/interrupt.c - see ringshard/interrupt.h. */
#include <signal.h>
#include "ringshard/interrupt.h"

static volatile sig_atomic_t raised;

void rs_interrupt_raise(void) { raised = 1; }

int rs_interrupt_pending(void) { return __atomic_load_n(&raised, __ATOMIC_RELAXED) != 0; }
