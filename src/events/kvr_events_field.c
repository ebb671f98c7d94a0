/*
 * Copyright (C) kvroute developers
 *
 * The values of an event's fields (kvr_events.h says which forms are
 * accepted): hashes, token ids (ints or SGLang's bigram pairs), ints and
 * strs or nil, SGLang's metadata map, vLLM's extra_keys.  A value of the
 * wrong form marks its field bad; kvr_events.c decides what that makes of
 * the event.  Also the helpers both halves use: skipping a value, and
 * growing the decoder's arrays.
 */

#include <stdlib.h>
#include <string.h>

#include "kvr_events.h"
#include "kvr_msgpack.h"
#include "kvr_events_int.h"


/*
 * Token ids by first byte: the bytes taken (0: not an int that can hold
 * a u32), the right shift that leaves the value of the 8 bytes after the
 * first one, and the largest value allowed (a signed type's sign bit
 * must be clear, and nothing above UINT32_MAX).
 */
static const uint8_t  kvr_tok_len[256] = {
    [0x00 ... 0x7f] = 1,
    [0xcc] = 2, [0xcd] = 3, [0xce] = 5, [0xcf] = 9,
    [0xd0] = 2, [0xd1] = 3, [0xd2] = 5, [0xd3] = 9
};

static const uint8_t  kvr_tok_shift[256] = {
    [0xcc] = 56, [0xcd] = 48, [0xce] = 32, [0xcf] = 0,
    [0xd0] = 56, [0xd1] = 48, [0xd2] = 32, [0xd3] = 0
};

static const uint64_t  kvr_tok_max[256] = {
    [0x00 ... 0x7f] = 0x7f,
    [0xcc] = 0xff, [0xcd] = 0xffff, [0xce] = 0xffffffff,
    [0xcf] = 0xffffffff,
    [0xd0] = 0x7f, [0xd1] = 0x7fff, [0xd2] = 0x7fffffff,
    [0xd3] = 0xffffffff
};


static const uint8_t *kvr_events_hashes(kvr_events_ctx_t *ctx,
    const uint8_t *p, const uint8_t *end);
static const uint8_t *kvr_events_hash(const uint8_t *p, const uint8_t *end,
    uint64_t *hash);
static const uint8_t *kvr_events_tokens(kvr_events_ctx_t *ctx,
    const uint8_t *p, const uint8_t *end);
static const uint8_t *kvr_events_bigrams(kvr_events_ctx_t *ctx,
    const uint8_t *p, const uint8_t *end, uint32_t n, uint32_t *tokens);
static const uint8_t *kvr_events_meta(kvr_events_ctx_t *ctx,
    const uint8_t *p, const uint8_t *end);
static uint64_t kvr_events_digest(const uint8_t *p, const uint8_t *end);
static const uint8_t *kvr_events_int(const uint8_t *p, const uint8_t *end,
    int64_t *value, unsigned *has);


