/* jobs/append.h - adding a generation to a bucket directory: the steps
 * that bucket --append and dedup --append share.
 *
 * A bucket directory grows by GENERATIONS (docs/format-generations.md, "Appendable
 * bucket directories"): the base (DIR/manifest.json and DIR/<node>.csv.gz,
 * as `bucket` writes it) and then DIR/g<N>/ for each append, holding the
 * append's manifest and a segment (header line first) for each node that got rows.
 * An append:
 *
 *   1. takes DIR's writer lock (rs_outdir_lock) - two appends take turns -
 *      and opens DIR as a reader does (rs_bucketdir: the base and every
 *      generation, their digests chained);
 *   2. checks what shapes the files against the base manifest (ring, key,
 *      delimiter, header, compression, level, keys only: rs_append_check);
 *   3. drops the inputs whose content DIR has already ingested
 *      (rs_append_seen: by size, then by CRC-64 of the stored bytes or of
 *      the content); after the run, before publishing, what could only be
 *      known by reading it (rs_append_seen_after: the run is done again
 *      without an input found held);
 *   4. stages g<N> in a temporary directory beside DIR (rs_append_stage),
 *      where the job writes the segments;
 *   5. writes g<N>/manifest.json, naming the previous generation's
 *      manifest digest, and publishes: one rename of g<N> into DIR
 *      (rs_append_publish). A schema-1 DIR gets its base manifest rewritten as
 *      schema 2 (the same content) just before, in its own rename.
 *
 * Nothing in DIR changes before that rename (but the schema-1 upgrade,
 * which describes the same rows), so a failed or killed append leaves DIR
 * as it was, and readers that opened DIR before it never see g<N>.
 *
 * Under MPI every function is collective: rank 0 holds the lock, decides
 * and publishes; every rank opens DIR at rank 0's state and stages into the
 * same temporary directory. What a generation is as a format (its name,
 * the checks that DIR can take one more, its manifest and the chain's
 * digest) is the dataset layer's (ringshard/dataset.h: rs_gen_next,
 * rs_gen_write_manifests, rs_gen_first: the prefix rs_gen_); this file
 * (the prefix rs_append_) adds the collectives, the lock's rank, the job's
 * options and inputs, and the one driver of the steps above that every
 * job that appends calls (rs_append_run: what differs, as callbacks). */
#ifndef RS_JOBS_APPEND_H
#define RS_JOBS_APPEND_H

#include <stdint.h>
#include "ringshard/dataset.h"
#include "ringshard/job_bucket.h"  /* rs_on_seen, RS_GIVEN_* */
#include "ringshard/pipeline.h"
#include "ringshard/ring.h"


typedef struct {
    const char *dir;
    int lockfd;            /* rank 0: DIR's writer lock, when locked */
    int locked;
    int opened;            /* bd is open */
    rs_bucketdir bd;       /* DIR under the lock: its base and generations */
    uint64_t gen;          /* the generation being added (bd.last_gen + 1) */
    char gen_name[16];     /* its directory's name */
    rs_outdir od;          /* the staging directory beside DIR */
    int staged;
    char *gen_tmp;         /* od.tmp/<gen_name>: where the segments go */
    char *mpath;           /* DIR/manifest.json, for messages */
    uint64_t files_after;  /* once published: DIR's data files, every generation's */
    uint64_t gens_after;   /* and its generations, the base's included */
    /* inputs that bring back rows a repair could not keep (restore.c) */
    const rs_manifest_input **restore_of;  /* [the job's inputs] rs_append_seen: DIR's entry of the same
                                              input, whose lost nodes it brings back; NULL: none */
    uint8_t **only;        /* [nonly] rs_append_restoring: per input of the run, NULL or its nodes kept */
    char ***restored;      /* [nonly] the nodes of it brought back whole (the ring's names), NULL-terminated */
    rs_row_range ***rows;  /* [nonly] NULL, or [ndest]: the ranges of a node's rows brought back (sorted,
                              ending with from UINT64_MAX: po->only_rows), NULL for a node whole or none */
    rs_manifest_rows **restored_rows;  /* [nonly] those ranges as the new entry names them */
    size_t *nrestored_rows;
    uint32_t ndest;
    int distinct;          /* rs_append_job.distinct: no only_rows */
    size_t nonly;
} rs_append;

/* Locks and opens DIR (steps 1). Returns 0, 1 when DIR does not exist
 * (nothing is held: the caller creates it, and opens again if another run
 * created it first), or -1 with err (RS_EXIT_USAGE for a directory that is
 * not a bucket directory: a move directory, a keys-only one that cannot
 * take rows...). Collective. */
int rs_append_open(rs_append *g, const char *dir, rs_error *err);

