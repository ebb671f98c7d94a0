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
#include "kvr_prefixes.h"
#include "kvr_ranks.h"


/* probe every 16th block first: a cached prompt is a leading run */
#define NGX_HTTP_KVROUTE_MATCH_STRIDE  16


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

    /*
     * ttft_decode=auto: what the try was sent with, for the learner when
     * it ends; learn_slot -1: not the policy's choice, nothing to learn
     */
    ngx_http_request_t                *request;
    ngx_int_t                          learn_slot;
    uint64_t                           sent_usec;
    uint32_t                           sent_computed;
    uint32_t                           sent_inflight;
    unsigned                           sent_queued:1;
} ngx_http_kvroute_peer_data_t;


/* the peers one try may use, as the policy sees them */
typedef struct {
    ngx_uint_t                         n;
    ngx_http_upstream_rr_peer_t       *peer[NGX_HTTP_KVROUTE_MAX_PEERS];
    ngx_uint_t                         index[NGX_HTTP_KVROUTE_MAX_PEERS];
    int                                slots[NGX_HTTP_KVROUTE_MAX_PEERS];
    int                                pred[NGX_HTTP_KVROUTE_MAX_PEERS];
    int                               *ranks[NGX_HTTP_KVROUTE_MAX_PEERS];
    /* the slot of the cache the request would use: the rank's, or the
       server's; its load, pins and prefixes are that slot's too */
    int                                cache[NGX_HTTP_KVROUTE_MAX_PEERS];
    ngx_uint_t                         rank[NGX_HTTP_KVROUTE_MAX_PEERS];
    uint32_t                           overlap[NGX_HTTP_KVROUTE_MAX_PEERS];
    kvr_candidate_t                    cand[NGX_HTTP_KVROUTE_MAX_PEERS];
} ngx_http_kvroute_candidates_t;


static ngx_int_t ngx_http_kvroute_init_peer(ngx_http_request_t *r,
    ngx_http_upstream_srv_conf_t *us);
static ngx_int_t ngx_http_kvroute_get_peer(ngx_peer_connection_t *pc,
    void *data);
static void ngx_http_kvroute_eligible(ngx_http_kvroute_peer_data_t *kp,
    time_t now, ngx_http_kvroute_candidates_t *cs);
static ngx_uint_t ngx_http_kvroute_predecided(ngx_http_kvroute_peer_data_t *kp,
    ngx_http_kvroute_candidates_t *cs, ngx_uint_t *chosen,
    ngx_uint_t *reason);
static ngx_uint_t ngx_http_kvroute_pick_random(
    ngx_http_kvroute_candidates_t *cs);
static ngx_uint_t ngx_http_kvroute_pick_cached(
    ngx_http_kvroute_peer_data_t *kp, ngx_http_kvroute_candidates_t *cs,
    ngx_uint_t *reason);
static ngx_uint_t ngx_http_kvroute_score(ngx_http_kvroute_peer_data_t *kp,
    ngx_http_kvroute_candidates_t *cs, kvr_pick_e *why,
    uint32_t *out_blocks);
static void ngx_http_kvroute_commit(ngx_http_kvroute_peer_data_t *kp,
    ngx_http_kvroute_candidates_t *cs, ngx_uint_t chosen,
    uint32_t out_blocks);
static void ngx_http_kvroute_match_tiers(ngx_http_kvroute_srv_conf_t *kcf,
    kvr_index_t *index, ngx_http_kvroute_ctx_t *ctx,
    ngx_http_kvroute_candidates_t *cs);
static void ngx_http_kvroute_match(ngx_http_kvroute_srv_conf_t *kcf,
    kvr_index_t *index, ngx_http_kvroute_ctx_t *ctx,
    ngx_http_kvroute_candidates_t *cs);
static void ngx_http_kvroute_match_ranks(ngx_http_kvroute_srv_conf_t *kcf,
    kvr_index_t *index, ngx_http_kvroute_ctx_t *ctx,
    ngx_http_kvroute_candidates_t *cs);
static uint64_t ngx_http_kvroute_rank_inflight(void *data, size_t rank);
static void ngx_http_kvroute_loads(ngx_http_kvroute_srv_conf_t *kcf,
    kvr_index_t *index, ngx_http_kvroute_candidates_t *cs);
