/* ringshard/metrics.h - a run's metrics as a Prometheus text-format file,
 * for node_exporter's textfile collector (docs/metrics.md has the format).
 *
 * A batch job run from cron is watched by what it leaves behind: whether
 * its last run succeeded, when it last succeeded, how much it did and
 * where its time went. The file is published whole (ringshard/outfile.h):
 * written to a temporary beside FILE whose name does not end in .prom (the
 * collector reads only *.prom), fsync'd and renamed over FILE, so that the
 * collector never reads half of it, at any instruction of the run. The
 * last-success timestamp is carried over from the previous FILE when the
 * run fails, so that an alert on its age sees the last good run. */
#ifndef RINGSHARD_METRICS_H
#define RINGSHARD_METRICS_H

#include <stdint.h>
#include <stdio.h>
#include "ringshard/error.h"
#include "ringshard/outfile.h"
#include "ringshard/procio.h"

/* Phases a run may report (a command reports a few of them). */
#define RS_METRICS_MAX_PHASES 8

typedef struct {
    const char *name;          /* the phase label: [a-z0-9_]+, a static string */
    double seconds;
} rs_metrics_phase;

/* What one run did. Counts the command does not have stay 0. */
typedef struct {
    const char *command;       /* the command label: bucket, dedup, plan, verify, compact */
    int exit_code;             /* the run's exit code; 0 is success */
    double start_time;         /* Unix time in seconds (CLOCK_REALTIME) */
    double end_time;
    uint64_t inputs;           /* inputs (files, or a directory's files) read */
    uint64_t inputs_skipped;   /* inputs skipped as already ingested (appends) */
    uint64_t empty_inputs;     /* inputs without rows that --allow-empty let pass */
    uint64_t rows_read, bytes_read;        /* data rows and bytes (row + LF) read, rejected rows excluded */
    uint64_t rows_written, bytes_written;  /* data rows and bytes written to the output */
    uint64_t rows_rejected;    /* malformed rows skipped or quarantined (--on-bad-row) */
    rs_procio io;              /* the kernel's read counters over the run (io.known 0: not written) */
    /* repair only (repair 0: none of these written): the rows it could not keep, the nodes that lost
       rows with each one's rows kept and not kept, and the inputs to append again */
    int repair;
    uint64_t rows_not_kept;
    size_t nrepair_nodes, nrepair_inputs;
    const char *const *repair_node, *const *repair_input;
    const uint64_t *repair_kept, *repair_lost;
    /* dedup --append only (history 0: none of these written): what its lookups read of the history's key
       indexes, the filters' size of those looked up in, the new keys a filter line passed (in each index)
       and those the indexes hold (their exact bytes found) */
    int history;
    uint64_t history_index_read, history_filter_bytes, history_filter_passes, history_keys_confirmed;
    rs_metrics_phase phase[RS_METRICS_MAX_PHASES];
    int nphases;
} rs_metrics;

/* Unix time now, in seconds with a fractional part (CLOCK_REALTIME). */
double rs_metrics_clock(void);

/* Zeroes *m for command (a static string) and sets start_time to now. */
void rs_metrics_init(rs_metrics *m, const char *command);

/* Adds seconds to phase name (a static string), adding it after the
 * others when it is new, so that the file lists phases in the order the
 * run went through them. A phase past RS_METRICS_MAX_PHASES is dropped:
 * commands report a fixed handful. */
void rs_metrics_add_phase(rs_metrics *m, const char *name, double seconds);

/* The last-success timestamp FILE's text holds for command: the value of
 * its ringshard_last_success_timestamp_seconds sample labelled
 * command="COMMAND". 0 when the text has none (no file, another command's
 * file, a value that is not a finite number >= 0). */
double rs_metrics_last_success_in(const char *text, size_t len, const char *command);

/* Writes m to f in the text format (HELP and TYPE lines, one family
 * after another, no timestamps), with last_success as the last-success
 * timestamp. Returns 0, or -1 when a write failed (f's error flag). */
int rs_metrics_format(FILE *f, const rs_metrics *m, double last_success);

/* Reserves path's temporary at the start of a run (rs_outfile_reserve),
 * so that a FILE the run cannot write (no such directory, no permission)
 * stops it before any work: 0, or -1 with err (RS_EXIT_IO, "PATH: cannot
 * create: REASON"). */
int rs_metrics_reserve(rs_outfile *of, const char *path, rs_error *err);

/* Fills the reserved temporary with m and publishes it over of->final
 * (rs_outfile_commit). The last-success timestamp is m->end_time when
 * m->exit_code is 0, else what the previous file says (0 if none). A path
 * written in place (/dev/stdout, a FIFO) is appended to and has no previous
 * file. *of is released either way. 0, or -1 with err (RS_EXIT_IO): the
 * previous file is then left as it was. */
int rs_metrics_publish(rs_outfile *of, const rs_metrics *m, rs_error *err);

#endif
