/* Client presets (--compat) against the real clients' answers.
 *
 * fixtures/vectors/clients/<client>.tsv were made by
 * tools/gen/gen_client_vectors.sh from libketama, libmemcached, twemproxy
 * (nutcracker), spymemcached and npm hashring (format:
 * tools/gen/clients/client_vectors.py). For every configuration the preset must
 * give the client's points per server, its whole effective continuum (an
 * MD5 of every point and owner: this fixes the owner of every one of the
 * 2^32 positions), the owners of 100,000 keys (an MD5 of the list, plus the
 * first 256 one by one) and of the special keys (empty, non-ASCII, long). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ringshard/hash.h"
#include "ringshard/ring.h"
#include "support.h"

#define NKEYS 100000
#define NSAMPLE 256

typedef struct {
    uint8_t *bytes;   /* every key, back to back */
    size_t *off;      /* key i is bytes[off[i], off[i + 1]) */
    uint64_t *pos;    /* md5_ketama position of key i */
} keyset;

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static size_t put_utf8(uint8_t *o, uint32_t cp)
{
    if (cp < 0x80)
        return o[0] = (uint8_t)cp, 1;
    if (cp < 0x800)
        return o[0] = (uint8_t)(0xC0 | cp >> 6), o[1] = (uint8_t)(0x80 | (cp & 63)), 2;
    if (cp < 0x10000)
        return o[0] = (uint8_t)(0xE0 | cp >> 12), o[1] = (uint8_t)(0x80 | ((cp >> 6) & 63)),
               o[2] = (uint8_t)(0x80 | (cp & 63)), 3;
    return o[0] = (uint8_t)(0xF0 | cp >> 18), o[1] = (uint8_t)(0x80 | ((cp >> 12) & 63)),
           o[2] = (uint8_t)(0x80 | ((cp >> 6) & 63)), o[3] = (uint8_t)(0x80 | (cp & 63)), 4;
}

/* The keys of client_vectors.py's make_keys(): the same splitmix64 stream. */
static void make_keys(keyset *k)
{
    static const char alpha[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:.-";
    k->bytes = malloc((size_t)NKEYS * 252);
    k->off = malloc((NKEYS + 1) * sizeof *k->off);
    k->pos = malloc(NKEYS * sizeof *k->pos);
    cr_assert(k->bytes && k->off && k->pos);
    uint64_t s = 16;
    size_t n = 0;
    for (int i = 0; i < NKEYS; i++) {
        k->off[i] = n;
        uint64_t r = splitmix(&s);
        switch (i % 4) {
        case 0:
        case 2:
            for (uint64_t c = 0, len = i % 4 ? 200 + r % 51 : 1 + r % 40; c < len; c++)
                k->bytes[n++] = (uint8_t)alpha[splitmix(&s) % 66];
            break;
        case 1:
            for (uint64_t c = 0; c < 1 + r % 12; c++) {
                uint64_t x = splitmix(&s), v = x >> 2;
                uint32_t cp = (uint32_t)(x % 4 == 0   ? 0x21 + v % 94
                                         : x % 4 == 1 ? 0x80 + v % 0x780
                                         : x % 4 == 2 ? 0x800 + v % 0xF000
                                                      : 0x10000 + v % 0x100000);
                if (x % 4 == 2 && cp >= 0xD800)
                    cp += 0x800;
                n += put_utf8(k->bytes + n, cp);
            }
            break;
        default:
            n += (size_t)sprintf((char *)k->bytes + n, "user:%llu", (unsigned long long)(r % 1000000000));
        }
        k->pos[i] = (uint64_t)rs_hash(RS_HASH_MD5_KETAMA, k->bytes + k->off[i], n - k->off[i], 0);
    }
    k->off[NKEYS] = n;
}

static void free_keys(keyset *k)
{
    free(k->bytes);
    free(k->off);
    free(k->pos);
}

static void md5_hex(const char *s, size_t len, char hex[33])
{
    uint8_t d[16];
    rs_md5(s, len, d);
    for (int i = 0; i < 16; i++)
        sprintf(hex + 2 * i, "%02x", d[i]);
}

/* Python's unicode_escape of the special keys: \xHH, \uHHHH, \UHHHHHHHH. */
static size_t unescape(const char *s, size_t len, uint8_t *out)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        int w = s[i] != '\\' ? 0 : s[i + 1] == 'x' ? 2 : s[i + 1] == 'u' ? 4 : s[i + 1] == 'U' ? 8 : 0;
        if (!w) {
            out[n++] = (uint8_t)s[i];
            continue;
        }
        char hex[9] = {0};
        memcpy(hex, s + i + 2, (size_t)w);
        n += put_utf8(out + n, (uint32_t)strtoul(hex, NULL, 16));
        i += 1 + (size_t)w;
    }
    return n;
}

