/*
 * Copyright (C) kvroute developers
 *
 * KV events applied to the index: the keys the request path computes for
 * a prompt must be the keys the events produce for the same tokens.
 */


#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "kvr_kvstate.h"
#include "kvr_hash.h"


#define REGION  (2 * 1024 * 1024)
#define BS      16


static kvr_event_t
stored(const uint64_t *hashes, uint32_t n, const uint32_t *tokens,
    int has_parent, uint64_t parent)
{
    kvr_event_t  ev;

    memset(&ev, 0, sizeof(ev));
    ev.type = KVR_EVENT_BLOCK_STORED;
    ev.n_hashes = n;
    ev.hashes = hashes;
    ev.n_tokens = n * BS;
    ev.token_ids = tokens;
    ev.block_size = BS;
    ev.has_parent = has_parent;
    ev.parent = parent;

    return ev;
}


static kvr_event_t
removed(const uint64_t *hashes, uint32_t n)
{
    kvr_event_t  ev;

    memset(&ev, 0, sizeof(ev));
    ev.type = KVR_EVENT_BLOCK_REMOVED;
    ev.n_hashes = n;
    ev.hashes = hashes;

    return ev;
}


static void
apply_medium(kvr_kvstate_t *st, kvr_index_t *ix, kvr_event_t *ev,
    const char *medium)
{
    ev->medium = (const uint8_t *) medium;
    ev->medium_len = medium ? strlen(medium) : 0;
    kvr_kvstate_apply(st, ix, ev);
}


static void
apply_group(kvr_kvstate_t *st, kvr_index_t *ix, kvr_event_t *ev,
    int64_t group, const char *kind)
{
    ev->has_group_idx = (group >= 0);
    ev->group_idx = group;
    ev->spec_kind = (const uint8_t *) kind;
    ev->spec_kind_len = kind ? strlen(kind) : 0;
    kvr_kvstate_apply(st, ix, ev);
}


/* (a) offload tiers and (c) hybrid models' groups */
static void
test_tiers_groups(kvr_index_t *ix, int slot, const uint32_t *tokens)
{
    uint64_t       keys[4], h[4] = { 300, 301, 302, 303 };
    kvr_event_t    ev;
    kvr_kvstate_t  st;

    kvr_hash_token_blocks(tokens, 4 * BS, BS, kvr_hash_seed(NULL, 0, NULL, 0),
                          keys, 4);
    kvr_kvstate_init(&st, slot, BS, 1000);
    kvr_index_clear_slot(ix, slot);

    ev = stored(h, 2, tokens, 0, 0);
    apply_medium(&st, ix, &ev, "CPU");
    tap_is(kvr_index_match(ix, slot, keys, 4), 0,
           "tier: a CPU store is not a GPU block");
    apply_medium(&st, ix, &ev, "GPU");
    tap_is(kvr_index_match(ix, slot, keys, 4), 2, "tier: the GPU store is");

    ev = removed(h, 2);
    apply_medium(&st, ix, &ev, "CPU");
    apply_medium(&st, ix, &ev, "DISK");
    apply_medium(&st, ix, &ev, "cpu_pinned");
    tap_is(kvr_index_match(ix, slot, keys, 4), 2,
           "tier: CPU, DISK, CPU_PINNED removals keep the GPU blocks");
    tap_is(st.stats.offloaded, 2 + 3 * 2, "tier: 8 offloaded blocks counted");

    ev = stored(h + 2, 1, tokens + 2 * BS, 1, 301);
    apply_medium(&st, ix, &ev, "");
    ev = stored(h + 3, 1, tokens + 3 * BS, 1, 302);
    apply_medium(&st, ix, &ev, "gpu");
    tap_is(kvr_index_match(ix, slot, keys, 4), 4,
           "tier: medium empty or \"gpu\": the GPU tier");

    ev = removed(h + 3, 1);
    apply_medium(&st, ix, &ev, NULL);
    tap_is(kvr_index_match(ix, slot, keys, 4), 3,
           "tier: medium absent (older vLLM): the GPU tier");

    /* the sliding-window group reports the same hashes as group 1 */
    ev = stored(h, 1, tokens, 0, 0);
    apply_group(&st, ix, &ev, 1, "sliding_window");
    ev = removed(h, 2);
    apply_group(&st, ix, &ev, 1, NULL);
    tap_is(kvr_index_match(ix, slot, keys, 4), 3,
           "group: group 1 learned as sliding_window: its removals ignored");
    apply_group(&st, ix, &ev, 3, NULL);
    tap_is(kvr_index_match(ix, slot, keys, 4), 3,
           "group: an unlearned group other than 0 ignored");
    apply_group(&st, ix, &ev, -1, "mamba");
    tap_is(kvr_index_match(ix, slot, keys, 4), 3,
           "group: a mamba removal without group_idx ignored");
    tap_is(st.stats.other_group, 1 + 2 + 2 + 2, "group: 7 blocks counted");

    ev = stored(h, 1, tokens, 0, 0);
    apply_group(&st, ix, &ev, 2, "full_attention");
    ev = removed(h + 2, 1);
    apply_group(&st, ix, &ev, 2, NULL);
    tap_is(kvr_index_match(ix, slot, keys, 4), 2,
           "group: the full-attention group (2, learned) applies");
    ev = removed(h + 1, 1);
    apply_group(&st, ix, &ev, 0, "mla_attention");
    tap_is(kvr_index_match(ix, slot, keys, 4), 1,
           "group: mla_attention is the main group too");

    /* kv_cache_report_mode="full": the chain re-announced from block 0 */
    ev = stored(h, 1, tokens, 0, 0);
    kvr_kvstate_apply(&st, ix, &ev);
    kvr_kvstate_apply(&st, ix, &ev);
    ev = removed(h, 1);
    kvr_kvstate_apply(&st, ix, &ev);
    tap_is(kvr_index_match(ix, slot, keys, 4), 0,
           "full report: re-announced twice, one removal empties it");
    tap_is(kvr_index_slot_blocks(ix, slot), 0, "full report: no entry left");

    kvr_kvstate_free(&st);
}