/* Step 2: the job's options against DIR's base manifest. Options the
 * command line gave (given: RS_GIVEN_* bits) must equal DIR's: otherwise
 * RS_EXIT_USAGE naming the option and both values; the others are set in
 * po from the manifest (key, delimiter, header, compression, level, keys
 * only). *ring is DIR's ring, built from its description (the caller
 * frees it): with RS_GIVEN_RING its fingerprint must equal ring_given's.
 * Also points po at DIR's header (header_ref, header_ref_name), which every
 * input's header must equal. */
int rs_append_check(rs_append *g, rs_pipeline_opts *po, unsigned given, const rs_ring *ring_given, rs_ring **ring,
                    rs_error *err);

/* Step 3: decides for inputs [lo, hi) of po which to ingest (those
 * skip marks already, dropped by an earlier run of the chunk, stay
 * skipped without a look). An input
 * whose size equals that of an input DIR ingested, or of an earlier one of
 * this run, is checksummed (rs_file_checksum) and compared; one DIR (or
 * this run) already holds is skipped with a note on stderr (RS_SEEN_SKIP),
 * fails the run (RS_SEEN_FAIL: RS_EXIT_EXISTS naming the input and the
 * generation that holds it), or is ingested again (RS_SEEN_AGAIN). skip[i]
 * (for i in [lo, hi)) is set to 1 for those skipped; *nskipped counts
 * them. With dir NULL (DIR does not exist yet) only this run's inputs are
 * compared. Pipes cannot be read twice, and some files cannot be known
 * without reading them whole: they are checked after the run
 * (rs_append_seen_after). With RS_SEEN_AGAIN nothing is read nor skipped.
 * Collective (rank 0 decides). */
int rs_append_seen(rs_append *g, const rs_pipeline_opts *po, size_t lo, size_t hi, rs_on_seen policy, uint8_t *skip,
                   size_t *nskipped, const char *cmd, rs_error *err);

/* An input that DIR holds but whose entries name nodes "lost" (rows a
 * repair could not keep) more often than "restored"
 * (rs_bucketdir_outstanding) is not skipped by rs_append_seen (whatever
 * its policy but RS_SEEN_AGAIN, which ingests every row):
 * g->restore_of[i] gets DIR's entry, with a note on stderr. Then
 * rs_append_restoring, after rs_append_select gave po the inputs of
 * [lo, hi) not skipped, sets po->only_dest so that such an input writes
 * only the rows of those nodes (rs_bucketdir_lost_nodes), and, for a node
 * of which ranges of rows are outstanding (rs_bucketdir_lost_ranges: the
 * damaged members of a file repair kept the rest of), po->only_rows so
 * that it writes only those rows (not in a directory kept distinct, where
 * the keys DIR holds drop the others: each key is on one node);
 * rs_append_mark_restored (rs_append_publish calls it) names those nodes
 * and ranges in the new generation's entries (m->inputs in po's order:
 * "restored", "restored_rows"), which clears the record. rs_append_close frees what they hold. 0, or -1
 * with err (out of memory). */
int rs_append_restoring(rs_append *g, rs_pipeline_opts *po, size_t lo, size_t hi, const uint8_t *skip,
                        const rs_ring *ring, rs_error *err);
void rs_append_mark_restored(const rs_append *g, rs_manifest *m);
/* rank 0's g->restore_of for inputs [lo, hi) of the job's n, on every
 * rank (rs_append_seen calls it). Collective. */
int rs_append_restore_share(rs_append *g, size_t n, size_t lo, size_t hi, rs_error *err);
void rs_append_restore_free(rs_append *g);

/* The input bytes rank 0 has read so far (in this process) before runs,
 * to tell whether inputs were already ingested: each input it checksummed
 * or decompressed whole, by its stored size. Such an input is read again
 * by the run unless skipped. */
uint64_t rs_append_seen_bytes(void);

/* What rs_append_seen_after needs of the chunk a run reads, and what it
 * tells: the run read the inputs [lo, hi) of the job's that skip does not
 * mark (rs_append_seen), in order. */
typedef struct {
    size_t lo, hi;
    uint8_t *skip;
    const char *cmd;   /* the command, for the notes on stderr (NULL: quiet) */
    int redo;          /* set: skip marks more inputs; publish nothing, run the chunk again */
} rs_append_chunk;