static void ngx_http_kvroute_record(ngx_http_kvroute_srv_conf_t *kcf,
    kvr_index_t *index, ngx_http_kvroute_ctx_t *ctx,
    ngx_http_kvroute_candidates_t *cs, ngx_uint_t chosen);
static ngx_uint_t ngx_http_kvroute_pick_reason(kvr_pick_e why);
static void ngx_http_kvroute_use_peer(ngx_peer_connection_t *pc,
    ngx_http_kvroute_peer_data_t *kp, ngx_http_kvroute_candidates_t *cs,
    ngx_uint_t chosen, time_t now);
static ngx_int_t ngx_http_kvroute_fallback(ngx_peer_connection_t *pc,
    ngx_http_kvroute_peer_data_t *kp, ngx_uint_t reason);
static ngx_int_t ngx_http_kvroute_slot_of(ngx_http_kvroute_peer_data_t *kp,
    ngx_http_upstream_rr_peer_t *chosen);
static void ngx_http_kvroute_charge(ngx_http_kvroute_peer_data_t *kp,
    ngx_int_t slot, ngx_uint_t overlap);
static void ngx_http_kvroute_decided(ngx_peer_connection_t *pc,
    ngx_http_kvroute_peer_data_t *kp, ngx_uint_t reason);
static void ngx_http_kvroute_pins_gather(ngx_http_kvroute_srv_conf_t *kcf,
    ngx_http_kvroute_ctx_t *ctx, int *slots, ngx_uint_t n,
    kvr_candidate_t *cand, kvr_demand_t *demand);
static void ngx_http_kvroute_pin(ngx_http_kvroute_peer_data_t *kp, int slot,
    uint32_t out_blocks);
static void ngx_http_kvroute_unpin(ngx_http_kvroute_peer_data_t *kp);
static void ngx_http_kvroute_sent(ngx_http_kvroute_peer_data_t *kp,
    ngx_int_t slot);
static void ngx_http_kvroute_learn(ngx_http_kvroute_peer_data_t *kp,
    ngx_uint_t state);
static void ngx_http_kvroute_free_peer(ngx_peer_connection_t *pc,
    void *data, ngx_uint_t state);


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
    kp->request = r;
    kp->learn_slot = -1;

    ctx->charge = kp;

    if (!ctx->analyzed) {
        ngx_http_kvroute_analyze(r, kcf, ctx);
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_kvroute_get_peer(ngx_peer_connection_t *pc, void *data)
{
    ngx_http_kvroute_peer_data_t  *kp = data;

    time_t                          now;
    ngx_uint_t                      chosen, reason;
    ngx_http_kvroute_ctx_t         *ctx;
    ngx_http_kvroute_srv_conf_t    *kcf;
    ngx_http_kvroute_candidates_t   cs;

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

    now = ngx_time();

    ngx_http_upstream_rr_peers_rlock(kp->rrp.peers);

    ngx_http_kvroute_eligible(kp, now, &cs);

    if (cs.n == 0) {
        ngx_http_upstream_rr_peers_unlock(kp->rrp.peers);
        return ngx_http_kvroute_fallback(pc, kp, NGX_HTTP_KVROUTE_R_FALLBACK);
    }

    if (kcf->mode == NGX_HTTP_KVROUTE_MODE_RANDOM) {
        chosen = ngx_http_kvroute_pick_random(&cs);
        reason = NGX_HTTP_KVROUTE_R_RANDOM;
        ctx->overlap = 0;

    } else if (!ngx_http_kvroute_predecided(kp, &cs, &chosen, &reason)) {
        chosen = ngx_http_kvroute_pick_cached(kp, &cs, &reason);
    }

    ngx_http_kvroute_use_peer(pc, kp, &cs, chosen, now);

    ngx_http_kvroute_charge(kp, cs.cache[chosen], ctx->overlap);

    ngx_http_kvroute_decided(pc, kp, reason);

    if (reason != NGX_HTTP_KVROUTE_R_RANDOM) {
        ngx_http_kvroute_sent(kp, cs.cache[chosen]);
    }

    return NGX_OK;
}


/* the peers not tried yet that are up, as the hash module judges them */

static void
ngx_http_kvroute_eligible(ngx_http_kvroute_peer_data_t *kp, time_t now,
    ngx_http_kvroute_candidates_t *cs)
{
    uintptr_t                          m;
    ngx_uint_t                         i, j, n, base;
    kvr_candidate_t                   *cand;
    ngx_http_kvroute_runtime_t        *rt;
    ngx_http_upstream_rr_peer_t       *peer;
    ngx_http_upstream_rr_peers_t      *peers;
    ngx_http_upstream_rr_peer_data_t  *rrp;

    rrp = &kp->rrp;
    peers = rrp->peers;
    rt = kp->conf->runtime;

    /* slots list primaries, then backups */
    base = (peers == kp->primaries) ? 0 : kp->primaries->number;

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

        j = base + i;
        cand = &cs->cand[n];

        cs->peer[n] = peer;
        cs->index[n] = i;
        cs->slots[n] = (j < rt->nslots) ? rt->slots[j] : -1;
        cs->pred[n] = (j < rt->nslots) ? rt->pred_slots[j] : -1;
        cs->ranks[n] = (j < rt->nslots && rt->nranks)
                       ? &rt->rank_slots[j * rt->nranks] : NULL;
        cs->cache[n] = cs->slots[n];    /* match() may choose a rank's */
        cs->rank[n] = 0;
        cand->weight = peer->weight;
        cand->route_share = 0;

        if (j < rt->nslots) {
            cand->capacity = rt->capacities[j];
            cand->id_hash = rt->id_hashes[j];

        } else {
            cand->capacity = kp->conf->capacity;
            cand->id_hash = ngx_http_kvroute_id_hash(&peer->name);
        }

        n++;
    }

    cs->n = n;
}


