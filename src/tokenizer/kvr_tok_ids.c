/*
 * Copyright (C) kvroute developers
 *
 * Arrays of token ids (kvr_tok_types.h): grown on demand, never beyond
 * their maximum.
 */

#include <stdlib.h>
#include <string.h>

#include "kvr_tok_types.h"


void
kvr_ids_init(kvr_ids_t *out, size_t max)
{
    out->ids = NULL;
    out->n = 0;
    out->cap = 0;
    out->max = max;
}


int
kvr_ids_push(kvr_ids_t *out, uint32_t id)
{
    size_t     cap;
    uint32_t  *ids;

    /* max may have been lowered below cap since the array grew */
    if (out->n >= out->max) {
        return -1;
    }

    if (out->n == out->cap) {
        cap = out->cap ? out->cap * 2 : 256;
        if (cap > out->max) {
            cap = out->max;
        }

        ids = realloc(out->ids, cap * sizeof(uint32_t));
        if (ids == NULL) {
            return -1;
        }

        out->ids = ids;
        out->cap = cap;
    }

    out->ids[out->n++] = id;

    return 0;
}


int
kvr_ids_append(kvr_ids_t *out, const uint32_t *ids, size_t n)
{
    int        rc;
    size_t     cap, fit;
    uint32_t  *grown;

    rc = KVR_TOK_OK;
    fit = n;

    if (fit > out->max - out->n) {
        fit = out->max - out->n;
        rc = KVR_TOK_TOO_MANY;
    }

    if (out->n + fit > out->cap) {
        cap = out->cap ? out->cap : 256;

        while (cap < out->n + fit) {
            cap *= 2;
        }

        if (cap > out->max) {
            cap = out->max;
        }

        grown = realloc(out->ids, cap * sizeof(uint32_t));
        if (grown == NULL) {
            return KVR_TOK_NO_MEMORY;
        }

        out->ids = grown;
        out->cap = cap;
    }

    if (fit != 0) {
        memcpy(out->ids + out->n, ids, fit * sizeof(uint32_t));
        out->n += fit;
    }

    return rc;
}


void
kvr_ids_reset(kvr_ids_t *out)
{
    out->n = 0;
}


void
kvr_ids_free(kvr_ids_t *out)
{
    free(out->ids);
    out->ids = NULL;
    out->n = 0;
    out->cap = 0;
}
