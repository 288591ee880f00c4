/* --metrics FILE: the run's metrics file (ringshard/metrics.h), for the
 * commands that write data (bucket, dedup, plan, verify, compact).
 *
 * The command records the option while it parses its arguments and fills
 * in what its job did; main() publishes the file after the command has
 * returned, whatever path it returned by, so that a usage error, a failed
 * job and an interrupted one are recorded with their exit codes as a
 * success is. Under MPI rank 0 alone writes it. */
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "cluster/world.h"
#include "ringshard/dataset.h"
#include "ringshard/metrics.h"
#include "ringshard/procio.h"

static struct {
    int on;
    const char *path;   /* as given (every rank: each checks it against the output directory) */
    rs_outfile of;
    rs_metrics m;
} run;
static double started;
static rs_procio io_started;   /* the kernel's read counters when the run began */

void rs_cli_metrics_start(void)
{
    started = rs_metrics_clock();
    rs_procio_read(&io_started);
}

int rs_cli_metrics_option(const char *cmd, const char *arg, rs_error *err)
{
    if (run.on || run.path)
        return rs_error_set(err, RS_EXIT_USAGE, "--metrics: given twice");
    run.path = arg;
    if (rs_cli_stdout_file("--metrics", &arg, err) != 0)
        return -1;
    if (rs_world_rank() != 0)
        return 0;
    if (rs_metrics_reserve(&run.of, arg, err) != 0)
        return -1;
    rs_metrics_init(&run.m, cmd);
    run.m.start_time = started;
    run.on = 1;
    return 0;
}

int rs_cli_metrics_refuse_inside(const char *dir, rs_error *err)
{
    if (rs_outdir_refuse_inside("--metrics ", run.path, dir, err) == 0)
        return 0;
    if (run.on)   /* nothing is written there, not even this refusal's metrics */
        rs_outfile_abort(&run.of);
    run.on = 0;
    return -1;
}

rs_metrics *rs_cli_metrics(void)
{
    return run.on ? &run.m : NULL;
}

void rs_cli_metrics_pipeline(const rs_pipeline_result *res, size_t ninputs, int written)
{
    rs_metrics *m = rs_cli_metrics();
    if (m == NULL)
        return;
    m->inputs = ninputs;
    m->rows_read = res->rows, m->bytes_read = res->bytes, m->rows_rejected = res->rejected;
    if (written)
        m->rows_written = res->rows, m->bytes_written = res->bytes;
}

void rs_cli_metrics_phase(const char *name, double seconds)
{
    if (run.on)
        rs_metrics_add_phase(&run.m, name, seconds);
}

int rs_cli_metrics_finish(int rc)
{
    if (!run.on)
        return rc;
    run.on = 0;
    run.m.exit_code = rc;
    run.m.end_time = rs_metrics_clock();
    rs_procio now;
    rs_procio_read(&now);
    rs_procio_delta(&io_started, &now, &run.m.io);
    rs_error err = {0};
    if (rs_metrics_publish(&run.of, &run.m, &err) != 0) {
        rs_cli_fail(run.m.command, &err);
        return rc ? rc : RS_EXIT_IO;
    }
    return rc;
}

void rs_cli_empty_report(const char *cmd, int quiet)
{
    const char *first;
    uint64_t zeros;
    size_t np = rs_pipeline_padded(&first, &zeros);
    if (np && rs_world_rank() == 0)   /* a warning: said under --quiet too, as rows lost would be */
        fprintf(stderr, "ringshard %s: warning: %zu input%s end%s in zero bytes after the last gzip member or zstd "
                "frame (%llu bytes, first %s), read as padding: if %s a copy cut short into a preallocated file, "
                "rows are missing (compare its size with the source's)\n", cmd, np, np == 1 ? "" : "s",
                np == 1 ? "s" : "", (unsigned long long)zeros, first, np == 1 ? "it is" : "one is");
    size_t n = rs_pipeline_allowed_empty(&first);
    if (n == 0)
        return;
    if (rs_cli_metrics())
        rs_cli_metrics()->empty_inputs = n;
    if (!quiet && rs_world_rank() == 0)
        fprintf(stderr, "ringshard %s: %zu input%s without rows, allowed by --allow-empty: %s%s\n", cmd, n,
                n == 1 ? "" : "s", first, n > 1 ? ", ..." : "");
}
