/*
 * Copyright (C) kvroute developers
 *
 * metrics=on: the events helper scrapes each server's engine, an HTTP/1.0
 * GET of http://<server address>:<port><metrics_path> every
 * metrics_interval, on non-blocking sockets polled at each of its ticks:
 * nothing waits.  A reply is read in pieces through a fixed buffer (a
 * line longer than it, or a reply longer than SCRAPE_MAX, fails), each
 * piece's whole lines parsed as they come (kvr_prom_feed).  What a scrape
 * found, and this frontend's own load on the server when the request
 * went out, are written to the zone for the balancer
 * (ngx_http_kvroute_engine_load.c); a failure is written too, with its
 * reason, and logged when it starts or changes and once a minute while
 * it lasts.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>
#include <poll.h>

#include "ngx_http_kvroute.h"
#include "kvr_prom.h"
#include "kvr_http_reply.h"


#define NGX_HTTP_KVROUTE_SCRAPE_BUF   (64 * 1024)          /* longest line */
#define NGX_HTTP_KVROUTE_SCRAPE_MAX   (16 * 1024 * 1024)   /* a reply */
#define NGX_HTTP_KVROUTE_SCRAPE_READS 64        /* per target and tick */
#define NGX_HTTP_KVROUTE_SCRAPE_IDLE  10        /* ms between ticks */
#define NGX_HTTP_KVROUTE_SCRAPE_BUSY  2


typedef struct {
    ngx_http_kvroute_srv_conf_t    *conf;
    ngx_int_t                       slot;
    ngx_str_t                       name;        /* the peer's */
    ngx_sockaddr_t                  sockaddr;    /* with the metrics port */
    socklen_t                       socklen;
    u_char                         *request;
    size_t                          request_len;
    size_t                          sent;
    ngx_socket_t                    fd;          /* -1: between scrapes */
    ngx_uint_t                      connected;
    ngx_msec_t                      started;
    ngx_msec_t                      sent_msec;   /* the request went out */
    ngx_msec_t                      next;        /* the next one starts */
    u_char                         *buf;
    size_t                          used;        /* bytes held in buf */
    size_t                          total;       /* bytes of the reply */
    ngx_uint_t                      head;        /* its head was read */
    ngx_uint_t                      status;      /* its HTTP status */
    kvr_prom_load_t                 prom;
    kvr_engine_load_t               own;         /* when it went out */
    ngx_uint_t                      logged_failure;
    time_t                          logged;
} ngx_http_kvroute_scrape_t;


typedef struct {
    ngx_http_kvroute_scrape_t      *targets;
    ngx_uint_t                      n;
    struct pollfd                  *pfds;
    ngx_uint_t                     *polled;      /* target of each pfd */
} ngx_http_kvroute_scrapes_t;


static ngx_int_t ngx_http_kvroute_scrape_start(
    ngx_http_kvroute_main_conf_t *kmcf);
static ngx_int_t ngx_http_kvroute_scrape_target(
    ngx_http_kvroute_scrape_t *t, ngx_http_kvroute_srv_conf_t *kcf,
    ngx_http_upstream_rr_peer_t *peer, ngx_int_t slot);
static void ngx_http_kvroute_scrape_begin(ngx_http_kvroute_scrape_t *t);
static void ngx_http_kvroute_scrape_step(ngx_http_kvroute_scrape_t *t,
    short revents);
static void ngx_http_kvroute_scrape_sent(ngx_http_kvroute_scrape_t *t);
static void ngx_http_kvroute_scrape_read(ngx_http_kvroute_scrape_t *t);
static ngx_uint_t ngx_http_kvroute_scrape_consume(
    ngx_http_kvroute_scrape_t *t);
static void ngx_http_kvroute_scrape_end(ngx_http_kvroute_scrape_t *t,
    ngx_uint_t failure, ngx_err_t err);
static void ngx_http_kvroute_scrape_log(ngx_http_kvroute_scrape_t *t,
    ngx_uint_t failure, ngx_err_t err);


/* one tick of the helper: returns the ms until the next one is due */

