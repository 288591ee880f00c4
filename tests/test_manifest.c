/* manifest.json (the dataset layer's rs_manifest): round trips of every
 * kind, malformed and unsupported manifests named with their offset, write
 * failures (the file names: test_names.c; the JSON underneath: test_json.c;
 * output directories: test_outdir.c). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ringshard/dataset.h"
#include "support.h"

/* ---- manifests ---- */

static const char *DESC = "scheme\tketama\nhash\tmd5\nseed\t0\nnode\t\"q\"uoted\"\t100\nnode\tM\xc3\xbcnchen\t1\n";

static void fill_buckets(rs_manifest *m)
{
    memset(m, 0, sizeof *m);
    m->schema = 1;
    m->kind = strdup("buckets");
    m->tool_version = strdup("9.8.7-test");
    m->ring_description = strdup(DESC);
    m->ring_fingerprint = strdup("0123456789abcdef0123456789abcdef");
    m->key = strdup("id,\"name\"");
    m->delimiter = ',';
    m->header = 1;
    m->header_line = strdup("id,name,\"city\"\tx");
    m->compress = 1;
    m->level = 6;
    m->keys_only = 0;
    m->ninputs = 2;
    m->inputs = calloc(2, sizeof *m->inputs);
    m->inputs[0] = (rs_manifest_input){.path = strdup("data/a b.csv.gz"), .size = 1, .rows = 2, .bytes = 3,
                                       .rejected = 4, .blank_lines = 5, .zero_padding = 6};
    m->inputs[1] = (rs_manifest_input){.path = strdup("-"), .rows = UINT64_MAX, .bytes = UINT64_MAX - 1,
                                       .blank_lines = 18446744073709551ULL};
    m->nfiles = 3;
    m->files = calloc(3, sizeof *m->files);
    m->files[0] = (rs_manifest_file){.file = strdup("%22q%22uoted%22.csv.gz"), .node = strdup("\"q\"uoted\""),
                                     .rows = 10, .bytes = 200, .file_bytes = 90, .crc32 = 0xDEADBEEF, .nruns = 2};
    m->files[0].runs = malloc(2 * sizeof *m->files[0].runs);
    m->files[0].runs[0] = (rs_manifest_run){0, 0, 4};
    m->files[0].runs[1] = (rs_manifest_run){1, 2, 8};
    m->files[1] = (rs_manifest_file){.file = strdup("M%C3%BCnchen.csv.gz"), .node = strdup("M\xc3\xbcnchen"),
                                     .rows = UINT64_MAX, .bytes = 1, .file_bytes = 2, .crc32 = 0xFFFFFFFF,
                                     .stored_crc32 = 0x89ABCDEF, .has_stored_crc32 = 1};
    m->files[2] = (rs_manifest_file){.file = strdup("empty.csv.gz"), .node = strdup("empty"), .crc32 = 0x00000a0b};
    m->rows = UINT64_MAX;
    m->bytes = 201;
    m->rejected = 7;
}

static void assert_str_or_null(const char *got, const char *want, const char *what)
{
    if (want == NULL)
        cr_assert_null(got, "%s", what);
    else
        cr_assert(got != NULL && strcmp(got, want) == 0, "%s: got '%s', want '%s'", what, got, want);
}

