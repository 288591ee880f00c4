/* ringshard/bucketdir.h - reading a bucket or move directory consistently.
 *
 * A directory that ringshard writes is replaced whole by a later run with
 * --force or compact (the new one is built beside it and renamed or
 * exchanged into place), and a bucket directory grows by appends: each
 * adds a generation, DIR/g<N>/ (N as 8 digits), holding a manifest and, for
 * each node that got rows, a segment - that node's new rows, a CSV file of
 * its own that starts with the header line as the base files do (older
 * versions wrote segments without one: read as such; docs/format-generations.md,
 * "Bucket directories that grow"). A
 * generation is published whole, in one rename, and never changes after.
 *
 * rs_bucketdir opens DIR once (an O_DIRECTORY descriptor) and every reader
 * opens the manifests and the files relative to that descriptor (openat),
 * so all it reads comes from the generations that were in place at the
 * open, whatever is renamed meanwhile: appends publish newer generations
 * that it does not see, and the ones it reads stay as they were.
 *
 * The open reads the base manifest (DIR/manifest.json) and, for schema 2,
 * the generations after it, g<B+1>, g<B+2>, ... while they exist: each must
 * name the previous one's manifest digest and agree with the base on the
 * ring and the options. Its view is one list of FILES: for each node (base
 * file order) its base file, then its segments in generation order, the
 * order its rows were added in.
 *
 * What was read is then checked against the manifests
 * (rs_bucketdir_check_file): a reader trusts no file that differs from
 * what its manifest says of it.
 *
 * The chain. Before it reads a manifest, the open lists DIR (one readdir
 * of the descriptor): the g<N> directories listed are the generations it
 * reads, so that one an append publishes after the listing is not seen,
 * and one missing from the middle is a damage, not the chain's end. Every
 * damage is recorded (rs_bucketdir_damage): a generation missing between
 * two listed ones, a g<N> at or below the base's generation, a manifest
 * missing, unreadable, of another kind, or unlike the base, a directory
 * renamed (its manifest says a generation no other one holds: read as that
 * generation, from where it is) or a copy (another holds it: not read), a
 * "previous" digest that is not its predecessor's, and a file or key index
 * that a manifest lists but that is missing or of another size on disk
 * (one fstatat each; a key index's damage is said as such, and does not
 * make its generation's rows unreadable). Entries of DIR (and of its
 * generations) that no
 * manifest names are strays, listed apart: no row is missing for them.
 * A damaged directory is refused by rs_bucketdir_open (readers, and writers
 * that would build on it); verify and repair open it with
 * RS_BUCKETDIR_TOLERANT to see every damage. */
#ifndef RINGSHARD_BUCKETDIR_H
#define RINGSHARD_BUCKETDIR_H

#include <stddef.h>
#include <stdint.h>
#include "ringshard/error.h"
#include "ringshard/filename.h"
#include "ringshard/manifest.h"

typedef struct {
    int fd;                 /* DIR, opened once; -1 when closed */
    char *path;             /* DIR as given */
    uint64_t dev, ino;      /* DIR's identity (st_dev, st_ino) at the open */
    uint64_t digest[2];     /* MurmurHash3_x64_128 of the manifests' digests, base then
                               generations: what tells two states of DIR apart */
    uint64_t base_digest[2];  /* of manifest.json's bytes */
    rs_manifest m;          /* DIR/manifest.json: the base generation (ring, options, base files) */
    size_t ngens;           /* appended generations read: m.generation + 1 .. + ngens */
    rs_manifest *gens;      /* [ngens] their manifests (kind "generation") */
    uint64_t (*gen_digests)[2];  /* [ngens] their manifests' digests */
    /* Every file of every generation, node by node (see above) */
    size_t nfiles;
    const rs_manifest_file **files;  /* [nfiles] each one's manifest entry */
    uint64_t *file_gen;     /* [nfiles] its generation */
    size_t *file_base;      /* [nfiles] its node's base file (index into m.files) */
    uint8_t *headerless;    /* [nfiles] 1: no header line although the directory has one (a
                               segment that an older version wrote; rs_bucketdir_segment) */
    char **paths;           /* [nfiles] "DIR/<name>": names in messages */
    const char **names;     /* [nfiles] names under fd ("0.csv.gz", "g00000002/0.csv.gz") */
    uint64_t rows, bytes, rejected;  /* totals over every generation */
    uint64_t last_gen;      /* the newest generation read (the base's when none) */
    /* The chain's check (see above) */
    size_t ndamage;
    struct rs_bucketdir_damage *damage;  /* [ndamage] in the order of the generations */
    size_t nstray;
    char **stray;           /* [nstray] names under fd that no manifest names ("x.txt", "g00000002/y") */
    size_t nlisted;
    uint64_t *listed;       /* [nlisted] the generations g<N> listed after the base's, ascending */
    uint8_t *gen_broken;    /* [ngens] 1: a data file of it is missing or of another size */
    uint64_t *gen_dir;      /* [ngens] the g<N> each was read from: its own number, but for a directory
                               renamed within a gap (rs_bucketdir_gen_dir) */
    /* Per file, found once by the open (readers ask for every file: no search of every
       generation's lists each time) */
    size_t *file_slot;      /* [nfiles] its generation's place in gens; SIZE_MAX for a base file */
    const rs_manifest_index **file_ix;  /* [nfiles] the entry of a later generation's "indexes"
                               that indexes it (the first one), or NULL */
    size_t *file_ix_slot;   /* [nfiles] that generation's place in gens */
} rs_bucketdir;

