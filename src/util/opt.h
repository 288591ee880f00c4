/* util/opt.h - options as a table, in the manner of git's
 * parse-options: a row per option (name, letter, placeholder, help, kind,
 * where its value goes, repeat rule), rows grouped once (the program's:
 * cli/optgroups.c) and listed per command; one parser (util/opt.c) builds
 * getopt's arrays from the rows, stores the values, says what is wrong
 * (naming the option and the value) with the nearest names, prints --help
 * from the rows, and dumps them for the man pages and the completion
 * (`ringshard --dump-options`, tools/gen/gen_cli_docs.py). It prints nothing
 * of its own accord: the program says the errors (cli/ringopts.c), so the
 * parser knows neither the program's name nor its ranks. */
#ifndef RS_UTIL_OPT_H
#define RS_UTIL_OPT_H

#include <stddef.h>
#include <stdio.h>
#include "ringshard/error.h"

/* What an option's value is, and how it is stored at its place:
 *   FLAG    no value; the int there becomes `set` (|= set with RS_OPTF_OR)
 *   COUNT   no value; the int there counts the times given
 *   INT     an integer in [min, max] (strtoull base 0): int or uint64_t there
 *   SIZE    a size (512M, 2G) in [min, max]: int, size_t or uint64_t there
 *   NUMBER  a real number (checked by the row's apply)
 *   ENUM    one of `values` ("a|b|c"): the int there becomes codes[i] (i
 *           without codes)
 *   STRING  any text: the const char * there points to it
 *   LIST    given again, the texts add up: an rs_opt_list there */
typedef enum {
    RS_KIND_FLAG, RS_KIND_COUNT, RS_KIND_INT, RS_KIND_SIZE, RS_KIND_NUMBER, RS_KIND_ENUM, RS_KIND_STRING,
    RS_KIND_LIST
} rs_opt_kind;

/* Given again: refused ("--key: given twice", exit 64), or added up (LIST,
 * COUNT; a FLAG given again changes nothing). Never silently the last. */
typedef enum { RS_REPEAT_REFUSE, RS_REPEAT_ACCUMULATE } rs_opt_repeat;

enum {
    RS_OPTF_OR = 1,       /* FLAG: |= set, so that --force and --force-any add up */
    RS_OPTF_JOINED = 2,   /* --help shows it on the line of the row before (--header / --no-header) */
    RS_OPTF_DEFER = 4,    /* stored as given (STRING or LIST), checked by the command later */
    RS_OPTF_HELP = 8,     /* -h, --help: prints the help and stops */
    RS_OPTF_POSITIVE = 16, /* SIZE: any bad value is "not a positive size" */
    RS_OPTF_SIGNED = 32,   /* INT: min and max are signed (the dump says so) */
    RS_OPTF_OPERAND = 64   /* not an option: an operand's line of --help (its synopsis, "INPUT...") */
};

/* The texts a LIST option was given, in order. */
#define RS_OPT_LIST_MAX 256
typedef struct {
    const char *v[RS_OPT_LIST_MAX];
    int n;
} rs_opt_list;

typedef struct rs_opt rs_opt;
struct rs_opt {
    const char *name;        /* long name, without "--" */
    char letter;             /* short name, 0: none */
    const char *arg;         /* placeholder (N, FILE, a|b|c); NULL: takes no value */
    const char *help;        /* lines split by '\n'; a leading '\n': below the synopsis */
    rs_opt_kind kind;
    rs_opt_repeat repeat;
    size_t off, size;        /* where the value goes from the entry's base, and its size */
    unsigned long long min, max;   /* INT, SIZE: the range */
    const char *values;      /* ENUM: "a|b|c" */
    const int *codes;        /* ENUM: the value stored for each, NULL: its index */
    int set;                 /* FLAG: the value stored */
    unsigned flags;          /* RS_OPTF_* */
    unsigned given;          /* bits or'ed into the command's given mask */
    const char *synopsis;    /* --help's left column when not "-x, --name ARG" */
    /* Called after the value is stored (or instead, when kind is STRING
     * with off == RS_OPT_NOWHERE): 0, or -1 with err. */
    int (*apply)(void *base, const rs_opt *o, const char *arg, rs_error *err);
};
#define RS_OPT_NOWHERE ((size_t)-1)

