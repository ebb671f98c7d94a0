/*
 * Copyright (C) kvroute developers
 *
 * The KV event decoder (interface and accepted forms in kvr_events.h).
 *
 * Why a msgpack reader of our own rather than msgpack-c's unpacker: the
 * unpacker builds an object tree in a zone, allocating for every declared
 * array and map length (a hostile 5-byte header declares 2^32 elements)
 * and copying what we only look at once; its depth bound is a compile-time
 * constant.  The subset needed here is one header format (~30 type bytes),
 * so reading it in place costs little code, no link dependency, no
 * allocation per message (the decoder's arrays grow to the largest batch
 * and stay), and lets every length be checked against the bytes left
 * before it is used: a container of n values needs at least n bytes.
 *
 * One pass over a payload decodes every event into the decoder's arrays;
 * the handler runs only after the last byte has been checked, so a
 * consumer never applies half of a corrupt batch and dp_rank, which
 * follows the events, is known before them.  (Validating in a first pass
 * and decoding in a second cost twice the time: reading msgpack is a
 * chain of dependent loads, one per value.)  Every read is bounded by the
 * input's end where it happens; a value a decoder gives up on is skipped
 * by kvr_mp_skip(), which checks its grammar and depth.
 */

#include <stdlib.h>
#include <string.h>

#include "kvr_events.h"


typedef enum {
    KVR_MP_NIL = 1,
    KVR_MP_BOOL,
    KVR_MP_UINT,        /* a non-negative int, any width: value in n */
    KVR_MP_NINT,        /* a negative int: two's complement bits in n */
    KVR_MP_FLOAT,
    KVR_MP_STR,
    KVR_MP_BIN,
    KVR_MP_EXT,
    KVR_MP_ARRAY,       /* n elements */
    KVR_MP_MAP          /* n pairs */
} kvr_mp_type_e;


/* one msgpack header: scalars whole, containers as their count */
typedef struct {
    kvr_mp_type_e        type;
    uint64_t             n;         /* int bits, byte length or count */
    double               f;
    const uint8_t       *data;      /* str, bin, ext bytes */
} kvr_mp_t;


/* the fields an event may carry; a bit each in the seen and bad masks */
typedef enum {
    KVR_F_IGNORE = 0,
    KVR_F_TYPE,
    KVR_F_HASHES,
    KVR_F_PARENT,
    KVR_F_TOKENS,
    KVR_F_BLOCK_SIZE,
    KVR_F_LORA_ID,
    KVR_F_MEDIUM,
    KVR_F_LORA_NAME,
    KVR_F_LORA_OR_META,     /* array position 7: lora_name or SGLang map */
    KVR_F_GROUP_IDX,
    KVR_F_SPEC_KIND,
    KVR_F_SALT,
    KVR_F_EXTRA
} kvr_events_field_e;

#define KVR_BIT(f)  (1u << (f))

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


/*
 * bytes a value takes when its first byte tells (ints, floats, nil, bool,
 * fixstr, fixext); 0: a container or a length follows
 */
static const uint8_t  kvr_mp_fixed[256] = {
    [0x00 ... 0x7f] = 1,
    [0xa0] = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
    17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32,
    [0xc0] = 1, [0xc2] = 1, [0xc3] = 1,
    [0xca] = 5, [0xcb] = 9,
    [0xcc] = 2, [0xcd] = 3, [0xce] = 5, [0xcf] = 9,
    [0xd0] = 2, [0xd1] = 3, [0xd2] = 5, [0xd3] = 9,
    [0xd4] = 3, [0xd5] = 4, [0xd6] = 6, [0xd7] = 10, [0xd8] = 18,
    [0xe0 ... 0xff] = 1
};


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


/* a decoded event waiting for delivery; its arrays as offsets */
typedef struct {
    kvr_event_t          ev;
    size_t               hash_off;
    size_t               token_off;
    unsigned             has_extra:1;   /* extras at hash_off */
} kvr_events_item_t;


