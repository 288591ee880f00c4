/* The inputs a bucket directory holds, as an append tells one again
 * (dataset.h: rs_catalog_*).
 *
 * Why one owner: "the same input" is a rule of the format - by the size
 * and CRC-64 of its stored bytes, by its content once decompressed, a
 * pipe's of any size, an older version's entry without a checksum by its
 * path and size - and both of an append's checks (before its run, for
 * files; after it, for what only reading tells) must apply the same
 * rule, or an input would be skipped by one and ingested twice by the
 * other. The jobs decide what to read and when; what matches is here. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ringshard/dataset.h"

int rs_catalog_add(rs_catalog *c, const rs_held *e)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 64;
        rs_held *v = realloc(c->v, cap * sizeof *v);
        if (!v)
            return -1;
        c->v = v, c->cap = cap;
    }
    c->v[c->n++] = *e;
    return 0;
}

int rs_catalog_of_dir(rs_catalog *c, const rs_bucketdir *bd)
{
    rs_ingested *v;
    size_t nv;
    if (rs_bucketdir_ingested(bd, &v, &nv) != 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < nv; i++) {
        const rs_manifest_input *in = v[i].entry;
        rs_held e = {.size = in->size, .gen = v[i].gen, .path = in->path, .any_size = v[i].any_size,
                     .by_path = !in->checksum, .content = in->content, .content_size = in->content_size,
                     .entry = in};
        if (in->checksum)
            snprintf(e.sum, sizeof e.sum, "%s", in->checksum);
        rc = rs_catalog_add(c, &e);
    }
    free(v);
    return rc;
}

void rs_catalog_free(rs_catalog *c)
{
    free(c->v);
    memset(c, 0, sizeof *c);
}

const rs_held *rs_catalog_stored(const rs_catalog *c, uint64_t size, const char *sum)
{
    for (size_t i = 0; i < c->n; i++)
        if (!c->v[i].by_path && (c->v[i].size == size || c->v[i].any_size) && strcmp(c->v[i].sum, sum) == 0)
            return &c->v[i];
    return NULL;
}

const rs_held *rs_catalog_by_path(const rs_catalog *c, uint64_t size, const char *path)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->v[i].by_path && c->v[i].size == size && strcmp(c->v[i].path, path) == 0)
            return &c->v[i];
    return NULL;
}

int rs_catalog_has_size(const rs_catalog *c, uint64_t size)
{
    for (size_t i = 0; i < c->n; i++)
        if (!c->v[i].by_path && (c->v[i].size == size || c->v[i].any_size))
            return 1;
    return 0;
}

int rs_content_sizes_match(uint64_t a, int a_mod32, uint64_t b, int b_mod32)
{
    return a_mod32 || b_mod32 ? ((a ^ b) & 0xffffffffu) == 0 : a == b;
}

int rs_catalog_has_content_size(const rs_catalog *c, uint64_t size, int mod32)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->v[i].content && rs_content_sizes_match(c->v[i].content_size, 0, size, mod32))
            return 1;
    return 0;
}

const rs_held *rs_catalog_content(const rs_catalog *c, uint64_t size, const char *sum)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->v[i].content && c->v[i].content_size == size && strcmp(c->v[i].content, sum) == 0)
            return &c->v[i];
    return NULL;
}

int rs_catalog_read(const rs_catalog *c, const rs_read_sums *in, int pipe, rs_held *was)
{
    char sum[RS_CHECKSUM_TEXT], content[RS_CHECKSUM_TEXT];
    const rs_held *w = NULL;
    if (pipe && in->has_checksum) {   /* a pipe's stored bytes: its size is unknown (0), any size */
        rs_checksum_text(in->checksum, sum);
        w = rs_catalog_stored(c, in->size ? in->size : in->bytes, sum);
        for (size_t k = 0; !w && k < c->n; k++)
            if (!c->v[k].by_path && strcmp(c->v[k].sum, sum) == 0)
                w = &c->v[k];
    }
    if (!w && in->has_content && in->content_size) {
        rs_checksum_text(in->content, content);
        if ((w = rs_catalog_content(c, in->content_size, content)) != NULL) {
            *was = *w;
            was->by_content = 1;
            return 1;
        }
    }
    if (w)
        *was = *w;
    return w != NULL;
}

void rs_held_where(const rs_held *was, char *where, size_t n)
{
    if (was->this_run)
        snprintf(where, n, "the same content as %.200s, %s in this run", was->path,
                 was->this_run == 2 ? "later" : "earlier");
    else if (was->by_content)
        snprintf(where, n, "already ingested by generation %" PRIu64 " (as %.200s: the same content "
                 "once decompressed)", was->gen, was->path);
    else if (was->by_path)
        snprintf(where, n, "already ingested by generation %" PRIu64 " (the same path and size; its "
                 "manifest, written by an older version, has no checksum)", was->gen);
    else
        snprintf(where, n, "already ingested by generation %" PRIu64 " (as %.200s)", was->gen, was->path);
}
