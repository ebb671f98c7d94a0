/*
 * Copyright (C) kvroute developers
 *
 * BPE (HF models/bpe/model.rs and word.rs): merge_all with a min-heap
 * ordered by (rank, position), so long pieces cost O(m log m).  The
 * initial symbols are a piece's bytes (byte-level files) or its chars
 * (SentencePiece-style files: byte fallback to <0xNN> tokens, unk, fused
 * unks), as HF's merge_word makes them.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "kvr_tok_bpe.h"
#include "kvr_tok_cache.h"
#include "kvr_tok_heap.h"
#include "kvr_tok_unicode.h"


#define KVR_BPE_NO_ID         0xffffffffu
#define KVR_BPE_EMPTY_PAIR    0xffffffffffffffffull

/*
 * word cache: direct-mapped, fixed-size slots (no allocation at encode
 * time), only short pieces with few ids; results never change
 */
#define KVR_BPE_CACHE_SLOTS   16384
#define KVR_BPE_CACHE_MAX_KEY 46
#define KVR_BPE_CACHE_MAX_IDS 12

/* pieces of at most this many symbols merge by a scan, not a heap */
#define KVR_BPE_SCAN_MAX      48

/*
 * chunk cache (char model): a long piece is cut at word cuts into runs
 * of at least KVR_BPE_CHUNK bytes, each looked up whole; a bounded LRU
 */
#define KVR_BPE_CHUNK         256
#define KVR_BPE_CHUNK_CACHE   (4u << 20)


typedef struct {
    uint32_t   hash;
    uint32_t   id;           /* KVR_BPE_NO_ID: free slot */
    uint32_t   off;          /* key bytes in the arena */
    uint32_t   len;
} kvr_bpe_vocab_slot_t;


typedef struct {
    uint64_t   pair;         /* left << 32 | right */
    uint32_t   rank;
    uint32_t   new_id;
} kvr_bpe_merge_slot_t;


/* a merge of two single-byte tokens: the pair is implied by the bytes */
typedef struct {
    uint32_t   rank;         /* KVR_BPE_NO_ID: no merge */
    uint32_t   new_id;
} kvr_bpe_byte_pair_t;


typedef struct {
    uint32_t   id;
    int32_t    prev;
    int32_t    next;
    uint32_t   len;          /* 0: absorbed into its left neighbour */
} kvr_bpe_symbol_t;




typedef struct {
    uint64_t   hash;
    uint8_t    key_len;      /* 0: empty slot */
    uint8_t    n_ids;
    uint8_t    key[KVR_BPE_CACHE_MAX_KEY];
    uint32_t   ids[KVR_BPE_CACHE_MAX_IDS];
} kvr_bpe_cache_slot_t;


struct kvr_tok_bpe_s {
    kvr_bpe_vocab_slot_t  *vocab;
    size_t                 vocab_mask;
    size_t                 vocab_used;
    uint8_t               *arena;
    size_t                 arena_len;
    size_t                 arena_cap;

    kvr_bpe_merge_slot_t  *merges;
    size_t                 merges_mask;
    size_t                 merges_used;

    uint32_t               byte_id[256];   /* KVR_BPE_NO_ID when absent */

    /*
     * merges of two single-byte tokens, by byte pair: most lookups of a
     * piece hit these, and 512 KB stay in cache where the map does not
     */
    kvr_bpe_byte_pair_t   *byte_pairs;
    int                    ignore_merges;
    int                    ids_unique;     /* one string a token id */

    /* per-process scratch, grown on demand */
    kvr_bpe_symbol_t      *symbols;
    size_t                 symbols_cap;
    kvr_tok_heap_t         heap;

    kvr_bpe_cache_slot_t  *cache;

    /* the char model (kvr_tok_bpe_set_chars) */
    int                    chars;
    int                    byte_fallback;
    int                    fuse_unk;
    int                    split_words;
    uint32_t               unk_id;                /* KVR_BPE_NO_ID: none */
    uint32_t               ascii_id[128];
    uint32_t               fallback_id[256];      /* the <0xNN> tokens */

    /*
     * junctions: (last char of a merge's left token, first char of its
     * right token); a piece is cut between two chars that are none
     */
    kvr_tok_cache_t       *chunks;    /* per process, made on first use */
    int                    chunks_failed;

    uint64_t              *junctions;             /* key + 1, 0: empty */
    size_t                 junctions_mask;
    size_t                 junctions_used;
    size_t                 n_merges;
    uint8_t                ascii_junction[128 * 128 / 8];
};


/*
 * A lookup table of several MB: each probe is a random access, so on 4 KB
 * pages most probes also miss the TLB; 2 MB pages (transparent huge pages
 * asked for by madvise, where the kernel has them) take that cost away.
 * free() releases it.
 */
static void *
kvr_bpe_table_alloc(size_t size)
{
    void  *p;

    if (size < (2u << 20)) {
        return malloc(size);
    }

    if (posix_memalign(&p, 2u << 20, size) != 0) {
        return NULL;
    }

#ifdef MADV_HUGEPAGE
    (void) madvise(p, size, MADV_HUGEPAGE);
#endif

    return p;
}


static size_t
kvr_bpe_table_size(size_t n)
{
    size_t  size;

    /* load factor at most 3/4 (linear probing stays short) */
    size = 1024;

    while (size * 3 / 4 < n) {
        size <<= 1;
    }

    return size;
}


