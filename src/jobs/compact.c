/* The compact job (job_compact.h): the library side of `ringshard compact`.
 *
 * Why a whole new directory and not in place: the base files are where
 * readers of the current generations read them, so the merged files cannot
 * overwrite them; DIR is built again beside itself (mostly in the kernel:
 * copy_file_range) and exchanged with the old one in one step, as --force
 * does, under the writer lock that appends take too. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ringshard/dataset.h"
#include "ringshard/deflate.h"
#include "ringshard/interrupt.h"
#include "ringshard/job_compact.h"
#include "ringshard/util.h"
#include "rs_config.h"

/* Appends file k of bd to out at *off, after checking its size against
 * its manifest (cut: a longer file, of which its first file_bytes are
 * taken); a segment's header line (its first header_bytes: a gzip member,
 * a zstd frame or the line) is left out, the base file's heads the merged
 * file. 0 or -1 with err. */
static int copy_part(const rs_bucketdir *bd, size_t k, int cut, int out, const char *out_path, uint64_t *off,
                     rs_error *err)
{
    int in = openat(bd->fd, bd->names[k], O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (in < 0 || fstat(in, &st) != 0) {
        rs_error_set(err, RS_EXIT_IO, "%s: cannot read: %s", bd->paths[k], strerror(errno));
        if (in >= 0)
            close(in);
        return -1;
    }
    int rc = 0;
    uint64_t size = bd->files[k]->file_bytes;
    if ((uint64_t)st.st_size != size && !(cut && (uint64_t)st.st_size > size))
        rc = rs_error_set(err, RS_EXIT_VERIFY, "%s: %llu bytes on disk, the manifest says %llu (verify it)",
                          bd->paths[k], (unsigned long long)st.st_size, (unsigned long long)size);
    uint64_t skip = rs_bucketdir_segment(bd, k) ? bd->files[k]->header_bytes : 0;
    if (rc == 0 && rs_copy_into(in, skip, size - skip, out, *off) != 0)
        rc = errno == EINTR ? rs_error_set(err, RS_EXIT_INTERRUPTED, "interrupted")
                            : rs_error_set(err, RS_EXIT_IO, "%s: cannot copy %s into it: %s", out_path, bd->paths[k],
                                           strerror(errno));
    *off += size - skip;
    close(in);
    return rc;
}

/* Node i's files, one after the other (those take keeps), into od's file
 * of the same name; *f gets the merged file's manifest entry. k: node i's
 * first file in bd. A node whose base file is left out starts with
 * take->head. */
static int merge_node(const rs_bucketdir *bd, size_t i, size_t *k, const rs_compact_take *take, const rs_outdir *od,
                      rs_manifest_file *f, rs_error *err)
{
    *f = bd->m.files[i];
    f->rows = f->bytes = 0;
    f->crc32 = 0;
    f->index = NULL;
    char *path = rs_outdir_path(od, f->file);
    int out = path ? open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644) : -1;
    if (out < 0) {
        rs_error_set(err, RS_EXIT_IO, "%s: cannot create: %s", path ? path : od->tmp, strerror(errno));
        free(path);
        return -1;
    }
    uint64_t off = 0;
    int rc = 0;
    if (take && take->take && !take->take[*k] && take->head_len) {   /* its base file left out */
        if (pwrite(out, take->head, take->head_len, 0) != (ssize_t)take->head_len)
            rc = rs_error_set(err, RS_EXIT_IO, "%s: write failed: %s", path, strerror(errno));
        off = take->head_len;
    }
    for (; rc == 0 && *k < bd->nfiles && bd->file_base[*k] == i; ++*k) {
        const rs_manifest_file *part = bd->files[*k];
        uint8_t how = take && take->take ? take->take[*k] : RS_TAKE_WHOLE;
        if (how == RS_TAKE_NONE)
            continue;
        rc = copy_part(bd, *k, how == RS_TAKE_CUT, out, path, &off, err);
        f->crc32 = rs_crc32_combine(f->crc32, part->crc32, part->bytes);
        f->rows += part->rows;
        f->bytes += part->bytes;
    }
    for (; *k < bd->nfiles && bd->file_base[*k] == i; ++*k)   /* after a failure: on to the next node's */
        ;
    f->file_bytes = off;
    if (close(out) != 0 && rc == 0)
        rc = rs_error_set(err, RS_EXIT_IO, "%s: write failed: %s", path, strerror(errno));
    free(path);
    return rc;
}

/* Every file's key index, when every file has one (1; 0 when one lacks
 * it: the merged files get none, and dedup --append builds them), with
 * the mode they share. -1 with err. */
