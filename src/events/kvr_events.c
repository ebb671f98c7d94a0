/*
 * Copyright (C) kvroute developers
 *
 * The KV event decoder (interface and accepted forms in kvr_events.h).
 *
 * The msgpack is read by kvr_msgpack.c's bounded reader; this file knows
 * the schema.  The ZeroMQ frames around a payload are kvr_events_frame.c's.
 *
 * One pass over a payload decodes every event into the decoder's arrays;
 * the handler runs only after the last byte has been checked, so a
 * consumer never applies half of a corrupt batch and dp_rank, which
 * follows the events, is known before them.  (Validating in a first pass
 * and decoding in a second cost twice the time: reading msgpack is a
 * chain of dependent loads, one per value.)  Every read is bounded by the
 * input's end where it happens; a value a decoder gives up on is skipped
 * by kvr_events_skip(), which checks its grammar and depth.
 */

#include <stdlib.h>
#include <string.h>

#include "kvr_events.h"
#include "kvr_msgpack.h"
#include "kvr_events_int.h"


#if (KVR_EVENTS_DEPTH_CAP > KVR_MP_DEPTH_CAP)
#error "kvr_mp_skip() cannot check KVR_EVENTS_DEPTH_CAP levels"
#endif


/* the fields a batch may carry */
typedef enum {
    KVR_B_NONE = 0,
    KVR_B_TS,
    KVR_B_EVENTS,
    KVR_B_RANK
} kvr_events_batch_field_e;


#define KVR_STORED_REQUIRED                                                  \
    (KVR_BIT(KVR_F_HASHES) | KVR_BIT(KVR_F_PARENT) | KVR_BIT(KVR_F_TOKENS)   \
     | KVR_BIT(KVR_F_BLOCK_SIZE))

#define KVR_STORED_FIELDS                                                    \
    (KVR_STORED_REQUIRED | KVR_BIT(KVR_F_LORA_ID) | KVR_BIT(KVR_F_MEDIUM)    \
     | KVR_BIT(KVR_F_LORA_NAME) | KVR_BIT(KVR_F_LORA_OR_META)                \
     | KVR_BIT(KVR_F_GROUP_IDX) | KVR_BIT(KVR_F_SPEC_KIND)                   \
     | KVR_BIT(KVR_F_SALT) | KVR_BIT(KVR_F_EXTRA))

#define KVR_REMOVED_REQUIRED  KVR_BIT(KVR_F_HASHES)

#define KVR_REMOVED_FIELDS                                                   \
    (KVR_REMOVED_REQUIRED | KVR_BIT(KVR_F_MEDIUM) | KVR_BIT(KVR_F_GROUP_IDX) \
     | KVR_BIT(KVR_F_SPEC_KIND))


/* an event with no field read yet */
static const kvr_event_t  kvr_events_none;


/* array-era positions (after the tag) of each event's fields */
static const uint8_t  kvr_events_stored_pos[] = {
    KVR_F_HASHES, KVR_F_PARENT, KVR_F_TOKENS, KVR_F_BLOCK_SIZE,
    KVR_F_LORA_ID, KVR_F_MEDIUM, KVR_F_LORA_OR_META, KVR_F_EXTRA,
    KVR_F_GROUP_IDX, KVR_F_SPEC_KIND
};

/* Dynamo's positional tail: group_idx, kv_cache_spec_kind */
static const uint8_t  kvr_events_removed_pos[] = {
    KVR_F_HASHES, KVR_F_MEDIUM, KVR_F_GROUP_IDX, KVR_F_SPEC_KIND
};


static kvr_events_status_e kvr_events_batch(kvr_events_decoder_t *dec,
    const uint8_t *buf, size_t len, kvr_event_batch_t *batch);
static const uint8_t *kvr_events_batch_key(const uint8_t *p,
    const uint8_t *end, uint32_t depth, kvr_events_batch_field_e *field,
    kvr_events_status_e *err);
static const uint8_t *kvr_events_batch_value(kvr_events_decoder_t *dec,
    kvr_events_batch_field_e field, const uint8_t *p, const uint8_t *end,
    kvr_event_batch_t *batch, kvr_events_status_e *err);
static const uint8_t *kvr_events_list(kvr_events_decoder_t *dec,
    const uint8_t *p, const uint8_t *end, kvr_event_batch_t *batch,
    kvr_events_status_e *err);
