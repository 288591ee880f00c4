/* util/json_read.h - a small JSON reader (RFC 8259) building a DOM; used for
 * manifest.json. Internal to the library.
 *
 * - Strings are decoded to UTF-8 with every escape, \uXXXX surrogate pairs
 *   included; a lone surrogate, a raw control character or malformed UTF-8
 *   in the text is an error. Decoded strings may contain NUL (from \u0000):
 *   use `len`; `str` is NUL-terminated as well.
 * - Numbers are checked against the JSON grammar and kept as their text,
 *   so that 64-bit integers round-trip exactly (rs_jv_u64).
 * - Nesting deeper than RS_JSON_MAX_DEPTH arrays/objects is an error.
 * - Duplicate keys are kept; rs_jv_get returns the last one (as most
 *   parsers do). A leading UTF-8 byte order mark is skipped.
 * - Errors are RS_EXIT_DATA "<name>: JSON syntax error at byte N (line L,
 *   column C): <what>", N counted from 0. */
#ifndef RS_UTIL_JSON_READ_H
#define RS_UTIL_JSON_READ_H

#include <stddef.h>
#include <stdint.h>
#include "ringshard/error.h"

#define RS_JSON_MAX_DEPTH 64

typedef enum {
    RS_JV_NULL,
    RS_JV_BOOL,
    RS_JV_NUMBER,
    RS_JV_STRING,
    RS_JV_ARRAY,
    RS_JV_OBJECT
} rs_jv_type;

typedef struct rs_jv rs_jv;
typedef struct rs_jv_member rs_jv_member;

struct rs_jv {
    rs_jv_type type;
    size_t offset;          /* byte offset of the value's first character */
    int boolean;            /* BOOL */
    char *str;              /* STRING: decoded; NUMBER: the literal text */
    size_t len;             /* length of str */
    size_t n;               /* ARRAY: elements; OBJECT: members */
    rs_jv *items;           /* ARRAY */
    rs_jv_member *members;  /* OBJECT, in document order */
};

struct rs_jv_member {
    char *key;
    size_t keylen;
    rs_jv value;
};

/* Parses text[0..len) into *root. `name` (the file) prefixes messages.
 * On error returns -1, fills err (RS_EXIT_DATA; RS_EXIT_IO when out of
 * memory) and, if err_offset is not NULL, stores the byte offset there;
 * *root is then empty (nothing to free, though freeing is harmless). */
int rs_jv_parse(rs_jv *root, const char *text, size_t len, const char *name, rs_error *err,
                size_t *err_offset);

void rs_jv_free(rs_jv *v);

/* The member `key` of an object (the last one if repeated), or NULL if v is
 * not an object or has no such member. */
const rs_jv *rs_jv_get(const rs_jv *v, const char *key);

/* The number as an unsigned 64-bit integer: 0 if the literal is a plain
 * non-negative integer (no sign, fraction or exponent) that fits, else -1. */
int rs_jv_u64(const rs_jv *v, uint64_t *out);

/* Length of the well-formed UTF-8 sequence at s[0..n) (1-4), or 0 if s does
 * not start with one (overlong forms, surrogates, > U+10FFFF, truncation
 * and stray continuation bytes are not well-formed). n >= 1. */
size_t rs_utf8_seq_len(const unsigned char *s, size_t n);

#endif
