/*
 * Copyright (C) kvroute developers
 *
 * Block keys: chained 64-bit hashes over fixed-size blocks of a prompt.
 * Plain C, no nginx types.
 *
 * Token blocks follow NVIDIA Dynamo's scheme (routers.md A.2), so they are
 * interchangeable with Dynamo's:
 *   block[i] = XXH3_64(le32 bytes of block i's ids, seed)
 *   seq[0]   = block[0]
 *   seq[i]   = XXH3_64(le64(seq[i-1]) || le64(block[i]), KVR_HASH_SEED)
 * Text chunks (used until the tokenizer is configured) need no such
 * compatibility and cost one hash each:
 *   seq[0]   = XXH3_64(chunk 0, seed)
 *   seq[i]   = XXH3_64(chunk i, seq[i-1])
 * Both:
 *   seed     = KVR_HASH_SEED + XXH3_64(lora, 0) + XXH3_64(salt, 1)
 *              (each term only when present; additions wrap)
 * Partial tail blocks are dropped.
 */

#ifndef _KVR_HASH_H_INCLUDED_
#define _KVR_HASH_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


#define KVR_HASH_SEED  1337


/* seed for a request: lora and salt may be NULL (absent) */
uint64_t kvr_hash_seed(const char *lora, size_t lora_len, const char *salt,
    size_t salt_len);

uint64_t kvr_hash_chain(uint64_t parent, uint64_t block);

/*
 * KV events mode: a chain salted with cache_salt continues after this
 * virtual parent instead of carrying the salt in its seed, since the
 * engines name the salt in a chain's first block only (vLLM: its extra
 * keys) and its later blocks must be keyed without it.
 */
uint64_t kvr_hash_salt_root(const char *salt, size_t salt_len);

/*
 * Token keys of a prompt as KV events key its blocks: seed from the LoRA
 * adapter only; salted (salt not NULL) chains after kvr_hash_salt_root().
 */
size_t kvr_hash_token_blocks_salted(const uint32_t *ids, size_t n,
    size_t block_size, uint64_t seed, const char *salt, size_t salt_len,
    uint64_t *out, size_t max_out);

/*
 * Text keys: data cut into chunk_bytes-sized chunks, each hashed with the
 * previous chunk's key as its seed (the first with seed).  Writes at most
 * max_out sequence hashes; returns how many.
 */
size_t kvr_hash_text_blocks(const void *data, size_t len, size_t chunk_bytes,
    uint64_t seed, uint64_t *out, size_t max_out);


/*
 * The same keys for a text given in pieces (a prompt never rendered into
 * one buffer): after init, add the pieces in order; n then equals what
 * kvr_hash_text_blocks() returns for their concatenation, and out holds
 * the same keys.  Chunks inside a piece are hashed in place; only a chunk
 * that straddles pieces is gathered into part (chunk_bytes bytes, the
 * caller's).
 */
typedef struct {
    uint64_t         seq;
    size_t           chunk_bytes;
    uint64_t        *out;
    size_t           max_out;
    size_t           n;           /* keys written to out */
    size_t           len;         /* bytes added */
    unsigned char   *part;
    size_t           part_len;
} kvr_hash_text_t;


void kvr_hash_text_init(kvr_hash_text_t *ht, size_t chunk_bytes,
    uint64_t seed, uint64_t *out, size_t max_out, unsigned char *part);

void kvr_hash_text_add(kvr_hash_text_t *ht, const void *data, size_t len);

/* XXH3_64(64 bytes at data, seed): the default text chunk's hash */
uint64_t kvr_hash_text_chunk64(const void *data, uint64_t seed);

/*
 * Token keys: ids cut into block_size-token blocks, each block hashed as
 * little-endian u32 bytes with seed, chained.
 */
size_t kvr_hash_token_blocks(const uint32_t *ids, size_t n, size_t block_size,
    uint64_t seed, uint64_t *out, size_t max_out);

/*
 * The same for blocks that continue a sequence whose last block's key is
 * parent (a KV event's BlockStored under a parent block).
 */
size_t kvr_hash_token_blocks_after(uint64_t parent, const uint32_t *ids,
    size_t n, size_t block_size, uint64_t seed, uint64_t *out,
    size_t max_out);


#endif /* _KVR_HASH_H_INCLUDED_ */
