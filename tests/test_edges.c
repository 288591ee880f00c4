/* Edges of correct behaviour found by outside tests: jump's
 * integer edges, option checks, messages, interrupts and the memory bound. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ringshard/hash.h"
#include "ringshard/ring.h"
#include "support.h"

TestSuite(edges, .init = test_dir_setup, .fini = test_dir_teardown);

/* ---- --scheme jump: Guava's int overflow and saturating cast ------------ */

#define LCG_MUL 2862933555777941757ULL

/* Java's int addition: wraps. (uint32_t -> int32_t of a value above
 * INT32_MAX is implementation-defined in C; GCC and Clang wrap.) */
static int32_t java_iadd(int32_t a, int32_t b) { return (int32_t)((uint32_t)a + (uint32_t)b); }

/* Java's (int) of a double: NaN -> 0, saturating at both ends. */
static int32_t java_d2i(double x)
{
    if (x != x)
        return 0;
    if (x >= 2147483647.0)
        return INT32_MAX;
    if (x <= -2147483648.0)
        return INT32_MIN;
    return (int32_t)x;
}

/* Hashing.consistentHash(input, buckets) transcribed line by line with
 * Java's semantics; *edge_step gets the step at which state >>> 33 was
 * 2^31 - 1 (the int overflow), or 0. */
static int32_t guava_model(uint64_t input, int32_t buckets, int *edge_step)
{
    uint64_t state = input;
    int32_t candidate = 0;
    *edge_step = 0;
    for (int step = 1;; step++) {
        state = LCG_MUL * state + 1;
        if ((state >> 33) == 0x7fffffffu)
            *edge_step = step;
        double next_double = (double)java_iadd((int32_t)(state >> 33), 1) / 0x1.0p31;
        int32_t next = java_d2i((double)java_iadd(candidate, 1) / next_double);
        if (next >= 0 && next < buckets)
            candidate = next;
        else
            return candidate;
    }
}

static uint64_t inverse64(uint64_t a)  /* a odd; Newton doubles the good bits */
{
    uint64_t x = a;
    for (int i = 0; i < 6; i++)
        x *= 2 - a * x;
    return x;
}

static uint64_t rotr64(uint64_t x, int r) { return (x >> r) | (x << (64 - r)); }

static uint64_t unfmix64(uint64_t k)  /* k ^= k >> 33 is its own inverse */
{
    k ^= k >> 33;
    k *= inverse64(0xc4ceb9fe1a85ec53ULL);
    k ^= k >> 33;
    k *= inverse64(0xff51afd7ed558ccdULL);
    k ^= k >> 33;
    return k;
}

/* The 16-byte key whose MurmurHash3_x64_128 (seed 0) digest is (h1, h2):
 * one block, every step undone in reverse order. */
static void murmur_preimage(uint64_t h1, uint64_t h2, unsigned char key[16])
{
    const uint64_t c1 = 0x87c37b91114253d5ULL, c2 = 0x4cf5ad432745937fULL;
    uint64_t b = h2 - h1, a = h1 - b;
    uint64_t f1 = unfmix64(a), f2 = unfmix64(b);
    uint64_t x2 = f2 - f1, x1 = f1 - x2;
    uint64_t b1 = x1 ^ 16, b2 = x2 ^ 16;
    uint64_t k1m = rotr64((b1 - 0x52dce729) * inverse64(5), 27);
    uint64_t k2m = rotr64((b2 - 0x38495ab5) * inverse64(5) - b1, 31);
    uint64_t k1 = rotr64(k1m * inverse64(c2), 31) * inverse64(c1);
    uint64_t k2 = rotr64(k2m * inverse64(c1), 33) * inverse64(c2);
    for (int i = 0; i < 8; i++) {
        key[i] = (unsigned char)(k1 >> (8 * i));
        key[8 + i] = (unsigned char)(k2 >> (8 * i));
    }
}

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t next_rand(void)  /* splitmix64 */
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

