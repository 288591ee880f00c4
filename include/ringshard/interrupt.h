/* ringshard/interrupt.h - the process-wide "stop now" flag.
 *
 * A signal handler raises it; long loops (the pipeline's batches) and
 * blocking reads poll it. It lives at the bottom of the layers so that the
 * readers (io/) can give up a read that a signal interrupted without
 * knowing about the pipeline. */
#ifndef RINGSHARD_INTERRUPT_H
#define RINGSHARD_INTERRUPT_H

#include "ringshard/error.h"

/* Makes the flag pollable: creates a pipe that rs_interrupt_raise writes a
 * byte to, so that a blocking read can wait on its descriptor and on the
 * flag at once (rs_interrupt_fd). Call it once, before the signal handlers
 * are installed. Returns 0, or -1 (no pipe: reads then only see a signal
 * that interrupts them, not one that lands just before they block). */
int rs_interrupt_init(void);

/* The descriptor that becomes readable once the flag is raised, or -1
 * before rs_interrupt_init. */
int rs_interrupt_fd(void);

/* Raises the flag. Async-signal-safe; it stays raised. */
void rs_interrupt_raise(void);

/* The line (with its newline) that rs_interrupt_signal writes to stderr
 * when the first signal comes: the user sees at once that the stop is
 * under way, before the cleanup. Copied (at most 255 bytes); NULL or ""
 * for none. Call it before the handlers are installed. */
void rs_interrupt_set_notice(const char *line);

/* rs_interrupt_raise for a signal handler: the first call also writes the
 * notice with write(2). Async-signal-safe. */
void rs_interrupt_signal(void);

/* 1 once the flag is raised, else 0. Safe from any thread. */
int rs_interrupt_pending(void);

/* Called just before a run publishes a file or directory (the rename of a
 * file published whole: plan's files, the reports, a quarantine file), so
 * that exit 130 keeps meaning "nothing published": while the run has
 * published nothing, a raised flag refuses (-1, err RS_EXIT_INTERRUPTED
 * "interrupted"; the caller drops its temporary); otherwise 0, and from
 * then on the run counts as publishing: later calls return 0 whatever the
 * flag, since the files published so far cannot be taken back and the
 * rest take no longer than the writes already under way (the signal is
 * then ignored, as one that comes after a bucket run's rename is). The
 * test pause point "file_publish" is reached first. Main thread only. */
int rs_interrupt_publish_gate(rs_error *err);

/* Marks that the run published something without the gate (an output
 * directory, whose publication has its own check): later gates pass. */
void rs_interrupt_published(void);

#endif
