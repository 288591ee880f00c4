/* Atomic output directories (the dataset layer's rs_outdir): begin and
 * commit, --force, an output that appears meanwhile, an abort that keeps the
 * previous output, stale temporaries of dead processes. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "ringshard/dataset.h"
#include "support.h"

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* Number of entries of dir whose name contains `part`. */
static int count_entries(const char *dir, const char *part)
{
    DIR *d = opendir(dir);
    cr_assert(d != NULL, "%s: %s", dir, strerror(errno));
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") && strstr(de->d_name, part))
            n++;
    closedir(d);
    return n;
}

/* ---- output directories ---- */

Test(outdir, begin_commit_publishes)
{
    char *dir = make_tmpdir();
    char *final = path_dup(dir, "out");
    rs_outdir od;
    rs_error err = {0};
    cr_assert_eq(rs_outdir_begin(&od, final, 0, &err), 0, "%s", err.msg);
    cr_assert(strncmp(od.tmp, final, strlen(final)) == 0);
    const char *suffix = od.tmp + strlen(final);
    char want[64];
    int n = snprintf(want, sizeof want, ".ringshard-tmp.%ld.", (long)getpid());
    cr_assert(strncmp(suffix, want, (size_t)n) == 0, "%s", od.tmp);
    cr_assert_eq(strlen(suffix + n), 8);
    cr_assert_eq(strspn(suffix + n, "0123456789abcdef"), 8);
    struct stat st;
    cr_assert_eq(stat(od.tmp, &st), 0);
    cr_assert(S_ISDIR(st.st_mode));
    cr_assert(!exists(final), "nothing published before commit");

    char *p = rs_outdir_path(&od, "a.csv");
    write_text(p, "x,y\n");
    free(p);
    p = rs_outdir_path(&od, "sub");
    mkdir(p, 0755);
    free(p);
    p = rs_outdir_path(&od, "sub/b.csv");
    write_text(p, "z\n");
    free(p);
    cr_assert_eq(rs_outdir_commit(&od, &err), 0, "%s", err.msg);
    cr_assert_null(od.tmp);
    cr_assert_null(od.final);
    rs_outdir_abort(&od);   /* harmless after commit */

    char *a = path_dup(final, "a.csv"), *b = path_dup(final, "sub/b.csv");
    char *ta = slurp(a, NULL), *tb = slurp(b, NULL);
    cr_assert_str_eq(ta, "x,y\n");
    cr_assert_str_eq(tb, "z\n");
    cr_assert_eq(count_entries(dir, ".ringshard-"), 0);
    free(ta);
    free(tb);
    free(a);
    free(b);
    free(final);
    remove_tree(dir);
    free(dir);
}

Test(outdir, trailing_slash)
{
    char *dir = make_tmpdir();
    char *final = path_dup(dir, "out//");
    rs_outdir od;
    rs_error err = {0};
    cr_assert_eq(rs_outdir_begin(&od, final, 0, &err), 0, "%s", err.msg);
    char *want = path_dup(dir, "out");
    cr_assert_str_eq(od.final, want);
    cr_assert_eq(rs_outdir_commit(&od, &err), 0, "%s", err.msg);
    cr_assert(exists(want));
    free(want);
    free(final);
    remove_tree(dir);
    free(dir);
}

static char *make_previous(const char *dir)
{
    char *final = path_dup(dir, "out");
    cr_assert_eq(mkdir(final, 0755), 0);
    char *p = path_dup(final, "old.txt");
    write_text(p, "previous\n");
    free(p);
    p = path_dup(final, "manifest.json");   /* a ringshard output: --force may replace it */
    write_text(p, "{\"schema\": 1, \"kind\": \"buckets\", \"tool\": {\"name\": \"ringshard\"}}\n");
    free(p);
    return final;
}

static void assert_previous(const char *final)
{
    char *p = path_dup(final, "old.txt");
    char *t = slurp(p, NULL);
    cr_assert(t != NULL && strcmp(t, "previous\n") == 0, "previous output intact");
    free(t);
    free(p);
}

Test(outdir, exists_without_force)
{
    char *dir = make_tmpdir();
    char *final = make_previous(dir);
    rs_outdir od;
    rs_error err = {0};
    cr_assert_eq(rs_outdir_begin(&od, final, 0, &err), -1);
    cr_assert_eq(err.code, RS_EXIT_EXISTS);
    char want[512];
    snprintf(want, sizeof want, "%s: output exists (use --force to replace it)", final);
    cr_assert_str_eq(err.msg, want);
    cr_assert_null(od.tmp);
    assert_previous(final);
    cr_assert_eq(count_entries(dir, ".ringshard-"), 0);
    free(final);
    remove_tree(dir);
    free(dir);
}

