/* util/numparse.h - the number parsers and the name distance of option
 * values and names (util/numparse.c), for the command line and its tests. */
#ifndef RS_UTIL_NUMPARSE_H
#define RS_UTIL_NUMPARSE_H

#include <stddef.h>
#include "ringshard/error.h"

/* Parses an unsigned integer (decimal, 0x hex or 0 octal, as strtoull base
 * 0) into *out; -1 with RS_EXIT_USAGE naming `what` ("--vnodes") if arg is
 * not a number in [min, max] (a sign, a blank, trailing bytes, overflow). */
int rs_parse_uint(const char *what, const char *arg, unsigned long long min, unsigned long long max,
                  unsigned long long *out, rs_error *err);

/* Parses a size with an optional K, M, G, T suffix (powers of 1024; "KiB",
 * "MB" forms accepted the same; a fraction allowed: "1.5G") into *out; -1
 * with RS_EXIT_USAGE naming `what` otherwise. */
int rs_parse_size(const char *what, const char *arg, unsigned long long *out, rs_error *err);

/* Edit distance (insert, delete, substitute, swap neighbours: 1 each;
 * optimal string alignment). Names longer than 63 bytes: the longer length. */
size_t rs_edit_distance(const char *a, const char *b);

/* 1 if typed is likely a misspelling of name (at most 2 edits, and at
 * most a third of the longer one's length beyond 1), with the distance in
 * *dist; else 0. */
int rs_name_similar(const char *typed, const char *name, size_t *dist);

#endif
