/*
 * Copyright (C) kvroute developers
 *
 * Unit tests of the block index (src/route/kvr_index.c): layout and reload,
 * slot names, matching, lru order and eviction, reference counts, and a
 * randomized comparison with a naive array-based model.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kvr_index.h"
#include "tap.h"


/* defined in kvr_index.c, for tests */
int kvr_index_verify(kvr_index_t *ix);


#define REGION_SMALL   (256 * 1024)
#define REGION_MODEL   (4 * 1024 * 1024)
#define MODEL_SLOTS    6
#define MODEL_OPS      4000
#define MODEL_BASES    12
#define MODEL_BASE_LEN 48
#define MODEL_MAX_SEQ  64


static uint64_t  rng_state = 0x853c49e6748fea9bULL;


static uint64_t
rng(void)
{
    uint64_t  x;

    /* xorshift64* */

    x = rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;

    return x * 0x2545f4914f6cdd1dULL;
}


static uint64_t
rng_below(uint64_t n)
{
    return n ? rng() % n : 0;
}


static void *
xrealloc(void *p, size_t size)
{
    p = realloc(p, size);

    if (p == NULL) {
        printf("Bail out! out of memory\n");
        exit(1);
    }

    return p;
}


static void *
region_new(size_t size)
{
    void  *p;

    p = xrealloc(NULL, size);

    /* shared memory may hold anything before the first format */
    memset(p, 0xa5, size);

    return p;
}


/* a sequence of distinct hashes base, base + 1, ... */

static void
seq_fill(uint64_t *h, size_t n, uint64_t base)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        h[i] = base + i;
    }
}


static int
present(kvr_index_t *ix, int slot, uint64_t hash)
{
    return kvr_index_match(ix, slot, &hash, 1) == 1;
}


static uint64_t
slot_blocks(kvr_index_t *ix, int slot)
{
    kvr_index_slot_info_t  info;

    kvr_index_slot_info(ix, slot, &info);

    return info.blocks;
}


static void
test_layout_and_reload(void)
{
    int                 a, b;
    void               *mem;
    uint64_t            h[10];
    kvr_index_t        *ix, *ix2;
    kvr_index_stats_t   st, st2;

    tap_ok(kvr_index_min_size() >= 4096, "min size is sane");

    mem = region_new(REGION_SMALL);

    tap_ok(kvr_index_init(mem, kvr_index_min_size() - 1) == NULL,
           "below min size: NULL");
    tap_ok(kvr_index_init(NULL, REGION_SMALL) == NULL, "NULL region: NULL");
    tap_ok(kvr_index_init((char *) mem + 1, REGION_SMALL - 8) == NULL,
           "misaligned region: NULL");

    ix = kvr_index_init(mem, kvr_index_min_size());
    tap_ok(ix != NULL, "min size accepted");
    kvr_index_stats(ix, &st);
    tap_ok(st.capacity > 0 && st.entries == 0, "min size: empty, capacity %llu",
           (unsigned long long) st.capacity);

    ix = kvr_index_init(mem, REGION_SMALL);
    tap_ok(ix != NULL, "formatted over garbage");
    tap_is(kvr_index_verify(ix), 0, "fresh index verifies");

    kvr_index_stats(ix, &st);
    tap_is(st.entries, 0, "fresh index is empty");

    /* entry ~32 bytes plus 1-2 u32 buckets: at most ~41 bytes each */
    tap_ok(st.capacity * 41 >= REGION_SMALL - 16384
           && st.capacity * 32 <= REGION_SMALL,
           "the region is used: %llu entries in %d bytes",
           (unsigned long long) st.capacity, REGION_SMALL);

    a = kvr_index_slot(ix, "a", 1);
    b = kvr_index_slot(ix, "b", 1);
    kvr_index_slot_set_capacity(ix, a, 12);
    seq_fill(h, 8, 100);
    kvr_index_record(ix, a, h, 8);
    seq_fill(h, 4, 200);
    kvr_index_record(ix, a, h, 4);
    seq_fill(h, 5, 300);
    kvr_index_add_ref(ix, b, 300);
    kvr_index_add_ref(ix, b, 300);

    /* reload: same region, same size */

    ix2 = kvr_index_init(mem, REGION_SMALL);
    tap_ok(ix2 == ix, "re-init returns the same index");
    kvr_index_stats(ix2, &st2);
    tap_is(st2.entries, 13, "re-init keeps the entries");
    tap_is(kvr_index_slot(ix2, "a", 1), a, "re-init keeps slot a");
    tap_is(kvr_index_slot(ix2, "b", 1), b, "re-init keeps slot b");
    seq_fill(h, 8, 100);
    tap_is(kvr_index_match(ix2, a, h, 8), 8, "re-init keeps a's blocks");
    tap_is(kvr_index_remove_ref(ix2, b, 300), 1, "re-init keeps refs");
    tap_is(kvr_index_verify(ix2), 0, "re-init index verifies");

    /* the lru order survived: 2 new blocks evict 100's tail (107, 106) */

    seq_fill(h, 2, 400);
    tap_is(kvr_index_record(ix2, a, h, 2), 2, "after reload: 2 evicted");
    tap_ok(!present(ix2, a, 107) && !present(ix2, a, 106)
           && present(ix2, a, 105) && present(ix2, a, 200),
           "after reload: lru order kept");

    /* another size formats */

    ix2 = kvr_index_init(mem, REGION_SMALL - 4096);
    kvr_index_stats(ix2, &st2);
    tap_is(st2.entries, 0, "another size formats");
    tap_is(kvr_index_slot(ix2, "zzz", 3), 0, "another size: slots empty");

    /* a damaged header formats */

    ix2 = kvr_index_init(mem, REGION_SMALL);
    kvr_index_record(ix2, kvr_index_slot(ix2, "a", 1), h, 2);
    memset(mem, 0x5a, 8);
    ix2 = kvr_index_init(mem, REGION_SMALL);
    kvr_index_stats(ix2, &st2);
    tap_is(st2.entries, 0, "bad magic formats");
    tap_is(kvr_index_verify(ix2), 0, "bad magic: verifies");

    free(mem);
}