/* mode=random: by weight */

static ngx_uint_t
ngx_http_kvroute_pick_random(ngx_http_kvroute_candidates_t *cs)
{
    ngx_uint_t  i, k, chosen;

    k = 0;

    for (i = 0; i < cs->n; i++) {
        k += cs->cand[i].weight;
    }

    k = ngx_random() % k;

    for (chosen = 0; chosen < cs->n - 1; chosen++) {
        if (k < cs->cand[chosen].weight) {
            break;
        }

        k -= cs->cand[chosen].weight;
    }

    return chosen;
}


/*
 * approx and kv modes: what each server holds of the prompt and its load,
 * weighed by the policy, under the zone's lock
 */

static ngx_uint_t
ngx_http_kvroute_pick_cached(ngx_http_kvroute_peer_data_t *kp,
    ngx_http_kvroute_candidates_t *cs, ngx_uint_t *reason)
{
    uint32_t                 out_blocks;
    ngx_uint_t               chosen;
    kvr_pick_e               why;
    ngx_http_kvroute_ctx_t  *ctx;

    ctx = kp->ctx;

    ngx_http_kvroute_lock(kp->conf->zone);

    chosen = ngx_http_kvroute_score(kp, cs, &why, &out_blocks);
    ngx_http_kvroute_commit(kp, cs, chosen, out_blocks);

    ngx_http_kvroute_unlock(kp->conf->zone);

    ctx->overlap = cs->overlap[chosen];
    ctx->has_dp_rank = (cs->ranks[chosen] != NULL);
    ctx->dp_rank = cs->rank[chosen];
    *reason = ngx_http_kvroute_pick_reason(why);

    return chosen;
}


/* the candidate the policy picks, and the rank on it; locked */

