/* The ring options once parsed (their rows: cli/optgroups.c), and what
 * every command prints its errors with. */
#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cli/cli.h"
#include "cluster/world.h"

int rs_cli_ring_finish(const rs_cli_ring *ro, rs_ring_opts *o, rs_nodes *nodes, rs_error *err)
{
    int scheme = RS_SCHEME_RING;
    if (ro->scheme && (scheme = rs_scheme_by_name(ro->scheme)) < 0)
        return rs_error_set(err, RS_EXIT_USAGE, "--scheme: unknown scheme '%s' (ring, ketama, slots, modulo, jump)",
                            ro->scheme);
    rs_ring_opts_default(o, (rs_scheme_id)scheme);
    if (ro->compat) {
        int c = rs_compat_by_name(ro->compat);
        if (c < 0)
            return rs_error_set(err, RS_EXIT_USAGE,
                                "--compat: unknown client '%s' (libketama, libmemcached, libmemcached-spy, twemproxy, "
                                "spymemcached, hashring)", ro->compat);
        if (ro->scheme || ro->hash || ro->seed || ro->vnodes || ro->label || ro->sign || ro->order)
            return rs_error_set(err, RS_EXIT_USAGE,
                                "--compat %s sets the scheme, hash, points and labels: it excludes --scheme, --hash, "
                                "--seed, --vnodes, --label, --sign and --order", ro->compat);
        rs_ring_opts_compat(o, (rs_compat_id)c);
    }
    if (ro->hash) {
        const rs_hash_info *h = rs_hash_by_name(ro->hash);
        if (!h)
            return rs_error_set(err, RS_EXIT_USAGE, "--hash: unknown hash '%s' (see --help)", ro->hash);
        o->hash = h->id;
        o->seed = h->default_seed;
    }
    unsigned long long v;
    if (ro->seed) {
        if (rs_opt_check_uint(&rs_opt_seed, ro->seed, &v, err) != 0)
            return -1;
        o->seed = v;
    }
    if (ro->vnodes) {
        if (rs_opt_check_uint(&rs_opt_vnodes, ro->vnodes, &v, err) != 0)
            return -1;
        o->vnodes = (uint32_t)v;
    }
    if (ro->label) {
        if (strlen(ro->label) >= RS_LABEL_MAX)
            return rs_error_set(err, RS_EXIT_USAGE, "--label: template longer than %d bytes", RS_LABEL_MAX - 1);
        strcpy(o->label, ro->label);
    }
    if (ro->sign) {
        if (strcmp(ro->sign, "clear") && strcmp(ro->sign, "keep"))
            return rs_error_set(err, RS_EXIT_USAGE, "--sign: expected clear or keep, not '%s'", ro->sign);
        o->clear_sign = strcmp(ro->sign, "clear") == 0;
    }
    if (ro->order) {
        if (strcmp(ro->order, "signed") && strcmp(ro->order, "unsigned"))
            return rs_error_set(err, RS_EXIT_USAGE, "--order: expected signed or unsigned, not '%s'", ro->order);
        o->order = strcmp(ro->order, "signed") == 0 ? RS_ORDER_SIGNED : RS_ORDER_UNSIGNED;
    }
    if (ro->nodes && ro->nodes_file)
        return rs_error_set(err, RS_EXIT_USAGE, "--nodes and --nodes-file exclude each other");
    if (ro->nodes_file) {
        if (rs_nodes_load(nodes, ro->nodes_file, err) != 0)
            return -1;
    } else {
        unsigned long long n = 1000;
        if (ro->nodes && rs_opt_check_uint(&rs_opt_nodes, ro->nodes, &n, err) != 0)
            return -1;
        if (rs_nodes_init_count(nodes, (uint32_t)n, err) != 0)
            return -1;
    }
    for (int i = 0; i < ro->down.n; i++) {   /* the lists add up */
        char *list = strdup(ro->down.v[i]), *save = NULL;
        for (char *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save))
            if (rs_nodes_set_down(nodes, name, err) != 0) {
                free(list);
                rs_nodes_free(nodes);
                return -1;
            }
        free(list);
    }
    return 0;
}

int rs_cli_ring_given(const rs_cli_ring *ro)
{
    return ro->scheme || ro->hash || ro->seed || ro->nodes || ro->nodes_file || ro->vnodes || ro->label || ro->sign ||
           ro->order || ro->down.n || ro->compat;
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

void rs_cli_put_escaped(FILE *f, const char *key, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        switch (key[i]) {
        case '\\': fputs("\\\\", f); break;
        case '\t': fputs("\\t", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        default: putc(key[i], f);
        }
    }
}