static int find_indexes(const rs_bucketdir *bd, char **names, uint64_t *sizes, int *by_row, rs_error *err)
{
    int mode = -1;
    for (size_t k = 0; k < bd->nfiles; k++) {
        uint32_t crc;
        int row, r = rs_bucketdir_index_of(bd, k, &names[k], &sizes[k], &crc, &row);
        if (r < 0)
            return rs_error_set(err, RS_EXIT_IO, "out of memory");
        if (r == 0 || (mode >= 0 && row != mode))
            return 0;
        mode = row;
    }
    *by_row = mode > 0;
    return bd->nfiles > 0;
}

/* Node i's indexes (files [k0, k) of bd) merged into the index of
 * its merged file f, named after its node (rs_name_keyidx). */
static int merge_index(const rs_bucketdir *bd, size_t k0, size_t k, char *const *names, const uint64_t *sizes,
                       int by_row, const rs_outdir *od, uint64_t memory, rs_manifest_file *f, rs_error *err)
{
    size_t n = k - k0;
    rs_keyidx_of *want = calloc(n + 1, sizeof *want);
    char **shown = calloc(n + 1, sizeof *shown);  /* DIR/g00000002/1.keyidx in messages, as verify names it */
    char *path = NULL;
    int rc = -1, ok = want && shown;
    for (size_t q = 0; ok && q < n; q++)
        if (asprintf(&shown[q], "%s/%s", bd->path, names[k0 + q]) < 0)
            shown[q] = NULL, ok = 0;
    if (!ok || !(f->index = rs_name_keyidx(f->node)) || !(path = rs_outdir_path(od, f->index))) {
        rs_error_set(err, RS_EXIT_IO, "out of memory");
        goto out;
    }
    for (size_t q = 0; q < n; q++) {
        const rs_manifest_file *part = bd->files[k0 + q];
        want[q] = (rs_keyidx_of){part->rows, part->bytes, part->crc32, by_row ? RS_KEYIDX_BY_ROW : 0};
    }
    rs_keyidx_of of = {f->rows, f->bytes, f->crc32, by_row ? RS_KEYIDX_BY_ROW : 0};
    rc = rs_keyidx_merge(path, bd->fd, (const char *const *)names + k0, (const char *const *)shown, want,
                          sizes + k0, n, &of, memory, &f->index_bytes, &f->index_crc32, err);
out:
    for (size_t q = 0; shown && q < n; q++)
        free(shown[q]);
    free(shown);
    free(want);
    free(path);
    return rc;
}

/* The compacted base's manifest: DIR's base with the merged files, every
 * generation's inputs (with the generation that ingested each; the base's
 * not when its files are left out) and totals. */
static int write_manifest(const rs_bucketdir *bd, rs_manifest_file *files, const char *dedup,
                          const rs_compact_take *take, const rs_outdir *od, rs_error *err)
{
    rs_manifest m = bd->m;  /* shallow: strings stay the base's */
    m.dedup = (char *)dedup;
    int base_out = take && take->base_out;
    size_t n = base_out ? 0 : bd->m.ninputs;
    for (size_t g = 0; g < bd->ngens; g++)
        n += bd->gens[g].ninputs;
    rs_manifest_input *in = calloc(n + 1, sizeof *in);
    if (!in)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    uint64_t base = bd->m.generation ? bd->m.generation : 1;
    size_t k = 0;
    for (size_t i = 0; !base_out && i < bd->m.ninputs; i++, k++) {
        in[k] = bd->m.inputs[i];
        in[k].generation = in[k].generation ? in[k].generation : base;
    }
    for (size_t g = 0; g < bd->ngens; g++)
        for (size_t i = 0; i < bd->gens[g].ninputs; i++)
            in[k++] = bd->gens[g].inputs[i];
    m.schema = 2;
    m.generation = bd->last_gen;
    m.tool_version = RS_VERSION;
    m.inputs = in;
    m.ninputs = n;
    m.files = files;
    m.rows = bd->rows, m.bytes = bd->bytes, m.rejected = bd->rejected - (base_out ? bd->m.rejected : 0);
    for (size_t i = 0; take && take->take && i < bd->nfiles; i++)
        if (take->take[i] == RS_TAKE_NONE)
            m.rows -= bd->files[i]->rows, m.bytes -= bd->files[i]->bytes;
    m.seconds = 0;
    int rc = rs_outdir_manifest(od, &m, err);
    free(in);
    return rc;
}

/* A file no manifest names would not be in the compacted DIR: compact
 * refuses to drop it without a word (the user moves it out, or removes it). */
