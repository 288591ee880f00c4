/* ringshard/deflate.h - gzip output as a sequence of complete members.
 *
 * Each call compresses one piece into one complete gzip member (header,
 * deflate stream, CRC-32 and ISIZE trailer), so any gzip reader reads the
 * concatenation whole and a reader can split a file at member boundaries.
 * One rs_deflater per thread, reused for every member: keeping one state per
 * output file would thrash the caches (see ../shared notes). */
#ifndef RINGSHARD_DEFLATE_H
#define RINGSHARD_DEFLATE_H

#include <stddef.h>
#include <stdint.h>
#include "ringshard/buf.h"
#include "ringshard/reader.h"

typedef struct rs_deflater rs_deflater;

/* level: 0-9 as gzip's. ISA-L: 0 -> its level 0 (it still compresses: it
 * has no stored mode), 1-9 -> its level 3, the only level >= 1 whose output
 * does not depend on other threads compressing at the same time (see
 * deflate.c). zlib uses the level as given, 0 = stored. Levels outside 0-9
 * are clamped. The same input always gives the same member, on any thread
 * (tests/test_determinism.c).
 * Returns NULL if out of memory. */
rs_deflater *rs_deflater_new(int level, rs_codec_choice codec);

/* Compresses the concatenation of npieces pieces (pieces[i], lens[i]) into
 * one gzip member appended to out. *crc_out receives the CRC-32 of the
 * uncompressed bytes (gzip's CRC). Returns 0, or -1 (out of memory). */
int rs_deflater_member(rs_deflater *d, const void *const *pieces, const size_t *lens,
                       size_t npieces, rs_buf *out, uint32_t *crc_out);

void rs_deflater_free(rs_deflater *d);

/* CRC-32 (gzip polynomial) of buf, continuing from crc (start with 0). */
uint32_t rs_crc32(uint32_t crc, const void *buf, size_t len);

/* CRC-32 of A||B given crc(A), crc(B) and len(B) (as zlib's crc32_combine). */
uint32_t rs_crc32_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

/* "isal" or "zlib": which library this build uses for codec `c`. */
const char *rs_codec_name(rs_codec_choice c);

#endif
