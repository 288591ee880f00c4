/* A directory's manifests checked against themselves, as every reader
 * opens it (bucketdir_impl.h: rs_bucketdir_audit): the counts a manifest
 * states twice (its totals, its files' entries) and the generation each
 * input record names.
 *
 * Why at the open, as a damage of the chain, and not in verify alone: a
 * rule that verify applied and repair, compact and the appends did not
 * let compact merge a manifest whose totals its files contradicted into a
 * base that verify failed, and let repair call such a directory whole.
 * The same for a base file whose node its ring does not have (verify
 * found it; cat read it, repair and compact carried it).
 * Found here, it is one damage for everyone: verify reports it, repair
 * writes the manifest again from what its files hold (each file checked
 * against its CRC-32), compact and the appends refuse it. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include "dataset/bucketdir_impl.h"

/* The rows and data bytes manifest m's files hold, as it lists them
 * (keys-only manifests carried the input bytes in totals.bytes: their
 * bytes are the totals'). */
void rs_manifest_files_sum(const rs_manifest *m, uint64_t *rows, uint64_t *bytes)
{
    *rows = *bytes = 0;
    for (size_t i = 0; i < m->nfiles; i++)
        *rows += m->files[i].rows, *bytes += m->files[i].bytes;
    if (m->keys_only)
        *bytes = m->bytes;
}

/* Each manifest's files add up to its totals. Totals that its own list
 * contradicts are a damage of the manifest, for every reader alike:
 * verify reports it, repair writes the totals again from the files (each
 * checked against its CRC-32), compact and the appends refuse it, as they
 * refuse any damage. 0, or -1 with err (out of memory). */
static int check_totals(rs_bucketdir *bd, rs_error *err)
{
    for (size_t g = 0; g <= bd->ngens; g++) {
        const rs_manifest *m = g ? &bd->gens[g - 1] : &bd->m;
        uint64_t rows, bytes, gen = g ? m->generation : bd->m.generation ? bd->m.generation : 1;
        rs_manifest_files_sum(m, &rows, &bytes);
        if (rows == m->rows && bytes == m->bytes)
            continue;
        char dn[24] = "";
        if (g) {
            rs_gen_dir_name(bd->gen_dir[g - 1], dn);
            strcat(dn, "/");
        }
        if (rs_bucketdir_add_damage(bd, gen, 0, 0, err,
                                    "%s/%smanifest.json: files add up to %llu rows and %llu bytes, totals say "
                                    "%llu and %llu", bd->path, dn, (unsigned long long)rows,
                                    (unsigned long long)bytes, (unsigned long long)m->rows,
                                    (unsigned long long)m->bytes) != 0)
            return -1;
    }
    return 0;
}

/* Each input record names the generation that ingested it: a
 * generation's, its own; the base's, one at or below the base's (after a
 * compaction, every earlier one). Another is a damage of the manifest, as
 * check_totals' (repair writes them again: compact_parts). 0, or -1 with
 * err (out of memory). */