/* (e) LoRA, cache_salt and extra keys a request cannot reproduce */
static void
test_keys(kvr_index_t *ix, int slot, const uint32_t *tokens)
{
    uint64_t       plain[4], salted[4], lora[4];
    uint64_t       extra[2] = { 0, 0 }, h[4] = { 400, 401, 402, 403 };
    kvr_event_t    ev;
    kvr_kvstate_t  st;

    kvr_hash_token_blocks(tokens, 4 * BS, BS, kvr_hash_seed(NULL, 0, NULL, 0),
                          plain, 4);
    tap_is(kvr_hash_token_blocks_salted(tokens, 4 * BS, BS,
                                        kvr_hash_seed(NULL, 0, NULL, 0),
                                        "tenant", 6, salted, 4),
           4, "salted request keys");
    kvr_hash_token_blocks_salted(tokens, 4 * BS, BS,
                                 kvr_hash_seed("ad", 2, NULL, 0), NULL, 0,
                                 lora, 4);
    tap_ok(salted[0] != plain[0] && salted[3] != plain[3]
           && lora[0] != plain[0], "salt and LoRA give other keys");

    kvr_kvstate_init(&st, slot, BS, 1000);
    kvr_index_clear_slot(ix, slot);

    /* vLLM: the salt in the first block's extra keys, not in the next */
    ev = stored(h, 2, tokens, 0, 0);
    ev.cache_salt = (const uint8_t *) "tenant";
    ev.cache_salt_len = 6;
    kvr_kvstate_apply(&st, ix, &ev);
    ev = stored(h + 2, 2, tokens + 2 * BS, 1, 401);
    kvr_kvstate_apply(&st, ix, &ev);
    tap_is(kvr_index_match(ix, slot, salted, 4), 4,
           "salt: a salted request matches the salted chain, "
           "continued without the salt");
    tap_is(kvr_index_match(ix, slot, plain, 4), 0,
           "salt: an unsalted request does not");

    /* LoRA by name, and by id only */
    ev = stored(h + 3, 1, tokens, 0, 0);
    ev.hashes = (uint64_t[]) { 410 };
    ev.lora_name = (const uint8_t *) "ad";
    ev.lora_name_len = 2;
    kvr_kvstate_apply(&st, ix, &ev);
    tap_is(kvr_index_match(ix, slot, lora, 4), 1,
           "LoRA: keyed with the adapter's name");
    tap_is(kvr_index_match(ix, slot, plain, 4), 0,
           "LoRA: the base model's request does not match");

    kvr_index_clear_slot(ix, slot);
    kvr_emap_clear(st.handles);
    ev = stored(h, 1, tokens, 0, 0);
    ev.has_lora_id = 1;
    ev.lora_id = 7;
    kvr_kvstate_apply(&st, ix, &ev);
    tap_ok(kvr_index_match(ix, slot, plain, 4) == 0
           && kvr_index_match(ix, slot, lora, 4) == 0
           && kvr_index_slot_blocks(ix, slot) == 1,
           "LoRA id alone: held, matched by no request");

    /* an image in block 0: neither it nor what follows matches */
    kvr_index_clear_slot(ix, slot);
    kvr_emap_clear(st.handles);
    extra[0] = 0x1234;
    ev = stored(h, 2, tokens, 0, 0);
    ev.extra = extra;
    kvr_kvstate_apply(&st, ix, &ev);
    ev = stored(h + 2, 1, tokens + 2 * BS, 1, 401);
    kvr_kvstate_apply(&st, ix, &ev);
    tap_ok(kvr_index_match(ix, slot, plain, 4) == 0
           && kvr_index_match(ix, slot, plain + 1, 1) == 0
           && kvr_index_match(ix, slot, plain + 2, 1) == 0
           && kvr_index_slot_blocks(ix, slot) == 3,
           "multimodal block 0: no false hit there or after it");

    kvr_index_clear_slot(ix, slot);
    kvr_emap_clear(st.handles);
    extra[0] = 0;
    extra[1] = 0x1234;
    ev = stored(h, 2, tokens, 0, 0);
    ev.extra = extra;
    kvr_kvstate_apply(&st, ix, &ev);
    tap_is(kvr_index_match(ix, slot, plain, 4), 1,
           "multimodal block 1: block 0 still matches, block 1 not");

    kvr_kvstate_free(&st);
}


