/*
 * Copyright (C) kvroute developers
 *
 * A server's load as its engine reports it (/metrics), for the policies:
 * what every frontend sees, not only this one's requests.  Plain C.
 */

#ifndef _KVR_ENGINE_LOAD_H_INCLUDED_
#define _KVR_ENGINE_LOAD_H_INCLUDED_


#include <stdint.h>

#include "kvr_policy.h"


#define KVR_ENGINE_NO_USAGE  UINT32_MAX


/* one scrape of an engine, and this frontend's own load when it was sent */
typedef struct {
    uint32_t   running;        /* requests the engine runs */
    uint32_t   waiting;        /* and queues */
    uint32_t   usage;          /* KV cache in use, per mille, or NO_USAGE */
    uint32_t   own_requests;   /* this frontend's in flight there then */
    uint64_t   own_pinned;     /* policy=ttft: its pinned blocks then */
} kvr_engine_load_t;


/*
 * Adds to a candidate's own load (inflight, inflight_tokens,
 * inflight_prefill, pinned: as gathered now) what other clients of the
 * engine had there at the scrape.  tokens: this request's prompt tokens,
 * the size assumed for others' requests when this frontend has none in
 * flight there to average.
 */
void kvr_engine_load_apply(kvr_candidate_t *cand,
    const kvr_engine_load_t *el, uint32_t tokens);


#endif /* _KVR_ENGINE_LOAD_H_INCLUDED_ */
