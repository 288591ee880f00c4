/* util/metrics.c - a run's metrics in the Prometheus text format
 * (ringshard/metrics.h; docs/metrics.md).
 *
 * Every family is a gauge: each file describes one run, replaced by the
 * next, so nothing in it grows across runs as a counter must. Samples
 * carry no timestamps: node_exporter's textfile collector refuses them. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ringshard/log.h"
#include "ringshard/metrics.h"
#include "ringshard/testhook.h"
#include "rs_config.h"

/* The previous file is read for one line; anything larger than this is
 * not a metrics file ringshard wrote, and its head is enough to say so. */
#define OLD_FILE_MAX (1 << 20)

double rs_metrics_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void rs_metrics_init(rs_metrics *m, const char *command)
{
    memset(m, 0, sizeof *m);
    m->command = command;
    m->start_time = rs_metrics_clock();
}

void rs_metrics_add_phase(rs_metrics *m, const char *name, double seconds)
{
    for (int i = 0; i < m->nphases; i++)
        if (strcmp(m->phase[i].name, name) == 0) {
            m->phase[i].seconds += seconds;
            return;
        }
    if (m->nphases < RS_METRICS_MAX_PHASES)
        m->phase[m->nphases++] = (rs_metrics_phase){name, seconds};
}

double rs_metrics_last_success_in(const char *text, size_t len, const char *command)
{
    char want[128];
    int n = snprintf(want, sizeof want, "ringshard_last_success_timestamp_seconds{command=\"%s\"} ", command);
    if (n <= 0 || (size_t)n >= sizeof want)
        return 0;
    for (size_t at = 0; at < len;) {
        const char *line = text + at, *nl = memchr(line, '\n', len - at);
        size_t ll = nl ? (size_t)(nl - line) : len - at;
        if (ll > (size_t)n && memcmp(line, want, (size_t)n) == 0) {
            char num[64];
            size_t vl = ll - (size_t)n;
            if (vl >= sizeof num)
                return 0;
            memcpy(num, line + n, vl);
            num[vl] = '\0';
            char *end;
            errno = 0;
            double v = strtod(num, &end);
            return end != num && *end == '\0' && errno == 0 && isfinite(v) && v >= 0 ? v : 0;
        }
        at += ll + 1;
    }
    return 0;
}

/* One family: its HELP and TYPE lines. */
static void family(FILE *f, const char *name, const char *help)
{
    fprintf(f, "# HELP ringshard_%s %s\n# TYPE ringshard_%s gauge\n", name, help, name);
}

/* The families of one sample each, in the file's order: a value (an
 * integer, or a time with milliseconds) and its meaning. */
typedef struct {
    const char *name, *help;
    int time;          /* 1: a time in seconds, else an integer */
    double t;
    uint64_t v;
} one_sample;

/* A label's value as the text format quotes it: \\, \" and \n escaped. */
static void label_value(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\' || *s == '"')
            fputc('\\', f), fputc(*s, f);
        else if (*s == '\n')
            fputs("\\n", f);
        else
            fputc(*s, f);
    }
}

/* repair's families: what it could not keep, node by node, and the inputs
 * that bring it back. */
static void repair_families(FILE *f, const rs_metrics *m)
{
    family(f, "repair_rows_not_kept", "Data rows the last repair could not keep (their files are damaged).");
    fprintf(f, "ringshard_repair_rows_not_kept{command=\"%s\"} %llu\n", m->command,
            (unsigned long long)m->rows_not_kept);
    family(f, "repair_node_rows", "Each node that lost rows in the last repair: its rows kept and not kept.");
    for (size_t i = 0; i < m->nrepair_nodes; i++)
        for (int lost = 0; lost < 2; lost++) {
            fprintf(f, "ringshard_repair_node_rows{command=\"%s\",node=\"", m->command);
            label_value(f, m->repair_node[i]);
            fprintf(f, "\",state=\"%s\"} %llu\n", lost ? "not_kept" : "kept",
                    (unsigned long long)(lost ? m->repair_lost[i] : m->repair_kept[i]));
        }
    family(f, "repair_input_to_append", "An input whose rows the last repair could not keep: an append of it "
                                        "again brings them back (always 1).");
    for (size_t i = 0; i < m->nrepair_inputs; i++) {
        fprintf(f, "ringshard_repair_input_to_append{command=\"%s\",input=\"", m->command);
        label_value(f, m->repair_input[i]);
        fputs("\"} 1\n", f);
    }
}

/* dedup --append's families: what its lookups read of the history, and
 * what they have to read at least (the filters and, for every key a filter
 * line passes, its chunk). */
static void history_families(FILE *f, const rs_metrics *m)
{
    const struct {
        const char *name, *help;
        uint64_t v;
    } s[] = {
        {"history_index_read_bytes", "Bytes the last append's lookups read from the history's key indexes.",
         m->history_index_read},
        {"history_filter_bytes", "The filters' size, of the history's key indexes the last append looked up in.",
         m->history_filter_bytes},
        {"history_filter_passes", "New keys of the last append that a key index's filter passed, in each index.",
         m->history_filter_passes},
        {"history_keys_confirmed", "New keys of the last append that the history's key indexes hold (exact bytes).",
         m->history_keys_confirmed},
    };
    for (size_t i = 0; i < sizeof s / sizeof *s; i++) {
        family(f, s[i].name, s[i].help);
        fprintf(f, "ringshard_%s{command=\"%s\"} %llu\n", s[i].name, m->command, (unsigned long long)s[i].v);
    }
}