kvr_tok_bpe_t *
kvr_tok_bpe_create(size_t n_vocab, size_t n_merges)
{
    size_t          i, vsize, msize;
    kvr_tok_bpe_t  *bpe;

    bpe = calloc(1, sizeof(kvr_tok_bpe_t));
    if (bpe == NULL) {
        return NULL;
    }

    vsize = kvr_bpe_table_size(n_vocab);
    msize = kvr_bpe_table_size(n_merges);

    bpe->vocab = kvr_bpe_table_alloc(vsize * sizeof(kvr_bpe_vocab_slot_t));
    bpe->merges = kvr_bpe_table_alloc(msize * sizeof(kvr_bpe_merge_slot_t));
    bpe->cache = calloc(KVR_BPE_CACHE_SLOTS, sizeof(kvr_bpe_cache_slot_t));
    bpe->arena_cap = 16 * n_vocab + 4096;
    bpe->arena = malloc(bpe->arena_cap);

    if (bpe->vocab == NULL || bpe->merges == NULL || bpe->cache == NULL
        || bpe->arena == NULL)
    {
        kvr_tok_bpe_free(bpe);
        return NULL;
    }

    for (i = 0; i < vsize; i++) {
        bpe->vocab[i].id = KVR_BPE_NO_ID;
    }

    for (i = 0; i < msize; i++) {
        bpe->merges[i].pair = KVR_BPE_EMPTY_PAIR;
    }

    for (i = 0; i < 256; i++) {
        bpe->byte_id[i] = KVR_BPE_NO_ID;
    }

    bpe->vocab_mask = vsize - 1;
    bpe->merges_mask = msize - 1;
    bpe->n_merges = n_merges;
    bpe->unk_id = KVR_BPE_NO_ID;

    return bpe;
}


void
kvr_tok_bpe_free(kvr_tok_bpe_t *bpe)
{
    if (bpe == NULL) {
        return;
    }

    kvr_tok_cache_free(bpe->chunks);
    free(bpe->cache);
    free(bpe->byte_pairs);
    free(bpe->vocab);
    free(bpe->merges);
    free(bpe->arena);
    free(bpe->symbols);
    kvr_tok_heap_free(&bpe->heap);
    free(bpe->junctions);
    free(bpe);
}


static kvr_bpe_vocab_slot_t *
kvr_bpe_vocab_find(const kvr_tok_bpe_t *bpe, const uint8_t *key,
    size_t len, uint32_t hash)
{
    size_t                 i;
    kvr_bpe_vocab_slot_t  *slot;

    for (i = hash & bpe->vocab_mask; /* void */ ;
         i = (i + 1) & bpe->vocab_mask)
    {
        slot = &bpe->vocab[i];

        if (slot->id == KVR_BPE_NO_ID) {
            return slot;
        }

        if (slot->hash == hash && slot->len == len
            && memcmp(bpe->arena + slot->off, key, len) == 0)
        {
            return slot;
        }
    }
}


int
kvr_tok_bpe_add_token(kvr_tok_bpe_t *bpe, const uint8_t *key, size_t len,
    uint32_t id)
{
    size_t                 cap;
    uint8_t               *arena;
    uint32_t               hash;
    kvr_bpe_vocab_slot_t  *slot;

    if (id == KVR_BPE_NO_ID || len > 0xffffff) {
        return -1;
    }

    if (bpe->vocab_used + 1 > (bpe->vocab_mask + 1) * 3 / 4) {
        /* the size was given at create time; more is a caller bug */
        return -1;
    }

    hash = (uint32_t) XXH3_64bits(key, len);
    slot = kvr_bpe_vocab_find(bpe, key, len, hash);

    if (slot->id != KVR_BPE_NO_ID) {
        return 1;
    }

    if (bpe->arena_len + len > bpe->arena_cap) {
        cap = (bpe->arena_cap + len) * 2;
        arena = realloc(bpe->arena, cap);
        if (arena == NULL) {
            return -1;
        }

        bpe->arena = arena;
        bpe->arena_cap = cap;
    }

    memcpy(bpe->arena + bpe->arena_len, key, len);

    slot->hash = hash;
    slot->id = id;
    slot->off = (uint32_t) bpe->arena_len;
    slot->len = (uint32_t) len;

    bpe->arena_len += len;
    bpe->vocab_used++;

    return 0;
}


int
kvr_tok_bpe_lookup(const kvr_tok_bpe_t *bpe, const uint8_t *key, size_t len,
    uint32_t *id)
{
    kvr_bpe_vocab_slot_t  *slot;

    slot = kvr_bpe_vocab_find(bpe, key, len, (uint32_t) XXH3_64bits(key, len));

    if (slot->id == KVR_BPE_NO_ID) {
        return -1;
    }

    *id = slot->id;

    return 0;
}


static uint64_t
kvr_bpe_pair_hash(uint64_t pair)
{
    /* a 64-bit mix (splitmix64 finalizer) */
    pair ^= pair >> 30;
    pair *= 0xbf58476d1ce4e5b9ull;
    pair ^= pair >> 27;
    pair *= 0x94d049bb133111ebull;
    pair ^= pair >> 31;

    return pair;
}


static kvr_bpe_merge_slot_t *
kvr_bpe_merge_probe(const kvr_tok_bpe_t *bpe, uint64_t pair, size_t i)
{
    kvr_bpe_merge_slot_t  *slot;

    for ( /* void */ ; /* void */ ; i = (i + 1) & bpe->merges_mask) {
        slot = &bpe->merges[i];

        if (slot->pair == pair || slot->pair == KVR_BPE_EMPTY_PAIR) {
            return slot;
        }
    }
}


static kvr_bpe_merge_slot_t *
kvr_bpe_merge_find(const kvr_tok_bpe_t *bpe, uint64_t pair)
{
    return kvr_bpe_merge_probe(bpe, pair,
                               kvr_bpe_pair_hash(pair) & bpe->merges_mask);
}


