/* Direct I/O of kept outputs (ringshard/direct.h): the files' bytes are
 * exactly what buffered writes make, whatever the sizes, the order of the
 * writes, the drains and a full arena; a failed write names its file; the
 * command's outputs are identical with --direct-io on and off.
 *
 * Where the file system offers no direct I/O (statx reports no alignment:
 * tmpfs), rs_direct_start must refuse, and the tests assert that instead:
 * whichever way, something is checked. The library tests work under the
 * tests' working directory (the build tree, on a disk), as
 * test_writeback.c does, because /tmp may be a tmpfs. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ringshard/direct.h"
#include "support.h"

TestSuite(direct, .timeout = 300);

#define DATA RS_SOURCE_DIR "/fixtures/data/"
#define NF 7

/* Whether statx says dir's file system takes direct I/O, as direct.c asks. */
static int fs_has_direct_io(const char *dir)
{
    struct statx sx;
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    cr_assert_geq(fd, 0);
    char probe[512];
    snprintf(probe, sizeof probe, "%s/.probe", dir);
    int pf = open(probe, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cr_assert_geq(pf, 0);
    int ok = statx(pf, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 && (sx.stx_mask & STATX_DIOALIGN) &&
             sx.stx_dio_offset_align && RS_DIRECT_BLOCK % sx.stx_dio_offset_align == 0;
    close(pf);
    unlink(probe);
    close(fd);
    return ok;
}

static char *work_dir(void)
{
    char *d = strdup("rs-direct.XXXXXX");  /* in the working directory: see the top */
    cr_assert(mkdtemp(d));
    return d;
}

static uint64_t rng = 0x9e3779b97f4a7c15u;
static uint32_t next_rand(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)rng;
}

typedef struct {
    int fd[NF];
    char *path[NF];
    char *want[NF];
    size_t wlen[NF];
} files;

static void open_files(files *f, const char *dir)
{
    for (int i = 0; i < NF; i++) {
        cr_assert(asprintf(&f->path[i], "%s/f%d", dir, i) > 0);
        f->fd[i] = open(f->path[i], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        cr_assert_geq(f->fd[i], 0);
        f->want[i] = malloc(1 << 22);
        f->wlen[i] = 0;
    }
}

/* Rounds of writes in a random order of the files, a drain after each:
 * pieces of 0 to ~3 blocks, so that carries fill, empty and span blocks;
 * half of them copied by rs_direct_write, half made in the room that
 * rs_direct_begin gives. */
static void write_rounds(rs_direct *dx, files *f, int rounds)
{
    static char piece[3][13000];
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < NF; k++) {
            int d = (int)(next_rand() % NF);
            size_t np = 1 + next_rand() % 3, len[3];
            const void *p[3];
            for (size_t i = 0; i < np; i++) {
                len[i] = next_rand() % 4 == 0 ? next_rand() % 40 : next_rand() % sizeof piece[i];
                for (size_t b = 0; b < len[i]; b++)
                    piece[i][b] = (char)next_rand();
                p[i] = piece[i];
                memcpy(f->want[d] + f->wlen[d], piece[i], len[i]);
                f->wlen[d] += len[i];
            }
            rs_error err = {0};
            if (next_rand() % 2) {
                cr_assert_eq(rs_direct_write(dx, (uint32_t)d, p, len, np, &err), 0, "%s", err.msg);
                continue;
            }
            /* the same bytes made in place: the room's first range, then its rest */
            size_t total = 0;
            for (size_t i = 0; i < np; i++)
                total += len[i];
            rs_direct_room room;
            cr_assert_eq(rs_direct_begin(dx, (uint32_t)d, total, &room, &err), 0, "%s", err.msg);
            cr_assert(room.nfirst <= total && (room.nfirst == total || room.rest), "room %zu of %zu", room.nfirst,
                      total);
            const char *src = f->want[d] + f->wlen[d] - total;
            memcpy(room.first, src, room.nfirst);
            if (total > room.nfirst)
                memcpy(room.rest, src + room.nfirst, total - room.nfirst);
            cr_assert_eq(rs_direct_commit(dx, (uint32_t)d, &room, &err), 0, "%s", err.msg);
        }
        rs_error err = {0};
        cr_assert_eq(rs_direct_drain(dx, &err), 0, "%s", err.msg);
    }
}

static void check_files(files *f)
{
    for (int i = 0; i < NF; i++) {
        int fl = fcntl(f->fd[i], F_GETFL);
        cr_assert_eq(fl & O_DIRECT, 0, "O_DIRECT is cleared when the files are finished");
        close(f->fd[i]);
        size_t n;
        char *got = slurp(f->path[i], &n);
        cr_assert(got);
        cr_assert_eq(n, f->wlen[i], "%s: %zu bytes, want %zu", f->path[i], n, f->wlen[i]);
        cr_assert_eq(memcmp(got, f->want[i], n), 0, "%s: bytes differ", f->path[i]);
        free(got);
        free(f->want[i]);
        free(f->path[i]);
    }
}

/* Large arena (every write queued) and a 3-block arena (most writes find it
 * full and are written by the caller): the same exact files. */
