/* cluster/shared_files.c - the files every rank of a cluster shares: the
 * output directory (created and published by rank 0, its temporary name
 * broadcast), the quarantine file (one temporary, pieces assembled by the
 * job, see cluster.c), the bucket directory read by all (each rank opens
 * it, and all check that they read the same generation) and the
 * --files-from lists (a list on standard input reaches rank 0 only, so
 * rank 0 reads every list and sends it to the others, and alone stats the
 * files). Each function is
 * collective and ends with rs_world_agree, as in cluster.c; with one
 * process they are the plain calls of src/dataset/. */
#define _GNU_SOURCE
#include "cluster/cluster.h"
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ringshard/util.h"
#include "cluster/world.h"
#include "ringshard/filelist.h"
#include "ringshard/interrupt.h"

int rs_cluster_outdir_begin(rs_outdir *od, const char *final, int force, rs_error *err)
{
    memset(od, 0, sizeof *od);
    if (err->code)  /* this rank failed before: only agree (and fail) */
        return rs_world_agree(err), -1;
    if (rs_world_size() == 1)
        return rs_outdir_begin(od, final, force, err);
    if (rs_world_rank() == 0)
        rs_outdir_begin(od, final, force, err);
    if (rs_world_agree(err) != 0) {
        rs_outdir_abort(od);  /* rank 0's, if another rank failed */
        return -1;
    }
    uint64_t len = rs_world_rank() == 0 ? strlen(od->tmp) : 0;
    rs_world_bcast(&len, sizeof len, 0);
    if (rs_world_rank() != 0) {
        od->tmp = calloc(len + 1, 1);
        if (!od->tmp)
            abort();
    }
    rs_world_bcast(od->tmp, len, 0);
    return 0;
}

void rs_cluster_outdir_abort(rs_outdir *od)
{
    if (rs_world_rank() == 0) {
        rs_outdir_abort(od);
    } else {
        free(od->tmp);
        memset(od, 0, sizeof *od);
    }
}

/* Ends the output on every rank: with ok everywhere, rank 0 publishes
 * with commit (names[0..n) for a staged output), else removes it. */
static int outdir_end(rs_outdir *od, const char *const *names, size_t n, rs_error *err)
{
    int ok = rs_world_size() == 1 ? err->code == 0 : rs_world_agree(err) == 0;
    if (rs_world_rank() == 0) {
        if (ok)
            ok = (names ? rs_outdir_commit_into(od, names, n, err) : rs_outdir_commit(od, err)) == 0;
        else
            rs_outdir_abort(od);
    } else {
        free(od->tmp);
        memset(od, 0, sizeof *od);
    }
    if (rs_world_size() == 1)
        return ok ? 0 : -1;
    return rs_world_agree(err) == 0 && ok ? 0 : -1;
}

int rs_cluster_outdir_end(rs_outdir *od, rs_error *err)
{
    return outdir_end(od, NULL, 0, err);
}

int rs_cluster_outdir_end_into(rs_outdir *od, const char *const *names, size_t n, rs_error *err)
{
    return outdir_end(od, names, n, err);
}

int rs_cluster_quarantine_begin(rs_pipeline_opts *po, rs_outdir *od, rs_cluster_quarantine *q, rs_error *err)
{
    memset(q, 0, sizeof *q);
    if (po->bad_rows != RS_BAD_ROW_QUARANTINE || po->quarantine == NULL)
        return 0;
    const char *tmp = NULL;
    if (rs_world_rank() == 0 && !err->code) {
        if (od)
            tmp = rs_outdir_side(od, po->quarantine, err);
        else if (rs_outfile_reserve(&q->of, po->quarantine, err) == 0)
            tmp = q->of.tmp;
    }
    if (rs_world_agree(err) != 0)
        return -1;
    uint64_t len = tmp ? strlen(tmp) : 0;
    rs_world_bcast(&len, sizeof len, 0);
    q->name = calloc(len + 1, 1);
    if (!q->name)
        abort();
    if (tmp)
        memcpy(q->name, tmp, len);
    rs_world_bcast(q->name, len, 0);
    q->slot = &po->quarantine;
    q->given = po->quarantine;
    q->name_slot = &po->quarantine_name;
    *q->name_slot = po->quarantine;
    po->quarantine = q->name;
    return 0;
}

