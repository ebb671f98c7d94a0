/*
 * Copyright (C) kvroute developers
 *
 * gpt-oss's pre-tokenizer regex (o200k) as a hand-coded matcher over
 * code point classes probed from PCRE2 (kvr_tok_uclass.h): the pieces
 * PCRE2 would give, without running its backtracking matcher, which took
 * over a third of gpt-oss's encode time on text beyond ASCII.
 */

#ifndef _KVR_TOK_O200K_H_INCLUDED_
#define _KVR_TOK_O200K_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "kvr_tok_pretok.h"


typedef struct kvr_tok_o200k_s  kvr_tok_o200k_t;


/* NULL with a message in err */
kvr_tok_o200k_t *kvr_tok_o200k_create(char *err, size_t errlen);
void kvr_tok_o200k_free(kvr_tok_o200k_t *m);

/*
 * Splits valid UTF-8 s as kvr_tok_pretok_split does (Isolated: matches
 * and gaps, no empty piece).  Returns 0 or the callback's non-zero value.
 */
int kvr_tok_o200k_split(const kvr_tok_o200k_t *m, const uint8_t *s,
    size_t len, kvr_tok_piece_pt piece, void *ctx);


#endif /* _KVR_TOK_O200K_H_INCLUDED_ */
