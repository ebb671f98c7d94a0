/*
 * Copyright (C) kvroute developers
 */


#include <stdlib.h>
#include <string.h>

#include "kvr_kvstate.h"
#include "kvr_hash.h"


#define KVR_KVSTATE_CHUNK  64      /* blocks keyed per round */


/*
 * A BlockStored's first keys, made before its turn: while the event
 * before it is applied, its index buckets are fetched (a cache miss in a
 * large index: with one-block events each would stall alone).  Used only
 * if its parent's key is still the one they chain from.
 */
typedef struct {
    const kvr_event_t    *ev;         /* whose keys, NULL: none */
    uint64_t              parent;     /* the key they chain from, or 0 */
    uint64_t              seed;
    size_t                n;          /* keys of its first chunk */
    uint64_t              keys[KVR_KVSTATE_CHUNK];
} kvr_kvstate_ahead_t;


typedef struct {
    kvr_kvstate_t          *st;
    kvr_index_t            *ix;
    kvr_events_decoder_t   *dec;
    uint64_t                seq;
    int                     reset;
    unsigned                started:1;
    unsigned                turn:1;   /* ahead[turn]: the event's own */
    kvr_kvstate_ahead_t     ahead[2];
} kvr_kvstate_run_t;


static void kvr_kvstate_drop(void *data, uint64_t engine, uint64_t key);
static int kvr_kvstate_medium_is(const uint8_t *m, size_t len,
    const char *name);
static kvr_kvtier_t *kvr_kvstate_tier_open(kvr_kvstate_t *st,
    kvr_index_t *ix, kvr_tier_e tier);
static void kvr_kvstate_tier_apply(kvr_kvstate_t *st, kvr_index_t *ix,
    kvr_tier_e tier, const kvr_event_t *ev);
static void kvr_kvstate_tier_hashes(kvr_kvstate_t *st, kvr_index_t *ix,
    kvr_kvtier_t *t, const kvr_event_t *ev);
static void kvr_kvstate_tier_removed(kvr_kvstate_t *st, kvr_index_t *ix,
    kvr_kvtier_t *t, const kvr_event_t *ev);
static void kvr_kvstate_tiers_reset(kvr_kvstate_t *st, kvr_index_t *ix);
static void kvr_kvstate_forget(kvr_kvstate_t *st, kvr_index_t *ix, int slot,
    kvr_emap_t *map);
static int kvr_kvstate_main(kvr_kvstate_t *st, const kvr_event_t *ev,
    int learn);
static void kvr_kvstate_cleared(kvr_kvstate_t *st, kvr_index_t *ix);
static void kvr_kvstate_unpredict(kvr_kvstate_t *st, kvr_index_t *ix,
    uint64_t key);
static void kvr_kvstate_removed(kvr_kvstate_t *st, kvr_index_t *ix,
    const kvr_event_t *ev);
static void kvr_kvstate_event(kvr_kvstate_t *st, kvr_index_t *ix,
    const kvr_event_t *ev, const kvr_kvstate_ahead_t *a);
static void kvr_kvstate_stored(kvr_kvstate_t *st, kvr_index_t *ix,
    kvr_kvtier_t *t, const kvr_event_t *ev, const kvr_kvstate_ahead_t *a);
static uint64_t kvr_kvstate_seed(const kvr_event_t *ev);
static void kvr_kvstate_store(kvr_kvstate_t *st, kvr_index_t *ix,
    kvr_kvtier_t *t, const kvr_event_t *ev, uint64_t parent, uint64_t seed,
    const kvr_kvstate_ahead_t *a);
static void kvr_kvstate_keys(const kvr_event_t *ev, size_t done, size_t n,
    uint64_t parent, uint64_t seed, uint64_t *keys);
static void kvr_kvstate_prepare(kvr_kvstate_t *st, kvr_index_t *ix,
    const kvr_event_t *ev, const kvr_event_t *before,
    const kvr_kvstate_ahead_t *pre, kvr_kvstate_ahead_t *a);
static int kvr_kvstate_handler(void *data, const kvr_event_batch_t *batch,
    const kvr_event_t *ev);


