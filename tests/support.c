#define _GNU_SOURCE
#include "support.h"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <zlib.h>

const char *path_join(const char *dir, const char *name)
{
    static char bufs[16][4096];
    static int next;
    char *b = bufs[next++ & 15];
    snprintf(b, sizeof bufs[0], "%s/%s", dir, name);
    return b;
}

const char *fixture(const char *rel) { return path_join(RS_SOURCE_DIR "/fixtures", rel); }

char *path_dup(const char *dir, const char *name)
{
    char *p;
    if (asprintf(&p, "%s/%s", dir, name) < 0)
        abort();
    return p;
}

char *slurp(const char *path, size_t *len)
{
    gzFile f = gzopen(path, "rb");  /* reads plain files too */
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *p = malloc(cap + 1);
    for (;;) {
        if (n == cap) {
            cap *= 2;
            p = realloc(p, cap + 1);
        }
        int r = gzread(f, p + n, (unsigned)(cap - n));
        if (r < 0) {
            gzclose(f);
            free(p);
            return NULL;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    gzclose(f);
    p[n] = '\0';
    if (len)
        *len = n;
    return p;
}

static char *read_all(FILE *f)
{
    size_t cap = 4096, n = 0, r;
    char *p = malloc(cap + 1);
    while ((r = fread(p + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            cap *= 2;
            p = realloc(p, cap + 1);
        }
    }
    p[n] = '\0';
    return p;
}

const char *rs_test_binary(void)
{
    const char *b = getenv("RINGSHARD_TEST_BINARY");
    return b && *b ? b : RS_BUILT_BINARY;
}

int run(const char *cmd, char **out, char **err)
{
    char errpath[] = "/tmp/rs-test-err.XXXXXX";
    int efd = mkstemp(errpath);
    char *full;
    if (asprintf(&full, "RS='%s'; export RS; { %s ; } 2>%s", RS_BINARY, cmd, errpath) < 0)
        abort();
    FILE *p = popen(full, "r");
    char *o = read_all(p);
    int st = pclose(p);
    free(full);
    if (out)
        *out = o;
    else
        free(o);
    FILE *ef = fdopen(efd, "r");
    char *e = read_all(ef);
    fclose(ef);
    unlink(errpath);
    if (err)
        *err = e;
    else
        free(e);
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    return 128 + WTERMSIG(st);
}

int runf(char **out, char **err, const char *fmt, ...)
{
    char *cmd;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&cmd, fmt, ap);
    va_end(ap);
    if (n < 0)
        abort();
    int rc = run(cmd, out, err);
    free(cmd);
    return rc;
}

cmd_result vsh_in(const char *dir, const char *fmt, va_list ap)
{
    char *cmd;
    if (vasprintf(&cmd, fmt, ap) < 0)
        abort();
    cmd_result r;
    r.rc = runf(&r.out, &r.err, "cd '%s' || exit 99\n%s", dir, cmd);
    free(cmd);
    return r;
}

char *test_dir;

void test_dir_setup(void) { test_dir = make_tmpdir(); }

void test_dir_teardown(void)
{
    remove_tree(test_dir);
    free(test_dir);
    test_dir = NULL;
}

cmd_result sh_in_test_dir(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cmd_result r = vsh_in(test_dir, fmt, ap);
    va_end(ap);
    return r;
}

void cmd_result_free(cmd_result *r)
{
    free(r->out);
    free(r->err);
}

char *make_tmpdir(void)
{
    const char *base = getenv("RINGSHARD_TEST_TMPDIR");
    if (!base || !*base)
        base = "/tmp";
    size_t n = strlen(base) + sizeof "/rs-test.XXXXXX";
    char *t = malloc(n);
    if (!t)
        abort();
    snprintf(t, n, "%s/rs-test.XXXXXX", base);
    if (!mkdtemp(t))
        abort();
    return t;
}

int remove_tree(const char *dir)
{
    int rc = runf(NULL, NULL, "chmod -R u+rwx '%s' 2>/dev/null; rm -rf '%s'", dir, dir);
    if (rc != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return rc;
}

size_t unhex(const char *hex, unsigned char *out, size_t cap)
{
    size_t n = 0;
    while (hex[0] && hex[1] && n < cap) {
        unsigned v;
        sscanf(hex, "%2x", &v);
        out[n++] = (unsigned char)v;
        hex += 2;
    }
    return n;
}

/* Criterion from here on: the process helpers below assert (cr_assert) as
 * they go; the functions above stay usable without it. */
#include <criterion/criterion.h>
#include <signal.h>
#include <unistd.h>

/* support.h has the contracts of the four process helpers that follow. */
pid_t spawn_in_test_dir(const char *script, const char *point, const char *env, int errfd)
{
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        if (chdir(test_dir) != 0)
            _exit(99);
        setenv("RS", RS_BINARY, 1);
        if (point)
            setenv("RINGSHARD_TEST_PAUSE_AT", point, 1);
        if (env)
            putenv(strdup(env));
        signal(SIGPIPE, SIG_DFL);
        if (errfd >= 0 && dup2(errfd, 2) < 0)
            _exit(99);
        execl("/bin/sh", "sh", "-c", script, (char *)NULL);
        _exit(99);
    }
    return pid;
}

pid_t stop_at(const char *point, const char *env, const char *cmd, const char *err)
{
    char *full;
    cr_assert(asprintf(&full, "exec %s >/dev/null 2>%s", cmd, err ? err : "/dev/null") >= 0);
    pid_t pid = spawn_in_test_dir(full, point, env, -1);
    free(full);
    int st;
    cr_assert_eq(waitpid(pid, &st, WUNTRACED), pid);
    cr_assert(WIFSTOPPED(st), "%s: stopped at %s (status 0x%x)", cmd, point, st);
    return pid;
}

pid_t stop_for_signal(const char *point, const char *cmd, const char *err)
{
    return stop_at(point, "RINGSHARD_TEST_PAUSE_INTERRUPTED=1", cmd, err);
}

void signal_stopped(pid_t pid, int sig)
{
    cr_assert_eq(kill(pid, sig), 0);
    cr_assert_eq(kill(pid, SIGCONT), 0);
}


void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert(f != NULL, "%s: %s", path, strerror(errno));
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
}

void assert_python_json(const char *path)
{
    char cmd[4096], *err;
    snprintf(cmd, sizeof cmd, "python3 -c 'import json,sys; json.load(open(sys.argv[1], encoding=\"utf-8\"))' '%s'",
             path);
    int st = run(cmd, NULL, &err);
    cr_assert_eq(st, 0, "python's json rejects %s: %s", path, err);
    free(err);
}

void assert_verify(const char *dir)
{
    char *out = NULL, *err = NULL;
    int rc = runf(&out, &err, "\"$RS\" verify --quiet '%s'", dir);
    cr_assert_eq(rc, 0, "ringshard verify %s: exit %d\n%s%s", dir, rc, out ? out : "", err ? err : "");
    free(out);
    free(err);
}

cmd_result sh_expect(int rc, const char *says, const char *cmd)
{
    cmd_result r = sh_in_test_dir("%s", cmd);
    cr_assert_eq(r.rc, rc, "%s\nexit %d, want %d\nstdout: %.2000s\nstderr: %s", cmd, r.rc, rc, r.out, r.err);
    cr_assert(!says || strstr(r.err, says), "%s\nstderr: %s\nwant: %s", cmd, r.err, says);
    return r;
}

void sh_expect_free(int rc, const char *says, const char *cmd)
{
    cmd_result r = sh_expect(rc, says, cmd);
    cmd_result_free(&r);
}
