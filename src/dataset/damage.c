/* What "damaged" means for a file of a bucket directory, in one place
 * (ringshard/bucketdir.h): what a reader found in a file against its
 * manifest entry (rs_bucketdir_check_found, which every reader of the
 * files and the whole-directory check below share), and that check, which
 * reads every data file and key index the manifests list
 * (rs_bucketdir_check_all: what repair keeps and what it cannot).
 *
 * Why the check decodes every file instead of trusting its size: a
 * flipped bit leaves the size as it was, and only the data's CRC-32 (and
 * the codec's own checks: a gzip member's CRC-32 and ISIZE, a zstd frame's
 * checksum) tells it; and why it reads only a file's first file_bytes when
 * the file is longer: bytes appended after ringshard's last member (a
 * copy that went wrong, a stray write) are not part of what its manifest
 * describes, and the file is whole without them. Why the stored bytes are
 * checked too (stored_crc32), after the rows: compact trusts that CRC-32
 * alone, and it covers bytes no decoder reads (a gzip member header's
 * MTIME); a file whose rows are intact but whose stored bytes changed is
 * told apart (RS_FILE_ALTERED: repair keeps its rows), so that verify,
 * repair and compact call the same files damaged. */
#define _GNU_SOURCE
#include "ringshard/bucketdir.h"
#include "dataset/bucketdir_impl.h"
#include "ringshard/buf.h"
#include "ringshard/deflate.h"
#include "ringshard/interrupt.h"
#include "ringshard/reader.h"
#include "ringshard/text.h"
#include "ringshard/util.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int rs_bucketdir_index_of(const rs_bucketdir *bd, size_t i, char **name, uint64_t *size, uint32_t *crc32,
                          int *by_row)
{
    const rs_manifest_file *f = bd->files[i];
    size_t slot = bd->file_slot[i];
    char dn[16];
    *name = NULL;
    if (f->index) {
        const rs_manifest *own = slot == SIZE_MAX ? &bd->m : &bd->gens[slot];
        if (slot != SIZE_MAX)
            rs_gen_dir_name(bd->gen_dir[slot], dn);
        if (asprintf(name, "%s%s%s", slot != SIZE_MAX ? dn : "", slot != SIZE_MAX ? "/" : "", f->index) < 0)
            return -1;
        *size = f->index_bytes, *crc32 = f->index_crc32;
        *by_row = own->dedup && !strcmp(own->dedup, "row");
        return 1;
    }
    const rs_manifest_index *mi = bd->file_ix[i];
    if (!mi)
        return 0;
    size_t g = bd->file_ix_slot[i];
    rs_gen_dir_name(bd->gen_dir[g], dn);
    if (asprintf(name, "%s/%s", dn, mi->index) < 0)
        return -1;
    *size = mi->index_bytes, *crc32 = mi->index_crc32;
    *by_row = bd->gens[g].dedup && !strcmp(bd->gens[g].dedup, "row");
    return 1;
}

char *rs_bucketdir_manifest_of(const rs_bucketdir *bd, size_t i)
{
    char *p = NULL, dname[16];
    if (bd->file_slot[i] == SIZE_MAX)
        return asprintf(&p, "%s/manifest.json", bd->path) < 0 ? NULL : p;
    rs_gen_dir_name(bd->gen_dir[bd->file_slot[i]], dname);
    return asprintf(&p, "%s/%s/manifest.json", bd->path, dname) < 0 ? NULL : p;
}

void rs_bucketdir_vouched_error(rs_error *err, const char *manifest)
{
    if (err->code != RS_EXIT_DATA)
        return;
    char tail[PATH_MAX + 40];
    snprintf(tail, sizeof tail, " (the file does not match %s)", manifest);
    rs_error_restate(err, RS_EXIT_VERIFY, "", tail);
}

static int differs(const rs_bucketdir *bd, size_t i, const char *what, uint64_t found, uint64_t said,
                   rs_error *err)
{
    char *mp = rs_bucketdir_manifest_of(bd, i);
    rs_error_set(err, RS_EXIT_VERIFY, "%s: %llu %s, the manifest says %llu (the file does not match %s)",
                 bd->paths[i], (unsigned long long)found, what, (unsigned long long)said, mp ? mp : bd->path);
    free(mp);
    return -1;
}

