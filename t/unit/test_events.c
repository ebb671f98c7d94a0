/*
 * Copyright (C) kvroute developers
 *
 * Tests of kvr_events: frames, replay replies, and payloads of both vLLM
 * eras and SGLang, built with msgpack-c's packer (header-only, so no
 * library to link) or written byte by byte from the msgpack spec; every
 * expectation comes from kv-events.md or the msgpack spec, not from the
 * decoder.  Messages captured from the bench emulator are decoded against
 * expectations its own msgpack library produced (corpus/events/NAME.expect,
 * written by corpus/events/capture.js).
 *
 * KVR_EVENTS_BENCH=<seconds> also measures decode speed (blocks/s).
 */

#include <dirent.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <msgpack.h>

#include "kvr_events.h"
#include "tap.h"


#define REC_MAX     64
#define REC_HASHES  16
#define REC_TOKENS  64
#define REC_STR     40


typedef struct {
    kvr_event_type_e     type;
    uint32_t             n_hashes;
    uint64_t             hashes[REC_HASHES];
    int                  has_parent;
    uint64_t             parent;
    uint32_t             n_tokens;
    uint32_t             tokens[REC_TOKENS];
    uint64_t             token_sum;             /* sum of (i + 1) * t[i] */
    uint32_t             block_size;
    int                  has_lora_id;
    int64_t              lora_id;
    int                  has_group_idx;
    int64_t              group_idx;
    char                 lora_name[REC_STR];    /* "" with has_ 0: absent */
    int                  has_lora_name;
    char                 medium[REC_STR];
    int                  has_medium;
    char                 spec_kind[REC_STR];
    int                  has_spec_kind;
    char                 salt[REC_STR];
    int                  has_salt;
    int64_t              dp_rank_seen;          /* batch->dp_rank at call */
    int                  has_dp_rank_seen;
    int                  has_extra;
    uint64_t             extra[REC_HASHES];
    int                  bigram;
} rec_t;


typedef struct {
    uint32_t             n;
    uint32_t             stop_after;            /* 0: never */
    rec_t                ev[REC_MAX];
} sink_t;


static msgpack_sbuffer       sb;
static msgpack_packer        pk;
static kvr_events_decoder_t *dec;
static sink_t                sink;
static kvr_event_batch_t     batch;


static void
copy_str(char *dst, int *has, const uint8_t *s, size_t len)
{
    *has = (s != NULL);
    dst[0] = '\0';

    if (s != NULL && len < REC_STR) {
        memcpy(dst, s, len);
        dst[len] = '\0';
    }
}


static int
record(void *data, const kvr_event_batch_t *b, const kvr_event_t *ev)
{
    uint32_t   i;
    rec_t     *r;
    sink_t    *s;

    s = data;

    if (s->n == REC_MAX) {
        return 1;
    }

    r = &s->ev[s->n++];
    memset(r, 0, sizeof(rec_t));

    r->type = ev->type;
    r->n_hashes = ev->n_hashes;
    for (i = 0; i < ev->n_hashes && i < REC_HASHES; i++) {
        r->hashes[i] = ev->hashes[i];
    }

    r->has_parent = ev->has_parent;
    r->parent = ev->parent;
    r->n_tokens = ev->n_tokens;
    for (i = 0; i < ev->n_tokens; i++) {
        if (i < REC_TOKENS) {
            r->tokens[i] = ev->token_ids[i];
        }

        r->token_sum += (uint64_t) (i + 1) * ev->token_ids[i];
    }

    r->block_size = ev->block_size;
    r->has_lora_id = ev->has_lora_id;
    r->lora_id = ev->lora_id;
    r->has_group_idx = ev->has_group_idx;
    r->group_idx = ev->group_idx;
    copy_str(r->lora_name, &r->has_lora_name, ev->lora_name,
             ev->lora_name_len);
    copy_str(r->medium, &r->has_medium, ev->medium, ev->medium_len);
    copy_str(r->spec_kind, &r->has_spec_kind, ev->spec_kind,
             ev->spec_kind_len);
    copy_str(r->salt, &r->has_salt, ev->cache_salt, ev->cache_salt_len);
    r->dp_rank_seen = b->dp_rank;
    r->has_dp_rank_seen = b->has_dp_rank;
    r->has_extra = (ev->extra != NULL);
    for (i = 0; ev->extra != NULL && i < ev->n_hashes && i < REC_HASHES; i++) {
        r->extra[i] = ev->extra[i];
    }

    r->bigram = ev->bigram;

    return (s->stop_after != 0 && s->n == s->stop_after);
}


static kvr_events_status_e
run(const void *buf, size_t len)
{
    memset(&sink, 0, sizeof(sink_t));
    return kvr_events_decode(dec, buf, len, &batch, record, &sink);
}


static kvr_events_status_e
run_packed(void)
{
    return run(sb.data, sb.size);
}


static void
pk_reset(void)
{
    msgpack_sbuffer_clear(&sb);
}


static void
pk_str(const char *s)
{
    msgpack_pack_str_with_body(&pk, s, strlen(s));
}


static void
pk_raw(const void *bytes, size_t n)
{
    if (msgpack_sbuffer_write(&sb, bytes, n) != 0) {
        abort();
    }
}


static void
pk_tokens(const uint32_t *t, size_t n)
{
    size_t  i;

    msgpack_pack_array(&pk, n);
    for (i = 0; i < n; i++) {
        msgpack_pack_uint32(&pk, t[i]);
    }
}


/* kv-events.md 2.5, with concrete values */

#define H_OLD   0xfedcba9876543210ull
#define H1      0x8000000000000001ull
#define H2      12345ull
#define TS      1761816192.13

static const uint32_t  ex_tokens[8] = {
    151643, 9707, 11, 1879, 0, 127, 128, 65536
};


static void
pack_example_array(void)
{
    pk_reset();
    msgpack_pack_array(&pk, 3);
    msgpack_pack_double(&pk, TS);
    msgpack_pack_array(&pk, 2);

    msgpack_pack_array(&pk, 4);
    pk_str("BlockRemoved");
    msgpack_pack_array(&pk, 1);
    msgpack_pack_uint64(&pk, H_OLD);
    pk_str("GPU");
    msgpack_pack_int(&pk, 0);

    msgpack_pack_array(&pk, 12);
    pk_str("BlockStored");
    msgpack_pack_array(&pk, 2);
    msgpack_pack_uint64(&pk, H1);
    msgpack_pack_uint64(&pk, H2);
    msgpack_pack_nil(&pk);
    pk_tokens(ex_tokens, 8);
    msgpack_pack_int(&pk, 4);
    msgpack_pack_nil(&pk);
    pk_str("GPU");
    msgpack_pack_nil(&pk);
    msgpack_pack_array(&pk, 2);
    msgpack_pack_nil(&pk);
    msgpack_pack_nil(&pk);
    msgpack_pack_int(&pk, 0);
    pk_str("full_attention");
    msgpack_pack_nil(&pk);

    msgpack_pack_int(&pk, 0);
}


static void
pack_example_map(void)
{
    pk_reset();
    msgpack_pack_array(&pk, 3);
    msgpack_pack_double(&pk, TS);
    msgpack_pack_array(&pk, 2);

    msgpack_pack_map(&pk, 4);
    pk_str("type");
    pk_str("BlockRemoved");
    pk_str("block_hashes");
    msgpack_pack_array(&pk, 1);
    msgpack_pack_uint64(&pk, H_OLD);
    pk_str("medium");
    pk_str("GPU");
    pk_str("group_idx");
    msgpack_pack_int(&pk, 0);

    msgpack_pack_map(&pk, 11);
    pk_str("type");
    pk_str("BlockStored");
    pk_str("block_hashes");
    msgpack_pack_array(&pk, 2);
    msgpack_pack_uint64(&pk, H1);
    msgpack_pack_uint64(&pk, H2);
    pk_str("parent_block_hash");
    msgpack_pack_nil(&pk);
    pk_str("token_ids");
    pk_tokens(ex_tokens, 8);
    pk_str("block_size");
    msgpack_pack_int(&pk, 4);
    pk_str("lora_id");
    msgpack_pack_nil(&pk);
    pk_str("medium");
    pk_str("GPU");
    pk_str("lora_name");
    msgpack_pack_nil(&pk);
    pk_str("extra_keys");
    msgpack_pack_array(&pk, 2);
    msgpack_pack_nil(&pk);
    msgpack_pack_nil(&pk);
    pk_str("group_idx");
    msgpack_pack_int(&pk, 0);
    pk_str("kv_cache_spec_kind");
    pk_str("full_attention");

    msgpack_pack_int(&pk, 0);
}


static void
check_example(const char *era)
{
    uint32_t  i;
    int       same;
    rec_t    *r;

    tap_is(sink.n, 2, "example: two events delivered");
    tap_is(batch.n_events, 2, "example: n_events");
    tap_is(batch.n_delivered, 2, "example: n_delivered");
    tap_is(batch.n_malformed + batch.n_unknown, 0, "example: none skipped");
    tap_ok(batch.ts == TS, "%s: ts is the float64", era);
    tap_ok(batch.has_dp_rank && batch.dp_rank == 0, "%s: dp_rank 0", era);

    if (sink.n != 2) {
        return;
    }

    r = &sink.ev[0];
    tap_is(r->type, KVR_EVENT_BLOCK_REMOVED, "example: removal first");
    tap_ok(r->n_hashes == 1 && r->hashes[0] == H_OLD,
           "%s: removed hash (uint64 on the wire)", era);
    tap_ok(r->has_medium && strcmp(r->medium, "GPU") == 0,
           "%s: removed medium GPU", era);
    tap_ok(r->has_group_idx && r->group_idx == 0, "%s: group_idx 0", era);
    tap_ok(r->n_tokens == 0 && !r->has_parent,
           "%s: a removal carries no tokens or parent", era);
    tap_ok(r->has_dp_rank_seen && r->dp_rank_seen == 0,
           "%s: dp_rank known at the first handler call", era);

    r = &sink.ev[1];
    tap_is(r->type, KVR_EVENT_BLOCK_STORED, "example: store second");
    tap_ok(r->n_hashes == 2 && r->hashes[0] == H1 && r->hashes[1] == H2,
           "%s: stored hashes in order", era);
    tap_ok(!r->has_parent, "%s: nil parent", era);

    same = (r->n_tokens == 8);
    for (i = 0; same && i < 8; i++) {
        same = (r->tokens[i] == ex_tokens[i]);
    }

    tap_ok(same, "%s: 8 token ids, all widths", era);
    tap_is(r->block_size, 4, "example: block_size");
    tap_ok(!r->has_lora_id && !r->has_lora_name,
           "%s: lora_id and lora_name nil", era);
    tap_ok(r->has_medium && strcmp(r->medium, "GPU") == 0,
           "%s: stored medium GPU", era);
    tap_ok(r->has_spec_kind && strcmp(r->spec_kind, "full_attention") == 0,
           "%s: kv_cache_spec_kind", era);
    tap_ok(r->has_group_idx && r->group_idx == 0, "%s: stored group_idx",
           era);
    tap_ok(!r->has_salt, "%s: no cache_salt", era);
}