static ngx_uint_t
ngx_http_kvroute_score(ngx_http_kvroute_peer_data_t *kp,
    ngx_http_kvroute_candidates_t *cs, kvr_pick_e *why, uint32_t *out_blocks)
{
    ngx_uint_t                    chosen;
    kvr_demand_t                  demand;
    kvr_index_t                  *index;
    kvr_prefixes_t                px;
    kvr_policy_conf_t             learned;
    const kvr_policy_conf_t      *policy;
    ngx_http_kvroute_ctx_t       *ctx;
    ngx_http_kvroute_srv_conf_t  *kcf;

    kcf = kp->conf;
    ctx = kp->ctx;
    index = kcf->zone->sh->index;

    ngx_http_kvroute_match(kcf, index, ctx, cs);
    ngx_http_kvroute_match_tiers(kcf, index, ctx, cs);
    ngx_http_kvroute_loads(kcf, index, cs);

    px.index = index;
    px.homes = kcf->zone->sh->homes;
    px.roots = (kcf->mode == NGX_HTTP_KVROUTE_MODE_KV)
               ? kcf->zone->sh->roots : NULL;
    px.slots = cs->cache;
    px.pred = (kcf->mode == NGX_HTTP_KVROUTE_MODE_KV) ? cs->pred : NULL;
    px.first_block = ctx->first_block;
    px.now_msec = ngx_current_msec;

    kvr_prefixes_count(&kcf->policy, &px, cs->cand, cs->n, &demand.share);

    demand.blocks = ctx->nblocks;
    demand.tokens = ctx->tokens;
    demand.first_block = ctx->first_block;
    demand.random = ((uint64_t) ngx_random() << 32) ^ ngx_random();

    ngx_http_kvroute_pins_gather(kcf, ctx, cs->cache, cs->n, cs->cand,
                                 &demand);

    if (kcf->metrics && kcf->policy.policy == KVR_POLICY_TTFT) {
        kvr_prefixes_route_shares(&px, cs->cand, cs->n);
    }

    ngx_http_kvroute_engine_loads(kcf, cs->slots, cs->n, cs->cand,
                                  demand.tokens);

    /* ttft_decode=auto: the weight learned so far, once there is one */

    policy = &kcf->policy;

    if (kcf->decode_auto && kcf->zone->sh->inflight_cost.weight > 0) {
        learned = kcf->policy;
        learned.ttft_decode = kcf->zone->sh->inflight_cost.weight;
        policy = &learned;
    }

    chosen = kvr_policy_pick(policy, cs->cand, cs->n, &demand, why);

    *out_blocks = demand.out_blocks;

    ctx->inflight = cs->cand[chosen].inflight;
    ctx->queued = kvr_policy_waits(&cs->cand[chosen], &demand);

    return chosen;
}


/* what the chosen server is charged with under the lock: pins, records */

static void
ngx_http_kvroute_commit(ngx_http_kvroute_peer_data_t *kp,
    ngx_http_kvroute_candidates_t *cs, ngx_uint_t chosen,
    uint32_t out_blocks)
{
    ngx_http_kvroute_pin(kp, cs->cache[chosen], out_blocks);

    ngx_http_kvroute_record(kp->conf, kp->conf->zone->sh->index, kp->ctx, cs,
                            chosen);
}


/*
 * $kvroute_dp_rank is asked for while the upstream request is created
 * (proxy_set_header), before nginx asks the balancer for a peer: the
 * server and its rank are chosen then, as get_peer() would, and kept in
 * the request's context; get_peer() takes that server on its first try
 * if it is still eligible (predecided()).  Only upstreams with ranks to
 * choose from, named by proxy_pass without variables.
 */

void
ngx_http_kvroute_predecide(ngx_http_request_t *r, ngx_http_kvroute_ctx_t *ctx)
{
    uint32_t                        out_blocks;
    ngx_uint_t                      chosen;
    kvr_pick_e                      why;
    ngx_http_upstream_t            *u;
    ngx_http_kvroute_srv_conf_t    *kcf;
    ngx_http_upstream_srv_conf_t   *uscf;
    ngx_http_kvroute_peer_data_t    kp;
    ngx_http_kvroute_candidates_t   cs;

    u = r->upstream;

    if (u == NULL || u->resolved || u->conf == NULL
        || u->conf->upstream == NULL || u->conf->upstream->srv_conf == NULL)
    {
        return;
    }

    uscf = u->conf->upstream;
    kcf = ngx_http_conf_upstream_srv_conf(uscf, ngx_http_kvroute_module);

    if (kcf->upstream != uscf || kcf->runtime == NULL
        || kcf->runtime->nranks == 0
        || (kcf->mode != NGX_HTTP_KVROUTE_MODE_APPROX
            && kcf->mode != NGX_HTTP_KVROUTE_MODE_KV))
    {
        return;
    }

    if (!ctx->analyzed) {
        ngx_http_kvroute_analyze(r, kcf, ctx);
    }

    if (ctx->hashes == NULL) {
        return;
    }

    /* the peers as the first try sees them: none tried */

    ngx_memzero(&kp, sizeof(ngx_http_kvroute_peer_data_t));

    kp.rrp.peers = uscf->peer.data;
    kp.rrp.tried = &kp.rrp.data;
    kp.conf = kcf;
    kp.ctx = ctx;
    kp.primaries = kp.rrp.peers;

    ngx_http_upstream_rr_peers_rlock(kp.rrp.peers);

    ngx_http_kvroute_eligible(&kp, ngx_time(), &cs);

    if (cs.n == 0) {
        ngx_http_upstream_rr_peers_unlock(kp.rrp.peers);
        return;
    }

    ngx_http_kvroute_lock(kcf->zone);
    chosen = ngx_http_kvroute_score(&kp, &cs, &why, &out_blocks);
    ngx_http_kvroute_unlock(kcf->zone);

    ngx_http_upstream_rr_peers_unlock(kp.rrp.peers);

    ctx->pre_peer = cs.peer[chosen];
    ctx->pre_reason = ngx_http_kvroute_pick_reason(why);
    ctx->pre_out_blocks = out_blocks;
    ctx->overlap = cs.overlap[chosen];
    ctx->has_dp_rank = (cs.ranks[chosen] != NULL);
    ctx->dp_rank = cs.rank[chosen];
}


