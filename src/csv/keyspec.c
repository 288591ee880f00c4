/* --key resolution: column names or 1-based indexes against a header. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ringshard/csv.h"
#include "ringshard/text.h"

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

/* The header as read, for a message: its fields quoted, their bytes
 * escaped (rs_text_escape: a tab as \t, control bytes and bytes that are
 * not UTF-8 as \xNN), cut after about 160 bytes ("..."). */
static void header_shown(char *out, size_t cap, const char *fields, uint32_t nfields)
{
    rs_buf m = {0};
    char num[32];
    rs_buf_append(&m, num, (size_t)snprintf(num, sizeof num, "%u field%s: ", nfields, nfields == 1 ? "" : "s"));
    const char *f = fields;
    for (uint32_t i = 0; i < nfields; i++, f += strlen(f) + 1) {
        if (m.len > 160) {
            rs_buf_append(&m, "...", 3);
            break;
        }
        if (i)
            rs_buf_append(&m, ",", 1);
        rs_text_escape(&m, f, strlen(f), 120, '"');
    }
    /* cut at a whole escape or character: the text was built so that it ends in one */
    size_t n = m.data ? m.len : 0;
    if (n >= cap) {
        n = cap - 4;
        while (n > 0 && (((unsigned char)m.data[n] & 0xC0) == 0x80))
            n--;
        memcpy(out, m.data, n);
        memcpy(out + n, "...", 4);
    } else {
        memcpy(out, m.data ? m.data : "", n);
        out[n] = '\0';
    }
    rs_buf_free(&m);
}

/* A delimiter the header seems to use instead of the one it was split
 * by: one by which a field splits into a piece equal to the key name
 * part, else (a header of one field) one that field contains. 0 if none. */
static char likely_delimiter(const char *fields, uint32_t nfields, const char *part)
{
    static const char cand[] = "\t;|,";
    size_t n = strlen(part);
    for (const char *d = cand; *d; d++) {
        const char *f = fields;
        for (uint32_t i = 0; i < nfields; i++, f += strlen(f) + 1)
            for (const char *p = f; (p = strstr(p, part)) != NULL; p++)
                if ((p == f || p[-1] == *d) && (p[n] == '\0' || p[n] == *d) && strchr(f, *d))
                    return *d;
    }
    for (const char *d = cand; nfields == 1 && *d; d++)
        if (strchr(fields, *d))
            return *d;
    return 0;
}

/* The "no column" error: the header read, and a delimiter it seems to use. */
static int no_column(const char *part, const char *fields, uint32_t nfields, const char *origin, rs_error *err)
{
    char shown[720], key[160];
    header_shown(shown, sizeof shown, fields, nfields);
    char d = likely_delimiter(fields, nfields, part);
    static const char *const names[] = {"tab-separated: try --delimiter tab", "semicolon-separated: try --delimiter ';'",
                                        "pipe-separated: try --delimiter '|'", "comma-separated: try --delimiter ,"};
    const char *hint = d == '\t' ? names[0] : d == ';' ? names[1] : d == '|' ? names[2] : d == ',' ? names[3] : NULL;
    return rs_error_set(err, RS_EXIT_USAGE, "--key: no column %s in the header of %s (it has %s)%s%s",
                        rs_text_shown_str(key, sizeof key, part, '\''), origin, shown,
                        hint ? "; the header looks " : "", hint ? hint : "");
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
        if (col < 0 && fields) {
            rc = no_column(part, fields, nfields, origin, err);
            break;
        }
        if (col < 0 || (fields && (uint32_t)col >= nfields)) {
            char shown[160];
            rc = rs_error_set(err, RS_EXIT_USAGE, "--key: no column %s in the header of %s",
                              rs_text_shown_str(shown, sizeof shown, part, '\''), origin);
            break;
        }
        ks->cols[ks->ncols++] = (uint32_t)col;
    }
    free(copy);
    return rc;
}
