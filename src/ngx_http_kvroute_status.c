/*
 * Copyright (C) kvroute developers
 *
 * `kvroute_status;` in a location serves the state of every kvroute
 * upstream in Prometheus' text format.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_kvroute.h"


#define NGX_HTTP_KVROUTE_LINE  384     /* room for one metric line */


static ngx_int_t ngx_http_kvroute_status_handler(ngx_http_request_t *r);
static u_char *ngx_http_kvroute_status_upstream(u_char *p,
    ngx_http_upstream_srv_conf_t *uscf);


char *
ngx_http_kvroute_status(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_core_loc_conf_t  *clcf;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_kvroute_status_handler;

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_http_kvroute_status_handler(ngx_http_request_t *r)
{
    size_t                          size;
    ngx_int_t                       rc;
    ngx_buf_t                      *b;
    ngx_uint_t                      i, npeers;
    ngx_chain_t                     out;
    ngx_http_kvroute_main_conf_t   *kmcf;
    ngx_http_upstream_srv_conf_t  **up;
    ngx_http_upstream_rr_peers_t   *peers;

    if (r->method != NGX_HTTP_GET && r->method != NGX_HTTP_HEAD) {
        return NGX_HTTP_NOT_ALLOWED;
    }

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    kmcf = ngx_http_get_module_main_conf(r, ngx_http_kvroute_module);
    up = kmcf->upstreams.elts;

    size = 16 * NGX_HTTP_KVROUTE_LINE;

    for (i = 0; i < kmcf->upstreams.nelts; i++) {
        peers = up[i]->peer.data;
        npeers = peers->number + (peers->next ? peers->next->number : 0);
        size += (24 * npeers + NGX_HTTP_KVROUTE_R_LAST + 8)
                * NGX_HTTP_KVROUTE_LINE;
    }

    b = ngx_create_temp_buf(r->pool, size);
    if (b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    b->last = ngx_cpymem(b->last,
        "# TYPE kvroute_inflight_requests gauge\n"
        "# TYPE kvroute_inflight_prompt_tokens gauge\n"
        "# TYPE kvroute_inflight_prefill_tokens gauge\n"
        "# TYPE kvroute_indexed_blocks gauge\n"
        "# TYPE kvroute_capacity_blocks gauge\n"
        "# TYPE kvroute_capacity_evictions_total counter\n"
        "# TYPE kvroute_decisions_total counter\n"
        "# TYPE kvroute_decision_microseconds_total counter\n"
        "# TYPE kvroute_index_entries gauge\n"
        "# TYPE kvroute_index_capacity gauge\n"
        "# TYPE kvroute_index_full_evictions_total counter\n",
        sizeof("# TYPE kvroute_inflight_requests gauge\n"
               "# TYPE kvroute_inflight_prompt_tokens gauge\n"
               "# TYPE kvroute_inflight_prefill_tokens gauge\n"
               "# TYPE kvroute_indexed_blocks gauge\n"
               "# TYPE kvroute_capacity_blocks gauge\n"
               "# TYPE kvroute_capacity_evictions_total counter\n"
               "# TYPE kvroute_decisions_total counter\n"
               "# TYPE kvroute_decision_microseconds_total counter\n"
               "# TYPE kvroute_index_entries gauge\n"
               "# TYPE kvroute_index_capacity gauge\n"
               "# TYPE kvroute_index_full_evictions_total counter\n") - 1);

    for (i = 0; i < kmcf->upstreams.nelts; i++) {
        b->last = ngx_http_kvroute_status_upstream(b->last, up[i]);
        if (b->last == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
    }

    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;

    r->headers_out.status = NGX_HTTP_OK;
    r->headers_out.content_length_n = b->last - b->pos;
    ngx_str_set(&r->headers_out.content_type,
                "text/plain; version=0.0.4; charset=utf-8");
    r->headers_out.content_type_len = r->headers_out.content_type.len;

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}


static u_char *
ngx_http_kvroute_status_upstream(u_char *p,
    ngx_http_upstream_srv_conf_t *uscf)
{
    uint64_t                       requests, tokens, prefill;
    ngx_int_t                      slot;
    ngx_str_t                     *zname;
    ngx_uint_t                     i, j;
    kvr_index_stats_t              stats;
    kvr_index_slot_info_t          info;
    ngx_http_kvroute_events_stats_t  *ev;
    ngx_http_kvroute_zone_t       *zone;
    ngx_http_upstream_rr_peer_t   *peer;
    ngx_http_upstream_rr_peers_t  *peers, *list;
    ngx_http_kvroute_srv_conf_t   *kcf;

    kcf = ngx_http_conf_upstream_srv_conf(uscf, ngx_http_kvroute_module);
    zone = kcf->zone;
    zname = &zone->shm_zone->shm.name;
    peers = uscf->peer.data;

    if (kcf->slots == NULL
        && ngx_http_kvroute_resolve_slots(kcf, peers) != NGX_OK)
    {
        return NULL;
    }

    i = 0;

    for (list = peers; list; list = list->next) {
        for (peer = list->peer; peer; peer = peer->next, i++) {
            slot = (i < kcf->nslots) ? kcf->slots[i] : -1;

            ngx_memzero(&info, sizeof(kvr_index_slot_info_t));

            if (slot >= 0) {
                ngx_http_kvroute_lock(zone);
                kvr_index_slot_info(zone->sh->index, slot, &info);
                ngx_http_kvroute_unlock(zone);
            }

            ngx_http_kvroute_load(zone, slot, &requests, &tokens, &prefill);

#define NGX_HTTP_KVROUTE_PEER_LINE(metric, value)                            \
            p = ngx_sprintf(p, metric "{upstream=\"%V\",server=\"%V\"%s} "   \
                            "%uL\n", &uscf->host, &peer->name,              \
                            list == peers ? "" : ",backup=\"1\"",           \
                            (uint64_t) (value))

            NGX_HTTP_KVROUTE_PEER_LINE("kvroute_inflight_requests", requests);
            NGX_HTTP_KVROUTE_PEER_LINE("kvroute_inflight_prompt_tokens",
                                       tokens);
            NGX_HTTP_KVROUTE_PEER_LINE("kvroute_inflight_prefill_tokens",
                                       prefill);
            NGX_HTTP_KVROUTE_PEER_LINE("kvroute_indexed_blocks", info.blocks);
            NGX_HTTP_KVROUTE_PEER_LINE("kvroute_capacity_blocks",
                                       info.capacity);
            NGX_HTTP_KVROUTE_PEER_LINE("kvroute_capacity_evictions_total",
                                       info.evictions);

            if (kcf->mode == NGX_HTTP_KVROUTE_MODE_KV && slot >= 0) {
                ev = &zone->sh->events[slot];

                NGX_HTTP_KVROUTE_PEER_LINE("kvroute_events_messages_total",
                                           ev->messages);
                NGX_HTTP_KVROUTE_PEER_LINE("kvroute_events_batches_total",
                                           ev->batches);
                NGX_HTTP_KVROUTE_PEER_LINE("kvroute_events_dropped_total",
                                           ev->dropped);
                NGX_HTTP_KVROUTE_PEER_LINE("kvroute_events_stored_blocks_total",
                                           ev->stored);
                NGX_HTTP_KVROUTE_PEER_LINE(
                    "kvroute_events_removed_blocks_total", ev->removed);
                NGX_HTTP_KVROUTE_PEER_LINE("kvroute_events_cleared_total",
                                           ev->cleared);
                NGX_HTTP_KVROUTE_PEER_LINE("kvroute_events_gaps_total",
                                           ev->gaps);
                NGX_HTTP_KVROUTE_PEER_LINE("kvroute_events_replays_total",
                                           ev->replays);
                NGX_HTTP_KVROUTE_PEER_LINE(
                    "kvroute_events_replayed_batches_total", ev->replayed);
                NGX_HTTP_KVROUTE_PEER_LINE("kvroute_events_stale",
                                           ev->stale);
                NGX_HTTP_KVROUTE_PEER_LINE("kvroute_events_stale_total",
                                           ev->stale_total);
                NGX_HTTP_KVROUTE_PEER_LINE("kvroute_events_connects_total",
                                           ev->connects);
                NGX_HTTP_KVROUTE_PEER_LINE("kvroute_events_orphans_total",
                                           ev->orphans);
                NGX_HTTP_KVROUTE_PEER_LINE(
                    "kvroute_events_block_size_mismatch_total",
                    ev->bad_block_size);
                NGX_HTTP_KVROUTE_PEER_LINE(
                    "kvroute_events_last_age_seconds",
                    ev->last_msec ? (ngx_current_msec - ev->last_msec) / 1000
                                  : 0);
            }

#undef NGX_HTTP_KVROUTE_PEER_LINE
        }
    }

    if (kcf->mode == NGX_HTTP_KVROUTE_MODE_KV) {
        p = ngx_sprintf(p, "kvroute_events_helper_starts_total{zone=\"%V\"} "
                        "%uA\n", zname, zone->sh->helper_starts);
    }

    for (j = 0; j < NGX_HTTP_KVROUTE_R_LAST; j++) {
        p = ngx_sprintf(p, "kvroute_decisions_total{zone=\"%V\","
                        "reason=\"%V\"} %uA\n", zname,
                        &ngx_http_kvroute_reason_names[j],
                        zone->sh->decisions[j]);
    }

    p = ngx_sprintf(p, "kvroute_decision_microseconds_total{zone=\"%V\"} "
                    "%uA\n", zname, zone->sh->decision_usec);

    ngx_http_kvroute_lock(zone);
    kvr_index_stats(zone->sh->index, &stats);
    ngx_http_kvroute_unlock(zone);

    p = ngx_sprintf(p, "kvroute_index_entries{zone=\"%V\"} %uL\n"
                    "kvroute_index_capacity{zone=\"%V\"} %uL\n"
                    "kvroute_index_full_evictions_total{zone=\"%V\"} %uL\n",
                    zname, stats.entries, zname, stats.capacity,
                    zname, stats.evictions_full);

    return p;
}
