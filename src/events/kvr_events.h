/*
 * Copyright (C) kvroute developers
 *
 * Decoder of the KV-cache event messages that vLLM and SGLang publish
 * over ZeroMQ (wire format: shared/docs/kv-events.md).  Bytes in, events
 * out: no sockets, no allocation per message.  Plain C, no nginx types.
 *
 * Two levels:
 *
 *   kvr_events_frame()          checks a PUB message: exactly 3 frames,
 *                               [topic, seq (8 bytes big-endian), payload];
 *   kvr_events_replay_frame()   the same for a replay reply read on a
 *                               DEALER socket, in either layout (with or
 *                               without the topic frame), end marker too;
 *   kvr_events_decode()         decodes a payload (one msgpack KVEventBatch)
 *                               and calls a handler once per known event.
 *
 * The msgpack reader is our own, bounded one (kvr_msgpack.c says why).
 *
 * What the payload decoder accepts (kv-events.md section 0):
 *   - the batch: an array [ts, events] or [ts, events, dp_rank, ...], or
 *     a map {"ts", "events", "data_parallel_rank" | "attn_dp_rank"};
 *     ts is any number, dp_rank an int or nil;
 *   - an event: an array whose element 0 is the tag, decoded by position,
 *     trailing elements ignored; or a map with a "type" key, any key order,
 *     unknown keys ignored, a repeated key's last value wins;
 *   - tags "BlockStored", "BlockRemoved", "AllBlocksCleared"; any other
 *     tag is counted in n_unknown and skipped;
 *   - SGLang: the same, plus an 8-element BlockStored whose element 7 is
 *     a map {"cache_salt": str | nil} instead of lora_name, and a
 *     "cache_salt" key in map events;
 *   - token_ids as ints, or as SGLang's EAGLE bigram pairs [[a, b], ...]
 *     (each pair a position's token and the next one's): the first of
 *     each pair is delivered, bigram set;
 *   - BlockStored extra_keys (position 8, or the key): nil, or an array
 *     of one entry per block, each nil or an array (vLLM: the LoRA name,
 *     multimodal identifiers, cache_salt in the first block only, prompt
 *     embedding digests, in that order).  Read for each block: the LoRA
 *     name (or id) first is skipped; in the first block of a chain (no
 *     parent) a single str left is the cache_salt (delivered in
 *     cache_salt); anything else left is what a request cannot reproduce,
 *     delivered in extra[] as a non-zero digest of the entry's bytes.
 *     An extra_keys of another length than block_hashes, or an entry
 *     that is neither nil nor an array, marks every block so.
 *
 * Hashes (block_hashes, parent_block_hash) become u64 handles:
 *   - an int of any width: its 64-bit two's complement (a negative int64
 *     from python's builtin hash() maps to its unsigned bits);
 *   - bin: the last 8 bytes read big-endian (fewer bytes: all of them,
 *     zero-extended; empty: 0).  That is the value vLLM publishes as an int
 *     for the same digest (int.from_bytes(digest, "big") & (2**64 - 1)),
 *     so a handle does not depend on VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES.
 * A handle is only meaningful within one engine process (section 3).
 *
 * An event whose required fields are missing or have a wrong type, or
 * whose token ids are not u32 ints, is counted in n_malformed and skipped;
 * the rest of the batch goes on.  Required: BlockStored block_hashes,
 * parent_block_hash, token_ids, block_size (>= 1); BlockRemoved
 * block_hashes.  Optional fields, when present, must have their type (int
 * or nil, str or nil; extra_keys nil or an array); ignored fields
 * (session_id, kv_cache_spec_sliding_window, ...) may be anything.  Token
 * lists of another shape (pairs mixed with ints, triples) are malformed.
 * Strings are raw bytes, not checked for UTF-8.
 *
 * One pass decodes the whole payload into the decoder's memory, and the
 * handler is called only once all of it has proved well-formed (msgpack
 * grammar, nothing after the batch, limits, the batch's own fields).  So
 * a payload is either rejected with no handler call or its events are
 * delivered in order: a consumer never applies half of a corrupt batch,
 * and dp_rank, which follows the events on the wire, is known at the
 * first call.  The token count is not checked against the hash count
 * times block_size (hybrid models send other spans); the consumer decides.
 *
 * Memory: the decoder grows its arrays (events, hashes, token ids) as
 * batches need, never beyond the limits, and keeps them for the next
 * batch.  With the default limits that is at most 14 MiB (65536
 * events of 152 bytes, 512 KiB of hashes, 4 MiB of token ids).
 */

