/* util/lines.h - lines of a stream, each held in one buffer of bounded
 * size whatever the stream holds (util/lines.c): a line longer than the
 * bound is an error naming it, never a reason to grow without end. */
#ifndef RS_UTIL_LINES_H
#define RS_UTIL_LINES_H

#include <stddef.h>
#include <stdio.h>
#include "ringshard/error.h"

/* Called for each line, its LF and a CR before the LF removed; a non-zero
 * return stops the reading (with err set by the callback). */
typedef int (*rs_line_fn)(void *ctx, const char *line, size_t len, rs_error *err);

/* Calls fn for every line of in (LF-terminated; the last may lack its
 * LF), in order. A line (CR aside) of more than max bytes is
 * RS_EXIT_DATA: "NAME: line N: longer than LIMIT (max bytes)", name and
 * limit as the caller words them ("standard input", "--max-record"). The
 * buffer holds at most max + 64 KiB bytes. 0, or -1 with err (RS_EXIT_IO
 * for a read error or no memory). */
int rs_lines_each(FILE *in, const char *name, size_t max, const char *limit, rs_line_fn fn, void *ctx, rs_error *err);

#endif