typedef struct {
    unsigned char key[16];
    uint64_t input;
    int32_t buckets, expect;
} jump_case;

/* A key (no byte 0x00, LF or CR) whose jump walk over `buckets` meets
 * state >>> 33 == 2^31 - 1 at LCG step `step`: choose that state, step the
 * LCG back to the input, invert MurmurHash3 for it. 0 if none was found. */
static int craft_overflow(int32_t buckets, int step, jump_case *c)
{
    const uint64_t back = inverse64(LCG_MUL);
    for (int tries = 0; tries < 1000000; tries++) {
        uint64_t state = (0x7fffffffULL << 33) | (next_rand() >> 31);
        for (int i = 0; i < step; i++)
            state = (state - 1) * back;
        int at;
        int32_t expect = guava_model(state, buckets, &at);
        if (at != step)
            continue;
        murmur_preimage(state, next_rand(), c->key);
        if (memchr(c->key, 0, 16) || memchr(c->key, '\n', 16) || memchr(c->key, '\r', 16))
            continue;
        c->input = state;
        c->buckets = buckets;
        c->expect = expect;
        return 1;
    }
    return 0;
}

/* Runs `ringshard locate --scheme jump --nodes N` over the keys (one a
 * line) and asserts each line's position and node (nodes are "0".."N-1",
 * so the node's name is the bucket). */
static void assert_locate(const jump_case *cs, size_t n)
{
    FILE *f = fopen(path_join(test_dir, "keys"), "wb");
    cr_assert(f);
    for (size_t i = 0; i < n; i++) {
        fwrite(cs[i].key, 1, 16, f);
        putc('\n', f);
    }
    fclose(f);
    cmd_result r = sh_in_test_dir("\"$RS\" locate --scheme jump --nodes %d --no-header < keys", cs[0].buckets);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    char *line = r.out;
    for (size_t i = 0; i < n; i++) {
        char *end = strchr(line, '\n');
        cr_assert(end, "line %zu missing: %s", i, r.out);
        *end = 0;
        char *node = strrchr(line, '\t');
        cr_assert(node);
        *node++ = 0;
        char *pos = strrchr(line, '\t');
        cr_assert(pos);
        cr_assert_eq(strtoull(pos + 1, NULL, 10), cs[i].input);
        cr_assert_eq(atoi(node), cs[i].expect, "key %zu, %d buckets: node %s, Guava %d", i, cs[i].buckets,
                     node, cs[i].expect);
        line = end + 1;
    }
    cmd_result_free(&r);
}

/* Overflow at the first and at later steps: ringshard agrees with the
 * transcription of Guava, in process and through `locate`. */
Test(edges, jump_overflow_crafted_keys, .timeout = 120)
{
    static const int32_t counts[] = {10, 1000, 100000};
    for (size_t b = 0; b < 3; b++) {
        jump_case cs[4 * 8];
        size_t n = 0;
        for (int step = 1; step <= 4; step++) {
            for (int k = 0; k < 8; k++) {
                jump_case *c = &cs[n];
                cr_assert(craft_overflow(counts[b], step, c), "no key for %d buckets, step %d", counts[b], step);
                cr_assert_eq((uint64_t)rs_hash(RS_HASH_MURMUR3_128, c->key, 16, 0), c->input,
                             "the preimage must hash to the chosen input");
                cr_assert_eq(rs_jump_consistent_hash(c->input, c->buckets), c->expect,
                             "consistentHash(%" PRId64 ", %d), overflow at step %d", (int64_t)c->input,
                             c->buckets, step);
                n++;
            }
        }
        assert_locate(cs, n);
    }
}

/* fixtures/vectors/guava_jump_edges.tsv: the real Guava 31.1's answers for
 * keys meeting the overflow and the saturating cast at steps 1-4
 * (tools/gen/GuavaJumpVectors.java). */