int
kvr_kvstate_init(kvr_kvstate_t *st, int slot, uint32_t block_size,
    size_t max_handles)
{
    size_t  i;

    memset(st, 0, sizeof(kvr_kvstate_t));

    st->handles = kvr_emap_create(max_handles);
    if (st->handles == NULL) {
        return -1;
    }

    st->slot = slot;
    st->pred_slot = -1;
    st->block_size = block_size;
    st->max_handles = max_handles;

    for (i = 0; i < KVR_KVSTATE_TIERS; i++) {
        st->tiers[i].slot = -1;
    }

    return 0;
}


void
kvr_kvstate_free(kvr_kvstate_t *st)
{
    size_t  i;

    kvr_emap_destroy(st->handles);
    st->handles = NULL;

    for (i = 0; i < KVR_KVSTATE_TIERS; i++) {
        if (st->tiers[i].handles != NULL) {
            kvr_emap_destroy(st->tiers[i].handles);
            st->tiers[i].handles = NULL;
        }
    }
}


kvr_seq_e
kvr_kvstate_seq(const kvr_kvstate_t *st, uint64_t seq)
{
    if (!st->have_seq || seq == st->last_seq + 1) {
        return KVR_SEQ_NEXT;
    }

    return (seq > st->last_seq) ? KVR_SEQ_GAP : KVR_SEQ_OLD;
}


kvr_replay_e
kvr_kvstate_replayed(const kvr_kvstate_t *st, uint64_t seq,
    uint64_t progress)
{
    switch (kvr_kvstate_seq(st, seq)) {

    case KVR_SEQ_NEXT:
        return KVR_REPLAY_APPLY;

    case KVR_SEQ_OLD:
        return KVR_REPLAY_SKIP;

    default:
        return progress ? KVR_REPLAY_AGAIN : KVR_REPLAY_LOST;
    }
}


kvr_events_status_e
kvr_kvstate_batch(kvr_kvstate_t *st, kvr_index_t *ix,
    kvr_events_decoder_t *dec, uint64_t seq, const uint8_t *payload,
    size_t len, kvr_event_batch_t *batch, int *reset)
{
    kvr_events_status_e  rc;
    kvr_kvstate_run_t    run;

    run.st = st;
    run.ix = ix;
    run.dec = dec;
    run.seq = seq;
    run.reset = 0;
    run.started = 0;
    run.turn = 0;
    run.ahead[0].ev = NULL;
    run.ahead[1].ev = NULL;

    /* the sequence is taken at the first event, once all of it decoded */

    rc = kvr_events_decode(dec, payload, len, batch, kvr_kvstate_handler,
                           &run);

    if (rc == KVR_EVENTS_OK && !run.started) {
        run.reset = kvr_kvstate_sequence(st, ix, seq);
    }

    if (rc != KVR_EVENTS_OK && !run.started) {
        st->stats.rejected++;
    }

    *reset = run.reset;

    return rc;
}


static int
kvr_kvstate_handler(void *data, const kvr_event_batch_t *batch,
    const kvr_event_t *ev)
{
    kvr_kvstate_run_t  *run = data;

    kvr_kvstate_ahead_t  *own, *next;

    if (!run->started) {
        run->started = 1;
        run->reset = kvr_kvstate_sequence(run->st, run->ix, run->seq);
    }

    /* ev's keys, if made ahead; the next event's are made now */

    own = &run->ahead[run->turn];
    next = &run->ahead[run->turn ^ 1];
    run->turn ^= 1;

    if (own->ev != ev) {
        own = NULL;
    }

    kvr_kvstate_prepare(run->st, run->ix, kvr_events_next(run->dec, batch),
                        ev, own, next);

    kvr_kvstate_event(run->st, run->ix, ev, own);

    return 0;
}


