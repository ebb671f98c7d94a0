/*
 * Copyright (C) kvroute developers
 *
 * One engine's KV event stream applied to the block index: its blocks are
 * re-keyed with kvroute's own hashes from the token ids the events carry
 * (so the engine's hash function and seed never matter) and removed
 * through the engine-hash map.  Plain C, no nginx types, no locking (the
 * caller holds the index's lock).
 *
 * What is applied (docs: README "KV events", kv-events.md):
 *   - the GPU tier (medium absent, empty or "GPU", any case) is the
 *     routing index; stores and removals of offload tiers are counted in
 *     offloaded and never touch it: the host tier's ("CPU", "CPU_PINNED",
 *     "CPU_TIER1") and the disk tier's ("DISK", "NVME", "STORAGE",
 *     "CPU_TIER2", and "EXTERNAL", "REMOTE", "NETWORK", "SHARED", weighed
 *     alike, as NVIDIA Dynamo does) go to an index slot of the tier's own,
 *     made on the tier's first event and named after the GPU slot
 *     ("name/host", "name/disk"), reference counted as the GPU's and
 *     keyed from their token ids as the GPU's, or, without token ids
 *     (vLLM's offloading connector), by the GPU's key of the same engine
 *     hash; an offloaded block of g GPU blocks (the connector's
 *     block_size g times kvroute's) is held as the key of its last GPU
 *     block, and g is published in tier_groups for the balancer's walk
 *     (kvr_index_match_groups()); other media are counted only;
 *   - only the full-attention KV cache group: an event whose
 *     kv_cache_spec_kind is given and is not "full_attention" or
 *     "mla_attention", or whose group_idx is a group learned to be another
 *     kind (from a store naming it), or, unlearned, is not 0, is counted in
 *     other_group;
 *   - a store of one partial block (one hash, fewer tokens than a
 *     block) is skipped and counted in partial, not as another block size;
 *   - an engine hash is held once: a BlockStored of a hash already held
 *     (vLLM's kv_cache_report_mode="full" re-announces reused blocks; a
 *     duplicate store) adds nothing and is counted in reannounced, and one
 *     BlockRemoved removes it;
 *   - keys: seed from the LoRA adapter (lora_name; a lora_id alone keys
 *     blocks no request reproduces), a salted chain after
 *     kvr_hash_salt_root(), and a block whose extra keys a request cannot
 *     reproduce (ev->extra) mixed with their digest, so no request matches
 *     it or the blocks chained after it.
 */

#ifndef _KVR_KVSTATE_H_INCLUDED_
#define _KVR_KVSTATE_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "kvr_events.h"
#include "kvr_index.h"
#include "kvr_emap.h"
#include "kvr_homes.h"


typedef struct {
    uint64_t        batches;          /* batches applied */
    uint64_t        stored;           /* blocks stored */
    uint64_t        removed;          /* blocks removed */
    uint64_t        cleared;          /* AllBlocksCleared */
    uint64_t        gaps;             /* sequence gaps and resets */
    uint64_t        orphans;          /* stores under an unknown parent */
    uint64_t        bad_block_size;   /* stores of another block size */
    uint64_t        bad_shape;        /* token count != blocks * size */
    uint64_t        unknown_removed;  /* removals of unknown handles */
    uint64_t        map_full;         /* handles not kept: map full */
    uint64_t        offloaded;        /* stores, removals of other tiers */
    uint64_t        other_group;      /* events of other KV cache groups */
    uint64_t        reannounced;      /* stores of a hash already held */
    uint64_t        rejected;         /* batches that did not decode */
    uint64_t        partial;          /* stores of a partial block */
    uint64_t        tier_stored;      /* offload tiers' blocks held */
    uint64_t        tier_removed;
    uint64_t        tier_unkeyed;     /* tier blocks no key is known of */
} kvr_kvstats_t;


/* the offload tiers tracked: kvr_kvstate_tier() */
typedef enum {
    KVR_TIER_GPU = 0,                   /* the routing index */
    KVR_TIER_HOST,                      /* host memory */
    KVR_TIER_DISK,                      /* disk and external storage */
    KVR_TIER_OTHER                      /* a medium not known: counted */
} kvr_tier_e;

#define KVR_KVSTATE_TIERS  2            /* host, disk: tiers[tier - 1] */

/*
 * The most GPU blocks an offloaded block may span (vLLM's offloading
 * connector with a block_size of several GPU blocks names each group by
 * the hash of its last GPU block)
 */
#define KVR_KVSTATE_TIER_GROUP_MAX  64


typedef struct {
    kvr_emap_t     *handles;          /* engine hash -> key; NULL until
                                         the tier's first event */
    int             slot;             /* -1 until made */
} kvr_kvtier_t;


