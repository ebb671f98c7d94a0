/*
 * Copyright (C) kvroute developers
 *
 * Request side: makes sure the whole body has been read before the
 * upstream phase (a precontent handler, as the mirror module does), then
 * hands it to the keying pipeline (kvr_keys.h) once per request.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_kvroute.h"
#include "kvr_keys.h"


/* a body in several buffers is gathered into a kept buffer up to this */
#define NGX_HTTP_KVROUTE_BODY_KEEP     (256 * 1024)
#define NGX_HTTP_KVROUTE_BODY_ROUND    (16 * 1024)


static void ngx_http_kvroute_body_handler(ngx_http_request_t *r);
static ngx_int_t ngx_http_kvroute_endpoint(ngx_http_request_t *r);
static ngx_uint_t ngx_http_kvroute_json_type(ngx_http_request_t *r);
static ngx_int_t ngx_http_kvroute_body_bytes(ngx_http_request_t *r,
    size_t max, u_char **data, size_t *len);
static void ngx_http_kvroute_keys_conf(ngx_http_kvroute_srv_conf_t *kcf,
    kvr_keys_conf_t *conf);
static void *ngx_http_kvroute_alloc(void *pool, size_t size);


static u_char  *ngx_http_kvroute_body_kept;
static size_t   ngx_http_kvroute_body_kept_size;


static ngx_uint_t  ngx_http_kvroute_parse_reasons[] = {
    NGX_HTTP_KVROUTE_R_NONE,             /* KVR_PARSE_OK */
    NGX_HTTP_KVROUTE_R_NOT_JSON,
    NGX_HTTP_KVROUTE_R_INVALID_UTF8,
    NGX_HTTP_KVROUTE_R_NOT_OBJECT,
    NGX_HTTP_KVROUTE_R_NO_PROMPT,
    NGX_HTTP_KVROUTE_R_EMPTY_PROMPT,
    NGX_HTTP_KVROUTE_R_TOO_LARGE,
    NGX_HTTP_KVROUTE_R_NO_MEMORY
};


ngx_http_kvroute_ctx_t *
ngx_http_kvroute_get_ctx(ngx_http_request_t *r)
{
    ngx_http_kvroute_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_kvroute_module);

    if (ctx == NULL) {
        ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_kvroute_ctx_t));
        if (ctx == NULL) {
            return NULL;
        }

        ngx_http_set_ctx(r, ctx, ngx_http_kvroute_module);
    }

    return ctx;
}


/*
 * Reads the whole body of inference requests before the content phase, so
 * the balancer sees it complete even with proxy_request_buffering off or
 * HTTP/2.  proxy's own read then finds it already there.
 */

ngx_int_t
ngx_http_kvroute_precontent_handler(ngx_http_request_t *r)
{
    ngx_int_t                     rc;
    ngx_http_kvroute_ctx_t       *ctx;
    ngx_http_kvroute_loc_conf_t  *klcf;

    if (r != r->main || r->method != NGX_HTTP_POST) {
        return NGX_DECLINED;
    }

    klcf = ngx_http_get_module_loc_conf(r, ngx_http_kvroute_module);

    if (!klcf->read_body || ngx_http_kvroute_endpoint(r) == -1) {
        return NGX_DECLINED;
    }

    ctx = ngx_http_get_module_ctx(r, ngx_http_kvroute_module);

    if (ctx && ctx->body_ready) {
        return NGX_DECLINED;
    }

    if (ctx && ctx->body_waiting) {
        return NGX_DONE;
    }

    ctx = ngx_http_kvroute_get_ctx(r);
    if (ctx == NULL) {
        return NGX_ERROR;
    }

    ctx->body_waiting = 1;

    rc = ngx_http_read_client_request_body(r, ngx_http_kvroute_body_handler);

    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
        return rc;
    }

    ngx_http_finalize_request(r, NGX_DONE);

    return NGX_DONE;
}


static void
ngx_http_kvroute_body_handler(ngx_http_request_t *r)
{
    ngx_http_kvroute_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_kvroute_module);

    ctx->body_waiting = 0;
    ctx->body_ready = 1;

    r->preserve_body = 1;

    r->write_event_handler = ngx_http_core_run_phases;
    ngx_http_core_run_phases(r);
}


