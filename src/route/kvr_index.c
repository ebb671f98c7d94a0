/*
 * Copyright (C) kvroute developers
 *
 * The block index (see kvr_index.h).
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


#define KVR_INDEX_MAGIC       0x5845444e4952564bULL    /* "KVRINDEX" */
#define KVR_INDEX_VERSION     2
#define KVR_INDEX_MIN_SIZE    (64 * 1024)
#define KVR_INDEX_MAX_ENTRIES 0xfffffff0U
#define KVR_INDEX_ALIGN       64

/* lookups whose buckets match_slots_jump() fetches ahead at most */
#define KVR_INDEX_AHEAD       32

/* entry flag: recorded by the record() call in progress */
#define KVR_INDEX_MARK        0x0001

/* stored name of an over-long name: prefix, '#', 16 hex digits */
#define KVR_INDEX_NAME_PREFIX (KVR_INDEX_NAME_LEN - 1 - 1 - 16)


typedef struct {
    uint64_t            hash;
    uint32_t            chain;      /* next in bucket, or next free */
    uint32_t            prev;       /* lru neighbour used more recently */
    uint32_t            next;       /* lru neighbour used less recently */
    uint32_t            refs;       /* exact mode references, 0 = record */
    uint16_t            slot;
    uint16_t            flags;
    uint32_t            gen;        /* the slot's generation at insert */
} kvr_index_entry_t;


typedef struct {
    char                name[KVR_INDEX_NAME_LEN];
    uint32_t            name_len;
    uint32_t            in_use;
    uint64_t            blocks;
    uint64_t            capacity;
    uint64_t            evictions;
    uint32_t            lru_head;   /* most recently used */
    uint32_t            lru_tail;   /* least recently used, evicted first */
    uint32_t            gen;        /* bumped by clear; kept by release */
    uint32_t            reserved;
} kvr_index_slot_t;


struct kvr_index_s {
    uint64_t            magic;
    uint32_t            version;
    uint32_t            entry_size;
    uint64_t            region_size;
    uint64_t            buckets_offset;
    uint64_t            entries_offset;
    uint32_t            nbuckets;
    uint32_t            bucket_mask;
    uint32_t            capacity;   /* usable entries: 1 .. capacity */
    uint32_t            used;       /* live and garbage entries */
    uint32_t            garbage;
    uint32_t            garbage_head;
    uint32_t            garbage_tail;
    uint32_t            free_head;
    uint32_t            fresh;      /* lowest entry never used yet */
    uint32_t            slots_end;  /* above the highest slot ever used */
    uint32_t            changes;    /* bumped by every call that modifies */
    uint64_t            evictions_full;
    kvr_index_slot_t    slots[KVR_INDEX_MAX_SLOTS];
};


typedef struct {
    uint64_t            buckets_offset;
    uint64_t            entries_offset;
    uint32_t            nbuckets;
    uint32_t            capacity;
} kvr_index_layout_t;


/*
 * A sequence match_slots_jump() found whole and in order on a slot's list
 * (entries first .. last), remembered by this process for the record()
 * that usually follows: while the index has not changed since (changes),
 * record() need not follow the list again.
 */
typedef struct {
    kvr_index_t        *ix;
    uint32_t            changes;
    uint32_t            first;
    uint32_t            last;
    const uint64_t     *hashes;
    size_t              n;
} kvr_index_run_t;


static kvr_index_run_t  kvr_index_runs[KVR_INDEX_MAX_SLOTS];


int kvr_index_verify(kvr_index_t *ix);

static int kvr_index_layout(size_t size, kvr_index_layout_t *lo);
static void kvr_index_empty(kvr_index_t *ix);
static void kvr_index_format(kvr_index_t *ix, size_t size,
    kvr_index_layout_t *lo);
static void kvr_index_store_name(const char *name, size_t len, char *stored,
    uint32_t *stored_len);
static kvr_index_slot_t *kvr_index_slot_get(kvr_index_t *ix, int slot);
static uint32_t kvr_index_bucket(kvr_index_t *ix, uint64_t hash, int slot);
static uint32_t kvr_index_find(kvr_index_t *ix, int slot, uint64_t hash);
static void kvr_index_lru_unlink(kvr_index_t *ix, kvr_index_slot_t *s,
    uint32_t e);
static void kvr_index_lru_insert(kvr_index_t *ix, kvr_index_slot_t *s,
    uint32_t after, uint32_t e);
