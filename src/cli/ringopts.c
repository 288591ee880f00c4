/* The ring options once parsed (their rows: cli/optgroups.c; resolved by
 * the ring layer, rs_ring_spec), and what every command prints its errors
 * with. */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>
#include "cli/cli.h"
#include "cluster/world.h"
#include "rs_config.h"

/* The spec the options describe (pointing into ro). */
static rs_ring_spec spec_of(const rs_cli_ring *ro)
{
    return (rs_ring_spec){ro->scheme, ro->hash,  ro->seed,  ro->nodes,  ro->nodes_file, ro->vnodes,
                          ro->label,  ro->sign,  ro->order, ro->compat, ro->down.v,     ro->down.n};
}

int rs_cli_ring_finish(const rs_cli_ring *ro, rs_ring_opts *o, rs_nodes *nodes, rs_error *err)
{
    rs_ring_spec s = spec_of(ro);
    return rs_ring_spec_resolve(&s, o, nodes, err);
}

int rs_cli_ring_given(const rs_cli_ring *ro)
{
    rs_ring_spec s = spec_of(ro);
    return rs_ring_spec_given(&s);
}

rs_ring *rs_cli_ring_build(const rs_cli_ring *ro, rs_error *err)
{
    rs_ring_opts o;
    rs_nodes nodes;
    if (rs_cli_ring_finish(ro, &o, &nodes, err) != 0)
        return NULL;
    rs_ring *r = rs_ring_build(&o, &nodes, err);
    rs_nodes_free(&nodes);
    return r;
}

rs_ring *rs_cli_ring_build_within(const rs_cli_ring *ro, uint64_t memory, rs_error *err)
{
    rs_ring_opts o;
    rs_nodes nodes;
    if (rs_cli_ring_finish(ro, &o, &nodes, err) != 0)
        return NULL;
    uint64_t need = RS_MEMORY_FIXED + rs_ring_build_bytes(&o, &nodes);
    rs_ring *r = NULL;
    if (memory && need > memory)
        rs_error_set(err, RS_EXIT_USAGE,
                     "--memory %.0f MiB is below what the ring of %u nodes needs while it is built: at least %.0f MiB "
                     "(48 bytes a point, then 16); raise --memory, or use fewer nodes or --vnodes",
                     memory / 1048576.0, nodes.count, (double)((need + (1 << 20) - 1) >> 20));
    else
        r = rs_ring_build(&o, &nodes, err);
    rs_nodes_free(&nodes);
    return r;
}

/* 1 if err is a failed write to standard output whose reader is gone (a
 * pipe into `head` that has exited): poll reports POLLERR on a pipe
 * without readers. */
static int stdout_reader_gone(const rs_error *err)
{
    if (err->code != RS_EXIT_IO || (!strstr(err->msg, "/dev/stdout") && !strstr(err->msg, "standard output")))
        return 0;
    struct pollfd p = {.fd = STDOUT_FILENO, .events = POLLOUT};
    return poll(&p, 1, 0) == 1 && (p.revents & POLLERR);
}

int rs_cli_fail(const char *cmd, const rs_error *err)
{
    /* SIGPIPE is ignored (a closed stderr must not kill a run that
     * published); a reader of stdout that stopped reading gets what
     * cat or seq give it: no message, status 141 */
    if (stdout_reader_gone(err))
        return RS_EXIT_PIPE;
    if (rs_world_rank() == 0)  /* the ranks agree on one error: say it once */
        fprintf(stderr, "ringshard %s: %s\n", cmd, err->msg);
    return err->code ? err->code : RS_EXIT_IO;
}

int rs_cli_usage_error(const char *cmd, const char *msg)
{
    if (rs_world_rank() != 0)
        return RS_EXIT_USAGE;
    fprintf(stderr, "ringshard %s: %s\nTry 'ringshard %s --help'.\n", cmd, msg, cmd);
    return RS_EXIT_USAGE;
}

static const char *current_command;

const char *rs_cli_command_name(void)
{
    return current_command;
}

int rs_cli_parse_options(const rs_opt_command *c, void *args, int argc, char **argv, int *first)
{
    rs_error err = {0};
    current_command = c->name;
    switch (rs_opt_scan(c, args, argc, argv, first, &err)) {
    case RS_OPT_OPERANDS:
        return -1;
    case RS_OPT_HELP:
        rs_opt_print_help(c, stdout);
        return 0;
    case RS_OPT_VERSION:
        if (rs_world_rank() == 0)
            printf("ringshard %s\n", RS_VERSION);   /* as `ringshard --version` */
        return 0;
    case RS_OPT_BAD_SYNTAX:
        return rs_cli_usage_error(c->name, err.msg);
    case RS_OPT_BAD_VALUE:
        break;
    }
    return rs_cli_fail(c->name, &err);
}