/* (g) data-parallel ranks sharing their server's slot */
static void
test_ranks(kvr_index_t *ix, int slot, const uint32_t *tokens)
{
    uint64_t       keys[4], a[2] = { 500, 501 }, b[3] = { 600, 601, 602 };
    kvr_event_t    ev;
    kvr_kvstate_t  r0, r1;

    kvr_hash_token_blocks(tokens, 4 * BS, BS, kvr_hash_seed(NULL, 0, NULL, 0),
                          keys, 4);
    kvr_index_clear_slot(ix, slot);
    kvr_kvstate_init(&r0, slot, BS, 1000);
    kvr_kvstate_init(&r1, slot, BS, 1000);
    r0.shared = 1;
    r1.shared = 1;

    /* rank 0 holds blocks 0-1, rank 1 blocks 0-2 (its own hashes) */
    ev = stored(a, 2, tokens, 0, 0);
    kvr_kvstate_apply(&r0, ix, &ev);
    ev = stored(b, 3, tokens, 0, 0);
    kvr_kvstate_apply(&r1, ix, &ev);
    tap_is(kvr_index_match(ix, slot, keys, 4), 3, "ranks: their union");

    ev = removed(b + 1, 2);
    kvr_kvstate_apply(&r1, ix, &ev);
    tap_is(kvr_index_match(ix, slot, keys, 4), 2,
           "ranks: rank 1's removal keeps what rank 0 holds");

    memset(&ev, 0, sizeof(ev));
    ev.type = KVR_EVENT_ALL_BLOCKS_CLEARED;
    kvr_kvstate_sequence(&r0, ix, 0);
    kvr_kvstate_apply(&r0, ix, &ev);
    tap_ok(kvr_index_match(ix, slot, keys, 4) == 1 && r0.have_seq,
           "ranks: rank 0's clear takes only its blocks, keeps its "
           "sequence");

    ev = stored(a, 2, tokens, 0, 0);
    kvr_kvstate_apply(&r0, ix, &ev);
    kvr_kvstate_reset(&r1, ix);
    tap_is(kvr_index_match(ix, slot, keys, 4), 2,
           "ranks: rank 1's reset (gap, restart) keeps rank 0's blocks");
    kvr_kvstate_reset(&r0, ix);
    tap_is(kvr_index_slot_blocks(ix, slot), 0, "ranks: both reset: empty");

    /* not shared: a reset clears the slot */
    ev = stored(b, 3, tokens, 0, 0);
    kvr_kvstate_apply(&r1, ix, &ev);
    ev = stored(a, 2, tokens, 0, 0);
    r0.shared = 0;
    kvr_kvstate_apply(&r0, ix, &ev);
    kvr_kvstate_reset(&r0, ix);
    tap_is(kvr_index_slot_blocks(ix, slot), 0,
           "a slot of one stream: a reset clears it");

    kvr_kvstate_free(&r0);
    kvr_kvstate_free(&r1);
}


