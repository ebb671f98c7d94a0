/*
 * Copyright (C) kvroute developers
 *
 * Linear probing; a freed entry is filled by shifting the entries of its
 * probe run back (no tombstones), so lookups stay short however long the
 * table runs.
 */


#include <string.h>

#include "kvr_pins.h"


static uint32_t kvr_pins_home(const kvr_pins_t *pins, uint64_t hash,
    uint32_t slot);
static kvr_pin_t *kvr_pins_find(const kvr_pins_t *pins, uint64_t hash,
    uint32_t slot);
static int kvr_pins_add(kvr_pins_t *pins, uint64_t hash, uint32_t slot,
    uint32_t blocks);
static int kvr_pins_drop(kvr_pins_t *pins, uint64_t hash, uint32_t slot);
static void kvr_pins_unlink(kvr_pins_t *pins, uint32_t hole);


size_t
kvr_pins_size(size_t size)
{
    size_t  entries;

    if (size < sizeof(kvr_pins_t) + 2 * sizeof(kvr_pin_t)) {
        return 0;
    }

    entries = 2;

    while (entries <= UINT32_MAX / 4
           && sizeof(kvr_pins_t) + 2 * entries * sizeof(kvr_pin_t) <= size)
    {
        entries *= 2;
    }

    return sizeof(kvr_pins_t) + entries * sizeof(kvr_pin_t);
}


kvr_pins_t *
kvr_pins_init(void *region, size_t size)
{
    size_t       bytes, entries;
    kvr_pins_t  *pins;

    bytes = kvr_pins_size(size);

    if (region == NULL || ((uintptr_t) region & 7) != 0 || bytes == 0) {
        return NULL;
    }

    entries = (bytes - sizeof(kvr_pins_t)) / sizeof(kvr_pin_t);

    pins = region;
    memset(pins, 0, bytes);

    pins->mask = (uint32_t) entries - 1;
    pins->limit = (uint32_t) (entries / 4 * 3);

    return pins;
}


void
kvr_pins_clear(kvr_pins_t *pins)
{
    memset(pins->entries, 0, ((size_t) pins->mask + 1) * sizeof(kvr_pin_t));
    memset(pins->distinct, 0, sizeof(pins->distinct));
    memset(pins->unshared, 0, sizeof(pins->unshared));

    pins->used = 0;
    pins->generation++;
}


void
kvr_pins_charge(kvr_pins_t *pins, int slot, const uint64_t *hashes,
    uint32_t n, uint64_t out, kvr_pins_charge_t *charge)
{
    uint32_t  i, looked, run;

    charge->slot = -1;

    if (slot < 0 || slot >= KVR_PINS_MAX_SLOTS) {
        return;
    }

    looked = n < KVR_PINS_MAX_BLOCKS ? n : KVR_PINS_MAX_BLOCKS;

    charge->slot = slot;
    charge->blocks = looked;
    charge->unshared = out + (n - looked);
    charge->generation = pins->generation;

    for (i = 0; i < looked; i += KVR_PINS_STRIDE) {
        run = looked - i < KVR_PINS_STRIDE ? looked - i : KVR_PINS_STRIDE;

        if (!kvr_pins_add(pins, hashes[i], (uint32_t) slot, run)) {
            /* full: this run is this request's own until it ends */
            charge->unshared += run;
            pins->undeduped += run;
        }
    }

    pins->unshared[slot] += charge->unshared;
}


void
kvr_pins_release(kvr_pins_t *pins, const uint64_t *hashes,
    kvr_pins_charge_t *charge)
{
    int       slot;
    uint32_t  i;

    slot = charge->slot;
    charge->slot = -1;

    if (slot < 0 || charge->generation != pins->generation) {
        return;
    }

    /*
     * a block counted apart while the table was full may since have got
     * an entry through another request: then that entry is dropped and
     * the other request's release finds none, which evens out
     */

    for (i = 0; i < charge->blocks; i += KVR_PINS_STRIDE) {
        (void) kvr_pins_drop(pins, hashes[i], (uint32_t) slot);
    }

    pins->unshared[slot] -= pins->unshared[slot] < charge->unshared
                            ? pins->unshared[slot] : charge->unshared;
}


