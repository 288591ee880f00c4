/* The compact job (job_compact.h): the library side of `ringshard compact`.
 *
 * Why a whole new directory and not in place: the base files are where
 * readers of the current generations read them, so the merged files cannot
 * overwrite them; DIR is built again beside itself and exchanged with the
 * old one in one step, as --force does, under the writer lock that appends
 * take too. The merge itself, and how each part is checked as it is
 * copied, is the dataset layer's (dataset/compact.c, rs_bucketdir_merge). */
#include <string.h>
#include <unistd.h>
#include "ringshard/dataset.h"
#include "ringshard/job_compact.h"
#include "ringshard/util.h"

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

/* rs_bucketdir_merge into r (check 0: each part copied in the kernel,
 * its size checked only). */
static int compact_into(const rs_bucketdir *bd, const rs_outdir *od, uint64_t memory, int drop_indexes, int check,
                        const rs_compact_take *take, rs_compact_job_result *r, rs_error *err)
{
    if (rs_bucketdir_merge(bd, od, memory, drop_indexes, check, take, &r->file_bytes, err) != 0)
        return -1;
    r->files_after = bd->m.nfiles;
    return 0;
}

int rs_compact_into(const rs_bucketdir *bd, const rs_outdir *od, uint64_t memory, int drop_indexes,
                    rs_compact_job_result *r, rs_error *err)
{
    return compact_into(bd, od, memory, drop_indexes, 1, NULL, r, err);
}

int rs_compact_parts(const rs_bucketdir *bd, const rs_outdir *od, uint64_t memory, int drop_indexes,
                     const rs_compact_take *take, rs_compact_job_result *r, rs_error *err)
{
    /* repair's: every file was read and checked before (rs_bucketdir_check_all) */
    return compact_into(bd, od, memory, drop_indexes, take == NULL, take, r, err);
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
    if (compact_into(bd, &od, o->memory, 0, !o->no_check, NULL, r, err) != 0) {
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
    int lockfd;
    if (rs_outdir_recover_lock(o->dir, &lockfd, err) != 0)
        return -1;
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
