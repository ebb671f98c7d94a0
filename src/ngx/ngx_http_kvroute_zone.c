/*
 * Copyright (C) kvroute developers
 *
 * The shared zone (decision counters, load rows, event stats, homes and
 * the block index) and its lock.  The slab pool's mutex guards it: the
 * master force-unlocks it when a worker dies holding it, and the next
 * holder wipes what the dead one may have left half changed.
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
        /*
         * reload with the same name and size: keep everything, and the
         * load row of a single process (master_process off) that reloads
         */
        zone->sh = ozone->sh;
        zone->shpool = ozone->shpool;
        zone->row = ozone->row;
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

    kvr_inflight_cost_init(&sh->inflight_cost);

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