Test(edges, jump_edges_match_real_guava, .timeout = 120)
{
    size_t len;
    char *text = slurp(fixture("vectors/guava_jump_edges.tsv"), &len);
    cr_assert(text);
    char *save, *line = strtok_r(text, "\n", &save);  /* the header */
    jump_case locate_cases[3][64];
    size_t nlocate[3] = {0};
    int rows = 0, overflows = 0;
    while ((line = strtok_r(NULL, "\n", &save))) {
        char hex[64], edge[16];
        long long aslong;
        int buckets, step, guava;
        cr_assert_eq(sscanf(line, "%63s %lld %d %15s %d %d", hex, &aslong, &buckets, edge, &step, &guava), 6);
        jump_case c = {.input = (uint64_t)aslong, .buckets = buckets, .expect = guava};
        cr_assert_eq(unhex(hex, c.key, 16), 16);
        cr_assert_eq(rs_hash(RS_HASH_MURMUR3_128, c.key, 16, 0), aslong);
        int at;
        cr_assert_eq(guava_model(c.input, buckets, &at), guava, "the model disagrees with Guava: %s", line);
        overflows += strcmp(edge, "overflow") == 0 && at == step;
        cr_assert_eq(rs_jump_consistent_hash(c.input, buckets), guava, "%s", line);
        int slot = buckets == 10 ? 0 : buckets == 1000 ? 1 : buckets == 100000 ? 2 : -1;
        if (slot >= 0)
            locate_cases[slot][nlocate[slot]++] = c;
        rows++;
    }
    cr_assert_geq(rows, 70);
    cr_assert_geq(overflows, 30);
    for (int s = 0; s < 3; s++) {
        cr_assert_geq(nlocate[s], 16);
        assert_locate(locate_cases[s], nlocate[s]);
    }
    free(text);
}

/* ---- option checks -------------------------------------------------------- */

/* An empty --key or an empty item in it (an unset $COL) is a usage error
 * in every command that reads data, before anything is written. */
Test(edges, key_with_an_empty_item_is_a_usage_error)
{
    static const char *const specs[] = {"", "1,", ",1", "a,", "a,,b", ","};
    static const char *const cmds[] = {"bucket --nodes 3 -o out", "dedup -o out", "stats --nodes 3"};
    SH_OK("printf 'a,b\\n1,2\\n3,4\\n' > in.csv");
    for (size_t c = 0; c < 3; c++)
        for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) {
            cmd_result r = sh_in_test_dir("\"$RS\" %s --quiet --key '%s' in.csv; echo \"rc=$?\"; ls", cmds[c], specs[i]);
            cr_assert(strstr(r.out, "rc=64"), "%s --key '%s': %s %s", cmds[c], specs[i], r.out, r.err);
            cr_assert(strstr(r.err, "--key: empty column name"), "%s --key '%s': %s", cmds[c], specs[i], r.err);
            cr_assert(!strstr(r.out, "out"), "nothing written: %s", r.out);
            cmd_result_free(&r);
        }
    cmd_result r = sh_in_test_dir("\"$RS\" bucket --quiet --key 'a,' --nodes 3 -o out in.csv");
    cr_assert(strstr(r.err, "empty column name in 'a,' (column 2 of the list)"), "%s", r.err);
    cmd_result_free(&r);
}

/* Without a header a column can only be a number. */
Test(edges, no_header_key_name_says_names_need_a_header)
{
    SH_OK("printf '1,2\\n3,4\\n' > in.csv");
    cmd_result r = sh_in_test_dir("\"$RS\" bucket --quiet --no-header --key name --nodes 3 -o out in.csv");
    cr_assert_eq(r.rc, 64, "%s", r.err);
    cr_assert(strstr(r.err, "--key: 'name' is a column name, and names need a header: with --no-header give 1-based "
                            "column numbers"),
              "%s", r.err);
    cmd_result_free(&r);
    r = sh_in_test_dir("\"$RS\" bucket --quiet --no-header --key 0 --nodes 3 -o out in.csv");
    cr_assert_eq(r.rc, 64, "%s", r.err);
    cr_assert(strstr(r.err, "--key: column numbers start at 1, not '0'"), "%s", r.err);
    cmd_result_free(&r);
    SH_OK("\"$RS\" bucket --quiet --no-header --key 2 --nodes 3 -o out in.csv");
}

