/* ringshard/reader.h - the input layer: a file or stdin, plain or gzip.
 *
 * gzip is recognised by its magic bytes (1f 8b), whatever the file name;
 * but a file named *.gz, *.gzip or *.tgz (any case) must be gzip: one that
 * does not start with the magic, or is empty, is an error (RS_EXIT_DATA,
 * naming the file and byte offset 0) rather than being read as plain CSV.
 * A gzip file may hold any number of concatenated members (pigz, bgzip and
 * ringshard itself write such files); all are read. Decompression uses
 * ISA-L (igzip) when the build has it, zlib otherwise; rs_reader_open can
 * force zlib so that both paths are tested in one build.
 *
 * zstd (RFC 8878) is recognised by its magic bytes too (28 b5 2f fd, or a
 * skippable frame's 5X 2a 4d 18) and read frame after frame, skippable
 * frames skipped; a file named *.zst or *.zstd must be zstd, as *.gz must
 * be gzip. Frames that need a dictionary are refused (RS_EXIT_DATA). A
 * build without libzstd refuses zstd input with RS_EXIT_USAGE.
 *
 * Errors are sticky: after a failed read every further read fails with the
 * same error. Messages name the file and the compressed byte offset. */
#ifndef RINGSHARD_READER_H
#define RINGSHARD_READER_H

#include <stdint.h>
#include <sys/types.h>
#include "ringshard/error.h"

typedef struct rs_reader rs_reader;

typedef enum { RS_CODEC_AUTO = 0, RS_CODEC_ZLIB = 1 } rs_codec_choice;

/* How input path is named in every message: "standard input" for "-",
 * else path as given. */
const char *rs_input_label(const char *path);

/* Opens `path` ("-" is standard input). Returns NULL and fills err on failure
 * (cannot open: RS_EXIT_IO). */
rs_reader *rs_reader_open(const char *path, rs_codec_choice codec, rs_error *err);

/* Opens `name` relative to the directory descriptor dirfd (openat(2):
 * AT_FDCWD is the working directory, where "-" is standard input), naming
 * it `display` in messages (NULL: name). A reader of a directory that may
 * be replaced while it is read (a bucket directory that a --force run
 * republishes) opens the directory once and every file through its
 * descriptor, so that all of them come from one generation. */
rs_reader *rs_reader_openat(int dirfd, const char *name, const char *display, rs_codec_choice codec,
                            rs_error *err);

/* Opens the byte range [offset, offset + length) of the file `path` (not
 * standard input) as if it were the whole input: a range of whole gzip
 * members (see rs_input_units). Messages give file offsets, not offsets
 * in the range; rs_reader_consumed counts from the range's start. A range
 * that ends inside a member is a truncated gzip stream (RS_EXIT_DATA). */
rs_reader *rs_reader_open_range(const char *path, rs_codec_choice codec, uint64_t offset, uint64_t length,
                                rs_error *err);

/* rs_reader_open_range relative to dirfd, as rs_reader_openat. */
rs_reader *rs_reader_openat_range(int dirfd, const char *name, const char *display, rs_codec_choice codec,
                                  uint64_t offset, uint64_t length, rs_error *err);

/* Says that a reader from rs_reader_open_range reads its file's last
 * unit: when its range is used up, the file must still end there. Units
 * cover the file as rs_input_units found it, while every other input is
 * read to its end; so a file that has grown (or shrunk) since then fails
 * the read (RS_EXIT_IO, naming the file, the range's end and the size)
 * instead of its new bytes being ignored. No effect on other readers. */
void rs_reader_expect_file_end(rs_reader *r);

/* A UNIT of an input: what one batch sequence reads, and what MPI ranks
 * share out (a rank takes whole units). A gzip file whose members all
 * carry the RS subfield (deflate.h: ringshard's own outputs), or a zstd
 * file whose frames all follow an RS metadata frame (ringshard's own
 * .csv.zst), is cut into units at member (frame) boundaries, independently of the number of ranks and
 * threads: a new unit starts at the first member that starts at a record
 * boundary at or after each multiple of the unit size (compressed bytes).
 * Any other input (gzip from gzip, pigz or bgzip, plain CSV, a pipe,
 * standard input, or a chain of RS headers that does not add up to the
 * file) is one unit, the whole file, read as before. (The pipeline reads
 * even an RS file whole when its settings can move record boundaries:
 * docs/format-data.md, "Units and reading settings".) */
typedef struct {
    uint64_t offset, size;          /* compressed byte range in the file */
    uint64_t line_base, record_base; /* line ends and records of the file before the unit */
    uint64_t lines, records;        /* in the unit, from its members' headers */
    int counted;                    /* 1: the counts come from RS headers (the
                                       pipeline checks them); 0: a whole file */
    int zstd;                       /* 1: the pieces are zstd frames with RS
                                       metadata frames; 0: gzip members */
} rs_input_unit;

/* The unit size: RINGSHARD_UNIT_BYTES from the environment when set (a
 * testing knob: tests use tiny units), else 64 MiB. */
uint64_t rs_unit_bytes(void);

/* Lists the units of `path` ("-": standard input, one unit) by hopping
 * from member header to member header with pread (nothing is inflated).
 * Only a regular file is opened: a FIFO or a device is one unit, left
 * unopened for the reader, which opens it once.
 * *units is malloc'd (*n >= 1); *size gets the file's size (0 for a pipe).
 * Returns 0, or -1 with err when the file cannot be opened (RS_EXIT_IO). */
int rs_input_units(const char *path, uint64_t unit_bytes, rs_input_unit **units, size_t *n, uint64_t *size,
                   rs_error *err);

