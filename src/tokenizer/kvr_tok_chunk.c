/*
 * Copyright (C) kvroute developers
 *
 * Raw chunks of long gaps (kvr_tok_chunk.h): where a gap can be cut, the
 * chunks of one gap and their hashes, and the gap through the segment
 * cache and the chunk cache.
 */

#include <stdlib.h>
#include <string.h>

#include "kvr_tokenizer_int.h"
#include "kvr_tok_unicode.h"


int
kvr_tok_chunks_ready(kvr_tok_chunks_t *ch)
{
    if (ch->cache == NULL && !ch->failed) {
        ch->cache = kvr_tok_cache_create(KVR_TOK_CHUNK_CACHE);
        ch->failed = (ch->cache == NULL);
    }

    return ch->cache != NULL;
}


void
kvr_tok_chunks_reset(kvr_tok_chunks_t *ch)
{
    kvr_tok_cache_free(ch->cache);
    ch->cache = NULL;
    ch->failed = 0;
}


void
kvr_tok_chunks_free(kvr_tok_chunks_t *ch)
{
    kvr_tok_chunks_reset(ch);
    free(ch->plan);
    ch->plan = NULL;
    ch->n_plan = 0;
    ch->plan_cap = 0;
}


/*
 * The first raw cut at or after from (>= 1), or len: a char boundary
 * where no merge joins the last char of the normalized text before to the
 * first char of the normalized text after
 */
static size_t
kvr_tok_chunk_cut(const kvr_tokenizer_t *tk, const uint8_t *s, size_t len,
    size_t from)
{
    size_t    i, k, n;
    uint32_t  cp, first, last, prev;

    while (from < len && (s[from] & 0xc0) == 0x80) {
        from++;
    }

    if (from >= len) {
        return len;
    }

    for (k = from - 1; k > 0 && (s[k] & 0xc0) == 0x80; k--) {
        /* void */
    }

    /* s is valid UTF-8 */
    (void) kvr_tok_utf8_decode(s + k, len - k, &cp);
    kvr_tok_norm_char_ends(tk->norm, cp, &first, &prev);

    for (i = from; i < len; i += n) {
        if (s[i] < 0x80) {
            cp = s[i];
            n = 1;

        } else {
            n = kvr_tok_utf8_decode(s + i, len - i, &cp);
        }

        kvr_tok_norm_char_ends(tk->norm, cp, &first, &last);

        if (!kvr_tok_bpe_joins(tk->bpe, prev, first)) {
            return i;
        }

        prev = last;
    }

    return len;
}


/*
 * The raw chunks of a long gap, cut from its start: their ends and
 * hashes in tk->chunks.plan, the first chunk's for the segment cache, the
 * others' for the chunk cache; -1 out of memory
 */
static int
kvr_tok_chunk_plan(kvr_tokenizer_t *tk, const uint8_t *s, size_t len)
{
    size_t             start, end, cap;
    kvr_tok_chunk_t   *plan;
    kvr_tok_chunks_t  *ch;

    ch = &tk->chunks;
    ch->n_plan = 0;

    for (start = 0; start < len; start = end) {
        if (ch->n_plan == ch->plan_cap) {
            cap = ch->plan_cap ? 2 * ch->plan_cap : 64;
            plan = realloc(ch->plan, cap * sizeof(kvr_tok_chunk_t));
            if (plan == NULL) {
                return -1;
            }

            ch->plan = plan;
            ch->plan_cap = cap;
        }

        end = (len - start > KVR_TOK_CHUNK)
              ? kvr_tok_chunk_cut(tk, s, len, start + KVR_TOK_CHUNK) : len;

        ch->plan[ch->n_plan].end = end;
        ch->plan[ch->n_plan].hash = kvr_tok_cache_hash(start == 0 ? tk->cache
                                                       : ch->cache,
                                                       s + start, end - start);
        ch->n_plan++;
    }

    return 0;
}


/* a raw chunk after a gap's first: normalized without the prefix, whole */
static int
kvr_tok_encode_rest(kvr_tokenizer_t *tk, const uint8_t *s, size_t len,
    int at_start, kvr_ids_t *out)
{
    (void) at_start;

    if (kvr_tok_norm_apply_rest(tk->norm, s, len, &tk->normalized, &s, &len)
        != 0)
    {
        return KVR_TOK_NORMALIZE;
    }

    return kvr_tok_bpe_encode(tk->bpe, s, len, out);
}


/*
 * A long gap of a raw_chunks tokenizer in raw chunks cut from its start,
 * so that gaps that begin alike (a chat's system prompt, then different
 * questions, in one gap for Llama-2's and Gemma 3's templates) share
 * their first chunks: those come from the caches without being
 * normalized, and only the chunks from where the gaps differ are
 * encoded.  The first chunk is the gap of its bytes (the segment
 * cache's), the others are keyed apart as they are normalized without
 * the prefix.  The whole gap goes to the segment cache too, under a hash
 * of its chunks' hashes (no second pass over its bytes), once it is seen
 * twice: when every chunk came from the caches (a repeated system prompt
 * that is a gap of its own), not when one is new (a new question).
 */
int
kvr_tok_chunks_encode(kvr_tokenizer_t *tk, const uint8_t *s, size_t len,
    int at_start, kvr_ids_t *out)
{
    int                rc, missed;
    size_t             i, start, first;
    uint64_t           hash;
    kvr_tok_chunks_t  *ch;

    if (kvr_tok_chunk_plan(tk, s, len) != 0) {
        return KVR_TOK_NO_MEMORY;
    }

    ch = &tk->chunks;

    if (ch->n_plan == 1) {
        return kvr_tok_encode_hashed(tk, tk->cache, kvr_tok_encode_text, s,
                                     len, ch->plan[0].hash, at_start, NULL,
                                     out);
    }

    hash = kvr_tok_cache_hash(tk->cache, (const uint8_t *) ch->plan,
                              ch->n_plan * sizeof(kvr_tok_chunk_t));

    rc = kvr_tok_cache_answer(tk, tk->cache, kvr_tok_encode_text, s, len,
                              hash, at_start, out);
    if (rc != 0) {
        return rc > 0 ? KVR_TOK_OK : rc;
    }

    first = out->n;
    missed = 0;
    start = 0;

    for (i = 0; i < ch->n_plan; i++) {
        rc = (i == 0) ? kvr_tok_encode_hashed(tk, tk->cache,
                                              kvr_tok_encode_text, s,
                                              ch->plan[0].end,
                                              ch->plan[0].hash, at_start,
                                              &missed, out)
                      : kvr_tok_encode_hashed(tk, ch->cache,
                                              kvr_tok_encode_rest, s + start,
                                              ch->plan[i].end - start,
                                              ch->plan[i].hash, 0, &missed,
                                              out);
        if (rc != KVR_TOK_OK) {
            return rc;
        }

        start = ch->plan[i].end;
    }

    if (!missed) {
        (void) kvr_tok_cache_put(tk->cache, s, len, hash,
                                 out->n > first ? out->ids + first : NULL,
                                 out->n - first);
    }

    return KVR_TOK_OK;
}
