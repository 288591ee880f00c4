/* io/magic.c - formats ringshard does not read, known by their first bytes.
 *
 * The reader reads plain CSV, gzip and zstd. Anything else that starts
 * with a known magic number (a compressor's, an archive's, a columnar
 * format's, a UTF-16 or UTF-32 byte order mark) is refused by name, with
 * what to do about it, rather than read as CSV: its bytes are not text,
 * and the rows they would make are garbage. The content decides, whatever
 * the file's name. brotli streams have no magic number: they fail the
 * text rule of the header instead (docs/formats.md, "Text"). */
#include <string.h>
#include "io/io_internal.h"

typedef struct {
    const char *name;     /* "xz": the message says "xz input is not supported" */
    const char *advice;   /* what to do instead */
    unsigned off;         /* where the magic is */
    unsigned len;
    const char *magic;
} foreign;

static const foreign formats[] = {
    {"xz", "decompress it first (xz -d)", 0, 6, "\xfd" "7zXZ\0"},
    {"lz4", "decompress it first (lz4 -d)", 0, 4, "\x04\x22\x4d\x18"},
    {"lz4 (legacy format)", "decompress it first (lz4 -d)", 0, 4, "\x02\x21\x4c\x18"},
    {"zip", "extract the CSV file from the archive first (unzip)", 0, 4, "PK\x03\x04"},
    {"zip", "it is an empty zip archive", 0, 4, "PK\x05\x06"},
    {"zip", "extract the CSV file from the archive first (unzip)", 0, 4, "PK\x07\x08"},
    {"7z", "extract the CSV file from the archive first (7z x)", 0, 6, "7z\xbc\xaf\x27\x1c"},
    {"lzip", "decompress it first (lzip -d)", 0, 5, "LZIP\x01"},
    {"Snappy (framed)", "decompress it first", 0, 10, "\xff\x06\0\0sNaPpY"},
    {"compress (.Z)", "decompress it first (uncompress, or gzip -d)", 0, 2, "\x1f\x9d"},
    {"Arrow IPC", "convert it to CSV first", 0, 8, "ARROW1\0\0"},
    {"Avro", "convert it to CSV first", 0, 4, "Obj\x01"},
    {"OLE2 compound document (an .xls workbook?)", "save or export it as CSV first", 0, 8,
     "\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"},
    {"tar", "extract the CSV file from the archive first (tar -x)", 257, 6,
     "ustar\0"},
    {"tar", "extract the CSV file from the archive first (tar -x)", 257, 8,
     "ustar  \0"},
    {"UTF-32 text", "convert it to UTF-8 first (iconv -f UTF-32 -t UTF-8)", 0, 4, "\xff\xfe\0\0"},
    {"UTF-32 text", "convert it to UTF-8 first (iconv -f UTF-32 -t UTF-8)", 0, 4, "\0\0\xfe\xff"},
    {"UTF-16 text", "convert it to UTF-8 first (iconv -f UTF-16 -t UTF-8)", 0, 2, "\xff\xfe"},
    {"UTF-16 text", "convert it to UTF-8 first (iconv -f UTF-16 -t UTF-8)", 0, 2, "\xfe\xff"},
};

/* bzip2: "BZh", the block size 1-9, then a block's magic (pi) or the end
 * of stream's (sqrt(pi)): ten bytes, all of them printable ASCII but the
 * end-of-stream ones, so the whole ten are required. */
static int bzip2(const unsigned char *p, size_t n)
{
    return n >= 10 && memcmp(p, "BZh", 3) == 0 && p[3] >= '1' && p[3] <= '9' &&
           (memcmp(p + 4, "1AY&SY", 6) == 0 || memcmp(p + 4, "\x17\x72\x45\x38\x50\x90", 6) == 0);
}

/* lzma (the .lzma "alone" format of LZMA Utils): no magic, but its first
 * byte is the lc/lp/pb properties, 0x5d for every preset, followed by a
 * little-endian dictionary size whose high bytes are small: file(1)'s
 * test (5d 00 00), which no text can pass (it holds NUL bytes). */
static int lzma(const unsigned char *p, size_t n)
{
    return n >= 13 && p[0] == 0x5d && p[1] == 0 && p[2] == 0;
}

/* Parquet: "PAR1", then the first page header, a Thrift compact struct
 * whose first byte is a field header (0x15: field 1, i32) - a control
 * byte, which tells it from a CSV file whose header starts "PAR1". */
static int parquet(const unsigned char *p, size_t n)
{
    return n >= 5 && memcmp(p, "PAR1", 4) == 0 && (p[4] < 0x20 || p[4] >= 0x7f);
}

const char *rs_inner_format(const unsigned char *p, size_t n, int decoded)
{
    if (decoded && n >= 3 && p[0] == 0x1f && p[1] == 0x8b && p[2] == 8)
        return "; it is gzip data inside the decompressed data (gzip of gzip): decompress it once first (gzip -dc)";
    /* zlib (RFC 1950): deflate with a window of 32 KiB (0x78), no preset
     * dictionary and a header check ("x^" is one: the callers ask only of
     * bytes already found not to be text) */
    if (n >= 3 && p[0] == 0x78 && ((p[0] << 8) | p[1]) % 31 == 0 && !(p[1] & 0x20))
        return "; it is zlib data (pigz -z, a .zz file): decompress it first (pigz -dz)";
    return "";
}

const char *rs_foreign_format(const unsigned char *p, size_t n, const char **advice)
{
    if (bzip2(p, n)) {
        *advice = "decompress it first (bzip2 -d)";
        return "bzip2";
    }
    if (lzma(p, n)) {
        *advice = "decompress it first (unlzma, or xz -d)";
        return "lzma";
    }
    if (parquet(p, n)) {
        *advice = "convert it to CSV first (DuckDB or pyarrow, for one, write CSV)";
        return "Parquet";
    }
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
        const foreign *f = &formats[i];
        if (n >= f->off + f->len && memcmp(p + f->off, f->magic, f->len) == 0) {
            *advice = f->advice;
            return f->name;
        }
    }
    return NULL;
}
