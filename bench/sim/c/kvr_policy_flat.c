/*
 * Copyright (C) kvroute developers
 *
 * kvr_policy_pick() behind a flat array of doubles, so that a caller
 * without C structs (the policy simulator, through WebAssembly) runs the
 * module's own policy code.  64-bit values come as two 32-bit halves.
 *
 *   in[0 .. 10]   conf: policy, block_size, overlap_weight, balance_abs,
 *                 balance_rel, spread, corun, evict, ttft_decode,
 *                 ttft_evict, ttft_wait
 *   in[11 .. 18]  demand: blocks, tokens, first_block (hi, lo), share,
 *                 random (hi, lo), out_blocks
 *   in[19 .. 21]  conf: host_weight, disk_weight, ttft_own
 *   in[22 ..]     KVR_FLAT_CAND values a candidate: overlap, inflight,
 *                 inflight_tokens, inflight_prefill, id_hash (hi, lo),
 *                 weight, cached_blocks, capacity, prefixes, pinned,
 *                 pinned_own, overlap_host, overlap_disk, speed
 */


#include <stdint.h>
#include <stddef.h>

#include "kvr_policy.h"
#include "kvr_policy_flat.h"


static double  kvr_flat_in[KVR_FLAT_SIZE(KVR_FLAT_MAX)];
static int     kvr_flat_last_queued = -1;


double *
kvr_flat_buffer(void)
{
    return kvr_flat_in;
}


static uint64_t
kvr_flat_u64(const double *v)
{
    return ((uint64_t) v[0] << 32) | (uint64_t) v[1];
}


int
kvr_flat_pick(const double *in, uint32_t n)
{
    size_t             i, pick;
    kvr_pick_e         why;
    kvr_demand_t       d;
    const double      *c;
    kvr_candidate_t    cand[KVR_FLAT_MAX];
    kvr_policy_conf_t  conf;

    if (in == NULL) {
        in = kvr_flat_in;
    }

    if (n == 0 || n > KVR_FLAT_MAX) {
        return -1;
    }

    conf.policy = (kvr_policy_e) in[0];
    conf.block_size = (uint32_t) in[1];
    conf.overlap_weight = in[2];
    conf.balance_abs = (uint32_t) in[3];
    conf.balance_rel = in[4];
    conf.spread = (uint32_t) in[5];
    conf.corun = in[6];
    conf.evict = in[7];
    conf.ttft_decode = in[8];
    conf.ttft_evict = in[9];
    conf.ttft_wait = in[10];
    conf.host_weight = in[19];
    conf.disk_weight = in[20];
    conf.ttft_own = in[21];

    /* the module's default: the simulator sees one frontend */
    conf.place_slack = KVR_POLICY_PLACE_SLACK;

    d.blocks = (uint32_t) in[11];
    d.tokens = (uint32_t) in[12];
    d.first_block = kvr_flat_u64(&in[13]);
    d.share = (uint32_t) in[15];
    d.random = kvr_flat_u64(&in[16]);
    d.out_blocks = (uint32_t) in[18];

    for (i = 0; i < n; i++) {
        c = &in[KVR_FLAT_SIZE(i)];

        cand[i].overlap = (uint32_t) c[0];
        cand[i].inflight = (uint32_t) c[1];
        cand[i].inflight_tokens = (uint64_t) c[2];
        cand[i].inflight_prefill = (uint64_t) c[3];
        cand[i].id_hash = kvr_flat_u64(&c[4]);
        cand[i].weight = (uint32_t) c[6];
        cand[i].cached_blocks = (uint64_t) c[7];
        cand[i].capacity = (uint64_t) c[8];
        cand[i].prefixes = (uint32_t) c[9];
        cand[i].pinned = (uint64_t) c[10];
        cand[i].pinned_own = (uint32_t) c[11];
        cand[i].overlap_host = (uint32_t) c[12];
        cand[i].overlap_disk = (uint32_t) c[13];
        cand[i].speed = c[14];
        cand[i].route_share = 0;     /* read by kvr_engine_load only */
    }

    pick = kvr_policy_pick(&conf, cand, n, &d, &why);

    kvr_flat_last_queued = kvr_policy_waits(&cand[pick], &d);

    return (int) (pick * 8 + why);
}


int
kvr_flat_queued(void)
{
    return kvr_flat_last_queued;
}