/*
 * The merge table is far larger than the caches: a pair's first slot is
 * fetched ahead (kvr_bpe_merge_ahead), so that the lookups of a merge's
 * two new neighbour pairs, or of a piece's first pairs, overlap
 */
static size_t
kvr_bpe_merge_ahead(const kvr_tok_bpe_t *bpe, uint32_t left, uint32_t right)
{
    size_t  i;

    i = kvr_bpe_pair_hash((uint64_t) left << 32 | right) & bpe->merges_mask;
    __builtin_prefetch(&bpe->merges[i]);

    return i;
}


/* the merge of a pair fetched ahead at slot i, or NULL */
static const kvr_bpe_merge_slot_t *
kvr_bpe_merge_at(const kvr_tok_bpe_t *bpe, uint32_t left, uint32_t right,
    size_t i)
{
    kvr_bpe_merge_slot_t  *slot;

    slot = kvr_bpe_merge_probe(bpe, (uint64_t) left << 32 | right, i);

    return slot->pair == KVR_BPE_EMPTY_PAIR ? NULL : slot;
}


int
kvr_tok_bpe_add_merge(kvr_tok_bpe_t *bpe, uint32_t left, uint32_t right,
    uint32_t rank, uint32_t new_id)
{
    uint64_t               pair;
    kvr_bpe_merge_slot_t  *slot;

    pair = (uint64_t) left << 32 | right;
    slot = kvr_bpe_merge_find(bpe, pair);

    if (slot->pair == KVR_BPE_EMPTY_PAIR) {
        if (bpe->merges_used + 1 > (bpe->merges_mask + 1) * 3 / 4) {
            return -1;
        }

        bpe->merges_used++;
        slot->pair = pair;
    }

    slot->rank = rank;
    slot->new_id = new_id;

    return 0;
}


int
kvr_tok_bpe_set_chars(kvr_tok_bpe_t *bpe, int byte_fallback, uint32_t unk_id,
    int fuse_unk)
{
    bpe->chars = 1;
    bpe->byte_fallback = byte_fallback;
    bpe->unk_id = unk_id;
    bpe->fuse_unk = fuse_unk;

    return 0;
}


/*
 * The char model: the ASCII chars' and the <0xNN> tokens' ids, and
 * whether pieces may be cut at non-junctions.  That needs every symbol
 * that is no merge product of chars (byte tokens, unk) to take part in no
 * merge, and no unk that a cut could unfuse: unk unreachable (byte
 * fallback with all 256 byte tokens) or none.
 */
static int
kvr_bpe_finish_chars(kvr_tok_bpe_t *bpe)
{
    int        b, all_bytes;
    char       name[8];
    size_t     i, max_id;
    uint8_t   *special, byte;
    uint32_t   left, right;

    all_bytes = 1;
    max_id = bpe->unk_id != KVR_BPE_NO_ID ? bpe->unk_id : 0;

    for (b = 0; b < 256; b++) {
        snprintf(name, sizeof(name), "<0x%02X>", b);

        if (kvr_tok_bpe_lookup(bpe, (const uint8_t *) name, 6,
                               &bpe->fallback_id[b]) != 0)
        {
            bpe->fallback_id[b] = KVR_BPE_NO_ID;
            all_bytes = 0;

        } else if (bpe->fallback_id[b] > max_id) {
            max_id = bpe->fallback_id[b];
        }

        if (b < 128) {
            byte = (uint8_t) b;

            if (kvr_tok_bpe_lookup(bpe, &byte, 1, &bpe->ascii_id[b]) != 0) {
                bpe->ascii_id[b] = KVR_BPE_NO_ID;
            }
        }
    }

    if (!bpe->byte_fallback) {
        for (b = 0; b < 256; b++) {
            bpe->fallback_id[b] = KVR_BPE_NO_ID;
        }

        all_bytes = 0;
    }

    bpe->split_words = (bpe->unk_id == KVR_BPE_NO_ID || all_bytes);

    special = calloc(max_id / 8 + 1, 1);
    if (special == NULL) {
        return -1;
    }

    for (b = 0; b < 256; b++) {
        left = bpe->fallback_id[b];

        if (left != KVR_BPE_NO_ID) {
            special[left >> 3] |= 1u << (left & 7);
        }
    }

    if (bpe->unk_id != KVR_BPE_NO_ID) {
        special[bpe->unk_id >> 3] |= 1u << (bpe->unk_id & 7);
    }

    for (i = 0; i <= bpe->merges_mask; i++) {
        if (bpe->merges[i].pair == KVR_BPE_EMPTY_PAIR) {
            continue;
        }

        left = (uint32_t) (bpe->merges[i].pair >> 32);
        right = (uint32_t) bpe->merges[i].pair;

        if ((left <= max_id && (special[left >> 3] >> (left & 7)) & 1)
            || (right <= max_id && (special[right >> 3] >> (right & 7)) & 1))
        {
            bpe->split_words = 0;
        }
    }

    free(special);

    return 0;
}


/* ids_unique: no two strings of the vocab share an id */
static int
kvr_bpe_check_ids(kvr_tok_bpe_t *bpe)
{
    size_t    i, max_id;
    uint8_t  *seen;
    uint32_t  id;

    max_id = 0;

    for (i = 0; i <= bpe->vocab_mask; i++) {
        id = bpe->vocab[i].id;
        if (id != KVR_BPE_NO_ID && id > max_id) {
            max_id = id;
        }
    }

    seen = calloc(max_id / 8 + 1, 1);
    if (seen == NULL) {
        return -1;
    }

    bpe->ids_unique = 1;

    for (i = 0; i <= bpe->vocab_mask; i++) {
        id = bpe->vocab[i].id;
        if (id == KVR_BPE_NO_ID) {
            continue;
        }
        if (seen[id >> 3] & (1u << (id & 7))) {
            bpe->ids_unique = 0;
            break;
        }
        seen[id >> 3] |= (uint8_t) (1u << (id & 7));
    }

    free(seen);

    return 0;
}