int rs_bucketdir_check_found(const rs_bucketdir *bd, size_t i, const rs_bucketdir_found *found, int check_crc,
                             const char *header, rs_error *err)
{
    const rs_manifest_file *f = bd->files[i];
    if (found->rows != f->rows)
        return differs(bd, i, "rows", found->rows, f->rows, err);
    if (found->bytes != f->bytes)
        return differs(bd, i, "data bytes", found->bytes, f->bytes, err);
    if (check_crc && found->crc != f->crc32) {
        char *mp = rs_bucketdir_manifest_of(bd, i);
        rs_error_set(err, RS_EXIT_VERIFY,
                     "%s: CRC-32 of the data %08x, the manifest says %08x (the file does not match %s)",
                     bd->paths[i], found->crc, f->crc32, mp ? mp : bd->path);
        free(mp);
        return -1;
    }
    if (found->size != f->file_bytes)
        return differs(bd, i, "bytes on disk", found->size, f->file_bytes, err);
    if (found->blank_lines)
        return differs(bd, i, "blank lines (ringshard writes none)", found->blank_lines, 0, err);
    const char *want = bd->m.header && !bd->m.keys_only && !bd->headerless[i] ? bd->m.header_line : NULL;
    if (header && want && found->rows + found->blank_lines > 0 && strcmp(header, want) != 0) {
        char a[400], b[400];
        return rs_error_set(err, RS_EXIT_VERIFY, "%s: header %s, the manifest says %s", bd->paths[i],
                            rs_text_shown(a, sizeof a, header, strlen(header), 300, '\''),
                            rs_text_shown(b, sizeof b, want, strlen(want), 300, '\''));
    }
    return 0;
}

/* What a file's decoded bytes hold, counted as they stream by: its header
 * line (the first record), then its data rows (records ending with an LF
 * outside quotes), blank lines, bytes and CRC-32. */
typedef struct {
    int in_header, quoted, line_start, cr;
    rs_buf header;
    rs_bucketdir_found f;
    uint64_t lines;   /* line ends as the RS headers count them: each LF, each CR not before an LF */
    char last;
} tally;

static void tally_bytes(tally *t, const char *p, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        t->lines += p[k] == '\n' || (t->cr && p[k] != '\n');
        t->cr = p[k] == '\r';
    }
    size_t i = 0;
    for (; t->in_header && i < n; i++) {
        if (p[i] == '"')
            t->quoted ^= 1;
        else if (p[i] == '\n' && !t->quoted)
            t->in_header = 0;
    }
    if (t->header.len < (1u << 20))   /* a header longer than that is damage whatever it holds */
        rs_buf_append(&t->header, p, i);
    p += i, n -= i;
    if (!n)
        return;
    t->f.crc = rs_crc32(t->f.crc, p, n);
    t->f.bytes += n;
    for (size_t k = 0; k < n; k++) {
        char c = p[k];
        if (c == '"')
            t->quoted ^= 1;
        else if (c == '\n' && !t->quoted) {
            if (t->line_start)
                t->f.blank_lines++;
            else
                t->f.rows++;
            t->line_start = 1;
            continue;
        }
        t->line_start = 0;
    }
    t->last = p[n - 1];
}

/* Decodes [off, off + len) of file i into t. 0, or -1 with err (the
 * reader's: corrupt or truncated data, naming the file and the offset). */
static int tally_range(const rs_bucketdir *bd, size_t i, uint64_t off, uint64_t len, char *buf, size_t cap, tally *t,
                       rs_error *err)
{
    rs_reader *r = rs_reader_openat_range(bd->fd, bd->names[i], bd->paths[i], RS_CODEC_AUTO, off, len, err);
    ssize_t k = r ? 1 : -1;
    while (k > 0 && (k = rs_reader_read(r, buf, cap, err)) > 0)
        tally_bytes(t, buf, (size_t)k);
    rs_reader_close(r);
    return k < 0 ? -1 : 0;
}

/* What the RS member headers (or zstd metadata frames) of file i declare
 * against what t counted in it, as the pipeline checks each unit of such a
 * file (a file without a whole chain of them has nothing declared). 0, or
 * -1 with err naming the file. */