struct kvr_events_decoder_s {
    kvr_events_limits_t  limits;
    kvr_events_item_t   *items;
    uint64_t            *hashes;
    uint32_t            *tokens;
    uint64_t            *extras;        /* parallel to hashes */
    size_t               items_cap;
    size_t               hashes_cap;
    size_t               tokens_cap;
    size_t               extras_cap;
    size_t               n_items;
    size_t               n_hashes;
    size_t               n_tokens;
};


/* the state of one event being decoded */
typedef struct {
    kvr_events_decoder_t  *dec;
    kvr_event_t            ev;
    size_t                 hash_off;   /* of ev's hashes in dec->hashes */
    size_t                 token_off;
    const uint8_t         *extra;      /* extra_keys' bytes, if an array */
    const uint8_t         *extra_end;
    kvr_events_status_e    err;        /* why a NULL return, if not OK */
    uint32_t               seen;       /* fields decoded */
    uint32_t               bad;        /* fields with a bad value */
    uint32_t               depth;      /* levels a field value may have */
    unsigned               known:1;    /* an event to deliver */
    unsigned               malformed:1;
    unsigned               has_extra:1;
} kvr_events_ctx_t;


static const uint8_t *kvr_mp_read(const uint8_t *p, const uint8_t *end,
    kvr_mp_t *v);
static const uint8_t *kvr_mp_skip(const uint8_t *p, const uint8_t *end,
    uint32_t depth, kvr_events_status_e *err);
static kvr_events_status_e kvr_events_batch(kvr_events_decoder_t *dec,
    const uint8_t *buf, size_t len, kvr_event_batch_t *batch);
static const uint8_t *kvr_events_list(kvr_events_decoder_t *dec,
    const uint8_t *p, const uint8_t *end, kvr_event_batch_t *batch,
    kvr_events_status_e *err);
static int kvr_events_reserve(void **buf, size_t *cap, size_t need,
    size_t size, size_t max);
static const uint8_t *kvr_events_event(kvr_events_ctx_t *ctx,
    const uint8_t *p, const uint8_t *end);
static const uint8_t *kvr_events_field(kvr_events_ctx_t *ctx,
    kvr_events_field_e field, const uint8_t *p, const uint8_t *end);
static kvr_events_field_e kvr_events_key(const uint8_t *key, size_t len);
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
static int kvr_events_extra(kvr_events_ctx_t *ctx);
static uint64_t kvr_events_digest(const uint8_t *p, const uint8_t *end);
static const uint8_t *kvr_events_str(const uint8_t *p, const uint8_t *end,
    const uint8_t **s, size_t *len);
static const uint8_t *kvr_events_int(const uint8_t *p, const uint8_t *end,
    int64_t *value, unsigned *has);
static int kvr_events_tag(const uint8_t *tag, size_t len,
    kvr_event_type_e *type);


static uint64_t
kvr_be64(const uint8_t *p)
{
    uint64_t  v;

    memcpy(&v, p, 8);

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap64(v);
#elif !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_BIG_ENDIAN__
    v = ((uint64_t) p[0] << 56) | ((uint64_t) p[1] << 48)
        | ((uint64_t) p[2] << 40) | ((uint64_t) p[3] << 32)
        | ((uint64_t) p[4] << 24) | ((uint64_t) p[5] << 16)
        | ((uint64_t) p[6] << 8) | p[7];
#endif

    return v;
}


/* n (0 to 8) bytes, big-endian */
static uint64_t
kvr_be(const uint8_t *p, size_t n)
{
    uint64_t  v;

    switch (n) {

    case 1:
        return p[0];

    case 2:
        return ((uint64_t) p[0] << 8) | p[1];

    case 4:
        return ((uint64_t) p[0] << 24) | ((uint64_t) p[1] << 16)
               | ((uint64_t) p[2] << 8) | p[3];

    case 8:
        return kvr_be64(p);
    }

    v = 0;

    while (n--) {
        v = (v << 8) | *p++;
    }

    return v;
}


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
kvr_events_frame(const kvr_events_frame_t *frames, size_t n_frames,
    kvr_events_message_t *msg)
{
    memset(msg, 0, sizeof(kvr_events_message_t));

    if (n_frames != 3) {
        return KVR_EVENTS_ERR_FRAMES;
    }

    if (frames[1].len != 8 || frames[1].data == NULL) {
        return KVR_EVENTS_ERR_SEQ;
    }

    msg->topic = frames[0].data;
    msg->topic_len = frames[0].len;
    msg->seq = kvr_be(frames[1].data, 8);
    msg->payload = frames[2].data;
    msg->payload_len = frames[2].len;

    return KVR_EVENTS_OK;
}


