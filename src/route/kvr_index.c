/*
 * Copyright (C) kvroute developers
 *
 * The block index (see kvr_index.h): the region's layout, formatting and
 * reload, the slot table, clearing.  Lookups are kvr_index_match.c's,
 * changes to entries (record, refs, eviction) kvr_index_record.c's, the
 * consistency check for tests kvr_index_verify.c's; what they share is in
 * kvr_index_int.h.
 *
 * Region layout, all at offsets from the region start, no pointers:
 *
 *   header    magic, layout version, sizes, counters, free list and the
 *             slot table (name, capacity, counters, lru head and tail)
 *   buckets   power of two u32 chain heads, 0.9 to 2 buckets per entry
 *   entries   32-byte entries; index 0 is the nil entry, never used
 *
 * An entry is keyed by (block hash, slot).  It sits in one bucket chain
 * (singly linked through "chain") and in its slot's lru list (doubly
 * linked through "prev" and "next", head = most recently used).  Free
 * entries are linked through "chain"; entries never used yet are handed
 * out from "fresh" upwards, so formatting touches only header and buckets.
 *
 * Clearing or releasing a slot is O(1), since it happens under the lock
 * every request takes: the slot's generation is bumped, which hides its
 * entries from lookups at once, and its lru list is appended to the
 * garbage list.  Garbage entries stay in their bucket chains until an
 * entry is needed and the free list is empty; then they are unlinked and
 * reused before any live entry is evicted.  (A u32 generation would only
 * wrap after 2^32 clears of one slot; garbage that old is not expected.)
 *
 * Choices the header leaves open:
 *
 *   - names longer than KVR_INDEX_NAME_LEN - 1 bytes are stored as their
 *     first 46 bytes, '#' and 16 hex digits of the FNV-1a 64 hash of the
 *     whole name (63 bytes): deterministic, and long names that differ
 *     only at the end (ports) stay distinct;
 *   - refs: record() creates entries with refs 0 and never changes refs;
 *     add_ref() on an entry with refs 0 sets 1, else increments
 *     (saturating); remove_ref() removes the entry when refs <= 1;
 *   - add_ref() inserts or refreshes at the lru head and never trims to
 *     the capacity: trimming happens only in record();
 *     kvr_index_slot_set_capacity() only stores the capacity;
 *   - record() returns every entry it evicted: its slot's over-capacity
 *     entries (counted in the slot's evictions) and entries of any slot
 *     evicted because the region was full (counted in evictions_full);
 *   - entries being recorded are never evicted by that record(), except
 *     when the whole region holds fewer entries than the sequence: then
 *     the sequence's head is kept and the rest is not recorded;
 *   - calls with a slot that is out of range or not in use do nothing
 *     and return 0 (match_slots reports 0 for such a slot).
 *
 * kvr_index_verify() (not in the header; declare it where needed) checks
 * every structure of the region; it is meant for tests.
 */


#include <stdint.h>
#include <string.h>

#include "kvr_index.h"
#include "kvr_index_int.h"


typedef struct {
    uint64_t            buckets_offset;
    uint64_t            entries_offset;
    uint32_t            nbuckets;
    uint32_t            capacity;
} kvr_index_layout_t;


static int kvr_index_layout(size_t size, kvr_index_layout_t *lo);
static void kvr_index_empty(kvr_index_t *ix);
static void kvr_index_format(kvr_index_t *ix, size_t size,
    kvr_index_layout_t *lo);
static void kvr_index_store_name(const char *name, size_t len, char *stored,
    uint32_t *stored_len);


size_t
kvr_index_min_size(void)
{
    return KVR_INDEX_MIN_SIZE;
}

kvr_index_t *
kvr_index_init(void *region, size_t size)
{
    kvr_index_t         *ix;
    kvr_index_layout_t   lo;

    if (region == NULL || ((uintptr_t) region & 7) != 0) {
        return NULL;
    }

    if (kvr_index_layout(size, &lo) != 0) {
        return NULL;
    }

    ix = region;

    /* runs this process saw in a region formatted or kept: forgotten */
    memset(kvr_index_runs, 0, sizeof(kvr_index_runs));

    /* reload: same layout, same size: keep the content */

    if (ix->magic == KVR_INDEX_MAGIC
        && ix->version == KVR_INDEX_VERSION
        && ix->entry_size == sizeof(kvr_index_entry_t)
        && ix->region_size == (uint64_t) size
        && ix->buckets_offset == lo.buckets_offset
        && ix->entries_offset == lo.entries_offset
        && ix->nbuckets == lo.nbuckets
        && ix->bucket_mask == lo.nbuckets - 1
        && ix->capacity == lo.capacity
        && ix->used <= lo.capacity
        && ix->garbage <= ix->used
        && ix->fresh >= 1 && ix->fresh - 1 <= lo.capacity
        && ix->slots_end <= KVR_INDEX_MAX_SLOTS)
    {
        return ix;
    }

    kvr_index_format(ix, size, &lo);

    return ix;
}

