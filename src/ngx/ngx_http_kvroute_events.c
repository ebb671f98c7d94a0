/*
 * Copyright (C) kvroute developers
 *
 * mode=kv: a helper process subscribes to every server's ZeroMQ KV event
 * stream and applies the events to the shared index, off the request
 * path.  The helper is nginx's "cache manager process", which nginx starts
 * for any path with a manager callback (nginx-notes.md section 3a): it is
 * respawned when it dies, replaced on reload and stopped on quit, and
 * serves no requests.  With master_process off the same work runs on a
 * timer inside the single process.
 *
 * The engine-hash map of each stream lives in the helper's own memory; a
 * helper that starts (or restarts) therefore first drops what the index
 * held from events for its servers, since those entries could never be
 * removed, and rebuilds from the events that follow.
 *
 * When a server's index is complete or stale, and what to do with each
 * message, replay reply and replay timeout, is decided by its feed
 * (src/events/kvr_feed.c); this file does it: sockets, the lock, counters
 * and logs.  While a server's index is stale its predictions stand in for
 * what was missed, as in approximate mode.  Every (re)connection to a
 * publisher asks its replay socket, when there is one, for what it still
 * holds.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>
#include <zmq.h>

#include "ngx_http_kvroute.h"
#include "kvr_events.h"
#include "kvr_kvstate.h"
#include "kvr_feed.h"


#define NGX_HTTP_KVROUTE_EVENTS_IDLE     10     /* ms between idle ticks */
#define NGX_HTTP_KVROUTE_EVENTS_BUDGET   1000   /* messages per socket/tick */
#define NGX_HTTP_KVROUTE_EVENTS_HANDLES  (4 * 1024 * 1024)
#define NGX_HTTP_KVROUTE_EVENTS_FRAMES   4

/*
 * libzmq refuses larger frames before they are buffered (the decoder's
 * own payload limit is 16 MiB too)
 */
#define NGX_HTTP_KVROUTE_EVENTS_MAX_MSG  (16 * 1024 * 1024)


/* replies queued on the DEALER: 10 x vLLM's default buffer_steps */
#define NGX_HTTP_KVROUTE_REPLAY_HWM     100000


typedef struct {
    void                           *socket;
    void                           *replay;     /* DEALER, when configured */
    void                           *zmq;        /* the context */
    void                           *monitor;    /* the socket's (re)connects */
    ngx_http_kvroute_srv_conf_t    *conf;
    ngx_int_t                       slot;       /* the rank's index slot,
                                                   and its counters */
    ngx_int_t                       server;     /* the server's slot */
    int                            *ranks;      /* the server's ranks'
                                                   slots, or NULL */
    ngx_uint_t                      nranks;
    ngx_int_t                       pred_slot;  /* -1: no predictions */
    kvr_kvstate_t                   state;
    kvr_feed_t                      feed;
    time_t                          logged;     /* last warning */
    ngx_atomic_uint_t               wipes;      /* the zone's, last seen */
    char                            endpoint[NGX_SOCKADDR_STRLEN + 32];
    char                            replay_endpoint[NGX_SOCKADDR_STRLEN + 32];
} ngx_http_kvroute_sub_t;


typedef struct {
    void                           *zmq;
    kvr_events_decoder_t           *decoder;
    ngx_http_kvroute_sub_t         *subs;
    ngx_uint_t                      nsubs;
    ngx_uint_t                      failed;
    ngx_event_t                     timer;      /* single process mode */
} ngx_http_kvroute_events_t;


static ngx_msec_t ngx_http_kvroute_events_manager(void *data);
static ngx_int_t ngx_http_kvroute_events_start(
    ngx_http_kvroute_main_conf_t *kmcf);
static void ngx_http_kvroute_events_clear_tiers(ngx_http_kvroute_zone_t *zone,
    ngx_int_t slot);
static ngx_int_t ngx_http_kvroute_events_subscribe(
    ngx_http_kvroute_events_t *ev, ngx_http_kvroute_srv_conf_t *kcf,
    ngx_http_upstream_rr_peer_t *peer, ngx_uint_t peer_index, ngx_uint_t rank);
static ngx_int_t ngx_http_kvroute_events_where(
    ngx_http_kvroute_srv_conf_t *kcf, ngx_http_upstream_rr_peer_t *peer,
    ngx_uint_t rank, ngx_http_kvroute_sub_t *sub);
static ngx_int_t ngx_http_kvroute_events_connect(
    ngx_http_kvroute_events_t *ev, ngx_http_kvroute_srv_conf_t *kcf,
    ngx_http_kvroute_sub_t *sub, ngx_int_t *monitored);
static void ngx_http_kvroute_events_close(ngx_http_kvroute_sub_t *sub);
static ngx_int_t ngx_http_kvroute_events_monitor(
    ngx_http_kvroute_events_t *ev, ngx_http_kvroute_sub_t *sub);
static void ngx_http_kvroute_events_connects(ngx_http_kvroute_sub_t *sub);
static void ngx_http_kvroute_events_reset(ngx_http_kvroute_sub_t *sub);
static void ngx_http_kvroute_events_publish(ngx_http_kvroute_sub_t *sub,
    int changes);
static ngx_uint_t ngx_http_kvroute_events_drain(
    ngx_http_kvroute_events_t *ev, ngx_http_kvroute_sub_t *sub);
static void ngx_http_kvroute_events_message(ngx_http_kvroute_events_t *ev,
    ngx_http_kvroute_sub_t *sub, kvr_events_frame_t *frames,
    ngx_uint_t nframes);
static kvr_events_status_e ngx_http_kvroute_events_batch(
    ngx_http_kvroute_events_t *ev, ngx_http_kvroute_sub_t *sub, uint64_t seq,
    const uint8_t *payload, size_t len);
