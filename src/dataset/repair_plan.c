/* What a repair keeps of a damaged bucket directory (salvage.h:
 * rs_repair_plan_*): the decisions, file by file, apart from the job that
 * reports them and publishes the result.
 *
 * Why here: whether a file is lost, cut back, read again or kept whole is
 * a judgement of the format (its manifest entry against the bytes found:
 * rs_bucketdir_check_all, the same judgement verify makes), and what can
 * be kept of a damaged file is its members' (salvage.c). The repair job
 * says what was decided and publishes it; it decides nothing. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include "dataset/bucketdir_impl.h"
#include "dataset/salvage.h"
#include "ringshard/util.h"

static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Files of bd (ctx) by name, then by their place. */
static int cmp_ix(const void *a, const void *b, void *ctx)
{
    const rs_bucketdir *bd = ctx;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    int c = strcmp(bd->names[x], bd->names[y]);
    return c ? c : (x > y) - (x < y);
}

static int plan_alloc(const rs_bucketdir *bd, rs_repair_plan *p)
{
    size_t n = bd->nfiles;
    memset(p, 0, sizeof *p);
    p->nfiles = n;
    p->files = calloc(n + 1, sizeof *p->files);
    p->indexes = calloc(n + 1, sizeof *p->indexes);
    p->lose = calloc(n + 1, 1);
    p->twice = calloc(n + 1, 1);
    p->keep = calloc(n + 1, sizeof *p->keep);
    p->sv = calloc(n + 1, sizeof *p->sv);
    p->cut = calloc(n + 1, sizeof *p->cut);
    p->reread = calloc(n + 1, sizeof *p->reread);
    return p->files && p->indexes && p->lose && p->twice && p->keep && p->sv && p->cut && p->reread &&
                   rs_lost_book_init(&p->book, bd) == 0
               ? 0
               : -1;
}

/* File k's part of the plan, by its verdict. -1 when out of memory. */
static int decide_file(const rs_bucketdir *bd, size_t k, rs_repair_plan *p)
{
    switch (p->files[k].state) {
    case RS_FILE_DAMAGED:
        if (rs_salvage_file(bd, k, &p->book, &p->keep[k], &p->sv[k]) != 0)
            return -1;
        p->lose[k] = 1;
        p->nlost++;
        p->base_lost |= bd->file_slot[k] == SIZE_MAX && (!p->keep[k].n || p->keep[k].head_lost);
        return 0;
    case RS_FILE_LONGER:
        return (p->cut[p->ncut++] = strdup(bd->names[k])) ? 0 : -1;
    case RS_FILE_ALTERED:
        return (p->reread[p->nreread++] = strdup(bd->names[k])) ? 0 : -1;
    default:
        return 0;
    }
}

/* p->twice: each entry of a name after its first (in bd's order: the
 * first is carried). -1 when out of memory. */
static int mark_twice(const rs_bucketdir *bd, rs_repair_plan *p)
{
    size_t n = bd->nfiles, *ix = malloc((n + 1) * sizeof *ix);
    if (!ix)
        return -1;
    for (size_t k = 0; k < n; k++)
        ix[k] = k;
    qsort_r(ix, n, sizeof *ix, cmp_ix, (void *)bd);
    for (size_t i = 1; i < n; i++)
        if (strcmp(bd->names[ix[i - 1]], bd->names[ix[i]]) == 0)
            p->twice[ix[i]] = 1, p->ntwice++;   /* ix sorted by name, then index: ix[i] is the later one */
    free(ix);
    return 0;
}

/* A base file of a node its ring does not have: whose rows are they?
 * Not repair's to guess (a node name edited, a manifest from elsewhere):
 * RS_EXIT_DATA saying what to correct; 0 when there is none. */
