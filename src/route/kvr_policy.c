/*
 * Copyright (C) kvroute developers
 */


#include <math.h>
#include <string.h>

#include "kvr_policy.h"


/* candidates kvr_policy_place() weighs, as many as an upstream's peers */
#define KVR_POLICY_PLACE_MAX  64


static size_t kvr_policy_pick_kvroute(const kvr_policy_conf_t *conf,
    const kvr_candidate_t *cand, size_t n, const kvr_demand_t *demand,
    kvr_pick_e *why);
static size_t kvr_policy_pick_dynamo(const kvr_policy_conf_t *conf,
    const kvr_candidate_t *cand, size_t n, const kvr_demand_t *demand,
    kvr_pick_e *why);
static size_t kvr_policy_pick_cost(const kvr_policy_conf_t *conf,
    const kvr_candidate_t *cand, size_t n, const kvr_demand_t *demand,
    kvr_pick_e *why);
static size_t kvr_policy_pick_ttft(const kvr_policy_conf_t *conf,
    const kvr_candidate_t *cand, size_t n, const kvr_demand_t *demand,
    kvr_pick_e *why);
static double kvr_policy_ttft_cost(const kvr_policy_conf_t *conf,
    const kvr_candidate_t *cand, const kvr_demand_t *demand,
    uint32_t max_overlap);
static size_t kvr_policy_place(const kvr_policy_conf_t *conf,
    const kvr_candidate_t *cand, size_t n, const kvr_demand_t *demand);
static int kvr_policy_cheaper(const kvr_candidate_t *cand, size_t i,
    double cost, uint64_t tie, size_t best, double best_cost,
    uint64_t best_tie);
static kvr_pick_e kvr_policy_why(const kvr_candidate_t *cand, size_t best,
    uint32_t max_overlap);
static size_t kvr_policy_longest(const kvr_candidate_t *cand, size_t n,
    const kvr_demand_t *demand, uint32_t max_overlap);
static size_t kvr_policy_home(const kvr_candidate_t *cand, size_t n,
    const kvr_demand_t *demand);
static size_t kvr_policy_spare(const kvr_policy_conf_t *conf,
    const kvr_candidate_t *cand, size_t n, const kvr_demand_t *demand,
    size_t best, uint32_t max_overlap);
static size_t kvr_policy_least(const kvr_candidate_t *cand, size_t n,
    const kvr_demand_t *demand, double min_load);
static int kvr_policy_no_room(const kvr_candidate_t *cand,
    const kvr_demand_t *demand);
static int kvr_policy_fewer(const kvr_candidate_t *a,
    const kvr_candidate_t *b, uint64_t tie_a, uint64_t tie_b);
static size_t kvr_policy_admit(const kvr_policy_conf_t *conf,
    const kvr_candidate_t *cand, size_t n, const kvr_demand_t *demand,
    size_t best, kvr_pick_e *why);
static int kvr_policy_full(const kvr_policy_conf_t *conf,
    const kvr_candidate_t *cand, const kvr_demand_t *demand);
static double kvr_policy_load(const kvr_candidate_t *cand);
static double kvr_policy_cached(const kvr_policy_conf_t *conf,
    const kvr_candidate_t *cand, double bs);
static int kvr_policy_tiered(const kvr_candidate_t *cand, size_t n);
static double kvr_policy_unit(uint64_t bits);
static uint64_t kvr_policy_mix(uint64_t a, uint64_t b);


size_t
kvr_policy_pick(const kvr_policy_conf_t *conf, const kvr_candidate_t *cand,
    size_t n, const kvr_demand_t *demand, kvr_pick_e *why)
{
    size_t  best;

    if (n == 0) {
        *why = KVR_PICK_LOAD;
        return 0;
    }

    if (conf->policy == KVR_POLICY_DYNAMO) {
        return kvr_policy_pick_dynamo(conf, cand, n, demand, why);
    }

    if (conf->policy == KVR_POLICY_COST) {
        return kvr_policy_pick_cost(conf, cand, n, demand, why);
    }

    if (conf->policy == KVR_POLICY_TTFT) {
        return kvr_policy_pick_ttft(conf, cand, n, demand, why);
    }

    best = kvr_policy_pick_kvroute(conf, cand, n, demand, why);

    return kvr_policy_admit(conf, cand, n, demand, best, why);
}


