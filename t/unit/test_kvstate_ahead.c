/*
 * Copyright (C) kvroute developers
 *
 * kvr_kvstate_batch() makes each BlockStored's keys while the event
 * before it is applied (the look-ahead that fetches their index buckets
 * early).  Nothing may differ from applying the same events one at a
 * time with kvr_kvstate_apply(): random batches (fixed seed) of stores
 * that are roots, chains going on from the event before, from a block
 * held or never seen, re-announcements, stores of more than one chunk
 * (64 blocks), with extra keys, LoRA names and offload tiers, removals
 * of parents before their children, AllBlocksCleared, are applied both
 * ways to two states and two indexes, and after every batch their
 * counters, engine-hash maps and index slots must be equal.
 */


#include <stdlib.h>
#include <string.h>
#include <msgpack.h>

#include "tap.h"
#include "kvr_kvstate.h"


#define REGION     (4 * 1024 * 1024)
#define BS         4
#define HASHES     300        /* engine hashes drawn from 1 .. HASHES */
#define BATCHES    400
#define MAX_BLOCKS 70


typedef struct {
    uint64_t   engine;
    uint64_t   key;
} pair_t;


typedef struct {
    pair_t    *pairs;
    size_t     n;
} pairs_t;


static msgpack_sbuffer  sb;
static msgpack_packer   pk;
static uint32_t         rnd_state = 12345;
static uint64_t         recent[16];    /* hashes stored lately */


static uint32_t
rnd(uint32_t n)
{
    rnd_state = rnd_state * 1103515245u + 12345u;

    return (rnd_state >> 8) % n;
}


static void
pk_str(const char *s)
{
    msgpack_pack_str_with_body(&pk, s, strlen(s));
}


/*
 * group_idx and kv_cache_spec_kind: a hybrid model's groups, a kind
 * named or learned (the look-ahead must not learn it before its turn)
 */

static void
pk_group(void)
{
    msgpack_pack_uint32(&pk, rnd(2));

    switch (rnd(3)) {
    case 0:
        pk_str("full_attention");
        break;
    case 1:
        pk_str("sliding_window");
        break;
    default:
        msgpack_pack_nil(&pk);
    }
}


/* one event; *last is the last hash a store packed (0: none) */

static void
pk_event(uint64_t *last)
{
    int       dup, grouped;
    uint32_t  i, n, kind;
    uint64_t  h, prev;

    kind = rnd(60);
    prev = *last;

    if (kind == 0) {
        msgpack_pack_array(&pk, 1);
        pk_str("AllBlocksCleared");
        *last = 0;
        return;
    }

    if (kind < 25) {
        n = 1 + rnd(3);
        grouped = (rnd(3) == 0);
        msgpack_pack_array(&pk, grouped ? 5 : 2);
        pk_str("BlockRemoved");
        msgpack_pack_array(&pk, n);

        for (i = 0; i < n; i++) {
            /* often the block the store before put, or one stored lately */
            h = (*last != 0 && rnd(2)) ? *last : recent[rnd(16)];
            msgpack_pack_uint64(&pk, h ? h : 1 + rnd(HASHES));
        }

        if (grouped) {
            msgpack_pack_nil(&pk);
            pk_group();
        }

        return;
    }

    n = (rnd(8) == 0) ? MAX_BLOCKS : 1 + rnd(3);

    /* [tag, hashes, parent, token_ids, block_size, lora_id, medium,
        lora_name, extra_keys, group_idx, kv_cache_spec_kind] */
    grouped = (rnd(3) == 0);
    msgpack_pack_array(&pk, grouped ? 11 : 9);
    pk_str("BlockStored");
    msgpack_pack_array(&pk, n);

    h = 1 + rnd(HASHES);

    /*
     * sometimes the last hash is the first again (held once: the map
     * keeps the first block's key, not the last's)
     */
    dup = (n > 1 && rnd(4) == 0);

    for (i = 0; i < n; i++) {
        *last = (dup && i == n - 1) ? h : (h + i - 1) % HASHES + 1;
        msgpack_pack_uint64(&pk, *last);
        recent[rnd(16)] = *last;
    }

    switch (rnd(4)) {
    case 0:
        msgpack_pack_nil(&pk);
        break;
    case 1:
    case 2:
        if (prev != 0) {
            msgpack_pack_uint64(&pk, prev);
            break;
        }
        /* fall through */
    default:
        msgpack_pack_uint64(&pk, 1 + rnd(HASHES));
    }

    msgpack_pack_array(&pk, n * BS);

    for (i = 0; i < n * BS; i++) {
        msgpack_pack_uint32(&pk, rnd(50));
    }

    msgpack_pack_uint32(&pk, rnd(30) == 0 ? BS * 2 : BS);
    msgpack_pack_nil(&pk);

    switch (rnd(10)) {
    case 0:
        pk_str("CPU");
        break;
    case 1:
        pk_str("DISK");
        break;
    default:
        msgpack_pack_nil(&pk);
    }

    if (rnd(5) == 0) {
        pk_str("lora-a");

    } else {
        msgpack_pack_nil(&pk);
    }

    if (rnd(8) == 0) {
        msgpack_pack_array(&pk, n);

        for (i = 0; i < n; i++) {
            if (rnd(2)) {
                msgpack_pack_array(&pk, 1);
                pk_str("mm-hash");

            } else {
                msgpack_pack_nil(&pk);
            }
        }

    } else {
        msgpack_pack_nil(&pk);
    }

    if (grouped) {
        pk_group();
    }
}


