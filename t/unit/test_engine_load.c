/*
 * kvr_engine_load: a candidate's load with its engine's metrics.
 */

#include <string.h>

#include "tap.h"
#include "kvr_engine_load.h"


static kvr_candidate_t
own(uint32_t inflight, uint64_t tokens, uint64_t prefill, uint64_t pinned,
    uint64_t capacity)
{
    kvr_candidate_t  c;

    memset(&c, 0, sizeof(c));
    c.inflight = inflight;
    c.inflight_tokens = tokens;
    c.inflight_prefill = prefill;
    c.pinned = pinned;
    c.capacity = capacity;
    c.weight = 1;

    return c;
}


/* one scrape's load figures, no latency yet */
static kvr_engine_load_t
scraped(uint32_t running, uint32_t waiting, uint32_t usage,
    uint32_t own_requests, uint64_t own_pinned)
{
    kvr_engine_load_t  el;

    memset(&el, 0, sizeof(el));
    el.running = running;
    el.waiting = waiting;
    el.usage = usage;
    el.own_requests = own_requests;
    el.own_pinned = own_pinned;

    return el;
}


/* pinned_own after the scrape, for a cached prefix of 100 blocks */
static uint32_t
pinned_own(uint32_t own_pinned, uint32_t share, uint32_t running,
    uint32_t usage)
{
    kvr_candidate_t    c;
    kvr_engine_load_t  el;

    c = own(1, 100, 0, 400, 1000);
    c.overlap = 100;
    c.pinned_own = own_pinned;
    c.route_share = share;
    el = scraped(running, 0, usage, 1, 400);
    kvr_engine_load_apply(&c, &el, 100);

    return c.pinned_own;
}


