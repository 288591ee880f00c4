/* Number parsers for option values and the edit distance of option and
 * command names (util/numparse.h). They live below the command line so
 * that tests and fuzzers reach them through the library. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "util/numparse.h"

int rs_parse_uint(const char *what, const char *arg, unsigned long long min, unsigned long long max,
                  unsigned long long *out, rs_error *err)
{
    char *end;
    errno = 0;
    if (!arg || !*arg || *arg == '-' || isspace((unsigned char)*arg))
        return rs_error_set(err, RS_EXIT_USAGE, "%s: '%s' is not a non-negative integer", what, arg ? arg : "");
    unsigned long long v = strtoull(arg, &end, 0);
    if (*end || errno)
        return rs_error_set(err, RS_EXIT_USAGE, "%s: '%s' is not a non-negative integer", what, arg);
    if (v < min || v > max)
        return rs_error_set(err, RS_EXIT_USAGE, "%s: %llu is out of range [%llu, %llu]", what, v, min, max);
    *out = v;
    return 0;
}

int rs_parse_size(const char *what, const char *arg, unsigned long long *out, rs_error *err)
{
    char *end;
    errno = 0;
    if (!arg || !isdigit((unsigned char)*arg))
        return rs_error_set(err, RS_EXIT_USAGE, "%s: '%s' is not a size (e.g. 512M, 2G)", what, arg ? arg : "");
    double v = strtod(arg, &end);
    unsigned long long mult = 1;
    switch (toupper((unsigned char)*end)) {
    case 'K': mult = 1ULL << 10; end++; break;
    case 'M': mult = 1ULL << 20; end++; break;
    case 'G': mult = 1ULL << 30; end++; break;
    case 'T': mult = 1ULL << 40; end++; break;
    case 'B': case '\0': break;
    default: return rs_error_set(err, RS_EXIT_USAGE, "%s: '%s' has an unknown unit", what, arg);
    }
    if (*end == 'i' || *end == 'I')
        end++;
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end || errno || v < 0 || v * mult > 1.8e19)
        return rs_error_set(err, RS_EXIT_USAGE, "%s: '%s' is not a size (e.g. 512M, 2G)", what, arg);
    *out = (unsigned long long)(v * mult);
    return 0;
}

size_t rs_edit_distance(const char *a, const char *b)
{
    /* optimal string alignment: insertions, deletions, substitutions and
     * transpositions of neighbours ("kye" -> "key") cost 1 each. Names are
     * short (options, commands): three rows on the stack suffice. */
    size_t na = strlen(a), nb = strlen(b);
    if (nb > 63)
        return nb > na ? nb : na;
    size_t rows[3][64], *pp = rows[0], *p = rows[1], *c = rows[2];
    for (size_t j = 0; j <= nb; j++)
        p[j] = j;
    for (size_t i = 1; i <= na; i++) {
        c[0] = i;
        for (size_t j = 1; j <= nb; j++) {
            size_t best = p[j - 1] + (a[i - 1] != b[j - 1]);
            if (p[j] + 1 < best)
                best = p[j] + 1;
            if (c[j - 1] + 1 < best)
                best = c[j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && pp[j - 2] + 1 < best)
                best = pp[j - 2] + 1;
            c[j] = best;
        }
        size_t *t = pp;
        pp = p, p = c, c = t;
    }
    return p[nb];
}

int rs_name_similar(const char *typed, const char *name, size_t *dist)
{
    /* as git: close enough that it is likely a typo, not another word
     * (at most 2 edits, and at most a third of the longer name beyond 1) */
    size_t d = rs_edit_distance(typed, name), n = strlen(name), t = strlen(typed);
    size_t limit = (n > t ? n : t) / 3;
    *dist = d;
    return d <= 2 && d <= (limit > 1 ? limit : 1);
}