/* One damage of a directory's chain of generations. */
typedef struct rs_bucketdir_damage {
    char *msg;              /* "DIR/g00000003: missing (...)": what, naming the file */
    uint64_t gen;           /* the generation it concerns */
    uint8_t file;           /* a file or key index of a readable generation (verify names those itself):
                               1 missing or not a regular file, 2 of another size; | RS_DAMAGE_INDEX for a
                               key index (its generation's rows are whole: gen_broken is not set) */
    uint8_t dropped;        /* 1: the generation's manifest cannot be used: none of its rows is read */
    uint64_t ngens;         /* the generations it stands for (a run of missing ones: more than 1) */
} rs_bucketdir_damage;

#define RS_DAMAGE_INDEX 4

/* The name of the directory generation gen of bd was read from, into
 * out[16] (rs_gen_dir_name of gen when bd did not read it). */
void rs_bucketdir_gen_dir(const rs_bucketdir *bd, uint64_t gen, char out[16]);

/* rs_bucketdir_open_flags's flags. TOLERANT: a damaged chain does not fail
 * the open; bd holds every damage and reads what can be read: the base and
 * every generation whose manifest reads and agrees with the base (after a
 * gap too, a renamed one in its generation's place). INTACT (with TOLERANT): of those, only the generations whose
 * files and key indexes all match their manifests. */
#define RS_BUCKETDIR_TOLERANT 1
#define RS_BUCKETDIR_INTACT 2

/* Opens the directory dir and reads its manifests through the descriptor.
 * Errors: dir cannot be opened or is not a directory (RS_EXIT_IO), a
 * manifest cannot be read (RS_EXIT_IO) or is malformed or inconsistent
 * with the base (RS_EXIT_DATA, as rs_manifest_read, naming the file). A
 * manifest that cannot be read because DIR was replaced after it was
 * opened is said so (rs_bucketdir_explain). On failure bd is closed (fd
 * -1). */
int rs_bucketdir_open(rs_bucketdir *bd, const char *dir, rs_error *err);

/* rs_bucketdir_open reading the generations up to upto only (UINT64_MAX:
 * every one): what another reader of the same state found (MPI ranks, see
 * cluster.h). A generation up to upto that is missing is an error. */
int rs_bucketdir_open_upto(rs_bucketdir *bd, const char *dir, uint64_t upto, rs_error *err);

/* rs_bucketdir_open_upto with flags (RS_BUCKETDIR_*). Without TOLERANT a
 * damaged chain fails the open: RS_EXIT_DATA naming the first damage (and
 * how many more), or RS_EXIT_VERIFY when every damage is a file of a
 * readable generation (missing, or of another size: what a reader reports
 * as a file that does not match its manifest); when DIR was replaced
 * meanwhile, RS_EXIT_IO saying so instead. A file of another size alone
 * does not fail it: a reader's own check (rs_bucketdir_check_file) names
 * what differs in it, with RS_EXIT_VERIFY; writers refuse it
 * (rs_bucketdir_refuse_damage). Strays never fail it. */
int rs_bucketdir_open_flags(rs_bucketdir *bd, const char *dir, uint64_t upto, int flags, rs_error *err);

/* A writer (what: "compact", "--append", ...) refuses a damaged bd: 0 when
 * bd has no damage, else -1 with err RS_EXIT_DATA naming the first damage,
 * how many there are and what the user can do (verify, repair). */