Test(outdir, existing_file_not_replaced_even_with_force)
{
    char *dir = make_tmpdir();
    char *final = path_dup(dir, "out");
    write_text(final, "a file\n");
    rs_outdir od;
    rs_error err = {0};
    cr_assert_eq(rs_outdir_begin(&od, final, 1, &err), -1);
    cr_assert_eq(err.code, RS_EXIT_EXISTS);
    cr_assert(strstr(err.msg, "is not a directory"), "%s", err.msg);
    char *t = slurp(final, NULL);
    cr_assert_str_eq(t, "a file\n");
    free(t);
    free(final);
    remove_tree(dir);
    free(dir);
}

Test(outdir, force_replaces)
{
    char *dir = make_tmpdir();
    char *final = make_previous(dir);
    rs_outdir od;
    rs_error err = {0};
    cr_assert_eq(rs_outdir_begin(&od, final, 1, &err), 0, "%s", err.msg);
    assert_previous(final);
    char *p = rs_outdir_path(&od, "new.txt");
    write_text(p, "new\n");
    free(p);
    cr_assert_eq(rs_outdir_commit(&od, &err), 0, "%s", err.msg);
    char *old = path_dup(final, "old.txt"), *nw = path_dup(final, "new.txt");
    cr_assert(!exists(old), "old content gone");
    char *t = slurp(nw, NULL);
    cr_assert_str_eq(t, "new\n");
    cr_assert_eq(count_entries(dir, ".ringshard-"), 0, "no temporary or old directory left");
    free(t);
    free(old);
    free(nw);
    free(final);
    remove_tree(dir);
    free(dir);
}

Test(outdir, abort_keeps_previous)
{
    char *dir = make_tmpdir();
    char *final = make_previous(dir);
    rs_outdir od;
    rs_error err = {0};
    cr_assert_eq(rs_outdir_begin(&od, final, 1, &err), 0, "%s", err.msg);
    char *p = rs_outdir_path(&od, "new.txt");
    write_text(p, "new\n");
    free(p);
    /* a symlink inside the temporary directory is removed, not followed */
    char *outside = path_dup(dir, "outside.txt");
    write_text(outside, "keep me\n");
    p = rs_outdir_path(&od, "link");
    cr_assert_eq(symlink(dir, p), 0);
    free(p);
    rs_outdir_abort(&od);
    cr_assert_null(od.tmp);
    assert_previous(final);
    char *nw = path_dup(final, "new.txt");
    cr_assert(!exists(nw));
    cr_assert(exists(outside), "the symlink's target survives");
    cr_assert_eq(count_entries(dir, ".ringshard-"), 0);
    rs_outdir_abort(&od);   /* twice is harmless */
    free(nw);
    free(outside);
    free(final);
    remove_tree(dir);
    free(dir);
}

Test(outdir, output_appearing_meanwhile_is_not_replaced_without_force)
{
    char *dir = make_tmpdir();
    char *final = path_dup(dir, "out");
    rs_outdir od;
    rs_error err = {0};
    cr_assert_eq(rs_outdir_begin(&od, final, 0, &err), 0, "%s", err.msg);
    free(make_previous(dir));
    cr_assert_eq(rs_outdir_commit(&od, &err), -1);
    cr_assert_eq(err.code, RS_EXIT_EXISTS);
    assert_previous(final);
    cr_assert_eq(count_entries(dir, ".ringshard-"), 0, "the temporary directory is removed");
    free(final);
    remove_tree(dir);
    free(dir);
}

static pid_t dead_pid(void)
{
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0)
        _exit(0);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    return pid;
}

