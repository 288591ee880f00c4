/* Reading a bucket or move directory through one descriptor
 * (ringshard/bucketdir.h). */
#define _GNU_SOURCE
#include "ringshard/bucketdir.h"
#include "ringshard/testhook.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* RINGSHARD_TEST_HOLD_DIR=FILE, a testing knob: once the manifest is read,
 * creates FILE and waits (up to 120 s) until something removes it, so that
 * a test can replace DIR at exactly that point and see that nothing of
 * the new generation is read. */
static void test_hold(void)
{
    const char *f = getenv("RINGSHARD_TEST_HOLD_DIR");
    if (!f || !*f)
        return;
    int fd = open(f, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    close(fd);
    struct timespec ms = {0, 1000000};
    for (int i = 0; i < 120000 && access(f, F_OK) == 0; i++)
        nanosleep(&ms, NULL);
}

int rs_bucketdir_open(rs_bucketdir *bd, const char *dir, rs_error *err)
{
    memset(bd, 0, sizeof *bd);
    rs_test_pause("dir-open");
    /* path is set first: rs_bucketdir_close closes fd only when it is */
    if (!(bd->path = strdup(dir)))
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    bd->fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (bd->fd < 0) {
        rs_error_set(err, RS_EXIT_IO, "%s: cannot open the directory: %s", dir, strerror(errno));
        goto fail;
    }
    struct stat st;
    if (fstat(bd->fd, &st) != 0) {
        rs_error_set(err, RS_EXIT_IO, "%s: cannot stat: %s", dir, strerror(errno));
        goto fail;
    }
    bd->dev = (uint64_t)st.st_dev;
    bd->ino = (uint64_t)st.st_ino;
    char *mpath = NULL;
    if (asprintf(&mpath, "%s/manifest.json", dir) < 0) {
        rs_error_set(err, RS_EXIT_IO, "out of memory");
        goto fail;
    }
    int rc = rs_manifest_readat(&bd->m, bd->fd, "manifest.json", mpath, bd->digest, err);
    free(mpath);
    if (rc != 0)
        goto fail;
    test_hold();
    size_t n = bd->m.nfiles;
    bd->paths = calloc(n + 1, sizeof *bd->paths);
    bd->names = calloc(n + 1, sizeof *bd->names);
    if (!bd->paths || !bd->names) {
        rs_error_set(err, RS_EXIT_IO, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        bd->names[i] = bd->m.files[i].file;
        if (asprintf(&bd->paths[i], "%s/%s", dir, bd->m.files[i].file) < 0) {
            bd->paths[i] = NULL;
            rs_error_set(err, RS_EXIT_IO, "out of memory");
            goto fail;
        }
    }
    return 0;
fail:
    rs_bucketdir_close(bd);
    return -1;
}

void rs_bucketdir_close(rs_bucketdir *bd)
{
    if (bd->path && bd->fd >= 0)
        close(bd->fd);
    for (size_t i = 0; bd->paths && i < bd->m.nfiles; i++)
        free(bd->paths[i]);
    free(bd->paths);
    free(bd->names);
    free(bd->path);
    rs_manifest_free(&bd->m);
    memset(bd, 0, sizeof *bd);
    bd->fd = -1;
}

int rs_bucketdir_inputs(const rs_bucketdir *bd, const size_t *idx, size_t n, rs_pipeline_opts *po,
                        const char ***names, const char ***paths, rs_error *err)
{
    size_t k = idx ? n : bd->m.nfiles;
    *names = malloc((k ? k : 1) * sizeof **names);
    *paths = malloc((k ? k : 1) * sizeof **paths);
    if (!*names || !*paths) {
        free(*names);
        free(*paths);
        *names = *paths = NULL;
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    }
    for (size_t j = 0; j < k; j++) {
        size_t i = idx ? idx[j] : j;
        (*names)[j] = bd->names[i];
        (*paths)[j] = bd->paths[i];
    }
    po->inputs = *paths;
    po->input_names = *names;
    po->input_dirfd = bd->fd;
    po->ninputs = k;
    return 0;
}

static int differs(const rs_bucketdir *bd, size_t i, const char *what, uint64_t found, uint64_t said,
                   rs_error *err)
{
    return rs_error_set(err, RS_EXIT_VERIFY, "%s: %llu %s, the manifest says %llu (the file does not match %s/manifest.json)",
                        bd->paths[i], (unsigned long long)found, what, (unsigned long long)said, bd->path);
}

int rs_bucketdir_check_file(const rs_bucketdir *bd, size_t i, const rs_input_stats *found, int check_crc,
                            const char *header, rs_error *err)
{
    const rs_manifest_file *f = &bd->m.files[i];
    if (found->rows != f->rows)
        return differs(bd, i, "rows", found->rows, f->rows, err);
    if (found->bytes != f->bytes)
        return differs(bd, i, "data bytes", found->bytes, f->bytes, err);
    if (check_crc && found->crc != f->crc32)
        return rs_error_set(err, RS_EXIT_VERIFY,
                            "%s: CRC-32 of the data %08x, the manifest says %08x (the file does not match "
                            "%s/manifest.json)",
                            bd->paths[i], found->crc, f->crc32, bd->path);
    if (found->size != f->file_bytes)
        return differs(bd, i, "bytes on disk", found->size, f->file_bytes, err);
    if (found->blank_lines)
        return differs(bd, i, "blank lines (ringshard writes none)", found->blank_lines, 0, err);
    const char *want = bd->m.header && !bd->m.keys_only ? bd->m.header_line : NULL;
    if (header && want && found->rows + found->blank_lines > 0 && strcmp(header, want) != 0)
        return rs_error_set(err, RS_EXIT_VERIFY, "%s: header '%.300s', the manifest says '%.300s'", bd->paths[i],
                            header, want);
    return 0;
}

int rs_bucketdir_replaced(const rs_bucketdir *bd)
{
    struct stat st;
    if (!bd->path || bd->fd < 0)
        return 0;
    return stat(bd->path, &st) != 0 || (uint64_t)st.st_dev != bd->dev || (uint64_t)st.st_ino != bd->ino;
}

void rs_bucketdir_explain(const rs_bucketdir *bd, rs_error *err)
{
    if (err->code != RS_EXIT_IO || !rs_bucketdir_replaced(bd))
        return;  /* still the directory that was opened: the error stands */
    char msg[sizeof err->msg];
    snprintf(msg, sizeof msg, "%s", err->msg);
    rs_error_clear(err);
    rs_error_set(err, RS_EXIT_IO,
                 "%s was replaced (or removed) while it was read, and the old generation's files with it: "
                 "nothing of the new one was read; run again (%s)",
                 bd->path, msg);
}
