/* src/dataset/runs.h - which inputs' rows a data file holds, in order
 * (runs.c): for repair's salvage and compact's merge. */
#ifndef RS_DATASET_RUNS_H
#define RS_DATASET_RUNS_H

#include <stddef.h>
#include <stdint.h>
#include "ringshard/dataset.h"

/* Where file k's manifest's inputs start among bd's inputs as a
 * compacted manifest numbers them (the base's, then each generation's:
 * rs_bucketdir_input_records, the lost book), and *n how many. */
size_t rs_bucketdir_file_inputs(const rs_bucketdir *bd, size_t k, size_t *n);

/* The runs of bd's file k (runs.c): the inputs whose rows it holds, in
 * its order, as ranges of their rows on its node, inputs numbered as
 * rs_bucketdir_file_inputs does. From its manifest's "runs" when
 * recorded; else, when one input of its manifest has rows on its node,
 * that input's rows it holds (rs_manifest_held). *v malloc'd (the
 * caller's to free); *n 0 when not known (rows of several inputs, no
 * record). 0, or -1 out of memory. */
int rs_bucketdir_file_runs(const rs_bucketdir *bd, size_t k, rs_manifest_run **v, size_t *n);

/* The file rows [p, q) of runs v[0..n) (numbered from 0 in the runs'
 * order) appended to *out (*nout of them, room for *cap; a run that goes
 * on from the last one is joined to it). 0, or -1 out of memory. */
int rs_runs_select(const rs_manifest_run *v, size_t n, uint64_t p, uint64_t q, rs_manifest_run **out, size_t *nout,
                   size_t *cap);

/* The rows of v[0..n) but the file rows cut[] ([from, to) pairs, ncut of
 * them, in order) appended to *out, as rs_runs_select. */
int rs_runs_without(const rs_manifest_run *v, size_t n, const uint64_t *cut, size_t ncut, rs_manifest_run **out,
                    size_t *nout, size_t *cap);

#endif
