/* A damaged data file read member by member (ringshard/bucketdir.h,
 * rs_bucketdir_members): what repair keeps of it.
 *
 * Why member by member: every gzip member (zstd piece: an RS metadata
 * frame and one data frame) that ringshard writes is a unit of its own -
 * whole CSV records, its own CRC-32 and ISIZE (zstd: its checksum), and
 * in its RS header its size, lines and records (docs/format-data.md) - so
 * a flipped bit costs the rows of the member it falls in, and the header
 * chain says where every other member starts without inflating anything.
 * A member is kept when it decodes by itself with its codec's own checks,
 * its data is whole records (no blank line, ending with a line end) and
 * they are the lines and records its header declares; a plain file has no
 * such units, and a chain that breaks leaves the rest of the file one
 * stretch that is not read. */
#define _GNU_SOURCE
#include "ringshard/bucketdir.h"
#include "ringshard/deflate.h"
#include "ringshard/reader.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/stat.h>

/* What a member's decoded bytes hold, counted as they stream by. */
typedef struct {
    uint64_t bytes, lines, records;
    uint32_t crc;
    int quoted, line_start, cr, blank;
    char last;
} count;

static void count_bytes(count *c, const char *p, size_t n)
{
    c->crc = rs_crc32(c->crc, p, n);
    c->bytes += n;
    for (size_t k = 0; k < n; k++) {
        char ch = p[k];
        c->lines += ch == '\n' || (c->cr && ch != '\n');
        c->cr = ch == '\r';
        if (ch == '"')
            c->quoted ^= 1;
        else if (ch == '\n' && !c->quoted) {
            c->blank |= c->line_start;
            c->records++;
            c->line_start = 1;
            continue;
        }
        c->line_start = 0;
    }
    if (n)
        c->last = p[n - 1];
}

/* Member [at, at + len) of file i decoded by itself into *c: 1 when it
 * decodes (its codec's checks pass) to whole records, 0 when not. */
static int decode_member(const rs_bucketdir *bd, size_t i, uint64_t at, uint64_t len, char *buf, size_t cap,
                         count *c)
{
    rs_error e = {0};
    *c = (count){.line_start = 1};
    rs_reader *r = rs_reader_openat_range(bd->fd, bd->names[i], bd->paths[i], RS_CODEC_AUTO, at, len, &e);
    ssize_t k = r ? 1 : -1;
    while (k > 0 && (k = rs_reader_read(r, buf, cap, &e)) > 0)
        count_bytes(c, buf, (size_t)k);
    rs_reader_close(r);
    c->lines += c->cr;   /* a CR at the very end counts */
    return k == 0 && !c->quoted && !c->blank && (!c->bytes || c->last == '\n');
}

/* The member header at byte at of file i (fd: open on it): 1 with *mi,
 * 0 when there is none there (not ringshard's, or past the end). */
static int header_at(int fd, int zstd, uint64_t at, uint64_t end, rs_member_info *mi)
{
    unsigned char h[RS_MEMBER_HEADER_LEN];
    size_t want = zstd ? RS_ZSTD_META_LEN : RS_MEMBER_HEADER_LEN, need;
    if (end - at < want || pread(fd, h, want, (off_t)at) != (ssize_t)want)
        return 0;
    int ok = zstd ? rs_zstd_meta_parse(h, want, mi) : rs_member_parse(h, want, mi, &need);
    return ok && mi->size > want && mi->size <= end - at;
}

int rs_bucketdir_members(const rs_bucketdir *bd, size_t i, rs_member_verdict **v, size_t *n, uint64_t *tail)
{
    enum { CAP = 1 << 20 };
    const rs_manifest_file *f = bd->files[i];
    *v = NULL, *n = 0, *tail = 0;
    int compress = bd->m.compress;
    struct stat st;
    int fd = compress ? openat(bd->fd, bd->names[i], O_RDONLY | O_CLOEXEC) : -1;
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    uint64_t end = (uint64_t)st.st_size < f->file_bytes ? (uint64_t)st.st_size : f->file_bytes;
    char *buf = malloc(CAP);
    size_t cap = 0;
    uint64_t at = 0;
    int rc = buf ? 0 : -1;
    rs_member_info mi;
    while (rc == 0 && at < f->file_bytes && header_at(fd, compress == RS_COMPRESS_ZSTD, at, end, &mi)) {
        if (*n == cap) {
            rs_member_verdict *nv = realloc(*v, (cap = cap ? 2 * cap : 64) * sizeof *nv);
            if (!nv) {
                rc = -1;
                break;
            }
            *v = nv;
        }
        rs_member_verdict *m = &(*v)[(*n)++];
        count c;
        int ok = decode_member(bd, i, at, mi.size, buf, CAP, &c);
        *m = (rs_member_verdict){.at = at, .len = mi.size, .records = mi.records, .bytes = c.bytes, .crc = c.crc};
        m->intact = ok && c.records == mi.records && c.lines == mi.lines;
        if (ok)   /* its data is intact whatever its header says: its own count of them */
            m->records = c.records, m->counted = 1;
        at += mi.size;
    }
    *tail = at;
    free(buf);
    close(fd);
    if (rc != 0) {
        free(*v);
        *v = NULL, *n = 0;
    }
    return rc;
}
