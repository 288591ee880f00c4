/* Every name a bucket or move directory holds (ringshard/filename.h): the
 * codec table, the encoded node names and the names made from them, the
 * generations' directories, the damaged copy repair keeps.
 *
 * Why the encoding keeps so little: a name is read back by the first '.'
 * (what follows says what the file is), so the encoded node name holds no
 * '.'; a case-folding file system must not merge two nodes, so it holds no
 * uppercase letter (the escapes' hex digits are uppercase, but never
 * follow anything but '%'); the pair join "__" must be found again, so no
 * encoded name holds "__" or begins or ends with '_'. What stays plain -
 * [a-z0-9-], and '_' inside - is what the documented examples and most
 * rings use, so their files keep the names earlier versions gave them. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "ringshard/deflate.h"
#include "ringshard/filename.h"
#include "ringshard/hash.h"
#include "ringshard/util.h"

/* ---- the codec table ---- */

static const struct {
    int codec;
    const char *name, *ext;
} codecs[] = {
    {RS_COMPRESS_GZIP, "gzip", ".csv.gz"},
    {RS_COMPRESS_ZSTD, "zstd", ".csv.zst"},
    {RS_COMPRESS_NONE, "none", ".csv"},
};
enum { NCODECS = sizeof codecs / sizeof codecs[0] };

/* The table's row of a codec; an unknown one is gzip's (any non-zero value
 * other than zstd has meant gzip). */
static size_t codec_row(int compress)
{
    for (size_t i = 0; i < NCODECS; i++)
        if (codecs[i].codec == compress)
            return i;
    return 0;
}

const char *rs_compress_name(int compress)
{
    return codecs[codec_row(compress)].name;
}

int rs_compress_parse(const char *name, int *compress)
{
    for (size_t i = 0; i < NCODECS; i++)
        if (!strcmp(name, codecs[i].name)) {
            *compress = codecs[i].codec;
            return 0;
        }
    return -1;
}

int rs_compress_parse_option(const char *what, const char *name, int *compress, rs_error *err)
{
    int c;
    if (rs_compress_parse(name, &c) != 0)
        return rs_error_set(err, RS_EXIT_USAGE, "%s: expected gzip, zstd or none", what);
    if (c == RS_COMPRESS_ZSTD && !rs_have_zstd())
        return rs_error_set(err, RS_EXIT_USAGE, "%s zstd: this build of ringshard has no zstd support (rebuild it "
                            "with libzstd: tools/deps.sh installs libzstd-dev)", what);
    *compress = c;
    return 0;
}

const char *rs_data_ext(int compress)
{
    return codecs[codec_row(compress)].ext;
}

/* ---- encoded node names ---- */

#define KEYIDX_EXT ".keyidx"
enum { NODE_LIMIT = 200, PAIR_LIMIT = 105 };

/* Whether byte i of name[0..n) stays as it is (see filename.h). */
static int kept(const char *name, size_t n, size_t i)
{
    unsigned char c = (unsigned char)name[i];
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')
        return 1;
    return c == '_' && i > 0 && i + 1 < n && name[i - 1] != '_' && name[i + 1] != '_';
}

/* The encoded name, cut at limit bytes (see rs_name_node). */
static char *encode(const char *name, size_t limit)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(name);
    if (n == 0)
        return strdup("%00");
    char *o = malloc(3 * n + 18);
    if (o == NULL)
        return NULL;
    size_t len = 0, cut = 0;   /* cut: the longest boundary <= limit */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        if (kept(name, n, i)) {
            o[len++] = (char)c;
        } else {
            o[len++] = '%';
            o[len++] = hex[c >> 4];
            o[len++] = hex[c & 15];
        }
        if (len <= limit)
            cut = len;
    }
    if (len > limit) {
        uint64_t h[2];
        rs_murmur3_x64_128(name, n, 0, h);
        len = cut + (size_t)snprintf(o + cut, 18, "~%016" PRIx64, h[0]);
    }
    o[len] = '\0';
    return o;
}

char *rs_name_node(const char *node)
{
    return encode(node, NODE_LIMIT);
}

/* a, then b (when not NULL), then c: malloc'd. */
static char *concat(const char *a, const char *b, const char *c)
{
    char *p = NULL;
    return asprintf(&p, "%s%s%s", a, b ? b : "", c) < 0 ? NULL : p;
}

char *rs_data_file(const char *a, const char *b, int compress)
{
    size_t limit = b ? PAIR_LIMIT : NODE_LIMIT;
    char *sa = encode(a, limit), *sb = b ? encode(b, limit) : NULL, *name = NULL;
    if (sa && (sb || !b)) {
        char *pair = sb ? concat(sa, "__", sb) : NULL;
        if (pair || !sb)
            name = concat(pair ? pair : sa, NULL, rs_data_ext(compress));
        free(pair);
    }
    free(sa);
    free(sb);
    return name;
}

