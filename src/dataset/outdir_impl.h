/* Inside the publication of an output directory (ringshard/outdir.h):
 * what outdir.c and stale.c share. */
#ifndef RS_DATASET_OUTDIR_IMPL_H
#define RS_DATASET_OUTDIR_IMPL_H

#include "ringshard/error.h"

/* The tags of the directories beside FINAL (util/tmpname.h has the
 * temporary's): the previous output during a two-rename replacement, and
 * the complete directory a repair holds while it publishes, which no run
 * removes. */
#define OD_OLD_TAG ".ringshard-old."
#define OD_HELD_TAG ".ringshard-repair."

/* Removes name under dirfd and everything in it, never following a
 * symbolic link. 0, or -1 with errno. */
int od_rm_tree_at(int dirfd, const char *name, int depth);

/* renameat2(RENAME_NOREPLACE), or where the file system lacks it a check
 * then renameat. 0, or -1 with errno (EEXIST: `to` exists). */
int od_rename_noreplace_at(int fromfd, const char *from, int tofd, const char *to);

/* 1 when the directory dfd holds a manifest.json that ringshard wrote (its
 * first bytes), 0 when it holds another, -1 when none, -2 when it is a
 * symbolic link (which ringshard never writes: not followed). */
int od_holds_our_manifest(int dfd);

/* The stale siblings of base in parent (stem: rs_tmp_stem's) removed or
 * put back, or a directory no run may remove said: 0, or -1 with err
 * (RS_EXIT_DATA), nothing removed then (stale.c). */
int od_clean_stale(const char *parent, const char *base, const char *stem, rs_error *err);

#endif
