/* io/io_internal.h - test hooks of the input and compression layer (not part
 * of the public API). */
#ifndef RS_IO_INTERNAL_H
#define RS_IO_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
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

/* Little-endian unsigned integers of n bytes (gzip's and zstd's byte order). */
static inline uint64_t rs_get_le(const void *buf, int n)
{
    const unsigned char *p = buf;
    uint64_t v = 0;
    for (int i = n; i-- > 0;)
        v = v << 8 | p[i];
    return v;
}

static inline void rs_put_le(void *buf, uint64_t v, int n)
{
    unsigned char *p = buf;
    for (int i = 0; i < n; i++, v >>= 8)
        p[i] = (unsigned char)v;
}

/* Records why a compressor call failed, for rs_deflater_why (this
 * thread's last failure). Returns -1. */
int rs_codec_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* zstd output (zstdout.c), for deflate.c. The context is a ZSTD_CCtx
 * (void: no zstd.h outside io/). */
void *rs_zstd_cctx_new(int level);
void rs_zstd_cctx_free(void *cctx);
size_t rs_zstd_cctx_bytes(int level);
/* Appends one zstd frame of the pieces' concatenation; 0, or -1 (with
 * rs_codec_fail). */
int rs_zstd_frame(void *cctx, const void *const *pieces, const size_t *lens, size_t npieces, rs_buf *out);
/* Appends a metadata frame (size 0), and patches its size field. */
int rs_zstd_meta_write(rs_buf *out, uint64_t lines, uint64_t records);
void rs_zstd_meta_set_size(void *meta, uint64_t size);

/* How many first bytes rs_foreign_format looks at (a tar header's magic
 * is at byte offset 257). */
#define RS_MAGIC_LOOK 265

/* The name of a format that ringshard does not read ("xz", "zip",
 * "Parquet", "UTF-16 text" ...) whose magic number the input's first
 * bytes p[0..n) hold (n: RS_MAGIC_LOOK, or all the input when shorter),
 * with *advice, what to do instead; NULL when they hold none (io/magic.c). */
const char *rs_foreign_format(const unsigned char *p, size_t n, const char **advice);

#endif
