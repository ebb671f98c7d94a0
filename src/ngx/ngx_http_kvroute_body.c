/*
 * Copyright (C) kvroute developers
 *
 * Request side: makes sure the whole body has been read before the
 * upstream phase (a precontent handler, as the mirror module does), then
 * turns it into block keys once per request.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>
#include <time.h>

#include "ngx_http_kvroute.h"
#include "kvr_request.h"
#include "kvr_hash.h"


#define NGX_HTTP_KVROUTE_LOG_INTERVAL  1    /* seconds between alike lines */

/* a body in several buffers is gathered into a kept buffer up to this */
#define NGX_HTTP_KVROUTE_BODY_KEEP     (256 * 1024)
#define NGX_HTTP_KVROUTE_BODY_ROUND    (16 * 1024)

/* text keys: room for this many more than the body's length in chunks */
#define NGX_HTTP_KVROUTE_KEYS_SLACK    16


static void ngx_http_kvroute_body_handler(ngx_http_request_t *r);
static ngx_int_t ngx_http_kvroute_endpoint(ngx_http_request_t *r);
static ngx_uint_t ngx_http_kvroute_adapter(ngx_http_kvroute_srv_conf_t *kcf,
    kvr_request_t *req);
static ngx_uint_t ngx_http_kvroute_json_type(ngx_http_request_t *r);
static ngx_int_t ngx_http_kvroute_body_bytes(ngx_http_request_t *r,
    size_t max, u_char **data, size_t *len);
static void ngx_http_kvroute_log_reason(ngx_http_request_t *r,
    ngx_uint_t reason, size_t body_len);
static ngx_int_t ngx_http_kvroute_tokenize(ngx_http_request_t *r,
    ngx_http_kvroute_srv_conf_t *kcf, kvr_request_t *req,
    ngx_int_t endpoint);
static void ngx_http_kvroute_free_scratch(void *data);
static void ngx_http_kvroute_log_tokenizer(ngx_http_request_t *r,
    const char *what, const char *why);