static void ngx_http_kvroute_events_replay(ngx_http_kvroute_sub_t *sub,
    uint64_t from, ngx_uint_t keep);
static ngx_uint_t ngx_http_kvroute_events_replayed(
    ngx_http_kvroute_events_t *ev, ngx_http_kvroute_sub_t *sub);
static ngx_uint_t ngx_http_kvroute_events_reply(
    ngx_http_kvroute_events_t *ev, ngx_http_kvroute_sub_t *sub,
    kvr_events_frame_t *frames, ngx_uint_t nframes);
static ngx_uint_t ngx_http_kvroute_events_recv(void *socket, zmq_msg_t *msgs,
    kvr_events_frame_t *frames, ngx_uint_t *n);
static void ngx_http_kvroute_events_timer(ngx_event_t *ev);
static void ngx_http_kvroute_events_dropped(ngx_http_kvroute_sub_t *sub,
    ngx_http_kvroute_events_stats_t *stats, kvr_events_status_e rc);
static void ngx_http_kvroute_events_endpoint(char *dst, size_t size,
    ngx_str_t *ep, ngx_http_upstream_rr_peer_t *peer, u_char *host,
    size_t len);
static ngx_int_t ngx_http_kvroute_events_port_add(char *ep, size_t size,
    ngx_uint_t add);
static ngx_http_kvroute_override_t *ngx_http_kvroute_events_override(
    ngx_http_kvroute_srv_conf_t *kcf, ngx_http_upstream_rr_peer_t *peer);


ngx_int_t
ngx_http_kvroute_events_add_helper(ngx_conf_t *cf,
    ngx_http_kvroute_main_conf_t *kmcf)
{
    ngx_path_t  *path;

    path = ngx_pcalloc(cf->pool, sizeof(ngx_path_t));
    if (path == NULL) {
        return NGX_ERROR;
    }

    /*
     * nginx creates the directory; kvroute keeps nothing in it.  Named
     * like the "_temp" paths nginx keeps in its prefix, which tools that
     * clean a prefix (Test::Nginx among them) already remove.
     */

    ngx_str_set(&path->name, "kvroute_temp");

    if (ngx_conf_full_name(cf->cycle, &path->name, 0) != NGX_OK) {
        return NGX_ERROR;
    }

    path->manager = ngx_http_kvroute_events_manager;
    path->data = kmcf;
    path->conf_file = cf->conf_file->file.name.data;
    path->line = cf->conf_file->line;

    return ngx_add_path(cf, &path);
}


/* with master_process off: the same work on a timer of the one process */

ngx_int_t
ngx_http_kvroute_events_init_single(ngx_cycle_t *cycle,
    ngx_http_kvroute_main_conf_t *kmcf)
{
    ngx_event_t  *timer;

    if (ngx_http_kvroute_events_start(kmcf) != NGX_OK) {
        return NGX_OK;
    }

    timer = &((ngx_http_kvroute_events_t *) kmcf->events)->timer;

    timer->handler = ngx_http_kvroute_events_timer;
    timer->data = kmcf;
    timer->log = cycle->log;
    timer->cancelable = 1;

    ngx_add_timer(timer, 1);

    return NGX_OK;
}


static void
ngx_http_kvroute_events_timer(ngx_event_t *timer)
{
    ngx_msec_t  delay;

    delay = ngx_http_kvroute_events_manager(timer->data);

    if (!ngx_exiting && !ngx_terminate && !ngx_quit) {
        ngx_add_timer(timer, delay);
    }
}


static ngx_msec_t
ngx_http_kvroute_events_manager(void *data)
{
    ngx_http_kvroute_main_conf_t  *kmcf = data;

    ngx_msec_t                  delay;
    ngx_uint_t                  i, busy;
    ngx_http_kvroute_events_t  *ev;

    if (kmcf->events == NULL
        && ngx_http_kvroute_events_start(kmcf) != NGX_OK)
    {
        return 1000;
    }

    ev = kmcf->events;
    busy = 0;

    for (i = 0; i < ev->nsubs; i++) {
        busy |= ngx_http_kvroute_events_drain(ev, &ev->subs[i]);
    }

    delay = ngx_http_kvroute_scrape_tick(kmcf);

    return busy ? 1 : ngx_min(delay, NGX_HTTP_KVROUTE_EVENTS_IDLE);
}


