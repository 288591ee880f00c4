/* ringshard/job_repair.h - the repair job: a bucket directory whose chain
 * of generations is damaged (bucketdir.h) made whole again from what is
 * intact, as `ringshard repair` runs it. Never run by another command. */
#ifndef RINGSHARD_JOB_REPAIR_H
#define RINGSHARD_JOB_REPAIR_H

#include <stddef.h>
#include <stdint.h>
#include "ringshard/error.h"

typedef struct {
    const char *dir;          /* the damaged bucket directory */
} rs_repair_job_opts;

typedef struct {
    int whole;                /* DIR had no damage: nothing done */
    int published;            /* 1 when DIR was rebuilt and the damaged one put aside */
    char *aside;              /* where the damaged directory is kept (malloc'd) */
    uint64_t generations;     /* generations kept: the base and the appended ones */
    uint64_t generation;      /* the rebuilt base's generation number (the newest kept) */
    uint64_t rows, files_after, file_bytes;  /* what the rebuilt DIR holds */
    uint64_t lost_generations;  /* listed generations not kept (the base counts as one) */
    uint64_t lost_files;      /* damaged data files not kept (their generations' other files are) */
    uint64_t kept_in_part;    /* damaged gzip or zstd files whose intact members are kept */
    uint64_t lost_rows;       /* the rows not kept: of those files, as their manifests say, and of the
                                 damaged members of these */
    int lost_unknown;         /* a generation not kept whose manifest cannot be read: its rows unknown */
    char **lines;             /* [nlines] what was found and what could not be kept, one line each */
    size_t nlines;
    size_t strays;            /* entries no manifest names: left in the damaged directory */
    size_t indexes_dropped;   /* key indexes not of their manifest's CRC-32: none carried then */
    size_t cut_back;          /* longer files cut back to what their manifests say (every row kept) */
    size_t rewritten;         /* files whose rows are intact but whose stored bytes are not what their manifests'
                                 stored_crc32 says: copied, that CRC-32 made again (every row kept) */
    size_t nnodes;            /* the nodes that lost rows: */
    char **node;              /* [nnodes] their names */
    uint64_t *node_kept, *node_lost;  /* [nnodes] each one's rows kept and not kept */
    size_t nagain;
    char **again;             /* [nagain] the inputs of what was not kept: an append of them again
                                 brings those rows back */
    double seconds;
} rs_repair_job_result;

/* Repairs o->dir under its writer lock: reads its chain with every damage
 * (rs_bucketdir_open_flags, TOLERANT), then every data file and key index
 * (rs_bucketdir_check_all: the definition of a damaged file that verify
 * agrees with), and keeps every row of every data file that is what its
 * manifest says: the base's and those of every generation whose manifest
 * reads and agrees with the base, after a gap or a broken "previous" link
 * too. A longer file whose first file_bytes are intact is cut back to them
 * (r->cut_back); a damaged key index costs no row: the new DIR has none
 * (r->indexes_dropped) and the next dedup --append builds them. A damaged
 * data file (of the base or of a generation) costs its own rows only
 * (r->lost_files, r->lost_rows): its generation's other files are kept,
 * and of a gzip or zstd file that holds one input's rows, its intact
 * members too (r->kept_in_part: only its damaged members' rows are lost;
 * its header line's member damaged costs no row); what is lost is
 * recorded on the inputs whose rows the file held in the new manifest
 * (inputs[].lost: every row of the node; inputs[].lost_rows: ranges of
 * them), the inputs are named (r->again), and an append of them again
 * writes only those rows, bringing back exactly them (the node gets no
 * key index: the next dedup --append builds it); r->node says each node's
 * rows kept and not kept. What is kept is written as one
 * compacted directory beside DIR (rs_compact_parts) and published with the
 * damaged DIR kept whole at "DIR.damaged.<N>" (the first N from 1 that
 * does not exist), DIR naming a whole directory at every instant
 * (rs_outdir_commit_aside). A directory without damage is left as it is
 * (r->whole). Returns 0, or -1 with err: RS_EXIT_DATA when a complete
 * directory an interrupted repair left is beside DIR (rs_outdir_recover),
 * RS_EXIT_USAGE (not a bucket directory), RS_EXIT_IO, RS_EXIT_INTERRUPTED;
 * DIR is left as it was then. */
int rs_repair_job_run(const rs_repair_job_opts *o, rs_repair_job_result *r, rs_error *err);

void rs_repair_job_result_free(rs_repair_job_result *r);

#endif
