/*
 * Copyright (C) kvroute developers
 *
 * kvr_prefixes: when the policy's prefix counts are taken, and what they
 * count (a server's live prefixes in its slot or its predictions), and
 * what a route teaches the homes.
 */


#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "kvr_prefixes.h"


#define REGION  (1024 * 1024)
#define N       3


static kvr_policy_conf_t  conf_kvroute = {
    KVR_POLICY_KVROUTE, 16, 1.0, 4, 1.5, 1, 4096, 4, 1200, 2, 40000, 0, 0, 0, 0
};

static kvr_policy_conf_t  conf_dynamo = {
    KVR_POLICY_DYNAMO, 16, 1.0, 4, 1.5, 1, 4096, 4, 1200, 2, 40000, 0, 0, 0, 0
};

static kvr_policy_conf_t  conf_cost = {
    KVR_POLICY_COST, 16, 1.0, 4, 1.5, 1, 4096, 4, 1200, 2, 40000, 0, 0, 0, 0
};


static kvr_homes_t      homes[KVR_INDEX_MAX_SLOTS];
static kvr_homes_t      saved[KVR_INDEX_MAX_SLOTS];
static kvr_homes_t      roots[KVR_INDEX_MAX_SLOTS];
static kvr_candidate_t  cand[N];


/* candidates with the given overlaps and requests in flight */
static void
candidates(uint32_t o0, uint32_t o1, uint32_t o2, uint32_t f0, uint32_t f1,
    uint32_t f2)
{
    memset(cand, 0, sizeof(cand));

    cand[0].overlap = o0;
    cand[1].overlap = o1;
    cand[2].overlap = o2;
    cand[0].inflight = f0;
    cand[1].inflight = f1;
    cand[2].inflight = f2;

    cand[0].prefixes = cand[1].prefixes = cand[2].prefixes = 999;
}


/* count prefixes routed to slot: touched and held in the index */
static void
place(kvr_index_t *ix, int slot, uint64_t first, int times)
{
    int  i;

    for (i = 0; i < times; i++) {
        kvr_homes_touch(&homes[slot], first);
    }

    kvr_index_add_ref(ix, slot, first);
}


