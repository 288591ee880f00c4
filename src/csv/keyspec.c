/* --key resolution: column names or 1-based indexes against a header. */
#include <stdlib.h>
#include <string.h>
#include "ringshard/csv.h"

int rs_csv_keyspec_resolve(rs_csv_keyspec *ks, const char *spec, char sep, const char *fields, uint32_t nfields,
                           const char *origin, rs_error *err)
{
    memset(ks, 0, sizeof *ks);
    ks->sep = sep;
    char *copy = strdup(spec && *spec ? spec : "1"), *save = NULL;
    if (!copy)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    int rc = 0;
    for (char *part = strtok_r(copy, ",", &save); part; part = strtok_r(NULL, ",", &save)) {
        if (ks->ncols == RS_CSV_MAX_KEY_COLS) {
            rc = rs_error_set(err, RS_EXIT_USAGE, "--key: at most %d columns", RS_CSV_MAX_KEY_COLS);
            break;
        }
        /* A header name wins over a number: a column may be called "2". */
        long col = -1;
        const char *f = fields;
        for (uint32_t i = 0; f && i < nfields; i++, f += strlen(f) + 1)
            if (strcmp(f, part) == 0) {
                col = i;
                break;
            }
        if (col < 0) {
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
    if (rc == 0 && ks->ncols == 0)
        rc = rs_error_set(err, RS_EXIT_USAGE, "--key: no column given");
    return rc;
}
