/*
 * Copyright (C) kvroute developers
 *
 * The prefixes the policy weighs (kvr_policy.h), from each server's homes
 * (kvr_homes.h) and the index: how hot a prompt's prefix is across the
 * fleet, how many prefixes live on each server, and what a route adds to
 * a server's homes.  Counting costs index probes, so it is done only when
 * the policy can use it.  Plain C, no nginx types; the caller holds the
 * index's lock.
 */

#ifndef _KVR_PREFIXES_H_INCLUDED_
#define _KVR_PREFIXES_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "kvr_index.h"
#include "kvr_homes.h"
#include "kvr_policy.h"


/*
 * policy=cost reuses a server's count of live prefixes this long (ms): a
 * cache's set of prefixes changes over many requests, not one
 */
#define KVR_PREFIXES_LIVE_MSEC  100


/* the servers as the policy sees them, and where their prefixes are */
typedef struct {
    kvr_index_t        *index;
    kvr_homes_t        *homes;        /* by index slot, KVR_INDEX_MAX_SLOTS */
    kvr_homes_t        *roots;        /* kv mode: the prefixes the engines'
                                         events stored, by slot; the live
                                         counts come from these, not from
                                         this frontend's routes; NULL:
                                         from homes */
    const int          *slots;        /* each candidate's slot, -1: none */
    const int          *pred;         /* its predictions' slot, or NULL */
    uint64_t            first_block;  /* the prompt's */
    uint64_t            now_msec;     /* any clock in ms */
} kvr_prefixes_t;


/*
 * Sets cand[i].prefixes (cand[i].overlap and .inflight read) and the
 * prompt's share of the fleet's recent routes (1/1024), for the policy:
 *   - kvroute: only when no server holds the prompt, or loads differ by
 *     spread= or more; and for a held prompt only when it is hot (a share
 *     above an even one), since only a hot one is spread;
 *   - cost: for each server not holding the longest cached prefix (a
 *     miss there may evict), reusing a count for KVR_PREFIXES_LIVE_MSEC;
 *   - dynamo: never (all 0).
 */
void kvr_prefixes_count(const kvr_policy_conf_t *conf,
    const kvr_prefixes_t *px, kvr_candidate_t *cand, size_t n,
    uint32_t *share);

/*
 * Sets cand[i].route_share: the prompt's prefix's share of this frontend's
 * own recent routes to each server (px->homes, never the roots: those
 * count the engines' prefixes, not requests), in 1/1024; 0 where none
 * went.  kvr_engine_load_apply() reads it.
 */
void kvr_prefixes_route_shares(const kvr_prefixes_t *px,
    kvr_candidate_t *cand, size_t n);

/*
 * The prompt went to the server of slot (overlap: its cached leading
 * blocks there): its homes learn the prefix, and under policy=cost a
 * prefix new there counts as live before the next recount (in the roots
 * when they are counted, roots not NULL).
 */
void kvr_prefixes_routed(const kvr_policy_conf_t *conf, kvr_homes_t *homes,
    kvr_homes_t *roots, int slot, uint64_t first_block, uint32_t overlap);


#endif /* _KVR_PREFIXES_H_INCLUDED_ */
