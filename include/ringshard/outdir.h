/* ringshard/outdir.h - atomic publication of an output directory.
 *
 * Everything is written into a temporary directory beside the target
 * (DIR.ringshard-tmp.<pid>.<random>) and published only when complete and
 * flushed (files and directory fsync'd). A failed or interrupted run
 * removes its temporary directory and leaves a previous DIR untouched.
 * Temporary directories left by a killed run are recognised by their name
 * and removed by the next run on the same DIR when their process is gone.
 * With force, an existing DIR that is empty or a ringshard output is
 * replaced in one step (renameat2 RENAME_EXCHANGE), then the old one
 * removed; where the file system cannot, in two renames (the next run
 * restores DIR if killed between them). The design note is at the top of
 * src/dataset/outdir.c. */
#ifndef RINGSHARD_OUTDIR_H
#define RINGSHARD_OUTDIR_H

#include <stddef.h>
#include "ringshard/error.h"

/* rs_outdir_begin's force flags. FORCE replaces an existing DIR that is
 * empty or holds a manifest.json written by ringshard; FORCE_ANY (implies
 * FORCE) replaces any directory. Neither replaces a file or a link. */
#define RS_OUTDIR_FORCE 1
#define RS_OUTDIR_FORCE_ANY 2
/* rs_outdir_begin's STAGE flag: final exists and stays; the temporary
 * beside it stages what rs_outdir_commit_into moves into it (an appended
 * generation). Exclusive of the force flags. */
#define RS_OUTDIR_STAGE 4

typedef struct {
    char *final;   /* the target path (trailing slashes removed) */
    char *tmp;     /* the temporary directory being filled */
    int force;     /* the flags given to rs_outdir_begin */
    int lockfd;    /* while a commit replaces final: its writer lock (rs_outdir_lock), else 0 */
    char **side_final, **side_tmp;   /* rs_outdir_side's files */
    size_t nside;
} rs_outdir;

/* Creates the temporary directory for `final`, mode 0755, beside it:
 * "<stem>.ringshard-tmp.<pid>.<8 random hex digits>", where <stem> is
 * final's base name, or when that leaves no room for the tag within
 * NAME_MAX, its first bytes + '~' + 16 hex digits of its hash (so any valid
 * name works). Refuses (RS_EXIT_EXISTS) if final exists and no force flag
 * is given; if final is not a directory (a file, a symbolic link), whatever
 * the flags; and with RS_OUTDIR_FORCE alone if it is a directory that is
 * neither empty nor a ringshard output (one whose manifest.json starts as
 * ringshard writes it), with a message saying how many entries it holds.
 * A parent that does not exist or cannot be written is RS_EXIT_IO. Removes
 * sibling "<stem>.ringshard-tmp.<pid>.*" directories whose process is gone
 * (kill(pid, 0) fails with ESRCH), and "<stem>.ringshard-old.<pid>" ones of
 * gone processes; when final is missing, the latest such -old directory
 * (left by an interrupted two-rename replacement) is first renamed back to
 * final, with a warning, so the previous output is restored. On failure
 * *od is zeroed. */
int rs_outdir_begin(rs_outdir *od, const char *final, int force, rs_error *err);

/* What rs_outdir_begin does first, for a run that works on final in place
 * (compact, repair): removes the temporaries of gone processes beside it
 * and, when final is missing, puts back the output an interrupted
 * two-rename replacement left at "<stem>.ringshard-old.<pid>" (with a
 * warning). A complete directory that must not be removed (one an
 * interrupted repair left at "<stem>.ringshard-repair.<pid>", or, final
 * missing beside a "<final>.damaged.<N>", a temporary holding a manifest)
 * stops it (and rs_outdir_begin) before anything is removed: -1 with err
 * (RS_EXIT_DATA) saying where it is and how to put it back; else 0. */
int rs_outdir_recover(const char *final, rs_error *err);

/* Refuses (RS_EXIT_USAGE) a file a run writes beside its output
 * directory (a quarantine file, a report) when it lies inside outdir or
 * below (rs_path_within): publishing replaces outdir, so the file would be
 * lost. what is the option as the message shows it ("--duplicates "). path
 * or outdir NULL, or path "-": nothing to check. 0 or -1 with err. */
int rs_outdir_refuse_inside(const char *what, const char *path, const char *outdir, rs_error *err);

/* Path of `name` inside the temporary directory (malloc'd). */
char *rs_outdir_path(const rs_outdir *od, const char *name);

/* A file published with the directory (e.g. dedup's --duplicates
 * report): creates an empty "<stem>.ringshard-tmp.<pid>.<hex>" beside path
 * (stale ones of gone processes are removed first) and returns its name,
 * for the caller to write; rs_outdir_commit renames it over path after the
 * directory is published, rs_outdir_abort (or a failed commit) removes it,
 * so a previous file at path is kept unless the directory is published.
 * Through a symbolic link, as for rs_outfile_reserve, the file it leads to
 * is replaced (the temporary beside it) and the link stays; a replaced
 * file keeps its mode.
 * A path written in place (rs_outfile_in_place: /dev/stdout, a FIFO) is
 * returned as is. The name is owned by od. NULL with err (RS_EXIT_IO) on failure. */