static void
test_frames(void)
{
    kvr_events_frame_t        f[5];
    kvr_events_message_t      msg;
    kvr_events_replay_t       rep;
    kvr_events_status_e       rc;
    static const uint8_t      seq42[8] = { 0, 0, 0, 0, 0, 0, 0, 42 };
    static const uint8_t      seqbe[9] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
    static const uint8_t      end[8] = {
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff
    };
    static const uint8_t      payload[3] = { 0x92, 0x00, 0x90 };

    f[0].data = "kv-events";
    f[0].len = 9;
    f[1].data = seq42;
    f[1].len = 8;
    f[2].data = payload;
    f[2].len = 3;

    rc = kvr_events_frame(f, 3, &msg);
    tap_is(rc, KVR_EVENTS_OK, "frame: 3 frames accepted");
    tap_ok(msg.topic_len == 9 && memcmp(msg.topic, "kv-events", 9) == 0,
           "frame: topic");
    tap_ok(msg.seq == 42, "frame: seq 42");
    tap_ok(msg.payload == payload && msg.payload_len == 3, "frame: payload");

    f[1].data = seqbe;
    rc = kvr_events_frame(f, 3, &msg);
    tap_ok(rc == KVR_EVENTS_OK && msg.seq == 0x0102030405060708ull,
           "frame: seq is big-endian");

    f[0].len = 0;
    rc = kvr_events_frame(f, 3, &msg);
    tap_ok(rc == KVR_EVENTS_OK && msg.topic_len == 0,
           "frame: empty topic (vLLM default) accepted");

    tap_is(kvr_events_frame(f, 2, &msg), KVR_EVENTS_ERR_FRAMES,
           "frame: 2 frames rejected");
    tap_is(kvr_events_frame(f, 4, &msg), KVR_EVENTS_ERR_FRAMES,
           "frame: 4 frames rejected");
    tap_is(kvr_events_frame(f, 1, &msg), KVR_EVENTS_ERR_FRAMES,
           "frame: 1 frame rejected");
    tap_is(kvr_events_frame(f, 0, &msg), KVR_EVENTS_ERR_FRAMES,
           "frame: 0 frames rejected");

    f[1].len = 7;
    tap_is(kvr_events_frame(f, 3, &msg), KVR_EVENTS_ERR_SEQ,
           "frame: 7-byte sequence rejected");
    f[1].len = 9;
    tap_is(kvr_events_frame(f, 3, &msg), KVR_EVENTS_ERR_SEQ,
           "frame: 9-byte sequence rejected");
    f[1].len = 0;
    tap_is(kvr_events_frame(f, 3, &msg), KVR_EVENTS_ERR_SEQ,
           "frame: empty sequence rejected");

    /* replay, original layout: ["", seq, payload], end ["", END, ""] */
    f[0].data = "";
    f[0].len = 0;
    f[1].data = seq42;
    f[1].len = 8;
    f[2].data = payload;
    f[2].len = 3;

    tap_is(kvr_events_replay_layout(f, 3), KVR_EVENTS_REPLAY_PLAIN,
           "replay: 3 frames is the original layout");
    rc = kvr_events_replay_frame(f, 3, &rep);
    tap_ok(rc == KVR_EVENTS_OK && rep.layout == KVR_EVENTS_REPLAY_PLAIN
           && rep.msg.seq == 42 && rep.msg.payload == payload
           && rep.msg.payload_len == 3 && rep.msg.topic_len == 0 && !rep.end,
           "replay: original batch reply");

    f[1].data = end;
    f[2].len = 0;
    rc = kvr_events_replay_frame(f, 3, &rep);
    tap_ok(rc == KVR_EVENTS_OK && rep.end
           && rep.msg.seq == KVR_EVENTS_END_SEQ,
           "replay: original end marker");

    f[2].len = 3;
    tap_is(kvr_events_replay_frame(f, 3, &rep), KVR_EVENTS_ERR_FRAMES,
           "replay: END_SEQ with a payload rejected");

    f[1].data = seq42;
    f[2].len = 0;
    tap_is(kvr_events_replay_frame(f, 3, &rep), KVR_EVENTS_ERR_FRAMES,
           "replay: empty payload with a real seq rejected");

    f[2].len = 3;
    f[1].len = 7;
    tap_is(kvr_events_replay_frame(f, 3, &rep), KVR_EVENTS_ERR_SEQ,
           "replay: 7-byte seq rejected");
    f[1].len = 8;

    f[0].data = "x";
    f[0].len = 1;
    tap_is(kvr_events_replay_layout(f, 3), KVR_EVENTS_REPLAY_NONE,
           "replay: non-empty delimiter is neither layout");
    tap_is(kvr_events_replay_frame(f, 3, &rep), KVR_EVENTS_ERR_FRAMES,
           "replay: non-empty delimiter rejected");

    /* replay after vLLM #45177: ["", topic, seq, payload] */
    f[0].data = "";
    f[0].len = 0;
    f[1].data = "kv-events";
    f[1].len = 9;
    f[2].data = seq42;
    f[2].len = 8;
    f[3].data = payload;
    f[3].len = 3;

    tap_is(kvr_events_replay_layout(f, 4), KVR_EVENTS_REPLAY_TOPIC,
           "replay: 4 frames is the topic layout");
    rc = kvr_events_replay_frame(f, 4, &rep);
    tap_ok(rc == KVR_EVENTS_OK && rep.layout == KVR_EVENTS_REPLAY_TOPIC
           && rep.msg.seq == 42 && rep.msg.topic_len == 9
           && memcmp(rep.msg.topic, "kv-events", 9) == 0
           && rep.msg.payload == payload && !rep.end,
           "replay: topic-layout batch reply");

    f[1].len = 0;
    f[2].data = end;
    f[3].len = 0;
    rc = kvr_events_replay_frame(f, 4, &rep);
    tap_ok(rc == KVR_EVENTS_OK && rep.end
           && rep.layout == KVR_EVENTS_REPLAY_TOPIC,
           "replay: topic-layout end marker (empty topic)");

    f[2].len = 7;
    tap_is(kvr_events_replay_frame(f, 4, &rep), KVR_EVENTS_ERR_SEQ,
           "replay: topic layout, 7-byte seq rejected");

    tap_is(kvr_events_replay_layout(f, 2), KVR_EVENTS_REPLAY_NONE,
           "replay: 2 frames is neither layout");
    tap_is(kvr_events_replay_frame(f, 5, &rep), KVR_EVENTS_ERR_FRAMES,
           "replay: 5 frames rejected");
    tap_is(kvr_events_replay_frame(f, 0, &rep), KVR_EVENTS_ERR_FRAMES,
           "replay: 0 frames rejected");
}


static void
test_examples(void)
{
    rec_t  *r;

    pack_example_array();
    tap_is(run_packed(), KVR_EVENTS_OK, "array era example decodes");
    check_example("array era");

    pack_example_map();
    tap_is(run_packed(), KVR_EVENTS_OK, "map era example decodes");
    check_example("map era");

    /* v0.9.0: [ts, [["BlockStored", hashes, parent, tokens, bs, lora]]] */
    pk_reset();
    msgpack_pack_array(&pk, 2);
    msgpack_pack_double(&pk, TS);
    msgpack_pack_array(&pk, 1);
    msgpack_pack_array(&pk, 6);
    pk_str("BlockStored");
    msgpack_pack_array(&pk, 2);
    msgpack_pack_uint64(&pk, H1);
    msgpack_pack_uint64(&pk, H2);
    msgpack_pack_uint64(&pk, H_OLD);
    pk_tokens(ex_tokens, 8);
    msgpack_pack_int(&pk, 4);
    msgpack_pack_int(&pk, 7);

    tap_is(run_packed(), KVR_EVENTS_OK, "v0.9.0 batch decodes");
    tap_ok(!batch.has_dp_rank, "v0.9.0: no dp_rank");
    r = &sink.ev[0];
    tap_ok(sink.n == 1 && r->type == KVR_EVENT_BLOCK_STORED
           && r->n_hashes == 2 && r->has_parent && r->parent == H_OLD
           && r->n_tokens == 8 && r->block_size == 4
           && r->has_lora_id && r->lora_id == 7 && !r->has_medium
           && !r->has_lora_name && !r->has_group_idx,
           "v0.9.0: 6-element BlockStored, parent and lora_id");
}


/* [1.0, [["BlockStored", [<hash>], <parent>, [], 16, nil]]] */
static void
pack_hash_event(const uint8_t *hash, size_t hash_len, const uint8_t *parent,
    size_t parent_len)
{
    static const uint8_t  nil = 0xc0;

    pk_reset();
    msgpack_pack_array(&pk, 2);
    msgpack_pack_double(&pk, 1.0);
    msgpack_pack_array(&pk, 1);
    msgpack_pack_array(&pk, 6);
    pk_str("BlockStored");
    msgpack_pack_array(&pk, 1);
    pk_raw(hash, hash_len);

    if (parent != NULL) {
        pk_raw(parent, parent_len);

    } else {
        pk_raw(&nil, 1);
    }

    msgpack_pack_array(&pk, 0);
    msgpack_pack_int(&pk, 16);
    msgpack_pack_nil(&pk);
}


typedef struct {
    const char          *name;
    uint8_t              bytes[40];
    size_t               len;
    uint64_t             want;
} hash_case_t;


