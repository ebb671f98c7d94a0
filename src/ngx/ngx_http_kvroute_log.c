/*
 * Copyright (C) kvroute developers
 *
 * What the request path tells the operator beyond its variables: info
 * lines throttled so that a burst of bad requests cannot flood the log,
 * and the clock of $kvroute_decision_us.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>
#include <time.h>

#include "ngx_http_kvroute.h"


#define NGX_HTTP_KVROUTE_LOG_INTERVAL  1    /* seconds between alike lines */


/* one kind of line: when it was last logged, how many since were not */
typedef struct {
    time_t                           last;
    ngx_uint_t                       hidden;
} ngx_http_kvroute_throttle_t;


static ngx_uint_t ngx_http_kvroute_throttled(ngx_http_kvroute_throttle_t *t);


/*
 * One line per kind per second per worker at most; the next one logged
 * says how many alike were hidden (t->hidden, then cleared by the caller).
 */

static ngx_uint_t
ngx_http_kvroute_throttled(ngx_http_kvroute_throttle_t *t)
{
    time_t  now;

    now = ngx_time();

    if (now - t->last < NGX_HTTP_KVROUTE_LOG_INTERVAL) {
        t->hidden++;
        return 1;
    }

    t->last = now;

    return 0;
}


void
ngx_http_kvroute_log_reason(ngx_http_request_t *r, ngx_uint_t reason,
    size_t body_len)
{
    static ngx_http_kvroute_throttle_t  reasons[NGX_HTTP_KVROUTE_R_LAST];

    if (ngx_http_kvroute_throttled(&reasons[reason])) {
        return;
    }

    ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                  "kvroute: balancing without prefix (%V), body %uz bytes"
                  " (%ui alike not logged)",
                  &ngx_http_kvroute_reason_names[reason], body_len,
                  reasons[reason].hidden);

    reasons[reason].hidden = 0;
}


/* a prompt that could not be tokenized keeps text keys */

void
ngx_http_kvroute_log_refused(ngx_http_request_t *r, const char *what,
    const char *why)
{
    static ngx_http_kvroute_throttle_t  refused;

    if (ngx_http_kvroute_throttled(&refused)) {
        return;
    }

    ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                  "kvroute: %s refused the prompt (%s), text keys used"
                  " (%ui alike not logged)", what, why, refused.hidden);

    refused.hidden = 0;
}


uint64_t
ngx_http_kvroute_usec(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return (uint64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}