kvr_events_replay_layout_e
kvr_events_replay_layout(const kvr_events_frame_t *frames, size_t n_frames)
{
    /* frame 0 is the empty delimiter the ROUTER puts after the identity */
    if (n_frames == 0 || frames[0].len != 0) {
        return KVR_EVENTS_REPLAY_NONE;
    }

    if (n_frames == 3) {
        return KVR_EVENTS_REPLAY_PLAIN;
    }

    if (n_frames == 4) {
        return KVR_EVENTS_REPLAY_TOPIC;
    }

    return KVR_EVENTS_REPLAY_NONE;
}


kvr_events_status_e
kvr_events_replay_frame(const kvr_events_frame_t *frames, size_t n_frames,
    kvr_events_replay_t *out)
{
    size_t                     seq;
    kvr_events_message_t      *msg;
    kvr_events_replay_layout_e  layout;

    memset(out, 0, sizeof(kvr_events_replay_t));
    msg = &out->msg;

    layout = kvr_events_replay_layout(frames, n_frames);
    if (layout == KVR_EVENTS_REPLAY_NONE) {
        return KVR_EVENTS_ERR_FRAMES;
    }

    out->layout = layout;
    seq = (layout == KVR_EVENTS_REPLAY_PLAIN) ? 1 : 2;

    if (frames[seq].len != 8 || frames[seq].data == NULL) {
        return KVR_EVENTS_ERR_SEQ;
    }

    if (layout == KVR_EVENTS_REPLAY_TOPIC) {
        msg->topic = frames[1].data;
        msg->topic_len = frames[1].len;
    }

    msg->seq = kvr_be(frames[seq].data, 8);
    msg->payload = frames[seq + 1].data;
    msg->payload_len = frames[seq + 1].len;

    /* END_SEQ goes with an empty payload and only with one */
    if ((msg->seq == KVR_EVENTS_END_SEQ) != (msg->payload_len == 0)) {
        return KVR_EVENTS_ERR_FRAMES;
    }

    out->end = (msg->seq == KVR_EVENTS_END_SEQ);

    return KVR_EVENTS_OK;
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
        item->ev.hashes = item->ev.n_hashes ? dec->hashes + item->hash_off
                                            : NULL;
        item->ev.token_ids = item->ev.n_tokens
                             ? dec->tokens + item->token_off : NULL;
        item->ev.extra = item->has_extra ? dec->extras + item->hash_off
                                         : NULL;

        batch->n_delivered++;

        if (handler != NULL && handler(data, batch, &item->ev) != 0) {
            return KVR_EVENTS_ERR_ABORTED;
        }
    }

    return KVR_EVENTS_OK;
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
 * Reads one header and, for str, bin and ext, skips the bytes.  NULL when
 * the input ends early, on 0xc1, or when a container declares more values
 * than bytes are left (each value takes one at least).
 */
