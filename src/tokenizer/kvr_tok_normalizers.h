/*
 * Copyright (C) kvroute developers
 *
 * The normalizer of a tokenizer.json: null, NFC, Prepend, Replace of a
 * String pattern, or a Sequence of those (SentencePiece-style files such
 * as Llama-2 and Gemma 3 use Prepend("▁") and Replace(" ", "▁")).  HF
 * applies it to every gap between added tokens on its own.  Any other
 * normalizer is refused by name.  Prepend and Replace of ASCII bytes
 * (those two files) run as one pass into memory reused from gap to gap.
 */

#ifndef _KVR_TOK_NORMALIZERS_H_INCLUDED_
#define _KVR_TOK_NORMALIZERS_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>
#include <jansson.h>


typedef struct kvr_tok_norm_s  kvr_tok_norm_t;


/* the normalized text's memory, reused from gap to gap (per process) */
typedef struct {
    uint8_t  *data;
    size_t    cap;
} kvr_tok_norm_buf_t;


/* NULL with a message naming the component in err */
kvr_tok_norm_t *kvr_tok_norm_load(json_t *normalizer, char *err,
    size_t errlen);

void kvr_tok_norm_free(kvr_tok_norm_t *norm);

/* 1 when the normalizer never changes a string (null, Sequence[]) */
int kvr_tok_norm_identity(const kvr_tok_norm_t *norm);

/*
 * Normalizes valid UTF-8 s.  Returns 0 with *out s itself (unchanged) or
 * buf's memory, *out_len bytes, valid until the next call with buf; or -1
 * on failure.
 */
int kvr_tok_norm_apply(const kvr_tok_norm_t *norm, const uint8_t *s,
    size_t len, kvr_tok_norm_buf_t *buf, const uint8_t **out,
    size_t *out_len);

void kvr_tok_norm_buf_free(kvr_tok_norm_buf_t *buf);

/* for tests: every step on its own, as HF runs them, never in one pass */
int kvr_tok_norm_apply_steps(const kvr_tok_norm_t *norm, const uint8_t *s,
    size_t len, kvr_tok_norm_buf_t *buf, const uint8_t **out,
    size_t *out_len);


/*
 * The one-pass form (no normalizer is one too): the normalized text is a
 * fixed prefix, then each input byte's own text.  Text cut between chars
 * then normalizes part by part: the first part with
 * kvr_tok_norm_apply, the rest with kvr_tok_norm_apply_rest.
 */
int kvr_tok_norm_bytewise(const kvr_tok_norm_t *norm);

/* bytewise only: s normalized as it reads after the gap's first char */
int kvr_tok_norm_apply_rest(const kvr_tok_norm_t *norm, const uint8_t *s,
    size_t len, kvr_tok_norm_buf_t *buf, const uint8_t **out,
    size_t *out_len);

/* bytewise only: the first and last code points of cp's normalized text */
void kvr_tok_norm_char_ends(const kvr_tok_norm_t *norm, uint32_t cp,
    uint32_t *first, uint32_t *last);

/*
 * 1 when no normalized text holds lit (bytewise: lit holds a byte that is
 * always replaced and that no replacement or prefix puts back)
 */
int kvr_tok_norm_excludes(const kvr_tok_norm_t *norm, const uint8_t *lit,
    size_t len);


#endif /* _KVR_TOK_NORMALIZERS_H_INCLUDED_ */
