/*
 * Copyright (C) kvroute developers
 *
 * The flat form of kvr_policy_pick(): kvr_policy_flat.c.
 */

#ifndef _KVR_POLICY_FLAT_H_INCLUDED_
#define _KVR_POLICY_FLAT_H_INCLUDED_


#include <stdint.h>


#define KVR_FLAT_HEAD      22
#define KVR_FLAT_CAND      15
#define KVR_FLAT_MAX       64
#define KVR_FLAT_SIZE(n)   (KVR_FLAT_HEAD + (n) * KVR_FLAT_CAND)


/* the static input buffer (what a caller without memory of its own fills) */
double *kvr_flat_buffer(void);

/* in: NULL for the buffer; returns pick * 8 + why, or -1 */
int kvr_flat_pick(const double *in, uint32_t n);

/*
 * whether the last pick's server had no KV room for the request
 * (kvr_policy_waits()): 1 or 0, -1 before any pick
 */
int kvr_flat_queued(void);


#endif /* _KVR_POLICY_FLAT_H_INCLUDED_ */
