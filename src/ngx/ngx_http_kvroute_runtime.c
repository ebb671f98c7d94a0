/*
 * Copyright (C) kvroute developers
 *
 * What each process resolves of every kvroute upstream, once, when it
 * starts (init_process): its load row, the index slot, slot of
 * predictions, cache size and stable hash of each peer, and the keys'
 * scratch.
 * The request path, the status page and the events helper read it as it
 * stands; none fills it in.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_kvroute.h"


static ngx_int_t ngx_http_kvroute_runtime_upstream(ngx_cycle_t *cycle,
    ngx_http_kvroute_srv_conf_t *kcf, ngx_http_upstream_rr_peers_t *peers,
    ngx_uint_t serves);
static void ngx_http_kvroute_resolve_slots(ngx_http_kvroute_srv_conf_t *kcf,
    ngx_http_upstream_rr_peers_t *peers, ngx_http_kvroute_runtime_t *rt);
static void ngx_http_kvroute_resolve_ranks(ngx_http_kvroute_srv_conf_t *kcf,
    ngx_str_t *name, uint64_t capacity, int *slots);
static uint64_t ngx_http_kvroute_capacity_of(ngx_http_kvroute_srv_conf_t *kcf,
    ngx_str_t *name);
static void ngx_http_kvroute_free_scratch(void *data);


/*
 * Workers (and the single process of master_process off) serve requests:
 * they get a load row and scratch.  The events helper needs the slots
 * only.
 */