/* decodes one field value; a bad one is marked and skipped */
const uint8_t *
kvr_events_field(kvr_events_ctx_t *ctx, kvr_events_field_e field,
    const uint8_t *p, const uint8_t *end)
{
    unsigned              has;
    kvr_mp_t              v;
    kvr_event_t          *ev;
    const uint8_t        *q;

    ev = ctx->ev;

    switch (field) {

    case KVR_F_HASHES:
        q = kvr_events_hashes(ctx, p, end);
        break;

    case KVR_F_PARENT:
        if (p < end && *p == 0xc0) {
            ev->has_parent = 0;
            q = p + 1;
            break;
        }

        q = kvr_events_hash(p, end, &ev->parent);
        ev->has_parent = (q != NULL);
        break;

    case KVR_F_TOKENS:
        q = kvr_events_tokens(ctx, p, end);
        break;

    case KVR_F_BLOCK_SIZE:
        q = kvr_mp_next(p, end, &v);
        if (q == NULL || v.type != KVR_MP_UINT || v.n == 0
            || v.n > UINT32_MAX)
        {
            q = NULL;
            break;
        }

        ev->block_size = (uint32_t) v.n;
        break;

    case KVR_F_LORA_ID:
        q = kvr_events_int(p, end, &ev->lora_id, &has);
        ev->has_lora_id = has;
        break;

    case KVR_F_GROUP_IDX:
        q = kvr_events_int(p, end, &ev->group_idx, &has);
        ev->has_group_idx = has;
        break;

    case KVR_F_MEDIUM:
        q = kvr_events_str(p, end, &ev->medium, &ev->medium_len);
        break;

    case KVR_F_LORA_NAME:
        q = kvr_events_str(p, end, &ev->lora_name, &ev->lora_name_len);
        break;

    case KVR_F_SPEC_KIND:
        q = kvr_events_str(p, end, &ev->spec_kind, &ev->spec_kind_len);
        break;

    case KVR_F_SALT:
        q = kvr_events_str(p, end, &ev->cache_salt, &ev->cache_salt_len);
        break;

    case KVR_F_EXTRA:
        ctx->extra = NULL;

        if (p < end && *p == 0xc0) {
            q = p + 1;
            break;
        }

        q = kvr_mp_next(p, end, &v);
        if (q == NULL || v.type != KVR_MP_ARRAY) {
            q = NULL;
            break;
        }

        /* read once all fields are known (kvr_events_extra) */
        q = kvr_events_skip(p, end, ctx->depth, &ctx->err);
        if (q != NULL) {
            ctx->extra = p;
            ctx->extra_end = q;
        }

        break;

    case KVR_F_LORA_OR_META:
        /* SGLang's BlockStoredWithMetadata has a map where vLLM has a str */
        if (p < end && ((*p & 0xf0) == 0x80 || *p == 0xde || *p == 0xdf)) {
            q = kvr_events_meta(ctx, p, end);

        } else {
            q = kvr_events_str(p, end, &ev->lora_name, &ev->lora_name_len);
        }

        break;

    default:
        return kvr_events_skip(p, end, ctx->depth, &ctx->err);
    }

    if (q != NULL) {
        ctx->seen |= KVR_BIT(field);
        return q;
    }

    if (ctx->err != KVR_EVENTS_OK) {
        return NULL;
    }

    /* skipping checks the grammar of what the decoder did not read */
    ctx->bad |= KVR_BIT(field);

    return kvr_events_skip(p, end, ctx->depth, &ctx->err);
}


kvr_events_field_e
kvr_events_key(const uint8_t *key, size_t len)
{
#define kvr_key_is(name)  (memcmp(key, name, sizeof(name) - 1) == 0)

    switch (len) {

    case 4:
        return kvr_key_is("type") ? KVR_F_TYPE : KVR_F_IGNORE;

    case 6:
        return kvr_key_is("medium") ? KVR_F_MEDIUM : KVR_F_IGNORE;

    case 7:
        return kvr_key_is("lora_id") ? KVR_F_LORA_ID : KVR_F_IGNORE;

    case 9:
        if (kvr_key_is("token_ids")) {
            return KVR_F_TOKENS;
        }

        if (kvr_key_is("lora_name")) {
            return KVR_F_LORA_NAME;
        }

        return kvr_key_is("group_idx") ? KVR_F_GROUP_IDX : KVR_F_IGNORE;

    case 10:
        if (kvr_key_is("block_size")) {
            return KVR_F_BLOCK_SIZE;
        }

        if (kvr_key_is("extra_keys")) {
            return KVR_F_EXTRA;
        }

        return kvr_key_is("cache_salt") ? KVR_F_SALT : KVR_F_IGNORE;

    case 12:
        return kvr_key_is("block_hashes") ? KVR_F_HASHES : KVR_F_IGNORE;

    case 17:
        return kvr_key_is("parent_block_hash") ? KVR_F_PARENT
                                               : KVR_F_IGNORE;

    case 18:
        return kvr_key_is("kv_cache_spec_kind") ? KVR_F_SPEC_KIND
                                                : KVR_F_IGNORE;
    }

    return KVR_F_IGNORE;

#undef kvr_key_is
}


