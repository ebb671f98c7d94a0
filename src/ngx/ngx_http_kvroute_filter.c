/*
 * Copyright (C) kvroute developers
 *
 * A response body filter that marks the first bytes of an upstream
 * response kvroute routed: the engine has prefilled its prompt by then
 * (a stream's first token comes with them), so the balancer stops
 * counting that prefill against the server.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_kvroute.h"


static ngx_int_t ngx_http_kvroute_body_filter(ngx_http_request_t *r,
    ngx_chain_t *in);


static ngx_http_output_body_filter_pt  ngx_http_next_body_filter;


ngx_int_t
ngx_http_kvroute_filter_init(ngx_conf_t *cf)
{
    ngx_http_next_body_filter = ngx_http_top_body_filter;
    ngx_http_top_body_filter = ngx_http_kvroute_body_filter;

    return NGX_OK;
}


static ngx_int_t
ngx_http_kvroute_body_filter(ngx_http_request_t *r, ngx_chain_t *in)
{
    ngx_chain_t             *cl;
    ngx_http_kvroute_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_kvroute_module);

    if (ctx == NULL || ctx->charge == NULL || r->upstream == NULL) {
        return ngx_http_next_body_filter(r, in);
    }

    for (cl = in; cl; cl = cl->next) {
        if (ngx_buf_size(cl->buf) > 0) {
            ngx_http_kvroute_first_bytes(ctx);

            /* once is enough: later bodies pass straight on */
            ctx->charge = NULL;
            break;
        }
    }

    return ngx_http_next_body_filter(r, in);
}
