/*
 * Copyright (C) kvroute developers
 *
 * Unit tests of the selection policies.
 */


#include <string.h>

#include "tap.h"
#include "kvr_policy.h"


static kvr_policy_conf_t  conf_kvroute = {
    KVR_POLICY_KVROUTE, 16, 1.0, 4, 1.5, 0, 4096, 4, 0, 0, 0, 0, 0, 0, 0
};

static kvr_policy_conf_t  conf_dynamo = {
    KVR_POLICY_DYNAMO, 16, 1.0, 4, 1.5, 0, 4096, 4, 0, 0, 0, 0, 0, 0, 0
};

static kvr_policy_conf_t  conf_cost = {
    KVR_POLICY_COST, 16, 1.0, 4, 1.5, 0, 4096, 4, 0, 0, 0, 0, 0, 0, 0
};

static kvr_policy_conf_t  conf_ttft = {
    KVR_POLICY_TTFT, 16, 1.0, 4, 1.5, 0, 4096, 4, 1200, 2, 40000, 0, 0, 0, 0
};

/* policy=ttft with a prefix no server holds placed by rendezvous */
static kvr_policy_conf_t  conf_place = {
    KVR_POLICY_TTFT, 16, 1.0, 4, 1.5, 0, 4096, 4, 1200, 2, 40000, 1200, 0, 0, 0
};


#define PLACE_N     6
#define PLACE_KEYS  6000


static void
reset(kvr_candidate_t *c, size_t n)
{
    size_t  i;

    memset(c, 0, n * sizeof(kvr_candidate_t));

    for (i = 0; i < n; i++) {
        c[i].id_hash = 0x1000 + i * 77;
        c[i].weight = 1;
    }
}


/*
 * the server (its id_hash) a new prefix starting with key is placed on;
 * the tie-break randomness changes on every call, the choice must not
 */

static uint64_t
placed(kvr_candidate_t *c, size_t n, kvr_demand_t *d, uint64_t key)
{
    size_t      pick;
    kvr_pick_e  why;

    d->first_block = key;
    d->random = key * 31 + d->random + 7;
    pick = kvr_policy_pick(&conf_place, c, n, d, &why);

    return (why == KVR_PICK_HOME) ? c[pick].id_hash : 0;
}


/* idle servers with room for many prefixes, ids in order */

static void
idle(kvr_candidate_t *c, size_t n)
{
    size_t  i;

    reset(c, n);

    for (i = 0; i < n; i++) {
        c[i].capacity = 100000;
    }
}


static size_t
server_of(kvr_candidate_t *c, size_t n, uint64_t id)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        if (c[i].id_hash == id) {
            return i;
        }
    }

    return n;
}


/*
 * place_slack: a prefix no server holds goes to the rendezvous choice of
 * its first block among the servers near the cheapest; the prompt is
 * 1,600 tokens, 100 blocks
 */

