/*
 * Copyright (C) kvroute developers
 *
 * The data-parallel rank of a server a request goes to.  A server with
 * several ranks (vLLM's and SGLang's data parallelism: one API server in
 * front of R engines, each with its own KV cache) has an index slot per
 * rank; the balancer scores the server by its best rank and sends the
 * request to that rank (the X-data-parallel-rank header).  Plain C, no
 * nginx types.
 */

#ifndef _KVR_RANKS_H_INCLUDED_
#define _KVR_RANKS_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


/* a rank's requests in flight, asked only to break ties */
typedef uint64_t (*kvr_ranks_inflight_pt)(void *data, size_t rank);


/*
 * The rank among n (overlap[i]: leading blocks of the prompt rank i
 * holds) with the longest match.  Ties: when some blocks match, the rank
 * with the fewest requests in flight (inflight may be NULL: not known);
 * then, and always when nothing matches, the prefix's home rank, a hash
 * of its first block over the tied ranks, so that the requests of a new
 * prefix follow one another to one rank before its events arrive.
 */
size_t kvr_ranks_pick(const uint32_t *overlap, size_t n,
    uint64_t first_block, kvr_ranks_inflight_pt inflight, void *data);


#endif /* _KVR_RANKS_H_INCLUDED_ */
