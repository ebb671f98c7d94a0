/*
 * Copyright (C) kvroute developers
 *
 * The data-parallel rank a request goes to on its server (kvr_ranks.h).
 */


#include "kvr_ranks.h"


/* ranks a server may have: the index has no more slots than this */
#define KVR_RANKS_MAX  64


static uint64_t
kvr_ranks_mix(uint64_t x)
{
    /* splitmix64's finalizer: first blocks are hashes, but spread anyway */

    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;

    return x;
}


size_t
kvr_ranks_pick(const uint32_t *overlap, size_t n, uint64_t first_block,
    kvr_ranks_inflight_pt inflight, void *data)
{
    size_t    i, ntied, nleast;
    uint32_t  best;
    uint64_t  load, least;
    uint8_t   tied[KVR_RANKS_MAX];

    if (n <= 1) {
        return 0;
    }

    if (n > KVR_RANKS_MAX) {
        n = KVR_RANKS_MAX;
    }

    best = 0;

    for (i = 0; i < n; i++) {
        if (overlap[i] > best) {
            best = overlap[i];
        }
    }

    ntied = 0;

    for (i = 0; i < n; i++) {
        if (overlap[i] == best) {
            tied[ntied++] = (uint8_t) i;
        }
    }

    if (ntied == 1) {
        return tied[0];
    }

    /* a cached prefix held by several ranks: the least busy of them */

    if (best > 0 && inflight != NULL) {
        least = UINT64_MAX;
        nleast = 0;

        for (i = 0; i < ntied; i++) {
            load = inflight(data, tied[i]);

            if (load < least) {
                least = load;
                nleast = 0;
            }

            if (load == least) {
                tied[nleast++] = tied[i];
            }
        }

        ntied = nleast;
    }

    return tied[kvr_ranks_mix(first_block) % ntied];
}