/*
 * An engine runs only as many requests as its KV cache holds (vLLM waits
 * for free blocks before it admits one): a request sent to a server whose
 * in-flight prompts already fill its capacity queues for a whole request's
 * time.  When another server can take it at once, it goes there instead:
 * the one with the longest overlap, then the least loaded.
 */

static size_t
kvr_policy_admit(const kvr_policy_conf_t *conf, const kvr_candidate_t *cand,
    size_t n, const kvr_demand_t *demand, size_t best, kvr_pick_e *why)
{
    size_t  i, alt;
    double  load, alt_load;

    if (!kvr_policy_full(conf, &cand[best], demand)) {
        return best;
    }

    alt = n;
    alt_load = 0;

    for (i = 0; i < n; i++) {
        if (i == best || kvr_policy_full(conf, &cand[i], demand)) {
            continue;
        }

        load = kvr_policy_load(&cand[i]);

        if (alt == n || cand[i].overlap > cand[alt].overlap
            || (cand[i].overlap == cand[alt].overlap && load < alt_load))
        {
            alt = i;
            alt_load = load;
        }
    }

    if (alt == n) {
        return best;
    }

    *why = KVR_PICK_LOAD;

    return alt;
}


/* whether the server's cache is taken by prompts in flight */

static int
kvr_policy_full(const kvr_policy_conf_t *conf, const kvr_candidate_t *cand,
    const kvr_demand_t *demand)
{
    uint64_t  bs, cached, need;

    if (cand->capacity == 0 || cand->inflight == 0) {
        return 0;
    }

    /*
     * blocks in use: what the requests in flight had to compute (their
     * cached prefixes are shared, counted once below as this one's), and
     * this request's prompt
     */

    bs = conf->block_size ? conf->block_size : 16;
    cached = (uint64_t) cand->overlap * bs;
    cached = cached > demand->tokens ? demand->tokens : cached;

    need = (cand->inflight_prefill + demand->tokens - cached + bs - 1) / bs
           + cand->overlap;

    return need > cand->capacity;
}


/*
 * kvroute: a prefix lives on the servers that hold it; a new prefix gets a
 * home by rendezvous hashing of its first block, so prefixes partition
 * across servers instead of replicating.  The chosen server is given up
 * only when it is busier than the least loaded one by both balance_abs
 * requests and the balance_rel ratio (SGLang-style imbalance test): then the
 * least loaded server with the longest overlap takes the request.
 */

static size_t
kvr_policy_pick_kvroute(const kvr_policy_conf_t *conf,
    const kvr_candidate_t *cand, size_t n, const kvr_demand_t *demand,
    kvr_pick_e *why)
{
    size_t    i, best, spare;
    double    load, best_load, min_load;
    uint32_t  max_overlap;

    max_overlap = 0;
    min_load = -1;

    for (i = 0; i < n; i++) {
        if (cand[i].overlap > max_overlap) {
            max_overlap = cand[i].overlap;
        }

        load = kvr_policy_load(&cand[i]);

        if (min_load < 0 || load < min_load) {
            min_load = load;
        }
    }

    if (max_overlap > 0) {
        best = kvr_policy_longest(cand, n, demand, max_overlap);
        *why = KVR_PICK_OVERLAP;

    } else {
        best = kvr_policy_home(cand, n, demand);
        *why = KVR_PICK_HOME;
    }

    best_load = kvr_policy_load(&cand[best]);

    if (best_load <= min_load + conf->balance_abs
        || best_load <= min_load * conf->balance_rel)
    {
        /* balanced enough to keep the prefix where it is, but... */

        spare = kvr_policy_spare(conf, cand, n, demand, best, max_overlap);

        if (spare == n) {
            return best;
        }

        *why = KVR_PICK_LOAD;

        return spare;
    }

    /* imbalanced: the least loaded, preferring longer overlap */

    *why = KVR_PICK_LOAD;

    return kvr_policy_least(cand, n, demand, min_load);
}


