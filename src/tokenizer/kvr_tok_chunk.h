/*
 * Copyright (C) kvroute developers
 *
 * Raw chunks of long gaps, for tokenizers whose normalizer is bytewise,
 * whose pre-tokenizer keeps a gap whole and whose model cuts words
 * (Llama-2, Gemma 3): such a gap's ids are those of its raw parts cut
 * where no merge joins the normalized text on either side.  A gap of at
 * least 2 * KVR_TOK_CHUNK bytes is cut into chunks of KVR_TOK_CHUNK
 * bytes or more from its start, so that gaps that begin alike (a chat's
 * system prompt, then different questions) share their first chunks:
 * the first is the segment cache's, the others go to a per-process cache
 * of KVR_TOK_CHUNK_CACHE bytes of their own.
 */

#ifndef _KVR_TOK_CHUNK_H_INCLUDED_
#define _KVR_TOK_CHUNK_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "kvr_tokenizer.h"
#include "kvr_tok_cache.h"


#define KVR_TOK_CHUNK        256
#define KVR_TOK_CHUNK_CACHE  (4u << 20)


/* a raw chunk of a long gap: where it ends, its hash for its cache */
typedef struct {
    size_t             end;
    uint64_t           hash;
} kvr_tok_chunk_t;


/* per process: the chunk cache (made on first use), a gap's chunks */
typedef struct {
    kvr_tok_cache_t   *cache;
    int                failed;         /* the cache could not be made */
    kvr_tok_chunk_t   *plan;
    size_t             n_plan;
    size_t             plan_cap;
} kvr_tok_chunks_t;


/* 1 when the chunk cache is there (made now if need be), 0 when not */
int kvr_tok_chunks_ready(kvr_tok_chunks_t *ch);

/*
 * A gap of at least 2 * KVR_TOK_CHUNK bytes of a raw_chunks tokenizer, in
 * raw chunks through the segment cache and the chunk cache (ready)
 */
int kvr_tok_chunks_encode(kvr_tokenizer_t *tk, const uint8_t *s, size_t len,
    int at_start, kvr_ids_t *out);

/* drops the chunk cache: made again on next use */
void kvr_tok_chunks_reset(kvr_tok_chunks_t *ch);

void kvr_tok_chunks_free(kvr_tok_chunks_t *ch);


#endif /* _KVR_TOK_CHUNK_H_INCLUDED_ */