/* Splits line at tabs in place into f[0..max); returns the field count. */
static int fields(char *line, char **f, int max)
{
    int n = 0;
    f[n++] = line;
    for (char *p = line; *p && n < max; p++)
        if (*p == '\t') {
            *p = '\0';
            f[n++] = p + 1;
        }
    return n;
}

/* The node list of a configuration (see client_vectors.py's servers_of);
 * "lines:" is a node file's lines, '|' between them, read by preset c's
 * rules (unix sockets, JavaScript's key order, twemproxy aliases). */
static void config_nodes(rs_compat_id c, const char *spec, const char *weights, rs_nodes *nodes)
{
    rs_error err = {0};
    memset(nodes, 0, sizeof *nodes);
    char name[64];
    const char *w = weights;
    int n = 0;
    if (!strncmp(spec, "lines:", 6)) {
        char *text = strdup(spec + 6);
        cr_assert(text);
        for (char *p = text; *p; p++)
            *p = *p == '|' ? '\n' : *p;
        rs_nodes_syntax syn;
        rs_compat_syntax(c, &syn);
        cr_assert_eq(rs_nodes_parse_syntax(nodes, text, strlen(text), "vectors", &syn, &err), 0, "%s", err.msg);
        free(text);
        return;
    }
    if (!strncmp(spec, "list:", 5)) {
        for (const char *p = spec + 5; *p;) {
            size_t l = strcspn(p, ",");
            snprintf(name, sizeof name, "%.*s", (int)l, p);
            cr_assert_eq(rs_nodes_append(nodes, name, 1, "vectors", &err), 0, "%s", err.msg);
            p += l + (p[l] == ',');
            n++;
        }
    } else {
        int count = atoi(strchr(spec, ':') + 1), ports = !strncmp(spec, "ports:", 6);
        for (int j = 0; j < count; j++) {
            snprintf(name, sizeof name, "127.0.%d.%d:%d", (j + 1) >> 8, (j + 1) & 255, ports ? 21000 + j : 11211);
            cr_assert_eq(rs_nodes_append(nodes, name, 1, "vectors", &err), 0, "%s", err.msg);
            n++;
        }
    }
    if (strcmp(weights, "1") != 0)
        for (int j = 0; j < n; j++) {
            nodes->weights[j] = strtod(w, (char **)&w);
            w += *w == ',';
        }
}

static rs_ring *compat_ring(rs_compat_id c, const rs_nodes *nodes)
{
    rs_ring_opts o;
    rs_error err = {0};
    rs_ring_opts_compat(&o, c);
    rs_ring *r = rs_ring_build(&o, nodes, &err);
    cr_assert(r, "%s", err.msg);
    return r;
}