/* the least loaded of those holding the longest prefix */

static size_t
kvr_policy_longest(const kvr_candidate_t *cand, size_t n,
    const kvr_demand_t *demand, uint32_t max_overlap)
{
    size_t  i, best;
    double  load, best_load;

    best = n;
    best_load = 0;

    for (i = 0; i < n; i++) {
        if (cand[i].overlap != max_overlap) {
            continue;
        }

        load = kvr_policy_load(&cand[i]);

        if (best == n || load < best_load
            || (load == best_load
                && kvr_policy_mix(cand[i].id_hash, demand->random)
                   < kvr_policy_mix(cand[best].id_hash, demand->random)))
        {
            best = i;
            best_load = load;
        }
    }

    return best;
}


/*
 * A new prefix's home: the server holding the fewest prefixes per unit of
 * weight, so prefixes partition evenly (one too many on a server evicts
 * another); then the emptiest cache, in eighths of its size; among equals
 * weighted rendezvous hashing: the smallest -ln(u) / weight wins, u
 * uniform in (0, 1) from the prefix and the server.
 */

static size_t
kvr_policy_home(const kvr_candidate_t *cand, size_t n,
    const kvr_demand_t *demand)
{
    size_t    i, best;
    double    key, best_key, held, best_held;
    uint64_t  full, fill, best_fill;

    full = 0;

    for (i = 0; i < n; i++) {
        if (cand[i].cached_blocks > full) {
            full = cand[i].cached_blocks;
        }

        if (cand[i].capacity > full) {
            full = cand[i].capacity;
        }
    }

    best = n;
    best_key = 0;
    best_fill = 0;
    best_held = 0;

    for (i = 0; i < n; i++) {
        held = (double) cand[i].prefixes
               / (cand[i].weight ? cand[i].weight : 1);

        fill = full ? cand[i].cached_blocks * 8 / full : 0;
        fill = fill > 7 ? 7 : fill;

        key = kvr_policy_unit(kvr_policy_mix(cand[i].id_hash,
                                             demand->first_block));
        key = -log(key) / (cand[i].weight ? cand[i].weight : 1);

        if (best == n || held < best_held
            || (held == best_held
                && (fill < best_fill
                    || (fill == best_fill && key < best_key))))
        {
            best = i;
            best_key = key;
            best_fill = fill;
            best_held = held;
        }
    }

    return best;
}


/*
 * Balanced: the prefix stays on best unless a server spread or more
 * requests less busy has room for one more prefix: a copy there costs one
 * prefill and evicts nothing worth keeping, so a prefix too hot for its
 * servers spreads over idle ones.  That server, or n for none.
 */

static size_t
kvr_policy_spare(const kvr_policy_conf_t *conf, const kvr_candidate_t *cand,
    size_t n, const kvr_demand_t *demand, size_t best, uint32_t max_overlap)
{
    size_t    i, spare;
    double    load, best_load;
    uint64_t  held_total, room_total;

    /*
     * the fleet too must have room for another copy: while every
     * prefix is still arriving, copies would take the places the
     * later ones need
     */

    held_total = 0;
    room_total = 0;

    for (i = 0; i < n; i++) {
        held_total += cand[i].prefixes;
        room_total += cand[i].capacity;
    }

    if ((held_total + 1) * demand->blocks > room_total) {
        return n;
    }

    /*
     * and the prefix must be hot: more than one server's fair share of
     * all recent routes; an even mix of many prefixes is only ever
     * briefly imbalanced, and its copies would evict one another
     */

    if ((uint64_t) demand->share * n <= 1024) {
        return n;
    }

    best_load = kvr_policy_load(&cand[best]);
    spare = n;

    for (i = 0; i < n; i++) {
        load = kvr_policy_load(&cand[i]);

        if (i == best || conf->spread == 0
            || load + conf->spread > best_load
            || cand[i].capacity == 0
            || (cand[i].overlap < max_overlap
                && kvr_policy_no_room(&cand[i], demand)))
        {
            continue;
        }

        if (spare == n || load < kvr_policy_load(&cand[spare])
            || (load == kvr_policy_load(&cand[spare])
                && cand[i].overlap > cand[spare].overlap))
        {
            spare = i;
        }
    }

    return spare;
}


