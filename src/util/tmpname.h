/* util/tmpname.h - the names of ringshard's temporaries, and files
 * published by renaming one over its target.
 *
 * Every temporary is a sibling of what it becomes: "<stem>.ringshard-tmp.
 * <pid>.<8 hex digits>" (directories: dataset/outdir.c; files:
 * util/outfile.c), so that a rename publishes it in one step, and a killed
 * run's leftovers are recognised by the next run on the same target (the
 * pid is gone) and removed. Internal to the library. */
#ifndef RINGSHARD_UTIL_TMPNAME_H
#define RINGSHARD_UTIL_TMPNAME_H

#include <limits.h>
#include <stdint.h>
#include "ringshard/error.h"

#define RS_TMP_TAG ".ringshard-tmp."
/* The longest tag after a stem: RS_TMP_TAG, a pid (10 digits at most), '.'
 * and 8 hex digits. A stem leaves room for it within NAME_MAX. */
#define RS_TMP_TAG_ROOM (sizeof RS_TMP_TAG - 1 + 10 + 1 + 8)
#define RS_TMP_STEM_MAX (NAME_MAX - RS_TMP_TAG_ROOM)

/* Splits final (trailing slashes removed) into *fin (the whole, malloc'd),
 * its *parent (malloc'd; "." when none) and *base (inside *fin). 0, or -1
 * when out of memory. */
int rs_tmp_split_path(const char *final, char **fin, char **parent, const char **base);

/* What the tagged names of base start with: base itself when the longest
 * tag fits after it, else base's first bytes (a UTF-8 sequence is not
 * split) + '~' + 16 hex digits of MurmurHash3 of the whole base, at most
 * RS_TMP_STEM_MAX bytes. The same base always gives the same stem. */
void rs_tmp_stem(const char *base, char out[RS_TMP_STEM_MAX + 1]);

/* fin with its base name replaced by stem + tag + pid (+ '.' + 8 random hex
 * digits when rnd): a sibling of fin. malloc'd, NULL when out of memory. */
char *rs_tmp_tagged_path(const char *fin, const char *base, const char *stem, const char *tag, int rnd);

/* 1 if process pid no longer exists (or is a zombie), else 0. */
int rs_tmp_pid_gone(long pid);

/* If name is stem + tag + <digits> + (rest): the pid, with *rest after the
 * digits. Else -1. */
long rs_tmp_tagged_pid(const char *name, const char *stem, const char *tag, const char **rest);

/* fsync of the directory holding path (EINVAL, a file system that cannot,
 * is success); 0, or -1 with errno. */
int rs_tmp_sync_parent(const char *path);

/* The file that publishing path replaces (the one rule for every file
 * ringshard publishes whole, rs_outfile_* and rs_outdir_side, and for
 * where rs_path_within places it): path without trailing slashes, or when
 * that is a symbolic link, the end of its chain - each relative target
 * taken from the link's directory - so that the link stays and the file
 * it leads to is replaced; a dangling link's target is created there, as
 * open(O_CREAT) would. malloc'd; NULL with errno (ENOMEM; ELOOP past 40
 * links). */
char *rs_tmp_final_path(const char *path);

/* Creates an empty regular file "<stem>.ringshard-tmp.<pid>.<hex>" beside
 * rs_tmp_final_path(path) - in the directory of a link's target, so that
 * the rename that publishes it stays on one file system - (O_EXCL) with
 * the permission bits of that file when it is a regular file (what a
 * rename over it keeps), else those of every file for the user
 * (util/filemode.h), after removing the regular files of that pattern
 * whose process is gone. Returns its malloc'd name and sets *fin to that
 * final path (malloc'd), what the temporary is renamed to; NULL with errno
 * (ENOMEM, ELOOP, or what open(2) said) on failure. */
char *rs_tmp_create_beside(const char *path, char **fin);

#endif