static void assert_manifests_equal(const rs_manifest *a, const rs_manifest *b)
{
    cr_assert_eq(a->schema, b->schema);
    assert_str_or_null(a->kind, b->kind, "kind");
    assert_str_or_null(a->tool_version, b->tool_version, "tool_version");
    assert_str_or_null(a->ring_description, b->ring_description, "ring_description");
    assert_str_or_null(a->ring_fingerprint, b->ring_fingerprint, "ring_fingerprint");
    assert_str_or_null(a->new_ring_description, b->new_ring_description, "new_ring_description");
    assert_str_or_null(a->new_ring_fingerprint, b->new_ring_fingerprint, "new_ring_fingerprint");
    assert_str_or_null(a->key, b->key, "key");
    cr_assert_eq(a->delimiter, b->delimiter);
    cr_assert_eq(a->header, b->header);
    assert_str_or_null(a->header_line, b->header_line, "header_line");
    cr_assert_eq(a->compress, b->compress);
    cr_assert_eq(a->level, b->level);
    cr_assert_eq(a->keys_only, b->keys_only);
    cr_assert_eq(a->ninputs, b->ninputs);
    for (size_t i = 0; i < a->ninputs; i++) {
        const rs_manifest_input *x = &a->inputs[i], *y = &b->inputs[i];
        assert_str_or_null(x->path, y->path, "input path");
        cr_assert(x->size == y->size && x->rows == y->rows && x->bytes == y->bytes && x->rejected == y->rejected &&
                      x->blank_lines == y->blank_lines && x->zero_padding == y->zero_padding,
                  "input %zu", i);
    }
    cr_assert_eq(a->nfiles, b->nfiles);
    for (size_t i = 0; i < a->nfiles; i++) {
        const rs_manifest_file *x = &a->files[i], *y = &b->files[i];
        assert_str_or_null(x->file, y->file, "file");
        assert_str_or_null(x->node, y->node, "node");
        assert_str_or_null(x->from, y->from, "from");
        assert_str_or_null(x->to, y->to, "to");
        cr_assert(x->rows == y->rows && x->bytes == y->bytes && x->file_bytes == y->file_bytes &&
                      x->crc32 == y->crc32 && x->wave == y->wave && x->has_stored_crc32 == y->has_stored_crc32 &&
                      x->stored_crc32 == y->stored_crc32,
                  "file %zu", i);
        rs_manifest_run *xr, *yr;   /* (as written: runs; as read: runs_text) */
        size_t xn, yn;
        cr_assert(rs_manifest_file_runs(x, &xr, &xn) == 0 && rs_manifest_file_runs(y, &yr, &yn) == 0);
        cr_assert_eq(xn, yn, "file %zu", i);
        for (size_t k = 0; k < xn; k++)
            cr_assert(xr[k].input == yr[k].input && xr[k].from == yr[k].from && xr[k].to == yr[k].to,
                      "file %zu run %zu", i, k);
        free(xr);
        free(yr);
    }
    cr_assert_eq(a->rows, b->rows);
    cr_assert_eq(a->bytes, b->bytes);
    cr_assert_eq(a->rejected, b->rejected);
}

Test(manifest, buckets_round_trip)
{
    char *dir = make_tmpdir();
    char *path = path_dup(dir, "manifest.json");
    rs_manifest m, r;
    rs_error err = {0};
    fill_buckets(&m);
    cr_assert_eq(rs_manifest_write(&m, path, &err), 0, "%s", err.msg);
    assert_python_json(path);
    cr_assert_eq(rs_manifest_read(&r, path, &err), 0, "%s", err.msg);
    assert_manifests_equal(&r, &m);

    char *text = slurp(path, NULL);
    cr_assert(strncmp(text, "{\n  \"schema\": 1,\n  \"kind\": \"buckets\",\n  \"tool\": {\n    \"name\": \"ringshard\",\n",
                      strlen("{\n  \"schema\": 1,\n  \"kind\": \"buckets\",\n  \"tool\": {\n    \"name\": \"ringshard\",\n")) == 0,
              "%s", text);
    cr_assert(strstr(text, "\"description\": \"scheme\\tketama\\nhash\\tmd5\\nseed\\t0\\nnode\\t\\\"q\\\"uoted\\\"\\t100\\n"));
    /* runs on one line, where recorded */
    cr_assert(strstr(text, "      \"crc32\": 3735928559,\n      \"crc32_hex\": \"deadbeef\",\n"
                           "      \"runs\": \"0:0-4 1:2-8\"\n    }"), "%s", text);
    cr_assert(r.files[0].runs_text && !r.files[1].runs_text && !r.files[2].runs_text && !r.files[1].nruns);
    cr_assert(strstr(text, "      \"crc32\": 2571,\n      \"crc32_hex\": \"00000a0b\"\n"));
    /* stored_crc32 only where recorded, after crc32_hex */
    cr_assert(strstr(text, "      \"crc32_hex\": \"ffffffff\",\n      \"stored_crc32\": 2309737967\n    }"), "%s", text);
    cr_assert(r.files[1].has_stored_crc32 && !r.files[0].has_stored_crc32 && !r.files[2].has_stored_crc32);
    cr_assert(strstr(text, "\"rows\": 18446744073709551615"));
    cr_assert(strstr(text, "\"delimiter\": \",\""));
    cr_assert(strstr(text, "\"compress\": \"gzip\""));
    cr_assert(strstr(text, "  \"totals\": {\n    \"rows\": 18446744073709551615,\n    \"bytes\": 201,\n"
                           "    \"rejected\": 7,\n    \"files\": 3\n  }\n}\n"));
    cr_assert_null(strstr(text, "new_ring"));
    cr_assert_null(strstr(text, "\"wave\""));
    cr_assert_null(strstr(text, "\"from\""));

    /* no time of any kind: the same manifest written again is the same bytes */
    cr_assert_null(strstr(text, "\"seconds\""), "%s", text);
    char *path2 = path_dup(dir, "manifest2.json");
    cr_assert_eq(rs_manifest_write(&m, path2, &err), 0, "%s", err.msg);
    char *text2 = slurp(path2, NULL);
    cr_assert_str_eq(text2, text);

    free(text);
    free(text2);
    rs_manifest_free(&m);
    rs_manifest_free(&r);
    cr_assert_null(r.kind);
    free(path);
    free(path2);
    remove_tree(dir);
    free(dir);
}