static const uint8_t *kvr_events_event(kvr_events_ctx_t *ctx,
    const uint8_t *p, const uint8_t *end);
static const uint8_t *kvr_events_array(kvr_events_ctx_t *ctx,
    const uint8_t *p, const uint8_t *end, uint64_t n);
static const uint8_t *kvr_events_map(kvr_events_ctx_t *ctx,
    const uint8_t *p, const uint8_t *end, uint64_t n);
static int kvr_events_complete(kvr_events_ctx_t *ctx, kvr_event_type_e type);
static void kvr_events_resolve(kvr_events_decoder_t *dec,
    kvr_events_item_t *item);
static kvr_event_type_e kvr_events_tag(const uint8_t *tag, size_t len);


void
kvr_events_limits_default(kvr_events_limits_t *limits)
{
    limits->max_bytes = (size_t) 16 << 20;
    limits->max_depth = 16;
    limits->max_events = 65536;
    limits->max_hashes = 65536;
    limits->max_tokens = 1u << 20;
}


kvr_events_decoder_t *
kvr_events_decoder_create(const kvr_events_limits_t *limits)
{
    kvr_events_decoder_t  *dec;

    if (limits->max_bytes == 0 || limits->max_bytes > KVR_EVENTS_BYTES_CAP
        || limits->max_depth < 4 || limits->max_depth > KVR_EVENTS_DEPTH_CAP
        || limits->max_events == 0
        || limits->max_events > KVR_EVENTS_EVENTS_CAP
        || limits->max_hashes == 0
        || limits->max_hashes > KVR_EVENTS_HASHES_CAP
        || limits->max_tokens == 0
        || limits->max_tokens > KVR_EVENTS_TOKENS_CAP)
    {
        return NULL;
    }

    dec = calloc(1, sizeof(kvr_events_decoder_t));
    if (dec == NULL) {
        return NULL;
    }

    dec->limits = *limits;

    return dec;
}


void
kvr_events_decoder_destroy(kvr_events_decoder_t *dec)
{
    if (dec == NULL) {
        return;
    }

    free(dec->items);
    free(dec->hashes);
    free(dec->tokens);
    free(dec->extras);
    free(dec);
}


kvr_events_status_e
kvr_events_decode(kvr_events_decoder_t *dec, const uint8_t *buf, size_t len,
    kvr_event_batch_t *batch, kvr_event_handler_pt handler, void *data)
{
    size_t                i;
    kvr_events_item_t    *item;
    kvr_events_status_e   rc;

    memset(batch, 0, sizeof(kvr_event_batch_t));
    dec->n_items = 0;
    dec->n_hashes = 0;
    dec->n_tokens = 0;

    if (buf == NULL) {
        return KVR_EVENTS_ERR_MSGPACK;
    }

    rc = kvr_events_batch(dec, buf, len, batch);
    if (rc != KVR_EVENTS_OK) {
        return rc;
    }

    /* all of the payload is good: deliver */
    for (i = 0; i < dec->n_items; i++) {
        item = &dec->items[i];
        kvr_events_resolve(dec, item);

        batch->n_delivered++;

        if (handler != NULL && handler(data, batch, &item->ev) != 0) {
            return KVR_EVENTS_ERR_ABORTED;
        }
    }

    return KVR_EVENTS_OK;
}


const kvr_event_t *
kvr_events_next(kvr_events_decoder_t *dec, const kvr_event_batch_t *batch)
{
    kvr_events_item_t  *item;

    /* n_delivered counts the event being delivered */

    if (batch->n_delivered >= dec->n_items) {
        return NULL;
    }

    item = &dec->items[batch->n_delivered];
    kvr_events_resolve(dec, item);

    return &item->ev;
}


/* an item's arrays, from offsets into the decoder's memory to pointers */
static void
kvr_events_resolve(kvr_events_decoder_t *dec, kvr_events_item_t *item)
{
    item->ev.hashes = item->ev.n_hashes ? dec->hashes + item->hash_off
                                        : NULL;
    item->ev.token_ids = item->ev.n_tokens ? dec->tokens + item->token_off
                                           : NULL;
    item->ev.extra = item->has_extra ? dec->extras + item->hash_off : NULL;
}