uint64_t
kvr_pins_count(const kvr_pins_t *pins, int slot)
{
    if (slot < 0 || slot >= KVR_PINS_MAX_SLOTS) {
        return 0;
    }

    return pins->distinct[slot] + pins->unshared[slot];
}


uint32_t
kvr_pins_leading(const kvr_pins_t *pins, int slot, const uint64_t *hashes,
    uint32_t n)
{
    uint32_t  lo, hi, mid, looked;

    if (slot < 0 || slot >= KVR_PINS_MAX_SLOTS || pins->distinct[slot] == 0) {
        return 0;
    }

    looked = n < KVR_PINS_MAX_BLOCKS ? n : KVR_PINS_MAX_BLOCKS;

    /* the largest lo with the runs 0 .. lo - 1 pinned */

    lo = 0;
    hi = (looked + KVR_PINS_STRIDE - 1) / KVR_PINS_STRIDE;

    while (lo < hi) {
        mid = lo + (hi - lo + 1) / 2;

        if (kvr_pins_find(pins, hashes[(mid - 1) * KVR_PINS_STRIDE],
                          (uint32_t) slot))
        {
            lo = mid;

        } else {
            hi = mid - 1;
        }
    }

    lo *= KVR_PINS_STRIDE;

    return lo < looked ? lo : looked;
}


/* block hashes are well mixed already: fold the slot in and mask */

static uint32_t
kvr_pins_home(const kvr_pins_t *pins, uint64_t hash, uint32_t slot)
{
    hash ^= (uint64_t) (slot + 1) * 0x9e3779b97f4a7c15ULL;
    hash ^= hash >> 29;

    return (uint32_t) hash & pins->mask;
}


static kvr_pin_t *
kvr_pins_find(const kvr_pins_t *pins, uint64_t hash, uint32_t slot)
{
    uint32_t          i;
    const kvr_pin_t  *e;

    for (i = kvr_pins_home(pins, hash, slot); /* void */ ;
         i = (i + 1) & pins->mask)
    {
        e = &pins->entries[i];

        if (e->refs == 0) {
            return NULL;
        }

        if (e->hash == hash && e->slot == slot) {
            return (kvr_pin_t *) e;
        }
    }
}


/* 1 when counted in the table, 0 when the table is full */

static int
kvr_pins_add(kvr_pins_t *pins, uint64_t hash, uint32_t slot, uint32_t blocks)
{
    uint32_t    i;
    kvr_pin_t  *e;

    for (i = kvr_pins_home(pins, hash, slot); /* void */ ;
         i = (i + 1) & pins->mask)
    {
        e = &pins->entries[i];

        if (e->refs == 0) {
            break;
        }

        if (e->hash == hash && e->slot == slot) {
            e->refs++;
            return 1;
        }
    }

    if (pins->used >= pins->limit) {
        return 0;
    }

    e->hash = hash;
    e->slot = (uint16_t) slot;
    e->blocks = (uint16_t) blocks;
    e->refs = 1;

    pins->used++;
    pins->distinct[slot] += blocks;

    return 1;
}


/* 1 when the block had an entry */

static int
kvr_pins_drop(kvr_pins_t *pins, uint64_t hash, uint32_t slot)
{
    kvr_pin_t  *e;

    e = kvr_pins_find(pins, hash, slot);

    if (e == NULL) {
        return 0;
    }

    if (--e->refs > 0) {
        return 1;
    }

    pins->used--;
    pins->distinct[slot] -= e->blocks;

    kvr_pins_unlink(pins, (uint32_t) (e - pins->entries));

    return 1;
}


/*
 * Backward shift: each later entry of the run that may live at the hole
 * (its home is not between the hole and itself, cyclically) moves there,
 * and its old place becomes the hole.
 */

static void
kvr_pins_unlink(kvr_pins_t *pins, uint32_t hole)
{
    uint32_t    i, home;
    kvr_pin_t  *e;

    pins->entries[hole].refs = 0;

    for (i = (hole + 1) & pins->mask; /* void */ ; i = (i + 1) & pins->mask) {
        e = &pins->entries[i];

        if (e->refs == 0) {
            return;
        }

        home = kvr_pins_home(pins, e->hash, e->slot);

        if (((i - home) & pins->mask) >= ((i - hole) & pins->mask)) {
            pins->entries[hole] = *e;
            e->refs = 0;
            hole = i;
        }
    }
}