/*
 * The first try of a request whose server and rank were chosen before
 * (predecide()): that server, when it is still eligible.  Otherwise (it
 * went down, or this is a retry) the balancer chooses again, and the rank
 * sent in the request's header may not be the new server's best.
 */

static ngx_uint_t
ngx_http_kvroute_predecided(ngx_http_kvroute_peer_data_t *kp,
    ngx_http_kvroute_candidates_t *cs, ngx_uint_t *chosen,
    ngx_uint_t *reason)
{
    ngx_uint_t               i;
    ngx_http_kvroute_ctx_t  *ctx;

    ctx = kp->ctx;

    if (ctx->pre_peer == NULL) {
        return 0;
    }

    for (i = 0; i < cs->n; i++) {
        if (cs->peer[i] == ctx->pre_peer) {
            break;
        }
    }

    ctx->pre_peer = NULL;

    if (i == cs->n) {
        return 0;
    }

    cs->overlap[i] = ctx->overlap;
    cs->rank[i] = ctx->dp_rank;
    cs->cache[i] = cs->ranks[i] ? cs->ranks[i][ctx->dp_rank] : cs->slots[i];

    ngx_http_kvroute_lock(kp->conf->zone);
    ngx_http_kvroute_commit(kp, cs, i, ctx->pre_out_blocks);
    ngx_http_kvroute_unlock(kp->conf->zone);

    *chosen = i;
    *reason = ctx->pre_reason;

    return 1;
}


/* the prompt's leading blocks cached on each candidate */

static void
ngx_http_kvroute_match(ngx_http_kvroute_srv_conf_t *kcf, kvr_index_t *index,
    ngx_http_kvroute_ctx_t *ctx, ngx_http_kvroute_candidates_t *cs)
{
    uint32_t    predicted[NGX_HTTP_KVROUTE_MAX_PEERS];
    ngx_uint_t  i;

    /* candidates without an index slot match nothing */

    for (i = 0; i < cs->n; i++) {
        cs->overlap[i] = 0;
    }

    if (kcf->runtime->nranks) {
        ngx_http_kvroute_match_ranks(kcf, index, ctx, cs);

    } else {
        kvr_index_match_slots_jump(index, cs->slots, cs->n, ctx->hashes,
                                   ctx->nblocks,
                                   NGX_HTTP_KVROUTE_MATCH_STRIDE,
                                   cs->overlap);
    }

    /*
     * kv mode: a burst of a new prefix follows its first request to the
     * server it went to before that server's events arrive
     */

    if (kcf->mode != NGX_HTTP_KVROUTE_MODE_KV || kcf->predict == 0) {
        return;
    }

    kvr_index_match_slots_jump(index, cs->pred, cs->n, ctx->hashes,
                               ctx->nblocks, NGX_HTTP_KVROUTE_MATCH_STRIDE,
                               predicted);

    for (i = 0; i < cs->n; i++) {
        if (predicted[i] > cs->overlap[i]) {
            cs->overlap[i] = predicted[i];
        }
    }
}


