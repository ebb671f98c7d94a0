/*
 * Copyright (C) kvroute developers
 *
 * A few learners of ttft_decode=auto in static memory, addressed by
 * number: the simulator runs one a simulated frontend and has no C
 * structs of its own.
 */


#include "kvr_inflight_cost.h"
#include "kvr_inflight_flat.h"


static kvr_inflight_cost_t  kvr_flat_learners[KVR_FLAT_LEARNERS];


double
kvr_flat_learn_init(uint32_t k)
{
    if (k >= KVR_FLAT_LEARNERS) {
        return -1;
    }

    kvr_inflight_cost_init(&kvr_flat_learners[k]);

    return kvr_flat_learners[k].weight;
}


double
kvr_flat_learn_ended(uint32_t k, uint32_t server, double computed,
    double inflight, double seconds, uint32_t queued)
{
    if (k >= KVR_FLAT_LEARNERS) {
        return -1;
    }

    (void) kvr_inflight_cost_ended(&kvr_flat_learners[k], server, computed,
                                   inflight, seconds, queued != 0);

    return kvr_flat_learners[k].weight;
}


double
kvr_flat_learn_learned(uint32_t k)
{
    return (k < KVR_FLAT_LEARNERS) ? kvr_flat_learners[k].learned : -1;
}


double
kvr_flat_learn_fits(uint32_t k)
{
    return (k < KVR_FLAT_LEARNERS) ? (double) kvr_flat_learners[k].fits : -1;
}
