/* The one option parser of the command line (util/opt.h): getopt_long's
 * arrays built from a command's rows, without getopt's own messages
 * (opterr = 0), so that a bad option is said once, by the program, with
 * the nearest option names by edit distance; the values stored and
 * checked by their rows; --help printed and the options dumped from the
 * same rows. */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/numparse.h"
#include "util/opt.h"

#define RS_OPT_MAX_ENTRIES 128
#define RS_OPT_VAL0 1000   /* getopt's val for entry i: RS_OPT_VAL0 + i */
enum { GETOPT_BAD = -2, GETOPT_VERSION = -3 };

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
        if (rs_name_similar(name, o->name, &d) && d < best)
            best = d;
    if (best == (size_t)-1)
        return;
    size_t len = strlen(msg);
    len += (size_t)snprintf(msg + len, cap - len, " (did you mean ");
    for (const struct option *o = longopts; o->name && len < cap; o++)
        if (rs_name_similar(name, o->name, &d) && d == best)
            len += (size_t)snprintf(msg + len, cap - len, "%s'--%s'", n++ ? " or " : "", o->name);
    if (len < cap)
        snprintf(msg + len, cap - len, "?)");
}

/* The long options the argument starting with name abbreviates, counted. */
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

/* The message for getopt's '?' or ':' on argv[optind - 1], in err. */
static void bad_option(int code, int argc, char **argv, const struct option *longopts, rs_error *err)
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
    rs_error_set(err, RS_EXIT_USAGE, "%s", msg);
}

/* A command's rows in one array, with getopt's arrays built from them. */
typedef struct {
    const rs_opt_use *use[RS_OPT_MAX_ENTRIES];
    unsigned section_given[RS_OPT_MAX_ENTRIES];
    int given[RS_OPT_MAX_ENTRIES];
    size_t n;
    struct option longopts[RS_OPT_MAX_ENTRIES + 1];
    char shortopts[2 * RS_OPT_MAX_ENTRIES + 2];
} table;

static void build(const rs_opt_command *c, table *t)
{
    size_t k = 0;
    t->n = 0;
    t->shortopts[k++] = ':';   /* a missing argument returns ':' */
    for (const rs_opt_section *s = c->sections; s->uses; s++)
        for (const rs_opt_use *u = s->uses; u->opt && t->n < RS_OPT_MAX_ENTRIES; u++) {
            const rs_opt *o = u->opt;
            if (o->flags & RS_OPTF_OPERAND)
                continue;
            t->longopts[t->n] = (struct option){o->name, o->arg ? required_argument : no_argument, NULL,
                                                RS_OPT_VAL0 + (int)t->n};
            if (o->letter) {
                t->shortopts[k++] = o->letter;
                if (o->arg)
                    t->shortopts[k++] = ':';
            }
            t->given[t->n] = 0;
            t->section_given[t->n] = s->given;
            t->use[t->n++] = u;
        }
    t->longopts[t->n] = (struct option){0, 0, 0, 0};
    t->shortopts[k] = '\0';
}

/* The entry getopt's return c stands for, or -1. */
static int entry_of(const table *t, int c)
{
    if (c >= RS_OPT_VAL0 && c < RS_OPT_VAL0 + (int)t->n)
        return c - RS_OPT_VAL0;
    for (size_t i = 0; i < t->n; i++)
        if (t->use[i]->opt->letter && t->use[i]->opt->letter == c)
            return (int)i;
    return -1;
}

/* Where entry i's value goes in args, or NULL when nowhere. */
static void *place(const table *t, size_t i, void *args)
{
    const rs_opt *o = t->use[i]->opt;
    return o->off == RS_OPT_NOWHERE ? NULL : (char *)args + t->use[i]->base + o->off;
}

static void store_int(void *p, size_t size, long long v)
{
    if (size == sizeof(int))
        *(int *)p = (int)v;
    else
        *(uint64_t *)p = (uint64_t)v;
}

/* "32M" for a size that is a whole number of MiB (else KiB, else bytes). */
static const char *size_text(unsigned long long v, char *buf, size_t cap)
{
    static const char units[] = "TGMK";
    for (int u = 0; u < 4; u++) {
        unsigned long long m = 1ULL << (10 * (4 - u));
        if (v >= m && v % m == 0) {
            snprintf(buf, cap, "%llu%c", v / m, units[u]);
            return buf;
        }
    }
    snprintf(buf, cap, "%llu", v);
    return buf;
}

/* An ENUM value's index in o->values, or -1. */
static int enum_index(const rs_opt *o, const char *arg)
{
    int i = 0;
    for (const char *v = o->values; *v; i++) {
        size_t n = strcspn(v, "|");
        if (strlen(arg) == n && strncmp(v, arg, n) == 0)
            return i;
        v += n + (v[n] == '|');
    }
    return -1;
}