static ngx_int_t
ngx_http_kvroute_events_start(ngx_http_kvroute_main_conf_t *kmcf)
{
    ngx_int_t                       slot;
    ngx_uint_t                      i, j, n, rank, nsubs;
    kvr_events_limits_t             limits;
    ngx_http_kvroute_events_t      *ev;
    ngx_http_kvroute_srv_conf_t    *kcf;
    ngx_http_upstream_rr_peer_t    *peer;
    ngx_http_upstream_rr_peers_t   *peers, *list;
    ngx_http_upstream_srv_conf_t  **up;

    ev = ngx_calloc(sizeof(ngx_http_kvroute_events_t), ngx_cycle->log);
    if (ev == NULL) {
        return NGX_ERROR;
    }

    up = kmcf->upstreams.elts;
    nsubs = 0;

    for (i = 0; i < kmcf->upstreams.nelts; i++) {
        kcf = ngx_http_conf_upstream_srv_conf(up[i], ngx_http_kvroute_module);

        if (kcf->mode == NGX_HTTP_KVROUTE_MODE_KV) {
            peers = up[i]->peer.data;
            n = peers->number + (peers->next ? peers->next->number : 0);
            nsubs += n * kcf->events_ranks.count;
        }
    }

    /* metrics=on alone: a helper that only scrapes */

    if (nsubs == 0) {
        kmcf->events = ev;
        return NGX_OK;
    }

    ev->subs = ngx_calloc(nsubs * sizeof(ngx_http_kvroute_sub_t),
                          ngx_cycle->log);
    ev->zmq = zmq_ctx_new();
    kvr_events_limits_default(&limits);
    ev->decoder = kvr_events_decoder_create(&limits);

    if (ev->subs == NULL || ev->zmq == NULL || ev->decoder == NULL) {
        ngx_log_error(NGX_LOG_ALERT, ngx_cycle->log, ngx_errno,
                      "kvroute: the events helper could not start");
        return NGX_ERROR;
    }

    kmcf->events = ev;

    for (i = 0; i < kmcf->upstreams.nelts; i++) {
        kcf = ngx_http_conf_upstream_srv_conf(up[i], ngx_http_kvroute_module);

        if (kcf->mode != NGX_HTTP_KVROUTE_MODE_KV) {
            continue;
        }

        peers = up[i]->peer.data;

        (void) ngx_atomic_fetch_add(&kcf->zone->sh->helper_starts, 1);

        j = 0;

        for (list = peers; list; list = list->next) {
            for (peer = list->peer; peer; peer = peer->next, j++) {
                slot = (j < kcf->runtime->nslots)
                       ? kcf->runtime->slots[j] : -1;

                if (slot < 0) {
                    continue;
                }

                for (rank = 0; rank < kcf->events_ranks.count; rank++) {
                    (void) ngx_http_kvroute_events_subscribe(ev, kcf, peer,
                                                             j, rank);
                }
            }
        }
    }

    ngx_log_error(NGX_LOG_NOTICE, ngx_cycle->log, 0,
                  "kvroute: events helper subscribed to %ui endpoints",
                  ev->nsubs);

    return NGX_OK;
}


/*
 * one rank of one server (rank: its index among the server's ranks):
 * where its events are, a socket, a fresh state, its own index slot
 */

/* a slot's offload tiers' entries, left by a previous helper; locked */

static void
ngx_http_kvroute_events_clear_tiers(ngx_http_kvroute_zone_t *zone,
    ngx_int_t slot)
{
    int         tier;
    ngx_uint_t  t;

    if (slot < 0 || slot >= NGX_HTTP_KVROUTE_MAX_PEERS) {
        return;
    }

    for (t = 0; t < 2; t++) {
        tier = zone->sh->tiers[slot][t] - 1;

        if (tier >= 0) {
            kvr_index_clear_slot(zone->sh->index, tier);
        }
    }
}


static ngx_int_t
ngx_http_kvroute_events_subscribe(ngx_http_kvroute_events_t *ev,
    ngx_http_kvroute_srv_conf_t *kcf, ngx_http_upstream_rr_peer_t *peer,
    ngx_uint_t peer_index, ngx_uint_t rank)
{
    ngx_int_t                    slot, monitored;
    ngx_http_kvroute_sub_t      *sub;
    ngx_http_kvroute_runtime_t  *rt;

    sub = &ev->subs[ev->nsubs];
    rt = kcf->runtime;

    slot = rt->nranks ? rt->rank_slots[peer_index * rt->nranks + rank]
                      : rt->slots[peer_index];

    if (slot < 0) {
        return NGX_DECLINED;
    }

    if (ngx_http_kvroute_events_where(kcf, peer, rank, sub) != NGX_OK) {
        return NGX_DECLINED;
    }

    if (ngx_http_kvroute_events_connect(ev, kcf, sub, &monitored) != NGX_OK
        || kvr_kvstate_init(&sub->state, slot, kcf->block_size,
                            NGX_HTTP_KVROUTE_EVENTS_HANDLES)
           != 0)
    {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "kvroute: cannot subscribe to \"%s\": %s",
                      sub->endpoint, zmq_strerror(zmq_errno()));

        ngx_http_kvroute_events_close(sub);
        ev->failed++;

        return NGX_ERROR;
    }

    sub->conf = kcf;
    sub->slot = slot;
    sub->server = rt->slots[peer_index];

    if (rt->nranks) {
        sub->ranks = &rt->rank_slots[peer_index * rt->nranks];
        sub->nranks = rt->nranks;
    }

    /* the prefixes its events store: the policy's counts in kv mode */
    sub->state.roots = (slot >= 0 && slot < NGX_HTTP_KVROUTE_MAX_PEERS)
                       ? &kcf->zone->sh->roots[slot] : NULL;

    /* the slots its offload tiers get, where the balancer reads them */
    sub->state.tier_slots = (slot >= 0 && slot < NGX_HTTP_KVROUTE_MAX_PEERS)
                            ? kcf->zone->sh->tiers[slot] : NULL;
    sub->state.tier_groups = (slot >= 0 && slot < NGX_HTTP_KVROUTE_MAX_PEERS)
                             ? kcf->zone->sh->tier_groups[slot] : NULL;
    sub->pred_slot = rt->pred_slots[peer_index];
    sub->state.pred_slot = sub->pred_slot;
    sub->zmq = ev->zmq;

    kvr_feed_init(&sub->feed, sub->replay_endpoint[0] != '\0');

    /*
     * what the index held from a previous helper can't be removed now;
     * with ranks, nor what the server's own slot held before them
     */

    ngx_http_kvroute_lock(kcf->zone);
    kvr_index_clear_slot(kcf->zone->sh->index, slot);
    ngx_http_kvroute_events_clear_tiers(kcf->zone, slot);

    if (rt->nranks && rank == 0) {
        kvr_index_clear_slot(kcf->zone->sh->index, sub->server);
    }

    ngx_http_kvroute_unlock(kcf->zone);

    ev->nsubs++;
    sub->wipes = kcf->zone->sh->wipes;

    /* until a replay or the stream proves otherwise, events were missed */

    ngx_http_kvroute_events_reset(sub);

    /* with a replay socket, each connection asks for what was missed */

    if (monitored != NGX_OK && sub->feed.can_replay) {
        ngx_http_kvroute_events_replay(sub, 0, 0);
    }

    return NGX_OK;
}


