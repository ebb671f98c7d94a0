/*
 * Copyright (C) kvroute developers
 *
 * Which prefixes live on a server: the first-block keys of the prompts
 * most recently routed to it (a small LRU table per server, kept in shared
 * memory).  A new prefix is placed on the server holding the fewest live
 * ones, so prefixes partition evenly instead of piling up where a hash
 * happened to put them.  Plain C, no nginx types.
 */

#ifndef _KVR_HOMES_H_INCLUDED_
#define _KVR_HOMES_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


#define KVR_HOMES_MAX  32


typedef struct {
    uint64_t   first[KVR_HOMES_MAX];   /* first-block keys, 0: unused */
    uint32_t   used[KVR_HOMES_MAX];    /* clock at the last route */
    uint32_t   routes[KVR_HOMES_MAX];  /* recent routes, halved as they age */
    uint32_t   routes_total;
    uint32_t   clock;
    uint32_t   live;                   /* kvr_homes_live_recent()'s count */
    uint64_t   live_at;                /* when it was counted; 0: never */
} kvr_homes_t;


/* a prompt starting with this block was routed to the server */
void kvr_homes_touch(kvr_homes_t *homes, uint64_t first_block);

/*
 * kv mode: the server's engine stored a prefix starting with this block
 * (its KV events say so); the table then lists the prefixes every
 * frontend's requests left there, not only this one's routes.
 */
void kvr_homes_learn(kvr_homes_t *homes, uint64_t first_block);

/* the server's recent routes of this prefix (decayed), and of all */
uint32_t kvr_homes_routes(const kvr_homes_t *homes, uint64_t first_block,
    uint32_t *total);

/*
 * How many of the server's recent prefixes are still cached there, as
 * held(data, key) says; the prefix being placed is not counted.
 */
size_t kvr_homes_live(const kvr_homes_t *homes, uint64_t except,
    int (*held)(void *data, uint64_t first_block), void *data);


/*
 * kvr_homes_live() of all the server's recent prefixes, counted again only
 * when the last count is older than max_age (now and max_age in any one
 * clock); kvr_homes_placed() adds a prefix placed there in between.
 */
size_t kvr_homes_live_recent(kvr_homes_t *homes, uint64_t now,
    uint64_t max_age, int (*held)(void *data, uint64_t first_block),
    void *data);
void kvr_homes_placed(kvr_homes_t *homes);


#endif /* _KVR_HOMES_H_INCLUDED_ */
