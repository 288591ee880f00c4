/* The run plan (ringshard/runplan.h) against an independent recomputation
 * of the formulas it replaced - one pipeline's plan (floor, batch size,
 * parse groups, what a thread keeps) and the choice of lanes (producers,
 * threads, items, standard input, memory, open files), written out here
 * again from their definitions over the pipeline's costs - for a matrix of
 * options, plus a few plans worked out by hand, and its invariants: the
 * lanes' threads add up to the run's, their shares and the common part fit
 * --memory, each lane holds 8 batches besides its threads and one group,
 * the batch size does not depend on the threads, the open files fit the
 * hard limit. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include "rs_config.h"
#include "ringshard/deflate.h"
#include "ringshard/runplan.h"

TestSuite(runplan, .timeout = 300);

#define KIB ((uint64_t)1 << 10)
#define MIB ((uint64_t)1 << 20)
#define GIB ((uint64_t)1 << 30)

/* ------------------------------------------- the formulas, written again */

typedef struct {
    int threads, groups;
    size_t cap, keep;
} old_shape;

/* One pipeline on T threads in `memory` (batches of `given` bytes, or of
 * the size memory gives): -1 where the run is refused. The constants are
 * the pipeline's: batches of 64 KiB to 64 MiB, at most 64 parse groups. */
static int old_plan(const rs_pipeline_opts *o, int T, uint64_t memory, size_t given, old_shape *m)
{
    rs_pipeline_costs c;
    rs_pipeline_costs_of(o, T, &c);
    uint64_t room = 2 * (c.threads + c.per_group), batches = 16 * 64 * KIB;
    if (memory < c.base + (room > batches ? room : batches))
        return -1;
    uint64_t cap = (memory - c.base) / 16;
    m->cap = cap < 64 * KIB ? 64 * KIB : (cap > 64 * MIB ? 64 * MIB : (size_t)cap);
    if (given) {
        m->cap = given;
        if (memory < c.base + 8 * (uint64_t)given + c.threads + c.per_group)
            return -1;
    }
    uint64_t left = memory - c.base - 8 * (uint64_t)m->cap - c.threads;
    int G = 4 * T > 64 ? 64 : 4 * T;
    while (G > 1 && (uint64_t)G * c.per_group > left)
        G /= 2;
    m->threads = T;
    m->groups = G;
    m->keep = m->cap / (size_t)T > 64 * KIB ? m->cap / (size_t)T : 64 * KIB;
    return 0;
}

typedef struct {
    int lanes, threads[256];
    uint64_t memory;
    size_t cap;
    char why[160];
} old_lanes;

static int old_fit(const rs_pipeline_opts *o, int T, int P, size_t cap, uint64_t *share)
{
    uint64_t common = RS_MEMORY_FIXED + o->held;
    if (o->memory <= common)
        return 0;
    *share = common + (o->memory - common) / (uint64_t)P;
    old_shape m;
    return old_plan(o, (T + P - 1) / P, *share, cap, &m) == 0;
}

static int old_undividable(const rs_pipeline_opts *o)
{
    for (size_t i = 0; i < o->ninputs; i++)
        if (!strcmp(o->inputs[i], "-"))
            return 1;
    return o->bad_rows == RS_BAD_ROW_QUARANTINE && o->quarantine && !strcmp(o->quarantine, "/dev/stderr");
}