/* (h) the prefixes an engine stored: each chain's first block */

typedef struct {
    kvr_index_t  *ix;
    int           slot;
} test_held_t;


static int
held(void *data, uint64_t key)
{
    test_held_t  *where = data;

    return kvr_index_match(where->ix, where->slot, &key, 1) == 1;
}


static void
test_roots(kvr_index_t *ix, int slot, const uint32_t *tokens)
{
    uint32_t       total;
    uint64_t       keys[4], h[4] = { 500, 501, 502, 503 };
    kvr_event_t    ev;
    test_held_t    where;
    kvr_homes_t    roots;
    kvr_kvstate_t  st;

    kvr_hash_token_blocks(tokens, 4 * BS, BS, kvr_hash_seed(NULL, 0, NULL, 0),
                          keys, 4);

    memset(&roots, 0, sizeof(roots));
    kvr_kvstate_init(&st, slot, BS, 1000);
    kvr_index_clear_slot(ix, slot);
    st.roots = &roots;
    where.ix = ix;
    where.slot = slot;

    ev = stored(h, 2, tokens, 0, 0);
    kvr_kvstate_apply(&st, ix, &ev);
    ev = stored(h + 2, 2, tokens + 2 * BS, 1, 501);
    kvr_kvstate_apply(&st, ix, &ev);
    tap_is(kvr_homes_live(&roots, 0, held, &where), 1,
           "roots: a chain and its continuation: one prefix");
    tap_is(kvr_homes_live(&roots, keys[0], held, &where), 0,
           "roots: it is the request's first block");
    tap_is(kvr_homes_routes(&roots, keys[0], &total), 0,
           "roots: learned, no route counted");

    /* another chain from block 2's tokens: another prefix */
    ev = stored(h + 3, 1, tokens + 2 * BS, 0, 0);
    ev.hashes = (uint64_t[]) { 510 };
    kvr_kvstate_apply(&st, ix, &ev);
    tap_is(kvr_homes_live(&roots, 0, held, &where), 2, "roots: two prefixes");

    /* the first evicted: one left */
    ev = removed(h, 1);
    kvr_kvstate_apply(&st, ix, &ev);
    tap_is(kvr_homes_live(&roots, 0, held, &where), 1,
           "roots: an evicted prefix no longer lives there");

    kvr_kvstate_free(&st);
}


/* (i) predictions stand in until the server's events store or remove */

static void
test_unpredict(kvr_index_t *ix, int slot, const uint32_t *tokens)
{
    int            pred;
    uint64_t       keys[4], h[4] = { 600, 601, 602, 603 };
    kvr_event_t    ev;
    kvr_kvstate_t  st;

    kvr_hash_token_blocks(tokens, 4 * BS, BS, kvr_hash_seed(NULL, 0, NULL, 0),
                          keys, 4);

    pred = kvr_index_slot(ix, "~127.0.0.1:8001", 15);
    kvr_kvstate_init(&st, slot, BS, 1000);
    tap_is(st.pred_slot, -1, "predictions: none unless told");
    kvr_index_clear_slot(ix, slot);
    kvr_index_record(ix, pred, keys, 4);
    st.pred_slot = pred;

    ev = stored(h, 2, tokens, 0, 0);
    kvr_kvstate_apply(&st, ix, &ev);
    tap_ok(kvr_index_match(ix, slot, keys, 4) == 2
           && kvr_index_match(ix, pred, keys, 1) == 0
           && kvr_index_match(ix, pred, keys + 2, 2) == 2,
           "predictions: the blocks stored are predicted no more, "
           "the others still are");

    /* predicted again (a route), then evicted by the engine */
    kvr_index_record(ix, pred, keys, 4);
    ev = removed(h, 2);
    kvr_kvstate_apply(&st, ix, &ev);
    tap_ok(kvr_index_match(ix, slot, keys, 1) == 0
           && kvr_index_match(ix, pred, keys, 1) == 0,
           "predictions: an eviction removes the prediction too");

    kvr_index_clear_slot(ix, pred);
    kvr_kvstate_free(&st);
}