static void
test_slot_names(void)
{
    int                     i, s, a, b, c;
    char                    name[32], long1[100], long2[100];
    void                   *mem;
    uint64_t                h[3];
    kvr_index_t            *ix;
    kvr_index_stats_t       st;
    kvr_index_slot_info_t   info;

    mem = region_new(REGION_SMALL);
    ix = kvr_index_init(mem, REGION_SMALL);

    a = kvr_index_slot(ix, "10.0.0.1:8000", 13);
    b = kvr_index_slot(ix, "10.0.0.1:8001", 13);
    tap_ok(a >= 0 && b >= 0 && a != b, "two names, two slots");
    tap_is(kvr_index_slot(ix, "10.0.0.1:8000", 13), a, "same name, same slot");
    tap_is(kvr_index_slot(ix, "10.0.0.1:8000xyz", 13), a,
           "only len bytes of the name count");
    c = kvr_index_slot(ix, "10.0.0.1:800", 12);
    tap_ok(c != a && c != b && c >= 0, "a prefix is another name");

    kvr_index_slot_info(ix, a, &info);
    tap_ok(info.in_use && info.name_len == 13
           && memcmp(info.name, "10.0.0.1:8000", 13) == 0
           && info.blocks == 0 && info.capacity == 0,
           "slot_info of a new slot");

    memset(long1, 'x', sizeof(long1));
    memset(long2, 'x', sizeof(long2));
    long2[99] = 'y';

    s = kvr_index_slot(ix, long1, 100);
    tap_ok(s >= 0, "100-byte name accepted");
    tap_ok(kvr_index_slot(ix, long2, 100) != s,
           "long names differing in the last byte: different slots");
    tap_is(kvr_index_slot(ix, long1, 100), s, "long name: same slot again");
    tap_ok(kvr_index_slot(ix, long1, 99) != s, "long name prefix differs");

    kvr_index_slot_info(ix, s, &info);
    tap_ok(info.name_len == KVR_INDEX_NAME_LEN - 1
           && memcmp(info.name, long1, 40) == 0
           && info.name[KVR_INDEX_NAME_LEN - 1] == '\0',
           "long name stored truncated with a hash, NUL-terminated");

    tap_ok(kvr_index_slot(ix, "", 0) >= 0, "empty name is a name");

    /* fill the table */

    for (i = 0; ; i++) {
        snprintf(name, sizeof(name), "srv%d", i);
        if (kvr_index_slot(ix, name, strlen(name)) < 0) {
            break;
        }
    }

    tap_is(i, KVR_INDEX_MAX_SLOTS - 7, "table full after MAX_SLOTS names");
    tap_is(kvr_index_slot(ix, "another", 7), -1, "full table: -1");
    tap_is(kvr_index_slot(ix, "10.0.0.1:8001", 13), b,
           "full table: existing name still found");

    /* release frees a slot and its entries */

    h[0] = 1;
    h[1] = 2;
    h[2] = 3;
    kvr_index_record(ix, b, h, 3);
    kvr_index_record(ix, a, h, 3);
    kvr_index_release_slot(ix, b);
    kvr_index_slot_info(ix, b, &info);
    tap_ok(!info.in_use && info.blocks == 0 && info.name_len == 0,
           "released slot is not in use");
    kvr_index_stats(ix, &st);
    tap_is(st.entries, 3, "release freed the slot's entries only");
    tap_is(kvr_index_match(ix, b, h, 3), 0, "released slot matches nothing");
    tap_is(kvr_index_record(ix, b, h, 3), 0, "record on released: no-op");
    tap_is(kvr_index_add_ref(ix, b, 9), 0, "add_ref on released: 0");
    kvr_index_stats(ix, &st);
    tap_is(st.entries, 3, "no entry for a released slot");

    tap_is(kvr_index_slot(ix, "another", 7), b, "released slot is reused");
    tap_is(slot_blocks(ix, b), 0, "reused slot starts empty");
    tap_is(kvr_index_match(ix, b, h, 3), 0, "reused slot: old blocks gone");
    tap_is(kvr_index_match(ix, a, h, 3), 3, "other slot untouched");

    tap_is(kvr_index_match(ix, -1, h, 3), 0, "slot -1: 0");
    tap_is(kvr_index_match(ix, KVR_INDEX_MAX_SLOTS, h, 3), 0,
           "slot MAX: 0");
    tap_is(kvr_index_verify(ix), 0, "slot names: verifies");

    free(mem);
}


