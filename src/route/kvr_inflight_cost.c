/*
 * Copyright (C) kvroute developers
 *
 * policy=ttft weighs a request in flight on a server as ttft_decode
 * prompt tokens of prefill: every step of that server decodes it, so it
 * slows the prefills and decodes of the requests sent after it.  What it
 * costs depends on the model, the GPU and the context lengths: a decode
 * that adds 1% to a step wants about 300, one that adds a fifth of a step
 * 1200 or more (BENCHMARKS §2.45).  With ttft_decode=auto the frontend
 * learns it from its own requests as they end.
 *
 * A closed-loop client's rate is its concurrency over the mean end-to-end
 * time, so what a request in flight costs is what it adds to the others'
 * end-to-end time.  Per server, a least-squares fit of each request's
 * time from send to end on the prompt tokens it had to compute and the
 * requests in flight there when it was sent gives what a prompt token
 * and a request in flight each add; their ratio is the weight in the
 * server's own prompt tokens, which is how the policy counts it (its
 * speed divides both).  The engines' step counts cannot give it: their
 * inter-token latency against running requests, scraped, comes out at a
 * fraction of the truth (§2.45).
 *
 * The median over the servers, within [LOW, HIGH], is fitted again every
 * REFIT ended requests; a move of less than CHANGE is taken as noise.
 * The sums forget: a request's weight falls by 1/WINDOW with each one
 * after it, so a model or a context length that changes is learned anew.
 * A request that found no KV room waited in the engine's queue, not
 * behind decodes, and is left out (kvr_inflight_cost.h).
 */


#include <math.h>
#include <string.h>

#include "kvr_inflight_cost.h"


static int kvr_inflight_cost_fit(const kvr_inflight_cost_t *ic,
    double *learned);


void
kvr_inflight_cost_init(kvr_inflight_cost_t *ic)
{
    memset(ic, 0, sizeof(kvr_inflight_cost_t));
}


int
kvr_inflight_cost_ended(kvr_inflight_cost_t *ic, size_t server,
    double computed, double inflight, double seconds, int queued)
{
    double               keep, x[3], w;
    size_t               i, j, k;
    kvr_inflight_fit_t  *fit;

    /* also false for NaN */

    if (server >= KVR_INFLIGHT_SERVERS
        || !(computed >= 0 && computed <= 1e9)
        || !(inflight >= 0 && inflight <= 1e9)
        || !(seconds >= 0 && seconds <= KVR_INFLIGHT_MAX_SECONDS))
    {
        return 0;
    }

    if (queued) {
        ic->queued++;
        return 0;
    }

    fit = &ic->server[server];
    keep = 1 - 1.0 / KVR_INFLIGHT_WINDOW;

    x[0] = 1;
    x[1] = computed;
    x[2] = inflight;

    k = 0;

    for (i = 0; i < 3; i++) {
        for (j = i; j < 3; j++) {
            fit->sxx[k] = fit->sxx[k] * keep + x[i] * x[j];
            k++;
        }

        fit->sxy[i] = fit->sxy[i] * keep + x[i] * seconds;
    }

    if (fit->rows < KVR_INFLIGHT_WINDOW) {
        fit->rows++;
    }

    ic->ended++;

    if (++ic->since < KVR_INFLIGHT_REFIT) {
        return 0;
    }

    ic->since = 0;

    if (!kvr_inflight_cost_fit(ic, &w)) {
        return 0;
    }

    ic->learned = w;
    ic->fits++;

    if (ic->weight > 0
        && fabs(w - ic->weight) <= KVR_INFLIGHT_CHANGE * ic->weight)
    {
        return 0;
    }

    ic->weight = w;
    ic->changes++;

    return 1;
}


/* the median of the servers that can say, within the bounds; 0: none */

static int
kvr_inflight_cost_fit(const kvr_inflight_cost_t *ic, double *learned)
{
    double  ratios[KVR_INFLIGHT_SERVERS], r;
    size_t  i, j, n;

    n = 0;

    for (i = 0; i < KVR_INFLIGHT_SERVERS; i++) {
        if (ic->server[i].rows < KVR_INFLIGHT_MIN_ROWS
            || !kvr_inflight_cost_server(&ic->server[i], &r))
        {
            continue;
        }

        /* insertion: at most 64 */

        for (j = n; j > 0 && ratios[j - 1] > r; j--) {
            ratios[j] = ratios[j - 1];
        }

        ratios[j] = r;
        n++;
    }

    if (n == 0) {
        return 0;
    }

    r = ratios[n / 2];

    *learned = r < KVR_INFLIGHT_LOW ? KVR_INFLIGHT_LOW
               : r > KVR_INFLIGHT_HIGH ? KVR_INFLIGHT_HIGH : r;

    return 1;
}


/*
 * The two slopes of y on (computed, inflight) with an intercept, from the
 * centred moments: the means of large token counts cancel there before
 * they are squared, not after
 */

int
kvr_inflight_cost_server(const kvr_inflight_fit_t *fit, double *ratio)
{
    double  n, m1, m2, my, c11, c12, c22, c1y, c2y, det, b1, b2;

    n = fit->sxx[0];

    if (fit->rows < 3 || !(n > 0)) {
        return 0;
    }

    m1 = fit->sxx[1] / n;
    m2 = fit->sxx[2] / n;
    my = fit->sxy[0] / n;

    c11 = fit->sxx[3] / n - m1 * m1;
    c12 = fit->sxx[4] / n - m1 * m2;
    c22 = fit->sxx[5] / n - m2 * m2;
    c1y = fit->sxy[1] / n - m1 * my;
    c2y = fit->sxy[2] / n - m2 * my;

    /* each must vary, and apart from the other, to be told apart */

    if (!(c11 > 1e-9 * (fit->sxx[3] / n)) || !(c22 > 1e-9 * (fit->sxx[5] / n)))
    {
        return 0;
    }

    det = c11 * c22 - c12 * c12;

    if (!(det > 1e-6 * c11 * c22)) {
        return 0;
    }

    b1 = (c1y * c22 - c2y * c12) / det;
    b2 = (c2y * c11 - c1y * c12) / det;

    if (!(b1 > 0) || !isfinite(b2)) {
        return 0;
    }

    *ratio = b2 / b1;

    return isfinite(*ratio);
}
