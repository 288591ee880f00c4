/* Binds RS_HASH_TABLE's rows to their functions. */
#include <string.h>
#include "hash/hash_impl.h"

static const rs_hash_info hash_table[RS_HASH__COUNT] = {
#define RS_HASH_ROW(id, name, bits, sign, seed, help) \
    {RS_HASH_##id, #name, bits, sign, seed, help, rs_hash_##name},
    RS_HASH_TABLE(RS_HASH_ROW)
#undef RS_HASH_ROW
};

const rs_hash_info *rs_hash_get(rs_hash_id id)
{
    return &hash_table[id];
}

const rs_hash_info *rs_hash_by_name(const char *name)
{
    for (int i = 0; i < RS_HASH__COUNT; i++)
        if (strcmp(hash_table[i].name, name) == 0)
            return &hash_table[i];
    return NULL;
}

int64_t rs_hash(rs_hash_id id, const void *key, size_t len, uint64_t seed)
{
    return hash_table[id].fn(key, len, seed);
}