static void
test_match(void)
{
    int           s[4], slots[6];
    void         *mem;
    size_t        i;
    uint64_t      h[20], q[20];
    uint32_t      ov[6];
    kvr_index_t  *ix;

    mem = region_new(REGION_SMALL);
    ix = kvr_index_init(mem, REGION_SMALL);

    s[0] = kvr_index_slot(ix, "s0", 2);
    s[1] = kvr_index_slot(ix, "s1", 2);
    s[2] = kvr_index_slot(ix, "s2", 2);
    s[3] = kvr_index_slot(ix, "s3", 2);

    seq_fill(q, 20, 1000);

    /* s0: blocks 0..9 but not 4 (a hole) */
    for (i = 0; i < 10; i++) {
        if (i != 4) {
            kvr_index_add_ref(ix, s[0], q[i]);
        }
    }

    /* s1: all 20 */
    kvr_index_record(ix, s[1], q, 20);

    /* s2: 0..2, and 5..19 */
    kvr_index_record(ix, s[2], q, 3);
    kvr_index_record(ix, s[2], q + 5, 15);

    /* s3: nothing of q, but the same hashes one off */
    seq_fill(h, 20, 1001);
    kvr_index_record(ix, s[3], h + 1, 19);

    tap_is(kvr_index_match(ix, s[0], q, 20), 4, "match stops at a hole");
    tap_is(kvr_index_match(ix, s[1], q, 20), 20, "match all");
    tap_is(kvr_index_match(ix, s[1], q, 7), 7, "match bounded by n");
    tap_is(kvr_index_match(ix, s[2], q, 20), 3, "match: second hole");
    tap_is(kvr_index_match(ix, s[3], q, 20), 0, "match: first missing");
    tap_is(kvr_index_match(ix, s[1], q, 0), 0, "match n=0");
    tap_is(kvr_index_match(ix, s[1], q + 19, 1), 1, "match: last alone");

    slots[0] = s[0];
    slots[1] = s[1];
    slots[2] = s[2];
    slots[3] = s[3];
    slots[4] = 40;           /* not in use */
    slots[5] = s[1];         /* repeated */

    memset(ov, 0xff, sizeof(ov));
    kvr_index_match_slots(ix, slots, 6, q, 20, ov);
    tap_ok(ov[0] == 4 && ov[1] == 20 && ov[2] == 3 && ov[3] == 0
           && ov[4] == 0 && ov[5] == 20,
           "match_slots: 4 20 3 0 0 20 (got %u %u %u %u %u %u)",
           ov[0], ov[1], ov[2], ov[3], ov[4], ov[5]);

    memset(ov, 0xff, sizeof(ov));
    kvr_index_match_slots(ix, slots, 4, q, 2, ov);
    tap_ok(ov[0] == 2 && ov[1] == 2 && ov[2] == 2 && ov[3] == 0,
           "match_slots bounded by n");

    memset(ov, 0xff, sizeof(ov));
    kvr_index_match_slots(ix, slots, 4, q + 5, 15, ov);
    tap_ok(ov[0] == 5 && ov[1] == 15 && ov[2] == 15 && ov[3] == 15,
           "match_slots from an offset: 5 15 15 15");

    memset(ov, 0xff, sizeof(ov));
    kvr_index_match_slots(ix, slots, 4, q, 0, ov);
    tap_ok(ov[0] == 0 && ov[1] == 0 && ov[2] == 0 && ov[3] == 0,
           "match_slots n=0: all 0");

    ov[0] = 77;
    kvr_index_match_slots(ix, slots, 0, q, 20, ov);
    tap_is(ov[0], 77, "match_slots with no slots writes nothing");

    /* a lookup is not a use: matching q (the lru) does not refresh it */

    seq_fill(h, 3, 6000);
    kvr_index_record(ix, s[1], h, 3);         /* 6000.. then q */
    kvr_index_slot_set_capacity(ix, s[1], 23);
    kvr_index_match_slots(ix, slots, 6, q, 20, ov);
    kvr_index_match(ix, s[1], q, 20);
    seq_fill(h, 3, 5000);
    tap_is(kvr_index_record(ix, s[1], h, 3), 3, "3 new blocks evict 3");
    tap_is(kvr_index_match(ix, s[1], q, 20), 17,
           "matching did not refresh: q's tail 17..19 evicted");
    seq_fill(h, 3, 6000);
    tap_is(kvr_index_match(ix, s[1], h, 3), 3, "the later sequence stays");

    tap_is(kvr_index_verify(ix), 0, "match: verifies");

    free(mem);
}


