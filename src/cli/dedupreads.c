/* The lines of `dedup --append`'s summary that say what it read: see
 * rs_cli_dedup_reads (cli.h) and docs/dedup.md. */
#include <stdio.h>
#include "cli/cli.h"
#include "ringshard/util.h"

/* What the append read, as it counts and as the kernel does: the keys
 * confirmed by their bytes, the process's rchar and read_bytes since the
 * command began (every read: indexes, inputs, temporary buckets, whether
 * from the page cache or not), the inputs read to tell ingested ones. */
void rs_cli_dedup_reads(const rs_procio *since, const rs_dedup_job_result *r)
{
    char b1[RS_HUMAN_MAX], b2[RS_HUMAN_MAX];
    fprintf(stderr, "  history keys: %llu new keys found by their exact bytes (%s of key index read to compare them)\n",
            (unsigned long long)r->keys_confirmed, rs_human_bytes((double)r->confirm_bytes, b1, sizeof b1));
    rs_procio now, d;
    rs_procio_read(&now);
    rs_procio_delta(since, &now, &d);
    if (d.known)
        fprintf(stderr, "  read (kernel): %s returned by reads (rchar), %s of them from storage (read_bytes)",
                rs_human_bytes((double)d.rchar, b1, sizeof b1), rs_human_bytes((double)d.read_bytes, b2, sizeof b2));
    else
        fputs("  read (kernel): n/a (no /proc/self/io)", stderr);
    if (r->seen_bytes)
        fprintf(stderr, "; %s of inputs read before the run to tell ingested ones",
                rs_human_bytes((double)r->seen_bytes, b1, sizeof b1));
    fputc('\n', stderr);
}