static void
test_hashes(void)
{
    size_t        i;
    uint8_t       bin[40];
    kvr_events_status_e  rc;

    /* every msgpack int format; values from the msgpack spec */
    static const hash_case_t  ints[] = {
        { "positive fixint", { 0x05 }, 1, 5 },
        { "positive fixint 127", { 0x7f }, 1, 127 },
        { "uint8", { 0xcc, 0xff }, 2, 255 },
        { "uint16", { 0xcd, 0x12, 0x34 }, 3, 0x1234 },
        { "uint32", { 0xce, 0x89, 0xab, 0xcd, 0xef }, 5, 0x89abcdefull },
        { "uint64", { 0xcf, 0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32,
                      0x10 }, 9, 0xfedcba9876543210ull },
        { "uint64 max", { 0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                          0xff }, 9, UINT64_MAX },
        { "negative fixint -1", { 0xff }, 1, UINT64_MAX },
        { "negative fixint -32", { 0xe0 }, 1, (uint64_t) -32 },
        { "int8 -128", { 0xd0, 0x80 }, 2, (uint64_t) -128 },
        { "int8 holding 5", { 0xd0, 0x05 }, 2, 5 },
        { "int16 -32768", { 0xd1, 0x80, 0x00 }, 3, (uint64_t) -32768 },
        { "int16 holding 300", { 0xd1, 0x01, 0x2c }, 3, 300 },
        { "int32 -2", { 0xd2, 0xff, 0xff, 0xff, 0xfe }, 5, (uint64_t) -2 },
        { "int64 min", { 0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0 }, 9,
          0x8000000000000000ull },
        { "int64 max", { 0xd3, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                         0xff }, 9, 0x7fffffffffffffffull },
        { "int64 -5 (builtin hash)", { 0xd3, 0xff, 0xff, 0xff, 0xff, 0xff,
                                       0xff, 0xff, 0xfb }, 9,
          (uint64_t) -5 },
    };

    /* types that are not hashes */
    static const hash_case_t  bad[] = {
        { "str", { 0xa1, 'x' }, 2, 0 },
        { "float64", { 0xcb, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0 }, 9, 0 },
        { "float32", { 0xca, 0x3f, 0x80, 0, 0 }, 5, 0 },
        { "nil", { 0xc0 }, 1, 0 },
        { "true", { 0xc3 }, 1, 0 },
        { "array", { 0x91, 0x01 }, 2, 0 },
        { "map", { 0x80 }, 1, 0 },
        { "fixext1", { 0xd4, 0x01, 0x00 }, 3, 0 },
    };

    for (i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
        pack_hash_event(ints[i].bytes, ints[i].len, ints[i].bytes,
                        ints[i].len);
        rc = run_packed();
        tap_ok(rc == KVR_EVENTS_OK && sink.n == 1
               && sink.ev[0].n_hashes == 1
               && sink.ev[0].hashes[0] == ints[i].want
               && sink.ev[0].has_parent
               && sink.ev[0].parent == ints[i].want,
               "hash and parent as %s", ints[i].name);
    }

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        pack_hash_event(bad[i].bytes, bad[i].len, NULL, 0);
        rc = run_packed();
        tap_ok(rc == KVR_EVENTS_OK && sink.n == 0 && batch.n_malformed == 1,
               "hash as %s: event malformed", bad[i].name);

        if (bad[i].bytes[0] == 0xc0) {
            continue;   /* nil is a valid parent */
        }

        pack_hash_event(ints[0].bytes, 1, bad[i].bytes, bad[i].len);
        rc = run_packed();
        tap_ok(rc == KVR_EVENTS_OK && sink.n == 0 && batch.n_malformed == 1,
               "parent as %s: event malformed", bad[i].name);
    }

    /* bin: the last 8 bytes big-endian, as vLLM's int form */
    bin[0] = 0xc4;
    bin[1] = 32;
    for (i = 0; i < 32; i++) {
        bin[2 + i] = (uint8_t) i;
    }

    pack_hash_event(bin, 34, bin, 34);
    rc = run_packed();
    tap_ok(rc == KVR_EVENTS_OK && sink.n == 1
           && sink.ev[0].hashes[0] == 0x18191a1b1c1d1e1full
           && sink.ev[0].parent == 0x18191a1b1c1d1e1full,
           "bin8 32-byte digest: last 8 bytes big-endian");

    /* the same digest as bin16 and bin32 */
    memmove(bin + 3, bin + 2, 32);
    bin[0] = 0xc5;
    bin[1] = 0;
    bin[2] = 32;
    pack_hash_event(bin, 35, NULL, 0);
    rc = run_packed();
    tap_ok(rc == KVR_EVENTS_OK && sink.n == 1
           && sink.ev[0].hashes[0] == 0x18191a1b1c1d1e1full,
           "bin16 digest: same handle");

    memmove(bin + 5, bin + 3, 32);
    bin[0] = 0xc6;
    bin[1] = 0;
    bin[2] = 0;
    bin[3] = 0;
    bin[4] = 32;
    pack_hash_event(bin, 37, NULL, 0);
    rc = run_packed();
    tap_ok(rc == KVR_EVENTS_OK && sink.n == 1
           && sink.ev[0].hashes[0] == 0x18191a1b1c1d1e1full,
           "bin32 digest: same handle");

    /* xxh3_128 digests are 16 bytes */
    bin[0] = 0xc4;
    bin[1] = 16;
    for (i = 0; i < 16; i++) {
        bin[2 + i] = (uint8_t) (0xa0 + i);
    }

    pack_hash_event(bin, 18, NULL, 0);
    rc = run_packed();
    tap_ok(rc == KVR_EVENTS_OK && sink.n == 1
           && sink.ev[0].hashes[0] == 0xa8a9aaabacadaeafull,
           "bin 16-byte digest: last 8 bytes");

    bin[1] = 3;
    bin[2] = 1;
    bin[3] = 2;
    bin[4] = 3;
    pack_hash_event(bin, 5, NULL, 0);
    rc = run_packed();
    tap_ok(rc == KVR_EVENTS_OK && sink.n == 1
           && sink.ev[0].hashes[0] == 0x010203,
           "bin of 3 bytes: zero-extended big-endian");

    bin[1] = 0;
    pack_hash_event(bin, 2, NULL, 0);
    rc = run_packed();
    tap_ok(rc == KVR_EVENTS_OK && sink.n == 1 && sink.ev[0].hashes[0] == 0,
           "empty bin: 0");
}


static void
pack_tokens_event(const uint8_t *raw, size_t raw_len, size_t n_tokens)
{
    pk_reset();
    msgpack_pack_array(&pk, 3);
    msgpack_pack_double(&pk, 1.0);
    msgpack_pack_array(&pk, 2);

    msgpack_pack_array(&pk, 5);
    pk_str("BlockStored");
    msgpack_pack_array(&pk, 1);
    msgpack_pack_uint64(&pk, 1);
    msgpack_pack_nil(&pk);
    msgpack_pack_array(&pk, n_tokens);
    pk_raw(raw, raw_len);
    msgpack_pack_int(&pk, 16);

    /* a good event after it */
    msgpack_pack_array(&pk, 2);
    pk_str("BlockRemoved");
    msgpack_pack_array(&pk, 1);
    msgpack_pack_uint64(&pk, 99);

    msgpack_pack_int(&pk, 0);
}


static void
test_tokens(void)
{
    size_t               i;
    int                  same;
    kvr_events_status_e  rc;

    static const uint8_t   raw[] = {
        0x05,
        0xcc, 0xc8,
        0xcd, 0x9c, 0x40,
        0xce, 0x00, 0x02, 0x50, 0x9b,
        0xce, 0xff, 0xff, 0xff, 0xff,
        0xcf, 0, 0, 0, 0, 0, 0, 0, 7,
        0xd0, 0x05,
        0xd1, 0x01, 0x00,
        0xd2, 0x00, 0x01, 0x00, 0x00,
        0xd3, 0, 0, 0, 0, 0, 0, 0, 9
    };
    static const uint32_t  want[] = {
        5, 200, 40000, 151707, 4294967295u, 7, 5, 256, 65536, 9
    };

    static const hash_case_t  bad[] = {
        { "negative fixint", { 0xff }, 1, 0 },
        { "int8 -1", { 0xd0, 0xff }, 2, 0 },
        { "int64 -1", { 0xd3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                        0xff }, 9, 0 },
        { "uint64 2^32", { 0xcf, 0, 0, 0, 1, 0, 0, 0, 0 }, 9, 0 },
        { "int64 2^32", { 0xd3, 0, 0, 0, 1, 0, 0, 0, 0 }, 9, 0 },
        { "float64", { 0xcb, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0 }, 9, 0 },
        { "str", { 0xa1, 'a' }, 2, 0 },
        { "nil", { 0xc0 }, 1, 0 },
        { "true", { 0xc3 }, 1, 0 },
        { "bin", { 0xc4, 1, 5 }, 3, 0 },
        { "triple", { 0x93, 0x01, 0x02, 0x03 }, 4, 0 },
        { "pair of str", { 0x92, 0xa1, 'a', 0x02 }, 4, 0 },
    };

    pack_tokens_event(raw, sizeof(raw), 10);
    rc = run_packed();

    same = (rc == KVR_EVENTS_OK && sink.n == 2 && sink.ev[0].n_tokens == 10);
    for (i = 0; same && i < 10; i++) {
        same = (sink.ev[0].tokens[i] == want[i]);
    }

    tap_ok(same, "token ids in every int format that holds a u32");

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        pack_tokens_event(bad[i].bytes, bad[i].len, 1);
        rc = run_packed();
        tap_ok(rc == KVR_EVENTS_OK && batch.n_malformed == 1 && sink.n == 1
               && sink.ev[0].type == KVR_EVENT_BLOCK_REMOVED
               && sink.ev[0].hashes[0] == 99,
               "token as %s: event malformed, next one delivered",
               bad[i].name);
    }
}


/*
 * Array-era BlockStored with a wrong type at one position (0: none):
 * positions 1-11 are the fields of kv-events.md 2.3.
 */
static void
pack_stored_bad_pos(int bad, int wrong_int)
{
    int  i;

    pk_reset();
    msgpack_pack_array(&pk, 3);
    msgpack_pack_double(&pk, 2.5);
    msgpack_pack_array(&pk, 2);
    msgpack_pack_array(&pk, 12);
    pk_str("BlockStored");

    for (i = 1; i <= 11; i++) {
        if (i == bad) {
            if (wrong_int) {
                msgpack_pack_int(&pk, 5);

            } else {
                pk_str("x");
            }

            continue;
        }

        switch (i) {
        case 1:
            msgpack_pack_array(&pk, 1);
            msgpack_pack_uint64(&pk, 77);
            break;
        case 2:
            msgpack_pack_uint64(&pk, 76);
            break;
        case 3:
            pk_tokens(ex_tokens, 4);
            break;
        case 4:
            msgpack_pack_int(&pk, 4);
            break;
        case 5:
            msgpack_pack_int(&pk, 3);
            break;
        case 6:
            pk_str("GPU");
            break;
        case 7:
            pk_str("adapter");
            break;
        case 8:
            msgpack_pack_array(&pk, 1);
            msgpack_pack_nil(&pk);
            break;
        case 9:
            msgpack_pack_int(&pk, 1);
            break;
        case 10:
            pk_str("full_attention");
            break;
        default:
            msgpack_pack_nil(&pk);
        }
    }

    msgpack_pack_array(&pk, 1);
    pk_str("AllBlocksCleared");
    msgpack_pack_int(&pk, 0);
}


/* map-era BlockStored with a wrong value under one key (NULL: none) */
static void
pack_stored_bad_key(const char *bad, int wrong_int)
{
    size_t  i;

    static const char  *keys[] = {
        "block_hashes", "parent_block_hash", "token_ids", "block_size",
        "lora_id", "medium", "lora_name", "extra_keys", "group_idx",
        "kv_cache_spec_kind", "kv_cache_spec_sliding_window", "session_id"
    };

    pk_reset();
    msgpack_pack_array(&pk, 3);
    msgpack_pack_double(&pk, 2.5);
    msgpack_pack_array(&pk, 2);
    msgpack_pack_map(&pk, 13);

    for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        pk_str(keys[i]);

        if (bad != NULL && strcmp(bad, keys[i]) == 0) {
            if (wrong_int) {
                msgpack_pack_int(&pk, 5);

            } else {
                pk_str("x");
            }

            continue;
        }

        switch (i) {
        case 0:
            msgpack_pack_array(&pk, 1);
            msgpack_pack_uint64(&pk, 77);
            break;
        case 1:
            msgpack_pack_uint64(&pk, 76);
            break;
        case 2:
            pk_tokens(ex_tokens, 4);
            break;
        case 3:
            msgpack_pack_int(&pk, 4);
            break;
        case 4:
            msgpack_pack_int(&pk, 3);
            break;
        case 5:
            pk_str("GPU");
            break;
        case 6:
            pk_str("adapter");
            break;
        case 7:
            msgpack_pack_array(&pk, 1);
            msgpack_pack_nil(&pk);
            break;
        case 8:
            msgpack_pack_int(&pk, 1);
            break;
        case 9:
            pk_str("full_attention");
            break;
        case 10:
            msgpack_pack_int(&pk, 128);
            break;
        default:
            pk_str("sess");
        }
    }

    /* "type" last: key order is not relied on */
    pk_str("type");

    if (bad != NULL && strcmp(bad, "type") == 0) {
        msgpack_pack_int(&pk, 5);

    } else {
        pk_str("BlockStored");
    }

    msgpack_pack_map(&pk, 1);
    pk_str("type");
    pk_str("AllBlocksCleared");
    msgpack_pack_int(&pk, 0);
}