/*
 * The endpoints of a server's rank (its index among the server's ranks):
 * its kvroute_events line (the first rank), or events_port and
 * replay_port on its host, plus the rank as the engine numbers it (vLLM
 * and SGLang add their data-parallel rank to the port); NGX_DECLINED: none
 */

static ngx_int_t
ngx_http_kvroute_events_where(ngx_http_kvroute_srv_conf_t *kcf,
    ngx_http_upstream_rr_peer_t *peer, ngx_uint_t rank,
    ngx_http_kvroute_sub_t *sub)
{
    u_char                        host[NGX_SOCKADDR_STRLEN];
    size_t                        len;
    ngx_uint_t                    port;
    ngx_http_kvroute_override_t  *o;

    /* the entry may hold a failed subscription's */
    sub->replay_endpoint[0] = '\0';

    len = ngx_sock_ntop(peer->sockaddr, peer->socklen, host,
                        NGX_SOCKADDR_STRLEN, 0);

    port = kcf->events_port.number + kcf->events_ranks.first + rank;

    if (kcf->events_port.relative) {
        port += ngx_inet_get_port(peer->sockaddr);
    }

    ngx_snprintf((u_char *) sub->endpoint, sizeof(sub->endpoint) - 1,
                 peer->sockaddr->sa_family == AF_INET6 ? "tcp://[%*s]:%ui%Z"
                                                       : "tcp://%*s:%ui%Z",
                 len, host, port);

    /*
     * kvroute_events names this server's endpoints, the first rank's: they
     * win; the server's other ranks publish on the ports above
     */

    o = ngx_http_kvroute_events_override(kcf, peer);

    if (o == NULL && kcf->events_port.number == 0) {
        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                      "kvroute: no KV events for server %V: no "
                      "\"kvroute_events\" line names it", &peer->name);
        return NGX_DECLINED;
    }

    if (o) {
        ngx_http_kvroute_events_endpoint(sub->endpoint, sizeof(sub->endpoint),
                                         &o->endpoint, peer, host, len);

        if (ngx_http_kvroute_events_port_add(sub->endpoint,
                                             sizeof(sub->endpoint), rank)
            != NGX_OK)
        {
            ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                          "kvroute: no KV events for rank %ui of server %V: "
                          "\"%V\" has no TCP port to add the rank to",
                          kcf->events_ranks.first + rank, &peer->name,
                          &o->endpoint);
            return NGX_DECLINED;
        }

        if (o->replay.len) {
            ngx_http_kvroute_events_endpoint(sub->replay_endpoint,
                                             sizeof(sub->replay_endpoint),
                                             &o->replay, peer, host, len);

            if (ngx_http_kvroute_events_port_add(sub->replay_endpoint,
                                                 sizeof(sub->replay_endpoint),
                                                 rank)
                != NGX_OK)
            {
                sub->replay_endpoint[0] = '\0';
            }
        }

        return NGX_OK;
    }

    if (kcf->replay_port.number) {
        port = kcf->replay_port.number + kcf->events_ranks.first + rank;

        if (kcf->replay_port.relative) {
            port += ngx_inet_get_port(peer->sockaddr);
        }

        ngx_snprintf((u_char *) sub->replay_endpoint,
                     sizeof(sub->replay_endpoint) - 1,
                     peer->sockaddr->sa_family == AF_INET6
                     ? "tcp://[%*s]:%ui%Z" : "tcp://%*s:%ui%Z",
                     len, host, port);
    }

    return NGX_OK;
}


/*
 * The SUB socket, watched (*monitored) before it connects so that no
 * connection goes unseen; reconnects with backoff are libzmq's, and
 * nothing here ever blocks
 */

static ngx_int_t
ngx_http_kvroute_events_connect(ngx_http_kvroute_events_t *ev,
    ngx_http_kvroute_srv_conf_t *kcf, ngx_http_kvroute_sub_t *sub,
    ngx_int_t *monitored)
{
    int      linger, hwm, ivl, ivl_max;
    int64_t  max_msg;

    *monitored = NGX_ERROR;

    sub->socket = zmq_socket(ev->zmq, ZMQ_SUB);
    if (sub->socket == NULL) {
        return NGX_ERROR;
    }

    linger = 0;
    max_msg = NGX_HTTP_KVROUTE_EVENTS_MAX_MSG;
    hwm = 100000;
    ivl = 100;
    ivl_max = 5000;

    if (zmq_setsockopt(sub->socket, ZMQ_LINGER, &linger, sizeof(int)) != 0
        || zmq_setsockopt(sub->socket, ZMQ_MAXMSGSIZE, &max_msg,
                          sizeof(int64_t)) != 0
        || zmq_setsockopt(sub->socket, ZMQ_RCVHWM, &hwm, sizeof(int)) != 0
        || zmq_setsockopt(sub->socket, ZMQ_RECONNECT_IVL, &ivl, sizeof(int))
           != 0
        || zmq_setsockopt(sub->socket, ZMQ_RECONNECT_IVL_MAX, &ivl_max,
                          sizeof(int)) != 0
        || zmq_setsockopt(sub->socket, ZMQ_SUBSCRIBE, kcf->events_topic.data,
                          kcf->events_topic.len) != 0)
    {
        return NGX_ERROR;
    }

    *monitored = ngx_http_kvroute_events_monitor(ev, sub);

    if (*monitored != NGX_OK) {
        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                      "kvroute: cannot watch the connection to \"%s\": %s",
                      sub->endpoint, zmq_strerror(zmq_errno()));
    }

    if (zmq_connect(sub->socket, sub->endpoint) != 0) {
        return NGX_ERROR;
    }

    return NGX_OK;
}


