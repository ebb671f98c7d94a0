/*
 * Copyright (C) kvroute developers
 *
 * One engine's KV event stream applied to the block index: its blocks are
 * re-keyed with kvroute's own hashes from the token ids the events carry
 * (so the engine's hash function and seed never matter), counted per
 * (server, block) because an engine may store a block twice, and removed
 * through the engine-hash map.  Plain C, no nginx types, no locking (the
 * caller holds the index's lock).
 */

#ifndef _KVR_KVSTATE_H_INCLUDED_
#define _KVR_KVSTATE_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "kvr_events.h"
#include "kvr_index.h"
#include "kvr_emap.h"


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
} kvr_kvstats_t;


typedef struct {
    kvr_emap_t     *handles;          /* engine hash -> kvroute key */
    int             slot;             /* the server's index slot */
    uint32_t        block_size;       /* kvroute's configured block size */
    uint64_t        last_seq;
    unsigned        have_seq:1;
    uint32_t        last_bad_block_size;
    kvr_kvstats_t   stats;
} kvr_kvstate_t;


int kvr_kvstate_init(kvr_kvstate_t *st, int slot, uint32_t block_size,
    size_t max_handles);
void kvr_kvstate_free(kvr_kvstate_t *st);

/*
 * A batch's sequence number: returns 0 when it follows the last one, 1
 * after a gap or a restart of the engine (the sequence went back): the
 * server's entries are then dropped, since removals may have been lost,
 * and rebuilt from the events that follow.
 */
int kvr_kvstate_sequence(kvr_kvstate_t *st, kvr_index_t *ix, uint64_t seq);

/* whether seq would be a gap or a restart (nothing changes) */
int kvr_kvstate_is_gap(const kvr_kvstate_t *st, uint64_t seq);

/* one decoded event */
void kvr_kvstate_apply(kvr_kvstate_t *st, kvr_index_t *ix,
    const kvr_event_t *ev);

/* forgets everything known of the server, its sequence too */
void kvr_kvstate_reset(kvr_kvstate_t *st, kvr_index_t *ix);


#endif /* _KVR_KVSTATE_H_INCLUDED_ */