/* --help states the --max-record bound as "about --memory / D": D must be
 * what the bound really is at the default --memory 1G and the default ring
 * (docs/bucket.md's 32859476 bytes, 1G / 32.7; the help once said / 16). */
Test(edges, help_states_the_max_record_bound_it_enforces)
{
    cmd_result h = sh_in_test_dir("\"$RS\" bucket --help");
    cr_assert_eq(h.rc, 0, "%s", h.err);
    const char *at = strstr(h.out, "about --memory / ");
    cr_assert(at, "%s", h.out);
    long d = strtol(at + strlen("about --memory / "), NULL, 10);
    cmd_result_free(&h);
    SH_OK("printf 'a,b\\n1,2\\n' > in.csv");
    cmd_result r = sh_in_test_dir("\"$RS\" bucket --quiet --max-record 1G -o out in.csv");
    cr_assert_eq(r.rc, 64, "%s", r.err);
    const char *m = strstr(r.err, "(at most ");
    cr_assert(m, "%s", r.err);
    double bound = (double)strtoll(m + strlen("(at most "), NULL, 10);
    double ratio = 1073741824.0 / bound;
    cr_assert(ratio > d * 0.9 && ratio < d * 1.1, "--help says about --memory / %ld, the bound is --memory / %.1f: %s", d,
              ratio, r.err);
    cmd_result_free(&r);
}

/* A malformed header is not a bad row: --on-bad-row skip or quarantine
 * cannot skip it (there would be no header to match names against or to
 * write), so it stops the run, exit 2, nothing published (DuckDB's
 * data/csv/empty_space_start_value.csv starts this way). */
Test(edges, malformed_header_stops_the_run_whatever_on_bad_row_says)
{
    SH_OK("printf '\"Year\", \"Score\"\\n1968,86\\n' > in.csv");
    static const char *const modes[] = {"fail", "skip", "quarantine=q.tsv"};
    for (size_t i = 0; i < 3; i++) {
        cmd_result r = sh_in_test_dir("\"$RS\" bucket --quiet --nodes 3 --on-bad-row %s -o out in.csv; echo \"rc=$?\"; ls",
                                      modes[i]);
        cr_assert(strstr(r.out, "rc=2"), "%s: %s %s", modes[i], r.out, r.err);
        cr_assert(strstr(r.err, "in.csv: line 1: malformed header: stray quote in unquoted field (field 2)"), "%s: %s",
                  modes[i], r.err);
        cr_assert(!strstr(r.out, "out") && !strstr(r.out, "q.tsv"), "nothing published: %s", r.out);
        cmd_result_free(&r);
    }
}

/* Runs cmd in the test directory; asserts exit 0 and exactly want on stdout. */
static void expect_out(const char *want, const char *cmd)
{
    cmd_result r = sh_in_test_dir("%s", cmd);
    cr_assert_eq(r.rc, 0, "%s: exit %d, stderr: %s", cmd, r.rc, r.err);
    cr_assert_str_eq(r.out, want, "%s: stdout %s", cmd, r.out);
    cmd_result_free(&r);
}

/* No --key means the first column by position, whatever the header calls
 * its columns: a header `id,1` (a headerless numeric export read with a
 * header, DuckDB's test/issue2518.csv) made the default key the column
 * named "1", so every row of this file went to one bucket and dedup kept
 * one of six distinct ids. The manifest says null for the default, so
 * verify, dedup --buckets and plan --from-buckets resolve it the same way;
 * an explicit --key 1 still means the column named "1" (names first). */
