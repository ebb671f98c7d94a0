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

    /* vLLM does not de-duplicate: a second store of block 3 */
    ev = stored(h + 3, 1, tokens + 3 * BS, 1, 102);
    kvr_kvstate_apply(&st, ix, &ev);
    ev = removed(h + 3, 1);
    kvr_kvstate_apply(&st, ix, &ev);
    tap_is(kvr_index_match(ix, slot, keys, 4), 4,
           "stored twice, removed once: still there");
    kvr_kvstate_apply(&st, ix, &ev);
    tap_is(kvr_index_match(ix, slot, keys, 4), 3, "removed twice: gone");
    tap_is(st.stats.removed, 2, "2 removals counted");

    /* an unknown parent, an unknown removal, another block size */
    ev = stored(h + 3, 1, tokens + 3 * BS, 1, 999);
    kvr_kvstate_apply(&st, ix, &ev);
    tap_is(st.stats.orphans, 1, "orphan counted, not stored");
    tap_is(kvr_index_match(ix, slot, keys, 4), 3, "orphan not in the index");

    ev = removed((uint64_t[]) { 555 }, 1);
    kvr_kvstate_apply(&st, ix, &ev);
    tap_is(st.stats.unknown_removed, 1, "unknown removal counted");

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
    free(region);

    return tap_done();
}
