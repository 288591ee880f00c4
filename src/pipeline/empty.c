/* Inputs without rows (ringshard/pipeline.h): a cron job whose upstream
 * export broke hands over a 0-byte or header-only file, and a run that
 * succeeds on it (1000 empty files, exit 0) hides the failure. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "ringshard/pipeline.h"

/* 1 if path is a regular file of 0 bytes ("-" and pipes: unknown, 0). */
static int zero_bytes(const char *path)
{
    struct stat st;
    return strcmp(path, "-") != 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0;
}

/* 1 if the --key spec names a column (a part that is not a number): the
 * run expects the export's columns, so a header alone is no data. */
static int key_named(const char *spec)
{
    for (const char *p = spec; p && *p; p++)
        if (*p != ',' && (*p < '0' || *p > '9'))
            return 1;
    return 0;
}

int rs_pipeline_empty_input(const rs_pipeline_opts *o, const rs_pipeline_result *res, size_t i)
{
    const rs_input_stats *in = &res->input[i];
    if (in->rows || in->rejected || in->filtered)
        return 0;
    int no_header = o->ninputs == 1 && res->header == NULL;   /* nothing, or nothing once decompressed */
    return zero_bytes(o->inputs[i]) || no_header || key_named(o->key);
}

size_t rs_pipeline_empty_inputs(const rs_pipeline_opts *o, const rs_pipeline_result *res)
{
    size_t n = 0;
    for (size_t i = 0; res->input && i < o->ninputs; i++)
        n += (size_t)rs_pipeline_empty_input(o, res, i);
    return n;
}

/* The inputs without rows that RS_EMPTY_ALLOW let pass in this process
 * (every run of it: an append's generations), and the first one's name. */
static size_t allowed;
static char allowed_first[256];

size_t rs_pipeline_allowed_empty(const char **first)
{
    *first = allowed_first;
    return allowed;
}

static size_t padded;
static uint64_t padded_bytes;
static char padded_first[256];

size_t rs_pipeline_padded(const char **first, uint64_t *bytes)
{
    *first = padded_first;
    *bytes = padded_bytes;
    return padded;
}

int rs_pipeline_check_empty(const rs_pipeline_opts *o, const rs_pipeline_result *res, rs_error *err)
{
    for (size_t i = 0; res->input && i < o->ninputs; i++)   /* accepted as gzip does, but said */
        if (res->input[i].zero_padding) {
            if (padded++ == 0)
                snprintf(padded_first, sizeof padded_first, "%s", rs_input_label(o->inputs[i]));
            padded_bytes += res->input[i].zero_padding;
        }
    for (size_t i = 0; o->empty_inputs == RS_EMPTY_ALLOW && res->input && i < o->ninputs; i++)
        if (rs_pipeline_empty_input(o, res, i) && allowed++ == 0)
            snprintf(allowed_first, sizeof allowed_first, "%s", o->inputs[i]);
    if (o->empty_inputs != RS_EMPTY_REFUSE)
        return 0;
    for (size_t i = 0; res->input && i < o->ninputs; i++) {
        if (!rs_pipeline_empty_input(o, res, i))
            continue;
        const char *path = rs_input_label(o->inputs[i]);
        if (zero_bytes(o->inputs[i]))
            return rs_error_set(err, RS_EXIT_DATA, "%s: empty input (0 bytes): an export that failed upstream? "
                                "nothing written; use --allow-empty if it may be empty", path);
        return rs_error_set(err, RS_EXIT_DATA, "%s: empty input (no rows: a header line at most, or nothing once "
                            "decompressed): an export that failed upstream? nothing written; use --allow-empty if it "
                            "may be empty", path);
    }
    return 0;
}
