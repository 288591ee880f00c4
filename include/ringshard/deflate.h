/* ringshard/deflate.h - gzip output as a sequence of complete members
 * (and, from rs_compressor_new, zstd output as metadata + data frames).
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

/* What the outputs are (pipeline, dedup and manifest `compress`): plain
 * CSV, gzip members or zstd frames. 0 stays "plain", so `if (compress)`
 * still asks "compressed at all". */
#define RS_COMPRESS_NONE 0
#define RS_COMPRESS_GZIP 1
#define RS_COMPRESS_ZSTD 2

/* zstd levels ringshard accepts (libzstd's own range in 1.5: its
 * ZSTD_minCLevel() and ZSTD_maxCLevel()); 0 is not one (libzstd reads it
 * as its default, 3: ask for 3). */
#define RS_ZSTD_LEVEL_MIN (-131072)
#define RS_ZSTD_LEVEL_MAX 22

/* Parses a compression level as an option gives it: an integer in the
 * union of the gzip and zstd ranges (RS_ZSTD_LEVEL_MIN to
 * RS_ZSTD_LEVEL_MAX), whatever the codec, since the codec may be chosen
 * later; rs_level_check then checks it against the codec. `what` names it
 * in messages ("--level"). 0, or -1 with err (RS_EXIT_USAGE). */
int rs_level_parse(const char *what, const char *arg, int *level, rs_error *err);

/* Checks level against compress (RS_COMPRESS_*): gzip (and none) 1-9,
 * zstd any of its levels but 0. 0, or -1 with err (RS_EXIT_USAGE). */
int rs_level_check(const char *what, int compress, int level, rs_error *err);

/* 1 when this build reads and writes zstd (libzstd), else 0. */
int rs_have_zstd(void);

/* A compressor for `compress` (RS_COMPRESS_GZIP: as rs_deflater_new;
 * RS_COMPRESS_ZSTD: one ZSTD_CCtx at zstd level `level`, kept for every
 * frame; codec is then unused). NULL if out of memory, or for zstd in a
 * build without it. rs_deflater_member then writes zstd frames. */
rs_deflater *rs_compressor_new(int compress, int level, rs_codec_choice codec);

/* The bytes one rs_compressor_new(compress, level, codec) holds. */
size_t rs_compressor_bytes(int compress, int level, rs_codec_choice codec);

/* level: 0-9 as gzip's. ISA-L: 0-2 -> its levels 0-2 (0 still compresses:
 * it has no stored mode), 3-9 -> its level 3, its highest. zlib uses the
 * level as given, 0 = stored. Levels outside 0-9 are clamped. The same input
 * always gives the same member, on any thread and wherever the state lies
 * in memory (tests/test_determinism.c, tests/test_deflate_placement.c; ISA-L
 * levels 1 and 2 need a workaround for that, see deflate.c).
 * Returns NULL if out of memory. */
rs_deflater *rs_deflater_new(int level, rs_codec_choice codec);

/* The bytes one rs_deflater_new(level, codec) holds (its state and work
 * buffers), for the --memory budget. */
size_t rs_deflater_bytes(int level, rs_codec_choice codec);

/* Compresses the concatenation of npieces pieces (pieces[i], lens[i]) into
 * one gzip member appended to out, with the RS extra subfield below (for a
 * zstd compressor: the RS metadata frame and one zstd frame, see below).
 * `records` is the number of CSV records the bytes hold (the caller knows
 * it: ringshard's members are whole rows); the line ends are counted here.
 * The data must start at a record boundary (the member's flag says so).
 * *crc_out receives the CRC-32 of the uncompressed bytes (gzip's CRC).
 * Returns 0, or -1: rs_deflater_why says why (out of memory, or the codec's
 * own error). */
int rs_deflater_member(rs_deflater *d, const void *const *pieces, const size_t *lens,
                       size_t npieces, uint64_t records, rs_buf *out, uint32_t *crc_out);

/* rs_deflater_member for a caller that knows the line ends of the
 * pieces' concatenation (LF, and CR not followed by LF: the pipeline's
 * scanner counted them), so that they are not counted again. */
int rs_deflater_member_lines(rs_deflater *d, const void *const *pieces, const size_t *lens, size_t npieces,
                             uint64_t records, uint64_t lines, rs_buf *out, uint32_t *crc_out);

/* Why this thread's last failed rs_deflater_member (or header) failed: "out
 * of memory (N bytes of compressed output)", "isal_deflate returned -8",
 * "zstd: Allocation error : not enough memory", ... A static string, valid
 * until the thread's next failure. */
const char *rs_deflater_why(void);

