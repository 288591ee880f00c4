#include <stdlib.h>
#include "ringshard/buf.h"

size_t rs_buf_cap_after(const rs_buf *b, size_t extra)
{
    if (b->cap - b->len >= extra)
        return b->cap;
    size_t need = b->len + extra;
    size_t cap = b->cap ? b->cap : 256;  /* thousands of scatter buffers start small */
    while (cap < need)
        cap *= 2;
    return cap;
}

int rs_buf_reserve(rs_buf *b, size_t extra)
{
    if (b->cap - b->len >= extra)
        return 0;
    size_t cap = rs_buf_cap_after(b, extra);
    char *p = realloc(b->data, cap);
    if (p == NULL)
        return -1;
    b->data = p;
    b->cap = cap;
    return 0;
}

void rs_buf_free(rs_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}