static void old_choose(const rs_pipeline_opts *o, size_t nitems, old_lanes *pl)
{
    memset(pl, 0, sizeof *pl);
    int T = o->threads;
    int feeds = !o->dest_paths || o->compress == RS_COMPRESS_NONE ? 3 : 4;
    int P = o->producers > 0 ? o->producers : (T + feeds - 1) / feeds;
    if (o->producers > 0)
        snprintf(pl->why, sizeof pl->why, "--producers %d", o->producers);
    else
        snprintf(pl->why, sizeof pl->why, "automatic: %d threads / %d a producer feeds", T, feeds);
    if (P > T)
        P = T, snprintf(pl->why, sizeof pl->why, "one thread a lane at least (%d threads)", T);
    if (nitems < (size_t)P)
        P = nitems ? (int)nitems : 1, snprintf(pl->why, sizeof pl->why, "%zu work items", nitems);
    if (P > 1 && old_undividable(o))
        P = 1, snprintf(pl->why, sizeof pl->why, "standard input or a quarantine written in place");
    old_shape whole;
    size_t cap = P > 1 && old_plan(o, T, o->memory, o->batch_bytes, &whole) == 0 ? whole.cap : 0;
    if (P > 1 && cap == 0)
        P = 1;
    uint64_t share = o->memory;
    int want = P;
    while (P > 1 && !old_fit(o, T, P, cap, &share))
        P--;
    if (P < want)
        snprintf(pl->why, sizeof pl->why, "--memory: %d lanes of 8 batches of %.1f MiB fit", P, cap / 1048576.0);
    struct rlimit rl;
    uint64_t per = (uint64_t)o->ndest + 64;
    if (P > 1 && o->dest_paths && getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max != RLIM_INFINITY &&
        (uint64_t)rl.rlim_max < (uint64_t)P * per + 64) {
        uint64_t fit = rl.rlim_max > per + 64 ? ((uint64_t)rl.rlim_max - 64) / per : 1;
        P = fit > 1 ? (int)fit : 1;
        snprintf(pl->why, sizeof pl->why, "open-file limit %llu: %d lanes of %u outputs fit",
                 (unsigned long long)rl.rlim_max, P, o->ndest);
    }
    pl->lanes = P;
    pl->cap = P > 1 ? cap : 0;
    pl->memory = P > 1 ? share : o->memory;
    for (int k = 0; k < P; k++)
        pl->threads[k] = T / P + (k < T % P);
}

/* ------------------------------------------------------------- options */

static const char *const some_paths[] = {"a", NULL};  /* only its being set counts */
static const char *const plain_inputs[] = {"a.csv", "b.csv"};
static const char *const stdin_inputs[] = {"a.csv", "-"};

static rs_pipeline_opts opts(int threads, uint64_t memory, int compress, uint32_t ndest, int files, int producers)
{
    rs_pipeline_opts o;
    rs_pipeline_opts_default(&o);
    o.threads = threads;
    o.memory = memory;
    o.compress = compress;
    o.level = compress == RS_COMPRESS_ZSTD ? 3 : 1;
    o.ndest = ndest;
    o.dest_paths = files ? some_paths : NULL;
    o.producers = producers;
    o.inputs = plain_inputs;
    o.ninputs = 2;
    return o;
}

static void same_shape(const rs_pipeline_shape *s, const old_shape *m, const char *what)
{
    cr_assert_eq(s->threads, m->threads, "%s: threads %d, want %d", what, s->threads, m->threads);
    cr_assert_eq(s->groups, m->groups, "%s: groups %d, want %d", what, s->groups, m->groups);
    cr_assert_eq(s->batch_bytes, m->cap, "%s: batch %zu, want %zu", what, s->batch_bytes, m->cap);
    cr_assert_eq(s->member_keep, m->keep, "%s: keep %zu, want %zu", what, s->member_keep, m->keep);
}

/* The invariants of a plan that was not refused. */
static void invariants(const rs_pipeline_opts *o, const rs_run_plan *p, const char *what)
{
    int sum = 0;
    for (int k = 0; k < p->lanes; k++) {
        const rs_pipeline_shape *s = &p->lane[k];
        sum += s->threads;
        cr_assert_eq(s->batch_bytes, p->batch_bytes, "%s: lane %d batch %zu, the process's %zu", what, k,
                     s->batch_bytes, p->batch_bytes);
        rs_pipeline_costs c;
        rs_pipeline_costs_of(o, s->threads, &c);
        cr_assert_geq(p->lane_memory, c.base + 8 * (uint64_t)s->batch_bytes + c.threads + c.per_group,
                      "%s: lane %d's share cannot hold 8 batches, its threads and a group", what, k);
        cr_assert(s->groups >= 1 && s->groups <= 64 && s->member_keep >= 64 * KIB, "%s: lane %d", what, k);
    }
    cr_assert_eq(sum, p->threads, "%s: the lanes' threads add up to %d, not %d", what, sum, p->threads);
    uint64_t common = RS_MEMORY_FIXED + o->held;
    cr_assert_leq((uint64_t)p->lanes * (p->lane_memory - common) + common, o->memory,
                  "%s: %d shares of %llu and the common part exceed --memory", what, p->lanes,
                  (unsigned long long)p->lane_memory);
    struct rlimit rl;
    cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (p->lanes > 1 && o->dest_paths) {
        uint64_t need = (uint64_t)p->lanes * (o->ndest + 64) + 64;
        cr_assert_eq(p->open_files, need, "%s: open files %llu, want %llu", what,
                     (unsigned long long)p->open_files, (unsigned long long)need);
        cr_assert(rl.rlim_max == RLIM_INFINITY || need <= (uint64_t)rl.rlim_max, "%s: %llu files", what,
                  (unsigned long long)need);
        cr_assert(rl.rlim_cur == RLIM_INFINITY || need <= (uint64_t)rl.rlim_cur, "%s: soft limit not raised", what);
    }
}