ngx_msec_t
ngx_http_kvroute_scrape_tick(ngx_http_kvroute_main_conf_t *kmcf)
{
    ngx_int_t                    rc;
    ngx_uint_t                   i, n, busy;
    ngx_msec_t                   now, timeout;
    ngx_http_kvroute_scrape_t   *t;
    ngx_http_kvroute_scrapes_t  *sc;

    if (kmcf->scrape == NULL
        && ngx_http_kvroute_scrape_start(kmcf) != NGX_OK)
    {
        return 1000;
    }

    sc = kmcf->scrape;
    now = ngx_current_msec;
    n = 0;
    busy = 0;

    for (i = 0; i < sc->n; i++) {
        t = &sc->targets[i];

        if (t->fd == (ngx_socket_t) -1) {
            if ((ngx_msec_int_t) (now - t->next) < 0) {
                continue;
            }

            ngx_http_kvroute_scrape_begin(t);

            if (t->fd == (ngx_socket_t) -1) {
                continue;
            }
        }

        /* twice the interval: a scrape that old is no news any more */
        timeout = 2 * t->conf->metrics_interval;

        if ((ngx_msec_int_t) (now - t->started) > (ngx_msec_int_t) timeout) {
            ngx_http_kvroute_scrape_end(t, NGX_HTTP_KVROUTE_SCRAPE_TIMEOUT,
                                        0);
            continue;
        }

        sc->pfds[n].fd = t->fd;
        sc->pfds[n].events = (t->connected && t->sent == t->request_len)
                             ? POLLIN : POLLOUT;
        sc->pfds[n].revents = 0;
        sc->polled[n] = i;
        n++;
    }

    if (n == 0) {
        return NGX_HTTP_KVROUTE_SCRAPE_IDLE;
    }

    rc = poll(sc->pfds, n, 0);

    if (rc == -1) {
        return NGX_HTTP_KVROUTE_SCRAPE_BUSY;
    }

    for (i = 0; i < n; i++) {
        t = &sc->targets[sc->polled[i]];

        if (sc->pfds[i].revents) {
            ngx_http_kvroute_scrape_step(t, sc->pfds[i].revents);
        }

        busy |= (t->fd != (ngx_socket_t) -1);
    }

    return busy ? NGX_HTTP_KVROUTE_SCRAPE_BUSY
                : NGX_HTTP_KVROUTE_SCRAPE_IDLE;
}


/* a target for every server of every upstream with metrics=on */

static ngx_int_t
ngx_http_kvroute_scrape_start(ngx_http_kvroute_main_conf_t *kmcf)
{
    ngx_int_t                       slot;
    ngx_uint_t                      i, j, n, k;
    ngx_http_kvroute_scrapes_t     *sc;
    ngx_http_kvroute_srv_conf_t    *kcf;
    ngx_http_upstream_rr_peer_t    *peer;
    ngx_http_upstream_rr_peers_t   *peers, *list;
    ngx_http_upstream_srv_conf_t  **up;

    sc = ngx_calloc(sizeof(ngx_http_kvroute_scrapes_t), ngx_cycle->log);
    if (sc == NULL) {
        return NGX_ERROR;
    }

    up = kmcf->upstreams.elts;
    n = 0;

    for (i = 0; i < kmcf->upstreams.nelts; i++) {
        kcf = ngx_http_conf_upstream_srv_conf(up[i], ngx_http_kvroute_module);

        if (kcf->metrics) {
            peers = up[i]->peer.data;
            n += peers->number + (peers->next ? peers->next->number : 0);
        }
    }

    kmcf->scrape = sc;

    if (n == 0) {
        return NGX_OK;
    }

    sc->targets = ngx_calloc(n * sizeof(ngx_http_kvroute_scrape_t),
                             ngx_cycle->log);
    sc->pfds = ngx_calloc(n * sizeof(struct pollfd), ngx_cycle->log);
    sc->polled = ngx_calloc(n * sizeof(ngx_uint_t), ngx_cycle->log);

    if (sc->targets == NULL || sc->pfds == NULL || sc->polled == NULL) {
        sc->n = 0;
        return NGX_OK;
    }

    for (i = 0; i < kmcf->upstreams.nelts; i++) {
        kcf = ngx_http_conf_upstream_srv_conf(up[i], ngx_http_kvroute_module);

        if (!kcf->metrics) {
            continue;
        }

        peers = up[i]->peer.data;
        j = 0;
        k = sc->n;

        for (list = peers; list; list = list->next) {
            for (peer = list->peer; peer; peer = peer->next, j++) {
                slot = (j < kcf->runtime->nslots)
                       ? kcf->runtime->slots[j] : -1;

                if (slot >= 0
                    && ngx_http_kvroute_scrape_target(&sc->targets[sc->n],
                                                      kcf, peer, slot)
                       == NGX_OK)
                {
                    sc->n++;
                }
            }
        }

        /* spread the upstream's first scrapes over an interval */

        for (j = k; j < sc->n; j++) {
            sc->targets[j].next = ngx_current_msec
                                  + kcf->metrics_interval * (j - k)
                                    / (sc->n - k);
        }
    }

    ngx_log_error(NGX_LOG_NOTICE, ngx_cycle->log, 0,
                  "kvroute: events helper scrapes the metrics of %ui servers",
                  sc->n);

    return NGX_OK;
}


