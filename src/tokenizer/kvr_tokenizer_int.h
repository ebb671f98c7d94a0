/*
 * Copyright (C) kvroute developers
 *
 * What the tokenizer (kvr_tokenizer.c: loading, the encode pipeline) and
 * its raw chunks (kvr_tok_chunk.c) share.  Not for use outside them.
 */

#ifndef _KVR_TOKENIZER_INT_H_INCLUDED_
#define _KVR_TOKENIZER_INT_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "kvr_tokenizer.h"
#include "kvr_tok_added.h"
#include "kvr_tok_bpe.h"
#include "kvr_tok_cache.h"
#include "kvr_tok_chunk.h"
#include "kvr_tok_normalizers.h"
#include "kvr_tok_presplit.h"


#define KVR_TOK_MAX_AFFIX  8


struct kvr_tokenizer_s {
    kvr_tok_bpe_t       *bpe;
    kvr_tok_norm_t      *norm;
    kvr_tok_presplit_t  *presplit;
    kvr_tok_added_t     *added;
    kvr_tok_added_t     *added_norm;     /* normalized=true, on the gaps */

    int                  byte_level;     /* the pre-tokenizer ends so */
    int                  first_sensitive;

    /*
     * the normalizer is bytewise, the pre-tokenizer keeps a gap whole and
     * the model cuts words: a gap's ids are those of its raw parts cut
     * where the normalized text can be cut (kvr_tok_chunk.h)
     */
    int                  raw_chunks;
    int                  split_special;  /* split_special_tokens */
    int                  pieces_in_place; /* pieces point into the gap */
    size_t             max_input;

    /* post-processor: ids around the sequence when add_special_tokens */
    uint32_t           prefix[KVR_TOK_MAX_AFFIX];
    size_t             n_prefix;
    uint32_t           suffix[KVR_TOK_MAX_AFFIX];
    size_t             n_suffix;

    /*
     * per process: the normalized gap, the segment cache, the raw chunks
     * of long gaps, check mode's ids
     */
    kvr_tok_norm_buf_t normalized;
    kvr_tok_cache_t   *cache;
    size_t             cache_min;
    kvr_tok_chunks_t   chunks;
    int                cache_check;
    kvr_ids_t          check;
};


/* a way to encode text: kvr_tok_encode_text, or a raw chunk's */
typedef int (*kvr_tok_encode_pt)(kvr_tokenizer_t *tk, const uint8_t *s,
    size_t len, int at_start, kvr_ids_t *out);


/* text between added tokens of both kinds: normalize, split, BPE */
int kvr_tok_encode_text(kvr_tokenizer_t *tk, const uint8_t *s, size_t len,
    int at_start, kvr_ids_t *out);

/*
 * A hit of s in cache appended to out (in check mode s is encoded again
 * by encode and compared): 1, 0 on a miss, or a negative KVR_TOK_* status
 */
int kvr_tok_cache_answer(kvr_tokenizer_t *tk, kvr_tok_cache_t *cache,
    kvr_tok_encode_pt encode, const uint8_t *s, size_t len, uint64_t hash,
    int at_start, kvr_ids_t *out);

/*
 * s through cache, under hash: a hit is copied, a miss encoded and stored
 * (*missed set, when not NULL)
 */
int kvr_tok_encode_hashed(kvr_tokenizer_t *tk, kvr_tok_cache_t *cache,
    kvr_tok_encode_pt encode, const uint8_t *s, size_t len, uint64_t hash,
    int at_start, int *missed, kvr_ids_t *out);


#endif /* _KVR_TOKENIZER_INT_H_INCLUDED_ */
