/* ringshard/outdir.h - atomic publication of an output directory.
 *
 * Everything is written into a temporary directory beside the target
 * (DIR.ringshard-tmp.<pid>.<random>) and renamed into place only when
 * complete and flushed (files and directory fsync'd). A failed or
 * interrupted run removes its temporary directory and leaves a previous DIR
 * untouched. Temporary directories left by a killed run are recognised by
 * their name and removed by the next run on the same DIR when their process
 * is gone. With force, an existing DIR is replaced: it is renamed aside,
 * the new one renamed in, then the old one removed. */
#ifndef RINGSHARD_OUTDIR_H
#define RINGSHARD_OUTDIR_H

#include "ringshard/error.h"

typedef struct {
    char *final;   /* the target path (trailing slashes removed) */
    char *tmp;     /* the temporary directory being filled */
    int force;     /* as given to rs_outdir_begin */
} rs_outdir;

/* Creates the temporary directory for `final`, mode 0755, beside it:
 * "<final>.ringshard-tmp.<pid>.<8 random hex digits>". Refuses
 * (RS_EXIT_EXISTS) if final exists and !force, or if final exists and is
 * not a directory (symbolic links included), even with force. A parent
 * that does not exist or cannot be written is RS_EXIT_IO. Removes sibling
 * "<final>.ringshard-tmp.<pid>.*" directories whose process is gone
 * (kill(pid, 0) fails with ESRCH), and "<final>.ringshard-old.<pid>" ones
 * of gone processes when final exists (a replacement that was interrupted
 * before final was renamed in is kept, with a warning). On failure *od is
 * zeroed. */
int rs_outdir_begin(rs_outdir *od, const char *final, int force, rs_error *err);

/* Path of `name` inside the temporary directory (malloc'd). */
char *rs_outdir_path(const rs_outdir *od, const char *name);

/* fsyncs every file and the directory, then renames it into place
 * (without force, never over an output that appeared meanwhile:
 * RS_EXIT_EXISTS), then fsyncs the parent directory. With force, an
 * existing final is renamed to "<final>.ringshard-old.<pid>", the new one
 * renamed in and the old one removed. On failure the temporary directory is
 * removed (a previous final is left or put back in place). Either way *od
 * is released and zeroed: a following rs_outdir_abort does nothing. */
int rs_outdir_commit(rs_outdir *od, rs_error *err);

/* Removes the temporary directory and everything in it (symbolic links are
 * removed, never followed), releases and zeroes *od. Does nothing on a
 * zeroed od, so it may be called after a commit or a failed begin. */
void rs_outdir_abort(rs_outdir *od);

/* A file name for a node name that cannot escape the directory: bytes
 * [A-Za-z0-9._-] are kept, every other byte becomes %XX (uppercase hex), a
 * leading '.' becomes %2E (so "." and ".." cannot occur), and names longer
 * than 200 bytes are cut and suffixed with '~' and 16 hex digits of their
 * hash. Distinct names give distinct file names. Returns malloc'd.
 * Precisely: "longer than 200 bytes" is the escaped name; it is cut to at
 * most 200 bytes without splitting a %XX, and the suffix is '~' and the
 * first 64-bit word of MurmurHash3_x64_128 (seed 0) of the whole original
 * name, 16 lowercase hex digits (at most 217 bytes in all). '~' never
 * occurs otherwise (it is escaped as %7E), so names up to the limit map
 * one-to-one, and cut names differ unless their 64-bit hashes collide. The
 * empty name gives "%00" (no real name contains a NUL). NULL on OOM. */
char *rs_safe_filename(const char *name);

#endif
