/*
 * Copyright (C) kvroute developers
 *
 * The segment cache (kvr_tok_cache.h): a chained hash table of entries on
 * a doubly linked LRU list.  One allocation per entry holds its ids and
 * its key bytes.
 */

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "kvr_tok_cache.h"


/* malloc's own overhead per block, counted in the bound */
#define KVR_TOK_CACHE_MALLOC  16

/* one bucket per this many bytes of the bound: chains stay short */
#define KVR_TOK_CACHE_SPREAD  512


typedef struct kvr_tok_cache_entry_s  kvr_tok_cache_entry_t;

struct kvr_tok_cache_entry_s {
    kvr_tok_cache_entry_t  *chain;
    kvr_tok_cache_entry_t  *prev;     /* towards the most recently used */
    kvr_tok_cache_entry_t  *next;
    uint64_t                hash;
    size_t                  len;
    size_t                  n_ids;
    uint32_t                ids[];    /* then the len key bytes */
};


struct kvr_tok_cache_s {
    kvr_tok_cache_entry_t       **buckets;
    size_t                        mask;
    kvr_tok_cache_entry_t        *head;     /* most recently used */
    kvr_tok_cache_entry_t        *tail;
    uint64_t                      seed;
    kvr_tokenizer_cache_stats_t   st;
};


kvr_tok_cache_t *
kvr_tok_cache_create(size_t max_bytes)
{
    size_t            n;
    kvr_tok_cache_t  *c;

    c = calloc(1, sizeof(kvr_tok_cache_t));
    if (c == NULL) {
        return NULL;
    }

    n = 64;

    while (n < max_bytes / KVR_TOK_CACHE_SPREAD && n < ((size_t) 1 << 24)) {
        n <<= 1;
    }

    c->buckets = calloc(n, sizeof(kvr_tok_cache_entry_t *));
    if (c->buckets == NULL) {
        free(c);
        return NULL;
    }

    c->mask = n - 1;
    c->st.max_bytes = max_bytes;

    /* a secret seed: segments crafted to share a chain are hard to find */
    if (getrandom(&c->seed, sizeof(c->seed), GRND_NONBLOCK)
        != (ssize_t) sizeof(c->seed))
    {
        c->seed = (uint64_t) (uintptr_t) c;
    }

    return c;
}


void
kvr_tok_cache_free(kvr_tok_cache_t *c)
{
    kvr_tok_cache_entry_t  *e, *next;

    if (c == NULL) {
        return;
    }

    for (e = c->head; e != NULL; e = next) {
        next = e->next;
        free(e);
    }

    free(c->buckets);
    free(c);
}


uint64_t
kvr_tok_cache_hash(const kvr_tok_cache_t *c, const uint8_t *key,
    size_t len)
{
    return XXH3_64bits_withSeed(key, len, c->seed);
}


size_t
kvr_tok_cache_entry_size(size_t len, size_t n_ids)
{
    return sizeof(kvr_tok_cache_entry_t) + n_ids * sizeof(uint32_t) + len
           + KVR_TOK_CACHE_MALLOC;
}


static const uint8_t *
kvr_tok_cache_key(const kvr_tok_cache_entry_t *e)
{
    return (const uint8_t *) (e->ids + e->n_ids);
}


static void
kvr_tok_cache_unlink(kvr_tok_cache_t *c, kvr_tok_cache_entry_t *e)
{
    if (e->prev != NULL) {
        e->prev->next = e->next;

    } else {
        c->head = e->next;
    }

    if (e->next != NULL) {
        e->next->prev = e->prev;

    } else {
        c->tail = e->prev;
    }
}


static void
kvr_tok_cache_push_front(kvr_tok_cache_t *c, kvr_tok_cache_entry_t *e)
{
    e->prev = NULL;
    e->next = c->head;

    if (c->head != NULL) {
        c->head->prev = e;

    } else {
        c->tail = e;
    }

    c->head = e;
}


static kvr_tok_cache_entry_t *
kvr_tok_cache_find(const kvr_tok_cache_t *c, const uint8_t *key, size_t len,
    uint64_t hash)
{
    kvr_tok_cache_entry_t  *e;

    for (e = c->buckets[hash & c->mask]; e != NULL; e = e->chain) {
        if (e->hash == hash && e->len == len
            && memcmp(kvr_tok_cache_key(e), key, len) == 0)
        {
            return e;
        }
    }

    return NULL;
}


const uint32_t *
kvr_tok_cache_get(kvr_tok_cache_t *c, const uint8_t *key, size_t len,
    uint64_t hash, size_t *n_ids)
{
    kvr_tok_cache_entry_t  *e;

    e = kvr_tok_cache_find(c, key, len, hash);

    if (e == NULL) {
        c->st.misses++;
        return NULL;
    }

    c->st.hits++;

    if (c->head != e) {
        kvr_tok_cache_unlink(c, e);
        kvr_tok_cache_push_front(c, e);
    }

    *n_ids = e->n_ids;

    return e->ids;
}


static void
kvr_tok_cache_evict(kvr_tok_cache_t *c)
{
    kvr_tok_cache_entry_t  *e, **pp;

    e = c->tail;
    kvr_tok_cache_unlink(c, e);

    for (pp = &c->buckets[e->hash & c->mask]; *pp != e; pp = &(*pp)->chain)
    {
        /* void */
    }

    *pp = e->chain;

    c->st.bytes -= kvr_tok_cache_entry_size(e->len, e->n_ids);
    c->st.entries--;
    c->st.evictions++;

    free(e);
}


int
kvr_tok_cache_put(kvr_tok_cache_t *c, const uint8_t *key, size_t len,
    uint64_t hash, const uint32_t *ids, size_t n_ids)
{
    size_t                  size;
    kvr_tok_cache_entry_t  *e, **bucket;

    /* one entry may take half the bound, so a hot one is not thrashed */
    if (n_ids > c->st.max_bytes || len > c->st.max_bytes) {
        return 1;
    }

    size = kvr_tok_cache_entry_size(len, n_ids);

    if (size > c->st.max_bytes / 2
        || kvr_tok_cache_find(c, key, len, hash) != NULL)
    {
        return 1;
    }

    while (c->st.bytes + size > c->st.max_bytes) {
        kvr_tok_cache_evict(c);
    }

    e = malloc(size - KVR_TOK_CACHE_MALLOC);
    if (e == NULL) {
        return -1;
    }

    e->hash = hash;
    e->len = len;
    e->n_ids = n_ids;

    if (n_ids != 0) {
        memcpy(e->ids, ids, n_ids * sizeof(uint32_t));
    }

    if (len != 0) {
        memcpy((uint8_t *) (e->ids + n_ids), key, len);
    }

    bucket = &c->buckets[hash & c->mask];
    e->chain = *bucket;
    *bucket = e;

    kvr_tok_cache_push_front(c, e);

    c->st.bytes += size;
    c->st.entries++;

    return 0;
}


void
kvr_tok_cache_stats(const kvr_tok_cache_t *c, kvr_tokenizer_cache_stats_t *st)
{
    *st = c->st;
}
