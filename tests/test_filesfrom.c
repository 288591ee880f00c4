/* --files-from LIST and --null, and the progress line over many inputs: the real command on real files. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "support.h"

TestSuite(filesfrom, .init = test_dir_setup, .fini = test_dir_teardown, .timeout = 900);

typedef cmd_result res;
#define sh sh_in_test_dir
#define OK SH_OK

/* Two output directories the same, byte for byte (manifests included). */
#define SAME(a, b) "diff -r " a " " b

/* Three small inputs with one header, a.csv b.csv c.csv, and c.gz (c.csv
 * gzipped). */
static void make_inputs(void)
{
    OK("{ echo id,v; seq 1 400 | sed 's/.*/a&,&/'; } > a.csv && "
       "{ echo id,v; seq 1 300 | sed 's/.*/b&,&/'; } > b.csv && "
       "{ echo id,v; seq 1 200 | sed 's/.*/c&,&/'; } > c.csv && gzip -c c.csv > c.gz");
}

/* 5,000 files of a few bytes each, five times the descriptor limit,
 * bucketed through a list under `ulimit -n 1024`: the inputs are opened one
 * after another (listing, reading, the change checks), never all at once.
 * The buckets are byte-identical to those of the same rows as one file; the
 * NUL-separated list gives the same output as the line list. Plain output:
 * one gzip member per input and bucket would make this slow, and
 * compression is not what is tested. More files would check nothing
 * more, and creating and deleting them takes minutes on a busy disk. */
#define MANY 5000

Test(filesfrom, five_thousand_files_under_ulimit_n_1024)
{
    OK("mkdir many && python3 -c '\n"
       "import os\n"
       "cat = open(\"all.csv\", \"w\"); cat.write(\"id,v\\n\")\n"
       "lst = open(\"list\", \"w\"); nul = open(\"list0\", \"w\")\n"
       "for i in range(%d):\n"
       "    row = \"k%%d,%%d\\n\" %% (i * 7919 %% 50000, i)\n"
       "    p = \"many/f%%05d.csv\" %% i\n"
       "    open(p, \"w\").write(\"id,v\\n\" + row)\n"
       "    cat.write(row); lst.write(p + \"\\n\"); nul.write(p + \"\\0\")\n"
       "'", MANY);
    OK("\"$RS\" bucket --quiet --nodes 16 --compress none -o ref all.csv");
    OK("sh -c 'ulimit -n 1024 && exec \"$RS\" bucket --quiet --nodes 16 --compress none -o lst --files-from list' && "
       "diff -r -x manifest.json ref lst");
    OK("sh -c 'ulimit -n 1024 && exec \"$RS\" bucket --quiet --nodes 16 --compress none -o nul --null "
       "--files-from list0' && " SAME("lst", "nul"));
    /* every input is in the manifest, in list order */
    res r = sh("grep -c '\"path\": \"many/f' lst/manifest.json; grep '\"path\"' lst/manifest.json | sed -n '1p;$p'");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    char want[128];
    snprintf(want, sizeof want, "%d\n      \"path\": \"many/f00000.csv\",\n      \"path\": \"many/f%05d.csv\",\n", MANY,
             MANY - 1);
    cr_assert_str_eq(r.out, want, "%s", r.out);
    cmd_result_free(&r);
}

/* The inputs are the command line's, then each list's, lists in the order
 * of their options: the output (manifest included) is that of the same
 * paths on the command line in that order, gzip members and all. */
Test(filesfrom, command_line_first_then_the_lists_in_order)
{
    make_inputs();
    OK("\"$RS\" bucket --quiet --nodes 8 -o ref a.csv c.gz b.csv");
    OK("printf 'c.gz\\n' > l1 && printf 'b.csv' > l2 && "  /* the last line may lack its LF */
       "\"$RS\" bucket --quiet --nodes 8 -o got a.csv --files-from l1 --files-from l2 && " SAME("ref", "got"));
    /* a list on standard input; --null; a list that names stdin ("-") */
    OK("printf 'c.gz\\nb.csv\\n' | \"$RS\" bucket --quiet --nodes 8 -o in1 --files-from - a.csv && "
       SAME("ref", "in1"));
    OK("printf 'a.csv\\0c.gz\\0b.csv\\0' > l0 && \"$RS\" bucket --quiet --nodes 8 -o in2 --null --files-from l0 && "
       SAME("ref", "in2"));
    OK("printf 'a.csv\\nc.gz\\n-\\n' > l3 && \"$RS\" bucket --quiet --nodes 8 -o in3 --files-from l3 < b.csv && "
       "diff -r -x manifest.json ref in3");
}

/* Every command that reads inputs takes lists: dedup, plan with data and
 * stats give what they give for the same paths on the command line. */