Test(manifest, moves_round_trip)
{
    char *dir = make_tmpdir();
    char *path = path_dup(dir, "manifest.json");
    rs_manifest m, r;
    rs_error err = {0};
    memset(&m, 0, sizeof m);
    m.schema = 1;
    m.kind = strdup("moves");
    m.tool_version = strdup("0.1.0");
    m.ring_description = strdup("old\tring\n");
    m.ring_fingerprint = strdup("00000000000000000000000000000000");
    m.new_ring_description = strdup("new\tring\nnode\t\xe6\x9d\xb1\xe4\xba\xac\t5\n");
    m.new_ring_fingerprint = strdup("ffffffffffffffffffffffffffffffff");
    m.key = strdup("3");
    m.delimiter = '\t';
    m.header = 0;
    m.header_line = NULL;
    m.compress = 0;
    m.level = 0;
    m.keys_only = 1;
    m.nfiles = 2;
    m.files = calloc(2, sizeof *m.files);
    m.files[0] = (rs_manifest_file){.file = strdup("a--b.csv"), .from = strdup("a"), .to = strdup("b"), .rows = 5,
                                    .bytes = 50, .file_bytes = 50, .crc32 = 1, .wave = 3};
    m.files[1] = (rs_manifest_file){.file = strdup("c--d.csv"), .from = strdup("c\"\\"), .to = strdup("\xe6\x9d\xb1"),
                                    .crc32 = 2, .wave = 0};
    m.rows = 5;
    m.bytes = 50;
    cr_assert_eq(rs_manifest_write(&m, path, &err), 0, "%s", err.msg);
    assert_python_json(path);
    cr_assert_eq(rs_manifest_read(&r, path, &err), 0, "%s", err.msg);
    assert_manifests_equal(&r, &m);
    char *text = slurp(path, NULL);
    cr_assert(strstr(text, "  \"new_ring\": {\n    \"fingerprint\": \"ffffffffffffffffffffffffffffffff\",\n"));
    cr_assert(strstr(text, "\"header\": null,"));
    cr_assert(strstr(text, "\"inputs\": [],"));
    cr_assert(strstr(text, "\"delimiter\": \"\\t\""));
    cr_assert(strstr(text, "\"compress\": \"none\""));
    cr_assert(strstr(text, "      \"to\": \"b\",\n      \"wave\": 3,\n"));
    cr_assert_eq(strstr(strstr(text, "c--d.csv"), "\"wave\""), NULL, "wave 0 is not written");
    cr_assert_null(strstr(text, "\"node\""));
    free(text);
    rs_manifest_free(&r);

    /* a delimiter byte >= 0x80 goes out as \u00xx and comes back as the byte */
    m.delimiter = (char)0xA7;
    cr_assert_eq(rs_manifest_write(&m, path, &err), 0, "%s", err.msg);
    text = slurp(path, NULL);
    cr_assert(strstr(text, "\"delimiter\": \"\\u00a7\""), "%s", text);
    cr_assert_eq(rs_manifest_read(&r, path, &err), 0, "%s", err.msg);
    cr_assert_eq(r.delimiter, (char)0xA7);
    free(text);
    rs_manifest_free(&r);
    rs_manifest_free(&m);
    free(path);
    remove_tree(dir);
    free(dir);
}

