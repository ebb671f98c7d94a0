/*
 * Copyright (C) kvroute developers
 *
 * The upstream balancer: wraps round robin's peer data, picks a peer by
 * cached prefix and load, and keeps the shared in-flight load counters.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_kvroute.h"


/* probe every 16th block first: a cached prompt is a leading run */
#define NGX_HTTP_KVROUTE_MATCH_STRIDE  16
#define NGX_HTTP_KVROUTE_LIVE_MSEC  100


typedef struct {
    /* the round robin data must be first */
    ngx_http_upstream_rr_peer_data_t   rrp;

    ngx_http_kvroute_srv_conf_t       *conf;
    ngx_http_kvroute_ctx_t            *ctx;
    ngx_http_upstream_rr_peers_t      *primaries;

    /* load charged for the current try, returned in free */
    ngx_int_t                          charged_slot;
    uint64_t                           charged_tokens;
    uint64_t                           charged_prefill;

    /* policy=ttft: its blocks pinned on the server, under the zone lock */
    kvr_pins_charge_t                  pinned;
} ngx_http_kvroute_peer_data_t;


static ngx_int_t ngx_http_kvroute_init_peer(ngx_http_request_t *r,
    ngx_http_upstream_srv_conf_t *us);
static ngx_int_t ngx_http_kvroute_get_peer(ngx_peer_connection_t *pc,
    void *data);
static void ngx_http_kvroute_free_peer(ngx_peer_connection_t *pc,
    void *data, ngx_uint_t state);
static ngx_int_t ngx_http_kvroute_fallback(ngx_peer_connection_t *pc,
    ngx_http_kvroute_peer_data_t *kp, ngx_uint_t reason);
static void ngx_http_kvroute_charge(ngx_http_kvroute_peer_data_t *kp,
    ngx_http_upstream_rr_peer_t *chosen, ngx_uint_t overlap);
static void ngx_http_kvroute_decided(ngx_peer_connection_t *pc,
    ngx_http_kvroute_peer_data_t *kp, ngx_uint_t reason);
static uint64_t ngx_http_kvroute_id_hash(ngx_http_upstream_rr_peer_t *peer);
static void ngx_http_kvroute_prefixes(ngx_http_kvroute_srv_conf_t *kcf,
    kvr_index_t *index, int *slots, int *pred, uint32_t *overlap,
    ngx_uint_t n, uint64_t first_block, kvr_candidate_t *cand,
    uint32_t *share);
static void ngx_http_kvroute_prefixes_cost(ngx_http_kvroute_srv_conf_t *kcf,
    kvr_index_t *index, int *slots, int *pred, uint32_t *overlap,
    ngx_uint_t n, kvr_candidate_t *cand);
static int ngx_http_kvroute_held(void *data, uint64_t first_block);
static void ngx_http_kvroute_pins_gather(ngx_http_kvroute_srv_conf_t *kcf,
    ngx_http_kvroute_ctx_t *ctx, int *slots, ngx_uint_t n,
    kvr_candidate_t *cand, kvr_demand_t *demand);
static void ngx_http_kvroute_pin(ngx_http_kvroute_peer_data_t *kp, int slot);
static void ngx_http_kvroute_unpin(ngx_http_kvroute_peer_data_t *kp);


/* a peer's id hash, remembered per process (keyed by the cycle too) */
typedef struct {
    ngx_cycle_t                    *cycle;
    ngx_http_upstream_rr_peer_t    *peer;
    u_char                         *name;
    size_t                          len;
    uint64_t                        hash;
} ngx_http_kvroute_id_t;


#define NGX_HTTP_KVROUTE_IDS  64

static ngx_http_kvroute_id_t  ngx_http_kvroute_ids[NGX_HTTP_KVROUTE_IDS];


