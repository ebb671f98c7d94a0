/*
 * Copyright (C) kvroute developers
 *
 * kvr_index_clear_all(): what a process killed inside the index's lock
 * leaves is wiped, the slots stay.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kvr_index.h"
#include "tap.h"


int kvr_index_verify(kvr_index_t *ix);


#define REGION  (512 * 1024)


int
main(void)
{
    int                    a, b;
    void                  *region;
    size_t                 i;
    uint32_t               overlap[2];
    uint64_t               seq[40];
    kvr_index_t           *ix;
    kvr_index_stats_t      st;
    kvr_index_slot_info_t  info;

    region = malloc(REGION);
    memset(region, 0, REGION);
    ix = kvr_index_init(region, REGION);
    tap_ok(ix != NULL, "index formatted");

    a = kvr_index_slot(ix, "10.0.0.1:8000", 13);
    b = kvr_index_slot(ix, "10.0.0.2:8000", 13);
    kvr_index_slot_set_capacity(ix, a, 30);

    for (i = 0; i < 40; i++) {
        seq[i] = 0x1234567800ULL + i;
    }

    kvr_index_record(ix, a, seq, 40);
    kvr_index_record(ix, b, seq, 20);
    kvr_index_add_ref(ix, b, 99);
    tap_is(kvr_index_match(ix, a, seq, 40), 30, "capacity 30 kept 30");
    tap_is(kvr_index_match(ix, b, seq, 20), 20, "b holds 20");

    /* as the lock is taken after a process died holding it */
    kvr_index_clear_all(ix);

    tap_is(kvr_index_verify(ix), 0, "cleared index verifies");
    tap_is(kvr_index_match(ix, a, seq, 40), 0, "a holds nothing");
    tap_is(kvr_index_match(ix, b, seq, 20), 0, "b holds nothing");
    tap_is(kvr_index_match(ix, b, (uint64_t []) { 99 }, 1), 0,
           "references gone too");

    kvr_index_stats(ix, &st);
    tap_is(st.entries, 0, "no entries");

    tap_is(kvr_index_slot(ix, "10.0.0.1:8000", 13), a, "slot a kept");
    tap_is(kvr_index_slot(ix, "10.0.0.2:8000", 13), b, "slot b kept");
    kvr_index_slot_info(ix, a, &info);
    tap_is(info.capacity, 30, "a's capacity kept");
    tap_is(info.blocks, 0, "a's blocks counted 0");

    /* and it works as before */
    kvr_index_record(ix, a, seq, 40);
    kvr_index_record(ix, b, seq, 20);
    overlap[0] = overlap[1] = 0;
    kvr_index_match_slots(ix, (int []) { a, b }, 2, seq, 40, overlap);
    tap_is(overlap[0], 30, "a records again, within its capacity");
    tap_is(overlap[1], 20, "b records again");
    tap_is(kvr_index_verify(ix), 0, "verifies after new records");

    free(region);

    return tap_done();
}
