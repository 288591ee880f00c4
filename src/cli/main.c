/* ringshard: the command dispatcher. Each command lives in cmd_<name>.c
 * and is listed once in RS_COMMAND_TABLE (cli.h). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "cluster/world.h"
#include "rs_config.h"
#include "ringshard/interrupt.h"
#include "ringshard/log.h"
#include "ringshard/timeline.h"

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const rs_opt_command *(*options)(void);
    int cluster;  /* divides its work among MPI ranks */
    const char *summary;
} command;

static const command commands[] = {
#define RS_COMMAND_ROW(name, cluster, summary) {#name, rs_cmd_##name, rs_cmd_##name##_options, cluster, summary},
    RS_COMMAND_TABLE(RS_COMMAND_ROW)
#undef RS_COMMAND_ROW
};

static void usage(FILE *f)
{
    fprintf(f, "ringshard %s - consistent-hash bucketing and migration planning\n\n"
               "Usage: ringshard COMMAND [OPTIONS] [ARGS]\n\nCommands:\n", RS_VERSION);
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'ringshard COMMAND --help' (or 'ringshard help COMMAND') describes a command.\n\nExit codes:\n");
#define RS_EXIT_HELP(name, code, help) fprintf(f, "  %3d  %s\n", code, help);
    RS_EXIT_TABLE(RS_EXIT_HELP)
#undef RS_EXIT_HELP
}

/* The program's own part of --dump-help (the commands' follow): what
 * usage() prints, as TSV lines under the name "ringshard". */
static void dump_help(FILE *f)
{
    fprintf(f, "ringshard\tsummary\tconsistent-hash bucketing and migration planning\n"
               "ringshard\tusage\tringshard COMMAND [OPTIONS] [ARGS]\n");
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        fprintf(f, "ringshard\tcommand\t%s\t%s\n", commands[i].name, commands[i].summary);
#define RS_EXIT_DUMP(name, code, help) fprintf(f, "ringshard\texit\t%d\t%s\n", code, help);
    RS_EXIT_TABLE(RS_EXIT_DUMP)
#undef RS_EXIT_DUMP
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        rs_opt_dump_help(commands[i].options(), f);
}

static const char *rs_cli_command;   /* the command that runs, for the words after it */

static const command *find(const char *name)
{
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (!strcmp(name, commands[i].name))
            return &commands[i];
    return NULL;
}

/* "'buckt' is not a command", with the nearest commands by edit distance
 * as git says it. */
static int unknown_command(const char *name)
{
    size_t n = sizeof commands / sizeof *commands, best = (size_t)-1, d, k = 0;
    for (size_t i = 0; i < n; i++)
        if (rs_name_similar(name, commands[i].name, &d) && d < best)
            best = d;
    for (size_t i = 0; i < n; i++)
        k += rs_name_similar(name, commands[i].name, &d) && d == best;
    fprintf(stderr, "ringshard: '%s' is not a command.", name);
    if (k)
        fprintf(stderr, " The most similar command%s: ", k > 1 ? "s are" : " is");
    for (size_t i = 0, j = 0; k && i < n; i++)
        if (rs_name_similar(name, commands[i].name, &d) && d == best)
            fprintf(stderr, "%s%s", j++ ? ", " : "", commands[i].name);
    fprintf(stderr, "\nSee 'ringshard --help'.\n");
    return RS_EXIT_USAGE;
}

static int dispatch(int argc, char **argv)
{
    if (rs_world_rank() != 0 && (argc < 2 || argv[1][0] == '-' || !strcmp(argv[1], "help")))
        return argc < 2 ? RS_EXIT_USAGE : 0;  /* usage, help, version: rank 0 says it */
    if (argc < 2) {
        usage(stderr);
        return RS_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "help") && argc > 2 && find(argv[2])) {
        /* `ringshard help CMD` is `ringshard CMD --help` */
        char *args[] = {argv[2], "--help", NULL};
        return find(argv[2])->run(2, args);
    }
    if (!strcmp(argv[1], "help") && argc > 2)
        return unknown_command(argv[2]);
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--dump-options")) {
        /* hidden: every command's options as TSV, for tools/gen/gen_cli_docs.py
         * and the option tests (util/opt.h, rs_opt_dump) */
        for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
            rs_opt_dump(commands[i].options(), stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--dump-help")) {
        /* hidden: every command's --help as its parts, for the man pages
         * (tools/gen/gen_cli_docs.py; util/opt.h, rs_opt_dump_help) */
        dump_help(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("ringshard %s\n", RS_VERSION);
        return 0;
    }
    const command *cmd = find(argv[1]);
    if (!cmd)
        return unknown_command(argv[1]);
    /* under mpirun, a command that does not divide its work runs once, on
     * rank 0 */
    if (!cmd->cluster && rs_world_rank() != 0)
        return 0;
    if (!cmd->cluster)
        rs_world_solo();
    rs_cli_command = cmd->name;
    /* Not under mpirun with several ranks: mpirun signals every rank when
     * one ends with an error, and "stopping (interrupted)" would then be a
     * second, misleading message after that rank's own */
    if (rs_world_size() == 1) {
        char notice[64];
        snprintf(notice, sizeof notice, "ringshard %s: stopping (interrupted)...\n", cmd->name);
        rs_interrupt_set_notice(notice);
    }
    return cmd->run(argc - 1, argv + 1);
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
    rs_timeline_init();
    /* a file-size limit (ulimit -f) makes a write fail with EFBIG, which
     * every command reports naming the file, instead of killing the run
     * (SIGXFSZ) where it stands */
    signal(SIGXFSZ, SIG_IGN);
    rs_world_init(&argc, &argv);
    rs_cli_metrics_start();
    int rc = dispatch(argc, argv);
    if (rs_cli_command)
        rs_cli_empty_report(rs_cli_command, rs_cli_quiet());
    rc = rs_cli_metrics_finish(rc);
    rs_world_finish();
    return rc;
}