static int
kvr_index_layout(size_t size, kvr_index_layout_t *lo)
{
    uint64_t  header, avail, nb, cap, entry;

    if (size < KVR_INDEX_MIN_SIZE) {
        return -1;
    }

    entry = sizeof(kvr_index_entry_t);
    header = kvr_index_align(sizeof(kvr_index_t));

    /* header, alignment slack of the entry array, the nil entry */
    avail = (uint64_t) size - header - KVR_INDEX_ALIGN - entry;

    /*
     * the largest power of two bucket count that still leaves at least
     * half as many entries: 0.9 to 2 buckets per entry
     */

    nb = 1;

    for ( ;; ) {
        if (nb * 2 > 0x80000000ULL || nb * 2 * 4 >= avail) {
            break;
        }

        cap = (avail - nb * 2 * 4) / entry;

        if (nb * 2 > cap * 2) {
            break;
        }

        nb *= 2;
    }

    cap = (avail - nb * 4) / entry;

    if (cap > KVR_INDEX_MAX_ENTRIES) {
        cap = KVR_INDEX_MAX_ENTRIES;
    }

    lo->nbuckets = (uint32_t) nb;
    lo->capacity = (uint32_t) cap;
    lo->buckets_offset = header;
    lo->entries_offset = kvr_index_align(header + nb * 4);

    if (cap == 0
        || lo->entries_offset + (cap + 1) * entry > (uint64_t) size)
    {
        return -1;
    }

    return 0;
}

static void
kvr_index_format(kvr_index_t *ix, size_t size, kvr_index_layout_t *lo)
{
    memset(ix, 0, sizeof(kvr_index_t));

    ix->version = KVR_INDEX_VERSION;
    ix->entry_size = sizeof(kvr_index_entry_t);
    ix->region_size = size;
    ix->buckets_offset = lo->buckets_offset;
    ix->entries_offset = lo->entries_offset;
    ix->nbuckets = lo->nbuckets;
    ix->bucket_mask = lo->nbuckets - 1;
    ix->capacity = lo->capacity;
    ix->slots_end = 0;
    ix->changes = 0;
    ix->evictions_full = 0;

    kvr_index_empty(ix);

    /* the magic last: a half-formatted region is formatted again */
    ix->magic = KVR_INDEX_MAGIC;
}

/* no entries: empty buckets, nothing free or garbage, the nil entry zero */

static void
kvr_index_empty(kvr_index_t *ix)
{
    kvr_index_entry_t  *nil;

    ix->used = 0;
    ix->garbage = 0;
    ix->garbage_head = 0;
    ix->garbage_tail = 0;
    ix->free_head = 0;
    ix->fresh = 1;

    memset(kvr_index_buckets(ix), 0, (size_t) ix->nbuckets * 4);

    nil = kvr_index_entries(ix);
    memset(nil, 0, sizeof(kvr_index_entry_t));
}

int
kvr_index_slot(kvr_index_t *ix, const char *name, size_t len)
{
    int                i, free_slot;
    char               stored[KVR_INDEX_NAME_LEN];
    uint32_t           stored_len, gen;
    kvr_index_slot_t  *s;

    if (name == NULL && len != 0) {
        return -1;
    }

    kvr_index_store_name(name, len, stored, &stored_len);

    free_slot = -1;

    for (i = 0; i < KVR_INDEX_MAX_SLOTS; i++) {
        s = &ix->slots[i];

        if (!s->in_use) {
            if (free_slot == -1) {
                free_slot = i;
            }

            continue;
        }

        if (s->name_len == stored_len
            && memcmp(s->name, stored, stored_len) == 0)
        {
            return i;
        }
    }

    if (free_slot == -1) {
        return -1;
    }

    s = &ix->slots[free_slot];
    ix->changes++;

    /* the generation survives: garbage of the slot's past may remain */

    gen = s->gen;
    memset(s, 0, sizeof(kvr_index_slot_t));
    s->gen = gen;
    memcpy(s->name, stored, stored_len);
    s->name_len = stored_len;
    s->in_use = 1;

    if ((uint32_t) free_slot >= ix->slots_end) {
        ix->slots_end = free_slot + 1;
    }

    return free_slot;
}

