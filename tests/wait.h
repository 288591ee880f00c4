/* Waiting for a state in the suites' shell commands.
 *
 * No test sleeps to hit a window: a loaded machine, or ASan, moves the
 * window. A command waits for the state itself (a file exists, a process
 * started, a process stopped at a RINGSHARD_TEST_PAUSE_AT point, see
 * ringshard/testhook.h), polling every 50 ms with a generous limit (at
 * least RS_WAIT_LIMIT seconds: the polls only add to it) whose expiry says
 * on stderr what was awaited, so that the test fails showing it.
 *
 * WAIT_SH defines these shell functions (sh, dash included); put it at the
 * start of a command. It holds no '%', so printf-style commands (runf,
 * sh_in_test_dir) take it as is.
 *
 *   wait_for WHAT COND     evaluates the shell text COND (again at each
 *                          poll: globs and $(...) are fresh) until it
 *                          succeeds; at the limit it says "timed out after
 *                          120 s waiting for WHAT" and returns 124.
 *   wait_stopped PID WHAT  waits until process PID is stopped (state T in
 *                          /proc/PID/stat: rs_test_pause raised SIGSTOP);
 *                          returns 124 saying so if PID ends first or at the
 *                          limit.
 *   signal_until_gone SIG PID
 *                          sends SIG to PID, and again each second until PID
 *                          has ended (exited, possibly a zombie): a stop
 *                          signal that lands after the run last looked at
 *                          its stop flag but before it blocks in an open of
 *                          a FIFO only raises the flag, and the next one
 *                          interrupts the call, as a second ^C would (reads
 *                          do not need this: they wait on the flag too).
 *                          Returns 124 saying so at the limit.
 *   is_stopped PID, is_gone PID
 *                          the states (is_gone: no such process, or a
 *                          zombie).
 *
 * The functions return (they do not exit: the caller may have a job to
 * clean up): write `wait_for ... || exit 124`. */
#ifndef RS_TEST_WAIT_H
#define RS_TEST_WAIT_H

#define RS_WAIT_LIMIT "120"
#define RS_WAIT_POLLS "2400" /* RS_WAIT_LIMIT / 0.05 s */

#define WAIT_SH                                                                                              \
    "rs_state() { rs_s=; read -r _ _ rs_s _ 2>/dev/null < /proc/$1/stat; echo \"$rs_s\"; }; "                 \
    "is_stopped() { [ \"$(rs_state $1)\" = T ]; }; "                                                          \
    "is_gone() { case \"$(rs_state $1)\" in ''|Z|X) return 0;; esac; return 1; }; "                          \
    "rs_timed_out() { echo \"timed out after " RS_WAIT_LIMIT " s waiting for $1\" >&2; return 124; }; "       \
    "wait_for() { rs_n=0; until eval \"$2\"; do rs_n=$((rs_n+1)); "                                          \
    "[ $rs_n -lt " RS_WAIT_POLLS " ] || { rs_timed_out \"$1\"; return; }; sleep 0.05; done; }; "              \
    "wait_stopped() { rs_n=0; until is_stopped $1; do rs_n=$((rs_n+1)); "                                    \
    "if is_gone $1; then echo \"process $1 ended before it stopped: $2\" >&2; return 124; fi; "              \
    "[ $rs_n -lt " RS_WAIT_POLLS " ] || { rs_timed_out \"$2 (process $1 to stop)\"; return; }; "             \
    "sleep 0.05; done; }; "                                                                                   \
    "signal_until_gone() { rs_n=0; rs_k=0; kill -$1 $2 2>/dev/null; until is_gone $2; do rs_n=$((rs_n+1)); " \
    "rs_k=$((rs_k+1)); [ $rs_n -lt " RS_WAIT_POLLS " ] || { rs_timed_out \"process $2 to end on SIG$1\"; "   \
    "return; }; [ $rs_k -lt 20 ] || { rs_k=0; kill -$1 $2 2>/dev/null; }; sleep 0.05; done; }; "

#endif
