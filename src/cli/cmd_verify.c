/* ringshard verify: proves that a bucket directory (bucket) or a move
 * directory (plan --emit) holds exactly what its manifest says, placed by
 * the manifest's ring(s). */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli/cli.h"
#include "cli/cluster.h"
#include "ringshard/bucketdir.h"

static const char verify_help[] =
    "Usage: ringshard verify [OPTIONS] DIR\n"
    "Rescans a bucket directory (ringshard bucket) or a move directory\n"
    "(ringshard plan --emit) in parallel and checks, against DIR/manifest.json:\n"
    "  - the ring descriptions match their fingerprints;\n"
    "  - no listed file is missing and no other file is present;\n"
    "  - every file has the manifest's header;\n"
    "  - every row sits where the ring puts it: in a bucket directory, in the\n"
    "    file of the node the ring assigns; in a move directory, in the file of\n"
    "    the pair (old ring's owner, new ring's owner);\n"
    "  - every file's rows, bytes, CRC-32 of the data and size match the manifest,\n"
    "    and the totals add up.\n"
    "Exit 0 when everything holds; 3 with one line per difference otherwise.\n\n"
    "  -j, --threads N   worker threads (default: $OMP_NUM_THREADS, else all cores)\n"
    "  --memory SIZE     bound on buffers (default 1G)\n"
    "  --zlib            use zlib instead of ISA-L for gzip\n"
    "  --quiet           print only the differences\n"
    "  --producers N     at most N files read at once (default 0: automatic; see bucket)\n"
    "  --max-report N    differences printed per kind (default 20; all are counted)\n"
    "  -h, --help        this help\n";

enum { OPT_MAX_REPORT = RS_OPT__FIRST_COMMAND };

typedef struct {
    unsigned long long max_report;
    uint64_t differences;
    uint64_t printed;
    const char *dir;
} report;

