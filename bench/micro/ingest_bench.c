/*
 * Copyright (C) kvroute developers
 *
 * What the KV events helper does per message, on one core: decode vLLM's
 * msgpack batch, re-key every block from its token ids, keep the
 * engine-hash map and add the block to the shared index, through the
 * helper's own call (kvr_kvstate_batch(); the lock taken by nginx around
 * it is not included).  Blocks per second, for batches of many small
 * events and of few large ones, steady state (every stored block later
 * removed, so the index stays at its working size).
 *
 *   make bench-ingest
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <msgpack.h>

#include "kvr_events.h"
#include "kvr_kvstate.h"


#define REGION   (256u << 20)
#define BS       16


static kvr_kvstate_t   state;
static kvr_index_t    *index_;
static uint64_t        seq;


static double
cpu_seconds(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);

    return ts.tv_sec + ts.tv_nsec / 1e9;
}


/* a batch of events BlockStored (blocks each), then as many BlockRemoved */

static void
pack_batch(msgpack_sbuffer *sb, uint64_t *next_hash, uint32_t events,
    uint32_t blocks, int removed)
{
    uint32_t         e, b, t;
    msgpack_packer   pk;

    msgpack_sbuffer_clear(sb);
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);

    msgpack_pack_array(&pk, 2);
    msgpack_pack_double(&pk, 1.0);
    msgpack_pack_array(&pk, events);

    for (e = 0; e < events; e++) {
        if (removed) {
            msgpack_pack_array(&pk, 2);
            msgpack_pack_str_with_body(&pk, "BlockRemoved", 12);
            msgpack_pack_array(&pk, blocks);

            for (b = 0; b < blocks; b++) {
                msgpack_pack_uint64(&pk, (*next_hash)++);
            }

            continue;
        }

        msgpack_pack_array(&pk, 6);
        msgpack_pack_str_with_body(&pk, "BlockStored", 11);
        msgpack_pack_array(&pk, blocks);

        for (b = 0; b < blocks; b++) {
            msgpack_pack_uint64(&pk, (*next_hash)++);
        }

        msgpack_pack_nil(&pk);
        msgpack_pack_array(&pk, blocks * BS);

        for (t = 0; t < blocks * BS; t++) {
            msgpack_pack_uint32(&pk, (uint32_t) rand() % 151643);
        }

        msgpack_pack_uint32(&pk, BS);
        msgpack_pack_nil(&pk);
    }
}


static void
run(kvr_events_decoder_t *dec, uint32_t events, uint32_t blocks, int rounds)
{
    int                 r, reset;
    double              t0, spent;
    uint64_t            h, first, stored;
    msgpack_sbuffer     add, del;
    kvr_event_batch_t   batch;

    msgpack_sbuffer_init(&add);
    msgpack_sbuffer_init(&del);

    spent = 0;
    stored = 0;
    h = 1;

    for (r = 0; r < rounds; r++) {
        first = h;
        pack_batch(&add, &h, events, blocks, 0);
        h = first;
        pack_batch(&del, &h, events, blocks, 1);

        t0 = cpu_seconds();
        kvr_kvstate_batch(&state, index_, dec, seq++, (uint8_t *) add.data,
                          add.size, &batch, &reset);
        kvr_kvstate_batch(&state, index_, dec, seq++, (uint8_t *) del.data,
                          del.size, &batch, &reset);
        spent += cpu_seconds() - t0;

        stored += (uint64_t) events * blocks;
    }

    printf("%6u events x %3u blocks: %.2f M blocks/s stored and removed "
           "(%.0f ns a block), %llu blocks\n", events, blocks,
           stored / spent / 1e6, spent * 1e9 / stored,
           (unsigned long long) stored);

    msgpack_sbuffer_destroy(&add);
    msgpack_sbuffer_destroy(&del);
}


int
main(void)
{
    int                    slot;
    void                  *region;
    kvr_events_limits_t    limits;
    kvr_events_decoder_t  *dec;

    region = calloc(1, REGION);
    index_ = kvr_index_init(region, REGION);
    slot = kvr_index_slot(index_, "engine", 6);

    kvr_kvstate_init(&state, slot, BS, 1u << 22);
    kvr_events_limits_default(&limits);
    dec = kvr_events_decoder_create(&limits);

    run(dec, 64, 1, 2000);
    run(dec, 8, 64, 1000);
    run(dec, 1, 148, 2000);

    /* every batch applied, every block stored and removed */

    if (state.stats.rejected != 0 || state.stats.gaps != 0
        || state.stats.stored != state.stats.removed
        || state.stats.stored == 0)
    {
        fprintf(stderr, "ingest_bench: batches not applied as packed\n");
        return 1;
    }

    printf("index: %zu bytes per entry\n",
           (size_t) REGION / (size_t) ({ kvr_index_stats_t s;
                                        kvr_index_stats(index_, &s);
                                        s.capacity; }));

    kvr_events_decoder_destroy(dec);
    kvr_kvstate_free(&state);
    free(region);

    return 0;
}