static void
test_place(kvr_demand_t *d)
{
    int              k, moved, strays, off, bad;
    size_t           i, s, lo, hi;
    uint64_t         key, id;
    uint64_t         first[PLACE_KEYS];
    double           cost[PLACE_N];
    uint32_t         count[PLACE_N];
    kvr_pick_e       why;
    kvr_candidate_t  c[PLACE_N], rev[PLACE_N], less[PLACE_N];

    d->out_blocks = 1;
    idle(c, PLACE_N);

    for (i = 0; i < PLACE_N; i++) {
        rev[i] = c[PLACE_N - 1 - i];
        count[i] = 0;
    }

    /* the same choice whatever the order of the servers */

    off = 0;
    bad = 0;

    for (k = 0; k < PLACE_KEYS; k++) {
        key = 0x9e3779b97f4a7c15ULL * (uint64_t) (k + 1);
        first[k] = placed(c, PLACE_N, d, key);
        off += (placed(rev, PLACE_N, d, key) != first[k]);

        s = server_of(c, PLACE_N, first[k]);
        bad += (s == PLACE_N);

        if (s < PLACE_N) {
            count[s]++;
        }
    }

    tap_is(bad, 0, "place: every new prefix gets a home, reason home");
    tap_is(off, 0, "place: the servers' order changes no choice");

    /* even: 1,000 each, within 5 standard deviations (5 * 28.9) */

    lo = PLACE_KEYS;
    hi = 0;

    for (i = 0; i < PLACE_N; i++) {
        lo = (count[i] < lo) ? count[i] : lo;
        hi = (count[i] > hi) ? count[i] : hi;
    }

    tap_ok(lo > 855 && hi < 1145, "place: prefixes spread evenly");

    /* a server goes: only its prefixes move */

    for (i = 0, s = 0; i < PLACE_N; i++) {
        if (i != 2) {
            less[s++] = c[i];
        }
    }

    moved = 0;
    strays = 0;

    for (k = 0; k < PLACE_KEYS; k++) {
        key = 0x9e3779b97f4a7c15ULL * (uint64_t) (k + 1);
        id = placed(less, PLACE_N - 1, d, key);

        if (id != first[k]) {
            moved++;
            strays += (first[k] != c[2].id_hash);
        }
    }

    tap_is(moved, count[2], "place: a server removed moves its prefixes");
    tap_is(strays, 0, "place: ... and no other");

    /* load within the slack changes nothing; beyond, the server is left */

    c[3].inflight = 1;                          /* + 1,200: within */
    off = 0;

    for (k = 0; k < PLACE_KEYS; k++) {
        key = 0x9e3779b97f4a7c15ULL * (uint64_t) (k + 1);
        off += (placed(c, PLACE_N, d, key) != first[k]);
    }

    tap_is(off, 0, "place: a server within the slack keeps its prefixes");

    c[3].inflight = 2;                          /* + 2,400: beyond */
    moved = 0;
    strays = 0;

    for (k = 0; k < PLACE_KEYS; k++) {
        key = 0x9e3779b97f4a7c15ULL * (uint64_t) (k + 1);
        id = placed(c, PLACE_N, d, key);
        strays += (id == c[3].id_hash);

        if (id != first[k]) {
            moved++;
        }
    }

    tap_is(strays, 0, "place: none on a server busier than the slack");
    tap_is(moved, count[3], "place: ... and only its prefixes move");

    /* a server whose cache has no room would evict: left out */

    c[3].inflight = 0;
    c[4].capacity = 150;                        /* (0 + 1) * 100: room */
    c[4].prefixes = 1;                          /* (1 + 1) * 100: none */
    strays = 0;

    for (k = 0; k < PLACE_KEYS; k++) {
        key = 0x9e3779b97f4a7c15ULL * (uint64_t) (k + 1);
        strays += (placed(c, PLACE_N, d, key) == c[4].id_hash);
    }

    tap_is(strays, 0, "place: none where a miss would evict, if room is");

    /* the fewest prefixes first, then the hash among those */

    idle(c, PLACE_N);

    for (i = 0; i < PLACE_N; i++) {
        c[i].prefixes = 2;
    }

    c[1].prefixes = 1;
    c[4].prefixes = 1;
    c[5].prefixes = 1;
    c[5].inflight = 2;                          /* beyond the slack */
    strays = 0;
    moved = 0;

    for (k = 0; k < PLACE_KEYS; k++) {
        key = 0x9e3779b97f4a7c15ULL * (uint64_t) (k + 1);
        id = placed(c, PLACE_N, d, key);
        strays += (id != c[1].id_hash && id != c[4].id_hash);
        moved += (id == c[1].id_hash);
    }

    tap_is(strays, 0, "place: the fewest prefixes within the slack first");
    tap_ok(moved > 2700 && moved < 3300, "place: ... then the hash");

    /* weight: twice the weight, twice the prefixes (2/7 of them) */

    idle(c, PLACE_N);
    c[0].weight = 2;
    strays = 0;

    for (k = 0; k < PLACE_KEYS; k++) {
        key = 0x9e3779b97f4a7c15ULL * (uint64_t) (k + 1);
        strays += (placed(c, PLACE_N, d, key) == c[0].id_hash);
    }

    /* 1,714 expected, 5 standard deviations 175 */
    tap_ok(strays > 1539 && strays < 1889, "place: by weight");

    /* the rendezvous itself */

    tap_is(kvr_policy_rendezvous(c, PLACE_N, 42, NULL, 0) < PLACE_N, 1,
           "rendezvous: without costs, all qualify");

    for (i = 0; i < PLACE_N; i++) {
        cost[i] = 5;
    }

    tap_is(kvr_policy_rendezvous(c, PLACE_N, 42, cost, 4), PLACE_N,
           "rendezvous: none within the limit");
    cost[5] = 1;
    tap_is(kvr_policy_rendezvous(c, PLACE_N, 42, cost, 4), 5,
           "rendezvous: the only one within it");

    /* a prefix held somewhere is not placed: the holder */

    idle(c, PLACE_N);
    c[1].overlap = 100;
    d->first_block = 7;
    tap_is(kvr_policy_pick(&conf_place, c, PLACE_N, d, &why), 1,
           "place: a held prefix goes to its holder");
    tap_is(why, KVR_PICK_OVERLAP, "place: reason overlap");
}