/* Checks one configuration line (fields f[0..10)) against ring r. */
static void check_config(const char *client, char **f, rs_ring *r, const keyset *k, uint8_t (*special)[256],
                         const size_t *special_len, int nspecial)
{
    const char *id = f[1];
    uint32_t nn = rs_ring_nodes(r)->count, np = rs_ring_npoints(r);
    size_t cap = (size_t)np * 24 + (size_t)NKEYS * 12 + 64;
    char *buf = malloc(cap), hex[33];
    cr_assert(buf);
    if (strcmp(f[4], "-") != 0) {
        uint32_t *count = calloc(nn, sizeof *count);
        for (uint32_t i = 0; i < np; i++)
            count[rs_ring_point_node(r, i)]++;
        const char *p = f[4];
        for (uint32_t j = 0; j < nn; j++) {
            unsigned long want = strtoul(p, (char **)&p, 10);
            p += *p == ',';
            cr_assert_eq(count[j], want, "%s %s: node %u has %u points, the client %lu", client, id, j, count[j],
                         want);
        }
        free(count);
        size_t n = 0;
        for (uint32_t i = 0; i < np; i++)
            n += (size_t)sprintf(buf + n, "%llu %u\n", (unsigned long long)rs_ring_point_pos(r, i),
                                 rs_ring_point_node(r, i));
        md5_hex(buf, n, hex);
        cr_assert_str_eq(hex, f[5], "%s %s: the continuum differs from the client's", client, id);
    }
    /* The sample through rs_ring_locate (hashing each key), then all keys
     * through rs_ring_owner on the positions hashed once. */
    const char *s = f[8];
    for (int i = 0; i < NSAMPLE; i++) {
        unsigned long want = strtoul(s, (char **)&s, 10);
        s += *s == ',';
        uint32_t got = rs_ring_locate(r, k->bytes + k->off[i], k->off[i + 1] - k->off[i]);
        cr_assert_eq(got, want, "%s %s: key %d goes to %u, the client's to %lu", client, id, i, got, want);
    }
    size_t n = 0;
    for (int i = 0; i < NKEYS; i++)
        n += (size_t)sprintf(buf + n, "%u\n", rs_ring_owner(r, k->pos[i]));
    md5_hex(buf, n, hex);
    cr_assert_eq(atoi(f[6]), NKEYS);
    cr_assert_str_eq(hex, f[7], "%s %s: the owners of the %d keys differ from the client's", client, id, NKEYS);
    const char *sp = f[9];
    for (int i = 0; i < nspecial; i++) {
        if (*sp != '-') {
            unsigned long want = strtoul(sp, (char **)&sp, 10);
            uint32_t got = rs_ring_locate(r, special[i], special_len[i]);
            cr_assert_eq(got, want, "%s %s: special key %d goes to %u, the client's to %lu", client, id, i, got,
                         want);
        } else {
            sp++;
        }
        sp += *sp == ',';
    }
    free(buf);
}

/* Every configuration of fixtures/vectors/clients/<client>.tsv; returns
 * how many there were. */
static int check_client(const char *client)
{
    char rel[128];
    snprintf(rel, sizeof rel, "vectors/clients/%s.tsv", client);
    size_t len;
    char *text = slurp(fixture(rel), &len);
    cr_assert(text, "cannot read %s", rel);
    int c = rs_compat_by_name(client);
    cr_assert(c > 0);
    keyset k;
    make_keys(&k);
    uint8_t special[16][256];
    size_t special_len[16];
    int nspecial = 0, configs = 0;
    for (char *line = text, *nl; *line; line = nl + 1) {
        nl = strchr(line, '\n');
        cr_assert(nl);
        *nl = '\0';
        char *f[16];
        int nf = fields(line, f, 16);
        if (!strcmp(f[0], "keys")) {
            cr_assert_eq(atoi(f[1]), NKEYS);
        } else if (!strcmp(f[0], "special")) {
            for (nspecial = 0; nspecial + 1 < nf; nspecial++)
                special_len[nspecial] = unescape(f[nspecial + 1], strlen(f[nspecial + 1]), special[nspecial]);
        } else if (!strcmp(f[0], "config")) {
            cr_assert_eq(nf, 10, "%s: config line with %d fields", client, nf);
            rs_nodes nodes;
            config_nodes((rs_compat_id)c, f[2], f[3], &nodes);
            rs_ring *r = compat_ring((rs_compat_id)c, &nodes);
            check_config(client, f, r, &k, special, special_len, nspecial);
            rs_ring_free(r);
            rs_nodes_free(&nodes);
            configs++;
        }
    }
    cr_assert_eq(nspecial, 8);
    free_keys(&k);
    free(text);
    return configs;
}

/* Server counts 1-100 at least (libmemcached 1.1.4 aborts beyond 100
 * servers, libketama's shared memory holds 117), 200 for the others. */