/* appends to dec->hashes; NULL with ctx->err set if it must not */
static const uint8_t *
kvr_events_hashes(kvr_events_ctx_t *ctx, const uint8_t *p,
    const uint8_t *end)
{
    uint64_t               i;
    kvr_mp_t               v;
    uint64_t              *hashes;
    kvr_events_decoder_t  *dec;

    dec = ctx->dec;

    p = kvr_mp_next(p, end, &v);
    if (p == NULL || v.type != KVR_MP_ARRAY) {
        return NULL;
    }

    if (v.n > dec->limits.max_hashes - dec->n_hashes) {
        ctx->err = KVR_EVENTS_ERR_LIMIT;
        return NULL;
    }

    if (kvr_events_reserve((void **) &dec->hashes, &dec->hashes_cap,
                           dec->n_hashes + v.n, sizeof(uint64_t),
                           dec->limits.max_hashes)
        != 0)
    {
        ctx->err = KVR_EVENTS_ERR_NO_MEMORY;
        return NULL;
    }

    hashes = dec->hashes + dec->n_hashes;

    for (i = 0; i < v.n; i++) {
        p = kvr_events_hash(p, end, &hashes[i]);
        if (p == NULL) {
            return NULL;
        }
    }

    ctx->hash_off = dec->n_hashes;
    ctx->ev->n_hashes = (uint32_t) v.n;
    dec->n_hashes += v.n;

    return p;
}


/* an int's 64 bits, or a bin's last 8 bytes big-endian */
static const uint8_t *
kvr_events_hash(const uint8_t *p, const uint8_t *end, uint64_t *hash)
{
    kvr_mp_t  v;

    p = kvr_mp_next(p, end, &v);
    if (p == NULL) {
        return NULL;
    }

    switch (v.type) {

    case KVR_MP_UINT:
    case KVR_MP_NINT:
        *hash = v.n;
        return p;

    case KVR_MP_BIN:
        if (v.n > 8) {
            *hash = kvr_mp_be(v.data + v.n - 8, 8);

        } else {
            *hash = kvr_mp_be(v.data, (size_t) v.n);
        }

        return p;

    default:
        return NULL;
    }
}


/*
 * Token ids: ints in 0..UINT32_MAX of any encoded width.  While 9 bytes
 * are left, one 8-byte load and table lookups decode any width without
 * a branch on it (widths vary at random in real token lists).  The next
 * id's position is computed from the first byte, not looked up: each id
 * waits for the one before it, and a load more would lengthen that chain
 * (0x80 and above: a valid one is 0xcc-0xcf or 0xd0-0xd3, 1 + 1, 2, 4 or
 * 8 bytes, the low two bits).
 */
static const uint8_t *
kvr_events_tokens(kvr_events_ctx_t *ctx, const uint8_t *p,
    const uint8_t *end)
{
    size_t                 len;
    uint32_t               i, n;
    uint32_t              *tokens;
    uint64_t               t, raw, fix;
    unsigned               c;
    kvr_mp_t               v;
    kvr_events_decoder_t  *dec;

    dec = ctx->dec;

    p = kvr_mp_next(p, end, &v);
    if (p == NULL || v.type != KVR_MP_ARRAY) {
        return NULL;
    }

    if (v.n > dec->limits.max_tokens - dec->n_tokens) {
        ctx->err = KVR_EVENTS_ERR_LIMIT;
        return NULL;
    }

    if (kvr_events_reserve((void **) &dec->tokens, &dec->tokens_cap,
                           dec->n_tokens + v.n, sizeof(uint32_t),
                           dec->limits.max_tokens)
        != 0)
    {
        ctx->err = KVR_EVENTS_ERR_NO_MEMORY;
        return NULL;
    }

    n = (uint32_t) v.n;
    tokens = dec->tokens + dec->n_tokens;
    i = 0;

    /* SGLang with EAGLE: [[a, b], ...], a fixarray of 2 first */
    if (n > 0 && p < end && *p == 0x92) {
        p = kvr_events_bigrams(ctx, p, end, n, tokens);
        if (p == NULL) {
            return NULL;
        }

        ctx->ev->bigram = 1;
        i = n;
    }

    for ( /* void */ ; i < n; i++) {

        if ((size_t) (end - p) >= 9) {
            c = *p;

            if (kvr_tok_len[c] == 0) {
                return NULL;
            }

            raw = kvr_mp_be64(p + 1) >> kvr_tok_shift[c];
            fix = (uint64_t) 0 - (c < 0x80);
            t = (c & fix) | (raw & ~fix);
            len = (c < 0x80) ? 1 : 1 + ((size_t) 1 << (c & 3));

        } else {
            if (p >= end) {
                return NULL;
            }

            c = *p;

            if (kvr_tok_len[c] == 0 || (size_t) (end - p) < kvr_tok_len[c]) {
                return NULL;
            }

            t = (c < 0x80) ? c : kvr_mp_be(p + 1, kvr_tok_len[c] - 1);
            len = kvr_tok_len[c];
        }

        if (t > kvr_tok_max[c]) {
            return NULL;
        }

        tokens[i] = (uint32_t) t;
        p += len;
    }

    ctx->token_off = dec->n_tokens;
    ctx->ev->n_tokens = n;
    dec->n_tokens += n;

    return p;
}