static void
test_wrong_types(void)
{
    int                  pos, wrong_int, ignored;
    size_t               i;
    rec_t               *r;
    kvr_events_status_e  rc;

    static const char  *names[] = {
        "", "block_hashes", "parent_block_hash", "token_ids", "block_size",
        "lora_id", "medium", "lora_name", "extra_keys", "group_idx",
        "kv_cache_spec_kind", "kv_cache_spec_sliding_window"
    };

    pack_stored_bad_pos(0, 0);
    rc = run_packed();
    r = &sink.ev[0];
    tap_ok(rc == KVR_EVENTS_OK && sink.n == 2
           && r->type == KVR_EVENT_BLOCK_STORED && r->hashes[0] == 77
           && r->has_parent && r->parent == 76 && r->n_tokens == 4
           && r->block_size == 4 && r->has_lora_id && r->lora_id == 3
           && strcmp(r->medium, "GPU") == 0
           && strcmp(r->lora_name, "adapter") == 0
           && r->has_group_idx && r->group_idx == 1
           && strcmp(r->spec_kind, "full_attention") == 0
           && sink.ev[1].type == KVR_EVENT_ALL_BLOCKS_CLEARED,
           "array BlockStored, all 11 fields set");

    /* a str where a non-str belongs, an int where a str belongs */
    for (pos = 1; pos <= 11; pos++) {
        wrong_int = (pos == 6 || pos == 7 || pos == 10);
        ignored = (pos == 11);
        pack_stored_bad_pos(pos, wrong_int);
        rc = run_packed();

        if (ignored) {
            tap_ok(rc == KVR_EVENTS_OK && sink.n == 2
                   && batch.n_malformed == 0,
                   "array: wrong type in ignored %s: delivered", names[pos]);

        } else {
            tap_ok(rc == KVR_EVENTS_OK && sink.n == 1
                   && sink.ev[0].type == KVR_EVENT_ALL_BLOCKS_CLEARED
                   && batch.n_malformed == 1,
                   "array: wrong type in %s: malformed, next delivered",
                   names[pos]);
        }
    }

    pack_stored_bad_key(NULL, 0);
    rc = run_packed();
    r = &sink.ev[0];
    tap_ok(rc == KVR_EVENTS_OK && sink.n == 2
           && r->type == KVR_EVENT_BLOCK_STORED && r->hashes[0] == 77
           && r->has_parent && r->parent == 76 && r->n_tokens == 4
           && r->block_size == 4 && r->has_lora_id && r->lora_id == 3
           && strcmp(r->medium, "GPU") == 0
           && strcmp(r->lora_name, "adapter") == 0
           && r->has_group_idx && r->group_idx == 1
           && strcmp(r->spec_kind, "full_attention") == 0
           && sink.ev[1].type == KVR_EVENT_ALL_BLOCKS_CLEARED,
           "map BlockStored, type last, unknown keys skipped");

    for (pos = 1; pos <= 11; pos++) {
        wrong_int = (pos == 6 || pos == 7 || pos == 10);
        ignored = (pos == 11);
        pack_stored_bad_key(names[pos], wrong_int);
        rc = run_packed();

        if (ignored) {
            tap_ok(rc == KVR_EVENTS_OK && sink.n == 2
                   && batch.n_malformed == 0,
                   "map: wrong type in ignored %s: delivered", names[pos]);

        } else {
            tap_ok(rc == KVR_EVENTS_OK && sink.n == 1
                   && sink.ev[0].type == KVR_EVENT_ALL_BLOCKS_CLEARED
                   && batch.n_malformed == 1,
                   "map: wrong type in %s: malformed, next delivered",
                   names[pos]);
        }
    }

    pack_stored_bad_key("type", 1);
    rc = run_packed();
    tap_ok(rc == KVR_EVENTS_OK && sink.n == 1 && batch.n_malformed == 1,
           "map: type not a str: malformed");

    /* block_size out of range: 0, negative, above u32 */
    {
        static const int64_t  sizes[] = { 0, -1, 0x100000000ll };

        for (i = 0; i < 3; i++) {
            pk_reset();
            msgpack_pack_array(&pk, 2);
            msgpack_pack_double(&pk, 1.0);
            msgpack_pack_array(&pk, 1);
            msgpack_pack_array(&pk, 5);
            pk_str("BlockStored");
            msgpack_pack_array(&pk, 0);
            msgpack_pack_nil(&pk);
            msgpack_pack_array(&pk, 0);
            msgpack_pack_int64(&pk, sizes[i]);
            rc = run_packed();
            tap_ok(rc == KVR_EVENTS_OK && sink.n == 0
                   && batch.n_malformed == 1,
                   "block_size %" PRId64 ": malformed", sizes[i]);
        }
    }

    /* BlockRemoved: hashes, medium, group_idx */
    for (pos = 1; pos <= 3; pos++) {
        pk_reset();
        msgpack_pack_array(&pk, 2);
        msgpack_pack_double(&pk, 1.0);
        msgpack_pack_array(&pk, 1);
        msgpack_pack_array(&pk, 4);
        pk_str("BlockRemoved");

        if (pos == 1) {
            pk_str("x");

        } else {
            msgpack_pack_array(&pk, 1);
            msgpack_pack_uint64(&pk, 5);
        }

        if (pos == 2) {
            msgpack_pack_int(&pk, 1);

        } else {
            pk_str("GPU");
        }

        if (pos == 3) {
            pk_str("x");

        } else {
            msgpack_pack_int(&pk, 0);
        }

        rc = run_packed();
        tap_ok(rc == KVR_EVENTS_OK && sink.n == 0 && batch.n_malformed == 1,
               "BlockRemoved: wrong type at position %d: malformed", pos);
    }

    /*
     * a map BlockRemoved with a bad value under a BlockStored key: not
     * one of its fields, so ignored, and no tokens leak into the event
     */
    pk_reset();
    msgpack_pack_array(&pk, 2);
    msgpack_pack_double(&pk, 1.0);
    msgpack_pack_array(&pk, 1);
    msgpack_pack_map(&pk, 4);
    pk_str("type");
    pk_str("BlockRemoved");
    pk_str("token_ids");
    pk_tokens(ex_tokens, 3);
    pk_str("block_size");
    pk_str("x");
    pk_str("block_hashes");
    msgpack_pack_array(&pk, 1);
    msgpack_pack_uint64(&pk, 5);
    rc = run_packed();
    tap_ok(rc == KVR_EVENTS_OK && sink.n == 1
           && sink.ev[0].type == KVR_EVENT_BLOCK_REMOVED
           && sink.ev[0].n_tokens == 0 && sink.ev[0].block_size == 0
           && sink.ev[0].hashes[0] == 5 && !sink.ev[0].has_medium,
           "map BlockRemoved: other types' keys ignored, medium optional");
}


static void
test_missing_and_shapes(void)
{
    kvr_events_status_e  rc;

    /* events that are too short or not events at all, then a good one */
    pk_reset();
    msgpack_pack_array(&pk, 3);
    msgpack_pack_double(&pk, 1.0);
    msgpack_pack_array(&pk, 9);

    msgpack_pack_array(&pk, 4);             /* BlockStored, no block_size */
    pk_str("BlockStored");
    msgpack_pack_array(&pk, 1);
    msgpack_pack_uint64(&pk, 1);
    msgpack_pack_nil(&pk);
    msgpack_pack_array(&pk, 0);

    msgpack_pack_array(&pk, 1);             /* BlockRemoved, no hashes */
    pk_str("BlockRemoved");

    msgpack_pack_array(&pk, 0);             /* [] */

    msgpack_pack_int(&pk, 5);               /* a scalar */

    msgpack_pack_array(&pk, 2);             /* a tag that is an int */
    msgpack_pack_int(&pk, 1);
    msgpack_pack_array(&pk, 0);

    msgpack_pack_map(&pk, 4);               /* map without parent */
    pk_str("type");
    pk_str("BlockStored");
    pk_str("block_hashes");
    msgpack_pack_array(&pk, 0);
    pk_str("token_ids");
    msgpack_pack_array(&pk, 0);
    pk_str("block_size");
    msgpack_pack_int(&pk, 16);

    msgpack_pack_map(&pk, 1);               /* map without type */
    pk_str("block_hashes");
    msgpack_pack_array(&pk, 0);

    msgpack_pack_array(&pk, 3);             /* unknown tag */
    pk_str("BlockInactive");
    msgpack_pack_array(&pk, 1);
    msgpack_pack_uint64(&pk, 1);
    pk_str("x");

    msgpack_pack_array(&pk, 4);             /* AllBlocksCleared, trailing */
    pk_str("AllBlocksCleared");
    msgpack_pack_int(&pk, 1);
    msgpack_pack_map(&pk, 0);
    msgpack_pack_array(&pk, 1);
    msgpack_pack_array(&pk, 0);

    msgpack_pack_int(&pk, 3);

    rc = run_packed();
    tap_is(rc, KVR_EVENTS_OK, "bad events do not fail the batch");
    tap_is(batch.n_events, 9, "shapes: n_events");
    tap_is(batch.n_malformed, 7, "shapes: 7 malformed");
    tap_is(batch.n_unknown, 1, "shapes: 1 unknown tag");
    tap_ok(sink.n == 1 && sink.ev[0].type == KVR_EVENT_ALL_BLOCKS_CLEARED
           && sink.ev[0].n_hashes == 0,
           "shapes: AllBlocksCleared with trailing elements delivered");
    tap_ok(batch.has_dp_rank && batch.dp_rank == 3, "shapes: dp_rank 3");

    /* map events: unknown tag, unknown keys of every kind */
    pk_reset();
    msgpack_pack_array(&pk, 2);
    msgpack_pack_double(&pk, 1.0);
    msgpack_pack_array(&pk, 2);

    msgpack_pack_map(&pk, 2);
    pk_str("type");
    pk_str("Ignored");
    pk_str("block_hashes");
    pk_str("not even hashes");

    msgpack_pack_map(&pk, 8);
    msgpack_pack_int(&pk, 7);               /* an int key */
    msgpack_pack_int(&pk, 8);
    msgpack_pack_array(&pk, 2);             /* an array key */
    msgpack_pack_int(&pk, 1);
    msgpack_pack_map(&pk, 0);
    msgpack_pack_nil(&pk);
    pk_str("locality");
    pk_str("LOCAL");
    pk_str("block_hashes");
    msgpack_pack_array(&pk, 1);
    msgpack_pack_int(&pk, -9);
    pk_str("source_kind");
    msgpack_pack_map(&pk, 1);
    pk_str("a");
    msgpack_pack_array(&pk, 1);
    msgpack_pack_double(&pk, 1.5);
    pk_str("type");
    pk_str("BlockRemoved");
    pk_str("medium");
    pk_str("CPU");
    pk_str("group_idx");
    msgpack_pack_nil(&pk);

    rc = run_packed();
    tap_ok(rc == KVR_EVENTS_OK && batch.n_unknown == 1 && sink.n == 1
           && sink.ev[0].type == KVR_EVENT_BLOCK_REMOVED
           && sink.ev[0].hashes[0] == (uint64_t) -9
           && strcmp(sink.ev[0].medium, "CPU") == 0
           && !sink.ev[0].has_group_idx && !batch.has_dp_rank,
           "map events: unknown tag and keys skipped");

    /* a repeated key: the last value wins */
    pk_reset();
    msgpack_pack_array(&pk, 2);
    msgpack_pack_double(&pk, 1.0);
    msgpack_pack_array(&pk, 1);
    msgpack_pack_map(&pk, 3);
    pk_str("type");
    pk_str("BlockRemoved");
    pk_str("block_hashes");
    msgpack_pack_array(&pk, 1);
    msgpack_pack_int(&pk, 1);
    pk_str("block_hashes");
    msgpack_pack_array(&pk, 2);
    msgpack_pack_int(&pk, 2);
    msgpack_pack_int(&pk, 3);
    rc = run_packed();
    tap_ok(rc == KVR_EVENTS_OK && sink.n == 1 && sink.ev[0].n_hashes == 2
           && sink.ev[0].hashes[0] == 2 && sink.ev[0].hashes[1] == 3,
           "map event: repeated key, last wins");

    /* empty events array */
    pk_reset();
    msgpack_pack_array(&pk, 3);
    msgpack_pack_double(&pk, 1.0);
    msgpack_pack_array(&pk, 0);
    msgpack_pack_nil(&pk);
    rc = run_packed();
    tap_ok(rc == KVR_EVENTS_OK && batch.n_events == 0 && sink.n == 0
           && !batch.has_dp_rank,
           "empty events, nil dp_rank");
}


