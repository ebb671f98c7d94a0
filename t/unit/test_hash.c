/*
 * Copyright (C) kvroute developers
 *
 * Block keys: fixed vectors from a separate XXH3 build, chains recomputed
 * step by step with direct XXH3 calls, prefix property, seed separation,
 * tail dropping and output bounds.
 */

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "kvr_hash.h"
#include "tap.h"


#define BS      16
#define NBLK    8


/* little-endian encodings written out without relying on host order */
static void
put_le32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char) v;
    p[1] = (unsigned char) (v >> 8);
    p[2] = (unsigned char) (v >> 16);
    p[3] = (unsigned char) (v >> 24);
}


static void
put_le64(unsigned char *p, uint64_t v)
{
    int  i;

    for (i = 0; i < 8; i++) {
        p[i] = (unsigned char) (v >> (8 * i));
    }
}


/* the reference chain: block hashes then seq[i] = h(le64 prev, le64 blk) */
static size_t
ref_token_chain(const uint32_t *ids, size_t n, size_t bs, uint64_t seed,
    uint64_t *out)
{
    size_t          i, k, nb;
    uint64_t        blk, prev;
    unsigned char   bytes[4 * 256], pair[16];

    if (bs == 0 || bs > 256) {
        return 0;
    }

    nb = n / bs;
    prev = 0;

    for (i = 0; i < nb; i++) {
        for (k = 0; k < bs; k++) {
            put_le32(bytes + 4 * k, ids[i * bs + k]);
        }

        blk = XXH3_64bits_withSeed(bytes, 4 * bs, seed);

        if (i == 0) {
            prev = blk;

        } else {
            put_le64(pair, prev);
            put_le64(pair + 8, blk);
            prev = XXH3_64bits_withSeed(pair, 16, 1337);
        }

        out[i] = prev;
    }

    return nb;
}


static int
all_equal(const uint64_t *a, const uint64_t *b, size_t n)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        if (a[i] != b[i]) {
            return 0;
        }
    }

    return 1;
}


static int
all_differ(const uint64_t *a, const uint64_t *b, size_t n)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        if (a[i] == b[i]) {
            return 0;
        }
    }

    return 1;
}


/*
 * Vectors computed outside this code base: a small node.js script using
 * the npm package hash-wasm 4.13.0 (its own XXH3 build) with the scheme of
 * routers.md A.2 written out in JS: block = xxhash3(le u32 bytes, seed),
 * seq = xxhash3(le64 prev || le64 block, 1337), seed = 1337 +
 * xxhash3("my-lora", 0) + xxhash3("tenant-a", 1) mod 2^64.
 */
static void
test_fixed_vectors(void)
{
    size_t     i, n;
    uint32_t   ids[13];
    uint64_t   seed, out[8];

    static const char      *fox = "The quick brown fox jumps over the lazy dog";
    static const uint64_t   tok1337[3] = {
        0xa1e4428d0233f5cdULL, 0xa6f9ae110a5cd471ULL, 0xe93f97450e560bf0ULL
    };
    static const uint64_t   tok_seeded[3] = {
        0xf7c1d85fa121ae2dULL, 0x14125fe97a99f5d5ULL, 0x7fad0a4d4b04fa61ULL
    };

    for (i = 0; i < 13; i++) {
        ids[i] = (uint32_t) (i * 0x01020304u + 7);
    }

    ids[5] = 0xffffffffu;

    n = kvr_hash_token_blocks(ids, 13, 4, KVR_HASH_SEED, out, 8);
    tap_is(n, 3, "fixed: 13 ids, block 4 -> 3 blocks");
    tap_ok(all_equal(out, tok1337, 3), "fixed: token chain, seed 1337");

    seed = kvr_hash_seed("my-lora", 7, "tenant-a", 8);
    tap_ok(seed == 0xcd0d78268611495aULL, "fixed: seed with lora and salt");

    n = kvr_hash_token_blocks(ids, 13, 4, seed, out, 8);
    tap_is(n, 3, "fixed: seeded, 3 blocks");
    tap_ok(all_equal(out, tok_seeded, 3), "fixed: token chain, lora+salt");

    tap_ok(kvr_hash_seed(NULL, 0, "", 0) == 0x4dc5b0cc826f6c3cULL,
           "fixed: empty salt counts as present");

    /* text: each chunk seeded with the previous key, step by step */
    n = kvr_hash_text_blocks(fox, strlen(fox), 8, KVR_HASH_SEED, out, 8);
    tap_is(n, 5, "fixed: 43 bytes in 8-byte chunks -> 5");
    seed = KVR_HASH_SEED;
    for (i = 0; i < 5; i++) {
        seed = XXH3_64bits_withSeed(fox + 8 * i, 8, seed);
        tap_ok(out[i] == seed, "text chain: chunk %zu seeded by chunk %zu",
               i, i - 1);
    }
    tap_ok(out[1] != XXH3_64bits_withSeed(fox + 8, 8, KVR_HASH_SEED),
           "text chain: a chunk's key depends on the one before");
}


