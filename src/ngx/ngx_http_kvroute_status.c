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


/* the lines of each server, in the order they are written */
static ngx_str_t  ngx_http_kvroute_peer_metrics[] = {
    ngx_string("kvroute_inflight_requests"),
    ngx_string("kvroute_inflight_prompt_tokens"),
    ngx_string("kvroute_inflight_prefill_tokens"),
    ngx_string("kvroute_indexed_blocks"),
    ngx_string("kvroute_capacity_blocks"),
    ngx_string("kvroute_capacity_evictions_total"),
    ngx_string("kvroute_host_tier_blocks"),
    ngx_string("kvroute_disk_tier_blocks"),
    ngx_null_string
};


/* and, in mode=kv, of its event stream */
static ngx_str_t  ngx_http_kvroute_events_metrics[] = {
    ngx_string("kvroute_events_messages_total"),
    ngx_string("kvroute_events_batches_total"),
    ngx_string("kvroute_events_dropped_total"),
    ngx_string("kvroute_events_stored_blocks_total"),
    ngx_string("kvroute_events_removed_blocks_total"),
    ngx_string("kvroute_events_cleared_total"),
    ngx_string("kvroute_events_gaps_total"),
    ngx_string("kvroute_events_replays_total"),
    ngx_string("kvroute_events_replayed_batches_total"),
    ngx_string("kvroute_events_stale"),
    ngx_string("kvroute_events_stale_total"),
    ngx_string("kvroute_events_connects_total"),
    ngx_string("kvroute_events_orphans_total"),
    ngx_string("kvroute_events_offloaded_blocks_total"),
    ngx_string("kvroute_events_other_group_blocks_total"),
    ngx_string("kvroute_events_reannounced_blocks_total"),
    ngx_string("kvroute_events_lost_total"),
    ngx_string("kvroute_events_block_size_mismatch_total"),
    ngx_string("kvroute_events_last_age_seconds"),
    ngx_null_string
};


/* and, with metrics=on, of its engine's metrics */
static ngx_str_t  ngx_http_kvroute_engine_metrics[] = {
    ngx_string("kvroute_engine_running_requests"),
    ngx_string("kvroute_engine_waiting_requests"),
    ngx_string("kvroute_engine_kv_usage_permille"),
    ngx_string("kvroute_engine_scrapes_total"),
    ngx_string("kvroute_engine_scrape_failures_total"),
    ngx_string("kvroute_engine_scrape_age_milliseconds"),
    ngx_string("kvroute_engine_inter_token_latency_microseconds"),
    ngx_null_string
};


/* the longer list: room for the values of one server's lines */
#define NGX_HTTP_KVROUTE_EVENTS_METRICS                                      \
    (sizeof(ngx_http_kvroute_events_metrics) / sizeof(ngx_str_t) - 1)

/* room for the longest of the scrape reasons and the load-off reason */
#define NGX_HTTP_KVROUTE_REASON_LEN  32

/* the load source's reason when metrics_load=off keeps the own counts */
static ngx_str_t  ngx_http_kvroute_load_off_reason =
    ngx_string("metrics_load_off");


static ngx_int_t ngx_http_kvroute_status_handler(ngx_http_request_t *r);
static size_t ngx_http_kvroute_status_size(
    ngx_http_upstream_srv_conf_t *uscf);
static size_t ngx_http_kvroute_status_lines_size(ngx_str_t *metrics,
    size_t labels);
static u_char *ngx_http_kvroute_status_upstream(u_char *p, u_char *last,
    ngx_http_upstream_srv_conf_t *uscf);
static u_char *ngx_http_kvroute_status_peer(u_char *p, u_char *last,
    ngx_http_kvroute_srv_conf_t *kcf, ngx_str_t *server, ngx_int_t slot,
    int *ranks, ngx_uint_t backup);
static u_char *ngx_http_kvroute_status_streams(u_char *p, u_char *last,
    ngx_http_kvroute_srv_conf_t *kcf, ngx_str_t *server, ngx_int_t slot,
    int *ranks, ngx_uint_t backup);
static u_char *ngx_http_kvroute_status_events(u_char *p, u_char *last,
    ngx_http_kvroute_srv_conf_t *kcf, ngx_str_t *server, ngx_int_t slot,
    ngx_uint_t backup, ngx_int_t rank);
