/*
 * Copyright (C) kvroute developers
 *
 * Block keys (scheme in kvr_hash.h): XXH3-64 per block, chained with
 * seed KVR_HASH_SEED.
 */

#include <stdlib.h>
#include <string.h>

/*
 * XXH3 compiled in from the library's header (its documented inline mode):
 * a text chunk is short, so the call and the length dispatch of the
 * shared library cost about a third of its hash; the XXH3 state on the
 * stack (portable path) needs the definitions this also brings
 */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "kvr_hash.h"


/* text_chunk's default: 4 bytes a token, 16 tokens a block */
#define KVR_HASH_TEXT_CHUNK  64

/* the memo of long pieces: which pieces, how many, how many bytes */
#define KVR_HASH_MEMO_MIN    512
#define KVR_HASH_MEMO_MAX    (64 * 1024)
#define KVR_HASH_MEMO_SLOTS  256
#define KVR_HASH_MEMO_TOTAL  (1024 * 1024)


typedef struct {
    uint64_t         fp;          /* fingerprint of state, length, ends */
    unsigned char   *bytes;       /* the piece, then its keys (8-aligned) */
    size_t           size;        /* allocated */
    size_t           len;         /* the piece's length; 0: not kept */
    size_t           nkeys;
    uint64_t         seq;         /* the chain's state before the piece */
    size_t           part_len;    /* and the chunk begun before it */
    unsigned char    part[KVR_HASH_TEXT_CHUNK];
} kvr_hash_memo_t;


/* one per process; not for use from several threads at once */
static kvr_hash_memo_t  kvr_hash_memos[KVR_HASH_MEMO_SLOTS];
static size_t           kvr_hash_memo_bytes;


static void kvr_hash_text_memo(kvr_hash_text_t *ht, const unsigned char *p,
    size_t len);
static uint64_t kvr_hash_mix(uint64_t a, uint64_t b);
static void kvr_hash_text_feed(kvr_hash_text_t *ht,
    const unsigned char *data, size_t len);

/* token ids converted to little-endian bytes per round on big-endian hosts */
#define KVR_HASH_CONV_IDS  64


#if defined(__SIZEOF_INT128__) && XXH_VERSION_NUMBER >= 800 \
    && !defined(KVR_HASH_NO_CHUNK64)

#define KVR_HASH_CHUNK64  1

/*
 * XXH3_64bits_withSeed() of exactly 64 bytes, as the XXH3 specification
 * defines it for 17 to 128 bytes: four 16-byte halves, each xored with
 * the default secret plus or minus the seed, multiplied to 128 bits and
 * folded, summed onto len * PRIME64_1, then avalanched.  The fold is done
 * here in registers: the header's goes through a struct that GCC keeps on
 * the stack, in the chain of every text chunk.  t/unit/test_hash.c checks
 * it against the library.
 */

static inline uint64_t
kvr_hash_mix16(const unsigned char *p, const unsigned char *secret,
    uint64_t seed)
{
    uint64_t  a, b;

    a = XXH_readLE64(p) ^ (XXH_readLE64(secret) + seed);
    b = XXH_readLE64(p + 8) ^ (XXH_readLE64(secret + 8) - seed);

#if defined(__x86_64__) && defined(__GNUC__)
    {
        uint64_t  lo, hi;

        /* GCC 12 spills a __uint128_t product to the stack: mulq itself */
        __asm__ ("mulq %3" : "=a" (lo), "=d" (hi) : "a" (a), "rm" (b)
                 : "cc");

        return lo ^ hi;
    }
#else
    {
        __uint128_t  product;

        product = (__uint128_t) a * b;

        return (uint64_t) product ^ (uint64_t) (product >> 64);
    }
#endif
}


static inline uint64_t
kvr_hash_chunk64(const unsigned char *p, uint64_t seed)
{
    uint64_t  acc;

    acc = 64 * XXH_PRIME64_1;
    acc += kvr_hash_mix16(p, XXH3_kSecret, seed);
    acc += kvr_hash_mix16(p + 48, XXH3_kSecret + 16, seed);
    acc += kvr_hash_mix16(p + 16, XXH3_kSecret + 32, seed);
    acc += kvr_hash_mix16(p + 32, XXH3_kSecret + 48, seed);

    return XXH3_avalanche(acc);
}