static const uint8_t *
kvr_mp_read(const uint8_t *p, const uint8_t *end, kvr_mp_t *v)
{
    size_t    left, size;
    unsigned  c;

    if (p >= end) {
        return NULL;
    }

    c = *p++;
    left = (size_t) (end - p);

    if (c < 0x80) {
        v->type = KVR_MP_UINT;
        v->n = c;
        return p;
    }

    if (c >= 0xe0) {
        v->type = KVR_MP_NINT;
        v->n = (uint64_t) (int64_t) (int8_t) c;
        return p;
    }

    if (c < 0x90) {
        v->type = KVR_MP_MAP;
        v->n = c & 0x0f;
        goto container;
    }

    if (c < 0xa0) {
        v->type = KVR_MP_ARRAY;
        v->n = c & 0x0f;
        goto container;
    }

    if (c < 0xc0) {
        v->type = KVR_MP_STR;
        v->n = c & 0x1f;
        goto bytes;
    }

    switch (c) {

    case 0xc0:
        v->type = KVR_MP_NIL;
        return p;

    case 0xc2:
    case 0xc3:
        v->type = KVR_MP_BOOL;
        v->n = c & 1;
        return p;

    case 0xc4:
    case 0xc5:
    case 0xc6:
    case 0xd9:
    case 0xda:
    case 0xdb:
        v->type = (c <= 0xc6) ? KVR_MP_BIN : KVR_MP_STR;
        size = (size_t) 1 << ((c <= 0xc6) ? c - 0xc4 : c - 0xd9);
        if (left < size) {
            return NULL;
        }
        v->n = kvr_be(p, size);
        p += size;
        left -= size;
        goto bytes;

    case 0xc7:
    case 0xc8:
    case 0xc9:
        /* ext: length, a type byte, then the data */
        size = (size_t) 1 << (c - 0xc7);
        if (left < size + 1) {
            return NULL;
        }
        v->type = KVR_MP_EXT;
        v->n = kvr_be(p, size);
        p += size + 1;
        left -= size + 1;
        goto bytes;

    case 0xca:
        if (left < 4) {
            return NULL;
        }
        {
            float     f32;
            uint32_t  u32;

            u32 = (uint32_t) kvr_be(p, 4);
            memcpy(&f32, &u32, 4);
            v->f = f32;
        }
        v->type = KVR_MP_FLOAT;
        return p + 4;

    case 0xcb:
        if (left < 8) {
            return NULL;
        }
        {
            uint64_t  u64;

            u64 = kvr_be(p, 8);
            memcpy(&v->f, &u64, 8);
        }
        v->type = KVR_MP_FLOAT;
        return p + 8;

    case 0xcc:
    case 0xcd:
    case 0xce:
    case 0xcf:
        size = (size_t) 1 << (c - 0xcc);
        if (left < size) {
            return NULL;
        }
        v->type = KVR_MP_UINT;
        v->n = kvr_be(p, size);
        return p + size;

    case 0xd0:
    case 0xd1:
    case 0xd2:
    case 0xd3:
        size = (size_t) 1 << (c - 0xd0);
        if (left < size) {
            return NULL;
        }
        v->n = kvr_be(p, size);

        /* sign-extend from the encoded width */
        if (size < 8 && (v->n >> (size * 8 - 1))) {
            v->n |= ~(uint64_t) 0 << (size * 8);
        }

        v->type = ((int64_t) v->n < 0) ? KVR_MP_NINT : KVR_MP_UINT;
        return p + size;

    case 0xd4:
    case 0xd5:
    case 0xd6:
    case 0xd7:
    case 0xd8:
        /* fixext: a type byte and 1, 2, 4, 8 or 16 bytes */
        v->type = KVR_MP_EXT;
        v->n = (uint64_t) 1 << (c - 0xd4);
        if (left < 1) {
            return NULL;
        }
        p++;
        left--;
        goto bytes;

    case 0xdc:
    case 0xdd:
    case 0xde:
    case 0xdf:
        size = (c & 1) ? 4 : 2;
        if (left < size) {
            return NULL;
        }
        v->type = (c <= 0xdd) ? KVR_MP_ARRAY : KVR_MP_MAP;
        v->n = kvr_be(p, size);
        p += size;
        left -= size;
        goto container;

    default:
        /* 0xc1, never used */
        return NULL;
    }

bytes:

    if (v->n > left) {
        return NULL;
    }

    v->data = p;

    return p + v->n;

container:

    if ((v->type == KVR_MP_MAP ? v->n * 2 : v->n) > left) {
        return NULL;
    }

    return p;
}


/*
 * Skips one value, checking the grammar of all of it.  depth is how many
 * container levels the value may have; no recursion, the open containers'
 * remaining counts are on a stack of at most KVR_EVENTS_DEPTH_CAP.
 */
