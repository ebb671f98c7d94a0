/*
 * Copyright (C) kvroute developers
 *
 * Linear probing over a power-of-two table, kept at most 3/4 full;
 * deletion shifts the following run back, so there are no tombstones.
 */


#include <stdlib.h>
#include <string.h>

#include "kvr_emap.h"


#define KVR_EMAP_MIN  1024


typedef struct {
    uint64_t     engine;
    uint64_t     key;
    uint32_t     refs;          /* 0: the cell is empty */
    uint32_t     reserved;
} kvr_emap_cell_t;


struct kvr_emap_s {
    kvr_emap_cell_t  *cells;
    size_t            mask;
    size_t            count;
    size_t            max;
};


static uint32_t kvr_emap_insert(kvr_emap_t *map, uint64_t engine,
    uint64_t key, int count);
static int kvr_emap_grow(kvr_emap_t *map);
static size_t kvr_emap_slot(const kvr_emap_t *map, uint64_t engine);


kvr_emap_t *
kvr_emap_create(size_t max_entries)
{
    kvr_emap_t  *map;

    map = calloc(1, sizeof(kvr_emap_t));
    if (map == NULL) {
        return NULL;
    }

    map->cells = calloc(KVR_EMAP_MIN, sizeof(kvr_emap_cell_t));
    if (map->cells == NULL) {
        free(map);
        return NULL;
    }

    map->mask = KVR_EMAP_MIN - 1;
    map->max = max_entries ? max_entries : 1;

    return map;
}


void
kvr_emap_destroy(kvr_emap_t *map)
{
    if (map) {
        free(map->cells);
        free(map);
    }
}


/* engine hashes are not trusted to be uniform in their low bits */

static size_t
kvr_emap_slot(const kvr_emap_t *map, uint64_t engine)
{
    uint64_t  x;

    x = engine * 0x9e3779b97f4a7c15ULL;
    x ^= x >> 29;

    return (size_t) x & map->mask;
}


uint32_t
kvr_emap_add(kvr_emap_t *map, uint64_t engine, uint64_t key)
{
    return kvr_emap_insert(map, engine, key, 1);
}


uint32_t
kvr_emap_put(kvr_emap_t *map, uint64_t engine, uint64_t key)
{
    return kvr_emap_insert(map, engine, key, 0);
}


/* count: a reference more (add), or held once (put) */

static uint32_t
kvr_emap_insert(kvr_emap_t *map, uint64_t engine, uint64_t key, int count)
{
    size_t            i;
    kvr_emap_cell_t  *c;

    for (i = kvr_emap_slot(map, engine); ; i = (i + 1) & map->mask) {
        c = &map->cells[i];

        if (c->refs == 0) {
            break;
        }

        if (c->engine == engine) {
            if (!count) {
                return 2;
            }

            c->key = key;

            if (c->refs < UINT32_MAX) {
                c->refs++;
            }

            return c->refs;
        }
    }

    if (map->count >= map->max) {
        return 0;
    }

    if ((map->count + 1) * 4 > (map->mask + 1) * 3) {
        if (kvr_emap_grow(map) != 0) {
            return 0;
        }

        return kvr_emap_insert(map, engine, key, count);
    }

    c->engine = engine;
    c->key = key;
    c->refs = 1;
    map->count++;

    return 1;
}


static int
kvr_emap_grow(kvr_emap_t *map)
{
    size_t            i, j, size;
    kvr_emap_cell_t  *old, *cells;

    size = (map->mask + 1) * 2;

    cells = calloc(size, sizeof(kvr_emap_cell_t));
    if (cells == NULL) {
        return -1;
    }

    old = map->cells;
    map->cells = cells;
    size = map->mask + 1;
    map->mask = map->mask * 2 + 1;

    for (i = 0; i < size; i++) {
        if (old[i].refs == 0) {
            continue;
        }

        for (j = kvr_emap_slot(map, old[i].engine);
             cells[j].refs != 0;
             j = (j + 1) & map->mask)
        {
            /* void */
        }

        cells[j] = old[i];
    }

    free(old);

    return 0;
}


int64_t
kvr_emap_remove(kvr_emap_t *map, uint64_t engine, uint64_t *key)
{
    size_t            i, j, home;
    kvr_emap_cell_t  *c;

    for (i = kvr_emap_slot(map, engine); ; i = (i + 1) & map->mask) {
        c = &map->cells[i];

        if (c->refs == 0) {
            return -1;
        }

        if (c->engine == engine) {
            break;
        }
    }

    *key = c->key;

    if (--c->refs > 0) {
        return c->refs;
    }

    map->count--;

    /* shift back the rest of the run, so lookups need no tombstones */

    for (j = (i + 1) & map->mask; map->cells[j].refs != 0;
         j = (j + 1) & map->mask)
    {
        home = kvr_emap_slot(map, map->cells[j].engine);

        /* the cell at j may fill the hole at i if i lies on its probe path */
        if (((j - home) & map->mask) >= ((j - i) & map->mask)) {
            map->cells[i] = map->cells[j];
            map->cells[j].refs = 0;
            i = j;
        }
    }

    map->cells[i].refs = 0;

    return 0;
}


void
kvr_emap_prefetch(kvr_emap_t *map, uint64_t engine)
{
#if defined(__GNUC__)
    __builtin_prefetch(&map->cells[kvr_emap_slot(map, engine)]);
#else
    (void) map;
    (void) engine;
#endif
}


uint64_t
kvr_emap_get(kvr_emap_t *map, uint64_t engine, int *found)
{
    size_t            i;
    kvr_emap_cell_t  *c;

    for (i = kvr_emap_slot(map, engine); ; i = (i + 1) & map->mask) {
        c = &map->cells[i];

        if (c->refs == 0) {
            *found = 0;
            return 0;
        }

        if (c->engine == engine) {
            *found = 1;
            return c->key;
        }
    }
}


void
kvr_emap_each(kvr_emap_t *map, void (*fn)(void *data, uint64_t engine,
    uint64_t key), void *data)
{
    size_t  i;

    for (i = 0; i <= map->mask; i++) {
        if (map->cells[i].refs != 0) {
            fn(data, map->cells[i].engine, map->cells[i].key);
        }
    }
}


void
kvr_emap_clear(kvr_emap_t *map)
{
    memset(map->cells, 0, (map->mask + 1) * sizeof(kvr_emap_cell_t));
    map->count = 0;
}


size_t
kvr_emap_count(kvr_emap_t *map)
{
    return map->count;
}
