/*
 * Copyright (C) kvroute developers
 *
 * Offload tiers from event byte vectors: batches packed as vLLM sends
 * them (array form: BlockStored [tag, hashes, parent, token_ids,
 * block_size, lora_id, medium, lora_name], BlockRemoved [tag, hashes,
 * medium]; docs/engine-events.md "Tiers"), decoded and applied by
 * kvr_kvstate_batch().  Each tier is its own reference-counted slot; a
 * removal in one tier never touches another's entries; the GPU slot is
 * the routing index alone.
 */


#include <stdlib.h>
#include <string.h>
#include <msgpack.h>

#include "tap.h"
#include "kvr_kvstate.h"
#include "kvr_hash.h"


#define REGION  (2 * 1024 * 1024)
#define BS      4
#define NB      4


static msgpack_sbuffer        sb;
static msgpack_packer         pk;
static kvr_events_decoder_t  *dec;
static uint64_t               seq;


static void
pk_str(const char *s)
{
    msgpack_pack_str_with_body(&pk, s, strlen(s));
}


static void
pk_hashes(const uint64_t *h, size_t n)
{
    size_t  i;

    msgpack_pack_array(&pk, n);

    for (i = 0; i < n; i++) {
        msgpack_pack_uint64(&pk, h[i]);
    }
}


/* a batch of one event: [ts, [event], dp_rank] */

static void
pk_batch_start(void)
{
    msgpack_sbuffer_clear(&sb);
    msgpack_pack_array(&pk, 3);
    msgpack_pack_double(&pk, 1761816192.5);
    msgpack_pack_array(&pk, 1);
}


static kvr_events_status_e
pk_batch_apply(kvr_kvstate_t *st, kvr_index_t *ix)
{
    int                reset;
    kvr_event_batch_t  batch;

    msgpack_pack_int(&pk, 0);

    return kvr_kvstate_batch(st, ix, dec, seq++, (const uint8_t *) sb.data,
                             sb.size, &batch, &reset);
}


/* tokens NULL: the offloading connector's form, token_ids [] */

static kvr_events_status_e
store(kvr_kvstate_t *st, kvr_index_t *ix, const char *medium,
    const uint64_t *h, size_t n, const uint64_t *parent,
    const uint32_t *tokens, uint32_t block_size)
{
    size_t  i;

    pk_batch_start();
    msgpack_pack_array(&pk, 8);
    pk_str("BlockStored");
    pk_hashes(h, n);

    if (parent) {
        msgpack_pack_uint64(&pk, *parent);

    } else {
        msgpack_pack_nil(&pk);
    }

    msgpack_pack_array(&pk, tokens ? n * BS : 0);

    for (i = 0; tokens && i < n * BS; i++) {
        msgpack_pack_uint32(&pk, tokens[i]);
    }

    msgpack_pack_uint32(&pk, block_size);
    msgpack_pack_nil(&pk);
    pk_str(medium);
    msgpack_pack_nil(&pk);

    return pk_batch_apply(st, ix);
}


static kvr_events_status_e
removal(kvr_kvstate_t *st, kvr_index_t *ix, const char *medium,
    const uint64_t *h, size_t n)
{
    pk_batch_start();
    msgpack_pack_array(&pk, 3);
    pk_str("BlockRemoved");
    pk_hashes(h, n);
    pk_str(medium);

    return pk_batch_apply(st, ix);
}


static int
slot_of(int *tier_slots, kvr_tier_e tier)
{
    return tier_slots[tier - 1] - 1;
}


static void
test_media(void)
{
    tap_is(kvr_kvstate_tier(NULL, 0), KVR_TIER_GPU, "medium absent: GPU");
    tap_is(kvr_kvstate_tier((const uint8_t *) "gpu", 3), KVR_TIER_GPU,
           "\"gpu\": GPU");
    tap_is(kvr_kvstate_tier((const uint8_t *) "CPU", 3), KVR_TIER_HOST,
           "\"CPU\" (vLLM's CPULoadStoreSpec): host");
    tap_is(kvr_kvstate_tier((const uint8_t *) "CPU_PINNED", 10),
           KVR_TIER_HOST, "\"CPU_PINNED\" (SGLang): host");
    tap_is(kvr_kvstate_tier((const uint8_t *) "Disk", 4), KVR_TIER_DISK,
           "\"Disk\" (vLLM's DiskLoadStoreSpec): disk");
    tap_is(kvr_kvstate_tier((const uint8_t *) "EXTERNAL", 8), KVR_TIER_DISK,
           "\"EXTERNAL\": weighed as disk");
    tap_is(kvr_kvstate_tier((const uint8_t *) "CPUX", 4), KVR_TIER_OTHER,
           "\"CPUX\": not a tier known");
    tap_is(kvr_kvstate_tier((const uint8_t *) "CP", 2), KVR_TIER_OTHER,
           "\"CP\": not a prefix match");
}


/*
 * vLLM's connector with offloaded blocks of 4 GPU blocks: groups 0 and 1
 * of a 12-block sequence held (as the keys of blocks 3 and 7), group 2 not
 */