int
kvr_tok_bpe_finish(kvr_tok_bpe_t *bpe, int ignore_merges)
{
    int                     b, c;
    uint8_t                 byte;
    kvr_bpe_merge_slot_t   *slot;
    kvr_bpe_byte_pair_t    *pair;

    for (b = 0; b < 256; b++) {
        byte = (uint8_t) b;

        if (kvr_tok_bpe_lookup(bpe, &byte, 1, &bpe->byte_id[b]) != 0) {
            bpe->byte_id[b] = KVR_BPE_NO_ID;
        }
    }

    bpe->byte_pairs = malloc(256 * 256 * sizeof(kvr_bpe_byte_pair_t));
    if (bpe->byte_pairs == NULL) {
        return -1;
    }

    for (b = 0; b < 256; b++) {
        for (c = 0; c < 256; c++) {
            pair = &bpe->byte_pairs[b * 256 + c];
            pair->rank = KVR_BPE_NO_ID;

            if (bpe->byte_id[b] == KVR_BPE_NO_ID
                || bpe->byte_id[c] == KVR_BPE_NO_ID)
            {
                continue;
            }

            slot = kvr_bpe_merge_find(bpe, (uint64_t) bpe->byte_id[b] << 32
                                           | bpe->byte_id[c]);
            if (slot->pair != KVR_BPE_EMPTY_PAIR) {
                pair->rank = slot->rank;
                pair->new_id = slot->new_id;
            }
        }
    }

    bpe->ignore_merges = ignore_merges;

    if (kvr_bpe_check_ids(bpe) != 0) {
        return -1;
    }

    if (bpe->chars) {
        return kvr_bpe_finish_chars(bpe);
    }

    return 0;
}


/* a merge onto the heap: 0, or -1 out of memory */
static int
kvr_bpe_heap_push(kvr_tok_bpe_t *bpe, uint32_t rank, uint32_t new_id,
    uint32_t span, uint32_t pos)
{
    kvr_tok_merge_t  m;

    m.key = kvr_tok_merge_key(rank, pos);
    m.new_id = new_id;
    m.span = span;

    return kvr_tok_heap_push(&bpe->heap, &m);
}


static const kvr_bpe_merge_slot_t *
kvr_bpe_merge_get(const kvr_tok_bpe_t *bpe, uint32_t left, uint32_t right)
{
    return kvr_bpe_merge_at(bpe, left, right,
                            kvr_bpe_pair_hash((uint64_t) left << 32 | right)
                            & bpe->merges_mask);
}


/* the merge of the pair (left, right) fetched ahead at slot i */
static void
kvr_bpe_scan_pair(const kvr_tok_bpe_t *bpe, uint32_t left, uint32_t right,
    size_t i, uint32_t *rank, uint32_t *new_id)
{
    const kvr_bpe_merge_slot_t  *m;

    m = kvr_bpe_merge_at(bpe, left, right, i);

    *rank = m ? m->rank : KVR_BPE_NO_ID;
    *new_id = m ? m->new_id : KVR_BPE_NO_ID;
}


/*
 * A short piece: the pair of lowest rank (leftmost on a tie) merged until
 * none is left, by a scan of at most KVR_BPE_SCAN_MAX pairs.  This is what
 * HF's heap does: the heap's stale entries never pass its new id check,
 * since symbols only grow (a changed pair at a position spells a longer
 * string, another token), given one string a token id (ids_unique).
 */
static void
kvr_bpe_merge_scan(kvr_tok_bpe_t *bpe, const uint8_t *bytes, size_t n_sym)
{
    size_t                      i, n, best, at_prev, at_next;
    size_t                      at[KVR_BPE_SCAN_MAX];
    uint32_t                    r, id[KVR_BPE_SCAN_MAX], len[KVR_BPE_SCAN_MAX];
    uint32_t                    rank[KVR_BPE_SCAN_MAX], nid[KVR_BPE_SCAN_MAX];
    kvr_bpe_symbol_t           *sym;
    const kvr_bpe_byte_pair_t  *bp;

    sym = bpe->symbols;
    n = n_sym;

    for (i = 0; i < n; i++) {
        id[i] = sym[i].id;
        len[i] = sym[i].len;
    }

    if (bytes != NULL) {
        for (i = 0; i + 1 < n; i++) {
            bp = &bpe->byte_pairs[bytes[i] * 256 + bytes[i + 1]];
            rank[i] = bp->rank;
            nid[i] = bp->new_id;
        }

    } else {
        for (i = 0; i + 1 < n; i++) {
            at[i] = kvr_bpe_merge_ahead(bpe, id[i], id[i + 1]);
        }
        for (i = 0; i + 1 < n; i++) {
            kvr_bpe_scan_pair(bpe, id[i], id[i + 1], at[i], &rank[i],
                              &nid[i]);
        }
    }

    for ( ;; ) {
        best = 0;
        r = KVR_BPE_NO_ID;

        for (i = 0; i + 1 < n; i++) {
            if (rank[i] < r) {
                r = rank[i];
                best = i;
            }
        }

        if (r == KVR_BPE_NO_ID) {
            break;
        }

        id[best] = nid[best];
        len[best] += len[best + 1];

        /* symbol best + 1 goes, and the pair it started with it */
        for (i = best + 1; i + 1 < n; i++) {
            id[i] = id[i + 1];
            len[i] = len[i + 1];
            rank[i] = rank[i + 1];
            nid[i] = nid[i + 1];
        }
        n--;

        at_prev = best > 0 ? kvr_bpe_merge_ahead(bpe, id[best - 1], id[best])
                           : 0;
        at_next = best + 1 < n ? kvr_bpe_merge_ahead(bpe, id[best],
                                                     id[best + 1])
                               : 0;

        if (best > 0) {
            kvr_bpe_scan_pair(bpe, id[best - 1], id[best], at_prev,
                              &rank[best - 1], &nid[best - 1]);
        }

        if (best + 1 < n) {
            kvr_bpe_scan_pair(bpe, id[best], id[best + 1], at_next,
                              &rank[best], &nid[best]);
        }
    }

    /* as the heap leaves them: the survivors, in order, then none */
    for (i = 0; i < n; i++) {
        sym[i].id = id[i];
        sym[i].len = len[i];
    }

    for ( /* void */ ; i < n_sym; i++) {
        sym[i].len = 0;
    }
}