/*
 * Turns the request into block keys, once per request (retries reuse it).
 * Anything unusable leaves ctx->hashes NULL with the reason set: the
 * balancer then balances as nginx would.
 */

void
ngx_http_kvroute_analyze(ngx_http_request_t *r,
    ngx_http_kvroute_srv_conf_t *kcf, ngx_http_kvroute_ctx_t *ctx)
{
    u_char           *body;
    size_t            len;
    ngx_int_t         endpoint, rc;
    kvr_keys_t        keys;
    kvr_keys_conf_t   conf;

    ctx->analyzed = 1;
    ctx->start_usec = ngx_http_kvroute_usec();

    if (kcf->mode == NGX_HTTP_KVROUTE_MODE_RANDOM
        || kcf->mode == NGX_HTTP_KVROUTE_MODE_ROUND_ROBIN)
    {
        ctx->reason = (kcf->mode == NGX_HTTP_KVROUTE_MODE_RANDOM)
                      ? NGX_HTTP_KVROUTE_R_RANDOM
                      : NGX_HTTP_KVROUTE_R_ROUND_ROBIN;
    }

    endpoint = ngx_http_kvroute_endpoint(r);

    if (r->method != NGX_HTTP_POST || endpoint == -1) {
        if (kcf->mode == NGX_HTTP_KVROUTE_MODE_APPROX
            || kcf->mode == NGX_HTTP_KVROUTE_MODE_KV)
        {
            ctx->reason = NGX_HTTP_KVROUTE_R_NOT_INFERENCE;
        }

        return;
    }

    if (!ngx_http_kvroute_json_type(r)) {
        ctx->reason = NGX_HTTP_KVROUTE_R_CONTENT_TYPE;
        ngx_http_kvroute_log_reason(r, ctx->reason, 0);
        return;
    }

    rc = ngx_http_kvroute_body_bytes(r, kcf->max_body, &body, &len);

    if (rc != NGX_OK) {
        ctx->reason = (rc == NGX_DECLINED) ? NGX_HTTP_KVROUTE_R_TOO_LARGE
                                           : NGX_HTTP_KVROUTE_R_NO_BODY;
        ngx_http_kvroute_log_reason(r, ctx->reason, len);
        return;
    }

    ngx_http_kvroute_keys_conf(kcf, &conf);

    keys.alloc = ngx_http_kvroute_alloc;
    keys.alloc_data = r->pool;

    switch (kvr_keys_make(&keys, &conf, &kcf->runtime->keys_scratch,
                          endpoint, (char *) body, len))
    {
    case KVR_KEYS_OK:
        ctx->hashes = keys.hashes;
        ctx->nblocks = keys.nblocks;
        ctx->first_block = keys.hashes[0];
        break;

    case KVR_KEYS_BAD_REQUEST:
        ctx->reason = ngx_http_kvroute_parse_reasons[keys.parse];
        ngx_http_kvroute_log_reason(r, ctx->reason, len);
        break;

    case KVR_KEYS_SHORT:
        ctx->reason = NGX_HTTP_KVROUTE_R_SHORT;
        break;

    default: /* KVR_KEYS_NO_MEMORY */
        ctx->reason = NGX_HTTP_KVROUTE_R_NO_MEMORY;
        break;
    }

    ctx->keys = keys.kind;
    ctx->tokens = keys.tokens;
    ctx->max_tokens = keys.req.max_tokens;

    if (keys.refused) {
        ngx_http_kvroute_log_refused(r, keys.refused, keys.refused_why);
    }

    kvr_keys_done(&keys);
}


/* the upstream's keying settings, as kvr_keys takes them */

static void
ngx_http_kvroute_keys_conf(ngx_http_kvroute_srv_conf_t *kcf,
    kvr_keys_conf_t *conf)
{
    conf->mode = (kcf->mode == NGX_HTTP_KVROUTE_MODE_KV) ? KVR_KEYS_KV
                                                         : KVR_KEYS_APPROX;
    conf->block_size = kcf->block_size;
    conf->chunk_bytes = kcf->chunk_bytes;
    conf->max_prompt = kcf->max_body;
    conf->tokenizer = kcf->tokenizer;
    conf->chat = kcf->chat;
    conf->models = (const char *) kcf->models.data;
    conf->models_len = kcf->models.len;
}


