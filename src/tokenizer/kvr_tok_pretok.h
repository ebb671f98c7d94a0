/*
 * Copyright (C) kvroute developers
 *
 * The regex of a Split pre-tokenizer of a tokenizer.json, run with
 * PCRE2 (UTF, UCP, JIT) after rewriting the Oniguruma pattern so that both
 * engines agree (docs/tokenizer.md 4.3): \s becomes Unicode White_Space,
 * \p{L}, \p{N}, \p{P}, \p{S}, \p{M} and the letter subcategories get the
 * Unicode 15-16 code points PCRE2 10.42 lacks.
 */

#ifndef _KVR_TOK_PRETOK_H_INCLUDED_
#define _KVR_TOK_PRETOK_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


typedef struct kvr_tok_pretok_s  kvr_tok_pretok_t;

/* receives each non-empty piece in order; non-zero stops the split */
typedef int (*kvr_tok_piece_pt)(void *ctx, const uint8_t *piece,
    size_t len);


/*
 * Rewrites an Oniguruma pattern for PCRE2 10.42.  Returns a malloc'ed
 * NUL-terminated pattern, or NULL with err set when the pattern uses a
 * construct the rewrite does not cover.
 */
char *kvr_tok_pretok_rewrite(const char *pattern, char *err, size_t errlen);

/*
 * compiles one of the known pre-tokenizer patterns (Qwen2/3, Llama-3.x,
 * DeepSeek-V3's three, gpt-oss)
 */
kvr_tok_pretok_t *kvr_tok_pretok_create(const char *pattern, char *err,
    size_t errlen);

void kvr_tok_pretok_free(kvr_tok_pretok_t *pt);

/*
 * Splits valid UTF-8 s into the regex matches and the gaps between them
 * (Isolated), dropping empty pieces.  Returns 0, the callback's non-zero
 * value, or KVR_TOK_REGEX / KVR_TOK_NO_MEMORY.  Pure ASCII text takes a
 * hand-coded matcher of the known patterns, the rest PCRE2; gpt-oss's
 * pattern is hand-coded for any text (kvr_tok_o200k.h).
 */
int kvr_tok_pretok_split(kvr_tok_pretok_t *pt, const uint8_t *s, size_t len,
    kvr_tok_piece_pt piece, void *ctx);

/*
 * The next match at or after from (never empty: patterns that can match
 * the empty string are refused): 0 and [*start, *end), 1 when there is
 * none, or KVR_TOK_REGEX / KVR_TOK_NO_MEMORY.
 */
int kvr_tok_pretok_find(kvr_tok_pretok_t *pt, const uint8_t *s, size_t len,
    size_t from, size_t *start, size_t *end);

/*
 * Isolated splitting's step, shared by the hand-coded matchers: the bytes
 * since *gap that no match took, as a piece, then the match [at, at + n);
 * *gap moves past it.  Returns 0 or the callback's non-zero value.
 */
static inline int
kvr_tok_piece_match(kvr_tok_piece_pt piece, void *ctx, const uint8_t *s,
    size_t *gap, size_t at, size_t n)
{
    int  rc;

    if (*gap < at) {
        rc = piece(ctx, s + *gap, at - *gap);
        if (rc != 0) {
            return rc;
        }
    }

    *gap = at + n;

    return piece(ctx, s + at, n);
}

/* the two ways, for tests: PCRE2 on any text, the matcher on ASCII only */
int kvr_tok_pretok_split_pcre2(kvr_tok_pretok_t *pt, const uint8_t *s,
    size_t len, kvr_tok_piece_pt piece, void *ctx);
int kvr_tok_pretok_split_ascii(kvr_tok_pretok_t *pt, const uint8_t *s,
    size_t len, kvr_tok_piece_pt piece, void *ctx);


#endif /* _KVR_TOK_PRETOK_H_INCLUDED_ */
