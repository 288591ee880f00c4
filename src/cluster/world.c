/* cluster/world.c - single process or MPI ranks, behind one small interface.
 *
 * Only the cluster layer knows about MPI: the layers below (pipeline,
 * codecs, ring) are the same in both builds, and every rank runs the ordinary
 * threaded pipeline on its share of the inputs (see cluster.c). Threads
 * never call MPI (MPI_THREAD_FUNNELED is enough): OpenMP regions are
 * entered and left between collective calls. */
#include <stdlib.h>
#include <string.h>
#include "cluster/world.h"
#include "ringshard/deflate.h"
#include "rs_config.h"

#if RS_HAVE_MPI
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

/* world_on: collectives go to MPI; joined: MPI_Finalize is due (a solo
 * command turns the first off, not the second) */
static int world_on, joined, world_rank, world_size = 1, same_kernel_as_root = 1;

/* This kernel's boot id (36 characters), or "" if unreadable. */
static void boot_id(char id[64])
{
    memset(id, 0, 64);
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f) {
        if (!fgets(id, 64, f))
            id[0] = 0;
        fclose(f);
    }
}

/* Started by a launcher? Open MPI's mpirun sets OMPI_COMM_WORLD_SIZE; Slurm's
 * srun sets PMIX_RANK (PMIx) or PMI_RANK (PMI-2). A binary started by hand
 * stays a single process without touching MPI (an MPI singleton would
 * start helper daemons, and fail on machines without a network). */
static int launched(void)
{
    const char *off = getenv("RINGSHARD_NO_MPI");
    if (off && *off && strcmp(off, "0") != 0)
        return 0;
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK");
}

void rs_world_init(int *argc, char ***argv)
{
    if (!launched())
        return;
    int provided;
    MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    world_on = joined = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    /* Ranks under the kernel that rank 0 runs under share its page cache
     * (containers too): rank 0's fsyncs cover what they write there. */
    char mine[64], root[64];
    boot_id(mine);
    memcpy(root, mine, sizeof root);
    MPI_Bcast(root, sizeof root, MPI_CHAR, 0, MPI_COMM_WORLD);
    same_kernel_as_root = mine[0] != 0 && memcmp(mine, root, sizeof mine) == 0;
    if (world_rank != 0) {
        /* every rank parses the same command line and the commands report
         * on rank 0 alone: one complaint, one help text, one report */
        opterr = 0;
        if (!freopen("/dev/null", "w", stdout))
            fclose(stdout);
    }
}

void rs_world_finish(void)
{
    if (joined)
        MPI_Finalize();
    world_on = joined = 0;
}

void rs_world_solo(void)
{
    world_on = 0;
    world_size = 1;
}

int rs_world_rank(void) { return world_rank; }
int rs_world_size(void) { return world_size; }
int rs_world_same_kernel_as_root(void) { return same_kernel_as_root; }

void rs_world_barrier(void)
{
    if (world_on)
        MPI_Barrier(MPI_COMM_WORLD);
}

/* MPI counts are ints: long transfers go in pieces of at most 1 GiB. */
#define CHUNK ((size_t)1 << 30)

void rs_world_bcast(void *buf, size_t bytes, int root)
{
    if (!world_on)
        return;
    for (size_t off = 0; off < bytes; off += CHUNK) {
        size_t n = bytes - off < CHUNK ? bytes - off : CHUNK;
        MPI_Bcast((char *)buf + off, (int)n, MPI_BYTE, root, MPI_COMM_WORLD);
    }
}

