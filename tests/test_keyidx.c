/* Key indexes (ringshard/keyidx.h) through the library: the bytes a writer
 * writes depend on the keys alone (not on its memory, however many runs it
 * spills and merges), and are what tests/check_history.py writes from
 * docs/format-keyidx.md; compact's merge of indexes is the index of the files
 * concatenated; lookups find every key held and no other, and what they
 * read grows with the keys looked up, not with the index; damage in what
 * a lookup reads is reported, naming the file. (Through the command line:
 * test_history.c.) */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ringshard/dataset.h"
#include "support.h"

TestSuite(keyidx, .init = test_dir_setup, .fini = test_dir_teardown, .timeout = 600);

#define CHECK "python3 " RS_SOURCE_DIR "/tests/check_history.py "

/* The keys of a test: of many lengths (chunks deflated), or bill ids (32
 * hex digits: chunks packed). */
static int bill_ids;

/* Key i of a set: lengths 0 to ~40, a few repeated, one of 70,000 bytes;
 * or with bill_ids, 32 hex digits, a few repeated. */
static size_t key_of(uint64_t i, char *buf, size_t cap)
{
    if (bill_ids) {
        if (i % 1000 == 999)
            i -= 500;
        uint64_t a = i * 0x9e3779b97f4a7c15ull, b = (i + 7) * 0xc2b2ae3d27d4eb4full;
        return (size_t)snprintf(buf, cap, "%016llx%016llx", (unsigned long long)a, (unsigned long long)b);
    }
    if (i == 77) {   /* longer than a chunk's key bytes */
        size_t n = 70000 < cap ? 70000 : cap;
        memset(buf, 'L', n);
        return n;
    }
    if (i % 1000 == 999)
        i -= 500;    /* a key held twice */
    if (i == 5)
        return 0;    /* an empty key */
    return (size_t)snprintf(buf, cap, "%llx-key-%0*llu", (unsigned long long)(i * 0x9e3779b97f4a7c15ull >> 40),
                            (int)(i % 23), (unsigned long long)i);
}

static char *path_of(const char *name)
{
    char *p;
    cr_assert(asprintf(&p, "%s/%s", test_dir, name) > 0);
    return p;
}

static uint64_t size_of(const char *path)
{
    struct stat st;
    cr_assert_eq(stat(path, &st), 0, "%s", path);
    return (uint64_t)st.st_size;
}

/* An index of keys [a, b) at name, the writer's memory `memory` (0: its
 * default); its size. */
static uint64_t write_index(const char *name, uint64_t a, uint64_t b, uint64_t memory)
{
    static char key[80000];
    char *path = path_of(name);
    rs_keyidx_writer w;
    rs_error err = {0};
    cr_assert_eq(rs_keyidx_create(&w, path, &err), 0, "%s", err.msg);
    if (memory == 1)
        rs_keyidx_set_memory_for_tests(&w, (uint64_t)64 << 10, 4);
    else if (memory)
        rs_keyidx_set_memory(&w, memory);
    for (uint64_t i = a; i < b; i++) {
        size_t n = key_of(i, key, sizeof key);
        cr_assert_eq(rs_keyidx_add(&w, key, n, &err), 0, "%s", err.msg);
    }
    rs_keyidx_of of = {b - a, a, (uint32_t)b, 0};
    uint64_t bytes;
    uint32_t crc;
    cr_assert_eq(rs_keyidx_finish(&w, &of, &bytes, &crc, &err), 0, "%s", err.msg);
    cr_assert_eq(bytes, size_of(path));
    free(path);
    return bytes;
}

static void open_index(rs_keyidx *x, const char *name, uint64_t a, uint64_t b)
{
    char *path = path_of(name);
    rs_keyidx_of want = {b - a, a, (uint32_t)b, 0};
    rs_error err = {0};
    cr_assert_eq(rs_keyidx_open(x, AT_FDCWD, path, path, &want, size_of(path), &err), 0, "%s", err.msg);
    free(path);
}

/* 100,000 keys written with 64 KiB of memory (about 100 spilled runs,
 * merged 4 at a time: four passes) and in memory: the same bytes, which the Python
 * reader reads and writes again the same from the keys alone. */
