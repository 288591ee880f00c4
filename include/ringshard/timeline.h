/* ringshard/timeline.h - per-thread timelines of a run: which stage ran on
 * which thread, from when to when, for finding where a core sat idle.
 *
 * Off unless the environment names a file (RINGSHARD_TIMELINE=FILE): then
 * every span recorded is kept in a fixed table (RS_TIMELINE_CAP spans;
 * later ones are counted, not kept) and written to FILE as the process
 * exits, one tab-separated line a span: thread, stage, kind, start and
 * end in seconds since rs_timeline_init, the thread's CPU seconds and its
 * seconds runnable but waiting for a core within the span. tools/bench/timeline.sh
 * sums a file up: each thread's time by stage, and the core-seconds left
 * idle while a stage ran alone. Spans are coarse (a batch's parse group, a
 * thread's share of a batch's writes, a direct write, a publication),
 * never a row: when off, a span costs one load of a flag; when on, four
 * clock reads, two reads of /proc/thread-self/schedstat and an atomic.
 *
 * Thread numbers are given in the order threads record their first span
 * (0: the one that called rs_timeline_init, the main thread). */
#ifndef RINGSHARD_TIMELINE_H
#define RINGSHARD_TIMELINE_H

/* X(enum suffix, name, kind): kind "cpu" is work on a core, "wait" a
 * thread asleep waiting for another, "io" a thread asleep on the disk. */
#define RS_TIMELINE_STAGES(X)                                                 \
    X(SETUP, "setup", "cpu")              /* job start-up before the rows */ \
    X(OPEN, "open-outputs", "cpu")                                            \
    X(FIRST, "produce-first", "cpu")      /* the first batch, alone */        \
    X(PRODUCE, "produce", "cpu")          /* the next batch, in a region */   \
    X(AHEAD, "read-ahead", "cpu")         /* the input after, while waiting */\
    X(PARSE, "parse", "cpu")                                                  \
    X(MERGE, "merge", "cpu")                                                  \
    X(DRAIN, "drain", "wait")             /* the last batch's direct writes */\
    X(WAIT_MERGE, "wait-merge", "wait")                                       \
    X(WRITE, "compress-write", "cpu")                                         \
    X(WAIT_END, "wait-end", "wait")                                           \
    X(BETWEEN, "between-batches", "cpu")                                      \
    X(CLOSE, "close", "cpu")                                                  \
    X(WRITEBACK, "writeback", "io")                                           \
    X(DIRECT, "direct-write", "io")                                           \
    X(DIRECT_FINISH, "direct-finish", "wait")                                 \
    X(FSYNC, "fsync", "io")                                                   \
    X(PUBLISH, "publish", "cpu")

typedef enum {
#define RS_TIMELINE_ENUM(e, name, kind) RS_TL_##e,
    RS_TIMELINE_STAGES(RS_TIMELINE_ENUM)
#undef RS_TIMELINE_ENUM
    RS_TL_NSTAGES
} rs_tl_stage;

#define RS_TIMELINE_CAP (1u << 18)

extern int rs_timeline_on;

/* Reads RINGSHARD_TIMELINE once; when it names a file, allocates the table
 * and writes it at exit (a file that cannot be written: one line on
 * stderr, the run's exit status unchanged). Call once, from main. */
void rs_timeline_init(void);

/* Now, in seconds, when timelines are on; 0 when off (no clock read). */
double rs_timeline_start(void);

/* Records the calling thread's span of `stage` from t0 (rs_timeline_start)
 * to now. Nothing when off or when t0 is 0. */
void rs_timeline_end(rs_tl_stage stage, double t0);

/* Records the span from rs_timeline_init to now as the job's start-up
 * (the ring, the directory, the plan), the first time only. */
void rs_timeline_setup_done(void);

/* The table written now to the file (for a process that leaves by _exit;
 * exit runs it by itself). Spans recorded after it are lost. */
void rs_timeline_flush(void);

#endif