/*
 * kv mode: what a server's offload tiers hold after its GPU overlap, as
 * NVIDIA Dynamo walks them (query_lower_tiers): the host tier's leading
 * run from the GPU overlap on, then the disk tier's from the end of that
 * (docs/engine-events.md "Tiers"), in whole offloaded blocks where the
 * tier's span several GPU blocks; none while no tier event came
 */

static void
ngx_http_kvroute_match_tiers(ngx_http_kvroute_srv_conf_t *kcf,
    kvr_index_t *index, ngx_http_kvroute_ctx_t *ctx,
    ngx_http_kvroute_candidates_t *cs)
{
    int               slot, tier;
    uint32_t          from, *run;
    ngx_uint_t        i, t;
    kvr_candidate_t  *cand;

    for (i = 0; i < cs->n; i++) {
        cand = &cs->cand[i];
        cand->overlap_host = 0;
        cand->overlap_disk = 0;

        slot = cs->cache[i];

        /* host_weight=0 disk_weight=0: the tiers are not weighed */

        if (kcf->mode != NGX_HTTP_KVROUTE_MODE_KV
            || (kcf->policy.host_weight == 0 && kcf->policy.disk_weight == 0)
            || slot < 0 || slot >= NGX_HTTP_KVROUTE_MAX_PEERS)
        {
            continue;
        }

        from = cs->overlap[i];

        for (t = 0; t < 2; t++) {
            tier = kcf->zone->sh->tiers[slot][t] - 1;

            if (tier < 0 || from >= ctx->nblocks) {
                continue;
            }

            run = (t == 0) ? &cand->overlap_host : &cand->overlap_disk;
            *run = kvr_index_match_groups(index, tier, ctx->hashes,
                                          ctx->nblocks, from,
                                          kcf->zone->sh->tier_groups[slot][t]);
            from += *run;
        }
    }
}


typedef struct {
    ngx_http_kvroute_zone_t  *zone;
    const int                *slots;
} ngx_http_kvroute_rank_load_t;


/*
 * Data-parallel ranks: each candidate's ranks matched in one walk, and the
 * server scored by the rank kvr_ranks_pick() sends the request to
 */

static void
ngx_http_kvroute_match_ranks(ngx_http_kvroute_srv_conf_t *kcf,
    kvr_index_t *index, ngx_http_kvroute_ctx_t *ctx,
    ngx_http_kvroute_candidates_t *cs)
{
    int                           slots[KVR_INDEX_MAX_SLOTS];
    uint32_t                      overlap[KVR_INDEX_MAX_SLOTS];
    ngx_uint_t                    i, r, n, nranks;
    ngx_http_kvroute_rank_load_t  load;

    nranks = kcf->runtime->nranks;

    /* nginx -t saw that every server's ranks have slots */

    n = ngx_min(cs->n, KVR_INDEX_MAX_SLOTS / nranks);

    if (n == 0) {
        return;
    }

    for (i = 0; i < n; i++) {
        for (r = 0; r < nranks; r++) {
            slots[i * nranks + r] = cs->ranks[i] ? cs->ranks[i][r] : -1;
        }
    }

    kvr_index_match_slots_jump(index, slots, n * nranks, ctx->hashes,
                               ctx->nblocks, NGX_HTTP_KVROUTE_MATCH_STRIDE,
                               overlap);

    load.zone = kcf->zone;

    for (i = 0; i < n; i++) {
        if (cs->ranks[i] == NULL) {
            continue;
        }

        load.slots = &slots[i * nranks];

        r = kvr_ranks_pick(&overlap[i * nranks], nranks, ctx->first_block,
                           ngx_http_kvroute_rank_inflight, &load);

        cs->rank[i] = r;
        cs->cache[i] = slots[i * nranks + r];
        cs->overlap[i] = overlap[i * nranks + r];
    }
}


/* a rank's requests in flight, charged on its slot's load */

static uint64_t
ngx_http_kvroute_rank_inflight(void *data, size_t rank)
{
    ngx_http_kvroute_rank_load_t  *load = data;

    uint64_t  requests, tokens, prefill;

    ngx_http_kvroute_load(load->zone, load->slots[rank], &requests, &tokens,
                          &prefill);

    return requests;
}


