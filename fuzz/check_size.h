/* fuzz/check_size.h - size and integer option parsing: rs_parse_size and
 * rs_parse_uint from src/util/numparse.c (see fuzz/check_common.h), part
 * of the library the includer links.
 *
 * The bytes up to the first NUL are the option value. Neither parser may
 * misbehave (sanitizers watch the double -> integer conversion); an error
 * is RS_EXIT_USAGE naming the option; an accepted value obeys the grammar:
 * rs_parse_size accepts only a leading digit, and for a plain decimal number
 * (at most 15 digits, optional fraction, below 1e19) with a unit K/M/G/T
 * (optionally followed by i and/or B) or B gives the scaled value, truncated;
 * rs_parse_uint agrees with strtoull(base 0) within [min, max] and rejects
 * signs, blanks and trailing bytes. */
#ifndef RINGSHARD_FUZZ_CHECK_SIZE_H
#define RINGSHARD_FUZZ_CHECK_SIZE_H

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "check_common.h"
#include "util/numparse.h"

/* Parses "D+[.D*][unit][i][B]" exactly (long double keeps 15 digits times
 * 2^40 exact); returns 1 and the value, or 0 if arg is not of that form. */
static int fzsize_simple(const char *arg, unsigned long long *out)
{
    const char *p = arg;
    unsigned long long ip = 0, frac = 0, fden = 1;
    int nd = 0;
    while (isdigit((unsigned char)*p)) {
        ip = ip * 10 + (unsigned long long)(*p++ - '0');
        if (++nd > 15)
            return 0;
    }
    if (nd == 0)
        return 0;
    if (*p == '.') {
        p++;
        while (isdigit((unsigned char)*p)) {
            frac = frac * 10 + (unsigned long long)(*p++ - '0');
            fden *= 10;
            if (++nd > 15)
                return 0;
        }
    }
    unsigned long long mult = 1;
    switch (*p) {
    case 'k': case 'K': mult = 1ULL << 10; p++; break;
    case 'm': case 'M': mult = 1ULL << 20; p++; break;
    case 'g': case 'G': mult = 1ULL << 30; p++; break;
    case 't': case 'T': mult = 1ULL << 40; p++; break;
    default: break;
    }
    if (mult > 1 && (*p == 'i' || *p == 'I')) /* "Ki", not a bare "i" */
        p++;
    if (*p == 'b' || *p == 'B')
        p++;
    if (*p)
        return 0;
    /* (ip + frac/fden) * mult, truncated: exact in integers */
    unsigned __int128 num = ((unsigned __int128)ip * fden + frac) * mult;
    num /= fden;
    if (num >= (unsigned __int128)10000000000000000000ULL)
        return 0; /* near the 1.8e19 limit: not compared */
    *out = (unsigned long long)num;
    return 1;
}

static int check_size(const uint8_t *data, size_t size)
{
    char *arg = malloc(size + 1);
    FZ_CHECK(arg != NULL, "out of memory");
    if (size)
        memcpy(arg, data, size);
    arg[size] = '\0';
    size_t len = strlen(arg);
    rs_error err;
    unsigned long long v = 0;

    rs_error_clear(&err);
    int rc = rs_parse_size("--memory", arg, &v, &err);
    if (rc != 0) {
        FZ_CHECK(rc == -1 && err.code == RS_EXIT_USAGE, "rc %d code %d", rc, err.code);
        FZ_CHECK(strncmp(err.msg, "--memory: ", 10) == 0, "message does not name the option: %s", err.msg);
    } else {
        FZ_CHECK(len > 0 && isdigit((unsigned char)arg[0]), "'%s' accepted", arg);
    }
    unsigned long long exact;
    if (fzsize_simple(arg, &exact)) {
        /* exact for integers; within double rounding (relative 2^-50) for fractions */
        FZ_CHECK(rc == 0, "'%s' rejected: %s", arg, err.msg);
        if (!strchr(arg, '.'))
            FZ_CHECK(v == exact, "'%s' gives %llu, expected %llu", arg, v, exact);
        else { /* a double holds 53 bits: allow 2^-50 relative, plus truncation */
            unsigned long long tol = exact / (1ULL << 50) + 1;
            FZ_CHECK(v + tol >= exact && v <= exact + tol, "'%s' gives %llu, expected about %llu", arg, v, exact);
        }
    }

    static const unsigned long long ranges[][2] = {{0, UINT64_MAX}, {1, 100000000}};
    for (int i = 0; i < 2; i++) {
        rs_error_clear(&err);
        v = 12345;
        rc = rs_parse_uint("--vnodes", arg, ranges[i][0], ranges[i][1], &v, &err);
        char *end;
        errno = 0;
        unsigned long long want = strtoull(arg, &end, 0);
        int ok = len > 0 && arg[0] != '-' && arg[0] != '+' && !isspace((unsigned char)arg[0]) && *end == '\0' &&
                 end != arg && errno == 0 && want >= ranges[i][0] && want <= ranges[i][1];
        if (arg[0] == '+')
            ok = -1; /* "+5": strtoull takes it; the parser may too */
        if (rc == 0) {
            FZ_CHECK(ok != 0, "rs_parse_uint accepts '%s'", arg);
            FZ_CHECK(v == want, "rs_parse_uint('%s') = %llu, strtoull %llu", arg, v, want);
        } else {
            FZ_CHECK(rc == -1 && err.code == RS_EXIT_USAGE, "rc %d code %d", rc, err.code);
            FZ_CHECK(strncmp(err.msg, "--vnodes: ", 10) == 0, "message does not name the option: %s", err.msg);
            FZ_CHECK(ok != 1, "rs_parse_uint rejects '%s': %s", arg, err.msg);
            FZ_CHECK(v == 12345, "a rejected value is stored");
        }
    }
    free(arg);
    return 0;
}

#endif
