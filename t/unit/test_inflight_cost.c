/*
 * kvr_inflight_cost: ttft_decode learned from ended requests.
 */

#include <math.h>
#include <string.h>

#include "tap.h"
#include "kvr_inflight_cost.h"


static uint32_t  seed = 12345;


/* a fixed sequence in [0, 1) */
static double
uniform(void)
{
    seed = seed * 1103515245 + 12345;
    return ((seed >> 8) & 0xffff) / 65536.0;
}


/*
 * n requests ended on server, each of prompt tokens computed in [0, 2400)
 * and in flight in [0, 12), taking base + per_token * computed +
 * per_request * inflight seconds, plus noise of up to +-noise seconds.
 * Returns how often the weight changed.
 */
static int
feed(kvr_inflight_cost_t *ic, size_t server, int n, double per_token,
    double per_request, double noise)
{
    int     i, changed;
    double  c, k, y;

    changed = 0;

    for (i = 0; i < n; i++) {
        c = floor(uniform() * 2400);
        k = floor(uniform() * 12);
        y = 0.05 + per_token * c + per_request * k
            + noise * (2 * uniform() - 1);

        changed += kvr_inflight_cost_ended(ic, server, c, k, y < 0 ? 0 : y, 0);
    }

    return changed;
}


/*
 * n requests on server in an engine's queue: each waits 0.5 s for every
 * request in flight ahead of it, its prompt a small part of its time
 */
static void
feed_queued(kvr_inflight_cost_t *ic, size_t server, int n, int queued)
{
    int     i;
    double  c, k;

    for (i = 0; i < n; i++) {
        c = floor(uniform() * 2400);
        k = 4 + floor(uniform() * 20);

        kvr_inflight_cost_ended(ic, server, c, k, 0.05 + 0.0001 * c + 0.5 * k,
                                queued);
    }
}


static int
near(double got, double want, double share)
{
    return fabs(got - want) <= share * want;
}


