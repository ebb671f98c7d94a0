/*
 * Copyright (C) kvroute developers
 *
 * Variables for log_format: what kvroute decided for a request and why.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_kvroute.h"


/* $kvroute_block_keys lists this many keys at most, then "..." */
#define NGX_HTTP_KVROUTE_VAR_MAX_KEYS  128


static ngx_int_t ngx_http_kvroute_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_kvroute_block_keys(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, ngx_http_kvroute_ctx_t *ctx);
static ngx_int_t ngx_http_kvroute_dp_rank(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);


ngx_str_t  ngx_http_kvroute_reason_names[] = {
    ngx_string("-"),
    ngx_string("not-inference"),
    ngx_string("no-body"),
    ngx_string("content-type"),
    ngx_string("not-json"),
    ngx_string("invalid-utf8"),
    ngx_string("not-object"),
    ngx_string("no-prompt"),
    ngx_string("empty-prompt"),
    ngx_string("too-large"),
    ngx_string("no-memory"),
    ngx_string("short"),
    ngx_string("overlap"),
    ngx_string("home"),
    ngx_string("load"),
    ngx_string("cost"),
    ngx_string("fallback"),
    ngx_string("round-robin"),
    ngx_string("random"),
    ngx_null_string
};


enum {
    NGX_HTTP_KVROUTE_VAR_SERVER = 0,
    NGX_HTTP_KVROUTE_VAR_REASON,
    NGX_HTTP_KVROUTE_VAR_OVERLAP,
    NGX_HTTP_KVROUTE_VAR_BLOCKS,
    NGX_HTTP_KVROUTE_VAR_TOKENS,
    NGX_HTTP_KVROUTE_VAR_USEC,
    NGX_HTTP_KVROUTE_VAR_KEYS,
    NGX_HTTP_KVROUTE_VAR_BLOCK_KEYS
};


static ngx_http_variable_t  ngx_http_kvroute_vars[] = {

    { ngx_string("kvroute_server"), NULL, ngx_http_kvroute_variable,
      NGX_HTTP_KVROUTE_VAR_SERVER, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("kvroute_reason"), NULL, ngx_http_kvroute_variable,
      NGX_HTTP_KVROUTE_VAR_REASON, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("kvroute_overlap"), NULL, ngx_http_kvroute_variable,
      NGX_HTTP_KVROUTE_VAR_OVERLAP, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("kvroute_blocks"), NULL, ngx_http_kvroute_variable,
      NGX_HTTP_KVROUTE_VAR_BLOCKS, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("kvroute_tokens"), NULL, ngx_http_kvroute_variable,
      NGX_HTTP_KVROUTE_VAR_TOKENS, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("kvroute_decision_us"), NULL, ngx_http_kvroute_variable,
      NGX_HTTP_KVROUTE_VAR_USEC, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("kvroute_keys"), NULL, ngx_http_kvroute_variable,
      NGX_HTTP_KVROUTE_VAR_KEYS, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("kvroute_block_keys"), NULL, ngx_http_kvroute_variable,
      NGX_HTTP_KVROUTE_VAR_BLOCK_KEYS, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("kvroute_dp_rank"), NULL, ngx_http_kvroute_dp_rank,
      0, NGX_HTTP_VAR_NOCACHEABLE, 0 },

      ngx_http_null_variable
};