/* Writes the good manifest, applies sed to it, reads it. */
static int read_edited(const char *sed, rs_error *err)
{
    char *dir = make_tmpdir();
    char *path = path_dup(dir, "manifest.json");
    rs_manifest m, r;
    fill_buckets(&m);
    rs_error werr = {0};
    cr_assert_eq(rs_manifest_write(&m, path, &werr), 0, "%s", werr.msg);
    rs_manifest_free(&m);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "sed -i -e '%s' '%s'", sed, path);
    cr_assert_eq(run(cmd, NULL, NULL), 0);
    rs_error_clear(err);
    int rc = rs_manifest_read(&r, path, err);
    if (rc == 0)
        rs_manifest_free(&r);
    else
        cr_assert(strncmp(err->msg, path, strlen(path)) == 0, "the message names the file: %s", err->msg);
    free(path);
    remove_tree(dir);
    free(dir);
    return rc;
}

Test(manifest, malformed_json_names_offset)
{
    char *dir = make_tmpdir();
    char *path = path_dup(dir, "manifest.json");
    write_text(path, "{\n  \"schema\": 1,\n  \"kind\": \"buckets\"\n  \"x\": 1\n}\n");
    rs_manifest r;
    rs_error err = {0};
    cr_assert_eq(rs_manifest_read(&r, path, &err), -1);
    cr_assert_eq(err.code, RS_EXIT_DATA);
    char want[512];
    snprintf(want, sizeof want, "%s: JSON syntax error at byte 39 (line 4, column 3): ',' or '}' expected", path);
    cr_assert_str_eq(err.msg, want);
    cr_assert_null(r.kind, "nothing is left allocated");

    write_text(path, "[1, 2]");
    rs_error_clear(&err);
    cr_assert_eq(rs_manifest_read(&r, path, &err), -1);
    cr_assert_eq(err.code, RS_EXIT_DATA);
    cr_assert(strstr(err.msg, "not a manifest"), "%s", err.msg);

    char *missing = path_dup(dir, "nope.json");
    rs_error_clear(&err);
    cr_assert_eq(rs_manifest_read(&r, missing, &err), -1);
    cr_assert_eq(err.code, RS_EXIT_IO);
    cr_assert(strstr(err.msg, "No such file"), "%s", err.msg);
    free(missing);
    free(path);
    remove_tree(dir);
    free(dir);
}

