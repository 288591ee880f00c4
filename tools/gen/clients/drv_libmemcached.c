/* Golden-vector driver for libmemcached (the real library, no network).
 * Usage: drv_libmemcached weighted|spy SERVERS KEYS
 * SERVERS: one "host<TAB>port<TAB>weight" a line, in ring order; a host
 * starting with '/' is a unix socket (its port, 0, is not read): then every
 * server is added one by one (memcached_server_add_unix_socket_with_weight,
 * memcached_server_add_with_weight), as a server list cannot hold one.
 * KEYS: one key a line (bytes as they are).
 * Prints "P value index" for the continuum in the library's sorted order,
 * then "A index" per key (memcached_generate_hash). */
#include <libmemcached/memcached.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Private in libmemcached (src/libmemcached/continuum.hpp); the public
 * memcached_st holds a pointer to an array of these. */
struct memcached_continuum_item_st {
    uint32_t index;
    uint32_t value;
};

int main(int argc, char **argv)
{
    if (argc != 4)
        return 64;
    memcached_st *m = memcached_create(NULL);
    memcached_behavior_set(m, MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED, 1);
    if (!strcmp(argv[1], "spy"))
        memcached_behavior_set(m, MEMCACHED_BEHAVIOR_DISTRIBUTION, MEMCACHED_DISTRIBUTION_CONSISTENT_KETAMA_SPY);
    FILE *f = fopen(argv[2], "r");
    char host[1100];
    unsigned port, weight;
    memcached_server_list_st list = NULL;
    memcached_return_t rc;
    int sockets = 0;
    while (f && fscanf(f, "%1099s %u %u", host, &port, &weight) == 3)
        sockets |= host[0] == '/';
    if (f)
        rewind(f);
    while (f && fscanf(f, "%1099s %u %u", host, &port, &weight) == 3) {
        if (!sockets)
            list = memcached_server_list_append_with_weight(list, host, (in_port_t)port, weight, &rc);
        else if ((host[0] == '/' ? memcached_server_add_unix_socket_with_weight(m, host, weight)
                                 : memcached_server_add_with_weight(m, host, (in_port_t)port, weight)) != MEMCACHED_SUCCESS)
            return 1;
    }
    if (!f || (!sockets && (!list || memcached_server_push(m, list) != MEMCACHED_SUCCESS)))
        return 1;
    memcached_server_list_free(list);
    const struct memcached_continuum_item_st *c = m->ketama.continuum;
    for (uint32_t i = 0; i < m->ketama.continuum_points_counter; i++)
        printf("P %u %u\n", c[i].value, c[i].index);
    FILE *k = fopen(argv[3], "r");
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while (k && (n = getline(&line, &cap, k)) > 0) {
        if (line[n - 1] == '\n')
            n--;
        printf("A %u\n", memcached_generate_hash(m, line, (size_t)n));
    }
    free(line);
    memcached_free(m);
    return 0;
}