int rs_bucketdir_refuse_damage(const rs_bucketdir *bd, const char *what, rs_error *err);

/* Closes the descriptor and frees everything bd holds (a zeroed or closed
 * bd is fine). */
void rs_bucketdir_close(rs_bucketdir *bd);

/* 1 when file i of bd is a segment of an appended generation (in
 * DIR/g<N>/), 0 when it is a base file. */
int rs_bucketdir_segment(const rs_bucketdir *bd, size_t i);

/* What a reader found in a file of a directory (rs_bucketdir_check_found):
 * its size on disk, data rows, data bytes (line ends counted as one LF),
 * empty lines and the CRC-32 of its data rows as written. */
typedef struct {
    uint64_t size, rows, bytes, blank_lines;
    uint32_t crc;
} rs_bucketdir_found;

/* Checks what a reader found in file i of bd against its manifest entry:
 * its size on disk (found->size), data rows, data bytes and, with
 * check_crc, the CRC-32 of its data (found->crc), and with header non-NULL
 * (the header line the file started with; ignored for a file without one
 * (headerless), when the manifest has none or the file is keys-only) the
 * header line. Returns 0, or -1 with RS_EXIT_VERIFY naming the file and
 * what differs (found, then what the manifest says). */
int rs_bucketdir_check_found(const rs_bucketdir *bd, size_t i, const rs_bucketdir_found *found, int check_crc,
                             const char *header, rs_error *err);

/* What rs_bucketdir_check_all says of a data file or a key index. */
enum {
    RS_FILE_INTACT = 0,     /* what its manifest says */
    RS_FILE_LONGER = 1,     /* a data file whose first file_bytes are what its manifest says, and bytes
                               follow them: whole once cut back to those (msg says so) */
    RS_FILE_DAMAGED = 2,    /* missing, shorter, unreadable, or not what its manifest says (msg) */
    RS_FILE_NONE = 3,       /* (key indexes) the file has none */
    RS_FILE_ALTERED = 4     /* a data file whose rows are what its manifest says, but whose stored bytes
                               are not (their CRC-32 against stored_crc32: bytes no decoder reads, such
                               as a gzip member header's MTIME, changed): whole once rewritten (msg) */
};

typedef struct {
    uint8_t state;          /* RS_FILE_* */
    uint8_t machine;        /* 1: the file could not be opened for a reason of the machine, not of its bytes
                               (permission, too many open files, memory): rs_bucketdir_check_all fails */
    char *msg;              /* LONGER, DAMAGED, ALTERED: what, naming the file (malloc'd; NULL if out of
                               memory) */
} rs_bucketdir_verdict;

/* THE check of what a directory holds, file by file, that repair trusts
 * and that agrees with verify on which files are damaged: every data file
 * of bd is decoded (its codec's own checks: gzip members' CRC-32 and
 * ISIZE, zstd frames' checksums) up to its manifest's file_bytes, and its
 * rows, data bytes, CRC-32 (ISA-L), blank lines and header judged by
 * rs_bucketdir_check_found, then its stored bytes by
 * rs_bucketdir_check_stored; every key index is checked for its size and
 * CRC-32. files[i] and indexes[i] (arrays of bd->nfiles) get file i's
 * verdicts. Files are read on `threads` threads at once (< 1: OpenMP's
 * default). 0, or -1 with err (RS_EXIT_IO out of memory,
 * RS_EXIT_INTERRUPTED); the verdicts' messages are the caller's to free
 * (rs_bucketdir_verdicts_free). */
int rs_bucketdir_check_all(const rs_bucketdir *bd, int threads, rs_bucketdir_verdict *files,
                           rs_bucketdir_verdict *indexes, rs_error *err);

/* Frees v[0..n)'s messages and v. */
void rs_bucketdir_verdicts_free(rs_bucketdir_verdict *v, size_t n);

/* Data file i's stored bytes (its first file_bytes, as on disk) against
 * its manifest's stored_crc32, the check that covers the bytes no decoder
 * reads: 0 when they agree or the manifest has none (written before
 * 0.3.0); -1 with err otherwise: RS_EXIT_VERIFY naming the file (as, or
 * its path when NULL) and both CRC-32s, or RS_EXIT_IO when it cannot be
 * read. verify and repair (through rs_bucketdir_check_all) judge a file's
 * bytes by it, as compact does when it copies them. */
int rs_bucketdir_check_stored(const rs_bucketdir *bd, size_t i, const char *as, rs_error *err);