static void
test_lru(void)
{
    int                     a, b;
    void                   *mem;
    size_t                  i;
    uint64_t                A[4], B[4], C[2], D[6];
    kvr_index_t            *ix;
    kvr_index_slot_info_t   info;

    mem = region_new(REGION_SMALL);
    ix = kvr_index_init(mem, REGION_SMALL);

    a = kvr_index_slot(ix, "a", 1);
    b = kvr_index_slot(ix, "b", 1);
    kvr_index_slot_set_capacity(ix, a, 8);

    seq_fill(A, 4, 10);
    seq_fill(B, 4, 20);
    seq_fill(C, 2, 30);

    tap_is(kvr_index_record(ix, a, A, 4), 0, "record A: nothing evicted");
    tap_is(kvr_index_record(ix, a, B, 4), 0, "record B: nothing evicted");
    tap_is(slot_blocks(ix, a), 8, "8 blocks");

    /* A is the lru sequence; its tail goes first, as in vllm */
    tap_is(kvr_index_record(ix, a, C, 2), 2, "record C evicts 2");
    tap_ok(present(ix, a, 10) && present(ix, a, 11)
           && !present(ix, a, 12) && !present(ix, a, 13),
           "C evicted A's tail (13, 12), A's head stays");
    tap_is(kvr_index_match(ix, a, B, 4), 4, "B intact");
    tap_is(kvr_index_match(ix, a, C, 2), 2, "C present");

    kvr_index_slot_info(ix, a, &info);
    tap_ok(info.blocks == 8 && info.evictions == 2 && info.capacity == 8,
           "slot_info: 8 blocks, 2 evictions");

    /* refresh: re-recording A makes B the lru sequence, then C */

    kvr_index_clear_slot(ix, a);
    tap_is(slot_blocks(ix, a), 0, "clear_slot empties");
    tap_is(kvr_index_match(ix, a, A, 4), 0, "clear_slot: nothing matches");
    tap_is(kvr_index_slot(ix, "a", 1), a, "clear_slot keeps the slot");

    kvr_index_record(ix, a, A, 4);
    kvr_index_record(ix, a, B, 4);
    kvr_index_record(ix, a, A, 4);          /* A refreshed */
    tap_is(slot_blocks(ix, a), 8, "re-record adds nothing");
    tap_is(kvr_index_record(ix, a, C, 2), 2, "record C evicts 2");
    tap_ok(!present(ix, a, 23) && !present(ix, a, 22)
           && kvr_index_match(ix, a, A, 4) == 4
           && kvr_index_match(ix, a, B, 2) == 2,
           "after refresh of A, B's tail is evicted");

    /* partial refresh: A's head re-recorded, then 5 new blocks */

    kvr_index_clear_slot(ix, a);
    kvr_index_record(ix, a, A, 4);
    kvr_index_record(ix, a, B, 4);
    kvr_index_record(ix, a, A, 2);          /* order: 10 11 20..23 12 13 */
    seq_fill(D, 5, 40);
    tap_is(kvr_index_record(ix, a, D, 5), 5, "5 new evict 5");
    tap_ok(present(ix, a, 10) && present(ix, a, 11) && present(ix, a, 20)
           && !present(ix, a, 21) && !present(ix, a, 12)
           && !present(ix, a, 13),
           "partial refresh: 13 12 23 22 21 evicted, 10 11 20 kept");

    /* a mixed sequence: present and missing interleaved */

    kvr_index_clear_slot(ix, a);
    kvr_index_record(ix, a, A, 4);            /* 10 11 12 13 */
    D[0] = 10;
    D[1] = 50;
    D[2] = 12;
    D[3] = 51;
    kvr_index_record(ix, a, D, 4);            /* 10 50 12 51 11 13 */
    kvr_index_slot_set_capacity(ix, a, 6);
    seq_fill(C, 2, 60);
    kvr_index_record(ix, a, C, 2);            /* 60 61 10 50 12 51 */
    tap_ok(present(ix, a, 51) && present(ix, a, 12) && present(ix, a, 50)
           && !present(ix, a, 11) && !present(ix, a, 13),
           "interleaved record: order follows the sequence");
    kvr_index_slot_set_capacity(ix, a, 4);
    kvr_index_record(ix, a, C, 1);            /* 60 61 10 50 */
    tap_ok(present(ix, a, 50) && !present(ix, a, 12) && slot_blocks(ix, a) == 4,
           "lowered capacity trims on the next record");

    /* capacity < n: the head of the sequence stays, older ones go */

    kvr_index_clear_slot(ix, a);
    kvr_index_slot_set_capacity(ix, a, 3);
    kvr_index_record(ix, a, A, 2);            /* 10 11 */
    seq_fill(D, 6, 100);
    D[4] = 11;                                /* present, beyond capacity */
    tap_is(kvr_index_record(ix, a, D, 6), 2, "capacity < n: old 2 evicted");
    tap_is(kvr_index_match(ix, a, D, 6), 3, "capacity < n: head kept");
    tap_ok(slot_blocks(ix, a) == 3 && !present(ix, a, 103)
           && !present(ix, a, 10) && !present(ix, a, 11),
           "capacity < n: exactly the first 3 hashes");

    kvr_index_slot_set_capacity(ix, a, 1);
    tap_is(kvr_index_record(ix, a, D, 6), 2, "capacity 1: 2 evicted");
    tap_ok(slot_blocks(ix, a) == 1 && present(ix, a, 100),
           "capacity 1: first hash only");

    /* a repeated hash inside one sequence */

    kvr_index_clear_slot(ix, a);
    kvr_index_slot_set_capacity(ix, a, 0);
    D[0] = 1;
    D[1] = 2;
    D[2] = 1;
    D[3] = 3;
    tap_is(kvr_index_record(ix, a, D, 4), 0, "repeated hash: no eviction");
    tap_is(slot_blocks(ix, a), 3, "repeated hash: stored once");
    kvr_index_record(ix, a, D, 4);
    tap_is(slot_blocks(ix, a), 3, "repeated hash: re-record stored once");
    kvr_index_slot_set_capacity(ix, a, 2);
    kvr_index_record(ix, a, D, 1);
    tap_ok(present(ix, a, 1) && present(ix, a, 2) && !present(ix, a, 3),
           "repeated hash: order by first occurrence");

    /* slot b is untouched by all of it */
    tap_is(slot_blocks(ix, b), 0, "other slot untouched");

    for (i = 0; i < 4; i++) {
        kvr_index_record(ix, b, A, 4);
    }

    tap_is(slot_blocks(ix, b), 4, "same hashes in two slots are distinct");
    tap_ok(present(ix, a, 1) && !present(ix, b, 1), "key is (hash, slot)");
    tap_is(kvr_index_verify(ix), 0, "lru: verifies");

    free(mem);
}