/* (d) a rejected batch keeps the sequence; gaps; replay decisions */
static void
test_batches(kvr_index_t *ix, int slot)
{
    int                  reset;
    kvr_events_limits_t  lim;
    kvr_kvstate_t        st;
    kvr_event_batch_t    batch;
    kvr_events_decoder_t *dec;

    static const uint8_t  good[] = { 0x92, 0x01, 0x90 };    /* [1, []] */
    static const uint8_t  bad[] = { 0x92, 0x01, 0xc1 };

    kvr_events_limits_default(&lim);
    dec = kvr_events_decoder_create(&lim);
    kvr_kvstate_init(&st, slot, BS, 1000);

    tap_is(kvr_kvstate_seq(&st, 5), KVR_SEQ_NEXT, "seq: any first one");
    tap_is(kvr_kvstate_batch(&st, ix, dec, 0, good, sizeof(good), &batch,
                             &reset), KVR_EVENTS_OK, "batch 0 applied");
    tap_ok(kvr_kvstate_batch(&st, ix, dec, 1, bad, sizeof(bad), &batch,
                             &reset) != KVR_EVENTS_OK
           && st.last_seq == 0 && st.stats.rejected == 1,
           "a rejected batch does not advance the sequence");
    tap_is(kvr_kvstate_seq(&st, 2), KVR_SEQ_GAP,
           "so the next one is a gap");
    tap_is(kvr_kvstate_seq(&st, 1), KVR_SEQ_NEXT, "seq: last + 1");
    tap_is(kvr_kvstate_seq(&st, 0), KVR_SEQ_OLD, "seq: the last again");

    tap_is(kvr_kvstate_replayed(&st, 0, 0), KVR_REPLAY_SKIP,
           "replay: applied already, skipped");
    tap_is(kvr_kvstate_replayed(&st, 1, 0), KVR_REPLAY_APPLY,
           "replay: the next one applies");
    tap_is(kvr_kvstate_replayed(&st, 3, 5), KVR_REPLAY_AGAIN,
           "replay: a hole after progress: asked again (paged)");
    tap_is(kvr_kvstate_replayed(&st, 3, 0), KVR_REPLAY_LOST,
           "replay: a hole before any progress: lost, no loop");

    tap_ok(kvr_kvstate_batch(&st, ix, dec, 2, good, sizeof(good), &batch,
                             &reset) == KVR_EVENTS_OK && reset
           && st.last_seq == 2, "an accepted gap resets");

    kvr_kvstate_free(&st);
    kvr_events_decoder_destroy(dec);
}


