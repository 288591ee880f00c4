/* The summaries `ringshard dedup` prints on stderr (cli/dedup_print.h):
 * the job's counts, and with --append what the history held. */
#include <stdio.h>
#include "cli/dedup_print.h"
#include "ringshard/util.h"

/* The summary on stderr: rows in and out, the largest bucket, splits. */
void rs_cli_dedup_summary(const rs_cli_dedup_args *a, const rs_dedup_job_result *r)
{
    fprintf(stderr,
            "ringshard dedup: %llu rows in, %llu distinct rows, %llu duplicates removed (%llu %s with copies), "
            "%u buckets in %s (%.2f s: pass 1 %.2f s, pass 2 %.2f s)\n",
            (unsigned long long)r->rows_in, (unsigned long long)r->rows, (unsigned long long)(r->rows_in - r->rows),
            (unsigned long long)r->dup_keys, a->by_row ? "rows" : "keys", r->buckets, a->outdir,
            r->pass1_seconds + r->pass2_seconds, r->pass1_seconds, r->pass2_seconds);
    char size[RS_HUMAN_MAX];
    if (r->buckets)
        fprintf(stderr, "  largest bucket: %s, %llu rows in (%s), %llu out; split again: %llu buckets (%llu splits)",
                r->largest_node, (unsigned long long)r->largest_rows_in,
                rs_human_bytes((double)r->largest_bytes_in, size, sizeof size),
                (unsigned long long)r->largest_rows, (unsigned long long)r->split_buckets,
                (unsigned long long)r->splits);
    if (r->streamed)
        fprintf(stderr, "; %llu parts deduplicated as a stream (hot keys)", (unsigned long long)r->streamed);
    if (r->rejected)
        fprintf(stderr, "; rejected rows: %llu", (unsigned long long)r->rejected);
    fputc('\n', stderr);
}

/* The append summary: generations, inputs, what the history held, and
 * what was read of it. */
void rs_cli_dedup_append_summary(const rs_cli_dedup_args *a, const rs_dedup_job_result *r)
{
    if (!r->generations && r->inputs_empty) {
        fprintf(stderr, "ringshard dedup: %s not created: its inputs hold no header line and no row (the first "
                        "append with data creates it)\n", a->outdir);
        return;
    }
    if (!r->generations) {
        fprintf(stderr, "ringshard dedup: nothing new for %s: %llu input%s already ingested\n", a->outdir,
                (unsigned long long)r->inputs_skipped, r->inputs_skipped == 1 ? "" : "s");
        return;
    }
    if (r->first_gen == r->last_gen)
        fprintf(stderr, "ringshard dedup: generation %llu of %s", (unsigned long long)r->last_gen, a->outdir);
    else   /* --commit-every: the counts are those of all of them */
        fprintf(stderr, "ringshard dedup: generations %llu-%llu (%u) of %s", (unsigned long long)r->first_gen,
                (unsigned long long)r->last_gen, r->generations, a->outdir);
    fprintf(stderr, ": %llu new rows kept of %llu; dropped: %llu whose key the history holds, %llu repeats within "
                    "the new inputs; %llu input%s ingested, %llu skipped as already ingested\n",
            (unsigned long long)r->rows, (unsigned long long)r->rows_in,
            (unsigned long long)r->history_rows, (unsigned long long)r->repeat_rows,
            (unsigned long long)r->inputs_ingested, r->inputs_ingested == 1 ? "" : "s",
            (unsigned long long)r->inputs_skipped);
    char read[RS_HUMAN_MAX], index[RS_HUMAN_MAX], data[RS_HUMAN_MAX];
    fprintf(stderr, "  history: %s of key index read (of %s of indexes, %s of data), %llu rows re-read",
            rs_human_bytes((double)r->index_read, read, sizeof read),
            rs_human_bytes((double)r->index_bytes, index, sizeof index),
            rs_human_bytes((double)r->history_bytes, data, sizeof data), (unsigned long long)r->rows_reread);
    if (r->indexes_built)
        fprintf(stderr, " to build %llu missing key indexes", (unsigned long long)r->indexes_built);
    fputc('\n', stderr);
    rs_cli_compact_hint("dedup", a->outdir, r->dir_generations, r->dir_files);
}
