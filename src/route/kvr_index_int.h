/*
 * Copyright (C) kvroute developers
 *
 * The block index's region format and the lookups every part of it uses,
 * shared by kvr_index.c, kvr_index_match.c, kvr_index_record.c and
 * kvr_index_verify.c (kvr_index.c describes the layout).  Not for use
 * outside them.  The lookups are inline: they are the request path's
 * inner loop.
 */

#ifndef _KVR_INDEX_INT_H_INCLUDED_
#define _KVR_INDEX_INT_H_INCLUDED_


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


/* this process's runs, a slot each (kvr_index_match.c) */
extern kvr_index_run_t  kvr_index_runs[KVR_INDEX_MAX_SLOTS];


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


static inline kvr_index_slot_t *
kvr_index_slot_get(kvr_index_t *ix, int slot)
{
    if (slot < 0 || slot >= KVR_INDEX_MAX_SLOTS || !ix->slots[slot].in_use) {
        return NULL;
    }

    return &ix->slots[slot];
}

static inline uint32_t
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

static inline uint32_t
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

/*
 * How many of hashes[0..n-1] lie one after the other on the lru list from
 * entry e on (e holds hashes[0]); *last is the entry of the final one.
 * A sequence inserted in one go sits in consecutive entries (fresh ones,
 * or ones freed tail first and so taken back in order): guessing that the
 * next one is last + 1 makes each step's loads independent of the step
 * before; the list is followed as it is where the guess fails.  Entries
 * on a slot's list are all of its generation: no need to check.
 */

static inline size_t
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


#endif /* _KVR_INDEX_INT_H_INCLUDED_ */
