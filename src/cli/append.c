/* The append options of bucket and dedup (--append, --on-seen,
 * --commit-every), and which options that shape the files were given. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "ringshard/job_bucket.h"

const char rs_cli_append_help[] =
    "Append options (a directory that grows, run after run: docs/bucket.md):\n"
    "  --append               add the inputs to DIR as a new generation (DIR is\n"
    "                         created when missing); what shapes the files (ring,\n"
    "                         --key, --delimiter, --header, --compress, --level,\n"
    "                         --keys-only) is DIR's: left out, it is taken from\n"
    "                         DIR's manifest; given, it must be the same\n"
    "  --on-seen skip|fail|again  an input DIR already ingested (same content,\n"
    "                         whatever its name): skip it with a note (default),\n"
    "                         fail (exit 73, nothing written) or ingest it again\n"
    "  --commit-every N       publish a generation every N inputs, or every SIZE\n"
    "                         of inputs as stored (10G, 500M): a run killed\n"
    "                         between two is resumed by running it again\n";

/* The shaping option a code gives, as an RS_GIVEN_* bit (0: none). */
static unsigned given_bit(int code)
{
    switch (code) {
    case RS_OPT_KEY: return RS_GIVEN_KEY;
    case RS_OPT_KEY_SEP: return RS_GIVEN_KEY_SEP;
    case RS_OPT_DELIMITER: return RS_GIVEN_DELIMITER;
    case RS_OPT_HEADER:
    case RS_OPT_NO_HEADER: return RS_GIVEN_HEADER;
    case RS_OPT_COMPRESS: return RS_GIVEN_COMPRESS;
    case RS_OPT_LEVEL: return RS_GIVEN_LEVEL;
    default: break;
    }
    return code >= RS_OPT_SCHEME && code <= RS_OPT_COMPAT ? RS_GIVEN_RING : 0;
}

int rs_cli_append_option(rs_cli_append *a, int code, const char *arg, rs_error *err)
{
    a->given |= given_bit(code);
    switch (code) {
    case RS_OPT_APPEND: a->append = 1; return 1;
    case RS_OPT_ON_SEEN:
        a->on_seen_given = 1;
        if (!strcmp(arg, "skip"))
            a->on_seen = RS_SEEN_SKIP;
        else if (!strcmp(arg, "fail"))
            a->on_seen = RS_SEEN_FAIL;
        else if (!strcmp(arg, "again"))
            a->on_seen = RS_SEEN_AGAIN;
        else
            return rs_error_set(err, RS_EXIT_USAGE, "--on-seen: expected skip, fail or again, not '%s'", arg);
        return 1;
    case RS_OPT_COMMIT_EVERY: {
        unsigned long long v;
        a->commit_given = 1;
        size_t digits = strspn(arg, "0123456789");
        a->commit_bytes = arg[0] && arg[digits] != '\0';   /* a suffix: a size */
        if (a->commit_bytes ? rs_cli_size("--commit-every", arg, &v, err) != 0
                            : rs_cli_uint("--commit-every", arg, 1, UINT64_MAX, &v, err) != 0)
            return -1;
        if (v == 0)
            return rs_error_set(err, RS_EXIT_USAGE, "--commit-every: 0 is no interval");
        a->commit_every = v;
        return 1;
    }
    default: return 0;
    }
}

int rs_cli_append_finish(const rs_cli_append *a, int force, rs_error *err)
{
    if (a->append && force)
        return rs_error_set(err, RS_EXIT_USAGE, "--append adds to DIR, --force replaces it: give one of them");
    if (!a->append && (a->on_seen_given || a->commit_given))
        return rs_error_set(err, RS_EXIT_USAGE, "%s needs --append", a->on_seen_given ? "--on-seen" : "--commit-every");
    return 0;
}

void rs_cli_compact_hint(const char *cmd, const char *dir, uint64_t generations, uint64_t files)
{
    if (generations > RS_GEN_COMPACT_HINT)
        fprintf(stderr, "ringshard %s: %s holds %llu generations (%llu data files): `ringshard compact %s` merges them "
                        "into one file per node\n",
                cmd, dir, (unsigned long long)generations, (unsigned long long)files, dir);
}