static void
test_groups(kvr_index_t *ix)
{
    int       slot;
    size_t    i;
    uint64_t  seq_keys[12];

    slot = kvr_index_slot(ix, "groups/host", 11);

    for (i = 0; i < 12; i++) {
        seq_keys[i] = 0x5000 + i;
    }

    kvr_index_add_ref(ix, slot, seq_keys[3]);
    kvr_index_add_ref(ix, slot, seq_keys[7]);

    tap_is(kvr_index_match_groups(ix, slot, seq_keys, 12, 0, 4), 8,
           "groups: nothing on the GPU, groups 0 and 1 load 8 blocks");
    tap_is(kvr_index_match_groups(ix, slot, seq_keys, 12, 4, 4), 4,
           "groups: 4 on the GPU, group 1 loads 4");
    tap_is(kvr_index_match_groups(ix, slot, seq_keys, 12, 3, 4), 5,
           "groups: 3 on the GPU, from inside group 0 to the end of 1");
    tap_is(kvr_index_match_groups(ix, slot, seq_keys, 12, 5, 4), 0,
           "groups: 5 on the GPU, 3 blocks to the end of group 1: none");
    tap_is(kvr_index_match_groups(ix, slot, seq_keys, 12, 8, 4), 0,
           "groups: group 2 not held");
    tap_is(kvr_index_match_groups(ix, slot, seq_keys, 7, 0, 4), 4,
           "groups: a 7-block request has group 0 whole only");
    tap_is(kvr_index_match_groups(ix, slot, seq_keys, 12, 12, 4), 0,
           "groups: all on the GPU");
    tap_is(kvr_index_match_groups(ix, slot, seq_keys + 3, 9, 0, 1), 1,
           "group 1: the leading run, as kvr_index_match()");

    kvr_index_release_slot(ix, slot);
}


