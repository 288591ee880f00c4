/* What a bucket directory's manifest says its files are made with, and
 * the one check of a command line against it (dataset.h: rs_shaping_*,
 * rs_manifest_ring).
 *
 * Why here and not with the jobs: what shapes a file (the key and how it
 * is joined, the delimiter, the header, the codec and level, keys only,
 * the ring) is what a reader trusts a directory's files to hold. An
 * append that wrote with other options would leave a directory whose
 * manifest lies about some of its files; a reader that trusted a ring
 * whose description does not give its fingerprint would place rows by a
 * ring nobody wrote. So the comparison, its message and the ring a
 * manifest describes have one owner, whoever reads or appends. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ringshard/dataset.h"
#include "ringshard/deflate.h"
#include "ringshard/filename.h"
#include "rs_config.h"

void rs_manifest_shape(rs_manifest *m, const char *kind, const char *desc, const char *fp, const rs_shaping *s,
                       const char *header_line)
{
    memset(m, 0, sizeof *m);
    m->schema = 1;
    m->kind = (char *)kind;
    m->tool_version = RS_VERSION;
    m->ring_description = (char *)desc;
    m->ring_fingerprint = (char *)fp;
    m->key = (char *)s->key;   /* NULL, the default: null in the manifest (column 1 by position) */
    m->key_sep = s->key_sep;
    m->delimiter = s->delimiter;
    m->header = s->header != 0;   /* the option: with empty inputs there is no header line */
    m->header_line = (char *)header_line;
    m->compress = s->compress;
    m->level = s->level;
    m->keys_only = s->keys_only;
}

void rs_shaping_of_manifest(const rs_manifest *m, rs_shaping *s)
{
    s->key = m->key;
    s->key_sep = m->key_sep ? m->key_sep : '|';
    s->delimiter = m->delimiter;
    s->header = m->header;
    s->compress = m->compress;
    s->level = m->level;
    s->keys_only = m->keys_only;
}

/* A delimiter as a message shows it: 'x', tab, or \xNN. */
static void show_delim(char c, char out[8])
{
    if (c == '\t')
        snprintf(out, 8, "tab");
    else if ((unsigned char)c < 0x20 || (unsigned char)c >= 0x7f)
        snprintf(out, 8, "\\x%02x", (unsigned char)c);
    else
        snprintf(out, 8, "'%c'", c);
}

static int mismatch(const char *mpath, rs_error *err, const char *opt, const char *here, const char *there)
{
    return rs_error_set(err, RS_EXIT_USAGE, "%s: %s here, %s says %s: an append must write files as the directory's "
                        "(leave the option out to take the directory's)",
                        opt, here, mpath, there);
}

int rs_shaping_check(const rs_manifest *m, const char *mpath, const rs_shaping *here, unsigned given, rs_error *err)
{
    rs_shaping d;
    rs_shaping_of_manifest(m, &d);
    char a[300], b[300];
    if ((given & RS_GIVEN_KEY) && ((here->key == NULL) != (d.key == NULL) || (here->key && strcmp(here->key, d.key)))) {
        snprintf(a, sizeof a, here->key ? "'%.280s'" : "no --key (column 1)", here->key);
        snprintf(b, sizeof b, d.key ? "'%.280s'" : "no --key (column 1)", d.key);
        return mismatch(mpath, err, "--key", a, b);
    }
    if ((given & RS_GIVEN_KEY_SEP) && here->key_sep != d.key_sep) {
        show_delim(here->key_sep, a);
        show_delim(d.key_sep, b);
        return mismatch(mpath, err, "--key-sep", a, b);
    }
    if ((given & RS_GIVEN_DELIMITER) && here->delimiter != d.delimiter) {
        show_delim(here->delimiter, a);
        show_delim(d.delimiter, b);
        return mismatch(mpath, err, "--delimiter", a, b);
    }
    if ((given & RS_GIVEN_HEADER) && !here->header != !d.header)
        return mismatch(mpath, err, here->header ? "--header" : "--no-header", here->header ? "a header" : "no header",
                        d.header ? "a header" : "no header");
    if ((given & RS_GIVEN_COMPRESS) && here->compress != d.compress)
        return mismatch(mpath, err, "--compress", rs_compress_name(here->compress), rs_compress_name(d.compress));
    if ((given & RS_GIVEN_LEVEL) && d.compress != RS_COMPRESS_NONE && here->level != d.level) {
        snprintf(a, sizeof a, "%d", here->level);
        snprintf(b, sizeof b, "%d", d.level);
        return mismatch(mpath, err, "--level", a, b);
    }
    if ((given & RS_GIVEN_KEYS_ONLY) && !here->keys_only != !d.keys_only)
        return mismatch(mpath, err, "--keys-only", here->keys_only ? "keys only" : "whole rows",
                        d.keys_only ? "keys only" : "whole rows");
    return 0;
}