/* "--x: expected a, b or c, not 'v'" for a value of no ENUM's values. */
static int enum_error(const char *what, const rs_opt *o, const char *arg, rs_error *err)
{
    char list[256];
    size_t len = 0;
    int count = 0, i = 0;
    for (const char *v = o->values; *v; v += strcspn(v, "|") + (v[strcspn(v, "|")] == '|'))
        count++;
    for (const char *v = o->values; *v && len < sizeof list; i++) {
        size_t n = strcspn(v, "|");
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%.*s", i == 0 ? "" : i == count - 1 ? " or " : ", ",
                                (int)n, v);
        v += n + (v[n] == '|');
    }
    return rs_error_set(err, RS_EXIT_USAGE, "%s: expected %s, not '%s'", what, list, arg);
}

/* Parses arg for entry o as its kind wants and stores it at p (NULL:
 * nowhere). what: the option as typed ("-j", "--threads"). 0 or -1. */
static int store(const rs_opt *o, const char *what, const char *arg, void *p, rs_error *err)
{
    unsigned long long v = 0;
    char a[32], b[32];
    if (o->flags & RS_OPTF_DEFER && o->kind != RS_KIND_LIST) {
        if (p)
            *(const char **)p = arg;
        return 0;
    }
    switch (o->kind) {
    case RS_KIND_FLAG:
        if (p)
            *(int *)p = o->flags & RS_OPTF_OR ? *(int *)p | o->set : o->set;
        return 0;
    case RS_KIND_COUNT:
        if (p)
            ++*(int *)p;
        return 0;
    case RS_KIND_INT:
        if (o->flags & RS_OPTF_SIGNED)
            return 0;   /* the row's apply parses it */
        if (rs_parse_uint(what, arg, o->min, o->max, &v, err) != 0)
            return -1;
        break;
    case RS_KIND_SIZE:
        if ((o->flags & RS_OPTF_POSITIVE) &&
            (rs_parse_size(what, arg, &v, err) != 0 || v == 0 || v < o->min || v > o->max))
            return rs_error_set(err, RS_EXIT_USAGE, "%s: '%s' is not a positive size", what, arg);
        if (rs_parse_size(what, arg, &v, err) != 0)
            return -1;
        if (v < o->min)
            return rs_error_set(err, RS_EXIT_USAGE, "%s: at least %s", what, size_text(o->min, a, sizeof a));
        if (v > o->max)
            return rs_error_set(err, RS_EXIT_USAGE, "%s: at most %s", what, size_text(o->max, b, sizeof b));
        break;
    case RS_KIND_ENUM: {
        int i = enum_index(o, arg);
        if (i < 0)
            return enum_error(what, o, arg, err);
        if (p)
            *(int *)p = o->codes ? o->codes[i] : i;
        return 0;
    }
    case RS_KIND_NUMBER:
    case RS_KIND_STRING:
        if (p)
            *(const char **)p = arg;
        return 0;
    case RS_KIND_LIST: {
        rs_opt_list *l = p;
        if (!l)
            return 0;
        if (l->n >= RS_OPT_LIST_MAX)
            return rs_error_set(err, RS_EXIT_USAGE, "%s: at most %d times (use a comma-separated list)", what,
                                RS_OPT_LIST_MAX);
        l->v[l->n++] = arg;
        return 0;
    }
    }
    if (p)
        store_int(p, o->size, (long long)v);
    return 0;
}

/* Refuses entry i given again (by its name or another row with the same
 * place) under RS_REPEAT_REFUSE, and two flags that set one place to
 * different values. 0 or -1 with err. */
static int repeat_check(const table *t, size_t i, void *args, rs_error *err)
{
    const rs_opt *o = t->use[i]->opt;
    void *p = place(t, i, args);
    for (size_t j = 0; j < t->n; j++) {
        const rs_opt *q = t->use[j]->opt;
        if (!t->given[j] || (j != i && (!p || place(t, j, args) != p)))
            continue;
        if (o->kind == RS_KIND_FLAG && q->kind == RS_KIND_FLAG) {
            if (!(o->flags & RS_OPTF_OR) && q->set != o->set)
                return rs_error_set(err, RS_EXIT_USAGE, "--%s and --%s exclude each other", q->name, o->name);
            continue;
        }
        if (o->repeat == RS_REPEAT_ACCUMULATE || o->kind == RS_KIND_COUNT || o->kind == RS_KIND_FLAG)
            continue;
        if (j == i)
            return rs_error_set(err, RS_EXIT_USAGE, "--%s: given twice", o->name);
        return rs_error_set(err, RS_EXIT_USAGE, "--%s: given twice (once as --%s)", o->name, q->name);
    }
    return 0;
}