static void
test_step_by_step(uint32_t *ids, size_t n)
{
    size_t          got, want;
    uint64_t        seed, a[NBLK], b[NBLK], lh, sh;
    unsigned char   pair[16];

    got = kvr_hash_token_blocks(ids, n, BS, KVR_HASH_SEED, a, NBLK);
    want = ref_token_chain(ids, n, BS, KVR_HASH_SEED, b);
    tap_ok(got == NBLK && want == NBLK, "step: block count");
    tap_ok(all_equal(a, b, want), "step: chain equals direct XXH3 calls");

    /* a block larger than any internal conversion buffer */
    got = kvr_hash_token_blocks(ids, n, 130, KVR_HASH_SEED, a, NBLK);
    want = ref_token_chain(ids, n, 130, KVR_HASH_SEED, b);
    tap_ok(got == 1 && want == 1 && a[0] == b[0], "step: 130-token block");

    lh = XXH3_64bits_withSeed("adapter-x", 9, 0);
    sh = XXH3_64bits_withSeed("ns", 2, 1);
    seed = kvr_hash_seed("adapter-x", 9, "ns", 2);
    tap_ok(seed == (uint64_t) 1337 + lh + sh, "step: seed = 1337+lora+salt");
    tap_ok(kvr_hash_seed(NULL, 0, NULL, 0) == 1337, "step: bare seed 1337");
    tap_ok(kvr_hash_seed("adapter-x", 9, NULL, 0) == 1337 + lh,
           "step: lora only");
    tap_ok(kvr_hash_seed(NULL, 0, "ns", 2) == 1337 + sh, "step: salt only");

    got = kvr_hash_token_blocks(ids, n, BS, seed, a, NBLK);
    want = ref_token_chain(ids, n, BS, seed, b);
    tap_ok(got == NBLK && want == NBLK && all_equal(a, b, NBLK),
           "step: seeded chain");

    put_le64(pair, 0x0102030405060708ULL);
    put_le64(pair + 8, 0xf0e0d0c0b0a09080ULL);
    tap_ok(kvr_hash_chain(0x0102030405060708ULL, 0xf0e0d0c0b0a09080ULL)
           == XXH3_64bits_withSeed(pair, 16, 1337), "step: chain of two");
}


static void
test_prefix(uint32_t *ids, size_t n)
{
    size_t     k, na, nb;
    uint32_t  *other;
    uint64_t   a[NBLK], b[NBLK];

    other = malloc(n * sizeof(uint32_t));
    if (other == NULL) {
        tap_ok(0, "prefix: malloc");
        return;
    }

    na = kvr_hash_token_blocks(ids, n, BS, KVR_HASH_SEED, a, NBLK);

    for (k = 0; k < NBLK; k++) {
        memcpy(other, ids, n * sizeof(uint32_t));
        /* one token of block k changes: the last one of the block */
        other[k * BS + BS - 1] ^= 0x40;

        nb = kvr_hash_token_blocks(other, n, BS, KVR_HASH_SEED, b, NBLK);

        tap_ok(na == nb && all_equal(a, b, k) && all_differ(a + k, b + k,
                                                            na - k),
               "prefix: sharing %zu blocks shares exactly %zu hashes", k, k);
    }

    free(other);
}


static void
test_seed_separation(uint32_t *ids, size_t n)
{
    size_t    i;
    uint64_t  plain[NBLK], v[5][NBLK], seeds[5];

    seeds[0] = kvr_hash_seed("lora-a", 6, NULL, 0);
    seeds[1] = kvr_hash_seed("lora-b", 6, NULL, 0);
    seeds[2] = kvr_hash_seed(NULL, 0, "lora-a", 6);
    seeds[3] = kvr_hash_seed("", 0, NULL, 0);
    seeds[4] = kvr_hash_seed("lora-a", 6, "s", 1);

    kvr_hash_token_blocks(ids, n, BS, KVR_HASH_SEED, plain, NBLK);

    for (i = 0; i < 5; i++) {
        kvr_hash_token_blocks(ids, n, BS, seeds[i], v[i], NBLK);
        tap_ok(all_differ(plain, v[i], NBLK),
               "seed: variant %zu changes every hash", i);
    }

    tap_ok(all_differ(v[0], v[1], NBLK), "seed: two loras differ");
    tap_ok(all_differ(v[0], v[2], NBLK), "seed: same name lora vs salt");
    tap_ok(all_differ(v[0], v[4], NBLK), "seed: adding a salt to a lora");
}


