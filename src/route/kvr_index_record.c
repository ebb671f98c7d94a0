/*
 * Copyright (C) kvroute developers
 *
 * Changes to the block index's entries (kvr_index.h; the choices the
 * header leaves open are in kvr_index.c): recording a sequence, exact
 * mode's references, and the lists and eviction under them.
 */

#include <stdint.h>
#include <string.h>

#include "kvr_index.h"
#include "kvr_index_int.h"


static void kvr_index_lru_unlink(kvr_index_t *ix, kvr_index_slot_t *s,
    uint32_t e);
static void kvr_index_lru_insert(kvr_index_t *ix, kvr_index_slot_t *s,
    uint32_t after, uint32_t e);
static void kvr_index_chain_unlink(kvr_index_t *ix, uint32_t e);
static void kvr_index_remove(kvr_index_t *ix, uint32_t e);
static uint32_t kvr_index_take_free(kvr_index_t *ix);
static int kvr_index_evict_full(kvr_index_t *ix);
static uint32_t kvr_index_insert(kvr_index_t *ix, int slot, uint64_t hash,
    uint32_t after, uint32_t e);
static uint32_t kvr_index_known_run(kvr_index_t *ix, int slot,
    const uint64_t *hashes, size_t m, uint32_t *last);
static size_t kvr_index_record_run(kvr_index_t *ix, kvr_index_slot_t *s,
    uint32_t first, uint32_t last);
static size_t kvr_index_record_present(kvr_index_t *ix, int slot,
    const uint64_t *hashes, size_t m);
static size_t kvr_index_record_missing(kvr_index_t *ix, int slot,
    const uint64_t *hashes, size_t m, size_t present);
static uint32_t kvr_index_make_room(kvr_index_t *ix, kvr_index_slot_t *s,
    uint32_t cursor, size_t *evicted);


size_t
kvr_index_record(kvr_index_t *ix, int slot, const uint64_t *hashes, size_t n)
{
    size_t              m, evicted, present;
    uint32_t            e, first, last;
    kvr_index_slot_t   *s;
    kvr_index_entry_t  *entries;

    s = kvr_index_slot_get(ix, slot);

    if (s == NULL) {
        return 0;
    }

    entries = kvr_index_entries(ix);

    /* beyond the capacity only the sequence's head can stay */

    m = n;

    if (s->capacity && m > s->capacity) {
        m = (size_t) s->capacity;
    }

    first = kvr_index_known_run(ix, slot, hashes, m, &last);

    kvr_index_runs[slot].ix = NULL;
    ix->changes++;

    if (first) {
        return kvr_index_record_run(ix, s, first, last);
    }

    present = kvr_index_record_present(ix, slot, hashes, m);
    evicted = kvr_index_record_missing(ix, slot, hashes, m, present);

    /* capacity lowered, or nothing was missing */

    while (s->capacity && s->blocks > s->capacity
           && !(entries[s->lru_tail].flags & KVR_INDEX_MARK))
    {
        kvr_index_remove(ix, s->lru_tail);
        s->evictions++;
        evicted++;
    }

    /* the marked entries are the head of the list */

    for (e = s->lru_head;
         e != 0 && (entries[e].flags & KVR_INDEX_MARK);
         e = entries[e].next)
    {
        entries[e].flags &= ~KVR_INDEX_MARK;
    }

    return evicted;
}


/*
 * The first entry of hashes[0..m-1] when the whole sequence already is a
 * run of the slot's list, in order (it was recorded before and nothing
 * was recorded into it since), *last its final entry; else 0.  The run
 * match_slots_jump() just saw is taken as it is if nothing changed since.
 */

static uint32_t
kvr_index_known_run(kvr_index_t *ix, int slot, const uint64_t *hashes,
    size_t m, uint32_t *last)
{
    size_t              i;
    uint32_t            first;
    kvr_index_run_t    *seen;
    kvr_index_entry_t  *entries;

    entries = kvr_index_entries(ix);
    seen = &kvr_index_runs[slot];

    if (seen->ix == ix && seen->changes == ix->changes
        && seen->hashes == hashes && seen->n == m && m > 0
        && entries[seen->first].hash == hashes[0]
        && entries[seen->last].hash == hashes[m - 1])
    {
        *last = seen->last;
        return seen->first;
    }

    if (m == 0) {
        return 0;
    }

    first = kvr_index_find(ix, slot, hashes[0]);

    if (first == 0) {
        return 0;
    }

    i = kvr_index_follow(entries, first, hashes, m, last);

    return (i == m) ? first : 0;
}


