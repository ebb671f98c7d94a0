/*
 * Copyright (C) kvroute developers
 *
 * The shared zone: decision counters, per-process load rows and the block
 * index, used by every worker process.  The slab pool's mutex guards it:
 * the master force-unlocks it when a worker dies holding it.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_kvroute.h"


static ngx_int_t ngx_http_kvroute_init_zone(ngx_shm_zone_t *shm_zone,
    void *data);
static ngx_int_t ngx_http_kvroute_init_pins(ngx_shm_zone_t *shm_zone,
    ngx_http_kvroute_shctx_t *sh);


/* the pinned-block table: an eighth of the zone, up to 4 MB */
#define NGX_HTTP_KVROUTE_PINS_MAX  (4 * 1024 * 1024)


ngx_http_kvroute_zone_t *
ngx_http_kvroute_add_zone(ngx_conf_t *cf, ngx_str_t *name, size_t size)
{
    ngx_shm_zone_t           *shm_zone;
    ngx_http_kvroute_zone_t  *zone;

    shm_zone = ngx_shared_memory_add(cf, name, size, &ngx_http_kvroute_module);
    if (shm_zone == NULL) {
        return NULL;
    }

    if (shm_zone->data) {
        /* another upstream names the same zone: share it */
        return shm_zone->data;
    }

    zone = ngx_pcalloc(cf->pool, sizeof(ngx_http_kvroute_zone_t));
    if (zone == NULL) {
        return NULL;
    }

    zone->shm_zone = shm_zone;
    zone->row = -1;

    shm_zone->init = ngx_http_kvroute_init_zone;
    shm_zone->data = zone;

    return zone;
}