static void
ngx_http_kvroute_events_close(ngx_http_kvroute_sub_t *sub)
{
    if (sub->monitor) {
        zmq_close(sub->monitor);
        sub->monitor = NULL;
    }

    if (sub->socket) {
        zmq_close(sub->socket);
        sub->socket = NULL;
    }
}


/*
 * An endpoint as kvroute_events names it.  The engine's bind form (a
 * host of "*", as in vLLM's default endpoint, "0.0.0.0" or "[::]") would
 * make both sides connect: the server's own host stands for it.
 */

static void
ngx_http_kvroute_events_endpoint(char *dst, size_t size, ngx_str_t *ep,
    ngx_http_upstream_rr_peer_t *peer, u_char *host, size_t len)
{
    size_t      n, i;
    ngx_str_t   rest;

    static ngx_str_t  wild[] = {
        ngx_string("tcp://*:"),
        ngx_string("tcp://0.0.0.0:"),
        ngx_string("tcp://[::]:")
    };

    for (i = 0; i < sizeof(wild) / sizeof(wild[0]); i++) {
        n = wild[i].len;

        if (ep->len > n && ngx_strncmp(ep->data, wild[i].data, n) == 0) {

            /* from the ':' before the port */
            rest.data = ep->data + n - 1;
            rest.len = ep->len - n + 1;

            ngx_snprintf((u_char *) dst, size - 1,
                         peer->sockaddr->sa_family == AF_INET6
                         ? "tcp://[%*s]%V%Z" : "tcp://%*s%V%Z",
                         len, host, &rest);

            ngx_log_error(NGX_LOG_INFO, ngx_cycle->log, 0,
                          "kvroute: \"%V\" is a bind address, connecting "
                          "to \"%s\"", ep, dst);
            return;
        }
    }

    ngx_snprintf((u_char *) dst, size - 1, "%V%Z", ep);
}


/*
 * A server's further ranks publish on the ports above its first's (vLLM
 * and SGLang add the rank to the port): "tcp://host:PORT" + add
 */

static ngx_int_t
ngx_http_kvroute_events_port_add(char *ep, size_t size, ngx_uint_t add)
{
    size_t      len;
    u_char     *colon;
    ngx_int_t   port;

    if (add == 0) {
        return NGX_OK;
    }

    len = ngx_strlen(ep);
    colon = (u_char *) ep + len;

    while (colon > (u_char *) ep && colon[-1] >= '0' && colon[-1] <= '9') {
        colon--;
    }

    if (ngx_strncmp(ep, "tcp://", 6) != 0 || colon == (u_char *) ep
        || colon[-1] != ':')
    {
        return NGX_DECLINED;
    }

    port = ngx_atoi(colon, (u_char *) ep + len - colon);

    if (port == NGX_ERROR || port + add > 65535) {
        return NGX_DECLINED;
    }

    ngx_snprintf(colon, (u_char *) ep + size - 1 - colon, "%ui%Z",
                 port + add);

    return NGX_OK;
}


/* the kvroute_events line naming a peer (by its address:port), if any */

static ngx_http_kvroute_override_t *
ngx_http_kvroute_events_override(ngx_http_kvroute_srv_conf_t *kcf,
    ngx_http_upstream_rr_peer_t *peer)
{
    ngx_uint_t                    i;
    ngx_http_kvroute_override_t  *o;

    if (kcf->events_overrides == NULL) {
        return NULL;
    }

    o = kcf->events_overrides->elts;

    for (i = 0; i < kcf->events_overrides->nelts; i++) {
        if (o[i].server.len == peer->name.len
            && ngx_strncmp(o[i].server.data, peer->name.data,
                           peer->name.len) == 0)
        {
            return &o[i];
        }
    }

    return NULL;
}


/*
 * libzmq reports the SUB socket's connections on an inproc PAIR socket;
 * a publisher that comes (back) may have sent what this helper missed.
 */

static ngx_int_t
ngx_http_kvroute_events_monitor(ngx_http_kvroute_events_t *ev,
    ngx_http_kvroute_sub_t *sub)
{
    int   linger;
    char  name[64];

    ngx_snprintf((u_char *) name, sizeof(name) - 1,
                 "inproc://kvroute-monitor-%ui%Z", ev->nsubs);

    if (zmq_socket_monitor(sub->socket, name, ZMQ_EVENT_CONNECTED) != 0) {
        return NGX_ERROR;
    }

    sub->monitor = zmq_socket(ev->zmq, ZMQ_PAIR);

    linger = 0;

    if (sub->monitor == NULL
        || zmq_setsockopt(sub->monitor, ZMQ_LINGER, &linger, sizeof(int))
           != 0
        || zmq_connect(sub->monitor, name) != 0)
    {
        if (sub->monitor) {
            zmq_close(sub->monitor);
            sub->monitor = NULL;
        }

        return NGX_ERROR;
    }

    return NGX_OK;
}