const char *
kvr_events_status_name(kvr_events_status_e status)
{
    switch (status) {

    case KVR_EVENTS_OK:
        return "ok";

    case KVR_EVENTS_ERR_FRAMES:
        return "bad-frames";

    case KVR_EVENTS_ERR_SEQ:
        return "bad-sequence";

    case KVR_EVENTS_ERR_TOO_BIG:
        return "too-big";

    case KVR_EVENTS_ERR_MSGPACK:
        return "bad-msgpack";

    case KVR_EVENTS_ERR_DEPTH:
        return "too-deep";

    case KVR_EVENTS_ERR_EVENTS:
        return "too-many-events";

    case KVR_EVENTS_ERR_LIMIT:
        return "too-many-hashes-or-tokens";

    case KVR_EVENTS_ERR_NO_MEMORY:
        return "no-memory";

    case KVR_EVENTS_ERR_BATCH:
        return "not-a-batch";

    case KVR_EVENTS_ERR_ABORTED:
        return "aborted";
    }

    return "unknown";
}


/*
 * The batch: the whole payload must be one, well-formed and within the
 * limits.  Fills ts and dp_rank and decodes the events into dec.
 */
static kvr_events_status_e
kvr_events_batch(kvr_events_decoder_t *dec, const uint8_t *buf, size_t len,
    kvr_event_batch_t *batch)
{
    int                       is_map;
    uint32_t                  sub, have;
    uint64_t                  i, n;
    kvr_mp_t                  v;
    const uint8_t            *p, *end;
    kvr_events_status_e       err;
    kvr_events_batch_field_e  field;

    if (len > dec->limits.max_bytes) {
        return KVR_EVENTS_ERR_TOO_BIG;
    }

    end = buf + len;
    sub = dec->limits.max_depth - 1;
    have = 0;

    p = kvr_mp_read(buf, end, &v);
    if (p == NULL) {
        return KVR_EVENTS_ERR_MSGPACK;
    }

    if (v.type == KVR_MP_ARRAY) {
        is_map = 0;
        if (v.n < 2) {
            return KVR_EVENTS_ERR_BATCH;
        }

    } else if (v.type == KVR_MP_MAP) {
        is_map = 1;

    } else {
        return KVR_EVENTS_ERR_BATCH;
    }

    n = v.n;

    for (i = 0; i < n; i++) {

        if (is_map) {
            p = kvr_events_batch_key(p, end, sub, &field, &err);
            if (p == NULL) {
                return err;
            }

        } else {
            field = (i == 0) ? KVR_B_TS : (i == 1) ? KVR_B_EVENTS
                    : (i == 2) ? KVR_B_RANK : KVR_B_NONE;
        }

        p = kvr_events_batch_value(dec, field, p, end, batch, &err);
        if (p == NULL) {
            return err;
        }

        have |= KVR_BIT(field);
    }

    if (p != end) {
        return KVR_EVENTS_ERR_MSGPACK;
    }

    if ((have & KVR_BIT(KVR_B_TS)) == 0
        || (have & KVR_BIT(KVR_B_EVENTS)) == 0)
    {
        return KVR_EVENTS_ERR_BATCH;
    }

    return KVR_EVENTS_OK;
}


/* a map batch's key: which field its value is (a container key skipped) */
static const uint8_t *
kvr_events_batch_key(const uint8_t *p, const uint8_t *end, uint32_t depth,
    kvr_events_batch_field_e *field, kvr_events_status_e *err)
{
    kvr_mp_t        k;
    const uint8_t  *key;

    key = p;
    *field = KVR_B_NONE;

    p = kvr_mp_read(p, end, &k);
    if (p == NULL) {
        *err = KVR_EVENTS_ERR_MSGPACK;
        return NULL;
    }

    if (k.type == KVR_MP_STR) {
        if (k.n == 2 && memcmp(k.data, "ts", 2) == 0) {
            *field = KVR_B_TS;

        } else if (k.n == 6 && memcmp(k.data, "events", 6) == 0) {
            *field = KVR_B_EVENTS;

        } else if ((k.n == 18
                    && memcmp(k.data, "data_parallel_rank", 18) == 0)
                   || (k.n == 12 && memcmp(k.data, "attn_dp_rank", 12) == 0))
        {
            *field = KVR_B_RANK;
        }

        return p;
    }

    if (k.type == KVR_MP_ARRAY || k.type == KVR_MP_MAP) {
        return kvr_events_skip(key, end, depth, err);
    }

    return p;
}