#ifndef _KVR_EVENTS_H_INCLUDED_
#define _KVR_EVENTS_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


/* the 8-byte sequence that ends a replay (eight 0xff bytes) */
#define KVR_EVENTS_END_SEQ       UINT64_MAX

/* hard ceilings for the limits (a limit above one is refused) */
#define KVR_EVENTS_DEPTH_CAP     64
#define KVR_EVENTS_BYTES_CAP     ((size_t) 1 << 30)
#define KVR_EVENTS_EVENTS_CAP    (1u << 24)
#define KVR_EVENTS_HASHES_CAP    (1u << 22)
#define KVR_EVENTS_TOKENS_CAP    (1u << 24)


typedef enum {
    KVR_EVENTS_OK = 0,
    KVR_EVENTS_ERR_FRAMES,      /* wrong frame count or delimiter frame */
    KVR_EVENTS_ERR_SEQ,         /* sequence frame not 8 bytes */
    KVR_EVENTS_ERR_TOO_BIG,     /* payload longer than max_bytes */
    KVR_EVENTS_ERR_MSGPACK,     /* truncated, 0xc1, or bytes after it */
    KVR_EVENTS_ERR_DEPTH,       /* nested deeper than max_depth */
    KVR_EVENTS_ERR_EVENTS,      /* more events than max_events */
    KVR_EVENTS_ERR_LIMIT,       /* more hashes or token ids than allowed */
    KVR_EVENTS_ERR_BATCH,       /* not a batch: shape or field types */
    KVR_EVENTS_ERR_NO_MEMORY,   /* growing the decoder's arrays failed */
    KVR_EVENTS_ERR_ABORTED      /* the handler asked to stop */
} kvr_events_status_e;


typedef enum {
    KVR_EVENT_BLOCK_STORED = 1,
    KVR_EVENT_BLOCK_REMOVED,
    KVR_EVENT_ALL_BLOCKS_CLEARED
} kvr_event_type_e;


/* one received frame (a zmq_msg_t's data and size) */
typedef struct {
    const void          *data;
    size_t               len;
} kvr_events_frame_t;


/* a message's parts; they point into the frames */
typedef struct {
    const uint8_t       *topic;
    size_t               topic_len;
    uint64_t             seq;
    const uint8_t       *payload;
    size_t               payload_len;
} kvr_events_message_t;


typedef enum {
    KVR_EVENTS_REPLAY_NONE = 0,  /* neither layout */
    KVR_EVENTS_REPLAY_PLAIN,     /* ["", seq, payload]: vLLM < 0.26, SGLang */
    KVR_EVENTS_REPLAY_TOPIC      /* ["", topic, seq, payload]: vLLM >= 0.26 */
} kvr_events_replay_layout_e;


typedef struct {
    kvr_events_message_t        msg;     /* topic empty in PLAIN */
    kvr_events_replay_layout_e  layout;
    unsigned                    end:1;   /* the end marker, no payload */
} kvr_events_replay_t;


typedef struct {
    size_t               max_bytes;     /* payload length */
    uint32_t             max_depth;     /* containers, the batch is 1 */
    uint32_t             max_events;    /* per batch */
    uint32_t             max_hashes;    /* all block_hashes of a batch */
    uint32_t             max_tokens;    /* all token_ids of a batch */
} kvr_events_limits_t;


/*
 * One decoded event.  The arrays and strings are valid only during the
 * handler call: hashes and token_ids live in the decoder's memory, the
 * strings (not nul-terminated) point into the payload.
 */