/* imbalanced: the least loaded, preferring longer overlap */

static size_t
kvr_policy_least(const kvr_candidate_t *cand, size_t n,
    const kvr_demand_t *demand, double min_load)
{
    size_t  i, least;

    least = n;

    for (i = 0; i < n; i++) {
        if (kvr_policy_load(&cand[i]) != min_load) {
            continue;
        }

        if (least == n || cand[i].overlap > cand[least].overlap
            || (cand[i].overlap == cand[least].overlap
                && kvr_policy_mix(cand[i].id_hash, demand->random)
                   < kvr_policy_mix(cand[least].id_hash, demand->random)))
        {
            least = i;
        }
    }

    return least;
}


/* in-flight requests per unit of weight */

static double
kvr_policy_load(const kvr_candidate_t *cand)
{
    return (double) cand->inflight / (cand->weight ? cand->weight : 1);
}


/*
 * the prompt tokens the server need not compute: the GPU's overlap, and
 * the offload tiers' blocks after it, weighed by what loading them back
 * costs against a GPU hit (Dynamo's overlap credit)
 */

static double
kvr_policy_cached(const kvr_policy_conf_t *conf, const kvr_candidate_t *cand,
    double bs)
{
    return ((double) cand->overlap
            + conf->host_weight * cand->overlap_host
            + conf->disk_weight * cand->overlap_disk) * bs;
}


static int
kvr_policy_tiered(const kvr_candidate_t *cand, size_t n)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        if (cand[i].overlap_host || cand[i].overlap_disk) {
            return 1;
        }
    }

    return 0;
}


/* maps 64 random bits to (0, 1) */

static double
kvr_policy_unit(uint64_t bits)
{
    return ((double) (bits >> 11) + 0.5) / 9007199254740992.0;
}


/*
 * NVIDIA Dynamo's classic cost (routers.md A.5), lower is better:
 *   prefill_blocks = (pending prefill tokens + new uncached tokens) / bs
 *   decode_blocks  = active blocks + blocks of this request not cached
 *   cost           = overlap_weight * prefill_blocks + decode_blocks
 * Ties are broken uniformly at random, as Dynamo does at temperature 0.
 */

static size_t
kvr_policy_pick_dynamo(const kvr_policy_conf_t *conf,
    const kvr_candidate_t *cand, size_t n, const kvr_demand_t *demand,
    kvr_pick_e *why)
{
    size_t    i, best;
    double    bs, cached, prefill, decode, cost, best_cost;
    uint64_t  tie, best_tie;

    bs = conf->block_size ? conf->block_size : 1;
    best = 0;
    best_cost = 0;
    best_tie = 0;

    for (i = 0; i < n; i++) {
        cached = kvr_policy_cached(conf, &cand[i], bs);

        if (cached > demand->tokens) {
            cached = demand->tokens;
        }

        prefill = ((double) cand[i].inflight_prefill + demand->tokens
                   - cached) / bs;
        decode = (double) cand[i].inflight_tokens / bs
                 + (demand->blocks > cand[i].overlap
                    ? demand->blocks - cand[i].overlap : 0);
        cost = conf->overlap_weight * prefill + decode;
        tie = kvr_policy_mix(cand[i].id_hash, demand->random);

        if (i == 0 || cost < best_cost
            || (cost == best_cost && tie < best_tie))
        {
            best = i;
            best_cost = cost;
            best_tie = tie;
        }
    }

    *why = KVR_PICK_COST;

    return best;
}