const char *rs_outdir_side(rs_outdir *od, const char *path, rs_error *err);

/* fsyncs every file and the directory, then publishes it: renamed into
 * place when final does not exist (never over an output that appeared
 * meanwhile without force: RS_EXIT_EXISTS); with force, exchanged with the
 * existing final (checked again as rs_outdir_begin checks it) and the
 * previous output, now at the temporary's name, removed. Where the file
 * system refuses the exchange (EINVAL, ENOSYS) a warning says so and final
 * is renamed to "<stem>.ringshard-old.<pid>", the new one renamed in and
 * the old one removed. A stop signal raised by then (rs_interrupt_pending,
 * checked after the fsyncs, just before the publishing rename) publishes
 * nothing: RS_EXIT_INTERRUPTED "interrupted", the temporary removed. Then
 * fsyncs the parent directory and renames the
 * side files into place. On failure before publishing, the temporary
 * directory and side files are removed (a previous final is left or put
 * back in place). A failure after (the parent's fsync, a side file) is
 * returned with a message saying that final is published: it cannot be
 * undone once readers may see it. Either way *od is released and zeroed: a
 * following rs_outdir_abort does nothing. */
int rs_outdir_commit(rs_outdir *od, rs_error *err);

/* Publishes a staged od (RS_OUTDIR_STAGE) INTO final instead of as final:
 * fsyncs the temporary's tree, then renames names[0..n) from it into final,
 * in that order - a regular file over the one of the same name (one atomic
 * step: a new manifest.json), a directory to a name that must not exist
 * (RENAME_NOREPLACE: an appended generation) - fsyncs final, renames the
 * side files into place and removes the temporary. The caller holds
 * final's writer lock (rs_outdir_lock). A stop signal raised by the first
 * rename publishes nothing (RS_EXIT_INTERRUPTED). A failure after the
 * first rename says which names are published. *od is released either
 * way. Test pause points: "publish" before the renames, "upgraded" after
 * all but the last, "published" after the last. */
int rs_outdir_commit_into(rs_outdir *od, const char *const *names, size_t n, rs_error *err);

/* Publishes od as final and keeps the previous final whole at aside (a
 * path that must not exist), final naming a whole directory at every
 * instant: fsyncs the temporary's tree, renames it to
 * "<stem>.ringshard-repair.<pid>" (a name no run removes: rs_outdir_recover),
 * exchanges that with final (renameat2 RENAME_EXCHANGE), renames it (now
 * the previous final) to aside, then fsyncs the parent. Where the file
 * system cannot exchange, final is renamed to aside and the new directory
 * to final (a warning says so): killed between the two, final is missing
 * and the next run says how to put the new one in place. A stop signal
 * raised before the exchange publishes nothing (RS_EXIT_INTERRUPTED). Test
 * pause points: "publish" before the renames, "held" after the first,
 * "exchanged" (or "aside" without the exchange) after the second,
 * "published" after the last. *od is released either way. (repair: the
 * damaged directory is kept for inspection.) */
int rs_outdir_commit_aside(rs_outdir *od, const char *aside, rs_error *err);

/* Takes the writer lock of the directory dir: an exclusive flock(2) on the
 * directory itself, held by a run that appends to it or replaces it
 * (--force, compact) until it is done, so that two such runs take turns
 * and neither's rows are lost. Waits for a run that holds it (saying so
 * once on stderr), and gives up on a stop signal (RS_EXIT_INTERRUPTED).
 * Once locked, dir must still name the locked directory (a replacement
 * meanwhile: it is opened again). Returns 0 with *fd the lock (release:
 * close(*fd)), 1 when dir does not exist (*fd -1), -1 with err (not a
 * directory, a symbolic link: RS_EXIT_EXISTS; RS_EXIT_IO). Readers never
 * take it: they read the generations they opened (bucketdir.h). */
int rs_outdir_lock(const char *dir, int *fd, rs_error *err);

/* What a run that replaces an existing dir (compact, repair) does first:
 * puts back what a replacement killed between its renames left
 * (rs_outdir_recover), then takes dir's writer lock (rs_outdir_lock).
 * 0 with *fd the lock, or -1 with err (RS_EXIT_IO "DIR: no such
 * directory" when dir does not exist). */
int rs_outdir_recover_lock(const char *dir, int *fd, rs_error *err);

/* Removes the temporary directory and everything in it (symbolic links are
 * removed, never followed) and the side files' temporaries, releases and
 * zeroes *od. Does nothing on a
 * zeroed od, so it may be called after a commit or a failed begin. */
void rs_outdir_abort(rs_outdir *od);

#endif