rs_ring *rs_ring_of_description(const char *desc, const char *fp, const char *what, char *why, size_t whylen,
                                rs_ring_opts *ro, rs_nodes *nodes, rs_error *err)
{
    rs_ring_opts o;
    rs_nodes own = {0}, *n = nodes ? nodes : &own;
    if (why && whylen)
        why[0] = 0;
    if (!desc)
        return rs_error_set(err, RS_EXIT_DATA, "the manifest has no %s description", what), NULL;
    rs_ring *r = rs_ring_parse_description(desc, &o, n, err) == 0 ? rs_ring_build(&o, n, err) : NULL;
    if (!r && (err->code == RS_EXIT_USAGE || err->code == RS_EXIT_DATA)) {
        /* a description a manifest holds that does not make a ring is damage, not a bad command line */
        char head[160];
        snprintf(head, sizeof head, "the manifest's %s description does not make a ring (damaged?): ", what);
        rs_error_restate(err, RS_EXIT_DATA, head, "");
    }
    if (!nodes)
        rs_nodes_free(&own);
    if (ro)
        *ro = o;
    if (r && fp && strcmp(rs_ring_fingerprint(r), fp) != 0 && why && whylen)
        snprintf(why, whylen, "the %s description has fingerprint %s, the manifest says %s", what,
                 rs_ring_fingerprint(r), fp);
    return r;
}

rs_ring *rs_manifest_ring(const rs_manifest *m, const char *mpath, rs_ring_opts *ro, rs_nodes *nodes, rs_error *err)
{
    char why[200];
    rs_ring *r = rs_ring_of_description(m->ring_description, m->ring_fingerprint, "ring", why, sizeof why, ro, nodes,
                                        err);
    if (!r && err->code == RS_EXIT_DATA) {   /* naming the manifest */
        char head[PATH_MAX + 8];
        snprintf(head, sizeof head, "%s: ", mpath);
        rs_error_restate(err, RS_EXIT_DATA, head, "");
    }
    if (r && why[0]) {
        rs_ring_free(r);
        if (nodes)
            rs_nodes_free(nodes);
        return rs_error_set(err, RS_EXIT_DATA, "%s: %s", mpath, why), NULL;
    }
    return r;
}

/* Where two ring descriptions first differ: the option that makes that
 * line (--vnodes for "vnodes\t200", the node list for a "node" line) and
 * both lines' values, tabs shown as spaces. */
static void ring_difference(const char *a, const char *b, char *opt, char *va, char *vb, size_t n)
{
    while (*a && *a == *b) {  /* to the start of the first line that differs */
        const char *na = strchr(a, '\n'), *nb = strchr(b, '\n');
        size_t la = na ? (size_t)(na - a) : strlen(a), lb = nb ? (size_t)(nb - b) : strlen(b);
        if (la != lb || strncmp(a, b, la) != 0 || !na || !nb)
            break;
        a = na + 1, b = nb + 1;
    }
    size_t ka = strcspn(a, "\t\n"), kb = strcspn(b, "\t\n");
    int same_key = ka == kb && strncmp(a, b, ka) == 0 && a[ka] == '\t';
    if (same_key && ka == 4 && strncmp(a, "node", 4) == 0)
        snprintf(opt, n, "the node list (--nodes, --nodes-file, --down): a node");
    else if (same_key)
        snprintf(opt, n, "--%.*s", (int)ka, a);
    else
        snprintf(opt, n, "the ring options");
    const char *from[2] = {same_key ? a + ka + 1 : a, same_key ? b + kb + 1 : b};
    char *to[2] = {va, vb};
    for (int k = 0; k < 2; k++) {
        size_t len = strcspn(from[k], "\n");
        snprintf(to[k], n, "'%.*s'", (int)(len < n - 3 ? len : n - 3), from[k]);
        for (char *p = to[k]; *p; p++)
            *p = *p == '\t' ? ' ' : *p;
    }
}

int rs_shaping_check_ring(const rs_manifest *m, const char *mpath, const rs_ring *given, rs_error *err)
{
    if (strcmp(rs_ring_fingerprint(given), m->ring_fingerprint) == 0)
        return 0;
    char opt[80], here[80], there[80];
    ring_difference(rs_ring_description(given), m->ring_description, opt, here, there, sizeof here);
    return rs_error_set(err, RS_EXIT_USAGE, "%s: %s here, %s says %s (the ring's fingerprint %s here, %s "
                        "there): an append must write files as the directory's (leave the ring options out "
                        "to take the directory's ring)",
                        opt, here, mpath, there, rs_ring_fingerprint(given), m->ring_fingerprint);
}