static void kvr_index_remove(kvr_index_t *ix, uint32_t e);
static uint32_t kvr_index_take_free(kvr_index_t *ix);
static int kvr_index_evict_full(kvr_index_t *ix);
static uint32_t kvr_index_insert(kvr_index_t *ix, int slot, uint64_t hash,
    uint32_t after, uint32_t e);
static size_t kvr_index_follow(kvr_index_entry_t *entries, uint32_t e,
    const uint64_t *hashes, size_t n, uint32_t *last);


#define kvr_index_entries(ix)                                                 \
    ((kvr_index_entry_t *) ((unsigned char *) (ix) + (ix)->entries_offset))

#define kvr_index_buckets(ix)                                                 \
    ((uint32_t *) ((unsigned char *) (ix) + (ix)->buckets_offset))

#if defined(__GNUC__)
#define kvr_index_prefetch(p)  __builtin_prefetch(p)
#else
#define kvr_index_prefetch(p)
#endif

#define kvr_index_align(n)                                                    \
    (((n) + KVR_INDEX_ALIGN - 1) & ~((uint64_t) KVR_INDEX_ALIGN - 1))


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


static kvr_index_slot_t *
kvr_index_slot_get(kvr_index_t *ix, int slot)
{
    if (slot < 0 || slot >= KVR_INDEX_MAX_SLOTS || !ix->slots[slot].in_use) {
        return NULL;
    }

    return &ix->slots[slot];
}


static uint32_t
kvr_index_bucket(kvr_index_t *ix, uint64_t hash, int slot)
{
    uint64_t  x;

    /* the slot is mixed in; the block hash is not trusted to be uniform */

    x = hash ^ ((uint64_t) (slot + 1) * 0x9e3779b97f4a7c15ULL);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;

    return (uint32_t) x & ix->bucket_mask;
}


