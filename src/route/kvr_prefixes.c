/*
 * Copyright (C) kvroute developers
 */


#include "kvr_prefixes.h"


/* what kvr_prefixes_held() looks in */
typedef struct {
    kvr_index_t   *index;
    int            slot;
    int            pred;
} kvr_prefixes_server_t;


static void kvr_prefixes_kvroute(const kvr_policy_conf_t *conf,
    const kvr_prefixes_t *px, kvr_candidate_t *cand, size_t n,
    uint32_t *share);
static void kvr_prefixes_cost(const kvr_prefixes_t *px,
    kvr_candidate_t *cand, size_t n);
static int kvr_prefixes_has_homes(const kvr_prefixes_t *px, size_t i);
static kvr_homes_t *kvr_prefixes_table(const kvr_prefixes_t *px, size_t i);
static int kvr_prefixes_held(void *data, uint64_t first_block);


void
kvr_prefixes_count(const kvr_policy_conf_t *conf, const kvr_prefixes_t *px,
    kvr_candidate_t *cand, size_t n, uint32_t *share)
{
    size_t  i;

    *share = 0;

    for (i = 0; i < n; i++) {
        cand[i].prefixes = 0;
    }

    switch (conf->policy) {

    case KVR_POLICY_COST:
    case KVR_POLICY_TTFT:
        kvr_prefixes_cost(px, cand, n);
        break;

    case KVR_POLICY_KVROUTE:
        kvr_prefixes_kvroute(conf, px, cand, n, share);
        break;

    default:
        break;
    }
}


void
kvr_prefixes_route_shares(const kvr_prefixes_t *px, kvr_candidate_t *cand,
    size_t n)
{
    size_t    i;
    uint32_t  routes, total;

    for (i = 0; i < n; i++) {
        cand[i].route_share = 0;

        /* read only by the room test, which needs a size and a prefix */
        if (cand[i].capacity == 0 || cand[i].overlap == 0
            || !kvr_prefixes_has_homes(px, i))
        {
            continue;
        }

        routes = kvr_homes_routes(&px->homes[px->slots[i]],
                                  px->first_block, &total);

        if (total) {
            cand[i].route_share = (uint32_t) ((uint64_t) routes * 1024
                                              / total);
        }
    }
}


/*
 * A prompt no server holds goes where fewest prefixes live, and a busy
 * prefix spreads only to servers with room for one more.
 */

static void
kvr_prefixes_kvroute(const kvr_policy_conf_t *conf, const kvr_prefixes_t *px,
    kvr_candidate_t *cand, size_t n, uint32_t *share)
{
    int                    held_anywhere;
    size_t                 i;
    uint32_t               most, least, total;
    uint64_t               routes, all;
    kvr_prefixes_server_t  server;

    held_anywhere = 0;
    most = 0;
    least = UINT32_MAX;

    for (i = 0; i < n; i++) {
        if (cand[i].overlap) {
            held_anywhere = 1;
        }

        most = (cand[i].inflight > most) ? cand[i].inflight : most;
        least = (cand[i].inflight < least) ? cand[i].inflight : least;
    }

    if (held_anywhere
        && (conf->spread == 0 || most < least + conf->spread))
    {
        return;
    }

    /* the prefix's share of the fleet's recent routes: cheap, no lookups */

    routes = 0;
    all = 0;

    for (i = 0; i < n; i++) {
        if (kvr_prefixes_has_homes(px, i)) {
            routes += kvr_homes_routes(&px->homes[px->slots[i]],
                                       px->first_block, &total);
            all += total;
        }
    }

    *share = all ? (uint32_t) (routes * 1024 / all) : 0;

    /* a held prefix that is not hot is never spread: nothing to count */

    if (held_anywhere && (uint64_t) *share * n <= 1024) {
        return;
    }

    server.index = px->index;

    for (i = 0; i < n; i++) {
        if (!kvr_prefixes_has_homes(px, i)) {
            continue;
        }

        server.slot = px->slots[i];
        server.pred = px->pred ? px->pred[i] : -1;

        cand[i].prefixes = kvr_homes_live(kvr_prefixes_table(px, i),
                                          px->first_block,
                                          kvr_prefixes_held, &server);
    }
}


/*
 * policy=cost: how many prefixes live on each server that lacks this
 * prompt's longest cached prefix, where a miss may evict.  Counting takes
 * up to KVR_HOMES_MAX index probes a server, hence the reuse.
 */

static void
kvr_prefixes_cost(const kvr_prefixes_t *px, kvr_candidate_t *cand, size_t n)
{
    size_t                 i;
    uint32_t               most;
    kvr_prefixes_server_t  server;

    most = 0;

    for (i = 0; i < n; i++) {
        most = (cand[i].overlap > most) ? cand[i].overlap : most;
    }

    server.index = px->index;

    for (i = 0; i < n; i++) {
        if (!kvr_prefixes_has_homes(px, i)
            || (most && cand[i].overlap == most))
        {
            continue;
        }

        server.slot = px->slots[i];
        server.pred = px->pred ? px->pred[i] : -1;

        cand[i].prefixes = kvr_homes_live_recent(kvr_prefixes_table(px, i),
                                                 px->now_msec,
                                                 KVR_PREFIXES_LIVE_MSEC,
                                                 kvr_prefixes_held, &server);
    }
}


void
kvr_prefixes_routed(const kvr_policy_conf_t *conf, kvr_homes_t *homes,
    kvr_homes_t *roots, int slot, uint64_t first_block, uint32_t overlap)
{
    if (slot < 0 || slot >= KVR_INDEX_MAX_SLOTS) {
        return;
    }

    kvr_homes_touch(&homes[slot], first_block);

    if ((conf->policy == KVR_POLICY_COST || conf->policy == KVR_POLICY_TTFT)
        && overlap == 0)
    {
        kvr_homes_placed(roots ? &roots[slot] : &homes[slot]);
    }
}


/*
 * where a server's prefixes are listed: in kv mode the engine's events
 * (the same for every frontend), else this frontend's routes
 */

static kvr_homes_t *
kvr_prefixes_table(const kvr_prefixes_t *px, size_t i)
{
    return px->roots ? &px->roots[px->slots[i]] : &px->homes[px->slots[i]];
}


static int
kvr_prefixes_has_homes(const kvr_prefixes_t *px, size_t i)
{
    return px->slots[i] >= 0 && px->slots[i] < KVR_INDEX_MAX_SLOTS;
}


/* a prefix lives on a server: its own slot or its predictions hold it */

static int
kvr_prefixes_held(void *data, uint64_t first_block)
{
    kvr_prefixes_server_t  *server = data;

    if (kvr_index_match(server->index, server->slot, &first_block, 1)) {
        return 1;
    }

    return server->pred >= 0
           && kvr_index_match(server->index, server->pred, &first_block, 1);
}
