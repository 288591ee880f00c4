/* Compaction's merge (ringshard/dataset.h, rs_bucketdir_merge): the
 * generations of a bucket directory merged into one file per node, in a
 * temporary directory beside DIR; the compact job (jobs/compact.c) and
 * repair publish it.
 *
 * Why each part is read rather than copied in the kernel: a file whose
 * bytes changed but not its size would be merged into its node's base
 * file, and every reader would then refuse that node's rows of every
 * generation. Each block read is written out and checked at once (one
 * read of each part): against the manifest's CRC-32 of the stored bytes
 * (stored_crc32) when it has one, which costs a CRC-32 at tens of GB/s;
 * otherwise (manifests written before 0.3.0) decoded, the decoded bytes'
 * CRC-32 checked against the manifest's crc32. --no-check keeps
 * copy_file_range and checks sizes only. Every merged file gets its
 * stored_crc32: the CRC-32 of the bytes written, or, for parts copied in
 * the kernel, combined from the parts' own (so that a damaged part copied
 * unchecked is still found by the next check). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "dataset/runs.h"
#include "ringshard/dataset.h"
#include "ringshard/deflate.h"
#include "ringshard/interrupt.h"
#include "ringshard/reader.h"
#include "ringshard/util.h"
#include "rs_config.h"
#include "util/filemode.h"

/* The CRC-32 of [at, end) of in into *crc: 1, or 0 when it cannot be read. */
static int crc_of_range(int in, uint64_t at, uint64_t end, uint32_t *crc)
{
    unsigned char b[1 << 16];
    *crc = 0;
    while (at < end) {
        ssize_t n = pread(in, b, end - at < sizeof b ? (size_t)(end - at) : sizeof b, (off_t)at);
        if (n <= 0)
            return 0;
        *crc = rs_crc32(*crc, b, (size_t)n);
        at += (uint64_t)n;
    }
    return 1;
}

/* The CRC-32 of what a part copies (its bytes after its first skip), from
 * the manifest's stored_crc32 of all its bytes: that of its first skip
 * bytes, read (a header line: a gzip member, a zstd frame or the line),
 * taken out; with reread (a part whose stored bytes are not what
 * stored_crc32 says, its rows intact: RS_TAKE_REREAD), read from the bytes
 * copied. 1 with *crc, 0 when the manifest has no stored_crc32 or the
 * bytes cannot be read (the merged file then gets none). */
static int rest_crc(const rs_manifest_file *f, int in, uint64_t skip, uint64_t size, int reread, uint32_t *crc)
{
    if (reread)
        return crc_of_range(in, skip, size, crc);
    uint32_t head;
    if (!f->has_stored_crc32 || !crc_of_range(in, 0, skip, &head))
        return 0;
    *crc = f->stored_crc32 ^ rs_crc32_combine(head, 0, f->file_bytes - skip);
    return 1;
}

