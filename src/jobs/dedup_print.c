/* The dedup job's summaries as text (job_dedup.h), what `ringshard dedup`
 * prints on stderr: the job's counts, and with --append what the history
 * held. */
#include <stdio.h>
#include "ringshard/job_dedup.h"
#include "ringshard/util.h"

void rs_dedup_job_print(FILE *f, const char *outdir, int by_row, const rs_dedup_job_result *r)
{
    fprintf(f,
            "ringshard dedup: %llu rows in, %llu distinct rows, %llu duplicates removed (%llu %s with copies), "
            "%u buckets in %s (%.2f s: pass 1 %.2f s, pass 2 %.2f s, checks and publication %.2f s)\n",
            (unsigned long long)r->rows_in, (unsigned long long)r->rows, (unsigned long long)(r->rows_in - r->rows),
            (unsigned long long)r->dup_keys, by_row ? "rows" : "keys", r->buckets, outdir,
            r->seconds, r->pass1_seconds, r->pass2_seconds,
            r->seconds > r->pass1_seconds + r->pass2_seconds ? r->seconds - r->pass1_seconds - r->pass2_seconds : 0);
    char size[RS_HUMAN_MAX];
    if (r->buckets)
        fprintf(f, "  largest bucket: %s, %llu rows in (%s), %llu out; split again: %llu buckets (%llu splits)",
                r->largest_node, (unsigned long long)r->largest_rows_in,
                rs_human_bytes((double)r->largest_bytes_in, size, sizeof size),
                (unsigned long long)r->largest_rows, (unsigned long long)r->split_buckets,
                (unsigned long long)r->splits);
    if (r->streamed)
        fprintf(f, "; %llu parts deduplicated as a stream (hot keys)", (unsigned long long)r->streamed);
    if (r->rejected)
        fprintf(f, "; rejected rows: %llu", (unsigned long long)r->rejected);
    fputc('\n', f);
}

/* What the append read, as it counts and as the kernel does: the keys
 * confirmed by their bytes, the process's rchar and read_bytes since the
 * command began (every read: indexes, inputs, temporary buckets, whether
 * from the page cache or not), the inputs read to tell ingested ones. */
static void append_reads(FILE *f, const rs_procio *since, const rs_dedup_job_result *r)
{
    char b1[RS_HUMAN_MAX], b2[RS_HUMAN_MAX];
    fprintf(f, "  history keys: %llu new keys found by their exact bytes (%s of key index read to compare them)\n",
            (unsigned long long)r->keys_confirmed, rs_human_bytes((double)r->confirm_bytes, b1, sizeof b1));
    rs_procio now, d;
    rs_procio_read(&now);
    rs_procio_delta(since, &now, &d);
    if (d.known)
        fprintf(f, "  read (kernel): %s returned by reads (rchar), %s of them from storage (read_bytes)",
                rs_human_bytes((double)d.rchar, b1, sizeof b1), rs_human_bytes((double)d.read_bytes, b2, sizeof b2));
    else
        fputs("  read (kernel): n/a (no /proc/self/io)", f);
    if (r->seen_bytes)
        fprintf(f, "; %s of inputs read before the run to tell ingested ones",
                rs_human_bytes((double)r->seen_bytes, b1, sizeof b1));
    fputc('\n', f);
}

void rs_dedup_job_print_append(FILE *f, const char *outdir, const rs_procio *since, const rs_dedup_job_result *r)
{
    if (!rs_append_print_head(f, "dedup", outdir, r->generations, r->first_gen, r->last_gen, r->inputs_skipped,
                              r->inputs_empty))
        return;
    fprintf(f, ": %llu new rows kept of %llu; dropped: %llu whose key the history holds, %llu repeats within "
                    "the new inputs; %llu input%s ingested, %llu skipped as already ingested\n",
            (unsigned long long)r->rows, (unsigned long long)r->rows_in,
            (unsigned long long)r->history_rows, (unsigned long long)r->repeat_rows,
            (unsigned long long)r->inputs_ingested, r->inputs_ingested == 1 ? "" : "s",
            (unsigned long long)r->inputs_skipped);
    char read[RS_HUMAN_MAX], index[RS_HUMAN_MAX], data[RS_HUMAN_MAX];
    fprintf(f, "  history: %s of key index read (of %s of indexes, %s of data), %llu rows re-read",
            rs_human_bytes((double)r->index_read, read, sizeof read),
            rs_human_bytes((double)r->index_bytes, index, sizeof index),
            rs_human_bytes((double)r->history_bytes, data, sizeof data), (unsigned long long)r->rows_reread);
    if (r->indexes_built)
        fprintf(f, " to build %llu missing key indexes", (unsigned long long)r->indexes_built);
    fputc('\n', f);
    append_reads(f, since, r);
    rs_append_print_compact_hint(f, "dedup", outdir, r->dir_generations, r->dir_files);
}