static void
test_batches(void)
{
    kvr_events_status_e  rc;

    /* trailing batch elements */
    pk_reset();
    msgpack_pack_array(&pk, 5);
    msgpack_pack_int(&pk, 1700000000);
    msgpack_pack_array(&pk, 1);
    msgpack_pack_array(&pk, 1);
    pk_str("AllBlocksCleared");
    msgpack_pack_int(&pk, 1);
    pk_str("x");
    msgpack_pack_array(&pk, 2);
    msgpack_pack_map(&pk, 0);
    msgpack_pack_nil(&pk);
    rc = run_packed();
    tap_ok(rc == KVR_EVENTS_OK && sink.n == 1 && batch.dp_rank == 1
           && batch.ts == 1700000000.0,
           "batch: trailing elements ignored, int ts accepted");

    /* map batch, defensively */
    pk_reset();
    msgpack_pack_map(&pk, 4);
    pk_str("events");
    msgpack_pack_array(&pk, 1);
    msgpack_pack_array(&pk, 1);
    pk_str("AllBlocksCleared");
    pk_str("other");
    msgpack_pack_array(&pk, 0);
    pk_str("data_parallel_rank");
    msgpack_pack_int(&pk, 4);
    pk_str("ts");
    msgpack_pack_float(&pk, 2.5f);
    rc = run_packed();
    tap_ok(rc == KVR_EVENTS_OK && sink.n == 1 && batch.has_dp_rank
           && batch.dp_rank == 4 && batch.ts == 2.5
           && sink.ev[0].has_dp_rank_seen && sink.ev[0].dp_rank_seen == 4,
           "batch as a map, any key order, float32 ts");

    pk_reset();
    msgpack_pack_map(&pk, 3);
    pk_str("ts");
    msgpack_pack_double(&pk, 1.0);
    pk_str("events");
    msgpack_pack_array(&pk, 0);
    pk_str("attn_dp_rank");
    msgpack_pack_int(&pk, 6);
    rc = run_packed();
    tap_ok(rc == KVR_EVENTS_OK && batch.dp_rank == 6,
           "map batch: attn_dp_rank");

    pk_reset();
    msgpack_pack_map(&pk, 1);
    pk_str("ts");
    msgpack_pack_double(&pk, 1.0);
    tap_is(run_packed(), KVR_EVENTS_ERR_BATCH, "map batch without events");

    pk_reset();
    msgpack_pack_map(&pk, 1);
    pk_str("events");
    msgpack_pack_array(&pk, 0);
    tap_is(run_packed(), KVR_EVENTS_ERR_BATCH, "map batch without ts");

    /* wrong types in the batch's own fields */
    pk_reset();
    msgpack_pack_array(&pk, 3);
    pk_str("1.0");
    msgpack_pack_array(&pk, 0);
    msgpack_pack_int(&pk, 0);
    tap_is(run_packed(), KVR_EVENTS_ERR_BATCH, "batch: ts a str");

    pk_reset();
    msgpack_pack_array(&pk, 3);
    msgpack_pack_double(&pk, 1.0);
    msgpack_pack_map(&pk, 0);
    msgpack_pack_int(&pk, 0);
    tap_is(run_packed(), KVR_EVENTS_ERR_BATCH, "batch: events a map");

    pk_reset();
    msgpack_pack_array(&pk, 3);
    msgpack_pack_double(&pk, 1.0);
    msgpack_pack_nil(&pk);
    msgpack_pack_int(&pk, 0);
    tap_is(run_packed(), KVR_EVENTS_ERR_BATCH, "batch: events nil");

    pk_reset();
    msgpack_pack_array(&pk, 3);
    msgpack_pack_double(&pk, 1.0);
    msgpack_pack_array(&pk, 0);
    pk_str("0");
    tap_is(run_packed(), KVR_EVENTS_ERR_BATCH, "batch: dp_rank a str");

    pk_reset();
    msgpack_pack_array(&pk, 3);
    msgpack_pack_double(&pk, 1.0);
    msgpack_pack_array(&pk, 0);
    msgpack_pack_array(&pk, 0);
    tap_is(run_packed(), KVR_EVENTS_ERR_BATCH, "batch: dp_rank an array");

    pk_reset();
    msgpack_pack_array(&pk, 1);
    msgpack_pack_double(&pk, 1.0);
    tap_is(run_packed(), KVR_EVENTS_ERR_BATCH, "batch: one element");

    pk_reset();
    msgpack_pack_int(&pk, 1);
    tap_is(run_packed(), KVR_EVENTS_ERR_BATCH, "batch: a scalar");

    tap_is(run("", 0), KVR_EVENTS_ERR_MSGPACK, "batch: empty payload");
    tap_is(run("\xc1", 1), KVR_EVENTS_ERR_MSGPACK, "batch: 0xc1");

    pk_reset();
    msgpack_pack_array(&pk, 2);
    msgpack_pack_double(&pk, 1.0);
    msgpack_pack_array(&pk, 0);
    msgpack_pack_nil(&pk);
    tap_is(run_packed(), KVR_EVENTS_ERR_MSGPACK,
           "batch: bytes after the batch");

    tap_is(run(NULL, 0), KVR_EVENTS_ERR_MSGPACK, "batch: NULL buffer");
}


/*
 * vLLM BlockStored, array era, 2 blocks of 2 tokens: lora_name, parent
 * and extra_keys as given (extra packed by the caller when pack_extra)
 */
static void
pack_stored_extra(const char *lora, int parent, void (*pack_extra)(void))
{
    static const uint32_t  t[4] = { 1, 2, 3, 4 };

    pk_reset();
    msgpack_pack_array(&pk, 2);
    msgpack_pack_double(&pk, 1.0);
    msgpack_pack_array(&pk, 1);
    msgpack_pack_array(&pk, 12);
    pk_str("BlockStored");
    msgpack_pack_array(&pk, 2);
    msgpack_pack_uint64(&pk, 501);
    msgpack_pack_uint64(&pk, 502);

    if (parent) {
        msgpack_pack_uint64(&pk, 500);

    } else {
        msgpack_pack_nil(&pk);
    }

    pk_tokens(t, 4);
    msgpack_pack_int(&pk, 2);
    msgpack_pack_nil(&pk);
    pk_str("GPU");

    if (lora) {
        pk_str(lora);

    } else {
        msgpack_pack_nil(&pk);
    }

    if (pack_extra) {
        pack_extra();

    } else {
        msgpack_pack_nil(&pk);
    }

    msgpack_pack_int(&pk, 0);
    pk_str("full_attention");
    msgpack_pack_nil(&pk);
}


/* [[lora, "salt-x"], [lora]]: vLLM's LoRA name and cache_salt */
static void
extra_lora_salt(void)
{
    msgpack_pack_array(&pk, 2);
    msgpack_pack_array(&pk, 2);
    pk_str("ad");
    pk_str("salt-x");
    msgpack_pack_array(&pk, 1);
    pk_str("ad");
}


/* [nil, nil]: text-only blocks */
static void
extra_nils(void)
{
    msgpack_pack_array(&pk, 2);
    msgpack_pack_nil(&pk);
    msgpack_pack_nil(&pk);
}


/* [[["img-a", 0]], nil]: a multimodal identifier with its offset */
static void
extra_mm(void)
{
    msgpack_pack_array(&pk, 2);
    msgpack_pack_array(&pk, 1);
    msgpack_pack_array(&pk, 2);
    pk_str("img-a");
    msgpack_pack_int(&pk, 0);
    msgpack_pack_nil(&pk);
}


/* the same with another image */
static void
extra_mm2(void)
{
    msgpack_pack_array(&pk, 2);
    msgpack_pack_array(&pk, 1);
    msgpack_pack_array(&pk, 2);
    pk_str("img-b");
    msgpack_pack_int(&pk, 0);
    msgpack_pack_nil(&pk);
}


/* [nil, ["s"]]: a str in a block that is not a chain's first */
static void
extra_str_second(void)
{
    msgpack_pack_array(&pk, 2);
    msgpack_pack_nil(&pk);
    msgpack_pack_array(&pk, 1);
    pk_str("s");
}


/* [["s"], nil] */
static void
extra_str_first(void)
{
    msgpack_pack_array(&pk, 2);
    msgpack_pack_array(&pk, 1);
    pk_str("s");
    msgpack_pack_nil(&pk);
}


/* [bin]: one entry for two blocks */
static void
extra_short(void)
{
    msgpack_pack_array(&pk, 1);
    msgpack_pack_nil(&pk);
}


/* [[bin(prompt embeds digest)], nil] */
static void
extra_bin(void)
{
    msgpack_pack_array(&pk, 2);
    msgpack_pack_array(&pk, 1);
    msgpack_pack_bin_with_body(&pk, "\x01\x02", 2);
    msgpack_pack_nil(&pk);
}


/* a str where extra_keys' array belongs */
static void
extra_str(void)
{
    pk_str("oops");
}