static ngx_int_t
ngx_http_kvroute_init_zone(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_http_kvroute_zone_t  *ozone = data;

    size_t                     len, index_size;
    void                      *region;
    ngx_slab_pool_t           *shpool;
    ngx_http_kvroute_zone_t   *zone;
    ngx_http_kvroute_shctx_t  *sh;

    zone = shm_zone->data;

    if (ozone) {
        /* reload with the same name and size: keep everything */
        zone->sh = ozone->sh;
        zone->shpool = ozone->shpool;
        return NGX_OK;
    }

    shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;
    zone->shpool = shpool;

    if (shm_zone->shm.exists) {
        zone->sh = shpool->data;
        return NGX_OK;
    }

    sh = ngx_slab_calloc(shpool, sizeof(ngx_http_kvroute_shctx_t));
    if (sh == NULL) {
        return NGX_ERROR;
    }

    zone->sh = sh;
    shpool->data = sh;

    len = sizeof(" in kvroute zone \"\"") + shm_zone->shm.name.len;

    shpool->log_ctx = ngx_slab_alloc(shpool, len);
    if (shpool->log_ctx == NULL) {
        return NGX_ERROR;
    }

    ngx_sprintf(shpool->log_ctx, " in kvroute zone \"%V\"%Z",
                &shm_zone->shm.name);

    shpool->log_nomem = 0;

    if (ngx_http_kvroute_init_pins(shm_zone, sh) != NGX_OK) {
        return NGX_ERROR;
    }

    /* the index takes every page left, in one run */

    index_size = shpool->pfree * ngx_pagesize;
    region = NULL;

    while (index_size >= kvr_index_min_size()) {
        region = ngx_slab_alloc(shpool, index_size);
        if (region) {
            break;
        }

        index_size -= ngx_pagesize;
    }

    if (region == NULL) {
        ngx_log_error(NGX_LOG_EMERG, shm_zone->shm.log, 0,
                      "kvroute zone \"%V\" is too small for the index",
                      &shm_zone->shm.name);
        return NGX_ERROR;
    }

    sh->index = kvr_index_init(region, index_size);
    if (sh->index == NULL) {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * Blocks pinned by requests in flight (policy=ttft), about 1/8 of the
 * zone: 131,072 entries in a 32 MB zone, 3/4 of them usable, so about 650
 * requests of 150 blocks in flight before blocks count without dedup.
 */

static ngx_int_t
ngx_http_kvroute_init_pins(ngx_shm_zone_t *shm_zone,
    ngx_http_kvroute_shctx_t *sh)
{
    size_t   size;
    void    *region;

    size = ngx_min(shm_zone->shm.size / 8, NGX_HTTP_KVROUTE_PINS_MAX);
    size = kvr_pins_size(size);

    region = size ? ngx_slab_alloc((ngx_slab_pool_t *) shm_zone->shm.addr,
                                   size)
                  : NULL;

    sh->pins = kvr_pins_init(region, size);

    if (sh->pins == NULL) {
        ngx_log_error(NGX_LOG_EMERG, shm_zone->shm.log, 0,
                      "kvroute zone \"%V\" is too small for the pinned "
                      "blocks", &shm_zone->shm.name);
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * Each worker charges the load of its requests to a row of its own, so a
 * worker that dies takes its in-flight requests with it: the next process
 * that claims a row zeroes the rows of processes that no longer exist.
 */

ngx_int_t
ngx_http_kvroute_claim_row(ngx_http_kvroute_zone_t *zone, ngx_log_t *log)
{
    ngx_int_t                  i, mine;
    ngx_http_kvroute_row_t    *row;
    ngx_http_kvroute_shctx_t  *sh;

    sh = zone->sh;
    mine = -1;

    ngx_http_kvroute_lock(zone);

    for (i = 0; i < NGX_HTTP_KVROUTE_MAX_ROWS; i++) {
        row = &sh->rows[i];

        if (row->pid != 0 && row->pid != ngx_pid
            && !(kill(row->pid, 0) == -1 && ngx_errno == NGX_ESRCH))
        {
            continue;
        }

        if (row->pid != 0 && row->pid != ngx_pid) {
            ngx_log_error(NGX_LOG_INFO, log, 0,
                          "kvroute: released the load of exited process %P",
                          row->pid);

            /* whose pins are not told apart: every process's go */
            kvr_pins_clear(sh->pins);
        }

        ngx_memzero(row, sizeof(ngx_http_kvroute_row_t));

        if (mine == -1) {
            mine = i;
        }
    }

    if (mine != -1) {
        sh->rows[mine].pid = ngx_pid;

        /* readers sum rows below this mark only */
        if ((ngx_atomic_uint_t) mine >= sh->nrows) {
            sh->nrows = mine + 1;
        }
    }

    ngx_http_kvroute_unlock(zone);

    if (mine == -1) {
        /* more processes than rows: route, but without our load */
        ngx_log_error(NGX_LOG_WARN, log, 0,
                      "kvroute: no free load row in zone \"%V\"",
                      &zone->shm_zone->shm.name);
    }

    zone->row = mine;

    return NGX_OK;
}


/*
 * The zone's lock, around every use of the index.  A process killed while
 * it held the lock (the master then forces it open) may have left the
 * index half changed, its links pointing anywhere: the next holder finds
 * its pid still marked and starts the index afresh, keeping the slots.
 * The index is a cache of what the engines hold, so nothing is lost but
 * hits; the events helper sees the wipe and rebuilds (replay) or marks its
 * servers stale.  The pinned blocks start afresh too: requests charged
 * before are not taken back (kvr_pins_release() sees the generation).
 */

void
ngx_http_kvroute_lock(ngx_http_kvroute_zone_t *zone)
{
    ngx_shmtx_lock(&zone->shpool->mutex);

    if (zone->sh->holder) {
        ngx_log_error(NGX_LOG_ALERT, ngx_cycle->log, 0,
                      "kvroute: process %P died while it changed the index "
                      "of zone \"%V\": the index starts afresh",
                      (ngx_pid_t) zone->sh->holder,
                      &zone->shm_zone->shm.name);

        kvr_index_clear_all(zone->sh->index);
        kvr_pins_clear(zone->sh->pins);
        zone->sh->wipes++;
    }

    zone->sh->holder = ngx_pid;
}


void
ngx_http_kvroute_unlock(ngx_http_kvroute_zone_t *zone)
{
    zone->sh->holder = 0;
    ngx_shmtx_unlock(&zone->shpool->mutex);
}


/* a process that exits has nothing in flight any more */

void
ngx_http_kvroute_release_row(ngx_http_kvroute_zone_t *zone)
{
    if (zone->row < 0) {
        return;
    }

    ngx_http_kvroute_lock(zone);
    ngx_memzero(&zone->sh->rows[zone->row], sizeof(ngx_http_kvroute_row_t));
    ngx_http_kvroute_unlock(zone);

    zone->row = -1;
}


void
ngx_http_kvroute_load(ngx_http_kvroute_zone_t *zone, ngx_int_t slot,
    uint64_t *requests, uint64_t *tokens, uint64_t *prefill)
{
    ngx_uint_t                 i, n;
    ngx_http_kvroute_row_t    *row;

    *requests = 0;
    *tokens = 0;
    *prefill = 0;

    if (slot < 0 || slot >= NGX_HTTP_KVROUTE_MAX_PEERS) {
        return;
    }

    n = zone->sh->nrows;

    for (i = 0; i < n && i < NGX_HTTP_KVROUTE_MAX_ROWS; i++) {
        row = &zone->sh->rows[i];

        if (row->pid == 0) {
            continue;
        }

        *requests += row->requests[slot];
        *tokens += row->tokens[slot];
        *prefill += row->prefill[slot];
    }
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


/*
 * Index slots are keyed by the peer's name (address:port), so a server
 * keeps its blocks across reloads that reorder or change the server list.
 */

ngx_int_t
ngx_http_kvroute_resolve_slots(ngx_http_kvroute_srv_conf_t *kcf,
    ngx_http_upstream_rr_peers_t *peers)
{
    u_char                         name[NGX_SOCKADDR_STRLEN + 2];
    uint64_t                      *caps;
    ngx_int_t                      slot, *slots, *pred;
    ngx_uint_t                     n, i, j;
    ngx_http_kvroute_capacity_t   *c;
    kvr_index_t                   *index;
    ngx_http_upstream_rr_peer_t   *peer;
    ngx_http_upstream_rr_peers_t  *list;

    n = peers->number + (peers->next ? peers->next->number : 0);

    /* per process, from the cycle's pool: gone with the cycle */

    slots = ngx_palloc(ngx_cycle->pool, 2 * n * sizeof(ngx_int_t));
    if (slots == NULL) {
        return NGX_ERROR;
    }

    pred = slots + n;

    caps = ngx_palloc(ngx_cycle->pool, n * sizeof(uint64_t));
    if (caps == NULL) {
        return NGX_ERROR;
    }

    index = kcf->zone->sh->index;
    i = 0;

    ngx_http_kvroute_lock(kcf->zone);

    for (list = peers; list; list = (list == peers) ? peers->next : NULL) {

        for (peer = list->peer; peer && i < n; peer = peer->next) {
            slot = kvr_index_slot(index, (char *) peer->name.data,
                                  peer->name.len);

            /* kvroute_capacity names a server by its "server" line */

            caps[i] = kcf->capacity;

            if (kcf->capacity_overrides) {
                c = kcf->capacity_overrides->elts;

                for (j = 0; j < kcf->capacity_overrides->nelts; j++) {
                    if (c[j].server.len == peer->name.len
                        && ngx_strncmp(c[j].server.data, peer->name.data,
                                       peer->name.len) == 0)
                    {
                        caps[i] = c[j].blocks;
                    }
                }
            }

            if (slot >= 0) {
                kvr_index_slot_set_capacity(index, slot, caps[i]);
            }

            /*
             * kv mode: the server's recent routes, predicted until its
             * events arrive, in a small slot of their own named "~name"
             */

            pred[i] = -1;

            if (kcf->mode == NGX_HTTP_KVROUTE_MODE_KV && kcf->predict
                && peer->name.len <= NGX_SOCKADDR_STRLEN)
            {
                name[0] = '~';
                ngx_memcpy(name + 1, peer->name.data, peer->name.len);

                pred[i] = kvr_index_slot(index, (char *) name,
                                         peer->name.len + 1);

                if (pred[i] >= 0) {
                    kvr_index_slot_set_capacity(index, pred[i],
                        ngx_http_kvroute_pred_capacity(kcf, slot));
                }
            }

            slots[i++] = slot;
        }
    }

    ngx_http_kvroute_unlock(kcf->zone);

    for ( /* void */ ; i < n; i++) {
        slots[i] = -1;
        pred[i] = -1;
        caps[i] = kcf->capacity;
    }

    kcf->slots = slots;
    kcf->pred_slots = pred;
    kcf->capacities = caps;
    kcf->nslots = n;

    return NGX_OK;
}