/* The RS subfield: every member ringshard writes describes itself, so that
 * a reader can list a file's members by hopping from header to header
 * (no inflating) and split the file among MPI ranks (see reader.h,
 * rs_input_units). Full description: docs/format-data.md. Byte layout of the
 * member header, all integers little-endian (gzip's byte order):
 *
 *   offset size  field
 *    0     2     1f 8b            gzip magic
 *    2     1     08               CM = deflate
 *    3     1     04               FLG = FEXTRA (no name, comment or HCRC)
 *    4     4     0                MTIME (none: outputs are reproducible)
 *    8     1     XFL              0
 *    9     1     03               OS = Unix
 *   10     2     32               XLEN: one subfield of 4 + 28 bytes
 *   12     1     'R' (0x52)       SI1
 *   13     1     'S' (0x53)       SI2
 *   14     2     28               LEN of the payload
 *   16     1     1                version
 *   17     1     flags            bit 0: the data starts at a CSV record
 *                                 boundary (always set by ringshard);
 *                                 other bits 0, readers ignore them
 *   18     2     0                reserved
 *   20     8     size             the whole member in bytes, header to
 *                                 trailer: the next member starts at
 *                                 offset + size
 *   28     8     lines            line ends in the uncompressed data: LF,
 *                                 and CR not followed by LF (within the
 *                                 member), as the CSV scanner counts lines
 *   36     8     records          CSV records in the uncompressed data
 *   44     ...   deflate data, then CRC-32 and ISIZE (4 + 4 bytes)
 *
 * A reader looks for SI1 SI2 = 'R' 'S' anywhere in the extra field (other
 * subfields may come first) and accepts LEN >= 28 with version 1. */
#define RS_MEMBER_SI1 'R'
#define RS_MEMBER_SI2 'S'
#define RS_MEMBER_VERSION 1
#define RS_MEMBER_PAYLOAD 28
#define RS_MEMBER_HEADER_LEN 44   /* as ringshard writes it */
#define RS_MEMBER_BOUNDARY 1u     /* flags bit 0 */

typedef struct {
    uint64_t size, lines, records;
    uint8_t version, flags;
} rs_member_info;

/* Parses the gzip member header at p[0..n): returns 1 with *mi filled when
 * it is a gzip header whose extra field holds an RS subfield (version 1,
 * LEN >= 28), 0 when it is not (no magic, no FEXTRA, no RS subfield, an
 * unknown version, or n too short to hold the extra field: pass at least
 * 12 + XLEN bytes). *hdr_need gets 12 + XLEN when the header has FEXTRA
 * (else 0), so a caller can read more and ask again. */
int rs_member_parse(const void *p, size_t n, rs_member_info *mi, size_t *hdr_need);

/* ringshard's zstd pieces: a skippable frame with the same metadata as the
 * RS subfield, then one zstd frame (with its content size and checksum) of
 * the data. Byte layout of the metadata frame, all integers little-endian
 * (zstd's byte order); full description: docs/format-data.md.
 *
 *   offset size  field
 *    0     4     0x184D2A52       skippable frame magic (bytes 52 2a 4d 18)
 *    4     4     32               frame size (bytes after these 8)
 *    8     1     'R' (0x52)
 *    9     1     'S' (0x53)
 *   10     1     1                version
 *   11     1     flags            bit 0: the data starts at a record boundary
 *   12     4     0                reserved
 *   16     8     size             this frame plus the zstd frame after it:
 *                                 the next piece starts at offset + size
 *   24     8     lines            line ends in the data (as the RS subfield)
 *   32     8     records          CSV records in the data
 *
 * Other readers skip the frame (zstd -d, zstdcat, libzstd). */
#define RS_ZSTD_META_MAGIC 0x184D2A52u
#define RS_ZSTD_META_LEN 40

/* Parses the metadata frame at p[0..n): 1 with *mi filled, 0 when p does
 * not start with one (another magic, not "RS", another version, or n < 40). */
int rs_zstd_meta_parse(const void *p, size_t n, rs_member_info *mi);

/* Line ends in p[0..n) as the CSV scanner counts them: LF, and CR not
 * followed by LF (a CR at the very end counts). */
uint64_t rs_count_line_ends(const void *p, size_t n);

void rs_deflater_free(rs_deflater *d);

/* CRC-32 (gzip polynomial) of buf, continuing from crc (start with 0). */
uint32_t rs_crc32(uint32_t crc, const void *buf, size_t len);

/* The CRC-32 of the whole file `name` under dirfd into *crc: 0, or -1
 * with errno when it cannot be opened or read. */
int rs_crc32_fileat(int dirfd, const char *name, uint32_t *crc);

/* The same of the file's first len bytes (all of it when shorter). */
int rs_crc32_fileat_n(int dirfd, const char *name, uint64_t len, uint32_t *crc);

/* CRC-32 of A||B given crc(A), crc(B) and len(B) (as zlib's crc32_combine). */
uint32_t rs_crc32_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

/* "isal" or "zlib": which library this build uses for codec `c`. */
const char *rs_codec_name(rs_codec_choice c);

#endif
