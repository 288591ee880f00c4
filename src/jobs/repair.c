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
 * Why a damaged file costs its own rows only: the rest of its generation
 * is intact, and its inputs bring back exactly what is lost when the new
 * manifest says which rows of which nodes of them DIR lacks
 * (inputs[].lost, inputs[].lost_rows): an append of such an input again
 * writes only those rows (docs/format-generations.md, "Rows a repair could
 * not keep"). Why a damaged gzip or zstd file costs only the rows of its
 * damaged members, when it holds one input's rows: salvage.c. */
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
#include "dataset/salvage.h"

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

/* Adds path to r->again unless it is there. */
static void again_add(rs_repair_job_result *r, const char *path)
{
    for (size_t i = 0; i < r->nagain; i++)
        if (strcmp(r->again[i], path) == 0)
            return;
    char **na = realloc(r->again, (r->nagain + 2) * sizeof *na);
    if (!na)
        return;
    r->again = na;
    if ((na[r->nagain] = strdup(path)))
        r->nagain++;
}

/* The "NOT KEPT" line of damaged data file k (m: its generation's
 * manifest, or the base's): its rows not kept (the rows of its damaged
 * members, or all), its node, and the inputs whose rows of that node an
 * append brings back; the generation's other files are kept. */
static void not_kept(const rs_bucketdir *bd, size_t k, const rs_manifest *m, const rs_repair_plan *p,
                     rs_repair_job_result *r)
{
    const rs_salvage *sv = &p->sv[k];
    char gname[48], part[240] = "";
    if (bd->file_slot[k] == SIZE_MAX)
        snprintf(gname, sizeof gname, "the base (generation %" PRIu64 ")", m->generation ? m->generation : 1);
    else
        snprintf(gname, sizeof gname, "generation %" PRIu64, m->generation);
    const char *what = bd->m.compress == RS_COMPRESS_ZSTD ? "zstd frames" : "gzip members";
    if (p->keep[k].n)
        snprintf(part, sizeof part, ": %zu of its %zu %s damaged, the %" PRIu64 " rows of the others kept%s",
                 sv->members_lost, sv->members, what, sv->rows_kept,
                 sv->head_lost ? " (the member of its header line damaged: the header line written anew from the "
                                 "manifest)" : "");
    const rs_manifest_file *f = bd->files[k];
    const char *node = f->node ? f->node : "";
    if (p->keep[k].n && !sv->rows_lost)
        add_line(r, "KEPT %s: every row of node %s, of %s: the member of its header line damaged (%s), the %" PRIu64
                 " rows of its %zu other %s intact", bd->paths[k], node, gname,
                 bd->file_slot[k] == SIZE_MAX ? "the header line written anew from the manifest"
                                              : "a segment's header line is not copied",
                 sv->rows_kept, sv->members, what);
    else
        add_line(r, "NOT KEPT %s: %" PRIu64 " rows of node %s, of %s (its other files kept)%s%s%s%s; the inputs "
                 "whose rows of node %s an append ingests again: %s", bd->paths[k], sv->rows_lost, node, gname, part,
                 sv->ranges ? ": " : "", sv->ranges ? sv->ranges : "",
                 sv->ranges ? " (numbered from 0 among the input's rows on the node)" : "", node,
                 sv->inputs ? sv->inputs : "none listed");
    for (size_t i = 0; sv->rows_lost && i < sv->npaths; i++)
        again_add(r, sv->paths[i]);
    r->lost_files += !p->keep[k].n;
    r->kept_in_part += p->keep[k].n && sv->rows_lost;
    r->lost_rows += sv->rows_lost;
}

/* Per node, the rows kept and those not (the files lost): a "NODE" line
 * and an entry of r->node for each node that lost rows. */
static void per_node(const rs_bucketdir *bd, const rs_repair_plan *p, rs_repair_job_result *r)
{
    size_t nb = bd->m.nfiles;
    uint64_t *lost = calloc(nb + 1, sizeof *lost), *kept = calloc(nb + 1, sizeof *kept);
    r->node = calloc(nb + 1, sizeof *r->node);
    r->node_kept = calloc(nb + 1, sizeof *r->node_kept);
    r->node_lost = calloc(nb + 1, sizeof *r->node_lost);
    for (size_t k = 0; lost && kept && k < bd->nfiles; k++) {
        uint64_t gone = p->lose[k] ? p->sv[k].rows_lost : 0;
        lost[bd->file_base[k]] += gone;
        kept[bd->file_base[k]] += bd->files[k]->rows - gone;
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

/* The "INDEX NOT CARRIED" line of each node a file of which is lost: its
 * merged file has no key index (rs_compact_parts), which the next dedup
 * --append builds from its rows; the other nodes' indexes are merged. */
static void lost_indexes(const rs_bucketdir *bd, const rs_repair_plan *p, rs_repair_job_result *r)
{
    size_t nb = bd->m.nfiles;
    uint8_t *hit = calloc(nb + 1, 1);
    for (size_t k = 0; hit && k < bd->nfiles; k++)
        hit[bd->file_base[k]] |= p->lose[k] | p->twice[k];
    for (size_t i = 0; hit && i < nb; i++)
        if (hit[i])
            add_line(r, "INDEX NOT CARRIED for node %s: a file of it not kept: its merged file has no key index; "
                     "the next `dedup --append` builds it from its rows", bd->m.files[i].node ? bd->m.files[i].node
                                                                                              : "");
    free(hit);
}

/* Whether a file of bd has a key index. */
static int has_indexes(const rs_bucketdir *bd)
{
    for (size_t k = 0; k < bd->nfiles; k++)
        if (bd->files[k]->index)
            return 1;
    return 0;
}

/* What the plan says, each damage a line, then what repair keeps: a
 * damaged data file not kept (p->lose) but its intact members, its
 * generation's other files kept; a longer file cut back; a file whose rows
 * are intact but whose stored bytes changed copied and its stored_crc32
 * made again; a damaged key index, or a file lost, drops indexes
 * (r->indexes_dropped). */
static void report(const rs_bucketdir *bd, const rs_repair_plan *p, rs_repair_job_result *r)
{
    for (size_t d = 0; d < bd->ndamage; d++) {
        const rs_bucketdir_damage *dm = &bd->damage[d];
        if (dm->file)
            continue;   /* a file's: its verdict below says it */
        add_line(r, "DAMAGE %s", dm->msg);
        if (dm->dropped) {
            r->lost_generations += dm->ngens;
            r->lost_unknown = 1;
        }
    }
    for (size_t k = 0; k < bd->nfiles; k++) {
        if (p->twice[k])
            continue;   /* its first entry's lines say it */
        const rs_bucketdir_verdict *v = &p->files[k];
        const char *what = v->msg ? v->msg : bd->paths[k];
        if (v->state == RS_FILE_DAMAGED)
            add_line(r, "DAMAGE %s", what);
        else if (v->state == RS_FILE_LONGER)
            add_line(r, "CUT BACK %s (its rows kept)", what), r->cut_back++;
        else if (v->state == RS_FILE_ALTERED)
            add_line(r, "REWRITTEN %s (its rows kept, its stored_crc32 made again from its bytes)", what),
                r->rewritten++;
        if (p->indexes[k].state == RS_FILE_DAMAGED)
            add_line(r, "DAMAGE %s", p->indexes[k].msg ? p->indexes[k].msg : "a key index");
    }
    r->indexes_dropped = p->indexes_damaged;
    for (size_t k = 0; k < bd->nfiles; k++)
        if (p->lose[k])
            not_kept(bd, k, bd->file_slot[k] == SIZE_MAX ? &bd->m : &bd->gens[bd->file_slot[k]], p, r);
    if (p->nlost)
        per_node(bd, p, r);
    if (r->indexes_dropped)
        add_line(r, "INDEXES NOT CARRIED: %zu damaged key index%s: the new DIR has no key indexes; the next "
                 "`dedup --append` builds them from the rows (reading them once)", r->indexes_dropped,
                 r->indexes_dropped == 1 ? "" : "es");
    else if ((p->nlost || p->ntwice) && has_indexes(bd))
        lost_indexes(bd, p, r);
    for (size_t k = 0; k < bd->nfiles; k++)
        if (p->twice[k])
            add_line(r, "NOT CARRIED the second entry of %s: its manifest lists it twice (its rows are carried once)",
                     bd->paths[k]);
    for (size_t i = 0; i < bd->nstray; i++)
        add_line(r, "NOT CARRIED %s: no manifest names it", bd->stray[i]);
    r->strays = bd->nstray;
}

/* The header bytes a node's merged file starts with when its base file
 * is lost (the header line from the manifest, compressed as DIR's files
 * are); none when no base file is lost. */
static int lost_base_head(const rs_bucketdir *bd, const rs_repair_plan *p, rs_buf *head, rs_error *err)
{
    if (!p->base_lost)
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

/* The new DIR from what bd holds but the lost files (their nodes recorded
 * as lost on their generation's inputs), published with the damaged one
 * kept aside. */
static int rebuild(const rs_repair_job_opts *o, int lockfd, const rs_bucketdir *bd, const rs_repair_plan *p,
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
    else if (lost_base_head(bd, p, &head, err) == 0) {
        rs_repair_plan_takes(bd, p, take);
        rs_compact_take t = {.take = take, .keep = p->keep, .head = head.data, .head_len = head.len,
                             .record_lost = p->nlost > 0, .lost = p->book.lost, .nlost = p->book.nlost,
                             .lost_rows = p->book.lost_rows, .nlost_rows = p->book.nlost_rows};
        rs_compact_parts(bd, &od, 0, r->indexes_dropped > 0, &t, &cr, err);
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

/* Checks bd (every file read: rs_bucketdir_check_all), says what it found,
 * and builds the new DIR when there is anything to repair. */
static int repair_open(const rs_repair_job_opts *o, int lockfd, rs_bucketdir *bd, rs_repair_job_result *r,
                       rs_error *err)
{
    rs_repair_plan p;
    int rc = rs_repair_plan_make(bd, &p, err);
    if (rc == 0)
        report(bd, &p, r);
    if (rc == 0 && !rs_repair_plan_changes(&p))
        r->whole = 1;
    else if (rc == 0) {
        r->generations = bd->ngens + 1;
        r->generation = bd->last_gen;
        r->rows = bd->rows - r->lost_rows;
        rc = rebuild(o, lockfd, bd, &p, r, err);
        lockfd = -1;
    }
    if (lockfd >= 0)
        close(lockfd);
    rs_repair_plan_free(&p);
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
    int lockfd;
    if (rs_outdir_recover_lock(o->dir, &lockfd, err) != 0)
        return -1;
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
