/*
 * Copyright (C) kvroute developers
 *
 * Unit tests of the pinned-block table: dedup per server, reference
 * counts, release, the leading run, runs of KVR_PINS_STRIDE blocks, a full
 * table, clearing.
 */


#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "kvr_pins.h"


/* a chain of n hashes sharing the first `shared` with chain `base` */
static void
chain(uint64_t *h, uint32_t n, uint64_t base, uint32_t shared, uint64_t own)
{
    uint32_t  i;

    for (i = 0; i < n; i++) {
        h[i] = (i < shared ? base : own) * 0x100000001b3ULL
               + (i + 1) * 0x9e3779b97f4a7c15ULL;
        h[i] ^= h[i] >> 31;
    }
}


/* checks that every entry can be found from its home (no broken runs) */
static int
consistent(const kvr_pins_t *p)
{
    uint32_t  i, n, slot;
    uint64_t  per[KVR_PINS_MAX_SLOTS];

    memset(per, 0, sizeof(per));
    n = 0;

    for (i = 0; i <= p->mask; i++) {
        if (p->entries[i].refs == 0) {
            continue;
        }

        slot = p->entries[i].slot;
        per[slot] += p->entries[i].blocks;
        n++;

        if (kvr_pins_leading(p, (int) slot, &p->entries[i].hash, 1) != 1) {
            return 0;
        }
    }

    if (n != p->used) {
        return 0;
    }

    for (i = 0; i < KVR_PINS_MAX_SLOTS; i++) {
        if (per[i] != p->distinct[i]) {
            return 0;
        }
    }

    return 1;
}