static const uint8_t *
kvr_mp_skip(const uint8_t *p, const uint8_t *end, uint32_t depth,
    kvr_events_status_e *err)
{
    uint32_t  n_open;
    uint64_t  left, items;
    kvr_mp_t  v;
    uint64_t  stack[KVR_EVENTS_DEPTH_CAP];

    n_open = 0;
    left = 1;

    if (depth > KVR_EVENTS_DEPTH_CAP) {
        depth = KVR_EVENTS_DEPTH_CAP;
    }

    for ( ;; ) {

        while (left == 0) {
            if (n_open == 0) {
                return p;
            }

            left = stack[--n_open];
        }

        left--;

        /* ints (token arrays) and other fixed sizes: no header decode */
        if (p < end && kvr_mp_fixed[*p] != 0) {
            if ((size_t) (end - p) < kvr_mp_fixed[*p]) {
                *err = KVR_EVENTS_ERR_MSGPACK;
                return NULL;
            }

            p += kvr_mp_fixed[*p];
            continue;
        }

        p = kvr_mp_read(p, end, &v);
        if (p == NULL) {
            *err = KVR_EVENTS_ERR_MSGPACK;
            return NULL;
        }

        if (v.type != KVR_MP_ARRAY && v.type != KVR_MP_MAP) {
            continue;
        }

        if (n_open == depth) {
            *err = KVR_EVENTS_ERR_DEPTH;
            return NULL;
        }

        items = (v.type == KVR_MP_MAP) ? v.n * 2 : v.n;

        stack[n_open++] = left;
        left = items;
    }
}


/*
 * The batch: the whole payload must be one, well-formed and within the
 * limits.  Fills ts and dp_rank and decodes the events into dec.
 */
static kvr_events_status_e
kvr_events_batch(kvr_events_decoder_t *dec, const uint8_t *buf, size_t len,
    kvr_event_batch_t *batch)
{
    int                  is_map, have_ts, have_events;
    uint64_t             i, n;
    uint32_t             sub;
    kvr_mp_t             v, k;
    const uint8_t       *p, *end, *key;
    kvr_events_status_e  err;
    enum { B_NONE, B_TS, B_EVENTS, B_RANK }  field;

    if (len > dec->limits.max_bytes) {
        return KVR_EVENTS_ERR_TOO_BIG;
    }

    end = buf + len;
    sub = dec->limits.max_depth - 1;
    have_ts = 0;
    have_events = 0;

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
            key = p;
            p = kvr_mp_read(p, end, &k);
            if (p == NULL) {
                return KVR_EVENTS_ERR_MSGPACK;
            }

            field = B_NONE;

            if (k.type == KVR_MP_STR) {
                if (k.n == 2 && memcmp(k.data, "ts", 2) == 0) {
                    field = B_TS;

                } else if (k.n == 6 && memcmp(k.data, "events", 6) == 0) {
                    field = B_EVENTS;

                } else if ((k.n == 18
                            && memcmp(k.data, "data_parallel_rank", 18) == 0)
                           || (k.n == 12
                               && memcmp(k.data, "attn_dp_rank", 12) == 0))
                {
                    field = B_RANK;
                }

            } else if (k.type == KVR_MP_ARRAY || k.type == KVR_MP_MAP) {
                p = kvr_mp_skip(key, end, sub, &err);
                if (p == NULL) {
                    return err;
                }
            }

        } else {
            field = (i == 0) ? B_TS : (i == 1) ? B_EVENTS
                    : (i == 2) ? B_RANK : B_NONE;
        }

        switch (field) {

        case B_TS:
            p = kvr_mp_read(p, end, &v);
            if (p == NULL) {
                return KVR_EVENTS_ERR_MSGPACK;
            }

            if (v.type == KVR_MP_FLOAT) {
                batch->ts = v.f;

            } else if (v.type == KVR_MP_UINT) {
                batch->ts = (double) v.n;

            } else if (v.type == KVR_MP_NINT) {
                batch->ts = (double) (int64_t) v.n;

            } else {
                return KVR_EVENTS_ERR_BATCH;
            }

            have_ts = 1;
            break;

        case B_RANK:
            p = kvr_mp_read(p, end, &v);
            if (p == NULL) {
                return KVR_EVENTS_ERR_MSGPACK;
            }

            if (v.type == KVR_MP_UINT || v.type == KVR_MP_NINT) {
                batch->dp_rank = (int64_t) v.n;
                batch->has_dp_rank = 1;

            } else if (v.type == KVR_MP_NIL) {
                batch->dp_rank = 0;
                batch->has_dp_rank = 0;

            } else {
                return KVR_EVENTS_ERR_BATCH;
            }

            break;

        case B_EVENTS:
            if (kvr_mp_read(p, end, &v) == NULL) {
                return KVR_EVENTS_ERR_MSGPACK;
            }

            if (v.type != KVR_MP_ARRAY) {
                return KVR_EVENTS_ERR_BATCH;
            }

            if (v.n > dec->limits.max_events) {
                return KVR_EVENTS_ERR_EVENTS;
            }

            p = kvr_events_list(dec, p, end, batch, &err);
            if (p == NULL) {
                return err;
            }

            have_events = 1;
            break;

        default:
            p = kvr_mp_skip(p, end, sub, &err);
            if (p == NULL) {
                return err;
            }
        }
    }

    if (p != end) {
        return KVR_EVENTS_ERR_MSGPACK;
    }

    if (!have_ts || !have_events) {
        return KVR_EVENTS_ERR_BATCH;
    }

    return KVR_EVENTS_OK;
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

    p = kvr_mp_read(p, end, &v);
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
        memset(&ctx, 0, sizeof(kvr_events_ctx_t));
        ctx.dec = dec;
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
        if (ctx.ev.type != KVR_EVENT_BLOCK_STORED) {
            dec->n_tokens = token_start;
        }

        if (ctx.ev.type == KVR_EVENT_ALL_BLOCKS_CLEARED) {
            dec->n_hashes = hash_start;
        }

        item = &dec->items[dec->n_items++];
        item->ev = ctx.ev;
        item->hash_off = ctx.hash_off;
        item->token_off = ctx.token_off;
        item->has_extra = ctx.has_extra;
    }

    return p;
}