/* The place of a row's value: RS_AT(type, member) gives off and size. */
#define RS_AT(type, member) .off = offsetof(type, member), .size = sizeof(((type *)0)->member)

/* A row as a command uses it: the base of its values in the command's
 * struct, and its help there when it says more than the row's (NULL). */
typedef struct {
    const rs_opt *opt;
    size_t base;
    const char *help;
    const char *synopsis;   /* --help's left column there, NULL: the row's */
} rs_opt_use;

/* A block of --help, as it prints: text (a blank line), the title line
 * "TITLE (NOTE):", the rows (descriptions from column `width`; a row may
 * be an operand's line, RS_OPTF_OPERAND), then text. The parts are kept apart, not as one text, so that
 * the man pages are made from them (rs_opt_dump_help) without reading
 * --help back. */
typedef struct {
    const char *head;         /* text before the title; NULL: none */
    int width;
    const rs_opt_use *uses;   /* ends with {NULL} */
    const char *tail;         /* text after the rows (a paragraph of prose) */
    unsigned given;           /* bits or'ed into the given mask by any of its rows */
    const char *title;        /* "Input options"; NULL: no title line */
    const char *note;         /* "(NOTE)" after the title; NULL: none */
} rs_opt_section;

/* A command's options: the text --help starts with (the usage lines,
 * "ringshard CMD [OPTIONS] ..." one a line, and the description, lines
 * ending in \n), its sections in --help order (ends with {NULL}), and where
 * the given-mask lives in its struct (RS_OPT_NOWHERE: none). */
typedef struct {
    const char *name;
    const char *usage;
    const char *description;
    const rs_opt_section *sections;
    size_t given_off;
} rs_opt_command;

/* What rs_opt_scan found. */
typedef enum {
    RS_OPT_OPERANDS,    /* every option stored; operands from *first */
    RS_OPT_HELP,        /* --help given: nothing more read */
    RS_OPT_VERSION,     /* --version given: nothing more read */
    RS_OPT_BAD_SYNTAX,  /* not an option of c, or its argument missing or extra: err says which */
    RS_OPT_BAD_VALUE    /* an option's value refused (range, kind, given twice, ...): err says why */
} rs_opt_status;

/* Parses argv[1..] of command c into the struct at args (defaults set
 * before): every option's value stored by its row, in argv order, until
 * the first operand (*first) or the first fault. Prints nothing; err
 * (code RS_EXIT_USAGE, or what a row's apply set) holds the message of a
 * BAD_* status. getopt's global state (optind) is reset first. */
rs_opt_status rs_opt_scan(const rs_opt_command *c, void *args, int argc, char **argv, int *first, rs_error *err);

/* Prints command c's --help to f. */
void rs_opt_print_help(const rs_opt_command *c, FILE *f);

/* Writes every option of command c as one line of TSV to f:
 * command, long, short, placeholder, kind, min, max, values, repeat,
 * checked (parse: as it is read; run: once all are in, RS_OPTF_DEFER),
 * help (a newline as the two bytes \n, a backslash as two, a tab as a
 * blank). */
void rs_opt_dump(const rs_opt_command *c, FILE *f);

/* Writes the layout of command c's --help as TSV lines to f, in the
 * order --help prints it (tabs in texts as blanks, newlines as the two
 * bytes \n, a backslash as two): command, then one of
 *   usage        LINE              a usage line (no "Usage:")
 *   description  TEXT              the description, below the usage
 *   section      TITLE  NOTE       a title line ("-": no note)
 *   item         SYNOPSIS  LONG  HELP  a line of the options: the left
 *                column as --help shows it, the row's --long ("-": an
 *                operand), its help there
 *   text         TEXT              prose between the rows
 * (`ringshard --dump-help`, from which tools/gen/gen_cli_docs.py writes the
 * man pages; rs_opt_dump's rows say what each option takes). */
void rs_opt_dump_help(const rs_opt_command *c, FILE *f);

/* The number parsers for the checks made after parsing (ring options,
 * whose defaults follow from the scheme), with the row's range. */
int rs_opt_check_uint(const rs_opt *o, const char *arg, unsigned long long *out, rs_error *err);

#endif