static void
ngx_http_kvroute_events_connects(ngx_http_kvroute_sub_t *sub)
{
    int                               more;
    size_t                            more_len;
    uint16_t                          event;
    ngx_uint_t                        connected;
    zmq_msg_t                         msg;
    ngx_http_kvroute_events_stats_t  *stats;

    if (sub->monitor == NULL) {
        return;
    }

    connected = 0;

    for ( ;; ) {
        event = 0;
        zmq_msg_init(&msg);

        if (zmq_msg_recv(&msg, sub->monitor, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&msg);
            break;
        }

        /* frame 1: 16-bit event and 32-bit value; frame 2: the address */

        if (zmq_msg_size(&msg) >= sizeof(uint16_t)) {
            ngx_memcpy(&event, zmq_msg_data(&msg), sizeof(uint16_t));
        }

        more = 0;
        more_len = sizeof(int);
        (void) zmq_getsockopt(sub->monitor, ZMQ_RCVMORE, &more, &more_len);
        zmq_msg_close(&msg);

        while (more) {
            zmq_msg_init(&msg);

            if (zmq_msg_recv(&msg, sub->monitor, ZMQ_DONTWAIT) < 0) {
                more = 0;

            } else {
                more_len = sizeof(int);
                (void) zmq_getsockopt(sub->monitor, ZMQ_RCVMORE, &more,
                                      &more_len);
            }

            zmq_msg_close(&msg);
        }

        if (event == ZMQ_EVENT_CONNECTED) {
            connected = 1;
            stats = &sub->conf->zone->sh->events[sub->slot];
            stats->connects++;
        }
    }

    if (connected && sub->feed.can_replay) {
        ngx_http_kvroute_events_replay(sub, 0, 0);
    }
}


/* the stream's state is forgotten: the index keeps none of it */

static void
ngx_http_kvroute_events_reset(ngx_http_kvroute_sub_t *sub)
{
    ngx_http_kvroute_zone_t  *zone;

    zone = sub->conf->zone;

    ngx_http_kvroute_lock(zone);
    kvr_kvstate_reset(&sub->state, zone->sh->index);
    ngx_http_kvroute_unlock(zone);

    ngx_http_kvroute_events_publish(sub, kvr_feed_reset(&sub->feed));
}


/*
 * The stream's index became stale or complete (kvr_feed's changes): while
 * it is stale, or, with data-parallel ranks, any of the server's ranks',
 * the server's predictions keep as much as the approximate model would.
 */

static void
ngx_http_kvroute_events_publish(ngx_http_kvroute_sub_t *sub, int changes)
{
    int                               rank;
    ngx_uint_t                        r, stale;
    ngx_http_kvroute_zone_t          *zone;
    ngx_http_kvroute_events_stats_t  *stats;

    if (changes == 0) {
        return;
    }

    zone = sub->conf->zone;
    stats = &zone->sh->events[sub->slot];

    ngx_http_kvroute_lock(zone);

    stats->stale = sub->feed.stale;

    if (changes & KVR_FEED_BECAME_STALE) {
        stats->stale_total++;
    }

    /* the server's own entry: what its predictions' size is read from */

    if (sub->ranks && sub->server >= 0) {
        stale = 0;

        for (r = 0; r < sub->nranks; r++) {
            rank = sub->ranks[r];

            if (rank >= 0 && rank < NGX_HTTP_KVROUTE_MAX_PEERS) {
                stale |= zone->sh->events[rank].stale;
            }
        }

        zone->sh->events[sub->server].stale = stale;
    }

    if (sub->pred_slot >= 0) {
        kvr_index_slot_set_capacity(zone->sh->index, sub->pred_slot,
            ngx_http_kvroute_pred_capacity(sub->conf, sub->server));
    }

    ngx_http_kvroute_unlock(zone);

    if (changes & KVR_FEED_BECAME_STALE) {
        ngx_log_error(NGX_LOG_INFO, ngx_cycle->log, 0,
                      "kvroute: the index of \"%s\" is stale, predictions "
                      "stand in", sub->endpoint);
    }

    if (changes & KVR_FEED_BECAME_COMPLETE) {
        ngx_log_error(NGX_LOG_INFO, ngx_cycle->log, 0,
                      "kvroute: the index of \"%s\" is complete again",
                      sub->endpoint);
    }
}


/* returns 1 when the budget ran out (more may be waiting) */

static ngx_uint_t
ngx_http_kvroute_events_drain(ngx_http_kvroute_events_t *ev,
    ngx_http_kvroute_sub_t *sub)
{
    ngx_uint_t          k, n, nframes;
    zmq_msg_t           msgs[NGX_HTTP_KVROUTE_EVENTS_FRAMES];
    kvr_events_frame_t  frames[NGX_HTTP_KVROUTE_EVENTS_FRAMES];

    ngx_http_kvroute_events_connects(sub);

    /* the index was started afresh (see ngx_http_kvroute_lock()) */

    if (sub->wipes != sub->conf->zone->sh->wipes) {
        sub->wipes = sub->conf->zone->sh->wipes;

        ngx_http_kvroute_events_reset(sub);

        if (sub->feed.can_replay) {
            ngx_http_kvroute_events_replay(sub, 0, 0);
        }
    }

    /* during a replay the live stream waits in its socket */

    if (sub->feed.replaying) {
        return ngx_http_kvroute_events_replayed(ev, sub);
    }

    for (k = 0; k < NGX_HTTP_KVROUTE_EVENTS_BUDGET; k++) {

        nframes = ngx_http_kvroute_events_recv(sub->socket, msgs, frames, &n);

        if (nframes == 0) {
            return 0;
        }

        /* more frames than kept: a count the frame check rejects */
        ngx_http_kvroute_events_message(ev, sub, frames, n);

        while (n) {
            zmq_msg_close(&msgs[--n]);
        }

        if (sub->feed.replaying) {
            return 1;
        }
    }

    return 1;
}


/*
 * One multipart message: the number of frames received (0: none waiting);
 * the first NGX_HTTP_KVROUTE_EVENTS_FRAMES are kept in msgs and frames,
 * their count in *n.
 */

