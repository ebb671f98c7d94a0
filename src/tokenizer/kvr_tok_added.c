/*
 * Copyright (C) kvroute developers
 *
 * A byte trie with sibling lists.  The root's children are indexed by byte
 * so that the scan for a first byte is one table lookup per input byte.
 */

#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* AVX2 where the CPU has it, chosen at run time: the build targets x86-64 */
#if defined(__GNUC__) && defined(__x86_64__)
#define KVR_ADDED_AVX2  1
#include <immintrin.h>
#else
#define KVR_ADDED_AVX2  0
#endif

#include "kvr_tok_added.h"


#define KVR_ADDED_NONE    0xffffffffu

/* up to this many distinct first bytes are scanned 16 bytes at a time */
#define KVR_ADDED_FIRSTS  8


typedef struct {
    uint32_t  child;         /* first child, KVR_ADDED_NONE if none */
    uint32_t  sibling;       /* next sibling, KVR_ADDED_NONE if none */
    uint32_t  token;         /* index in tokens, KVR_ADDED_NONE if none */
    uint8_t   byte;
} kvr_added_node_t;


typedef struct {
    uint32_t  id;
    unsigned  flags;
} kvr_added_token_t;


struct kvr_tok_added_s {
    uint32_t            root[256];   /* node of each first byte */
    kvr_added_node_t   *nodes;
    size_t              n_nodes;
    size_t              nodes_cap;
    kvr_added_token_t  *tokens;
    size_t              n_tokens;
    size_t              tokens_cap;
    size_t              n_first;     /* distinct first bytes */
    uint8_t             first;       /* the first byte when n_first is 1 */
    uint8_t             firsts[KVR_ADDED_FIRSTS];
    int                 avx2;        /* the CPU has it */
};


kvr_tok_added_t *
kvr_tok_added_create(void)
{
    int               i;
    kvr_tok_added_t  *at;

    at = calloc(1, sizeof(kvr_tok_added_t));
    if (at == NULL) {
        return NULL;
    }

    for (i = 0; i < 256; i++) {
        at->root[i] = KVR_ADDED_NONE;
    }

#if (KVR_ADDED_AVX2)
    __builtin_cpu_init();
    at->avx2 = __builtin_cpu_supports("avx2");
#endif

    return at;
}


void
kvr_tok_added_free(kvr_tok_added_t *at)
{
    if (at == NULL) {
        return;
    }

    free(at->nodes);
    free(at->tokens);
    free(at);
}


static uint32_t
kvr_added_new_node(kvr_tok_added_t *at, uint8_t byte)
{
    size_t             cap;
    kvr_added_node_t  *nodes;

    if (at->n_nodes == at->nodes_cap) {
        cap = at->nodes_cap ? at->nodes_cap * 2 : 256;
        nodes = realloc(at->nodes, cap * sizeof(kvr_added_node_t));
        if (nodes == NULL) {
            return KVR_ADDED_NONE;
        }

        at->nodes = nodes;
        at->nodes_cap = cap;
    }

    nodes = &at->nodes[at->n_nodes];
    nodes->child = KVR_ADDED_NONE;
    nodes->sibling = KVR_ADDED_NONE;
    nodes->token = KVR_ADDED_NONE;
    nodes->byte = byte;

    return (uint32_t) at->n_nodes++;
}


static uint32_t
kvr_added_child(const kvr_tok_added_t *at, uint32_t node, uint8_t byte)
{
    uint32_t  c;

    for (c = at->nodes[node].child; c != KVR_ADDED_NONE;
         c = at->nodes[c].sibling)
    {
        if (at->nodes[c].byte == byte) {
            return c;
        }
    }

    return KVR_ADDED_NONE;
}


int
kvr_tok_added_add(kvr_tok_added_t *at, const uint8_t *content, size_t len,
    uint32_t id, unsigned flags)
{
    size_t              i, cap;
    uint32_t            node, next;
    kvr_added_token_t  *tokens;

    if (len == 0) {
        return -1;
    }

    node = at->root[content[0]];

    if (node == KVR_ADDED_NONE) {
        node = kvr_added_new_node(at, content[0]);
        if (node == KVR_ADDED_NONE) {
            return -1;
        }

        at->root[content[0]] = node;
        at->first = content[0];
        if (at->n_first < KVR_ADDED_FIRSTS) {
            at->firsts[at->n_first] = content[0];
        }
        at->n_first++;
    }

    for (i = 1; i < len; i++) {
        next = kvr_added_child(at, node, content[i]);

        if (next == KVR_ADDED_NONE) {
            next = kvr_added_new_node(at, content[i]);
            if (next == KVR_ADDED_NONE) {
                return -1;
            }

            at->nodes[next].sibling = at->nodes[node].child;
            at->nodes[node].child = next;
        }

        node = next;
    }

    if (at->nodes[node].token != KVR_ADDED_NONE) {
        return 1;
    }

    if (at->n_tokens == at->tokens_cap) {
        cap = at->tokens_cap ? at->tokens_cap * 2 : 64;
        tokens = realloc(at->tokens, cap * sizeof(kvr_added_token_t));
        if (tokens == NULL) {
            return -1;
        }

        at->tokens = tokens;
        at->tokens_cap = cap;
    }

    at->tokens[at->n_tokens].id = id;
    at->tokens[at->n_tokens].flags = flags;
    at->nodes[node].token = (uint32_t) at->n_tokens++;

    return 0;
}


#if (KVR_ADDED_AVX2)