Test(compat, libmemcached) { cr_assert_geq(check_client("libmemcached"), 100 + 12); }
Test(compat, libmemcached_spy) { cr_assert_geq(check_client("libmemcached-spy"), 100 + 12); }
Test(compat, twemproxy) { cr_assert_geq(check_client("twemproxy"), 200 + 14); }
Test(compat, spymemcached) { cr_assert_geq(check_client("spymemcached"), 200 + 14); }
Test(compat, hashring) { cr_assert_geq(check_client("hashring"), 200 + 14); }
Test(compat, libketama) { cr_assert_geq(check_client("libketama"), 117 + 12); }

/* The 39-label server counts: the presets' float arithmetic against the
 * counts the clients' source gives (25, 47, 50, 100 for libmemcached and
 * twemproxy; 7, 14, 28 for hashring; spymemcached's unweighted locator
 * always 40; libketama's double product gives 39 first at 61). */
static uint32_t points_of_first(rs_compat_id c, int n)
{
    rs_error err = {0};
    rs_nodes nodes;
    cr_assert_eq(rs_nodes_init_count(&nodes, (uint32_t)n, &err), 0);
    rs_ring *r = compat_ring(c, &nodes);
    uint32_t count = 0;
    for (uint32_t i = 0; i < rs_ring_npoints(r); i++)
        count += rs_ring_point_node(r, i) == 0;
    rs_ring_free(r);
    rs_nodes_free(&nodes);
    return count;
}

Test(compat, thirty_nine_labels)
{
    int mc[] = {25, 47, 50, 100}, hr[] = {7, 14, 28};
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(points_of_first(RS_COMPAT_LIBMEMCACHED, mc[i]), 156, "libmemcached n=%d", mc[i]);
        cr_assert_eq(points_of_first(RS_COMPAT_TWEMPROXY, mc[i]), 156, "twemproxy n=%d", mc[i]);
        cr_assert_eq(points_of_first(RS_COMPAT_SPYMEMCACHED, mc[i]), 160, "spymemcached n=%d", mc[i]);
    }
    for (int i = 0; i < 3; i++)
        cr_assert_eq(points_of_first(RS_COMPAT_HASHRING, hr[i]), 156, "hashring n=%d", hr[i]);
    cr_assert_eq(points_of_first(RS_COMPAT_HASHRING, 25), 160);
    cr_assert_eq(points_of_first(RS_COMPAT_LIBKETAMA, 61), 156);
    cr_assert_eq(points_of_first(RS_COMPAT_LIBKETAMA, 25), 160);
}

Test(compat, twemproxy_empty_key_is_zero)
{
    rs_error err = {0};
    rs_nodes nodes;
    cr_assert_eq(rs_nodes_init_count(&nodes, 5, &err), 0);
    rs_ring *t = compat_ring(RS_COMPAT_TWEMPROXY, &nodes), *m = compat_ring(RS_COMPAT_LIBMEMCACHED, &nodes);
    cr_assert_eq(rs_ring_position(t, "", 0), 0);
    cr_assert_eq(rs_ring_locate(t, "", 0), rs_ring_point_node(t, 0));
    cr_assert_eq(rs_ring_position(m, "", 0), (uint64_t)rs_hash(RS_HASH_MD5_KETAMA, "", 0, 0));
    cr_assert_eq(rs_ring_position(t, "a", 1), rs_ring_position(m, "a", 1));
    rs_ring_free(t);
    rs_ring_free(m);
    rs_nodes_free(&nodes);
}

/* The default ring and a plain ketama ring keep their fingerprints (the
 * values before presets existed); a preset's description names it and
 * parses back to the same ring. */
