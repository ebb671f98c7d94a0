/*
 * Copyright (C) kvroute developers
 *
 * kvr_index_verify(): every structure of an index region checked, for
 * tests (not in kvr_index.h; declare it where needed).
 */

#include <stdint.h>
#include <string.h>

#include "kvr_index.h"
#include "kvr_index_int.h"


int kvr_index_verify(kvr_index_t *ix);

static int kvr_index_verify_slots(kvr_index_t *ix);
static int kvr_index_verify_chains(kvr_index_t *ix);
static int kvr_index_verify_lists(kvr_index_t *ix);


/*
 * Checks every structure; returns 0, or a negative number naming the
 * first inconsistency found.  O(region); for tests.
 */

int
kvr_index_verify(kvr_index_t *ix)
{
    int  rc;

    if (ix->magic != KVR_INDEX_MAGIC || ix->version != KVR_INDEX_VERSION) {
        return -1;
    }

    if (ix->fresh < 1 || ix->fresh - 1 > ix->capacity
        || ix->used > ix->fresh - 1)
    {
        return -2;
    }

    rc = kvr_index_verify_slots(ix);
    if (rc != 0) {
        return rc;
    }

    rc = kvr_index_verify_chains(ix);
    if (rc != 0) {
        return rc;
    }

    return kvr_index_verify_lists(ix);
}


/* each slot's lru list: linked both ways, its entries found by lookups */

static int
kvr_index_verify_slots(kvr_index_t *ix)
{
    int                 i;
    uint32_t            e, prev;
    uint64_t            n, total;
    kvr_index_slot_t   *s;
    kvr_index_entry_t  *entries;

    entries = kvr_index_entries(ix);
    total = 0;

    for (i = 0; i < KVR_INDEX_MAX_SLOTS; i++) {
        s = &ix->slots[i];

        if (!s->in_use) {
            if (s->blocks || s->lru_head || s->lru_tail) {
                return -3;
            }

            continue;
        }

        if ((uint32_t) i >= ix->slots_end) {
            return -3;
        }

        n = 0;
        prev = 0;

        for (e = s->lru_head; e != 0; e = entries[e].next) {
            if (e >= ix->fresh || ++n > ix->used) {
                return -4;
            }

            if (entries[e].prev != prev || entries[e].slot != i
                || entries[e].flags != 0 || entries[e].gen != s->gen)
            {
                return -5;
            }

            if (kvr_index_find(ix, i, entries[e].hash) != e) {
                return -6;
            }

            prev = e;
        }

        if (prev != s->lru_tail || n != s->blocks) {
            return -7;
        }

        total += n;
    }

    if (ix->garbage > ix->used || total != ix->used - ix->garbage) {
        return -8;
    }

    return 0;
}


/* the bucket chains: every used entry in the bucket of its key, once */

static int
kvr_index_verify_chains(kvr_index_t *ix)
{
    uint32_t            e, b, nchained, *buckets;
    kvr_index_entry_t  *entries;

    entries = kvr_index_entries(ix);
    buckets = kvr_index_buckets(ix);
    nchained = 0;

    for (b = 0; b < ix->nbuckets; b++) {
        for (e = buckets[b]; e != 0; e = entries[e].chain) {
            if (e >= ix->fresh || ++nchained > ix->used) {
                return -9;
            }

            if (entries[e].slot >= KVR_INDEX_MAX_SLOTS
                || kvr_index_bucket(ix, entries[e].hash, entries[e].slot)
                   != b)
            {
                return -10;
            }
        }
    }

    if (nchained != ix->used) {
        return -11;
    }

    return 0;
}


/* the free list, and the garbage list hidden by an older generation */

static int
kvr_index_verify_lists(kvr_index_t *ix)
{
    uint32_t            e, prev, nfree;
    uint64_t            n;
    kvr_index_entry_t  *entries;

    entries = kvr_index_entries(ix);
    nfree = 0;

    for (e = ix->free_head; e != 0; e = entries[e].chain) {
        if (e >= ix->fresh || ++nfree > ix->fresh - 1) {
            return -12;
        }
    }

    if (nfree + ix->used != ix->fresh - 1) {
        return -13;
    }

    n = 0;
    prev = 0;

    for (e = ix->garbage_head; e != 0; e = entries[e].next) {
        if (e >= ix->fresh || ++n > ix->garbage) {
            return -14;
        }

        if (entries[e].gen == ix->slots[entries[e].slot].gen) {
            return -15;
        }

        prev = e;
    }

    if (n != ix->garbage || prev != ix->garbage_tail) {
        return -16;
    }

    return 0;
}
