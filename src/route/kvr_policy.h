/*
 * Copyright (C) kvroute developers
 *
 * Server selection: weighs cached prefix against load.  Plain C, no nginx
 * types; the caller gathers one candidate per eligible server.
 */

#ifndef _KVR_POLICY_H_INCLUDED_
#define _KVR_POLICY_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


typedef enum {
    KVR_POLICY_KVROUTE = 0,     /* prefix affinity with bounded load */
    KVR_POLICY_DYNAMO,          /* NVIDIA Dynamo's classic cost */
    KVR_POLICY_COST,            /* queueing against a miss and its eviction */
    KVR_POLICY_TTFT             /* prefill ahead, load, KV room, eviction */
} kvr_policy_e;


/* why a candidate won */
typedef enum {
    KVR_PICK_OVERLAP = 0,       /* it holds the longest cached prefix */
    KVR_PICK_HOME,              /* no server holds any: the prefix's home */
    KVR_PICK_LOAD,              /* load outweighed cached prefix */
    KVR_PICK_COST               /* lowest cost (dynamo, cost) */
} kvr_pick_e;


typedef struct {
    kvr_policy_e   policy;
    uint32_t       block_size;      /* tokens per block */
    double         overlap_weight;  /* dynamo: weight of prefill blocks */
    uint32_t       balance_abs;     /* kvroute: spill when busier than the */
    double         balance_rel;     /* least loaded by both margins */
    uint32_t       spread;          /* kvroute: copy a prefix to a server
                                       with room that is this many requests
                                       less busy; 0: never */
    double         corun;           /* cost: one more request in flight on
                                       a server, in prompt tokens */
    double         evict;           /* cost: weight of the prefix a miss
                                       pushes out of a full cache */
    double         ttft_decode;     /* ttft: one request in flight, in
                                       prompt tokens of prefill */
    double         ttft_evict;      /* ttft: a miss on a full cache, in
                                       prompts */
    double         ttft_wait;       /* ttft: no KV room for the request,
                                       in prompt tokens */
    double         place_slack;     /* ttft: a prefix no server holds goes
                                       to the rendezvous choice among the
                                       servers this close to the cheapest
                                       (in prompt tokens) holding the
                                       fewest prefixes; 0: the cheapest */
    double         host_weight;     /* dynamo, cost, ttft: a block found in
                                       the host (CPU) tier after the GPU
                                       overlap, in GPU blocks (Dynamo's
                                       host_cache_hit_weight, 0.75) */
    double         disk_weight;     /* the same of the disk tier's, after
                                       the host's (0.25) */
    double         ttft_own;        /* ttft: one token of this request's
                                       own output, decoded at the server's
                                       speed, in prompt tokens of prefill
                                       at the fastest's; 0: not weighed */
} kvr_policy_conf_t;


/* NVIDIA Dynamo's defaults of host_weight and disk_weight */
#define KVR_POLICY_HOST_WEIGHT  0.75
#define KVR_POLICY_DISK_WEIGHT  0.25


/* place_slack's default: one request in flight (ttft_decode's default) */
#define KVR_POLICY_PLACE_SLACK  1200


typedef struct {
    uint32_t       overlap;         /* leading blocks cached there */
    uint32_t       overlap_host;    /* the blocks after those its host tier
                                       holds, leading (0: none, or no
                                       tier) */
    uint32_t       overlap_disk;    /* its disk tier's, after those */
    uint32_t       inflight;        /* requests in flight */
    uint64_t       inflight_tokens; /* prompt tokens of those */
    uint64_t       inflight_prefill;/* their uncached prompt tokens */
    uint64_t       id_hash;         /* stable per server, for homes */
    uint32_t       weight;          /* nginx server weight, >= 1 */
    uint64_t       cached_blocks;   /* blocks the index holds for it */
    uint64_t       capacity;        /* its cache size in blocks, 0 unknown */
    uint32_t       prefixes;        /* distinct prefixes cached there */
    uint64_t       pinned;          /* ttft: blocks its requests in flight
                                       pin, distinct, and their output */
    uint32_t       pinned_own;      /* ttft: of this prompt's blocks, how
                                       many are among those */
    uint32_t       route_share;     /* ttft with metrics: this prompt's
                                       prefix's share of this frontend's
                                       recent routes there, in 1/1024: how
                                       likely another client's request
                                       there is of the same prefix */
    double         speed;           /* ttft: its engine's step speed
                                       against the fastest's (1), from
                                       the engines' inter-token latency;
                                       0 or 1: unknown, as fast */
} kvr_candidate_t;


typedef struct {
    uint32_t       blocks;          /* full blocks of the prompt */
    uint32_t       tokens;          /* prompt tokens (estimate) */
    uint64_t       first_block;     /* hash of block 0, for homes */
    uint32_t       share;           /* its prefix's share of the recent
                                       routes of all servers, in 1/1024 */
    uint64_t       random;          /* for tie breaks */
    uint32_t       out_blocks;      /* ttft: blocks its output will take */
} kvr_demand_t;


/*
 * Returns the index of the chosen candidate (n > 0) and sets *why.  The
 * offload tiers' blocks count in the prefill the policies dynamo, cost
 * and ttft weigh as Dynamo counts them: overlap + host_weight *
 * overlap_host + disk_weight * overlap_disk blocks are not computed again
 * (loaded back instead); the other terms (eviction, room, ties) go by the
 * GPU's overlap.
 */
size_t kvr_policy_pick(const kvr_policy_conf_t *conf,
    const kvr_candidate_t *cand, size_t n, const kvr_demand_t *demand,
    kvr_pick_e *why);

/*
 * Rendezvous (highest random weight) hashing of key over the candidates
 * whose cost[i] is at most limit (cost NULL: all of them), weighted: the
 * smallest -ln(u) / weight wins, u uniform in (0, 1) from key and the
 * server's id_hash.  Depends on no candidate's position, so frontends
 * that see the same servers choose the same one; n when none qualifies.
 */
size_t kvr_policy_rendezvous(const kvr_candidate_t *cand, size_t n,
    uint64_t key, const double *cost, double limit);

/*
 * 1 when the blocks pinned on the candidate, the request's blocks not
 * pinned there yet and its output exceed the candidate's capacity: the
 * engine queues the request until one in flight ends (policy=ttft weighs
 * it as ttft_wait); 0 otherwise, and when the capacity is not known
 */
int kvr_policy_waits(const kvr_candidate_t *cand, const kvr_demand_t *demand);

/* parses "kvroute" / "dynamo" / "cost" / "ttft"; -1 when unknown */
int kvr_policy_from_name(const char *name, size_t len);


#endif /* _KVR_POLICY_H_INCLUDED_ */
