/* Reading a bucket or move directory through one descriptor
 * (ringshard/bucketdir.h). */
#define _GNU_SOURCE
#include "ringshard/bucketdir.h"
#include "ringshard/hash.h"
#include "ringshard/testhook.h"
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* RINGSHARD_TEST_HOLD_DIR=FILE, a testing knob: once the manifest is read,
 * creates FILE and waits (up to 120 s) until something removes it, so that
 * a test can replace DIR at exactly that point and see that nothing of
 * the new generation is read. */
static void test_hold(void)
{
    const char *f = getenv("RINGSHARD_TEST_HOLD_DIR");
    if (!f || !*f)
        return;
    int fd = open(f, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    close(fd);
    struct timespec ms = {0, 1000000};
    for (int i = 0; i < 120000 && access(f, F_OK) == 0; i++)
        nanosleep(&ms, NULL);
}

void rs_gen_dir_name(uint64_t gen, char out[16])
{
    snprintf(out, 16, "g%08" PRIu64, gen);
}

/* The base files' node names, sorted, for finding a segment's node. */
typedef struct {
    const char *node;
    size_t base;
} node_ref;

static int cmp_node_ref(const void *a, const void *b)
{
    return strcmp(((const node_ref *)a)->node, ((const node_ref *)b)->node);
}

/* What a generation must share with the base: the ring and everything
 * that shapes the files. NULL when it does, else the member that differs. */
static const char *differs_from_base(const rs_manifest *b, const rs_manifest *g)
{
    if (strcmp(b->ring_fingerprint, g->ring_fingerprint) != 0)
        return "ring.fingerprint";
    if ((b->key == NULL) != (g->key == NULL) || (b->key && strcmp(b->key, g->key) != 0))
        return "options.key";
    if ((b->key_sep ? b->key_sep : '|') != (g->key_sep ? g->key_sep : '|'))
        return "options.key_sep";
    if (b->delimiter != g->delimiter)
        return "options.delimiter";
    if (b->header != g->header)
        return "options.header";
    if (b->compress != g->compress)
        return "options.compress";
    if (b->level != g->level)
        return "options.level";
    if (b->keys_only != g->keys_only)
        return "options.keys_only";
    if ((b->header_line == NULL) != (g->header_line == NULL) ||
        (b->header_line && strcmp(b->header_line, g->header_line) != 0))
        return "header";
    return NULL;
}

/* Reads generation gen's manifest after the one whose digest is prev.
 * 0, 1 when it does not exist, -1 with err. */
static int read_gen(rs_bucketdir *bd, uint64_t gen, const uint64_t prev[2], rs_manifest *g, uint64_t digest[2],
                    rs_error *err)
{
    char dname[16], name[40], *mpath = NULL;
    rs_gen_dir_name(gen, dname);
    snprintf(name, sizeof name, "%s/manifest.json", dname);
    struct stat st;
    if (fstatat(bd->fd, dname, &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT)
        return 1;
    if (asprintf(&mpath, "%s/%s", bd->path, name) < 0)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    int rc = rs_manifest_readat(g, bd->fd, name, mpath, digest, err);
    char want[33];
    rs_manifest_digest_hex(prev, want);
    const char *what = NULL, *member = NULL;
    if (rc == 0 && strcmp(g->kind, "generation") != 0)
        member = "kind", what = "\"generation\" expected";
    else if (rc == 0 && g->generation != gen)
        member = "generation", what = "not the number of its directory";
    else if (rc == 0 && strcmp(g->previous, want) != 0)
        member = "previous", what = "not the digest of the previous generation's manifest (generations out of order?)";
    if (what)
        rc = rs_error_set(err, RS_EXIT_DATA, "%s: manifest member \"%s\": %s", mpath, member, what);
    else if (rc == 0 && (what = differs_from_base(&bd->m, g)))
        rc = rs_error_set(err, RS_EXIT_DATA, "%s: manifest member \"%s\" differs from the base manifest's (%s/manifest.json)",
                          mpath, what, bd->path);
    free(mpath);
    return rc;
}

/* The generations after the base, up to upto, while they exist. */
static int read_gens(rs_bucketdir *bd, uint64_t upto, rs_error *err)
{
    uint64_t prev[2] = {bd->base_digest[0], bd->base_digest[1]};
    size_t cap = 0;
    for (uint64_t gen = bd->m.generation + 1; gen <= upto && gen <= RS_GEN_MAX; gen++) {
        if (bd->ngens == cap) {
            cap = cap ? 2 * cap : 16;
            rs_manifest *ng = realloc(bd->gens, cap * sizeof *ng);
            if (ng)
                bd->gens = ng;
            uint64_t(*nd)[2] = realloc(bd->gen_digests, cap * sizeof *nd);
            if (nd)
                bd->gen_digests = nd;
            if (!ng || !nd)
                return rs_error_set(err, RS_EXIT_IO, "out of memory");
        }
        rs_manifest *g = &bd->gens[bd->ngens];
        int rc = read_gen(bd, gen, prev, g, bd->gen_digests[bd->ngens], err);
        if (rc < 0)
            return -1;
        if (rc > 0) {
            if (upto != UINT64_MAX)
                return rs_error_set(err, RS_EXIT_IO, "%s: generation %" PRIu64 " is missing (removed meanwhile?)",
                                    bd->path, gen);
            break;
        }
        memcpy(prev, bd->gen_digests[bd->ngens], sizeof prev);
        bd->ngens++;
    }
    return 0;
}

/* The node of a generation's file: its base file, or -1. */
static ptrdiff_t find_node(const node_ref *refs, size_t n, const char *node)
{
    node_ref key = {node, 0};
    const node_ref *hit = node ? bsearch(&key, refs, n, sizeof *refs, cmp_node_ref) : NULL;
    return hit ? (ptrdiff_t)hit->base : -1;
}

static int add_file(rs_bucketdir *bd, size_t at, const rs_manifest_file *f, uint64_t gen, size_t base, int segment,
                    int headerless, rs_error *err)
{
    char dname[16];
    rs_gen_dir_name(gen, dname);
    char *name = NULL, *path = NULL;
    if (segment ? asprintf(&name, "%s/%s", dname, f->file) < 0 : !(name = strdup(f->file)))
        name = NULL;
    if (!name || asprintf(&path, "%s/%s", bd->path, name) < 0) {
        free(name);
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    }
    bd->files[at] = f;
    bd->file_gen[at] = gen;
    bd->file_base[at] = base;
    bd->headerless[at] = (uint8_t)headerless;
    bd->names[at] = name;
    bd->paths[at] = path;
    return 0;
}

/* The list of files, node by node (see bucketdir.h), and the totals. */
static int flatten(rs_bucketdir *bd, rs_error *err)
{
    const rs_manifest *m = &bd->m;
    size_t nb = m->nfiles, n = nb;
    for (size_t g = 0; g < bd->ngens; g++)
        n += bd->gens[g].nfiles;
    bd->files = calloc(n + 1, sizeof *bd->files);
    bd->file_gen = calloc(n + 1, sizeof *bd->file_gen);
    bd->file_base = calloc(n + 1, sizeof *bd->file_base);
    bd->headerless = calloc(n + 1, 1);
    bd->paths = calloc(n + 1, sizeof *bd->paths);
    bd->names = calloc(n + 1, sizeof *bd->names);
    size_t *at = calloc(nb + 1, sizeof *at), *seg_node = calloc(n + 1, sizeof *seg_node);
    node_ref *refs = calloc(nb + 1, sizeof *refs);
    int rc = -1;
    if (!bd->files || !bd->file_gen || !bd->file_base || !bd->headerless || !bd->paths || !bd->names || !at ||
        !seg_node || !refs) {
        rs_error_set(err, RS_EXIT_IO, "out of memory");
        goto out;
    }
    bd->nfiles = n;
    for (size_t i = 0; i < nb; i++)
        refs[i] = (node_ref){m->files[i].node ? m->files[i].node : "", i};
    qsort(refs, nb, sizeof *refs, cmp_node_ref);
    /* count each node's files: at[i] becomes where node i's run starts */
    size_t *count = at;
    for (size_t i = 0; i < nb; i++)
        count[i] = 1;
    for (size_t g = 0, k = 0; g < bd->ngens; g++)
        for (size_t j = 0; j < bd->gens[g].nfiles; j++, k++) {
            const rs_manifest_file *f = &bd->gens[g].files[j];
            ptrdiff_t b = find_node(refs, nb, f->node);
            if (b < 0) {
                char dname[16];
                rs_gen_dir_name(bd->m.generation + 1 + g, dname);
                rs_error_set(err, RS_EXIT_DATA, "%s/%s/manifest.json: file %s belongs to node '%s', which has no "
                             "file in the base manifest", bd->path, dname, f->file, f->node ? f->node : "");
                goto out;
            }
            seg_node[k] = (size_t)b;
            count[b]++;
        }
    for (size_t i = 0, run = 0; i < nb; i++) {
        size_t c = count[i];
        at[i] = run;
        run += c;
    }
    for (size_t i = 0; i < nb; i++)
        if (add_file(bd, at[i]++, &m->files[i], m->generation ? m->generation : 1, i, 0, 0, err) != 0)
            goto out;
    bd->rows = m->rows, bd->bytes = m->bytes, bd->rejected = m->rejected;
    for (size_t g = 0, k = 0; g < bd->ngens; g++) {
        const rs_manifest *gm = &bd->gens[g];
        for (size_t j = 0; j < gm->nfiles; j++, k++)
            /* an older version's segments have no header line */
            if (add_file(bd, at[seg_node[k]]++, &gm->files[j], gm->generation, seg_node[k], 1,
                         bd->m.header && !gm->segment_header, err) != 0)
                goto out;
        bd->rows += gm->rows, bd->bytes += gm->bytes, bd->rejected += gm->rejected;
    }
    rc = 0;
out:
    free(at);
    free(seg_node);
    free(refs);
    return rc;
}

int rs_bucketdir_open_upto(rs_bucketdir *bd, const char *dir, uint64_t upto, rs_error *err)
{
    memset(bd, 0, sizeof *bd);
    rs_test_pause("dir-open");
    /* path is set first: rs_bucketdir_close closes fd only when it is */
    if (!(bd->path = strdup(dir)))
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    bd->fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (bd->fd < 0) {
        rs_error_set(err, RS_EXIT_IO, "%s: cannot open the directory: %s", dir, strerror(errno));
        goto fail;
    }
    struct stat st;
    if (fstat(bd->fd, &st) != 0) {
        rs_error_set(err, RS_EXIT_IO, "%s: cannot stat: %s", dir, strerror(errno));
        goto fail;
    }
    bd->dev = (uint64_t)st.st_dev;
    bd->ino = (uint64_t)st.st_ino;
    rs_test_pause("dir-opened");
    char *mpath = NULL;
    if (asprintf(&mpath, "%s/manifest.json", dir) < 0) {
        rs_error_set(err, RS_EXIT_IO, "out of memory");
        goto fail;
    }
    int rc = rs_manifest_readat(&bd->m, bd->fd, "manifest.json", mpath, bd->base_digest, err);
    if (rc == 0 && strcmp(bd->m.kind, "generation") == 0)
        rc = rs_error_set(err, RS_EXIT_DATA, "%s: a generation of a bucket directory: name the directory above it",
                          mpath);
    free(mpath);
    if (rc != 0)
        goto fail;
    if (bd->m.schema >= 2 && strcmp(bd->m.kind, "buckets") == 0 && read_gens(bd, upto, err) != 0)
        goto fail;
    bd->last_gen = (bd->m.generation ? bd->m.generation : 1) + bd->ngens;
    rs_murmur3_x64_128(bd->base_digest, sizeof bd->base_digest, 0, bd->digest);
    for (size_t g = 0; g < bd->ngens; g++) {
        uint64_t two[4] = {bd->digest[0], bd->digest[1], bd->gen_digests[g][0], bd->gen_digests[g][1]};
        rs_murmur3_x64_128(two, sizeof two, 0, bd->digest);
    }
    test_hold();
    if (flatten(bd, err) != 0)
        goto fail;
    return 0;
fail:
    /* A --force run may replace DIR between the open and the manifests'
     * reads and remove the generation opened: that is said as such, here,
     * since the caller's rs_bucketdir_explain sees a closed bd */
    if (bd->ino)
        rs_bucketdir_explain(bd, err);
    rs_bucketdir_close(bd);
    return -1;
}

int rs_bucketdir_open(rs_bucketdir *bd, const char *dir, rs_error *err)
{
    return rs_bucketdir_open_upto(bd, dir, UINT64_MAX, err);
}

void rs_bucketdir_close(rs_bucketdir *bd)
{
    if (bd->path && bd->fd >= 0)
        close(bd->fd);
    for (size_t i = 0; i < bd->nfiles; i++) {
        free(bd->paths ? bd->paths[i] : NULL);
        free(bd->names ? (char *)bd->names[i] : NULL);
    }
    free(bd->paths);
    free(bd->names);
    free(bd->files);
    free(bd->file_gen);
    free(bd->file_base);
    free(bd->headerless);
    for (size_t g = 0; g < bd->ngens; g++)
        rs_manifest_free(&bd->gens[g]);
    free(bd->gens);
    free(bd->gen_digests);
    free(bd->path);
    rs_manifest_free(&bd->m);
    memset(bd, 0, sizeof *bd);
    bd->fd = -1;
}

int rs_bucketdir_inputs(const rs_bucketdir *bd, const size_t *idx, size_t n, rs_pipeline_opts *po,
                        rs_bucketdir_sel *sel, rs_error *err)
{
    size_t k = idx ? n : bd->nfiles;
    memset(sel, 0, sizeof *sel);
    sel->names = malloc((k ? k : 1) * sizeof *sel->names);
    sel->paths = malloc((k ? k : 1) * sizeof *sel->paths);
    sel->headerless = malloc(k ? k : 1);
    if (!sel->names || !sel->paths || !sel->headerless) {
        rs_bucketdir_sel_free(sel);
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    }
    for (size_t j = 0; j < k; j++) {
        size_t i = idx ? idx[j] : j;
        sel->names[j] = bd->names[i];
        sel->paths[j] = bd->paths[i];
        sel->headerless[j] = bd->headerless[i];
    }
    po->inputs = sel->paths;
    po->input_names = sel->names;
    po->input_headerless = sel->headerless;
    po->header_ref = bd->m.header ? bd->m.header_line : NULL;
    po->input_dirfd = bd->fd;
    po->ninputs = k;
    return 0;
}

void rs_bucketdir_sel_free(rs_bucketdir_sel *sel)
{
    free(sel->names);
    free(sel->paths);
    free(sel->headerless);
    memset(sel, 0, sizeof *sel);
}

int rs_bucketdir_segment(const rs_bucketdir *bd, size_t i)
{
    return bd->file_gen[i] != (bd->m.generation ? bd->m.generation : 1);
}

/* The manifest of generation gen (the base's or an appended one's). */
static const rs_manifest *manifest_of_gen(const rs_bucketdir *bd, uint64_t gen)
{
    uint64_t base = bd->m.generation ? bd->m.generation : 1;
    return gen > base && gen - base <= bd->ngens ? &bd->gens[gen - base - 1] : &bd->m;
}

int rs_bucketdir_index_of(const rs_bucketdir *bd, size_t i, char **name, uint64_t *size, uint32_t *crc32,
                          int *by_row)
{
    const rs_manifest_file *f = bd->files[i];
    char dn[16];
    *name = NULL;
    if (f->index) {
        rs_gen_dir_name(bd->file_gen[i], dn);
        int seg = rs_bucketdir_segment(bd, i);
        if (asprintf(name, "%s%s%s", seg ? dn : "", seg ? "/" : "", f->index) < 0)
            return -1;
        const rs_manifest *own = manifest_of_gen(bd, bd->file_gen[i]);
        *size = f->index_bytes, *crc32 = f->index_crc32;
        *by_row = own->dedup && !strcmp(own->dedup, "row");
        return 1;
    }
    for (size_t g = 0; g < bd->ngens; g++)
        for (size_t x = 0; x < bd->gens[g].nindexes; x++) {
            const rs_manifest_index *mi = &bd->gens[g].indexes[x];
            if (mi->generation != bd->file_gen[i] || strcmp(mi->file, f->file) != 0)
                continue;
            rs_gen_dir_name(bd->gens[g].generation, dn);
            if (asprintf(name, "%s/%s", dn, mi->index) < 0)
                return -1;
            *size = mi->index_bytes, *crc32 = mi->index_crc32;
            *by_row = bd->gens[g].dedup && !strcmp(bd->gens[g].dedup, "row");
            return 1;
        }
    return 0;
}

char *rs_bucketdir_manifest_of(const rs_bucketdir *bd, size_t i)
{
    char *p = NULL, dname[16];
    if (!rs_bucketdir_segment(bd, i))
        return asprintf(&p, "%s/manifest.json", bd->path) < 0 ? NULL : p;
    rs_gen_dir_name(bd->file_gen[i], dname);
    return asprintf(&p, "%s/%s/manifest.json", bd->path, dname) < 0 ? NULL : p;
}

static int differs(const rs_bucketdir *bd, size_t i, const char *what, uint64_t found, uint64_t said,
                   rs_error *err)
{
    char *mp = rs_bucketdir_manifest_of(bd, i);
    rs_error_set(err, RS_EXIT_VERIFY, "%s: %llu %s, the manifest says %llu (the file does not match %s)",
                 bd->paths[i], (unsigned long long)found, what, (unsigned long long)said, mp ? mp : bd->path);
    free(mp);
    return -1;
}

int rs_bucketdir_check_file(const rs_bucketdir *bd, size_t i, const rs_input_stats *found, int check_crc,
                            const char *header, rs_error *err)
{
    const rs_manifest_file *f = bd->files[i];
    if (found->rows != f->rows)
        return differs(bd, i, "rows", found->rows, f->rows, err);
    if (found->bytes != f->bytes)
        return differs(bd, i, "data bytes", found->bytes, f->bytes, err);
    if (check_crc && found->crc != f->crc32) {
        char *mp = rs_bucketdir_manifest_of(bd, i);
        rs_error_set(err, RS_EXIT_VERIFY,
                     "%s: CRC-32 of the data %08x, the manifest says %08x (the file does not match %s)",
                     bd->paths[i], found->crc, f->crc32, mp ? mp : bd->path);
        free(mp);
        return -1;
    }
    if (found->size != f->file_bytes)
        return differs(bd, i, "bytes on disk", found->size, f->file_bytes, err);
    if (found->blank_lines)
        return differs(bd, i, "blank lines (ringshard writes none)", found->blank_lines, 0, err);
    const char *want = bd->m.header && !bd->m.keys_only && !bd->headerless[i] ? bd->m.header_line : NULL;
    if (header && want && found->rows + found->blank_lines > 0 && strcmp(header, want) != 0)
        return rs_error_set(err, RS_EXIT_VERIFY, "%s: header '%.300s', the manifest says '%.300s'", bd->paths[i],
                            header, want);
    return 0;
}

int rs_bucketdir_replaced(const rs_bucketdir *bd)
{
    struct stat st;
    if (!bd->path || bd->fd < 0)
        return 0;
    return stat(bd->path, &st) != 0 || (uint64_t)st.st_dev != bd->dev || (uint64_t)st.st_ino != bd->ino;
}

void rs_bucketdir_explain(const rs_bucketdir *bd, rs_error *err)
{
    if (err->code != RS_EXIT_IO || !rs_bucketdir_replaced(bd))
        return;  /* still the directory that was opened: the error stands */
    char msg[sizeof err->msg];
    snprintf(msg, sizeof msg, "%s", err->msg);
    rs_error_clear(err);
    rs_error_set(err, RS_EXIT_IO,
                 "%s was replaced (or removed) while it was read, and the old generation's files with it: "
                 "nothing of the new one was read; run again (%s)",
                 bd->path, msg);
}