/* pushes the merge of the symbols at pos and next, if there is one */
static int
kvr_bpe_push_pair(kvr_tok_bpe_t *bpe, size_t pos, size_t next)
{
    kvr_bpe_symbol_t            *sym;
    const kvr_bpe_merge_slot_t  *m;

    sym = bpe->symbols;
    m = kvr_bpe_merge_get(bpe, sym[pos].id, sym[next].id);

    if (m == NULL) {
        return 0;
    }

    return kvr_bpe_heap_push(bpe, m->rank, m->new_id,
                             sym[pos].len + sym[next].len, (uint32_t) pos);
}


/*
 * HF Word::merge_all: the surviving symbols end up in symbols[]; bytes
 * (the symbols' bytes, byte-level) seeds the heap faster, or is NULL.
 * Short pieces take kvr_bpe_merge_scan, the same merges without a heap.
 */
static int
kvr_bpe_merge_all(kvr_tok_bpe_t *bpe, const uint8_t *bytes, size_t n_sym)
{
    size_t                       i, pos, next_pos;
    kvr_tok_merge_t              top;
    kvr_bpe_symbol_t            *sym, right;
    const kvr_bpe_merge_slot_t  *m;
    const kvr_bpe_byte_pair_t   *bp;

    if (n_sym <= KVR_BPE_SCAN_MAX && bpe->ids_unique) {
        kvr_bpe_merge_scan(bpe, bytes, n_sym);
        return 0;
    }

    sym = bpe->symbols;
    bpe->heap.n = 0;

    for (i = 0; i + 1 < n_sym; i++) {
        if (bytes == NULL) {
            if (kvr_bpe_push_pair(bpe, i, i + 1) != 0) {
                return -1;
            }
            continue;
        }

        bp = &bpe->byte_pairs[bytes[i] * 256 + bytes[i + 1]];

        if (bp->rank != KVR_BPE_NO_ID
            && kvr_bpe_heap_push(bpe, bp->rank, bp->new_id, 2, (uint32_t) i)
               != 0)
        {
            return -1;
        }
    }

    while (bpe->heap.n > 0) {
        top = kvr_tok_heap_pop(&bpe->heap);
        pos = kvr_tok_merge_pos(&top);

        if (sym[pos].len == 0 || sym[pos].next < 0) {
            continue;
        }

        next_pos = (size_t) sym[pos].next;
        right = sym[next_pos];

        /*
         * stale entry: the pair at pos changed since it was pushed (a
         * symbol only grows, so its bytes then span more); HF compares
         * the new id of the current pair's merge
         */
        if (sym[pos].len + right.len != top.span) {
            m = kvr_bpe_merge_get(bpe, sym[pos].id, right.id);
            if (m == NULL || m->new_id != top.new_id) {
                continue;
            }
        }

        sym[pos].id = top.new_id;
        sym[pos].len += right.len;
        sym[pos].next = right.next;
        sym[next_pos].len = 0;

        if (right.next >= 0) {
            sym[right.next].prev = (int32_t) pos;
        }

        if (sym[pos].prev >= 0
            && kvr_bpe_push_pair(bpe, (size_t) sym[pos].prev, pos) != 0)
        {
            return -1;
        }

        if (sym[pos].next >= 0
            && kvr_bpe_push_pair(bpe, pos, (size_t) sym[pos].next) != 0)
        {
            return -1;
        }
    }

    return 0;
}


static int
kvr_bpe_symbols_reserve(kvr_tok_bpe_t *bpe, size_t n)
{
    size_t             cap;
    kvr_bpe_symbol_t  *sym;

    if (n <= bpe->symbols_cap) {
        return 0;
    }

    cap = n < 256 ? 256 : n;
    sym = realloc(bpe->symbols, cap * sizeof(kvr_bpe_symbol_t));
    if (sym == NULL) {
        return -1;
    }

    bpe->symbols = sym;
    bpe->symbols_cap = cap;

    return 0;
}


static int kvr_bpe_encode_filtered(kvr_tok_bpe_t *bpe,
    const uint8_t *piece, size_t len, kvr_ids_t *out);