static void
test_fields(void)
{
    rec_t               *r;
    uint64_t             a;
    kvr_events_status_e  rc;

    /* EAGLE bigram pairs, SGLang map event */
    pk_reset();
    msgpack_pack_array(&pk, 3);
    msgpack_pack_double(&pk, 1.0);
    msgpack_pack_array(&pk, 2);
    msgpack_pack_map(&pk, 5);
    pk_str("type");
    pk_str("BlockStored");
    pk_str("block_hashes");
    msgpack_pack_array(&pk, 1);
    msgpack_pack_int64(&pk, -5);
    pk_str("parent_block_hash");
    msgpack_pack_nil(&pk);
    pk_str("token_ids");
    msgpack_pack_array(&pk, 3);
    msgpack_pack_array(&pk, 2);
    msgpack_pack_uint32(&pk, 7);
    msgpack_pack_uint32(&pk, 70000);
    msgpack_pack_array(&pk, 2);
    msgpack_pack_uint32(&pk, 70000);
    msgpack_pack_uint32(&pk, 9);
    msgpack_pack_array(&pk, 2);
    msgpack_pack_uint32(&pk, 9);
    msgpack_pack_uint32(&pk, 11);
    pk_str("block_size");
    msgpack_pack_int(&pk, 3);

    /* a pair list that turns to ints: malformed */
    msgpack_pack_map(&pk, 5);
    pk_str("type");
    pk_str("BlockStored");
    pk_str("block_hashes");
    msgpack_pack_array(&pk, 1);
    msgpack_pack_int64(&pk, -6);
    pk_str("parent_block_hash");
    msgpack_pack_nil(&pk);
    pk_str("token_ids");
    msgpack_pack_array(&pk, 2);
    msgpack_pack_array(&pk, 2);
    msgpack_pack_uint32(&pk, 7);
    msgpack_pack_uint32(&pk, 8);
    msgpack_pack_uint32(&pk, 8);
    pk_str("block_size");
    msgpack_pack_int(&pk, 2);
    msgpack_pack_int(&pk, 0);

    rc = run_packed();
    r = &sink.ev[0];
    tap_ok(rc == KVR_EVENTS_OK && sink.n == 1 && r->bigram
           && r->n_tokens == 3 && r->tokens[0] == 7 && r->tokens[1] == 70000
           && r->tokens[2] == 9 && batch.n_malformed == 1,
           "EAGLE bigrams: the first of each pair; pairs then an int: "
           "malformed");

    /* extra_keys: LoRA name skipped, the first block's str is the salt */
    pack_stored_extra("ad", 0, extra_lora_salt);
    rc = run_packed();
    r = &sink.ev[0];
    tap_ok(rc == KVR_EVENTS_OK && sink.n == 1 && !r->has_extra
           && r->has_salt && strcmp(r->salt, "salt-x") == 0,
           "extra_keys [[lora, salt], [lora]]: the salt, nothing else");

    pack_stored_extra(NULL, 0, extra_nils);
    rc = run_packed();
    tap_ok(rc == KVR_EVENTS_OK && sink.n == 1 && !sink.ev[0].has_extra
           && !sink.ev[0].has_salt, "extra_keys [nil, nil]: nothing");

    pack_stored_extra(NULL, 0, extra_mm);
    rc = run_packed();
    r = &sink.ev[0];
    a = r->extra[0];
    tap_ok(rc == KVR_EVENTS_OK && sink.n == 1 && r->has_extra
           && r->extra[0] != 0 && r->extra[1] == 0 && !r->has_salt,
           "multimodal identifier: that block marked, not the next");

    pack_stored_extra(NULL, 0, extra_mm2);
    rc = run_packed();
    tap_ok(rc == KVR_EVENTS_OK && sink.ev[0].extra[0] != 0
           && sink.ev[0].extra[0] != a, "another image, another digest");

    pack_stored_extra(NULL, 0, extra_str_second);
    rc = run_packed();
    r = &sink.ev[0];
    tap_ok(rc == KVR_EVENTS_OK && r->has_extra && r->extra[0] == 0
           && r->extra[1] != 0 && !r->has_salt,
           "a str in the second block: not a salt, marked");

    pack_stored_extra(NULL, 1, extra_str_first);
    rc = run_packed();
    r = &sink.ev[0];
    tap_ok(rc == KVR_EVENTS_OK && r->has_extra && r->extra[0] != 0
           && !r->has_salt, "a str under a parent: not a salt, marked");

    pack_stored_extra(NULL, 0, extra_str_first);
    rc = run_packed();
    r = &sink.ev[0];
    tap_ok(rc == KVR_EVENTS_OK && !r->has_extra && r->has_salt
           && strcmp(r->salt, "s") == 0, "[[s], nil] at a chain's start: "
           "the salt");

    pack_stored_extra("ad", 0, extra_str_first);
    rc = run_packed();
    r = &sink.ev[0];
    tap_ok(rc == KVR_EVENTS_OK && !r->has_extra && r->has_salt,
           "LoRA event, its name absent from extra keys: the str is "
           "the salt");

    pack_stored_extra(NULL, 0, extra_short);
    rc = run_packed();
    r = &sink.ev[0];
    tap_ok(rc == KVR_EVENTS_OK && r->has_extra && r->extra[0] != 0
           && r->extra[1] != 0, "one entry for two blocks: both marked");

    pack_stored_extra(NULL, 0, extra_bin);
    rc = run_packed();
    r = &sink.ev[0];
    tap_ok(rc == KVR_EVENTS_OK && r->has_extra && r->extra[0] != 0
           && r->extra[1] == 0, "prompt embeddings digest: marked");

    pack_stored_extra(NULL, 0, extra_str);
    rc = run_packed();
    tap_ok(rc == KVR_EVENTS_OK && sink.n == 0 && batch.n_malformed == 1,
           "extra_keys a str: malformed");

    /* map BlockRemoved with Dynamo's kv_cache_spec_kind */
    pk_reset();
    msgpack_pack_array(&pk, 2);
    msgpack_pack_double(&pk, 1.0);
    msgpack_pack_array(&pk, 2);
    msgpack_pack_map(&pk, 4);
    pk_str("type");
    pk_str("BlockRemoved");
    pk_str("block_hashes");
    msgpack_pack_array(&pk, 1);
    msgpack_pack_uint64(&pk, 9);
    pk_str("group_idx");
    msgpack_pack_int(&pk, 1);
    pk_str("kv_cache_spec_kind");
    pk_str("sliding_window");
    msgpack_pack_array(&pk, 5);
    pk_str("BlockRemoved");
    msgpack_pack_array(&pk, 1);
    msgpack_pack_uint64(&pk, 9);
    pk_str("CPU");
    msgpack_pack_int(&pk, 2);
    pk_str("mamba");
    rc = run_packed();
    tap_ok(rc == KVR_EVENTS_OK && sink.n == 2
           && strcmp(sink.ev[0].spec_kind, "sliding_window") == 0
           && sink.ev[0].group_idx == 1
           && strcmp(sink.ev[1].spec_kind, "mamba") == 0
           && strcmp(sink.ev[1].medium, "CPU") == 0
           && sink.ev[1].group_idx == 2,
           "BlockRemoved: medium, group_idx and kv_cache_spec_kind, map "
           "and array");
}


static void
test_sglang(void)
{
    rec_t               *r;
    kvr_events_status_e  rc;

    pk_reset();
    msgpack_pack_array(&pk, 3);
    msgpack_pack_double(&pk, 1.0);
    msgpack_pack_array(&pk, 5);

    /* 7-element BlockStored, negative int64 hashes */
    msgpack_pack_array(&pk, 7);
    pk_str("BlockStored");
    msgpack_pack_array(&pk, 1);
    msgpack_pack_int64(&pk, -6917529027641081856ll);
    msgpack_pack_int64(&pk, -1);
    pk_tokens(ex_tokens, 1);
    msgpack_pack_int(&pk, 1);
    msgpack_pack_nil(&pk);
    pk_str("GPU");

    /* BlockRemoved [tag, hashes, medium] */
    msgpack_pack_array(&pk, 3);
    pk_str("BlockRemoved");
    msgpack_pack_array(&pk, 1);
    msgpack_pack_int64(&pk, -6917529027641081856ll);
    pk_str("CPU_PINNED");

    /* BlockStoredWithMetadata: 8 elements, {"cache_salt": ...} */
    msgpack_pack_array(&pk, 8);
    pk_str("BlockStored");
    msgpack_pack_array(&pk, 1);
    msgpack_pack_int64(&pk, 42);
    msgpack_pack_nil(&pk);
    pk_tokens(ex_tokens, 2);
    msgpack_pack_int(&pk, 2);
    msgpack_pack_nil(&pk);
    pk_str("GPU");
    msgpack_pack_map(&pk, 2);
    pk_str("other");
    msgpack_pack_array(&pk, 0);
    pk_str("cache_salt");
    pk_str("tenant-1");

    /* the same with a nil salt */
    msgpack_pack_array(&pk, 8);
    pk_str("BlockStored");
    msgpack_pack_array(&pk, 1);
    msgpack_pack_int64(&pk, 43);
    msgpack_pack_nil(&pk);
    pk_tokens(ex_tokens, 2);
    msgpack_pack_int(&pk, 2);
    msgpack_pack_nil(&pk);
    pk_str("GPU");
    msgpack_pack_map(&pk, 1);
    pk_str("cache_salt");
    msgpack_pack_nil(&pk);

    /* and a salt of the wrong type */
    msgpack_pack_array(&pk, 8);
    pk_str("BlockStored");
    msgpack_pack_array(&pk, 1);
    msgpack_pack_int64(&pk, 44);
    msgpack_pack_nil(&pk);
    pk_tokens(ex_tokens, 2);
    msgpack_pack_int(&pk, 2);
    msgpack_pack_nil(&pk);
    pk_str("GPU");
    msgpack_pack_map(&pk, 1);
    pk_str("cache_salt");
    msgpack_pack_int(&pk, 1);

    msgpack_pack_int(&pk, 2);               /* attn_dp_rank */

    rc = run_packed();
    tap_ok(rc == KVR_EVENTS_OK && sink.n == 4 && batch.n_malformed == 1,
           "sglang: 4 events, a bad salt malformed");
    tap_ok(batch.has_dp_rank && batch.dp_rank == 2, "sglang: attn_dp_rank");

    if (sink.n != 4) {
        return;
    }

    r = &sink.ev[0];
    tap_ok(r->type == KVR_EVENT_BLOCK_STORED
           && r->hashes[0] == 0xa000000000000000ull
           && r->has_parent && r->parent == UINT64_MAX
           && r->n_tokens == 1 && r->tokens[0] == ex_tokens[0]
           && r->block_size == 1 && !r->has_lora_name
           && strcmp(r->medium, "GPU") == 0 && !r->has_salt,
           "sglang: 7-element BlockStored, signed hashes");

    r = &sink.ev[1];
    tap_ok(r->type == KVR_EVENT_BLOCK_REMOVED
           && r->hashes[0] == 0xa000000000000000ull
           && strcmp(r->medium, "CPU_PINNED") == 0,
           "sglang: BlockRemoved, same handle as the store");

    r = &sink.ev[2];
    tap_ok(r->type == KVR_EVENT_BLOCK_STORED && r->hashes[0] == 42
           && r->has_salt && strcmp(r->salt, "tenant-1") == 0
           && !r->has_lora_name && r->n_tokens == 2,
           "sglang: metadata map gives cache_salt");

    r = &sink.ev[3];
    tap_ok(r->type == KVR_EVENT_BLOCK_STORED && r->hashes[0] == 43
           && !r->has_salt,
           "sglang: nil cache_salt");

    /* map-era SGLang: cache_salt and session_id keys, old [ts, events] */
    pk_reset();
    msgpack_pack_array(&pk, 2);
    msgpack_pack_double(&pk, 1.0);
    msgpack_pack_array(&pk, 1);
    msgpack_pack_map(&pk, 9);
    pk_str("type");
    pk_str("BlockStored");
    pk_str("block_hashes");
    msgpack_pack_array(&pk, 1);
    msgpack_pack_int64(&pk, -2);
    pk_str("parent_block_hash");
    msgpack_pack_nil(&pk);
    pk_str("token_ids");
    pk_tokens(ex_tokens, 3);
    pk_str("block_size");
    msgpack_pack_int(&pk, 3);
    pk_str("lora_id");
    msgpack_pack_nil(&pk);
    pk_str("medium");
    msgpack_pack_nil(&pk);
    pk_str("cache_salt");
    pk_str("s2");
    pk_str("session_id");
    pk_str("abc");
    rc = run_packed();
    tap_ok(rc == KVR_EVENTS_OK && sink.n == 1 && !batch.has_dp_rank
           && sink.ev[0].hashes[0] == (uint64_t) -2
           && sink.ev[0].has_salt && strcmp(sink.ev[0].salt, "s2") == 0
           && !sink.ev[0].has_medium && sink.ev[0].n_tokens == 3,
           "sglang map era: cache_salt, session_id ignored, nil medium");
}


/* every prefix of a valid payload fails as a whole, no handler call */
static void
truncate_all(const char *name)
{
    size_t                len, n_ok, n_called;
    uint8_t              *copy;
    kvr_events_status_e   rc;

    len = sb.size;
    n_ok = 0;
    n_called = 0;

    for (size_t cut = 0; cut < len; cut++) {
        /* a copy of exactly cut bytes so ASan sees any overread */
        copy = malloc(cut ? cut : 1);
        if (copy == NULL) {
            abort();
        }

        memcpy(copy, sb.data, cut);
        rc = run(copy, cut);
        free(copy);

        n_ok += (rc == KVR_EVENTS_OK);
        n_called += sink.n;
    }

    tap_ok(n_ok == 0 && n_called == 0,
           "%s: all %zu truncations rejected, no event delivered", name,
           len);

    copy = malloc(len + 1);
    if (copy == NULL) {
        abort();
    }

    memcpy(copy, sb.data, len);
    copy[len] = 0x00;
    rc = run(copy, len + 1);
    tap_is(rc, KVR_EVENTS_ERR_MSGPACK, "one byte too many rejected");
    rc = run(copy, len);
    tap_is(rc, KVR_EVENTS_OK, "the whole payload still decodes");
    free(copy);
}