/* each candidate's cache and load, as the policy weighs them */

static void
ngx_http_kvroute_loads(ngx_http_kvroute_srv_conf_t *kcf, kvr_index_t *index,
    ngx_http_kvroute_candidates_t *cs)
{
    int               slot;
    uint64_t          requests, tokens, prefill;
    ngx_uint_t        i;
    kvr_candidate_t  *cand;

    for (i = 0; i < cs->n; i++) {
        cand = &cs->cand[i];

        /* with ranks, the cache and load of the rank it would go to */

        slot = cs->cache[i];

        cand->cached_blocks = (slot >= 0) ? kvr_index_slot_blocks(index, slot)
                                          : 0;

        ngx_http_kvroute_load(kcf->zone, slot, &requests, &tokens,
                              &prefill);

        cand->overlap = cs->overlap[i];
        cand->inflight = requests;
        cand->inflight_tokens = tokens;
        cand->inflight_prefill = prefill;
        cand->speed = 1;
    }
}


/*
 * What the route teaches: approximate mode predicts the chosen server's
 * cache, kv mode its predictions (the engines' events tell the rest), and
 * its homes learn the prefix
 */

static void
ngx_http_kvroute_record(ngx_http_kvroute_srv_conf_t *kcf, kvr_index_t *index,
    ngx_http_kvroute_ctx_t *ctx, ngx_http_kvroute_candidates_t *cs,
    ngx_uint_t chosen)
{
    int  slot;

    /* with ranks, the rank's own cache */

    slot = cs->cache[chosen];

    if (slot >= 0 && kcf->mode == NGX_HTTP_KVROUTE_MODE_APPROX) {
        kvr_index_record(index, slot, ctx->hashes, ctx->nblocks);
    }

    if (cs->pred[chosen] >= 0 && kcf->mode == NGX_HTTP_KVROUTE_MODE_KV) {
        kvr_index_record(index, cs->pred[chosen], ctx->hashes, ctx->nblocks);
    }

    kvr_prefixes_routed(&kcf->policy, kcf->zone->sh->homes,
                        (kcf->mode == NGX_HTTP_KVROUTE_MODE_KV)
                        ? kcf->zone->sh->roots : NULL,
                        cs->cache[chosen], ctx->first_block,
                        cs->overlap[chosen]);
}


static ngx_uint_t
ngx_http_kvroute_pick_reason(kvr_pick_e why)
{
    switch (why) {
    case KVR_PICK_OVERLAP:
        return NGX_HTTP_KVROUTE_R_OVERLAP;
    case KVR_PICK_HOME:
        return NGX_HTTP_KVROUTE_R_HOME;
    case KVR_PICK_LOAD:
        return NGX_HTTP_KVROUTE_R_LOAD;
    default:
        return NGX_HTTP_KVROUTE_R_COST;
    }
}


/* the chosen peer, as the hash module takes it; unlocks the peers */

static void
ngx_http_kvroute_use_peer(ngx_peer_connection_t *pc,
    ngx_http_kvroute_peer_data_t *kp, ngx_http_kvroute_candidates_t *cs,
    ngx_uint_t chosen, time_t now)
{
    uintptr_t                          m;
    ngx_uint_t                         i;
    ngx_http_upstream_rr_peer_t       *peer;
    ngx_http_upstream_rr_peers_t      *peers;
    ngx_http_upstream_rr_peer_data_t  *rrp;

    rrp = &kp->rrp;
    peers = rrp->peers;
    peer = cs->peer[chosen];

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

    i = cs->index[chosen];
    m = (uintptr_t) 1 << i % (8 * sizeof(uintptr_t));
    rrp->tried[i / (8 * sizeof(uintptr_t))] |= m;
}


/* nginx's own round robin, which also handles backups and NGX_BUSY */

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
    kp->ctx->has_dp_rank = 0;

    ngx_http_kvroute_charge(kp, ngx_http_kvroute_slot_of(kp, kp->rrp.current),
                            0);

    ngx_http_kvroute_decided(pc, kp, reason);

    return NGX_OK;
}


/* the index slot of a peer: primaries first, then backups */

