/*
 * Copyright (C) kvroute developers
 *
 * The min-heap of candidate merges of BPE's merge_all (HF word.rs): the
 * merge of lowest rank first, the leftmost on a tie.
 */

#ifndef _KVR_TOK_HEAP_H_INCLUDED_
#define _KVR_TOK_HEAP_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


/* 16 bytes, ordered by one compare of key */
typedef struct {
    uint64_t   key;          /* rank << 32 | position */
    uint32_t   new_id;
    uint32_t   span;         /* the pair's bytes when pushed */
} kvr_tok_merge_t;


#define kvr_tok_merge_key(rank, pos)  ((uint64_t) (rank) << 32 | (pos))
#define kvr_tok_merge_rank(m)         ((uint32_t) ((m)->key >> 32))
#define kvr_tok_merge_pos(m)          ((uint32_t) (m)->key)


typedef struct {
    kvr_tok_merge_t  *items;
    size_t            n;
    size_t            cap;
} kvr_tok_heap_t;


/* 0, or -1 when out of memory */
int kvr_tok_heap_push(kvr_tok_heap_t *h, const kvr_tok_merge_t *m);

/* the first merge, removed; h->n must not be 0 */
kvr_tok_merge_t kvr_tok_heap_pop(kvr_tok_heap_t *h);

void kvr_tok_heap_free(kvr_tok_heap_t *h);


#endif /* _KVR_TOK_HEAP_H_INCLUDED_ */