/*
 * fast path: the sequence is the run first .. last of the list: it is
 * spliced to the head, and the slot trimmed to its capacity behind it
 */

static size_t
kvr_index_record_run(kvr_index_t *ix, kvr_index_slot_t *s, uint32_t first,
    uint32_t last)
{
    size_t              evicted;
    uint32_t            prev, next;
    kvr_index_entry_t  *entries;

    entries = kvr_index_entries(ix);
    evicted = 0;

    if (s->lru_head != first) {
        prev = entries[first].prev;
        next = entries[last].next;

        entries[prev].next = next;

        if (next) {
            entries[next].prev = prev;

        } else {
            s->lru_tail = prev;
        }

        entries[first].prev = 0;
        entries[last].next = s->lru_head;
        entries[s->lru_head].prev = last;
        s->lru_head = first;
    }

    while (s->capacity && s->blocks > s->capacity && s->lru_tail != last) {
        kvr_index_remove(ix, s->lru_tail);
        s->evictions++;
        evicted++;
    }

    return evicted;
}


/*
 * pass 1: the present entries go to the head, in sequence order, and are
 * marked, so that making room for the missing ones cannot evict them;
 * cursor is the last entry placed, entries already in place (a sequence
 * recorded again) are not moved.  Doing the lookups in a pass of their
 * own is also faster than one pass: with no stores in between, more
 * cache misses are in flight at once.  Returns how many are present.
 */

static size_t
kvr_index_record_present(kvr_index_t *ix, int slot, const uint64_t *hashes,
    size_t m)
{
    size_t              i, present;
    uint32_t            e, cursor, next, *buckets;
    kvr_index_slot_t   *s;
    kvr_index_entry_t  *entries;

    s = &ix->slots[slot];
    entries = kvr_index_entries(ix);

    /*
     * all buckets first (of a usual sequence; more would just push the
     * first ones out): the lookups below then mostly hit the cache
     */

    buckets = kvr_index_buckets(ix);

    for (i = 0; i < m && i < 512; i++) {
        kvr_index_prefetch(&buckets[kvr_index_bucket(ix, hashes[i], slot)]);
    }

    cursor = 0;
    present = 0;

    for (i = 0; i < m; i++) {
        e = kvr_index_find(ix, slot, hashes[i]);

        if (e == 0) {
            continue;
        }

        present++;

        /* a repeated hash stays where its first occurrence put it */

        if (entries[e].flags & KVR_INDEX_MARK) {
            continue;
        }

        next = cursor ? entries[cursor].next : s->lru_head;

        if (e != next) {
            kvr_index_lru_unlink(ix, s, e);
            kvr_index_lru_insert(ix, s, cursor, e);
        }

        entries[e].flags |= KVR_INDEX_MARK;
        cursor = e;
    }

    return present;
}


/*
 * pass 2: the list is [done 0..i-1] [present ones of i..m-1] [older];
 * cursor is the last done entry, missing ones are inserted after it.
 * Nothing missing (a prefix seen before): no second pass.  Returns how
 * many entries were evicted to make room.
 */

static size_t
kvr_index_record_missing(kvr_index_t *ix, int slot, const uint64_t *hashes,
    size_t m, size_t present)
{
    size_t              i, evicted;
    uint32_t            e, cursor, next;
    kvr_index_slot_t   *s;
    kvr_index_entry_t  *entries;

    s = &ix->slots[slot];
    entries = kvr_index_entries(ix);
    evicted = 0;
    cursor = 0;

    for (i = (present == m) ? m : 0; i < m; i++) {
        next = cursor ? entries[cursor].next : s->lru_head;

        e = kvr_index_find(ix, slot, hashes[i]);

        if (e) {
            /* a repeated hash is already done and stays where it is */
            if (e == next) {
                cursor = e;
            }

            continue;
        }

        e = kvr_index_make_room(ix, s, cursor, &evicted);

        if (e == 0) {
            break;
        }

        kvr_index_insert(ix, slot, hashes[i], cursor, e);
        entries[e].flags |= KVR_INDEX_MARK;
        cursor = e;
    }

    return evicted;
}


