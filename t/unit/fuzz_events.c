/*
 * Copyright (C) kvroute developers
 *
 * libFuzzer target for kvr_events.  The input is decoded as a payload by
 * two decoders (the default limits and small ones); every delivered event
 * is read in full so that ASan sees any pointer outside the input or the
 * scratch, and these invariants must hold (else abort):
 *   - on success, delivered + unknown + malformed == n_events;
 *   - every event has a known type and counts within the limits, a
 *     BlockStored has block_size >= 1, strings lie inside the input, extra
 *     keys' digests (one a hash) and bigram only on a BlockStored;
 *   - an error delivers nothing;
 *   - the small decoder never accepts what the default one rejects, except
 *     for limits (the default limits are wider).
 * The input is also split into frames for kvr_events_frame() and
 * kvr_events_replay_frame().  Built by `make fuzz`
 * (mk/fuzz.mk), or alone:
 *
 *   make build/fuzz/fuzz_events
 *   build/fuzz/fuzz_events -max_total_time=120 build/fuzz_events_corpus \
 *       t/unit/corpus/events
 */

#include <stdlib.h>
#include <string.h>

#include "kvr_events.h"


typedef struct {
    const uint8_t              *buf;
    size_t                      len;
    const kvr_events_limits_t  *limits;
    uint32_t                    calls;
    uint64_t                    sink;
} fuzz_ctx_t;


static void
check_str(fuzz_ctx_t *ctx, const uint8_t *s, size_t len)
{
    if (s == NULL) {
        if (len != 0) {
            abort();
        }

        return;
    }

    if (s < ctx->buf || len > ctx->len
        || (size_t) (s - ctx->buf) > ctx->len - len)
    {
        abort();
    }

    if (len > 0) {
        ctx->sink += s[0] + s[len - 1];
    }
}


static int
handler(void *data, const kvr_event_batch_t *batch, const kvr_event_t *ev)
{
    uint32_t     i;
    fuzz_ctx_t  *ctx;

    ctx = data;
    ctx->calls++;

    if (batch->n_delivered != ctx->calls) {
        abort();
    }

    if (ev->type != KVR_EVENT_BLOCK_STORED
        && ev->type != KVR_EVENT_BLOCK_REMOVED
        && ev->type != KVR_EVENT_ALL_BLOCKS_CLEARED)
    {
        abort();
    }

    if (ev->n_hashes > ctx->limits->max_hashes
        || ev->n_tokens > ctx->limits->max_tokens
        || (ev->n_hashes && ev->hashes == NULL)
        || (ev->n_tokens && ev->token_ids == NULL))
    {
        abort();
    }

    if (ev->type == KVR_EVENT_BLOCK_STORED && ev->block_size == 0) {
        abort();
    }

    if (ev->type != KVR_EVENT_BLOCK_STORED
        && (ev->n_tokens || ev->has_parent || ev->block_size))
    {
        abort();
    }

    if (ev->type == KVR_EVENT_ALL_BLOCKS_CLEARED && ev->n_hashes) {
        abort();
    }

    for (i = 0; i < ev->n_hashes; i++) {
        ctx->sink += ev->hashes[i];
    }

    for (i = 0; i < ev->n_tokens; i++) {
        ctx->sink += ev->token_ids[i];
    }

    /* extra keys' digests: one a hash, a BlockStored's only */

    if (ev->extra != NULL || ev->bigram) {
        if (ev->type != KVR_EVENT_BLOCK_STORED) {
            abort();
        }

        for (i = 0; ev->extra != NULL && i < ev->n_hashes; i++) {
            ctx->sink += ev->extra[i];
        }
    }

    check_str(ctx, ev->lora_name, ev->lora_name_len);
    check_str(ctx, ev->medium, ev->medium_len);
    check_str(ctx, ev->spec_kind, ev->spec_kind_len);
    check_str(ctx, ev->cache_salt, ev->cache_salt_len);

    return 0;
}


static kvr_events_status_e
decode(kvr_events_decoder_t *dec, const kvr_events_limits_t *limits,
    const uint8_t *buf, size_t len)
{
    fuzz_ctx_t           ctx;
    kvr_event_batch_t    batch;
    kvr_events_status_e  rc;

    memset(&ctx, 0, sizeof(fuzz_ctx_t));
    ctx.buf = buf;
    ctx.len = len;
    ctx.limits = limits;

    rc = kvr_events_decode(dec, buf, len, &batch, handler, &ctx);

    if (rc == KVR_EVENTS_OK) {
        if (batch.n_delivered != ctx.calls
            || (uint64_t) batch.n_delivered + batch.n_unknown
               + batch.n_malformed != batch.n_events
            || batch.n_events > limits->max_events)
        {
            abort();
        }

    } else if (ctx.calls != 0 || rc == KVR_EVENTS_ERR_ABORTED) {
        abort();
    }

    return rc;
}


static void
frames(const uint8_t *data, size_t size)
{
    size_t                i, n, len;
    kvr_events_frame_t    f[6];
    kvr_events_message_t  msg;
    kvr_events_replay_t   rep;

    if (size == 0) {
        return;
    }

    /* first byte: frame count; then a length byte before each frame */
    n = data[0] % 6;
    data++;
    size--;

    for (i = 0; i < n; i++) {
        len = 0;

        if (size > 0) {
            len = data[0] % 12;
            data++;
            size--;
        }

        if (len > size) {
            len = size;
        }

        f[i].data = data;
        f[i].len = len;
        data += len;
        size -= len;
    }

    if (kvr_events_frame(f, n, &msg) == KVR_EVENTS_OK
        && (n != 3 || msg.payload_len != f[2].len))
    {
        abort();
    }

    if (kvr_events_replay_frame(f, n, &rep) == KVR_EVENTS_OK
        && (rep.layout != kvr_events_replay_layout(f, n)
            || rep.end != (rep.msg.seq == KVR_EVENTS_END_SEQ)
            || rep.end != (rep.msg.payload_len == 0)))
    {
        abort();
    }
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t                       *copy;
    kvr_events_status_e            rc_big, rc_small;
    static kvr_events_limits_t     big, small;
    static kvr_events_decoder_t   *dec_big, *dec_small;

    if (dec_big == NULL) {
        kvr_events_limits_default(&big);
        small.max_bytes = 4096;
        small.max_depth = 5;
        small.max_events = 4;
        small.max_hashes = 5;
        small.max_tokens = 9;

        dec_big = kvr_events_decoder_create(&big);
        dec_small = kvr_events_decoder_create(&small);

        if (dec_big == NULL || dec_small == NULL) {
            abort();
        }
    }

    /* an exact-size copy: ASan flags a read one byte past the input */
    copy = malloc(size ? size : 1);
    if (copy == NULL) {
        return 0;
    }

    memcpy(copy, data, size);

    rc_big = decode(dec_big, &big, copy, size);
    rc_small = decode(dec_small, &small, copy, size);

    if (rc_big != KVR_EVENTS_OK && rc_small == KVR_EVENTS_OK) {
        abort();
    }

    /* the same msgpack errors whatever the limits, when both see them */
    if (size <= small.max_bytes
        && (rc_big == KVR_EVENTS_ERR_MSGPACK)
           != (rc_small == KVR_EVENTS_ERR_MSGPACK)
        && rc_small != KVR_EVENTS_ERR_DEPTH
        && rc_small != KVR_EVENTS_ERR_EVENTS
        && rc_small != KVR_EVENTS_ERR_LIMIT)
    {
        abort();
    }

    frames(copy, size);
    free(copy);

    return 0;
}