int
kvr_kvstate_sequence(kvr_kvstate_t *st, kvr_index_t *ix, uint64_t seq)
{
    int  gap;

    gap = (kvr_kvstate_seq(st, seq) != KVR_SEQ_NEXT);

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


typedef struct {
    kvr_index_t  *ix;
    int           slot;
} kvr_kvstate_drop_t;


void
kvr_kvstate_reset(kvr_kvstate_t *st, kvr_index_t *ix)
{
    kvr_kvstate_forget(st, ix, st->slot, st->handles);
    kvr_kvstate_tiers_reset(st, ix);
    st->have_seq = 0;
}


static void
kvr_kvstate_tiers_reset(kvr_kvstate_t *st, kvr_index_t *ix)
{
    size_t         i;
    kvr_kvtier_t  *t;

    for (i = 0; i < KVR_KVSTATE_TIERS; i++) {
        t = &st->tiers[i];

        if (t->handles != NULL) {
            kvr_kvstate_forget(st, ix, t->slot, t->handles);
        }
    }
}


/*
 * What this stream holds in slot (its handles in map) goes: its own
 * references out of a slot shared with other streams, the whole slot
 * otherwise; then the map is emptied.  slot < 0: only the map.
 */

static void
kvr_kvstate_forget(kvr_kvstate_t *st, kvr_index_t *ix, int slot,
    kvr_emap_t *map)
{
    kvr_kvstate_drop_t  drop;

    if (slot >= 0) {
        if (st->shared) {
            drop.ix = ix;
            drop.slot = slot;
            kvr_emap_each(map, kvr_kvstate_drop, &drop);

        } else {
            kvr_index_clear_slot(ix, slot);
        }
    }

    kvr_emap_clear(map);
}


/* one reference of this stream's, out of a shared slot */

static void
kvr_kvstate_drop(void *data, uint64_t engine, uint64_t key)
{
    kvr_kvstate_drop_t  *drop = data;

    (void) engine;

    kvr_index_remove_ref(drop->ix, drop->slot, key);
}


void
kvr_kvstate_apply(kvr_kvstate_t *st, kvr_index_t *ix, const kvr_event_t *ev)
{
    kvr_kvstate_event(st, ix, ev, NULL);
}


/* one event; a: its keys made ahead, or NULL */

static void
kvr_kvstate_event(kvr_kvstate_t *st, kvr_index_t *ix, const kvr_event_t *ev,
    const kvr_kvstate_ahead_t *a)
{
    kvr_tier_e  tier;

    if (ev->type != KVR_EVENT_ALL_BLOCKS_CLEARED) {

        /*
         * the GPU tier's full-attention group is the routing index; the
         * offload tiers' events go to their own slots, never to it
         */

        tier = kvr_kvstate_tier(ev->medium, ev->medium_len);

        if (tier != KVR_TIER_GPU) {
            st->stats.offloaded += ev->n_hashes;

            if (tier != KVR_TIER_OTHER && kvr_kvstate_main(st, ev, 1)) {
                kvr_kvstate_tier_apply(st, ix, tier, ev);
            }

            return;
        }

        if (!kvr_kvstate_main(st, ev, 1)) {
            st->stats.other_group += ev->n_hashes;
            return;
        }
    }

    switch (ev->type) {

    case KVR_EVENT_ALL_BLOCKS_CLEARED:
        kvr_kvstate_cleared(st, ix);
        return;

    case KVR_EVENT_BLOCK_REMOVED:
        kvr_kvstate_removed(st, ix, ev);
        return;

    case KVR_EVENT_BLOCK_STORED:
        kvr_kvstate_stored(st, ix, NULL, ev, a);
        return;

    default:
        return;
    }
}


static void
kvr_kvstate_cleared(kvr_kvstate_t *st, kvr_index_t *ix)
{
    unsigned  have;
    uint64_t  last;

    st->stats.cleared++;

    /* the sequence goes on: a gap right after a clear still counts */
    last = st->last_seq;
    have = st->have_seq;
    kvr_kvstate_reset(st, ix);
    st->last_seq = last;
    st->have_seq = have;
}


static void
kvr_kvstate_removed(kvr_kvstate_t *st, kvr_index_t *ix, const kvr_event_t *ev)
{
    size_t    i;
    uint64_t  key;

    for (i = 0; i < ev->n_hashes; i++) {
        if (kvr_emap_remove(st->handles, ev->hashes[i], &key) < 0) {
            st->stats.unknown_removed++;
            continue;
        }

        kvr_index_remove_ref(ix, st->slot, key);
        kvr_kvstate_unpredict(st, ix, key);
        st->stats.removed++;
    }
}


/*
 * Predictions stand in for a server's events until they arrive: once its
 * events store or remove a block, the index says what the engine holds,
 * and a prediction kept longer would outlive the engine's eviction of it
 * (a route believed to hit that misses)
 */

static void
kvr_kvstate_unpredict(kvr_kvstate_t *st, kvr_index_t *ix, uint64_t key)
{
    if (st->pred_slot >= 0) {
        kvr_index_remove_ref(ix, st->pred_slot, key);
    }
}


/*
 * A BlockStored whose blocks kvroute can key as requests are keyed, into
 * the GPU tier (t NULL) or an offload tier
 */
static void
kvr_kvstate_stored(kvr_kvstate_t *st, kvr_index_t *ix, kvr_kvtier_t *t,
    const kvr_event_t *ev, const kvr_kvstate_ahead_t *a)
{
    int       found;
    uint64_t  parent;

    /*
     * a partial block (recent vLLM: one hash, block_size the tokens it
     * holds, fewer than a block): no request key is made of it
     */

    if (ev->n_hashes == 1 && ev->block_size < st->block_size
        && ev->n_tokens == ev->block_size)
    {
        st->stats.partial++;
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
    found = 0;

    if (ev->has_parent) {

        /* a tier's chain may go on from a block the tier or the GPU holds */

        if (t != NULL) {
            parent = kvr_emap_get(t->handles, ev->parent, &found);
        }

        if (!found) {
            parent = kvr_emap_get(st->handles, ev->parent, &found);
        }

        if (!found) {
            /* its chain is unknown: its keys cannot be computed */
            st->stats.orphans++;
            return;
        }
    }

    /* keys made ahead chain from the parent's key of that time */

    if (a != NULL && a->parent == parent) {
        kvr_kvstate_store(st, ix, t, ev, parent, a->seed, a);
        return;
    }

    kvr_kvstate_store(st, ix, t, ev, parent, kvr_kvstate_seed(ev), NULL);
}


/* the keys' seed: the LoRA adapter's name, as requests name it */
static uint64_t
kvr_kvstate_seed(const kvr_event_t *ev)
{
    uint8_t  id[1 + sizeof(int64_t)];

    /* a LoRA adapter known by its id alone: a seed no request makes */

    if (ev->lora_name == NULL && ev->has_lora_id) {
        id[0] = 0;
        memcpy(id + 1, &ev->lora_id, sizeof(int64_t));
        return kvr_hash_seed((const char *) id, sizeof(id), NULL, 0);
    }

    return kvr_hash_seed((const char *) ev->lora_name, ev->lora_name_len,
                         NULL, 0);
}


/*
 * the blocks' keys, chained from parent, mapped and added to the index:
 * the GPU tier's slot (t NULL) or the offload tier's
 */
static void
kvr_kvstate_store(kvr_kvstate_t *st, kvr_index_t *ix, kvr_kvtier_t *t,
    const kvr_event_t *ev, uint64_t parent, uint64_t seed,
    const kvr_kvstate_ahead_t *a)
{
    int              slot;
    size_t           j, n, done;
    uint32_t         put;
    uint64_t         buf[KVR_KVSTATE_CHUNK];
    kvr_emap_t      *handles;
    const uint64_t  *keys;

    handles = (t != NULL) ? t->handles : st->handles;
    slot = (t != NULL) ? t->slot : st->slot;

    /* extra keys a request cannot reproduce: one block a round */

    for (done = 0; done < ev->n_hashes; done += n) {
        n = ev->n_hashes - done;

        if (n > KVR_KVSTATE_CHUNK) {
            n = KVR_KVSTATE_CHUNK;
        }

        if (ev->extra != NULL) {
            n = 1;
        }

        if (done == 0 && a != NULL) {
            keys = a->keys;

        } else {
            kvr_kvstate_keys(ev, done, n, parent, seed, buf);
            keys = buf;

            /* the chunk's misses overlap, not one block's after another's */

            if (n > 1) {
                for (j = 0; j < n; j++) {
                    kvr_emap_prefetch(handles, ev->hashes[done + j]);
                    kvr_index_prefetch_ref(ix, slot, keys[j]);

                    if (t == NULL && st->pred_slot >= 0) {
                        kvr_index_prefetch_ref(ix, st->pred_slot, keys[j]);
                    }
                }
            }
        }

        /* a chain's first block: a prefix now lives on the server */

        if (done == 0 && !ev->has_parent && st->roots != NULL && t == NULL) {
            kvr_homes_learn(st->roots, keys[0]);
        }

        for (j = 0; j < n; j++) {

            if (t == NULL) {
                kvr_kvstate_unpredict(st, ix, keys[j]);
            }

            /*
             * held once: a re-announced block adds no reference; a block
             * whose handle cannot be kept could never be removed
             */

            put = kvr_emap_put(handles, ev->hashes[done + j], keys[j]);

            if (put == 2) {
                st->stats.reannounced++;
                continue;
            }

            if (put == 0) {
                st->stats.map_full++;
                continue;
            }

            kvr_index_add_ref(ix, slot, keys[j]);

            if (t == NULL) {
                st->stats.stored++;

            } else {
                st->stats.tier_stored++;
            }
        }

        parent = keys[n - 1];
    }
}


/* blocks done .. done + n - 1 of a BlockStored, chained from parent */

static void
kvr_kvstate_keys(const kvr_event_t *ev, size_t done, size_t n,
    uint64_t parent, uint64_t seed, uint64_t *keys)
{
    if (done == 0 && !ev->has_parent) {
        kvr_hash_token_blocks_salted(ev->token_ids, n * ev->block_size,
                                     ev->block_size, seed,
                                     (const char *) ev->cache_salt,
                                     ev->cache_salt_len, keys, n);

    } else {
        kvr_hash_token_blocks_after(parent,
                                    ev->token_ids + done * ev->block_size,
                                    n * ev->block_size, ev->block_size,
                                    seed, keys, n);
    }

    if (ev->extra != NULL && ev->extra[done] != 0) {
        keys[0] = kvr_hash_chain(keys[0], ev->extra[done]);
    }
}


/*
 * The keys of ev's first chunk made ahead (into a) and what applying them
 * reads first fetched, when ev is a BlockStored of the GPU tier that
 * kvr_kvstate_stored() would key: before, the event applied in between
 * (pre: its keys made ahead, or NULL), may store ev's parent.  Nothing
 * else is changed.
 */

static void
kvr_kvstate_prepare(kvr_kvstate_t *st, kvr_index_t *ix, const kvr_event_t *ev,
    const kvr_event_t *before, const kvr_kvstate_ahead_t *pre,
    kvr_kvstate_ahead_t *a)
{
    int       found;
    size_t    j, n;
    uint64_t  parent;

    a->ev = NULL;

    if (ev == NULL || ev->type == KVR_EVENT_ALL_BLOCKS_CLEARED
        || kvr_kvstate_tier(ev->medium, ev->medium_len) != KVR_TIER_GPU)
    {
        return;
    }

    /* a removal's handles: the map's cells (a large map misses too) */

    if (ev->type == KVR_EVENT_BLOCK_REMOVED) {
        for (j = 0; j < ev->n_hashes && j < KVR_KVSTATE_CHUNK; j++) {
            kvr_emap_prefetch(st->handles, ev->hashes[j]);
        }

        return;
    }

    if (ev->n_hashes == 0 || ev->extra != NULL
        || ev->block_size != st->block_size
        || (uint64_t) ev->n_hashes * ev->block_size != ev->n_tokens
        || !kvr_kvstate_main(st, ev, 0))
    {
        return;
    }

    parent = 0;

    if (ev->has_parent) {
        parent = kvr_emap_get(st->handles, ev->parent, &found);

        /* a chain going on from the blocks the event before stores */

        if (!found && pre != NULL && pre->n == before->n_hashes
            && before->hashes[pre->n - 1] == ev->parent)
        {
            parent = pre->keys[pre->n - 1];
            found = 1;
        }

        if (!found) {
            return;
        }
    }

    n = (ev->n_hashes < KVR_KVSTATE_CHUNK) ? ev->n_hashes : KVR_KVSTATE_CHUNK;

    a->seed = kvr_kvstate_seed(ev);
    kvr_kvstate_keys(ev, 0, n, parent, a->seed, a->keys);

    for (j = 0; j < n; j++) {
        kvr_emap_prefetch(st->handles, ev->hashes[j]);
        kvr_index_prefetch_ref(ix, st->slot, a->keys[j]);

        if (st->pred_slot >= 0) {
            kvr_index_prefetch_ref(ix, st->pred_slot, a->keys[j]);
        }
    }

    a->ev = ev;
    a->parent = parent;
    a->n = n;
}


/*
 * The tier a medium names (kvr_kvstate.h): absent (vLLM before it),
 * empty or "GPU" the GPU's; the names NVIDIA Dynamo maps to its tiers
 * (StorageTier::from_kv_medium), in any case ("Disk": vLLM's
 * DiskLoadStoreSpec)
 */

kvr_tier_e
kvr_kvstate_tier(const uint8_t *m, size_t len)
{
    if (m == NULL || len == 0
        || kvr_kvstate_medium_is(m, len, "GPU")
        || kvr_kvstate_medium_is(m, len, "DEVICE"))
    {
        return KVR_TIER_GPU;
    }

    if (kvr_kvstate_medium_is(m, len, "CPU")
        || kvr_kvstate_medium_is(m, len, "CPU_PINNED")
        || kvr_kvstate_medium_is(m, len, "CPU_TIER1"))
    {
        return KVR_TIER_HOST;
    }

    if (kvr_kvstate_medium_is(m, len, "DISK")
        || kvr_kvstate_medium_is(m, len, "NVME")
        || kvr_kvstate_medium_is(m, len, "STORAGE")
        || kvr_kvstate_medium_is(m, len, "CPU_TIER2")
        || kvr_kvstate_medium_is(m, len, "EXTERNAL")
        || kvr_kvstate_medium_is(m, len, "REMOTE")
        || kvr_kvstate_medium_is(m, len, "NETWORK")
        || kvr_kvstate_medium_is(m, len, "SHARED"))
    {
        return KVR_TIER_DISK;
    }

    return KVR_TIER_OTHER;
}


/* m equals name (upper case) in any case */

static int
kvr_kvstate_medium_is(const uint8_t *m, size_t len, const char *name)
{
    size_t   i;
    uint8_t  c;

    for (i = 0; i < len; i++) {
        c = m[i];

        if (c >= 'a' && c <= 'z') {
            c -= 'a' - 'A';
        }

        if (name[i] == '\0' || c != (uint8_t) name[i]) {
            return 0;
        }
    }

    return name[len] == '\0';
}


/*
 * An offload tier's event: its own slot, its own handles; a removal there
 * never touches another tier's entries.  A tier with no slot to be had
 * (all taken) is counted only.
 */

static void
kvr_kvstate_tier_apply(kvr_kvstate_t *st, kvr_index_t *ix, kvr_tier_e tier,
    const kvr_event_t *ev)
{
    kvr_kvtier_t  *t;

    t = kvr_kvstate_tier_open(st, ix, tier);

    if (t == NULL) {
        st->stats.tier_unkeyed += ev->n_hashes;
        return;
    }

    switch (ev->type) {

    case KVR_EVENT_BLOCK_REMOVED:
        kvr_kvstate_tier_removed(st, ix, t, ev);
        return;

    case KVR_EVENT_BLOCK_STORED:

        /*
         * vLLM's offloading connector stores hashes alone (no token ids,
         * no parent; block_size the offloaded block's): the blocks the GPU
         * holds under the same hashes
         */

        if (ev->n_tokens == 0) {
            kvr_kvstate_tier_hashes(st, ix, t, ev);

        } else {
            kvr_kvstate_stored(st, ix, t, ev, NULL);
        }

        return;

    default:
        return;
    }
}


/* the tier's handles and slot, made on its first event */

static kvr_kvtier_t *
kvr_kvstate_tier_open(kvr_kvstate_t *st, kvr_index_t *ix, kvr_tier_e tier)
{
    char                    name[KVR_INDEX_NAME_LEN];
    size_t                  len;
    const char             *suffix;
    kvr_kvtier_t           *t;
    kvr_index_slot_info_t   info;

    t = &st->tiers[tier - 1];

    if (t->slot >= 0 && t->handles != NULL) {
        return t;
    }

    if (t->handles == NULL) {
        t->handles = kvr_emap_create(st->max_handles);

        if (t->handles == NULL) {
            return NULL;
        }
    }

    /* "name/host", "name/disk": the GPU slot's name, kept across reloads */

    kvr_index_slot_info(ix, st->slot, &info);

    suffix = (tier == KVR_TIER_HOST) ? "/host" : "/disk";
    len = strlen(suffix);

    if (!info.in_use || info.name_len + len > sizeof(name)) {
        return NULL;
    }

    memcpy(name, info.name, info.name_len);
    memcpy(name + info.name_len, suffix, len);

    t->slot = kvr_index_slot(ix, name, info.name_len + len);

    if (t->slot < 0) {
        return NULL;
    }

    /* what a previous helper left there can never be removed now */

    if (!st->shared) {
        kvr_index_clear_slot(ix, t->slot);
    }

    if (st->tier_slots != NULL) {
        st->tier_slots[tier - 1] = t->slot + 1;
    }

    return t;
}


static void
kvr_kvstate_tier_hashes(kvr_kvstate_t *st, kvr_index_t *ix, kvr_kvtier_t *t,
    const kvr_event_t *ev)
{
    int       found;
    size_t    i;
    uint32_t  put, group;
    uint64_t  key;

    /*
     * An offloaded block of g GPU blocks is named by the hash of its last
     * GPU block (vLLM's BlockHashListWithBlockSize: the last hash, or the
     * g hashes concatenated, whose last 8 bytes are the same u64): held
     * as that block's key, the group size published for the balancer,
     * which looks the groups up as the connector does
     */

    group = 1;

    if (ev->block_size != 0 && ev->block_size != st->block_size) {
        group = ev->block_size / st->block_size;

        if (ev->block_size % st->block_size != 0
            || group > KVR_KVSTATE_TIER_GROUP_MAX)
        {
            st->stats.bad_block_size++;
            st->last_bad_block_size = ev->block_size;
            st->stats.tier_unkeyed += ev->n_hashes;
            return;
        }
    }

    if (st->tier_groups != NULL) {
        st->tier_groups[t - st->tiers] = (int) group;
    }

    for (i = 0; i < ev->n_hashes; i++) {
        key = kvr_emap_get(st->handles, ev->hashes[i], &found);

        if (!found) {
            key = kvr_emap_get(t->handles, ev->hashes[i], &found);
        }

        if (!found) {
            st->stats.tier_unkeyed++;
            continue;
        }

        put = kvr_emap_put(t->handles, ev->hashes[i], key);

        if (put == 2) {
            st->stats.reannounced++;
            continue;
        }

        if (put == 0) {
            st->stats.map_full++;
            continue;
        }

        kvr_index_add_ref(ix, t->slot, key);
        st->stats.tier_stored++;
    }
}


static void
kvr_kvstate_tier_removed(kvr_kvstate_t *st, kvr_index_t *ix, kvr_kvtier_t *t,
    const kvr_event_t *ev)
{
    size_t    i;
    uint64_t  key;

    for (i = 0; i < ev->n_hashes; i++) {
        if (kvr_emap_remove(t->handles, ev->hashes[i], &key) < 0) {
            st->stats.unknown_removed++;
            continue;
        }

        kvr_index_remove_ref(ix, t->slot, key);
        st->stats.tier_removed++;
    }
}


/*
 * whether the event is the full-attention group's (kvr_kvstate.h); learn:
 * a kind named is remembered for its group (not when looking ahead)
 */

static int
kvr_kvstate_main(kvr_kvstate_t *st, const kvr_event_t *ev, int learn)
{
    int       main;
    size_t    len;
    uint8_t  *g;

    g = (ev->has_group_idx && ev->group_idx >= 0
         && ev->group_idx < KVR_KVSTATE_GROUPS)
        ? &st->groups[ev->group_idx] : NULL;

    if (ev->spec_kind != NULL) {
        len = ev->spec_kind_len;

        main = (len == 14
                && memcmp(ev->spec_kind, "full_attention", 14) == 0)
               || (len == 13
                   && memcmp(ev->spec_kind, "mla_attention", 13) == 0);

        if (g != NULL && learn) {
            *g = main ? 1 : 2;
        }

        return main;
    }

    if (!ev->has_group_idx) {
        return 1;
    }

    if (g != NULL && *g != 0) {
        return *g == 1;
    }

    return ev->group_idx == 0;
}
