/* Which input's rows a data file holds, in order (runs.h): what lets
 * repair keep a damaged file of several inputs member by member, and
 * compact carry that knowledge into the files it merges.
 *
 * Why it is written down only for a file of several inputs: a file of one
 * input's rows holds that input's rows on its node and no other (its
 * manifest's inputs tell which), so its runs are known without a record.
 * A file of several inputs cannot be told apart again once written: the
 * pipeline counts each input's rows per node as it writes them
 * (rs_manifest_of_run), dedup the rows it keeps of each (its pass 2 walks
 * pass 1's counts: rs_input_walk), compact and repair join their parts'
 * runs (compact.c). */
#include <stdlib.h>
#include <string.h>
#include "dataset/runs.h"

size_t rs_bucketdir_file_inputs(const rs_bucketdir *bd, size_t k, size_t *n)
{
    size_t slot = bd->file_slot[k], at = bd->m.ninputs;
    if (slot == SIZE_MAX)
        return *n = bd->m.ninputs, 0;
    for (size_t g = 0; g < slot; g++)
        at += bd->gens[g].ninputs;
    *n = bd->gens[slot].ninputs;
    return at;
}

/* Appends run r to *v (*n of them, room for *cap), joined to the last one
 * when it goes on from it. 0, or -1 out of memory. */
static int push(rs_manifest_run **v, size_t *n, size_t *cap, rs_manifest_run r)
{
    if (*n && (*v)[*n - 1].input == r.input && (*v)[*n - 1].to == r.from) {
        (*v)[*n - 1].to = r.to;
        return 0;
    }
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 8;
        rs_manifest_run *p = realloc(*v, c * sizeof *p);
        if (!p)
            return -1;
        *v = p, *cap = c;
    }
    (*v)[(*n)++] = r;
    return 0;
}

int rs_runs_take(const rs_row_range *held, size_t nh, uint64_t input, uint64_t rows, int strict, rs_manifest_run **v,
                 size_t *n, size_t *cap)
{
    uint64_t left = rows, total = 0;
    int open = 0;
    for (size_t h = 0; h < nh; h++)
        open |= held[h].to == UINT64_MAX, total += open ? 0 : held[h].to - held[h].from;
    if ((!open && total < rows) || (strict && !open && total != rows))
        return 0;
    for (size_t h = 0; h < nh && left; h++) {
        uint64_t size = held[h].to - held[h].from, take = size < left ? size : left;
        if (push(v, n, cap, (rs_manifest_run){input, held[h].from, held[h].from + take}) != 0)
            return -1;
        left -= take;
    }
    return 1;
}

void rs_manifest_file_take_runs(rs_manifest_file *f, rs_manifest_run *v, size_t n)
{
    uint64_t rows = 0;
    int several = 0;
    for (size_t r = 0; r < n; r++)
        rows += v[r].to - v[r].from, several |= v[r].input != v[0].input;
    if (several && rows == f->rows)
        f->runs = v, f->nruns = n;
    else
        free(v);
}

int rs_bucketdir_file_runs(const rs_bucketdir *bd, size_t k, rs_manifest_run **v, size_t *n)
{
    const rs_manifest_file *f = bd->files[k];
    size_t ni, at = rs_bucketdir_file_inputs(bd, k, &ni), holders = 0, one = 0;
    *v = NULL, *n = 0;
    if (f->nruns || f->runs_text) {
        if (rs_manifest_file_runs(f, v, n) != 0)
            return -1;
        for (size_t r = 0; r < *n; r++)
            (*v)[r].input += at;
        return 0;
    }
    const rs_manifest_input *in = bd->file_slot[k] == SIZE_MAX ? bd->m.inputs : bd->gens[bd->file_slot[k]].inputs;
    rs_row_range *held = NULL, *h1 = NULL;
    size_t nheld = 0, nh1 = 0;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < ni; i++) {
        if (in[i].rows == 0)
            continue;   /* no row of it anywhere */
        rc = rs_manifest_held(&in[i], f->node ? f->node : "", &held, &nheld);
        if (nheld && !holders++)
            one = i, h1 = held, nh1 = nheld, held = NULL;
        free(held), held = NULL;
    }
    size_t cap = 0;
    int got = rc == 0 && holders == 1 && f->rows ? rs_runs_take(h1, nh1, at + one, f->rows, 1, v, n, &cap) : 0;
    free(h1);
    if (got != 1)
        free(*v), *v = NULL, *n = 0;
    return got < 0 || rc < 0 ? -1 : 0;
}

int rs_runs_select(const rs_manifest_run *v, size_t n, uint64_t p, uint64_t q, rs_manifest_run **out, size_t *nout,
                   size_t *cap)
{
    uint64_t seen = 0;   /* rows of the runs before run r */
    for (size_t r = 0; r < n && p < q; r++) {
        uint64_t size = v[r].to - v[r].from;
        if (p < seen + size) {
            uint64_t a = p - seen, take = q - p < size - a ? q - p : size - a;
            if (push(out, nout, cap, (rs_manifest_run){v[r].input, v[r].from + a, v[r].from + a + take}) != 0)
                return -1;
            p += take;
        }
        seen += size;
    }
    return 0;
}

int rs_runs_without(const rs_manifest_run *v, size_t n, const uint64_t *cut, size_t ncut, rs_manifest_run **out,
                    size_t *nout, size_t *cap)
{
    uint64_t p = 0;
    for (size_t c = 0; c <= ncut; c++) {
        uint64_t q = c < ncut ? cut[2 * c] : UINT64_MAX;
        if (rs_runs_select(v, n, p, q, out, nout, cap) != 0)
            return -1;
        p = c < ncut ? cut[2 * c + 1] : p;
    }
    return 0;
}
