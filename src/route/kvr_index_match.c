/*
 * Copyright (C) kvroute developers
 *
 * Lookups in the block index (kvr_index.h): how long a prefix of a
 * sequence each slot holds, block by block or by jumps, and the runs
 * found whole, remembered for the record() that follows.
 */

#include <stdint.h>
#include <string.h>

#include "kvr_index.h"
#include "kvr_index_int.h"


kvr_index_run_t  kvr_index_runs[KVR_INDEX_MAX_SLOTS];


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


size_t
kvr_index_match_groups(kvr_index_t *ix, int slot, const uint64_t *hashes,
    size_t n, size_t from, size_t group)
{
    size_t  q, end;

    if (group <= 1) {
        return (from < n) ? kvr_index_match(ix, slot, hashes + from, n - from)
                          : 0;
    }

    if (kvr_index_slot_get(ix, slot) == NULL) {
        return 0;
    }

    /* the groups from the one holding block `from`, each by its last key */

    for (q = from / group; (q + 1) * group <= n; q++) {
        if (kvr_index_find(ix, slot, hashes[(q + 1) * group - 1]) == 0) {
            break;
        }
    }

    end = q * group;

    /* less than one offloaded block past `from` is not loaded */

    return (end >= from + group) ? end - from : 0;
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
