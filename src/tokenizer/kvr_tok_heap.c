/*
 * Copyright (C) kvroute developers
 *
 * The min-heap of BPE's candidate merges, ordered by (rank, position).
 */

#include <stdlib.h>

#include "kvr_tok_heap.h"


int
kvr_tok_heap_push(kvr_tok_heap_t *h, const kvr_tok_merge_t *m)
{
    size_t            i, parent, cap;
    kvr_tok_merge_t  *items;

    if (h->n == h->cap) {
        cap = h->cap ? h->cap * 2 : 256;
        items = realloc(h->items, cap * sizeof(kvr_tok_merge_t));
        if (items == NULL) {
            return -1;
        }

        h->items = items;
        h->cap = cap;
    }

    items = h->items;
    i = h->n++;

    while (i > 0) {
        parent = (i - 1) / 2;

        if (m->key >= items[parent].key) {
            break;
        }

        items[i] = items[parent];
        i = parent;
    }

    items[i] = *m;

    return 0;
}


/*
 * Bottom-up: the hole at the top goes down to a leaf along the lesser
 * children (one compare a level), then the last item rises from there,
 * mostly not far, as it came from the bottom
 */
kvr_tok_merge_t
kvr_tok_heap_pop(kvr_tok_heap_t *h)
{
    size_t            i, child, parent, n;
    kvr_tok_merge_t   top, last, *items;

    items = h->items;
    top = items[0];
    n = --h->n;
    last = items[n];
    i = 0;

    for ( ;; ) {
        child = 2 * i + 1;

        if (child + 1 < n) {
            child += (items[child + 1].key < items[child].key);

        } else if (child >= n) {
            break;
        }

        items[i] = items[child];
        i = child;
    }

    while (i > 0) {
        parent = (i - 1) / 2;

        if (last.key >= items[parent].key) {
            break;
        }

        items[i] = items[parent];
        i = parent;
    }

    items[i] = last;

    return top;
}


void
kvr_tok_heap_free(kvr_tok_heap_t *h)
{
    free(h->items);
    h->items = NULL;
    h->n = 0;
    h->cap = 0;
}