static void diff_line(report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void diff_line(report *r, const char *fmt, ...)
{
    r->differences++;
    if (r->printed >= r->max_report * 8)
        return;
    r->printed++;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stdout, "DIFF %s: ", r->dir);
    vfprintf(stdout, fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
}

typedef struct {
    uint64_t *wrong;  /* [ninputs]: rows placed elsewhere */
    char pad[64];
} vcounts;

typedef struct {
    const rs_ring *ring, *new_ring;
    const uint32_t *want;      /* [ninputs] buckets: node; moves: from */
    const uint32_t *want_to;   /* [ninputs] moves: to (new ring index) */
    vcounts *vc;
} vctx;

static uint32_t route_verify(void *vc, int tid, uint32_t input, const char *key, size_t keylen, const char *row,
                             size_t rowlen)
{
    vctx *c = vc;
    (void)row, (void)rowlen;
    uint64_t pos = rs_ring_position(c->ring, key, keylen);
    int ok = rs_ring_owner(c->ring, pos) == c->want[input];
    if (ok && c->new_ring)
        ok = rs_ring_owner(c->new_ring, pos) == c->want_to[input];
    if (!ok)
        c->vc[tid].wrong[input]++;
    return RS_ROUTE_DROP;
}

static rs_ring *ring_from(const char *desc, const char *fp, const char *what, report *rep, rs_error *err)
{
    rs_ring_opts o;
    rs_nodes nodes;
    if (rs_ring_parse_description(desc, &o, &nodes, err) != 0)
        return NULL;
    rs_ring *r = rs_ring_build(&o, &nodes, err);
    rs_nodes_free(&nodes);
    if (r && strcmp(rs_ring_fingerprint(r), fp) != 0)
        diff_line(rep, "manifest: the %s description has fingerprint %s, the manifest says %s", what,
                  rs_ring_fingerprint(r), fp);
    return r;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Runs the pipeline over inputs[idx[0..n)]; fills st and the wrong counts. */
static int scan(rs_pipeline_opts *po, const rs_bucketdir *bd, const size_t *idx, size_t n, vctx *c, int T,
                rs_input_stats *st, uint64_t *wrong, char **header, rs_error *err)
{
    const char **in = NULL, **names = NULL;
    uint32_t *want = malloc((n ? n : 1) * sizeof *want), *want_to = malloc((n ? n : 1) * sizeof *want_to);
    if (!want || !want_to || rs_bucketdir_inputs(bd, idx, n, po, &names, &in, err) != 0) {
        free(want);
        free(want_to);
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    }
    for (size_t k = 0; k < n; k++) {
        want[k] = c->want[idx[k]];
        want_to[k] = c->want_to ? c->want_to[idx[k]] : 0;
    }
    vctx sub = {c->ring, c->new_ring, want, c->want_to ? want_to : NULL, c->vc};
    for (int t = 0; t < T; t++)
        memset(c->vc[t].wrong, 0, (n ? n : 1) * sizeof(uint64_t));
    po->route_ctx = &sub;
    rs_pipeline_result res = {0};
    int rc = rs_cluster_pipeline_run(po, &res, err);
    if (rc == 0) {
        for (size_t k = 0; k < n; k++) {
            st[idx[k]] = res.input[k];
            st[idx[k]].path = bd->paths[idx[k]];
            for (int t = 0; t < T; t++)
                wrong[idx[k]] += c->vc[t].wrong[k];
        }
        free(*header);
        *header = res.header ? strdup(res.header) : NULL;
    }
    rs_pipeline_result_free(&res);
    free(in);
    free(names);
    free(want);
    free(want_to);
    return rc;
}

int rs_cmd_verify(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"threads", required_argument, 0, RS_OPT_THREADS},
        {"memory", required_argument, 0, RS_OPT_MEMORY},
        {"zlib", no_argument, 0, RS_OPT_ZLIB},
        {"quiet", no_argument, 0, RS_OPT_QUIET},
        {"producers", required_argument, 0, RS_OPT_PRODUCERS},
        {"max-report", required_argument, 0, OPT_MAX_REPORT},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    rs_pipeline_opts po;
    rs_cli_input_defaults(&po);
    rs_error err = {0};
    report rep = {20, 0, 0, NULL};
    int c, r;
    optind = 1;
    while ((c = getopt_long(argc, argv, "hj:", longopts, NULL)) != -1) {
        if ((r = rs_cli_input_option(&po, c, optarg, &err)) != 0) {
            if (r < 0)
                return rs_cli_fail("verify", &err);
            continue;
        }
        switch (c) {
        case OPT_MAX_REPORT:
            if (rs_cli_uint("--max-report", optarg, 1, UINT32_MAX, &rep.max_report, &err) != 0)
                return rs_cli_fail("verify", &err);
            break;
        case 'h': fputs(verify_help, stdout); return 0;
        default: return rs_cli_usage_error("verify", "bad option");
        }
    }
    if (optind + 1 != argc)
        return rs_cli_usage_error("verify", "expected one directory");
    const char *dir = argv[optind];
    rep.dir = dir;
    int quiet = po.progress < 0;

    rs_bucketdir bd = {0};
    rs_ring *ring = NULL, *new_ring = NULL;
    char **present = NULL, *header = NULL;
    size_t npresent = 0, *idx = NULL, nidx = 0;
    uint32_t *want = NULL, *want_to = NULL;
    rs_input_stats *st = NULL;
    uint64_t *wrong = NULL;
    vcounts *vc = NULL;
    int rc = 0, T = 0;
    /* DIR is opened once, and everything is read through that descriptor:
     * a replacement of DIR meanwhile cannot mix two generations */
    if (rs_bucketdir_open(&bd, dir, &err) != 0)
        goto out;
    int moves = strcmp(bd.m.kind, "moves") == 0;

    /* rings */
    if (!(ring = ring_from(bd.m.ring_description, bd.m.ring_fingerprint, moves ? "old ring" : "ring", &rep, &err)))
        goto out;
    if (moves && !(new_ring = ring_from(bd.m.new_ring_description, bd.m.new_ring_fingerprint, "new ring", &rep, &err)))
        goto out;

    /* the files: listed vs present */
    int lfd = dup(bd.fd);
    DIR *dh = lfd >= 0 ? fdopendir(lfd) : NULL;
    if (!dh) {
        rs_error_set(&err, RS_EXIT_IO, "%s: cannot list: %s", dir, strerror(errno));
        if (lfd >= 0)
            close(lfd);
        goto out;
    }
    size_t pcap = 0;
    struct dirent *de;
    while ((de = readdir(dh))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || !strcmp(de->d_name, "manifest.json"))
            continue;
        if (npresent == pcap) {
            pcap = pcap ? 2 * pcap : 256;
            char **np = realloc(present, pcap * sizeof *np);
            if (!np) {
                closedir(dh);
                rs_error_set(&err, RS_EXIT_IO, "out of memory");
                goto out;
            }
            present = np;
        }
        if (!(present[npresent++] = strdup(de->d_name))) {
            closedir(dh);
            rs_error_set(&err, RS_EXIT_IO, "out of memory");
            goto out;
        }
    }
    closedir(dh);
    qsort(present, npresent, sizeof *present, cmp_str);
    size_t nf = bd.m.nfiles;
    want = calloc(nf + 1, sizeof *want);
    want_to = calloc(nf + 1, sizeof *want_to);
    idx = calloc(nf + 1, sizeof *idx);
    st = calloc(nf + 1, sizeof *st);
    wrong = calloc(nf + 1, sizeof *wrong);
    uint8_t *listed = calloc(npresent + 1, 1);
    if (!want || !want_to || !idx || !st || !wrong || !listed) {
        free(listed);
        rs_error_set(&err, RS_EXIT_IO, "out of memory");
        goto out;
    }
    const rs_nodes *on = rs_ring_nodes(ring), *nn = new_ring ? rs_ring_nodes(new_ring) : NULL;
    uint64_t sum_rows = 0, sum_bytes = 0;
    for (size_t i = 0; i < nf; i++) {
        const rs_manifest_file *f = &bd.m.files[i];
        sum_rows += f->rows;
        sum_bytes += f->bytes;
        for (size_t q = 0; q < i; q++)
            if (!strcmp(bd.m.files[q].file, f->file)) {
                diff_line(&rep, "manifest: file %s is listed twice", f->file);
                break;
            }
        char **hit = bsearch(&f->file, present, npresent, sizeof *present, cmp_str);
        if (hit)
            listed[hit - present] = 1;
        int usable = 1;
        if (moves) {
            int64_t a = rs_nodes_find(on, f->from), b = rs_nodes_find(nn, f->to);
            if (a < 0 || b < 0) {
                diff_line(&rep, "%s: moves %s -> %s, but %s is not a node of the %s ring", f->file, f->from, f->to,
                          a < 0 ? f->from : f->to, a < 0 ? "old" : "new");
                usable = 0;
            } else {
                want[i] = (uint32_t)a;
                want_to[i] = (uint32_t)b;
            }
        } else {
            int64_t a = rs_nodes_find(on, f->node);
            if (a < 0) {
                diff_line(&rep, "%s: node %s is not a node of the ring", f->file, f->node);
                usable = 0;
            } else {
                want[i] = (uint32_t)a;
            }
        }
        struct stat sb;
        if (!hit || fstatat(bd.fd, f->file, &sb, 0) != 0 || !S_ISREG(sb.st_mode)) {
            diff_line(&rep, "%s: missing (listed in the manifest with %llu rows)", f->file,
                      (unsigned long long)f->rows);
            continue;
        }
        if ((uint64_t)sb.st_size != f->file_bytes)
            diff_line(&rep, "%s: %llu bytes on disk, the manifest says %llu", f->file, (unsigned long long)sb.st_size,
                      (unsigned long long)f->file_bytes);
        if (usable)
            idx[nidx++] = i;
    }
    for (size_t k = 0; k < npresent; k++)
        if (!listed[k])
            diff_line(&rep, "%s: extra file, not in the manifest", present[k]);
    free(listed);
    /* (keys-only bucket manifests have carried the input bytes in totals.bytes: not checked there) */
    if (sum_rows != bd.m.rows || (!bd.m.keys_only && sum_bytes != bd.m.bytes))
        diff_line(&rep, "manifest: files add up to %llu rows and %llu bytes, totals say %llu and %llu",
                  (unsigned long long)sum_rows, (unsigned long long)sum_bytes, (unsigned long long)bd.m.rows,
                  (unsigned long long)bd.m.bytes);

    /* the rows */
    po.header = bd.m.header;
    po.dialect.delim = bd.m.delimiter;
    po.key = bd.m.keys_only ? "1" : bd.m.key;
    po.input_crc = 1;
    po.ndest = 1;
    po.route = route_verify;
    T = rs_pipeline_threads(&po);
    vc = calloc((size_t)T, sizeof *vc);
    if (!vc) {
        rs_error_set(&err, RS_EXIT_IO, "out of memory");
        goto out;
    }
    for (int t = 0; t < T; t++)
        if (!(vc[t].wrong = calloc(nf + 1, sizeof(uint64_t)))) {
            rs_error_set(&err, RS_EXIT_IO, "out of memory");
            goto out;
        }
    vctx ctx = {ring, new_ring, want, moves ? want_to : NULL, vc};
    char *dummy[1] = {(char *)"-"};
    if (rs_cli_input_finish(&po, 1, dummy, 0, &err) < 0)
        goto out;
    uint8_t *scanned = calloc(nf + 1, 1);
    if (!scanned) {
        rs_error_set(&err, RS_EXIT_IO, "out of memory");
        goto out;
    }
    int check_header = bd.m.header && bd.m.header_line && !bd.m.keys_only;
    if (nidx && scan(&po, &bd, idx, nidx, &ctx, T, st, wrong, &header, &err) == 0) {
        for (size_t k = 0; k < nidx; k++)
            scanned[idx[k]] = 1;
        if (check_header && (!header || strcmp(header, bd.m.header_line) != 0))
            diff_line(&rep, "header: the files start with '%s', the manifest says '%s'", header ? header : "",
                      bd.m.header_line);
    } else if (nidx && err.code != RS_EXIT_DATA && err.code != RS_EXIT_USAGE) {
        free(scanned);
        goto out;
    } else if (nidx) {
        /* One file is bad: scan them one by one to say which. */
        rs_error_clear(&err);
        po.progress = 0;
        for (size_t k = 0; k < nidx; k++) {
            size_t one = idx[k];
            rs_error e1 = {0};
            if (scan(&po, &bd, &one, 1, &ctx, T, st, wrong, &header, &e1) == 0) {
                scanned[one] = 1;
                if (check_header && st[one].rows + st[one].blank_lines > 0 &&
                    (!header || strcmp(header, bd.m.header_line) != 0))
                    diff_line(&rep, "%s: header '%s', the manifest says '%s'", bd.m.files[one].file,
                              header ? header : "", bd.m.header_line);
            }
            else if (e1.code == RS_EXIT_DATA || e1.code == RS_EXIT_USAGE)
                diff_line(&rep, "%s: unreadable: %s", bd.m.files[one].file, e1.msg);
            else {
                err = e1;
                free(scanned);
                goto out;
            }
        }
    }
    uint64_t rows = 0, bytes = 0, wrong_total = 0;
    for (size_t i = 0; i < nf; i++) {
        if (!scanned[i])
            continue;
        const rs_manifest_file *f = &bd.m.files[i];
        const rs_input_stats *s = &st[i];
        rows += s->rows;
        bytes += s->bytes;
        wrong_total += wrong[i];
        if (wrong[i]) {
            if (moves)
                diff_line(&rep, "%s: %llu of %llu rows do not move %s -> %s under the manifest's rings", f->file,
                          (unsigned long long)wrong[i], (unsigned long long)s->rows, f->from, f->to);
            else
                diff_line(&rep, "%s: %llu of %llu rows belong to another node than %s", f->file,
                          (unsigned long long)wrong[i], (unsigned long long)s->rows, f->node);
        }
        if (s->rows != f->rows)
            diff_line(&rep, "%s: %llu rows, the manifest says %llu", f->file, (unsigned long long)s->rows,
                      (unsigned long long)f->rows);
        if (s->bytes != f->bytes)
            diff_line(&rep, "%s: %llu data bytes, the manifest says %llu", f->file, (unsigned long long)s->bytes,
                      (unsigned long long)f->bytes);
        if (s->crc != f->crc32)
            diff_line(&rep, "%s: CRC-32 of the data %08x, the manifest says %08x", f->file, s->crc, f->crc32);
        if (s->blank_lines)
            diff_line(&rep, "%s: %llu blank lines (ringshard writes none)", f->file,
                      (unsigned long long)s->blank_lines);
    }
    free(scanned);
    /* Files that vanished or cannot be read because DIR was replaced and
     * the generation opened was removed are not differences of DIR */
    if (rep.differences && rs_bucketdir_replaced(&bd)) {
        rs_error_set(&err, RS_EXIT_IO, "%llu differences (files missing or unreadable)",
                     (unsigned long long)rep.differences);
        goto out;  /* rs_bucketdir_explain says why */
    }
    if (rep.printed < rep.differences)
        fprintf(stdout, "DIFF %s: ... %llu more differences not shown (--max-report)\n", dir,
                (unsigned long long)(rep.differences - rep.printed));
    if (rep.differences) {
        fprintf(stdout, "verify %s: FAILED: %llu differences\n", dir, (unsigned long long)rep.differences);
        rc = RS_EXIT_VERIFY;
    } else if (!quiet) {
        fprintf(stdout, "verify %s: OK: %s, %zu files, %llu rows, %llu bytes; every row where %s, "
                        "counts and CRC-32 match the manifest\n",
                dir, moves ? "moves" : "buckets", nf, (unsigned long long)rows, (unsigned long long)bytes,
                moves ? "the old and new rings put it" : "the ring puts it");
    }
    (void)wrong_total;
    rs_cli_flush_stdout(&err);
out:
    rs_bucketdir_explain(&bd, &err);
    if (err.code)
        rc = rs_cli_fail("verify", &err);
    rs_bucketdir_close(&bd);
    rs_ring_free(ring);
    rs_ring_free(new_ring);
    for (size_t k = 0; k < npresent; k++)
        free(present[k]);
    free(present);
    for (int t = 0; vc && t < T; t++)
        free(vc[t].wrong);
    free(vc);
    free(want);
    free(want_to);
    free(idx);
    free(st);
    free(wrong);
    free(header);
    return rc;
}
