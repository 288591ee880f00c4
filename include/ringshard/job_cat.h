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
} rs_cat_job_opts;

typedef struct {
    uint64_t nodes, files, generations, rows, bytes;  /* nodes and files read, DIR's generations, data
                                                        rows and bytes written */
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
 * written (the caller publishes or removes it). */
int rs_cat_job_run(const rs_cat_job_opts *o, rs_cat_job_result *r, rs_error *err);

#endif
