/*
 * Copyright (C) kvroute developers
 *
 * ttft_decode=auto's learner (kvr_inflight_cost) behind plain numbers, for
 * the policy simulator through WebAssembly: kvr_inflight_flat.c.
 */

#ifndef _KVR_INFLIGHT_FLAT_H_INCLUDED_
#define _KVR_INFLIGHT_FLAT_H_INCLUDED_


#include <stdint.h>


#define KVR_FLAT_LEARNERS  8


/* learner k afresh; returns 0, or -1 (no such k) */
double kvr_flat_learn_init(uint32_t k);

/*
 * a request ended on server (queued: it found no KV room there when sent,
 * kvr_flat_queued()); returns the weight in use after it (0: none learned
 * yet), or -1
 */
double kvr_flat_learn_ended(uint32_t k, uint32_t server, double computed,
    double inflight, double seconds, uint32_t queued);

/* the last fit's weight (0: none yet), or -1 */
double kvr_flat_learn_learned(uint32_t k);

/* fits that gave a weight, or -1 */
double kvr_flat_learn_fits(uint32_t k);


#endif /* _KVR_INFLIGHT_FLAT_H_INCLUDED_ */
