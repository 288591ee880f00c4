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
 * Errors are sticky: after a failed read every further read fails with the
 * same error. Messages name the file and the compressed byte offset. */
#ifndef RINGSHARD_READER_H
#define RINGSHARD_READER_H

#include <stdint.h>
#include <sys/types.h>
#include "ringshard/error.h"

typedef struct rs_reader rs_reader;

typedef enum { RS_CODEC_AUTO = 0, RS_CODEC_ZLIB = 1 } rs_codec_choice;

/* Opens `path` ("-" is standard input). Returns NULL and fills err on failure
 * (cannot open: RS_EXIT_IO). */
rs_reader *rs_reader_open(const char *path, rs_codec_choice codec, rs_error *err);

/* Reads up to cap decompressed bytes into buf. Returns the number of bytes
 * (> 0), 0 at the end of the input, or -1 on error (err filled: corrupt or
 * truncated gzip is RS_EXIT_DATA and names the file and the compressed byte
 * offset; a failed read(2) is RS_EXIT_IO). An empty file is a valid, empty
 * input, unless it is named as gzip (see above). Garbage after the last
 * gzip member is an error. */
ssize_t rs_reader_read(rs_reader *r, void *buf, size_t cap, rs_error *err);

/* Compressed (on-disk) bytes consumed so far, for progress and messages. */
uint64_t rs_reader_consumed(const rs_reader *r);

/* Size of the input file in bytes, or 0 when unknown (a pipe). */
uint64_t rs_reader_size(const rs_reader *r);

/* 1 if the input is gzip, 0 if plain (valid after the first read). */
int rs_reader_is_gzip(const rs_reader *r);

/* Closes the input and frees r (NULL is allowed). */
void rs_reader_close(rs_reader *r);

#endif
