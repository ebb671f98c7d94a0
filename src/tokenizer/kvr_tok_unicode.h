/*
 * Copyright (C) kvroute developers
 *
 * Unicode facts the tokenizer needs to match HF tokenizers 0.23.2 exactly
 * (docs/tokenizer.md 4 and 8): Oniguruma's White_Space set, the Unicode
 * 15-16 letters and numbers PCRE2 10.42 lacks, the code points utf8proc 2.8
 * must not touch under NFC; and strict UTF-8 decoding.
 */

#ifndef _KVR_TOK_UNICODE_H_INCLUDED_
#define _KVR_TOK_UNICODE_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


typedef struct {
    uint32_t  first;
    uint32_t  last;          /* inclusive */
} kvr_tok_range_t;


extern const kvr_tok_range_t  kvr_tok_white_space[];
extern const size_t           kvr_tok_white_space_n;
extern const kvr_tok_range_t  kvr_tok_pcre2_missing_letter[];
extern const size_t           kvr_tok_pcre2_missing_letter_n;
extern const kvr_tok_range_t  kvr_tok_pcre2_missing_number[];
extern const size_t           kvr_tok_pcre2_missing_number_n;
extern const kvr_tok_range_t  kvr_tok_nfc_passthrough[];
extern const size_t           kvr_tok_nfc_passthrough_n;


/*
 * The code points of general category `category` (len bytes: "L", "N",
 * "P", "S", "M", "Lu", "Ll", "Lt", "Lm", "Lo") that Oniguruma in HF
 * tokenizers 0.23.2 has and PCRE2 10.42 lacks; *n may be 0.  NULL for a
 * category no known pattern uses.
 */
const kvr_tok_range_t *kvr_tok_pcre2_missing(const char *category,
    size_t len, size_t *n);

/* 1 when cp lies in one of the n sorted ranges */
int kvr_tok_in_ranges(const kvr_tok_range_t *ranges, size_t n, uint32_t cp);

/*
 * Decodes one code point of strict UTF-8 (no overlongs, surrogates or
 * values above U+10FFFF) at s[0..len).  Returns its byte length (1-4) and
 * sets *cp, or 0 when the bytes are not valid UTF-8.
 */
size_t kvr_tok_utf8_decode(const uint8_t *s, size_t len, uint32_t *cp);

/* 1 when the whole buffer is valid UTF-8 */
int kvr_tok_utf8_valid(const uint8_t *s, size_t len);


#endif /* _KVR_TOK_UNICODE_H_INCLUDED_ */
