/*
 * Copyright (C) kvroute developers
 *
 * One engine's block handles: engine hash -> kvroute's own key for the
 * same block, reference counted (an engine may store one hash twice).
 * BlockRemoved events carry only engine hashes and BlockStored names its
 * parent by one; this map resolves both.  Process-local memory (the events
 * helper's), an open-addressing table that grows up to a bound.  Plain C.
 */

#ifndef _KVR_EMAP_H_INCLUDED_
#define _KVR_EMAP_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


typedef struct kvr_emap_s  kvr_emap_t;


/* max_entries bounds the memory (about 32 bytes an entry at most) */
kvr_emap_t *kvr_emap_create(size_t max_entries);
void kvr_emap_destroy(kvr_emap_t *map);

/*
 * Adds a reference to engine -> key (the key is replaced if it differs).
 * Returns the new count, 0 when the map is full.
 */
uint32_t kvr_emap_add(kvr_emap_t *map, uint64_t engine, uint64_t key);

/*
 * Holds engine -> key once, whatever the number of calls: returns 1 when
 * it was added, 2 when engine was held already (its key and count are
 * kept), 0 when the map is full.
 */
uint32_t kvr_emap_put(kvr_emap_t *map, uint64_t engine, uint64_t key);

/*
 * Drops one reference; *key gets the block's key.  Returns the count
 * left, or -1 when engine is unknown.
 */
int64_t kvr_emap_remove(kvr_emap_t *map, uint64_t engine, uint64_t *key);

/* starts loading the cell a lookup of engine reads first; changes nothing */
void kvr_emap_prefetch(kvr_emap_t *map, uint64_t engine);

/* the key of engine, 0 when unknown (*found says which) */
uint64_t kvr_emap_get(kvr_emap_t *map, uint64_t engine, int *found);

/* calls fn(data, engine, key) for each handle held */
void kvr_emap_each(kvr_emap_t *map, void (*fn)(void *data, uint64_t engine,
    uint64_t key), void *data);

void kvr_emap_clear(kvr_emap_t *map);
size_t kvr_emap_count(kvr_emap_t *map);


#endif /* _KVR_EMAP_H_INCLUDED_ */
