/* cluster/lanes.c - the lanes of one process running: their threads and
 * the thread group they talk through (see lanes.h; the design is in
 * cluster.c; how many lanes, and what each gets: src/runplan/runplan.c).
 *
 * A collective is two barriers: every member posts a pointer to its
 * contribution in its slot, waits until all did, computes the result from
 * every slot into memory of its own, and waits again before anyone may
 * reuse its contribution (or overwrite it in place with the result).
 * Collectives are a few dozen a run: a barrier costs nothing there. */
#include "cluster/lanes.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "ringshard/deflate.h"

typedef struct {
    pthread_barrier_t bar;
    const void *ptr[256];
    size_t len[256];
} lane_shared;

static lane_shared *shared(rs_group *g) { return g->impl; }

/* Posts p (n elements or bytes) and waits for every member's. */
static void post(rs_group *g, const void *p, size_t n)
{
    lane_shared *sh = shared(g);
    sh->ptr[g->rank] = p;
    sh->len[g->rank] = n;
    pthread_barrier_wait(&sh->bar);
}

static void done(rs_group *g) { pthread_barrier_wait(&shared(g)->bar); }

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        abort();
    return p;
}

static void l_barrier(rs_group *g) { done(g); }

static void l_bcast(rs_group *g, void *buf, size_t bytes, int root)
{
    post(g, buf, bytes);
    if (g->rank != root)
        memcpy(buf, shared(g)->ptr[root], bytes);
    done(g);
}

/* out = the sum over members [0, upto) of each of their n elements (out
 * may be the member's own v: the sums are kept aside until all read). */
static void sum_below(rs_group *g, const uint64_t *v, uint64_t *out, size_t n, int upto)
{
    uint64_t *t = xmalloc(n * sizeof *t);
    memset(t, 0, n * sizeof *t);
    post(g, v, n);
    for (int r = 0; r < upto; r++) {
        const uint64_t *w = shared(g)->ptr[r];
        for (size_t i = 0; i < n; i++)
            t[i] += w[i];
    }
    done(g);
    memcpy(out, t, n * sizeof *t);
    free(t);
}

static void l_sum_u64(rs_group *g, uint64_t *v, size_t n) { sum_below(g, v, v, n, g->size); }

static void l_exscan_u64(rs_group *g, const uint64_t *v, uint64_t *out, size_t n) { sum_below(g, v, out, n, g->rank); }

static void l_gather_bytes(rs_group *g, const void *p, size_t n, char **all, size_t *lens)
{
    post(g, p, n);
    size_t total = 0;
    for (int r = 0; r < g->size; r++)
        lens[r] = shared(g)->len[r], total += lens[r];
    *all = NULL;
    if (total) {
        *all = xmalloc(total);
        size_t off = 0;
        for (int r = 0; r < g->size; off += lens[r], r++)
            if (lens[r])
                memcpy(*all + off, shared(g)->ptr[r], lens[r]);
    }
    done(g);
}

static void l_crc_concat(rs_group *g, uint64_t *v, size_t n)
{
    uint64_t *t = xmalloc(2 * n * sizeof *t);
    post(g, v, n);
    memcpy(t, shared(g)->ptr[0], 2 * n * sizeof *t);
    for (int r = 1; r < g->size; r++) {
        const uint64_t *b = shared(g)->ptr[r];
        for (size_t i = 0; i < 2 * n; i += 2) {
            t[i] = rs_crc32_combine((uint32_t)t[i], (uint32_t)b[i], b[i + 1]);
            t[i + 1] += b[i + 1];
        }
    }
    done(g);
    memcpy(v, t, 2 * n * sizeof *t);
    free(t);
}

static int l_agree(rs_group *g, rs_error *err)
{
    rs_error first = {0};
    post(g, err, 1);
    for (int r = 0; r < g->size && !first.code; r++)
        if (((const rs_error *)shared(g)->ptr[r])->code)
            first = *(const rs_error *)shared(g)->ptr[r];
    done(g);
    if (!first.code)
        return 0;
    *err = first;
    return -1;
}

/* ------------------------------------------------------------- running */

typedef struct {
    rs_group g;
    rs_lane_fn fn;
    void *ctx;
    pthread_mutex_t *mu;
    pthread_cond_t *cv;
    int *go;                    /* 1: run, -1: a lane could not start, return */
    pthread_t th;
} lane;

static void *lane_main(void *arg)
{
    lane *l = arg;
    pthread_mutex_lock(l->mu);
    while (*l->go == 0)
        pthread_cond_wait(l->cv, l->mu);
    int go = *l->go;
    pthread_mutex_unlock(l->mu);
    if (go > 0)
        l->fn(&l->g, l->ctx);
    return NULL;
}

int rs_lanes_run(int lanes, rs_lane_fn fn, void *ctx)
{
    lane_shared *sh = calloc(1, sizeof *sh);
    lane *l = calloc((size_t)lanes, sizeof *l);
    if (!sh || !l || lanes > 256 || pthread_barrier_init(&sh->bar, NULL, (unsigned)lanes) != 0) {
        free(sh);
        free(l);
        return -1;
    }
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
    int go = 0, made = 1;
    for (int k = 0; k < lanes; k++)
        l[k] = (lane){{k, lanes, "lane", 1, l_barrier, l_bcast, l_sum_u64, l_exscan_u64, l_gather_bytes,
                       l_crc_concat, l_agree, sh},
                      fn, ctx, &mu, &cv, &go, 0};
    /* Every lane starts, or none runs: a group short of a member would
     * wait for it at its first collective forever. */
    while (made < lanes && pthread_create(&l[made].th, NULL, lane_main, &l[made]) == 0)
        made++;
    pthread_mutex_lock(&mu);
    go = made == lanes ? 1 : -1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    if (go > 0)
        fn(&l[0].g, ctx);
    for (int k = 1; k < made; k++)
        pthread_join(l[k].th, NULL);
    pthread_barrier_destroy(&sh->bar);
    free(sh);
    free(l);
    return go > 0 ? 0 : -1;
}