int
main(void)
{
    size_t              size;
    uint32_t            i;
    uint64_t            a[100], b[100], c[1100], many[100][20];
    void               *region, *small;
    kvr_pins_t         *p, *f;
    kvr_pins_charge_t   ca, cb, cm[100], again;

    tap_is(kvr_pins_size(16), 0, "too small for any table");

    size = 64 * 1024;
    region = malloc(size);
    p = kvr_pins_init(region, size);
    tap_ok(p != NULL, "init");
    tap_ok(kvr_pins_size(size) <= size, "fits its region");
    tap_is(p->mask + 1, 2048, "entries: the largest power of two that fits");

    chain(a, 100, 1, 100, 1);
    chain(b, 100, 1, 80, 2);                    /* shares 80 of a's */

    kvr_pins_charge(p, 3, a, 100, 4, &ca);
    tap_is(kvr_pins_count(p, 3), 104, "a: 100 blocks and 4 output");
    tap_is(kvr_pins_count(p, 2), 0, "another server: nothing");

    tap_is(kvr_pins_leading(p, 3, b, 100), 80, "b's pinned leading run");
    tap_is(kvr_pins_leading(p, 3, a, 100), 100, "a's whole chain");
    tap_is(kvr_pins_leading(p, 2, a, 100), 0, "not on another server");

    kvr_pins_charge(p, 3, b, 100, 4, &cb);
    tap_is(kvr_pins_count(p, 3), 128, "b adds 20 distinct and 4 output");
    tap_is(p->distinct[3], 120, "120 distinct blocks");

    kvr_pins_charge(p, 5, b, 100, 0, &again);
    tap_is(kvr_pins_count(p, 5), 100, "the same blocks on another server");
    tap_ok(consistent(p), "table consistent after charges");

    kvr_pins_release(p, a, &ca);
    tap_is(kvr_pins_count(p, 3), 104, "a gone: b's 100 stay pinned");
    tap_is(kvr_pins_leading(p, 3, a, 100), 80, "a's shared part still in");
    tap_is(ca.slot, -1, "a charge is released once");

    kvr_pins_release(p, a, &ca);
    tap_is(kvr_pins_count(p, 3), 104, "a second release does nothing");

    kvr_pins_release(p, b, &cb);
    tap_is(kvr_pins_count(p, 3), 0, "all released");
    tap_is(kvr_pins_count(p, 5), 100, "the other server keeps its own");
    kvr_pins_release(p, b, &again);
    tap_is(p->used, 0, "no entry left");
    tap_ok(consistent(p), "table consistent after releases");

    /* past KVR_PINS_MAX_BLOCKS, blocks count without dedup */
    chain(c, 1100, 7, 1100, 7);
    kvr_pins_charge(p, 1, c, 1100, 0, &ca);
    kvr_pins_charge(p, 1, c, 1100, 0, &cb);
    tap_is(kvr_pins_count(p, 1),
           KVR_PINS_MAX_BLOCKS + 2 * (1100 - KVR_PINS_MAX_BLOCKS),
           "beyond the first blocks: each request's own");
    tap_is(kvr_pins_leading(p, 1, c, 1100), KVR_PINS_MAX_BLOCKS,
           "leading run stops at the looked-up part");
    kvr_pins_release(p, c, &ca);
    kvr_pins_release(p, c, &cb);
    tap_is(kvr_pins_count(p, 1), 0, "released");
    tap_is(p->used, 0, "no entry left");

    /* prompts parting inside a run: the shared run counts whole */
    chain(b, 100, 1, 83, 3);
    kvr_pins_charge(p, 6, a, 100, 0, &ca);
    tap_is(kvr_pins_leading(p, 6, b, 100), 88,
           "parting at 83: the run from 80 counts as shared");
    kvr_pins_charge(p, 6, b, 100, 0, &cb);
    tap_is(kvr_pins_count(p, 6), 112, "b adds its runs from 88 on");
    kvr_pins_release(p, a, &ca);
    kvr_pins_release(p, b, &cb);
    tap_is(kvr_pins_count(p, 6), 0, "released");

    /* a full table counts without dedup and never grows */
    small = malloc(8192);
    f = kvr_pins_init(small, 8192);
    tap_is(f->mask + 1, 256, "a small table");

    for (i = 0; i < 100; i++) {
        chain(many[i], 20, 100 + i, 20, 100 + i);
        kvr_pins_charge(f, 2, many[i], 20, 0, &cm[i]);
    }

    tap_is(f->used, f->limit, "full at its limit");
    tap_is(kvr_pins_count(f, 2), 100 * 20, "every block still counted");
    tap_ok(f->undeduped > 0, "some counted without dedup");
    tap_ok(consistent(f), "table consistent when full");

    for (i = 0; i < 100; i += 2) {
        kvr_pins_release(f, many[i], &cm[i]);
    }

    tap_is(kvr_pins_count(f, 2), 50 * 20, "half released: half counted");
    tap_ok(consistent(f), "table consistent after releases from full");

    for (i = 1; i < 100; i += 2) {
        kvr_pins_release(f, many[i], &cm[i]);
    }

    tap_is(kvr_pins_count(f, 2), 0, "all released from full");
    tap_is(f->used, 0, "empty again");
    free(small);

    /* clearing: older charges are not taken back twice */
    kvr_pins_charge(p, 4, a, 100, 0, &ca);
    kvr_pins_clear(p);
    tap_is(kvr_pins_count(p, 4), 0, "cleared");
    kvr_pins_charge(p, 4, a, 100, 0, &cb);
    kvr_pins_release(p, a, &ca);
    tap_is(kvr_pins_count(p, 4), 100, "a charge from before the clear "
           "does not release a newer one");
    kvr_pins_release(p, a, &cb);
    tap_is(kvr_pins_count(p, 4), 0, "the newer one does");

    kvr_pins_charge(p, -1, a, 100, 5, &ca);
    tap_is(ca.slot, -1, "no slot: nothing charged");
    kvr_pins_charge(p, KVR_PINS_MAX_SLOTS, a, 100, 5, &ca);
    tap_is(ca.slot, -1, "slot out of range: nothing charged");

    free(region);

    return tap_done();
}