static int refuse_strays(const rs_bucketdir *bd, rs_error *err)
{
    if (!bd->nstray)
        return 0;
    return rs_error_set(err, RS_EXIT_DATA, "%s/%s: no manifest names it (not written by ringshard)%s: compact would "
                        "not keep it and left DIR as it was: move it out of %s (or remove it), then run compact "
                        "again", bd->path, bd->stray[0], bd->nstray > 1 ? ", and more such entries" : "", bd->path);
}

int rs_compact_parts(const rs_bucketdir *bd, const rs_outdir *od, uint64_t memory, int drop_indexes,
                     const rs_compact_take *take, rs_compact_job_result *r, rs_error *err)
{
    rs_manifest_file *files = calloc(bd->m.nfiles + 1, sizeof *files);
    char **inames = calloc(bd->nfiles + 1, sizeof *inames);
    uint64_t *isizes = calloc(bd->nfiles + 1, sizeof *isizes);
    int by_row = 0, indexed = 0;
    if (!files || !inames || !isizes)
        rs_error_set(err, RS_EXIT_IO, "out of memory");
    else
        indexed = find_indexes(bd, inames, isizes, &by_row, err);
    size_t k = 0;
    for (size_t i = 0; files && i < bd->m.nfiles && !err->code; i++) {
        size_t k0 = k;
        if (merge_node(bd, i, &k, take, od, &files[i], err) == 0)
            r->file_bytes += files[i].file_bytes;
        if (!err->code && indexed > 0 && !drop_indexes)
            merge_index(bd, k0, k, inames, isizes, by_row, od, memory, &files[i], err);
        if (!err->code && rs_interrupt_pending())
            rs_error_set(err, RS_EXIT_INTERRUPTED, "interrupted");
    }
    if (!err->code)
        write_manifest(bd, files, indexed > 0 ? (by_row ? "row" : "first") : NULL, take, od, err);
    for (size_t i = 0; files && i < bd->m.nfiles; i++)
        free(files[i].index);
    rs_free_strings(inames, bd->nfiles);
    free(isizes);
    free(files);
    if (err->code)
        return -1;
    r->files_after = bd->m.nfiles;
    return 0;
}

int rs_compact_into(const rs_bucketdir *bd, const rs_outdir *od, uint64_t memory, int drop_indexes,
                    rs_compact_job_result *r, rs_error *err)
{
    return rs_compact_parts(bd, od, memory, drop_indexes, NULL, r, err);
}

static int compact(const rs_compact_job_opts *o, int lockfd, rs_bucketdir *bd, rs_compact_job_result *r,
                   rs_error *err)
{
    if (strcmp(bd->m.kind, "buckets") != 0) {
        close(lockfd);
        return rs_error_set(err, RS_EXIT_USAGE, "%s: kind '%s': compact merges bucket directories", o->dir, bd->m.kind);
    }
    r->generations = bd->ngens + 1;
    r->generation = bd->last_gen;
    r->files_before = bd->nfiles;
    r->rows = bd->rows, r->bytes = bd->bytes;
    if (bd->ngens == 0) {
        close(lockfd);
        r->files_after = bd->nfiles;
        return 0;   /* one generation: nothing to merge */
    }
    if (refuse_strays(bd, err) != 0) {
        close(lockfd);
        return -1;
    }
    rs_outdir od;
    if (rs_outdir_begin(&od, o->dir, RS_OUTDIR_FORCE, err) != 0) {
        close(lockfd);
        return -1;
    }
    od.lockfd = lockfd;   /* held until the replaced DIR is removed */
    if (rs_compact_into(bd, &od, o->memory, 0, r, err) != 0) {
        rs_outdir_abort(&od);
        return -1;
    }
    if (rs_outdir_commit(&od, err) != 0)
        return -1;
    r->published = 1;
    return 0;
}

int rs_compact_job_run(const rs_compact_job_opts *o, rs_compact_job_result *r, rs_error *err)
{
    memset(r, 0, sizeof *r);
    double t0 = rs_now();
    /* a replacement killed between its renames: DIR put back; a repair's: said */
    if (rs_outdir_recover(o->dir, err) != 0)
        return -1;
    int lockfd, lr = rs_outdir_lock(o->dir, &lockfd, err);
    if (lr != 0)
        return lr > 0 ? rs_error_set(err, RS_EXIT_IO, "%s: no such directory", o->dir) : -1;
    rs_bucketdir bd;
    if (rs_bucketdir_open_flags(&bd, o->dir, UINT64_MAX, RS_BUCKETDIR_TOLERANT, err) != 0) {
        close(lockfd);
        return -1;
    }
    int rc = rs_bucketdir_refuse_damage(&bd, "compact", err) == 0
                 ? compact(o, lockfd, &bd, r, err)
                 : (close(lockfd), -1);
    rs_bucketdir_close(&bd);
    r->seconds = rs_now() - t0;
    return rc;
}