/* one value of the batch, by its field; any other is skipped */
static const uint8_t *
kvr_events_batch_value(kvr_events_decoder_t *dec,
    kvr_events_batch_field_e field, const uint8_t *p, const uint8_t *end,
    kvr_event_batch_t *batch, kvr_events_status_e *err)
{
    kvr_mp_t  v;

    switch (field) {

    case KVR_B_TS:
        p = kvr_mp_read(p, end, &v);
        if (p == NULL) {
            *err = KVR_EVENTS_ERR_MSGPACK;
            return NULL;
        }

        if (v.type == KVR_MP_FLOAT) {
            batch->ts = v.f;

        } else if (v.type == KVR_MP_UINT) {
            batch->ts = (double) v.n;

        } else if (v.type == KVR_MP_NINT) {
            batch->ts = (double) (int64_t) v.n;

        } else {
            *err = KVR_EVENTS_ERR_BATCH;
            return NULL;
        }

        return p;

    case KVR_B_RANK:
        p = kvr_mp_read(p, end, &v);
        if (p == NULL) {
            *err = KVR_EVENTS_ERR_MSGPACK;
            return NULL;
        }

        if (v.type == KVR_MP_UINT || v.type == KVR_MP_NINT) {
            batch->dp_rank = (int64_t) v.n;
            batch->has_dp_rank = 1;

        } else if (v.type == KVR_MP_NIL) {
            batch->dp_rank = 0;
            batch->has_dp_rank = 0;

        } else {
            *err = KVR_EVENTS_ERR_BATCH;
            return NULL;
        }

        return p;

    case KVR_B_EVENTS:
        if (kvr_mp_read(p, end, &v) == NULL) {
            *err = KVR_EVENTS_ERR_MSGPACK;
            return NULL;
        }

        if (v.type != KVR_MP_ARRAY) {
            *err = KVR_EVENTS_ERR_BATCH;
            return NULL;
        }

        if (v.n > dec->limits.max_events) {
            *err = KVR_EVENTS_ERR_EVENTS;
            return NULL;
        }

        return kvr_events_list(dec, p, end, batch, err);

    default:
        return kvr_events_skip(p, end, dec->limits.max_depth - 1, err);
    }
}


/*
 * The events array (its header already checked): each event is decoded
 * into dec, a malformed or unknown one is counted and its hashes and
 * token ids given back.  A repeated "events" key of a map batch starts
 * over.  NULL with *err on a msgpack, depth or limit error.
 */
static const uint8_t *
kvr_events_list(kvr_events_decoder_t *dec, const uint8_t *p,
    const uint8_t *end, kvr_event_batch_t *batch, kvr_events_status_e *err)
{
    size_t              i, n, hash_start, token_start;
    kvr_mp_t            v;
    kvr_events_ctx_t    ctx;
    kvr_events_item_t  *item;

    p = kvr_mp_next(p, end, &v);
    if (p == NULL || v.type != KVR_MP_ARRAY) {
        *err = KVR_EVENTS_ERR_MSGPACK;
        return NULL;
    }

    n = (size_t) v.n;

    dec->n_items = 0;
    dec->n_hashes = 0;
    dec->n_tokens = 0;
    batch->n_events = (uint32_t) n;
    batch->n_unknown = 0;
    batch->n_malformed = 0;

    if (kvr_events_reserve((void **) &dec->items, &dec->items_cap, n,
                           sizeof(kvr_events_item_t),
                           dec->limits.max_events)
        != 0)
    {
        *err = KVR_EVENTS_ERR_NO_MEMORY;
        return NULL;
    }

    for (i = 0; i < n; i++) {

        /*
         * decoded in place: an event not kept leaves n_items as it was;
         * zeroed by assignment (memset of an item is a "rep stos", slow
         * to start, once an event)
         */
        item = &dec->items[dec->n_items];
        item->ev = kvr_events_none;

        memset(&ctx, 0, sizeof(kvr_events_ctx_t));
        ctx.dec = dec;
        ctx.ev = &item->ev;
        ctx.depth = dec->limits.max_depth - 3;
        hash_start = dec->n_hashes;
        token_start = dec->n_tokens;

        p = kvr_events_event(&ctx, p, end);
        if (p == NULL) {
            *err = (ctx.err != KVR_EVENTS_OK) ? ctx.err
                                              : KVR_EVENTS_ERR_MSGPACK;
            return NULL;
        }

        if (ctx.malformed || !ctx.known) {
            dec->n_hashes = hash_start;
            dec->n_tokens = token_start;

            if (ctx.malformed) {
                batch->n_malformed++;

            } else {
                batch->n_unknown++;
            }

            continue;
        }

        /* keep only what the event carries */
        if (item->ev.type != KVR_EVENT_BLOCK_STORED) {
            dec->n_tokens = token_start;
        }

        if (item->ev.type == KVR_EVENT_ALL_BLOCKS_CLEARED) {
            dec->n_hashes = hash_start;
        }

        dec->n_items++;
        item->hash_off = ctx.hash_off;
        item->token_off = ctx.token_off;
        item->has_extra = ctx.has_extra;
    }

    return p;
}


