/* Reading a bucket or move directory through one descriptor
 * (ringshard/bucketdir.h). */
#define _GNU_SOURCE
#include "ringshard/bucketdir.h"
#include "dataset/bucketdir_impl.h"
#include "ringshard/text.h"
#include "ringshard/hash.h"
#include "ringshard/testhook.h"
#include "ringshard/util.h"
#include "util/filemode.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
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
    int fd = rs_file_create(f, O_WRONLY, RS_FILE_USER);
    if (fd < 0)
        return;
    close(fd);
    struct timespec ms = {0, 1000000};
    for (int i = 0; i < 120000 && access(f, F_OK) == 0; i++)
        nanosleep(&ms, NULL);
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

int rs_bucketdir_add_damage(rs_bucketdir *bd, uint64_t gen, int file, int dropped, rs_error *err, const char *fmt, ...)
{
    rs_bucketdir_damage *nd = realloc(bd->damage, (bd->ndamage + 1) * sizeof *nd);
    if (!nd)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    bd->damage = nd;
    char *msg = NULL;
    va_list ap;
    va_start(ap, fmt);
    int k = vasprintf(&msg, fmt, ap);
    va_end(ap);
    if (k < 0)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    nd[bd->ndamage++] = (rs_bucketdir_damage){msg, gen, (uint8_t)file, (uint8_t)dropped, 1};
    return 0;
}

/* N when name is exactly a generation directory's name, g and 8 digits
 * (rs_gen_dir_name), else 0. */
static uint64_t gen_of_name(const char *name)
{
    uint64_t n = rs_gen_dir_parse(name);
    return n <= RS_GEN_MAX ? n : 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_strp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Appends a malloc'd copy of name to (*v)[*n]. -1 when out of memory. */
static int push_name(char ***v, size_t *n, const char *prefix, const char *name)
{
    char *s = NULL;
    if ((*n & (*n - 1)) == 0) {  /* 0, 1, 2, 4, ...: doubled, not one at a time (100,000 nodes) */
        char **nv = realloc(*v, (*n ? 2 * *n : 16) * sizeof *nv);
        if (!nv)
            return -1;
        *v = nv;
    }
    char **nv = *v;
    if (asprintf(&s, "%s%s", prefix, name) < 0)
        return -1;
    nv[(*n)++] = s;
    return 0;
}

/* The entries of the directory dfd (closed here), but . and ..: the
 * generation directories' numbers into gens (when not NULL), every other
 * name, prefixed, into names; names sorted. -1 with err. */
static int list_entries(int dfd, const char *path, const char *prefix, uint64_t **gens, size_t *ngens, char ***names,
                        size_t *nnames, rs_error *err)
{
    DIR *dh = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!dh) {
        if (dfd >= 0)
            close(dfd);
        return rs_error_set(err, RS_EXIT_IO, "%s: cannot list: %s", path, strerror(errno));
    }
    struct dirent *de;
    int rc = 0;
    rewinddir(dh);  /* dfd may be a dup of a descriptor read before: the offset is shared */
    errno = 0;
    while (rc == 0 && (de = readdir(dh))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        uint64_t n = gens ? gen_of_name(de->d_name) : 0;
        if (n) {
            uint64_t *ng = (*ngens & (*ngens - 1)) ? *gens : realloc(*gens, (*ngens ? 2 * *ngens : 16) * sizeof *ng);
            if (!ng)
                rc = rs_error_set(err, RS_EXIT_IO, "out of memory");
            else
                *gens = ng, ng[(*ngens)++] = n;
        } else if (push_name(names, nnames, prefix, de->d_name) != 0) {
            rc = rs_error_set(err, RS_EXIT_IO, "out of memory");
        }
        errno = 0;
    }
    if (rc == 0 && errno)
        rc = rs_error_set(err, RS_EXIT_IO, "%s: cannot list: %s", path, strerror(errno));
    rewinddir(dh);  /* for the next reader of a dup */
    closedir(dh);
    if (gens && *ngens > 1)
        qsort(*gens, *ngens, sizeof **gens, cmp_u64);
    if (*nnames > 1)
        qsort(*names, *nnames, sizeof **names, cmp_strp);
    return rc;
}

/* Reads the manifest of directory g<gen> into g. 0 when it can be read as
 * a generation of bd (its "generation" member may be another number: the
 * caller judges), 1 when it cannot be used (what, naming the file, in
 * bad), -1 with err when out of memory. */