Test(compat, descriptions)
{
    rs_error err = {0};
    rs_nodes nodes;
    rs_ring_opts o;
    cr_assert_eq(rs_nodes_init_count(&nodes, 1000, &err), 0);
    rs_ring_opts_default(&o, RS_SCHEME_RING);
    rs_ring *r = rs_ring_build(&o, &nodes, &err);
    cr_assert_str_eq(rs_ring_fingerprint(r), "1e782fd4f448e3b18e1bef53d517c527");
    cr_assert_null(strstr(rs_ring_description(r), "compat"));
    rs_ring_free(r);
    rs_nodes_free(&nodes);
    cr_assert_eq(rs_nodes_init_count(&nodes, 10, &err), 0);
    rs_ring_opts_default(&o, RS_SCHEME_KETAMA);
    r = rs_ring_build(&o, &nodes, &err);
    cr_assert_str_eq(rs_ring_fingerprint(r), "4e1aab0c3b5dda10d0c3b26c5de855af");
    rs_ring_free(r);
    for (int c = 1; c < RS_COMPAT__COUNT; c++) {
        r = compat_ring((rs_compat_id)c, &nodes);
        char want[64];
        snprintf(want, sizeof want, "\ncompat\t%s\n", rs_compat_get((rs_compat_id)c)->name);
        cr_assert(strstr(rs_ring_description(r), want), "%s", rs_ring_description(r));
        rs_ring_opts o2;
        rs_nodes n2;
        cr_assert_eq(rs_ring_parse_description(rs_ring_description(r), &o2, &n2, &err), 0, "%s", err.msg);
        cr_assert_eq(o2.compat, (rs_compat_id)c);
        rs_ring *r2 = rs_ring_build(&o2, &n2, &err);
        cr_assert_str_eq(rs_ring_fingerprint(r2), rs_ring_fingerprint(r));
        for (int d = 1; d < c; d++) {
            rs_ring *other = compat_ring((rs_compat_id)d, &nodes);
            cr_assert_str_neq(rs_ring_fingerprint(other), rs_ring_fingerprint(r));
            rs_ring_free(other);
        }
        rs_ring_free(r2);
        rs_nodes_free(&n2);
        rs_ring_free(r);
    }
    rs_nodes_free(&nodes);
}

TestSuite(compat_cli, .init = test_dir_setup, .fini = test_dir_teardown);

/* Writes the nodes of spec/weights as a node file "nodes.txt" in test_dir;
 * a "lines:" configuration's lines as they are. */
static void write_nodes(rs_compat_id c, const char *file, const char *spec, const char *weights)
{
    rs_nodes nodes;
    FILE *f = fopen(path_join(test_dir, file), "w");
    cr_assert(f);
    if (!strncmp(spec, "lines:", 6)) {
        for (const char *p = spec + 6; *p; p++)
            fputc(*p == '|' ? '\n' : *p, f);
        fputc('\n', f);
        cr_assert_eq(fclose(f), 0);
        return;
    }
    config_nodes(c, spec, weights, &nodes);
    for (uint32_t j = 0; j < nodes.count; j++)
        fprintf(f, "%s %.17g\n", nodes.names[j], nodes.weights[j]);
    cr_assert_eq(fclose(f), 0);
    rs_nodes_free(&nodes);
}

/* `ringshard locate --compat` on the first 256 keys of one configuration
 * of every client gives the client's servers. */
