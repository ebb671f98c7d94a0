/*
 * Copyright (C) kvroute developers
 *
 * ttft_decode=auto: what one request in flight on a server costs the
 * others, in prompt tokens of its prefill, learned from the requests that
 * ended there (kvr_inflight_cost.c).  Plain C.
 */

#ifndef _KVR_INFLIGHT_COST_H_INCLUDED_
#define _KVR_INFLIGHT_COST_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


#define KVR_INFLIGHT_SERVERS   64      /* index slots (KVR_INDEX_MAX_SLOTS) */

/* requests a server's fit remembers: older ones fade by 1/WINDOW each */
#define KVR_INFLIGHT_WINDOW    200

/* a server's fit needs this many ended requests before it is believed */
#define KVR_INFLIGHT_MIN_ROWS  40

/* ended requests between two fits */
#define KVR_INFLIGHT_REFIT     50

/* the learned weight's bounds, in prompt tokens */
#define KVR_INFLIGHT_LOW       300     /* decoding is free: metrics=on's */
#define KVR_INFLIGHT_HIGH      6000    /* about two whole prompts */

/* a fit that moves the weight by less than this share of it is noise */
#define KVR_INFLIGHT_CHANGE    0.25

/* an end-to-end time beyond this (seconds) says nothing of the load */
#define KVR_INFLIGHT_MAX_SECONDS  3600


/*
 * One server's ended requests as least-squares sums of x = (1, prompt
 * tokens computed, requests in flight there when sent) and y = seconds
 * from send to end, each older request's weight times (1 - 1/WINDOW)
 */
typedef struct {
    double              sxx[6];     /* x0x0 x0x1 x0x2 x1x1 x1x2 x2x2 */
    double              sxy[3];
    uint32_t            rows;       /* added, up to WINDOW */
} kvr_inflight_fit_t;


typedef struct {
    double              weight;     /* in use, in prompt tokens; 0: none
                                       learned (the configured one holds) */
    double              learned;    /* the last fit's; 0: none yet */
    uint32_t            since;      /* ended since the last fit */
    uint64_t            ended;      /* requests added, ever */
    uint64_t            fits;       /* fits that gave a weight */
    uint64_t            changes;    /* fits that moved it */
    uint64_t            queued;     /* ended after waiting for KV room:
                                       not learned from */
    kvr_inflight_fit_t  server[KVR_INFLIGHT_SERVERS];
} kvr_inflight_cost_t;


/* forgets every request and fit (as zeroed memory is) */
void kvr_inflight_cost_init(kvr_inflight_cost_t *ic);

/*
 * A request that ended on server (an index slot): the prompt tokens it had
 * to compute, the requests in flight there when it was sent (its own not
 * counted), and the seconds from send to end.  Every REFIT requests the
 * weight is fitted again; the first fit sets it, later ones move it by
 * more than CHANGE or not at all.  Returns 1 when the weight in use
 * changed, 0 otherwise (also for input it cannot use: out of range, not
 * finite).
 *
 * queued: the server had no KV room for the request when it was sent
 * (kvr_policy_waits()).  Its time is then mostly the engine's queue,
 * which grows with every request in flight there whatever a decode
 * costs; the policy weighs that wait apart (ttft_wait).  Learning from it
 * would make the weight grow with overload, spread the prefixes and lose
 * the hits that overload needs most (BENCHMARKS §2.47).  It is counted,
 * not learned from.
 */
int kvr_inflight_cost_ended(kvr_inflight_cost_t *ic, size_t server,
    double computed, double inflight, double seconds, int queued);

/*
 * What one server's requests say a request in flight costs, in its prompt
 * tokens, unbounded (a negative cost is noise the bounds take care of).
 * Returns 0 when they cannot say: too few, prompts or loads that did not
 * vary apart, or a prompt token that costs nothing.
 */
int kvr_inflight_cost_server(const kvr_inflight_fit_t *fit, double *ratio);


#endif /* _KVR_INFLIGHT_COST_H_INCLUDED_ */
