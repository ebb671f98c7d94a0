/*
 * Copyright (C) kvroute developers
 *
 * One keying pipeline (interface and the modes' seeds in kvr_keys.h).
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvr_keys.h"
#include "kvr_hash.h"


/* text keys: room for this many more than the body's length in chunks */
#define KVR_KEYS_SLACK  16


static uint64_t kvr_keys_text_seed(const kvr_keys_conf_t *conf,
    const kvr_request_t *req);
static int kvr_keys_adapter(const kvr_keys_conf_t *conf, const char *model,
    size_t model_len);
static kvr_keys_status_e kvr_keys_prompt(kvr_keys_t *k,
    const kvr_keys_conf_t *conf, kvr_endpoint_e ep, int tokenize);
static void kvr_keys_tokenize(kvr_keys_t *k, const kvr_keys_conf_t *conf,
    kvr_keys_scratch_t *scratch, kvr_endpoint_e ep);
static kvr_keys_status_e kvr_keys_hash(kvr_keys_t *k,
    const kvr_keys_conf_t *conf);
static void kvr_keys_hash_piece(void *data, const char *p, size_t len);


static const char  *kvr_keys_kind_names[] = {
    "-", "text", "tokens", "ids"
};


kvr_keys_status_e
kvr_keys_make(kvr_keys_t *k, const kvr_keys_conf_t *conf,
    kvr_keys_scratch_t *scratch, kvr_endpoint_e ep, const char *body,
    size_t len)
{
    int                 tokenize;
    kvr_keys_status_e   rc;

    k->status = KVR_KEYS_BAD_REQUEST;
    k->kind = KVR_KEYS_NONE;
    k->hashes = NULL;
    k->nblocks = 0;
    k->tokens = 0;
    k->ids = NULL;
    k->n_ids = 0;
    k->rendered = NULL;
    k->rendered_len = 0;
    k->refused = NULL;
    k->refused_why[0] = '\0';

    /* the module refuses such a body before gathering it; the CLI here */
    if (len > conf->max_prompt) {
        memset(&k->req, 0, sizeof(kvr_request_t));
        k->parse = KVR_PARSE_TOO_LARGE;
        return k->status;
    }

    k->parse = kvr_request_parse_body(&k->req, body, len);

    if (k->parse != KVR_PARSE_OK) {
        return k->status;
    }

    tokenize = conf->tokenizer != NULL && scratch != NULL
               && (ep == KVR_ENDPOINT_COMPLETIONS || conf->chat != NULL);

    rc = kvr_keys_prompt(k, conf, ep, tokenize);

    if (rc != KVR_KEYS_OK || k->hashes != NULL) {
        /* failed, or keyed while rendered */
        k->status = rc;
        return rc;
    }

    if (k->ids == NULL && tokenize) {
        kvr_keys_tokenize(k, conf, scratch, ep);
    }

    k->status = kvr_keys_hash(k, conf);

    return k->status;
}


/*
 * The prompt: ids, or text.  Text keys (no tokenizing) are made while the
 * prompt is rendered, from the body's pieces, into room for about the
 * body's length; a longer rendering (many short messages) is rendered
 * again as a whole and keyed by kvr_keys_hash().
 */