#endif


uint64_t
kvr_hash_text_chunk64(const void *data, uint64_t seed)
{
#if (KVR_HASH_CHUNK64)
    return kvr_hash_chunk64(data, seed);
#else
    return XXH3_64bits_withSeed(data, 64, seed);
#endif
}


static void
kvr_hash_put_le64(unsigned char *p, uint64_t v)
{
    unsigned  i;

    for (i = 0; i < 8; i++) {
        p[i] = (unsigned char) (v >> (8 * i));
    }
}


static uint64_t
kvr_hash_ids_le(const uint32_t *ids, size_t n, uint64_t seed)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ \
    && !defined(KVR_HASH_FORCE_PORTABLE)

    /* the in-memory layout already is the little-endian byte string */
    return XXH3_64bits_withSeed(ids, n * sizeof(uint32_t), seed);

#else

    /*
     * portable path: convert a bounded piece at a time and stream it,
     * streaming XXH3 gives the same value as the one-shot call
     */
    size_t          i, k, piece;
    uint64_t        hash;
    XXH3_state_t    state;
    unsigned char   buf[KVR_HASH_CONV_IDS * 4];

    if (n <= KVR_HASH_CONV_IDS) {
        for (i = 0; i < n; i++) {
            buf[4 * i] = (unsigned char) ids[i];
            buf[4 * i + 1] = (unsigned char) (ids[i] >> 8);
            buf[4 * i + 2] = (unsigned char) (ids[i] >> 16);
            buf[4 * i + 3] = (unsigned char) (ids[i] >> 24);
        }

        return XXH3_64bits_withSeed(buf, n * 4, seed);
    }

    XXH3_INITSTATE(&state);
    (void) XXH3_64bits_reset_withSeed(&state, seed);

    for (i = 0; i < n; i += piece) {
        piece = n - i < KVR_HASH_CONV_IDS ? n - i : KVR_HASH_CONV_IDS;

        for (k = 0; k < piece; k++) {
            buf[4 * k] = (unsigned char) ids[i + k];
            buf[4 * k + 1] = (unsigned char) (ids[i + k] >> 8);
            buf[4 * k + 2] = (unsigned char) (ids[i + k] >> 16);
            buf[4 * k + 3] = (unsigned char) (ids[i + k] >> 24);
        }

        (void) XXH3_64bits_update(&state, buf, piece * 4);
    }

    hash = XXH3_64bits_digest(&state);

    return hash;

#endif
}


uint64_t
kvr_hash_seed(const char *lora, size_t lora_len, const char *salt,
    size_t salt_len)
{
    uint64_t  seed;

    seed = KVR_HASH_SEED;

    /* unsigned additions wrap, as in dynamo */
    if (lora != NULL) {
        seed += XXH3_64bits_withSeed(lora, lora_len, 0);
    }

    if (salt != NULL) {
        seed += XXH3_64bits_withSeed(salt, salt_len, 1);
    }

    return seed;
}


uint64_t
kvr_hash_chain(uint64_t parent, uint64_t block)
{
    unsigned char  buf[16];

    kvr_hash_put_le64(buf, parent);
    kvr_hash_put_le64(buf + 8, block);

    return XXH3_64bits_withSeed(buf, sizeof(buf), KVR_HASH_SEED);
}


uint64_t
kvr_hash_salt_root(const char *salt, size_t salt_len)
{
    /* seed 2: neither a seed's salt term (1) nor its LoRA term (0) */
    return XXH3_64bits_withSeed(salt, salt_len, 2);
}


size_t
kvr_hash_token_blocks_salted(const uint32_t *ids, size_t n,
    size_t block_size, uint64_t seed, const char *salt, size_t salt_len,
    uint64_t *out, size_t max_out)
{
    if (salt == NULL) {
        return kvr_hash_token_blocks(ids, n, block_size, seed, out, max_out);
    }

    return kvr_hash_token_blocks_after(kvr_hash_salt_root(salt, salt_len),
                                       ids, n, block_size, seed, out,
                                       max_out);
}