/*
 * cost: what sending the request to a server costs all requests, in prompt
 * tokens of prefill time, lower is better (README "Policy cost"):
 *
 *   cost = (corun * k + uncached * (1 + k) + pending) / weight
 *          + evict * tokens * (1 + mean k)   if the server lacks the
 *                                            prefix and has no room for it
 *
 * k: requests in flight there; each one more slows every step there
 * (corun); this prompt's uncached part stalls the k running ones while it
 * is prefilled and waits behind their uncached work (pending).  A miss on
 * a server whose cache is full pushes another prefix out, which costs a
 * miss of about one prompt later, when the fleet is as busy as now.
 */

static size_t
kvr_policy_pick_cost(const kvr_policy_conf_t *conf,
    const kvr_candidate_t *cand, size_t n, const kvr_demand_t *demand,
    kvr_pick_e *why)
{
    size_t    i, best;
    double    bs, mean, k, cached, uncached, cost, best_cost;
    uint32_t  max_overlap;
    uint64_t  tie, best_tie;

    bs = conf->block_size ? conf->block_size : 16;
    max_overlap = 0;
    mean = 0;

    for (i = 0; i < n; i++) {
        if (cand[i].overlap > max_overlap) {
            max_overlap = cand[i].overlap;
        }

        mean += cand[i].inflight;
    }

    mean /= n;

    best = 0;
    best_cost = 0;
    best_tie = 0;

    for (i = 0; i < n; i++) {
        k = cand[i].inflight;
        cached = kvr_policy_cached(conf, &cand[i], bs);
        uncached = cached < demand->tokens ? demand->tokens - cached : 0;

        cost = (conf->corun * k + uncached * (1 + k)
                + (double) cand[i].inflight_prefill)
               / (cand[i].weight ? cand[i].weight : 1);

        if ((max_overlap == 0 || cand[i].overlap < max_overlap)
            && kvr_policy_no_room(&cand[i], demand))
        {
            cost += conf->evict * demand->tokens * (1 + mean);
        }

        tie = kvr_policy_mix(cand[i].id_hash, demand->random);

        /*
         * equal costs (an idle fleet): the longer overlap, then the fewer
         * prefixes per unit of weight, so new prefixes partition evenly
         */

        if (i == 0 || cost < best_cost
            || (cost == best_cost
                && (cand[i].overlap > cand[best].overlap
                    || (cand[i].overlap == cand[best].overlap
                        && kvr_policy_fewer(&cand[i], &cand[best], tie,
                                            best_tie)))))
        {
            best = i;
            best_cost = cost;
            best_tie = tie;
        }
    }

    if (max_overlap == 0) {
        *why = KVR_PICK_HOME;

    } else if (cand[best].overlap == max_overlap) {
        *why = KVR_PICK_OVERLAP;

    } else {
        *why = KVR_PICK_LOAD;
    }

    return best;
}


/*
 * ttft: the time to this request's first token there, in prompt tokens of
 * prefill, lower is better (README "How it decides"):
 *
 *   cost = (prefill ahead + uncached + decode * k) / weight
 *          + evict * tokens   if the server lacks the prefix and its cache
 *                             is full of other prefixes
 *          + wait             if the blocks pinned there, this request's
 *                             new ones and its output exceed its capacity
 *
 * prefill ahead: the uncached prompt tokens of requests sent there that
 * have no first token yet; an engine prefills them before this one.  Each
 * of the k requests in flight slows every step (decode).  An engine admits
 * a request only when its KV cache has room for it: without room it waits
 * for one in flight to end, whatever else the server offers (wait).
 */

static size_t
kvr_policy_pick_ttft(const kvr_policy_conf_t *conf,
    const kvr_candidate_t *cand, size_t n, const kvr_demand_t *demand,
    kvr_pick_e *why)
{
    size_t    i, best;
    double    cost, best_cost;
    uint32_t  max_overlap;
    uint64_t  tie, best_tie;

    max_overlap = 0;

    for (i = 0; i < n; i++) {
        if (cand[i].overlap > max_overlap) {
            max_overlap = cand[i].overlap;
        }
    }

    /* a prefix an offload tier holds is not new: its cost decides */

    if (max_overlap == 0 && conf->place_slack > 0
        && !kvr_policy_tiered(cand, n))
    {
        *why = KVR_PICK_HOME;
        return kvr_policy_place(conf, cand, n, demand);
    }

    best = 0;
    best_cost = 0;
    best_tie = 0;

    for (i = 0; i < n; i++) {
        cost = kvr_policy_ttft_cost(conf, &cand[i], demand, max_overlap);
        tie = kvr_policy_mix(cand[i].id_hash, demand->random);

        if (i == 0
            || kvr_policy_cheaper(cand, i, cost, tie, best, best_cost,
                                  best_tie))
        {
            best = i;
            best_cost = cost;
            best_tie = tie;
        }
    }

    *why = kvr_policy_why(cand, best, max_overlap);

    return best;
}


