/*
 * Copyright (C) kvroute developers
 *
 * A server's load as its engine reports it (/metrics), for the policies:
 * what every frontend sees, not only this one's requests.  Plain C.
 */

#ifndef _KVR_ENGINE_LOAD_H_INCLUDED_
#define _KVR_ENGINE_LOAD_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "kvr_policy.h"


#define KVR_ENGINE_NO_USAGE  UINT32_MAX

/* tokens an inter-token latency mean needs before it is believed */
#define KVR_ENGINE_ITL_MIN_TOKENS  8

/* speeds below this are taken as this: a stalled engine still counts */
#define KVR_ENGINE_SPEED_MIN  0.05


/* one scrape of an engine, and this frontend's own load when it was sent */
typedef struct {
    uint32_t   running;        /* requests the engine runs */
    uint32_t   waiting;        /* and queues */
    uint32_t   usage;          /* KV cache in use, per mille, or NO_USAGE */
    uint32_t   own_requests;   /* this frontend's in flight there then */
    uint64_t   own_pinned;     /* policy=ttft: its pinned blocks then */

    /* kvr_engine_load_itl(): the engine's step speed, from its histogram */
    uint64_t   itl_sum_us;     /* cumulative sum, µs, at the last mean */
    uint64_t   itl_count;      /* and count */
    uint32_t   itl_us;         /* smoothed mean, µs; 0: not known yet */
} kvr_engine_load_t;


/*
 * Adds to a candidate's own load (inflight, inflight_tokens,
 * inflight_prefill, pinned: as gathered now) what other clients of the
 * engine had there at the scrape.  tokens: this request's prompt tokens,
 * the size assumed for others' requests when this frontend has none in
 * flight there to average.  With the engine's KV usage, pinned_own also
 * counts the cached prefix (overlap) the others' requests likely pin
 * there, by route_share (kvr_engine_load.c).
 */
void kvr_engine_load_apply(kvr_candidate_t *cand,
    const kvr_engine_load_t *el, uint32_t tokens);

/*
 * One scrape's cumulative inter-token latency (sum in seconds, count of
 * tokens) into el: once KVR_ENGINE_ITL_MIN_TOKENS tokens came since the
 * last mean, their mean is averaged into itl_us (half old, half new).  The
 * first figures, and a count or sum that went back (the engine
 * restarted), only set the base the next mean starts from.
 */
void kvr_engine_load_itl(kvr_engine_load_t *el, double sum_s, double count);

/*
 * Each candidate's speed from its engine's itl_us[i] (0: not known):
 * the fastest known's over its own, so the fastest is 1; unknown ones 1.
 */
void kvr_engine_load_speeds(kvr_candidate_t *cand, const uint32_t *itl_us,
    size_t n);


#endif /* _KVR_ENGINE_LOAD_H_INCLUDED_ */