/* rs_input_units of `name` relative to dirfd, named `path` in messages
 * (NULL: name), as rs_reader_openat. */
int rs_input_units_at(int dirfd, const char *name, const char *path, uint64_t unit_bytes, rs_input_unit **units,
                      size_t *n, uint64_t *size, rs_error *err);

/* Reads up to cap decompressed bytes into buf. Returns the number of bytes
 * (> 0), 0 at the end of the input, or -1 on error (err filled: corrupt or
 * truncated gzip is RS_EXIT_DATA and names the file and the compressed byte
 * offset; a failed read(2) is RS_EXIT_IO). An empty file is a valid, empty
 * input, unless it is named as gzip (see above). Zero bytes after the last
 * gzip member, up to the end of the input, are padding (tape and block
 * writers leave it), skipped and counted (rs_reader_zero_padding); any other
 * byte after a member that does not start another member, and anything but
 * zeros after a zero, is garbage: an error (RS_EXIT_DATA). */
ssize_t rs_reader_read(rs_reader *r, void *buf, size_t cap, rs_error *err);

/* Compressed (on-disk) bytes consumed so far, for progress and messages. */
uint64_t rs_reader_consumed(const rs_reader *r);

/* Size of the input file in bytes, or 0 when unknown (a pipe). */
uint64_t rs_reader_size(const rs_reader *r);

/* Zero bytes read after the last gzip member (padding, accepted up to the
 * end of the input; see rs_reader_read). */
uint64_t rs_reader_zero_padding(const rs_reader *r);

/* 1 if the input is gzip, 0 if plain or zstd (valid after the first read). */
int rs_reader_is_gzip(const rs_reader *r);

/* What the first bytes p[0..n) of data that is not text look like, when
 * it is compressed data ringshard does not unwrap - a zlib stream (pigz -z),
 * or gzip data inside the decompressed bytes (decoded: p is what rd
 * decompressed) - as words for a message ("zlib data (pigz -z): decompress
 * it first (pigz -dz)"); "" when neither. */
const char *rs_inner_format(const unsigned char *p, size_t n, int decoded);

/* 1 if the input is zstd (valid after the first read). */
int rs_reader_is_zstd(const rs_reader *r);

/* The largest zstd window the reader accepts, as a log2: 27 (128 MiB), what
 * `zstd --long` (--long=27) writes and libzstd's own default limit. A frame
 * asking for more is refused (RS_EXIT_DATA) instead of allocated. */
#define RS_ZSTD_WINDOW_LOG_MAX 27

/* Turns on the checksum of the input's stored bytes (what the file holds,
 * compressed or not: rs_crc64 of every byte read from it), which a bucket
 * directory records for each input it ingests. Call it before the first
 * read. */
void rs_reader_checksum_on(rs_reader *r);

/* 1 and *crc when the checksum is on and r has read its whole input, from
 * its first byte to its end (not a range: rs_reader_open_range); else 0. */
int rs_reader_checksum(const rs_reader *r, uint64_t *crc);

/* 1 with *crc, rs_crc64 of the input's content (its decompressed bytes,
 * whatever its gzip members or zstd frames; a plain input's are its stored
 * bytes: rs_reader_checksum's) and *size, their number, when the checksum
 * was on from the first read and r has read to its clean end; else 0. For a
 * range (rs_reader_open_range) they are the range's: the file's content is
 * its units' combined in order (rs_crc64_combine), the same whether it is
 * read whole or in units, by any producers or ranks. A bucket directory
 * records it for each input, so that a copy compressed otherwise is known
 * as the same input. */
int rs_reader_content(const rs_reader *r, uint64_t *crc, uint64_t *size);

/* The content of the file `name` under dirfd, as rs_reader_content gives
 * it, read whole now (named display in messages). 1 with *crc and *size,
 * 0 when it has none, -1 with err. */
int rs_file_content(int dirfd, const char *name, const char *display, rs_codec_choice codec, uint64_t *crc,
                    uint64_t *size, rs_error *err);

/* The size of the content of the regular file `name` under dirfd, from
 * its first and last bytes only: a plain file's size; a gzip file's ISIZE
 * (its last member's size mod 2^32: *mod32 = 1; the whole content's when
 * it is one member, as gzip writes); a zstd file's first frame's declared
 * content size (the whole content's when it is one frame, as zstd writes).
 * 1 with *size, 0 when unknown (a zstd frame that declares none, a file
 * that cannot be read). */
int rs_file_content_size_hint(int dirfd, const char *name, uint64_t *size, int *mod32);

/* The checksum of a regular file's stored bytes, as rs_reader_checksum
 * takes it while reading (rs_crc64 of every byte), in one pass of its own:
 * name relative to dirfd, named display in messages. *size gets its size.
 * A file that changes meanwhile (size, modification time) is RS_EXIT_IO;
 * a stop signal RS_EXIT_INTERRUPTED. 0 or -1 with err. */
int rs_file_checksum(int dirfd, const char *name, const char *display, uint64_t *crc, uint64_t *size, rs_error *err);

/* Hands every block of stored bytes r reads from its file to fn, in order
 * and before any is decoded, so that a caller that copies a file as it
 * checks it reads it once (compact). fn returns 0, or -1 with err set: the
 * read then fails with that error (sticky, as any other). Call it before
 * the first read. */
typedef int (*rs_reader_tee_fn)(void *ctx, const void *p, size_t n, rs_error *err);
void rs_reader_tee(rs_reader *r, rs_reader_tee_fn fn, void *ctx);

/* Closes the input and frees r (NULL is allowed). */
void rs_reader_close(rs_reader *r);

#endif