Test(keyidx, the_bytes_depend_on_the_keys_alone)
{
    uint64_t n = 100000;
    uint64_t a = write_index("small.keyidx", 0, n, 1);
    uint64_t b = write_index("big.keyidx", 0, n, (uint64_t)1 << 30);
    cr_assert_eq(a, b);
    SH_OK("cmp small.keyidx big.keyidx");
    SH_OK(CHECK "index big.keyidx > said && grep -q '^entries 100000 keys 100000 crc [0-9a-f]* rewrite same$' said "
          "|| { cat said; exit 1; }");
}

static void on_hit(void *ctx, uint32_t id)
{
    ((unsigned *)ctx)[id]++;
}

/* Probes for keys [a, b) (ids 0..) then for as many absent keys. */
static rs_keyidx_probe *probes(uint64_t a, uint64_t b, uint64_t absent, char **arena)
{
    size_t n = (size_t)(b - a + absent);
    rs_keyidx_probe *p = calloc(n, sizeof *p);
    char *buf = *arena = malloc(n * 64 + 80000);
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = i < b - a ? key_of(a + i, buf + at, 80000) : (size_t)sprintf(buf + at, "absent-%zu", i);
        p[i] = (rs_keyidx_probe){rs_keyidx_fp(buf + at, len), buf + at, (uint32_t)len, (uint32_t)i};
        at += len;
    }
    rs_keyidx_probe_sort(p, n);
    return p;
}

/* Every key held is found exactly once a probe (a key held twice too),
 * no absent key is; the keys confirmed are counted. */
Test(keyidx, lookups_find_the_keys_held_and_no_other)
{
    uint64_t n = 20000;
    write_index("x.keyidx", 0, n, 0);
    rs_keyidx x;
    open_index(&x, "x.keyidx", 0, n);
    char *arena;
    rs_keyidx_probe *p = probes(0, n, n, &arena);
    unsigned *hits = calloc(2 * n, sizeof *hits);
    rs_error err = {0};
    cr_assert_eq(rs_keyidx_lookup(&x, p, 2 * n, on_hit, hits, &err), 0, "%s", err.msg);
    uint64_t held = 0;
    for (uint64_t i = 0; i < 2 * n; i++) {
        /* keys i % 1000 = 499 and 999 are the same key, held twice */
        unsigned want = i >= n ? 0 : i % 1000 == 499 || i % 1000 == 999 ? 2 : 1;
        cr_assert_eq(hits[i], want, "probe %llu: %u hits", (unsigned long long)i, hits[i]);
        held += want;
    }
    cr_assert_eq(x.keys_confirmed, held);
    rs_keyidx_close(&x);
    free(hits), free(p), free(arena);
}

/* What a lookup reads from 1,000 absent and 100 present keys. */
static uint64_t read_for_lookup(const char *name, uint64_t n, uint64_t *confirm)
{
    rs_keyidx x;
    open_index(&x, name, 0, n);
    char *arena;
    rs_keyidx_probe *p = probes(n / 2, n / 2 + 100, 1000, &arena);
    unsigned *hits = calloc(1100, sizeof *hits);
    rs_error err = {0};
    x.bytes_read = 0;
    cr_assert_eq(rs_keyidx_lookup(&x, p, 1100, on_hit, hits, &err), 0, "%s", err.msg);
    cr_assert_eq(x.keys_confirmed, 100);
    uint64_t got = x.bytes_read;
    *confirm = x.confirm_bytes;
    rs_keyidx_close(&x);
    free(hits), free(p), free(arena);
    return got;
}

/* The same lookups in an index of 50,000 keys and in one of 400,000 read
 * about as much: a filter line a key, a range a key held (the slope of the
 * cost in the index's size, by the bytes counted, not by time). */
Test(keyidx, what_a_lookup_reads_does_not_grow_with_the_index)
{
    uint64_t c1, c8;
    uint64_t s1 = write_index("s.keyidx", 0, 50000, 0), s8 = write_index("l.keyidx", 0, 400000, 0);
    uint64_t r1 = read_for_lookup("s.keyidx", 50000, &c1), r8 = read_for_lookup("l.keyidx", 400000, &c8);
    cr_assert_lt(r8, r1 + r1 / 2, "%llu bytes read of 8x the keys, %llu of 1x (confirming: %llu, %llu)", (unsigned long long)r8,
                 (unsigned long long)r1, (unsigned long long)c8, (unsigned long long)c1);
    cr_assert_lt(r8, s8 / 20, "%llu bytes read of an index of %llu", (unsigned long long)r8, (unsigned long long)s8);
    cr_assert_lt(c8, 100 * 16384, "%llu bytes read to confirm 100 keys", (unsigned long long)c8);
    cr_assert_lt(r1, s1, "");
}