static int read_gen(rs_bucketdir *bd, uint64_t gen, rs_manifest *g, uint64_t digest[2], rs_error *bad, rs_error *err)
{
    char dname[16], name[40], *mpath = NULL;
    rs_gen_dir_name(gen, dname);
    snprintf(name, sizeof name, "%s/manifest.json", dname);
    if (asprintf(&mpath, "%s/%s", bd->path, name) < 0)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    struct stat st;
    int rc = 1, e;
    memset(g, 0, sizeof *g);
    const char *what = NULL;
    if ((e = rs_bucketdir_machine_refuses(bd->fd, name)) != 0)
        rc = rs_error_set(err, RS_EXIT_IO, "%s: cannot open: %s (not damage: fix that and run again)", mpath,
                          strerror(e));
    else if (fstatat(bd->fd, dname, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
        rs_error_set(bad, RS_EXIT_DATA, "%s/%s: not a directory", bd->path, dname);
    else if (fstatat(bd->fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT)
        rs_error_set(bad, RS_EXIT_DATA, "%s: missing (generation %" PRIu64 "'s files cannot be read without it)",
                     mpath, gen);
    else if (rs_manifest_readat(g, bd->fd, name, mpath, digest, bad) != 0)
        rc = bad->code == RS_EXIT_IO && strstr(bad->msg, "out of memory") ? rs_error_set(err, RS_EXIT_IO, "out of memory")
                                                                           : 1;
    else if (strcmp(g->kind, "generation") != 0)
        what = "kind", rs_error_set(bad, RS_EXIT_DATA, "%s: manifest member \"kind\": \"generation\" expected", mpath);
    else if ((what = differs_from_base(&bd->m, g)))
        rs_error_set(bad, RS_EXIT_DATA, "%s: manifest member \"%s\" differs from the base manifest's (%s/manifest.json)",
                     mpath, what, bd->path);
    else
        rc = 0;
    if (what)
        rs_manifest_free(g);
    free(mpath);
    return rc;
}

/* Room for one more generation in bd. -1 with err. */
static int grow_gens(rs_bucketdir *bd, size_t *cap, rs_error *err)
{
    if (bd->ngens < *cap)
        return 0;
    *cap = *cap ? 2 * *cap : 16;
    rs_manifest *ng = realloc(bd->gens, *cap * sizeof *ng);
    if (ng)
        bd->gens = ng;
    uint64_t(*nd)[2] = realloc(bd->gen_digests, *cap * sizeof *nd);
    if (nd)
        bd->gen_digests = nd;
    uint64_t *dirs = realloc(bd->gen_dir, *cap * sizeof *dirs);
    if (dirs)
        bd->gen_dir = dirs;
    return ng && nd && dirs ? 0 : rs_error_set(err, RS_EXIT_IO, "out of memory");
}

/* Says that generations [from, to] are missing, between the chain's last
 * generation read (last) and the next one listed (next, 0: none). */
static int missing_gens(rs_bucketdir *bd, uint64_t from, uint64_t to, uint64_t last, uint64_t next, rs_error *err)
{
    char a[16], b[16], l[16], n[16];
    rs_gen_dir_name(from, a);
    rs_gen_dir_name(to, b);
    rs_gen_dir_name(last, l);
    rs_gen_dir_name(next, n);
    int rc;
    if (from == to)
        rc = rs_bucketdir_add_damage(bd, from, 0, 1, err, "%s/%s: missing: generation %" PRIu64 " of the chain, between %s and %s "
                        "(removed or renamed?)", bd->path, a, from, l, n);
    else
        rc = rs_bucketdir_add_damage(bd, from, 0, 1, err, "%s/%s to %s: missing: generations %" PRIu64 " to %" PRIu64 " of the "
                        "chain, between %s and %s (removed or renamed?)", bd->path, a, b, from, to, l, n);
    if (rc == 0)
        bd->damage[bd->ndamage - 1].ngens = to - from + 1;
    return rc;
}

/* Phase 1 of read_gens: every g<N> listed after the base (up to upto)
 * whose manifest can be used goes into bd->gens (gen_dir its directory),
 * whatever number it says; the others are damages. */
static int read_listed(rs_bucketdir *bd, uint64_t upto, rs_error *err)
{
    uint64_t base = bd->m.generation ? bd->m.generation : 1;
    size_t cap = 0;
    for (size_t i = 0; i < bd->nlisted; i++) {
        uint64_t dir = bd->listed[i];
        char dname[16];
        rs_gen_dir_name(dir, dname);
        if (dir <= base) {
            if (rs_bucketdir_add_damage(bd, dir, 0, 1, err, "%s/%s: a generation at or below the base's (%" PRIu64 "): not part of "
                           "the chain (left from before a compaction?)", bd->path, dname, base) != 0)
                return -1;
            continue;
        }
        if (dir > upto)
            break;  /* another reader's view ends before it (rs_bucketdir_open_upto) */
        rs_error bad = {0};
        if (grow_gens(bd, &cap, err) != 0)
            return -1;
        int rc = read_gen(bd, dir, &bd->gens[bd->ngens], bd->gen_digests[bd->ngens], &bad, err);
        if (rc < 0 || (rc > 0 && rs_bucketdir_add_damage(bd, dir, 0, 1, err, "%s", bad.msg) != 0))
            return -1;
        if (rc == 0)
            bd->gen_dir[bd->ngens++] = dir;
    }
    return 0;
}

/* Phase 2: a generation whose manifest says another number than its
 * directory's is that generation, read from where it is (renamed), when no
 * other directory holds that number; else it cannot be placed. */
static int place_renamed(rs_bucketdir *bd, rs_error *err)
{
    uint64_t base = bd->m.generation ? bd->m.generation : 1;
    size_t k = 0;
    for (size_t g = 0; g < bd->ngens; g++) {
        uint64_t m = bd->gens[g].generation, dir = bd->gen_dir[g];
        int taken = m <= base;
        for (size_t h = 0; h < bd->ngens && !taken; h++)
            taken = h != g && (bd->gens[h].generation == m || bd->gen_dir[h] == m);
        char dn[16], mn[16];
        rs_gen_dir_name(dir, dn);
        rs_gen_dir_name(m, mn);
        int rc = 0;
        if (m != dir && taken)
            rc = rs_bucketdir_add_damage(bd, dir, 0, 0, err, "%s/%s/manifest.json: manifest member \"generation\": %" PRIu64 ", not "
                            "the number of its directory, and %s is not missing (a copy?)", bd->path, dn, m, mn);
        else if (m != dir)
            rc = rs_bucketdir_add_damage(bd, m, 0, 0, err, "%s/%s: holds generation %" PRIu64 " (its manifest says so): renamed "
                            "from %s?", bd->path, dn, m, mn);
        if (rc != 0)
            return -1;
        if (m != dir && taken) {
            rs_manifest_free(&bd->gens[g]);
            continue;
        }
        bd->gens[k] = bd->gens[g];
        memcpy(bd->gen_digests[k], bd->gen_digests[g], sizeof bd->gen_digests[k]);
        bd->gen_dir[k++] = dir;
    }
    bd->ngens = k;
    return 0;
}

/* Sorts bd->gens by generation (insertion: they come nearly sorted). */
static void sort_gens(rs_bucketdir *bd)
{
    for (size_t i = 1; i < bd->ngens; i++)
        for (size_t j = i; j > 0 && bd->gens[j - 1].generation > bd->gens[j].generation; j--) {
            rs_manifest t = bd->gens[j];
            bd->gens[j] = bd->gens[j - 1], bd->gens[j - 1] = t;
            uint64_t d[2], x = bd->gen_dir[j];
            memcpy(d, bd->gen_digests[j], sizeof d);
            memcpy(bd->gen_digests[j], bd->gen_digests[j - 1], sizeof d);
            memcpy(bd->gen_digests[j - 1], d, sizeof d);
            bd->gen_dir[j] = bd->gen_dir[j - 1], bd->gen_dir[j - 1] = x;
        }
}

/* Whether generation n's directory is said already as one whose rows
 * cannot be read (its manifest unusable). */
static int said_dropped(const rs_bucketdir *bd, uint64_t n)
{
    for (size_t d = 0; d < bd->ndamage; d++)
        if (bd->damage[d].gen == n && bd->damage[d].dropped)
            return 1;
    return 0;
}

/* Says the generations in [from, to] that no directory holds (but those
 * said already), run by run. */
static int say_missing(rs_bucketdir *bd, uint64_t from, uint64_t to, uint64_t last, uint64_t next, rs_error *err)
{
    for (uint64_t n = from; n <= to; n++) {
        if (said_dropped(bd, n))
            continue;
        uint64_t end = n;
        while (end < to && !said_dropped(bd, end + 1))
            end++;
        if (missing_gens(bd, n, end, last, next, err) != 0)
            return -1;
        n = end;
    }
    return 0;
}

/* Phase 3: the chain in order: the numbers it lacks, and each "previous"
 * against the manifest before it when that one was read. */
static int check_links(rs_bucketdir *bd, uint64_t upto, rs_error *err)
{
    uint64_t base = bd->m.generation ? bd->m.generation : 1, last = base;
    const uint64_t *prev = bd->base_digest;
    for (size_t g = 0; g < bd->ngens; g++) {
        uint64_t m = bd->gens[g].generation;
        if (m > last + 1 && say_missing(bd, last + 1, m - 1, last, m, err) != 0)
            return -1;
        char want[33], dn[16], pn[16];
        rs_manifest_digest_hex(prev, want);
        rs_gen_dir_name(bd->gen_dir[g], dn);
        rs_gen_dir_name(last, pn);
        if (m == last + 1 && strcmp(bd->gens[g].previous, want) != 0 &&
            rs_bucketdir_add_damage(bd, m, 0, 0, err, "%s/%s/manifest.json: manifest member \"previous\": not the digest of %s's "
                       "manifest (generations out of order, or one from elsewhere?)", bd->path, dn, pn) != 0)
            return -1;
        last = m;
        prev = bd->gen_digests[g];
    }
    if (upto != UINT64_MAX && upto > last)
        return say_missing(bd, last + 1, upto, last, 0, err);
    return 0;
}

/* The damages in the order of their generations, those of one generation
 * in the order found (stable: the same words every run). */
static void sort_damage(rs_bucketdir *bd)
{
    for (size_t i = 1; i < bd->ndamage; i++)
        for (size_t j = i; j > 0 && bd->damage[j - 1].gen > bd->damage[j].gen; j--) {
            rs_bucketdir_damage t = bd->damage[j];
            bd->damage[j] = bd->damage[j - 1], bd->damage[j - 1] = t;
        }
}

/* The generations listed after the base, up to upto: read (phase 1),
 * renamed ones placed (2), the chain's links checked (3); the damages in
 * the order of the generations. */
static int read_gens(rs_bucketdir *bd, uint64_t upto, rs_error *err)
{
    if (read_listed(bd, upto, err) != 0 || place_renamed(bd, err) != 0)
        return -1;
    sort_gens(bd);
    if (check_links(bd, upto, err) != 0)
        return -1;
    sort_damage(bd);
    return 0;
}

void rs_bucketdir_gen_dir(const rs_bucketdir *bd, uint64_t gen, char out[16])
{
    for (size_t g = 0; g < bd->ngens; g++)
        if (bd->gens[g].generation == gen) {
            rs_gen_dir_name(bd->gen_dir[g], out);
            return;
        }
    rs_gen_dir_name(gen, out);
}

/* A file (or key index) a manifest lists, under the directory dfd as name:
 * a damage when it is missing, not a regular file or of another size. */
static int check_on_disk(rs_bucketdir *bd, uint64_t gen, const char *dname, const char *name, uint64_t want,
                         const char *what, int *broken, rs_error *err)
{
    int index = *what != '\0', unused;   /* a key index: its rows are its file's, rebuilt from them */
    int kind = index ? RS_DAMAGE_INDEX : 0;
    broken = index ? &unused : broken;
    char rel[600];
    snprintf(rel, sizeof rel, "%s%s%s", dname, *dname ? "/" : "", name);
    struct stat st;
    char mf[40];
    snprintf(mf, sizeof mf, "%s%smanifest.json", dname, *dname ? "/" : "");
    if (fstatat(bd->fd, rel, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) {
        *broken = 1;
        return rs_bucketdir_add_damage(bd, gen, 1 | kind, 0, err, "%s/%s: %s (%s lists it)", bd->path, rel,
                          errno == ENOENT ? "missing" : "not a regular file", mf);
    }
    if ((uint64_t)st.st_size != want) {
        *broken = 1;
        return rs_bucketdir_add_damage(bd, gen, 2 | kind, 0, err, "%s/%s: %llu bytes on disk, %s/%s says %llu%s", bd->path, rel,
                          (unsigned long long)st.st_size, bd->path, mf, (unsigned long long)want, what);
    }
    return 0;
}

/* Every file and key index a manifest lists: on disk, of its size. */
static int check_files(rs_bucketdir *bd, const rs_manifest *m, uint64_t gen, const char *dname, int *broken,
                       rs_error *err)
{
    for (size_t i = 0; i < m->nfiles; i++) {
        const rs_manifest_file *f = &m->files[i];
        if (check_on_disk(bd, gen, dname, f->file, f->file_bytes, "", broken, err) != 0 ||
            (f->index && check_on_disk(bd, gen, dname, f->index, f->index_bytes, " (a key index)", broken, err) != 0))
            return -1;
    }
    for (size_t i = 0; i < m->nindexes; i++)
        if (check_on_disk(bd, gen, dname, m->indexes[i].index, m->indexes[i].index_bytes, " (a key index)", broken,
                          err) != 0)
            return -1;
    return 0;
}

/* The names m gives its directory's entries (manifest.json, its files and
 * key indexes), sorted: a malloc'd array of pointers into m, *n of them. */
static const char **names_of(const rs_manifest *m, size_t *n)
{
    const char **v = malloc((2 * m->nfiles + m->nindexes + 1) * sizeof *v);
    size_t k = 0;
    if (!v)
        return NULL;
    v[k++] = "manifest.json";
    for (size_t i = 0; i < m->nfiles; i++) {
        v[k++] = m->files[i].file;
        if (m->files[i].index)
            v[k++] = m->files[i].index;
    }
    for (size_t i = 0; i < m->nindexes; i++)
        v[k++] = m->indexes[i].index;
    qsort(v, k, sizeof *v, cmp_strp);
    *n = k;
    return v;
}

/* Moves the names of names[0..n) that m does not name into bd->stray;
 * frees names. One bsearch each: a directory may hold 100,000 files. */
static int note_strays(rs_bucketdir *bd, const rs_manifest *m, char **names, size_t n, rs_error *err)
{
    size_t nknown = 0;
    const char **known = names_of(m, &nknown);
    int rc = known ? 0 : rs_error_set(err, RS_EXIT_IO, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const char *slash = strchr(names[i], '/'), *name = slash ? slash + 1 : names[i];
        if (rc == 0 && !bsearch(&name, known, nknown, sizeof *known, cmp_strp)) {
            char **ns = realloc(bd->stray, (bd->nstray + 1) * sizeof *ns);  /* strays are few */
            if (!ns) {
                rc = rs_error_set(err, RS_EXIT_IO, "out of memory");
            } else {
                bd->stray = ns;
                ns[bd->nstray++] = names[i];
                continue;
            }
        }
        free(names[i]);
    }
    free(known);
    free(names);
    return rc;
}

/* The chain's files and strays: every file and key index each manifest
 * read lists, and what no manifest names (top holds DIR's entries other
 * than the generations; freed here). */
static int check_contents(rs_bucketdir *bd, char **top, size_t ntop, rs_error *err)
{
    int broken = 0;
    uint64_t base = bd->m.generation ? bd->m.generation : 1;
    if (check_files(bd, &bd->m, base, "", &broken, err) != 0 || note_strays(bd, &bd->m, top, ntop, err) != 0)
        return -1;
    if (bd->ngens && !(bd->gen_broken = calloc(bd->ngens, 1)))
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    for (size_t g = 0; g < bd->ngens; g++) {
        char dname[16], prefix[20], *path = NULL;
        rs_gen_dir_name(bd->gen_dir[g], dname);
        broken = 0;
        if (check_files(bd, &bd->gens[g], bd->gens[g].generation, dname, &broken, err) != 0)
            return -1;
        bd->gen_broken[g] = (uint8_t)broken;
        snprintf(prefix, sizeof prefix, "%s/", dname);
        char **names = NULL;
        size_t n = 0;
        if (asprintf(&path, "%s/%s", bd->path, dname) < 0)
            return rs_error_set(err, RS_EXIT_IO, "out of memory");
        int rc = list_entries(openat(bd->fd, dname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), path, prefix,
                              NULL, NULL, &names, &n, err);
        free(path);
        if (rc != 0 || note_strays(bd, &bd->gens[g], names, n, err) != 0)
            return -1;
    }
    if (bd->nstray > 1)
        qsort(bd->stray, bd->nstray, sizeof *bd->stray, cmp_strp);
    return 0;
}

/* The generations after the base manifest: those of a bucket directory
 * that grows (read_gens); in one of schema 1, a g<N> directory is a
 * damage (its rows would not be read), in a move directory a stray. */
static int read_chain(rs_bucketdir *bd, uint64_t upto, char ***top, size_t *ntop, rs_error *err)
{
    int buckets = strcmp(bd->m.kind, "buckets") == 0;
    if (buckets && bd->m.schema >= 2)
        return read_gens(bd, upto, err);
    for (size_t i = 0; i < bd->nlisted; i++) {
        char dname[16];
        rs_gen_dir_name(bd->listed[i], dname);
        if (buckets ? rs_bucketdir_add_damage(bd, bd->listed[i], 0, 1, err, "%s/%s: a generation directory, but %s/manifest.json "
                                 "is of schema 1 (a directory without generations)", bd->path, dname, bd->path) != 0
                    : push_name(top, ntop, "", dname) != 0)
            return rs_error_set(err, RS_EXIT_IO, "out of memory");
    }
    return 0;
}

/* bd->last_gen: the newest generation read, the base's when none. */
static void set_last_gen(rs_bucketdir *bd)
{
    bd->last_gen = bd->ngens ? bd->gens[bd->ngens - 1].generation : bd->m.generation ? bd->m.generation : 1;
}

/* Leaves in bd->gens the generations drop[] does not name (drop NULL:
 * those whose files are not intact, gen_broken). */
static void keep_gens(rs_bucketdir *bd, const uint8_t *drop)
{
    size_t k = 0;
    for (size_t g = 0; g < bd->ngens; g++) {
        if (drop ? drop[g] : bd->gen_broken[g]) {
            for (size_t d = 0; d < bd->ndamage; d++)
                if (bd->damage[d].gen == bd->gens[g].generation)
                    bd->damage[d].dropped = 1;
            rs_manifest_free(&bd->gens[g]);
            continue;
        }
        bd->gens[k] = bd->gens[g];
        memcpy(bd->gen_digests[k], bd->gen_digests[g], sizeof bd->gen_digests[k]);
        bd->gen_dir[k] = bd->gen_dir[g];
        bd->gen_broken[k++] = 0;
    }
    bd->ngens = k;
    set_last_gen(bd);
}

int rs_bucketdir_refuse_damage(const rs_bucketdir *bd, const char *what, rs_error *err)
{
    if (!bd->ndamage)
        return 0;
    char also[64] = "";
    size_t more = bd->ndamage - 1;
    if (more)
        snprintf(also, sizeof also, ", and %zu more damage%s", more, more == 1 ? "" : "s");
    return rs_error_set(err, RS_EXIT_DATA, "%s: damaged: %s%s; %s refuses a damaged directory and left it as it "
                        "was: run `ringshard verify %s` for every damage; `ringshard repair %s` keeps the rows of "
                        "the intact generations", bd->path, bd->damage[0].msg, also, what, bd->path, bd->path);
}

/* A reader's refusal (rs_bucketdir_open_flags). */
static int refuse_read(const rs_bucketdir *bd, rs_error *err)
{
    int files_only = 1;
    const rs_bucketdir_damage *first = NULL;
    size_t n = 0, sizes = 0;
    for (size_t d = 0; d < bd->ndamage; d++) {
        if ((bd->damage[d].file & 3) == 2) {
            sizes++;   /* counted among the others, but never the one named: a size alone is not refused here */
            continue;  /* a size: the reader's own check names what else differs (rs_bucketdir_check_file) */
        }
        files_only &= bd->damage[d].file != 0;
        first = first ? first : &bd->damage[d];
        n++;
    }
    if (!first)
        return 0;
    if (rs_bucketdir_replaced(bd))
        return rs_error_set(err, RS_EXIT_IO, "%s was replaced (or removed) while it was read: nothing of the new one "
                            "was read; run again (%s)", bd->path, first->msg);
    char also[64] = "";
    size_t more = n - 1 + sizes;
    if (more)
        snprintf(also, sizeof also, ", and %zu more damage%s", more, more == 1 ? "" : "s");
    return rs_error_set(err, files_only ? RS_EXIT_VERIFY : RS_EXIT_DATA,
                        "%s%s: nothing read: run `ringshard verify %s` for every damage; `ringshard repair %s` keeps "
                        "the rows of the intact generations", first->msg, also, bd->path, bd->path);
}

/* The node of a generation's file: its base file, or -1. */
static ptrdiff_t find_node(const node_ref *refs, size_t n, const char *node)
{
    node_ref key = {node, 0};
    const node_ref *hit = node ? bsearch(&key, refs, n, sizeof *refs, cmp_node_ref) : NULL;
    return hit ? (ptrdiff_t)hit->base : -1;
}

/* File `at` of the list: f of generation gen, whose manifest is gens[slot]
 * (SIZE_MAX: the base's), a segment in directory dname. */
static int add_file(rs_bucketdir *bd, size_t at, const rs_manifest_file *f, uint64_t gen, size_t slot,
                    const char *dname, size_t base, int headerless, rs_error *err)
{
    char *name = NULL, *path = NULL;
    if (slot != SIZE_MAX ? asprintf(&name, "%s/%s", dname, f->file) < 0 : !(name = strdup(f->file)))
        name = NULL;
    if (!name || asprintf(&path, "%s/%s", bd->path, name) < 0) {
        free(name);
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    }
    bd->files[at] = f;
    bd->file_gen[at] = gen;
    bd->file_slot[at] = slot;
    bd->file_base[at] = base;
    bd->headerless[at] = (uint8_t)headerless;
    bd->names[at] = name;
    bd->paths[at] = path;
    return 0;
}

/* An entry of a generation's "indexes": where it is, for the sort. */
typedef struct {
    const rs_manifest_index *mi;
    size_t slot, x;
} index_ref;

static int cmp_index_ref(const void *a, const void *b)
{
    const index_ref *p = a, *q = b;
    if (p->mi->generation != q->mi->generation)
        return p->mi->generation < q->mi->generation ? -1 : 1;
    int c = strcmp(p->mi->file, q->mi->file);
    if (c)
        return c;
    if (p->slot != q->slot)   /* the first generation's, as a search in order finds it */
        return p->slot < q->slot ? -1 : 1;
    return (p->x > q->x) - (p->x < q->x);
}

/* bd->file_ix: for each file without an index of its own, the first entry
 * of a later generation's "indexes" naming it. Sorted once and searched
 * per file: a generation may index every file of a 100,000-file base. */
static int link_indexes(rs_bucketdir *bd, rs_error *err)
{
    size_t n = 0;
    for (size_t g = 0; g < bd->ngens; g++)
        n += bd->gens[g].nindexes;
    bd->file_ix = calloc(bd->nfiles + 1, sizeof *bd->file_ix);
    bd->file_ix_slot = calloc(bd->nfiles + 1, sizeof *bd->file_ix_slot);
    index_ref *refs = calloc(n + 1, sizeof *refs);
    if (!bd->file_ix || !bd->file_ix_slot || !refs) {
        free(refs);
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    }
    for (size_t g = 0, k = 0; g < bd->ngens; g++)
        for (size_t x = 0; x < bd->gens[g].nindexes; x++)
            refs[k++] = (index_ref){&bd->gens[g].indexes[x], g, x};
    if (n > 1)
        qsort(refs, n, sizeof *refs, cmp_index_ref);
    for (size_t i = 0; i < bd->nfiles && n; i++) {
        if (bd->files[i]->index)
            continue;
        rs_manifest_index key = {.generation = bd->file_gen[i], .file = bd->files[i]->file};
        size_t lo = 0, hi = n;   /* the first entry not before the file's */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            index_ref probe = {&key, 0, 0};
            if (cmp_index_ref(&refs[mid], &probe) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < n && refs[lo].mi->generation == key.generation && strcmp(refs[lo].mi->file, key.file) == 0) {
            bd->file_ix[i] = refs[lo].mi;
            bd->file_ix_slot[i] = refs[lo].slot;
        }
    }
    free(refs);
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
    bd->file_slot = calloc(n + 1, sizeof *bd->file_slot);
    bd->headerless = calloc(n + 1, 1);
    bd->paths = calloc(n + 1, sizeof *bd->paths);
    bd->names = calloc(n + 1, sizeof *bd->names);
    size_t *at = calloc(nb + 1, sizeof *at), *seg_node = calloc(n + 1, sizeof *seg_node);
    node_ref *refs = calloc(nb + 1, sizeof *refs);
    int rc = -1;
    if (!bd->files || !bd->file_gen || !bd->file_base || !bd->file_slot || !bd->headerless || !bd->paths || !bd->names || !at ||
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
                rs_gen_dir_name(bd->gen_dir[g], dname);
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
        if (add_file(bd, at[i]++, &m->files[i], m->generation ? m->generation : 1, SIZE_MAX, "", i, 0, err) != 0)
            goto out;
    rs_manifest_files_sum(m, &bd->rows, &bd->bytes);   /* the files' (their totals: check_totals) */
    bd->rejected = m->rejected;
    for (size_t g = 0, k = 0; g < bd->ngens; g++) {
        const rs_manifest *gm = &bd->gens[g];
        char dname[16];
        rs_gen_dir_name(bd->gen_dir[g], dname);
        for (size_t j = 0; j < gm->nfiles; j++, k++)
            /* an older version's segments have no header line */
            if (add_file(bd, at[seg_node[k]]++, &gm->files[j], gm->generation, g, dname, seg_node[k],
                         bd->m.header && !gm->segment_header, err) != 0)
                goto out;
        uint64_t rows, bytes;
        rs_manifest_files_sum(gm, &rows, &bytes);
        bd->rows += rows, bd->bytes += bytes, bd->rejected += gm->rejected;
    }
    rc = 0;
out:
    free(at);
    free(seg_node);
    free(refs);
    return rc;
}

/* DIR's listing, its base manifest, its chain and the files they list
 * (rs_bucketdir_open_flags). Listed before any manifest is read: a
 * generation published after this is not read, and one missing before it
 * is a gap. 0, or -1 with err. */
static int read_dir(rs_bucketdir *bd, uint64_t upto, rs_error *err)
{
    char **top = NULL, *mpath = NULL;
    size_t ntop = 0;
    if (list_entries(dup(bd->fd), bd->path, "", &bd->listed, &bd->nlisted, &top, &ntop, err) != 0 ||
        asprintf(&mpath, "%s/manifest.json", bd->path) < 0) {
        rs_free_strings(top, ntop);
        return err->code ? -1 : rs_error_set(err, RS_EXIT_IO, "out of memory");
    }
    int rc = rs_manifest_readat(&bd->m, bd->fd, "manifest.json", mpath, bd->base_digest, err);
    if (rc == 0 && strcmp(bd->m.kind, "generation") == 0)
        rc = rs_error_set(err, RS_EXIT_DATA, "%s: a generation of a bucket directory: name the directory above it",
                          mpath);
    free(mpath);
    if (rc != 0 || read_chain(bd, upto, &top, &ntop, err) != 0 || rs_bucketdir_audit(bd, err) != 0) {
        rs_free_strings(top, ntop);
        return -1;
    }
    sort_damage(bd);
    return check_contents(bd, top, ntop, err);  /* frees top */
}

int rs_bucketdir_open_flags(rs_bucketdir *bd, const char *dir, uint64_t upto, int flags, rs_error *err)
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
    if (read_dir(bd, upto, err) != 0)
        goto fail;
    if (bd->ndamage && !(flags & RS_BUCKETDIR_TOLERANT) && refuse_read(bd, err) != 0)
        goto fail;
    if (flags & RS_BUCKETDIR_INTACT)
        keep_gens(bd, NULL);
    else
        set_last_gen(bd);
    rs_murmur3_x64_128(bd->base_digest, sizeof bd->base_digest, 0, bd->digest);
    for (size_t g = 0; g < bd->ngens; g++) {
        uint64_t two[4] = {bd->digest[0], bd->digest[1], bd->gen_digests[g][0], bd->gen_digests[g][1]};
        rs_murmur3_x64_128(two, sizeof two, 0, bd->digest);
    }
    test_hold();
    if (flatten(bd, err) != 0 || link_indexes(bd, err) != 0)
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

int rs_bucketdir_open_upto(rs_bucketdir *bd, const char *dir, uint64_t upto, rs_error *err)
{
    return rs_bucketdir_open_flags(bd, dir, upto, 0, err);
}

int rs_bucketdir_open(rs_bucketdir *bd, const char *dir, rs_error *err)
{
    return rs_bucketdir_open_upto(bd, dir, UINT64_MAX, err);
}

/* Frees the list of files (flatten, link_indexes). */
static void free_files(rs_bucketdir *bd)
{
    for (size_t i = 0; i < bd->nfiles; i++) {
        free(bd->paths ? bd->paths[i] : NULL);
        free(bd->names ? (char *)bd->names[i] : NULL);
    }
    free(bd->paths);
    free(bd->names);
    free(bd->files);
    free(bd->file_gen);
    free(bd->file_base);
    free(bd->file_slot);
    free(bd->file_ix);
    free(bd->file_ix_slot);
    free(bd->headerless);
    bd->paths = NULL, bd->names = NULL, bd->files = NULL, bd->file_gen = NULL, bd->file_base = NULL;
    bd->file_slot = NULL, bd->file_ix = NULL, bd->file_ix_slot = NULL, bd->headerless = NULL;
    bd->nfiles = 0;
}

int rs_bucketdir_drop_gens(rs_bucketdir *bd, const uint8_t *drop, rs_error *err)
{
    free_files(bd);
    keep_gens(bd, drop);
    return flatten(bd, err) != 0 || link_indexes(bd, err) != 0 ? -1 : 0;
}

void rs_bucketdir_close(rs_bucketdir *bd)
{
    if (bd->path && bd->fd >= 0)
        close(bd->fd);
    free_files(bd);
    for (size_t g = 0; g < bd->ngens; g++)
        rs_manifest_free(&bd->gens[g]);
    free(bd->gens);
    free(bd->gen_digests);
    for (size_t d = 0; d < bd->ndamage; d++)
        free(bd->damage[d].msg);
    free(bd->damage);
    rs_free_strings(bd->stray, bd->nstray);
    free(bd->listed);
    free(bd->gen_broken);
    free(bd->gen_dir);
    free(bd->path);
    rs_manifest_free(&bd->m);
    memset(bd, 0, sizeof *bd);
    bd->fd = -1;
}

int rs_bucketdir_segment(const rs_bucketdir *bd, size_t i)
{
    return bd->file_gen[i] != (bd->m.generation ? bd->m.generation : 1);
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
    char head[PATH_MAX + 200];
    snprintf(head, sizeof head, "%s was replaced (or removed) while it was read, and the old generation's files "
             "with it: nothing of the new one was read; run again (", bd->path);
    rs_error_restate(err, RS_EXIT_IO, head, ")");
}
