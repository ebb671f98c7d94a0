/*
 * Copyright (C) kvroute developers
 *
 * The normalizer of a tokenizer.json: null, NFC, Prepend, Replace of a
 * String pattern, or a Sequence of those (SentencePiece-style files such
 * as Llama-2 and Gemma 3 use Prepend("▁") and Replace(" ", "▁")).  HF
 * applies it to every gap between added tokens on its own.  Any other
 * normalizer is refused by name.
 */

#ifndef _KVR_TOK_NORMALIZERS_H_INCLUDED_
#define _KVR_TOK_NORMALIZERS_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>
#include <jansson.h>


typedef struct kvr_tok_norm_s  kvr_tok_norm_t;


/* NULL with a message naming the component in err */
kvr_tok_norm_t *kvr_tok_norm_load(json_t *normalizer, char *err,
    size_t errlen);

void kvr_tok_norm_free(kvr_tok_norm_t *norm);

/* 1 when the normalizer never changes a string (null, Sequence[]) */
int kvr_tok_norm_identity(const kvr_tok_norm_t *norm);

/*
 * Normalizes valid UTF-8 s.  Returns 0 with *out NULL when s is unchanged,
 * 0 with a malloc'ed *out of *out_len bytes otherwise, or -1 on failure.
 */
int kvr_tok_norm_apply(const kvr_tok_norm_t *norm, const uint8_t *s,
    size_t len, uint8_t **out, size_t *out_len);


#endif /* _KVR_TOK_NORMALIZERS_H_INCLUDED_ */