Test(filesfrom, dedup_plan_and_stats_take_lists)
{
    make_inputs();
    OK("printf 'a.csv\\nb.csv\\n' > l && "
       "\"$RS\" dedup --quiet --nodes 8 -o d1 a.csv b.csv a.csv && "
       "\"$RS\" dedup --quiet --nodes 8 -o d2 c.gz --files-from l && "
       "\"$RS\" dedup --quiet --nodes 8 -o d3 c.gz a.csv b.csv && " SAME("d2", "d3"));
    /* (the report less its timings and the output's name) */
    OK("\"$RS\" plan --old-nodes 8 --new-nodes 9 --emit p1 c.gz a.csv b.csv 2>/dev/null | "
       "grep -v -e method -e emitted > p1.out && "
       "\"$RS\" plan --old-nodes 8 --new-nodes 9 --emit p2 c.gz --files-from l 2>/dev/null | "
       "grep -v -e method -e emitted > p2.out && " SAME("p1", "p2") " && cmp p1.out p2.out && "
       "grep -q 'data         .* keys' p1.out");
    OK("\"$RS\" stats --quiet --tsv --nodes 8 c.gz a.csv b.csv > s1 && "
       "\"$RS\" stats --quiet --tsv --nodes 8 c.gz --files-from l > s2 && cmp s1 s2 && test -s s1");
    /* the commands reading a directory's files refuse lists */
    OK("\"$RS\" bucket --quiet --nodes 8 -o bk a.csv");
    res r = sh("\"$RS\" dedup --quiet -o dd --buckets bk --files-from l; echo \"rc=$?\"; "
               "\"$RS\" plan --quiet --from-buckets bk --new-nodes 9 --files-from l; echo \"rc=$?\"; "
               "\"$RS\" stats --quiet --files-from l bk; echo \"rc=$?\"");
    cr_assert_str_eq(r.out, "rc=64\nrc=64\nrc=64\n", "%s", r.err);
    cr_assert(strstr(r.err, "ringshard dedup: --buckets takes no INPUT nor --files-from (the bucket directory is "
                            "the input)\n"), "%s", r.err);
    cr_assert(strstr(r.err, "ringshard plan: --from-buckets reads the bucket files: no INPUT arguments nor "
                            "--files-from\n"), "%s", r.err);
    cr_assert(strstr(r.err, "ringshard stats: input options do not apply to a bucket directory (bk)\n"), "%s",
              r.err);
    cmd_result_free(&r);
}

typedef struct {
    const char *setup;  /* shell commands making the list(s) */
    const char *args;   /* the run's input arguments */
    int rc;
    const char *msg;    /* stderr, exactly */
} list_fault;

/* Each fault of a list: its exit code and message (naming the list and its
 * line), and nothing published. */
Test(filesfrom, each_list_fault_names_the_list_and_its_line)
{
    make_inputs();
    static const list_fault faults[] = {
        {"printf 'a.csv\\n\\nb.csv\\n' > l", "--files-from l", 64,
         "--files-from l: line 2: empty (every line must name a file)"},
        {"printf 'a.csv\\0\\0b.csv\\0' > l", "--null --files-from l", 64,
         "--files-from l: entry 2: empty (every entry must name a file)"},
        {"printf 'a.csv\\r\\nb.csv\\r\\n' > l", "--files-from l", 64,
         "--files-from l: line 1: ends in a carriage return (a list with Windows line ends? convert it, e.g. with "
         "tr -d '\\r')"},
        {"printf 'a.csv\\0b.csv\\0' > l", "--files-from l", 64,
         "--files-from l: line 1: holds a NUL byte (a NUL-separated list, as find -print0 writes? add --null)"},
        {"printf 'a.csv\\nnope.csv\\n' > l", "--files-from l", 1,
         "--files-from l: line 2: nope.csv: cannot open: No such file or directory"},
        {"printf 'a.csv\\nb.csv\\n' > l", "--null --files-from l", 1,
         "--files-from l: entry 1: a.csv\nb.csv\n: cannot open: No such file or directory (a list of lines? --null "
         "expects NUL-separated entries)"},
        {"mkdir sub && printf 'a.csv\\nsub\\n' > l", "--files-from l", 1,
         "--files-from l: line 2: sub: cannot read: is a directory"},
        {"printf 'b.csv\\na.csv\\n' > l", "a.csv --files-from l", 64,
         "--files-from l: line 2: a.csv is listed twice (also on the command line): its rows would be read twice"},
        {"printf 'a.csv\\nb.csv\\n./a.csv\\n' > l", "--files-from l", 64,
         "--files-from l: line 3: ./a.csv is the same file as a.csv (on line 1): its rows would be read twice"},
        {"ln a.csv hard.csv && printf 'b.csv\\n' > l1 && printf 'c.gz\\nhard.csv\\n' > l2",
         "--files-from l1 a.csv --files-from l2", 64,
         "--files-from l2: line 2: hard.csv is the same file as a.csv (on the command line): its rows would be "
         "read twice"},
        {"printf 'a.csv\\n' > l1 && printf 'c.gz\\na.csv\\n' > l2", "--files-from l1 --files-from l2", 64,
         "--files-from l2: line 2: a.csv is listed twice (also on line 1 of --files-from l1): its rows would be "
         "read twice"},
        {"printf 'a.csv\\n-\\n' > l", "--files-from l - < b.csv", 64,
         "--files-from l: line 2: - is listed twice (also on the command line): its rows would be read twice"},
        {"printf 'a.csv\\n-\\n' > l", "--files-from - < l", 64,
         "--files-from -: line 2: '-' names standard input, which is a file list here (--files-from -)"},
        {"printf 'a.csv\\n' > l1 && printf 'b.csv\\n-\\n' > l2", "--files-from - --files-from l2 < l1", 64,
         "--files-from l2: line 2: '-' names standard input, which is a file list here (--files-from -)"},
        {"printf 'a.csv\\n' > l", "--files-from - - < l", 64,
         "'-' on the command line: standard input is the file list (--files-from -)"},
        {"printf 'a.csv\\n' > l", "--files-from - --files-from - < l", 64,
         "--files-from -: given twice (standard input can be read once)"},
        {": > l", "--files-from l", 64, "no input files (the --files-from lists are empty)"},
        {"true", "--files-from nolist", 1, "--files-from nolist: cannot open: No such file or directory"},
        {"mkdir ldir", "--files-from ldir", 1, "--files-from ldir: cannot read: is a directory"},
    };
    for (size_t i = 0; i < sizeof faults / sizeof *faults; i++) {
        const list_fault *f = &faults[i];
        res r = sh("rm -rf l l1 l2 sub ldir hard.csv && %s && \"$RS\" bucket --quiet --nodes 8 -o out %s", f->setup,
                   f->args);
        char want[2048];
        snprintf(want, sizeof want, "ringshard bucket: %s\n", f->msg);
        cr_expect_eq(r.rc, f->rc, "fault %zu: exit %d, not %d: %s", i, r.rc, f->rc, r.err);
        cr_expect_str_eq(r.err, want, "fault %zu", i);
        cmd_result_free(&r);
        r = sh("ls -a | grep -c -e '^out' -e ringshard-tmp || true");
        cr_expect_str_eq(r.out, "0\n", "fault %zu: nothing published, no temporary", i);
        cmd_result_free(&r);
    }
}