static void
test_truncation(void)
{
    pack_example_array();
    truncate_all("array era");
    pack_example_map();
    truncate_all("map era");
    pack_stored_bad_key(NULL, 0);
    truncate_all("map era, all keys");
}


static void
test_limits(void)
{
    size_t                i;
    uint8_t              *deep;
    kvr_events_limits_t   lim, bad;
    kvr_events_decoder_t *saved, *small;
    kvr_events_status_e   rc;

    /* huge declared lengths: at least one byte per value must be left */
    static const uint8_t  huge_events[] = {
        0x92, 0x00, 0xdd, 0xff, 0xff, 0xff, 0xff, 0x90
    };
    static const uint8_t  huge_map[] = {
        0xdf, 0x7f, 0xff, 0xff, 0xff, 0x00, 0x00
    };
    static const uint8_t  huge_str[] = {
        0x94, 0x00, 0x90, 0x00, 0xdb, 0xff, 0xff, 0xff, 0xff, 'a'
    };
    static const uint8_t  huge_bin[] = {
        0x94, 0x00, 0x90, 0x00, 0xc6, 0x80, 0x00, 0x00, 0x00, 'a'
    };
    static const uint8_t  huge_ext[] = {
        0x94, 0x00, 0x90, 0x00, 0xc9, 0xff, 0xff, 0xff, 0xff, 0x01
    };
    static const uint8_t  huge_tokens[] = {
        0x92, 0x00, 0x91, 0x95, 0xab, 'B', 'l', 'o', 'c', 'k', 'S', 't',
        'o', 'r', 'e', 'd', 0x90, 0xc0, 0xdd, 0xff, 0xff, 0xff, 0xff, 0x01
    };

    tap_is(run(huge_events, sizeof(huge_events)), KVR_EVENTS_ERR_MSGPACK,
           "events array declaring 2^32-1 elements");
    tap_is(run(huge_map, sizeof(huge_map)), KVR_EVENTS_ERR_MSGPACK,
           "map declaring 2^31-1 pairs");
    tap_is(run(huge_str, sizeof(huge_str)), KVR_EVENTS_ERR_MSGPACK,
           "str32 declaring 4 GiB");
    tap_is(run(huge_bin, sizeof(huge_bin)), KVR_EVENTS_ERR_MSGPACK,
           "bin32 declaring 2 GiB");
    tap_is(run(huge_ext, sizeof(huge_ext)), KVR_EVENTS_ERR_MSGPACK,
           "ext32 declaring 4 GiB");
    tap_is(run(huge_tokens, sizeof(huge_tokens)), KVR_EVENTS_ERR_MSGPACK,
           "token_ids declaring 2^32-1 elements");

    kvr_events_limits_default(&lim);
    lim.max_bytes = 200;
    lim.max_events = 2;
    lim.max_hashes = 3;
    lim.max_tokens = 8;
    small = kvr_events_decoder_create(&lim);
    tap_ok(small != NULL, "decoder with small limits");

    if (small == NULL) {
        return;
    }

    saved = dec;
    dec = small;

    pack_example_array();
    tap_is(run_packed(), KVR_EVENTS_OK, "limits: example fits exactly");
    tap_is(sink.n, 2, "limits: 2 events, 3 hashes, 8 tokens allowed");

    pk_reset();
    msgpack_pack_array(&pk, 2);
    msgpack_pack_double(&pk, 1.0);
    msgpack_pack_array(&pk, 3);
    for (i = 0; i < 3; i++) {
        msgpack_pack_array(&pk, 1);
        pk_str("AllBlocksCleared");
    }
    tap_is(run_packed(), KVR_EVENTS_ERR_EVENTS, "limits: 3 events > 2");
    tap_is(sink.n, 0, "limits: no event delivered");

    /* 1 + 3 hashes in a batch */
    pk_reset();
    msgpack_pack_array(&pk, 2);
    msgpack_pack_double(&pk, 1.0);
    msgpack_pack_array(&pk, 2);
    msgpack_pack_array(&pk, 5);
    pk_str("BlockStored");
    msgpack_pack_array(&pk, 1);
    msgpack_pack_int(&pk, 1);
    msgpack_pack_nil(&pk);
    pk_tokens(ex_tokens, 8);
    msgpack_pack_int(&pk, 8);
    msgpack_pack_array(&pk, 2);
    pk_str("BlockRemoved");
    msgpack_pack_array(&pk, 3);
    msgpack_pack_int(&pk, 1);
    msgpack_pack_int(&pk, 2);
    msgpack_pack_int(&pk, 3);
    rc = run_packed();
    tap_ok(rc == KVR_EVENTS_ERR_LIMIT && sink.n == 0,
           "limits: 4 hashes in a batch > 3, nothing delivered");

    /* a malformed event's 3 hashes are given back, then 3 more fit */
    pk_reset();
    msgpack_pack_array(&pk, 2);
    msgpack_pack_double(&pk, 1.0);
    msgpack_pack_array(&pk, 2);
    msgpack_pack_array(&pk, 5);
    pk_str("BlockStored");
    msgpack_pack_array(&pk, 3);
    msgpack_pack_int(&pk, 4);
    msgpack_pack_int(&pk, 5);
    msgpack_pack_int(&pk, 6);
    msgpack_pack_nil(&pk);
    pk_tokens(ex_tokens, 8);
    pk_str("x");
    msgpack_pack_array(&pk, 2);
    pk_str("BlockRemoved");
    msgpack_pack_array(&pk, 3);
    msgpack_pack_int(&pk, 1);
    msgpack_pack_int(&pk, 2);
    msgpack_pack_int(&pk, 3);
    rc = run_packed();
    tap_ok(rc == KVR_EVENTS_OK && sink.n == 1 && batch.n_malformed == 1
           && sink.ev[0].n_hashes == 3 && sink.ev[0].hashes[0] == 1
           && sink.ev[0].hashes[2] == 3,
           "limits: a malformed event's hashes and tokens do not count");

    /* nor do those under a map AllBlocksCleared or an unknown type */
    for (i = 0; i < 2; i++) {
        pk_reset();
        msgpack_pack_array(&pk, 2);
        msgpack_pack_double(&pk, 1.0);
        msgpack_pack_array(&pk, 2);
        msgpack_pack_map(&pk, 2);
        pk_str("type");
        pk_str(i == 0 ? "AllBlocksCleared" : "BlockInactive");
        pk_str("block_hashes");
        msgpack_pack_array(&pk, 3);
        msgpack_pack_int(&pk, 7);
        msgpack_pack_int(&pk, 8);
        msgpack_pack_int(&pk, 9);
        msgpack_pack_array(&pk, 2);
        pk_str("BlockRemoved");
        msgpack_pack_array(&pk, 3);
        msgpack_pack_int(&pk, 1);
        msgpack_pack_int(&pk, 2);
        msgpack_pack_int(&pk, 3);
        rc = run_packed();
        tap_ok(rc == KVR_EVENTS_OK && sink.n == 2 - i
               && sink.ev[0].n_hashes == (i == 0 ? 0 : 3)
               && sink.ev[1 - i].hashes[0] == 1,
               "limits: hashes of %s given back",
               i == 0 ? "AllBlocksCleared" : "an unknown type");
    }

    pk_reset();
    msgpack_pack_array(&pk, 2);
    msgpack_pack_double(&pk, 1.0);
    msgpack_pack_array(&pk, 1);
    msgpack_pack_array(&pk, 5);
    pk_str("BlockStored");
    msgpack_pack_array(&pk, 1);
    msgpack_pack_int(&pk, 1);
    msgpack_pack_nil(&pk);
    msgpack_pack_array(&pk, 9);
    for (i = 0; i < 9; i++) {
        msgpack_pack_int(&pk, 1);
    }
    msgpack_pack_int(&pk, 8);
    tap_is(run_packed(), KVR_EVENTS_ERR_LIMIT, "limits: 9 tokens > 8");

    /* 5 + 4 token ids in two events */
    pk_reset();
    msgpack_pack_array(&pk, 2);
    msgpack_pack_double(&pk, 1.0);
    msgpack_pack_array(&pk, 2);
    for (i = 0; i < 2; i++) {
        msgpack_pack_array(&pk, 5);
        pk_str("BlockStored");
        msgpack_pack_array(&pk, 0);
        msgpack_pack_nil(&pk);
        pk_tokens(ex_tokens, 5 - i);
        msgpack_pack_int(&pk, 8);
    }
    tap_ok(run_packed() == KVR_EVENTS_ERR_LIMIT && sink.n == 0,
           "limits: 5 + 4 token ids in a batch > 8");

    pk_reset();
    msgpack_pack_array(&pk, 2);
    msgpack_pack_double(&pk, 1.0);
    msgpack_pack_array(&pk, 1);
    msgpack_pack_array(&pk, 2);
    pk_str("x");
    msgpack_pack_str(&pk, 200);
    for (i = 0; i < 200; i++) {
        msgpack_pack_str_body(&pk, "y", 1);
    }
    tap_is(run_packed(), KVR_EVENTS_ERR_TOO_BIG, "limits: payload > 200");

    dec = saved;
    kvr_events_decoder_destroy(small);

    /* depth: batch 1, events 2, event 3, then k nested arrays */
    for (i = 13; i <= 14; i++) {
        size_t  k;

        pk_reset();
        msgpack_pack_array(&pk, 2);
        msgpack_pack_double(&pk, 1.0);
        msgpack_pack_array(&pk, 1);
        msgpack_pack_array(&pk, 2);
        pk_str("AllBlocksCleared");
        for (k = 0; k < i; k++) {
            msgpack_pack_array(&pk, k + 1 < i ? 1 : 0);
        }

        rc = run_packed();
        if (i == 13) {
            tap_ok(rc == KVR_EVENTS_OK && sink.n == 1,
                   "depth 16 (the default limit) accepted");

        } else {
            tap_ok(rc == KVR_EVENTS_ERR_DEPTH && sink.n == 0,
                   "depth 17 rejected");
        }
    }

    /* 100000 nested arrays, then maps, in a trailing batch element */
    deep = malloc(100000 + 8);
    if (deep == NULL) {
        abort();
    }

    deep[0] = 0x94;
    deep[1] = 0x00;
    deep[2] = 0x90;
    deep[3] = 0x00;
    memset(deep + 4, 0x91, 100000);
    deep[100004] = 0x00;
    tap_is(run(deep, 100005), KVR_EVENTS_ERR_DEPTH,
           "100000 nested arrays rejected");
    memset(deep + 4, 0x81, 100000);
    tap_is(run(deep, 100005), KVR_EVENTS_ERR_DEPTH,
           "100000 nested maps (as keys) rejected");
    deep[2] = 0x91;
    memset(deep + 3, 0x91, 100000);
    tap_is(run(deep, 100005), KVR_EVENTS_ERR_DEPTH,
           "100000 nested arrays as an event rejected");
    memset(deep, 0x91, 100000);
    tap_is(run(deep, 100005), KVR_EVENTS_ERR_BATCH,
           "a batch of nested arrays is not a batch");
    free(deep);

    /* limits out of range */
    kvr_events_limits_default(&bad);
    bad.max_depth = 3;
    tap_ok(kvr_events_decoder_create(&bad) == NULL, "limits: depth 3 refused");
    kvr_events_limits_default(&bad);
    bad.max_depth = KVR_EVENTS_DEPTH_CAP + 1;
    tap_ok(kvr_events_decoder_create(&bad) == NULL,
           "limits: depth above the cap refused");
    kvr_events_limits_default(&bad);
    bad.max_tokens = 0;
    tap_ok(kvr_events_decoder_create(&bad) == NULL, "limits: 0 refused");
    kvr_events_limits_default(&bad);
    bad.max_bytes = KVR_EVENTS_BYTES_CAP + 1;
    tap_ok(kvr_events_decoder_create(&bad) == NULL,
           "limits: max_bytes above the cap refused");
}