static void
pk_batch(void)
{
    uint32_t  i, n;
    uint64_t  last;

    msgpack_sbuffer_clear(&sb);
    n = 1 + rnd(12);
    last = 0;

    msgpack_pack_array(&pk, 2);
    msgpack_pack_double(&pk, 1.0);
    msgpack_pack_array(&pk, n);

    for (i = 0; i < n; i++) {
        pk_event(&last);
    }
}


/* the other way: each event applied on its own */

typedef struct {
    kvr_kvstate_t  *st;
    kvr_index_t    *ix;
} one_t;


static int
one(void *data, const kvr_event_batch_t *batch, const kvr_event_t *ev)
{
    one_t  *o = data;

    (void) batch;

    kvr_kvstate_apply(o->st, o->ix, ev);

    return 0;
}


static void
collect(void *data, uint64_t engine, uint64_t key)
{
    pairs_t  *p = data;

    p->pairs[p->n].engine = engine;
    p->pairs[p->n].key = key;
    p->n++;
}


static int
cmp_pair(const void *a, const void *b)
{
    const pair_t  *x = a, *y = b;

    if (x->engine != y->engine) {
        return (x->engine < y->engine) ? -1 : 1;
    }

    return (x->key < y->key) ? -1 : (x->key > y->key);
}


/* the map's handles, sorted: maps are compared by content */

static void
pairs_of(kvr_emap_t *map, pairs_t *p)
{
    p->n = 0;

    if (map == NULL) {
        return;
    }

    p->pairs = realloc(p->pairs, (kvr_emap_count(map) + 1) * sizeof(pair_t));
    kvr_emap_each(map, collect, p);
    qsort(p->pairs, p->n, sizeof(pair_t), cmp_pair);
}


static int
maps_equal(kvr_emap_t *a, kvr_emap_t *b)
{
    int             eq;
    static pairs_t  pa, pb;

    if ((a == NULL) != (b == NULL)) {
        return 0;
    }

    pairs_of(a, &pa);
    pairs_of(b, &pb);

    eq = (pa.n == pb.n
          && (pa.n == 0
              || memcmp(pa.pairs, pb.pairs, pa.n * sizeof(pair_t)) == 0));

    return eq;
}


