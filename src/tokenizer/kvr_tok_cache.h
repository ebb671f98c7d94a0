/*
 * Copyright (C) kvroute developers
 *
 * The segment cache: the ids of whole text segments (the gaps between
 * added tokens, docs/tokenizer.md 3), keyed by the segment's bytes.  HF
 * normalizes, splits and encodes every gap on its own, so a gap's ids
 * depend only on its bytes; a chat prompt's repeated system prompt then
 * costs a hash, a compare and a copy.  A hit compares the whole key, so it
 * can never return another segment's ids.  Memory is bounded (entries
 * and keys and ids are counted), least recently used entries go first.
 * Per process: after fork each worker fills its own copy.
 */

#ifndef _KVR_TOK_CACHE_H_INCLUDED_
#define _KVR_TOK_CACHE_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "kvr_tok_types.h"


typedef struct kvr_tok_cache_s  kvr_tok_cache_t;


/* max_bytes bounds entries, keys and ids; NULL when out of memory */
kvr_tok_cache_t *kvr_tok_cache_create(size_t max_bytes);
void kvr_tok_cache_free(kvr_tok_cache_t *c);

/* the hash get and put take: XXH3-64 with a per-cache random seed */
uint64_t kvr_tok_cache_hash(const kvr_tok_cache_t *c, const uint8_t *key,
    size_t len);

/* the memory one entry of len key bytes and n_ids ids is counted as */
size_t kvr_tok_cache_entry_size(size_t len, size_t n_ids);

/* the entry's ids (marked recently used), or NULL */
const uint32_t *kvr_tok_cache_get(kvr_tok_cache_t *c, const uint8_t *key,
    size_t len, uint64_t hash, size_t *n_ids);

/*
 * Stores a copy of key and ids, evicting the least recently used entries
 * to stay within the bound.  Returns 0, 1 when not stored (too large for
 * the bound, or already present), -1 when out of memory.
 */
int kvr_tok_cache_put(kvr_tok_cache_t *c, const uint8_t *key, size_t len,
    uint64_t hash, const uint32_t *ids, size_t n_ids);

void kvr_tok_cache_stats(const kvr_tok_cache_t *c,
    kvr_tokenizer_cache_stats_t *st);


#endif /* _KVR_TOK_CACHE_H_INCLUDED_ */
