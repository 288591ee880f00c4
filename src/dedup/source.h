/* dedup/source.h - a dedup input as the dataset layer's row reader
 * (dataset/rows.h) reads it. */
#ifndef RS_DEDUP_SOURCE_H
#define RS_DEDUP_SOURCE_H

#include "dataset/rows.h"
#include "ringshard/dedup.h"

/* The rows of o's input: its dialect, header and codec, the file under
 * o->in_dirfd and its further parts when o names one (o->in_name), and
 * as its keys the key spec's (the whole row with RS_DEDUP_BY_ROW). The
 * result points into o, which must outlive it. */
rs_rows_src rs_dedup_rows_src(const rs_dedup_opts *o);

#endif