static ngx_int_t
ngx_http_kvroute_slot_of(ngx_http_kvroute_peer_data_t *kp,
    ngx_http_upstream_rr_peer_t *chosen)
{
    ngx_uint_t                     i;
    ngx_http_kvroute_runtime_t    *rt;
    ngx_http_upstream_rr_peer_t   *peer;
    ngx_http_upstream_rr_peers_t  *list;

    rt = kp->conf->runtime;
    i = 0;

    for (list = kp->primaries; list; list = list->next) {
        for (peer = list->peer; peer; peer = peer->next, i++) {
            if (peer == chosen) {
                return (i < rt->nslots) ? rt->slots[i] : -1;
            }
        }
    }

    return -1;
}


/* the try's load, on this process's row until free returns it */

static void
ngx_http_kvroute_charge(ngx_http_kvroute_peer_data_t *kp, ngx_int_t slot,
    ngx_uint_t overlap)
{
    uint64_t                 cached;
    ngx_http_kvroute_row_t  *row;

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

    if (kp->learn_slot >= 0) {
        ngx_http_kvroute_learn(kp, state);
        kp->learn_slot = -1;
    }

    ngx_http_upstream_free_round_robin_peer(pc, &kp->rrp, state);
}


/* ttft_decode=auto: what the learner needs of a try the policy chose */

static void
ngx_http_kvroute_sent(ngx_http_kvroute_peer_data_t *kp, ngx_int_t slot)
{
    uint64_t                 cached;
    ngx_http_kvroute_ctx_t  *ctx;

    if (!kp->conf->decode_auto || slot < 0) {
        return;
    }

    ctx = kp->ctx;
    cached = (uint64_t) ctx->overlap * kp->conf->block_size;

    kp->learn_slot = slot;
    kp->sent_usec = ngx_http_kvroute_usec();
    kp->sent_computed = ctx->tokens > cached ? ctx->tokens - cached : 0;
    kp->sent_inflight = ctx->inflight;
    kp->sent_queued = ctx->queued;
}


/*
 * A try that ended: its time from send to end teaches the learner, when
 * it is the engine's whole answer (a 200 the client took to the end): a
 * failed try, an error status or a client that went away ends early and
 * says nothing of the load
 */

static void
ngx_http_kvroute_learn(ngx_http_kvroute_peer_data_t *kp, ngx_uint_t state)
{
    double                     seconds, weight;
    uint64_t                   now;
    ngx_int_t                  changed;
    ngx_http_request_t        *r;
    ngx_http_upstream_t       *u;
    ngx_http_kvroute_zone_t   *zone;

    r = kp->request;
    u = r->upstream;

    if ((state & NGX_PEER_FAILED) || u == NULL
        || u->headers_in.status_n != NGX_HTTP_OK || r->connection->error)
    {
        return;
    }

    now = ngx_http_kvroute_usec();
    seconds = now > kp->sent_usec ? (now - kp->sent_usec) / 1e6 : 0;

    zone = kp->conf->zone;

    ngx_http_kvroute_lock(zone);
    changed = kvr_inflight_cost_ended(&zone->sh->inflight_cost,
                                      (size_t) kp->learn_slot,
                                      kp->sent_computed, kp->sent_inflight,
                                      seconds, kp->sent_queued);
    weight = zone->sh->inflight_cost.weight;
    ngx_http_kvroute_unlock(zone);

    /* at most once in KVR_INFLIGHT_REFIT requests, and only on a change */

    if (changed) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "kvroute: ttft_decode learned in zone \"%V\": %.0f "
                      "prompt tokens a request in flight",
                      &zone->shm_zone->shm.name, weight);
    }
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


/*
 * policy=ttft: the chosen server holds this prompt's blocks and the output
 * blocks pins_gather() counted for it; locked
 */

static void
ngx_http_kvroute_pin(ngx_http_kvroute_peer_data_t *kp, int slot,
    uint32_t out_blocks)
{
    ngx_http_kvroute_ctx_t  *ctx;

    if (kp->conf->policy.policy != KVR_POLICY_TTFT) {
        return;
    }

    ctx = kp->ctx;

    kvr_pins_charge(kp->conf->zone->sh->pins, slot, ctx->hashes,
                    ctx->nblocks, out_blocks, &kp->pinned);
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