static u_char *ngx_http_kvroute_status_engine(u_char *p, u_char *last,
    ngx_http_kvroute_srv_conf_t *kcf, ngx_str_t *server, ngx_int_t slot,
    ngx_uint_t backup);
static u_char *ngx_http_kvroute_status_zone(u_char *p, u_char *last,
    ngx_http_kvroute_srv_conf_t *kcf);
static u_char *ngx_http_kvroute_status_decode(u_char *p, u_char *last,
    ngx_http_kvroute_srv_conf_t *kcf);
static u_char *ngx_http_kvroute_status_lines(u_char *p, u_char *last,
    ngx_str_t *metrics, uint64_t *values, ngx_str_t *upstream,
    ngx_str_t *server, ngx_uint_t backup, ngx_int_t rank);


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
    ngx_uint_t                      i;
    ngx_chain_t                     out;
    ngx_http_kvroute_main_conf_t   *kmcf;
    ngx_http_upstream_srv_conf_t  **up;

    static u_char  types[] =
        "# TYPE kvroute_inflight_requests gauge\n"
        "# TYPE kvroute_inflight_prompt_tokens gauge\n"
        "# TYPE kvroute_inflight_prefill_tokens gauge\n"
        "# TYPE kvroute_indexed_blocks gauge\n"
        "# TYPE kvroute_capacity_blocks gauge\n"
        "# TYPE kvroute_capacity_evictions_total counter\n"
        "# TYPE kvroute_host_tier_blocks gauge\n"
        "# TYPE kvroute_disk_tier_blocks gauge\n"
        "# TYPE kvroute_decisions_total counter\n"
        "# TYPE kvroute_decision_microseconds_total counter\n"
        "# TYPE kvroute_index_entries gauge\n"
        "# TYPE kvroute_index_capacity gauge\n"
        "# TYPE kvroute_index_full_evictions_total counter\n"
        "# TYPE kvroute_ttft_decode_tokens gauge\n"
        "# TYPE kvroute_ttft_decode_requests_total counter\n"
        "# TYPE kvroute_ttft_decode_fits_total counter\n"
        "# TYPE kvroute_ttft_decode_queued_total counter\n";

    if (r->method != NGX_HTTP_GET && r->method != NGX_HTTP_HEAD) {
        return NGX_HTTP_NOT_ALLOWED;
    }

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    kmcf = ngx_http_get_module_main_conf(r, ngx_http_kvroute_module);
    up = kmcf->upstreams.elts;

    /* the exact room: every name at its length, every number at its widest */

    size = sizeof(types) - 1;

    for (i = 0; i < kmcf->upstreams.nelts; i++) {
        size += ngx_http_kvroute_status_size(up[i]);
    }

    b = ngx_create_temp_buf(r->pool, size);
    if (b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    b->last = ngx_cpymem(b->last, types, sizeof(types) - 1);

    for (i = 0; i < kmcf->upstreams.nelts; i++) {
        b->last = ngx_http_kvroute_status_upstream(b->last, b->end, up[i]);
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


/* the most ngx_http_kvroute_status_upstream() writes for an upstream */

static size_t
ngx_http_kvroute_status_size(ngx_http_upstream_srv_conf_t *uscf)
{
    size_t                         size, zone, labels;
    ngx_uint_t                     j;
    ngx_http_kvroute_srv_conf_t   *kcf;
    ngx_http_upstream_rr_peer_t   *peer;
    ngx_http_upstream_rr_peers_t  *peers, *list;

    kcf = ngx_http_conf_upstream_srv_conf(uscf, ngx_http_kvroute_module);
    peers = uscf->peer.data;

    size = 0;

    for (list = peers; list; list = list->next) {
        for (peer = list->peer; peer; peer = peer->next) {

            /* {upstream="...",server="..."[,backup="1"]} */

            labels = sizeof("{upstream=\"\",server=\"\"}") - 1
                     + uscf->host.len + peer->name.len
                     + (list == peers ? 0 : sizeof(",backup=\"1\"") - 1);

            size += ngx_http_kvroute_status_lines_size(
                        ngx_http_kvroute_peer_metrics, labels);

            /* with ranks, each rank's: ,rank="N" more */

            if (kcf->mode == NGX_HTTP_KVROUTE_MODE_KV) {
                size += (kcf->events_ranks.count > 1)
                        ? kcf->events_ranks.count
                          * ngx_http_kvroute_status_lines_size(
                                ngx_http_kvroute_events_metrics,
                                labels + sizeof(",rank=\"\"") - 1
                                + NGX_INT_T_LEN)
                        : ngx_http_kvroute_status_lines_size(
                                ngx_http_kvroute_events_metrics, labels);
            }

            if (kcf->metrics) {
                size += ngx_http_kvroute_status_lines_size(
                            ngx_http_kvroute_engine_metrics, labels);

                /* kvroute_load_source{...,source="",reason=""} 1 */
                size += sizeof("kvroute_load_source,source=\"metrics\","
                               "reason=\"\" 1\n") - 1
                        + labels + NGX_HTTP_KVROUTE_REASON_LEN;
            }
        }
    }

    zone = kcf->zone->shm_zone->shm.name.len;

    if (kcf->mode == NGX_HTTP_KVROUTE_MODE_KV) {
        size += sizeof("kvroute_events_helper_starts_total{zone=\"\"} \n") - 1
                + zone + NGX_ATOMIC_T_LEN;
    }

    for (j = 0; j < NGX_HTTP_KVROUTE_R_LAST; j++) {
        size += sizeof("kvroute_decisions_total{zone=\"\",reason=\"\"} \n") - 1
                + zone + ngx_http_kvroute_reason_names[j].len
                + NGX_ATOMIC_T_LEN;
    }

    size += sizeof("kvroute_decision_microseconds_total{zone=\"\"} \n") - 1
            + zone + NGX_ATOMIC_T_LEN;

    size += sizeof("kvroute_index_entries{zone=\"\"} \n"
                   "kvroute_index_capacity{zone=\"\"} \n"
                   "kvroute_index_full_evictions_total{zone=\"\"} \n") - 1
            + 3 * (zone + NGX_INT64_LEN);

    if (kcf->policy.policy == KVR_POLICY_TTFT) {
        size += sizeof("kvroute_ttft_decode_tokens{upstream=\"\","
                       "source=\"configured\"} \n") - 1
                + uscf->host.len + NGX_INT64_LEN;
    }

    if (kcf->decode_auto) {
        size += sizeof("kvroute_ttft_decode_requests_total{zone=\"\"} \n"
                       "kvroute_ttft_decode_fits_total{zone=\"\"} \n"
                       "kvroute_ttft_decode_queued_total{zone=\"\"} \n") - 1
                + 3 * (zone + NGX_INT64_LEN);
    }

    return size;
}


/* "metric{labels} value\n" for each metric of a server */

static size_t
ngx_http_kvroute_status_lines_size(ngx_str_t *metrics, size_t labels)
{
    size_t  size;

    size = 0;

    for ( /* void */ ; metrics->len; metrics++) {
        size += metrics->len + labels + sizeof(" \n") - 1 + NGX_INT64_LEN;
    }

    return size;
}


/* every server's lines, then the zone's */

static u_char *
ngx_http_kvroute_status_upstream(u_char *p, u_char *last,
    ngx_http_upstream_srv_conf_t *uscf)
{
    int                           *ranks;
    ngx_int_t                      slot;
    ngx_uint_t                     i;
    ngx_http_kvroute_runtime_t    *rt;
    ngx_http_kvroute_srv_conf_t   *kcf;
    ngx_http_upstream_rr_peer_t   *peer;
    ngx_http_upstream_rr_peers_t  *peers, *list;

    kcf = ngx_http_conf_upstream_srv_conf(uscf, ngx_http_kvroute_module);
    rt = kcf->runtime;
    peers = uscf->peer.data;

    i = 0;

    for (list = peers; list; list = list->next) {
        for (peer = list->peer; peer; peer = peer->next, i++) {
            slot = (i < rt->nslots) ? rt->slots[i] : -1;
            ranks = (rt->nranks && i < rt->nslots)
                    ? &rt->rank_slots[i * rt->nranks] : NULL;

            p = ngx_http_kvroute_status_peer(p, last, kcf, &peer->name, slot,
                                             ranks, list != peers);

            if (kcf->mode == NGX_HTTP_KVROUTE_MODE_KV && slot >= 0) {
                p = ngx_http_kvroute_status_streams(p, last, kcf,
                                                    &peer->name, slot,
                                                    ranks, list != peers);
            }

            if (kcf->metrics && slot >= 0) {
                p = ngx_http_kvroute_status_engine(p, last, kcf, &peer->name,
                                                   slot, list != peers);
            }
        }
    }

    return ngx_http_kvroute_status_zone(p, last, kcf);
}


/*
 * a server's load and cache, in the order of ..._peer_metrics[]; with
 * data-parallel ranks (ranks: their slots) its own load (requests routed
 * without a rank) and all its ranks' load and cache
 */

static u_char *
ngx_http_kvroute_status_peer(u_char *p, u_char *last,
    ngx_http_kvroute_srv_conf_t *kcf, ngx_str_t *server, ngx_int_t slot,
    int *ranks, ngx_uint_t backup)
{
    uint64_t                  values[NGX_HTTP_KVROUTE_EVENTS_METRICS];
    int                       s, tier;
    uint64_t                  load[3];
    ngx_uint_t                r, n, t;
    kvr_index_slot_info_t     info;
    ngx_http_kvroute_zone_t  *zone;

    zone = kcf->zone;

    ngx_http_kvroute_load(zone, slot, &values[0], &values[1], &values[2]);

    values[3] = 0;
    values[4] = 0;
    values[5] = 0;
    values[6] = 0;
    values[7] = 0;

    n = ranks ? kcf->runtime->nranks : 1;

    ngx_http_kvroute_lock(zone);

    for (r = 0; r < n; r++) {
        ngx_memzero(&info, sizeof(kvr_index_slot_info_t));

        if (ranks == NULL || ranks[r] >= 0) {
            kvr_index_slot_info(zone->sh->index, ranks ? ranks[r] : slot,
                                &info);
        }

        values[3] += info.blocks;
        values[4] += info.capacity;
        values[5] += info.evictions;

        /*
         * kv mode: its offload tiers' blocks, as their events said, in GPU
         * blocks (a tier's block may span several)
         */

        s = ranks ? ranks[r] : (int) slot;

        for (t = 0; s >= 0 && s < NGX_HTTP_KVROUTE_MAX_PEERS && t < 2; t++) {
            tier = zone->sh->tiers[s][t] - 1;

            if (tier >= 0) {
                values[6 + t] += kvr_index_slot_blocks(zone->sh->index, tier)
                                 * ngx_max(zone->sh->tier_groups[s][t], 1);
            }
        }

        if (ranks) {
            ngx_http_kvroute_load(zone, ranks[r], &load[0], &load[1],
                                  &load[2]);
            values[0] += load[0];
            values[1] += load[1];
            values[2] += load[2];
        }
    }

    ngx_http_kvroute_unlock(zone);

    return ngx_http_kvroute_status_lines(p, last,
                                         ngx_http_kvroute_peer_metrics,
                                         values, &kcf->upstream->host,
                                         server, backup, -1);
}


/*
 * mode=kv: a server's event stream, or with data-parallel ranks (ranks:
 * their slots) each rank's, labelled with the rank as the engine numbers
 * it (its events are on events_port + rank) and no line without the
 * label: summed by server, the lines are the server's
 */

static u_char *
ngx_http_kvroute_status_streams(u_char *p, u_char *last,
    ngx_http_kvroute_srv_conf_t *kcf, ngx_str_t *server, ngx_int_t slot,
    int *ranks, ngx_uint_t backup)
{
    ngx_uint_t  r;

    if (ranks == NULL) {
        return ngx_http_kvroute_status_events(p, last, kcf, server, slot,
                                              backup, -1);
    }

    for (r = 0; r < kcf->runtime->nranks; r++) {
        if (ranks[r] >= 0 && ranks[r] < NGX_HTTP_KVROUTE_MAX_PEERS) {
            p = ngx_http_kvroute_status_events(p, last, kcf, server,
                                               ranks[r], backup,
                                               kcf->events_ranks.first + r);
        }
    }

    return p;
}


/* one stream's lines, in the order of ..._events_metrics[]; rank -1: none */

static u_char *
ngx_http_kvroute_status_events(u_char *p, u_char *last,
    ngx_http_kvroute_srv_conf_t *kcf, ngx_str_t *server, ngx_int_t slot,
    ngx_uint_t backup, ngx_int_t rank)
{
    uint64_t                          values[NGX_HTTP_KVROUTE_EVENTS_METRICS];
    ngx_http_kvroute_events_stats_t  *ev;

    ev = &kcf->zone->sh->events[slot];

    values[0] = ev->messages;
    values[1] = ev->batches;
    values[2] = ev->dropped;
    values[3] = ev->stored;
    values[4] = ev->removed;
    values[5] = ev->cleared;
    values[6] = ev->gaps;
    values[7] = ev->replays;
    values[8] = ev->replayed;
    values[9] = ev->stale;
    values[10] = ev->stale_total;
    values[11] = ev->connects;
    values[12] = ev->orphans;
    values[13] = ev->offloaded;
    values[14] = ev->other_group;
    values[15] = ev->reannounced;
    values[16] = ev->lost;
    values[17] = ev->bad_block_size;
    values[18] = ev->last_msec ? (ngx_current_msec - ev->last_msec) / 1000
                               : 0;

    return ngx_http_kvroute_status_lines(p, last,
                                         ngx_http_kvroute_events_metrics,
                                         values, &kcf->upstream->host,
                                         server, backup, rank);
}


/*
 * metrics=on: what a server's engine last said, and where its load comes
 * from now: "metrics", or "own" and why
 */

static u_char *
ngx_http_kvroute_status_engine(u_char *p, u_char *last,
    ngx_http_kvroute_srv_conf_t *kcf, ngx_str_t *server, ngx_int_t slot,
    ngx_uint_t backup)
{
    uint64_t                          values[NGX_HTTP_KVROUTE_EVENTS_METRICS];
    char                             *source;
    ngx_str_t                        *reason;
    ngx_uint_t                        state;
    ngx_msec_int_t                    age;
    ngx_http_kvroute_engine_stats_t   e;

    /* one scrape's values, as the helper wrote them under the lock */

    ngx_http_kvroute_lock(kcf->zone);
    e = kcf->zone->sh->engines[slot];
    state = ngx_http_kvroute_engine_state(kcf, slot);
    ngx_http_kvroute_unlock(kcf->zone);

    /* the helper's clock may be a little ahead of this worker's */
    age = (ngx_msec_int_t) (ngx_current_msec - e.ok_msec);

    values[0] = e.load.running;
    values[1] = e.load.waiting;
    values[2] = (e.load.usage == KVR_ENGINE_NO_USAGE) ? 0 : e.load.usage;
    values[3] = e.scrapes;
    values[4] = e.failures;
    values[5] = (e.ok_msec && age > 0) ? (uint64_t) age : 0;
    values[6] = e.load.itl_us;              /* 0: not known yet */

    p = ngx_http_kvroute_status_lines(p, last,
                                      ngx_http_kvroute_engine_metrics,
                                      values, &kcf->upstream->host,
                                      server, backup, -1);

    source = "own";
    reason = &ngx_http_kvroute_scrape_reasons[state];

    if (state == NGX_HTTP_KVROUTE_SCRAPE_OK) {

        /* metrics_load=off: a fresh scrape gives speeds, the load stays own */

        if (kcf->metrics_load) {
            source = "metrics";

        } else {
            reason = &ngx_http_kvroute_load_off_reason;
        }
    }

    return ngx_slprintf(p, last,
                        "kvroute_load_source{upstream=\"%V\",server=\"%V\"%s,"
                        "source=\"%s\",reason=\"%V\"} 1\n",
                        &kcf->upstream->host, server,
                        backup ? ",backup=\"1\"" : "", source, reason);
}


/* the zone's decisions and index */

static u_char *
ngx_http_kvroute_status_zone(u_char *p, u_char *last,
    ngx_http_kvroute_srv_conf_t *kcf)
{
    ngx_str_t                *zname;
    ngx_uint_t                j;
    kvr_index_stats_t         stats;
    ngx_http_kvroute_zone_t  *zone;

    zone = kcf->zone;
    zname = &zone->shm_zone->shm.name;

    if (kcf->mode == NGX_HTTP_KVROUTE_MODE_KV) {
        p = ngx_slprintf(p, last,
                         "kvroute_events_helper_starts_total{zone=\"%V\"} "
                         "%uA\n", zname, zone->sh->helper_starts);
    }

    for (j = 0; j < NGX_HTTP_KVROUTE_R_LAST; j++) {
        p = ngx_slprintf(p, last, "kvroute_decisions_total{zone=\"%V\","
                         "reason=\"%V\"} %uA\n", zname,
                         &ngx_http_kvroute_reason_names[j],
                         zone->sh->decisions[j]);
    }

    p = ngx_slprintf(p, last,
                     "kvroute_decision_microseconds_total{zone=\"%V\"} "
                     "%uA\n", zname, zone->sh->decision_usec);

    ngx_http_kvroute_lock(zone);
    kvr_index_stats(zone->sh->index, &stats);
    ngx_http_kvroute_unlock(zone);

    p = ngx_slprintf(p, last,
                     "kvroute_index_entries{zone=\"%V\"} %uL\n"
                     "kvroute_index_capacity{zone=\"%V\"} %uL\n"
                     "kvroute_index_full_evictions_total{zone=\"%V\"} %uL\n",
                     zname, stats.entries, zname, stats.capacity,
                     zname, stats.evictions_full);

    return ngx_http_kvroute_status_decode(p, last, kcf);
}


/*
 * policy=ttft: the weight of a request in flight in use; with
 * ttft_decode=auto, learned once a fit gave one, what it learned from,
 * and the requests it left out for having waited for KV room
 */

static u_char *
ngx_http_kvroute_status_decode(u_char *p, u_char *last,
    ngx_http_kvroute_srv_conf_t *kcf)
{
    double                    weight;
    uint64_t                  ended, fits, queued;
    ngx_str_t                *zname;
    ngx_http_kvroute_zone_t  *zone;

    if (kcf->policy.policy != KVR_POLICY_TTFT) {
        return p;
    }

    zone = kcf->zone;
    zname = &zone->shm_zone->shm.name;

    ngx_http_kvroute_lock(zone);
    weight = zone->sh->inflight_cost.weight;
    ended = zone->sh->inflight_cost.ended;
    fits = zone->sh->inflight_cost.fits;
    queued = zone->sh->inflight_cost.queued;
    ngx_http_kvroute_unlock(zone);

    if (kcf->decode_auto && weight > 0) {
        p = ngx_slprintf(p, last,
                         "kvroute_ttft_decode_tokens{upstream=\"%V\","
                         "source=\"learned\"} %uL\n",
                         &kcf->upstream->host, (uint64_t) (weight + 0.5));

    } else {
        p = ngx_slprintf(p, last,
                         "kvroute_ttft_decode_tokens{upstream=\"%V\","
                         "source=\"configured\"} %uL\n",
                         &kcf->upstream->host,
                         (uint64_t) (kcf->policy.ttft_decode + 0.5));
    }

    if (!kcf->decode_auto) {
        return p;
    }

    return ngx_slprintf(p, last,
                        "kvroute_ttft_decode_requests_total{zone=\"%V\"} "
                        "%uL\n"
                        "kvroute_ttft_decode_fits_total{zone=\"%V\"} %uL\n"
                        "kvroute_ttft_decode_queued_total{zone=\"%V\"} "
                        "%uL\n",
                        zname, ended, zname, fits, zname, queued);
}


static u_char *
ngx_http_kvroute_status_lines(u_char *p, u_char *last, ngx_str_t *metrics,
    uint64_t *values, ngx_str_t *upstream, ngx_str_t *server,
    ngx_uint_t backup, ngx_int_t rank)
{
    for ( /* void */ ; metrics->len; metrics++, values++) {
        p = ngx_slprintf(p, last, "%V{upstream=\"%V\",server=\"%V\"%s",
                         metrics, upstream, server,
                         backup ? ",backup=\"1\"" : "");

        if (rank >= 0) {
            p = ngx_slprintf(p, last, ",rank=\"%i\"", rank);
        }

        p = ngx_slprintf(p, last, "} %uL\n", *values);
    }

    return p;
}