Test(direct, files_hold_exactly_the_bytes_written)
{
    char *dir = work_dir();
    int has = fs_has_direct_io(dir);
    size_t arenas[2] = {(size_t)8 << 20, 3 * RS_DIRECT_BLOCK};
    for (int a = 0; a < 2; a++) {
        files f;
        open_files(&f, dir);
        const char *why = NULL;
        rs_direct *dx = rs_direct_start(f.fd, (const char *const *)f.path, NF, arenas[a], &why);
        if (!has) {
            cr_assert_null(dx, "no direct I/O on this file system, yet it started");
            cr_assert(why && strstr(why, "alignment"), "%s", why ? why : "(none)");
            for (int i = 0; i < NF; i++)
                close(f.fd[i]), free(f.want[i]), free(f.path[i]);
            continue;
        }
        cr_assert(dx, "direct I/O refused on a file system that offers it: %s", why ? why : "");
        write_rounds(dx, &f, 40);
        rs_error err = {0};
        cr_assert_eq(rs_direct_finish(dx, &err), 0, "%s", err.msg);
        rs_direct_free(dx);
        check_files(&f);
    }
    remove_tree(dir);
    free(dir);
}

/* A write past the file-size limit fails (EFBIG: SIGXFSZ ignored) in an I/O
 * thread; the drain names the file, and so does every later call. */
Test(direct, failed_write_names_its_file)
{
    char *dir = work_dir();
    int has = fs_has_direct_io(dir);
    signal(SIGXFSZ, SIG_IGN);
    files f;
    open_files(&f, dir);
    const char *why = NULL;
    rs_direct *dx = rs_direct_start(f.fd, (const char *const *)f.path, NF, (size_t)1 << 20, &why);
    if (!has) {  /* the files stay buffered: their failures are test_bucket's */
        cr_assert_null(dx);
        cr_assert(why && strstr(why, "alignment"), "%s", why ? why : "(none)");
        for (int i = 0; i < NF; i++)
            close(f.fd[i]), free(f.want[i]), free(f.path[i]);
        remove_tree(dir);
        free(dir);
        return;
    }
    cr_assert(dx, "%s", why ? why : "");
    struct rlimit rl = {64 << 10, 64 << 10};
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
    static char big[256 << 10];
    const void *p[1] = {big};
    size_t len[1] = {sizeof big};
    rs_error err = {0};
    cr_assert_eq(rs_direct_write(dx, 3, p, len, 1, &err), 0, "queued, not yet written: %s", err.msg);
    cr_assert_eq(rs_direct_drain(dx, &err), -1);
    char want[600];
    snprintf(want, sizeof want, "%s: write failed: File too large", f.path[3]);
    cr_assert_str_eq(err.msg, want);
    rs_error again = {0};
    cr_assert_eq(rs_direct_finish(dx, &again), -1, "the failure is sticky");
    cr_assert_str_eq(again.msg, want);
    rs_direct_free(dx);
    for (int i = 0; i < NF; i++)
        close(f.fd[i]), free(f.want[i]), free(f.path[i]);
    remove_tree(dir);
    free(dir);
}

/* The command: every codec, one and three threads, direct I/O on and off:
 * byte-identical trees, and the log says which way the files were written. */
Test(direct, bucket_outputs_identical_to_buffered)
{
    char *dir = work_dir();
    int has = fs_has_direct_io(dir);
    static const char *const codec[] = {"gzip", "zstd", "none"};
    for (int c = 0; c < 3; c++) {
        char *out, *err;
        int rc = runf(&out, &err,
                      "cd %s && rm -rf on* off* && for j in 1 3; do for io in on off; do "
                      "RINGSHARD_LOG=info \"$RS\" bucket --quiet --nodes 50 -j $j --compress %s --direct-io $io "
                      "-o $io$j " DATA "bills_a.csv.gz " DATA "bills_b.csv.gz 2>> log.$io || exit 9; "
                      "grep -v '\"seconds\"' $io$j/manifest.json > m.$io$j && rm $io$j/manifest.json; done; done && "
                      "diff -r on1 off1 && diff -r on1 on3 && diff -r on1 off3 && cmp m.on1 m.off1 && "
                      "cmp m.on1 m.on3 && ls on1 | wc -l && cat log.on log.off",
                      dir, codec[c]);
        cr_assert_eq(rc, 0, "%s: %s %s", codec[c], out, err);
        cr_assert_eq(atoi(out), 50, "%s", out);
        if (has)
            cr_assert(strstr(out, "info: outputs: direct I/O (O_DIRECT, 4096-byte blocks)"), "%s", out);
        else
            cr_assert(strstr(out, "info: outputs: written through the page cache (the file system reports no"),
                      "%s", out);
        cr_assert(strstr(out, "info: outputs: written through the page cache (--direct-io off)"), "%s", out);
        free(out);
        free(err);
        /* the default, auto: direct I/O for plain output only */
        rc = runf(&out, &err,
                  "cd %s && rm -rf auto && RINGSHARD_LOG=info \"$RS\" bucket --quiet --nodes 50 --compress %s -o auto "
                  DATA "bills_a.csv.gz " DATA "bills_b.csv.gz 2>&1 && rm auto/manifest.json && diff -r auto on1 && echo same",
                  dir, codec[c]);
        cr_assert_eq(rc, 0, "%s: %s %s", codec[c], out, err);
        cr_assert(strstr(out, "same\n"), "%s: the default's files are those of --direct-io on: %s", codec[c], out);
        if (c < 2)
            cr_assert(strstr(out, "written through the page cache (--direct-io auto: compressed outputs)"), "%s", out);
        else if (has)
            cr_assert(strstr(out, "info: outputs: direct I/O (O_DIRECT"), "%s", out);
        free(out);
        free(err);
    }
    char *out, *err;
    int rc = runf(&out, &err, "cd %s && \"$RS\" bucket --direct-io sometimes -o x " DATA "bills_a.csv.gz", dir);
    cr_assert_eq(rc, 64, "%s", err);
    cr_assert(strstr(err, "--direct-io: expected auto, on or off"), "%s", err);
    free(out);
    free(err);
    remove_tree(dir);
    free(dir);
}