Test(manifest, schema_4_rejected_3_for_generations_and_2_needs_a_generation)
{
    rs_error err = {0};
    cr_assert_eq(read_edited("s/\"schema\": 1,/\"schema\": 4,/", &err), -1);
    cr_assert_eq(err.code, RS_EXIT_DATA);
    cr_assert(strstr(err.msg, "unsupported manifest schema 4 (this version of ringshard reads schemas 1 to 3)"), "%s",
              err.msg);
    cr_assert_eq(read_edited("s/\"schema\": 1,/\"schema\": 3, \"generation\": 2,/", &err), -1);
    cr_assert(strstr(err.msg, "\"schema\": 3 is for kind \"generation\" only"), "%s", err.msg);
    cr_assert_eq(read_edited("s/\"schema\": 1,/\"schema\": 2, \"generation\": 2, \"segment_header\": true,/", &err), -1);
    cr_assert(strstr(err.msg, "\"segment_header\": true needs schema 3"), "%s", err.msg);
    cr_assert_eq(read_edited("s/\"schema\": 1,/\"schema\": 2,/", &err), -1);
    cr_assert(strstr(err.msg, "\"generation\": missing"), "%s", err.msg);
    cr_assert_eq(read_edited("s/\"schema\": 1,/\"schema\": 2, \"generation\": 0,/", &err), -1);
    cr_assert(strstr(err.msg, "\"generation\": a generation number from 1 expected"), "%s", err.msg);
    cr_assert_eq(read_edited("s/\"schema\": 1,/\"schema\": 2, \"generation\": 7,/", &err), 0, "%s", err.msg);
    cr_assert_eq(read_edited("s/\"schema\": 1,/\"schema\": \"1\",/", &err), -1);
    cr_assert(strstr(err.msg, "\"schema\": a number expected"), "%s", err.msg);
    cr_assert_eq(read_edited("/\"schema\"/d", &err), -1);
    cr_assert(strstr(err.msg, "\"schema\": missing"), "%s", err.msg);
}