static ngx_uint_t
ngx_http_kvroute_events_recv(void *socket, zmq_msg_t *msgs,
    kvr_events_frame_t *frames, ngx_uint_t *n)
{
    int         more;
    size_t      more_len;
    zmq_msg_t  *msg, spare;
    ngx_uint_t  nframes;

    nframes = 0;
    *n = 0;

    for ( ;; ) {

        /* frames past the kept ones go through a spare and are dropped */

        msg = (*n < NGX_HTTP_KVROUTE_EVENTS_FRAMES) ? &msgs[*n] : &spare;

        zmq_msg_init(msg);

        if (zmq_msg_recv(msg, socket, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(msg);
            break;
        }

        nframes++;

        more = 0;
        more_len = sizeof(int);
        (void) zmq_getsockopt(socket, ZMQ_RCVMORE, &more, &more_len);

        if (msg != &spare) {
            frames[*n].data = zmq_msg_data(msg);
            frames[*n].len = zmq_msg_size(msg);
            (*n)++;

        } else {
            zmq_msg_close(msg);
        }

        if (!more) {
            break;
        }
    }

    return nframes;
}


/*
 * Asks the engine's replay socket (DEALER, never REQ: the replies are
 * many) for the batches it holds from sequence from on: with keep, after
 * a gap, the index stays; otherwise (from 0) what it held for the server
 * is dropped first.
 */

static void
ngx_http_kvroute_events_replay(ngx_http_kvroute_sub_t *sub, uint64_t from,
    ngx_uint_t keep)
{
    int                       linger, hwm;
    int64_t                   max_msg;
    u_char                    seq[8];
    ngx_uint_t                i;
    ngx_http_kvroute_zone_t  *zone;

    zone = sub->conf->zone;

    /*
     * a fresh DEALER each time: replies to an earlier replay that timed
     * out must not end or mix into this one
     */

    if (sub->replay != NULL) {
        zmq_close(sub->replay);
        sub->replay = NULL;
    }

    if (sub->replay == NULL) {
        linger = 0;
        hwm = NGX_HTTP_KVROUTE_REPLAY_HWM;
        max_msg = NGX_HTTP_KVROUTE_EVENTS_MAX_MSG;

        sub->replay = zmq_socket(sub->zmq, ZMQ_DEALER);

        if (sub->replay == NULL
            || zmq_setsockopt(sub->replay, ZMQ_LINGER, &linger, sizeof(int))
               != 0
            || zmq_setsockopt(sub->replay, ZMQ_RCVHWM, &hwm, sizeof(int))
               != 0
            || zmq_setsockopt(sub->replay, ZMQ_MAXMSGSIZE, &max_msg,
                              sizeof(int64_t)) != 0
            || zmq_connect(sub->replay, sub->replay_endpoint) != 0)
        {
            ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                          "kvroute: cannot ask \"%s\" for a replay: %s",
                          sub->replay_endpoint, zmq_strerror(zmq_errno()));

            if (sub->replay) {
                zmq_close(sub->replay);
                sub->replay = NULL;
            }

            return;
        }
    }

    if (!keep) {
        ngx_http_kvroute_events_reset(sub);
    }

    for (i = 0; i < 8; i++) {
        seq[i] = (u_char) (from >> (56 - 8 * i));
    }

    /* DEALER: an empty delimiter frame, then the start sequence */

    if (zmq_send(sub->replay, "", 0, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0
        || zmq_send(sub->replay, seq, sizeof(seq), ZMQ_DONTWAIT) < 0)
    {
        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                      "kvroute: replay request to \"%s\" not sent: %s",
                      sub->replay_endpoint, zmq_strerror(zmq_errno()));
        return;
    }

    zone->sh->events[sub->slot].replays++;
    kvr_feed_asked(&sub->feed, ngx_current_msec);
}


/* replies to a replay; returns 1 while it goes on */

static ngx_uint_t
ngx_http_kvroute_events_replayed(ngx_http_kvroute_events_t *ev,
    ngx_http_kvroute_sub_t *sub)
{
    ngx_uint_t                        k, n, nframes, next;
    zmq_msg_t                         msgs[NGX_HTTP_KVROUTE_EVENTS_FRAMES];
    kvr_events_frame_t                frames[NGX_HTTP_KVROUTE_EVENTS_FRAMES];
    ngx_http_kvroute_events_stats_t  *stats;

    for (k = 0; k < NGX_HTTP_KVROUTE_EVENTS_BUDGET; k++) {

        nframes = ngx_http_kvroute_events_recv(sub->replay, msgs, frames, &n);

        if (nframes == 0) {
            break;
        }

        next = ngx_http_kvroute_events_reply(ev, sub, frames, n);

        while (n) {
            zmq_msg_close(&msgs[--n]);
        }

        if (next) {
            ngx_http_kvroute_events_replay(sub, sub->state.last_seq + 1, 1);
            return 1;
        }

        if (!sub->feed.replaying) {
            return 1;
        }
    }

    switch (kvr_feed_timeout(&sub->feed, &sub->state, ngx_current_msec)) {

    case KVR_FEED_ASK_GAP:
        ngx_http_kvroute_events_replay(sub, sub->state.last_seq + 1, 1);
        break;

    case KVR_FEED_GIVE_UP:
        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                      "kvroute: replay from \"%s\" did not end in time, "
                      "following the live stream", sub->replay_endpoint);

        stats = &sub->conf->zone->sh->events[sub->slot];
        stats->lost++;
        break;

    default:
        break;
    }

    return 1;
}


/* one reply of a replay; returns 1 when the next page is to be asked */