/*
 * One event, into ctx.  Returns the end of the event, or NULL on a
 * msgpack, depth or limit error (in ctx->err; not set: msgpack).  Sets
 * ctx->known for an event to deliver, ctx->malformed for a bad one, and
 * neither for an unknown tag.
 */
static const uint8_t *
kvr_events_event(kvr_events_ctx_t *ctx, const uint8_t *p, const uint8_t *end)
{
    kvr_mp_t  v;

    p = kvr_mp_next(p, end, &v);
    if (p == NULL) {
        return NULL;
    }

    ctx->tag = NULL;
    ctx->tag_len = 0;
    ctx->type = 0;

    if (v.type == KVR_MP_ARRAY) {
        p = kvr_events_array(ctx, p, end, v.n);

    } else if (v.type == KVR_MP_MAP) {
        p = kvr_events_map(ctx, p, end, v.n);

    } else {
        /* a scalar: read has skipped it */
        ctx->malformed = 1;
        return p;
    }

    if (p == NULL) {
        return NULL;
    }

    if (ctx->tag == NULL) {
        /* no tag, or not a string */
        ctx->malformed = 1;
        return p;
    }

    if (ctx->type == 0) {
        return p;
    }

    if (kvr_events_complete(ctx, ctx->type) != 0) {
        return NULL;
    }

    return p;
}


/* an array event's n elements: the tag, then fields by position */
static const uint8_t *
kvr_events_array(kvr_events_ctx_t *ctx, const uint8_t *p, const uint8_t *end,
    uint64_t n)
{
    uint64_t             i;
    uint32_t             n_pos;
    const uint8_t       *first, *pos;
    kvr_events_field_e   field;

    i = 0;

    if (n > 0) {
        i = 1;
        first = p;
        p = kvr_events_str(p, end, &ctx->tag, &ctx->tag_len);

        if (p == NULL) {
            ctx->tag = NULL;
            p = kvr_events_skip(first, end, ctx->depth, &ctx->err);
            if (p == NULL) {
                return NULL;
            }
        }
    }

    n_pos = 0;
    pos = NULL;

    if (ctx->tag != NULL) {
        ctx->type = kvr_events_tag(ctx->tag, ctx->tag_len);

        if (ctx->type == KVR_EVENT_BLOCK_STORED) {
            pos = kvr_events_stored_pos;
            n_pos = sizeof(kvr_events_stored_pos);

        } else if (ctx->type == KVR_EVENT_BLOCK_REMOVED) {
            pos = kvr_events_removed_pos;
            n_pos = sizeof(kvr_events_removed_pos);
        }

        /* AllBlocksCleared, like an unknown tag: all skipped */
    }

    for ( /* void */ ; i < n; i++) {
        field = (i - 1 < n_pos) ? (kvr_events_field_e) pos[i - 1]
                                : KVR_F_IGNORE;

        p = kvr_events_field(ctx, field, p, end);
        if (p == NULL) {
            return NULL;
        }
    }

    return p;
}