Test(edges, default_key_is_the_first_column_whatever_the_header_names)
{
    SH_OK("printf 'id,1\\na,z\\nb,z\\nc,z\\nd,z\\ne,z\\nf,z\\n' > in.csv");
    SH_OK("\"$RS\" bucket --quiet --nodes 7 --compress none -o def in.csv && "
          "\"$RS\" bucket --quiet --nodes 7 --compress none --key id -o byid in.csv && "
          "\"$RS\" bucket --quiet --nodes 7 --compress none --key 1 -o named in.csv");
    expect_out("", "diff -r -x manifest.json def byid");
    expect_out("1\n", "grep -c '\"key\": null' def/manifest.json");
    /* the named column: all six rows share its value */
    expect_out("1\n", "grep -l z named/*.csv | wc -l");
    SH_OK("\"$RS\" verify def && \"$RS\" verify named");
    SH_OK("\"$RS\" dedup --quiet --nodes 7 --compress none -o dd in.csv && "
          "\"$RS\" dedup --quiet --compress none --buckets def -o db");
    expect_out("6\n", "cat dd/*.csv | grep -vc '^id,1$'");
    expect_out("6\n", "cat db/*.csv | grep -vc '^id,1$'");
    expect_out("1\n", "grep -c '\"key\": null' dd/manifest.json");
    SH_OK("\"$RS\" plan --quiet --from-buckets def --new-nodes 8 --emit moved && \"$RS\" verify moved");
}

/* A column number is digits only, with a header as without one: "+1" and
 * " 1" are names (strtol took them for column 1 when a header was given,
 * while --no-header called them names). */
Test(edges, key_number_is_digits_only_with_a_header_too)
{
    SH_OK("printf 'a,b\\n1,2\\n' > in.csv");
    static const char *const specs[] = {"+1", " 1", "b,+2"};
    for (size_t i = 0; i < 3; i++) {
        cmd_result r = sh_in_test_dir("\"$RS\" bucket --quiet --nodes 3 --key '%s' -o out in.csv; echo \"rc=$?\"; ls",
                                      specs[i]);
        cr_assert(strstr(r.out, "rc=64"), "--key '%s': %s %s", specs[i], r.out, r.err);
        cr_assert(strstr(r.err, "--key: no column '"), "--key '%s': %s", specs[i], r.err);
        cr_assert(!strstr(r.out, "out"), "nothing written: %s", r.out);
        cmd_result_free(&r);
    }
    SH_OK("printf '+1,b\\nx,2\\n' > named.csv && \"$RS\" bucket --quiet --nodes 3 --key +1 -o out2 named.csv");
}

/* The quarantine TSV's input column is escaped like its row column: a
 * name holding a tab, LF, CR or backslash keeps the five columns. */
Test(edges, quarantine_escapes_the_input_name)
{
    SH_OK("printf 'id,v\\n1,a\\n2,b\"c\\n' > \"$(printf 'a\\tb\\nc\\rd\\\\e.csv')\"");
    SH_OK("\"$RS\" bucket --quiet --on-bad-row quarantine=q.tsv --nodes 3 -o out a*.csv");
    size_t len;
    char *q = slurp(path_join(test_dir, "q.tsv"), &len);
    cr_assert(q);
    cr_assert_str_eq(q, "input\tline\trecord\treason\trow\n"
                        "a\\tb\\nc\\rd\\\\e.csv\t3\t2\tstray quote in unquoted field"
                        "\t2,b\"c\n");
    free(q);
}

