/*
 * Copyright (C) kvroute developers
 *
 * Several frontends (or clients that bypass nginx) share an engine; each
 * frontend counts only its own requests.  The engine's running + waiting,
 * less what this frontend had in flight when the scrape was sent, is the
 * others' load: it is added to this frontend's load as it is now, so a
 * burst this frontend sent since the scrape counts in full and so do its
 * requests that ended since (README "Load from the engines").
 *
 * The engine says how many requests, not their sizes: the others' are
 * taken as large as this frontend's own there on average (this request's
 * size when it has none), and the waiting share of them as not prefilled
 * yet.  Its KV usage is the blocks its running requests hold, which is
 * what policy=ttft's pinned blocks estimate.
 */

#include "kvr_engine_load.h"


void
kvr_engine_load_apply(kvr_candidate_t *cand, const kvr_engine_load_t *el,
    uint32_t tokens)
{
    uint64_t  engine, others, others_waiting, per, used, since;

    engine = (uint64_t) el->running + el->waiting;
    others = engine > el->own_requests ? engine - el->own_requests : 0;

    if (others) {
        per = cand->inflight ? cand->inflight_tokens / cand->inflight
                             : tokens;

        /* the others' part of the queue, by their share of the engine */
        others_waiting = (uint64_t) el->waiting * others / engine;

        cand->inflight = (cand->inflight + others > UINT32_MAX)
                         ? UINT32_MAX : (uint32_t) (cand->inflight + others);
        cand->inflight_tokens += others * per;
        cand->inflight_prefill += others_waiting * per;
    }

    /*
     * pinned: the engine's blocks in use at the scrape plus what this
     * frontend pinned since, or its own count if that is more
     */

    if (el->usage == KVR_ENGINE_NO_USAGE || cand->capacity == 0) {
        return;
    }

    used = cand->capacity * (el->usage > 1000 ? 1000 : el->usage) / 1000;
    since = cand->pinned > el->own_pinned ? cand->pinned - el->own_pinned : 0;

    if (used + since > cand->pinned) {
        cand->pinned = used + since;
    }
}
