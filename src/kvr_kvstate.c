/*
 * Copyright (C) kvroute developers
 */


#include <stdlib.h>
#include <string.h>

#include "kvr_kvstate.h"
#include "kvr_hash.h"


#define KVR_KVSTATE_CHUNK  64      /* blocks keyed per round */


int
kvr_kvstate_init(kvr_kvstate_t *st, int slot, uint32_t block_size,
    size_t max_handles)
{
    memset(st, 0, sizeof(kvr_kvstate_t));

    st->handles = kvr_emap_create(max_handles);
    if (st->handles == NULL) {
        return -1;
    }

    st->slot = slot;
    st->block_size = block_size;

    return 0;
}


void
kvr_kvstate_free(kvr_kvstate_t *st)
{
    kvr_emap_destroy(st->handles);
    st->handles = NULL;
}


int
kvr_kvstate_is_gap(const kvr_kvstate_t *st, uint64_t seq)
{
    return st->have_seq && seq != st->last_seq + 1;
}


int
kvr_kvstate_sequence(kvr_kvstate_t *st, kvr_index_t *ix, uint64_t seq)
{
    int  gap;

    gap = kvr_kvstate_is_gap(st, seq);

    /* a first batch that is not 0: we joined late, nothing was missed */

    if (gap) {
        st->stats.gaps++;
        kvr_kvstate_reset(st, ix);
    }

    st->last_seq = seq;
    st->have_seq = 1;
    st->stats.batches++;

    return gap;
}


void
kvr_kvstate_reset(kvr_kvstate_t *st, kvr_index_t *ix)
{
    kvr_index_clear_slot(ix, st->slot);
    kvr_emap_clear(st->handles);
    st->have_seq = 0;
}


void
kvr_kvstate_apply(kvr_kvstate_t *st, kvr_index_t *ix, const kvr_event_t *ev)
{
    int        found;
    size_t     i, j, n, done;
    uint64_t   seed, parent, key, keys[KVR_KVSTATE_CHUNK];

    switch (ev->type) {

    case KVR_EVENT_ALL_BLOCKS_CLEARED:
        st->stats.cleared++;

        /* the sequence goes on: a gap right after a clear still counts */
        kvr_index_clear_slot(ix, st->slot);
        kvr_emap_clear(st->handles);
        return;

    case KVR_EVENT_BLOCK_REMOVED:

        for (i = 0; i < ev->n_hashes; i++) {
            if (kvr_emap_remove(st->handles, ev->hashes[i], &key) < 0) {
                st->stats.unknown_removed++;
                continue;
            }

            kvr_index_remove_ref(ix, st->slot, key);
            st->stats.removed++;
        }

        return;

    case KVR_EVENT_BLOCK_STORED:
        break;

    default:
        return;
    }

    /* a block size kvroute was not told: never silently mismatched */

    if (ev->block_size != st->block_size) {
        st->stats.bad_block_size++;
        st->last_bad_block_size = ev->block_size;
        return;
    }

    if ((uint64_t) ev->n_hashes * ev->block_size != ev->n_tokens) {
        st->stats.bad_shape++;
        return;
    }

    parent = 0;

    if (ev->has_parent) {
        parent = kvr_emap_get(st->handles, ev->parent, &found);

        if (!found) {
            /* its chain is unknown: its keys cannot be computed */
            st->stats.orphans++;
            return;
        }
    }

    seed = kvr_hash_seed((const char *) ev->lora_name, ev->lora_name_len,
                         (const char *) ev->cache_salt, ev->cache_salt_len);

    for (done = 0; done < ev->n_hashes; done += n) {
        n = ev->n_hashes - done;

        if (n > KVR_KVSTATE_CHUNK) {
            n = KVR_KVSTATE_CHUNK;
        }

        if (done == 0 && !ev->has_parent) {
            kvr_hash_token_blocks(ev->token_ids, n * ev->block_size,
                                  ev->block_size, seed, keys, n);

        } else {
            kvr_hash_token_blocks_after(parent,
                                        ev->token_ids + done * ev->block_size,
                                        n * ev->block_size, ev->block_size,
                                        seed, keys, n);
        }

        for (j = 0; j < n; j++) {

            /* a block whose handle cannot be kept could never be removed */

            if (kvr_emap_add(st->handles, ev->hashes[done + j], keys[j])
                == 0)
            {
                st->stats.map_full++;
                continue;
            }

            kvr_index_add_ref(ix, st->slot, keys[j]);
            st->stats.stored++;
        }

        parent = keys[n - 1];
    }
}
