/*
 * Copyright (C) kvroute developers
 *
 * Code point classes for the hand-coded pre-tokenizer matchers: up to
 * eight bits a code point, bit i set when the code point matches the
 * i-th class, a one-char pattern such as "[\\p{Lu}\\p{M}]" meaning what
 * PCRE2 matches after the rewrite of the pre-tokenizer regexes
 * (kvr_tok_pretok_rewrite): the sets of HF's Oniguruma, Unicode 15-16
 * additions included, at one table lookup a char.
 */

#ifndef _KVR_TOK_UCLASS_H_INCLUDED_
#define _KVR_TOK_UCLASS_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


#define KVR_TOK_UCLASS_MAX  8


typedef struct {
    uint16_t  *blocks;       /* a row per 256 code points */
    uint8_t   *rows;         /* 256 class bytes a row, rows shared */
    size_t     n_rows;
} kvr_tok_uclass_t;


/*
 * classes[i], one atom in Oniguruma syntax (\\s, \\p{X} or [...]), gives
 * bit 1 << i; n at most KVR_TOK_UCLASS_MAX.  From utf8proc's categories
 * where it can, else probed from PCRE2 (kvr_tok_uclass_probe, slower);
 * the table is the same.  NULL with a message in err.
 */
kvr_tok_uclass_t *kvr_tok_uclass_create(const char *const *classes,
    size_t n, char *err, size_t errlen);

/* the same table, always probed from PCRE2 (tests) */
kvr_tok_uclass_t *kvr_tok_uclass_probe(const char *const *classes,
    size_t n, char *err, size_t errlen);

void kvr_tok_uclass_free(kvr_tok_uclass_t *uc);


/* the class bits of code point cp (at most 0x10ffff) */
#define kvr_tok_uclass_get(uc, cp)                                          \
    ((uc)->rows[(size_t) (uc)->blocks[(cp) >> 8] << 8 | ((cp) & 0xff)])


#endif /* _KVR_TOK_UCLASS_H_INCLUDED_ */