/* The text of the progress line's final refresh in what a terminal got:
 * the refresh is "\r" TEXT "\033[K", the final one is the last (the summary
 * after it has no ESC [K). A malloc'd copy, or NULL if there is none. */
static char *final_refresh(const char *tty)
{
    const char *end = NULL;
    for (const char *p = strstr(tty, "\033[K"); p; p = strstr(p + 1, "\033[K"))
        end = p;
    if (!end)
        return NULL;
    const char *start = end;
    while (start > tty && start[-1] != '\r')
        start--;
    return strndup(start, (size_t)(end - start));
}

/* The progress line on a terminal (script(1) gives the run one) counts the
 * files done of all of them and the bytes read of all inputs' bytes: the
 * final refresh says all of them, 100%. With a pipe among the inputs its
 * size is not known: the total is "?" and there is no percentage. */
Test(filesfrom, progress_counts_files_and_bytes_of_all_inputs)
{
    make_inputs();
    OK("printf 'c.gz\\nb.csv\\n' > l");
    res r = sh("wc -c < a.csv; wc -c < c.gz; wc -c < b.csv");
    long sa = 0, sc = 0, sb = 0;
    cr_assert_eq(sscanf(r.out, "%ld %ld %ld", &sa, &sc, &sb), 3, "%s", r.out);
    cmd_result_free(&r);
    char want[256];
    snprintf(want, sizeof want, "100.0%%  files 3/3  read %.1f kB of %.1f kB  900 rows  0.0 MB  ",
             (sa + sb + sc) / 1e3, (sa + sb + sc) / 1e3);
    r = sh("script -qec '\"$RS\" bucket --nodes 8 -o tty a.csv --files-from l' /dev/null");
    cr_assert_eq(r.rc, 0, "%s %s", r.out, r.err);
    char *line = final_refresh(r.out);
    cr_assert(line, "no progress line: %s", r.out);
    cr_assert(!strncmp(line, want, strlen(want)), "final refresh '%s', expected it to start with '%s'", line, want);
    cr_assert(strstr(line, " M rows/s ") && !strstr(line, "ETA"), "%s", line);
    free(line);
    cmd_result_free(&r);

    /* standard input is a pipe: 2 files, bytes read of "?" */
    snprintf(want, sizeof want, "files 2/2  read %.1f kB of ?  700 rows  0.0 MB  ", (sa + sb) / 1e3);
    r = sh("script -qec 'cat b.csv | \"$RS\" bucket --nodes 8 -o pipe a.csv -' /dev/null");
    cr_assert_eq(r.rc, 0, "%s %s", r.out, r.err);
    line = final_refresh(r.out);
    cr_assert(line, "no progress line: %s", r.out);
    cr_assert(!strncmp(line, want, strlen(want)), "final refresh '%s', expected it to start with '%s'", line, want);
    free(line);
    cmd_result_free(&r);
}