static void ngx_http_kvroute_hash_piece(void *data, const char *p,
    size_t len);


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
    u_char              *body, *part;
    size_t               len, max_blocks, n_ids;
    uint32_t            *ids;
    uint64_t             seed, ids_seed, *keys;
    ngx_int_t            endpoint, rc;
    ngx_uint_t           tokenize, kv;
    kvr_request_t        req;
    kvr_hash_text_t      hasher;
    kvr_parse_status_e   status;

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

    status = kvr_request_parse_body(&req, (char *) body, len);

    if (status != KVR_PARSE_OK) {
        ctx->reason = ngx_http_kvroute_parse_reasons[status];
        ngx_http_kvroute_log_reason(r, ctx->reason, len);
        kvr_request_free(&req);
        return;
    }

    /*
     * the model keeps models apart in the predicted index; the engines'
     * events name a block's LoRA adapter, not the model a client asked
     * for, so kv mode keys the model only when it names an adapter (none
     * of models=), and keys token ids as the events key them: the salt,
     * which engines name in a chain's first block only, as its virtual
     * parent (kvr_hash_token_blocks_salted()), not in every block's seed
     */

    kv = (kcf->mode == NGX_HTTP_KVROUTE_MODE_KV);

    if (kv) {
        seed = kvr_hash_seed(NULL, 0, req.cache_salt, req.cache_salt_len);

        if (ngx_http_kvroute_adapter(kcf, &req)) {
            ids_seed = kvr_hash_seed(req.model, req.model_len, NULL, 0);

        } else {
            ids_seed = kvr_hash_seed(NULL, 0, NULL, 0);
        }

    } else {
        seed = kvr_hash_seed(req.model, req.model_len, req.cache_salt,
                             req.cache_salt_len);
        ids_seed = seed;
    }

    tokenize = kcf->tokenizer
               && (endpoint == KVR_ENDPOINT_COMPLETIONS || kcf->chat);

    /*
     * text keys straight from the body's pieces, without a rendered copy,
     * into room for about the body's length; a longer rendering (many
     * short messages) is rendered again and keyed as a whole below
     */

    keys = NULL;

    if (!tokenize) {
        max_blocks = len / kcf->chunk_bytes + NGX_HTTP_KVROUTE_KEYS_SLACK;

        keys = ngx_palloc(r->pool, max_blocks * sizeof(uint64_t));
        part = ngx_pnalloc(r->pool, kcf->chunk_bytes);

        if (keys == NULL || part == NULL) {
            ctx->reason = NGX_HTTP_KVROUTE_R_NO_MEMORY;
            kvr_request_free(&req);
            return;
        }

        kvr_hash_text_init(&hasher, kcf->chunk_bytes, seed, keys, max_blocks,
                           part);

        status = kvr_request_prompt(&req, endpoint, kcf->max_body,
                                    ngx_http_kvroute_hash_piece, &hasher);

        if (status == KVR_PARSE_OK && req.ids == NULL
            && req.text_len / kcf->chunk_bytes > hasher.n)
        {
            keys = NULL;
            status = kvr_request_prompt(&req, endpoint, kcf->max_body,
                                        NULL, NULL);
        }

    } else {
        status = kvr_request_prompt(&req, endpoint, kcf->max_body, NULL,
                                    NULL);
    }

    if (status != KVR_PARSE_OK) {
        ctx->reason = ngx_http_kvroute_parse_reasons[status];
        ngx_http_kvroute_log_reason(r, ctx->reason, len);
        kvr_request_free(&req);
        return;
    }

    ids = req.ids;
    n_ids = req.n_ids;
    ctx->keys = ids ? NGX_HTTP_KVROUTE_KEYS_IDS : NGX_HTTP_KVROUTE_KEYS_TEXT;

    /*
     * with a tokenizer, the prompt is what vLLM tokenizes: a completions
     * prompt as given, special tokens added; a chat request rendered with
     * the model's chat template, no special tokens added (the template
     * writes them)
     */

    if (ids == NULL && tokenize) {
        if (ngx_http_kvroute_tokenize(r, kcf, &req, endpoint) == NGX_OK) {
            ids = kcf->ids.ids;
            n_ids = kcf->ids.n;
            ctx->keys = NGX_HTTP_KVROUTE_KEYS_TOKENS;
        }
    }

    if (ids) {
        ctx->tokens = n_ids;
        max_blocks = n_ids / kcf->block_size;

    } else {
        /* about 4 bytes of text per token, as text chunks assume */
        ctx->tokens = req.text_len * kcf->block_size / kcf->chunk_bytes;
        max_blocks = req.text_len / kcf->chunk_bytes;
    }

    if (max_blocks == 0) {
        ctx->reason = NGX_HTTP_KVROUTE_R_SHORT;
        kvr_request_free(&req);
        return;
    }

    if (ids == NULL && keys != NULL) {
        /* keyed while rendered */
        ctx->hashes = keys;
        ctx->nblocks = hasher.n;
        ctx->first_block = keys[0];
        kvr_request_free(&req);
        return;
    }

    ctx->hashes = ngx_palloc(r->pool, max_blocks * sizeof(uint64_t));
    if (ctx->hashes == NULL) {
        ctx->reason = NGX_HTTP_KVROUTE_R_NO_MEMORY;
        kvr_request_free(&req);
        return;
    }

    if (ids && kv) {
        ctx->nblocks = kvr_hash_token_blocks_salted(ids, n_ids,
                                                    kcf->block_size, ids_seed,
                                                    req.cache_salt,
                                                    req.cache_salt_len,
                                                    ctx->hashes, max_blocks);

    } else if (ids) {
        ctx->nblocks = kvr_hash_token_blocks(ids, n_ids, kcf->block_size,
                                             seed, ctx->hashes, max_blocks);
    } else {
        ctx->nblocks = kvr_hash_text_blocks(req.text, req.text_len,
                                            kcf->chunk_bytes, seed,
                                            ctx->hashes, max_blocks);
    }

    kvr_request_free(&req);

    ctx->first_block = ctx->hashes[0];
}


/*
 * mode=kv: whether the request's model names a LoRA adapter (vLLM: the
 * model of a request for an adapter is the adapter's lora_name): with
 * models= (the base model's served names), any other model
 */