void rs_world_sum_u64(uint64_t *v, size_t n)
{
    if (!world_on)
        return;
    for (size_t off = 0; off < n; off += CHUNK / 8) {
        size_t k = n - off < CHUNK / 8 ? n - off : CHUNK / 8;
        MPI_Allreduce(MPI_IN_PLACE, v + off, (int)k, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    }
}

void rs_world_exscan_u64(const uint64_t *v, uint64_t *out, size_t n)
{
    memset(out, 0, n * sizeof *out);
    if (!world_on)
        return;
    for (size_t off = 0; off < n; off += CHUNK / 8) {
        size_t k = n - off < CHUNK / 8 ? n - off : CHUNK / 8;
        MPI_Exscan(v + off, out + off, (int)k, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    }
    if (world_rank == 0)  /* MPI leaves rank 0's result undefined */
        memset(out, 0, n * sizeof *out);
}

void rs_world_gather_u64(const uint64_t *v, size_t n, uint64_t *all)
{
    if (!world_on) {
        memcpy(all, v, n * sizeof *v);
        return;
    }
    MPI_Allgather(v, (int)n, MPI_UINT64_T, all, (int)n, MPI_UINT64_T, MPI_COMM_WORLD);
}

void rs_world_gather_bytes(const void *p, size_t n, char **all, size_t *lens)
{
    int R = world_size;
    uint64_t mine = n, *ls = malloc((size_t)R * sizeof *ls);
    if (!ls)
        abort();
    rs_world_gather_u64(&mine, 1, ls);
    size_t total = 0;
    for (int r = 0; r < R; r++)
        lens[r] = ls[r], total += ls[r];
    free(ls);
    *all = NULL;
    if (total == 0)
        return;
    if (!(*all = malloc(total)))
        abort();
    if (!world_on) {
        memcpy(*all, p, n);
        return;
    }
    /* Broadcast each rank's bytes in turn: simple, and these are small
     * (headers, input statistics, error messages). */
    size_t off = 0;
    for (int r = 0; r < R; r++) {
        if (r == world_rank && lens[r])
            memcpy(*all + off, p, lens[r]);
        rs_world_bcast(*all + off, lens[r], r);
        off += lens[r];
    }
}

/* (crc, len) pairs: MPI passes the lower ranks' value as `in`, so the
 * operation is "in, then inout" - it is not commutative, and is created as
 * such so that MPI keeps rank order. */
static void crc_concat_op(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    uint64_t *a = in, *b = inout;
    for (int i = 0; i < 2 * *len; i += 2) {
        uint64_t crc = rs_crc32_combine((uint32_t)a[i], (uint32_t)b[i], b[i + 1]);
        b[i + 1] += a[i + 1];
        b[i] = crc;
    }
}

void rs_world_crc_concat(uint64_t *v, size_t n)
{
    if (!world_on)
        return;
    /* one element is a pair, so that MPI never splits a pair between two
     * calls of the operation when it cuts a long vector into segments */
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_UINT64_T, &pair);
    MPI_Type_commit(&pair);
    MPI_Op op;
    MPI_Op_create(crc_concat_op, 0, &op);
    for (size_t off = 0; off < n; off += CHUNK / 16) {
        size_t k = n - off < CHUNK / 16 ? n - off : CHUNK / 16;
        MPI_Allreduce(MPI_IN_PLACE, v + 2 * off, (int)k, pair, op, MPI_COMM_WORLD);
    }
    MPI_Op_free(&op);
    MPI_Type_free(&pair);
}

int rs_world_agree(rs_error *err)
{
    if (!world_on)
        return err->code ? -1 : 0;
    int mine = err->code ? world_rank : INT_MAX, first;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first == INT_MAX)
        return 0;
    MPI_Bcast(err, (int)sizeof *err, MPI_BYTE, first, MPI_COMM_WORLD);
    return -1;
}

#else /* a single process */

void rs_world_init(int *argc, char ***argv) { (void)argc, (void)argv; }
void rs_world_finish(void) {}
void rs_world_solo(void) {}
int rs_world_rank(void) { return 0; }
int rs_world_size(void) { return 1; }
int rs_world_same_kernel_as_root(void) { return 1; }
void rs_world_barrier(void) {}
void rs_world_bcast(void *buf, size_t bytes, int root) { (void)buf, (void)bytes, (void)root; }
void rs_world_sum_u64(uint64_t *v, size_t n) { (void)v, (void)n; }
void rs_world_exscan_u64(const uint64_t *v, uint64_t *out, size_t n) { (void)v, memset(out, 0, n * sizeof *out); }
void rs_world_gather_u64(const uint64_t *v, size_t n, uint64_t *all) { memcpy(all, v, n * sizeof *v); }

void rs_world_gather_bytes(const void *p, size_t n, char **all, size_t *lens)
{
    lens[0] = n;
    *all = NULL;
    if (n && (*all = malloc(n)))
        memcpy(*all, p, n);
    if (n && !*all)
        abort();
}

void rs_world_crc_concat(uint64_t *v, size_t n) { (void)v, (void)n; }
int rs_world_agree(rs_error *err) { return err->code ? -1 : 0; }

#endif

int rs_world_agree_once(int *done, rs_error *err)
{
    if (*done)
        return err->code ? -1 : 0;
    *done = 1;
    return rs_world_agree(err);
}

/* The world as a group: the calls above, with the group argument unused. */
static void w_barrier(rs_group *g) { (void)g, rs_world_barrier(); }
static void w_bcast(rs_group *g, void *buf, size_t bytes, int root) { (void)g, rs_world_bcast(buf, bytes, root); }
static void w_sum_u64(rs_group *g, uint64_t *v, size_t n) { (void)g, rs_world_sum_u64(v, n); }
static void w_exscan_u64(rs_group *g, const uint64_t *v, uint64_t *out, size_t n)
{
    (void)g, rs_world_exscan_u64(v, out, n);
}
static void w_gather_bytes(rs_group *g, const void *p, size_t n, char **all, size_t *lens)
{
    (void)g, rs_world_gather_bytes(p, n, all, lens);
}
static void w_crc_concat(rs_group *g, uint64_t *v, size_t n) { (void)g, rs_world_crc_concat(v, n); }
static int w_agree(rs_group *g, rs_error *err) { return (void)g, rs_world_agree(err); }

void rs_world_group(rs_group *g)
{
    *g = (rs_group){rs_world_rank(), rs_world_size(), "rank", rs_world_same_kernel_as_root(), w_barrier, w_bcast,
                    w_sum_u64, w_exscan_u64, w_gather_bytes, w_crc_concat, w_agree, NULL};
}
