/* What an append run reads as (job_bucket.h): the head that bucket and
 * dedup share - why nothing was added, or the generations written - the
 * suggestion to compact, and bucket's own counts; dedup adds its own
 * (src/jobs/dedup_print.c). */
#include <stdio.h>
#include "ringshard/job_bucket.h"

int rs_append_print_head(FILE *f, const char *cmd, const char *dir, uint32_t generations, uint64_t first_gen,
                         uint64_t last_gen, uint64_t inputs_skipped, uint64_t inputs_empty)
{
    if (!generations && inputs_empty) {
        fprintf(f, "ringshard %s: %s not created: its inputs hold no header line and no row (the first append with "
                   "data creates it)\n", cmd, dir);
        return 0;
    }
    if (!generations) {
        fprintf(f, "ringshard %s: nothing new for %s: %llu input%s already ingested\n", cmd, dir,
                (unsigned long long)inputs_skipped, inputs_skipped == 1 ? "" : "s");
        return 0;
    }
    if (first_gen == last_gen)
        fprintf(f, "ringshard %s: generation %llu of %s", cmd, (unsigned long long)last_gen, dir);
    else   /* --commit-every: the counts are those of all of them */
        fprintf(f, "ringshard %s: generations %llu-%llu (%u) of %s", cmd, (unsigned long long)first_gen,
                (unsigned long long)last_gen, generations, dir);
    return 1;
}

void rs_append_print_compact_hint(FILE *f, const char *cmd, const char *dir, uint64_t generations, uint64_t files)
{
    if (generations > RS_GEN_COMPACT_HINT)
        fprintf(f, "ringshard %s: %s holds %llu generations (%llu data files): `ringshard compact %s` merges them "
                   "into one file per node\n",
                cmd, dir, (unsigned long long)generations, (unsigned long long)files, dir);
}

void rs_bucket_job_print_append(FILE *f, const char *dir, const rs_bucket_job_result *r)
{
    if (!rs_append_print_head(f, "bucket", dir, r->generations, r->first_gen, r->last_gen, r->inputs_skipped,
                              r->inputs_empty))
        return;
    fprintf(f, ": %llu input%s ingested, %llu skipped as already ingested\n", (unsigned long long)r->inputs_ingested,
            r->inputs_ingested == 1 ? "" : "s", (unsigned long long)r->inputs_skipped);
    rs_append_print_compact_hint(f, "bucket", dir, r->dir_generations, r->dir_files);
}