/* room for need elements of size bytes, growing by doubling up to max */
static int
kvr_events_reserve(void **buf, size_t *cap, size_t need, size_t size,
    size_t max)
{
    size_t   n;
    void    *p;

    /* allocated even for none: arithmetic on a NULL base is undefined */
    if (need <= *cap && *buf != NULL) {
        return 0;
    }

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


/*
 * One event, into ctx.  Returns the end of the event, or NULL on a
 * msgpack, depth or limit error (in ctx->err; not set: msgpack).  Sets
 * ctx->known for an event to deliver, ctx->malformed for a bad one, and
 * neither for an unknown tag.
 */
static const uint8_t *
kvr_events_event(kvr_events_ctx_t *ctx, const uint8_t *p, const uint8_t *end)
{
    uint64_t              i, n;
    uint32_t              n_pos, required, fields;
    kvr_mp_t              v, k;
    const uint8_t        *key, *tag, *pos;
    size_t                tag_len;
    kvr_event_type_e      type;
    kvr_event_t           kept;
    kvr_events_field_e    field;

    p = kvr_mp_read(p, end, &v);
    if (p == NULL) {
        return NULL;
    }

    tag = NULL;
    tag_len = 0;

    if (v.type == KVR_MP_ARRAY) {
        n = v.n;
        i = 0;

        if (n > 0) {
            i = 1;
            key = p;
            p = kvr_events_str(p, end, &tag, &tag_len);

            if (p == NULL) {
                tag = NULL;
                p = kvr_mp_skip(key, end, ctx->depth, &ctx->err);
                if (p == NULL) {
                    return NULL;
                }
            }
        }

        n_pos = 0;
        pos = NULL;

        if (tag != NULL && kvr_events_tag(tag, tag_len, &type)) {
            if (type == KVR_EVENT_BLOCK_STORED) {
                pos = kvr_events_stored_pos;
                n_pos = sizeof(kvr_events_stored_pos);

            } else if (type == KVR_EVENT_BLOCK_REMOVED) {
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

    } else if (v.type == KVR_MP_MAP) {

        for (i = 0; i < v.n; i++) {
            key = p;
            p = kvr_mp_read(p, end, &k);
            if (p == NULL) {
                return NULL;
            }

            field = KVR_F_IGNORE;

            if (k.type == KVR_MP_STR) {
                field = kvr_events_key(k.data, (size_t) k.n);

            } else if (k.type == KVR_MP_ARRAY || k.type == KVR_MP_MAP) {
                p = kvr_mp_skip(key, end, ctx->depth, &ctx->err);
                if (p == NULL) {
                    return NULL;
                }
            }

            if (field == KVR_F_TYPE) {
                key = p;
                p = kvr_events_str(p, end, &tag, &tag_len);

                if (p == NULL || tag == NULL) {
                    tag = NULL;
                    ctx->bad |= KVR_BIT(KVR_F_TYPE);
                    p = kvr_mp_skip(key, end, ctx->depth, &ctx->err);
                    if (p == NULL) {
                        return NULL;
                    }
                }

                continue;
            }

            p = kvr_events_field(ctx, field, p, end);
            if (p == NULL) {
                return NULL;
            }
        }

    } else {
        /* a scalar: read has skipped it */
        ctx->malformed = 1;
        return p;
    }

    if (tag == NULL) {
        /* no tag, or not a string */
        ctx->malformed = 1;
        return p;
    }

    if (!kvr_events_tag(tag, tag_len, &type)) {
        return p;
    }

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
        return p;
    }

    ctx->known = 1;

    /* clear what a map may have carried for another type */
    if (type == KVR_EVENT_BLOCK_REMOVED) {
        kept = ctx->ev;
        memset(&ctx->ev, 0, sizeof(kvr_event_t));
        ctx->ev.n_hashes = kept.n_hashes;
        ctx->ev.hashes = kept.hashes;
        ctx->ev.medium = kept.medium;
        ctx->ev.medium_len = kept.medium_len;
        ctx->ev.group_idx = kept.group_idx;
        ctx->ev.has_group_idx = kept.has_group_idx;
        ctx->ev.spec_kind = kept.spec_kind;
        ctx->ev.spec_kind_len = kept.spec_kind_len;
        ctx->has_extra = 0;

    } else if (type == KVR_EVENT_ALL_BLOCKS_CLEARED) {
        memset(&ctx->ev, 0, sizeof(kvr_event_t));
        ctx->has_extra = 0;

    } else if (ctx->extra != NULL && kvr_events_extra(ctx) != 0) {
        return NULL;
    }

    ctx->ev.type = type;

    return p;
}


/* decodes one field value; a bad one is marked and skipped */
static const uint8_t *
kvr_events_field(kvr_events_ctx_t *ctx, kvr_events_field_e field,
    const uint8_t *p, const uint8_t *end)
{
    unsigned              has;
    kvr_mp_t              v;
    kvr_event_t          *ev;
    const uint8_t        *q;

    ev = &ctx->ev;

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
        q = kvr_mp_read(p, end, &v);
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

        q = kvr_mp_read(p, end, &v);
        if (q == NULL || v.type != KVR_MP_ARRAY) {
            q = NULL;
            break;
        }

        /* read once all fields are known (kvr_events_extra) */
        q = kvr_mp_skip(p, end, ctx->depth, &ctx->err);
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
        return kvr_mp_skip(p, end, ctx->depth, &ctx->err);
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

    return kvr_mp_skip(p, end, ctx->depth, &ctx->err);
}


static kvr_events_field_e
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

    p = kvr_mp_read(p, end, &v);
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
    ctx->ev.n_hashes = (uint32_t) v.n;
    dec->n_hashes += v.n;

    return p;
}


/* an int's 64 bits, or a bin's last 8 bytes big-endian */
static const uint8_t *
kvr_events_hash(const uint8_t *p, const uint8_t *end, uint64_t *hash)
{
    kvr_mp_t  v;

    p = kvr_mp_read(p, end, &v);
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
            *hash = kvr_be(v.data + v.n - 8, 8);

        } else {
            *hash = kvr_be(v.data, (size_t) v.n);
        }

        return p;

    default:
        return NULL;
    }
}


