/* What every command's option parsing shares: getopt_long without its own
 * messages (opterr = 0), so that a bad option is said once, in the one
 * format "ringshard CMD: ...", with the nearest option names by edit
 * distance; --version for every command; and the suggestions for a
 * misspelt command (main.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "cluster/world.h"
#include "rs_config.h"

size_t rs_cli_edit_distance(const char *a, const char *b)
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

int rs_cli_similar(const char *typed, const char *name, size_t *dist)
{
    /* as git: close enough that it is likely a typo, not another word
     * (at most 2 edits, and at most a third of the longer name beyond 1) */
    size_t d = rs_cli_edit_distance(typed, name), n = strlen(name), t = strlen(typed);
    size_t limit = (n > t ? n : t) / 3;
    *dist = d;
    return d <= 2 && d <= (limit > 1 ? limit : 1);
}

/* The long option name of argument arg ("--kye=x" -> "kye"), in buf. */
static const char *long_name(const char *arg, char *buf, size_t cap)
{
    arg += 2;
    size_t n = strcspn(arg, "=");
    if (n >= cap)
        n = cap - 1;
    memcpy(buf, arg, n);
    buf[n] = '\0';
    return buf;
}

/* Appends to msg " (did you mean '--a' or '--b'?)" for the options of
 * longopts nearest to name, if any is near enough. */
static void suggest(char *msg, size_t cap, const char *name, const struct option *longopts)
{
    size_t best = (size_t)-1, d, n = 0;
    for (const struct option *o = longopts; o->name; o++)
        if (rs_cli_similar(name, o->name, &d) && d < best)
            best = d;
    if (best == (size_t)-1)
        return;
    size_t len = strlen(msg);
    len += (size_t)snprintf(msg + len, cap - len, " (did you mean ");
    for (const struct option *o = longopts; o->name && len < cap; o++)
        if (rs_cli_similar(name, o->name, &d) && d == best)
            len += (size_t)snprintf(msg + len, cap - len, "%s'--%s'", n++ ? " or " : "", o->name);
    if (len < cap)
        snprintf(msg + len, cap - len, "?)");
}

/* The long option the argument starting with name abbreviates, counted. */
static size_t prefixed(const char *name, const struct option *longopts, char *list, size_t cap)
{
    size_t k = 0, len = 0, n = strlen(name);
    list[0] = '\0';
    for (const struct option *o = longopts; o->name; o++)
        if (strncmp(o->name, name, n) == 0 && len < cap)
            len += (size_t)snprintf(list + len, cap - len, "%s'--%s'", k++ ? ", " : "", o->name);
    return k;
}

/* 1 if argv's long option name is one of longopts with value val: getopt
 * refused its argument (not a short option of a later cluster). */
static int takes_no_argument(const char *name, int val, const struct option *longopts)
{
    for (const struct option *o = longopts; o->name; o++)
        if (o->val == val && o->has_arg == no_argument && strncmp(o->name, name, strlen(name)) == 0)
            return 1;
    return 0;
}

/* The message for getopt's '?' or ':' on argv[optind - 1]. */
static void bad_option(const char *cmd, int code, int argc, char **argv, const struct option *longopts)
{
    char msg[1024], name[256], list[512];
    const char *arg = optind - 1 < argc && optind > 0 ? argv[optind - 1] : "";
    /* argv[optind - 1] is the option at fault, or, for a short option in
     * the middle of a cluster (-Qj), an earlier argument */
    int is_long = strncmp(arg, "--", 2) == 0 && (optopt == 0 || code == ':' || strchr(arg, '=') ||
                                                 takes_no_argument(arg + 2, optopt, longopts));
    if (code == ':' && is_long)
        snprintf(msg, sizeof msg, "option '--%s' requires an argument", long_name(arg, name, sizeof name));
    else if (code == ':')
        snprintf(msg, sizeof msg, "option '-%c' requires an argument", optopt);
    else if (is_long && optopt != 0 && takes_no_argument(long_name(arg, name, sizeof name), optopt, longopts))
        snprintf(msg, sizeof msg, "option '--%s' takes no argument", name);
    else if (is_long && prefixed(long_name(arg, name, sizeof name), longopts, list, sizeof list) > 1)
        snprintf(msg, sizeof msg, "option '--%s' is ambiguous (%s)", name, list);
    else if (is_long) {
        snprintf(msg, sizeof msg, "unrecognized option '--%s'", name);
        suggest(msg, sizeof msg, name, longopts);
    } else {
        snprintf(msg, sizeof msg, "invalid option '-%c'", optopt);   /* one letter: no near name to suggest */
    }
    rs_cli_usage_error(cmd, msg);
}

int rs_cli_getopt(const char *cmd, int argc, char **argv, const char *shortopts, const struct option *longopts)
{
    char spec[64];
    snprintf(spec, sizeof spec, ":%s", shortopts);   /* ':' first: a missing argument returns ':' */
    opterr = 0;
    int c = getopt_long(argc, argv, spec, longopts, NULL);
    if (c != '?' && c != ':')
        return c;
    if (c == '?' && optopt == 0 && optind > 0 && optind - 1 < argc && strcmp(argv[optind - 1], "--version") == 0) {
        if (rs_world_rank() == 0)
            printf("ringshard %s\n", RS_VERSION);   /* as `ringshard --version` */
        return RS_CLI_GETOPT_VERSION;
    }
    bad_option(cmd, c, argc, argv, longopts);
    return RS_CLI_GETOPT_BAD;
}

int rs_cli_getopt_exit(int code)
{
    return code == RS_CLI_GETOPT_VERSION ? 0 : RS_EXIT_USAGE;
}