/* policy=ttft: the prompt is 1,600 tokens, 100 blocks */

static void
test_ttft(kvr_demand_t *d)
{
    size_t           pick;
    kvr_pick_e       why;
    kvr_candidate_t  c[3];

    d->out_blocks = 1;

    /* the prefill queued ahead against the requests in flight */
    reset(c, 2);
    c[0].inflight_prefill = 5000;               /* 5,000 + 1,600 */
    c[0].inflight = 1;                          /* + 1,200 */
    c[1].inflight = 3;                          /* 1,600 + 3,600 */
    pick = kvr_policy_pick(&conf_ttft, c, 2, d, &why);
    tap_is(pick, 1, "ttft: less prefill ahead wins");

    c[1].inflight = 6;                          /* 1,600 + 7,200 */
    pick = kvr_policy_pick(&conf_ttft, c, 2, d, &why);
    tap_is(pick, 0, "ttft: ... unless its requests in flight weigh more");

    /* the same work takes longer on a slower engine */
    c[1].inflight = 3;                          /* 5,200 at speed 1 */
    c[1].speed = 0.5;                           /* 10,400 in time */
    pick = kvr_policy_pick(&conf_ttft, c, 2, d, &why);
    tap_is(pick, 0, "ttft: work ahead in time at the engine's speed");

    c[0].speed = 0.25;                          /* 7,800 / 0.25 */
    pick = kvr_policy_pick(&conf_ttft, c, 2, d, &why);
    tap_is(pick, 1, "ttft: ... both engines' speeds");

    c[0].speed = 0;
    c[1].speed = 0;
    pick = kvr_policy_pick(&conf_ttft, c, 2, d, &why);
    tap_is(pick, 1, "ttft: speed 0 is unknown: as fast");

    /*
     * the request's own output: 16 tokens of 100 prompt tokens each,
     * 1,600 at speed 1 and 3,200 at speed 0.5
     */
    reset(c, 2);
    c[0].inflight = 2;                          /* 1,600 + 2,400 */
    c[1].speed = 0.5;                           /* 1,600 / 0.5 */
    c[0].speed = 1;
    pick = kvr_policy_pick(&conf_ttft, c, 2, d, &why);
    tap_is(pick, 1, "ttft: an idle slow engine before a busy fast one");

    conf_ttft.ttft_own = 100;                   /* 5,600 against 6,400 */
    pick = kvr_policy_pick(&conf_ttft, c, 2, d, &why);
    tap_is(pick, 0, "ttft: ... unless the output decodes slower there");

    c[0].inflight = 3;                          /* 6,800 against 6,400 */
    pick = kvr_policy_pick(&conf_ttft, c, 2, d, &why);
    tap_is(pick, 1, "ttft: ... while the fast one is not too busy");
    conf_ttft.ttft_own = 0;

    /* a cached prefix against an idle server */
    reset(c, 2);
    c[0].overlap = 100;
    c[0].inflight = 1;                          /* 1,200 */
    pick = kvr_policy_pick(&conf_ttft, c, 2, d, &why);
    tap_is(pick, 0, "ttft: the holder with one in flight");
    tap_is(why, KVR_PICK_OVERLAP, "ttft: reason overlap");

    c[1].capacity = 10000;                      /* room: no eviction */
    c[0].inflight = 2;                          /* 2,400 > 1,600 */
    pick = kvr_policy_pick(&conf_ttft, c, 2, d, &why);
    tap_is(pick, 1, "ttft: an idle server before a busy holder");
    tap_is(why, KVR_PICK_LOAD, "ttft: reason load");

    c[1].capacity = 500;
    c[1].prefixes = 5;                          /* + 2 x 1,600 */
    pick = kvr_policy_pick(&conf_ttft, c, 2, d, &why);
    tap_is(pick, 0, "ttft: ... unless the idle one would evict");

    /* the KV room: pinned blocks against the capacity */
    c[0].capacity = 500;
    c[0].pinned = 450;
    c[0].pinned_own = 100;                      /* 450 + 0 + 1 */
    pick = kvr_policy_pick(&conf_ttft, c, 2, d, &why);
    tap_is(pick, 0, "ttft: room when its own blocks are pinned there");

    c[0].pinned_own = 60;                       /* 450 + 40 + 1 */
    pick = kvr_policy_pick(&conf_ttft, c, 2, d, &why);
    tap_is(pick, 0, "ttft: room for the new blocks");
    tap_is(kvr_policy_waits(&c[0], d), 0, "waits: room, exactly");

    c[0].pinned_own = 50;                       /* 450 + 50 + 1 > 500 */
    pick = kvr_policy_pick(&conf_ttft, c, 2, d, &why);
    tap_is(pick, 1, "ttft: no room: it would wait, so elsewhere");
    tap_is(kvr_policy_waits(&c[0], d), 1, "waits: one block short");

    c[0].capacity = 0;
    pick = kvr_policy_pick(&conf_ttft, c, 2, d, &why);
    tap_is(pick, 0, "ttft: unknown capacity: no wait counted");
    tap_is(kvr_policy_waits(&c[0], d), 0, "waits: not with unknown capacity");

    /* weight divides the time terms */
    reset(c, 2);
    c[0].inflight = 4;                          /* 6,400 / 2 */
    c[0].weight = 2;
    c[1].inflight = 2;                          /* 4,000 */
    pick = kvr_policy_pick(&conf_ttft, c, 2, d, &why);
    tap_is(pick, 0, "ttft: weight divides the load");

    /* an idle fleet and a new prefix: the fewest prefixes */
    reset(c, 3);
    c[0].prefixes = 2;
    c[1].prefixes = 1;
    c[2].prefixes = 2;
    pick = kvr_policy_pick(&conf_ttft, c, 3, d, &why);
    tap_is(pick, 1, "ttft: ties go to the fewest prefixes");
    tap_is(why, KVR_PICK_HOME, "ttft: reason home");

    d->out_blocks = 0;
}