static void
test_full(void)
{
    int                 s0, s1, s2;
    void               *mem;
    size_t              i, r, inserted, evicted, big;
    uint64_t           *h, base;
    kvr_index_t        *ix;
    kvr_index_stats_t   st;

    mem = region_new(kvr_index_min_size());
    ix = kvr_index_init(mem, kvr_index_min_size());
    kvr_index_stats(ix, &st);

    big = st.capacity * 2 + 10;
    h = xrealloc(NULL, big * sizeof(uint64_t));

    s0 = kvr_index_slot(ix, "s0", 2);
    s1 = kvr_index_slot(ix, "s1", 2);
    s2 = kvr_index_slot(ix, "s2", 2);

    /* fill with s0 exactly */

    seq_fill(h, st.capacity, 1000000);
    tap_is(kvr_index_record(ix, s0, h, st.capacity), 0, "fill: no eviction");
    kvr_index_stats(ix, &st);
    tap_is(st.entries, st.capacity, "region full");

    /* s1 inserts: s0 is the fullest, loses its lru (sequence tail) */

    seq_fill(h, 5, 2000000);
    tap_is(kvr_index_record(ix, s1, h, 5), 5, "full: 5 evicted for 5");
    kvr_index_stats(ix, &st);
    tap_ok(st.evictions_full == 5 && st.entries == st.capacity,
           "full: evictions_full 5, still full");
    tap_is(kvr_index_match(ix, s1, h, 5), 5, "full: new blocks present");
    tap_ok(!present(ix, s0, 1000000 + st.capacity - 1)
           && !present(ix, s0, 1000000 + st.capacity - 5)
           && present(ix, s0, 1000000 + st.capacity - 6)
           && present(ix, s0, 1000000),
           "full: s0's 5 lru blocks went");
    tap_is(slot_blocks(ix, s0), st.capacity - 5, "full: s0 shrank by 5");

    /* exact mode under pressure also never fails */

    tap_is(kvr_index_add_ref(ix, s2, 77), 1, "full: add_ref inserts");
    tap_ok(present(ix, s2, 77) && slot_blocks(ix, s0) == st.capacity - 6,
           "full: add_ref evicted from the fullest slot");

    /* the recording slot's own old blocks go when it is the fullest */

    seq_fill(h, 10, 3000000);
    tap_is(kvr_index_record(ix, s0, h, 10), 10, "full, own slot: 10 evicted");
    tap_ok(kvr_index_match(ix, s0, h, 10) == 10
           && kvr_index_match(ix, s1, h, 0) == 0
           && slot_blocks(ix, s1) == 5 && slot_blocks(ix, s2) == 1,
           "full, own slot fullest: others untouched");

    /* a sequence larger than the region: its head is kept */

    kvr_index_clear_slot(ix, s1);
    kvr_index_clear_slot(ix, s2);
    seq_fill(h, big, 4000000);
    r = kvr_index_record(ix, s1, h, big);
    kvr_index_stats(ix, &st);
    tap_ok(st.entries == st.capacity && slot_blocks(ix, s1) == st.capacity
           && slot_blocks(ix, s0) == 0,
           "sequence > region: region all s1 (%zu evicted)", r);
    tap_is(kvr_index_match(ix, s1, h, big), st.capacity,
           "sequence > region: the head is kept");
    tap_is(kvr_index_verify(ix), 0, "sequence > region: verifies");

    /* again, with a part beyond the region's capacity already present */

    kvr_index_clear_slot(ix, s1);
    kvr_index_record(ix, s1, h + st.capacity - 50, 100);
    r = kvr_index_record(ix, s1, h, big);
    tap_is(r, 50, "sequence > region, tail present: its 50 beyond go");
    tap_is(kvr_index_match(ix, s1, h, big), st.capacity,
           "sequence > region, tail present: the head is kept");
    tap_is(slot_blocks(ix, s1), st.capacity, "... and nothing else");
    tap_is(kvr_index_verify(ix), 0, "sequence > region, tail: verifies");

    /* cleared entries are reused before any live entry is evicted */

    kvr_index_clear_slot(ix, s0);
    kvr_index_clear_slot(ix, s1);
    seq_fill(h, st.capacity, 5000000);
    kvr_index_record(ix, s0, h, st.capacity);
    kvr_index_clear_slot(ix, s0);
    kvr_index_stats(ix, &st);
    base = st.evictions_full;
    tap_is(st.entries, 0, "cleared: no entries");
    tap_is(kvr_index_match(ix, s0, h, 10), 0, "cleared: nothing matches");
    seq_fill(h, st.capacity, 6000000);
    tap_is(kvr_index_record(ix, s1, h, st.capacity), 0,
           "cleared entries reused: nothing evicted");
    kvr_index_stats(ix, &st);
    tap_ok(st.evictions_full == base && st.entries == st.capacity
           && kvr_index_match(ix, s1, h, st.capacity) == st.capacity,
           "cleared entries reused: region full of s1");
    seq_fill(h, st.capacity, 5000000);
    tap_is(kvr_index_match(ix, s0, h, st.capacity), 0,
           "cleared entries stay hidden");
    tap_is(kvr_index_verify(ix), 0, "reuse of cleared: verifies");

    /* many inserts into three slots: never fails, counts add up */

    kvr_index_clear_slot(ix, s0);
    kvr_index_clear_slot(ix, s1);
    kvr_index_stats(ix, &st);
    base = st.evictions_full;
    inserted = 0;
    evicted = 0;

    for (i = 0; i < 2000; i++) {
        seq_fill(h, 20, 10000000 + i * 100);
        evicted += kvr_index_record(ix, (int) (i % 3), h, 20);
        inserted += 20;

        if (kvr_index_match(ix, (int) (i % 3), h, 20) != 20) {
            break;
        }
    }

    tap_is(i, 2000, "2000 records under pressure, each fully present");
    kvr_index_stats(ix, &st);
    tap_ok(st.entries <= st.capacity, "entries <= capacity");
    tap_is(st.entries, inserted - evicted, "entries = inserted - evicted");
    tap_is(st.evictions_full - base, evicted, "every eviction was 'full'");
    tap_ok(slot_blocks(ix, 0) + slot_blocks(ix, 1) + slot_blocks(ix, 2)
           == st.entries, "slot blocks add up");
    tap_is(kvr_index_verify(ix), 0, "pressure: verifies");

    free(h);
    free(mem);
}


