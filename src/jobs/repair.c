/* The repair job (job_repair.h): the library side of `ringshard repair`.
 *
 * Why the damaged directory is renamed aside and not rebuilt in place:
 * what cannot be kept (a generation whose manifest is lost, a damaged
 * file) may still be worth a look, and repair must never be the step that
 * loses a row; so the directory stays whole, under another name, and DIR
 * becomes a compacted directory of what is intact.
 *
 * Why every file is read, not only listed: a flipped bit leaves a file's
 * size as it was, and a repair that trusted sizes would call such a
 * directory whole while verify fails it. The check is the dataset layer's
 * (rs_bucketdir_check_all), the same judgement verify makes of each file.
 *
 * Why a generation with one damaged file is not kept whole: its inputs
 * are what brings its rows back, and an append of them again adds every
 * row of them; keeping its intact files would then hold those twice. */
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
#include "ringshard/pipeline.h"
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

static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

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

/* What one repair found and decided, between its steps. */
typedef struct {
    rs_bucketdir_verdict *files, *indexes;  /* [bd.nfiles] rs_bucketdir_check_all's */
    uint8_t *drop;            /* [bd.ngens] 1: a data file of it is damaged: not kept */
    int base_out;             /* a base file is damaged: the base's rows are not kept */
    int chain;                /* damages of the chain (bd.damage) */
    char **cut;               /* names of the longer files cut back, sorted */
    size_t ncut;
} plan;

/* The base's or generation g's "NOT KEPT" line (m its manifest), with the
 * damaged files that made it so. */
static void not_kept(const rs_bucketdir *bd, const plan *p, size_t slot, const rs_manifest *m, rs_repair_job_result *r)
{
    char *in = inputs_of(m);
    char gname[40];
    if (slot == SIZE_MAX)
        snprintf(gname, sizeof gname, "the base (generation %" PRIu64 ")", m->generation ? m->generation : 1);
    else
        rs_gen_dir_name(m->generation, gname);
    size_t bad = 0;
    for (size_t k = 0; k < bd->nfiles; k++)
        bad += bd->file_slot[k] == slot && p->files[k].state == RS_FILE_DAMAGED;
    add_line(r, "NOT KEPT %s: %" PRIu64 " rows in %zu files (%zu of them damaged: listed above); its inputs, which "
             "an append ingests again: %s", gname, m->rows, m->nfiles, bad, in && *in ? in : "none listed");
    free(in);
    char **na = realloc(r->again, (r->nagain + m->ninputs + 1) * sizeof *na);
    for (size_t i = 0; na && i < m->ninputs; i++)
        if ((na[r->nagain] = strdup(m->inputs[i].path)))
            r->nagain++;
    r->again = na ? na : r->again;
    r->lost_generations++;
    r->lost_rows += m->rows;
}

/* Per node, the rows kept and those not (the files of what is not kept):
 * a "NODE" line and an entry of r->node for each node that lost rows. */
static void per_node(const rs_bucketdir *bd, const plan *p, rs_repair_job_result *r)
{
    size_t nb = bd->m.nfiles;
    uint64_t *lost = calloc(nb + 1, sizeof *lost), *kept = calloc(nb + 1, sizeof *kept);
    r->node = calloc(nb + 1, sizeof *r->node);
    r->node_kept = calloc(nb + 1, sizeof *r->node_kept);
    r->node_lost = calloc(nb + 1, sizeof *r->node_lost);
    for (size_t k = 0; lost && kept && k < bd->nfiles; k++) {
        size_t slot = bd->file_slot[k];
        int out = slot == SIZE_MAX ? p->base_out : p->drop[slot];
        (out ? lost : kept)[bd->file_base[k]] += bd->files[k]->rows;
    }
    for (size_t i = 0; lost && kept && i < nb; i++) {
        const char *node = bd->m.files[i].node ? bd->m.files[i].node : "";
        if (!lost[i])
            continue;
        add_line(r, "NODE %s: %" PRIu64 " rows kept, %" PRIu64 " not kept", node, kept[i], lost[i]);
        if (r->node && r->node_kept && r->node_lost && (r->node[r->nnodes] = strdup(node))) {
            r->node_kept[r->nnodes] = kept[i];
            r->node_lost[r->nnodes++] = lost[i];
        }
    }
    free(lost);
    free(kept);
}