size_t
kvr_hash_text_blocks(const void *data, size_t len, size_t chunk_bytes,
    uint64_t seed, uint64_t *out, size_t max_out)
{
    size_t                i, n;
    uint64_t              seq;
    const unsigned char  *p;

    if (chunk_bytes == 0 || data == NULL) {
        return 0;
    }

    /* full chunks only: a partial tail is dropped */
    n = len / chunk_bytes;

    if (n > max_out) {
        n = max_out;
    }

    p = data;
    seq = seed;

    /*
     * one hash a chunk, seeded with the previous one: still a chain (a
     * chunk's key depends on every chunk before it) at half the cost of
     * hashing the pair; text keys need no compatibility with anyone
     */

    for (i = 0; i < n; i++) {
        seq = XXH3_64bits_withSeed(p + i * chunk_bytes, chunk_bytes, seq);
        out[i] = seq;
    }

    return n;
}


void
kvr_hash_text_init(kvr_hash_text_t *ht, size_t chunk_bytes, uint64_t seed,
    uint64_t *out, size_t max_out, unsigned char *part)
{
    ht->seq = seed;
    ht->chunk_bytes = chunk_bytes;
    ht->out = out;
    ht->max_out = (chunk_bytes == 0 || part == NULL) ? 0 : max_out;
    ht->n = 0;
    ht->len = 0;
    ht->part = part;
    ht->part_len = 0;
}


void
kvr_hash_text_add(kvr_hash_text_t *ht, const void *data, size_t len)
{
    if (len >= KVR_HASH_MEMO_MIN && len <= KVR_HASH_MEMO_MAX
        && ht->chunk_bytes == KVR_HASH_TEXT_CHUNK && ht->n < ht->max_out)
    {
        kvr_hash_text_memo(ht, data, len);
        return;
    }

    kvr_hash_text_feed(ht, data, len);
}


/*
 * A long piece seen again from the same state (a system prompt, tools)
 * gets the keys it got before: its bytes are compared, not hashed.  The
 * memo is per process; a slot is chosen by a fingerprint of the state,
 * the length and both ends of the piece, and filled the second time that
 * fingerprint is seen, so that pieces seen once cost only the fingerprint.
 */

static void
kvr_hash_text_memo(kvr_hash_text_t *ht, const unsigned char *p, size_t len)
{
    size_t            n0, k, tail, off, size;
    uint64_t          fp, head, end, seq0;
    unsigned char     part0[KVR_HASH_TEXT_CHUNK];
    kvr_hash_memo_t  *m;

    memcpy(&head, p, 8);
    memcpy(&end, p + len - 8, 8);

    fp = kvr_hash_mix(ht->seq ^ (len << 8) ^ ht->part_len,
                      head ^ kvr_hash_mix(end, len));

    m = &kvr_hash_memos[fp % KVR_HASH_MEMO_SLOTS];
    off = (len + 7) & ~(size_t) 7;

    if (m->fp == fp && m->len == len && m->seq == ht->seq
        && m->part_len == ht->part_len
        && memcmp(m->part, ht->part, ht->part_len) == 0
        && ht->max_out - ht->n >= m->nkeys
        && memcmp(m->bytes, p, len) == 0)
    {
        memcpy(ht->out + ht->n, m->bytes + off, m->nkeys * sizeof(uint64_t));
        ht->n += m->nkeys;

        if (m->nkeys > 0) {
            ht->seq = ht->out[ht->n - 1];
        }

        /* the chunk begun by the piece: its last bytes (len > a chunk) */
        tail = (ht->part_len + len) % KVR_HASH_TEXT_CHUNK;
        memcpy(ht->part, p + len - tail, tail);
        ht->part_len = tail;
        ht->len += len;

        return;
    }

    seq0 = ht->seq;
    k = ht->part_len;
    memcpy(part0, ht->part, k);
    n0 = ht->n;

    kvr_hash_text_feed(ht, p, len);

    if (m->fp != fp) {
        /* seen once: remembered by its fingerprint only */
        m->fp = fp;
        m->len = 0;
        return;
    }

    /* seen twice, and all its keys made: kept */

    if ((k + len) / KVR_HASH_TEXT_CHUNK != ht->n - n0) {
        return;
    }

    size = off + (ht->n - n0) * sizeof(uint64_t);

    if (m->size < size) {
        if (kvr_hash_memo_bytes - m->size + size > KVR_HASH_MEMO_TOTAL) {
            return;
        }

        free(m->bytes);
        kvr_hash_memo_bytes -= m->size;
        m->size = 0;
        m->len = 0;

        m->bytes = malloc(size);
        if (m->bytes == NULL) {
            return;
        }

        m->size = size;
        kvr_hash_memo_bytes += size;
    }

    memcpy(m->bytes, p, len);
    memcpy(m->bytes + off, ht->out + n0, (ht->n - n0) * sizeof(uint64_t));
    m->len = len;
    m->nkeys = ht->n - n0;
    m->seq = seq0;
    m->part_len = k;
    memcpy(m->part, part0, k);
}