ngx_int_t
ngx_http_kvroute_init_upstream(ngx_conf_t *cf,
    ngx_http_upstream_srv_conf_t *us)
{
    if (ngx_http_upstream_init_round_robin(cf, us) != NGX_OK) {
        return NGX_ERROR;
    }

    /* checked here: kvroute_events lines and servers follow kvroute */

    if (ngx_http_kvroute_check_servers(cf, us) != NGX_OK) {
        return NGX_ERROR;
    }

    us->peer.init = ngx_http_kvroute_init_peer;

    return NGX_OK;
}


static ngx_int_t
ngx_http_kvroute_init_peer(ngx_http_request_t *r,
    ngx_http_upstream_srv_conf_t *us)
{
    ngx_http_kvroute_ctx_t        *ctx;
    ngx_http_kvroute_srv_conf_t   *kcf;
    ngx_http_kvroute_peer_data_t  *kp;

    kp = ngx_pcalloc(r->pool, sizeof(ngx_http_kvroute_peer_data_t));
    if (kp == NULL) {
        return NGX_ERROR;
    }

    r->upstream->peer.data = &kp->rrp;

    if (ngx_http_upstream_init_round_robin_peer(r, us) != NGX_OK) {
        return NGX_ERROR;
    }

    r->upstream->peer.get = ngx_http_kvroute_get_peer;
    r->upstream->peer.free = ngx_http_kvroute_free_peer;

    kcf = ngx_http_conf_upstream_srv_conf(us, ngx_http_kvroute_module);

    ctx = ngx_http_kvroute_get_ctx(r);
    if (ctx == NULL) {
        return NGX_ERROR;
    }

    kp->conf = kcf;
    kp->ctx = ctx;
    kp->primaries = kp->rrp.peers;
    kp->charged_slot = -1;
    kp->pinned.slot = -1;

    ctx->charge = kp;

    if (kcf->slots == NULL
        && ngx_http_kvroute_resolve_slots(kcf, kp->rrp.peers) != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (!ctx->analyzed) {
        ngx_http_kvroute_analyze(r, kcf, ctx);
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_kvroute_get_peer(ngx_peer_connection_t *pc, void *data)
{
    ngx_http_kvroute_peer_data_t  *kp = data;

    int                             slots[NGX_HTTP_KVROUTE_MAX_PEERS];
    int                             pred[NGX_HTTP_KVROUTE_MAX_PEERS];
    time_t                          now;
    size_t                          chosen;
    uint32_t                        overlap[NGX_HTTP_KVROUTE_MAX_PEERS];
    uint32_t                        predicted[NGX_HTTP_KVROUTE_MAX_PEERS];
    uint64_t                        requests, tokens, prefill;
    uintptr_t                       m;
    ngx_uint_t                      i, n, k, base, reason;
    kvr_pick_e                      why;
    kvr_demand_t                    demand;
    kvr_index_t                    *index;
    kvr_candidate_t                 cand[NGX_HTTP_KVROUTE_MAX_PEERS];
    ngx_http_kvroute_ctx_t         *ctx;
    ngx_http_kvroute_srv_conf_t    *kcf;
    ngx_http_upstream_rr_peer_t    *peer, *peers_of[NGX_HTTP_KVROUTE_MAX_PEERS];
    ngx_http_upstream_rr_peers_t   *peers;
    ngx_http_upstream_rr_peer_data_t  *rrp;

    rrp = &kp->rrp;
    kcf = kp->conf;
    ctx = kp->ctx;

    if (kcf->mode == NGX_HTTP_KVROUTE_MODE_ROUND_ROBIN) {
        return ngx_http_kvroute_fallback(pc, kp,
                                         NGX_HTTP_KVROUTE_R_ROUND_ROBIN);
    }

    if ((kcf->mode == NGX_HTTP_KVROUTE_MODE_APPROX
         || kcf->mode == NGX_HTTP_KVROUTE_MODE_KV)
        && ctx->hashes == NULL)
    {
        return ngx_http_kvroute_fallback(pc, kp, ctx->reason);
    }

    peers = rrp->peers;
    base = (peers == kp->primaries) ? 0 : kp->primaries->number;

    now = ngx_time();

    ngx_http_upstream_rr_peers_rlock(peers);

    /* eligible primaries, as the hash module judges them */

    n = 0;

    for (peer = peers->peer, i = 0;
         peer && i < NGX_HTTP_KVROUTE_MAX_PEERS;
         peer = peer->next, i++)
    {
        m = (uintptr_t) 1 << i % (8 * sizeof(uintptr_t));

        if (rrp->tried[i / (8 * sizeof(uintptr_t))] & m) {
            continue;
        }

        ngx_http_upstream_rr_peer_lock(peers, peer);

        if (peer->down
            || (peer->max_fails && peer->fails >= peer->max_fails
                && now - peer->checked <= peer->fail_timeout)
            || (peer->max_conns && peer->conns >= peer->max_conns))
        {
            ngx_http_upstream_rr_peer_unlock(peers, peer);
            continue;
        }

        ngx_http_upstream_rr_peer_unlock(peers, peer);

        peers_of[n] = peer;
        slots[n] = (base + i < kcf->nslots) ? kcf->slots[base + i] : -1;
        pred[n] = (base + i < kcf->nslots) ? kcf->pred_slots[base + i] : -1;
        cand[n].capacity = (base + i < kcf->nslots)
                           ? kcf->capacities[base + i] : kcf->capacity;
        cand[n].weight = peer->weight;
        cand[n].id_hash = ngx_http_kvroute_id_hash(peer);
        n++;
    }

    if (n == 0) {
        ngx_http_upstream_rr_peers_unlock(peers);
        return ngx_http_kvroute_fallback(pc, kp, NGX_HTTP_KVROUTE_R_FALLBACK);
    }

    if (kcf->mode == NGX_HTTP_KVROUTE_MODE_RANDOM) {
        k = 0;

        for (i = 0; i < n; i++) {
            k += cand[i].weight;
        }

        k = ngx_random() % k;

        for (chosen = 0; chosen < n - 1; chosen++) {
            if (k < cand[chosen].weight) {
                break;
            }

            k -= cand[chosen].weight;
        }

        reason = NGX_HTTP_KVROUTE_R_RANDOM;
        ctx->overlap = 0;
        goto found;
    }

    index = kcf->zone->sh->index;

    ngx_http_kvroute_lock(kcf->zone);

    /* candidates without an index slot match nothing */

    for (i = 0; i < n; i++) {
        overlap[i] = 0;
    }

    kvr_index_match_slots_jump(index, slots, n, ctx->hashes, ctx->nblocks,
                               NGX_HTTP_KVROUTE_MATCH_STRIDE, overlap);

    /*
     * kv mode: a burst of a new prefix follows its first request to the
     * server it went to before that server's events arrive
     */

    if (kcf->mode == NGX_HTTP_KVROUTE_MODE_KV && kcf->predict) {
        kvr_index_match_slots_jump(index, pred, n, ctx->hashes,
                                   ctx->nblocks,
                                   NGX_HTTP_KVROUTE_MATCH_STRIDE, predicted);

        for (i = 0; i < n; i++) {
            if (predicted[i] > overlap[i]) {
                overlap[i] = predicted[i];
            }
        }
    }

    for (i = 0; i < n; i++) {
        cand[i].cached_blocks = 0;

        if (slots[i] >= 0) {
            cand[i].cached_blocks = kvr_index_slot_blocks(index, slots[i]);
        }

        ngx_http_kvroute_load(kcf->zone, slots[i], &requests, &tokens,
                              &prefill);
        cand[i].overlap = overlap[i];
        cand[i].inflight = requests;
        cand[i].inflight_tokens = tokens;
        cand[i].inflight_prefill = prefill;
    }

    ngx_http_kvroute_prefixes(kcf, index, slots, pred, overlap, n,
                              ctx->first_block, cand, &demand.share);

    ngx_http_kvroute_pins_gather(kcf, ctx, slots, n, cand, &demand);

    demand.blocks = ctx->nblocks;
    demand.tokens = ctx->tokens;
    demand.first_block = ctx->first_block;
    demand.random = ((uint64_t) ngx_random() << 32) ^ ngx_random();

    chosen = kvr_policy_pick(&kcf->policy, cand, n, &demand, &why);

    ngx_http_kvroute_pin(kp, slots[chosen]);

    /* approximate mode predicts; in kv mode the engines' events tell */

    if (slots[chosen] >= 0 && kcf->mode == NGX_HTTP_KVROUTE_MODE_APPROX) {
        kvr_index_record(index, slots[chosen], ctx->hashes, ctx->nblocks);
    }

    if (pred[chosen] >= 0 && kcf->mode == NGX_HTTP_KVROUTE_MODE_KV) {
        kvr_index_record(index, pred[chosen], ctx->hashes, ctx->nblocks);
    }

    if (slots[chosen] >= 0 && slots[chosen] < NGX_HTTP_KVROUTE_MAX_PEERS) {
        kvr_homes_touch(&kcf->zone->sh->homes[slots[chosen]],
                        ctx->first_block);

        /* a prefix new there counts before the next recount */

        if ((kcf->policy.policy == KVR_POLICY_COST
             || kcf->policy.policy == KVR_POLICY_TTFT)
            && overlap[chosen] == 0)
        {
            kvr_homes_placed(&kcf->zone->sh->homes[slots[chosen]]);
        }
    }

    ngx_http_kvroute_unlock(kcf->zone);

    ctx->overlap = overlap[chosen];

    switch (why) {
    case KVR_PICK_OVERLAP:
        reason = NGX_HTTP_KVROUTE_R_OVERLAP;
        break;
    case KVR_PICK_HOME:
        reason = NGX_HTTP_KVROUTE_R_HOME;
        break;
    case KVR_PICK_LOAD:
        reason = NGX_HTTP_KVROUTE_R_LOAD;
        break;
    default:
        reason = NGX_HTTP_KVROUTE_R_COST;
        break;
    }

found:

    peer = peers_of[chosen];

    ngx_http_upstream_rr_peer_lock(peers, peer);

    rrp->current = peer;

    pc->sockaddr = peer->sockaddr;
    pc->socklen = peer->socklen;
    pc->name = &peer->name;

    peer->conns++;

    if (now - peer->checked > peer->fail_timeout) {
        peer->checked = now;
    }

    ngx_http_upstream_rr_peer_unlock(peers, peer);
    ngx_http_upstream_rr_peers_unlock(peers);

    for (peer = peers->peer, i = 0; peer; peer = peer->next, i++) {
        if (peer == peers_of[chosen]) {
            break;
        }
    }

    m = (uintptr_t) 1 << i % (8 * sizeof(uintptr_t));
    rrp->tried[i / (8 * sizeof(uintptr_t))] |= m;

    ngx_http_kvroute_charge(kp, peers_of[chosen], ctx->overlap);

    ngx_http_kvroute_decided(pc, kp, reason);

    return NGX_OK;
}


/*
 * A server's stable hash for homes and tie breaks, from its name; computed
 * once per process and cycle for a peer, unless its name moved
 */

static uint64_t
ngx_http_kvroute_id_hash(ngx_http_upstream_rr_peer_t *peer)
{
    ngx_http_kvroute_id_t  *id;

    id = &ngx_http_kvroute_ids[((uintptr_t) peer / sizeof(void *))
                               % NGX_HTTP_KVROUTE_IDS];

    if (id->peer != peer || id->cycle != (ngx_cycle_t *) ngx_cycle
        || id->name != peer->name.data || id->len != peer->name.len)
    {
        id->peer = peer;
        id->cycle = (ngx_cycle_t *) ngx_cycle;
        id->name = peer->name.data;
        id->len = peer->name.len;
        id->hash = ngx_hash_key(peer->name.data, peer->name.len)
                   * 0x9e3779b97f4a7c15ULL;
    }

    return id->hash;
}


/* nginx's own round robin, which also handles backups and NGX_BUSY */

/* what ngx_http_kvroute_held() looks in */
typedef struct {
    kvr_index_t                    *index;
    int                             slot;
    int                             pred;
} ngx_http_kvroute_held_t;


/*
 * The prefixes each server holds (its recent first blocks still in the
 * index, or in its predictions in kv mode), for the policy: a prompt no
 * server holds goes where fewest live, and a busy prefix spreads only to
 * servers with room for one more.  Counted only when the policy can use
 * them: no server holds the prompt, or the loads differ by spread= or more.
 */

static void
ngx_http_kvroute_prefixes(ngx_http_kvroute_srv_conf_t *kcf,
    kvr_index_t *index, int *slots, int *pred, uint32_t *overlap,
    ngx_uint_t n, uint64_t first_block, kvr_candidate_t *cand,
    uint32_t *share)
{
    uint32_t                 most, least, total;
    uint64_t                 routes, all;
    ngx_uint_t               i, held_anywhere;
    ngx_http_kvroute_held_t  held;

    *share = 0;

    for (i = 0; i < n; i++) {
        cand[i].prefixes = 0;
    }

    if (kcf->policy.policy == KVR_POLICY_COST
        || kcf->policy.policy == KVR_POLICY_TTFT)
    {
        ngx_http_kvroute_prefixes_cost(kcf, index, slots, pred, overlap, n,
                                       cand);
        return;
    }

    if (kcf->policy.policy != KVR_POLICY_KVROUTE) {
        return;
    }

    held_anywhere = 0;
    most = 0;
    least = (uint32_t) -1;

    for (i = 0; i < n; i++) {
        if (overlap[i]) {
            held_anywhere = 1;
        }

        most = ngx_max(most, cand[i].inflight);
        least = ngx_min(least, cand[i].inflight);
    }

    if (held_anywhere
        && (kcf->policy.spread == 0 || most < least + kcf->policy.spread))
    {
        return;
    }

    /* the prefix's share of the fleet's recent routes: cheap, no lookups */

    routes = 0;
    all = 0;

    for (i = 0; i < n; i++) {
        if (slots[i] >= 0 && slots[i] < NGX_HTTP_KVROUTE_MAX_PEERS) {
            routes += kvr_homes_routes(&kcf->zone->sh->homes[slots[i]],
                                       first_block, &total);
            all += total;
        }
    }

    *share = all ? (uint32_t) (routes * 1024 / all) : 0;

    /* a held prefix that is not hot is never spread: nothing to count */

    if (held_anywhere && (uint64_t) *share * n <= 1024) {
        return;
    }

    held.index = index;

    for (i = 0; i < n; i++) {
        if (slots[i] < 0 || slots[i] >= NGX_HTTP_KVROUTE_MAX_PEERS) {
            continue;
        }

        held.slot = slots[i];
        held.pred = (kcf->mode == NGX_HTTP_KVROUTE_MODE_KV) ? pred[i] : -1;

        cand[i].prefixes = kvr_homes_live(&kcf->zone->sh->homes[slots[i]],
                                          first_block, ngx_http_kvroute_held,
                                          &held);
    }
}


/*
 * policy=cost and ttft: how many prefixes live on each server that lacks this
 * prompt's prefix, where a miss may evict.  Counting takes up to 32 index
 * probes a server, so a count is reused for NGX_HTTP_KVROUTE_LIVE_MSEC:
 * a cache's set of prefixes changes over many requests, not one.
 */

static void
ngx_http_kvroute_prefixes_cost(ngx_http_kvroute_srv_conf_t *kcf,
    kvr_index_t *index, int *slots, int *pred, uint32_t *overlap,
    ngx_uint_t n, kvr_candidate_t *cand)
{
    uint32_t                 most;
    ngx_uint_t               i;
    ngx_http_kvroute_held_t  held;

    most = 0;

    for (i = 0; i < n; i++) {
        most = ngx_max(most, overlap[i]);
    }

    held.index = index;

    for (i = 0; i < n; i++) {
        if (slots[i] < 0 || slots[i] >= NGX_HTTP_KVROUTE_MAX_PEERS
            || (most && overlap[i] == most))
        {
            continue;
        }

        held.slot = slots[i];
        held.pred = (kcf->mode == NGX_HTTP_KVROUTE_MODE_KV) ? pred[i] : -1;

        cand[i].prefixes = kvr_homes_live_recent(
                               &kcf->zone->sh->homes[slots[i]],
                               ngx_current_msec, NGX_HTTP_KVROUTE_LIVE_MSEC,
                               ngx_http_kvroute_held, &held);
    }
}


static int
ngx_http_kvroute_held(void *data, uint64_t first_block)
{
    ngx_http_kvroute_held_t  *held = data;

    if (kvr_index_match(held->index, held->slot, &first_block, 1)) {
        return 1;
    }

    return held->pred >= 0
           && kvr_index_match(held->index, held->pred, &first_block, 1);
}


static ngx_int_t
ngx_http_kvroute_fallback(ngx_peer_connection_t *pc,
    ngx_http_kvroute_peer_data_t *kp, ngx_uint_t reason)
{
    ngx_int_t  rc;

    rc = ngx_http_upstream_get_round_robin_peer(pc, &kp->rrp);

    if (rc != NGX_OK) {
        return rc;
    }

    kp->ctx->overlap = 0;

    ngx_http_kvroute_charge(kp, kp->rrp.current, 0);

    ngx_http_kvroute_decided(pc, kp, reason);

    return NGX_OK;
}


static void
ngx_http_kvroute_charge(ngx_http_kvroute_peer_data_t *kp,
    ngx_http_upstream_rr_peer_t *chosen, ngx_uint_t overlap)
{
    uint64_t                       cached;
    ngx_int_t                      slot;
    ngx_uint_t                     i;
    ngx_http_kvroute_row_t        *row;
    ngx_http_upstream_rr_peer_t   *peer;
    ngx_http_upstream_rr_peers_t  *list;

    /* the chosen peer's position: primaries first, then backups */

    i = 0;
    slot = -1;

    for (list = kp->primaries; list; list = list->next) {
        for (peer = list->peer; peer; peer = peer->next, i++) {
            if (peer == chosen) {
                slot = (i < kp->conf->nslots) ? kp->conf->slots[i] : -1;
                goto located;
            }
        }
    }

located:

    if (slot < 0 || kp->conf->zone->row < 0) {
        return;
    }

    row = &kp->conf->zone->sh->rows[kp->conf->zone->row];

    cached = (uint64_t) overlap * kp->conf->block_size;

    kp->charged_slot = slot;
    kp->charged_tokens = kp->ctx->tokens;
    kp->charged_prefill = kp->ctx->tokens > cached
                          ? kp->ctx->tokens - cached : 0;

    (void) ngx_atomic_fetch_add(&row->requests[slot], 1);
    (void) ngx_atomic_fetch_add(&row->tokens[slot], kp->charged_tokens);
    (void) ngx_atomic_fetch_add(&row->prefill[slot], kp->charged_prefill);
}


static void
ngx_http_kvroute_decided(ngx_peer_connection_t *pc,
    ngx_http_kvroute_peer_data_t *kp, ngx_uint_t reason)
{
    uint64_t                   now;
    ngx_http_kvroute_ctx_t    *ctx;
    ngx_http_kvroute_shctx_t  *sh;

    ctx = kp->ctx;
    sh = kp->conf->zone->sh;

    now = ngx_http_kvroute_usec();

    ctx->reason = reason;
    ctx->server = *pc->name;
    ctx->decision_usec = now - ctx->start_usec;

    (void) ngx_atomic_fetch_add(&sh->decisions[reason], 1);
    (void) ngx_atomic_fetch_add(&sh->decision_usec, ctx->decision_usec);
}


static void
ngx_http_kvroute_free_peer(ngx_peer_connection_t *pc, void *data,
    ngx_uint_t state)
{
    ngx_http_kvroute_peer_data_t  *kp = data;

    ngx_int_t                  slot;
    ngx_http_kvroute_row_t    *row;

    slot = kp->charged_slot;

    if (slot >= 0 && kp->conf->zone->row >= 0) {
        row = &kp->conf->zone->sh->rows[kp->conf->zone->row];

        (void) ngx_atomic_fetch_add(&row->requests[slot], -1);
        (void) ngx_atomic_fetch_add(&row->tokens[slot],
                                    -(ngx_atomic_int_t) kp->charged_tokens);
        (void) ngx_atomic_fetch_add(&row->prefill[slot],
                                    -(ngx_atomic_int_t) kp->charged_prefill);

        kp->charged_slot = -1;
    }

    ngx_http_kvroute_unpin(kp);

    ngx_http_upstream_free_round_robin_peer(pc, &kp->rrp, state);
}


/*
 * policy=ttft: the blocks pinned on each candidate by requests in flight
 * (their prompts' distinct blocks and their output), how many of this
 * prompt's blocks are among them, and the output this one will write.
 * Under the zone lock.
 */

static void
ngx_http_kvroute_pins_gather(ngx_http_kvroute_srv_conf_t *kcf,
    ngx_http_kvroute_ctx_t *ctx, int *slots, ngx_uint_t n,
    kvr_candidate_t *cand, kvr_demand_t *demand)
{
    ngx_uint_t   i, out;
    kvr_pins_t  *pins;

    demand->out_blocks = 0;

    for (i = 0; i < n; i++) {
        cand[i].pinned = 0;
        cand[i].pinned_own = 0;
    }

    if (kcf->policy.policy != KVR_POLICY_TTFT) {
        return;
    }

    out = ctx->max_tokens ? ctx->max_tokens : kcf->output;
    demand->out_blocks = (out + kcf->block_size - 1) / kcf->block_size;

    pins = kcf->zone->sh->pins;

    for (i = 0; i < n; i++) {
        cand[i].pinned = kvr_pins_count(pins, slots[i]);

        if (cand[i].pinned) {
            cand[i].pinned_own = kvr_pins_leading(pins, slots[i],
                                                  ctx->hashes, ctx->nblocks);
        }
    }
}


/* policy=ttft: the chosen server holds this prompt's blocks; locked */

static void
ngx_http_kvroute_pin(ngx_http_kvroute_peer_data_t *kp, int slot)
{
    ngx_uint_t               out;
    ngx_http_kvroute_ctx_t  *ctx;

    if (kp->conf->policy.policy != KVR_POLICY_TTFT) {
        return;
    }

    ctx = kp->ctx;
    out = ctx->max_tokens ? ctx->max_tokens : kp->conf->output;

    kvr_pins_charge(kp->conf->zone->sh->pins, slot, ctx->hashes,
                    ctx->nblocks,
                    (out + kp->conf->block_size - 1) / kp->conf->block_size,
                    &kp->pinned);
}


static void
ngx_http_kvroute_unpin(ngx_http_kvroute_peer_data_t *kp)
{
    if (kp->pinned.slot < 0) {
        return;
    }

    ngx_http_kvroute_lock(kp->conf->zone);
    kvr_pins_release(kp->conf->zone->sh->pins, kp->ctx->hashes, &kp->pinned);
    ngx_http_kvroute_unlock(kp->conf->zone);
}


/*
 * The upstream's first response bytes: its prefill is over (a stream's
 * first token; for a whole response, the end), so its uncached prompt no
 * longer delays the requests sent there after it.
 */

void
ngx_http_kvroute_first_bytes(ngx_http_kvroute_ctx_t *ctx)
{
    ngx_http_kvroute_row_t        *row;
    ngx_http_kvroute_peer_data_t  *kp;

    kp = ctx->charge;

    if (kp == NULL || kp->charged_slot < 0 || kp->charged_prefill == 0
        || kp->conf->zone->row < 0)
    {
        return;
    }

    row = &kp->conf->zone->sh->rows[kp->conf->zone->row];

    (void) ngx_atomic_fetch_add(&row->prefill[kp->charged_slot],
                                -(ngx_atomic_int_t) kp->charged_prefill);

    kp->charged_prefill = 0;
}