static void
test_refs(void)
{
    int                 a;
    void               *mem;
    uint64_t            h[3];
    kvr_index_t        *ix;
    kvr_index_stats_t   st;

    mem = region_new(REGION_SMALL);
    ix = kvr_index_init(mem, REGION_SMALL);
    a = kvr_index_slot(ix, "a", 1);

    tap_is(kvr_index_add_ref(ix, a, 5), 1, "add_ref: 1");
    tap_is(kvr_index_add_ref(ix, a, 5), 2, "add_ref again: 2");
    tap_is(kvr_index_remove_ref(ix, a, 5), 1, "remove_ref: 1");
    tap_ok(present(ix, a, 5), "two stores, one remove: present");
    tap_is(kvr_index_remove_ref(ix, a, 5), 0, "remove_ref: 0");
    tap_ok(!present(ix, a, 5), "removed at zero");
    tap_is(kvr_index_remove_ref(ix, a, 5), 0, "remove_ref of absent: 0");
    kvr_index_stats(ix, &st);
    tap_is(st.entries, 0, "no entry left");

    /* record() does not change refs */

    kvr_index_add_ref(ix, a, 6);
    kvr_index_add_ref(ix, a, 6);
    h[0] = 6;
    h[1] = 7;
    h[2] = 8;
    kvr_index_record(ix, a, h, 3);
    kvr_index_record(ix, a, h, 3);
    tap_is(kvr_index_remove_ref(ix, a, 6), 1,
           "add_ref twice, record twice, remove_ref: 1 left");
    tap_is(kvr_index_remove_ref(ix, a, 6), 0, "second remove_ref: 0");
    tap_ok(!present(ix, a, 6), "record kept refs at 2");

    /* add_ref on a recorded entry sets 1 */

    tap_is(kvr_index_add_ref(ix, a, 7), 1, "add_ref on recorded: 1");
    tap_is(kvr_index_add_ref(ix, a, 7), 2, "then 2");
    tap_is(kvr_index_remove_ref(ix, a, 8), 0, "remove_ref on recorded: gone");
    tap_ok(!present(ix, a, 8) && present(ix, a, 7), "8 gone, 7 stays");

    /* add_ref does not trim to the capacity, and refreshes the lru */

    kvr_index_clear_slot(ix, a);
    kvr_index_slot_set_capacity(ix, a, 2);
    kvr_index_add_ref(ix, a, 1);
    kvr_index_add_ref(ix, a, 2);
    kvr_index_add_ref(ix, a, 3);
    tap_is(slot_blocks(ix, a), 3, "add_ref ignores the capacity");
    kvr_index_add_ref(ix, a, 1);              /* 1 3 2 */
    h[0] = 9;
    kvr_index_record(ix, a, h, 1);            /* 9 1 | 3 2 */
    tap_ok(present(ix, a, 9) && present(ix, a, 1) && !present(ix, a, 3)
           && !present(ix, a, 2), "add_ref refreshed; record trimmed");
    tap_is(kvr_index_verify(ix), 0, "refs: verifies");

    free(mem);
}


/* the reference model: per slot an array, most recently used first */

typedef struct {
    uint64_t   hash;
    uint32_t   refs;
} model_entry_t;


typedef struct {
    int             slot;
    uint64_t        capacity;
    size_t          n;
    model_entry_t  *e;
} model_slot_t;


static model_entry_t  model_tmp[MODEL_SLOTS * 4096];


static long
model_find(model_slot_t *m, uint64_t hash)
{
    size_t  i;

    for (i = 0; i < m->n; i++) {
        if (m->e[i].hash == hash) {
            return (long) i;
        }
    }

    return -1;
}


/*
 * new order: the first min(n, capacity) hashes (each once, in order of
 * first occurrence), then the other entries in their old order, then
 * trimmed to the capacity; returns how many old entries are gone
 */