static ngx_int_t
ngx_http_kvroute_scrape_target(ngx_http_kvroute_scrape_t *t,
    ngx_http_kvroute_srv_conf_t *kcf, ngx_http_upstream_rr_peer_t *peer,
    ngx_int_t slot)
{
    u_char      host[NGX_SOCKADDR_STRLEN];
    size_t      len;
    in_port_t   port;

    if (peer->socklen > sizeof(ngx_sockaddr_t)) {
        return NGX_DECLINED;
    }

    t->conf = kcf;
    t->slot = slot;
    t->name = peer->name;
    t->fd = (ngx_socket_t) -1;
    t->socklen = peer->socklen;
    ngx_memcpy(&t->sockaddr, peer->sockaddr, peer->socklen);

    port = ngx_inet_get_port(peer->sockaddr);

    if (kcf->metrics_port.number) {
        port = kcf->metrics_port.number
               + (kcf->metrics_port.relative ? port : 0);
    }

    ngx_inet_set_port(&t->sockaddr.sockaddr, port);

    len = ngx_sock_ntop(&t->sockaddr.sockaddr, t->socklen, host,
                        NGX_SOCKADDR_STRLEN, 1);

    t->request_len = sizeof("GET  HTTP/1.0\r\nHost: \r\n"
                            "User-Agent: kvroute\r\nAccept: text/plain\r\n"
                            "Connection: close\r\n\r\n") - 1
                     + kcf->metrics_path.len + len;

    t->request = ngx_alloc(t->request_len, ngx_cycle->log);
    t->buf = ngx_alloc(NGX_HTTP_KVROUTE_SCRAPE_BUF, ngx_cycle->log);

    if (t->request == NULL || t->buf == NULL) {
        return NGX_ERROR;
    }

    (void) ngx_sprintf(t->request, "GET %V HTTP/1.0\r\nHost: %*s\r\n"
                       "User-Agent: kvroute\r\nAccept: text/plain\r\n"
                       "Connection: close\r\n\r\n",
                       &kcf->metrics_path, len, host);

    return NGX_OK;
}


static void
ngx_http_kvroute_scrape_begin(ngx_http_kvroute_scrape_t *t)
{
    ngx_err_t     err;
    ngx_socket_t  fd;

    t->started = ngx_current_msec;
    t->next = t->started + t->conf->metrics_interval;
    t->connected = 0;
    t->sent = 0;
    t->used = 0;
    t->total = 0;
    t->head = 0;
    t->status = 0;
    kvr_prom_init(&t->prom);

    fd = ngx_socket(t->sockaddr.sockaddr.sa_family, SOCK_STREAM, 0);

    if (fd == (ngx_socket_t) -1) {
        ngx_http_kvroute_scrape_end(t, NGX_HTTP_KVROUTE_SCRAPE_CONNECT,
                                    ngx_socket_errno);
        return;
    }

    t->fd = fd;

    if (ngx_nonblocking(fd) == -1) {
        ngx_http_kvroute_scrape_end(t, NGX_HTTP_KVROUTE_SCRAPE_CONNECT,
                                    ngx_socket_errno);
        return;
    }

    if (connect(fd, &t->sockaddr.sockaddr, t->socklen) == -1) {
        err = ngx_socket_errno;

        if (err != NGX_EINPROGRESS) {
            ngx_http_kvroute_scrape_end(t, NGX_HTTP_KVROUTE_SCRAPE_CONNECT,
                                        err);
        }

        return;
    }

    t->connected = 1;
}


/* what poll() said of a scrape under way: connected, sendable, readable */

