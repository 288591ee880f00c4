/* util/filemode.h - the permission bits of every file and directory
 * ringshard creates: the one place that decides them.
 *
 * What ringshard writes for the user - data files, key indexes, manifests,
 * the --duplicates report, quarantine and metrics files, plans, SVG/HTML
 * reports, the timeline, the directories that hold them (an output
 * directory, a generation) and every temporary renamed into one of these -
 * is created as cp, sort -o, gzip and zstd create a new file: 0666 for a
 * file, 0777 for a directory, less the umask. The user's umask decides,
 * the same way for every command, so a directory written by bucket, grown
 * by bucket --append and dedup --append, merged by compact and rebuilt by
 * repair holds files of one mode.
 *
 * A run's private scratch - names of its own that it removes itself before
 * it ends: dedup's pass-1 buckets, their filtered copies, split parts and
 * report parts, a key index's sorted runs - is 0600 (0700 for dedup's
 * .pass1 directory) whatever the umask. Only the process that writes it
 * reads it back; it holds the input's rows, and a killed run leaves it
 * behind until the next run on the same output removes it: 0600 keeps
 * those rows to their owner however widely the outputs are shared, and
 * costs nothing, as no one else is meant to open them. (The pieces MPI
 * ranks write of a file for the user, copied into it then removed, are
 * created as that file is: they hold what it will hold.)
 *
 * An existing regular file replaced by a temporary renamed over it keeps
 * its permission bits (util/outfile.c: rs_tmp_create_beside), as cp and
 * sort -o keep a file they write into; a directory replaced by --force,
 * compact or repair is a new directory of new files and gets the modes
 * above. Internal to the library. */
#ifndef RINGSHARD_UTIL_FILEMODE_H
#define RINGSHARD_UTIL_FILEMODE_H

#include <stdio.h>
#include <sys/types.h>

#define RS_MODE_USER_FILE 0666     /* less the umask (open(2)) */
#define RS_MODE_USER_DIR 0777      /* less the umask (mkdir(2)) */
#define RS_MODE_SCRATCH_FILE 0600
#define RS_MODE_SCRATCH_DIR 0700

/* Who a created file is for: the user (what a run publishes or leaves at
 * a path it was given) or the run itself (scratch it removes). */
typedef enum { RS_FILE_USER = 0, RS_FILE_SCRATCH = 1 } rs_file_kind;

/* The mode to pass to open(2) or mkdir(2) for a file or directory of
 * kind. */
mode_t rs_file_mode(rs_file_kind kind);
mode_t rs_dir_mode(rs_file_kind kind);

/* open(path, flags | O_CREAT | O_CLOEXEC, rs_file_mode(kind)): flags say
 * the access and O_TRUNC, O_EXCL or O_APPEND. A descriptor, or -1 with
 * errno. */
int rs_file_create(const char *path, int flags, rs_file_kind kind);

/* rs_file_create as a stdio stream: how "w" or "wb" truncates, "a"
 * appends (what fopen(3) does with those, at kind's mode). NULL with
 * errno. */
FILE *rs_file_create_stream(const char *path, const char *how, rs_file_kind kind);

/* mkdir(path, rs_dir_mode(kind)): 0, or -1 with errno. */
int rs_dir_create(const char *path, rs_file_kind kind);

#endif