Test(compat_cli, locate)
{
    static const char *cases[][3] = {
        {"libmemcached", "w25x10", "default:25"},  {"libmemcached-spy", "w50", "ports:50"},
        {"twemproxy", "w200", "default:200"},      {"spymemcached", "c2ab", NULL},
        {"hashring", "w7x3", "ports:7"},           {"libketama", "u47", "default:47"},
        {"libmemcached", "sockmix", NULL},         {"libmemcached-spy", "sock3", NULL},
        {"libmemcached", "ipv6", NULL},            {"hashring", "jskeys10", NULL},
        {"hashring", "jskeys40", NULL},            {"twemproxy", "alias", NULL},
        {"twemproxy", "alias280", NULL},           {"twemproxy", "alias271", NULL},
    };
    keyset k;
    make_keys(&k);
    FILE *kf = fopen(path_join(test_dir, "keys.txt"), "w");
    for (int i = 0; i < NSAMPLE; i++) {
        fwrite(k.bytes + k.off[i], 1, k.off[i + 1] - k.off[i], kf);
        fputc('\n', kf);
    }
    cr_assert_eq(fclose(kf), 0);
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        char rel[128];
        snprintf(rel, sizeof rel, "vectors/clients/%s.tsv", cases[c][0]);
        size_t len;
        char *text = slurp(fixture(rel), &len), *f[16] = {0};
        char want[32];
        snprintf(want, sizeof want, "\nconfig\t%s\t", cases[c][1]);
        char *line = strstr(text, want);
        cr_assert(line, "%s: no %s", cases[c][0], cases[c][1]);
        line++;
        *strchr(line, '\n') = '\0';
        fields(line, f, 16);
        rs_compat_id cid = (rs_compat_id)rs_compat_by_name(cases[c][0]);
        write_nodes(cid, "nodes.txt", f[2], f[3]);
        cmd_result r = sh_in_test_dir("\"$RS\" locate --no-header --compat %s --nodes-file nodes.txt < keys.txt",
                                      cases[c][0]);
        cr_assert_eq(r.rc, 0, "%s", r.err);
        rs_nodes nodes;
        config_nodes(cid, f[2], f[3], &nodes);
        const char *s = f[8], *out = r.out;
        for (int i = 0; i < NSAMPLE; i++) {
            unsigned long owner = strtoul(s, (char **)&s, 10);
            s += *s == ',';
            const char *eol = strchr(out, '\n'), *tab = eol;
            cr_assert(eol);
            while (tab > out && tab[-1] != '\t')
                tab--;
            cr_assert(strlen(nodes.names[owner]) == (size_t)(eol - tab) &&
                          !strncmp(tab, nodes.names[owner], (size_t)(eol - tab)),
                      "%s %s key %d: got %.*s, the client %s", cases[c][0], cases[c][1], i, (int)(eol - tab), tab,
                      nodes.names[owner]);
            out = eol + 1;
        }
        rs_nodes_free(&nodes);
        cmd_result_free(&r);
        free(text);
    }
    free_keys(&k);
}

Test(compat_cli, bad_options)
{
    cmd_result r = sh_in_test_dir("\"$RS\" ring --compat memcache --nodes 3");
    cr_assert_eq(r.rc, 64);
    cr_assert(strstr(r.err, "--compat: unknown client 'memcache'"), "%s", r.err);
    cmd_result_free(&r);
    r = sh_in_test_dir("\"$RS\" ring --compat libmemcached --label '{node}{i}' --nodes 3");
    cr_assert_eq(r.rc, 64);
    cr_assert(strstr(r.err, "excludes --scheme"), "%s", r.err);
    cmd_result_free(&r);
    r = sh_in_test_dir("printf 'a:1 1.5\\nb:2\\n' > n.txt && \"$RS\" ring --compat twemproxy --nodes-file n.txt");
    cr_assert_eq(r.rc, 2);   /* a bad node list, the line named */
    cr_assert(strstr(r.err, "n.txt:1: weight '1.5' of node 'a:1': --compat twemproxy weights are whole numbers"), "%s",
              r.err);
    cmd_result_free(&r);
    SH_OK("\"$RS\" ring --compat hashring --nodes-file n.txt");
    r = sh_in_test_dir("printf '127.0.0.100:11211-long-name\\n' > l.txt && \"$RS\" ring --compat libketama "
                       "--nodes-file l.txt");
    cr_assert_eq(r.rc, 64);
    cr_assert(strstr(r.err, "longer than libketama's 21 bytes"), "%s", r.err);
    cmd_result_free(&r);
    r = sh_in_test_dir("\"$RS\" ring --compat twemproxy --nodes 3");
    cr_assert_eq(r.rc, 0);
    cr_assert(strstr(r.out, "\ncompat       twemproxy: twemproxy (nutcracker)"), "%s", r.out);
    cmd_result_free(&r);
    r = sh_in_test_dir("\"$RS\" ring --compat libmemcached --nodes 3 --description");
    cr_assert_eq(r.rc, 0);
    cr_assert(strstr(r.out, "scheme\tketama\n") && strstr(r.out, "\ncompat\tlibmemcached\n"), "%s", r.out);
    cmd_result_free(&r);
}

/* A memcached resize planned between two preset rings: every one of the
 * 100,000 keys whose libmemcached server changes from 10 to 11 servers
 * (the client's answers: the digests of u10 and u11 are checked against
 * the same owners) lies in a moving arc of the plan, from its old server
 * to its new one, and every key of a moving arc moved; the plan's moved
 * share is the keys' moved fraction within 5 standard deviations. */
