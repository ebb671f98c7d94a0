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
 *
 * The usage counts the blocks the others' requests pin, and this prompt's
 * cached prefix among them when one of those is of the same prefix: then
 * the prefix needs no room of its own.  Which prefixes the others' requests
 * are of, no engine says; they are taken to be like this frontend's own
 * routes there (route_share), so with k of them on the engine the prefix
 * is pinned with probability 1 - (1 - share)^k.  Counted as never pinned
 * by them (own pins only), the prefix made every frontend find its holders
 * full and copy it elsewhere; counted as always pinned, it sent requests
 * to full engines (BENCHMARKS §2.18).
 *
 * Its inter-token latency says how fast its steps are: engines on unequal
 * GPUs (or sharing one) take unequal time for the same work, and the
 * policy weighs work ahead in time at each engine's speed.
 */

#include <math.h>

#include "kvr_engine_load.h"


static uint32_t kvr_engine_load_shared(uint32_t blocks, uint32_t share,
    uint64_t others);


void
kvr_engine_load_apply(kvr_candidate_t *cand, const kvr_engine_load_t *el,
    uint32_t tokens)
{
    uint64_t  engine, others, others_waiting, per, used, others_pinned;

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
     * pinned: this frontend's own pins now plus the others' at the scrape
     * (the engine's blocks in use then less this frontend's then).  Own
     * requests that ended since the scrape no longer count: taken as the
     * engine's stale usage they made a free engine look full, and the
     * room test sent its prefix's requests elsewhere as misses.
     */

    if (el->usage == KVR_ENGINE_NO_USAGE || cand->capacity == 0) {
        return;
    }

    used = cand->capacity * (el->usage > 1000 ? 1000 : el->usage) / 1000;
    others_pinned = used > el->own_pinned ? used - el->own_pinned : 0;

    cand->pinned += others_pinned;

    if (others && cand->pinned_own < cand->overlap) {
        cand->pinned_own += kvr_engine_load_shared(cand->overlap
                                                   - cand->pinned_own,
                                                   cand->route_share,
                                                   others);
    }
}


/*
 * Of blocks cached but not pinned by this frontend, how many the others'
 * requests there likely pin: each of them (up to 64 counted) is of this
 * prefix with probability share / 1024
 */

static uint32_t
kvr_engine_load_shared(uint32_t blocks, uint32_t share, uint64_t others)
{
    double  none, q;

    if (share == 0) {
        return 0;
    }

    q = share >= 1024 ? 1 : share / 1024.0;
    none = pow(1 - q, (double) (others < 64 ? others : 64));

    return (uint32_t) ((1 - none) * blocks + 0.5);
}


void
kvr_engine_load_itl(kvr_engine_load_t *el, double sum_s, double count)
{
    double    us, mean;
    uint64_t  sum_us, n;

    if (!(sum_s >= 0) || !(count >= 0) || sum_s > 1e12 || count > 1e15) {
        return;
    }

    us = sum_s * 1e6;
    sum_us = (uint64_t) us;
    n = (uint64_t) count;

    /*
     * the first figures only set the base: what the engine did before
     * this frontend looked says little of its speed now
     */

    if (n < el->itl_count || sum_us < el->itl_sum_us
        || (el->itl_count == 0 && el->itl_us == 0))
    {
        el->itl_sum_us = sum_us;
        el->itl_count = n;
        return;
    }

    if (n - el->itl_count < KVR_ENGINE_ITL_MIN_TOKENS) {
        return;
    }

    mean = (double) (sum_us - el->itl_sum_us) / (double) (n - el->itl_count);

    if (mean > 1e9) {
        mean = 1e9;
    }

    el->itl_us = el->itl_us ? (uint32_t) ((el->itl_us + mean) / 2 + 0.5)
                            : (uint32_t) (mean + 0.5);

    if (el->itl_us == 0) {
        el->itl_us = 1;
    }

    el->itl_sum_us = sum_us;
    el->itl_count = n;
}


void
kvr_engine_load_speeds(kvr_candidate_t *cand, const uint32_t *itl_us,
    size_t n)
{
    size_t    i;
    uint32_t  fastest;
    double    speed;

    fastest = 0;

    for (i = 0; i < n; i++) {
        if (itl_us[i] && (fastest == 0 || itl_us[i] < fastest)) {
            fastest = itl_us[i];
        }
    }

    for (i = 0; i < n; i++) {
        if (itl_us[i] == 0) {
            cand[i].speed = 1;
            continue;
        }

        speed = (double) fastest / itl_us[i];
        cand[i].speed = speed < KVR_ENGINE_SPEED_MIN ? KVR_ENGINE_SPEED_MIN
                                                    : speed;
    }
}