static void
test_bounds(uint32_t *ids, size_t n)
{
    size_t          i, got;
    uint64_t        full[NBLK], out[NBLK + 2];
    unsigned char  *bytes;

    kvr_hash_token_blocks(ids, NBLK * BS, BS, 7, full, NBLK);

    /* partial tail: NBLK-1 full blocks plus BS-1 tokens */
    got = kvr_hash_token_blocks(ids, (NBLK - 1) * BS + BS - 1, BS, 7, out,
                                NBLK + 2);
    tap_is(got, NBLK - 1, "tail: partial token block dropped");
    tap_ok(all_equal(out, full, NBLK - 1), "tail: full blocks unchanged");

    got = kvr_hash_token_blocks(ids, BS - 1, BS, 7, out, NBLK);
    tap_is(got, 0, "tail: less than one block -> 0");

    for (i = 0; i < NBLK + 2; i++) {
        out[i] = 0x5a5a5a5a5a5a5a5aULL;
    }

    got = kvr_hash_token_blocks(ids, n, BS, 7, out, 3);
    tap_is(got, 3, "max_out: token count capped");
    tap_ok(all_equal(out, full, 3) && out[3] == 0x5a5a5a5a5a5a5a5aULL,
           "max_out: token writes stop at max_out");

    tap_is(kvr_hash_token_blocks(ids, n, BS, 7, NULL, 0), 0,
           "max_out: 0 writes nothing");
    tap_is(kvr_hash_token_blocks(ids, n, 0, 7, out, NBLK), 0,
           "block size 0 -> 0");
    tap_is(kvr_hash_text_blocks("abc", 3, 0, 7, out, NBLK), 0,
           "chunk size 0 -> 0");

    /* text chunks over the same bytes as the token blocks */
    bytes = malloc(n * 4);
    if (bytes == NULL) {
        tap_ok(0, "text: malloc");
        return;
    }

    for (i = 0; i < n; i++) {
        put_le32(bytes + 4 * i, ids[i]);
    }

    got = kvr_hash_text_blocks(bytes, NBLK * BS * 4, BS * 4, 7, out,
                               NBLK + 2);
    tap_is(got, NBLK, "text: block count");
    tap_ok(out[0] == XXH3_64bits_withSeed(bytes, BS * 4, 7),
           "text: first chunk hashed with the seed");
    tap_ok(out[NBLK - 1] == XXH3_64bits_withSeed(bytes + (NBLK - 1) * BS * 4,
                                                 BS * 4, out[NBLK - 2]),
           "text: last chunk seeded by the one before");

    out[2] = 0x5a5a5a5a5a5a5a5aULL;
    got = kvr_hash_text_blocks(bytes, NBLK * BS * 4 - 1, BS * 4, 7, out, 2);
    tap_is(got, 2, "text: max_out caps");
    tap_ok(out[2] == 0x5a5a5a5a5a5a5a5aULL, "text: writes stop at max_out");

    got = kvr_hash_text_blocks(bytes, NBLK * BS * 4 - 1, BS * 4, 7, out,
                               NBLK + 2);
    tap_is(got, NBLK - 1, "text: partial tail dropped");

    free(bytes);
}


/*
 * Text given in pieces: the keys of the concatenation whatever the cut,
 * with pieces shorter and longer than a chunk, empty ones, and a cap.
 */
