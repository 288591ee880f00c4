/* Ring options shared by every command, and small option-value parsers. */
#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cli/cli.h"
#include "cluster/world.h"

const char rs_cli_ring_help[] =
    "Ring options (the default is the Java/Guava ring: 1000 nodes x 200 vnodes):\n"
    "  --scheme NAME       ring (default), ketama, slots, modulo, jump\n"
    "  --hash NAME         murmur3_128 (ring default), murmur3_32, fnv1_32_java,\n"
    "                      java_hashcode (slots default), murmur64a_java, md5_ketama (ketama default)\n"
    "  --seed N            hash seed (default: the hash's own, 0 or 0x1234ABCD)\n"
    "  --nodes N           nodes named \"0\"..\"N-1\" (default 1000)\n"
    "  --nodes-file FILE   one node a line: name [weight] [down]; # comments; a name with\n"
    "                      blanks or # in double quotes, \"\" for a quote: \"node a\" 2 down\n"
    "  --vnodes V          ring: points per node (200); ketama: points per node (160)\n"
    "  --slots S           slots: the number of slots (1024)\n"
    "  --label TEMPLATE    label of a virtual node: {node} and {i} (ring: {node}&Node{i},\n"
    "                      ketama: {node}{i}; libketama/twemproxy: {node}-{i})\n"
    "  --sign clear|keep   clear the hash value's sign bit (ring and modulo: clear)\n"
    "  --order unsigned|signed  compare positions as unsigned or as Java signed values\n"
    "  --down NAMES        comma-separated nodes that are listed but down (own nothing)\n"
    "  --compat CLIENT     libketama, libmemcached, libmemcached-spy, twemproxy,\n"
    "                      spymemcached, hashring: the ketama ring that client builds\n"
    "                      (it sets scheme, hash, points, labels, collisions); nodes\n"
    "                      are named host:port\n";

int rs_cli_ring_option(rs_cli_ring *ro, int code, const char *arg)
{
    switch (code) {
    case RS_OPT_SCHEME: ro->scheme = arg; return 1;
    case RS_OPT_HASH: ro->hash = arg; return 1;
    case RS_OPT_SEED: ro->seed = arg; return 1;
    case RS_OPT_NODES: ro->nodes = arg; return 1;
    case RS_OPT_NODES_FILE: ro->nodes_file = arg; return 1;
    case RS_OPT_VNODES: ro->vnodes = arg; return 1;
    case RS_OPT_LABEL: ro->label = arg; return 1;
    case RS_OPT_SIGN: ro->sign = arg; return 1;
    case RS_OPT_ORDER: ro->order = arg; return 1;
    case RS_OPT_DOWN: ro->down = arg; return 1;
    case RS_OPT_COMPAT: ro->compat = arg; return 1;
    default: return 0;
    }
}

int rs_cli_uint(const char *what, const char *arg, unsigned long long min, unsigned long long max,
                unsigned long long *out, rs_error *err)
{
    char *end;
    errno = 0;
    if (!arg || !*arg || *arg == '-' || isspace((unsigned char)*arg))
        return rs_error_set(err, RS_EXIT_USAGE, "%s: '%s' is not a non-negative integer", what, arg ? arg : "");
    unsigned long long v = strtoull(arg, &end, 0);
    if (*end || errno)
        return rs_error_set(err, RS_EXIT_USAGE, "%s: '%s' is not a non-negative integer", what, arg);
    if (v < min || v > max)
        return rs_error_set(err, RS_EXIT_USAGE, "%s: %llu is out of range [%llu, %llu]", what, v, min, max);
    *out = v;
    return 0;
}

int rs_cli_size(const char *what, const char *arg, unsigned long long *out, rs_error *err)
{
    char *end;
    errno = 0;
    if (!arg || !isdigit((unsigned char)*arg))
        return rs_error_set(err, RS_EXIT_USAGE, "%s: '%s' is not a size (e.g. 512M, 2G)", what, arg ? arg : "");
    double v = strtod(arg, &end);
    unsigned long long mult = 1;
    switch (toupper((unsigned char)*end)) {
    case 'K': mult = 1ULL << 10; end++; break;
    case 'M': mult = 1ULL << 20; end++; break;
    case 'G': mult = 1ULL << 30; end++; break;
    case 'T': mult = 1ULL << 40; end++; break;
    case 'B': case '\0': break;
    default: return rs_error_set(err, RS_EXIT_USAGE, "%s: '%s' has an unknown unit", what, arg);
    }
    if (*end == 'i' || *end == 'I')
        end++;
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end || errno || v < 0 || v * mult > 1.8e19)
        return rs_error_set(err, RS_EXIT_USAGE, "%s: '%s' is not a size (e.g. 512M, 2G)", what, arg);
    *out = (unsigned long long)(v * mult);
    return 0;
}

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
        if (rs_cli_uint("--seed", ro->seed, 0, UINT64_MAX, &v, err) != 0)
            return -1;
        o->seed = v;
    }
    if (ro->vnodes) {
        if (rs_cli_uint("--vnodes", ro->vnodes, 1, 100000000, &v, err) != 0)
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
        if (ro->nodes && rs_cli_uint("--nodes", ro->nodes, 1, 10000000, &n, err) != 0)
            return -1;
        if (rs_nodes_init_count(nodes, (uint32_t)n, err) != 0)
            return -1;
    }
    if (ro->down) {
        char *list = strdup(ro->down), *save = NULL;
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
           ro->order || ro->down || ro->compat;
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
