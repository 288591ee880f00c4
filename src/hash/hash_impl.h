/* Internal: one rs_hash_fn per source file in src/hash/, named
 * rs_hash_<name> after its row in RS_HASH_TABLE. */
#ifndef RS_HASH_IMPL_H
#define RS_HASH_IMPL_H
#include "ringshard/hash.h"

#define RS_HASH_DECL(id, name, bits, sign, seed, help) \
    int64_t rs_hash_##name(const uint8_t *key, size_t len, uint64_t seed_);
RS_HASH_TABLE(RS_HASH_DECL)
#undef RS_HASH_DECL

#endif
