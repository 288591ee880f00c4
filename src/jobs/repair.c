/* The repair job (job_repair.h): the library side of `ringshard repair`.
 *
 * Why the damaged directory is renamed aside and not rebuilt in place:
 * what cannot be kept (a generation whose manifest is lost, a file of
 * another size) may still be worth a look, and repair must never be the
 * step that loses a row; so the directory stays whole, under another name,
 * and DIR becomes a compacted directory of what is intact. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <fcntl.h>
#include "ringshard/dataset.h"
#include "ringshard/deflate.h"
#include "ringshard/job_compact.h"
#include "ringshard/job_repair.h"
#include "ringshard/util.h"

static void add_line(rs_repair_job_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One line of the report (lost with the memory when there is none). */
static void add_line(rs_repair_job_result *r, const char *fmt, ...)
{
    char **nl = realloc(r->lines, (r->nlines + 1) * sizeof *nl), *line = NULL;
    if (!nl)
        return;
    r->lines = nl;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&line, fmt, ap) >= 0)
        r->lines[r->nlines++] = line;
    va_end(ap);
}

/* The inputs a generation ingested, comma-separated (malloc'd). */
static char *inputs_of(const rs_manifest *m)
{
    size_t n = 1;
    for (size_t i = 0; i < m->ninputs; i++)
        n += strlen(m->inputs[i].path) + 2;
    char *s = calloc(n, 1);
    for (size_t i = 0; s && i < m->ninputs; i++) {
        if (i)
            strcat(s, ", ");
        strcat(s, m->inputs[i].path);
    }
    return s;
}

/* What the damaged bd (opened TOLERANT) cannot give the new directory: a
 * line per damage, per generation not kept, per stray. -1 with err when
 * the base itself is damaged. */
static int survey(const rs_bucketdir *bd, rs_repair_job_result *r, rs_error *err)
{
    uint64_t base = bd->m.generation ? bd->m.generation : 1;
    for (size_t d = 0; d < bd->ndamage; d++) {
        const rs_bucketdir_damage *dm = &bd->damage[d];
        if (dm->file && dm->gen == base)
            return rs_error_set(err, RS_EXIT_DATA, "%s; repair keeps the generations appended to an intact base, and "
                                "this base is damaged: DIR left as it was (restore the file, or rebuild DIR from its "
                                "inputs with --force)", dm->msg);
        add_line(r, "DAMAGE %s", dm->msg);
        if (dm->dropped && !dm->file) {
            r->lost_generations += dm->ngens;
            r->lost_unknown = 1;
        }
    }
    for (size_t g = 0; g < bd->ngens; g++) {
        if (!bd->gen_broken[g])
            continue;
        const rs_manifest *m = &bd->gens[g];
        char *in = inputs_of(m);
        char dn[16];
        rs_gen_dir_name(m->generation, dn);
        add_line(r, "NOT KEPT %s: %" PRIu64 " rows in %zu files (a file of it does not match its manifest); its "
                 "inputs, which an append ingests again: %s", dn, m->rows, m->nfiles, in && *in ? in : "none listed");
        free(in);
        r->lost_generations++;
        r->lost_rows += m->rows;
    }
    for (size_t i = 0; i < bd->nstray; i++)
        add_line(r, "NOT CARRIED %s: no manifest names it", bd->stray[i]);
    r->strays = bd->nstray;
    return 0;
}

/* Key indexes whose bytes are not their manifest's CRC-32 (a damaged
 * block; their sizes were checked by the open): each a DAMAGE line, and
 * counted in r->indexes_dropped. An index is rebuilt from its file's
 * rows, which are intact, so none is carried: the new DIR has none, and
 * the next dedup --append builds them all (reading the rows once). */