/* File k of bd opened for reading (its size into *size), or -1 with err. */
static int open_part(const rs_bucketdir *bd, size_t k, uint64_t *size, rs_error *err)
{
    int in = openat(bd->fd, bd->names[k], O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (in < 0 || fstat(in, &st) != 0) {
        rs_error_set(err, RS_EXIT_IO, "%s: cannot read: %s", bd->paths[k], strerror(errno));
        if (in >= 0)
            close(in);
        return -1;
    }
    *size = (uint64_t)st.st_size;
    return in;
}

/* Appends file k of bd to out at *off, after checking its size against
 * its manifest (cut: a longer file, of which its first file_bytes are
 * taken); a segment's header line (its first header_bytes: a gzip member,
 * a zstd frame or the line) is left out, the base file's heads the merged
 * file. Nothing but the size is checked (--no-check, and repair, which
 * checked every file before): the bytes move in the kernel. *crc gets
 * the CRC-32 of the bytes appended, from the manifest (rest_crc), and
 * *has 0 when it has none. 0 or -1 with err. */
static int copy_part(const rs_bucketdir *bd, size_t k, uint8_t how, int out, const char *out_path, uint64_t *off,
                     uint32_t *crc, int *has, rs_error *err)
{
    uint64_t on_disk;
    int in = open_part(bd, k, &on_disk, err);
    if (in < 0)
        return -1;
    int rc = 0;
    /* a part rewritten whole (RS_TAKE_REREAD: its rows checked) is taken at its size on disk */
    uint64_t size = how == RS_TAKE_REREAD ? on_disk : bd->files[k]->file_bytes;
    if (on_disk != size && !(how != RS_TAKE_WHOLE && on_disk > size))
        rc = rs_error_set(err, RS_EXIT_VERIFY, "%s: %llu bytes on disk, the manifest says %llu (verify it)",
                          bd->paths[k], (unsigned long long)on_disk, (unsigned long long)size);
    uint64_t skip = rs_bucketdir_segment(bd, k) ? bd->files[k]->header_bytes : 0;
    if (rc == 0 && !rest_crc(bd->files[k], in, skip, size, how == RS_TAKE_REREAD, crc))
        *has = 0;
    if (rc == 0 && rs_copy_into(in, skip, size - skip, out, *off) != 0)
        rc = errno == EINTR ? rs_error_set(err, RS_EXIT_INTERRUPTED, "interrupted")
                            : rs_error_set(err, RS_EXIT_IO, "%s: cannot copy %s into it: %s", out_path, bd->paths[k],
                                           strerror(errno));
    *off += size - skip;
    close(in);
    return rc;
}

/* The members keep names of file k of bd appended to out at *off, *crc
 * getting their CRC-32 (read: repair checked them member by member). 0 or
 * -1 with err. */
static int copy_members(const rs_bucketdir *bd, size_t k, const rs_compact_keep *keep, int out, const char *out_path,
                        uint64_t *off, uint32_t *crc, rs_error *err)
{
    uint64_t on_disk;
    int in = open_part(bd, k, &on_disk, err), rc = 0;
    if (in < 0)
        return -1;
    *crc = 0;
    for (size_t q = 0; rc == 0 && q < keep->n; q++) {
        uint32_t c;
        if (keep->at[q] + keep->len[q] > on_disk || !crc_of_range(in, keep->at[q], keep->at[q] + keep->len[q], &c))
            rc = rs_error_set(err, RS_EXIT_IO, "%s: cannot read bytes %llu to %llu: %s", bd->paths[k],
                              (unsigned long long)keep->at[q], (unsigned long long)(keep->at[q] + keep->len[q]),
                              keep->at[q] + keep->len[q] > on_disk ? "the file is shorter" : strerror(errno));
        else if (rs_copy_into(in, keep->at[q], keep->len[q], out, *off) != 0)
            rc = errno == EINTR ? rs_error_set(err, RS_EXIT_INTERRUPTED, "interrupted")
                                : rs_error_set(err, RS_EXIT_IO, "%s: cannot copy %s into it: %s", out_path,
                                               bd->paths[k], strerror(errno));
        if (rc == 0)
            *crc = rs_crc32_combine(*crc, c, keep->len[q]);
        *off += keep->len[q];
    }
    close(in);
    return rc;
}

/* A checked copy's buffer of decoded bytes (only summed), one a thread;
 * the reader's block of stored bytes (RS_READER_BLOCK, 1 MiB) is what is
 * written out. */
#define CHECK_OUT ((size_t)1 << 20)

/* The pieces of a compressed part (deflate.h), walked as its stored bytes
 * pass: each gzip member's header, or zstd frame's metadata frame, must be
 * the one ringshard writes and say where the next one starts, the last
 * one ending where the part ends; the lines and records they say, summed,
 * are checked against the decoded bytes (check_data). What no decoder
 * reads (a header's counts, its MTIME) is checked so too. */
typedef struct {
    size_t len;              /* a piece's header: 44 (gzip) or 40 (zstd) bytes; 0: plain */
    uint64_t pos;            /* stored bytes seen */
    uint64_t next;           /* where the next piece starts */
    unsigned char h[RS_MEMBER_HEADER_LEN];
    size_t hn;               /* bytes of its header gathered */
    uint64_t lines, records; /* what the headers say, summed */
    uint64_t bad;            /* UINT64_MAX, or where a header is not ringshard's */
} walk;

/* The bytes before size, lines and records of each header, as
 * deflate.c and zstdout.c write them. */
static const unsigned char gzip_fixed[20] = {0x1f, 0x8b, 8, 4, 0, 0, 0, 0, 0, 3, 4 + RS_MEMBER_PAYLOAD, 0,
                                             RS_MEMBER_SI1, RS_MEMBER_SI2, RS_MEMBER_PAYLOAD, 0,
                                             RS_MEMBER_VERSION, RS_MEMBER_BOUNDARY, 0, 0};
static const unsigned char zstd_fixed[16] = {0x52, 0x2a, 0x4d, 0x18, RS_ZSTD_META_LEN - 8, 0, 0, 0,
                                             RS_MEMBER_SI1, RS_MEMBER_SI2, RS_MEMBER_VERSION, RS_MEMBER_BOUNDARY,
                                             0, 0, 0, 0};

static void walk_feed(walk *w, const unsigned char *p, size_t n)
{
    uint64_t end = w->pos + n;
    while (w->len && w->bad == UINT64_MAX && w->next + w->hn < end) {
        size_t from = (size_t)(w->next + w->hn - w->pos), k = w->len - w->hn;
        k = k < n - from ? k : n - from;
        memcpy(w->h + w->hn, p + from, k);
        if ((w->hn += k) < w->len)
            break;
        rs_member_info mi;
        size_t need;
        int gz = w->len == RS_MEMBER_HEADER_LEN;
        if (memcmp(w->h, gz ? gzip_fixed : zstd_fixed, gz ? sizeof gzip_fixed : sizeof zstd_fixed) != 0 ||
            !(gz ? rs_member_parse(w->h, w->len, &mi, &need) : rs_zstd_meta_parse(w->h, w->len, &mi)) ||
            mi.size <= w->len || mi.size > UINT64_MAX - w->next) {
            w->bad = w->next;
            break;
        }
        w->lines += mi.lines;
        w->records += mi.records;
        w->next += mi.size;
        w->hn = 0;
    }
    w->pos = end;
}

/* Where a checked copy writes: the reader hands it every block it reads. */
typedef struct {
    int fd;
    const char *path;
    uint64_t off;
    uint32_t crc;            /* of the bytes written: the merged file's stored_crc32 */
    walk w;                  /* the part's pieces */
} sink;

static int sink_write(void *ctx, const void *p, size_t n, rs_error *err)
{
    sink *s = ctx;
    for (size_t w = 0; w < n;) {
        ssize_t k = pwrite(s->fd, (const char *)p + w, n - w, (off_t)(s->off + w));
        if (k < 0 && errno == EINTR && !rs_interrupt_pending())
            continue;
        if (k < 0)
            return errno == EINTR ? rs_error_set(err, RS_EXIT_INTERRUPTED, "interrupted")
                                  : rs_error_set(err, RS_EXIT_IO, "%s: write failed: %s", s->path, strerror(errno));
        w += (size_t)k;
    }
    s->off += n;
    s->crc = rs_crc32(s->crc, p, n);
    walk_feed(&s->w, p, n);
    return 0;
}

/* The decoded length, CRC-32 and line ends where a read of a part ended:
 * where its header may end. A base file's header is a gzip member or zstd
 * frame of its own (docs/format.md), which a read never runs past, or the
 * file's first file_bytes - bytes bytes when plain, where a read is made
 * to stop; the first few reads hold it. */
typedef struct {
    uint64_t len, lines;
    uint32_t crc;
} mark;
#define HEAD_MARKS 64

/* Its pieces' headers against what was decoded: 0, or -1 with err. */
static int check_pieces(const rs_bucketdir *bd, size_t k, uint64_t skip, const walk *w, const mark *all,
                        uint64_t head_records, rs_error *err)
{
    const char *what = w->len == RS_MEMBER_HEADER_LEN ? "gzip member" : "zstd metadata frame";
    const char *dir = bd->path;
    if (!w->len)
        return 0;
    if (w->bad != UINT64_MAX)
        return rs_error_set(err, RS_EXIT_DATA, "%s: the %s header at byte offset %llu is not one ringshard writes "
                            "(damaged): compact left %s as it was", bd->paths[k], what,
                            (unsigned long long)(skip + w->bad), dir);
    if (w->next != w->pos || w->hn)
        return rs_error_set(err, RS_EXIT_DATA, "%s: its %s headers say its pieces end at byte offset %llu, the file "
                            "at %llu (damaged): compact left %s as it was", bd->paths[k], what,
                            (unsigned long long)(skip + w->next), (unsigned long long)(skip + w->pos), dir);
    if (w->lines != all->lines || w->records != bd->files[k]->rows + head_records)
        return rs_error_set(err, RS_EXIT_DATA, "%s: its %s headers say %llu lines and %llu records, it holds %llu "
                            "lines and the manifest says %llu records (damaged): compact left %s as it was",
                            bd->paths[k], what, (unsigned long long)w->lines, (unsigned long long)w->records,
                            (unsigned long long)all->lines, (unsigned long long)(bd->files[k]->rows + head_records),
                            dir);
    return 0;
}

/* Part k's data (what follows its header: the last f->bytes bytes of the
 * all->len decoded, which must start where a read ended; for a segment,
 * whose header is not read, at 0) against its manifest: bytes and CRC-32;
 * then its pieces' headers (check_pieces). A base file's header line is
 * checked against the manifest's too (when it has one and the files are
 * not keys-only), so that no byte copied goes unchecked. 0, or -1 with err
 * (RS_EXIT_DATA). */
static int check_data(const rs_bucketdir *bd, size_t k, uint64_t skip, const walk *w, const mark *marks, size_t nm,
                      const mark *all, rs_error *err)
{
    const rs_manifest_file *f = bd->files[k];
    const rs_manifest *m = &bd->m;
    const mark *head = NULL;
    for (size_t q = 0; q < (rs_bucketdir_segment(bd, k) ? 1 : nm) && all->len >= f->bytes; q++)
        if (marks[q].len == all->len - f->bytes)
            head = &marks[q];
    if (!head)
        return rs_error_set(err, RS_EXIT_DATA, "%s: length mismatch: it decodes to %llu bytes, the manifest says "
                            "%llu data bytes after its header: compact left %s as it was (`ringshard verify %s` "
                            "lists what differs)", bd->paths[k], (unsigned long long)all->len,
                            (unsigned long long)f->bytes, bd->path, bd->path);
    uint32_t data = all->crc ^ rs_crc32_combine(head->crc, 0, f->bytes);
    if (data != f->crc32)
        return rs_error_set(err, RS_EXIT_DATA, "%s: CRC-32 mismatch: its %llu data bytes have CRC-32 %08x, the "
                            "manifest says %08x: compact left %s as it was (`ringshard verify %s` lists what "
                            "differs)", bd->paths[k], (unsigned long long)f->bytes, data, f->crc32, bd->path,
                            bd->path);
    if (check_pieces(bd, k, skip, w, all, head->len > 0, err) != 0)
        return -1;
    if (rs_bucketdir_segment(bd, k) || !m->header || !m->header_line || m->keys_only)
        return 0;
    size_t hl = strlen(m->header_line);
    if (head->len != hl + 1 || head->crc != rs_crc32(rs_crc32(0, m->header_line, hl), "\n", 1))
        return rs_error_set(err, RS_EXIT_DATA, "%s: header mismatch: its first %llu decoded bytes are not the "
                            "manifest's header line and LF (%zu bytes): compact left %s as it was", bd->paths[k],
                            (unsigned long long)head->len, hl + 1, bd->path);
    return 0;
}

/* Part k of bd appended to s as copy_part appends it, read once: each
 * block of stored bytes is written out as it is read, its pieces' headers
 * walked, and decoded (every gzip member's and zstd frame's own checks
 * included); the decoded bytes are then checked against the manifest
 * (check_data). buf: CHECK_OUT bytes. 0 or -1 with err: RS_EXIT_DATA for
 * a damaged file, naming it. */
static int check_part(const rs_bucketdir *bd, size_t k, sink *s, unsigned char *buf, rs_error *err)
{
    const rs_manifest_file *f = bd->files[k];
    int seg = rs_bucketdir_segment(bd, k);
    uint64_t skip = seg ? f->header_bytes : 0;
    if (skip > f->file_bytes)
        return rs_error_set(err, RS_EXIT_DATA, "%s: header_bytes %llu, more than its %llu bytes", bd->paths[k],
                            (unsigned long long)skip, (unsigned long long)f->file_bytes);
    rs_reader *r = rs_reader_openat_range(bd->fd, bd->names[k], bd->paths[k], RS_CODEC_AUTO, skip,
                                          f->file_bytes - skip, err);
    if (!r)
        return -1;
    if (rs_reader_size(r) != f->file_bytes) {
        rs_error_set(err, RS_EXIT_VERIFY, "%s: %llu bytes on disk, the manifest says %llu (verify it)",
                     bd->paths[k], (unsigned long long)rs_reader_size(r), (unsigned long long)f->file_bytes);
        rs_reader_close(r);
        return -1;
    }
    rs_reader_expect_file_end(r);
    rs_reader_tee(r, sink_write, s);
    int compress = bd->m.compress;
    s->w = (walk){compress == RS_COMPRESS_GZIP ? RS_MEMBER_HEADER_LEN : compress ? RS_ZSTD_META_LEN : 0,
                  .bad = UINT64_MAX};
    /* a plain base file's header: its first file_bytes - bytes bytes */
    uint64_t head = !seg && !compress && f->file_bytes > f->bytes ? f->file_bytes - f->bytes : 0;
    mark marks[HEAD_MARKS] = {{0, 0, 0}}, all = {0, 0, 0};
    size_t nm = 1;
    ssize_t n;
    int cr = 0;  /* the last chunk ended in CR: an LF after it ends the same line */
    while ((n = rs_reader_read(r, buf, all.len < head && head - all.len < CHECK_OUT ? head - all.len : CHECK_OUT,
                               err)) > 0) {
        all.crc = rs_crc32(all.crc, buf, (size_t)n);
        all.len += (uint64_t)n;
        if (compress)
            all.lines += rs_count_line_ends(buf, (size_t)n) - (cr && buf[0] == '\n');
        cr = buf[n - 1] == '\r';
        if (nm < HEAD_MARKS)
            marks[nm++] = all;
        if (rs_interrupt_pending()) {
            n = rs_error_set(err, RS_EXIT_INTERRUPTED, "interrupted");
            break;
        }
    }
    rs_reader_close(r);
    return n < 0 ? -1 : check_data(bd, k, skip, &s->w, marks, nm, &all, err);
}

/* Part k of bd appended to s as copy_part appends it, read once, when its
 * manifest has the CRC-32 of its stored bytes: each block is written out
 * as it is read, and every byte of the file (its header, which is not
 * copied, included) checked against stored_crc32. Nothing is decoded:
 * bytes that are the ones written are what the writer checked. buf:
 * CHECK_OUT bytes. 0 or -1 with err: RS_EXIT_DATA for a damaged file,
 * naming it. */
static int check_stored(const rs_bucketdir *bd, size_t k, sink *s, unsigned char *buf, rs_error *err)
{
    const rs_manifest_file *f = bd->files[k];
    uint64_t skip = rs_bucketdir_segment(bd, k) ? f->header_bytes : 0, at = 0, on_disk;
    int in = open_part(bd, k, &on_disk, err);
    if (in < 0)
        return -1;
    if (on_disk != f->file_bytes) {
        rs_error_set(err, RS_EXIT_VERIFY, "%s: %llu bytes on disk, the manifest says %llu (verify it)", bd->paths[k],
                     (unsigned long long)on_disk, (unsigned long long)f->file_bytes);
        close(in);
        return -1;
    }
    posix_fadvise(in, 0, 0, POSIX_FADV_SEQUENTIAL);
    s->w = (walk){0, .bad = UINT64_MAX};   /* the CRC-32 covers the pieces' headers */
    uint32_t head = 0, before = s->crc;
    s->crc = 0;
    int rc = 0;
    while (rc == 0 && at < f->file_bytes) {
        uint64_t want = at < skip ? skip - at : f->file_bytes - at;
        ssize_t n = pread(in, buf, want < CHECK_OUT ? (size_t)want : CHECK_OUT, (off_t)at);
        if (n < 0 && errno == EINTR && !rs_interrupt_pending())
            continue;
        if (n <= 0)
            rc = n < 0 && errno == EINTR ? rs_error_set(err, RS_EXIT_INTERRUPTED, "interrupted")
                 : rs_error_set(err, RS_EXIT_IO, "%s: cannot read: %s", bd->paths[k],
                                n < 0 ? strerror(errno) : "it ends before its manifest's file_bytes");
        else if (at < skip)   /* a segment's header line: checked, not copied */
            head = rs_crc32(head, buf, (size_t)n);
        else
            rc = sink_write(s, buf, (size_t)n, err);
        at += n > 0 ? (uint64_t)n : 0;
        if (rc == 0 && rs_interrupt_pending())
            rc = rs_error_set(err, RS_EXIT_INTERRUPTED, "interrupted");
    }
    close(in);
    uint32_t rest = s->crc, all = rs_crc32_combine(head, rest, f->file_bytes - skip);
    s->crc = rs_crc32_combine(before, rest, f->file_bytes - skip);
    if (rc == 0 && all != f->stored_crc32)
        rc = rs_error_set(err, RS_EXIT_DATA, "%s: CRC-32 mismatch: its %llu stored bytes have CRC-32 %08x, the "
                          "manifest's stored_crc32 says %08x: compact left %s as it was (`ringshard verify %s` "
                          "lists what differs)", bd->paths[k], (unsigned long long)f->file_bytes, all,
                          f->stored_crc32, bd->path, bd->path);
    return rc;
}

/* What merging the nodes shares: the inputs, each node's files and
 * entry, and which node failed first. */
typedef struct {
    const rs_bucketdir *bd;
    const rs_outdir *od;
    int check;               /* read, check and write each part; 0: copy_file_range */
    const rs_compact_take *take; /* the parts taken (repair); NULL: every part whole */
    int indexed, by_row, drop_indexes;
    char **inames, **ipaths; /* [nfiles] each file's key index, with indexed */
    uint64_t *isizes;
    uint32_t *icrcs;         /* and its CRC-32, as its manifest lists it */
    uint64_t memory;         /* a thread's share of --memory */
    size_t *start;           /* [nodes + 1] node i's files: start[i] .. start[i + 1] - 1 */
    rs_manifest_file *files; /* [nodes] the merged files' entries */
    size_t next;             /* the next node to merge (atomic) */
    size_t failed;           /* the first node that failed, SIZE_MAX: none (atomic) */
} merge_ctx;

/* Which inputs' rows node i's merged file holds (its parts taken, in
 * order), into f->runs when they are of several inputs: what lets a
 * later repair keep a damaged member's neighbours (a file of one input's
 * rows needs no record: its manifest's inputs say whose they are). None
 * when a part's are not known. 0, or -1 out of memory. */
static int merge_runs(const merge_ctx *c, size_t i, rs_manifest_file *f)
{
    const rs_bucketdir *bd = c->bd;
    rs_manifest_run *all = NULL;
    size_t n = 0, cap = 0;
    int known = 1, rc = 0;
    for (size_t k = c->start[i]; known && rc == 0 && k < c->start[i + 1]; k++) {
        uint8_t how = c->take && c->take->take ? c->take->take[k] : RS_TAKE_WHOLE;
        if (how == RS_TAKE_NONE || !bd->files[k]->rows)
            continue;
        rs_manifest_run *v;
        size_t nv;
        if ((rc = rs_bucketdir_file_runs(bd, k, &v, &nv)) != 0)
            break;
        const rs_compact_keep *kp = how == RS_TAKE_MEMBERS ? &c->take->keep[k] : NULL;
        if ((known = nv > 0))
            rc = kp ? rs_runs_without(v, nv, kp->lost, kp->nlost, &all, &n, &cap)
                    : rs_runs_select(v, nv, 0, UINT64_MAX, &all, &n, &cap);
        free(v);
    }
    if (rc == 0 && known)
        rs_manifest_file_take_runs(f, all, n);
    else
        free(all);
    return rc;
}

/* Node i's files, one after the other, into od's file of the same name;
 * c->files[i] gets the merged file's manifest entry. buf: a checked
 * copy's CHECK_OUT bytes. */
static int merge_node(const merge_ctx *c, size_t i, unsigned char *buf, rs_error *err)
{
    const rs_bucketdir *bd = c->bd;
    rs_manifest_file *f = &c->files[i];
    *f = bd->m.files[i];
    f->rows = f->bytes = 0;
    f->crc32 = 0;
    f->index = NULL;
    f->runs = NULL, f->nruns = 0, f->runs_text = NULL;
    f->has_stored_crc32 = 1;   /* 0 once a part copied in the kernel has none in its manifest */
    char *path = rs_outdir_path(c->od, f->file);
    sink s = {.fd = path ? rs_file_create(path, O_WRONLY | O_EXCL, RS_FILE_USER) : -1, .path = path};
    if (s.fd < 0) {
        rs_error_set(err, RS_EXIT_IO, "%s: cannot create: %s", path ? path : c->od->tmp, strerror(errno));
        free(path);
        return -1;
    }
    int rc = 0;
    const rs_compact_take *take = c->take;
    size_t b0 = c->start[i];   /* its base file left out, or its header member */
    if (take && take->take && take->head_len &&
        (!take->take[b0] || (take->take[b0] == RS_TAKE_MEMBERS && take->keep[b0].head_lost))) {
        if (pwrite(s.fd, take->head, take->head_len, 0) != (ssize_t)take->head_len)
            rc = rs_error_set(err, RS_EXIT_IO, "%s: write failed: %s", path, strerror(errno));
        s.off = take->head_len;
        s.crc = rs_crc32(0, take->head, take->head_len);
    }
    for (size_t k = c->start[i]; rc == 0 && k < c->start[i + 1]; k++) {
        const rs_manifest_file *part = bd->files[k];
        uint8_t how = take && take->take ? take->take[k] : RS_TAKE_WHOLE;
        if (how == RS_TAKE_NONE)
            continue;
        uint64_t at = s.off;
        uint32_t crc = 0;
        if (how == RS_TAKE_MEMBERS) {
            const rs_compact_keep *kp = &take->keep[k];
            if ((rc = copy_members(bd, k, kp, s.fd, path, &s.off, &crc, err)) == 0)
                s.crc = rs_crc32_combine(s.crc, crc, s.off - at);
            f->crc32 = rs_crc32_combine(f->crc32, kp->crc32, kp->bytes);
            f->rows += kp->rows;
            f->bytes += kp->bytes;
            continue;
        }
        if (c->check && how == RS_TAKE_WHOLE)
            rc = part->has_stored_crc32 ? check_stored(bd, k, &s, buf, err) : check_part(bd, k, &s, buf, err);
        else if ((rc = copy_part(bd, k, how, s.fd, path, &s.off, &crc, &f->has_stored_crc32, err)) == 0)
            s.crc = rs_crc32_combine(s.crc, crc, s.off - at);
        f->crc32 = rs_crc32_combine(f->crc32, part->crc32, part->bytes);
        f->rows += part->rows;
        f->bytes += part->bytes;
    }
    f->file_bytes = s.off;
    f->stored_crc32 = f->has_stored_crc32 ? s.crc : 0;
    if (rc == 0 && merge_runs(c, i, f) != 0)
        rc = rs_error_set(err, RS_EXIT_IO, "out of memory");
    if (close(s.fd) != 0 && rc == 0)
        rc = rs_error_set(err, RS_EXIT_IO, "%s: write failed: %s", path, strerror(errno));
    free(path);
    return rc;
}

/* Every file's key index, when every file has one (1; 0 when one lacks
 * it: the merged files get none, and dedup --append builds them), with
 * the mode they share; paths[k]: "DIR/<name>", for messages. -1 with err. */
static int find_indexes(const rs_bucketdir *bd, char **names, char **paths, uint64_t *sizes, uint32_t *crcs,
                        int *by_row, rs_error *err)
{
    int mode = -1;
    for (size_t k = 0; k < bd->nfiles; k++) {
        int row, r = rs_bucketdir_index_of(bd, k, &names[k], &sizes[k], &crcs[k], &row);
        if (r > 0 && asprintf(&paths[k], "%s/%s", bd->path, names[k]) < 0) {
            paths[k] = NULL;
            r = -1;
        }
        if (r < 0)
            return rs_error_set(err, RS_EXIT_IO, "out of memory");
        if (r == 0 || (mode >= 0 && row != mode))
            return 0;
        mode = row;
    }
    *by_row = mode > 0;
    return bd->nfiles > 0;
}

/* Node i's key indexes against the CRC-32s their manifests list, each
 * read whole: the merge reads their chunks (and checks each), not their
 * filters and range tables, and a damaged one is refused as a damaged
 * data file is, not dropped without a word. 0, or -1 with err. */
static int check_indexes(const merge_ctx *c, size_t i, rs_error *err)
{
    for (size_t k = c->start[i]; k < c->start[i + 1]; k++) {
        uint32_t crc;
        if (rs_crc32_fileat(c->bd->fd, c->inames[k], &crc) != 0)
            return rs_error_set(err, RS_EXIT_IO, "%s: cannot read: %s", c->ipaths[k], strerror(errno));
        if (crc != c->icrcs[k])
            return rs_error_set(err, RS_EXIT_DATA, "%s: CRC-32 mismatch: the key index's bytes have CRC-32 %08x, "
                                "the manifest says %08x: compact left %s as it was (`ringshard verify %s` lists "
                                "what differs)", c->ipaths[k], crc, c->icrcs[k], c->bd->path, c->bd->path);
    }
    return 0;
}

/* Node i's indexes (files [k0, k) of bd) merged into the index of
 * its merged file f, named after its node (rs_name_keyidx). */
static int merge_index(const merge_ctx *c, size_t i, rs_error *err)
{
    const rs_bucketdir *bd = c->bd;
    rs_manifest_file *f = &c->files[i];
    size_t k0 = c->start[i], n = c->start[i + 1] - k0;
    if (c->check && check_indexes(c, i, err) != 0)
        return -1;
    rs_keyidx_of *want = calloc(n + 1, sizeof *want);
    char *path = NULL;
    int rc = -1;
    if (!want || !(f->index = rs_name_keyidx(f->node)) || !(path = rs_outdir_path(c->od, f->index))) {
        rs_error_set(err, RS_EXIT_IO, "out of memory");
        goto out;
    }
    for (size_t q = 0; q < n; q++) {
        const rs_manifest_file *part = bd->files[k0 + q];
        want[q] = (rs_keyidx_of){part->rows, part->bytes, part->crc32, c->by_row ? RS_KEYIDX_BY_ROW : 0};
    }
    rs_keyidx_of of = {f->rows, f->bytes, f->crc32, c->by_row ? RS_KEYIDX_BY_ROW : 0};
    rc = rs_keyidx_merge(path, bd->fd, (const char *const *)c->inames + k0, (const char *const *)c->ipaths + k0,
                         want, c->isizes + k0, n, &of, c->memory, &f->index_bytes, &f->index_crc32, err);
out:
    free(want);
    free(path);
    return rc;
}

/* Whether a file of node i is left out or taken in part (repair): its
 * merged file then gets no key index (the indexes of the parts kept would
 * hold the keys of what is left out too: a lost file's, or a second entry
 * of a file listed twice); the next dedup --append builds it. */
static int part_lost(const merge_ctx *c, size_t i)
{
    if (!c->take || !c->take->take)
        return 0;
    for (size_t k = c->start[i]; k < c->start[i + 1]; k++)
        if (c->take->take[k] == RS_TAKE_NONE || c->take->take[k] == RS_TAKE_MEMBERS)
            return 1;
    return 0;
}

/* One thread's share of the merge: the next node not yet taken, while
 * none before it failed. Nodes are taken in order, so the first node that
 * fails is the same whatever the threads: *err gets this thread's failure
 * and *at its node (SIZE_MAX: none). */
static void merge_nodes(merge_ctx *c, rs_error *err, size_t *at)
{
    unsigned char *buf = c->check ? malloc(CHECK_OUT) : NULL;
    *at = SIZE_MAX;
    if (c->check && !buf) {
        rs_error_set(err, RS_EXIT_IO, "out of memory");
        *at = 0;
    }
    while (!err->code) {
        size_t i = __atomic_fetch_add(&c->next, 1, __ATOMIC_RELAXED);
        if (i >= c->bd->m.nfiles || i > __atomic_load_n(&c->failed, __ATOMIC_RELAXED))
            break;
        if (merge_node(c, i, buf, err) == 0 && c->indexed > 0 && !c->drop_indexes && !part_lost(c, i))
            merge_index(c, i, err);
        if (!err->code && rs_interrupt_pending())
            rs_error_set(err, RS_EXIT_INTERRUPTED, "interrupted");
        if (err->code) {
            *at = i;
            for (size_t f = __atomic_load_n(&c->failed, __ATOMIC_RELAXED);
                 i < f && !__atomic_compare_exchange_n(&c->failed, &f, i, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);)
                ;
        }
    }
    free(buf);
}

/* The compacted base's manifest: DIR's base with the merged files, every
 * generation's inputs (with the generation that ingested each; with
 * take->record_lost, their lost records as take gives them) and totals
 * (of the rows taken). */
static int write_manifest(const rs_bucketdir *bd, rs_manifest_file *files, const char *dedup,
                          const rs_compact_take *take, const rs_outdir *od, rs_error *err)
{
    rs_manifest m = bd->m;  /* shallow: strings stay the base's */
    m.dedup = (char *)dedup;
    size_t n;
    rs_manifest_input *in;
    if (rs_bucketdir_input_records(bd, 0, &in, &n) != 0)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    for (size_t i = 0; take && take->record_lost && take->lost && i < n; i++) {
        in[i].lost = take->lost[i], in[i].nlost = take->nlost[i];
        in[i].lost_rows = take->lost_rows[i], in[i].nlost_rows = take->nlost_rows[i];
    }
    m.schema = 2;
    m.generation = bd->last_gen;
    m.tool_version = RS_VERSION;
    m.inputs = in;
    m.ninputs = n;
    m.files = files;
    m.rows = bd->rows, m.bytes = bd->bytes, m.rejected = bd->rejected;
    for (size_t i = 0; take && take->take && i < bd->nfiles; i++)
        if (take->take[i] == RS_TAKE_NONE)
            m.rows -= bd->files[i]->rows, m.bytes -= bd->files[i]->bytes;
        else if (take->take[i] == RS_TAKE_MEMBERS)
            m.rows -= bd->files[i]->rows - take->keep[i].rows, m.bytes -= bd->files[i]->bytes - take->keep[i].bytes;
    int rc = rs_outdir_manifest(od, &m, err);
    free(in);
    return rc;
}

/* The threads that merge nodes: one a CPU (OMP_NUM_THREADS), no more than
 * nodes, and each with at least the 2 MiB a key index merge needs of the
 * memory (the bound is on them all). */
static int merge_threads(size_t nodes, uint64_t memory, int indexed)
{
    int t = omp_get_max_threads();
    if (indexed && (uint64_t)t > memory / (2u << 20))
        t = (int)(memory / (2u << 20));
    if ((size_t)t > nodes)
        t = (int)nodes;
    return t < 1 ? 1 : t;
}

int rs_bucketdir_merge(const rs_bucketdir *bd, const rs_outdir *od, uint64_t memory, int drop_indexes, int check,
                       const rs_compact_take *take, uint64_t *file_bytes, rs_error *err)
{
    size_t nodes = bd->m.nfiles;
    merge_ctx c = {.bd = bd, .od = od, .check = check, .take = take, .drop_indexes = drop_indexes,
                   .failed = SIZE_MAX};
    c.files = calloc(nodes + 1, sizeof *c.files);
    c.inames = calloc(bd->nfiles + 1, sizeof *c.inames);
    c.ipaths = calloc(bd->nfiles + 1, sizeof *c.ipaths);
    c.isizes = calloc(bd->nfiles + 1, sizeof *c.isizes);
    c.icrcs = calloc(bd->nfiles + 1, sizeof *c.icrcs);
    c.start = calloc(nodes + 2, sizeof *c.start);
    if (!c.files || !c.inames || !c.ipaths || !c.isizes || !c.icrcs || !c.start)
        rs_error_set(err, RS_EXIT_IO, "out of memory");
    else
        c.indexed = find_indexes(bd, c.inames, c.ipaths, c.isizes, c.icrcs, &c.by_row, err);
    for (size_t k = 0, i = 0; c.start && i <= nodes; i++) {  /* the files are node by node */
        c.start[i] = k;
        while (k < bd->nfiles && bd->file_base[k] == i)
            k++;
    }
    int T = merge_threads(nodes, memory ? memory : RS_KEYIDX_WRITER_MEMORY, c.indexed > 0 && !drop_indexes);
    c.memory = (memory ? memory : RS_KEYIDX_WRITER_MEMORY) / (uint64_t)T;
    rs_error *errs = err->code ? NULL : calloc((size_t)T, sizeof *errs);
    size_t *at = errs ? calloc((size_t)T, sizeof *at) : NULL;
    if (!err->code && !at)
        rs_error_set(err, RS_EXIT_IO, "out of memory");
    if (!err->code) {
        if (T > 1) {
#pragma omp parallel num_threads(T)
            merge_nodes(&c, &errs[omp_get_thread_num()], &at[omp_get_thread_num()]);
        } else
            merge_nodes(&c, &errs[0], &at[0]);
        int first = -1;
        for (int t = 0; t < T; t++)
            if (at[t] != SIZE_MAX && (first < 0 || at[t] < at[first]))
                first = t;
        if (first >= 0)
            *err = errs[first];
    }
    for (size_t i = 0; !err->code && i < nodes; i++)
        *file_bytes += c.files[i].file_bytes;
    if (!err->code)
        write_manifest(bd, c.files, c.indexed > 0 ? (c.by_row ? "row" : "first") : NULL, take, od, err);
    for (size_t i = 0; c.files && i < nodes; i++)
        free(c.files[i].index), free(c.files[i].runs);
    rs_free_strings(c.inames, bd->nfiles);
    rs_free_strings(c.ipaths, bd->nfiles);
    free(c.isizes);
    free(c.icrcs);
    free(c.files);
    free(c.start);
    free(errs);
    free(at);
    return err->code ? -1 : 0;
}