static uint32_t
kvr_index_find(kvr_index_t *ix, int slot, uint64_t hash)
{
    uint32_t            e, gen;
    kvr_index_entry_t  *entries;

    entries = kvr_index_entries(ix);
    gen = ix->slots[slot].gen;

    for (e = kvr_index_buckets(ix)[kvr_index_bucket(ix, hash, slot)];
         e != 0;
         e = entries[e].chain)
    {
        if (entries[e].hash == hash && entries[e].slot == slot
            && entries[e].gen == gen)
        {
            return e;
        }
    }

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


/*
 * How many of hashes[0..n-1] lie one after the other on the lru list from
 * entry e on (e holds hashes[0]); *last is the entry of the final one.
 * A sequence inserted in one go sits in consecutive entries (fresh ones,
 * or ones freed tail first and so taken back in order): guessing that the
 * next one is last + 1 makes each step's loads independent of the step
 * before; the list is followed as it is where the guess fails.  Entries
 * on a slot's list are all of its generation: no need to check.
 */

static size_t
kvr_index_follow(kvr_index_entry_t *entries, uint32_t e,
    const uint64_t *hashes, size_t n, uint32_t *last)
{
    size_t    i;
    uint32_t  next;

    i = 1;

    while (i < n && entries[e].next == e + 1
           && entries[e + 1].hash == hashes[i])
    {
        e++;
        i++;
    }

    for ( /* void */ ; i < n; i++) {
        next = entries[e].next;

        if (next == 0 || entries[next].hash != hashes[i]) {
            break;
        }

        e = next;
    }

    *last = e;

    return i;
}


size_t
kvr_index_match(kvr_index_t *ix, int slot, const uint64_t *hashes, size_t n)
{
    size_t  i;

    if (kvr_index_slot_get(ix, slot) == NULL) {
        return 0;
    }

    for (i = 0; i < n; i++) {
        if (kvr_index_find(ix, slot, hashes[i]) == 0) {
            break;
        }
    }

    return i;
}


void
kvr_index_match_slots(kvr_index_t *ix, const int *slots, size_t nslots,
    const uint64_t *hashes, size_t n, uint32_t *overlap)
{
    size_t              i, j, k, base, chunk, nactive;
    uint32_t            active[KVR_INDEX_MAX_SLOTS], *buckets;
    kvr_index_entry_t  *entries;

    buckets = kvr_index_buckets(ix);
    entries = kvr_index_entries(ix);

    /* more slots than the table holds (repeats): in chunks */

    for (base = 0; base < nslots; base += chunk) {
        chunk = nslots - base;

        if (chunk > KVR_INDEX_MAX_SLOTS) {
            chunk = KVR_INDEX_MAX_SLOTS;
        }

        nactive = 0;

        for (k = base; k < base + chunk; k++) {
            overlap[k] = 0;

            if (kvr_index_slot_get(ix, slots[k]) != NULL && n > 0) {
                active[nactive++] = (uint32_t) k;
            }
        }

        for (i = 0; i < n && nactive > 0; i++) {

            /*
             * more cache misses in flight: one slot left, its bucket
             * eight blocks ahead; several, their buckets four blocks
             * ahead and the buckets' first entries two blocks ahead
             * (distances tuned with bench/micro/index_bench.c)
             */

            if (nactive == 1 && i + 8 < n) {
                kvr_index_prefetch(&buckets[kvr_index_bucket(ix,
                                            hashes[i + 8], slots[active[0]])]);
            }

            for (j = 0; nactive > 1 && j < nactive; j++) {
                k = active[j];

                if (i + 4 < n) {
                    kvr_index_prefetch(&buckets[kvr_index_bucket(ix,
                                                hashes[i + 4], slots[k])]);
                }

                if (i + 2 < n) {
                    kvr_index_prefetch(&entries[buckets[kvr_index_bucket(ix,
                                                hashes[i + 2], slots[k])]]);
                }
            }

            j = 0;

            while (j < nactive) {
                k = active[j];

                if (kvr_index_find(ix, slots[k], hashes[i]) != 0) {
                    j++;
                    continue;
                }

                overlap[k] = (uint32_t) i;
                active[j] = active[--nactive];
            }
        }

        for (j = 0; j < nactive; j++) {
            overlap[active[j]] = (uint32_t) n;
        }
    }
}


void
kvr_index_match_slots_jump(kvr_index_t *ix, const int *slots, size_t nslots,
    const uint64_t *hashes, size_t n, size_t stride, uint32_t *overlap)
{
    size_t              k, i, run, end, walked;
    uint32_t            e, last, *buckets;
    kvr_index_run_t    *run_seen;
    kvr_index_entry_t  *entries;

    if (stride < 2) {
        kvr_index_match_slots(ix, slots, nslots, hashes, n, overlap);
        return;
    }

    buckets = kvr_index_buckets(ix);
    entries = kvr_index_entries(ix);

    /*
     * the buckets of the lookups that come next are fetched ahead, all at
     * once, so that their cache misses overlap: the first block's of every
     * slot, then a slot's probes, then the blocks of its last gap
     */

    for (k = 0; k < nslots && n > 0; k++) {
        if (kvr_index_slot_get(ix, slots[k]) != NULL) {
            kvr_index_prefetch(&buckets[kvr_index_bucket(ix, hashes[0],
                                                         slots[k])]);
        }
    }

    for (k = 0; k < nslots; k++) {
        overlap[k] = 0;

        if (n == 0 || kvr_index_slot_get(ix, slots[k]) == NULL) {
            continue;
        }

        e = kvr_index_find(ix, slots[k], hashes[0]);

        if (e == 0) {
            continue;
        }

        /*
         * a sequence recorded before is usually still in order on the
         * list: following it confirms the blocks without a lookup each
         * (a sequential read, where lookups miss the cache at random)
         */

        walked = kvr_index_follow(entries, e, hashes, n, &last);

        if (walked == n) {
            overlap[k] = (uint32_t) n;

            run_seen = &kvr_index_runs[slots[k]];
            run_seen->ix = ix;
            run_seen->changes = ix->changes;
            run_seen->first = e;
            run_seen->last = last;
            run_seen->hashes = hashes;
            run_seen->n = n;

            continue;
        }

        /*
         * the probes below walked - 1 are present: jumping from the last
         * of them ends where jumping from block 0 would
         */

        run = (walked - 1) / stride * stride;

        for (i = run + stride;
             i < n && i <= run + KVR_INDEX_AHEAD * stride;
             i += stride)
        {
            kvr_index_prefetch(&buckets[kvr_index_bucket(ix, hashes[i],
                                                         slots[k])]);
        }

        /* run: a block known present; jump while the next probe is too */

        for ( /* void */ ;
             run + stride < n
             && kvr_index_find(ix, slots[k], hashes[run + stride]) != 0;
             run += stride)
        {
            /* void */
        }

        end = (run + stride < n) ? run + stride : n;

        for (i = run + 1; i < end && i <= run + KVR_INDEX_AHEAD; i++) {
            kvr_index_prefetch(&buckets[kvr_index_bucket(ix, hashes[i],
                                                         slots[k])]);
        }

        for (i = run + 1; i < end; i++) {
            if (kvr_index_find(ix, slots[k], hashes[i]) == 0) {
                break;
            }
        }

        overlap[k] = (uint32_t) i;
    }
}


size_t
kvr_index_record(kvr_index_t *ix, int slot, const uint64_t *hashes, size_t n)
{
    size_t              i, m, evicted, present;
    uint32_t            e, cursor, next, prev, first, last, *buckets;
    kvr_index_run_t    *seen;
    kvr_index_slot_t   *s;
    kvr_index_entry_t  *entries;

    s = kvr_index_slot_get(ix, slot);

    if (s == NULL) {
        return 0;
    }

    entries = kvr_index_entries(ix);
    seen = &kvr_index_runs[slot];

    /* beyond the capacity only the sequence's head can stay */

    m = n;

    if (s->capacity && m > s->capacity) {
        m = (size_t) s->capacity;
    }

    evicted = 0;

    /*
     * fast path: the sequence already is a run of the list, in order (it
     * was recorded before and nothing was recorded into it since): one
     * lookup, a walk along the list, and the run spliced to the head
     */

    /* the run match_slots_jump() just saw, if nothing changed since */

    if (seen->ix == ix && seen->changes == ix->changes
        && seen->hashes == hashes && seen->n == m && m > 0
        && entries[seen->first].hash == hashes[0]
        && entries[seen->last].hash == hashes[m - 1])
    {
        first = seen->first;
        last = seen->last;
        i = m;

    } else {
        first = (m > 0) ? kvr_index_find(ix, slot, hashes[0]) : 0;
        last = first;
        i = first ? kvr_index_follow(entries, first, hashes, m, &last) : 0;
    }

    seen->ix = NULL;
    ix->changes++;

    if (first) {

        if (i == m) {
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

            while (s->capacity && s->blocks > s->capacity
                   && s->lru_tail != last)
            {
                kvr_index_remove(ix, s->lru_tail);
                s->evictions++;
                evicted++;
            }

            return evicted;
        }
    }

    /*
     * pass 1: the present entries go to the head, in sequence order, and
     * are marked, so that making room for the missing ones cannot evict
     * them; cursor is the last entry placed, entries already in place
     * (a sequence recorded again) are not moved.  Doing the lookups in a
     * pass of their own is also faster than one pass: with no stores in
     * between, more cache misses are in flight at once.
     */

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

    /*
     * pass 2: the list is [done 0..i-1] [present ones of i..m-1] [older];
     * cursor is the last done entry, missing ones are inserted after it
     */

    /* nothing missing (a prefix seen before): no second pass */

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

        if (s->capacity && s->blocks >= s->capacity && s->lru_tail
            && !(entries[s->lru_tail].flags & KVR_INDEX_MARK))
        {
            kvr_index_remove(ix, s->lru_tail);
            s->evictions++;
            evicted++;
        }

        e = kvr_index_take_free(ix);

        if (e == 0) {
            if (kvr_index_evict_full(ix)) {
                evicted++;

            } else if (s->lru_tail != 0 && s->lru_tail != cursor) {
                /* the region is smaller than the sequence */
                kvr_index_remove(ix, s->lru_tail);
                ix->evictions_full++;
                evicted++;

            } else {
                break;
            }

            e = kvr_index_take_free(ix);

            if (e == 0) {
                break;
            }
        }

        kvr_index_insert(ix, slot, hashes[i], cursor, e);
        entries[e].flags |= KVR_INDEX_MARK;
        cursor = e;
    }

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


/*
 * Checks every structure; returns 0, or a negative number naming the
 * first inconsistency found.  O(region); for tests.
 */

int
kvr_index_verify(kvr_index_t *ix)
{
    int                 i;
    uint32_t            e, prev, b, nfree, nchained;
    uint64_t            n, total;
    uint32_t           *buckets;
    kvr_index_slot_t   *s;
    kvr_index_entry_t  *entries;

    if (ix->magic != KVR_INDEX_MAGIC || ix->version != KVR_INDEX_VERSION) {
        return -1;
    }

    if (ix->fresh < 1 || ix->fresh - 1 > ix->capacity
        || ix->used > ix->fresh - 1)
    {
        return -2;
    }

    entries = kvr_index_entries(ix);
    buckets = kvr_index_buckets(ix);
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

    nfree = 0;

    for (e = ix->free_head; e != 0; e = entries[e].chain) {
        if (e >= ix->fresh || ++nfree > ix->fresh - 1) {
            return -12;
        }
    }

    if (nfree + ix->used != ix->fresh - 1) {
        return -13;
    }

    /* garbage: hidden from lookups by an older generation */

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