static uint64_t
kvr_hash_mix(uint64_t a, uint64_t b)
{
    uint64_t  z;

    z = (a ^ (b * 0x9e3779b97f4a7c15ULL)) * 0xbf58476d1ce4e5b9ULL;
    z ^= z >> 29;
    z *= 0x94d049bb133111ebULL;

    return z ^ (z >> 32);
}


static void
kvr_hash_text_feed(kvr_hash_text_t *ht, const unsigned char *data,
    size_t len)
{
    size_t                take, chunk, n;
    uint64_t              seq;
    const unsigned char  *p;

    ht->len += len;

    if (ht->n == ht->max_out) {
        return;
    }

    p = data;
    chunk = ht->chunk_bytes;

    /* first the chunk begun by earlier pieces */

    if (ht->part_len > 0) {
        take = chunk - ht->part_len;

        if (take > len) {
            take = len;
        }

        memcpy(ht->part + ht->part_len, p, take);
        ht->part_len += take;
        p += take;
        len -= take;

        if (ht->part_len < chunk) {
            return;
        }

        ht->seq = XXH3_64bits_withSeed(ht->part, chunk, ht->seq);
        ht->out[ht->n++] = ht->seq;
        ht->part_len = 0;
    }

    /* whole chunks where they lie (locals: out may alias the state) */

    n = ht->n;
    seq = ht->seq;

    if (chunk == KVR_HASH_TEXT_CHUNK) {

        /* the default chunk: a constant length inlines XXH3's short path */

        while (len >= KVR_HASH_TEXT_CHUNK && n < ht->max_out) {
#if (KVR_HASH_CHUNK64)
            seq = kvr_hash_chunk64(p, seq);
#else
            seq = XXH3_64bits_withSeed(p, KVR_HASH_TEXT_CHUNK, seq);
#endif
            ht->out[n++] = seq;
            p += KVR_HASH_TEXT_CHUNK;
            len -= KVR_HASH_TEXT_CHUNK;
        }
    }

    while (len >= chunk && n < ht->max_out) {
        seq = XXH3_64bits_withSeed(p, chunk, seq);
        ht->out[n++] = seq;
        p += chunk;
        len -= chunk;
    }

    ht->n = n;
    ht->seq = seq;

    if (len > 0 && n < ht->max_out) {
        memcpy(ht->part, p, len);
        ht->part_len = len;
    }
}


size_t
kvr_hash_token_blocks(const uint32_t *ids, size_t n, size_t block_size,
    uint64_t seed, uint64_t *out, size_t max_out)
{
    size_t    i, nblocks;
    uint64_t  block, seq;

    if (block_size == 0 || ids == NULL) {
        return 0;
    }

    nblocks = n / block_size;

    if (nblocks > max_out) {
        nblocks = max_out;
    }

    seq = 0;

    for (i = 0; i < nblocks; i++) {
        block = kvr_hash_ids_le(ids + i * block_size, block_size, seed);
        seq = (i == 0) ? block : kvr_hash_chain(seq, block);
        out[i] = seq;
    }

    return nblocks;
}


size_t
kvr_hash_token_blocks_after(uint64_t parent, const uint32_t *ids, size_t n,
    size_t block_size, uint64_t seed, uint64_t *out, size_t max_out)
{
    size_t    i, nblocks;
    uint64_t  seq;

    if (block_size == 0 || ids == NULL) {
        return 0;
    }

    nblocks = n / block_size;

    if (nblocks > max_out) {
        nblocks = max_out;
    }

    seq = parent;

    for (i = 0; i < nblocks; i++) {
        seq = kvr_hash_chain(seq,
                             kvr_hash_ids_le(ids + i * block_size, block_size,
                                             seed));
        out[i] = seq;
    }

    return nblocks;
}
