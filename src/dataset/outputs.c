/* What the writers of a bucket or move directory share about its files
 * (ringshard/bucketdir.h): the data files' names, their paths in the
 * temporary directory, an input's checksum as the manifest writes it, and
 * the manifest written into the temporary directory. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ringshard/bucketdir.h"
#include "ringshard/deflate.h"
#include "ringshard/util.h"

char **rs_outdir_paths(const rs_outdir *od, const char *const *names, size_t n, rs_error *err)
{
    char **paths = calloc(n ? n : 1, sizeof *paths);
    for (size_t i = 0; paths && i < n; i++)
        if (!(paths[i] = rs_outdir_path(od, names[i]))) {
            rs_free_strings(paths, i);
            paths = NULL;
        }
    if (!paths)
        rs_error_set(err, RS_EXIT_IO, "out of memory");
    return paths;
}

void rs_checksum_text(uint64_t crc64, char out[RS_CHECKSUM_TEXT])
{
    snprintf(out, RS_CHECKSUM_TEXT, "crc64:%016" PRIx64, crc64);
}

int rs_outdir_manifest(const rs_outdir *od, const rs_manifest *m, rs_error *err)
{
    char *path = rs_outdir_path(od, "manifest.json");
    int rc = path ? rs_manifest_write(m, path, err) : rs_error_set(err, RS_EXIT_IO, "out of memory");
    free(path);
    return rc;
}