/* Probes for keys [a, b) and `absent` others looked up in index `name` of n
 * keys: what the lookup read of the filter (bytes_read less confirm_bytes),
 * and its counts. */
static void lookup_counts(const char *name, uint64_t n, uint64_t a, uint64_t b, uint64_t absent, rs_keyidx *out)
{
    rs_keyidx x;
    open_index(&x, name, 0, n);
    char *arena;
    rs_keyidx_probe *p = probes(a, b, absent, &arena);
    unsigned *hits = calloc(b - a + absent, sizeof *hits);
    rs_error err = {0};
    x.bytes_read = 0;
    cr_assert_eq(rs_keyidx_lookup(&x, p, b - a + absent, on_hit, hits, &err), 0, "%s", err.msg);
    *out = x;
    out->path = NULL, out->v2 = NULL;
    rs_keyidx_close(&x);
    free(hits), free(p), free(arena);
}

/* A lookup reads what its keys need whatever their density: at most one
 * filter line a key (a few keys far apart: their own lines; keys crowding
 * the filter: every line once), and for each key a line passes its range's
 * chunk (about 2 KiB of 128 packed bill ids) and table entries, never the
 * neighbouring ranges' chunks. The filter's size and the passes are
 * counted: every key held passes, and about 1 % of the others. */
Test(keyidx, a_lookup_reads_one_filter_line_a_key_and_the_ranges_passed)
{
    bill_ids = 1;
    uint64_t n = 50000, size = write_index("b.keyidx", 0, n, 0), lines = n * 10 / 480 + 1;
    rs_keyidx sparse, dense;
    lookup_counts("b.keyidx", n, 1000, 1100, 1000, &sparse);
    lookup_counts("b.keyidx", n, 0, 20000, 30000, &dense);
    bill_ids = 0;
    cr_assert_eq(sparse.filter_bytes, 64 * lines);
    cr_assert_eq(dense.filter_bytes, 64 * lines);
    cr_assert_eq(sparse.keys_confirmed, 100);
    cr_assert_eq(dense.keys_confirmed, 20000 + 40);   /* 20 keys are held twice, each probed twice */
    cr_assert(sparse.filter_passes >= 100 && sparse.filter_passes <= 100 + 30, "%llu passes",
              (unsigned long long)sparse.filter_passes);
    cr_assert(dense.filter_passes >= 19980 && dense.filter_passes <= 19980 + 900, "%llu passes",
              (unsigned long long)dense.filter_passes);
    uint64_t sf = sparse.bytes_read - sparse.confirm_bytes, df = dense.bytes_read - dense.confirm_bytes;
    cr_assert_leq(sf, 64 * 1100, "%llu filter bytes read for 1,100 keys", (unsigned long long)sf);
    cr_assert_eq(df, 64 * lines, "%llu filter bytes read, the filter is %llu", (unsigned long long)df,
                 (unsigned long long)(64 * lines));
    /* a range of 128 bill ids: about 2.1 KiB and 24 bytes of table entries */
    cr_assert_leq(sparse.confirm_bytes, sparse.filter_passes * 3000, "%llu bytes read for %llu passes",
                  (unsigned long long)sparse.confirm_bytes, (unsigned long long)sparse.filter_passes);
    cr_assert_leq(dense.confirm_bytes, size - 64 * lines + 4 * 3000, "%llu bytes read of an index of %llu",
                  (unsigned long long)dense.confirm_bytes, (unsigned long long)size);
}

/* Indexes of 40 files (more than one merge takes at once), keys repeated
 * across them, merged: the index one writer makes of the files' keys in
 * order, byte for byte. */
