/* src/dataset/salvage.h - what repair keeps of a damaged data file and the
 * record of what it could not keep (salvage.c), for the repair job. */
#ifndef RS_DATASET_SALVAGE_H
#define RS_DATASET_SALVAGE_H

#include <stddef.h>
#include <stdint.h>
#include "dataset/runs.h"
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
 * book, as ranges of the rows of the inputs whose rows they held (member
 * by member: rs_bucketdir_members, mapped by rs_bucketdir_file_runs) or,
 * when the file is plain, missing, its chain of members unreadable, or
 * its runs not known, each input's rows it held (rs_manifest_held). 0,
 * or -1 out of memory. */
int rs_salvage_file(const rs_bucketdir *bd, size_t k, rs_lost_book *b, rs_compact_keep *keep, rs_salvage *out);

/* What a repair keeps of a damaged directory, file by file
 * (repair_plan.c): the decisions, which the repair job reports and
 * publishes (rs_compact_parts with rs_repair_plan_takes). */
typedef struct {
    rs_bucketdir_verdict *files, *indexes;  /* [bd.nfiles] rs_bucketdir_check_all's */
    uint8_t *twice;           /* [bd.nfiles] 1: a later entry of a file its manifest lists twice: not carried
                                 (its rows are the first entry's) */
    size_t ntwice;
    uint8_t *lose;            /* [bd.nfiles] 1: a damaged data file: its rows are not kept (but its intact
                                 members', keep[k]) */
    rs_compact_keep *keep;    /* [bd.nfiles] what is kept of a damaged file (n 0: nothing) */
    rs_salvage *sv;           /* [bd.nfiles] and what it loses */
    rs_lost_book book;        /* the new manifest's lost records */
    size_t nfiles;            /* bd.nfiles */
    size_t nlost;             /* damaged data files */
    int base_lost;            /* a base file is lost: its node's merged file starts with the header */
    size_t chain;             /* damages of the chain (bd.damage that name no file) */
    size_t indexes_damaged;   /* damaged key indexes: the new DIR carries none */
    char **cut;               /* names of the longer files cut back, sorted */
    size_t ncut;
    char **reread;            /* names of the files rewritten (rows intact, stored bytes not), sorted */
    size_t nreread;
} rs_repair_plan;

/* Reads every file of bd (rs_bucketdir_check_all) and decides what a
 * repair keeps of each: a damaged data file is lost but for its intact
 * members (rs_salvage_file), its generation's other files are kept; a
 * longer file whose first file_bytes are intact is cut back to them; a
 * file whose rows are intact but whose stored bytes changed is read again;
 * a second entry of a file (a manifest that lists it twice) is not carried.
 * *p is the caller's to free (rs_repair_plan_free). 0, or -1 with err. */
int rs_repair_plan_make(const rs_bucketdir *bd, rs_repair_plan *p, rs_error *err);

/* Whether p changes anything: a damage of the chain, a file lost, cut or
 * read again, a damaged key index. */
int rs_repair_plan_changes(const rs_repair_plan *p);

/* How the new DIR takes each file of bd (take[bd.nfiles]: RS_TAKE_*): a
 * lost file left out or its members kept, a longer file cut back, a file
 * read again, the others whole. */
void rs_repair_plan_takes(const rs_bucketdir *bd, const rs_repair_plan *p, uint8_t *take);

void rs_repair_plan_free(rs_repair_plan *p);

void rs_compact_keep_free(rs_compact_keep *keep);

#endif