/* A delimiter that cannot delimit says why. */
Test(edges, impossible_delimiters_say_why)
{
    static const struct {
        const char *arg, *msg;
    } cases[] = {
        {"'\"'", "--delimiter: a double quote cannot be the delimiter (it quotes fields)"},
        {"\"$(printf '\\n_')\"", "--delimiter: expected one character (one byte) or 'tab', not '"},
        {"\"$(printf '\\r')\"", "--delimiter: a line end (CR) cannot be the delimiter (it ends records)"},
        {"\"$(printf '\\n')\"", NULL},  /* $(...) drops a trailing LF: tested below */
        {"''", "--delimiter: empty (expected one character or 'tab')"},
        {"';;'", "--delimiter: expected one character (one byte) or 'tab', not ';;' (2 bytes)"},
    };
    SH_OK("printf 'a,b\\n1,2\\n' > in.csv");
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        if (!cases[i].msg)
            continue;
        cmd_result r = sh_in_test_dir("\"$RS\" bucket --quiet --delimiter %s -o out in.csv", cases[i].arg);
        cr_assert_eq(r.rc, 64, "%s: %s", cases[i].arg, r.err);
        cr_assert(strstr(r.err, cases[i].msg), "%s: %s", cases[i].arg, r.err);
        cmd_result_free(&r);
    }
    cmd_result r = sh_in_test_dir("\"$RS\" bucket --quiet --delimiter '\n' -o out in.csv");
    cr_assert_eq(r.rc, 64, "%s", r.err);
    cr_assert(strstr(r.err, "--delimiter: a line end (LF) cannot be the delimiter (it ends records)"), "%s", r.err);
    cmd_result_free(&r);
}

/* ---- messages --------------------------------------------------------------- */

/* Every refresh of the progress line (shown only on a terminal) clears to
 * the end of the line, so a shorter refresh (the last one has no ETA)
 * leaves nothing of a longer one behind. Run under a pseudo-terminal in
 * raw mode (no LF -> CR LF translation). */
Test(edges, progress_refresh_clears_to_end_of_line, .timeout = 120)
{
    SH_OK("printf 'id,v\\n1,a\\n2,b\\n' > in.csv");
    SH_OK("python3 -c \"\nimport os, pty, subprocess, sys, tty\n"
          "m, s = pty.openpty()\ntty.setraw(s)\n"
          "p = subprocess.Popen([sys.argv[1], 'bucket', '--nodes', '3', '-o', 'out', 'in.csv'], "
          "stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=s)\n"
          "os.close(s)\ndata = b''\nwhile True:\n"
          "    try:\n        chunk = os.read(m, 65536)\n    except OSError:\n        break\n"
          "    if not chunk:\n        break\n    data += chunk\n"
          "open('tty.out', 'wb').write(data)\nsys.exit(p.wait())\n\" \"$RS\"");
    size_t len;
    char *t = slurp(path_join(test_dir, "tty.out"), &len);
    cr_assert(t);
    int refreshes = 0;
    for (char *p = memchr(t, '\r', len); p; p = memchr(p + 1, '\r', len - (size_t)(p + 1 - t))) {
        size_t n = strcspn(p + 1, "\r\n");
        cr_assert_geq(n, 3, "%s", t);
        cr_assert(!strncmp(p + 1 + n - 3, "\033[K", 3), "a refresh that does not clear to end of line: %.*s",
                  (int)n, p + 1);
        refreshes++;
    }
    cr_assert_geq(refreshes, 1, "no progress line on a terminal: %s", t);
    free(t);
}

/* A node name of the longest length allowed (1024 bytes) makes a message
 * longer than 1 KB: it keeps its start and its end (the reason after the
 * name) with the middle left out, within one message. (A longer name is
 * refused for its length: test cli/errors_and_exit_codes.) */