static int check_declared(const rs_bucketdir *bd, size_t i, const tally *t, rs_error *err)
{
    rs_input_unit *u = NULL;
    size_t n = 0;
    uint64_t size, lines = 0, records = 0;
    if (rs_input_units_at(bd->fd, bd->names[i], bd->paths[i], UINT64_MAX / 2, &u, &n, &size, err) != 0)
        return -1;
    int counted = n > 0;
    for (size_t k = 0; k < n; k++)
        counted &= u[k].counted, lines += u[k].lines, records += u[k].records;
    int zstd = n && u[0].zstd;
    free(u);
    uint64_t held = t->f.rows + (t->header.len > 1);   /* the header line is a record (header: NUL-terminated) */
    if (!counted || (lines == t->lines + t->cr && records == held))
        return 0;
    return rs_error_set(err, RS_EXIT_DATA, "%s: the %s declare %llu lines and %llu records in their RS %s but hold "
                        "%llu lines and %llu records (corrupt or altered %s)", bd->paths[i],
                        zstd ? "zstd frames" : "gzip members", (unsigned long long)lines, (unsigned long long)records,
                        zstd ? "metadata frames" : "headers", (unsigned long long)(t->lines + t->cr),
                        (unsigned long long)held, zstd ? "metadata frames" : "member headers");
}

static void say(rs_bucketdir_verdict *v, int state, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void say(rs_bucketdir_verdict *v, int state, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    v->state = (uint8_t)state;
    if (vasprintf(&v->msg, fmt, ap) < 0)
        v->msg = NULL;
    va_end(ap);
}

/* Whether name under bd's descriptor cannot be opened for a reason of
 * the machine rather than of the file (no permission, no descriptor or
 * memory left): then nothing is judged of it, and the check fails as a
 * read does (exit 1) instead of calling an intact file damaged. */
int rs_bucketdir_machine_refuses(int dirfd, const char *name)
{
    int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        close(fd);
        return 0;
    }
    int e = errno;
    return e == EACCES || e == EPERM || e == EMFILE || e == ENFILE || e == ENOMEM ? e : 0;
}

static int machine_refuses(const rs_bucketdir *bd, const char *name, const char *dir, rs_bucketdir_verdict *v)
{
    int e = rs_bucketdir_machine_refuses(bd->fd, name);
    if (!e)
        return 0;
    say(v, RS_FILE_DAMAGED, "%s/%s: cannot open: %s", dir, name, strerror(e));
    v->machine = 1;
    return 1;
}

/* File i's first span bytes decoded into t (a segment's first head bytes,
 * its header member, read as its header line): its rows (a last one
 * without its LF counted), data bytes, CRC-32, and header line without
 * its line end, NUL-terminated; t->f.size the manifest's, for
 * rs_bucketdir_check_found. 0, or -1 with e. */
static int tally_file(const rs_bucketdir *bd, size_t i, uint64_t head, uint64_t span, char *buf, size_t cap, tally *t,
                      rs_error *e)
{
    *t = (tally){.in_header = bd->m.header && !bd->headerless[i], .line_start = 1};
    int rc = head ? tally_range(bd, i, 0, head, buf, cap, t, e) : 0;
    t->in_header = head ? 0 : t->in_header;   /* the header is its own member: the rows start after it */
    if (rc == 0)
        rc = tally_range(bd, i, head, span - head, buf, cap, t, e);
    if (rc == 0 && t->f.bytes && t->last != '\n' && !t->line_start)
        t->f.rows++;   /* a last row without its LF */
    t->f.size = bd->files[i]->file_bytes;
    if (t->header.len && t->header.data[t->header.len - 1] == '\n')
        t->header.len--;
    if (t->header.len && t->header.data[t->header.len - 1] == '\r')
        t->header.len--;
    if (rc == 0 && rs_buf_append(&t->header, "", 1) != 0)
        rc = rs_error_set(e, RS_EXIT_IO, "out of memory");
    return rc;
}

/* Whether base file i, of another size than its manifest says, holds
 * in its size bytes exactly the rows, data bytes, CRC-32 and header the
 * manifest lists: a file rewritten whole (recompressed by gzip -9, say),
 * its rows intact. A segment is not: where its header ends is a member
 * boundary that a rewrite moves. */