typedef struct {
    kvr_event_type_e     type;
    uint32_t             n_hashes;
    const uint64_t      *hashes;        /* stored / removed handles */
    uint64_t             parent;        /* BlockStored, if has_parent */
    uint32_t             n_tokens;
    const uint32_t      *token_ids;     /* BlockStored */
    uint32_t             block_size;    /* BlockStored, >= 1 */
    int64_t              lora_id;       /* if has_lora_id */
    int64_t              group_idx;     /* if has_group_idx */
    const uint8_t       *lora_name;     /* NULL when absent or nil */
    size_t               lora_name_len;
    const uint8_t       *medium;        /* NULL when absent or nil */
    size_t               medium_len;
    const uint8_t       *spec_kind;     /* kv_cache_spec_kind, or NULL */
    size_t               spec_kind_len;
    const uint8_t       *cache_salt;    /* SGLang's, or vLLM's extra key */
    size_t               cache_salt_len;
    const uint64_t      *extra;         /* n_hashes digests or NULL: above */
    unsigned             has_parent:1;
    unsigned             has_lora_id:1;
    unsigned             has_group_idx:1;
    unsigned             bigram:1;      /* token_ids came as pairs */
} kvr_event_t;


/* the batch: ts and dp_rank are known before the first handler call */
typedef struct {
    double               ts;
    int64_t              dp_rank;       /* if has_dp_rank */
    uint32_t             n_events;      /* elements of the events array */
    uint32_t             n_delivered;   /* handler calls */
    uint32_t             n_unknown;     /* unknown tags, skipped */
    uint32_t             n_malformed;   /* bad events, skipped */
    unsigned             has_dp_rank:1;
} kvr_event_batch_t;


/* returns 0 to go on, anything else to stop (KVR_EVENTS_ERR_ABORTED) */
typedef int (*kvr_event_handler_pt)(void *data,
    const kvr_event_batch_t *batch, const kvr_event_t *event);


typedef struct kvr_events_decoder_s  kvr_events_decoder_t;


/* 16 MiB, depth 16, 65536 events, 65536 hashes, 1 Mi token ids */
void kvr_events_limits_default(kvr_events_limits_t *limits);

/*
 * A decoder holds the limits and the memory batches are decoded into
 * (allocated on demand).  NULL when a limit is 0 or above its cap (depth:
 * below 4, the least a batch of BlockStored needs), or when allocation
 * fails.  Not thread-safe: one per thread.
 */
kvr_events_decoder_t *kvr_events_decoder_create(
    const kvr_events_limits_t *limits);
void kvr_events_decoder_destroy(kvr_events_decoder_t *dec);

/* a PUB message: exactly [topic, seq (8 bytes), payload] */
kvr_events_status_e kvr_events_frame(const kvr_events_frame_t *frames,
    size_t n_frames, kvr_events_message_t *msg);

/* which replay layout the frames have, by count and delimiter */
kvr_events_replay_layout_e kvr_events_replay_layout(
    const kvr_events_frame_t *frames, size_t n_frames);

/*
 * A replay reply as read on a DEALER socket (no identity frame).  The end
 * marker has seq KVR_EVENTS_END_SEQ and an empty payload (out->end set);
 * END_SEQ with a payload, or an empty payload with another seq, is
 * KVR_EVENTS_ERR_FRAMES.
 */
kvr_events_status_e kvr_events_replay_frame(const kvr_events_frame_t *frames,
    size_t n_frames, kvr_events_replay_t *out);

/*
 * Decodes one payload.  batch is filled in (zeroed first); handler (may
 * be NULL) is called for each BlockStored, BlockRemoved and
 * AllBlocksCleared in order.  Returns KVR_EVENTS_OK when the batch was
 * delivered (look at n_malformed and n_unknown), an error otherwise;
 * before any handler call unless the error is KVR_EVENTS_ERR_ABORTED.
 */
kvr_events_status_e kvr_events_decode(kvr_events_decoder_t *dec,
    const uint8_t *buf, size_t len, kvr_event_batch_t *batch,
    kvr_event_handler_pt handler, void *data);

/*
 * During a handler call: the event to be delivered after this one (its
 * arrays valid until kvr_events_decode() returns), or NULL after the
 * batch's last.  For a handler that prepares the next event's work (its
 * cache misses) while it applies this one; it is delivered as usual.
 */
const kvr_event_t *kvr_events_next(kvr_events_decoder_t *dec,
    const kvr_event_batch_t *batch);

const char *kvr_events_status_name(kvr_events_status_e status);


#endif /* _KVR_EVENTS_H_INCLUDED_ */