/* Leaves out of bd (open) the generations gens[g] for which drop[g] is 1,
 * as if they had not been read: bd->gens, the list of files, the totals
 * and last_gen are those of the others; the damages of a dropped one are
 * marked dropped. 0, or -1 with err (out of memory: bd is then only fit to
 * be closed). */
int rs_bucketdir_drop_gens(rs_bucketdir *bd, const uint8_t *drop, rs_error *err);

/* File i's key index (keyidx.h), as the manifests list it: its own
 * (beside it, in its generation's manifest), or one that a later
 * generation built for it (that generation's "indexes"). Returns 1 with
 * *name (malloc'd: its name under bd->fd), *size, *crc32 and *by_row (the
 * listing manifest's options.dedup is "row": the index holds rows), 0 when
 * it has none, -1 when out of memory. */
int rs_bucketdir_index_of(const rs_bucketdir *bd, size_t i, char **name, uint64_t *size, uint32_t *crc32,
                          int *by_row);

/* The manifest that lists file i ("DIR/manifest.json",
 * "DIR/g00000002/manifest.json"), for messages: malloc'd, NULL when out of
 * memory. */
char *rs_bucketdir_manifest_of(const rs_bucketdir *bd, size_t i);

/* err, set by reading a file that the manifest at manifest lists (a bucket
 * directory's file), as every reader says it: a data error (RS_EXIT_DATA:
 * it does not decode, a row or its header is malformed) means the file
 * differs from what its manifest vouches for, RS_EXIT_VERIFY with "(the
 * file does not match MANIFEST)". Any other error is left as it is. */
void rs_bucketdir_vouched_error(rs_error *err, const char *manifest);

/* 1 when bd->path no longer names the directory that was opened (it was
 * replaced or removed since), else 0. */
int rs_bucketdir_replaced(const rs_bucketdir *bd);

/* After a read of bd failed with RS_EXIT_IO (e.g. a file that can no
 * longer be opened: a --force run replaced DIR and removed the previous
 * generation, whose files this reader was still reading): when DIR is no
 * longer the directory that was opened, rewrites err to say so. */
void rs_bucketdir_explain(const rs_bucketdir *bd, rs_error *err);

/* Writing a bucket or move directory (bucket, dedup, plan --emit). */
#include "ringshard/outdir.h"

/* (The files' names: ringshard/filename.h.) */

/* The paths of names[0..n) inside od's temporary directory: a malloc'd
 * array of n malloc'd paths (rs_free_strings frees it), or NULL with err
 * (RS_EXIT_IO) when out of memory. */
char **rs_outdir_paths(const rs_outdir *od, const char *const *names, size_t n, rs_error *err);

/* An input's checksum as the manifest writes it: "crc64:" and 16 lowercase
 * hex digits, NUL-terminated, into out[RS_CHECKSUM_TEXT]. */
#define RS_CHECKSUM_TEXT 23
void rs_checksum_text(uint64_t crc64, char out[RS_CHECKSUM_TEXT]);

/* Writes m as manifest.json into od's temporary directory. Returns 0, or -1
 * with err (rs_manifest_write's, or RS_EXIT_IO when out of memory). */
int rs_outdir_manifest(const rs_outdir *od, const rs_manifest *m, rs_error *err);

/* One gzip member (zstd piece) of a damaged data file (members.c). */
typedef struct {
    uint64_t at, len;       /* its bytes in the file */
    uint64_t records;       /* the records it holds: counted when it decodes to whole records, else as
                               its RS header declares */
    uint64_t bytes;         /* its decoded bytes and their CRC-32 (when it decodes) */
    uint32_t crc;
    int counted;            /* 1: records counted (it decodes to whole records), 0: declared */
    int intact;             /* 1: it decodes by itself (its codec's checks pass) to whole records, no
                               blank line, the lines and records its header declares */
} rs_member_verdict;

/* Data file i of bd (gzip or zstd) read member by member, hopping along
 * its RS headers from byte 0 within its first file_bytes (and what is on
 * disk), each member decoded by itself: *v (malloc'd, the caller's to
 * free), *n of them, in order; *tail: where the chain stops (file_bytes
 * when it reaches it; before it, the rest is not read: a header that is
 * not ringshard's, or past the file's end). -1 when the file is plain,
 * cannot be opened, or out of memory (nothing read). */
int rs_bucketdir_members(const rs_bucketdir *bd, size_t i, rs_member_verdict **v, size_t *n, uint64_t *tail);

#endif
