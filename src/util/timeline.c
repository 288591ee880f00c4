/* util/timeline.c - per-thread timelines (see ringshard/timeline.h).
 *
 * A span is claimed with one atomic add on a table allocated once, so
 * recording takes no lock and no allocation; the table is written when
 * the process exits. A thread learns its number at its first span. */
#define _GNU_SOURCE
#include "ringshard/timeline.h"
#include "ringshard/util.h"
#include "util/filemode.h"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    double t0, t1, cpu;   /* wall times; the thread's CPU seconds between them */
    double runq;          /* of the rest, seconds runnable but waiting for a core */
    unsigned thread;
    unsigned stage;
} span;

int rs_timeline_on;
static span *spans;
static unsigned nspans, threads, lost;
static double origin;
static const char *path;
static char *ranked;
static __thread unsigned my_thread = ~0u;

static const char *const stage_names[] = {
#define RS_TIMELINE_NAME(e, name, kind) name,
    RS_TIMELINE_STAGES(RS_TIMELINE_NAME)
#undef RS_TIMELINE_NAME
};
static const char *const stage_kinds[] = {
#define RS_TIMELINE_KIND(e, name, kind) kind,
    RS_TIMELINE_STAGES(RS_TIMELINE_KIND)
#undef RS_TIMELINE_KIND
};

static double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The thread's CPU clock when its open span began (spans of one thread do
 * not nest), set by rs_timeline_start. */
static __thread double my_cpu0, my_runq0;

/* Seconds the calling thread has spent runnable, waiting for a core
 * (the second field of its schedstat); 0 where the kernel keeps none. */
static double thread_runq(void)
{
    char b[96];
    int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : pread(fd, b, sizeof b - 1, 0);
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return 0;
    b[n] = 0;
    unsigned long long run, wait;
    return sscanf(b, "%llu %llu", &run, &wait) == 2 ? wait * 1e-9 : 0;
}

void rs_timeline_flush(void)
{
    if (!rs_timeline_on)
        return;
    FILE *f = rs_file_create_stream(path, "w", RS_FILE_USER);
    if (!f) {
        fprintf(stderr, "ringshard: RINGSHARD_TIMELINE: cannot write %s\n", path);
        return;
    }
    unsigned n = __atomic_load_n(&nspans, __ATOMIC_ACQUIRE);
    n = n > RS_TIMELINE_CAP ? RS_TIMELINE_CAP : n;
    fprintf(f, "# thread\tstage\tkind\tstart\tend\tcpu\trunq\n");
    for (unsigned i = 0; i < n; i++)
        fprintf(f, "%u\t%s\t%s\t%.6f\t%.6f\t%.6f\t%.6f\n", spans[i].thread, stage_names[spans[i].stage],
                stage_kinds[spans[i].stage], spans[i].t0 - origin, spans[i].t1 - origin, spans[i].cpu, spans[i].runq);
    fprintf(f, "# exit\t%.6f\n", rs_now() - origin);
    if (lost)
        fprintf(f, "# %u spans past the table's %u were not kept\n", lost, RS_TIMELINE_CAP);
    if (fclose(f) != 0)
        fprintf(stderr, "ringshard: RINGSHARD_TIMELINE: cannot write %s\n", path);
}

void rs_timeline_init(void)
{
    const char *p = getenv("RINGSHARD_TIMELINE");
    if (!p || !*p || rs_timeline_on)
        return;
    if (!(spans = calloc(RS_TIMELINE_CAP, sizeof *spans)))
        return;
    /* under mpirun every rank writes a file of its own: FILE.rank<N> */
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");
    if (!rank)
        rank = getenv("PMI_RANK");
    if (rank && asprintf(&ranked, "%s.rank%s", p, rank) > 0)
        p = ranked;
    path = p;
    origin = rs_now();
    my_cpu0 = thread_cpu();
    my_runq0 = thread_runq();
    my_thread = threads++;
    rs_timeline_on = 1;
    atexit(rs_timeline_flush);
}

double rs_timeline_start(void)
{
    if (!rs_timeline_on)
        return 0;
    /* the wall clock first and last: the span encloses the counters'
     * own reads, so neither counter can exceed the span */
    double t0 = rs_now();
    my_cpu0 = thread_cpu();
    my_runq0 = thread_runq();
    return t0;
}

void rs_timeline_end(rs_tl_stage stage, double t0)
{
    if (!rs_timeline_on || t0 == 0)
        return;
    double cpu = thread_cpu() - my_cpu0, runq = thread_runq() - my_runq0, t1 = rs_now();
    if (my_thread == ~0u)
        my_thread = __atomic_fetch_add(&threads, 1, __ATOMIC_RELAXED);
    unsigned i = __atomic_fetch_add(&nspans, 1, __ATOMIC_ACQ_REL);
    if (i >= RS_TIMELINE_CAP) {
        __atomic_fetch_add(&lost, 1, __ATOMIC_RELAXED);
        return;
    }
    spans[i] = (span){t0, t1, cpu, runq, my_thread, (unsigned)stage};
}

void rs_timeline_setup_done(void)
{
    static int done;
    if (rs_timeline_on && !__atomic_exchange_n(&done, 1, __ATOMIC_ACQ_REL))
        rs_timeline_end(RS_TL_SETUP, origin);
}