/* Every damage of bd, each a line, and what repair keeps: a generation
 * with a damaged data file is not kept (p->drop), nor the base's rows when
 * a base file is damaged (p->base_out); a longer file whose first
 * file_bytes are intact is cut back to them (p->cut); a damaged key index
 * drops every index (r->indexes_dropped). -1 with err (out of memory). */
static int survey(const rs_bucketdir *bd, plan *p, rs_repair_job_result *r, rs_error *err)
{
    for (size_t d = 0; d < bd->ndamage; d++) {
        const rs_bucketdir_damage *dm = &bd->damage[d];
        if (dm->file)
            continue;   /* a file's: its verdict below says it */
        p->chain++;
        add_line(r, "DAMAGE %s", dm->msg);
        if (dm->dropped) {
            r->lost_generations += dm->ngens;
            r->lost_unknown = 1;
        }
    }
    if (!(p->cut = calloc(bd->nfiles + 1, sizeof *p->cut)))
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    for (size_t k = 0; k < bd->nfiles; k++) {
        const rs_bucketdir_verdict *v = &p->files[k];
        size_t slot = bd->file_slot[k];
        if (v->state == RS_FILE_DAMAGED) {
            add_line(r, "DAMAGE %s", v->msg ? v->msg : bd->paths[k]);
            if (slot == SIZE_MAX)
                p->base_out = 1;
            else
                p->drop[slot] = 1;
        } else if (v->state == RS_FILE_LONGER) {
            add_line(r, "CUT BACK %s (its rows kept)", v->msg ? v->msg : bd->paths[k]);
            r->cut_back++;
            if (!(p->cut[p->ncut++] = strdup(bd->names[k])))
                return rs_error_set(err, RS_EXIT_IO, "out of memory");
        }
        if (p->indexes[k].state == RS_FILE_DAMAGED) {
            add_line(r, "DAMAGE %s", p->indexes[k].msg ? p->indexes[k].msg : "a key index");
            r->indexes_dropped++;
        }
    }
    if (p->ncut > 1)
        qsort(p->cut, p->ncut, sizeof *p->cut, cmp_name);
    if (p->base_out)
        not_kept(bd, p, SIZE_MAX, &bd->m, r);
    for (size_t g = 0; g < bd->ngens; g++)
        if (p->drop[g])
            not_kept(bd, p, g, &bd->gens[g], r);
    if (p->base_out || r->lost_rows)
        per_node(bd, p, r);
    if (r->indexes_dropped || p->base_out)
        add_line(r, "INDEXES NOT CARRIED: %zu damaged key index%s%s: the new DIR has no key indexes; the next "
                 "`dedup --append` builds them from the rows (reading them once)", r->indexes_dropped,
                 r->indexes_dropped == 1 ? "" : "es", p->base_out ? ", and the base's rows not kept" : "");
    for (size_t i = 0; i < bd->nstray; i++)
        add_line(r, "NOT CARRIED %s: no manifest names it", bd->stray[i]);
    r->strays = bd->nstray;
    return 0;
}

/* How the new DIR takes each file of bd (bd: without the generations not
 * kept): the base's files left out when p->base_out, a longer file cut
 * back, the others whole; and the header bytes a node's merged file then
 * starts with. */
static int takes(const rs_bucketdir *bd, const plan *p, uint8_t *take, rs_buf *head, rs_error *err)
{
    for (size_t k = 0; k < bd->nfiles; k++) {
        const char *name = bd->names[k];
        take[k] = p->base_out && !rs_bucketdir_segment(bd, k) ? RS_TAKE_NONE
                  : p->ncut && bsearch(&name, p->cut, p->ncut, sizeof *p->cut, cmp_name) ? RS_TAKE_CUT
                                                                                        : RS_TAKE_WHOLE;
    }
    if (!p->base_out)
        return 0;
    rs_pipeline_opts po = {0};
    po.compress = bd->m.compress, po.level = bd->m.level;
    rs_buf line = {0};
    int rc = bd->m.header && bd->m.header_line ? rs_buf_append(&line, bd->m.header_line, strlen(bd->m.header_line)) |
                                                     rs_buf_append(&line, "\n", 1)
                                               : 0;
    if (rc == 0)
        rc = rs_pipeline_header_bytes(&po, line.data ? line.data : "", line.len, head);
    rs_buf_free(&line);
    return rc ? rs_error_set(err, RS_EXIT_IO, "compressing the header line failed: %s",
                             bd->m.compress ? rs_deflater_why() : "out of memory") : 0;
}

/* The new DIR from what bd holds (bd: without the generations not kept),
 * published with the damaged one kept aside. */