/*
 * EAGLE bigram pairs: each [a, b] is a position's token a and the next
 * position's b (Dynamo's KvTokenIds::Bigram); the page's own tokens are
 * the first of each pair.  Every element must be a pair of u32 ints.
 */
static const uint8_t *
kvr_events_bigrams(kvr_events_ctx_t *ctx, const uint8_t *p,
    const uint8_t *end, uint32_t n, uint32_t *tokens)
{
    uint32_t  i, j;
    kvr_mp_t  v;

    (void) ctx;

    for (i = 0; i < n; i++) {
        if (p >= end || *p != 0x92) {
            return NULL;
        }

        p++;

        for (j = 0; j < 2; j++) {
            p = kvr_mp_next(p, end, &v);
            if (p == NULL || v.type != KVR_MP_UINT || v.n > UINT32_MAX) {
                return NULL;
            }

            if (j == 0) {
                tokens[i] = (uint32_t) v.n;
            }
        }
    }

    return p;
}


/* SGLang's metadata map: {"cache_salt": str | nil}, other keys ignored */
static const uint8_t *
kvr_events_meta(kvr_events_ctx_t *ctx, const uint8_t *p, const uint8_t *end)
{
    uint64_t              i, n;
    kvr_mp_t              v;
    const uint8_t        *key;

    p = kvr_mp_next(p, end, &v);
    if (p == NULL || v.type != KVR_MP_MAP) {
        return NULL;
    }

    n = v.n;

    for (i = 0; i < n; i++) {
        key = p;
        p = kvr_mp_next(p, end, &v);
        if (p == NULL) {
            return NULL;
        }

        if (v.type == KVR_MP_STR && v.n == 10
            && memcmp(v.data, "cache_salt", 10) == 0)
        {
            p = kvr_events_str(p, end, &ctx->ev->cache_salt,
                               &ctx->ev->cache_salt_len);
            if (p == NULL) {
                return NULL;
            }

            continue;
        }

        if (v.type == KVR_MP_ARRAY || v.type == KVR_MP_MAP) {
            p = kvr_events_skip(key, end, ctx->depth - 1, &ctx->err);
            if (p == NULL) {
                return NULL;
            }
        }

        p = kvr_events_skip(p, end, ctx->depth - 1, &ctx->err);
        if (p == NULL) {
            return NULL;
        }
    }

    return p;
}


/*
 * A BlockStored's extra_keys (kvr_events.h): for each block, 0 when all
 * of its entry is what a request reproduces (nothing, the LoRA name or
 * id first, the chain's cache_salt), else a digest of the entry.  The
 * bytes were checked when the field was read.
 */
