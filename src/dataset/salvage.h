/* src/dataset/salvage.h - what repair keeps of a damaged data file and the
 * record of what it could not keep (salvage.c), for the repair job. */
#ifndef RS_DATASET_SALVAGE_H
#define RS_DATASET_SALVAGE_H

#include <stddef.h>
#include <stdint.h>
#include "ringshard/dataset.h"

/* The lost records of every input of the new manifest, in its order (the
 * base's inputs, then each generation's): each one's "lost" and
 * "lost_rows", the old ones and those this repair adds. */
typedef struct {
    size_t n;
    const rs_manifest_input **entry; /* [n] bd's entries */
    char ***lost;                    /* [n] node names (bd's), malloc'd arrays */
    size_t *nlost;
    rs_manifest_rows **lost_rows;    /* [n] malloc'd arrays (node names: bd's) */
    size_t *nlost_rows;
} rs_lost_book;

/* The book of bd's inputs as their manifests say. 0, or -1 out of memory. */
int rs_lost_book_init(rs_lost_book *b, const rs_bucketdir *bd);
void rs_lost_book_free(rs_lost_book *b);

/* What rs_salvage_file decided of one file. */
typedef struct {
    uint64_t rows_lost, rows_kept;
    size_t members, members_lost;  /* with keep->n: its data members, and those not kept */
    int head_lost;                 /* its header member not kept (the header comes from the manifest) */
    char *inputs;                  /* the inputs an append of which brings the rows back (malloc'd) */
    char *ranges;                  /* "rows A to B, C to D of PATH; ...": their rows lost, numbered from 0
                                      among their rows on the node, when not all (malloc'd; NULL: all) */
    const char **paths;            /* [npaths] those inputs' paths (bd's; malloc'd array) */
    size_t npaths;
} rs_salvage;

/* Damaged data file k of bd: its intact members into keep (keep->n 0:
 * none kept, the file is lost whole), and the rows it loses added to the
 * book, as ranges of the rows of the one input whose rows it holds
 * (member by member: rs_bucketdir_members) or, when the file is plain,
 * missing, its chain of members unreadable, or it holds rows of several
 * inputs, each input's rows it held (rs_manifest_held). 0, or -1 out of
 * memory. */
int rs_salvage_file(const rs_bucketdir *bd, size_t k, rs_lost_book *b, rs_compact_keep *keep, rs_salvage *out);

void rs_compact_keep_free(rs_compact_keep *keep);

#endif