ngx_int_t
ngx_http_kvroute_add_variables(ngx_conf_t *cf)
{
    ngx_http_variable_t  *var, *v;

    for (v = ngx_http_kvroute_vars; v->name.len; v++) {
        var = ngx_http_add_variable(cf, &v->name, v->flags);
        if (var == NULL) {
            return NGX_ERROR;
        }

        var->get_handler = v->get_handler;
        var->data = v->data;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_kvroute_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    u_char                  *p;
    uint64_t                 number;
    ngx_str_t               *s, kind;
    ngx_http_kvroute_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_kvroute_module);

    if (ctx == NULL || !ctx->analyzed) {
        v->not_found = 1;
        return NGX_OK;
    }

    switch (data) {

    case NGX_HTTP_KVROUTE_VAR_SERVER:
        s = &ctx->server;

        if (s->len == 0) {
            v->not_found = 1;
            return NGX_OK;
        }

        goto string;

    case NGX_HTTP_KVROUTE_VAR_REASON:
        s = &ngx_http_kvroute_reason_names[ctx->reason];
        goto string;

    case NGX_HTTP_KVROUTE_VAR_KEYS:
        kind.data = (u_char *) kvr_keys_kind_name(ctx->keys);
        kind.len = ngx_strlen(kind.data);
        s = &kind;
        goto string;

    case NGX_HTTP_KVROUTE_VAR_BLOCK_KEYS:
        return ngx_http_kvroute_block_keys(r, v, ctx);

    case NGX_HTTP_KVROUTE_VAR_OVERLAP:
        number = ctx->overlap;
        break;

    case NGX_HTTP_KVROUTE_VAR_BLOCKS:
        number = ctx->nblocks;
        break;

    case NGX_HTTP_KVROUTE_VAR_TOKENS:
        number = ctx->tokens;
        break;

    default: /* NGX_HTTP_KVROUTE_VAR_USEC */
        number = ctx->decision_usec;
        break;
    }

    p = ngx_pnalloc(r->pool, NGX_INT64_LEN);
    if (p == NULL) {
        return NGX_ERROR;
    }

    v->len = ngx_sprintf(p, "%uL", number) - p;
    v->data = p;
    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;

    return NGX_OK;

string:

    v->len = s->len;
    v->data = s->data;
    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;

    return NGX_OK;
}


/*
 * The data-parallel rank chosen on the server (its index among the
 * server's ranks, as X-data-parallel-rank wants it); empty without ranks
 * to choose from or a choice.  Asked for before the balancer has run (by
 * proxy_set_header, as the upstream request is created), it makes the
 * choice then (ngx_http_kvroute_predecide()), once.
 */

static ngx_int_t
ngx_http_kvroute_dp_rank(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_http_kvroute_ctx_t  *ctx;

    ctx = ngx_http_kvroute_get_ctx(r);
    if (ctx == NULL) {
        return NGX_ERROR;
    }

    if (!ctx->pre_done && ctx->server.len == 0) {
        ctx->pre_done = 1;
        ngx_http_kvroute_predecide(r, ctx);
    }

    if (!ctx->has_dp_rank) {
        v->not_found = 1;
        return NGX_OK;
    }

    v->len = ngx_sprintf(ctx->dp_rank_text, "%ui", ctx->dp_rank)
             - ctx->dp_rank_text;
    v->data = ctx->dp_rank_text;
    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;

    return NGX_OK;
}


/* the block keys in hex, comma separated, as kvroute-tokenize prints them */

static ngx_int_t
ngx_http_kvroute_block_keys(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, ngx_http_kvroute_ctx_t *ctx)
{
    u_char      *p;
    ngx_uint_t   i, n;

    n = ngx_min(ctx->nblocks, NGX_HTTP_KVROUTE_VAR_MAX_KEYS);

    if (ctx->hashes == NULL || n == 0) {
        v->len = 1;
        v->data = (u_char *) "-";
        goto done;
    }

    p = ngx_pnalloc(r->pool, n * (16 + 1) + sizeof("...") - 1);
    if (p == NULL) {
        return NGX_ERROR;
    }

    v->data = p;

    for (i = 0; i < n; i++) {
        p = ngx_sprintf(p, i ? ",%016xL" : "%016xL", ctx->hashes[i]);
    }

    if (ctx->nblocks > n) {
        p = ngx_cpymem(p, "...", sizeof("...") - 1);
    }

    v->len = p - v->data;

done:

    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;

    return NGX_OK;
}
