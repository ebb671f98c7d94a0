/*
 * Copyright (C) kvroute developers
 */


#include "kvr_homes.h"


/* 0 marks an unused entry: a key of 0 is stored as 1 */

static uint64_t
kvr_homes_key(uint64_t first_block)
{
    return first_block ? first_block : 1;
}


/* routes counted over about the last KVR_HOMES_WINDOW of them */
#define KVR_HOMES_WINDOW  64


void
kvr_homes_touch(kvr_homes_t *homes, uint64_t first_block)
{
    size_t    i, victim;
    uint32_t  age, oldest;
    uint64_t  key;

    key = kvr_homes_key(first_block);
    homes->clock++;

    if (++homes->routes_total >= 2 * KVR_HOMES_WINDOW) {
        homes->routes_total /= 2;

        for (i = 0; i < KVR_HOMES_MAX; i++) {
            homes->routes[i] /= 2;
        }
    }

    victim = 0;
    oldest = 0;

    for (i = 0; i < KVR_HOMES_MAX; i++) {

        if (homes->first[i] == key) {
            homes->used[i] = homes->clock;
            homes->routes[i]++;
            return;
        }

        /* an unused entry first, else the least recently routed */

        age = homes->first[i] ? homes->clock - homes->used[i] : UINT32_MAX;

        if (age > oldest) {
            oldest = age;
            victim = i;
        }
    }

    homes->first[victim] = key;
    homes->used[victim] = homes->clock;
    homes->routes[victim] = 1;
}


/*
 * kv mode: the engine's events stored a prompt's first block there.  The
 * entry is refreshed or takes the place of the longest unseen one; no
 * route is counted (routes are this frontend's, events every frontend's).
 */

void
kvr_homes_learn(kvr_homes_t *homes, uint64_t first_block)
{
    size_t    i, victim;
    uint32_t  age, oldest;
    uint64_t  key;

    key = kvr_homes_key(first_block);
    homes->clock++;

    victim = 0;
    oldest = 0;

    for (i = 0; i < KVR_HOMES_MAX; i++) {

        if (homes->first[i] == key) {
            homes->used[i] = homes->clock;
            return;
        }

        age = homes->first[i] ? homes->clock - homes->used[i] : UINT32_MAX;

        if (age > oldest) {
            oldest = age;
            victim = i;
        }
    }

    homes->first[victim] = key;
    homes->used[victim] = homes->clock;
    homes->routes[victim] = 0;
}


uint32_t
kvr_homes_routes(const kvr_homes_t *homes, uint64_t first_block,
    uint32_t *total)
{
    size_t    i;
    uint64_t  key;

    key = kvr_homes_key(first_block);
    *total = homes->routes_total;

    for (i = 0; i < KVR_HOMES_MAX; i++) {
        if (homes->first[i] == key) {
            return homes->routes[i];
        }
    }

    return 0;
}


size_t
kvr_homes_live(const kvr_homes_t *homes, uint64_t except,
    int (*held)(void *data, uint64_t first_block), void *data)
{
    size_t    i, live;
    uint64_t  key;

    key = kvr_homes_key(except);
    live = 0;

    for (i = 0; i < KVR_HOMES_MAX; i++) {
        if (homes->first[i] && homes->first[i] != key
            && held(data, homes->first[i]))
        {
            live++;
        }
    }

    return live;
}


size_t
kvr_homes_live_recent(kvr_homes_t *homes, uint64_t now, uint64_t max_age,
    int (*held)(void *data, uint64_t first_block), void *data)
{
    if (homes->live_at == 0 || now - homes->live_at > max_age) {
        homes->live = kvr_homes_live(homes, 0, held, data);
        homes->live_at = now ? now : 1;
    }

    return homes->live;
}


void
kvr_homes_placed(kvr_homes_t *homes)
{
    homes->live++;
}
