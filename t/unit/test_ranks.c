/*
 * Copyright (C) kvroute developers
 *
 * Data-parallel ranks: a slot per (server, rank) in the index, each
 * rank's events applied to its own slot, and the rank a request goes to
 * (kvr_ranks_pick).
 */


#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "kvr_ranks.h"
#include "kvr_kvstate.h"
#include "kvr_hash.h"


#define REGION  (2 * 1024 * 1024)
#define BS      16


static uint64_t
inflight_of(void *data, size_t rank)
{
    const uint64_t  *loads = data;

    return loads[rank];
}


static uint64_t  asked;

static uint64_t
inflight_counted(void *data, size_t rank)
{
    asked++;

    return inflight_of(data, rank);
}


static void
test_pick(void)
{
    size_t    i, r, again, seen[4];
    uint32_t  ov[4];
    uint64_t  loads[4] = { 5, 1, 1, 0 };

    ov[0] = 3; ov[1] = 7; ov[2] = 0; ov[3] = 7;
    tap_is(kvr_ranks_pick(ov, 1, 42, NULL, NULL), 0, "one rank: rank 0");

    ov[3] = 2;
    tap_is(kvr_ranks_pick(ov, 4, 42, inflight_of, loads), 1,
           "the longest match wins over an idle rank");

    /* ranks 1 and 3 hold 7 blocks: the less busy one */
    ov[3] = 7;
    tap_is(kvr_ranks_pick(ov, 4, 42, inflight_of, loads), 3,
           "tied matches: the rank with fewer requests in flight");
    loads[3] = 9;
    tap_is(kvr_ranks_pick(ov, 4, 42, inflight_of, loads), 1,
           "tied matches: the other way round");

    /* equal load among the tied: the home hash, only among them */
    loads[3] = 1;
    for (i = 0; i < 64; i++) {
        r = kvr_ranks_pick(ov, 4, i, inflight_of, loads);
        if (r != 1 && r != 3) {
            break;
        }
    }
    tap_is(i, 64, "tied match and load: one of the tied ranks, always");

    /* nothing matches: the home rank, the same for one prefix, spread */
    memset(ov, 0, sizeof(ov));
    memset(seen, 0, sizeof(seen));
    asked = 0;
    again = 0;
    for (i = 0; i < 400; i++) {
        r = kvr_ranks_pick(ov, 4, i * 0x9e3779b97f4a7c15ULL,
                           inflight_counted, loads);
        seen[r]++;
        again += (r == kvr_ranks_pick(ov, 4, i * 0x9e3779b97f4a7c15ULL,
                                      inflight_counted, loads));
    }
    tap_is(again, 400, "a new prefix: the same home rank each time");
    tap_ok(seen[0] > 50 && seen[1] > 50 && seen[2] > 50 && seen[3] > 50,
           "new prefixes spread over all ranks (%zu %zu %zu %zu)",
           seen[0], seen[1], seen[2], seen[3]);
    tap_is(asked, 0, "no match: the load is not asked (burst affinity)");

    r = kvr_ranks_pick(ov, 4, 77, NULL, NULL);
    tap_is(kvr_ranks_pick(ov, 4, 77, inflight_of, loads), r,
           "no match: the home rank whatever the load");
}


/* each rank's events in its own slot: one rank never touches another's */
static void
test_slots(kvr_index_t *ix, const uint32_t *tokens)
{
    int            s0, s1, slots[2];
    uint32_t       ov[2];
    uint64_t       keys[4], a[2] = { 500, 501 }, b[3] = { 600, 601, 602 };
    kvr_event_t    ev;
    kvr_kvstate_t  r0, r1;

    s0 = kvr_index_slot(ix, "127.0.0.1:8001#0", 16);
    s1 = kvr_index_slot(ix, "127.0.0.1:8001#1", 16);
    tap_ok(s0 >= 0 && s1 >= 0 && s0 != s1, "a slot per (server, rank)");
    tap_is(kvr_index_slot(ix, "127.0.0.1:8001#1", 16), s1,
           "a rank's slot found again by its name");

    kvr_hash_token_blocks(tokens, 4 * BS, BS, kvr_hash_seed(NULL, 0, NULL, 0),
                          keys, 4);
    kvr_kvstate_init(&r0, s0, BS, 1000);
    kvr_kvstate_init(&r1, s1, BS, 1000);

    /* rank 0 holds blocks 0-1, rank 1 blocks 0-2 (the same tokens) */
    ev = (kvr_event_t) { 0 };
    ev.type = KVR_EVENT_BLOCK_STORED;
    ev.hashes = a;
    ev.n_hashes = 2;
    ev.token_ids = tokens;
    ev.n_tokens = 2 * BS;
    ev.block_size = BS;
    kvr_kvstate_apply(&r0, ix, &ev);
    ev.hashes = b;
    ev.n_hashes = 3;
    ev.n_tokens = 3 * BS;
    kvr_kvstate_apply(&r1, ix, &ev);

    slots[0] = s0;
    slots[1] = s1;
    kvr_index_match_slots_jump(ix, slots, 2, keys, 4, 16, ov);
    tap_ok(ov[0] == 2 && ov[1] == 3, "each rank's own match (%u, %u)",
           ov[0], ov[1]);
    tap_is(kvr_ranks_pick(ov, 2, keys[0], NULL, NULL), 1,
           "the request goes to rank 1");

    /* rank 0's AllBlocksCleared, then its reset (gap, restart) */
    ev = (kvr_event_t) { 0 };
    ev.type = KVR_EVENT_ALL_BLOCKS_CLEARED;
    kvr_kvstate_apply(&r0, ix, &ev);
    tap_ok(kvr_index_match(ix, s0, keys, 4) == 0
           && kvr_index_match(ix, s1, keys, 4) == 3,
           "rank 0 cleared: rank 1's blocks stay");

    ev = (kvr_event_t) { 0 };
    ev.type = KVR_EVENT_BLOCK_REMOVED;
    ev.hashes = a;                  /* rank 0's handles, now unknown */
    ev.n_hashes = 2;
    kvr_kvstate_apply(&r0, ix, &ev);
    kvr_kvstate_reset(&r0, ix);
    tap_is(kvr_index_match(ix, s1, keys, 4), 3,
           "rank 0's removals and reset: rank 1's blocks stay");

    ev.hashes = b + 2;
    ev.n_hashes = 1;
    kvr_kvstate_apply(&r1, ix, &ev);
    tap_is(kvr_index_match(ix, s1, keys, 4), 2, "rank 1's own removal");

    kvr_kvstate_free(&r0);
    kvr_kvstate_free(&r1);
}


int
main(void)
{
    void         *region;
    size_t        i;
    uint32_t      tokens[4 * BS];
    kvr_index_t  *ix;

    test_pick();

    region = calloc(1, REGION);
    ix = kvr_index_init(region, REGION);

    for (i = 0; i < 4 * BS; i++) {
        tokens[i] = (uint32_t) (i * 7919 % 151643);
    }

    test_slots(ix, tokens);

    free(region);

    return tap_done();
}
