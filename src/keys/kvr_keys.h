/*
 * Copyright (C) kvroute developers
 *
 * One keying pipeline: a request body to its block keys, for every mode.
 * The module's balancer and kvroute-tokenize both call it, so the tool
 * prints the keys the index holds.  Plain C, no nginx types.
 *
 * The body is parsed (kvr_request), its prompt keyed by
 *   - the client's token ids, when it sent ids;
 *   - the prompt's tokens, when a tokenizer is given (a chat request also
 *     needs a chat template): a completions prompt tokenized as vLLM does,
 *     special tokens added; a chat request rendered with its template, no
 *     special tokens added (the template writes them);
 *   - else text chunks of the canonical rendering (kvr_request.h), also
 *     when the tokenizer or the template refuses the prompt.
 * Seeds, decided in one place (kvr_keys.c: kvr_keys_text_seed(),
 * kvr_keys_token_blocks()):
 *   - approx: the model and cache_salt seed every key;
 *   - kv: keys as the engines' KV events key blocks: token keys seeded by
 *     the model only when it names a LoRA adapter (a model not among
 *     models=, when given), the salt as the chain's virtual parent
 *     (kvr_hash_salt_root()); text keys (which events never match)
 *     seeded by the salt alone.
 */

#ifndef _KVR_KEYS_H_INCLUDED_
#define _KVR_KEYS_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "kvr_request.h"
#include "kvr_tokenizer.h"
#include "kvr_chat.h"


/* a chat template adds markup: room beyond max_prompt for its render */
#define KVR_KEYS_RENDER_EXTRA  (64 * 1024)


typedef enum {
    KVR_KEYS_APPROX = 0,       /* blocks predicted from routes */
    KVR_KEYS_KV                /* blocks the engines' events announce */
} kvr_keys_mode_e;


/* what the keys were made of */
typedef enum {
    KVR_KEYS_NONE = 0,
    KVR_KEYS_TEXT,             /* text chunks */
    KVR_KEYS_TOKENS,           /* the prompt tokenized here */
    KVR_KEYS_IDS               /* token ids sent by the client */
} kvr_keys_kind_e;


typedef enum {
    KVR_KEYS_OK = 0,           /* hashes holds nblocks >= 1 keys */
    KVR_KEYS_BAD_REQUEST,      /* the body is unusable: parse says why */
    KVR_KEYS_SHORT,            /* the prompt fills no block */
    KVR_KEYS_NO_MEMORY
} kvr_keys_status_e;


typedef struct {
    kvr_keys_mode_e             mode;
    size_t                      block_size;    /* tokens a block */
    size_t                      chunk_bytes;   /* bytes a text chunk */
    size_t                      max_prompt;    /* rendered prompt, bytes */

    kvr_tokenizer_t            *tokenizer;     /* NULL: no token keys */
    const kvr_chat_config_t    *chat;          /* NULL: chat keyed by text */

    /* kv: the base model's served names, comma separated; NULL if none */
    const char                 *models;
    size_t                      models_len;
} kvr_keys_conf_t;


/*
 * Buffers reused from one request to the next (one per process and
 * configuration): the token ids and the chat template's rendering.
 * Zeroed before first use; sized by kvr_keys_make() from max_prompt.
 */
typedef struct {
    kvr_ids_t                   ids;
    char                       *rendered;
    size_t                      rendered_max;
} kvr_keys_scratch_t;


/* allocates the keys, which outlive kvr_keys_done(); NULL when out */
typedef void *(*kvr_keys_alloc_pt)(void *data, size_t size);


typedef struct {
    /* set by the caller */
    kvr_keys_alloc_pt           alloc;
    void                       *alloc_data;

    /* set by kvr_keys_make() */
    kvr_keys_status_e           status;
    kvr_parse_status_e          parse;        /* KVR_KEYS_BAD_REQUEST: why */
    kvr_keys_kind_e             kind;
    uint64_t                   *hashes;
    size_t                      nblocks;
    size_t                      tokens;       /* estimated for text keys */

    /*
     * until kvr_keys_done() (and the scratch's next use): the ids keyed
     * (token and ids keys), and a chat template's rendering
     */
    const uint32_t             *ids;
    size_t                      n_ids;
    const char                 *rendered;
    size_t                      rendered_len;

    /* the tokenizer or template refused the prompt: text keys instead */
    const char                 *refused;      /* "tokenizer", ...; or NULL */
    char                        refused_why[128];

    kvr_request_t               req;
} kvr_keys_t;


/*
 * The keys of body (len bytes) sent to endpoint ep.  k->alloc must be
 * set; the rest of k is filled.  Returns k->status.  kvr_keys_done()
 * must follow, whatever the status.
 */
kvr_keys_status_e kvr_keys_make(kvr_keys_t *k, const kvr_keys_conf_t *conf,
    kvr_keys_scratch_t *scratch, kvr_endpoint_e ep, const char *body,
    size_t len);

void kvr_keys_done(kvr_keys_t *k);

/*
 * Token keys of ids as conf's mode keys them, for a request of this model
 * and cache_salt (either NULL when absent).  Writes at most max_out.
 */
size_t kvr_keys_token_blocks(const kvr_keys_conf_t *conf, const char *model,
    size_t model_len, const char *salt, size_t salt_len,
    const uint32_t *ids, size_t n, uint64_t *out, size_t max_out);

void kvr_keys_scratch_free(kvr_keys_scratch_t *scratch);

/* short names for logs, variables and the CLI: "text", "ids", ... */
const char *kvr_keys_kind_name(kvr_keys_kind_e kind);


#endif /* _KVR_KEYS_H_INCLUDED_ */
