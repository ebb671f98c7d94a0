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


typedef struct {
    uint32_t   rank;
    uint32_t   pos;
    uint32_t   new_id;
    uint32_t   left;         /* the pair when pushed: a fast stale check */
    uint32_t   right;
} kvr_tok_merge_t;


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