int
main(void)
{
    kvr_candidate_t    c;
    kvr_engine_load_t  el;

    /* another frontend's 6 requests on an engine where this one has 2 */
    c = own(2, 2000, 500, 0, 0);
    el = scraped(6, 2, KVR_ENGINE_NO_USAGE, 2, 0);
    kvr_engine_load_apply(&c, &el, 300);
    tap_is(c.inflight, 8, "others' requests added: 8 - 2 own at the scrape");
    tap_is(c.inflight_tokens, 2000 + 6 * 1000,
           "each as large as the own ones on average");
    tap_is(c.inflight_prefill, 500 + (2 * 6 / 8) * 1000,
           "the others' share of the queue is not prefilled yet");

    /* a burst since the scrape: own counts now are in full */
    c = own(10, 10000, 0, 0, 0);
    el = scraped(3, 0, KVR_ENGINE_NO_USAGE, 3, 0);
    kvr_engine_load_apply(&c, &el, 300);
    tap_is(c.inflight, 10, "only own requests at the scrape: 7 sent since");

    /* own requests that ended since: not counted twice */
    c = own(1, 100, 0, 0, 0);
    el = scraped(5, 0, KVR_ENGINE_NO_USAGE, 5, 0);
    kvr_engine_load_apply(&c, &el, 300);
    tap_is(c.inflight, 1, "own requests that ended since the scrape");

    /* no own requests there: the others as large as this one */
    c = own(0, 0, 0, 0, 0);
    el = scraped(50, 10, KVR_ENGINE_NO_USAGE, 0, 0);
    kvr_engine_load_apply(&c, &el, 400);
    tap_is(c.inflight, 60, "a busy engine seen by an idle frontend");
    tap_is(c.inflight_tokens, 60 * 400, "sized as this request");
    tap_is(c.inflight_prefill, 10 * 400, "its queue is prefill ahead");

    /* the engine counts fewer than this frontend has in flight */
    c = own(4, 400, 40, 0, 0);
    el = scraped(1, 0, KVR_ENGINE_NO_USAGE, 4, 0);
    kvr_engine_load_apply(&c, &el, 100);
    tap_is(c.inflight, 4, "never below own counts");
    tap_is(c.inflight_tokens, 400, "own tokens unchanged");

    /* pinned blocks: the engine's usage and what was pinned since */
    c = own(0, 0, 0, 100, 1000);
    el = scraped(0, 0, 600, 0, 40);
    kvr_engine_load_apply(&c, &el, 100);
    tap_is(c.pinned, 600 + 60, "usage * capacity + pinned since the scrape");

    /* own requests that ended since the scrape: their blocks are free */
    c = own(0, 0, 0, 100, 1000);
    el = scraped(0, 0, 600, 0, 500);
    kvr_engine_load_apply(&c, &el, 100);
    tap_is(c.pinned, 100 + (600 - 500),
           "own pins now and the others' then, not the engine's stale usage");

    c = own(0, 0, 0, 900, 1000);
    el = scraped(0, 0, 100, 0, 900);
    kvr_engine_load_apply(&c, &el, 100);
    tap_is(c.pinned, 900, "own pins when they are more");

    c = own(0, 0, 0, 100, 0);
    el = scraped(0, 0, 900, 0, 0);
    kvr_engine_load_apply(&c, &el, 100);
    tap_is(c.pinned, 100, "unknown capacity: usage means nothing");

    c = own(0, 0, 0, 100, 1000);
    el = scraped(0, 0, KVR_ENGINE_NO_USAGE, 0, 0);
    kvr_engine_load_apply(&c, &el, 100);
    tap_is(c.pinned, 100, "no usage reported: own pins");

    /*
     * this prompt's cached prefix (overlap 100) on an engine with others'
     * requests: pinned by them as likely as one of them is of the prefix,
     * judged by this frontend's own routes there (route_share); this
     * frontend has 1 request there, the engine runs `running`
     */
    tap_is(pinned_own(0, 512, 3, 500), 75,
           "2 others, each of it by half: 1 - 1/4");
    tap_is(pinned_own(0, 1024, 2, 500), 100,
           "all own routes there of it: pinned");
    tap_is(pinned_own(40, 0, 4, 500), 40,
           "no own routes of it there: own pins only");
    tap_is(pinned_own(40, 512, 2, 500), 40 + 30,
           "one other: half of the blocks own requests leave unpinned");
    tap_is(pinned_own(0, 1024, 1, 500), 0, "no others there: own pins only");
    tap_is(pinned_own(0, 1024, 5, KVR_ENGINE_NO_USAGE), 0,
           "no usage: the others' pins are not counted, nor their share "
           "of this prefix");

    /* saturation */
    c = own(UINT32_MAX - 1, 0, 0, 0, 0);
    el = scraped(1000000, 0, KVR_ENGINE_NO_USAGE, 0, 0);
    kvr_engine_load_apply(&c, &el, 1);
    tap_is(c.inflight, UINT32_MAX, "inflight saturates");

    /* inter-token latency: the first scrape only sets the base */
    el = scraped(0, 0, KVR_ENGINE_NO_USAGE, 0, 0);
    kvr_engine_load_itl(&el, 1.0, 100);
    tap_is(el.itl_us, 0, "one scrape: no mean yet");
    kvr_engine_load_itl(&el, 1.0 + 0.02 * 50, 150);
    tap_is(el.itl_us, 20000, "50 tokens of 20 ms since: 20 ms");
    kvr_engine_load_itl(&el, 2.0 + 0.04 * 3, 153);
    tap_is(el.itl_us, 20000, "3 tokens are too few: kept");
    kvr_engine_load_itl(&el, 2.0 + 0.04 * 10, 160);
    tap_is(el.itl_us, 30000, "10 tokens of 40 ms since the last mean: "
           "half old, half new");
    kvr_engine_load_itl(&el, 0.5, 20);
    tap_is(el.itl_us, 30000, "a restart keeps the mean");
    tap_is(el.itl_count, 20, "and counts from the new base");
    kvr_engine_load_itl(&el, 0.5 + 0.01 * 20, 40);
    tap_is(el.itl_us, 20000, "then goes on from it");
    kvr_engine_load_itl(&el, -1, 80);
    kvr_engine_load_itl(&el, 1.0 / 0.0, 80);
    tap_is(el.itl_count, 40, "a negative or infinite sum is not taken");

    /* speeds: the fastest known is 1, unknown ones as fast */
    {
        kvr_candidate_t  cs[3];
        uint32_t         itl[3] = { 10000, 40000, 0 };

        memset(cs, 0, sizeof(cs));
        kvr_engine_load_speeds(cs, itl, 3);
        tap_ok(cs[0].speed == 1.0, "the fastest at speed 1");
        tap_ok(cs[1].speed == 0.25, "4 times its inter-token latency: 0.25");
        tap_ok(cs[2].speed == 1.0, "not known: as fast");

        itl[0] = 0;
        itl[1] = 1;
        itl[2] = 1000000;
        kvr_engine_load_speeds(cs, itl, 3);
        tap_ok(cs[2].speed == KVR_ENGINE_SPEED_MIN, "a stalled one floors");
    }

    return tap_done();
}