static int
kvr_bpe_encode_word(kvr_tok_bpe_t *bpe, const uint8_t *piece, size_t len,
    kvr_ids_t *out)
{
    size_t             i, n_sym;
    uint32_t           id;
    kvr_bpe_symbol_t  *sym;

    if (kvr_bpe_symbols_reserve(bpe, len) != 0) {
        return KVR_TOK_NO_MEMORY;
    }

    /* one symbol per byte; a byte without a token is dropped, as in HF */
    sym = bpe->symbols;
    n_sym = 0;

    for (i = 0; i < len; i++) {
        id = bpe->byte_id[piece[i]];

        if (id == KVR_BPE_NO_ID) {
            /* rare: drop such bytes first, symbols follow the bytes */
            return kvr_bpe_encode_filtered(bpe, piece, len, out);
        }

        sym[n_sym].id = id;
        sym[n_sym].prev = (int32_t) n_sym - 1;
        sym[n_sym].next = (int32_t) n_sym + 1;
        sym[n_sym].len = 1;
        n_sym++;
    }

    if (n_sym == 0) {
        return KVR_TOK_OK;
    }

    sym[n_sym - 1].next = -1;

    if (kvr_bpe_merge_all(bpe, piece, n_sym) != 0) {
        return KVR_TOK_NO_MEMORY;
    }

    for (i = 0; i < n_sym; i++) {
        if (sym[i].len != 0 && kvr_ids_push(out, sym[i].id) != 0) {
            return out->n == out->max ? KVR_TOK_TOO_MANY : KVR_TOK_NO_MEMORY;
        }
    }

    return KVR_TOK_OK;
}


/* a byte without a token is dropped silently, as HF does without unk */
static int
kvr_bpe_encode_filtered(kvr_tok_bpe_t *bpe, const uint8_t *piece,
    size_t len, kvr_ids_t *out)
{
    int       rc;
    size_t    i, n;
    uint8_t  *kept;

    kept = malloc(len);
    if (kept == NULL) {
        return KVR_TOK_NO_MEMORY;
    }

    n = 0;

    for (i = 0; i < len; i++) {
        if (bpe->byte_id[piece[i]] != KVR_BPE_NO_ID) {
            kept[n++] = piece[i];
        }
    }

    rc = (n == 0) ? KVR_TOK_OK : kvr_bpe_encode_word(bpe, kept, n, out);
    free(kept);

    return rc;
}


static void
kvr_bpe_symbol_add(kvr_bpe_symbol_t *sym, size_t *n, uint32_t id,
    uint32_t len)
{
    sym[*n].id = id;
    sym[*n].prev = (int32_t) *n - 1;
    sym[*n].next = (int32_t) *n + 1;
    sym[*n].len = len;
    (*n)++;
}


/*
 * HF merge_word for the char model: a symbol per char in the vocab; an
 * unknown char becomes its <0xNN> byte tokens (byte_fallback, when all
 * exist), else unk (fused with a preceding unk when fuse_unk), else it is
 * dropped.  As in HF, a pending unk is only added before the next char
 * found in the vocab, so byte tokens can come before it.
 */
static int
kvr_bpe_encode_chars(kvr_tok_bpe_t *bpe, const uint8_t *piece, size_t len,
    kvr_ids_t *out)
{
    size_t             i, j, n, n_sym;
    uint32_t           id, cp, unk_len;
    kvr_bpe_symbol_t  *sym;

    if (kvr_bpe_symbols_reserve(bpe, len) != 0) {
        return KVR_TOK_NO_MEMORY;
    }

    sym = bpe->symbols;
    n_sym = 0;
    unk_len = 0;

    for (i = 0; i < len; i += n) {
        if (piece[i] < 0x80) {
            n = 1;
            id = bpe->ascii_id[piece[i]];

        } else {
            n = kvr_tok_utf8_decode(piece + i, len - i, &cp);
            n = n ? n : 1;

            if (kvr_tok_bpe_lookup(bpe, piece + i, n, &id) != 0) {
                id = KVR_BPE_NO_ID;
            }
        }

        if (id != KVR_BPE_NO_ID) {
            if (unk_len) {
                kvr_bpe_symbol_add(sym, &n_sym, bpe->unk_id, unk_len);
                unk_len = 0;
            }

            kvr_bpe_symbol_add(sym, &n_sym, id, (uint32_t) n);
            continue;
        }

        if (bpe->byte_fallback) {
            for (j = 0; j < n; j++) {
                if (bpe->fallback_id[piece[i + j]] == KVR_BPE_NO_ID) {
                    break;
                }
            }

            if (j == n) {
                for (j = 0; j < n; j++) {
                    kvr_bpe_symbol_add(sym, &n_sym,
                                       bpe->fallback_id[piece[i + j]], 1);
                }

                continue;
            }
        }

        if (bpe->unk_id == KVR_BPE_NO_ID) {
            continue;
        }

        if (unk_len && !bpe->fuse_unk) {
            kvr_bpe_symbol_add(sym, &n_sym, bpe->unk_id, unk_len);
            unk_len = 0;
        }

        unk_len += (uint32_t) n;
    }

    if (unk_len) {
        kvr_bpe_symbol_add(sym, &n_sym, bpe->unk_id, unk_len);
    }

    if (n_sym == 0) {
        return KVR_TOK_OK;
    }

    sym[n_sym - 1].next = -1;

    if (kvr_bpe_merge_all(bpe, NULL, n_sym) != 0) {
        return KVR_TOK_NO_MEMORY;
    }

    for (i = 0; i < n_sym; i++) {
        if (sym[i].len != 0 && kvr_ids_push(out, sym[i].id) != 0) {
            return out->n == out->max ? KVR_TOK_TOO_MANY : KVR_TOK_NO_MEMORY;
        }
    }

    return KVR_TOK_OK;
}


/*
 * A piece, or a word of a piece when split_words; the word cache asks
 * this on a miss, so that ignore_merges' whole-piece lookup is cached too
 */