int
main(void)
{
    double               r, before;
    size_t               s;
    kvr_inflight_cost_t  ic;

    /* one server: the slopes' ratio, exactly without noise */

    kvr_inflight_cost_init(&ic);
    tap_ok(ic.weight == 0, "none learned at first: the configured one holds");

    feed(&ic, 3, KVR_INFLIGHT_MIN_ROWS - 1, 0.0001, 0.1, 0);
    tap_ok(kvr_inflight_cost_server(&ic.server[3], &r) && near(r, 1000, 1e-6),
           "a server's ratio: a request in flight as 1000 prompt tokens");

    tap_is(feed(&ic, 3, KVR_INFLIGHT_REFIT - KVR_INFLIGHT_MIN_ROWS, 0.0001,
                0.1, 0), 0,
           "no weight before REFIT requests ended");
    tap_ok(ic.weight == 0 && ic.fits == 0, "nor a fit");

    tap_is(feed(&ic, 3, 1, 0.0001, 0.1, 0), 1, "the REFIT-th: the first fit");
    tap_ok(ic.fits == 1 && near(ic.weight, 1000, 1e-6), "sets the weight");

    tap_is(feed(&ic, 3, KVR_INFLIGHT_REFIT, 0.0001, 0.12, 0), 0,
           "a fit within CHANGE of it (about 1100 against 1000) keeps it");
    tap_ok(ic.fits == 2 && ic.learned > 1050 && near(ic.weight, 1000, 1e-6),
           "though the learned value is recorded (%.0f)", ic.learned);

    /* a fit needs MIN_ROWS requests on one server */

    {
        kvr_inflight_cost_t  two;

        kvr_inflight_cost_init(&two);
        feed(&two, 0, 30, 0.0001, 0.3, 0);
        feed(&two, 1, KVR_INFLIGHT_REFIT - 30, 0.0001, 0.3, 0);
        tap_ok(two.fits == 0 && two.weight == 0,
               "REFIT requests over two servers, neither with MIN_ROWS: "
               "no fit");
    }

    /* a dearer decode: the weight follows, the old requests fade */

    tap_ok(feed(&ic, 3, 400, 0.0001, 0.3, 0) >= 1,
           "a decode three times as dear moves the weight");
    tap_ok(near(ic.learned, 3000, 0.1) && near(ic.weight, 3000, 0.25),
           "to near 3000 as the old requests fade (learned %.0f, in use "
           "%.0f)", ic.learned, ic.weight);

    /* bounds */

    kvr_inflight_cost_init(&ic);
    feed(&ic, 0, 100, 0.0001, 0.001, 0);
    tap_ok(ic.weight == KVR_INFLIGHT_LOW,
           "a nearly free decode: the low bound (got %.0f)", ic.weight);

    kvr_inflight_cost_init(&ic);
    feed(&ic, 0, 100, 0.00001, 1, 0);
    tap_ok(ic.weight == KVR_INFLIGHT_HIGH,
           "a decode dearer than 100000 tokens: the high bound (got %.0f)",
           ic.weight);

    /* noise: the median end-to-end time varies by a third */

    kvr_inflight_cost_init(&ic);
    feed(&ic, 1, 1000, 0.0001, 0.15, 0.15);
    tap_ok(near(ic.weight, 1500, 0.25),
           "with noise of +-0.15 s: near 1500 (got %.0f)", ic.weight);

    /* the median of the servers */

    kvr_inflight_cost_init(&ic);
    feed(&ic, 0, 70, 0.0001, 0.05, 0);
    feed(&ic, 1, 70, 0.0001, 0.4, 0);
    feed(&ic, 2, 70, 0.0001, 0.1, 0);
    tap_ok(near(ic.weight, 1000, 1e-6),
           "three servers at 500, 4000, 1000: the median (got %.0f)",
           ic.weight);

    /* what cannot be told apart is not fitted */

    {
        int                  i;
        kvr_inflight_cost_t  one;

        kvr_inflight_cost_init(&one);

        for (i = 0; i < 100; i++) {
            kvr_inflight_cost_ended(&one, 0, 2371, i % 8, 0.5 + 0.1 * (i % 8),
                                    0);
        }

        tap_ok(!kvr_inflight_cost_server(&one.server[0], &r),
               "every prompt the same size: no ratio");
        tap_ok(one.fits == 0 && one.weight == 0, "and no fit");

        kvr_inflight_cost_init(&one);

        for (i = 0; i < 100; i++) {
            kvr_inflight_cost_ended(&one, 0, 100 * (i % 8), i % 8,
                                    0.5 + 0.1 * (i % 8), 0);
        }

        tap_ok(!kvr_inflight_cost_server(&one.server[0], &r),
               "load that rises with the prompt: no ratio");

        kvr_inflight_cost_init(&one);

        for (i = 0; i < 100; i++) {
            kvr_inflight_cost_ended(&one, 0, 300 * (i % 7), i % 5,
                                    2 - 0.0001 * 300 * (i % 7), 0);
        }

        tap_ok(!kvr_inflight_cost_server(&one.server[0], &r),
               "a prompt token that saves time: no ratio");
        tap_ok(one.weight == 0, "and no weight");
    }

    /* input it cannot use */

    kvr_inflight_cost_init(&ic);
    tap_is(kvr_inflight_cost_ended(&ic, KVR_INFLIGHT_SERVERS, 10, 1, 1, 0), 0,
           "a server beyond the slots");
    tap_is(kvr_inflight_cost_ended(&ic, 0, NAN, 1, 1, 0), 0, "NaN tokens");
    tap_is(kvr_inflight_cost_ended(&ic, 0, 10, -1, 1, 0), 0,
           "negative load");
    tap_is(kvr_inflight_cost_ended(&ic, 0, 10, 1, INFINITY, 0), 0,
           "an infinite time");
    tap_is(kvr_inflight_cost_ended(&ic, 0, 10, 1,
                                   KVR_INFLIGHT_MAX_SECONDS + 1, 0), 0,
           "more than an hour");
    tap_ok(ic.ended == 0 && ic.server[0].rows == 0 && ic.queued == 0,
           "none of them counted");

    /*
     * overload: requests that found no KV room wait in the engine's queue,
     * a time that grows with every request ahead whatever a decode costs.
     * Learned from, they would raise the weight; left out, the weight
     * learned before holds
     */

    kvr_inflight_cost_init(&ic);

    for (s = 0; s < 3; s++) {
        feed(&ic, s, 100, 0.0001, 0.08, 0.002);
    }

    before = ic.weight;
    tap_ok(near(before, 800, 0.25), "before overload: about 800 (got %.0f)",
           before);

    for (s = 0; s < 3; s++) {
        feed_queued(&ic, s, 200, 1);
    }

    tap_ok(ic.weight == before && ic.queued == 600,
           "600 queued requests: counted, the weight unmoved (%.0f)",
           ic.weight);

    for (s = 0; s < 3; s++) {
        feed_queued(&ic, s, 200, 0);
    }

    tap_ok(ic.weight > 3 * before,
           "the same requests learned from would raise it (got %.0f)",
           ic.weight);

    /* the sums forget: the weight of a request is bounded */

    kvr_inflight_cost_init(&ic);
    feed(&ic, 5, 5000, 0.0001, 0.1, 0);
    tap_is(ic.server[5].rows, KVR_INFLIGHT_WINDOW, "rows stop at WINDOW");
    tap_ok(near(ic.server[5].sxx[0], KVR_INFLIGHT_WINDOW, 0.01),
           "and the weights sum to about WINDOW (got %.1f)",
           ic.server[5].sxx[0]);

    return tap_done();
}
