/*
 * Copyright (C) kvroute developers
 *
 * A Hugging Face tokenizer.json byte-level BPE tokenizer (Qwen3, Llama-3.x)
 * that reproduces the token ids of HF tokenizers 0.23.2 exactly.  Plain C:
 * jansson, PCRE2, utf8proc, no nginx types.
 *
 * Load once (e.g. in the nginx master); after that the tokenizer is only
 * read, except for a per-process scratch area, the word cache and the
 * segment cache (whole gaps between added tokens, 4 MB by default), which
 * fork's copy-on-write makes private.  One tokenizer must not be used by
 * two threads at a time.
 */

#ifndef _KVR_TOKENIZER_H_INCLUDED_
#define _KVR_TOKENIZER_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


/* encode status; 0 is success */
#define KVR_TOK_OK             0
#define KVR_TOK_BAD_UTF8      -1   /* input is not valid UTF-8 */
#define KVR_TOK_TOO_LONG      -2   /* input longer than max_input */
#define KVR_TOK_TOO_MANY      -3   /* more ids than the output allows */
#define KVR_TOK_NO_MEMORY     -4
#define KVR_TOK_REGEX         -5   /* regex engine gave up (limits) */
#define KVR_TOK_NORMALIZE     -6   /* utf8proc failed */
#define KVR_TOK_CACHE_DIFFERS -7   /* check mode: a cache hit was wrong */

/* segment cache defaults: segments of at least 128 bytes, 4 MB a process */
#define KVR_TOK_SEGMENT_MIN       128
#define KVR_TOK_SEGMENT_CACHE     (4 * 1024 * 1024)


typedef struct kvr_tokenizer_s  kvr_tokenizer_t;


/* a growable array of token ids, never longer than max */
typedef struct {
    uint32_t  *ids;
    size_t     n;
    size_t     cap;
    size_t     max;
} kvr_ids_t;


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
 * (entries, keys, ids; plus a bucket array of max_bytes / 64).  max_bytes
 * 0 turns it off.  Drops the entries cached so far.  Returns 0, or -1
 * when out of memory (the cache is then off).
 */
int kvr_tokenizer_set_segment_cache(kvr_tokenizer_t *tk, size_t min_len,
    size_t max_bytes);

/*
 * Check mode (tests, fuzzing): every cache hit is encoded again in full
 * and compared; a difference returns KVR_TOK_CACHE_DIFFERS.
 */
void kvr_tokenizer_set_cache_check(kvr_tokenizer_t *tk, int on);


typedef struct {
    size_t    entries;
    size_t    bytes;        /* counted memory of the entries */
    size_t    max_bytes;
    uint64_t  hits;
    uint64_t  misses;
    uint64_t  evictions;
} kvr_tokenizer_cache_stats_t;


/* all zero when the cache is off */
void kvr_tokenizer_cache_stats(const kvr_tokenizer_t *tk,
    kvr_tokenizer_cache_stats_t *st);

/* appends n ids; as many as fit and KVR_TOK_TOO_MANY when over max */
int kvr_ids_append(kvr_ids_t *out, const uint32_t *ids, size_t n);

/* ids arrays: init with a maximum count, reset keeps the memory */
void kvr_ids_init(kvr_ids_t *out, size_t max);
int kvr_ids_push(kvr_ids_t *out, uint32_t id);
void kvr_ids_reset(kvr_ids_t *out);
void kvr_ids_free(kvr_ids_t *out);


#endif /* _KVR_TOKENIZER_H_INCLUDED_ */