/*
 * A free entry for a block being recorded into slot s after cursor: the
 * slot's own lru entry goes first when the slot is at its capacity, then
 * another slot's when the region is full, then the slot's own (not one
 * being recorded) when the region is smaller than the sequence.  0 when
 * none can be had.
 */

static uint32_t
kvr_index_make_room(kvr_index_t *ix, kvr_index_slot_t *s, uint32_t cursor,
    size_t *evicted)
{
    uint32_t            e;
    kvr_index_entry_t  *entries;

    entries = kvr_index_entries(ix);

    if (s->capacity && s->blocks >= s->capacity && s->lru_tail
        && !(entries[s->lru_tail].flags & KVR_INDEX_MARK))
    {
        kvr_index_remove(ix, s->lru_tail);
        s->evictions++;
        (*evicted)++;
    }

    e = kvr_index_take_free(ix);

    if (e != 0) {
        return e;
    }

    if (kvr_index_evict_full(ix)) {
        (*evicted)++;

    } else if (s->lru_tail != 0 && s->lru_tail != cursor) {
        /* the region is smaller than the sequence */
        kvr_index_remove(ix, s->lru_tail);
        ix->evictions_full++;
        (*evicted)++;

    } else {
        return 0;
    }

    return kvr_index_take_free(ix);
}


uint32_t
kvr_index_add_ref(kvr_index_t *ix, int slot, uint64_t hash)
{
    uint32_t            e;
    kvr_index_slot_t   *s;
    kvr_index_entry_t  *en;

    s = kvr_index_slot_get(ix, slot);

    if (s == NULL) {
        return 0;
    }

    ix->changes++;

    e = kvr_index_find(ix, slot, hash);

    if (e == 0) {
        e = kvr_index_take_free(ix);

        if (e == 0) {
            if (!kvr_index_evict_full(ix)) {
                return 0;
            }

            e = kvr_index_take_free(ix);

            if (e == 0) {
                return 0;
            }
        }

        kvr_index_insert(ix, slot, hash, 0, e);
        en = &kvr_index_entries(ix)[e];
        en->refs = 1;

        return 1;
    }

    en = &kvr_index_entries(ix)[e];

    if (en->refs < UINT32_MAX) {
        en->refs++;
    }

    kvr_index_lru_unlink(ix, s, e);
    kvr_index_lru_insert(ix, s, 0, e);

    return en->refs;
}

void
kvr_index_prefetch_ref(kvr_index_t *ix, int slot, uint64_t hash)
{
    if (slot < 0 || slot >= KVR_INDEX_MAX_SLOTS) {
        return;
    }

    kvr_index_prefetch(&kvr_index_buckets(ix)[kvr_index_bucket(ix, hash,
                                                                slot)]);
}

uint32_t
kvr_index_remove_ref(kvr_index_t *ix, int slot, uint64_t hash)
{
    uint32_t            e;
    kvr_index_entry_t  *en;

    if (kvr_index_slot_get(ix, slot) == NULL) {
        return 0;
    }

    ix->changes++;

    e = kvr_index_find(ix, slot, hash);

    if (e == 0) {
        return 0;
    }

    en = &kvr_index_entries(ix)[e];

    if (en->refs > 1) {
        return --en->refs;
    }

    kvr_index_remove(ix, e);

    return 0;
}

static void
kvr_index_lru_unlink(kvr_index_t *ix, kvr_index_slot_t *s, uint32_t e)
{
    kvr_index_entry_t  *entries, *en;

    entries = kvr_index_entries(ix);
    en = &entries[e];

    if (en->prev) {
        entries[en->prev].next = en->next;

    } else {
        s->lru_head = en->next;
    }

    if (en->next) {
        entries[en->next].prev = en->prev;

    } else {
        s->lru_tail = en->prev;
    }

    en->prev = 0;
    en->next = 0;
}

/* links e after entry "after", or at the head when after is 0 */