int
main(void)
{
    int            slot;
    void          *region;
    size_t         i;
    uint32_t       tokens[4 * BS];
    uint64_t       keys[4], seed, h[4] = { 100, 101, 102, 103 };
    kvr_event_t    ev;
    kvr_index_t   *ix;
    kvr_kvstate_t  st;

    region = calloc(1, REGION);
    ix = kvr_index_init(region, REGION);
    slot = kvr_index_slot(ix, "127.0.0.1:8001", 14);

    for (i = 0; i < 4 * BS; i++) {
        tokens[i] = (uint32_t) (i * 7919 % 151643);
    }

    /* what the request path computes for the 4-block prompt */
    seed = kvr_hash_seed(NULL, 0, NULL, 0);
    tap_is(kvr_hash_token_blocks(tokens, 4 * BS, BS, seed, keys, 4), 4,
           "request keys: 4 blocks");

    tap_is(kvr_kvstate_init(&st, slot, BS, 1000), 0, "state created");
    kvr_kvstate_sequence(&st, ix, 0);

    /* two blocks, then two more under the second as parent */
    ev = stored(h, 2, tokens, 0, 0);
    kvr_kvstate_apply(&st, ix, &ev);
    tap_is(kvr_index_match(ix, slot, keys, 4), 2, "2 blocks stored");

    ev = stored(h + 2, 2, tokens + 2 * BS, 1, 101);
    kvr_kvstate_apply(&st, ix, &ev);
    tap_is(kvr_index_match(ix, slot, keys, 4), 4,
           "continued under its parent: the request's 4 keys match");

    /*
     * a second store of block 3 (kv_cache_report_mode="full" re-announces
     * reused blocks, never to remove them twice): held once
     */
    ev = stored(h + 3, 1, tokens + 3 * BS, 1, 102);
    kvr_kvstate_apply(&st, ix, &ev);
    tap_is(st.stats.reannounced, 1, "a store of a held hash: re-announced");
    ev = removed(h + 3, 1);
    kvr_kvstate_apply(&st, ix, &ev);
    tap_is(kvr_index_match(ix, slot, keys, 4), 3,
           "stored twice, removed once: gone (no reference left behind)");
    kvr_kvstate_apply(&st, ix, &ev);
    tap_is(st.stats.removed, 1, "1 removal counted");
    tap_is(st.stats.unknown_removed, 1, "the second one: unknown");

    /* an unknown parent, an unknown removal, another block size */
    ev = stored(h + 3, 1, tokens + 3 * BS, 1, 999);
    kvr_kvstate_apply(&st, ix, &ev);
    tap_is(st.stats.orphans, 1, "orphan counted, not stored");
    tap_is(kvr_index_match(ix, slot, keys, 4), 3, "orphan not in the index");

    ev = removed((uint64_t[]) { 555 }, 1);
    kvr_kvstate_apply(&st, ix, &ev);
    tap_is(st.stats.unknown_removed, 2, "unknown removal counted");

    ev = stored(h + 3, 1, tokens + 3 * BS, 1, 102);
    ev.block_size = 32;
    ev.n_tokens = 32;
    kvr_kvstate_apply(&st, ix, &ev);
    tap_is(st.stats.bad_block_size, 1, "other block size counted");
    tap_is(st.last_bad_block_size, 32, "and remembered for the log");

    ev = stored(h + 3, 1, tokens + 3 * BS, 1, 102);
    ev.n_tokens = BS - 1;
    kvr_kvstate_apply(&st, ix, &ev);
    tap_is(st.stats.bad_shape, 1, "token count that does not fit counted");

    /* recent vLLM's partial block: one hash, block_size its 5 tokens */
    ev = stored(h + 3, 1, tokens + 3 * BS, 1, 102);
    ev.block_size = 5;
    ev.n_tokens = 5;
    kvr_kvstate_apply(&st, ix, &ev);
    tap_ok(st.stats.partial == 1 && st.stats.bad_block_size == 1
           && kvr_index_match(ix, slot, keys, 4) == 3,
           "a partial block: skipped, not another block size");

    /* a LoRA adapter's blocks have other keys */
    ev = stored((uint64_t[]) { 200 }, 1, tokens, 0, 0);
    ev.lora_name = (const uint8_t *) "adapter-a";
    ev.lora_name_len = 9;
    kvr_kvstate_apply(&st, ix, &ev);
    seed = kvr_hash_seed("adapter-a", 9, NULL, 0);
    kvr_hash_token_blocks(tokens, BS, BS, seed, keys + 3, 1);
    tap_is(kvr_index_match(ix, slot, keys + 3, 1), 1,
           "LoRA block keyed with the adapter in the seed");
    kvr_hash_token_blocks(tokens, 4 * BS, BS, kvr_hash_seed(NULL, 0, NULL, 0),
                          keys, 4);

    /* sequence: in order, then a gap drops what is known */
    tap_is(kvr_kvstate_sequence(&st, ix, 1), 0, "seq 1 follows 0");
    tap_is(kvr_kvstate_sequence(&st, ix, 5), 1, "seq 5: a gap");
    tap_is(kvr_index_match(ix, slot, keys, 4), 0, "gap: entries dropped");

    ev = stored(h, 2, tokens, 0, 0);
    kvr_kvstate_apply(&st, ix, &ev);
    tap_is(kvr_kvstate_sequence(&st, ix, 0), 1, "seq back to 0: a restart");
    tap_is(kvr_index_match(ix, slot, keys, 4), 0, "restart: dropped");

    ev = stored(h, 2, tokens, 0, 0);
    kvr_kvstate_apply(&st, ix, &ev);
    memset(&ev, 0, sizeof(ev));
    ev.type = KVR_EVENT_ALL_BLOCKS_CLEARED;
    kvr_kvstate_apply(&st, ix, &ev);
    tap_is(kvr_index_match(ix, slot, keys, 4), 0, "AllBlocksCleared");
    tap_is(st.stats.cleared, 1, "clear counted");

    /* a clear keeps the sequence: what follows it is still checked */
    tap_is(kvr_kvstate_sequence(&st, ix, 1), 0, "seq 1 follows the clear's 0");
    tap_is(kvr_kvstate_sequence(&st, ix, 3), 1, "seq 3 after a clear: a gap");

    kvr_kvstate_free(&st);

    test_tiers_groups(ix, slot, tokens);
    test_keys(ix, slot, tokens);
    test_ranks(ix, slot, tokens);
    test_batches(ix, slot);
    test_roots(ix, slot, tokens);
    test_unpredict(ix, slot, tokens);

    free(region);

    return tap_done();
}