static int refuse_foreign(const rs_bucketdir *bd, rs_error *err)
{
    uint8_t *foreign = calloc(bd->m.nfiles + 1, 1);
    if (!foreign)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    int n = rs_bucketdir_foreign_nodes(bd, foreign, err);
    size_t i = 0;
    while (n > 0 && !foreign[i])
        i++;
    if (n > 0)
        rs_error_set(err, RS_EXIT_DATA, "%s/manifest.json: file %s belongs to node '%s', which its ring does not "
                     "have: repair cannot tell which node's rows it holds; correct the entry's node (or remove the "
                     "entry, and its rows and bytes from the totals), then run repair again", bd->path,
                     bd->m.files[i].file, bd->m.files[i].node ? bd->m.files[i].node : "");
    free(foreign);
    return n != 0 ? -1 : 0;
}

int rs_repair_plan_make(const rs_bucketdir *bd, rs_repair_plan *p, rs_error *err)
{
    if (plan_alloc(bd, p) != 0 || mark_twice(bd, p) != 0)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    /* what repair refuses, before it reads every file */
    if (refuse_foreign(bd, err) != 0)
        return -1;
    for (size_t k = 0; k < bd->nfiles; k++)   /* a node of the base twice: which of its merged files is it? */
        if (p->twice[k] && bd->file_slot[k] == SIZE_MAX)
            return rs_error_set(err, RS_EXIT_DATA, "%s/manifest.json lists %s twice: repair cannot tell the base's "
                                "nodes apart; remove one of the two entries (and its rows and bytes from the totals), "
                                "then run repair again", bd->path, bd->names[k]);
    if (rs_bucketdir_check_all(bd, 0, p->files, p->indexes, err) != 0)
        return -1;
    for (size_t d = 0; d < bd->ndamage; d++)
        p->chain += !bd->damage[d].file;   /* a file's damage: its verdict says it */
    for (size_t k = 0; k < bd->nfiles; k++) {
        if (p->twice[k])
            continue;   /* the same file as its first entry, judged there */
        if (decide_file(bd, k, p) != 0)
            return rs_error_set(err, RS_EXIT_IO, "out of memory");
        p->indexes_damaged += p->indexes[k].state == RS_FILE_DAMAGED;
    }
    if (p->ncut > 1)
        qsort(p->cut, p->ncut, sizeof *p->cut, cmp_name);
    if (p->nreread > 1)
        qsort(p->reread, p->nreread, sizeof *p->reread, cmp_name);
    return 0;
}

int rs_repair_plan_changes(const rs_repair_plan *p)
{   /* (a file listed twice is a damage of the chain: p->chain) */
    return p->chain || p->nlost || p->ncut || p->nreread || p->indexes_damaged;
}

void rs_repair_plan_takes(const rs_bucketdir *bd, const rs_repair_plan *p, uint8_t *take)
{
    for (size_t k = 0; k < bd->nfiles; k++) {
        const char *name = bd->names[k];
        take[k] = p->twice[k] ? RS_TAKE_NONE
                  : p->lose[k] ? (p->keep[k].n ? RS_TAKE_MEMBERS : RS_TAKE_NONE)
                  : p->ncut && bsearch(&name, p->cut, p->ncut, sizeof *p->cut, cmp_name) ? RS_TAKE_CUT
                  : p->nreread && bsearch(&name, p->reread, p->nreread, sizeof *p->reread, cmp_name) ? RS_TAKE_REREAD
                                                                                                   : RS_TAKE_WHOLE;
    }
}

void rs_repair_plan_free(rs_repair_plan *p)
{
    size_t n = p->nfiles;
    rs_bucketdir_verdicts_free(p->files, n);
    rs_bucketdir_verdicts_free(p->indexes, n);
    free(p->lose);
    free(p->twice);
    for (size_t k = 0; p->keep && k < n; k++)
        rs_compact_keep_free(&p->keep[k]);
    for (size_t k = 0; p->sv && k < n; k++)
        free(p->sv[k].inputs), free(p->sv[k].paths), free(p->sv[k].ranges);
    free(p->keep);
    free(p->sv);
    rs_lost_book_free(&p->book);
    rs_free_strings(p->cut, p->ncut);
    rs_free_strings(p->reread, p->nreread);
    memset(p, 0, sizeof *p);
}