int rs_metrics_format(FILE *f, const rs_metrics *m, double last_success)
{
    const char *c = m->command;
    family(f, "run_info", "The ringshard version that ran (always 1).");
    fprintf(f, "ringshard_run_info{command=\"%s\",version=\"%s\"} 1\n", c, RS_VERSION);
    const one_sample s[] = {
        {"exit_code", "Exit code of the last run (0 success; docs/failures.md lists the others).", 0, 0,
         (uint64_t)m->exit_code},
        {"success", "1 if the last run succeeded (exit code 0), else 0.", 0, 0, m->exit_code == 0},
        {"start_time_seconds", "When the last run started, in Unix time.", 1, m->start_time, 0},
        {"end_time_seconds", "When the last run ended, in Unix time.", 1, m->end_time, 0},
        {"last_success_timestamp_seconds",
         "When a run last succeeded, in Unix time (kept from the previous file by a failed run; 0: none known).", 1,
         last_success, 0},
        {"inputs", "Inputs the last run read (files, or the files of a directory it read).", 0, 0, m->inputs},
        {"inputs_skipped", "Inputs the last run skipped as already ingested.", 0, 0, m->inputs_skipped},
        {"empty_inputs", "Inputs without rows (0 bytes, or a header only) the last run let pass (--allow-empty).", 0,
         0, m->empty_inputs},
        {"rows_read", "Data rows the last run read, rejected rows excluded.", 0, 0, m->rows_read},
        {"bytes_read", "Data bytes the last run read (each row's bytes and one line end).", 0, 0, m->bytes_read},
        {"rows_written", "Data rows the last run wrote to its output.", 0, 0, m->rows_written},
        {"bytes_written", "Data bytes the last run wrote to its output (each row's bytes and one LF).", 0, 0,
         m->bytes_written},
        {"rows_rejected", "Malformed rows the last run skipped or quarantined (--on-bad-row).", 0, 0, m->rows_rejected},
    };
    for (size_t i = 0; i < sizeof s / sizeof *s; i++) {
        family(f, s[i].name, s[i].help);
        if (s[i].time)
            fprintf(f, "ringshard_%s{command=\"%s\"} %.3f\n", s[i].name, c, s[i].t);
        else
            fprintf(f, "ringshard_%s{command=\"%s\"} %llu\n", s[i].name, c, (unsigned long long)s[i].v);
    }
    if (m->repair)
        repair_families(f, m);
    if (m->history)
        history_families(f, m);
    if (m->io.known) {   /* /proc/self/io: absent outside Linux, and then no sample rather than a false 0 */
        family(f, "io_rchar_bytes", "Bytes the last run's reads returned, page cache hits included (/proc/self/io "
                                    "rchar).");
        fprintf(f, "ringshard_io_rchar_bytes{command=\"%s\"} %llu\n", c, (unsigned long long)m->io.rchar);
        family(f, "io_read_bytes", "Bytes the last run caused to be read from storage (/proc/self/io read_bytes).");
        fprintf(f, "ringshard_io_read_bytes{command=\"%s\"} %llu\n", c, (unsigned long long)m->io.read_bytes);
    }
    family(f, "phase_seconds", "Wall-clock seconds of each phase of the last run.");
    for (int i = 0; i < m->nphases; i++)
        fprintf(f, "ringshard_phase_seconds{command=\"%s\",phase=\"%s\"} %.6f\n", c, m->phase[i].name,
                m->phase[i].seconds);
    return ferror(f) ? -1 : 0;
}

int rs_metrics_reserve(rs_outfile *of, const char *path, rs_error *err)
{
    return rs_outfile_reserve(of, path, err);
}

/* The previous file's last-success timestamp for command (0: none). */
static double previous_last_success(const char *path, const char *command)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        if (errno != ENOENT)
            rs_log(RS_LOG_WARN, "%s: cannot read the previous metrics: %s", path, strerror(errno));
        return 0;
    }
    char *buf = malloc(OLD_FILE_MAX);
    size_t n = buf ? fread(buf, 1, OLD_FILE_MAX, f) : 0;
    fclose(f);
    double t = buf ? rs_metrics_last_success_in(buf, n, command) : 0;
    free(buf);
    return t;
}

int rs_metrics_publish(rs_outfile *of, const rs_metrics *m, rs_error *err)
{
    double last = m->exit_code == 0 ? m->end_time : of->in_place ? 0 : previous_last_success(of->final, m->command);
    of->f = rs_outfile_stream(of);
    if (of->f == NULL) {
        int e = errno;
        rs_error_set(err, RS_EXIT_IO, "%s: cannot create: %s", of->final, strerror(e));
        rs_outfile_abort(of);
        return -1;
    }
    rs_metrics_format(of->f, m, last);   /* a failed write is in the stream's error flag: commit reports it */
    if (fflush(of->f) == 0)
        rs_test_pause("metrics_publish");   /* the temporary written whole, FILE not yet replaced */
    return rs_outfile_commit(of, err);
}
