/* ringshard/job_cat.h - the cat job: the rows of some nodes of a bucket
 * directory, across its generations, as one CSV stream, as `ringshard
 * cat` runs it. */
#ifndef RINGSHARD_JOB_CAT_H
#define RINGSHARD_JOB_CAT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "ringshard/error.h"
#include "ringshard/reader.h"

typedef struct {
    const char *dir;             /* the bucket directory */
    const char *const *nodes;    /* the nodes, in the order given */
    size_t nnodes;               /* 0: every node, in base file order */
    FILE *out;                   /* where the stream goes */
    const char *out_name;        /* out's name in messages */
    int compress;                /* RS_COMPRESS_*: the stream as written (0: plain CSV) */
    int level;                   /* with compress */
    rs_codec_choice codec;
    int threads;                 /* files decoded at once (-j; 0: OMP_NUM_THREADS, else the CPUs) */
} rs_cat_job_opts;

#define RS_CAT_THREADS_MAX 256

typedef struct {
    uint64_t nodes, files, generations, rows, bytes;  /* nodes and files read, DIR's generations, data
                                                        rows and bytes written */
    int threads;                 /* the threads that decoded (at most the files) */
    uint64_t peak_block_bytes;   /* the most bytes of decoded rows held at once (see cat.c) */
} rs_cat_job_result;

/* Writes to o->out the header line (when DIR has one; once) and then, for
 * each node, its rows: its base file's, then each segment's in generation
 * order, decompressed (each file's header line left out; a segment of an
 * older version has none) - what a one-shot bucket run over the same
 * inputs holds in that node's file. Every file is checked as it is read
 * against its manifest entry (rows, data bytes, CRC-32 of the data, size
 * on disk) and its header line against the manifest's. Returns 0, or -1
 * with err: RS_EXIT_USAGE (a node DIR has no file of, named with the
 * nearest node name; not a bucket directory), RS_EXIT_IO, RS_EXIT_DATA (a
 * manifest or file that cannot be read), RS_EXIT_VERIFY (a file that
 * differs from its manifest, named); what was written by then stays
 * written (the caller publishes or removes it). The files are decoded
 * o->threads at a time and written in order: the stream, and what is out
 * before an error, are the same bytes for any o->threads; the rows held
 * decoded are bounded (about 5 MiB a thread: cat.c). */
int rs_cat_job_run(const rs_cat_job_opts *o, rs_cat_job_result *r, rs_error *err);

#endif
