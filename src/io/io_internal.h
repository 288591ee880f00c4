/* io/io_internal.h - test hooks of the input and compression layer (not part
 * of the public API). */
#ifndef RS_IO_INTERNAL_H
#define RS_IO_INTERNAL_H

#include <stddef.h>
#include "ringshard/deflate.h"
#include "ringshard/reader.h"

/* Default size of the compressed-input block read with one read(2). */
#define RS_READER_BLOCK (1u << 20)

/* Sets the size of the input block (>= 2; call before the first read; returns
 * 0, or -1 if it is too late or out of memory). Tests use tiny blocks to put
 * gzip headers, trailers and member boundaries across refills. */
int rs_reader_set_block_size(rs_reader *r, size_t block);

/* Bytes of the ISA-L stream rs_deflater_new_at places (0 in a build
 * without ISA-L). */
size_t rs_deflater_stream_size(void);

/* rs_deflater_new, with the ISA-L stream (when the codec is ISA-L) in the
 * caller's memory: rs_deflater_stream_size() bytes, 8-byte aligned, left to
 * the caller and outliving the deflater; NULL allocates it as
 * rs_deflater_new does. ISA-L levels 1 and 2 once read the stream's address
 * as data (deflate.c, isal_head): tests place the stream at many addresses
 * and require the same members. */
rs_deflater *rs_deflater_new_at(int level, rs_codec_choice codec, void *stream);

#endif
