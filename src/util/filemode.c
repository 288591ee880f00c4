/* util/filemode.c - creating files and directories with the modes
 * util/filemode.h decides. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include "util/filemode.h"

mode_t rs_file_mode(rs_file_kind kind)
{
    return kind == RS_FILE_SCRATCH ? RS_MODE_SCRATCH_FILE : RS_MODE_USER_FILE;
}

mode_t rs_dir_mode(rs_file_kind kind)
{
    return kind == RS_FILE_SCRATCH ? RS_MODE_SCRATCH_DIR : RS_MODE_USER_DIR;
}

int rs_file_create(const char *path, int flags, rs_file_kind kind)
{
    return open(path, flags | O_CREAT | O_CLOEXEC, rs_file_mode(kind));
}

FILE *rs_file_create_stream(const char *path, const char *how, rs_file_kind kind)
{
    int append = how[0] == 'a';
    int fd = rs_file_create(path, O_WRONLY | (append ? O_APPEND : O_TRUNC), kind);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, append ? "a" : "w");
    if (f == NULL) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return f;
}

int rs_dir_create(const char *path, rs_file_kind kind)
{
    return mkdir(path, rs_dir_mode(kind));
}