static ngx_uint_t
ngx_http_kvroute_events_reply(ngx_http_kvroute_events_t *ev,
    ngx_http_kvroute_sub_t *sub, kvr_events_frame_t *frames,
    ngx_uint_t nframes)
{
    kvr_events_replay_t               reply;
    ngx_http_kvroute_events_stats_t  *stats;

    stats = &sub->conf->zone->sh->events[sub->slot];

    if (kvr_events_replay_frame(frames, nframes, &reply) != KVR_EVENTS_OK) {
        stats->dropped++;
        return 0;
    }

    switch (kvr_feed_reply(&sub->feed, &sub->state, reply.end,
                           reply.msg.seq))
    {
    case KVR_FEED_ASK_GAP:
        return 1;

    case KVR_FEED_SKIP:
    case KVR_FEED_DONE:
        return 0;

    case KVR_FEED_LOST:
        stats->lost++;
        ngx_log_error(NGX_LOG_INFO, ngx_cycle->log, 0,
                      "kvroute: \"%s\" replays from %uL, not %uL: "
                      "what is between is lost",
                      sub->replay_endpoint, reply.msg.seq,
                      sub->state.last_seq + 1);

        /* fall through */

    default:
        stats->replayed++;

        (void) ngx_http_kvroute_events_batch(ev, sub, reply.msg.seq,
                                             reply.msg.payload,
                                             reply.msg.payload_len);
        return 0;
    }
}


static void
ngx_http_kvroute_events_message(ngx_http_kvroute_events_t *ev,
    ngx_http_kvroute_sub_t *sub, kvr_events_frame_t *frames,
    ngx_uint_t nframes)
{
    kvr_events_status_e               rc;
    kvr_events_message_t              msg;
    ngx_http_kvroute_zone_t          *zone;
    ngx_http_kvroute_events_stats_t  *stats;

    zone = sub->conf->zone;
    stats = &zone->sh->events[sub->slot];

    stats->messages++;
    stats->last_msec = ngx_current_msec;

    rc = kvr_events_frame(frames, nframes, &msg);

    if (rc != KVR_EVENTS_OK) {
        ngx_http_kvroute_events_dropped(sub, stats, rc);
        return;
    }

    switch (kvr_feed_live(&sub->feed, &sub->state, msg.seq,
                          ngx_current_msec))
    {
    case KVR_FEED_SKIP:
        return;

    case KVR_FEED_ASK_GAP:
        /* the index stays; this batch comes with the replay */
        stats->gaps++;
        ngx_http_kvroute_events_replay(sub, sub->state.last_seq + 1, 1);
        return;

    case KVR_FEED_ASK_ALL:
        stats->gaps++;
        ngx_http_kvroute_events_replay(sub, 0, 0);
        return;

    default:
        (void) ngx_http_kvroute_events_batch(ev, sub, msg.seq, msg.payload,
                                             msg.payload_len);
    }
}


static kvr_events_status_e
ngx_http_kvroute_events_batch(ngx_http_kvroute_events_t *ev,
    ngx_http_kvroute_sub_t *sub, uint64_t seq, const uint8_t *payload,
    size_t len)
{
    int                               restarted;
    uint64_t                          cleared;
    kvr_event_batch_t                 batch;
    kvr_events_status_e               rc;
    ngx_http_kvroute_zone_t          *zone;
    ngx_http_kvroute_events_stats_t  *stats;

    zone = sub->conf->zone;
    stats = &zone->sh->events[sub->slot];
    cleared = sub->state.stats.cleared;

    /* a batch that does not decode changes nothing, its sequence too */

    ngx_http_kvroute_lock(zone);

    rc = kvr_kvstate_batch(&sub->state, zone->sh->index, ev->decoder, seq,
                           payload, len, &batch, &restarted);

    ngx_http_kvroute_unlock(zone);

    if (rc != KVR_EVENTS_OK) {
        ngx_http_kvroute_events_dropped(sub, stats, rc);
        return rc;
    }

    ngx_http_kvroute_events_publish(sub,
        kvr_feed_applied(&sub->feed, seq, restarted,
                         sub->state.stats.cleared != cleared));

    stats->batches = sub->state.stats.batches;
    stats->stored = sub->state.stats.stored;
    stats->removed = sub->state.stats.removed;
    stats->cleared = sub->state.stats.cleared;
    stats->gaps += sub->state.stats.gaps - stats->gaps_seen;
    stats->gaps_seen = sub->state.stats.gaps;
    stats->orphans = sub->state.stats.orphans;
    stats->offloaded = sub->state.stats.offloaded;
    stats->other_group = sub->state.stats.other_group;
    stats->reannounced = sub->state.stats.reannounced;

    if (sub->state.stats.bad_block_size != stats->bad_block_size) {
        stats->bad_block_size = sub->state.stats.bad_block_size;
        stats->last_bad_block_size = sub->state.last_bad_block_size;

        if (ngx_time() - sub->logged >= 60) {
            sub->logged = ngx_time();
            ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                          "kvroute: \"%s\" publishes blocks of %uD tokens "
                          "but block_size=%ui is configured: its stores "
                          "are ignored", sub->endpoint,
                          sub->state.last_bad_block_size,
                          sub->conf->block_size);
        }
    }

    return KVR_EVENTS_OK;
}


/* a message that does not decode: counted, logged at most once a minute */

static void
ngx_http_kvroute_events_dropped(ngx_http_kvroute_sub_t *sub,
    ngx_http_kvroute_events_stats_t *stats, kvr_events_status_e rc)
{
    stats->dropped++;

    if (ngx_time() - sub->logged >= 60) {
        sub->logged = ngx_time();
        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                      "kvroute: dropped a message from \"%s\": %s",
                      sub->endpoint, kvr_events_status_name(rc));
    }
}
