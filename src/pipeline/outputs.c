/* What the jobs share about their outputs and options: a bucket or move
 * directory's data file names and paths and its manifest (bucket, dedup,
 * plan --emit), the pipeline options' defaults, and the thread check the
 * jobs make before they create an output. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ringshard/bucketdir.h"
#include "ringshard/deflate.h"
#include "ringshard/util.h"
#include "rs_config.h"

void rs_pipeline_opts_default(rs_pipeline_opts *po)
{
    memset(po, 0, sizeof *po);
    po->dialect.delim = ',';
    po->header = 1;
    po->key_sep = '|';
    po->memory = 1ULL << 30;
    po->compress = 1;
    po->level = 1;
}

const char *rs_data_ext(int compress)
{
    return compress == RS_COMPRESS_ZSTD ? ".csv.zst" : compress ? ".csv.gz" : ".csv";
}

char *rs_data_file(const char *a, const char *b, int compress)
{
    char *sa = rs_safe_filename(a), *sb = b ? rs_safe_filename(b) : NULL;
    char *name = NULL;
    if (sa && (sb || !b)) {
        size_t n = strlen(sa) + (sb ? strlen(sb) + 2 : 0) + strlen(rs_data_ext(compress)) + 1;
        if ((name = malloc(n)))
            snprintf(name, n, "%s%s%s%s", sa, sb ? "__" : "", sb ? sb : "", rs_data_ext(compress));
    }
    free(sa);
    free(sb);
    return name;
}

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

int rs_manifest_inputs(rs_manifest *m, const rs_pipeline_opts *po, const rs_pipeline_result *res, rs_error *err)
{
    /* the checksums' text lives after the entries, in the same block */
    size_t n = po->ninputs;
    m->ninputs = n;
    m->inputs = calloc(1, n * (sizeof *m->inputs + 2 * RS_CHECKSUM_TEXT) + 1);
    if (!m->inputs)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    char *text = (char *)(m->inputs + n);
    for (size_t i = 0; i < n; i++) {
        const rs_input_stats *in = &res->input[i];
        m->inputs[i] = (rs_manifest_input){.path = (char *)in->path, .size = in->size, .rows = in->rows,
                                           .bytes = in->bytes, .rejected = in->rejected,
                                           .blank_lines = in->blank_lines, .zero_padding = in->zero_padding};
        if (in->has_checksum) {
            m->inputs[i].checksum = text + i * RS_CHECKSUM_TEXT;
            rs_checksum_text(in->checksum, m->inputs[i].checksum);
        }
        if (in->has_content) {
            m->inputs[i].content = text + (n + i) * RS_CHECKSUM_TEXT;
            rs_checksum_text(in->content, m->inputs[i].content);
            m->inputs[i].content_size = in->content_size;
        }
    }
    return 0;
}

int rs_manifest_start(rs_manifest *m, const char *kind, const rs_ring *ring, const rs_pipeline_opts *po,
                          const rs_pipeline_result *res, size_t nfiles, rs_error *err)
{
    memset(m, 0, sizeof *m);
    m->schema = 1;
    m->kind = (char *)kind;
    m->tool_version = RS_VERSION;
    m->ring_description = (char *)rs_ring_description(ring);
    m->ring_fingerprint = (char *)rs_ring_fingerprint(ring);
    m->key = (char *)po->key;  /* NULL, the default: null in the manifest (column 1 by position) */
    m->key_sep = po->key_sep;
    m->delimiter = po->dialect.delim;
    m->header = po->header != 0;  /* the option: with empty inputs there is no header line (header_line NULL) */
    m->header_line = res->header;
    m->compress = po->compress;
    m->level = po->level;
    m->keys_only = po->keys_only;
    m->files = calloc(nfiles ? nfiles : 1, sizeof *m->files);
    if (!m->files || rs_manifest_inputs(m, po, res, err) != 0)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    m->rejected = res->rejected;
    m->seconds = res->seconds;
    return 0;
}

int rs_outdir_manifest(const rs_outdir *od, const rs_manifest *m, rs_error *err)
{
    char *path = rs_outdir_path(od, "manifest.json");
    int rc = path ? rs_manifest_write(m, path, err) : rs_error_set(err, RS_EXIT_IO, "out of memory");
    free(path);
    return rc;
}

static pthread_mutex_t probe_mu = PTHREAD_MUTEX_INITIALIZER;

static void *probe_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&probe_mu);   /* held by the prober until all are started */
    pthread_mutex_unlock(&probe_mu);
    return NULL;
}

int rs_pipeline_threads_ready(int threads, rs_error *err)
{
    pthread_t *t = calloc((size_t)threads, sizeof *t);
    if (!t)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    int made = 0, e = 0;
    pthread_mutex_lock(&probe_mu);
    while (made < threads && (e = pthread_create(&t[made], NULL, probe_main, NULL)) == 0)
        made++;
    pthread_mutex_unlock(&probe_mu);
    for (int i = 0; i < made; i++)
        pthread_join(t[i], NULL);
    free(t);
    if (made < threads)
        return rs_error_set(err, RS_EXIT_IO,
                            "cannot start the threads of -j %d (%d of them, with the write-behind thread): %s "
                            "(a limit on processes, ulimit -u?); nothing written",
                            threads, threads, strerror(e));
    /* libgomp keeps its threads: later regions of as many reuse them */
#pragma omp parallel num_threads(threads)
    {
        (void)0;
    }
    return 0;
}
