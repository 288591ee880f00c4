/* A generation of a bucket directory as a format (ringshard/dataset.h):
 * the checks that DIR can take one more, the manifest of a directory that
 * will grow, and what an appended generation's manifest holds - the
 * previous generation's digest (the chain) and the base's shaping options.
 * Single-process: the collective steps of an append (jobs/append.c)
 * call these on the rank that writes. */
#define _GNU_SOURCE  /* asprintf */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ringshard/dataset.h"

int rs_gen_next(const rs_bucketdir *bd, const char *mpath, uint64_t *gen, char name[16], rs_error *err)
{
    /* a generation after a damaged chain would be read by no one (and a
     * dedup --append would check keys against part of the history) */
    if (rs_bucketdir_refuse_damage(bd, "--append", err) != 0)
        return -1;
    const rs_manifest *m = &bd->m;
    if (strcmp(m->kind, "buckets") != 0)
        return rs_error_set(err, RS_EXIT_USAGE, "%s: kind '%s': --append adds rows to bucket directories", mpath,
                            m->kind);
    if (m->header && !m->header_line)
        return rs_error_set(err, RS_EXIT_USAGE,
                            "%s: DIR has no header line yet (its inputs were empty): replace it (--force) with "
                            "the new inputs instead of appending",
                            mpath);
    *gen = bd->last_gen + 1;
    if (*gen > RS_GEN_MAX)
        return rs_error_set(err, RS_EXIT_USAGE, "%s: holds %" PRIu64 " generations, the most there can be: compact it",
                            bd->path, bd->last_gen);
    rs_gen_dir_name(*gen, name);
    return 0;
}

void rs_gen_first(rs_manifest *m)
{
    m->schema = 2;
    m->generation = 1;
    for (size_t i = 0; i < m->ninputs; i++)
        m->inputs[i].generation = 1;
}

/* A schema-1 base manifest as schema 2 (generation 1: its inputs are
 * generation 1's), into the staging directory; *digest gets its digest. */
static int write_upgrade(const rs_bucketdir *bd, const rs_outdir *od, uint64_t digest[2], rs_error *err)
{
    rs_manifest up = bd->m;   /* shallow: only the copy's numbers change */
    rs_manifest_input *in = calloc(up.ninputs + 1, sizeof *in);
    if (!in)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    memcpy(in, up.inputs, up.ninputs * sizeof *in);
    up.inputs = in;
    rs_gen_first(&up);
    char *path = rs_outdir_path(od, "manifest.json");
    int rc = path ? rs_manifest_write(&up, path, err) : rs_error_set(err, RS_EXIT_IO, "out of memory");
    free(in);
    rs_manifest back = {0};
    if (rc == 0)
        rc = rs_manifest_readat(&back, AT_FDCWD, path, path, digest, err);
    rs_manifest_free(&back);
    free(path);
    return rc;
}

int rs_gen_write_manifests(const rs_bucketdir *bd, const rs_outdir *od, uint64_t gen, const char *gen_tmp,
                           rs_manifest *m, int *upgrade, rs_error *err)
{
    const rs_manifest *b = &bd->m;
    uint64_t prev[2];
    memcpy(prev, bd->ngens ? bd->gen_digests[bd->ngens - 1] : bd->base_digest, sizeof prev);
    *upgrade = b->schema < 2;
    if (*upgrade && write_upgrade(bd, od, prev, err) != 0)
        return -1;
    char hex[33];
    rs_manifest_digest_hex(prev, hex);
    m->schema = m->segment_header ? 3 : 2;   /* 3: a reader of 2 would misread the header */
    m->kind = "generation";
    m->generation = gen;
    m->previous = hex;
    m->ring_description = b->ring_description;
    m->ring_fingerprint = b->ring_fingerprint;
    m->key = b->key;
    m->key_sep = b->key_sep;
    m->delimiter = b->delimiter;
    m->header = b->header;
    m->header_line = b->header_line;
    m->compress = b->compress;
    m->level = b->level;
    m->keys_only = b->keys_only;
    for (size_t i = 0; i < m->ninputs; i++)
        m->inputs[i].generation = gen;
    char *path = NULL;
    if (asprintf(&path, "%s/manifest.json", gen_tmp) < 0)
        path = NULL;
    int rc = path ? rs_manifest_write(m, path, err) : rs_error_set(err, RS_EXIT_IO, "out of memory");
    free(path);
    m->previous = NULL;  /* hex is this function's */
    return rc;
}

/* The checksum of no bytes: an entry of size 0 with another one is a
 * pipe's, whose size was not known when it was recorded. */
#define EMPTY_CHECKSUM "crc64:0000000000000000"

int rs_bucketdir_input_records(const rs_bucketdir *bd, int fresh, rs_manifest_input **v, size_t *n)
{
    size_t cap = bd->m.ninputs;
    for (size_t k = 0; k < bd->ngens; k++)
        cap += bd->gens[k].ninputs;
    *n = 0;
    if (!(*v = calloc(cap + 1, sizeof **v)))
        return -1;
    uint64_t base = bd->m.generation ? bd->m.generation : 1;
    for (size_t k = 0; k <= bd->ngens; k++) {
        const rs_manifest *m = k ? &bd->gens[k - 1] : &bd->m;
        for (size_t i = 0; i < m->ninputs; i++) {
            rs_manifest_input *in = &(*v)[(*n)++];
            *in = m->inputs[i];
            /* a generation's: its own; the base's: its own, at most the
             * base's (rs_bucketdir_audit says when a record differs) */
            in->generation = fresh ? 0
                             : k   ? m->generation
                                   : (in->generation && in->generation <= base ? in->generation : base);
        }
    }
    return 0;
}

int rs_bucketdir_ingested(const rs_bucketdir *bd, rs_ingested **v, size_t *n)
{
    size_t cap = bd->m.ninputs;
    for (size_t k = 0; k < bd->ngens; k++)
        cap += bd->gens[k].ninputs;
    *n = 0;
    if (!(*v = malloc((cap + 1) * sizeof **v)))
        return -1;
    for (size_t k = 0; k <= bd->ngens; k++) {
        const rs_manifest *m = k ? &bd->gens[k - 1] : &bd->m;
        uint64_t gen = k ? m->generation : m->generation ? m->generation : 1;
        for (size_t i = 0; i < m->ninputs; i++) {
            const rs_manifest_input *in = &m->inputs[i];
            if (!in->checksum && !in->size)
                continue;   /* a pipe's (size 0) cannot be known without one */
            (*v)[(*n)++] = (rs_ingested){in, in->generation ? in->generation : gen,
                                         in->checksum && in->size == 0 && strcmp(in->checksum, EMPTY_CHECKSUM) != 0};
        }
    }
    return 0;
}
