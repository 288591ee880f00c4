/* ringshard/filelist.h - file lists: the inputs named in a file (--files-from
 * LIST), for jobs with more files than the kernel's argument limit (about
 * 20,000 paths) lets a command line hold; xargs would split them into
 * several runs, hence several outputs.
 *
 * A list is one path a line (LF), or with `null` one path per NUL-ended
 * entry (find -print0), relative to the current directory; "-" as the list
 * is standard input, "-" as an entry names standard input as an input.
 * The inputs are the command line's, then every list's entries, lists in
 * the order they were added.
 *
 * Each list is read into one buffer and its entries are terminated in place,
 * so 100,000 paths cost their text plus one pointer each, not a malloc each.
 * The checks are made before anything is opened for reading, and name the
 * list's line: an empty line or entry, a line ending in CR (a Windows list),
 * a NUL inside a line (a find -print0 list without null), a file that
 * cannot be opened, a directory, and a file that appears twice - by the
 * same name or another one (same st_dev and st_ino): its rows would be read
 * twice. Duplicates among command-line arguments alone are not checked.
 *
 * The steps are separate so that a caller with several processes can read
 * the lists in one (rs_file_lists_read), hand each list's text to the
 * others (rs_file_lists_adopt) and check the files in one
 * (rs_file_lists_check); a single process calls rs_file_lists_read,
 * rs_file_lists_split and rs_file_lists_check in turn. */
#ifndef RINGSHARD_FILELIST_H
#define RINGSHARD_FILELIST_H

#include <stddef.h>
#include "ringshard/error.h"

/* One list: its name as given ("-": standard input), its whole text (len
 * bytes plus a NUL) and the inputs its entries became. */
typedef struct {
    const char *name;
    char *text;
    size_t len;
    size_t first, n;   /* its entries are inputs[first .. first + n) */
} rs_file_list;

/* The lists of one run, in the order given; zero-initialised is empty.
 * The texts and the inputs stay allocated until rs_file_lists_free: the
 * entries point into them. */
typedef struct {
    rs_file_list *lists;
    size_t nlists;
    int null;              /* entries end in NUL, not LF */
    const char **inputs;   /* the command line's, then every list's entries */
    size_t ninputs;
} rs_file_lists;

/* Adds the list named name (kept, not copied). 0, or -1 with err
 * (RS_EXIT_USAGE: "-" a second time, as standard input can be read once;
 * RS_EXIT_IO: out of memory). */
int rs_file_lists_add(rs_file_lists *fl, const char *name, rs_error *err);

/* 1 if standard input ("-") is one of the lists, else 0. */
int rs_file_lists_stdin(const rs_file_lists *fl);

/* Refuses "-" among the command line's args[0..nargs) when standard input
 * is a list. 0, or -1 with err (RS_EXIT_USAGE). */
int rs_file_lists_args(const rs_file_lists *fl, char *const *args, size_t nargs, rs_error *err);

/* Reads list k whole into its text. 0, or -1 with err: RS_EXIT_IO (cannot
 * open or read it, a directory), RS_EXIT_DATA (an entry longer than
 * PATH_MAX: the list is not one), RS_EXIT_INTERRUPTED. */
int rs_file_lists_read(rs_file_lists *fl, size_t k, rs_error *err);

/* Gives list k the text another process read (len bytes, malloc'd with a
 * NUL after them; fl frees it). */
void rs_file_lists_adopt(rs_file_lists *fl, size_t k, char *text, size_t len);

/* Makes fl->inputs: args[0..nargs), then every list's entries, checking
 * what can be checked without the file system. 0, or -1 with err
 * (RS_EXIT_USAGE: an empty line or entry, a CR at a line's end, a NUL in
 * a line, '-' as an entry when standard input is a list; RS_EXIT_IO: out
 * of memory). */
int rs_file_lists_split(rs_file_lists *fl, char *const *args, size_t nargs, rs_error *err);

/* After rs_file_lists_split: every entry names a file that can be opened
 * and is not a directory, and no file comes twice (by st_dev and st_ino)
 * where the later one is a list's (the first nargs inputs, the command
 * line's, are not checked themselves: their reader reports them). 0, or -1
 * with err naming the list and its line (RS_EXIT_IO, RS_EXIT_USAGE for a
 * file given twice). */
int rs_file_lists_check(const rs_file_lists *fl, size_t nargs, rs_error *err);

/* Frees the texts, the lists and the inputs; fl is empty again. */
void rs_file_lists_free(rs_file_lists *fl);

#endif