static kvr_keys_status_e
kvr_keys_prompt(kvr_keys_t *k, const kvr_keys_conf_t *conf, kvr_endpoint_e ep,
    int tokenize)
{
    size_t              max_blocks;
    uint64_t           *keys;
    unsigned char      *part;
    kvr_hash_text_t     hasher;
    kvr_parse_status_e  status;

    keys = NULL;

    if (!tokenize) {
        max_blocks = k->req.root->len / conf->chunk_bytes + KVR_KEYS_SLACK;

        keys = k->alloc(k->alloc_data, max_blocks * sizeof(uint64_t));
        part = k->alloc(k->alloc_data, conf->chunk_bytes);

        if (keys == NULL || part == NULL) {
            return KVR_KEYS_NO_MEMORY;
        }

        kvr_hash_text_init(&hasher, conf->chunk_bytes,
                           kvr_keys_text_seed(conf, &k->req), keys,
                           max_blocks, part);

        status = kvr_request_prompt(&k->req, ep, conf->max_prompt,
                                    kvr_keys_hash_piece, &hasher);

        if (status == KVR_PARSE_OK && k->req.ids == NULL
            && k->req.text_len / conf->chunk_bytes > hasher.n)
        {
            keys = NULL;
            status = kvr_request_prompt(&k->req, ep, conf->max_prompt,
                                        NULL, NULL);
        }

    } else {
        status = kvr_request_prompt(&k->req, ep, conf->max_prompt, NULL,
                                    NULL);
    }

    if (status != KVR_PARSE_OK) {
        k->parse = status;
        return KVR_KEYS_BAD_REQUEST;
    }

    if (k->req.ids) {
        k->kind = KVR_KEYS_IDS;
        k->ids = k->req.ids;
        k->n_ids = k->req.n_ids;
        return KVR_KEYS_OK;
    }

    k->kind = KVR_KEYS_TEXT;
    k->tokens = k->req.text_len * conf->block_size / conf->chunk_bytes;

    if (keys != NULL) {
        if (hasher.n == 0) {
            return KVR_KEYS_SHORT;
        }

        k->hashes = keys;
        k->nblocks = hasher.n;
    }

    return KVR_KEYS_OK;
}


/*
 * The prompt's token ids into the scratch; when the template or the
 * tokenizer refuses it, k says why and the prompt keeps text keys.
 */

static void
kvr_keys_tokenize(kvr_keys_t *k, const kvr_keys_conf_t *conf,
    kvr_keys_scratch_t *scratch, kvr_endpoint_e ep)
{
    int          rc;
    size_t       len, max;
    const char  *text;

    max = conf->max_prompt + KVR_KEYS_RENDER_EXTRA;

    if (scratch->ids.max == 0) {
        kvr_ids_init(&scratch->ids, max + 16);
    }

    kvr_ids_reset(&scratch->ids);

    text = k->req.text;
    len = k->req.text_len;

    if (ep == KVR_ENDPOINT_CHAT) {
        if (scratch->rendered == NULL) {
            scratch->rendered = malloc(max);
            if (scratch->rendered == NULL) {
                k->refused = "chat template";
                snprintf(k->refused_why, sizeof(k->refused_why),
                         "out of memory");
                return;
            }

            scratch->rendered_max = max;
        }

        rc = kvr_chat_render(conf->chat, k->req.root, 0, scratch->rendered,
                             scratch->rendered_max, &len, k->refused_why,
                             sizeof(k->refused_why));

        if (rc != KVR_CHAT_OK) {
            k->refused = "chat template";
            return;
        }

        text = scratch->rendered;
        k->rendered = text;
        k->rendered_len = len;
    }

    rc = kvr_tokenizer_encode(conf->tokenizer, text, len,
                              ep == KVR_ENDPOINT_COMPLETIONS, &scratch->ids);

    if (rc != KVR_TOK_OK) {
        k->refused = "tokenizer";
        snprintf(k->refused_why, sizeof(k->refused_why), "%s",
                 kvr_tokenizer_status_name(rc));
        k->rendered = NULL;
        return;
    }

    k->kind = KVR_KEYS_TOKENS;
    k->ids = scratch->ids.ids;
    k->n_ids = scratch->ids.n;
}


/* the keys of the ids, or of the rendered text, allocated */

