/* cluster/world.h - the processes of one run: a single process, or the ranks of
 * an MPI job (built with -DRINGSHARD_MPI=ON and started by mpirun or srun).
 *
 * The commands talk to the other ranks only through these few collective
 * calls, so a build without MPI compiles the same code with one rank. Every
 * rank must make the same collective calls in the same order: commands do
 * so by agreeing on each failure (rs_world_agree) instead of returning
 * early on one rank. */
#ifndef RS_CLUSTER_WORLD_H
#define RS_CLUSTER_WORLD_H

#include <stddef.h>
#include <stdint.h>
#include "ringshard/error.h"

/* Joins the MPI job when the process was started by an MPI launcher
 * (Open MPI's mpirun, or Slurm's srun with PMI/PMIx); otherwise, or when
 * built without MPI, or with RINGSHARD_NO_MPI=1 in the environment, the run
 * is a single process. Call once, first thing in main. */
void rs_world_init(int *argc, char ***argv);

/* Leaves the job (MPI_Finalize); a no-op for a single process. */
void rs_world_finish(void);

/* The command runs on this rank alone (one that does not divide its work,
 * on rank 0; the other ranks returned): from now on the collectives act as
 * for a single process and rs_world_size() is 1, so that shared code (the
 * input options' --files-from) need not know which kind of command calls it. */
void rs_world_solo(void);

int rs_world_rank(void);  /* 0 for a single process */
int rs_world_size(void);  /* 1 for a single process */

/* 1 if this rank runs under the same kernel as rank 0 (same boot id), so
 * that the files it writes are in the page cache rank 0 flushes; 0 if not
 * or unknown. Always 1 for a single process. */
int rs_world_same_kernel_as_root(void);

/* The collectives (no-ops or copies with one rank). Sizes are in elements. */
void rs_world_barrier(void);
void rs_world_bcast(void *buf, size_t bytes, int root);
void rs_world_sum_u64(uint64_t *v, size_t n);              /* in place, every rank gets the sums */
void rs_world_exscan_u64(const uint64_t *v, uint64_t *out, size_t n); /* out = sum over lower ranks (0 on rank 0) */
void rs_world_gather_u64(const uint64_t *v, size_t n, uint64_t *all);  /* all[r*n..] on every rank (allgather) */
/* Every rank's bytes, concatenated in rank order, on every rank: *all is
 * malloc'd (NULL when every rank sent nothing), lens[r] gets rank r's
 * length (lens has rs_world_size() entries). */
void rs_world_gather_bytes(const void *p, size_t n, char **all, size_t *lens);

/* CRC-32s of consecutive pieces: v[2i] is a CRC, v[2i+1] the length it
 * covers, for n pieces. Every rank gets, in place, the CRC and length of
 * the concatenation of all ranks' pieces in rank order. */
void rs_world_crc_concat(uint64_t *v, size_t n);

/* The failure agreement: every rank passes its own err (code 0: fine).
 * Returns 0 when every rank succeeded; otherwise -1 on every rank, with
 * err replaced by the failure of the lowest failing rank - the one whose
 * inputs come first, so the message is the one a single process would
 * have stopped at. */
int rs_world_agree(rs_error *err);

/* rs_world_agree the first time it is called with *done == 0 (then sets
 * *done); afterwards only reports err. Commands call it just before their
 * first collective step AND on their way out, so that a rank failing in
 * set-up (a node file it cannot read, say) meets the others in the same
 * agreement instead of leaving them waiting. */
int rs_world_agree_once(int *done, rs_error *err);

/* A group: members that run one job together and talk only through these
 * collectives, with the meaning of the rs_world_* calls above (sizes in
 * elements; every member makes the same calls in the same order). Two
 * kinds: the world (the MPI ranks, or one process) and the lanes of one
 * process (threads, cluster/lanes.h), so that the cluster code that divides a
 * run among ranks divides a rank's share among its lanes the same way. */
typedef struct rs_group rs_group;
struct rs_group {
    int rank, size;
    const char *tag;            /* "rank" or "lane": names the members' piece files */
    int same_kernel_as_root;    /* see rs_world_same_kernel_as_root */
    void (*barrier)(rs_group *g);
    void (*bcast)(rs_group *g, void *buf, size_t bytes, int root);
    void (*sum_u64)(rs_group *g, uint64_t *v, size_t n);
    void (*exscan_u64)(rs_group *g, const uint64_t *v, uint64_t *out, size_t n);
    void (*gather_bytes)(rs_group *g, const void *p, size_t n, char **all, size_t *lens);
    void (*crc_concat)(rs_group *g, uint64_t *v, size_t n);
    int (*agree)(rs_group *g, rs_error *err);
    void *impl;                 /* the kind's shared state */
};

/* Fills *g with the world (the rs_world_* calls; rank and size now). */
void rs_world_group(rs_group *g);

#endif