Test(keyidx, a_merge_is_the_index_of_the_files_concatenated)
{
    enum { FILES = 40, PER = 1500 };
    char *names[FILES], *paths[FILES];
    rs_keyidx_of want[FILES];
    uint64_t sizes[FILES];
    for (int f = 0; f < FILES; f++) {
        cr_assert(asprintf(&names[f], "p%02d.keyidx", f) > 0);
        paths[f] = path_of(names[f]);
        sizes[f] = write_index(names[f], (uint64_t)f * PER, (uint64_t)(f + 1) * PER + 200 * (f % 2), 0);
        want[f] = (rs_keyidx_of){PER + 200 * (f % 2), (uint64_t)f * PER, (uint32_t)((f + 1) * PER + 200 * (f % 2)), 0};
    }
    /* the same keys, in the files' order, by one writer */
    static char key[80000];
    char *all = path_of("all.keyidx");
    rs_keyidx_writer w;
    rs_error err = {0};
    cr_assert_eq(rs_keyidx_create(&w, all, &err), 0);
    uint64_t total = 0;
    for (int f = 0; f < FILES; f++)
        for (uint64_t i = want[f].bytes; i < want[f].crc32; i++, total++)
            cr_assert_eq(rs_keyidx_add(&w, key, key_of(i, key, sizeof key), &err), 0);
    rs_keyidx_of of = {total, 1, 2, 0};
    uint64_t b1, b2;
    uint32_t c1, c2;
    cr_assert_eq(rs_keyidx_finish(&w, &of, &b1, &c1, &err), 0, "%s", err.msg);
    char *merged = path_of("merged.keyidx");
    cr_assert_eq(rs_keyidx_merge(merged, AT_FDCWD, (const char *const *)paths, (const char *const *)paths, want, sizes,
                                 FILES, &of, 0, &b2, &c2, &err),
                 0, "%s", err.msg);
    cr_assert_eq(b1, b2);
    cr_assert_eq(c1, c2);
    SH_OK("cmp all.keyidx merged.keyidx");
    for (int f = 0; f < FILES; f++)
        free(names[f]), free(paths[f]);
    free(all), free(merged);
}

/* A byte flipped in a filter line, in a chunk, in the range table or in
 * the header: the lookup (or the open) that reads it fails, RS_EXIT_DATA,
 * naming the file and the part; verify's scan finds each too. */
Test(keyidx, damage_is_found_by_the_lookup_that_reads_it)
{
    uint64_t n = 5000;
    write_index("d.keyidx", 0, n, 0);
    static const struct {
        const char *where, *says;
    } cases[] = {
        {"filter", "filter line "},
        {"chunk", "chunk at byte "},
        {"table", "range table entry "},
        {"header", "header: "},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        /* the offsets from the header (docs/format-keyidx.md) */
        SH_OK("cp d.keyidx e.keyidx && python3 -c \"import struct,sys; f=open('e.keyidx','r+b'); h=f.read(128); "
              "L,R,fa,ta,ca=struct.unpack_from('<QQQQQ',h,56); at={'filter':fa+64*(L//2)+3,'chunk':ca+30,"
              "'table':ta+12*(R//2)+1,'header':20}['%s']; f.seek(at); b=f.read(1); f.seek(at); "
              "f.write(bytes([b[0]^0x10]))\"",
              cases[c].where);
        rs_keyidx x;
        char *path = path_of("e.keyidx");
        rs_keyidx_of want = {n, 0, (uint32_t)n, 0};
        rs_error err = {0};
        int rc = rs_keyidx_open(&x, AT_FDCWD, path, path, &want, size_of(path), &err);
        if (rc == 0) {
            /* every key: each line, range and chunk is read */
            char *arena;
            rs_keyidx_probe *p = probes(0, n, 0, &arena);
            unsigned *hits = calloc(n, sizeof *hits);
            rc = rs_keyidx_lookup(&x, p, n, on_hit, hits, &err);
            free(hits), free(p), free(arena);
            rs_keyidx_close(&x);
        }
        cr_assert_eq(rc, -1, "%s: not found", cases[c].where);
        cr_assert_eq(err.code, RS_EXIT_DATA, "%s: %s", cases[c].where, err.msg);
        cr_assert(strstr(err.msg, "e.keyidx: key index damaged: ") && strstr(err.msg, cases[c].says), "%s: %s",
                  cases[c].where, err.msg);
        free(path);
    }
}

static int count_entry(void *ctx, uint64_t fp, const char *key, size_t len)
{
    (void)fp, (void)key, (void)len;
    ++*(uint64_t *)ctx;
    return 0;
}

/* Every byte is under a CRC-32: a byte changed anywhere in the file (400
 * places spread over it, each alone) is found by verify's scan, and a
 * lookup of every key held either finds each exactly as often as it is
 * held or fails: never a wrong answer. */