static int
kvr_bpe_encode_one(kvr_tok_bpe_t *bpe, const uint8_t *piece, size_t len,
    kvr_ids_t *out)
{
    uint32_t  id;

    /* the whole piece, never one of its words (HF) */
    if (bpe->ignore_merges && !bpe->split_words
        && kvr_tok_bpe_lookup(bpe, piece, len, &id) == 0)
    {
        if (kvr_ids_push(out, id) != 0) {
            return out->n == out->max ? KVR_TOK_TOO_MANY : KVR_TOK_NO_MEMORY;
        }

        return KVR_TOK_OK;
    }

    if (bpe->chars) {
        return kvr_bpe_encode_chars(bpe, piece, len, out);
    }

    return kvr_bpe_encode_word(bpe, piece, len, out);
}


static uint64_t *
kvr_bpe_junction_find(const kvr_tok_bpe_t *bpe, uint64_t key)
{
    size_t  i;

    for (i = kvr_bpe_pair_hash(key) & bpe->junctions_mask; /* void */ ;
         i = (i + 1) & bpe->junctions_mask)
    {
        if (bpe->junctions[i] == key + 1 || bpe->junctions[i] == 0) {
            return &bpe->junctions[i];
        }
    }
}


/* 1 when some merge could join a symbol ending in last to one at first */
static int
kvr_bpe_junction(const kvr_tok_bpe_t *bpe, uint32_t last, uint32_t first)
{
    size_t  bit;

    if (last < 128 && first < 128) {
        bit = last * 128 + first;
        return (bpe->ascii_junction[bit >> 3] >> (bit & 7)) & 1;
    }

    /* no merge has a char beyond ASCII */
    if (bpe->junctions == NULL) {
        return 0;
    }

    return *kvr_bpe_junction_find(bpe, (uint64_t) last << 32 | first) != 0;
}


int
kvr_tok_bpe_joins(const kvr_tok_bpe_t *bpe, uint32_t last, uint32_t first)
{
    return kvr_bpe_junction(bpe, last, first);
}


int
kvr_tok_bpe_cuts_words(const kvr_tok_bpe_t *bpe)
{
    return bpe->chars && bpe->split_words && !bpe->ignore_merges;
}


int
kvr_tok_bpe_add_junction(kvr_tok_bpe_t *bpe, uint32_t last, uint32_t first)
{
    size_t     size, bit;
    uint64_t  *slot;

    if (last < 128 && first < 128) {
        bit = last * 128 + first;
        bpe->ascii_junction[bit >> 3] |= (uint8_t) (1u << (bit & 7));
        return 0;
    }

    if (bpe->junctions == NULL) {
        /* at most one per merge */
        size = kvr_bpe_table_size(bpe->n_merges);
        bpe->junctions = calloc(size, sizeof(uint64_t));
        if (bpe->junctions == NULL) {
            return -1;
        }

        bpe->junctions_mask = size - 1;
    }

    slot = kvr_bpe_junction_find(bpe, (uint64_t) last << 32 | first);

    if (*slot == 0) {
        if (bpe->junctions_used + 1 > (bpe->junctions_mask + 1) * 3 / 4) {
            return -1;
        }

        *slot = ((uint64_t) last << 32 | first) + 1;
        bpe->junctions_used++;
    }

    return 0;
}


static int kvr_bpe_encode_cached(kvr_tok_bpe_t *bpe, const uint8_t *piece,
    size_t len, kvr_ids_t *out);


/* the char at piece[i], as the word cut sees it */
static size_t
kvr_bpe_char(const uint8_t *piece, size_t len, size_t i, uint32_t *cp)
{
    size_t  n;

    if (piece[i] < 0x80) {
        *cp = piece[i];
        return 1;
    }

    n = kvr_tok_utf8_decode(piece + i, len - i, cp);

    return n ? n : 1;
}


/* the first word cut after from, or len */
static size_t
kvr_bpe_next_cut(const kvr_tok_bpe_t *bpe, const uint8_t *piece,
    size_t len, size_t from)
{
    size_t    i, k, n;
    uint32_t  prev, cp;

    /* from and the char before it: piece is valid UTF-8 */
    while (from < len && (piece[from] & 0xc0) == 0x80) {
        from++;
    }

    for (k = from - 1; k > 0 && (piece[k] & 0xc0) == 0x80; k--) {
        /* void */
    }

    (void) kvr_bpe_char(piece, len, k, &prev);

    for (i = from; i < len; i += n) {
        n = kvr_bpe_char(piece, len, i, &cp);

        if (!kvr_bpe_junction(bpe, prev, cp)) {
            return i;
        }

        prev = cp;
    }

    return len;
}


/*
 * The char model cuts a piece between two chars no merge can join (no
 * junction): the symbols on either side never meet, so each part merges
 * exactly as inside the whole piece, and the parts are mostly words that
 * the word cache answers.
 */
static int
kvr_bpe_encode_run(kvr_tok_bpe_t *bpe, const uint8_t *piece, size_t len,
    kvr_ids_t *out)
{
    int     rc;
    size_t  start, end;

    for (start = 0; start < len; start = end) {
        end = kvr_bpe_next_cut(bpe, piece, len, start + 1);

        rc = kvr_bpe_encode_cached(bpe, piece + start, end - start, out);
        if (rc != KVR_TOK_OK) {
            return rc;
        }
    }

    return KVR_TOK_OK;
}


/* a run between two word cuts through the chunk cache */
static int
kvr_bpe_encode_chunk(kvr_tok_bpe_t *bpe, const uint8_t *chunk, size_t len,
    kvr_ids_t *out)
{
    int              rc;
    size_t           first, n_ids;
    uint64_t         hash;
    const uint32_t  *ids;

    hash = kvr_tok_cache_hash(bpe->chunks, chunk, len);
    ids = kvr_tok_cache_get(bpe->chunks, chunk, len, hash, &n_ids);

    if (ids != NULL) {
        return kvr_ids_append(out, ids, n_ids);
    }

    first = out->n;

    rc = kvr_bpe_encode_run(bpe, chunk, len, out);
    if (rc != KVR_TOK_OK) {
        return rc;
    }

    /* not cached when out of memory: the ids in out are right anyway */
    (void) kvr_tok_cache_put(bpe->chunks, chunk, len, hash,
                             out->n > first ? out->ids + first : NULL,
                             out->n - first);

    return KVR_TOK_OK;
}


