/* ringshard/json.h - a small streaming JSON writer (manifests, plans).
 * Output is deterministic: keys in the order written, numbers as given,
 * strings escaped per RFC 8259: '"' and '\\' with a backslash, the control
 * characters BS, FF, LF, CR, TAB as \b \f \n \r \t, every other byte
 * below 0x20 as \u00xx. Well-formed UTF-8 passes through unchanged. A byte
 * that is not part of a well-formed UTF-8 sequence (stray continuation byte,
 * overlong form, surrogate, > U+10FFFF, truncated sequence) is written as
 * \u00xx of the byte, i.e. read back as the code point U+00xx (Latin-1):
 * this is lossy - such a string does not read back as the same bytes.
 * Errors are sticky: misuse (a value in an object without a key, a key in
 * an array, unbalanced ends, nesting deeper than 63) or a failed write makes
 * rs_json_finish return -1; nothing more is written after misuse.
 * With pretty=1, members and elements go one per line, indented by 2
 * spaces per level, "key": value; with pretty=0, no whitespace at all.
 * No newline is written after the last value: add one before
 * rs_json_finish if the file should end with one. */
#ifndef RINGSHARD_JSON_H
#define RINGSHARD_JSON_H

#include <stdint.h>
#include <stdio.h>

typedef struct {
    FILE *f;
    int depth;
    int first[64];   /* per depth: state flags (no element written yet,
                        key pending, is an object); private to json.c */
    int pretty;
    int error;
} rs_json;

void rs_json_init(rs_json *j, FILE *f, int pretty);
void rs_json_object_begin(rs_json *j);
void rs_json_object_end(rs_json *j);
void rs_json_array_begin(rs_json *j);
void rs_json_array_end(rs_json *j);
/* The key of the next member (inside an object). */
void rs_json_key(rs_json *j, const char *key);
/* s NULL writes null. rs_json_string_n may hold NUL bytes (\u0000). */
void rs_json_string(rs_json *j, const char *s);
void rs_json_string_n(rs_json *j, const char *s, size_t n);
void rs_json_u64(rs_json *j, uint64_t v);
void rs_json_i64(rs_json *j, int64_t v);
/* %.17g (always '.' as decimal point); integral values of magnitude up to
 * 2^53 without exponent or fraction ("3", not "3.0"); null for NaN/inf. */
void rs_json_double(rs_json *j, double v);
void rs_json_bool(rs_json *j, int v);
void rs_json_null(rs_json *j);
/* A raw, already-formatted JSON value (e.g. a 128-bit integer as digits),
 * written as is (not checked); NULL writes null. */
void rs_json_raw(rs_json *j, const char *text);
/* Ends the document: flushes f (does not close it; writes no newline).
 * 0, or -1 if any write failed, the calls were unbalanced or misused. */
int rs_json_finish(rs_json *j);

#endif
