/*
 * Copyright (C) kvroute developers
 *
 * Blocks pinned per server: the distinct blocks the requests in flight on
 * a server hold in its KV cache while they run (NVIDIA Dynamo's "active
 * blocks"), plus the output blocks they will write.  An engine admits a
 * request only when its cache has room for it, so this count, against the
 * server's capacity, tells whether a request would wait.
 *
 * A bounded open-addressed table keyed by (block hash, server slot) with
 * a reference count; it lives in shared memory and is guarded by its
 * owner's lock.  Plain C, no nginx types.
 *
 * Block hashes are chained (block i's depends on blocks 0..i), so two
 * prompts share exactly a leading run of blocks.  The table therefore keeps
 * one entry for each run of KVR_PINS_STRIDE blocks, keyed by the run's
 * first block and standing for the blocks of the run: 8 times fewer
 * entries to add and drop a request, at the price of counting blocks where
 * two prompts part in runs of 8 (a shared run counts whole).
 *
 * When the table is three quarters full, a run not in it is counted
 * without deduplication (each request's own copy) until it is freed, so the
 * table never grows.  Only a request's first KVR_PINS_MAX_BLOCKS blocks are
 * looked up; the rest are counted without deduplication as well (a
 * prompt's shared part is its beginning).
 */

#ifndef _KVR_PINS_H_INCLUDED_
#define _KVR_PINS_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


#define KVR_PINS_MAX_SLOTS    64
#define KVR_PINS_MAX_BLOCKS   1024
#define KVR_PINS_STRIDE       8


typedef struct {
    uint64_t          hash;         /* of the run's first block */
    uint16_t          slot;
    uint16_t          blocks;       /* the run's, up to KVR_PINS_STRIDE */
    uint32_t          refs;         /* 0: a free entry */
} kvr_pin_t;


typedef struct {
    uint32_t          mask;         /* entries - 1, a power of two */
    uint32_t          used;         /* entries with refs */
    uint32_t          limit;        /* used stops here: 3/4 of entries */
    uint32_t          pad;
    uint64_t          generation;   /* bumped by kvr_pins_clear() */
    uint64_t          undeduped;    /* blocks counted without dedup, ever */

    /* per slot: blocks of its entries, and blocks counted without one */
    uint64_t          distinct[KVR_PINS_MAX_SLOTS];
    uint64_t          unshared[KVR_PINS_MAX_SLOTS];

    kvr_pin_t         entries[];
} kvr_pins_t;


/* what one request charged, to take back exactly that */
typedef struct {
    int               slot;         /* -1: nothing charged */
    uint32_t          blocks;       /* of its hashes, looked up */
    uint64_t          unshared;     /* counted without an entry */
    uint64_t          generation;   /* of the table when charged */
} kvr_pins_charge_t;


/* bytes for a table of at least 2 entries fitting in size; 0 if none */
size_t kvr_pins_size(size_t size);

/* region: 8-byte aligned, size bytes; NULL when too small */
kvr_pins_t *kvr_pins_init(void *region, size_t size);

/* forgets every pin (a holder of the lock died, or a process exited) */
void kvr_pins_clear(kvr_pins_t *pins);

/*
 * A request on slot pins its n block hashes (chained: block i's hash
 * depends on blocks 0..i) and out more blocks counted as its own (its
 * output); fills *charge for kvr_pins_release().
 */
void kvr_pins_charge(kvr_pins_t *pins, int slot, const uint64_t *hashes,
    uint32_t n, uint64_t out, kvr_pins_charge_t *charge);

/* takes back a charge; a no-op when the table was cleared since */
void kvr_pins_release(kvr_pins_t *pins, const uint64_t *hashes,
    kvr_pins_charge_t *charge);

/* blocks pinned on slot: distinct blocks plus those counted apart */
uint64_t kvr_pins_count(const kvr_pins_t *pins, int slot);

/*
 * How many of the n chained hashes are pinned on slot: a leading run,
 * since a request pins all blocks before any one it pins, found by
 * binary search over the runs of KVR_PINS_STRIDE.
 */
uint32_t kvr_pins_leading(const kvr_pins_t *pins, int slot,
    const uint64_t *hashes, uint32_t n);


#endif /* _KVR_PINS_H_INCLUDED_ */