static double
kvr_policy_ttft_cost(const kvr_policy_conf_t *conf,
    const kvr_candidate_t *cand, const kvr_demand_t *demand,
    uint32_t max_overlap)
{
    double  bs, cached, uncached, cost, speed;

    bs = conf->block_size ? conf->block_size : 16;
    cached = kvr_policy_cached(conf, cand, bs);
    uncached = cached < demand->tokens ? demand->tokens - cached : 0;

    /* work ahead of the first token, in time at the engine's speed */
    speed = cand->speed > 0 ? cand->speed : 1;

    /*
     * and, when weighed, this request's own output: a closed-loop client
     * waits for it, so a slow engine's every step is its time too
     */

    cost = ((double) cand->inflight_prefill + uncached
            + conf->ttft_decode * cand->inflight
            + conf->ttft_own * demand->out_blocks * bs)
           / ((cand->weight ? cand->weight : 1) * speed);

    if ((max_overlap == 0 || cand->overlap < max_overlap)
        && kvr_policy_no_room(cand, demand))
    {
        cost += conf->ttft_evict * demand->tokens;
    }

    if (kvr_policy_waits(cand, demand)) {
        cost += conf->ttft_wait;
    }

    return cost;
}


int
kvr_policy_waits(const kvr_candidate_t *cand, const kvr_demand_t *demand)
{
    uint64_t  fresh;

    fresh = demand->blocks > cand->pinned_own
            ? demand->blocks - cand->pinned_own : 0;

    return cand->capacity
           && cand->pinned + fresh + demand->out_blocks > cand->capacity;
}


/*
 * A prefix no server holds.  The cheapest server depends on what only
 * this frontend knows (its own requests in flight, pins, predictions):
 * frontends in front of the same engines would each put the prefix
 * somewhere else, and each copy evicts another prefix.  Any server within
 * place_slack of the cheapest is as good a home; of those holding the
 * fewest prefixes, the prefix's first block chooses by rendezvous
 * hashing: frontends seeing the
 * same engines (kv mode: the same events) agree without talking, and a
 * server that goes moves only the prefixes it was home to.
 */

static size_t
kvr_policy_place(const kvr_policy_conf_t *conf, const kvr_candidate_t *cand,
    size_t n, const kvr_demand_t *demand)
{
    size_t  i, best;
    double  cost, least, limit, held, fewest;
    double  costs[KVR_POLICY_PLACE_MAX];

    if (n > KVR_POLICY_PLACE_MAX) {
        n = KVR_POLICY_PLACE_MAX;
    }

    least = 0;
    costs[0] = 0;                   /* n > 0; for the compiler's sake */

    for (i = 0; i < n; i++) {
        cost = kvr_policy_ttft_cost(conf, &cand[i], demand, 0);
        costs[i] = cost;

        if (i == 0 || cost < least) {
            least = cost;
        }
    }

    limit = least + conf->place_slack;

    /*
     * of those, the ones holding the fewest prefixes per unit of weight,
     * so prefixes partition evenly (kv mode: counted from the engines'
     * events, the same for every frontend)
     */

    fewest = -1;

    for (i = 0; i < n; i++) {
        held = (double) cand[i].prefixes
               / (cand[i].weight ? cand[i].weight : 1);

        if (costs[i] <= limit && (fewest < 0 || held < fewest)) {
            fewest = held;
        }
    }

    for (i = 0; i < n; i++) {
        held = (double) cand[i].prefixes
               / (cand[i].weight ? cand[i].weight : 1);

        if (held > fewest) {
            costs[i] = HUGE_VAL;
        }
    }

    best = kvr_policy_rendezvous(cand, n, demand->first_block, costs, limit);

    /* one within the limit holding the fewest qualifies; n: NaN costs */

    return best < n ? best : 0;
}