static size_t
model_record(model_slot_t *m, const uint64_t *h, size_t n)
{
    long    at;
    size_t  i, j, k, cnt, was_old, old_n;

    if (m->capacity && n > m->capacity) {
        n = (size_t) m->capacity;
    }

    cnt = 0;
    was_old = 0;

    for (i = 0; i < n; i++) {
        for (k = 0; k < cnt; k++) {
            if (model_tmp[k].hash == h[i]) {
                break;
            }
        }

        if (k < cnt) {
            continue;
        }

        at = model_find(m, h[i]);
        model_tmp[cnt].hash = h[i];
        model_tmp[cnt].refs = at >= 0 ? m->e[at].refs : 0;
        cnt++;

        if (at >= 0) {
            was_old++;
        }
    }

    for (j = 0; j < m->n; j++) {
        for (k = 0; k < n; k++) {
            if (h[k] == m->e[j].hash) {
                break;
            }
        }

        if (k == n) {
            if (m->capacity == 0 || cnt < m->capacity) {
                model_tmp[cnt++] = m->e[j];
                was_old++;
            }
        }
    }

    old_n = m->n;
    m->e = xrealloc(m->e, (cnt + 1) * sizeof(model_entry_t));
    memcpy(m->e, model_tmp, cnt * sizeof(model_entry_t));
    m->n = cnt;

    return old_n - was_old;
}


static uint32_t
model_add_ref(model_slot_t *m, uint64_t hash)
{
    long           at;
    model_entry_t  en;

    at = model_find(m, hash);

    if (at < 0) {
        en.hash = hash;
        en.refs = 1;
        m->e = xrealloc(m->e, (m->n + 1) * sizeof(model_entry_t));
        memmove(&m->e[1], &m->e[0], m->n * sizeof(model_entry_t));
        m->e[0] = en;
        m->n++;
        return 1;
    }

    en = m->e[at];
    en.refs = en.refs ? en.refs + 1 : 1;
    memmove(&m->e[1], &m->e[0], at * sizeof(model_entry_t));
    m->e[0] = en;

    return en.refs;
}


static uint32_t
model_remove_ref(model_slot_t *m, uint64_t hash)
{
    long  at;

    at = model_find(m, hash);

    if (at < 0) {
        return 0;
    }

    if (m->e[at].refs > 1) {
        return --m->e[at].refs;
    }

    memmove(&m->e[at], &m->e[at + 1], (m->n - at - 1) * sizeof(model_entry_t));
    m->n--;

    return 0;
}


static size_t
model_match(model_slot_t *m, const uint64_t *h, size_t n)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        if (model_find(m, h[i]) < 0) {
            break;
        }
    }

    return i;
}


/*
 * A random sequence: a prefix of one of the base sequences (so that
 * sequences share prefixes), a few fresh hashes, rarely a repeat.
 */

static size_t
random_sequence(uint64_t bases[][MODEL_BASE_LEN], uint64_t *seq)
{
    size_t  n, b, i, fresh;

    b = rng_below(MODEL_BASES);
    n = rng_below(MODEL_BASE_LEN + 1);
    memcpy(seq, bases[b], n * sizeof(uint64_t));

    fresh = rng_below(4) ? rng_below(MODEL_MAX_SEQ - MODEL_BASE_LEN) : 0;

    for (i = 0; i < fresh; i++) {
        seq[n++] = rng();
    }

    if (n > 1 && rng_below(20) == 0) {
        seq[rng_below(n)] = seq[rng_below(n)];
    }

    return n;
}


/*
 * Random operations on six slots.  With a model, every result is compared
 * with the model's; without (a tiny region, where the region-full
 * eviction makes the model inexact) invariants are checked.
 */