static void *
ngx_http_kvroute_alloc(void *pool, size_t size)
{
    return ngx_palloc(pool, size);
}


static ngx_int_t
ngx_http_kvroute_endpoint(ngx_http_request_t *r)
{
    return kvr_endpoint_from_path((char *) r->uri.data, r->uri.len);
}


/*
 * Engines parse the body as JSON when Content-Type is absent or names
 * JSON (application/json, application/x+json, ...); anything else they
 * reject, so kvroute does not guess either.
 */

static ngx_uint_t
ngx_http_kvroute_json_type(ngx_http_request_t *r)
{
    u_char           *p, *last;
    ngx_table_elt_t  *h;

    h = r->headers_in.content_type;

    if (h == NULL) {
        return 1;
    }

    last = h->value.data + h->value.len;

    /* the 'j' first: a call a position costs more than the whole test */

    for (p = h->value.data; p < last && *p != ';'; p++) {
        if ((*p | 0x20) == 'j' && last - p >= 4
            && ngx_strncasecmp(p, (u_char *) "json", 4) == 0)
        {
            return 1;
        }
    }

    return 0;
}


/*
 * The body as one contiguous run of bytes: in place when it is a single
 * memory buffer, else copied from its buffers and temp file.  NGX_DECLINED
 * when it is larger than max, NGX_ERROR when absent or still being read.
 */

static ngx_int_t
ngx_http_kvroute_body_bytes(ngx_http_request_t *r, size_t max,
    u_char **data, size_t *len)
{
    u_char       *p;
    off_t         total;
    size_t        size;
    ssize_t       n;
    ngx_buf_t    *b;
    ngx_chain_t  *cl;

    *len = 0;

    if (r->request_body == NULL || r->request_body->bufs == NULL
        || r->reading_body || r->request_body_no_buffering)
    {
        return NGX_ERROR;
    }

    total = 0;

    for (cl = r->request_body->bufs; cl; cl = cl->next) {
        b = cl->buf;
        total += b->in_file ? b->file_last - b->file_pos : b->last - b->pos;
    }

    *len = total;

    if (total == 0) {
        return NGX_ERROR;
    }

    if ((size_t) total > max) {
        return NGX_DECLINED;
    }

    cl = r->request_body->bufs;

    if (cl->next == NULL && !cl->buf->in_file) {
        *data = cl->buf->pos;
        return NGX_OK;
    }

    /*
     * the gathered body is only read while the request is analyzed: one
     * buffer per process serves every request up to a size
     */

    if ((size_t) total <= NGX_HTTP_KVROUTE_BODY_KEEP) {

        if ((size_t) total > ngx_http_kvroute_body_kept_size) {
            ngx_free(ngx_http_kvroute_body_kept);
            ngx_http_kvroute_body_kept_size = 0;

            size = ngx_align((size_t) total, NGX_HTTP_KVROUTE_BODY_ROUND);

            ngx_http_kvroute_body_kept = ngx_alloc(size, r->connection->log);
            if (ngx_http_kvroute_body_kept == NULL) {
                return NGX_ERROR;
            }

            ngx_http_kvroute_body_kept_size = size;
        }

        p = ngx_http_kvroute_body_kept;

    } else {
        p = ngx_pnalloc(r->pool, total);
        if (p == NULL) {
            return NGX_ERROR;
        }
    }

    *data = p;

    for ( /* void */ ; cl; cl = cl->next) {
        b = cl->buf;

        if (!b->in_file) {
            /* the empty last buf of a chunked body has pos == NULL */
            if (b->last != b->pos) {
                p = ngx_cpymem(p, b->pos, b->last - b->pos);
            }
            continue;
        }

        n = ngx_read_file(b->file, p, b->file_last - b->file_pos,
                          b->file_pos);

        if (n != b->file_last - b->file_pos) {
            return NGX_ERROR;
        }

        p += n;
    }

    return NGX_OK;
}