int
main(void)
{
    int              slots[N], pred[N], none[N];
    void            *mem;
    uint32_t         share;
    kvr_index_t     *ix;
    kvr_prefixes_t   px;

    mem = malloc(REGION);
    memset(mem, 0, REGION);

    ix = kvr_index_init(mem, REGION);
    tap_ok(ix != NULL, "index");

    slots[0] = kvr_index_slot(ix, "a", 1);
    slots[1] = kvr_index_slot(ix, "b", 1);
    slots[2] = -1;                              /* no slot: no homes */
    pred[0] = kvr_index_slot(ix, "~a", 2);
    pred[1] = kvr_index_slot(ix, "~b", 2);
    pred[2] = -1;
    none[0] = none[1] = none[2] = -1;

    memset(homes, 0, sizeof(homes));

    /* a: prefixes 10, 11 (10 routed 6 times); b: 20 */
    place(ix, slots[0], 10, 6);
    place(ix, slots[0], 11, 1);
    place(ix, slots[1], 20, 1);

    px.index = ix;
    px.homes = homes;
    px.slots = slots;
    px.pred = NULL;
    px.roots = NULL;
    px.now_msec = 1000;

    /* dynamo weighs no prefixes */

    px.first_block = 99;
    candidates(0, 0, 0, 0, 0, 0);
    kvr_prefixes_count(&conf_dynamo, &px, cand, N, &share);
    tap_is(cand[0].prefixes + cand[1].prefixes + cand[2].prefixes, 0,
           "dynamo: no counts");
    tap_is(share, 0, "dynamo: no share");

    /* kvroute, a prompt no server holds: where fewest live */

    candidates(0, 0, 0, 0, 0, 0);
    kvr_prefixes_count(&conf_kvroute, &px, cand, N, &share);
    tap_is(cand[0].prefixes, 2, "kvroute, held nowhere: a's live prefixes");
    tap_is(cand[1].prefixes, 1, "b's");
    tap_is(cand[2].prefixes, 0, "a server without a slot counts none");
    tap_is(share, 0, "an unknown prefix has no share");

    /* kvroute, held, loads even: nothing to count */

    px.first_block = 10;
    candidates(3, 0, 0, 2, 2, 2);
    kvr_prefixes_count(&conf_kvroute, &px, cand, N, &share);
    tap_is(cand[0].prefixes + cand[1].prefixes + cand[2].prefixes, 0,
           "kvroute, held, even loads: no counts");
    tap_is(share, 0, "and no share");

    /* held, loads differ by spread, and hot: counted, the prompt's not */

    candidates(3, 0, 0, 3, 2, 2);
    kvr_prefixes_count(&conf_kvroute, &px, cand, N, &share);
    tap_is(share, 6 * 1024 / 8, "the share of the fleet's routes, in 1/1024");
    tap_is(cand[0].prefixes, 1, "hot: a counts its other prefix only");
    tap_is(cand[1].prefixes, 1, "b counts its own");

    /* held, loads differ, but not hot: a share, no counts */

    px.first_block = 11;
    candidates(3, 0, 0, 3, 2, 2);
    kvr_prefixes_count(&conf_kvroute, &px, cand, N, &share);
    tap_is(share, 1024 / 8, "a cold prefix's share");
    tap_is(cand[0].prefixes + cand[1].prefixes, 0,
           "a cold held prefix is never spread: no counts");

    /* spread=0: a held prefix never spreads */

    conf_kvroute.spread = 0;
    px.first_block = 10;
    candidates(3, 0, 0, 9, 0, 0);
    kvr_prefixes_count(&conf_kvroute, &px, cand, N, &share);
    tap_is(share, 0, "spread=0: held, no share");
    conf_kvroute.spread = 1;

    /* predictions: a prefix held only there lives on the server */

    kvr_homes_touch(&homes[slots[1]], 21);
    kvr_index_add_ref(ix, pred[1], 21);

    px.first_block = 99;
    candidates(0, 0, 0, 0, 0, 0);
    kvr_prefixes_count(&conf_kvroute, &px, cand, N, &share);
    tap_is(cand[1].prefixes, 1, "without predictions: b's slot only");

    px.pred = pred;
    kvr_prefixes_count(&conf_kvroute, &px, cand, N, &share);
    tap_is(cand[1].prefixes, 2, "with predictions: b's predicted one too");

    px.pred = none;
    kvr_prefixes_count(&conf_kvroute, &px, cand, N, &share);
    tap_is(cand[1].prefixes, 1, "no prediction slots: as without");
    px.pred = NULL;

    /* cost: servers holding the longest prefix are not counted */

    candidates(3, 0, 0, 0, 0, 0);
    kvr_prefixes_count(&conf_cost, &px, cand, N, &share);
    tap_is(cand[0].prefixes, 0, "cost: the longest holder is not counted");
    tap_is(cand[1].prefixes, 1, "another is");
    tap_is(share, 0, "cost: no share");

    candidates(0, 0, 0, 0, 0, 0);
    px.now_msec = 2000;
    kvr_prefixes_count(&conf_cost, &px, cand, N, &share);
    tap_is(cand[0].prefixes, 2, "cost, held nowhere: every server counts");

    /* a count is reused for KVR_PREFIXES_LIVE_MSEC */

    kvr_homes_touch(&homes[slots[0]], 12);
    kvr_index_add_ref(ix, slots[0], 12);

    candidates(0, 0, 0, 0, 0, 0);
    px.now_msec = 2000 + KVR_PREFIXES_LIVE_MSEC;
    kvr_prefixes_count(&conf_cost, &px, cand, N, &share);
    tap_is(cand[0].prefixes, 2, "cost: a recent count is reused");

    candidates(0, 0, 0, 0, 0, 0);
    px.now_msec = 2001 + KVR_PREFIXES_LIVE_MSEC;
    kvr_prefixes_count(&conf_cost, &px, cand, N, &share);
    tap_is(cand[0].prefixes, 3, "cost: an old one is counted again");

    /* a route: the homes learn, and cost places a new prefix at once */

    kvr_prefixes_routed(&conf_cost, homes, NULL, slots[1], 30, 0);
    candidates(0, 0, 0, 0, 0, 0);
    px.now_msec += 1;
    kvr_prefixes_count(&conf_cost, &px, cand, N, &share);
    tap_is(cand[1].prefixes, 2, "cost: a miss placed counts before a recount");

    kvr_prefixes_routed(&conf_cost, homes, NULL, slots[1], 20, 5);
    candidates(0, 0, 0, 0, 0, 0);
    px.now_msec += 1;
    kvr_prefixes_count(&conf_cost, &px, cand, N, &share);
    tap_is(cand[1].prefixes, 2, "cost: a hit adds no prefix");

    tap_is(kvr_homes_routes(&homes[slots[1]], 30, &share), 1,
           "the route is in the homes");

    kvr_prefixes_routed(&conf_kvroute, homes, NULL, slots[0], 40, 0);
    tap_is(kvr_homes_routes(&homes[slots[0]], 40, &share), 1,
           "kvroute: the route is in the homes too");

    /*
     * kv mode: the counts come from the prefixes the engines' events
     * stored (roots), not from this frontend's routes
     */

    memset(roots, 0, sizeof(roots));
    kvr_homes_learn(&roots[slots[1]], 20);
    kvr_homes_learn(&roots[slots[1]], 50);
    kvr_homes_learn(&roots[slots[1]], 51);
    kvr_index_add_ref(ix, slots[1], 50);
    kvr_index_add_ref(ix, slots[1], 51);

    px.roots = roots;
    px.now_msec += 1000;
    candidates(0, 0, 0, 0, 0, 0);
    kvr_prefixes_count(&conf_cost, &px, cand, N, &share);
    tap_is(cand[0].prefixes, 0, "roots: a's routes are not counted");
    tap_is(cand[1].prefixes, 3, "roots: b's stored prefixes are");

    kvr_prefixes_routed(&conf_cost, homes, roots, slots[0], 60, 0);
    candidates(0, 0, 0, 0, 0, 0);
    px.now_msec += 1;
    kvr_prefixes_count(&conf_cost, &px, cand, N, &share);
    tap_is(cand[0].prefixes, 1, "roots: a miss placed counts until a recount");

    candidates(0, 0, 0, 0, 0, 0);
    kvr_prefixes_count(&conf_kvroute, &px, cand, N, &share);
    tap_is(cand[1].prefixes, 3, "roots: kvroute counts them too");
    px.roots = NULL;

    /*
     * route shares: the prompt's part of this frontend's own routes to
     * each server, from the homes even when the roots are counted
     */

    memset(homes, 0, sizeof(homes));
    place(ix, slots[0], 70, 3);
    place(ix, slots[0], 71, 1);
    place(ix, slots[1], 71, 2);
    kvr_homes_learn(&roots[slots[0]], 72);

    px.roots = roots;
    px.first_block = 70;
    candidates(4, 4, 4, 0, 0, 0);
    cand[0].capacity = cand[1].capacity = cand[2].capacity = 100;
    cand[2].route_share = 77;
    kvr_prefixes_route_shares(&px, cand, N);
    tap_is(cand[0].route_share, 3 * 1024 / 4, "share: 3 of a's 4 routes");
    tap_is(cand[1].route_share, 0, "share: none of b's routes");
    tap_is(cand[2].route_share, 0, "share: no slot, none");

    px.first_block = 71;
    kvr_prefixes_route_shares(&px, cand, N);
    tap_is(cand[0].route_share, 1024 / 4, "share: 1 of a's 4");
    tap_is(cand[1].route_share, 1024, "share: all of b's");

    /* the room test reads a share only with a size and a cached prefix */
    cand[0].capacity = 0;
    cand[1].overlap = 0;
    kvr_prefixes_route_shares(&px, cand, N);
    tap_is(cand[0].route_share, 0, "share: none where the size is unknown");
    tap_is(cand[1].route_share, 0, "share: none where nothing is cached");
    cand[0].capacity = 100;
    cand[1].overlap = 4;

    px.first_block = 72;
    kvr_prefixes_route_shares(&px, cand, N);
    tap_is(cand[0].route_share, 0, "share: a prefix the roots learnt is "
           "no route");
    px.roots = NULL;

    memcpy(saved, homes, sizeof(homes));
    kvr_prefixes_routed(&conf_cost, homes, NULL, -1, 30, 0);
    kvr_prefixes_routed(&conf_cost, homes, NULL, KVR_INDEX_MAX_SLOTS, 30, 0);
    tap_ok(memcmp(saved, homes, sizeof(homes)) == 0,
           "a route to no slot, or one past the homes, changes nothing");

    free(mem);

    return tap_done();
}