#define KVR_KVSTATE_GROUPS  32          /* group kinds learned */


/* a batch's sequence number against the last one applied */
typedef enum {
    KVR_SEQ_NEXT = 0,                   /* the first, or last + 1 */
    KVR_SEQ_GAP,                        /* later: batches were missed */
    KVR_SEQ_OLD                         /* at or before the last */
} kvr_seq_e;


/* what to do with a replay's reply (kvr_kvstate_replayed()) */
typedef enum {
    KVR_REPLAY_APPLY = 0,               /* the next batch */
    KVR_REPLAY_SKIP,                    /* applied already */
    KVR_REPLAY_AGAIN,                   /* a hole: ask again from last + 1 */
    KVR_REPLAY_LOST                     /* never to be had: accept the gap */
} kvr_replay_e;


typedef struct {
    kvr_emap_t     *handles;          /* engine hash -> kvroute key */
    int             slot;             /* the server's index slot */
    uint32_t        block_size;       /* kvroute's configured block size */
    uint64_t        last_seq;
    unsigned        have_seq:1;
    unsigned        shared:1;         /* the slot has other streams too */
    uint32_t        last_bad_block_size;
    uint8_t         groups[KVR_KVSTATE_GROUPS];  /* 0 unknown, 1 main, 2 */
    kvr_homes_t    *roots;            /* the prefixes the engine stored
                                         (first blocks), or NULL */
    int             pred_slot;        /* the server's predictions, -1:
                                         none; a block its events store
                                         or remove is predicted no more */
    size_t          max_handles;      /* of each tier's map too */
    kvr_kvtier_t    tiers[KVR_KVSTATE_TIERS];
    int            *tier_slots;       /* where the balancer reads the
                                         tiers' slots (slot + 1, 0: none),
                                         or NULL */
    int            *tier_groups;      /* and the GPU blocks each tier's
                                         block spans (0 or 1: one), or
                                         NULL */
    kvr_kvstats_t   stats;
} kvr_kvstate_t;


int kvr_kvstate_init(kvr_kvstate_t *st, int slot, uint32_t block_size,
    size_t max_handles);
void kvr_kvstate_free(kvr_kvstate_t *st);

/* the tier an event's medium names (len 0: the GPU's) */
kvr_tier_e kvr_kvstate_tier(const uint8_t *medium, size_t len);

/*
 * A batch's sequence number: returns 0 when it follows the last one, 1
 * after a gap or a restart of the engine (the sequence went back): the
 * server's entries are then dropped, since removals may have been lost,
 * and rebuilt from the events that follow.
 */
int kvr_kvstate_sequence(kvr_kvstate_t *st, kvr_index_t *ix, uint64_t seq);

/* where seq stands against the last batch applied (nothing changes) */
kvr_seq_e kvr_kvstate_seq(const kvr_kvstate_t *st, uint64_t seq);

/*
 * A reply of a replay asked from the last applied batch + 1: the next
 * batch applies, older ones were applied; a later one is a hole, asked
 * again when the replay has applied some batches (progress: the engine's
 * ROUTER drops replies past its high-water mark, end marker included, so
 * a long replay comes in pages), and otherwise accepted as lost (the
 * engine's buffer no longer holds what is missing, or the batch is
 * rejected each time): no replay loops.
 */
kvr_replay_e kvr_kvstate_replayed(const kvr_kvstate_t *st, uint64_t seq,
    uint64_t progress);

/*
 * One batch, decoded with dec.  A batch that does not decode changes
 * nothing, its sequence number included (counted in rejected), so the
 * next one shows the gap.  Otherwise its sequence is taken as
 * kvr_kvstate_sequence() does (a gap or a restart drops what the index
 * held: *reset is set) and its events applied.
 */
kvr_events_status_e kvr_kvstate_batch(kvr_kvstate_t *st, kvr_index_t *ix,
    kvr_events_decoder_t *dec, uint64_t seq, const uint8_t *payload,
    size_t len, kvr_event_batch_t *batch, int *reset);

/* one decoded event */
void kvr_kvstate_apply(kvr_kvstate_t *st, kvr_index_t *ix,
    const kvr_event_t *ev);

/*
 * Forgets everything known of the stream, its sequence too: the slot's
 * entries, or, when the slot is shared (a server's data-parallel ranks,
 * each its own stream), only the references this stream holds, so a
 * rank's restart, gap or AllBlocksCleared never removes another rank's
 * blocks.  The offload tiers' entries go too (their removals may have
 * been lost alike; AllBlocksCleared names no medium).
 */
void kvr_kvstate_reset(kvr_kvstate_t *st, kvr_index_t *ix);


#endif /* _KVR_KVSTATE_H_INCLUDED_ */