static void
test_text_pieces(void)
{
    size_t            i, c, k, len, cut, got, total, pattern;
    size_t            chunks[] = { 1, 7, 64, 999, 1000, 1001 };
    uint64_t          x, ref[1100], out[1100];
    unsigned char     bytes[1000], part[1001];
    kvr_hash_text_t   ht;
    int               same;

    x = 0x243f6a8885a308d3ULL;

    for (i = 0; i < sizeof(bytes); i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        bytes[i] = (unsigned char) x;
    }

    len = sizeof(bytes);
    same = 1;

    for (c = 0; c < sizeof(chunks) / sizeof(chunks[0]); c++) {
        got = kvr_hash_text_blocks(bytes, len, chunks[c], 99, ref, 1100);

        for (pattern = 0; pattern < 5; pattern++) {
            kvr_hash_text_init(&ht, chunks[c], 99, out, 1100, part);

            for (i = 0; i < len; i += cut) {
                /* piece lengths: 0 and 1 included, and over a chunk */
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;

                switch (pattern) {
                case 0:
                    cut = 1;
                    break;
                case 1:
                    cut = x % 5;
                    break;
                case 2:
                    cut = x % (2 * chunks[c] + 1);
                    break;
                case 3:
                    cut = chunks[c];
                    break;
                default:
                    cut = len;
                    break;
                }

                if (cut > len - i) {
                    cut = len - i;
                }

                kvr_hash_text_add(&ht, bytes + i, cut);
            }

            if (ht.n != got || ht.len != len || !all_equal(out, ref, got)) {
                same = 0;
                printf("# chunk %zu pattern %zu: %zu keys, want %zu\n",
                       chunks[c], pattern, ht.n, got);
            }
        }
    }

    tap_ok(same, "pieces: the keys of the whole text, however it is cut");

    /* the default chunk's own XXH3 against the library's */
    same = 1;

    for (k = 0; k < 20000; k++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;

        i = (size_t) (x % (len - 64));

        if (kvr_hash_text_chunk64(bytes + i, x)
            != XXH3_64bits_withSeed(bytes + i, 64, x))
        {
            same = 0;
        }
    }

    tap_ok(same, "pieces: 64-byte chunks hash as XXH3_64bits_withSeed");

    /* a cap stops the writes; the length still counts every byte */
    for (i = 0; i < 8; i++) {
        out[i] = 0x5a5a5a5a5a5a5a5aULL;
    }

    kvr_hash_text_init(&ht, 64, 99, out, 3, part);
    total = 0;

    for (k = 0; k < 10; k++) {
        kvr_hash_text_add(&ht, bytes + total, 50);
        total += 50;
    }

    got = kvr_hash_text_blocks(bytes, total, 64, 99, ref, 3);
    tap_ok(ht.n == 3 && got == 3 && all_equal(out, ref, 3)
           && out[3] == 0x5a5a5a5a5a5a5a5aULL && ht.len == 500,
           "pieces: max_out caps the keys, not the length");

    kvr_hash_text_init(&ht, 64, 99, out, 8, part);
    kvr_hash_text_add(&ht, bytes, 63);
    tap_ok(ht.n == 0, "pieces: no key before a chunk is complete");
    kvr_hash_text_add(&ht, bytes + 63, 1);
    tap_ok(ht.n == 1 && out[0] == XXH3_64bits_withSeed(bytes, 64, 99),
           "pieces: a chunk completed across two pieces");

    kvr_hash_text_init(&ht, 0, 99, out, 8, part);
    kvr_hash_text_add(&ht, bytes, 100);
    tap_ok(ht.n == 0, "pieces: chunk size 0 -> no keys");
}


/*
 * Long pieces seen again are keyed from the memo: the same keys as the
 * whole text hashed afresh, whatever came before the piece, also when a
 * piece differs from a kept one only inside, or the keys run out.
 */
