/* src/dataset/bucketdir_impl.h - what the parts of a bucket directory's
 * reader share inside the dataset layer (bucketdir.c, audit.c). */
#ifndef RS_DATASET_BUCKETDIR_IMPL_H
#define RS_DATASET_BUCKETDIR_IMPL_H

#include <stdint.h>
#include "ringshard/dataset.h"

/* Records a damage of the chain (bucketdir.h: rs_bucketdir_damage): of
 * generation gen, file (0: none; else its kind), dropped (its rows not
 * read), its message. 0, or -1 with err when out of memory. */
int rs_bucketdir_add_damage(rs_bucketdir *bd, uint64_t gen, int file, int dropped, rs_error *err, const char *fmt,
                            ...) __attribute__((format(printf, 6, 7)));

/* The rows and data bytes manifest m's files hold, as it lists them
 * (keys-only manifests carried the input bytes in totals.bytes: their
 * bytes are the totals'). */
void rs_manifest_files_sum(const rs_manifest *m, uint64_t *rows, uint64_t *bytes);

/* Marks foreign[i] (bd->m.nfiles of them) for each base file of a bucket
 * directory whose node the ring its manifest describes does not have;
 * their number (0 for a move directory, or a description that does not
 * parse), or -1 with err (out of memory). */
int rs_bucketdir_foreign_nodes(const rs_bucketdir *bd, uint8_t *foreign, rs_error *err);

/* Each of bd's manifests (the base's, each generation read) against
 * itself: totals that its files' entries contradict, an input record
 * naming a generation other than the one that ingested it, a file listed
 * twice, a base file of a node its ring does not have; each a damage
 * (rs_bucketdir_add_damage). 0, or -1 with err (out of memory). */
int rs_bucketdir_audit(rs_bucketdir *bd, rs_error *err);

/* 0 when name under dirfd opens for reading, else errno when it cannot
 * for a reason of the machine rather than of the file - no permission, no
 * descriptor or memory left - which is never damage: the readers that
 * judge damage (the tolerant open, rs_bucketdir_check_all) then fail as a
 * read does (exit 1), judging nothing; 0 for any other failure (the
 * file's own, which they judge). */
int rs_bucketdir_machine_refuses(int dirfd, const char *name);

#endif
