/* Test helpers shared by the suites: paths, files, running the command. */
#ifndef RS_TEST_SUPPORT_H
#define RS_TEST_SUPPORT_H
#include <stdarg.h>
#include <stddef.h>
#include <sys/types.h>

/* The ringshard binary the tests run: $RINGSHARD_TEST_BINARY when set (the
 * ThreadSanitizer pass, tools/dev/tsan.sh, runs these runners against a TSan
 * build), else the one this build made. */
const char *rs_test_binary(void);
#define RS_BINARY rs_test_binary()

/* "dir/name" in one of 16 static buffers used in turn (valid for the next
 * 15 calls of this and fixture). */
const char *path_join(const char *dir, const char *name);

/* dir/name in a malloc'd string (the caller frees it). */
char *path_dup(const char *dir, const char *name);

/* Writes text to path (created or truncated), asserting it could. */
void write_text(const char *path, const char *text);

/* Asserts that Python's json module reads path (UTF-8): an independent
 * reader of what ringshard writes as JSON. */
void assert_python_json(const char *path);

/* Absolute path of a file under the source tree's fixtures/ (path_join). */
const char *fixture(const char *rel);

/* Reads a whole file (decompressing .gz if the name ends in .gz) into a malloc'd NUL-terminated
 * buffer; *len gets the length. Returns NULL if it cannot be read. */
char *slurp(const char *path, size_t *len);

/* Runs `sh -c cmd` with RS (the ringshard binary path) in its environment, capturing stdout into
 * *out and stderr into *err (malloc'd, NUL-terminated; either may be NULL to discard).
 * Returns the exit status (0-255), or 128+signal. */
int run(const char *cmd, char **out, char **err);

/* run() on the command formatted printf-style from fmt. */
int runf(char **out, char **err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A command's exit status (as run() gives it) and its captured output. */
typedef struct {
    int rc;
    char *out, *err;  /* malloc'd, NUL-terminated */
} cmd_result;

/* Runs the command formatted from fmt and ap in directory dir (a failed
 * cd exits 99; the command may be several lines). */
cmd_result vsh_in(const char *dir, const char *fmt, va_list ap);

/* Frees what a cmd_result holds. */
void cmd_result_free(cmd_result *r);

/* The suites that run commands in a fresh directory per test: test_dir is
 * made by test_dir_setup and removed by test_dir_teardown (use them as a
 * TestSuite's .init and .fini); sh_in_test_dir runs the printf-formatted command there. */
extern char *test_dir;
void test_dir_setup(void);
void test_dir_teardown(void);
cmd_result sh_in_test_dir(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Runs cmd (a shell command line) in test_dir and asserts that it exits
 * with rc and, when says is not NULL, that its stderr holds says (the
 * command line, the exit code and both outputs shown otherwise). The
 * result is the caller's to look at and free; sh_expect_free frees it. */
cmd_result sh_expect(int rc, const char *says, const char *cmd);
void sh_expect_free(int rc, const char *says, const char *cmd);

/* The test data generator built beside ringshard, for shell command
 * lines (tools/gen/gen_bills.c). */
#define GEN "\"$(dirname \"$RS\")/gen_bills\""

/* The shell functions of tests/append_lib.sh (dec, snap, litter, ...), for
 * the start of a shell command line; RS_TESTS names the tests directory,
 * where its snap finds tests/snap.py. */
#define APPEND_LIB "RS_TESTS='" RS_SOURCE_DIR "/tests'; . \"$RS_TESTS/append_lib.sh\"; "

/* tests/snap.py for a shell command line: SNAP "DIR" prints one digest
 * line of DIR (its tree and every file; manifests without their wall time;
 * "absent" when there is no DIR), the one every suite compares. */
#define SNAP "python3 -S '" RS_SOURCE_DIR "/tests/snap.py' "

/* Runs the command (sh_in_test_dir) and asserts exit 0, showing its output
 * otherwise (for Criterion tests). */
#define SH_OK(...)                                                                           \
    do {                                                                                     \
        cmd_result r_ = sh_in_test_dir(__VA_ARGS__);                                         \
        cr_assert_eq(r_.rc, 0, "exit %d\nstdout: %s\nstderr: %s", r_.rc, r_.out, r_.err);    \
        cmd_result_free(&r_);                                                                \
    } while (0)

/* Starts `sh -c script` in test_dir, with RS set, SIGPIPE at its default
 * (as a shell starts a command), RINGSHARD_TEST_PAUSE_AT=point unless NULL,
 * `env` ("NAME=VALUE") unless NULL, and stderr on errfd unless -1. */
pid_t spawn_in_test_dir(const char *script, const char *point, const char *env, int errfd);

/* Starts `exec CMD` (spawn_in_test_dir) stopping at point, stdout to
 * /dev/null and stderr to the test directory's file err (NULL: /dev/null
 * too), and waits until the process stops itself there. Asserts it did
 * stop (did not exit first). Returns its pid. */
pid_t stop_at(const char *point, const char *env, const char *cmd, const char *err);

/* stop_at for a test that then sends a stop signal (SIGINT, SIGTERM,
 * SIGHUP: signal_stopped) and wants it seen at point: the run also gets
 * RINGSHARD_TEST_PAUSE_INTERRUPTED=1, so that the thread that stopped
 * waits, once continued, until the signal's handler (on whichever thread
 * the kernel hands it to) has raised the interrupt flag. Shell commands
 * set the variable themselves. Returns the stopped process's pid. */
pid_t stop_for_signal(const char *point, const char *cmd, const char *err);

/* Sends sig to the process pid (stop_for_signal), as a terminal's ^C or
 * kill(1) does, then SIGCONT. */
void signal_stopped(pid_t pid, int sig);

/* A fresh empty temporary directory (malloc'd path), in
 * $RINGSHARD_TEST_TMPDIR if set (the sanitizer passes put their tests on a
 * tmpfs, tools/dev/testdirs.sh), else in /tmp. */
char *make_tmpdir(void);

/* Removes dir and everything below it, after giving its owner rwx on all
 * of it (so that tests which took permissions away clean up too). dir must
 * not contain a single quote. Returns 0, or rm's exit status after a
 * warning on stderr. */
int remove_tree(const char *dir);

/* Parses "ab01.." lowercase hex into bytes; returns the byte count. */
size_t unhex(const char *hex, unsigned char *out, size_t cap);

/* Runs `ringshard verify --quiet DIR` on a bucket directory (bucket,
 * dedup) or a move directory (plan --emit) and asserts exit 0: the files
 * match the manifest and every row sits where the ring(s) put it. (verify
 * reads the manifest only; it needs no inputs or ring options.) */
void assert_verify(const char *dir);

/* Skips the test in the AddressSanitizer build (tools/dev/sanitize.sh) and
 * says why: for the sweeps that SIGKILL a run at every call of every
 * publishing system call, several hundred runs whose point is the state
 * left on disk, which does not depend on the build. The Release suite runs
 * them (tools/test.sh runs it first); the ASan pass keeps the cases that
 * kill or fail a run at the pause points and rerun it, so the recovery
 * paths are still run under ASan. Use as a test's first statement. */
#if defined(__SANITIZE_ADDRESS__)
#define RELEASE_SUITE_ONLY() \
    cr_skip_test("a kill sweep: the Release suite runs it (tests/support.h, RELEASE_SUITE_ONLY)")
#else
#define RELEASE_SUITE_ONLY() ((void)0)
#endif

#endif
