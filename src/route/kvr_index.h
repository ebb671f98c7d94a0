/*
 * Copyright (C) kvroute developers
 *
 * The block index: which server holds which block.  It lives in one
 * contiguous memory region (a shared-memory zone in nginx) and uses only
 * offsets inside that region, so every process that maps it can use it.
 * Plain C, no nginx types, no locking: the caller serialises access.
 *
 * Entries are (block hash, server slot) pairs in a hash table.  Every
 * server slot keeps its own LRU list of its entries; in approximate mode
 * the list models the engine's prefix cache (bounded by the slot's
 * capacity in blocks, least recently used evicted first and, like vLLM's
 * free queue, a sequence's tail blocks before its head).  When the region
 * has no free entry left, the LRU entry of the fullest slot is evicted:
 * recording never fails.
 */

#ifndef _KVR_INDEX_H_INCLUDED_
#define _KVR_INDEX_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


#define KVR_INDEX_MAX_SLOTS     64
#define KVR_INDEX_NAME_LEN      64


typedef struct kvr_index_s  kvr_index_t;


typedef struct {
    uint64_t   entries;          /* entries in use */
    uint64_t   capacity;         /* entries the region can hold */
    uint64_t   evictions_full;   /* evicted because the region was full */
} kvr_index_stats_t;


typedef struct {
    char       name[KVR_INDEX_NAME_LEN];
    uint32_t   name_len;
    uint32_t   in_use;
    uint64_t   blocks;            /* entries of this slot */
    uint64_t   capacity;          /* modelled cache size in blocks, 0 = none */
    uint64_t   evictions;         /* evicted because over capacity */
} kvr_index_slot_info_t;


/* smallest region kvr_index_init() accepts */
size_t kvr_index_min_size(void);

/*
 * Formats region as an empty index, or, when it already holds an index of
 * the same layout version and size, keeps its content (reload).
 * Returns NULL if size is too small.
 */
kvr_index_t *kvr_index_init(void *region, size_t size);

/* finds or creates the slot named name; -1 when all slots are taken */
int kvr_index_slot(kvr_index_t *ix, const char *name, size_t len);

void kvr_index_slot_set_capacity(kvr_index_t *ix, int slot,
    uint64_t capacity_blocks);

/* number of leading hashes[] present for slot */
size_t kvr_index_match(kvr_index_t *ix, int slot, const uint64_t *hashes,
    size_t n);

/*
 * What an offload tier whose blocks span `group` blocks each gives after
 * the first `from` blocks, as vLLM's offloading connector loads it: each
 * group is held as the key of its last block; the groups are looked up
 * from the one holding block `from` while present, and the blocks from
 * `from` to the end of the last count only when they reach at least one
 * group (fewer are computed, not loaded).  group <= 1: the leading run of
 * hashes[from..n-1].
 */
size_t kvr_index_match_groups(kvr_index_t *ix, int slot,
    const uint64_t *hashes, size_t n, size_t from, size_t group);

/*
 * Leading-run match for several slots at once: overlap[i] for slots[i].
 * Stops walking as soon as no slot matches any more.
 */
void kvr_index_match_slots(kvr_index_t *ix, const int *slots, size_t nslots,
    const uint64_t *hashes, size_t n, uint32_t *overlap);

/*
 * The same by jumps of stride blocks: probes blocks 0, stride, 2*stride,
 * ... while present, then walks the last gap block by block.  Exact when
 * a slot's blocks of a sequence form a leading run, which recording and
 * tail-first eviction keep true; a hole between two probes that are both
 * present is not seen (the overlap is then overestimated).  Cost for a
 * fully cached prompt of n blocks: about n / stride + stride lookups.
 * Before probing, the slot's lru list is followed from block 0 while it
 * holds the sequence in order (a prompt recorded before): when it holds
 * all n blocks that is the answer, else the jumps go on from the last
 * probe it passed; the result is the jumps' either way.
 */
void kvr_index_match_slots_jump(kvr_index_t *ix, const int *slots,
    size_t nslots, const uint64_t *hashes, size_t n, size_t stride,
    uint32_t *overlap);

/*
 * Approximate mode: slot now holds hashes[0..n-1] (a prompt's chained
 * blocks in order).  Present ones are refreshed, missing ones inserted, and
 * they are ordered so that hashes[n-1] is evicted first and hashes[0]
 * last.  Then the slot is trimmed to its capacity.  Returns the number of
 * entries evicted.  When kvr_index_match_slots_jump() found hashes (the
 * same array, the same n) whole on slot's list and the index has not
 * changed since, that run is reused instead of looked up again.
 */
size_t kvr_index_record(kvr_index_t *ix, int slot, const uint64_t *hashes,
    size_t n);

/*
 * Exact mode (KV events): reference counted, since an engine may store the
 * same block twice.  add_ref inserts or increments; remove_ref decrements
 * and removes at zero.  Return the new count (0 when absent).
 */
uint32_t kvr_index_add_ref(kvr_index_t *ix, int slot, uint64_t hash);
uint32_t kvr_index_remove_ref(kvr_index_t *ix, int slot, uint64_t hash);

/*
 * Starts loading the bucket add_ref() and remove_ref() of hash in slot
 * read first (a cache miss in a large index), so that a caller knowing
 * its next blocks overlaps their misses.  Changes nothing.
 */
void kvr_index_prefetch_ref(kvr_index_t *ix, int slot, uint64_t hash);

/* removes every entry of slot; keeps the slot */
void kvr_index_clear_slot(kvr_index_t *ix, int slot);

/* removes the slot itself, freeing its entries */
void kvr_index_release_slot(kvr_index_t *ix, int slot);

/* drops every entry, keeps the slots (names, capacities) */
void kvr_index_clear_all(kvr_index_t *ix);

void kvr_index_stats(kvr_index_t *ix, kvr_index_stats_t *stats);
void kvr_index_slot_info(kvr_index_t *ix, int slot,
    kvr_index_slot_info_t *info);

/* the blocks field of kvr_index_slot_info() alone (0 for a bad slot) */
uint64_t kvr_index_slot_blocks(kvr_index_t *ix, int slot);


#endif /* _KVR_INDEX_H_INCLUDED_ */
