/* Built against an installed ringshard with pkg-config by tools/test.sh:
 * proves that `cmake --install` gives a usable library, headers and .pc. */
#include <stdio.h>
#include <string.h>
#include <ringshard/ring.h>

int main(void)
{
    rs_ring_opts o;
    rs_nodes n;
    rs_error e = {0};
    rs_ring_opts_default(&o, RS_SCHEME_RING);
    if (rs_nodes_init_count(&n, 1000, &e) != 0)
        return 1;
    rs_ring *r = rs_ring_build(&o, &n, &e);
    if (!r)
        return 1;
    /* seed 004's first public key */
    const char *node = rs_ring_nodes(r)->names[rs_ring_locate(r, "CHONGQING", 9)];
    printf("CHONGQING -> %s\n", node);
    int ok = strcmp(node, "949") == 0;
    rs_ring_free(r);
    rs_nodes_free(&n);
    return ok ? 0 : 1;
}
