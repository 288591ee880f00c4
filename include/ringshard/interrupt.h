/* ringshard/interrupt.h - the process-wide "stop now" flag.
 *
 * A signal handler raises it; long loops (the pipeline's batches) and
 * blocking reads poll it. It lives at the bottom of the layers so that the
 * readers (io/) can give up a read that a signal interrupted without
 * knowing about the pipeline. */
#ifndef RINGSHARD_INTERRUPT_H
#define RINGSHARD_INTERRUPT_H

/* Raises the flag. Async-signal-safe; it stays raised. */
void rs_interrupt_raise(void);

/* 1 once the flag is raised, else 0. Safe from any thread. */
int rs_interrupt_pending(void);

#endif