/*
 * Token ids: ints in 0..UINT32_MAX of any encoded width.  While 9 bytes
 * are left, one 8-byte load and table lookups decode any width without
 * a branch on it (widths vary at random in real token lists).
 */
static const uint8_t *
kvr_events_tokens(kvr_events_ctx_t *ctx, const uint8_t *p,
    const uint8_t *end)
{
    uint32_t               i, n;
    uint32_t              *tokens;
    uint64_t               t, raw, fix;
    unsigned               c;
    kvr_mp_t               v;
    kvr_events_decoder_t  *dec;

    dec = ctx->dec;

    p = kvr_mp_read(p, end, &v);
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

        ctx->ev.bigram = 1;
        i = n;
    }

    for ( /* void */ ; i < n; i++) {

        if ((size_t) (end - p) >= 9) {
            c = *p;

            if (kvr_tok_len[c] == 0) {
                return NULL;
            }

            raw = kvr_be64(p + 1) >> kvr_tok_shift[c];
            fix = (uint64_t) 0 - (c < 0x80);
            t = (c & fix) | (raw & ~fix);

        } else {
            if (p >= end) {
                return NULL;
            }

            c = *p;

            if (kvr_tok_len[c] == 0 || (size_t) (end - p) < kvr_tok_len[c]) {
                return NULL;
            }

            t = (c < 0x80) ? c : kvr_be(p + 1, kvr_tok_len[c] - 1);
        }

        if (t > kvr_tok_max[c]) {
            return NULL;
        }

        tokens[i] = (uint32_t) t;
        p += kvr_tok_len[c];
    }

    ctx->token_off = dec->n_tokens;
    ctx->ev.n_tokens = n;
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
            p = kvr_mp_read(p, end, &v);
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

    p = kvr_mp_read(p, end, &v);
    if (p == NULL || v.type != KVR_MP_MAP) {
        return NULL;
    }

    n = v.n;

    for (i = 0; i < n; i++) {
        key = p;
        p = kvr_mp_read(p, end, &v);
        if (p == NULL) {
            return NULL;
        }

        if (v.type == KVR_MP_STR && v.n == 10
            && memcmp(v.data, "cache_salt", 10) == 0)
        {
            p = kvr_events_str(p, end, &ctx->ev.cache_salt,
                               &ctx->ev.cache_salt_len);
            if (p == NULL) {
                return NULL;
            }

            continue;
        }

        if (v.type == KVR_MP_ARRAY || v.type == KVR_MP_MAP) {
            p = kvr_mp_skip(key, end, ctx->depth - 1, &ctx->err);
            if (p == NULL) {
                return NULL;
            }
        }

        p = kvr_mp_skip(p, end, ctx->depth - 1, &ctx->err);
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
static int
kvr_events_extra(kvr_events_ctx_t *ctx)
{
    uint64_t               b, m, k, n, d;
    uint64_t              *out;
    kvr_mp_t               v, x;
    kvr_event_t           *ev;
    const uint8_t         *p, *q, *e, *end;
    kvr_events_decoder_t  *dec;

    dec = ctx->dec;
    ev = &ctx->ev;
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
        q = kvr_mp_skip(p, end, ctx->depth, &ctx->err);
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
static const uint8_t *
kvr_events_str(const uint8_t *p, const uint8_t *end, const uint8_t **s,
    size_t *len)
{
    kvr_mp_t  v;

    p = kvr_mp_read(p, end, &v);
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

    p = kvr_mp_read(p, end, &v);
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


static int
kvr_events_tag(const uint8_t *tag, size_t len, kvr_event_type_e *type)
{
    if (len == 11 && memcmp(tag, "BlockStored", 11) == 0) {
        *type = KVR_EVENT_BLOCK_STORED;
        return 1;
    }

    if (len == 12 && memcmp(tag, "BlockRemoved", 12) == 0) {
        *type = KVR_EVENT_BLOCK_REMOVED;
        return 1;
    }

    if (len == 16 && memcmp(tag, "AllBlocksCleared", 16) == 0) {
        *type = KVR_EVENT_ALL_BLOCKS_CLEARED;
        return 1;
    }

    return 0;
}