int
main(void)
{
    int                   gpu, host, disk, tier_slots[KVR_KVSTATE_TIERS];
    int                   tier_groups[KVR_KVSTATE_TIERS];
    void                 *region;
    size_t                i;
    uint32_t              tokens[NB * BS];
    uint64_t              keys[NB], seed, parent;
    kvr_index_t          *ix;
    kvr_kvstate_t         st;
    kvr_events_limits_t   lim;

    static const uint64_t  h[NB] = { 0x1001, 0x1002, 0x1003, 0x1004 };

    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    kvr_events_limits_default(&lim);
    dec = kvr_events_decoder_create(&lim);

    region = calloc(1, REGION);
    ix = kvr_index_init(region, REGION);
    gpu = kvr_index_slot(ix, "127.0.0.1:8001", 14);

    for (i = 0; i < NB * BS; i++) {
        tokens[i] = (uint32_t) (i * 7919 % 151643);
    }

    seed = kvr_hash_seed(NULL, 0, NULL, 0);
    kvr_hash_token_blocks(tokens, NB * BS, BS, seed, keys, NB);

    test_media();
    test_groups(ix);

    memset(tier_slots, 0, sizeof(tier_slots));
    memset(tier_groups, 0, sizeof(tier_groups));
    kvr_kvstate_init(&st, gpu, BS, 1000);
    st.tier_slots = tier_slots;
    st.tier_groups = tier_groups;

    /* the GPU holds 3 blocks; the connector offloads them: hashes alone */

    tap_is(store(&st, ix, "GPU", h, 3, NULL, tokens, BS), KVR_EVENTS_OK,
           "GPU store decoded");
    tap_is(store(&st, ix, "CPU", h, 3, NULL, NULL, BS), KVR_EVENTS_OK,
           "CPU store without token ids decoded");

    host = slot_of(tier_slots, KVR_TIER_HOST);
    tap_ok(host >= 0 && host != gpu, "the host tier has a slot of its own");
    tap_is(slot_of(tier_slots, KVR_TIER_DISK), -1,
           "no disk slot before a disk event");
    tap_is(kvr_index_match(ix, host, keys, NB), 3,
           "host tier: the GPU's keys of the same 3 hashes");
    tap_is(st.stats.tier_stored, 3, "3 tier blocks stored");
    tap_is(st.stats.offloaded, 3, "and counted offloaded");

    /* CPU removals: the host tier's entries only */

    tap_is(removal(&st, ix, "CPU", h + 1, 2), KVR_EVENTS_OK,
           "CPU removal decoded");
    tap_is(kvr_index_match(ix, gpu, keys, NB), 3,
           "a CPU removal never removes GPU entries");
    tap_is(kvr_index_match(ix, host, keys, NB), 1,
           "the host tier lost blocks 1 and 2");
    tap_is(kvr_index_slot_blocks(ix, host), 1, "host tier: 1 block left");

    /* GPU removals: the GPU's entries only */

    removal(&st, ix, "GPU", h, 3);
    tap_is(kvr_index_match(ix, gpu, keys, NB), 0, "GPU blocks removed");
    tap_is(kvr_index_match(ix, host, keys, NB), 1,
           "a GPU removal never removes host entries");

    /* held once: a re-announced tier block, then one removal */

    store(&st, ix, "CPU", h, 1, NULL, NULL, BS);
    tap_is(st.stats.reannounced, 1, "a held tier hash stored again");
    removal(&st, ix, "CPU", h, 1);
    tap_is(kvr_index_slot_blocks(ix, host), 0,
           "one removal takes it out: no reference left behind");
    removal(&st, ix, "CPU", h, 1);
    tap_is(st.stats.tier_removed, 3, "3 tier removals counted");
    tap_is(st.stats.unknown_removed, 1, "the repeated one: unknown");

    /* a hash-only store whose hash no tier holds cannot be keyed */

    store(&st, ix, "CPU", h + 3, 1, NULL, NULL, BS);
    tap_is(st.stats.tier_unkeyed, 1, "unknown hash: unkeyed, counted");
    tap_is(kvr_index_slot_blocks(ix, host), 0, "and not held");

    /*
     * an offloaded block of 2 GPU blocks (the connector's block_size
     * twice the GPU's), named by the hash of its last GPU block
     */

    store(&st, ix, "GPU", h, 2, NULL, tokens, BS);
    store(&st, ix, "CPU", h + 1, 1, NULL, NULL, 2 * BS);
    tap_is(kvr_index_slot_blocks(ix, host), 1,
           "an offloaded block of 2 GPU blocks: held once");
    tap_is(kvr_index_match(ix, host, keys + 1, 1), 1,
           "as the key of its last GPU block");
    tap_is(tier_groups[KVR_TIER_HOST - 1], 2,
           "the host tier's span published: 2 GPU blocks");
    tap_is(kvr_index_match_groups(ix, host, keys, NB, 0, 2), 2,
           "nothing computed on the GPU: the group's 2 blocks load");
    tap_is(kvr_index_match_groups(ix, host, keys, NB, 1, 2), 0,
           "block 0 computed: 1 block left in the group, not loaded");

    /* a size that is no multiple of the GPU's: not keyed */

    store(&st, ix, "CPU", h + 1, 1, NULL, NULL, BS + BS / 2);
    tap_is(st.stats.tier_unkeyed, 2, "another block size: counted unkeyed");
    tap_is(st.stats.bad_block_size, 1, "and as a bad block size");

    removal(&st, ix, "CPU", h + 1, 1);
    tap_is(kvr_index_slot_blocks(ix, host), 0,
           "the group's removal releases its one entry");

    /* with token ids (SGLang's, Dynamo's KVBM form), chained from the GPU */

    parent = h[1];
    tap_is(store(&st, ix, "Disk", h + 2, 2, &parent, tokens + 2 * BS, BS),
           KVR_EVENTS_OK, "disk store with tokens, parent on the GPU");
    disk = slot_of(tier_slots, KVR_TIER_DISK);
    tap_ok(disk >= 0 && disk != host && disk != gpu,
           "the disk tier has a slot of its own");
    tap_is(kvr_index_match(ix, disk, keys + 2, 2), 2,
           "disk tier: the request's keys of blocks 2 and 3");
    tap_is(kvr_index_match(ix, gpu, keys, NB), 2,
           "the GPU slot: its own 2 blocks only");

    removal(&st, ix, "DISK", h + 2, 1);
    tap_is(kvr_index_slot_blocks(ix, disk), 1, "a disk removal: disk only");
    tap_is(kvr_index_match(ix, gpu, keys, NB), 2, "GPU entries kept");

    /* another medium: counted, never applied */

    store(&st, ix, "TAPE", h, 1, NULL, NULL, BS);
    tap_is(kvr_index_slot_blocks(ix, host) + kvr_index_slot_blocks(ix, disk),
           1, "an unknown medium: no tier holds it");

    /* a gap drops every tier's entries with the GPU's */

    store(&st, ix, "CPU", h, 2, NULL, NULL, BS);
    tap_is(kvr_index_slot_blocks(ix, host), 2, "host tier: 2 blocks");
    seq += 5;
    store(&st, ix, "GPU", h, 1, NULL, tokens, BS);
    tap_is(kvr_index_slot_blocks(ix, host) + kvr_index_slot_blocks(ix, disk),
           0, "a gap: the tiers' entries dropped");
    tap_is(kvr_index_slot_blocks(ix, gpu), 1,
           "the GPU's rebuilt from the batch after the gap");

    kvr_kvstate_free(&st);

    /* a new helper's stream reuses the tier slot by name, emptied */

    memset(tier_slots, 0, sizeof(tier_slots));
    memset(tier_groups, 0, sizeof(tier_groups));
    kvr_kvstate_init(&st, gpu, BS, 1000);
    st.tier_slots = tier_slots;
    st.tier_groups = tier_groups;
    seq = 0;
    store(&st, ix, "GPU", h, 2, NULL, tokens, BS);
    store(&st, ix, "CPU_PINNED", h, 1, NULL, NULL, BS);
    tap_is(slot_of(tier_slots, KVR_TIER_HOST), host,
           "the host slot found again by its name");
    tap_is(kvr_index_slot_blocks(ix, host), 1, "holding this stream's only");

    kvr_kvstate_free(&st);
    kvr_events_decoder_destroy(dec);
    msgpack_sbuffer_destroy(&sb);
    free(region);

    return tap_done();
}