static int rebuild(const rs_repair_job_opts *o, int lockfd, const rs_bucketdir *bd, const plan *p,
                   rs_repair_job_result *r, rs_error *err)
{
    rs_outdir od;
    /* FORCE_ANY: the damaged DIR is never replaced (commit_aside keeps it
     * aside), so the check of what may be replaced does not apply */
    if (rs_outdir_begin(&od, o->dir, RS_OUTDIR_FORCE_ANY, err) != 0)
        return close(lockfd), -1;
    od.lockfd = lockfd;   /* held until DIR is the new one */
    rs_compact_job_result cr = {0};
    uint8_t *take = calloc(bd->nfiles + 1, 1);
    rs_buf head = {0};
    if (!take || !(r->aside = rs_name_damaged(o->dir)))
        rs_error_set(err, RS_EXIT_IO, "out of memory");
    else if (takes(bd, p, take, &head, err) == 0) {
        rs_compact_take t = {take, head.data, head.len, p->base_out};
        rs_compact_parts(bd, &od, 0, r->indexes_dropped > 0 || p->base_out, &t, &cr, err);
    }
    free(take);
    rs_buf_free(&head);
    if (err->code) {
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

static void plan_free(plan *p, size_t nfiles)
{
    rs_bucketdir_verdicts_free(p->files, nfiles);
    rs_bucketdir_verdicts_free(p->indexes, nfiles);
    free(p->drop);
    rs_free_strings(p->cut, p->ncut);
}

/* Checks bd (every file read: rs_bucketdir_check_all), says what it found,
 * and builds the new DIR when there is anything to repair. */
static int repair_open(const rs_repair_job_opts *o, int lockfd, rs_bucketdir *bd, rs_repair_job_result *r,
                       rs_error *err)
{
    size_t n = bd->nfiles;
    plan p = {0};
    p.files = calloc(n + 1, sizeof *p.files);
    p.indexes = calloc(n + 1, sizeof *p.indexes);
    p.drop = calloc(bd->ngens + 1, 1);
    int rc = -1;
    if (!p.files || !p.indexes || !p.drop)
        rs_error_set(err, RS_EXIT_IO, "out of memory");
    else if (rs_bucketdir_check_all(bd, 0, p.files, p.indexes, err) == 0)
        rc = survey(bd, &p, r, err);
    int nothing = rc == 0 && !p.chain && !p.base_out && !p.ncut && !r->indexes_dropped && !r->lost_generations;
    if (rc == 0 && nothing)
        r->whole = 1;
    if (rc == 0 && !nothing) {
        size_t n0 = bd->nfiles;
        uint64_t base_rows = p.base_out ? bd->m.rows : 0;
        if (rs_bucketdir_drop_gens(bd, p.drop, err) != 0)
            rc = -1;
        else {
            r->generations = bd->ngens + !p.base_out;
            r->generation = bd->last_gen;
            r->rows = bd->rows - base_rows;
            rc = rebuild(o, lockfd, bd, &p, r, err);
            lockfd = -1;
        }
        n = n0;
    }
    if (lockfd >= 0)
        close(lockfd);
    plan_free(&p, n);
    return rc;
}

static int repair(const rs_repair_job_opts *o, int lockfd, rs_repair_job_result *r, rs_error *err)
{
    rs_bucketdir bd;
    if (rs_bucketdir_open_flags(&bd, o->dir, UINT64_MAX, RS_BUCKETDIR_TOLERANT, err) != 0)
        return close(lockfd), -1;
    int rc;
    if (strcmp(bd.m.kind, "buckets") != 0) {
        close(lockfd);
        rc = rs_error_set(err, RS_EXIT_USAGE, "%s: kind '%s': repair rebuilds bucket directories", o->dir, bd.m.kind);
    } else {
        rc = repair_open(o, lockfd, &bd, r, err);
    }
    rs_bucketdir_close(&bd);
    return rc;
}

int rs_repair_job_run(const rs_repair_job_opts *o, rs_repair_job_result *r, rs_error *err)
{
    memset(r, 0, sizeof *r);
    double t0 = rs_now();
    if (rs_outdir_recover(o->dir, err) != 0)
        return -1;
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
    rs_free_strings(r->node, r->nnodes);
    rs_free_strings(r->again, r->nagain);
    free(r->node_kept);
    free(r->node_lost);
    free(r->aside);
    memset(r, 0, sizeof *r);
}