char *rs_name_keyidx(const char *node)
{
    char *s = encode(node, NODE_LIMIT), *name = s ? concat(s, NULL, KEYIDX_EXT) : NULL;
    free(s);
    return name;
}

char *rs_name_keyidx_built(const char *node, uint64_t gen)
{
    char dn[16], ext[32];
    rs_gen_dir_name(gen, dn);
    snprintf(ext, sizeof ext, ".%s" KEYIDX_EXT, dn);
    char *s = encode(node, NODE_LIMIT), *name = s ? concat(s, NULL, ext) : NULL;
    free(s);
    return name;
}

/* A name and its place, sorted case-folded (ASCII). */
typedef struct {
    const char *name;
    size_t i;
} name_ref;

static int cmp_folded(const void *a, const void *b)
{
    return strcasecmp(((const name_ref *)a)->name, ((const name_ref *)b)->name);
}

/* What names[i] is the file of, for messages: "node 'a'" or "the move 'a' -> 'b'". */
static char *owner(const char *const *a, const char *const *b, size_t i)
{
    char *p = NULL;
    int r = b ? asprintf(&p, "the move '%s' -> '%s'", a[i], b[i]) : asprintf(&p, "node '%s'", a[i]);
    return r < 0 ? NULL : p;
}

int rs_names_distinct(char *const *names, const char *const *a, const char *const *b, size_t n, rs_error *err)
{
    if (n < 2)
        return 0;
    name_ref *v = malloc(n * sizeof *v);
    if (!v)
        return rs_error_set(err, RS_EXIT_IO, "out of memory");
    for (size_t i = 0; i < n; i++)
        v[i] = (name_ref){names[i], i};
    qsort(v, n, sizeof *v, cmp_folded);
    int rc = 0;
    for (size_t i = 1; i < n && rc == 0; i++)
        if (!strcasecmp(v[i - 1].name, v[i].name)) {
            char *x = owner(a, b, v[i - 1].i), *y = owner(a, b, v[i].i);
            rc = rs_error_set(err, RS_EXIT_USAGE, "%s and %s would share the file %s (their encoded names are cut "
                              "to the same bytes and their 64-bit hashes collide): rename one of them",
                              x ? x : "a node", y ? y : "another", v[i].name);
            free(x);
            free(y);
        }
    free(v);
    return rc;
}

char **rs_data_files(const char *const *a, const char *const *b, size_t n, int compress, rs_error *err)
{
    char **names = calloc(n ? n : 1, sizeof *names);
    for (size_t i = 0; names && i < n; i++)
        if (!(names[i] = rs_data_file(a[i], b ? b[i] : NULL, compress))) {
            rs_free_strings(names, i);
            names = NULL;
        }
    if (!names) {
        rs_error_set(err, RS_EXIT_IO, "out of memory");
        return NULL;
    }
    if (rs_names_distinct(names, a, b, n, err) != 0) {
        rs_free_strings(names, n);
        return NULL;
    }
    return names;
}

char *rs_name_scratch(const char *dir, uint32_t bucket, rs_scratch_kind kind, int compress)
{
    const char *ext = kind == RS_SCRATCH_FILTERED ? ".filtered" : kind == RS_SCRATCH_DUPS ? ".dups" : rs_data_ext(compress);
    char *p = NULL;
    return asprintf(&p, "%s/%" PRIu32 "%s", dir, bucket, ext) < 0 ? NULL : p;
}

char *rs_name_split(const char *dir, const char *name, int depth, uint32_t part, int dups)
{
    char *p = NULL;
    return asprintf(&p, "%s/%s.%s%d.%" PRIu32, dir, name, dups ? "dups" : "split", depth, part) < 0 ? NULL : p;
}

/* ---- generations ---- */

void rs_gen_dir_name(uint64_t gen, char out[16])
{
    snprintf(out, 16, "g%08" PRIu64, gen);
}

uint64_t rs_gen_dir_parse(const char *name)
{
    size_t d = strspn(name + (name[0] == 'g'), "0123456789");
    if (name[0] != 'g' || d < 8 || d > 14 || name[1 + d] != '\0')
        return 0;
    uint64_t n = strtoull(name + 1, NULL, 10);
    char canon[16];
    rs_gen_dir_name(n, canon);
    return n > 0 && !strcmp(canon, name) ? n : 0;
}

/* ---- beside the directory ---- */

char *rs_name_manifest_path(const char *dir)
{
    char *p = NULL;
    return asprintf(&p, "%s/" RS_NAME_MANIFEST, dir) < 0 ? NULL : p;
}

char *rs_name_damaged(const char *dir)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    for (unsigned k = 1; k < 100000; k++) {
        char *p = NULL;
        struct stat st;
        if (asprintf(&p, "%.*s.damaged.%u", (int)n, dir, k) < 0)
            return NULL;
        if (lstat(p, &st) != 0 && errno == ENOENT)
            return p;
        free(p);
    }
    return NULL;
}
