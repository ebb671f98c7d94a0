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
 * NFC of valid UTF-8 s.  Returns 0 with *out NULL when s is unchanged (no
 * byte >= 0xCC: every code point is below U+0300), 0 with a malloc'ed *out
 * of *out_len bytes otherwise, or -1 on failure.
 */
int kvr_tok_nfc(const uint8_t *s, size_t len, uint8_t **out,
    size_t *out_len);


#endif /* _KVR_TOK_NORMALIZE_H_INCLUDED_ */