Test(outdir, stale_temporaries)
{
    char *dir = make_tmpdir();
    char *final = path_dup(dir, "out");
    char name[256];
    pid_t dead = dead_pid();

    snprintf(name, sizeof name, "%s/out.ringshard-tmp.%ld.0badf00d", dir, (long)dead);
    char *stale = strdup(name);
    cr_assert_eq(mkdir(stale, 0755), 0);
    snprintf(name, sizeof name, "%s/sub", stale);
    cr_assert_eq(mkdir(name, 0755), 0);
    snprintf(name, sizeof name, "%s/sub/f.csv", stale);
    write_text(name, "x\n");
    char *outside = path_dup(dir, "outside.txt");
    write_text(outside, "keep me\n");
    snprintf(name, sizeof name, "%s/link", stale);
    cr_assert_eq(symlink(dir, name), 0);

    snprintf(name, sizeof name, "%s/out.ringshard-tmp.%ld.cafebabe", dir, (long)getpid());
    char *live = strdup(name);
    cr_assert_eq(mkdir(live, 0755), 0);
    snprintf(name, sizeof name, "%s/other.ringshard-tmp.%ld.0badf00d", dir, (long)dead);
    char *other = strdup(name);
    cr_assert_eq(mkdir(other, 0755), 0);
    snprintf(name, sizeof name, "%s/out.ringshard-tmp.%ld.", dir, (long)dead);
    char *no_random = strdup(name);
    cr_assert_eq(mkdir(no_random, 0755), 0);

    rs_outdir od;
    rs_error err = {0};
    cr_assert_eq(rs_outdir_begin(&od, final, 0, &err), 0, "%s", err.msg);
    cr_assert(!exists(stale), "the dead process's directory is removed");
    cr_assert(exists(live), "the live process's directory is kept");
    cr_assert(exists(other), "another output's directory is not touched");
    cr_assert(exists(no_random), "a name that does not match the pattern is not touched");
    cr_assert(exists(outside));
    rs_outdir_abort(&od);
    cr_assert(exists(live));
    free(stale);
    free(live);
    free(other);
    free(no_random);
    free(outside);
    free(final);
    remove_tree(dir);
    free(dir);
}

Test(outdir, stale_old_directory)
{
    char *dir = make_tmpdir();
    char *final = make_previous(dir);
    char name[256];
    pid_t dead = dead_pid();
    snprintf(name, sizeof name, "%s.ringshard-old.%ld", final, (long)dead);
    cr_assert_eq(mkdir(name, 0755), 0);
    rs_outdir od;
    rs_error err = {0};
    cr_assert_eq(rs_outdir_begin(&od, final, 1, &err), 0, "%s", err.msg);
    cr_assert(!exists(name), "a finished replacement's leftover is removed");
    rs_outdir_abort(&od);
    assert_previous(final);

    /* without final, the old directory is the previous output of a
     * replacement killed between its two renames: put back as final */
    cr_assert_eq(rename(final, name), 0);
    cr_assert_eq(rs_outdir_begin(&od, final, 0, &err), -1);
    cr_assert_eq(err.code, RS_EXIT_EXISTS, "restored, so final exists: %s", err.msg);
    cr_assert(!exists(name));
    assert_previous(final);
    free(final);
    remove_tree(dir);
    free(dir);
}

Test(outdir, unusable_parent)
{
    char *dir = make_tmpdir();
    char *file = path_dup(dir, "file");
    write_text(file, "x\n");
    char *under_file = path_dup(file, "out");
    rs_outdir od;
    rs_error err = {0};
    cr_assert_eq(rs_outdir_begin(&od, under_file, 0, &err), -1);
    cr_assert_eq(err.code, RS_EXIT_IO);
    cr_assert(strstr(err.msg, under_file) && strstr(err.msg, strerror(ENOTDIR)), "%s", err.msg);
    cr_assert_null(od.tmp);

    char *missing = path_dup(dir, "no/such/out");
    rs_error_clear(&err);
    cr_assert_eq(rs_outdir_begin(&od, missing, 1, &err), -1);
    cr_assert_eq(err.code, RS_EXIT_IO);
    cr_assert(strstr(err.msg, missing) && strstr(err.msg, strerror(ENOENT)), "%s", err.msg);

    rs_error_clear(&err);
    cr_assert_eq(rs_outdir_begin(&od, "/proc/ringshard-out", 0, &err), -1);
    cr_assert_eq(err.code, RS_EXIT_IO, "%s", err.msg);

    rs_error_clear(&err);
    cr_assert_eq(rs_outdir_begin(&od, "..", 1, &err), -1);
    cr_assert_eq(err.code, RS_EXIT_USAGE);
    cr_assert_eq(count_entries(dir, ".ringshard-"), 0);
    free(missing);
    free(under_file);
    free(file);
    remove_tree(dir);
    free(dir);
}