int
kvr_events_extra(kvr_events_ctx_t *ctx)
{
    uint64_t               b, m, k, n, d;
    uint64_t              *out;
    kvr_mp_t               v, x;
    kvr_event_t           *ev;
    const uint8_t         *p, *q, *e, *end;
    kvr_events_decoder_t  *dec;

    dec = ctx->dec;
    ev = ctx->ev;
    n = ev->n_hashes;

    if (kvr_events_reserve((void **) &dec->extras, &dec->extras_cap,
                           ctx->hash_off + n, sizeof(uint64_t),
                           dec->limits.max_hashes)
        != 0)
    {
        ctx->err = KVR_EVENTS_ERR_NO_MEMORY;
        return -1;
    }

    out = dec->extras + ctx->hash_off;
    end = ctx->extra_end;
    ctx->has_extra = 0;

    p = kvr_mp_read(ctx->extra, end, &v);
    if (p == NULL) {
        ctx->err = KVR_EVENTS_ERR_MSGPACK;
        return -1;
    }

    if (v.n != n) {
        /* not one entry a block: no block is trusted */
        d = kvr_events_digest(ctx->extra, end);

        for (b = 0; b < n; b++) {
            out[b] = d;
        }

        ctx->has_extra = (n > 0);
        return 0;
    }

    for (b = 0; b < n; b++) {
        q = kvr_events_skip(p, end, ctx->depth, &ctx->err);
        e = (q != NULL) ? kvr_mp_read(p, q, &v) : NULL;

        if (e == NULL) {
            if (ctx->err == KVR_EVENTS_OK) {
                ctx->err = KVR_EVENTS_ERR_MSGPACK;
            }

            return -1;
        }

        out[b] = 0;

        if (v.type == KVR_MP_NIL) {
            p = q;
            continue;
        }

        m = (v.type == KVR_MP_ARRAY) ? v.n : 1;
        k = 0;

        /* the LoRA adapter first: its name, or its id in older vLLM */

        if (v.type == KVR_MP_ARRAY && m > 0
            && kvr_mp_read(e, q, &x) != NULL)
        {
            if ((x.type == KVR_MP_STR && ev->lora_name != NULL
                 && x.n == ev->lora_name_len
                 && memcmp(x.data, ev->lora_name, ev->lora_name_len) == 0)
                || ((x.type == KVR_MP_UINT || x.type == KVR_MP_NINT)
                    && ev->has_lora_id && x.n == (uint64_t) ev->lora_id))
            {
                k = 1;
                e = kvr_mp_read(e, q, &x);
            }
        }

        /* the salt: the last str of a chain's first block */

        if (v.type == KVR_MP_ARRAY && b == 0 && !ev->has_parent
            && m - k == 1 && e != NULL
            && kvr_mp_read(e, q, &x) != NULL && x.type == KVR_MP_STR)
        {
            k++;

            if (ev->cache_salt == NULL) {
                ev->cache_salt = x.data;
                ev->cache_salt_len = (size_t) x.n;
            }
        }

        if (k < m || v.type != KVR_MP_ARRAY) {
            out[b] = kvr_events_digest(p, q);
            ctx->has_extra = 1;
        }

        p = q;
    }

    return 0;
}


/* FNV-1a of bytes, never 0 (0 means "nothing to reproduce") */
static uint64_t
kvr_events_digest(const uint8_t *p, const uint8_t *end)
{
    uint64_t  h;

    h = 0xcbf29ce484222325ull;

    while (p < end) {
        h ^= *p++;
        h *= 0x100000001b3ull;
    }

    return h ? h : 1;
}


/* a str (s points at its bytes) or nil (s is NULL) */
const uint8_t *
kvr_events_str(const uint8_t *p, const uint8_t *end, const uint8_t **s,
    size_t *len)
{
    kvr_mp_t  v;

    p = kvr_mp_next(p, end, &v);
    if (p == NULL) {
        return NULL;
    }

    if (v.type == KVR_MP_STR) {
        *s = v.data;
        *len = (size_t) v.n;
        return p;
    }

    if (v.type == KVR_MP_NIL) {
        *s = NULL;
        *len = 0;
        return p;
    }

    return NULL;
}


/* an int (as int64 bits) or nil (has is 0) */
static const uint8_t *
kvr_events_int(const uint8_t *p, const uint8_t *end, int64_t *value,
    unsigned *has)
{
    kvr_mp_t  v;

    *has = 0;

    p = kvr_mp_next(p, end, &v);
    if (p == NULL) {
        return NULL;
    }

    if (v.type == KVR_MP_UINT || v.type == KVR_MP_NINT) {
        *value = (int64_t) v.n;
        *has = 1;
        return p;
    }

    if (v.type == KVR_MP_NIL) {
        *value = 0;
        return p;
    }

    return NULL;
}


/* kvr_mp_skip(), its error as the decoder's */
const uint8_t *
kvr_events_skip(const uint8_t *p, const uint8_t *end, uint32_t depth,
    kvr_events_status_e *err)
{
    kvr_mp_status_e  rc;

    p = kvr_mp_skip(p, end, depth, &rc);

    if (p == NULL) {
        *err = (rc == KVR_MP_ERR_DEPTH) ? KVR_EVENTS_ERR_DEPTH
                                        : KVR_EVENTS_ERR_MSGPACK;
    }

    return p;
}


/* kvr_events_reserve()'s growth: doubling, up to max */
int
kvr_events_grow(void **buf, size_t *cap, size_t need, size_t size,
    size_t max)
{
    size_t   n;
    void    *p;

    n = (*cap > 0) ? *cap : 64;

    while (n < need) {
        n *= 2;
    }

    if (n > max && need <= max) {
        n = max;
    }

    p = realloc(*buf, n * size);
    if (p == NULL) {
        return -1;
    }

    *buf = p;
    *cap = n;

    return 0;
}
