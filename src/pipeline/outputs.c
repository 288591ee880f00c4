/* What the jobs share about their outputs and options: a bucket or move
 * directory's manifest started from a finished run (bucket, dedup, plan
 * --emit), a directory's files as a run's inputs and checked against what
 * the run found, the pipeline options' defaults, and the thread check the
 * jobs make before they create an output. The directory's format itself
 * is the dataset layer's (ringshard/dataset.h). */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ringshard/buf.h"
#include "ringshard/pipeline.h"
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
    rs_shaping sh = {po->key, po->key_sep, po->dialect.delim, po->header, po->compress, po->level, po->keys_only};
    rs_manifest_shape(m, kind, rs_ring_description(ring), rs_ring_fingerprint(ring), &sh, res->header);
    m->files = calloc(nfiles ? nfiles : 1, sizeof *m->files);
    if (!m->files || rs_manifest_inputs(m, po, res, err) != 0)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    m->rejected = res->rejected;
    return 0;
}

int rs_pipeline_wants_input_rows(const rs_pipeline_opts *po)
{
    return po->ninputs > 1 && po->ndest && po->ninputs <= RS_RUNS_MAX_CELLS / po->ndest;
}

/* The ranges of input i's rows routed to d that the run writes (only_rows;
 * NULL: every one), and how many (up to the sentinel). */
static const rs_row_range *written_ranges(const rs_pipeline_opts *po, size_t i, uint32_t d, size_t *n)
{
    const rs_row_range *r = po->only_rows && po->only_rows[i] ? po->only_rows[i][d] : NULL;
    for (*n = 0; r && r[*n].from != UINT64_MAX; (*n)++)
        ;
    return r;
}

/* File d's runs (the rows of each input written to it, in input order),
 * into f as rs_manifest_file_take_runs says. 0, or -1 out of memory. */
static int runs_of_dest(const rs_pipeline_opts *po, const rs_pipeline_result *res, uint32_t d, rs_manifest_file *f)
{
    static const rs_row_range every = {0, UINT64_MAX};
    rs_manifest_run *v = NULL;
    size_t n = 0, cap = 0;
    int rc = 1;
    for (size_t i = 0; rc == 1 && i < po->ninputs; i++) {
        uint64_t c = res->input[i].dest_rows[d];
        size_t nr;
        const rs_row_range *r = written_ranges(po, i, d, &nr);
        if (c)
            rc = rs_runs_take(r ? r : &every, r ? nr : 1, i, c, 0, &v, &n, &cap);
    }
    if (rc == 1)
        rs_manifest_file_take_runs(f, v, n);
    else
        free(v);
    return rc < 0 ? -1 : 0;
}

int rs_manifest_of_run(rs_manifest *m, const char *kind, const rs_ring *ring, const rs_pipeline_opts *po,
                       const rs_pipeline_result *res, char *const *names, int segments, rs_error *err)
{
    if (rs_manifest_start(m, kind, ring, po, res, po->ndest, err) != 0)
        return -1;
    /* each segment starts with the header line, as the base files do:
     * the bytes rs_pipeline_header_bytes gave every output */
    uint64_t header_bytes = 0;
    if (segments && !po->no_header && res->header_out) {
        rs_buf hb = {0};
        if (rs_pipeline_header_bytes(po, res->header_out, res->header_out_len, &hb) != 0) {
            rs_buf_free(&hb);
            return rs_error_set(err, RS_EXIT_IO, "out of memory");
        }
        header_bytes = hb.len;
        rs_buf_free(&hb);
        m->segment_header = 1;
    }
    const rs_nodes *nodes = rs_ring_nodes(ring);
    for (uint32_t d = 0; d < po->ndest; d++) {
        const rs_dest_stats *ds = &res->dest[d];
        if (segments && ds->rows == 0)
            continue;
        m->files[m->nfiles++] = (rs_manifest_file){.file = names[d], .node = nodes->names[d], .rows = ds->rows,
                                                   .bytes = ds->bytes, .file_bytes = ds->file_bytes,
                                                   .header_bytes = header_bytes, .crc32 = ds->crc,
                                                   .stored_crc32 = ds->stored_crc, .has_stored_crc32 = 1};
        m->bytes += ds->bytes;   /* data bytes written (keys only: less than read) */
        if (res->input_rows && runs_of_dest(po, res, d, &m->files[m->nfiles - 1]) != 0)
            return rs_error_set(err, RS_EXIT_IO, "out of memory");
    }
    m->rows = res->rows;
    return 0;
}

void rs_manifest_of_run_free(rs_manifest *m)
{
    for (size_t i = 0; m->files && i < m->nfiles; i++)
        free(m->files[i].runs);
    free(m->inputs);
    free(m->files);
    m->inputs = NULL, m->files = NULL, m->ninputs = m->nfiles = 0;
}

int rs_bucketdir_inputs(const rs_bucketdir *bd, const size_t *idx, size_t n, rs_pipeline_opts *po,
                        rs_bucketdir_sel *sel, rs_error *err)
{
    size_t k = idx ? n : bd->nfiles;
    memset(sel, 0, sizeof *sel);
    sel->names = malloc((k ? k : 1) * sizeof *sel->names);
    sel->paths = malloc((k ? k : 1) * sizeof *sel->paths);
    sel->headerless = malloc(k ? k : 1);
    sel->vouched = malloc((k ? k : 1) * sizeof *sel->vouched);
    sel->nmanifests = bd->ngens + 1;
    sel->manifests = calloc(sel->nmanifests, sizeof *sel->manifests);
    if (!sel->names || !sel->paths || !sel->headerless || !sel->vouched || !sel->manifests) {
        rs_bucketdir_sel_free(sel);
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    }
    for (size_t j = 0; j < k; j++) {
        size_t i = idx ? idx[j] : j;
        sel->names[j] = bd->names[i];
        sel->paths[j] = bd->paths[i];
        sel->headerless[j] = bd->headerless[i];
        size_t g = bd->file_slot[i] == SIZE_MAX ? 0 : bd->file_slot[i] + 1;
        if (!sel->manifests[g] && !(sel->manifests[g] = rs_bucketdir_manifest_of(bd, i))) {
            rs_bucketdir_sel_free(sel);
            return rs_error_set(err, RS_EXIT_IO, "out of memory");
        }
        sel->vouched[j] = sel->manifests[g];
    }
    po->inputs = sel->paths;
    po->input_names = sel->names;
    po->input_headerless = sel->headerless;
    po->input_vouched = sel->vouched;
    po->header_ref = bd->m.header ? bd->m.header_line : NULL;
    po->input_dirfd = bd->fd;
    po->ninputs = k;
    return 0;
}

void rs_bucketdir_sel_free(rs_bucketdir_sel *sel)
{
    free(sel->names);
    free(sel->paths);
    free(sel->headerless);
    free(sel->vouched);
    for (size_t g = 0; sel->manifests && g < sel->nmanifests; g++)
        free(sel->manifests[g]);
    free(sel->manifests);
    memset(sel, 0, sizeof *sel);
}

int rs_bucketdir_check_file(const rs_bucketdir *bd, size_t i, const rs_input_stats *found, int check_crc,
                            const char *header, rs_error *err)
{
    rs_bucketdir_found f = {.size = found->size, .rows = found->rows, .bytes = found->bytes,
                            .blank_lines = found->blank_lines, .crc = found->crc};
    return rs_bucketdir_check_found(bd, i, &f, check_crc, header, err);
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
