/* ringshard/buf.h - a growable byte buffer (amortised doubling; reused
 * across batches so that hot loops never allocate per row). */
#ifndef RINGSHARD_BUF_H
#define RINGSHARD_BUF_H

#include <stddef.h>
#include <string.h>

typedef struct {
    char *data;
    size_t len;
    size_t cap;
} rs_buf;

/* Ensures room for `extra` more bytes. Returns 0, or -1 if out of memory. */
int rs_buf_reserve(rs_buf *b, size_t extra);

/* The capacity b has once rs_buf_reserve(b, extra) has made room (for the
 * memory budgets that count what is allocated). */
size_t rs_buf_cap_after(const rs_buf *b, size_t extra);

/* Appends n bytes. Returns 0, or -1 if out of memory. */
static inline int rs_buf_append(rs_buf *b, const void *p, size_t n)
{
    if (n == 0)  /* an empty buffer's data may be NULL: memcpy must not see it */
        return 0;
    if (b->cap - b->len < n && rs_buf_reserve(b, n) != 0)
        return -1;
    memcpy(b->data + b->len, p, n);
    b->len += n;
    return 0;
}

/* Frees the storage and zeroes the buffer. */
void rs_buf_free(rs_buf *b);

#endif