static void survey_indexes(const rs_bucketdir *bd, rs_repair_job_result *r)
{
    size_t damaged = 0;
    for (size_t k = 0; k < bd->nfiles; k++) {
        char *name = NULL;
        uint64_t size;
        uint32_t want, crc;
        int row;
        if (rs_bucketdir_index_of(bd, k, &name, &size, &want, &row) <= 0)
            continue;
        if (rs_crc32_fileat(bd->fd, name, &crc) != 0)
            add_line(r, "DAMAGE %s/%s: unreadable: %s", bd->path, name, strerror(errno)), damaged++;
        else if (crc != want)
            add_line(r, "DAMAGE %s/%s: CRC-32 %08x, the manifest says %08x", bd->path, name, crc, want), damaged++;
        free(name);
    }
    if (damaged)
        add_line(r, "INDEXES NOT CARRIED: %zu damaged key index%s: the new DIR has no key indexes; the next "
                 "`dedup --append` builds them from the rows (reading them once)", damaged, damaged > 1 ? "es" : "");
    r->indexes_dropped = damaged;
}

/* The new DIR from what bd (opened TOLERANT | INTACT) holds, published with
 * the damaged one kept aside. */
static int rebuild(const rs_repair_job_opts *o, int lockfd, const rs_bucketdir *bd, rs_repair_job_result *r,
                   rs_error *err)
{
    rs_outdir od;
    /* FORCE_ANY: the damaged DIR is never replaced (commit_aside renames
     * it), so the check of what may be replaced does not apply */
    if (rs_outdir_begin(&od, o->dir, RS_OUTDIR_FORCE_ANY, err) != 0)
        return close(lockfd), -1;
    od.lockfd = lockfd;   /* held until DIR is the new one */
    rs_compact_job_result cr = {0};
    if (!(r->aside = rs_name_damaged(o->dir))) {
        rs_outdir_abort(&od);
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    }
    if (rs_compact_into(bd, &od, 0, r->indexes_dropped > 0, &cr, err) != 0) {
        rs_outdir_abort(&od);
        return -1;
    }
    if (rs_outdir_commit_aside(&od, r->aside, err) != 0)
        return -1;
    r->published = 1;
    r->files_after = cr.files_after;
    r->file_bytes = cr.file_bytes;
    return 0;
}

static int repair(const rs_repair_job_opts *o, int lockfd, rs_repair_job_result *r, rs_error *err)
{
    rs_bucketdir bd;
    if (rs_bucketdir_open_flags(&bd, o->dir, UINT64_MAX, RS_BUCKETDIR_TOLERANT, err) != 0)
        return close(lockfd), -1;
    int rc = 0;
    if (strcmp(bd.m.kind, "buckets") != 0)
        rc = rs_error_set(err, RS_EXIT_USAGE, "%s: kind '%s': repair rebuilds bucket directories", o->dir, bd.m.kind);
    else if (!bd.ndamage && (survey_indexes(&bd, r), !r->indexes_dropped))
        r->whole = 1, r->strays = bd.nstray;
    else if (bd.ndamage)
        rc = survey(&bd, r, err);
    rs_bucketdir_close(&bd);
    if (rc != 0 || r->whole)
        return close(lockfd), rc;
    /* again, keeping the intact generations only: under the lock, DIR is
     * as it was a moment ago */
    if (rs_bucketdir_open_flags(&bd, o->dir, UINT64_MAX, RS_BUCKETDIR_TOLERANT | RS_BUCKETDIR_INTACT, err) != 0)
        return close(lockfd), -1;
    r->generations = bd.ngens + 1;
    r->generation = bd.last_gen;
    r->rows = bd.rows;
    if (!r->indexes_dropped)   /* the chain's damage: the kept generations' indexes */
        survey_indexes(&bd, r);
    rc = rebuild(o, lockfd, &bd, r, err);
    rs_bucketdir_close(&bd);
    return rc;
}

int rs_repair_job_run(const rs_repair_job_opts *o, rs_repair_job_result *r, rs_error *err)
{
    memset(r, 0, sizeof *r);
    double t0 = rs_now();
    rs_outdir_recover(o->dir);
    int lockfd, lr = rs_outdir_lock(o->dir, &lockfd, err);
    if (lr != 0)
        return lr > 0 ? rs_error_set(err, RS_EXIT_IO, "%s: no such directory", o->dir) : -1;
    int rc = repair(o, lockfd, r, err);
    r->seconds = rs_now() - t0;
    return rc;
}

void rs_repair_job_result_free(rs_repair_job_result *r)
{
    rs_free_strings(r->lines, r->nlines);
    free(r->aside);
    memset(r, 0, sizeof *r);
}