static void
random_run(const char *what, size_t size, int with_model, size_t ops)
{
    int                 slot[MODEL_SLOTS], k, bad_ix, op_fail;
    char                name[16];
    void               *mem;
    size_t              op, i, j, n, m, got, want, missing, r, evicted;
    size_t              matched, largest;
    uint64_t            bases[MODEL_BASES][MODEL_BASE_LEN];
    uint64_t            seq[MODEL_MAX_SEQ], hash, cap, sum;
    uint32_t            ov[MODEL_SLOTS];
    kvr_index_t        *ix;
    model_slot_t        model[MODEL_SLOTS], *ms;
    kvr_index_stats_t   before, st;

    mem = region_new(size);
    ix = kvr_index_init(mem, size);

    for (k = 0; k < MODEL_SLOTS; k++) {
        snprintf(name, sizeof(name), "m%d", k);
        slot[k] = kvr_index_slot(ix, name, strlen(name));
        model[k].slot = slot[k];
        model[k].capacity = 0;
        model[k].n = 0;
        model[k].e = NULL;
    }

    for (i = 0; i < MODEL_BASES; i++) {
        for (n = 0; n < MODEL_BASE_LEN; n++) {
            bases[i][n] = rng();
        }
    }

    bad_ix = 0;
    op_fail = -1;
    evicted = 0;
    matched = 0;
    largest = 0;

    for (op = 0; op < ops && op_fail < 0; op++) {
        k = (int) rng_below(MODEL_SLOTS);
        ms = &model[k];
        r = rng_below(100);

        /* keep the model small: it is quadratic */
        if (with_model && ms->n > 1500) {
            r = 72;
        }

        if (r < 45) {
            n = random_sequence(bases, seq);
            cap = ms->capacity;
            m = (cap && n > cap) ? (size_t) cap : n;

            kvr_index_stats(ix, &before);
            missing = 0;

            /* distinct hashes of the kept head not present before */

            for (i = 0; i < m; i++) {
                for (j = 0; j < i; j++) {
                    if (seq[j] == seq[i]) {
                        break;
                    }
                }

                if (j == i && !present(ix, slot[k], seq[i])) {
                    missing++;
                }
            }

            got = kvr_index_record(ix, slot[k], seq, n);
            kvr_index_stats(ix, &st);
            evicted += got;

            if (with_model) {
                want = model_record(ms, seq, n);
                if (got != want) {
                    printf("# op %zu: record evicted %zu, model %zu\n",
                           op, got, want);
                    op_fail = (int) op;
                }
            }

            if (kvr_index_match(ix, slot[k], seq, n) < m
                || (cap && slot_blocks(ix, slot[k]) > cap)
                || st.entries != before.entries + missing - got)
            {
                printf("# op %zu: record invariant\n", op);
                op_fail = (int) op;
            }

        } else if (r < 60) {
            if (ms->n && rng_below(2)) {
                hash = ms->e[rng_below(ms->n)].hash;
            } else {
                hash = bases[rng_below(MODEL_BASES)][rng_below(MODEL_BASE_LEN)];
            }

            got = kvr_index_add_ref(ix, slot[k], hash);

            if (with_model && got != (want = model_add_ref(ms, hash))) {
                printf("# op %zu: add_ref %zu, model %zu\n", op, got, want);
                op_fail = (int) op;
            }

            if (!with_model && got == 0) {
                op_fail = (int) op;
            }

        } else if (r < 72) {
            if (ms->n && rng_below(4)) {
                hash = ms->e[rng_below(ms->n)].hash;
            } else {
                hash = bases[rng_below(MODEL_BASES)][rng_below(MODEL_BASE_LEN)];
            }

            got = kvr_index_remove_ref(ix, slot[k], hash);

            if (with_model && got != (want = model_remove_ref(ms, hash))) {
                printf("# op %zu: remove_ref %zu, model %zu\n", op, got, want);
                op_fail = (int) op;
            }

        } else if (r < 76 && (with_model || rng_below(8) == 0)) {
            kvr_index_clear_slot(ix, slot[k]);
            ms->n = 0;

        } else if (r < 84) {
            /* the tiny region must fill up: mostly unlimited there */
            if (with_model) {
                cap = rng_below(4) ? 1 + rng_below(200) : 0;
            } else {
                cap = rng_below(8) ? 0 : 1 + rng_below(200);
            }

            kvr_index_slot_set_capacity(ix, slot[k], cap);
            ms->capacity = cap;

        } else if (r < 86) {
            kvr_index_release_slot(ix, slot[k]);
            snprintf(name, sizeof(name), "m%d", k);

            if (kvr_index_slot(ix, name, strlen(name)) != slot[k]) {
                printf("# op %zu: release and claim moved the slot\n", op);
                op_fail = (int) op;
            }

            ms->n = 0;
            ms->capacity = 0;
        }

        /* after every operation: block counts and a multi-slot match */

        sum = 0;

        for (i = 0; i < MODEL_SLOTS; i++) {
            sum += slot_blocks(ix, slot[i]);

            if (with_model && slot_blocks(ix, slot[i]) != model[i].n) {
                printf("# op %zu: slot %zu has %llu blocks, model %zu\n", op,
                       i, (unsigned long long) slot_blocks(ix, slot[i]),
                       model[i].n);
                op_fail = (int) op;
            }
        }

        kvr_index_stats(ix, &st);

        if (sum != st.entries || st.entries > st.capacity) {
            printf("# op %zu: slot blocks %llu, entries %llu\n", op,
                   (unsigned long long) sum,
                   (unsigned long long) st.entries);
            op_fail = (int) op;
        }

        n = random_sequence(bases, seq);
        kvr_index_match_slots(ix, slot, MODEL_SLOTS, seq, n, ov);

        for (i = 0; i < MODEL_SLOTS; i++) {
            matched += ov[i];

            if (model[i].n > largest) {
                largest = model[i].n;
            }

            if (ov[i] != kvr_index_match(ix, slot[i], seq, n)
                || (with_model && ov[i] != model_match(&model[i], seq, n)))
            {
                printf("# op %zu: match_slots slot %zu: %u\n", op, i, ov[i]);
                op_fail = (int) op;
            }
        }

        /* now and then: the whole content and the structures */

        if (op % 97 == 0 || op == ops - 1) {
            for (i = 0; with_model && i < MODEL_SLOTS; i++) {
                for (n = 0; n < model[i].n; n++) {
                    if (!present(ix, slot[i], model[i].e[n].hash)) {
                        printf("# op %zu: model entry missing\n", op);
                        op_fail = (int) op;
                        break;
                    }
                }
            }

            if (kvr_index_verify(ix) != 0) {
                bad_ix++;
                op_fail = (int) op;
            }
        }
    }

    tap_ok(op_fail < 0, "%s: %zu random ops agree (first failure op %d)",
           what, op, op_fail);
    tap_is(bad_ix, 0, "random ops: structures verify");

    /* the run exercised something: evictions and non-trivial matches */

    kvr_index_stats(ix, &st);
    printf("# %s: %zu evicted, %llu of them full, %zu blocks matched, "
           "largest model slot %zu\n", what, evicted,
           (unsigned long long) st.evictions_full, matched, largest);
    tap_ok(evicted > ops && matched > ops, "%s: the run evicted and matched",
           what);

    if (with_model) {
        tap_is(st.evictions_full, 0, "model run: region never full");

    } else {
        tap_ok(st.evictions_full > ops, "tiny run: region often full");
    }

    for (k = 0; k < MODEL_SLOTS; k++) {
        free(model[k].e);
    }

    free(mem);
}


int
main(void)
{
    test_layout_and_reload();
    test_slot_names();
    test_match();
    test_lru();
    test_full();
    test_refs();
    random_run("model", REGION_MODEL, 1, MODEL_OPS);
    random_run("tiny region", kvr_index_min_size(), 0, MODEL_OPS);

    return tap_done();
}