/* Plans o over nitems and compares with the formulas; returns the plan's
 * batch size (0: refused). */
static size_t check_one(const rs_pipeline_opts *o, size_t nitems, rs_run_plan *p)
{
    char what[200];
    snprintf(what, sizeof what, "-j %d --memory %llu compress %d ndest %u%s producers %d items %zu held %llu",
             o->threads, (unsigned long long)o->memory, o->compress, o->ndest, o->dest_paths ? " files" : "",
             o->producers, nitems, (unsigned long long)o->held);
    old_lanes want;
    old_choose(o, nitems, &want);
    old_shape whole;
    int refused = old_plan(o, o->threads, o->memory, o->batch_bytes, &whole) != 0;
    rs_error err = {0};
    int rc = rs_run_plan_make(o, nitems, p, &err);
    cr_assert_eq(rc, refused ? -1 : 0, "%s: rc %d (%s)", what, rc, err.msg);
    cr_assert_eq(err.code, refused ? RS_EXIT_USAGE : 0, "%s: %s", what, err.msg);
    cr_assert_eq(p->threads, o->threads, "%s", what);
    cr_assert_eq(p->lanes, want.lanes, "%s: %d lanes, want %d", what, p->lanes, want.lanes);
    cr_assert_str_eq(p->why, want.why, "%s", what);
    if (refused) {
        cr_assert(!strncmp(err.msg, "--memory ", 9) || !strncmp(err.msg, "internal error: a lane's ", 25), "%s: %s",
                  what, err.msg);
        cr_assert_eq(rs_pipeline_batch_bytes(o), 0, "%s", what);
        return 0;
    }
    cr_assert_eq(p->lane_memory, want.memory, "%s: share %llu, want %llu", what, (unsigned long long)p->lane_memory,
                 (unsigned long long)want.memory);
    cr_assert_eq(p->batch_bytes, whole.cap, "%s: batch %zu, want %zu", what, p->batch_bytes, whole.cap);
    cr_assert_eq(rs_pipeline_batch_bytes(o), whole.cap, "%s", what);
    int lane_refused = 0;
    if (p->lanes == 1) {
        same_shape(&p->lane[0], &whole, what);
    } else {
        for (int k = 0; k < p->lanes; k++) {
            old_shape m;
            if (old_plan(o, want.threads[k], want.memory, want.cap, &m) != 0) {
                /* fewer lanes for the files, more threads each in the share --memory gave */
                cr_assert_eq(p->lane[k].threads, 0, "%s: lane %d runs where it cannot", what, k);
                lane_refused = 1;
                continue;
            }
            same_shape(&p->lane[k], &m, what);
        }
    }
    cr_assert_eq(p->lane_refused.code, lane_refused ? RS_EXIT_USAGE : 0, "%s: %s", what, p->lane_refused.msg);
    if (!lane_refused)
        invariants(o, p, what);
    return p->batch_bytes;
}

/* ------------------------------------------------------------- the tests */