/* kvr_added_skip 64 bytes a step, while 64 are left */
__attribute__((target("avx2")))
static size_t
kvr_added_skip_avx2(const kvr_tok_added_t *at, const uint8_t *s, size_t len,
    size_t i)
{
    size_t    k, n;
    uint64_t  mask;
    __m256i   want[KVR_ADDED_FIRSTS], a, b, hit_a, hit_b;

    n = at->n_first;

    for (k = 0; k < n; k++) {
        want[k] = _mm256_set1_epi8((char) at->firsts[k]);
    }

    for ( /* void */ ; i + 64 <= len; i += 64) {
        a = _mm256_loadu_si256((const __m256i *) (s + i));
        b = _mm256_loadu_si256((const __m256i *) (s + i + 32));
        hit_a = _mm256_cmpeq_epi8(a, want[0]);
        hit_b = _mm256_cmpeq_epi8(b, want[0]);

        for (k = 1; k < n; k++) {
            hit_a = _mm256_or_si256(hit_a, _mm256_cmpeq_epi8(a, want[k]));
            hit_b = _mm256_or_si256(hit_b, _mm256_cmpeq_epi8(b, want[k]));
        }

        mask = (uint32_t) _mm256_movemask_epi8(hit_a)
               | (uint64_t) (uint32_t) _mm256_movemask_epi8(hit_b) << 32;

        if (mask != 0) {
            return i + (size_t) __builtin_ctzll(mask);
        }
    }

    return i;
}

#endif


/*
 * From i, the first byte that may start a token, or where fewer than 16
 * bytes are left (the byte loop goes on from there): a chat prompt is
 * mostly text that starts no token (Gemma 3's first bytes: '<', '\n',
 * '\t', '[' and 0xe2).  32 bytes a step (64 with AVX2), the first bytes
 * broadcast once: on Gemma 3's chat prompts this scan was a third of the
 * encode time, broadcasting them again every 16 bytes.
 */
static size_t
kvr_added_skip(const kvr_tok_added_t *at, const uint8_t *s, size_t len,
    size_t i)
{
#ifdef __SSE2__
    size_t    k, n;
    unsigned  mask;
    __m128i   want[KVR_ADDED_FIRSTS], a, b, hit_a, hit_b;

    n = at->n_first;

    /* short tails (code lines) take the byte loop: no setup */
    if (n > KVR_ADDED_FIRSTS || i + 16 > len) {
        return i;
    }

#if (KVR_ADDED_AVX2)
    if (at->avx2 && i + 64 <= len) {
        i = kvr_added_skip_avx2(at, s, len, i);

        if (i + 64 <= len) {
            return i;
        }
    }
#endif

    for (k = 0; k < n; k++) {
        want[k] = _mm_set1_epi8((char) at->firsts[k]);
    }

    for ( /* void */ ; i + 32 <= len; i += 32) {
        a = _mm_loadu_si128((const __m128i *) (s + i));
        b = _mm_loadu_si128((const __m128i *) (s + i + 16));
        hit_a = _mm_cmpeq_epi8(a, want[0]);
        hit_b = _mm_cmpeq_epi8(b, want[0]);

        for (k = 1; k < n; k++) {
            hit_a = _mm_or_si128(hit_a, _mm_cmpeq_epi8(a, want[k]));
            hit_b = _mm_or_si128(hit_b, _mm_cmpeq_epi8(b, want[k]));
        }

        mask = (unsigned) _mm_movemask_epi8(hit_a)
               | (unsigned) _mm_movemask_epi8(hit_b) << 16;

        if (mask != 0) {
            return i + (size_t) __builtin_ctz(mask);
        }
    }

    if (i + 16 <= len) {
        a = _mm_loadu_si128((const __m128i *) (s + i));
        hit_a = _mm_cmpeq_epi8(a, want[0]);

        for (k = 1; k < n; k++) {
            hit_a = _mm_or_si128(hit_a, _mm_cmpeq_epi8(a, want[k]));
        }

        mask = (unsigned) _mm_movemask_epi8(hit_a);

        if (mask != 0) {
            return i + (size_t) __builtin_ctz(mask);
        }

        i += 16;
    }
#else
    (void) at;
    (void) s;
    (void) len;
#endif

    return i;
}


int
kvr_tok_added_find(const kvr_tok_added_t *at, const uint8_t *s, size_t len,
    size_t from, kvr_tok_added_match_t *m)
{
    size_t          i, j;
    uint32_t        node, best;
    const uint8_t  *p;

    if (at->n_tokens == 0) {
        return -1;
    }

    for (i = from; i < len; i++) {

        if (at->n_first == 1) {
            /* every token starts with the same byte: memchr skips fast */
            p = memchr(s + i, at->first, len - i);
            if (p == NULL) {
                return -1;
            }

            i = (size_t) (p - s);

        } else {
            i = kvr_added_skip(at, s, len, i);
            if (i >= len) {
                return -1;
            }
        }

        node = at->root[s[i]];

        if (node == KVR_ADDED_NONE) {
            continue;
        }

        best = KVR_ADDED_NONE;
        j = i + 1;

        for ( ;; ) {
            if (at->nodes[node].token != KVR_ADDED_NONE) {
                best = at->nodes[node].token;
                m->end = j;
            }

            if (j == len) {
                break;
            }

            node = kvr_added_child(at, node, s[j]);
            if (node == KVR_ADDED_NONE) {
                break;
            }

            j++;
        }

        if (best != KVR_ADDED_NONE) {
            m->start = i;
            m->id = at->tokens[best].id;
            m->flags = at->tokens[best].flags;
            return 0;
        }
    }

    return -1;
}
