/*
 * Copyright (C) kvroute developers
 *
 * metrics=on: whether a server's load comes from its engine's metrics
 * (fresh) or from this frontend's own counts (stale, and why), and the
 * candidates' load terms from them.  The events helper writes each
 * server's scrapes (ngx_http_kvroute_scrape.c) under the zone's lock; the
 * balancer reads them under the same lock.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_kvroute.h"


/* a scrape older than this many intervals no longer stands for the load */
#define NGX_HTTP_KVROUTE_ENGINE_FRESH  3


ngx_str_t  ngx_http_kvroute_scrape_reasons[] = {
    ngx_string("ok"),
    ngx_string("never"),
    ngx_string("old"),
    ngx_string("connect"),
    ngx_string("timeout"),
    ngx_string("io"),
    ngx_string("closed"),
    ngx_string("not_http"),
    ngx_string("status"),
    ngx_string("chunked"),
    ngx_string("too_large"),
    ngx_string("no_load_metrics"),
    ngx_null_string
};


/* NGX_HTTP_KVROUTE_SCRAPE_OK when the metrics stand for the load */

ngx_uint_t
ngx_http_kvroute_engine_state(ngx_http_kvroute_srv_conf_t *kcf,
    ngx_int_t slot)
{
    ngx_http_kvroute_engine_stats_t  *e;

    if (slot < 0 || slot >= NGX_HTTP_KVROUTE_MAX_PEERS) {
        return NGX_HTTP_KVROUTE_SCRAPE_NEVER;
    }

    e = &kcf->zone->sh->engines[slot];

    if (e->failure != NGX_HTTP_KVROUTE_SCRAPE_OK) {
        return e->failure;
    }

    if (e->ok_msec == 0) {
        return NGX_HTTP_KVROUTE_SCRAPE_NEVER;
    }

    if ((ngx_msec_int_t) (ngx_current_msec - e->ok_msec)
        > (ngx_msec_int_t) (NGX_HTTP_KVROUTE_ENGINE_FRESH
                            * kcf->metrics_interval))
    {
        return NGX_HTTP_KVROUTE_SCRAPE_OLD;
    }

    return NGX_HTTP_KVROUTE_SCRAPE_OK;
}


/*
 * Each candidate whose engine's metrics are fresh: the others' load on
 * top of its own (kvr_engine_load_apply); locked, after the pins are
 * gathered
 */

void
ngx_http_kvroute_engine_loads(ngx_http_kvroute_srv_conf_t *kcf, int *slots,
    ngx_uint_t n, kvr_candidate_t *cand, uint32_t tokens)
{
    ngx_uint_t          i;
    kvr_engine_load_t  *el;
    uint32_t            itl_us[NGX_HTTP_KVROUTE_MAX_PEERS];

    if (!kcf->metrics) {
        return;
    }

    for (i = 0; i < n; i++) {
        itl_us[i] = 0;

        if (ngx_http_kvroute_engine_state(kcf, slots[i])
            != NGX_HTTP_KVROUTE_SCRAPE_OK)
        {
            continue;
        }

        el = &kcf->zone->sh->engines[slots[i]].load;

        if (kcf->metrics_load) {
            kvr_engine_load_apply(&cand[i], el, tokens);
        }

        itl_us[i] = el->itl_us;
    }

    /* speeds only where fresh figures say so: the others as the fastest */

    if (kcf->metrics_speed) {
        kvr_engine_load_speeds(cand, itl_us, n);
    }
}
