/*
 * Copyright (C) kvroute developers
 *
 * The NFC normalizer of a tokenizer.json as HF tokenizers 0.23.2 applies it
 * (crate unicode-normalization-alignments, Unicode 9.0 tables), built on
 * utf8proc 2.8 with the Unicode 10-15 marks passed through untouched.
 */

#ifndef _KVR_TOK_NORMALIZE_H_INCLUDED_
#define _KVR_TOK_NORMALIZE_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


/* 0 when the linked utf8proc is the version the pass-through list fits */
int kvr_tok_nfc_check_version(char *err, size_t errlen);

/*
 * 1 when NFC can neither change cp nor combine it with what precedes it:
 * combining class 0, no canonical decomposition, not the second code point
 * of a composition (utf8proc's Unicode 15 data; for such code points
 * Unicode 9 agrees, as these properties are stable).
 */
int kvr_tok_nfc_inert(uint32_t cp);

/*
 * NFC of valid UTF-8 s.  Returns 0 with *out NULL when s is unchanged
 * (e.g. no byte >= 0xCC: every code point is below U+0300, or every code
 * point is inert), 0 with a malloc'ed *out of *out_len bytes otherwise, or
 * -1 on failure.
 */
int kvr_tok_nfc(const uint8_t *s, size_t len, uint8_t **out,
    size_t *out_len);


#endif /* _KVR_TOK_NORMALIZE_H_INCLUDED_ */
