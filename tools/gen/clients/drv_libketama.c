/* Golden-vector driver for libketama, compiled with libketama's own
 * ketama.c and md5.c (RJ/ketama; not part of this repository).
 * Usage: drv_libketama SERVERFILE SERVERS KEYS
 * SERVERS: "host<TAB>port<TAB>weight" lines; written to SERVERFILE as
 * libketama's "host:port<TAB>memory" server definitions.
 * Prints "P point index" for the continuum in libketama's order, then
 * "A index" per key (ketama_get_server). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ketama.h"

int main(int argc, char **argv)
{
    if (argc != 4)
        return 64;
    FILE *in = fopen(argv[2], "r"), *out = fopen(argv[1], "w");
    char host[256], names[1024][32];
    unsigned port, weight, n = 0;
    while (in && out && n < 1024 && fscanf(in, "%255s %u %u", host, &port, &weight) == 3) {
        snprintf(names[n], sizeof names[n], "%s:%u", host, port);
        fprintf(out, "%s\t%u\n", names[n++], weight);
    }
    if (!in || !out || fclose(out) != 0)
        return 1;
    ketama_continuum c;
    if (!ketama_roll(&c, argv[1])) {
        fprintf(stderr, "ketama_roll: %s\n", ketama_error());
        return 1;
    }
    mcs *arr = c->array;
    for (int i = 0; i < c->numpoints; i++) {
        unsigned j = 0;
        while (j < n && strcmp(names[j], arr[i].ip))
            j++;
        printf("P %u %u\n", arr[i].point, j);
    }
    FILE *k = fopen(argv[3], "r");
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while (k && (len = getline(&line, &cap, k)) > 0) {
        if (line[len - 1] == '\n')
            line[len - 1] = '\0';
        mcs *s = ketama_get_server(line, c);
        unsigned j = 0;
        while (j < n && strcmp(names[j], s->ip))
            j++;
        printf("A %u\n", j);
    }
    free(line);
    ketama_smoke(c);
    return 0;
}