static void
ngx_http_kvroute_scrape_step(ngx_http_kvroute_scrape_t *t, short revents)
{
    int        err;
    ssize_t    n;
    socklen_t  len;

    if (!t->connected) {
        err = 0;
        len = sizeof(int);

        if (getsockopt(t->fd, SOL_SOCKET, SO_ERROR, (void *) &err, &len)
            == -1)
        {
            err = ngx_socket_errno;
        }

        if (err) {
            ngx_http_kvroute_scrape_end(t, NGX_HTTP_KVROUTE_SCRAPE_CONNECT,
                                        err);
            return;
        }

        t->connected = 1;
    }

    if (t->sent < t->request_len) {
        n = send(t->fd, t->request + t->sent, t->request_len - t->sent, 0);

        if (n == -1) {
            err = ngx_socket_errno;

            if (err != NGX_EAGAIN && err != NGX_EINTR) {
                ngx_http_kvroute_scrape_end(t, NGX_HTTP_KVROUTE_SCRAPE_IO,
                                            err);
            }

            return;
        }

        t->sent += n;

        if (t->sent == t->request_len) {
            ngx_http_kvroute_scrape_sent(t);
        }

        return;
    }

    if (revents & (POLLIN | POLLHUP | POLLERR)) {
        ngx_http_kvroute_scrape_read(t);
    }
}


/* the own load now, the engine's a moment later: both at the same time */

static void
ngx_http_kvroute_scrape_sent(ngx_http_kvroute_scrape_t *t)
{
    uint64_t                  requests, tokens, prefill;
    ngx_http_kvroute_zone_t  *zone;

    zone = t->conf->zone;
    t->sent_msec = ngx_current_msec;

    ngx_http_kvroute_load(zone, t->slot, &requests, &tokens, &prefill);

    t->own.own_requests = (requests > NGX_MAX_UINT32_VALUE)
                          ? NGX_MAX_UINT32_VALUE : (uint32_t) requests;
    t->own.own_pinned = 0;

    if (t->conf->policy.policy == KVR_POLICY_TTFT) {
        ngx_http_kvroute_lock(zone);
        t->own.own_pinned = kvr_pins_count(zone->sh->pins, t->slot);
        ngx_http_kvroute_unlock(zone);
    }
}


/* as much of the reply as there is, up to SCRAPE_READS pieces a tick */

static void
ngx_http_kvroute_scrape_read(ngx_http_kvroute_scrape_t *t)
{
    ssize_t     n;
    ngx_err_t   err;
    ngx_uint_t  i, failure;

    for (i = 0; i < NGX_HTTP_KVROUTE_SCRAPE_READS; i++) {

        if (t->used == NGX_HTTP_KVROUTE_SCRAPE_BUF) {
            /* a head or a line longer than the buffer */
            ngx_http_kvroute_scrape_end(t, NGX_HTTP_KVROUTE_SCRAPE_TOO_LARGE,
                                        0);
            return;
        }

        n = recv(t->fd, t->buf + t->used, NGX_HTTP_KVROUTE_SCRAPE_BUF - t->used,
                 0);

        if (n == -1) {
            err = ngx_socket_errno;

            if (err == NGX_EAGAIN || err == NGX_EINTR) {
                return;
            }

            ngx_http_kvroute_scrape_end(t, NGX_HTTP_KVROUTE_SCRAPE_IO, err);
            return;
        }

        if (n == 0) {
            /* HTTP/1.0: the close ends the body */

            if (!t->head) {
                failure = NGX_HTTP_KVROUTE_SCRAPE_CLOSED;

            } else if (kvr_prom_done(&t->prom) != 0) {
                failure = NGX_HTTP_KVROUTE_SCRAPE_NO_METRICS;

            } else {
                failure = NGX_HTTP_KVROUTE_SCRAPE_OK;
            }

            ngx_http_kvroute_scrape_end(t, failure, 0);
            return;
        }

        t->used += n;
        t->total += n;

        if (t->total > NGX_HTTP_KVROUTE_SCRAPE_MAX) {
            ngx_http_kvroute_scrape_end(t, NGX_HTTP_KVROUTE_SCRAPE_TOO_LARGE,
                                        0);
            return;
        }

        failure = ngx_http_kvroute_scrape_consume(t);

        if (failure != NGX_HTTP_KVROUTE_SCRAPE_OK) {
            ngx_http_kvroute_scrape_end(t, failure, 0);
            return;
        }
    }
}