static kvr_keys_status_e
kvr_keys_hash(kvr_keys_t *k, const kvr_keys_conf_t *conf)
{
    size_t  max_blocks;

    if (k->ids) {
        k->tokens = k->n_ids;
        max_blocks = k->n_ids / conf->block_size;

    } else {
        max_blocks = k->req.text_len / conf->chunk_bytes;
    }

    if (max_blocks == 0) {
        return KVR_KEYS_SHORT;
    }

    k->hashes = k->alloc(k->alloc_data, max_blocks * sizeof(uint64_t));
    if (k->hashes == NULL) {
        return KVR_KEYS_NO_MEMORY;
    }

    if (k->ids) {
        k->nblocks = kvr_keys_token_blocks(conf, k->req.model,
                                           k->req.model_len,
                                           k->req.cache_salt,
                                           k->req.cache_salt_len,
                                           k->ids, k->n_ids, k->hashes,
                                           max_blocks);

    } else {
        k->nblocks = kvr_hash_text_blocks(k->req.text, k->req.text_len,
                                          conf->chunk_bytes,
                                          kvr_keys_text_seed(conf, &k->req),
                                          k->hashes, max_blocks);
    }

    return KVR_KEYS_OK;
}


/*
 * The seeds of the modes, here and in kvr_keys_token_blocks() only.
 * The model keeps models apart in the predicted index; the engines'
 * events name a block's LoRA adapter, not the model a client asked for,
 * so kv mode keys the model only when it names an adapter, and keys the
 * salt as the events do: in a chain's first block only, as its virtual
 * parent, not in every block's seed.
 */

static uint64_t
kvr_keys_text_seed(const kvr_keys_conf_t *conf, const kvr_request_t *req)
{
    if (conf->mode == KVR_KEYS_KV) {
        return kvr_hash_seed(NULL, 0, req->cache_salt, req->cache_salt_len);
    }

    return kvr_hash_seed(req->model, req->model_len, req->cache_salt,
                         req->cache_salt_len);
}


size_t
kvr_keys_token_blocks(const kvr_keys_conf_t *conf, const char *model,
    size_t model_len, const char *salt, size_t salt_len,
    const uint32_t *ids, size_t n, uint64_t *out, size_t max_out)
{
    uint64_t  seed;

    if (conf->mode == KVR_KEYS_KV) {
        if (kvr_keys_adapter(conf, model, model_len)) {
            seed = kvr_hash_seed(model, model_len, NULL, 0);

        } else {
            seed = kvr_hash_seed(NULL, 0, NULL, 0);
        }

        return kvr_hash_token_blocks_salted(ids, n, conf->block_size, seed,
                                            salt, salt_len, out, max_out);
    }

    seed = kvr_hash_seed(model, model_len, salt, salt_len);

    return kvr_hash_token_blocks(ids, n, conf->block_size, seed, out,
                                 max_out);
}


/*
 * kv: whether the request's model names a LoRA adapter (vLLM: the model
 * of a request for an adapter is the adapter's lora_name): with models=
 * (the base model's served names), any other model; without, none
 */

static int
kvr_keys_adapter(const kvr_keys_conf_t *conf, const char *model,
    size_t model_len)
{
    const char  *p, *last, *comma;

    if (conf->models_len == 0 || model == NULL || model_len == 0) {
        return 0;
    }

    p = conf->models;
    last = p + conf->models_len;

    while (p < last) {
        comma = memchr(p, ',', last - p);
        if (comma == NULL) {
            comma = last;
        }

        if ((size_t) (comma - p) == model_len
            && memcmp(p, model, model_len) == 0)
        {
            return 0;
        }

        p = comma + 1;
    }

    return 1;
}


/* a piece of the rendered prompt, keyed as it comes (kvr_request sink) */

static void
kvr_keys_hash_piece(void *data, const char *p, size_t len)
{
    kvr_hash_text_add(data, p, len);
}


void
kvr_keys_done(kvr_keys_t *k)
{
    kvr_request_free(&k->req);

    k->ids = NULL;
    k->n_ids = 0;
}


void
kvr_keys_scratch_free(kvr_keys_scratch_t *scratch)
{
    kvr_ids_free(&scratch->ids);
    scratch->ids.max = 0;

    free(scratch->rendered);
    scratch->rendered = NULL;
    scratch->rendered_max = 0;
}


const char *
kvr_keys_kind_name(kvr_keys_kind_e kind)
{
    if ((size_t) kind >= sizeof(kvr_keys_kind_names) / sizeof(char *)) {
        return "-";
    }

    return kvr_keys_kind_names[kind];
}
