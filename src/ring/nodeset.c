/* Node-set changes (--add, --add-names), shared by the plan and simulate
 * jobs so that both name the added nodes alike. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ringshard/nodes.h"

int rs_nodes_add_after(rs_nodes *nodes, uint32_t k, rs_error *err)
{
    const char *last = nodes->names[nodes->count - 1];
    size_t len = strlen(last), d = len;
    while (d > 0 && isdigit((unsigned char)last[d - 1]))
        d--;
    char prefix[4096];
    unsigned long long next = 1;
    int width = 0;
    /* more than 18 digits would overflow the counter: treated as no digits */
    if (d == len || len - d > 18) {
        if (len + 2 >= sizeof prefix)
            return rs_error_set(err, RS_EXIT_USAGE, "--add: node name too long");
        snprintf(prefix, sizeof prefix, "%s-", last);
    } else {
        if (d >= sizeof prefix)
            return rs_error_set(err, RS_EXIT_USAGE, "--add: node name too long");
        memcpy(prefix, last, d);
        prefix[d] = '\0';
        if (last[d] == '0' && len - d > 1)
            width = (int)(len - d);
        /* after the largest number with this prefix, so that "db07" in a
         * list that also has "db12" continues at "db13" */
        next = 0;
        for (uint32_t i = 0; i < nodes->count; i++) {
            const char *s = nodes->names[i];
            if (strncmp(s, prefix, d) != 0 || !s[d])
                continue;
            const char *p = s + d;
            while (isdigit((unsigned char)*p))
                p++;
            if (*p || p - (s + d) > 18)
                continue;
            unsigned long long v = strtoull(s + d, NULL, 10);
            if (v + 1 > next)
                next = v + 1;
        }
    }
    char name[4200];
    rs_node_index ix;   /* --add 100000: no linear search per name */
    if (rs_node_index_build(&ix, nodes, err) != 0)
        return -1;
    int rc = 0;
    for (uint32_t added = 0; added < k && rc == 0; next++) {
        snprintf(name, sizeof name, "%s%0*llu", prefix, width, next);
        if (rs_node_index_find(&ix, nodes, name) >= 0)
            continue;
        rc = rs_nodes_append_indexed(nodes, &ix, name, 1.0, "--add", err);
        added++;
    }
    rs_node_index_free(&ix);
    return rc;
}

int rs_nodes_add_names(rs_nodes *nodes, const char *list, rs_error *err)
{
    char *copy = strdup(list), *save = NULL;
    rs_node_index ix;
    if (!copy)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    int rc = rs_node_index_build(&ix, nodes, err);
    for (char *name = strtok_r(copy, ",", &save); name && rc == 0; name = strtok_r(NULL, ",", &save))
        rc = rs_nodes_append_indexed(nodes, &ix, name, 1.0, "--add-names", err);
    rs_node_index_free(&ix);
    free(copy);
    return rc;
}
