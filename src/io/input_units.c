/* io/input_units.c - a compressed input cut into units that can be read
 * apart: the chain of ringshard's gzip members (RS subfield) or zstd frames
 * (metadata frame), listed from their headers with pread, so that several
 * readers (rs_reader_open_range) can share one file. Any other input is one
 * unit, read as a stream. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ringshard/deflate.h"
#include "ringshard/reader.h"

uint64_t rs_unit_bytes(void)
{
    const char *e = getenv("RINGSHARD_UNIT_BYTES");
    if (e && *e) {
        char *end;
        unsigned long long v = strtoull(e, &end, 10);
        if (*end == '\0' && v > 0)
            return v;
    }
    return (uint64_t)64 << 20;
}

static ssize_t pread_all(int fd, void *buf, size_t n, uint64_t off)
{
    size_t got = 0;
    while (got < n) {
        ssize_t k = pread(fd, (char *)buf + got, n - got, (off_t)(off + got));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return k < 0 ? -1 : (ssize_t)got;
        got += (size_t)k;
    }
    return (ssize_t)got;
}

/* Whether bytes [off, size) of the file are all zero (padding after the
 * last member, see rs_reader_read). */
static int all_zero(int fd, uint64_t off, uint64_t size, unsigned char *buf, size_t cap)
{
    while (off < size) {
        size_t n = size - off < cap ? (size_t)(size - off) : cap;
        if (pread_all(fd, buf, n, off) != (ssize_t)n)
            return 0;
        for (size_t i = 0; i < n; i++)
            if (buf[i])
                return 0;
        off += n;
    }
    return 1;
}

/* The member chain of a file of `size` bytes: appends its units to *u.
 * Returns 1 when every member from offset 0 carries an RS subfield and the
 * sizes end exactly at the end of the file (or where zero padding runs to
 * it: the last unit takes the padding), 0 otherwise (not splittable),
 * -1 when out of memory. */
static int list_members(int fd, uint64_t size, uint64_t unit, rs_input_unit **u, size_t *n)
{
    unsigned char *h = malloc(12 + 65535);
    size_t cap = 0;
    uint64_t off = 0, lines = 0, records = 0, next_cut = unit;
    int ok = h != NULL ? 1 : -1, zstd = -1;  /* zstd: the first piece's kind, every piece's */
    *n = 0;
    while (ok == 1 && off < size) {
        rs_member_info mi;
        size_t need = 0, least;
        ssize_t k = pread_all(fd, h, RS_MEMBER_HEADER_LEN, off);
        if (k > 0 && h[0] == 0 && *n > 0 && all_zero(fd, off, size, h, 12 + 65535)) {
            /* zero padding to the end: the last unit's reader skips it */
            (*u)[*n - 1].size += size - off;
            break;
        }
        if (zstd < 0)
            zstd = k >= 4 && rs_zstd_meta_parse(h, (size_t)k, &mi);
        if (zstd) {
            /* the metadata frame, then at least a frame header and one
             * empty block (zstd's smallest frame: 4 + 2 + 3 bytes) */
            least = RS_ZSTD_META_LEN + 9;
            if (k < RS_ZSTD_META_LEN || !rs_zstd_meta_parse(h, (size_t)k, &mi)) {
                ok = 0;
                break;
            }
        } else if (k < 12 || (rs_member_parse(h, (size_t)k, &mi, &need) != 1 &&
                              (need <= (size_t)k || pread_all(fd, h, need, off) != (ssize_t)need ||
                               rs_member_parse(h, need, &mi, &need) != 1))) {
            ok = 0;  /* no RS subfield here: gzip from another tool, or garbage */
            break;
        } else {
            /* a member holds at least its header, an empty deflate block
             * and the trailer */
            least = need + 2 + 8;
        }
        /* it must end inside the file */
        if (mi.size < least || mi.size > size - off) {
            ok = 0;
            break;
        }
        /* The first unit holds at least the file's first line (its header,
         * when read with one): a later unit takes the header from there. */
        if (*n == 0 || (off >= next_cut && (mi.flags & RS_MEMBER_BOUNDARY) && lines > 0)) {
            if (*n == cap) {
                cap = cap ? 2 * cap : 16;
                rs_input_unit *g = realloc(*u, cap * sizeof *g);
                if (!g) {
                    ok = -1;
                    break;
                }
                *u = g;
            }
            (*u)[(*n)++] = (rs_input_unit){off, 0, lines, records, 0, 0, 1, zstd};
            next_cut = (off / unit + 1) * unit;
        }
        rs_input_unit *cur = &(*u)[*n - 1];
        cur->size += mi.size;
        cur->lines += mi.lines;
        cur->records += mi.records;
        lines += mi.lines;
        records += mi.records;
        off += mi.size;
    }
    free(h);
    return ok;
}

int rs_input_units_at(int dirfd, const char *name, const char *path, uint64_t unit_bytes, rs_input_unit **units,
                      size_t *n, uint64_t *size, rs_error *err)
{
    if (path == NULL)
        path = name;
    *units = NULL;
    *n = 0;
    *size = 0;
    int fd = -1;
    struct stat st;
    int named = dirfd != AT_FDCWD || strcmp(name, "-") != 0;
    if (named) {
        /* stat, not open: opening a FIFO here, and again to read it, would
         * take the writer's data (or its only open) away from the reader.
         * Only a regular file can be listed; anything else is one unit,
         * opened once, by the reader. */
        if (fstatat(dirfd, name, &st, 0) != 0)
            return rs_error_set(err, RS_EXIT_IO, "%s: cannot open: %s", path, strerror(errno));
        if (S_ISDIR(st.st_mode))
            return rs_error_set(err, RS_EXIT_IO, "%s: cannot read: is a directory", path);
    }
    if (named && S_ISREG(st.st_mode)) {
        fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return rs_error_set(err, RS_EXIT_IO, "%s: cannot open: %s", path, strerror(errno));
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
            *size = (uint64_t)st.st_size;
    }
    int ok = 0;
    if (fd >= 0 && *size > 0)
        ok = list_members(fd, *size, unit_bytes ? unit_bytes : 1, units, n);
    if (fd >= 0)
        close(fd);
    if (ok < 0) {
        free(*units);
        *units = NULL;
        return rs_error_set(err, RS_EXIT_IO, "%s: out of memory listing gzip members or zstd frames", path);
    }
    if (ok == 0) {  /* one unit: the whole input, read as a stream */
        free(*units);
        *units = malloc(sizeof **units);
        if (!*units)
            return rs_error_set(err, RS_EXIT_IO, "%s: out of memory", path);
        **units = (rs_input_unit){0, *size, 0, 0, 0, 0, 0, 0};
        *n = 1;
    }
    return 0;
}

int rs_input_units(const char *path, uint64_t unit_bytes, rs_input_unit **units, size_t *n, uint64_t *size,
                   rs_error *err)
{
    return rs_input_units_at(AT_FDCWD, path, path, unit_bytes, units, n, size, err);
}