/*
 * offload tiers: a server with 2 GPU blocks of the prompt and 8 more in
 * its host tier against one with 4 on the GPU; weighed as Dynamo does
 * (2 + 0.75 x 8 = 8 blocks) it wins, with the tiers ignored it loses
 */

static void
test_tiers(kvr_demand_t *d)
{
    size_t             pick;
    kvr_pick_e         why;
    kvr_candidate_t    c[2];
    kvr_policy_conf_t  conf;

    static kvr_policy_conf_t  *confs[3] = {
        &conf_dynamo, &conf_cost, &conf_ttft
    };
    static const char         *names[3] = { "dynamo", "cost", "ttft" };
    size_t                     k;

    for (k = 0; k < 3; k++) {
        reset(c, 2);
        c[0].overlap = 2;
        c[0].overlap_host = 8;
        c[1].overlap = 4;
        c[0].capacity = c[1].capacity = 100000;

        conf = *confs[k];
        conf.host_weight = KVR_POLICY_HOST_WEIGHT;
        conf.disk_weight = KVR_POLICY_DISK_WEIGHT;
        pick = kvr_policy_pick(&conf, c, 2, d, &why);
        tap_ok(pick == 0, "%s: 2 GPU + 8 host blocks beat 4 GPU blocks",
               names[k]);

        conf.host_weight = 0;
        conf.disk_weight = 0;
        pick = kvr_policy_pick(&conf, c, 2, d, &why);
        tap_ok(pick == 1, "%s: tiers weighed 0: the GPU's 4 blocks win",
               names[k]);

        /* disk blocks weigh less: 2 + 0.25 x 8 = 4 ties, 7 do not */
        c[0].overlap_host = 0;
        c[0].overlap_disk = 7;
        conf.host_weight = KVR_POLICY_HOST_WEIGHT;
        conf.disk_weight = KVR_POLICY_DISK_WEIGHT;
        pick = kvr_policy_pick(&conf, c, 2, d, &why);
        tap_ok(pick == 1, "%s: 2 GPU + 7 disk blocks lose to 4 GPU blocks",
               names[k]);
    }

    /* ttft: a prefix only a tier holds is not placed as a new one */
    reset(c, 2);
    c[0].capacity = c[1].capacity = 100000;
    c[1].overlap_host = 50;
    conf = conf_place;
    conf.host_weight = KVR_POLICY_HOST_WEIGHT;
    pick = kvr_policy_pick(&conf, c, 2, d, &why);
    tap_is(pick, 1, "ttft: a prefix in one host tier goes there");
}