/* After the run, before anything is published: every input read has its
 * checksum (a unit-split file's is taken now, in a pass of its own), and
 * (ch given, policy not RS_SEEN_AGAIN) each input's content, as the run
 * summed it, is compared with DIR's (g NULL: DIR does not exist yet) and
 * with the run's other inputs: what could not be known before reading (a
 * pipe, several gzip members or zstd frames, a frame without its size).
 * An input held is, under RS_SEEN_SKIP, marked in ch->skip with a note on
 * stderr and ch->redo set: the caller drops what the run staged and runs
 * the chunk again (of two inputs of this run with one content, a pipe is
 * the one dropped); under RS_SEEN_FAIL it is RS_EXIT_EXISTS naming it.
 * RS_EXIT_EXISTS too when the chunk cannot be run again: another of its
 * inputs is a pipe, or a quarantine written in place holds rows. The
 * design (why again) is at the function. Collective (rank 0 decides). */
int rs_append_seen_after(const rs_append *g, const rs_pipeline_opts *po, rs_pipeline_result *res, rs_on_seen policy,
                         rs_append_chunk *ch, rs_error *err);

/* Step 4: creates the staging directory beside DIR and g<N> in it.
 * Collective. */
int rs_append_stage(rs_append *g, rs_error *err);

/* The path of `name` in the staged generation (malloc'd; NULL when out of
 * memory). */
char *rs_append_path(const rs_append *g, const char *name);

/* Step 5 (rank 0 writes, every rank calls): fills m's schema, kind,
 * generation, previous digest and the shaping options from DIR's base,
 * writes it as g<N>/manifest.json, upgrades a schema-1 base manifest, and
 * publishes. Collective; 0, or -1 on every rank. */
int rs_append_publish(rs_append *g, rs_manifest *m, rs_error *err);

/* Removes the staging directory unless published, releases the lock and
 * closes DIR. Not collective; g may be zeroed. */
void rs_append_close(rs_append *g);

/* --commit-every: where the chunk of inputs that starts at lo ends: every
 * `every` inputs, or (bytes) once the chunk's inputs hold `every` bytes as
 * stored; every 0: all of them. */
size_t rs_append_chunk_end(const rs_pipeline_opts *po, uint64_t every, int bytes, size_t lo);

/* An append as a job describes it to rs_append_run: what bucket --append
 * and dedup --append differ in. */
typedef struct {
    const char *dir;             /* DIR */
    rs_pipeline_opts po;         /* the job's inputs and options (compression and level: the output's) */
    unsigned given;              /* RS_GIVEN_* bits: the options the command line gave (rs_append_check) */
    const rs_ring *ring;         /* the command line's ring (DIR's once it exists); NULL: no ring
                                    option given, the default ring built if DIR is made */
    rs_on_seen on_seen;          /* inputs DIR already holds (rs_append_seen) */
    const char *cmd;             /* the command, for the notes on stderr (NULL: quiet) */
    int distinct;                /* 1: the run drops the rows whose keys DIR holds (dedup): rows a repair
                                    could not keep come back as the keys DIR lacks, not by ordinals */
    uint64_t *inputs_skipped;    /* the job's count of the inputs skipped, kept up to date */
    /* NULL, or what refuses an existing DIR before its options are
     * checked (a directory this job cannot add to): -1 with err */
    int (*refuse)(void *ctx, const rs_append *g, rs_error *err);
    /* The run of the chunk's inputs that are not skipped (po, at least
     * one), into g (opened, checked, ring DIR's) or, g NULL, into DIR
     * created whole (ring the command line's; *raced set when another run
     * created DIR first). Sets ch->redo as rs_append_seen_after does; -1
     * with err, or 0 (published or not). */
    int (*run)(void *ctx, rs_append *g, const rs_pipeline_opts *po, const rs_ring *ring, rs_append_chunk *ch,
               int *raced, rs_error *err);
    void *ctx;
} rs_append_job;

/* The single-process append's driver, shared by every job that appends:
 * for each chunk of a->po's inputs (rs_append_chunk_end), in order, while
 * err is clear: opens DIR (rs_append_open), refuses it (a->refuse), checks
 * the options (rs_append_check), drops the inputs DIR holds (rs_append_seen),
 * selects the others (rs_append_select), marks those that restore lost nodes
 * (rs_append_restoring), runs them (a->run) and closes DIR. The chunk is run
 * again when the run asks it (ch->redo: an input dropped after the run),
 * and once more, as an append, when DIR did not exist and another run
 * created it first. 0, or -1 with err. */
int rs_append_run(const rs_append_job *a, uint64_t every, int bytes, rs_error *err);

/* po = *all with inputs [lo, hi) of all but the skipped ones (*sel: the
 * array, the caller's to free). 0, or -1 with err. */
int rs_append_select(const rs_pipeline_opts *all, size_t lo, size_t hi, const uint8_t *skip, rs_pipeline_opts *po,
                     const char ***sel, rs_error *err);

#endif
