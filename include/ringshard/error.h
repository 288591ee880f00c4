/* ringshard/error.h - error reports and exit codes.
 *
 * Library functions return 0 on success and -1 on failure, filling an
 * rs_error that says what went wrong and where (file, line, byte offset).
 * Stream objects keep their first error (sticky) until closed. */
#ifndef RINGSHARD_ERROR_H
#define RINGSHARD_ERROR_H

#include <stdarg.h>

/* Exit codes of the ringshard command; rs_error.code holds one of them. */
#define RS_EXIT_TABLE(X)                                                      \
    X(OK, 0, "success")                                                       \
    X(IO, 1, "I/O or system error: a read or write failed, disk full, out of memory") \
    X(DATA, 2, "bad input data: malformed CSV, corrupt gzip or zstd, bad node list") \
    X(VERIFY, 3, "differences found by verify, plan --from-buckets, dedup --buckets, --strict") \
    X(USAGE, 64, "bad command line: unknown option, bad value, missing argument") \
    X(EXISTS, 73, "the output exists (no --force) or is not ringshard's (no --force-any)") \
    X(INTERRUPTED, 130, "interrupted by SIGINT, SIGTERM or SIGHUP; nothing published") \
    X(PIPE, 141, "standard output closed by its reader (| head): quiet, as if killed by SIGPIPE")

enum {
#define RS_EXIT_ENUM(name, code, help) RS_EXIT_##name = code,
    RS_EXIT_TABLE(RS_EXIT_ENUM)
#undef RS_EXIT_ENUM
};

typedef struct {
    int code;        /* an RS_EXIT_* value; 0 while no error */
    char msg[1024];  /* one line, no trailing newline */
} rs_error;

/* Records an error (only the first one: a set error is never overwritten).
 * Always returns -1, so that `return rs_error_set(err, ...)` reads well.
 * err may be NULL. A message longer than msg keeps its beginning and its
 * end with " [... N bytes left out ...] " between them, so that what
 * follows a long name (often the reason) is never lost. */
int rs_error_set(rs_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Clears err. */
void rs_error_clear(rs_error *err);

/* Restates a set error in the caller's terms: its message kept between
 * head and tail (either may be ""), its code made code. The one way a
 * layer names what a lower one said (the file, the manifest, the exit
 * code the reader owes). */
void rs_error_restate(rs_error *err, int code, const char *head, const char *tail);

#endif