/* a map event's n pairs: fields by key, in any order */
static const uint8_t *
kvr_events_map(kvr_events_ctx_t *ctx, const uint8_t *p, const uint8_t *end,
    uint64_t n)
{
    uint64_t             i;
    kvr_mp_t             k;
    const uint8_t       *key;
    kvr_events_field_e   field;

    for (i = 0; i < n; i++) {
        key = p;
        p = kvr_mp_next(p, end, &k);
        if (p == NULL) {
            return NULL;
        }

        field = KVR_F_IGNORE;

        if (k.type == KVR_MP_STR) {
            field = kvr_events_key(k.data, (size_t) k.n);

        } else if (k.type == KVR_MP_ARRAY || k.type == KVR_MP_MAP) {
            p = kvr_events_skip(key, end, ctx->depth, &ctx->err);
            if (p == NULL) {
                return NULL;
            }
        }

        if (field == KVR_F_TYPE) {
            key = p;
            p = kvr_events_str(p, end, &ctx->tag, &ctx->tag_len);

            if (p == NULL || ctx->tag == NULL) {
                ctx->tag = NULL;
                ctx->bad |= KVR_BIT(KVR_F_TYPE);
                p = kvr_events_skip(key, end, ctx->depth, &ctx->err);
                if (p == NULL) {
                    return NULL;
                }

                continue;
            }

            /* a repeated key: the last one's tag */
            ctx->type = kvr_events_tag(ctx->tag, ctx->tag_len);

            continue;
        }

        p = kvr_events_field(ctx, field, p, end);
        if (p == NULL) {
            return NULL;
        }
    }

    return p;
}


/*
 * A known event with all its fields read: checks it has what its type
 * requires, clears what a map may have carried for another type, and
 * reads BlockStored's extra_keys.  -1 on an error (ctx->err).
 */
static int
kvr_events_complete(kvr_events_ctx_t *ctx, kvr_event_type_e type)
{
    uint32_t      required, fields;
    kvr_event_t   kept, *ev;

    switch (type) {

    case KVR_EVENT_BLOCK_STORED:
        required = KVR_STORED_REQUIRED;
        fields = KVR_STORED_FIELDS;
        break;

    case KVR_EVENT_BLOCK_REMOVED:
        required = KVR_REMOVED_REQUIRED;
        fields = KVR_REMOVED_FIELDS;
        break;

    default:
        required = 0;
        fields = 0;
    }

    /* a bad value matters only in a field this type has */
    if ((ctx->seen & required) != required || (ctx->bad & fields)) {
        ctx->malformed = 1;
        return 0;
    }

    ctx->known = 1;
    ev = ctx->ev;

    /*
     * only a map can have tried fields a removal does not have (an array
     * event's positions are its type's): the event starts zeroed
     */

    if (type == KVR_EVENT_BLOCK_REMOVED
        && ((ctx->seen | ctx->bad) & ~KVR_REMOVED_FIELDS))
    {
        kept = *ev;
        memset(ev, 0, sizeof(kvr_event_t));
        ev->n_hashes = kept.n_hashes;
        ev->hashes = kept.hashes;
        ev->medium = kept.medium;
        ev->medium_len = kept.medium_len;
        ev->group_idx = kept.group_idx;
        ev->has_group_idx = kept.has_group_idx;
        ev->spec_kind = kept.spec_kind;
        ev->spec_kind_len = kept.spec_kind_len;
        ctx->has_extra = 0;

    } else if (type == KVR_EVENT_ALL_BLOCKS_CLEARED) {
        memset(ev, 0, sizeof(kvr_event_t));
        ctx->has_extra = 0;

    } else if (type == KVR_EVENT_BLOCK_STORED
               && ctx->extra != NULL && kvr_events_extra(ctx) != 0)
    {
        return -1;
    }

    ev->type = type;

    return 0;
}


/* the event type a tag names, 0 for any other tag */
static kvr_event_type_e
kvr_events_tag(const uint8_t *tag, size_t len)
{
    if (len == 11 && memcmp(tag, "BlockStored", 11) == 0) {
        return KVR_EVENT_BLOCK_STORED;
    }

    if (len == 12 && memcmp(tag, "BlockRemoved", 12) == 0) {
        return KVR_EVENT_BLOCK_REMOVED;
    }

    if (len == 16 && memcmp(tag, "AllBlocksCleared", 16) == 0) {
        return KVR_EVENT_ALL_BLOCKS_CLEARED;
    }

    return 0;
}