static void
test_abort(void)
{
    kvr_events_status_e  rc;

    pack_example_array();
    memset(&sink, 0, sizeof(sink_t));
    sink.stop_after = 1;
    rc = kvr_events_decode(dec, (const uint8_t *) sb.data, sb.size, &batch,
                           record, &sink);
    tap_ok(rc == KVR_EVENTS_ERR_ABORTED && sink.n == 1
           && batch.n_delivered == 1,
           "a handler returning non-zero stops the batch");

    rc = kvr_events_decode(dec, (const uint8_t *) sb.data, sb.size, &batch,
                           NULL, NULL);
    tap_ok(rc == KVR_EVENTS_OK && batch.n_delivered == 2,
           "no handler: counts only");

    tap_ok(strcmp(kvr_events_status_name(KVR_EVENTS_ERR_DEPTH), "too-deep")
           == 0, "status names");
}


/*
 * Messages captured from the bench emulator: name.bin is a payload,
 * name.expect what the emulator's msgpack library decoded from it:
 *   # a note: topic and seq
 *   batch <n_events> <dp_rank|->
 *   stored <block_size> <parent|-> <n> <hash...> <n> <token...>
 *   removed <n> <hash...>
 *   cleared
 */
static int
check_capture(const char *dir, const char *name, char *why, size_t why_len)
{
    int       ok;
    char      path[1024], word[32], rank[32], parent[32];
    long      size;
    size_t    i, n, k;
    uint8_t  *buf;
    FILE     *f;
    rec_t    *r;
    unsigned long long  v, sum;

    buf = NULL;
    ok = 0;

    snprintf(path, sizeof(path), "%s/%s.bin", dir, name);
    f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(why, why_len, "(cannot open)");
        return 0;
    }

    fseek(f, 0, SEEK_END);
    size = ftell(f);
    fseek(f, 0, SEEK_SET);

    buf = malloc(size > 0 ? (size_t) size : 1);
    if (buf == NULL || fread(buf, 1, (size_t) size, f) != (size_t) size) {
        fclose(f);
        free(buf);
        snprintf(why, why_len, "(cannot read)");
        return 0;
    }

    fclose(f);

    if (run(buf, (size_t) size) != KVR_EVENTS_OK) {
        snprintf(why, why_len, "decode failed");
        goto done;
    }

    snprintf(path, sizeof(path), "%s/%s.expect", dir, name);
    f = fopen(path, "r");
    if (f == NULL) {
        snprintf(why, why_len, "(cannot open)");
        goto done;
    }

    /* a "# topic ... seq ..." note first */
    k = (size_t) fgetc(f);
    if (k == '#') {
        while ((k = (size_t) fgetc(f)) != '\n' && k != (size_t) EOF) {
            /* void */
        }

    } else {
        ungetc((int) k, f);
    }

    if (fscanf(f, "batch %zu %31s", &n, rank) != 2 || n != batch.n_events
        || n != sink.n || batch.n_malformed + batch.n_unknown != 0
        || (rank[0] == '-' ? batch.has_dp_rank
            : (!batch.has_dp_rank || batch.dp_rank != atoll(rank))))
    {
        snprintf(why, why_len, "batch line: %zu events, got %u", n, sink.n);
        goto close;
    }

    for (k = 0; k < n; k++) {
        r = &sink.ev[k];

        if (fscanf(f, "%31s", word) != 1) {
            snprintf(why, why_len, "event %zu: short expect file", k);
            goto close;
        }

        if (strcmp(word, "cleared") == 0) {
            if (r->type != KVR_EVENT_ALL_BLOCKS_CLEARED) {
                snprintf(why, why_len, "event %zu: not cleared", k);
                goto close;
            }

            continue;
        }

        if (strcmp(word, "stored") == 0) {
            if (r->type != KVR_EVENT_BLOCK_STORED
                || fscanf(f, "%llu %31s", &v, parent) != 2
                || v != r->block_size
                || (parent[0] == '-' ? r->has_parent
                    : (!r->has_parent
                       || strtoull(parent, NULL, 10) != r->parent)))
            {
                snprintf(why, why_len, "event %zu: stored header", k);
                goto close;
            }

        } else if (strcmp(word, "removed") != 0
                   || r->type != KVR_EVENT_BLOCK_REMOVED)
        {
            snprintf(why, why_len, "event %zu: type %s", k, word);
            goto close;
        }

        if (fscanf(f, "%zu", &i) != 1 || i != r->n_hashes
            || i > REC_HASHES)
        {
            snprintf(why, why_len, "event %zu: hash count", k);
            goto close;
        }

        for (i = 0; i < r->n_hashes; i++) {
            if (fscanf(f, "%llu", &v) != 1 || v != r->hashes[i]) {
                snprintf(why, why_len, "event %zu: hash %zu", k, i);
                goto close;
            }
        }

        if (r->type != KVR_EVENT_BLOCK_STORED) {
            continue;
        }

        if (fscanf(f, "%zu", &i) != 1 || i != r->n_tokens) {
            snprintf(why, why_len, "event %zu: token count", k);
            goto close;
        }

        sum = 0;

        for (i = 0; i < r->n_tokens; i++) {
            if (fscanf(f, "%llu", &v) != 1
                || (i < REC_TOKENS && v != r->tokens[i]))
            {
                snprintf(why, why_len, "event %zu: token %zu", k, i);
                goto close;
            }

            sum += (i + 1) * v;
        }

        if (sum != r->token_sum) {
            snprintf(why, why_len, "event %zu: tokens after the 64th", k);
            goto close;
        }
    }

    ok = 1;

close:

    fclose(f);

done:

    free(buf);

    return ok;
}


static void
test_captures(void)
{
    int             n;
    char            dir[512], name[256], why[256];
    size_t          len;
    DIR            *d;
    struct dirent  *de;
    const char     *slash;

    /* corpus/events next to this file, wherever make runs from */
    slash = strrchr(__FILE__, '/');
    snprintf(dir, sizeof(dir), "%.*s/corpus/events",
             slash ? (int) (slash - __FILE__) : 1, slash ? __FILE__ : ".");

    d = opendir(dir);
    tap_ok(d != NULL, "capture directory %s", dir);
    if (d == NULL) {
        return;
    }

    n = 0;

    while ((de = readdir(d)) != NULL) {
        len = strlen(de->d_name);
        if (len < 8 || len - 7 >= sizeof(name)
            || strcmp(de->d_name + len - 7, ".expect") != 0)
        {
            continue;
        }

        memcpy(name, de->d_name, len - 7);
        name[len - 7] = '\0';
        why[0] = '\0';

        tap_ok(check_capture(dir, name, why, sizeof(why)),
               "emulator capture %s %s", name, why);
        n++;
    }

    closedir(d);

    tap_ok(n >= 24, "%d emulator captures checked", n);
}


static double
now(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}


static int
count_blocks(void *data, const kvr_event_batch_t *b, const kvr_event_t *ev)
{
    (void) b;

    *(uint64_t *) data += ev->n_hashes;
    return 0;
}


/* blocks/s for batches of BlockStored, 16 token ids per block */
static void
bench(double seconds, uint32_t events, uint32_t blocks, int map)
{
    double     t0, t;
    uint32_t   e, b, k;
    uint64_t   x, n_blocks, rounds;

    x = 88172645463325252ull;
    pk_reset();
    msgpack_pack_array(&pk, 3);
    msgpack_pack_double(&pk, TS);
    msgpack_pack_array(&pk, events);

    for (e = 0; e < events; e++) {
        if (map) {
            msgpack_pack_map(&pk, 11);
            pk_str("type");
        } else {
            msgpack_pack_array(&pk, 12);
        }

        pk_str("BlockStored");
        if (map) {
            pk_str("block_hashes");
        }
        msgpack_pack_array(&pk, blocks);
        for (b = 0; b < blocks; b++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            msgpack_pack_uint64(&pk, x);
        }
        if (map) {
            pk_str("parent_block_hash");
        }
        msgpack_pack_uint64(&pk, x + 1);
        if (map) {
            pk_str("token_ids");
        }
        msgpack_pack_array(&pk, blocks * 16);
        for (k = 0; k < blocks * 16; k++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            msgpack_pack_uint32(&pk, (uint32_t) (x % 151643));
        }
        if (map) {
            pk_str("block_size");
        }
        msgpack_pack_int(&pk, 16);
        if (map) {
            pk_str("lora_id");
        }
        msgpack_pack_nil(&pk);
        if (map) {
            pk_str("medium");
        }
        pk_str("GPU");
        if (map) {
            pk_str("lora_name");
        }
        msgpack_pack_nil(&pk);
        if (map) {
            pk_str("extra_keys");
        }
        msgpack_pack_array(&pk, blocks);
        for (b = 0; b < blocks; b++) {
            msgpack_pack_nil(&pk);
        }
        if (map) {
            pk_str("group_idx");
        }
        msgpack_pack_int(&pk, 0);
        if (map) {
            pk_str("kv_cache_spec_kind");
        }
        pk_str("full_attention");
        if (!map) {
            msgpack_pack_nil(&pk);
        }
    }

    msgpack_pack_int(&pk, 0);

    n_blocks = 0;
    rounds = 0;
    t0 = now();

    do {
        for (k = 0; k < 64; k++) {
            if (kvr_events_decode(dec, (const uint8_t *) sb.data, sb.size,
                                  &batch, count_blocks, &n_blocks)
                != KVR_EVENTS_OK)
            {
                abort();
            }
        }

        rounds += 64;
        t = now() - t0;
    } while (t < seconds);

    printf("# bench %s era, %u events x %u blocks (%zu bytes/batch): "
           "%.2f M blocks/s, %.0f MB/s\n", map ? "map" : "array", events,
           blocks, sb.size, n_blocks / t / 1e6,
           (double) rounds * sb.size / t / 1e6);
}


int
main(void)
{
    const char           *b;
    kvr_events_limits_t   lim;

    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);

    kvr_events_limits_default(&lim);
    dec = kvr_events_decoder_create(&lim);
    tap_ok(dec != NULL, "decoder with the default limits");
    if (dec == NULL) {
        return tap_done();
    }

    test_frames();
    test_examples();
    test_hashes();
    test_tokens();
    test_wrong_types();
    test_missing_and_shapes();
    test_batches();
    test_sglang();
    test_fields();
    test_truncation();
    test_limits();
    test_abort();
    test_captures();

    b = getenv("KVR_EVENTS_BENCH");
    if (b != NULL) {
        bench(atof(b), 64, 1, 0);
        bench(atof(b), 8, 64, 0);
        bench(atof(b), 64, 1, 1);
        bench(atof(b), 8, 64, 1);
    }

    kvr_events_decoder_destroy(dec);
    msgpack_sbuffer_destroy(&sb);

    return tap_done();
}