int
main(void)
{
    size_t           i, pick, first, counts[4];
    kvr_pick_e       why;
    kvr_demand_t     d;
    kvr_candidate_t  c[4];

    memset(&d, 0, sizeof(d));
    d.blocks = 100;
    d.tokens = 1600;
    d.first_block = 42;
    d.random = 7;

    test_tiers(&d);

    /* kvroute: the longest overlap wins when loads are even */
    reset(c, 4);
    c[2].overlap = 80;
    c[1].overlap = 20;
    pick = kvr_policy_pick(&conf_kvroute, c, 4, &d, &why);
    tap_is(pick, 2, "longest overlap wins");
    tap_is(why, KVR_PICK_OVERLAP, "reason overlap");

    /* among equal overlaps the least loaded */
    c[1].overlap = 80;
    c[2].inflight = 3;
    c[1].inflight = 1;
    pick = kvr_policy_pick(&conf_kvroute, c, 4, &d, &why);
    tap_is(pick, 1, "equal overlap: least loaded");

    /* moderate imbalance keeps the prefix where it is */
    reset(c, 4);
    c[3].overlap = 50;
    c[3].inflight = 4;
    pick = kvr_policy_pick(&conf_kvroute, c, 4, &d, &why);
    tap_is(pick, 3, "busy by balance_abs only: stays");

    /* real imbalance spills to the least loaded */
    c[3].inflight = 5;
    c[0].inflight = 1;
    c[1].inflight = 0;
    c[2].inflight = 0;
    c[2].overlap = 10;
    pick = kvr_policy_pick(&conf_kvroute, c, 4, &d, &why);
    tap_is(why, KVR_PICK_LOAD, "imbalanced: reason load");
    tap_is(pick, 2, "spill prefers the idle server with some overlap");

    /* the ratio test: 9 vs 7 is within 1.5x, so it stays */
    reset(c, 4);
    c[0].overlap = 5;
    c[0].inflight = 12;
    for (i = 1; i < 4; i++) {
        c[i].inflight = 8;
    }
    pick = kvr_policy_pick(&conf_kvroute, c, 4, &d, &why);
    tap_is(pick, 0, "within balance_rel: stays");

    /* new prefix: the emptiest cache gets it */
    reset(c, 4);
    for (i = 0; i < 4; i++) {
        c[i].capacity = 800;
        c[i].cached_blocks = 700;
    }
    c[1].cached_blocks = 10;
    pick = kvr_policy_pick(&conf_kvroute, c, 4, &d, &why);
    tap_is(pick, 1, "new prefix goes to the emptiest cache");
    tap_is(why, KVR_PICK_HOME, "reason home");

    /* equally full: the home depends on the prefix only, not the call */
    c[1].cached_blocks = 700;
    first = kvr_policy_pick(&conf_kvroute, c, 4, &d, &why);
    for (i = 0; i < 20; i++) {
        d.random = i * 1234567;
        pick = kvr_policy_pick(&conf_kvroute, c, 4, &d, &why);
        if (pick != first) {
            break;
        }
    }
    tap_is(i, 20, "home is stable for a prefix");

    /* and different prefixes spread over every server */
    memset(counts, 0, sizeof(counts));
    for (i = 0; i < 400; i++) {
        d.first_block = i * 0x9e3779b97f4a7c15ULL;
        counts[kvr_policy_pick(&conf_kvroute, c, 4, &d, &why)]++;
    }
    for (i = 0; i < 4; i++) {
        tap_ok(counts[i] > 60 && counts[i] < 140,
               "server %zu is home to %zu of 400 prefixes", i, counts[i]);
    }

    /* weight: a server of weight 3 is home to about 3x as many */
    c[0].weight = 3;
    memset(counts, 0, sizeof(counts));
    for (i = 0; i < 600; i++) {
        d.first_block = i * 0x9e3779b97f4a7c15ULL + 1;
        counts[kvr_policy_pick(&conf_kvroute, c, 4, &d, &why)]++;
    }
    tap_ok(counts[0] > 240 && counts[0] < 360,
           "weight 3 of 6: %zu of 600 prefixes", counts[0]);

    /* fewer prefixes held outranks an emptier cache and the hash */
    c[0].weight = 1;
    for (i = 0; i < 4; i++) {
        c[i].prefixes = 4;
        c[i].cached_blocks = 700;
    }
    c[3].prefixes = 3;
    c[1].cached_blocks = 10;
    for (i = 0; i < 50; i++) {
        d.first_block = i * 0x9e3779b97f4a7c15ULL + 5;
        if (kvr_policy_pick(&conf_kvroute, c, 4, &d, &why) != 3) {
            break;
        }
    }
    tap_is(i, 50, "a new prefix goes where the fewest prefixes live");

    /* per unit of weight: 5 prefixes at weight 2 is fewer than 3 at 1 */
    c[3].prefixes = 4;
    c[0].prefixes = 5;
    c[0].weight = 2;
    c[2].prefixes = 3;
    pick = kvr_policy_pick(&conf_kvroute, c, 4, &d, &why);
    tap_is(pick, 0, "prefixes held are counted per unit of weight");

    /*
     * spread: a prefix's server 1 request busier than one with room for
     * another prefix (capacity 800 blocks, 100-block prompts: room while
     * it holds at most 7) gives the request to that one; not when the
     * others are full of prefixes, not with spread=0, not at equal load
     */
    {
        kvr_policy_conf_t  spread1 = conf_kvroute;

        spread1.spread = 1;
        reset(c, 4);
        for (i = 0; i < 4; i++) {
            c[i].capacity = 800;
            c[i].prefixes = 8;
            c[i].inflight = 1;
        }
        c[2].overlap = 100;
        c[2].inflight = 2;
        d.share = 300;                  /* over 1/4 of all routes: hot */
        d.first_block = 42;

        pick = kvr_policy_pick(&spread1, c, 4, &d, &why);
        tap_is(pick, 2, "spread: no room anywhere, the prefix stays");

        c[1].prefixes = 7;
        pick = kvr_policy_pick(&spread1, c, 4, &d, &why);
        tap_is(pick, 1, "spread: a less busy server with room takes it");
        tap_is(why, KVR_PICK_LOAD, "spread: reason load");

        pick = kvr_policy_pick(&conf_kvroute, c, 4, &d, &why);
        tap_is(pick, 2, "spread=0: the prefix stays");

        c[1].inflight = 2;
        pick = kvr_policy_pick(&spread1, c, 4, &d, &why);
        tap_is(pick, 2, "spread: not at equal load");

        c[1].inflight = 1;
        d.share = 256;
        pick = kvr_policy_pick(&spread1, c, 4, &d, &why);
        tap_is(pick, 2, "spread: not a prefix with a fair share or less");

        d.share = 300;
        c[1].capacity = 0;
        pick = kvr_policy_pick(&spread1, c, 4, &d, &why);
        tap_is(pick, 2, "spread: not to a server of unknown capacity");
    }

    /*
     * admission: a server whose cache (300 blocks) the requests in flight
     * already fill is passed over for one that can start the request now;
     * d: 100 blocks (1600 tokens), 80 of them cached on server 0
     */
    reset(c, 2);
    d.blocks = 100;
    d.tokens = 1600;
    c[0].capacity = c[1].capacity = 300;
    c[0].overlap = 80;
    c[0].inflight = 2;
    c[0].inflight_prefill = 3200;       /* 200 + 20 uncached + 80 = 300 */
    pick = kvr_policy_pick(&conf_kvroute, c, 2, &d, &why);
    tap_is(pick, 0, "admission: 300 of 300 blocks still fits");
    c[0].inflight_prefill = 3300;       /* 207 + 20 + 80 > 300 */
    pick = kvr_policy_pick(&conf_kvroute, c, 2, &d, &why);
    tap_is(pick, 1, "admission: a full server is passed over");
    tap_is(why, KVR_PICK_LOAD, "admission: reason load");
    c[1].inflight = 1;
    c[1].inflight_prefill = 4800;       /* 300 + 100 > 300: full too */
    pick = kvr_policy_pick(&conf_kvroute, c, 2, &d, &why);
    tap_is(pick, 0, "admission: all full, the prefix's server keeps it");
    c[0].capacity = c[1].capacity = 0;
    c[1].inflight_prefill = 0;
    c[1].inflight = 0;
    pick = kvr_policy_pick(&conf_kvroute, c, 2, &d, &why);
    tap_is(pick, 0, "admission: unknown capacity, no check");

    /* dynamo: overlap lowers the cost when loads are equal */
    reset(c, 4);
    c[2].overlap = 90;
    pick = kvr_policy_pick(&conf_dynamo, c, 4, &d, &why);
    tap_is(pick, 2, "dynamo: overlap wins at equal load");
    tap_is(why, KVR_PICK_COST, "dynamo: reason cost");

    /* ... but pending prefill on that server pushes the request away */
    c[2].inflight_prefill = 4000;
    c[2].inflight_tokens = 4000;
    pick = kvr_policy_pick(&conf_dynamo, c, 4, &d, &why);
    tap_ok(pick != 2, "dynamo: load outweighs overlap (picked %zu)", pick);

    /* the exact cost: (prefill + new - cached)/bs + active/bs + new blocks */
    reset(c, 2);
    c[0].inflight_prefill = 160;    /* 10 blocks */
    c[0].inflight_tokens = 320;     /* 20 blocks */
    c[0].overlap = 30;              /* prefill 10+100-30 = 80, decode 20+70 */
    c[1].inflight_prefill = 0;
    c[1].inflight_tokens = 1280;    /* 80 blocks: prefill 100, decode 180 */
    pick = kvr_policy_pick(&conf_dynamo, c, 2, &d, &why);
    tap_is(pick, 0, "dynamo: 170 beats 280");

    /*
     * cost (d: 1,600 tokens, 100 blocks): corun 4096 a request in flight,
     * uncached x (1 + k), evict 4 x 1,600 x (1 + mean k) on a server that
     * lacks the prefix and has no room
     */
    reset(c, 4);
    c[2].overlap = 80;                          /* 320 tokens uncached */
    pick = kvr_policy_pick(&conf_cost, c, 4, &d, &why);
    tap_is(pick, 2, "cost: overlap wins at equal load");
    tap_is(why, KVR_PICK_OVERLAP, "cost: reason overlap");

    /* unknown capacity counts as full: 2 more in flight stay (9,152 vs
       1,600 + 6,400 x 1.5 = 11,200) */
    c[2].inflight = 2;
    pick = kvr_policy_pick(&conf_cost, c, 4, &d, &why);
    tap_is(pick, 2, "cost: 2 in flight keep the prefix");

    /* 3 in flight: 12,288 + 1,280 = 13,568 against 1,600 + 6,400 x 1.75 */
    c[2].inflight = 3;
    pick = kvr_policy_pick(&conf_cost, c, 4, &d, &why);
    tap_ok(pick != 2, "cost: 3 in flight outweigh a miss (picked %zu)", pick);
    tap_is(why, KVR_PICK_LOAD, "cost: reason load");

    /* a server with room takes it at 1 in flight: 1,600 < 4,736 */
    c[2].inflight = 1;
    c[0].capacity = 1000;
    c[0].prefixes = 8;                          /* (8+1) x 100 <= 1000 */
    pick = kvr_policy_pick(&conf_cost, c, 4, &d, &why);
    tap_is(pick, 0, "cost: an idle server with room takes a busy prefix");

    c[0].prefixes = 10;                         /* 1,100 > 1,000: full */
    pick = kvr_policy_pick(&conf_cost, c, 4, &d, &why);
    tap_is(pick, 2, "cost: ... but not when its cache is full");

    /* pending prefill counts: 4,736 + 8,000 against 1,600 + 6,400 x 1.25 */
    c[2].inflight_prefill = 8000;
    pick = kvr_policy_pick(&conf_cost, c, 4, &d, &why);
    tap_ok(pick != 2, "cost: queued prefill pushes it away (picked %zu)",
           pick);

    /* weight: a server of weight 2 costs half (13,568 / 2 = 6,784 against
       1,600 + 6,400 x 2.5) */
    reset(c, 2);
    c[0].overlap = 80;
    c[0].inflight = 3;                          /* 13,568 / 2 = 6,784 */
    c[0].weight = 2;
    c[1].inflight = 0;                          /* 1,600 + 6,400 x 2.5 */
    pick = kvr_policy_pick(&conf_cost, c, 2, &d, &why);
    tap_is(pick, 0, "cost: weight divides the queueing cost");

    /* a new prefix: the busy server with room beats the idle full one */
    reset(c, 2);
    c[0].capacity = 500;
    c[0].prefixes = 5;                          /* 600 > 500: no room */
    c[1].capacity = 500;
    c[1].prefixes = 1;
    c[1].inflight = 1;                          /* 4,096 + 3,200 = 7,296 */
    pick = kvr_policy_pick(&conf_cost, c, 2, &d, &why);
    tap_is(pick, 1, "cost: a new prefix goes where it evicts nothing");
    tap_is(why, KVR_PICK_HOME, "cost: reason home");

    c[1].inflight = 3;                          /* 12,288 + 6,400 */
    pick = kvr_policy_pick(&conf_cost, c, 2, &d, &why);
    tap_is(pick, 0, "cost: ... unless it is far busier");

    test_ttft(&d);
    test_place(&d);

    tap_is(kvr_policy_from_name("cost", 4), KVR_POLICY_COST, "name cost");
    tap_is(kvr_policy_from_name("ttft", 4), KVR_POLICY_TTFT, "name ttft");
    tap_is(kvr_policy_from_name("dynamo", 6), KVR_POLICY_DYNAMO, "name");
    tap_is(kvr_policy_from_name("dyn", 3), -1, "bad name");

    return tap_done();
}
