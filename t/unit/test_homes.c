/*
 * kvr_homes: the per-server table of recently routed first blocks.
 */

#include <stdint.h>
#include <string.h>

#include "tap.h"
#include "kvr_homes.h"


/* "cached" keys for the held() callback: a bitmap of small keys */
static int
held_small(void *data, uint64_t key)
{
    const uint8_t  *cached = data;

    return key < 256 && cached[key];
}


int
main(void)
{
    size_t       i;
    uint8_t      cached[256];
    uint32_t     total, routes;
    kvr_homes_t  h;

    memset(&h, 0, sizeof(h));
    memset(cached, 0, sizeof(cached));

    tap_is(kvr_homes_live(&h, 99, held_small, cached), 0, "empty table");

    kvr_homes_touch(&h, 10);
    kvr_homes_touch(&h, 11);
    kvr_homes_touch(&h, 10);
    cached[10] = 1;
    cached[11] = 1;
    tap_is(kvr_homes_live(&h, 99, held_small, cached), 2,
           "a key routed twice counts once");
    tap_is(kvr_homes_live(&h, 10, held_small, cached), 1,
           "the prefix being placed is not counted");

    cached[11] = 0;
    tap_is(kvr_homes_live(&h, 99, held_small, cached), 1,
           "a prefix no longer cached is not counted");

    /* full: the least recently routed key makes room */
    memset(&h, 0, sizeof(h));
    for (i = 0; i < KVR_HOMES_MAX; i++) {
        kvr_homes_touch(&h, 100 + i);
        cached[100 + i] = 1;
    }
    kvr_homes_touch(&h, 100);               /* 100 is recent again */
    kvr_homes_touch(&h, 200);               /* evicts 101 */
    cached[200] = 1;
    tap_is(kvr_homes_live(&h, 0, held_small, cached), KVR_HOMES_MAX,
           "the table holds at most KVR_HOMES_MAX keys");
    cached[101] = 0;
    tap_is(kvr_homes_live(&h, 0, held_small, cached), KVR_HOMES_MAX,
           "the least recently routed key (101) was the one replaced");
    cached[100] = 0;
    tap_is(kvr_homes_live(&h, 0, held_small, cached), KVR_HOMES_MAX - 1,
           "the key touched again (100) stayed");

    /* recent routes, per prefix and in all */
    memset(&h, 0, sizeof(h));
    tap_is(kvr_homes_routes(&h, 5, &total), 0, "no routes");
    tap_is(total, 0, "no routes in all");
    for (i = 0; i < 30; i++) {
        kvr_homes_touch(&h, 5);
    }
    for (i = 0; i < 10; i++) {
        kvr_homes_touch(&h, 6);
    }
    tap_is(kvr_homes_routes(&h, 5, &total), 30, "30 routes of prefix 5");
    tap_is(total, 40, "of 40");
    tap_is(kvr_homes_routes(&h, 7, &total), 0, "none of a prefix not here");

    /* old routes fade: 200 routes of 6 later, 5 keeps few of them */
    for (i = 0; i < 200; i++) {
        kvr_homes_touch(&h, 6);
    }
    routes = kvr_homes_routes(&h, 5, &total);
    tap_ok(routes * 16 <= total, "an old prefix's routes fade (%u of %u)",
           (unsigned) routes, (unsigned) total);
    tap_ok(total < 128, "the total stays within the window (%u)",
           (unsigned) total);

    /* a first block of 0 is a key like any other */
    memset(&h, 0, sizeof(h));
    kvr_homes_touch(&h, 0);
    kvr_homes_touch(&h, 0);
    cached[1] = 1;
    tap_is(kvr_homes_live(&h, 7, held_small, cached), 1,
           "key 0 is kept (as 1) and counted once");

    /* a count is reused until it is older than max_age, placements add */
    memset(&h, 0, sizeof(h));
    memset(cached, 0, sizeof(cached));
    kvr_homes_touch(&h, 2);
    cached[2] = 1;
    tap_is(kvr_homes_live_recent(&h, 1000, 100, held_small, cached), 1,
           "first count");
    kvr_homes_touch(&h, 3);
    cached[3] = 1;
    tap_is(kvr_homes_live_recent(&h, 1100, 100, held_small, cached), 1,
           "reused within max_age");
    kvr_homes_placed(&h);
    tap_is(kvr_homes_live_recent(&h, 1050, 100, held_small, cached), 2,
           "a placement counts before the recount");
    cached[2] = 0;
    tap_is(kvr_homes_live_recent(&h, 1101, 100, held_small, cached), 1,
           "counted again after max_age");
    memset(&h, 0, sizeof(h));
    kvr_homes_touch(&h, 3);
    tap_is(kvr_homes_live_recent(&h, 0, 100, held_small, cached), 1,
           "a count at time 0 is kept as counted");
    cached[3] = 0;
    tap_is(kvr_homes_live_recent(&h, 50, 100, held_small, cached), 1,
           "... and reused");

    return tap_done();
}
