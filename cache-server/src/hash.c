/* Key hash: FNV-1a over the bytes, then a 64-bit finaliser so that the low bits (bucket index)
 * and the high bits (stripe and LRU choice) are both well mixed. */
#include "cache.h"

uint32_t hash(const char *key, size_t nkey)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < nkey; i++) {
        h ^= (unsigned char)key[i];
        h *= 0x100000001b3ull;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return (uint32_t)h;
}