Test(manifest, bad_members)
{
    rs_error err = {0};
    /* unknown members are ignored; optional ones may go */
    cr_assert_eq(read_edited("s/\"schema\": 1,/\"schema\": 1, \"future\": {\"x\": [1]},/", &err), 0, "%s", err.msg);
    /* "seconds", the run's duration written before 0.8.0: read and ignored, a number or null */
    cr_assert_eq(read_edited("s/^  }$/  },\\n  \"seconds\": 1.25/", &err), 0, "%s", err.msg);
    cr_assert_eq(read_edited("s/^  }$/  },\\n  \"seconds\": null/", &err), 0, "%s", err.msg);
    cr_assert_eq(read_edited("s/^  }$/  },\\n  \"seconds\": \"1.25\"/", &err), -1);
    cr_assert(strstr(err.msg, "\"seconds\": a number expected"), "%s", err.msg);
    cr_assert_eq(read_edited("/\"crc32_hex\"/d; /\"crc32\": [0-9]*,$/{N;s/,\\n\\( *}\\)/\\n\\1/;}", &err), 0, "%s", err.msg);
    cr_assert_eq(read_edited("/\"stored_crc32\"/d; s/\"crc32_hex\": \"ffffffff\",/\"crc32_hex\": \"ffffffff\"/", &err), 0,
                 "%s", err.msg);

    static const struct {
        const char *sed, *msg;
    } cases[] = {
        {"s/\"crc32\": 3735928559,/\"crc32\": 3735928558,/", "\"files[0].crc32_hex\": does not match crc32"},
        {"s/\"crc32\": 3735928559,/\"crc32\": 4294967296,/", "\"files[0].crc32\": an unsigned integer up to 4294967295"},
        {"s/\"crc32_hex\": \"deadbeef\"/\"crc32_hex\": \"DEADBEEF\"/", "\"files[0].crc32_hex\": does not match"},
        {"/\"file_bytes\": 2,/d", "\"files[1].file_bytes\": missing"},
        {"s/\"stored_crc32\": 2309737967/\"stored_crc32\": 4294967296/",
         "\"files[1].stored_crc32\": an unsigned integer up to 4294967295"},
        {"s/\"stored_crc32\": 2309737967/\"stored_crc32\": \"89abcdef\"/", "\"files[1].stored_crc32\": a number expected"},
        {"s/\"rows\": 10,/\"rows\": -10,/", "\"files[0].rows\": an unsigned integer"},
        {"s/\"rows\": 10,/\"rows\": 1.0,/", "\"files[0].rows\": an unsigned integer"},
        {"s/\"file\": \"empty.csv.gz\"/\"file\": \"..\\/x\"/", "\"files[2].file\": not a plain file name"},
        {"s/\"file\": \"empty.csv.gz\"/\"file\": \"..\"/", "\"files[2].file\": not a plain file name"},
        {"s/\"kind\": \"buckets\"/\"kind\": \"bucket\"/", "\"kind\": \"buckets\" or \"moves\" expected"},
        {"s/\"kind\": \"buckets\"/\"kind\": \"moves\"/", "\"new_ring\": missing"},
        /* (zstd is a codec too) */
        {"s/\"compress\": \"gzip\"/\"compress\": \"xz\"/", "\"options.compress\": \"gzip\", \"zstd\" or \"none\" expected"},
        {"s/\"delimiter\": \",\"/\"delimiter\": \",,\"/", "\"options.delimiter\": one character expected"},
        {"s/\"header\": true/\"header\": 1/", "\"options.header\": a boolean expected, found a number"},
        {"s/\"files\": 3/\"files\": 4/", "\"totals.files\": does not match"},
        {"s/\"node\": \"empty\"/\"node\": \"e\\\\u0000\"/", "\"files[2].node\": contains a NUL"},
        {"s/\"path\": \"-\"/\"path\": null/", "\"inputs[1].path\": a string expected, found null"},
        {"/\"fingerprint\"/d", "\"ring.fingerprint\": missing"},
        /* runs that do not hold the file's rows, or name no input */
        {"s/1:2-8/1:2-9/", "\"files[0].runs\": its runs hold 11 rows, \"rows\" says 10"},
        {"s/1:2-8/2:2-8/", "\"files[0].runs\": run 2: input not in the manifest"},
        {"s/0:0-4 1:2-8/0:4-4 1:0-10/", "\"files[0].runs\": run 1: to not more than from"},
        {"s/1:2-8/1:8/", "\"files[0].runs\": run 2: \"input:from-to\" expected"},
        {"s/1:2-8/1:-2-8/", "\"files[0].runs\": run 2: \"input:from-to\" expected"},
        {"s/0:0-4 1:2-8/0:0-4  1:2-8/", "\"files[0].runs\": run 2: \"input:from-to\" expected"},
        {"s/1:2-8/1:2-8 /", "\"files[0].runs\": run 3: \"input:from-to\" expected"},
        {"s/1:2-8/1:2-8x/", "\"files[0].runs\": run 2: \"input:from-to\" expected"},
        {"s/1:2-8/1:02-8/", "\"files[0].runs\": run 2: \"input:from-to\" expected"},
        {"s/0:0-4/0:0-18446744073709551616/", "\"files[0].runs\": run 1: \"input:from-to\" expected"},
        {"s/\"0:0-4 1:2-8\"/[0, 0, 10]/", "\"files[0].runs\": a string expected"},
        {"s/\"0:0-4 1:2-8\"/\"\"/", "\"files[0].runs\": run 1: \"input:from-to\" expected"},
        {"s/\"0:0-4 1:2-8\"/\"0:0-4 1:2-8\\\\u0000\"/", "\"files[0].runs\": run 1: contains a NUL character"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_assert_eq(read_edited(cases[i].sed, &err), -1, "case %zu (%s) accepted", i, cases[i].sed);
        cr_assert_eq(err.code, RS_EXIT_DATA, "case %zu", i);
        cr_assert(strstr(err.msg, cases[i].msg), "case %zu: %s", i, err.msg);
    }
}

Test(manifest, write_failure)
{
    rs_manifest m;
    rs_error err = {0};
    fill_buckets(&m);
    cr_assert_eq(rs_manifest_write(&m, "/nonexistent-dir-rs/manifest.json", &err), -1);
    cr_assert_eq(err.code, RS_EXIT_IO);
    cr_assert(strstr(err.msg, "/nonexistent-dir-rs/manifest.json: No such file"), "%s", err.msg);
    rs_error_clear(&err);
    cr_assert_eq(rs_manifest_write(&m, "/dev/full", &err), -1);
    cr_assert_eq(err.code, RS_EXIT_IO);
    cr_assert(strstr(err.msg, "No space left"), "%s", err.msg);
    rs_manifest_free(&m);
}