static int check_inputs(rs_bucketdir *bd, rs_error *err)
{
    uint64_t base = bd->m.generation ? bd->m.generation : 1;
    for (size_t i = 0; i < bd->m.ninputs; i++)
        if (bd->m.inputs[i].generation > base &&
            rs_bucketdir_add_damage(bd, base, 0, 0, err,
                                    "%s/manifest.json: input %s says generation %llu, after the base's (%llu)",
                                    bd->path, bd->m.inputs[i].path, (unsigned long long)bd->m.inputs[i].generation,
                                    (unsigned long long)base) != 0)
            return -1;
    for (size_t g = 0; g < bd->ngens; g++)
        for (size_t i = 0; i < bd->gens[g].ninputs; i++) {
            const rs_manifest_input *in = &bd->gens[g].inputs[i];
            char dn[16];
            rs_gen_dir_name(bd->gen_dir[g], dn);
            if (in->generation != bd->gens[g].generation &&
                rs_bucketdir_add_damage(bd, bd->gens[g].generation, 0, 0, err,
                                        "%s/%s/manifest.json: input %s says generation %llu, not %llu", bd->path,
                                        dn, in->path, (unsigned long long)in->generation,
                                        (unsigned long long)bd->gens[g].generation) != 0)
                return -1;
        }
    return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Each file a manifest lists once: a second entry of a name would have
 * its rows read (and merged) twice. 0, or -1 with err (out of memory). */
static int check_listed_once(rs_bucketdir *bd, rs_error *err)
{
    for (size_t g = 0; g <= bd->ngens; g++) {
        const rs_manifest *m = g ? &bd->gens[g - 1] : &bd->m;
        const char **v = malloc((m->nfiles + 1) * sizeof *v);
        if (!v)
            return rs_error_set(err, RS_EXIT_IO, "out of memory");
        size_t n = 0;
        for (size_t i = 0; i < m->nfiles; i++)
            if (m->files[i].file)
                v[n++] = m->files[i].file;
        qsort(v, n, sizeof *v, cmp_str);
        char dn[24] = "";
        if (g) {
            rs_gen_dir_name(bd->gen_dir[g - 1], dn);
            strcat(dn, "/");
        }
        uint64_t gen = g ? m->generation : bd->m.generation ? bd->m.generation : 1;
        int rc = 0;
        for (size_t i = 1; rc == 0 && i < n; i++)
            if (strcmp(v[i - 1], v[i]) == 0 && (i < 2 || strcmp(v[i - 2], v[i]) != 0))
                rc = rs_bucketdir_add_damage(bd, gen, 0, 0, err, "%s/%smanifest.json: file %s%s is listed twice",
                                             bd->path, dn, dn, v[i]);
        free(v);
        if (rc != 0)
            return -1;
    }
    return 0;
}

int rs_bucketdir_foreign_nodes(const rs_bucketdir *bd, uint8_t *foreign, rs_error *err)
{
    const rs_manifest *m = &bd->m;
    if (!m->kind || strcmp(m->kind, "buckets") != 0 || !m->ring_description)
        return 0;
    rs_ring_opts o;
    rs_nodes nodes = {0};
    rs_node_index ix = {0};
    rs_error e = {0};
    int n = 0;
    if (rs_ring_parse_description(m->ring_description, &o, &nodes, &e) == 0 &&
        rs_node_index_build(&ix, &nodes, &e) == 0)
        for (size_t i = 0; i < m->nfiles; i++) {
            const char *node = m->files[i].node;
            foreign[i] = !node || rs_node_index_find(&ix, &nodes, node) < 0;
            n += foreign[i];
        }
    rs_node_index_free(&ix);
    rs_nodes_free(&nodes);
    /* a description that does not parse is said by whoever builds its ring (rs_manifest_ring) */
    if (e.code == RS_EXIT_IO)
        return rs_error_set(err, RS_EXIT_IO, "%s", e.msg);
    return n;
}

/* Each base file's node is a node of the ring the manifest describes (a
 * generation's files are matched to the base's by node, bucketdir.c): a
 * file of another node holds rows the ring places elsewhere. 0, or -1
 * with err. */
static int check_nodes(rs_bucketdir *bd, rs_error *err)
{
    uint8_t *foreign = calloc(bd->m.nfiles + 1, 1);
    if (!foreign)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    int n = rs_bucketdir_foreign_nodes(bd, foreign, err);
    for (size_t i = 0; n > 0 && i < bd->m.nfiles; i++)
        if (foreign[i] && rs_bucketdir_add_damage(bd, bd->m.generation ? bd->m.generation : 1, 0, 0, err,
                                                  "%s/manifest.json: file %s belongs to node '%s', which its ring "
                                                  "does not have", bd->path, bd->m.files[i].file,
                                                  bd->m.files[i].node ? bd->m.files[i].node : "") != 0)
            n = -1;
    free(foreign);
    return n < 0 ? -1 : 0;
}

int rs_bucketdir_audit(rs_bucketdir *bd, rs_error *err)
{
    return check_totals(bd, err) != 0 || check_inputs(bd, err) != 0 || check_listed_once(bd, err) != 0 ||
                   check_nodes(bd, err) != 0
               ? -1
               : 0;
}