static void changed_anywhere(uint64_t n)
{
    uint64_t size = write_index("f.keyidx", 0, n, 0);
    char *path = path_of("f.keyidx"), *arena;
    FILE *f = fopen(path, "rb");
    unsigned char *good = malloc(size);
    cr_assert(f && fread(good, 1, size, f) == size);
    fclose(f);
    rs_keyidx_probe *p = probes(0, n, 0, &arena);
    unsigned *hits = calloc(n, sizeof *hits);
    rs_keyidx_of want = {n, 0, (uint32_t)n, 0};
    for (int t = 0; t < 400; t++) {
        uint64_t at = (uint64_t)t * size / 400 + (uint64_t)t % 7;
        good[at] ^= 0x21;
        f = fopen(path, "wb");
        cr_assert(f && fwrite(good, 1, size, f) == size && fclose(f) == 0);
        good[at] ^= 0x21;
        rs_keyidx x;
        rs_error err = {0};
        if (rs_keyidx_open(&x, AT_FDCWD, path, path, &want, size, &err) != 0) {
            cr_assert_eq(err.code, RS_EXIT_DATA, "byte %llu: %s", (unsigned long long)at, err.msg);
            continue;
        }
        uint64_t entries = 0;
        cr_assert_neq(rs_keyidx_scan(&x, count_entry, &entries, &err), 0, "byte %llu changed: the scan passed",
                      (unsigned long long)at);
        cr_assert_eq(err.code, RS_EXIT_DATA, "byte %llu: %s", (unsigned long long)at, err.msg);
        memset(hits, 0, n * sizeof *hits);
        rs_error e2 = {0};
        if (rs_keyidx_lookup(&x, p, n, on_hit, hits, &e2) == 0)
            for (uint64_t i = 0; i < n; i++)
                cr_assert_eq(hits[i], i % 1000 == 499 || i % 1000 == 999 ? 2u : 1u,
                             "byte %llu changed: key %llu found %u times", (unsigned long long)at,
                             (unsigned long long)i, hits[i]);
        else
            cr_assert_eq(e2.code, RS_EXIT_DATA, "byte %llu: %s", (unsigned long long)at, e2.msg);
        rs_keyidx_close(&x);
    }
    free(good), free(p), free(arena), free(hits), free(path);
}

Test(keyidx, a_byte_changed_anywhere_is_found_and_never_answers_wrong)
{
    changed_anywhere(3000);
}

/* The same three properties for bill ids, whose chunks are packed (16
 * bytes a key, compared without decoding): the bytes are the Python
 * writer's; every key held is found as often as it is held and no other;
 * a byte changed anywhere is found and never answers wrong. */
Test(keyidx, packed_chunks_of_bill_ids)
{
    bill_ids = 1;
    uint64_t n = 20000, size = write_index("b.keyidx", 0, n, 0);
    cr_assert_lt(size, n * 17 + n * 3 / 2 + 4096, "%llu bytes for %llu bill ids", (unsigned long long)size,
                 (unsigned long long)n);
    SH_OK(CHECK "index b.keyidx > said && grep -q '^entries 20000 keys 20000 crc [0-9a-f]* rewrite same$' said "
          "|| { cat said; exit 1; }");
    rs_keyidx x;
    open_index(&x, "b.keyidx", 0, n);
    char *arena;
    rs_keyidx_probe *p = probes(0, n, n, &arena);
    unsigned *hits = calloc(2 * n, sizeof *hits);
    rs_error err = {0};
    cr_assert_eq(rs_keyidx_lookup(&x, p, 2 * n, on_hit, hits, &err), 0, "%s", err.msg);
    for (uint64_t i = 0; i < 2 * n; i++)
        cr_assert_eq(hits[i], i >= n ? 0u : i % 1000 == 499 || i % 1000 == 999 ? 2u : 1u, "probe %llu: %u hits",
                     (unsigned long long)i, hits[i]);
    uint64_t entries = 0;
    cr_assert_eq(rs_keyidx_scan(&x, count_entry, &entries, &err), 0, "%s", err.msg);
    cr_assert_eq(entries, n);
    rs_keyidx_close(&x);
    free(hits), free(p), free(arena);
}

Test(keyidx, packed_chunks_changed_anywhere)
{
    bill_ids = 1;
    changed_anywhere(3000);
}
