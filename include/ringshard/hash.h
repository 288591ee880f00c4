/* ringshard/hash.h - the key hash functions.
 *
 * A key is a byte string. Every hash function returns the value the
 * reference (Java) implementation computes, as a signed 64-bit integer:
 * 32-bit Java ints are sign-extended, unsigned 32-bit values (md5_ketama)
 * are zero-extended. What a ring does with that value (clearing the sign
 * bit, signed or unsigned order) is the ring's business, not the hash's.
 *
 * The functions that the Java references compute over UTF-16 code units
 * (fnv1_32_java, java_hashcode) convert the key from UTF-8 exactly as
 * Java's UTF-8 decoder does; see rs_utf8_next_utf16() for the rule on
 * malformed input. All other functions hash the key's bytes as they are.
 */
#ifndef RINGSHARD_HASH_H
#define RINGSHARD_HASH_H

#include <stddef.h>
#include <stdint.h>

/* The one table of hash functions: enum constant, command-line name (also
 * the name of its function, rs_hash_<name>, and of its source file in
 * src/hash/), value width in bits, whether the Java value is signed, default
 * seed, help text. Adding a function means one line here and one file. */
#define RS_HASH_TABLE(X)                                                             \
    X(MURMUR3_128, murmur3_128, 64, 1, 0,                                          \
      "MurmurHash3 x64_128, value h1 = first 8 digest bytes little-endian (Guava asLong)") \
    X(MURMUR3_32, murmur3_32, 32, 1, 0,                                            \
      "MurmurHash3 x86_32 (Guava murmur3_32 asInt)")                                 \
    X(FNV1_32_JAVA, fnv1_32_java, 32, 1, 0,                                        \
      "Java FNV1_32 variant over UTF-16 code units, then abs()")                     \
    X(JAVA_HASHCODE, java_hashcode, 32, 1, 0,                                      \
      "Java String.hashCode() over UTF-16 code units")                               \
    X(MURMUR64A_JAVA, murmur64a_java, 64, 1, 0x1234ABCD,                           \
      "Java MurmurHash64A variant (sign-extended tail bytes)")                       \
    X(MD5_KETAMA, md5_ketama, 32, 0, 0,                                            \
      "MD5, first 4 digest bytes little-endian (ketama)")

typedef enum {
#define RS_HASH_ENUM(id, name, bits, sign, seed, help) RS_HASH_##id,
    RS_HASH_TABLE(RS_HASH_ENUM)
#undef RS_HASH_ENUM
    RS_HASH__COUNT
} rs_hash_id;

/* A hash function: key bytes, length, seed -> the Java value (see above). */
typedef int64_t (*rs_hash_fn)(const uint8_t *key, size_t len, uint64_t seed);

typedef struct {
    rs_hash_id id;
    const char *name;
    unsigned bits;        /* 32 or 64 */
    int is_signed;        /* the Java value is a signed int/long */
    uint64_t default_seed;
    const char *help;
    rs_hash_fn fn;
} rs_hash_info;

/* Returns the descriptor of hash `id`; id must be < RS_HASH__COUNT. */
const rs_hash_info *rs_hash_get(rs_hash_id id);

/* Looks a hash up by its command-line name. Returns NULL if unknown. */
const rs_hash_info *rs_hash_by_name(const char *name);

/* Hashes key[0..len) with hash `id` and `seed`. */
int64_t rs_hash(rs_hash_id id, const void *key, size_t len, uint64_t seed);

/* --- the primitives, for callers that need the whole digest --- */

/* MurmurHash3_x64_128 of key[0..len): out[0] = h1, out[1] = h2, i.e. the
 * digest's bytes 0-7 and 8-15 read little-endian. Tail bytes are unsigned. */
void rs_murmur3_x64_128(const void *key, size_t len, uint32_t seed, uint64_t out[2]);

/* MurmurHash3_x86_32 of key[0..len). */
uint32_t rs_murmur3_x86_32(const void *key, size_t len, uint32_t seed);

/* CRC-64/XZ (ECMA-182, reflected, initial value and final XOR all ones:
 * what xz --check=crc64 computes) of buf[0..len), continuing from crc (0
 * to start; the previous return value to continue, so that a stream may be
 * fed in pieces). */
uint64_t rs_crc64(uint64_t crc, const void *buf, size_t len);

/* rs_crc64 by a table (8 bytes a step), whatever the build: what rs_crc64
 * computes without ISA-L, kept callable so that the two are compared. */
uint64_t rs_crc64_portable(uint64_t crc, const void *buf, size_t len);

/* rs_crc64 of A||B given rs_crc64 of A (crc_a), of B (crc_b) and B's
 * length (as zlib's crc32_combine): what the pieces of one stream read
 * apart (units, ranks) add up to, as if it had been read whole. */
uint64_t rs_crc64_combine(uint64_t crc_a, uint64_t crc_b, uint64_t len_b);

/* MD5 of key[0..len) into out[16] (RFC 1321; implemented in the project). */
void rs_md5(const void *key, size_t len, uint8_t out[16]);

/* UTF-8 -> UTF-16 as Java's StandardCharsets.UTF_8 decoder does: every
 * maximal malformed subpart becomes one U+FFFD (the Unicode "best practice"
 * that Java 8+ follows: overlongs, bytes F5-FF, stray continuation bytes and
 * truncated sequences), with Java's one exception: a UTF-8-encoded
 * surrogate (ED A0-BF xx) is ONE U+FFFD, not three, because Java rejects it
 * only after reading all of its bytes. Checked against JDK 17 on 850,000
 * inputs. Decodes one code point at s[*pos..len), advances *pos and writes
 * 1 or 2 UTF-16 code units to out; returns the number of units (0 at the
 * end of the input). */
int rs_utf8_next_utf16(const uint8_t *s, size_t len, size_t *pos, uint16_t out[2]);

#endif