Test(runplan, equals_the_formulas_over_a_matrix_with_its_invariants)
{
    static rs_run_plan p;
    const int threads[] = {1, 2, 3, 8, 64};
    const uint64_t memory[] = {16 * MIB, 24 * MIB, 32 * MIB, 48 * MIB, 100 * MIB, 300 * MIB, GIB, 2 * GIB, 4 * GIB,
                               64 * GIB};
    int compress[] = {RS_COMPRESS_NONE, RS_COMPRESS_GZIP, RS_COMPRESS_ZSTD};
    const uint32_t ndest[] = {1, 1000, 100000};
    const size_t items[] = {1, 2, 3, 5, 100, SIZE_MAX};
    const int producers[] = {0, 1, 3, 16};
    const uint64_t held[] = {0, 5 * MIB};
    size_t ncodecs = RS_HAVE_ZSTD ? 3 : 2, plans = 0, refused = 0, multi = 0;
    for (size_t c = 0; c < ncodecs; c++)
        for (size_t d = 0; d < 3; d++)
            for (int files = 0; files <= 1; files++)
                for (size_t m = 0; m < sizeof memory / sizeof *memory; m++)
                    for (size_t h = 0; h < 2; h++) {
                        size_t batch = 0;  /* the first thread count's: the others' must match */
                        for (size_t t = 0; t < 5; t++)
                            for (size_t pr = 0; pr < 4; pr++)
                                for (size_t i = 0; i < 6; i++) {
                                    rs_pipeline_opts o = opts(threads[t], memory[m], compress[c], ndest[d], files,
                                                              producers[pr]);
                                    o.held = held[h];
                                    size_t b = check_one(&o, items[i], &p);
                                    plans++, refused += b == 0, multi += p.lanes > 1;
                                    if (b && batch)
                                        cr_assert_eq(b, batch, "the batch size changed with -j %d", threads[t]);
                                    if (b && !batch)
                                        batch = b;
                                }
                    }
    /* the matrix reaches every branch: refusals and several lanes */
    cr_assert_gt(refused, 100, "%zu of %zu refused", refused, plans);
    cr_assert_gt(multi, 1000, "%zu of %zu with lanes", multi, plans);
}

Test(runplan, floors_and_given_batches)
{
    static rs_run_plan p;
    for (int T = 1; T <= 64; T *= 4) {
        rs_pipeline_opts o = opts(T, 0, RS_COMPRESS_GZIP, 1000, 1, 0);
        uint64_t floor = rs_pipeline_min_memory(&o);
        o.memory = floor;
        cr_assert_neq(check_one(&o, SIZE_MAX, &p), 0, "-j %d: the floor itself is refused", T);
        o.memory = floor - 1;
        cr_assert_eq(check_one(&o, SIZE_MAX, &p), 0, "-j %d: below the floor is planned", T);
        cr_assert_eq(p.lanes, 1);
        /* a given batch size is kept, or refused when 8 do not fit */
        o.memory = 200 * MIB;
        o.batch_bytes = 4 * MIB;
        cr_assert_eq(check_one(&o, SIZE_MAX, &p), 4 * MIB);
        o.batch_bytes = 32 * MIB;
        cr_assert_eq(check_one(&o, SIZE_MAX, &p), 0);
    }
}

