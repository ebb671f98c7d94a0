/*
 * Copyright (C) kvroute developers
 *
 * A Hugging Face tokenizer.json BPE tokenizer that reproduces the token ids
 * of HF tokenizers 0.23.2 exactly: byte-level (Qwen3, Llama-3.x,
 * DeepSeek-V3, gpt-oss) and SentencePiece-style (Llama-2 / Mistral, Gemma
 * 3).  Plain C: jansson, PCRE2, utf8proc, no nginx types.
 *
 * Load once (e.g. in the nginx master); after that the tokenizer is only
 * read, except for a per-process scratch area, the word cache and the
 * segment cache (whole gaps between added tokens, 4 MB by default; for
 * Llama-2 and Gemma 3 a long gap's first chunk, the other chunks in a
 * cache of their own of 4 MB), which fork's copy-on-write makes private.
 * One tokenizer must not be used by two threads at a time.
 */

#ifndef _KVR_TOKENIZER_H_INCLUDED_
#define _KVR_TOKENIZER_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "kvr_tok_types.h"


/* segment cache defaults: segments of at least 128 bytes, 4 MB a process */
#define KVR_TOK_SEGMENT_MIN       128
#define KVR_TOK_SEGMENT_CACHE     (4 * 1024 * 1024)


typedef struct kvr_tokenizer_s  kvr_tokenizer_t;


/*
 * Loads tokenizer.json and, when config_path is not NULL, the
 * tokenizer_config.json next to it (for add_bos_token, add_eos_token and
 * split_special_tokens).  Returns NULL with a message in err for anything it
 * cannot reproduce exactly.
 */
kvr_tokenizer_t *kvr_tokenizer_load(const char *json_path,
    const char *config_path, char *err, size_t errlen);

/* inputs longer than max_input bytes are refused; 0 means no limit */
void kvr_tokenizer_set_max_input(kvr_tokenizer_t *tk, size_t max_input);

/*
 * Appends the ids of text (len bytes of UTF-8) to out.  With
 * add_special_tokens the post-processor's tokens (e.g. a BOS) are added,
 * as HF's encode(text, add_special_tokens=True) does.  Returns KVR_TOK_OK or
 * a negative KVR_TOK_* status; out then holds a partial result.
 */
int kvr_tokenizer_encode(kvr_tokenizer_t *tk, const char *text, size_t len,
    int add_special_tokens, kvr_ids_t *out);

void kvr_tokenizer_free(kvr_tokenizer_t *tk);

/* short stable name of an encode status, e.g. "bad-utf8" */
const char *kvr_tokenizer_status_name(int status);

/*
 * The segment cache (kvr_tok_cache.h): the ids of every gap between added
 * tokens of at least min_len bytes are kept, within max_bytes of memory
 * (entries, keys, ids; plus a bucket array of max_bytes / 64).  A
 * tokenizer whose normalizer is bytewise and whose pre-tokenizer keeps a
 * gap whole (Llama-2, Gemma 3) keeps a long gap in raw chunks instead:
 * its first chunk here, the others in a 4 MB cache of their own.
 * max_bytes 0 turns both off.  Drops the entries cached so far.  Returns
 * 0, or -1 when out of memory (the cache is then off).
 */
int kvr_tokenizer_set_segment_cache(kvr_tokenizer_t *tk, size_t min_len,
    size_t max_bytes);

/*
 * Check mode (tests, fuzzing): every cache hit is encoded again in full
 * and compared; a difference returns KVR_TOK_CACHE_DIFFERS.
 */
void kvr_tokenizer_set_cache_check(kvr_tokenizer_t *tk, int on);


/* the tokenizer's own segment cache, NULL when off (tests) */
struct kvr_tok_cache_s *kvr_tokenizer_segment_cache(kvr_tokenizer_t *tk);

/* all zero when the cache is off */
void kvr_tokenizer_cache_stats(const kvr_tokenizer_t *tk,
    kvr_tokenizer_cache_stats_t *st);


#endif /* _KVR_TOKENIZER_H_INCLUDED_ */