static void
kvr_index_store_name(const char *name, size_t len, char *stored,
    uint32_t *stored_len)
{
    size_t    i;
    uint64_t  h;

    memset(stored, 0, KVR_INDEX_NAME_LEN);

    if (len <= KVR_INDEX_NAME_LEN - 1) {
        if (len) {
            memcpy(stored, name, len);
        }

        *stored_len = (uint32_t) len;
        return;
    }

    /* FNV-1a 64 over the whole name */

    h = 0xcbf29ce484222325ULL;

    for (i = 0; i < len; i++) {
        h ^= (unsigned char) name[i];
        h *= 0x100000001b3ULL;
    }

    memcpy(stored, name, KVR_INDEX_NAME_PREFIX);
    stored[KVR_INDEX_NAME_PREFIX] = '#';

    for (i = 0; i < 16; i++) {
        stored[KVR_INDEX_NAME_PREFIX + 1 + i] =
            "0123456789abcdef"[(h >> (60 - 4 * i)) & 0xf];
    }

    *stored_len = KVR_INDEX_NAME_LEN - 1;
}

void
kvr_index_slot_set_capacity(kvr_index_t *ix, int slot,
    uint64_t capacity_blocks)
{
    kvr_index_slot_t  *s;

    s = kvr_index_slot_get(ix, slot);

    if (s != NULL) {
        s->capacity = capacity_blocks;
        ix->changes++;
    }
}

void
kvr_index_clear_slot(kvr_index_t *ix, int slot)
{
    kvr_index_slot_t  *s;

    s = kvr_index_slot_get(ix, slot);

    if (s == NULL) {
        return;
    }

    ix->changes++;

    /* lookups ignore entries of an older generation from now on */

    s->gen++;

    if (s->lru_head == 0) {
        return;
    }

    /* the garbage list is singly linked through "next" */

    if (ix->garbage_tail) {
        kvr_index_entries(ix)[ix->garbage_tail].next = s->lru_head;

    } else {
        ix->garbage_head = s->lru_head;
    }

    ix->garbage_tail = s->lru_tail;
    ix->garbage += (uint32_t) s->blocks;

    s->lru_head = 0;
    s->lru_tail = 0;
    s->blocks = 0;
}

void
kvr_index_release_slot(kvr_index_t *ix, int slot)
{
    uint32_t           gen;
    kvr_index_slot_t  *s;

    s = kvr_index_slot_get(ix, slot);

    if (s == NULL) {
        return;
    }

    kvr_index_clear_slot(ix, slot);

    gen = s->gen;
    memset(s, 0, sizeof(kvr_index_slot_t));
    s->gen = gen;
}

/*
 * Every entry gone, the slot table (names, capacities, counters of
 * evictions) kept: for a region a process may have left half changed.
 * Touches only the header and the buckets, like formatting.
 */

void
kvr_index_clear_all(kvr_index_t *ix)
{
    int                 i;
    kvr_index_slot_t   *s;

    for (i = 0; i < KVR_INDEX_MAX_SLOTS; i++) {
        s = &ix->slots[i];
        s->blocks = 0;
        s->lru_head = 0;
        s->lru_tail = 0;
        s->gen++;
    }

    ix->changes++;

    kvr_index_empty(ix);
}

void
kvr_index_stats(kvr_index_t *ix, kvr_index_stats_t *stats)
{
    stats->entries = ix->used - ix->garbage;
    stats->capacity = ix->capacity;
    stats->evictions_full = ix->evictions_full;
}

void
kvr_index_slot_info(kvr_index_t *ix, int slot, kvr_index_slot_info_t *info)
{
    kvr_index_slot_t  *s;

    memset(info, 0, sizeof(kvr_index_slot_info_t));

    if (slot < 0 || slot >= KVR_INDEX_MAX_SLOTS) {
        return;
    }

    s = &ix->slots[slot];

    memcpy(info->name, s->name, KVR_INDEX_NAME_LEN);
    info->name_len = s->name_len;
    info->in_use = s->in_use;
    info->blocks = s->blocks;
    info->capacity = s->capacity;
    info->evictions = s->evictions;
}

uint64_t
kvr_index_slot_blocks(kvr_index_t *ix, int slot)
{
    if (slot < 0 || slot >= KVR_INDEX_MAX_SLOTS) {
        return 0;
    }

    return ix->slots[slot].blocks;
}