/* the head once, then the body's whole lines; the rest moves to the front */

static ngx_uint_t
ngx_http_kvroute_scrape_consume(ngx_http_kvroute_scrape_t *t)
{
    u_char            *p;
    size_t             len, n;
    kvr_http_reply_t   reply;

    p = t->buf;
    len = t->used;

    if (!t->head) {
        switch (kvr_http_reply_head((char *) p, len, &reply)) {

        case KVR_HTTP_REPLY_AGAIN:
            return NGX_HTTP_KVROUTE_SCRAPE_OK;

        case KVR_HTTP_REPLY_BAD:
            return NGX_HTTP_KVROUTE_SCRAPE_NOT_HTTP;

        case KVR_HTTP_REPLY_CHUNKED:
            return NGX_HTTP_KVROUTE_SCRAPE_CHUNKED;

        default: /* KVR_HTTP_REPLY_OK */
            break;
        }

        t->head = 1;
        t->status = reply.status;

        if (reply.status != 200) {
            return NGX_HTTP_KVROUTE_SCRAPE_STATUS;
        }

        p += reply.body;
        len -= reply.body;
    }

    n = kvr_prom_feed((char *) p, len, &t->prom);

    if (n < len) {
        ngx_memmove(t->buf, p + n, len - n);
    }

    t->used = len - n;

    return NGX_HTTP_KVROUTE_SCRAPE_OK;
}


/* a scrape is over: the zone learns what it found, or why it failed */

static void
ngx_http_kvroute_scrape_end(ngx_http_kvroute_scrape_t *t, ngx_uint_t failure,
    ngx_err_t err)
{
    ngx_http_kvroute_zone_t          *zone;
    ngx_http_kvroute_engine_stats_t  *e;

    if (t->fd != (ngx_socket_t) -1) {
        (void) ngx_close_socket(t->fd);
        t->fd = (ngx_socket_t) -1;
    }

    zone = t->conf->zone;
    e = &zone->sh->engines[t->slot];

    ngx_http_kvroute_lock(zone);

    e->scrapes++;
    e->failure = failure;

    if (failure == NGX_HTTP_KVROUTE_SCRAPE_OK) {
        e->ok_msec = t->sent_msec;
        e->load.running = t->prom.running;
        e->load.waiting = t->prom.waiting;
        e->load.usage = (t->prom.found & KVR_PROM_USAGE)
                        ? t->prom.usage : KVR_ENGINE_NO_USAGE;
        e->load.own_requests = t->own.own_requests;
        e->load.own_pinned = t->own.own_pinned;

        if (t->prom.found & KVR_PROM_ITL) {
            kvr_engine_load_itl(&e->load, t->prom.itl_sum, t->prom.itl_count);
        }

    } else {
        e->failures++;
    }

    ngx_http_kvroute_unlock(zone);

    ngx_http_kvroute_scrape_log(t, failure, err);
}


/* a failure when it starts or changes, and once a minute while it lasts */

static void
ngx_http_kvroute_scrape_log(ngx_http_kvroute_scrape_t *t, ngx_uint_t failure,
    ngx_err_t err)
{
    if (failure == NGX_HTTP_KVROUTE_SCRAPE_OK) {
        if (t->logged_failure != NGX_HTTP_KVROUTE_SCRAPE_OK) {
            ngx_log_error(NGX_LOG_NOTICE, ngx_cycle->log, 0,
                          "kvroute: the metrics of server %V are read "
                          "again: its load is its engine's", &t->name);
            t->logged_failure = NGX_HTTP_KVROUTE_SCRAPE_OK;
        }

        return;
    }

    if (failure == t->logged_failure && ngx_time() - t->logged < 60) {
        return;
    }

    t->logged_failure = failure;
    t->logged = ngx_time();

    if (failure == NGX_HTTP_KVROUTE_SCRAPE_STATUS) {
        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                      "kvroute: cannot read the metrics of server %V at "
                      "\"%V\": status %ui, its load is this frontend's own "
                      "requests until a scrape succeeds", &t->name,
                      &t->conf->metrics_path, t->status);
        return;
    }

    ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, err,
                  "kvroute: cannot read the metrics of server %V at "
                  "\"%V\": %V, its load is this frontend's own requests "
                  "until a scrape succeeds", &t->name,
                  &t->conf->metrics_path,
                  &ngx_http_kvroute_scrape_reasons[failure]);
}