static ngx_uint_t
ngx_http_kvroute_adapter(ngx_http_kvroute_srv_conf_t *kcf,
    kvr_request_t *req)
{
    u_char  *p, *last, *comma;

    if (kcf->models.len == 0 || req->model == NULL || req->model_len == 0) {
        return 0;
    }

    p = kcf->models.data;
    last = p + kcf->models.len;

    while (p < last) {
        comma = ngx_strlchr(p, last, ',');
        if (comma == NULL) {
            comma = last;
        }

        if ((size_t) (comma - p) == req->model_len
            && ngx_strncmp(p, req->model, req->model_len) == 0)
        {
            return 0;
        }

        p = comma + 1;
    }

    return 1;
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


/*
 * One line per reason per second per worker at most; a burst of bad
 * requests is summarised by the count it hid.
 */

static void
ngx_http_kvroute_log_reason(ngx_http_request_t *r, ngx_uint_t reason,
    size_t body_len)
{
    static time_t      last[NGX_HTTP_KVROUTE_R_LAST];
    static ngx_uint_t  hidden[NGX_HTTP_KVROUTE_R_LAST];

    time_t  now;

    now = ngx_time();

    if (now - last[reason] < NGX_HTTP_KVROUTE_LOG_INTERVAL) {
        hidden[reason]++;
        return;
    }

    last[reason] = now;

    ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                  "kvroute: balancing without prefix (%V), body %uz bytes"
                  " (%ui alike not logged)",
                  &ngx_http_kvroute_reason_names[reason], body_len,
                  hidden[reason]);

    hidden[reason] = 0;
}


/*
 * The prompt's token ids into kcf->ids (per process scratch, reused), or
 * NGX_DECLINED with the reason logged: the request then keeps text keys.
 */

static ngx_int_t
ngx_http_kvroute_tokenize(ngx_http_request_t *r,
    ngx_http_kvroute_srv_conf_t *kcf, kvr_request_t *req, ngx_int_t endpoint)
{
    int                  rc;
    char                 err[128];
    size_t               len, max;
    const char          *text;
    ngx_pool_cleanup_t  *cln;

    max = kcf->max_body + NGX_HTTP_KVROUTE_RENDER_EXTRA;

    if (kcf->ids.max == 0) {

        /* per process scratch, freed with the cycle (single process reload) */

        cln = ngx_pool_cleanup_add(ngx_cycle->pool, 0);
        if (cln == NULL) {
            return NGX_DECLINED;
        }

        cln->handler = ngx_http_kvroute_free_scratch;
        cln->data = kcf;

        kvr_ids_init(&kcf->ids, max + 16);
    }

    kvr_ids_reset(&kcf->ids);

    text = req->text;
    len = req->text_len;

    if (endpoint == KVR_ENDPOINT_CHAT) {
        if (kcf->rendered == NULL) {
            kcf->rendered = ngx_alloc(max, ngx_cycle->log);
            if (kcf->rendered == NULL) {
                return NGX_DECLINED;
            }
        }

        err[0] = '\0';

        rc = kvr_chat_render(kcf->chat, req->root, 0, kcf->rendered, max,
                             &len, err, sizeof(err));

        if (rc != KVR_CHAT_OK) {
            ngx_http_kvroute_log_tokenizer(r, "chat template", err);
            return NGX_DECLINED;
        }

        text = kcf->rendered;
    }

    rc = kvr_tokenizer_encode(kcf->tokenizer, text, len,
                              endpoint == KVR_ENDPOINT_COMPLETIONS,
                              &kcf->ids);

    if (rc != KVR_TOK_OK) {
        ngx_http_kvroute_log_tokenizer(r, "tokenizer",
                                       kvr_tokenizer_status_name(rc));
        return NGX_DECLINED;
    }

    return NGX_OK;
}


static void
ngx_http_kvroute_free_scratch(void *data)
{
    ngx_http_kvroute_srv_conf_t  *kcf = data;

    kvr_ids_free(&kcf->ids);
    kcf->ids.max = 0;

    if (kcf->rendered) {
        ngx_free(kcf->rendered);
        kcf->rendered = NULL;
    }
}


/* a piece of the rendered prompt, keyed as it comes (kvr_request sink) */

static void
ngx_http_kvroute_hash_piece(void *data, const char *p, size_t len)
{
    kvr_hash_text_add(data, p, len);
}


/* a prompt that could not be tokenized keeps text keys; said once a second */

static void
ngx_http_kvroute_log_tokenizer(ngx_http_request_t *r, const char *what,
    const char *why)
{
    static time_t      last;
    static ngx_uint_t  hidden;

    time_t  now;

    now = ngx_time();

    if (now - last < NGX_HTTP_KVROUTE_LOG_INTERVAL) {
        hidden++;
        return;
    }

    last = now;

    ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                  "kvroute: %s refused the prompt (%s), text keys used"
                  " (%ui alike not logged)", what, why, hidden);

    hidden = 0;
}


uint64_t
ngx_http_kvroute_usec(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return (uint64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}
