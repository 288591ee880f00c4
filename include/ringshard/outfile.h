/* ringshard/outfile.h - a file published whole: written to a temporary
 * beside it and renamed over it only once complete and fsync'd, so that a
 * run that fails, or is killed at any instruction, leaves a previous file
 * as it was (plan --json/--arcs/--pairs/--svg/--html, the reports, the
 * quarantine file). The temporary is "<stem>.ringshard-tmp.<pid>.<hex>"
 * in the same directory; a killed run's is removed by the next run that
 * publishes the same path. */
#ifndef RINGSHARD_OUTFILE_H
#define RINGSHARD_OUTFILE_H

#include <stdio.h>
#include "ringshard/error.h"

typedef struct {
    char *final;   /* what is replaced: path, through symbolic links (rs_tmp_final_path) */
    char *tmp;     /* what is written (== final when in_place) */
    FILE *f;       /* rs_outfile_open's stream, or NULL */
    int in_place;  /* path is not a regular file (a device, a FIFO): written as is */
} rs_outfile;

/* 1 if path is written in place (appended to) rather than replaced: it
 * exists and is not a regular file (a FIFO, a device), or it names a
 * descriptor (/dev/stdout, /dev/stderr, /dev/fd/N, anything under /proc/:
 * it may be a shell's redirection into a file, which must be written, not
 * replaced, nor emptied). Else 0. */
int rs_outfile_in_place(const char *path);

/* Creates the temporary for path (empty) and fills *of; the caller writes
 * of->tmp by name, then calls rs_outfile_commit or rs_outfile_abort. A path
 * that rs_outfile_in_place says so of is written in place: of->tmp is
 * path. Through a symbolic link (a chain of them) the file it leads to is
 * replaced, its temporary beside it, and the link stays; a dangling link's
 * target is created. The replacement keeps a replaced file's mode.
 * 0, or -1 with err (RS_EXIT_IO, "<path>: cannot create: <reason>"). */
int rs_outfile_reserve(rs_outfile *of, const char *path, rs_error *err);

/* A stream on of->tmp for writing: appended to when in place, and
 * "/dev/stdout" as a copy of descriptor 1 (a socket, such as a service's
 * journal, cannot be opened by that name). NULL with errno. */
FILE *rs_outfile_stream(const rs_outfile *of);

/* rs_outfile_reserve, then opens the temporary for writing: the stream,
 * or NULL with err. */
FILE *rs_outfile_open(rs_outfile *of, const char *path, rs_error *err);

/* Flushes and closes the stream (if any), fsyncs the temporary, renames it
 * over the target and fsyncs the directory. 0, or -1 with err: a failure
 * before the rename (a write error, a full disk) leaves the target as it
 * was and removes the temporary; a failed fsync of the directory after it
 * says the file is written but may not be durable. *of is released either
 * way. */
int rs_outfile_commit(rs_outfile *of, rs_error *err);

/* Closes the stream, removes the temporary, releases *of; the target is
 * untouched. Does nothing on a zeroed *of. */
void rs_outfile_abort(rs_outfile *of);

#endif