Test(edges, long_node_name_message_keeps_the_reason)
{
    SH_OK("python3 -c \"n = 'x' * 1024; open('dup', 'w').write(n + '\\n' + n + '\\n'); "
          "open('w0', 'w').write(n + ' 0\\n')\"");
    static const struct {
        const char *file, *start, *end;
    } cases[] = {
        {"dup", "dup:2: duplicate node name 'xxx", "xxx' (first on line 1)\n"},
        {"w0", "w0:1: weight '0' of node 'xxx", "xxx' is not a positive number\n"},
    };
    for (size_t i = 0; i < 2; i++) {
        cmd_result r = sh_in_test_dir("\"$RS\" ring --nodes-file %s", cases[i].file);
        cr_assert_eq(r.rc, 2, "%s", r.err);
        size_t n = strlen(r.err);
        cr_assert_lt(n, 1100, "one bounded message");
        cr_assert(strstr(r.err, cases[i].start), "%.100s", r.err);
        cr_assert(n > strlen(cases[i].end) && !strcmp(r.err + n - strlen(cases[i].end), cases[i].end), "...%s",
                  r.err + (n > 200 ? n - 200 : 0));
        cr_assert(strstr(r.err, " bytes left out ...] "), "%s", r.err);
        cmd_result_free(&r);
    }
}

/* ---- SIGTERM / SIGINT during a ring build ---------------------------------- */

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Starts `ringshard bucket` in test_dir with the ring build's test pause
 * hook on a FIFO, waits until it is inside the build (no timing: the FIFO
 * opens when it gets there), signals it and returns its exit status;
 * *err_text gets its stderr. */
static int signal_during_ring_build(int sig, char **err_text)
{
    const char *paused = path_join(test_dir, "paused");
    cr_assert_eq(mkfifo(paused, 0600), 0);
    char errpath[4096];
    snprintf(errpath, sizeof errpath, "%s/stderr", test_dir);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        if (chdir(test_dir) != 0)
            _exit(99);
        int fd = open("stderr", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 2);
        setenv("RINGSHARD_TEST_RING_PAUSE", "paused", 1);
        execl(RS_BINARY, RS_BINARY, "bucket", "--quiet", "--nodes", "2000", "--vnodes", "500", "-o", "out", "in.csv",
              (char *)NULL);
        _exit(98);
    }
    /* The hook opens the FIFO for writing: this open returns once the
     * child is inside the build; EOF once it waits there. */
    int fd = open(paused, O_RDONLY);
    cr_assert_geq(fd, 0);
    char c;
    while (read(fd, &c, 1) > 0)
        ;
    close(fd);
    int status;
    kill(pid, sig);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    size_t len;
    *err_text = slurp(errpath, &len);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

Test(edges, sigterm_during_ring_build_stops_it, .timeout = 120)
{
    static const int sigs[] = {SIGTERM, SIGINT};
    SH_OK("printf 'id,v\\n1,a\\n2,b\\n' > in.csv");
    for (int i = 0; i < 2; i++) {
        char *e = NULL;
        int rc = signal_during_ring_build(sigs[i], &e);
        cr_assert_eq(rc, 130, "%s", e);
        cr_assert(e && strstr(e, "ringshard bucket: interrupted while building the ring"), "%s", e);
        cmd_result r = sh_in_test_dir("ls -a; rm -f paused");
        cr_assert(!strstr(r.out, "out"), "nothing published, no temporary: %s", r.out);
        cmd_result_free(&r);
        free(e);
    }
}

/* --memory: tests/test_memory.c (left out under ASan, whose shadow memory
 * makes peak RSS meaningless). */

/* --on-bad-row skip|quarantine skips a record longer than --max-record
 * whole, to its real end: reading resumed at the next LF, inside its
 * quoted field, and lines of the field became rows (fake1,x was written
 * out, fake2,y" quarantined as a second bad record). The rows kept are the
 * records Python's csv module reads, but for the long one; the quarantine
 * holds that one, at its first line. A record longer than a whole batch
 * (--memory 32M: read on in steps, bad_record) and a quoted field never
 * closed (one record to the end, as libcsv sees it) likewise. */