size_t
kvr_policy_rendezvous(const kvr_candidate_t *cand, size_t n, uint64_t key,
    const double *cost, double limit)
{
    size_t  i, best;
    double  score, best_score;

    best = n;
    best_score = 0;

    for (i = 0; i < n; i++) {
        if (cost != NULL && !(cost[i] <= limit)) {
            continue;
        }

        score = -log(kvr_policy_unit(kvr_policy_mix(cand[i].id_hash, key)))
                / (cand[i].weight ? cand[i].weight : 1);

        /* equal scores (a duplicate id_hash): the smaller hash, not order */

        if (best == n || score < best_score
            || (score == best_score && cand[i].id_hash < cand[best].id_hash))
        {
            best = i;
            best_score = score;
        }
    }

    return best;
}


/*
 * Whether candidate i beats the best so far.  Equal costs (an idle
 * fleet): the longer overlap, then the fewer prefixes per unit of weight,
 * so new prefixes partition evenly, then the tie hash.
 */

static int
kvr_policy_cheaper(const kvr_candidate_t *cand, size_t i, double cost,
    uint64_t tie, size_t best, double best_cost, uint64_t best_tie)
{
    if (cost != best_cost) {
        return cost < best_cost;
    }

    if (cand[i].overlap != cand[best].overlap) {
        return cand[i].overlap > cand[best].overlap;
    }

    return kvr_policy_fewer(&cand[i], &cand[best], tie, best_tie);
}


static kvr_pick_e
kvr_policy_why(const kvr_candidate_t *cand, size_t best, uint32_t max_overlap)
{
    if (max_overlap == 0) {
        return KVR_PICK_HOME;
    }

    if (cand[best].overlap == max_overlap) {
        return KVR_PICK_OVERLAP;
    }

    return KVR_PICK_LOAD;
}


/*
 * whether one more prefix of this prompt's size would push another out of
 * the server's cache; without a known capacity, assume it would
 */

static int
kvr_policy_no_room(const kvr_candidate_t *cand, const kvr_demand_t *demand)
{
    if (cand->capacity == 0) {
        return 1;
    }

    return ((uint64_t) cand->prefixes + 1) * demand->blocks > cand->capacity;
}


/* whether a holds fewer prefixes per unit of weight than b, ties by hash */

static int
kvr_policy_fewer(const kvr_candidate_t *a, const kvr_candidate_t *b,
    uint64_t tie_a, uint64_t tie_b)
{
    uint64_t  pa, pb;

    /* cross-multiplied: p_a / w_a < p_b / w_b */

    pa = (uint64_t) a->prefixes * (b->weight ? b->weight : 1);
    pb = (uint64_t) b->prefixes * (a->weight ? a->weight : 1);

    if (pa != pb) {
        return pa < pb;
    }

    return tie_a < tie_b;
}


/* a 64-bit finaliser (splitmix64) of two values */

static uint64_t
kvr_policy_mix(uint64_t a, uint64_t b)
{
    uint64_t  z;

    z = a ^ (b + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2));
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;

    return z ^ (z >> 31);
}


int
kvr_policy_from_name(const char *name, size_t len)
{
    if (len == 7 && memcmp(name, "kvroute", 7) == 0) {
        return KVR_POLICY_KVROUTE;
    }

    if (len == 6 && memcmp(name, "dynamo", 6) == 0) {
        return KVR_POLICY_DYNAMO;
    }

    if (len == 4 && memcmp(name, "cost", 4) == 0) {
        return KVR_POLICY_COST;
    }

    if (len == 4 && memcmp(name, "ttft", 4) == 0) {
        return KVR_POLICY_TTFT;
    }

    return -1;
}