Test(compat_cli, plan_resize)
{
    write_nodes(RS_COMPAT_LIBMEMCACHED, "old.txt", "default:10", "1");
    write_nodes(RS_COMPAT_LIBMEMCACHED, "new.txt", "default:11", "1");
    cmd_result r = sh_in_test_dir("\"$RS\" plan --quiet --compat libmemcached --old-nodes-file old.txt "
                                  "--new-nodes-file new.txt --arcs arcs.tsv");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cmd_result_free(&r);
    size_t len;
    char *arcs = slurp(path_join(test_dir, "arcs.tsv"), &len);
    cr_assert(arcs);
    keyset k;
    make_keys(&k);
    rs_nodes a, b;
    config_nodes(RS_COMPAT_LIBMEMCACHED, "default:10", "1", &a);
    config_nodes(RS_COMPAT_LIBMEMCACHED, "default:11", "1", &b);
    rs_ring *ra = compat_ring(RS_COMPAT_LIBMEMCACHED, &a), *rb = compat_ring(RS_COMPAT_LIBMEMCACHED, &b);
    /* The owners are the client's: the same digests as the vectors. */
    char *text = slurp(fixture("vectors/clients/libmemcached.tsv"), &len);
    for (int side = 0; side < 2; side++) {
        char *buf = malloc((size_t)NKEYS * 4), hex[33], want[32];
        size_t n = 0;
        for (int i = 0; i < NKEYS; i++)
            n += (size_t)sprintf(buf + n, "%u\n", rs_ring_owner(side ? rb : ra, k.pos[i]));
        md5_hex(buf, n, hex);
        snprintf(want, sizeof want, "\nconfig\tu%d\t", side ? 11 : 10);
        char *line = strstr(text, want), *f[16];
        cr_assert(line);
        line = strndup(line + 1, (size_t)(strchr(line + 1, '\n') - line - 1));
        fields(line, f, 16);
        cr_assert_str_eq(hex, f[7]);
        free(line);
        free(buf);
    }
    /* Arcs: start end from to weight share, [start, end). */
    uint64_t starts[4096], ends[4096];
    char froms[4096][24], tos[4096][24];
    int na = 0;
    double share = 0;
    for (char *line = strchr(arcs, '\n') + 1; *line && na < 4096; line = strchr(line, '\n') + 1) {
        unsigned long long s, e;
        double w, sh;
        cr_assert_eq(sscanf(line, "%llu\t%llu\t%23s\t%23s\t%lf\t%lf", &s, &e, froms[na], tos[na], &w, &sh), 6);
        starts[na] = s, ends[na] = e, share += sh;
        na++;
    }
    int moved = 0;
    for (int i = 0; i < NKEYS; i++) {
        uint32_t o = rs_ring_owner(ra, k.pos[i]), nw = rs_ring_owner(rb, k.pos[i]);
        int in = -1;
        for (int j = 0; j < na && in < 0; j++)
            if (k.pos[i] >= starts[j] && k.pos[i] < ends[j])
                in = j;
        if (strcmp(a.names[o], b.names[nw]) != 0) {
            moved++;
            cr_assert(in >= 0, "key %d moved %s -> %s outside every arc", i, a.names[o], b.names[nw]);
            cr_assert_str_eq(froms[in], a.names[o]);
            cr_assert_str_eq(tos[in], b.names[nw]);
        } else {
            cr_assert(in < 0, "key %d stayed on %s inside a moving arc", i, a.names[o]);
        }
    }
    double frac = (double)moved / NKEYS, sd = sqrt(share * (1 - share) / NKEYS);
    cr_assert(frac > share - 5 * sd && frac < share + 5 * sd, "moved %f of the keys, the plan %f", frac, share);
    cr_assert(share > 0.05 && share < 0.15);
    free(text);
    free(arcs);
    rs_ring_free(ra);
    rs_ring_free(rb);
    rs_nodes_free(&a);
    rs_nodes_free(&b);
    free_keys(&k);
}

/* A twemproxy alias is an "alias" line of the description: it parses back
 * to the alias (the same ring), and the same name as host:port is another
 * ring (another fingerprint). */