Test(edges, bad_row_recovery_skips_an_over_long_record_whole)
{
    SH_OK("printf 'id,v\\n1,\"%%s\\nfake1,x\\nfake2,y\"\\n2,real\\n' \"$(head -c 200 /dev/zero | tr '\\0' a)\" > mr.csv");
    SH_OK("python3 -c \"import csv; print(*[','.join(r) for r in list(csv.reader(open('mr.csv', newline='')))[1:] "
          "if len(','.join(r)) <= 100], sep='\\n')\" > want && cat want | grep -q real");
    static const char *const modes[] = {"skip", "quarantine=q.tsv"};
    for (size_t i = 0; i < 2; i++) {
        SH_OK("rm -rf d && \"$RS\" bucket --quiet --nodes 3 --max-record 100 --on-bad-row %s --compress none -o d mr.csv "
              "&& cat d/*.csv | grep -v '^id,v$' > got && cmp want got && grep -q '\"rejected\": 1' d/manifest.json",
              modes[i]);
    }
    expect_out("2\t1\trecord longer than the limit (100 bytes)\n", "tail -n +2 q.tsv | cut -f2-4");
    /* longer than a batch: 600 KB of quoted lines */
    SH_OK("python3 -c \"open('huge.csv', 'w').write('id,v\\n1,\\\"' + 'x\\n2,y\\n' * 100000 + '\\\"\\n3,z\\n')\"");
    SH_OK("\"$RS\" bucket --quiet --nodes 3 --memory 32M --on-bad-row quarantine=hq.tsv --compress none -o h huge.csv "
          "&& grep -q '\"rejected\": 1' h/manifest.json");
    expect_out("3,z\n", "cat h/*.csv | grep -v '^id,v$'");
    expect_out("2\t1\n", "tail -n +2 hq.tsv | cut -f2,3");
    /* a quoted field never closed: one bad record to the end */
    SH_OK("printf 'id,v\\n1,a\\n2,\"open\\n3,c\\n4,d\\n' > open.csv");
    SH_OK("\"$RS\" bucket --quiet --nodes 3 --on-bad-row quarantine=oq.tsv --compress none -o o open.csv");
    expect_out("1,a\n", "cat o/*.csv | grep -v '^id,v$'");
    expect_out("3\t2\tunterminated quoted field\n", "tail -n +2 oq.tsv | cut -f2-4");
}

/* Recovery from a bad row ends at the next line end the scanner knows,
 * CR too, quotes followed: in a CR-only file one stray quote swallowed
 * every later row (counted as one rejected row). The same rows for LF,
 * CRLF and CR line ends: those Python's csv module reads, but for the one
 * with a stray quote and the one over --max-record (whose quoted field
 * holds a line end and a fake row). */
Test(edges, bad_row_recovery_ends_at_any_line_end)
{
    static const char *const ends[] = {"\\n", "\\r\\n", "\\r"};
    for (size_t i = 0; i < 3; i++) {
        SH_OK("rm -rf d q.tsv && E='%s' && printf \"id,v${E}1,a${E}2,x\\\"y${E}3,\\\"c${E}c\\\"${E}9,\\\"%%s${E}fake,z\\\"${E}"
              "4,d${E}5,e${E}\" \"$(head -c 150 /dev/zero | tr '\\0' b)\" > in.csv",
              ends[i]);
        SH_OK("\"$RS\" bucket --quiet --nodes 3 --max-record 100 --on-bad-row quarantine=q.tsv --compress none -o d in.csv");
        SH_OK("python3 -c \"import csv, glob\n"
              "want = [tuple(r) for r in list(csv.reader(open('in.csv', newline='')))[1:]\n"
              "        if not any('\\\"' in f for f in r) and len(','.join(r)) <= 100]\n"
              "got = [tuple(r) for f in glob.glob('d/*.csv') for r in list(csv.reader(open(f, newline='')))[1:]]\n"
              "assert len(want) == 4 and sorted(want) == sorted(got), (want, got)\"");
        expect_out("3\t2\n6\t4\n", "tail -n +2 q.tsv | cut -f2,3");
    }
}