static void
test_text_memo(void)
{
    int               ok;
    size_t            i, round, before, got, cap, hits;
    uint64_t          x, ref[400], out[400];
    unsigned char    *text, part[64];
    kvr_hash_text_t   ht;

    text = malloc(24000);
    if (text == NULL) {
        tap_ok(0, "memo: malloc");
        return;
    }

    x = 0x6a09e667f3bcc909ULL;

    for (i = 0; i < 20000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        text[i] = (unsigned char) ('a' + x % 26);
    }

    ok = 1;
    hits = 0;

    /* a 5000-byte piece after 0, 13 or 63 bytes, each three times */
    for (round = 0; round < 9; round++) {
        before = (round % 3 == 0) ? 0 : (round % 3 == 1) ? 13 : 63;

        kvr_hash_text_init(&ht, 64, 7, out, 400, part);
        kvr_hash_text_add(&ht, text + 10000, before);
        kvr_hash_text_add(&ht, text, 5000);
        kvr_hash_text_add(&ht, text + 12000, 100);

        /* the reference: the same bytes in one buffer, no memo */
        memcpy(text + 15000, text + 10000, before);
        memcpy(text + 15000 + before, text, 5000);
        memcpy(text + 15000 + before + 5000, text + 12000, 100);
        got = kvr_hash_text_blocks(text + 15000, before + 5100, 64, 7, ref,
                                   400);

        if (ht.n != got || ht.len != before + 5100
            || !all_equal(out, ref, got))
        {
            ok = 0;
        }

        hits += (round >= 6);
    }

    tap_ok(ok && hits == 3,
           "memo: a piece seen again keyed as afresh, after any start");

    /* the same length and ends, one byte changed inside */
    kvr_hash_text_init(&ht, 64, 7, out, 400, part);
    text[2500] ^= 1;
    kvr_hash_text_add(&ht, text, 5000);
    got = kvr_hash_text_blocks(text, 5000, 64, 7, ref, 400);
    tap_ok(ht.n == got && all_equal(out, ref, got),
           "memo: a piece changed inside is not taken for the kept one");
    text[2500] ^= 1;

    /* room for fewer keys than the kept piece made */
    for (cap = 10; cap <= 78; cap += 68) {
        kvr_hash_text_init(&ht, 64, 7, out, cap, part);
        kvr_hash_text_add(&ht, text, 5000);
        kvr_hash_text_add(&ht, text + 5000, 64);
        got = kvr_hash_text_blocks(text, 5064, 64, 7, ref, cap);
        ok = (ht.n == got && all_equal(out, ref, got));

        if (!ok) {
            break;
        }
    }

    tap_ok(ok, "memo: the keys stop at max_out as without it");

    /* more long pieces than the memo keeps: still right */
    ok = 1;

    for (round = 0; round < 600; round++) {
        i = (round * 37) % 14000;

        kvr_hash_text_init(&ht, 64, round % 3, out, 400, part);
        kvr_hash_text_add(&ht, text + i, 600 + round % 5000 % 4000);
        got = kvr_hash_text_blocks(text + i, 600 + round % 5000 % 4000, 64,
                                   round % 3, ref, 400);

        if (ht.n != got || !all_equal(out, ref, got)) {
            ok = 0;
        }
    }

    tap_ok(ok, "memo: 600 pieces of many lengths, seen twice or more");

    free(text);
}


/* kv mode's salted chains: the salt as the first block's virtual parent */
static void
test_salted(const uint32_t *ids, size_t n)
{
    size_t         i, j;
    uint64_t       seed, plain[4], salted[4], want[4], b;
    unsigned char  le[4 * BS];

    seed = kvr_hash_seed(NULL, 0, NULL, 0);
    kvr_hash_token_blocks(ids, 4 * BS, BS, seed, plain, 4);

    tap_ok(kvr_hash_token_blocks_salted(ids, 4 * BS, BS, seed, NULL, 0,
                                        salted, 4) == 4
           && memcmp(plain, salted, sizeof(plain)) == 0,
           "salted without a salt: the plain keys");

    kvr_hash_token_blocks_salted(ids, 4 * BS, BS, seed, "t", 1, salted, 4);

    /* by the definition: chained from XXH3_64("t", seed 2) */
    b = XXH3_64bits_withSeed("t", 1, 2);
    for (i = 0; i < 4; i++) {
        for (j = 0; j < BS; j++) {
            le[4 * j] = (unsigned char) ids[i * BS + j];
            le[4 * j + 1] = (unsigned char) (ids[i * BS + j] >> 8);
            le[4 * j + 2] = (unsigned char) (ids[i * BS + j] >> 16);
            le[4 * j + 3] = (unsigned char) (ids[i * BS + j] >> 24);
        }

        b = kvr_hash_chain(b, XXH3_64bits_withSeed(le, sizeof(le), seed));
        want[i] = b;
    }

    tap_ok(memcmp(want, salted, sizeof(want)) == 0,
           "salted: chained after XXH3_64(salt, 2), blocks with the "
           "unsalted seed");
    tap_ok(salted[0] != plain[0] && salted[3] != plain[3],
           "salted keys differ from the plain ones");

    kvr_hash_token_blocks_after(salted[1], ids + 2 * BS, 2 * BS, BS, seed,
                                want, 2);
    tap_ok(want[0] == salted[2] && want[1] == salted[3],
           "a salted chain continues without the salt");

    (void) n;
}


int
main(void)
{
    size_t     i, n;
    uint32_t  *ids;
    uint64_t   x;

    n = NBLK * BS + 5;
    ids = malloc(n * sizeof(uint32_t));
    if (ids == NULL) {
        return 1;
    }

    /* deterministic pseudo-random ids spanning all four bytes */
    x = 0x9e3779b97f4a7c15ULL;
    for (i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        ids[i] = (uint32_t) x;
    }

    test_fixed_vectors();
    test_step_by_step(ids, n);
    test_prefix(ids, n);
    test_seed_separation(ids, n);
    test_bounds(ids, n);
    test_text_pieces();
    test_text_memo();
    test_text_memo();
    test_salted(ids, n);

    free(ids);

    return tap_done();
}
