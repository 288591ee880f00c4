/* ringshard: the command dispatcher. Each command lives in cmd_<name>.c
 * and is listed once in RS_COMMAND_TABLE (cli.h). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "cluster/world.h"
#include "rs_config.h"
#include "ringshard/log.h"

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    int cluster;  /* divides its work among MPI ranks */
    const char *summary;
} command;

static const command commands[] = {
#define RS_COMMAND_ROW(name, cluster, summary) {#name, rs_cmd_##name, cluster, summary},
    RS_COMMAND_TABLE(RS_COMMAND_ROW)
#undef RS_COMMAND_ROW
};

static void usage(FILE *f)
{
    fprintf(f, "ringshard %s - consistent-hash bucketing and migration planning\n\n"
               "Usage: ringshard COMMAND [OPTIONS] [ARGS]\n\nCommands:\n", RS_VERSION);
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'ringshard COMMAND --help' describes a command.\n\nExit codes:\n");
#define RS_EXIT_HELP(name, code, help) fprintf(f, "  %3d  %s\n", code, help);
    RS_EXIT_TABLE(RS_EXIT_HELP)
#undef RS_EXIT_HELP
}

static int dispatch(int argc, char **argv)
{
    if (rs_world_rank() != 0 && (argc < 2 || argv[1][0] == '-' || !strcmp(argv[1], "help")))
        return argc < 2 ? RS_EXIT_USAGE : 0;  /* usage, help, version: rank 0 says it */
    if (argc < 2) {
        usage(stderr);
        return RS_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("ringshard %s\n", RS_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (!strcmp(argv[1], commands[i].name)) {
            /* under mpirun, a command that does not divide its work runs
             * once, on rank 0 */
            if (!commands[i].cluster && rs_world_rank() != 0)
                return 0;
            if (!commands[i].cluster)
                rs_world_solo();
            return commands[i].run(argc - 1, argv + 1);
        }
    fprintf(stderr, "ringshard: unknown command '%s'\nTry 'ringshard --help'.\n", argv[1]);
    return RS_EXIT_USAGE;
}

/* RINGSHARD_LOG=error|warn|info|debug: how much the log facility prints
 * (default warn). info adds each step's timing, per rank under MPI. */
static void log_level_from_env(void)
{
    static const char *names[] = {"error", "warn", "info", "debug"};
    const char *v = getenv("RINGSHARD_LOG");
    if (!v || !*v)
        return;
    for (int i = 0; i < 4; i++)
        if (strcmp(v, names[i]) == 0) {
            rs_log_set_level((rs_log_level)i);
            return;
        }
    rs_log(RS_LOG_WARN, "RINGSHARD_LOG=%s is not one of error, warn, info, debug: ignored", v);
}

int main(int argc, char **argv)
{
    log_level_from_env();
    /* a file-size limit (ulimit -f) makes a write fail with EFBIG, which
     * every command reports naming the file, instead of killing the run
     * (SIGXFSZ) where it stands */
    signal(SIGXFSZ, SIG_IGN);
    rs_world_init(&argc, &argv);
    rs_cli_metrics_start();
    int rc = rs_cli_metrics_finish(dispatch(argc, argv));
    rs_world_finish();
    return rc;
}
