/*
 * Copyright (C) kvroute developers
 *
 * kvr_index_match_slots_jump() against the exact block-by-block match,
 * and kvr_index_record()'s fast path for a sequence recorded before.
 */


#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "kvr_index.h"


#define REGION  (4 * 1024 * 1024)


int kvr_index_verify(kvr_index_t *ix);


/*
 * The documented jump, written out with single-block lookups: probes 0,
 * stride, 2 * stride, ... while present, then the last gap block by block.
 */
static uint32_t
ref_jump(kvr_index_t *ix, int slot, const uint64_t *h, size_t n,
    size_t stride)
{
    size_t  run, end, i;

    if (n == 0 || kvr_index_match(ix, slot, h, 1) == 0) {
        return 0;
    }

    for (run = 0;
         run + stride < n && kvr_index_match(ix, slot, h + run + stride, 1);
         run += stride)
    {
        /* void */
    }

    end = (run + stride < n) ? run + stride : n;

    for (i = run + 1; i < end; i++) {
        if (kvr_index_match(ix, slot, h + i, 1) == 0) {
            break;
        }
    }

    return (uint32_t) i;
}


int
main(void)
{
    int           slots[3];
    void         *region;
    size_t        i, n, len, stride, trial, agree;
    uint32_t      exact[3], jump[3];
    uint64_t      seq[300];
    kvr_index_t  *ix;

    region = calloc(1, REGION);
    ix = kvr_index_init(region, REGION);
    tap_ok(ix != NULL, "index formatted");

    slots[0] = kvr_index_slot(ix, "a", 1);
    slots[1] = kvr_index_slot(ix, "b", 1);
    slots[2] = kvr_index_slot(ix, "c", 1);

    for (i = 0; i < 300; i++) {
        seq[i] = 0x1234567890abcdefULL * (i + 1) ^ (i << 40);
    }

    /* leading runs of every length, several strides: always exact */

    agree = 0;

    for (trial = 0; trial < 400; trial++) {
        len = (size_t) rand() % 300;
        n = (size_t) rand() % 300;
        stride = 2 + (size_t) rand() % 40;

        kvr_index_clear_slot(ix, slots[1]);

        if (len) {
            kvr_index_record(ix, slots[1], seq, len);
        }

        kvr_index_match_slots(ix, slots, 3, seq, n, exact);
        kvr_index_match_slots_jump(ix, slots, 3, seq, n, stride, jump);

        agree += (memcmp(exact, jump, sizeof(exact)) == 0);
    }

    tap_is(agree, 400, "leading runs: jump equals exact in 400 trials");

    /* slot a holds 100 blocks, slot c the first 37 */
    kvr_index_clear_slot(ix, slots[1]);
    kvr_index_record(ix, slots[0], seq, 100);
    kvr_index_record(ix, slots[2], seq, 37);

    kvr_index_match_slots_jump(ix, slots, 3, seq, 150, 16, jump);
    tap_is(jump[0], 100, "a: 100");
    tap_is(jump[1], 0, "b: nothing");
    tap_is(jump[2], 37, "c: 37");

    /* a hole at a probe point is seen */
    kvr_index_remove_ref(ix, slots[0], seq[48]);
    kvr_index_match_slots_jump(ix, slots, 1, seq, 150, 16, jump);
    tap_is(jump[0], 48, "hole at a probe point: 48");

    /* a hole between two present probes is not: the documented limit */
    kvr_index_record(ix, slots[0], seq, 100);
    kvr_index_remove_ref(ix, slots[0], seq[20]);
    kvr_index_match_slots_jump(ix, slots, 1, seq, 100, 16, jump);
    kvr_index_match_slots(ix, slots, 1, seq, 100, exact);
    tap_is(exact[0], 20, "exact sees the hole at 20");
    tap_ok(jump[0] >= exact[0], "jump never reports less than exact");

    /* stride below 2 is the exact walk */
    kvr_index_match_slots_jump(ix, slots, 1, seq, 100, 1, jump);
    tap_is(jump[0], 20, "stride 1: exact");

    /*
     * lists out of sequence order (sequences sharing blocks recorded in
     * turn, sub-sequences, holes, capacity trims), so that following the
     * list stops early or never starts: still the documented jump's result
     */

    kvr_index_release_slot(ix, slots[0]);
    kvr_index_release_slot(ix, slots[1]);
    kvr_index_release_slot(ix, slots[2]);
    slots[0] = kvr_index_slot(ix, "x", 1);
    slots[1] = kvr_index_slot(ix, "y", 1);
    slots[2] = kvr_index_slot(ix, "z", 1);
    kvr_index_slot_set_capacity(ix, slots[2], 150);

    agree = 0;

    for (trial = 0; trial < 3000; trial++) {
        size_t    from, k;
        uint32_t  want[3];

        k = (size_t) rand() % 3;
        from = (size_t) rand() % 4 == 0 ? (size_t) rand() % 200 : 0;
        len = 1 + (size_t) rand() % 100;

        switch (rand() % 4) {
        case 0:
            kvr_index_record(ix, slots[k], seq + from, len);
            break;
        case 1:
            kvr_index_remove_ref(ix, slots[k], seq[(size_t) rand() % 300]);
            break;
        case 2:
            if (rand() % 20 == 0) {
                kvr_index_clear_slot(ix, slots[k]);
            }
            break;
        default:
            kvr_index_record(ix, slots[k], seq, len);
            break;
        }

        n = (size_t) rand() % 300;
        stride = 2 + (size_t) rand() % 20;

        kvr_index_match_slots_jump(ix, slots, 3, seq, n, stride, jump);

        for (i = 0; i < 3; i++) {
            want[i] = ref_jump(ix, slots[i], seq, n, stride);
        }

        agree += (memcmp(want, jump, sizeof(jump)) == 0);
    }

    tap_is(agree, 3000,
           "lists out of order: the documented jump's result in 3000 trials");
    tap_is(kvr_index_verify(ix), 0, "structures sound after the trials");

    /*
     * record() after match_slots_jump() reuses the run the match found;
     * a twin index given the same calls without the matches must end up
     * byte for byte the same, also when the index changed in between
     */
    {
        int           ta[3], tb[3];
        void         *ra, *rb;
        size_t        k, base, same, steps;
        uint32_t      ov[3];
        kvr_index_t  *a, *b;

        ra = calloc(1, 256 * 1024);
        rb = calloc(1, 256 * 1024);
        a = kvr_index_init(ra, 256 * 1024);
        b = kvr_index_init(rb, 256 * 1024);

        for (k = 0; k < 3; k++) {
            ta[k] = kvr_index_slot(a, k == 0 ? "p" : k == 1 ? "q" : "r", 1);
            tb[k] = kvr_index_slot(b, k == 0 ? "p" : k == 1 ? "q" : "r", 1);
        }

        kvr_index_slot_set_capacity(a, ta[2], 120);
        kvr_index_slot_set_capacity(b, tb[2], 120);

        same = 0;
        steps = 3000;

        for (trial = 0; trial < steps; trial++) {
            k = (size_t) rand() % 3;
            base = ((size_t) rand() % 4) * 50;
            len = 1 + (size_t) rand() % 140;

            kvr_index_match_slots_jump(a, ta, 3, seq + base, len, 16, ov);

            switch (rand() % 6) {
            case 0:
                /* a change between the match and the record */
                i = base + (size_t) rand() % 10;
                kvr_index_remove_ref(a, ta[k], seq[i]);
                kvr_index_remove_ref(b, tb[k], seq[i]);
                break;
            case 1:
                kvr_index_record(a, ta[(k + 1) % 3], seq + base, len / 2);
                kvr_index_record(b, tb[(k + 1) % 3], seq + base, len / 2);
                break;
            case 2:
                i = (rand() % 2) ? 0 : 90;
                kvr_index_slot_set_capacity(a, ta[0], i);
                kvr_index_slot_set_capacity(b, tb[0], i);
                break;
            default:
                break;
            }

            kvr_index_record(a, ta[k], seq + base, len);
            kvr_index_record(b, tb[k], seq + base, len);

            same += (memcmp(ra, rb, 256 * 1024) == 0);
        }

        tap_is(same, steps,
               "record after a match: the same index as without matches");
        tap_is(kvr_index_verify(a), 0, "structures sound (with matches)");

        free(ra);
        free(rb);
    }

    /* fast path: re-recording a run splices it to the head */
    kvr_index_release_slot(ix, slots[0]);
    kvr_index_release_slot(ix, slots[1]);
    kvr_index_release_slot(ix, slots[2]);
    slots[0] = kvr_index_slot(ix, "fast", 4);

    kvr_index_record(ix, slots[0], seq, 10);            /* A */
    kvr_index_record(ix, slots[0], seq + 100, 10);      /* B */
    kvr_index_record(ix, slots[0], seq + 200, 10);      /* C */
    tap_is(kvr_index_record(ix, slots[0], seq, 10), 0, "A again: no eviction");
    tap_is(kvr_index_verify(ix), 0, "structures sound after a splice");

    /* now A, C, B from most to least recent; capacity 20 and B again */
    kvr_index_slot_set_capacity(ix, slots[0], 20);
    tap_is(kvr_index_record(ix, slots[0], seq + 100, 10), 10,
           "B again at capacity 20: 10 evicted");
    tap_is(kvr_index_match(ix, slots[0], seq, 10), 10, "A stays");
    tap_is(kvr_index_match(ix, slots[0], seq + 100, 10), 10, "B stays");
    tap_is(kvr_index_match(ix, slots[0], seq + 200, 10), 0,
           "C, the least recent, went");
    tap_is(kvr_index_verify(ix), 0, "structures sound after the trim");

    /* B is the head: re-recording it changes nothing */
    tap_is(kvr_index_record(ix, slots[0], seq + 100, 10), 0, "B at head");
    kvr_index_record(ix, slots[0], seq + 200, 5);       /* C's head */
    tap_is(kvr_index_match(ix, slots[0], seq, 10), 5,
           "C's 5 blocks pushed out A's tail (tail first)");
    tap_is(kvr_index_verify(ix), 0, "structures sound at the end");

    free(region);

    return tap_done();
}
