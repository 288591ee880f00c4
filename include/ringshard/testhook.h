/* ringshard/testhook.h - named points where a test can freeze the process.
 *
 * Tests must not sleep to hit a window (a loaded machine or ASan moves the
 * window). Where the state a test needs (mid-run, the first batch written
 * into the temporary directory) cannot be seen from outside, the process
 * stops itself there: with RINGSHARD_TEST_PAUSE_AT=POINT in its
 * environment, the first time it reaches rs_test_pause("POINT") it raises
 * SIGSTOP. The test sees the stop (waitpid with WUNTRACED, or state T in
 * /proc/PID/stat), then kills it or sends signals and SIGCONT. A test that
 * sends a stop signal (SIGINT, SIGTERM, SIGHUP) before SIGCONT and wants it
 * seen at the point also sets RINGSHARD_TEST_PAUSE_INTERRUPTED=1: the
 * thread that stopped then waits (up to a minute) for the signal's handler,
 * which may run on another thread, to raise the interrupt flag. Points sit
 * where a run passes once per batch or less, never in a per-row loop. */
#ifndef RINGSHARD_TESTHOOK_H
#define RINGSHARD_TESTHOOK_H

/* Stops the whole process (raise(SIGSTOP)) if RINGSHARD_TEST_PAUSE_AT
 * names point and no earlier call stopped it at that point: once per
 * process, whichever thread gets there first. The variable is read once,
 * at the first call. Returns after SIGCONT. Thread-safe. Points used:
 *   batch_written  pipeline: a batch was parsed and written to the
 *                  destination files (the next one read), before the
 *                  check for a stop signal
 *   first-read     reader: after the first read of a named file
 *   begun          outdir: the temporary directory was created
 *   publish        outdir: just before the publishing rename
 *   published      outdir: just after it
 *   old            outdir, two-rename fallback: between the renames
 *   dir-open       bucketdir: just before a bucket directory is opened
 *   dir-opened     bucketdir: the directory opened, its manifest not yet
 *                  read
 *   file_publish   interrupt (rs_interrupt_publish_gate): a file published
 *                  whole was written to its temporary, just before the
 *                  check for a stop signal and its rename
 *   piece_copy     cluster: a rank or lane other than the first is about
 *                  to copy its first piece into the files
 *   simulate_keys  simulate: the rings built, before the keys are counted
 *   simulate_bounded  simulate --capacity-factor: the keys counted, before
 *                  the bounded-load placement
 *   metrics_publish  --metrics FILE: the metrics written to FILE's
 *                  temporary, just before the rename over FILE */
void rs_test_pause(const char *point);

#endif
