/* Test helpers shared by the suites: paths, files, running the command. */
#ifndef RS_TEST_SUPPORT_H
#define RS_TEST_SUPPORT_H
#include <stddef.h>

/* Absolute path of a file under the source tree's fixtures/ (static buffer rotation of 8). */
const char *fixture(const char *rel);

/* Reads a whole file (decompressing .gz if the name ends in .gz) into a malloc'd NUL-terminated
 * buffer; *len gets the length. Returns NULL if it cannot be read. */
char *slurp(const char *path, size_t *len);

/* Runs `sh -c cmd` with RS (the ringshard binary path) in its environment, capturing stdout into
 * *out and stderr into *err (malloc'd, NUL-terminated; either may be NULL to discard).
 * Returns the exit status (0-255), or 128+signal. */
int run(const char *cmd, char **out, char **err);

/* A fresh empty temporary directory (malloc'd path). */
char *make_tmpdir(void);

/* Parses "ab01.." lowercase hex into bytes; returns the byte count. */
size_t unhex(const char *hex, unsigned char *out, size_t cap);

#endif