Test(runplan, by_hand)
{
    static rs_run_plan p;
    rs_error err = {0};
    /* counting into one destination at -j 1 in 1 GiB: a sixteenth of what
     * the 14 MiB of code and the one output's 32 bytes of counts leave */
    rs_pipeline_opts o = opts(1, GIB, RS_COMPRESS_NONE, 1, 0, 0);
    cr_assert_eq(rs_run_plan_make(&o, SIZE_MAX, &p, &err), 0);
    cr_assert_eq(p.batch_bytes, (size_t)((GIB - 14 * MIB - 32) / 16));
    cr_assert_eq(p.lanes, 1);
    cr_assert_str_eq(p.why, "automatic: 1 threads / 3 a producer feeds");
    cr_assert_eq(p.lane[0].member_keep, p.batch_bytes);
    cr_assert_eq(p.lane[0].groups, 4);
    cr_assert_eq(p.lane_memory, GIB);
    /* 64 GiB: the largest batch, whatever the threads */
    o = opts(64, 64 * GIB, RS_COMPRESS_GZIP, 1000, 0, 0);
    cr_assert_eq(rs_run_plan_make(&o, SIZE_MAX, &p, &err), 0);
    cr_assert_eq(p.batch_bytes, 64 * MIB);
    /* counting: 64 threads / 3 a producer feeds, 22 lanes: 20 of 3 threads, 2 of 2 */
    cr_assert_eq(p.lanes, 22);
    cr_assert(p.lane[19].threads == 3 && p.lane[20].threads == 2 && p.lane[21].threads == 2);
    cr_assert_eq(p.open_files, 0);
    /* -j 8 at 2 GiB, 8 producers asked: 3 lanes of 8 batches of 64 MiB fit
     * (each 14 MiB + 2034 MiB / 3 = 692 MiB; 4 would get 522.5 MiB, less
     * than 14 + 512 MiB and two threads); threads 3, 3, 2 */
    o = opts(8, 2 * GIB, RS_COMPRESS_NONE, 1, 0, 8);
    cr_assert_eq(rs_run_plan_make(&o, SIZE_MAX, &p, &err), 0);
    cr_assert_eq(p.lanes, 3);
    cr_assert_str_eq(p.why, "--memory: 3 lanes of 8 batches of 64.0 MiB fit");
    cr_assert(p.lane[0].threads == 3 && p.lane[1].threads == 3 && p.lane[2].threads == 2);
    cr_assert_eq(p.lane_memory, 14 * MIB + (2 * GIB - 14 * MIB) / 3);
    /* the items bound the lanes; with as many as items_bound, no more */
    o = opts(3, 4 * GIB, RS_COMPRESS_GZIP, 7, 1, 8);
    cr_assert_eq(rs_run_plan_make(&o, SIZE_MAX, &p, &err), 0);
    cr_assert_str_eq(p.why, "one thread a lane at least (3 threads)");
    cr_assert(p.lanes == 3 && p.items_bound == 3);
    cr_assert_eq(rs_run_plan_make(&o, 2, &p, &err), 0);
    cr_assert(p.lanes == 2 && !strcmp(p.why, "2 work items"));
    /* standard input is one lane */
    o.inputs = stdin_inputs;
    cr_assert_eq(rs_run_plan_make(&o, SIZE_MAX, &p, &err), 0);
    cr_assert(p.lanes == 1 && !strcmp(p.why, "standard input or a quarantine written in place"));
    /* 100000 outputs: one lane's files only, under a hard limit below 2 x 100064 + 64 */
    struct rlimit rl;
    cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < 2 * 100064 + 64) {
        o = opts(8, 64 * GIB, RS_COMPRESS_GZIP, 100000, 1, 0);
        cr_assert_eq(rs_run_plan_make(&o, SIZE_MAX, &p, &err), 0);
        cr_assert_eq(p.lanes, 1);
        cr_assert(strstr(p.why, "open-file limit") != NULL, "%s", p.why);
    }
    /* below the floor: refused with the pipeline's message, one lane */
    o = opts(8, 16 * MIB, RS_COMPRESS_GZIP, 1000, 1, 4);
    cr_assert_eq(rs_run_plan_make(&o, SIZE_MAX, &p, &err), -1);
    cr_assert_eq(err.code, RS_EXIT_USAGE);
    cr_assert(strstr(err.msg, "--memory 16 MiB is below what these options need") == err.msg, "%s", err.msg);
    cr_assert_eq(p.lanes, 1);
    cr_assert_eq(p.batch_bytes, 0);
}

/* Lanes bounded by the open-file limit below what --memory holds get more
 * threads each in the share of the larger count: where the share cannot
 * hold them the lane is refused as its pipeline refuses it (threads 0,
 * the reason kept), never run in a shape that does not fit. Searched for
 * over --memory where the hard limit bounds 1000 outputs' lanes. */
Test(runplan, lanes_bounded_by_files_in_the_share_of_more)
{
    static rs_run_plan p;
    struct rlimit rl;
    cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= 64 * 1064 + 64 || rl.rlim_max < 4 * 1064 + 64)
        return;  /* no such bound here */
    size_t found = 0, fits = 0;
    for (uint64_t m = 4 * GIB; m < 40 * GIB && !(found && fits); m += MIB) {
        rs_pipeline_opts o = opts(256, m, RS_COMPRESS_ZSTD, 1000, 1, 64);
        check_one(&o, SIZE_MAX, &p);
        if (p.lane_refused.code && !found++) {
            cr_assert_eq(p.lane[0].threads, 0);
            cr_assert(strstr(p.lane_refused.msg, "internal error: a lane's ") == p.lane_refused.msg, "%s",
                      p.lane_refused.msg);
        }
        fits += p.lane_refused.code == 0 && strstr(p.why, "open-file limit") != NULL;
    }
    cr_assert_gt(fits, 0, "no run bounded by the files fits");
    cr_assert_gt(found, 0, "no refused lane found");
}
