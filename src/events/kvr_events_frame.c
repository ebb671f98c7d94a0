/*
 * Copyright (C) kvroute developers
 *
 * The ZeroMQ frames around a KV events payload: a PUB message, and a
 * replay reply in either layout (kvr_events.h; kv-events.md section 1).
 */

#include <string.h>

#include "kvr_events.h"
#include "kvr_msgpack.h"


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
    msg->seq = kvr_mp_be(frames[1].data, 8);
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

    msg->seq = kvr_mp_be(frames[seq].data, 8);
    msg->payload = frames[seq + 1].data;
    msg->payload_len = frames[seq + 1].len;

    /* END_SEQ goes with an empty payload and only with one */
    if ((msg->seq == KVR_EVENTS_END_SEQ) != (msg->payload_len == 0)) {
        return KVR_EVENTS_ERR_FRAMES;
    }

    out->end = (msg->seq == KVR_EVENTS_END_SEQ);

    return KVR_EVENTS_OK;
}
