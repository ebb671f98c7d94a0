/*
 * Copyright (C) kvroute developers
 *
 * Load rows: the requests, prompt tokens and uncached tokens in flight to
 * each server, one row per worker process in the shared zone.  A worker
 * writes only its own row (atomic adds, no lock); a reader sums them.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_kvroute.h"


/*
 * Each worker charges the load of its requests to a row of its own, so a
 * worker that dies takes its in-flight requests with it: the next process
 * that claims a row zeroes the rows of processes that no longer exist.
 */

void
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