static int rewritten_whole(const rs_bucketdir *bd, size_t i, uint64_t size, char *buf, size_t cap)
{
    if (rs_bucketdir_segment(bd, i) || !bd->m.compress)
        return 0;
    tally t;
    rs_error e = {0};
    int rc = tally_file(bd, i, 0, size, buf, cap, &t, &e);   /* its size is what differs, by hypothesis */
    if (rc == 0)
        rc = rs_bucketdir_check_found(bd, i, &t.f, 1, t.header.data, &e);
    rs_buf_free(&t.header);
    return rc == 0;
}

/* File i's first file_bytes decoded and judged (rs_bucketdir_check_found);
 * a segment's header (its first header_bytes) read as its header line. */
static void check_data(const rs_bucketdir *bd, size_t i, char *buf, size_t cap, rs_bucketdir_verdict *v)
{
    const rs_manifest_file *f = bd->files[i];
    struct stat st;
    if (fstatat(bd->fd, bd->names[i], &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
        return say(v, RS_FILE_DAMAGED, "%s: %s (listed with %llu rows)", bd->paths[i],
                   errno == ENOENT ? "missing" : "not a regular file", (unsigned long long)f->rows);
    if (machine_refuses(bd, bd->names[i], bd->path, v))
        return;
    if ((uint64_t)st.st_size != f->file_bytes && rewritten_whole(bd, i, (uint64_t)st.st_size, buf, cap))
        return say(v, RS_FILE_ALTERED, "%s: %llu bytes on disk, the manifest says %llu: rewritten whole (its rows, "
                   "data bytes and CRC-32 are what the manifest says, its stored bytes are not: recompressed?)",
                   bd->paths[i], (unsigned long long)st.st_size, (unsigned long long)f->file_bytes);
    if ((uint64_t)st.st_size < f->file_bytes)
        return say(v, RS_FILE_DAMAGED, "%s: %llu bytes on disk, the manifest says %llu (cut short)", bd->paths[i],
                   (unsigned long long)st.st_size, (unsigned long long)f->file_bytes);
    tally t;
    rs_error e = {0};
    uint64_t head = rs_bucketdir_segment(bd, i) && !bd->headerless[i] ? f->header_bytes : 0;
    int rc = tally_file(bd, i, head, f->file_bytes, buf, cap, &t, &e);
    if (rc == 0 && bd->m.compress && (uint64_t)st.st_size == f->file_bytes)
        rc = check_declared(bd, i, &t, &e);
    if (rc != 0)
        say(v, RS_FILE_DAMAGED, "%s: unreadable: %s", bd->paths[i], e.msg);
    else if (rs_bucketdir_check_found(bd, i, &t.f, 1, t.header.data, &e) != 0)
        say(v, RS_FILE_DAMAGED, "%s", e.msg);
    else if (rs_bucketdir_check_stored(bd, i, NULL, &e) != 0)
        say(v, e.code == RS_EXIT_VERIFY ? RS_FILE_ALTERED : RS_FILE_DAMAGED, "%s", e.msg);
    else if ((uint64_t)st.st_size > f->file_bytes)
        say(v, RS_FILE_LONGER, "%s: %llu bytes on disk, the manifest says %llu: its first %llu bytes are what the "
            "manifest says, %llu bytes follow them", bd->paths[i], (unsigned long long)st.st_size,
            (unsigned long long)f->file_bytes, (unsigned long long)f->file_bytes,
            (unsigned long long)st.st_size - f->file_bytes);
    rs_buf_free(&t.header);
}

int rs_bucketdir_check_stored(const rs_bucketdir *bd, size_t i, const char *as, rs_error *err)
{
    const rs_manifest_file *f = bd->files[i];
    uint32_t crc;
    struct stat st;
    if (!f->has_stored_crc32)
        return 0;
    if (fstatat(bd->fd, bd->names[i], &st, 0) != 0 || rs_crc32_fileat_n(bd->fd, bd->names[i], f->file_bytes, &crc) != 0)
        return rs_error_set(err, RS_EXIT_IO, "%s: cannot read: %s", as ? as : bd->paths[i], strerror(errno));
    if ((uint64_t)st.st_size < f->file_bytes)   /* its rows were found whole: the file was rewritten */
        return rs_error_set(err, RS_EXIT_VERIFY, "%s: %llu bytes on disk, the manifest's stored_crc32 %08x is of %llu "
                            "(its rows are intact; its stored bytes are not the ones written: recompressed?)",
                            as ? as : bd->paths[i], (unsigned long long)st.st_size, f->stored_crc32,
                            (unsigned long long)f->file_bytes);
    if (crc == f->stored_crc32)
        return 0;
    return rs_error_set(err, RS_EXIT_VERIFY, "%s: CRC-32 mismatch: its first %llu stored bytes have CRC-32 %08x, the "
                        "manifest's stored_crc32 says %08x (its rows are intact; its stored bytes are not the ones "
                        "written: a gzip member header's MTIME changed, or recompressed?)",
                        as ? as : bd->paths[i], (unsigned long long)f->file_bytes, crc, f->stored_crc32);
}

/* File i's key index, when the manifests list one: on disk, of its size,
 * of its CRC-32. */
static void check_index(const rs_bucketdir *bd, size_t i, rs_bucketdir_verdict *v)
{
    char *name = NULL;
    uint64_t size;
    uint32_t want, crc;
    int by_row, r = rs_bucketdir_index_of(bd, i, &name, &size, &want, &by_row);
    struct stat st;
    if (r < 0)
        say(v, RS_FILE_DAMAGED, "out of memory");
    else if (r == 0)
        v->state = RS_FILE_NONE;
    else if (fstatat(bd->fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
        say(v, RS_FILE_DAMAGED, "%s/%s: %s (the key index of %s)", bd->path, name,
            errno == ENOENT ? "missing" : "not a regular file", bd->names[i]);
    else if ((uint64_t)st.st_size != size)
        say(v, RS_FILE_DAMAGED, "%s/%s: %llu bytes on disk, the manifest says %llu (a key index)", bd->path, name,
            (unsigned long long)st.st_size, (unsigned long long)size);
    else if (machine_refuses(bd, name, bd->path, v))
        ;
    else if (rs_crc32_fileat(bd->fd, name, &crc) != 0)
        say(v, RS_FILE_DAMAGED, "%s/%s: unreadable: %s", bd->path, name, strerror(errno));
    else if (crc != want)
        say(v, RS_FILE_DAMAGED, "%s/%s: CRC-32 %08x, the manifest says %08x", bd->path, name, crc, want);
    free(name);
}

int rs_bucketdir_check_all(const rs_bucketdir *bd, int threads, rs_bucketdir_verdict *files,
                           rs_bucketdir_verdict *indexes, rs_error *err)
{
    enum { CAP = 1 << 20 };
    size_t n = bd->nfiles;
    int oom = 0, stop = 0;
    memset(files, 0, n * sizeof *files);
    memset(indexes, 0, n * sizeof *indexes);
    if (threads < 1)
        threads = omp_get_max_threads();
    /* a task a file (data, then index): the largest decide the time, and
     * files are few enough (at most 100,000) for dynamic scheduling */
#pragma omp parallel num_threads(threads) reduction(| : oom, stop)
    {
        char *buf = malloc(CAP);
        oom |= !buf;
#pragma omp for schedule(dynamic, 1)
        for (size_t k = 0; k < 2 * n; k++) {
            if (!buf || stop || (stop = rs_interrupt_pending()))
                continue;
            if (k < n)
                check_data(bd, k, buf, CAP, &files[k]);
            else
                check_index(bd, k - n, &indexes[k - n]);
        }
        free(buf);
    }
    if (stop)
        return rs_error_set(err, RS_EXIT_INTERRUPTED, "interrupted");
    if (oom)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    for (size_t k = 0; k < 2 * n; k++) {
        const rs_bucketdir_verdict *v = k < n ? &files[k] : &indexes[k - n];
        if (v->machine)
            return rs_error_set(err, RS_EXIT_IO, "%s (not damage: fix that and run again; nothing was changed)",
                                v->msg ? v->msg : "cannot open a file");
    }
    return 0;
}

void rs_bucketdir_verdicts_free(rs_bucketdir_verdict *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i].msg);
    free(v);
}