Test(compat, alias_descriptions)
{
    rs_error err = {0};
    rs_nodes a, b, back;
    rs_nodes_syntax syn;
    rs_compat_syntax(RS_COMPAT_TWEMPROXY, &syn);
    const char *text = "10.0.0.1:11211:1 cache-a:11211\n- 10.0.0.2:11211:2 cache-b\n";
    cr_assert_eq(rs_nodes_parse_syntax(&a, text, strlen(text), "t", &syn, &err), 0, "%s", err.msg);
    cr_assert_eq(a.count, 2);
    cr_assert_str_eq(a.names[0], "cache-a:11211");
    cr_assert(a.alias[0] && a.alias[1]);
    cr_assert_eq(a.weights[1], 2);
    cr_assert_eq(rs_nodes_parse(&b, "cache-a:11211\ncache-b 2\n", 24, "t", &err), 0, "%s", err.msg);
    cr_assert(!b.alias[0]);
    rs_ring *ra = compat_ring(RS_COMPAT_TWEMPROXY, &a), *rb = compat_ring(RS_COMPAT_TWEMPROXY, &b);
    cr_assert(strstr(rs_ring_description(ra), "\nalias\t1\tup\tcache-a:11211\n"), "%s", rs_ring_description(ra));
    cr_assert_str_neq(rs_ring_fingerprint(ra), rs_ring_fingerprint(rb));
    rs_ring_opts o;
    cr_assert_eq(rs_ring_parse_description(rs_ring_description(ra), &o, &back, &err), 0, "%s", err.msg);
    cr_assert(back.alias[0] && back.alias[1]);
    rs_ring *rc = rs_ring_build(&o, &back, &err);
    cr_assert(rc, "%s", err.msg);
    cr_assert_str_eq(rs_ring_fingerprint(rc), rs_ring_fingerprint(ra));
    rs_ring_free(ra);
    rs_ring_free(rb);
    rs_ring_free(rc);
    rs_nodes_free(&a);
    rs_nodes_free(&b);
    rs_nodes_free(&back);
}

/* What a preset's node file may not hold: the message names the file and
 * the line, and a weight as written. */
Test(compat_cli, node_file_rules)
{
    static const char *cases[][4] = {
        {"libketama", "a:1 1\na:2 5000000000\n", "nodes.txt:2: weight '5000000000' of node 'a:2'", "4294967295"},
        {"libmemcached", "b:1 2.5\n", "nodes.txt:1: weight '2.5' of node 'b:1'", "whole numbers"},
        {"libmemcached", "10.0.0.1 1\n2001:db8::1 1\n", "nodes.txt:2: node '2001:db8::1' is ambiguous", "2001:db8::1:11211"},
        {"libmemcached-spy", "::11211\n", "nodes.txt:1: node '::11211' is ambiguous", "IPv6"},
        {"twemproxy", "- 10.0.0.1 1\n", "nodes.txt:1: a line starting with '-'", "host:port:weight"},
        {"twemproxy", "- 10.0.0.1:11211:4294967296 x\n", "nodes.txt:1: weight '4294967296' of node 'x'", "4294967295"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        FILE *f = fopen(path_join(test_dir, "nodes.txt"), "w");
        fputs(cases[c][1], f);
        cr_assert_eq(fclose(f), 0);
        cmd_result r = sh_in_test_dir("\"$RS\" ring --compat %s --nodes-file nodes.txt", cases[c][0]);
        cr_assert_eq(r.rc, 2, "case %zu: %d %s", c, r.rc, r.err);
        cr_assert(strstr(r.err, cases[c][2]) && strstr(r.err, cases[c][3]), "case %zu: %s", c, r.err);
        cmd_result_free(&r);
    }
    /* the same names are fine where they are unambiguous: spelled with
     * their port, or under a preset that hashes names as written */
    FILE *f = fopen(path_join(test_dir, "nodes.txt"), "w");
    fputs("2001:db8::1:11211 1\n:::11211 1\n/tmp/a.sock 1\n", f);
    cr_assert_eq(fclose(f), 0);
    cmd_result r = sh_in_test_dir("\"$RS\" ring --compat libmemcached --nodes-file nodes.txt >/dev/null && "
                                  "\"$RS\" ring --compat hashring --nodes-file nodes.txt >/dev/null");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cmd_result_free(&r);
}
