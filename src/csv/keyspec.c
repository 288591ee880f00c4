/* --key resolution: column names or 1-based indexes against a header. */
#include <stdlib.h>
#include <string.h>
#include "ringshard/csv.h"

/* 1 if part is a 1-based column number as --key takes it (digits only). */
static int is_number(const char *part, size_t len)
{
    if (len == 0)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (part[i] < '0' || part[i] > '9')
            return 0;
    return 1;
}

int rs_csv_keyspec_check(const char *spec, int header, rs_error *err)
{
    if (!spec)
        return 0;
    if (!*spec)
        return rs_error_set(err, RS_EXIT_USAGE, "--key: empty column name (give a header name or a 1-based number)");
    int ncols = 0;
    for (const char *part = spec;; ncols++) {
        const char *comma = strchr(part, ',');
        size_t len = comma ? (size_t)(comma - part) : strlen(part);
        /* An empty part is an unset variable or a typo, never a column. */
        if (len == 0)
            return rs_error_set(err, RS_EXIT_USAGE, "--key: empty column name in '%s' (column %d of the list)", spec,
                                ncols + 1);
        if (ncols == RS_CSV_MAX_KEY_COLS)
            return rs_error_set(err, RS_EXIT_USAGE, "--key: at most %d columns", RS_CSV_MAX_KEY_COLS);
        if (!header && !is_number(part, len))
            return rs_error_set(err, RS_EXIT_USAGE,
                                "--key: '%.*s' is a column name, and names need a header: with --no-header give "
                                "1-based column numbers",
                                (int)len, part);
        if (!header && strtol(part, NULL, 10) < 1)
            return rs_error_set(err, RS_EXIT_USAGE, "--key: column numbers start at 1, not '%.*s'", (int)len, part);
        if (!comma)
            return 0;
        part = comma + 1;
    }
}

int rs_csv_keyspec_resolve(rs_csv_keyspec *ks, const char *spec, char sep, const char *fields, uint32_t nfields,
                           const char *origin, rs_error *err)
{
    memset(ks, 0, sizeof *ks);
    ks->sep = sep;
    if (rs_csv_keyspec_check(spec, fields != NULL, err) != 0)
        return -1;
    if (!spec) {  /* the default is the first column by position, whatever the header calls its columns */
        if (fields && nfields == 0)
            return rs_error_set(err, RS_EXIT_USAGE, "--key: no column 1 in the header of %s", origin);
        ks->cols[ks->ncols++] = 0;
        return 0;
    }
    char *copy = strdup(spec), *save = NULL;
    if (!copy)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    int rc = 0;
    for (char *part = strtok_r(copy, ",", &save); part; part = strtok_r(NULL, ",", &save)) {
        /* A header name wins over a number: a column may be called "2". */
        long col = -1;
        const char *f = fields;
        for (uint32_t i = 0; f && i < nfields; i++, f += strlen(f) + 1)
            if (strcmp(f, part) == 0) {
                col = i;
                break;
            }
        if (col < 0 && is_number(part, strlen(part))) {  /* digits only: "+1", " 1" are names */
            char *end;
            long v = strtol(part, &end, 10);
            if (*end == '\0' && v >= 1)
                col = v - 1;
        }
        if (col < 0 || (fields && (uint32_t)col >= nfields)) {
            rc = rs_error_set(err, RS_EXIT_USAGE, "--key: no column '%s' in the header of %s", part, origin);
            break;
        }
        ks->cols[ks->ncols++] = (uint32_t)col;
    }
    free(copy);
    return rc;
}
