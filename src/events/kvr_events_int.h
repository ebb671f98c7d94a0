/*
 * Copyright (C) kvroute developers
 *
 * What the two halves of the KV event decoder share, inside src/events:
 * kvr_events.c (the batch and each event's shape) and kvr_events_field.c
 * (each field's value).  Not for use outside them.
 */

#ifndef _KVR_EVENTS_INT_H_INCLUDED_
#define _KVR_EVENTS_INT_H_INCLUDED_


#include "kvr_events.h"


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
    kvr_event_t           *ev;         /* in dec->items, zeroed */
    size_t                 hash_off;   /* of ev's hashes in dec->hashes */
    size_t                 token_off;
    const uint8_t         *extra;      /* extra_keys' bytes, if an array */
    const uint8_t         *extra_end;
    const uint8_t         *tag;        /* the event's type, if a str */
    size_t                 tag_len;
    kvr_event_type_e       type;       /* the tag's, 0: another tag */
    kvr_events_status_e    err;        /* why a NULL return, if not OK */
    uint32_t               seen;       /* fields decoded */
    uint32_t               bad;        /* fields with a bad value */
    uint32_t               depth;      /* levels a field value may have */
    unsigned               known:1;    /* an event to deliver */
    unsigned               malformed:1;
    unsigned               has_extra:1;
} kvr_events_ctx_t;


const uint8_t *kvr_events_field(kvr_events_ctx_t *ctx,
    kvr_events_field_e field, const uint8_t *p, const uint8_t *end);
kvr_events_field_e kvr_events_key(const uint8_t *key, size_t len);
const uint8_t *kvr_events_str(const uint8_t *p, const uint8_t *end,
    const uint8_t **s, size_t *len);
int kvr_events_extra(kvr_events_ctx_t *ctx);
const uint8_t *kvr_events_skip(const uint8_t *p, const uint8_t *end,
    uint32_t depth, kvr_events_status_e *err);
int kvr_events_grow(void **buf, size_t *cap, size_t need, size_t size,
    size_t max);


/* room for need elements of size bytes; grown (out of line) if short */
static inline int
kvr_events_reserve(void **buf, size_t *cap, size_t need, size_t size,
    size_t max)
{
    /* allocated even for none: arithmetic on a NULL base is undefined */
    if (need <= *cap && *buf != NULL) {
        return 0;
    }

    return kvr_events_grow(buf, cap, need, size, max);
}


#endif /* _KVR_EVENTS_INT_H_INCLUDED_ */
