/*
 * Copyright (C) kvroute developers
 *
 * For the pre-tokenizer tests: a split's callback that records where
 * each piece ends, so two splitters' pieces compare as arrays.
 */

#ifndef _KVR_TOK_ENDS_H_INCLUDED_
#define _KVR_TOK_ENDS_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


#define TOK_ENDS_MAX  512


typedef struct {
    size_t  ends[TOK_ENDS_MAX];
    size_t  n;
    size_t  at;
} ends_t;


static int
collect_end(void *data, const uint8_t *piece, size_t len)
{
    ends_t  *e;

    (void) piece;
    e = data;

    if (e->n == TOK_ENDS_MAX) {
        return -1;
    }

    e->at += len;
    e->ends[e->n++] = e->at;

    return 0;
}


#endif /* _KVR_TOK_ENDS_H_INCLUDED_ */