int rs_cluster_quarantine_continue(rs_cluster_quarantine *q, rs_pipeline_opts *po, rs_error *err)
{
    if (!q->name || !q->given || rs_outfile_in_place(q->given))
        return 0;   /* no quarantine, or one written in place: appended to already */
    if (rs_world_rank() == 0 && !err->code) {
        int in = open(q->given, O_RDONLY | O_CLOEXEC), out = open(q->name, O_WRONLY | O_CLOEXEC);
        struct stat st;
        if (in < 0 || out < 0 || fstat(in, &st) != 0 || rs_copy_into(in, 0, (uint64_t)st.st_size, out, 0) != 0)
            rs_error_set(err, RS_EXIT_IO, "%s: cannot carry it on from %s: %s", q->name, q->given, strerror(errno));
        if (in >= 0)
            close(in);
        if (out >= 0)
            close(out);
    }
    po->quarantine_continue = 1;
    return rs_world_agree(err);
}

int rs_cluster_quarantine_end(rs_cluster_quarantine *q, int ok, rs_error *err)
{
    int rc = 0;
    if (q->of.tmp) {
        int publish = ok && err->code == 0;
        if (publish && rs_interrupt_publish_gate(err) != 0)   /* a stop signal: the previous FILE stays */
            publish = 0, rc = -1;
        if (publish)
            rc = rs_outfile_commit(&q->of, err);
        else
            rs_outfile_abort(&q->of);
    }
    if (q->slot) {
        *q->slot = q->given;
        *q->name_slot = NULL;
    }
    free(q->name);
    memset(q, 0, sizeof *q);
    return rc;
}

int rs_cluster_bucketdir_open(rs_bucketdir *bd, const char *dir, rs_error *err)
{
    return rs_cluster_bucketdir_open_flags(bd, dir, 0, err);
}

int rs_cluster_bucketdir_open_flags(rs_bucketdir *bd, const char *dir, int flags, rs_error *err)
{
    if (rs_world_size() == 1)
        return rs_bucketdir_open_flags(bd, dir, UINT64_MAX, flags, err);
    /* rank 0 opens first and says how far its generations go: the others
     * read as many (appends may publish more meanwhile; those stay unread) */
    int opened = -1;
    uint64_t upto = 0;
    if (rs_world_rank() == 0) {
        opened = rs_bucketdir_open_flags(bd, dir, UINT64_MAX, flags, err);
        upto = opened == 0 ? bd->last_gen : 0;
    }
    rs_world_bcast(&upto, sizeof upto, 0);
    if (rs_world_rank() != 0)
        opened = upto ? rs_bucketdir_open_flags(bd, dir, upto, flags, err)
                      : rs_error_set(err, RS_EXIT_IO, "%s: rank 0 could not open it", dir);
    if (rs_cluster_same_dir(bd, err) != 0 || opened != 0)  /* collective: every rank calls it */
        return -1;
    return 0;
}

int rs_cluster_same_dir(const rs_bucketdir *bd, rs_error *err)
{
    if (rs_world_size() == 1)
        return 0;
    uint64_t mine[4] = {bd->dev, bd->ino, bd->digest[0], bd->digest[1]}, root[4];
    memcpy(root, mine, sizeof root);
    rs_world_bcast(root, sizeof root, 0);
    int same_kernel = rs_world_same_kernel_as_root();
    if (!err->code && (mine[2] != root[2] || mine[3] != root[3] ||
                       (same_kernel && (mine[0] != root[0] || mine[1] != root[1]))))
        rs_error_set(err, RS_EXIT_IO,
                     "%s: rank %d read another generation of the directory than rank 0 (%s; replaced by "
                     "another run meanwhile?): run again",
                     bd->path ? bd->path : "?", rs_world_rank(),
                     mine[2] != root[2] || mine[3] != root[3] ? "its manifest.json differs"
                                                              : "it is another directory (device and inode)");
    return rs_world_agree(err);
}

int rs_cluster_file_lists_inputs(rs_file_lists *ff, char **args, size_t nargs, const char *const **inputs,
                                 size_t *ninputs, rs_error *err)
{
    int me = rs_world_rank();
    if (rs_file_lists_args(ff, args, nargs, err) != 0)
        return -1;
    for (size_t k = 0; k < ff->nlists && me == 0 && !err->code; k++)
        rs_file_lists_read(ff, k, err);
    if (rs_world_agree(err) != 0)
        return -1;
    for (size_t k = 0; k < ff->nlists; k++) {
        uint64_t len = ff->lists[k].len;
        rs_world_bcast(&len, sizeof len, 0);
        char *text = me == 0 ? ff->lists[k].text : calloc(len + 1, 1);
        if (!text)
            abort();  /* as cluster.c: a rank cannot leave the others waiting */
        rs_world_bcast(text, len, 0);
        if (me != 0)
            rs_file_lists_adopt(ff, k, text, (size_t)len);
    }
    if (rs_file_lists_split(ff, args, nargs, err) == 0 && me == 0)
        rs_file_lists_check(ff, nargs, err);
    if (rs_world_agree(err) != 0)
        return -1;
    *inputs = ff->inputs;
    *ninputs = ff->ninputs;
    return 0;
}
