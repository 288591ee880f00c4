/* ringshard/dataset.h - the bucket directory as a format: the dataset layer.
 *
 * What the layer owns (src/dataset/):
 *   - the manifest (manifest.h, manifest.c): reading, writing and the
 *     digest of DIR/manifest.json and DIR/g<N>/manifest.json;
 *   - output directories (outdir.h, outdir.c): the temporary directory
 *     beside DIR, publishing it whole (one rename or exchange), the
 *     writer lock, the clean-up of what a killed run left;
 *   - reading a bucket or move directory (bucketdir.h, bucketdir.c): one
 *     descriptor, the base and every generation, their chain of digests,
 *     the damages and strays, each file checked against its manifest;
 *   - every name on disk (filename.h, filename.c): data files, key
 *     indexes, generations, the damaged copy, node names encoded into file
 *     names, the codec table;
 *   - what a writer shares (outputs.c): its files' paths in the temporary
 *     directory, input checksums as a manifest writes them, the manifest
 *     written into the temporary directory;
 *   - generations (generation.c, below): g<N>'s name, whether DIR can take
 *     one more, what its manifest holds (the previous generation's digest,
 *     the base's shaping options), a schema-1 base rewritten as schema 2;
 *   - key indexes (keyidx.h, keyidx*.c): writing, reading, verifying.
 *
 * It knows nothing of rows in flight: the pipeline, the jobs and the
 * cluster layer call it (pipeline.h adds what binds a directory to a
 * pipeline run: a directory's files as a run's inputs, a manifest started
 * from a finished run); it calls only the codecs, the CSV, ring and I/O
 * modules, the hashes and util. Everything here is single-process; the
 * collectives of an append (one rank locks, decides and publishes) are the
 * jobs' and the cluster layer's, over these functions.
 *
 * Recovery contract: nothing is published until complete and flushed, in
 * one rename; a failed or killed writer leaves DIR as it was (its
 * temporary directory is removed by the next run on DIR once its process
 * is gone); a reader sees the generations that were in place when it
 * opened DIR, whatever is published or replaced meanwhile, and trusts no
 * file that differs from its manifest. The on-disk layout is in
 * docs/format-layout.md (every name, made by filename.h),
 * docs/format-generations.md, docs/format-keyidx.md and
 * docs/format-manifest.md; what each fault leaves behind, and its
 * exit code, in docs/failures.md ("Publishing", "Appends and compaction",
 * "A damaged chain of generations").
 *
 * Outside src/dataset/ this is the header to include: the separate
 * headers it includes are its parts (tools/check_layers.sh). */
#ifndef RINGSHARD_DATASET_H
#define RINGSHARD_DATASET_H

#include <stdint.h>
#include "ringshard/bucketdir.h"
#include "ringshard/error.h"
#include "ringshard/keyidx.h"
#include "ringshard/manifest.h"
#include "ringshard/nodes.h"
#include "ringshard/outdir.h"

/* Generations (docs/format-generations.md, "Bucket directories that grow"). */

/* Whether bd (DIR, opened with RS_BUCKETDIR_TOLERANT under its writer
 * lock) can take one more generation: refused when its chain is damaged
 * (rs_bucketdir_refuse_damage), when it is not a bucket directory (kind
 * other than "buckets") or has no header line yet although it has one
 * (its inputs were empty), or when it holds RS_GEN_MAX generations: all
 * RS_EXIT_USAGE but the damage's, messages naming mpath (DIR's
 * manifest.json) or DIR. *gen gets the new generation's number
 * (bd->last_gen + 1) and name its directory's name (rs_gen_dir_name).
 * 0, or -1 with err. */
int rs_gen_next(const rs_bucketdir *bd, const char *mpath, uint64_t *gen, char name[16], rs_error *err);

/* The manifest of a fresh bucket directory that will grow: schema 2,
 * generation 1, every input recorded as ingested by generation 1. */
void rs_gen_first(rs_manifest *m);

/* Writes generation gen's manifest m as gen_tmp/manifest.json (gen_tmp:
 * g<N> staged in od's temporary directory): fills m's schema (3 with
 * segment_header, else 2), kind "generation", generation, previous (the
 * digest of bd's newest manifest: the chain) and the shaping options from
 * bd's base (ring, key, delimiter, header, compression, level, keys only),
 * and every input's generation. A schema-1 base is first written as
 * schema 2 (the same content) into od's temporary directory, *upgrade set
 * to 1 (the caller publishes it with g<N>), and the chain names its
 * digest. m->previous is NULL again on return. 0, or -1 with err. */
int rs_gen_write_manifests(const rs_bucketdir *bd, const rs_outdir *od, uint64_t gen, const char *gen_tmp,
                           rs_manifest *m, int *upgrade, rs_error *err);

/* Rows a repair could not keep (docs/format-generations.md; lost.c). */

/* Whether an entry of bd's manifests for the input e (the same content
 * once decompressed, or the same stored bytes) names a node "lost" more
 * often than the entries name it "restored": rows of e that DIR does not
 * hold, which an append of e brings back. */
int rs_bucketdir_outstanding(const rs_bucketdir *bd, const rs_manifest_input *e);

/* mask[d] for each of nodes' nodes (d < nodes->count): 1 when it is such
 * a node of input e, else 0. Returns 1 when any is. */
int rs_bucketdir_lost_nodes(const rs_bucketdir *bd, const rs_manifest_input *e, uint8_t *mask, const rs_nodes *nodes);

/* Where input entry e (an element of the inputs of bd->m or of one of
 * bd->gens) is in bd, as a number that is never 0, and the entry back
 * from it (NULL when bd has no such place): what one process tells
 * another that opened the same state of DIR. 0 when e is not bd's. */
uint64_t rs_bucketdir_input_place(const rs_bucketdir *bd, const rs_manifest_input *e);
const rs_manifest_input *rs_bucketdir_input_at(const rs_bucketdir *bd, uint64_t place);

#endif