static void
kvr_index_lru_insert(kvr_index_t *ix, kvr_index_slot_t *s, uint32_t after,
    uint32_t e)
{
    uint32_t            next;
    kvr_index_entry_t  *entries;

    entries = kvr_index_entries(ix);

    next = after ? entries[after].next : s->lru_head;

    entries[e].prev = after;
    entries[e].next = next;

    if (after) {
        entries[after].next = e;

    } else {
        s->lru_head = e;
    }

    if (next) {
        entries[next].prev = e;

    } else {
        s->lru_tail = e;
    }
}

static void
kvr_index_chain_unlink(kvr_index_t *ix, uint32_t e)
{
    uint32_t           *link;
    kvr_index_entry_t  *entries, *en;

    entries = kvr_index_entries(ix);
    en = &entries[e];

    link = &kvr_index_buckets(ix)[kvr_index_bucket(ix, en->hash, en->slot)];

    /* a damaged chain (a process died inside a call) must not hang us */

    while (*link != e && *link != 0) {
        link = &entries[*link].chain;
    }

    if (*link == e) {
        *link = en->chain;
    }

    en->hash = 0;
    en->refs = 0;
    en->flags = 0;
    en->slot = 0;
    en->gen = 0;
    en->prev = 0;
    en->next = 0;
    en->chain = 0;
}

/* removes a live entry: its chain, its slot's lru, to the free list */

static void
kvr_index_remove(kvr_index_t *ix, uint32_t e)
{
    kvr_index_slot_t   *s;
    kvr_index_entry_t  *entries;

    entries = kvr_index_entries(ix);
    s = &ix->slots[entries[e].slot];

    kvr_index_lru_unlink(ix, s, e);
    kvr_index_chain_unlink(ix, e);

    s->blocks--;
    ix->used--;

    entries[e].chain = ix->free_head;
    ix->free_head = e;
}

static uint32_t
kvr_index_take_free(kvr_index_t *ix)
{
    uint32_t  e;

    if (ix->free_head) {
        e = ix->free_head;
        ix->free_head = kvr_index_entries(ix)[e].chain;
        return e;
    }

    if (ix->fresh <= ix->capacity) {
        return ix->fresh++;
    }

    /* the oldest garbage entry leaves its chain and is reused */

    e = ix->garbage_head;

    if (e) {
        ix->garbage_head = kvr_index_entries(ix)[e].next;

        if (ix->garbage_head == 0) {
            ix->garbage_tail = 0;
        }

        kvr_index_chain_unlink(ix, e);
        ix->garbage--;
        ix->used--;

        return e;
    }

    return 0;
}

/*
 * region full: evicts the lru entry of the slot with most blocks, among
 * slots whose lru entry is not being recorded; 0 when there is none
 */

static int
kvr_index_evict_full(kvr_index_t *ix)
{
    int                 i, victim;
    uint64_t            most;
    kvr_index_slot_t   *s;
    kvr_index_entry_t  *entries;

    entries = kvr_index_entries(ix);

    victim = -1;
    most = 0;

    for (i = 0; i < (int) ix->slots_end; i++) {
        s = &ix->slots[i];

        if (s->in_use && s->blocks > most
            && !(entries[s->lru_tail].flags & KVR_INDEX_MARK))
        {
            most = s->blocks;
            victim = i;
        }
    }

    if (victim == -1) {
        return 0;
    }

    kvr_index_remove(ix, ix->slots[victim].lru_tail);
    ix->evictions_full++;

    return 1;
}

static uint32_t
kvr_index_insert(kvr_index_t *ix, int slot, uint64_t hash, uint32_t after,
    uint32_t e)
{
    uint32_t           *head;
    kvr_index_slot_t   *s;
    kvr_index_entry_t  *en;

    s = &ix->slots[slot];
    en = &kvr_index_entries(ix)[e];

    en->hash = hash;
    en->slot = (uint16_t) slot;
    en->refs = 0;
    en->flags = 0;
    en->gen = s->gen;

    head = &kvr_index_buckets(ix)[kvr_index_bucket(ix, hash, slot)];
    en->chain = *head;
    *head = e;

    kvr_index_lru_insert(ix, s, after, e);

    s->blocks++;
    ix->used++;

    return e;
}
