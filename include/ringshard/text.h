/* ringshard/text.h - input bytes in messages, and what counts as text.
 *
 * A message that quotes bytes read from an input (a header, a field, a
 * key, a node name) goes through rs_text_escape, so that a terminal shows
 * them as written and is never driven by them: control bytes (C0, DEL and
 * the C1 range U+0080-U+009F) and bytes that are not UTF-8 become \xNN
 * escapes, a NUL byte among them (nothing is cut at a NUL), TAB, LF and CR
 * become \t, \n and \r, and a backslash becomes \\; valid UTF-8 text
 * stays as it is.
 *
 * rs_text_check is the rule for where ringshard expects text (a CSV
 * header, the first record without one: docs/formats.md, "Text"): no
 * control bytes but TAB, LF and CR. Bytes from 0x80 up pass whatever the
 * encoding (a Latin-1 header is a header); rs_text_controls counts the
 * control bytes that tell a binary file from text whose fields hold a
 * few odd bytes. */
#ifndef RINGSHARD_TEXT_H
#define RINGSHARD_TEXT_H

#include <stddef.h>
#include <stdio.h>
#include "ringshard/buf.h"

/* Appends p[0..n) to out escaped as above; when quote is not 0 the bytes
 * are put between two `quote` characters and a quote character inside is
 * escaped as \xNN. At most max bytes of p are shown (0: all); "..." after
 * the closing quote says more were left out. Returns 0, -1 when out of
 * memory. */
int rs_text_escape(rs_buf *out, const char *p, size_t n, size_t max, char quote);

/* The letter of byte c's escape in ringshard's TSV outputs ('\\', 't',
 * 'n' or 'r': written after a backslash), or 0 for a byte written as it
 * is. */
char rs_text_tsv_escape(char c);

/* Writes p[0..n) to f as a field of ringshard's TSV outputs (keys, node
 * names and labels, which may hold any byte): the vectors' escapes
 * (\\ \t \n \r), and every other byte as it is. Write errors are left in
 * f's error flag. */
void rs_text_put_tsv(FILE *f, const char *p, size_t n);

/* rs_text_escape of p[0..n) (showing at most max bytes, 0: all) into the
 * fixed buffer buf (cap bytes, cap >= 16), cut at a whole escape with
 * "..." when it does not fit: for messages built with printf. Returns buf. */
const char *rs_text_shown(char *buf, size_t cap, const char *p, size_t n, size_t max, char quote);

/* rs_text_shown of a NUL-terminated string. */
const char *rs_text_shown_str(char *buf, size_t cap, const char *s, char quote);

/* Checks that p[0..n) is text as defined above. Returns n when it is;
 * else the offset of the first byte that is not, with *why set to what it
 * is ("a NUL byte", "control byte 0x1b"). */
size_t rs_text_check(const char *p, size_t n, const char **why);

/* How many bytes of p[0..n) are control bytes other than NUL, TAB, LF
 * and CR (0x01-0x08, 0x0b, 0x0c, 0x0e-0x1f, 0x7f); *first gets the offset
 * of the first (n when none). NUL is left out: a NUL byte in a field is
 * data that ringshard keeps byte for byte. */
size_t rs_text_controls(const char *p, size_t n, size_t *first);

#endif
