/* io/io_internal.h - test hooks of the input layer (not part of the public API). */
#ifndef RS_IO_INTERNAL_H
#define RS_IO_INTERNAL_H

#include <stddef.h>
#include "ringshard/reader.h"

/* Default size of the compressed-input block read with one read(2). */
#define RS_READER_BLOCK (1u << 20)

/* Sets the size of the input block (>= 2; call before the first read; returns
 * 0, or -1 if it is too late or out of memory). Tests use tiny blocks to put
 * gzip headers, trailers and member boundaries across refills. */
int rs_reader_set_block_size(rs_reader *r, size_t block);

#endif