ngx_int_t
ngx_http_kvroute_runtime_init(ngx_cycle_t *cycle)
{
    ngx_uint_t                     i, serves;
    ngx_http_kvroute_srv_conf_t   *kcf;
    ngx_http_kvroute_main_conf_t  *kmcf;
    ngx_http_upstream_srv_conf_t **up;

    kmcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_kvroute_module);
    if (kmcf == NULL) {
        return NGX_OK;
    }

    serves = (ngx_process == NGX_PROCESS_WORKER
              || ngx_process == NGX_PROCESS_SINGLE);

    up = kmcf->upstreams.elts;

    for (i = 0; i < kmcf->upstreams.nelts; i++) {
        kcf = ngx_http_conf_upstream_srv_conf(up[i], ngx_http_kvroute_module);

        if (serves && kcf->zone->row == -1) {
            ngx_http_kvroute_claim_row(kcf->zone, cycle->log);
        }

        if (ngx_http_kvroute_runtime_upstream(cycle, kcf, up[i]->peer.data,
                                              serves)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


void
ngx_http_kvroute_runtime_exit(ngx_cycle_t *cycle)
{
    ngx_uint_t                     i;
    ngx_http_kvroute_srv_conf_t   *kcf;
    ngx_http_kvroute_main_conf_t  *kmcf;
    ngx_http_upstream_srv_conf_t **up;

    kmcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_kvroute_module);
    if (kmcf == NULL) {
        return;
    }

    up = kmcf->upstreams.elts;

    for (i = 0; i < kmcf->upstreams.nelts; i++) {
        kcf = ngx_http_conf_upstream_srv_conf(up[i], ngx_http_kvroute_module);
        ngx_http_kvroute_release_row(kcf->zone);
    }
}


/* from the cycle's pool: gone with the cycle, scratch included */

static ngx_int_t
ngx_http_kvroute_runtime_upstream(ngx_cycle_t *cycle,
    ngx_http_kvroute_srv_conf_t *kcf, ngx_http_upstream_rr_peers_t *peers,
    ngx_uint_t serves)
{
    ngx_uint_t                   n;
    ngx_pool_cleanup_t          *cln;
    ngx_http_kvroute_runtime_t  *rt;

    n = peers->number + (peers->next ? peers->next->number : 0);

    rt = ngx_pcalloc(cycle->pool, sizeof(ngx_http_kvroute_runtime_t));
    if (rt == NULL) {
        return NGX_ERROR;
    }

    rt->nslots = n;
    rt->slots = ngx_palloc(cycle->pool, 2 * n * sizeof(ngx_int_t));
    rt->capacities = ngx_palloc(cycle->pool, 2 * n * sizeof(uint64_t));

    if (rt->slots == NULL || rt->capacities == NULL) {
        return NGX_ERROR;
    }

    rt->pred_slots = rt->slots + n;
    rt->id_hashes = rt->capacities + n;

    if (kcf->events_ranks.count > 1) {
        rt->nranks = kcf->events_ranks.count;
        rt->rank_slots = ngx_palloc(cycle->pool,
                                    n * rt->nranks * sizeof(int));
        if (rt->rank_slots == NULL) {
            return NGX_ERROR;
        }
    }

    ngx_http_kvroute_resolve_slots(kcf, peers, rt);

    if (serves) {
        /* zeroed: kvr_keys_make() sizes its buffers as prompts need */

        cln = ngx_pool_cleanup_add(cycle->pool, 0);
        if (cln == NULL) {
            return NGX_ERROR;
        }

        cln->handler = ngx_http_kvroute_free_scratch;
        cln->data = rt;
    }

    kcf->runtime = rt;

    return NGX_OK;
}


static void
ngx_http_kvroute_free_scratch(void *data)
{
    ngx_http_kvroute_runtime_t  *rt = data;

    kvr_keys_scratch_free(&rt->keys_scratch);
}


/*
 * Index slots are keyed by the peer's name (address:port), so a server
 * keeps its blocks across reloads that reorder or change the server list.
 * A peer the index has no room for gets -1 and matches nothing.
 */

static void
ngx_http_kvroute_resolve_slots(ngx_http_kvroute_srv_conf_t *kcf,
    ngx_http_upstream_rr_peers_t *peers, ngx_http_kvroute_runtime_t *rt)
{
    u_char                         name[NGX_SOCKADDR_STRLEN + 2];
    ngx_int_t                      slot;
    ngx_uint_t                     i;
    kvr_index_t                   *index;
    ngx_http_upstream_rr_peer_t   *peer;
    ngx_http_upstream_rr_peers_t  *list;

    index = kcf->zone->sh->index;
    i = 0;

    ngx_http_kvroute_lock(kcf->zone);

    for (list = peers; list; list = (list == peers) ? peers->next : NULL) {

        for (peer = list->peer; peer && i < rt->nslots; peer = peer->next) {
            slot = kvr_index_slot(index, (char *) peer->name.data,
                                  peer->name.len);

            rt->capacities[i] = ngx_http_kvroute_capacity_of(kcf, &peer->name);
            rt->id_hashes[i] = ngx_http_kvroute_id_hash(&peer->name);

            if (slot >= 0) {
                kvr_index_slot_set_capacity(index, slot, rt->capacities[i]);
            }

            /*
             * kv mode: the server's recent routes, predicted until its
             * events arrive, in a small slot of their own named "~name"
             */

            rt->pred_slots[i] = -1;

            if (kcf->mode == NGX_HTTP_KVROUTE_MODE_KV && kcf->predict
                && peer->name.len <= NGX_SOCKADDR_STRLEN)
            {
                name[0] = '~';
                ngx_memcpy(name + 1, peer->name.data, peer->name.len);

                rt->pred_slots[i] = kvr_index_slot(index, (char *) name,
                                                   peer->name.len + 1);

                if (rt->pred_slots[i] >= 0) {
                    kvr_index_slot_set_capacity(index, rt->pred_slots[i],
                        ngx_http_kvroute_pred_capacity(kcf, slot));
                }
            }

            if (rt->nranks) {
                ngx_http_kvroute_resolve_ranks(kcf, &peer->name,
                                               rt->capacities[i],
                                               &rt->rank_slots[i
                                                               * rt->nranks]);
            }

            rt->slots[i++] = slot;
        }
    }

    ngx_http_kvroute_unlock(kcf->zone);

    for ( /* void */ ; i < rt->nslots; i++) {
        rt->slots[i] = -1;
        rt->pred_slots[i] = -1;

        if (rt->nranks) {
            ngx_memset(&rt->rank_slots[i * rt->nranks], 0xff,
                       rt->nranks * sizeof(int));
        }

        rt->capacities[i] = kcf->capacity;
        rt->id_hashes[i] = 0;
    }
}


/*
 * A server's data-parallel ranks: a slot each, named "address:port#rank"
 * by the rank the engine publishes (so a reload that keeps the ranks keeps
 * their blocks); each rank's cache is the server's capacity.  Locked.
 */

static void
ngx_http_kvroute_resolve_ranks(ngx_http_kvroute_srv_conf_t *kcf,
    ngx_str_t *name, uint64_t capacity, int *slots)
{
    u_char       buf[NGX_SOCKADDR_STRLEN + NGX_INT_T_LEN + 2], *p;
    ngx_uint_t   r;
    kvr_index_t *index;

    index = kcf->zone->sh->index;

    for (r = 0; r < kcf->events_ranks.count; r++) {
        slots[r] = -1;

        if (name->len > NGX_SOCKADDR_STRLEN) {
            continue;
        }

        p = ngx_sprintf(buf, "%V#%ui", name, kcf->events_ranks.first + r);

        slots[r] = kvr_index_slot(index, (char *) buf, p - buf);

        if (slots[r] >= 0) {
            kvr_index_slot_set_capacity(index, slots[r], capacity);
        }
    }
}


/* kvroute_capacity names a server by its "server" line; else capacity= */

static uint64_t
ngx_http_kvroute_capacity_of(ngx_http_kvroute_srv_conf_t *kcf,
    ngx_str_t *name)
{
    ngx_uint_t                    i;
    ngx_http_kvroute_capacity_t  *c;

    if (kcf->capacity_overrides == NULL) {
        return kcf->capacity;
    }

    c = kcf->capacity_overrides->elts;

    for (i = 0; i < kcf->capacity_overrides->nelts; i++) {
        if (c[i].server.len == name->len
            && ngx_strncmp(c[i].server.data, name->data, name->len) == 0)
        {
            return c[i].blocks;
        }
    }

    return kcf->capacity;
}


/* a server's stable hash, for homes and tie breaks: from its name */

uint64_t
ngx_http_kvroute_id_hash(ngx_str_t *name)
{
    return ngx_hash_key(name->data, name->len) * 0x9e3779b97f4a7c15ULL;
}


/*
 * Predictions are a short memory while the server's events are trusted;
 * while its index is stale (events were lost) they stand in for it as the
 * approximate model does, so they get the server's whole capacity.
 */

uint64_t
ngx_http_kvroute_pred_capacity(ngx_http_kvroute_srv_conf_t *kcf,
    ngx_int_t slot)
{
    kvr_index_slot_info_t  info;

    if (slot >= 0 && slot < NGX_HTTP_KVROUTE_MAX_PEERS
        && kcf->zone->sh->events[slot].stale)
    {
        /* the server's own capacity, as resolve_slots() set it */
        kvr_index_slot_info(kcf->zone->sh->index, slot, &info);
        return info.capacity;
    }

    return kcf->predict;
}
