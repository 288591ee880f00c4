/* ringshard/filename.h - every name a bucket or move directory holds, made
 * in one place (src/dataset/filename.c); the layout, entry by entry, is
 * docs/format/layout.md.
 *
 * A node name is arbitrary bytes; its file names start with its ENCODED
 * NAME (rs_name_node), which is injective, holds no '.', no "__", no
 * uppercase letter, and ends before the first '.' of every name made from
 * it. So the part of a name after its first '.' says what the file is
 * (".csv.gz": data, ".keyidx": a key index, ".g00000002.keyidx": a key index
 * built by a later generation), no suffix of a node name can be taken for
 * one, two node names never share a file, also where the file system folds
 * case, and a directory's own names (manifest.json, g<N>, the temporaries)
 * are never a node's. Readers never turn a file name back into a node
 * name: they take each file's node from its manifest. */
#ifndef RINGSHARD_FILENAME_H
#define RINGSHARD_FILENAME_H

#include <stddef.h>
#include <stdint.h>
#include "ringshard/error.h"

/* A directory's manifest, in DIR and in each DIR/g<N>/. */
#define RS_NAME_MANIFEST "manifest.json"

/* "DIR/manifest.json": the path of dir's manifest, as every message that
 * names a directory's manifest shows it. malloc'd; NULL when out of
 * memory. */
char *rs_name_manifest_path(const char *dir);

/* dedup's pass-1 buckets, a directory inside the temporary directory
 * only (removed before it is published), its files named by
 * rs_name_scratch and rs_name_split. Its leading '.' is a byte no encoded
 * name begins with. */
#define RS_NAME_SCRATCH ".pass1"

/* What a scratch file of dedup holds (rs_name_scratch). */
typedef enum { RS_SCRATCH_ROWS, RS_SCRATCH_FILTERED, RS_SCRATCH_DUPS } rs_scratch_kind;

/* The scratch file of bucket i in dir (RS_NAME_SCRATCH's path): its rows
 * from pass 1 ("<i>" + rs_data_ext(compress)), what is left of them once
 * the history's keys are dropped ("<i>.filtered"), its part of the
 * duplicates report ("<i>.dups"). malloc'd; NULL when out of memory. */
char *rs_name_scratch(const char *dir, uint32_t bucket, rs_scratch_kind kind, int compress);

/* Part k of a bucket file split again at depth d (the dedup layer), in
 * dir: "<name>.split<d>.<k>", or with dups its part of the duplicates
 * report, "<name>.dups<d>.<k>" (name: unique per bucket across MPI
 * ranks). malloc'd; NULL when out of memory. */
char *rs_name_split(const char *dir, const char *name, int depth, uint32_t part, int dups);

/* ---- compression: codec <-> its name <-> the data files' extension ---- */

/* The codec's name as options and manifests spell it: "gzip", "zstd",
 * "none" (RS_COMPRESS_GZIP, RS_COMPRESS_ZSTD, RS_COMPRESS_NONE). */
const char *rs_compress_name(int compress);

/* The codec a name spells (rs_compress_name's inverse) into *compress: 0, or
 * -1 when name is none of them. */
int rs_compress_parse(const char *name, int *compress);

/* rs_compress_parse of an option's value (`what`: "--compress"), for
 * output this build writes: 0, or -1 with err (RS_EXIT_USAGE: another
 * word, or zstd in a build without libzstd). */
int rs_compress_parse_option(const char *what, const char *name, int *compress, rs_error *err);

/* The data files' extension: ".csv.gz" for gzip, ".csv.zst" for zstd,
 * else ".csv". */
const char *rs_data_ext(int compress);

/* ---- node names ---- */

/* The encoded name of a node: bytes [a-z0-9-] are kept, and '_' when it
 * is neither the first nor the last byte and has no '_' beside it; every
 * other byte becomes %XX (two uppercase hex digits): uppercase letters,
 * '.', '%', '/', '~', spaces, non-ASCII bytes. The empty name gives "%00"
 * (no node name holds a NUL). An encoding longer than 200 bytes is cut
 * to at most 200 bytes (never inside a %XX) and '~' and 16 lowercase hex
 * digits are appended: the first 64-bit word of MurmurHash3_x64_128 (seed
 * 0) of the whole node name (at most 217 bytes). Names up to the limit map
 * one to one, also after case folding; cut names differ by their hash
 * (writers check: rs_names_distinct). malloc'd; NULL when out of memory. */
char *rs_name_node(const char *node);

/* The data file name of node a (b NULL: a bucket) or of the move a -> b
 * (plan --emit): the encoded name of each, joined by "__" (which no
 * encoded name holds, begins or ends with; a side's encoding is cut at 105
 * bytes there, so that two fit in NAME_MAX), then rs_data_ext. malloc'd;
 * NULL when out of memory. */
char *rs_data_file(const char *a, const char *b, int compress);

/* The key index of node's file in the same directory: "<encoded>.keyidx".
 * malloc'd; NULL when out of memory. */
char *rs_name_keyidx(const char *node);

/* The key index a later generation builds, in its own directory, for
 * node's file of generation gen: "<encoded>.g<gen as 8 digits>.keyidx".
 * malloc'd; NULL when out of memory. */
char *rs_name_keyidx_built(const char *node, uint64_t gen);

/* 0 when the n file names are distinct also where the file system folds
 * case (ASCII), else -1 with err (RS_EXIT_USAGE) naming the two owners:
 * names[i] is the file of node a[i] (b NULL), or of the move a[i] -> b[i].
 * Only two names cut to the same bytes with the same 64-bit hash can
 * collide. (RS_EXIT_IO when out of memory.) */
int rs_names_distinct(char *const *names, const char *const *a, const char *const *b, size_t n, rs_error *err);

/* The data file names of n nodes a[i] (b NULL) or moves a[i] -> b[i]
 * (rs_data_file), checked distinct (rs_names_distinct): an array of n
 * malloc'd names, or NULL with err (RS_EXIT_USAGE for two alike,
 * RS_EXIT_IO when out of memory). Free with rs_free_strings(names, n). */
char **rs_data_files(const char *const *a, const char *const *b, size_t n, int compress, rs_error *err);

/* ---- generations ---- */

/* The most generations a directory can have (8 digits). */
#define RS_GEN_MAX 99999999ULL

/* The name of generation gen's directory: "g" and 8 digits ("g00000002"),
 * so that the shell's sorted glob DIR/g* lists them in order (up to
 * RS_GEN_MAX generations), into out[16] (gen below 10^14). */
void rs_gen_dir_name(uint64_t gen, char out[16]);

/* N when name is exactly rs_gen_dir_name(N) for an N from 1 (more than 8
 * digits, up to 14, only for N over RS_GEN_MAX), else 0. */
uint64_t rs_gen_dir_parse(const char *name);

/* ---- beside the directory ---- */

/* "DIR.damaged.<N>" (DIR without its trailing slashes) for the first N
 * from 1 that names nothing: where repair keeps a damaged directory.
 * malloc'd; NULL when out of memory or when N would pass 99999. */
char *rs_name_damaged(const char *dir);

#endif
