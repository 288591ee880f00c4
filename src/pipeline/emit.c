/* src/pipeline/emit.c - the outputs: created, their header lines, and
 * each destination's rows of a batch gathered into one piece (only those
 * of the ranges only_rows names, for an append that brings back a
 * repair's damaged members), compressed into one member (or left plain)
 * and written, through the page cache with write-behind or by direct I/O
 * (see the top of pipeline.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include "ringshard/log.h"
#include "ringshard/outfile.h"
#include "pipeline/pipe.h"
#include "util/filemode.h"

/* writev(2) of all of iov[0..n), retried after short writes; consumes iov. */
static int writev_all(int fd, struct iovec *iov, int n)
{
    while (n > 0) {
        ssize_t w = writev(fd, iov, n > IOV_MAX ? IOV_MAX : n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        while (n > 0 && (size_t)w >= iov->iov_len) {
            w -= (ssize_t)iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (char *)iov->iov_base + w;
            iov->iov_len -= (size_t)w;
        }
    }
    return 0;
}

/* Writes pieces p[0..n) of lengths len[] (n <= RS_SEGMENTS: a piece per
 * parse group) to destination d's file, in one system call when it can.
 * 0, or -1 with err. */
static int dest_writev(const rs_pipeline_opts *o, dest_file *df, rs_direct *dx, uint32_t d, const void *const *p,
                       const size_t *len,
                       size_t n, rs_error *err)
{
    struct iovec iov[RS_SEGMENTS];
    size_t total = 0;
    /* the stored bytes' CRC-32 as they pass (ISA-L: tens of GB/s), so that
     * compact checks a file without decoding it */
    for (size_t i = 0; i < n; i++) {
        df->st.stored_crc = rs_crc32(df->st.stored_crc, p[i], len[i]);
        total += len[i];
    }
    if (dx) {
        if (rs_direct_write(dx, d, p, len, n, err) != 0)
            return -1;
        df->st.file_bytes += total;
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        iov[i].iov_base = (void *)p[i];
        iov[i].iov_len = len[i];
    }
    int fd = df->fd;
    if (fd < 0)
        fd = open(o->dest_paths[d], O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0 || writev_all(fd, iov, (int)n) != 0) {
        int e = errno;
        if (fd >= 0 && df->fd < 0)
            close(fd);
        return rs_error_set(err, RS_EXIT_IO, "%s: write failed: %s", o->dest_paths[d], strerror(e));
    }
    if (df->fd < 0)
        close(fd);
    df->st.file_bytes += total;
    return 0;
}

static int dest_write(const rs_pipeline_opts *o, dest_file *df, rs_direct *dx, uint32_t d, const char *p, size_t n,
                      rs_error *err)
{
    const void *piece[1] = {p};
    return dest_writev(o, df, dx, d, piece, &n, 1, err);
}

/* Plain output by direct I/O: destination d's rows of batch b gathered
 * into the staging arena's blocks and the file's carry, as rs_direct_write
 * would copy them there, without the piece in between. */
static int write_direct(const batch *b, scatter *sc, int G, uint32_t ndest, uint32_t d, uint64_t rows, dest_file *df,
                        rs_direct *dx, rs_error *err)
{
    size_t total = rs_pipe_gather_size(sc, G, ndest, d);
    rs_direct_room room;
    if (rs_direct_begin(dx, d, total, &room, err) != 0)
        return -1;
    rs_pipe_gather_split(b, sc, G, ndest, d, room.first, room.nfirst, room.rest);
    rs_pipe_scatter_done(sc, G, ndest, d);
    uint32_t crc = rs_crc32(0, room.first, room.nfirst);
    if (total > room.nfirst)
        crc = rs_crc32(crc, room.rest, total - room.nfirst);
    df->st.crc = rs_crc32_combine(df->st.crc, crc, total);
    df->st.stored_crc = rs_crc32_combine(df->st.stored_crc, crc, total);  /* plain: stored as they are */
    df->st.rows += rows;
    df->st.bytes += total;
    df->st.file_bytes += total;
    return rs_direct_commit(dx, d, &room, err);
}

/* With only_rows ranges for batch b's input and destination d: the rows
 * they hold gathered into rows_buf (*rows, *lines: theirs), the others
 * taken off the input's counts (in) as filtered. Here, in the ordered
 * write stage, because a row's ordinal is the number of the input's rows
 * routed to d before it, which only the batches taken in order tell (an
 * input is one unit: one producer reads it in order; ord: the output's
 * count, dest_ord). 1 when it did,
 * 0 when there are no ranges, -1 out of memory. */
static int gather_kept(const rs_pipeline_opts *o, const batch *b, scatter *sc, int G, uint32_t d, rs_buf *rows_buf,
                       dest_ord *ord, rs_input_stats *in, uint64_t *rows, uint64_t *lines)
{
    uint32_t input = b->input + o->input_base;
    const rs_row_range *const *per = o->only_rows ? o->only_rows[input] : NULL;
    if (!per || !per[d] || !ord)
        return 0;
    if (ord->input != input + 1)
        ord->input = input + 1, ord->n = 0;
    uint64_t base = ord->n, all = *rows;
    ord->n += all;
    size_t before = rs_pipe_gather_size(sc, G, o->ndest, d);
    if (rs_pipe_gather_kept(b, sc, G, o->ndest, d, base, per[d], rows_buf, rows) != 0)
        return -1;
    rs_pipe_scatter_done(sc, G, o->ndest, d);
    *lines = rs_count_line_ends(rows_buf->data, rows_buf->len);
    /* destinations of one batch are written by several threads */
    __atomic_fetch_sub(&in->rows, all - *rows, __ATOMIC_RELAXED);
    __atomic_fetch_sub(&in->bytes, (uint64_t)(before - rows_buf->len), __ATOMIC_RELAXED);
    __atomic_fetch_add(&in->filtered, all - *rows, __ATOMIC_RELAXED);
    return 1;
}

/* Writes destination d's rows of batch b (gathered from the groups'
 * entries into `rows`, a buffer of the thread's) as one gzip member, or as
 * they are, by direct I/O when dx is not NULL; with only_rows, those it
 * keeps (gather_kept; in: the batch's input's counts). Returns 0 or -1
 * with err. */
int rs_pipe_write_dest(const rs_pipeline_opts *o, const batch *b, scatter *sc, int G, uint32_t d, rs_deflater *dz,
                       rs_buf *rows_buf, rs_buf *member, dest_file *df, dest_ord *ord, rs_direct *dx,
                       rs_input_stats *in, rs_error *err)
{
    uint32_t ndest = o->ndest;
    uint64_t rows = 0, lines = 0;
    for (int g = 0; g < G; g++) {
        rows += sc->count[(size_t)g * ndest + d].rows;
        lines += sc->count[(size_t)g * ndest + d].lines;
    }
    if (!rows) {
        rs_pipe_scatter_done(sc, G, ndest, d);
        return 0;
    }
    int kept = gather_kept(o, b, sc, G, d, rows_buf, ord, in, &rows, &lines);
    if (kept < 0)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    if (in->dest_rows)   /* (one thread a destination of a batch, batches in order) */
        in->dest_rows[d] += rows;
    if (kept && !rows)
        return 0;
    if (!kept && dx && !o->compress)  /* gathered straight into the staging arena: one copy */
        return write_direct(b, sc, G, ndest, d, rows, df, dx, err);
    if (!kept && rs_pipe_gather(b, sc, G, ndest, d, rows_buf) != 0)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    if (!kept)
        rs_pipe_scatter_done(sc, G, ndest, d);
    /* One contiguous piece: a compressor fed the same bytes in other
     * pieces may emit other (valid) bytes, and the groups depend on the
     * thread count, which the output must not. */
    const void *piece[1] = {rows_buf->data};
    size_t total = rows_buf->len;
    uint32_t crc = 0;
    int rc = 0;
    if (o->compress) {
        member->len = 0;
        /* keys only: a quoted key's line ends are not its row's */
        int r = o->keys_only ? rs_deflater_member(dz, piece, &total, 1, rows, member, &crc)
                             : rs_deflater_member_lines(dz, piece, &total, 1, rows, lines, member, &crc);
        if (r != 0)
            return rs_error_set(err, RS_EXIT_IO, "%s: compressing %zu bytes of rows failed: %s", o->dest_paths[d],
                                total, rs_deflater_why());
        rc = dest_write(o, df, dx, d, member->data, member->len, err);
    } else {
        crc = rs_crc32(0, rows_buf->data, total);
        rc = dest_write(o, df, dx, d, rows_buf->data, total, err);
    }
    df->st.crc = rs_crc32_combine(df->st.crc, crc, total);
    df->st.rows += rows;
    df->st.bytes += total;
    return rc;
}

static void raise_fd_limit(uint32_t need)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)need + 64) {
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > (rlim_t)need + 64 ? (rlim_t)need + 64 : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

static int open_dests(const rs_pipeline_opts *o, dest_file *df, rs_error *err)
{
    raise_fd_limit(o->ndest);
    int reopen = 0;
    rs_file_kind kind = o->dest_scratch ? RS_FILE_SCRATCH : RS_FILE_USER;
    for (uint32_t d = 0; d < o->ndest; d++) {
        int fd = rs_file_create(o->dest_paths[d], O_WRONLY | O_TRUNC, kind);
        if (fd < 0 && errno == EMFILE && !reopen) {
            /* Past the open-file limit: from here on files are reopened
             * (O_APPEND) for each write. Give back enough descriptors for
             * every thread to hold one such file, plus the reader's. */
            rs_log(RS_LOG_INFO, "open-file limit reached at %u outputs: reopening the others per write", d);
            reopen = 1;
            for (uint32_t k = d > 64 ? d - 64 : 0; k < d; k++)
                if (df[k].fd >= 0) {
                    close(df[k].fd);
                    df[k].fd = -1;
                }
            fd = rs_file_create(o->dest_paths[d], O_WRONLY | O_TRUNC, kind);
        }
        if (fd < 0)
            return rs_error_set(err, RS_EXIT_IO, "%s: cannot create: %s", o->dest_paths[d], strerror(errno));
        if (reopen) {
            close(fd);
            fd = -1;
        }
        df[d].fd = fd;
    }
    return 0;
}

int rs_pipeline_header_bytes(const rs_pipeline_opts *o, const char *line, size_t len, rs_buf *out)
{
    /* Without a header (--no-header, or only empty inputs) gzip files still
     * start with a member, an empty one: a 0-byte file is not valid gzip. */
    if (!o->compress)
        return rs_buf_append(out, line, len);
    rs_deflater *dz = rs_compressor_new(o->compress, o->level, o->codec);
    const void *pieces[1] = {line};
    size_t lens[1] = {len};
    uint32_t crc;
    int rc = dz && rs_deflater_member(dz, pieces, lens, 1, len ? 1 : 0, out, &crc) == 0 ? 0 : -1;
    rs_deflater_free(dz);
    return rc;
}

/* Writes the header line into every output: its own gzip member, so a
 * header-only file is exactly that member. */
static int write_headers(const rs_pipeline_opts *o, const rs_buf *line, dest_file *df, rs_direct *dx, rs_error *err)
{
    rs_buf bytes = {0};
    if (rs_pipeline_header_bytes(o, line->data, line->len, &bytes) != 0) {
        rs_buf_free(&bytes);
        return rs_error_set(err, RS_EXIT_IO, "compressing the header line failed: %s",
                            o->compress ? rs_deflater_why() : "out of memory");
    }
    int rc = 0;
    for (uint32_t d = 0; d < o->ndest && rc == 0 && bytes.len; d++)
        rc = dest_write(o, &df[d], dx, d, bytes.data, bytes.len, err);
    rs_buf_free(&bytes);
    return rc;
}

/* Direct I/O for outputs that are kept (direct.h): plain ones, or all with
 * --direct-io on; never with --direct-io off, nor when the files are
 * reopened per write (the open-file limit), nor where the file system does
 * not take it. Its arena (a batch, and a block per file) and
 * the files' carries (a block each) come out of the 3 batches of the 8
 * that the other buffers leave (see the top): when they do not fit, the
 * run writes through the page cache. 0 when it is on. */
static int start_direct(pipe_state *s, run_state *r)
{
    const rs_pipeline_opts *o = s->o;
    const char *why = o->direct_io == RS_DIRECT_OFF ? "--direct-io off" : NULL;
    /* Compressed outputs are half the bytes for the page cache, and the
     * direct writes' per-request cost (a small write per file and batch)
     * then outweighs it: gzip output took 0.5 to 0.9 s longer by direct
     * I/O in interleaved runs of 0.1.0 (2-core AVX2 EPYC), plain output 1 s
     * less. */
    if (!why && o->direct_io == RS_DIRECT_AUTO && o->compress)
        why = "--direct-io auto: compressed outputs";
    if (!why && (uint64_t)r->ndest * 2 * RS_DIRECT_BLOCK > 2 * (uint64_t)s->cap)
        why = "--memory leaves too little room for a block per output";
    int *fds = why ? NULL : malloc((r->ndest ? r->ndest : 1) * sizeof *fds);
    for (uint32_t d = 0; fds && d < r->ndest && !why; d++)
        if ((fds[d] = r->df[d].fd) < 0)
            why = "outputs reopened per write (open-file limit)";
    if (!why && fds)
        r->dx = rs_direct_start(fds, o->dest_paths, r->ndest, s->cap + (size_t)r->ndest * RS_DIRECT_BLOCK, &why);
    free(fds);
    if (!r->dx) {
        rs_log(RS_LOG_INFO, "outputs: written through the page cache (%s)", why ? why : "out of memory");
        return -1;
    }
    rs_log(RS_LOG_INFO, "outputs: direct I/O (O_DIRECT, %d-byte blocks)", RS_DIRECT_BLOCK);
    return 0;
}

/* The destinations, the quarantine file (with its header line), the
 * compressors and the write-behind thread (or direct I/O). */
int rs_pipe_open_outputs(pipe_state *s, run_state *r, rs_error *err)
{
    const rs_pipeline_opts *o = s->o;
    if (o->dest_paths && open_dests(o, r->df, err) != 0)
        return -1;
    if (o->bad_rows == RS_BAD_ROW_QUARANTINE) {
        /* /dev/stdout may be a shell's `>> log`: "w" would empty it */
        int more = o->quarantine_continue;
        r->quarantine = rs_file_create_stream(o->quarantine, more || rs_outfile_in_place(o->quarantine) ? "a" : "w",
                                              RS_FILE_USER);
        if (!r->quarantine)
            return rs_error_set(err, RS_EXIT_IO, "%s: cannot create quarantine file: %s", quarantine_name(o),
                                strerror(errno));
        if (!more)
            fputs("input\tline\trecord\treason\trow\n", r->quarantine);
    }
    if (o->compress && o->dest_paths)
        for (int t = 0; t < r->T; t++)
            if (!(r->dz[t] = rs_compressor_new(o->compress, o->level, o->codec)))
                return rs_error_set(err, RS_EXIT_IO, "out of memory for the compressors");

    if (o->write_behind && o->dest_paths && start_direct(s, r) == 0)
        return 0;  /* direct writes reach the disk as they are made */
    if (o->write_behind && o->dest_paths) {
        int *fds = malloc((r->ndest ? r->ndest : 1) * sizeof *fds);
        for (uint32_t d = 0; fds && d < r->ndest; d++)
            fds[d] = r->df[d].fd;
        r->wb = fds ? rs_writeback_start(fds, r->ndest) : NULL;  /* NULL: none, no harm */
        free(fds);
        r->wb_lens = r->wb ? calloc(r->ndest ? r->ndest : 1, sizeof *r->wb_lens) : NULL;
    }
    return 0;
}

/* The header line of every destination (keys only: the key columns'
 * names), written once the first batch shows what it is; kept in
 * res->header_out. */
int rs_pipe_emit_headers(pipe_state *s, run_state *r, rs_error *err)
{
    const rs_pipeline_opts *o = s->o;
    rs_pipeline_result *res = s->res;
    rs_buf line = {0};
    if (o->keys_only && o->header && res->header) {
        for (uint32_t k = 0; k < s->keyspec.ncols; k++) {
            if (k)
                rs_buf_append(&line, &o->key_sep, 1);
            const char *name = res->header_fields[s->keyspec.cols[k]];
            rs_pipe_quote_key(&line, name, strlen(name), o->dialect.delim);
        }
        rs_buf_append(&line, "\n", 1);
    } else if (res->header) {
        rs_buf_append(&line, res->header, res->header_len);
        rs_buf_append(&line, "\n", 1);
    }
    if (line.len) {
        free(res->header_out);
        if (!(res->header_out = malloc(line.len))) {
            rs_buf_free(&line);
            return rs_error_set(err, RS_EXIT_IO, "out of memory");
        }
        memcpy(res->header_out, line.data, line.len);
        res->header_out_len = line.len;
    }
    int wr = o->no_header ? 0 : write_headers(o, &line, r->df, r->dx, err);
    rs_buf_free(&line);
    if (wr != 0)
        return -1;
    r->headers_written = 1;
    return 0;
}