/*
 * A long piece in chunks of whole words: the cuts are found from the
 * piece's start, so two pieces that begin alike (a chat's system prompt
 * then different questions, in one gap for Llama-2's and Gemma 3's
 * templates) share their first chunks, which the cache answers
 */
static int
kvr_bpe_encode_words(kvr_tok_bpe_t *bpe, const uint8_t *piece, size_t len,
    kvr_ids_t *out)
{
    int     rc;
    size_t  start, end;

    if (len >= 2 * KVR_BPE_CHUNK && bpe->chunks == NULL
        && !bpe->chunks_failed)
    {
        bpe->chunks = kvr_tok_cache_create(KVR_BPE_CHUNK_CACHE);
        bpe->chunks_failed = (bpe->chunks == NULL);
    }

    start = 0;

    while (bpe->chunks != NULL && len - start > KVR_BPE_CHUNK) {
        end = kvr_bpe_next_cut(bpe, piece, len, start + KVR_BPE_CHUNK);
        if (end == len) {
            break;
        }

        rc = kvr_bpe_encode_chunk(bpe, piece + start, end - start, out);
        if (rc != KVR_TOK_OK) {
            return rc;
        }

        start = end;
    }

    return kvr_bpe_encode_run(bpe, piece + start, len - start, out);
}


/* one piece (or word of a piece) through the word cache, under hash */
static int
kvr_bpe_encode_hashed(kvr_tok_bpe_t *bpe, const uint8_t *piece, size_t len,
    uint64_t hash, kvr_ids_t *out)
{
    int                    rc;
    size_t                 i, first, n_ids;
    kvr_bpe_cache_slot_t  *slot;

    if (len > KVR_BPE_CACHE_MAX_KEY) {
        return kvr_bpe_encode_one(bpe, piece, len, out);
    }

    slot = &bpe->cache[hash & (KVR_BPE_CACHE_SLOTS - 1)];

    if (slot->key_len == len && slot->hash == hash
        && memcmp(slot->key, piece, len) == 0)
    {
        for (i = 0; i < slot->n_ids; i++) {
            if (kvr_ids_push(out, slot->ids[i]) != 0) {
                return out->n == out->max ? KVR_TOK_TOO_MANY
                                          : KVR_TOK_NO_MEMORY;
            }
        }

        return KVR_TOK_OK;
    }

    first = out->n;

    rc = kvr_bpe_encode_one(bpe, piece, len, out);
    if (rc != KVR_TOK_OK) {
        return rc;
    }

    n_ids = out->n - first;

    if (n_ids <= KVR_BPE_CACHE_MAX_IDS) {
        slot->hash = hash;
        slot->key_len = (uint8_t) len;
        slot->n_ids = (uint8_t) n_ids;
        memcpy(slot->key, piece, len);

        if (n_ids != 0) {
            /* out->ids may still be NULL: no memcpy from it */
            memcpy(slot->ids, out->ids + first, n_ids * sizeof(uint32_t));
        }
    }

    return KVR_TOK_OK;
}


/* one piece (or word of a piece) through the word cache */
static int
kvr_bpe_encode_cached(kvr_tok_bpe_t *bpe, const uint8_t *piece, size_t len,
    kvr_ids_t *out)
{
    return kvr_bpe_encode_hashed(bpe, piece, len,
                                 len <= KVR_BPE_CACHE_MAX_KEY
                                 ? XXH3_64bits(piece, len) : 0, out);
}


uint64_t
kvr_tok_bpe_ahead(const kvr_tok_bpe_t *bpe, const uint8_t *piece,
    size_t len)
{
    uint64_t  hash;

    if (bpe->split_words || len > KVR_BPE_CACHE_MAX_KEY) {
        return 0;
    }

    hash = XXH3_64bits(piece, len);
    __builtin_prefetch(&bpe->cache[hash & (KVR_BPE_CACHE_SLOTS - 1)]);

    return hash;
}


int
kvr_tok_bpe_encode_ahead(kvr_tok_bpe_t *bpe, const uint8_t *piece,
    size_t len, uint64_t ahead, kvr_ids_t *out)
{
    if (bpe->split_words || len == 0) {
        return kvr_tok_bpe_encode(bpe, piece, len, out);
    }

    /* kvr_tok_bpe_encode without split_words, the hash already taken */
    return kvr_bpe_encode_hashed(bpe, piece, len, ahead, out);
}


int
kvr_tok_bpe_encode(kvr_tok_bpe_t *bpe, const uint8_t *piece, size_t len,
    kvr_ids_t *out)
{
    uint32_t  id;

    if (len == 0) {
        return KVR_TOK_OK;
    }

    if (!bpe->split_words) {
        return kvr_bpe_encode_cached(bpe, piece, len, out);
    }

    /* the whole piece, never one of its words (HF) */
    if (bpe->ignore_merges && kvr_tok_bpe_lookup(bpe, piece, len, &id) == 0)
    {
        if (kvr_ids_push(out, id) != 0) {
            return out->n == out->max ? KVR_TOK_TOO_MANY : KVR_TOK_NO_MEMORY;
        }

        return KVR_TOK_OK;
    }

    return kvr_bpe_encode_words(bpe, piece, len, out);
}