/* getopt_long over the table, quietly: GETOPT_BAD with err saying what
 * is wrong, GETOPT_VERSION for --version (every command takes it, as
 * `ringshard --version`, without a row of its own). */
static int next_option(int argc, char **argv, const table *t, rs_error *err)
{
    opterr = 0;
    int c = getopt_long(argc, argv, t->shortopts, t->longopts, NULL);
    if (c != '?' && c != ':')
        return c;
    if (c == '?' && optopt == 0 && optind > 0 && optind - 1 < argc && strcmp(argv[optind - 1], "--version") == 0)
        return GETOPT_VERSION;
    bad_option(c, argc, argv, t->longopts, err);
    return GETOPT_BAD;
}

rs_opt_status rs_opt_scan(const rs_opt_command *c, void *args, int argc, char **argv, int *first, rs_error *err)
{
    table t;
    build(c, &t);
    int ch;
    optind = 1;
    while ((ch = next_option(argc, argv, &t, err)) != -1) {
        if (ch == GETOPT_VERSION)
            return RS_OPT_VERSION;
        int i = entry_of(&t, ch);
        if (ch == GETOPT_BAD)
            return RS_OPT_BAD_SYNTAX;
        if (i < 0) {
            rs_error_set(err, RS_EXIT_USAGE, "invalid option '%s'", argv[optind - 1]);
            return RS_OPT_BAD_SYNTAX;
        }
        const rs_opt *o = t.use[i]->opt;
        if (o->flags & RS_OPTF_HELP)
            return RS_OPT_HELP;
        char what[80];
        if (ch == o->letter)
            snprintf(what, sizeof what, "-%c", o->letter);
        else
            snprintf(what, sizeof what, "--%s", o->name);
        void *p = place(&t, (size_t)i, args);
        if (repeat_check(&t, (size_t)i, args, err) != 0 || store(o, what, optarg, p, err) != 0 ||
            (o->apply && o->apply((char *)args + t.use[i]->base, o, optarg, err) != 0))
            return RS_OPT_BAD_VALUE;
        t.given[i]++;
        if (c->given_off != RS_OPT_NOWHERE)
            *(unsigned *)((char *)args + c->given_off) |= o->given | t.section_given[i];
    }
    *first = optind;
    return RS_OPT_OPERANDS;
}