static int
states_equal(kvr_kvstate_t *a, kvr_index_t *ia, kvr_kvstate_t *b,
    kvr_index_t *ib)
{
    int                 s;
    size_t              i;
    kvr_index_stats_t   xa, xb;

    if (memcmp(&a->stats, &b->stats, sizeof(kvr_kvstats_t)) != 0
        || !maps_equal(a->handles, b->handles))
    {
        return 0;
    }

    for (i = 0; i < KVR_KVSTATE_TIERS; i++) {
        if (a->tiers[i].slot != b->tiers[i].slot
            || !maps_equal(a->tiers[i].handles, b->tiers[i].handles))
        {
            return 0;
        }
    }

    kvr_index_stats(ia, &xa);
    kvr_index_stats(ib, &xb);

    if (xa.entries != xb.entries) {
        return 0;
    }

    for (s = 0; s < KVR_INDEX_MAX_SLOTS; s++) {
        if (kvr_index_slot_blocks(ia, s) != kvr_index_slot_blocks(ib, s)) {
            return 0;
        }
    }

    return 1;
}


int
main(void)
{
    int                    slot_a, slot_b, pred_a, pred_b, reset, equal;
    int                    chains;
    void                  *ra, *rb;
    size_t                 i;
    one_t                  o;
    kvr_index_t           *ia, *ib;
    kvr_kvstate_t          a, b;
    kvr_event_batch_t      batch;
    kvr_events_limits_t    lim;
    kvr_events_status_e    rc;
    kvr_events_decoder_t  *dec;

    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    kvr_events_limits_default(&lim);
    dec = kvr_events_decoder_create(&lim);

    ra = calloc(1, REGION);
    rb = calloc(1, REGION);
    ia = kvr_index_init(ra, REGION);
    ib = kvr_index_init(rb, REGION);
    slot_a = kvr_index_slot(ia, "10.0.0.1:8000", 13);
    slot_b = kvr_index_slot(ib, "10.0.0.1:8000", 13);
    pred_a = kvr_index_slot(ia, "10.0.0.1:8000~", 14);
    pred_b = kvr_index_slot(ib, "10.0.0.1:8000~", 14);

    kvr_kvstate_init(&a, slot_a, BS, 100000);
    kvr_kvstate_init(&b, slot_b, BS, 100000);
    a.pred_slot = pred_a;
    b.pred_slot = pred_b;

    o.st = &b;
    o.ix = ib;
    equal = 1;

    for (i = 0; i < BATCHES && equal; i++) {
        pk_batch();

        rc = kvr_kvstate_batch(&a, ia, dec, i, (const uint8_t *) sb.data,
                               sb.size, &batch, &reset);

        if (rc != KVR_EVENTS_OK || batch.n_malformed != 0) {
            printf("#   batch %zu: %s, %u malformed\n", i,
                   kvr_events_status_name(rc), batch.n_malformed);
            equal = 0;
            break;
        }

        kvr_kvstate_sequence(&b, ib, i);
        kvr_events_decode(dec, (const uint8_t *) sb.data, sb.size, &batch,
                          one, &o);

        if (!states_equal(&a, ia, &b, ib)) {
            printf("#   batch %zu differs\n", i);
            equal = 0;
        }
    }

    tap_ok(equal, "%d batches: applied with keys made ahead as one by one",
           BATCHES);

    /* what the batches exercised: else the comparison proves little */
    chains = (a.stats.stored > 1000 && a.stats.reannounced > 50
              && a.stats.orphans > 50 && a.stats.cleared > 10
              && a.stats.tier_stored > 50 && a.stats.removed > 300
              && a.stats.other_group > 50);
    tap_ok(chains, "stored %llu, re-announced %llu, orphans %llu, "
           "cleared %llu, tier blocks %llu, removed %llu, other groups %llu",
           (unsigned long long) a.stats.stored,
           (unsigned long long) a.stats.reannounced,
           (unsigned long long) a.stats.orphans,
           (unsigned long long) a.stats.cleared,
           (unsigned long long) a.stats.tier_stored,
           (unsigned long long) a.stats.removed,
           (unsigned long long) a.stats.other_group);

    kvr_kvstate_free(&a);
    kvr_kvstate_free(&b);
    kvr_events_decoder_destroy(dec);
    msgpack_sbuffer_destroy(&sb);
    free(ra);
    free(rb);

    return tap_done();
}
