/* tools/bench/bench_dio.c - what one direct write costs, by its size.
 *
 * Usage: bench_dio DIR [--files N] [--mb M] [--threads T] [--sizes K,K,...]
 *
 * For each size K (KiB; default 32,64,128,256), creates N files (default
 * 1000) in DIR with O_DIRECT and writes M MiB in all (default 960) as T
 * threads (default 4, as src/io/direct.c) would: writes of K KiB taken in
 * turn across the files, so every file grows by K at a time, then fsyncs
 * and closes them. Prints, per size, the writes, the wall time and the CPU
 * seconds of the process (user, system): the system time over the writes is
 * what a request costs the kernel here. Files are left in DIR/kK/ for the
 * caller to delete (a deletion right before the next size's creations would
 * make ext4 scan past the freed inodes: docs/performance.md).
 *
 * Why: ringshard writes plain outputs (and any with --direct-io on) by
 * direct I/O, one write per file and batch: about 50 KiB for plain output
 * and 25 KiB for gzip with 1000 files and the default batches. In a VM
 * each request pays the virtio notification and the completion interrupt
 * whatever its size, so fewer, larger writes would spare system time; this
 * measures how much. Exit status: 0, 1 on a failed system call, 2 on bad
 * usage. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SRC_BYTES ((size_t)64 << 20) /* the bytes written come from here, in turn */

typedef struct {
    int *fds;
    int nfiles;
    size_t chunk;
    long njobs;
    const char *src;
    pthread_mutex_t mu;
    long next;
    int failed;
} job_set;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double cpu_s(const struct timeval *tv)
{
    return (double)tv->tv_sec + (double)tv->tv_usec * 1e-6;
}

static void *writer(void *arg)
{
    job_set *js = arg;
    for (;;) {
        pthread_mutex_lock(&js->mu);
        long j = js->failed ? js->njobs : js->next++;
        pthread_mutex_unlock(&js->mu);
        if (j >= js->njobs)
            return NULL;
        int f = (int)(j % js->nfiles);
        off_t off = (off_t)(j / js->nfiles) * (off_t)js->chunk;
        const char *p = js->src + ((size_t)j * js->chunk) % SRC_BYTES;
        if (pwrite(js->fds[f], p, js->chunk, off) != (ssize_t)js->chunk) {
            perror("bench_dio: pwrite");
            pthread_mutex_lock(&js->mu);
            js->failed = 1;
            pthread_mutex_unlock(&js->mu);
        }
    }
}

/* One size: 0, or -1 after a message. */
static int run_size(const char *dir, int nfiles, size_t mb, int threads, size_t kib, const char *src)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/k%zu", dir, kib);
    if (mkdir(path, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "bench_dio: %s: %s\n", path, strerror(errno));
        return -1;
    }
    job_set js = {.nfiles = nfiles, .chunk = kib << 10, .src = src};
    js.njobs = (long)((mb << 20) / js.chunk);
    js.fds = malloc((size_t)nfiles * sizeof *js.fds);
    if (!js.fds)
        return -1;
    for (int i = 0; i < nfiles; i++) {
        snprintf(path, sizeof path, "%s/k%zu/f%d", dir, kib, i);
        js.fds[i] = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0644);
        if (js.fds[i] < 0) {
            fprintf(stderr, "bench_dio: %s: %s\n", path, strerror(errno));
            return -1;
        }
    }
    pthread_mutex_init(&js.mu, NULL);
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    double t0 = now();
    pthread_t th[64];
    for (int t = 0; t < threads; t++)
        if (pthread_create(&th[t], NULL, writer, &js) != 0)
            return -1;
    for (int t = 0; t < threads; t++)
        pthread_join(th[t], NULL);
    for (int i = 0; i < nfiles; i++)
        if (fsync(js.fds[i]) != 0 || close(js.fds[i]) != 0)
            js.failed = 1;
    double wall = now() - t0;
    getrusage(RUSAGE_SELF, &r1);
    pthread_mutex_destroy(&js.mu);
    free(js.fds);
    if (js.failed)
        return -1;
    double sys = cpu_s(&r1.ru_stime) - cpu_s(&r0.ru_stime);
    printf("| %zu KiB | %ld | %.2f | %.2f | %.2f | %.1f |\n", kib, js.njobs, wall,
           cpu_s(&r1.ru_utime) - cpu_s(&r0.ru_utime), sys, 1e6 * sys / (double)js.njobs);
    return 0;
}

static int usage(void)
{
    fprintf(stderr, "usage: bench_dio DIR [--files N] [--mb M] [--threads T] [--sizes K,K,...]\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argv[1][0] == '-')
        return usage();
    const char *dir = argv[1], *sizes = "32,64,128,256";
    int nfiles = 1000, threads = 4;
    long mb = 960;
    for (int i = 2; i < argc; i++) {
        if (i + 1 >= argc)
            return usage();
        if (!strcmp(argv[i], "--files"))
            nfiles = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--mb"))
            mb = atol(argv[++i]);
        else if (!strcmp(argv[i], "--threads"))
            threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--sizes"))
            sizes = argv[++i];
        else
            return usage();
    }
    if (nfiles < 1 || mb < 1 || threads < 1 || threads > 64)
        return usage();
    char *src = aligned_alloc(4096, SRC_BYTES + ((size_t)64 << 20));
    if (!src)
        return 1;
    memset(src, 'x', SRC_BYTES + ((size_t)64 << 20));  /* touched before any timing */
    printf("%d files, %ld MiB, %d threads, O_DIRECT, in %s\n\n", nfiles, mb, threads, dir);
    printf("| write size | writes | wall s | user s | sys s | sys us a write |\n|---|---:|---:|---:|---:|---:|\n");
    for (const char *s = sizes; *s;) {
        char *end;
        long k = strtol(s, &end, 10);
        if (end == s || k < 4 || k % 4 || k > 65536)
            return usage();
        if (run_size(dir, nfiles, (size_t)mb, threads, (size_t)k, src) != 0)
            return 1;
        s = *end == ',' ? end + 1 : end;
    }
    free(src);
    return 0;
}