/* "-j, --threads N", "--key COL", "--quiet": a row's left column. */
static const char *synopsis(const rs_opt *o, char *buf, size_t cap)
{
    if (o->synopsis)
        return o->synopsis;
    size_t n = 0;
    if (o->letter)
        n += (size_t)snprintf(buf, cap, "-%c, ", o->letter);
    snprintf(buf + n, cap - n, "--%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
    return buf;
}

/* One line of the options: the left column syn, then help from column
 * width (below syn when help starts with a newline, or syn is too wide). */
static void print_item(FILE *f, int width, const char *syn, const char *help)
{
    int len = 2 + (int)strlen(syn);
    fprintf(f, "  %s", syn);
    if (*help == '\n')
        fprintf(f, "\n%*s", width, ""), help++;
    else if (len + 1 <= width)
        fprintf(f, "%*s", width - len, "");
    else
        fputs("  ", f);
    for (const char *l = help; *l;) {
        size_t n = strcspn(l, "\n");
        fprintf(f, "%.*s\n", (int)n, l);
        l += n;
        if (*l && *++l)
            fprintf(f, "%*s", width, "");
    }
}

void rs_opt_print_help(const rs_opt_command *c, FILE *f)
{
    for (const char *l = c->usage; l && *l;) {
        size_t n = strcspn(l, "\n");
        fprintf(f, "%s%.*s\n", l == c->usage ? "Usage: " : "       ", (int)n, l);
        l += n + (l[n] == '\n');
    }
    if (c->description)
        fputs(c->description, f);
    for (const rs_opt_section *s = c->sections; s->uses; s++) {
        if (s->head)
            fputs(s->head, f);
        if (s->title)
            fprintf(f, "%s%s%s%s:\n", s->title, s->note ? " (" : "", s->note ? s->note : "", s->note ? ")" : "");
        for (const rs_opt_use *u = s->uses; u->opt; u++) {
            if (u->opt->flags & RS_OPTF_JOINED)
                continue;
            char buf[160];
            print_item(f, s->width, u->synopsis ? u->synopsis : synopsis(u->opt, buf, sizeof buf),
                       u->help ? u->help : u->opt->help);
        }
        if (s->tail)
            fputs(s->tail, f);
    }
}

/* text as one TSV field: newlines as the two bytes \n, backslashes
 * doubled (a help may show "\n"), tabs as blanks; with trim, without its
 * leading and trailing newlines. */
static void put_field(FILE *f, const char *text, int trim)
{
    size_t n = strlen(text);
    while (trim && *text == '\n')
        text++, n--;
    while (trim && n && text[n - 1] == '\n')
        n--;
    for (size_t i = 0; i < n; i++)
        fputs(text[i] == '\n' ? "\\n" : text[i] == '\\' ? "\\\\" : text[i] == '\t' ? " " : (char[2]){text[i], 0}, f);
}

/* A "text" line for prose, if there is any (not only blank lines). */
static void dump_text(const char *cmd, const char *text, FILE *f)
{
    if (!text || !text[strspn(text, "\n")])
        return;
    fprintf(f, "%s\ttext\t", cmd);
    put_field(f, text, 1);
    fputc('\n', f);
}

void rs_opt_dump_help(const rs_opt_command *c, FILE *f)
{
    for (const char *l = c->usage; l && *l;) {
        size_t n = strcspn(l, "\n");
        fprintf(f, "%s\tusage\t%.*s\n", c->name, (int)n, l);
        l += n + (l[n] == '\n');
    }
    if (c->description) {
        fprintf(f, "%s\tdescription\t", c->name);
        put_field(f, c->description, 1);
        fputc('\n', f);
    }
    for (const rs_opt_section *s = c->sections; s->uses; s++) {
        dump_text(c->name, s->head, f);
        if (s->title)
            fprintf(f, "%s\tsection\t%s\t", c->name, s->title), put_field(f, s->note ? s->note : "-", 1),
                fputc('\n', f);
        for (const rs_opt_use *u = s->uses; u->opt; u++) {
            if (u->opt->flags & RS_OPTF_JOINED)
                continue;
            char buf[160];
            const char *help = u->help ? u->help : u->opt->help;
            fprintf(f, "%s\titem\t%s\t%s%s\t", c->name, u->synopsis ? u->synopsis : synopsis(u->opt, buf, sizeof buf),
                    u->opt->flags & RS_OPTF_OPERAND ? "-" : "--", u->opt->flags & RS_OPTF_OPERAND ? "" : u->opt->name);
            put_field(f, help, 1);
            fputc('\n', f);
        }
        dump_text(c->name, s->tail, f);
    }
}

static const char *const kind_names[] = {"flag", "count", "int", "size", "number", "enum", "string", "list"};

/* 1 if row o comes in c before use u (plan's --down, shown twice). */
static int listed_before(const rs_opt_command *c, const rs_opt_use *u)
{
    for (const rs_opt_section *s = c->sections; s->uses; s++)
        for (const rs_opt_use *v = s->uses; v->opt; v++) {
            if (v == u)
                return 0;
            if (v->opt == u->opt)
                return 1;
        }
    return 0;
}

void rs_opt_dump(const rs_opt_command *c, FILE *f)
{
    for (const rs_opt_section *s = c->sections; s->uses; s++)
        for (const rs_opt_use *u = s->uses; u->opt; u++) {
            const rs_opt *o = u->opt;
            if (listed_before(c, u) || (o->flags & RS_OPTF_OPERAND))
                continue;
            const char *help = u->help ? u->help : o->help;
            fprintf(f, "%s\t--%s\t%s%c\t%s\t%s\t", c->name, o->name, o->letter ? "-" : "", o->letter ? o->letter : '-',
                    o->arg ? o->arg : "-", o->flags & RS_OPTF_HELP ? "help" : kind_names[o->kind]);
            if (o->flags & RS_OPTF_SIGNED)
                fprintf(f, "%lld\t%lld\t", (long long)o->min, (long long)o->max);
            else if (o->kind == RS_KIND_INT || o->kind == RS_KIND_SIZE)
                fprintf(f, "%llu\t%llu\t", o->min, o->max);
            else
                fputs("-\t-\t", f);
            fprintf(f, "%s\t%s\t%s\t", o->values ? o->values : "-",
                    o->kind == RS_KIND_LIST || o->kind == RS_KIND_COUNT || o->kind == RS_KIND_FLAG ? "accumulate"
                                                                                                 : "refuse",
                    o->flags & RS_OPTF_DEFER ? "run" : "parse");
            put_field(f, *help == '\n' ? help + 1 : help, 0);
            fputc('\n', f);
        }
}

int rs_opt_check_uint(const rs_opt *o, const char *arg, unsigned long long *out, rs_error *err)
{
    char what[80];
    snprintf(what, sizeof what, "--%s", o->name);
    return rs_parse_uint(what, arg, o->min, o->max, out, err);
}
